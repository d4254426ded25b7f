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

/* ES256 (ECDSA P-256 with SHA-256) verification: `signature_der` over SHA-256(message) by the
   key in `spki_der`, which must be exactly the 91-byte DER SubjectPublicKeyInfo of a P-256
   key with an uncompressed point (what every WebAuthn/FIDO stack and OpenSSL export). The key
   is taken apart by a fixed prefix, not by d2i_PUBKEY, and checked with EC_KEY/ECDSA_verify:
   d2i_PUBKEY builds an EVP_PKEY through OpenSSL 3's decoders, which starts the provider
   machinery (see above) in every login that checks a push approval. Measured (2-core EPYC VM,
   OpenSSL 3, first call in a fresh process / second call): this path 0.55 / 0.074 ms,
   d2i_PUBKEY + EVP_DigestVerify 1.3 / 0.17 ms. The signature must be
   canonical DER (ECDSA_verify re-encodes and compares). Returns 1 valid, 0 anything else. */
enum { SECUROTP_P256_SPKI_LENGTH = 91 };
int securotp_es256_verify(const uint8_t *spki_der, size_t spki_len,
                          const uint8_t *message, size_t message_len,
                          const uint8_t *signature_der, size_t signature_len);

/* EdDSA (Ed25519, COSE -8) for FIDO credentials: the 32-byte public key, the 64-byte
   signature over the message (EVP_DigestVerify, no pre-hash). Returns 1 valid, 0 anything else. */
int securotp_ed25519_verify(const uint8_t *public_key, size_t public_key_len,
                            const uint8_t *message, size_t message_len,
                            const uint8_t *signature, size_t signature_len);

/* RS256 (RSASSA-PKCS1-v1_5 with SHA-256, COSE -257) for FIDO credentials: the public key as
   libfido2 and pam_u2f keep it, n (256 bytes, a 2048-bit modulus) || e (3 bytes), and the
   256-byte signature over the message. Low-level RSA_verify, for the reason above. Returns 1
   valid, 0 anything else (a shorter modulus or an even exponent included). */
enum { SECUROTP_RS256_KEY_LENGTH = 259 };
int securotp_rs256_verify(const uint8_t *public_key, size_t public_key_len,
                          const uint8_t *message, size_t message_len,
                          const uint8_t *signature, size_t signature_len);

/* Wipes memory in a way the compiler cannot drop (OPENSSL_cleanse). */
void securotp_cleanse(void *buffer, size_t length);
/* Constant-time equality of two equal-length buffers: 1 when equal (CRYPTO_memcmp). */
int securotp_equal(const void *a, const void *b, size_t length);
/* Kernel randomness (getrandom); returns 1 on success. */
int securotp_random(uint8_t *buffer, size_t length);
#endif
