/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker sessions: context and memory requests (allocations against the hard VRAM limit,
 * copies and memsets validated against the client's own ranges) (session_int.h).
 */
#include "remote/worker/session_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- request handlers ----------------------------------------------------------------------
 * Each returns a CUresult (>= 0) or TF_EPROTO for a request that is malformed beyond CUDA
 * misuse (which closes the connection). SYNC handlers fill s->reply (pre-sized to the reply
 * layout and zeroed; status is patched in by the dispatcher). */

int tf__ws_h_ctx_create(struct session *s, struct req *q, int primary)
{
    struct tf_msg_ctx_create_req m;
    tf_msg_ctx_create_req_get(q->p, &m);
    if (!tf__ws_client_id_ok(s, m.ctx, TF_PROTO_H_CTX))
        PROTO_FAIL(q, "bad new context id");
    if (m.device >= (uint32_t)s->w->ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    if (primary && s->primary[m.device])
        PROTO_FAIL(q, "primary context retained twice");
    CUcontext ctx;
    CUresult r = tf_drv_ctx_create(s->d, &ctx, m.flags, s->w->devs[m.device].dev);
    if (r != CUDA_SUCCESS)
        return r;
    struct obj *o = tf__ws_obj_new(s, m.ctx, TF_PROTO_H_CTX, m.ctx);
    if (!o) {
        s->d->ctxDestroy(ctx);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    o->h.ctx = ctx;
    o->dev = (int)m.device;
    s->cur_id = m.ctx; /* cuCtxCreate made it current */
    if (primary)
        s->primary[m.device] = m.ctx;
    return CUDA_SUCCESS;
}

int tf__ws_h_ctx_destroy(struct session *s, struct req *q)
{
    struct tf_msg_ctx_req m;
    tf_msg_ctx_req_get(q->p, &m);
    struct obj *o = tf__ws_obj_get(s, m.ctx, TF_PROTO_H_CTX);
    if (!o)
        return CUDA_ERROR_INVALID_CONTEXT;
    tf__ws_destroy_ctx(s, o);
    return CUDA_SUCCESS;
}

int tf__ws_h_primary_drop(struct session *s, struct req *q)
{
    struct tf_msg_primary_drop_req m;
    tf_msg_primary_drop_req_get(q->p, &m);
    if (m.device >= (uint32_t)s->w->ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    struct obj *o = tf__ws_obj_get(s, s->primary[m.device], TF_PROTO_H_CTX);
    if (!o)
        return CUDA_ERROR_INVALID_CONTEXT;
    tf__ws_destroy_ctx(s, o);
    return CUDA_SUCCESS;
}

static int alloc_common(struct session *s, uint64_t ctx, uint64_t bytes, uint64_t width,
                        uint64_t height, uint32_t elemsize)
{
    struct obj *c;
    CUresult r = tf__ws_use_ctx(s, ctx, &c);
    if (r)
        return r;
    CUdeviceptr p = 0;
    size_t pitch = 0;
    uint64_t size = bytes;
    if (width) {
        if (!s->d->memAllocPitch)
            return CUDA_ERROR_NOT_SUPPORTED;
        r = s->d->memAllocPitch(&p, &pitch, width, height, elemsize);
        if (r)
            return r;
        size = (uint64_t)pitch * height;
        if (tf_worker_vram_reserve(s->w, c->dev, (int64_t)size) != 0) {
            s->d->memFree(p);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    } else {
        if (bytes == 0)
            return CUDA_ERROR_INVALID_VALUE;
        if (bytes > INT64_MAX)
            return CUDA_ERROR_OUT_OF_MEMORY;
        /* Refused: again if the pools gave memory back since they were last looked at (a
         * refusal counts in the limit region's statistics once). */
        if (tf_worker_vram_reserve(s->w, c->dev, (int64_t)bytes) != 0 &&
            (tf__ws_pools_settle(s, c->dev) == 0 ||
             tf_worker_vram_reserve(s->w, c->dev, (int64_t)bytes) != 0))
            return CUDA_ERROR_OUT_OF_MEMORY;
        r = s->d->memAlloc(&p, bytes);
        if (r) {
            tf_worker_vram_release(s->w, c->dev, (int64_t)bytes);
            return r;
        }
    }
    if (tf_rangeset_add(&s->mem, p, size, 0, ctx) != 0) {
        s->d->memFree(p);
        tf_worker_vram_release(s->w, c->dev, (int64_t)size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct tf_msg_mem_alloc_rep rep = {.dptr = p, .pitch = pitch};
    tf_msg_mem_alloc_rep_put(s->reply.data, &rep);
    return CUDA_SUCCESS;
}

int tf__ws_h_mem_alloc(struct session *s, struct req *q)
{
    struct tf_msg_mem_alloc_req m;
    tf_msg_mem_alloc_req_get(q->p, &m);
    return alloc_common(s, m.ctx, m.bytesize, 0, 0, 0);
}

int tf__ws_h_mem_pitch(struct session *s, struct req *q)
{
    struct tf_msg_mem_pitch_req m;
    tf_msg_mem_pitch_req_get(q->p, &m);
    if (m.width == 0 || m.height == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_common(s, m.ctx, 0, m.width, m.height, m.elemsize);
}

int tf__ws_h_mem_free(struct session *s, struct req *q)
{
    struct tf_msg_mem_free_req m;
    tf_msg_mem_free_req_get(q->p, &m);
    struct tf_range r;
    const struct tf_range *f = tf_rangeset_find(&s->mem, m.dptr, 0);
    /* cuMemAlloc's memory, or a pool's (charged to the pool) */
    if (!f || f->base != m.dptr ||
        (f->owner != 0 && TF_PROTO_HANDLE_TYPE(f->owner) != TF_PROTO_H_POOL) ||
        tf_rangeset_del(&s->mem, m.dptr, f->owner, &r) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult cr = tf__ws_use_ctx(s, r.aux, NULL);
    if (cr == CUDA_SUCCESS)
        cr = s->d->memFree((CUdeviceptr)r.base);
    if (r.owner == 0)
        tf__ws_vram_freed(s, r.aux, (int64_t)r.size, cr);
    return cr;
}

int tf__ws_h_mem_info(struct session *s, struct req *q)
{
    struct tf_msg_ctx_req m;
    tf_msg_ctx_req_get(q->p, &m);
    struct obj *c;
    CUresult r = tf__ws_use_ctx(s, m.ctx, &c);
    if (r)
        return r;
    tf__ws_pools_settle(s, c->dev);
    size_t fr = 0, tot = 0;
    r = s->d->memGetInfo(&fr, &tot);
    if (r)
        return r;
    struct tf_msg_mem_info_rep rep = {0};
    tf__worker_vram_view(s->w, c->dev, fr, tot, &rep.free, &rep.total);
    tf_msg_mem_info_rep_put(s->reply.data, &rep);
    return CUDA_SUCCESS;
}

/* Copies between the client's host memory and the device cannot be captured: the bytes pass
 * through this session's staging ring, which a replay would read or overwrite long after. In
 * a stream being captured they are refused with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and the
 * capture is invalidated, as the driver does for an operation it cannot capture (a
 * synchronisation of the capturing stream is one). */
static CUresult no_capture(struct session *s, CUstream st)
{
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!s->d->streamIsCapturing || s->d->streamIsCapturing(st, &cs) != CUDA_SUCCESS ||
        cs != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return CUDA_SUCCESS;
    (void)s->d->streamSynchronize(st);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

/* One HtoD chunk of N bytes to M->dst. The data is at SRC, or (SRC NULL) still in the socket:
 * then it is received straight into the staging ring. Returns a CUresult, or TF_EIO when the
 * connection failed while the data was read. */
int tf__ws_htod_chunk(struct session *s, const struct tf_msg_htod_req *m, const uint8_t *src,
                      size_t n)
{
    CUstream st = NULL;
    CUresult r = tf__ws_use_ctx(s, m->ctx, NULL);
    if (!r)
        r = tf__ws_get_stream(s, m->stream, &st);
    if (!r && n && !tf__ws_mem_ok(s, m->dst, n))
        r = CUDA_ERROR_INVALID_VALUE;
    if (!r)
        r = no_capture(s, st);
    if (n && tf__ws_stage_ready(s)) {
        size_t off, charge;
        uint8_t *p = tf__ws_stage_alloc(s, n, &off, &charge);
        if (!src && tf_wconn_read_body(s->c, p, n) != 0)
            return TF_EIO;
        if (r)
            return r; /* the bytes are consumed, the region is not handed out */
        if (src)
            memcpy(p, src, n);
        CUevent ev = NULL;
        r = tf__ws_use_ctx(s, m->ctx, NULL);
        if (!r)
            r = s->d->memcpyHtoDAsync(m->dst, p, n, st);
        if (!r && tf__ws_ev_get(s, m->ctx, &ev) == CUDA_SUCCESS &&
            s->d->eventRecord(ev, st) == CUDA_SUCCESS) {
            tf_stage_push(&s->stage, off, n, charge, ev, m->ctx);
            return CUDA_SUCCESS;
        }
        /* Not tracked: wait for the copy so the region may be reused at once. */
        if (!r) {
            if (ev)
                s->d->eventDestroy(ev);
            tf_wconn_wait_begin(s->c);
            r = s->d->streamSynchronize(st);
            tf_wconn_wait_end(s->c);
        }
        return r;
    }
    if (!src && n) {
        /* No ring: receive into the payload buffer and copy synchronously from it. */
        tf_buf_reset(&s->c->payload);
        uint8_t *p = tf_buf_grow(&s->c->payload, n);
        if (!p || tf_wconn_read_body(s->c, p, n) != 0)
            return TF_EIO;
        src = p;
    }
    if (r || n == 0)
        return r;
    tf_wconn_wait_begin(s->c);
    r = s->d->memcpyHtoDAsync(m->dst, src, n, st);
    if (!r)
        r = s->d->streamSynchronize(st);
    tf_wconn_wait_end(s->c);
    return r;
}

int tf__ws_h_htod(struct session *s, struct req *q)
{
    struct tf_msg_htod_req m;
    tf_msg_htod_req_get(q->p, &m);
    return tf__ws_htod_chunk(s, &m, q->tail, q->tlen);
}

static void send_dtoh_done(struct session *s, uint64_t tag, CUresult r)
{
    uint8_t p[TF_PROTO_SIZE_dtoh_done_ev];
    struct tf_msg_dtoh_done_ev ev = {.tag = tag, .status = (uint32_t)r};
    tf_msg_dtoh_done_ev_put(p, &ev);
    (void)tf_wconn_send_frame(s->c, TF_OP_DTOH_DONE, 0, 0, p, sizeof(p), NULL, 0);
}

static int send_data(struct session *s, uint64_t tag, uint64_t off, const void *p, size_t n)
{
    uint8_t hdr[TF_PROTO_SIZE_data_ev];
    struct tf_msg_data_ev ev = {.tag = tag, .offset = off};
    tf_msg_data_ev_put(hdr, &ev);
    return tf_wconn_send_frame(s->c, TF_OP_DATA, 0, 0, hdr, sizeof(hdr), p, n);
}

/* Device to host through the ring cut into DTOH_SLOTS chunk slots: while chunk k is sent, the
 * device copies of the next DTOH_SLOTS - 1 chunks are queued or running, so neither the
 * copy engine nor the socket waits for the other. */
#define DTOH_SLOTS (STAGE_BYTES / TF_PROTO_CHUNK)
static CUresult dtoh_pipelined(struct session *s, const struct tf_msg_dtoh_req *m, CUstream st,
                               int *sent_fail)
{
    tf__ws_stage_drain(s); /* the ring is ours alone now */
    CUresult r = tf__ws_use_ctx(s, m->ctx, NULL);
    CUevent ev[DTOH_SLOTS] = {NULL};
    uint64_t nchunks = (m->len + TF_PROTO_CHUNK - 1) / TF_PROTO_CHUNK;
    uint64_t nslots = nchunks < DTOH_SLOTS ? nchunks : DTOH_SLOTS;
    for (uint64_t i = 0; !r && i < nslots; i++)
        r = tf__ws_ev_get(s, m->ctx, &ev[i]);
#define CHUNK_LEN(k) ((size_t)((k) + 1 < nchunks ? TF_PROTO_CHUNK : m->len - (k)*TF_PROTO_CHUNK))
#define SLOT(k) (s->stage_mem + ((k) % DTOH_SLOTS) * TF_PROTO_CHUNK)
        /* Queues the copy of chunk K into its slot. */
#define QUEUE(k)                                                                                   \
    do {                                                                                           \
        r = s->d->memcpyDtoHAsync(SLOT(k), m->src + (k)*TF_PROTO_CHUNK, CHUNK_LEN(k), st);         \
        if (!r)                                                                                    \
            r = s->d->eventRecord(ev[(k) % DTOH_SLOTS], st);                                       \
    } while (0)
    for (uint64_t k = 0; !r && k < nslots; k++)
        QUEUE(k);
    for (uint64_t k = 0; !r && k < nchunks; k++) {
        tf_wconn_wait_begin(s->c);
        r = s->d->eventSynchronize(ev[k % DTOH_SLOTS]);
        tf_wconn_wait_end(s->c);
        if (r)
            break;
        if (send_data(s, m->tag, k * TF_PROTO_CHUNK, SLOT(k), CHUNK_LEN(k)) != 0) {
            *sent_fail = 1;
            break;
        }
        if (k + DTOH_SLOTS < nchunks)
            QUEUE(k + DTOH_SLOTS); /* the slot just sent is free again */
    }
#undef QUEUE
#undef SLOT
#undef CHUNK_LEN
    /* An error may leave copies in flight into the ring: let them finish. */
    if ((r || *sent_fail) && tf__ws_use_ctx(s, m->ctx, NULL) == CUDA_SUCCESS)
        (void)s->d->streamSynchronize(st);
    for (uint64_t i = 0; i < nslots; i++)
        if (ev[i])
            tf__ws_ev_put(s, m->ctx, ev[i]);
    return r;
}

int tf__ws_h_dtoh(struct session *s, struct req *q)
{
    struct tf_msg_dtoh_req m;
    tf_msg_dtoh_req_get(q->p, &m);
    if (m.tag == 0)
        PROTO_FAIL(q, "DtoH transfer without a tag");
    CUstream st;
    CUresult r = tf__ws_use_ctx(s, m.ctx, NULL);
    if (!r)
        r = tf__ws_get_stream(s, m.stream, &st);
    if (!r && m.len && !tf__ws_mem_ok(s, m.src, m.len))
        r = CUDA_ERROR_INVALID_VALUE;
    if (!r)
        r = no_capture(s, st);
    int sent_fail = 0;
    if (!r && m.len && tf__ws_stage_ready(s)) {
        r = dtoh_pipelined(s, &m, st, &sent_fail);
    } else if (!r && m.len) {
        uint8_t *tmp = malloc(TF_PROTO_CHUNK);
        if (!tmp)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        for (uint64_t off = 0; !r && off < m.len;) {
            size_t n = m.len - off < TF_PROTO_CHUNK ? (size_t)(m.len - off) : TF_PROTO_CHUNK;
            tf_wconn_wait_begin(s->c);
            r = s->d->memcpyDtoHAsync(tmp, m.src + off, n, st);
            if (!r)
                r = s->d->streamSynchronize(st);
            tf_wconn_wait_end(s->c);
            if (!r && send_data(s, m.tag, off, tmp, n) != 0) {
                sent_fail = 1;
                break;
            }
            off += n;
        }
        free(tmp);
    }
    if (!sent_fail)
        send_dtoh_done(s, m.tag, r);
    return r;
}

int tf__ws_h_dtod(struct session *s, struct req *q)
{
    struct tf_msg_dtod_req m;
    tf_msg_dtod_req_get(q->p, &m);
    CUstream st;
    CUresult r = tf__ws_use_ctx(s, m.ctx, NULL);
    if (!r)
        r = tf__ws_get_stream(s, m.stream, &st);
    if (r || m.len == 0)
        return r;
    if (!tf__ws_mem_ok(s, m.dst, m.len) || !tf__ws_mem_ok(s, m.src, m.len))
        return CUDA_ERROR_INVALID_VALUE;
    return s->d->memcpyDtoDAsync(m.dst, m.src, m.len, st);
}

int tf__ws_h_memset(struct session *s, struct req *q)
{
    struct tf_msg_memset_req m;
    tf_msg_memset_req_get(q->p, &m);
    if (m.elemsize != 1 && m.elemsize != 2 && m.elemsize != 4)
        PROTO_FAIL(q, "memset element size not 1, 2 or 4");
    CUstream st;
    CUresult r = tf__ws_use_ctx(s, m.ctx, NULL);
    if (!r)
        r = tf__ws_get_stream(s, m.stream, &st);
    if (r || m.count == 0)
        return r;
    if (m.count > UINT64_MAX / m.elemsize || !tf__ws_mem_ok(s, m.dst, m.count * m.elemsize))
        return CUDA_ERROR_INVALID_VALUE;
    if (m.elemsize == 1)
        return s->d->memsetD8Async(m.dst, (unsigned char)m.value, m.count, st);
    if (m.elemsize == 2)
        return s->d->memsetD16Async(m.dst, (unsigned short)m.value, m.count, st);
    return s->d->memsetD32Async(m.dst, m.value, m.count, st);
}

int tf__ws_h_ptr_attr(struct session *s, struct req *q)
{
    struct tf_msg_ptr_attr_req m;
    tf_msg_ptr_attr_req_get(q->p, &m);
    const struct tf_range *rg = tf_rangeset_find(&s->mem, m.ptr, 0);
    if (!rg)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t v = 0;
    switch (m.attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        v = rg->aux;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        v = (uint64_t)tf__ws_ctx_dev(s, rg->aux);
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        v = CU_MEMORYTYPE_DEVICE;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        v = m.ptr;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        v = rg->base;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        v = rg->size;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        v = 0;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        v = 1;
        break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: /* the client's id of the pool it came from */
        v = TF_PROTO_HANDLE_TYPE(rg->owner) == TF_PROTO_H_POOL ? rg->owner : 0;
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: {
        CUresult r = tf__ws_use_ctx(s, rg->aux, NULL);
        if (r)
            return r;
        if (!s->d->pointerGetAttribute)
            return CUDA_ERROR_NOT_SUPPORTED;
        unsigned long long bid = 0;
        unsigned int sm = 0;
        if (m.attr == CU_POINTER_ATTRIBUTE_BUFFER_ID) {
            r = s->d->pointerGetAttribute(&bid, (CUpointer_attribute)m.attr, m.ptr);
            v = bid;
        } else {
            r = s->d->pointerGetAttribute(&sm, (CUpointer_attribute)m.attr, m.ptr);
            v = sm;
        }
        if (r)
            return r;
        break;
    }
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    struct tf_msg_ptr_attr_rep rep = {.value = v};
    tf_msg_ptr_attr_rep_put(s->reply.data, &rep);
    return CUDA_SUCCESS;
}

void tf__ws_blob_drop(struct session *s)
{
    tf_buf_free(&s->blob);
    if (s->blob_charged)
        tf_worker_blob_release(s->w, s->blob_charged);
    s->blob_charged = 0;
}

/* Module images are charged to the worker-wide budget by the buffer's capacity: before an
 * append, for what it may grow to (twice what it then holds, plus the loader's NUL); after,
 * for what it took. A client over the budget has its image dropped, and its MODULE_LOAD
 * fails with CUDA_ERROR_OUT_OF_MEMORY. */
int tf__ws_h_blob(struct session *s, struct req *q)
{
    if (s->blob_refused)
        return CUDA_SUCCESS; /* the rest of an image that already did not fit */
    size_t need = s->blob.len + q->tlen + 1;
    if (need > s->blob.max)
        PROTO_FAIL(q, "module image larger than the maximum");
    size_t bound = need > s->blob.max / 2 ? s->blob.max : 2 * need;
    if (bound < 256)
        bound = 256;
    if (bound < s->blob.cap)
        bound = s->blob.cap;
    if ((int64_t)bound > s->blob_charged) {
        if (tf_worker_blob_reserve(s->w, (int64_t)bound - s->blob_charged) != 0) {
            tf_log(TF_LOG_WARN, "worker",
                   "conn %llu: module image of %zu+ bytes refused: the worker's module buffer "
                   "budget (%lld bytes) is in use",
                   (unsigned long long)s->c->id, need, (long long)s->w->blob_limit);
            tf__ws_blob_drop(s);
            s->blob_refused = 1;
            return CUDA_SUCCESS;
        }
        s->blob_charged = (int64_t)bound;
    }
    bool ok = tf_buf_append(&s->blob, q->tail, q->tlen) == 0 && tf_buf_reserve(&s->blob, 1) == 0;
    if ((int64_t)s->blob.cap < s->blob_charged) {
        tf_worker_blob_release(s->w, s->blob_charged - (int64_t)s->blob.cap);
        s->blob_charged = (int64_t)s->blob.cap;
    }
    if (!ok) {
        tf__ws_blob_drop(s);
        s->blob_refused = 1;
    }
    return CUDA_SUCCESS;
}
