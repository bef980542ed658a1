/* SPDX-License-Identifier: Apache-2.0
 *
 * The compute-share feedback controller of the limit engine. Pure (no clock, no I/O), so it
 * is tested against simulated plants in plain C. Not thread-safe: one controller per
 * (workload, device), driven by one thread.
 *
 * Two layers:
 * - tf_ctl: a PI(D) loop with feed-forward. Because the per-window true-up below makes
 *   tokens equal GPU time, the feed-forward alone is right in steady state; the PI part is
 *   deliberately gentle and only removes residual bias (measurement, queueing). Output u (the
 * bucket rate as a fraction of a device, 1.0 = a whole GPU) = limit + Kp*e + I - Kd*d(measured)/dt,
 * where e = limit - measured share. Stability guards: a deadband on e; output clamped to
 * [min_out_ratio * limit, min(max_out_ratio * limit, max_out)]; each step may move u by at most
 * max_step * max(limit, 5 %), except that a limit change rescales u and I by new/old at once
 *   (bumpless: the autoscaler's step is not slowed down); anti-windup by clamping I to the
 *   output range, a faster integral while over the limit, and by conditional
 *   integration (no integration towards a saturated output, and no upward integration
 *   while the workload was not throttled: then its own demand, not the bucket, set its
 *   share, and a positive I only bleeds away).
 * - tf_limit_ctl: what the engine runs per window. Launchers price each launch by its own
 *   measured GPU time (src/limits/costmodel.h); the engine calibrates those measurements
 *   against the driver's accounting of the workload's GPU time (cost_scale: the ratio of GPU
 *   time to tokens charged at scale 1, over the last seconds, taken only from windows where
 *   the driver's whole-percent samples resolve the workload, moving over about twenty kernel
 *   lengths for long kernels), and keeps the average GPU cost of a launch (the prior for
 *   launches not measured yet) and the workload's kernel length (that average, or what the
 *   launchers measured if more: their charges per launch are known when the launches are
 *   issued, before any of their GPU time is). It smooths the measured share with a time
 *   constant of a few kernel lengths (a 100 ms window of 100 ms kernels reads 0 % or 100 %)
 *   and turns the PI output into bucket parameters (rate = u * 1e9 device-ns/s, capacity =
 *   rate * burst, the burst 20..500 ms: four kernels, so a workload of long kernels under
 *   its cap is not held between two of them; and at least 20 ms of GPU time, so a burst of
 *   short kernels after an idle gap is not held either, while a fresh bucket lets at most
 *   2 % of a second through above the rate). The charge is up-front: each window the
 *   difference between the GPU time the workload really used and what its launches were
 *   charged is debited from the bucket at once, or, where they were charged more than
 *   that, refunded beyond what may still be in flight (the window's charges and one kernel
 *   more), so over time tokens equal GPU time and a wrong estimate costs accuracy only
 *   within a window. Where the driver sees nothing of a workload that launched (its usage
 *   below the samples' resolution, or its processes not found), the launchers'
 *   measurements stand in for it.
 */
#ifndef TF_LIMITS_CONTROLLER_H
#define TF_LIMITS_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

struct tf_ctl_params {
    double kp;            /* proportional gain */
    double ki;            /* integral gain, 1/s */
    double kd;            /* derivative gain on the measurement, s (0 = PI) */
    double deadband;      /* |limit - measured| below this (share fraction) counts as 0 */
    double max_step;      /* per-step output change bound, as a fraction of max(limit, 5 %) */
    double min_out_ratio; /* output floor, as a fraction of the limit */
    double max_out_ratio; /* output ceiling, as a multiple of the limit */
    double max_out;       /* absolute output ceiling (devices) */
    double bleed;         /* factor applied to a positive I per unthrottled step (0..1) */
    double ki_over;       /* integral gain multiplier while over the limit (>= 1): running
                           * over a cap is a violation, under it merely conservative */
};

/* Defaults tuned on the simulated plants of tests/limits/test_controller.c. */
void tf_ctl_default_params(struct tf_ctl_params *p);

struct tf_ctl {
    struct tf_ctl_params p;
    double integ;     /* integral term, in output units */
    double out;       /* last output */
    double prev_meas; /* last measurement (derivative) */
    double limit;     /* limit of the last step (a limit change rescales I and u) */
    double dfilt;     /* filtered derivative */
    bool started;
};

struct tf_ctl_sample {
    double limit;    /* target share, 0..1 */
    double measured; /* achieved share over the window, 0..1 */
    double dt;       /* window length, seconds (> 0) */
    bool throttled;  /* launches waited for tokens during the window */
    double gain;     /* 0..1 scale on Kp and Ki for noisy measurements (0 = 1.0) */
    bool transient;  /* the error is being corrected elsewhere: do not integrate it */
    bool invalid;    /* no usable measurement (e.g. launches but no GPU time attributed):
                      * hold the integrator and the output */
};

void tf_ctl_init(struct tf_ctl *c, const struct tf_ctl_params *p);
/* One control step; returns the new output (bucket rate as a fraction of a device). */
double tf_ctl_update(struct tf_ctl *c, const struct tf_ctl_sample *s);

/* --- per-window engine step -------------------------------------------------------------- */

#define TF_LIMIT_COST_DEFAULT_NS 500000u /* until measured: 500 us per launch */
#define TF_LIMIT_COST_MIN_NS 1000u
#define TF_LIMIT_COST_MAX_NS 2000000000u
#define TF_LIMIT_BURST_MIN_MS 20       /* bucket capacity in ms of rate, at least ... */
#define TF_LIMIT_BURST_MAX_MS 500      /* ... and at most; 4 average kernels in between */
#define TF_LIMIT_BURST_MIN_NS 20000000 /* and never under 20 ms of GPU time */
#define TF_LIMIT_SCALE_MIN (1.0 / 64)
#define TF_LIMIT_SCALE_MAX 64.0

struct tf_limit_ctl {
    struct tf_ctl pi;
    double cost_ns;    /* smoothed GPU ns per launch (the prior for unmeasured launches) */
    double len_ns;     /* the workload's kernel length: cost_ns, or what its launchers
                        * measured if more (times the true-up, share filter and bucket) */
    double scale;      /* calibration of the launchers' measured costs (cost_scale) */
    uint32_t burst_ms; /* bucket capacity in ms of rate */
    /* cost estimator: decaying sums of GPU ns, launches, tokens charged at scale 1 */
    double sum_busy, sum_launches, sum_raw;
    /* calibration: decaying sums of GPU ns and of the tokens charged at scale 1 */
    double cal_busy, cal_raw;
    /* true-up: GPU time used minus tokens charged, not yet debited or refunded (negative:
     * work in flight, or an over-charge) */
    double resid;
    uint32_t blind;  /* consecutive windows with launches but no GPU time attributed */
    uint32_t dark;   /* the same, charged a resolvable share (seen by the driver or not) */
    double dark_chg; /* what the first of them was charged (work in flight, or not) */
    uint32_t active; /* windows with launches so far (saturating) */
    /* share filter: windows much shorter than a kernel see 0 % or 100 %, so the share fed
     * to the PI is smoothed with a time constant of a few kernel lengths */
    double share_f;
    bool share_started;
};

struct tf_limit_in {
    uint32_t limit_bp;  /* compute limit, 1..10000 */
    uint64_t window_ns; /* length of the window measured */
    uint64_t busy_ns;   /* GPU ns the workload used in the window (the driver's accounting) */
    uint64_t launches;  /* launches the workload made in the window */
    int64_t charged;    /* tokens its launches took from the bucket in the window */
    uint32_t scale;     /* cost_scale in force during the window (TF_COST_SCALE_ONE = 1.0; 0 =
                         * 1.0) */
    bool throttled;     /* any launch waited in the window */
    int64_t tokens;     /* the bucket's tokens now, before this step's debit */
    bool sampled;       /* the usage source saw the workload run (even at 0 % after rounding) */
};

/* After this many consecutive windows with launches whose measured cost is visible at the
 * driver's resolution but no GPU time attributed to the workload, tf_limit_ctl_blind says
 * so (the engine logs it: HAMi silently stopped enforcing when its PID discovery failed; here
 * the launchers' own measurements keep the loop closed and someone is told). */
#define TF_LIMIT_BLIND_WINDOWS 10

struct tf_limit_out {
    uint64_t rate;          /* bucket tokens (device-ns) per second */
    int64_t capacity;       /* bucket capacity, tokens */
    uint64_t launch_cost;   /* tokens to charge per launch not measured by its launcher */
    uint32_t cost_scale;    /* calibration for the launchers' measured costs, fixed point */
    uint32_t share_bp;      /* measured share, bp */
    uint32_t rate_bp;       /* rate as bp of a device */
    int64_t debit;          /* tokens to take from the bucket now (tf_bucket_apply(-debit)):
                             * measured busy ns minus what the window's launches were charged;
                             * negative = refund of an over-estimate */
    int64_t refund_ceiling; /* a refund may fill the bucket up to this (above the capacity:
                             * short kernels, whose over-charge is not GPU time still to come
                             * but a wrong estimate, are refunded a whole window of rate) */
};

/* P may be NULL (defaults). */
void tf_limit_ctl_init(struct tf_limit_ctl *c, const struct tf_ctl_params *p);
void tf_limit_ctl_step(struct tf_limit_ctl *c, const struct tf_limit_in *in,
                       struct tf_limit_out *out);
/* True while the last TF_LIMIT_BLIND_WINDOWS windows had launches but no measured GPU time. */
bool tf_limit_ctl_blind(const struct tf_limit_ctl *c);

#endif
