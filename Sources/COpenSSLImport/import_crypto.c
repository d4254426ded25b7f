#include "COpenSSLImport.h"
#include <openssl/crypto.h>
#include <openssl/evp.h>

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
