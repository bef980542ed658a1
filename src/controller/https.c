/* SPDX-License-Identifier: Apache-2.0
 *
 * libmicrohttpd server with hot-swappable TLS credentials (see https.h).
 */
#include "controller/https.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct tf_https {
    struct MHD_Daemon *d;
    tf_http_handler handler;
    void *arg;
    char *cert, *key;
    struct tf_https_opts opts;
    char bind_addr[64];
    uint16_t port;
};

/* A connection's request body buffer, kept across its keep-alive requests: kube-scheduler
 * and kube-apiserver reuse their connections, so each extender call's body (~60 KB at 5,000
 * nodes) lands in the buffer the previous one grew instead of a fresh one grown by doubling
 * and copying. A buffer grown past KEEP_BODY_CAP is freed when its request ends. */
struct conn_ctx {
    char *buf;
    size_t n, cap;
    bool too_big;
};

#define KEEP_BODY_CAP (256u << 10)

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    (void)cls;
    (void)conn;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        *socket_context = calloc(1, sizeof(struct conn_ctx)); /* NULL: its requests fail */
    } else if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        struct conn_ctx *ctx = *socket_context;
        if (ctx)
            free(ctx->buf);
        free(ctx);
        *socket_context = NULL;
    }
}

const char *tf_http_query(const struct tf_http_req *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *tf_http_header(const struct tf_http_req *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, key);
}

static enum MHD_Result send_simple(struct MHD_Connection *conn, unsigned status, const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/plain");
    enum MHD_Result ok = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    struct tf_https *s = cls;
    struct conn_ctx *ctx = *con_cls;
    if (!ctx) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        if (!ci || !(ctx = ci->socket_context))
            return MHD_NO;
        ctx->n = 0;
        ctx->too_big = false;
        *con_cls = ctx;
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (ctx->too_big || ctx->n + n + 1 > s->opts.max_body) {
            ctx->too_big = true;
            return MHD_YES; /* keep reading, answer 413 at the end */
        }
        if (ctx->n + n + 1 > ctx->cap) {
            size_t cap = ctx->cap ? ctx->cap : 8192;
            while (cap < ctx->n + n + 1)
                cap *= 2;
            char *p = realloc(ctx->buf, cap);
            if (!p)
                return MHD_NO;
            ctx->buf = p;
            ctx->cap = cap;
        }
        memcpy(ctx->buf + ctx->n, upload_data, n);
        ctx->n += n;
        ctx->buf[ctx->n] = '\0';
        return MHD_YES;
    }
    if (ctx->too_big)
        return send_simple(conn, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large\n");
    struct tf_http_req req = {.method = method,
                              .path = url,
                              .body = ctx->n ? ctx->buf : "",
                              .body_len = ctx->n,
                              .conn = conn};
    struct tf_http_resp resp = {.status = 200, .body = NULL, .content_type = NULL};
    s->handler(&req, &resp, s->arg);
    size_t len = resp.body ? strlen(resp.body) : 0;
    struct MHD_Response *r =
        resp.body          ? MHD_create_response_from_buffer(len, resp.body, MHD_RESPMEM_MUST_FREE)
        : resp.static_body ? MHD_create_response_from_buffer(
                                 resp.static_len, (void *)resp.static_body, MHD_RESPMEM_PERSISTENT)
                           : MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(resp.body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type",
                            resp.content_type ? resp.content_type : "application/json");
    for (size_t i = 0; i + 1 < sizeof(resp.headers) / sizeof(resp.headers[0]) && resp.headers[i];
         i += 2)
        MHD_add_response_header(r, resp.headers[i], resp.headers[i + 1]);
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)resp.status, r);
    MHD_destroy_response(r);
    return ok;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct conn_ctx *ctx = *con_cls; /* the connection's: freed when it closes */
    if (ctx && ctx->cap > KEEP_BODY_CAP) {
        free(ctx->buf);
        ctx->buf = NULL;
        ctx->cap = 0;
    }
    if (ctx)
        ctx->n = 0;
    *con_cls = NULL;
}

static struct MHD_Daemon *start_daemon(struct tf_https *s, int listen_fd, char *err, size_t errlen)
{
    unsigned flags =
        MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (s->cert)
        flags |= MHD_USE_TLS;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, s->bind_addr, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons(s->opts.port);
    } else if (inet_pton(AF_INET6, s->bind_addr, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(s->opts.port);
        flags |= MHD_USE_IPv6;
    } else {
        tf_errf(err, errlen, "bind address \"%s\" is not an IP literal", s->bind_addr);
        return NULL;
    }
    struct MHD_OptionItem ops[12];
    int n = 0;
    if (s->opts.threads)
        ops[n++] =
            (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)s->opts.threads, NULL};
    else
        flags |= MHD_USE_THREAD_PER_CONNECTION;
    ops[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, NULL};
    ops[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, NULL};
    ops[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, 60, NULL};
    ops[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, 1024, NULL};
    if (listen_fd >= 0)
        ops[n++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL};
    else
        ops[n++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &ss};
    if (s->cert) {
        ops[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, s->cert};
        ops[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, s->key};
        ops[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
                                           (void *)"NORMAL:-VERS-TLS1.0:-VERS-TLS1.1"};
    }
    ops[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    struct MHD_Daemon *d = MHD_start_daemon(flags, s->opts.port, NULL, NULL, on_request, s,
                                            MHD_OPTION_ARRAY, ops, MHD_OPTION_END);
    if (!d)
        tf_errf(err, errlen,
                "cannot start HTTP%s server on %s:%u (port in use, or bad "
                "certificate)",
                s->cert ? "S" : "", s->bind_addr, s->opts.port);
    return d;
}

struct tf_https *tf_https_start(const struct tf_https_opts *opts, tf_http_handler handler,
                                void *arg, char *err, size_t errlen)
{
    struct tf_https *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->opts = *opts;
    tf_strlcpy(s->bind_addr, opts->bind_addr ? opts->bind_addr : "127.0.0.1", sizeof(s->bind_addr));
    s->opts.bind_addr = s->bind_addr;
    if (!s->opts.max_body)
        s->opts.max_body = 4u << 20;
    s->handler = handler;
    s->arg = arg;
    if (opts->cert_pem) {
        s->cert = strdup(opts->cert_pem);
        s->key = opts->key_pem ? strdup(opts->key_pem) : NULL;
        if (!s->cert || !s->key) {
            tf_errf(err, errlen, "TLS needs both a certificate and a key");
            tf_https_destroy(s);
            return NULL;
        }
    }
    s->d = start_daemon(s, -1, err, errlen);
    if (!s->d) {
        tf_https_destroy(s);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : opts->port;
    s->opts.port = s->port;
    return s;
}

uint16_t tf_https_port(const struct tf_https *s)
{
    return s->port;
}

int tf_https_reload(struct tf_https *s, const char *cert_pem, const char *key_pem, char *err,
                    size_t errlen)
{
    if (!s->cert) {
        tf_errf(err, errlen, "server was started without TLS");
        return TF_ESTATE;
    }
    /* Validate the pair first: a daemon that fails to start would close the handed-over
     * listening socket, so only known-good credentials may reach start_daemon. */
    gnutls_certificate_credentials_t cred;
    int grc = gnutls_certificate_allocate_credentials(&cred);
    if (grc == 0) {
        gnutls_datum_t c = {(unsigned char *)cert_pem, (unsigned)strlen(cert_pem)};
        gnutls_datum_t k = {(unsigned char *)key_pem, (unsigned)strlen(key_pem)};
        grc = gnutls_certificate_set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM);
        gnutls_certificate_free_credentials(cred);
    }
    if (grc < 0) {
        tf_errf(err, errlen, "new certificate rejected: %s", gnutls_strerror(grc));
        return TF_EINVAL;
    }
    char *nc = strdup(cert_pem), *nk = strdup(key_pem);
    if (!nc || !nk) {
        free(nc);
        free(nk);
        return TF_ENOMEM;
    }
    char *oc = s->cert, *ok = s->key;
    struct MHD_Daemon *old = s->d;
    MHD_socket fd = MHD_quiesce_daemon(old);
    if (fd == MHD_INVALID_SOCKET) {
        free(nc);
        free(nk);
        tf_errf(err, errlen, "cannot hand over the listening socket");
        return TF_EIO;
    }
    s->cert = nc;
    s->key = nk;
    struct MHD_Daemon *d = start_daemon(s, fd, err, errlen);
    if (!d) {
        /* Cannot happen with validated credentials short of resource exhaustion; the old
         * daemon keeps its in-flight requests, new connections are refused until restart. */
        tf_log(TF_LOG_ERROR, "https", "cannot restart server after reload port=%u", s->port);
        free(oc);
        free(ok);
        MHD_stop_daemon(old);
        s->d = NULL;
        return TF_EIO;
    }
    s->d = d;
    MHD_stop_daemon(old); /* waits for in-flight requests on the old credentials */
    free(oc);
    free(ok);
    tf_log(TF_LOG_INFO, "https", "certificate reloaded port=%u", s->port);
    return 0;
}

void tf_https_destroy(struct tf_https *s)
{
    if (!s)
        return;
    if (s->d)
        MHD_stop_daemon(s->d);
    free(s->cert);
    free(s->key);
    free(s);
}
