/* SPDX-License-Identifier: Apache-2.0
 *
 * WorkloadProfile documents (seed 001) and the merge order annotation > profile > pool
 * defaults > built-in defaults.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "spec_test_util.h"

static const char seed_profile[] = "apiVersion: tensor-fusion.ai/v1\n"
                                   "kind: WorkloadProfile\n"
                                   "metadata:\n"
                                   "  name: example-workload-profile\n"
                                   "spec:\n"
                                   "  resources:\n"
                                   "    requests:\n"
                                   "      tflops: \"5\"\n"
                                   "      vram: \"3Gi\"\n"
                                   "    limits:\n"
                                   "      tflops: \"15\"\n"
                                   "      vram: \"3Gi\"\n"
                                   "  replicas: 1\n"
                                   "  isLocalGPU: true\n"
                                   "  poolName: default-pool\n"
                                   "  qos: medium\n"
                                   "  gpuCount: 1\n"
                                   "  gpuModel: A100\n"
                                   "  autoScalingConfig: {}\n";

static void profile_ok(const char *yaml, struct tf_profile *p)
{
    json_object *d = yaml_doc(yaml);
    char err[512] = "";
    int rc = tf_profile_parse(d, p, err, sizeof(err));
    json_object_put(d);
    if (rc)
        fail_msg("tf_profile_parse: %s", err);
}

static void profile_err(const char *yaml, char *err)
{
    json_object *d = yaml_doc(yaml);
    struct tf_profile p;
    int rc = tf_profile_parse(d, &p, err, 512);
    json_object_put(d);
    if (rc == 0)
        fail_msg("tf_profile_parse accepted:\n%s", yaml);
    assert_null(p.name); /* emptied on error */
    tf_profile_free(&p);
}

/* A profile document whose spec is SPEC_LINES (indented two spaces already). */
static void profile_spec_err(const char *spec_lines, char *err)
{
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "apiVersion: tensor-fusion.ai/v1\nkind: WorkloadProfile\nmetadata: {name: p}\n"
             "spec:\n%s",
             spec_lines);
    profile_err(buf, err);
}

static void seed_001_profile_is_read_in_full(void **state)
{
    struct tf_profile p;
    profile_ok(seed_profile, &p);
    assert_string_equal(p.name, "example-workload-profile");
    assert_null(p.ns);
    assert_int_equal(p.requests.tflops_milli, 5000);
    assert_int_equal(p.requests.vram_bytes, 3 * GiB);
    assert_int_equal(p.limits.tflops_milli, 15000);
    assert_true(p.limits.vram_set);
    assert_true(p.replicas_set);
    assert_int_equal(p.replicas, 1);
    assert_true(p.is_local_gpu_set);
    assert_true(p.is_local_gpu);
    assert_string_equal(p.pool, "default-pool");
    assert_int_equal(p.qos, TF_QOS_MEDIUM);
    assert_int_equal(p.gpu_count, 1);
    assert_string_equal(p.gpu_model, "A100");
    assert_false(p.autoscale_set);
    assert_int_equal(p.nwarnings, 0);
    tf_profile_free(&p);
    tf_profile_free(&p);
    tf_profile_free(NULL);
}

static void profile_quantities_accept_milli_numbers_and_null(void **state)
{
    struct tf_profile p;
    profile_ok("apiVersion: tensor-fusion.ai/v1\nkind: WorkloadProfile\nmetadata: {name: p}\n"
               "spec:\n  resources:\n    requests: {tflops: 500m, computePercent: null}\n"
               "    limits: {tflops: 2.5, vram: 1e9}\n",
               &p);
    assert_int_equal(p.requests.tflops_milli, 500);
    assert_false(p.requests.percent_set); /* null: not set */
    assert_int_equal(p.limits.tflops_milli, 2500);
    assert_int_equal(p.limits.vram_bytes, 1000000000);
    tf_profile_free(&p);
}

static void profile_fields_are_typed(void **state)
{
    struct tf_profile p;
    profile_ok("apiVersion: tensor-fusion.ai/v1\nkind: WorkloadProfile\n"
               "metadata: {name: p, namespace: team}\n"
               "spec:\n  resources:\n    requests: {tflops: 500m}\n"
               "    limits: {computePercent: 25.5, vram: 1073741824}\n"
               "  vendor: nvidia\n  isolation: hard\n  gpuIndices: [2, 0]\n"
               "  autoScalingConfig:\n    autoSetResources: {enable: true, targetResource: "
               "compute}\n    cronScalingRules: []\n",
               &p);
    assert_string_equal(p.ns, "team");
    assert_int_equal(p.requests.tflops_milli, 500);
    assert_int_equal(p.limits.percent_bp, 2550);
    assert_int_equal(p.limits.vram_bytes, GiB);
    assert_string_equal(p.vendor, "NVIDIA");
    assert_int_equal(p.isolation, TF_ISOLATION_HARD);
    assert_int_equal(p.ngpu_indices, 2);
    assert_int_equal(p.gpu_indices[0], 2);
    assert_true(p.autoscale_set);
    assert_true(p.autoscale);
    assert_int_equal(p.autoscale_target, TF_AUTOSCALE_COMPUTE);
    tf_profile_free(&p);
}

static void profile_errors_name_the_field(void **state)
{
    const char *cases[][2] = {
        {"  resources: {limits: {vram: 3GB}}\n", "spec.resources.limits.vram"},
        {"  resources: {requests: {tflops: '5', computePercent: '10'}}\n", "mutually exclusive"},
        {"  resources: {requests: {tflops: [5]}}\n", "spec.resources.requests.tflops"},
        {"  resources: {requests: {computePercent: '120'}}\n", "computePercent"},
        {"  resources: {requests: 5}\n", "spec.resources.requests"},
        {"  resources: [1]\n", "spec.resources"},
        {"  gpuCount: 0\n", "spec.gpuCount"},
        {"  gpuCount: '2'\n", "spec.gpuCount"},
        {"  qos: urgent\n", "spec.qos"},
        {"  isolation: strict\n", "spec.isolation"},
        {"  isLocalGPU: 'yes'\n", "spec.isLocalGPU"},
        {"  poolName: Bad_Pool\n", "spec.poolName"},
        {"  vendor: ''\n", "spec.vendor"},
        {"  gpuModel: ''\n", "spec.gpuModel"},
        {"  gpuIndices: [0, 0]\n", "twice"},
        {"  gpuIndices: [200]\n", "spec.gpuIndices"},
        {"  gpuIndices: '0,1'\n", "spec.gpuIndices"},
        {"  replicas: -1\n", "spec.replicas"},
        {"  autoScalingConfig: 1\n", "spec.autoScalingConfig"},
        {"  autoScalingConfig: {autoSetResources: {enable: 'yes'}}\n", "enable"},
        {"  autoScalingConfig: {autoSetResources: {targetResource: gpu}}\n", "targetResource"},
        {"  autoScalingConfig: {autoSetResources: 1}\n", "autoSetResources"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char e[512];
        profile_spec_err(cases[i][0], e);
        assert_contains(e, "WorkloadProfile p", cases[i][1], NULL);
    }
}

static void profile_document_shape_errors(void **state)
{
    char e[512];
    profile_err("apiVersion: tensor-fusion.ai/v1\nkind: Pod\nmetadata: {name: p}\n", e);
    assert_contains(e, "kind", "WorkloadProfile", NULL);
    profile_err("apiVersion: v1\nkind: WorkloadProfile\nmetadata: {name: p}\n", e);
    assert_contains(e, "apiVersion", NULL);
    profile_err("apiVersion: tensor-fusion.ai/v1\nkind: WorkloadProfile\nmetadata: {}\n", e);
    assert_contains(e, "metadata.name", NULL);
    profile_err("apiVersion: tensor-fusion.ai/v1\nkind: WorkloadProfile\nmetadata: {name: p}\n"
                "spec: [1]\n",
                e);
    assert_contains(e, "spec", "map", NULL);
}

static void profile_unknown_fields_warn(void **state)
{
    struct tf_profile p;
    profile_ok("apiVersion: tensor-fusion.ai/v2\nkind: WorkloadProfile\nmetadata: {name: p}\n"
               "spec:\n  gpuCout: 2\n  resources: {limits: {tflop: '1'}, burst: {}}\n"
               "  nodeAffinity: {}\n",
               &p);
    assert_int_equal(p.nwarnings, 4);
    assert_contains(p.warnings[0], "v2", NULL);
    assert_contains(p.warnings[1], "spec.gpuCout", "unknown", NULL);
    assert_contains(p.warnings[2], "spec.resources.limits.tflop", NULL);
    assert_contains(p.warnings[3], "spec.resources.burst", NULL);
    /* The pod's spec carries the profile's warnings. */
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'"), &p, NULL, &s);
    assert_warning(&s, "spec.gpuCout", NULL);
    tf_spec_free(&s);
    tf_profile_free(&p);
}

static void seed_deployment_with_seed_profile_merges_annotations_over_profile(void **state)
{
    struct tf_profile p;
    profile_ok(seed_profile, &p);
    struct tf_spec s;
    object_ok(yaml_doc("kind: Deployment\napiVersion: apps/v1\nmetadata: {}\nspec:\n"
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
                       "        tensor-fusion.ai/gpu-count: '1'\n    spec: {}\n"),
              &p, &s);
    /* Annotations win every resource... */
    assert_int_equal(s.requests.tflops_milli, 10000);
    assert_int_equal(s.limits.tflops_milli, 20000);
    assert_int_equal(s.requests.vram_bytes, 4 * GiB);
    /* ...the profile fills what they leave out. */
    assert_string_equal(s.pool, "default-pool");
    assert_string_equal(s.gpu_model, "A100");
    assert_string_equal(s.vendor, "NVIDIA");
    assert_string_equal(s.workload_profile, "default-profile");
    assert_warning(&s, "default-profile", "example-workload-profile", NULL);
    tf_spec_free(&s);
    tf_profile_free(&p);
}

static void profile_supplies_what_annotations_do_not_say(void **state)
{
    struct tf_profile p;
    profile_ok(seed_profile, &p);
    struct tf_spec s;
    spec_ok(tf_pod("workload-profile: example-workload-profile"), &p, NULL, &s);
    assert_int_equal(s.requests.tflops_milli, 5000);
    assert_int_equal(s.limits.tflops_milli, 15000);
    assert_int_equal(s.requests.vram_bytes, 3 * GiB);
    assert_int_equal(s.qos, TF_QOS_MEDIUM);
    assert_int_equal(s.gpu_count, 1);
    assert_true(s.is_local_gpu);
    /* The seed's replicas: 1 sets no worker count for a local GPU workload: said, not silent. */
    assert_true(s.has_worker_replicas);
    assert_int_equal(s.nwarnings, 1);
    assert_warning(&s, "spec.replicas (1)", "no effect in local GPU mode", NULL);
    tf_spec_free(&s);
    /* A profile given without the annotation is recorded as the one applied. */
    spec_ok(tf_pod(""), &p, NULL, &s);
    assert_string_equal(s.workload_profile, "example-workload-profile");
    tf_spec_free(&s);
    tf_profile_free(&p);
}

static void annotation_percent_replaces_profile_tflops_per_side(void **state)
{
    struct tf_profile p;
    profile_ok(seed_profile, &p);
    struct tf_spec s;
    spec_ok(tf_pod("compute-percent-request: '2'\nvram-limit: 4Gi"), &p, NULL, &s);
    assert_true(s.requests.percent_set);
    assert_false(s.requests.tflops_set);
    assert_int_equal(s.requests.percent_bp, 200);
    assert_int_equal(s.limits.tflops_milli, 15000); /* from the profile */
    assert_int_equal(s.limits.vram_bytes, 4 * GiB);
    assert_int_equal(s.requests.vram_bytes, 3 * GiB);
    tf_spec_free(&s);
    /* Merged values are still compared: 3Gi request vs a 2Gi annotation limit. */
    spec_ok(tf_pod("vram-limit: 2Gi"), &p, NULL, &s);
    assert_warning(&s, "WorkloadProfile spec.resources.requests.vram",
                   "tensor-fusion.ai/vram-limit", "above", NULL);
    tf_spec_free(&s);
    tf_profile_free(&p);
}

static void profile_values_yield_to_annotations_for_every_field(void **state)
{
    struct tf_profile p;
    profile_ok("apiVersion: tensor-fusion.ai/v1\nkind: WorkloadProfile\nmetadata: {name: p}\n"
               "spec:\n  qos: low\n  isolation: hard\n  isLocalGPU: false\n  poolName: pa\n"
               "  gpuCount: 4\n  gpuModel: H100\n  gpuIndices: [0, 1, 2, 3]\n"
               "  autoScalingConfig: {autoSetResources: {enable: true, targetResource: vram}}\n"
               "  resources: {limits: {tflops: '100'}}\n",
               &p);
    struct tf_spec s;
    spec_ok(tf_pod(""), &p, NULL, &s);
    assert_int_equal(s.qos, TF_QOS_LOW);
    assert_int_equal(s.isolation, TF_ISOLATION_HARD);
    assert_false(s.is_local_gpu);
    assert_string_equal(s.pool, "pa");
    assert_int_equal(s.gpu_count, 4);
    assert_int_equal(s.ngpu_indices, 4);
    assert_true(s.autoscale);
    assert_int_equal(s.autoscale_target, TF_AUTOSCALE_VRAM);
    tf_spec_free(&s);
    spec_ok(tf_pod("qos: critical\nisolation: soft\nis-local-gpu: 'true'\ngpupool: pb\n"
                   "gpu-count: '1'\ngpu-model: L4\ngpu-indices: '5'\nautoscale: 'false'\n"
                   "tflops-limit: '10'"),
            &p, NULL, &s);
    assert_int_equal(s.qos, TF_QOS_CRITICAL);
    assert_int_equal(s.isolation, TF_ISOLATION_SOFT);
    assert_true(s.is_local_gpu);
    assert_string_equal(s.pool, "pb");
    assert_int_equal(s.gpu_count, 1);
    assert_string_equal(s.gpu_model, "L4");
    assert_int_equal(s.ngpu_indices, 1);
    assert_int_equal(s.gpu_indices[0], 5);
    assert_false(s.autoscale);
    assert_int_equal(s.limits.tflops_milli, 10000);
    tf_spec_free(&s);
    tf_profile_free(&p);
}

static void profile_gpu_indices_override_the_count(void **state)
{
    struct tf_profile p;
    profile_ok("apiVersion: tensor-fusion.ai/v1\nkind: WorkloadProfile\nmetadata: {name: p}\n"
               "spec: {gpuIndices: [0], resources: {limits: {tflops: '1'}}}\n",
               &p);
    struct tf_spec s;
    spec_ok(tf_pod("gpu-count: '2'"), &p, NULL, &s);
    assert_int_equal(s.gpu_count, 1);
    assert_warning(&s, "WorkloadProfile spec.gpuIndices", "1 GPUs", NULL);
    tf_spec_free(&s);
    tf_profile_free(&p);
}

static void profile_upstream_spellings_are_read(void **state)
{
    struct tf_profile p;
    profile_ok("apiVersion: tensor-fusion.ai/v1\nkind: WorkloadProfile\nmetadata: {name: p}\n"
               "spec:\n  vendor: MooreThreads\n  isolation: hard\n"
               "  resources: {requests: {compute: '20'}, limits: {compute: '40'}}\n"
               "  gangScheduling: {minMembers: 3, timeout: 5m}\n",
               &p);
    assert_string_equal(p.vendor, "MThreads");
    assert_true(p.requests.percent_set);
    assert_int_equal(p.limits.percent_bp, 4000);
    assert_true(p.gang);
    assert_int_equal(p.gang_min_members, 3);
    assert_int_equal(p.gang_timeout_ms, 300000);
    tf_profile_free(&p);
    char e[512];
    profile_spec_err("  gangScheduling: {minMembers: 1}\n", e);
    assert_contains(e, "spec.gangScheduling.minMembers", "2", NULL);
    profile_spec_err("  gangScheduling: {timeout: soon}\n", e);
    assert_contains(e, "spec.gangScheduling.timeout", "\"soon\"", NULL);
}

static void profile_vendor_must_match_the_model(void **state)
{
    struct tf_profile p;
    profile_ok("apiVersion: tensor-fusion.ai/v1\nkind: WorkloadProfile\nmetadata: {name: p}\n"
               "spec: {vendor: AMD, isolation: hard, resources: {limits: {tflops: '1'}}}\n",
               &p);
    char e[512];
    spec_err(tf_pod("gpu-model: H100"), &p, NULL, e);
    assert_contains(e, "WorkloadProfile spec.vendor", "tensor-fusion.ai/gpu-model", NULL);
    struct tf_spec s;
    spec_ok(tf_pod(""), &p, NULL, &s);
    assert_string_equal(s.vendor, "AMD");
    tf_spec_free(&s);
    tf_profile_free(&p);
}

static void pool_defaults_come_last(void **state)
{
    struct tf_pool_defaults pool = {
        .pool_name = "pool-x",
        .qos = TF_QOS_CRITICAL,
        .isolation = TF_ISOLATION_HARD,
        .requests = {.tflops_milli = 1000, .tflops_set = true, .vram_bytes = GiB, .vram_set = true},
        .limits = {.tflops_milli = 2000, .tflops_set = true},
    };
    struct tf_spec s;
    spec_ok(tf_pod(""), NULL, &pool, &s);
    assert_string_equal(s.pool, "pool-x");
    assert_int_equal(s.isolation, TF_ISOLATION_HARD);
    assert_int_equal(s.qos, TF_QOS_CRITICAL); /* requests != limits: pool QoS */
    assert_int_equal(s.requests.tflops_milli, 1000);
    assert_int_equal(s.limits.tflops_milli, 2000);
    assert_false(s.limits.vram_set); /* no limit is derived from a request */
    tf_spec_free(&s);
    /* Profile beats pool for the pool name and resources. */
    struct tf_profile p;
    profile_ok("apiVersion: tensor-fusion.ai/v1\nkind: WorkloadProfile\nmetadata: {name: p}\n"
               "spec: {poolName: pool-y, resources: {limits: {tflops: '3'}}}\n",
               &p);
    spec_ok(tf_pod(""), &p, &pool, &s);
    assert_string_equal(s.pool, "pool-y");
    assert_int_equal(s.limits.tflops_milli, 3000);
    assert_int_equal(s.requests.tflops_milli, 1000);
    tf_spec_free(&s);
    tf_profile_free(&p);
    /* Contradictory pool defaults are a caller bug, reported as such. */
    struct tf_pool_defaults bad = {
        .limits = {.tflops_set = true, .percent_set = true, .tflops_milli = 1, .percent_bp = 1}};
    char e[512];
    spec_err(tf_pod(""), NULL, &bad, e);
    assert_contains(e, "pool defaults", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_001_profile_is_read_in_full),
        cmocka_unit_test(profile_quantities_accept_milli_numbers_and_null),
        cmocka_unit_test(profile_fields_are_typed),
        cmocka_unit_test(profile_errors_name_the_field),
        cmocka_unit_test(profile_document_shape_errors),
        cmocka_unit_test(profile_unknown_fields_warn),
        cmocka_unit_test(seed_deployment_with_seed_profile_merges_annotations_over_profile),
        cmocka_unit_test(profile_supplies_what_annotations_do_not_say),
        cmocka_unit_test(annotation_percent_replaces_profile_tflops_per_side),
        cmocka_unit_test(profile_values_yield_to_annotations_for_every_field),
        cmocka_unit_test(profile_gpu_indices_override_the_count),
        cmocka_unit_test(profile_upstream_spellings_are_read),
        cmocka_unit_test(profile_vendor_must_match_the_model),
        cmocka_unit_test(pool_defaults_come_last),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
