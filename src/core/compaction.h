/* SPDX-License-Identifier: Apache-2.0
 *
 * Node compaction (seed 002 step 4): which idle GPU nodes of a pool to release. A node is
 * released only when all of these hold:
 *   1. no TensorFusion worker runs on it;
 *   2. its GPUNode is Running and was created more than 5 minutes ago;
 *   3. it lacks the label tensor-fusion.ai/do-not-disrupt: "true";
 *   4. releasing it keeps the pool at or above capacityConfig.warmResources (free TFLOPS and
 *      VRAM left on the other Running nodes) and minResources (their total TFLOPS and VRAM),
 *      counting the nodes already chosen in this run as gone.
 * Nodes being deleted already are neither candidates nor counted. Eligible nodes are taken
 * largest first (VRAM, then TFLOPS, then name), so when warm/min capacity allows only some of
 * them, the biggest (costliest) ones go. What releasing means depends on provisioningMode:
 * AutoSelect (and Provisioned: this build provisions no nodes of its own) labels the
 * Kubernetes node tensor-fusion.ai/should-delete=true, a node autoscaler does the rest;
 * Karpenter deletes the node's NodeClaim (Karpenter then drains and terminates it).
 *
 * A run is due every nodeCompaction.period, or at once when the pool carries the annotation
 * tensor-fusion.ai/manual-compaction with a timestamp no older than 3 seconds (and no more
 * than 3 seconds in the future: clock skew); older values are ignored, and a value that
 * already triggered a run does not trigger another.
 *
 * Pure and deterministic (time is a parameter); thread-safe on distinct outputs.
 */
#ifndef TF_CORE_COMPACTION_H
#define TF_CORE_COMPACTION_H

#include "core/efficiency.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_LABEL_DO_NOT_DISRUPT "tensor-fusion.ai/do-not-disrupt"
#define TF_LABEL_SHOULD_DELETE "tensor-fusion.ai/should-delete"
#define TF_ANN_MANUAL_COMPACTION "tensor-fusion.ai/manual-compaction"
#define TF_COMPACTION_MIN_NODE_AGE_MS (5 * 60 * INT64_C(1000))
#define TF_MANUAL_COMPACTION_VALID_MS 3000
#define TF_COMPACTION_REASON_MAX 256

/* What the planner knows about one node of the pool. Strings are borrowed. */
struct tf_compaction_node {
    const char *name;
    int64_t tflops_milli, vram_bytes;             /* capacity of its GPUs */
    int64_t avail_tflops_milli, avail_vram_bytes; /* not reserved by any workload */
    uint32_t workers;                             /* TensorFusion workers on it */
    bool gpunode_found;                           /* a GPUNode object exists */
    bool running;                                 /* GPUNode status.phase == Running */
    int64_t created_ms;                           /* GPUNode metadata.creationTimestamp */
    bool do_not_disrupt;                          /* label tensor-fusion.ai/do-not-disrupt */
    bool deleting;                                /* deletionTimestamp set */
};

enum tf_compaction_verdict {
    TF_COMPACT_RELEASE = 0,
    TF_COMPACT_HAS_WORKERS,
    TF_COMPACT_NO_GPUNODE,
    TF_COMPACT_NOT_RUNNING,
    TF_COMPACT_TOO_YOUNG,
    TF_COMPACT_DO_NOT_DISRUPT,
    TF_COMPACT_DELETING,
    TF_COMPACT_BELOW_WARM,
    TF_COMPACT_BELOW_MIN,
};

/* One node's outcome; NODE indexes the caller's array. REASON says why (also for RELEASE). */
struct tf_compaction_decision {
    size_t node;
    enum tf_compaction_verdict verdict;
    char reason[TF_COMPACTION_REASON_MAX];
};

/* Pool capacity over Running, not-deleting nodes, before and after the releases. */
struct tf_compaction_summary {
    size_t nreleased;
    int64_t total_tflops_milli, total_vram_bytes, avail_tflops_milli, avail_vram_bytes;
    int64_t after_total_tflops_milli, after_total_vram_bytes;
    int64_t after_avail_tflops_milli, after_avail_vram_bytes;
};

/* Short name of a verdict ("Release", "HasWorkers", ...). */
const char *tf_compaction_verdict_name(enum tf_compaction_verdict v);
/* What releasing does under MODE: "label tensor-fusion.ai/should-delete=true" or
 * "delete its Karpenter NodeClaim". */
const char *tf_compaction_action(enum tf_provisioning_mode mode);

/* Plans a run at NOW_MS over NODES[0..N). OUT[0..N) gets one decision per node, in the order
 * decided: released nodes first (in release order), then the rejected ones in input order.
 * SUM (may be NULL) gets the capacity figures. Returns the number of nodes released. */
size_t tf_compaction_plan(const struct tf_pool_efficiency *cfg,
                          const struct tf_compaction_node *nodes, size_t n, int64_t now_ms,
                          struct tf_compaction_decision *out, struct tf_compaction_summary *sum);

enum tf_manual_compaction {
    TF_MANUAL_NONE = 0, /* no annotation */
    TF_MANUAL_TRIGGER,  /* fresh: run now */
    TF_MANUAL_STALE,    /* older than 3 s: ignored */
    TF_MANUAL_FUTURE,   /* more than 3 s ahead: ignored */
    TF_MANUAL_INVALID,  /* not an RFC 3339 timestamp: ignored */
    TF_MANUAL_HANDLED,  /* equals the value that triggered the previous run */
};

/* Classifies the pool's tensor-fusion.ai/manual-compaction VALUE (NULL = absent) at NOW_MS;
 * LAST_HANDLED is the value that triggered the previous manual run (NULL if none). WHY (may be
 * NULL) gets a sentence for logs/events. */
enum tf_manual_compaction tf_compaction_manual(const char *value, const char *last_handled,
                                               int64_t now_ms, char *why, size_t whylen);

/* Whether a periodic run is due at NOW_MS given the previous run at LAST_RUN_MS (0 = never):
 * true when never run or a full period has passed. *NEXT_MS (may be NULL) gets the time of the
 * next periodic run. */
bool tf_compaction_due(const struct tf_pool_efficiency *cfg, int64_t last_run_ms, int64_t now_ms,
                       int64_t *next_ms);

#endif
