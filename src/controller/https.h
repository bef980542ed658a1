/* SPDX-License-Identifier: Apache-2.0
 *
 * HTTP(S) server for the webhook, the scheduler extender, the console and the controller's
 * small API: GnuTLS over blocking sockets, one thread per connection (kube-apiserver and
 * kube-scheduler keep a few keep-alive connections; a request never waits behind another
 * connection's), HTTP/1.1 parsed by httpparse.c. One handler per server sees every request
 * after its body has been read completely (Content-Length or chunked; bounded: larger bodies
 * get 413 without reaching the handler). Certificates can be replaced while serving
 * (tf_https_reload): new connections take the new pair, open ones keep theirs.
 *
 * Connections: at most MAX_CONNS past their TLS handshake (peers that never finish one hold
 * no slot: at most 64 wait in their handshake, the oldest dropped for a newer one); deadlines
 * for the handshake, each request, a kept-alive connection's idle wait and a peer that stops
 * reading (tf_https_opts). A connection past a deadline is closed.
 *
 * Threads: the handler runs on the connection's thread and must be thread-safe.
 * tf_https_reload and tf_https_destroy must not be called concurrently with each other.
 */
#ifndef TF_CONTROLLER_HTTPS_H
#define TF_CONTROLLER_HTTPS_H

#include <stddef.h>
#include <stdint.h>

struct tf_http_req {
    const char *method;
    const char *path; /* without the query string */
    const char *body; /* NUL-terminated (may be ""), BODY_LEN bytes */
    size_t body_len;
    const void *conn; /* opaque, for tf_http_query and tf_http_header */
};

/* Query argument KEY of REQ (decoded), or NULL. Borrowed, valid during the handler. */
const char *tf_http_query(const struct tf_http_req *req, const char *key);
/* Request header KEY, or NULL. */
const char *tf_http_header(const struct tf_http_req *req, const char *key);

struct tf_http_resp {
    int status;               /* default 200 */
    char *body;               /* malloc'd by the handler; the server frees it */
    const char *content_type; /* static string; default "application/json" */
    /* Instead of BODY: STATIC_LEN bytes of data that outlive the server (embedded pages). */
    const void *static_body;
    size_t static_len;
    /* Extra response headers: name, value, ... pairs of static strings, NULL-terminated. */
    const char *headers[24];
};

typedef void (*tf_http_handler)(const struct tf_http_req *req, struct tf_http_resp *resp,
                                void *arg);

struct tf_https_opts {
    const char *bind_addr; /* IPv4/IPv6 literal; default "127.0.0.1" */
    uint16_t port;         /* 0 = any free port (see tf_https_port) */
    const char *cert_pem;  /* NULL = plain HTTP */
    const char *key_pem;
    unsigned max_conns; /* open connections (past the handshake); default 1024 */
    size_t max_body;    /* default 4 MiB */
    /* Deadlines in ms (0: the default): a TLS handshake (10 s), a request from its first byte
     * to the end of its body (30 s), a kept-alive connection's wait for its next request
     * (60 s), a peer that stops reading its answer (10 s). */
    unsigned handshake_ms, request_ms, idle_ms, send_ms;
};

struct tf_https;

/* Starts serving. PEM strings are copied. NULL with a message in ERR on failure. */
struct tf_https *tf_https_start(const struct tf_https_opts *opts, tf_http_handler handler,
                                void *arg, char *err, size_t errlen);
uint16_t tf_https_port(const struct tf_https *s);
/* Swaps in a new certificate/key without dropping the listening socket. */
int tf_https_reload(struct tf_https *s, const char *cert_pem, const char *key_pem, char *err,
                    size_t errlen);
void tf_https_destroy(struct tf_https *s);

#endif
