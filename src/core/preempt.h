/* SPDX-License-Identifier: Apache-2.0
 *
 * QoS preemption planning: when a `high` or `critical` pod does not fit, which `low`/`medium`
 * pods would have to go so it does. Produces the plan only; executing it (evicting the
 * victims, then placing the pod) is the caller's business.
 *
 * Per node of the pod's pool, the planner takes every eligible victim off (tf_alloc_suspend),
 * checks that the pod then fits, and gives victims back one at a time (medium before low, the
 * smaller before the larger) keeping each one whose return still leaves room: the victim set
 * is minimal by inclusion. The node needing the fewest victims wins, then the one whose victims
 * have the lowest QoS, then the earlier node. The allocator's state is exactly as before when
 * the call returns. Namespace quotas are not preempted: a pod over its quota stays
 * unschedulable.
 *
 * Cost: O(nodes x victims-per-node x GPUs-per-node); for the unschedulable path only.
 * Not thread-safe (it suspends and resumes records): hold the allocator's write lock.
 */
#ifndef TF_CORE_PREEMPT_H
#define TF_CORE_PREEMPT_H

#include "core/alloc.h"

#define TF_PREEMPT_MAX_VICTIMS 256 /* nodes needing more evictions are not considered */

struct tf_preempt_plan {
    struct tf_alloc_result placement; /* where the pod goes once the victims are gone */
    uint32_t nvictims;
    uint32_t victims[TF_PREEMPT_MAX_VICTIMS]; /* record ids (tf_alloc_record_at) */
};

/* True when a pod of QoS PREEMPTOR may evict one of QoS VICTIM. */
bool tf_preempt_may(enum tf_qos preemptor, enum tf_qos victim);

/* Plans REQ's preemption. 0 and *PLAN (nvictims 0 when it fits as is); TF_EPERM when REQ's QoS
 * may not preempt; TF_ENOSPC when no eviction of lower-QoS pods makes room (reason in ERR);
 * pod-level codes as tf_alloc_filter (TF_EINVAL, TF_ENOENT, TF_ENOSPC for quota, TF_ENOTSUP). */
int tf_preempt_plan(struct tf_alloc *a, const struct tf_alloc_request *req,
                    struct tf_preempt_plan *plan, char *err, size_t errlen);
/* The same, considering only the NNODES node ids of NODES (e.g. the scheduler's candidates;
 * ids outside REQ's pool are ignored): "fits as is" and the chosen node are among them. */
int tf_preempt_plan_on(struct tf_alloc *a, const struct tf_alloc_request *req,
                       const uint32_t *nodes, size_t nnodes, struct tf_preempt_plan *plan,
                       char *err, size_t errlen);

#endif
