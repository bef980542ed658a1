/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker sessions: per-client handle tables, the pinned staging ring of bulk copies, and
 * full cleanup at disconnect (session_int.h).
 */
#include "remote/worker/session_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- session objects ------------------------------------------------------------------------ */

void tf__ws_defer(struct session *s, CUresult r)
{
    if (r != CUDA_SUCCESS && s->pending == CUDA_SUCCESS)
        s->pending = r;
}

struct obj *tf__ws_obj_get(struct session *s, uint64_t id, unsigned type)
{
    if (TF_PROTO_HANDLE_TYPE(id) != type)
        return NULL;
    return tf_htab_get(&s->objs, id);
}

/* A fresh id the client chose for a new object of TYPE. */
int tf__ws_client_id_ok(struct session *s, uint64_t id, unsigned type)
{
    return TF_PROTO_HANDLE_TYPE(id) == type && !(id & TF_PROTO_H_WORKER) &&
           (id & TF_PROTO_H_SERIAL_MASK) != 0 && !tf_htab_get(&s->objs, id);
}

struct obj *tf__ws_obj_new(struct session *s, uint64_t id, unsigned type, uint64_t ctx)
{
    struct obj *o = calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    o->id = id;
    o->type = type;
    o->ctx = ctx;
    if (tf_htab_put(&s->objs, id, o) != 0) {
        free(o);
        return NULL;
    }
    return o;
}

void tf__ws_obj_drop(struct session *s, struct obj *o)
{
    tf_htab_del(&s->objs, o->id);
    free(o->param_off);
    free(o);
}

CUresult tf__ws_use_ctx(struct session *s, uint64_t id, struct obj **out)
{
    struct obj *o = tf__ws_obj_get(s, id, TF_PROTO_H_CTX);
    if (!o)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (s->cur_id != id) {
        CUresult r = s->d->ctxSetCurrent(o->h.ctx);
        if (r != CUDA_SUCCESS)
            return r;
        s->cur_id = id;
    }
    if (out)
        *out = o;
    return CUDA_SUCCESS;
}

CUresult tf__ws_get_stream(struct session *s, uint64_t id, CUstream *st)
{
    if (id == TF_PROTO_STREAM_NULL) {
        *st = NULL;
        return CUDA_SUCCESS;
    }
    if (id == TF_PROTO_STREAM_LEGACY) {
        *st = CU_STREAM_LEGACY;
        return CUDA_SUCCESS;
    }
    if (id == TF_PROTO_STREAM_PER_THREAD) {
        *st = CU_STREAM_PER_THREAD;
        return CUDA_SUCCESS;
    }
    struct obj *o = tf__ws_obj_get(s, id, TF_PROTO_H_STREAM);
    if (!o)
        return CUDA_ERROR_INVALID_HANDLE;
    *st = o->h.st;
    return CUDA_SUCCESS;
}

CUresult tf__ws_get_event(struct session *s, uint64_t id, CUevent *ev)
{
    struct obj *o = tf__ws_obj_get(s, id, TF_PROTO_H_EVENT);
    if (!o)
        return CUDA_ERROR_INVALID_HANDLE;
    *ev = o->h.ev;
    return CUDA_SUCCESS;
}

/* ---- staging ring -------------------------------------------------------------------------- */

/* An event of context CTX (current) for a staging region. */
CUresult tf__ws_ev_get(struct session *s, uint64_t ctx, CUevent *ev)
{
    for (int i = s->nevs - 1; i >= 0; i--) {
        if (s->evs[i].ctx == ctx) {
            *ev = s->evs[i].ev;
            s->evs[i] = s->evs[--s->nevs];
            return CUDA_SUCCESS;
        }
    }
    return s->d->eventCreate(ev, CU_EVENT_DISABLE_TIMING);
}

void tf__ws_ev_put(struct session *s, uint64_t ctx, CUevent ev)
{
    if (s->nevs < EV_POOL)
        s->evs[s->nevs++] = (struct evslot){ctx, ev};
    else
        s->d->eventDestroy(ev);
}

/* Destroys the spare events of CTX (all when 0) before their context goes. */
static void ev_forget(struct session *s, uint64_t ctx)
{
    for (int i = 0; i < s->nevs;) {
        if (!ctx || s->evs[i].ctx == ctx) {
            s->d->eventDestroy(s->evs[i].ev);
            s->evs[i] = s->evs[--s->nevs];
        } else {
            i++;
        }
    }
}

/* Allocates the ring on first use: pinned and portable when the worker can, else pageable. */
int tf__ws_stage_ready(struct session *s)
{
    if (s->stage_mem)
        return 1;
    if (s->stage_failed)
        return 0;
    void *p = NULL;
    if (s->w->stage_ctx && s->d->ctxSetCurrent(s->w->stage_ctx) == CUDA_SUCCESS) {
        s->cur_id = 0; /* the client's context must be made current again */
        if (s->d->memHostAlloc(&p, STAGE_BYTES, CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS)
            s->stage_pinned = 1;
        else
            p = NULL;
    }
    if (!p)
        p = malloc(STAGE_BYTES);
    if (!p || tf_stage_init(&s->stage, p, STAGE_BYTES, STAGE_ENTRIES) != 0) {
        if (p && s->stage_pinned && s->d->ctxSetCurrent(s->w->stage_ctx) == CUDA_SUCCESS)
            s->d->memFreeHost(p);
        else
            free(p);
        s->stage_pinned = 0;
        s->stage_failed = 1;
        return 0;
    }
    s->stage_mem = p;
    return 1;
}

/* Waits for the oldest region's copy and returns the region. The copy's error, if any, is
 * the error of an asynchronous request: deferred. */
static void stage_wait_oldest(struct session *s)
{
    struct tf_stage_ent *e = tf_stage_oldest(&s->stage);
    if (!e)
        return;
    if (tf__ws_use_ctx(s, e->ctx, NULL) == CUDA_SUCCESS) {
        tf_wconn_wait_begin(s->c);
        CUresult r = s->d->eventSynchronize((CUevent)e->ev);
        tf_wconn_wait_end(s->c);
        tf__ws_defer(s, r);
        tf__ws_ev_put(s, e->ctx, (CUevent)e->ev);
    }
    tf_stage_pop(&s->stage);
}

/* Returns the regions whose copies are done, oldest first, without waiting. */
void tf__ws_stage_reap(struct session *s)
{
    struct tf_stage_ent *e;
    while ((e = tf_stage_oldest(&s->stage)) != NULL) {
        if (tf__ws_use_ctx(s, e->ctx, NULL) == CUDA_SUCCESS) {
            CUresult r = s->d->eventQuery((CUevent)e->ev);
            if (r == CUDA_ERROR_NOT_READY)
                return;
            tf__ws_defer(s, r);
            tf__ws_ev_put(s, e->ctx, (CUevent)e->ev);
        }
        tf_stage_pop(&s->stage);
    }
}

void tf__ws_stage_drain(struct session *s)
{
    while (tf_stage_oldest(&s->stage))
        stage_wait_oldest(s);
}

/* N bytes of ring (N <= TF_PROTO_CHUNK), waiting for older copies when it is full. */
uint8_t *tf__ws_stage_alloc(struct session *s, size_t n, size_t *off, size_t *charge)
{
    long o;
    while ((o = tf_stage_place(&s->stage, n, charge)) < 0)
        stage_wait_oldest(s);
    *off = (size_t)o;
    return s->stage_mem + o;
}

static void stage_release_all(struct session *s)
{
    if (s->stage_mem)
        tf__ws_stage_drain(s);
    ev_forget(s, 0);
    if (s->stage_mem) {
        if (s->stage_pinned && s->d->ctxSetCurrent(s->w->stage_ctx) == CUDA_SUCCESS)
            s->d->memFreeHost(s->stage_mem);
        else if (!s->stage_pinned)
            free(s->stage_mem);
        s->cur_id = 0;
        tf_stage_free(&s->stage);
        s->stage_mem = NULL;
    }
}

/* [PTR, PTR+LEN) must lie inside one of this client's allocations or globals. */
int tf__ws_mem_ok(struct session *s, uint64_t ptr, uint64_t len)
{
    return tf_rangeset_find(&s->mem, ptr, len) != NULL ||
           tf_rangeset_find(&s->gmem, ptr, len) != NULL;
}

int tf__ws_ctx_dev(struct session *s, uint64_t ctx)
{
    struct obj *o = tf__ws_obj_get(s, ctx, TF_PROTO_H_CTX);
    return o ? o->dev : 0;
}

/* ---- cleanup -------------------------------------------------------------------------------- */

/* BYTES reserved in context CTX were given to the driver to free, with result FREED: they
 * are released when it did, else held by the context until it is destroyed (the driver
 * keeps them: a context broken by a kernel fault refuses frees). */
void tf__ws_vram_freed(struct session *s, uint64_t ctx, int64_t bytes, CUresult freed)
{
    struct obj *c = tf__ws_obj_get(s, ctx, TF_PROTO_H_CTX);
    if (bytes <= 0)
        return;
    if (freed != CUDA_SUCCESS && c) {
        c->bytes += bytes;
        tf_log(TF_LOG_DEBUG, "worker",
               "conn %llu: %lld bytes the driver did not free stay "
               "charged until their context goes",
               (unsigned long long)s->c->id, (long long)bytes);
        return;
    }
    tf_worker_vram_release(s->w, c ? c->dev : 0, bytes);
}

/* An allocation: made by cuMemAlloc (owner 0) or from a pool (owner: the pool's id). */
static int is_alloc(const struct tf_range *r)
{
    return r->owner == 0 || TF_PROTO_HANDLE_TYPE(r->owner) == TF_PROTO_H_POOL;
}

static void free_range(struct session *s, const struct tf_range *r)
{
    if (!is_alloc(r))
        return; /* module globals die with their module */
    CUresult fr = tf__ws_use_ctx(s, r->aux, NULL);
    if (fr == CUDA_SUCCESS)
        fr = s->d->memFree((CUdeviceptr)r->base);
    if (r->owner == 0) /* a pool's memory is charged to the pool */
        tf__ws_vram_freed(s, r->aux, (int64_t)r->size, fr);
}

/* A call of calls.def on driver handle H (destroys of graph objects and pools). */
static void call_destroy(struct session *s, size_t idx, void *h)
{
    CUresult(CUDAAPI * f)(void *);
    void *fn = s->d->call[idx];
    memcpy(&f, &fn, sizeof(f));
    if (f)
        (void)f(h);
}

void tf__ws_release_handle(struct session *s, struct obj *o)
{
    const struct tf_drv *d = s->d;
    switch (o->type) {
    case TF_PROTO_H_STREAM:
        if (tf__ws_use_ctx(s, o->ctx, NULL) == CUDA_SUCCESS)
            (void)d->streamDestroy(o->h.st);
        break;
    case TF_PROTO_H_EVENT:
        if (tf__ws_use_ctx(s, o->ctx, NULL) == CUDA_SUCCESS)
            (void)d->eventDestroy(o->h.ev);
        break;
    case TF_PROTO_H_MODULE: {
        tf_rangeset_del_owner(&s->mem, o->id);
        CUresult r = tf__ws_use_ctx(s, o->ctx, NULL);
        if (r == CUDA_SUCCESS)
            r = d->moduleUnload(o->h.mod);
        tf__ws_vram_freed(s, o->ctx, o->bytes, r);
        break;
    }
    case TF_PROTO_H_LIBRARY: {
        tf_rangeset_del_owner(&s->mem, o->id);
        CUresult r = d->libraryUnload ? d->libraryUnload(o->h.lib) : CUDA_ERROR_NOT_SUPPORTED;
        tf__ws_vars_unload(s, o, r);
        break;
    }
    case TF_PROTO_H_GRAPH:
        call_destroy(s, TF_CALL_IDX_cuGraphDestroy, o->h.graph);
        tf__ws_destroy_where(s, TF_PROTO_H_NODE, tf__ws_pred_owner, o->id);
        break;
    case TF_PROTO_H_GEXEC:
        call_destroy(s, TF_CALL_IDX_cuGraphExecDestroy, o->h.gexec);
        tf_rangeset_del_owner(&s->gmem, o->id);
        tf_worker_vram_release(s->w, o->dev, o->bytes); /* its allocation nodes' memory */
        break;
    case TF_PROTO_H_POOL:
        tf__ws_pool_release(s, o);
        break;
    case TF_PROTO_H_CTX:
        tf_wcompute_ctx_gone(&s->w->compute, (uintptr_t)o->h.ctx);
        if (d->ctxDestroy(o->h.ctx) == CUDA_SUCCESS)
            tf_worker_vram_release(s->w, o->dev, o->bytes); /* all of it is gone now */
        else if (o->bytes)
            tf_log(TF_LOG_WARN, "worker",
                   "conn %llu: the driver refused to destroy a context holding %lld bytes: "
                   "they stay charged",
                   (unsigned long long)s->c->id, (long long)o->bytes);
        s->cur_id = 0;
        if (s->primary[o->dev] == o->id)
            s->primary[o->dev] = 0;
        break;
    default:
        break;
    }
}

void tf__ws_destroy_obj(struct session *s, struct obj *o)
{
    tf__ws_release_handle(s, o);
    tf__ws_obj_drop(s, o);
}

/* Destroys every object of TYPE matching PRED (callers go in dependency order: executable
 * graphs, graphs, streams and events, functions, modules, libraries, then contexts). */
void tf__ws_destroy_where(struct session *s, unsigned type, obj_pred pred, uint64_t arg)
{
    size_t n = 0, cap = s->objs.count;
    struct obj **v = cap ? malloc(cap * sizeof(*v)) : NULL;
    if (cap && !v)
        return;
    size_t pos = 0;
    uint64_t key;
    void *val;
    while (tf_htab_next(&s->objs, &pos, &key, &val)) {
        struct obj *o = val;
        if (o->type == type && pred(o, arg) && n < cap)
            v[n++] = o;
    }
    for (size_t i = 0; i < n; i++)
        tf__ws_destroy_obj(s, v[i]);
    free(v);
}

static int pred_all(const struct obj *o, uint64_t arg)
{
    (void)o;
    (void)arg;
    return 1;
}

static int pred_ctx(const struct obj *o, uint64_t ctx)
{
    return o->ctx == ctx;
}

int tf__ws_pred_owner(const struct obj *o, uint64_t owner)
{
    return o->owner == owner;
}

/* Forgets the per-context functions of library kernels resolved in CTX. */
static void forget_kfuncs(struct session *s, uint64_t ctx)
{
    size_t pos = 0;
    uint64_t key;
    void *val;
    while (tf_htab_next(&s->objs, &pos, &key, &val)) {
        struct obj *o = val;
        if (o->type != TF_PROTO_H_KERNEL)
            continue;
        for (int i = 0; i < o->nkf; i++) {
            if (o->kf[i].ctx == ctx) {
                o->kf[i] = o->kf[--o->nkf];
                i--;
            }
        }
    }
}

void tf__ws_destroy_ctx(struct session *s, struct obj *ctx)
{
    uint64_t id = ctx->id;
    if (s->stage_mem)
        tf__ws_stage_drain(s);
    ev_forget(s, id);
    tf__ws_destroy_where(s, TF_PROTO_H_GEXEC, pred_ctx, id);
    tf__ws_destroy_where(s, TF_PROTO_H_GRAPH, pred_ctx, id);
    tf__ws_destroy_where(s, TF_PROTO_H_STREAM, pred_ctx, id);
    tf__ws_destroy_where(s, TF_PROTO_H_EVENT, pred_ctx, id);
    tf__ws_destroy_where(s, TF_PROTO_H_FUNC, pred_ctx, id);
    /* Allocations made in this context. */
    for (size_t i = 0; i < s->mem.n;) {
        struct tf_range r = s->mem.v[i];
        if (r.aux == id && is_alloc(&r)) {
            free_range(s, &r);
            tf_rangeset_del(&s->mem, r.base, r.owner, NULL);
        } else {
            i++;
        }
    }
    /* Modules of this context and their functions. */
    size_t pos = 0;
    uint64_t key;
    void *val;
    for (;;) {
        struct obj *m = NULL;
        pos = 0;
        while (tf_htab_next(&s->objs, &pos, &key, &val)) {
            struct obj *o = val;
            if (o->type == TF_PROTO_H_MODULE && o->ctx == id) {
                m = o;
                break;
            }
        }
        if (!m)
            break;
        tf__ws_destroy_where(s, TF_PROTO_H_FUNC, tf__ws_pred_owner, m->id);
        tf__ws_destroy_obj(s, m);
    }
    forget_kfuncs(s, id);
    tf__ws_vars_ctx_gone(s, id);
    tf__ws_destroy_obj(s, ctx);
}

void tf__ws_session_cleanup(struct session *s)
{
    stage_release_all(s);
    tf__ws_destroy_where(s, TF_PROTO_H_GEXEC, pred_all, 0);
    tf__ws_destroy_where(s, TF_PROTO_H_GRAPH, pred_all, 0);
    tf__ws_destroy_where(s, TF_PROTO_H_STREAM, pred_all, 0);
    tf__ws_destroy_where(s, TF_PROTO_H_EVENT, pred_all, 0);
    for (size_t i = 0; i < s->mem.n; i++)
        free_range(s, &s->mem.v[i]);
    s->mem.n = 0;
    tf__ws_destroy_where(s, TF_PROTO_H_POOL, pred_all, 0);
    tf__ws_pools_gone(s);
    tf__ws_destroy_where(s, TF_PROTO_H_FUNC, pred_all, 0);
    tf__ws_destroy_where(s, TF_PROTO_H_KERNEL, pred_all, 0);
    tf__ws_destroy_where(s, TF_PROTO_H_MODULE, pred_all, 0);
    tf__ws_destroy_where(s, TF_PROTO_H_LIBRARY, pred_all, 0);
    tf__ws_destroy_where(s, TF_PROTO_H_CTX, pred_all, 0);
}
