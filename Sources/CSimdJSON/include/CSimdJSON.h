#ifndef MOBILITYWATCH_CSIMDJSON_H
#define MOBILITYWATCH_CSIMDJSON_H
/*
 * A C API over Debian's simdjson (libsimdjson-dev, C++ DOM API: the whole payload is validated) for the one hot payload:
 * MobilityWatch sample objects, one or an array. The whole document is validated (RFC 8259,
 * UTF-8, nesting depth); the fields the wire contract names are reported flat, strings as
 * pointers into the parser's buffers (valid until the next call on the same parser). What the
 * fields mean is decided in Swift (MobilityModel.WireDecoder); this layer only reads JSON.
 */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The JSON type of a field; MW_ABSENT when the key is not present. */
enum mw_json_type { MW_ABSENT = 0, MW_NULL, MW_BOOL, MW_NUMBER, MW_STRING, MW_OBJECT, MW_ARRAY };

/** One JSON value as read: a scalar's payload, or only the type of a container. */
typedef struct mw_json_field {
    uint8_t type;       /* enum mw_json_type */
    uint8_t boolean;    /* MW_BOOL */
    double number;      /* MW_NUMBER */
    const char *str;    /* MW_STRING: unescaped UTF-8, not NUL-terminated */
    uint32_t len;
} mw_json_field;

/** One member of the `metadata` object. */
typedef struct mw_json_member {
    mw_json_field key;  /* always MW_STRING */
    mw_json_field value;
} mw_json_member;

/** The fields of one sample item. Keys seen twice keep their first value. */
typedef struct mw_sample_fields {
    uint8_t is_object;  /* 0: the item is not an object (no field below is set) */
    mw_json_field id, user, type, value, unit, start, end, time_zone, metadata, source, bundle_id;
    uint32_t metadata_first, metadata_count;  /* a range of mw_sample_doc.members */
} mw_sample_fields;

/** A parsed samples payload. */
typedef struct mw_sample_doc {
    int32_t error;              /* 0, or a simdjson error code: the payload is not JSON */
    const char *error_message;  /* static text for a non-zero error */
    uint8_t number_out_of_range; /* the error is a number simdjson cannot hold (1e999, a 30-digit integer): valid JSON */
    uint8_t is_array;           /* the payload was an array of items (else one item) */
    uint32_t count;
    const mw_sample_fields *items;
    const mw_json_member *members;
} mw_sample_doc;

/** A reusable parser; one per thread. */
typedef struct mw_json_parser mw_json_parser;

/** Creates a parser for documents up to `max_bytes`, nesting at most `max_depth` deep. NULL on allocation failure. */
mw_json_parser *mw_json_parser_create(size_t max_bytes, size_t max_depth);
/** Frees a parser. */
void mw_json_parser_destroy(mw_json_parser *parser);
/**
 * Parses a samples payload of `len` bytes. Returns 0 and fills `out`, or a simdjson error code
 * (also in out->error). At most `max_items` array items are read; a longer array sets
 * out->count to the true length and reads none, so the caller can refuse it.
 */
int32_t mw_parse_samples(mw_json_parser *parser, const uint8_t *bytes, size_t len, uint32_t max_items, mw_sample_doc *out);

#ifdef __cplusplus
}
#endif
#endif
