/* SPDX-License-Identifier: Apache-2.0
 *
 * Context entry points of the simulated driver and the per-thread context stack:
 * cuCtxCreate (v1..v4), destroy, push/pop, set/get current, device, synchronize, flags,
 * limits, API version, stream priority range, cache config, id.
 *
 * A destroyed context stays allocated (on the driver's context list) so that threads which
 * still have it current get CUDA_ERROR_CONTEXT_IS_DESTROYED, as with the real driver; its
 * resources are freed at destruction.
 */
#include "sim/drv.h"

#include "common/log.h"
#include "exptab/exptab.h"

#include <stdlib.h>
#include <string.h>

#define STACK_MAX 64

/* The calling thread's context stack (top = stack[depth - 1]). */
static __thread CUcontext stack[STACK_MAX];
static __thread int depth;

static const size_t default_limits[SIM_LIMIT_COUNT] = {
    [CU_LIMIT_STACK_SIZE] = 1024,
    [CU_LIMIT_PRINTF_FIFO_SIZE] = 1u << 20,
    [CU_LIMIT_MALLOC_HEAP_SIZE] = 8u << 20,
    [CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2,
    [CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048,
    [CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 32,
    [CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0,
};

static CUresult check_ctx(CUcontext c, int allow_sticky)
{
    if (!tf__handle_is(c, H_CTX))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (atomic_load(&c->destroyed))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    int sticky = atomic_load(&c->sticky);
    if (sticky && !allow_sticky)
        return (CUresult)sticky;
    return CUDA_SUCCESS;
}

CUresult tf__ctx_current(CUcontext *out, int allow_sticky)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext c = stack[depth - 1];
    if ((rc = check_ctx(c, allow_sticky)))
        return rc;
    *out = c;
    return CUDA_SUCCESS;
}

CUresult tf__ctx_resolve(CUcontext in, CUcontext *out, int allow_sticky)
{
    if (!in)
        return tf__ctx_current(out, allow_sticky);
    CUresult rc = tf__init_check();
    if (rc || (rc = check_ctx(in, allow_sticky)))
        return rc;
    *out = in;
    return CUDA_SUCCESS;
}

static CUresult ctx_init_state(CUcontext c, unsigned flags)
{
    c->flags = flags;
    atomic_store(&c->sticky, 0);
    memcpy(c->limits, default_limits, sizeof(c->limits));
    c->cache_config = CU_FUNC_CACHE_PREFER_NONE;
    c->id = atomic_fetch_add(&tf__drv()->next_id, 1);
    struct CUstream_st *s;
    CUresult rc = tf__stream_new(c, 0, 0, S_LEGACY, &s);
    if (rc)
        return rc;
    c->null_stream = s;
    atomic_store(&c->destroyed, 0);
    return CUDA_SUCCESS;
}

CUresult tf__ctx_new(struct sim_device *d, unsigned flags, int primary, CUcontext *out)
{
    CUcontext c = calloc(1, sizeof(*c));
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->dev = d;
    c->primary = primary;
    pthread_mutex_init(&c->mu, NULL);
    CUresult rc = ctx_init_state(c, flags);
    if (rc == CUDA_SUCCESS && tf__handle_add(c, H_CTX) != 0)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc) {
        if (c->null_stream)
            tf__stream_release_handle(c->null_stream);
        pthread_mutex_destroy(&c->mu);
        free(c);
        return rc;
    }
    struct sim_driver *drv = tf__drv();
    pthread_mutex_lock(&drv->mu);
    c->next_all = drv->ctx_list;
    drv->ctx_list = c;
    pthread_mutex_unlock(&drv->mu);
    *out = c;
    return CUDA_SUCCESS;
}

CUresult tf__ctx_revive(CUcontext ctx, unsigned flags)
{
    return ctx_init_state(ctx, flags);
}

void tf__ctx_set_sticky(CUcontext ctx, CUresult err)
{
    int expected = 0;
    atomic_compare_exchange_strong(&ctx->sticky, &expected, (int)err);
}

/* Streams of CTX other than its legacy stream, collected under exec.mu. */
static void destroy_ctx_streams(CUcontext ctx)
{
    struct sim_exec *e = &ctx->dev->exec;
    for (;;) {
        struct CUstream_st *victim = NULL;
        pthread_mutex_lock(&e->mu);
        for (struct CUstream_st *s = e->streams; s; s = s->next)
            if (s->ctx == ctx && !s->destroyed) {
                victim = s;
                break;
            }
        pthread_mutex_unlock(&e->mu);
        if (!victim)
            return;
        tf__stream_release_handle(victim);
    }
}

CUresult tf__ctx_sync(CUcontext ctx)
{
    struct sim_exec *e = &ctx->dev->exec;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        int busy = 0;
        for (struct CUstream_st *s = e->streams; s; s = s->next)
            if (s->ctx == ctx && s->done_seq < s->last_seq) {
                busy = 1;
                break;
            }
        if (!busy)
            break;
        pthread_cond_wait(&e->done_cv, &e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return (CUresult)atomic_load(&ctx->sticky);
}

void tf__ctx_teardown(CUcontext ctx)
{
    tf__capture_ctx_gone(ctx);
    (void)tf__ctx_sync(ctx);
    atomic_store(&ctx->destroyed, 1);
#ifdef TF_SIM_HAVE_PTX
    tf__modules_free_ctx(ctx);
#endif
    tf__events_free_ctx(ctx);
    destroy_ctx_streams(ctx);
    tf__mem_free_ctx(ctx);
    tf__pools_ctx_gone(ctx);
    ctx->null_stream = NULL;
    tf__device_unref(ctx->dev);
    /* A primary context keeps its handle (retain revives it); others stay as zombies. */
}

/* ---- Creation and destruction ---------------------------------------------------------- */

static CUresult push(CUcontext c)
{
    if (depth >= STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    stack[depth++] = c;
    return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned sched = flags & CU_CTX_SCHED_MASK;
    if ((flags & ~0xFFu) || (sched != 0 && sched != CU_CTX_SCHED_SPIN &&
                             sched != CU_CTX_SCHED_YIELD && sched != CU_CTX_SCHED_BLOCKING_SYNC))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_device *d = tf__device(dev);
    if (!d)
        return CUDA_ERROR_INVALID_DEVICE;
    if ((rc = tf__device_ref(d)))
        return rc;
    CUcontext c;
    if ((rc = tf__ctx_new(d, flags, 0, &c))) {
        tf__device_unref(d);
        return rc;
    }
    if ((rc = push(c))) {
        tf__ctx_teardown(c); /* drops the device reference */
        return rc;
    }
    *pctx = c;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                unsigned int flags, CUdevice dev)
{
    if (numParams < 0 || (numParams > 0 && !paramsArray))
        return CUDA_ERROR_INVALID_VALUE;
    if (numParams > 0) /* execution affinity needs MPS; the simulator has none */
        return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
    return ctx_create(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                unsigned int flags, CUdevice dev)
{
    if (ctxCreateParams) {
        if (ctxCreateParams->numExecAffinityParams < 0 ||
            (ctxCreateParams->numExecAffinityParams > 0 && !ctxCreateParams->execAffinityParams))
            return CUDA_ERROR_INVALID_VALUE;
        if (ctxCreateParams->numExecAffinityParams > 0)
            return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
        if (ctxCreateParams->cigParams)
            return CUDA_ERROR_NOT_SUPPORTED;
    }
    return ctx_create(pctx, flags, dev);
}

CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!tf__handle_is(ctx, H_CTX) || ctx->primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (atomic_load(&ctx->destroyed))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    tf_exptab_ctx_gone(ctx); /* the runtime frees its state of CTX while CTX still works */
    tf__ctx_teardown(ctx);   /* the handle stays registered: CONTEXT_IS_DESTROYED from now on */
    /* Popped from the calling thread's stack if it is current here. */
    if (depth > 0 && stack[depth - 1] == ctx)
        depth--;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
    return cuCtxDestroy_v2(ctx);
}

/* ---- Current context ------------------------------------------------------------------- */

CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!tf__handle_is(ctx, H_CTX))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (atomic_load(&ctx->destroyed))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    return push(ctx);
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
    return cuCtxPushCurrent_v2(ctx);
}

CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (depth == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext c = stack[--depth];
    if (pctx)
        *pctx = c;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
    return cuCtxPopCurrent_v2(pctx);
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!ctx) {
        if (depth > 0)
            depth--;
        return CUDA_SUCCESS;
    }
    if (!tf__handle_is(ctx, H_CTX))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (atomic_load(&ctx->destroyed))
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    if (depth == 0)
        return push(ctx);
    stack[depth - 1] = ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = depth > 0 ? stack[depth - 1] : NULL;
    return CUDA_SUCCESS;
}

/* ---- Queries --------------------------------------------------------------------------- */

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    CUcontext c;
    CUresult rc = tf__ctx_current(&c, 0);
    if (rc)
        return rc;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = c->dev->index;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    CUcontext c;
    CUresult rc = tf__ctx_resolve(ctx, &c, 0);
    if (rc)
        return rc;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = c->dev->index;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void)
{
    return cuCtxSynchronize_v2(NULL);
}

CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
    CUcontext c;
    CUresult rc = tf__ctx_resolve(ctx, &c, 0);
    if (rc || (rc = tf__capture_sync_check(c, NULL)))
        return rc;
    rc = tf__ctx_sync(c);
    tf__pools_synced(c->dev);
    return rc;
}

CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    CUcontext c;
    CUresult rc = tf__ctx_resolve(ctx, &c, 1);
    if (rc)
        return rc;
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = TF_SIM_CTX_API_VERSION;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags)
{
    CUcontext c;
    CUresult rc = tf__ctx_current(&c, 0);
    if (rc)
        return rc;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = c->flags;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetFlags(unsigned int flags)
{
    CUcontext c;
    CUresult rc = tf__ctx_current(&c, 0);
    if (rc)
        return rc;
    unsigned sched = flags & CU_CTX_SCHED_MASK;
    if ((flags & ~0xFFu) || (sched != 0 && sched != CU_CTX_SCHED_SPIN &&
                             sched != CU_CTX_SCHED_YIELD && sched != CU_CTX_SCHED_BLOCKING_SYNC))
        return CUDA_ERROR_INVALID_VALUE;
    c->flags = flags;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    CUcontext c;
    CUresult rc = tf__ctx_resolve(ctx, &c, 1);
    if (rc)
        return rc;
    if (!ctxId)
        return CUDA_ERROR_INVALID_VALUE;
    *ctxId = c->id;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    CUcontext c;
    CUresult rc = tf__ctx_current(&c, 0);
    if (rc)
        return rc;
    if (!pvalue)
        return CUDA_ERROR_INVALID_VALUE;
    if ((unsigned)limit >= SIM_LIMIT_COUNT)
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    pthread_mutex_lock(&c->mu);
    *pvalue = c->limits[limit];
    pthread_mutex_unlock(&c->mu);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value)
{
    CUcontext c;
    CUresult rc = tf__ctx_current(&c, 0);
    if (rc)
        return rc;
    if ((unsigned)limit >= SIM_LIMIT_COUNT)
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    if (limit == CU_LIMIT_MAX_L2_FETCH_GRANULARITY && value != 0 && value != 32 && value != 64 &&
        value != 128)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&c->mu);
    c->limits[limit] = value;
    pthread_mutex_unlock(&c->mu);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    CUcontext c;
    CUresult rc = tf__ctx_current(&c, 0);
    if (rc)
        return rc;
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
    CUcontext c;
    CUresult rc = tf__ctx_current(&c, 0);
    if (rc)
        return rc;
    if (!pconfig)
        return CUDA_ERROR_INVALID_VALUE;
    *pconfig = c->cache_config;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config)
{
    CUcontext c;
    CUresult rc = tf__ctx_current(&c, 0);
    if (rc)
        return rc;
    if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    c->cache_config = config;
    return CUDA_SUCCESS;
}

/* ---- Profiler control ------------------------------------------------------------------ */

/* No profiler is ever attached to the simulated GPU: starting and stopping data collection
 * succeed with nothing to do, in a current context, as with the real driver run without one. */
CUresult CUDAAPI cuProfilerStart(void)
{
    CUcontext ctx;
    return tf__ctx_current(&ctx, 1);
}

CUresult CUDAAPI cuProfilerStop(void)
{
    CUcontext ctx;
    return tf__ctx_current(&ctx, 1);
}
