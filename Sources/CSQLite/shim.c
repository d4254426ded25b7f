#include "CSQLite.h"

int securotp_sqlite_bind_text(sqlite3_stmt *statement, int index, const char *text, int length) {
    return sqlite3_bind_text(statement, index, text, length, SQLITE_TRANSIENT);
}

int securotp_sqlite_bind_blob(sqlite3_stmt *statement, int index, const void *bytes, int length) {
    return sqlite3_bind_blob(statement, index, bytes, length, SQLITE_TRANSIENT);
}

int securotp_sqlite_keep_wal(sqlite3 *db) {
    int on = 1;
    int rc = sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
    if (rc != SQLITE_OK) return rc;
    return sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &on);
}
