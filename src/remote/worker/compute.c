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
#include "limits/engine.h"
#include "limits/nvml.h"
#include "limits/proc.h"
#include "limits/shm.h"
#include "limits/throttle.h"

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

int tf_wcompute_start(struct tf_wcompute *c, uint32_t bp, const struct tf_wcompute_dev *devs,
                      int ndev, char *err, size_t errlen)
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
    c->r = aligned_alloc(64, TF_SHM_SIZE);
    if (!c->r) {
        tf_errf(err, errlen, "out of memory");
        return TF_ENOMEM;
    }
    tf_shm_format(c->r, &cfg, mono_ns());
    c->ndev = ndev;
    for (int i = 0; i < ndev; i++)
        c->entry[i] = i;
    uint64_t owner = tf_proc_self_owner(), pidns = tf_proc_pidns(0);
    c->slot = tf_shm_pid_claim(c->r, owner, pidns);
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

void tf_wcompute_attach(struct tf_wcompute *c, struct tf_shm_region *r, int slot, const int *entry,
                        int ndev, const char *path)
{
    memset(c, 0, sizeof(*c));
    atomic_init(&c->lifted, false);
    atomic_init(&c->stale, 0);
    c->r = r;
    c->attached = true;
    c->slot = slot;
    c->ndev = ndev;
    for (int i = 0; i < ndev && i < TF_SHM_MAX_DEVICES; i++)
        c->entry[i] = entry[i];
    c->path = path;
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
    if (!c->attached)
        free(c->r);
    memset(c, 0, sizeof(*c));
    c->slot = -1;
}

static int64_t launch_cost(const struct tf_shm_device *d)
{
    uint64_t cost = atomic_load_explicit(&d->launch_cost, memory_order_relaxed);
    return (int64_t)(cost ? cost : TF_LIMIT_COST_DEFAULT_NS);
}

/* As the limiter does on its slow path (tf_throttle_watch_heartbeat). */
static void check_heartbeat(struct tf_wcompute *c, uint64_t now)
{
    tf_throttle_watch_heartbeat(c->r, &c->stale, now, SUBSYS, c->path);
}

bool tf_wcompute_try(struct tf_wcompute *c, int dev)
{
    if (!c->r || atomic_load_explicit(&c->lifted, memory_order_relaxed))
        return true;
    assert(dev >= 0 && dev < c->ndev);
    int e = c->entry[dev];
    struct tf_shm_device *d = &c->r->dev[e];
    if (c->slot >= 0)
        atomic_fetch_add_explicit(&c->r->pid[c->slot].launches[e], 1, memory_order_relaxed);
    if (!(atomic_load_explicit(&d->flags, memory_order_relaxed) & TF_SHM_DEV_COMPUTE_LIMIT))
        return true;
    return tf_bucket_try_take(&d->bucket, launch_cost(d));
}

uint64_t tf_wcompute_wait(struct tf_wcompute *c, int dev)
{
    struct tf_shm_device *d = &c->r->dev[c->entry[dev]];
    uint64_t now = mono_ns();
    if (c->attached)
        check_heartbeat(c, now);
    return tf_throttle_wait_stop(d, launch_cost(d), now, &c->lifted);
}
