#ifndef MOBILITYWATCH_CZLIB_SHIM_H
#define MOBILITYWATCH_CZLIB_SHIM_H
/* zlib (Debian zlib1g-dev): raw inflate for zip entries. inflateInit2 is a macro. */
#include <zlib.h>

static inline int mw_inflate_init_raw(z_stream *s) { return inflateInit2(s, -MAX_WBITS); }
static inline int mw_deflate_init_raw(z_stream *s) { return deflateInit2(s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY); }
#endif
