/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker's hard compute limit: each device the worker exposes gives all of the worker's
 * clients together at most the limit's share of its GPU time. The hypervisor runs one worker
 * per hard workload, so this is the workload's share, as soft isolation's limit is. Two
 * sources of the limit, one charging path:
 *
 *   - --compute-percent P (tf_wcompute_start): soft isolation's machinery run inside the
 *     worker, as the limiter's standalone mode runs it inside an app: a private limit region
 *     (include/tf/shm.h; memory of this process, never a file) with one entry per exposed
 *     device at the limit, the worker process in its one PID slot, and the limit engine
 *     (src/limits/engine.h) on a thread of its own sampling the worker's per-process GPU time
 *     through NVML every 100 ms (feedback controller, per-launch cost estimate and true-up).
 *     Without NVML the limit holds open loop at the feed-forward rate (logged once).
 *   - --limits-region PATH (tf_wcompute_attach): the pod's region, which the hypervisor owns
 *     and whose buckets its engine drives (region.h); the worker runs no engine. The compute
 *     flag, bucket and cost of the device's entry are read live on every launch, so a limit
 *     the hypervisor rewrites applies to the next launch. A stale heartbeat (hypervisor gone)
 *     is handled as the limiter does: logged once, the last limits kept; the bucket still
 *     refills itself at its last rate on every take, so launches are held to that rate, never
 *     blocked for good.
 *
 * Every client launch counts in the worker's PID slot and takes its tokens from its device's
 * bucket (src/limits/bucket.h) before it is issued to the driver; an empty bucket delays the
 * issuing connection thread in bounded naps (src/limits/throttle.h). A launch costs what its
 * kernel was measured to take on the client's stream (the launch cost model,
 * src/limits/costmodel.h, the same as the soft limiter's, through this worker's driver
 * table), calibrated by the engine -- the worker's own or the hypervisor's -- against the
 * worker process's GPU time; a kernel not measured yet costs the engine's average.
 *
 * Private to the worker. Ownership: a private region, its engine and NVML handle belong to
 * the tf_wcompute; an attached region belongs to the caller (region.h) and must outlive it.
 * Threads: start/attach/lift/stop run alone (start-up, shutdown); tf_wcompute_try and
 * tf_wcompute_wait are thread-safe (every connection thread charges its launches).
 */
#ifndef TF_REMOTE_WORKER_COMPUTE_H
#define TF_REMOTE_WORKER_COMPUTE_H

#include "limits/costmodel.h"
#include "limits/shm.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tf_engine;
struct tf_engine_thread;
struct tf_nvml;
struct tf_drv;

struct tf_wcompute {
    struct tf_shm_region *r; /* NULL: no compute limit, every launch passes; else &region */
    struct tf_shm_region region;
    struct tf_shm_map own; /* a private region's mapping */
    bool attached;         /* r is the caller's (a limit region), not ours */
    int slot;              /* the worker's PID slot in r (-1: none) */
    int ndev;
    int entry[TF_SHM_MAX_DEVICES]; /* worker device -> entry of r */
    const char *path;              /* of an attached region, for log lines */
    _Atomic(bool) lifted;          /* tf_wcompute_lift was called */
    _Atomic(int) stale;            /* an attached region's heartbeat was seen stale */
    struct tf_nvml *nv;            /* NULL: open loop */
    struct tf_engine *e;
    struct tf_engine_thread *th;
    struct tf_costmodel *cm; /* launch costs (NULL: no compute limit, or no memory: priors) */
};

/* One client launch on its way to the driver (the caller's stack). */
struct tf_wlaunch {
    int dev;          /* worker device */
    uintptr_t func;   /* the CUfunction */
    uint64_t threads; /* threads in all (the size class of its estimate) */
    uintptr_t stream; /* the CUstream it is issued on */
    int64_t cost;     /* tokens it takes (set by tf_wcompute_try) */
    struct tf_cost_launch cl;
};

/* One exposed device: its UUID (the NVML key) and physical memory. */
struct tf_wcompute_dev {
    uint8_t uuid[16];
    uint64_t mem_total;
};

/* Sets C up for NDEV (<= TF_SHM_MAX_DEVICES) devices at BP basis points (1..9999; 0 or
 * 10000: no limit, C stays inert), measuring through "libnvidia-ml.so.1" found on the
 * library path, and launches through DRV (kept: it must outlive C). 0, or TF_ENOMEM /
 * TF_EINVAL with a message in ERR. */
int tf_wcompute_start(struct tf_wcompute *c, const struct tf_drv *drv, uint32_t bp,
                      const struct tf_wcompute_dev *devs, int ndev, char *err, size_t errlen);
/* Sets C up on the limit region R that someone else owns and feeds (the hypervisor): worker
 * device i (0 <= i < NDEV <= TF_SHM_MAX_DEVICES) charges entry ENTRY[i], launches count in
 * PID slot SLOT. PATH (kept, not copied) names R in log lines. No thread is started. */
void tf_wcompute_attach(struct tf_wcompute *c, const struct tf_drv *drv,
                        const struct tf_shm_region *r, int slot, const int *entry, int ndev,
                        const char *path);
/* Lifts the limit for this worker: launches waiting for tokens go at once, later ones pass
 * (shutdown: the connection threads must not be held back). An attached region is not
 * changed. */
void tf_wcompute_lift(struct tf_wcompute *c);
/* Stops the engine thread and frees what C owns (C may be zeroed or never started). */
void tf_wcompute_stop(struct tf_wcompute *c);

/* Counts launch L (its fields up to stream filled) on worker device L->dev, prices it (TH:
 * the calling connection's cost-model state; may wait, bounded, for the first measurement
 * of a kernel) and takes its tokens if they are there. False: the tokens are short and the
 * caller must call tf_wcompute_wait before issuing the launch. */
bool tf_wcompute_try(struct tf_wcompute *c, struct tf_cost_thread *th, struct tf_wlaunch *l);
/* Sleeps (bounded naps, no spin) until L's tokens are taken, the limit is lifted in the
 * region or by tf_wcompute_lift. Returns the ns waited. */
uint64_t tf_wcompute_wait(struct tf_wcompute *c, struct tf_wlaunch *l);
/* Right before issuing L to the driver, and right after (OK: the driver accepted it): the
 * measurement of the launch, when the cost model asked for one. */
void tf_wcompute_issue(struct tf_wcompute *c, struct tf_cost_thread *th, struct tf_wlaunch *l);
void tf_wcompute_issued(struct tf_wcompute *c, struct tf_cost_thread *th, struct tf_wlaunch *l,
                        bool ok);
/* A client context the worker created was destroyed: the cost model's events on it went with
 * it. */
void tf_wcompute_ctx_gone(struct tf_wcompute *c, uintptr_t ctx);

#endif
