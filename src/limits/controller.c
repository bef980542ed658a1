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
    double dt = s->dt > 0 && isfinite(s->dt) ? s->dt : 0.1;
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

#define TAU_MIN_NS 0.0
#define TAU_MAX_NS 1e9

void tf_limit_ctl_init(struct tf_limit_ctl *c, const struct tf_ctl_params *p)
{
    memset(c, 0, sizeof(*c));
    tf_ctl_init(&c->pi, p);
    c->cost_ns = TF_LIMIT_COST_DEFAULT_NS;
    c->charged_cost = TF_LIMIT_COST_DEFAULT_NS;
    c->cost_alpha = 0.5;
    c->burst_ms = 20;
}

void tf_limit_ctl_step(struct tf_limit_ctl *c, const struct tf_limit_in *in,
                       struct tf_limit_out *out)
{
    uint32_t bp = in->limit_bp < 1 ? 1 : in->limit_bp > 10000 ? 10000 : in->limit_bp;
    double window = in->window_ns ? (double)in->window_ns : 1.0;
    double share = (double)in->busy_ns / window;
    /* True-up: the window's launches were charged charged_cost each; the GPU says what they
     * (and earlier launches still running) really used. */
    double charged = (double)in->launches * (double)c->charged_cost;
    double debit = (double)in->busy_ns - charged;
    if (debit > 4e18)
        debit = 4e18;
    if (debit < -4e18)
        debit = -4e18;
    out->debit = (int64_t)debit;
    /* Cost per launch, from enough launches (or a long enough time) to mean something. */
    c->acc_busy += in->busy_ns;
    c->acc_launches += in->launches;
    c->acc_ns += in->window_ns;
    if (c->acc_launches >= 8 || (c->acc_launches >= 1 && c->acc_ns >= 1000000000u)) {
        if (c->acc_busy > 0) {
            double m = (double)c->acc_busy / (double)c->acc_launches;
            m = clampd(m, TF_LIMIT_COST_MIN_NS, TF_LIMIT_COST_MAX_NS);
            c->cost_ns = c->cost_alpha * m + (1.0 - c->cost_alpha) * c->cost_ns;
        }
        c->acc_busy = c->acc_launches = c->acc_ns = 0;
    } else if (c->acc_ns >= 4000000000u) {
        c->acc_busy = c->acc_launches = c->acc_ns = 0; /* idle: start over */
    }
    /* Share filter: windows much shorter than a kernel see 0 % or 100 %, so the share is
     * averaged over ~3 kernel lengths (none for short kernels). */
    double tau = 3.0 * c->cost_ns;
    if (tau < TAU_MIN_NS)
        tau = TAU_MIN_NS;
    if (tau > TAU_MAX_NS)
        tau = TAU_MAX_NS;
    double a = window / (window + tau);
    if (!c->share_started) {
        c->share_f = share;
        c->share_started = true;
    } else if (!(in->launches > 0 && in->busy_ns == 0)) {
        c->share_f = a * share + (1.0 - a) * c->share_f;
    }
    bool invalid = in->launches > 0 && in->busy_ns == 0;
    c->blind = invalid ? c->blind + 1 : 0;
    struct tf_ctl_sample s = {
        .limit = bp / 10000.0,
        .measured = c->share_f,
        .dt = window / 1e9,
        .throttled = in->throttled,
        .invalid = invalid,
        /* While the true-up is still correcting a wrong estimate (a large debit or refund),
         * or the bucket is repaying a debt, the share error is a transient the tokens
         * already account for: the PI holds its integrator rather than correct it twice. */
        .transient = fabs(debit) > 0.1 * (double)in->busy_ns + 0.001 * window ||
                     in->tokens - (int64_t)debit < 0,
    };
    double u = tf_ctl_update(&c->pi, &s);
    double rate = u * (double)TF_BUCKET_NS_PER_S;
    out->rate = rate < 1 ? 1 : (uint64_t)rate;
    double cap = rate * c->burst_ms / 1000.0;
    out->capacity = cap < 1 ? 1 : (int64_t)cap;
    out->launch_cost = (uint64_t)c->cost_ns;
    c->charged_cost = out->launch_cost;
    double sb = share * 10000.0 + 0.5;
    out->share_bp = sb > 40000 ? 40000 : (uint32_t)sb;
    double rb = u * 10000.0 + 0.5;
    out->rate_bp = rb > 40000 ? 40000 : (uint32_t)rb;
}

bool tf_limit_ctl_blind(const struct tf_limit_ctl *c)
{
    return c->blind >= TF_LIMIT_BLIND_WINDOWS;
}
