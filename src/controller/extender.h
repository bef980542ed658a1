/* SPDX-License-Identifier: Apache-2.0
 *
 * The kube-scheduler extender (profile tensor-fusion-scheduler, nodeCacheCapable: true):
 *   POST /scheduler/filter      ExtenderArgs -> ExtenderFilterResult (FailedNodes reasons are
 *                               the allocator's, verbatim)
 *   POST /scheduler/prioritize  ExtenderArgs -> HostPriorityList (allocator score 0..100 / 10)
 *   POST /scheduler/bind        ExtenderBindingArgs -> ExtenderBindingResult: reserves the GPUs
 *                               (core allocator), writes tensor-fusion.ai/gpu-ids and
 *                               tensor-fusion.ai/container-gpus on the pod, POSTs the Binding;
 *                               any failure rolls the reservation back.
 * Pods are read through the core workload spec (podreq.h); pods TensorFusion does not manage
 * and remote clients (whose workers hold the GPUs) pass every node and are bound as they are.
 *
 * State: the allocator's cluster is built from the GPU objects (status.capacity, uuid, model,
 * index, node), the GPUPools (oversubscription, isolation, QoS, placement from their
 * SchedulingConfigTemplate) and the GPUResourceQuotas; then every live pod's recorded
 * allocation (gpu-ids on its node, signed by this controller: tf_extender_set_allocsig) is
 * restored, so a restarted controller never double-books and a pod that brings its own
 * gpu-ids books nothing.
 * The pod handlers read each pod once as the informer reports it and keep the pods holding
 * GPUs in a compact ledger, so a rebuild reads no pod JSON. A change of GPUs, pools,
 * templates or quotas marks the state dirty and the next request rebuilds it; deleted or
 * finished pods release their GPUs at once.
 *
 * Filter and prioritize are answered from a verdict index over the allocator
 * (core/alloc_index.h): per request shape, each node's verdict and score stamped with the
 * node's version, so a call costs a comparison per candidate plus the nodes that changed.
 *
 * Threads: handlers are thread-safe. Filter and prioritize share a read lock; reservations take
 * the write lock, so concurrent binds never over-allocate.
 */
#ifndef TF_CONTROLLER_EXTENDER_H
#define TF_CONTROLLER_EXTENDER_H

#include "controller/https.h"
#include "controller/k8s/informer.h"

#include <stdbool.h>
#include <stdint.h>

struct tf_cluster;

struct tf_extender_sources {
    struct tf_informer *pods, *gpus, *pools, *templates, *quotas;
};

struct tf_extender;

/* DEFAULT_POOL names the pool of GPUs without a tensor-fusion.ai/gpupool label; POLICY is
 * "dynamic" or "static" (controller.isolationModePolicy). The client and informers are
 * borrowed; the informers' handlers must forward to tf_extender_handlers. */
struct tf_extender *tf_extender_new(struct tf_k8s_client *c, const char *default_pool,
                                    const char *policy);
void tf_extender_set_sources(struct tf_extender *x, const struct tf_extender_sources *src);
/* Binds sign the allocations they record with SIG (borrowed, outliving X) and the state
 * rebuild restores only allocations whose signature verifies (allocsig.h). Without it (NULL,
 * the default: tools loading clusters from files) every recorded allocation is restored. */
struct tf_allocsig;
void tf_extender_set_allocsig(struct tf_extender *x, const struct tf_allocsig *sig);
/* Events still waiting are written for up to 2 s first (see tf_k8s_recorder_destroy). */
void tf_extender_destroy(struct tf_extender *x);

/* Informer handlers: POD_HANDLERS for the pod informer (releases on delete/finish, keeps the
 * ledger of pods holding GPUs), GPU_HANDLERS for the GPU informer (keeps the GPU table; marks
 * the state dirty when what scheduling sees of a GPU changed), and INVENTORY_HANDLERS for
 * pools, templates and quotas (mark the state dirty). */
struct tf_informer_handlers tf_extender_pod_handlers(struct tf_extender *x);
struct tf_informer_handlers tf_extender_gpu_handlers(struct tf_extender *x);
struct tf_informer_handlers tf_extender_inventory_handlers(struct tf_extender *x);
/* Gang scheduling (core/gang.h): a bound pod of a gang (tensor-fusion.ai/gang-group-key and
 * gang-required-members, written by the webhook) keeps its reserved GPUs without being bound
 * (the bind fails with "waiting for gang", kube-scheduler retries) until the group's quorum
 * holds GPUs; then every waiting member is annotated and bound, none before. A group whose
 * members waited longer than its gang-timeout has their reservations released (and is refused
 * for TF_GANG_BACKOFF_MS): tf_extender_gang_expire, called on every bind and periodically by
 * the controller. Thread-safe. */
void tf_extender_gang_expire(struct tf_extender *x);

/* Forces a rebuild on the next request (e.g. after winning the leader election). */
void tf_extender_invalidate(struct tf_extender *x);

/* Builds the state from explicit arrays of GPU, GPUPool, SchedulingConfigTemplate,
 * GPUResourceQuota and Pod objects (borrowed) instead of the informers, and clears the dirty
 * mark (benchmarks, tools). The GPUs and pods replace what the handlers reported so far;
 * later rebuilds without informers use these pools, templates and quotas. Returns 0 or
 * TF_ENOMEM. */
int tf_extender_load(struct tf_extender *x, json_object *gpus, json_object *pools,
                     json_object *templates, json_object *quotas, json_object *pods);

/* Rebuilds the state now, as start-up, a leadership change and an inventory change do: the
 * cluster from the GPU table and the pool, template and quota informers (or what
 * tf_extender_load was given last), every pod the pod handlers reported holding GPUs
 * restored without reading its object again, then the binds the pod cache has not caught up
 * with. 0 or TF_ENOMEM. */
int tf_extender_rebuild(struct tf_extender *x);

/* Serves REQ when its path is one of the three verbs under /scheduler; false otherwise. */
bool tf_extender_handle(struct tf_extender *x, const struct tf_http_req *req,
                        struct tf_http_resp *resp);

/* The extender's Events (GPUAllocated, GPUAllocationFailed, Preempting, Preempted, the gang
 * reasons) are written by a recorder's thread, so that a bind never waits on them: waits at
 * most TIMEOUT_MS until those recorded so far are written; true when none is left. */
bool tf_extender_flush_events(struct tf_extender *x, int timeout_ms);
/* The recorder's counts: Events written, failed after their attempts, dropped (queue full). */
void tf_extender_event_stats(struct tf_extender *x, uint64_t *written, uint64_t *failed,
                             uint64_t *dropped);
/* CPU seconds the recorder's thread has run (benchmarks: the extender's CPU is its verbs'
 * threads and this one). */
double tf_extender_events_cpu_s(struct tf_extender *x);

/* Number of pods holding GPUs in the current state (tests, metrics); rebuilds if dirty. */
int tf_extender_allocations(struct tf_extender *x);
/* How many /prioritize calls were answered from the /filter before them (same Pod, that
 * filter's NodeNames text: see extender_int.h's memo), without decoding either again. */
uint64_t tf_extender_memo_hits(struct tf_extender *x);
/* How many /filter calls took their candidates from the /filter before them (the same
 * NodeNames text: see extender_int.h's candidate memo) instead of decoding them again. */
uint64_t tf_extender_cands_hits(struct tf_extender *x);

/* What the current state reserves on the GPU with uuid UUID: requested TFLOPS (milli) and
 * VRAM (bytes) and the number of pods on it (tests, metrics; rebuilds if dirty). 0, TF_ENOENT
 * (no such GPU) or TF_ESTATE (no state). */
int tf_extender_gpu_usage(struct tf_extender *x, const char *uuid, int64_t *tflops, int64_t *vram,
                          uint32_t *pods);

/* The allocator's full invariant check on the current state (tf_alloc_check): 0, or TF_ESTATE
 * with the first violation in ERR. */
int tf_extender_check(struct tf_extender *x, char *err, size_t errlen);

/* A cluster (pools with their placement, nodes, GPUs; no allocations) built from GPU, GPUPool
 * and SchedulingConfigTemplate objects (borrowed) exactly as the extender builds its own, for
 * planners that place pods on a fresh allocator (node compaction, defragmentation). 0 and
 * *OUT (caller owns: tf_cluster_destroy), or TF_ENOMEM. Thread-safe (reads X's settings). */
int tf_extender_build_cluster(const struct tf_extender *x, json_object *gpus, json_object *pools,
                              json_object *templates, struct tf_cluster **out);

/* The most a pod NS/NAME could request per GPU (the smallest over its GPUs of what is free
 * plus what it holds): the autoscaler's ceiling. 0, TF_ENOENT (holds no GPUs) or TF_ESTATE. */
int tf_extender_room(struct tf_extender *x, const char *ns, const char *name, int64_t *tflops,
                     int64_t *vram);

/* Changes the per-GPU requests and limits the allocator holds for pod NS/NAME in place (the
 * autoscaler applying a recommendation): R's TFLOPS apply to a side held in TFLOPS, its
 * percentages (basis points) to a side held by percent; 0 keeps a value. All or nothing
 * (tf_alloc_resize): 0, TF_ENOENT, TF_ENOSPC / TF_ENOTSUP with ERR set. */
struct tf_autoscale_resources;
int tf_extender_resize(struct tf_extender *x, const char *ns, const char *name,
                       const struct tf_autoscale_resources *r, char *err, size_t errlen);

#endif
