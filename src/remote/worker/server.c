/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker transport: accept loop, per-connection threads, authenticated handshake, frame
 * I/O, keepalives, shutdown; see server.h.
 */
#include "remote/worker/server.h"

#include "common/abstime.h"
#include "common/accept.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "remote/auth.h"
#include "remote/net.h"

#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RX_CHUNK (64u * 1024u)

struct tf_server {
    struct tf_server_config cfg;
    struct tf_server_handler h;
    uint8_t token[TF_PROTO_MAX_TOKEN];
    int lfd;
    int wake[2]; /* self-pipe: wakes the accept thread on shutdown */
    char address[160];
    pthread_t accept_thr, tick_thr;
    pthread_mutex_t lock; /* guards everything below */
    pthread_cond_t cond;
    struct tf_wconn *conns; /* newest first */
    int nconn;              /* connection threads alive */
    int nserving;           /* authenticated connections (at most cfg.max_clients) */
    int npending;           /* connections in their handshake, not evicted (at most
                               cfg.max_pending) */
    uint64_t next_id;
    uint64_t evictions; /* pending connections dropped to make room */
    int stopping;
    int64_t spin_ns; /* from cfg.spin_us */
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- frame I/O ---------------------------------------------------------------------------- */

/* Makes at least N unread bytes available in c->rx (N <= RX_CHUNK). */
static int rx_fill(struct tf_wconn *c, size_t n)
{
    while (c->rx.len - c->rx_off < n) {
        if (c->rx_off > 0) {
            tf_buf_consume(&c->rx, c->rx_off);
            c->rx_off = 0;
        }
        int rc = tf_buf_reserve(&c->rx, RX_CHUNK - c->rx.len);
        if (rc)
            return rc;
        ssize_t r =
            tf_net_recv_spin(c->fd, c->rx.data + c->rx.len, RX_CHUNK - c->rx.len, c->srv->spin_ns);
        if (r < 0)
            return (int)r;
        c->rx.len += (size_t)r;
    }
    return 0;
}

int tf_wconn_read_header(struct tf_wconn *c, struct tf_msg_frame_hdr *h, const char **why)
{
    int rc = rx_fill(c, TF_PROTO_HDR_SIZE);
    if (rc)
        return rc;
    tf_msg_frame_hdr_get(c->rx.data + c->rx_off, h);
    c->rx_off += TF_PROTO_HDR_SIZE;
    return tf_proto_hdr_check(h, 0, why);
}

int tf_wconn_read_body(struct tf_wconn *c, void *dst, size_t n)
{
    uint8_t *d = dst;
    size_t have = c->rx.len - c->rx_off, take = have < n ? have : n;
    if (take)
        memcpy(d, c->rx.data + c->rx_off, take);
    c->rx_off += take;
    /* Large bodies (bulk copies) go straight to their destination. */
    return take < n ? tf_net_recv_all(c->fd, d + take, n - take) : 0;
}

int tf_wconn_read_frame(struct tf_wconn *c, struct tf_msg_frame_hdr *h, const char **why)
{
    int rc = tf_wconn_read_header(c, h, why);
    if (rc)
        return rc;
    tf_buf_reset(&c->payload);
    uint8_t *dst = tf_buf_grow(&c->payload, h->length);
    if (!dst && h->length) {
        *why = "cannot buffer the payload";
        return TF_EPROTO;
    }
    return tf_wconn_read_body(c, dst, h->length);
}

int tf_wconn_send_frame(struct tf_wconn *c, uint16_t op, uint32_t flags, uint64_t req_id,
                        const void *a, size_t alen, const void *b, size_t blen)
{
    uint8_t hdr[TF_PROTO_HDR_SIZE];
    tf_proto_hdr_put(hdr, op, flags, (uint32_t)(alen + blen), req_id);
    struct iovec iov[3] = {{hdr, sizeof(hdr)}, {(void *)a, alen}, {(void *)b, blen}};
    pthread_mutex_lock(&c->send_lock);
    int rc = tf_net_send_iov(c->fd, iov, 3);
    pthread_mutex_unlock(&c->send_lock);
    return rc;
}

void tf_wconn_send_close(struct tf_wconn *c, uint32_t reason, const char *msg)
{
    uint8_t fixed[TF_PROTO_SIZE_close_ev];
    struct tf_msg_close_ev ev = {.reason = reason};
    tf_msg_close_ev_put(fixed, &ev);
    size_t n = msg ? strlen(msg) : 0;
    if (n > TF_PROTO_MAX_CLOSE_MSG)
        n = TF_PROTO_MAX_CLOSE_MSG;
    /* The peer may be gone or hostile: never wait long for it. */
    tf_net_set_timeouts(c->fd, 0, 200);
    (void)tf_wconn_send_frame(c, TF_OP_CLOSE, 0, 0, fixed, sizeof(fixed), msg, n);
}

void tf_wconn_wait_begin(struct tf_wconn *c)
{
    int64_t none = 0; /* a wait already in progress keeps its start */
    atomic_compare_exchange_strong_explicit(&c->wait_since_ns, &none, now_ns(),
                                            memory_order_relaxed, memory_order_relaxed);
}

void tf_wconn_wait_end(struct tf_wconn *c)
{
    atomic_store_explicit(&c->wait_since_ns, 0, memory_order_relaxed);
}

/* ---- handshake ----------------------------------------------------------------------------- */

static void send_hello_status(struct tf_wconn *c, uint64_t req_id, uint32_t status)
{
    uint8_t p[TF_PROTO_SIZE_hello_rep];
    struct tf_msg_hello_rep rep = {
        .status = status, .version = TF_PROTO_VERSION, .max_payload = TF_PROTO_MAX_PAYLOAD};
    tf_msg_hello_rep_put(p, &rep);
    tf_net_set_timeouts(c->fd, 0, 200);
    (void)tf_wconn_send_frame(c, TF_OP_HELLO, TF_PROTO_F_REPLY, req_id ? req_id : 1, p, sizeof(p),
                              NULL, 0);
}

/* Reads exactly N bytes of the handshake into DST before DEADLINE (CLOCK_MONOTONIC ns), however
 * the peer dribbles them. 0, TF_EIO (closed or failed) or TF_ETIMEDOUT. */
static int hs_read(struct tf_wconn *c, void *dst, size_t n, int64_t deadline)
{
    uint8_t *d = dst;
    for (size_t got = 0; got < n;) {
        int64_t left = deadline - now_ns();
        if (left <= 0)
            return TF_ETIMEDOUT;
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        int pr = poll(&p, 1, (int)((left + 999999) / 1000000));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0)
            return TF_EIO;
        if (pr == 0)
            continue; /* the deadline check above ends it */
        ssize_t r = recv(c->fd, d + got, n - got, MSG_DONTWAIT);
        if (r == 0)
            return TF_EIO;
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                continue;
            return TF_EIO;
        }
        got += (size_t)r;
    }
    return 0;
}

/* Reads the HELLO frame (header and payload, which is at most a HELLO's fixed part and a
 * token) by DEADLINE. Returns as tf_wconn_read_frame. */
static int hs_read_hello(struct tf_wconn *c, struct tf_msg_frame_hdr *h, int64_t deadline,
                         const char **why)
{
    uint8_t hdr[TF_PROTO_HDR_SIZE];
    int rc = hs_read(c, hdr, sizeof(hdr), deadline);
    if (rc)
        return rc;
    tf_msg_frame_hdr_get(hdr, h);
    if ((rc = tf_proto_hdr_check(h, 0, why)))
        return rc;
    if (h->length > TF_PROTO_SIZE_hello_req + TF_PROTO_MAX_TOKEN) {
        *why = h->opcode == TF_OP_HELLO ? "HELLO longer than a token allows"
                                        : "first frame is not HELLO";
        return TF_EPROTO;
    }
    tf_buf_reset(&c->payload);
    uint8_t *dst = tf_buf_grow(&c->payload, h->length);
    if (!dst && h->length) {
        *why = "cannot buffer the payload";
        return TF_EPROTO;
    }
    return hs_read(c, dst, h->length, deadline);
}

/* 0 when the client presented the token (its HELLO request id in *REQ_ID): the whole HELLO
 * must arrive within cfg.hello_timeout_ms of the accept, however it is dribbled. */
static int handshake(struct tf_server *s, struct tf_wconn *c, uint64_t *req_id)
{
    struct tf_msg_frame_hdr h;
    const char *why = "?";
    int rc =
        hs_read_hello(c, &h, c->accepted_ns + (int64_t)s->cfg.hello_timeout_ms * 1000000, &why);
    if (rc == TF_ESTATE && h.opcode == TF_OP_HELLO) {
        tf_log(TF_LOG_WARN, "worker", "conn %llu from %s speaks protocol version %u, not %u",
               (unsigned long long)c->id, c->peer, h.version, TF_PROTO_VERSION);
        send_hello_status(c, h.req_id, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
        tf_wconn_send_close(c, TF_PROTO_CLOSE_VERSION, "unsupported protocol version");
        return TF_EPROTO;
    }
    if (rc == 0 && h.opcode != TF_OP_HELLO) {
        rc = TF_EPROTO;
        why = "first frame is not HELLO";
    }
    const uint8_t *tail = NULL;
    size_t tlen = 0;
    if (rc == 0)
        rc = tf_proto_req_split(h.opcode, c->payload.data, c->payload.len, &tail, &tlen, &why);
    if (rc) {
        if (rc == TF_EIO || rc == TF_ETIMEDOUT)
            tf_log(TF_LOG_WARN, "worker", "conn %llu from %s: no HELLO (%s)",
                   (unsigned long long)c->id, c->peer,
                   rc == TF_ETIMEDOUT ? "handshake deadline passed" : "closed");
        else
            tf_log(TF_LOG_WARN, "worker", "conn %llu from %s: malformed HELLO: %s",
                   (unsigned long long)c->id, c->peer, why);
        if (rc != TF_EIO)
            tf_wconn_send_close(c, TF_PROTO_CLOSE_PROTOCOL,
                                rc == TF_ETIMEDOUT ? "no HELLO in time" : why);
        return TF_EPROTO;
    }
    struct tf_msg_hello_req req;
    tf_msg_hello_req_get(c->payload.data, &req);
    c->pid = req.pid;
    if (!tf_auth_token_equal(s->token, s->cfg.token_len, tail, tlen)) {
        tf_log(TF_LOG_WARN, "worker", "conn %llu from %s (pid %u): authentication failed",
               (unsigned long long)c->id, c->peer, req.pid);
        /* Slow down guessing a little; the token space does the rest. */
        struct timespec d = {0, 50 * 1000 * 1000};
        nanosleep(&d, NULL);
        send_hello_status(c, h.req_id, CUDA_ERROR_NOT_PERMITTED);
        tf_wconn_send_close(c, TF_PROTO_CLOSE_AUTH, "authentication failed");
        return TF_EPERM;
    }
    *req_id = h.req_id;
    return 0;
}

/* The HELLO reply of an authenticated client. 0 when it was sent. */
static int hello_reply(struct tf_server *s, struct tf_wconn *c, uint64_t req_id)
{
    struct tf_msg_hello_rep rep = {0};
    struct tf_buf tailbuf;
    tf_buf_init(&tailbuf, TF_PROTO_MAX_PAYLOAD - TF_PROTO_SIZE_hello_rep);
    int rc = s->h.hello(s->h.arg, &rep, &tailbuf);
    rep.version = TF_PROTO_VERSION;
    rep.max_payload = TF_PROTO_MAX_PAYLOAD;
    if (rc) {
        tf_buf_free(&tailbuf);
        send_hello_status(c, req_id, CUDA_ERROR_NO_DEVICE);
        tf_wconn_send_close(c, TF_PROTO_CLOSE_SHUTDOWN, "worker cannot serve");
        return rc;
    }
    uint8_t fixed[TF_PROTO_SIZE_hello_rep];
    tf_msg_hello_rep_put(fixed, &rep);
    rc = tf_wconn_send_frame(c, TF_OP_HELLO, TF_PROTO_F_REPLY, req_id, fixed, sizeof(fixed),
                             tailbuf.data, tailbuf.len);
    tf_buf_free(&tailbuf);
    return rc;
}

/* ---- connection threads -------------------------------------------------------------------- */

static void conn_free(struct tf_wconn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    tf_buf_free(&c->rx);
    tf_buf_free(&c->payload);
    pthread_mutex_destroy(&c->send_lock);
    free(c);
}

/* Leaves the pending set (under the lock): authenticated, evicted or gone. */
static void unpend(struct tf_server *s, struct tf_wconn *c)
{
    if (!c->authed && !c->evicted)
        s->npending--;
}

static void *conn_main(void *arg)
{
    struct tf_wconn *c = arg;
    struct tf_server *s = c->srv;
    struct tf_net_opts o = {.rcv_timeout_ms = s->cfg.hello_timeout_ms,
                            .snd_timeout_ms = s->cfg.send_timeout_ms,
                            .sndbuf = 4 << 20,
                            .rcvbuf = 4 << 20};
    tf_net_tune(c->fd, &o);
    uint64_t req_id = 0;
    bool serving = false;
    if (handshake(s, c, &req_id) == 0) {
        /* Authenticated capacity is counted only now: peers without the token never hold a
         * client slot. */
        pthread_mutex_lock(&s->lock);
        bool busy = s->nserving >= s->cfg.max_clients;
        unpend(s, c);
        c->authed = 1;
        if (!busy)
            s->nserving++;
        pthread_mutex_unlock(&s->lock);
        if (busy) {
            tf_log(TF_LOG_WARN, "worker", "conn %llu from %s (pid %u) refused: %d clients already",
                   (unsigned long long)c->id, c->peer, c->pid, s->cfg.max_clients);
            tf_wconn_send_close(c, TF_PROTO_CLOSE_BUSY, "too many clients");
        } else {
            serving = true;
            if (hello_reply(s, c, req_id) == 0) {
                tf_net_set_timeouts(c->fd, 0, s->cfg.send_timeout_ms);
                tf_log(TF_LOG_INFO, "worker", "conn %llu from %s (pid %u) authenticated",
                       (unsigned long long)c->id, c->peer, c->pid);
                s->h.serve(s->h.arg, c);
                tf_log(TF_LOG_INFO, "worker", "conn %llu from %s (pid %u) closed",
                       (unsigned long long)c->id, c->peer, c->pid);
            }
        }
    }
    pthread_mutex_lock(&s->lock);
    if (serving)
        s->nserving--;
    unpend(s, c);
    c->authed = 1; /* (counted out of the pending set once) */
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    /* The keepalive ticker may be using C outside the lock: wait until it is done. */
    while (c->pins > 0)
        pthread_cond_wait(&s->cond, &s->lock);
    /* Close while holding the lock so destroy never shuts down a recycled fd. */
    close(c->fd);
    c->fd = -1;
    s->nconn--;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    conn_free(c);
    return NULL;
}

/* Makes room for one more connection in its handshake (under the lock): when the pending
 * budget is full the oldest pending connection is dropped, so silent or dribbling peers
 * without the token cannot keep a real client from reaching its HELLO. False when even the
 * thread budget is spent (the new connection is refused). */
static bool admit_pending(struct tf_server *s)
{
    if (s->nconn >= s->cfg.max_clients + 2 * s->cfg.max_pending)
        return false;
    if (s->npending >= s->cfg.max_pending) {
        struct tf_wconn *oldest = NULL;
        for (struct tf_wconn *c = s->conns; c; c = c->next)
            if (!c->authed && !c->evicted)
                oldest = c;
        if (oldest) {
            oldest->evicted = 1;
            s->npending--;
            s->evictions++;
            shutdown(oldest->fd, SHUT_RDWR);
            tf_log(TF_LOG_WARN, "worker",
                   "conn %llu from %s dropped: %d connections without a HELLO yet",
                   (unsigned long long)oldest->id, oldest->peer, s->cfg.max_pending);
        }
    }
    s->npending++;
    return true;
}

static void peer_name(int fd, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char h[NI_MAXHOST], p[NI_MAXSERV];
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 &&
        (ss.ss_family == AF_INET || ss.ss_family == AF_INET6) &&
        getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), p, sizeof(p),
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0)
        snprintf(buf, len, "tcp://%.64s:%.16s", h, p);
    else
        snprintf(buf, len, "unix");
}

static void *accept_main(void *arg)
{
    struct tf_server *s = arg;
    for (;;) {
        int fd = tf_accept_next(s->lfd, s->wake[0], "worker");
        if (fd < 0)
            break;
        struct tf_wconn *c = calloc(1, sizeof(*c));
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->srv = s;
        pthread_mutex_init(&c->send_lock, NULL);
        tf_buf_init(&c->rx, RX_CHUNK);
        tf_buf_init(&c->payload, TF_PROTO_MAX_PAYLOAD);
        peer_name(fd, c->peer, sizeof(c->peer));
        c->accepted_ns = now_ns();
        pthread_mutex_lock(&s->lock);
        if (s->stopping) {
            pthread_mutex_unlock(&s->lock);
            conn_free(c);
            break;
        }
        if (!admit_pending(s)) {
            pthread_mutex_unlock(&s->lock);
            tf_log(TF_LOG_WARN, "worker", "connection from %s refused: %d connections open",
                   c->peer, s->nconn);
            conn_free(c);
            continue;
        }
        c->id = ++s->next_id;
        c->next = s->conns;
        if (s->conns)
            s->conns->prev = c;
        s->conns = c;
        s->nconn++;
        pthread_mutex_unlock(&s->lock);
        int e = tf_thread_detached(conn_main, c);
        if (e) {
            tf_log(TF_LOG_ERROR, "worker", "cannot start a connection thread: %s", strerror(e));
            pthread_mutex_lock(&s->lock);
            unpend(s, c);
            if (c->prev)
                c->prev->next = c->next;
            else
                s->conns = c->next;
            if (c->next)
                c->next->prev = c->prev;
            s->nconn--;
            pthread_mutex_unlock(&s->lock);
            conn_free(c);
        }
    }
    return NULL;
}

/* Sends KEEPALIVE to every connection that has been waiting on the driver for a period. The
 * sends happen outside the server lock and never block: a client that stops reading fills
 * its own socket buffer and gets no keepalive (it has data pending anyway), while accepts and
 * every other client's keepalives go on. */
static void keepalive(struct tf_wconn *c, const uint8_t *hdr, size_t n)
{
    /* Its connection thread is inside the driver, not sending; if it is sending anyway, data
     * is flowing and no keepalive is needed. */
    if (pthread_mutex_trylock(&c->send_lock) != 0)
        return;
    struct pollfd p = {.fd = c->fd, .events = POLLOUT};
    if (poll(&p, 1, 0) == 1 && (p.revents & POLLOUT)) {
        ssize_t w = send(c->fd, hdr, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w > 0 && (size_t)w < n) {
            /* Half a frame went out: the stream is unusable. The connection ends. */
            tf_log(TF_LOG_WARN, "worker", "conn %llu: keepalive cut short, closing",
                   (unsigned long long)c->id);
            shutdown(c->fd, SHUT_RDWR);
        }
    }
    pthread_mutex_unlock(&c->send_lock);
}

static void *tick_main(void *arg)
{
    struct tf_server *s = arg;
    uint8_t hdr[TF_PROTO_HDR_SIZE];
    tf_proto_hdr_put(hdr, TF_OP_KEEPALIVE, 0, 0, 0);
    struct tf_wconn **due = NULL;
    size_t cap = 0;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        long ms = s->cfg.keepalive_ms;
        struct timespec dl = tf_abstime_ms(CLOCK_REALTIME, ms);
        pthread_cond_timedwait(&s->cond, &s->lock, &dl);
        int64_t now = now_ns();
        size_t n = 0;
        for (struct tf_wconn *c = s->conns; c && !s->stopping; c = c->next) {
            int64_t since = atomic_load_explicit(&c->wait_since_ns, memory_order_relaxed);
            if (!since || now - since < (int64_t)ms * 1000000 || c->fd < 0)
                continue;
            if (n == cap) {
                size_t ncap = cap ? 2 * cap : 16;
                struct tf_wconn **g = realloc(due, ncap * sizeof(*g));
                if (!g)
                    break;
                due = g;
                cap = ncap;
            }
            c->pins++; /* C stays (and keeps its fd) until unpinned */
            due[n++] = c;
        }
        pthread_mutex_unlock(&s->lock);
        for (size_t i = 0; i < n; i++)
            keepalive(due[i], hdr, sizeof(hdr));
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < n; i++)
            due[i]->pins--;
        if (n)
            pthread_cond_broadcast(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    free(due);
    return NULL;
}

int tf_server_start(const struct tf_server_config *cfg, const struct tf_server_handler *h,
                    struct tf_server **out, char *err, size_t errlen)
{
    if (!cfg->token || cfg->token_len == 0 || cfg->token_len > TF_PROTO_MAX_TOKEN) {
        tf_errf(err, errlen, "worker needs a token of 1..%u bytes", TF_PROTO_MAX_TOKEN);
        return TF_EINVAL;
    }
    struct tf_net_addr a;
    int rc = tf_net_addr_parse(cfg->listen, &a, err, errlen);
    if (rc)
        return rc;
    struct tf_server *s = calloc(1, sizeof(*s));
    if (!s)
        return TF_ENOMEM;
    s->cfg = *cfg;
    s->cfg.listen = NULL;
    memcpy(s->token, cfg->token, cfg->token_len);
    s->cfg.token = s->token;
    if (s->cfg.max_clients <= 0)
        s->cfg.max_clients = 64;
    if (s->cfg.max_pending <= 0)
        s->cfg.max_pending = 16;
    if (s->cfg.hello_timeout_ms <= 0)
        s->cfg.hello_timeout_ms = 3000;
    if (s->cfg.keepalive_ms <= 0)
        s->cfg.keepalive_ms = 1000;
    if (s->cfg.send_timeout_ms <= 0)
        s->cfg.send_timeout_ms = 60000;
    s->spin_ns = tf_net_spin_ns(s->cfg.spin_us == 0 ? TF_NET_SPIN_US : s->cfg.spin_us);
    s->h = *h;
    s->wake[0] = s->wake[1] = -1;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->lfd = tf_net_listen(&a, 128, s->address, sizeof(s->address), err, errlen);
    if (s->lfd < 0) {
        rc = s->lfd;
        goto fail;
    }
    if (pipe2(s->wake, O_CLOEXEC) != 0) {
        tf_errf(err, errlen, "pipe: %s", strerror(errno));
        rc = TF_EIO;
        goto fail;
    }
    if (pthread_create(&s->accept_thr, NULL, accept_main, s) != 0) {
        tf_errf(err, errlen, "cannot start the accept thread");
        rc = TF_ENOMEM;
        goto fail;
    }
    if (pthread_create(&s->tick_thr, NULL, tick_main, s) != 0) {
        tf_errf(err, errlen, "cannot start the keepalive thread");
        (void)!write(s->wake[1], "x", 1);
        pthread_join(s->accept_thr, NULL);
        rc = TF_ENOMEM;
        goto fail;
    }
    *out = s;
    return 0;
fail:
    if (s->lfd >= 0)
        close(s->lfd);
    if (s->wake[0] >= 0) {
        close(s->wake[0]);
        close(s->wake[1]);
    }
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
    return rc;
}

const char *tf_server_address(const struct tf_server *s)
{
    return s->address;
}

uint64_t tf_server_evictions(struct tf_server *s)
{
    pthread_mutex_lock(&s->lock);
    uint64_t n = s->evictions;
    pthread_mutex_unlock(&s->lock);
    return n;
}

int tf_server_connections(struct tf_server *s)
{
    pthread_mutex_lock(&s->lock);
    int n = s->nconn;
    pthread_mutex_unlock(&s->lock);
    return n;
}

int tf_server_clients(struct tf_server *s)
{
    pthread_mutex_lock(&s->lock);
    int n = s->nserving;
    pthread_mutex_unlock(&s->lock);
    return n;
}

void tf_server_destroy(struct tf_server *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    (void)!write(s->wake[1], "x", 1);
    pthread_join(s->accept_thr, NULL);
    pthread_join(s->tick_thr, NULL);
    pthread_mutex_lock(&s->lock);
    uint8_t bye[TF_PROTO_HDR_SIZE + TF_PROTO_SIZE_close_ev + 24];
    const char *why = "worker shutting down";
    struct tf_msg_close_ev ev = {.reason = TF_PROTO_CLOSE_SHUTDOWN};
    tf_proto_hdr_put(bye, TF_OP_CLOSE, 0, TF_PROTO_SIZE_close_ev + (uint32_t)strlen(why), 0);
    tf_msg_close_ev_put(bye + TF_PROTO_HDR_SIZE, &ev);
    memcpy(bye + TF_PROTO_HDR_SIZE + TF_PROTO_SIZE_close_ev, why, strlen(why));
    size_t byelen = TF_PROTO_HDR_SIZE + TF_PROTO_SIZE_close_ev + strlen(why);
    for (struct tf_wconn *c = s->conns; c; c = c->next) {
        if (c->fd < 0)
            continue;
        /* Tell clients between frames why they are losing the GPU; never wait for them. */
        if (pthread_mutex_trylock(&c->send_lock) == 0) {
            (void)!send(c->fd, bye, byelen, MSG_DONTWAIT | MSG_NOSIGNAL);
            pthread_mutex_unlock(&c->send_lock);
        }
        shutdown(c->fd, SHUT_RDWR);
    }
    while (s->nconn > 0)
        pthread_cond_wait(&s->cond, &s->lock);
    pthread_mutex_unlock(&s->lock);
    close(s->lfd);
    close(s->wake[0]);
    close(s->wake[1]);
    if (strncmp(s->address, "unix://", 7) == 0)
        unlink(s->address + 7);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    free(s);
}
