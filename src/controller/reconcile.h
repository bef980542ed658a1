/* SPDX-License-Identifier: Apache-2.0
 *
 * The reconcilers (run by the elected leader). One pass reads the informer caches, computes
 * the desired state and writes only what differs:
 *   - TensorFusionCluster -> GPUPools: one GPUPool per spec.gpuPools[] entry, its spec the
 *     entry's specTemplate (created, or overwritten when it drifts); cluster status totals.
 *   - GPU status from the hypervisor's report (status.capacity, status.nodeSelector) plus the
 *     allocations recorded on pods (tensor-fusion.ai/gpu-ids): available, runningApps.
 *   - Pools by selector (nodepool.h): each GPU node's pool from the GPUPools' nodeSelector /
 *     multiVendorNodeSelector, written as the label tensor-fusion.ai/gpupool of its GPUs and
 *     GPUNode (Event PoolAssigned; several matching pools: condition PoolConflict and a
 *     Warning Event), and under the static isolation policy its mode from the pool's
 *     isolationModeRules / defaultIsolationMode as the GPUs' status.isolationMode; the GPUs of
 *     a node whose heartbeat expired go Unknown (no new pods) until it is renewed.
 *   - GPUNode per node with GPUs (created when missing): totals, available, allocatedPods,
 *     and phase from its hypervisor's heartbeat Lease (tf-hypervisor-<node>, labelled
 *     tensor-fusion.ai/node): Pending until the first renewal, Running while renewTime +
 *     leaseDurationSeconds is ahead, Unknown after; Destroying once the GPUNode is being
 *     deleted. A change is an Event (NodeReady, NodeNotReady, NodePending).
 *   - GPUPool status: nodes, readyNodes (Running) and notReadyNodes, GPUs, TFLOPS/VRAM totals
 *     and availability (a GPU belongs to its node's pool, above); phase Running when every node is
 * ready, Pending while none has reported, Unknown when some node lost its heartbeat.
 *   - TensorFusionWorkload status: workerCount and readyWorkers from its pods; for remote
 *     workloads (spec.isLocalGPU false) one worker pod per client pod is created, and workers
 *     are deleted when no client is left.
 *   - TensorFusionConnection per remote client pod, paired with the least-loaded running
 *     worker of its workload (status.workerName, status.connectionURL); removed with the pod.
 *   - GPUResourceQuota status.used and availablePercent from the namespace's pods.
 *   - Provisioned pools (reconcile_provision.c): a GPUNodeClaim recording each node the pool
 *     needs (core/provision.h decides), Bound to the Node that joins for it, deleted when
 *     that node is gone.
 * Every decision a user would look for is recorded as an Event (GPUPoolCreated, GPUPoolUpdated,
 * WorkerCreated, WorkersScaledDown, WorkerAssigned, QuotaExceeded, ManagedNodeRequested,
 * GPUNodeClaimBound, GPUNodeClaimReleased, MaxResourceConstraintReached, ProvisioningBlocked).
 *
 * Threads: a reconciler is used by one thread at a time (the leader's loop).
 */
#ifndef TF_CONTROLLER_RECONCILE_H
#define TF_CONTROLLER_RECONCILE_H

#include "controller/k8s/informer.h"

#include <stdbool.h>

struct tf_reconcile_sources {
    struct tf_informer *pods, *clusters, *pools, *gpus, *gpunodes, *workloads, *connections,
        *quotas;
    struct tf_informer *claims, *nodeclasses, *nodes; /* Provisioned pools; NULL: off */
    struct tf_informer *leases; /* the hypervisors' heartbeat Leases (k8s_gpus.h); may be NULL */
};

struct tf_reconciler;

/* Strings are copied; the client and informers are borrowed. SHM_HOST_DIR: the nodes' root
 * of pod limit regions (the webhook's shmDir), mounted per pod into remote workers. */
struct tf_reconciler *tf_reconciler_new(struct tf_k8s_client *c,
                                        const struct tf_reconcile_sources *src,
                                        const char *default_pool, const char *worker_image,
                                        const char *shm_host_dir);
void tf_reconciler_destroy(struct tf_reconciler *r);
/* GPU status counts, and connections are paired with, only pods whose allocation carries a
 * valid signature of SIG (borrowed; allocsig.h); NULL: every recorded allocation counts. */
struct tf_allocsig;
void tf_reconciler_set_allocsig(struct tf_reconciler *r, const struct tf_allocsig *sig);
/* STATIC: isolationModePolicy static, so every GPU's status.isolationMode is its node's mode
 * under its pool's isolationModeRules (default: dynamic, no node modes). */
void tf_reconciler_set_static_policy(struct tf_reconciler *r, bool is_static);
/* Remote partitioned workloads' worker pods get a pod index from PODIDX (borrowed; podidx.h)
 * instead of NVIDIA_VISIBLE_DEVICES from gpu-ids, as the webhook gives local ones. */
struct tf_ctl_podidx;
void tf_reconciler_set_podidx(struct tf_reconciler *r, struct tf_ctl_podidx *podidx);
/* One full pass. Returns the number of objects written (>= 0) or a TF_E* code when the
 * caches are not synced yet. Individual write failures are logged and retried next pass. */
int tf_reconcile_once(struct tf_reconciler *r);

/* Worker address of connection NS/NAME for /api/connection: 0 and URL, TF_ENOENT (no such
 * connection) or TF_EBUSY (not paired yet). */
int tf_reconcile_connection_url(struct tf_informer *connections, const char *ns, const char *name,
                                char *url, size_t len);

#endif
