/* SPDX-License-Identifier: Apache-2.0
 *
 * Wire shapes the API server and kube-scheduler depend on: JSONPatch generation (checked by
 * applying it with python3-jsonpatch), AdmissionReview v1 in and out, and the extender's
 * ExtenderArgs / ExtenderFilterResult / HostPriorityList / ExtenderBindingArgs.
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
#include "controller/admission.h"
#include "controller/base64.h"
#include "controller/extender_codec.h"
#include "controller/jsonpatch.h"
#include "harness.h"

static void check_patch_turns_a_into_b(const char *a_text, const char *b_text,
                                       const char *expect_ops)
{
    json_object *a = jparse(a_text), *b = jparse(b_text);
    struct tf_dynbuf text;
    tf_dynbuf_init(&text, 1 << 20);
    size_t nops = 0;
    assert_int_equal(tf_jsonpatch_diff(a, b, &text, &nops), 0);
    json_object *ops = jparse(tf_dynbuf_str(&text));
    tf_dynbuf_free(&text);
    assert_int_equal(nops, json_object_array_length(ops));
    if (expect_ops) {
        json_object *want = jparse(expect_ops);
        if (!json_object_equal(want, ops))
            fail_msg("ops %s, want %s", json_object_to_json_string(ops), expect_ops);
        json_object_put(want);
    }
    json_object *applied = py_apply_patch(a, ops);
    if (!applied)
        fail_msg("python3-jsonpatch could not apply %s", json_object_to_json_string(ops));
    if (!json_object_equal(applied, b))
        fail_msg("patched %s, want %s", json_object_to_json_string(applied), b_text);
    json_object_put(applied);
    json_object_put(ops);
    json_object_put(a);
    json_object_put(b);
}

static void pod_without_annotations_gets_the_whole_map_added(void **state)
{
    check_patch_turns_a_into_b(
        "{\"metadata\":{\"name\":\"p\"}}",
        "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"tensor-fusion.ai/gpu-ids\":\"g\"}}}",
        "[{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":"
        "{\"tensor-fusion.ai/gpu-ids\":\"g\"}}]");
}

static void annotation_keys_escape_slash_and_tilde(void **state)
{
    check_patch_turns_a_into_b(
        "{\"metadata\":{\"annotations\":{\"a\":\"1\"}}}",
        "{\"metadata\":{\"annotations\":{\"a\":\"1\",\"tensor-fusion.ai/qos\":\"high\","
        "\"x~y\":\"z\"}}}",
        "[{\"op\":\"add\",\"path\":\"/metadata/annotations/tensor-fusion.ai~1qos\",\"value\":"
        "\"high\"},{\"op\":\"add\",\"path\":\"/metadata/annotations/x~0y\",\"value\":\"z\"}]");
}

static void container_env_and_volumes_grow_by_appending(void **state)
{
    check_patch_turns_a_into_b(
        "{\"spec\":{\"containers\":[{\"name\":\"app\",\"env\":[{\"name\":\"A\",\"value\":\"1\"}]},"
        "{\"name\":\"side\"}],\"schedulerName\":\"default-scheduler\"}}",
        "{\"spec\":{\"containers\":[{\"name\":\"app\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
        "{\"name\":\"TF_SHM_PATH\",\"value\":\"/shm\"}]},{\"name\":\"side\",\"env\":[{\"name\":"
        "\"B\",\"value\":\"2\"}]}],\"schedulerName\":\"tensor-fusion-scheduler\",\"volumes\":[{"
        "\"name\":\"tf-shm\",\"hostPath\":{\"path\":\"/run/tensor-fusion/shm\"}}],"
        "\"initContainers\":[{\"name\":\"tf-init\"}]}}",
        NULL);
}

static void removed_limits_and_replaced_arrays_apply(void **state)
{
    check_patch_turns_a_into_b(
        "{\"spec\":{\"containers\":[{\"name\":\"app\",\"resources\":{\"limits\":{"
        "\"nvidia.com/gpu\":\"1\",\"cpu\":\"2\"}}}],\"tolerations\":[1,2,3]}}",
        "{\"spec\":{\"containers\":[{\"name\":\"app\",\"resources\":{\"limits\":{\"cpu\":\"2\"}}}"
        "],\"tolerations\":[3]}}",
        "[{\"op\":\"remove\",\"path\":\"/spec/containers/0/resources/limits/nvidia.com~1gpu\"},"
        "{\"op\":\"replace\",\"path\":\"/spec/tolerations\",\"value\":[3]}]");
    check_patch_turns_a_into_b("{\"a\":1}", "{\"a\":1}", "[]");
    check_patch_turns_a_into_b("{\"a\":{\"b\":null}}", "{\"a\":{\"b\":[1]}}", NULL);
}

static const char review[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"705ab4f5-6393-11e8-b7cc-42010a800002\",\"kind\":{\"group\":\"\",\"version\":"
    "\"v1\",\"kind\":\"Pod\"},\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":"
    "\"pods\"},\"namespace\":\"ml\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":"
    "\"admin\"},\"object\":{\"metadata\":{\"generateName\":\"web-\"}},\"oldObject\":null,"
    "\"dryRun\":false}}";

static void patch_strings_are_escaped_as_json_c_writes_them(void **state)
{
    /* Quotes, backslashes, control bytes, an embedded NUL, '/' and UTF-8, in keys and values. */
    static const char raw[] = "a\"b\\c/d\be\ff\ng\rh\ti\x01j\x1fk\0l \xc3\xa9";
    json_object *s = json_object_new_string_len(raw, (int)sizeof(raw) - 1);
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 4096);
    assert_int_equal(tf_dynbuf_add_json_str(&b, raw, sizeof(raw) - 1), 0);
    assert_string_equal(tf_dynbuf_str(&b),
                        json_object_to_json_string_ext(s, JSON_C_TO_STRING_NOSLASHESCAPE));
    tf_dynbuf_free(&b);
    json_object *a = jparse("{\"k\":\"old\"}"), *bo = jparse("{\"k\":\"old\"}");
    json_object_object_add(bo, "k", json_object_get(s));
    json_object_object_add(bo, "we\"ird/~key\n", json_object_get(s));
    char at[4096], bt[4096];
    snprintf(at, sizeof(at), "%s", json_object_to_json_string(a));
    snprintf(bt, sizeof(bt), "%s", json_object_to_json_string(bo));
    check_patch_turns_a_into_b(at, bt, NULL);
    json_object_put(a);
    json_object_put(bo);
    json_object_put(s);
}

static void patch_values_are_written_as_json_c_writes_them(void **state)
{
    const char *v = "{\"i\":-5,\"u\":18446744073709551615,\"z\":0,\"d\":1.50,\"e\":1e3,\"t\":true,"
                    "\"f\":false,\"n\":null,\"a\":[1,\"x\",{},[],null],\"o\":{},\"s\":\"q\\\"/\"}";
    json_object *a = jparse("{}"), *b = jparse("{}"), *val = jparse(v);
    json_object_object_add(b, "v", val);
    struct tf_dynbuf text;
    tf_dynbuf_init(&text, 1 << 20);
    assert_int_equal(tf_jsonpatch_diff(a, b, &text, NULL), 0);
    char want[1024];
    snprintf(want, sizeof(want), "[{\"op\":\"add\",\"path\":\"/v\",\"value\":%s}]",
             json_object_to_json_string_ext(val, JSON_C_TO_STRING_PLAIN |
                                                     JSON_C_TO_STRING_NOSLASHESCAPE));
    assert_string_equal(tf_dynbuf_str(&text), want);
    tf_dynbuf_free(&text);
    json_object_put(a);
    json_object_put(b);
}

static void admission_review_from_the_apiserver_decodes(void **state)
{
    struct tf_admission_req r;
    char err[256];
    assert_int_equal(tf_admission_decode(review, strlen(review), &r, err, sizeof(err)), 0);
    assert_string_equal(r.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_string_equal(r.operation, "CREATE");
    assert_string_equal(r.kind, "Pod");
    assert_string_equal(r.namespace, "ml");
    assert_string_equal(r.name, "");
    assert_non_null(r.object);
    assert_false(r.dry_run);
    tf_admission_req_free(&r);
}

static void malformed_reviews_are_rejected_naming_the_field(void **state)
{
    struct tf_admission_req r;
    char err[256];
    static const struct {
        const char *body, *needle;
    } cases[] = {
        {"{", "invalid JSON"},
        {"{\"apiVersion\":\"admission.k8s.io/v1beta1\",\"kind\":\"AdmissionReview\"}",
         "apiVersion must be admission.k8s.io/v1"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\"}", "kind must be"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}",
         "request is missing"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
         "\"operation\":\"CREATE\"}}",
         "request.uid"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
         "\"uid\":\"u\",\"operation\":\"CREATE\",\"kind\":{\"kind\":\"Pod\"},\"object\":[]}}",
         "request.object must be an object"},
        {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{}} x",
         "trailing data"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = tf_admission_decode(cases[i].body, strlen(cases[i].body), &r, err, sizeof(err));
        assert_true(rc == TF_EINVAL || rc == TF_EPARSE);
        if (!strstr(err, cases[i].needle))
            fail_msg("case %zu: %s lacks %s", i, err, cases[i].needle);
        assert_null(r.root);
    }
}

static void admission_response_carries_uid_and_base64_jsonpatch(void **state)
{
    const char *text = "[{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":{}}]";
    json_object *ops = jparse(text);
    char *out = tf_admission_encode("u-1", true, text, 0, NULL, NULL);
    json_object *o = jparse(out);
    assert_string_equal(tf_json_str(o, "apiVersion", NULL), "admission.k8s.io/v1");
    assert_string_equal(tf_json_str(o, "response", "uid", NULL), "u-1");
    assert_true(json_object_get_boolean(tf_json_path(o, "response", "allowed", NULL)));
    assert_string_equal(tf_json_str(o, "response", "patchType", NULL), "JSONPatch");
    char *dec = tf_base64_decode(tf_json_str(o, "response", "patch", NULL), NULL);
    json_object *back = jparse(dec);
    assert_true(json_object_equal(back, ops));
    json_object_put(back);
    free(dec);
    json_object_put(o);
    free(out);
    out = tf_admission_encode("u-2", false, text, 400,
                              "tensor-fusion.ai/vram-limit: \"4Gb\" is not a valid quantity", NULL);
    o = jparse(out);
    assert_false(json_object_get_boolean(tf_json_path(o, "response", "allowed", NULL)));
    assert_null(tf_json_path(o, "response", "patch", NULL));
    assert_int_equal(json_object_get_int(tf_json_path(o, "response", "status", "code", NULL)), 400);
    assert_non_null(strstr(tf_json_str(o, "response", "status", "message", NULL), "4Gb"));
    json_object_put(o);
    free(out);
    json_object_put(ops);
    json_object *warn = jparse("[\"w \\\"1\\\"\",\"w2\"]");
    out = tf_admission_encode("u\"3\n", false, NULL, 0, "bad \\ \"value\"\n", warn);
    o = jparse(out);
    assert_string_equal(tf_json_str(o, "response", "uid", NULL), "u\"3\n");
    assert_int_equal(json_object_get_int(tf_json_path(o, "response", "status", "code", NULL)), 400);
    assert_string_equal(tf_json_str(o, "response", "status", "message", NULL),
                        "bad \\ \"value\"\n");
    assert_true(json_object_equal(tf_json_path(o, "response", "warnings", NULL), warn));
    json_object_put(o);
    free(out);
    json_object_put(warn);
}

static void scheduler_args_with_node_names_round_trip(void **state)
{
    const char *body = "{\"Pod\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\"}},"
                       "\"Nodes\":null,\"NodeNames\":[\"n1\",\"n2\",\"n3\"]}";
    struct tf_ext_args a;
    char err[256];
    assert_int_equal(tf_ext_decode_args(body, strlen(body), &a, err, sizeof(err)), 0);
    assert_int_equal(a.n_nodes, 3);
    assert_false(a.node_list);
    assert_string_equal(a.node_names[2], "n3");
    const char *reasons[] = {NULL, "insufficient vram: need 4Gi, have 2Gi", "gpu phase Pending"};
    const bool unres[] = {false, false, true};
    char *out = tf_ext_encode_filter(&a, reasons, unres, NULL);
    json_object *o = jparse(out);
    json_object *want = jparse(
        "{\"Nodes\":null,\"NodeNames\":[\"n1\"],\"FailedNodes\":{\"n2\":\"insufficient vram: "
        "need 4Gi, have 2Gi\"},\"FailedAndUnresolvableNodes\":{\"n3\":\"gpu phase Pending\"},"
        "\"Error\":\"\"}");
    assert_true(json_object_equal(o, want));
    json_object_put(o);
    json_object_put(want);
    free(out);
    int scores[] = {7, 42, -1};
    out = tf_ext_encode_priorities(&a, scores);
    assert_string_equal(out, "[{\"Host\":\"n1\",\"Score\":7},{\"Host\":\"n2\",\"Score\":10}]");
    free(out);
    /* Hosts scoring 0 are left out (kube-scheduler counts a missing host as 0): the first
     * listed one takes no comma, and nothing to list is an empty list. */
    int later[] = {0, 3, 0};
    out = tf_ext_encode_priorities(&a, later);
    assert_string_equal(out, "[{\"Host\":\"n2\",\"Score\":3}]");
    free(out);
    int none[] = {0, 0, -4};
    out = tf_ext_encode_priorities(&a, none);
    assert_string_equal(out, "[]");
    free(out);
    tf_ext_args_free(&a);
}

static void scheduler_args_with_full_node_list_return_nodes(void **state)
{
    const char *body = "{\"Pod\":{},\"Nodes\":{\"items\":[{\"metadata\":{\"name\":\"a\"}},"
                       "{\"metadata\":{\"name\":\"b\"}}]}}";
    struct tf_ext_args a;
    char err[256];
    assert_int_equal(tf_ext_decode_args(body, strlen(body), &a, err, sizeof(err)), 0);
    assert_true(a.node_list);
    const char *reasons[] = {"no gpu", NULL};
    char *out = tf_ext_encode_filter(&a, reasons, NULL, NULL);
    json_object *o = jparse(out);
    assert_string_equal(
        tf_json_str(json_object_array_get_idx(tf_json_path(o, "Nodes", "items", NULL), 0),
                    "metadata", "name", NULL),
        "b");
    assert_string_equal(tf_json_str(o, "FailedNodes", "a", NULL), "no gpu");
    json_object_put(o);
    free(out);
    tf_ext_args_free(&a);
    const char *bad[] = {"{\"NodeNames\":[]}", "{\"Pod\":{}}", "{\"Pod\":{},\"NodeNames\":[1]}",
                         "[]", "{\"Pod\":{},\"Nodes\":{\"items\":[{}]}}"};
    const char *needle[] = {"Pod is missing", "neither NodeNames nor Nodes", "NodeNames[0]",
                            "not a JSON object", "Nodes.items[0].metadata.name"};
    for (int i = 0; i < 5; i++) {
        assert_true(tf_ext_decode_args(bad[i], strlen(bad[i]), &a, err, sizeof(err)) < 0);
        if (!strstr(err, needle[i]))
            fail_msg("case %d: %s", i, err);
    }
}

static void binding_args_decode_and_result_encodes(void **state)
{
    const char *body = "{\"PodName\":\"p\",\"PodNamespace\":\"ml\",\"PodUID\":\"u\",\"Node\":"
                       "\"gpu-1\"}";
    struct tf_ext_binding b;
    char err[256];
    assert_int_equal(tf_ext_decode_binding(body, strlen(body), &b, err, sizeof(err)), 0);
    assert_string_equal(b.pod_name, "p");
    assert_string_equal(b.pod_namespace, "ml");
    assert_string_equal(b.pod_uid, "u");
    assert_string_equal(b.node, "gpu-1");
    tf_ext_binding_free(&b);
    const char *bad = "{\"PodName\":\"p\",\"PodNamespace\":\"ml\",\"PodUID\":\"u\"}";
    assert_int_equal(tf_ext_decode_binding(bad, strlen(bad), &b, err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "Node"));
    char *out = tf_ext_encode_binding_result(NULL);
    assert_string_equal(out, "{\"Error\":\"\"}");
    free(out);
    out = tf_ext_encode_binding_result("gpu-0 no longer has 4Gi free");
    assert_string_equal(out, "{\"Error\":\"gpu-0 no longer has 4Gi free\"}");
    free(out);
}

static void base64_matches_the_rfc_4648_vectors_and_rejects_garbage(void **state)
{
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const enc[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                      "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        char *e = tf_base64_encode(plain[i], strlen(plain[i]));
        assert_string_equal(e, enc[i]);
        size_t n = 0;
        char *d = tf_base64_decode(e, &n);
        assert_int_equal(n, strlen(plain[i]));
        assert_memory_equal(d, plain[i], n);
        free(e);
        free(d);
    }
    char *d = tf_base64_decode("Zm9v\nYmFy\n", NULL); /* PEM-style line breaks */
    assert_string_equal(d, "foobar");
    free(d);
    assert_null(tf_base64_decode("Zm9v!", NULL));
    assert_null(tf_base64_decode("Zg=a", NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pod_without_annotations_gets_the_whole_map_added),
        cmocka_unit_test(annotation_keys_escape_slash_and_tilde),
        cmocka_unit_test(container_env_and_volumes_grow_by_appending),
        cmocka_unit_test(removed_limits_and_replaced_arrays_apply),
        cmocka_unit_test(patch_strings_are_escaped_as_json_c_writes_them),
        cmocka_unit_test(patch_values_are_written_as_json_c_writes_them),
        cmocka_unit_test(admission_review_from_the_apiserver_decodes),
        cmocka_unit_test(malformed_reviews_are_rejected_naming_the_field),
        cmocka_unit_test(admission_response_carries_uid_and_base64_jsonpatch),
        cmocka_unit_test(scheduler_args_with_node_names_round_trip),
        cmocka_unit_test(scheduler_args_with_full_node_list_return_nodes),
        cmocka_unit_test(binding_args_decode_and_result_encodes),
        cmocka_unit_test(base64_matches_the_rfc_4648_vectors_and_rejects_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
