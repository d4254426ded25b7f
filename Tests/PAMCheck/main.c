/* pam-check: one authentication through the real libpam, for integration tests and the demo.
 *
 *   pam-check [--confdir DIR] SERVICE USER [RESPONSE...]
 *
 * Loads SERVICE from DIR (pam_start_confdir, Linux-PAM >= 1.5.2) so tests need no /etc/pam.d
 * changes. Each echo-off or echo-on prompt is answered with the next RESPONSE (a prompt beyond
 * the given responses fails the conversation). A RESPONSE of the form !COMMAND is computed:
 * COMMAND runs through /bin/sh with PAM_CHECK_PROMPT set to the prompt, and its first output
 * line is the answer (for challenge-response prompts). Environment:
 *   PAM_CHECK_SILENT=1    pass PAM_SILENT
 *   PAM_CHECK_TRIES=N     call pam_authenticate up to N times on the one handle until it
 *                         succeeds, printing "retry: Sorry, try again." before each further
 *                         call — what sudo does (passwd_tries, default 3)
 *   PAM_CHECK_PROCESS=1   also print "threads-before: N" (before pam_start), "threads-after: N"
 *                         and "libcurl-loaded: yes|no" (after pam_end), from /proc/self
 *   PAM_CHECK_RHOST=HOST, PAM_CHECK_TTY=TTY
 *                         set PAM_RHOST and PAM_TTY before pam_authenticate, as sshd and
 *                         sudo do (the login context a push request carries)
 * Prints one line per conversation message ("prompt: ...", "info: ...", "error: ..."), then
 * "result: NAME". Exit status is the PAM code. (Linux-PAM lets only modules read or set
 * PAM_AUTHTOK; tests put pam_exec.so expose_authtok in the stack to provide or observe it.)
 */
#include <security/pam_appl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct answers {
    char **responses;
    int count, next;
};

/* A literal response, or the first line printed by "!command" run with the prompt in the environment. */
static char *answer(const char *response, const char *prompt) {
    if (response[0] != '!') return strdup(response);
    setenv("PAM_CHECK_PROMPT", prompt, 1);
    FILE *pipe = popen(response + 1, "r");
    if (pipe == NULL) return NULL;
    char line[512] = {0};
    char *got = fgets(line, sizeof line, pipe);
    int status = pclose(pipe);
    if (got == NULL || status != 0) return NULL;
    line[strcspn(line, "\r\n")] = 0;
    return strdup(line);
}

static int converse(int n, const struct pam_message **msg, struct pam_response **resp, void *data) {
    struct answers *answers = data;
    struct pam_response *out = calloc((size_t)n, sizeof *out);
    if (out == NULL) return PAM_BUF_ERR;
    for (int i = 0; i < n; i++) {
        switch (msg[i]->msg_style) {
        case PAM_PROMPT_ECHO_OFF:
        case PAM_PROMPT_ECHO_ON:
            printf("prompt%s: %s\n", msg[i]->msg_style == PAM_PROMPT_ECHO_OFF ? "" : "-echo", msg[i]->msg);
            if (answers->next >= answers->count) {
                free(out);
                return PAM_CONV_ERR;
            }
            out[i].resp = answer(answers->responses[answers->next++], msg[i]->msg);
            if (out[i].resp == NULL) {
                free(out);
                return PAM_CONV_ERR;
            }
            break;
        case PAM_TEXT_INFO: printf("info: %s\n", msg[i]->msg); break;
        case PAM_ERROR_MSG: printf("error: %s\n", msg[i]->msg); break;
        default: free(out); return PAM_CONV_ERR;
        }
    }
    fflush(stdout);
    *resp = out;
    return PAM_SUCCESS;
}

/* The Threads: line of /proc/self/status, or -1. */
static int thread_count(void) {
    FILE *status = fopen("/proc/self/status", "r");
    if (status == NULL) return -1;
    char line[256];
    int threads = -1;
    while (fgets(line, sizeof line, status) != NULL) {
        if (sscanf(line, "Threads: %d", &threads) == 1) break;
    }
    fclose(status);
    return threads;
}

/* Whether libcurl is mapped into this process (the module loads it only in remote mode). */
static bool libcurl_loaded(void) {
    FILE *maps = fopen("/proc/self/maps", "r");
    if (maps == NULL) return false;
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, maps) != NULL) found = strstr(line, "/libcurl") != NULL;
    fclose(maps);
    return found;
}

int main(int argc, char **argv) {
    const char *confdir = NULL;
    int first = 1;
    if (argc > 2 && strcmp(argv[1], "--confdir") == 0) {
        confdir = argv[2];
        first = 3;
    }
    if (argc - first < 2) {
        fprintf(stderr, "usage: pam-check [--confdir DIR] SERVICE USER [RESPONSE...]\n");
        return 64;
    }
    const char *process = getenv("PAM_CHECK_PROCESS");
    bool report_process = process != NULL && strcmp(process, "1") == 0;
    if (report_process) printf("threads-before: %d\n", thread_count());
    struct answers answers = {argv + first + 2, argc - first - 2, 0};
    struct pam_conv conv = {converse, &answers};
    pam_handle_t *pamh = NULL;
    int rc = pam_start_confdir(argv[first], argv[first + 1], &conv, confdir, &pamh);
    if (rc != PAM_SUCCESS) {
        printf("result: pam_start failed: %s\n", pam_strerror(NULL, rc));
        return rc;
    }
    const char *rhost = getenv("PAM_CHECK_RHOST");
    if (rhost != NULL) pam_set_item(pamh, PAM_RHOST, rhost);
    const char *tty = getenv("PAM_CHECK_TTY");
    if (tty != NULL) pam_set_item(pamh, PAM_TTY, tty);
    const char *silent = getenv("PAM_CHECK_SILENT");
    const char *tries_text = getenv("PAM_CHECK_TRIES");
    int tries = tries_text != NULL ? atoi(tries_text) : 1;
    if (tries < 1 || tries > 100) tries = 1;
    for (int try = 0; try < tries; try++) {
        if (try > 0) {
            printf("retry: Sorry, try again.\n");
            fflush(stdout);
        }
        rc = pam_authenticate(pamh, silent != NULL && strcmp(silent, "1") == 0 ? PAM_SILENT : 0);
        /* sudo tries again only after these (plugins/sudoers/auth/pam.c, sudo_pam_verify). */
        if (rc != PAM_AUTH_ERR && rc != PAM_AUTHINFO_UNAVAIL && rc != PAM_MAXTRIES && rc != PAM_PERM_DENIED) break;
    }
    printf("result: %s\n", pam_strerror(pamh, rc));
    fflush(stdout);
    pam_end(pamh, rc);
    if (report_process) {
        printf("threads-after: %d\nlibcurl-loaded: %s\n", thread_count(), libcurl_loaded() ? "yes" : "no");
        fflush(stdout);
    }
    return rc;
}
