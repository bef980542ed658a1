/* SPDX-License-Identifier: Apache-2.0
 *
 * Lock-free token bucket (see bucket.h for the semantics).
 */
#include "limits/bucket.h"

/* Longest interval credited in one refill; longer idle periods refill to capacity. */
#define MAX_CREDIT_NS (10 * TF_BUCKET_NS_PER_S)

#define MAX_CAP (INT64_C(1) << 61)

static int64_t clamp_cap(int64_t cap)
{
    return cap < 1 ? 1 : cap > MAX_CAP ? MAX_CAP : cap;
}

static int64_t cap_of(const struct tf_bucket_limit *l)
{
    return clamp_cap(atomic_load_explicit(&((struct tf_bucket_limit *)l)->capacity,
                                          memory_order_relaxed)); /* (a load) */
}

static uint64_t rate_of(const struct tf_bucket_limit *l)
{
    return atomic_load_explicit(&((struct tf_bucket_limit *)l)->rate, memory_order_relaxed);
}

void tf_bucket_init(struct tf_bucket *b, struct tf_bucket_limit *l, uint64_t rate, int64_t capacity,
                    uint64_t now_ns)
{
    capacity = clamp_cap(capacity);
    atomic_init(&b->tokens, capacity);
    atomic_init(&b->last_ns, now_ns);
    atomic_init(&b->refilled, 0);
    b->reserved = 0;
    atomic_init(&l->rate, rate);
    atomic_init(&l->capacity, capacity);
}

void tf_bucket_set(struct tf_bucket_limit *l, uint64_t rate, int64_t capacity)
{
    capacity = clamp_cap(capacity);
    atomic_store_explicit(&l->rate, rate, memory_order_relaxed);
    atomic_store_explicit(&l->capacity, capacity, memory_order_relaxed);
}

bool tf_bucket_try_borrow(struct tf_bucket *b, int64_t cost, int64_t limit)
{
    if (cost <= 0)
        return true;
    int64_t floor = limit > 0 ? -limit : 0;
    /* One locked add on the fast path (a CAS loop costs twice as much): take, and give it
     * back if the bucket was not above FLOOR. Every grant saw that at its own atomic step,
     * so the accounting is exact and only one take at a time can borrow; a failed take is
     * visible to others only as a momentary dip. The plain load first keeps an empty bucket
     * from being hammered. */
    if (atomic_load_explicit(&b->tokens, memory_order_relaxed) <= floor)
        return false;
    int64_t t = atomic_fetch_sub_explicit(&b->tokens, cost, memory_order_relaxed);
    if (t > floor)
        return true;
    atomic_fetch_add_explicit(&b->tokens, cost, memory_order_relaxed);
    return false;
}

bool tf_bucket_try_take(struct tf_bucket *b, int64_t cost)
{
    return tf_bucket_try_borrow(b, cost, 0);
}

int64_t tf_bucket_refill(struct tf_bucket *b, const struct tf_bucket_limit *l, uint64_t now_ns)
{
    uint64_t last = atomic_load_explicit(&b->last_ns, memory_order_relaxed);
    if (last == 0) {
        /* Never started: start the clock now (the bucket was initialised full). */
        atomic_compare_exchange_strong_explicit(&b->last_ns, &last, now_ns, memory_order_relaxed,
                                                memory_order_relaxed);
        return 0;
    }
    if (now_ns <= last)
        return 0;
    uint64_t rate = rate_of(l);
    int64_t cap = cap_of(l);
    uint64_t elapsed = now_ns - last;
    uint64_t next_last;
    int64_t add;
    if (rate == 0) {
        /* Nothing accrues; move the clock so a later rate change does not credit the past. */
        add = 0;
        next_last = now_ns;
    } else {
        bool idle = elapsed >= MAX_CREDIT_NS;
        uint64_t credited = idle ? MAX_CREDIT_NS : elapsed;
        unsigned __int128 a = (unsigned __int128)rate * credited / TF_BUCKET_NS_PER_S;
        if (a == 0)
            return 0; /* less than one token: leave the interval to accumulate */
        if (a > (unsigned __int128)(INT64_C(1) << 62))
            a = (unsigned __int128)(INT64_C(1) << 62);
        add = (int64_t)a;
        if (idle) {
            next_last = now_ns;
        } else {
            /* Advance only by the time those whole tokens took; the fraction carries. */
            uint64_t used = (uint64_t)(a * TF_BUCKET_NS_PER_S / rate);
            next_last = last + (used > elapsed ? elapsed : used);
        }
    }
    if (!atomic_compare_exchange_strong_explicit(&b->last_ns, &last, next_last,
                                                 memory_order_relaxed, memory_order_relaxed))
        return 0; /* another refiller claimed this interval */
    if (add == 0)
        return 0;
    /* Tokens beyond capacity overflow and are forfeited (the bucket was full). */
    int64_t t = atomic_load_explicit(&b->tokens, memory_order_relaxed);
    for (;;) {
        int64_t next = t >= cap || add >= cap - t ? cap : t + add;
        if (atomic_compare_exchange_weak_explicit(&b->tokens, &t, next, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            atomic_fetch_add_explicit(&b->refilled, next - t, memory_order_relaxed);
            return next - t > 0 ? next - t : 0;
        }
    }
}

static int64_t adjust(struct tf_bucket *b, const struct tf_bucket_limit *l, int64_t delta,
                      int64_t ceiling, int64_t *applied)
{
    const int64_t floor = -(INT64_C(1) << 62);
    int64_t cap = cap_of(l);
    if (ceiling > cap)
        cap = clamp_cap(ceiling);
    int64_t t = atomic_load_explicit(&b->tokens, memory_order_relaxed);
    for (;;) {
        __int128 n = (__int128)t + delta; /* no overflow in 128 bits */
        if (delta > 0 && n > cap)
            n = t > cap ? t : cap; /* a refund never fills past capacity (or the ceiling) */
        if (n < floor)
            n = floor;
        int64_t next = (int64_t)n;
        if (atomic_compare_exchange_weak_explicit(&b->tokens, &t, next, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *applied = next - t;
            return next;
        }
    }
}

int64_t tf_bucket_adjust(struct tf_bucket *b, const struct tf_bucket_limit *l, int64_t delta)
{
    int64_t applied;
    return adjust(b, l, delta, 0, &applied);
}

int64_t tf_bucket_apply(struct tf_bucket *b, const struct tf_bucket_limit *l, int64_t delta,
                        int64_t ceiling)
{
    int64_t applied;
    adjust(b, l, delta, ceiling, &applied);
    return applied;
}

uint64_t tf_bucket_wait_ns(const struct tf_bucket *b, const struct tf_bucket_limit *l, int64_t cost)
{
    (void)cost; /* any take is granted once the bucket is in credit */
    int64_t t = atomic_load_explicit(&((struct tf_bucket *)b)->tokens, memory_order_relaxed);
    if (t > 0)
        return 0;
    uint64_t rate = rate_of(l);
    if (rate == 0)
        return UINT64_MAX;
    unsigned __int128 deficit = (unsigned __int128)(1 - (__int128)t);
    unsigned __int128 ns = (deficit * TF_BUCKET_NS_PER_S + rate - 1) / rate;
    return ns > UINT64_MAX - 1 ? UINT64_MAX - 1 : (uint64_t)ns;
}

uint64_t tf_bucket_take(struct tf_bucket *b, const struct tf_bucket_limit *l, int64_t cost,
                        uint64_t now_ns)
{
    if (tf_bucket_try_take(b, cost))
        return 0;
    tf_bucket_refill(b, l, now_ns);
    if (tf_bucket_try_take(b, cost))
        return 0;
    uint64_t w = tf_bucket_wait_ns(b, l, cost);
    return w == 0 ? 1 : w; /* raced with another taker: retry soon */
}

void tf_bucket_mark(const struct tf_bucket *b, struct tf_bucket_mark *m)
{
    /* refilled first: a refill landing in between is seen in tokens but not in refilled,
     * i.e. as a refund this interval and as consumption the next one. */
    m->refilled = atomic_load_explicit(&b->refilled, memory_order_relaxed);
    m->tokens = atomic_load_explicit(&b->tokens, memory_order_relaxed);
}

int64_t tf_bucket_consumed(const struct tf_bucket *b, struct tf_bucket_mark *prev, int64_t adjusted)
{
    struct tf_bucket_mark now;
    tf_bucket_mark(b, &now);
    int64_t used = (prev->tokens - now.tokens) + (now.refilled - prev->refilled) + adjusted;
    *prev = now;
    return used;
}
