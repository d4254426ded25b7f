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

/* errno is a macro and open(2) is variadic: neither reaches Swift directly. */
static inline int securotp_errno(void) { return errno; }
static inline int securotp_open(const char *path, int flags, mode_t mode) { return open(path, flags, mode); }
static inline mode_t securotp_file_type(mode_t mode) { return mode & S_IFMT; }
#endif
