/* SPDX-License-Identifier: Apache-2.0
 *
 * The launch cost model: what one kernel launch costs in GPU nanoseconds, measured on the
 * device itself, so a compute limit charges each launch what it really uses, whatever the
 * kernel length, and needs no coarse utilisation sample to find out. Shared by the soft
 * limiter (libtf_limiter.so, the app's own launches) and tf-worker (hard isolation, the
 * launches it issues for its clients).
 *
 * Method
 * - Estimates are kept per key: the kernel function (or graph) and the size class of the
 *   launch (log2 of its threads), so a kernel used at several sizes has one estimate each.
 * - A launch is measured by recording a timing event on the app's own stream just before and
 *   just after it (cuEventRecord on that stream; no synchronisation is added) and reading
 *   the elapsed time later, when the end event has completed (cuEventQuery, never a wait).
 *   Events come from a small pool, created lazily on the context that launches and reused.
 * - What is measured: the first launches of each key, one after the other (until
 *   TF_COST_WARM_SAMPLES measurements: the first ones, on a stream that is just starting,
 *   include its idle gaps; once it runs ahead they do not), then one launch in `interval`
 *   per thread, where the interval is set so
 *   that measuring costs about TF_COST_BUDGET_NS of host time per launch on average (a
 *   measurement costs a few microseconds on a GPU: one launch in a few thousand).
 * - The estimate follows the lowest recent measurements: a measurement below it pulls it
 *   down half of the way, one above it moves it up by at most a sixteenth. The
 *   elapsed time between two events includes time the stream waited for other work (another
 *   process's kernel on a time-sliced GPU), which only ever lengthens a measurement; the
 *   unbiased part is calibrated by the limit engine against the driver's own accounting of
 *   the workload's GPU time (the `scale` passed to tf_cost_price).
 * - Cold keys: the first launch of a key is charged a prior (the engine's average cost per
 *   launch) and measured; a second launch of the same key waits (bounded by
 *   TF_COST_COLD_WAIT_NS, sleeping) until that measurement is in, so a stream of long
 *   kernels cannot run ahead unpaid and a stream of short ones is priced right after one
 *   kernel. While the second launch waits, the kernel being measured is charged as it
 *   runs (the time since its start event was seen complete), in the same windows in which
 *   the driver accounts its GPU time. Once measured, the launches priced above their
 *   measurement are settled: the difference is returned as a correction for the caller to
 *   refund in its bucket. What they were under-charged beyond that is not debited here: the
 *   limit engine's true-up charges the GPU time the driver accounted for them, and a debit
 *   at the measurement would come after the engine's and charge it twice. The launch that
 *   finds them so may borrow what they were under-charged from the bucket (it would have
 *   found those tokens there had the first launch been priced right): a stream of long
 *   kernels below its cap is not held at its second kernel, and one at its cap repays the
 *   loan before its third.
 * - Without a usable timer (no event support, all sample slots busy, a stream being
 *   captured into a graph) launches are charged the estimate they have, or the prior.
 *
 * The driver is reached only through struct tf_gpu_timer, so this file needs no CUDA header
 * and is tested against a scripted device. Handles (contexts, streams, events) are opaque
 * integers.
 *
 * Thread-safety: tf_cost_price, tf_cost_sample_begin/end, tf_cost_poll and tf_cost_ctx_gone
 * are thread-safe and lock-free (sample slots are claimed by CAS); a struct tf_cost_thread
 * belongs to one thread. No allocation after tf_costmodel_init.
 */
#ifndef TF_LIMITS_COSTMODEL_H
#define TF_LIMITS_COSTMODEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define TF_COST_TABLE 2048              /* keys (power of two); later keys get the prior */
#define TF_COST_SLOTS 32                /* launches being measured at once */
#define TF_COST_WARM_SAMPLES 16         /* measurements before a key takes the fast path */
#define TF_COST_COLD_WAIT_NS 200000000u /* longest wait for a cold key's first measurement */
#define TF_COST_STALE_NS 10000000000ull /* a measurement pending this long is given up */
#define TF_COST_BUDGET_NS 2             /* host ns per launch spent measuring, on average */
#define TF_COST_INTERVAL_MIN 64         /* measure at most one launch in this many ... */
#define TF_COST_INTERVAL_MAX 8192       /* ... and at least one in this many, per thread */
#define TF_COST_POLL_EVERY 16           /* launches between looks at pending measurements */
#define TF_COST_SCALE_ONE 65536u        /* scale factors are fixed point, 16 fraction bits */

/* tf_gpu_timer return codes beyond 0 (success) */
#define TF_GPU_PENDING 1        /* query: the event has not completed yet */
#define TF_GPU_FAILED (-1)      /* this call failed */
#define TF_GPU_UNSUPPORTED (-2) /* the driver cannot do this at all: stop measuring */

/* The driver as the cost model needs it. Every function returns 0 on success, else one of
 * the TF_GPU_* codes; query returns 0 (completed) or TF_GPU_PENDING. ctx_current gives the calling
 * thread's context. capturing (optional) returns nonzero when STREAM is being captured into a graph
 * (nothing may be recorded then). enter/leave (optional) bracket each group of calls (the
 * CUDA adapters switch the thread to relaxed stream-capture mode there, so another thread's
 * capture is never disturbed). now_ns and nap are the clock and the sleep (injected for
 * tests). */
struct tf_gpu_timer {
    void *u;
    int (*ctx_current)(void *u, uintptr_t *ctx);
    int (*event_create)(void *u, uintptr_t *ev);
    void (*event_destroy)(void *u, uintptr_t ev);
    int (*record)(void *u, uintptr_t ev, uintptr_t stream, int ptsz);
    int (*query)(void *u, uintptr_t ev);
    int (*elapsed_ns)(void *u, uintptr_t start, uintptr_t end, uint64_t *ns);
    int (*capturing)(void *u, uintptr_t stream, int ptsz);
    void (*enter)(void *u, int *saved);
    void (*leave)(void *u, int saved);
    uint64_t (*now_ns)(void);
    void (*nap)(uint64_t ns);
};

/* One key's estimate. `fast` is the estimate when nothing is left to do for the key (it is
 * warm and has nothing to settle), else 0: the fast path reads only that. */
struct tf_cost_entry {
    _Atomic(uint64_t) key;         /* 0: free */
    _Atomic(uint64_t) est;         /* GPU ns per launch; 0: not measured yet */
    _Atomic(uint64_t) fast;        /* est, or 0 while the key needs the slow path */
    _Atomic(uint64_t) cold_tokens; /* tokens charged at the prior before the first measurement */
    _Atomic(uint64_t) cold_paid;   /* and charged while the first measured launch ran */
    _Atomic(uint32_t) cold_n;      /* the launches charged so */
    _Atomic(uint16_t) nsamples;    /* measurements so far (saturating) */
    _Atomic(uint16_t) inflight;    /* measurements recorded, not yet read */
};

enum { TF_COST_FREE = 0, TF_COST_BUSY = 1, TF_COST_PENDING = 2 };

/* A launch being measured. The fields other than state, dead and ctx belong to whoever
 * moved state away from FREE or PENDING (by CAS). */
struct tf_cost_slot {
    _Atomic(uint32_t) state;      /* TF_COST_* */
    _Atomic(uint32_t) dead;       /* its context was destroyed: drop the events, never touch them */
    _Atomic(uintptr_t) ctx;       /* the context its events belong to */
    uintptr_t ev[2];              /* start, end; 0: not created */
    struct tf_cost_entry *e;      /* the key measured */
    uint64_t since_ns;            /* when the end event was recorded */
    _Atomic(uint64_t) started_ns; /* a cold key's launch: when its start event was seen
                                   * complete (the kernel running), 0: not yet ... */
    _Atomic(uintptr_t) cold_e;    /* ... and its entry (for its waiters to find it) */
    uint64_t host_ns;             /* host time the start record took */
};

struct tf_costmodel {
    struct tf_gpu_timer t;
    bool enabled;         /* a timer was given */
    _Atomic(bool) broken; /* events cannot be created on this driver: stop trying */
    _Atomic(uint32_t) interval;
    _Atomic(uint32_t) npending;
    _Atomic(uint64_t) sample_cost_ns; /* smoothed host cost of one measurement */
    /* counters (diagnostics, tests) */
    _Atomic(uint64_t) samples, cold_waits, cold_wait_ns, no_slot;
    struct tf_cost_slot slot[TF_COST_SLOTS];
    struct tf_cost_entry tab[TF_COST_TABLE];
};

/* Per thread (or per connection) state; zero-initialise it. */
struct tf_cost_thread {
    uint64_t key; /* 1-entry cache */
    struct tf_cost_entry *e;
    uint32_t countdown; /* launches until the next slow-path visit */
    uint32_t span;      /* what countdown was last set to */
    uint32_t since;     /* launches since this thread last measured one */
};

/* One launch, on the caller's stack (filled by tf_cost_price). */
struct tf_cost_launch {
    struct tf_cost_entry *e; /* NULL: no estimate kept (table full, key 0) */
    bool sample;             /* measure this launch (call tf_cost_sample_begin/end) */
    int slot;                /* claimed by tf_cost_sample_begin, -1: none */
    int64_t correction;      /* tokens to debit now for earlier launches of a key measured at
                              * last: 0, or negative (a refund of their over-charge) */
    int64_t borrow;          /* > 0: those launches were under-charged by this much (the engine
                              * debits it as it sees their GPU time): this launch may take its
                              * tokens while the bucket holds more than -borrow (once) */
};

/* Initialises CM (not thread-safe). T NULL: nothing is measured, every launch costs its
 * prior. */
void tf_costmodel_init(struct tf_costmodel *cm, const struct tf_gpu_timer *t);

/* The key of a launch of kernel FUNC with THREADS threads in all on device entry DEV (graph
 * launches pass the graph exec and 0 threads with GRAPH true). Never 0. User-space pointers
 * fit in 48 bits: the device, the graph flag and the size class go above them, and the top
 * bit keeps every key non-zero. */
static inline uint64_t tf_cost_key(uintptr_t func, uint64_t threads, unsigned dev, bool graph)
{
    uint64_t cls = threads ? (uint64_t)(64 - __builtin_clzll(threads)) : 0;
    return (uint64_t)func ^ ((uint64_t)(dev & 0xf) << 48) ^ ((uint64_t)graph << 52) ^ (cls << 56) ^
           (UINT64_C(1) << 63);
}

/* Tokens (GPU ns) to charge for a launch with KEY: its estimate times SCALE
 * (TF_COST_SCALE_ONE = 1.0; 0 also means 1.0), or PRIOR while the key is not measured. May
 * wait (sleeping, bounded) for a cold key's first measurement; meanwhile the kernel being
 * measured is charged to bucket B (level, NULL: nowhere; BL its limit) as it runs, from the moment
 * its start event is seen complete, so that its GPU time is paid when the driver accounts it (the
 * engine's true-up sees it charged, not owed). Fills L. */
struct tf_bucket;
struct tf_bucket_limit;
int64_t tf_cost_price_slow(struct tf_costmodel *cm, struct tf_cost_thread *th,
                           struct tf_cost_launch *l, uint64_t key, uint64_t prior, uint32_t scale,
                           struct tf_bucket *b, const struct tf_bucket_limit *bl);

static inline int64_t tf_cost_scaled(uint64_t est, uint32_t scale)
{
    if (scale == 0 || scale == TF_COST_SCALE_ONE)
        return (int64_t)est;
    unsigned __int128 v = (unsigned __int128)est * scale >> 16;
    return v > (unsigned __int128)(INT64_C(1) << 62) ? INT64_C(1) << 62 : (int64_t)v;
}

/* The fast path alone: KEY's price if it is this thread's warm key with nothing due (no
 * measurement, nothing to settle), consuming one launch of its countdown; else -1 (call
 * tf_cost_price). */
static inline int64_t tf_cost_price_fast(struct tf_cost_thread *th, uint64_t key, uint32_t scale)
{
    if (th->key == key && th->e && th->countdown > 1) {
        uint64_t est = atomic_load_explicit(&th->e->fast, memory_order_relaxed);
        if (est) {
            th->countdown--;
            return tf_cost_scaled(est, scale);
        }
    }
    return -1;
}

static inline int64_t tf_cost_price(struct tf_costmodel *cm, struct tf_cost_thread *th,
                                    struct tf_cost_launch *l, uint64_t key, uint64_t prior,
                                    uint32_t scale, struct tf_bucket *b,
                                    const struct tf_bucket_limit *bl)
{
    if (th->key == key && th->e && th->countdown > 1) {
        uint64_t est = atomic_load_explicit(&th->e->fast, memory_order_relaxed);
        if (est) {
            th->countdown--;
            l->e = th->e;
            l->sample = false;
            l->slot = -1;
            l->correction = 0;
            l->borrow = 0;
            return tf_cost_scaled(est, scale);
        }
    }
    return tf_cost_price_slow(cm, th, l, key, prior, scale, b, bl);
}

/* Around the real launch, when L->sample: begin records the start event on STREAM (PTSZ: the
 * launch used the per-thread default stream semantics) right before it; end records the end
 * event right after it, or gives the measurement up if the launch failed (LAUNCHED false). */
void tf_cost_sample_begin(struct tf_costmodel *cm, struct tf_cost_thread *th,
                          struct tf_cost_launch *l, uintptr_t stream, int ptsz);
void tf_cost_sample_end(struct tf_costmodel *cm, struct tf_cost_thread *th,
                        struct tf_cost_launch *l, uintptr_t stream, int ptsz, bool launched);

/* Reads the measurements that have completed. Never waits. */
void tf_cost_poll(struct tf_costmodel *cm);

/* CTX was destroyed (or reset): its events died with it and are dropped, never used again. */
void tf_cost_ctx_gone(struct tf_costmodel *cm, uintptr_t ctx);

/* In a forked child: the parent's events and pending measurements do not exist here. */
void tf_cost_after_fork(struct tf_costmodel *cm);

/* The current estimate of KEY (0: not measured or not kept). */
uint64_t tf_cost_estimate(struct tf_costmodel *cm, uint64_t key);

#endif
