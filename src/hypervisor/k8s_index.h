/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tf-hypervisor: the pods of this node by pod index (core/podindex.h), for the
 * pod-index device plugins' Allocate (deviceplugin/dp_index.h), which names an index, never a
 * pod. The main loop publishes, after each pod reconcile, one entry per partitioned pod bound
 * here that holds an index (annotation tensor-fusion.ai/index, matched by the index resource
 * one of its containers requests) with its GPUs and, once the partition side made them, their
 * MIG devices; a plugin thread resolves an index against the latest entries, waiting
 * (bounded) for a partition not made yet and asking the main loop to reconcile at once.
 *
 * Threads: tf_hv_idx_publish / _kicked on the main loop, tf_hv_idx_wait on plugin threads;
 * the table has its own lock. tf_hv_k8s_pod_index and tf_hv_idx_resolve are pure.
 */
#ifndef TF_HYPERVISOR_K8S_INDEX_H
#define TF_HYPERVISOR_K8S_INDEX_H

#include "hypervisor/deviceplugin/dp_index.h"
#include "hypervisor/k8s_objects.h"

#include <json-c/json.h>
#include <stdbool.h>

struct tf_hv_idx_entry {
    int index;
    char key[TF_HV_K8S_KEY_MAX]; /* "<ns>/<name>" */
    int ngpu;                    /* 0 while it has no GPUs or template yet */
    char gpus[TF_SHM_MAX_DEVICES][64];
    char migs[TF_SHM_MAX_DEVICES][96]; /* per GPU, "" until its MIG device exists */
    char problem[256];                 /* why it has no partition (last failure), or "" */
};

/* The pod index POD holds: its tensor-fusion.ai/index annotation when one of its containers
 * (or init containers) requests the matching tensor-fusion.ai/index_<k>: <n>; -1 otherwise
 * (none, malformed, or an annotation the spec does not back). */
int tf_hv_k8s_pod_index(json_object *pod);

/* Resolves INDEX over entries E[0..N): 0 with ENV[0..*NENV) (NVIDIA_VISIBLE_DEVICES and
 * CUDA_VISIBLE_DEVICES, the MIG devices of its GPUs, comma-separated); TF_ENOENT (no entry),
 * TF_ECONFLICT (several), TF_EBUSY (its partitions are not all there yet), with ERR. */
int tf_hv_idx_resolve(const struct tf_hv_idx_entry *e, int n, int index, struct tf_dp_env *env,
                      int *nenv, char *err, size_t errlen);

struct tf_hv_idx;

struct tf_hv_idx *tf_hv_idx_new(void);
void tf_hv_idx_free(struct tf_hv_idx *t);
/* Replaces the entries with E[0..N) (copied). */
void tf_hv_idx_publish(struct tf_hv_idx *t, const struct tf_hv_idx_entry *e, int n);
/* Whether a plugin asked for a reconcile since the last call (clears the request). */
bool tf_hv_idx_kicked(struct tf_hv_idx *t);
/* Ends every wait at once (TF_ESTATE), now and later: the hypervisor is stopping. */
void tf_hv_idx_close(struct tf_hv_idx *t);
/* tf_hv_idx_resolve over the published entries, retried every 100 ms while TF_ENOENT or
 * TF_EBUSY for up to TIMEOUT_MS (then TF_ETIMEDOUT with the last reason). */
int tf_hv_idx_wait(struct tf_hv_idx *t, int index, int timeout_ms, struct tf_dp_env *env, int *nenv,
                   char *err, size_t errlen);

#endif
