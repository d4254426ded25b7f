#include "CPAM.h"
#include <stdlib.h>
#include <string.h>

void securotp_pam_syslog(const pam_handle_t *pamh, int priority, const char *message) {
    pam_syslog(pamh, priority, "%s", message);
}

int securotp_pam_prompt(pam_handle_t *pamh, int style, const char *prompt, char **response) {
    *response = NULL;
    return pam_prompt(pamh, style, response, "%s", prompt);
}

void securotp_pam_free_response(char *response) {
    if (response == NULL) return;
    /* explicit_bzero is not optimised away, unlike memset before free. */
    explicit_bzero(response, strlen(response));
    free(response);
}

int securotp_pam_get_string_item(const pam_handle_t *pamh, int item, const char **value) {
    const void *raw = NULL;
    int rc = pam_get_item(pamh, item, &raw);
    *value = (const char *)raw;
    return rc;
}

int securotp_pam_set_string_item(pam_handle_t *pamh, int item, const char *value) {
    return pam_set_item(pamh, item, value);
}
