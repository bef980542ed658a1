/* SPDX-License-Identifier: Apache-2.0
 *
 * Alert rules (controller/alertrules.h): upstream's rule shape read (and its mistakes named),
 * the SQL and text templates, and the firing / resolved bookkeeping over evaluations.
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
#include "controller/alertrules.h"

static const char *IDLE =
    "[{\"name\":\"IdleGPU\",\"query\":\"SELECT node, pool, uuid, avg(compute_percentage) AS "
    "compute, avg(memory_percentage) AS vram FROM tf_gpu_usage WHERE {{ .Conditions }} GROUP BY "
    "node, pool, uuid HAVING compute < 1 AND vram < {{.Threshold}}\",\"threshold\":5,"
    "\"evaluationInterval\":\"10m\",\"consecutiveCount\":2,\"severity\":\"P2\","
    "\"summary\":\"Idle GPU {{ .uuid }} on {{ .node }}\",\"description\":\"compute {{ .compute "
    "}}%, vram {{ .vram }}% (threshold {{ .Threshold }}), {{ .missing }}\","
    "\"alertTargetInstance\":\"{{ .uuid }}\",\"runbookURL\":\"https://example/idle\"}]";

static json_object *J(const char *s)
{
    json_object *o = json_tokener_parse(s);
    assert_non_null(o);
    return o;
}

static void parse_err(const char *json, const char *want)
{
    json_object *a = J(json);
    struct tf_alert_rule *r;
    size_t n;
    char err[256] = "";
    assert_int_equal(tf_alert_rules_parse(a, &r, &n, err, sizeof(err)), TF_EINVAL);
    if (!strstr(err, want))
        fail_msg("error \"%s\" does not say \"%s\"", err, want);
    json_object_put(a);
}

static void upstream_rules_are_read_and_mistakes_named_by_path(void **state)
{
    json_object *a = J(IDLE);
    struct tf_alert_rule *r;
    size_t n;
    char err[256];
    assert_int_equal(tf_alert_rules_parse(a, &r, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 1);
    assert_string_equal(r[0].name, "IdleGPU");
    assert_int_equal(r[0].interval_ms, 600000);
    assert_int_equal(r[0].consecutive, 2);
    assert_true(r[0].threshold == 5);
    tf_alert_rules_free(r, n);
    json_object_put(a);
    parse_err("[{\"name\":\"A\",\"query\":\"x\",\"treshold\":1}]",
              "alertRules[0].treshold: unknown");
    parse_err("[{\"query\":\"x\"}]", "alertRules[0].name: required");
    parse_err("[{\"name\":\"A\",\"query\":\"x\",\"evaluationInterval\":\"1.5s\"}]",
              "whole seconds");
    parse_err("[{\"name\":\"A\",\"query\":\"x\",\"consecutiveCount\":0}]", "consecutiveCount");
    parse_err("[{\"name\":\"A\",\"query\":\"x\"},{\"name\":\"A\",\"query\":\"y\"}]",
              "alertRules[1].name: A is also alertRules[0]");
    parse_err("[{\"name\":\"A\",\"query\":\"{{ range .x }}\"}]", "unsupported template action");
    parse_err("[{\"name\":\"A\",\"query\":\"x\",\"summary\":\"{{ .a | upper }}\"}]",
              "alertRules[0].summary: unsupported");
    parse_err("{\"name\":\"A\"}", "expected a list");
}

static void the_query_gets_the_window_and_the_threshold(void **state)
{
    json_object *a = J(IDLE);
    struct tf_alert_rule *r;
    size_t n;
    char err[256];
    assert_int_equal(tf_alert_rules_parse(a, &r, &n, err, sizeof(err)), 0);
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 1 << 16);
    assert_int_equal(tf_alert_query(&r[0], &b, err, sizeof(err)), 0);
    assert_non_null(strstr(tf_dynbuf_str(&b), "WHERE greptime_timestamp >= now() - '600 "
                                              "seconds'::INTERVAL GROUP BY"));
    assert_non_null(strstr(tf_dynbuf_str(&b), "HAVING compute < 1 AND vram < 5"));
    tf_dynbuf_free(&b);
    tf_alert_rules_free(r, n);
    json_object_put(a);
}

static json_object *find_alert(json_object *arr, const char *uuid)
{
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *al = json_object_array_get_idx(arr, i);
        json_object *l = json_object_object_get(al, "labels");
        if (strcmp(json_object_get_string(json_object_object_get(l, "uuid")), uuid) == 0)
            return al;
    }
    return NULL;
}

static const char *S(json_object *o, const char *a, const char *b)
{
    return json_object_get_string(json_object_object_get(json_object_object_get(o, a), b));
}

static void an_instance_fires_after_consecutive_evaluations_and_resolves_when_gone(void **state)
{
    json_object *a = J(IDLE);
    struct tf_alert_rule *r;
    size_t n;
    char err[256];
    assert_int_equal(tf_alert_rules_parse(a, &r, &n, err, sizeof(err)), 0);
    struct tf_alert_state *st = tf_alert_state_new();
    json_object *names = J("[\"node\",\"pool\",\"uuid\",\"compute\",\"vram\"]");
    json_object *two = J("[[\"n1\",\"p1\",\"GPU-1\",0.5,2],[\"n2\",\"p1\",\"GPU-2\",0,1.25]]");
    json_object *one = J("[[\"n1\",\"p1\",\"GPU-1\",0.25,2]]");
    json_object *none = J("[]");
    int64_t t0 = 1714532400000; /* 2024-05-01T03:00:00Z */
    json_object *out = tf_alert_evaluate(st, &r[0], names, two, t0);
    assert_int_equal(json_object_array_length(out), 0); /* consecutiveCount 2: not yet */
    json_object_put(out);
    out = tf_alert_evaluate(st, &r[0], names, two, t0 + 600000);
    assert_int_equal(json_object_array_length(out), 2);
    json_object *g1 = find_alert(out, "GPU-1");
    assert_non_null(g1);
    assert_string_equal(S(g1, "labels", "alertname"), "IdleGPU");
    assert_string_equal(S(g1, "labels", "severity"), "P2");
    assert_string_equal(S(g1, "labels", "job"), "tensor-fusion");
    assert_string_equal(S(g1, "labels", "instance"), "GPU-1");
    assert_string_equal(S(g1, "labels", "node"), "n1");
    assert_string_equal(S(g1, "labels", "pool"), "p1");
    assert_null(json_object_object_get(json_object_object_get(g1, "labels"), "compute"));
    assert_string_equal(S(g1, "annotations", "summary"), "Idle GPU GPU-1 on n1");
    assert_string_equal(S(g1, "annotations", "description"),
                        "compute 0.5%, vram 2% (threshold 5), <no value>");
    assert_string_equal(S(g1, "annotations", "runbook_url"), "https://example/idle");
    assert_string_equal(json_object_get_string(json_object_object_get(g1, "startsAt")),
                        "2024-05-01T03:10:00Z");
    assert_string_equal(json_object_get_string(json_object_object_get(g1, "endsAt")),
                        "2024-05-01T03:50:00Z"); /* + 4 intervals */
    assert_int_equal(tf_alert_state_firing(st), 2);
    json_object_put(out);
    /* GPU-2 is busy again: resolved once, with endsAt now; GPU-1 keeps its startsAt. */
    out = tf_alert_evaluate(st, &r[0], names, one, t0 + 1200000);
    assert_int_equal(json_object_array_length(out), 2);
    json_object *g2 = find_alert(out, "GPU-2");
    assert_string_equal(json_object_get_string(json_object_object_get(g2, "endsAt")),
                        "2024-05-01T03:20:00Z");
    g1 = find_alert(out, "GPU-1");
    assert_string_equal(json_object_get_string(json_object_object_get(g1, "startsAt")),
                        "2024-05-01T03:10:00Z");
    assert_string_equal(S(g1, "annotations", "description"),
                        "compute 0.25%, vram 2% (threshold 5), <no value>");
    assert_int_equal(tf_alert_state_firing(st), 1);
    json_object_put(out);
    out = tf_alert_evaluate(st, &r[0], names, none, t0 + 1800000);
    assert_int_equal(json_object_array_length(out), 1); /* GPU-1 resolved */
    json_object_put(out);
    out = tf_alert_evaluate(st, &r[0], names, none, t0 + 2400000);
    assert_int_equal(json_object_array_length(out), 0);
    json_object_put(out);
    /* An instance seen once, then absent, is forgotten without a resolved alert. */
    out = tf_alert_evaluate(st, &r[0], names, one, t0 + 3000000);
    json_object_put(out);
    out = tf_alert_evaluate(st, &r[0], names, none, t0 + 3600000);
    assert_int_equal(json_object_array_length(out), 0);
    json_object_put(out);
    json_object_put(names);
    json_object_put(two);
    json_object_put(one);
    json_object_put(none);
    tf_alert_state_free(st);
    tf_alert_rules_free(r, n);
    json_object_put(a);
}

static void templates_print_values_as_go_does(void **state)
{
    json_object *d = J("{\"a\":0.1,\"b\":97,\"c\":12.345678,\"d\":1e21,\"e\":true,\"f\":null,"
                       "\"g\":\"x y\",\"h\":3.0}");
    struct tf_dynbuf b;
    char err[128];
    tf_dynbuf_init(&b, 4096);
    assert_int_equal(tf_alert_render("{{.a}} {{.b}} {{ .c }} {{.d}} {{.e}} {{.f}} {{.g}} {{.h}} "
                                     "{{.zz}}",
                                     d, &b, err, sizeof(err)),
                     0);
    assert_string_equal(tf_dynbuf_str(&b), "0.1 97 12.345678 1e+21 true <no value> x y 3 "
                                           "<no value>");
    tf_dynbuf_reset(&b);
    assert_int_equal(tf_alert_render("{{ .a", d, &b, err, sizeof(err)), TF_EINVAL);
    tf_dynbuf_free(&b);
    json_object_put(d);
}

/* Two rows are one instance only when their labels are the same: no value passes for another
 * label, and every label counts however many there are. */
static void rows_with_other_labels_are_other_instances(void **state)
{
    json_object *a = J("[{\"name\":\"R\",\"query\":\"SELECT 1\"}]");
    struct tf_alert_rule *r;
    size_t n;
    char err[256];
    assert_int_equal(tf_alert_rules_parse(a, &r, &n, err, sizeof(err)), 0);
    struct tf_alert_state *st = tf_alert_state_new();
    /* aa="1\nab=2" with no ab label, against aa="1", ab="2". */
    json_object *names = J("[\"aa\",\"ab\"]");
    json_object *rows = J("[[\"1\\nab=2\",null],[\"1\",\"2\"],[\"1\",\"2\"]]");
    json_object *out = tf_alert_evaluate(st, &r[0], names, rows, 1714532400000);
    assert_int_equal(json_object_array_length(out), 2); /* the third row is the second again */
    json_object_put(out);
    json_object_put(names);
    json_object_put(rows);
    /* 70 label columns, two rows that differ in the last only. */
    tf_alert_state_reset(st);
    names = json_object_new_array();
    json_object *r1 = json_object_new_array(), *r2 = json_object_new_array();
    for (int i = 0; i < 70; i++) {
        char col[16];
        snprintf(col, sizeof(col), "l%02d", i);
        json_object_array_add(names, json_object_new_string(col));
        json_object_array_add(r1, json_object_new_string("v"));
        json_object_array_add(r2, json_object_new_string(i == 69 ? "w" : "v"));
    }
    rows = json_object_new_array();
    json_object_array_add(rows, r1);
    json_object_array_add(rows, r2);
    out = tf_alert_evaluate(st, &r[0], names, rows, 1714532400000);
    assert_int_equal(json_object_array_length(out), 2);
    assert_int_equal(tf_alert_state_firing(st), 2);
    json_object_put(out);
    json_object_put(names);
    json_object_put(rows);
    tf_alert_state_free(st);
    tf_alert_rules_free(r, n);
    json_object_put(a);
}

/* A key is looked up whole, however long. */
static void a_long_template_key_is_looked_up_whole(void **state)
{
    char key[201], tmpl[220];
    memset(key, 'k', 200);
    key[200] = '\0';
    snprintf(tmpl, sizeof(tmpl), "{{ .%s }}", key);
    json_object *d = json_object_new_object();
    json_object_object_add(d, key, json_object_new_string("whole"));
    key[127] = '\0';
    json_object_object_add(d, key, json_object_new_string("cut"));
    struct tf_dynbuf b;
    char err[128];
    tf_dynbuf_init(&b, 4096);
    assert_int_equal(tf_alert_render(tmpl, d, &b, err, sizeof(err)), 0);
    assert_string_equal(tf_dynbuf_str(&b), "whole");
    tf_dynbuf_free(&b);
    json_object_put(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(upstream_rules_are_read_and_mistakes_named_by_path),
        cmocka_unit_test(the_query_gets_the_window_and_the_threshold),
        cmocka_unit_test(an_instance_fires_after_consecutive_evaluations_and_resolves_when_gone),
        cmocka_unit_test(templates_print_values_as_go_does),
        cmocka_unit_test(rows_with_other_labels_are_other_instances),
        cmocka_unit_test(a_long_template_key_is_looked_up_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
