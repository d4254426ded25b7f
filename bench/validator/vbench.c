/*
 * vbench: load generator for OTP validators over plain HTTP/1.1 on loopback.
 *
 * Subcommands:
 *   vbench seeds --count N --out FILE
 *       Writes N users with fresh random TOTP seeds (HMAC-SHA1, 6 digits, 30 s) as
 *       "user<TAB>seed hex<TAB>otpauth URI" lines. The same file provisions every peer:
 *       privacyIDEA takes the hex seed, securotp takes the URI.
 *   vbench code --seeds FILE --user NAME [--wrong]
 *       Prints the user's code for the current 30 s step, or a code that is wrong
 *       for every step near now.
 *   vbench take --seeds FILE --users N --state FILE --phase valid|wrong
 *       Takes the next user as `run` would, records it in the state file and prints
 *       "user code" (for setup checks with curl).
 *   vbench run --url http://127.0.0.1:PORT/PATH --profile privacyidea|securotpd
 *              --seeds FILE --state FILE --phase valid|wrong [options]
 *       Sends verifications over --concurrency keep-alive connections (one epoll
 *       thread), closed loop or at a fixed --rate (open loop), and prints one
 *       "vbench key=value ..." line. See usage() for the options.
 *   vbench serve --port PORT --seeds FILE --bearer-file FILE
 *       A stand-in validator speaking the securotpd protocol (in memory, no disk, no
 *       logging): the harness ceiling, and a dry run of the securotpd profile.
 *
 * Workload rules the generator enforces, because the validators enforce them too:
 *   - valid phase: every request carries the user's code for the current step and a
 *     user is used at most once per step (each accepted code is spent). Users are
 *     taken round-robin, i.e. least recently used first; if the least recently used
 *     user already answered in this step, the population is too small for the rate
 *     and the run stops with a message.
 *   - wrong phase: every code is wrong for all steps within --avoid-steps of the run
 *     (so it cannot hit a look-ahead or resync window either) and wrong codes are
 *     spread round-robin; no user ever gets more than --max-wrong-per-user of them,
 *     so nobody reaches a lockout threshold above that.
 *   - Which user was used when persists in --state (mmap'd), across runs and phases.
 *   - A valid code that is not accepted, or a wrong code that is not rejected, stops
 *     the run: such a run measures something else.
 *
 * Latency is measured from the moment a request should have been sent: in closed
 * loop that is when it is sent; with --rate it is its slot in the fixed schedule, so
 * a slow answer that delays later requests counts against them too (no coordinated
 * omission).
 *
 * Build: cc -O2 -Wall -Wextra -o vbench vbench.c -lcrypto -lpthread -lm
 */
#define _GNU_SOURCE
#define OPENSSL_SUPPRESS_DEPRECATED /* SHA1_* on saved HMAC pad states: 2x faster than EVP */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>
#include <openssl/sha.h>

#define STEP_SECONDS 30
#define DIGITS 6
#define CODE_MOD 1000000u
#define MAX_USER 64
#define SEED_BYTES 20
#define RBUF_MAX (64 * 1024)
#define WRONG_UNSET UINT32_MAX
/* Real clients name themselves; privacyIDEA logs a line for every request without one. */
#define USER_AGENT "vbench/1"

static const char *progname = "vbench";

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: error: ", progname);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

static void *xmalloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p)
        die("out of memory (%zu bytes)", n);
    return p;
}

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t current_step(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec / STEP_SECONDS;
}

static unsigned long parse_ulong(const char *opt, const char *s) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *s == '\0' || *end != '\0' || s[0] == '-')
        die("%s: not a non-negative integer: '%s'", opt, s);
    return (unsigned long)v;
}

static double parse_double(const char *opt, const char *s) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *s == '\0' || *end != '\0' || !(v >= 0))
        die("%s: not a non-negative number: '%s'", opt, s);
    return v;
}

/* ---------------------------------------------------------------- seeds and TOTP */

struct user {
    char name[MAX_USER + 1];
    SHA_CTX inner, outer; /* HMAC-SHA1 states after the key pads: 2 compressions per code */
};

struct seeds {
    struct user *users;
    size_t n;
};

static bool valid_user_name(const char *s) {
    /* Nothing that needs escaping in a form body, JSON or a URI; no '@' (privacyIDEA
     * splits user@realm). */
    if (!*s || strlen(s) > MAX_USER)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-')
            return false;
    return true;
}

static void hmac_prepare(struct user *u, const unsigned char *key, size_t len) {
    unsigned char pad[64];
    if (len > sizeof pad)
        die("seed longer than 64 bytes");
    memset(pad, 0x36, sizeof pad);
    for (size_t i = 0; i < len; i++)
        pad[i] ^= key[i];
    SHA1_Init(&u->inner);
    SHA1_Update(&u->inner, pad, sizeof pad);
    memset(pad, 0x5c, sizeof pad);
    for (size_t i = 0; i < len; i++)
        pad[i] ^= key[i];
    SHA1_Init(&u->outer);
    SHA1_Update(&u->outer, pad, sizeof pad);
}

/* RFC 6238 with HMAC-SHA1, 6 digits. */
static uint32_t totp(const struct user *u, int64_t step) {
    unsigned char msg[8], inner[SHA_DIGEST_LENGTH], mac[SHA_DIGEST_LENGTH];
    uint64_t c = (uint64_t)step;
    for (int i = 7; i >= 0; i--, c >>= 8)
        msg[i] = (unsigned char)(c & 0xff);
    SHA_CTX ctx = u->inner;
    SHA1_Update(&ctx, msg, sizeof msg);
    SHA1_Final(inner, &ctx);
    ctx = u->outer;
    SHA1_Update(&ctx, inner, sizeof inner);
    SHA1_Final(mac, &ctx);
    unsigned off = mac[19] & 0x0f;
    uint32_t bin = ((uint32_t)(mac[off] & 0x7f) << 24) | ((uint32_t)mac[off + 1] << 16) |
                   ((uint32_t)mac[off + 2] << 8) | (uint32_t)mac[off + 3];
    return bin % CODE_MOD;
}

static int hexval(int c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
}

/* Reads the first `limit` users (0: all) of a seeds file. */
static struct seeds load_seeds(const char *path, size_t limit) {
    FILE *f = fopen(path, "r");
    if (!f)
        die("cannot open seeds file %s: %s", path, strerror(errno));
    struct seeds s = {0};
    size_t cap = 1024, lineno = 0;
    s.users = xmalloc(cap * sizeof *s.users);
    char *line = NULL;
    size_t linecap = 0;
    while (getline(&line, &linecap, f) > 0 && (limit == 0 || s.n < limit)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char *save = NULL, *name = strtok_r(line, "\t\n", &save), *hex = strtok_r(NULL, "\t\n", &save);
        if (!name || !hex)
            die("%s:%zu: expected user<TAB>seed hex<TAB>otpauth URI", path, lineno);
        if (!valid_user_name(name))
            die("%s:%zu: user name '%s' must be 1-%d characters of [A-Za-z0-9._-]", path, lineno,
                name, MAX_USER);
        size_t hl = strlen(hex);
        unsigned char key[64];
        if (hl == 0 || hl % 2 || hl / 2 > sizeof key)
            die("%s:%zu: the seed must be 1-64 bytes of hex", path, lineno);
        for (size_t i = 0; i < hl / 2; i++) {
            int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
            if (hi < 0 || lo < 0)
                die("%s:%zu: the seed is not hex", path, lineno);
            key[i] = (unsigned char)(hi << 4 | lo);
        }
        if (s.n == cap) {
            cap *= 2;
            s.users = realloc(s.users, cap * sizeof *s.users);
            if (!s.users)
                die("out of memory");
        }
        struct user *u = &s.users[s.n++];
        snprintf(u->name, sizeof u->name, "%s", name);
        hmac_prepare(u, key, hl / 2);
    }
    free(line);
    fclose(f);
    if (s.n == 0)
        die("%s: no users", path);
    if (limit && s.n < limit)
        die("%s has %zu users, %zu were asked for (make a bigger seeds file)", path, s.n, limit);
    return s;
}

static size_t find_user(const struct seeds *s, const char *name) {
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->users[i].name, name) == 0)
            return i;
    die("user '%s' is not in the seeds file", name);
}

/* A code that no step in [from, to] produces for this user: random, then moved on
 * until it misses all of them. */
static uint32_t wrong_code(const struct user *u, int64_t from, int64_t to) {
    uint32_t candidate;
    if (RAND_bytes((unsigned char *)&candidate, sizeof candidate) != 1)
        die("RAND_bytes failed");
    candidate %= CODE_MOD;
    for (;;) {
        bool hit = false;
        for (int64_t s = from; s <= to && !hit; s++)
            hit = totp(u, s) == candidate;
        if (!hit)
            return candidate;
        candidate = (candidate + 1) % CODE_MOD;
    }
}

static void base32(const unsigned char *in, size_t len, char *out) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    unsigned buffer = 0, bits = 0;
    for (size_t i = 0; i < len; i++) {
        buffer = (buffer << 8) | in[i];
        bits += 8;
        while (bits >= 5) {
            *out++ = alphabet[(buffer >> (bits - 5)) & 31];
            bits -= 5;
        }
    }
    if (bits)
        *out++ = alphabet[(buffer << (5 - bits)) & 31];
    *out = '\0';
}

static int cmd_seeds(int argc, char **argv) {
    unsigned long count = 0;
    const char *out = NULL, *prefix = "vbu", *issuer = "securotp-bench";
    static const struct option opts[] = {
        {"count", required_argument, NULL, 'n'}, {"out", required_argument, NULL, 'o'},
        {"prefix", required_argument, NULL, 'p'}, {"issuer", required_argument, NULL, 'i'},
        {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'n': count = parse_ulong("--count", optarg); break;
        case 'o': out = optarg; break;
        case 'p': prefix = optarg; break;
        case 'i': issuer = optarg; break;
        default: die("usage: vbench seeds --count N --out FILE [--prefix P] [--issuer NAME]");
        }
    }
    if (!count || !out)
        die("usage: vbench seeds --count N --out FILE [--prefix P] [--issuer NAME]");
    if (!valid_user_name(prefix) || strlen(prefix) > 40 || !valid_user_name(issuer))
        die("--prefix and --issuer must be short and made of [A-Za-z0-9._-]");
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f)
        die("cannot create %s: %s", out, strerror(errno));
    fprintf(f, "# vbench seeds: user<TAB>seed hex<TAB>otpauth URI (TOTP, SHA1, %d digits, %d s)\n",
            DIGITS, STEP_SECONDS);
    for (unsigned long i = 0; i < count; i++) {
        unsigned char key[SEED_BYTES];
        char hex[2 * SEED_BYTES + 1], b32[SEED_BYTES * 8 / 5 + 2], name[MAX_USER + 1];
        if (RAND_bytes(key, sizeof key) != 1)
            die("RAND_bytes failed");
        for (size_t k = 0; k < sizeof key; k++)
            snprintf(hex + 2 * k, 3, "%02x", key[k]);
        base32(key, sizeof key, b32);
        snprintf(name, sizeof name, "%s%07lu", prefix, i);
        fprintf(f,
                "%s\t%s\totpauth://totp/%s:%s?secret=%s&issuer=%s&algorithm=SHA1&digits=%d&period=%d\n",
                name, hex, issuer, name, b32, issuer, DIGITS, STEP_SECONDS);
    }
    if (fclose(f) != 0)
        die("cannot write %s: %s", out, strerror(errno));
    return 0;
}

static int cmd_code(int argc, char **argv) {
    const char *seeds_path = NULL, *user = NULL;
    bool wrong = false;
    static const struct option opts[] = {{"seeds", required_argument, NULL, 's'},
                                         {"user", required_argument, NULL, 'u'},
                                         {"wrong", no_argument, NULL, 'w'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's': seeds_path = optarg; break;
        case 'u': user = optarg; break;
        case 'w': wrong = true; break;
        default: die("usage: vbench code --seeds FILE --user NAME [--wrong]");
        }
    }
    if (!seeds_path || !user)
        die("usage: vbench code --seeds FILE --user NAME [--wrong]");
    struct seeds s = load_seeds(seeds_path, 0);
    const struct user *u = &s.users[find_user(&s, user)];
    int64_t step = current_step();
    printf("%0*" PRIu32 "\n", DIGITS, wrong ? wrong_code(u, step - 60, step + 60) : totp(u, step));
    return 0;
}

/* ---------------------------------------------------------------- state file */

#define STATE_MAGIC "VBSTATE1"

struct state_header {
    char magic[8];
    uint64_t users;
    uint64_t valid_cursor; /* next user for a valid code (round-robin = least recently used) */
    uint64_t wrong_cursor; /* next user for a wrong code */
    uint64_t reserved[4];
};

struct user_state {
    int64_t last_valid_step; /* step of the last valid code sent; 0: never */
    uint32_t wrong_sent;     /* wrong codes ever sent to this user */
    uint32_t valid_sent;
};

struct state {
    struct state_header *h;
    struct user_state *u;
    size_t bytes;
};

static struct state open_state(const char *path, size_t users) {
    struct state st = {0};
    st.bytes = sizeof *st.h + users * sizeof *st.u;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        die("cannot open state file %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        die("cannot stat %s: %s", path, strerror(errno));
    bool fresh = sb.st_size == 0;
    if (fresh && ftruncate(fd, (off_t)st.bytes) != 0)
        die("cannot size %s: %s", path, strerror(errno));
    if (!fresh && (size_t)sb.st_size != st.bytes)
        die("state file %s was made for another number of users (%lld bytes, expected %zu); "
            "delete it together with the server's state, or use the same --users",
            path, (long long)sb.st_size, st.bytes);
    void *m = mmap(NULL, st.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        die("cannot map %s: %s", path, strerror(errno));
    close(fd);
    st.h = m;
    st.u = (struct user_state *)(st.h + 1);
    if (fresh) {
        memcpy(st.h->magic, STATE_MAGIC, 8);
        st.h->users = users;
    } else if (memcmp(st.h->magic, STATE_MAGIC, 8) != 0 || st.h->users != users) {
        die("%s is not a vbench state file for %zu users", path, users);
    }
    return st;
}

/* take: the next user of the population for one request made by hand (curl), recorded
 * in the state like a request of `run`, so later runs do not reuse its step. */
static int cmd_take(int argc, char **argv) {
    const char *seeds_path = NULL, *state_path = NULL, *phase = NULL;
    unsigned long users = 0;
    static const struct option opts[] = {{"seeds", required_argument, NULL, 's'},
                                         {"users", required_argument, NULL, 'u'},
                                         {"state", required_argument, NULL, 't'},
                                         {"phase", required_argument, NULL, 'p'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's': seeds_path = optarg; break;
        case 'u': users = parse_ulong("--users", optarg); break;
        case 't': state_path = optarg; break;
        case 'p': phase = optarg; break;
        default: die("usage: vbench take --seeds FILE --users N --state FILE --phase valid|wrong");
        }
    }
    if (!seeds_path || !state_path || !phase || (strcmp(phase, "valid") && strcmp(phase, "wrong")))
        die("usage: vbench take --seeds FILE --users N --state FILE --phase valid|wrong");
    struct seeds s = load_seeds(seeds_path, users);
    struct state st = open_state(state_path, s.n);
    int64_t step = current_step();
    size_t u;
    uint32_t code;
    if (strcmp(phase, "valid") == 0) {
        u = (size_t)(st.h->valid_cursor++ % s.n);
        if (st.u[u].last_valid_step >= step)
            die("all users have sent a valid code in this step");
        st.u[u].last_valid_step = step;
        st.u[u].valid_sent++;
        code = totp(&s.users[u], step);
    } else {
        u = (size_t)(st.h->wrong_cursor++ % s.n);
        st.u[u].wrong_sent++;
        code = wrong_code(&s.users[u], step - 60, step + 60);
    }
    msync(st.h, st.bytes, MS_SYNC);
    printf("%s %0*" PRIu32 "\n", s.users[u].name, DIGITS, code);
    return 0;
}

/* ---------------------------------------------------------------- statistics */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* nearest rank: the ceil(q * n)-th smallest of sorted v */
static double percentile(const double *v, size_t n, double q) {
    if (n == 0)
        return NAN;
    size_t rank = (size_t)ceil(q * (double)n);
    return v[(rank ? rank : 1) - 1];
}

/* ---------------------------------------------------------------- HTTP client */

enum profile { P_PRIVACYIDEA, P_SECUROTPD };
enum phase { PH_VALID, PH_WRONG };
enum result { R_ACCEPT, R_REJECT, R_LOCKED, R_CHALLENGE, R_HTTP_ERROR, R_BAD_ANSWER, R_IO_ERROR,
              R_TIMEOUT, R_COUNT };
static const char *const result_names[R_COUNT] = {"accept", "reject", "locked", "challenge",
                                                  "http_error", "bad_answer", "io_error", "timeout"};

enum conn_state { C_IDLE, C_CONNECTING, C_SENDING, C_RECEIVING };

struct conn {
    int fd; /* -1: not connected */
    enum conn_state st;
    char wbuf[1024];
    size_t wlen, woff;
    char *rbuf;
    size_t rlen;
    size_t user;
    uint32_t code;
    int64_t step;
    int64_t t_due;   /* when the request should have been sent (latency origin) */
    int64_t t_sent;  /* when it was started */
    bool measured;   /* sent inside the measurement window */
    bool fresh;      /* the request opened this connection */
};

struct sample {
    int64_t due_us; /* due time relative to the start of measurement */
    double latency_us;
    uint8_t result;
};

struct run {
    /* configuration */
    enum profile profile;
    enum phase phase;
    struct sockaddr_in addr;
    char host[64];
    char path[256];
    char realm[64];
    char bearer[512];
    const char *label;
    size_t concurrency;
    double rate;             /* requests/s, 0: closed loop */
    double duration, warmup; /* seconds */
    unsigned long max_requests; /* measured requests, 0: no limit */
    double timeout;
    unsigned long max_errors;
    unsigned max_wrong;
    int avoid_steps;
    /* data */
    struct seeds seeds;
    struct state state;
    uint32_t *wrong_codes; /* per user, for the wrong phase; WRONG_UNSET: not computed yet */
    int64_t wrong_lo, wrong_hi; /* the steps wrong codes must miss */
    struct conn *conns;
    int ep;
    /* progress */
    int64_t t0, t_measure, t_stop;
    unsigned long issued, issued_measured, inflight, connects;
    unsigned long counts[R_COUNT]; /* every answer, warm-up included */
    unsigned long completed_in_window;
    struct sample *samples;
    size_t nsamples, samples_cap;
    double *lag_us; /* open loop: start delay behind schedule, measured requests */
    size_t nlag;
    /* open loop */
    int64_t *pending; /* due times waiting for a free connection (ring) */
    size_t pcap, phead, pcount, pmax; /* pmax: most due requests ever without a free connection */
    size_t *idle;
    size_t nidle;
    unsigned long scheduled;
    bool stopping;
};

static void abort_run(struct run *r, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void abort_run(struct run *r, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: [%s] run stopped: ", progname, r->label);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fprintf(stderr, "%s: [%s] answers so far:", progname, r->label);
    for (int i = 0; i < R_COUNT; i++)
        fprintf(stderr, " %s=%lu", result_names[i], r->counts[i]);
    fputc('\n', stderr);
    exit(3);
}

static size_t pick_user(struct run *r, int64_t step) {
    struct state_header *h = r->state.h;
    size_t n = r->seeds.n;
    if (r->phase == PH_VALID) {
        size_t u = (size_t)(h->valid_cursor % n);
        if (r->state.u[u].last_valid_step >= step)
            abort_run(r, "all %zu users have already sent a valid code in this %d s step; the "
                         "population is too small for this rate (need more than rate x %d users "
                         "across all runs within one step; use more users or fewer requests)",
                      n, STEP_SECONDS, STEP_SECONDS);
        h->valid_cursor++;
        r->state.u[u].last_valid_step = step;
        r->state.u[u].valid_sent++;
        return u;
    }
    size_t u = (size_t)(h->wrong_cursor % n);
    if (r->state.u[u].wrong_sent >= r->max_wrong)
        abort_run(r, "every one of the %zu users has already received %u wrong codes; more would "
                     "risk a lockout (use more users, or start over with fresh server state and a "
                     "new state file)",
                  n, r->max_wrong);
    h->wrong_cursor++;
    r->state.u[u].wrong_sent++;
    return u;
}

static void build_request(struct run *r, struct conn *c) {
    char body[256];
    int blen;
    const char *user = r->seeds.users[c->user].name;
    if (r->profile == P_PRIVACYIDEA) {
        blen = snprintf(body, sizeof body, "user=%s&pass=%0*" PRIu32 "%s%s", user, DIGITS, c->code,
                        r->realm[0] ? "&realm=" : "", r->realm);
        c->wlen = (size_t)snprintf(c->wbuf, sizeof c->wbuf,
                                   "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: " USER_AGENT "\r\n"
                                   "Content-Type: application/x-www-form-urlencoded\r\n"
                                   "Content-Length: %d\r\n\r\n%s",
                                   r->path, r->host, blen, body);
    } else {
        blen = snprintf(body, sizeof body, "{\"user\":\"%s\",\"passcode\":\"%0*" PRIu32 "\"}", user,
                        DIGITS, c->code);
        c->wlen = (size_t)snprintf(c->wbuf, sizeof c->wbuf,
                                   "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: " USER_AGENT "\r\n"
                                   "Authorization: Bearer %s\r\n"
                                   "Content-Type: application/json\r\n"
                                   "Content-Length: %d\r\n\r\n%s",
                                   r->path, r->host, r->bearer, blen, body);
    }
    if (c->wlen >= sizeof c->wbuf)
        die("request too long");
    c->woff = 0;
}

static void ep_set(struct run *r, struct conn *c, int op, uint32_t events) {
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(r->ep, op, c->fd, &ev) != 0)
        die("epoll_ctl: %s", strerror(errno));
}

static void conn_close(struct run *r, struct conn *c) {
    if (c->fd >= 0) {
        epoll_ctl(r->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
    c->rlen = 0;
}

static void finish(struct run *r, struct conn *c, enum result res, const char *detail);

/* Writes what is left of the request; on a full write waits for the answer. */
static void try_send(struct run *r, struct conn *c) {
    while (c->woff < c->wlen) {
        ssize_t n = send(c->fd, c->wbuf + c->woff, c->wlen - c->woff, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (c->st != C_SENDING)
                    ep_set(r, c, EPOLL_CTL_MOD, EPOLLOUT);
                c->st = C_SENDING;
                return;
            }
            finish(r, c, R_IO_ERROR, strerror(errno));
            return;
        }
        c->woff += (size_t)n;
    }
    if (c->st != C_RECEIVING && c->st != C_IDLE)
        ep_set(r, c, EPOLL_CTL_MOD, EPOLLIN);
    c->st = C_RECEIVING;
}

static void start_request(struct run *r, struct conn *c, int64_t due) {
    int64_t step = current_step();
    c->user = pick_user(r, step);
    c->step = step;
    if (r->phase == PH_VALID) {
        c->code = totp(&r->seeds.users[c->user], step);
    } else {
        if (r->wrong_codes[c->user] == WRONG_UNSET)
            r->wrong_codes[c->user] = wrong_code(&r->seeds.users[c->user], r->wrong_lo, r->wrong_hi);
        c->code = r->wrong_codes[c->user];
    }
    build_request(r, c);
    c->t_due = due;
    c->t_sent = mono_ns();
    c->measured = due >= r->t_measure;
    c->rlen = 0;
    r->issued++;
    r->inflight++;
    if (c->measured) {
        r->issued_measured++;
        if (r->rate > 0) {
            if (r->nlag % 4096 == 0)
                r->lag_us = realloc(r->lag_us, (r->nlag + 4096) * sizeof *r->lag_us);
            if (!r->lag_us)
                die("out of memory");
            r->lag_us[r->nlag++] = (double)(c->t_sent - due) / 1e3;
        }
    }
    if (c->fd >= 0) {
        c->fresh = false;
        c->st = C_IDLE; /* registered for EPOLLIN already */
        try_send(r, c);
        return;
    }
    c->fresh = true;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        die("socket: %s", strerror(errno));
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    r->connects++;
    if (connect(c->fd, (struct sockaddr *)&r->addr, sizeof r->addr) == 0) {
        c->st = C_IDLE;
        ep_set(r, c, EPOLL_CTL_ADD, EPOLLIN);
        try_send(r, c);
    } else if (errno == EINPROGRESS) {
        c->st = C_CONNECTING;
        ep_set(r, c, EPOLL_CTL_ADD, EPOLLOUT);
    } else {
        int e = errno;
        close(c->fd);
        c->fd = -1;
        finish(r, c, R_IO_ERROR, strerror(e));
    }
}

/* ---- response parsing ---- */

static bool header_is(const char *line, size_t len, const char *name) {
    size_t n = strlen(name);
    return len > n && strncasecmp(line, name, n) == 0 && line[n] == ':';
}

struct http_answer {
    int status;
    bool close;
    const char *body;
    size_t body_len;
};

/* 1: a complete answer in rbuf, 0: need more, -1: malformed (msg says why). Chunked
 * bodies are decoded in place. */
static int parse_answer(struct conn *c, bool eof, struct http_answer *a, const char **msg) {
    char *buf = c->rbuf;
    char *end = memmem(buf, c->rlen, "\r\n\r\n", 4);
    if (!end) {
        *msg = "connection closed inside the headers";
        return eof ? -1 : 0;
    }
    size_t hlen = (size_t)(end - buf) + 4;
    int major, minor, status;
    if (sscanf(buf, "HTTP/%d.%d %d", &major, &minor, &status) != 3) {
        *msg = "not an HTTP answer";
        return -1;
    }
    a->status = status;
    a->close = major == 1 && minor == 0;
    long long content_length = -1;
    bool chunked = false;
    for (char *line = memchr(buf, '\n', hlen) + 1; line < end;) {
        char *eol = memchr(line, '\r', (size_t)(end + 2 - line));
        size_t len = (size_t)(eol - line);
        const char *value = memchr(line, ':', len);
        if (value) {
            value++;
            while (*value == ' ' || *value == '\t')
                value++;
            size_t vlen = (size_t)(eol - value);
            if (header_is(line, len, "content-length"))
                content_length = strtoll(value, NULL, 10);
            else if (header_is(line, len, "transfer-encoding"))
                chunked = memmem(value, vlen, "chunked", 7) != NULL;
            else if (header_is(line, len, "connection")) {
                if (memmem(value, vlen, "close", 5))
                    a->close = true;
                else if (memmem(value, vlen, "keep-alive", 10) || memmem(value, vlen, "Keep-Alive", 10))
                    a->close = false;
            }
        }
        line = eol + 2;
    }
    if (chunked) {
        /* decode in place once the terminating chunk is there */
        size_t in = hlen, out = hlen;
        for (;;) {
            char *crlf = memmem(buf + in, c->rlen - in, "\r\n", 2);
            if (!crlf) {
                *msg = "connection closed inside a chunked body";
                return eof ? -1 : 0;
            }
            char *hex_end;
            unsigned long size = strtoul(buf + in, &hex_end, 16);
            if (hex_end == buf + in) {
                *msg = "bad chunk size";
                return -1;
            }
            size_t data = (size_t)(crlf - buf) + 2;
            if (size == 0) {
                /* no trailers expected: the final CRLF follows */
                if (c->rlen < data + 2) {
                    *msg = "connection closed inside a chunked body";
                    return eof ? -1 : 0;
                }
                if (c->rlen > data + 2) {
                    *msg = "bytes after the answer";
                    return -1;
                }
                break;
            }
            if (c->rlen < data + size + 2) {
                *msg = "connection closed inside a chunked body";
                return eof ? -1 : 0;
            }
            in = data + size + 2;
        }
        /* second pass: copy the chunk data together */
        in = hlen;
        for (;;) {
            char *crlf = memmem(buf + in, c->rlen - in, "\r\n", 2);
            unsigned long size = strtoul(buf + in, NULL, 16);
            size_t data = (size_t)(crlf - buf) + 2;
            if (size == 0)
                break;
            memmove(buf + out, buf + data, size);
            out += size;
            in = data + size + 2;
        }
        a->body = buf + hlen;
        a->body_len = out - hlen;
        buf[out] = '\0';
        return 1;
    }
    if (content_length >= 0) {
        if (c->rlen < hlen + (size_t)content_length) {
            *msg = "connection closed inside the body";
            return eof ? -1 : 0;
        }
        if (c->rlen > hlen + (size_t)content_length) {
            *msg = "bytes after the answer";
            return -1;
        }
        a->body = buf + hlen;
        a->body_len = (size_t)content_length;
        buf[c->rlen] = '\0';
        return 1;
    }
    /* no length: the body ends with the connection */
    if (!eof)
        return 0;
    a->close = true;
    a->body = buf + hlen;
    a->body_len = c->rlen - hlen;
    buf[c->rlen] = '\0';
    return 1;
}

/* The string or literal value of the first "key" in a JSON text (no unescaping: the
 * values looked at here are plain words). */
static bool json_value(const char *json, const char *key, char *out, size_t outlen) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\"", key);
    const char *p = strstr(json, pattern);
    if (!p)
        return false;
    p += strlen(pattern);
    while (isspace((unsigned char)*p))
        p++;
    if (*p++ != ':')
        return false;
    while (isspace((unsigned char)*p))
        p++;
    size_t n = 0;
    if (*p == '"') {
        p++;
        while (*p && *p != '"' && n + 1 < outlen)
            out[n++] = *p++;
    } else {
        while (*p && (isalnum((unsigned char)*p) || *p == '-') && n + 1 < outlen)
            out[n++] = *p++;
    }
    out[n] = '\0';
    return n > 0;
}

static enum result classify(struct run *r, const struct http_answer *a) {
    char v[32];
    if (r->profile == P_SECUROTPD) {
        /* The answer's "result" decides, whatever the status code. */
        if (json_value(a->body, "result", v, sizeof v)) {
            if (strcmp(v, "accept") == 0) return R_ACCEPT;
            if (strcmp(v, "reject") == 0) return R_REJECT;
            if (strcmp(v, "locked") == 0) return R_LOCKED;
            if (strcmp(v, "challenge") == 0) return R_CHALLENGE;
        }
        return a->status == 200 ? R_BAD_ANSWER : R_HTTP_ERROR;
    }
    /* privacyIDEA: {"result": {"status": true, "value": bool, "authentication": "..."},
     * "detail": {"message": ...}}; an over-limit token answers REJECT with the message
     * "Failcounter exceeded". */
    if (a->status != 200)
        return R_HTTP_ERROR;
    if (json_value(a->body, "authentication", v, sizeof v)) {
        if (strcmp(v, "ACCEPT") == 0) return R_ACCEPT;
        if (strcmp(v, "CHALLENGE") == 0) return R_CHALLENGE;
        if (strcmp(v, "REJECT") == 0)
            return strstr(a->body, "Failcounter exceeded") ? R_LOCKED : R_REJECT;
    }
    if (json_value(a->body, "value", v, sizeof v)) {
        if (strcmp(v, "true") == 0) return R_ACCEPT;
        if (strcmp(v, "false") == 0) return R_REJECT;
    }
    return R_BAD_ANSWER;
}

static void open_loop_dispatch(struct run *r);

static void finish(struct run *r, struct conn *c, enum result res, const char *detail) {
    int64_t now = mono_ns();
    double lat_us = (double)(now - c->t_due) / 1e3;
    r->inflight--;
    r->counts[res]++;
    /* throughput: every answer inside the window, whenever its request was sent */
    if (now >= r->t_measure && now <= r->t_stop)
        r->completed_in_window++;
    if (c->measured) {
        if (r->nsamples == r->samples_cap) {
            r->samples_cap = r->samples_cap ? 2 * r->samples_cap : 65536;
            r->samples = realloc(r->samples, r->samples_cap * sizeof *r->samples);
            if (!r->samples)
                die("out of memory");
        }
        r->samples[r->nsamples++] = (struct sample){(c->t_due - r->t_measure) / 1000, lat_us, (uint8_t)res};
    }
    bool expected = (r->phase == PH_VALID && res == R_ACCEPT) || (r->phase == PH_WRONG && res == R_REJECT);
    bool transport = res >= R_HTTP_ERROR;
    if (!expected) {
        char excerpt[400] = "";
        if (detail)
            snprintf(excerpt, sizeof excerpt, "%s", detail);
        const char *who = r->seeds.users[c->user].name;
        if (!transport)
            abort_run(r, "%s code %0*" PRIu32 " for user %s (step %" PRId64 ") was answered '%s' "
                         "after %.1f ms; a %s-code run only measures %s answers. Answer: %s",
                      r->phase == PH_VALID ? "valid" : "wrong", DIGITS, c->code, who, c->step,
                      result_names[res], lat_us / 1e3, r->phase == PH_VALID ? "valid" : "wrong",
                      r->phase == PH_VALID ? "accept" : "reject", excerpt);
        unsigned long errors = 0;
        for (int i = R_HTTP_ERROR; i < R_COUNT; i++)
            errors += r->counts[i];
        fprintf(stderr, "%s: [%s] %s for user %s after %.1f ms: %s\n", progname, r->label,
                result_names[res], who, lat_us / 1e3, excerpt);
        if (errors > r->max_errors)
            abort_run(r, "%lu errors, more than --max-errors %lu", errors, r->max_errors);
        conn_close(r, c);
    }
    c->st = C_IDLE;
    bool go_on = !r->stopping && now < r->t_stop &&
                 (r->max_requests == 0 || r->issued_measured < r->max_requests);
    if (r->rate > 0) {
        r->idle[r->nidle++] = (size_t)(c - r->conns);
        open_loop_dispatch(r);
    } else if (go_on) {
        start_request(r, c, mono_ns());
    }
}

static void on_readable(struct run *r, struct conn *c) {
    for (;;) {
        if (c->rlen >= RBUF_MAX - 1) {
            finish(r, c, R_BAD_ANSWER, "answer larger than 64 KiB");
            return;
        }
        ssize_t n = recv(c->fd, c->rbuf + c->rlen, RBUF_MAX - 1 - c->rlen, 0);
        bool eof = n == 0;
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return;
            if (c->st != C_RECEIVING && c->st != C_SENDING) {
                conn_close(r, c); /* an idle keep-alive connection went away */
                return;
            }
            finish(r, c, R_IO_ERROR, strerror(errno));
            return;
        }
        if (c->st != C_RECEIVING && c->st != C_SENDING) {
            /* idle: the server closed the keep-alive connection; reconnect on next use */
            conn_close(r, c);
            return;
        }
        c->rlen += (size_t)n;
        struct http_answer a = {0};
        const char *msg = "";
        int done = parse_answer(c, eof, &a, &msg);
        if (done == 0 && !eof)
            continue;
        if (done <= 0) {
            char detail[160];
            snprintf(detail, sizeof detail, "%s (%s connection, %zu bytes received)", msg,
                     c->fresh ? "new" : "reused", c->rlen);
            finish(r, c, R_IO_ERROR, detail);
            return;
        }
        enum result res = classify(r, &a);
        bool close_it = a.close || eof;
        if (close_it)
            conn_close(r, c);
        char detail[320];
        snprintf(detail, sizeof detail, "HTTP %d %.*s", a.status,
                 (int)(a.body_len < 280 ? a.body_len : 280), a.body);
        finish(r, c, res, detail);
        return;
    }
}

static void on_event(struct run *r, struct conn *c, uint32_t events) {
    if (c->fd < 0)
        return;
    if (c->st == C_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
            finish(r, c, R_IO_ERROR, strerror(err));
            return;
        }
        c->st = C_SENDING;
        try_send(r, c);
        return;
    }
    if (c->st == C_SENDING && (events & EPOLLOUT)) {
        try_send(r, c);
        return;
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        on_readable(r, c);
}

/* Open loop: start every due request on a free connection; the rest wait in order. */
static void open_loop_dispatch(struct run *r) {
    int64_t interval = (int64_t)(1e9 / r->rate);
    int64_t now = mono_ns();
    while (!r->stopping) {
        int64_t due = r->t0 + (int64_t)r->scheduled * interval;
        if (due > now || due >= r->t_stop ||
            (r->max_requests && r->scheduled >= r->max_requests + (unsigned long)(r->warmup * r->rate)))
            break;
        if (r->pcount == r->pcap)
            abort_run(r, "%zu requests are waiting for a free connection; the server cannot keep up "
                         "with %.0f/s (raise --concurrency or lower --rate)",
                      r->pcount, r->rate);
        r->pending[(r->phead + r->pcount++) % r->pcap] = due;
        r->scheduled++;
    }
    while (r->pcount && r->nidle) {
        int64_t due = r->pending[r->phead];
        r->phead = (r->phead + 1) % r->pcap;
        r->pcount--;
        start_request(r, &r->conns[r->idle[--r->nidle]], due);
    }
    /* what is left waits because every connection has a request in flight: the server's
     * slowness, as opposed to the generator having been held up */
    if (r->pcount > r->pmax)
        r->pmax = r->pcount;
}

static void precompute_wrong_codes(struct run *r);

static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double cpu_at_start;


static void run_load(struct run *r) {
    r->ep = epoll_create1(EPOLL_CLOEXEC);
    if (r->ep < 0)
        die("epoll_create1: %s", strerror(errno));
    r->conns = xmalloc(r->concurrency * sizeof *r->conns);
    r->idle = xmalloc(r->concurrency * sizeof *r->idle);
    for (size_t i = 0; i < r->concurrency; i++) {
        r->conns[i].fd = -1;
        r->conns[i].rbuf = xmalloc(RBUF_MAX);
    }
    if (r->rate > 0) {
        r->pcap = (size_t)(r->rate * r->timeout) + 16;
        r->pending = xmalloc(r->pcap * sizeof *r->pending);
    }
    if (r->phase == PH_WRONG)
        precompute_wrong_codes(r);

    cpu_at_start = cpu_seconds();
    r->t0 = mono_ns();
    r->t_measure = r->t0 + (int64_t)(r->warmup * 1e9);
    r->t_stop = r->duration > 0 ? r->t_measure + (int64_t)(r->duration * 1e9) : INT64_MAX;
    if (r->rate > 0) {
        for (size_t i = 0; i < r->concurrency; i++)
            r->idle[r->nidle++] = r->concurrency - 1 - i;
        open_loop_dispatch(r);
    } else {
        for (size_t i = 0; i < r->concurrency; i++)
            if (r->max_requests == 0 || r->issued < r->max_requests)
                start_request(r, &r->conns[i], mono_ns());
    }
    struct epoll_event events[256];
    int64_t timeout_ns = (int64_t)(r->timeout * 1e9), last_check = r->t0;
    for (;;) {
        int64_t now = mono_ns();
        if (!r->stopping && (now >= r->t_stop || (r->max_requests && r->issued_measured >= r->max_requests)))
            r->stopping = true;
        if (r->stopping && r->inflight == 0)
            break;
        if (now - last_check > 100000000) {
            last_check = now;
            for (size_t i = 0; i < r->concurrency; i++) {
                struct conn *c = &r->conns[i];
                if (c->st != C_IDLE && now - c->t_sent > timeout_ns) {
                    conn_close(r, c);
                    finish(r, c, R_TIMEOUT, "no answer within --timeout");
                }
            }
        }
        int64_t wait_ns = 100000000;
        if (r->rate > 0 && !r->stopping) {
            int64_t due = r->t0 + (int64_t)((double)r->scheduled * 1e9 / r->rate);
            wait_ns = due - now;
            if (wait_ns < 0)
                wait_ns = 0;
            if (wait_ns > 100000000)
                wait_ns = 100000000;
        }
        struct timespec ts = {wait_ns / 1000000000, wait_ns % 1000000000};
        int n = epoll_pwait2(r->ep, events, 256, &ts, NULL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("epoll_pwait2: %s", strerror(errno));
        }
        for (int i = 0; i < n; i++)
            on_event(r, events[i].data.ptr, events[i].events);
        if (r->rate > 0)
            open_loop_dispatch(r);
    }
}

struct wrong_job {
    struct run *r;
    size_t from, to; /* positions after the wrong cursor */
};

static void *wrong_worker(void *arg) {
    struct wrong_job *j = arg;
    struct run *r = j->r;
    for (size_t i = j->from; i < j->to; i++) {
        size_t u = (size_t)((r->state.h->wrong_cursor + i) % r->seeds.n);
        r->wrong_codes[u] = wrong_code(&r->seeds.users[u], r->wrong_lo, r->wrong_hi);
    }
    return NULL;
}

/* Wrong codes are fixed per user for the run and miss every step from avoid_steps before
 * now to avoid_steps after the run can end. They are computed on all cores before the
 * clock starts, for the users the run can reach (all of them unless the run is bounded by
 * --requests alone); a user outside that set gets its code when it is used. */
static void precompute_wrong_codes(struct run *r) {
    size_t n = r->seeds.n, reach = n;
    r->wrong_codes = xmalloc(n * sizeof *r->wrong_codes);
    for (size_t u = 0; u < n; u++)
        r->wrong_codes[u] = WRONG_UNSET;
    double span;
    if (r->duration > 0) {
        span = r->warmup + r->duration + r->timeout;
    } else {
        span = r->warmup + ((double)r->max_requests / (double)r->concurrency + 1) * r->timeout;
        if (r->warmup == 0 && r->max_requests + r->concurrency < n)
            reach = r->max_requests + r->concurrency;
    }
    if (span > 3 * 3600)
        span = 3 * 3600;
    int64_t now = current_step();
    r->wrong_lo = now - r->avoid_steps;
    r->wrong_hi = now + (int64_t)(span / STEP_SECONDS) + 1 + r->avoid_steps;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t threads = cpus > 0 ? (size_t)cpus : 1;
    if (threads > 16)
        threads = 16;
    pthread_t tid[16];
    struct wrong_job jobs[16];
    for (size_t t = 0; t < threads; t++) {
        jobs[t] = (struct wrong_job){r, reach * t / threads, reach * (t + 1) / threads};
        if (pthread_create(&tid[t], NULL, wrong_worker, &jobs[t]) != 0)
            die("pthread_create failed");
    }
    for (size_t t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
}

static void write_samples(struct run *r, const char *path) {
    FILE *f = fopen(path, "a");
    if (!f)
        die("cannot open %s: %s", path, strerror(errno));
    for (size_t i = 0; i < r->nsamples; i++)
        fprintf(f, "%.3f %.1f %s\n", (double)r->samples[i].due_us / 1e3, r->samples[i].latency_us,
                result_names[r->samples[i].result]);
    if (fclose(f) != 0)
        die("cannot write %s: %s", path, strerror(errno));
}

static void report(struct run *r, FILE *to) {
    int64_t end = mono_ns();
    double *lat = xmalloc((r->nsamples + 1) * sizeof *lat);
    double sum = 0;
    for (size_t i = 0; i < r->nsamples; i++) {
        lat[i] = r->samples[i].latency_us / 1e3;
        sum += lat[i];
    }
    qsort(lat, r->nsamples, sizeof *lat, cmp_double);
    int64_t window_end = r->t_stop < end ? r->t_stop : end;
    double window = (double)(window_end - r->t_measure) / 1e9;
    double cpu = cpu_seconds() - cpu_at_start;
    unsigned long errors = 0;
    for (int i = R_HTTP_ERROR; i < R_COUNT; i++)
        errors += r->counts[i];
    fprintf(to,
            "vbench label=%s profile=%s phase=%s mode=%s concurrency=%zu target_rate=%.1f "
            "window_s=%.3f measured=%zu rate=%.1f mean_ms=%.3f p50_ms=%.3f p90_ms=%.3f "
            "p99_ms=%.3f p999_ms=%.3f max_ms=%.3f errors=%lu",
            r->label, r->profile == P_PRIVACYIDEA ? "privacyidea" : "securotpd",
            r->phase == PH_VALID ? "valid" : "wrong", r->rate > 0 ? "open" : "closed",
            r->concurrency, r->rate, window, r->nsamples,
            window > 0 ? (double)r->completed_in_window / window : 0.0,
            r->nsamples ? sum / (double)r->nsamples : NAN, percentile(lat, r->nsamples, 0.50),
            percentile(lat, r->nsamples, 0.90), percentile(lat, r->nsamples, 0.99),
            percentile(lat, r->nsamples, 0.999), r->nsamples ? lat[r->nsamples - 1] : NAN, errors);
    for (int i = 0; i < R_COUNT; i++)
        fprintf(to, " %s=%lu", result_names[i], r->counts[i]);
    double wall = (double)(end - r->t0) / 1e9;
    fprintf(to, " requests=%lu connects=%lu gen_cpu_s=%.3f gen_cpu_us_per_req=%.1f gen_cpu_pct=%.1f",
            r->issued, r->connects, cpu, r->issued ? cpu * 1e6 / (double)r->issued : 0.0,
            wall > 0 ? 100 * cpu / wall : 0.0);
    if (r->rate > 0) {
        qsort(r->lag_us, r->nlag, sizeof *r->lag_us, cmp_double);
        fprintf(to, " start_lag_p50_ms=%.3f start_lag_p99_ms=%.3f start_lag_max_ms=%.3f conn_wait_max=%zu",
                percentile(r->lag_us, r->nlag, 0.5) / 1e3, percentile(r->lag_us, r->nlag, 0.99) / 1e3,
                r->nlag ? r->lag_us[r->nlag - 1] / 1e3 : 0.0, r->pmax);
    }
    fputc('\n', to);
    free(lat);
}

static void parse_url(struct run *r, const char *url) {
    const char *p = url;
    if (strncmp(p, "http://", 7) != 0)
        die("--url must start with http:// (plain HTTP on loopback; TLS is measured separately)");
    p += 7;
    const char *slash = strchr(p, '/');
    size_t hostlen = slash ? (size_t)(slash - p) : strlen(p);
    if (hostlen == 0 || hostlen >= sizeof r->host)
        die("--url: bad host");
    memcpy(r->host, p, hostlen);
    r->host[hostlen] = '\0';
    snprintf(r->path, sizeof r->path, "%s", slash ? slash : "/");
    char ip[64];
    unsigned long port = 80;
    char *colon = strrchr(r->host, ':');
    if (colon) {
        memcpy(ip, r->host, (size_t)(colon - r->host));
        ip[colon - r->host] = '\0';
        port = parse_ulong("--url port", colon + 1);
    } else {
        snprintf(ip, sizeof ip, "%s", r->host);
    }
    if (strcmp(ip, "localhost") == 0)
        snprintf(ip, sizeof ip, "127.0.0.1");
    r->addr.sin_family = AF_INET;
    r->addr.sin_port = htons((uint16_t)port);
    if (port == 0 || port > 65535 || inet_pton(AF_INET, ip, &r->addr.sin_addr) != 1)
        die("--url: host must be an IPv4 address with a port, e.g. http://127.0.0.1:8080/path");
    /* Benchmarks here only ever target this machine. */
    if ((ntohl(r->addr.sin_addr.s_addr) >> 24) != 127)
        die("--url: only loopback addresses (127.0.0.0/8) are allowed");
}

static void read_secret_file(const char *path, char *out, size_t outlen) {
    FILE *f = fopen(path, "r");
    if (!f)
        die("cannot open %s: %s", path, strerror(errno));
    if (!fgets(out, (int)outlen, f))
        die("%s is empty", path);
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    for (const char *p = out; *p; p++)
        if (!isgraph((unsigned char)*p))
            die("%s: the credential must be one line of printable characters", path);
    if (!*out)
        die("%s is empty", path);
}

static void usage_run(FILE *to) {
    fputs("usage: vbench run --url http://127.0.0.1:PORT/PATH --profile privacyidea|securotpd\n"
          "                  --seeds FILE --state FILE --phase valid|wrong [options]\n"
          "  --users N               use the first N users of the seeds file (default: all)\n"
          "  --concurrency C         connections, each with one request in flight (default 1)\n"
          "  --duration S            measure for S seconds after the warm-up\n"
          "  --requests N            stop after N measured requests (with or without --duration)\n"
          "  --warmup S              seconds sent first and left out of the statistics (default 0)\n"
          "  --rate R                open loop: start requests at R/s on a fixed schedule; latency\n"
          "                          counts from each request's slot (default 0: closed loop)\n"
          "  --bearer-file FILE      securotpd host credential (sent as Authorization: Bearer)\n"
          "  --realm NAME            privacyIDEA realm parameter (default: none = default realm)\n"
          "  --samples FILE          append 'due_ms latency_us result' per measured request\n"
          "  --label NAME            name in the output (default: profile-phase)\n"
          "  --timeout S             a request without an answer after S s is an error (default 10)\n"
          "  --max-errors N          transport/HTTP errors tolerated before stopping (default 0)\n"
          "  --max-wrong-per-user K  wrong codes any one user may ever get (default 3)\n"
          "  --avoid-steps A         wrong codes miss every step within A of the run (default 60)\n",
          to);
}

static int cmd_run(int argc, char **argv) {
    struct run *r = xmalloc(sizeof *r);
    const char *url = NULL, *seeds_path = NULL, *state_path = NULL, *samples = NULL, *bearer_file = NULL;
    const char *profile = NULL, *phase = NULL;
    unsigned long users = 0;
    r->concurrency = 1;
    r->timeout = 10;
    r->max_wrong = 3;
    r->avoid_steps = 60;
    enum { O_URL = 256, O_PROFILE, O_SEEDS, O_STATE, O_PHASE, O_USERS, O_CONC, O_DUR, O_REQ,
           O_WARM, O_RATE, O_BEARER, O_REALM, O_SAMPLES, O_LABEL, O_TIMEOUT, O_MAXERR, O_MAXWRONG,
           O_AVOID, O_HELP };
    static const struct option opts[] = {
        {"url", required_argument, NULL, O_URL}, {"profile", required_argument, NULL, O_PROFILE},
        {"seeds", required_argument, NULL, O_SEEDS}, {"state", required_argument, NULL, O_STATE},
        {"phase", required_argument, NULL, O_PHASE}, {"users", required_argument, NULL, O_USERS},
        {"concurrency", required_argument, NULL, O_CONC}, {"duration", required_argument, NULL, O_DUR},
        {"requests", required_argument, NULL, O_REQ}, {"warmup", required_argument, NULL, O_WARM},
        {"rate", required_argument, NULL, O_RATE}, {"bearer-file", required_argument, NULL, O_BEARER},
        {"realm", required_argument, NULL, O_REALM}, {"samples", required_argument, NULL, O_SAMPLES},
        {"label", required_argument, NULL, O_LABEL}, {"timeout", required_argument, NULL, O_TIMEOUT},
        {"max-errors", required_argument, NULL, O_MAXERR},
        {"max-wrong-per-user", required_argument, NULL, O_MAXWRONG},
        {"avoid-steps", required_argument, NULL, O_AVOID}, {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_URL: url = optarg; break;
        case O_PROFILE: profile = optarg; break;
        case O_SEEDS: seeds_path = optarg; break;
        case O_STATE: state_path = optarg; break;
        case O_PHASE: phase = optarg; break;
        case O_USERS: users = parse_ulong("--users", optarg); break;
        case O_CONC: r->concurrency = parse_ulong("--concurrency", optarg); break;
        case O_DUR: r->duration = parse_double("--duration", optarg); break;
        case O_REQ: r->max_requests = parse_ulong("--requests", optarg); break;
        case O_WARM: r->warmup = parse_double("--warmup", optarg); break;
        case O_RATE: r->rate = parse_double("--rate", optarg); break;
        case O_BEARER: bearer_file = optarg; break;
        case O_REALM: snprintf(r->realm, sizeof r->realm, "%s", optarg); break;
        case O_SAMPLES: samples = optarg; break;
        case O_LABEL: r->label = optarg; break;
        case O_TIMEOUT: r->timeout = parse_double("--timeout", optarg); break;
        case O_MAXERR: r->max_errors = parse_ulong("--max-errors", optarg); break;
        case O_MAXWRONG: r->max_wrong = (unsigned)parse_ulong("--max-wrong-per-user", optarg); break;
        case O_AVOID: r->avoid_steps = (int)parse_ulong("--avoid-steps", optarg); break;
        case O_HELP: usage_run(stdout); return 0;
        default: usage_run(stderr); return 2;
        }
    }
    if (optind != argc || !url || !profile || !seeds_path || !state_path || !phase) {
        usage_run(stderr);
        die("--url, --profile, --seeds, --state and --phase are required");
    }
    if (strcmp(profile, "privacyidea") == 0)
        r->profile = P_PRIVACYIDEA;
    else if (strcmp(profile, "securotpd") == 0)
        r->profile = P_SECUROTPD;
    else
        die("--profile must be privacyidea or securotpd");
    if (strcmp(phase, "valid") == 0)
        r->phase = PH_VALID;
    else if (strcmp(phase, "wrong") == 0)
        r->phase = PH_WRONG;
    else
        die("--phase must be valid or wrong");
    if (r->concurrency == 0 || r->concurrency > 10000)
        die("--concurrency must be 1-10000");
    if (r->duration <= 0 && r->max_requests == 0)
        die("give --duration or --requests (or both)");
    if (r->timeout <= 0)
        die("--timeout must be > 0");
    if (r->profile == P_SECUROTPD) {
        if (!bearer_file)
            die("--profile securotpd needs --bearer-file (the host credential)");
        read_secret_file(bearer_file, r->bearer, sizeof r->bearer);
    }
    if (r->max_wrong == 0 && r->phase == PH_WRONG)
        die("--max-wrong-per-user 0 allows no wrong codes");
    char label[64];
    if (!r->label) {
        snprintf(label, sizeof label, "%s-%s", profile, phase);
        r->label = label;
    }
    parse_url(r, url);
    r->seeds = load_seeds(seeds_path, users);
    r->state = open_state(state_path, r->seeds.n);
    if (r->rate > 0 && r->phase == PH_VALID && r->rate * STEP_SECONDS > (double)r->seeds.n)
        fprintf(stderr, "%s: [%s] warning: %.0f/s for a whole %d s step needs more than the %zu users "
                        "there are; the run stops if they run out\n",
                progname, r->label, r->rate, STEP_SECONDS, r->seeds.n);
    run_load(r);
    if (samples)
        write_samples(r, samples);
    report(r, stdout);
    msync(r->state.h, r->state.bytes, MS_SYNC);
    return 0;
}

/* ---------------------------------------------------------------- stand-in server */

/* A validator that does the least a validator must (parse, authenticate the host,
 * look the user up, compute and compare codes, spend the step), all in memory, in one
 * thread. It is not securotpd: it exists to measure the generator's ceiling and to dry-run
 * the securotpd profile end to end. */

struct srv_user {
    int64_t last_step;
    unsigned failures;
};

struct srv_conn {
    int fd;
    char buf[8192];
    size_t len;
};

struct server {
    struct seeds seeds;
    struct srv_user *state;
    size_t *table; /* open addressing: index + 1, 0 = empty */
    size_t table_size;
    char bearer[512];
    unsigned deny;
    unsigned long served;
};

static uint64_t fnv1a(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static long srv_lookup(const struct server *s, const char *name, size_t n) {
    for (size_t i = fnv1a(name, n) & (s->table_size - 1);; i = (i + 1) & (s->table_size - 1)) {
        size_t v = s->table[i];
        if (!v)
            return -1;
        const char *un = s->seeds.users[v - 1].name;
        if (strlen(un) == n && memcmp(un, name, n) == 0)
            return (long)(v - 1);
    }
}

static const char *srv_verify(struct server *s, const char *body) {
    char user[MAX_USER + 1], pass[16];
    if (!json_value(body, "user", user, sizeof user) || !json_value(body, "passcode", pass, sizeof pass))
        return NULL;
    long idx = srv_lookup(s, user, strlen(user));
    if (idx < 0)
        return "reject";
    struct srv_user *st = &s->state[idx];
    if (s->deny && st->failures >= s->deny)
        return "locked";
    char *end;
    unsigned long code = strtoul(pass, &end, 10);
    int64_t now = current_step();
    if (*end == '\0' && strlen(pass) == DIGITS)
        for (int64_t step = now - 1; step <= now + 1; step++)
            if (step > st->last_step && totp(&s->seeds.users[idx], step) == code) {
                st->last_step = step;
                st->failures = 0;
                return "accept";
            }
    st->failures++;
    return "reject";
}

static void srv_reply(int fd, int status, const char *reason, const char *body) {
    char out[512];
    int n = snprintf(out, sizeof out,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     status, reason, strlen(body), body);
    if (send(fd, out, (size_t)n, MSG_NOSIGNAL) != n) {
        /* the client went away or its window is full: it will see the connection drop */
    }
}

/* Handles every complete request in the buffer; false: close the connection. */
static bool srv_handle(struct server *s, struct srv_conn *c) {
    for (;;) {
        c->buf[c->len] = '\0';
        char *end = strstr(c->buf, "\r\n\r\n");
        if (!end)
            return c->len < sizeof c->buf - 1;
        size_t hlen = (size_t)(end - c->buf) + 4;
        char *cl = strcasestr(c->buf, "\r\ncontent-length:");
        size_t blen = cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0;
        if (hlen + blen > sizeof c->buf - 1)
            return false;
        if (c->len < hlen + blen)
            return true;
        char saved = c->buf[hlen + blen];
        c->buf[hlen + blen] = '\0';
        char *auth = strcasestr(c->buf, "\r\nauthorization: bearer ");
        bool authed = false;
        if (auth && auth < end) {
            char *tok = auth + 24, *eol = strstr(tok, "\r\n");
            authed = eol && (size_t)(eol - tok) == strlen(s->bearer) &&
                     memcmp(tok, s->bearer, (size_t)(eol - tok)) == 0;
        }
        if (strncmp(c->buf, "POST /v1/verify ", 16) != 0)
            srv_reply(c->fd, 404, "Not Found", "{\"error\":\"not found\"}");
        else if (!authed)
            srv_reply(c->fd, 401, "Unauthorized", "{\"error\":\"unknown host credential\"}");
        else {
            const char *verdict = srv_verify(s, c->buf + hlen);
            char body[64];
            if (verdict) {
                snprintf(body, sizeof body, "{\"result\":\"%s\"}", verdict);
                srv_reply(c->fd, 200, "OK", body);
            } else {
                srv_reply(c->fd, 400, "Bad Request", "{\"error\":\"user and passcode are required\"}");
            }
        }
        s->served++;
        c->buf[hlen + blen] = saved;
        memmove(c->buf, c->buf + hlen + blen, c->len - hlen - blen);
        c->len -= hlen + blen;
    }
}

static volatile sig_atomic_t srv_stop;
static void on_term(int sig) {
    (void)sig;
    srv_stop = 1;
}

static int cmd_serve(int argc, char **argv) {
    struct server *s = xmalloc(sizeof *s);
    const char *seeds_path = NULL, *bearer_file = NULL, *ready_file = NULL;
    unsigned long port = 0, users = 0;
    s->deny = 5;
    static const struct option opts[] = {
        {"port", required_argument, NULL, 'p'}, {"seeds", required_argument, NULL, 's'},
        {"users", required_argument, NULL, 'u'}, {"bearer-file", required_argument, NULL, 'b'},
        {"deny", required_argument, NULL, 'd'}, {"ready-file", required_argument, NULL, 'r'},
        {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'p': port = parse_ulong("--port", optarg); break;
        case 's': seeds_path = optarg; break;
        case 'u': users = parse_ulong("--users", optarg); break;
        case 'b': bearer_file = optarg; break;
        case 'd': s->deny = (unsigned)parse_ulong("--deny", optarg); break;
        case 'r': ready_file = optarg; break;
        default:
            die("usage: vbench serve --port PORT --seeds FILE --bearer-file FILE [--users N] "
                "[--deny N] [--ready-file FILE]");
        }
    }
    if (!port || port > 65535 || !seeds_path || !bearer_file)
        die("usage: vbench serve --port PORT --seeds FILE --bearer-file FILE [--users N] [--deny N]");
    read_secret_file(bearer_file, s->bearer, sizeof s->bearer);
    s->seeds = load_seeds(seeds_path, users);
    s->state = xmalloc(s->seeds.n * sizeof *s->state);
    for (s->table_size = 16; s->table_size < 2 * s->seeds.n;)
        s->table_size *= 2;
    s->table = xmalloc(s->table_size * sizeof *s->table);
    for (size_t u = 0; u < s->seeds.n; u++) {
        size_t i = fnv1a(s->seeds.users[u].name, strlen(s->seeds.users[u].name)) & (s->table_size - 1);
        while (s->table[i])
            i = (i + 1) & (s->table_size - 1);
        s->table[i] = u + 1;
    }

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(lfd, 1024) != 0)
        die("cannot listen on 127.0.0.1:%lu: %s", port, strerror(errno));
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    signal(SIGTERM, on_term);
    signal(SIGINT, on_term);
    if (ready_file) {
        FILE *f = fopen(ready_file, "w");
        if (!f || fclose(f) != 0)
            die("cannot write %s", ready_file);
    }
    struct epoll_event events[256];
    while (!srv_stop) {
        int n = epoll_wait(ep, events, 256, 200);
        for (int i = 0; i < n; i++) {
            struct srv_conn *sc = events[i].data.ptr;
            if (!sc) {
                int fd;
                while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct srv_conn *nc = xmalloc(sizeof *nc);
                    nc->fd = fd;
                    struct epoll_event cev = {.events = EPOLLIN, .data.ptr = nc};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &cev);
                }
                continue;
            }
            ssize_t got = recv(sc->fd, sc->buf + sc->len, sizeof sc->buf - 1 - sc->len, 0);
            if (got < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (got > 0)
                sc->len += (size_t)got;
            if (got <= 0 || !srv_handle(s, sc)) {
                epoll_ctl(ep, EPOLL_CTL_DEL, sc->fd, NULL);
                close(sc->fd);
                free(sc);
            }
        }
    }
    fprintf(stderr, "%s serve: %lu requests served\n", progname, s->served);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs("usage: vbench seeds|code|take|run|serve ... (see the comment at the top of vbench.c)\n", stderr);
        return 2;
    }
    const char *cmd = argv[1];
    argv[1] = argv[0];
    if (strcmp(cmd, "seeds") == 0)
        return cmd_seeds(argc - 1, argv + 1);
    if (strcmp(cmd, "code") == 0)
        return cmd_code(argc - 1, argv + 1);
    if (strcmp(cmd, "take") == 0)
        return cmd_take(argc - 1, argv + 1);
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "serve") == 0)
        return cmd_serve(argc - 1, argv + 1);
    die("unknown subcommand '%s' (seeds, code, take, run, serve)", cmd);
}
