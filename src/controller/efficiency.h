/* SPDX-License-Identifier: Apache-2.0
 *
 * The efficiency reconcilers of seed 002 (docs/efficiency.md), run by the elected leader after
 * the other reconcilers on every pass:
 *   - autoscaling (autoscaler.c, with --enable-auto-scale): per TensorFusionWorkload whose
 *     autoscaling is on, every evaluation interval, reads its tf_worker_usage history from
 *     GreptimeDB (greptime.h), runs the core recommender, writes status.recommendation and
 *     applies the recommendation to its pods: the allocator reservation is resized
 *     (tf_extender_resize) and the pods' normalised resource annotations are patched, which
 *     the hypervisor's node agent turns into new limits;
 *   - node compaction (compactor.c): per GPUPool every nodeCompaction.period (counted from
 *     when this controller started leading) and on a fresh tensor-fusion.ai/manual-compaction
 *     annotation, runs the core planner over the pool's nodes and releases the nodes it picks
 *     (label tensor-fusion.ai/should-delete=true; Karpenter pools: delete the NodeClaim too);
 *   - defragmentation (defragger.c): per GPUPool with defrag enabled, when its cron schedule
 *     fires in its timezone, plans a run with the core planner and evicts its pods one at a
 *     time through the Eviction API (effplan.h says when the next one goes).
 * Decisions are recorded as Events on the GPUPool or the workload.
 *
 * Time: every planner gets "now" from the wall clock plus opts.clock_offset_ms (0 in
 * production; tests shift the clock to reach a schedule's fire time).
 *
 * Threads: tf_efficiency_once runs on one thread at a time (the leader's loop); the pool
 * handlers run on the pool informer's thread and only record when a manual-compaction value
 * was first seen (so a pass that runs late still judges the value's age at its arrival).
 */
#ifndef TF_CONTROLLER_EFFICIENCY_H
#define TF_CONTROLLER_EFFICIENCY_H

#include "controller/extender.h"
#include "controller/k8s/informer.h"

#include <stdbool.h>
#include <stdint.h>

struct tf_efficiency_sources {
    struct tf_informer *pods, *nodes, *gpunodes, *gpus, *pools, *templates, *pdbs, *workloads,
        *profiles;
};

struct tf_efficiency_opts {
    bool autoscale;             /* --enable-auto-scale */
    int64_t autoscale_every_ms; /* evaluation interval when autoScalingConfig has none */
    const char *metrics_url;    /* GreptimeDB base URL, or NULL: no usage history */
    const char *metrics_db;     /* GreptimeDB database (NULL: public) */
    const char *zoneinfo_dir;   /* NULL: /usr/share/zoneinfo */
    int64_t clock_offset_ms;    /* added to the wall clock (tests) */
};

struct tf_efficiency;

/* The client and extender are borrowed; option strings are copied. NULL on ENOMEM or when the
 * metrics URL is unusable. */
struct tf_efficiency *tf_efficiency_new(struct tf_k8s_client *c, struct tf_extender *x,
                                        const struct tf_efficiency_opts *o);
/* The informers (borrowed) to read; set before the first tf_efficiency_once. */
void tf_efficiency_set_sources(struct tf_efficiency *e, const struct tf_efficiency_sources *src);
void tf_efficiency_destroy(struct tf_efficiency *e);

/* One pass of the three reconcilers. Returns the number of objects written or TF_EBUSY while
 * the caches are not synced. */
int tf_efficiency_once(struct tf_efficiency *e);

/* For the GPUPool informer's add and update handlers (chained with the extender's): notes
 * when POOL's manual-compaction value was first seen. Thread-safe. */
void tf_efficiency_pool_seen(struct tf_efficiency *e, json_object *pool);

#endif
