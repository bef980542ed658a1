/* SPDX-License-Identifier: Apache-2.0
 *
 * Defragmentation planning (seed 002 step 5): which TensorFusion workers to evict from
 * lightly used GPU nodes so the scheduler packs them onto fuller nodes and node compaction can
 * release the emptied ones.
 *
 * Utilisation of a node = the share of its GPUs hosting at least one worker. In one run, for
 * the pool's nodes in increasing order of utilisation (then name):
 *   - candidates are nodes at or below utilizationThresholdPercent; fully idle nodes (0 %) are
 *     left to node compaction;
 *   - skipped: unschedulable (cordoned) nodes, nodes labelled tensor-fusion.ai/do-not-disrupt:
 *     "true", nodes running pods that use GPUs outside TensorFusion, nodes where any worker pod
 *     is not covered by a PodDisruptionBudget (event DefragSkipMissingPDB naming the pod), and
 *     nodes with a worker younger than maxDuration (such workers are never evicted, so the
 *     node could not be emptied);
 *   - before anything is evicted, every worker of the node is placed, with the real allocator
 *     on a copy of the cluster state (alloc_copy.h), onto other schedulable nodes of the pool
 *     whose utilisation is not lower than the node's, choosing as the scheduler would (the
 *     pool's placement mode); if one does not fit, nothing on that node is evicted. Placements
 *     stay on the copy, so later candidates see them, and a drained node never receives pods.
 * The plan evicts one pod at a time, in order (largest first). The caller (the controller)
 * evicts the first, waits until its replacement is scheduled, then the next, and stops when
 * the run reaches maxDuration (tf_defrag_may_continue). A run planned at or after its deadline
 * evicts nothing.
 *
 * The plan is reported as GPUPool events, in order: DefragStarted, then per node any
 * DefragSkipMissingPDB and one DefragPodEvicted per eviction, then DefragFinished with a
 * summary. Every node's outcome is also listed (tf_defrag_node_result) with its reason.
 *
 * Pure and deterministic: reads the allocator (never modifies it), time is a parameter.
 * Not thread-safe with writers of the allocator: hold its read lock for the call.
 */
#ifndef TF_CORE_DEFRAG_H
#define TF_CORE_DEFRAG_H

#include "core/alloc.h"
#include "core/efficiency.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_DEFRAG_MSG_MAX 512
#define TF_DEFRAG_NAME_MAX 320

/* Kubernetes facts about one node (matched to the cluster's nodes by name; nodes of the pool
 * not listed are taken as schedulable, undisruptable-label-free and without foreign pods).
 * Strings are borrowed for the call. */
struct tf_defrag_node {
    const char *name;
    bool unschedulable;      /* spec.unschedulable */
    bool do_not_disrupt;     /* label tensor-fusion.ai/do-not-disrupt: "true" */
    const char *foreign_pod; /* "ns/name" of a pod using GPUs outside TensorFusion, or NULL */
};

/* A TensorFusion worker pod on one of the pool's nodes. REQ (may be NULL) is its full
 * allocator request (from its spec: model, vendor, indices...); without it the request is
 * rebuilt from its allocation record. */
struct tf_defrag_pod {
    const char *ns, *name, *node;
    int64_t created_ms;
    bool pdb_covered; /* some PodDisruptionBudget of its namespace selects it */
    const struct tf_alloc_request *req;
};

struct tf_defrag_input {
    const struct tf_alloc *alloc; /* current allocations; read only */
    const char *pool;             /* pool name; NULL = the default pool */
    const struct tf_defrag_config *cfg;
    const struct tf_defrag_node *nodes;
    size_t nnodes;
    const struct tf_defrag_pod *pods;
    size_t npods;
    int64_t now_ms;
    int64_t run_started_ms; /* when this run began (the schedule's fire time) */
    bool resume;            /* continuing a run planned before: no DefragStarted event */
};

enum tf_defrag_event_kind {
    TF_DEFRAG_EV_STARTED = 0,
    TF_DEFRAG_EV_POD_EVICTED,
    TF_DEFRAG_EV_FINISHED,
    TF_DEFRAG_EV_SKIP_MISSING_PDB,
};

struct tf_defrag_event {
    enum tf_defrag_event_kind kind;
    const char *reason; /* "DefragStarted", ... (static) */
    const char *type;   /* "Normal" or "Warning" (static) */
    char message[TF_DEFRAG_MSG_MAX];
    int32_t eviction; /* index into evictions for DefragPodEvicted, else -1 */
};

struct tf_defrag_eviction {
    char ns[TF_DEFRAG_NAME_MAX], name[TF_DEFRAG_NAME_MAX];
    char node[TF_DEFRAG_NAME_MAX];   /* where it runs now */
    char target[TF_DEFRAG_NAME_MAX]; /* where the simulation placed it */
};

enum tf_defrag_node_status {
    TF_DEFRAG_DRAIN = 0,     /* its workers are evicted */
    TF_DEFRAG_NOT_CANDIDATE, /* above the threshold */
    TF_DEFRAG_IDLE,          /* no worker: left to compaction */
    TF_DEFRAG_UNSCHEDULABLE,
    TF_DEFRAG_DO_NOT_DISRUPT,
    TF_DEFRAG_FOREIGN_GPU_POD,
    TF_DEFRAG_MISSING_PDB,
    TF_DEFRAG_YOUNG_WORKER,
    TF_DEFRAG_NO_ROOM,  /* the simulation could not place every worker elsewhere */
    TF_DEFRAG_DEADLINE, /* maxDuration reached before it was considered */
};

struct tf_defrag_node_result {
    char node[TF_DEFRAG_NAME_MAX];
    uint32_t used_gpus, gpus; /* at the time it was considered */
    enum tf_defrag_node_status status;
    char reason[TF_DEFRAG_MSG_MAX];
};

/* The plan; every array is owned by it (tf_defrag_plan_free). */
struct tf_defrag_plan {
    struct tf_defrag_event *events;
    size_t nevents;
    struct tf_defrag_eviction *evictions;
    size_t nevictions;
    struct tf_defrag_node_result *nodes; /* in the order considered */
    size_t nnodes;
    int64_t deadline_ms; /* run_started + maxDuration */
};

const char *tf_defrag_status_name(enum tf_defrag_node_status s);

/* Plans a run. 0 and *OUT, or TF_EINVAL (bad input: no allocator/config, unknown pool),
 * TF_ENOMEM, TF_ESTATE (the allocator's state could not be copied) with ERR set and *OUT
 * empty. */
int tf_defrag_plan(const struct tf_defrag_input *in, struct tf_defrag_plan *out, char *err,
                   size_t errlen);
void tf_defrag_plan_free(struct tf_defrag_plan *p);

/* True while a run begun at RUN_STARTED_MS may still evict at NOW_MS (before maxDuration). */
bool tf_defrag_may_continue(const struct tf_defrag_config *cfg, int64_t run_started_ms,
                            int64_t now_ms);

/* Whether a run is due at NOW_MS: defrag enabled, the schedule fired in (LAST_MS, NOW_MS] in
 * zone TZ (LAST_MS = when the previous check ran; on the first check pass the controller's
 * start time), and that fire is less than maxDuration ago (a run whose window has passed is
 * skipped, not started late). *FIRE_MS gets the fire time (the run's start). Several missed
 * fires collapse into one run. */
bool tf_defrag_due(const struct tf_defrag_config *cfg, const struct tf_tz *tz, int64_t last_ms,
                   int64_t now_ms, int64_t *fire_ms);

#endif
