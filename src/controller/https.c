/* SPDX-License-Identifier: Apache-2.0
 *
 * The controller's HTTP(S) server (see https.h): blocking sockets, one thread per connection,
 * GnuTLS sessions whose records are read ahead in one recv and written header and body
 * together in one sendmsg, the request parsed by httpparse.c.
 */
#include "controller/https.h"

#include "common/accept.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "controller/httpparse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define RX_CAP (TF_HTTP_MAX_HEAD + 4096) /* plaintext: a head and what follows it */
#define NET_CAP (18u << 10)              /* ciphertext read ahead: a full record */
#define KEEP_BODY_CAP (256u << 10)       /* a body buffer larger is freed after its request */
#define MAX_PENDING 64                   /* connections in their TLS handshake */
#define RECV_SLICE_MS 10000 /* one recv waits at most this long (or the shortest deadline) */

/* Credentials shared by the connections that started with them (swapped by reload). */
struct creds {
    gnutls_certificate_credentials_t c;
    int refs; /* under tf_https.lock */
};

struct conn {
    struct tf_https *s;
    struct conn *prev, *next; /* tf_https.conns, under its lock */
    int fd;
    bool pending; /* counted in npending (TLS handshake not done); under the lock */
    bool serving; /* counted in nserving */
    gnutls_session_t tls;
    struct creds *cr;
    double deadline; /* reads fail after this (monotonic seconds) */
    /* Ciphertext read ahead of GnuTLS (TLS only). */
    char *net;
    size_t net_off, net_len;
    /* Plaintext not yet consumed: the head being read, then what follows it. */
    char rx[RX_CAP + 1];
    size_t rx_len;
    char *body;
    size_t body_cap;
    char hb[TF_HTTP_MAX_HEAD]; /* the current request's head, out of RX's way */
    struct tf_http_head head;  /* its strings point into HB */
};

struct tf_https {
    tf_http_handler handler;
    void *arg;
    struct tf_https_opts opts;
    char bind_addr[64];
    uint16_t port;
    int lfd;
    int wake[2];
    pthread_t acceptor;
    bool acceptor_started;
    gnutls_priority_t prio;
    struct timeval rcv_slice, snd_timeout; /* every connection's socket timeouts */
    pthread_mutex_t lock;
    pthread_cond_t cond; /* nconn dropped */
    /* Under LOCK: */
    struct creds *cr; /* NULL: plain HTTP */
    struct conn *conns;
    int nconn;    /* connection threads alive */
    int npending; /* in their handshake, not evicted */
    int nserving; /* past the handshake */
    bool stopping;
};

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

const char *tf_http_query(const struct tf_http_req *req, const char *key)
{
    return tf_http_head_arg(req->conn, key);
}

const char *tf_http_header(const struct tf_http_req *req, const char *key)
{
    return tf_http_head_header(req->conn, key);
}

/* ---- credentials -------------------------------------------------------------------------- */

static int creds_new(const char *cert, const char *key, struct creds **out, char *err,
                     size_t errlen)
{
    struct creds *cr = calloc(1, sizeof(*cr));
    if (!cr)
        return TF_ENOMEM;
    int grc = gnutls_certificate_allocate_credentials(&cr->c);
    if (grc == 0) {
        gnutls_datum_t c = {(unsigned char *)cert, (unsigned)strlen(cert)};
        gnutls_datum_t k = {(unsigned char *)key, (unsigned)strlen(key)};
        grc = gnutls_certificate_set_x509_key_mem(cr->c, &c, &k, GNUTLS_X509_FMT_PEM);
        if (grc < 0)
            gnutls_certificate_free_credentials(cr->c);
    }
    if (grc < 0) {
        free(cr);
        tf_errf(err, errlen, "certificate rejected: %s", gnutls_strerror(grc));
        return TF_EINVAL;
    }
    cr->refs = 1;
    *out = cr;
    return 0;
}

/* Drops one reference (under the lock). */
static void creds_put(struct creds *cr)
{
    if (cr && --cr->refs == 0) {
        gnutls_certificate_free_credentials(cr->c);
        free(cr);
    }
}

/* ---- socket I/O with deadlines -------------------------------------------------------------- */

/* recv that waits until C->deadline (in slices: the socket's receive timeout). */
static ssize_t sock_recv(struct conn *c, void *buf, size_t n)
{
    if (mono_s() >= c->deadline) { /* (also a peer that keeps dribbling bytes) */
        errno = ETIMEDOUT;
        return -1;
    }
    for (;;) {
        ssize_t r = recv(c->fd, buf, n, 0);
        if (r >= 0)
            return r;
        if (errno == EINTR)
            continue;
        if ((errno == EAGAIN || errno == EWOULDBLOCK) && mono_s() < c->deadline)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            errno = ETIMEDOUT;
        return -1;
    }
}

/* GnuTLS's pull: whatever the socket holds is read in one recv (up to NET_CAP) and handed out
 * as GnuTLS asks for it (a record's header, then its body). */
static ssize_t tls_pull(gnutls_transport_ptr_t p, void *buf, size_t n)
{
    struct conn *c = p;
    if (c->net_off == c->net_len) {
        ssize_t r = sock_recv(c, c->net, NET_CAP);
        if (r < 0) {
            gnutls_transport_set_errno(c->tls, errno == EAGAIN ? ETIMEDOUT : errno);
            return -1;
        }
        if (r == 0)
            return 0;
        c->net_off = 0;
        c->net_len = (size_t)r;
    }
    size_t k = c->net_len - c->net_off;
    if (k > n)
        k = n;
    memcpy(buf, c->net + c->net_off, k);
    c->net_off += k;
    return (ssize_t)k;
}

/* GnuTLS's push: every record queued (corked header and body) in one sendmsg. */
static ssize_t tls_vec_push(gnutls_transport_ptr_t p, const giovec_t *iov, int n)
{
    struct conn *c = p;
    struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)n};
    ssize_t r;
    do
        r = sendmsg(c->fd, &m, MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        gnutls_transport_set_errno(c->tls, errno == EAGAIN ? ETIMEDOUT : errno);
    return r;
}

/* Plaintext from the peer: >0 bytes, 0 at its end, <0 on error or deadline. */
static ssize_t conn_read(struct conn *c, void *buf, size_t n)
{
    if (!c->tls)
        return sock_recv(c, buf, n);
    for (;;) {
        ssize_t r = gnutls_record_recv(c->tls, buf, n);
        if (r >= 0)
            return r;
        if (r == GNUTLS_E_INTERRUPTED)
            continue;
        if (r == GNUTLS_E_PREMATURE_TERMINATION)
            return 0;
        return -1;
    }
}

/* Sends the IOV's N spans whole: over TLS corked into as few records and one sendmsg. */
static int conn_write(struct conn *c, struct iovec *iov, int n)
{
    if (c->tls) {
        gnutls_record_cork(c->tls);
        for (int i = 0; i < n; i++) {
            const char *p = iov[i].iov_base;
            size_t left = iov[i].iov_len;
            while (left) {
                ssize_t r = gnutls_record_send(c->tls, p, left);
                if (r == GNUTLS_E_INTERRUPTED || r == GNUTLS_E_AGAIN)
                    continue;
                if (r < 0)
                    return -1;
                p += r;
                left -= (size_t)r;
            }
        }
        int r;
        do
            r = gnutls_record_uncork(c->tls, GNUTLS_RECORD_WAIT);
        while (r == GNUTLS_E_INTERRUPTED || r == GNUTLS_E_AGAIN);
        return r < 0 ? -1 : 0;
    }
    while (n > 0) {
        struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t r = sendmsg(c->fd, &m, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        while (n > 0 && (size_t)r >= iov->iov_len) {
            r -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + r;
            iov->iov_len -= (size_t)r;
        }
    }
    return 0;
}

/* ---- responses ------------------------------------------------------------------------------ */

static const char *reason(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 411:
        return "Length Required";
    case 413:
        return "Content Too Large";
    case 417:
        return "Expectation Failed";
    case 422:
        return "Unprocessable Content";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return status < 300   ? "OK"
               : status < 400 ? "Redirect"
               : status < 500 ? "Error"
                              : "Server Error";
    }
}

/* RFC 9110's IMF-fixdate, independent of the locale. */
static void http_date(char *buf, size_t len)
{
    static const char *const wd[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char *const mo[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(buf, len, "%s, %02d %s %04d %02d:%02d:%02d GMT", wd[tm.tm_wday % 7], tm.tm_mday,
             mo[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* Writes one answer. HEAD answers carry the length of the body they leave out; 1xx, 204 and
 * 304 carry neither. */
static int respond(struct conn *c, int status, const char *ctype, const char *const *extra,
                   size_t nextra, const void *body, size_t len, bool head_only, bool keep_alive,
                   int minor)
{
    char hd[4096], date[40];
    http_date(date, sizeof(date));
    int n =
        snprintf(hd, sizeof(hd), "HTTP/1.1 %d %s\r\nDate: %s\r\n", status, reason(status), date);
    bool bodiless = status < 200 || status == 204 || status == 304;
    if (!bodiless)
        n += snprintf(hd + n, sizeof(hd) - (size_t)n, "Content-Type: %s\r\nContent-Length: %zu\r\n",
                      ctype, len);
    for (size_t i = 0; i + 1 < nextra && extra[i]; i += 2)
        if ((size_t)n < sizeof(hd))
            n += snprintf(hd + n, sizeof(hd) - (size_t)n, "%s: %s\r\n", extra[i], extra[i + 1]);
    if ((size_t)n < sizeof(hd))
        n += snprintf(hd + n, sizeof(hd) - (size_t)n, "%s\r\n",
                      !keep_alive  ? "Connection: close\r\n"
                      : minor == 0 ? "Connection: keep-alive\r\n"
                                   : "");
    if ((size_t)n >= sizeof(hd)) {
        tf_log(TF_LOG_ERROR, "https", "response headers over %zu bytes", sizeof(hd));
        return -1;
    }
    struct iovec iov[2] = {{hd, (size_t)n}, {(void *)body, len}};
    return conn_write(c, iov, bodiless || head_only || !len ? 1 : 2);
}

static int respond_text(struct conn *c, int status, const char *text, bool keep_alive)
{
    return respond(c, status, "text/plain", NULL, 0, text, strlen(text), false, keep_alive, 1);
}

/* ---- requests ------------------------------------------------------------------------------- */

static const char *rebase(const struct conn *c, const char *p)
{
    return p ? c->hb + (p - c->rx) : NULL;
}

/* Moves the parsed head (the first HL bytes of RX) to HB, where the body and the next request
 * read into RX cannot overwrite it. */
static void head_move(struct conn *c, size_t hl)
{
    struct tf_http_head *h = &c->head;
    memcpy(c->hb, c->rx, hl);
    h->method = rebase(c, h->method);
    h->path = rebase(c, h->path);
    for (int i = 0; i < h->nheaders; i++) {
        h->headers[i].name = rebase(c, h->headers[i].name);
        h->headers[i].value = rebase(c, h->headers[i].value);
    }
    for (int i = 0; i < h->nargs; i++) {
        h->args[i].name = rebase(c, h->args[i].name);
        h->args[i].value = rebase(c, h->args[i].value);
    }
}

/* Reads until RX holds a complete head: its length, 0 when the peer closed (or idled out)
 * between requests, or the negated status to refuse it with (-1: the connection broke). */
static int read_head(struct conn *c)
{
    size_t scanned = 0;
    c->deadline = mono_s() + c->s->opts.idle_ms / 1000.0;
    for (;;) {
        if (c->rx_len) {
            size_t from = scanned > 3 ? scanned - 3 : 0;
            if (memmem(c->rx + from, c->rx_len - from, "\r\n\r\n", 4) ||
                c->rx_len >= TF_HTTP_MAX_HEAD) {
                int hl = tf_http_parse_head(c->rx, c->rx_len, &c->head);
                if (hl > 0)
                    head_move(c, (size_t)hl);
                if (hl != 0)
                    return hl;
                /* (an empty line before the request line was skipped: read on) */
            }
            scanned = c->rx_len;
        }
        if (c->rx_len == RX_CAP)
            return -431;
        ssize_t r = conn_read(c, c->rx + c->rx_len, RX_CAP - c->rx_len);
        if (r <= 0)
            return c->rx_len ? -1 : 0;
        if (!c->rx_len)
            c->deadline = mono_s() + c->s->opts.request_ms / 1000.0; /* the request started */
        c->rx_len += (size_t)r;
    }
}

/* Drops the first N bytes of RX. */
static void rx_consume(struct conn *c, size_t n)
{
    memmove(c->rx, c->rx + n, c->rx_len - n);
    c->rx_len -= n;
}

static int body_reserve(struct conn *c, size_t need)
{
    if (need <= c->body_cap)
        return 0;
    size_t cap = c->body_cap ? c->body_cap : 8192;
    while (cap < need)
        cap *= 2;
    char *p = realloc(c->body, cap);
    if (!p)
        return -1;
    c->body = p;
    c->body_cap = cap;
    return 0;
}

/* Reads a Content-Length body of LEN bytes (after the head, HL bytes of RX): into the body
 * buffer, or discarded when DISCARD. 0, or -1 when the connection broke. */
static int read_sized_body(struct conn *c, size_t hl, size_t len, bool discard)
{
    size_t have = c->rx_len - hl < len ? c->rx_len - hl : len;
    if (!discard)
        memcpy(c->body, c->rx + hl, have);
    rx_consume(c, hl + have);
    while (have < len) {
        char scratch[16384];
        char *dst = discard ? scratch : c->body + have;
        size_t want = len - have;
        if (discard && want > sizeof(scratch))
            want = sizeof(scratch);
        ssize_t r = conn_read(c, dst, want);
        if (r <= 0)
            return -1;
        have += (size_t)r;
    }
    return 0;
}

/* Reads a chunked body (after the head, HL bytes of RX) into the body buffer: its length, -413
 * when it grew past the limit, -400 on bad framing, -1 when the connection broke. */
static ssize_t read_chunked_body(struct conn *c, size_t hl)
{
    struct tf_http_chunked ch = {0};
    size_t n = 0, max = c->s->opts.max_body;
    bool too_big = false;
    rx_consume(c, hl);
    for (;;) {
        size_t used = 0;
        while (used < c->rx_len) {
            size_t u;
            const char *d;
            size_t dl;
            int rc = tf_http_chunked_step(&ch, c->rx + used, c->rx_len - used, &u, &d, &dl);
            used += u;
            if (rc < 0)
                return -400;
            if (dl && !too_big) {
                if (n + dl + 1 > max || body_reserve(c, n + dl + 1)) {
                    too_big = true;
                } else {
                    memcpy(c->body + n, d, dl);
                    n += dl;
                }
            }
            if (rc == 1) {
                rx_consume(c, used);
                return too_big ? -413 : (ssize_t)n;
            }
        }
        c->rx_len = 0;
        ssize_t r = conn_read(c, c->rx, RX_CAP);
        if (r <= 0)
            return -1;
        c->rx_len = (size_t)r;
    }
}

/* Serves the requests of one connection until it closes. */
static void serve(struct conn *c)
{
    struct tf_https *s = c->s;
    for (;;) {
        int hl = read_head(c);
        if (hl == 0 || hl == -1)
            return;
        if (hl < 0) {
            respond_text(c, -hl, "malformed request\n", false);
            return;
        }
        struct tf_http_head *h = &c->head;
        bool keep = h->keep_alive, head_only = strcmp(h->method, "HEAD") == 0;
        size_t body_len = 0;
        int refuse = 0;
        if (h->chunked) {
            if (h->expect_100 && respond(c, 100, NULL, NULL, 0, NULL, 0, false, true, 1))
                return;
            ssize_t n = read_chunked_body(c, (size_t)hl);
            if (n == -1)
                return;
            if (n < 0) {
                refuse = (int)-n;
                keep = keep && n == -413;
            } else {
                body_len = (size_t)n;
            }
        } else if (h->length > 0) {
            uint64_t len = (uint64_t)h->length;
            if (len + 1 > s->opts.max_body) {
                refuse = 413;
                /* Read and drop a body up to 8x the limit so the connection stays usable;
                 * a larger one (or one the peer waits to send) ends it. */
                if (h->expect_100 || len > 8 * (uint64_t)s->opts.max_body ||
                    read_sized_body(c, (size_t)hl, (size_t)len, true))
                    keep = false;
            } else {
                if (body_reserve(c, (size_t)len + 1)) {
                    respond_text(c, 500, "out of memory\n", false);
                    return;
                }
                if (h->expect_100 && respond(c, 100, NULL, NULL, 0, NULL, 0, false, true, 1))
                    return;
                if (read_sized_body(c, (size_t)hl, (size_t)len, false))
                    return;
                body_len = (size_t)len;
            }
        } else {
            rx_consume(c, (size_t)hl);
        }
        if (refuse) {
            if (respond_text(c, refuse,
                             refuse == 413 ? "request body too large\n" : "malformed body\n",
                             keep) ||
                !keep)
                return;
            continue;
        }
        if (body_reserve(c, body_len + 1)) {
            respond_text(c, 500, "out of memory\n", false);
            return;
        }
        c->body[body_len] = '\0';
        struct tf_http_req req = {
            .method = h->method, .path = h->path, .body = c->body, .body_len = body_len, .conn = h};
        struct tf_http_resp resp = {.status = 200};
        s->handler(&req, &resp, s->arg);
        const void *out = resp.body ? resp.body : resp.static_body ? resp.static_body : "";
        size_t out_len = resp.body ? strlen(resp.body) : resp.static_body ? resp.static_len : 0;
        int rc = respond(c, resp.status, resp.content_type ? resp.content_type : "application/json",
                         resp.headers, sizeof(resp.headers) / sizeof(resp.headers[0]), out, out_len,
                         head_only, keep, h->minor);
        free(resp.body);
        if (c->body_cap > KEEP_BODY_CAP) {
            free(c->body);
            c->body = NULL;
            c->body_cap = 0;
        }
        if (rc || !keep)
            return;
    }
}

/* ---- connections ---------------------------------------------------------------------------- */

static int handshake(struct conn *c)
{
    if (gnutls_init(&c->tls, GNUTLS_SERVER) < 0) {
        c->tls = NULL;
        return -1;
    }
    if (gnutls_priority_set(c->tls, c->s->prio) < 0 ||
        gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, c->cr->c) < 0)
        return -1;
    gnutls_certificate_server_set_request(c->tls, GNUTLS_CERT_IGNORE);
    gnutls_transport_set_ptr(c->tls, c);
    gnutls_transport_set_pull_function(c->tls, tls_pull);
    gnutls_transport_set_vec_push_function(c->tls, tls_vec_push);
    c->deadline = mono_s() + c->s->opts.handshake_ms / 1000.0;
    int rc;
    do
        rc = gnutls_handshake(c->tls);
    while (rc < 0 && !gnutls_error_is_fatal(rc) && mono_s() < c->deadline);
    return rc < 0 ? -1 : 0;
}

/* Leaves the handshake's pending set, if C is still in it (under the lock). */
static void unpend(struct tf_https *s, struct conn *c)
{
    if (c->pending) {
        c->pending = false;
        s->npending--;
    }
}

/* Ends an admitted connection: out of the server's counts and list, its socket closed (under
 * the lock: eviction and destroy never shut a recycled fd down), then freed. */
static void conn_drop(struct conn *c)
{
    struct tf_https *s = c->s;
    pthread_mutex_lock(&s->lock);
    unpend(s, c);
    if (c->serving)
        s->nserving--;
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    close(c->fd);
    creds_put(c->cr);
    s->nconn--;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    if (c->tls)
        gnutls_deinit(c->tls);
    free(c->net);
    free(c->body);
    free(c);
}

static void *conn_main(void *arg)
{
    struct conn *c = arg;
    struct tf_https *s = c->s;
    pthread_setname_np(pthread_self(), "tf-http");
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &s->rcv_slice, sizeof(s->rcv_slice));
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &s->snd_timeout, sizeof(s->snd_timeout));
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    bool ok = true;
    if (c->cr) {
        ok = handshake(c) == 0;
        /* Capacity is counted only now: peers that never finish a handshake hold none. */
        pthread_mutex_lock(&s->lock);
        unpend(s, c);
        if (ok && s->nserving < (int)s->opts.max_conns) {
            s->nserving++;
            c->serving = true;
        } else if (ok) {
            tf_log(TF_LOG_WARN, "https", "connection refused port=%u: %u open", s->port,
                   s->opts.max_conns);
            ok = false;
        }
        pthread_mutex_unlock(&s->lock);
    }
    if (ok) {
        serve(c);
        if (c->tls)
            gnutls_bye(c->tls, GNUTLS_SHUT_WR);
    }
    conn_drop(c);
    return NULL;
}

/* Admits one accepted connection (under the lock): false when it must be refused. Over TLS,
 * when MAX_PENDING connections are in their handshake the oldest is dropped, so peers that
 * never finish one cannot keep a real client out. */
static bool admit(struct tf_https *s, struct conn *c)
{
    int cap = (int)s->opts.max_conns;
    if (s->nconn >= cap + 2 * MAX_PENDING)
        return false;
    if (!s->cr)
        return s->nconn < cap;
    if (s->npending >= MAX_PENDING) {
        struct conn *oldest = NULL;
        for (struct conn *o = s->conns; o; o = o->next)
            if (o->pending)
                oldest = o;
        if (oldest) {
            unpend(s, oldest);
            shutdown(oldest->fd, SHUT_RDWR);
        }
    }
    c->pending = true;
    s->npending++;
    return true;
}

static void *accept_main(void *arg)
{
    struct tf_https *s = arg;
    for (;;) {
        int fd = tf_accept_next(s->lfd, s->wake[0], "https");
        if (fd < 0)
            break;
        struct conn *c = calloc(1, sizeof(*c));
        if (c && s->cr && !(c->net = malloc(NET_CAP))) {
            free(c);
            c = NULL;
        }
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->s = s;
        pthread_mutex_lock(&s->lock);
        if (s->stopping || !admit(s, c)) {
            pthread_mutex_unlock(&s->lock);
            close(fd);
            free(c->net);
            free(c);
            continue;
        }
        c->cr = s->cr;
        if (c->cr)
            c->cr->refs++;
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        s->nconn++;
        pthread_mutex_unlock(&s->lock);
        int e = tf_thread_detached(conn_main, c);
        if (e) {
            tf_log(TF_LOG_ERROR, "https", "cannot start a connection thread: %s", strerror(e));
            conn_drop(c);
        }
    }
    return NULL;
}

/* ---- the server ----------------------------------------------------------------------------- */

static int listen_on(struct tf_https *s, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    socklen_t sl;
    if (inet_pton(AF_INET, s->bind_addr, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons(s->opts.port);
        sl = sizeof(*in4);
    } else if (inet_pton(AF_INET6, s->bind_addr, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(s->opts.port);
        sl = sizeof(*in6);
    } else {
        tf_errf(err, errlen, "bind address \"%s\" is not an IP literal", s->bind_addr);
        return TF_EINVAL;
    }
    s->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (s->lfd < 0 || setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
        bind(s->lfd, (struct sockaddr *)&ss, sl) || listen(s->lfd, 1024)) {
        tf_errf(err, errlen, "cannot start HTTP%s server on %s:%u: %s", s->cr ? "S" : "",
                s->bind_addr, s->opts.port, strerror(errno));
        return TF_EIO;
    }
    sl = sizeof(ss);
    if (getsockname(s->lfd, (struct sockaddr *)&ss, &sl) == 0)
        s->port = ntohs(ss.ss_family == AF_INET ? in4->sin_port : in6->sin6_port);
    return 0;
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
    s->opts.cert_pem = s->opts.key_pem = NULL; /* not kept */
    if (!s->opts.max_body)
        s->opts.max_body = 4u << 20;
    if (!s->opts.max_conns)
        s->opts.max_conns = 1024;
    if (!s->opts.handshake_ms)
        s->opts.handshake_ms = 10000;
    if (!s->opts.request_ms)
        s->opts.request_ms = 30000;
    if (!s->opts.idle_ms)
        s->opts.idle_ms = 60000;
    if (!s->opts.send_ms)
        s->opts.send_ms = 10000;
    /* A receive waits at most the shortest deadline, which is checked between receives. */
    unsigned slice = RECV_SLICE_MS,
             dl[3] = {s->opts.handshake_ms, s->opts.request_ms, s->opts.idle_ms};
    for (int i = 0; i < 3; i++)
        slice = dl[i] < slice ? dl[i] : slice;
    s->rcv_slice = (struct timeval){slice / 1000, (slice % 1000) * 1000};
    s->snd_timeout = (struct timeval){s->opts.send_ms / 1000, (s->opts.send_ms % 1000) * 1000};
    s->handler = handler;
    s->arg = arg;
    s->lfd = s->wake[0] = s->wake[1] = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    if (opts->cert_pem || opts->key_pem) {
        if (!opts->cert_pem || !opts->key_pem) {
            tf_errf(err, errlen, "TLS needs both a certificate and a key");
            goto fail;
        }
        if (creds_new(opts->cert_pem, opts->key_pem, &s->cr, err, errlen))
            goto fail;
        if (gnutls_priority_init(&s->prio, "NORMAL:-VERS-TLS1.0:-VERS-TLS1.1", NULL) < 0) {
            tf_errf(err, errlen, "cannot set up TLS priorities");
            goto fail;
        }
    }
    if (listen_on(s, err, errlen))
        goto fail;
    if (pipe2(s->wake, O_CLOEXEC)) {
        tf_errf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    if (pthread_create(&s->acceptor, NULL, accept_main, s)) {
        tf_errf(err, errlen, "cannot start the accept thread");
        goto fail;
    }
    s->acceptor_started = true;
    return s;
fail:
    tf_https_destroy(s);
    return NULL;
}

uint16_t tf_https_port(const struct tf_https *s)
{
    return s->port;
}

int tf_https_reload(struct tf_https *s, const char *cert_pem, const char *key_pem, char *err,
                    size_t errlen)
{
    pthread_mutex_lock(&s->lock);
    bool tls = s->cr != NULL;
    pthread_mutex_unlock(&s->lock);
    if (!tls) {
        tf_errf(err, errlen, "server was started without TLS");
        return TF_ESTATE;
    }
    struct creds *cr;
    char why[256] = "";
    int rc = creds_new(cert_pem, key_pem, &cr, why, sizeof(why));
    if (rc) {
        tf_errf(err, errlen, "new %s", why[0] ? why : "certificate rejected: out of memory");
        return rc;
    }
    /* New connections take the new pair; open ones keep theirs until they close. */
    pthread_mutex_lock(&s->lock);
    struct creds *old = s->cr;
    s->cr = cr;
    creds_put(old);
    pthread_mutex_unlock(&s->lock);
    tf_log(TF_LOG_INFO, "https", "certificate reloaded port=%u", s->port);
    return 0;
}

void tf_https_destroy(struct tf_https *s)
{
    if (!s)
        return;
    if (s->acceptor_started) {
        if (write(s->wake[1], "x", 1) < 0)
            tf_log(TF_LOG_WARN, "https", "wake: %s", strerror(errno));
        pthread_join(s->acceptor, NULL);
    }
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    for (struct conn *c = s->conns; c; c = c->next)
        shutdown(c->fd, SHUT_RDWR);
    while (s->nconn > 0)
        pthread_cond_wait(&s->cond, &s->lock);
    creds_put(s->cr);
    s->cr = NULL;
    pthread_mutex_unlock(&s->lock);
    if (s->prio)
        gnutls_priority_deinit(s->prio);
    if (s->lfd >= 0)
        close(s->lfd);
    if (s->wake[0] >= 0)
        close(s->wake[0]);
    if (s->wake[1] >= 0)
        close(s->wake[1]);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}
