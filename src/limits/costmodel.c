/* SPDX-License-Identifier: Apache-2.0
 *
 * The launch cost model (see costmodel.h).
 */
#include "limits/costmodel.h"

#include "limits/bucket.h"

#include <string.h>

#define NAP_MIN_NS 20000u
#define NAP_MAX_NS 2000000u

void tf_costmodel_init(struct tf_costmodel *cm, const struct tf_gpu_timer *t)
{
    memset(cm, 0, sizeof(*cm));
    if (t) {
        cm->t = *t;
        cm->enabled = t->ctx_current && t->event_create && t->event_destroy && t->record &&
                      t->query && t->elapsed_ns && t->now_ns && t->nap;
    }
    atomic_init(&cm->interval, 256);
}

static struct tf_cost_entry *find(struct tf_costmodel *cm, uint64_t key)
{
    uint64_t h = (key * UINT64_C(0x9E3779B97F4A7C15)) >> 40;
    for (unsigned i = 0; i < 16; i++) {
        struct tf_cost_entry *e = &cm->tab[(h + i) & (TF_COST_TABLE - 1)];
        uint64_t k = atomic_load_explicit(&e->key, memory_order_acquire);
        if (k == key)
            return e;
        if (k == 0) {
            if (atomic_compare_exchange_strong_explicit(&e->key, &k, key, memory_order_acq_rel,
                                                        memory_order_acquire) ||
                k == key)
                return e;
        }
    }
    return NULL; /* full around here: this key is charged its prior */
}

uint64_t tf_cost_estimate(struct tf_costmodel *cm, uint64_t key)
{
    uint64_t h = (key * UINT64_C(0x9E3779B97F4A7C15)) >> 40;
    for (unsigned i = 0; i < 16; i++) {
        struct tf_cost_entry *e = &cm->tab[(h + i) & (TF_COST_TABLE - 1)];
        uint64_t k = atomic_load_explicit(&e->key, memory_order_acquire);
        if (k == key)
            return atomic_load_explicit(&e->est, memory_order_relaxed);
        if (k == 0)
            return 0;
    }
    return 0;
}

/* The fast path may take E once it is warm and has nothing to settle. */
static void refresh_fast(struct tf_cost_entry *e)
{
    uint64_t est = atomic_load_explicit(&e->est, memory_order_relaxed);
    bool ok = atomic_load_explicit(&e->nsamples, memory_order_relaxed) >= TF_COST_WARM_SAMPLES &&
              atomic_load_explicit(&e->cold_n, memory_order_relaxed) == 0;
    atomic_store_explicit(&e->fast, ok ? est : 0, memory_order_relaxed);
}

/* A measurement X of E: the estimate follows the low measurements (see costmodel.h). */
static void observe(struct tf_cost_entry *e, uint64_t x)
{
    if (x == 0)
        x = 1;
    uint16_t n = atomic_load_explicit(&e->nsamples, memory_order_relaxed);
    uint64_t est = atomic_load_explicit(&e->est, memory_order_relaxed), next;
    do {
        if (n == 0 || est == 0)
            next = x;
        else if (x < est)
            next = x + (est - x) / 2;
        else
            next = est + ((x - est < est ? x - est : est) + 15) / 16;
    } while (!atomic_compare_exchange_weak_explicit(&e->est, &est, next, memory_order_release,
                                                    memory_order_relaxed));
    if (n < UINT16_MAX)
        atomic_fetch_add_explicit(&e->nsamples, 1, memory_order_relaxed);
    refresh_fast(e);
}

static void enter(struct tf_costmodel *cm, int *saved)
{
    if (cm->t.enter)
        cm->t.enter(cm->t.u, saved);
}

static void leave(struct tf_costmodel *cm, int saved)
{
    if (cm->t.leave)
        cm->t.leave(cm->t.u, saved);
}

/* Gives slot S back (its events stay for the next measurement on its context). */
static void release(struct tf_costmodel *cm, struct tf_cost_slot *s, bool was_pending)
{
    if (s->e)
        atomic_fetch_sub_explicit(&s->e->inflight, 1, memory_order_release);
    s->e = NULL;
    atomic_store_explicit(&s->started_ns, 0, memory_order_relaxed);
    atomic_store_explicit(&s->cold_e, 0, memory_order_relaxed);
    if (was_pending)
        atomic_fetch_sub_explicit(&cm->npending, 1, memory_order_relaxed);
    atomic_store_explicit(&s->state, TF_COST_FREE, memory_order_release);
}

/* Forgets S's events: destroyed if its context lives, else only dropped. */
static void drop_events(struct tf_costmodel *cm, struct tf_cost_slot *s)
{
    bool dead = atomic_load_explicit(&s->dead, memory_order_acquire);
    for (int i = 0; i < 2; i++) {
        if (s->ev[i] && !dead)
            cm->t.event_destroy(cm->t.u, s->ev[i]);
        s->ev[i] = 0;
    }
    atomic_store_explicit(&s->dead, 0, memory_order_relaxed);
}

void tf_cost_poll(struct tf_costmodel *cm)
{
    if (!cm->enabled || atomic_load_explicit(&cm->npending, memory_order_relaxed) == 0)
        return;
    int saved = 0;
    bool entered = false;
    uint64_t now = 0;
    for (int i = 0; i < TF_COST_SLOTS; i++) {
        struct tf_cost_slot *s = &cm->slot[i];
        uint32_t st = TF_COST_PENDING;
        if (atomic_load_explicit(&s->state, memory_order_relaxed) != TF_COST_PENDING ||
            !atomic_compare_exchange_strong_explicit(&s->state, &st, TF_COST_BUSY,
                                                     memory_order_acq_rel, memory_order_relaxed))
            continue;
        if (atomic_load_explicit(&s->dead, memory_order_acquire)) {
            drop_events(cm, s);
            release(cm, s, true);
            continue;
        }
        if (!entered) {
            enter(cm, &saved);
            entered = true;
            now = cm->t.now_ns();
        }
        /* A cold key's kernel: note when it is seen running (its waiter charges it). */
        if (!atomic_load_explicit(&s->started_ns, memory_order_relaxed) && s->e &&
            !atomic_load_explicit(&s->e->est, memory_order_relaxed) &&
            cm->t.query(cm->t.u, s->ev[0]) == 0) {
            atomic_store_explicit(&s->cold_e, (uintptr_t)s->e, memory_order_relaxed);
            atomic_store_explicit(&s->started_ns, now, memory_order_release);
        }
        int q = cm->t.query(cm->t.u, s->ev[1]);
        if (q == TF_GPU_PENDING) {
            if (now - s->since_ns < TF_COST_STALE_NS) {
                atomic_store_explicit(&s->state, TF_COST_PENDING, memory_order_release);
                continue;
            }
            drop_events(cm, s); /* released by the driver once complete */
            release(cm, s, true);
            continue;
        }
        uint64_t ns;
        if (q == 0 && cm->t.elapsed_ns(cm->t.u, s->ev[0], s->ev[1], &ns) == 0)
            observe(s->e, ns);
        else
            drop_events(cm, s); /* something is wrong with them: start afresh */
        release(cm, s, true);
    }
    if (entered)
        leave(cm, saved);
}

/* Charges B for cold key E's kernel as it runs: SCALE times the time since its start event
 * was seen complete, less what was charged for it so far (one waiter charges each part). */
static void pay_as_it_runs(struct tf_costmodel *cm, struct tf_cost_entry *e, uint32_t scale,
                           struct tf_bucket *b, const struct tf_bucket_limit *bl, uint64_t now)
{
    for (int i = 0; b && i < TF_COST_SLOTS; i++) {
        struct tf_cost_slot *s = &cm->slot[i];
        uint64_t since = atomic_load_explicit(&s->started_ns, memory_order_acquire);
        if (!since || since > now ||
            atomic_load_explicit(&s->cold_e, memory_order_relaxed) != (uintptr_t)e)
            continue;
        uint64_t due = (uint64_t)tf_cost_scaled(now - since, scale);
        uint64_t paid = atomic_load_explicit(&e->cold_paid, memory_order_relaxed);
        while (due > paid &&
               !atomic_compare_exchange_weak_explicit(&e->cold_paid, &paid, due,
                                                      memory_order_relaxed, memory_order_relaxed))
            ;
        if (due > paid)
            tf_bucket_adjust(b, bl, -(int64_t)(due - paid));
        return;
    }
}

/* Waits (sleeping, bounded) for the first measurement of cold key E, charging B for its
 * kernel meanwhile. */
static uint64_t wait_cold(struct tf_costmodel *cm, struct tf_cost_entry *e, uint32_t scale,
                          struct tf_bucket *b, const struct tf_bucket_limit *bl)
{
    uint64_t t0 = cm->t.now_ns(), nap = NAP_MIN_NS, now = t0;
    uint64_t est = 0;
    while ((est = atomic_load_explicit(&e->est, memory_order_acquire)) == 0 &&
           atomic_load_explicit(&e->inflight, memory_order_acquire) > 0 &&
           now - t0 < TF_COST_COLD_WAIT_NS) {
        tf_cost_poll(cm);
        if ((est = atomic_load_explicit(&e->est, memory_order_acquire)) != 0)
            break;
        pay_as_it_runs(cm, e, scale, b, bl, cm->t.now_ns());
        cm->t.nap(nap);
        nap = nap * 2 > NAP_MAX_NS ? NAP_MAX_NS : nap * 2;
        now = cm->t.now_ns();
    }
    atomic_fetch_add_explicit(&cm->cold_waits, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&cm->cold_wait_ns, now - t0, memory_order_relaxed);
    return est;
}

int64_t tf_cost_price_slow(struct tf_costmodel *cm, struct tf_cost_thread *th,
                           struct tf_cost_launch *l, uint64_t key, uint64_t prior, uint32_t scale,
                           struct tf_bucket *b, const struct tf_bucket_limit *bl)
{
    l->e = NULL;
    l->sample = false;
    l->slot = -1;
    l->correction = 0;
    l->borrow = 0;
    /* Launches since the last visit: the fast path counted the countdown down. */
    th->since += th->span > th->countdown ? th->span - th->countdown + 1 : 1;
    bool measuring = cm->enabled && !atomic_load_explicit(&cm->broken, memory_order_relaxed);
    if (!measuring) {
        th->countdown = th->span = UINT32_MAX / 2;
        return (int64_t)prior;
    }
    tf_cost_poll(cm);
    struct tf_cost_entry *e = th->key == key && th->e ? th->e : find(cm, key);
    th->key = key;
    th->e = e;
    uint32_t interval = atomic_load_explicit(&cm->interval, memory_order_relaxed);
    int64_t cost = (int64_t)prior;
    if (e) {
        l->e = e;
        uint64_t est = atomic_load_explicit(&e->est, memory_order_acquire);
        if (!est && atomic_load_explicit(&e->inflight, memory_order_acquire) > 0)
            est = wait_cold(cm, e, scale, b, bl);
        uint16_t inflight = atomic_load_explicit(&e->inflight, memory_order_relaxed);
        if (est) {
            cost = tf_cost_scaled(est, scale);
            /* Settle the launches charged at the prior before the key was measured: what
             * they were over-charged (at the prior and while running) comes back now. What
             * they were under-charged is left to the engine's true-up, which sees their GPU
             * time as it runs (a debit here, at the measurement, would come after the
             * engine's and charge it twice); this launch may borrow it meanwhile. */
            uint32_t n = atomic_exchange_explicit(&e->cold_n, 0, memory_order_relaxed);
            if (n) {
                uint64_t tok = atomic_exchange_explicit(&e->cold_tokens, 0, memory_order_relaxed);
                uint64_t paid = atomic_exchange_explicit(&e->cold_paid, 0, memory_order_relaxed);
                int64_t under = (int64_t)n * cost - (int64_t)tok;
                int64_t over = (int64_t)(tok + paid) - (int64_t)n * cost;
                l->correction = over > 0 ? -over : 0;
                l->borrow = under > 0 ? under : 0;
                refresh_fast(e);
            }
            uint16_t ns = atomic_load_explicit(&e->nsamples, memory_order_relaxed);
            l->sample = (ns < TF_COST_WARM_SAMPLES && inflight == 0) || th->since >= interval;
        } else {
            atomic_fetch_add_explicit(&e->cold_n, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&e->cold_tokens, prior, memory_order_relaxed);
            atomic_store_explicit(&e->fast, 0, memory_order_relaxed);
            l->sample = inflight == 0; /* its first launch is measured */
        }
    }
    if (l->sample)
        th->since = 0;
    /* Next visit: soon while measurements are pending (to read them), else at the next
     * measurement due. */
    uint32_t span;
    if (l->sample || atomic_load_explicit(&cm->npending, memory_order_relaxed))
        span = TF_COST_POLL_EVERY;
    else
        span = th->since < interval ? interval - th->since : 1;
    th->countdown = th->span = span;
    return cost;
}

/* Claims a free slot, preferring one whose events belong to CTX. -1: none free. */
static int claim(struct tf_costmodel *cm, uintptr_t ctx)
{
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < TF_COST_SLOTS; i++) {
            struct tf_cost_slot *s = &cm->slot[i];
            if (atomic_load_explicit(&s->state, memory_order_relaxed) != TF_COST_FREE)
                continue;
            if (pass == 0 && atomic_load_explicit(&s->ctx, memory_order_relaxed) != ctx)
                continue;
            uint32_t st = TF_COST_FREE;
            if (atomic_compare_exchange_strong_explicit(&s->state, &st, TF_COST_BUSY,
                                                        memory_order_acq_rel, memory_order_relaxed))
                return i;
        }
    }
    return -1;
}

static void note_cost(struct tf_costmodel *cm, uint64_t host_ns)
{
    /* A measurement costs its start and end (the records and the checks around them) and
     * about as much again to read it and to visit the slow path until it is read. */
    uint64_t c = atomic_load_explicit(&cm->sample_cost_ns, memory_order_relaxed);
    c = c ? c - c / 8 + host_ns * 2 / 8 : host_ns * 2;
    atomic_store_explicit(&cm->sample_cost_ns, c, memory_order_relaxed);
    uint64_t iv = c / TF_COST_BUDGET_NS;
    iv = iv < TF_COST_INTERVAL_MIN   ? TF_COST_INTERVAL_MIN
         : iv > TF_COST_INTERVAL_MAX ? TF_COST_INTERVAL_MAX
                                     : iv;
    atomic_store_explicit(&cm->interval, (uint32_t)iv, memory_order_relaxed);
}

void tf_cost_sample_begin(struct tf_costmodel *cm, struct tf_cost_thread *th,
                          struct tf_cost_launch *l, uintptr_t stream, int ptsz)
{
    (void)th;
    l->slot = -1;
    if (!l->sample || !l->e || !cm->enabled)
        return;
    uint64_t t0 = cm->t.now_ns();
    int saved = 0;
    enter(cm, &saved);
    uintptr_t ctx = 0;
    if (cm->t.capturing && cm->t.capturing(cm->t.u, stream, ptsz))
        goto out;
    int crc = cm->t.ctx_current(cm->t.u, &ctx);
    if (crc == TF_GPU_UNSUPPORTED)
        atomic_store_explicit(&cm->broken, true, memory_order_relaxed);
    if (crc != 0 || !ctx)
        goto out;
    int i = claim(cm, ctx);
    if (i < 0) {
        atomic_fetch_add_explicit(&cm->no_slot, 1, memory_order_relaxed);
        goto out;
    }
    struct tf_cost_slot *s = &cm->slot[i];
    if (atomic_load_explicit(&s->dead, memory_order_acquire) ||
        atomic_load_explicit(&s->ctx, memory_order_relaxed) != ctx)
        drop_events(cm, s);
    atomic_store_explicit(&s->ctx, ctx, memory_order_relaxed);
    for (int k = 0; k < 2; k++) {
        if (s->ev[k])
            continue;
        int rc = cm->t.event_create(cm->t.u, &s->ev[k]);
        if (rc != 0) {
            s->ev[k] = 0;
            if (rc == TF_GPU_UNSUPPORTED)
                atomic_store_explicit(&cm->broken, true, memory_order_relaxed);
            atomic_store_explicit(&s->state, TF_COST_FREE, memory_order_release);
            goto out;
        }
    }
    if (cm->t.record(cm->t.u, s->ev[0], stream, ptsz) != 0) {
        atomic_store_explicit(&s->state, TF_COST_FREE, memory_order_release);
        goto out;
    }
    s->e = l->e;
    atomic_fetch_add_explicit(&l->e->inflight, 1, memory_order_release);
    l->slot = i;
out:
    leave(cm, saved);
    if (l->slot >= 0)
        cm->slot[l->slot].host_ns = cm->t.now_ns() - t0;
}

void tf_cost_sample_end(struct tf_costmodel *cm, struct tf_cost_thread *th,
                        struct tf_cost_launch *l, uintptr_t stream, int ptsz, bool launched)
{
    (void)th;
    if (l->slot < 0)
        return;
    struct tf_cost_slot *s = &cm->slot[l->slot];
    l->slot = -1;
    uint64_t t0 = cm->t.now_ns();
    int saved = 0;
    enter(cm, &saved);
    if (!launched || cm->t.record(cm->t.u, s->ev[1], stream, ptsz) != 0) {
        release(cm, s, false);
        leave(cm, saved);
        return;
    }
    uint64_t host_ns = s->host_ns;
    s->since_ns = cm->t.now_ns();
    atomic_fetch_add_explicit(&cm->samples, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&cm->npending, 1, memory_order_relaxed);
    atomic_store_explicit(&s->state, TF_COST_PENDING, memory_order_release);
    leave(cm, saved);
    note_cost(cm, host_ns + (cm->t.now_ns() - t0));
}

void tf_cost_ctx_gone(struct tf_costmodel *cm, uintptr_t ctx)
{
    if (!ctx)
        return;
    for (int i = 0; i < TF_COST_SLOTS; i++) {
        struct tf_cost_slot *s = &cm->slot[i];
        if (atomic_load_explicit(&s->ctx, memory_order_relaxed) == ctx)
            atomic_store_explicit(&s->dead, 1, memory_order_release);
    }
}

void tf_cost_after_fork(struct tf_costmodel *cm)
{
    for (int i = 0; i < TF_COST_SLOTS; i++) {
        struct tf_cost_slot *s = &cm->slot[i];
        s->ev[0] = s->ev[1] = 0;
        s->e = NULL;
        atomic_store(&s->started_ns, 0);
        atomic_store(&s->cold_e, 0);
        atomic_store(&s->ctx, 0);
        atomic_store(&s->dead, 0);
        atomic_store(&s->state, TF_COST_FREE);
    }
    atomic_store(&cm->npending, 0);
    for (int i = 0; i < TF_COST_TABLE; i++) {
        atomic_store(&cm->tab[i].inflight, 0);
        atomic_store(&cm->tab[i].cold_paid, 0); /* paid for a measurement lost here */
    }
}
