/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only discrete-event plant for the compute controller (see plant.h).
 */
#include "plant.h"

#include "limits/bucket.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_SLEEP_NS 50000u
#define MAX_SLEEP_NS 10000000u

/* --- the cost model's view of the plant: streams are tenants (index + 1), events complete
 * when the tenant's queue reaches them ------------------------------------------------------ */

static struct plant *cur; /* the plant being run (now_ns has no context argument) */

static int v_ctx(void *u, uintptr_t *ctx)
{
    (void)u;
    *ctx = 1;
    return 0;
}

static int v_create(void *u, uintptr_t *ev)
{
    struct plant *p = u;
    if (p->nev + 1 >= PLANT_MAX_EVENTS)
        return TF_GPU_FAILED;
    *ev = (uintptr_t)++p->nev;
    return 0;
}

static void v_destroy(void *u, uintptr_t ev)
{
    (void)u;
    (void)ev;
}

static int v_record(void *u, uintptr_t ev, uintptr_t stream, int ptsz)
{
    struct plant *p = u;
    (void)ptsz;
    struct plant_tenant *t = &p->t[stream - 1];
    p->ev_done[ev] = false;
    p->ev_bias[ev] = t->measured_bias > 0 ? t->measured_bias : 1.0;
    if (t->q_len == 0) { /* an idle stream reaches it at once */
        p->ev_t[ev] = p->now;
        p->ev_done[ev] = true;
        return 0;
    }
    int *slot = t->q_ev[(t->q_head + t->q_len - 1) % PLANT_MAX_QUEUE];
    slot[slot[0] ? 1 : 0] = (int)ev; /* completes with the last kernel queued */
    return 0;
}

static int v_query(void *u, uintptr_t ev)
{
    struct plant *p = u;
    return p->ev_done[ev] ? 0 : TF_GPU_PENDING;
}

static int v_elapsed(void *u, uintptr_t a, uintptr_t b, uint64_t *ns)
{
    struct plant *p = u;
    if (!p->ev_done[a] || !p->ev_done[b])
        return TF_GPU_FAILED;
    *ns = (uint64_t)((double)(p->ev_t[b] - p->ev_t[a]) * p->ev_bias[b]);
    return 0;
}

static uint64_t v_now(void)
{
    return cur->now;
}

static void plant_step(struct plant *p, uint64_t end_ns);

/* The launcher naps (the cost model's cold wait): the device, the engine and the other
 * tenants go on meanwhile. */
static void v_nap(uint64_t ns)
{
    uint64_t end = cur->now + ns;
    while (cur->now < end)
        plant_step(cur, end);
}

void plant_init(struct plant *p, uint64_t period_ns)
{
    memset(p, 0, sizeof(*p));
    p->period_ns = period_ns;
    p->next_tick = period_ns;
    p->now = 1; /* the bucket treats last_ns == 0 as "not started" */
    struct tf_gpu_timer t = {
        .u = p,
        .ctx_current = v_ctx,
        .event_create = v_create,
        .event_destroy = v_destroy,
        .record = v_record,
        .query = v_query,
        .elapsed_ns = v_elapsed,
        .now_ns = v_now,
        .nap = v_nap,
    };
    tf_costmodel_init(&p->cm, &t);
}

int plant_add(struct plant *p, uint32_t limit_bp, uint64_t kernel_ns, int depth, double demand)
{
    int i = p->ntenants++;
    struct plant_tenant *t = &p->t[i];
    memset(t, 0, sizeof(*t));
    t->limit_bp = limit_bp;
    t->kernel_ns = kernel_ns;
    t->depth = depth;
    t->demand = demand;
    t->active = true;
    tf_limit_ctl_init(&t->ctl, NULL);
    t->launch_cost = TF_LIMIT_COST_DEFAULT_NS;
    uint64_t rate = (uint64_t)limit_bp * 100000u;
    tf_bucket_init(&t->bucket, &t->bucket_limit, rate, (int64_t)(rate / 50), p->now);
    tf_bucket_mark(&t->bucket, &t->mark);
    t->next_try = p->now;
    return i;
}

static void credit(struct plant_tenant *t, uint64_t ns)
{
    t->win_busy += ns;
    t->rep_busy += ns;
    t->total_busy += ns;
}

static uint64_t clamp_sleep(uint64_t w)
{
    return w < MIN_SLEEP_NS ? MIN_SLEEP_NS : w > MAX_SLEEP_NS ? MAX_SLEEP_NS : w;
}

/* Prices tenant I's next launch into t->pend_price (the cost model may nap meanwhile). */
static void price_launch(struct plant *p, int i, uint64_t dur)
{
    struct plant_tenant *t = &p->t[i];
    t->pend_l.correction = 0;
    t->pend_l.borrow = 0;
    t->pend_l.sample = false;
    t->pend_l.slot = -1;
    if (t->cost_model) {
        uint64_t key = tf_cost_key((uintptr_t)(i + 1) << 12, 32, 0, false);
        t->pend_price = tf_cost_price(&p->cm, &t->cth, &t->pend_l, key, t->launch_cost,
                                      t->cost_scale, &t->bucket, &t->bucket_limit);
        if (t->pend_l.correction)
            tf_bucket_adjust(&t->bucket, &t->bucket_limit, -t->pend_l.correction);
        return;
    }
    int64_t price = (int64_t)t->launch_cost;
    if (t->measured_bias > 0) {
        double sc = t->cost_scale ? t->cost_scale / 65536.0 : 1.0;
        price = (int64_t)((double)dur * t->measured_bias * sc);
    }
    t->pend_price = price;
}

static void tenant_try(struct plant *p, int i)
{
    struct plant_tenant *t = &p->t[i];
    if (t->in_try)
        return; /* napping in its cost model */
    t->in_try = true;
    while (t->active && t->inflight < t->depth && t->next_try <= p->now && !t->syncing &&
           t->q_len < PLANT_MAX_QUEUE) {
        uint64_t dur = (t->kernel_ns_alt && (t->nlaunch & 1)) ? t->kernel_ns_alt : t->kernel_ns;
        if (!t->pending) {
            price_launch(p, i, dur);
            t->pending = true;
            if (t->pend_l.sample) /* as the limiter does */
                tf_bucket_refill(&t->bucket, &t->bucket_limit, p->now);
        }
        uint64_t w = t->pend_l.borrow > 0 &&
                             tf_bucket_try_borrow(&t->bucket, t->pend_price, t->pend_l.borrow)
                         ? 0
                         : tf_bucket_take(&t->bucket, &t->bucket_limit, t->pend_price, p->now);
        t->pend_l.borrow = 0; /* once */
        if (w) {
            t->next_try = p->now + clamp_sleep(w);
            if (!t->waiting) {
                t->waiting = true;
                t->wait_since = p->now;
                t->throttles++;
            }
            break;
        }
        if (t->waiting) { /* the limiter counts a throttle when its wait ends */
            t->waiting = false;
            t->win_throttled = true;
            t->waited_ns += p->now - t->wait_since;
        }
        t->pending = false;
        if (t->cost_model && t->pend_l.sample)
            tf_cost_sample_begin(&p->cm, &t->cth, &t->pend_l, (uintptr_t)i + 1, 0);
        int tail = (t->q_head + t->q_len) % PLANT_MAX_QUEUE;
        if (t->q_len == 0)
            t->head_left = dur;
        t->q[tail] = dur;
        t->q_ev[tail][0] = t->q_ev[tail][1] = 0;
        t->q_len++;
        if (t->pend_l.slot >= 0)
            tf_cost_sample_end(&p->cm, &t->cth, &t->pend_l, (uintptr_t)i + 1, 0, true);
        t->inflight++;
        t->nlaunch++;
        t->win_launches++;
        if (t->demand < 1.0)
            t->next_try = UINT64_MAX; /* a demand-limited app waits for each kernel */
        if (t->burst > 0 && ++t->burst_n >= t->burst) {
            t->burst_n = 0;
            t->syncing = true; /* waits for the burst, then idles */
        }
    }
    t->in_try = false;
}

static void engine_tick(struct plant *p)
{
    for (int i = 0; i < p->ntenants; i++) {
        struct plant_tenant *t = &p->t[i];
        tf_bucket_refill(&t->bucket, &t->bucket_limit, p->now); /* as the engine does */
        int64_t charged = tf_bucket_consumed(&t->bucket, &t->mark, t->adjusted);
        t->adjusted = 0;
        double share = (double)t->win_busy / (double)p->period_ns;
        if (p->quantize > 0)
            share = floor(share / p->quantize + 0.5) * p->quantize;
        struct tf_limit_in in = {
            .limit_bp = t->limit_bp,
            .window_ns = p->period_ns,
            .busy_ns = (uint64_t)(share * (double)p->period_ns),
            .launches = t->win_launches,
            .charged = charged,
            .sampled = t->win_busy > 0,
            .scale = t->cost_scale,
            .throttled = t->win_throttled,
            .tokens = atomic_load(&t->bucket.tokens),
        };
        struct tf_limit_out out;
        tf_limit_ctl_step(&t->ctl, &in, &out);
        if (getenv("PLANT_TRACE"))
            fprintf(stderr,
                    "T%d t=%.1f busy=%.1f n=%llu chg=%.1f thr=%d tok=%.1f debit=%.1f rate=%u "
                    "cap=%.1f cost=%.2f scale=%.3f shf=%.3f integ=%.3f\n",
                    i, p->now / 1e6, in.busy_ns / 1e6, (unsigned long long)in.launches,
                    in.charged / 1e6, in.throttled, in.tokens / 1e6, out.debit / 1e6, out.rate_bp,
                    out.capacity / 1e6, out.launch_cost / 1e6, out.cost_scale / 65536.0,
                    t->ctl.share_f, t->ctl.pi.integ);
        tf_bucket_set(&t->bucket_limit, out.rate, out.capacity);
        if (p->true_up)
            t->adjusted +=
                tf_bucket_apply(&t->bucket, &t->bucket_limit, -out.debit, out.refund_ceiling);
        t->launch_cost = out.launch_cost;
        t->cost_scale = out.cost_scale;
        t->win_busy = 0;
        t->win_launches = 0;
        t->win_throttled = false;
    }
}

/* Kernel Q of tenant T completed (or started, ...): the events queued behind it complete. */
static void complete_events(struct plant *p, int *ev)
{
    for (int k = 0; k < 2; k++) {
        if (ev[k]) {
            p->ev_t[ev[k]] = p->now;
            p->ev_done[ev[k]] = true;
            ev[k] = 0;
        }
    }
}

void plant_run(struct plant *p, uint64_t end_ns)
{
    cur = p;
    while (p->now < end_ns)
        plant_step(p, end_ns);
}

/* Advances P to its next event (at most END_NS). */
static void plant_step(struct plant *p, uint64_t end_ns)
{
    {
        for (int i = 0; i < p->ntenants; i++)
            tenant_try(p, i);
        if (p->now >= end_ns)
            return; /* a launcher napped past it */
        int nbusy = 0;
        uint64_t min_left = UINT64_MAX;
        for (int i = 0; i < p->ntenants; i++) {
            if (p->t[i].q_len) {
                nbusy++;
                if (p->t[i].head_left < min_left)
                    min_left = p->t[i].head_left;
            }
        }
        /* Next event: a completion, an engine tick, a tenant retry, or the end. */
        uint64_t next = end_ns;
        if (nbusy && p->now + min_left * (uint64_t)nbusy < next)
            next = p->now + min_left * (uint64_t)nbusy;
        if (p->next_tick < next)
            next = p->next_tick;
        for (int i = 0; i < p->ntenants; i++) {
            struct plant_tenant *t = &p->t[i];
            if (t->active && t->inflight < t->depth && t->next_try > p->now && t->next_try < next)
                next = t->next_try;
        }
        if (next <= p->now)
            next = p->now + 1;
        uint64_t dt = next - p->now;
        p->now = next;
        if (nbusy) {
            uint64_t each = dt / (uint64_t)nbusy;
            if (each == 0)
                each = 1;
            for (int i = 0; i < p->ntenants; i++) {
                struct plant_tenant *t = &p->t[i];
                if (!t->q_len)
                    continue;
                uint64_t run = each < t->head_left ? each : t->head_left;
                credit(t, run);
                t->head_left -= run;
                if (t->head_left == 0) {
                    uint64_t dur = t->q[t->q_head];
                    complete_events(p, t->q_ev[t->q_head]);
                    t->q_head = (t->q_head + 1) % PLANT_MAX_QUEUE;
                    t->q_len--;
                    t->inflight--;
                    if (t->q_len)
                        t->head_left = t->q[t->q_head];
                    if (t->demand < 1.0)
                        t->next_try = p->now + (uint64_t)((double)dur * (1.0 / t->demand - 1.0));
                    if (t->syncing && t->q_len == 0) {
                        t->syncing = false;
                        t->next_try = p->now + t->gap_ns;
                    }
                }
            }
        }
        if (p->now >= p->next_tick) {
            engine_tick(p);
            p->next_tick += p->period_ns;
        }
    }
}

double plant_take_share(struct plant *p, int i, uint64_t window_ns)
{
    double s = (double)p->t[i].rep_busy / (double)window_ns;
    p->t[i].rep_busy = 0;
    return s;
}
