/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker sessions: the plain driver calls of calls.def (CALL / CALL_ASYNC). One generic
 * dispatcher checks a request against the call's descriptor (argument count, integer ranges,
 * new ids: a mismatch is a protocol error), resolves every handle against this client's own
 * objects and every device ordinal against the exposed devices (CUDA errors, as the driver
 * gives them), makes the call's context current and calls the driver through a trampoline
 * generated from the list; objects the call creates are registered under the ids the client
 * chose, objects it destroys go with everything they hold (session_int.h).
 */
#include "remote/worker/session_int.h"

#include "common/err.h"
#include "common/log.h"

#include <string.h>

/* ---- trampolines: the driver call with the decoded arguments ------------------------------- */

typedef tf_ws_tramp tramp_fn;

#define TDECL(i, t) TF_PP_ARG(TDECL, i, t)
#define TDECL_VOID(i, T, n, k)
#define TDECL_IN(i, T, n, k)
#define TDECL_DEV(i, T, n, k)
#define TDECL_OUT(i, T, n, k) T n = (T)0;
#define TDECL_OUTN(i, T, n, k) T n = (T)0;
#define TDECL_OUTF(i, T, n, k) float n = 0;
#define TDECL_H(i, T, n, k)
#define TDECL_NEW(i, T, n, k) T n = NULL;
#define TDECL_DEL(i, T, n, k)
#define TARG(i, t) TF_PP_ARG(TARG, i, t)
#define TARG_VOID(i, T, n, k)
#define TARG_IN(i, T, n, k) TF_CALL_SEP(i)(T)(int64_t)v_[i]
#define TARG_DEV(i, T, n, k) TF_CALL_SEP(i)(T)(int64_t)v_[i]
#define TARG_OUT(i, T, n, k) TF_CALL_SEP(i) & n
#define TARG_OUTN(i, T, n, k) TF_CALL_SEP(i) & n
#define TARG_OUTF(i, T, n, k) TF_CALL_SEP(i) & n
#define TARG_H(i, T, n, k) TF_CALL_SEP(i)(T)(uintptr_t)v_[i]
#define TARG_NEW(i, T, n, k) TF_CALL_SEP(i) & n
#define TARG_DEL(i, T, n, k) TF_CALL_SEP(i)(T)(uintptr_t)v_[i]
#define TSTORE(i, t) TF_PP_ARG(TSTORE, i, t)
#define TSTORE_VOID(i, T, n, k)
#define TSTORE_IN(i, T, n, k)
#define TSTORE_DEV(i, T, n, k)
#define TSTORE_OUT(i, T, n, k) o_[i] = TF_CALL_ENC(T, n);
#define TSTORE_OUTN(i, T, n, k) o_[i] = TF_CALL_ENC(T, n);
#define TSTORE_OUTF(i, T, n, k)                                                                    \
    {                                                                                              \
        uint32_t bits_;                                                                            \
        memcpy(&bits_, &n, sizeof(bits_));                                                         \
        o_[i] = bits_;                                                                             \
    }
#define TSTORE_H(i, T, n, k)
#define TSTORE_NEW(i, T, n, k) nh_[i] = (void *)n;
#define TSTORE_DEL(i, T, n, k)

#define C(code, sym, kind, ctx, waits, client, worker, fallback, args)                             \
    static CUresult tr_##sym(void *fn_, const uint64_t *v_, uint64_t *o_, void **nh_)              \
    {                                                                                              \
        TF_PP_EACH(TDECL, TF_PP_UNPAREN args)                                                      \
        CUresult(CUDAAPI *f_)(TF_CALL_PARAMS(args));                                               \
        memcpy(&f_, &fn_, sizeof(f_));                                                             \
        CUresult r_ = f_(TF_PP_EACH(TARG, TF_PP_UNPAREN args));                                    \
        TF_PP_EACH(TSTORE, TF_PP_UNPAREN args)                                                     \
        (void)v_;                                                                                  \
        (void)o_;                                                                                  \
        (void)nh_;                                                                                 \
        return r_;                                                                                 \
    }
#include "remote/calls.def"
#undef C

static const tramp_fn tramps[TF_CALL_COUNT] = {
#define C(code, sym, kind, ctx, waits, client, worker, fallback, args) tr_##sym,
#include "remote/calls.def"
#undef C
};

/* WORKER HOOK entries: their hook, which makes the call; NULL for PLAIN ones. */
typedef CUresult (*whook_fn)(struct session *s, uint64_t ctx, tf_ws_tramp call, void *fn,
                             const uint64_t *v, uint64_t *o, void **nh);
#define WHOOK_PLAIN(sym) NULL,
#define WHOOK_HOOK(sym) tf__ws_hook_##sym,
static const whook_fn whooks[TF_CALL_COUNT] = {
#define C(code, sym, kind, ctx, waits, client, worker, fallback, args) WHOOK_##worker(sym)
#include "remote/calls.def"
#undef C
};

/* ---- the dispatcher ------------------------------------------------------------------------- */

/* The driver handle of object ID of the argument's kind (its function in context CTX for a
 * kernel passed as a function), or the driver's error for a bad one. */
static CUresult resolve(struct session *s, uint64_t ctx, unsigned htype, uint64_t id, uint64_t *out)
{
    void *h = NULL;
    CUresult r = CUDA_SUCCESS;
    if (htype == TF_PROTO_H_STREAM) {
        CUstream st;
        r = tf__ws_get_stream(s, id, &st);
        *out = (uintptr_t)st;
        return r;
    }
    struct obj *o = tf__ws_obj_get(s, id, htype);
    if (!o && htype == TF_PROTO_H_FUNC) {
        o = tf__ws_obj_get(s, id, TF_PROTO_H_KERNEL);
        if (!o)
            return CUDA_ERROR_INVALID_HANDLE;
        if (!ctx)
            return CUDA_ERROR_INVALID_CONTEXT;
        CUfunction fn;
        r = tf__ws_kernel_func(s, o, ctx, &fn);
        *out = (uintptr_t)fn;
        return r;
    }
    if (!o)
        return htype == TF_PROTO_H_CTX ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_INVALID_HANDLE;
    switch (htype) {
    case TF_PROTO_H_CTX:
        h = o->h.ctx;
        break;
    case TF_PROTO_H_MODULE:
        h = o->h.mod;
        break;
    case TF_PROTO_H_LIBRARY:
        h = o->h.lib;
        break;
    case TF_PROTO_H_FUNC:
        h = o->h.fn;
        break;
    case TF_PROTO_H_KERNEL:
        h = o->h.kern;
        break;
    case TF_PROTO_H_EVENT:
        h = o->h.ev;
        break;
    case TF_PROTO_H_POOL:
        h = o->h.pool;
        break;
    case TF_PROTO_H_GRAPH:
        h = o->h.graph;
        break;
    case TF_PROTO_H_GEXEC:
        h = o->h.gexec;
        break;
    case TF_PROTO_H_NODE:
        h = o->h.node;
        break;
    default:
        return CUDA_ERROR_INVALID_HANDLE;
    }
    *out = (uintptr_t)h;
    return CUDA_SUCCESS;
}

/* Stores driver handle H of a new object of TYPE into O. */
static void set_handle(struct obj *o, unsigned type, void *h)
{
    switch (type) {
    case TF_PROTO_H_EVENT:
        o->h.ev = h;
        break;
    case TF_PROTO_H_STREAM:
        o->h.st = h;
        break;
    case TF_PROTO_H_POOL:
        o->h.pool = h;
        break;
    case TF_PROTO_H_GRAPH:
        o->h.graph = h;
        break;
    case TF_PROTO_H_GEXEC:
        o->h.gexec = h;
        break;
    case TF_PROTO_H_NODE:
        o->h.node = h;
        break;
    case TF_PROTO_H_MODULE:
        o->h.mod = h;
        break;
    default:
        break;
    }
}

static _Atomic int missing_logged[TF_CALL_COUNT];

/* Decodes, checks and runs the call; V/O/NH are the arguments, outputs and new handles by
 * position. Returns a CUresult or TF_EPROTO. */
static int run_call(struct session *s, struct req *q, const struct tf_call_desc *d, uint64_t ctx,
                    uint64_t *v, uint64_t *o)
{
    void *nh[TF_CALL_MAX_ARGS] = {0};
    struct obj *del = NULL;
    int devarg = -1;       /* the device an A_DEV argument names (worker index) */
    uint64_t in_graph = 0; /* the graph a GRAPH handle argument names */
    size_t k = 0;
    for (uint8_t i = 0; i < d->nargs; i++) {
        const struct tf_call_arg *a = &d->args[i];
        switch (a->kind) {
        case TF_CALL_A_IN:
        case TF_CALL_A_DEV:
        case TF_CALL_A_H:
        case TF_CALL_A_NEW:
        case TF_CALL_A_DEL:
            v[i] = tf__get_8(q->tail + 8 * k++);
            break;
        default:
            break;
        }
        if (a->kind == TF_CALL_A_IN && !tf_call_in_fits(a, v[i]))
            PROTO_FAIL(q, "call argument out of its type's range");
        if (a->kind == TF_CALL_A_NEW && !tf__ws_client_id_ok(s, v[i], a->htype))
            PROTO_FAIL(q, "bad new object id");
    }
    CUresult r = CUDA_SUCCESS;
    if (ctx)
        r = tf__ws_use_ctx(s, ctx, NULL);
    else if (d->ctx != TF_CALL_CTX_NONE)
        r = CUDA_ERROR_INVALID_CONTEXT;
    for (uint8_t i = 0; !r && i < d->nargs; i++) {
        const struct tf_call_arg *a = &d->args[i];
        if (a->kind == TF_CALL_A_DEV) {
            if (v[i] >= (uint64_t)s->w->ndev) {
                r = CUDA_ERROR_INVALID_DEVICE;
            } else {
                devarg = (int)v[i];
                v[i] = (uint64_t)(int64_t)s->w->devs[v[i]].dev;
            }
        } else if (a->kind == TF_CALL_A_H) {
            if (a->htype == TF_PROTO_H_GRAPH && !in_graph)
                in_graph = v[i];
            r = resolve(s, ctx, a->htype, v[i], &v[i]);
        } else if (a->kind == TF_CALL_A_DEL) {
            del = tf__ws_obj_get(s, v[i], a->htype);
            if (!del)
                r = CUDA_ERROR_INVALID_HANDLE;
        }
    }
    if (r)
        return r;
    if (del) {
        tf__ws_destroy_obj(s, del);
        return CUDA_SUCCESS;
    }
    size_t idx = (size_t)(d - tf_calls);
    void *fn = s->d->call[idx];
    if (!fn) {
        if (!atomic_exchange(&missing_logged[idx], 1))
            tf_log(TF_LOG_WARN, "worker", "the CUDA driver lacks %s: CUDA_ERROR_NOT_SUPPORTED",
                   d->name);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (d->waits)
        tf_wconn_wait_begin(s->c);
    r = whooks[idx] ? whooks[idx](s, ctx, tramps[idx], fn, v, o, nh) : tramps[idx](fn, v, o, nh);
    if (d->waits)
        tf_wconn_wait_end(s->c);
    /* A new object belongs to the device the call named, else to its context's. */
    int ndev = devarg >= 0 ? devarg : ctx ? tf__ws_ctx_dev(s, ctx) : 0;
    for (uint8_t i = 0; r == CUDA_SUCCESS && i < d->nargs; i++) {
        const struct tf_call_arg *a = &d->args[i];
        if (a->kind != TF_CALL_A_NEW)
            continue;
        struct obj *n = tf__ws_obj_new(s, v[i], a->htype, ctx);
        if (!n) {
            struct obj tmp = {
                .id = v[i], .type = a->htype, .ctx = ctx, .dev = ndev, .bytes = s->new_charge};
            s->new_charge = 0;
            set_handle(&tmp, a->htype, nh[i]);
            tf__ws_release_handle(s, &tmp);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        set_handle(n, a->htype, nh[i]);
        n->dev = ndev;
        if (a->htype == TF_PROTO_H_NODE)
            n->owner = in_graph; /* nodes go with their graph */
        n->bytes = s->new_charge;
        s->new_charge = 0;
        if (a->htype == TF_PROTO_H_POOL && tf__ws_pool_added(s, n) != 0) {
            tf__ws_destroy_obj(s, n); /* a pool the worker could not account for */
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    return r;
}

int tf__ws_h_call(struct session *s, struct req *q, int sync)
{
    struct tf_msg_call_req m;
    tf_msg_call_req_get(q->p, &m);
    const struct tf_call_desc *d = tf_call_by_code(m.call);
    if (!d || d->sync != sync)
        PROTO_FAIL(q, "unknown call");
    if (tf_proto_call_tail(&m, q->tlen) != 0 || m.nargs != d->nwire)
        PROTO_FAIL(q, "wrong number of call arguments");
    uint64_t v[TF_CALL_MAX_ARGS] = {0}, o[TF_CALL_MAX_ARGS] = {0};
    int rc = run_call(s, q, d, m.ctx, v, o);
    if (rc < 0 || !sync)
        return rc;
    uint8_t *p = tf_buf_grow(&s->reply, (size_t)d->nouts * 8u);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY; /* the reply goes out without its outputs */
    for (uint8_t i = 0; i < d->nargs; i++) {
        uint8_t kind = d->args[i].kind;
        if (kind == TF_CALL_A_OUT || kind == TF_CALL_A_OUTN || kind == TF_CALL_A_OUTF) {
            tf__put_8(p, rc == CUDA_SUCCESS ? o[i] : 0);
            p += 8;
        }
    }
    struct tf_msg_call_rep rep = {.nouts = d->nouts};
    tf_msg_call_rep_put(s->reply.data, &rep);
    return rc;
}
