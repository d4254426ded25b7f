#define OPENSSL_SUPPRESS_DEPRECATED 1 /* the low-level API is deliberate, see COpenSSL.h */
#include "COpenSSL.h"
#include <openssl/aes.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/bn.h>
#include <openssl/rsa.h>
#include <openssl/modes.h>
#include <openssl/sha.h>
#include <errno.h>
#include <string.h>
#include <sys/random.h>

typedef union {
    SHA_CTX sha1;
    SHA256_CTX sha256;
    SHA512_CTX sha512;
} digest_ctx;

typedef struct {
    size_t block_size, output_size;
    int (*init)(void *);
    int (*update)(void *, const void *, size_t);
    int (*final)(unsigned char *, void *);
} digest_kind;

static int sha1_init(void *c) { return SHA1_Init(c); }
static int sha1_update(void *c, const void *d, size_t n) { return SHA1_Update(c, d, n); }
static int sha1_final(unsigned char *o, void *c) { return SHA1_Final(o, c); }
static int sha256_init(void *c) { return SHA256_Init(c); }
static int sha256_update(void *c, const void *d, size_t n) { return SHA256_Update(c, d, n); }
static int sha256_final(unsigned char *o, void *c) { return SHA256_Final(o, c); }
static int sha512_init(void *c) { return SHA512_Init(c); }
static int sha512_update(void *c, const void *d, size_t n) { return SHA512_Update(c, d, n); }
static int sha512_final(unsigned char *o, void *c) { return SHA512_Final(o, c); }

static const digest_kind kinds[] = {
    [SECUROTP_SHA1] = {64, 20, sha1_init, sha1_update, sha1_final},
    [SECUROTP_SHA256] = {64, 32, sha256_init, sha256_update, sha256_final},
    [SECUROTP_SHA512] = {128, 64, sha512_init, sha512_update, sha512_final},
};

size_t securotp_hmac(int algorithm, const uint8_t *key, size_t key_len,
                     const uint8_t *message, size_t message_len, uint8_t *out) {
    if (algorithm < SECUROTP_SHA1 || algorithm > SECUROTP_SHA512) return 0;
    const digest_kind *k = &kinds[algorithm];
    digest_ctx ctx;
    uint8_t block[128] = {0}, pad[128], inner[64];

    /* Keys longer than a block are hashed first (RFC 2104 §2). */
    if (key_len > k->block_size) {
        k->init(&ctx);
        k->update(&ctx, key, key_len);
        k->final(block, &ctx);
    } else if (key_len > 0) {
        memcpy(block, key, key_len);
    }
    for (size_t i = 0; i < k->block_size; i++) pad[i] = block[i] ^ 0x36;
    k->init(&ctx);
    k->update(&ctx, pad, k->block_size);
    k->update(&ctx, message, message_len);
    k->final(inner, &ctx);
    for (size_t i = 0; i < k->block_size; i++) pad[i] = block[i] ^ 0x5c;
    k->init(&ctx);
    k->update(&ctx, pad, k->block_size);
    k->update(&ctx, inner, k->output_size);
    k->final(out, &ctx);

    OPENSSL_cleanse(&ctx, sizeof ctx);
    OPENSSL_cleanse(block, sizeof block);
    OPENSSL_cleanse(pad, sizeof pad);
    OPENSSL_cleanse(inner, sizeof inner);
    return k->output_size;
}

static GCM128_CONTEXT *gcm_start(AES_KEY *schedule, const uint8_t key[32], const uint8_t nonce[12],
                                 const uint8_t *aad, size_t aad_len) {
    if (AES_set_encrypt_key(key, 256, schedule) != 0) return NULL;
    GCM128_CONTEXT *gcm = CRYPTO_gcm128_new(schedule, (block128_f)AES_encrypt);
    if (gcm == NULL) return NULL;
    CRYPTO_gcm128_setiv(gcm, nonce, 12);
    if (aad_len > 0 && CRYPTO_gcm128_aad(gcm, aad, aad_len) != 0) {
        CRYPTO_gcm128_release(gcm);
        return NULL;
    }
    return gcm;
}

int securotp_aes256gcm_seal(const uint8_t key[32], const uint8_t nonce[12],
                            const uint8_t *aad, size_t aad_len,
                            const uint8_t *plaintext, size_t length,
                            uint8_t *ciphertext, uint8_t tag[16]) {
    AES_KEY schedule;
    int ok = 0;
    GCM128_CONTEXT *gcm = gcm_start(&schedule, key, nonce, aad, aad_len);
    if (gcm != NULL) {
        if (CRYPTO_gcm128_encrypt(gcm, plaintext, ciphertext, length) == 0) {
            CRYPTO_gcm128_tag(gcm, tag, 16);
            ok = 1;
        }
        CRYPTO_gcm128_release(gcm); /* release cleanses the context */
    }
    OPENSSL_cleanse(&schedule, sizeof schedule);
    return ok;
}

int securotp_aes256gcm_open(const uint8_t key[32], const uint8_t nonce[12],
                            const uint8_t *aad, size_t aad_len,
                            const uint8_t *ciphertext, size_t length,
                            const uint8_t tag[16], uint8_t *plaintext) {
    AES_KEY schedule;
    int ok = 0;
    GCM128_CONTEXT *gcm = gcm_start(&schedule, key, nonce, aad, aad_len);
    if (gcm != NULL) {
        /* finish() compares the tag in constant time and returns 0 when it matches. */
        if (CRYPTO_gcm128_decrypt(gcm, ciphertext, plaintext, length) == 0 &&
            CRYPTO_gcm128_finish(gcm, tag, 16) == 0)
            ok = 1;
        CRYPTO_gcm128_release(gcm);
    }
    OPENSSL_cleanse(&schedule, sizeof schedule);
    if (!ok && length > 0) OPENSSL_cleanse(plaintext, length);
    return ok;
}

int securotp_aes_encrypt_block(const uint8_t *key, int key_bits, const uint8_t in[16], uint8_t out[16]) {
    AES_KEY schedule;
    if (AES_set_encrypt_key(key, key_bits, &schedule) != 0) return 0;
    AES_encrypt(in, out, &schedule);
    OPENSSL_cleanse(&schedule, sizeof schedule);
    return 1;
}

int securotp_aes_decrypt_block(const uint8_t *key, int key_bits, const uint8_t in[16], uint8_t out[16]) {
    AES_KEY schedule;
    if (AES_set_decrypt_key(key, key_bits, &schedule) != 0) return 0;
    AES_decrypt(in, out, &schedule);
    OPENSSL_cleanse(&schedule, sizeof schedule);
    return 1;
}

void securotp_sha256(const uint8_t *data, size_t length, uint8_t out[32]) {
    SHA256_CTX ctx;
    SHA256_Init(&ctx);
    SHA256_Update(&ctx, data, length);
    SHA256_Final(out, &ctx);
    OPENSSL_cleanse(&ctx, sizeof ctx);
}

void securotp_cleanse(void *buffer, size_t length) { OPENSSL_cleanse(buffer, length); }

int securotp_equal(const void *a, const void *b, size_t length) {
    return CRYPTO_memcmp(a, b, length) == 0;
}

int securotp_random(uint8_t *buffer, size_t length) {
    size_t done = 0;
    while (done < length) {
        ssize_t n = getrandom(buffer + done, length - done, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return 0;
        }
        done += (size_t)n;
    }
    return 1;
}

/* SEQUENCE { SEQUENCE { id-ecPublicKey, prime256v1 }, BIT STRING (0 unused bits) 04 X Y }. */
static const uint8_t p256_spki_prefix[26] = {
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
    0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
};

int securotp_es256_verify(const uint8_t *spki_der, size_t spki_len,
                          const uint8_t *message, size_t message_len,
                          const uint8_t *signature_der, size_t signature_len) {
    if (spki_der == NULL || signature_der == NULL || (message == NULL && message_len != 0)) return 0;
    if (spki_len != SECUROTP_P256_SPKI_LENGTH || memcmp(spki_der, p256_spki_prefix, sizeof p256_spki_prefix) != 0)
        return 0;
    /* A DER ECDSA-Sig-Value for P-256 is at most 72 bytes. */
    if (signature_len < 8 || signature_len > 72) return 0;
    const uint8_t *point_bytes = spki_der + sizeof p256_spki_prefix;
    if (point_bytes[0] != 0x04) return 0;
    uint8_t digest[32];
    securotp_sha256(message, message_len, digest);
    int valid = 0;
    EC_KEY *key = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
    if (key == NULL) return 0;
    const EC_GROUP *group = EC_KEY_get0_group(key);
    EC_POINT *point = group ? EC_POINT_new(group) : NULL;
    /* oct2point refuses a point off the curve (P-256 has cofactor 1, so that is the whole
       public-key check; EC_KEY_check_key would add a scalar multiplication for nothing). */
    if (point != NULL && EC_POINT_oct2point(group, point, point_bytes, 65, NULL) == 1 &&
        EC_POINT_is_at_infinity(group, point) == 0 && EC_KEY_set_public_key(key, point) == 1)
        valid = ECDSA_verify(0, digest, sizeof digest, signature_der, (int)signature_len, key) == 1;
    EC_POINT_free(point);
    EC_KEY_free(key);
    return valid;
}

int securotp_ed25519_verify(const uint8_t *public_key, size_t public_key_len,
                            const uint8_t *message, size_t message_len,
                            const uint8_t *signature, size_t signature_len) {
    if (public_key == NULL || signature == NULL || (message == NULL && message_len != 0)) return 0;
    if (public_key_len != 32 || signature_len != 64) return 0;
    EVP_PKEY *key = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, public_key, public_key_len);
    if (key == NULL) return 0;
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    int valid = context != NULL && EVP_DigestVerifyInit(context, NULL, NULL, NULL, key) == 1 &&
                EVP_DigestVerify(context, signature, signature_len, message, message_len) == 1;
    EVP_MD_CTX_free(context);
    EVP_PKEY_free(key);
    return valid;
}

int securotp_rs256_verify(const uint8_t *public_key, size_t public_key_len,
                          const uint8_t *message, size_t message_len,
                          const uint8_t *signature, size_t signature_len) {
    if (public_key == NULL || signature == NULL || (message == NULL && message_len != 0)) return 0;
    if (public_key_len != SECUROTP_RS256_KEY_LENGTH || signature_len != 256) return 0;
    /* A full 2048-bit modulus (top bit set) and an odd exponent above 1. */
    const uint8_t *n_bytes = public_key, *e_bytes = public_key + 256;
    if ((n_bytes[0] & 0x80) == 0 || (e_bytes[2] & 1) == 0 || (e_bytes[0] == 0 && e_bytes[1] == 0 && e_bytes[2] == 1)) return 0;
    uint8_t digest[32];
    securotp_sha256(message, message_len, digest);
    RSA *key = RSA_new();
    BIGNUM *n = BN_bin2bn(n_bytes, 256, NULL), *e = BN_bin2bn(e_bytes, 3, NULL);
    int valid = 0;
    if (key != NULL && n != NULL && e != NULL && RSA_set0_key(key, n, e, NULL) == 1) {
        n = e = NULL; /* owned by the key now */
        valid = RSA_verify(NID_sha256, digest, sizeof digest, signature, (unsigned int)signature_len, key) == 1;
    }
    BN_free(n);
    BN_free(e);
    RSA_free(key);
    return valid;
}
