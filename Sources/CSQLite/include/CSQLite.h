#ifndef SECUROTP_CSQLITE_H
#define SECUROTP_CSQLITE_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast macro Swift cannot import: these bind with it. */
int securotp_sqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length);
int securotp_sqlite_bind_blob(sqlite3_stmt *statement, int index, const void *bytes, int length);

/* For connections that live for one login: keep the WAL file between connections and skip
   the checkpoint on close (sqlite3_db_config is variadic), so a login pays one fsync of
   blocks the WAL file already has instead of re-creating, syncing and checkpointing it.
   Each process's first connection rebuilds the WAL index by reading every valid frame and
   forgets earlier checkpoints, so the WAL must be restarted from its start often: once it
   holds `restart_frames` frames, the WAL hook copies them into the database (RESTART
   checkpoint) and sets policy->restart_pending; the caller then makes one small write, which
   begins the log again at its start — overwriting the file in place, which syncs about
   twice as fast as extending it (measured). The caller owns *policy for the connection's life. */
struct securotp_wal_policy {
    int restart_frames;
    int restart_pending;
};
int securotp_sqlite_keep_wal(sqlite3 *db, struct securotp_wal_policy *policy);

/* The name of a VFS that is SQLite's default one except for opening WAL files. SQLite opens
   every WAL with O_CREAT and fsyncs its directory at the first sync after, in case the file
   was new; the kept WAL (above) almost never is, and that directory fsync cost every new
   process (pamtester, sshd's session) a second fsync per login. Here an existing WAL is
   opened without O_CREAT, and a missing one is created and its directory synced at once, so
   every WAL this VFS created is durable before anything is committed into it. (A WAL created
   by another program, e.g. the sqlite3 shell, gets SQLite's own handling from that program.)
   Registered (not as the default) on first use; NULL if that failed. */
const char *securotp_sqlite_vfs(void);
#endif
