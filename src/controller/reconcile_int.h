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
/* Per-GPU request of POD from its normalised annotations (a whole GPU when shared). */
void tf__rc_pod_share(json_object *pod, int64_t cap_t, int64_t cap_v, int64_t *t, int64_t *v);
const char *tf__rc_pod_uid(json_object *pod);
/* ITEM is an entry of the comma-separated LIST. */
bool tf__rc_list_has(const char *list, const char *item);

void tf__rc_infra(struct tf_reconciler *r, json_object *pods);
void tf__rc_workloads(struct tf_reconciler *r, json_object *pods);
void tf__rc_connections(struct tf_reconciler *r, json_object *pods);
void tf__rc_quotas(struct tf_reconciler *r, json_object *pods);
void tf__rc_provision(struct tf_reconciler *r);

#endif
