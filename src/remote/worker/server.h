/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker's transport: the listening socket, one thread per client connection, the HELLO
 * handshake with token authentication (before anything else is read), frame reading with the
 * protocol's bounds, serialised frame sending, keepalive events while a connection waits on
 * the driver, and shutdown.
 *
 * Unauthenticated peers: a connection is "pending" until its HELLO carried the token. The
 * whole HELLO must arrive within hello_timeout_ms of the accept (a deadline, not a per-read
 * timeout, and at most a HELLO's size is buffered); at most max_pending connections are
 * pending at once, and a new one makes room by dropping the oldest pending one; pending
 * connections never count against max_clients, which only authenticated clients fill. What a
 * connection does after the handshake is the handler's business (session.c executes CUDA calls;
 * tests plug in their own). Private to the worker.
 *
 * Threads: tf_server_start spawns an accept thread and a keepalive ticker; each accepted
 * connection runs on its own detached thread. A connection's reads and its handler run only
 * on that thread; tf_wconn_send_frame may be called from any thread (it takes the connection's
 * send lock). tf_server_destroy may be called from one thread, once.
 */
#ifndef TF_REMOTE_WORKER_SERVER_H
#define TF_REMOTE_WORKER_SERVER_H

#include "remote/buf.h"
#include "remote/codec.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct tf_server;

/* One client connection. Owned by the server; valid during the handler's serve() call. */
struct tf_wconn {
    int fd;
    uint64_t id;         /* connection number, for logs */
    char peer[128];      /* "tcp://1.2.3.4:5678" or "unix" */
    uint32_t pid;        /* client pid from HELLO */
    int64_t accepted_ns; /* CLOCK_MONOTONIC ns of the accept: the handshake's deadline base */
    int authed;          /* past the token check (under the server lock) */
    int evicted;         /* dropped from the pending set to make room (under the lock) */
    int pins;            /* the keepalive ticker is using it outside the lock (under the lock) */
    pthread_mutex_t send_lock;
    struct tf_buf rx; /* received bytes not yet consumed: [rx_off, rx.len) */
    size_t rx_off;
    struct tf_buf payload;         /* payload of the frame just read */
    _Atomic int64_t wait_since_ns; /* CLOCK_MONOTONIC ns a driver wait began; 0: none */
    struct tf_server *srv;
    struct tf_wconn *next, *prev; /* the server's list, under its lock */
};

struct tf_server_config {
    const char *listen;   /* tcp://host:port (port 0: any) or unix:///path */
    const uint8_t *token; /* expected token, copied */
    size_t token_len;
    int max_clients;      /* authenticated connections; 0: 64 */
    int max_pending;      /* connections in their handshake; 0: 16 */
    int hello_timeout_ms; /* the whole HELLO must arrive within this of the accept; 0: 3000 */
    int keepalive_ms;     /* KEEPALIVE period during driver waits; 0: 1000 */
    int send_timeout_ms;  /* a client not reading for this long is dropped; 0: 60000 */
    int spin_us;          /* polls this long for a client's next frame before sleeping (see
                           * tf_net_recv_spin); 0: TF_NET_SPIN_US, negative: never */
};

struct tf_server_handler {
    /* Fills the HELLO reply of an authenticated client (status, ndev, ... and the device
     * records in TAIL). Non-zero: the connection is refused. */
    int (*hello)(void *arg, struct tf_msg_hello_rep *rep, struct tf_buf *tail);
    /* Serves the connection until it ends; frees everything it set up before returning. */
    void (*serve)(void *arg, struct tf_wconn *c);
    void *arg;
};

/* Listens and starts serving. *OUT is owned by the caller (tf_server_destroy). */
int tf_server_start(const struct tf_server_config *cfg, const struct tf_server_handler *h,
                    struct tf_server **out, char *err, size_t errlen);
/* The bound address ("tcp://127.0.0.1:41234"); valid until destroy. */
const char *tf_server_address(const struct tf_server *s);
/* Connections currently being served. Thread-safe. */
int tf_server_clients(struct tf_server *s);
/* Pending connections dropped so far to make room for new ones. Thread-safe. */
uint64_t tf_server_evictions(struct tf_server *s);
/* Connections whose threads are still alive (pending, serving or on their way out). */
int tf_server_connections(struct tf_server *s);
/* Stops accepting, shuts every connection down (their serve() sees end of stream and
 * returns), waits for all threads and frees S. NULL is fine. */
void tf_server_destroy(struct tf_server *s);

/* Reads the next frame into *H and C->payload (header checked as a client request; payload at
 * most TF_PROTO_MAX_PAYLOAD). 0; TF_EIO when the peer closed or the link failed; TF_EPROTO
 * or TF_ESTATE (version) with *WHY set for a malformed frame; TF_ETIMEDOUT. */
int tf_wconn_read_frame(struct tf_wconn *c, struct tf_msg_frame_hdr *h, const char **why);
/* The same in two steps: the checked header, then LENGTH bytes of body into DST (buffered
 * bytes first, the rest straight from the socket). */
int tf_wconn_read_header(struct tf_wconn *c, struct tf_msg_frame_hdr *h, const char **why);
int tf_wconn_read_body(struct tf_wconn *c, void *dst, size_t n);
/* Sends one frame whose payload is A (ALEN bytes) followed by B (BLEN bytes). Thread-safe. */
int tf_wconn_send_frame(struct tf_wconn *c, uint16_t op, uint32_t flags, uint64_t req_id,
                        const void *a, size_t alen, const void *b, size_t blen);
/* Best-effort CLOSE event before the connection is dropped. */
void tf_wconn_send_close(struct tf_wconn *c, uint32_t reason, const char *msg);
/* Brackets a driver call that may block for long (synchronize, copies) or a stretch of
 * throttled launches: keepalive events flow to the client once the wait is older than the
 * keepalive period, so it can tell a busy worker from a dead one. A begin while a wait is
 * already in progress keeps the earlier start; an end closes it. */
void tf_wconn_wait_begin(struct tf_wconn *c);
void tf_wconn_wait_end(struct tf_wconn *c);

#endif
