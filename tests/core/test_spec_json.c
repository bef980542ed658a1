/* SPDX-License-Identifier: Apache-2.0
 *
 * Whole manifests (Pod, Deployment, StatefulSet, ReplicaSet, Job, DaemonSet, CronJob,
 * PodTemplate) through tf_spec_parse_object, and the `-o json` contract of tf_spec_to_json.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "spec_test_util.h"

static const char seed_deployment[] =
    "kind: Deployment\napiVersion: apps/v1\nmetadata: {}\nspec:\n"
    "  template:\n    metadata:\n      labels:\n"
    "        tensor-fusion.ai/enabled: \"true\"\n      annotations:\n"
    "        tensor-fusion.ai/inject-container: python\n"
    "        tensor-fusion.ai/tflops-limit: '20'\n"
    "        tensor-fusion.ai/tflops-request: '10'\n"
    "        tensor-fusion.ai/vram-limit: 4Gi\n"
    "        tensor-fusion.ai/vram-request: 4Gi\n"
    "        tensor-fusion.ai/qos: medium\n"
    "        tensor-fusion.ai/workload-profile: default-profile\n"
    "        tensor-fusion.ai/is-local-gpu: 'true'\n"
    "        tensor-fusion.ai/gpu-count: '1'\n    spec: {}\n";

/* The keys of the contract, in order. */
static const char *const contract_keys[] = {
    "name",
    "namespace",
    "enabled",
    "poolName",
    "isolation",
    "qos",
    "isLocalGPU",
    "gpuCount",
    "requests",
    "limits",
    "gpuModel",
    "vendor",
    "gpuIndices",
    "dedicatedGPU",
    "workloadProfile",
    "workload",
    "enabledReplicas",
    "autoscale",
    "standaloneWorkerMode",
    "disableFeatures",
    "containers",
    "warnings",
};

static json_object *to_json(json_object *doc)
{
    struct tf_spec s;
    object_ok(doc, NULL, &s);
    json_object *j = tf_spec_to_json(&s);
    tf_spec_free(&s);
    assert_non_null(j);
    return j;
}

static void assert_json_equal(json_object *got, const char *want_text)
{
    /* Compare what a reader of the printed JSON sees: 10 and 10.0 are both the number 10, so
     * compare the re-parsed text (json-c keeps int and double apart). */
    json_object *want = json_tokener_parse(want_text);
    json_object *seen = json_tokener_parse(json_object_to_json_string(got));
    assert_non_null(want);
    assert_non_null(seen);
    bool same = json_object_equal(seen, want);
    json_object_put(seen);
    if (!same)
        fail_msg("JSON differs.\n got: %s\nwant: %s",
                 json_object_to_json_string_ext(got, JSON_C_TO_STRING_NOSLASHESCAPE),
                 json_object_to_json_string_ext(want, JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(want);
}

static void seed_001_deployment_gives_the_expected_json(void **state)
{
    json_object *j = to_json(yaml_doc(seed_deployment));
    assert_json_equal(j, "{\"name\": null, \"namespace\": null, \"enabled\": true,"
                         " \"poolName\": null, \"isolation\": \"soft\", \"qos\": \"medium\","
                         " \"isLocalGPU\": true, \"gpuCount\": 1,"
                         " \"requests\": {\"tflops\": 10, \"computePercent\": null,"
                         "   \"vramBytes\": 4294967296},"
                         " \"limits\": {\"tflops\": 20, \"computePercent\": null,"
                         "   \"vramBytes\": 4294967296},"
                         " \"gpuModel\": null, \"vendor\": null, \"gpuIndices\": [],"
                         " \"dedicatedGPU\": false, \"workloadProfile\": \"default-profile\","
                         " \"workload\": null, \"enabledReplicas\": null,"
                         " \"autoscale\": {\"enabled\": false, \"target\": null},"
                         " \"standaloneWorkerMode\": null, \"disableFeatures\": [],"
                         " \"containers\": {\"python\": 1}, \"warnings\": [],"
                         " \"kind\": \"Deployment\", \"optedOut\": false,"
                         " \"autoMigrated\": false, \"wholeGPU\": false,"
                         " \"injectContainers\": [\"python\"], \"migratedContainers\": [],"
                         " \"containerGPUs\": null, \"gang\": null}");
    /* Key order is part of the contract's readability: the keys come first. */
    size_t i = 0;
    json_object_object_foreach(j, k, v)
    {
        (void)v;
        if (i < sizeof(contract_keys) / sizeof(contract_keys[0]))
            assert_string_equal(k, contract_keys[i]);
        i++;
    }
    json_object_put(j);
}

static void absent_values_are_null_never_omitted(void **state)
{
    json_object *docs[2] = {
        to_json(yaml_doc("kind: Pod\nmetadata: {name: off}\n")),
        to_json(yaml_doc("kind: Pod\nmetadata: {labels: {tensor-fusion.ai/enabled: 'true'},"
                         " annotations: {tensor-fusion.ai/vram-limit: 1Gi}}\n")),
    };
    for (int d = 0; d < 2; d++) {
        for (size_t i = 0; i < sizeof(contract_keys) / sizeof(contract_keys[0]); i++)
            if (!json_object_object_get_ex(docs[d], contract_keys[i], NULL))
                fail_msg("key %s omitted", contract_keys[i]);
        json_object_put(docs[d]);
    }
}

static void disabled_pod_prints_enabled_false_and_nulls(void **state)
{
    json_object *j = to_json(yaml_doc("kind: Pod\nmetadata: {name: off, namespace: n}\n"));
    assert_false(json_object_get_boolean(json_object_object_get(j, "enabled")));
    assert_string_equal(json_object_get_string(json_object_object_get(j, "name")), "off");
    assert_null(json_object_object_get(j, "isolation"));
    assert_null(json_object_object_get(j, "requests"));
    assert_null(json_object_object_get(j, "gpuCount"));
    json_object_put(j);
}

static void percent_becomes_tflops_when_the_model_is_known(void **state)
{
    json_object *j = to_json(yaml_doc("kind: Pod\nmetadata:\n  labels: {tensor-fusion.ai/enabled: "
                                      "'true'}\n  annotations:\n"
                                      "    tensor-fusion.ai/gpu-model: L4\n"
                                      "    tensor-fusion.ai/compute-percent-limit: '50'\n"
                                      "    tensor-fusion.ai/compute-percent-request: '12.5'\n"));
    json_object *lim = json_object_object_get(j, "limits");
    json_object *req = json_object_object_get(j, "requests");
    /* 121 TFLOPS x 50 % = 60.5; 12.5 % = 15.125 */
    assert_string_equal(json_object_to_json_string(json_object_object_get(lim, "tflops")), "60.5");
    assert_string_equal(json_object_to_json_string(json_object_object_get(lim, "computePercent")),
                        "50");
    assert_string_equal(json_object_to_json_string(json_object_object_get(req, "tflops")),
                        "15.125");
    assert_string_equal(json_object_to_json_string(json_object_object_get(req, "computePercent")),
                        "12.5");
    assert_null(json_object_object_get(lim, "vramBytes"));
    assert_string_equal(json_object_get_string(json_object_object_get(j, "vendor")), "NVIDIA");
    json_object_put(j);
    /* Unknown model: tflops stays null. */
    j = to_json(yaml_doc("kind: Pod\nmetadata:\n  labels: {tensor-fusion.ai/enabled: 'true'}\n"
                         "  annotations: {tensor-fusion.ai/compute-percent-limit: '50'}\n"));
    assert_null(json_object_object_get(json_object_object_get(j, "limits"), "tflops"));
    json_object_put(j);
}

static void full_statefulset_json_has_every_field(void **state)
{
    json_object *j = to_json(
        yaml_doc("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: llm, namespace: inf}\n"
                 "spec:\n  replicas: 3\n  template:\n    metadata:\n      labels: "
                 "{tensor-fusion.ai/enabled: 'true'}\n      annotations:\n"
                 "        tensor-fusion.ai/gpu-count: '2'\n"
                 "        tensor-fusion.ai/gpu-indices: '0,1'\n"
                 "        tensor-fusion.ai/tflops-request: '100'\n"
                 "        tensor-fusion.ai/tflops-limit: '200'\n"
                 "        tensor-fusion.ai/vram-request: 20Gi\n"
                 "        tensor-fusion.ai/vram-limit: 24Gi\n"
                 "        tensor-fusion.ai/isolation: hard\n"
                 "        tensor-fusion.ai/is-local-gpu: 'false'\n"
                 "        tensor-fusion.ai/gpu-model: H100\n"
                 "        tensor-fusion.ai/qos: critical\n"
                 "        tensor-fusion.ai/autoscale: 'true'\n"
                 "        tensor-fusion.ai/autoscale-target: vram\n"
                 "        tensor-fusion.ai/workload: llm\n"
                 "        tensor-fusion.ai/enabled-replicas: '2'\n"
                 "        tensor-fusion.ai/gpupool: pool-a\n"
                 "        tensor-fusion.ai/standalone-worker-mode: 'false'\n"
                 "        tensor-fusion.ai/disable-features: gpu-opt\n"
                 "        tensor-fusion.ai/container-gpus: '{\"server\":[\"g1\",\"g2\"]}'\n"
                 "    spec:\n      containers: [{name: server}]\n"));
    assert_json_equal(j, "{\"name\": \"llm\", \"namespace\": \"inf\", \"enabled\": true,"
                         " \"poolName\": \"pool-a\", \"isolation\": \"hard\","
                         " \"qos\": \"critical\", \"isLocalGPU\": false, \"gpuCount\": 2,"
                         " \"requests\": {\"tflops\": 100, \"computePercent\": null,"
                         "   \"vramBytes\": 21474836480},"
                         " \"limits\": {\"tflops\": 200, \"computePercent\": null,"
                         "   \"vramBytes\": 25769803776},"
                         " \"gpuModel\": \"H100\", \"vendor\": \"NVIDIA\","
                         " \"gpuIndices\": [0, 1], \"dedicatedGPU\": false,"
                         " \"workloadProfile\": null, \"workload\": \"llm\","
                         " \"enabledReplicas\": 2,"
                         " \"autoscale\": {\"enabled\": true, \"target\": \"vram\"},"
                         " \"standaloneWorkerMode\": false,"
                         " \"disableFeatures\": [\"gpu-opt\"], \"containers\": {\"server\": 2},"
                         " \"warnings\": [\"tensor-fusion.ai/standalone-worker-mode has no"
                         " effect when tensor-fusion.ai/is-local-gpu is false (remote workers"
                         " are standalone)\", \"tensor-fusion.ai/disable-features: gpu-opt has"
                         " no effect here: TensorFusion in C applies no CUDA optimisation to the"
                         " application's calls (nothing to turn off)\"],"
                         " \"kind\": \"StatefulSet\", \"optedOut\": false,"
                         " \"autoMigrated\": false, \"wholeGPU\": false,"
                         " \"injectContainers\": [\"server\"], \"migratedContainers\": [],"
                         " \"containerGPUs\": {\"server\": [\"g1\", \"g2\"]}, \"gang\": null}");
    json_object_put(j);
}

static void seed_004_migration_json_shows_whole_gpus(void **state)
{
    json_object *j = to_json(
        yaml_doc("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: rec, namespace: a}\n"
                 "spec:\n  replicas: 4\n  template:\n    metadata:\n"
                 "      labels: {tensor-fusion.ai/enabled: 'true'}\n"
                 "      annotations: {tensor-fusion.ai/isolation: shared, "
                 "tensor-fusion.ai/enabled-replicas: '1'}\n"
                 "    spec:\n      containers:\n      - name: app\n"
                 "        resources: {limits: {nvidia.com/gpu: 1}}\n      - name: side\n"));
    json_object *lim = json_object_object_get(j, "limits");
    assert_string_equal(json_object_to_json_string(json_object_object_get(lim, "computePercent")),
                        "100");
    assert_true(json_object_get_boolean(json_object_object_get(j, "wholeGPU")));
    assert_string_equal(json_object_get_string(json_object_object_get(j, "qos")), "high");
    assert_string_equal(json_object_to_json_string_ext(json_object_object_get(j, "containers"),
                                                       JSON_C_TO_STRING_PLAIN),
                        "{\"app\":1}");
    assert_string_equal(
        json_object_to_json_string_ext(json_object_object_get(j, "migratedContainers"),
                                       JSON_C_TO_STRING_PLAIN),
        "[\"app\"]");
    json_object_put(j);
}

/* ---- manifests ----------------------------------------------------------------------------- */

#define TEMPLATE                                                                                   \
    "    metadata:\n      labels: {tensor-fusion.ai/enabled: 'true'}\n"                            \
    "      annotations: {tensor-fusion.ai/tflops-limit: '1'}\n"                                    \
    "    spec:\n      containers: [{name: c}]\n"

static void every_controller_kind_is_read_through_its_template(void **state)
{
    const char *docs[][2] = {
        {"Deployment",
         "kind: Deployment\nmetadata: {name: x, namespace: n}\nspec:\n  template:\n" TEMPLATE},
        {"StatefulSet", "kind: StatefulSet\nmetadata: {name: x, namespace: n}\nspec:\n"
                        "  template:\n" TEMPLATE},
        {"ReplicaSet", "kind: ReplicaSet\nmetadata: {name: x, namespace: n}\nspec:\n"
                       "  template:\n" TEMPLATE},
        {"Job", "kind: Job\nmetadata: {name: x, namespace: n}\nspec:\n  template:\n" TEMPLATE},
        {"DaemonSet",
         "kind: DaemonSet\nmetadata: {name: x, namespace: n}\nspec:\n  template:\n" TEMPLATE},
        {"CronJob", "kind: CronJob\nmetadata: {name: x, namespace: n}\nspec:\n  jobTemplate:\n"
                    "    spec:\n      template:\n"
                    "        metadata:\n          labels: {tensor-fusion.ai/enabled: 'true'}\n"
                    "          annotations: {tensor-fusion.ai/tflops-limit: '1'}\n"
                    "        spec:\n          containers: [{name: c}]\n"},
        {"PodTemplate", "kind: PodTemplate\nmetadata: {name: x, namespace: n}\ntemplate:\n"
                        "  metadata:\n    labels: {tensor-fusion.ai/enabled: 'true'}\n"
                        "    annotations: {tensor-fusion.ai/tflops-limit: '1'}\n"
                        "  spec:\n    containers: [{name: c}]\n"},
        {"Pod", "kind: Pod\nmetadata:\n  name: x\n  namespace: n\n"
                "  labels: {tensor-fusion.ai/enabled: 'true'}\n"
                "  annotations: {tensor-fusion.ai/tflops-limit: '1'}\n"
                "spec:\n  containers: [{name: c}]\n"},
    };
    for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
        json_object *d = yaml_doc(docs[i][1]);
        assert_true(tf_spec_kind_supported(d));
        assert_non_null(tf_spec_pod_template(d));
        struct tf_spec s;
        object_ok(d, NULL, &s);
        assert_true(s.enabled);
        assert_string_equal(s.kind, docs[i][0]);
        assert_string_equal(s.name, "x");
        assert_string_equal(s.ns, "n");
        assert_int_equal(s.limits.tflops_milli, 1000);
        assert_string_equal(s.containers[0].name, "c");
        tf_spec_free(&s);
    }
}

static void controller_replicas_are_recorded_and_default_to_one(void **state)
{
    struct tf_spec s;
    object_ok(yaml_doc("kind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: 5\n"
                       "  template:\n" TEMPLATE),
              NULL, &s);
    assert_true(s.has_replicas);
    assert_int_equal(s.replicas, 5);
    tf_spec_free(&s);
    object_ok(yaml_doc("kind: StatefulSet\nmetadata: {name: x}\nspec:\n  template:\n" TEMPLATE),
              NULL, &s);
    assert_int_equal(s.replicas, 1);
    tf_spec_free(&s);
    object_ok(yaml_doc("kind: Job\nmetadata: {name: x}\nspec:\n  template:\n" TEMPLATE), NULL, &s);
    assert_false(s.has_replicas);
    tf_spec_free(&s);
}

static void namespace_falls_back_to_the_template(void **state)
{
    struct tf_spec s;
    object_ok(yaml_doc("kind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n"
                       "    metadata:\n      namespace: inner\n"
                       "      labels: {tensor-fusion.ai/enabled: 'true'}\n"
                       "      annotations: {tensor-fusion.ai/tflops-limit: '1'}\n"),
              NULL, &s);
    assert_string_equal(s.ns, "inner");
    assert_string_equal(s.name, "x");
    tf_spec_free(&s);
}

static void enabled_replicas_warnings_depend_on_the_controller(void **state)
{
    struct tf_spec s;
    object_ok(yaml_doc("kind: Pod\nmetadata:\n  name: x\n"
                       "  labels: {tensor-fusion.ai/enabled: 'true'}\n"
                       "  annotations: {tensor-fusion.ai/tflops-limit: '1', "
                       "tensor-fusion.ai/enabled-replicas: '1'}\n"),
              NULL, &s);
    assert_warning(&s, "tensor-fusion.ai/enabled-replicas", "bare Pod", NULL);
    tf_spec_free(&s);
    object_ok(yaml_doc("kind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: 2\n"
                       "  template:\n    metadata:\n"
                       "      labels: {tensor-fusion.ai/enabled: 'true'}\n"
                       "      annotations: {tensor-fusion.ai/tflops-limit: '1', "
                       "tensor-fusion.ai/enabled-replicas: '3'}\n"),
              NULL, &s);
    assert_warning(&s, "tensor-fusion.ai/enabled-replicas", "\"3\"", "2 replicas", NULL);
    tf_spec_free(&s);
}

static void unsupported_kinds_and_missing_templates_are_errors(void **state)
{
    char e[512];
    json_object *svc = yaml_doc("kind: Service\nmetadata: {name: s}\n");
    assert_false(tf_spec_kind_supported(svc));
    assert_null(tf_spec_pod_template(svc));
    assert_int_equal(object_err(svc, NULL, e), TF_ENOTSUP);
    assert_contains(e, "\"Service\"", "no pod template", NULL);
    assert_int_equal(object_err(yaml_doc("metadata: {name: s}\n"), NULL, e), TF_ENOTSUP);
    object_err(yaml_doc("kind: Deployment\nmetadata: {name: d}\nspec: {}\n"), NULL, e);
    assert_contains(e, "Deployment", "spec.template", "missing", NULL);
    object_err(yaml_doc("kind: CronJob\nmetadata: {name: d}\nspec: {jobTemplate: {}}\n"), NULL, e);
    assert_contains(e, "spec.jobTemplate.spec.template", NULL);
}

static void template_errors_say_where_the_key_is(void **state)
{
    char e[512];
    object_err(yaml_doc("kind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n"
                        "    metadata:\n      labels: {tensor-fusion.ai/enabled: 'true'}\n"
                        "      annotations: {tensor-fusion.ai/gpu-count: '0', "
                        "tensor-fusion.ai/tflops-limit: '1'}\n"),
               NULL, e);
    assert_contains(e, "spec.template: tensor-fusion.ai/gpu-count", "\"0\"", NULL);
}

static void caller_warnings_are_appended(void **state)
{
    struct tf_spec s;
    object_ok(yaml_doc("kind: Pod\nmetadata: {name: x}\n"), NULL, &s);
    assert_int_equal(tf_spec_add_warning(&s, "profile %s not found", "p"), 0);
    assert_warning(&s, "profile p not found", NULL);
    tf_spec_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_001_deployment_gives_the_expected_json),
        cmocka_unit_test(absent_values_are_null_never_omitted),
        cmocka_unit_test(disabled_pod_prints_enabled_false_and_nulls),
        cmocka_unit_test(percent_becomes_tflops_when_the_model_is_known),
        cmocka_unit_test(full_statefulset_json_has_every_field),
        cmocka_unit_test(seed_004_migration_json_shows_whole_gpus),
        cmocka_unit_test(every_controller_kind_is_read_through_its_template),
        cmocka_unit_test(controller_replicas_are_recorded_and_default_to_one),
        cmocka_unit_test(namespace_falls_back_to_the_template),
        cmocka_unit_test(enabled_replicas_warnings_depend_on_the_controller),
        cmocka_unit_test(unsupported_kinds_and_missing_templates_are_errors),
        cmocka_unit_test(template_errors_say_where_the_key_is),
        cmocka_unit_test(caller_warnings_are_appended),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
