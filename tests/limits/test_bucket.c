/* SPDX-License-Identifier: Apache-2.0
 *
 * The token bucket that throttles kernel launches: take without a clock, lazy refill at the
 * rate, bounded burst, takes granted while in credit (work larger than what the bucket holds
 * borrows the rest, paid back before the next take), a one-off loan below zero, live rate
 * changes, the engine's debits and refunds, and concurrent takers and refillers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "limits/bucket.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define MS UINT64_C(1000000)
#define S UINT64_C(1000000000)

static int64_t tokens(struct tf_bucket *b)
{
    return atomic_load(&b->tokens);
}

static void full_bucket_grants_a_burst_then_stops(void **state)
{
    struct tf_bucket b;
    struct tf_bucket_limit bl;
    tf_bucket_init(&b, &bl, 1000 * 1000, 10000, 1 * S); /* 1e6 tokens/s, burst 10000 */
    int granted = 0;
    while (tf_bucket_try_take(&b, 100))
        granted++;
    assert_int_equal(granted, 100);
    assert_int_equal(tokens(&b), 0);
    assert_false(tf_bucket_try_take(&b, 1));
}

static void empty_bucket_refills_at_its_rate(void **state)
{
    struct tf_bucket b;
    struct tf_bucket_limit bl;
    tf_bucket_init(&b, &bl, 1000 * 1000, 10000, 1 * S);
    assert_true(tf_bucket_try_take(&b, 10000));
    /* 5 ms at 1e6/s = 5000 tokens. */
    assert_int_equal(tf_bucket_refill(&b, &bl, 1 * S + 5 * MS), 5000);
    assert_int_equal(tokens(&b), 5000);
    /* The same instant again adds nothing: the interval was claimed. */
    assert_int_equal(tf_bucket_refill(&b, &bl, 1 * S + 5 * MS), 0);
    /* Time going backwards adds nothing either. */
    assert_int_equal(tf_bucket_refill(&b, &bl, 1 * S), 0);
}

static void long_idle_refills_only_to_capacity(void **state)
{
    struct tf_bucket b;
    struct tf_bucket_limit bl;
    tf_bucket_init(&b, &bl, 1000 * 1000, 10000, 1 * S);
    assert_true(tf_bucket_try_take(&b, 10000));
    tf_bucket_refill(&b, &bl, 1 * S + 3600 * S);
    assert_int_equal(tokens(&b), 10000);
    tf_bucket_refill(&b, &bl, 1 * S + 3600 * S + 5 * MS);
    assert_int_equal(tokens(&b), 10000);
}

static void slow_rate_keeps_fractions_of_a_token(void **state)
{
    /* 3 tokens per second, refilled every 10 ms for 10 s: 30 tokens, none lost to
     * rounding (each 10 ms step accrues only 0.03 tokens). */
    struct tf_bucket b;
    struct tf_bucket_limit bl;
    tf_bucket_init(&b, &bl, 3, 1000, 1);
    atomic_store(&b.tokens, 0);
    for (uint64_t t = 1; t <= 10 * S + 1; t += 10 * MS)
        tf_bucket_refill(&b, &bl, t);
    assert_in_range(tokens(&b), 29, 30);
}

static void kernel_longer_than_the_bucket_is_paid_in_full(void **state)
{
    /* A 100 ms kernel against a 6 ms bucket at 30 %: allowed while the bucket is in credit
     * (it borrows the rest), then the debt holds the next launch until the bucket is back in
     * credit: (100 ms - 6 ms of GPU time) / 30 %. */
    uint64_t rate = 300 * MS; /* device-ns per second */
    int64_t cap = 6 * (int64_t)MS;
    struct tf_bucket b;
    struct tf_bucket_limit bl;
    tf_bucket_init(&b, &bl, rate, cap, 1 * S);
    assert_int_equal(tf_bucket_take(&b, &bl, 100 * (int64_t)MS, 1 * S), 0);
    assert_int_equal(tokens(&b), cap - 100 * (int64_t)MS);
    uint64_t w = tf_bucket_take(&b, &bl, 100 * (int64_t)MS, 1 * S + 1 * MS);
    assert_true(w > 0);
    /* Debt = 94 ms; at 0.3/s that is 313 ms (minus the 1 ms credited). */
    assert_in_range(w, 311 * MS, 314 * MS);
    assert_int_not_equal(tf_bucket_take(&b, &bl, 1, 1 * S + 300 * MS), 0);
    assert_int_equal(tf_bucket_take(&b, &bl, 100 * (int64_t)MS, 1 * S + 314 * MS), 0);
}

static void a_take_borrows_only_while_the_bucket_is_in_credit(void **state)
{
    struct tf_bucket b;
    struct tf_bucket_limit bl;
    tf_bucket_init(&b, &bl, 1000, 100, 1 * S);
    /* 100 tokens: a take of 150 borrows 50; nothing more until they are repaid. */
    assert_true(tf_bucket_try_take(&b, 150));
    assert_int_equal(tokens(&b), -50);
    assert_false(tf_bucket_try_take(&b, 1));
    /* A loan the taker is entitled to (a kernel measured at last) goes below zero, once:
     * the take after it needs the bucket back in credit. */
    assert_false(tf_bucket_try_borrow(&b, 30, 50)); /* not above -50 */
    assert_true(tf_bucket_try_borrow(&b, 30, 60));
    assert_int_equal(tokens(&b), -80);
    assert_false(tf_bucket_try_borrow(&b, 30, 0));
    assert_false(tf_bucket_try_take(&b, 30));
    /* Paid back at the rate: 81 ms at 1000/s. */
    tf_bucket_refill(&b, &bl, 1 * S + 81 * MS);
    assert_int_equal(tokens(&b), 1);
    assert_true(tf_bucket_try_take(&b, 30));
}

static void zero_rate_blocks_and_never_credits_the_past(void **state)
{
    struct tf_bucket b;
    struct tf_bucket_limit bl;
    tf_bucket_init(&b, &bl, 0, 100, 1 * S);
    assert_true(tf_bucket_try_take(&b, 100));
    assert_int_equal(tf_bucket_take(&b, &bl, 10, 2 * S), UINT64_MAX);
    /* The rate comes back: only time after the change accrues. */
    tf_bucket_set(&bl, 1000, 100);
    tf_bucket_refill(&b, &bl, 2 * S + 50 * MS);
    assert_int_equal(tokens(&b), 50);
}

static void lowered_capacity_drops_the_excess(void **state)
{
    struct tf_bucket b;
    struct tf_bucket_limit bl;
    tf_bucket_init(&b, &bl, 1000 * 1000, 10000, 1 * S);
    tf_bucket_set(&bl, 1000 * 1000, 1000);
    tf_bucket_refill(&b, &bl, 1 * S + 1 * MS);
    assert_int_equal(tokens(&b), 1000);
    /* A take larger than the bucket borrows the rest. */
    assert_true(tf_bucket_try_take(&b, 5000));
    assert_int_equal(tokens(&b), -4000);
}

static void engine_debit_and_refund_are_bounded(void **state)
{
    struct tf_bucket b;
    struct tf_bucket_limit bl;
    tf_bucket_init(&b, &bl, 1000, 500, 1 * S);
    assert_int_equal(tf_bucket_adjust(&b, &bl, -2000), -1500);
    assert_int_equal(tf_bucket_adjust(&b, &bl, 1000), -500);
    /* A refund never fills past capacity. */
    assert_int_equal(tf_bucket_adjust(&b, &bl, 1000000), 500);
    /* Absurd debits saturate instead of wrapping. */
    assert_true(tf_bucket_adjust(&b, &bl, INT64_MIN) < -(INT64_C(1) << 61));
    assert_true(tf_bucket_adjust(&b, &bl, INT64_MIN) >= -(INT64_C(1) << 62));
    assert_false(tf_bucket_try_take(&b, 1));
}

static void wait_hint_matches_the_debt(void **state)
{
    struct tf_bucket b;
    struct tf_bucket_limit bl;
    tf_bucket_init(&b, &bl, 2000, 1000, 1 * S); /* 2000 tokens/s */
    assert_true(tf_bucket_try_take(&b, 1000));
    /* Empty: one token away from credit, whatever the take. */
    assert_int_equal(tf_bucket_wait_ns(&b, &bl, 500), MS / 2);
    assert_int_equal(tf_bucket_wait_ns(&b, &bl, 0), MS / 2);
    /* 499 tokens in debt: 250 ms to credit. */
    atomic_store(&b.tokens, -499);
    assert_int_equal(tf_bucket_wait_ns(&b, &bl, 5000), 250 * MS);
    atomic_store(&b.tokens, 1);
    assert_int_equal(tf_bucket_wait_ns(&b, &bl, 5000), 0);
}

/* --- concurrency: real threads, real clock ------------------------------------------- */

struct hammer {
    struct tf_bucket *b;
    struct tf_bucket_limit *l;
    uint64_t end_ns;
    _Atomic(int64_t) *granted;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * S + (uint64_t)ts.tv_nsec;
}

static void *hammer_main(void *arg)
{
    struct hammer *h = arg;
    for (;;) {
        uint64_t now = now_ns();
        if (now >= h->end_ns)
            break;
        if (tf_bucket_take(h->b, h->l, 1000, now) == 0)
            atomic_fetch_add(h->granted, 1000);
    }
    return NULL;
}

static void concurrent_launchers_never_exceed_rate_plus_burst_plus_one_take(void **state)
{
    struct tf_bucket b;
    struct tf_bucket_limit bl;
    uint64_t rate = 50 * 1000 * 1000; /* 50e6 tokens/s */
    int64_t cap = 1000 * 1000;
    uint64_t start = now_ns();
    tf_bucket_init(&b, &bl, rate, cap, start);
    _Atomic(int64_t) granted = 0;
    struct hammer h = {.b = &b, .l = &bl, .end_ns = start + 200 * MS, .granted = &granted};
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, hammer_main, &h), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    uint64_t elapsed = now_ns() - start;
    double allowed = (double)rate * (double)elapsed / 1e9 + (double)cap + 1000.0;
    double lower = (double)rate * 0.02; /* some progress even on a loaded machine */
    assert_true((double)atomic_load(&granted) <= allowed);
    assert_true((double)atomic_load(&granted) >= lower);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(full_bucket_grants_a_burst_then_stops),
        cmocka_unit_test(empty_bucket_refills_at_its_rate),
        cmocka_unit_test(long_idle_refills_only_to_capacity),
        cmocka_unit_test(slow_rate_keeps_fractions_of_a_token),
        cmocka_unit_test(kernel_longer_than_the_bucket_is_paid_in_full),
        cmocka_unit_test(a_take_borrows_only_while_the_bucket_is_in_credit),
        cmocka_unit_test(zero_rate_blocks_and_never_credits_the_past),
        cmocka_unit_test(lowered_capacity_drops_the_excess),
        cmocka_unit_test(engine_debit_and_refund_are_bounded),
        cmocka_unit_test(wait_hint_matches_the_debt),
        cmocka_unit_test(concurrent_launchers_never_exceed_rate_plus_burst_plus_one_take),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
