/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so: streams and events. Handles are chosen by the client so that creation,
 * destruction, event records and stream waits are fire-and-forget; queries, synchronisation
 * and elapsed time are round trips. Stream flags/priority/context are answered locally.
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

TFC_API CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    struct tfc_stream *s = r ? NULL : tfc_obj(t, (uintptr_t)hStream, TF_PROTO_H_STREAM);
    if (!r && !s)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (!r) {
        uint8_t p[TF_PROTO_SIZE_stream_req];
        struct tf_msg_stream_req m = {.ctx = s->ctx, .stream = s->id};
        tf_msg_stream_req_put(p, &m);
        r = tfc_async(t, TF_OP_STREAM_DESTROY, p, sizeof(p), NULL, 0);
        tf_htab_del(&t->objs, s->id);
        free(s);
    }
    return leave(t, r);
}

static CUresult stream_call(CUstream hs, uint16_t op)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    uint64_t sid = 0;
    if (!r)
        r = tfc_stream_id(t, hs, &sid);
    uint64_t ctx = r ? 0 : stream_ctx(t, sid);
    if (!r && sid <= TF_PROTO_STREAM_PER_THREAD && (!ctx || !tfc_ctx_of(t, ctx)))
        r = CUDA_ERROR_INVALID_CONTEXT;
    if (!r) {
        uint8_t p[TF_PROTO_SIZE_stream_req];
        struct tf_msg_stream_req m = {.ctx = ctx, .stream = sid};
        tf_msg_stream_req_put(p, &m);
        r = tfc_call(t, op, p, sizeof(p), NULL, 0);
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
    return stream_call(hStream, TF_OP_STREAM_SYNC);
}

TFC_API CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
    return stream_call(hStream, TF_OP_STREAM_QUERY);
}

TFC_API CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    uint64_t sid = 0;
    if (!r)
        r = tfc_stream_id(t, hStream, &sid);
    if (!r && !tfc_obj(t, (uintptr_t)hEvent, TF_PROTO_H_EVENT))
        r = CUDA_ERROR_INVALID_HANDLE;
    if (!r) {
        uint8_t p[TF_PROTO_SIZE_stream_wait_req];
        struct tf_msg_stream_wait_req m = {
            .ctx = stream_ctx(t, sid), .stream = sid, .event = (uintptr_t)hEvent, .flags = Flags};
        tf_msg_stream_wait_req_put(p, &m);
        r = tfc_async(t, TF_OP_STREAM_WAIT_EVENT, p, sizeof(p), NULL, 0);
    }
    return leave(t, r);
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

/* ---- events --------------------------------------------------------------------------------- */

TFC_API CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    if (!phEvent || (Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                         CU_EVENT_INTERPROCESS)))
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t;
    uint64_t ctx;
    CUresult r = enter(&t, &ctx);
    if (r)
        return r;
    struct tfc_event *e = calloc(1, sizeof(*e));
    if (!e)
        return leave(t, CUDA_ERROR_OUT_OF_MEMORY);
    e->id = tfc_new_id(t, TF_PROTO_H_EVENT);
    e->type = TF_PROTO_H_EVENT;
    e->ctx = ctx;
    e->flags = Flags;
    if (tf_htab_put(&t->objs, e->id, e) != 0) {
        free(e);
        return leave(t, CUDA_ERROR_OUT_OF_MEMORY);
    }
    uint8_t p[TF_PROTO_SIZE_event_create_req];
    struct tf_msg_event_create_req m = {.ctx = ctx, .event = e->id, .flags = Flags};
    tf_msg_event_create_req_put(p, &m);
    r = tfc_async(t, TF_OP_EVENT_CREATE, p, sizeof(p), NULL, 0);
    if (!r)
        *phEvent = (CUevent)(uintptr_t)e->id;
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    struct tfc_event *e = r ? NULL : tfc_obj(t, (uintptr_t)hEvent, TF_PROTO_H_EVENT);
    if (!r && !e)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (!r) {
        uint8_t p[TF_PROTO_SIZE_event_req];
        struct tf_msg_event_req m = {.ctx = e->ctx, .event = e->id};
        tf_msg_event_req_put(p, &m);
        r = tfc_async(t, TF_OP_EVENT_DESTROY, p, sizeof(p), NULL, 0);
        tf_htab_del(&t->objs, e->id);
        free(e);
    }
    return leave(t, r);
}

static CUresult event_record(CUevent hEvent, CUstream hStream, unsigned flags)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    struct tfc_event *e = r ? NULL : tfc_obj(t, (uintptr_t)hEvent, TF_PROTO_H_EVENT);
    uint64_t sid = 0;
    if (!r && !e)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (!r)
        r = tfc_stream_id(t, hStream, &sid);
    if (!r) {
        uint8_t p[TF_PROTO_SIZE_event_record_req];
        struct tf_msg_event_record_req m = {
            .ctx = e->ctx, .event = e->id, .stream = sid, .flags = flags};
        tf_msg_event_record_req_put(p, &m);
        r = tfc_async(t, TF_OP_EVENT_RECORD, p, sizeof(p), NULL, 0);
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
    return event_record(hEvent, hStream, 0);
}

TFC_API CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent, CUstream hStream,
                                                unsigned int flags)
{
    return event_record(hEvent, hStream, flags);
}

static CUresult event_call(CUevent hEvent, uint16_t op)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    struct tfc_event *e = r ? NULL : tfc_obj(t, (uintptr_t)hEvent, TF_PROTO_H_EVENT);
    if (!r && !e)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (!r) {
        uint8_t p[TF_PROTO_SIZE_event_req];
        struct tf_msg_event_req m = {.ctx = e->ctx, .event = e->id};
        tf_msg_event_req_put(p, &m);
        r = tfc_call(t, op, p, sizeof(p), NULL, 0);
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
    return event_call(hEvent, TF_OP_EVENT_QUERY);
}

TFC_API CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
    return event_call(hEvent, TF_OP_EVENT_SYNC);
}

TFC_API CUresult CUDAAPI cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    if (!pMilliseconds)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    struct tfc_event *a = r ? NULL : tfc_obj(t, (uintptr_t)hStart, TF_PROTO_H_EVENT);
    struct tfc_event *b = r ? NULL : tfc_obj(t, (uintptr_t)hEnd, TF_PROTO_H_EVENT);
    if (!r && (!a || !b))
        r = CUDA_ERROR_INVALID_HANDLE;
    if (!r) {
        uint8_t p[TF_PROTO_SIZE_event_elapsed_req];
        struct tf_msg_event_elapsed_req m = {.ctx = a->ctx, .start = a->id, .end = b->id};
        tf_msg_event_elapsed_req_put(p, &m);
        r = tfc_call(t, TF_OP_EVENT_ELAPSED, p, sizeof(p), NULL, 0);
    }
    if (!r) {
        struct tf_msg_elapsed_rep rep;
        tf_msg_elapsed_rep_get(t->reply.data, &rep);
        memcpy(pMilliseconds, &rep.ms_bits, sizeof(float));
    }
    return leave(t, r);
}

#undef cuEventElapsedTime
TFC_API CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
TFC_API CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}
