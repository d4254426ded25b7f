#ifndef SECUROTP_COPENSSL_H
#define SECUROTP_COPENSSL_H
#include <stddef.h>
#include <stdint.h>

/* The few primitives securotp needs, on OpenSSL's libcrypto.
   They use libcrypto's low-level digest, AES and GCM routines, which need no provider
   initialisation: OpenSSL 3's EVP/provider start-up costs about 1-2 ms per process, which
   would be paid by every sudo and every ssh login (measured, research/swift-pam-build.md). */

enum { SECUROTP_SHA1 = 1, SECUROTP_SHA256 = 2, SECUROTP_SHA512 = 3 };

/* HMAC (RFC 2104). out must hold 64 bytes. Returns the MAC length, or 0 for a bad algorithm. */
size_t securotp_hmac(int algorithm, const uint8_t *key, size_t key_len,
                     const uint8_t *message, size_t message_len, uint8_t *out);

/* AES-256-GCM with a 96-bit nonce and a 128-bit tag. Return 1 on success, 0 on failure
   (for open: authentication failed; the plaintext buffer is wiped). */
int securotp_aes256gcm_seal(const uint8_t key[32], const uint8_t nonce[12],
                            const uint8_t *aad, size_t aad_len,
                            const uint8_t *plaintext, size_t length,
                            uint8_t *ciphertext, uint8_t tag[16]);
int securotp_aes256gcm_open(const uint8_t key[32], const uint8_t nonce[12],
                            const uint8_t *aad, size_t aad_len,
                            const uint8_t *ciphertext, size_t length,
                            const uint8_t tag[16], uint8_t *plaintext);

/* One AES block (ECB of a single block) with a 128- or 256-bit key: SecurID's hashes and
   tokencode chain. Return 1 on success. */
int securotp_aes_encrypt_block(const uint8_t *key, int key_bits, const uint8_t in[16], uint8_t out[16]);
int securotp_aes_decrypt_block(const uint8_t *key, int key_bits, const uint8_t in[16], uint8_t out[16]);

/* SHA-256 of a buffer. */
void securotp_sha256(const uint8_t *data, size_t length, uint8_t out[32]);

/* Wipes memory in a way the compiler cannot drop (OPENSSL_cleanse). */
void securotp_cleanse(void *buffer, size_t length);
/* Constant-time equality of two equal-length buffers: 1 when equal (CRYPTO_memcmp). */
int securotp_equal(const void *a, const void *b, size_t length);
/* Kernel randomness (getrandom); returns 1 on success. */
int securotp_random(uint8_t *buffer, size_t length);
#endif
