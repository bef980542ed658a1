/* SPDX-License-Identifier: Apache-2.0
 *
 * What upstream TensorFusion's objects and names mean to the workload spec: cluster defaults
 * (GPUPool, GPUResourceQuota, ProviderConfig: core/defaults.h), upstream model names, the gang
 * annotations and Go durations.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "core/defaults.h"
#include "core/gang.h"
#include "core/gpu_models.h"
#include "core/quantity.h"
#include "spec_test_util.h"

/* ---- cluster defaults ---------------------------------------------------------------------- */

static void pool_defaults_and_the_default_pool_annotation_are_read(void **state)
{
    json_object *pool = yaml_doc("kind: GPUPool\nmetadata:\n  name: tf-shared\n  annotations: "
                                 "{tensor-fusion.ai/is-default-pool: 'true'}\n"
                                 "spec:\n  qosConfig: {defaultQoS: low}\n"
                                 "  nodeManagerConfig: {defaultIsolationMode: hard, "
                                 "defaultVendor: NVIDIA}\n  defaultUsingLocalGPU: false\n");
    assert_true(tf_pool_is_default(pool));
    struct tf_pool_defaults pd;
    memset(&pd, 0, sizeof(pd));
    tf_defaults_from_pool(pool, &pd);
    assert_string_equal(pd.pool_name, "tf-shared");
    assert_int_equal(pd.qos, TF_QOS_LOW);
    assert_int_equal(pd.isolation, TF_ISOLATION_HARD);
    assert_string_equal(pd.vendor, "NVIDIA");
    assert_true(pd.is_local_gpu_set);
    assert_false(pd.is_local_gpu);
    struct tf_spec s;
    spec_ok(tf_pod("tflops-request: '1'\ntflops-limit: '2'"), NULL, &pd, &s);
    assert_string_equal(s.pool, "tf-shared");
    assert_int_equal(s.qos, TF_QOS_LOW);
    assert_string_equal(s.vendor, "NVIDIA");
    assert_false(s.is_local_gpu);
    tf_spec_free(&s);
    json_object_put(pool);
    pool = yaml_doc("kind: GPUPool\nmetadata:\n  name: p\n  annotations: "
                    "{tensor-fusion.ai/is-default-pool: 'false'}\n");
    assert_false(tf_pool_is_default(pool));
    json_object_put(pool);
}

static void quota_defaults_fill_what_the_pod_leaves_unset(void **state)
{
    json_object *q = yaml_doc("kind: GPUResourceQuota\nmetadata: {name: q, namespace: ns}\n"
                              "spec:\n  single:\n    defaultRequests: {tflops: '5', vram: 1Gi}\n"
                              "    defaultLimits: {tflops: '10', vram: 2Gi}\n");
    struct tf_pool_defaults pd;
    memset(&pd, 0, sizeof(pd));
    char err[256];
    assert_int_equal(tf_defaults_from_quota(q, &pd, err, sizeof(err)), 0);
    struct tf_spec s;
    spec_ok(tf_pod("vram-limit: 4Gi"), NULL, &pd, &s);
    assert_int_equal(s.requests.tflops_milli, 5000);
    assert_int_equal(s.requests.vram_bytes, GiB);
    assert_int_equal(s.limits.tflops_milli, 10000);
    assert_int_equal(s.limits.vram_bytes, 4 * GiB);
    tf_spec_free(&s);
    json_object_put(q);
    q = yaml_doc("kind: GPUResourceQuota\nmetadata: {name: q}\n"
                 "spec: {single: {defaultLimits: {vram: 2GB}}}\n");
    memset(&pd, 0, sizeof(pd));
    assert_int_equal(tf_defaults_from_quota(q, &pd, err, sizeof(err)), TF_EPARSE);
    assert_contains(err, "GPUResourceQuota q", "spec.single.defaultLimits.vram", "2GB", NULL);
    json_object_put(q);
}

static void provider_configs_name_the_native_resources_and_vendors(void **state)
{
    json_object *arr = json_object_new_array();
    json_object_array_add(arr, yaml_doc("kind: ProviderConfig\nmetadata: {name: amd}\n"
                                        "spec: {vendor: amd, inUseResourceNames: [amd.com/gpu, "
                                        "'amd.com/xcp-*']}\n"));
    json_object_array_add(
        arr, yaml_doc("kind: ProviderConfig\nmetadata: {name: nv}\nspec:\n  vendor: NVIDIA\n"
                      "  inUseResourceNames: [nvidia.com/gpu]\n"
                      "  devicePluginDetection: {resourceNamePrefixes: [nvidia.com/mig]}\n"));
    json_object_array_add(arr, yaml_doc("kind: ProviderConfig\nmetadata: {name: none}\n"
                                        "spec: {inUseResourceNames: [x.com/gpu]}\n"));
    struct tf_native_resource *n = NULL;
    size_t nn = 0;
    assert_int_equal(tf_defaults_native(arr, &n, &nn), 0);
    assert_int_equal(nn, 4); /* a provider without a vendor gives nothing */
    const struct tf_native_resource *r = tf_native_resource_find(n, nn, "amd.com/gpu");
    assert_non_null(r);
    assert_string_equal(r->vendor, "AMD");
    assert_non_null(tf_native_resource_find(n, nn, "amd.com/xcp-1"));
    assert_null(tf_native_resource_find(n, nn, "amd.com/xcp-"));
    assert_non_null(tf_native_resource_find(n, nn, "nvidia.com/mig-1g.10gb"));
    assert_null(tf_native_resource_find(n, nn, "x.com/gpu"));
    /* A pod asking for one is taken over, with the resource's vendor. */
    struct tf_pool_defaults pd;
    memset(&pd, 0, sizeof(pd));
    pd.native = n;
    pd.nnative = nn;
    json_object *pod = yaml_doc("metadata:\n  labels: {tensor-fusion.ai/enabled: 'true'}\n"
                                "  annotations: {tensor-fusion.ai/isolation: hard}\n"
                                "spec:\n  containers:\n  - name: app\n    resources:\n"
                                "      limits: {amd.com/gpu: 2, nvidia.com/gpu: 1}\n");
    struct tf_spec s;
    spec_ok(pod, NULL, &pd, &s);
    assert_int_equal(s.gpu_count, 3);
    assert_string_equal(s.vendor, "AMD");
    assert_true(s.containers[0].migrated);
    assert_int_equal(s.containers[0].nnative_names, 2);
    tf_spec_free(&s);
    tf_defaults_native_free(n, nn);
    json_object_put(arr);
    /* Nothing usable: the default (NVIDIA's gpu and mig-*). */
    assert_int_equal(tf_defaults_native(NULL, &n, &nn), 0);
    assert_null(n);
    assert_non_null(tf_native_resource_find(tf_native_resources_default, 2, "nvidia.com/mig-3g"));
    assert_null(tf_native_resource_find(tf_native_resources_default, 2, "amd.com/gpu"));
}

/* ---- model names ---------------------------------------------------------------------------- */

static void upstream_model_names_name_table_entries(void **state)
{
    const char *cases[][2] = {
        {"A100_SXM_80G", "A100-80GB"},
        {"A100_PCIe_40G", "A100-40GB"},
        {"H100_SXM", "H100"},
        {"H100_PCIe", "H100-PCIe"},
        {"B200_SXM", "B200"},
        {"RTX_5090", "RTX5090"},
        {"L40S", "L40S"},
        {"NVIDIA A100-SXM4-80GB", "A100-80GB"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct tf_gpu_model *m = tf_gpu_model_find(cases[i][0]);
        assert_non_null(m);
        assert_string_equal(m->name, cases[i][1]);
        assert_true(tf_gpu_model_matches(m, cases[i][0]));
    }
    /* An exact name matches its board only; the family still matches all of them. */
    assert_false(tf_gpu_model_matches(tf_gpu_model_find("A100-40GB"), "A100_SXM_80G"));
    assert_true(tf_gpu_model_matches(tf_gpu_model_find("A100_SXM_80G"), "A100"));
    assert_null(tf_gpu_model_find("RTX3090"));
}

/* ---- gang scheduling ------------------------------------------------------------------------ */

static void gang_annotations_are_read_as_upstream_does(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'\ngang-enabled: 'true'\ngang-min-members: '3'\n"
                   "gang-timeout: 1m30s"),
            NULL, NULL, &s);
    assert_true(s.gang);
    assert_int_equal(s.gang_min_members, 3);
    assert_int_equal(s.gang_timeout_ms, 90000);
    assert_int_equal(s.nwarnings, 0);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '1'\ngang-enabled: 'true'\ngang-timeout: '0s'"), NULL, NULL, &s);
    assert_true(s.gang);
    assert_int_equal(s.gang_min_members, 0);
    assert_int_equal(s.gang_timeout_ms, 0);
    tf_spec_free(&s);
    /* The workload guide's form: gang-min-members alone. */
    spec_ok(tf_pod("tflops-limit: '1'\ngang-min-members: '2'"), NULL, NULL, &s);
    assert_true(s.gang);
    assert_warning(&s, "tensor-fusion.ai/gang-min-members", "tensor-fusion.ai/gang-enabled", NULL);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '1'\ngang-enabled: 'false'\ngang-min-members: '4'"), NULL, NULL,
            &s);
    assert_false(s.gang);
    assert_warning(&s, "ignored", NULL);
    tf_spec_free(&s);
    ERR_CASE("tflops-limit: '1'\ngang-enabled: 'true'\ngang-min-members: '1'",
             "tensor-fusion.ai/gang-min-members", "at least 2");
    ERR_CASE("tflops-limit: '1'\ngang-enabled: 'true'\ngang-min-members: '-3'",
             "tensor-fusion.ai/gang-min-members");
    ERR_CASE("tflops-limit: '1'\ngang-enabled: 'true'\ngang-timeout: 5 minutes",
             "tensor-fusion.ai/gang-timeout", "duration");
    ERR_CASE("tflops-limit: '1'\ngang-enabled: maybe", "tensor-fusion.ai/gang-enabled");
}

static void gang_size_follows_the_workload_replicas(void **state)
{
    int32_t d = 0, r = 0;
    char err[256];
    assert_int_equal(tf_gang_quorum(0, 4, true, &d, &r, err, sizeof(err)), 0);
    assert_int_equal(d, 4);
    assert_int_equal(r, 4);
    assert_int_equal(tf_gang_quorum(3, 4, true, &d, &r, err, sizeof(err)), 0);
    assert_int_equal(r, 3);
    assert_int_equal(tf_gang_quorum(3, 0, false, &d, &r, err, sizeof(err)), 0);
    assert_int_equal(d, 3);
    assert_int_equal(r, 3);
    assert_int_equal(tf_gang_quorum(0, 1, true, &d, &r, err, sizeof(err)), TF_EINVAL);
    assert_contains(err, "at least 2 replicas", NULL);
    assert_int_equal(tf_gang_quorum(5, 4, true, &d, &r, err, sizeof(err)), TF_EINVAL);
    assert_contains(err, "\"5\"", "4 replicas", NULL);
    assert_int_equal(tf_gang_quorum(0, 0, false, &d, &r, err, sizeof(err)), TF_EINVAL);
    /* Through a manifest: the Deployment's replicas. */
    struct tf_spec s;
    object_ok(yaml_doc("kind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 4\n  template:\n"
                       "    metadata:\n      labels: {tensor-fusion.ai/enabled: 'true'}\n"
                       "      annotations: {tensor-fusion.ai/tflops-limit: '1', "
                       "tensor-fusion.ai/gang-enabled: 'true', "
                       "tensor-fusion.ai/gang-min-members: '3'}\n"),
              NULL, &s);
    assert_int_equal(s.gang_desired, 4);
    assert_int_equal(s.gang_required, 3);
    tf_spec_free(&s);
    char e[512];
    object_err(yaml_doc("kind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n"
                        "    metadata:\n      labels: {tensor-fusion.ai/enabled: 'true'}\n"
                        "      annotations: {tensor-fusion.ai/tflops-limit: '1', "
                        "tensor-fusion.ai/gang-enabled: 'true'}\n"),
               NULL, e);
    assert_contains(e, "at least 2 replicas", "1", NULL);
    object_ok(yaml_doc("kind: Job\nmetadata: {name: j}\nspec:\n  parallelism: 8\n  template:\n"
                       "    metadata:\n      labels: {tensor-fusion.ai/enabled: 'true'}\n"
                       "      annotations: {tensor-fusion.ai/tflops-limit: '1', "
                       "tensor-fusion.ai/gang-enabled: 'true'}\n"),
              NULL, &s);
    assert_int_equal(s.gang_desired, 8);
    assert_int_equal(s.gang_required, 8);
    tf_spec_free(&s);
}

static void go_durations_parse_as_time_ParseDuration(void **state)
{
    const struct {
        const char *s;
        int64_t ms;
    } ok[] = {{"0", 0},          {"30s", 30000}, {"5m", 300000},     {"1h30m", 5400000},
              {"1.5h", 5400000}, {"500ms", 500}, {"1ns", 1},         {"2\xc2\xb5s", 1},
              {"+10s", 10000},   {".5s", 500},   {"1h0m0s", 3600000}};
    char err[256];
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t ms = -1;
        assert_int_equal(tf_go_duration_ms(ok[i].s, &ms, "k", err, sizeof(err)), 0);
        assert_int_equal(ms, ok[i].ms);
    }
    const char *bad[] = {"", "5", "5 m", "-5s", "5d", "s", "1e3s", "99999999999999999999h"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t ms;
        assert_int_equal(tf_go_duration_ms(bad[i], &ms, "key", err, sizeof(err)), TF_EINVAL);
        assert_contains(err, "key", "duration", NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pool_defaults_and_the_default_pool_annotation_are_read),
        cmocka_unit_test(quota_defaults_fill_what_the_pod_leaves_unset),
        cmocka_unit_test(provider_configs_name_the_native_resources_and_vendors),
        cmocka_unit_test(upstream_model_names_name_table_entries),
        cmocka_unit_test(gang_annotations_are_read_as_upstream_does),
        cmocka_unit_test(gang_size_follows_the_workload_replicas),
        cmocka_unit_test(go_durations_parse_as_time_ParseDuration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
