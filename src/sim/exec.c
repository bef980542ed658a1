/* SPDX-License-Identifier: Apache-2.0
 *
 * The device runtime of the simulated driver: per-stream work queues and one executor thread
 * per device that runs queued work in stream order.
 *
 * Ordering rules (the CUDA stream semantics):
 *   - ops of one stream complete in the order they were queued;
 *   - the legacy default stream (NULL / CU_STREAM_LEGACY) waits for all earlier work of the
 *     context's blocking streams, and blocking streams wait for earlier legacy-stream work;
 *     CU_STREAM_NON_BLOCKING streams are independent of it; per-thread default streams are
 *     blocking streams;
 *   - an OP_WAIT (cuStreamWaitEvent) is satisfied once the event's record op completed.
 * Among runnable ops the executor picks the highest stream priority, then the oldest. One op
 * runs at a time per device and kernels additionally hold the device-wide execution lock of
 * the shared region, so a device runs one kernel at a time across all processes.
 *
 * Host functions (cuLaunchHostFunc, cuStreamAddCallback) are handed to a second thread per
 * device, so a blocking one holds up only what is ordered after it.
 *
 * A synchronous API call (cuMemcpyHtoD, cuMemsetD32, ...) queues its op and waits for it;
 * when the op is runnable at once (nothing earlier it depends on) the calling thread executes
 * it itself, which keeps synchronous copies cheap without breaking the order.
 */
#include "sim/drv.h"

#include "sim/ptx/ptx.h"

#include "common/abstime.h"
#include "common/log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

struct sim_op *tf__op_new(enum sim_op_kind kind)
{
    struct sim_op *op = calloc(1, sizeof(*op));
    if (op)
        op->kind = kind;
    return op;
}

/* ---- Scheduling ------------------------------------------------------------------------ */

static int blocking(const struct CUstream_st *s)
{
    return !(s->flags & CU_STREAM_NON_BLOCKING);
}

/* True when OP (the head of S) may run now. Caller holds e->mu. */
static int runnable(struct sim_exec *e, struct CUstream_st *s, struct sim_op *op)
{
    if (op->kind == OP_WAIT && atomic_load(&op->u.wait.stream->done_seq) < op->u.wait.seq)
        return 0;
    if (s->kind == S_LEGACY) {
        for (struct CUstream_st *t = e->streams; t; t = t->next)
            if (t != s && t->ctx == s->ctx && blocking(t) && t->head && t->head->seq < op->seq)
                return 0;
    } else if (blocking(s)) {
        struct CUstream_st *l = s->ctx->null_stream;
        if (l && l != s && l->head && l->head->seq < op->seq)
            return 0;
    }
    return 1;
}

/* The next op to execute, or NULL; *PENDING tells whether any op is queued at all. */
static struct sim_op *pick(struct sim_exec *e, struct CUstream_st **out, int *pending)
{
    struct sim_op *best = NULL;
    struct CUstream_st *bs = NULL;
    *pending = 0;
    for (struct CUstream_st *s = e->streams; s; s = s->next) {
        struct sim_op *op = s->head;
        if (!op)
            continue;
        *pending = 1;
        if (op->claimed || !runnable(e, s, op))
            continue;
        if (!best || s->priority < bs->priority ||
            (s->priority == bs->priority && op->seq < best->seq)) {
            best = op;
            bs = s;
        }
    }
    *out = bs;
    return best;
}

/* ---- Stream lifetime ------------------------------------------------------------------- */

/* Frees S once it is destroyed, drained and unreferenced. Caller holds e->mu. */
static void maybe_free_stream(struct sim_exec *e, struct CUstream_st *s)
{
    if (s->refs > 0 || s->head)
        return;
    for (struct CUstream_st **pp = &e->streams; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    free(s);
}

void tf__stream_unref(struct CUstream_st *s)
{
    struct sim_exec *e = &s->dev->exec;
    pthread_mutex_lock(&e->mu);
    s->refs--;
    maybe_free_stream(e, s);
    pthread_mutex_unlock(&e->mu);
}

void tf__stream_ref(struct CUstream_st *s)
{
    struct sim_exec *e = &s->dev->exec;
    pthread_mutex_lock(&e->mu);
    s->refs++;
    pthread_mutex_unlock(&e->mu);
}

uint64_t tf__stream_last_seq(struct CUstream_st *s)
{
    struct sim_exec *e = &s->dev->exec;
    pthread_mutex_lock(&e->mu);
    uint64_t seq = s->last_seq;
    pthread_mutex_unlock(&e->mu);
    return seq;
}

void tf__stream_release_handle(struct CUstream_st *s)
{
    struct sim_exec *e = &s->dev->exec;
    pthread_mutex_lock(&e->mu);
    if (!s->destroyed) {
        s->destroyed = 1;
        tf__handle_del(s);
        s->refs--;
    }
    maybe_free_stream(e, s);
    pthread_mutex_unlock(&e->mu);
}

/* ---- Execution ------------------------------------------------------------------------- */

static void fill(void *dst, uint32_t v, size_t count, int width)
{
    if (width == 1) {
        memset(dst, (int)(v & 0xFF), count);
    } else if (width == 2) {
        uint16_t *p = dst, x = (uint16_t)v;
        for (size_t i = 0; i < count; i++)
            p[i] = x;
    } else {
        uint32_t *p = dst;
        for (size_t i = 0; i < count; i++)
            p[i] = v;
    }
}

/* The copy engine. A GPU's DMA engine writes device memory without passing through the CPU's
 * caches; the simulated one does the same for large copies into device memory with
 * non-temporal stores, which also saves the CPU the read-for-ownership of every destination
 * line (about half the cost of a cached copy into cold memory). Host destinations keep
 * cached stores: their next reader is the host (often at once: a DtoH staging buffer that is
 * sent). Overlapping ranges and small copies use memmove. */
#define DMA_NT_MIN (256u * 1024u)
static void dma_copy(void *dst, const void *src, size_t n, int to_device)
{
#if defined(__x86_64__)
    uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
    if (to_device && n >= DMA_NT_MIN && (d + n <= s || s + n <= d)) {
        size_t head = (16 - (d & 15)) & 15;
        memcpy(dst, src, head);
        uint8_t *q = (uint8_t *)dst + head;
        const uint8_t *p = (const uint8_t *)src + head;
        size_t body = (n - head) & ~(size_t)63;
        for (size_t i = 0; i < body; i += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)(p + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(p + i + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(p + i + 32));
            __m128i e = _mm_loadu_si128((const __m128i *)(p + i + 48));
            _mm_stream_si128((__m128i *)(q + i), a);
            _mm_stream_si128((__m128i *)(q + i + 16), b);
            _mm_stream_si128((__m128i *)(q + i + 32), c);
            _mm_stream_si128((__m128i *)(q + i + 48), e);
        }
        memcpy(q + body, p + body, n - head - body);
        _mm_sfence(); /* the copy is complete before its completion is signalled */
        return;
    }
#else
    (void)to_device;
#endif
    memmove(dst, src, n);
}

static void execute(struct sim_device *d, struct CUstream_st *s, struct sim_op *op)
{
    CUcontext ctx = s->ctx;
    int broken = atomic_load(&ctx->sticky) != 0;
    uint64_t t0;
    switch (op->kind) {
    case OP_COPY:
        if (broken || !op->u.copy.n)
            break;
        t0 = tf_sim_now_ns();
        dma_copy(op->u.copy.dst, op->u.copy.src, op->u.copy.n, op->u.copy.to_device);
        tf_sim_shm_account_copy(d->shm, atomic_load(&d->slot), t0, tf_sim_now_ns());
        break;
    case OP_SET:
        if (broken || !op->u.set.count)
            break;
        t0 = tf_sim_now_ns();
        fill(op->u.set.dst, op->u.set.value, op->u.set.count, op->u.set.width);
        tf_sim_shm_account_copy(d->shm, atomic_load(&d->slot), t0, tf_sim_now_ns());
        break;
    case OP_HOST:
        if (op->u.host.fn)
            op->u.host.fn(op->u.host.data);
        else
            op->u.host.cb(op->u.host.handle, (CUresult)atomic_load(&ctx->sticky), op->u.host.data);
        break;
    case OP_FREE:
        if (op->u.free.block)
            tf__pool_free_done(op->u.free.block);
        else
            (void)tf__mem_free(op->u.free.ptr, 0);
        break;
    case OP_KERNEL:
#ifdef TF_SIM_HAVE_PTX
        if (!broken)
            tf__kernel_run(d, ctx, op->u.kernel);
#endif
        break;
    case OP_GALLOC:
        tf__gmem_alloc_done(op->u.galloc);
        break;
    case OP_RECORD:
    case OP_WAIT:
    case OP_SYNC_POINT:
        break;
    }
}

/* Events (cu_stream.c) free themselves through this when their last reference goes. */
static void maybe_free_event(struct sim_exec *e, struct CUevent_st *ev)
{
    if (ev->refs > 0)
        return;
    for (struct CUevent_st **pp = &e->events; *pp; pp = &(*pp)->next)
        if (*pp == ev) {
            *pp = ev->next;
            break;
        }
    if (ev->rec_stream) {
        ev->rec_stream->refs--;
        maybe_free_stream(e, ev->rec_stream);
    }
    free(ev->cap_deps);
    free(ev);
}

void tf__event_unref_locked(struct sim_exec *e, struct CUevent_st *ev)
{
    ev->refs--;
    maybe_free_event(e, ev);
}

/* Retires OP, the head of S. Caller holds e->mu; *UNREF gets a stream whose reference must be
 * dropped after unlocking (an OP_WAIT target, possibly on another device). */
static void complete(struct sim_exec *e, struct CUstream_st *s, struct sim_op *op,
                     struct CUstream_st **unref)
{
    s->refs++; /* keep S alive while releasing what OP referenced (maybe S itself) */
    s->head = op->next;
    if (!s->head)
        s->tail = NULL;
    atomic_store(&s->done_seq, op->seq);
    *unref = NULL;
    if (op->kind == OP_RECORD) {
        struct CUevent_st *ev = op->u.rec.ev;
        if (op->seq > ev->time_seq) {
            ev->time_seq = op->seq;
            ev->time_ns = tf_sim_now_ns();
        }
        tf__event_unref_locked(e, ev);
    } else if (op->kind == OP_WAIT) {
        *unref = op->u.wait.stream;
    } else if (op->kind == OP_KERNEL) {
#ifdef TF_SIM_HAVE_PTX
        tf__kernel_free(op->u.kernel);
#endif
    }
    free(op);
    pthread_cond_broadcast(&e->done_cv);
    s->refs--;
    maybe_free_stream(e, s);
}

static void *host_main(void *arg)
{
    struct sim_device *d = arg;
    struct sim_exec *e = &d->exec;
    pthread_mutex_lock(&e->mu);
    while (!e->stop) {
        struct sim_op *op = e->host_head;
        if (!op) {
            pthread_cond_wait(&e->host_cv, &e->mu);
            continue;
        }
        e->host_head = op->host_next;
        if (!e->host_head)
            e->host_tail = NULL;
        struct CUstream_st *s = op->stream;
        pthread_mutex_unlock(&e->mu);
        execute(d, s, op);
        pthread_mutex_lock(&e->mu);
        struct CUstream_st *unref;
        complete(e, s, op, &unref);
        pthread_cond_signal(&e->work_cv);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

static void *executor_main(void *arg)
{
    struct sim_device *d = arg;
    struct sim_exec *e = &d->exec;
    pthread_mutex_lock(&e->mu);
    while (!e->stop) {
        struct CUstream_st *s;
        int pending;
        struct sim_op *op = pick(e, &s, &pending);
        if (!op) {
            if (pending) { /* blocked on another device's stream: poll */
                struct timespec ts = tf_abstime_ms(CLOCK_MONOTONIC, 2);
                pthread_cond_timedwait(&e->work_cv, &e->mu, &ts);
            } else {
                pthread_cond_wait(&e->work_cv, &e->mu);
            }
            continue;
        }
        op->claimed = 2;
        if (op->kind == OP_HOST) {
            op->host_next = NULL;
            if (e->host_tail)
                e->host_tail->host_next = op;
            else
                e->host_head = op;
            e->host_tail = op;
            pthread_cond_signal(&e->host_cv);
            continue;
        }
        pthread_mutex_unlock(&e->mu);
        execute(d, s, op);
        pthread_mutex_lock(&e->mu);
        struct CUstream_st *unref;
        complete(e, s, op, &unref);
        if (unref) {
            pthread_mutex_unlock(&e->mu);
            tf__stream_unref(unref);
            pthread_mutex_lock(&e->mu);
        }
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

CUresult tf__exec_start(struct sim_device *d)
{
    struct sim_exec *e = &d->exec;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&e->mu);
    if (!e->started) {
        if (pthread_create(&e->thread, NULL, executor_main, d) != 0) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else if (pthread_create(&e->host_thread, NULL, host_main, d) != 0) {
            e->stop = 1;
            pthread_cond_broadcast(&e->work_cv);
            pthread_mutex_unlock(&e->mu);
            pthread_join(e->thread, NULL);
            pthread_mutex_lock(&e->mu);
            e->stop = 0;
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            e->started = 1;
        }
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

void tf__exec_shutdown(void)
{
    struct sim_driver *drv = tf__drv();
    if (!drv)
        return;
    for (int i = 0; i < drv->ndev; i++) {
        struct sim_exec *e = &drv->dev[i].exec;
        pthread_mutex_lock(&e->mu);
        int started = e->started;
        e->stop = 1;
        e->started = 0;
        pthread_cond_broadcast(&e->work_cv);
        pthread_cond_broadcast(&e->host_cv);
        pthread_mutex_unlock(&e->mu);
        /* Queued work is abandoned, as when a process with a real GPU exits. A host
         * function still running (blocked, or calling exit itself) is not waited for. */
        if (started && !pthread_equal(e->thread, pthread_self()))
            pthread_join(e->thread, NULL);
        if (started)
            pthread_detach(e->host_thread);
    }
}

/* ---- Host side ------------------------------------------------------------------------- */

CUresult tf__enqueue(struct CUstream_st *s, struct sim_op *op, int wait)
{
    if (atomic_load(&s->cap)) /* capturing: the op becomes a graph node */
        return tf__capture_op(s, op, wait);
    if (s->kind == S_LEGACY && atomic_load(&s->ctx->capturing_blocking) > 0) {
#ifdef TF_SIM_HAVE_PTX
        if (op->kind == OP_KERNEL)
            tf__kernel_free(op->u.kernel);
#endif
        free(op);
        return tf__capture_implicit(s->ctx);
    }
    struct sim_device *d = s->dev;
    struct sim_exec *e = &d->exec;
    pthread_mutex_lock(&e->mu);
    op->seq = e->next_seq++;
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    s->last_seq = op->seq;
    if (op->kind == OP_RECORD) {
        struct CUevent_st *ev = op->u.rec.ev;
        if (ev->rec_stream != s) {
            if (ev->rec_stream) {
                ev->rec_stream->refs--;
                maybe_free_stream(e, ev->rec_stream);
            }
            s->refs++;
            ev->rec_stream = s;
        }
        ev->rec_seq = op->seq;
        ev->refs++;
        atomic_store(&ev->cap_id, 0); /* a real record replaces one made in a capture */
    }
    uint64_t seq = op->seq;
    op->stream = s;
    if (wait && s->head == op && runnable(e, s, op) && op->kind != OP_HOST) {
        op->claimed = 1;
        pthread_mutex_unlock(&e->mu);
        execute(d, s, op);
        pthread_mutex_lock(&e->mu);
        struct CUstream_st *unref;
        complete(e, s, op, &unref);
        pthread_cond_signal(&e->work_cv); /* work behind it may be runnable now */
        pthread_mutex_unlock(&e->mu);
        if (unref)
            tf__stream_unref(unref);
        return (CUresult)atomic_load(&s->ctx->sticky);
    }
    pthread_cond_signal(&e->work_cv);
    if (!wait) {
        pthread_mutex_unlock(&e->mu);
        return CUDA_SUCCESS;
    }
    while (atomic_load(&s->done_seq) < seq)
        pthread_cond_wait(&e->done_cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    return (CUresult)atomic_load(&s->ctx->sticky);
}

void tf__stream_wait_idle(struct CUstream_st *s)
{
    struct sim_exec *e = &s->dev->exec;
    pthread_mutex_lock(&e->mu);
    uint64_t target = s->last_seq;
    while (atomic_load(&s->done_seq) < target)
        pthread_cond_wait(&e->done_cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
}

int tf__stream_idle(struct CUstream_st *s)
{
    struct sim_exec *e = &s->dev->exec;
    pthread_mutex_lock(&e->mu);
    int idle = atomic_load(&s->done_seq) >= s->last_seq;
    pthread_mutex_unlock(&e->mu);
    return idle;
}

void tf__exec_memview(struct sim_device *d, CUcontext ctx, const struct tf_ptx_range **ranges,
                      size_t *n)
{
    struct sim_exec *e = &d->exec;
    uint64_t gen = tf__mem_gen();
    if (gen != e->view_gen || ctx != e->view_ctx) {
        e->view_ctx = ctx;
        size_t k = tf__mem_ranges(ctx, &e->ranges, &e->cap_ranges);
        if (k == (size_t)-1) {
            k = 0; /* out of host memory: the kernel sees no memory and faults cleanly */
            gen = 0;
        }
        e->nranges = k;
        e->view_gen = gen;
    }
    *ranges = e->ranges;
    *n = e->nranges;
}
