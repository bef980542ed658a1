/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tf-hypervisor: the node agent's partitions (isolation `partitioned`). For every
 * partitioned pod bound to this node (k8s_objects.h, tf_hv_k8s_part_want) each GPU of its
 * gpu-ids gets a MIG device of the template the scheduler chose (tensor-fusion.ai/partition),
 * created through NVML exactly as on hardware (nvml.h: MIG mode on when off, the GPU instance
 * profile of the template's slices and memory, a compute instance over all of it); when the
 * pod is deleted or finishes, its MIG devices are destroyed.
 *
 * Record: each GPU object's status.allocatedPartitions, as upstream keeps it: pod uid ->
 * {templateId, podUid, podName, namespace, allocatedAt, allocatedSlotStart, allocatedSlotEnd}
 * (the slots: the GPU instance's placement, in memory slices). It is also how a restarted
 * hypervisor finds which MIG device is whose (by placement): before its first reconcile it
 * reads its GPU objects' records.
 *
 * The hypervisor owns the MIG layout of a GPU it partitions: a GPU instance on a GPU
 * where partitioned pods run that no live pod's record claims (left by a crash between
 * creating it and recording it, or by someone else) is destroyed; MIG mode is left on when the
 * last partition goes (turning it off needs an idle GPU and, on hardware, a reset).
 *
 * Threads: main loop only (it owns the NVML handle); the client outlives the object.
 */
#ifndef TF_HYPERVISOR_K8S_PARTS_H
#define TF_HYPERVISOR_K8S_PARTS_H

#include "controller/k8s/client.h"
#include "hypervisor/hv.h"

#include <json-c/json.h>

struct tf_hv_k8s_parts;

/* NULL on allocation failure. NODE is copied. */
struct tf_hv_k8s_parts *tf_hv_k8s_parts_new(struct tf_hv *hv, struct tf_k8s_client *c,
                                            const char *node);
/* Makes the MIG devices of this node match PODS (the node's pods, after the informer's first
 * list) on devices DEVS[0..NDEV), and records them on the GPU objects. */
void tf_hv_k8s_parts_reconcile(struct tf_hv_k8s_parts *p, json_object *pods,
                               const struct tf_hv_device *devs, int ndev);
/* The uuid of the MIG device pod UID holds on GPU (as of the last reconcile), or NULL. */
const char *tf_hv_k8s_parts_mig(const struct tf_hv_k8s_parts *p, const char *uid, const char *gpu);
/* The last failure creating pod UID's partition on GPU (an Event was sent), or NULL. */
const char *tf_hv_k8s_parts_problem(const struct tf_hv_k8s_parts *p, const char *uid,
                                    const char *gpu);
/* Frees P (the MIG devices stay: running apps keep them). Accepts NULL. */
void tf_hv_k8s_parts_free(struct tf_hv_k8s_parts *p);

#endif
