/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker's transport without a GPU: handshake and token check, loopback ping-pong over TCP
 * and unix sockets, malformed and hostile frames (closing that connection only), slow or
 * silent clients, client limits and keepalives during long waits, and the polling receive
 * that both ends use while they wait for an answer. The session handler here
 * is a stand-in that answers FLUSH and simulates a long driver wait on CTX_SYNC.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>

#include "common/err.h"
#include "common/log.h"
#include "rawconn.h"
#include "remote/net.h"
#include "remote/worker/server.h"

#define TOKEN "test-token-0123456789"
#define STALL 0xee    /* CTX_SYNC of this context: the stalled-client scenario */
#define STALL_MS 4000 /* how long its session then waits on the "driver" */

static int hello_cb(void *arg, struct tf_msg_hello_rep *rep, struct tf_buf *tail)
{
    (void)arg;
    (void)tail;
    rep->status = CUDA_SUCCESS;
    rep->ndev = 0;
    return 0;
}

/* Echo session: FLUSH -> status 0; CTX_SYNC -> a 600 ms "driver wait", status 0; BATCH ->
 * counted. Malformed frames end the session like the real one. */
static void serve_cb(void *arg, struct tf_wconn *c)
{
    (void)arg;
    for (;;) {
        struct tf_msg_frame_hdr h;
        const char *why = NULL;
        int rc = tf_wconn_read_frame(c, &h, &why);
        if (rc == TF_EIO)
            return;
        if (rc == 0 && h.opcode == TF_OP_BATCH) {
            struct tf_proto_batch_iter it;
            uint16_t op;
            const uint8_t *b;
            size_t n;
            tf_proto_batch_begin(&it, c->payload.data, c->payload.len);
            while ((rc = tf_proto_batch_next(&it, &op, &b, &n, &why)) == 1)
                ;
        } else if (rc == 0) {
            const uint8_t *tail;
            size_t tl;
            rc = tf_proto_req_split(h.opcode, c->payload.data, c->payload.len, &tail, &tl, &why);
            if (rc == 0 && h.opcode == TF_OP_CALL && c->payload.data[0] == STALL) {
                /* A client that stopped reading: its socket fills up, then its session waits
                 * on the "driver" (keepalives due) for STALL_MS. */
                static uint8_t junk[64 * 1024];
                while (send(c->fd, junk, sizeof(junk), MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
                    ;
                while (send(c->fd, junk, TF_PROTO_HDR_SIZE, MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
                    ;
                tf_wconn_wait_begin(c);
                struct timespec d = {STALL_MS / 1000, 0};
                nanosleep(&d, NULL);
                tf_wconn_wait_end(c);
                return;
            }
            if (rc == 0 && h.opcode == TF_OP_CALL) {
                tf_wconn_wait_begin(c);
                struct timespec d = {0, 600 * 1000 * 1000};
                nanosleep(&d, NULL);
                tf_wconn_wait_end(c);
            }
            if (rc == 0 && tf_proto_op(h.opcode)->kind == TF_PROTO_KIND_SYNC) {
                uint8_t st[4] = {0};
                rc = tf_wconn_send_frame(c, h.opcode, TF_PROTO_F_REPLY, h.req_id, st, 4, NULL, 0);
            }
        }
        if (rc) {
            tf_wconn_send_close(c, TF_PROTO_CLOSE_PROTOCOL, why ? why : "error");
            return;
        }
    }
}

struct fixture {
    struct tf_server *srv;
};

static struct tf_server *start_pending(const char *listen, int max_clients, int hello_ms,
                                       int max_pending)
{
    struct tf_server_config cfg = {.listen = listen,
                                   .token = (const uint8_t *)TOKEN,
                                   .token_len = strlen(TOKEN),
                                   .max_clients = max_clients,
                                   .max_pending = max_pending,
                                   .hello_timeout_ms = hello_ms,
                                   .keepalive_ms = 150};
    struct tf_server_handler h = {.hello = hello_cb, .serve = serve_cb};
    struct tf_server *s = NULL;
    char err[256];
    int rc = tf_server_start(&cfg, &h, &s, err, sizeof(err));
    if (rc)
        fail_msg("server: %s", err);
    return s;
}

static struct tf_server *start(const char *listen, int max_clients, int hello_ms)
{
    return start_pending(listen, max_clients, hello_ms, 0);
}

static int flush(int fd, uint64_t req)
{
    uint8_t buf[64];
    if (raw_send(fd, TF_OP_FLUSH, req, NULL, 0, NULL, 0) != 0)
        return -1;
    return raw_reply(fd, req, buf, sizeof(buf));
}

static void client_with_the_token_gets_answers_over_tcp(void **state)
{
    struct tf_server *s = start("tcp://127.0.0.1:0", 0, 0);
    assert_int_equal(strncmp(tf_server_address(s), "tcp://127.0.0.1:", 16), 0);
    int fd = raw_connect(tf_server_address(s));
    assert_true(fd >= 0);
    assert_int_equal(raw_hello(fd, TOKEN), CUDA_SUCCESS);
    for (uint64_t i = 1; i <= 200; i++)
        assert_int_equal(flush(fd, i + 1), 0);
    close(fd);
    tf_server_destroy(s);
}

static void client_with_the_token_gets_answers_over_a_unix_socket(void **state)
{
    char path[64], addr[80];
    snprintf(path, sizeof(path), "/tmp/tf-transport-%d.sock", (int)getpid());
    snprintf(addr, sizeof(addr), "unix://%s", path);
    struct tf_server *s = start(addr, 0, 0);
    int fd = raw_connect(addr);
    assert_true(fd >= 0);
    assert_int_equal(raw_hello(fd, TOKEN), CUDA_SUCCESS);
    assert_int_equal(flush(fd, 2), 0);
    close(fd);
    tf_server_destroy(s);
    assert_int_equal(access(path, F_OK), -1); /* socket file removed */
}

static void wrong_token_is_refused_and_the_connection_closed(void **state)
{
    struct tf_server *s = start("tcp://127.0.0.1:0", 0, 0);
    int fd = raw_connect(tf_server_address(s));
    assert_int_equal(raw_hello(fd, "test-token-0123456788"), CUDA_ERROR_NOT_PERMITTED);
    uint32_t reason;
    assert_true(raw_wait_closed(fd, &reason));
    assert_int_equal(reason, TF_PROTO_CLOSE_AUTH);
    close(fd);
    /* A prefix of the token is not the token either. */
    fd = raw_connect(tf_server_address(s));
    assert_int_equal(raw_hello(fd, "test-token"), CUDA_ERROR_NOT_PERMITTED);
    close(fd);
    tf_server_destroy(s);
}

static void requests_before_hello_close_the_connection(void **state)
{
    struct tf_server *s = start("tcp://127.0.0.1:0", 0, 0);
    int fd = raw_connect(tf_server_address(s));
    assert_int_equal(raw_send(fd, TF_OP_FLUSH, 1, NULL, 0, NULL, 0), 0);
    uint32_t reason;
    assert_true(raw_wait_closed(fd, &reason));
    assert_int_equal(reason, TF_PROTO_CLOSE_PROTOCOL);
    close(fd);
    tf_server_destroy(s);
}

static void malformed_frame_closes_only_that_connection(void **state)
{
    struct tf_server *s = start("tcp://127.0.0.1:0", 0, 0);
    int good = raw_connect(tf_server_address(s));
    assert_int_equal(raw_hello(good, TOKEN), CUDA_SUCCESS);
    /* Each of these is fatal for the connection that sends it. */
    static const struct {
        const char *what;
        uint8_t bytes[TF_PROTO_HDR_SIZE + 8];
        size_t len;
    } bad[] = {
        {"garbage", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27},
        {"oversized length",
         {0x54, 0x46, 0x52, 0x50, 1, 0, 0x05, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 1},
         TF_PROTO_HDR_SIZE},
        {"unknown opcode",
         {0x54, 0x46, 0x52, 0x50, 1, 0, 0x77, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 1},
         TF_PROTO_HDR_SIZE},
        {"event from a client",
         {0x54, 0x46, 0x52, 0x50, 1, 0, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0},
         TF_PROTO_HDR_SIZE},
        {"short MEM_ALLOC",
         {0x54, 0x46, 0x52, 0x50, 1, 0, 0x01, 0x02, 0, 0, 0, 0, 8, 0, 0, 0, 3},
         TF_PROTO_HDR_SIZE + 8},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int fd = raw_connect(tf_server_address(s));
        assert_int_equal(raw_hello(fd, TOKEN), CUDA_SUCCESS);
        assert_int_equal(raw_send_bytes(fd, bad[i].bytes, bad[i].len), 0);
        uint32_t reason;
        if (!raw_wait_closed(fd, &reason))
            fail_msg("%s: connection not closed", bad[i].what);
        assert_int_equal(reason, TF_PROTO_CLOSE_PROTOCOL);
        close(fd);
        /* The well-behaved client is untouched. */
        assert_int_equal(flush(good, 10 + i), 0);
    }
    close(good);
    tf_server_destroy(s);
}

static void truncated_frame_then_disconnect_frees_the_connection(void **state)
{
    struct tf_server *s = start("tcp://127.0.0.1:0", 0, 0);
    for (int i = 0; i < 20; i++) {
        int fd = raw_connect(tf_server_address(s));
        assert_int_equal(raw_hello(fd, TOKEN), CUDA_SUCCESS);
        uint8_t half[TF_PROTO_HDR_SIZE];
        tf_proto_hdr_put(half, TF_OP_BATCH, 0, 100, 0);
        assert_int_equal(raw_send_bytes(fd, half, sizeof(half) + 0), 0);
        assert_int_equal(raw_send_bytes(fd, "abc", 3), 0);
        close(fd);
    }
    for (int tries = 0; tries < 200 && tf_server_clients(s) > 0; tries++)
        usleep(10000);
    assert_int_equal(tf_server_clients(s), 0);
    tf_server_destroy(s);
}

static void silent_client_is_dropped_after_the_hello_timeout(void **state)
{
    struct tf_server *s = start("tcp://127.0.0.1:0", 0, 200);
    int fd = raw_connect(tf_server_address(s));
    uint32_t reason;
    assert_true(raw_wait_closed(fd, &reason));
    close(fd);
    tf_server_destroy(s);
}

/* HELLO with TOKEN, then the worker's verdict: 1 when it closes the connection (*REASON from
 * its CLOSE event). */
static int hello_then_closed(int fd, uint32_t *reason)
{
    uint8_t fixed[TF_PROTO_SIZE_hello_req] = {0};
    assert_int_equal(raw_send(fd, TF_OP_HELLO, 1, fixed, sizeof(fixed), TOKEN, strlen(TOKEN)), 0);
    return raw_wait_closed(fd, reason);
}

static void clients_beyond_the_limit_are_refused(void **state)
{
    struct tf_server *s = start("tcp://127.0.0.1:0", 2, 0);
    int a = raw_connect(tf_server_address(s)), b = raw_connect(tf_server_address(s));
    assert_int_equal(raw_hello(a, TOKEN), CUDA_SUCCESS);
    assert_int_equal(raw_hello(b, TOKEN), CUDA_SUCCESS);
    int c = raw_connect(tf_server_address(s));
    uint32_t reason;
    assert_true(hello_then_closed(c, &reason));
    assert_int_equal(reason, TF_PROTO_CLOSE_BUSY);
    close(c);
    close(a);
    for (int tries = 0; tries < 200 && tf_server_clients(s) > 1; tries++)
        usleep(10000);
    c = raw_connect(tf_server_address(s));
    assert_int_equal(raw_hello(c, TOKEN), CUDA_SUCCESS);
    close(b);
    close(c);
    tf_server_destroy(s);
}

static void long_driver_waits_send_keepalives(void **state)
{
    struct tf_server *s = start("tcp://127.0.0.1:0", 0, 0);
    int fd = raw_connect(tf_server_address(s));
    assert_int_equal(raw_hello(fd, TOKEN), CUDA_SUCCESS);
    uint8_t call[TF_PROTO_SIZE_call_req] = {0};
    assert_int_equal(raw_send(fd, TF_OP_CALL, 7, call, sizeof(call), NULL, 0), 0);
    int keepalives = 0;
    for (;;) {
        struct tf_msg_frame_hdr h;
        uint8_t buf[64];
        assert_int_equal(raw_recv(fd, &h, buf, sizeof(buf)), 0);
        if (h.opcode == TF_OP_KEEPALIVE) {
            keepalives++;
            continue;
        }
        assert_true(h.flags & TF_PROTO_F_REPLY);
        assert_int_equal(h.req_id, 7);
        break;
    }
    assert_true(keepalives >= 1);
    close(fd);
    tf_server_destroy(s);
}

static void wrong_protocol_version_is_answered_and_closed(void **state)
{
    struct tf_server *s = start("tcp://127.0.0.1:0", 0, 0);
    int fd = raw_connect(tf_server_address(s));
    uint8_t f[TF_PROTO_HDR_SIZE + TF_PROTO_SIZE_hello_req + 4] = {0};
    tf_proto_hdr_put(f, TF_OP_HELLO, 0, TF_PROTO_SIZE_hello_req + 4, 1);
    f[4] = 9; /* version 9 */
    memcpy(f + TF_PROTO_HDR_SIZE + TF_PROTO_SIZE_hello_req, "abcd", 4);
    assert_int_equal(raw_send_bytes(fd, f, sizeof(f)), 0);
    uint8_t buf[256];
    struct tf_msg_frame_hdr h;
    assert_int_equal(raw_recv(fd, &h, buf, sizeof(buf)), 0);
    assert_int_equal(h.opcode, TF_OP_HELLO);
    struct tf_msg_hello_rep rep;
    tf_msg_hello_rep_get(buf, &rep);
    assert_int_equal(rep.status, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
    assert_int_equal(rep.version, TF_PROTO_VERSION);
    uint32_t reason;
    assert_true(raw_wait_closed(fd, &reason));
    assert_int_equal(reason, TF_PROTO_CLOSE_VERSION);
    close(fd);
    tf_server_destroy(s);
}

struct late_write {
    int fd;
    int delay_ms;
};

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The attack: connections without the token, silent or dribbling, used to count against
 * --max-clients and to live as long as they kept sending a byte now and then, so a few of
 * them locked every real client out. Now they wait in a small pending budget of their own
 * (the oldest is dropped to make room), and the real clients get every client slot. */
static void silent_peers_without_the_token_never_lock_out_real_clients(void **state)
{
    struct tf_server *s = start_pending("tcp://127.0.0.1:0", 2, 0, 4);
    int silent[12];
    for (int i = 0; i < 12; i++)
        assert_true((silent[i] = raw_connect(tf_server_address(s))) >= 0);
    /* (some may be refused outright instead: dropped ones count against the thread budget
     * until their threads are gone, so wait for those threads too: on a loaded machine they
     * may still be on their way out after the evictions are counted) */
    for (int tries = 0; tries < 500 && (tf_server_evictions(s) < 4 || tf_server_connections(s) > 4);
         tries++)
        usleep(10000);
    assert_true(tf_server_evictions(s) >= 4);
    assert_int_equal(tf_server_connections(s), 4);
    int a = raw_connect(tf_server_address(s)), b = raw_connect(tf_server_address(s));
    assert_int_equal(raw_hello(a, TOKEN), CUDA_SUCCESS);
    assert_int_equal(raw_hello(b, TOKEN), CUDA_SUCCESS);
    assert_int_equal(flush(a, 2), 0);
    assert_int_equal(flush(b, 2), 0);
    assert_int_equal(tf_server_clients(s), 2);
    for (int i = 0; i < 12; i++)
        close(silent[i]);
    close(a);
    close(b);
    tf_server_destroy(s);
}

struct dribble {
    int fd;
    double closed_after; /* seconds from the connect to the worker's close */
};

/* Sends a valid HELLO one byte every 100 ms (3+ s in all) and notes when the worker hangs up. */
static void *dribble_main(void *arg)
{
    struct dribble *d = arg;
    uint8_t f[TF_PROTO_HDR_SIZE + TF_PROTO_SIZE_hello_req + sizeof(TOKEN) - 1] = {0};
    tf_proto_hdr_put(f, TF_OP_HELLO, 0, (uint32_t)(sizeof(f) - TF_PROTO_HDR_SIZE), 1);
    memcpy(f + TF_PROTO_HDR_SIZE + TF_PROTO_SIZE_hello_req, TOKEN, sizeof(TOKEN) - 1);
    double t0 = mono_s();
    d->closed_after = -1;
    for (size_t i = 0; i < sizeof(f); i++) {
        if (send(d->fd, f + i, 1, MSG_NOSIGNAL) != 1)
            break;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        char c;
        if (recv(d->fd, &c, 1, MSG_DONTWAIT | MSG_PEEK) >= 0 || errno != EAGAIN)
            break; /* the worker said something (CLOSE) or hung up */
    }
    uint32_t reason;
    if (raw_wait_closed(d->fd, &reason))
        d->closed_after = mono_s() - t0;
    return NULL;
}

static void dribbled_hello_is_cut_at_the_handshake_deadline(void **state)
{
    struct tf_server *s = start("tcp://127.0.0.1:0", 0, 500);
    struct dribble d = {.fd = raw_connect(tf_server_address(s))};
    pthread_t t;
    pthread_create(&t, NULL, dribble_main, &d);
    pthread_join(t, NULL);
    /* the HELLO would take > 3 s to arrive; the deadline is 0.5 s after the accept */
    assert_true(d.closed_after > 0.3);
    assert_true(d.closed_after < 2.0);
    close(d.fd);
    tf_server_destroy(s);
}

static void oversized_hello_is_refused_before_it_is_buffered(void **state)
{
    struct tf_server *s = start("tcp://127.0.0.1:0", 0, 0);
    int fd = raw_connect(tf_server_address(s));
    uint8_t f[TF_PROTO_HDR_SIZE];
    tf_proto_hdr_put(f, TF_OP_HELLO, 0, 1u << 20, 1); /* a 1 MiB "token" */
    assert_int_equal(raw_send_bytes(fd, f, sizeof(f)), 0);
    uint32_t reason;
    assert_true(raw_wait_closed(fd, &reason));
    assert_int_equal(reason, TF_PROTO_CLOSE_PROTOCOL);
    close(fd);
    tf_server_destroy(s);
}

/* The attack: a client stops reading while its session waits on the driver. The keepalive
 * sender used to block on its full socket while holding the server lock, for as long as the
 * send timeout: accepts and every other client's keepalives stopped. */
static void a_client_that_stops_reading_freezes_nobody_else(void **state)
{
    struct tf_server *s = start("tcp://127.0.0.1:0", 0, 0);
    int a = raw_connect(tf_server_address(s));
    int small = 4096;
    setsockopt(a, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    assert_int_equal(raw_hello(a, TOKEN), CUDA_SUCCESS);
    uint8_t call[TF_PROTO_SIZE_call_req] = {STALL};
    assert_int_equal(raw_send(a, TF_OP_CALL, 7, call, sizeof(call), NULL, 0), 0);
    usleep(1000 * 1000); /* A's socket is full and its session in the "driver": keepalives due */
    double t0 = mono_s();
    int b = raw_connect(tf_server_address(s));
    assert_int_equal(raw_hello(b, TOKEN), CUDA_SUCCESS);
    assert_int_equal(flush(b, 2), 0);
    /* B waits on the driver too and gets its keepalives meanwhile */
    uint8_t bcall[TF_PROTO_SIZE_call_req] = {0};
    assert_int_equal(raw_send(b, TF_OP_CALL, 9, bcall, sizeof(bcall), NULL, 0), 0);
    int keepalives = 0;
    for (;;) {
        struct tf_msg_frame_hdr h;
        uint8_t buf[64];
        assert_int_equal(raw_recv(b, &h, buf, sizeof(buf)), 0);
        if (h.opcode == TF_OP_KEEPALIVE) {
            keepalives++;
            continue;
        }
        assert_int_equal(h.req_id, 9);
        break;
    }
    assert_true(keepalives >= 1);
    assert_true(mono_s() - t0 < 2.5); /* well inside A's 4 s stall */
    close(a);
    close(b);
    tf_server_destroy(s);
}

static void *write_late(void *arg)
{
    struct late_write *w = arg;
    struct timespec d = {0, (long)w->delay_ms * 1000000};
    nanosleep(&d, NULL);
    if (write(w->fd, "late", 4) != 4)
        return (void *)1;
    return NULL;
}

static double elapsed_ms(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* tf_net_recv_spin: data already there, data arriving within the poll, data arriving only
 * after it (the receive then sleeps in the kernel and still gets it), the receive timeout
 * and end of stream all behave as with a plain receive. */
static void polling_receive_gets_data_sent_during_and_after_the_poll(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    char buf[16];
    assert_int_equal(write(sv[1], "now", 3), 3);
    assert_int_equal(tf_net_recv_spin(sv[0], buf, sizeof(buf), 1000000), 3);
    assert_memory_equal(buf, "now", 3);
    static const int delays_ms[] = {1, 60}; /* inside a 20 ms poll, and well after it */
    for (int i = 0; i < 2; i++) {
        struct late_write w = {sv[1], delays_ms[i]};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, write_late, &w), 0);
        assert_int_equal(tf_net_recv_spin(sv[0], buf, sizeof(buf), 20 * 1000000), 4);
        assert_memory_equal(buf, "late", 4);
        void *ret;
        pthread_join(th, &ret);
        assert_null(ret);
    }
    /* Nothing comes: the poll, then the receive timeout. */
    assert_int_equal(tf_net_set_timeouts(sv[0], 50, 0), 0);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(tf_net_recv_spin(sv[0], buf, sizeof(buf), 5 * 1000000), TF_ETIMEDOUT);
    assert_true(elapsed_ms(&t0) >= 50);
    close(sv[1]);
    assert_int_equal(tf_net_recv_spin(sv[0], buf, sizeof(buf), 5 * 1000000), TF_EIO);
    close(sv[0]);
}

/* No polling when this thread may run on one CPU only: it would hold off the very peer it
 * waits for. */
static void polling_is_off_on_a_single_cpu(void **state)
{
    (void)state;
    assert_int_equal(tf_net_spin_ns(0), 0);
    cpu_set_t all, one;
    assert_int_equal(sched_getaffinity(0, sizeof(all), &all), 0);
    if (CPU_COUNT(&all) >= 2)
        assert_int_equal(tf_net_spin_ns(30), 30000);
    int first = 0;
    while (!CPU_ISSET(first, &all))
        first++;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
    int64_t pinned = tf_net_spin_ns(30);
    assert_int_equal(sched_setaffinity(0, sizeof(all), &all), 0);
    assert_int_equal(pinned, 0);
}

static int quiet(void **state)
{
    (void)state;
    tf_log_set_level(TF_LOG_ERROR);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(client_with_the_token_gets_answers_over_tcp),
        cmocka_unit_test(client_with_the_token_gets_answers_over_a_unix_socket),
        cmocka_unit_test(wrong_token_is_refused_and_the_connection_closed),
        cmocka_unit_test(requests_before_hello_close_the_connection),
        cmocka_unit_test(malformed_frame_closes_only_that_connection),
        cmocka_unit_test(truncated_frame_then_disconnect_frees_the_connection),
        cmocka_unit_test(silent_client_is_dropped_after_the_hello_timeout),
        cmocka_unit_test(clients_beyond_the_limit_are_refused),
        cmocka_unit_test(silent_peers_without_the_token_never_lock_out_real_clients),
        cmocka_unit_test(dribbled_hello_is_cut_at_the_handshake_deadline),
        cmocka_unit_test(oversized_hello_is_refused_before_it_is_buffered),
        cmocka_unit_test(a_client_that_stops_reading_freezes_nobody_else),
        cmocka_unit_test(long_driver_waits_send_keepalives),
        cmocka_unit_test(wrong_protocol_version_is_answered_and_closed),
        cmocka_unit_test(polling_receive_gets_data_sent_during_and_after_the_poll),
        cmocka_unit_test(polling_is_off_on_a_single_cpu),
    };
    return cmocka_run_group_tests(tests, quiet, NULL);
}
