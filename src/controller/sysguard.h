/* SPDX-License-Identifier: Apache-2.0
 *
 * The system-annotation guard of the Pod webhook: keys only TensorFusion itself writes.
 *
 * System keys (written by the controller alone):
 *   annotations  tensor-fusion.ai/gpu-ids, gpu-ids-<container>, container-gpus (the
 *                extender's placement), allocation-signature (its proof, allocsig.h), owner
 *                (the webhook's enabled-replicas bookkeeping), index (a partitioned pod's pod
 *                index, core/podindex.h)
 *   resources    tensor-fusion.ai/index_<k> in any container's limits or requests (with the
 *                index annotation, how the node's device plugin finds a pod)
 *   labels       tensor-fusion.ai/component (client: taken over by the webhook; worker: a
 *                remote worker pod the reconciler made, paired with clients), and
 *                tensor-fusion.ai/workload (which workload a worker pod serves)
 * Anyone but the controller's own identity (the configured system user):
 *   CREATE   has every system key removed from the pod (each named in a warning) before the
 *            webhook reads it, so a pod cannot choose its GPUs, pose as a worker or count
 *            against another owner; a pod the webhook takes over may not bring spec.nodeName
 *            (it would skip the scheduler that books its GPUs), nor volumes, mounts or
 *            containers under the names the webhook injects (tf_sysguard_reserved)
 *   UPDATE   may not add, change or remove a system key; on a pod the webhook took over
 *            (component label present) not any tensor-fusion.ai/ annotation or label either:
 *            its limits are booked by the scheduler and followed live by the node agent
 * Pure and thread-safe.
 */
#ifndef TF_CONTROLLER_SYSGUARD_H
#define TF_CONTROLLER_SYSGUARD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

/* The controller's username when none is configured: its service account in NS. */
#define TF_SYSGUARD_DEFAULT_SA "tensor-fusion"

bool tf_sysguard_system_annotation(const char *key);
bool tf_sysguard_system_label(const char *key);

/* Whether USERNAME (request.userInfo.username) is SYSTEM_USER, or, when SYSTEM_USER is NULL
 * or empty, system:serviceaccount:<NS>:tensor-fusion. */
bool tf_sysguard_is_system(const char *system_user, const char *ns, const char *username);

/* CREATE by anyone else: removes the system keys from POD in place and appends one warning
 * string per removed key to WARNINGS (a json array, may be NULL). Returns how many. */
size_t tf_sysguard_strip(json_object *pod, json_object *warnings);

/* CREATE by anyone else of a pod the webhook may take over: 0, or TF_EPERM with MSG when POD
 * brings a volume, volume mount or container under a name the webhook injects (volumes
 * tf-shm, tf-lib; containers tf-worker, tf-limiter-copy, tf-client-copy, tf-preload-*). The
 * webhook keeps what it finds under those names, so a pod could otherwise point the region
 * mount at its own volume, mount the node's whole region tree into its app container, or
 * bring its own "tf-worker" in place of the one that enforces its hard limits. */
int tf_sysguard_reserved(json_object *pod, char *msg, size_t msglen);

/* UPDATE by anyone else from OLD to POD: 0 when allowed, else TF_EPERM with MSG naming the
 * key. */
int tf_sysguard_update(json_object *old, json_object *pod, char *msg, size_t msglen);

#endif
