#ifndef MOBILITYWATCH_CSQLITE_SHIM_H
#define MOBILITYWATCH_CSQLITE_SHIM_H
/* SQLite (Debian libsqlite3-dev). SQLITE_TRANSIENT is a macro Swift cannot import (the tests bind with these;
   the store binds SQLITE_STATIC, a nil destructor, from buffers its statements keep). */
#include <sqlite3.h>

static inline int mw_sqlite_bind_blob(sqlite3_stmt *s, int i, const void *p, int n) { return sqlite3_bind_blob(s, i, p, n, SQLITE_TRANSIENT); }
static inline int mw_sqlite_bind_text(sqlite3_stmt *s, int i, const char *p) { return sqlite3_bind_text(s, i, p, -1, SQLITE_TRANSIENT); }
#endif
