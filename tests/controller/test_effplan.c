/* SPDX-License-Identifier: Apache-2.0
 *
 * The efficiency reconcilers' pure decisions (controller/effplan.h): what a workload's
 * autoscaling inputs are (original from the spec, current from its pods, configuration from
 * rules / own / profile / annotations), what is written to its status and its pods, which
 * nodes count as already released, and how a defragmentation run steps through its evictions
 * (one at a time, waiting for the replacement, skipping pods that went away, stopping at
 * maxDuration).
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
#include "controller/effplan.h"
#include "harness.h"

#define GI ((int64_t)1 << 30)

static const char *WL = "{\"apiVersion\":\"tensor-fusion.ai/v1\",\"kind\":\"TensorFusionWorkload\","
                        "\"metadata\":{\"name\":\"infer\",\"namespace\":\"ml\","
                        "\"creationTimestamp\":\"2024-05-01T00:00:00Z\"%s},"
                        "\"spec\":{\"poolName\":\"p\",\"resources\":{\"requests\":{\"tflops\":"
                        "\"100\",\"vram\":\"40Gi\"},\"limits\":{\"tflops\":\"200\",\"vram\":"
                        "\"40Gi\"}}%s}%s}";

static json_object *workload(const char *meta_extra, const char *spec_extra, const char *rest)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), WL, meta_extra ? meta_extra : "", spec_extra ? spec_extra : "",
             rest ? rest : "");
    return jparse(buf);
}

/* A pod of the workload as the webhook leaves it. */
static json_object *pod(const char *name, const char *wl, const char *tflops_req,
                        const char *vram_req, const char *extra_ann, const char *labels)
{
    char buf[4096];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"ml\",\"labels\":{"
             "\"tensor-fusion.ai/enabled\":\"true\",\"tensor-fusion.ai/component\":\"client\"%s},"
             "\"annotations\":{\"tensor-fusion.ai/workload\":\"%s\","
             "\"tensor-fusion.ai/tflops-request\":\"%s\",\"tensor-fusion.ai/tflops-limit\":"
             "\"200\",\"tensor-fusion.ai/vram-request\":\"%s\",\"tensor-fusion.ai/vram-limit\":"
             "\"40Gi\"%s}},\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"x\"}]}}",
             name, labels ? labels : "", wl, tflops_req, vram_req, extra_ann ? extra_ann : "");
    return jparse(buf);
}

static void workload_inputs_come_from_spec_pods_and_annotations(void **state)
{
    (void)state;
    json_object *wl = workload(NULL, NULL, NULL);
    json_object *pods = json_object_new_array();
    json_object_array_add(pods, pod("infer-0", "infer", "60", "20Gi",
                                    ",\"tensor-fusion.ai/autoscale\":\"true\","
                                    "\"tensor-fusion.ai/autoscale-target\":\"vram\"",
                                    ",\"team\":\"a\""));
    json_object_array_add(pods, pod("other-0", "other", "1", "1Gi", NULL, NULL));
    json_object *gone = pod("infer-1", "infer", "1", "1Gi", NULL, NULL);
    json_object_object_add(tf_json_path(gone, "metadata", NULL), "deletionTimestamp",
                           json_object_new_string("2024-05-01T00:00:00Z"));
    json_object_array_add(pods, gone);
    struct tf_effplan_workload w;
    char err[512];
    assert_int_equal(tf_effplan_workload_read(wl, pods, &w, err, sizeof(err)), 0);
    assert_int_equal(json_object_array_length(w.pods), 1);
    assert_int_equal(w.original.req_tflops, 100000);
    assert_int_equal(w.original.lim_vram, 40 * GI);
    assert_int_equal(w.current.req_tflops, 60000);
    assert_int_equal(w.current.req_vram, 20 * GI);
    assert_true(w.annotated);
    assert_false(w.current_from_cron);
    assert_int_equal(w.created_ms, INT64_C(1714521600000));
    /* No labels on the workload: the pod's select the rule. */
    json_object *tpl = jparse("{\"spec\":{\"verticalScalingRules\":[{\"name\":\"other\","
                              "\"selector\":{\"matchLabels\":{\"team\":\"b\"}},\"autoScaling\":{"
                              "\"autoSetResources\":{\"marginFraction\":\"0.5\"}}},{\"name\":"
                              "\"team-a\",\"selector\":{\"matchLabels\":{\"team\":\"a\"}},"
                              "\"autoScaling\":{\"autoSetResources\":{\"marginFraction\":\"0.3\","
                              "\"historyDataPeriod\":\"4h\"}}}]}}");
    assert_int_equal(tf_effplan_workload_config(&w, tpl, NULL, err, sizeof(err)), 0);
    assert_string_equal(w.matched_rule, "team-a");
    assert_true(w.cfg.enable);
    assert_int_equal(w.cfg.target, TF_AUTOSCALE_VRAM);
    assert_true(w.cfg.margin > 0.29 && w.cfg.margin < 0.31);
    assert_int_equal(w.cfg.history_ms, 4 * 3600 * 1000);
    assert_true(tf_effplan_workload_active(&w));
    tf_effplan_workload_free(&w);
    json_object_put(tpl);
    json_object_put(pods);
    json_object_put(wl);
}

static void own_config_wins_over_the_profile_and_errors_name_the_path(void **state)
{
    (void)state;
    json_object *pods = json_object_new_array();
    json_object_array_add(pods, pod("infer-0", "infer", "100", "40Gi",
                                    ",\"tensor-fusion.ai/workload-profile\":\"prof\"", NULL));
    json_object *profile = jparse("{\"metadata\":{\"name\":\"prof\",\"namespace\":\"ml\"},"
                                  "\"spec\":{\"autoScalingConfig\":{\"autoSetResources\":{"
                                  "\"enable\":true,\"targetResource\":\"compute\"}}}}");
    struct tf_effplan_workload w;
    char err[512];
    /* Without its own config the workload takes the profile's. */
    json_object *wl = workload(NULL, NULL, NULL);
    assert_int_equal(tf_effplan_workload_read(wl, pods, &w, err, sizeof(err)), 0);
    assert_string_equal(w.profile, "prof");
    assert_int_equal(tf_effplan_workload_config(&w, NULL, profile, err, sizeof(err)), 0);
    assert_true(w.cfg.enable);
    assert_int_equal(w.cfg.target, TF_AUTOSCALE_COMPUTE);
    tf_effplan_workload_free(&w);
    json_object_put(wl);
    /* Its own config wins; not enabled and no annotation: nothing to do. */
    wl = workload(NULL, ",\"autoScalingConfig\":{\"autoSetResources\":{\"enable\":false}}", NULL);
    assert_int_equal(tf_effplan_workload_read(wl, pods, &w, err, sizeof(err)), 0);
    assert_int_equal(tf_effplan_workload_config(&w, NULL, profile, err, sizeof(err)), 0);
    assert_false(w.cfg.enable);
    assert_false(tf_effplan_workload_active(&w));
    tf_effplan_workload_free(&w);
    json_object_put(wl);
    wl = workload(NULL, ",\"autoScalingConfig\":{\"autoSetResources\":{\"targetPercentil\":1}}",
                  NULL);
    assert_int_equal(tf_effplan_workload_read(wl, pods, &w, err, sizeof(err)), 0);
    assert_int_not_equal(tf_effplan_workload_config(&w, NULL, profile, err, sizeof(err)), 0);
    assert_non_null(strstr(err, "spec.autoScalingConfig.autoSetResources.targetPercentil"));
    tf_effplan_workload_free(&w);
    json_object_put(wl);
    /* A malformed quantity in the spec is named. */
    wl = jparse("{\"metadata\":{\"name\":\"w\",\"namespace\":\"ml\"},\"spec\":{\"resources\":{"
                "\"requests\":{\"vram\":\"4Gb\"}}}}");
    assert_int_equal(tf_effplan_workload_read(wl, pods, &w, err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "spec.resources.requests.vram"));
    tf_effplan_workload_free(&w);
    json_object_put(wl);
    json_object_put(profile);
    json_object_put(pods);
}

/* Compute as a percentage, in upstream's field (compute, what the webhook writes) or our
 * former one (computePercent): vram is all that can scale. */
static void compute_by_percent_only_scales_vram(void **state)
{
    (void)state;
    static const char *const fields[] = {"compute", "computePercent"};
    for (size_t i = 0; i < 2; i++) {
        char doc[512];
        snprintf(doc, sizeof(doc),
                 "{\"metadata\":{\"name\":\"pct\",\"namespace\":\"ml\"},\"spec\":{"
                 "\"resources\":{\"requests\":{\"%s\":\"50\",\"vram\":\"8Gi\"}},"
                 "\"autoScalingConfig\":{\"autoSetResources\":{\"enable\":true}}}}",
                 fields[i]);
        json_object *wl = jparse(doc);
        struct tf_effplan_workload w;
        char err[512];
        assert_int_equal(tf_effplan_workload_read(wl, NULL, &w, err, sizeof(err)), 0);
        assert_true(w.compute_by_percent);
        assert_int_equal(tf_effplan_workload_config(&w, NULL, NULL, err, sizeof(err)), 0);
        assert_int_equal(w.cfg.target, TF_AUTOSCALE_VRAM);
        tf_effplan_workload_free(&w);
        json_object_put(wl);
    }
}

static void status_patch_records_the_recommendation_and_the_cron_rule(void **state)
{
    (void)state;
    struct tf_autoscale_recommendation rec;
    struct tf_autoscale_config cfg;
    char err[256];
    json_object *yc = NULL;
    const char *rules = "cronScalingRules: [{enable: true, name: business-hours, start: \"0 9 * "
                        "* 1-5\", end: \"0 18 * * 1-5\", desiredResources: {requests: "
                        "{compute: \"50\"}}}]";
    assert_int_equal(tf_yaml_to_json(rules, strlen(rules), &yc, err, sizeof(err)), 0);
    assert_int_equal(
        tf_autoscale_config_parse(json_object_array_get_idx(yc, 0), "", &cfg, err, sizeof(err)), 0);
    json_object_put(yc);
    memset(&rec, 0, sizeof(rec));
    rec.source = TF_AUTOSCALE_SRC_PERCENTILE;
    rec.compute.samples = 10;
    rec.resources = (struct tf_autoscale_resources){
        25400, 200000, 12366 * ((int64_t)1 << 20), 12366 * ((int64_t)1 << 20), 0, 0};
    json_object *wl = workload(NULL, NULL, NULL);
    json_object *p = tf_effplan_status_patch(wl, &cfg, &rec);
    assert_non_null(p);
    assert_string_equal(tf_json_str(p, "status", "recommendation", "requests", "tflops", NULL),
                        "25.4");
    assert_string_equal(tf_json_str(p, "status", "recommendation", "limits", "vram", NULL),
                        "12366Mi");
    assert_null(tf_json_path(p, "status", TF_STATUS_ACTIVE_CRON_RULE, NULL));
    /* Already recorded: nothing to write. */
    json_object *st = json_object_new_object();
    json_object_object_add(st, "recommendation",
                           json_object_get(tf_json_path(p, "status", "recommendation", NULL)));
    json_object_object_add(wl, "status", st);
    json_object_put(p);
    assert_null(tf_effplan_status_patch(wl, &cfg, &rec));
    /* A cron rule becomes active, then ends: the rule (the CRD's CronScalingRule object) is
     * recorded, then deleted. */
    strcpy(rec.active_rule, "business-hours");
    rec.source = TF_AUTOSCALE_SRC_CRON;
    p = tf_effplan_status_patch(wl, &cfg, &rec);
    json_object *ar = tf_json_path(p, "status", TF_STATUS_ACTIVE_CRON_RULE, NULL);
    assert_string_equal(tf_json_str(ar, "name", NULL), "business-hours");
    assert_string_equal(tf_json_str(ar, "start", NULL), "0 9 * * 1-5");
    assert_string_equal(tf_json_str(ar, "end", NULL), "0 18 * * 1-5");
    assert_true(json_object_get_boolean(tf_json_path(ar, "enable", NULL)));
    assert_string_equal(tf_json_str(ar, "desiredResources", "requests", "compute", NULL), "50");
    json_object_object_add(st, TF_STATUS_ACTIVE_CRON_RULE, json_object_get(ar));
    json_object_put(p);
    assert_null(tf_effplan_status_patch(wl, &cfg, &rec)); /* recorded already */
    /* Earlier releases wrote the name alone: read as the same rule, rewritten as the object. */
    json_object_object_add(st, TF_STATUS_ACTIVE_CRON_RULE,
                           json_object_new_string("business-hours"));
    struct tf_effplan_workload w;
    assert_int_equal(tf_effplan_workload_read(wl, NULL, &w, err, sizeof(err)), 0);
    assert_true(w.current_from_cron);
    tf_effplan_workload_free(&w);
    p = tf_effplan_status_patch(wl, &cfg, &rec);
    assert_non_null(tf_json_path(p, "status", TF_STATUS_ACTIVE_CRON_RULE, "name", NULL));
    json_object_put(p);
    rec.active_rule[0] = '\0';
    p = tf_effplan_status_patch(wl, &cfg, &rec);
    assert_non_null(p);
    json_object *v = NULL;
    assert_true(
        json_object_object_get_ex(tf_json_path(p, "status", NULL), TF_STATUS_ACTIVE_CRON_RULE, &v));
    assert_null(v); /* JSON null: merge patch deletes */
    json_object_put(p);
    /* No history and no rule: the recommendation is left as it is. */
    memset(&rec, 0, sizeof(rec));
    json_object_object_del(st, TF_STATUS_ACTIVE_CRON_RULE);
    assert_null(tf_effplan_status_patch(wl, &cfg, &rec));
    json_object_put(wl);
}

static void pod_patch_changes_only_what_differs(void **state)
{
    (void)state;
    json_object *p = pod("infer-0", "infer", "100", "40Gi", NULL, NULL);
    struct tf_autoscale_resources r = {100000, 200000, 12 * GI, 40 * GI, 0, 0};
    json_object *patch = tf_effplan_pod_patch(p, &r, false);
    assert_non_null(patch);
    json_object *anns = tf_json_path(patch, "metadata", "annotations", NULL);
    assert_int_equal(json_object_object_length(anns), 1);
    assert_string_equal(tf_json_str(anns, "tensor-fusion.ai/vram-request", NULL), "12Gi");
    json_object_put(patch);
    r.req_tflops = 25400;
    patch = tf_effplan_pod_patch(p, &r, true); /* compute by percent: TFLOPS left alone */
    assert_null(
        tf_json_str(patch, "metadata", "annotations", "tensor-fusion.ai/tflops-request", NULL));
    json_object_put(patch);
    patch = tf_effplan_pod_patch(p, &r, false);
    assert_string_equal(
        tf_json_str(patch, "metadata", "annotations", "tensor-fusion.ai/tflops-request", NULL),
        "25.4");
    json_object_put(patch);
    /* Compute by percent: a rule's percentages go to compute-percent-*, never tflops-*. */
    r.req_percent = 5000;
    r.lim_percent = 7550;
    patch = tf_effplan_pod_patch(p, &r, true);
    assert_string_equal(tf_json_str(patch, "metadata", "annotations",
                                    "tensor-fusion.ai/compute-percent-request", NULL),
                        "50");
    assert_string_equal(tf_json_str(patch, "metadata", "annotations",
                                    "tensor-fusion.ai/compute-percent-limit", NULL),
                        "75.5");
    json_object_put(patch);
    patch = tf_effplan_pod_patch(p, &r, false); /* in TFLOPS: percentages left alone */
    assert_null(tf_json_str(patch, "metadata", "annotations",
                            "tensor-fusion.ai/compute-percent-request", NULL));
    json_object_put(patch);
    r.req_percent = r.lim_percent = 0;
    struct tf_autoscale_resources same = {100000, 200000, 40 * GI, 40 * GI, 0, 0};
    assert_null(tf_effplan_pod_patch(p, &same, false));
    struct tf_autoscale_resources cur;
    bool pct = true;
    assert_int_equal(tf_effplan_pod_resources(p, &cur, &pct), 0);
    assert_false(pct);
    assert_int_equal(cur.lim_tflops, 200000);
    json_object_put(p);
}

static void released_nodes_count_as_deleting(void **state)
{
    (void)state;
    struct tf_compaction_node n[3] = {{.name = "a"}, {.name = "b"}, {.name = "c"}};
    json_object *nodes = jparse("[{\"metadata\":{\"name\":\"b\",\"labels\":{"
                                "\"tensor-fusion.ai/should-delete\":\"true\"}}},{\"metadata\":{"
                                "\"name\":\"c\",\"labels\":{\"tensor-fusion.ai/should-delete\":"
                                "\"false\"}}}]");
    tf_effplan_mark_released(n, 3, nodes);
    assert_false(n[0].deleting);
    assert_true(n[1].deleting);
    assert_false(n[2].deleting);
    json_object_put(nodes);
}

/* ---- defrag runs ---- */

static void plan_of(struct tf_defrag_plan *p, size_t n)
{
    memset(p, 0, sizeof(*p));
    p->evictions = calloc(n, sizeof(*p->evictions));
    p->events = calloc(n, sizeof(*p->events));
    p->nevictions = p->nevents = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(p->evictions[i].ns, sizeof(p->evictions[i].ns), "ml");
        snprintf(p->evictions[i].name, sizeof(p->evictions[i].name), "w%zu", i);
        snprintf(p->evictions[i].node, sizeof(p->evictions[i].node), "n%zu", i);
        p->events[i].kind = TF_DEFRAG_EV_POD_EVICTED;
        p->events[i].eviction = (int32_t)i;
        snprintf(p->events[i].message, sizeof(p->events[i].message), "evict w%zu", i);
    }
}

static json_object *pods_of(const char *json)
{
    return jparse(json);
}

static void defrag_run_evicts_one_at_a_time_after_the_replacement_is_scheduled(void **state)
{
    (void)state;
    struct tf_defrag_config cfg = {.enabled = true, .max_duration_ms = 3600000};
    struct tf_effplan_defrag_run r;
    memset(&r, 0, sizeof(r));
    struct tf_defrag_plan p;
    plan_of(&p, 3);
    const int64_t t0 = 1000000;
    tf_effplan_defrag_start(&r, &p, t0);
    assert_null(p.evictions); /* moved into the run */
    assert_string_equal(tf_effplan_defrag_event(&r.plan, 1)->message, "evict w1");
    const char *all = "[{\"metadata\":{\"name\":\"w0\",\"namespace\":\"ml\"},\"spec\":{"
                      "\"nodeName\":\"n0\"}},{\"metadata\":{\"name\":\"w1\",\"namespace\":"
                      "\"ml\"},\"spec\":{\"nodeName\":\"n1\"}},{\"metadata\":{\"name\":\"w2\","
                      "\"namespace\":\"ml\"},\"spec\":{\"nodeName\":\"elsewhere\"}}]";
    json_object *pods = pods_of(all);
    size_t idx = 99;
    assert_int_equal(tf_effplan_defrag_next(&r, &cfg, pods, "p", t0, &idx), TF_DEFRAG_STEP_EVICT);
    assert_int_equal(idx, 0);
    tf_effplan_defrag_done(&r, true, t0);
    /* w0 still there: wait. */
    assert_int_equal(tf_effplan_defrag_next(&r, &cfg, pods, "p", t0 + 60000, &idx),
                     TF_DEFRAG_STEP_WAIT);
    json_object_put(pods);
    /* w0 gone, but its replacement waits for a node: wait. */
    pods = pods_of("[{\"metadata\":{\"name\":\"w0-new\",\"namespace\":\"ml\",\"labels\":{"
                   "\"tensor-fusion.ai/enabled\":\"true\"},\"annotations\":{"
                   "\"tensor-fusion.ai/gpupool\":\"p\"}},\"spec\":{}},{\"metadata\":{\"name\":"
                   "\"w1\",\"namespace\":\"ml\"},\"spec\":{\"nodeName\":\"n1\"}}]");
    assert_int_equal(tf_effplan_defrag_next(&r, &cfg, pods, "p", t0 + 60000, &idx),
                     TF_DEFRAG_STEP_WAIT);
    /* ... a pending pod of another pool does not count. */
    assert_int_equal(tf_effplan_defrag_next(&r, &cfg, pods, "other", t0 + 60000, &idx),
                     TF_DEFRAG_STEP_EVICT);
    assert_int_equal(idx, 1);
    json_object_put(pods);
    /* Restart the check on pool p with the replacement placed: still within the settle time. */
    r.waiting = true;
    r.next = 1;
    r.evicted_at_ms = t0 + 60000;
    pods = pods_of("[{\"metadata\":{\"name\":\"w1\",\"namespace\":\"ml\"},\"spec\":{"
                   "\"nodeName\":\"n1\"}},{\"metadata\":{\"name\":\"w2\",\"namespace\":\"ml\"},"
                   "\"spec\":{\"nodeName\":\"elsewhere\"}}]");
    assert_int_equal(tf_effplan_defrag_next(&r, &cfg, pods, "p", t0 + 61000, &idx),
                     TF_DEFRAG_STEP_WAIT);
    assert_int_equal(
        tf_effplan_defrag_next(&r, &cfg, pods, "p", t0 + 60000 + TF_DEFRAG_SETTLE_MS, &idx),
        TF_DEFRAG_STEP_EVICT);
    assert_int_equal(idx, 1);
    tf_effplan_defrag_done(&r, true, t0 + 70000);
    json_object_put(pods);
    /* w1 gone; w2 moved off its planned node: skipped, and the run is finished. */
    pods = pods_of("[{\"metadata\":{\"name\":\"w2\",\"namespace\":\"ml\"},\"spec\":{"
                   "\"nodeName\":\"elsewhere\"}}]");
    assert_int_equal(tf_effplan_defrag_next(&r, &cfg, pods, "p", t0 + 80000, &idx),
                     TF_DEFRAG_STEP_FINISH);
    assert_int_equal(r.evicted, 2);
    assert_int_equal(r.skipped, 1);
    json_object_put(pods);
    tf_effplan_defrag_end(&r);
    assert_false(r.active);
}

static void defrag_run_stops_at_max_duration(void **state)
{
    (void)state;
    struct tf_defrag_config cfg = {.enabled = true, .max_duration_ms = 60000};
    struct tf_effplan_defrag_run r;
    memset(&r, 0, sizeof(r));
    struct tf_defrag_plan p;
    plan_of(&p, 2);
    tf_effplan_defrag_start(&r, &p, 0);
    json_object *pods = pods_of("[{\"metadata\":{\"name\":\"w0\",\"namespace\":\"ml\"},\"spec\":"
                                "{\"nodeName\":\"n0\"}},{\"metadata\":{\"name\":\"w1\","
                                "\"namespace\":\"ml\"},\"spec\":{\"nodeName\":\"n1\"}}]");
    size_t idx;
    assert_int_equal(tf_effplan_defrag_next(&r, &cfg, pods, "p", 59000, &idx),
                     TF_DEFRAG_STEP_EVICT);
    tf_effplan_defrag_done(&r, false, 59000); /* it was gone: skipped */
    assert_int_equal(tf_effplan_defrag_next(&r, &cfg, pods, "p", 60000, &idx),
                     TF_DEFRAG_STEP_DEADLINE);
    /* A run that is not active never acts. */
    tf_effplan_defrag_end(&r);
    assert_int_equal(tf_effplan_defrag_next(&r, &cfg, pods, "p", 0, &idx), TF_DEFRAG_STEP_WAIT);
    json_object_put(pods);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(workload_inputs_come_from_spec_pods_and_annotations),
        cmocka_unit_test(own_config_wins_over_the_profile_and_errors_name_the_path),
        cmocka_unit_test(compute_by_percent_only_scales_vram),
        cmocka_unit_test(status_patch_records_the_recommendation_and_the_cron_rule),
        cmocka_unit_test(pod_patch_changes_only_what_differs),
        cmocka_unit_test(released_nodes_count_as_deleting),
        cmocka_unit_test(defrag_run_evicts_one_at_a_time_after_the_replacement_is_scheduled),
        cmocka_unit_test(defrag_run_stops_at_max_duration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
