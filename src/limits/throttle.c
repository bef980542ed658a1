/* SPDX-License-Identifier: Apache-2.0
 *
 * Waiting for compute tokens (see throttle.h).
 */
#include "limits/throttle.h"

#include "common/log.h"
#include "limits/bucket.h"
#include "limits/shm.h"

#include <time.h>

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * TF_BUCKET_NS_PER_S + (uint64_t)ts.tv_nsec;
}

uint64_t tf_throttle_wait(const struct tf_shm_region *r, unsigned dev, int64_t cost,
                          uint64_t now_ns)
{
    return tf_throttle_wait_stop(r, dev, cost, now_ns, NULL);
}

uint64_t tf_throttle_wait_stop(const struct tf_shm_region *r, unsigned dev, int64_t cost,
                               uint64_t now_ns, const _Atomic(bool) *stop)
{
    const struct tf_shm_ldev *l = &r->lim->dev[dev];
    struct tf_shm_udev *d = &r->use->dev[dev];
    uint64_t start = now_ns, now = now_ns;
    for (;;) {
        uint64_t w = tf_bucket_take(&d->bucket, &l->bucket, cost, now);
        if (w == 0)
            break;
        if (!(atomic_load_explicit(&l->flags, memory_order_relaxed) & TF_SHM_DEV_COMPUTE_LIMIT))
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

void tf_throttle_watch_heartbeat(const struct tf_shm_region *r, _Atomic(int) *state,
                                 uint64_t now_ns, const char *subsys, const char *path)
{
    bool stale = tf_shm_heartbeat_stale(r, now_ns);
    int was = atomic_load_explicit(state, memory_order_relaxed);
    if (stale && !was && atomic_compare_exchange_strong(state, &was, 1)) {
        uint64_t hb = atomic_load_explicit(&r->lim->hdr.heartbeat_ns, memory_order_relaxed);
        tf_log(TF_LOG_WARN, subsys,
               "the limit engine's heartbeat in %s is %.1f s old (hypervisor gone?): keeping the "
               "last limits",
               path, (double)(now_ns - hb) / 1e9);
    } else if (!stale && was == 1 && atomic_compare_exchange_strong(state, &was, 0)) {
        tf_log(TF_LOG_INFO, subsys, "the limit engine's heartbeat in %s is back", path);
    }
}
