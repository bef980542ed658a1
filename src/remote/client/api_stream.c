/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so: streams and events, the parts that are not plain forwards (calls.def):
 * stream creation (the client chooses the handle, so creation is fire-and-forget, and keeps
 * the stream's flags and priority to answer their queries locally) and the checks of event
 * creation. Synchronisation, queries, records, waits and destruction are in calls.def.
 */
#include "remote/client/client.h"

#include <stdlib.h>
#include <string.h>

static CUresult leave(struct tfc *t, CUresult r)
{
    pthread_mutex_unlock(&t->lock);
    return r;
}

static CUresult enter(struct tfc **tp, uint64_t *ctx)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    *tp = t;
    CUresult r = tfc_ready(t);
    if (!r) {
        *ctx = tfc_current();
        if (!*ctx || !tfc_ctx_of(t, *ctx))
            r = CUDA_ERROR_INVALID_CONTEXT;
        else
            r = tfc_sticky(t, *ctx);
    }
    if (r)
        pthread_mutex_unlock(&t->lock);
    return r;
}

/* The context an operation on stream SID runs in: the stream's own, else the current one. */
static uint64_t stream_ctx(struct tfc *t, uint64_t sid)
{
    struct tfc_stream *s = tfc_obj(t, sid, TF_PROTO_H_STREAM);
    return s ? s->ctx : tfc_current();
}

/* ---- streams -------------------------------------------------------------------------------- */

static CUresult stream_create(CUstream *ph, unsigned flags, int priority)
{
    if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t;
    uint64_t ctx;
    CUresult r = enter(&t, &ctx);
    if (r)
        return r;
    struct tfc_stream *s = calloc(1, sizeof(*s));
    if (!s)
        return leave(t, CUDA_ERROR_OUT_OF_MEMORY);
    s->id = tfc_new_id(t, TF_PROTO_H_STREAM);
    s->type = TF_PROTO_H_STREAM;
    s->ctx = ctx;
    s->flags = flags;
    s->priority = priority;
    if (tf_htab_put(&t->objs, s->id, s) != 0) {
        free(s);
        return leave(t, CUDA_ERROR_OUT_OF_MEMORY);
    }
    uint8_t p[TF_PROTO_SIZE_stream_create_req];
    struct tf_msg_stream_create_req m = {
        .ctx = ctx, .stream = s->id, .flags = flags, .priority = (uint32_t)priority};
    tf_msg_stream_create_req_put(p, &m);
    r = tfc_async(t, TF_OP_STREAM_CREATE, p, sizeof(p), NULL, 0);
    if (!r)
        *ph = (CUstream)(uintptr_t)s->id;
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return stream_create(phStream, Flags, 0);
}

TFC_API CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                                                    int priority)
{
    return stream_create(phStream, flags, priority);
}

TFC_API CUresult CUDAAPI cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    uint64_t sid = 0;
    if (!r)
        r = tfc_stream_id(t, hStream, &sid);
    if (!r) {
        struct tfc_stream *s = tfc_obj(t, sid, TF_PROTO_H_STREAM);
        *flags = s ? s->flags : 0;
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int *priority)
{
    if (!priority)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    uint64_t sid = 0;
    if (!r)
        r = tfc_stream_id(t, hStream, &sid);
    if (!r) {
        struct tfc_stream *s = tfc_obj(t, sid, TF_PROTO_H_STREAM);
        *priority = s ? s->priority : 0;
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    uint64_t sid = 0;
    if (!r)
        r = tfc_stream_id(t, hStream, &sid);
    uint64_t ctx = r ? 0 : stream_ctx(t, sid);
    if (!r && (!ctx || !tfc_ctx_of(t, ctx)))
        r = CUDA_ERROR_INVALID_CONTEXT;
    if (!r)
        *pctx = (CUcontext)(uintptr_t)ctx;
    return leave(t, r);
}

/* ---- host functions ----------------------------------------------------------------------
 * A host function runs in this process, after the work queued before it in the stream and
 * before the work queued after it. The client waits for the stream (one round trip) and runs
 * it on the calling thread: every ordering CUDA promises holds, but the call returns only
 * once the stream has reached the function and it has run (a local driver runs it later on a
 * thread of its own). In a stream being captured it is a host step of the captured program
 * (api_capture.c), run the same way by each launch. */

TFC_API CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    uint64_t sid = 0;
    CUresult r = tfc_ready(t);
    if (!r)
        r = tfc_stream_id(t, hStream, &sid);
    struct tfc_step st = {.kind = TFC_STEP_HOST, .host = userData, .fn = fn};
    if (r || tfc_capture_step(t, sid, &st, &r))
        return leave(t, r);
    pthread_mutex_unlock(&t->lock);
    r = cuStreamSynchronize(hStream);
    if (r == CUDA_SUCCESS)
        fn(userData);
    return r;
}

TFC_API CUresult CUDAAPI cuStreamAddCallback(CUstream hStream, CUstreamCallback callback,
                                             void *userData, unsigned int flags)
{
    if (!callback || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = cuStreamSynchronize(hStream);
    /* Not in a capture (as locally: the capture is invalidated, the callback never runs). */
    if (r != CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && r != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
        callback(hStream, r, userData);
    return r;
}

/* ---- events --------------------------------------------------------------------------------- */

TFC_API CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    /* Checked here: creation is asynchronous, and a bad flag is an error of this call. */
    if (Flags &
        ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS))
        return CUDA_ERROR_INVALID_VALUE;
    return tfc_fwd_cuEventCreate(phEvent, Flags);
}

#undef cuEventElapsedTime
TFC_API CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
TFC_API CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}
