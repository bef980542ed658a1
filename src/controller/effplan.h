/* SPDX-License-Identifier: Apache-2.0
 *
 * The pure decisions of the controller's efficiency reconcilers (seed 002 steps 2, 4, 5),
 * between Kubernetes objects (json-c trees, as the informers hold them) and the core
 * planners (core/autoscale.h, core/compaction.h, core/defrag.h). No I/O: the reconcilers in
 * autoscaler.c, compactor.c and defragger.c read the caches, call these, and write.
 *
 * Autoscaling. A TensorFusionWorkload's GPU-holding pods are, in its namespace and not
 * terminating: its remote workers (label tensor-fusion.ai/component: worker and label
 * tensor-fusion.ai/workload: NAME), and its local pods (component client, annotation
 * tensor-fusion.ai/workload: NAME, is-local-gpu not "false"). Inputs:
 *   original   spec.resources.{requests,limits}.{tflops,vram} of the workload
 *   current    the normalised annotations of its first pod (tensor-fusion.ai/tflops-request,
 *              -limit, vram-request, -limit); the original when it has no pod yet
 *   config     SchedulingConfigTemplate spec.verticalScalingRules (by the workload's labels,
 *              or its first pod's when the workload has none), then the workload's own
 *              spec.autoScalingConfig, or the WorkloadProfile's (the pods' annotation
 *              tensor-fusion.ai/workload-profile) when the workload has none, then the pods'
 *              annotations tensor-fusion.ai/autoscale / autoscale-target
 *   cron       status.activeCronScalingRule: the current resources came from that rule
 *   created    metadata.creationTimestamp
 * Compute given as a percentage (compute, computePercent, tensor-fusion.ai/compute-percent-*)
 * is not rescaled from usage: only VRAM is (targetResource all becomes vram, compute turns
 * autoSetResources off); a cron rule's desiredResources compute sets it.
 * The result goes to the workload's status subresource:
 *   status.recommendation          {"requests":{"tflops"|"compute","vram"},"limits":{...}}
 *                                  (when there was usage history or a cron rule applies)
 *   status.activeCronScalingRule   the active rule (the CronScalingRule object; removed when
 *                                  none is)
 * and to every pod whose annotations differ: the annotations above (compute-percent-request
 * and -limit for a percentage).
 *
 * Compaction: nodes whose Node carries tensor-fusion.ai/should-delete=true were released
 * before and count as being deleted (neither released again nor counted as capacity).
 *
 * Defragmentation runs (tf_effplan_defrag_*): a run is planned once when its schedule fires;
 * its evictions are then executed one at a time. After an eviction the next one waits until
 * the evicted pod is gone or terminating, no TensorFusion pod of the pool is left without a
 * node (the replacement was scheduled), and at least TF_DEFRAG_SETTLE_MS have passed (time
 * for a ReplicaSet to create the replacement). A planned pod that is gone or has moved off
 * its node is skipped. The run ends when the list is done or maxDuration is reached.
 *
 * Ownership: documented per function; json-c objects passed in are borrowed.
 * Pure; thread-safe on distinct outputs.
 */
#ifndef TF_CONTROLLER_EFFPLAN_H
#define TF_CONTROLLER_EFFPLAN_H

#include "core/autoscale.h"
#include "core/compaction.h"
#include "core/defrag.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_STATUS_ACTIVE_CRON_RULE "activeCronScalingRule"
#define TF_DEFRAG_SETTLE_MS 5000

/* ---- autoscaling ---- */

struct tf_effplan_workload {
    const char *ns, *name; /* borrowed from the workload object */
    json_object *pods;     /* its GPU-holding pods (owned array of references) */
    json_object *labels;   /* selector input for verticalScalingRules (borrowed) */
    json_object *own;      /* spec.autoScalingConfig (borrowed), or NULL */
    const char *profile;   /* the pods' tensor-fusion.ai/workload-profile, or NULL */
    bool annotated;        /* a pod carries tensor-fusion.ai/autoscale: "true" */
    enum tf_autoscale_target ann_target;
    bool compute_by_percent; /* compute requests are percentages: not rescaled */
    struct tf_autoscale_resources original, current;
    bool current_from_cron;
    int64_t created_ms;
    struct tf_autoscale_config cfg; /* after tf_effplan_workload_config */
    char matched_rule[TF_AUTOSCALE_NAME_MAX];
};

/* Reads workload WL and its pods out of PODS (an array of Pod objects). 0 and *OUT (release
 * with tf_effplan_workload_free), or TF_EINVAL with ERR naming the bad field. */
int tf_effplan_workload_read(json_object *wl, json_object *pods, struct tf_effplan_workload *out,
                             char *err, size_t errlen);
/* Resolves OUT->cfg from the template's spec.verticalScalingRules (TEMPLATE may be NULL) and
 * the WorkloadProfile PROFILE named by OUT->profile (may be NULL). 0 or the config parser's
 * code with ERR naming the path. */
int tf_effplan_workload_config(struct tf_effplan_workload *w, json_object *tmpl,
                               json_object *profile, char *err, size_t errlen);
void tf_effplan_workload_free(struct tf_effplan_workload *w);
/* Whether the autoscaler has anything to do: autoSetResources enabled or a cron rule set. */
bool tf_effplan_workload_active(const struct tf_effplan_workload *w);

/* Current per-GPU resources of POD from its annotations (0 for unset). *BY_PERCENT (may be
 * NULL) tells whether compute is given as a percentage. 0, or the spec parser's code. */
int tf_effplan_pod_resources(json_object *pod, struct tf_autoscale_resources *r, bool *by_percent);

/* The merge patch {"status": {...}} recording REC on workload WL (the active rule's object
 * taken from CFG), or NULL when WL's status already says so. Caller owns the result. */
json_object *tf_effplan_status_patch(json_object *wl, const struct tf_autoscale_config *cfg,
                                     const struct tf_autoscale_recommendation *rec);

/* The merge patch {"metadata": {"annotations": {...}}} giving POD the resources R (unset
 * values are left alone; compute as compute-percent-* when COMPUTE_BY_PERCENT, else as
 * tflops-*), or NULL when POD carries them already. Caller owns the result. */
json_object *tf_effplan_pod_patch(json_object *pod, const struct tf_autoscale_resources *r,
                                  bool compute_by_percent);

/* ---- compaction ---- */

/* Sets NODES[i].deleting for nodes whose Node object in NODE_OBJS (array) is labelled
 * tensor-fusion.ai/should-delete=true. */
void tf_effplan_mark_released(struct tf_compaction_node *nodes, size_t n, json_object *node_objs);

/* ---- defragmentation runs ---- */

struct tf_effplan_defrag_run {
    bool active;
    int64_t started_ms;         /* the fire time (run start) */
    struct tf_defrag_plan plan; /* owned while active */
    size_t next;                /* next eviction of plan.evictions */
    size_t evicted, skipped;
    bool waiting; /* plan.evictions[next - 1] was evicted: waiting for its replacement */
    int64_t evicted_at_ms;
};

enum tf_effplan_defrag_step {
    TF_DEFRAG_STEP_WAIT = 0, /* nothing to do this pass */
    TF_DEFRAG_STEP_EVICT,    /* evict plan.evictions[*IDX] */
    TF_DEFRAG_STEP_FINISH,   /* every planned eviction is done or skipped */
    TF_DEFRAG_STEP_DEADLINE, /* maxDuration reached */
};

/* Starts run R with plan P (moved into R: P is emptied) begun at STARTED_MS. */
void tf_effplan_defrag_start(struct tf_effplan_defrag_run *r, struct tf_defrag_plan *p,
                             int64_t started_ms);
/* Ends the run and frees its plan. */
void tf_effplan_defrag_end(struct tf_effplan_defrag_run *r);
/* What to do at NOW_MS given the current PODS (array) of the cluster and POOL. Skips planned
 * pods that are gone or moved (counted in R->skipped). */
enum tf_effplan_defrag_step tf_effplan_defrag_next(struct tf_effplan_defrag_run *r,
                                                   const struct tf_defrag_config *cfg,
                                                   json_object *pods, const char *pool,
                                                   int64_t now_ms, size_t *idx);
/* Records the outcome of evicting plan.evictions[R->next]: EVICTED true moves on and waits
 * for the replacement; false (the pod was gone) skips it. */
void tf_effplan_defrag_done(struct tf_effplan_defrag_run *r, bool evicted, int64_t now_ms);
/* The planned event for eviction IDX (its DefragPodEvicted), or NULL. */
const struct tf_defrag_event *tf_effplan_defrag_event(const struct tf_defrag_plan *p, size_t idx);

#endif
