#include "CPAMClient.h"
#include <security/pam_appl.h>
#include <security/pam_misc.h>
#include <stdio.h>

int securotp_pam_test(const char *service, const char *user, int *stage, char *message, unsigned long message_size) {
    struct pam_conv conversation = { misc_conv, NULL };
    pam_handle_t *handle = NULL;
    *stage = 0;
    int result = pam_start(service, user, &conversation, &handle);
    if (result != PAM_SUCCESS) {
        snprintf(message, message_size, "%s", pam_strerror(handle, result));
        return result;
    }
    *stage = 1;
    result = pam_authenticate(handle, 0);
    if (result == PAM_SUCCESS) {
        *stage = 2;
        result = pam_acct_mgmt(handle, 0);
    }
    snprintf(message, message_size, "%s", pam_strerror(handle, result));
    pam_end(handle, result);
    return result;
}
