/* SPDX-License-Identifier: Apache-2.0
 *
 * The workload model: what a user writes on a Pod (the seed 001 labels and annotations, the
 * nvidia.com/gpu limits of seed 004, an optional WorkloadProfile) turned into one normalised,
 * validated spec. Callers: the Kubernetes webhook (AdmissionReview pods), the scheduler
 * extender/simulator, the local-mode CLI and `tfctl spec`. User documentation of every key,
 * default and error: docs/spec.md.
 *
 * Pure: no I/O, no globals, no logging. Every function is reentrant and thread-safe on distinct
 * arguments; a parsed tf_spec/tf_profile is read-only afterwards and may be shared between
 * threads. Input trees are never modified, but json-c caches the text of a double inside the
 * object when asked for it, so do not parse the same tree from two threads at once.
 *
 * Input shapes (json-c trees, e.g. from tf_manifest_parse or an AdmissionReview's
 * request.object):
 *   - a Pod or a PodTemplateSpec: an object with a "metadata" member (labels, annotations,
 *     name, generateName, namespace) and optionally "spec.containers[]" (name,
 *     resources.limits["nvidia.com/gpu"]). Both have the same shape, so one function reads both;
 *   - an ObjectMeta alone (an object without "metadata": its own "labels"/"annotations"): no
 *     containers are known, so container checks and seed 004 migration are skipped;
 *   - tf_spec_parse_object also takes whole workload manifests (Pod, Deployment, StatefulSet,
 *     Job, ReplicaSet, DaemonSet, CronJob, PodTemplate) and reads their pod template.
 *
 * Precedence for every field: pod annotation > WorkloadProfile > pool defaults > built-in
 * default. Resources merge per dimension (compute = TFLOPS or percent, VRAM) and per side
 * (requests, limits): an annotation's compute-percent-request replaces a profile's
 * requests.tflops. Then a missing request inherits the limit and a missing limit inherits the
 * request (same unit).
 *
 * Annotation values must be strings in Kubernetes; a YAML reader turns unquoted `1`/`true`
 * into numbers/booleans. Those are accepted as their text with a warning.
 *
 * Units: TFLOPS as int64 thousandths (milli-TFLOPS), percent as basis points (0..10000),
 * VRAM as int64 bytes; all per GPU device, as in seed 001.
 */
#ifndef TF_CORE_SPEC_H
#define TF_CORE_SPEC_H

#include "core/gpu_models.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Annotation/label domain and the keys of seed 001 (+ the seed 004 native resource). */
#define TF_KEY_PREFIX "tensor-fusion.ai/"
#define TF_LABEL_ENABLED TF_KEY_PREFIX "enabled"
#define TF_ANN_TFLOPS_REQUEST TF_KEY_PREFIX "tflops-request"
#define TF_ANN_TFLOPS_LIMIT TF_KEY_PREFIX "tflops-limit"
#define TF_ANN_VRAM_REQUEST TF_KEY_PREFIX "vram-request"
#define TF_ANN_VRAM_LIMIT TF_KEY_PREFIX "vram-limit"
#define TF_ANN_PERCENT_REQUEST TF_KEY_PREFIX "compute-percent-request"
#define TF_ANN_PERCENT_LIMIT TF_KEY_PREFIX "compute-percent-limit"
#define TF_ANN_INJECT_CONTAINER TF_KEY_PREFIX "inject-container"
#define TF_ANN_QOS TF_KEY_PREFIX "qos"
#define TF_ANN_IS_LOCAL_GPU TF_KEY_PREFIX "is-local-gpu"
#define TF_ANN_GPU_COUNT TF_KEY_PREFIX "gpu-count"
#define TF_ANN_GPUPOOL TF_KEY_PREFIX "gpupool"
#define TF_ANN_VENDOR TF_KEY_PREFIX "vendor"
#define TF_ANN_GPU_MODEL TF_KEY_PREFIX "gpu-model"
#define TF_ANN_DEDICATED_GPU TF_KEY_PREFIX "dedicated-gpu"
#define TF_ANN_ISOLATION TF_KEY_PREFIX "isolation"
/* partitioned isolation: the partition template (MIG profile, e.g. "3g.40gb"); the user's
 * choice, or the one the scheduler picked (it writes the key at bind, as upstream does). */
#define TF_ANN_PARTITION TF_KEY_PREFIX "partition"
#define TF_ANN_GPU_INDICES TF_KEY_PREFIX "gpu-indices"
#define TF_ANN_CONTAINER_GPU_COUNT TF_KEY_PREFIX "container-gpu-count"
#define TF_ANN_CONTAINER_GPUS TF_KEY_PREFIX "container-gpus"
#define TF_ANN_WORKLOAD TF_KEY_PREFIX "workload"
#define TF_ANN_WORKLOAD_PROFILE TF_KEY_PREFIX "workload-profile"
#define TF_ANN_ENABLED_REPLICAS TF_KEY_PREFIX "enabled-replicas"
#define TF_ANN_AUTOSCALE TF_KEY_PREFIX "autoscale"
#define TF_ANN_AUTOSCALE_TARGET TF_KEY_PREFIX "autoscale-target"
#define TF_ANN_STANDALONE_WORKER_MODE TF_KEY_PREFIX "standalone-worker-mode"
#define TF_ANN_DISABLE_FEATURES TF_KEY_PREFIX "disable-features"
/* Gang scheduling (upstream TensorFusion): the workload's pods are placed all together or not
 * at all. */
#define TF_ANN_GANG_ENABLED TF_KEY_PREFIX "gang-enabled"
#define TF_ANN_GANG_MIN_MEMBERS TF_KEY_PREFIX "gang-min-members"
#define TF_ANN_GANG_TIMEOUT TF_KEY_PREFIX "gang-timeout"
/* Upstream's worker placement keys: sidecar-worker (a local tf-worker sidecar; implies
 * is-local-gpu) and worker-pod-template (remote workers' pod template). */
#define TF_ANN_SIDECAR_WORKER TF_KEY_PREFIX "sidecar-worker"
#define TF_ANN_WORKER_POD_TEMPLATE TF_KEY_PREFIX "worker-pod-template"
/* Written by the webhook on gang pods (from the annotations above and the owner's replicas):
 * the group's size, how many must fit together, and the group's key "<namespace>/<workload>". */
#define TF_ANN_GANG_DESIRED_MEMBERS TF_KEY_PREFIX "gang-desired-members"
#define TF_ANN_GANG_REQUIRED_MEMBERS TF_KEY_PREFIX "gang-required-members"
#define TF_ANN_GANG_GROUP_KEY TF_KEY_PREFIX "gang-group-key"
/* tensor-fusion.ai/gpu-ids-<container>: written by the scheduler extender with gpu-ids on pods
 * whose GPUs are split per container (tf_spec_split), one per GPU container: the comma list of
 * that container's GPUs (its entry in container-gpus). The webhook points the container's
 * NVIDIA_VISIBLE_DEVICES at it through the downward API. */
#define TF_ANN_CONTAINER_GPU_IDS_PREFIX TF_KEY_PREFIX "gpu-ids-"
#define TF_RES_NVIDIA_GPU "nvidia.com/gpu"

/* Most GPUs one workload may ask for (gpu-count 1..128) and the GPU index range 0..127. */
#define TF_SPEC_MAX_GPUS 128

/* Ordered: comparisons (<, >) follow the seed's order. UNSET only appears in inputs
 * (tf_profile, tf_pool_defaults); a parsed tf_spec of an enabled pod never holds it. */
enum tf_isolation {
    TF_ISOLATION_UNSET = 0,
    TF_ISOLATION_SHARED, /* whole GPUs, no limiter */
    TF_ISOLATION_SOFT,   /* default: limiter in the app process */
    TF_ISOLATION_HARD,   /* worker enforces limits */
    TF_ISOLATION_PARTITIONED,
};

enum tf_qos {
    TF_QOS_UNSET = 0,
    TF_QOS_LOW,
    TF_QOS_MEDIUM,
    TF_QOS_HIGH,
    TF_QOS_CRITICAL,
};

enum tf_autoscale_target {
    TF_AUTOSCALE_UNSET = 0,
    TF_AUTOSCALE_COMPUTE,
    TF_AUTOSCALE_VRAM,
    TF_AUTOSCALE_ALL,
};

/* Bits of tf_spec.disable_features (the tensor-fusion.ai/disable-features names). */
enum tf_feature {
    TF_FEATURE_GPU_LIMITER = 1u << 0,  /* "gpu-limiter" */
    TF_FEATURE_GPU_OPT = 1u << 1,      /* "gpu-opt" */
    TF_FEATURE_MEM_MANAGER = 1u << 2,  /* "mem-manager" */
    TF_FEATURE_START_WORKER = 1u << 3, /* "start-worker" (remote-mode debugging) */
};

/* Names ("soft", "high", "all", "gpu-limiter") and case-insensitive parsing. The name
 * functions return NULL for UNSET/unknown values; the parse functions return 0 or TF_EINVAL. */
const char *tf_isolation_name(enum tf_isolation v);
int tf_isolation_parse(const char *s, enum tf_isolation *out);
const char *tf_qos_name(enum tf_qos v);
int tf_qos_parse(const char *s, enum tf_qos *out);
const char *tf_autoscale_target_name(enum tf_autoscale_target v);
int tf_autoscale_target_parse(const char *s, enum tf_autoscale_target *out);
const char *tf_feature_name(enum tf_feature f);
int tf_feature_parse(const char *s, enum tf_feature *out);

/* One side (requests or limits) of a workload's resources, per GPU device. In a parsed
 * tf_spec at most one of tflops_set/percent_set is true per side. A value is meaningful only
 * when its _set flag is true. */
struct tf_spec_res {
    int64_t tflops_milli; /* TFLOPS x 1000 */
    int32_t percent_bp;   /* compute percent of one GPU in basis points, 0..10000 */
    int64_t vram_bytes;
    bool tflops_set;
    bool percent_set;
    bool vram_set;
};

/* The side's compute in milli-TFLOPS on a GPU whose capacity is GPU_TFLOPS_MILLI: tflops as
 * given, or percent converted (rounded down); 0 when neither is set. */
int64_t tf_spec_res_tflops_on(const struct tf_spec_res *r, int64_t gpu_tflops_milli);

/* A native GPU resource name a vendor's device plugin advertises (ProviderConfig
 * spec.inUseResourceNames / devicePluginDetection.resourceNamePrefixes): pods asking for it are
 * taken over (seed 004) and the webhook removes it. */
struct tf_native_resource {
    const char *name;   /* "nvidia.com/gpu", or a prefix ("nvidia.com/mig-") */
    bool prefix;        /* NAME is a prefix of the resource names */
    const char *vendor; /* "NVIDIA" */
};

/* What the Helm chart's ProviderConfig installs, and the fallback when the cluster has none:
 * NVIDIA's nvidia.com/gpu and nvidia.com/mig-*. */
extern const struct tf_native_resource tf_native_resources_default[2];

/* The entry of LIST[0..N) resource RES matches (exact name or prefix), or NULL. */
const struct tf_native_resource *tf_native_resource_find(const struct tf_native_resource *list,
                                                         size_t n, const char *res);

/* Pool-level defaults supplied by the caller (the GPUPool / GPUResourceQuota the webhook
 * resolved). Zero-initialise and set what is known; NULL is the same as all-unset. */
struct tf_pool_defaults {
    const char *pool_name;       /* used when neither annotation nor profile names a pool */
    enum tf_qos qos;             /* QoS fallback before "medium" */
    enum tf_isolation isolation; /* fallback before "soft" */
    bool is_local_gpu_set;       /* pool.spec.defaultUsingLocalGPU; built-in default: true */
    bool is_local_gpu;
    /* The auto-migration scope (seed 004, dynamicConfig.autoMigration) matched this pod:
     * a pod without the enabled label but with nvidia.com/gpu limits is taken over. */
    bool auto_migration;
    struct tf_spec_res requests; /* GPUResourceQuota single.defaultRequests */
    struct tf_spec_res limits;   /* GPUResourceQuota single.defaultLimits */
    const char *vendor;          /* pool.spec.nodeManagerConfig.defaultVendor, or NULL */
    /* The native GPU resources of the cluster's ProviderConfigs (borrowed); NULL (NNATIVE 0)
     * means tf_native_resources_default. */
    const struct tf_native_resource *native;
    size_t nnative;
};

/* A parsed WorkloadProfile (kind WorkloadProfile, apiVersion tensor-fusion.ai/v1). Every
 * pointer is owned by the struct (tf_profile_free). Fields are "unset" when zero/false/NULL. */
struct tf_profile {
    char *name; /* metadata.name (required) */
    char *ns;   /* metadata.namespace or NULL */
    struct tf_spec_res requests, limits;
    char *pool;      /* spec.poolName */
    enum tf_qos qos; /* spec.qos */
    enum tf_isolation isolation;
    bool is_local_gpu_set, is_local_gpu; /* spec.isLocalGPU */
    int gpu_count;                       /* spec.gpuCount, 0 = unset */
    char *gpu_model;                     /* spec.gpuModel */
    char *vendor;                        /* spec.vendor, canonical when known */
    int gpu_indices[TF_SPEC_MAX_GPUS];   /* spec.gpuIndices */
    int ngpu_indices;
    bool replicas_set;
    int32_t replicas; /* spec.replicas */
    bool autoscale_set, autoscale;
    enum tf_autoscale_target autoscale_target; /* spec.autoScalingConfig.autoSetResources */
    bool gang;                                 /* spec.gangScheduling present */
    int32_t gang_min_members;                  /* spec.gangScheduling.minMembers, 0 = unset */
    int64_t gang_timeout_ms;                   /* spec.gangScheduling.timeout, 0 = none */
    char **warnings;                           /* unknown fields etc. */
    size_t nwarnings;
};

/* One container the workload's GPUs go to (only GPU-using containers are listed). */
struct tf_spec_container {
    char *name;
    int gpu_count;       /* GPUs this container sees */
    int native_gpus;     /* its native GPU limits (seed 004: nvidia.com/gpu, ...), 0 if none */
    bool migrated;       /* native_gpus > 0: the webhook removes the limits and takes them over */
    char **native_names; /* the native resource names of its limits (owned), for the webhook */
    size_t nnative_names;
    char **gpu_ids; /* from tensor-fusion.ai/container-gpus (system-written), or NULL */
    size_t ngpu_ids;
};

/* The normalised spec. Owned pointers (char *, arrays) belong to the struct and are released
 * by tf_spec_free; `const` pointers point into static tables. */
struct tf_spec {
    char *name; /* metadata.name (a controller's name for manifests), else generateName, else
                   NULL */
    char *ns;   /* metadata.namespace or NULL */
    char *kind; /* manifest kind ("Deployment") from tf_spec_parse_object, else NULL */
    bool has_replicas;
    int32_t replicas; /* the controller's spec.replicas when the manifest has one */

    /* Enablement: enabled = label "true", or auto-migration took the pod over. When false,
     * nothing below is parsed (opt-out means opt-out) and only warnings may be present. */
    bool enabled;
    bool opted_out;     /* label tensor-fusion.ai/enabled: "false" */
    bool auto_migrated; /* enabled through tf_pool_defaults.auto_migration */

    enum tf_isolation isolation;
    enum tf_qos qos;
    char *pool; /* NULL: the controller picks the default pool */
    bool is_local_gpu;
    int gpu_count;                     /* 1..128 */
    int gpu_indices[TF_SPEC_MAX_GPUS]; /* candidate device indices, distinct, 0..127 */
    int ngpu_indices;                  /* 0 = any device; else >= gpu_count */
    char *gpu_model;                   /* as written (e.g. "A100"), or NULL */
    const struct tf_gpu_model *model;  /* table entry for gpu_model, NULL if not in the table */
    char *vendor; /* canonical when known (else as written): the key, the profile, the model, the
                     native resource's, the pool's default; or NULL */
    bool dedicated_gpu;
    char *partition; /* tensor-fusion.ai/partition (partitioned isolation only), or NULL */
    /* Whole-GPU allocation (isolation shared, dedicated-gpu): the allocator takes entire
     * devices whatever the numbers below say. */
    bool whole_gpu;
    struct tf_spec_res requests, limits; /* per GPU device */

    char *workload;         /* tensor-fusion.ai/workload */
    char *workload_profile; /* tensor-fusion.ai/workload-profile (the name referenced) */
    bool has_enabled_replicas;
    int32_t enabled_replicas; /* >= 1 */
    bool autoscale;
    enum tf_autoscale_target autoscale_target; /* UNSET unless autoscale */
    bool has_standalone_worker_mode;
    bool standalone_worker_mode;
    /* The WorkloadProfile's spec.replicas: how many remote workers serve the workload (its
     * TensorFusionWorkload's spec.replicas); unset = as many as the workload needs. */
    bool has_worker_replicas;
    int32_t worker_replicas;
    unsigned disable_features;            /* TF_FEATURE_* bits of the known names */
    char **disable_feature_names;         /* every listed name in order, unknown ones included */
    size_t ndisable_feature_names;        /* (each unknown one also produced a warning) */
    char **inject_containers;             /* containers to inject into (explicit or derived) */
    size_t ninject_containers;            /* */
    struct tf_spec_container *containers; /* GPU-using containers */
    size_t ncontainers;

    /* Gang scheduling: gang-enabled "true" (or gang-min-members of 2 or more). */
    bool gang;
    int32_t gang_min_members; /* 0 = all the workload's replicas */
    int64_t gang_timeout_ms;  /* 0 = wait indefinitely */
    /* The group's size and quorum (tf_gang_quorum) where the replicas are known:
     * tf_spec_parse_object from the manifest; 0 = not known here (tf_spec_parse). */
    int32_t gang_desired, gang_required;

    char **warnings; /* human-readable, each naming its key */
    size_t nwarnings;
};

/* Zeroes S (no allocation). tf_spec_parse does this itself; call it on specs that may be
 * freed without having been parsed. */
void tf_spec_init(struct tf_spec *s);
/* Releases everything S owns and re-initialises it. Accepts NULL and initialised specs. */
void tf_spec_free(struct tf_spec *s);

/* Parses POD (a Pod, PodTemplateSpec or ObjectMeta, see the top comment) with optional
 * PROFILE (the WorkloadProfile the pod references; the caller looked it up) and POOL
 * (both may be NULL) into OUT.
 * Returns 0 (OUT filled, possibly with warnings), TF_EINVAL / TF_ERANGE / TF_EPARSE for
 * invalid input with a message in ERR naming the key and value, or TF_ENOMEM. On error OUT is
 * left initialised and empty (nothing to free, freeing is harmless). Does not modify POD. */
int tf_spec_parse(json_object *pod, const struct tf_profile *profile,
                  const struct tf_pool_defaults *pool, struct tf_spec *out, char *err,
                  size_t errlen);

/* Like tf_spec_parse on a whole manifest DOC: kind Pod is read directly; Deployment,
 * StatefulSet, Job, ReplicaSet, DaemonSet, PodTemplate through spec.template (PodTemplate:
 * .template) and CronJob through spec.jobTemplate.spec.template. name/namespace/kind/replicas
 * come from the manifest's own metadata (namespace falls back to the template's). A bare Pod
 * with enabled-replicas gets a warning (it only acts on controller-owned pods), as does
 * enabled-replicas above the controller's replicas. Other kinds: TF_ENOTSUP with the kind in
 * ERR. */
int tf_spec_parse_object(json_object *doc, const struct tf_profile *profile,
                         const struct tf_pool_defaults *pool, struct tf_spec *out, char *err,
                         size_t errlen);

/* True when DOC's kind is one tf_spec_parse_object reads. */
bool tf_spec_kind_supported(json_object *doc);

/* The pod template of a supported manifest DOC (DOC itself for a Pod), or NULL when the kind
 * is not supported or the template is missing. Borrowed from DOC. Lets a caller read the
 * template's annotations (e.g. which WorkloadProfile to look up) before parsing. */
json_object *tf_spec_pod_template(json_object *doc);

/* True when S's GPU containers do not all see the same GPUs: more than one GPU container, or
 * one that sees fewer than gpu_count (tensor-fusion.ai/container-gpu-count, or each
 * container's own nvidia.com/gpu limit when migrated). */
bool tf_spec_split(const struct tf_spec *s);

/* Size of a tf_spec_container_gpu_ids_key buffer: the prefix and a 63-character name part. */
#define TF_SPEC_CONTAINER_GPU_IDS_KEY_MAX (sizeof(TF_KEY_PREFIX) + 63)
/* Writes CONTAINER's tensor-fusion.ai/gpu-ids-<container> key into OUT (of
 * TF_SPEC_CONTAINER_GPU_IDS_KEY_MAX bytes). An annotation's name part holds at most 63
 * characters: a container name over 55 is cut and hashed (tf_name_fit), so distinct names
 * keep distinct keys. Pure. */
void tf_spec_container_gpu_ids_key(const char *container, char *out);

/* Appends a formatted warning to S (for callers that learn something the parser could not,
 * e.g. "WorkloadProfile x not found"). Returns 0 or TF_ENOMEM. */
int tf_spec_add_warning(struct tf_spec *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The `tfctl spec -o json` object of S (docs/spec.md "JSON contract"): camelCase keys, absent
 * values null (never omitted). Caller owns the result (json_object_put); NULL on ENOMEM. */
json_object *tf_spec_to_json(const struct tf_spec *s);

/* Parses a WorkloadProfile document into OUT (zeroed first). Same error convention as
 * tf_spec_parse, messages name the field ("WorkloadProfile p: spec.resources.limits.vram:
 * ..."). Unknown spec fields produce warnings. */
int tf_profile_parse(json_object *doc, struct tf_profile *out, char *err, size_t errlen);
/* Releases what P owns and zeroes it. Accepts NULL. */
void tf_profile_free(struct tf_profile *p);

#endif
