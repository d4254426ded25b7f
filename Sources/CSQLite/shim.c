#include "CSQLite.h"

int securotp_sqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length) {
    return sqlite3_bind_text(statement, index, text, length, SQLITE_TRANSIENT);
}

int securotp_sqlite_bind_blob(sqlite3_stmt *statement, int index, const void *bytes, int length) {
    return sqlite3_bind_blob(statement, index, bytes, length, SQLITE_TRANSIENT);
}

static int checkpoint_when_long(void *context, sqlite3 *db, const char *schema, int frames) {
    struct securotp_wal_policy *policy = context;
    int log = 0, copied = 0;
    if (frames >= policy->restart_frames &&
        sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_RESTART, &log, &copied) == SQLITE_OK &&
        log == copied)
        policy->restart_pending = 1;
    return SQLITE_OK; /* the commit itself succeeded; a busy checkpoint is retried next time */
}

int securotp_sqlite_keep_wal(sqlite3 *db, struct securotp_wal_policy *policy) {
    int on = 1;
    int rc = sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &on);
    if (rc != SQLITE_OK) return rc;
    sqlite3_wal_hook(db, checkpoint_when_long, policy);
    return SQLITE_OK;
}
