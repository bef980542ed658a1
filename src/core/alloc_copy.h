/* SPDX-License-Identifier: Apache-2.0
 *
 * What-if copies of the scheduling state: a new tf_cluster with the same pools (and their
 * configuration), nodes, GPUs (phases, capacities, NVLink, NUMA) and partition profiles, and a
 * new tf_alloc holding every live allocation of the original on exactly the same GPUs (same
 * isolation lock, partition templates, resources). Planners (defragmentation) run the real
 * allocator on the copy, so a simulation can never disturb the scheduler's state.
 *
 * Built only through the public cluster/allocator API (tf_cluster_add_pool/_add_node,
 * tf_alloc_restore): pool, node and GPU ids of the copy equal the original's. The copy has no
 * namespace quotas (moving a pod does not change its namespace's usage). Suspended records of
 * the original are not copied. Allocation records keep what the allocator stores; constraints
 * only the pod spec knows (GPU model, vendor, indices) are not part of a record.
 *
 * Cost: O(nodes + GPUs + allocations). Reads the original only; the caller holds the lock
 * that serialises the original's writers for the duration of the call.
 */
#ifndef TF_CORE_ALLOC_COPY_H
#define TF_CORE_ALLOC_COPY_H

#include "core/alloc.h"

#include <stddef.h>

/* Copies A (and its cluster). 0 and *C_OUT / *A_OUT (caller owns: tf_alloc_destroy, then
 * tf_cluster_destroy), or TF_ENOMEM / TF_ESTATE (an allocation could not be reproduced: the
 * original violates its invariants) with ERR set; both NULL on error. */
int tf_alloc_copy(const struct tf_alloc *a, struct tf_cluster **c_out, struct tf_alloc **a_out,
                  char *err, size_t errlen);

/* The allocator request that reproduces record R of A (what tf_alloc_copy restores): its
 * namespace and name (into NS/NAME buffers of TF_KEY_MAX bytes), pool name, per-GPU
 * resources, GPU count, isolation, QoS, dedicated/remote flags and partition template. */
void tf_alloc_record_request(const struct tf_alloc *a, const struct tf_alloc_record *r,
                             struct tf_alloc_request *req, char *ns, char *name);

#endif
