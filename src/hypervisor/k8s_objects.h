/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tf-hypervisor: the Kubernetes objects of the node agent (--kubernetes), as pure
 * functions over json-c trees (no I/O).
 *
 * GPU objects (tensor-fusion.ai/v1 GPU, cluster-scoped), one per discovered device, shaped as
 * the controller's extender and reconcilers read them (docs/kubernetes.md):
 *   metadata.name    the device UUID lower-cased ("GPU-1F2E..." -> "gpu-1f2e...")
 *   metadata.labels  tensor-fusion.ai/node: <node>, tensor-fusion.ai/gpupool: <pool>
 *   status           uuid, gpuModel (upstream TensorFusion's board name, "A100_SXM_80G", "L4";
 *                    the NVML name for a model the table lacks),
 *                    vendor, index, phase ("Running"; "Unknown" once the device is gone),
 *                    capacity {tflops, vram} as quantities, nodeSelector
 *                    {kubernetes.io/hostname: <node>}
 * The hypervisor owns exactly these status members; the controller's reconciler merges
 * available and runningApps next to them.
 *
 * Pod limit regions: a pod bound to this node by the scheduler extender (annotation
 * tensor-fusion.ai/gpu-ids) that the webhook took over in soft or hard isolation (hard: read by
 * its tf-worker sidecar), or a remote-mode worker pod (component worker, read by its
 * tf-worker), gets one region with
 * its GPUs in gpu-ids order and, per GPU, the limits of its normalised annotations read with
 * the core workload spec (core/spec.h): compute-percent-limit as basis points, or
 * tflops-limit converted with that GPU's TFLOPS; vram-limit in bytes. A side left unset is
 * not enforced. Its files' owner and modes: tf_hv_k8s_pod_perms.
 *
 * Pure and thread-safe on distinct arguments (input trees are only read).
 */
#ifndef TF_HYPERVISOR_K8S_OBJECTS_H
#define TF_HYPERVISOR_K8S_OBJECTS_H

#include "core/spec.h"
#include "hypervisor/state.h"
#include "limits/shm.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define TF_HV_ANN_GPU_IDS TF_KEY_PREFIX "gpu-ids"
#define TF_HV_LABEL_NODE TF_KEY_PREFIX "node"
#define TF_HV_LABEL_POOL TF_KEY_PREFIX "gpupool"
#define TF_HV_LABEL_COMPONENT TF_KEY_PREFIX "component"
#define TF_HV_K8S_KEY_MAX 320     /* "<namespace>/<pod>" + NUL */
#define TF_HV_SHM_VOLUME "tf-shm" /* the webhook's volume of the pods' region directories */

/* GPU object name for device UUID into BUF; false when UUID is empty, has characters other
 * than letters, digits, '-' and '.', or does not fit. */
bool tf_hv_k8s_gpu_name(const char *uuid, char *buf, size_t len);

/* The labels above (new object, caller owns); POOL NULL: the node label alone. */
json_object *tf_hv_k8s_gpu_labels(const char *node, const char *pool);

/* The status members above for device D on NODE, with phase Running (new object). */
json_object *tf_hv_k8s_gpu_status(const struct tf_hv_device *d, const char *node);

/* True when some member of WANT is missing from HAVE (may be NULL) or different there:
 * whether a merge patch of WANT into HAVE would change anything. */
bool tf_hv_k8s_differs(json_object *have, json_object *want);

/* What a pod needs on this node. */
struct tf_hv_k8s_pod {
    char ns[64];
    char name[254];
    char uid[64];
    char key[TF_HV_K8S_KEY_MAX]; /* "<ns>/<name>" */
    char workload[254];          /* tensor-fusion.ai/workload, else the pod name */
    int ngpu;
    char uuids[TF_SHM_MAX_DEVICES][64]; /* as in gpu-ids */
    struct tf_shm_config cfg;           /* the region (name: the key, truncated) */
    struct tf_shm_perms perms;          /* its files' modes and the usage part's owner */
};

/* Who may write POD's usage part (its limits part is the node agent's, mode 0644); never
 * anyone outside the pod, never world-writable. Owner: the user every container that mounts
 * the region runs as (securityContext.runAsUser of the container, else of the pod), else root.
 * Group: one every container has -- the webhook's TF_SHM_POD_GROUP in the pod's
 * supplementalGroups, else the pod's fsGroup, else a runAsGroup they share -- which makes it
 * 0660; without one, 0600 (the owner alone; root when the user is not known either). Unknown
 * owners are -1. */
void tf_hv_k8s_pod_perms(json_object *pod, struct tf_shm_perms *out);

/* Decides POD's limit region on NODE, given this node's devices DEVS[0..NDEV) (absent ones
 * do not count). Returns 1 with OUT filled; 0 when the pod needs none (not bound to NODE, no
 * gpu-ids, neither a TensorFusion client nor a worker, not local, isolation shared or
 * partitioned, Succeeded or Failed); or, for
 * a pod that would need one but cannot have it, TF_EINVAL / TF_ERANGE / TF_EPARSE with ERR
 * saying why: invalid annotations (the spec's message, naming the key), a gpu-ids entry that
 * is not a present device of this node or is listed twice, more than 16 GPUs, a TFLOPS limit
 * on a GPU of unknown TFLOPS, names unusable as directories. */
int tf_hv_k8s_pod_plan(json_object *pod, const char *node, const struct tf_hv_device *devs,
                       int ndev, struct tf_hv_k8s_pod *out, char *err, size_t errlen);

/* The partitions a pod holds on this node (isolation partitioned): one of its template on
 * each GPU of its gpu-ids. */
struct tf_hv_k8s_part_want {
    char ns[64], name[254], uid[64];
    char key[TF_HV_K8S_KEY_MAX]; /* "<ns>/<name>" */
    char tpl[24];                /* tensor-fusion.ai/partition, as the scheduler wrote it */
    int ngpu;
    struct {
        char uuid[64];
        int index;       /* NVML index */
        unsigned slices; /* the template's compute slices and VRAM on that GPU's model */
        int64_t vram;
    } gpus[TF_SHM_MAX_DEVICES];
};

/* Decides the partitions POD needs on NODE with devices DEVS[0..NDEV). 1 with OUT filled; 0
 * when it needs none (not bound here, not a partitioned TensorFusion client or worker holding
 * GPUs, no gpu-ids or no tensor-fusion.ai/partition yet, Succeeded or Failed); TF_EINVAL /
 * TF_ERANGE / TF_EPARSE with ERR for one that cannot have them (invalid annotations, a GPU
 * that is not this node's, a template its GPU model does not have). Pure. */
int tf_hv_k8s_part_want(json_object *pod, const char *node, const struct tf_hv_device *devs,
                        int ndev, struct tf_hv_k8s_part_want *out, char *err, size_t errlen);

#endif
