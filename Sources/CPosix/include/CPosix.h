#ifndef SECUROTP_CPOSIX_H
#define SECUROTP_CPOSIX_H
/* The C library as the module's code sees it. The module's targets import this instead of
   Swift's Glibc overlay, so the same sources also build as Embedded Swift (which has no
   Glibc overlay) — see pam/embedded/. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <linux/stat.h>
#include <sys/syscall.h>

/* errno is a macro and open(2) is variadic: neither reaches Swift directly. */
static inline int securotp_errno(void) { return errno; }
static inline int securotp_open(const char *path, int flags, mode_t mode) { return open(path, flags, mode); }
static inline mode_t securotp_file_type(mode_t mode) { return mode & S_IFMT; }
/* A file's birth time (statx STATX_BTIME, not following a symlink) in *seconds: 0, or -1 when
   the kernel or file system does not record it. statx is declared only under _GNU_SOURCE, which
   this header does not set (it would change other declarations), so it goes through syscall(2). */
static inline int securotp_birth_time(const char *path, long long *seconds) {
    struct statx info;
    if (syscall(SYS_statx, AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &info) != 0) return -1;
    if (!(info.stx_mask & STATX_BTIME)) return -1;
    *seconds = info.stx_btime.tv_sec;
    return 0;
}
#endif
