/* SPDX-License-Identifier: Apache-2.0
 *
 * The scheduler's model of the GPU fleet (seed 000 resource hierarchy):
 * TensorFusionCluster -> GPUPool -> GPUNode -> GPU. Each GPU has its model, vendor, index,
 * NUMA node, NVLink peers, phase, physical capacity, virtual (oversubscribed) capacity, the
 * amounts still available, its isolation mode and its partition slots. Each node carries
 * aggregates (max free TFLOPS/VRAM, idle GPUs, model/vendor masks, per-mode capacity sums)
 * that let the allocator reject or rank a node in O(1) without touching its GPUs.
 *
 * Isolation policy (cluster-wide, controller.isolationModePolicy):
 *   dynamic (default): a GPU has no mode until the first workload is placed on it, takes that
 *            workload's mode, and returns to "none" when the last one leaves. `partitioned`
 *            is not available under this policy.
 *   static:  every GPU of a node runs the node's mode, resolved once when the node is added
 *            (the caller applies the pool's isolationModeRules / defaultIsolationMode; see
 *            cluster_yaml.h). `partitioned` requires this policy.
 *
 * Oversubscription (pool): only requests are reserved against the physical capacity; the sum of
 * limits on a GPU may reach its virtual capacity: TFLOPS x tflopsOversellRatio/100 (default
 * 500 %), and VRAM + the node's host memory x vramExpandToHostMem/100 shared equally by the
 * node's GPUs (default 50 %; no expansion when the node's host memory is unknown).
 *
 * Pool indexes: each pool keeps its nodes bucketed by utilisation (struct tf_util_index), so
 * the allocator reaches the best-scored node without scanning the pool; every change of a
 * node's aggregates moves it in O(1). The pool's score weights must not change after nodes
 * were added (they define the buckets).
 *
 * Ownership: a tf_cluster owns every string and array reachable from it (names and uuids are
 * copied in). Struct fields are readable by anyone; the fields marked "runtime" are written only
 * by the allocator (alloc.c) and tf_cluster_set_gpu_phase. Pointers into the pools/nodes/gpus
 * arrays are invalidated by tf_cluster_add_pool / tf_cluster_add_node; use the uint32 ids.
 * Not thread-safe: the owner serialises all calls (read-only accessors may run concurrently
 * with each other).
 */
#ifndef TF_CORE_CLUSTER_H
#define TF_CORE_CLUSTER_H

#include "core/gpu_models.h"
#include "core/partition.h"
#include "core/spec.h"
#include "core/strmap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_NODE_MAX_GPUS 64 /* GPU indexes on a node are 0..63 */
#define TF_NONE UINT32_MAX  /* "no id" for node/GPU/pool ids */

/* Isolation modes and QoS levels are the workload spec's (core/spec.h): enum tf_isolation
 * (TF_ISOLATION_UNSET doubles as "GPU not locked to a mode" under the dynamic policy) and
 * enum tf_qos, with their names and parsers. Arrays indexed by them have these sizes. */
#define TF_ISO_MODES 5  /* TF_ISOLATION_UNSET .. TF_ISOLATION_PARTITIONED */
#define TF_QOS_LEVELS 5 /* TF_QOS_UNSET .. TF_QOS_CRITICAL */

enum tf_iso_policy { TF_ISOPOL_DYNAMIC = 0, TF_ISOPOL_STATIC };

enum tf_placement_mode {
    TF_PLACE_COMPACT_FIRST = 0,         /* pack nodes, pack GPUs */
    TF_PLACE_LOW_LOAD_FIRST,            /* spread nodes, spread GPUs */
    TF_PLACE_NODE_COMPACT_GPU_LOW_LOAD, /* pack nodes, spread GPUs within the node */
};

enum tf_gpu_phase {
    TF_GPU_PENDING = 0,
    TF_GPU_PROVISIONING,
    TF_GPU_RUNNING,
    TF_GPU_UNKNOWN,
    TF_GPU_DESTROYING,
    TF_GPU_MIGRATING,
};

/* Names as users write them ("CompactFirst", "Running", "dynamic") and their parsers (exact
 * spelling for placement modes and phases, case-insensitive for the policy). Parsers return 0
 * or TF_EINVAL. */
const char *tf_iso_policy_name(enum tf_iso_policy p);
int tf_iso_policy_parse(const char *s, enum tf_iso_policy *out);
const char *tf_placement_name(enum tf_placement_mode m);
int tf_placement_parse(const char *s, enum tf_placement_mode *out);
const char *tf_gpu_phase_name(enum tf_gpu_phase p);
int tf_gpu_phase_parse(const char *s, enum tf_gpu_phase *out);

/* Price of one QoS level (seed 000: each level has its own rate). Nano-units of currency
 * (upstream's default "$0.0069228" per TFLOPS-hour is 6922800). */
struct tf_qos_price {
    bool set;
    int64_t tflops_hour_nano;         /* per FP16 TFLOPS per hour */
    int64_t vram_gib_hour_nano;       /* per GiB of VRAM per hour */
    int32_t limits_over_requests_pct; /* charge for limits above requests, percent */
};

struct tf_pool_config {
    bool is_default;
    enum tf_placement_mode placement; /* default NodeCompactGPULowLoad (the chart's default) */
    int32_t tflops_oversell_pct;      /* 100..100000, default 500 */
    int32_t vram_expand_host_mem_pct; /* 0..100, default 50 */
    int32_t vram_weight;              /* score weights in permille, sum 1000 (700/300) */
    int32_t tflops_weight;
    uint32_t max_workers_per_node;       /* 0 = unlimited */
    enum tf_isolation default_isolation; /* static policy fallback node mode, default soft */
    enum tf_qos default_qos;             /* default medium */
    int64_t min_tflops, max_tflops;      /* capacityConfig (milli-TFLOPS, 0 = unset) */
    int64_t min_vram, max_vram;          /* bytes, 0 = unset */
    struct tf_qos_price pricing[TF_QOS_LEVELS];
};

/* Utilisation views: which GPUs of a node a pod could share, hence which count towards the
 * node's utilisation for it. ALL: every Running GPU (static policy; whole-GPU pods). SOFT /
 * HARD (dynamic policy): the unlocked GPUs plus those locked to that mode. */
enum tf_view { TF_VIEW_ALL = 0, TF_VIEW_SOFT, TF_VIEW_HARD };
#define TF_VIEWS 3
#define TF_UTIL_BUCKETS 10001 /* utilisation in basis points, 0..10000 */
#define TF_UTIL_WORDS ((TF_UTIL_BUCKETS + 63) / 64)

/* A pool's nodes bucketed by utilisation (one index per view): doubly linked lists per bucket,
 * FIFO (a node entering a bucket goes to its tail), and a two-level bitmap of the non-empty
 * buckets, so the fullest or emptiest node is found in O(1) and a node moves in O(1). */
struct tf_util_index {
    uint32_t head[TF_UTIL_BUCKETS], tail[TF_UTIL_BUCKETS]; /* node ids, TF_NONE when empty */
    uint64_t bits[TF_UTIL_WORDS];
    uint64_t summary[(TF_UTIL_WORDS + 63) / 64];
};

struct tf_pool {
    char *name; /* owned */
    struct tf_pool_config cfg;
    uint32_t *nodes; /* owned: ids of this pool's nodes, in insertion order */
    uint32_t nnodes, nodes_cap;
    struct tf_util_index *index; /* owned: TF_VIEWS indexes */
};

/* One GPU as the caller describes it when adding a node. */
struct tf_gpu_spec {
    const char *uuid;                 /* unique in the cluster, 1..127 chars (copied) */
    const struct tf_gpu_model *model; /* required */
    int32_t index;                    /* device index on the node, 0..63, unique per node */
    int16_t numa;                     /* NUMA node, -1 unknown */
    enum tf_gpu_phase phase;
    uint64_t nvlink;                  /* bit i: NVLink to the GPU with index i of the same node */
    int64_t tflops_milli, vram_bytes; /* 0 = the model's */
};

struct tf_node_spec {
    const char *name;              /* unique in the cluster (copied) */
    enum tf_isolation static_mode; /* node mode under the static policy: soft, hard or
                                      partitioned; NONE = the pool's defaultIsolationMode */
    int64_t host_mem_bytes;        /* 0 unknown (no VRAM expansion) */
    uint32_t max_workers;          /* 0 = the pool's maxWorkersPerNode */
    const struct tf_gpu_spec *gpus;
    uint16_t ngpus; /* 1..TF_NODE_MAX_GPUS */
};

struct tf_gpu {
    char *uuid; /* owned */
    const struct tf_gpu_model *model;
    uint32_t node;
    uint16_t pos; /* position among the node's GPUs (0..ngpus-1) */
    int16_t numa;
    int32_t index;
    uint8_t model_idx;              /* index in the model table */
    uint8_t vendor_idx;             /* index in tf_vendors */
    uint8_t phase;                  /* enum tf_gpu_phase */
    uint8_t mode;                   /* runtime: enum tf_isolation in effect (static: the node's) */
    uint64_t nvlink;                /* NVLink peers as positions within the node */
    int64_t cap_tflops, cap_vram;   /* physical */
    int64_t virt_tflops, virt_vram; /* bound on the sum of limits */
    /* runtime */
    int64_t avail_tflops, avail_vram; /* capacity - sum of reserved requests, >= 0 */
    int64_t lim_tflops, lim_vram;     /* sum of limits of the workloads here */
    uint32_t nworkloads;
    uint32_t head;                     /* allocator's workload list (slot ref), TF_NONE if empty */
    uint8_t part_compute, part_memory; /* partition slots in use */
    uint8_t nparts;
};

/* Capacity and availability of a node's Running GPUs currently in one isolation mode. */
struct tf_mode_sum {
    int64_t cap_tflops, cap_vram, avail_tflops, avail_vram;
};

struct tf_node {
    char *name; /* owned */
    uint32_t pool;
    uint32_t gpu_first; /* this node's GPUs are gpus[gpu_first .. gpu_first + ngpus) */
    uint16_t ngpus;
    uint8_t static_mode; /* enum tf_isolation */
    int64_t host_mem;
    uint32_t max_workers; /* effective limit, 0 = unlimited */
    uint64_t model_mask;  /* bit = model table index of some GPU here */
    uint32_t vendor_mask; /* bit = tf_vendors index */
    /* runtime aggregates (over Running GPUs), kept by tf_cluster_node_refresh */
    uint32_t nworkers;
    uint16_t running_gpus, idle_gpus; /* idle: no workload, no partition */
    int64_t max_free_tflops, max_free_vram;
    struct tf_mode_sum sum[TF_ISO_MODES];
    /* utilisation per view (basis points, pool's weights) and its place in the pool index */
    uint16_t util[TF_VIEWS];
    uint32_t prev[TF_VIEWS], next[TF_VIEWS];
    /* runtime: changes whenever anything of the node or its GPUs that a filter reads may have
     * changed (every tf_cluster_node_refresh), so a verdict stamped with it stays exact while
     * it is equal (core/fitindex.h) */
    uint32_t version;
};

struct tf_strpool;

struct tf_cluster {
    enum tf_iso_policy policy;
    struct tf_pool *pools;
    uint32_t npools, pools_cap;
    struct tf_node *nodes;
    uint32_t nnodes, nodes_cap;
    struct tf_gpu *gpus;
    uint32_t ngpus, gpus_cap;
    struct tf_strmap pool_by_name, node_by_name, gpu_by_uuid;
    struct tf_partition_profile *profiles[64]; /* by model table index; owned; NULL = none */
    struct tf_strpool *names, *uuids; /* owned: node names and GPU uuids, each packed together
                                         so that name lookups touch few cache lines */
    uint32_t epoch; /* changes with every partition profile replaced (see tf_node.version) */
};

/* Defaults of a pool (see struct tf_pool_config). */
void tf_pool_config_init(struct tf_pool_config *cfg);

/* New empty cluster with the built-in partition profiles; NULL on allocation failure. */
struct tf_cluster *tf_cluster_new(enum tf_iso_policy policy);
/* Frees C and everything it owns; accepts NULL. */
void tf_cluster_destroy(struct tf_cluster *c);

/* Adds a pool. CFG is validated (ratios, weights, modes) and copied; *ID gets the pool id.
 * TF_EINVAL / TF_EEXIST / TF_ENOMEM with a message in ERR. */
int tf_cluster_add_pool(struct tf_cluster *c, const char *name, const struct tf_pool_config *cfg,
                        uint32_t *id, char *err, size_t errlen);
/* Makes room for NODES more nodes holding GPUS more GPUs (bulk building: no growth on the
 * way). 0 or TF_ENOMEM. */
int tf_cluster_reserve(struct tf_cluster *c, uint32_t nodes, uint32_t gpus);
/* Adds a node and all its GPUs to POOL. Everything is validated first (unique names/uuids/
 * indexes, models, NVLink peers present, static mode); on error nothing was added. */
int tf_cluster_add_node(struct tf_cluster *c, uint32_t pool, const struct tf_node_spec *spec,
                        uint32_t *id, char *err, size_t errlen);
/* Replaces the partition profile of PROFILE->model (validated, copied). TF_EBUSY while a GPU
 * of that model holds partitions. */
int tf_cluster_set_partition_profile(struct tf_cluster *c, const struct tf_partition_profile *p,
                                     char *err, size_t errlen);
/* The partition profile for GPU G's model, or NULL when it cannot be partitioned. */
const struct tf_partition_profile *tf_cluster_profile(const struct tf_cluster *c,
                                                      const struct tf_gpu *g);

/* Lookups: the id, or TF_NONE. NAME/UUID need not be NUL-terminated when LEN is given. */
uint32_t tf_cluster_pool_find(const struct tf_cluster *c, const char *name);
uint32_t tf_cluster_node_find(const struct tf_cluster *c, const char *name, size_t len);
uint32_t tf_cluster_gpu_find(const struct tf_cluster *c, const char *uuid, size_t len);
/* tf_cluster_node_find with HASH = tf_strmap_hash(NAME, LEN) already computed. */
uint32_t tf_cluster_node_find_hashed(const struct tf_cluster *c, const char *name, size_t len,
                                     uint32_t hash);
/* The pool marked default, else the first pool; TF_NONE when there is none. */
uint32_t tf_cluster_default_pool(const struct tf_cluster *c);

/* Changes a GPU's phase (hypervisor reports). Allocations already on it stay; only Running
 * GPUs take new ones. */
void tf_cluster_set_gpu_phase(struct tf_cluster *c, uint32_t gpu, enum tf_gpu_phase phase);

/* Utilisation in basis points of capacities CAP_* with AVAIL_* free, weighted by CFG's
 * vramWeight / tflopsWeight (the placement score of a GPU or a node). */
uint16_t tf_util_bp(const struct tf_pool_config *cfg, int64_t cap_tflops, int64_t avail_tflops,
                    int64_t cap_vram, int64_t avail_vram);

/* Node N's utilisation in VIEW (basis points: vramWeight x used VRAM share + tflopsWeight x
 * used TFLOPS share of the GPUs in the view), computed from its aggregates. */
uint16_t tf_cluster_node_util(const struct tf_cluster *c, const struct tf_node *n,
                              enum tf_view view);

/* Walks POOL's nodes in VIEW by utilisation: the fullest first when DESC, else the emptiest
 * first; nodes of equal utilisation in the order they reached it. First returns a node id or
 * TF_NONE; next the one after node N. O(1) per step. */
uint32_t tf_cluster_index_first(const struct tf_cluster *c, uint32_t pool, enum tf_view view,
                                bool desc);
uint32_t tf_cluster_index_next(const struct tf_cluster *c, uint32_t n, enum tf_view view,
                               bool desc);
/* Checks node N's place in its pool's indexes (utilisations current, links and bitmap
 * consistent). 0 or TF_ESTATE. For tf_alloc_check. */
int tf_cluster_index_check(const struct tf_cluster *c, uint32_t n);

/* For the allocator: recomputes node N's runtime aggregates from its GPUs (O(GPUs per node)),
 * moves it in its pool's indexes and changes its version. tf_cluster_node_aggregate computes the
 * aggregates into *OUT (a copy of the node) without writing; the index fields of *OUT are left as
 * they are. */
void tf_cluster_node_refresh(struct tf_cluster *c, uint32_t n);
void tf_cluster_node_aggregate(const struct tf_cluster *c, uint32_t n, struct tf_node *out);

#endif
