/* SPDX-License-Identifier: Apache-2.0
 *
 * The Pod mutating webhook driven with AdmissionReviews built from the seeds' manifests
 * (examples/) and from `kubectl run --dry-run=client -o json`; every returned JSONPatch is
 * applied with python3-jsonpatch and the resulting pod is checked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/yamljson.h"
#include "tf/shm.h"
#include "controller/base64.h"
#include "controller/webhook.h"
#include "harness.h"

/* ---- a fixture environment ------------------------------------------------------------------ */

struct fixture {
    json_object *profile; /* returned for any name */
    int owner_count;      /* pods already taken over per the "cache" */
    int workloads_created;
    char last_workload[128];
    char last_resources[512]; /* spec.resources of the last workload, as JSON */
    bool last_join;
    json_object *ns_labels;
    char last_event[600];
    int next_index; /* what take_index hands out next; 0: exhausted */
    int indexes_taken;
};

static json_object *load_doc(const char *rel, size_t idx)
{
    FILE *f = fopen(src_path(rel), "rb");
    if (!f)
        fail_msg("cannot open %s", rel);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    json_object *docs = NULL;
    char err[256];
    if (tf_manifest_parse(buf, n, &docs, err, sizeof(err)))
        fail_msg("%s: %s", rel, err);
    json_object *d = json_object_get(json_object_array_get_idx(docs, idx));
    json_object_put(docs);
    return d;
}

static json_object *fx_profile(void *arg, const char *ns, const char *name)
{
    struct fixture *fx = arg;
    if (!fx->profile || strcmp(name, "missing") == 0)
        return NULL;
    json_object *c = NULL;
    json_object_deep_copy(fx->profile, &c, NULL);
    return c;
}

static json_object *fx_namespace(void *arg, const char *name)
{
    struct fixture *fx = arg;
    char buf[256];
    snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"%s\"}}", name);
    json_object *o = jparse(buf);
    if (fx->ns_labels)
        json_object_object_add(tf_json_path(o, "metadata", NULL), "labels",
                               json_object_get(fx->ns_labels));
    return o;
}

static json_object *fx_pool(void *arg, const char *name)
{
    if (strcmp(name, "default-pool") != 0 && strcmp(name, "h100-pool") != 0)
        return NULL;
    char buf[256];
    snprintf(
        buf, sizeof(buf),
        "{\"metadata\":{\"name\":\"%s\"},\"spec\":{\"qosConfig\":{\"defaultQoS\":\"medium\"}}}",
        name);
    return jparse(buf);
}

static json_object *fx_owner(void *arg, const char *ns, const char *kind, const char *name)
{
    char buf[512];
    char dep[128];
    snprintf(dep, sizeof(dep), "%s", name);
    char *dash = strrchr(dep, '-');
    if (dash)
        *dash = '\0'; /* recommender-5d8f9 -> recommender */
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
             "\"kind\":\"Deployment\",\"name\":\"%s\",\"controller\":true}]}}",
             name, dep);
    return jparse(buf);
}

static int fx_count(void *arg, const char *ns, const char *owner)
{
    return ((struct fixture *)arg)->owner_count;
}

static int fx_take_index(void *arg, char *err, size_t errlen)
{
    struct fixture *f = arg;
    if (!f->next_index) {
        snprintf(err, errlen, "all 128 pod indexes are held");
        return TF_ENOSPC;
    }
    f->indexes_taken++;
    return f->next_index++;
}

static int fx_ensure(void *arg, const char *ns, const char *name, json_object *w, bool join,
                     char *err, size_t errlen)
{
    struct fixture *fx = arg;
    fx->workloads_created++;
    snprintf(fx->last_workload, sizeof(fx->last_workload), "%s/%s", ns, name);
    snprintf(fx->last_resources, sizeof(fx->last_resources), "%s",
             json_object_to_json_string_ext(tf_json_path(w, "spec", "resources", NULL),
                                            JSON_C_TO_STRING_PLAIN));
    fx->last_join = join;
    assert_string_equal(tf_json_str(w, "kind", NULL), "TensorFusionWorkload");
    return 0;
}

static void fx_event(void *arg, json_object *inv, const char *type, const char *reason,
                     const char *msg)
{
    struct fixture *f = arg;
    snprintf(f->last_event, sizeof(f->last_event), "%s %s/%s %s", reason,
             tf_json_str(inv, "kind", NULL), tf_json_str(inv, "metadata", "name", NULL), msg);
}

/* PriorityClasses of the fixture cluster: TensorFusion's two, a globalDefault one and a
 * user's own. */
static json_object *fx_priority(void *arg, const char *name)
{
    if (strcmp(name, "tensor-fusion-high") == 0)
        return jparse("{\"metadata\":{\"name\":\"tensor-fusion-high\"},\"value\":100000}");
    if (strcmp(name, "tensor-fusion-critical") == 0)
        return jparse("{\"metadata\":{\"name\":\"tensor-fusion-critical\"},\"value\":"
                      "1000000,\"preemptionPolicy\":\"PreemptLowerPriority\"}");
    if (strcmp(name, "cluster-default") == 0)
        return jparse("{\"metadata\":{\"name\":\"cluster-default\"},\"value\":10,"
                      "\"globalDefault\":true}");
    if (strcmp(name, "batch-low") == 0)
        return jparse("{\"metadata\":{\"name\":\"batch-low\"},\"value\":5}");
    return NULL;
}

static struct fixture fx;
static struct tf_webhook wh;

static int setup(void **state)
{
    memset(&fx, 0, sizeof(fx));
    struct tf_webhook_config cfg;
    assert_int_equal(tf_webhook_config_init(&cfg), 0);
    struct tf_webhook_env env = {fx_profile, fx_namespace, fx_pool,      fx_owner,    fx_count,
                                 fx_ensure,  &fx,          fx_event,     fx_priority, NULL,
                                 NULL,       NULL,         fx_take_index};
    json_object *am = jparse("{\"enable\":true,\"scope\":{\"includes\":{\"namespaceNames\":"
                             "[\"ml-team-a\"]},\"excludes\":{\"podSelector\":{\"matchLabels\":"
                             "{\"gpu-migration\":\"skip\"}}}}}");
    char err[256];
    assert_int_equal(tf_webhook_config_automigration(&cfg, am, err, sizeof(err)), 0);
    json_object_put(am);
    return tf_webhook_init(&wh, &cfg, &env);
}

static int teardown(void **state)
{
    tf_webhook_free(&wh);
    json_object_put(fx.profile);
    json_object_put(fx.ns_labels);
    return 0;
}

/* A pod as a ReplicaSet of DEPLOYMENT would create it from the manifest's template. */
static json_object *pod_from_template(json_object *doc, const char *ns, const char *deployment)
{
    json_object *tpl = tf_spec_pod_template(doc);
    assert_non_null(tpl);
    json_object *pod = NULL;
    json_object_deep_copy(tpl, &pod, NULL);
    json_object_object_add(pod, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(pod, "kind", json_object_new_string("Pod"));
    json_object *meta = tf_json_path(pod, "metadata", NULL);
    char buf[300];
    snprintf(buf, sizeof(buf), "%s-5d8f9-", deployment);
    json_object_object_add(meta, "generateName", json_object_new_string(buf));
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    snprintf(buf, sizeof(buf),
             "[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"%s-5d8f9\","
             "\"uid\":\"rs-uid\",\"controller\":true,\"blockOwnerDeletion\":true}]",
             deployment);
    json_object_object_add(meta, "ownerReferences", jparse(buf));
    return pod;
}

/* Runs the review through the HTTP handler and returns the pod after applying the patch
 * (python3-jsonpatch), or NULL when denied (RESPONSE kept for inspection). */
static json_object *admit(json_object *pod, const char *ns, json_object **response)
{
    char *body = admission_review(pod, ns, false);
    int status = 0;
    char *out = tf_webhook_handle(&wh, body, strlen(body), &status);
    free(body);
    assert_int_equal(status, 200);
    json_object *rev = jparse(out);
    free(out);
    json_object *resp = tf_json_path(rev, "response", NULL);
    assert_string_equal(tf_json_str(resp, "uid", NULL), "uid-1");
    if (response)
        *response = json_object_get(resp);
    json_object *res = NULL;
    if (json_object_get_boolean(tf_json_path(resp, "allowed", NULL))) {
        const char *p = tf_json_str(resp, "patch", NULL);
        if (p) {
            assert_string_equal(tf_json_str(resp, "patchType", NULL), "JSONPatch");
            char *ops_text = tf_base64_decode(p, NULL);
            json_object *ops = jparse(ops_text);
            free(ops_text);
            res = py_apply_patch(pod, ops);
            if (!res)
                fail_msg("patch does not apply");
            json_object_put(ops);
        } else {
            json_object_deep_copy(pod, &res, NULL);
        }
    }
    json_object_put(rev);
    return res;
}

static const char *ann(json_object *pod, const char *key)
{
    return tf_json_str(pod, "metadata", "annotations", key, NULL);
}

/* The member of array ARR (may be NULL) whose "name" is NAME, or NULL. */
static json_object *find_named_in(json_object *arr, const char *name)
{
    for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
        json_object *c = json_object_array_get_idx(arr, i);
        if (strcmp(tf_json_str(c, "name", NULL), name) == 0)
            return c;
    }
    return NULL;
}

static json_object *container(json_object *pod, const char *name)
{
    return find_named_in(tf_json_path(pod, "spec", "containers", NULL), name);
}

static json_object *find_init(json_object *pod, const char *name)
{
    return find_named_in(tf_json_path(pod, "spec", "initContainers", NULL), name);
}

static const char *env_of(json_object *c, const char *name)
{
    json_object *e = find_named_in(tf_json_path(c, "env", NULL), name);
    const char *v = e ? tf_json_str(e, "value", NULL) : NULL;
    return e ? (v ? v : "<valueFrom>") : NULL;
}

/* The downward-API fieldPath of env NAME on container C, or NULL. */
static const char *env_field_of(json_object *c, const char *name)
{
    json_object *e = find_named_in(tf_json_path(c, "env", NULL), name);
    return e ? tf_json_str(e, "valueFrom", "fieldRef", "fieldPath", NULL) : NULL;
}

/* C mounts only its pod's own directory of the host shm tree (where the node agent writes the
 * pod's limit region), read-only -- the region's limits part must not be writable from the pod,
 * root included -- but for its rw/ subdirectory (the usage part), and nothing else of that
 * tree. */
static void assert_own_shm_dir_only(json_object *c)
{
    json_object *shm_mount[2] = {NULL, NULL};
    int n = 0;
    json_object *mounts = tf_json_path(c, "volumeMounts", NULL);
    for (size_t i = 0; mounts && i < json_object_array_length(mounts); i++)
        if (strcmp(tf_json_str(json_object_array_get_idx(mounts, i), "name", NULL), "tf-shm") ==
            0) {
            assert_true(n < 2);
            shm_mount[n++] = json_object_array_get_idx(mounts, i);
        }
    assert_int_equal(n, 2);
    assert_string_equal(tf_json_str(shm_mount[0], "mountPath", NULL), "/run/tensor-fusion/pod");
    assert_string_equal(tf_json_str(shm_mount[0], "subPathExpr", NULL),
                        "$(POD_NAMESPACE)/$(POD_NAME)");
    assert_true(json_object_get_boolean(tf_json_path(shm_mount[0], "readOnly", NULL)));
    assert_string_equal(tf_json_str(shm_mount[1], "mountPath", NULL), "/run/tensor-fusion/pod/rw");
    assert_string_equal(tf_json_str(shm_mount[1], "subPathExpr", NULL),
                        "$(POD_NAMESPACE)/$(POD_NAME)/rw");
    assert_null(tf_json_path(shm_mount[1], "readOnly", NULL));
    assert_string_equal(env_of(c, "POD_NAMESPACE"), "<valueFrom>");
}

#define GPU_IDS_PATH "metadata.annotations['tensor-fusion.ai/gpu-ids']"

static size_t count_named(json_object *pod, const char *list, const char *prefix)
{
    json_object *a = tf_json_path(pod, "spec", list, NULL);
    size_t n = 0;
    for (size_t i = 0; a && i < json_object_array_length(a); i++)
        if (strncmp(tf_json_str(json_object_array_get_idx(a, i), "name", NULL), prefix,
                    strlen(prefix)) == 0)
            n++;
    return n;
}

/* Pod OUT lists the region group once in its supplementalGroups, after the user's own: the node
 * agent makes the pod's usage part 0660 root:that group, never world-writable. */
static void assert_region_group(json_object *out)
{
    json_object *g = tf_json_path(out, "spec", "securityContext", "supplementalGroups", NULL);
    assert_non_null(g);
    int n = 0;
    for (size_t i = 0; i < json_object_array_length(g); i++)
        n += json_object_get_int64(json_object_array_get_idx(g, i)) == TF_SHM_POD_GROUP;
    assert_int_equal(n, 1);
}

/* ---- scenarios ------------------------------------------------------------------------------ */

static void seed_001_deployment_pod_gets_soft_limiter_and_normalised_annotations(void **state)
{
    json_object *dep = load_doc("examples/seed-001-deployment.yaml", 0);
    fx.profile = load_doc("examples/seed-001-workloadprofile.yaml", 0);
    json_object *pod = pod_from_template(dep, "ml", "pytorch-example");
    json_object_object_add(tf_json_path(pod, "spec", NULL), "containers",
                           jparse("[{\"name\":\"python\",\"image\":\"pytorch/pytorch\",\"env\":"
                                  "[{\"name\":\"LD_PRELOAD\",\"value\":\"/usr/lib/libjemalloc.so\""
                                  "}]},{\"name\":\"sidecar\",\"image\":\"busybox\"}]"));
    json_object *out = admit(pod, "ml", NULL);
    assert_non_null(out);
    assert_string_equal(tf_json_str(out, "spec", "schedulerName", NULL), "tensor-fusion-scheduler");
    assert_string_equal(tf_json_str(out, "metadata", "labels", "tensor-fusion.ai/component", NULL),
                        "client");
    assert_string_equal(ann(out, "tensor-fusion.ai/gpupool"), "default-pool");
    assert_string_equal(ann(out, "tensor-fusion.ai/isolation"), "soft");
    assert_string_equal(ann(out, "tensor-fusion.ai/qos"), "medium");
    assert_string_equal(ann(out, "tensor-fusion.ai/tflops-request"), "10");
    assert_string_equal(ann(out, "tensor-fusion.ai/tflops-limit"), "20");
    assert_string_equal(ann(out, "tensor-fusion.ai/vram-limit"), "4Gi");
    assert_string_equal(ann(out, "tensor-fusion.ai/gpu-count"), "1");
    assert_string_equal(ann(out, "tensor-fusion.ai/workload"), "pytorch-example");
    assert_string_equal(ann(out, "tensor-fusion.ai/owner"), "Deployment/pytorch-example");
    json_object *py = container(out, "python");
    assert_string_equal(env_of(py, "LD_PRELOAD"),
                        "/tensor-fusion/libtf_limiter.so:/usr/lib/libjemalloc.so");
    assert_string_equal(env_of(py, "TF_SHM_PATH"), "/run/tensor-fusion/pod/shm");
    assert_string_equal(env_of(py, "TF_LIMITER_WAIT_MS"), "60000");
    assert_string_equal(env_of(py, "TF_LIMITER_STRICT"), "1");
    /* The container runtime exposes the GPUs the extender binds the pod to. */
    assert_string_equal(env_field_of(py, "NVIDIA_VISIBLE_DEVICES"), GPU_IDS_PATH);
    assert_own_shm_dir_only(py);
    assert_region_group(out);
    assert_string_equal(env_of(py, "POD_NAME"), "<valueFrom>");
    assert_string_equal(env_of(py, "CONTAINER_NAME"), "python");
    assert_string_equal(tf_json_str(py, "resources", "limits", "tensor-fusion.ai/vgpu", NULL), "1");
    assert_null(env_of(container(out, "sidecar"), "LD_PRELOAD"));
    assert_int_equal(count_named(out, "initContainers", "tf-"), 2);
    assert_int_equal(count_named(out, "volumes", "tf-"), 2);
    assert_int_equal(fx.workloads_created, 1);
    assert_string_equal(fx.last_workload, "ml/pytorch-example");
    json_object_put(out);
    json_object_put(pod);
    json_object_put(dep);
}

static void seed_004_takes_over_enabled_replicas_then_admits_the_rest_unmodified(void **state)
{
    json_object *dep = load_doc("examples/seed-004-migration.yaml", 0);
    json_object *pod = pod_from_template(dep, "ml-team-a", "recommender");
    fx.owner_count = 0;
    json_object *out = admit(pod, "ml-team-a", NULL);
    assert_non_null(out);
    json_object *app = container(out, "app");
    assert_null(tf_json_str(app, "resources", "limits", "nvidia.com/gpu", NULL));
    assert_string_equal(tf_json_str(app, "resources", "limits", "tensor-fusion.ai/vgpu", NULL),
                        "1");
    assert_null(tf_json_str(container(out, "log-shipper"), "resources", "limits",
                            "tensor-fusion.ai/vgpu", NULL));
    assert_string_equal(ann(out, "tensor-fusion.ai/isolation"), "shared");
    assert_int_equal(count_named(out, "initContainers", "tf-"), 0); /* shared: nothing else */
    assert_null(env_of(app, "LD_PRELOAD"));
    json_object_put(out);
    /* The cache now shows one taken-over pod of Deployment/recommender: the next is left
     * alone, with a warning saying why. */
    fx.owner_count = 1;
    json_object *resp = NULL;
    out = admit(pod, "ml-team-a", &resp);
    assert_non_null(out);
    assert_true(json_object_equal(out, pod));
    json_object *w = tf_json_path(resp, "warnings", NULL);
    assert_non_null(w);
    assert_non_null(
        strstr(json_object_get_string(json_object_array_get_idx(w, 0)), "enabled-replicas"));
    assert_non_null(strstr(fx.last_event, "EnabledReplicasReached Deployment/recommender"));
    json_object_put(resp);
    json_object_put(out);
    /* An owner reference whose controller is the string "false" is no controller (json-c
     * would read it as true), and ownerReferences that is not a list is no owner at all:
     * either way the pod has no Deployment to count against, and is taken over. */
    static const char *const refs[] = {
        "[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"recommender-5d8f9\","
        "\"uid\":\"rs-uid\",\"controller\":\"false\"}]",
        "{\"kind\":\"ReplicaSet\",\"name\":\"recommender-5d8f9\",\"controller\":true}"};
    for (int i = 0; i < 2; i++) {
        json_object *odd = NULL;
        json_object_deep_copy(pod, &odd, NULL);
        json_object_object_add(tf_json_path(odd, "metadata", NULL), "ownerReferences",
                               jparse(refs[i]));
        out = admit(odd, "ml-team-a", NULL);
        assert_non_null(out);
        assert_string_equal(tf_json_str(container(out, "app"), "resources", "limits",
                                        "tensor-fusion.ai/vgpu", NULL),
                            "1");
        json_object_put(out);
        json_object_put(odd);
    }
    json_object_put(pod);
    json_object_put(dep);
    /* autoMigration.enable is a boolean: a quoted "false" is refused, not read as true. */
    struct tf_webhook_config cfg;
    assert_int_equal(tf_webhook_config_init(&cfg), 0);
    json_object *am = jparse("{\"enable\":\"false\"}");
    char err[256] = "";
    assert_int_equal(tf_webhook_config_automigration(&cfg, am, err, sizeof(err)), TF_EINVAL);
    assert_string_equal(err, "autoMigration.enable: expected true or false, not \"false\"");
    json_object_put(am);
    tf_webhook_config_free(&cfg);
}

static void invalid_annotation_is_denied_with_the_specs_message(void **state)
{
    json_object *pod = jparse("{\"metadata\":{\"name\":\"bad\",\"labels\":{"
                              "\"tensor-fusion.ai/enabled\":\"true\"},\"annotations\":{"
                              "\"tensor-fusion.ai/vram-limit\":\"4Gb\"}},\"spec\":{\"containers\":"
                              "[{\"name\":\"c\",\"image\":\"x\"}]}}");
    json_object *resp = NULL;
    assert_null(admit(pod, "default", &resp));
    assert_false(json_object_get_boolean(tf_json_path(resp, "allowed", NULL)));
    assert_int_equal(json_object_get_int(tf_json_path(resp, "status", "code", NULL)), 400);
    const char *msg = tf_json_str(resp, "status", "message", NULL);
    assert_non_null(strstr(msg, "tensor-fusion.ai/vram-limit"));
    assert_non_null(strstr(msg, "4Gb"));
    json_object_put(resp);
    json_object_put(pod);
    /* Unknown pool and missing profile are denied too, naming the key. */
    pod = jparse("{\"metadata\":{\"name\":\"p\",\"labels\":{\"tensor-fusion.ai/enabled\":\"true\"},"
                 "\"annotations\":{\"tensor-fusion.ai/gpupool\":\"nope\"}},\"spec\":{"
                 "\"containers\":[{\"name\":\"c\"}]}}");
    assert_null(admit(pod, "default", &resp));
    assert_non_null(strstr(tf_json_str(resp, "status", "message", NULL), "GPUPool \"nope\""));
    json_object_put(resp);
    json_object_put(pod);
}

static void opted_out_own_namespace_and_unlabelled_pods_are_untouched(void **state)
{
    const char *pods[] = {
        "{\"metadata\":{\"name\":\"a\",\"labels\":{\"tensor-fusion.ai/enabled\":\"false\"}},"
        "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{"
        "\"nvidia.com/gpu\":\"1\"}}}]}}",
        "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}",
    };
    for (int i = 0; i < 2; i++) {
        json_object *pod = jparse(pods[i]);
        json_object *resp = NULL;
        json_object *out = admit(pod, "ml-team-a", &resp);
        assert_non_null(out);
        assert_null(tf_json_path(resp, "patch", NULL));
        json_object_put(out);
        json_object_put(resp);
        json_object_put(pod);
    }
    json_object *pod = jparse("{\"metadata\":{\"name\":\"hv\",\"labels\":{"
                              "\"tensor-fusion.ai/enabled\":\"true\"}},\"spec\":{\"containers\":["
                              "{\"name\":\"c\"}]}}");
    json_object *resp = NULL;
    json_object *out = admit(pod, "tensor-fusion-sys", &resp);
    assert_null(tf_json_path(resp, "patch", NULL));
    json_object_put(out);
    json_object_put(resp);
    json_object_put(pod);
}

/* Seed 004: in a migrated pod whose containers each had their own nvidia.com/gpu, every
 * container still sees exactly its own GPUs (nvidia-smi shows as many as before). */
static void migrated_containers_each_see_their_own_gpus(void **state)
{
    char longname[64];
    memset(longname, 'x', 60);
    longname[60] = '\0';
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"mm\"},\"spec\":{\"containers\":["
             "{\"name\":\"train\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}}},"
             "{\"name\":\"side\"},"
             "{\"name\":\"%s\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}",
             longname);
    json_object *pod = jparse(buf);
    json_object *out = admit(pod, "ml-team-a", NULL);
    assert_string_equal(ann(out, "tensor-fusion.ai/gpu-count"), "3");
    json_object *cgc = jparse(ann(out, "tensor-fusion.ai/container-gpu-count"));
    assert_int_equal(json_object_get_int(tf_json_path(cgc, "train", NULL)), 2);
    json_object_put(cgc);
    assert_string_equal(env_field_of(container(out, "train"), "NVIDIA_VISIBLE_DEVICES"),
                        "metadata.annotations['tensor-fusion.ai/gpu-ids-train']");
    assert_null(env_of(container(out, "side"), "NVIDIA_VISIBLE_DEVICES"));
    /* A name too long for an annotation key is cut and hashed, the same way the extender
     * names the annotation (tf_spec_container_gpu_ids_key). */
    char key[TF_SPEC_CONTAINER_GPU_IDS_KEY_MAX], path[160];
    tf_spec_container_gpu_ids_key(longname, key);
    assert_int_equal(strlen(key) - strlen("tensor-fusion.ai/"), 63);
    snprintf(path, sizeof(path), "metadata.annotations['%s']", key);
    assert_string_equal(env_field_of(container(out, longname), "NVIDIA_VISIBLE_DEVICES"), path);
    json_object_put(out);
    json_object_put(pod);
}

static void auto_migration_takes_over_native_gpu_pods_in_scope_only(void **state)
{
    const char *tpl = "{\"metadata\":{\"name\":\"m\",\"labels\":{%s}},\"spec\":{\"containers\":["
                      "{\"name\":\"app\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"2\"}}}]}}";
    char buf[512];
    snprintf(buf, sizeof(buf), tpl, "");
    json_object *pod = jparse(buf);
    json_object *out = admit(pod, "ml-team-a", NULL);
    assert_string_equal(tf_json_str(out, "metadata", "labels", "tensor-fusion.ai/enabled", NULL),
                        "true");
    assert_string_equal(ann(out, "tensor-fusion.ai/isolation"), "shared");
    assert_string_equal(ann(out, "tensor-fusion.ai/gpu-count"), "2");
    assert_string_equal(
        tf_json_str(container(out, "app"), "resources", "limits", "tensor-fusion.ai/vgpu", NULL),
        "2");
    assert_string_equal(env_field_of(container(out, "app"), "NVIDIA_VISIBLE_DEVICES"),
                        GPU_IDS_PATH);
    json_object_put(out);
    /* Outside the included namespaces: untouched. */
    out = admit(pod, "other-team", NULL);
    assert_true(json_object_equal(out, pod));
    json_object_put(out);
    json_object_put(pod);
    /* Excluded by pod selector: untouched. */
    snprintf(buf, sizeof(buf), tpl, "\"gpu-migration\":\"skip\"");
    pod = jparse(buf);
    out = admit(pod, "ml-team-a", NULL);
    assert_true(json_object_equal(out, pod));
    json_object_put(out);
    json_object_put(pod);
}

/* A TensorFusion pod NAME limited to 10 TFLOPS / 1Gi, with the annotations ANN (JSON members,
 * each followed by a comma, or "") and spec members SPEC (JSON, ending with "containers"). */
static json_object *limited_pod(const char *name, const char *ann, const char *spec)
{
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"tensor-fusion.ai/enabled\":\"true\"},"
             "\"annotations\":{%s\"tensor-fusion.ai/tflops-limit\":\"10\",\"tensor-fusion.ai/"
             "vram-limit\":\"1Gi\"}},\"spec\":{%s}}",
             name, ann, spec);
    return jparse(buf);
}

static void remote_pod_gets_only_the_client_and_hard_local_gets_a_worker(void **state)
{
    json_object *pod =
        jparse("{\"metadata\":{\"name\":\"r\",\"labels\":{\"tensor-fusion.ai/enabled\":\"true\"},"
               "\"annotations\":{\"tensor-fusion.ai/is-local-gpu\":\"false\",\"tensor-fusion.ai/"
               "tflops-limit\":\"20\",\"tensor-fusion.ai/vram-limit\":\"8Gi\"}},\"spec\":{"
               "\"containers\":[{\"name\":\"app\",\"image\":\"x\"}]}}");
    json_object *out = admit(pod, "default", NULL);
    json_object *app = container(out, "app");
    assert_string_equal(env_of(app, "TF_CONTROLLER_URL"),
                        "http://tensor-fusion.tensor-fusion-sys.svc:8080/api/connection");
    assert_string_equal(env_of(app, "TF_CONNECTION_NAME"), "<valueFrom>");
    assert_string_equal(env_of(app, "LD_LIBRARY_PATH"), "/tensor-fusion/client");
    assert_null(tf_json_str(app, "resources", "limits", "tensor-fusion.ai/vgpu", NULL));
    assert_null(container(out, "tf-worker"));
    assert_null(env_of(app, "NVIDIA_VISIBLE_DEVICES")); /* no local GPU at all */
    /* The workers' token, from the workload's Secret (the reconciler creates it). */
    json_object *tok = find_named_in(tf_json_path(app, "env", NULL), "TF_TOKEN");
    assert_string_equal(tf_json_str(tok, "valueFrom", "secretKeyRef", "name", NULL), "tf-token-r");
    assert_string_equal(tf_json_str(tok, "valueFrom", "secretKeyRef", "key", NULL), "token");
    assert_string_equal(ann(out, "tensor-fusion.ai/is-local-gpu"), "false");
    json_object_put(out);
    json_object_put(pod);
    pod = jparse("{\"metadata\":{\"name\":\"h\",\"labels\":{\"tensor-fusion.ai/enabled\":\"true\"},"
                 "\"annotations\":{\"tensor-fusion.ai/isolation\":\"hard\",\"tensor-fusion.ai/"
                 "compute-percent-limit\":\"50\",\"tensor-fusion.ai/vram-limit\":\"8Gi\"}},"
                 "\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"x\"}]}}");
    out = admit(pod, "default", NULL);
    json_object *w = container(out, "tf-worker");
    assert_non_null(w);
    assert_string_equal(tf_json_str(w, "resources", "limits", "tensor-fusion.ai/vgpu", NULL), "1");
    /* Hard: the worker holds the GPU, the app only talks to it. */
    assert_string_equal(env_field_of(w, "NVIDIA_VISIBLE_DEVICES"), GPU_IDS_PATH);
    /* ... and enforces the pod's limits from its region, live. */
    json_object *cmd = tf_json_path(w, "command", NULL);
    assert_int_equal(json_object_array_length(cmd), 8);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 7)),
                        "--pinned-staging");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 5)),
                        "--limits-region");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 6)),
                        "/run/tensor-fusion/pod/shm");
    /* A token made for this pod alone: the init container writes it into the pod's emptyDir,
     * the worker requires it, the app presents it. */
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 3)), "--token-file");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 4)),
                        "/tensor-fusion/run/token");
    assert_string_equal(env_of(container(out, "app"), "TF_TOKEN_FILE"), "/tensor-fusion/run/token");
    assert_string_equal(env_of(container(out, "app"), "TF_CONNECT_WAIT_MS"), "120000");
    json_object *copy = find_init(out, "tf-client-copy");
    assert_non_null(copy);
    const char *script =
        json_object_get_string(json_object_array_get_idx(tf_json_path(copy, "command", NULL), 2));
    assert_non_null(strstr(script, "/dev/urandom"));
    assert_non_null(strstr(script, "> /tensor-fusion/run/token"));
    assert_own_shm_dir_only(w);
    assert_region_group(out);

    assert_null(env_of(container(out, "app"), "NVIDIA_VISIBLE_DEVICES"));
    assert_string_equal(env_of(container(out, "app"), "TF_REMOTE"),
                        "unix:///tensor-fusion/run/worker.sock");
    assert_string_equal(ann(out, "tensor-fusion.ai/compute-percent-limit"), "50");
    json_object_put(out);
    json_object_put(pod);
    /* A worker holding two GPUs exposes both (NVIDIA_VISIBLE_DEVICES shows it just those). */
    pod = jparse("{\"metadata\":{\"name\":\"h2\",\"labels\":{\"tensor-fusion.ai/enabled\":"
                 "\"true\"},\"annotations\":{\"tensor-fusion.ai/isolation\":\"hard\","
                 "\"tensor-fusion.ai/gpu-count\":\"2\",\"tensor-fusion.ai/vram-limit\":\"8Gi\"}},"
                 "\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"x\"}]}}");
    out = admit(pod, "default", NULL);
    w = container(out, "tf-worker");
    cmd = tf_json_path(w, "command", NULL);
    assert_int_equal(json_object_array_length(cmd), 10);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 7)), "--device");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 8)), "0,1");
    assert_string_equal(tf_json_str(w, "resources", "limits", "tensor-fusion.ai/vgpu", NULL), "2");
    json_object_put(out);
    json_object_put(pod);
    /* Disjoint split: the pod's list would show each container the other's GPUs too, so each
     * reads its own gpu-ids-<container> (the extender writes them); a container's own value is
     * never replaced. */
    pod =
        limited_pod("s", "\"tensor-fusion.ai/container-gpu-count\":\"{\\\"a\\\":1,\\\"b\\\":1}\",",
                    "\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"b\","
                    "\"image\":\"x\"}]");
    out = admit(pod, "default", NULL);
    assert_non_null(out);
    assert_string_equal(env_field_of(container(out, "a"), "NVIDIA_VISIBLE_DEVICES"),
                        "metadata.annotations['tensor-fusion.ai/gpu-ids-a']");
    assert_string_equal(env_field_of(container(out, "b"), "NVIDIA_VISIBLE_DEVICES"),
                        "metadata.annotations['tensor-fusion.ai/gpu-ids-b']");
    json_object_put(out);
    json_object_put(pod);
    pod = limited_pod("o", "",
                      "\"containers\":[{\"name\":\"app\",\"image\":\"x\",\"env\":[{\"name\":"
                      "\"NVIDIA_VISIBLE_DEVICES\",\"value\":\"all\"}]}]");
    out = admit(pod, "default", NULL);
    assert_string_equal(env_of(container(out, "app"), "NVIDIA_VISIBLE_DEVICES"), "all");
    json_object_put(out);
    json_object_put(pod);
}

static json_object *admit_app(const char *name, const char *ann);

/* Partitioned pods get a pod index (annotation and upstream's index_<k>: <n> resource on each
 * GPU container) and no NVIDIA_VISIBLE_DEVICES in the spec: it would override the MIG device
 * the device plugin's Allocate names. Other modes keep gpu-ids; exhaustion is a clear 503. */
static void partitioned_pods_get_a_pod_index_instead_of_gpu_ids_env(void **state)
{
    fx.next_index = 60; /* -> index_7: 4 */
    json_object *pod = limited_pod("p", "\"tensor-fusion.ai/isolation\":\"partitioned\",",
                                   "\"containers\":[{\"name\":\"app\",\"image\":\"x\"}]");
    json_object *out = admit(pod, "default", NULL);
    assert_non_null(out);
    assert_string_equal(ann(out, "tensor-fusion.ai/index"), "60");
    json_object *app = container(out, "app");
    assert_string_equal(tf_json_str(app, "resources", "limits", "tensor-fusion.ai/index_7", NULL),
                        "4");
    assert_string_equal(tf_json_str(app, "resources", "requests", "tensor-fusion.ai/index_7", NULL),
                        "4");
    assert_string_equal(tf_json_str(app, "resources", "limits", "tensor-fusion.ai/vgpu", NULL),
                        "1");
    assert_null(env_of(app, "NVIDIA_VISIBLE_DEVICES"));
    json_object_put(out);
    /* A pod cannot bring its own index: the annotation and resources are stripped first. */
    json_object_put(pod);
    pod = limited_pod("q",
                      "\"tensor-fusion.ai/isolation\":\"partitioned\",\"tensor-fusion.ai/"
                      "index\":\"5\",",
                      "\"containers\":[{\"name\":\"app\",\"image\":\"x\",\"resources\":"
                      "{\"limits\":{\"tensor-fusion.ai/index_0\":\"5\"}}}]");
    out = admit(pod, "default", NULL);
    assert_string_equal(ann(out, "tensor-fusion.ai/index"), "61");
    assert_null(tf_json_path(container(out, "app"), "resources", "limits",
                             "tensor-fusion.ai/index_0", NULL));
    assert_string_equal(
        tf_json_str(container(out, "app"), "resources", "limits", "tensor-fusion.ai/index_7", NULL),
        "5");
    json_object_put(out);
    json_object_put(pod);
    /* Soft pods take no index and keep NVIDIA_VISIBLE_DEVICES from gpu-ids. */
    int taken = fx.indexes_taken;
    out = admit_app("s", "");
    assert_null(ann(out, "tensor-fusion.ai/index"));
    assert_string_equal(env_field_of(container(out, "app"), "NVIDIA_VISIBLE_DEVICES"),
                        GPU_IDS_PATH);
    assert_int_equal(fx.indexes_taken, taken);
    json_object_put(out);
    /* All indexes taken: refused, saying why. */
    fx.next_index = 0;
    pod = limited_pod("r", "\"tensor-fusion.ai/isolation\":\"partitioned\",",
                      "\"containers\":[{\"name\":\"app\",\"image\":\"x\"}]");
    json_object *resp = NULL;
    out = admit(pod, "default", &resp);
    assert_null(out);
    assert_int_equal(json_object_get_int(tf_json_path(resp, "status", "code", NULL)), 503);
    assert_non_null(strstr(tf_json_str(resp, "status", "message", NULL), "pod index"));
    json_object_put(resp);
    json_object_put(pod);
}

/* Admits a one-container pod named NAME with limits and the annotation JSON members ANN. */
static json_object *admit_app(const char *name, const char *ann)
{
    json_object *pod =
        limited_pod(name, ann, "\"containers\":[{\"name\":\"app\",\"image\":\"x\"}]");
    json_object *out = admit(pod, "default", NULL);
    json_object_put(pod);
    return out;
}

/* Item 8: standalone-worker-mode and disable-features change what the pod gets. */
static void standalone_mode_and_disabled_features_shape_the_injection(void **state)
{
    /* standalone-worker-mode true: a tf-worker sidecar holds the GPU (hard isolation). */
    json_object *out = admit_app("sa", "\"tensor-fusion.ai/standalone-worker-mode\":\"true\",");
    assert_non_null(container(out, "tf-worker"));
    assert_string_equal(ann(out, "tensor-fusion.ai/isolation"), "hard");
    assert_null(env_of(container(out, "app"), "LD_PRELOAD"));
    json_object_put(out);
    /* gpu-limiter off on a hard pod: the worker enforces no limits region. */
    out = admit_app("nl", "\"tensor-fusion.ai/isolation\":\"hard\","
                          "\"tensor-fusion.ai/disable-features\":\"gpu-limiter\",");
    json_object *cmd = tf_json_path(container(out, "tf-worker"), "command", NULL);
    assert_non_null(cmd);
    for (size_t i = 0; i < json_object_array_length(cmd); i++)
        assert_string_not_equal(json_object_get_string(json_object_array_get_idx(cmd, i)),
                                "--limits-region");
    json_object_put(out);
    /* gpu-limiter off on a soft pod: no in-process limiter is preloaded (the control case
     * without the key has one). */
    out = admit_app("ns", "\"tensor-fusion.ai/disable-features\":\"gpu-limiter\",");
    assert_null(env_of(container(out, "app"), "LD_PRELOAD"));
    json_object_put(out);
    out = admit_app("ls", "");
    assert_non_null(env_of(container(out, "app"), "LD_PRELOAD"));
    json_object_put(out);
    /* start-worker off (upstream's debugging switch): the worker container sleeps. */
    out = admit_app("sw", "\"tensor-fusion.ai/isolation\":\"hard\","
                          "\"tensor-fusion.ai/disable-features\":\"start-worker\",");
    cmd = tf_json_path(container(out, "tf-worker"), "command", NULL);
    assert_int_equal(json_object_array_length(cmd), 2);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 0)), "sleep");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(cmd, 1)), "infinity");
    json_object_put(out);
    /* Contradicting its own isolation key: denied with the spec's message. */
    assert_null(admit_app("bad", "\"tensor-fusion.ai/isolation\":\"soft\","
                                 "\"tensor-fusion.ai/standalone-worker-mode\":\"true\","));
}

/* A soft pod with QOS and, when CLASS is set, its own priorityClassName plus the priority the
 * apiserver's Priority plugin resolved for it. */
static json_object *qos_pod(const char *qos, const char *cls, int priority)
{
    char ann[128], spec[512];
    snprintf(ann, sizeof(ann), "\"tensor-fusion.ai/qos\":\"%s\",", qos);
    snprintf(spec, sizeof(spec),
             "%s%s%s\"priority\":%d,\"containers\":[{\"name\":\"app\",\"image\":\"x\"}]",
             cls ? "\"priorityClassName\":\"" : "", cls ? cls : "", cls ? "\"," : "", priority);
    return limited_pod("q", ann, spec);
}

static void check_priority(const char *qos, const char *cls, int priority, const char *want_cls,
                           int want_priority, const char *want_policy)
{
    json_object *pod = qos_pod(qos, cls, priority);
    json_object *out = admit(pod, "default", NULL);
    assert_non_null(out);
    const char *got = tf_json_str(out, "spec", "priorityClassName", NULL);
    if (want_cls)
        assert_string_equal(got, want_cls);
    else
        assert_null(got);
    assert_int_equal(json_object_get_int(tf_json_path(out, "spec", "priority", NULL)),
                     want_priority);
    const char *policy = tf_json_str(out, "spec", "preemptionPolicy", NULL);
    if (want_policy)
        assert_string_equal(policy, want_policy);
    else
        assert_null(policy);
    json_object_put(out);
    json_object_put(pod);
}

/* Seed 000: high and critical pods without a PriorityClass of their own get TensorFusion's,
 * with its value (the apiserver resolved the priority before the webhook ran); a pod's own
 * class stays, the cluster's globalDefault counts as none, other QoS levels are left alone,
 * and a class that does not exist leaves the pod as it is with a warning. */
static void high_and_critical_pods_get_a_priority_class_unless_they_name_one(void **state)
{
    check_priority("high", NULL, 0, "tensor-fusion-high", 100000, NULL);
    check_priority("critical", NULL, 0, "tensor-fusion-critical", 1000000, "PreemptLowerPriority");
    check_priority("high", "cluster-default", 10, "tensor-fusion-high", 100000, NULL);
    check_priority("critical", "batch-low", 5, "batch-low", 5, NULL);
    check_priority("medium", NULL, 0, NULL, 0, NULL);
    check_priority("low", "cluster-default", 10, "cluster-default", 10, NULL);
    free(wh.cfg.priority_class_high);
    wh.cfg.priority_class_high = strdup("no-such-class");
    json_object *pod = qos_pod("high", NULL, 0), *resp = NULL;
    json_object *out = admit(pod, "default", &resp);
    assert_null(tf_json_str(out, "spec", "priorityClassName", NULL));
    assert_int_equal(json_object_get_int(tf_json_path(out, "spec", "priority", NULL)), 0);
    json_object *w = tf_json_path(resp, "warnings", NULL);
    assert_non_null(w);
    assert_non_null(strstr(json_object_get_string(json_object_array_get_idx(w, 0)),
                           "PriorityClass no-such-class does not exist"));
    json_object_put(resp);
    json_object_put(out);
    json_object_put(pod);
    free(wh.cfg.priority_class_high);
    wh.cfg.priority_class_high = strdup(""); /* off */
    check_priority("high", NULL, 0, NULL, 0, NULL);
    free(wh.cfg.priority_class_high);
    wh.cfg.priority_class_high = strdup(TF_PRIORITY_CLASS_HIGH);
}

static void kubectl_dry_run_pod_is_mutated(void **state)
{
    if (system("command -v kubectl >/dev/null 2>&1") != 0) {
        fprintf(stderr, "SKIP: kubectl not installed\n");
        skip();
    }
    /* kubectl reads API discovery even for client dry runs: give it the fake API server. */
    struct fake_api api;
    if (fake_start(&api, NULL)) {
        fprintf(stderr, "SKIP: cannot start the fake API server\n");
        skip();
    }
    char cmd[1024];
    snprintf(cmd, sizeof(cmd),
             "KUBECONFIG=/nonexistent kubectl --server=%s --cache-dir=%s/cache run web "
             "--image=nginx --restart=Never "
             "--labels=tensor-fusion.ai/enabled=true "
             "--annotations=tensor-fusion.ai/tflops-limit=15 "
             "--annotations=tensor-fusion.ai/vram-limit=2Gi "
             "--annotations=tensor-fusion.ai/workload=shared-wl "
             "--dry-run=client -o json 2>/dev/null",
             api.server, api.dir);
    FILE *p = popen(cmd, "r");
    static char buf[16384];
    size_t n = fread(buf, 1, sizeof(buf) - 1, p);
    buf[n] = '\0';
    assert_int_equal(pclose(p), 0);
    fake_stop(&api);
    json_object *pod = jparse(buf);
    assert_string_equal(tf_json_str(pod, "kind", NULL), "Pod");
    fx.workloads_created = 0;
    json_object *out = admit(pod, "default", NULL);
    assert_string_equal(tf_json_str(out, "spec", "schedulerName", NULL), "tensor-fusion-scheduler");
    assert_string_equal(ann(out, "tensor-fusion.ai/tflops-request"), "15"); /* inherits limit */
    assert_string_equal(ann(out, "tensor-fusion.ai/vram-request"), "2Gi");
    assert_string_equal(env_of(container(out, "web"), "LD_PRELOAD"),
                        "/tensor-fusion/libtf_limiter.so");
    assert_int_equal(fx.workloads_created, 1);
    assert_string_equal(fx.last_workload, "default/shared-wl");
    assert_true(fx.last_join);
    json_object_put(out);
    json_object_put(pod);
}

/* The TensorFusionWorkload the webhook writes spells compute as upstream's CRD does
 * (resources.*.compute), not our former computePercent (still read). */
static void workload_compute_percent_is_written_in_upstreams_field(void **state)
{
    json_object *pod =
        jparse("{\"metadata\":{\"name\":\"p\",\"labels\":{\"tensor-fusion.ai/enabled\":\"true\"},"
               "\"annotations\":{\"tensor-fusion.ai/compute-percent-request\":\"25\","
               "\"tensor-fusion.ai/compute-percent-limit\":\"50\","
               "\"tensor-fusion.ai/vram-limit\":\"2Gi\",\"tensor-fusion.ai/workload\":\"pct\"}},"
               "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}");
    fx.workloads_created = 0;
    json_object *out = admit(pod, "default", NULL);
    assert_non_null(out);
    assert_int_equal(fx.workloads_created, 1);
    assert_string_equal(fx.last_resources, "{\"requests\":{\"compute\":\"25\",\"vram\":\"2Gi\"},"
                                           "\"limits\":{\"compute\":\"50\",\"vram\":\"2Gi\"}}");
    json_object_put(out);
    json_object_put(pod);
}

static void dry_run_does_not_create_workloads_and_garbage_is_400(void **state)
{
    json_object *pod = jparse("{\"metadata\":{\"name\":\"d\",\"labels\":{"
                              "\"tensor-fusion.ai/enabled\":\"true\"},\"annotations\":{"
                              "\"tensor-fusion.ai/isolation\":\"shared\"}},\"spec\":{"
                              "\"containers\":[{\"name\":\"c\"}]}}");
    fx.workloads_created = 0;
    char *body = admission_review(pod, "default", true);
    int status;
    char *out = tf_webhook_handle(&wh, body, strlen(body), &status);
    assert_int_equal(status, 200);
    if (!strstr(out, "\"patch\""))
        fail_msg("no patch in %s", out);
    assert_int_equal(fx.workloads_created, 0);
    free(out);
    free(body);
    json_object_put(pod);
    out = tf_webhook_handle(&wh, "{not json", 9, &status);
    assert_int_equal(status, 400);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_001_deployment_pod_gets_soft_limiter_and_normalised_annotations),
        cmocka_unit_test(seed_004_takes_over_enabled_replicas_then_admits_the_rest_unmodified),
        cmocka_unit_test(invalid_annotation_is_denied_with_the_specs_message),
        cmocka_unit_test(opted_out_own_namespace_and_unlabelled_pods_are_untouched),
        cmocka_unit_test(auto_migration_takes_over_native_gpu_pods_in_scope_only),
        cmocka_unit_test(migrated_containers_each_see_their_own_gpus),
        cmocka_unit_test(remote_pod_gets_only_the_client_and_hard_local_gets_a_worker),
        cmocka_unit_test(standalone_mode_and_disabled_features_shape_the_injection),
        cmocka_unit_test(high_and_critical_pods_get_a_priority_class_unless_they_name_one),
        cmocka_unit_test(kubectl_dry_run_pod_is_mutated),
        cmocka_unit_test(workload_compute_percent_is_written_in_upstreams_field),
        cmocka_unit_test(dry_run_does_not_create_workloads_and_garbage_is_400),
        cmocka_unit_test(partitioned_pods_get_a_pod_index_instead_of_gpu_ids_env),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
