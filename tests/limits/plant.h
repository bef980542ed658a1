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
 *
 * A tenant may be priced by the real launch cost model (src/limits/costmodel.h) on a
 * scripted view of this device: timing events complete when the tenant's queue reaches them,
 * the first launch of its kernel is charged the engine's average and measured, the next one
 * naps (as the launcher's cold wait does) until that measurement is in. A launch that finds
 * the bucket short keeps its price and retries after a nap; the window is marked throttled
 * when such a wait ends, as the limiter's throttle counter is. PLANT_TRACE=1 in the
 * environment prints every engine step (stderr).
 */
#ifndef TF_TEST_PLANT_H
#define TF_TEST_PLANT_H

#include "limits/bucket.h"
#include "limits/controller.h"
#include "limits/costmodel.h"
#include "tf/bucket.h"

#include <stdbool.h>
#include <stdint.h>

#define PLANT_MAX_TENANTS 4
#define PLANT_MAX_QUEUE 64
#define PLANT_MAX_EVENTS 80

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
    bool cost_model; /* priced by the launch cost model (measurements times measured_bias,
                      * 1.0 if unset), cold start included */
    int burst;       /* > 0: after this many launches, wait for them to complete ... */
    uint64_t gap_ns; /* ... then stay idle this long (an inference server's requests) */
    /* state */
    struct tf_bucket bucket;
    struct tf_bucket_limit bucket_limit;
    struct tf_limit_ctl ctl;
    uint64_t launch_cost;
    uint32_t cost_scale;
    int inflight;
    /* the tenant's queue on the device: durations, head first */
    uint64_t q[PLANT_MAX_QUEUE];
    int q_ev[PLANT_MAX_QUEUE][2]; /* events that complete with each queued kernel (0: none) */
    int q_head, q_len;
    uint64_t head_left; /* remaining ns of the head kernel */
    uint64_t next_try;
    uint64_t nlaunch;
    uint64_t throttles; /* launches that had to wait for tokens */
    uint64_t waited_ns; /* time they waited */
    /* the launch being made (priced, waiting for tokens) */
    bool pending, waiting;
    int64_t pend_price;
    uint64_t wait_since;
    struct tf_cost_launch pend_l;
    struct tf_cost_thread cth;
    bool in_try; /* in tenant_try (its cost model may nap: the plant runs on meanwhile) */
    int burst_n;
    bool syncing;
    /* window accounting (engine) */
    uint64_t win_busy, win_launches;
    struct tf_bucket_mark mark; /* the bucket at the last tick (what launches took since) */
    int64_t adjusted;           /* the engine's own changes to it since */
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
    /* the cost model's view of the device (tenants with cost_model) */
    struct tf_costmodel cm;
    uint64_t ev_t[PLANT_MAX_EVENTS];
    double ev_bias[PLANT_MAX_EVENTS];
    bool ev_done[PLANT_MAX_EVENTS];
    int nev;
};

void plant_init(struct plant *p, uint64_t period_ns);
/* Adds a tenant; returns its index. */
int plant_add(struct plant *p, uint32_t limit_bp, uint64_t kernel_ns, int depth, double demand);
/* Runs until virtual time END_NS. */
void plant_run(struct plant *p, uint64_t end_ns);
/* Share of tenant I since the last call (report window), then resets the window. */
double plant_take_share(struct plant *p, int i, uint64_t window_ns);

#endif
