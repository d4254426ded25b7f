#ifndef SECUROTP_COPENSSL_IMPORT_H
#define SECUROTP_COPENSSL_IMPORT_H
#include <stddef.h>
#include <stdint.h>
/* Crypto for token import formats (PSKC, SDTID, CTF v3/v4), on OpenSSL's EVP interface.
   Linked by the CLI and the authenticator only; the PAM module uses COpenSSL. */
#endif
