/* SPDX-License-Identifier: Apache-2.0
 *
 * Attacks on placement through admission: a pod that brings its own GPUs
 * (tensor-fusion.ai/gpu-ids, spec.nodeName), poses as a remote worker, raises its limits on a
 * running pod, or forges / copies an allocation signature. Each review goes through the
 * webhook's HTTP handler as kube-apiserver sends it (AdmissionReview v1 with userInfo and
 * oldObject); patches are applied with python3-jsonpatch.
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
#include "controller/allocsig.h"
#include "controller/base64.h"
#include "controller/sysguard.h"
#include "controller/webhook.h"
#include "harness.h"

#define CONTROLLER "system:serviceaccount:tensor-fusion-sys:tensor-fusion"
#define ATTACKER "alice"

static struct tf_webhook wh;

static json_object *fx_pool(void *arg, const char *name)
{
    (void)arg;
    if (strcmp(name, "default-pool") != 0)
        return NULL;
    return jparse("{\"metadata\":{\"name\":\"default-pool\"}}");
}

static int setup(void **state)
{
    struct tf_webhook_config cfg;
    assert_int_equal(tf_webhook_config_init(&cfg), 0);
    struct tf_webhook_env env = {.get_pool = fx_pool};
    return tf_webhook_init(&wh, &cfg, &env);
}

static int teardown(void **state)
{
    tf_webhook_free(&wh);
    return 0;
}

/* The AdmissionReview of OP on POD (OLD for UPDATE) by USER, through tf_webhook_handle. The
 * response is returned (caller owns); *OUT gets the pod after the patch when allowed. */
static json_object *review(const char *op, const char *user, json_object *old, json_object *pod,
                           json_object **out)
{
    json_object *rev = jparse("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
                              "\"AdmissionReview\",\"request\":{\"uid\":\"u-1\",\"kind\":{"
                              "\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"resource\":{"
                              "\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
                              "\"namespace\":\"ml\"}}");
    json_object *r = tf_json_path(rev, "request", NULL);
    json_object_object_add(r, "operation", json_object_new_string(op));
    json_object *ui = json_object_new_object();
    json_object_object_add(ui, "username", json_object_new_string(user));
    json_object_object_add(r, "userInfo", ui);
    json_object_object_add(r, "object", json_object_get(pod));
    json_object_object_add(r, "oldObject", old ? json_object_get(old) : NULL);
    const char *body = json_object_to_json_string_ext(rev, JSON_C_TO_STRING_PLAIN);
    int status = 0;
    char *text = tf_webhook_handle(&wh, body, strlen(body), &status);
    json_object_put(rev);
    assert_int_equal(status, 200);
    json_object *root = jparse(text);
    json_object *resp = json_object_get(tf_json_path(root, "response", NULL));
    json_object_put(root);
    free(text);
    if (out) {
        *out = NULL;
        if (json_object_get_boolean(tf_json_path(resp, "allowed", NULL))) {
            const char *p = tf_json_str(resp, "patch", NULL);
            if (p) {
                char *ops_text = tf_base64_decode(p, NULL);
                json_object *ops = jparse(ops_text);
                free(ops_text);
                *out = py_apply_patch(pod, ops);
                if (!*out)
                    fail_msg("patch does not apply");
                json_object_put(ops);
            } else {
                json_object_deep_copy(pod, out, NULL);
            }
        }
    }
    return resp;
}

static bool allowed(json_object *resp)
{
    return json_object_get_boolean(tf_json_path(resp, "allowed", NULL));
}

static const char *message(json_object *resp)
{
    return tf_json_str(resp, "status", "message", NULL);
}

static const char *ann(json_object *pod, const char *k)
{
    return tf_json_str(pod, "metadata", "annotations", k, NULL);
}

static const char *lbl(json_object *pod, const char *k)
{
    return tf_json_str(pod, "metadata", "labels", k, NULL);
}

/* A TensorFusion pod carrying every system key a tenant might forge. */
static json_object *forged_pod(const char *enabled)
{
    char buf[2048];
    snprintf(
        buf, sizeof(buf),
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"squatter\","
        "\"namespace\":\"ml\",\"labels\":{\"tensor-fusion.ai/enabled\":\"%s\","
        "\"tensor-fusion.ai/component\":\"worker\",\"tensor-fusion.ai/workload\":"
        "\"victim\"},\"annotations\":{\"tensor-fusion.ai/vram-limit\":\"8Gi\","
        "\"tensor-fusion.ai/gpu-ids\":\"GPU-victim\",\"tensor-fusion.ai/gpu-ids-app\":"
        "\"GPU-victim\",\"tensor-fusion.ai/container-gpus\":\"{\\\"app\\\":[\\\"GPU-victim\\\"]"
        "}\",\"tensor-fusion.ai/allocation-signature\":\"v1:00\",\"tensor-fusion.ai/owner\":"
        "\"Deployment/victim\"}},\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":"
        "\"x\"}]}}",
        enabled);
    return jparse(buf);
}

static void assert_no_system_keys(json_object *pod)
{
    json_object *a = tf_json_path(pod, "metadata", "annotations", NULL);
    json_object_object_foreach(a, k, v)
    {
        (void)v;
        if (tf_sysguard_system_annotation(k))
            fail_msg("system annotation %s kept", k);
    }
    assert_null(lbl(pod, "tensor-fusion.ai/workload"));
}

static void pod_bringing_gpu_ids_is_admitted_without_them(void **state)
{
    json_object *pod = forged_pod("true"), *out = NULL;
    json_object *resp = review("CREATE", ATTACKER, NULL, pod, &out);
    assert_true(allowed(resp));
    assert_non_null(out);
    assert_no_system_keys(out);
    /* taken over as an ordinary client: not the worker it posed as */
    assert_string_equal(lbl(out, "tensor-fusion.ai/component"), "client");
    assert_string_equal(ann(out, "tensor-fusion.ai/vram-limit"), "8Gi");
    /* each removal is named to the user */
    const char *w = json_object_to_json_string_ext(tf_json_path(resp, "warnings", NULL),
                                                   JSON_C_TO_STRING_NOSLASHESCAPE);
    assert_non_null(strstr(w, "tensor-fusion.ai/gpu-ids removed"));
    assert_non_null(strstr(w, "tensor-fusion.ai/component removed"));
    json_object_put(out);
    json_object_put(resp);
    json_object_put(pod);
}

static void opted_out_pod_bringing_gpu_ids_is_stripped_too(void **state)
{
    json_object *pod = forged_pod("false"), *out = NULL;
    json_object *resp = review("CREATE", ATTACKER, NULL, pod, &out);
    assert_true(allowed(resp));
    assert_no_system_keys(out);
    assert_null(lbl(out, "tensor-fusion.ai/component"));
    assert_null(tf_json_str(out, "spec", "schedulerName", NULL)); /* still not taken over */
    json_object_put(out);
    json_object_put(resp);
    json_object_put(pod);
}

static void pod_choosing_its_node_is_denied(void **state)
{
    json_object *pod = forged_pod("true");
    json_object_object_add(tf_json_path(pod, "spec", NULL), "nodeName",
                           json_object_new_string("gpu-node-1"));
    json_object *resp = review("CREATE", ATTACKER, NULL, pod, NULL);
    assert_false(allowed(resp));
    assert_int_equal(json_object_get_int(tf_json_path(resp, "status", "code", NULL)), 403);
    assert_non_null(strstr(message(resp), "spec.nodeName gpu-node-1"));
    json_object_put(resp);
    json_object_put(pod);
}

/* The attack: bring what the webhook injects under its names. The webhook keeps what it
 * finds, so a pod could mount the node's whole region tree (every pod's limits) into its app
 * container, point the region mount at its own volume, or replace the tf-worker sidecar that
 * enforces its hard limits with its own. */
static void pod_bringing_tensor_fusions_volumes_or_containers_is_denied(void **state)
{
    static const char *const specs[] = {
        "\"volumes\":[{\"name\":\"tf-shm\",\"hostPath\":{\"path\":\"/\"}}],"
        "\"containers\":[{\"name\":\"app\",\"image\":\"x\"}]",
        "\"containers\":[{\"name\":\"app\",\"image\":\"x\",\"volumeMounts\":[{\"name\":"
        "\"tf-shm\",\"mountPath\":\"/all-regions\"}]}]",
        "\"containers\":[{\"name\":\"app\",\"image\":\"x\"},{\"name\":\"tf-worker\","
        "\"image\":\"evil/unlimited\"}]",
        "\"initContainers\":[{\"name\":\"tf-preload-app\",\"image\":\"evil\"}],"
        "\"containers\":[{\"name\":\"app\",\"image\":\"x\"}]",
    };
    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        char buf[1024];
        snprintf(buf, sizeof(buf),
                 "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","
                 "\"namespace\":\"ml\",\"labels\":{\"tensor-fusion.ai/enabled\":\"true\"},"
                 "\"annotations\":{\"tensor-fusion.ai/isolation\":\"hard\"}},\"spec\":{%s}}",
                 specs[i]);
        json_object *pod = jparse(buf);
        json_object *resp = review("CREATE", ATTACKER, NULL, pod, NULL);
        if (allowed(resp))
            fail_msg("admitted: %s", buf);
        assert_non_null(strstr(message(resp), "TensorFusion's"));
        json_object_put(resp);
        json_object_put(pod);
    }
}

static void service_account_of_another_namespace_is_not_the_controller(void **state)
{
    json_object *pod = forged_pod("false"), *out = NULL;
    json_object *resp = review("CREATE", "system:serviceaccount:ml:tensor-fusion", NULL, pod, &out);
    assert_no_system_keys(out);
    json_object_put(out);
    json_object_put(resp);
    assert_false(tf_sysguard_is_system(NULL, "tensor-fusion-sys",
                                       "system:serviceaccount:tensor-fusion-sys:tensor-fusionx"));
    assert_false(tf_sysguard_is_system(NULL, "tensor-fusion-sys",
                                       "system:serviceaccount:tensor-fusion-sysx:tensor-fusion"));
    assert_false(tf_sysguard_is_system(NULL, "tensor-fusion-sys", ""));
    assert_true(tf_sysguard_is_system(NULL, "tensor-fusion-sys", CONTROLLER));
    assert_true(tf_sysguard_is_system("ctl", "tensor-fusion-sys", "ctl"));
    assert_false(tf_sysguard_is_system("ctl", "tensor-fusion-sys", CONTROLLER));
    json_object_put(pod);
}

static void controller_writes_system_keys_unchanged(void **state)
{
    json_object *pod = forged_pod("true"), *out = NULL;
    json_object *resp = review("CREATE", CONTROLLER, NULL, pod, &out);
    assert_true(allowed(resp));
    assert_string_equal(ann(out, "tensor-fusion.ai/gpu-ids"), "GPU-victim");
    assert_string_equal(lbl(out, "tensor-fusion.ai/component"), "worker");
    json_object_put(out);
    json_object_put(resp);
    json_object_put(pod);
}

/* A running pod as the webhook and the extender left it. */
static json_object *running_pod(void)
{
    return jparse("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"trainer\","
                  "\"namespace\":\"ml\",\"labels\":{\"tensor-fusion.ai/enabled\":\"true\","
                  "\"tensor-fusion.ai/component\":\"client\",\"team\":\"a\"},\"annotations\":{"
                  "\"tensor-fusion.ai/vram-limit\":\"8Gi\",\"tensor-fusion.ai/gpu-ids\":"
                  "\"GPU-0\"}},\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"app\","
                  "\"image\":\"x\"}]}}");
}

static void update_as(const char *user, void (*edit)(json_object *), bool want_allowed,
                      const char *want_in_msg)
{
    json_object *old = running_pod(), *pod = running_pod();
    edit(pod);
    json_object *resp = review("UPDATE", user, old, pod, NULL);
    if (allowed(resp) != want_allowed)
        fail_msg("%s: allowed=%d (%s)", user, allowed(resp), message(resp) ? message(resp) : "");
    if (want_in_msg && !strstr(message(resp), want_in_msg))
        fail_msg("message lacks %s: %s", want_in_msg, message(resp));
    json_object_put(resp);
    json_object_put(old);
    json_object_put(pod);
}

static void set_ids(json_object *p)
{
    json_object_object_add(tf_json_path(p, "metadata", "annotations", NULL),
                           "tensor-fusion.ai/gpu-ids", json_object_new_string("GPU-0,GPU-1"));
}

static void drop_ids(json_object *p)
{
    json_object_object_del(tf_json_path(p, "metadata", "annotations", NULL),
                           "tensor-fusion.ai/gpu-ids");
}

static void raise_limit(json_object *p)
{
    json_object_object_add(tf_json_path(p, "metadata", "annotations", NULL),
                           "tensor-fusion.ai/vram-limit", json_object_new_string("80Gi"));
}

static void opt_out(json_object *p)
{
    json_object_object_add(tf_json_path(p, "metadata", "labels", NULL), "tensor-fusion.ai/enabled",
                           json_object_new_string("false"));
}

static void relabel(json_object *p)
{
    json_object_object_add(tf_json_path(p, "metadata", "labels", NULL), "team",
                           json_object_new_string("b"));
}

static void user_cannot_add_change_or_remove_gpu_ids(void **state)
{
    update_as(ATTACKER, set_ids, false, "tensor-fusion.ai/gpu-ids");
    update_as(ATTACKER, drop_ids, false, "tensor-fusion.ai/gpu-ids");
    update_as(CONTROLLER, set_ids, true, NULL);
}

static void user_cannot_raise_the_limits_of_a_running_pod(void **state)
{
    update_as(ATTACKER, raise_limit, false, "tensor-fusion.ai/vram-limit");
    update_as(ATTACKER, opt_out, false, "tensor-fusion.ai/enabled");
    update_as(ATTACKER, relabel, true, NULL);       /* the pod's own labels stay the user's */
    update_as(CONTROLLER, raise_limit, true, NULL); /* the autoscaler */
}

static void pod_not_taken_over_keeps_its_own_annotations_editable(void **state)
{
    json_object *old = running_pod(), *pod = running_pod();
    json_object_object_del(tf_json_path(old, "metadata", "labels", NULL),
                           "tensor-fusion.ai/component");
    json_object_object_del(tf_json_path(pod, "metadata", "labels", NULL),
                           "tensor-fusion.ai/component");
    drop_ids(old);
    drop_ids(pod);
    raise_limit(pod);
    json_object *resp = review("UPDATE", ATTACKER, old, pod, NULL);
    assert_true(allowed(resp));
    json_object_put(resp);
    json_object_put(old);
    json_object_put(pod);
}

/* ---- allocation signatures ------------------------------------------------------------------ */

static const char key1[] = "0123456789abcdef0123456789abcdef";
static const char key2[] = "fedcba9876543210fedcba9876543210";

static json_object *signed_pod(const struct tf_allocsig *s, const char *uid)
{
    json_object *pod = running_pod();
    json_object_object_add(tf_json_path(pod, "metadata", NULL), "uid", json_object_new_string(uid));
    json_object *anns = tf_json_path(pod, "metadata", "annotations", NULL);
    json_object_object_add(anns, "tensor-fusion.ai/container-gpus",
                           json_object_new_string("{\"app\":[\"GPU-0\"]}"));
    char sig[TF_ALLOCSIG_LEN];
    assert_int_equal(tf_allocsig_sign(s, "ml", "trainer", uid, "n1", anns, sig), 0);
    assert_int_equal(strlen(sig), TF_ALLOCSIG_LEN - 1);
    json_object_object_add(anns, TF_ANN_ALLOCATION_SIGNATURE, json_object_new_string(sig));
    return pod;
}

static bool verifies_after(const struct tf_allocsig *k, json_object *pod,
                           void (*edit)(json_object *))
{
    json_object *copy = NULL;
    json_object_deep_copy(pod, &copy, NULL);
    edit(copy);
    bool ok = tf_allocsig_verify(k, copy);
    json_object_put(copy);
    return ok;
}

static void set_member(json_object *p, const char *obj, const char *k, const char *v)
{
    json_object *o = tf_json_path(p, obj, NULL);
    if (strcmp(obj, "metadata") == 0 && strncmp(k, "tensor-fusion.ai/", 17) == 0)
        o = tf_json_path(p, "metadata", "annotations", NULL);
    if (v)
        json_object_object_add(o, k, json_object_new_string(v));
    else
        json_object_object_del(o, k);
}

static void other_uid(json_object *p)
{
    set_member(p, "metadata", "uid", "uid-2");
}

static void add_side(json_object *p)
{
    set_member(p, "metadata", "tensor-fusion.ai/gpu-ids-side", "GPU-1");
}

static void other_node(json_object *p)
{
    set_member(p, "spec", "nodeName", "n2");
}

static void no_sig(json_object *p)
{
    set_member(p, "metadata", TF_ANN_ALLOCATION_SIGNATURE, NULL);
}

static void sig_v1(json_object *p)
{
    set_member(p, "metadata", TF_ANN_ALLOCATION_SIGNATURE, "v1:");
}

static void sig_short(json_object *p)
{
    set_member(p, "metadata", TF_ANN_ALLOCATION_SIGNATURE, "v1:00");
}

static void sig_v2(json_object *p)
{
    set_member(p, "metadata", TF_ANN_ALLOCATION_SIGNATURE, "v2:0123");
}

static void forged_or_copied_allocation_signatures_do_not_verify(void **state)
{
    struct tf_allocsig k1, k2;
    assert_int_equal(tf_allocsig_init(&k1, key1, 32), 0);
    assert_int_equal(tf_allocsig_init(&k2, key2, 32), 0);
    assert_int_equal(tf_allocsig_init(&k2, key2, 8), TF_EINVAL); /* too short a key */
    assert_int_equal(tf_allocsig_init(&k2, key2, 32), 0);
    json_object *pod = signed_pod(&k1, "uid-1");
    assert_true(tf_allocsig_verify(&k1, pod));
    assert_false(tf_allocsig_verify(&k2, pod)); /* another controller's key */
    assert_true(tf_allocsig_verify(NULL, pod)); /* tools without a key trust annotations */

    /* copied onto another pod (same name recreated: other uid); the same pod with more GPUs,
     * another container's list, or on another node; no signature, a truncated or garbled one */
    void (*forgeries[])(json_object *) = {other_uid, set_ids, add_side,  other_node,
                                          no_sig,    sig_v1,  sig_short, sig_v2};
    for (size_t i = 0; i < sizeof(forgeries) / sizeof(forgeries[0]); i++)
        assert_false(verifies_after(&k1, pod, forgeries[i]));
    /* other annotations (resources, user keys) are not covered: the autoscaler may change
     * them */
    assert_true(verifies_after(&k1, pod, raise_limit));
    /* a pod without a uid or a node cannot be signed */
    char sig[TF_ALLOCSIG_LEN];
    assert_int_equal(tf_allocsig_sign(&k1, "ml", "p", "", "n1", NULL, sig), TF_EINVAL);
    assert_int_equal(tf_allocsig_sign(&k1, "ml", "p", "u", NULL, NULL, sig), TF_EINVAL);
    json_object_put(pod);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pod_bringing_gpu_ids_is_admitted_without_them),
        cmocka_unit_test(opted_out_pod_bringing_gpu_ids_is_stripped_too),
        cmocka_unit_test(pod_choosing_its_node_is_denied),
        cmocka_unit_test(pod_bringing_tensor_fusions_volumes_or_containers_is_denied),
        cmocka_unit_test(service_account_of_another_namespace_is_not_the_controller),
        cmocka_unit_test(controller_writes_system_keys_unchanged),
        cmocka_unit_test(user_cannot_add_change_or_remove_gpu_ids),
        cmocka_unit_test(user_cannot_raise_the_limits_of_a_running_pod),
        cmocka_unit_test(pod_not_taken_over_keeps_its_own_annotations_editable),
        cmocka_unit_test(forged_or_copied_allocation_signatures_do_not_verify),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
