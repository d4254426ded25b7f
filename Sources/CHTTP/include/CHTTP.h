#ifndef SECUROTP_CHTTP_H
#define SECUROTP_CHTTP_H
#include <stddef.h>
#include <stdint.h>

/* One HTTP(S) request to a securotp validator, through libcurl loaded with dlopen() on first
   use: processes that never ask a validator (the PAM module in local mode, every sudo and ssh
   login on such hosts) never load libcurl and its dependencies.

   Hardening: TLS 1.2 or newer with peer and host verification always on, no redirects, no
   proxies from the environment, only http and https, a response size cap, timeouts, no
   signals. The host name is resolved here with getaddrinfo() and handed to libcurl, so
   libcurl starts no resolver thread that could outlive the call. */

typedef struct {
    const char *method;          /* "GET", "POST", "PUT", "PATCH", "DELETE" */
    const char *url;             /* https://host:port/path, http://127.0.0.1:port/path, or
                                    unix:/path/to/socket followed by the path after a space:
                                    "unix:/run/securotp/securotpd.sock /v1/verify" */
    const char *bearer;          /* credential for Authorization: Bearer, or NULL */
    const char *ca_file;         /* PEM CA bundle, or NULL for the system's */
    const char *client_cert;     /* PEM client certificate for mutual TLS, or NULL */
    const char *client_key;      /* its key, or NULL */
    const uint8_t *body;         /* request body (JSON), or NULL */
    size_t body_length;
    long timeout_ms;             /* whole request, connection included */
    size_t max_response;         /* largest body accepted; 0: SECUROTP_HTTP_MAX_RESPONSE */
} securotp_http_request;

typedef struct {
    long status;                 /* HTTP status, 0 when no answer came */
    uint8_t *body;               /* malloc'd; release with securotp_http_response_free */
    size_t body_length;
    char error[256];             /* why no answer came (transport, TLS, timeout) */
} securotp_http_response;

/* securotp_http_perform could not connect: nothing was sent, so trying again cannot make the
   validator act twice (a validator that restarts has its port closed for a moment). */
enum { SECUROTP_HTTP_NOT_CONNECTED = 2 };

/* 0 when an HTTP answer came (whatever its status); SECUROTP_HTTP_NOT_CONNECTED when no
   connection was made; another nonzero value for other failures. `error` says why. */
int securotp_http_perform(const securotp_http_request *request, securotp_http_response *response);

/* Wipes and frees the body. */
void securotp_http_response_free(securotp_http_response *response);

/* Largest response body accepted unless a request says otherwise (the PAM module never does). */
enum { SECUROTP_HTTP_MAX_RESPONSE = 1 << 20 };
#endif
