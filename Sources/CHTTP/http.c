#include "CHTTP.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* The libcurl functions used, looked up once. */
static struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    int loaded;
    char error[200];
} curl;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void load_curl(void) {
    void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(curl.error, sizeof curl.error, "cannot load libcurl.so.4 (install libcurl4): %s", dlerror());
        return;
    }
#define LOOKUP(field, symbol)                                                                    \
    if (!(*(void **)&curl.field = dlsym(library, symbol))) {                                    \
        snprintf(curl.error, sizeof curl.error, "libcurl.so.4 lacks %s", symbol);              \
        return;                                                                                  \
    }
    LOOKUP(global_init, "curl_global_init")
    LOOKUP(easy_init, "curl_easy_init")
    LOOKUP(easy_setopt, "curl_easy_setopt")
    LOOKUP(easy_perform, "curl_easy_perform")
    LOOKUP(easy_getinfo, "curl_easy_getinfo")
    LOOKUP(easy_cleanup, "curl_easy_cleanup")
    LOOKUP(easy_strerror, "curl_easy_strerror")
    LOOKUP(slist_append, "curl_slist_append")
    LOOKUP(slist_free_all, "curl_slist_free_all")
#undef LOOKUP
    /* Never dlclose'd: the module stays loaded (-z nodelete) and so does libcurl. */
    if (curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(curl.error, sizeof curl.error, "curl_global_init failed");
        return;
    }
    curl.loaded = 1;
}

typedef struct {
    uint8_t *data;
    size_t length;
    size_t capacity;
    size_t limit;
    int too_large;
} buffer;

/* Appends a chunk, growing the buffer by doubling (a copy per doubling, not per chunk: a
   large answer, such as an audit listing, stays linear); the old buffer is wiped. */
static size_t collect(char *chunk, size_t size, size_t count, void *context) {
    buffer *out = context;
    size_t length = size * count;
    if (length > out->limit || out->length > out->limit - length) {
        out->too_large = 1;
        return 0; /* aborts the transfer */
    }
    if (out->length + length + 1 > out->capacity) {
        size_t capacity = out->capacity ? out->capacity : 4096;
        while (capacity < out->length + length + 1) capacity *= 2;
        uint8_t *grown = malloc(capacity);
        if (!grown) return 0;
        if (out->data) {
            memcpy(grown, out->data, out->length);
            explicit_bzero(out->data, out->length);
            free(out->data);
        }
        out->data = grown;
        out->capacity = capacity;
    }
    memcpy(out->data + out->length, chunk, length);
    out->length += length;
    out->data[out->length] = 0;
    return length;
}

/* "https://host:port/..." → host (brackets removed) and port. Returns 0 when the URL has a
   host name to resolve. */
static int split_url(const char *url, char *host, size_t host_size, int *port) {
    const char *rest;
    if (strncmp(url, "https://", 8) == 0) { rest = url + 8; *port = 443; }
    else if (strncmp(url, "http://", 7) == 0) { rest = url + 7; *port = 80; }
    else return -1;
    const char *end = rest + strcspn(rest, "/?#");
    const char *host_end;
    const char *port_start = NULL;
    if (*rest == '[') {
        const char *close = memchr(rest, ']', (size_t)(end - rest));
        if (!close) return -1;
        if ((size_t)(close - rest - 1) >= host_size) return -1;
        memcpy(host, rest + 1, (size_t)(close - rest - 1));
        host[close - rest - 1] = 0;
        if (close + 1 < end && close[1] == ':') port_start = close + 2;
        return port_start ? ((*port = atoi(port_start)) > 0 ? 1 : -1) : 1; /* literal: nothing to resolve */
    }
    const char *colon = memchr(rest, ':', (size_t)(end - rest));
    host_end = colon ? colon : end;
    if (colon) port_start = colon + 1;
    if ((size_t)(host_end - rest) >= host_size || host_end == rest) return -1;
    memcpy(host, rest, (size_t)(host_end - rest));
    host[host_end - rest] = 0;
    if (port_start) {
        *port = atoi(port_start);
        if (*port <= 0 || *port > 65535) return -1;
    }
    return 0;
}

/* The most addresses of one name handed to libcurl: enough for any dual-stack host. */
enum { MAX_ADDRESSES = 8 };

/* Resolves the URL's host in this thread and returns a CURLOPT_RESOLVE entry with every
   address it has ("host:port:[::1],127.0.0.1"), in getaddrinfo's order: libcurl then tries
   each, as it does when it resolves a name itself, so a validator listening on one family is
   reached whichever family the name lists first. `addresses` gets them for error messages. */
static int resolve(const char *url, char *entry, size_t entry_size, char *addresses, size_t addresses_size,
                   char *error, size_t error_size) {
    char host[256];
    int port = 0;
    int kind = split_url(url, host, sizeof host, &port);
    if (kind < 0) {
        snprintf(error, error_size, "unusable validator URL (expected https://HOST:PORT)");
        return -1;
    }
    if (kind > 0) return 0; /* an IPv6 literal */
    struct addrinfo hints = {0}, *found = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(host, NULL, &hints, &found);
    if (rc != 0 || !found) {
        snprintf(error, error_size, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    char list[MAX_ADDRESSES * (INET6_ADDRSTRLEN + 3)] = "";
    char seen[MAX_ADDRESSES][INET6_ADDRSTRLEN + 2];
    int count = 0;
    for (struct addrinfo *at = found; at && count < MAX_ADDRESSES; at = at->ai_next) {
        if (at->ai_family != AF_INET && at->ai_family != AF_INET6) continue;
        char address[INET6_ADDRSTRLEN];
        if (getnameinfo(at->ai_addr, at->ai_addrlen, address, sizeof address, NULL, 0, NI_NUMERICHOST) != 0) continue;
        char literal[INET6_ADDRSTRLEN + 2];
        snprintf(literal, sizeof literal, at->ai_family == AF_INET6 ? "[%s]" : "%s", address);
        int repeated = 0;
        for (int i = 0; i < count; i++) repeated |= strcmp(seen[i], literal) == 0;
        if (repeated) continue;
        snprintf(seen[count++], sizeof seen[0], "%s", literal);
        if (list[0]) strcat(list, ",");
        strcat(list, literal);
    }
    freeaddrinfo(found);
    if (count == 0) {
        snprintf(error, error_size, "cannot resolve %s: no IPv4 or IPv6 address", host);
        return -1;
    }
    snprintf(entry, entry_size, "%s:%d:%s", host, port, list);
    snprintf(addresses, addresses_size, "%s", list);
    return 0;
}

int securotp_http_perform(const securotp_http_request *request, securotp_http_response *response) {
    memset(response, 0, sizeof *response);
    pthread_once(&curl_once, load_curl);
    if (!curl.loaded) {
        snprintf(response->error, sizeof response->error, "%s", curl.error);
        return -1;
    }

    /* unix:/path/to/socket /v1/verify → the socket and http://localhost/v1/verify */
    char url[2048];
    const char *socket_path = NULL;
    char socket_buffer[512];
    if (strncmp(request->url, "unix:", 5) == 0) {
        const char *space = strchr(request->url, ' ');
        if (!space || (size_t)(space - request->url - 5) >= sizeof socket_buffer) {
            snprintf(response->error, sizeof response->error, "unusable validator address (expected unix:/PATH)");
            return -1;
        }
        memcpy(socket_buffer, request->url + 5, (size_t)(space - request->url - 5));
        socket_buffer[space - request->url - 5] = 0;
        socket_path = socket_buffer;
        snprintf(url, sizeof url, "http://localhost%s", space + 1);
    } else if (snprintf(url, sizeof url, "%s", request->url) >= (int)sizeof url) {
        snprintf(response->error, sizeof response->error, "validator URL too long");
        return -1;
    }

    char resolved[256 + 16 + MAX_ADDRESSES * (INET6_ADDRSTRLEN + 3)] = "";
    char addresses[MAX_ADDRESSES * (INET6_ADDRSTRLEN + 3)] = "";
    if (!socket_path && resolve(url, resolved, sizeof resolved, addresses, sizeof addresses,
                                response->error, sizeof response->error) != 0) return -1;

    CURL *handle = curl.easy_init();
    if (!handle) {
        snprintf(response->error, sizeof response->error, "curl_easy_init failed");
        return -1;
    }
    struct curl_slist *headers = NULL, *resolve_list = NULL;
    headers = curl.slist_append(headers, "Content-Type: application/json");
    headers = curl.slist_append(headers, "Accept: application/json");
    headers = curl.slist_append(headers, "Expect:");
    char authorization[512];
    if (request->bearer) {
        snprintf(authorization, sizeof authorization, "Authorization: Bearer %s", request->bearer);
        headers = curl.slist_append(headers, authorization);
    }
    if (resolved[0]) resolve_list = curl.slist_append(NULL, resolved);

    buffer body = {0};
    body.limit = request->max_response ? request->max_response : SECUROTP_HTTP_MAX_RESPONSE;
    char curl_error[CURL_ERROR_SIZE] = "";
    curl.easy_setopt(handle, CURLOPT_URL, url);
    curl.easy_setopt(handle, CURLOPT_CUSTOMREQUEST, request->method);
    curl.easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
    curl.easy_setopt(handle, CURLOPT_USERAGENT, "securotp");
    curl.easy_setopt(handle, CURLOPT_PROTOCOLS_STR, "http,https");
    curl.easy_setopt(handle, CURLOPT_FOLLOWLOCATION, 0L);
    curl.easy_setopt(handle, CURLOPT_NOPROXY, "*");
    curl.easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
    curl.easy_setopt(handle, CURLOPT_SSL_VERIFYPEER, 1L);
    curl.easy_setopt(handle, CURLOPT_SSL_VERIFYHOST, 2L);
    curl.easy_setopt(handle, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    curl.easy_setopt(handle, CURLOPT_TIMEOUT_MS, request->timeout_ms > 0 ? request->timeout_ms : 10000L);
    curl.easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS, request->timeout_ms > 0 ? request->timeout_ms : 10000L);
    curl.easy_setopt(handle, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)body.limit);
    curl.easy_setopt(handle, CURLOPT_WRITEFUNCTION, collect);
    curl.easy_setopt(handle, CURLOPT_WRITEDATA, &body);
    curl.easy_setopt(handle, CURLOPT_ERRORBUFFER, curl_error);
    if (resolve_list) curl.easy_setopt(handle, CURLOPT_RESOLVE, resolve_list);
    if (socket_path) curl.easy_setopt(handle, CURLOPT_UNIX_SOCKET_PATH, socket_path);
    if (request->ca_file) curl.easy_setopt(handle, CURLOPT_CAINFO, request->ca_file);
    if (request->client_cert) curl.easy_setopt(handle, CURLOPT_SSLCERT, request->client_cert);
    if (request->client_key) curl.easy_setopt(handle, CURLOPT_SSLKEY, request->client_key);
    if (request->body) {
        curl.easy_setopt(handle, CURLOPT_POSTFIELDS, (const char *)request->body);
        curl.easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)request->body_length);
    }

    CURLcode rc = curl.easy_perform(handle);
    int result = 0;
    if (rc == CURLE_OK) {
        curl.easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &response->status);
        response->body = body.data;
        response->body_length = body.length;
        body.data = NULL;
    } else {
        const char *why = body.too_large ? "validator answer too large" : curl_error[0] ? curl_error : curl.easy_strerror(rc);
        /* Which addresses were tried, when the name had several or none answered. */
        if (addresses[0] && (rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT))
            snprintf(response->error, sizeof response->error, "%.150s (addresses tried: %.90s)", why, addresses);
        else
            snprintf(response->error, sizeof response->error, "%s", why);
        result = rc == CURLE_COULDNT_CONNECT ? SECUROTP_HTTP_NOT_CONNECTED : -1;
    }
    if (body.data) {
        explicit_bzero(body.data, body.length);
        free(body.data);
    }
    explicit_bzero(authorization, sizeof authorization);
    curl.easy_cleanup(handle);
    curl.slist_free_all(headers);
    if (resolve_list) curl.slist_free_all(resolve_list);
    return result;
}

void securotp_http_response_free(securotp_http_response *response) {
    if (response->body) {
        explicit_bzero(response->body, response->body_length);
        free(response->body);
    }
    response->body = NULL;
    response->body_length = 0;
}
