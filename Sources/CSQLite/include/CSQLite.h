#ifndef SECUROTP_CSQLITE_H
#define SECUROTP_CSQLITE_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast macro Swift cannot import: these bind with it. */
int securotp_sqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length);
int securotp_sqlite_bind_blob(sqlite3_stmt *statement, int index, const void *bytes, int length);
#endif
