#ifndef SECUROTP_CPAMCLIENT_H
#define SECUROTP_CPAMCLIENT_H
#include <security/pam_appl.h>
/* The application side of PAM, for `securotp test`: one login through a real service stack
   with libpam_misc's terminal conversation (what login and su use). Never linked by the module. */

/* Runs pam_authenticate and then pam_acct_mgmt for USER through SERVICE (/etc/pam.d/SERVICE).
   Returns the first failing PAM code, or PAM_SUCCESS; *stage is 0 for pam_start, 1 for
   authentication, 2 for the account check. message receives pam_strerror of the result. */
int securotp_pam_test(const char *service, const char *user, int *stage, char *message, unsigned long message_size);
#endif
