/* SPDX-License-Identifier: Apache-2.0
 *
 * Compute-share feedback controller: PI(D) with feed-forward, clamps and anti-windup, plus
 * the per-window launch-cost estimator (see controller.h).
 */
#include "limits/controller.h"

#include "limits/bucket.h"

#include <math.h>
#include <string.h>

void tf_ctl_default_params(struct tf_ctl_params *p)
{
    p->kp = 0.05;
    p->ki = 0.3;
    p->kd = 0.0;
    p->deadband = 0.003;
    p->max_step = 0.25;
    p->min_out_ratio = 0.1;
    p->max_out_ratio = 4.0;
    p->max_out = 4.0;
    p->bleed = 0.8;
    p->ki_over = 1.5;
}

void tf_ctl_init(struct tf_ctl *c, const struct tf_ctl_params *p)
{
    memset(c, 0, sizeof(*c));
    if (p)
        c->p = *p;
    else
        tf_ctl_default_params(&c->p);
}

static double clampd(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

double tf_ctl_update(struct tf_ctl *c, const struct tf_ctl_sample *s)
{
    const struct tf_ctl_params *p = &c->p;
    double limit = clampd(s->limit, 0.0001, 1.0);
    double meas = isfinite(s->measured) ? clampd(s->measured, 0.0, 4.0) : limit;
    /* A step never integrates more than a second: a window that spans an idle device's
     * unsampled hours would otherwise wind the integrator up at once. */
    double dt = s->dt > 0 && isfinite(s->dt) ? (s->dt > 1.0 ? 1.0 : s->dt) : 0.1;
    double ff = limit;
    double lo = p->min_out_ratio * limit;
    double hi = p->max_out_ratio * limit;
    if (hi > p->max_out)
        hi = p->max_out;
    if (hi < ff)
        hi = ff;
    if (lo > ff)
        lo = ff;

    if (c->started && c->limit > 0 && limit != c->limit) {
        double k = limit / c->limit;
        c->integ *= k;
        c->out *= k;
    }
    c->limit = limit;
    if (s->invalid && c->started) {
        c->out = clampd(c->out, lo, hi);
        return c->out;
    }

    double e = limit - meas;
    if (fabs(e) < p->deadband)
        e = 0;

    double d = 0;
    if (c->started && p->kd > 0) {
        d = (meas - c->prev_meas) / dt;
        c->dfilt = 0.7 * c->dfilt + 0.3 * d;
    }
    c->prev_meas = meas;

    /* A gross overshoot means the accumulated correction is wrong (e.g. it grew while the
     * measurement was broken): drop it rather than unwind it slowly. */
    if (e < -0.5 * limit && c->integ > 0)
        c->integ = 0;

    /* Conditional integration. */
    double g = s->gain > 0 && s->gain < 1 ? s->gain : 1.0;
    double kp = p->kp * g;
    double ki = (e < 0 ? p->ki * p->ki_over : p->ki) * g;
    bool integrate = !s->transient;
    if (e > 0 && !s->throttled) {
        integrate = false; /* demand-limited: the bucket did not bind */
        if (c->integ > 0)
            c->integ *= p->bleed;
    }
    double integ = c->integ;
    if (integrate)
        integ = clampd(integ + ki * e * dt, lo - ff, hi - ff);
    double raw = ff + kp * e + integ - p->kd * c->dfilt;
    double u = clampd(raw, lo, hi);
    if (c->started) {
        double step = p->max_step * (limit > 0.05 ? limit : 0.05);
        u = clampd(u, c->out - step, c->out + step);
        u = clampd(u, lo, hi);
    }
    /* Anti-windup: when a clamp (range or rate of change) holds the output back in the
     * direction the error pushes, the integrator does not accumulate that step. */
    if (!((raw > u && e > 0) || (raw < u && e < 0)))
        c->integ = integ;
    c->integ = clampd(c->integ, lo - ff, hi - ff);
    c->out = u;
    c->started = true;
    return u;
}

#define COST_TAU_NS 1e9
#define TAU_MIN_NS 0.0
#define TAU_MAX_NS 1e9
/* The driver's per-process samples are whole percents of their span: a window is used for
 * calibration only when they show the workload (one percent or more). */
#define CAL_MIN_SHARE 0.01
/* Below this share the driver may report 0 for a workload that ran: its launchers'
 * measurements are taken instead, and it is not reported as unattributable. */
#define RESOLUTION_SHARE 0.01

void tf_limit_ctl_init(struct tf_limit_ctl *c, const struct tf_ctl_params *p)
{
    memset(c, 0, sizeof(*c));
    tf_ctl_init(&c->pi, p);
    c->cost_ns = TF_LIMIT_COST_DEFAULT_NS;
    c->len_ns = TF_LIMIT_COST_DEFAULT_NS;
    c->scale = 1.0;
    c->burst_ms = TF_LIMIT_BURST_MIN_MS;
}

void tf_limit_ctl_step(struct tf_limit_ctl *c, const struct tf_limit_in *in,
                       struct tf_limit_out *out)
{
    uint32_t bp = in->limit_bp < 1 ? 1 : in->limit_bp > 10000 ? 10000 : in->limit_bp;
    double window = in->window_ns ? (double)in->window_ns : 1.0;
    double charged = (double)in->charged;
    double busy = (double)in->busy_ns;
    double in_scale = in->scale ? (double)in->scale / 65536.0 : 1.0;
    /* The driver saw nothing of a workload that launched. Below its resolution the
     * launchers' measurements are the better figure. Above it, once, the launches may not
     * have run yet (long kernels queue, and are charged when issued); twice in a row, the
     * workload's processes were not found (blind), or its charges over-estimate what the
     * driver rounds to 0 %, and the measurements keep the loop closed meanwhile. */
    bool unseen = in->launches > 0 && in->busy_ns == 0;
    bool resolvable = charged >= RESOLUTION_SHARE * window;
    c->dark = unseen && resolvable ? c->dark + 1 : 0;
    bool stand_in = unseen && (!resolvable || c->dark >= 2);
    /* Seen running, at 0 % after rounding, while its launches were charged a resolvable
     * share: the charges over-estimate (a wrong scale would otherwise hold the workload
     * below the driver's resolution for good). Not seen at all: blind. */
    bool rounded = stand_in && in->sampled && resolvable;
    bool blind = unseen && !in->sampled && resolvable;
    /* The first window a workload launches in is measured partly: it started somewhere in
     * it, and the driver's first samples of a new process may lag. The calibration does not
     * trust it (the true-up, whose refunds wait for what is not in flight, does). */
    if (in->launches > 0 && c->active < 1000)
        c->active++;
    bool first = c->active <= 1;
    c->blind = blind ? c->blind + 1 : 0;
    /* Kernel lengths. The average cost per launch (the prior of launches not measured yet)
     * is the ratio of decaying sums of GPU time and launches (time constant COST_TAU_NS,
     * longer for long kernels): the GPU time of a window belongs to launches of earlier
     * windows when work queues up, so a per-window ratio swings wildly, while over a
     * horizon of seconds both sums describe the same kernels. Each step may move it by 2x at
     * most (8x while the first windows set it). The length of the workload's kernels (what
     * the true-up, the share filter, the calibration and the bucket are timed by) is at least
     * what its launchers measured them to take: their charges per launch, known as the
     * launches are issued, before any of their GPU time is. */
    double ctau = clampd(20.0 * c->len_ns, COST_TAU_NS, 10 * COST_TAU_NS);
    double decay = exp(-window / ctau);
    double gpu = stand_in ? (charged > 0 ? charged : 0) : busy;
    c->sum_busy = c->sum_busy * decay + gpu;
    c->sum_launches = c->sum_launches * decay + (double)in->launches;
    c->sum_raw = c->sum_raw * decay + (charged > 0 ? charged / in_scale : 0);
    if (c->sum_launches >= 2 && c->sum_busy > 0) {
        double m = c->sum_busy / c->sum_launches;
        double f = c->active <= 10 ? 8.0 : 2.0;
        m = clampd(m, c->cost_ns / f, c->cost_ns * f);
        c->cost_ns = clampd(m, TF_LIMIT_COST_MIN_NS, TF_LIMIT_COST_MAX_NS);
    }
    double measured = c->sum_launches >= 1 ? c->sum_raw / c->sum_launches : 0;
    c->len_ns = clampd(measured > c->cost_ns ? measured : c->cost_ns, TF_LIMIT_COST_MIN_NS,
                       TF_LIMIT_COST_MAX_NS);
    if (stand_in) {
        busy = gpu;
        if (c->dark == 2)
            c->resid += c->dark_chg; /* the window before was no in-flight work either */
    }
    c->dark_chg = unseen && !stand_in ? charged : 0;
    double share = busy / window;
    /* True-up: what the GPU says the launches used, minus what they were charged. A launch
     * is charged when it is issued and its GPU time shows up while it runs, so with kernels
     * not much shorter than the window the difference of one window is mostly work in
     * flight: a refund is settled over about four kernel lengths (at once for kernels of up
     * to a fortieth of the window). */
    if (!stand_in)
        c->resid = clampd(c->resid + busy - charged, -4e18, 4e18);
    double settle = 40.0 * c->len_ns <= window ? 1.0 : window / (window + 4.0 * c->len_ns);
    /* What the launches were charged beyond the GPU time seen may be work still in flight:
     * up to what they were charged in the last window and one kernel more (a kernel queued
     * behind the one running, behind other tenants' work, or issued late in the window).
     * Only an over-charge beyond that is refunded, settled like the rest; refunding work in
     * flight would let the workload run it twice. An under-charge is debited at once: work
     * in flight only ever makes the GPU time seen smaller than the charges. */
    double flight = (charged > 0 ? charged : 0) + c->len_ns * c->scale;
    double debit = c->resid > 0            ? c->resid
                   : c->resid + flight < 0 ? (c->resid + flight) * settle
                                           : 0;
    c->resid -= debit;
    out->debit = (int64_t)debit;
    /* Calibration of the launchers' measurements: GPU time per token charged at scale 1,
     * over the same horizon (long kernels are charged in one window and run in the next:
     * both count), from windows the driver resolves (either figure at 1 % of the window or
     * more, and not a workload the driver does not see), once the sums hold a few kernels
     * (the work in flight is then a small part of them); for kernels of more than a
     * twentieth of the window the scale moves towards that ratio over about twenty kernel
     * lengths (the launchers' estimates of a new kernel settle over its first measurements:
     * the scale must not correct the same error twice). */
    c->cal_busy *= decay;
    c->cal_raw *= decay;
    if (!stand_in && !first && (busy >= CAL_MIN_SHARE * window || resolvable)) {
        c->cal_busy += busy;
        c->cal_raw += charged / in_scale;
    } else if (rounded && !first) {
        c->cal_busy += 0.005 * window; /* at most what rounded down to 0 */
        c->cal_raw += charged / in_scale;
    }
    if (c->cal_raw > 0.05 * window && c->cal_raw > 4.0 * c->len_ns && c->cal_busy > 0) {
        /* Down by up to 16x per step (over-charges hold back workloads below their limit; a
         * cold start with a wrong measurement settles in a window or two), up by 2x, 4x when
         * the sums hold a well-resolved window (5 % or more): under-charges are trued up. */
        double up = c->cal_busy >= 0.05 * window ? 4.0 : 2.0;
        double k = c->cal_busy / c->cal_raw;
        k = clampd(k, c->scale / 16, c->scale * up);
        double g = window / (20.0 * c->len_ns);
        k = g >= 1.0 ? k : c->scale * pow(k / c->scale, g);
        c->scale = clampd(k, TF_LIMIT_SCALE_MIN, TF_LIMIT_SCALE_MAX);
    }
    /* Share filter: windows much shorter than a kernel see 0 % or 100 %, so the share is
     * averaged over ~3 kernel lengths (none for short kernels). */
    double tau = clampd(3.0 * c->len_ns, TAU_MIN_NS, TAU_MAX_NS);
    double a = window / (window + tau);
    if (!c->share_started) {
        c->share_f = share;
        c->share_started = true;
    } else {
        c->share_f = a * share + (1.0 - a) * c->share_f;
    }
    struct tf_ctl_sample smp = {
        .limit = bp / 10000.0,
        .measured = c->share_f,
        .dt = window / 1e9,
        .throttled = in->throttled,
        /* While the true-up is still correcting a wrong estimate (a large debit or refund),
         * or the bucket is repaying a debt, the share error is a transient the tokens
         * already account for: the PI holds its integrator rather than correct it twice. */
        .transient =
            first || fabs(debit) > 0.1 * busy + 0.001 * window || in->tokens - (int64_t)debit < 0,
    };
    double u = tf_ctl_update(&c->pi, &smp);
    double rate = u * (double)TF_BUCKET_NS_PER_S;
    out->rate = rate < 1 ? 1 : (uint64_t)rate;
    /* Burst: four kernels, 20..500 ms of the rate, so a workload of long kernels below its
     * cap is not held between two of them; at least 20 ms of GPU time. */
    double burst = clampd(4.0 * c->len_ns / 1e6, TF_LIMIT_BURST_MIN_MS, TF_LIMIT_BURST_MAX_MS);
    c->burst_ms = (uint32_t)burst;
    double cap = rate * c->burst_ms / 1000.0;
    if (cap < TF_LIMIT_BURST_MIN_NS)
        cap = TF_LIMIT_BURST_MIN_NS;
    out->capacity = (int64_t)cap;
    /* A refund beyond the capacity (a window of rate) is for a workload below its limit
     * with short kernels: its over-charge was a wrong estimate, not GPU time still to come
     * (long kernels), and it may not burst above a limit it is at. */
    double ceil_ns =
        c->len_ns * 10 < window && share < 0.8 * bp / 10000.0 ? rate * window / 1e9 : 0;
    out->refund_ceiling = ceil_ns > cap ? (int64_t)ceil_ns : out->capacity;
    out->launch_cost = (uint64_t)c->cost_ns;
    double q = c->scale * 65536.0 + 0.5;
    out->cost_scale = q < 1 ? 1 : q > 4e9 ? 4000000000u : (uint32_t)q;
    double sb = share * 10000.0 + 0.5;
    out->share_bp = sb > 40000 ? 40000 : (uint32_t)sb;
    double rb = u * 10000.0 + 0.5;
    out->rate_bp = rb > 40000 ? 40000 : (uint32_t)rb;
}

bool tf_limit_ctl_blind(const struct tf_limit_ctl *c)
{
    return c->blind >= TF_LIMIT_BLIND_WINDOWS;
}
