/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tf-hypervisor: the node agent's GPU publisher. A thread that, at start and
 * whenever discovery changes the device set in the state store (checked every second), and
 * every minute regardless, makes the API's GPU objects match this node's devices
 * (k8s_objects.h for their shape):
 *   - per present device: create the object when missing (name and labels), merge-patch its
 *     node label when it differs, merge-patch its status subresource when a member the
 *     hypervisor owns differs (each patch conditional on the resourceVersion read, retried on
 *     409 by tf_k8s_merge_patch_retry);
 *   - every other GPU object labelled with this node (a device that disappeared, now or while
 *     the hypervisor was down) gets status.phase "Unknown", so the extender stops placing pods
 *     on it while the reconcilers keep its history. A device that comes back is Running again.
 * A failed round is retried with backoff (1 s doubling to 30 s). Borrowed: the client and
 * the state store outlive the publisher.
 */
#ifndef TF_HYPERVISOR_K8S_GPUS_H
#define TF_HYPERVISOR_K8S_GPUS_H

#include "controller/k8s/client.h"
#include "hypervisor/state.h"

/* The heartbeat: once the GPUs are published, and every 10 s after, the Lease
 * tf-hypervisor-<node> (coordination.k8s.io/v1, in LEASE_NS; labels
 * tensor-fusion.ai/component=hypervisor, tensor-fusion.ai/node=<node>) gets renewTime now
 * and leaseDurationSeconds TF_HV_K8S_LEASE_SECONDS. tf-controller derives the GPUNode's phase
 * from it (Pending before the first renewal, Running while it is fresh, Unknown once it
 * expired). */
#define TF_HV_K8S_LEASE_PREFIX "tf-hypervisor-"
#define TF_HV_K8S_LEASE_SECONDS 40

struct tf_hv_k8s_gpus;

/* Starts the thread (strings copied). POOL ("" or NULL: none) labels GPU objects only when
 * they are created: the tensor-fusion.ai/gpupool label belongs to tf-controller, which assigns
 * each node's pool by the GPUPools' selectors; the publisher reads it back from the objects
 * (with every heartbeat until known, then with every resync) and calls ON_POOL(pool, ARG)
 * (may be NULL) from its thread whenever it changes. NULL on allocation or thread failure. */
struct tf_hv_k8s_gpus *tf_hv_k8s_gpus_start(struct tf_k8s_client *c, struct tf_hv_state *st,
                                            const char *node, const char *pool,
                                            const char *lease_ns,
                                            void (*on_pool)(const char *pool, void *arg),
                                            void *arg);
/* Stops and joins the thread (accepts NULL). The objects stay as published. */
void tf_hv_k8s_gpus_stop(struct tf_hv_k8s_gpus *g);

#endif
