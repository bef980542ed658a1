/* SPDX-License-Identifier: Apache-2.0
 *
 * The GPU allocator: filter, score, reserve, release and resize GPU shares for pods on a
 * tf_cluster (seed 000 step 3, seed 002 step 3). Called per pod by the Kubernetes scheduler
 * extender (/filter, /prioritize, /bind), by the local mode and by `tfctl simulate`.
 *
 * Filters, in this order; a node fails at the first stage that leaves it no GPU, and its reason
 * names that stage (these strings go to kube-scheduler's FailedNodes verbatim):
 *   1. namespace quota (pod-level: every node gets the same reason; see quota.h; pods asking
 *      TFLOPS by compute percent bypass it)
 *   2. GPU phase Running
 *   3. isolation policy/mode compatibility (dynamic: GPU unlocked or locked to the pod's mode;
 *      static: the node's mode is the pod's; `shared` fits any mode)
 *   4. gpu-indices
 *   5. `shared` and `dedicated-gpu` need a whole idle GPU (no workload, no partition)
 *   6. partition template availability (`partitioned`)
 *   7. resources: available >= request (percent converted with the GPU's TFLOPS), and the sum
 *      of limits within the GPU's virtual (oversubscribed) capacity
 *   8. GPU model, 9. vendor
 *  10. gpu-count > 1: enough GPUs left on the one node
 *  11. max workers per node
 * e.g. "node n1: gpu 2/8 available, insufficient VRAM: need 16Gi, max free 12Gi".
 *
 * Score (0..100, higher is better) follows the pool's placement mode, over the node's GPUs
 * that are compatible with the pod's isolation (dynamic policy) or all of them (static):
 *   CompactFirst / NodeCompactGPULowLoad: node utilisation; LowLoadFirst: 100 - utilisation,
 * utilisation = vramWeight x used VRAM share + tflopsWeight x used TFLOPS share (0.7/0.3).
 * Within the chosen node, CompactFirst takes the most used GPUs that fit, the other two the
 * least used; multi-GPU pods prefer, in order, an all-NVLink set, a same-NUMA set, any set
 * (topology picks GPUs inside the node, it does not reorder nodes). Of nodes with equal
 * scores, the one that reached that score first wins.
 *
 * Reservation: only requests are reserved (available -= request); limits are accumulated per
 * GPU and bounded by its virtual capacity. `shared` and `dedicated` reserve the whole GPU;
 * `partitioned` reserves the chosen template's slots, TFLOPS and VRAM. Under the dynamic
 * policy the first workload on a GPU locks its mode and the last one to leave unlocks it.
 * Invariants, checked by tf_alloc_check and asserted in debug builds on every change:
 * 0 <= available <= capacity; capacity - available == sum of the GPU's reservations; sum of
 * limits <= virtual capacity (except as restored); workload counts, partition slots, node
 * aggregates and namespace usage equal what the live records say; release is idempotent.
 *
 * Cost: scoring a node is O(1) (its utilisation is kept with its aggregates); filtering one
 * is O(1) when its aggregates reject it and O(GPUs on the node) otherwise. tf_alloc_place
 * walks the pool's utilisation index best-first and stops at the first node that fits, so it
 * costs the better-scored nodes that do not fit, not the pool size. Reserve, release and
 * resize are O(GPUs of the pod + GPUs on its node), index moves O(1). Filter, score and
 * choose never allocate; place allocates only to store a new record (amortised). For the
 * scheduler extender's per-request filter and score over thousands of candidates,
 * core/alloc_index.h keeps these verdicts per request shape, stamped with node versions;
 * tf_alloc_filter / tf_alloc_score are its reference. Rebuilding a state pod by pod goes
 * through tf_alloc_bulk_begin/_end (one aggregate refresh per node).
 *
 * Ownership and threads: a tf_alloc borrows its cluster (and quota set, may be NULL) for its
 * whole life and is the only writer of their runtime fields. Not thread-safe: callers hold
 * one lock around every call; filter and score only read and may share a read lock.
 * Request strings are borrowed for the duration of the call only.
 */
#ifndef TF_CORE_ALLOC_H
#define TF_CORE_ALLOC_H

#include "core/cluster.h"
#include "core/quota.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_KEY_MAX 320   /* "namespace/name": 63 + 1 + 253, NUL included */
#define TF_KEY_INLINE 56 /* keys shorter than this live inside the record */
#define TF_GPU_COUNT_MAX 128

/* Per-GPU resources of a pod. A limit of 0 (not by percent) means "same as the request". */
struct tf_alloc_resources {
    int64_t req_tflops, lim_tflops;   /* milli-TFLOPS, when not by percent */
    int32_t req_percent, lim_percent; /* basis points 0..10000 of the GPU's TFLOPS */
    bool req_by_percent, lim_by_percent;
    int64_t req_vram, lim_vram; /* bytes */
};

/* One container's share of a multi-container pod (tensor-fusion.ai/container-gpu-count). */
struct tf_alloc_container {
    const char *name;
    uint16_t gpus;
};

struct tf_alloc_request {
    const char *ns, *name; /* required */
    const char *pool;      /* NULL or "" = the cluster's default pool */
    struct tf_alloc_resources res;
    uint16_t gpu_count;          /* 1..128; 0 = 1, or the sum of the container split */
    enum tf_isolation isolation; /* TF_ISOLATION_UNSET = soft */
    enum tf_qos qos;             /* TF_QOS_UNSET = the pool's defaultQoS */
    const char *model;           /* NULL = any; family ("A100") or exact name */
    const char *vendor;          /* NULL = any */
    const int32_t *gpu_indices;  /* restricts the GPUs to these device indexes */
    uint16_t n_indices;
    bool dedicated;                              /* dedicated-gpu: whole GPU */
    const struct tf_alloc_container *containers; /* disjoint split; counts sum to gpu_count */
    uint16_t ncontainers;
    bool remote;                    /* is-local-gpu false: the worker takes the GPUs */
    const char *partition_template; /* partitioned: template id, NULL = smallest that fits */
};

/* Storage the request built by tf_alloc_request_from_spec points into. */
struct tf_alloc_request_buf {
    struct tf_alloc_container containers[TF_GPU_COUNT_MAX];
    int32_t indices[TF_SPEC_MAX_GPUS];
};

/* Builds the allocator's request from a parsed workload spec S (core/spec.h), so the
 * scheduler sees exactly what the webhook saw. NS/NAME override the spec's (NULL: take the
 * spec's; a missing namespace is "default"). Strings stay borrowed from S, arrays live in BUF:
 * both must outlive R. Containers become a disjoint split only when their counts add up to
 * the pod's GPU count; otherwise they share the pod's GPUs and R has no split. TF_EINVAL when
 * S is not enabled (not a TensorFusion pod) or has no name. */
int tf_alloc_request_from_spec(const struct tf_spec *s, const char *ns, const char *name,
                               struct tf_alloc_request *r, struct tf_alloc_request_buf *buf,
                               char *err, size_t errlen);

/* A placement: the node and GPUs (cluster ids) in selection order; container i of the request
 * gets the next containers[i].gpus of them. */
struct tf_alloc_result {
    uint32_t node;
    uint16_t ngpus;
    int score; /* 0..100 */
    uint32_t gpus[TF_NODE_MAX_GPUS];
};

/* Caller-provided storage for reason strings (bounded; a reason that does not fit is cut and
 * ends in "..."). N counts the reasons appended; they are consecutive NUL-terminated strings
 * starting at BUF. Init with tf_reasons_init. */
struct tf_reasons {
    char *buf;
    size_t cap, len;
    uint32_t n;
};
void tf_reasons_init(struct tf_reasons *rb, char *buf, size_t cap);
/* The reason after PREV (NULL = the first), or NULL at the end. */
const char *tf_reasons_next(const struct tf_reasons *rb, const char *prev);

/* One node's verdict from tf_alloc_filter. */
struct tf_node_verdict {
    uint32_t node; /* TF_NONE when the name is not a node of the cluster */
    bool fit;
    int score;          /* 0..100 when FIT */
    const char *reason; /* when !FIT: points into the caller's tf_reasons (or NULL if none) */
};

/* One GPU share held by a pod. */
struct tf_alloc_slot {
    uint32_t gpu;
    uint32_t next, prev;          /* the GPU's workload list (slot refs), TF_NONE ends */
    int8_t part;                  /* partition template index, -1 none (here: 48 bytes a slot) */
    int64_t tflops, vram;         /* reserved */
    int64_t lim_tflops, lim_vram; /* limits */
};

/* A pod's allocation. Read-only outside alloc.c; addresses stay valid until released. */
struct tf_alloc_record {
    char key_inline[TF_KEY_INLINE];
    char *key_heap;  /* owned, when the key does not fit inline */
    uint16_t ns_len; /* key = namespace "/" name */
    bool live, suspended;
    uint8_t isolation, qos; /* resolved: never UNSET */
    bool dedicated, remote, quota_exempt;
    uint32_t node, pool;
    uint16_t ngpus;
    struct tf_alloc_resources res; /* as requested, for resize and rebuild */
    struct tf_quota_usage charged; /* what the namespace usage holds for this pod */
    struct tf_alloc_slot slots_inline[2];
    struct tf_alloc_slot *slots_heap; /* owned, when ngpus > 2 */
    uint32_t next_free;
};

struct tf_alloc;

/* New allocator over C (and Q, may be NULL: no quotas). NULL on allocation failure. */
struct tf_alloc *tf_alloc_new(struct tf_cluster *c, struct tf_quota_set *q);
/* Frees the allocator and its records; the cluster keeps its current availability. NULL ok. */
void tf_alloc_destroy(struct tf_alloc *a);

/* Filters (and scores) REQ on the N nodes NAMES, writing OUT[0..N). Returns 0 when every
 * verdict is filled (some may not fit), or a pod-level failure with ERR set and every verdict
 * unfit with that reason: TF_EINVAL (malformed request), TF_ENOENT (unknown pool), TF_ENOSPC
 * (namespace quota), TF_ENOTSUP (partitioned under the dynamic policy). RB may be NULL (no
 * reasons are formatted: the cheap path). */
int tf_alloc_filter(const struct tf_alloc *a, const struct tf_alloc_request *req,
                    const char *const *names, size_t n, struct tf_node_verdict *out,
                    struct tf_reasons *rb, char *err, size_t errlen);

/* Scores REQ on the N nodes NAMES (0..100; 0 for nodes that do not fit or are unknown).
 * Same return codes as tf_alloc_filter. */
int tf_alloc_score(const struct tf_alloc *a, const struct tf_alloc_request *req,
                   const char *const *names, size_t n, int *scores, char *err, size_t errlen);

/* Best placement of REQ in its pool without reserving it: 0 and *RES, or TF_ENOSPC with one
 * reason per node of the pool in RB (when given), or a pod-level code as tf_alloc_filter. */
int tf_alloc_choose(const struct tf_alloc *a, const struct tf_alloc_request *req,
                    struct tf_alloc_result *res, struct tf_reasons *rb, char *err, size_t errlen);

/* tf_alloc_choose, then reserve: the pod's key must not be held already (TF_EEXIST). */
int tf_alloc_place(struct tf_alloc *a, const struct tf_alloc_request *req,
                   struct tf_alloc_result *res, struct tf_reasons *rb, char *err, size_t errlen);

/* Bind: re-checks REQ on NODE, picks its GPUs and reserves them. 0 and *RES (may be NULL);
 * TF_ENOSPC with the node's reason in ERR; TF_EEXIST if the pod is already placed; pod-level
 * codes as tf_alloc_filter. */
int tf_alloc_reserve(struct tf_alloc *a, const struct tf_alloc_request *req, const char *node,
                     struct tf_alloc_result *res, char *err, size_t errlen);

/* Rebuild at start-up from a pod's annotations (tensor-fusion.ai/gpu-ids): reserves exactly
 * the GPUs UUIDS[0..N) on NODE. Checks what keeps the invariants (GPUs on the node, isolation
 * compatible, whole-GPU/partition availability, capacity), not what only matters for new pods
 * (phase, model, vendor, indices, workers, quota, limits); usage is charged. TF_ENOENT for an
 * unknown node/GPU, TF_ENOSPC when the GPUs cannot hold it, TF_EEXIST if already held. */
int tf_alloc_restore(struct tf_alloc *a, const struct tf_alloc_request *req, const char *node,
                     const char *const *uuids, size_t n, char *err, size_t errlen);

/* Bulk loading (a scheduler rebuilding its state from every pod's annotations): between
 * tf_alloc_bulk_begin and tf_alloc_bulk_end only tf_alloc_restore and tf_alloc_release may be
 * called; they leave the node aggregates and the pools' utilisation indexes for _end to bring
 * up to date once per node touched, instead of once per pod. EXPECTED (0 = unknown) sizes the
 * record store for that many pods at once. Begin fails with TF_ENOMEM (nothing changes). */
int tf_alloc_bulk_begin(struct tf_alloc *a, uint32_t expected);
void tf_alloc_bulk_end(struct tf_alloc *a);

/* Releases the pod's allocation. 0 when released, TF_ENOENT when it held none (nothing
 * changes: releasing twice is harmless). */
int tf_alloc_release(struct tf_alloc *a, const char *ns, const char *name);

/* Changes a placed pod's per-GPU resources in place (autoscaler). Checks that the new
 * requests fit every one of its GPUs (available + current >= new), the limits stay within the
 * virtual capacity, and the quota allows the change; all or nothing. TF_ENOENT (not placed),
 * TF_ENOTSUP (shared/dedicated/partitioned), TF_ENOSPC with a reason, TF_EINVAL. */
int tf_alloc_resize(struct tf_alloc *a, const char *ns, const char *name,
                    const struct tf_alloc_resources *res, char *err, size_t errlen);

/* The cluster this allocator works on. */
const struct tf_cluster *tf_alloc_cluster(const struct tf_alloc *a);
/* The pool REQ schedules in (its pool, or the default), or TF_NONE. */
uint32_t tf_alloc_request_pool(const struct tf_alloc *a, const struct tf_alloc_request *req);

/* The pod's record id, or TF_NONE. */
uint32_t tf_alloc_find(const struct tf_alloc *a, const char *ns, const char *name);
/* The record with id ID (NULL when free or out of range); ids are < tf_alloc_id_limit(). */
const struct tf_alloc_record *tf_alloc_record_at(const struct tf_alloc *a, uint32_t id);
uint32_t tf_alloc_id_limit(const struct tf_alloc *a);
/* Number of live records. */
uint32_t tf_alloc_count(const struct tf_alloc *a);
/* "namespace/name" of R, and its slot I (0 <= I < R->ngpus). */
const char *tf_alloc_record_key(const struct tf_alloc_record *r);
const struct tf_alloc_slot *tf_alloc_record_slot(const struct tf_alloc_record *r, unsigned i);
/* Record ids of the workloads on GPU, most recent first: writes up to CAP, returns the total. */
size_t tf_alloc_gpu_workloads(const struct tf_alloc *a, uint32_t gpu, uint32_t *ids, size_t cap);

/* What-if support (preemption, defragmentation planning): takes record ID's reservation off
 * its GPUs (and its quota usage) without forgetting it, and puts it back. Resume re-applies
 * exactly what was suspended; it fails with TF_ENOSPC (nothing changes) if the GPUs can no
 * longer hold it. Suspended records are invisible to filters; release works on them. */
int tf_alloc_suspend(struct tf_alloc *a, uint32_t id);
int tf_alloc_resume(struct tf_alloc *a, uint32_t id);

/* Checks REQ against one node as filter would (quota excluded) and selects its GPUs: 0 and
 * *RES, or TF_ENOSPC. The building block for what-if planners. */
int tf_alloc_fit_node(const struct tf_alloc *a, const struct tf_alloc_request *req, uint32_t node,
                      struct tf_alloc_result *res, char *err, size_t errlen);

/* Full O(everything) verification of the invariants above. 0, or TF_ESTATE with the first
 * violation described in ERR. */
int tf_alloc_check(const struct tf_alloc *a, char *err, size_t errlen);

/* Per-GPU TFLOPS a request means on GPU capacity CAP (percent converted), and the same for
 * its limit. */
int64_t tf_alloc_req_tflops(const struct tf_alloc_resources *r, int64_t cap);
int64_t tf_alloc_lim_tflops(const struct tf_alloc_resources *r, int64_t cap);

#endif
