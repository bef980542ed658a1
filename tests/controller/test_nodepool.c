/* SPDX-License-Identifier: Apache-2.0
 *
 * Pools by selector (controller/nodepool.h) and NodeSelector matching (core/selector.h): which
 * pool a GPU node belongs to, conflicts, fallbacks, and the node's isolation mode under the
 * pool's isolationModeRules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/yamljson.h"
#include "controller/nodepool.h"
#include "core/selector.h"

static json_object *yaml(const char *text)
{
    json_object *docs = NULL;
    char err[256];
    if (tf_yaml_to_json(text, strlen(text), &docs, err, sizeof(err)))
        fail_msg("yaml: %s", err);
    json_object *o = json_object_get(json_object_array_get_idx(docs, 0));
    json_object_put(docs);
    return o;
}

static json_object *node(const char *name, const char *labels)
{
    char buf[1024];
    snprintf(buf, sizeof(buf), "{metadata: {name: %s, labels: %s}}", name, labels);
    return yaml(buf);
}

/* Two pools selecting by GPU model, a catch-all that overlaps the first, and one without a
 * selector. */
static const char *POOLS =
    "- metadata: {name: train}\n"
    "  spec:\n"
    "    nodeManagerConfig:\n"
    "      defaultIsolationMode: hard\n"
    "      nodeSelector: {nodeSelectorTerms: [{matchExpressions: [{key: gpu, operator: In, "
    "values: [a100, h100]}]}]}\n"
    "      isolationModeRules:\n"
    "      - {mode: partitioned, selector: {matchLabels: {mig: 'on'}}}\n"
    "      - {isolation: soft, nodeSelector: {matchLabels: {shared-dev: 'yes'}}}\n"
    "- metadata: {name: infer}\n"
    "  spec:\n"
    "    nodeManagerConfig:\n"
    "      nodeSelector: {nodeSelectorTerms: [{matchExpressions: [{key: gpu, operator: In, "
    "values: [l4]}]}]}\n"
    "- metadata: {name: any-h100}\n"
    "  spec:\n"
    "    nodeManagerConfig:\n"
    "      multiVendorNodeSelector:\n"
    "        NVIDIA: {nodeSelectorTerms: [{matchExpressions: [{key: gpu, operator: In, values: "
    "[h100]}]}]}\n"
    "      nodeSelector: {nodeSelectorTerms: [{matchExpressions: [{key: gpu, operator: "
    "Exists}]}]}\n"
    "- metadata: {name: manual}\n"
    "  spec: {nodeManagerConfig: {defaultIsolationMode: soft}}\n";

static void resolve(json_object *pools, json_object *n, const char *carried,
                    struct tf_nodepool *out)
{
    tf_nodepool_resolve(pools, tf_json_str(n, "metadata", "name", NULL), n, carried, "default",
                        out);
}

static void a_node_joins_the_pool_whose_selector_matches_with_the_pools_mode(void **state)
{
    (void)state;
    json_object *pools = yaml(POOLS);
    struct tf_nodepool np;
    json_object *n = node("a1", "{gpu: a100}");
    resolve(pools, n, NULL, &np);
    assert_string_equal(np.pool, "train");
    assert_int_equal(np.source, TF_NODEPOOL_SELECTOR);
    assert_int_equal(np.nmatched, 1);
    assert_int_equal(np.mode, TF_ISOLATION_HARD); /* the pool's defaultIsolationMode */
    assert_int_equal(np.rule, -1);
    json_object_put(n);
    /* isolationModeRules: first match, upstream's {mode, selector} and our former spelling. */
    n = node("a2", "{gpu: a100, mig: 'on', shared-dev: 'yes'}");
    resolve(pools, n, NULL, &np);
    assert_int_equal(np.mode, TF_ISOLATION_PARTITIONED);
    assert_int_equal(np.rule, 0);
    json_object_put(n);
    n = node("a3", "{gpu: a100, shared-dev: 'yes'}");
    resolve(pools, n, "infer", &np); /* a stale label does not matter */
    assert_string_equal(np.pool, "train");
    assert_int_equal(np.mode, TF_ISOLATION_SOFT);
    assert_int_equal(np.rule, 1);
    json_object_put(n);
    /* A pool without defaultIsolationMode: soft, as upstream. */
    n = node("l1", "{gpu: l4}");
    resolve(pools, n, NULL, &np);
    assert_string_equal(np.pool, "infer");
    assert_int_equal(np.mode, TF_ISOLATION_SOFT);
    json_object_put(n);
    json_object_put(pools);
}

static void overlapping_selectors_are_a_conflict_resolved_stably(void **state)
{
    (void)state;
    json_object *pools = yaml(POOLS);
    struct tf_nodepool np;
    /* h100 matches train and any-h100 (its multiVendorNodeSelector wins over its
     * nodeSelector, which would match every GPU node). */
    json_object *n = node("h1", "{gpu: h100}");
    resolve(pools, n, NULL, &np);
    assert_int_equal(np.nmatched, 2);
    assert_string_equal(np.matched, "any-h100, train");
    assert_string_equal(np.pool, "any-h100"); /* first by name */
    resolve(pools, n, "train", &np);
    assert_string_equal(np.pool, "train"); /* the node stays where it is */
    json_object_put(n);
    /* multiVendorNodeSelector replaces nodeSelector: an l4 node is not any-h100's. */
    n = node("l2", "{gpu: l4}");
    resolve(pools, n, NULL, &np);
    assert_int_equal(np.nmatched, 1);
    json_object_put(n);
    json_object_put(pools);
}

static void nodes_no_pool_selects_keep_their_label_or_go_to_the_default(void **state)
{
    (void)state;
    json_object *pools = yaml(POOLS);
    struct tf_nodepool np;
    json_object *n = node("x1", "{gpu: t4}");
    resolve(pools, n, "manual", &np); /* a pool that selects nothing: the label stands */
    assert_string_equal(np.pool, "manual");
    assert_int_equal(np.source, TF_NODEPOOL_LABEL);
    resolve(pools, n, "not-yet-created", &np); /* a pool still to come: kept too */
    assert_string_equal(np.pool, "not-yet-created");
    resolve(pools, n, "train", &np); /* the node left train's selector */
    assert_string_equal(np.pool, "default");
    assert_int_equal(np.source, TF_NODEPOOL_DEFAULT);
    resolve(pools, n, NULL, &np);
    assert_string_equal(np.pool, "default");
    json_object_put(n);
    /* The Node is not known yet: nothing moves. */
    tf_nodepool_resolve(pools, "ghost", NULL, "train", "default", &np);
    assert_string_equal(np.pool, "train");
    assert_int_equal(np.nmatched, 0);
    assert_true(tf_nodepool_selects(json_object_array_get_idx(pools, 0)));
    assert_false(tf_nodepool_selects(json_object_array_get_idx(pools, 3)));
    json_object_put(pools);
}

static void node_selectors_match_as_kube_scheduler_does(void **state)
{
    (void)state;
    json_object *labels = yaml("{gpu-count: '8', zone: a}");
    struct {
        const char *sel;
        bool want;
    } cases[] = {
        {"{nodeSelectorTerms: [{matchExpressions: [{key: gpu-count, operator: Gt, values: "
         "['4']}]}]}",
         true},
        {"{nodeSelectorTerms: [{matchExpressions: [{key: gpu-count, operator: Lt, values: "
         "['8']}]}]}",
         false},
        {"{nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: Gt, values: ['1']}]}]}",
         false}, /* not an integer */
        {"{nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: "
         "[n1]}]}]}",
         true},
        {"{nodeSelectorTerms: [{matchFields: [{key: metadata.uid, operator: In, values: "
         "[n1]}]}]}",
         false},
        {"{nodeSelectorTerms: [{}]}", false}, /* an empty term matches nothing */
        {"{nodeSelectorTerms: []}", false},
        {"{nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [b]}]}, "
         "{matchExpressions: [{key: rack, operator: DoesNotExist}, {key: zone, operator: NotIn, "
         "values: [c]}]}]}",
         true}, /* terms ORed, requirements ANDed */
        {"{nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}], "
         "matchFields: [{key: metadata.name, operator: NotIn, values: [n1]}]}]}",
         false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_object *sel = yaml(cases[i].sel);
        if (tf_node_selector_match(sel, "n1", labels) != cases[i].want)
            fail_msg("case %zu (%s): want %d", i, cases[i].sel, cases[i].want);
        json_object_put(sel);
    }
    assert_false(tf_node_selector_match(NULL, "n1", labels));
    json_object_put(labels);
}

static void label_selectors_match_as_the_api_does(void **state)
{
    (void)state;
    json_object *labels = yaml("{gpu-count: '8', zone: a}");
    struct {
        const char *sel;
        bool want;
    } cases[] = {
        {"{matchLabels: {zone: a}}", true},
        {"{matchLabels: {zone: a, rack: r1}}", false},
        {"{matchExpressions: [{key: zone, operator: In, values: [a, b]}]}", true},
        {"{matchExpressions: [{key: zone, operator: NotIn, values: [a]}]}", false},
        {"{matchExpressions: [{key: rack, operator: DoesNotExist}, {key: zone, operator: "
         "Exists}]}",
         true},
        /* Gt and Lt are node-selector operators: a LabelSelector with one matches nothing */
        {"{matchExpressions: [{key: gpu-count, operator: Gt, values: ['4']}]}", false},
        {"{matchExpressions: [{key: zone}]}", false}, /* no operator */
        {"{matchLabels: [zone]}", false},             /* malformed */
        {"{}", true},                                 /* the empty selector selects all */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_object *sel = yaml(cases[i].sel);
        if (tf_selector_match(sel, labels) != cases[i].want)
            fail_msg("case %zu (%s): want %d", i, cases[i].sel, cases[i].want);
        json_object_put(sel);
    }
    json_object_put(labels);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(label_selectors_match_as_the_api_does),
        cmocka_unit_test(a_node_joins_the_pool_whose_selector_matches_with_the_pools_mode),
        cmocka_unit_test(overlapping_selectors_are_a_conflict_resolved_stably),
        cmocka_unit_test(nodes_no_pool_selects_keep_their_label_or_go_to_the_default),
        cmocka_unit_test(node_selectors_match_as_kube_scheduler_does),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
