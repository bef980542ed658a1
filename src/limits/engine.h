/* SPDX-License-Identifier: Apache-2.0
 *
 * The limit engine: the hypervisor-side loop of soft isolation. Every period it, for each
 * registered workload region,
 *   - reclaims PID slots of processes that died (their VRAM reservations come back);
 *   - resolves each registered process to the PID the usage source reports (NSpid + start
 *     time, so container PID namespaces work);
 *   - samples per-device GPU time per process (one sample per device per step, shared by
 *     all workloads) and attributes it to workloads by PID;
 *   - reads what the workload's launches took from each bucket (tf_bucket_consumed: the
 *     launchers' own measured costs, src/limits/costmodel.h);
 *   - runs the per-(workload, device) controller (src/limits/controller.h): bucket rate and
 *     capacity, the prior cost of an unmeasured launch, the calibration of the launchers'
 *     measurements, and the true-up debit of the tokens;
 *   - audits the usage part (the app side writes it: tokens above what the engine granted,
 *     a device's VRAM reservation below its processes') and repairs what it finds;
 *   - publishes share, utilisation, observed VRAM and the heartbeat (in the limits part).
 * Limits themselves are read from the region each step, so whoever rewrites them (tfctl
 * limits set, the autoscaler through the hypervisor) changes them live.
 *
 * Ownership: regions (the memory a struct tf_shm_region points to) are owned by the caller
 * and must outlive their registration. The
 * engine owns nothing else but itself. Not thread-safe: one thread drives an engine (the
 * hypervisor's loop, tfctl limits serve, or a tf_engine_thread: the limiter's standalone
 * controller, tf-worker's hard compute limit).
 */
#ifndef TF_LIMITS_ENGINE_H
#define TF_LIMITS_ENGINE_H

#include "limits/controller.h"
#include "limits/usage.h"
#include "limits/shm.h"

#include <stdbool.h>
#include <stdint.h>

#define TF_ENGINE_MAX_WORKLOADS 256

struct tf_engine_opts {
    uint32_t period_ms;              /* the step period (heartbeat staleness derives from it) */
    struct tf_usage_source usage;    /* sample == NULL: no feedback, feed-forward only */
    uint64_t self_owner;             /* caller's owner id (tf_proc_self_owner) for reaping */
    uint64_t pidns;                  /* caller's pid-namespace inode (tf_proc_pidns(0)) */
    const struct tf_ctl_params *ctl; /* NULL: tf_ctl_default_params */
    bool no_reap;                    /* do not reclaim dead PID slots */
    /* The compute cross-check (see tf_engine_step): may the engine pause (SIGSTOP/SIGCONT)
     * process HOST_PID, which workload NAME's usage part names as its own? The caller checks
     * it independently (the usage part is the app's to write, so its PID slots may name
     * anyone). NULL: under-reporters are flagged and logged, never paused. */
    bool (*may_pause)(void *ctx, const char *name, uint32_t host_pid);
    void *pause_ctx;
};

#define TF_ENGINE_LIE_WINDOWS 3
#define TF_ENGINE_LIE_WINDOWS_LAUNCHED 30
#define TF_ENGINE_PAUSE_MAX 10          /* steps a process stays paused before it runs one */
#define TF_ENGINE_LIE_MIN_NS 1000000ull /* 1 ms of GPU time in a window */

struct tf_engine;

/* Returns NULL on allocation failure. */
struct tf_engine *tf_engine_new(const struct tf_engine_opts *o);
void tf_engine_destroy(struct tf_engine *e);

/* Registers a workload region (R is copied; the parts it points to are not); NAME (copied)
 * is for log lines. Returns its id >= 0, or TF_ENOSPC. */
int tf_engine_add(struct tf_engine *e, const struct tf_shm_region *r, const char *name);
void tf_engine_remove(struct tf_engine *e, int id);

/* One step at NOW_NS (CLOCK_MONOTONIC).
 *
 * Compute cross-check: the app side reports its compute use (launches counted in its PID
 * slot, tokens taken from its bucket), the device measures it (GPU time per process from the
 * usage source). A process the source charges at least TF_ENGINE_LIE_MIN_NS of GPU time in
 * TF_ENGINE_LIE_WINDOWS measured windows in a row while its slot reports no launch at all
 * (an honest limiter counts every one), or TF_ENGINE_LIE_WINDOWS_LAUNCHED windows for a
 * process that did report launches before (its GPU time might be one long kernel), is an
 * under-reporter: logged once per episode, counted
 * in the limits part (`underreported`) and its stats, its GPU time debited from the bucket
 * like everyone's (the engine refills the bucket at the limit's rate while one is caught, so
 * the debt is paid off in time, not by the launches the liar never makes); and, where
 * may_pause allows it, it is paused (SIGSTOP) while the bucket is in debt and resumed
 * (SIGCONT) once paid -- its GPU time then averages its limit; never more than
 * TF_ENGINE_PAUSE_MAX steps in a row (work it queued may still show as GPU time while it is
 * stopped), then it runs for one. Paused processes are resumed
 * when they stop lying, their workload is removed or the engine is destroyed. */
void tf_engine_step(struct tf_engine *e, uint64_t now_ns);

/* What the last step measured for workload ID, device DEV. */
struct tf_engine_dev_stats {
    bool valid;         /* a window was measured */
    uint64_t window_ns; /* its length */
    uint64_t busy_ns;   /* GPU time attributed to the workload in it */
    uint64_t launches;  /* launches in it */
    int64_t charged;    /* tokens they took from the bucket */
    uint32_t share_bp;  /* busy / window */
    uint32_t rate_bp;   /* controller output */
    uint64_t launch_cost;
    uint32_t cost_scale; /* calibration published for the launchers (65536 = 1.0) */
    bool throttled;
    bool blind;      /* launches but no GPU time attributed for a while */
    unsigned forged; /* TF_SHM_FORGED_* the audit found (and repaired) in this step */
    int liars;       /* processes caught under-reporting (see tf_engine_step) */
    int paused;      /* of them, paused now */
};
int tf_engine_stats(const struct tf_engine *e, int id, unsigned dev,
                    struct tf_engine_dev_stats *out);

/* --- an engine on a thread of its own ------------------------------------------------------ */

struct tf_engine_thread;

/* Starts a thread that steps E every period (tf_engine_opts.period_ms, on CLOCK_MONOTONIC
 * deadlines) until tf_engine_thread_stop. The thread has every signal blocked (an app's
 * handlers never run on it) and is named NAME (at most 15 characters). E must outlive the
 * thread, and nothing else may step or change E while it runs. 0, TF_ENOMEM or TF_EIO. */
int tf_engine_thread_start(struct tf_engine *e, const char *name, struct tf_engine_thread **out);
/* Stops the thread at once (it is woken, not waited out), joins it and frees T. NULL is
 * fine. */
void tf_engine_thread_stop(struct tf_engine_thread *t);

#endif
