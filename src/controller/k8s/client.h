/* SPDX-License-Identifier: Apache-2.0
 *
 * Kubernetes API client (libcurl + json-c), the subset tf-controller needs.
 *
 * Configuration comes from the pod's service account (in-cluster: KUBERNETES_SERVICE_HOST/PORT,
 * /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt}) or from a kubeconfig file
 * (current or named context: server, certificate-authority[-data], token, tokenFile,
 * client-certificate[-data], client-key[-data], insecure-skip-tls-verify). A token file is
 * re-read when its mtime changes and after any 401, so projected, rotating service-account
 * tokens keep working.
 *
 * Every request retries 429 and 5xx answers and connection failures with exponential backoff
 * (base doubled per attempt, capped, Retry-After honoured up to the cap), at most
 * max_attempts times. 4xx answers other than 429 are returned at once.
 *
 * Errors: 0 ok; TF_ENOENT (404), TF_EEXIST (409 AlreadyExists), TF_ECONFLICT (409 Conflict),
 * TF_ESTATE (410 Gone: resourceVersion or continue token too old; relist), TF_EPERM (401/403),
 * TF_EINVAL (400/422), TF_EBUSY (429 after all retries), TF_EIO (5xx after all retries,
 * transport errors), TF_EPROTO (a body that is not the JSON promised). ERR receives the
 * server's Status message when there is one.
 *
 * Threads: a client is thread-safe after tf_k8s_client_new (connections are shared through a
 * locked curl share); configs are plain data.
 */
#ifndef TF_CONTROLLER_K8S_CLIENT_H
#define TF_CONTROLLER_K8S_CLIENT_H

#include <json-c/json.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Connection settings. All strings are owned by the struct (freed by tf_k8s_config_free). */
struct tf_k8s_config {
    char *server;        /* "https://10.0.0.1:443" or "http://127.0.0.1:PORT" */
    char *token;         /* bearer token, or NULL */
    char *token_file;    /* re-read on rotation when set */
    char *ca_pem;        /* CA bundle, PEM text, or NULL (system store) */
    char *cert_pem;      /* client certificate, PEM, or NULL */
    char *key_pem;       /* client key, PEM, or NULL */
    char *namespace;     /* the pod's namespace (in-cluster) or the context's, or NULL */
    bool insecure;       /* skip TLS verification (kubeconfig insecure-skip-tls-verify) */
    int max_attempts;    /* per request, >= 1 (default 6) */
    int backoff_base_ms; /* first retry delay (default 200) */
    int backoff_max_ms;  /* cap (default 10000) */
    int timeout_ms;      /* per non-watch request (default 30000) */
};

/* Zeroes CFG and sets the numeric defaults. */
void tf_k8s_config_init(struct tf_k8s_config *cfg);
void tf_k8s_config_free(struct tf_k8s_config *cfg);

/* In-cluster config. ROOT replaces "/var/run/secrets/kubernetes.io/serviceaccount" when
 * non-NULL (tests). Fails with TF_ENOENT and a message when not inside a pod. */
int tf_k8s_config_in_cluster(struct tf_k8s_config *cfg, const char *root, char *err, size_t errlen);
/* Kubeconfig at PATH; CONTEXT NULL = current-context. Relative file paths are resolved
 * against the kubeconfig's directory. */
int tf_k8s_config_kubeconfig(struct tf_k8s_config *cfg, const char *path, const char *context,
                             char *err, size_t errlen);

struct tf_k8s_client;

/* Copies CFG. NULL on allocation failure or bad config (no server). */
struct tf_k8s_client *tf_k8s_client_new(const struct tf_k8s_config *cfg);
/* A new client with C's configuration (its token as it is now) but, where > 0, another
 * per-request timeout, number of attempts and longest backoff: for work that must give up
 * sooner than the callers of C (an event recorder). NULL on allocation failure. */
struct tf_k8s_client *tf_k8s_client_derive(struct tf_k8s_client *c, int timeout_ms,
                                           int max_attempts, int backoff_max_ms);
/* From now on C's requests fail with TF_ESTATE: new ones at once, one in flight within about a
 * second, a backoff between attempts cut short. Thread-safe; C must still be destroyed. */
void tf_k8s_client_close(struct tf_k8s_client *c);
void tf_k8s_client_destroy(struct tf_k8s_client *c);
/* The namespace from the config (may be NULL). Borrowed. */
const char *tf_k8s_client_namespace(const struct tf_k8s_client *c);

/* A resource type. Static descriptors for the kinds the controller uses are below. */
struct tf_k8s_resource {
    const char *group; /* "" for core */
    const char *version;
    const char *plural;
    const char *kind;
    bool namespaced;
};
extern const struct tf_k8s_resource tf_k8s_pods, tf_k8s_nodes, tf_k8s_secrets, tf_k8s_namespaces,
    tf_k8s_events, tf_k8s_leases, tf_k8s_replicasets, tf_k8s_deployments, tf_k8s_statefulsets,
    tf_k8s_mutatingwebhookconfigurations, tf_k8s_tfclusters, tf_k8s_gpupools, tf_k8s_gpunodes,
    tf_k8s_gpus, tf_k8s_tfworkloads, tf_k8s_tfconnections, tf_k8s_workloadprofiles,
    tf_k8s_schedulingconfigtemplates, tf_k8s_gpuresourcequotas, tf_k8s_gpunodeclaims,
    tf_k8s_gpunodeclasses;
/* ProviderConfigs (the vendors' native GPU resources) and batch/v1 Jobs (a gang's size). */
extern const struct tf_k8s_resource tf_k8s_providerconfigs, tf_k8s_jobs;
/* scheduling.k8s.io/v1 PriorityClasses (QoS priorities of the webhook). */
extern const struct tf_k8s_resource tf_k8s_priorityclasses;
/* policy/v1 PodDisruptionBudgets and karpenter.sh/v1 NodeClaims (node compaction). */
extern const struct tf_k8s_resource tf_k8s_pdbs, tf_k8s_nodeclaims;

/* Builds the URL path of RES (collection when NAME is NULL; NS ignored for cluster-scoped
 * kinds, all namespaces when NS is NULL), with subresource SUB (NULL, "status", "binding").
 * Returns 0 or TF_ERANGE when LEN is too small. Path segments are percent-encoded. */
int tf_k8s_path(char *buf, size_t len, const struct tf_k8s_resource *res, const char *ns,
                const char *name, const char *sub);

/* One request. PATH may carry a query string. BODY (may be NULL) is sent with CONTENT_TYPE.
 * On success *OUT (if OUT) receives the parsed JSON body (caller owns), *STATUS (if STATUS)
 * the HTTP status. */
int tf_k8s_request(struct tf_k8s_client *c, const char *method, const char *path,
                   const char *content_type, const char *body, json_object **out, long *status,
                   char *err, size_t errlen);

/* Convenience calls; *OUT (if non-NULL) receives the object the server returned. */
int tf_k8s_get(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
               const char *name, json_object **out, char *err, size_t errlen);
int tf_k8s_create(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                  json_object *obj, json_object **out, char *err, size_t errlen);
/* PUT. OBJ must carry metadata.resourceVersion for optimistic locking. */
int tf_k8s_update(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                  const char *name, const char *sub, json_object *obj, json_object **out, char *err,
                  size_t errlen);
/* JSON merge patch (RFC 7386) of NAME (or its SUB resource). A metadata.resourceVersion in
 * PATCH makes it conditional (TF_ECONFLICT when stale). */
int tf_k8s_merge_patch(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                       const char *name, const char *sub, json_object *patch, json_object **out,
                       char *err, size_t errlen);
/* JSON patch (RFC 6902): OPS is an array of operations. */
int tf_k8s_json_patch(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                      const char *name, const char *sub, json_object *ops, json_object **out,
                      char *err, size_t errlen);
int tf_k8s_delete(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                  const char *name, char *err, size_t errlen);

/* Read-modify-write with optimistic locking: GET the object, call MUTATE(obj, arg) (it edits
 * OBJ in place and returns 0, or 1 for "nothing to change", or a negative error), then PUT it
 * (to SUB when non-NULL); the resourceVersion it was read at makes the write conditional.
 * A 409 Conflict re-reads and retries, at most 8 times. *OUT (if OUT) gets the stored object. */
int tf_k8s_update_retry(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                        const char *name, const char *sub,
                        int (*mutate)(json_object *obj, void *arg), void *arg, json_object **out,
                        char *err, size_t errlen);

/* Conditional merge patch with retry: GET the object, call BUILD(obj, arg) which returns the
 * merge patch to apply given the current object (new reference, caller-of-BUILD owns it) or
 * NULL for "nothing to do"; the patch is sent with metadata.resourceVersion set to the version
 * read, so a concurrent writer makes it fail with 409, after which the object is read again
 * and BUILD asked again (at most 8 times). *OUT (if OUT) gets the patched object. */
int tf_k8s_merge_patch_retry(struct tf_k8s_client *c, const struct tf_k8s_resource *res,
                             const char *ns, const char *name, const char *sub,
                             json_object *(*build)(json_object *obj, void *arg), void *arg,
                             json_object **out, char *err, size_t errlen);

/* Lists RES with limit/continue pages of PAGE items (0 = server default), calling
 * FN(item, arg) for every item (borrowed; FN may json_object_get it). Selectors may be NULL.
 * When a continue token expires (410) the list restarts from scratch, at most 3 times; FN
 * then sees items again, so it must be idempotent (informers rebuild from the result).
 * *RV receives the list's resourceVersion (caller frees). */
int tf_k8s_list(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                const char *label_selector, const char *field_selector, int page,
                int (*fn)(json_object *item, void *arg), void *arg, char **rv, char *err,
                size_t errlen);

/* Watch event types as the API server sends them. */
enum tf_k8s_event_type {
    TF_K8S_ADDED,
    TF_K8S_MODIFIED,
    TF_K8S_DELETED,
    TF_K8S_BOOKMARK,
};

/* Watches RES from resourceVersion RV (bookmarks requested) for at most TIMEOUT_S seconds,
 * calling FN(type, obj, arg) per event (OBJ borrowed). FN returning non-zero stops the watch
 * and is returned. *STOP (may be NULL) aborts the stream promptly when set. Returns 0 when
 * the server ends the stream or *STOP is set; TF_ESTATE when RV is too old (410, either as
 * HTTP status or as an ERROR event): relist. LAST_RV (may be NULL, size RVLEN) tracks the
 * newest resourceVersion seen, bookmarks included. */
int tf_k8s_watch(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                 const char *label_selector, const char *field_selector, const char *rv,
                 int timeout_s, int (*fn)(enum tf_k8s_event_type type, json_object *obj, void *arg),
                 void *arg, atomic_bool *stop, char *last_rv, size_t rvlen, char *err,
                 size_t errlen);

/* POSTs a pods/binding of NS/POD to NODE (TF_ECONFLICT when the pod is already bound, or UID,
 * when given, is not the pod's). ANNS (an object of strings, or NULL) go in the Binding's
 * metadata: kube-apiserver merges them into the pod's annotations in the same write that sets
 * spec.nodeName, so the pod is never seen bound without them nor annotated but unbound. */
int tf_k8s_bind(struct tf_k8s_client *c, const char *ns, const char *pod, const char *uid,
                const char *node, json_object *anns, char *err, size_t errlen);

/* POSTs a policy/v1 Eviction of pod NS/POD (pods/{name}/eviction): the API server deletes the
 * pod unless a PodDisruptionBudget forbids it. TF_EBUSY (429 after the retries) when a budget
 * allows no disruption now, TF_ENOENT when the pod is gone. */
int tf_k8s_evict(struct tf_k8s_client *c, const char *ns, const char *pod, char *err,
                 size_t errlen);

/* Records a core/v1 Event about INVOLVED (an object with kind/apiVersion/metadata) in the
 * object's namespace (or "default" for cluster-scoped objects). TYPE is "Normal" or
 * "Warning". Failures are logged and returned but never fatal to the caller's decision. */
int tf_k8s_event(struct tf_k8s_client *c, json_object *involved, const char *type,
                 const char *reason, const char *message, const char *component);

/* An event recorder: events written from its own thread, in the order recorded, so that
 * recording one never waits on the API server (as client-go's recorder). Its requests go
 * through a client derived from C (10 s each, 3 attempts). At most CAP events wait (0: 1024);
 * one recorded while the queue is full is dropped, counted and logged (the first, then one
 * line per 10 s). NULL when out of memory. */
struct tf_k8s_recorder;
struct tf_k8s_recorder *tf_k8s_recorder_new(struct tf_k8s_client *c, const char *component,
                                            size_t cap);
/* Queues the event tf_k8s_event would write about INVOLVED (read before it returns). */
void tf_k8s_record(struct tf_k8s_recorder *r, json_object *involved, const char *type,
                   const char *reason, const char *message);
/* Waits at most TIMEOUT_MS until every event recorded before the call was written or given
 * up; true when none is left waiting. */
bool tf_k8s_recorder_flush(struct tf_k8s_recorder *r, int timeout_ms);
/* Events written, refused or failed after their attempts, and dropped (queue full). */
void tf_k8s_recorder_stats(struct tf_k8s_recorder *r, uint64_t *posted, uint64_t *failed,
                           uint64_t *dropped);
/* CPU seconds the recorder's thread has run (what writing the events cost this process). */
double tf_k8s_recorder_cpu_s(struct tf_k8s_recorder *r);
/* Writes what waits for up to 2 s, then gives the rest up (logged; a request in flight is cut
 * within about a second) and frees R. */
void tf_k8s_recorder_destroy(struct tf_k8s_recorder *r);

/* RFC 3339 timestamps as the API server writes them: seconds ("...Z") and MicroTime
 * ("...000000Z"). BUF must hold 32 bytes. */
void tf_k8s_time_now(char *buf, size_t len, bool micro);
/* Parses either form to Unix time in microseconds; TF_EPARSE when malformed. */
int tf_k8s_time_parse(const char *s, long long *usec);

#endif
