/* SPDX-License-Identifier: Apache-2.0
 *
 * Token-bucket state: the layouts shared between processes (embedded in the two parts of every
 * soft-isolation region, include/tf/shm.h) and reused in-process by the remote worker's hard
 * limits. The algorithm lives in src/limits/bucket.h; this header only pins the bytes. Tokens
 * are abstract units; the limiter uses device-nanoseconds (1 token = 1 ns of GPU time), so
 * `rate` is "GPU ns granted per wall second" and 1e9 is a whole device.
 *
 * A bucket is two structs with different writers, so that they can live in memory with
 * different protections: its limit (rate and capacity: what the owner grants, in the limits
 * part of a region, read-only to takers) and its level (tokens and the refill clock, in the
 * usage part, written by every taker). Takers refill the level lazily at the limit's rate.
 *
 * Every field is a lock-free 64-bit atomic, so any process may be killed at any instant
 * without leaving anything locked. Fields are native-endian (little-endian on every
 * supported host); the region never crosses machines.
 *
 * Level (struct tf_bucket)
 *   OFFSET SIZE FIELD     WRITERS             DESCRIPTION
 *   0      8    tokens    takers, refillers,  current tokens; negative = debt after a take
 *                         owner (true-ups)    larger than the bucket (long kernels)
 *   8      8    last_ns   refillers           CLOCK_MONOTONIC ns up to which refill has been
 *                                             credited; 0 = not started
 *   16     8    refilled  refillers           tokens ever added by refills (the owner measures
 *                                             consumption from tokens and refilled)
 *   24     8    reserved                      zero
 *
 * Limit (struct tf_bucket_limit)
 *   OFFSET SIZE FIELD     WRITERS             DESCRIPTION
 *   0      8    rate      owner (engine)      tokens added per second
 *   8      8    capacity  owner (engine)      maximum tokens (the burst), >= 1
 */
#ifndef TF_BUCKET_H
#define TF_BUCKET_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct tf_bucket {
    _Atomic(int64_t) tokens;
    _Atomic(uint64_t) last_ns;
    _Atomic(int64_t) refilled;
    uint64_t reserved;
};

struct tf_bucket_limit {
    _Atomic(uint64_t) rate;
    _Atomic(int64_t) capacity;
};

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free (shared memory)");
_Static_assert(sizeof(_Atomic(uint64_t)) == 8, "64-bit atomics must be plain 8-byte words");
_Static_assert(offsetof(struct tf_bucket, tokens) == 0, "bucket layout");
_Static_assert(offsetof(struct tf_bucket, last_ns) == 8, "bucket layout");
_Static_assert(offsetof(struct tf_bucket, refilled) == 16, "bucket layout");
_Static_assert(sizeof(struct tf_bucket) == 32, "bucket layout");
_Static_assert(offsetof(struct tf_bucket_limit, rate) == 0, "bucket limit layout");
_Static_assert(offsetof(struct tf_bucket_limit, capacity) == 8, "bucket limit layout");
_Static_assert(sizeof(struct tf_bucket_limit) == 16, "bucket limit layout");

#endif
