/* SPDX-License-Identifier: Apache-2.0
 *
 * The autoscaling recommender (src/core/autoscale.h), seed 002 step 2: percentile estimates
 * with margin and confidence bounds, hysteresis, targetResource, ratio clamps, the GPU-room
 * ceiling, initial delay, decay, cron scaling rules, pool-level rules, the config parser's
 * errors and the .status.recommendation shape.
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
#include "core/autoscale.h"
#include "core/timeutil.h"

#define GiB (INT64_C(1) << 30)
#define MiB (INT64_C(1) << 20)
#define TF(x) ((int64_t)((x)*1000))
#define NOW (INT64_C(1714550400000)) /* 2024-05-01T08:00:00Z */
#define MIN (60 * INT64_C(1000))
#define HOUR (60 * MIN)

static struct tf_usage_sample samples[4096];

/* N samples, one a minute ending at NOW, compute T milli-TFLOPS, VRAM V bytes. */
static size_t steady(size_t n, int64_t t, int64_t v)
{
    for (size_t i = 0; i < n; i++)
        samples[i] = (struct tf_usage_sample){NOW - (int64_t)(n - 1 - i) * MIN, t, v};
    return n;
}

static struct tf_autoscale_config enabled(void)
{
    struct tf_autoscale_config c;
    tf_autoscale_config_init(&c);
    c.enable = true;
    return c;
}

/* A workload asking 20 TFLOPS / 8Gi, limits 40 TFLOPS / 16Gi, created a day ago. */
static struct tf_autoscale_input input(const struct tf_autoscale_config *c, size_t n)
{
    struct tf_autoscale_input in = {0};
    in.cfg = c;
    in.original = (struct tf_autoscale_resources){TF(20), TF(40), 8 * GiB, 16 * GiB, 0, 0};
    in.current = in.original;
    in.samples = samples;
    in.nsamples = n;
    in.created_ms = NOW - 24 * HOUR;
    in.now_ms = NOW;
    return in;
}

static struct tf_autoscale_recommendation rec(const struct tf_autoscale_input *in)
{
    struct tf_autoscale_recommendation r;
    char err[256];
    int rc = tf_autoscale_recommend(in, &r, err, sizeof(err));
    if (rc)
        fail_msg("recommend: %s", err);
    return r;
}

static void in_range(int64_t v, int64_t lo, int64_t hi, const char *what)
{
    if (v < lo || v > hi)
        fail_msg("%s = %lld, want %lld..%lld", what, (long long)v, (long long)lo, (long long)hi);
}

static void over_provisioned_workload_is_scaled_down_to_p95_plus_margin(void **state)
{
    (void)state;
    struct tf_autoscale_config c = enabled();
    struct tf_autoscale_input in = input(&c, steady(120, TF(5), 3 * GiB));
    struct tf_autoscale_recommendation r = rec(&in);
    assert_true(r.changed);
    assert_int_equal(r.source, TF_AUTOSCALE_SRC_PERCENTILE);
    /* Usage 5 TFLOPS: the bucket's upper end (5 % buckets) times 1.15, rounded to 0.01. */
    in_range(r.resources.req_tflops, TF(5.75), TF(6.05), "request tflops");
    assert_int_equal(r.resources.req_tflops % 10, 0);
    /* Compute limits never drop below the original limit. */
    assert_int_equal(r.resources.lim_tflops, TF(40));
    in_range(r.resources.req_vram, (int64_t)(3.45 * GiB), (int64_t)(3.63 * GiB), "request vram");
    assert_int_equal(r.resources.req_vram % MiB, 0);
    /* VRAM limit keeps the 2x limit/request ratio. */
    in_range(r.resources.lim_vram, 2 * r.resources.req_vram - MiB, 2 * r.resources.req_vram + MiB,
             "limit vram");
    assert_int_equal(r.compute.samples, 120);
    assert_true(r.confidence > 0.98 && r.confidence <= 1.0);
    assert_true(r.compute.lower <= r.compute.target && r.compute.target <= r.compute.upper);
    /* The same inputs give the same answer. */
    struct tf_autoscale_recommendation r2 = rec(&in);
    assert_memory_equal(&r.resources, &r2.resources, sizeof(r.resources));
}

static void request_within_bounds_is_left_alone(void **state)
{
    (void)state;
    struct tf_autoscale_config c = enabled();
    /* Usage 15 TFLOPS / 6Gi: the 20 / 8Gi requests lie inside [lower, upper]. */
    size_t n = steady(120, TF(15), 6 * GiB);
    struct tf_autoscale_input in = input(&c, n);
    struct tf_autoscale_recommendation r = rec(&in);
    assert_false(r.changed);
    assert_int_equal(r.source, TF_AUTOSCALE_SRC_NONE);
    assert_memory_equal(&r.resources, &in.current, sizeof(r.resources));
    assert_non_null(strstr(r.reason, "within [lower, upper] bounds"));
}

static void under_provisioned_workload_is_scaled_up(void **state)
{
    (void)state;
    struct tf_autoscale_config c = enabled();
    struct tf_autoscale_input in = input(&c, steady(120, TF(60), 12 * GiB));
    struct tf_autoscale_recommendation r = rec(&in);
    assert_true(r.changed);
    in_range(r.resources.req_tflops, TF(69), TF(72.5), "request tflops");
    /* Limit: twice the request (the current ratio), above the original limit. */
    in_range(r.resources.lim_tflops, 2 * r.resources.req_tflops - 10,
             2 * r.resources.req_tflops + 10, "limit tflops");
    in_range(r.resources.req_vram, (int64_t)(13.8 * GiB), (int64_t)(14.5 * GiB), "vram");
}

static void target_resource_limits_what_changes(void **state)
{
    (void)state;
    struct tf_autoscale_config c = enabled();
    c.target = TF_AUTOSCALE_COMPUTE;
    struct tf_autoscale_input in = input(&c, steady(120, TF(5), 3 * GiB));
    struct tf_autoscale_recommendation r = rec(&in);
    assert_true(r.resources.req_tflops < TF(20));
    assert_int_equal(r.resources.req_vram, 8 * GiB);
    assert_int_equal(r.resources.lim_vram, 16 * GiB);
    c.target = TF_AUTOSCALE_VRAM;
    r = rec(&in);
    assert_int_equal(r.resources.req_tflops, TF(20));
    assert_true(r.resources.req_vram < 8 * GiB);
}

static void ratios_bound_the_change_relative_to_the_original(void **state)
{
    (void)state;
    struct tf_autoscale_config c = enabled();
    /* Nearly idle: compute request stops at 0.1 x 20, VRAM at 0.2 x 8Gi (limits 0.2 x 16Gi). */
    struct tf_autoscale_input in = input(&c, steady(120, 10, 10 * MiB));
    struct tf_autoscale_recommendation r = rec(&in);
    assert_int_equal(r.resources.req_tflops, TF(2));
    assert_int_equal(r.resources.lim_tflops, TF(40));
    in_range(r.resources.req_vram, (int64_t)(1.6 * GiB), (int64_t)(1.6 * GiB) + 2 * MiB, "vram");
    in_range(r.resources.lim_vram, (int64_t)(3.2 * GiB), (int64_t)(3.2 * GiB) + 3 * MiB,
             "vram lim");
    /* Far over: compute request at most 10 x 20 = 200, limit 10 x 40; VRAM at 5 x 8Gi. */
    in = input(&c, steady(120, TF(900), 70 * GiB));
    r = rec(&in);
    assert_int_equal(r.resources.req_tflops, TF(200));
    assert_int_equal(r.resources.lim_tflops, TF(400));
    assert_int_equal(r.resources.req_vram, 40 * GiB);
    assert_int_equal(r.resources.lim_vram, 80 * GiB);
    /* Custom ratios. */
    c.max_vram_ratio = 2;
    r = rec(&in);
    assert_int_equal(r.resources.req_vram, 16 * GiB);
}

static void ceiling_caps_requests_to_the_room_on_the_gpu(void **state)
{
    (void)state;
    struct tf_autoscale_config c = enabled();
    struct tf_autoscale_input in = input(&c, steady(120, TF(60), 12 * GiB));
    struct tf_autoscale_resources room = {TF(30), 0, 10 * GiB, 0, 0, 0};
    in.ceiling = &room;
    struct tf_autoscale_recommendation r = rec(&in);
    assert_int_equal(r.resources.req_tflops, TF(30));
    assert_int_equal(r.resources.req_vram, 10 * GiB);
    assert_true(r.resources.lim_vram >= r.resources.req_vram);
}

static void nothing_is_recommended_too_early_or_without_data_or_when_disabled(void **state)
{
    (void)state;
    struct tf_autoscale_config c = enabled();
    struct tf_autoscale_input in = input(&c, steady(120, TF(5), 3 * GiB));
    in.created_ms = NOW - 10 * MIN;
    struct tf_autoscale_recommendation r = rec(&in);
    assert_false(r.changed);
    assert_non_null(strstr(r.reason, "waiting for initialDelayPeriod 30m (workload created 10m"));
    in = input(&c, 0);
    r = rec(&in);
    assert_false(r.changed);
    assert_non_null(strstr(r.reason, "no samples"));
    c.enable = false;
    in = input(&c, steady(120, TF(5), 3 * GiB));
    r = rec(&in);
    assert_false(r.changed);
    assert_non_null(strstr(r.reason, "not enabled"));
    /* Samples older than historyDataPeriod (2h) do not count. */
    c.enable = true;
    size_t n = steady(120, TF(5), 3 * GiB);
    for (size_t i = 0; i < n; i++)
        samples[i].ts_ms -= 3 * HOUR;
    r = rec(&in);
    assert_false(r.changed);
    assert_int_equal(r.compute.samples, 0);
}

static void little_history_widens_the_bounds(void **state)
{
    (void)state;
    struct tf_autoscale_config c = enabled();
    /* Ten minutes of data: confidence 1/12, upper bound x13: 20 TFLOPS at 5 used stays. */
    struct tf_autoscale_input in = input(&c, steady(10, TF(5), 3 * GiB));
    struct tf_autoscale_recommendation r = rec(&in);
    assert_true(r.confidence < 0.1);
    assert_true(r.compute.upper > TF(20));
    assert_int_equal(r.resources.req_tflops, TF(20));
    /* With a shorter confidence interval the same data is trusted. */
    c.confidence_ms = 10 * MIN;
    r = rec(&in);
    assert_true(r.resources.req_tflops < TF(20));
}

static void recent_usage_outweighs_old_usage(void **state)
{
    (void)state;
    struct tf_autoscale_config c = enabled();
    c.half_life_ms = 10 * MIN;
    c.target_compute = 0.6;
    /* First hour at 30 TFLOPS, second hour at 5. */
    size_t n = steady(120, TF(5), 3 * GiB);
    for (size_t i = 0; i < 60; i++)
        samples[i].tflops_milli = TF(30);
    struct tf_autoscale_input in = input(&c, n);
    struct tf_autoscale_recommendation r = rec(&in);
    in_range(r.resources.req_tflops, TF(5.75), TF(6.05), "decayed p60");
    /* Without decay (very long half-life) the 60th percentile is the old level. */
    c.half_life_ms = 1000 * HOUR;
    r = rec(&in);
    assert_true(r.compute.target > TF(6.05));
}

static void decay_histogram_percentiles_and_rebasing(void **state)
{
    (void)state;
    struct tf_decay_hist h;
    tf_decay_hist_init(&h, 100, 1.05, 1e7, HOUR);
    assert_true(tf_decay_hist_percentile(&h, 0.5) == 0);
    for (int i = 1; i <= 100; i++)
        tf_decay_hist_add(&h, i * 1000.0, 1.0, NOW);
    double p50 = tf_decay_hist_percentile(&h, 0.5), p90 = tf_decay_hist_percentile(&h, 0.9);
    assert_true(p50 >= 50000 && p50 <= 50000 * 1.06);
    assert_true(p90 >= 90000 && p90 <= 90000 * 1.06);
    /* Samples 100 half-lives later re-base the weights without overflow; old ones vanish. */
    tf_decay_hist_add(&h, 5000, 1.0, NOW + 100 * HOUR);
    double p = tf_decay_hist_percentile(&h, 0.5);
    assert_true(p >= 5000 && p <= 5000 * 1.06);
    /* Values beyond the last bucket land in it. */
    tf_decay_hist_add(&h, 1e13, 1e9, NOW + 100 * HOUR);
    assert_true(tf_decay_hist_percentile(&h, 0.99) >= 1e7);
}

static struct tf_autoscale_config parse_yaml(const char *yaml, int want, const char *needle)
{
    json_object *docs;
    char err[512] = "";
    if (tf_yaml_to_json(yaml, strlen(yaml), &docs, err, sizeof(err)))
        fail_msg("yaml: %s", err);
    struct tf_autoscale_config c;
    int rc = tf_autoscale_config_parse(json_object_array_get_idx(docs, 0), "spec.autoScalingConfig",
                                       &c, err, sizeof(err));
    json_object_put(docs);
    if (rc != want)
        fail_msg("rc %d (%s), want %d", rc, err, want);
    if (needle && !strstr(err, needle))
        fail_msg("message \"%s\" lacks \"%s\"", err, needle);
    return c;
}

static void config_defaults_and_every_field(void **state)
{
    (void)state;
    struct tf_autoscale_config c = parse_yaml("{}", 0, NULL);
    assert_false(c.enable);
    assert_int_equal(c.target, TF_AUTOSCALE_ALL);
    assert_true(c.target_compute == 0.95 && c.lower_compute == 0.5 && c.upper_compute == 0.98);
    assert_true(c.target_vram == 0.95 && c.lower_vram == 0.5 && c.upper_vram == 0.99);
    assert_true(c.margin == 0.15 && c.update_threshold == 0.1);
    assert_int_equal(c.history_ms, 2 * HOUR);
    assert_int_equal(c.initial_delay_ms, 30 * MIN);
    assert_true(c.min_compute_ratio == 0.1 && c.max_compute_ratio == 10);
    assert_true(c.min_vram_ratio == 0.2 && c.max_vram_ratio == 5);
    c = parse_yaml("autoSetResources:\n"
                   "  enable: true\n"
                   "  targetResource: vram\n"
                   "  targetComputePercentile: \"0.9\"\n"
                   "  lowerBoundComputePercentile: 0.4\n"
                   "  upperBoundComputePercentile: \"0.99\"\n"
                   "  targetVRAMPercentile: \"0.9\"\n"
                   "  lowerBoundVRAMPercentile: \"0.45\"\n"
                   "  upperBoundVRAMPercentile: \"0.999\"\n"
                   "  marginFraction: \"0.2\"\n"
                   "  updateThreshold: \"0.05\"\n"
                   "  historyDataPeriod: 1d\n"
                   "  confidenceInterval: 12h\n"
                   "  minVRAMResourcesRatio: \"0.5\"\n"
                   "  maxVRAMResourcesRatio: \"2\"\n"
                   "  minComputeResourcesRatio: \"0.3\"\n"
                   "  maxComputeResourcesRatio: \"3\"\n"
                   "  initialDelayPeriod: 1h\n"
                   "  interval: 30s\n"
                   "autoSetReplicas: {}\n"
                   "externalScaler: {enable: false, url: \"http://scaler\"}\n",
                   0, NULL);
    assert_true(c.enable);
    assert_int_equal(c.target, TF_AUTOSCALE_VRAM);
    assert_true(c.target_compute == 0.9 && c.lower_compute == 0.4 && c.upper_compute == 0.99);
    assert_true(c.upper_vram == 0.999 && c.margin == 0.2 && c.update_threshold == 0.05);
    assert_int_equal(c.history_ms, 24 * HOUR);
    assert_int_equal(c.confidence_ms, 12 * HOUR);
    assert_int_equal(c.interval_ms, 30000);
    assert_true(c.max_compute_ratio == 3 && c.min_vram_ratio == 0.5);
    /* The older spelling. */
    c = parse_yaml("autoSetResources: {targetTflopsPercentile: \"0.8\", requestMarginFraction: "
                   "\"0.3\"}",
                   0, NULL);
    assert_true(c.target_compute == 0.8 && c.margin == 0.3);
}

static void config_errors_name_the_path(void **state)
{
    (void)state;
    parse_yaml("autoSetResources: {targetComputePercentile: \"1.5\"}", TF_ERANGE,
               "spec.autoScalingConfig.autoSetResources.targetComputePercentile: 1.5 is out of "
               "range 0..1");
    parse_yaml("autoSetResources: {targetComputePercentile: \"p95\"}", TF_EPARSE,
               "\"p95\" is not a number");
    parse_yaml("autoSetResources: {targetResource: gpu}", TF_EINVAL,
               "targetResource: expected compute, vram or all");
    parse_yaml("autoSetResources: {historyDataPeriod: 2 hours}", TF_EPARSE, "historyDataPeriod");
    parse_yaml("autoSetResources: {targetPercentil: \"0.9\"}", TF_EINVAL,
               "autoSetResources.targetPercentil: unknown field");
    parse_yaml("autoSetResources: {maxVRAMResourcesRatio: \"0.5\"}", TF_ERANGE, "out of range");
    parse_yaml("cronScalingRules: [{enable: true, start: \"0 9 * * *\", end: \"0 18 * * *\"}]",
               TF_EINVAL, "cronScalingRules[0].name: required");
    parse_yaml("cronScalingRules: [{enable: true, name: a, start: \"0 9 * * *\", end: \"0 9 * * "
               "*\"}]",
               TF_EINVAL, "start and end must differ");
    parse_yaml("cronScalingRules: [{enable: true, name: a, start: \"TZ=UTC 0 9 * * *\", end: \"0 "
               "18 * * *\"}]",
               TF_EINVAL, "cronScalingRules[0].start");
    parse_yaml("cronScalingRules: [{name: a, desiredResources: {requests: {tflops: lots}}}]",
               TF_EPARSE, "cronScalingRules[0].desiredResources.requests.tflops");
    parse_yaml("horizontal: {}", TF_EINVAL, "spec.autoScalingConfig.horizontal: unknown field");
    /* Declared by the CRDs but not acted on: enabling them is refused, naming the key. */
    parse_yaml("autoSetReplicas: {enable: true}", TF_ENOTSUP,
               "spec.autoScalingConfig.autoSetReplicas.enable: not supported");
    parse_yaml("externalScaler: {enable: true, url: \"http://scaler\"}", TF_ENOTSUP,
               "spec.autoScalingConfig.externalScaler.enable: not supported");
    parse_yaml("cronScalingRules: [{name: a, desiredResources: {requests: {tflops: \"5\", "
               "compute: \"50\"}}}]",
               TF_EINVAL, "desiredResources.requests: tflops and compute are exclusive");
    parse_yaml("cronScalingRules: [{name: a, desiredResources: {limits: {compute: \"150\"}}}]",
               TF_ERANGE, "desiredResources.limits.compute");
}

/* Upstream's Resource.compute (a percentage of one GPU) in a rule's desiredResources: applied
 * to a workload whose compute is a percentage, refused by name for one in TFLOPS. */
static void cron_rule_compute_percent_follows_the_workloads_unit(void **state)
{
    (void)state;
    struct tf_autoscale_config c = parse_yaml("cronScalingRules:\n"
                                              "- enable: true\n"
                                              "  name: nights\n"
                                              "  start: \"0 9 * * *\"\n"
                                              "  end: \"0 18 * * *\"\n"
                                              "  desiredResources:\n"
                                              "    requests: {compute: \"30\", vram: 2Gi}\n"
                                              "    limits: {computePercent: \"60.5\"}\n",
                                              0, NULL);
    assert_int_equal(c.rules[0].desired.req_percent, 3000);
    assert_int_equal(c.rules[0].desired.lim_percent, 6050);
    struct tf_autoscale_input in = input(&c, 0);
    in.now_ms = NOW + 2 * HOUR;
    in.original = in.current = (struct tf_autoscale_resources){0, 0, GiB, 2 * GiB, 1000, 2000};
    in.compute_by_percent = true;
    struct tf_autoscale_recommendation r = rec(&in);
    assert_int_equal(r.source, TF_AUTOSCALE_SRC_CRON);
    assert_true(r.changed);
    assert_int_equal(r.resources.req_percent, 3000);
    assert_int_equal(r.resources.lim_percent, 6050);
    assert_int_equal(r.resources.req_vram, 2 * GiB);
    assert_int_equal(r.resources.req_tflops, 0);
    json_object *j = tf_autoscale_resources_to_json(&r.resources);
    assert_string_equal(json_object_get_string(json_object_object_get(
                            json_object_object_get(j, "requests"), "compute")),
                        "30");
    json_object_put(j);
    /* The same rule on a workload in TFLOPS. */
    in.original = in.current = (struct tf_autoscale_resources){TF(10), TF(20), GiB, 2 * GiB, 0, 0};
    in.compute_by_percent = false;
    char err[512];
    assert_int_equal(tf_autoscale_recommend(&in, &r, err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "cronScalingRules \"nights\": desiredResources.requests.compute: "
                                "this workload's compute is given in TFLOPS; give "
                                "desiredResources.requests.tflops instead"));
}

static struct tf_autoscale_config rules_cfg(void)
{
    return parse_yaml("autoSetResources: {enable: true}\n"
                      "cronScalingRules:\n"
                      "- enable: true\n"
                      "  name: business-hours\n"
                      "  start: \"0 9 * * 1-5\"\n"
                      "  end: \"0 18 * * 1-5\"\n"
                      "  desiredResources:\n"
                      "    requests: {tflops: \"50\", vram: 12Gi}\n"
                      "    limits: {tflops: \"80\"}\n",
                      0, NULL);
}

static void cron_rule_overrides_during_its_window(void **state)
{
    (void)state;
    struct tf_autoscale_config c = rules_cfg();
    struct tf_autoscale_input in = input(&c, steady(120, TF(5), 3 * GiB));
    /* NOW = Wednesday 08:00Z: outside 09-18 UTC. */
    struct tf_autoscale_recommendation r = rec(&in);
    assert_int_not_equal(r.source, TF_AUTOSCALE_SRC_CRON);
    assert_string_equal(r.active_rule, "");
    in.now_ms = NOW + 2 * HOUR; /* 10:00Z */
    r = rec(&in);
    assert_int_equal(r.source, TF_AUTOSCALE_SRC_CRON);
    assert_string_equal(r.active_rule, "business-hours");
    assert_int_equal(r.resources.req_tflops, TF(50));
    assert_int_equal(r.resources.lim_tflops, TF(80));
    assert_int_equal(r.resources.req_vram, 12 * GiB);
    assert_true(r.resources.lim_vram > 0); /* not in the rule: from the percentile result */
    assert_non_null(strstr(r.reason, "cron scaling rule \"business-hours\" is active"));
    /* After the window, resources set by the rule revert to the spec's before estimating. */
    in.now_ms = NOW + 11 * HOUR; /* 19:00Z */
    in.current = r.resources;
    in.current_from_cron = true;
    in.nsamples = 0;
    r = rec(&in);
    assert_int_equal(r.source, TF_AUTOSCALE_SRC_PERCENTILE);
    assert_true(r.changed);
    assert_memory_equal(&r.resources, &in.original, sizeof(r.resources));
}

static void two_active_cron_rules_conflict(void **state)
{
    (void)state;
    struct tf_autoscale_config c =
        parse_yaml("cronScalingRules:\n"
                   "- {enable: true, name: a, start: \"0 9 * * *\", end: \"0 18 * * *\"}\n"
                   "- {enable: true, name: b, start: \"0 8 * * *\", end: \"0 12 * * *\"}\n"
                   "- {enable: false, name: c, start: \"0 0 * * *\", end: \"59 23 * * *\"}\n",
                   0, NULL);
    struct tf_autoscale_input in = input(&c, 0);
    in.now_ms = NOW + 2 * HOUR;
    struct tf_autoscale_recommendation r;
    char err[256];
    assert_int_equal(tf_autoscale_recommend(&in, &r, err, sizeof(err)), TF_ECONFLICT);
    assert_non_null(strstr(err, "\"a\" and \"b\" are active at the same time"));
    in.now_ms = NOW + 6 * HOUR; /* 14:00: only a */
    r = rec(&in);
    assert_string_equal(r.active_rule, "a");
}

static void pool_rules_apply_by_selector_and_the_workload_wins(void **state)
{
    (void)state;
    const char *yaml = "rules:\n"
                       "- name: inference\n"
                       "  selector: {matchLabels: {app: infer}}\n"
                       "  autoScaling:\n"
                       "    autoSetResources: {enable: true, targetResource: compute, "
                       "marginFraction: \"0.3\"}\n"
                       "- name: everything\n"
                       "  selector: {}\n"
                       "  autoScaling:\n"
                       "    autoSetResources: {marginFraction: \"0.5\"}\n"
                       "labels: {app: infer}\n"
                       "own: {autoSetResources: {marginFraction: \"0.25\"}}\n";
    json_object *docs;
    char err[256];
    assert_int_equal(tf_yaml_to_json(yaml, strlen(yaml), &docs, err, sizeof(err)), 0);
    json_object *d = json_object_array_get_idx(docs, 0);
    json_object *rules = tf_json_path(d, "rules", NULL), *labels = tf_json_path(d, "labels", NULL),
                *own = tf_json_path(d, "own", NULL);
    struct tf_autoscale_config c;
    char matched[64];
    assert_int_equal(tf_autoscale_config_resolve(rules, labels, own, "spec.autoScalingConfig",
                                                 false, TF_AUTOSCALE_UNSET, &c, matched,
                                                 sizeof(matched), err, sizeof(err)),
                     0);
    assert_string_equal(matched, "inference");
    assert_true(c.enable);
    assert_int_equal(c.target, TF_AUTOSCALE_COMPUTE);
    assert_true(c.margin == 0.25); /* the workload's own field wins */
    /* Other labels: the catch-all rule; annotations enable and choose the target. */
    json_object *other = json_object_new_object();
    json_object_object_add(other, "app", json_object_new_string("train"));
    assert_int_equal(tf_autoscale_config_resolve(rules, other, NULL, NULL, true, TF_AUTOSCALE_VRAM,
                                                 &c, matched, sizeof(matched), err, sizeof(err)),
                     0);
    assert_string_equal(matched, "everything");
    assert_true(c.enable && c.margin == 0.5);
    assert_int_equal(c.target, TF_AUTOSCALE_VRAM);
    json_object_put(other);
    /* No rule matches and no config: defaults. */
    assert_int_equal(tf_autoscale_config_resolve(NULL, NULL, NULL, NULL, false, TF_AUTOSCALE_UNSET,
                                                 &c, matched, sizeof(matched), err, sizeof(err)),
                     0);
    assert_false(c.enable);
    assert_string_equal(matched, "");
    json_object_put(docs);
}

static void status_recommendation_json_shape(void **state)
{
    (void)state;
    struct tf_autoscale_resources r = {TF(12.5), TF(25), 6 * GiB, 12 * GiB, 0, 0};
    json_object *o = tf_autoscale_resources_to_json(&r);
    assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                        "{\"requests\":{\"tflops\":\"12.5\",\"vram\":\"6Gi\"},\"limits\":{"
                        "\"tflops\":\"25\",\"vram\":\"12Gi\"}}");
    json_object_put(o);
    struct tf_autoscale_resources v = {0, 0, 1536 * MiB, 0, 0, 0};
    o = tf_autoscale_resources_to_json(&v);
    assert_string_equal(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
                        "{\"requests\":{\"vram\":\"1536Mi\"},\"limits\":{}}");
    json_object_put(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(over_provisioned_workload_is_scaled_down_to_p95_plus_margin),
        cmocka_unit_test(request_within_bounds_is_left_alone),
        cmocka_unit_test(under_provisioned_workload_is_scaled_up),
        cmocka_unit_test(target_resource_limits_what_changes),
        cmocka_unit_test(ratios_bound_the_change_relative_to_the_original),
        cmocka_unit_test(ceiling_caps_requests_to_the_room_on_the_gpu),
        cmocka_unit_test(nothing_is_recommended_too_early_or_without_data_or_when_disabled),
        cmocka_unit_test(little_history_widens_the_bounds),
        cmocka_unit_test(recent_usage_outweighs_old_usage),
        cmocka_unit_test(decay_histogram_percentiles_and_rebasing),
        cmocka_unit_test(config_defaults_and_every_field),
        cmocka_unit_test(config_errors_name_the_path),
        cmocka_unit_test(cron_rule_overrides_during_its_window),
        cmocka_unit_test(two_active_cron_rules_conflict),
        cmocka_unit_test(cron_rule_compute_percent_follows_the_workloads_unit),
        cmocka_unit_test(pool_rules_apply_by_selector_and_the_workload_wins),
        cmocka_unit_test(status_recommendation_json_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
