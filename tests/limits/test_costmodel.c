/* SPDX-License-Identifier: Apache-2.0
 *
 * The launch cost model (src/limits/costmodel.h) against a scripted device in virtual time:
 * streams run their kernels in order, events complete when their stream reaches them, the
 * clock moves only when the model naps. Checks that a cold key is measured at its first
 * launch and priced by that measurement after one kernel (the launches priced above it are
 * refunded; those priced below it charged while the kernel runs and lent the rest), that a
 * second cold launch waits for the measurement but never for long,
 * that the estimate follows the low measurements (contention only lengthens them), that warm
 * keys are measured one launch in `interval`, and the failure paths: no event support, a
 * failed launch, a destroyed context, every slot busy, a stream being captured, a
 * measurement that never completes, many threads at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "limits/bucket.h"
#include "limits/costmodel.h"

#include <pthread.h>
#include <stdlib.h>

#define US UINT64_C(1000)
#define MS UINT64_C(1000000)
#define PRIOR (500 * US)

/* --- the scripted device ------------------------------------------------------------------ */

#define MAXEV 4096
#define MAXSTREAM 8

static struct dev {
    pthread_mutex_t mu;
    uint64_t now;
    uint64_t busy_until[MAXSTREAM]; /* when each stream has run what it was given */
    uint64_t ev_t[MAXEV];           /* when each recorded event completes */
    bool ev_live[MAXEV], ev_rec[MAXEV];
    uint32_t nev;
    uintptr_t ctx;
    int creates, destroys, records, queries;
    bool no_events, capturing, fail_record;
} D;

static void dev_reset(void)
{
    pthread_mutex_destroy(&D.mu);
    memset(&D, 0, sizeof(D));
    pthread_mutex_init(&D.mu, NULL);
    D.now = 1000 * MS;
    D.ctx = 0xc0;
}

/* The app's kernel of DUR ns on STREAM (the real launch between begin and end). */
static void dev_launch(uintptr_t stream, uint64_t dur)
{
    pthread_mutex_lock(&D.mu);
    uint64_t start = D.busy_until[stream] > D.now ? D.busy_until[stream] : D.now;
    D.busy_until[stream] = start + dur;
    pthread_mutex_unlock(&D.mu);
}

static void dev_advance(uint64_t ns)
{
    pthread_mutex_lock(&D.mu);
    D.now += ns;
    pthread_mutex_unlock(&D.mu);
}

static int t_ctx(void *u, uintptr_t *ctx)
{
    *ctx = D.ctx;
    return 0;
}

static int t_create(void *u, uintptr_t *ev)
{
    if (D.no_events)
        return TF_GPU_UNSUPPORTED;
    pthread_mutex_lock(&D.mu);
    D.creates++;
    uint32_t i = ++D.nev;
    assert_true(i < MAXEV);
    D.ev_live[i] = true;
    pthread_mutex_unlock(&D.mu);
    *ev = i;
    return 0;
}

static void t_destroy(void *u, uintptr_t ev)
{
    pthread_mutex_lock(&D.mu);
    assert_true(D.ev_live[ev]); /* never a dead or foreign handle */
    D.ev_live[ev] = false;
    D.destroys++;
    pthread_mutex_unlock(&D.mu);
}

static int t_record(void *u, uintptr_t ev, uintptr_t stream, int ptsz)
{
    if (D.fail_record)
        return TF_GPU_FAILED;
    pthread_mutex_lock(&D.mu);
    assert_true(D.ev_live[ev]);
    D.ev_t[ev] = D.busy_until[stream] > D.now ? D.busy_until[stream] : D.now;
    D.ev_rec[ev] = true;
    D.records++;
    pthread_mutex_unlock(&D.mu);
    return 0;
}

static int t_query(void *u, uintptr_t ev)
{
    pthread_mutex_lock(&D.mu);
    assert_true(D.ev_live[ev] && D.ev_rec[ev]);
    D.queries++;
    int r = D.now >= D.ev_t[ev] ? 0 : TF_GPU_PENDING;
    pthread_mutex_unlock(&D.mu);
    return r;
}

static int t_elapsed(void *u, uintptr_t a, uintptr_t b, uint64_t *ns)
{
    pthread_mutex_lock(&D.mu);
    *ns = D.ev_t[b] - D.ev_t[a];
    pthread_mutex_unlock(&D.mu);
    return 0;
}

static int t_capturing(void *u, uintptr_t stream, int ptsz)
{
    return D.capturing;
}

static uint64_t t_now(void)
{
    pthread_mutex_lock(&D.mu);
    uint64_t n = D.now;
    pthread_mutex_unlock(&D.mu);
    return n;
}

static void t_nap(uint64_t ns)
{
    dev_advance(ns);
}

static const struct tf_gpu_timer timer = {
    .ctx_current = t_ctx,
    .event_create = t_create,
    .event_destroy = t_destroy,
    .record = t_record,
    .query = t_query,
    .elapsed_ns = t_elapsed,
    .capturing = t_capturing,
    .now_ns = t_now,
    .nap = t_nap,
};

static struct tf_costmodel *cm;
static struct tf_bucket *bkt; /* where launches are charged while they wait (NULL: nowhere) */
static struct tf_bucket_limit bkt_limit; /* its limit */

static int setup(void **state)
{
    dev_reset();
    bkt = NULL;
    cm = calloc(1, sizeof(*cm));
    tf_costmodel_init(cm, &timer);
    return 0;
}

static int teardown(void **state)
{
    free(cm);
    return 0;
}

/* One launch of KEY (kernel DUR ns) on STREAM as a launcher does it; returns the price. */
static int64_t launch(struct tf_cost_thread *th, uint64_t key, uintptr_t stream, uint64_t dur,
                      int64_t *correction)
{
    struct tf_cost_launch l;
    int64_t cost = tf_cost_price(cm, th, &l, key, PRIOR, TF_COST_SCALE_ONE, bkt, &bkt_limit);
    if (correction)
        *correction += l.correction;
    if (l.sample)
        tf_cost_sample_begin(cm, th, &l, stream, 0);
    dev_launch(stream, dur);
    if (l.sample)
        tf_cost_sample_end(cm, th, &l, stream, 0, true);
    return cost;
}

/* A launch of KEY lasting DUR that is measured (whatever the model's sampling says), and
 * read back once it completed. */
static void measure_once(struct tf_cost_thread *th, uint64_t key, uint64_t dur)
{
    struct tf_cost_launch l;
    tf_cost_price(cm, th, &l, key, PRIOR, 0, NULL, NULL);
    l.sample = true;
    tf_cost_sample_begin(cm, th, &l, 1, 0);
    dev_launch(1, dur);
    tf_cost_sample_end(cm, th, &l, 1, 0, true);
    dev_advance(dur + 5 * MS);
    tf_cost_poll(cm);
}

/* --- tests ------------------------------------------------------------------------------ */

static void cold_key_is_measured_at_its_first_launch_and_settled(void **state)
{
    struct tf_cost_thread th = {0};
    uint64_t key = tf_cost_key(0x1000, 32, 0, false);
    int64_t corr = 0;
    assert_int_equal(launch(&th, key, 1, 5 * US, &corr), PRIOR); /* not measured yet */
    dev_advance(10 * US);
    /* The second launch finds the measurement in: priced 5 us, and the first launch's
     * 495 us over-charge comes back. */
    assert_int_equal(launch(&th, key, 1, 5 * US, &corr), 5 * US);
    assert_int_equal(corr, (int64_t)(5 * US) - (int64_t)PRIOR);
    assert_int_equal(tf_cost_estimate(cm, key), 5 * US);
    /* Another size of the same kernel is another key. */
    assert_true(tf_cost_key(0x1000, 64, 0, false) != key);
    assert_true(tf_cost_key(0x1000, 32, 1, false) != key);
    assert_true(tf_cost_key(0x1000, 32, 0, true) != key);
}

static void second_cold_launch_waits_for_the_first_measurement(void **state)
{
    /* 100 ms kernels: the second launch may not run ahead unpaid. While it waits, the first
     * kernel is charged as it runs (the engine sees its GPU time paid in the same windows);
     * the rest of what it was under-charged is not debited at the measurement (that would
     * come after the engine's true-up and charge it twice), and the second launch may
     * borrow it. */
    struct tf_bucket b;
    tf_bucket_init(&b, &bkt_limit, 0, INT64_C(1) << 40,
                   t_now()); /* no refill: only charges move it */
    bkt = &b;
    struct tf_cost_thread th = {0};
    uint64_t key = tf_cost_key(0x2000, 1, 0, false);
    int64_t corr = 0;
    uint64_t t0 = t_now();
    launch(&th, key, 1, 100 * MS, &corr);
    struct tf_cost_launch l;
    int64_t c2 = tf_cost_price(cm, &th, &l, key, PRIOR, TF_COST_SCALE_ONE, bkt, &bkt_limit);
    assert_int_equal(c2, 100 * MS);
    uint64_t waited = t_now() - t0;
    assert_in_range(waited, 100 * MS, 110 * MS); /* until the first kernel completed */
    assert_int_equal(atomic_load(&cm->cold_waits), 1);
    int64_t paid = (INT64_C(1) << 40) - atomic_load(&b.tokens);
    assert_in_range(paid, 95 * MS, 100 * MS); /* all but the last nap's worth */
    assert_int_equal(l.correction, 0);
    assert_int_equal(l.borrow, (int64_t)(100 * MS - PRIOR));
    /* Settled once: the next launch neither refunds nor borrows. */
    tf_cost_price(cm, &th, &l, key, PRIOR, TF_COST_SCALE_ONE, bkt, &bkt_limit);
    assert_int_equal(l.correction, 0);
    assert_int_equal(l.borrow, 0);
}

static void cold_kernel_is_charged_at_the_engines_scale_while_it_runs(void **state)
{
    /* What a waiting launch charges for the kernel being measured is its running time
     * times the engine's calibration, as any price. */
    struct tf_bucket b;
    tf_bucket_init(&b, &bkt_limit, 0, INT64_C(1) << 40, t_now());
    bkt = &b;
    struct tf_cost_thread th = {0};
    uint64_t key = tf_cost_key(0x2100, 1, 0, false);
    launch(&th, key, 1, 40 * MS, NULL);
    struct tf_cost_launch l;
    int64_t c2 = tf_cost_price(cm, &th, &l, key, PRIOR, TF_COST_SCALE_ONE / 2, bkt, &bkt_limit);
    assert_int_equal(c2, 20 * MS); /* 40 ms at scale 1/2 */
    int64_t paid = (INT64_C(1) << 40) - atomic_load(&b.tokens);
    assert_in_range(paid, 18 * MS, 20 * MS); /* charged at the scale as it ran */
    assert_int_equal(l.correction, 0);
    assert_int_equal(l.borrow, (int64_t)(20 * MS - PRIOR));
}

static void cold_wait_is_bounded(void **state)
{
    /* A kernel that does not complete (it waits for something the app does later): the
     * next launch waits at most TF_COST_COLD_WAIT_NS, then goes at the prior. */
    struct tf_cost_thread th = {0};
    uint64_t key = tf_cost_key(0x3000, 1, 0, false);
    launch(&th, key, 1, 3600000 * MS, NULL);
    uint64_t t0 = t_now();
    assert_int_equal(launch(&th, key, 1, 1 * MS, NULL), PRIOR);
    uint64_t waited = t_now() - t0;
    assert_true(waited >= TF_COST_COLD_WAIT_NS && waited < TF_COST_COLD_WAIT_NS + 5 * MS);
    /* It is not waited for again by every launch: the key stays cold but only one
     * measurement is in flight and the wait is per launch, bounded. */
    assert_int_equal(tf_cost_estimate(cm, key), 0);
}

static void estimate_follows_the_low_measurements(void **state)
{
    /* A 1 ms kernel whose measurements are lengthened by another tenant's work queued on
     * the device ahead of it (up to 3 ms more) most of the time. */
    struct tf_cost_thread th = {0};
    uint64_t key = tf_cost_key(0x4000, 1, 0, false);
    for (int i = 0; i < 40; i++)
        measure_once(&th, key, (i % 4 ? 1 + (uint64_t)(i % 3) * 1 : 0) * MS + 1 * MS);
    uint64_t est = tf_cost_estimate(cm, key);
    assert_in_range(est, 1 * MS, 1500 * US);
    /* A lasting change upwards is followed, slowly. */
    for (int i = 0; i < 60; i++)
        measure_once(&th, key, 2 * MS);
    assert_in_range(tf_cost_estimate(cm, key), 1800 * US, 2 * MS);
}

static void warm_key_takes_the_fast_path_and_is_measured_now_and_then(void **state)
{
    struct tf_cost_thread th = {0};
    uint64_t key = tf_cost_key(0x5000, 1, 0, false);
    for (int i = 0; i < 20000; i++) {
        launch(&th, key, 1, 1 * US, NULL);
        dev_advance(2 * US);
    }
    /* The first launches, then one in `interval`: a few hundred measurements at most. */
    uint64_t n = atomic_load(&cm->samples);
    uint32_t iv = atomic_load(&cm->interval);
    assert_true(iv >= TF_COST_INTERVAL_MIN && iv <= TF_COST_INTERVAL_MAX);
    assert_true(n >= TF_COST_WARM_SAMPLES && n <= TF_COST_WARM_SAMPLES + 20000 / iv + 2);
    /* Its price is the estimate, scaled by the engine's calibration. */
    struct tf_cost_launch l;
    assert_int_equal(tf_cost_price(cm, &th, &l, key, PRIOR, TF_COST_SCALE_ONE / 4, NULL, NULL),
                     US / 4);
    /* The events were created once and reused. */
    assert_int_equal(D.creates, 2);
}

static void driver_without_events_charges_the_prior(void **state)
{
    D.no_events = true;
    struct tf_cost_thread th = {0};
    uint64_t key = tf_cost_key(0x6000, 1, 0, false);
    for (int i = 0; i < 100; i++)
        assert_int_equal(launch(&th, key, 1, 1 * US, NULL), PRIOR);
    assert_true(atomic_load(&cm->broken));
    assert_int_equal(D.records, 0);
    /* A model without a timer at all does the same. */
    struct tf_costmodel *bare = calloc(1, sizeof(*bare));
    tf_costmodel_init(bare, NULL);
    struct tf_cost_launch l;
    assert_int_equal(tf_cost_price(bare, &th, &l, key, PRIOR, 0, NULL, NULL), PRIOR);
    assert_false(l.sample);
    free(bare);
}

static void failed_launch_or_record_gives_the_measurement_up(void **state)
{
    struct tf_cost_thread th = {0};
    uint64_t key = tf_cost_key(0x7000, 1, 0, false);
    struct tf_cost_launch l;
    tf_cost_price(cm, &th, &l, key, PRIOR, 0, NULL, NULL);
    assert_true(l.sample);
    tf_cost_sample_begin(cm, &th, &l, 1, 0);
    assert_true(l.slot >= 0);
    tf_cost_sample_end(cm, &th, &l, 1, 0, false); /* the driver refused the launch */
    assert_int_equal(atomic_load(&cm->npending), 0);
    /* No wait for a measurement that will never come. */
    uint64_t t0 = t_now();
    tf_cost_price(cm, &th, &l, key, PRIOR, 0, NULL, NULL);
    assert_int_equal(t_now(), t0);
    D.fail_record = true;
    tf_cost_sample_begin(cm, &th, &l, 1, 0);
    assert_int_equal(l.slot, -1);
    D.fail_record = false;
    for (int i = 0; i < TF_COST_SLOTS; i++)
        assert_int_equal(atomic_load(&cm->slot[i].state), TF_COST_FREE);
}

static void destroyed_context_events_are_dropped_never_used(void **state)
{
    struct tf_cost_thread th = {0};
    uint64_t key = tf_cost_key(0x8000, 1, 0, false);
    struct tf_cost_launch l;
    tf_cost_price(cm, &th, &l, key, PRIOR, 0, NULL, NULL);
    tf_cost_sample_begin(cm, &th, &l, 1, 0);
    dev_launch(1, 1 * MS);
    tf_cost_sample_end(cm, &th, &l, 1, 0, true);
    /* The app destroys its context with the measurement pending: the events died with it. */
    pthread_mutex_lock(&D.mu);
    for (uint32_t i = 1; i <= D.nev; i++)
        D.ev_live[i] = false; /* any use would now fail an assertion */
    pthread_mutex_unlock(&D.mu);
    tf_cost_ctx_gone(cm, D.ctx);
    int queries = D.queries;
    tf_cost_poll(cm);
    assert_int_equal(D.queries, queries);
    assert_int_equal(D.destroys, 0);
    assert_int_equal(atomic_load(&cm->npending), 0);
    /* A new context (at the same address, even) gets new events. */
    dev_advance(10 * MS);
    int creates = D.creates;
    tf_cost_price(cm, &th, &l, key, PRIOR, 0, NULL, NULL);
    assert_true(l.sample);
    tf_cost_sample_begin(cm, &th, &l, 1, 0);
    assert_true(l.slot >= 0);
    assert_int_equal(D.creates, creates + 2);
    dev_launch(1, 1 * MS);
    tf_cost_sample_end(cm, &th, &l, 1, 0, true);
}

static void every_slot_busy_falls_back_to_the_estimates(void **state)
{
    struct tf_cost_thread th = {0};
    /* TF_COST_SLOTS kernels that do not complete, on as many cold keys. */
    for (int i = 0; i < TF_COST_SLOTS; i++)
        launch(&th, tf_cost_key(0x9000 + (uintptr_t)i * 16, 1, 0, false), 1, 3600000 * MS, NULL);
    assert_int_equal(atomic_load(&cm->npending), TF_COST_SLOTS);
    uint64_t key = tf_cost_key(0xa000, 1, 0, false);
    assert_int_equal(launch(&th, key, 2, 1 * US, NULL), PRIOR);
    assert_int_equal(atomic_load(&cm->no_slot), 1);
    /* A measurement pending for TF_COST_STALE_NS is given up, its events released. */
    dev_advance(TF_COST_STALE_NS + 1);
    tf_cost_poll(cm);
    assert_int_equal(atomic_load(&cm->npending), 0);
    assert_int_equal(D.destroys, 2 * TF_COST_SLOTS);
}

static void stream_being_captured_is_never_measured(void **state)
{
    D.capturing = true;
    struct tf_cost_thread th = {0};
    uint64_t key = tf_cost_key(0xb000, 1, 0, false);
    for (int i = 0; i < 10; i++)
        assert_int_equal(launch(&th, key, 1, 1 * US, NULL), PRIOR);
    assert_int_equal(D.records, 0);
    D.capturing = false;
    launch(&th, key, 1, 1 * US, NULL);
    assert_int_equal(D.records, 2);
}

struct worker_arg {
    int id;
};

static void *worker(void *arg)
{
    struct worker_arg *a = arg;
    struct tf_cost_thread th = {0};
    for (int i = 0; i < 5000; i++) {
        uint64_t key = tf_cost_key(0xc000 + (uintptr_t)(i % 7) * 16, 1, 0, false);
        launch(&th, key, (uintptr_t)(a->id % MAXSTREAM), (uint64_t)(1 + i % 7) * US, NULL);
        dev_advance(1 * US);
    }
    return NULL;
}

static void many_threads_price_and_measure_at_once(void **state)
{
    pthread_t t[4];
    struct worker_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i].id = i;
        pthread_create(&t[i], NULL, worker, &a[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    /* Past every queued kernel (4 x 5000 of up to 7 us on shared streams: at most 140 ms),
     * so every sampled launch's end event has completed. */
    dev_advance(1000 * MS);
    tf_cost_poll(cm);
    assert_int_equal(atomic_load(&cm->npending), 0);
    for (int k = 0; k < 7; k++) {
        uint64_t est = tf_cost_estimate(cm, tf_cost_key(0xc000 + (uintptr_t)k * 16, 1, 0, false));
        assert_true(est >= (uint64_t)(1 + k) * US);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(cold_key_is_measured_at_its_first_launch_and_settled, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(second_cold_launch_waits_for_the_first_measurement, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(cold_kernel_is_charged_at_the_engines_scale_while_it_runs,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(cold_wait_is_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(estimate_follows_the_low_measurements, setup, teardown),
        cmocka_unit_test_setup_teardown(warm_key_takes_the_fast_path_and_is_measured_now_and_then,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(driver_without_events_charges_the_prior, setup, teardown),
        cmocka_unit_test_setup_teardown(failed_launch_or_record_gives_the_measurement_up, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(destroyed_context_events_are_dropped_never_used, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(every_slot_busy_falls_back_to_the_estimates, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(stream_being_captured_is_never_measured, setup, teardown),
        cmocka_unit_test_setup_teardown(many_threads_price_and_measure_at_once, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
