/* SPDX-License-Identifier: Apache-2.0
 *
 * The mutating admission webhook for Pods (seed 000 step 2, seed 001, seed 004).
 *
 * On Pod CREATE and UPDATE, keys only TensorFusion writes are guarded (sysguard.h: removed
 * from, or denied to, anyone but the controller). On Pod CREATE, outside the controller's
 * own namespace, for a pod labelled
 * tensor-fusion.ai/enabled: "true" (or one requesting nvidia.com/gpu inside the
 * auto-migration scope), the webhook: resolves the WorkloadProfile and the GPUPool (default
 * pool when unset), validates and normalises with the core workload spec (core/spec.h; never
 * re-parsing annotations itself), honours enabled-replicas per owner (Deployment via its
 * ReplicaSet, StatefulSet, ...), sets schedulerName tensor-fusion-scheduler, gives high and
 * critical QoS pods without a PriorityClass of their own the configured class, writes the
 * normalised values back as annotations, labels the pod tensor-fusion.ai/component: client,
 * removes migrated nvidia.com/gpu limits, adds the device request, injects per mode and
 * creates/updates the TensorFusionWorkload (or joins the one the pod names). The answer is a
 * JSONPatch from the original pod to the mutated one. The pod's spec gets, as upstream's
 * webhook gives it, the defaults of its GPUPool (named, else the one annotated
 * tensor-fusion.ai/is-default-pool, else the configured default), of its namespace's
 * GPUResourceQuota and the ProviderConfigs' native GPU resources (core/defaults.h). Gang pods
 * get their group's size and key (gang-desired-members, gang-required-members, gang-group-key)
 * from the owner's replicas. Invalid input is denied (allowed:
 * false, code 400, the spec's message naming the key); internal failures are denied with
 * code 500 and a message; the handler itself never fails the HTTP request.
 *
 * Injection per mode (containers = the spec's inject containers):
 *   soft     init container copying libtf_limiter.so into an emptyDir mounted at
 *            /tensor-fusion; /etc/ld.so.preload (subPath of that emptyDir, written by the init
 *            container: the limiter first, then the image's own entries) and LD_PRELOAD
 *            (ours prepended to the container's); hostPath shm dir mounted read-only;
 *            env POD_NAME, POD_NAMESPACE (downward API), CONTAINER_NAME, TF_SHM_PATH.
 *   hard     (local) init container copying libtf_client.so as libcuda.so.1; env
 *            LD_LIBRARY_PATH and TF_REMOTE=unix:///tensor-fusion/run/worker.sock; a tf-worker
 *            sidecar holding the device request, sharing the emptyDir.
 *   remote   the same client library; env TF_CONNECTION_NAME/NAMESPACE and TF_CONTROLLER_URL
 *            (the client asks /api/connection for its worker); no device request.
 *   shared, partitioned: only the device request.
 * Local modes: GPU containers (hard: the tf-worker sidecar) get NVIDIA_VISIBLE_DEVICES from the
 * tensor-fusion.ai/gpu-ids annotation (downward API); in a pod that splits its GPUs per
 * container, each from its own tensor-fusion.ai/gpu-ids-<container>. A container's own value
 * is kept. Partitioned pods instead get a pod index (annotation tensor-fusion.ai/index and, on
 * each GPU container, the resource tensor-fusion.ai/index_<k>: <n>; core/podindex.h): their
 * MIG device only exists after the Binding, so the node's device plugin names it in
 * Allocate, which an env entry in the spec would override.
 *
 * Threads: tf_webhook_handle is thread-safe when the env callbacks are; the struct itself is
 * read-only after init except the owner-admission memo, which has its own lock.
 */
#ifndef TF_CONTROLLER_WEBHOOK_H
#define TF_CONTROLLER_WEBHOOK_H

#include "controller/admission.h"
#include "core/spec.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define TF_SCHEDULER_NAME "tensor-fusion-scheduler"
#define TF_PRIORITY_CLASS_HIGH "tensor-fusion-high"
#define TF_PRIORITY_CLASS_CRITICAL "tensor-fusion-critical"
#define TF_LABEL_COMPONENT TF_KEY_PREFIX "component"
#define TF_ANN_OWNER TF_KEY_PREFIX "owner"
#define TF_ANN_GPU_IDS TF_KEY_PREFIX "gpu-ids"
/* Extended resource the hypervisor's device plugin advertises (one per vGPU slot); the
 * scheduler ignores it (managedResources, ignoredByScheduler) and the extender decides. */
#define TF_RESOURCE_VGPU TF_KEY_PREFIX "vgpu"

/* Lookups the webhook needs, answered from informer caches in tf-controller and from fixtures
 * in tests. Every returned json_object is owned by the caller. */
struct tf_webhook_env {
    /* WorkloadProfile NS/NAME, or NULL. */
    json_object *(*get_profile)(void *arg, const char *ns, const char *name);
    /* Namespace NAME (for namespace selectors), or NULL. */
    json_object *(*get_namespace)(void *arg, const char *name);
    /* GPUPool NAME, or NULL when it does not exist. */
    json_object *(*get_pool)(void *arg, const char *name);
    /* Owner object (e.g. the ReplicaSet a pod points at), or NULL. */
    json_object *(*get_owner)(void *arg, const char *ns, const char *kind, const char *name);
    /* Pods of NS already taken over for OWNER ("Deployment/web"), per the live cache. */
    int (*count_owner_pods)(void *arg, const char *ns, const char *owner);
    /* Creates or updates the TensorFusionWorkload (not called on dry runs). JOIN: the pod
     * named an existing workload to share. Returns 0 or a TF_E* with ERR. */
    int (*ensure_workload)(void *arg, const char *ns, const char *name, json_object *workload,
                           bool join, char *err, size_t errlen);
    void *arg;
    /* Optional (may be NULL): records an Event about INVOLVED (kind/apiVersion/metadata), for
     * decisions made about pods that do not exist yet (e.g. the enabled-replicas limit, on the
     * owner). Not called on dry runs. */
    void (*record_event)(void *arg, json_object *involved, const char *type, const char *reason,
                         const char *message);
    /* Optional: PriorityClass NAME (scheduling.k8s.io/v1), or NULL. Without it no pod gets
     * a QoS priority class. */
    json_object *(*get_priority_class)(void *arg, const char *name);
    /* Optional: every GPUPool (a JSON array), for the one annotated
     * tensor-fusion.ai/is-default-pool: "true"; without it, or without such a pool, the
     * configured default_pool is the default. */
    json_object *(*list_pools)(void *arg);
    /* Optional: the GPUResourceQuotas of namespace NS (a JSON array); the first one's
     * spec.single.defaultRequests/defaultLimits fill what the pod leaves unset. */
    json_object *(*list_quotas)(void *arg, const char *ns);
    /* Optional: every ProviderConfig (a JSON array): the native GPU resources taken over and
     * their vendors; without it (or none) NVIDIA's nvidia.com/gpu and nvidia.com/mig-*. */
    json_object *(*list_providers)(void *arg);
    /* Optional: a fresh pod index (core/podindex.h) for a partitioned pod, unique among the
     * cluster's live pods: 1..TF_PODIDX_MAX, or TF_ENOSPC with ERR when all are taken (the
     * pod is then refused). Without it partitioned pods are treated like shared ones
     * (NVIDIA_VISIBLE_DEVICES from gpu-ids). Not called on dry runs. */
    int (*take_index)(void *arg, char *err, size_t errlen);
};

struct tf_automigration {
    bool enable;
    char **include_ns; /* namespace names */
    size_t ninclude_ns;
    char **exclude_ns;
    size_t nexclude_ns;
    json_object *include_ns_selector, *include_pod_selector; /* LabelSelectors or NULL */
    json_object *exclude_ns_selector, *exclude_pod_selector;
};

struct tf_webhook_config {
    char *own_namespace;  /* never mutated (e.g. tensor-fusion-sys) */
    char *default_pool;   /* pool used when the pod and its profile name none */
    char *controller_url; /* base URL remote clients query, e.g. http://tf.tf-sys.svc:8080 */
    char *limiter_image, *client_image, *worker_image;
    char *shm_host_dir; /* default /run/tensor-fusion/shm */
    /* PriorityClasses for high / critical QoS pods that name none of their own (seed 000);
     * "" = leave such pods alone. Defaults tensor-fusion-high, tensor-fusion-critical. */
    char *priority_class_high, *priority_class_critical;
    struct tf_automigration auto_migration;
    /* The controller's own username (request.userInfo.username), the one identity allowed to
     * write system keys (sysguard.h); NULL: system:serviceaccount:<own_namespace>:tensor-fusion. */
    char *system_user;
};

/* Sets defaults (strdup'd). */
int tf_webhook_config_init(struct tf_webhook_config *cfg);
/* Reads the dynamicConfig.autoMigration object of the Helm values / config file
 * ({"enable": bool, "scope": {"includes": {"namespaceNames": [], "namespaceSelector": {},
 * "podSelector": {}}, "excludes": {...}}}). Returns 0 or TF_EINVAL with a message. */
int tf_webhook_config_automigration(struct tf_webhook_config *cfg, json_object *am, char *err,
                                    size_t errlen);
void tf_webhook_config_free(struct tf_webhook_config *cfg);

/* Auto-migration scope: excludes win; with no includes at all every namespace is in scope;
 * otherwise a namespace name, a namespace selector or a pod selector must match. */
bool tf_automigration_in_scope(const struct tf_automigration *am, const char *ns,
                               json_object *ns_obj, json_object *pod);

struct tf_webhook {
    struct tf_webhook_config cfg; /* owned */
    struct tf_webhook_env env;
    pthread_mutex_t memo_lock; /* guards memo */
    json_object *memo;         /* "ns/owner" -> array of admission times (s), recent takeovers the
                                  cache may not show yet */
};

/* Takes ownership of CFG's contents (CFG is zeroed). */
int tf_webhook_init(struct tf_webhook *wh, struct tf_webhook_config *cfg,
                    const struct tf_webhook_env *env);
void tf_webhook_free(struct tf_webhook *wh);

/* The outcome of one review, for the HTTP layer and the tests. */
struct tf_webhook_result {
    bool allowed;
    int code;              /* denial code (400 invalid input, 500 internal) */
    char message[1024];    /* denial reason */
    char *patch;           /* JSONPatch: JSON text of the ops (owned), NULL when unmodified */
    size_t nops;           /* operations in PATCH */
    json_object *mutated;  /* the pod after mutation (owned), NULL when unmodified */
    json_object *warnings; /* array of strings (owned) */
    bool taken_over;
};
void tf_webhook_result_free(struct tf_webhook_result *r);

/* On a TensorFusionWorkload the webhook created for its pods' owner (the pods named none):
 * "true". Its remote workers are one per client pod; a workload pods name themselves shares
 * its workers (reconcile_apps.c, docs/kubernetes.md). */
#define TF_ANN_GENERATED_WORKLOAD TF_KEY_PREFIX "generated-workload"

/* Appends to the tf-worker command array CMD what a worker holding NGPUS GPUs of a pod needs
 * in Kubernetes: --token-file TOKEN_FILE, with LIMITS --limits-region on the pod's region
 * (its own shm directory is mounted at /run/tensor-fusion/pod; the node agent writes regions
 * for soft and hard pods only, whole-GPU ones have no limits) and, for more than one GPU,
 * --device 0,...,NGPUS-1 (the GPUs NVIDIA_VISIBLE_DEVICES exposes, in gpu-ids order), and
 * --pinned-staging (its clients are one tenant). */
void tf_webhook_worker_args(json_object *cmd, int ngpus, const char *token_file, bool limits);
/* With start-worker among DISABLED (TF_FEATURE_* bits of tensor-fusion.ai/disable-features,
 * upstream's debugging switch), replaces the worker command CMD by "sleep infinity": the
 * container stays up without serving. Callers drop LIMITS above for gpu-limiter. */
void tf_webhook_worker_debug(json_object *cmd, unsigned disabled);

/* Appends to the volumeMounts array MOUNTS a container's view of its pod's limit region (the
 * node agent writes it in <shm host dir>/<namespace>/<pod>, volume tf-shm): that directory at
 * /run/tensor-fusion/pod read-only (the region's limits part, which nothing in the pod may
 * rewrite, root included), and its rw/ subdirectory read-write at /run/tensor-fusion/pod/rw
 * (the usage part the limiter or tf-worker writes). No other pod's directory is mounted. */
void tf_webhook_region_mounts(json_object *mounts);

/* Remote workloads: the Secret (in the workload's namespace) whose key TF_TOKEN_SECRET_KEY
 * holds the token the workload's worker pods require and its clients present
 * ("tf-token-<workload>", cut and hashed to fit a name). The reconciler creates it with a
 * random token, owned by the TensorFusionWorkload; the webhook gives remote clients TF_TOKEN
 * from it. */
#define TF_TOKEN_SECRET_KEY "token"
void tf_webhook_token_secret(const char *workload, char *out, size_t outlen);

/* Reviews REQ: Pod CREATE and UPDATE pass the system-annotation guard (sysguard.h) first;
 * CREATE is then mutated as above; anything else is allowed unmodified. */
void tf_webhook_review(struct tf_webhook *wh, const struct tf_admission_req *req,
                       struct tf_webhook_result *out);

/* Whole HTTP exchange: AdmissionReview body in, AdmissionReview response out (new string).
 * A body that is not an AdmissionReview yields HTTP 400 (*STATUS) with a plain message. */
char *tf_webhook_handle(struct tf_webhook *wh, const char *body, size_t len, int *status);

#endif
