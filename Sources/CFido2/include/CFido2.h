#ifndef SECUROTP_CFIDO2_H
#define SECUROTP_CFIDO2_H
#include <stddef.h>
#include <stdint.h>

/* FIDO2/U2F security keys through libfido2, loaded with dlopen() on first use: a host without
   libfido2 (libfido2-1) loads the module as before and gets an error naming the package only
   when a user with a security key logs in. Symbols are bound as the dynamic linker would bind
   a linked libfido2 (a process-wide definition first), so tests can attach a software key
   with LD_PRELOAD (docs/fido.md). Device I/O only: the caller verifies what a key signed.

   Every function fills `error` (at most SECUROTP_FIDO_ERROR bytes, NUL-terminated) when it
   fails. */

enum { SECUROTP_FIDO_ERROR = 256, SECUROTP_FIDO_MAX_DEVICES = 16 };

/* Results. */
enum {
    SECUROTP_FIDO_OK = 0,
    SECUROTP_FIDO_UNAVAILABLE = 1,   /* libfido2 cannot be loaded */
    SECUROTP_FIDO_NO_DEVICE = 2,     /* no key attached, or none holds one of the credentials */
    SECUROTP_FIDO_DENIED = 3,        /* the user did not touch the key (or it refused) */
    SECUROTP_FIDO_PIN_INVALID = 4,   /* wrong PIN, or PIN blocked */
    SECUROTP_FIDO_PIN_REQUIRED = 5,  /* the key needs its PIN and none was given */
    SECUROTP_FIDO_FAILED = 6,        /* anything else; `error` says what */
};

/* Options as CTAP has them: omitted (the key's default), false, true. */
enum { SECUROTP_FIDO_OMIT = 0, SECUROTP_FIDO_FALSE = 1, SECUROTP_FIDO_TRUE = 2 };

/* 1 when libfido2 is loaded (loading it on the first call), else 0 and `error` says why. */
int securotp_fido_load(char *error);

/* The credentials a login may use: their IDs, all for one RP ID (pam_u2f's "origin"). No IDs
   (credential_count 0): a resident (discoverable) credential, whatever the key holds for the RP. */
typedef struct {
    const char *rp_id;
    const uint8_t *const *credential_ids;
    const size_t *credential_id_lengths;
    size_t credential_count;
} securotp_fido_credentials;

/* Finds the first attached key that holds one of the credentials, by a silent assertion
   (no touch, as pam_u2f's detection step). Writes its path (at most 256 bytes) and sets
   *probed to 1. With `probe_only_key` 0 and exactly one key attached that speaks CTAP 2.1
   (or U2F only), that key's path is written without the probe and *probed is 0: there is
   nothing to choose, and the real assertion then answers SECUROTP_FIDO_NO_DEVICE, before any
   touch, if the key does not hold the credentials (docs/fido.md, "Finding the key"). */
int securotp_fido_find(const securotp_fido_credentials *credentials, int probe_only_key, char path[256], int *probed, char *error);

/* What one assertion returned: the raw authenticator data, the signature, which credential. */
typedef struct {
    uint8_t authenticator_data[512];
    size_t authenticator_data_length;
    uint8_t signature[1024];
    size_t signature_length;
    size_t credential_index;
} securotp_fido_assertion;

/* One assertion on the key at `path` over `client_data_hash` (32 bytes), asking for user
   presence `up` and verification `uv`, with `pin` (NULL: none). Waits at most timeout_ms for
   the touch. */
int securotp_fido_assert(const char *path, const securotp_fido_credentials *credentials, const uint8_t client_data_hash[32],
                         int up, int uv, const char *pin, int timeout_ms, securotp_fido_assertion *out, char *error);

/* One assertion for a resident credential (pamu2fcfg -r, key handle "*"): no allow list, so the
   key answers with the credentials it holds for `rp_id` — several when it holds several (other
   users', older enrolments), all from the one touch. Writes up to `capacity` of them to `out`
   and their number to `count`; the caller finds the one its public key verifies. */
enum { SECUROTP_FIDO_MAX_RESIDENT = 8 };
int securotp_fido_assert_resident(const char *path, const char *rp_id, const uint8_t client_data_hash[32], int up, int uv,
                                  const char *pin, int timeout_ms, securotp_fido_assertion *out, size_t capacity, size_t *count,
                                  char *error);

/* A new credential on the first attached key. `cose_algorithm`: -7 ES256, -8 EdDSA, -257 RS256. */
typedef struct {
    const char *rp_id;
    const char *user_name;
    const uint8_t *user_id;
    size_t user_id_length;
    const uint8_t *client_data_hash; /* 32 bytes */
    int cose_algorithm;
    int resident;
    int uv;
    const char *pin;
} securotp_fido_credential_request;

typedef struct {
    uint8_t credential_id[1024];
    size_t credential_id_length;
    uint8_t public_key[1024];     /* raw, as pam_u2f stores it: x||y, the Ed25519 key, n||e */
    size_t public_key_length;
    char path[256];
} securotp_fido_credential;

/* Makes the credential and checks its attestation signature (x5c or self), as pamu2fcfg does. */
int securotp_fido_make_credential(const securotp_fido_credential_request *request, int timeout_ms,
                                  securotp_fido_credential *out, char *error);

#endif
