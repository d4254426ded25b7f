#ifndef SECUROTP_CPAM_H
#define SECUROTP_CPAM_H
/* The real Linux-PAM headers (PAM_AUTH_ERR is 7 and PAM_SILENT 0x8000 here, unlike macOS). */
#include <security/pam_appl.h>
#include <security/pam_modules.h>
#include <security/pam_ext.h>
#include <syslog.h>

/* Swift cannot call variadic C functions: these pass the message through "%s" so a user
   name or path can never be read as a format string. */
void securotp_pam_syslog(const pam_handle_t *pamh, int priority, const char *message);

/* One conversation turn. Returns a PAM code; on PAM_SUCCESS *response is malloc'd (or NULL)
   and the caller wipes and frees it with securotp_pam_free_response. */
int securotp_pam_prompt(pam_handle_t *pamh, int style, const char *prompt, char **response);
void securotp_pam_free_response(char *response);

/* pam_get_item / pam_set_item for the string items the module reads and writes. */
int securotp_pam_get_string_item(const pam_handle_t *pamh, int item, const char **value);
int securotp_pam_set_string_item(pam_handle_t *pamh, int item, const char *value);
#endif
