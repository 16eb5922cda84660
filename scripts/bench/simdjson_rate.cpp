// simdjson's own rate on a traffic file: the bound of the replay benchmark (docs/benchmarks.md).
// Parses every line as a DOM document (validating it whole, as the replay's decoder does with
// each payload) on one thread, after reading the file into memory; prints lines/s and MB/s.
//   c++ -O2 -std=c++17 simdjson_rate.cpp -lsimdjson -o simdjson_rate && ./simdjson_rate TRAFFIC.jsonl
#include <simdjson.h>

#include <chrono>
#include <cstdio>
#include <cstring>

int main(int argc, char **argv) {
    if (argc != 2) { std::fprintf(stderr, "usage: simdjson_rate TRAFFIC.jsonl\n"); return 2; }
    simdjson::padded_string file;
    if (simdjson::padded_string::load(argv[1]).get(file)) { std::fprintf(stderr, "cannot read %s\n", argv[1]); return 1; }
    simdjson::dom::parser parser;
    const char *p = file.data(), *end = p + file.size();
    size_t lines = 0, bad = 0;
    auto began = std::chrono::steady_clock::now();
    // Each line is parsed in place: the file's own bytes after it serve as simdjson's padding
    // (the last line has padded_string's).
    while (p < end) {
        const char *nl = static_cast<const char *>(std::memchr(p, '\n', end - p));
        size_t len = (nl ? nl : end) - p;
        if (len > 0) {
            simdjson::dom::element doc;
            if (parser.parse(reinterpret_cast<const uint8_t *>(p), len, false).get(doc)) bad++;
            lines++;
        }
        p += len + 1;
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    std::printf("simdjson DOM, one thread: %zu lines (%zu invalid) in %.3f s: %.0f lines/s, %.0f MB/s\n", lines, bad, secs, lines / secs,
                file.size() / secs / 1e6);
    return 0;
}
