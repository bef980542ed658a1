/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only discrete-event plant for the compute controller (see plant.h).
 */
#include "plant.h"

#include "limits/bucket.h"

#include <math.h>
#include <string.h>

#define MIN_SLEEP_NS 50000u
#define MAX_SLEEP_NS 10000000u

void plant_init(struct plant *p, uint64_t period_ns)
{
    memset(p, 0, sizeof(*p));
    p->period_ns = period_ns;
    p->next_tick = period_ns;
    p->now = 1; /* the bucket treats last_ns == 0 as "not started" */
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
    t->next_try = p->now;
    return i;
}

static void credit(struct plant_tenant *t, uint64_t ns)
{
    t->win_busy += ns;
    t->rep_busy += ns;
    t->total_busy += ns;
}

static void tenant_try(struct plant *p, int i)
{
    struct plant_tenant *t = &p->t[i];
    while (t->active && t->inflight < t->depth && t->next_try <= p->now &&
           t->q_len < PLANT_MAX_QUEUE) {
        uint64_t dur = (t->kernel_ns_alt && (t->nlaunch & 1)) ? t->kernel_ns_alt : t->kernel_ns;
        int64_t price = (int64_t)t->launch_cost;
        if (t->measured_bias > 0) {
            double sc = t->cost_scale ? t->cost_scale / 65536.0 : 1.0;
            price = (int64_t)((double)dur * t->measured_bias * sc);
        }
        uint64_t w = tf_bucket_take(&t->bucket, &t->bucket_limit, price, p->now);
        if (w) {
            if (w < MIN_SLEEP_NS)
                w = MIN_SLEEP_NS;
            if (w > MAX_SLEEP_NS)
                w = MAX_SLEEP_NS;
            t->next_try = p->now + w;
            t->win_throttled = true;
            t->throttles++;
            return;
        }
        t->win_charged += price;
        if (t->q_len == 0)
            t->head_left = dur;
        t->q[(t->q_head + t->q_len) % PLANT_MAX_QUEUE] = dur;
        t->q_len++;
        t->inflight++;
        t->nlaunch++;
        t->win_launches++;
        if (t->demand < 1.0)
            t->next_try = UINT64_MAX; /* a demand-limited app waits for each kernel */
    }
}

static void engine_tick(struct plant *p)
{
    for (int i = 0; i < p->ntenants; i++) {
        struct plant_tenant *t = &p->t[i];
        double share = (double)t->win_busy / (double)p->period_ns;
        if (p->quantize > 0)
            share = floor(share / p->quantize + 0.5) * p->quantize;
        struct tf_limit_in in = {
            .limit_bp = t->limit_bp,
            .window_ns = p->period_ns,
            .busy_ns = (uint64_t)(share * (double)p->period_ns),
            .launches = t->win_launches,
            .charged = t->win_charged,
            .sampled = t->win_busy > 0,
            .scale = t->cost_scale,
            .throttled = t->win_throttled,
            .tokens = atomic_load(&t->bucket.tokens),
        };
        struct tf_limit_out out;
        tf_limit_ctl_step(&t->ctl, &in, &out);
        tf_bucket_set(&t->bucket_limit, out.rate, out.capacity);
        if (p->true_up)
            tf_bucket_apply(&t->bucket, &t->bucket_limit, -out.debit, out.refund_ceiling);
        t->launch_cost = out.launch_cost;
        t->cost_scale = out.cost_scale;
        t->win_charged = 0;
        t->win_busy = 0;
        t->win_launches = 0;
        t->win_throttled = false;
    }
}

void plant_run(struct plant *p, uint64_t end_ns)
{
    while (p->now < end_ns) {
        for (int i = 0; i < p->ntenants; i++)
            tenant_try(p, i);
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
                    t->q_head = (t->q_head + 1) % PLANT_MAX_QUEUE;
                    t->q_len--;
                    t->inflight--;
                    if (t->q_len)
                        t->head_left = t->q[t->q_head];
                    if (t->demand < 1.0)
                        t->next_try = p->now + (uint64_t)((double)dur * (1.0 / t->demand - 1.0));
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
