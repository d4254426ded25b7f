#ifndef SECUROTP_COPENSSL_IMPORT_H
#define SECUROTP_COPENSSL_IMPORT_H
#include <stddef.h>
#include <stdint.h>
/* Crypto for token import formats (PSKC, SDTID, CTF v3/v4), on OpenSSL's EVP interface.
   Linked by the CLI and the authenticator only; the PAM module uses COpenSSL. */

enum { SECUROTP_IMPORT_SHA1 = 1, SECUROTP_IMPORT_SHA256 = 2, SECUROTP_IMPORT_SHA512 = 3 };

/* AES-CBC decryption with a 128/192/256-bit key (key_len 16/24/32). With `pkcs7_padding` the
   padding is checked and removed. Returns the plaintext length, or -1 (bad key, bad padding).
   `out` must hold `length` bytes. */
long securotp_aes_cbc_decrypt(const uint8_t *key, size_t key_len, const uint8_t iv[16],
                              const uint8_t *in, size_t length, int pkcs7_padding, uint8_t *out);

/* AES-CBC encryption (for tests and exports); `out` holds length + 16. Returns length or -1. */
long securotp_aes_cbc_encrypt(const uint8_t *key, size_t key_len, const uint8_t iv[16],
                              const uint8_t *in, size_t length, int pkcs7_padding, uint8_t *out);

/* PBKDF2 (RFC 8018) with HMAC-SHA1/256/512. Returns 1 on success. */
int securotp_pbkdf2(int algorithm, const uint8_t *password, size_t password_len,
                    const uint8_t *salt, size_t salt_len, unsigned iterations,
                    uint8_t *out, size_t out_len);

/* AES key unwrap (RFC 3394, default IV) with a 128/192/256-bit KEK. Returns the unwrapped
   length (in_len - 8) or -1 when the integrity check fails. */
long securotp_aes_key_unwrap(const uint8_t *kek, size_t kek_len, const uint8_t *in, size_t in_len, uint8_t *out);

/* ECDSA P-256 with SHA-256 (ES256) signing and keys, for push approval (docs/push.md):
   `securotp device certify` and test devices. Verifying is COpenSSL's securotp_es256_verify. */

/* Signs `message` with a P-256 private key in PEM (PKCS#8 or SEC1). Writes the DER signature
   to `out` (at least 80 bytes) and returns its length, or -1 (not a P-256 key, no memory). */
long securotp_es256_sign_pem(const char *pem, size_t pem_len, const uint8_t *message, size_t message_len,
                             uint8_t *out, size_t out_capacity);

/* The SPKI DER of the public half of a PEM P-256 private or public key; returns the length
   written to `out`, or -1. */
long securotp_p256_spki_from_pem(const char *pem, size_t pem_len, int is_private, uint8_t *out, size_t out_capacity);

/* A fresh P-256 key pair (tests): the private key as PEM (PKCS#8) into `pem_out`, the SPKI
   DER into `spki_out`. Returns 1 on success. */
int securotp_p256_generate(char *pem_out, size_t pem_capacity, uint8_t *spki_out, size_t spki_capacity, long *spki_len);
#endif
