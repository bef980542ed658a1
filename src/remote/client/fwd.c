/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so: the plain driver calls of calls.def. One generic forwarder checks the
 * handles and the context a call names as the worker will (so errors come from the same call
 * as on a local driver), encodes it as a CALL (round trip) or CALL_ASYNC (batched) request and
 * decodes the outputs; the exported entry points are generated from the list.
 */
#include "remote/client/client.h"

#include <stdlib.h>
#include <string.h>

struct tfc_obj *tfc_obj_add(struct tfc *t, uint64_t id, unsigned type, uint64_t ctx)
{
    struct tfc_obj *o = calloc(1, type == TF_PROTO_H_STREAM  ? sizeof(struct tfc_stream)
                                  : type == TF_PROTO_H_EVENT ? sizeof(struct tfc_event)
                                  : type == TF_PROTO_H_POOL  ? sizeof(struct tfc_pool)
                                  : type == TF_PROTO_H_NODE  ? sizeof(struct tfc_node)
                                                             : sizeof(*o));
    if (!o)
        return NULL;
    o->id = id;
    o->type = type;
    o->ctx = ctx;
    if (tf_htab_put(&t->objs, id, o) != 0) {
        free(o);
        return NULL;
    }
    return o;
}

void tfc_obj_drop(struct tfc *t, struct tfc_obj *o)
{
    tf_htab_del(&t->objs, o->id);
    if (o->type == TF_PROTO_H_STREAM)
        tfc_capture_gone(t, (struct tfc_stream *)o);
    if (o->type == TF_PROTO_H_FUNC || o->type == TF_PROTO_H_KERNEL)
        tfc_func_free((struct tfc_func *)o);
    else
        free(o);
}

/* The live object a handle argument names, or the error the driver gives for it. */
static CUresult arg_obj(struct tfc *t, const struct tf_call_arg *a, uint64_t *v, int ptsz,
                        struct tfc_obj **out)
{
    *out = NULL;
    if (a->htype == TF_PROTO_H_STREAM && *v <= TF_PROTO_STREAM_PER_THREAD) {
        if (*v == TF_PROTO_STREAM_NULL && ptsz)
            *v = TF_PROTO_STREAM_PER_THREAD;
        return CUDA_SUCCESS;
    }
    struct tfc_obj *o = tfc_obj(t, *v, a->htype);
    if (!o && a->htype == TF_PROTO_H_FUNC)
        o = tfc_obj(t, *v, TF_PROTO_H_KERNEL);
    if (!o)
        return a->htype == TF_PROTO_H_CTX ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_INVALID_HANDLE;
    *out = o;
    return CUDA_SUCCESS;
}

CUresult tfc_forward(const struct tf_call_desc *d, int ptsz, uint64_t *a, uint64_t *o)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    struct tfc_obj *first = NULL, *del = NULL;
    int is_del = 0;
    for (uint8_t i = 0; !r && i < d->nargs; i++) {
        const struct tf_call_arg *ar = &d->args[i];
        struct tfc_obj *ob = NULL;
        switch (ar->kind) {
        case TF_CALL_A_DEV:
            if ((int64_t)a[i] < 0 || (int64_t)a[i] >= t->ndev)
                r = CUDA_ERROR_INVALID_DEVICE;
            break;
        case TF_CALL_A_H:
        case TF_CALL_A_DEL:
            r = arg_obj(t, ar, &a[i], ptsz, &ob);
            if (!first || (!first->ctx && ob && ob->ctx))
                first = ob;
            if (ar->kind == TF_CALL_A_DEL) {
                is_del = 1;
                del = ob;
            }
            break;
        case TF_CALL_A_NEW:
            a[i] = tfc_new_id(t, ar->htype);
            break;
        default:
            break;
        }
    }
    uint64_t ctx = 0;
    if (!r && d->ctx != TF_CALL_CTX_NONE) {
        ctx = d->ctx == TF_CALL_CTX_OBJ && first && first->ctx ? first->ctx : tfc_current();
        if (!ctx || !tfc_ctx_of(t, ctx))
            r = CUDA_ERROR_INVALID_CONTEXT;
        else if (!is_del)
            r = tfc_sticky(t, ctx);
    }
    if (!r && tfc_capture_call(t, d, a, &r)) {
        pthread_mutex_unlock(&t->lock);
        return r;
    }
    if (r) {
        pthread_mutex_unlock(&t->lock);
        return r;
    }
    uint8_t req[TF_PROTO_SIZE_call_req + TF_PROTO_MAX_CALL_TAIL];
    struct tf_msg_call_req m = {.call = d->code, .nargs = d->nwire, .ctx = ctx};
    tf_msg_call_req_put(req, &m);
    size_t n = TF_PROTO_SIZE_call_req;
    for (uint8_t i = 0; i < d->nargs; i++) {
        switch (d->args[i].kind) {
        case TF_CALL_A_IN:
        case TF_CALL_A_DEV:
        case TF_CALL_A_H:
        case TF_CALL_A_NEW:
        case TF_CALL_A_DEL:
            tf__put_8(req + n, a[i]);
            n += 8;
            break;
        default:
            break;
        }
    }
    if (d->sync) {
        r = tfc_call(t, TF_OP_CALL, req, TF_PROTO_SIZE_call_req, req + TF_PROTO_SIZE_call_req,
                     n - TF_PROTO_SIZE_call_req);
        struct tf_msg_call_rep rep;
        const uint8_t *outs;
        if (t->state == TFC_CONNECTED &&
            (tf_proto_call_rep(t->reply.data, t->reply.len, &rep, &outs) != 0 ||
             rep.nouts != d->nouts)) {
            tfc_lose(t, "malformed CALL reply");
            r = CUDA_ERROR_LAUNCH_FAILED;
        }
        for (uint8_t i = 0, k = 0; r == CUDA_SUCCESS && i < d->nargs; i++) {
            uint8_t kind = d->args[i].kind;
            if (kind == TF_CALL_A_OUT || kind == TF_CALL_A_OUTN || kind == TF_CALL_A_OUTF)
                o[i] = tf__get_8(outs + 8u * k++);
        }
    } else {
        r = tfc_async(t, TF_OP_CALL_ASYNC, req, n, NULL, 0);
    }
    /* New objects exist once the call went out (asynchronous creation) or succeeded; a
     * destroyed one is gone on this side in any case. */
    for (uint8_t i = 0; i < d->nargs; i++)
        if (d->args[i].kind == TF_CALL_A_NEW && r == CUDA_SUCCESS &&
            !tfc_obj_add(t, a[i], d->args[i].htype, ctx))
            r = CUDA_ERROR_OUT_OF_MEMORY;
    if (is_del && del)
        tfc_obj_drop(t, del);
    pthread_mutex_unlock(&t->lock);
    return r;
}

/* ---- the generated entry points ------------------------------------------------------------ */

/* Core of SYM: the arguments by position into A (inputs) and back from O (outputs). */
#define CPARAM(i, t) TF_PP_ARG(CPARAM, i, t)
#define CPARAM_VOID(i, T, n, k)
#define CPARAM_IN(i, T, n, k) , T n
#define CPARAM_DEV(i, T, n, k) , T n
#define CPARAM_OUT(i, T, n, k) , T *n
#define CPARAM_OUTN(i, T, n, k) , T *n
#define CPARAM_OUTF(i, T, n, k) , T *n
#define CPARAM_H(i, T, n, k) , T n
#define CPARAM_NEW(i, T, n, k) , T *n
#define CPARAM_DEL(i, T, n, k) , T n
#define CNAME(i, t) TF_PP_ARG(CNAME, i, t)
#define CNAME_VOID(i, T, n, k)
#define CNAME_IN(i, T, n, k) , n
#define CNAME_DEV(i, T, n, k) , n
#define CNAME_OUT(i, T, n, k) , n
#define CNAME_OUTN(i, T, n, k) , n
#define CNAME_OUTF(i, T, n, k) , n
#define CNAME_H(i, T, n, k) , n
#define CNAME_NEW(i, T, n, k) , n
#define CNAME_DEL(i, T, n, k) , n
#define PACK(i, t) TF_PP_ARG(PACK, i, t)
#define PACK_VOID(i, T, n, k)
#define PACK_IN(i, T, n, k) a_[i] = TF_CALL_ENC(T, n);
#define PACK_DEV(i, T, n, k) a_[i] = (uint64_t)(int64_t)n;
#define PACK_OUT(i, T, n, k)                                                                       \
    if (!n)                                                                                        \
        return CUDA_ERROR_INVALID_VALUE;
#define PACK_OUTN(i, T, n, k)
#define PACK_OUTF(i, T, n, k) PACK_OUT(i, T, n, k)
#define PACK_H(i, T, n, k) a_[i] = (uint64_t)(uintptr_t)n;
#define PACK_NEW(i, T, n, k) PACK_OUT(i, T, n, k)
#define PACK_DEL(i, T, n, k) a_[i] = (uint64_t)(uintptr_t)n;
#define STORE(i, t) TF_PP_ARG(STORE, i, t)
#define STORE_VOID(i, T, n, k)
#define STORE_IN(i, T, n, k)
#define STORE_DEV(i, T, n, k)
#define STORE_OUT(i, T, n, k) *n = (T)(int64_t)o_[i];
#define STORE_OUTN(i, T, n, k)                                                                     \
    if (n)                                                                                         \
        *n = (T)(int64_t)o_[i];
#define STORE_OUTF(i, T, n, k)                                                                     \
    {                                                                                              \
        uint32_t bits_ = (uint32_t)o_[i];                                                          \
        memcpy(n, &bits_, sizeof(*n));                                                             \
    }
#define STORE_H(i, T, n, k)
#define STORE_NEW(i, T, n, k) *n = (T)(uintptr_t)a_[i];
#define STORE_DEL(i, T, n, k)

_Static_assert(sizeof(float) == 4, "floats travel as 32-bit patterns");

#define GEN_CORE(sym, args)                                                                        \
    static CUresult core_##sym(int ptsz_ TF_PP_EACH(CPARAM, TF_PP_UNPAREN args))                   \
    {                                                                                              \
        uint64_t a_[TF_CALL_MAX_ARGS] = {0}, o_[TF_CALL_MAX_ARGS] = {0};                           \
        TF_PP_EACH(PACK, TF_PP_UNPAREN args)                                                       \
        CUresult r_ = tfc_forward(&tf_calls[TF_CALL_IDX_##sym], ptsz_, a_, o_);                    \
        if (r_ == CUDA_SUCCESS) {                                                                  \
            TF_PP_EACH(STORE, TF_PP_UNPAREN args)                                                  \
        }                                                                                          \
        (void)o_;                                                                                  \
        return r_;                                                                                 \
    }
#define GEN_EXP(sym, args)                                                                         \
    GEN_CORE(sym, args)                                                                            \
    TFC_API CUresult CUDAAPI sym(TF_CALL_PARAMS(args));                                            \
    TFC_API CUresult CUDAAPI sym(TF_CALL_PARAMS(args))                                             \
    {                                                                                              \
        return core_##sym(0 TF_PP_EACH(CNAME, TF_PP_UNPAREN args));                                \
    }
#define GEN_PTSZ(sym, args)                                                                        \
    GEN_EXP(sym, args)                                                                             \
    TFC_API CUresult CUDAAPI sym##_ptsz(TF_CALL_PARAMS(args));                                     \
    TFC_API CUresult CUDAAPI sym##_ptsz(TF_CALL_PARAMS(args))                                      \
    {                                                                                              \
        return core_##sym(1 TF_PP_EACH(CNAME, TF_PP_UNPAREN args));                                \
    }
#define GEN_HOOK(sym, args)                                                                        \
    GEN_CORE(sym, args)                                                                            \
    CUresult tfc_fwd_##sym(TF_CALL_PARAMS(args))                                                   \
    {                                                                                              \
        return core_##sym(0 TF_PP_EACH(CNAME, TF_PP_UNPAREN args));                                \
    }

#define C(code, sym, kind, ctx, waits, client, worker, fallback, args)                             \
    TF_PP_CAT(GEN_, client)(sym, args)
#include "remote/calls.def"
#undef C
