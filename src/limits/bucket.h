/* SPDX-License-Identifier: Apache-2.0
 *
 * Lock-free token bucket over a level (struct tf_bucket) and its limit (struct
 * tf_bucket_limit: rate and capacity, include/tf/bucket.h), usable on shared memory by many
 * threads of many processes at once; the two may live in different mappings (a region's
 * limits part is read-only to takers), so every function names what it writes. Pure: no clock, no
 * syscalls, no allocation; the caller passes CLOCK_MONOTONIC nanoseconds where time matters. Every
 * function is thread-safe and async-kill-safe (a taker killed at any instant leaves a consistent
 * bucket).
 *
 * Semantics
 * - A take of COST is granted while the bucket is in credit (tokens > 0), and subtracts the
 *   whole COST: a take larger than what the bucket holds (a 100 ms kernel with 30 ms of
 *   tokens, or in a 20 ms bucket) borrows the rest, driving tokens negative, and later takes
 *   wait until that debt is repaid: long work is paid in full, never refused for being
 *   long. A workload below its limit repays its debt while it is idle and never waits; one
 *   at its limit gains nothing by borrowing (each take needs the last one repaid), and one
 *   take is the most any taker can borrow, since takes are granted by one atomic step each.
 * - Refill is lazy: whoever finds the bucket short claims the time elapsed since last_ns (by
 *   CAS, so concurrent refillers never double-count) and adds rate * elapsed, clamped to
 *   capacity. Fractions of a token are carried in last_ns, never lost. Over any interval T
 *   the tokens granted never exceed what the bucket held at its start (at most the
 *   capacity) + rate * T + the largest take.
 * - tf_bucket_try_take reads no clock: the unthrottled path is one load and one atomic add.
 * - Consumption is not counted on the take path: refills add what they change tokens by to
 *   `refilled`, so whoever adjusts a bucket (the engine) knows what takers consumed over an
 *   interval from tokens and refilled at both ends and its own adjustments
 *   (tf_bucket_consumed).
 * - Costs are expected to be sane (a launch charges at most seconds of GPU time): takes do
 *   not clamp the debt; tf_bucket_adjust does.
 */
#ifndef TF_LIMITS_BUCKET_H
#define TF_LIMITS_BUCKET_H

#include "tf/bucket.h"

#include <stdbool.h>
#include <stdint.h>

#define TF_BUCKET_NS_PER_S UINT64_C(1000000000)

/* Initialises a full bucket: level B and limit L (not thread-safe: do it before sharing
 * them). CAPACITY is clamped to 1..2^61 here and wherever it is read. */
void tf_bucket_init(struct tf_bucket *b, struct tf_bucket_limit *l, uint64_t rate, int64_t capacity,
                    uint64_t now_ns);

/* Changes rate and capacity live (tokens above the new capacity are dropped by the next
 * refill). CAPACITY is clamped to 1..2^61. Writes L only. */
void tf_bucket_set(struct tf_bucket_limit *l, uint64_t rate, int64_t capacity);

/* Takes COST tokens if the bucket is in credit (tokens > 0). No clock. */
bool tf_bucket_try_take(struct tf_bucket *b, int64_t cost);
/* The same, granted while tokens > -LIMIT (a one-off loan the caller is entitled to; the
 * next take needs the bucket back in credit). LIMIT <= 0: tf_bucket_try_take. */
bool tf_bucket_try_borrow(struct tf_bucket *b, int64_t cost, int64_t limit);

/* Credits the time since the last refill at L's rate. Returns the tokens added (0 if another
 * thread claimed the interval, or less than one token has accrued). */
int64_t tf_bucket_refill(struct tf_bucket *b, const struct tf_bucket_limit *l, uint64_t now_ns);

/* Adds DELTA tokens (negative: a debit, e.g. the engine charging GPU time a launch estimate
 * missed; positive: a refund), never above capacity and never below -2^62. Returns the new
 * token count. */
int64_t tf_bucket_adjust(struct tf_bucket *b, const struct tf_bucket_limit *l, int64_t delta);
/* The same, except that a refund may fill up to CEILING when that is above the capacity
 * (tokens above the capacity are spent before the next refill, never dropped, so this grants
 * a one-off credit). Returns the change actually made (after the clamps). */
int64_t tf_bucket_apply(struct tf_bucket *b, const struct tf_bucket_limit *l, int64_t delta,
                        int64_t ceiling);

/* Nanoseconds until a take of COST could succeed at L's rate (the bucket back in credit),
 * ignoring refill not yet credited; 0 if it could succeed now; UINT64_MAX if the rate is 0. */
uint64_t tf_bucket_wait_ns(const struct tf_bucket *b, const struct tf_bucket_limit *l,
                           int64_t cost);

/* A reading of B for tf_bucket_consumed. */
struct tf_bucket_mark {
    int64_t tokens, refilled;
};
void tf_bucket_mark(const struct tf_bucket *b, struct tf_bucket_mark *m);
/* Tokens consumed by takes (and by adjustments other than ADJUSTED, the caller's own) since
 * mark PREV, which is then moved to now. Exact over consecutive intervals (what one interval
 * misses at its edge the next one counts). */
int64_t tf_bucket_consumed(const struct tf_bucket *b, struct tf_bucket_mark *prev,
                           int64_t adjusted);

/* try_take, then refill at NOW_NS and try again. Returns 0 when the tokens were taken, else
 * the suggested wait in ns (>= 1; UINT64_MAX if the rate is 0). */
uint64_t tf_bucket_take(struct tf_bucket *b, const struct tf_bucket_limit *l, int64_t cost,
                        uint64_t now_ns);

#endif
