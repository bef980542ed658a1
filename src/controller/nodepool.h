/* SPDX-License-Identifier: Apache-2.0
 *
 * Pools by selector: which GPUPool a Kubernetes node's GPUs belong to, and the node's isolation
 * mode under that pool's rules. Pure decisions over the objects as the informers hold them
 * (json-c trees); the GPU reconciler (reconcile_infra.c) acts on them.
 *
 * A pool selects nodes by spec.nodeManagerConfig.multiVendorNodeSelector (vendor -> NodeSelector,
 * any of them; when it has entries it is used instead of nodeSelector, as upstream) or
 * spec.nodeManagerConfig.nodeSelector (a NodeSelector). A pool with neither selects no node.
 * A node's pool:
 *   - the pools whose selector matches the Node; with several (a conflict) the one its GPUs
 *     already carry (tensor-fusion.ai/gpupool) if it is among them, else the first by name;
 *   - no pool matches: the pool its GPUs carry (the hypervisor's --pool, or a label a person
 *     set), unless that pool selects nodes and this one is not among them (the node left it),
 *     which, like no label at all, means the default pool;
 *   - the Node object is not known (not created yet, or the cache lags): the carried pool,
 *     else the default, so that nothing moves on missing information.
 * The node's isolation mode: the first of the chosen pool's isolationModeRules whose selector
 * matches the Node's labels ({mode, selector} as upstream; our former {isolation,
 * nodeSelector} read too), else its defaultIsolationMode, else soft (upstream's
 * ResolveNodeIsolationMode).
 *
 * Ownership: inputs are borrowed; *OUT holds copies. Pure; thread-safe.
 */
#ifndef TF_CONTROLLER_NODEPOOL_H
#define TF_CONTROLLER_NODEPOOL_H

#include "core/spec.h"

#include <json-c/json.h>
#include <stdbool.h>

#define TF_NODEPOOL_NAME_MAX 254

enum tf_nodepool_source {
    TF_NODEPOOL_SELECTOR = 0, /* chosen by a pool's selector */
    TF_NODEPOOL_LABEL,        /* no selector matched: the pool the GPUs carry */
    TF_NODEPOOL_DEFAULT,      /* neither: the default pool */
};

struct tf_nodepool {
    char pool[TF_NODEPOOL_NAME_MAX];
    enum tf_nodepool_source source;
    int nmatched;           /* pools whose selector matches the node (> 1: a conflict) */
    char matched[1024];     /* their names, comma-separated (cut short when very many) */
    enum tf_isolation mode; /* soft, hard or partitioned (shared only if a rule says so) */
    int rule;               /* index of the isolationModeRules entry that decided, -1 none */
};

/* Resolves node NODE_NAME (its Node object NODE, NULL when unknown) against POOLS (an array of
 * GPUPool objects, may be NULL), with CARRIED the pool its GPUs are labelled with (NULL when
 * none) and DEFAULT_POOL the cluster's default. */
void tf_nodepool_resolve(json_object *pools, const char *node_name, json_object *node,
                         const char *carried, const char *default_pool, struct tf_nodepool *out);

/* Whether GPUPool POOL selects nodes at all (has a nodeSelector or multiVendorNodeSelector). */
bool tf_nodepool_selects(json_object *pool);

#endif
