#include "CSQLite.h"
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

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

static int fsync_path(const char *directory) {
    int fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static sqlite3_vfs kept_wal_vfs;
static pthread_once_t kept_wal_vfs_once = PTHREAD_ONCE_INIT;
static int kept_wal_vfs_ready;

/* fsync of the directory holding `path`; 0 on success */
static int sync_parent_directory(const char *path) {
    char directory[4096];
    const char *slash = strrchr(path, '/');
    size_t length = slash ? (size_t)(slash - path) : 0;
    if (length == 0 || length >= sizeof directory) return slash ? fsync_path("/") : fsync_path(".");
    memcpy(directory, path, length);
    directory[length] = 0;
    return fsync_path(directory);
}

static int open_kept_wal(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *file, int flags, int *out_flags) {
    sqlite3_vfs *base = vfs->pAppData;
    if (!(flags & SQLITE_OPEN_WAL) || !(flags & SQLITE_OPEN_CREATE) || !name) return base->xOpen(base, name, file, flags, out_flags);
    if (access(name, F_OK) == 0) {
        int rc = base->xOpen(base, name, file, flags & ~SQLITE_OPEN_CREATE, out_flags);
        if (rc != SQLITE_CANTOPEN) return rc;
        /* removed since access(): create it after all */
    }
    /* A new WAL: its directory entry is made durable now, before anything is committed into
       it, whichever connection later syncs it. */
    int rc = base->xOpen(base, name, file, flags, out_flags);
    if (rc == SQLITE_OK && sync_parent_directory(name) != 0) {
        file->pMethods->xClose(file);
        return SQLITE_IOERR_DIR_FSYNC;
    }
    return rc;
}

static void register_kept_wal_vfs(void) {
    sqlite3_vfs *base = sqlite3_vfs_find(NULL);
    if (!base) return;
    kept_wal_vfs = *base;
    kept_wal_vfs.zName = "securotp-kept-wal";
    kept_wal_vfs.pAppData = base;
    kept_wal_vfs.xOpen = open_kept_wal;
    kept_wal_vfs.pNext = NULL;
    kept_wal_vfs_ready = sqlite3_vfs_register(&kept_wal_vfs, 0) == SQLITE_OK;
}

const char *securotp_sqlite_vfs(void) {
    pthread_once(&kept_wal_vfs_once, register_kept_wal_vfs);
    return kept_wal_vfs_ready ? kept_wal_vfs.zName : NULL;
}
