/* SPDX-License-Identifier: Apache-2.0
 *
 * Stream and event entry points of the simulated driver: create/destroy, synchronize,
 * query, wait-event, host functions and callbacks, event record/query/synchronize/elapsed
 * time, and the per-thread default stream. The queues themselves are in exec.c.
 */
#include "sim/drv.h"

#include <stdlib.h>
#include <string.h>

#define PTDS_CACHE 8
#define PRIO_GREATEST (-5)
#define PRIO_LEAST 0

/* Per-thread default streams of the calling thread, one per context (cache of the context's
 * stream list: validated by handle registry and ids before use). */
static __thread struct {
    unsigned long long ctx_id, stream_id;
    struct CUstream_st *s;
} ptds[PTDS_CACHE];

CUresult tf__stream_new(CUcontext ctx, unsigned flags, int priority, enum sim_stream_kind kind,
                        struct CUstream_st **out)
{
    struct CUstream_st *s = calloc(1, sizeof(*s));
    if (!s)
        return CUDA_ERROR_OUT_OF_MEMORY;
    s->ctx = ctx;
    s->dev = ctx->dev;
    s->flags = flags;
    s->priority = priority;
    s->kind = kind;
    s->refs = 1;
    s->owner = pthread_self();
    s->id = atomic_fetch_add(&tf__drv()->next_id, 1);
    if (tf__handle_add(s, H_STREAM) != 0) {
        free(s);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct sim_exec *e = &ctx->dev->exec;
    pthread_mutex_lock(&e->mu);
    s->next = e->streams;
    e->streams = s;
    pthread_mutex_unlock(&e->mu);
    *out = s;
    return CUDA_SUCCESS;
}

static CUresult per_thread_stream(CUcontext ctx, struct CUstream_st **out)
{
    int free_slot = -1;
    for (int i = 0; i < PTDS_CACHE; i++) {
        if (ptds[i].s && ptds[i].ctx_id == ctx->id) {
            struct CUstream_st *s = ptds[i].s;
            if (tf__handle_is(s, H_STREAM) && s->id == ptds[i].stream_id && s->ctx == ctx) {
                *out = s;
                return CUDA_SUCCESS;
            }
            ptds[i].s = NULL;
        }
        if (!ptds[i].s && free_slot < 0)
            free_slot = i;
    }
    struct CUstream_st *s;
    CUresult rc = tf__stream_new(ctx, 0, 0, S_PER_THREAD, &s);
    if (rc)
        return rc;
    if (free_slot < 0)
        free_slot = (int)(ctx->id % PTDS_CACHE); /* evict: the old stream lives on in ctx */
    ptds[free_slot].ctx_id = ctx->id;
    ptds[free_slot].stream_id = s->id;
    ptds[free_slot].s = s;
    *out = s;
    return CUDA_SUCCESS;
}

CUresult tf__stream_resolve(CUcontext ctx, CUstream h, int per_thread, struct CUstream_st **out)
{
    if (h == CU_STREAM_PER_THREAD || (!h && per_thread))
        return per_thread_stream(ctx, out);
    if (!h || h == CU_STREAM_LEGACY) {
        if (!ctx->null_stream)
            return CUDA_ERROR_INVALID_CONTEXT;
        *out = ctx->null_stream;
        return CUDA_SUCCESS;
    }
    if (!tf__handle_is(h, H_STREAM) || h->ctx != ctx)
        return CUDA_ERROR_INVALID_HANDLE;
    *out = h;
    return CUDA_SUCCESS;
}

CUresult tf__cur_stream(CUstream h, int per_thread, int allow_sticky, CUcontext *pctx,
                        struct CUstream_st **out)
{
    CUcontext ctx;
    CUresult rc = tf__ctx_current(&ctx, allow_sticky);
    if (rc)
        return rc;
    if (pctx)
        *pctx = ctx;
    return tf__stream_resolve(ctx, h, per_thread, out);
}

/* ---- Streams --------------------------------------------------------------------------- */

CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    CUcontext ctx;
    CUresult rc = tf__ctx_current(&ctx, 0);
    if (rc)
        return rc;
    if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    if (priority < PRIO_GREATEST)
        priority = PRIO_GREATEST;
    if (priority > PRIO_LEAST)
        priority = PRIO_LEAST;
    struct CUstream_st *s;
    if ((rc = tf__stream_new(ctx, flags, priority, S_USER, &s)))
        return rc;
    *phStream = s;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return cuStreamCreateWithPriority(phStream, Flags, PRIO_LEAST);
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!tf__handle_is(hStream, H_STREAM) || hStream->kind != S_USER)
        return CUDA_ERROR_INVALID_HANDLE;
    if (atomic_load(&hStream->cap)) /* not while it captures (the capture is invalidated) */
        return tf__capture_sync_check(hStream->ctx, hStream);
    tf__stream_release_handle(hStream);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
    return cuStreamDestroy_v2(hStream);
}

static CUresult stream_sync(CUstream h, int per_thread)
{
    struct CUstream_st *s;
    CUcontext ctx;
    CUresult rc = tf__cur_stream(h, per_thread, 0, &ctx, &s);
    if (rc || (rc = tf__capture_sync_check(ctx, s)))
        return rc;
    tf__stream_wait_idle(s);
    tf__pools_synced(s->dev);
    return (CUresult)atomic_load(&ctx->sticky);
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
    return stream_sync(hStream, 0);
}

CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream)
{
    return stream_sync(hStream, 1);
}

static CUresult stream_query(CUstream h, int per_thread)
{
    struct CUstream_st *s;
    CUcontext ctx;
    CUresult rc = tf__cur_stream(h, per_thread, 0, &ctx, &s);
    if (rc || (rc = tf__capture_sync_check(ctx, s)))
        return rc;
    if (!tf__stream_idle(s))
        return CUDA_ERROR_NOT_READY;
    return (CUresult)atomic_load(&ctx->sticky);
}

CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
    return stream_query(hStream, 0);
}

CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream)
{
    return stream_query(hStream, 1);
}

CUresult tf__stream_wait_seq(struct CUstream_st *s, struct CUstream_st *target, uint64_t seq)
{
    struct sim_exec *te = &target->dev->exec;
    pthread_mutex_lock(&te->mu);
    target->refs++;
    pthread_mutex_unlock(&te->mu);
    struct sim_op *op = tf__op_new(OP_WAIT);
    if (!op) {
        tf__stream_unref(target);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    op->u.wait.stream = target;
    op->u.wait.seq = seq;
    /* Remembered for the allocator's reuse rules (the oldest of the slots is replaced). */
    struct sim_exec *e = &s->dev->exec;
    pthread_mutex_lock(&e->mu);
    int k = 0;
    for (int i = 0; i < 4; i++) {
        if (s->waited[i].id == target->id) {
            k = i;
            break;
        }
        if (s->waited[i].seq < s->waited[k].seq)
            k = i;
    }
    s->waited[k].id = target->id;
    if (s->waited[k].seq < seq)
        s->waited[k].seq = seq;
    pthread_mutex_unlock(&e->mu);
    return tf__enqueue(s, op, 0);
}

int tf__stream_follows(struct CUstream_st *s, unsigned long long t_id, enum sim_stream_kind t_kind,
                       unsigned t_flags, CUcontext t_ctx, uint64_t seq)
{
    if (s->id == t_id)
        return 1;
    if (s->ctx == t_ctx) {
        int s_blocking = !(s->flags & CU_STREAM_NON_BLOCKING);
        int t_blocking = !(t_flags & CU_STREAM_NON_BLOCKING);
        if ((t_kind == S_LEGACY && s_blocking) || (s->kind == S_LEGACY && t_blocking))
            return 1;
    }
    struct sim_exec *e = &s->dev->exec;
    int dep = 0;
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < 4; i++)
        if (s->waited[i].id == t_id && s->waited[i].seq >= seq)
            dep = 1;
    pthread_mutex_unlock(&e->mu);
    return dep;
}

CUresult tf__stream_wait_event_now(struct CUstream_st *s, struct CUevent_st *ev)
{
    struct sim_exec *ee = &ev->ctx->dev->exec;
    pthread_mutex_lock(&ee->mu);
    struct CUstream_st *target = ev->rec_stream;
    uint64_t seq = ev->rec_seq;
    if (target)
        target->refs++;
    pthread_mutex_unlock(&ee->mu);
    if (!target) /* never recorded: nothing to wait for */
        return CUDA_SUCCESS;
    CUresult rc = tf__stream_wait_seq(s, target, seq);
    tf__stream_unref(target);
    return rc;
}

static CUresult stream_wait_event(CUstream h, CUevent ev, unsigned flags, int per_thread)
{
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, NULL, &s);
    if (rc)
        return rc;
    if (!tf__handle_is(ev, H_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    int handled;
    if ((rc = tf__capture_wait_event(s, ev, flags, &handled)) || handled)
        return rc;
    return tf__stream_wait_event_now(s, ev);
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    return stream_wait_event(hStream, hEvent, Flags, 0);
}

CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    return stream_wait_event(hStream, hEvent, Flags, 1);
}

static CUresult host_func(CUstream h, CUhostFn fn, CUstreamCallback cb, void *data, int per_thread)
{
    struct sim_op *op;
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, NULL, &s);
    if (rc)
        return rc;
    if (!fn && !cb)
        return CUDA_ERROR_INVALID_VALUE;
    if (!(op = tf__op_new(OP_HOST)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.host.fn = fn;
    op->u.host.cb = cb;
    op->u.host.handle = h;
    op->u.host.data = data;
    return tf__enqueue(s, op, 0);
}

CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    return host_func(hStream, fn, NULL, userData, 0);
}

CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
    return host_func(hStream, fn, NULL, userData, 1);
}

CUresult CUDAAPI cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                                     unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return host_func(hStream, NULL, callback, userData, 0);
}

CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback,
                                          void *userData, unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return host_func(hStream, NULL, callback, userData, 1);
}

/* ---- Stream properties ----------------------------------------------------------------- */

#define STREAM_GETTER(name, ptsz, type, expr)                                                      \
    CUresult CUDAAPI name(CUstream hStream, type *out)                                             \
    {                                                                                              \
        struct CUstream_st *s;                                                                     \
        CUresult rc = tf__cur_stream(hStream, ptsz, 1, NULL, &s);                                  \
        if (rc)                                                                                    \
            return rc;                                                                             \
        if (!out)                                                                                  \
            return CUDA_ERROR_INVALID_VALUE;                                                       \
        *out = (expr);                                                                             \
        return CUDA_SUCCESS;                                                                       \
    }

STREAM_GETTER(cuStreamGetPriority, 0, int, s->priority)
STREAM_GETTER(cuStreamGetPriority_ptsz, 1, int, s->priority)
STREAM_GETTER(cuStreamGetFlags, 0, unsigned int, s->flags)
STREAM_GETTER(cuStreamGetFlags_ptsz, 1, unsigned int, s->flags)
STREAM_GETTER(cuStreamGetId, 0, unsigned long long, s->id)
STREAM_GETTER(cuStreamGetId_ptsz, 1, unsigned long long, s->id)
STREAM_GETTER(cuStreamGetCtx, 0, CUcontext, s->ctx)
STREAM_GETTER(cuStreamGetCtx_ptsz, 1, CUcontext, s->ctx)
STREAM_GETTER(cuStreamGetDevice, 0, CUdevice, s->dev->index)
STREAM_GETTER(cuStreamGetDevice_ptsz, 1, CUdevice, s->dev->index)

/* ---- Events ---------------------------------------------------------------------------- */

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    CUcontext ctx;
    CUresult rc = tf__ctx_current(&ctx, 0);
    if (rc)
        return rc;
    const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (!phEvent || (Flags & ~known) ||
        ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)))
        return CUDA_ERROR_INVALID_VALUE;
    struct CUevent_st *ev = calloc(1, sizeof(*ev));
    if (!ev)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ev->ctx = ctx;
    ev->flags = Flags;
    ev->refs = 1;
    if (tf__handle_add(ev, H_EVENT) != 0) {
        free(ev);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct sim_exec *e = &ctx->dev->exec;
    pthread_mutex_lock(&e->mu);
    ev->next = e->events;
    e->events = ev;
    pthread_mutex_unlock(&e->mu);
    *phEvent = ev;
    return CUDA_SUCCESS;
}

static void event_destroy(struct CUevent_st *ev)
{
    struct sim_exec *e = &ev->ctx->dev->exec;
    pthread_mutex_lock(&e->mu);
    if (!ev->destroyed) {
        ev->destroyed = 1;
        tf__handle_del(ev);
        tf__event_unref_locked(e, ev); /* freed now, or when its pending records complete */
    }
    pthread_mutex_unlock(&e->mu);
}

CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!tf__handle_is(hEvent, H_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    event_destroy(hEvent);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
    return cuEventDestroy_v2(hEvent);
}

void tf__events_free_ctx(CUcontext ctx)
{
    struct sim_exec *e = &ctx->dev->exec;
    for (;;) {
        struct CUevent_st *victim = NULL;
        pthread_mutex_lock(&e->mu);
        for (struct CUevent_st *ev = e->events; ev; ev = ev->next)
            if (ev->ctx == ctx && !ev->destroyed) {
                victim = ev;
                break;
            }
        pthread_mutex_unlock(&e->mu);
        if (!victim)
            return;
        event_destroy(victim);
    }
}

static CUresult event_record(CUevent ev, CUstream h, unsigned flags, int per_thread)
{
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, NULL, &s);
    if (rc)
        return rc;
    if (!tf__handle_is(ev, H_EVENT) || ev->ctx != s->ctx)
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_op *op = tf__op_new(OP_RECORD);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.rec.ev = ev;
    op->u.rec.external = (flags & CU_EVENT_RECORD_EXTERNAL) != 0;
    return tf__enqueue(s, op, 0);
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return event_record(hEvent, hStream, 0, 0);
}

CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
    return event_record(hEvent, hStream, 0, 1);
}

CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    return event_record(hEvent, hStream, flags, 0);
}

CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    return event_record(hEvent, hStream, flags, 1);
}

/* 1 when EV's latest record completed (or it was never recorded); caller holds exec.mu. */
static int event_done(const struct CUevent_st *ev)
{
    return !ev->rec_stream || atomic_load(&ev->rec_stream->done_seq) >= ev->rec_seq;
}

CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!tf__handle_is(hEvent, H_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((rc = tf__capture_event_check(hEvent)))
        return rc;
    struct sim_exec *e = &hEvent->ctx->dev->exec;
    pthread_mutex_lock(&e->mu);
    int done = event_done(hEvent);
    pthread_mutex_unlock(&e->mu);
    if (!done)
        return CUDA_ERROR_NOT_READY;
    return (CUresult)atomic_load(&hEvent->ctx->sticky);
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!tf__handle_is(hEvent, H_EVENT))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((rc = tf__capture_event_check(hEvent)))
        return rc;
    struct sim_exec *e = &hEvent->ctx->dev->exec;
    pthread_mutex_lock(&e->mu);
    while (!event_done(hEvent))
        pthread_cond_wait(&e->done_cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    tf__pools_synced(hEvent->ctx->dev);
    return (CUresult)atomic_load(&hEvent->ctx->sticky);
}

/* Completion time of EV's latest record: 0 ok, else the CUresult to return. */
static CUresult event_time(struct CUevent_st *ev, uint64_t *t)
{
    if (!tf__handle_is(ev, H_EVENT) || (ev->flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_HANDLE;
    struct sim_exec *e = &ev->ctx->dev->exec;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&e->mu);
    if (!ev->rec_stream)
        rc = CUDA_ERROR_INVALID_HANDLE;
    else if (!event_done(ev))
        rc = CUDA_ERROR_NOT_READY;
    else
        *t = ev->time_ns;
    pthread_mutex_unlock(&e->mu);
    return rc;
}

CUresult CUDAAPI cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!pMilliseconds)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t a = 0, b = 0;
    if ((rc = event_time(hStart, &a)) || (rc = event_time(hEnd, &b)))
        return rc;
    *pMilliseconds = (float)((double)((int64_t)(b - a)) / 1e6);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

static CUresult stream_get_ctx_v2(CUstream h, CUcontext *pCtx, CUgreenCtx *pGreenCtx,
                                  int per_thread)
{
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 1, NULL, &s);
    if (rc)
        return rc;
    if (!pCtx && !pGreenCtx)
        return CUDA_ERROR_INVALID_VALUE;
    if (pCtx)
        *pCtx = s->ctx;
    if (pGreenCtx)
        *pGreenCtx = NULL; /* no green contexts in the simulator */
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
    return stream_get_ctx_v2(hStream, pCtx, pGreenCtx, 0);
}

CUresult CUDAAPI cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
    return stream_get_ctx_v2(hStream, pCtx, pGreenCtx, 1);
}
