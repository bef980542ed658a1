/* SPDX-License-Identifier: Apache-2.0
 *
 * Kubernetes objects -> the planners' inputs. Reads a list of objects as the API server (or a
 * `kubectl get -o yaml` dump) returns them and turns them into what compaction.h and
 * defrag.h take, placing the TensorFusion pods on a caller-provided allocator first:
 *
 *   Pod          spec.nodeName set and phase not Succeeded/Failed: a TensorFusion pod (read by
 *                the workload spec parser, core/spec.h) is a worker on that node: restored on
 *                the GPUs of its tensor-fusion.ai/gpu-ids annotation, else reserved on the node
 *                by the allocator. Any other pod asking nvidia.com/gpu, amd.com/gpu, a MIG
 *                resource (nvidia.com/mig-*) or another "<vendor>/gpu" resource in its
 *                containers' requests or limits is a pod using GPUs outside TensorFusion.
 *   PodDisruptionBudget  covers the pods of its namespace its spec.selector matches (an
 *                empty selector matches all of them, a missing one none, as in policy/v1).
 *   Node         metadata.labels (tensor-fusion.ai/do-not-disrupt), spec.unschedulable.
 *   GPUNode      status.phase, metadata.creationTimestamp / deletionTimestamp (same name as
 *                its Node); labels are read as on the Node.
 *   GPUPool      metadata.annotations (tensor-fusion.ai/manual-compaction).
 * Other kinds are ignored. Namespaces default to "default". Problems that do not stop
 * planning (a pod whose GPUs cannot be restored, a pod on an unknown node) become warnings.
 *
 * Ownership: the state owns copies of everything it keeps; the arrays it hands out are the
 * caller's (free()) and point into the state, valid until tf_plan_state_destroy. The
 * allocator is borrowed and modified (pods are placed on it): give it a fresh one. Pure (no
 * I/O); not thread-safe.
 */
#ifndef TF_CORE_PLAN_STATE_H
#define TF_CORE_PLAN_STATE_H

#include "core/alloc.h"
#include "core/compaction.h"
#include "core/defrag.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_ANN_GPU_IDS_KEY "tensor-fusion.ai/gpu-ids"

struct tf_plan_state_opts {
    /* Nodes without a GPUNode object are taken as Running and created long ago (tfctl's
     * convenience for hand-written states); otherwise they are never released. */
    bool assume_gpunodes;
    /* Optional cluster description (cluster_yaml.h shape): pools[].nodes[].labels are used for
     * nodes that have no Node object. */
    json_object *cluster_doc;
};

struct tf_plan_state;

/* Loads DOCS (a JSON array of objects, e.g. from tf_manifest_parse) at NOW_MS over A.
 * 0 and *OUT (caller owns: tf_plan_state_destroy), or TF_EINVAL (malformed object: ERR names
 * it) / TF_ENOMEM. */
int tf_plan_state_load(struct tf_alloc *a, json_object *docs, const struct tf_plan_state_opts *o,
                       int64_t now_ms, struct tf_plan_state **out, char *err, size_t errlen);
void tf_plan_state_destroy(struct tf_plan_state *s);

size_t tf_plan_state_nwarnings(const struct tf_plan_state *s);
const char *tf_plan_state_warning(const struct tf_plan_state *s, size_t i);

/* Compaction input for pool POOL (cluster pool id): one entry per node of the pool, in the
 * pool's order. 0 and *NODES / *N (caller frees *NODES), or TF_EINVAL / TF_ENOMEM. */
int tf_plan_state_compaction(const struct tf_plan_state *s, uint32_t pool,
                             struct tf_compaction_node **nodes, size_t *n);

/* Defrag facts: every known node and every TensorFusion worker pod (with its allocator
 * request). 0 and the arrays (caller frees both), or TF_ENOMEM. */
int tf_plan_state_defrag(const struct tf_plan_state *s, struct tf_defrag_node **nodes, size_t *nn,
                         struct tf_defrag_pod **pods, size_t *np);

/* Annotation KEY of GPUPool NAME, or NULL. Borrowed from the state. */
const char *tf_plan_state_pool_annotation(const struct tf_plan_state *s, const char *pool,
                                          const char *key);

#endif
