/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only: a discrete-event model of one GPU shared by tenants, each throttled by the real
 * token bucket (src/limits/bucket.c) and the real per-window controller
 * (src/limits/controller.c), in virtual time. The device runs one kernel at a time in
 * launch order per tenant and time-slices between tenants that have work (processor sharing:
 * with n tenants busy, each head kernel advances at 1/n, as GPU time-slicing between
 * contexts does at a fine grain); each tenant keeps up to `depth`
 * kernels in flight (a saturating app) or idles between kernels to cap its own demand.
 * The "engine" samples every period_ns, like the hypervisor would through NVML.
 */
#ifndef TF_TEST_PLANT_H
#define TF_TEST_PLANT_H

#include "limits/controller.h"
#include "tf/bucket.h"

#include <stdbool.h>
#include <stdint.h>

#define PLANT_MAX_TENANTS 4
#define PLANT_MAX_QUEUE 64

struct plant_tenant {
    /* configuration */
    uint32_t limit_bp;
    uint64_t kernel_ns;     /* kernel duration */
    uint64_t kernel_ns_alt; /* if non-zero, every other kernel lasts this long */
    int depth;              /* max kernels in flight */
    double demand;          /* 1.0 = saturating; < 1: idles so its own demand is this share */
    bool active;
    /* pricing: 0 = the engine's launch_cost for every launch (no cost model); > 0 = each
     * launch's own duration times this bias (a launcher's measurement, e.g. 3.0 for event
     * times three times the driver's accounting), times the engine's cost_scale */
    double measured_bias;
    /* state */
    struct tf_bucket bucket;
    struct tf_bucket_limit bucket_limit;
    struct tf_limit_ctl ctl;
    uint64_t launch_cost;
    uint32_t cost_scale;
    int inflight;
    /* the tenant's queue on the device: durations, head first */
    uint64_t q[PLANT_MAX_QUEUE];
    int q_head, q_len;
    uint64_t head_left; /* remaining ns of the head kernel */
    uint64_t next_try;
    uint64_t nlaunch;
    uint64_t throttles; /* launches that had to wait for tokens */
    /* window accounting (engine) */
    uint64_t win_busy, win_launches;
    int64_t win_charged;
    bool win_throttled;
    /* report accounting (1 s windows chosen by the test) */
    uint64_t rep_busy;
    uint64_t total_busy;
};

struct plant {
    uint64_t now, period_ns, next_tick;
    int ntenants;
    struct plant_tenant t[PLANT_MAX_TENANTS];
    bool true_up;    /* apply the controller's debit to the bucket (the engine does) */
    double quantize; /* if > 0: measured share rounded to this (NVML reports whole %) */
};

void plant_init(struct plant *p, uint64_t period_ns);
/* Adds a tenant; returns its index. */
int plant_add(struct plant *p, uint32_t limit_bp, uint64_t kernel_ns, int depth, double demand);
/* Runs until virtual time END_NS. */
void plant_run(struct plant *p, uint64_t end_ns);
/* Share of tenant I since the last call (report window), then resets the window. */
double plant_take_share(struct plant *p, int i, uint64_t window_ns);

#endif
