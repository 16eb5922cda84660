#ifndef MOBILITYWATCH_CLIBPQ_SHIM_H
#define MOBILITYWATCH_CLIBPQ_SHIM_H
/* libpq, PostgreSQL's C client (Debian libpq-dev): the connection of the PostgreSQL state backend. */
#include <libpq-fe.h>
#endif
