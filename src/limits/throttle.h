/* SPDX-License-Identifier: Apache-2.0
 *
 * The taking side of a compute limit: what a launcher does when the bucket of its device
 * entry (include/tf/shm.h: the level in the usage part, rate and capacity in the limits part)
 * is short. Shared by libtf_limiter.so (soft isolation: the app's
 * launching thread waits) and tf-worker (hard isolation: the client's connection thread
 * waits before it issues the launch to the driver). The bucket itself is src/limits/bucket.h;
 * this adds only the bounded sleeping and the throttle counters.
 *
 * Thread-safe; no lock, no allocation. The caller must be allowed to sleep.
 */
#ifndef TF_LIMITS_THROTTLE_H
#define TF_LIMITS_THROTTLE_H

#include "limits/shm.h"

#include <stdbool.h>
#include <stdint.h>

#define TF_THROTTLE_NAP_MIN_NS 50000u    /* shortest sleep between attempts */
#define TF_THROTTLE_NAP_MAX_NS 10000000u /* longest: a lifted limit is seen within 10 ms */

/* Takes COST tokens from the bucket of R's device DEV, sleeping in naps of the bucket's own
 * estimate clamped to [TF_THROTTLE_NAP_MIN_NS, TF_THROTTLE_NAP_MAX_NS] (never a spin) until
 * they are taken or the device's compute limit is lifted. Counts one throttle and the time
 * waited in the usage part (throttle_count, throttle_ns). NOW_NS is CLOCK_MONOTONIC at the
 * call. Returns the ns waited. */
uint64_t tf_throttle_wait(const struct tf_shm_region *r, unsigned dev, int64_t cost,
                          uint64_t now_ns);
/* The same, and also returns (the tokens not taken) once *STOP is true, seen within one nap
 * (STOP NULL: never). For a waiter that must not depend on the region's flags to be let
 * go: tf-worker on a region the hypervisor owns, at shutdown. */
uint64_t tf_throttle_wait_stop(const struct tf_shm_region *r, unsigned dev, int64_t cost,
                               uint64_t now_ns, const _Atomic(bool) *stop);

/* A taker's watch on its region's engine: when R's heartbeat turns stale (the hypervisor is
 * gone) one WARN line, and one INFO line when it is back, both naming PATH under SUBSYS;
 * *STATE (0 fresh, 1 stale; the caller's, zero-initialised) makes each transition log once
 * across threads. Nothing else changes: the last limits stay, the bucket keeps refilling at
 * its last rate. */
void tf_throttle_watch_heartbeat(const struct tf_shm_region *r, _Atomic(int) *state,
                                 uint64_t now_ns, const char *subsys, const char *path);

#endif
