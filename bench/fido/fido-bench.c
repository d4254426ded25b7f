/*
 * fido-bench: in-process cost of one PAM authentication with a FIDO security key.
 *
 * Loops pam_start_confdir / pam_authenticate / pam_end against a private service directory
 * (/etc/pam.d is never read). The conversation answers nothing: the key is the software key
 * (tests/softfido, LD_PRELOAD with SOFTFIDO_STATE), whose touch is immediate, so what is timed
 * is the module's own work: reading its credentials, libfido2's detection and assertion, the
 * signature check and, for pam_securotp, the signature counter written to the store.
 * Every authentication must return PAM_SUCCESS; anything else aborts the run.
 *
 *   fido-bench --confdir DIR --service NAME --user USER [--iterations N] [--warmup W] [--label L]
 *
 * Output: one line, times in microseconds:
 *   fido-bench label=L iterations=N auth_median_us=.. auth_mean_us=.. auth_p99_us=.. cycle_median_us=..
 *
 * Build: cc -O2 -Wall -Wextra -o fido-bench fido-bench.c -lpam -lm
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <security/pam_appl.h>

static int converse(int n, const struct pam_message **msg, struct pam_response **resp, void *data) {
    (void)data;
    struct pam_response *out = calloc((size_t)n, sizeof *out);
    if (out == NULL) return PAM_BUF_ERR;
    for (int i = 0; i < n; i++) {
        if (msg[i]->msg_style == PAM_PROMPT_ECHO_OFF || msg[i]->msg_style == PAM_PROMPT_ECHO_ON) {
            free(out);
            return PAM_CONV_ERR; /* a FIDO login with a +presence credential asks nothing */
        }
    }
    *resp = out;
    return PAM_SUCCESS;
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void summary(const char *name, double *values, int n) {
    qsort(values, (size_t)n, sizeof *values, compare);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += values[i];
    int p99 = (int)((double)n * 0.99);
    if (p99 >= n) p99 = n - 1;
    printf(" %s_median_us=%.0f %s_mean_us=%.0f %s_p99_us=%.0f", name, values[n / 2], name, sum / n, name, values[p99]);
}

int main(int argc, char **argv) {
    const char *confdir = NULL, *service = NULL, *user = NULL, *label = "fido";
    int iterations = 200, warmup = 10;
    static const struct option options[] = {
        {"confdir", required_argument, 0, 'c'}, {"service", required_argument, 0, 's'}, {"user", required_argument, 0, 'u'},
        {"iterations", required_argument, 0, 'n'}, {"warmup", required_argument, 0, 'w'}, {"label", required_argument, 0, 'l'},
        {0, 0, 0, 0}};
    int option;
    while ((option = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (option) {
        case 'c': confdir = optarg; break;
        case 's': service = optarg; break;
        case 'u': user = optarg; break;
        case 'n': iterations = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        case 'l': label = optarg; break;
        default: return 2;
        }
    }
    if (confdir == NULL || service == NULL || user == NULL || iterations < 1 || warmup < 0) {
        fputs("usage: fido-bench --confdir DIR --service NAME --user USER [--iterations N] [--warmup W] [--label L]\n", stderr);
        return 2;
    }
    double *auth = calloc((size_t)iterations, sizeof *auth), *cycle = calloc((size_t)iterations, sizeof *cycle);
    if (auth == NULL || cycle == NULL) return 2;
    struct pam_conv conversation = {converse, NULL};
    for (int i = -warmup; i < iterations; i++) {
        pam_handle_t *handle = NULL;
        double start = now_us();
        int code = pam_start_confdir(service, user, &conversation, confdir, &handle);
        if (code != PAM_SUCCESS) { fprintf(stderr, "fido-bench: pam_start: %d\n", code); return 2; }
        double before = now_us();
        code = pam_authenticate(handle, 0);
        double after = now_us();
        if (code != PAM_SUCCESS) {
            fprintf(stderr, "fido-bench: %s: authentication %d: %s\n", label, i, pam_strerror(handle, code));
            return 2;
        }
        pam_end(handle, code);
        double end = now_us();
        if (i >= 0) {
            auth[i] = after - before;
            cycle[i] = end - start;
        }
    }
    printf("fido-bench label=%s iterations=%d", label, iterations);
    summary("auth", auth, iterations);
    summary("cycle", cycle, iterations);
    putchar('\n');
    return 0;
}
