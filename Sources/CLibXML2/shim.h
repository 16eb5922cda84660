#ifndef MOBILITYWATCH_CLIBXML2_SHIM_H
#define MOBILITYWATCH_CLIBXML2_SHIM_H
/* libxml2 (Debian libxml2-dev): the streaming xmlTextReader. */
/* libxml2 is built with ICU; its encoding header would pull the system ICU headers, which clash
   with Foundation's own ICU module. We only use the reader API (no encoding-handler structs), so
   the ICU parts are hidden. */
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED
#include <libxml/xmlreader.h>

/* xmlFree is a global function pointer; a plain function is easier to call from Swift. */
static inline void mw_xml_free(void *p) { xmlFree(p); }
#endif
