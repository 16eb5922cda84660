// The C API of CSimdJSON.h over simdjson's DOM parser. The DOM parser validates the whole
// document (RFC 8259, UTF-8, depth) in its SIMD stages, with the kernel chosen at run time for
// this CPU (AVX-512/AVX2/SSE4.2/fallback) by libsimdjson itself; the on-demand API would be
// compiled for the build machine's baseline, which on generic x86-64 is the scalar fallback.
// Walking the resulting tape below is cheap and allocation-free.
#include "CSimdJSON.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <string_view>
#include <vector>

using namespace simdjson;

struct mw_json_parser {
    dom::parser parser;
    std::vector<uint8_t> padded;  // the input copied, with SIMDJSON_PADDING bytes after it
    std::vector<mw_sample_fields> items;
    std::vector<mw_json_member> members;
    explicit mw_json_parser(size_t max_bytes) : parser(max_bytes) {}
};

namespace {

__attribute__((always_inline)) inline void read(dom::element v, mw_json_field &f) {
    switch (v.type()) {
    case dom::element_type::INT64: f.type = MW_NUMBER; f.number = double(int64_t(v)); break;
    case dom::element_type::UINT64: f.type = MW_NUMBER; f.number = double(uint64_t(v)); break;
    case dom::element_type::DOUBLE: f.type = MW_NUMBER; f.number = double(v); break;
    case dom::element_type::STRING: {
        std::string_view s(v);
        f.type = MW_STRING; f.str = s.data(); f.len = uint32_t(s.size());
        break;
    }
    case dom::element_type::BOOL: f.type = MW_BOOL; f.boolean = bool(v); break;
    case dom::element_type::NULL_VALUE: f.type = MW_NULL; break;
    case dom::element_type::ARRAY: f.type = MW_ARRAY; break;
    case dom::element_type::OBJECT: f.type = MW_OBJECT; break;
    }
}

__attribute__((always_inline)) inline bool is(std::string_view k, const char *lit, size_t n) { return k.size() == n && __builtin_memcmp(k.data(), lit, n) == 0; }
#define KEY(k, lit) is(k, lit, sizeof(lit) - 1)

// The `metadata` object's members, appended to p.members.
void readMetadata(mw_json_parser &p, mw_sample_fields &s, dom::element v) {
    s.metadata_first = uint32_t(p.members.size());
    for (dom::key_value_pair m : dom::object(v)) {
        mw_json_member mem;
        std::memset(&mem, 0, sizeof mem);
        mem.key.type = MW_STRING; mem.key.str = m.key.data(); mem.key.len = uint32_t(m.key.size());
        read(m.value, mem.value);
        p.members.push_back(mem);
    }
    s.metadata_count = uint32_t(p.members.size()) - s.metadata_first;
}

void readItem(mw_json_parser &p, dom::element v) {
    // Filled in place (value-initialised: all zero, every field MW_ABSENT), not built on the
    // stack and copied in: the struct is ~370 bytes.
    mw_sample_fields &s = p.items.emplace_back();
    if (v.type() != dom::element_type::OBJECT) return;
    s.is_object = 1;
    for (dom::key_value_pair kv : dom::object(v)) {
        std::string_view k = kv.key;
        mw_json_field *slot = nullptr;
        // A repeated key keeps its first value: a slot already read is skipped. The two objects
        // are read where their key is matched (testing every key for them cost two compares).
        switch (k.size()) {
        case 2: if (KEY(k, "id")) slot = &s.id; break;
        case 3: if (KEY(k, "end")) slot = &s.end; break;
        case 4: if (KEY(k, "user")) slot = &s.user; else if (KEY(k, "type")) slot = &s.type; else if (KEY(k, "unit")) slot = &s.unit; break;
        case 5: if (KEY(k, "value")) slot = &s.value; else if (KEY(k, "start")) slot = &s.start; break;
        case 6:
            if (KEY(k, "source") && s.source.type == MW_ABSENT) {
                read(kv.value, s.source);
                if (s.source.type == MW_OBJECT) {
                    for (dom::key_value_pair m : dom::object(kv.value)) {
                        if (KEY(m.key, "bundleId")) { read(m.value, s.bundle_id); break; }
                    }
                }
            }
            continue;
        case 8:
            if (KEY(k, "timeZone")) {
                slot = &s.time_zone;
            } else if (KEY(k, "metadata") && s.metadata.type == MW_ABSENT) {
                read(kv.value, s.metadata);
                if (s.metadata.type == MW_OBJECT) readMetadata(p, s, kv.value);
            }
            break;
        }
        if (slot && slot->type == MW_ABSENT) read(kv.value, *slot);
    }
}

} // namespace

extern "C" mw_json_parser *mw_json_parser_create(size_t max_bytes, size_t max_depth) {
    try {
        auto *p = new mw_json_parser(max_bytes);
        // Start small; parse() grows the buffers (up to max_bytes) when a larger document comes.
        if (p->parser.allocate(std::min<size_t>(max_bytes, 1 << 16), max_depth) != SUCCESS) { delete p; return nullptr; }
        return p;
    } catch (...) {
        return nullptr;
    }
}

extern "C" void mw_json_parser_destroy(mw_json_parser *p) { delete p; }

extern "C" int32_t mw_parse_samples(mw_json_parser *p, const uint8_t *bytes, size_t len, uint32_t max_items, mw_sample_doc *out) {
    std::memset(out, 0, sizeof *out);
    p->items.clear();
    p->members.clear();
    error_code e = SUCCESS;
    try {
        p->padded.resize(len + SIMDJSON_PADDING);
        if (len) std::memcpy(p->padded.data(), bytes, len);
        std::memset(p->padded.data() + len, 0, SIMDJSON_PADDING);
        dom::element doc;
        e = p->parser.parse(p->padded.data(), len, false).get(doc);
        if (e == SUCCESS) {
            if (doc.type() == dom::element_type::ARRAY) {
                dom::array a(doc);
                out->is_array = 1;
                size_t n = a.size();
                if (n > max_items) { out->count = uint32_t(n); return 0; }
                p->items.reserve(n);
                for (dom::element el : a) readItem(*p, el);
            } else {
                readItem(*p, doc);
            }
        }
    } catch (const std::bad_alloc &) {
        e = MEMALLOC;
    }
    if (e != SUCCESS) {
        out->error = int32_t(e);
        out->error_message = error_message(e);
        out->number_out_of_range = e == NUMBER_ERROR || e == NUMBER_OUT_OF_RANGE;
        p->items.clear();
        return out->error;
    }
    out->count = uint32_t(p->items.size());
    out->items = p->items.data();
    out->members = p->members.data();
    return 0;
}
