/*
 * pam-bench: in-process cost of one PAM authentication.
 *
 * Loops pam_start_confdir / pam_authenticate / pam_end against a private service
 * directory (so /etc/pam.d is never read) with a conversation that answers every
 * prompt with the HOTP code for the current iteration. All codes are computed
 * before the clock starts. Every authentication must return PAM_SUCCESS; anything
 * else aborts the run, because a benchmark of failures measures nothing useful.
 *
 * Output: one line of key=value pairs on stdout, times in microseconds:
 *   pam-bench label=L iterations=N warmup=W auth_median_us=.. auth_mean_us=..
 *   auth_p99_us=.. cycle_median_us=.. cycle_mean_us=.. cycle_p99_us=.. next_counter=C
 * "auth" is pam_authenticate alone; "cycle" is pam_start + pam_authenticate + pam_end.
 *
 * --samples FILE appends the raw timings ("auth_us cycle_us", one line per measured
 * authentication) so that several runs (rounds) can be summarized together.
 *
 * Helper modes:
 *   --print-code   prints the HOTP code for --counter and exits (used by the whole-process
 *                  benchmark so that every code comes from the same implementation);
 *   --stats FILE   summarizes column --column K (default 1) of a file of numbers:
 *                  "n=.. median=.. mean=.. p99=.. min=.. max=.. stddev=..".
 *   --wrong CODE   answers every prompt with CODE and requires every authentication to fail
 *                  with PAM_AUTH_ERR (no --key-hex or --counter): the cost of a refusal, for
 *                  comparing kinds of users (bench/pam/user-timing.sh).
 *
 * Build: cc -O2 -Wall -Wextra -o pam-bench pam-bench.c -lpam -lcrypto -lm
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <security/pam_appl.h>

#define MAX_DIGITS 9
#define CODE_LEN 16

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...) {
    va_list ap;
    fputs("pam-bench: error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

static void usage(FILE *to) {
    fputs("usage: pam-bench --confdir DIR --service NAME --user USER --key-hex HEX\n"
          "                 --counter START --iterations N [--warmup W] [--digits D]\n"
          "                 [--label NAME] [--samples FILE] [--require-prompt] [--verbose]\n"
          "       pam-bench --confdir DIR --service NAME --user USER --wrong CODE --iterations N\n"
          "                 [--warmup W] [--label NAME] [--samples FILE]\n"
          "       pam-bench --print-code --key-hex HEX --counter C [--digits D]\n"
          "       pam-bench --stats FILE [--column K]\n",
          to);
}

/* ---- HOTP (RFC 4226), used only outside the timed region ---- */

static size_t parse_hex(const char *hex, unsigned char **out) {
    size_t len = strlen(hex);
    if (len == 0 || len % 2 != 0)
        die("--key-hex must be a non-empty, even-length hex string");
    unsigned char *buf = malloc(len / 2);
    if (!buf)
        die("out of memory");
    for (size_t i = 0; i < len / 2; i++) {
        unsigned int byte;
        if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
            die("--key-hex: invalid hex at offset %zu", 2 * i);
        buf[i] = (unsigned char)byte;
    }
    *out = buf;
    return len / 2;
}

static void hotp(const unsigned char *key, size_t key_len, uint64_t counter, int digits,
                 char out[CODE_LEN]) {
    unsigned char msg[8];
    for (int i = 7; i >= 0; i--) {
        msg[i] = (unsigned char)(counter & 0xff);
        counter >>= 8;
    }
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    if (!HMAC(EVP_sha1(), key, (int)key_len, msg, sizeof msg, mac, &mac_len) || mac_len < 20)
        die("HMAC-SHA1 failed");
    unsigned int off = mac[mac_len - 1] & 0x0f;
    uint32_t bin = ((uint32_t)(mac[off] & 0x7f) << 24) | ((uint32_t)mac[off + 1] << 16) |
                   ((uint32_t)mac[off + 2] << 8) | (uint32_t)mac[off + 3];
    uint32_t mod = 1;
    for (int i = 0; i < digits; i++)
        mod *= 10;
    snprintf(out, CODE_LEN, "%0*" PRIu32, digits, bin % mod);
}

/* ---- conversation ---- */

struct conv_state {
    const char *code;       /* answer for every prompt */
    unsigned prompts;       /* prompts seen during the current authentication */
    int verbose;
    char last_msg[256];     /* last PAM_ERROR_MSG / PAM_TEXT_INFO, for diagnostics */
};

static int conversation(int n, const struct pam_message **msg, struct pam_response **resp,
                        void *appdata) {
    struct conv_state *st = appdata;
    if (n <= 0)
        return PAM_CONV_ERR;
    struct pam_response *r = calloc((size_t)n, sizeof *r);
    if (!r)
        return PAM_BUF_ERR;
    for (int i = 0; i < n; i++) {
        switch (msg[i]->msg_style) {
        case PAM_PROMPT_ECHO_OFF:
        case PAM_PROMPT_ECHO_ON:
            st->prompts++;
            r[i].resp = strdup(st->code);
            if (!r[i].resp)
                goto fail;
            break;
        case PAM_ERROR_MSG:
        case PAM_TEXT_INFO:
            snprintf(st->last_msg, sizeof st->last_msg, "%s", msg[i]->msg ? msg[i]->msg : "");
            if (st->verbose)
                fprintf(stderr, "pam-bench: module says: %s\n", st->last_msg);
            break;
        default:
            goto fail;
        }
    }
    *resp = r;
    return PAM_SUCCESS;
fail:
    for (int i = 0; i < n; i++)
        free(r[i].resp);
    free(r);
    return PAM_CONV_ERR;
}

/* ---- statistics ---- */

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct stats {
    double median, mean, p99, min, max, stddev;
};

/* Sorts v in place. p99 is the nearest-rank percentile: the ceil(0.99 n)-th smallest. */
static struct stats summarize(double *v, size_t n) {
    struct stats s = {0};
    double sum = 0, sq = 0;
    qsort(v, n, sizeof *v, cmp_double);
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    s.mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        sq += (v[i] - s.mean) * (v[i] - s.mean);
    s.stddev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
    s.median = (n % 2) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
    size_t rank = (99 * n + 99) / 100;
    s.p99 = v[(rank ? rank : 1) - 1];
    s.min = v[0];
    s.max = v[n - 1];
    return s;
}

static unsigned long parse_ulong(const char *opt, const char *s) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *s == '\0' || *end != '\0' || s[0] == '-')
        die("%s: not a non-negative integer: '%s'", opt, s);
    return (unsigned long)v;
}

/* --stats: summarize one column of a whitespace-separated file of numbers. */
static int stats_mode(const char *file, unsigned long column) {
    FILE *f = fopen(file, "r");
    if (!f)
        die("cannot open %s: %s", file, strerror(errno));
    size_t n = 0, cap = 1024, lineno = 0;
    double *v = malloc(cap * sizeof *v);
    char line[1024];
    if (!v)
        die("out of memory");
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
        if (!tok)
            continue; /* blank line */
        for (unsigned long k = 1; k < column && tok; k++)
            tok = strtok_r(NULL, " \t\r\n", &save);
        char *end;
        double x = tok ? strtod(tok, &end) : 0;
        if (!tok || end == tok || (*end != '\0'))
            die("%s:%zu: no number in column %lu", file, lineno, column);
        if (n == cap) {
            cap *= 2;
            v = realloc(v, cap * sizeof *v);
            if (!v)
                die("out of memory");
        }
        v[n++] = x;
    }
    fclose(f);
    if (n == 0)
        die("%s: no samples", file);
    struct stats s = summarize(v, n);
    printf("n=%zu median=%.4f mean=%.4f p99=%.4f min=%.4f max=%.4f stddev=%.4f\n", n, s.median,
           s.mean, s.p99, s.min, s.max, s.stddev);
    free(v);
    return 0;
}

int main(int argc, char **argv) {
    const char *confdir = NULL, *service = NULL, *user = NULL, *key_hex = NULL;
    const char *label = NULL, *samples_file = NULL, *stats_file = NULL, *wrong = NULL;
    unsigned long counter = 0, iterations = 0, warmup = 0, digits = 6, column = 1;
    int have_counter = 0, print_code = 0, verbose = 0, require_prompt = 0;

    enum { O_CONFDIR = 256, O_SERVICE, O_USER, O_KEY, O_COUNTER, O_ITER, O_WARMUP, O_DIGITS,
           O_LABEL, O_SAMPLES, O_PRINT, O_STATS, O_COLUMN, O_REQPROMPT, O_VERBOSE, O_HELP, O_WRONG };
    static const struct option opts[] = {
        {"confdir", required_argument, NULL, O_CONFDIR},
        {"service", required_argument, NULL, O_SERVICE},
        {"user", required_argument, NULL, O_USER},
        {"key-hex", required_argument, NULL, O_KEY},
        {"counter", required_argument, NULL, O_COUNTER},
        {"iterations", required_argument, NULL, O_ITER},
        {"warmup", required_argument, NULL, O_WARMUP},
        {"digits", required_argument, NULL, O_DIGITS},
        {"label", required_argument, NULL, O_LABEL},
        {"samples", required_argument, NULL, O_SAMPLES},
        {"print-code", no_argument, NULL, O_PRINT},
        {"stats", required_argument, NULL, O_STATS},
        {"column", required_argument, NULL, O_COLUMN},
        {"require-prompt", no_argument, NULL, O_REQPROMPT},
        {"verbose", no_argument, NULL, O_VERBOSE},
        {"wrong", required_argument, NULL, O_WRONG},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_CONFDIR: confdir = optarg; break;
        case O_SERVICE: service = optarg; break;
        case O_USER: user = optarg; break;
        case O_KEY: key_hex = optarg; break;
        case O_COUNTER: counter = parse_ulong("--counter", optarg); have_counter = 1; break;
        case O_ITER: iterations = parse_ulong("--iterations", optarg); break;
        case O_WARMUP: warmup = parse_ulong("--warmup", optarg); break;
        case O_DIGITS: digits = parse_ulong("--digits", optarg); break;
        case O_LABEL: label = optarg; break;
        case O_SAMPLES: samples_file = optarg; break;
        case O_PRINT: print_code = 1; break;
        case O_STATS: stats_file = optarg; break;
        case O_COLUMN: column = parse_ulong("--column", optarg); break;
        case O_REQPROMPT: require_prompt = 1; break;
        case O_VERBOSE: verbose = 1; break;
        case O_WRONG: wrong = optarg; break;
        case O_HELP: usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        die("unexpected argument '%s'", argv[optind]);
    }
    if (stats_file) {
        if (column == 0)
            die("--column counts from 1");
        return stats_mode(stats_file, column);
    }
    if (wrong) {
        if (strlen(wrong) >= CODE_LEN)
            die("--wrong takes a code of at most %d characters", CODE_LEN - 1);
        key_hex = "00";
        have_counter = 1;
    }
    if (!key_hex || !have_counter) {
        usage(stderr);
        die("--key-hex and --counter are required");
    }
    if (digits < 6 || digits > MAX_DIGITS)
        die("--digits must be between 6 and %d", MAX_DIGITS);

    unsigned char *key;
    size_t key_len = parse_hex(key_hex, &key);

    if (print_code) {
        char code[CODE_LEN];
        hotp(key, key_len, counter, (int)digits, code);
        puts(code);
        return 0;
    }

    if (!confdir || !service || !user || iterations == 0) {
        usage(stderr);
        die("--confdir, --service, --user and --iterations (> 0) are required");
    }
    if (!label)
        label = service;

    /* A missing service file would make libpam fall back to "other" (or fail in a
     * confusing way): check it explicitly. */
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", confdir, service);
    FILE *f = fopen(path, "r");
    if (!f)
        die("cannot open service file %s: %s", path, strerror(errno));
    fclose(f);

    size_t total = warmup + iterations;
    char (*codes)[CODE_LEN] = malloc(total * sizeof *codes);
    double *auth_us = malloc(iterations * sizeof *auth_us);
    double *cycle_us = malloc(iterations * sizeof *cycle_us);
    if (!codes || !auth_us || !cycle_us)
        die("out of memory");
    for (size_t i = 0; i < total; i++) {
        if (wrong)
            snprintf(codes[i], CODE_LEN, "%s", wrong);
        else
            hotp(key, key_len, (uint64_t)counter + i, (int)digits, codes[i]);
    }

    struct conv_state st = {.verbose = verbose};
    struct pam_conv conv = {conversation, &st};

    for (size_t i = 0; i < total; i++) {
        pam_handle_t *pamh = NULL;
        st.code = codes[i];
        st.prompts = 0;
        st.last_msg[0] = '\0';

        double t0 = now_us();
        int rc = pam_start_confdir(service, user, &conv, confdir, &pamh);
        if (rc != PAM_SUCCESS)
            die("[%s] pam_start_confdir(%s, %s, confdir=%s) failed: %s", label, service, user,
                confdir, pam_strerror(pamh, rc));
        double t1 = now_us();
        int arc = pam_authenticate(pamh, 0);
        double t2 = now_us();
        rc = pam_end(pamh, arc);
        double t3 = now_us();

        if (wrong ? arc != PAM_AUTH_ERR : arc != PAM_SUCCESS)
            die("[%s] authentication %zu (counter %" PRIu64 ", code %s) failed: %s%s%s",
                label, i, (uint64_t)counter + i, codes[i], pam_strerror(NULL, arc),
                st.last_msg[0] ? "; module said: " : "", st.last_msg);
        if (rc != PAM_SUCCESS)
            die("[%s] pam_end failed: %s", label, pam_strerror(NULL, rc));
        if (st.prompts == 0 && require_prompt)
            die("[%s] authentication %zu succeeded without asking for a code", label, i);
        if (st.prompts > 1 && i == 0)
            fprintf(stderr, "pam-bench: [%s] note: %u prompts per authentication\n", label,
                    st.prompts);

        if (i >= warmup) {
            auth_us[i - warmup] = t2 - t1;
            cycle_us[i - warmup] = t3 - t0;
        }
    }

    if (samples_file) {
        FILE *out = fopen(samples_file, "a");
        if (!out)
            die("cannot open %s: %s", samples_file, strerror(errno));
        for (size_t i = 0; i < iterations; i++)
            fprintf(out, "%.3f %.3f\n", auth_us[i], cycle_us[i]);
        if (fclose(out) != 0)
            die("cannot write %s: %s", samples_file, strerror(errno));
    }

    struct stats a = summarize(auth_us, iterations);
    struct stats cy = summarize(cycle_us, iterations);
    printf("pam-bench label=%s iterations=%lu warmup=%lu"
           " auth_median_us=%.1f auth_mean_us=%.1f auth_p99_us=%.1f auth_min_us=%.1f"
           " cycle_median_us=%.1f cycle_mean_us=%.1f cycle_p99_us=%.1f cycle_min_us=%.1f"
           " next_counter=%" PRIu64 "\n",
           label, iterations, warmup, a.median, a.mean, a.p99, a.min, cy.median, cy.mean, cy.p99,
           cy.min, (uint64_t)counter + total);

    free(codes);
    free(auth_us);
    free(cycle_us);
    free(key);
    return 0;
}
