/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker sessions: executes one client's requests on the real driver with per-client
 * handle tables and pointer validation, hard VRAM limits, deferred errors of asynchronous
 * requests, and full cleanup at disconnect; see session.h. This file: stream creation, the
 * dispatcher and the connection loop; the rest is in sess_*.c (session_int.h).
 */
#include "remote/worker/session_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- streams --------------------------------------------------------------------- */

static int h_stream_create(struct session *s, struct req *q)
{
    struct tf_msg_stream_create_req m;
    tf_msg_stream_create_req_get(q->p, &m);
    if (!tf__ws_client_id_ok(s, m.stream, TF_PROTO_H_STREAM))
        PROTO_FAIL(q, "bad new stream id");
    CUresult r = tf__ws_use_ctx(s, m.ctx, NULL);
    if (r)
        return r;
    CUstream st;
    if (m.priority != 0 && s->d->streamCreateWithPriority)
        r = s->d->streamCreateWithPriority(&st, m.flags, (int)m.priority);
    else
        r = s->d->streamCreate(&st, m.flags);
    if (r)
        return r;
    struct obj *o = tf__ws_obj_new(s, m.stream, TF_PROTO_H_STREAM, m.ctx);
    if (!o) {
        s->d->streamDestroy(st);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    o->h.st = st;
    return CUDA_SUCCESS;
}

/* ---- dispatch ------------------------------------------------------------------------------- */

static int dispatch(struct session *s, uint16_t op, struct req *q)
{
    switch (op) {
    case TF_OP_FLUSH:
        /* Synchronous copies end with FLUSH: their staged chunks must have landed. */
        if (s->stage_mem)
            tf__ws_stage_drain(s);
        return CUDA_SUCCESS;
    case TF_OP_GOODBYE:
        s->goodbye = 1;
        return CUDA_SUCCESS;
    case TF_OP_CTX_CREATE:
        return tf__ws_h_ctx_create(s, q, 0);
    case TF_OP_PRIMARY_RETAIN:
        return tf__ws_h_ctx_create(s, q, 1);
    case TF_OP_CTX_DESTROY:
        return tf__ws_h_ctx_destroy(s, q);
    case TF_OP_PRIMARY_DROP:
        return tf__ws_h_primary_drop(s, q);
    case TF_OP_MEM_ALLOC:
        return tf__ws_h_mem_alloc(s, q);
    case TF_OP_MEM_ALLOC_PITCH:
        return tf__ws_h_mem_pitch(s, q);
    case TF_OP_MEM_FREE:
        return tf__ws_h_mem_free(s, q);
    case TF_OP_MEM_GET_INFO:
        return tf__ws_h_mem_info(s, q);
    case TF_OP_MEMCPY_HTOD:
        return tf__ws_h_htod(s, q);
    case TF_OP_MEMCPY_DTOH:
        return tf__ws_h_dtoh(s, q);
    case TF_OP_MEMCPY_DTOD:
        return tf__ws_h_dtod(s, q);
    case TF_OP_MEMSET:
        return tf__ws_h_memset(s, q);
    case TF_OP_POINTER_ATTR:
        return tf__ws_h_ptr_attr(s, q);
    case TF_OP_BLOB_APPEND:
        return tf__ws_h_blob(s, q);
    case TF_OP_MODULE_LOAD:
        return tf__ws_h_module_load(s, q);
    case TF_OP_MODULE_UNLOAD:
        return tf__ws_h_module_unload(s, q);
    case TF_OP_MODULE_GET_FUNC:
        return tf__ws_h_get_func(s, q, 0);
    case TF_OP_KERNEL_GET_FUNC:
        return tf__ws_h_get_func(s, q, 1);
    case TF_OP_MODULE_GET_GLOBAL:
        return tf__ws_h_get_global(s, q);
    case TF_OP_LAUNCH:
        return tf__ws_h_launch(s, q);
    case TF_OP_GRAPH_KERNEL_NODE:
        return tf__ws_h_graph_kernel_node(s, q);
    case TF_OP_STREAM_CREATE:
        return h_stream_create(s, q);
    case TF_OP_CALL:
        return tf__ws_h_call(s, q, 1);
    case TF_OP_CALL_ASYNC:
        return tf__ws_h_call(s, q, 0);
    default:
        q->why = "opcode not valid here";
        return TF_EPROTO;
    }
}

/* Executes one request (a frame or a batch record). */
static bool is_capture_err(CUresult r)
{
    return r == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
}

static int exec_one(struct session *s, uint16_t op, const uint8_t *p, size_t len, uint64_t req_id,
                    const char **why)
{
    const struct tf_proto_op_info *info = tf_proto_op(op);
    struct req q = {.p = p};
    int rc = tf_proto_req_split(op, p, len, &q.tail, &q.tlen, why);
    if (rc)
        return rc;
    int sync = info->kind == TF_PROTO_KIND_SYNC;
    if (sync) {
        tf_buf_reset(&s->reply);
        uint8_t *r = tf_buf_grow(&s->reply, info->rep_size);
        if (!r) {
            *why = "out of memory";
            return TF_ENOMEM;
        }
        memset(r, 0, info->rep_size);
    }
    rc = dispatch(s, op, &q);
    if (rc < 0) {
        *why = q.why ? q.why : "malformed request";
        return rc;
    }
    CUresult st = (CUresult)rc;
    if (!sync) {
        tf__ws_defer(s, st);
        return 0;
    }
    /* A capture an asynchronous request broke fails once, at the call that ends it (locally
     * the request itself fails, then cuStreamEndCapture). */
    if (is_capture_err(s->pending) && is_capture_err(st))
        s->pending = CUDA_SUCCESS;
    if (s->pending && (st == CUDA_SUCCESS || st == CUDA_ERROR_NOT_READY)) {
        st = s->pending;
        s->pending = CUDA_SUCCESS;
    }
    tf__put_4(s->reply.data, (uint32_t)st);
    rc = tf_wconn_send_frame(s->c, op, TF_PROTO_F_REPLY, req_id, s->reply.data, s->reply.len, NULL,
                             0);
    return rc;
}

void tf_worker_serve(void *arg, struct tf_wconn *c)
{
    struct session *s = calloc(1, sizeof(*s));
    if (!s) {
        tf_wconn_send_close(c, TF_PROTO_CLOSE_SHUTDOWN, "worker out of memory");
        return;
    }
    s->w = arg;
    s->d = &s->w->drv;
    s->c = c;
    tf_htab_init(&s->objs, MAX_OBJECTS);
    tf_htab_init(&s->pools, MAX_OBJECTS);
    tf_rangeset_init(&s->mem, MAX_RANGES);
    tf_rangeset_init(&s->gmem, MAX_RANGES);
    tf_buf_init(&s->blob, TF_PROTO_MAX_BLOB + 1);
    tf_buf_init(&s->reply, TF_PROTO_MAX_PAYLOAD);
    /* This thread starts with no current context. */
    s->d->ctxSetCurrent(NULL);
    while (!s->goodbye) {
        struct tf_msg_frame_hdr h;
        const char *why = NULL;
        if (s->stage_mem && s->stage.qn)
            tf__ws_stage_reap(s);
        tf_wconn_wait_end(c); /* a stretch of throttled launches is over */
        int rc = tf_wconn_read_header(c, &h, &why);
        if (rc == 0 && h.opcode == TF_OP_MEMCPY_HTOD && h.length >= TF_PROTO_SIZE_htod_req &&
            h.length - TF_PROTO_SIZE_htod_req <= TF_PROTO_CHUNK) {
            uint8_t fixed[TF_PROTO_SIZE_htod_req];
            struct tf_msg_htod_req m;
            rc = tf_wconn_read_body(c, fixed, sizeof(fixed));
            if (rc == 0) {
                tf_msg_htod_req_get(fixed, &m);
                rc = tf__ws_htod_chunk(s, &m, NULL, h.length - TF_PROTO_SIZE_htod_req);
                if (rc > 0) {
                    tf__ws_defer(s, (CUresult)rc);
                    rc = 0;
                }
            }
            if (rc == TF_EIO)
                break;
            continue;
        }
        if (rc == 0) {
            tf_buf_reset(&c->payload);
            uint8_t *dst = tf_buf_grow(&c->payload, h.length);
            if (!dst && h.length) {
                rc = TF_EPROTO;
                why = "cannot buffer the payload";
            } else {
                rc = tf_wconn_read_body(c, dst, h.length);
            }
        }
        if (rc == 0 && h.opcode == TF_OP_BATCH) {
            struct tf_proto_batch_iter it;
            uint16_t op;
            const uint8_t *body;
            size_t blen;
            tf_proto_batch_begin(&it, c->payload.data, c->payload.len);
            while ((rc = tf_proto_batch_next(&it, &op, &body, &blen, &why)) == 1) {
                rc = exec_one(s, op, body, blen, 0, &why);
                if (rc)
                    break;
            }
        } else if (rc == 0) {
            if (h.opcode == TF_OP_HELLO) {
                rc = TF_EPROTO;
                why = "HELLO after the handshake";
            } else {
                rc = exec_one(s, h.opcode, c->payload.data, c->payload.len, h.req_id, &why);
            }
        }
        if (rc == TF_EIO)
            break;
        if (rc) {
            tf_log(TF_LOG_WARN, "worker", "conn %llu from %s (pid %u): closing: %s",
                   (unsigned long long)c->id, c->peer, c->pid, why ? why : tf_strerror(rc));
            tf_wconn_send_close(c, TF_PROTO_CLOSE_PROTOCOL, why ? why : tf_strerror(rc));
            break;
        }
    }
    tf__ws_session_cleanup(s);
    tf_htab_free(&s->objs);
    tf_htab_free(&s->pools);
    tf_rangeset_free(&s->mem);
    tf_rangeset_free(&s->gmem);
    tf__ws_blob_drop(s);
    tf_buf_free(&s->reply);
    free(s->staging);
    s->d->ctxSetCurrent(NULL);
    free(s);
}
