/* SPDX-License-Identifier: Apache-2.0
 *
 * Waiting for compute tokens (src/limits/throttle.h), as the limiter's launch hook and
 * tf-worker's launches do: a short bucket makes the launcher sleep until the refill covers
 * it and counts the throttle; a limit lifted meanwhile releases it at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "limits/bucket.h"
#include "limits/throttle.h"

#include <pthread.h>
#include <time.h>

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A one-device region under a compute limit whose bucket runs at RATE with CAP. */
static struct tf_shm_map device(uint64_t rate, int64_t cap)
{
    struct tf_shm_config c;
    memset(&c, 0, sizeof(c));
    c.ndev = 1;
    c.dev[0].flags = TF_SHM_DEV_PRESENT | TF_SHM_DEV_COMPUTE_LIMIT;
    c.dev[0].compute_limit_bp = 1000;
    struct tf_shm_map m;
    assert_int_equal(tf_shm_anon(&c, &m), 0);
    tf_bucket_init(&m.r.use->dev[0].bucket, &m.r.lim->dev[0].bucket, rate, cap, mono_ns());
    return m;
}

static void an_empty_bucket_makes_the_launch_wait_for_the_refill(void **state)
{
    /* 10 % of a device, 1 ms of burst; 1 ms in debt: the next kernel waits ~10 ms. */
    struct tf_shm_map m = device(100000000u, 1000000);
    struct tf_shm_udev *d = &m.r.use->dev[0];
    assert_true(tf_bucket_try_take(&d->bucket, 2000000));
    uint64_t t0 = mono_ns();
    uint64_t waited = tf_throttle_wait(&m.r, 0, 1000000, t0);
    uint64_t took = mono_ns() - t0;
    assert_true(waited >= 5000000u);        /* the refill really was waited for */
    assert_true(took < 2000000000u);        /* loosely bounded: a loaded machine */
    assert_true(waited <= took + 1000000u); /* what it reports is what it took */
    assert_int_equal(atomic_load(&d->throttle_count), 1);
    assert_int_equal(atomic_load(&d->throttle_ns), waited);
    assert_true(atomic_load(&d->bucket.tokens) <= 0); /* and the tokens were taken */
    tf_shm_unmap(&m);
}

static void *lift_later(void *arg)
{
    struct tf_shm_ldev *d = arg;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    atomic_fetch_and(&d->flags, ~TF_SHM_DEV_COMPUTE_LIMIT);
    return NULL;
}

static void a_lifted_limit_releases_a_waiting_launch(void **state)
{
    struct tf_shm_map m = device(0, 1000000); /* never refills: only the lift ends the wait */
    assert_true(tf_bucket_try_take(&m.r.use->dev[0].bucket, 1000000));
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, lift_later, &m.r.lim->dev[0]), 0);
    uint64_t t0 = mono_ns();
    tf_throttle_wait(&m.r, 0, 1000000, t0);
    uint64_t took = mono_ns() - t0;
    pthread_join(th, NULL);
    assert_true(took >= 40000000u && took < 2000000000u);
    assert_int_equal(atomic_load(&m.r.use->dev[0].throttle_count), 1);
    tf_shm_unmap(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_empty_bucket_makes_the_launch_wait_for_the_refill),
        cmocka_unit_test(a_lifted_limit_releases_a_waiting_launch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
