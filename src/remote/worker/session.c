/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker sessions: executes one client's requests on the real driver with per-client
 * handle tables and pointer validation, hard VRAM limits, deferred errors of asynchronous
 * requests, and full cleanup at disconnect; see session.h.
 */
#include "remote/worker/session.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "remote/codec.h"
#include "remote/htab.h"
#include "remote/rangeset.h"
#include "remote/worker/staging.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OBJECTS (1u << 18) /* handles per client */
#define MAX_RANGES (1u << 18)  /* allocations + globals per client */
#define MAX_KFUNCS 64          /* contexts a library kernel is resolved in */

/* ---- shared worker state -------------------------------------------------------------------- */

int tf_worker_vram_reserve(struct tf_worker *w, int i, int64_t bytes)
{
    if (w->region.map.r) {
        if (bytes < 0 || tf_shm_vram_reserve(w->region.map.r, (unsigned)w->region.entry[i],
                                             w->region.slot, (uint64_t)bytes) != 0)
            return TF_ENOSPC;
        return 0;
    }
    struct tf_worker_dev *d = &w->devs[i];
    int64_t cur = atomic_load(&d->used);
    for (;;) {
        if (bytes < 0 || bytes > d->limit - cur)
            return TF_ENOSPC;
        if (atomic_compare_exchange_weak(&d->used, &cur, cur + bytes))
            return 0;
    }
}

void tf_worker_vram_release(struct tf_worker *w, int i, int64_t bytes)
{
    if (w->region.map.r) {
        if (bytes > 0)
            tf_shm_vram_release(w->region.map.r, (unsigned)w->region.entry[i], w->region.slot,
                                (uint64_t)bytes);
        return;
    }
    struct tf_worker_dev *d = &w->devs[i];
    int64_t cur = atomic_load(&d->used);
    for (;;) {
        int64_t next = cur > bytes ? cur - bytes : 0;
        if (atomic_compare_exchange_weak(&d->used, &cur, next))
            return;
    }
}

/* What device I's clients see as free and total memory, given the driver's figures: the
 * region's view of its live limit, else the flag's cap. */
static void vram_view(const struct tf_worker *w, int i, uint64_t phys_free, uint64_t phys_total,
                      uint64_t *free_out, uint64_t *total_out)
{
    if (w->region.map.r) {
        tf_shm_vram_view(w->region.map.r, (unsigned)w->region.entry[i], phys_free, phys_total,
                         free_out, total_out);
        return;
    }
    const struct tf_worker_dev *wd = &w->devs[i];
    int64_t used = atomic_load(&wd->used);
    int64_t cap_free = wd->limit - used;
    if (cap_free < 0)
        cap_free = 0;
    *free_out = (uint64_t)((int64_t)phys_free < cap_free ? (int64_t)phys_free : cap_free);
    *total_out = (uint64_t)((int64_t)phys_total < wd->limit ? (int64_t)phys_total : wd->limit);
}

struct dev_list {
    struct tf_worker *w;
    int count;
    char err[128];
};

static int add_device(const char *item, size_t len, void *arg)
{
    struct dev_list *l = arg;
    char buf[16], *end;
    if (len >= sizeof(buf)) {
        snprintf(l->err, sizeof(l->err), "--device: \"%.*s\" is not a device ordinal", (int)len,
                 item);
        return TF_EINVAL;
    }
    memcpy(buf, item, len);
    buf[len] = 0;
    long v = strtol(buf, &end, 10);
    if (*end || v < 0 || v > 1023) {
        snprintf(l->err, sizeof(l->err), "--device: \"%s\" is not a device ordinal", buf);
        return TF_EINVAL;
    }
    if (l->count >= (int)TF_PROTO_MAX_DEVICES) {
        snprintf(l->err, sizeof(l->err), "--device: more than %u devices", TF_PROTO_MAX_DEVICES);
        return TF_ERANGE;
    }
    l->w->devs[l->count++].dev = (CUdevice)v;
    return 0;
}

int tf_worker_init(struct tf_worker *w, const struct tf_worker_config *cfg, char *err,
                   size_t errlen)
{
    memset(w, 0, sizeof(*w));
    tf_buf_init(&w->hello_tail, TF_PROTO_MAX_PAYLOAD);
    int rc = tf_drv_open(&w->drv, cfg->driver_path, err, errlen);
    if (rc)
        return rc;
    const struct tf_drv *d = &w->drv;
    char nb[32];
    CUresult r = d->init(0);
    if (r != CUDA_SUCCESS) {
        tf_errf(err, errlen, "cuInit failed: %s", tf_drv_err_name(d, r, nb, sizeof(nb)));
        goto fail;
    }
    d->driverGetVersion(&w->driver_version);
    int count = 0;
    d->deviceGetCount(&count);
    struct dev_list l = {.w = w};
    rc = tf_split_list(cfg->devices ? cfg->devices : "0", add_device, &l);
    if (rc || l.count == 0) {
        tf_errf(err, errlen, "%s", l.count ? l.err : "--device: no device given");
        goto fail;
    }
    w->ndev = l.count;
    struct tf_wcompute_dev cdevs[TF_PROTO_MAX_DEVICES];
    struct tf_wregion_dev rdevs[TF_PROTO_MAX_DEVICES];
    for (int i = 0; i < w->ndev; i++) {
        struct tf_worker_dev *wd = &w->devs[i];
        int ord = wd->dev;
        rdevs[i].ordinal = ord;
        if (ord >= count || d->deviceGet(&wd->dev, ord) != CUDA_SUCCESS) {
            tf_errf(err, errlen, "--device: device %d does not exist (the driver has %d)", ord,
                    count);
            goto fail;
        }
        size_t total = 0;
        char name[256] = "";
        CUuuid uuid;
        memset(&uuid, 0, sizeof(uuid));
        d->deviceTotalMem(&total, wd->dev);
        d->deviceGetName(name, sizeof(name) - 1, wd->dev);
        tf_drv_device_uuid(d, &uuid, wd->dev);
        wd->total = (int64_t)total;
        wd->limit =
            cfg->vram_limit > 0 && cfg->vram_limit < wd->total ? cfg->vram_limit : wd->total;
        atomic_init(&wd->used, 0);
        struct tf_msg_dev_info di = {.total_mem = (uint64_t)wd->limit,
                                     .nattrs = CU_DEVICE_ATTRIBUTE_MAX};
        memcpy(di.uuid, uuid.bytes, 16);
        memcpy(di.name, name, sizeof(di.name));
        memcpy(cdevs[i].uuid, uuid.bytes, 16);
        cdevs[i].mem_total = total;
        memcpy(rdevs[i].uuid, uuid.bytes, 16);
        uint8_t *p = tf_buf_grow(&w->hello_tail, TF_PROTO_SIZE_dev_info);
        if (!p)
            goto nomem;
        tf_msg_dev_info_put(p, &di);
        for (int a = 0; a < CU_DEVICE_ATTRIBUTE_MAX; a++) {
            int v = 0;
            CUresult ar = a == 0 ? CUDA_ERROR_INVALID_VALUE
                                 : d->deviceGetAttribute(&v, (CUdevice_attribute)a, wd->dev);
            struct tf_msg_attr_val av = {.status = (uint32_t)ar, .value = (uint32_t)v};
            uint8_t *q = tf_buf_grow(&w->hello_tail, TF_PROTO_SIZE_attr_val);
            if (!q)
                goto nomem;
            tf_msg_attr_val_put(q, &av);
        }
        if (i == 0 && d->primaryCtxRetain && d->memHostAlloc && d->memFreeHost &&
            d->primaryCtxRetain(&w->stage_ctx, wd->dev) != CUDA_SUCCESS)
            w->stage_ctx = NULL;
        if (cfg->limits_region)
            tf_log(TF_LOG_INFO, "worker", "device %d = driver device %d: %s, %lld bytes", i, ord,
                   name, (long long)wd->total);
        else
            tf_log(TF_LOG_INFO, "worker",
                   "device %d = driver device %d: %s, %lld bytes (limit %lld)", i, ord, name,
                   (long long)wd->total, (long long)wd->limit);
    }
    if (cfg->limits_region) {
        if (tf_wregion_open(&w->region, cfg->limits_region, cfg->limits_wait_ms, rdevs, w->ndev,
                            err, errlen) != 0)
            goto fail;
        tf_wcompute_attach(&w->compute, d, w->region.map.r, w->region.slot, w->region.entry,
                           w->ndev, w->region.path);
        return 0;
    }
    if (tf_wcompute_start(&w->compute, d, cfg->compute_bp > 0 ? (uint32_t)cfg->compute_bp : 0,
                          cdevs, w->ndev, err, errlen) != 0)
        goto fail;
    return 0;
nomem:
    tf_errf(err, errlen, "out of memory");
fail:
    tf_worker_fini(w);
    return TF_EINVAL;
}

void tf_worker_shutdown(struct tf_worker *w)
{
    tf_wcompute_lift(&w->compute);
}

void tf_worker_fini(struct tf_worker *w)
{
    tf_wcompute_stop(&w->compute);
    tf_wregion_close(&w->region);
    if (w->stage_ctx && w->drv.primaryCtxRelease)
        w->drv.primaryCtxRelease(w->devs[0].dev);
    w->stage_ctx = NULL;
    tf_buf_free(&w->hello_tail);
    tf_drv_close(&w->drv);
}

int tf_worker_hello(void *arg, struct tf_msg_hello_rep *rep, struct tf_buf *tail)
{
    struct tf_worker *w = arg;
    rep->status = CUDA_SUCCESS;
    rep->ndev = (uint32_t)w->ndev;
    rep->driver_version = (uint32_t)w->driver_version;
    size_t base = tail->len;
    int rc = tf_buf_append(tail, w->hello_tail.data, w->hello_tail.len);
    if (rc || !w->region.map.r)
        return rc;
    /* With a region, total memory is its live limit as of now (the client caches it). */
    size_t rec = TF_PROTO_SIZE_dev_info + (size_t)CU_DEVICE_ATTRIBUTE_MAX * TF_PROTO_SIZE_attr_val;
    assert(w->hello_tail.len == (size_t)w->ndev * rec); /* as tf_worker_init built it */
    for (int i = 0; i < w->ndev; i++) {
        uint8_t *p = tail->data + base + (size_t)i * rec;
        struct tf_msg_dev_info di;
        tf_msg_dev_info_get(p, &di);
        uint64_t fr, tot;
        vram_view(w, i, (uint64_t)w->devs[i].total, (uint64_t)w->devs[i].total, &fr, &tot);
        di.total_mem = tot;
        tf_msg_dev_info_put(p, &di);
    }
    return 0;
}

/* ---- session objects ------------------------------------------------------------------------ */

struct kfunc {
    uint64_t ctx;
    CUfunction fn;
};

struct obj {
    uint64_t id;
    unsigned type;  /* TF_PROTO_H_* */
    uint64_t ctx;   /* owning client context (0 for libraries and their kernels) */
    uint64_t owner; /* module/library of a function/kernel */
    union {
        CUcontext ctx;
        CUmodule mod;
        CUlibrary lib;
        CUfunction fn;
        CUkernel kern;
        CUstream st;
        CUevent ev;
    } h;
    int dev;          /* contexts: worker device index */
    uint32_t nparams; /* functions/kernels */
    uint32_t params_size;
    uint32_t *param_off;         /* nparams offsets, then nparams sizes */
    struct kfunc kf[MAX_KFUNCS]; /* kernels: their function per context */
    int nkf;
};

/* Staging ring per client: 4 chunks in flight are enough to keep the network and the device
 * copy overlapped, and a small ring stays in the CPU caches (on the simulated GPU, whose
 * device copies are CPU copies, 4 MiB cost ~15 % less CPU per byte than 16 MiB) and pins
 * less memory per client. DtoH cuts it into chunk slots (dtoh_pipelined). */
#define STAGE_BYTES (4u << 20)
_Static_assert(STAGE_BYTES % TF_PROTO_CHUNK == 0 && STAGE_BYTES >= 2 * TF_PROTO_CHUNK,
               "DtoH cuts the ring into at least two chunk slots");
#define STAGE_ENTRIES 256
#define EV_POOL 32

struct evslot {
    uint64_t ctx;
    CUevent ev;
};

struct session {
    struct tf_worker *w;
    const struct tf_drv *d;
    struct tf_wconn *c;
    struct tf_htab objs;
    struct tf_rangeset mem; /* owner 0: allocation, else module/library id of a global;
                               aux: client context id */
    uint64_t primary[TF_PROTO_MAX_DEVICES];
    uint64_t cur_id; /* client context current on this thread */
    CUresult pending;
    struct tf_buf blob;
    struct tf_buf reply;
    uint64_t next_worker_serial;
    void *kparams[TF_PROTO_MAX_PARAMS];
    _Alignas(16) uint8_t pbuf[TF_PROTO_MAX_PARAM_BYTES];
    uint8_t *staging; /* DtoH chunk buffer */
    struct tf_stage stage;
    uint8_t *stage_mem; /* NULL until the first bulk copy */
    int stage_pinned;
    int stage_failed;
    struct evslot evs[EV_POOL]; /* spare events per context */
    int nevs;
    int goodbye;
    struct tf_cost_thread cost; /* this connection's launch cost-model state (compute.h) */
};

static void defer(struct session *s, CUresult r)
{
    if (r != CUDA_SUCCESS && s->pending == CUDA_SUCCESS)
        s->pending = r;
}

static struct obj *obj_get(struct session *s, uint64_t id, unsigned type)
{
    if (TF_PROTO_HANDLE_TYPE(id) != type)
        return NULL;
    return tf_htab_get(&s->objs, id);
}

/* A fresh id the client chose for a new object of TYPE. */
static int client_id_ok(struct session *s, uint64_t id, unsigned type)
{
    return TF_PROTO_HANDLE_TYPE(id) == type && !(id & TF_PROTO_H_WORKER) &&
           (id & TF_PROTO_H_SERIAL_MASK) != 0 && !tf_htab_get(&s->objs, id);
}

static struct obj *obj_new(struct session *s, uint64_t id, unsigned type, uint64_t ctx)
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

static void obj_drop(struct session *s, struct obj *o)
{
    tf_htab_del(&s->objs, o->id);
    free(o->param_off);
    free(o);
}

static CUresult use_ctx(struct session *s, uint64_t id, struct obj **out)
{
    struct obj *o = obj_get(s, id, TF_PROTO_H_CTX);
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

static CUresult get_stream(struct session *s, uint64_t id, CUstream *st)
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
    struct obj *o = obj_get(s, id, TF_PROTO_H_STREAM);
    if (!o)
        return CUDA_ERROR_INVALID_HANDLE;
    *st = o->h.st;
    return CUDA_SUCCESS;
}

static CUresult get_event(struct session *s, uint64_t id, CUevent *ev)
{
    struct obj *o = obj_get(s, id, TF_PROTO_H_EVENT);
    if (!o)
        return CUDA_ERROR_INVALID_HANDLE;
    *ev = o->h.ev;
    return CUDA_SUCCESS;
}

/* ---- staging ring -------------------------------------------------------------------------- */

/* An event of context CTX (current) for a staging region. */
static CUresult ev_get(struct session *s, uint64_t ctx, CUevent *ev)
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

static void ev_put(struct session *s, uint64_t ctx, CUevent ev)
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
static int stage_ready(struct session *s)
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
    if (use_ctx(s, e->ctx, NULL) == CUDA_SUCCESS) {
        tf_wconn_wait_begin(s->c);
        CUresult r = s->d->eventSynchronize((CUevent)e->ev);
        tf_wconn_wait_end(s->c);
        defer(s, r);
        ev_put(s, e->ctx, (CUevent)e->ev);
    }
    tf_stage_pop(&s->stage);
}

/* Returns the regions whose copies are done, oldest first, without waiting. */
static void stage_reap(struct session *s)
{
    struct tf_stage_ent *e;
    while ((e = tf_stage_oldest(&s->stage)) != NULL) {
        if (use_ctx(s, e->ctx, NULL) == CUDA_SUCCESS) {
            CUresult r = s->d->eventQuery((CUevent)e->ev);
            if (r == CUDA_ERROR_NOT_READY)
                return;
            defer(s, r);
            ev_put(s, e->ctx, (CUevent)e->ev);
        }
        tf_stage_pop(&s->stage);
    }
}

static void stage_drain(struct session *s)
{
    while (tf_stage_oldest(&s->stage))
        stage_wait_oldest(s);
}

/* N bytes of ring (N <= TF_PROTO_CHUNK), waiting for older copies when it is full. */
static uint8_t *stage_alloc(struct session *s, size_t n, size_t *off, size_t *charge)
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
        stage_drain(s);
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
static int mem_ok(struct session *s, uint64_t ptr, uint64_t len)
{
    return tf_rangeset_find(&s->mem, ptr, len) != NULL;
}

static int ctx_dev(struct session *s, uint64_t ctx)
{
    struct obj *o = obj_get(s, ctx, TF_PROTO_H_CTX);
    return o ? o->dev : 0;
}

/* ---- cleanup -------------------------------------------------------------------------------- */

static void free_range(struct session *s, const struct tf_range *r)
{
    if (r->owner != 0)
        return; /* module globals die with their module */
    if (use_ctx(s, r->aux, NULL) == CUDA_SUCCESS)
        (void)s->d->memFree((CUdeviceptr)r->base);
    tf_worker_vram_release(s->w, ctx_dev(s, r->aux), (int64_t)r->size);
}

static void destroy_obj(struct session *s, struct obj *o)
{
    const struct tf_drv *d = s->d;
    switch (o->type) {
    case TF_PROTO_H_STREAM:
        if (use_ctx(s, o->ctx, NULL) == CUDA_SUCCESS)
            (void)d->streamDestroy(o->h.st);
        break;
    case TF_PROTO_H_EVENT:
        if (use_ctx(s, o->ctx, NULL) == CUDA_SUCCESS)
            (void)d->eventDestroy(o->h.ev);
        break;
    case TF_PROTO_H_MODULE:
        tf_rangeset_del_owner(&s->mem, o->id);
        if (use_ctx(s, o->ctx, NULL) == CUDA_SUCCESS)
            (void)d->moduleUnload(o->h.mod);
        break;
    case TF_PROTO_H_LIBRARY:
        tf_rangeset_del_owner(&s->mem, o->id);
        if (d->libraryUnload)
            (void)d->libraryUnload(o->h.lib);
        break;
    case TF_PROTO_H_CTX:
        (void)d->ctxDestroy(o->h.ctx);
        tf_wcompute_ctx_gone(&s->w->compute, (uintptr_t)o->h.ctx);
        s->cur_id = 0;
        if (s->primary[o->dev] == o->id)
            s->primary[o->dev] = 0;
        break;
    default:
        break;
    }
    obj_drop(s, o);
}

/* Destroys every object matching PRED (in dependency order: streams and events, functions,
 * modules, libraries, then contexts). */
typedef int (*obj_pred)(const struct obj *o, uint64_t arg);

static void destroy_where(struct session *s, unsigned type, obj_pred pred, uint64_t arg)
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
        destroy_obj(s, v[i]);
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

static int pred_owner(const struct obj *o, uint64_t owner)
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

static void destroy_ctx(struct session *s, struct obj *ctx)
{
    uint64_t id = ctx->id;
    if (s->stage_mem)
        stage_drain(s);
    ev_forget(s, id);
    destroy_where(s, TF_PROTO_H_STREAM, pred_ctx, id);
    destroy_where(s, TF_PROTO_H_EVENT, pred_ctx, id);
    destroy_where(s, TF_PROTO_H_FUNC, pred_ctx, id);
    /* Allocations made in this context. */
    for (size_t i = 0; i < s->mem.n;) {
        struct tf_range r = s->mem.v[i];
        if (r.aux == id && r.owner == 0) {
            free_range(s, &r);
            tf_rangeset_del(&s->mem, r.base, 0, NULL);
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
        destroy_where(s, TF_PROTO_H_FUNC, pred_owner, m->id);
        destroy_obj(s, m);
    }
    forget_kfuncs(s, id);
    destroy_obj(s, ctx);
}

static void session_cleanup(struct session *s)
{
    stage_release_all(s);
    destroy_where(s, TF_PROTO_H_STREAM, pred_all, 0);
    destroy_where(s, TF_PROTO_H_EVENT, pred_all, 0);
    for (size_t i = 0; i < s->mem.n; i++)
        free_range(s, &s->mem.v[i]);
    s->mem.n = 0;
    destroy_where(s, TF_PROTO_H_FUNC, pred_all, 0);
    destroy_where(s, TF_PROTO_H_KERNEL, pred_all, 0);
    destroy_where(s, TF_PROTO_H_MODULE, pred_all, 0);
    destroy_where(s, TF_PROTO_H_LIBRARY, pred_all, 0);
    destroy_where(s, TF_PROTO_H_CTX, pred_all, 0);
}

/* ---- request handlers ----------------------------------------------------------------------
 * Each returns a CUresult (>= 0) or TF_EPROTO for a request that is malformed beyond CUDA
 * misuse (which closes the connection). SYNC handlers fill s->reply (pre-sized to the reply
 * layout and zeroed; status is patched in by the dispatcher). */

#define PROTO_FAIL(s, msg)                                                                         \
    do {                                                                                           \
        (s)->why = (msg);                                                                          \
        return TF_EPROTO;                                                                          \
    } while (0)

struct req {
    const uint8_t *p; /* fixed part */
    const uint8_t *tail;
    size_t tlen;
    const char *why;
};

static int h_ctx_create(struct session *s, struct req *q, int primary)
{
    struct tf_msg_ctx_create_req m;
    tf_msg_ctx_create_req_get(q->p, &m);
    if (!client_id_ok(s, m.ctx, TF_PROTO_H_CTX))
        PROTO_FAIL(q, "bad new context id");
    if (m.device >= (uint32_t)s->w->ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    if (primary && s->primary[m.device])
        PROTO_FAIL(q, "primary context retained twice");
    CUcontext ctx;
    CUresult r = tf_drv_ctx_create(s->d, &ctx, m.flags, s->w->devs[m.device].dev);
    if (r != CUDA_SUCCESS)
        return r;
    struct obj *o = obj_new(s, m.ctx, TF_PROTO_H_CTX, m.ctx);
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

static int h_ctx_destroy(struct session *s, struct req *q)
{
    struct tf_msg_ctx_req m;
    tf_msg_ctx_req_get(q->p, &m);
    struct obj *o = obj_get(s, m.ctx, TF_PROTO_H_CTX);
    if (!o)
        return CUDA_ERROR_INVALID_CONTEXT;
    destroy_ctx(s, o);
    return CUDA_SUCCESS;
}

static int h_primary_drop(struct session *s, struct req *q)
{
    struct tf_msg_primary_drop_req m;
    tf_msg_primary_drop_req_get(q->p, &m);
    if (m.device >= (uint32_t)s->w->ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    struct obj *o = obj_get(s, s->primary[m.device], TF_PROTO_H_CTX);
    if (!o)
        return CUDA_ERROR_INVALID_CONTEXT;
    destroy_ctx(s, o);
    return CUDA_SUCCESS;
}

static int h_ctx_sync(struct session *s, struct req *q)
{
    struct tf_msg_ctx_req m;
    tf_msg_ctx_req_get(q->p, &m);
    CUresult r = use_ctx(s, m.ctx, NULL);
    if (r)
        return r;
    tf_wconn_wait_begin(s->c);
    r = s->d->ctxSynchronize();
    tf_wconn_wait_end(s->c);
    return r;
}

static int alloc_common(struct session *s, uint64_t ctx, uint64_t bytes, uint64_t width,
                        uint64_t height, uint32_t elemsize)
{
    struct obj *c;
    CUresult r = use_ctx(s, ctx, &c);
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
        if (bytes > INT64_MAX || tf_worker_vram_reserve(s->w, c->dev, (int64_t)bytes) != 0)
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

static int h_mem_alloc(struct session *s, struct req *q)
{
    struct tf_msg_mem_alloc_req m;
    tf_msg_mem_alloc_req_get(q->p, &m);
    return alloc_common(s, m.ctx, m.bytesize, 0, 0, 0);
}

static int h_mem_pitch(struct session *s, struct req *q)
{
    struct tf_msg_mem_pitch_req m;
    tf_msg_mem_pitch_req_get(q->p, &m);
    if (m.width == 0 || m.height == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_common(s, m.ctx, 0, m.width, m.height, m.elemsize);
}

static int h_mem_free(struct session *s, struct req *q)
{
    struct tf_msg_mem_free_req m;
    tf_msg_mem_free_req_get(q->p, &m);
    struct tf_range r;
    if (tf_rangeset_del(&s->mem, m.dptr, 0, &r) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult cr = use_ctx(s, r.aux, NULL);
    if (cr == CUDA_SUCCESS)
        cr = s->d->memFree((CUdeviceptr)r.base);
    tf_worker_vram_release(s->w, ctx_dev(s, r.aux), (int64_t)r.size);
    return cr;
}

static int h_mem_info(struct session *s, struct req *q)
{
    struct tf_msg_ctx_req m;
    tf_msg_ctx_req_get(q->p, &m);
    struct obj *c;
    CUresult r = use_ctx(s, m.ctx, &c);
    if (r)
        return r;
    size_t fr = 0, tot = 0;
    r = s->d->memGetInfo(&fr, &tot);
    if (r)
        return r;
    struct tf_msg_mem_info_rep rep = {0};
    vram_view(s->w, c->dev, fr, tot, &rep.free, &rep.total);
    tf_msg_mem_info_rep_put(s->reply.data, &rep);
    return CUDA_SUCCESS;
}

/* One HtoD chunk of N bytes to M->dst. The data is at SRC, or (SRC NULL) still in the socket:
 * then it is received straight into the staging ring. Returns a CUresult, or TF_EIO when the
 * connection failed while the data was read. */
static int htod_chunk(struct session *s, const struct tf_msg_htod_req *m, const uint8_t *src,
                      size_t n)
{
    CUstream st = NULL;
    CUresult r = use_ctx(s, m->ctx, NULL);
    if (!r)
        r = get_stream(s, m->stream, &st);
    if (!r && n && !mem_ok(s, m->dst, n))
        r = CUDA_ERROR_INVALID_VALUE;
    if (n && stage_ready(s)) {
        size_t off, charge;
        uint8_t *p = stage_alloc(s, n, &off, &charge);
        if (!src && tf_wconn_read_body(s->c, p, n) != 0)
            return TF_EIO;
        if (r)
            return r; /* the bytes are consumed, the region is not handed out */
        if (src)
            memcpy(p, src, n);
        CUevent ev = NULL;
        r = use_ctx(s, m->ctx, NULL);
        if (!r)
            r = s->d->memcpyHtoDAsync(m->dst, p, n, st);
        if (!r && ev_get(s, m->ctx, &ev) == CUDA_SUCCESS &&
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

static int h_htod(struct session *s, struct req *q)
{
    struct tf_msg_htod_req m;
    tf_msg_htod_req_get(q->p, &m);
    return htod_chunk(s, &m, q->tail, q->tlen);
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
    stage_drain(s); /* the ring is ours alone now */
    CUresult r = use_ctx(s, m->ctx, NULL);
    CUevent ev[DTOH_SLOTS] = {NULL};
    uint64_t nchunks = (m->len + TF_PROTO_CHUNK - 1) / TF_PROTO_CHUNK;
    uint64_t nslots = nchunks < DTOH_SLOTS ? nchunks : DTOH_SLOTS;
    for (uint64_t i = 0; !r && i < nslots; i++)
        r = ev_get(s, m->ctx, &ev[i]);
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
    if ((r || *sent_fail) && use_ctx(s, m->ctx, NULL) == CUDA_SUCCESS)
        (void)s->d->streamSynchronize(st);
    for (uint64_t i = 0; i < nslots; i++)
        if (ev[i])
            ev_put(s, m->ctx, ev[i]);
    return r;
}

static int h_dtoh(struct session *s, struct req *q)
{
    struct tf_msg_dtoh_req m;
    tf_msg_dtoh_req_get(q->p, &m);
    if (m.tag == 0)
        PROTO_FAIL(q, "DtoH transfer without a tag");
    CUstream st;
    CUresult r = use_ctx(s, m.ctx, NULL);
    if (!r)
        r = get_stream(s, m.stream, &st);
    if (!r && m.len && !mem_ok(s, m.src, m.len))
        r = CUDA_ERROR_INVALID_VALUE;
    int sent_fail = 0;
    if (!r && m.len && stage_ready(s)) {
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

static int h_dtod(struct session *s, struct req *q)
{
    struct tf_msg_dtod_req m;
    tf_msg_dtod_req_get(q->p, &m);
    CUstream st;
    CUresult r = use_ctx(s, m.ctx, NULL);
    if (!r)
        r = get_stream(s, m.stream, &st);
    if (r || m.len == 0)
        return r;
    if (!mem_ok(s, m.dst, m.len) || !mem_ok(s, m.src, m.len))
        return CUDA_ERROR_INVALID_VALUE;
    return s->d->memcpyDtoDAsync(m.dst, m.src, m.len, st);
}

static int h_memset(struct session *s, struct req *q)
{
    struct tf_msg_memset_req m;
    tf_msg_memset_req_get(q->p, &m);
    if (m.elemsize != 1 && m.elemsize != 2 && m.elemsize != 4)
        PROTO_FAIL(q, "memset element size not 1, 2 or 4");
    CUstream st;
    CUresult r = use_ctx(s, m.ctx, NULL);
    if (!r)
        r = get_stream(s, m.stream, &st);
    if (r || m.count == 0)
        return r;
    if (m.count > UINT64_MAX / m.elemsize || !mem_ok(s, m.dst, m.count * m.elemsize))
        return CUDA_ERROR_INVALID_VALUE;
    if (m.elemsize == 1)
        return s->d->memsetD8Async(m.dst, (unsigned char)m.value, m.count, st);
    if (m.elemsize == 2)
        return s->d->memsetD16Async(m.dst, (unsigned short)m.value, m.count, st);
    return s->d->memsetD32Async(m.dst, m.value, m.count, st);
}

static int h_ptr_attr(struct session *s, struct req *q)
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
        v = (uint64_t)ctx_dev(s, rg->aux);
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
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: {
        CUresult r = use_ctx(s, rg->aux, NULL);
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

static int h_blob(struct session *s, struct req *q)
{
    if (tf_buf_append(&s->blob, q->tail, q->tlen) != 0)
        PROTO_FAIL(q, "module image larger than the maximum");
    return CUDA_SUCCESS;
}

/* ---- modules and functions ------------------------------------------------------------------ */

/* Parameter layout and attributes of FN into O, and its record into the reply. */
static CUresult describe_func(struct session *s, struct obj *o, CUfunction fn)
{
    uint32_t off[TF_PROTO_MAX_PARAMS], sz[TF_PROTO_MAX_PARAMS];
    uint32_t n = 0, end = 0;
    for (; n < TF_PROTO_MAX_PARAMS; n++) {
        size_t po = 0, ps = 0;
        CUresult r = s->d->funcGetParamInfo(fn, n, &po, &ps);
        if (r == CUDA_ERROR_INVALID_VALUE)
            break;
        if (r)
            return r;
        if (ps == 0 || po < end || po + ps > TF_PROTO_MAX_PARAM_BYTES)
            return CUDA_ERROR_NOT_SUPPORTED;
        off[n] = (uint32_t)po;
        sz[n] = (uint32_t)ps;
        end = (uint32_t)(po + ps);
    }
    free(o->param_off);
    o->param_off = n ? malloc(2 * n * sizeof(uint32_t)) : NULL;
    if (n && !o->param_off)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (n) {
        memcpy(o->param_off, off, n * sizeof(uint32_t));
        memcpy(o->param_off + n, sz, n * sizeof(uint32_t));
    }
    o->nparams = n;
    o->params_size = end;
    return CUDA_SUCCESS;
}

/* Appends the record of O (named NAME) to the reply. */
static int append_func_record(struct session *s, const struct obj *o, CUfunction fn,
                              const char *name)
{
    uint32_t nlen = (uint32_t)strnlen(name, TF_PROTO_MAX_NAME + 1);
    if (nlen == 0 || nlen > TF_PROTO_MAX_NAME)
        return TF_ERANGE;
    uint32_t nattrs = CU_FUNC_ATTRIBUTE_MAX;
    size_t need = tf_proto_func_size(nlen, o->nparams, nattrs);
    uint8_t *p = tf_buf_grow(&s->reply, need);
    if (!p)
        return TF_ENOSPC;
    struct tf_msg_func_info fi = {.func = o->id,
                                  .nparams = o->nparams,
                                  .name_len = nlen,
                                  .nattrs = nattrs,
                                  .params_size = o->params_size};
    tf_msg_func_info_put(p, &fi);
    p += TF_PROTO_SIZE_func_info;
    memcpy(p, name, nlen);
    p += nlen;
    for (uint32_t i = 0; i < o->nparams; i++) {
        struct tf_msg_param_info pi = {.offset = o->param_off[i],
                                       .size = o->param_off[o->nparams + i]};
        tf_msg_param_info_put(p, &pi);
        p += TF_PROTO_SIZE_param_info;
    }
    for (uint32_t a = 0; a < nattrs; a++) {
        int v = 0;
        CUresult r = s->d->funcGetAttribute(&v, (CUfunction_attribute)a, fn);
        struct tf_msg_attr_val av = {.status = (uint32_t)r, .value = (uint32_t)v};
        tf_msg_attr_val_put(p, &av);
        p += TF_PROTO_SIZE_attr_val;
    }
    return 0;
}

/* Function of kernel object K in the current context CTX (cached per context). */
static CUresult kernel_func(struct session *s, struct obj *k, uint64_t ctx, CUfunction *fn)
{
    for (int i = 0; i < k->nkf; i++) {
        if (k->kf[i].ctx == ctx) {
            *fn = k->kf[i].fn;
            return CUDA_SUCCESS;
        }
    }
    if (!s->d->kernelGetFunction)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult r = s->d->kernelGetFunction(fn, k->h.kern);
    if (r)
        return r;
    if (k->nkf < MAX_KFUNCS)
        k->kf[k->nkf++] = (struct kfunc){ctx, *fn};
    return CUDA_SUCCESS;
}

/* Next ".entry NAME" in PTX text [*P, END); 1 with NAME (NUL-terminated) or 0. */
static int ptx_next_entry(const char **pp, const char *end, char *name, size_t cap)
{
    const char *p = *pp;
    while (p < end) {
        if (p + 1 < end && p[0] == '/' && p[1] == '/') {
            while (p < end && *p != '\n')
                p++;
            continue;
        }
        if (p + 1 < end && p[0] == '/' && p[1] == '*') {
            p += 2;
            while (p + 1 < end && !(p[0] == '*' && p[1] == '/'))
                p++;
            p += 2;
            continue;
        }
        if ((size_t)(end - p) > 7 && memcmp(p, ".entry", 6) == 0 && (p[6] == ' ' || p[6] == '\t')) {
            p += 6;
            while (p < end && (*p == ' ' || *p == '\t'))
                p++;
            size_t n = 0;
            while (p < end && n + 1 < cap &&
                   ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || *p == '_' || *p == '$' || *p == '.'))
                name[n++] = *p++;
            name[n] = 0;
            *pp = p;
            if (n)
                return 1;
            continue;
        }
        p++;
    }
    *pp = end;
    return 0;
}

static uint64_t worker_id(struct session *s, unsigned type)
{
    return TF_PROTO_HANDLE(type, TF_PROTO_H_WORKER | ++s->next_worker_serial);
}

/* Registers function FN (or kernel KERN) named NAME of module/library OWNER and appends its
 * record. Returns 0, or non-zero when the reply is full (the client will ask by name). */
static int report_one(struct session *s, struct obj *owner, uint64_t ctx, CUfunction fn,
                      CUkernel kern, const char *name, uint32_t *count)
{
    int is_kernel = kern != NULL;
    struct obj *o = obj_new(s, worker_id(s, is_kernel ? TF_PROTO_H_KERNEL : TF_PROTO_H_FUNC),
                            is_kernel ? TF_PROTO_H_KERNEL : TF_PROTO_H_FUNC, is_kernel ? 0 : ctx);
    if (!o)
        return TF_ENOMEM;
    o->owner = owner->id;
    if (is_kernel) {
        o->h.kern = kern;
        if (kernel_func(s, o, ctx, &fn) != CUDA_SUCCESS) {
            obj_drop(s, o);
            return 0;
        }
    } else {
        o->h.fn = fn;
    }
    size_t mark = s->reply.len;
    if (describe_func(s, o, fn) != CUDA_SUCCESS || append_func_record(s, o, fn, name) != 0) {
        s->reply.len = mark;
        obj_drop(s, o);
        return mark + 64 > TF_PROTO_MAX_PAYLOAD / 2 ? TF_ENOSPC : 0;
    }
    (*count)++;
    return 0;
}

static uint32_t report_funcs(struct session *s, struct obj *owner, uint64_t ctx, const char *img,
                             size_t len)
{
    uint32_t count = 0;
    char name[TF_PROTO_MAX_NAME + 1];
    const char *p = img, *end = img + len;
    /* PTX text: the entry names are in the image. Binary images (cubin, fatbin): the client
     * looks functions up by name instead. */
    while (ptx_next_entry(&p, end, name, sizeof(name)) && count < TF_PROTO_MAX_FUNCS) {
        CUfunction fn = NULL;
        CUkernel kern = NULL;
        CUresult r;
        if (owner->type == TF_PROTO_H_LIBRARY)
            r = s->d->libraryGetKernel(&kern, owner->h.lib, name);
        else
            r = s->d->moduleGetFunction(&fn, owner->h.mod, name);
        if (r != CUDA_SUCCESS)
            continue;
        if (report_one(s, owner, ctx, fn, kern, name, &count) != 0)
            break;
    }
    return count;
}

static int h_module_load(struct session *s, struct req *q)
{
    struct tf_msg_module_load_req m;
    tf_msg_module_load_req_get(q->p, &m);
    if (!s->d->moduleLoadData || !s->d->moduleUnload || !s->d->moduleGetFunction ||
        !s->d->funcGetParamInfo || !s->d->funcGetAttribute || !s->d->launchKernel) {
        tf_buf_reset(&s->blob);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    unsigned type = m.kind == TF_PROTO_LOAD_LIBRARY ? TF_PROTO_H_LIBRARY : TF_PROTO_H_MODULE;
    if (m.kind > TF_PROTO_LOAD_LIBRARY || !client_id_ok(s, m.module, type))
        PROTO_FAIL(q, "bad module load request");
    CUresult r = CUDA_SUCCESS;
    char log[TF_PROTO_MAX_LOG];
    log[0] = 0;
    /* Images are NUL-terminated for the driver (PTX text needs it; binaries ignore it). */
    if (tf_buf_append(&s->blob, "", 1) != 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!r && type == TF_PROTO_H_MODULE)
        r = use_ctx(s, m.ctx, NULL);
    else if (!r && m.ctx)
        r = use_ctx(s, m.ctx, NULL);
    if (!r && type == TF_PROTO_H_LIBRARY && !s->d->libraryLoadData)
        r = CUDA_ERROR_NOT_SUPPORTED;
    CUmodule mod = NULL;
    CUlibrary lib = NULL;
    if (!r) {
        CUjit_option opt[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
        void *val[2] = {log, (void *)(uintptr_t)sizeof(log)};
        tf_wconn_wait_begin(s->c);
        if (type == TF_PROTO_H_LIBRARY)
            r = s->d->libraryLoadData(&lib, s->blob.data, opt, val, 2, NULL, NULL, 0);
        else if (s->d->moduleLoadDataEx)
            r = s->d->moduleLoadDataEx(&mod, s->blob.data, 2, opt, val);
        else
            r = s->d->moduleLoadData(&mod, s->blob.data);
        tf_wconn_wait_end(s->c);
        log[sizeof(log) - 1] = 0;
    }
    uint32_t nfuncs = 0;
    size_t loglen = strnlen(log, sizeof(log) - 1);
    if (tf_buf_append(&s->reply, log, loglen) != 0)
        loglen = 0;
    if (!r) {
        struct obj *o = obj_new(s, m.module, type, type == TF_PROTO_H_MODULE ? m.ctx : 0);
        if (!o) {
            if (mod)
                s->d->moduleUnload(mod);
            if (lib)
                s->d->libraryUnload(lib);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            if (type == TF_PROTO_H_MODULE)
                o->h.mod = mod;
            else
                o->h.lib = lib;
            if (type == TF_PROTO_H_MODULE || (m.ctx && s->d->libraryGetKernel))
                nfuncs = report_funcs(s, o, m.ctx, (const char *)s->blob.data, s->blob.len - 1);
        }
    }
    tf_buf_reset(&s->blob);
    struct tf_msg_module_load_rep rep = {.nfuncs = nfuncs, .log_len = (uint32_t)loglen};
    tf_msg_module_load_rep_put(s->reply.data, &rep);
    return r;
}

static int h_module_unload(struct session *s, struct req *q)
{
    struct tf_msg_module_req m;
    tf_msg_module_req_get(q->p, &m);
    struct obj *o = obj_get(s, m.module, TF_PROTO_H_MODULE);
    if (!o)
        o = obj_get(s, m.module, TF_PROTO_H_LIBRARY);
    if (!o)
        return CUDA_ERROR_INVALID_HANDLE;
    destroy_where(s, o->type == TF_PROTO_H_MODULE ? TF_PROTO_H_FUNC : TF_PROTO_H_KERNEL, pred_owner,
                  o->id);
    if (o->type == TF_PROTO_H_LIBRARY) {
        /* Functions resolved from its kernels. */
        destroy_where(s, TF_PROTO_H_FUNC, pred_owner, o->id);
    }
    destroy_obj(s, o);
    return CUDA_SUCCESS;
}

/* NUL-terminated copy of a name tail. */
static int tail_name(const struct req *q, char *name, size_t cap)
{
    if (q->tlen == 0 || q->tlen >= cap || memchr(q->tail, 0, q->tlen))
        return TF_EINVAL;
    memcpy(name, q->tail, q->tlen);
    name[q->tlen] = 0;
    return 0;
}

static int h_get_func(struct session *s, struct req *q, int from_kernel)
{
    struct tf_msg_get_func_req m;
    tf_msg_get_func_req_get(q->p, &m);
    char name[TF_PROTO_MAX_NAME + 1];
    struct obj *owner = NULL;
    CUfunction fn = NULL;
    CUkernel kern = NULL;
    CUresult r = CUDA_SUCCESS;
    unsigned type = TF_PROTO_H_FUNC;
    if (from_kernel) {
        owner = obj_get(s, m.owner, TF_PROTO_H_KERNEL);
        if (!owner)
            return CUDA_ERROR_INVALID_HANDLE;
        r = use_ctx(s, m.ctx, NULL);
        if (!r)
            r = kernel_func(s, owner, m.ctx, &fn);
        snprintf(name, sizeof(name), "kernel");
    } else {
        if (tail_name(q, name, sizeof(name)) != 0)
            PROTO_FAIL(q, "bad function name");
        owner = obj_get(s, m.owner, TF_PROTO_H_MODULE);
        if (owner) {
            r = use_ctx(s, m.ctx, NULL);
            if (!r)
                r = s->d->moduleGetFunction(&fn, owner->h.mod, name);
        } else {
            owner = obj_get(s, m.owner, TF_PROTO_H_LIBRARY);
            if (!owner)
                return CUDA_ERROR_INVALID_HANDLE;
            type = TF_PROTO_H_KERNEL;
            if (!s->d->libraryGetKernel)
                return CUDA_ERROR_NOT_SUPPORTED;
            r = m.ctx ? use_ctx(s, m.ctx, NULL) : CUDA_ERROR_INVALID_CONTEXT;
            if (!r)
                r = s->d->libraryGetKernel(&kern, owner->h.lib, name);
        }
    }
    if (r)
        return r;
    if (!client_id_ok(s, m.func, type))
        PROTO_FAIL(q, "bad new function id");
    struct obj *o = obj_new(s, m.func, type, type == TF_PROTO_H_FUNC ? m.ctx : 0);
    if (!o)
        return CUDA_ERROR_OUT_OF_MEMORY;
    o->owner = from_kernel ? owner->owner : owner->id;
    if (type == TF_PROTO_H_KERNEL) {
        o->h.kern = kern;
        r = kernel_func(s, o, m.ctx, &fn);
    } else {
        o->h.fn = fn;
    }
    if (!r)
        r = describe_func(s, o, fn);
    if (!r && append_func_record(s, o, fn, name) != 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r)
        obj_drop(s, o);
    return r;
}

static int h_get_global(struct session *s, struct req *q)
{
    struct tf_msg_module_req m;
    tf_msg_module_req_get(q->p, &m);
    char name[TF_PROTO_MAX_NAME + 1];
    if (tail_name(q, name, sizeof(name)) != 0)
        PROTO_FAIL(q, "bad global name");
    CUdeviceptr p = 0;
    size_t size = 0;
    CUresult r;
    struct obj *o = obj_get(s, m.module, TF_PROTO_H_MODULE);
    if (o) {
        r = use_ctx(s, m.ctx, NULL);
        if (!r)
            r = s->d->moduleGetGlobal ? s->d->moduleGetGlobal(&p, &size, o->h.mod, name)
                                      : CUDA_ERROR_NOT_SUPPORTED;
    } else {
        o = obj_get(s, m.module, TF_PROTO_H_LIBRARY);
        if (!o)
            return CUDA_ERROR_INVALID_HANDLE;
        r = use_ctx(s, m.ctx, NULL);
        if (!r)
            r = s->d->libraryGetGlobal ? s->d->libraryGetGlobal(&p, &size, o->h.lib, name)
                                       : CUDA_ERROR_NOT_SUPPORTED;
    }
    if (r)
        return r;
    if (size && tf_rangeset_add(&s->mem, p, size, o->id, m.ctx) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct tf_msg_global_rep rep = {.dptr = p, .size = size};
    tf_msg_global_rep_put(s->reply.data, &rep);
    return CUDA_SUCCESS;
}

static int h_func_attr(struct session *s, struct req *q)
{
    struct tf_msg_func_attr_req m;
    tf_msg_func_attr_req_get(q->p, &m);
    CUresult r = use_ctx(s, m.ctx, NULL);
    if (r)
        return r;
    CUfunction fn;
    struct obj *o = obj_get(s, m.func, TF_PROTO_H_FUNC);
    if (o) {
        fn = o->h.fn;
    } else {
        o = obj_get(s, m.func, TF_PROTO_H_KERNEL);
        if (!o)
            return CUDA_ERROR_INVALID_HANDLE;
        r = kernel_func(s, o, m.ctx, &fn);
        if (r)
            return r;
    }
    if (!s->d->funcSetAttribute)
        return CUDA_ERROR_NOT_SUPPORTED;
    return s->d->funcSetAttribute(fn, (CUfunction_attribute)m.attr, (int)m.value);
}

/* The compute limit: a launch takes its tokens before it is issued, waiting for them on this
 * connection's thread (later requests of this client wait behind it, in order; other
 * clients' connections are not held). The connection counts as waiting from the first
 * throttled launch until the session reads from the client again: a batch of launches that
 * each wait less than the keepalive period may add up to more than the client's timeout. */
static void charge_launch(struct session *s, struct tf_wlaunch *l)
{
    if (!tf_wcompute_try(&s->w->compute, &s->cost, l)) {
        tf_wconn_wait_begin(s->c);
        tf_wcompute_wait(&s->w->compute, l);
    }
    tf_wcompute_issue(&s->w->compute, &s->cost, l);
}

static int h_launch(struct session *s, struct req *q)
{
    struct tf_msg_launch_req m;
    tf_msg_launch_req_get(q->p, &m);
    const uint8_t *attrs, *params;
    size_t plen;
    if (tf_proto_launch_tail(&m, q->tail, q->tlen, &attrs, &params, &plen) != 0)
        PROTO_FAIL(q, "bad launch tail");
    struct obj *cx;
    CUresult r = use_ctx(s, m.ctx, &cx);
    if (r)
        return r;
    CUfunction fn;
    struct obj *o = obj_get(s, m.func, TF_PROTO_H_FUNC);
    if (o) {
        fn = o->h.fn;
    } else {
        o = obj_get(s, m.func, TF_PROTO_H_KERNEL);
        if (!o)
            return CUDA_ERROR_INVALID_HANDLE;
        r = kernel_func(s, o, m.ctx, &fn);
        if (r)
            return r;
    }
    if (plen != o->params_size)
        return CUDA_ERROR_INVALID_VALUE;
    CUstream st;
    r = get_stream(s, m.stream, &st);
    if (r)
        return r;
    memcpy(s->pbuf, params, plen);
    for (uint32_t i = 0; i < o->nparams; i++)
        s->kparams[i] = s->pbuf + o->param_off[i];
    struct tf_wlaunch wl = {.dev = cx->dev,
                            .func = (uintptr_t)fn,
                            .threads = (uint64_t)m.grid_x * m.grid_y * m.grid_z *
                                       ((uint64_t)m.block_x * m.block_y * m.block_z),
                            .stream = (uintptr_t)st};
    if (m.nattrs == 0) {
        charge_launch(s, &wl);
        r = s->d->launchKernel(fn, m.grid_x, m.grid_y, m.grid_z, m.block_x, m.block_y, m.block_z,
                               m.shmem, st, o->nparams ? s->kparams : NULL, NULL);
        tf_wcompute_issued(&s->w->compute, &s->cost, &wl, r == CUDA_SUCCESS);
        return r;
    }
    if (!s->d->launchKernelEx)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUlaunchAttribute la[TF_PROTO_MAX_LAUNCH_ATTRS];
    memset(la, 0, sizeof(la));
    for (uint32_t i = 0; i < m.nattrs; i++) {
        struct tf_msg_launch_attr a;
        tf_msg_launch_attr_get(attrs + (size_t)i * TF_PROTO_SIZE_launch_attr, &a);
        la[i].id = (CUlaunchAttributeID)a.id;
        switch (a.id) {
        case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
            la[i].value.cooperative = (int)a.v0;
            break;
        case CU_LAUNCH_ATTRIBUTE_PRIORITY:
            la[i].value.priority = (int)a.v0;
            break;
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
            la[i].value.clusterDim.x = a.v0;
            la[i].value.clusterDim.y = a.v1;
            la[i].value.clusterDim.z = a.v2;
            break;
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
            la[i].value.clusterSchedulingPolicyPreference = (CUclusterSchedulingPolicy)a.v0;
            break;
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
            la[i].value.programmaticStreamSerializationAllowed = (int)a.v0;
            break;
        case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
            la[i].value.memSyncDomain = (CUlaunchMemSyncDomain)a.v0;
            break;
        default:
            return CUDA_ERROR_NOT_SUPPORTED;
        }
    }
    CUlaunchConfig cfg = {.gridDimX = m.grid_x,
                          .gridDimY = m.grid_y,
                          .gridDimZ = m.grid_z,
                          .blockDimX = m.block_x,
                          .blockDimY = m.block_y,
                          .blockDimZ = m.block_z,
                          .sharedMemBytes = m.shmem,
                          .hStream = st,
                          .attrs = la,
                          .numAttrs = m.nattrs};
    charge_launch(s, &wl);
    r = s->d->launchKernelEx(&cfg, fn, o->nparams ? s->kparams : NULL, NULL);
    tf_wcompute_issued(&s->w->compute, &s->cost, &wl, r == CUDA_SUCCESS);
    return r;
}

/* ---- streams and events --------------------------------------------------------------------- */

static int h_stream_create(struct session *s, struct req *q)
{
    struct tf_msg_stream_create_req m;
    tf_msg_stream_create_req_get(q->p, &m);
    if (!client_id_ok(s, m.stream, TF_PROTO_H_STREAM))
        PROTO_FAIL(q, "bad new stream id");
    CUresult r = use_ctx(s, m.ctx, NULL);
    if (r)
        return r;
    CUstream st;
    if (m.priority != 0 && s->d->streamCreateWithPriority)
        r = s->d->streamCreateWithPriority(&st, m.flags, (int)m.priority);
    else
        r = s->d->streamCreate(&st, m.flags);
    if (r)
        return r;
    struct obj *o = obj_new(s, m.stream, TF_PROTO_H_STREAM, m.ctx);
    if (!o) {
        s->d->streamDestroy(st);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    o->h.st = st;
    return CUDA_SUCCESS;
}

static int h_stream_destroy(struct session *s, struct req *q)
{
    struct tf_msg_stream_req m;
    tf_msg_stream_req_get(q->p, &m);
    struct obj *o = obj_get(s, m.stream, TF_PROTO_H_STREAM);
    if (!o)
        return CUDA_ERROR_INVALID_HANDLE;
    destroy_obj(s, o);
    return CUDA_SUCCESS;
}

static int h_stream_wait(struct session *s, struct req *q, int query)
{
    struct tf_msg_stream_req m;
    tf_msg_stream_req_get(q->p, &m);
    CUresult r = CUDA_SUCCESS;
    if (m.ctx)
        r = use_ctx(s, m.ctx, NULL);
    CUstream st;
    if (!r)
        r = get_stream(s, m.stream, &st);
    if (r)
        return r;
    if (query)
        return s->d->streamQuery(st);
    tf_wconn_wait_begin(s->c);
    r = s->d->streamSynchronize(st);
    tf_wconn_wait_end(s->c);
    return r;
}

static int h_stream_wait_event(struct session *s, struct req *q)
{
    struct tf_msg_stream_wait_req m;
    tf_msg_stream_wait_req_get(q->p, &m);
    CUresult r = CUDA_SUCCESS;
    if (m.ctx)
        r = use_ctx(s, m.ctx, NULL);
    CUstream st;
    CUevent ev;
    if (!r)
        r = get_stream(s, m.stream, &st);
    if (!r)
        r = get_event(s, m.event, &ev);
    if (r)
        return r;
    return s->d->streamWaitEvent(st, ev, m.flags);
}

static int h_event_create(struct session *s, struct req *q)
{
    struct tf_msg_event_create_req m;
    tf_msg_event_create_req_get(q->p, &m);
    if (!client_id_ok(s, m.event, TF_PROTO_H_EVENT))
        PROTO_FAIL(q, "bad new event id");
    CUresult r = use_ctx(s, m.ctx, NULL);
    if (r)
        return r;
    CUevent ev;
    r = s->d->eventCreate(&ev, m.flags);
    if (r)
        return r;
    struct obj *o = obj_new(s, m.event, TF_PROTO_H_EVENT, m.ctx);
    if (!o) {
        s->d->eventDestroy(ev);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    o->h.ev = ev;
    return CUDA_SUCCESS;
}

static int h_event_destroy(struct session *s, struct req *q)
{
    struct tf_msg_event_req m;
    tf_msg_event_req_get(q->p, &m);
    struct obj *o = obj_get(s, m.event, TF_PROTO_H_EVENT);
    if (!o)
        return CUDA_ERROR_INVALID_HANDLE;
    destroy_obj(s, o);
    return CUDA_SUCCESS;
}

static int h_event_record(struct session *s, struct req *q)
{
    struct tf_msg_event_record_req m;
    tf_msg_event_record_req_get(q->p, &m);
    CUresult r = CUDA_SUCCESS;
    if (m.ctx)
        r = use_ctx(s, m.ctx, NULL);
    CUevent ev;
    CUstream st;
    if (!r)
        r = get_event(s, m.event, &ev);
    if (!r)
        r = get_stream(s, m.stream, &st);
    if (r)
        return r;
    if (m.flags == 0)
        return s->d->eventRecord(ev, st);
    if (!s->d->eventRecordWithFlags)
        return CUDA_ERROR_NOT_SUPPORTED;
    return s->d->eventRecordWithFlags(ev, st, m.flags);
}

static int h_event_wait(struct session *s, struct req *q, int query)
{
    struct tf_msg_event_req m;
    tf_msg_event_req_get(q->p, &m);
    CUresult r = CUDA_SUCCESS;
    if (m.ctx)
        r = use_ctx(s, m.ctx, NULL);
    CUevent ev;
    if (!r)
        r = get_event(s, m.event, &ev);
    if (r)
        return r;
    if (query)
        return s->d->eventQuery(ev);
    tf_wconn_wait_begin(s->c);
    r = s->d->eventSynchronize(ev);
    tf_wconn_wait_end(s->c);
    return r;
}

static int h_event_elapsed(struct session *s, struct req *q)
{
    struct tf_msg_event_elapsed_req m;
    tf_msg_event_elapsed_req_get(q->p, &m);
    CUresult r = CUDA_SUCCESS;
    if (m.ctx)
        r = use_ctx(s, m.ctx, NULL);
    CUevent a, b;
    if (!r)
        r = get_event(s, m.start, &a);
    if (!r)
        r = get_event(s, m.end, &b);
    if (r)
        return r;
    float ms = 0;
    r = tf_drv_elapsed(s->d, &ms, a, b);
    uint32_t bits;
    memcpy(&bits, &ms, sizeof(bits));
    struct tf_msg_elapsed_rep rep = {.ms_bits = bits};
    tf_msg_elapsed_rep_put(s->reply.data, &rep);
    return r;
}

/* ---- dispatch ------------------------------------------------------------------------------- */

static int dispatch(struct session *s, uint16_t op, struct req *q)
{
    switch (op) {
    case TF_OP_FLUSH:
        /* Synchronous copies end with FLUSH: their staged chunks must have landed. */
        if (s->stage_mem)
            stage_drain(s);
        return CUDA_SUCCESS;
    case TF_OP_GOODBYE:
        s->goodbye = 1;
        return CUDA_SUCCESS;
    case TF_OP_CTX_CREATE:
        return h_ctx_create(s, q, 0);
    case TF_OP_PRIMARY_RETAIN:
        return h_ctx_create(s, q, 1);
    case TF_OP_CTX_DESTROY:
        return h_ctx_destroy(s, q);
    case TF_OP_PRIMARY_DROP:
        return h_primary_drop(s, q);
    case TF_OP_CTX_SYNC:
        return h_ctx_sync(s, q);
    case TF_OP_MEM_ALLOC:
        return h_mem_alloc(s, q);
    case TF_OP_MEM_ALLOC_PITCH:
        return h_mem_pitch(s, q);
    case TF_OP_MEM_FREE:
        return h_mem_free(s, q);
    case TF_OP_MEM_GET_INFO:
        return h_mem_info(s, q);
    case TF_OP_MEMCPY_HTOD:
        return h_htod(s, q);
    case TF_OP_MEMCPY_DTOH:
        return h_dtoh(s, q);
    case TF_OP_MEMCPY_DTOD:
        return h_dtod(s, q);
    case TF_OP_MEMSET:
        return h_memset(s, q);
    case TF_OP_POINTER_ATTR:
        return h_ptr_attr(s, q);
    case TF_OP_BLOB_APPEND:
        return h_blob(s, q);
    case TF_OP_MODULE_LOAD:
        return h_module_load(s, q);
    case TF_OP_MODULE_UNLOAD:
        return h_module_unload(s, q);
    case TF_OP_MODULE_GET_FUNC:
        return h_get_func(s, q, 0);
    case TF_OP_KERNEL_GET_FUNC:
        return h_get_func(s, q, 1);
    case TF_OP_MODULE_GET_GLOBAL:
        return h_get_global(s, q);
    case TF_OP_FUNC_SET_ATTR:
        return h_func_attr(s, q);
    case TF_OP_LAUNCH:
        return h_launch(s, q);
    case TF_OP_STREAM_CREATE:
        return h_stream_create(s, q);
    case TF_OP_STREAM_DESTROY:
        return h_stream_destroy(s, q);
    case TF_OP_STREAM_SYNC:
        return h_stream_wait(s, q, 0);
    case TF_OP_STREAM_QUERY:
        return h_stream_wait(s, q, 1);
    case TF_OP_STREAM_WAIT_EVENT:
        return h_stream_wait_event(s, q);
    case TF_OP_EVENT_CREATE:
        return h_event_create(s, q);
    case TF_OP_EVENT_DESTROY:
        return h_event_destroy(s, q);
    case TF_OP_EVENT_RECORD:
        return h_event_record(s, q);
    case TF_OP_EVENT_QUERY:
        return h_event_wait(s, q, 1);
    case TF_OP_EVENT_SYNC:
        return h_event_wait(s, q, 0);
    case TF_OP_EVENT_ELAPSED:
        return h_event_elapsed(s, q);
    default:
        q->why = "opcode not valid here";
        return TF_EPROTO;
    }
}

/* Executes one request (a frame or a batch record). */
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
        defer(s, st);
        return 0;
    }
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
    tf_rangeset_init(&s->mem, MAX_RANGES);
    tf_buf_init(&s->blob, TF_PROTO_MAX_BLOB + 1);
    tf_buf_init(&s->reply, TF_PROTO_MAX_PAYLOAD);
    /* This thread starts with no current context. */
    s->d->ctxSetCurrent(NULL);
    while (!s->goodbye) {
        struct tf_msg_frame_hdr h;
        const char *why = NULL;
        if (s->stage_mem && s->stage.qn)
            stage_reap(s);
        tf_wconn_wait_end(c); /* a stretch of throttled launches is over */
        int rc = tf_wconn_read_header(c, &h, &why);
        if (rc == 0 && h.opcode == TF_OP_MEMCPY_HTOD && h.length >= TF_PROTO_SIZE_htod_req &&
            h.length - TF_PROTO_SIZE_htod_req <= TF_PROTO_CHUNK) {
            uint8_t fixed[TF_PROTO_SIZE_htod_req];
            struct tf_msg_htod_req m;
            rc = tf_wconn_read_body(c, fixed, sizeof(fixed));
            if (rc == 0) {
                tf_msg_htod_req_get(fixed, &m);
                rc = htod_chunk(s, &m, NULL, h.length - TF_PROTO_SIZE_htod_req);
                if (rc > 0) {
                    defer(s, (CUresult)rc);
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
    session_cleanup(s);
    tf_htab_free(&s->objs);
    tf_rangeset_free(&s->mem);
    tf_buf_free(&s->blob);
    tf_buf_free(&s->reply);
    free(s->staging);
    s->d->ctxSetCurrent(NULL);
    free(s);
}
