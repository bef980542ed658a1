/* SPDX-License-Identifier: Apache-2.0
 *
 * Waiting for compute tokens (see throttle.h).
 */
#include "limits/throttle.h"

#include "limits/bucket.h"

#include <time.h>

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * TF_BUCKET_NS_PER_S + (uint64_t)ts.tv_nsec;
}

uint64_t tf_throttle_wait(struct tf_shm_device *d, int64_t cost, uint64_t now_ns)
{
    return tf_throttle_wait_stop(d, cost, now_ns, NULL);
}

uint64_t tf_throttle_wait_stop(struct tf_shm_device *d, int64_t cost, uint64_t now_ns,
                               const _Atomic(bool) *stop)
{
    uint64_t start = now_ns, now = now_ns;
    for (;;) {
        uint64_t w = tf_bucket_take(&d->bucket, cost, now);
        if (w == 0)
            break;
        if (!(atomic_load_explicit(&d->flags, memory_order_relaxed) & TF_SHM_DEV_COMPUTE_LIMIT))
            break; /* the limit was lifted while we waited */
        if (stop && atomic_load_explicit(stop, memory_order_relaxed))
            break; /* the caller gave up (shutdown) */
        if (w < TF_THROTTLE_NAP_MIN_NS)
            w = TF_THROTTLE_NAP_MIN_NS;
        if (w > TF_THROTTLE_NAP_MAX_NS)
            w = TF_THROTTLE_NAP_MAX_NS;
        struct timespec ts = {0, (long)w};
        nanosleep(&ts, NULL);
        now = mono_ns();
    }
    atomic_fetch_add_explicit(&d->throttle_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&d->throttle_ns, now - start, memory_order_relaxed);
    return now - start;
}
