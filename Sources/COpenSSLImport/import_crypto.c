#include "COpenSSLImport.h"
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/x509.h>
#include <string.h>

static const EVP_CIPHER *aes_cipher(size_t key_len, int wrap) {
    switch (key_len) {
    case 16: return wrap ? EVP_aes_128_wrap() : EVP_aes_128_cbc();
    case 24: return wrap ? EVP_aes_192_wrap() : EVP_aes_192_cbc();
    case 32: return wrap ? EVP_aes_256_wrap() : EVP_aes_256_cbc();
    default: return NULL;
    }
}

static long aes_cbc(int encrypt, const uint8_t *key, size_t key_len, const uint8_t iv[16],
                    const uint8_t *in, size_t length, int padding, uint8_t *out) {
    const EVP_CIPHER *cipher = aes_cipher(key_len, 0);
    if (cipher == NULL || length > (size_t)0x7fffffff) return -1;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return -1;
    int written = 0, final = 0;
    long result = -1;
    if (EVP_CipherInit_ex(ctx, cipher, NULL, key, iv, encrypt) == 1 &&
        EVP_CIPHER_CTX_set_padding(ctx, padding ? 1 : 0) == 1 &&
        EVP_CipherUpdate(ctx, out, &written, in, (int)length) == 1 &&
        EVP_CipherFinal_ex(ctx, out + written, &final) == 1)
        result = (long)written + final;
    EVP_CIPHER_CTX_free(ctx); /* frees and cleanses the key schedule */
    return result;
}

long securotp_aes_cbc_decrypt(const uint8_t *key, size_t key_len, const uint8_t iv[16],
                              const uint8_t *in, size_t length, int pkcs7_padding, uint8_t *out) {
    long n = aes_cbc(0, key, key_len, iv, in, length, pkcs7_padding, out);
    if (n < 0) OPENSSL_cleanse(out, length);
    return n;
}

long securotp_aes_cbc_encrypt(const uint8_t *key, size_t key_len, const uint8_t iv[16],
                              const uint8_t *in, size_t length, int pkcs7_padding, uint8_t *out) {
    return aes_cbc(1, key, key_len, iv, in, length, pkcs7_padding, out);
}

int securotp_pbkdf2(int algorithm, const uint8_t *password, size_t password_len,
                    const uint8_t *salt, size_t salt_len, unsigned iterations,
                    uint8_t *out, size_t out_len) {
    const EVP_MD *md = algorithm == SECUROTP_IMPORT_SHA1 ? EVP_sha1()
                     : algorithm == SECUROTP_IMPORT_SHA256 ? EVP_sha256()
                     : algorithm == SECUROTP_IMPORT_SHA512 ? EVP_sha512() : NULL;
    if (md == NULL || iterations == 0 || iterations > 10000000u) return 0;
    return PKCS5_PBKDF2_HMAC((const char *)password, (int)password_len, salt, (int)salt_len,
                             (int)iterations, md, (int)out_len, out) == 1;
}

long securotp_aes_key_unwrap(const uint8_t *kek, size_t kek_len, const uint8_t *in, size_t in_len, uint8_t *out) {
    const EVP_CIPHER *cipher = aes_cipher(kek_len, 1);
    if (cipher == NULL || in_len < 24 || in_len % 8 != 0 || in_len > 4096) return -1;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return -1;
    int written = 0, final = 0;
    long result = -1;
    if (EVP_DecryptInit_ex(ctx, cipher, NULL, kek, NULL) == 1 &&
        EVP_DecryptUpdate(ctx, out, &written, in, (int)in_len) == 1 &&
        EVP_DecryptFinal_ex(ctx, out + written, &final) == 1)
        result = (long)written + final;
    EVP_CIPHER_CTX_free(ctx);
    if (result < 0) OPENSSL_cleanse(out, in_len);
    return result;
}

/* ES256 (docs/push.md). Keys are checked to be P-256: a device's SPKI comes from outside. */
static int is_p256(EVP_PKEY *key) {
    if (key == NULL || EVP_PKEY_base_id(key) != EVP_PKEY_EC) return 0;
    char group[64];
    size_t length = 0;
    if (EVP_PKEY_get_utf8_string_param(key, "group", group, sizeof group, &length) != 1) return 0;
    return strcmp(group, "prime256v1") == 0;
}

static EVP_PKEY *read_pem(const char *pem, size_t pem_len, int is_private) {
    if (pem_len > 65536) return NULL;
    BIO *bio = BIO_new_mem_buf(pem, (int)pem_len);
    if (bio == NULL) return NULL;
    EVP_PKEY *key = is_private ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (key != NULL && !is_p256(key)) {
        EVP_PKEY_free(key);
        return NULL;
    }
    return key;
}

long securotp_es256_sign_pem(const char *pem, size_t pem_len, const uint8_t *message, size_t message_len,
                             uint8_t *out, size_t out_capacity) {
    EVP_PKEY *key = read_pem(pem, pem_len, 1);
    if (key == NULL) return -1;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    long result = -1;
    size_t length = out_capacity;
    if (ctx != NULL && EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, key) == 1 &&
        EVP_DigestSign(ctx, out, &length, message, message_len) == 1)
        result = (long)length;
    EVP_MD_CTX_free(ctx);
    EVP_PKEY_free(key);
    return result;
}

long securotp_p256_spki_from_pem(const char *pem, size_t pem_len, int is_private, uint8_t *out, size_t out_capacity) {
    EVP_PKEY *key = read_pem(pem, pem_len, is_private);
    if (key == NULL) return -1;
    int length = i2d_PUBKEY(key, NULL);
    long result = -1;
    if (length > 0 && (size_t)length <= out_capacity) {
        unsigned char *cursor = out;
        result = i2d_PUBKEY(key, &cursor);
    }
    EVP_PKEY_free(key);
    return result;
}

int securotp_p256_generate(char *pem_out, size_t pem_capacity, uint8_t *spki_out, size_t spki_capacity, long *spki_len) {
    EVP_PKEY *key = EVP_EC_gen("P-256");
    if (key == NULL) return 0;
    int ok = 0;
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio != NULL && PEM_write_bio_PKCS8PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) == 1) {
        char *data = NULL;
        long length = BIO_get_mem_data(bio, &data);
        int spki = i2d_PUBKEY(key, NULL);
        if (length > 0 && (size_t)length < pem_capacity && spki > 0 && (size_t)spki <= spki_capacity) {
            memcpy(pem_out, data, (size_t)length);
            pem_out[length] = 0;
            unsigned char *cursor = spki_out;
            *spki_len = i2d_PUBKEY(key, &cursor);
            ok = 1;
        }
    }
    BIO_free(bio);
    EVP_PKEY_free(key);
    return ok;
}
