/* SPDX-License-Identifier: Apache-2.0
 *
 * YAML/JSON manifests as users write them, read into json-c trees.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/yamljson.h"

static json_object *parse_ok(const char *y)
{
    json_object *docs = NULL;
    char err[256] = "";
    int rc = tf_manifest_parse(y, strlen(y), &docs, err, sizeof(err));
    if (rc)
        fail_msg("parse failed: %s", err);
    return docs;
}

static void seed_deployment_annotations_stay_strings(void **state)
{
    json_object *docs = parse_ok("kind: Deployment\n"
                                 "apiVersion: apps/v1\n"
                                 "spec:\n"
                                 "  template:\n"
                                 "    metadata:\n"
                                 "      labels:\n"
                                 "        tensor-fusion.ai/enabled: \"true\"\n"
                                 "      annotations:\n"
                                 "        tensor-fusion.ai/tflops-limit: '20'\n"
                                 "        tensor-fusion.ai/vram-limit: 4Gi\n"
                                 "        tensor-fusion.ai/gpu-count: '1' # comment\n");
    assert_int_equal(json_object_array_length(docs), 1);
    json_object *d = json_object_array_get_idx(docs, 0);
    assert_string_equal(tf_json_str(d, "kind", NULL), "Deployment");
    json_object *ann = tf_json_path(d, "spec", "template", "metadata", "annotations", NULL);
    assert_non_null(ann);
    assert_string_equal(tf_json_str(ann, "tensor-fusion.ai/tflops-limit", NULL), "20");
    assert_string_equal(tf_json_str(ann, "tensor-fusion.ai/vram-limit", NULL), "4Gi");
    assert_string_equal(tf_json_str(ann, "tensor-fusion.ai/gpu-count", NULL), "1");
    assert_string_equal(
        tf_json_str(d, "spec", "template", "metadata", "labels", "tensor-fusion.ai/enabled", NULL),
        "true");
    assert_null(tf_json_str(d, "spec", "missing", NULL));
    json_object_put(docs);
}

static void plain_scalars_get_core_schema_types(void **state)
{
    json_object *docs = parse_ok("a: 1\nb: -7\nc: 1.5\nd: true\ne: ~\nf: null\ng: 4Gi\n"
                                 "h: 1e9\ni: \"1\"\nj: 99999999999999999999\nk: False\nl:\n"
                                 "m: 1.50\n");
    json_object *d = json_object_array_get_idx(docs, 0);
    json_object *v;
    assert_true(json_object_is_type(tf_json_path(d, "a", NULL), json_type_int));
    assert_int_equal(json_object_get_int64(tf_json_path(d, "b", NULL)), -7);
    assert_true(json_object_is_type(tf_json_path(d, "c", NULL), json_type_double));
    assert_true(json_object_get_boolean(tf_json_path(d, "d", NULL)));
    assert_true(json_object_object_get_ex(d, "e", &v) && v == NULL);
    assert_true(json_object_object_get_ex(d, "f", &v) && v == NULL);
    assert_true(json_object_object_get_ex(d, "l", &v) && v == NULL);
    assert_string_equal(tf_json_str(d, "g", NULL), "4Gi");
    assert_true(json_object_is_type(tf_json_path(d, "h", NULL), json_type_double));
    assert_string_equal(tf_json_str(d, "i", NULL), "1");
    assert_string_equal(tf_json_str(d, "j", NULL), "99999999999999999999");
    assert_false(json_object_get_boolean(tf_json_path(d, "k", NULL)));
    /* A float keeps its source text when printed back. */
    assert_string_equal(json_object_get_string(tf_json_path(d, "m", NULL)), "1.50");
    json_object_put(docs);
}

static void multi_document_streams_and_lists_become_one_array(void **state)
{
    json_object *docs = parse_ok("kind: Pod\nmetadata: {name: a}\n---\n---\nkind: Pod\n"
                                 "metadata: {name: b}\n---\nkind: List\nitems:\n"
                                 "- {kind: Pod, metadata: {name: c}}\n"
                                 "- {kind: Pod, metadata: {name: d}}\n");
    assert_int_equal(json_object_array_length(docs), 4);
    assert_string_equal(tf_json_str(json_object_array_get_idx(docs, 3), "metadata", "name", NULL),
                        "d");
    json_object_put(docs);
    /* JSON input, as kubectl -o json prints it. */
    docs = parse_ok("{\"kind\": \"Pod\", \"metadata\": {\"name\": \"p\", \"annotations\": "
                    "{\"tensor-fusion.ai/gpu-count\": \"2\"}}}");
    assert_string_equal(tf_json_str(json_object_array_get_idx(docs, 0), "metadata", "annotations",
                                    "tensor-fusion.ai/gpu-count", NULL),
                        "2");
    json_object_put(docs);
    docs = parse_ok("[{\"kind\": \"Pod\"}, {\"kind\": \"Job\"}]");
    assert_int_equal(json_object_array_length(docs), 2);
    json_object_put(docs);
}

static void anchors_and_aliases_are_copied(void **state)
{
    json_object *docs = parse_ok("base: &b {vram: 3Gi, tflops: '5'}\nreq: *b\nname: &n x\n"
                                 "other: *n\n");
    json_object *d = json_object_array_get_idx(docs, 0);
    assert_string_equal(tf_json_str(d, "req", "vram", NULL), "3Gi");
    assert_string_equal(tf_json_str(d, "other", NULL), "x");
    json_object_put(docs);
}

static void broken_yaml_reports_line_and_column(void **state)
{
    json_object *docs = (json_object *)1;
    char err[256] = "";
    const char *bad = "kind: Pod\nmetadata:\n  name: [unclosed\n";
    assert_int_equal(tf_manifest_parse(bad, strlen(bad), &docs, err, sizeof(err)), TF_EPARSE);
    assert_null(docs);
    assert_non_null(strstr(err, "line "));
    const char *alias = "a: *nope\n";
    assert_int_equal(tf_manifest_parse(alias, strlen(alias), &docs, err, sizeof(err)), TF_EPARSE);
    assert_non_null(strstr(err, "alias"));
}

static void billion_laughs_is_bounded(void **state)
{
    char buf[4096];
    size_t n = (size_t)snprintf(buf, sizeof(buf), "a: &a [x,x,x,x,x,x,x,x,x,x]\n");
    char prev = 'a';
    for (char c = 'b'; c <= 'k'; c++) {
        n += (size_t)snprintf(buf + n, sizeof(buf) - n,
                              "%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,"
                              "*%c,*%c,*%c]\n",
                              c, c, prev, prev, prev, prev, prev, prev, prev, prev, prev, prev);
        prev = c;
    }
    json_object *docs;
    char err[256] = "";
    assert_int_equal(tf_manifest_parse(buf, n, &docs, err, sizeof(err)), TF_ERANGE);
    assert_non_null(strstr(err, "too large"));
}

static void deep_nesting_is_refused(void **state)
{
    char buf[1024];
    memset(buf, '[', 300);
    buf[300] = 0;
    json_object *docs;
    char err[256] = "";
    assert_int_equal(tf_manifest_parse(buf, 300, &docs, err, sizeof(err)), TF_ERANGE);
    assert_non_null(strstr(err, "too deep"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_deployment_annotations_stay_strings),
        cmocka_unit_test(plain_scalars_get_core_schema_types),
        cmocka_unit_test(multi_document_streams_and_lists_become_one_array),
        cmocka_unit_test(anchors_and_aliases_are_copied),
        cmocka_unit_test(broken_yaml_reports_line_and_column),
        cmocka_unit_test(billion_laughs_is_bounded),
        cmocka_unit_test(deep_nesting_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
