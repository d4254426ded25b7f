#include "CFido2.h"

#include <dlfcn.h>
#include <fido.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The libfido2 functions used, looked up once. */
static struct {
    void (*init)(int);
    fido_dev_info_t *(*dev_info_new)(size_t);
    void (*dev_info_free)(fido_dev_info_t **, size_t);
    int (*dev_info_manifest)(fido_dev_info_t *, size_t, size_t *);
    const fido_dev_info_t *(*dev_info_ptr)(const fido_dev_info_t *, size_t);
    const char *(*dev_info_path)(const fido_dev_info_t *);
    fido_dev_t *(*dev_new)(void);
    int (*dev_open)(fido_dev_t *, const char *);
    int (*dev_close)(fido_dev_t *);
    void (*dev_free)(fido_dev_t **);
    int (*dev_set_timeout)(fido_dev_t *, int);
    int (*dev_get_assert)(fido_dev_t *, fido_assert_t *, const char *);
    int (*dev_make_cred)(fido_dev_t *, fido_cred_t *, const char *);
    bool (*dev_is_fido2)(const fido_dev_t *);
    int (*dev_get_cbor_info)(fido_dev_t *, fido_cbor_info_t *);
    fido_cbor_info_t *(*cbor_info_new)(void);
    void (*cbor_info_free)(fido_cbor_info_t **);
    char **(*cbor_info_versions_ptr)(const fido_cbor_info_t *);
    size_t (*cbor_info_versions_len)(const fido_cbor_info_t *);
    fido_assert_t *(*assert_new)(void);
    void (*assert_free)(fido_assert_t **);
    int (*assert_set_rp)(fido_assert_t *, const char *);
    int (*assert_allow_cred)(fido_assert_t *, const unsigned char *, size_t);
    int (*assert_set_clientdata_hash)(fido_assert_t *, const unsigned char *, size_t);
    int (*assert_set_up)(fido_assert_t *, fido_opt_t);
    int (*assert_set_uv)(fido_assert_t *, fido_opt_t);
    size_t (*assert_count)(const fido_assert_t *);
    const unsigned char *(*assert_authdata_ptr)(const fido_assert_t *, size_t);
    size_t (*assert_authdata_len)(const fido_assert_t *, size_t);
    const unsigned char *(*assert_sig_ptr)(const fido_assert_t *, size_t);
    size_t (*assert_sig_len)(const fido_assert_t *, size_t);
    const unsigned char *(*assert_id_ptr)(const fido_assert_t *, size_t);
    size_t (*assert_id_len)(const fido_assert_t *, size_t);
    fido_cred_t *(*cred_new)(void);
    void (*cred_free)(fido_cred_t **);
    int (*cred_set_type)(fido_cred_t *, int);
    int (*cred_set_clientdata_hash)(fido_cred_t *, const unsigned char *, size_t);
    int (*cred_set_rp)(fido_cred_t *, const char *, const char *);
    int (*cred_set_user)(fido_cred_t *, const unsigned char *, size_t, const char *, const char *, const char *);
    int (*cred_set_rk)(fido_cred_t *, fido_opt_t);
    int (*cred_set_uv)(fido_cred_t *, fido_opt_t);
    int (*cred_verify)(const fido_cred_t *);
    int (*cred_verify_self)(const fido_cred_t *);
    size_t (*cred_x5c_len)(const fido_cred_t *);
    const unsigned char *(*cred_id_ptr)(const fido_cred_t *);
    size_t (*cred_id_len)(const fido_cred_t *);
    const unsigned char *(*cred_pubkey_ptr)(const fido_cred_t *);
    size_t (*cred_pubkey_len)(const fido_cred_t *);
    const char *(*strerr)(int);
    int loaded;
    char error[SECUROTP_FIDO_ERROR];
} fido;

static pthread_once_t fido_once = PTHREAD_ONCE_INIT;

/* A process-wide definition first (what binding a linked libfido2 would find: an LD_PRELOADed
   test key's interposers), else the library's own. */
static void *lookup(void *library, const char *symbol) {
    void *found = dlsym(RTLD_DEFAULT, symbol);
    return found != NULL ? found : dlsym(library, symbol);
}

static void load_fido(void) {
    void *library = dlopen("libfido2.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        snprintf(fido.error, sizeof fido.error, "cannot load libfido2.so.1 (install libfido2-1): %s", dlerror());
        return;
    }
#define LOOKUP(field, symbol)                                                                    \
    if ((*(void **)&fido.field = lookup(library, symbol)) == NULL) {                            \
        snprintf(fido.error, sizeof fido.error, "libfido2.so.1 lacks %s (libfido2 1.10 or later is needed)", symbol); \
        return;                                                                                  \
    }
    LOOKUP(init, "fido_init")
    LOOKUP(dev_info_new, "fido_dev_info_new")
    LOOKUP(dev_info_free, "fido_dev_info_free")
    LOOKUP(dev_info_manifest, "fido_dev_info_manifest")
    LOOKUP(dev_info_ptr, "fido_dev_info_ptr")
    LOOKUP(dev_info_path, "fido_dev_info_path")
    LOOKUP(dev_new, "fido_dev_new")
    LOOKUP(dev_open, "fido_dev_open")
    LOOKUP(dev_close, "fido_dev_close")
    LOOKUP(dev_free, "fido_dev_free")
    LOOKUP(dev_set_timeout, "fido_dev_set_timeout")
    LOOKUP(dev_get_assert, "fido_dev_get_assert")
    LOOKUP(dev_make_cred, "fido_dev_make_cred")
    LOOKUP(dev_is_fido2, "fido_dev_is_fido2")
    LOOKUP(dev_get_cbor_info, "fido_dev_get_cbor_info")
    LOOKUP(cbor_info_new, "fido_cbor_info_new")
    LOOKUP(cbor_info_free, "fido_cbor_info_free")
    LOOKUP(cbor_info_versions_ptr, "fido_cbor_info_versions_ptr")
    LOOKUP(cbor_info_versions_len, "fido_cbor_info_versions_len")
    LOOKUP(assert_new, "fido_assert_new")
    LOOKUP(assert_free, "fido_assert_free")
    LOOKUP(assert_set_rp, "fido_assert_set_rp")
    LOOKUP(assert_allow_cred, "fido_assert_allow_cred")
    LOOKUP(assert_set_clientdata_hash, "fido_assert_set_clientdata_hash")
    LOOKUP(assert_set_up, "fido_assert_set_up")
    LOOKUP(assert_set_uv, "fido_assert_set_uv")
    LOOKUP(assert_count, "fido_assert_count")
    LOOKUP(assert_authdata_ptr, "fido_assert_authdata_ptr")
    LOOKUP(assert_authdata_len, "fido_assert_authdata_len")
    LOOKUP(assert_sig_ptr, "fido_assert_sig_ptr")
    LOOKUP(assert_sig_len, "fido_assert_sig_len")
    LOOKUP(assert_id_ptr, "fido_assert_id_ptr")
    LOOKUP(assert_id_len, "fido_assert_id_len")
    LOOKUP(cred_new, "fido_cred_new")
    LOOKUP(cred_free, "fido_cred_free")
    LOOKUP(cred_set_type, "fido_cred_set_type")
    LOOKUP(cred_set_clientdata_hash, "fido_cred_set_clientdata_hash")
    LOOKUP(cred_set_rp, "fido_cred_set_rp")
    LOOKUP(cred_set_user, "fido_cred_set_user")
    LOOKUP(cred_set_rk, "fido_cred_set_rk")
    LOOKUP(cred_set_uv, "fido_cred_set_uv")
    LOOKUP(cred_verify, "fido_cred_verify")
    LOOKUP(cred_verify_self, "fido_cred_verify_self")
    LOOKUP(cred_x5c_len, "fido_cred_x5c_len")
    LOOKUP(cred_id_ptr, "fido_cred_id_ptr")
    LOOKUP(cred_id_len, "fido_cred_id_len")
    LOOKUP(cred_pubkey_ptr, "fido_cred_pubkey_ptr")
    LOOKUP(cred_pubkey_len, "fido_cred_pubkey_len")
    LOOKUP(strerr, "fido_strerr")
#undef LOOKUP
    /* Never dlclose'd: the module stays loaded (-z nodelete) and so does libfido2. */
    fido.init(0);
    fido.loaded = 1;
}

static void fail(char *error, const char *what, int code) {
    if (error == NULL) return;
    if (code == FIDO_OK) snprintf(error, SECUROTP_FIDO_ERROR, "%s", what);
    else snprintf(error, SECUROTP_FIDO_ERROR, "%s: %s", what, fido.strerr(code));
}

int securotp_fido_load(char *error) {
    pthread_once(&fido_once, load_fido);
    if (!fido.loaded && error != NULL) snprintf(error, SECUROTP_FIDO_ERROR, "%s", fido.error);
    return fido.loaded;
}

static int result_of(int code) {
    switch (code) {
    case FIDO_OK: return SECUROTP_FIDO_OK;
    case FIDO_ERR_OPERATION_DENIED:
    case FIDO_ERR_ACTION_TIMEOUT:
    case FIDO_ERR_USER_ACTION_TIMEOUT:
    case FIDO_ERR_KEEPALIVE_CANCEL: return SECUROTP_FIDO_DENIED;
    case FIDO_ERR_PIN_INVALID:
    case FIDO_ERR_PIN_BLOCKED:
    case FIDO_ERR_PIN_AUTH_INVALID:
    case FIDO_ERR_PIN_AUTH_BLOCKED:
    case FIDO_ERR_PIN_POLICY_VIOLATION: return SECUROTP_FIDO_PIN_INVALID;
    case FIDO_ERR_PIN_REQUIRED:
    case FIDO_ERR_UV_BLOCKED: return SECUROTP_FIDO_PIN_REQUIRED;
    case FIDO_ERR_NO_CREDENTIALS: return SECUROTP_FIDO_NO_DEVICE;
    default: return SECUROTP_FIDO_FAILED;
    }
}

static fido_opt_t option(int value) {
    return value == SECUROTP_FIDO_TRUE ? FIDO_OPT_TRUE : value == SECUROTP_FIDO_FALSE ? FIDO_OPT_FALSE : FIDO_OPT_OMIT;
}

/* An assertion request for the credentials, or NULL. */
static fido_assert_t *new_assertion(const securotp_fido_credentials *credentials, const uint8_t client_data_hash[32], int up,
                                    int uv, char *error) {
    fido_assert_t *assertion = fido.assert_new();
    if (assertion == NULL) {
        fail(error, "out of memory", FIDO_OK);
        return NULL;
    }
    int r = fido.assert_set_rp(assertion, credentials->rp_id);
    for (size_t i = 0; r == FIDO_OK && i < credentials->credential_count; i++)
        r = fido.assert_allow_cred(assertion, credentials->credential_ids[i], credentials->credential_id_lengths[i]);
    if (r == FIDO_OK) r = fido.assert_set_clientdata_hash(assertion, client_data_hash, 32);
    if (r == FIDO_OK) r = fido.assert_set_up(assertion, option(up));
    if (r == FIDO_OK) r = fido.assert_set_uv(assertion, option(uv));
    if (r != FIDO_OK) {
        fail(error, "cannot prepare the assertion", r);
        fido.assert_free(&assertion);
        return NULL;
    }
    return assertion;
}

static fido_dev_t *open_device(const char *path, int timeout_ms, int *code) {
    fido_dev_t *device = fido.dev_new();
    if (device == NULL) {
        *code = FIDO_ERR_INTERNAL;
        return NULL;
    }
    if ((*code = fido.dev_open(device, path)) != FIDO_OK) {
        fido.dev_free(&device);
        return NULL;
    }
    if (timeout_ms > 0) fido.dev_set_timeout(device, timeout_ms);
    return device;
}

static void close_device(fido_dev_t *device) {
    fido.dev_close(device);
    fido.dev_free(&device);
}

/* 1 when the open key refuses an assertion for a credential it does not hold before it asks
   for a touch. CTAP 2.1 moved that check before user presence; a CTAP 2.0 key may wait for the
   touch first (CTAP 2.0, authenticatorGetAssertion steps 7 and 8), so it is probed. A U2F-only
   key qualifies for named credentials: libfido2 checks each key handle on it without a touch
   first (U2F has no resident credentials). */
static int refuses_before_touch(fido_dev_t *device, const securotp_fido_credentials *credentials) {
    if (!fido.dev_is_fido2(device)) return credentials->credential_count > 0;
    int result = 0;
    fido_cbor_info_t *info = fido.cbor_info_new();
    if (info != NULL && fido.dev_get_cbor_info(device, info) == FIDO_OK) {
        char **versions = fido.cbor_info_versions_ptr(info);
        size_t count = fido.cbor_info_versions_len(info);
        for (size_t i = 0; versions != NULL && i < count && !result; i++)
            result = versions[i] != NULL && strcmp(versions[i], "FIDO_2_1") == 0;
    }
    if (info != NULL) fido.cbor_info_free(&info);
    return result;
}

int securotp_fido_find(const securotp_fido_credentials *credentials, int probe_only_key, char path[256], int *probed, char *error) {
    if (!securotp_fido_load(error)) return SECUROTP_FIDO_UNAVAILABLE;
    path[0] = 0;
    *probed = 1;
    fido_dev_info_t *list = fido.dev_info_new(SECUROTP_FIDO_MAX_DEVICES);
    size_t found = 0;
    int r = list == NULL ? FIDO_ERR_INTERNAL : fido.dev_info_manifest(list, SECUROTP_FIDO_MAX_DEVICES, &found);
    if (r != FIDO_OK) {
        fail(error, "cannot list security keys", r);
        if (list != NULL) fido.dev_info_free(&list, SECUROTP_FIDO_MAX_DEVICES);
        return SECUROTP_FIDO_FAILED;
    }
    int result = SECUROTP_FIDO_NO_DEVICE;
    fail(error, found == 0 ? "no security key attached" : "no attached security key holds the user's credentials", FIDO_OK);
    for (size_t i = 0; i < found && result == SECUROTP_FIDO_NO_DEVICE; i++) {
        const char *candidate = fido.dev_info_path(fido.dev_info_ptr(list, i));
        if (candidate == NULL || strlen(candidate) >= 256) continue;
        int code;
        fido_dev_t *device = open_device(candidate, 5000, &code);
        if (device == NULL) continue;
        if (found == 1 && !probe_only_key && refuses_before_touch(device, credentials)) {
            /* One key, nothing to ask before the touch, and "no credentials" comes before any
               touch: the assertion itself is the test, so the probe (a signature round trip,
               and a counter step on many keys) is saved. */
            snprintf(path, 256, "%s", candidate);
            *probed = 0;
            result = SECUROTP_FIDO_OK;
        } else {
            /* A throwaway challenge: a silent probe proves nothing and is never verified. */
            uint8_t probe[32] = {0};
            fido_assert_t *assertion = new_assertion(credentials, probe, SECUROTP_FIDO_FALSE, SECUROTP_FIDO_OMIT, error);
            if (assertion != NULL) {
                code = fido.dev_get_assert(device, assertion, NULL);
                if (code == FIDO_OK) {
                    snprintf(path, 256, "%s", candidate);
                    result = SECUROTP_FIDO_OK;
                }
                fido.assert_free(&assertion);
            }
        }
        close_device(device);
    }
    fido.dev_info_free(&list, SECUROTP_FIDO_MAX_DEVICES);
    return result;
}

/* Assertion `i`'s authenticator data (libfido2 keeps it CBOR-wrapped, a byte string: unwrapped
   here) and signature into `out`; 0 (error set) when malformed or too long. */
static int copy_assertion(const fido_assert_t *assertion, size_t i, securotp_fido_assertion *out, char *error) {
    const uint8_t *wrapped = fido.assert_authdata_ptr(assertion, i);
    size_t wrapped_length = fido.assert_authdata_len(assertion, i);
    size_t header = 0, length = 0;
    if (wrapped != NULL && wrapped_length >= 2 && wrapped[0] == 0x58) {
        header = 2, length = wrapped[1];
    } else if (wrapped != NULL && wrapped_length >= 3 && wrapped[0] == 0x59) {
        header = 3, length = (size_t)wrapped[1] << 8 | wrapped[2];
    }
    const uint8_t *signature = fido.assert_sig_ptr(assertion, i);
    size_t signature_length = fido.assert_sig_len(assertion, i);
    if (header == 0 || header + length != wrapped_length || length > sizeof out->authenticator_data || signature == NULL ||
        signature_length == 0 || signature_length > sizeof out->signature) {
        fail(error, "the security key's assertion is malformed", FIDO_OK);
        return 0;
    }
    memcpy(out->authenticator_data, wrapped + header, length);
    out->authenticator_data_length = length;
    memcpy(out->signature, signature, signature_length);
    out->signature_length = signature_length;
    return 1;
}

/* Opens the key at `path` and asks it for an assertion over `credentials` (none named: the
   key's resident ones for the RP). SECUROTP_FIDO_OK with *device and *assertion for the caller
   to free; otherwise nothing is held and `error` says why. */
static int open_and_assert(const char *path, const securotp_fido_credentials *credentials, const uint8_t client_data_hash[32],
                           int up, int uv, const char *pin, int timeout_ms, fido_dev_t **device, fido_assert_t **assertion,
                           char *error) {
    int code;
    *assertion = NULL;
    *device = open_device(path, timeout_ms, &code);
    if (*device == NULL) {
        fail(error, "cannot open the security key", code);
        return SECUROTP_FIDO_NO_DEVICE;
    }
    *assertion = new_assertion(credentials, client_data_hash, up, uv, error);
    if (*assertion == NULL) {
        close_device(*device);
        *device = NULL;
        return SECUROTP_FIDO_FAILED;
    }
    code = fido.dev_get_assert(*device, *assertion, pin);
    if (code == FIDO_OK) return SECUROTP_FIDO_OK;
    fail(error, "the security key gave no assertion", code);
    fido.assert_free(assertion);
    close_device(*device);
    *device = NULL;
    int result = result_of(code);
    return result == SECUROTP_FIDO_OK ? SECUROTP_FIDO_FAILED : result;
}

int securotp_fido_assert(const char *path, const securotp_fido_credentials *credentials, const uint8_t client_data_hash[32],
                         int up, int uv, const char *pin, int timeout_ms, securotp_fido_assertion *out, char *error) {
    if (!securotp_fido_load(error)) return SECUROTP_FIDO_UNAVAILABLE;
    memset(out, 0, sizeof *out);
    fido_dev_t *device;
    fido_assert_t *assertion;
    int result = open_and_assert(path, credentials, client_data_hash, up, uv, pin, timeout_ms, &device, &assertion, error);
    if (result != SECUROTP_FIDO_OK) return result;
    result = SECUROTP_FIDO_FAILED;
    if (fido.assert_count(assertion) != 1) {
        fail(error, "the security key gave more than one assertion", FIDO_OK);
        goto done;
    }
    if (!copy_assertion(assertion, 0, out, error)) goto done;
    const uint8_t *id = fido.assert_id_ptr(assertion, 0);
    size_t id_length = fido.assert_id_len(assertion, 0);
    /* Which credential answered: the ID it names, or the only one asked for. */
    size_t index = credentials->credential_count;
    for (size_t i = 0; i < credentials->credential_count; i++)
        if (id != NULL && id_length == credentials->credential_id_lengths[i] && memcmp(id, credentials->credential_ids[i], id_length) == 0)
            index = i;
    if (index == credentials->credential_count && (id == NULL || id_length == 0) && credentials->credential_count == 1) index = 0;
    if (index == credentials->credential_count) {
        memset(out, 0, sizeof *out);
        fail(error, "the security key answered for a credential not asked for", FIDO_OK);
        goto done;
    }
    out->credential_index = index;
    result = SECUROTP_FIDO_OK;
done:
    fido.assert_free(&assertion);
    close_device(device);
    return result;
}

int securotp_fido_assert_resident(const char *path, const char *rp_id, const uint8_t client_data_hash[32], int up, int uv,
                                  const char *pin, int timeout_ms, securotp_fido_assertion *out, size_t capacity, size_t *count,
                                  char *error) {
    *count = 0;
    if (!securotp_fido_load(error)) return SECUROTP_FIDO_UNAVAILABLE;
    const securotp_fido_credentials discoverable = {rp_id, NULL, NULL, 0};
    fido_dev_t *device;
    fido_assert_t *assertion;
    int result = open_and_assert(path, &discoverable, client_data_hash, up, uv, pin, timeout_ms, &device, &assertion, error);
    if (result != SECUROTP_FIDO_OK) return result;
    result = SECUROTP_FIDO_FAILED;
    size_t answered = fido.assert_count(assertion);
    if (answered == 0) {
        fail(error, "the security key gave no assertion", FIDO_OK);
        goto done;
    }
    for (size_t i = 0; i < answered && *count < capacity; i++) {
        memset(&out[*count], 0, sizeof out[*count]);
        if (!copy_assertion(assertion, i, &out[*count], error)) goto done;
        out[*count].credential_index = i;
        (*count)++;
    }
    result = SECUROTP_FIDO_OK;
done:
    if (result != SECUROTP_FIDO_OK) *count = 0;
    fido.assert_free(&assertion);
    close_device(device);
    return result;
}

int securotp_fido_make_credential(const securotp_fido_credential_request *request, int timeout_ms, securotp_fido_credential *out,
                                  char *error) {
    if (!securotp_fido_load(error)) return SECUROTP_FIDO_UNAVAILABLE;
    memset(out, 0, sizeof *out);
    fido_dev_info_t *list = fido.dev_info_new(SECUROTP_FIDO_MAX_DEVICES);
    size_t found = 0;
    int code = list == NULL ? FIDO_ERR_INTERNAL : fido.dev_info_manifest(list, SECUROTP_FIDO_MAX_DEVICES, &found);
    if (code != FIDO_OK || found == 0) {
        fail(error, code != FIDO_OK ? "cannot list security keys" : "no security key attached", code);
        if (list != NULL) fido.dev_info_free(&list, SECUROTP_FIDO_MAX_DEVICES);
        return code != FIDO_OK ? SECUROTP_FIDO_FAILED : SECUROTP_FIDO_NO_DEVICE;
    }
    const char *path = fido.dev_info_path(fido.dev_info_ptr(list, 0));
    snprintf(out->path, sizeof out->path, "%s", path != NULL ? path : "");
    fido.dev_info_free(&list, SECUROTP_FIDO_MAX_DEVICES);
    fido_dev_t *device = open_device(out->path, timeout_ms, &code);
    if (device == NULL) {
        fail(error, "cannot open the security key", code);
        return SECUROTP_FIDO_NO_DEVICE;
    }
    int result = SECUROTP_FIDO_FAILED;
    fido_cred_t *credential = fido.cred_new();
    if (credential == NULL) {
        fail(error, "out of memory", FIDO_OK);
        goto done;
    }
    code = fido.cred_set_type(credential, request->cose_algorithm);
    if (code == FIDO_OK) code = fido.cred_set_clientdata_hash(credential, request->client_data_hash, 32);
    if (code == FIDO_OK) code = fido.cred_set_rp(credential, request->rp_id, request->rp_id);
    if (code == FIDO_OK)
        code = fido.cred_set_user(credential, request->user_id, request->user_id_length, request->user_name, request->user_name, NULL);
    if (code == FIDO_OK) code = fido.cred_set_rk(credential, request->resident ? FIDO_OPT_TRUE : FIDO_OPT_OMIT);
    if (code == FIDO_OK) code = fido.cred_set_uv(credential, option(request->uv));
    if (code != FIDO_OK) {
        fail(error, "cannot prepare the credential", code);
        goto done;
    }
    code = fido.dev_make_cred(device, credential, request->pin);
    if (code != FIDO_OK) {
        fail(error, "the security key made no credential", code);
        result = result_of(code);
        if (result == SECUROTP_FIDO_OK || result == SECUROTP_FIDO_NO_DEVICE) result = SECUROTP_FIDO_FAILED;
        goto done;
    }
    code = fido.cred_x5c_len(credential) > 0 ? fido.cred_verify(credential) : fido.cred_verify_self(credential);
    if (code != FIDO_OK) {
        fail(error, "the security key's attestation does not verify", code);
        goto done;
    }
    const uint8_t *id = fido.cred_id_ptr(credential), *key = fido.cred_pubkey_ptr(credential);
    size_t id_length = fido.cred_id_len(credential), key_length = fido.cred_pubkey_len(credential);
    if (id == NULL || key == NULL || id_length == 0 || key_length == 0 || id_length > sizeof out->credential_id ||
        key_length > sizeof out->public_key) {
        fail(error, "the security key's credential is malformed", FIDO_OK);
        goto done;
    }
    memcpy(out->credential_id, id, id_length);
    out->credential_id_length = id_length;
    memcpy(out->public_key, key, key_length);
    out->public_key_length = key_length;
    result = SECUROTP_FIDO_OK;
done:
    if (credential != NULL) fido.cred_free(&credential);
    close_device(device);
    return result;
}
