/* softfido: a software CTAP2 authenticator for tests only. Never linked into a product binary.
 *
 * It plugs into libfido2 (>= 1.10) through its public hooks: fido_dev_set_io_functions and
 * fido_dev_set_transport_functions answer CTAPHID commands in-process, fido_dev_info_set adds the
 * device to a device list. Loaded with LD_PRELOAD it interposes fido_dev_info_manifest (which then
 * lists "softfido:0") and fido_dev_open (which installs the hooks for "softfido:" paths), so
 * unmodified libfido2 programs (fido2-token, pamu2fcfg, pam_u2f.so, a module that dlopens
 * libfido2 and resolves its symbols process-wide) see a key. docs/fido.md describes its use.
 *
 * Environment (read at every command, so one process can change them):
 *   SOFTFIDO_STATE=FILE         the key's state: master key, signature counter, PIN retries,
 *                               attestation key and certificate, resident credentials. Created on
 *                               first use; kept between processes under flock. Without it the
 *                               interposer does nothing. Copying an old FILE back makes a "cloned" key.
 *   SOFTFIDO_TOUCH=deny         the user refuses to touch: any request for presence is
 *                               answered CTAP2_ERR_OPERATION_DENIED.
 *   SOFTFIDO_PIN=PIN            the key has this PIN (ClientPIN protocol 1): makeCredential needs
 *                               it, a wrong one is CTAP2_ERR_PIN_INVALID and costs a retry.
 *   SOFTFIDO_UV=1               built-in user verification ("uv" option, a fingerprint reader).
 *   SOFTFIDO_ATTESTATION=self   packed self attestation instead of basic attestation with x5c.
 *   SOFTFIDO_ALWAYS_UV=1        alwaysUv (CTAP 2.1): every assertion needs the PIN or UV, and one
 *                               without is refused (PIN_REQUIRED) before credentials are looked for.
 *   SOFTFIDO_CTAP=2.1           the key also speaks CTAP 2.1 (GetInfo lists FIDO_2_1): an assertion
 *                               for a credential it does not hold fails before the touch. Without
 *                               it, a CTAP 2.0 key, which asks for the touch first.
 *   SOFTFIDO_DEBUG=1            one line per command on stderr.
 *   SOFTFIDO_LOG=FILE           one line appended per getAssertion request, as it arrives (before
 *                               any check): "getAssertion rp=RP_ID cdh=HEX up=0|1", so a test can
 *                               tell what the key was asked to sign and for which RP.
 *
 * getAssertion without an allow list answers with every resident credential for the RP,
 * newest first (numberOfCredentials, then getNextAssertion), as a real key does.
 *
 * Credentials: ES256, EdDSA and RS256. A credential ID is 'S' | algorithm | nonce[16] | tag[16];
 * the private key is HMAC-SHA-256(master, "key" | algorithm | nonce | rpIdHash) and the tag the
 * first 16 bytes of HMAC-SHA-256(master, "tag" | ...), so an ID works only for its own RP on its
 * own key (a second state file is a foreign key). An RSA-2048 key cannot be derived from 32 bytes,
 * so an RS256 credential's key is generated and kept in the state file under its nonce; besides
 * those, only resident credentials are stored.
 * The one signature counter rises with every signature and is written before the answer.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <fido.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/ecdh.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "softfido.h"

/* CTAPHID commands (libfido2 passes them to the transport hooks as is). */
enum { HID_PING = 0x01, HID_MSG = 0x03, HID_INIT = 0x06, HID_WINK = 0x08, HID_CBOR = 0x10, HID_CANCEL = 0x11 };
enum { CAP_WINK = 0x01, CAP_CBOR = 0x04, CAP_NMSG = 0x08 };

/* CTAP2 commands and status codes. */
enum { CMD_MAKE_CREDENTIAL = 0x01, CMD_GET_ASSERTION = 0x02, CMD_GET_INFO = 0x04, CMD_CLIENT_PIN = 0x06, CMD_GET_NEXT_ASSERTION = 0x08 };
enum {
    ST_OK = 0x00,
    ST_INVALID_COMMAND = 0x01,
    ST_INVALID_PARAMETER = 0x02,
    ST_INVALID_CBOR = 0x12,
    ST_MISSING_PARAMETER = 0x14,
    ST_CREDENTIAL_EXCLUDED = 0x19,
    ST_UNSUPPORTED_ALGORITHM = 0x26,
    ST_OPERATION_DENIED = 0x27,
    ST_KEY_STORE_FULL = 0x28,
    ST_UNSUPPORTED_OPTION = 0x2B,
    ST_NO_CREDENTIALS = 0x2E,
    ST_NOT_ALLOWED = 0x30,
    ST_PIN_INVALID = 0x31,
    ST_PIN_BLOCKED = 0x32,
    ST_PIN_AUTH_INVALID = 0x33,
    ST_PIN_NOT_SET = 0x35,
    ST_PIN_REQUIRED = 0x36,
    ST_INVALID_SUBCOMMAND = 0x3E,
    ST_OTHER = 0x7F,
};

/* Flags of authenticatorData. */
enum { FLAG_UP = 0x01, FLAG_UV = 0x04, FLAG_AT = 0x40 };

/* Our algorithm byte in credential IDs, and the COSE numbers. */
enum { ALG_ES256 = 1, ALG_EDDSA = 2, ALG_RS256 = 3 };
/* COSE_ES256, COSE_EDDSA and COSE_RS256 come from fido/param.h. */
enum { COSE_ECDH_ES_HKDF_256 = -25 };

#define MAX_RESIDENT 16
#define MAX_RSA 32
#define RSA_DER_MAX 1400
#define PIN_RETRIES 8
#define CRED_ID_LEN 34
#define MAX_REPLY 2048

static const unsigned char AAGUID[16] = {'S', 'o', 'f', 't', 'F', 'I', 'D', 'O', '-', 't', 'e', 's', 't', '-', 'v', '1'};

static bool debugging(void) {
    const char *value = getenv("SOFTFIDO_DEBUG");
    return value != NULL && value[0] == '1';
}

#define DEBUG(...)                                                                                                     \
    do {                                                                                                               \
        if (debugging()) {                                                                                             \
            fprintf(stderr, "softfido: " __VA_ARGS__);                                                                 \
            fputc('\n', stderr);                                                                                       \
        }                                                                                                              \
    } while (0)

/* ---------------------------------------------------------------------------------------------
 * Canonical CBOR out (CTAP2 needs the shortest heads and sorted map keys; callers write keys in
 * canonical order) and a bounded reader for requests.
 */

struct out {
    unsigned char bytes[MAX_REPLY];
    size_t length;
    bool overflow;
};

static void put(struct out *o, const void *data, size_t count) {
    if (o->overflow || count > sizeof o->bytes - o->length) {
        o->overflow = true;
        return;
    }
    memcpy(o->bytes + o->length, data, count);
    o->length += count;
}

static void put_byte(struct out *o, unsigned char byte) { put(o, &byte, 1); }

static void head(struct out *o, int major, uint64_t value) {
    unsigned char h[9];
    size_t n;
    if (value < 24) {
        h[0] = (unsigned char)(major << 5 | (int)value);
        n = 1;
    } else if (value <= 0xff) {
        h[0] = (unsigned char)(major << 5 | 24);
        h[1] = (unsigned char)value;
        n = 2;
    } else if (value <= 0xffff) {
        h[0] = (unsigned char)(major << 5 | 25);
        h[1] = (unsigned char)(value >> 8);
        h[2] = (unsigned char)value;
        n = 3;
    } else if (value <= 0xffffffffu) {
        h[0] = (unsigned char)(major << 5 | 26);
        for (int i = 0; i < 4; i++) h[1 + i] = (unsigned char)(value >> (24 - 8 * i));
        n = 5;
    } else {
        h[0] = (unsigned char)(major << 5 | 27);
        for (int i = 0; i < 8; i++) h[1 + i] = (unsigned char)(value >> (56 - 8 * i));
        n = 9;
    }
    put(o, h, n);
}

static void w_int(struct out *o, int64_t value) {
    if (value >= 0) head(o, 0, (uint64_t)value);
    else head(o, 1, (uint64_t)(-1 - value));
}
static void w_bytes(struct out *o, const void *data, size_t count) {
    head(o, 2, count);
    put(o, data, count);
}
static void w_text(struct out *o, const char *text) {
    head(o, 3, strlen(text));
    put(o, text, strlen(text));
}
static void w_array(struct out *o, size_t count) { head(o, 4, count); }
static void w_map(struct out *o, size_t count) { head(o, 5, count); }
static void w_bool(struct out *o, bool value) { put_byte(o, value ? 0xf5 : 0xf4); }

struct in {
    const unsigned char *at, *end;
};

/* One item head: major type and argument (length, count or value; simple value for major 7). */
static bool r_head(struct in *in, int *major, uint64_t *value) {
    if (in->at >= in->end) return false;
    unsigned char first = *in->at++;
    *major = first >> 5;
    int info = first & 0x1f;
    size_t extra;
    if (info < 24) {
        *value = (uint64_t)info;
        return true;
    }
    if (info == 24) extra = 1;
    else if (info == 25) extra = 2;
    else if (info == 26) extra = 4;
    else if (info == 27) extra = 8;
    else return false; /* indefinite lengths and reserved values: not in CTAP2 */
    if ((size_t)(in->end - in->at) < extra) return false;
    *value = 0;
    for (size_t i = 0; i < extra; i++) *value = *value << 8 | *in->at++;
    return true;
}

static bool r_skip_depth(struct in *in, int depth) {
    int major;
    uint64_t value;
    if (depth > 8 || !r_head(in, &major, &value)) return false;
    switch (major) {
    case 2:
    case 3:
        if (value > (uint64_t)(in->end - in->at)) return false;
        in->at += value;
        return true;
    case 4:
    case 5: {
        uint64_t items = major == 5 ? value * 2 : value;
        if (value > 4096) return false;
        for (uint64_t i = 0; i < items; i++)
            if (!r_skip_depth(in, depth + 1)) return false;
        return true;
    }
    case 6: return r_skip_depth(in, depth + 1);
    default: return true;
    }
}

static bool r_skip(struct in *in) { return r_skip_depth(in, 0); }

static bool r_string(struct in *in, int want, const unsigned char **data, size_t *count) {
    int major;
    uint64_t value;
    if (!r_head(in, &major, &value) || major != want || value > (uint64_t)(in->end - in->at)) return false;
    *data = in->at;
    *count = (size_t)value;
    in->at += value;
    return true;
}

static bool r_bytes(struct in *in, const unsigned char **data, size_t *count) { return r_string(in, 2, data, count); }

/* Text as a NUL-terminated copy of at most `size - 1` bytes (longer is an error). */
static bool r_text(struct in *in, char *text, size_t size) {
    const unsigned char *data;
    size_t count;
    if (!r_string(in, 3, &data, &count) || count >= size || memchr(data, 0, count) != NULL) return false;
    memcpy(text, data, count);
    text[count] = 0;
    return true;
}

static bool r_int(struct in *in, int64_t *number) {
    int major;
    uint64_t value;
    if (!r_head(in, &major, &value) || value > INT64_MAX) return false;
    if (major == 0) *number = (int64_t)value;
    else if (major == 1) *number = -1 - (int64_t)value;
    else return false;
    return true;
}

static bool r_bool(struct in *in, bool *flag) {
    int major;
    uint64_t value;
    if (!r_head(in, &major, &value) || major != 7 || (value != 20 && value != 21)) return false;
    *flag = value == 21;
    return true;
}

static bool r_container(struct in *in, int want, uint64_t *count) {
    int major;
    if (!r_head(in, &major, count) || major != want || *count > 256) return false;
    return true;
}

/* Map keys: integers (requests, COSE keys) or text (nested maps). A text key is copied (short);
 * other keys give *text = "" and the integer. */
static bool r_key(struct in *in, int64_t *number, char *text, size_t size) {
    text[0] = 0;
    *number = INT64_MIN;
    if (in->at >= in->end) return false;
    if ((*in->at >> 5) == 3) {
        const unsigned char *data;
        size_t count;
        if (!r_string(in, 3, &data, &count)) return false;
        size_t copied = count < size - 1 ? count : size - 1;
        memcpy(text, data, copied);
        text[copied] = 0;
        return true;
    }
    return r_int(in, number);
}

/* ---------------------------------------------------------------------------------------------
 * State file.
 */

struct resident {
    unsigned char rp_hash[32];
    unsigned char credential_id[CRED_ID_LEN];
    unsigned char user_id[64];
    size_t user_id_length;
    char user_name[65];
};

/* An RS256 credential's private key (DER), found by the nonce of its credential ID. */
struct rsa_key {
    unsigned char nonce[16];
    unsigned char der[RSA_DER_MAX];
    size_t der_length;
};

struct state {
    unsigned char master[32];
    uint32_t counter;
    int pin_retries;
    unsigned char attestation_key[256];
    size_t attestation_key_length;
    unsigned char certificate[1024];
    size_t certificate_length;
    struct resident resident[MAX_RESIDENT];
    int resident_count;
    struct rsa_key rsa[MAX_RSA];
    int rsa_count;
};

static void hex_out(FILE *file, const unsigned char *data, size_t count) {
    for (size_t i = 0; i < count; i++) fprintf(file, "%02x", data[i]);
}

static bool hex_in(const char *text, unsigned char *data, size_t size, size_t *count) {
    size_t length = strcspn(text, " \n");
    if (length % 2 != 0 || length / 2 > size) return false;
    for (size_t i = 0; i < length / 2; i++) {
        unsigned int byte;
        if (sscanf(text + 2 * i, "%2x", &byte) != 1) return false;
        data[i] = (unsigned char)byte;
    }
    *count = length / 2;
    return true;
}

/* A fresh key: random master key, counter 0, a P-256 attestation key and its self-signed
 * certificate (v3, CA:FALSE, OU "Authenticator Attestation", as the packed format asks). */
static bool state_create(struct state *s) {
    memset(s, 0, sizeof *s);
    s->pin_retries = PIN_RETRIES;
    if (RAND_bytes(s->master, sizeof s->master) != 1) return false;
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    X509 *cert = X509_new();
    bool ok = false;
    if (key == NULL || cert == NULL) goto done;
    unsigned char serial[8];
    RAND_bytes(serial, sizeof serial);
    serial[0] &= 0x7f;
    BIGNUM *serial_number = BN_bin2bn(serial, sizeof serial, NULL);
    if (serial_number == NULL || BN_to_ASN1_INTEGER(serial_number, X509_get_serialNumber(cert)) == NULL) {
        BN_free(serial_number);
        goto done;
    }
    BN_free(serial_number);
    X509_NAME *name = X509_get_subject_name(cert);
    if (X509_set_version(cert, 2) != 1 ||
        X509_NAME_add_entry_by_txt(name, "C", MBSTRING_ASC, (const unsigned char *)"US", -1, -1, 0) != 1 ||
        X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"SoftFIDO", -1, -1, 0) != 1 ||
        X509_NAME_add_entry_by_txt(name, "OU", MBSTRING_ASC, (const unsigned char *)"Authenticator Attestation", -1, -1, 0) != 1 ||
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"SoftFIDO test key", -1, -1, 0) != 1 ||
        X509_set_issuer_name(cert, name) != 1 || X509_gmtime_adj(X509_getm_notBefore(cert), -86400) == NULL ||
        X509_gmtime_adj(X509_getm_notAfter(cert), 20L * 365 * 86400) == NULL || X509_set_pubkey(cert, key) != 1)
        goto done;
    X509V3_CTX context;
    X509V3_set_ctx(&context, cert, cert, NULL, NULL, 0);
    X509_EXTENSION *constraints = X509V3_EXT_conf_nid(NULL, &context, NID_basic_constraints, "critical,CA:FALSE");
    if (constraints == NULL || X509_add_ext(cert, constraints, -1) != 1) {
        X509_EXTENSION_free(constraints);
        goto done;
    }
    X509_EXTENSION_free(constraints);
    if (X509_sign(cert, key, EVP_sha256()) <= 0) goto done;
    int key_length = i2d_PrivateKey(key, NULL);
    int cert_length = i2d_X509(cert, NULL);
    if (key_length <= 0 || (size_t)key_length > sizeof s->attestation_key || cert_length <= 0 ||
        (size_t)cert_length > sizeof s->certificate)
        goto done;
    unsigned char *p = s->attestation_key;
    i2d_PrivateKey(key, &p);
    s->attestation_key_length = (size_t)key_length;
    p = s->certificate;
    i2d_X509(cert, &p);
    s->certificate_length = (size_t)cert_length;
    ok = true;
done:
    EVP_PKEY_free(key);
    X509_free(cert);
    return ok;
}

static bool state_parse(FILE *file, struct state *s) {
    memset(s, 0, sizeof *s);
    char line[8192];
    bool have_master = false, have_key = false, have_cert = false;
    size_t count;
    while (fgets(line, sizeof line, file) != NULL) {
        line[strcspn(line, "\n")] = 0;
        if (strncmp(line, "master ", 7) == 0) {
            have_master = hex_in(line + 7, s->master, sizeof s->master, &count) && count == sizeof s->master;
        } else if (strncmp(line, "counter ", 8) == 0) {
            s->counter = (uint32_t)strtoul(line + 8, NULL, 10);
        } else if (strncmp(line, "pin-retries ", 12) == 0) {
            s->pin_retries = atoi(line + 12);
        } else if (strncmp(line, "attestation-key ", 16) == 0) {
            have_key = hex_in(line + 16, s->attestation_key, sizeof s->attestation_key, &s->attestation_key_length);
        } else if (strncmp(line, "attestation-certificate ", 24) == 0) {
            have_cert = hex_in(line + 24, s->certificate, sizeof s->certificate, &s->certificate_length);
        } else if (strncmp(line, "resident ", 9) == 0 && s->resident_count < MAX_RESIDENT) {
            struct resident *r = &s->resident[s->resident_count];
            char *field = line + 9;
            unsigned char name[64];
            size_t name_length;
            if (!hex_in(field, r->rp_hash, 32, &count) || count != 32) return false;
            field = strchr(field, ' ');
            if (field == NULL || !hex_in(field + 1, r->credential_id, CRED_ID_LEN, &count) || count != CRED_ID_LEN) return false;
            field = strchr(field + 1, ' ');
            if (field == NULL || !hex_in(field + 1, r->user_id, sizeof r->user_id, &r->user_id_length)) return false;
            field = strchr(field + 1, ' ');
            if (field == NULL || !hex_in(field + 1, name, sizeof name, &name_length)) return false;
            memcpy(r->user_name, name, name_length);
            r->user_name[name_length] = 0;
            s->resident_count++;
        } else if (strncmp(line, "rsa ", 4) == 0 && s->rsa_count < MAX_RSA) {
            struct rsa_key *k = &s->rsa[s->rsa_count];
            char *field = line + 4;
            if (!hex_in(field, k->nonce, sizeof k->nonce, &count) || count != sizeof k->nonce) return false;
            field = strchr(field, ' ');
            if (field == NULL || !hex_in(field + 1, k->der, sizeof k->der, &k->der_length)) return false;
            s->rsa_count++;
        }
    }
    return have_master && have_key && have_cert;
}

static bool state_write(int fd, const struct state *s) {
    char *text = NULL;
    size_t length = 0;
    FILE *file = open_memstream(&text, &length);
    if (file == NULL) return false;
    fprintf(file, "softfido-state 1\nmaster ");
    hex_out(file, s->master, sizeof s->master);
    fprintf(file, "\ncounter %u\npin-retries %d\nattestation-key ", s->counter, s->pin_retries);
    hex_out(file, s->attestation_key, s->attestation_key_length);
    fprintf(file, "\nattestation-certificate ");
    hex_out(file, s->certificate, s->certificate_length);
    fputc('\n', file);
    for (int i = 0; i < s->resident_count; i++) {
        const struct resident *r = &s->resident[i];
        fprintf(file, "resident ");
        hex_out(file, r->rp_hash, 32);
        fputc(' ', file);
        hex_out(file, r->credential_id, CRED_ID_LEN);
        fputc(' ', file);
        hex_out(file, r->user_id, r->user_id_length);
        fputc(' ', file);
        hex_out(file, (const unsigned char *)r->user_name, strlen(r->user_name));
        fputc('\n', file);
    }
    for (int i = 0; i < s->rsa_count; i++) {
        fprintf(file, "rsa ");
        hex_out(file, s->rsa[i].nonce, sizeof s->rsa[i].nonce);
        fputc(' ', file);
        hex_out(file, s->rsa[i].der, s->rsa[i].der_length);
        fputc('\n', file);
    }
    if (fclose(file) != 0) {
        free(text);
        return false;
    }
    bool ok = ftruncate(fd, 0) == 0 && pwrite(fd, text, length, 0) == (ssize_t)length && fsync(fd) == 0;
    free(text);
    return ok;
}

/* Opens and locks SOFTFIDO_STATE, loading it (creating it when empty). Returns the locked fd
 * (close it to unlock) or -1. */
static int state_open(struct state *s) {
    const char *path = getenv("SOFTFIDO_STATE");
    if (path == NULL || path[0] == 0) return -1;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "softfido: cannot open SOFTFIDO_STATE %s: %s\n", path, strerror(errno));
        return -1;
    }
    struct stat info;
    if (flock(fd, LOCK_EX) != 0 || fstat(fd, &info) != 0) {
        close(fd);
        return -1;
    }
    if (info.st_size == 0) {
        if (!state_create(s) || !state_write(fd, s)) {
            fprintf(stderr, "softfido: cannot create a key in %s\n", path);
            close(fd);
            return -1;
        }
        return fd;
    }
    int copy = dup(fd);
    FILE *file = copy < 0 ? NULL : fdopen(copy, "r");
    if (file == NULL) {
        if (copy >= 0) close(copy);
        close(fd);
        return -1;
    }
    bool ok = state_parse(file, s);
    fclose(file);
    if (!ok) {
        fprintf(stderr, "softfido: %s is not a softfido state file (remove it to make a new key)\n", path);
        close(fd);
        return -1;
    }
    return fd;
}

/* ---------------------------------------------------------------------------------------------
 * Keys.
 */

static void sha256(const void *data, size_t count, unsigned char digest[32]) { SHA256(data, count, digest); }

/* HMAC-SHA-256(master, label | algorithm | nonce | rpIdHash). */
static void derive(const struct state *s, const char *label, int algorithm, const unsigned char nonce[16],
                   const unsigned char rp_hash[32], unsigned char out[32]) {
    unsigned char message[3 + 1 + 16 + 32];
    memcpy(message, label, 3);
    message[3] = (unsigned char)algorithm;
    memcpy(message + 4, nonce, 16);
    memcpy(message + 20, rp_hash, 32);
    unsigned int length = 32;
    HMAC(EVP_sha256(), s->master, sizeof s->master, message, sizeof message, out, &length);
}

/* The stored RSA key of the credential with this nonce, or NULL. */
static EVP_PKEY *stored_rsa_key(const struct state *s, const unsigned char nonce[16]) {
    for (int i = 0; i < s->rsa_count; i++) {
        if (memcmp(s->rsa[i].nonce, nonce, 16) != 0) continue;
        const unsigned char *p = s->rsa[i].der;
        return d2i_AutoPrivateKey(NULL, &p, (long)s->rsa[i].der_length);
    }
    return NULL;
}

/* A new RSA-2048 key (e = 65537) kept in the state under `nonce`; NULL when the store is full. */
static EVP_PKEY *new_rsa_key(struct state *s, const unsigned char nonce[16]) {
    if (s->rsa_count >= MAX_RSA) return NULL;
    EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    int length = key == NULL ? 0 : i2d_PrivateKey(key, NULL);
    if (length <= 0 || (size_t)length > RSA_DER_MAX) {
        EVP_PKEY_free(key);
        return NULL;
    }
    struct rsa_key *k = &s->rsa[s->rsa_count++];
    memcpy(k->nonce, nonce, 16);
    unsigned char *p = k->der;
    i2d_PrivateKey(key, &p);
    k->der_length = (size_t)length;
    return key;
}

static EVP_PKEY *private_key(int algorithm, const unsigned char secret[32]) {
    if (algorithm == ALG_EDDSA) return EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, secret, 32);
    EC_KEY *ec = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
    BIGNUM *d = BN_bin2bn(secret, 32, NULL);
    EC_POINT *point = ec == NULL ? NULL : EC_POINT_new(EC_KEY_get0_group(ec));
    EVP_PKEY *key = NULL;
    if (ec != NULL && d != NULL && point != NULL && !BN_is_zero(d) &&
        BN_cmp(d, EC_GROUP_get0_order(EC_KEY_get0_group(ec))) < 0 && EC_KEY_set_private_key(ec, d) == 1 &&
        EC_POINT_mul(EC_KEY_get0_group(ec), point, d, NULL, NULL, NULL) == 1 && EC_KEY_set_public_key(ec, point) == 1 &&
        (key = EVP_PKEY_new()) != NULL) {
        if (EVP_PKEY_assign_EC_KEY(key, ec) == 1) ec = NULL;
        else {
            EVP_PKEY_free(key);
            key = NULL;
        }
    }
    EC_POINT_free(point);
    BN_clear_free(d);
    EC_KEY_free(ec);
    return key;
}

/* The credential's key if `id` is one of ours for this RP, else NULL. */
static EVP_PKEY *credential_key(const struct state *s, const unsigned char *id, size_t length, const unsigned char rp_hash[32],
                                int *algorithm) {
    if (length != CRED_ID_LEN || id[0] != 'S' || (id[1] != ALG_ES256 && id[1] != ALG_EDDSA && id[1] != ALG_RS256)) return NULL;
    unsigned char tag[32], secret[32];
    derive(s, "tag", id[1], id + 2, rp_hash, tag);
    if (CRYPTO_memcmp(tag, id + 18, 16) != 0) return NULL;
    if (id[1] == ALG_RS256) {
        *algorithm = ALG_RS256;
        return stored_rsa_key(s, id + 2);
    }
    derive(s, "key", id[1], id + 2, rp_hash, secret);
    EVP_PKEY *key = private_key(id[1], secret);
    OPENSSL_cleanse(secret, sizeof secret);
    *algorithm = id[1];
    return key;
}

static bool sign(EVP_PKEY *key, bool eddsa, const unsigned char *a, size_t a_length, const unsigned char *b, size_t b_length,
                 unsigned char *signature, size_t *signature_length) {
    unsigned char message[1024];
    if (a_length + b_length > sizeof message) return false;
    memcpy(message, a, a_length);
    memcpy(message + a_length, b, b_length);
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    bool ok = context != NULL && EVP_DigestSignInit(context, NULL, eddsa ? NULL : EVP_sha256(), NULL, key) == 1 &&
              EVP_DigestSign(context, signature, signature_length, message, a_length + b_length) == 1;
    EVP_MD_CTX_free(context);
    return ok;
}

/* COSE_Key of a credential's public key (canonical key order 1, 3, -1, -2, -3). */
static bool write_cose_key(struct out *o, EVP_PKEY *key, int algorithm) {
    if (algorithm == ALG_RS256) { /* kty RSA: n (256 bytes), e (3 bytes), as libfido2's rs256_pk_t */
        BIGNUM *n = NULL, *e = NULL;
        unsigned char n_bytes[256], e_bytes[3];
        bool ok = EVP_PKEY_get_bn_param(key, "n", &n) == 1 && EVP_PKEY_get_bn_param(key, "e", &e) == 1 &&
                  BN_bn2binpad(n, n_bytes, sizeof n_bytes) == (int)sizeof n_bytes &&
                  BN_bn2binpad(e, e_bytes, sizeof e_bytes) == (int)sizeof e_bytes;
        BN_free(n);
        BN_free(e);
        if (!ok) return false;
        w_map(o, 4);
        w_int(o, 1), w_int(o, 3);
        w_int(o, 3), w_int(o, COSE_RS256);
        w_int(o, -1), w_bytes(o, n_bytes, sizeof n_bytes);
        w_int(o, -2), w_bytes(o, e_bytes, sizeof e_bytes);
        return true;
    }
    if (algorithm == ALG_EDDSA) {
        unsigned char x[32];
        size_t length = sizeof x;
        if (EVP_PKEY_get_raw_public_key(key, x, &length) != 1 || length != 32) return false;
        w_map(o, 4);
        w_int(o, 1), w_int(o, 1);
        w_int(o, 3), w_int(o, COSE_EDDSA);
        w_int(o, -1), w_int(o, 6);
        w_int(o, -2), w_bytes(o, x, 32);
        return true;
    }
    unsigned char point[65];
    const EC_KEY *ec = EVP_PKEY_get0_EC_KEY(key);
    if (ec == NULL || EC_POINT_point2oct(EC_KEY_get0_group(ec), EC_KEY_get0_public_key(ec), POINT_CONVERSION_UNCOMPRESSED,
                                         point, sizeof point, NULL) != sizeof point)
        return false;
    w_map(o, 5);
    w_int(o, 1), w_int(o, 2);
    w_int(o, 3), w_int(o, algorithm == ALG_ES256 ? COSE_ES256 : COSE_ECDH_ES_HKDF_256);
    w_int(o, -1), w_int(o, 1);
    w_int(o, -2), w_bytes(o, point + 1, 32);
    w_int(o, -3), w_bytes(o, point + 33, 32);
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * ClientPIN protocol 1 (per "power-up", i.e. per process: key agreement key and PIN token).
 */

static EVP_PKEY *agreement_key;
static unsigned char pin_token[32];
static bool pin_token_made;

static const char *configured_pin(void) {
    const char *pin = getenv("SOFTFIDO_PIN");
    return pin != NULL && pin[0] != 0 ? pin : NULL;
}

static bool builtin_uv(void) {
    const char *uv = getenv("SOFTFIDO_UV");
    return uv != NULL && uv[0] == '1';
}

static bool always_uv(void) {
    const char *always = getenv("SOFTFIDO_ALWAYS_UV");
    return always != NULL && always[0] == '1';
}

static bool speaks_ctap21(void) {
    const char *version = getenv("SOFTFIDO_CTAP");
    return version != NULL && strcmp(version, "2.1") == 0;
}

static bool touch_refused(void) {
    const char *touch = getenv("SOFTFIDO_TOUCH");
    return touch != NULL && strcmp(touch, "deny") == 0;
}

static bool make_agreement_key(void) {
    EVP_PKEY_free(agreement_key);
    agreement_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    return agreement_key != NULL;
}

/* pinAuth == LEFT(HMAC-SHA-256(pinToken, clientDataHash), 16) */
static bool pin_auth_valid(const unsigned char *pin_auth, size_t length, const unsigned char cdh[32]) {
    if (!pin_token_made || length != 16) return false;
    unsigned char mac[32];
    unsigned int mac_length = sizeof mac;
    HMAC(EVP_sha256(), pin_token, sizeof pin_token, cdh, 32, mac, &mac_length);
    return CRYPTO_memcmp(mac, pin_auth, 16) == 0;
}

static bool aes256cbc(bool encrypt, const unsigned char key[32], const unsigned char *in, size_t length, unsigned char *out) {
    static const unsigned char zero_iv[16];
    if (length % 16 != 0 || length == 0) return false;
    EVP_CIPHER_CTX *context = EVP_CIPHER_CTX_new();
    int written = 0, final = 0;
    bool ok = context != NULL && EVP_CipherInit_ex(context, EVP_aes_256_cbc(), NULL, key, zero_iv, encrypt ? 1 : 0) == 1 &&
              EVP_CIPHER_CTX_set_padding(context, 0) == 1 && EVP_CipherUpdate(context, out, &written, in, (int)length) == 1 &&
              EVP_CipherFinal_ex(context, out + written, &final) == 1 && (size_t)(written + final) == length;
    EVP_CIPHER_CTX_free(context);
    return ok;
}

/* SHA-256 of the x coordinate of ECDH(agreement key, platform key). */
static bool shared_secret(const unsigned char x[32], const unsigned char y[32], unsigned char secret[32]) {
    if (agreement_key == NULL) return false;
    unsigned char point[65];
    point[0] = 0x04;
    memcpy(point + 1, x, 32);
    memcpy(point + 33, y, 32);
    EC_KEY *platform = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
    EC_POINT *p = platform == NULL ? NULL : EC_POINT_new(EC_KEY_get0_group(platform));
    unsigned char z[32];
    bool ok = p != NULL && EC_POINT_oct2point(EC_KEY_get0_group(platform), p, point, sizeof point, NULL) == 1 &&
              ECDH_compute_key(z, sizeof z, p, EVP_PKEY_get0_EC_KEY(agreement_key), NULL) == (int)sizeof z;
    if (ok) sha256(z, sizeof z, secret);
    OPENSSL_cleanse(z, sizeof z);
    EC_POINT_free(p);
    EC_KEY_free(platform);
    return ok;
}

static int client_pin(struct in *in, struct out *o, struct state *s, bool *dirty) {
    uint64_t entries;
    if (!r_container(in, 5, &entries)) return ST_INVALID_CBOR;
    int64_t protocol = 0, subcommand = 0;
    bool have_platform_key = false;
    unsigned char platform_x[32], platform_y[32];
    const unsigned char *pin_hash_enc = NULL;
    size_t pin_hash_enc_length = 0;
    for (uint64_t i = 0; i < entries; i++) {
        int64_t key;
        char text[16];
        if (!r_key(in, &key, text, sizeof text)) return ST_INVALID_CBOR;
        if (key == 1) {
            if (!r_int(in, &protocol)) return ST_INVALID_CBOR;
        } else if (key == 2) {
            if (!r_int(in, &subcommand)) return ST_INVALID_CBOR;
        } else if (key == 3) {
            uint64_t fields;
            if (!r_container(in, 5, &fields)) return ST_INVALID_CBOR;
            int found = 0;
            for (uint64_t f = 0; f < fields; f++) {
                int64_t field;
                char name[8];
                const unsigned char *data;
                size_t length;
                if (!r_key(in, &field, name, sizeof name)) return ST_INVALID_CBOR;
                if ((field == -2 || field == -3) && r_bytes(in, &data, &length)) {
                    if (length != 32) return ST_INVALID_PARAMETER;
                    memcpy(field == -2 ? platform_x : platform_y, data, 32);
                    found |= field == -2 ? 1 : 2;
                } else if (field == -2 || field == -3 || !r_skip(in)) {
                    return ST_INVALID_CBOR;
                }
            }
            have_platform_key = found == 3;
        } else if (key == 6) {
            if (!r_bytes(in, &pin_hash_enc, &pin_hash_enc_length)) return ST_INVALID_CBOR;
        } else if (!r_skip(in)) {
            return ST_INVALID_CBOR;
        }
    }
    if (protocol != 1) return ST_INVALID_PARAMETER;
    switch (subcommand) {
    case 1: /* getRetries */
        w_map(o, 1);
        w_int(o, 3), w_int(o, s->pin_retries);
        return ST_OK;
    case 2: /* getKeyAgreement */
        if (agreement_key == NULL && !make_agreement_key()) return ST_OTHER;
        w_map(o, 1);
        w_int(o, 1);
        return write_cose_key(o, agreement_key, 0) ? ST_OK : ST_OTHER;
    case 5: { /* getPINToken */
        const char *pin = configured_pin();
        if (pin == NULL) return ST_PIN_NOT_SET;
        if (s->pin_retries <= 0) return ST_PIN_BLOCKED;
        if (!have_platform_key || pin_hash_enc == NULL) return ST_MISSING_PARAMETER;
        if (pin_hash_enc_length != 16) return ST_INVALID_PARAMETER;
        unsigned char secret[32], pin_hash[16], expected[32];
        if (!shared_secret(platform_x, platform_y, secret) || !aes256cbc(false, secret, pin_hash_enc, 16, pin_hash))
            return ST_OTHER;
        sha256(pin, strlen(pin), expected);
        if (CRYPTO_memcmp(pin_hash, expected, 16) != 0) {
            s->pin_retries--;
            *dirty = true;
            make_agreement_key();
            DEBUG("wrong PIN, %d retries left", s->pin_retries);
            return s->pin_retries <= 0 ? ST_PIN_BLOCKED : ST_PIN_INVALID;
        }
        if (s->pin_retries != PIN_RETRIES) {
            s->pin_retries = PIN_RETRIES;
            *dirty = true;
        }
        if (!pin_token_made) {
            if (RAND_bytes(pin_token, sizeof pin_token) != 1) return ST_OTHER;
            pin_token_made = true;
        }
        unsigned char encrypted[32];
        if (!aes256cbc(true, secret, pin_token, sizeof pin_token, encrypted)) return ST_OTHER;
        OPENSSL_cleanse(secret, sizeof secret);
        w_map(o, 1);
        w_int(o, 2), w_bytes(o, encrypted, sizeof encrypted);
        return ST_OK;
    }
    default: return ST_INVALID_SUBCOMMAND;
    }
}

/* ---------------------------------------------------------------------------------------------
 * GetInfo, MakeCredential, GetAssertion.
 */

static int get_info(struct out *o) {
    bool uv = builtin_uv();
    w_map(o, 5);
    if (speaks_ctap21()) w_int(o, 1), w_array(o, 2), w_text(o, "FIDO_2_0"), w_text(o, "FIDO_2_1");
    else w_int(o, 1), w_array(o, 1), w_text(o, "FIDO_2_0");
    w_int(o, 3), w_bytes(o, AAGUID, sizeof AAGUID);
    /* Canonical order: by length, then bytewise (libfido2 falls back to U2F otherwise). */
    w_int(o, 4), w_map(o, uv ? 5 : 4);
    w_text(o, "rk"), w_bool(o, true);
    w_text(o, "up"), w_bool(o, true);
    if (uv) w_text(o, "uv"), w_bool(o, true);
    w_text(o, "plat"), w_bool(o, false);
    w_text(o, "clientPin"), w_bool(o, configured_pin() != NULL);
    w_int(o, 5), w_int(o, 1200);
    w_int(o, 6), w_array(o, 1), w_int(o, 1);
    return ST_OK;
}

/* The options map shared by makeCredential and getAssertion. */
static bool read_options(struct in *in, int *rk, int *up, int *uv) {
    uint64_t entries;
    if (!r_container(in, 5, &entries)) return false;
    for (uint64_t i = 0; i < entries; i++) {
        int64_t unused;
        char name[8];
        bool value;
        if (!r_key(in, &unused, name, sizeof name) || !r_bool(in, &value)) return false;
        if (strcmp(name, "rk") == 0) *rk = value;
        else if (strcmp(name, "up") == 0) *up = value;
        else if (strcmp(name, "uv") == 0) *uv = value;
    }
    return true;
}

/* pinAuth / uv checks common to both commands: sets *verified, or returns an error status. */
static int user_verification(const unsigned char *pin_auth, size_t pin_auth_length, bool have_pin_auth, int64_t pin_protocol,
                             int uv_option, const unsigned char cdh[32], bool *verified) {
    *verified = false;
    if (have_pin_auth) {
        if (pin_auth_length == 0) { /* libfido2's "touch to select" probe */
            if (touch_refused()) return ST_OPERATION_DENIED;
            return configured_pin() == NULL ? ST_PIN_NOT_SET : ST_PIN_INVALID;
        }
        if (pin_protocol != 1 || !pin_auth_valid(pin_auth, pin_auth_length, cdh)) return ST_PIN_AUTH_INVALID;
        *verified = true;
    }
    if (uv_option == 1 && !*verified) {
        if (!builtin_uv()) return ST_UNSUPPORTED_OPTION;
        *verified = true;
    }
    return ST_OK;
}

static int make_credential(struct in *in, struct out *o, struct state *s, bool *dirty) {
    uint64_t entries;
    if (!r_container(in, 5, &entries)) return ST_INVALID_CBOR;
    const unsigned char *cdh = NULL, *user_id = NULL, *pin_auth = NULL;
    size_t cdh_length = 0, user_id_length = 0, pin_auth_length = 0;
    char rp_id[256] = "", user_name[65] = "";
    int algorithm = 0, rk = 0, up = -1, uv = -1;
    bool have_rp = false, have_user = false, have_params = false, have_pin_auth = false;
    int64_t pin_protocol = 0;
    const unsigned char *exclude_start = NULL, *exclude_end = NULL;
    for (uint64_t i = 0; i < entries; i++) {
        int64_t key;
        char text[16];
        if (!r_key(in, &key, text, sizeof text)) return ST_INVALID_CBOR;
        switch (key) {
        case 1:
            if (!r_bytes(in, &cdh, &cdh_length)) return ST_INVALID_CBOR;
            break;
        case 2:
        case 3: {
            uint64_t fields;
            if (!r_container(in, 5, &fields)) return ST_INVALID_CBOR;
            for (uint64_t f = 0; f < fields; f++) {
                int64_t unused;
                char name[16];
                if (!r_key(in, &unused, name, sizeof name)) return ST_INVALID_CBOR;
                if (key == 2 && strcmp(name, "id") == 0) {
                    if (!r_text(in, rp_id, sizeof rp_id)) return ST_INVALID_CBOR;
                    have_rp = true;
                } else if (key == 3 && strcmp(name, "id") == 0) {
                    if (!r_bytes(in, &user_id, &user_id_length) || user_id_length > 64) return ST_INVALID_CBOR;
                    have_user = true;
                } else if (key == 3 && strcmp(name, "name") == 0) {
                    if (!r_text(in, user_name, sizeof user_name)) return ST_INVALID_CBOR;
                } else if (!r_skip(in)) {
                    return ST_INVALID_CBOR;
                }
            }
            break;
        }
        case 4: {
            uint64_t count;
            if (!r_container(in, 4, &count)) return ST_INVALID_CBOR;
            have_params = true;
            for (uint64_t c = 0; c < count; c++) {
                uint64_t fields;
                if (!r_container(in, 5, &fields)) return ST_INVALID_CBOR;
                int64_t alg = 0;
                char type[16] = "";
                for (uint64_t f = 0; f < fields; f++) {
                    int64_t unused;
                    char name[8];
                    if (!r_key(in, &unused, name, sizeof name)) return ST_INVALID_CBOR;
                    if (strcmp(name, "alg") == 0) {
                        if (!r_int(in, &alg)) return ST_INVALID_CBOR;
                    } else if (strcmp(name, "type") == 0) {
                        if (!r_text(in, type, sizeof type)) return ST_INVALID_CBOR;
                    } else if (!r_skip(in)) {
                        return ST_INVALID_CBOR;
                    }
                }
                if (algorithm == 0 && strcmp(type, "public-key") == 0) {
                    if (alg == COSE_ES256) algorithm = ALG_ES256;
                    else if (alg == COSE_EDDSA) algorithm = ALG_EDDSA;
                    else if (alg == COSE_RS256) algorithm = ALG_RS256;
                }
            }
            break;
        }
        case 5:
            exclude_start = in->at;
            if (!r_skip(in)) return ST_INVALID_CBOR;
            exclude_end = in->at;
            break;
        case 7:
            if (!read_options(in, &rk, &up, &uv)) return ST_INVALID_CBOR;
            break;
        case 8:
            if (!r_bytes(in, &pin_auth, &pin_auth_length)) return ST_INVALID_CBOR;
            have_pin_auth = true;
            break;
        case 9:
            if (!r_int(in, &pin_protocol)) return ST_INVALID_CBOR;
            break;
        default:
            if (!r_skip(in)) return ST_INVALID_CBOR;
        }
    }
    if (cdh == NULL || !have_rp || !have_user || !have_params) return ST_MISSING_PARAMETER;
    if (cdh_length != 32) return ST_INVALID_PARAMETER;
    if (algorithm == 0) return ST_UNSUPPORTED_ALGORITHM;
    if (up == 0) return ST_INVALID_PARAMETER; /* makeCredential always needs presence */

    bool verified;
    int status = user_verification(pin_auth, pin_auth_length, have_pin_auth, pin_protocol, uv, cdh, &verified);
    if (status != ST_OK) return status;
    if (configured_pin() != NULL && !verified) return ST_PIN_REQUIRED;

    unsigned char rp_hash[32];
    sha256(rp_id, strlen(rp_id), rp_hash);

    if (exclude_start != NULL) {
        struct in list = {exclude_start, exclude_end};
        uint64_t count;
        if (!r_container(&list, 4, &count)) return ST_INVALID_CBOR;
        for (uint64_t c = 0; c < count; c++) {
            uint64_t fields;
            if (!r_container(&list, 5, &fields)) return ST_INVALID_CBOR;
            for (uint64_t f = 0; f < fields; f++) {
                int64_t unused;
                char name[8];
                const unsigned char *id;
                size_t id_length;
                if (!r_key(&list, &unused, name, sizeof name)) return ST_INVALID_CBOR;
                if (strcmp(name, "id") == 0) {
                    if (!r_bytes(&list, &id, &id_length)) return ST_INVALID_CBOR;
                    int excluded_algorithm;
                    EVP_PKEY *excluded = credential_key(s, id, id_length, rp_hash, &excluded_algorithm);
                    if (excluded != NULL) {
                        EVP_PKEY_free(excluded);
                        return touch_refused() ? ST_OPERATION_DENIED : ST_CREDENTIAL_EXCLUDED;
                    }
                } else if (!r_skip(&list)) {
                    return ST_INVALID_CBOR;
                }
            }
        }
    }

    if (touch_refused()) return ST_OPERATION_DENIED;

    unsigned char id[CRED_ID_LEN];
    EVP_PKEY *key = NULL;
    for (int attempt = 0; attempt < 8 && key == NULL; attempt++) { /* a P-256 scalar >= n: try again */
        unsigned char secret[32];
        id[0] = 'S';
        id[1] = (unsigned char)algorithm;
        if (RAND_bytes(id + 2, 16) != 1) return ST_OTHER;
        derive(s, "key", algorithm, id + 2, rp_hash, secret);
        key = algorithm == ALG_RS256 ? new_rsa_key(s, id + 2) : private_key(algorithm, secret);
        OPENSSL_cleanse(secret, sizeof secret);
        if (algorithm == ALG_RS256 && key == NULL) return s->rsa_count >= MAX_RSA ? ST_KEY_STORE_FULL : ST_OTHER;
    }
    if (key == NULL) return ST_OTHER;
    unsigned char tag[32];
    derive(s, "tag", algorithm, id + 2, rp_hash, tag);
    memcpy(id + 18, tag, 16);

    if (rk == 1) {
        int slot = s->resident_count;
        for (int r = 0; r < s->resident_count; r++)
            if (memcmp(s->resident[r].rp_hash, rp_hash, 32) == 0 && s->resident[r].user_id_length == user_id_length &&
                memcmp(s->resident[r].user_id, user_id, user_id_length) == 0)
                slot = r;
        if (slot == MAX_RESIDENT) {
            EVP_PKEY_free(key);
            return ST_KEY_STORE_FULL;
        }
        struct resident *r = &s->resident[slot];
        memcpy(r->rp_hash, rp_hash, 32);
        memcpy(r->credential_id, id, CRED_ID_LEN);
        memcpy(r->user_id, user_id, user_id_length);
        r->user_id_length = user_id_length;
        snprintf(r->user_name, sizeof r->user_name, "%s", user_name);
        if (slot == s->resident_count) s->resident_count++;
    }

    s->counter++;
    *dirty = true;

    struct out auth = {0};
    put(&auth, rp_hash, 32);
    put_byte(&auth, FLAG_UP | FLAG_AT | (verified ? FLAG_UV : 0));
    for (int b = 3; b >= 0; b--) put_byte(&auth, (unsigned char)(s->counter >> (8 * b)));
    put(&auth, AAGUID, sizeof AAGUID);
    put_byte(&auth, 0), put_byte(&auth, CRED_ID_LEN);
    put(&auth, id, CRED_ID_LEN);
    bool ok = write_cose_key(&auth, key, algorithm) && !auth.overflow;

    const char *attestation = getenv("SOFTFIDO_ATTESTATION");
    bool self = attestation != NULL && strcmp(attestation, "self") == 0;
    unsigned char signature[512];
    size_t signature_length = sizeof signature;
    EVP_PKEY *signer = key;
    EVP_PKEY *attestation_key = NULL;
    if (!self) {
        const unsigned char *p = s->attestation_key;
        attestation_key = d2i_AutoPrivateKey(NULL, &p, (long)s->attestation_key_length);
        signer = attestation_key;
    }
    ok = ok && signer != NULL &&
         sign(signer, self && algorithm == ALG_EDDSA, auth.bytes, auth.length, cdh, 32, signature, &signature_length);
    EVP_PKEY_free(attestation_key);
    EVP_PKEY_free(key);
    if (!ok) return ST_OTHER;

    w_map(o, 3);
    w_int(o, 1), w_text(o, "packed");
    w_int(o, 2), w_bytes(o, auth.bytes, auth.length);
    w_int(o, 3), w_map(o, self ? 2 : 3);
    w_text(o, "alg"), w_int(o, !self ? COSE_ES256 : algorithm == ALG_EDDSA ? COSE_EDDSA : algorithm == ALG_RS256 ? COSE_RS256 : COSE_ES256);
    w_text(o, "sig"), w_bytes(o, signature, signature_length);
    if (!self) w_text(o, "x5c"), w_array(o, 1), w_bytes(o, s->certificate, s->certificate_length);
    DEBUG("makeCredential rp=%s user=%s alg=%d rk=%d uv=%d counter=%u", rp_id, user_name, algorithm, rk, verified, s->counter);
    return ST_OK;
}

/* A discovery (no allow list) that matched several resident credentials: the rest, newest
 * first, for getNextAssertion, which must come next (any other command forgets them). */
static struct {
    int remaining[MAX_RESIDENT];
    int count, next, total;
    unsigned char rp_hash[32], cdh[32];
    bool presence, verified;
} pending;

/* Signs rpIdHash | flags | counter | cdh with the credential and writes the response map: the
 * user for a resident credential, numberOfCredentials when `total` > 1 (the first answer). */
static int assertion_reply(struct out *o, struct state *s, bool *dirty, EVP_PKEY *key, int algorithm, const unsigned char *id,
                           const struct resident *resident, const unsigned char rp_hash[32], const unsigned char cdh[32],
                           bool presence, bool verified, int total) {
    s->counter++;
    *dirty = true;
    unsigned char auth[37];
    memcpy(auth, rp_hash, 32);
    auth[32] = (unsigned char)((presence ? FLAG_UP : 0) | (verified ? FLAG_UV : 0));
    for (int b = 0; b < 4; b++) auth[33 + b] = (unsigned char)(s->counter >> (24 - 8 * b));
    unsigned char signature[512];
    size_t signature_length = sizeof signature;
    if (!sign(key, algorithm == ALG_EDDSA, auth, sizeof auth, cdh, 32, signature, &signature_length)) return ST_OTHER;
    w_map(o, 3 + (resident != NULL ? 1 : 0) + (total > 1 ? 1 : 0));
    w_int(o, 1), w_map(o, 2);
    w_text(o, "id"), w_bytes(o, id, CRED_ID_LEN);
    w_text(o, "type"), w_text(o, "public-key");
    w_int(o, 2), w_bytes(o, auth, sizeof auth);
    w_int(o, 3), w_bytes(o, signature, signature_length);
    if (resident != NULL) {
        w_int(o, 4), w_map(o, 2);
        w_text(o, "id"), w_bytes(o, resident->user_id, resident->user_id_length);
        w_text(o, "name"), w_text(o, resident->user_name);
    }
    if (total > 1) w_int(o, 5), w_int(o, total);
    return ST_OK;
}

static int get_next_assertion(struct out *o, struct state *s, bool *dirty) {
    if (pending.next >= pending.count) return ST_NOT_ALLOWED;
    int r = pending.remaining[pending.next++];
    if (r < 0 || r >= s->resident_count) return ST_OTHER;
    const struct resident *resident = &s->resident[r];
    int algorithm = 0;
    EVP_PKEY *key = credential_key(s, resident->credential_id, CRED_ID_LEN, pending.rp_hash, &algorithm);
    if (key == NULL) return ST_OTHER;
    int status = assertion_reply(o, s, dirty, key, algorithm, resident->credential_id, resident, pending.rp_hash, pending.cdh,
                                 pending.presence, pending.verified, 1);
    EVP_PKEY_free(key);
    DEBUG("getNextAssertion %d of %d counter=%u", pending.next + 1, pending.total, s->counter);
    return status;
}

/* SOFTFIDO_LOG: what the key was asked to sign, appended as it arrives (O_APPEND: whole lines
   from concurrent processes). */
static void record_request(const char *rp_id, const unsigned char cdh[32], bool presence) {
    const char *path = getenv("SOFTFIDO_LOG");
    if (path == NULL || path[0] == 0) return;
    FILE *file = fopen(path, "a");
    if (file == NULL) return;
    fprintf(file, "getAssertion rp=%s cdh=", rp_id);
    hex_out(file, cdh, 32);
    fprintf(file, " up=%d\n", presence ? 1 : 0);
    fclose(file);
}

static int get_assertion(struct in *in, struct out *o, struct state *s, bool *dirty) {
    uint64_t entries;
    if (!r_container(in, 5, &entries)) return ST_INVALID_CBOR;
    char rp_id[256] = "";
    const unsigned char *cdh = NULL, *pin_auth = NULL, *allow_start = NULL, *allow_end = NULL;
    size_t cdh_length = 0, pin_auth_length = 0;
    bool have_rp = false, have_pin_auth = false;
    int rk = -1, up = -1, uv = -1;
    int64_t pin_protocol = 0;
    for (uint64_t i = 0; i < entries; i++) {
        int64_t key;
        char text[16];
        if (!r_key(in, &key, text, sizeof text)) return ST_INVALID_CBOR;
        switch (key) {
        case 1:
            if (!r_text(in, rp_id, sizeof rp_id)) return ST_INVALID_CBOR;
            have_rp = true;
            break;
        case 2:
            if (!r_bytes(in, &cdh, &cdh_length)) return ST_INVALID_CBOR;
            break;
        case 3:
            allow_start = in->at;
            if (!r_skip(in)) return ST_INVALID_CBOR;
            allow_end = in->at;
            break;
        case 5:
            if (!read_options(in, &rk, &up, &uv)) return ST_INVALID_CBOR;
            break;
        case 6:
            if (!r_bytes(in, &pin_auth, &pin_auth_length)) return ST_INVALID_CBOR;
            have_pin_auth = true;
            break;
        case 7:
            if (!r_int(in, &pin_protocol)) return ST_INVALID_CBOR;
            break;
        default:
            if (!r_skip(in)) return ST_INVALID_CBOR;
        }
    }
    if (!have_rp || cdh == NULL) return ST_MISSING_PARAMETER;
    if (cdh_length != 32) return ST_INVALID_PARAMETER;
    record_request(rp_id, cdh, up != 0);
    if (rk != -1) return ST_UNSUPPORTED_OPTION;

    bool verified;
    int status = user_verification(pin_auth, pin_auth_length, have_pin_auth, pin_protocol, uv, cdh, &verified);
    if (status != ST_OK) return status;
    /* alwaysUv (CTAP 2.1): checked before the credentials are looked for. */
    if (always_uv() && !verified) return ST_PIN_REQUIRED;

    unsigned char rp_hash[32];
    sha256(rp_id, strlen(rp_id), rp_hash);

    /* The first credential of the allow list that is ours for this RP; else the newest resident one. */
    unsigned char id[CRED_ID_LEN];
    EVP_PKEY *key = NULL;
    int algorithm = 0;
    const struct resident *resident = NULL;
    if (allow_start != NULL) {
        struct in list = {allow_start, allow_end};
        uint64_t count;
        if (!r_container(&list, 4, &count)) return ST_INVALID_CBOR;
        for (uint64_t c = 0; c < count; c++) {
            uint64_t fields;
            if (!r_container(&list, 5, &fields)) return ST_INVALID_CBOR;
            for (uint64_t f = 0; f < fields; f++) {
                int64_t unused;
                char name[8];
                const unsigned char *candidate;
                size_t candidate_length;
                if (!r_key(&list, &unused, name, sizeof name)) return ST_INVALID_CBOR;
                if (strcmp(name, "id") == 0) {
                    if (!r_bytes(&list, &candidate, &candidate_length)) return ST_INVALID_CBOR;
                    if (key == NULL && (key = credential_key(s, candidate, candidate_length, rp_hash, &algorithm)) != NULL)
                        memcpy(id, candidate, CRED_ID_LEN);
                } else if (!r_skip(&list)) {
                    return ST_INVALID_CBOR;
                }
            }
        }
    } else {
        /* Every resident credential for the RP, newest first: the first answers now, the
         * others wait for getNextAssertion (numberOfCredentials says how many in all). */
        for (int r = s->resident_count - 1; r >= 0; r--) {
            if (memcmp(s->resident[r].rp_hash, rp_hash, 32) != 0) continue;
            if (key == NULL) {
                key = credential_key(s, s->resident[r].credential_id, CRED_ID_LEN, rp_hash, &algorithm);
                if (key != NULL) {
                    memcpy(id, s->resident[r].credential_id, CRED_ID_LEN);
                    resident = &s->resident[r];
                }
            } else if (pending.count < MAX_RESIDENT) {
                pending.remaining[pending.count++] = r;
            }
        }
    }
    bool presence = up != 0;
    if (key == NULL) {
        /* CTAP 2.0 asks for the touch before it says it holds nothing (its steps 7 and 8); 2.1
           answers at once. */
        if (presence && !speaks_ctap21() && touch_refused()) {
            DEBUG("getAssertion rp=%s: no credential of this key, and the touch (asked first: CTAP 2.0) refused", rp_id);
            return ST_OPERATION_DENIED;
        }
        DEBUG("getAssertion rp=%s: no credential of this key", rp_id);
        return ST_NO_CREDENTIALS;
    }
    if (presence && touch_refused()) {
        EVP_PKEY_free(key);
        pending.count = 0;
        DEBUG("getAssertion rp=%s: touch refused", rp_id);
        return ST_OPERATION_DENIED;
    }

    pending.total = pending.count + 1;
    memcpy(pending.rp_hash, rp_hash, 32);
    memcpy(pending.cdh, cdh, 32);
    pending.presence = presence;
    pending.verified = verified;
    int replied = assertion_reply(o, s, dirty, key, algorithm, id, resident, rp_hash, cdh, presence, verified, pending.total);
    EVP_PKEY_free(key);
    if (replied != ST_OK) pending.count = 0;
    DEBUG("getAssertion rp=%s up=%d uv=%d counter=%u credentials=%d", rp_id, presence, verified, s->counter, pending.total);
    return replied;
}

/* One CTAP2 request (command byte + CBOR) into one reply (status byte + CBOR). */
static void ctap2(const unsigned char *request, size_t length, struct out *reply) {
    reply->length = 0;
    reply->overflow = false;
    put_byte(reply, ST_OK);
    if (length == 0) {
        reply->bytes[0] = ST_INVALID_COMMAND;
        return;
    }
    unsigned char command = request[0];
    struct in in = {request + 1, request + length};
    if (command == CMD_GET_INFO) {
        get_info(reply);
        return;
    }
    struct state *s = calloc(1, sizeof *s);
    int fd = s == NULL ? -1 : state_open(s);
    if (fd < 0) {
        free(s);
        reply->length = 1;
        reply->bytes[0] = ST_OTHER;
        return;
    }
    bool dirty = false;
    int status;
    /* Credentials left for getNextAssertion are forgotten by any other command. */
    if (command != CMD_GET_NEXT_ASSERTION) pending.count = pending.next = pending.total = 0;
    switch (command) {
    case CMD_MAKE_CREDENTIAL: status = make_credential(&in, reply, s, &dirty); break;
    case CMD_GET_ASSERTION: status = get_assertion(&in, reply, s, &dirty); break;
    case CMD_GET_NEXT_ASSERTION: status = get_next_assertion(reply, s, &dirty); break;
    case CMD_CLIENT_PIN: status = client_pin(&in, reply, s, &dirty); break;
    default: status = ST_INVALID_COMMAND;
    }
    /* The new counter is on disk before any signature leaves the key. */
    if (dirty && !state_write(fd, s)) status = ST_OTHER;
    OPENSSL_cleanse(s, sizeof *s);
    free(s);
    close(fd);
    if (status != ST_OK || reply->overflow) {
        DEBUG("command 0x%02x: status 0x%02x", command, status != ST_OK ? status : ST_OTHER);
        reply->length = 1;
        reply->overflow = false;
        reply->bytes[0] = (unsigned char)(status != ST_OK ? status : ST_OTHER);
    }
}

/* ---------------------------------------------------------------------------------------------
 * libfido2 hooks.
 */

struct handle {
    unsigned char reply[MAX_REPLY];
    size_t reply_length;
    uint8_t reply_command;
    bool have_reply;
};

static void *io_open(const char *path) {
    if (path == NULL || strncmp(path, "softfido:", 9) != 0) return NULL;
    return calloc(1, sizeof(struct handle));
}

static void io_close(void *handle) { free(handle); }

/* Raw HID reports never flow: the transport hooks carry whole CTAPHID messages. */
static int io_read(void *handle, unsigned char *buffer, size_t length, int ms) {
    (void)handle, (void)buffer, (void)length, (void)ms;
    return -1;
}

static int io_write(void *handle, const unsigned char *buffer, size_t length) {
    (void)handle, (void)buffer, (void)length;
    return -1;
}

static int transport_tx(fido_dev_t *dev, uint8_t command, const unsigned char *buffer, size_t length) {
    struct handle *h = fido_dev_io_handle(dev);
    if (h == NULL) return -1;
    h->have_reply = false;
    h->reply_command = command;
    switch (command) {
    case HID_INIT: {
        if (length != 8) return -1;
        static const unsigned char rest[9] = {0x50, 0x46, 0x53, 0x01, /* channel id */
                                              2, 1, 0, 0,             /* CTAPHID protocol, version 1.0.0 */
                                              CAP_WINK | CAP_CBOR | CAP_NMSG};
        memcpy(h->reply, buffer, 8); /* the nonce, echoed */
        memcpy(h->reply + 8, rest, sizeof rest);
        h->reply_length = 17;
        break;
    }
    case HID_CBOR: {
        struct out reply;
        ctap2(buffer, length, &reply);
        memcpy(h->reply, reply.bytes, reply.length);
        h->reply_length = reply.length;
        break;
    }
    case HID_PING:
        if (length > sizeof h->reply) return -1;
        memcpy(h->reply, buffer, length);
        h->reply_length = length;
        break;
    case HID_WINK: h->reply_length = 0; break;
    case HID_CANCEL: return 0; /* no answer */
    case HID_MSG: /* U2F: not spoken ("instruction not supported") */
        h->reply[0] = 0x6d, h->reply[1] = 0x00;
        h->reply_length = 2;
        break;
    default: return -1;
    }
    h->have_reply = true;
    return 0;
}

static int transport_rx(fido_dev_t *dev, uint8_t command, unsigned char *buffer, size_t length, int ms) {
    (void)ms;
    struct handle *h = fido_dev_io_handle(dev);
    if (h == NULL || !h->have_reply || h->reply_command != command || h->reply_length > length) return -1;
    memcpy(buffer, h->reply, h->reply_length);
    h->have_reply = false;
    return (int)h->reply_length;
}

static const fido_dev_io_t softfido_io = {io_open, io_close, io_read, io_write};
static const fido_dev_transport_t softfido_transport = {transport_rx, transport_tx};

int softfido_install(fido_dev_t *dev) {
    int r = fido_dev_set_io_functions(dev, &softfido_io);
    return r != FIDO_OK ? r : fido_dev_set_transport_functions(dev, &softfido_transport);
}

int softfido_info_set(fido_dev_info_t *list, size_t index) {
    return fido_dev_info_set(list, index, "softfido:0", "SoftFIDO", "Test Authenticator", &softfido_io, &softfido_transport);
}

/* The interposer is active only where SOFTFIDO_STATE names a key. */
static bool enabled(void) {
    const char *path = getenv("SOFTFIDO_STATE");
    return path != NULL && path[0] != 0;
}

int fido_dev_info_manifest(fido_dev_info_t *list, size_t size, size_t *found) {
    static int (*real)(fido_dev_info_t *, size_t, size_t *);
    if (real == NULL) real = (int (*)(fido_dev_info_t *, size_t, size_t *))dlsym(RTLD_NEXT, "fido_dev_info_manifest");
    if (real == NULL) return FIDO_ERR_INTERNAL;
    int r = real(list, size, found);
    if (r == FIDO_OK && enabled() && *found < size && softfido_info_set(list, *found) == FIDO_OK) (*found)++;
    return r;
}

int fido_dev_open(fido_dev_t *dev, const char *path) {
    static int (*real)(fido_dev_t *, const char *);
    if (real == NULL) real = (int (*)(fido_dev_t *, const char *))dlsym(RTLD_NEXT, "fido_dev_open");
    if (real == NULL) return FIDO_ERR_INTERNAL;
    if (enabled() && path != NULL && strncmp(path, "softfido:", 9) == 0) {
        int r = softfido_install(dev);
        if (r != FIDO_OK) return r;
    }
    return real(dev, path);
}
