/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tf-hypervisor: the node agent's pod side. An informer watches the Pods of this
 * node (fieldSelector spec.nodeName=<node>); the hypervisor's main loop then keeps one limit
 * region per pod that needs one (k8s_objects.h: soft isolation, bound with
 * tensor-fusion.ai/gpu-ids) at
 *   <shm root>/<namespace>/<pod>/shm     (next to it: pod-uid, the pod's metadata.uid)
 * registered with the limit engine exactly as local soft workloads are (soft.h), so the
 * webhook-injected limiter (TF_SHM_PATH=/run/tensor-fusion/shm/$(POD_NAMESPACE)/$(POD_NAME)/shm)
 * finds its limits there:
 *   - a new pod gets a fresh region; when the annotations change, the limits change live;
 *   - a pod deleted, finished (Succeeded/Failed) or no longer needing one loses its region
 *     and its engine entry;
 *   - after a hypervisor restart, a region whose pod-uid matches the live pod is adopted as
 *     it is (VRAM accounting and PID slots kept, limits rewritten only if they changed);
 *     one of another pod of the same name is replaced; once the first list of pods is in,
 *     region directories of pods that no longer exist are removed.
 * Nothing is decided before the informer's first list (until then regions are left alone:
 * running apps keep their last limits). Every metrics interval, one tf_worker_usage point per
 * pod and GPU goes to the hypervisor's sink (worker = pod name, namespace, workload).
 *
 * Threads: the informer's thread only flags changes; tf_hv_k8s_pods_step and _destroy run on
 * the hypervisor's main loop (which owns the sink). The client, HV and its soft engine
 * outlive the object.
 */
#ifndef TF_HYPERVISOR_K8S_PODS_H
#define TF_HYPERVISOR_K8S_PODS_H

#include "controller/k8s/client.h"
#include "hypervisor/hv.h"

#include <stdint.h>

struct tf_hv_k8s_pods;

/* Creates the pod side for NODE with regions under SHM_ROOT (strings copied) and starts its
 * informer. NULL on allocation or thread failure. */
struct tf_hv_k8s_pods *tf_hv_k8s_pods_start(struct tf_hv *hv, struct tf_k8s_client *c,
                                            const char *node, const char *shm_root);
/* Reconciles regions (when pods changed, and every second) and records metrics when due;
 * NOW_MS is CLOCK_MONOTONIC milliseconds. */
void tf_hv_k8s_pods_step(struct tf_hv_k8s_pods *p, int64_t now_ms);
/* Whether process PID is in the cgroup of the pod whose region is KEY ("<ns>/<pod>"). Main
 * loop. Accepts NULL. */
bool tf_hv_k8s_pods_owns(struct tf_hv_k8s_pods *p, const char *key, int pid);
/* The VRAM escape check (escape.h) over the pods' regions, from the last samples: main loop,
 * after sampling. Accepts NULL. */
void tf_hv_k8s_pods_check_escapes(struct tf_hv_k8s_pods *p);
/* Stops the informer and unregisters the regions; their files stay (the apps keep their
 * limits and a restarted hypervisor adopts them). Accepts NULL. */
void tf_hv_k8s_pods_destroy(struct tf_hv_k8s_pods *p);

#endif
