#ifndef MOBILITYWATCH_CLIBDEFLATE_SHIM_H
#define MOBILITYWATCH_CLIBDEFLATE_SHIM_H
/* libdeflate (Debian libdeflate-dev): libdeflate_crc32, the same CRC-32 as zlib's crc32 (gzip's,
   ISO 3309), computed with carry-less multiplication where the CPU has it. The ingest journal's
   record checksum. */
#include <libdeflate.h>
#endif
