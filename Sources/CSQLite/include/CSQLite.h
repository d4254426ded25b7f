#ifndef SECUROTP_CSQLITE_H
#define SECUROTP_CSQLITE_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast macro Swift cannot import: these bind with it. */
int securotp_sqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length);
int securotp_sqlite_bind_blob(sqlite3_stmt *statement, int index, const void *bytes, int length);

/* For connections that live for one login: keep the WAL file between connections and skip the
   checkpoint on close, so a process pays one fsync per commit instead of re-creating,
   syncing and checkpointing the WAL every time (sqlite3_db_config is variadic).
   Because every process's first connection re-reads the WAL (recovery) and then believes
   nothing was checkpointed, SQLite's passive auto-checkpoint never restarts the log and it
   grows without bound (a RESTART checkpoint does not help either: the next process's
   recovery forgets it). So once the WAL holds `restart_frames` frames, a TRUNCATE checkpoint
   copies them into the database and empties the file. */
int securotp_sqlite_keep_wal(sqlite3 *db, int restart_frames);
#endif
