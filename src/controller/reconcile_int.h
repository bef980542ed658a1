/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to the reconcilers (reconcile.c: lifecycle, shared helpers and the pass;
 * reconcile_infra.c: GPUs, GPUNodes, GPUPools, TensorFusionClusters; reconcile_apps.c:
 * workloads, remote workers, connections, quotas; reconcile_provision.c: GPUNodeClaims of
 * Provisioned pools). See reconcile.h.
 */
#ifndef TF_CONTROLLER_RECONCILE_INT_H
#define TF_CONTROLLER_RECONCILE_INT_H

#include "controller/allocsig.h"
#include "controller/k8s/client.h"
#include "controller/reconcile.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

struct tf_reconciler {
    struct tf_k8s_client *c; /* borrowed */
    struct tf_reconcile_sources src;
    char *default_pool, *worker_image, *shm_host_dir; /* owned */
    int writes;                                       /* objects written this pass */
    json_object *prov_notes;       /* pool -> last provisioning Warning (owned), not repeated */
    const struct tf_allocsig *sig; /* checks recorded allocations (borrowed), or NULL */
    bool static_policy;            /* isolationModePolicy static (node modes from pool rules) */
    struct tf_ctl_podidx *podidx;  /* partitioned workers' pod indexes (borrowed), or NULL */
};

/* Metadata annotation / label KEY of O (borrowed from O), or NULL. */
const char *tf__rc_ann(json_object *o, const char *key);
const char *tf__rc_lbl(json_object *o, const char *key);
/* Not deleted and not Succeeded/Failed. */
bool tf__rc_pod_active(json_object *pod);
/* Running, and Ready unless it reports no Ready condition. */
bool tf__rc_pod_ready(json_object *pod);
/* Quantity S in milli-units / bytes; 0 when NULL or invalid. */
int64_t tf__rc_q_milli(const char *s);
int64_t tf__rc_q_bytes(const char *s);
/* New {"tflops", "vram"} object (caller owns). */
json_object *tf__rc_q_obj(int64_t milli, int64_t bytes);
/* Merge-patches STATUS (consumed) into OBJ's status subresource when a member differs. */
void tf__rc_put_status(struct tf_reconciler *r, const struct tf_k8s_resource *res, json_object *obj,
                       json_object *status);
/* Records an Event on OBJ and logs it. */
void tf__rc_event(struct tf_reconciler *r, json_object *obj, const char *type, const char *reason,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Per-GPU request of POD from its normalised annotations on a GPU of MODEL (status.gpuModel,
 * may be NULL): a whole GPU when shared, its template (tensor-fusion.ai/partition) when
 * partitioned. */
void tf__rc_pod_share(json_object *pod, const char *model, int64_t cap_t, int64_t cap_v, int64_t *t,
                      int64_t *v);
const char *tf__rc_pod_uid(json_object *pod);
/* ITEM is an entry of the comma-separated LIST. */
bool tf__rc_list_has(const char *list, const char *item);

/* The node GPU object GPU is on (status.nodeSelector, else its tensor-fusion.ai/node label). */
const char *tf__rc_gpu_node(json_object *gpu);

/* reconcile_nodes.c: pools by selector. tf__rc_assign_pools resolves every node of GPUS (an
 * array of GPU objects) into a new object node -> {pool, mode, matched, pools, bySelector}
 * (caller owns); tf__rc_assigned_pool reads its pool. tf__rc_gpu_pool labels GPU with its
 * node's pool and adds to status ST its isolationPolicy / isolationMode and, with NODE_PHASE
 * (the node's heartbeat phase, may be NULL), phase Unknown while the heartbeat is lost (back
 * to Running when it returns). tf__rc_gpunode_pool labels GPUNode GN with its pool (Event
 * PoolAssigned when it changes) and adds the PoolConflict condition to ST (Event
 * PoolConflict when several pools' selectors match). */
json_object *tf__rc_assign_pools(struct tf_reconciler *r, json_object *gpus);
const char *tf__rc_assigned_pool(json_object *assign, const char *node);
void tf__rc_gpu_pool(struct tf_reconciler *r, json_object *gpu, json_object *assign,
                     const char *node_phase, json_object *st);
void tf__rc_gpunode_pool(struct tf_reconciler *r, json_object *gn, json_object *assign,
                         json_object *st);
/* The IsolationModeRules condition of a pool that has rules (True: applied, under the static
 * policy; False with a Warning Event under the dynamic one, where they cannot apply) into its
 * status ST. */
void tf__rc_pool_isolation(struct tf_reconciler *r, json_object *pool, json_object *st);

void tf__rc_infra(struct tf_reconciler *r, json_object *pods);
void tf__rc_workloads(struct tf_reconciler *r, json_object *pods);
void tf__rc_connections(struct tf_reconciler *r, json_object *pods);
void tf__rc_quotas(struct tf_reconciler *r, json_object *pods);
void tf__rc_provision(struct tf_reconciler *r);

#endif
