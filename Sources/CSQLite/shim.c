#include "CSQLite.h"

int securotp_sqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length) {
    return sqlite3_bind_text(statement, index, text, length, SQLITE_TRANSIENT);
}

int securotp_sqlite_bind_blob(sqlite3_stmt *statement, int index, const void *bytes, int length) {
    return sqlite3_bind_blob(statement, index, bytes, length, SQLITE_TRANSIENT);
}

static int restart_when_long(void *threshold, sqlite3 *db, const char *schema, int frames) {
    if (frames >= (int)(long)threshold)
        (void)sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_TRUNCATE, 0, 0);
    return SQLITE_OK; /* the commit itself succeeded; a busy checkpoint is retried next time */
}

int securotp_sqlite_keep_wal(sqlite3 *db, int restart_frames) {
    int on = 1;
    int rc = sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
    if (rc != SQLITE_OK) return rc;
    rc = sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &on);
    if (rc != SQLITE_OK) return rc;
    sqlite3_wal_hook(db, restart_when_long, (void *)(long)restart_frames);
    return SQLITE_OK;
}
