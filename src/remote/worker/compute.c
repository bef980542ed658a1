/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker's hard compute limit: a private region and engine, or the pod's limit region;
 * see compute.h.
 */
#include "remote/worker/compute.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "limits/bucket.h"
#include "limits/controller.h"
#include "limits/costmodel.h"
#include "limits/engine.h"
#include "limits/nvml.h"
#include "limits/proc.h"
#include "limits/shm.h"
#include "limits/throttle.h"
#include "remote/worker/driver.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SUBSYS "worker"
#define PERIOD_MS 100

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * TF_BUCKET_NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* --- the launch cost model's view of this worker's driver (src/limits/costmodel.h) -------- */

static int w_ctx(void *u, uintptr_t *ctx)
{
    const struct tf_drv *d = u;
    CUcontext c = NULL;
    if (!d->ctxGetCurrent)
        return TF_GPU_UNSUPPORTED;
    CUresult r = d->ctxGetCurrent(&c);
    *ctx = (uintptr_t)c;
    return r == CUDA_SUCCESS ? 0 : TF_GPU_FAILED;
}

static int w_create(void *u, uintptr_t *ev)
{
    const struct tf_drv *d = u;
    CUevent e = NULL;
    CUresult r = d->eventCreate(&e, CU_EVENT_DEFAULT);
    *ev = (uintptr_t)e;
    return r == CUDA_SUCCESS               ? 0
           : r == CUDA_ERROR_NOT_SUPPORTED ? TF_GPU_UNSUPPORTED
                                           : TF_GPU_FAILED;
}

static void w_destroy(void *u, uintptr_t ev)
{
    const struct tf_drv *d = u;
    (void)d->eventDestroy((CUevent)ev);
}

static int w_record(void *u, uintptr_t ev, uintptr_t stream, int ptsz)
{
    const struct tf_drv *d = u;
    return d->eventRecord((CUevent)ev, (CUstream)stream) == CUDA_SUCCESS ? 0 : TF_GPU_FAILED;
}

static int w_query(void *u, uintptr_t ev)
{
    const struct tf_drv *d = u;
    CUresult r = d->eventQuery((CUevent)ev);
    return r == CUDA_SUCCESS ? 0 : r == CUDA_ERROR_NOT_READY ? TF_GPU_PENDING : TF_GPU_FAILED;
}

static int w_elapsed(void *u, uintptr_t a, uintptr_t b, uint64_t *ns)
{
    const struct tf_drv *d = u;
    float ms = 0;
    if (!d->eventElapsedTime2 && !d->eventElapsedTime1)
        return TF_GPU_UNSUPPORTED;
    if (tf_drv_elapsed(d, &ms, (CUevent)a, (CUevent)b) != CUDA_SUCCESS || !(ms >= 0))
        return TF_GPU_FAILED;
    *ns = (uint64_t)((double)ms * 1e6 + 0.5);
    return 0;
}

static int w_capturing(void *u, uintptr_t stream, int ptsz)
{
    const struct tf_drv *d = u;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!d->streamIsCapturing)
        return 0;
    return d->streamIsCapturing((CUstream)stream, &st) != CUDA_SUCCESS ||
           st != CU_STREAM_CAPTURE_STATUS_NONE;
}

static void w_enter(void *u, int *saved)
{
    const struct tf_drv *d = u;
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    *saved = d->exchangeCaptureMode(&m) == CUDA_SUCCESS ? (int)m : -1;
}

static void w_leave(void *u, int saved)
{
    const struct tf_drv *d = u;
    CUstreamCaptureMode m = (CUstreamCaptureMode)saved;
    if (saved >= 0)
        (void)d->exchangeCaptureMode(&m);
}

static void w_nap(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

/* The cost model of C over DRV (none without memory: launches then cost the engine's
 * average, as before the model existed). */
static void cost_model(struct tf_wcompute *c, const struct tf_drv *drv)
{
    c->cm = calloc(1, sizeof(*c->cm));
    if (!c->cm) {
        tf_log(TF_LOG_WARN, SUBSYS,
               "no memory for the launch cost model: launches are charged "
               "the average launch cost");
        return;
    }
    struct tf_gpu_timer t = {
        .u = (void *)drv,
        .ctx_current = w_ctx,
        .event_create = w_create,
        .event_destroy = w_destroy,
        .record = w_record,
        .query = w_query,
        .elapsed_ns = w_elapsed,
        .capturing = w_capturing,
        .enter = drv->exchangeCaptureMode ? w_enter : NULL,
        .leave = drv->exchangeCaptureMode ? w_leave : NULL,
        .now_ns = mono_ns,
        .nap = w_nap,
    };
    tf_costmodel_init(c->cm, &t);
}

/* --- set-up ---------------------------------------------------------------------------- */

int tf_wcompute_start(struct tf_wcompute *c, const struct tf_drv *drv, uint32_t bp,
                      const struct tf_wcompute_dev *devs, int ndev, char *err, size_t errlen)
{
    memset(c, 0, sizeof(*c));
    c->slot = -1;
    atomic_init(&c->lifted, false);
    atomic_init(&c->stale, 0);
    if (bp == 0 || bp >= 10000)
        return 0;
    if (ndev < 1 || ndev > TF_SHM_MAX_DEVICES) {
        tf_errf(err, errlen, "--compute-percent: %d devices (at most %d)", ndev,
                TF_SHM_MAX_DEVICES);
        return TF_EINVAL;
    }
    struct tf_shm_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    snprintf(cfg.name, sizeof(cfg.name), "tf-worker/%d", (int)getpid());
    cfg.ndev = (uint32_t)ndev;
    for (int i = 0; i < ndev; i++) {
        memcpy(cfg.dev[i].uuid, devs[i].uuid, 16);
        cfg.dev[i].flags = TF_SHM_DEV_PRESENT | TF_SHM_DEV_COMPUTE_LIMIT;
        cfg.dev[i].compute_limit_bp = bp;
        cfg.dev[i].mem_total = devs[i].mem_total;
    }
    int rc = tf_shm_check_config(&cfg, err, errlen);
    if (rc)
        return rc;
    if (tf_shm_anon(&cfg, &c->own) != 0) {
        tf_errf(err, errlen, "out of memory");
        return TF_ENOMEM;
    }
    c->region = c->own.r;
    c->r = &c->region;
    c->ndev = ndev;
    for (int i = 0; i < ndev; i++)
        c->entry[i] = i;
    uint64_t owner = tf_proc_self_owner(), pidns = tf_proc_pidns(0);
    c->slot = tf_shm_pid_claim(c->r, owner, pidns);
    cost_model(c, drv);
    char nerr[256] = "";
    if (tf_nvml_open(NULL, NULL, &c->nv, nerr, sizeof(nerr)) != 0) {
        tf_log(TF_LOG_WARN, SUBSYS,
               "compute limit without feedback (%s): enforced open loop at the limit rate", nerr);
        c->nv = NULL;
        return 0;
    }
    struct tf_engine_opts o = {
        .period_ms = PERIOD_MS,
        .usage = {.sample = tf_nvml_sample, .ctx = c->nv},
        .self_owner = owner,
        .pidns = pidns,
        .no_reap = true, /* the only slot is ours */
    };
    c->e = tf_engine_new(&o);
    if (!c->e || tf_engine_add(c->e, c->r, cfg.name) < 0 ||
        tf_engine_thread_start(c->e, "tf-wcompute", &c->th) != 0) {
        tf_log(TF_LOG_WARN, SUBSYS,
               "cannot start the compute controller: enforced open loop at the limit rate");
        tf_engine_destroy(c->e);
        c->e = NULL;
        tf_nvml_close(c->nv);
        c->nv = NULL;
    }
    tf_log(TF_LOG_INFO, SUBSYS, "compute limit %u.%02u%% per device%s", bp / 100, bp % 100,
           c->th ? ", controller every 100 ms" : "");
    return 0;
}

void tf_wcompute_attach(struct tf_wcompute *c, const struct tf_drv *drv,
                        const struct tf_shm_region *r, int slot, const int *entry, int ndev,
                        const char *path)
{
    memset(c, 0, sizeof(*c));
    atomic_init(&c->lifted, false);
    atomic_init(&c->stale, 0);
    c->region = *r;
    c->r = &c->region;
    c->attached = true;
    c->slot = slot;
    c->ndev = ndev;
    for (int i = 0; i < ndev && i < TF_SHM_MAX_DEVICES; i++)
        c->entry[i] = entry[i];
    c->path = path;
    cost_model(c, drv);
}

void tf_wcompute_lift(struct tf_wcompute *c)
{
    atomic_store_explicit(&c->lifted, true, memory_order_relaxed);
}

void tf_wcompute_stop(struct tf_wcompute *c)
{
    tf_engine_thread_stop(c->th);
    tf_engine_destroy(c->e);
    tf_nvml_close(c->nv);
    free(c->cm);
    if (!c->attached)
        tf_shm_unmap(&c->own);
    memset(c, 0, sizeof(*c));
    c->slot = -1;
}

/* As the limiter does on its slow path (tf_throttle_watch_heartbeat). */
static void check_heartbeat(struct tf_wcompute *c, uint64_t now)
{
    tf_throttle_watch_heartbeat(c->r, &c->stale, now, SUBSYS, c->path);
}

/* The tokens for L on region entry E: its kernel's measured cost, or the engine's average. */
static int64_t price(struct tf_wcompute *c, struct tf_cost_thread *th, struct tf_wlaunch *l, int e)
{
    const struct tf_shm_ldev *d = &c->r->lim->dev[e];
    uint64_t prior = atomic_load_explicit(&d->launch_cost, memory_order_relaxed);
    if (!prior)
        prior = TF_LIMIT_COST_DEFAULT_NS;
    if (!c->cm)
        return (int64_t)prior;
    uint64_t key = tf_cost_key(l->func, l->threads, (unsigned)e, false);
    uint32_t scale = atomic_load_explicit(&d->cost_scale, memory_order_relaxed);
    int64_t cost =
        tf_cost_price(c->cm, th, &l->cl, key, prior, scale, &c->r->use->dev[e].bucket, &d->bucket);
    if (l->cl.correction) /* a kernel measured at last: refund its launches over-charged */
        tf_bucket_adjust(&c->r->use->dev[e].bucket, &d->bucket, -l->cl.correction);
    return cost;
}

bool tf_wcompute_try(struct tf_wcompute *c, struct tf_cost_thread *th, struct tf_wlaunch *l)
{
    l->cost = 0;
    l->cl.sample = false;
    l->cl.slot = -1;
    l->cl.borrow = 0;
    if (!c->r || atomic_load_explicit(&c->lifted, memory_order_relaxed))
        return true;
    assert(l->dev >= 0 && l->dev < c->ndev);
    int e = c->entry[l->dev];
    if (c->slot >= 0)
        atomic_fetch_add_explicit(&c->r->use->pid[c->slot].launches[e], 1, memory_order_relaxed);
    if (!(atomic_load_explicit(&c->r->lim->dev[e].flags, memory_order_relaxed) &
          TF_SHM_DEV_COMPUTE_LIMIT))
        return true;
    l->cost = price(c, th, l, e);
    if (l->cl.sample) /* as the limiter does (hook_launch.c) */
        tf_bucket_refill(&c->r->use->dev[e].bucket, &c->r->lim->dev[e].bucket, mono_ns());
    return tf_bucket_try_borrow(&c->r->use->dev[e].bucket, l->cost, l->cl.borrow);
}

uint64_t tf_wcompute_wait(struct tf_wcompute *c, struct tf_wlaunch *l)
{
    uint64_t now = mono_ns();
    if (c->attached)
        check_heartbeat(c, now);
    return tf_throttle_wait_stop(c->r, (unsigned)c->entry[l->dev], l->cost, now, &c->lifted);
}

void tf_wcompute_issue(struct tf_wcompute *c, struct tf_cost_thread *th, struct tf_wlaunch *l)
{
    if (c->cm && l->cl.sample)
        tf_cost_sample_begin(c->cm, th, &l->cl, l->stream, 0);
}

void tf_wcompute_issued(struct tf_wcompute *c, struct tf_cost_thread *th, struct tf_wlaunch *l,
                        bool ok)
{
    if (c->cm && l->cl.slot >= 0)
        tf_cost_sample_end(c->cm, th, &l->cl, l->stream, 0, ok);
}

void tf_wcompute_ctx_gone(struct tf_wcompute *c, uintptr_t ctx)
{
    if (c->cm)
        tf_cost_ctx_gone(c->cm, ctx);
}
