/* SPDX-License-Identifier: Apache-2.0
 *
 * The workload model from pod annotations and labels (seed 001 tables): every annotation,
 * every default and every error, named for what the user wrote.
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

/* ---- requests and limits ------------------------------------------------------------------- */

static void seed_001_annotations_give_tflops_and_bytes(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("inject-container: app\ntflops-limit: '20'\ntflops-request: '10'\n"
                   "vram-limit: 4Gi\nvram-request: 4Gi\nqos: medium\n"
                   "workload-profile: default-profile\nis-local-gpu: 'true'\ngpu-count: '1'"),
            NULL, NULL, &s);
    assert_true(s.enabled);
    assert_string_equal(s.name, "t");
    assert_string_equal(s.ns, "ns");
    assert_true(s.requests.tflops_set);
    assert_int_equal(s.requests.tflops_milli, 10000);
    assert_int_equal(s.limits.tflops_milli, 20000);
    assert_int_equal(s.requests.vram_bytes, 4 * GiB);
    assert_int_equal(s.limits.vram_bytes, 4 * GiB);
    assert_false(s.requests.percent_set);
    assert_int_equal(s.qos, TF_QOS_MEDIUM);
    assert_int_equal(s.isolation, TF_ISOLATION_SOFT);
    assert_true(s.is_local_gpu);
    assert_int_equal(s.gpu_count, 1);
    assert_string_equal(s.workload_profile, "default-profile");
    assert_int_equal(s.ncontainers, 1);
    assert_string_equal(s.containers[0].name, "app");
    assert_int_equal(s.nwarnings, 0);
    tf_spec_free(&s);
    tf_spec_free(&s); /* freeing twice is harmless */
}

static void fractional_tflops_and_milli_suffix_are_exact(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-request: '0.5'\ntflops-limit: 1500m\nvram-limit: 1.5Gi"), NULL, NULL,
            &s);
    assert_int_equal(s.requests.tflops_milli, 500);
    assert_int_equal(s.limits.tflops_milli, 1500);
    assert_int_equal(s.limits.vram_bytes, 3 * GiB / 2);
    tf_spec_free(&s);
}

static void missing_request_inherits_the_limit(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '20'\nvram-limit: 4Gi"), NULL, NULL, &s);
    assert_true(s.requests.tflops_set);
    assert_int_equal(s.requests.tflops_milli, 20000);
    assert_int_equal(s.requests.vram_bytes, 4 * GiB);
    tf_spec_free(&s);
    spec_ok(tf_pod("compute-percent-limit: '30'"), NULL, NULL, &s);
    assert_true(s.requests.percent_set);
    assert_int_equal(s.requests.percent_bp, 3000);
    assert_false(s.requests.vram_set);
    tf_spec_free(&s);
}

static void missing_limit_stays_unset_as_upstream_does(void **state)
{
    /* Upstream derives no limit from a request: a request alone reserves, caps nothing. */
    struct tf_spec s;
    spec_ok(tf_pod("tflops-request: '10'\nvram-request: 2Gi"), NULL, NULL, &s);
    assert_int_equal(s.requests.tflops_milli, 10000);
    assert_int_equal(s.requests.vram_bytes, 2 * GiB);
    assert_false(s.limits.tflops_set);
    assert_false(s.limits.percent_set);
    assert_false(s.limits.vram_set);
    assert_int_equal(s.nwarnings, 0);
    tf_spec_free(&s);
}

static void zero_values_mean_not_set_as_upstream_does(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-request: '0'\ntflops-limit: '20'\nvram-request: 1Gi"), NULL, NULL, &s);
    assert_int_equal(s.requests.tflops_milli, 20000); /* inherited from the limit */
    assert_warning(&s, "tensor-fusion.ai/tflops-request", "zero", "not set", NULL);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '0'\ntflops-request: '5'\nvram-limit: '0'\nvram-request: 1Gi"),
            NULL, NULL, &s);
    assert_false(s.limits.tflops_set);
    assert_false(s.limits.vram_set);
    assert_warning(&s, "tensor-fusion.ai/tflops-limit", "zero", NULL);
    assert_warning(&s, "tensor-fusion.ai/vram-limit", "zero", NULL);
    tf_spec_free(&s);
}

static void request_above_limit_is_admitted_with_a_warning_naming_both_keys(void **state)
{
    /* Upstream's own getting-started Deployment asks tflops-request 20, tflops-limit 10. */
    struct tf_spec s;
    spec_ok(tf_pod("tflops-request: '20'\ntflops-limit: '10'\nvram-request: 8Gi\nvram-limit: 4Gi"),
            NULL, NULL, &s);
    assert_int_equal(s.requests.tflops_milli, 20000);
    assert_int_equal(s.limits.tflops_milli, 10000);
    assert_warning(&s, "tensor-fusion.ai/tflops-request", "tensor-fusion.ai/tflops-limit", "\"20\"",
                   "\"10\"", "above", NULL);
    assert_warning(&s, "tensor-fusion.ai/vram-request", "tensor-fusion.ai/vram-limit", "8Gi", "4Gi",
                   NULL);
    tf_spec_free(&s);
    spec_ok(tf_pod("compute-percent-request: '60'\ncompute-percent-limit: '50.5'"), NULL, NULL, &s);
    assert_warning(&s, "tensor-fusion.ai/compute-percent-request", "\"60\"", "\"50.5\"", NULL);
    tf_spec_free(&s);
}

static void request_equal_to_limit_is_accepted(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-request: '20'\ntflops-limit: 20000m\nvram-request: 4Gi\n"
                   "vram-limit: '4294967296'"),
            NULL, NULL, &s);
    assert_int_equal(s.requests.tflops_milli, s.limits.tflops_milli);
    tf_spec_free(&s);
}

static void tflops_win_over_percent_as_upstream_does(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-request: '10'\ncompute-percent-request: '10'"), NULL, NULL, &s);
    assert_true(s.requests.tflops_set);
    assert_false(s.requests.percent_set);
    assert_warning(&s, "tensor-fusion.ai/compute-percent-request", "ignored",
                   "tensor-fusion.ai/tflops-request", NULL);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '10'\ncompute-percent-limit: '10'"), NULL, NULL, &s);
    assert_true(s.limits.tflops_set);
    assert_false(s.limits.percent_set);
    tf_spec_free(&s);
    /* A TFLOPS limit also overrides a percent request; the request then inherits the limit. */
    spec_ok(tf_pod("tflops-limit: '30'\ncompute-percent-request: '50'"), NULL, NULL, &s);
    assert_true(s.requests.tflops_set);
    assert_int_equal(s.requests.tflops_milli, 30000);
    assert_false(s.requests.percent_set);
    tf_spec_free(&s);
    /* Garbage is still garbage. */
    ERR_CASE("tflops-request: '10'\ncompute-percent-request: 'lots'",
             "tensor-fusion.ai/compute-percent-request", "\"lots\"");
}

static void tflops_request_with_percent_limit_is_allowed(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("gpu-model: A100\ntflops-request: '100'\ncompute-percent-limit: '50'"), NULL,
            NULL, &s);
    assert_true(s.requests.tflops_set);
    assert_true(s.limits.percent_set);
    assert_int_equal(s.limits.percent_bp, 5000);
    assert_int_equal(tf_spec_res_tflops_on(&s.limits, s.model->tflops_milli), 156000);
    tf_spec_free(&s);
}

static void mixed_units_are_compared_through_the_gpu_model(void **state)
{
    /* 50 % of an A100 is 156 TFLOPS: a 200 TFLOPS request is above it. */
    struct tf_spec s;
    spec_ok(tf_pod("gpu-model: A100\ntflops-request: '200'\ncompute-percent-limit: '50'"), NULL,
            NULL, &s);
    assert_warning(&s, "tensor-fusion.ai/tflops-request", "tensor-fusion.ai/compute-percent-limit",
                   "above", NULL);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-request: '200'\ncompute-percent-limit: '50'"), NULL, NULL, &s);
    assert_warning(&s, "different units", "gpu-model", NULL);
    tf_spec_free(&s);
}

static void compute_percent_above_100_or_too_precise_is_rejected(void **state)
{
    ERR_CASE("compute-percent-limit: '101'", "tensor-fusion.ai/compute-percent-limit", "101",
             "between 0 and 100");
    ERR_CASE("compute-percent-request: '12.345'", "tensor-fusion.ai/compute-percent-request",
             "two decimals");
}

static void zero_limit_alone_requests_nothing_and_is_rejected(void **state)
{
    ERR_CASE("tflops-limit: '0'", "no GPU resources requested");
}

static void garbage_quantities_are_rejected_naming_key_and_value(void **state)
{
    ERR_CASE("vram-limit: 4GB", "tensor-fusion.ai/vram-limit", "\"4GB\"", "unknown suffix");
    ERR_CASE("vram-request: '-1Gi'", "tensor-fusion.ai/vram-request", "negative");
    ERR_CASE("tflops-limit: 10x", "tensor-fusion.ai/tflops-limit", "\"10x\"");
    ERR_CASE("vram-limit: 500m", "tensor-fusion.ai/vram-limit", "whole number of bytes");
    ERR_CASE("tflops-request: '0.0001'", "tensor-fusion.ai/tflops-request", "0.001");
    ERR_CASE("vram-limit: 99999999Ei", "tensor-fusion.ai/vram-limit", "8Ei");
}

static void request_beyond_one_gpu_of_the_model_warns(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("gpu-model: A100\ntflops-request: '400'"), NULL, NULL, &s);
    assert_warning(&s, "tensor-fusion.ai/tflops-request", "A100", "312", NULL);
    tf_spec_free(&s);
    /* A100 comes in 40 and 80 GB: 80Gi fits, 81Gi does not. */
    spec_ok(tf_pod("gpu-model: A100\nvram-request: 80Gi"), NULL, NULL, &s);
    assert_int_equal(s.nwarnings, 0);
    tf_spec_free(&s);
    spec_ok(tf_pod("gpu-model: A100\nvram-request: 81Gi"), NULL, NULL, &s);
    assert_warning(&s, "tensor-fusion.ai/vram-request", "A100", "80Gi", NULL);
    tf_spec_free(&s);
}

static void limit_above_model_capacity_warns_uncapped(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("gpu-model: L4\ntflops-request: '50'\ntflops-limit: '500'"), NULL, NULL, &s);
    assert_warning(&s, "tensor-fusion.ai/tflops-limit", "uncapped", NULL);
    tf_spec_free(&s);
}

static void pod_without_any_resources_is_rejected(void **state)
{
    ERR_CASE("qos: low", "no GPU resources", "tensor-fusion.ai/tflops-request",
             "tensor-fusion.ai/vram-request");
}

static void autoscale_without_resources_is_rejected_as_upstream_does(void **state)
{
    ERR_CASE("autoscale: 'true'", "no GPU resources");
}

/* ---- counts, isolation, qos, placement ----------------------------------------------------- */

static void gpu_count_defaults_to_one_and_takes_1_to_128(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'"), NULL, NULL, &s);
    assert_int_equal(s.gpu_count, 1);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '1'\ngpu-count: '128'"), NULL, NULL, &s);
    assert_int_equal(s.gpu_count, 128);
    assert_int_equal(s.containers[0].gpu_count, 128);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '1'\ngpu-count: '4'"), NULL, NULL, &s);
    assert_int_equal(s.gpu_count, 4);
    tf_spec_free(&s);
}

static void gpu_count_out_of_range_or_not_a_number_is_rejected(void **state)
{
    const char *bad[] = {"'0'", "'129'", "'-1'", "'1.5'", "'two'", "'4Gi'", "'99999999999999'"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char line[64];
        snprintf(line, sizeof(line), "tflops-limit: '1'\ngpu-count: %s", bad[i]);
        ERR_CASE(line, "tensor-fusion.ai/gpu-count", "1 to 128");
    }
}

static void isolation_defaults_to_soft_and_takes_the_four_modes(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'"), NULL, NULL, &s);
    assert_int_equal(s.isolation, TF_ISOLATION_SOFT);
    tf_spec_free(&s);
    const char *modes[] = {"shared", "soft", "hard", "partitioned"};
    const enum tf_isolation want[] = {TF_ISOLATION_SHARED, TF_ISOLATION_SOFT, TF_ISOLATION_HARD,
                                      TF_ISOLATION_PARTITIONED};
    for (int i = 0; i < 4; i++) {
        char line[64];
        snprintf(line, sizeof(line), "tflops-limit: '1'\nisolation: %s", modes[i]);
        spec_ok(tf_pod(line), NULL, NULL, &s);
        assert_int_equal(s.isolation, want[i]);
        assert_string_equal(tf_isolation_name(s.isolation), modes[i]);
        tf_spec_free(&s);
    }
    ERR_CASE("tflops-limit: '1'\nisolation: strict", "tensor-fusion.ai/isolation", "\"strict\"",
             "shared, soft, hard, partitioned");
}

static void partition_template_is_read_for_partitioned_pods_only(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-request: '50'\nisolation: partitioned\npartition: 3g.40gb"), NULL, NULL,
            &s);
    assert_string_equal(s.partition, "3g.40gb");
    assert_int_equal(s.nwarnings, 0);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-request: '50'\nisolation: partitioned"), NULL, NULL, &s);
    assert_null(s.partition); /* the scheduler picks the smallest template that fits */
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-request: '50'\nisolation: soft\npartition: 3g.40gb"), NULL, NULL, &s);
    assert_null(s.partition);
    assert_warning(&s, "tensor-fusion.ai/partition", "only partitioned", "soft", NULL);
    tf_spec_free(&s);
    ERR_CASE("tflops-request: '5'\nisolation: partitioned\npartition: 3G_40GB",
             "tensor-fusion.ai/partition", "\"3G_40GB\"", "partition template");
    ERR_CASE("tflops-request: '5'\nisolation: partitioned\npartition: "
             "a-template-id-longer-than-any",
             "tensor-fusion.ai/partition", "longer than a template id");
}

static void shared_isolation_takes_whole_gpus(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("isolation: shared\ngpu-count: '2'\ngpu-model: H100"), NULL, NULL, &s);
    assert_true(s.whole_gpu);
    assert_int_equal(s.gpu_count, 2);
    assert_true(s.requests.percent_set);
    assert_int_equal(s.requests.percent_bp, 10000);
    assert_int_equal(s.limits.percent_bp, 10000);
    assert_int_equal(s.limits.vram_bytes, 80 * GiB);
    assert_int_equal(s.qos, TF_QOS_HIGH); /* requests == limits */
    tf_spec_free(&s);
    spec_ok(tf_pod("isolation: shared\ntflops-limit: '10'"), NULL, NULL, &s);
    assert_warning(&s, "whole GPUs", "tensor-fusion.ai/tflops-limit", NULL);
    assert_false(s.limits.tflops_set);
    tf_spec_free(&s);
}

static void qos_defaults_follow_the_rule(void **state)
{
    struct tf_spec s;
    /* requests == limits (non-zero): high */
    spec_ok(tf_pod("tflops-limit: '10'\nvram-limit: 1Gi"), NULL, NULL, &s);
    assert_int_equal(s.qos, TF_QOS_HIGH);
    tf_spec_free(&s);
    /* requests < limits: pool default, else medium */
    spec_ok(tf_pod("tflops-request: '5'\ntflops-limit: '10'"), NULL, NULL, &s);
    assert_int_equal(s.qos, TF_QOS_MEDIUM);
    tf_spec_free(&s);
    struct tf_pool_defaults pool = {.qos = TF_QOS_LOW};
    spec_ok(tf_pod("tflops-request: '5'\ntflops-limit: '10'"), NULL, &pool, &s);
    assert_int_equal(s.qos, TF_QOS_LOW);
    tf_spec_free(&s);
    /* equal but zero is not "high" */
    spec_ok(tf_pod("tflops-request: '0'\ntflops-limit: '10'\nvram-request: 1Gi\n"
                   "vram-limit: 2Gi"),
            NULL, NULL, &s);
    assert_int_equal(s.qos, TF_QOS_MEDIUM);
    tf_spec_free(&s);
}

static void qos_annotation_wins_and_takes_the_four_levels(void **state)
{
    const char *lv[] = {"low", "medium", "high", "critical"};
    for (int i = 0; i < 4; i++) {
        char line[64];
        struct tf_spec s;
        snprintf(line, sizeof(line), "tflops-limit: '1'\nqos: %s", lv[i]);
        spec_ok(tf_pod(line), NULL, NULL, &s);
        assert_int_equal(s.qos, TF_QOS_LOW + i);
        assert_string_equal(tf_qos_name(s.qos), lv[i]);
        tf_spec_free(&s);
    }
    ERR_CASE("tflops-limit: '1'\nqos: urgent", "tensor-fusion.ai/qos", "\"urgent\"",
             "low, medium, high, critical");
}

static void is_local_gpu_defaults_to_true_and_follows_the_pool(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'"), NULL, NULL, &s);
    assert_true(s.is_local_gpu);
    tf_spec_free(&s);
    struct tf_pool_defaults pool = {.is_local_gpu_set = true, .is_local_gpu = false};
    spec_ok(tf_pod("tflops-limit: '1'"), NULL, &pool, &s);
    assert_false(s.is_local_gpu);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '1'\nis-local-gpu: 'true'"), NULL, &pool, &s);
    assert_true(s.is_local_gpu);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '1'\nis-local-gpu: 'false'"), NULL, NULL, &s);
    assert_false(s.is_local_gpu);
    tf_spec_free(&s);
    ERR_CASE("tflops-limit: '1'\nis-local-gpu: maybe", "tensor-fusion.ai/is-local-gpu", "\"maybe\"",
             "\"true\" or \"false\"");
}

static void gpupool_annotation_names_the_pool(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'\ngpupool: gpu-pool-a"), NULL, NULL, &s);
    assert_string_equal(s.pool, "gpu-pool-a");
    tf_spec_free(&s);
    struct tf_pool_defaults pool = {.pool_name = "default-pool"};
    spec_ok(tf_pod("tflops-limit: '1'"), NULL, &pool, &s);
    assert_string_equal(s.pool, "default-pool");
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '1'"), NULL, NULL, &s);
    assert_null(s.pool);
    tf_spec_free(&s);
    ERR_CASE("tflops-limit: '1'\ngpupool: Pool_A", "tensor-fusion.ai/gpupool", "\"Pool_A\"");
}

static void every_seed_vendor_is_accepted_in_any_case(void **state)
{
    for (int i = 0; i < 13; i++) {
        char line[128], lower[32];
        size_t n = strlen(tf_vendors[i]);
        for (size_t j = 0; j <= n; j++)
            lower[j] =
                (char)((tf_vendors[i][j] >= 'A' && tf_vendors[i][j] <= 'Z') ? tf_vendors[i][j] + 32
                                                                            : tf_vendors[i][j]);
        snprintf(line, sizeof(line), "tflops-limit: '1'\nisolation: hard\nvendor: %s", lower);
        struct tf_spec s;
        spec_ok(tf_pod(line), NULL, NULL, &s);
        assert_string_equal(s.vendor, tf_vendors[i]);
        tf_spec_free(&s);
    }
}

static void free_form_vendors_are_admitted_as_upstream_does(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'\nisolation: hard\nvendor: MooreThreads"), NULL, NULL, &s);
    assert_string_equal(s.vendor, "MThreads");
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '1'\nvendor: ppu"), NULL, NULL, &s);
    assert_string_equal(s.vendor, "PPU"); /* CUDA-compatible: soft isolation is fine */
    assert_int_equal(s.nwarnings, 0);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '1'\nvendor: Voodoo"), NULL, NULL, &s);
    assert_string_equal(s.vendor, "Voodoo");
    assert_warning(&s, "tensor-fusion.ai/vendor", "\"Voodoo\"", "not a vendor", NULL);
    tf_spec_free(&s);
}

static void soft_isolation_is_refused_for_vendors_without_a_limiter(void **state)
{
    ERR_CASE("tflops-limit: '1'\nvendor: AMD", "soft isolation", "AMD", "hard");
    ERR_CASE("tflops-limit: '1'\nisolation: soft\nvendor: Ascend", "tensor-fusion.ai/isolation",
             "Ascend");
    ERR_CASE("tflops-limit: '1'\nvendor: MooreThreads", "soft isolation", "MThreads");
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'\nisolation: hard\nvendor: AMD"), NULL, NULL, &s);
    tf_spec_free(&s);
    spec_ok(tf_pod("isolation: shared\nvendor: Ascend"), NULL, NULL, &s);
    tf_spec_free(&s);
}

static void gpu_model_sets_vendor_and_must_agree_with_it(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'\ngpu-model: L40s"), NULL, NULL, &s);
    assert_non_null(s.model);
    assert_string_equal(s.model->family, "L40S");
    assert_string_equal(s.gpu_model, "L40s");
    assert_string_equal(s.vendor, "NVIDIA");
    tf_spec_free(&s);
    ERR_CASE("tflops-limit: '1'\ngpu-model: A100\nvendor: AMD", "tensor-fusion.ai/vendor",
             "tensor-fusion.ai/gpu-model", "AMD", "A100");
}

static void unknown_gpu_model_warns_that_percent_cannot_convert(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("compute-percent-limit: '50'\ngpu-model: Z9000"), NULL, NULL, &s);
    assert_null(s.model);
    assert_string_equal(s.gpu_model, "Z9000");
    assert_warning(&s, "tensor-fusion.ai/gpu-model", "Z9000", "model table", NULL);
    tf_spec_free(&s);
}

static void dedicated_gpu_takes_the_whole_model_capacity(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("dedicated-gpu: 'true'\ngpu-model: H100"), NULL, NULL, &s);
    assert_true(s.dedicated_gpu);
    assert_true(s.whole_gpu);
    assert_int_equal(s.requests.tflops_milli, 989000);
    assert_int_equal(s.limits.tflops_milli, 989000);
    assert_int_equal(s.requests.vram_bytes, 80 * GiB);
    assert_int_equal(s.qos, TF_QOS_HIGH);
    tf_spec_free(&s);
    spec_ok(tf_pod("dedicated-gpu: 'false'\ntflops-limit: '1'"), NULL, NULL, &s);
    assert_false(s.dedicated_gpu);
    assert_false(s.whole_gpu);
    tf_spec_free(&s);
}

static void dedicated_gpu_without_a_known_model_is_rejected(void **state)
{
    ERR_CASE("dedicated-gpu: 'true'", "tensor-fusion.ai/dedicated-gpu",
             "tensor-fusion.ai/gpu-model");
    ERR_CASE("dedicated-gpu: 'true'\ngpu-model: Z9000", "tensor-fusion.ai/dedicated-gpu", "Z9000");
    ERR_CASE("dedicated-gpu: sure\ngpu-model: H100", "tensor-fusion.ai/dedicated-gpu", "\"sure\"");
}

static void gpu_indices_name_the_devices_and_give_the_count(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'\ngpu-indices: '0,1'"), NULL, NULL, &s);
    assert_int_equal(s.ngpu_indices, 2);
    assert_int_equal(s.gpu_indices[0], 0);
    assert_int_equal(s.gpu_indices[1], 1);
    assert_int_equal(s.gpu_count, 2); /* one GPU per listed index */
    assert_int_equal(s.nwarnings, 0);
    tf_spec_free(&s);
}

static void gpu_indices_override_gpu_count_as_upstream_does(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'\ngpu-indices: ' 3, 5 ,7'\ngpu-count: '2'"), NULL, NULL, &s);
    assert_int_equal(s.ngpu_indices, 3);
    assert_int_equal(s.gpu_indices[2], 7);
    assert_int_equal(s.gpu_count, 3);
    assert_int_equal(s.containers[0].gpu_count, 3);
    assert_warning(&s, "tensor-fusion.ai/gpu-indices", "3 GPUs", NULL);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '1'\ngpu-indices: '0'\ngpu-count: '2'"), NULL, NULL, &s);
    assert_int_equal(s.gpu_count, 1);
    tf_spec_free(&s);
}

static void bad_gpu_indices_are_rejected(void **state)
{
    ERR_CASE("tflops-limit: '1'\ngpu-indices: '0,0'", "tensor-fusion.ai/gpu-indices", "twice");
    ERR_CASE("tflops-limit: '1'\ngpu-indices: '128'", "tensor-fusion.ai/gpu-indices", "0..127");
    ERR_CASE("tflops-limit: '1'\ngpu-indices: 'a,b'", "tensor-fusion.ai/gpu-indices", "\"a\"");
    ERR_CASE("tflops-limit: '1'\ngpu-indices: ','", "tensor-fusion.ai/gpu-indices", "no GPU");
    ERR_CASE("tflops-limit: '1'\ngpu-indices: '-1'", "tensor-fusion.ai/gpu-indices", "\"-1\"");
}

/* ---- names, rollout, autoscale, worker mode, kill switches --------------------------------- */

static void workload_and_profile_names_are_checked(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'\nworkload: pytorch-example\nworkload-profile: p.v1"), NULL,
            NULL, &s);
    assert_string_equal(s.workload, "pytorch-example");
    assert_string_equal(s.workload_profile, "p.v1");
    tf_spec_free(&s);
    ERR_CASE("tflops-limit: '1'\nworkload: 'My Workload'", "tensor-fusion.ai/workload",
             "\"My Workload\"");
    ERR_CASE("tflops-limit: '1'\nworkload-profile: -x", "tensor-fusion.ai/workload-profile",
             "\"-x\"");
}

static void enabled_replicas_is_a_whole_number(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'\nenabled-replicas: '42'"), NULL, NULL, &s);
    assert_true(s.has_enabled_replicas);
    assert_int_equal(s.enabled_replicas, 42);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '1'"), NULL, NULL, &s);
    assert_false(s.has_enabled_replicas);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '1'\nenabled-replicas: '0'"), NULL, NULL, &s);
    assert_int_equal(s.enabled_replicas, 0);
    assert_warning(&s, "tensor-fusion.ai/enabled-replicas", "no pod", NULL);
    tf_spec_free(&s);
    ERR_CASE("tflops-limit: '1'\nenabled-replicas: '-2'", "tensor-fusion.ai/enabled-replicas");
    ERR_CASE("tflops-limit: '1'\nenabled-replicas: 25%", "tensor-fusion.ai/enabled-replicas",
             "25%");
}

static void autoscale_defaults_its_target_to_all(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'\nautoscale: 'true'"), NULL, NULL, &s);
    assert_true(s.autoscale);
    assert_int_equal(s.autoscale_target, TF_AUTOSCALE_ALL);
    tf_spec_free(&s);
    const char *t[] = {"compute", "vram", "all"};
    for (int i = 0; i < 3; i++) {
        char line[96];
        snprintf(line, sizeof(line), "tflops-limit: '1'\nautoscale: 'true'\nautoscale-target: %s",
                 t[i]);
        spec_ok(tf_pod(line), NULL, NULL, &s);
        assert_int_equal(s.autoscale_target, TF_AUTOSCALE_COMPUTE + i);
        tf_spec_free(&s);
    }
    spec_ok(tf_pod("tflops-limit: '1'"), NULL, NULL, &s);
    assert_false(s.autoscale);
    assert_int_equal(s.autoscale_target, TF_AUTOSCALE_UNSET);
    tf_spec_free(&s);
}

static void autoscale_target_errors_and_warnings(void **state)
{
    ERR_CASE("tflops-limit: '1'\nautoscale: 'true'\nautoscale-target: gpu",
             "tensor-fusion.ai/autoscale-target", "\"gpu\"", "compute, vram, all");
    ERR_CASE("tflops-limit: '1'\nautoscale: 'on please'", "tensor-fusion.ai/autoscale");
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'\nautoscale-target: vram"), NULL, NULL, &s);
    assert_false(s.autoscale);
    assert_warning(&s, "tensor-fusion.ai/autoscale-target", "no effect", NULL);
    tf_spec_free(&s);
}

static void standalone_worker_mode_picks_hard_or_soft_isolation_for_local_gpu_pods(void **state)
{
    struct tf_spec s;
    /* true: the app reaches the GPU only through a standalone tf-worker (hard isolation). */
    spec_ok(tf_pod("tflops-limit: '1'\nstandalone-worker-mode: 'true'"), NULL, NULL, &s);
    assert_true(s.has_standalone_worker_mode);
    assert_true(s.standalone_worker_mode);
    assert_int_equal(s.isolation, TF_ISOLATION_HARD);
    assert_warning(&s, "tensor-fusion.ai/standalone-worker-mode", "hard isolation instead", "soft",
                   NULL);
    tf_spec_free(&s);
    /* false with the default soft isolation: the in-process worker, nothing to say. */
    spec_ok(tf_pod("tflops-limit: '1'\nstandalone-worker-mode: 'false'"), NULL, NULL, &s);
    assert_int_equal(s.isolation, TF_ISOLATION_SOFT);
    assert_int_equal(s.nwarnings, 0);
    tf_spec_free(&s);
    /* false turns a pool's hard default into soft. */
    struct tf_pool_defaults d = {.isolation = TF_ISOLATION_HARD};
    spec_ok(tf_pod("tflops-limit: '1'\nstandalone-worker-mode: 'false'"), NULL, &d, &s);
    assert_int_equal(s.isolation, TF_ISOLATION_SOFT);
    assert_warning(&s, "tensor-fusion.ai/standalone-worker-mode", "soft isolation instead", NULL);
    tf_spec_free(&s);
    /* Agreeing with the pod's own isolation key: silent. */
    spec_ok(tf_pod("tflops-limit: '1'\nstandalone-worker-mode: 'true'\nisolation: hard"), NULL,
            NULL, &s);
    assert_int_equal(s.isolation, TF_ISOLATION_HARD);
    assert_int_equal(s.nwarnings, 0);
    tf_spec_free(&s);
    /* Remote workers are standalone anyway. */
    spec_ok(tf_pod("tflops-limit: '1'\nstandalone-worker-mode: 'false'\nis-local-gpu: 'false'"),
            NULL, NULL, &s);
    assert_false(s.standalone_worker_mode);
    assert_int_equal(s.isolation, TF_ISOLATION_SOFT);
    assert_warning(&s, "tensor-fusion.ai/standalone-worker-mode", "no effect", NULL);
    tf_spec_free(&s);
    /* Contradicting the pod's own isolation key: refused, naming both. */
    ERR_CASE("tflops-limit: '1'\nstandalone-worker-mode: 'true'\nisolation: soft",
             "tensor-fusion.ai/standalone-worker-mode", "tensor-fusion.ai/isolation", "soft",
             "drop one");
    ERR_CASE("tflops-limit: '1'\nstandalone-worker-mode: 'false'\nisolation: hard",
             "tensor-fusion.ai/standalone-worker-mode", "hard", "drop one");
    ERR_CASE("tflops-limit: '1'\nstandalone-worker-mode: x",
             "tensor-fusion.ai/standalone-worker-mode");
}

static void disable_features_sets_known_bits_and_says_what_each_does(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'\ndisable-features: 'gpu-limiter, gpu-opt,mem-manager'"), NULL,
            NULL, &s);
    assert_int_equal(s.disable_features,
                     TF_FEATURE_GPU_LIMITER | TF_FEATURE_GPU_OPT | TF_FEATURE_MEM_MANAGER);
    assert_int_equal(s.ndisable_feature_names, 3);
    assert_string_equal(s.disable_feature_names[1], "gpu-opt");
    /* Never silently inert: each name says what it does (or that there is nothing to do). */
    assert_warning(&s, "gpu-limiter", "not enforced", NULL);
    assert_warning(&s, "gpu-opt", "no effect", NULL);
    assert_warning(&s, "mem-manager", "no effect", NULL);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '1'\ndisable-features: gpu-opt,turbo,gpu-opt"), NULL, NULL, &s);
    assert_int_equal(s.disable_features, TF_FEATURE_GPU_OPT);
    assert_int_equal(s.ndisable_feature_names, 2); /* duplicates once */
    assert_warning(&s, "tensor-fusion.ai/disable-features", "\"turbo\"", NULL);
    tf_spec_free(&s);
    /* start-worker: a soft local pod runs no tf-worker; a hard one's sleeps. */
    spec_ok(tf_pod("tflops-limit: '1'\ndisable-features: start-worker"), NULL, NULL, &s);
    assert_warning(&s, "start-worker", "no effect", "soft", NULL);
    tf_spec_free(&s);
    spec_ok(tf_pod("tflops-limit: '1'\nisolation: hard\ndisable-features: start-worker"), NULL,
            NULL, &s);
    assert_int_equal(s.disable_features, TF_FEATURE_START_WORKER);
    assert_warning(&s, "start-worker", "sleeps", NULL);
    tf_spec_free(&s);
}

/* ---- labels, unknown keys, value types ----------------------------------------------------- */

static void pod_without_enabled_label_is_not_taken_over(void **state)
{
    struct tf_spec s;
    spec_ok(yaml_doc("metadata:\n  name: p\n  annotations:\n"
                     "    tensor-fusion.ai/tflops-limit: '20'\n    other/key: x\n"),
            NULL, NULL, &s);
    assert_false(s.enabled);
    assert_false(s.opted_out);
    assert_warning(&s, "tensor-fusion.ai/enabled", "1 tensor-fusion.ai/", "ignored", NULL);
    assert_false(s.limits.tflops_set);
    tf_spec_free(&s);
    spec_ok(yaml_doc("metadata:\n  name: p\n"), NULL, NULL, &s);
    assert_false(s.enabled);
    assert_int_equal(s.nwarnings, 0);
    tf_spec_free(&s);
}

static void enabled_false_opts_out_of_everything_even_invalid_annotations(void **state)
{
    struct tf_spec s;
    struct tf_pool_defaults pool = {.auto_migration = true};
    spec_ok(yaml_doc("metadata:\n  labels:\n    tensor-fusion.ai/enabled: 'false'\n"
                     "  annotations:\n    tensor-fusion.ai/vram-limit: 4GB\n"
                     "spec:\n  containers:\n  - name: app\n"
                     "    resources: {limits: {nvidia.com/gpu: 1}}\n"),
            NULL, &pool, &s);
    assert_false(s.enabled);
    assert_true(s.opted_out);
    assert_false(s.auto_migrated);
    tf_spec_free(&s);
}

static void enabled_label_must_be_true_or_false(void **state)
{
    char e[512];
    spec_err(yaml_doc("metadata:\n  labels:\n    tensor-fusion.ai/enabled: 'yes please'\n"), NULL,
             NULL, e);
    assert_contains(e, "tensor-fusion.ai/enabled", "\"yes please\"", NULL);
}

static void unquoted_yaml_values_are_read_as_text_with_a_warning(void **state)
{
    struct tf_spec s;
    spec_ok(yaml_doc("metadata:\n  labels:\n    tensor-fusion.ai/enabled: true\n"
                     "  annotations:\n    tensor-fusion.ai/gpu-count: 2\n"
                     "    tensor-fusion.ai/tflops-limit: 0.5\n"
                     "    tensor-fusion.ai/is-local-gpu: false\n"),
            NULL, NULL, &s);
    assert_true(s.enabled);
    assert_int_equal(s.gpu_count, 2);
    assert_int_equal(s.limits.tflops_milli, 500);
    assert_false(s.is_local_gpu);
    assert_warning(&s, "tensor-fusion.ai/gpu-count", "not a string", "'2'", NULL);
    assert_warning(&s, "tensor-fusion.ai/tflops-limit", "not a string", "0.5", NULL);
    assert_warning(&s, "tensor-fusion.ai/is-local-gpu", "not a string", NULL);
    assert_warning(&s, "tensor-fusion.ai/enabled", "label", "not a string", NULL);
    tf_spec_free(&s);
}

static void map_valued_annotation_is_rejected(void **state)
{
    ERR_CASE("tflops-limit: {a: 1}", "tensor-fusion.ai/tflops-limit", "must be a string");
}

static void empty_annotation_is_ignored_with_a_warning(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'\nqos: ''\ngpu-model:"), NULL, NULL, &s);
    assert_warning(&s, "tensor-fusion.ai/qos", "empty", NULL);
    assert_warning(&s, "tensor-fusion.ai/gpu-model", "empty", NULL);
    assert_null(s.gpu_model);
    tf_spec_free(&s);
}

static void unknown_tensor_fusion_keys_warn_instead_of_silence(void **state)
{
    struct tf_spec s;
    spec_ok(tf_pod("tflops-limit: '1'\ngpu-cout: '2'\ngpu-ids: gpu-1\nindex: '3'\n"
                   "gpu-ids-app: gpu-1"),
            NULL, NULL, &s);
    assert_warning(&s, "tensor-fusion.ai/gpu-cout", "unknown annotation", NULL);
    assert_no_warning(&s, "gpu-ids");     /* system-written: known */
    assert_no_warning(&s, "ai/index");    /* system-written: known */
    assert_no_warning(&s, "gpu-ids-app"); /* per container, system-written: known */
    assert_int_equal(s.nwarnings, 1);
    tf_spec_free(&s);
}

/* Each container's gpu-ids-<container> key is a valid annotation key (name part <= 63),
 * whole for names that fit, cut and hashed (still distinct) for longer ones. */
static void per_container_gpu_ids_keys_fit_and_stay_distinct(void **state)
{
    char k[TF_SPEC_CONTAINER_GPU_IDS_KEY_MAX], k2[TF_SPEC_CONTAINER_GPU_IDS_KEY_MAX];
    tf_spec_container_gpu_ids_key("app", k);
    assert_string_equal(k, "tensor-fusion.ai/gpu-ids-app");
    char name[64];
    memset(name, 'a', 63);
    name[55] = '\0';
    tf_spec_container_gpu_ids_key(name, k);
    assert_int_equal(strlen(k) - strlen(TF_KEY_PREFIX), 63);
    assert_string_equal(k + strlen(TF_ANN_CONTAINER_GPU_IDS_PREFIX), name);
    name[55] = 'a';
    name[63] = '\0';
    tf_spec_container_gpu_ids_key(name, k);
    name[62] = 'b';
    tf_spec_container_gpu_ids_key(name, k2);
    assert_int_equal(strlen(k) - strlen(TF_KEY_PREFIX), 63);
    assert_int_equal(strlen(k2) - strlen(TF_KEY_PREFIX), 63);
    assert_string_not_equal(k, k2);
    assert_memory_equal(k, k2, strlen(k) - 8); /* same cut, different hash */
}

static void keys_in_the_wrong_map_are_pointed_out(void **state)
{
    struct tf_spec s;
    spec_ok(yaml_doc("metadata:\n  labels:\n    tensor-fusion.ai/enabled: 'true'\n"
                     "    tensor-fusion.ai/gpu-count: '2'\n    tensor-fusion.ai/colour: red\n"
                     "    tensor-fusion.ai/component: client\n"
                     "  annotations:\n    tensor-fusion.ai/enabled: 'true'\n"
                     "    tensor-fusion.ai/tflops-limit: '1'\n"),
            NULL, NULL, &s);
    assert_warning(&s, "tensor-fusion.ai/gpu-count", "is an annotation, not a label", NULL);
    assert_warning(&s, "tensor-fusion.ai/enabled", "is a label, not an annotation", NULL);
    assert_warning(&s, "tensor-fusion.ai/colour", "unknown label", NULL);
    assert_no_warning(&s, "component");
    assert_int_equal(s.gpu_count, 1);
    tf_spec_free(&s);
}

static void object_meta_alone_is_accepted(void **state)
{
    struct tf_spec s;
    spec_ok(yaml_doc("name: bare\nlabels: {tensor-fusion.ai/enabled: 'true'}\n"
                     "annotations: {tensor-fusion.ai/vram-limit: 1Gi, "
                     "tensor-fusion.ai/inject-container: 'a,b'}\n"),
            NULL, NULL, &s);
    assert_true(s.enabled);
    assert_string_equal(s.name, "bare");
    assert_int_equal(s.ncontainers, 2);
    assert_string_equal(s.containers[1].name, "b");
    assert_int_equal(s.containers[1].gpu_count, 1);
    tf_spec_free(&s);
}

static void malformed_metadata_is_rejected(void **state)
{
    char e[512];
    spec_err(yaml_doc("metadata:\n  annotations: [a, b]\n"), NULL, NULL, e);
    assert_contains(e, "metadata.annotations", "map", NULL);
    spec_err(yaml_doc("metadata:\n  labels: x\n"), NULL, NULL, e);
    assert_contains(e, "metadata.labels", NULL);
    json_object *arr = json_object_new_array();
    spec_err(arr, NULL, NULL, e);
    assert_contains(e, "not a map", NULL);
}

static void enum_names_round_trip(void **state)
{
    enum tf_qos q;
    assert_int_equal(tf_qos_parse("CRITICAL", &q), 0);
    assert_int_equal(q, TF_QOS_CRITICAL);
    assert_null(tf_qos_name(TF_QOS_UNSET));
    assert_int_equal(tf_qos_parse("", &q), TF_EINVAL);
    enum tf_feature f;
    assert_int_equal(tf_feature_parse("start-worker", &f), 0);
    assert_string_equal(tf_feature_name(f), "start-worker");
    assert_null(tf_feature_name((enum tf_feature)3));
    enum tf_autoscale_target t;
    assert_int_equal(tf_autoscale_target_parse("VRAM", &t), 0);
    assert_string_equal(tf_autoscale_target_name(t), "vram");
    assert_null(tf_isolation_name((enum tf_isolation)9));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_001_annotations_give_tflops_and_bytes),
        cmocka_unit_test(fractional_tflops_and_milli_suffix_are_exact),
        cmocka_unit_test(missing_request_inherits_the_limit),
        cmocka_unit_test(missing_limit_stays_unset_as_upstream_does),
        cmocka_unit_test(zero_values_mean_not_set_as_upstream_does),
        cmocka_unit_test(request_above_limit_is_admitted_with_a_warning_naming_both_keys),
        cmocka_unit_test(request_equal_to_limit_is_accepted),
        cmocka_unit_test(tflops_win_over_percent_as_upstream_does),
        cmocka_unit_test(tflops_request_with_percent_limit_is_allowed),
        cmocka_unit_test(mixed_units_are_compared_through_the_gpu_model),
        cmocka_unit_test(compute_percent_above_100_or_too_precise_is_rejected),
        cmocka_unit_test(zero_limit_alone_requests_nothing_and_is_rejected),
        cmocka_unit_test(garbage_quantities_are_rejected_naming_key_and_value),
        cmocka_unit_test(request_beyond_one_gpu_of_the_model_warns),
        cmocka_unit_test(limit_above_model_capacity_warns_uncapped),
        cmocka_unit_test(pod_without_any_resources_is_rejected),
        cmocka_unit_test(autoscale_without_resources_is_rejected_as_upstream_does),
        cmocka_unit_test(gpu_count_defaults_to_one_and_takes_1_to_128),
        cmocka_unit_test(gpu_count_out_of_range_or_not_a_number_is_rejected),
        cmocka_unit_test(isolation_defaults_to_soft_and_takes_the_four_modes),
        cmocka_unit_test(partition_template_is_read_for_partitioned_pods_only),
        cmocka_unit_test(shared_isolation_takes_whole_gpus),
        cmocka_unit_test(qos_defaults_follow_the_rule),
        cmocka_unit_test(qos_annotation_wins_and_takes_the_four_levels),
        cmocka_unit_test(is_local_gpu_defaults_to_true_and_follows_the_pool),
        cmocka_unit_test(gpupool_annotation_names_the_pool),
        cmocka_unit_test(every_seed_vendor_is_accepted_in_any_case),
        cmocka_unit_test(free_form_vendors_are_admitted_as_upstream_does),
        cmocka_unit_test(soft_isolation_is_refused_for_vendors_without_a_limiter),
        cmocka_unit_test(gpu_model_sets_vendor_and_must_agree_with_it),
        cmocka_unit_test(unknown_gpu_model_warns_that_percent_cannot_convert),
        cmocka_unit_test(dedicated_gpu_takes_the_whole_model_capacity),
        cmocka_unit_test(dedicated_gpu_without_a_known_model_is_rejected),
        cmocka_unit_test(gpu_indices_name_the_devices_and_give_the_count),
        cmocka_unit_test(gpu_indices_override_gpu_count_as_upstream_does),
        cmocka_unit_test(bad_gpu_indices_are_rejected),
        cmocka_unit_test(workload_and_profile_names_are_checked),
        cmocka_unit_test(enabled_replicas_is_a_whole_number),
        cmocka_unit_test(autoscale_defaults_its_target_to_all),
        cmocka_unit_test(autoscale_target_errors_and_warnings),
        cmocka_unit_test(standalone_worker_mode_picks_hard_or_soft_isolation_for_local_gpu_pods),
        cmocka_unit_test(disable_features_sets_known_bits_and_says_what_each_does),
        cmocka_unit_test(pod_without_enabled_label_is_not_taken_over),
        cmocka_unit_test(enabled_false_opts_out_of_everything_even_invalid_annotations),
        cmocka_unit_test(enabled_label_must_be_true_or_false),
        cmocka_unit_test(unquoted_yaml_values_are_read_as_text_with_a_warning),
        cmocka_unit_test(map_valued_annotation_is_rejected),
        cmocka_unit_test(empty_annotation_is_ignored_with_a_warning),
        cmocka_unit_test(unknown_tensor_fusion_keys_warn_instead_of_silence),
        cmocka_unit_test(per_container_gpu_ids_keys_fit_and_stay_distinct),
        cmocka_unit_test(keys_in_the_wrong_map_are_pointed_out),
        cmocka_unit_test(object_meta_alone_is_accepted),
        cmocka_unit_test(malformed_metadata_is_rejected),
        cmocka_unit_test(enum_names_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
