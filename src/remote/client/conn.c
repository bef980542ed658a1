/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so connection: connect + authenticated handshake from the environment, the
 * batch of asynchronous requests, synchronous calls, the frame reader that lands DtoH data
 * in the caller's buffers, back-pressure handling, the pump thread, loss of the worker, fork
 * and unload; see client.h.
 */
#include "remote/client/client.h"

#include "common/err.h"
#include "common/log.h"
#include "remote/auth.h"
#include "remote/client/locate.h"
#include "remote/lookup.h"
#include "remote/net.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RX_READAHEAD (64u * 1024u)

static struct tfc g_tfc = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

struct tfc *tfc_get(void)
{
    return &g_tfc;
}

/* ---- per-thread context stack --------------------------------------------------------------- */

static __thread uint64_t ctx_stack[TFC_CTX_STACK];
static __thread int ctx_depth;

uint64_t tfc_current(void)
{
    return ctx_depth ? ctx_stack[ctx_depth - 1] : 0;
}

void tfc_set_current(uint64_t ctx)
{
    if (ctx == 0) {
        if (ctx_depth)
            ctx_depth--;
    } else if (ctx_depth) {
        ctx_stack[ctx_depth - 1] = ctx;
    } else {
        ctx_stack[ctx_depth++] = ctx;
    }
}

int tfc_push(uint64_t ctx)
{
    if (ctx_depth >= TFC_CTX_STACK)
        return TF_ENOSPC;
    ctx_stack[ctx_depth++] = ctx;
    return 0;
}

uint64_t tfc_pop(void)
{
    return ctx_depth ? ctx_stack[--ctx_depth] : 0;
}

/* ---- helpers -------------------------------------------------------------------------------- */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int env_int(const char *name, int def, int lo, int hi)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < lo || n > hi) {
        tf_log(TF_LOG_WARN, "client", "%s=\"%s\" is not %d..%d; using %d", name, v, lo, hi, def);
        return def;
    }
    return (int)n;
}

uint64_t tfc_new_id(struct tfc *t, unsigned type)
{
    return TF_PROTO_HANDLE(type, ++t->next_serial & TF_PROTO_H_SERIAL_MASK & ~TF_PROTO_H_WORKER);
}

void *tfc_obj(struct tfc *t, uint64_t id, unsigned type)
{
    if (TF_PROTO_HANDLE_TYPE(id) != type)
        return NULL;
    return tf_htab_get(&t->objs, id);
}

struct tfc_ctx *tfc_ctx_of(struct tfc *t, uint64_t id)
{
    return tfc_obj(t, id, TF_PROTO_H_CTX);
}

CUresult tfc_stream_id(struct tfc *t, CUstream s, uint64_t *id)
{
    uintptr_t v = (uintptr_t)s;
    if (v == 0 || v == (uintptr_t)CU_STREAM_LEGACY || v == (uintptr_t)CU_STREAM_PER_THREAD) {
        *id = v;
        return CUDA_SUCCESS;
    }
    if (!tfc_obj(t, v, TF_PROTO_H_STREAM))
        return CUDA_ERROR_INVALID_HANDLE;
    *id = v;
    return CUDA_SUCCESS;
}

void tfc_func_free(struct tfc_func *f)
{
    if (!f)
        return;
    free(f->off);
    free(f->attr_val);
    free(f->name);
    free(f);
}

struct tfc_func *tfc_func_add(struct tfc *t, const struct tf_proto_func *pf, unsigned type,
                              uint64_t id, uint64_t owner, uint64_t ctx)
{
    struct tfc_func *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    uint32_t np = pf->info.nparams, na = pf->info.nattrs;
    f->id = id;
    f->type = type;
    f->owner = owner;
    f->ctx = ctx;
    f->nparams = np;
    f->params_size = pf->info.params_size;
    f->nattrs = na;
    f->off = malloc((2 * (size_t)np + 1) * sizeof(uint32_t));
    f->attr_val = malloc((2 * (size_t)na + 1) * sizeof(int32_t));
    f->name = malloc(pf->info.name_len + 1);
    if (!f->off || !f->attr_val || !f->name)
        goto fail;
    f->sz = f->off + np;
    f->attr_st = (uint32_t *)(f->attr_val + na);
    for (uint32_t i = 0; i < np; i++) {
        struct tf_msg_param_info pi;
        tf_msg_param_info_get(pf->params + (size_t)i * TF_PROTO_SIZE_param_info, &pi);
        f->off[i] = pi.offset;
        f->sz[i] = pi.size;
    }
    for (uint32_t i = 0; i < na; i++) {
        struct tf_msg_attr_val av;
        tf_msg_attr_val_get(pf->attrs + (size_t)i * TF_PROTO_SIZE_attr_val, &av);
        f->attr_val[i] = (int32_t)av.value;
        f->attr_st[i] = av.status;
    }
    memcpy(f->name, pf->name, pf->info.name_len);
    f->name[pf->info.name_len] = 0;
    if (tf_htab_put(&t->objs, id, f) != 0)
        goto fail;
    struct tfc_module *m = tfc_obj(t, owner, TF_PROTO_HANDLE_TYPE(owner));
    if (m && (m->type == TF_PROTO_H_MODULE || m->type == TF_PROTO_H_LIBRARY) &&
        (type == TF_PROTO_H_KERNEL || m->type == TF_PROTO_H_MODULE)) {
        f->next_in_owner = m->funcs;
        m->funcs = f;
    }
    return f;
fail:
    tfc_func_free(f);
    return NULL;
}

/* ---- loss ----------------------------------------------------------------------------------- */

void tfc_lose(struct tfc *t, const char *why)
{
    if (t->state != TFC_CONNECTED)
        return;
    t->state = TFC_LOST;
    if (!t->lost_logged) {
        t->lost_logged = 1;
        tf_log(TF_LOG_ERROR, "client",
               "lost the connection to the tf-worker at %s: %s; GPU calls now fail with "
               "CUDA_ERROR_LAUNCH_FAILED",
               t->address, why);
    }
    if (t->fd >= 0) {
        close(t->fd);
        t->fd = -1;
    }
    tf_buf_reset(&t->tx);
    atomic_store(&t->tx_since_ns, 0);
    size_t pos = 0;
    uint64_t key;
    void *val;
    while (tf_htab_next(&t->xfers, &pos, &key, &val)) {
        struct tfc_xfer *x = val;
        x->done = 1;
        x->status = CUDA_ERROR_LAUNCH_FAILED;
    }
}

CUresult tfc_ready(struct tfc *t)
{
    if (t->state == TFC_CONNECTED)
        return CUDA_SUCCESS;
    return t->state == TFC_LOST ? CUDA_ERROR_LAUNCH_FAILED : CUDA_ERROR_NOT_INITIALIZED;
}

/* ---- sending -------------------------------------------------------------------------------- */

static int send_iov(struct tfc *t, struct iovec *iov, int n)
{
    while (n > 0 && t->state == TFC_CONNECTED) {
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(t->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                tfc_lose(t, strerror(errno));
                return TF_EIO;
            }
            /* The worker is not reading: it may be sending us DATA and waiting for us to
             * read it. Keep draining while waiting for room. */
            struct pollfd p = {.fd = t->fd, .events = POLLOUT | POLLIN};
            int r = poll(&p, 1, t->timeout_ms);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                tfc_lose(t, r == 0 ? "send timed out" : strerror(errno));
                return TF_EIO;
            }
            if (p.revents & (POLLIN | POLLHUP | POLLERR))
                tfc_drain(t);
            continue;
        }
        size_t left = (size_t)w;
        while (n > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return t->state == TFC_CONNECTED ? 0 : TF_EIO;
}

CUresult tfc_flush(struct tfc *t)
{
    if (t->state != TFC_CONNECTED)
        return CUDA_ERROR_LAUNCH_FAILED;
    if (t->tx.len == 0)
        return CUDA_SUCCESS;
    uint8_t hdr[TF_PROTO_HDR_SIZE];
    tf_proto_hdr_put(hdr, TF_OP_BATCH, 0, (uint32_t)t->tx.len, 0);
    struct iovec iov[2] = {{hdr, sizeof(hdr)}, {t->tx.data, t->tx.len}};
    int rc = send_iov(t, iov, 2);
    tf_buf_reset(&t->tx);
    atomic_store_explicit(&t->tx_since_ns, 0, memory_order_relaxed);
    return rc ? CUDA_ERROR_LAUNCH_FAILED : CUDA_SUCCESS;
}

uint8_t *tfc_async_reserve(struct tfc *t, uint16_t op, size_t body)
{
    if (t->state != TFC_CONNECTED)
        return NULL;
    if (t->tx.len + TF_PROTO_SIZE_batch_rec + body > TFC_BATCH_MAX && tfc_flush(t))
        return NULL;
    uint8_t *p = tf_buf_grow(&t->tx, TF_PROTO_SIZE_batch_rec + body);
    if (!p)
        return NULL;
    struct tf_msg_batch_rec r = {.opcode = op, .body_len = (uint32_t)body};
    tf_msg_batch_rec_put(p, &r);
    if (atomic_load_explicit(&t->tx_since_ns, memory_order_relaxed) == 0)
        atomic_store_explicit(&t->tx_since_ns, now_ns(), memory_order_relaxed);
    return p + TF_PROTO_SIZE_batch_rec;
}

CUresult tfc_async(struct tfc *t, uint16_t op, const uint8_t *fixed, size_t flen, const void *tail,
                   size_t tlen)
{
    if (t->state != TFC_CONNECTED)
        return CUDA_ERROR_LAUNCH_FAILED;
    if (tlen > TFC_INLINE_MAX) {
        if (tfc_flush(t))
            return CUDA_ERROR_LAUNCH_FAILED;
        uint8_t hdr[TF_PROTO_HDR_SIZE];
        tf_proto_hdr_put(hdr, op, 0, (uint32_t)(flen + tlen), 0);
        struct iovec iov[3] = {{hdr, sizeof(hdr)}, {(void *)fixed, flen}, {(void *)tail, tlen}};
        return send_iov(t, iov, 3) ? CUDA_ERROR_LAUNCH_FAILED : CUDA_SUCCESS;
    }
    uint8_t *p = tfc_async_reserve(t, op, flen + tlen);
    if (!p)
        return CUDA_ERROR_LAUNCH_FAILED;
    if (flen)
        memcpy(p, fixed, flen);
    if (tlen)
        memcpy(p + flen, tail, tlen);
    return CUDA_SUCCESS;
}

/* ---- receiving ------------------------------------------------------------------------------ */

/* Ensures N unread bytes in rx. BLOCK: wait (receive timeout applies); else return TF_EBUSY
 * when they are not there yet. */
static int rx_need(struct tfc *t, size_t n, int block)
{
    while (t->rx.len - t->rx_off < n) {
        if (t->rx_off) {
            tf_buf_consume(&t->rx, t->rx_off);
            t->rx_off = 0;
        }
        size_t want = n > RX_READAHEAD ? n : RX_READAHEAD;
        if (tf_buf_reserve(&t->rx, want - t->rx.len) != 0)
            return TF_ENOMEM;
        ssize_t r = block ? tf_net_recv_spin(t->fd, t->rx.data + t->rx.len, t->rx.cap - t->rx.len,
                                             t->spin_ns)
                          : tf_net_recv(t->fd, t->rx.data + t->rx.len, t->rx.cap - t->rx.len, 1);
        if (r < 0)
            return (int)r;
        t->rx.len += (size_t)r;
    }
    return 0;
}

static void rx_fail(struct tfc *t, int rc, const char *what)
{
    if (rc == TF_ETIMEDOUT)
        tfc_lose(t, "no answer within TF_REMOTE_TIMEOUT_MS");
    else if (rc == TF_EIO)
        tfc_lose(t, "connection closed by the worker");
    else
        tfc_lose(t, what);
}

/* Handles one frame. Returns 2 when it was the reply to WANT (payload in t->reply), 1 for an
 * event, 0 when !BLOCK and no whole frame is there, negative when the connection is lost. */
static int rx_frame(struct tfc *t, int block, uint64_t want)
{
    int rc = rx_need(t, TF_PROTO_HDR_SIZE, block);
    if (rc == TF_EBUSY)
        return 0;
    if (rc) {
        rx_fail(t, rc, "receive failed");
        return TF_EIO;
    }
    struct tf_msg_frame_hdr h;
    tf_msg_frame_hdr_get(t->rx.data + t->rx_off, &h);
    const char *why = "?";
    rc = tf_proto_hdr_check(&h, 1, &why);
    if (rc) {
        tfc_lose(t, why);
        return TF_EPROTO;
    }
    if (h.opcode == TF_OP_DATA && block && h.length >= TF_PROTO_SIZE_data_ev) {
        /* Land the payload directly in the caller's buffer. */
        rc = rx_need(t, TF_PROTO_HDR_SIZE + TF_PROTO_SIZE_data_ev, 1);
        if (rc) {
            rx_fail(t, rc, "receive failed");
            return TF_EIO;
        }
        struct tf_msg_data_ev ev;
        tf_msg_data_ev_get(t->rx.data + t->rx_off + TF_PROTO_HDR_SIZE, &ev);
        size_t n = h.length - TF_PROTO_SIZE_data_ev;
        struct tfc_xfer *x = tf_htab_get(&t->xfers, ev.tag);
        if (!x || x->done || ev.offset > x->len || n > x->len - ev.offset) {
            tfc_lose(t, "DATA outside any transfer");
            return TF_EPROTO;
        }
        t->rx_off += TF_PROTO_HDR_SIZE + TF_PROTO_SIZE_data_ev;
        size_t have = t->rx.len - t->rx_off, take = have < n ? have : n;
        memcpy(x->dst + ev.offset, t->rx.data + t->rx_off, take);
        t->rx_off += take;
        if (take < n) {
            rc = tf_net_recv_all(t->fd, x->dst + ev.offset + take, n - take);
            if (rc) {
                rx_fail(t, rc, "receive failed");
                return TF_EIO;
            }
        }
        return 1;
    }
    rc = rx_need(t, TF_PROTO_HDR_SIZE + h.length, block);
    if (rc == TF_EBUSY)
        return 0;
    if (rc) {
        rx_fail(t, rc, "receive failed");
        return TF_EIO;
    }
    const uint8_t *p = t->rx.data + t->rx_off + TF_PROTO_HDR_SIZE;
    t->rx_off += TF_PROTO_HDR_SIZE + h.length;
    if (h.flags & TF_PROTO_F_REPLY) {
        const struct tf_proto_op_info *info = tf_proto_op(h.opcode);
        if (h.req_id != want || h.length < info->rep_size) {
            tfc_lose(t, "unexpected reply");
            return TF_EPROTO;
        }
        tf_buf_reset(&t->reply);
        if (tf_buf_append(&t->reply, p, h.length) != 0) {
            tfc_lose(t, "out of memory");
            return TF_ENOMEM;
        }
        return 2;
    }
    switch (h.opcode) {
    case TF_OP_KEEPALIVE:
        return 1;
    case TF_OP_DATA: {
        if (h.length < TF_PROTO_SIZE_data_ev)
            break;
        struct tf_msg_data_ev ev;
        tf_msg_data_ev_get(p, &ev);
        size_t n = h.length - TF_PROTO_SIZE_data_ev;
        struct tfc_xfer *x = tf_htab_get(&t->xfers, ev.tag);
        if (!x || x->done || ev.offset > x->len || n > x->len - ev.offset)
            break;
        memcpy(x->dst + ev.offset, p + TF_PROTO_SIZE_data_ev, n);
        return 1;
    }
    case TF_OP_DTOH_DONE: {
        if (h.length != TF_PROTO_SIZE_dtoh_done_ev)
            break;
        struct tf_msg_dtoh_done_ev ev;
        tf_msg_dtoh_done_ev_get(p, &ev);
        struct tfc_xfer *x = tf_htab_del(&t->xfers, ev.tag);
        if (!x)
            break;
        atomic_fetch_sub(&t->nxfers, 1);
        free(x);
        return 1;
    }
    case TF_OP_CLOSE: {
        char msg[TF_PROTO_MAX_CLOSE_MSG + 64];
        size_t n = h.length > TF_PROTO_SIZE_close_ev ? h.length - TF_PROTO_SIZE_close_ev : 0;
        if (n > TF_PROTO_MAX_CLOSE_MSG)
            n = TF_PROTO_MAX_CLOSE_MSG;
        snprintf(msg, sizeof(msg), "worker closed the connection: %.*s", (int)n,
                 (const char *)p +
                     (h.length >= TF_PROTO_SIZE_close_ev ? TF_PROTO_SIZE_close_ev : 0));
        tfc_lose(t, msg);
        return TF_EIO;
    }
    default:
        break;
    }
    tfc_lose(t, "malformed event from the worker");
    return TF_EPROTO;
}

void tfc_drain(struct tfc *t)
{
    while (t->state == TFC_CONNECTED && rx_frame(t, 0, 0) == 1)
        ;
}

static int is_sticky(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
        return 1;
    default:
        return 0;
    }
}

CUresult tfc_sticky(struct tfc *t, uint64_t ctx)
{
    struct tfc_ctx *c = ctx ? tfc_ctx_of(t, ctx) : NULL;
    return c ? c->sticky : CUDA_SUCCESS;
}

static CUresult wait_reply(struct tfc *t, uint64_t req)
{
    for (;;) {
        int rc = rx_frame(t, 1, req);
        if (rc == 2)
            break;
        if (rc < 0)
            return CUDA_ERROR_LAUNCH_FAILED;
    }
    CUresult r = (CUresult)tf__get_4(t->reply.data);
    if (is_sticky(r)) {
        struct tfc_ctx *c = tfc_ctx_of(t, tfc_current());
        if (c)
            c->sticky = r;
    }
    return r;
}

CUresult tfc_call(struct tfc *t, uint16_t op, const uint8_t *fixed, size_t flen, const void *tail,
                  size_t tlen)
{
    if (t->state != TFC_CONNECTED)
        return CUDA_ERROR_LAUNCH_FAILED;
    uint8_t bh[TF_PROTO_HDR_SIZE], sh[TF_PROTO_HDR_SIZE];
    uint64_t req = ++t->next_req;
    struct iovec iov[5];
    int n = 0;
    if (t->tx.len) {
        tf_proto_hdr_put(bh, TF_OP_BATCH, 0, (uint32_t)t->tx.len, 0);
        iov[n++] = (struct iovec){bh, sizeof(bh)};
        iov[n++] = (struct iovec){t->tx.data, t->tx.len};
    }
    tf_proto_hdr_put(sh, op, 0, (uint32_t)(flen + tlen), req);
    iov[n++] = (struct iovec){sh, sizeof(sh)};
    if (flen)
        iov[n++] = (struct iovec){(void *)fixed, flen};
    if (tlen)
        iov[n++] = (struct iovec){(void *)tail, tlen};
    t->round_trips++;
    int rc = send_iov(t, iov, n);
    tf_buf_reset(&t->tx);
    atomic_store_explicit(&t->tx_since_ns, 0, memory_order_relaxed);
    if (rc)
        return CUDA_ERROR_LAUNCH_FAILED;
    return wait_reply(t, req);
}

/* ---- connect -------------------------------------------------------------------------------- */

static void *pump_main(void *arg)
{
    struct tfc *t = arg;
    long period_ns = (long)t->flush_us * 1000;
    for (;;) {
        struct timespec d = {period_ns / 1000000000L, period_ns % 1000000000L};
        nanosleep(&d, NULL);
        if (atomic_load(&t->pump_stop))
            break;
        int64_t since = atomic_load_explicit(&t->tx_since_ns, memory_order_relaxed);
        int nx = atomic_load_explicit(&t->nxfers, memory_order_relaxed);
        if (!since && !nx)
            continue;
        if (pthread_mutex_trylock(&t->lock) != 0)
            continue;
        if (t->state == TFC_CONNECTED) {
            since = atomic_load_explicit(&t->tx_since_ns, memory_order_relaxed);
            if (since && now_ns() - since >= period_ns)
                tfc_flush(t);
            if (atomic_load(&t->nxfers))
                tfc_drain(t);
        }
        pthread_mutex_unlock(&t->lock);
    }
    return NULL;
}

static void atfork_prepare(void)
{
    pthread_mutex_lock(&g_tfc.lock);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&g_tfc.lock);
}

/* The child has the parent's socket but must not speak on it: it starts from scratch and may
 * call cuInit to get a connection (and a session) of its own. */
static void atfork_child(void)
{
    struct tfc *t = &g_tfc;
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
    t->state = TFC_UNINIT;
    t->pump_running = 0;
    tf_buf_reset(&t->tx);
    tf_buf_reset(&t->rx);
    t->rx_off = 0;
    atomic_store(&t->tx_since_ns, 0);
    pthread_mutex_init(&t->lock, NULL);
}

static void register_atfork(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

static void tables_reset(struct tfc *t)
{
    size_t pos = 0;
    uint64_t key;
    void *val;
    while (tf_htab_next(&t->objs, &pos, &key, &val)) {
        unsigned ty = TF_PROTO_HANDLE_TYPE(key);
        if (ty == TF_PROTO_H_FUNC || ty == TF_PROTO_H_KERNEL)
            tfc_func_free(val);
        else if (ty == TF_PROTO_H_STREAM)
            tfc_capture_gone(t, val);
        if (ty != TF_PROTO_H_FUNC && ty != TF_PROTO_H_KERNEL)
            free(val);
    }
    tf_htab_free(&t->objs);
    pos = 0;
    while (tf_htab_next(&t->progs, &pos, &key, &val))
        free(val);
    tf_htab_free(&t->progs);
    pos = 0;
    while (tf_htab_next(&t->xfers, &pos, &key, &val))
        free(val);
    tf_htab_free(&t->xfers);
    tf_rangeset_free(&t->mem);
    for (int i = 0; i < t->ndev; i++)
        free(t->dev[i].attr_val);
    memset(t->dev, 0, sizeof(t->dev));
    t->ndev = 0;
}

static CUresult hello(struct tfc *t, const uint8_t *token, size_t token_len)
{
    uint8_t fixed[TF_PROTO_SIZE_hello_req];
    struct tf_msg_hello_req req = {.pid = (uint32_t)getpid()};
    tf_msg_hello_req_put(fixed, &req);
    uint8_t hdr[TF_PROTO_HDR_SIZE];
    uint64_t id = ++t->next_req;
    tf_proto_hdr_put(hdr, TF_OP_HELLO, 0, (uint32_t)(sizeof(fixed) + token_len), id);
    struct iovec iov[3] = {{hdr, sizeof(hdr)}, {fixed, sizeof(fixed)}, {(void *)token, token_len}};
    if (tf_net_send_iov(t->fd, iov, 3) != 0)
        return CUDA_ERROR_NO_DEVICE;
    /* Read the reply by hand: its version may differ from ours. */
    uint8_t h[TF_PROTO_HDR_SIZE];
    if (tf_net_recv_all(t->fd, h, sizeof(h)) != 0) {
        tf_log(TF_LOG_ERROR, "client", "tf-worker at %s closed the connection during the handshake",
               t->address);
        return CUDA_ERROR_NO_DEVICE;
    }
    struct tf_msg_frame_hdr fh;
    tf_msg_frame_hdr_get(h, &fh);
    const char *why = "?";
    int rc = tf_proto_hdr_check(&fh, 1, &why);
    if (rc == TF_ESTATE) {
        tf_log(TF_LOG_ERROR, "client", "tf-worker at %s speaks protocol version %u, this client %u",
               t->address, fh.version, TF_PROTO_VERSION);
        return CUDA_ERROR_SYSTEM_DRIVER_MISMATCH;
    }
    if (rc || fh.length < TF_PROTO_SIZE_hello_rep ||
        (fh.opcode != TF_OP_HELLO && fh.opcode != TF_OP_CLOSE)) {
        tf_log(TF_LOG_ERROR, "client", "tf-worker at %s: bad handshake reply (%s)", t->address,
               rc ? why : "unexpected frame");
        return CUDA_ERROR_NO_DEVICE;
    }
    tf_buf_reset(&t->reply);
    uint8_t *p = tf_buf_grow(&t->reply, fh.length);
    if (!p || tf_net_recv_all(t->fd, p, fh.length) != 0)
        return CUDA_ERROR_NO_DEVICE;
    if (fh.opcode == TF_OP_CLOSE) {
        tf_log(TF_LOG_ERROR, "client", "tf-worker at %s refused the connection: %.*s", t->address,
               (int)(fh.length - TF_PROTO_SIZE_close_ev), (const char *)p + TF_PROTO_SIZE_close_ev);
        return CUDA_ERROR_NO_DEVICE;
    }
    struct tf_msg_hello_rep rep;
    tf_msg_hello_rep_get(p, &rep);
    if (rep.status != CUDA_SUCCESS) {
        if (rep.status == CUDA_ERROR_NOT_PERMITTED)
            tf_log(TF_LOG_ERROR, "client", "tf-worker at %s rejected the token (TF_TOKEN)",
                   t->address);
        else
            tf_log(TF_LOG_ERROR, "client", "tf-worker at %s refused the connection (CUresult %u)",
                   t->address, rep.status);
        return (CUresult)rep.status;
    }
    struct tf_proto_dev_iter it;
    struct tf_proto_dev d;
    if (tf_proto_hello_rep_begin(&rep, p + TF_PROTO_SIZE_hello_rep,
                                 fh.length - TF_PROTO_SIZE_hello_rep, &it) != 0)
        return CUDA_ERROR_NO_DEVICE;
    int n = 0;
    while ((rc = tf_proto_dev_next(&it, &d)) == 1) {
        struct tfc_dev *cd = &t->dev[n++];
        memcpy(cd->name, d.info.name, sizeof(d.info.name));
        cd->name[256] = 0;
        memcpy(cd->uuid, d.info.uuid, 16);
        cd->total = d.info.total_mem;
        cd->nattrs = d.info.nattrs;
        cd->attr_val = malloc((2 * (size_t)cd->nattrs + 1) * sizeof(int32_t));
        if (!cd->attr_val)
            return CUDA_ERROR_OUT_OF_MEMORY;
        cd->attr_st = (uint32_t *)(cd->attr_val + cd->nattrs);
        for (uint32_t a = 0; a < cd->nattrs; a++) {
            struct tf_msg_attr_val av;
            tf_msg_attr_val_get(d.attrs + (size_t)a * TF_PROTO_SIZE_attr_val, &av);
            cd->attr_val[a] = (int32_t)av.value;
            cd->attr_st[a] = av.status;
        }
    }
    t->ndev = n;
    if (rc < 0)
        return CUDA_ERROR_NO_DEVICE;
    t->driver_version = (int)rep.driver_version;
    return CUDA_SUCCESS;
}

CUresult tfc_connect(struct tfc *t)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (t->state == TFC_CONNECTED)
        return CUDA_SUCCESS;
    if (t->state == TFC_LOST)
        return CUDA_ERROR_LAUNCH_FAILED;
    pthread_once(&once, register_atfork);
    const char *addr = getenv("TF_REMOTE"), *ctl = getenv("TF_CONTROLLER_URL");
    const char *cname = getenv("TF_CONNECTION_NAME"), *cns = getenv("TF_CONNECTION_NAMESPACE");
    char err[256];
    struct tf_net_addr a;
    int from_controller = 0;
    if (addr && *addr) {
        if (ctl && *ctl)
            tf_log(TF_LOG_DEBUG, "client",
                   "TF_REMOTE is set: not asking the controller %s (TF_CONTROLLER_URL)", ctl);
        if (tf_net_addr_parse(addr, &a, err, sizeof(err)) != 0) {
            tf_log(TF_LOG_ERROR, "client", "TF_REMOTE: %s", err);
            return CUDA_ERROR_NO_DEVICE;
        }
    } else if (ctl && *ctl) {
        struct tf_lookup_url u;
        if (!cname || !*cname || !cns || !*cns) {
            tf_log(TF_LOG_ERROR, "client",
                   "TF_CONTROLLER_URL is set but TF_CONNECTION_NAME and "
                   "TF_CONNECTION_NAMESPACE (this pod's name and namespace) are not both set");
            return CUDA_ERROR_NO_DEVICE;
        }
        if (tf_lookup_url_parse(ctl, &u, err, sizeof(err)) != 0) {
            tf_log(TF_LOG_ERROR, "client", "TF_CONTROLLER_URL: %s", err);
            return CUDA_ERROR_NO_DEVICE;
        }
        from_controller = 1;
    } else {
        tf_log(TF_LOG_ERROR, "client",
               "TF_REMOTE is not set (tcp://host:port or unix:///path of a tf-worker), nor "
               "TF_CONTROLLER_URL (remote mode: the controller that names it)");
        return CUDA_ERROR_NO_DEVICE;
    }
    uint8_t token[TF_PROTO_MAX_TOKEN];
    size_t token_len = 0;
    if (tf_auth_token_env(token, sizeof(token), &token_len, err, sizeof(err)) != 0) {
        if (from_controller)
            tf_log(TF_LOG_ERROR, "client", "no token for the tf-worker of connection %s/%s: %s",
                   cns, cname, err);
        else
            tf_log(TF_LOG_ERROR, "client", "no token for the tf-worker at %s: %s", addr, err);
        return CUDA_ERROR_NOT_PERMITTED;
    }
    char found[sizeof(t->address)];
    /* How long a worker that is not there yet is waited for: the controller's answer and then
     * the worker itself (a hard-mode sidecar may start after the app, a worker pod may be
     * restarting). A worker named by TF_REMOTE alone is not waited for unless asked. */
    const char *cw = getenv("TF_CONNECT_WAIT_MS");
    int wait_ms = env_int("TF_CONNECT_WAIT_MS", 120000, 0, 86400000);
    if (!from_controller && !(cw && *cw))
        wait_ms = 0;
    int64_t deadline = now_ns() + (int64_t)wait_ms * 1000000;
    if (from_controller) {
        char lerr[768];
        int rc = tfc_locate(ctl, cname, cns, wait_ms, found, sizeof(found), lerr, sizeof(lerr));
        if (rc == 0 && tf_net_addr_parse(found, &a, lerr, sizeof(lerr)) != 0)
            rc = TF_EPROTO;
        if (rc != 0) {
            tf_log(TF_LOG_ERROR, "client", "cannot find the tf-worker: %s", lerr);
            memset(token, 0, sizeof(token));
            return CUDA_ERROR_NO_DEVICE;
        }
        addr = found;
    }
    snprintf(t->address, sizeof(t->address), "%s", addr);
    t->timeout_ms = env_int("TF_REMOTE_TIMEOUT_MS", 30000, 100, 86400000);
    t->flush_us = env_int("TF_REMOTE_FLUSH_US", 1000, 0, 1000000);
    t->spin_ns = tf_net_spin_ns(env_int("TF_REMOTE_SPIN_US", TF_NET_SPIN_US, 0, 100000));
    int fd = tf_net_connect(&a, t->timeout_ms < 10000 ? t->timeout_ms : 10000, err, sizeof(err));
    for (int64_t nap_ms = 50; fd < 0 && fd != TF_EINVAL && now_ns() < deadline;) {
        if (nap_ms == 50)
            tf_log(TF_LOG_INFO, "client", "waiting up to %d ms for the tf-worker at %s (%s)",
                   wait_ms, addr, err);
        int64_t left_ms = (deadline - now_ns()) / 1000000;
        int64_t ms = nap_ms < left_ms ? nap_ms : left_ms;
        struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        nap_ms = nap_ms < 1000 ? nap_ms * 2 : 1000;
        fd = tf_net_connect(&a, t->timeout_ms < 10000 ? t->timeout_ms : 10000, err, sizeof(err));
    }
    if (fd < 0) {
        memset(token, 0, sizeof(token));
        tf_log(TF_LOG_ERROR, "client", "cannot reach the tf-worker: %s", err);
        return CUDA_ERROR_NO_DEVICE;
    }
    struct tf_net_opts o = {.rcv_timeout_ms = t->timeout_ms,
                            .snd_timeout_ms = t->timeout_ms,
                            .sndbuf = 4 << 20,
                            .rcvbuf = 4 << 20};
    tf_net_tune(fd, &o);
    t->fd = fd;
    tables_reset(t);
    tf_htab_init(&t->objs, SIZE_MAX);
    tf_htab_init(&t->progs, SIZE_MAX);
    tf_htab_init(&t->xfers, SIZE_MAX);
    tf_rangeset_init(&t->mem, SIZE_MAX);
    tf_rangeset_init(&t->host, SIZE_MAX);
    tf_buf_init(&t->tx, TFC_BATCH_MAX + TF_PROTO_MAX_PAYLOAD);
    tf_buf_init(&t->rx, TF_PROTO_HDR_SIZE + TF_PROTO_MAX_PAYLOAD + RX_READAHEAD);
    tf_buf_init(&t->reply, TF_PROTO_MAX_PAYLOAD);
    t->rx_off = 0;
    atomic_store(&t->nxfers, 0);
    CUresult r = hello(t, token, token_len);
    memset(token, 0, sizeof(token));
    if (r != CUDA_SUCCESS) {
        close(fd);
        t->fd = -1;
        return r;
    }
    t->pid = getpid();
    t->state = TFC_CONNECTED;
    t->lost_logged = 0;
    atomic_store(&t->pump_stop, 0);
    if (t->flush_us > 0 && pthread_create(&t->pump, NULL, pump_main, t) == 0)
        t->pump_running = 1;
    tf_log(TF_LOG_DEBUG, "client", "connected to the tf-worker at %s: %d device(s)", addr, t->ndev);
    return CUDA_SUCCESS;
}

/* TF_REMOTE_STATS=PATH: at exit, PATH gets this process's count of blocking round trips
 * ("round_trips N"), for benchmarks. */
static void write_stats(const struct tfc *t)
{
    const char *path = getenv("TF_REMOTE_STATS");
    FILE *f = path && *path ? fopen(path, "w") : NULL;
    if (!f)
        return;
    fprintf(f, "round_trips %llu\n", (unsigned long long)t->round_trips);
    fclose(f);
}

/* Unload / exit: stop the pump, send what is batched and say goodbye. */
__attribute__((destructor)) static void tfc_unload(void)
{
    struct tfc *t = &g_tfc;
    if (t->pid == getpid())
        write_stats(t);
    if (t->pump_running && t->pid == getpid()) {
        atomic_store(&t->pump_stop, 1);
        pthread_join(t->pump, NULL);
        t->pump_running = 0;
    }
    if (pthread_mutex_trylock(&t->lock) != 0)
        return;
    if (t->state == TFC_CONNECTED && t->pid == getpid()) {
        tf_net_set_timeouts(t->fd, t->timeout_ms, 1000);
        (void)tfc_async(t, TF_OP_GOODBYE, NULL, 0, NULL, 0);
        (void)tfc_flush(t);
        close(t->fd);
        t->fd = -1;
        t->state = TFC_UNINIT;
    }
    pthread_mutex_unlock(&t->lock);
}
