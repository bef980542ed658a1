/* SPDX-License-Identifier: Apache-2.0
 *
 * The seed 002 YAML blocks (src/core/efficiency.h): capacityConfig.minResources /
 * warmResources, nodeManagerConfig.nodeCompaction.period and .defrag with the seed's
 * defaults (no timezone: UTC), upstream's marker TTLs and path-naming errors; and the
 * duration / RFC 3339 helpers they rely on (src/core/timeutil.h).
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
#include "core/efficiency.h"
#include "core/timeutil.h"

#define GiB (INT64_C(1) << 30)
#define MIN (60 * INT64_C(1000))

static int parse(const char *yaml, struct tf_pool_efficiency *out, char *err, size_t errlen)
{
    json_object *docs;
    if (tf_yaml_to_json(yaml, strlen(yaml), &docs, err, errlen))
        fail_msg("yaml: %s", err);
    int rc = tf_pool_efficiency_parse(json_object_array_get_idx(docs, 0),
                                      "gpuPools[0].specTemplate", out, err, errlen);
    json_object_put(docs);
    return rc;
}

static void expect_error(const char *yaml, int code, const char *needle)
{
    struct tf_pool_efficiency e;
    char err[512] = "";
    int rc = parse(yaml, &e, err, sizeof(err));
    if (rc != code)
        fail_msg("rc %d (%s), want %d for:\n%s", rc, err, code, yaml);
    if (!strstr(err, needle))
        fail_msg("message \"%s\" lacks \"%s\"", err, needle);
    /* On error the output holds the defaults. */
    assert_false(e.defrag.enabled);
    assert_int_equal(e.compaction_period_ms, 5 * MIN);
}

static void seed_blocks_parse_with_exact_values(void **state)
{
    (void)state;
    const char *yaml = "capacityConfig:\n"
                       "  minResources:\n"
                       "    tflops: \"20\"\n"
                       "    vram: 10Gi\n"
                       "  warmResources:\n"
                       "    tflops: \"10\"\n"
                       "    vram: 5Gi\n"
                       "nodeManagerConfig:\n"
                       "  nodeCompaction:\n"
                       "    period: 30m\n"
                       "    defrag:\n"
                       "      enabled: true\n"
                       "      schedule: \"0 3 * * *\"\n"
                       "      timezone: \"UTC\"\n"
                       "      maxDuration: 2h\n"
                       "      utilizationThresholdPercent: 40\n";
    struct tf_pool_efficiency e;
    char err[256];
    assert_int_equal(parse(yaml, &e, err, sizeof(err)), 0);
    assert_true(e.min.tflops_set && e.min.vram_set);
    assert_int_equal(e.min.tflops_milli, 20000);
    assert_int_equal(e.min.vram_bytes, 10 * GiB);
    assert_int_equal(e.warm.tflops_milli, 10000);
    assert_int_equal(e.warm.vram_bytes, 5 * GiB);
    assert_false(e.max.tflops_set);
    assert_int_equal(e.compaction_period_ms, 30 * MIN);
    assert_true(e.defrag.enabled);
    assert_string_equal(e.defrag.schedule, "0 3 * * *");
    assert_string_equal(e.defrag.timezone, "UTC");
    assert_int_equal(e.defrag.max_duration_ms, 120 * MIN);
    assert_int_equal(e.defrag.utilization_threshold_pct, 40);
    assert_int_equal(e.provisioning, TF_PROVISION_AUTO_SELECT);
}

static void defaults_when_blocks_are_absent(void **state)
{
    (void)state;
    struct tf_pool_efficiency e;
    char err[256];
    assert_int_equal(tf_pool_efficiency_parse(NULL, NULL, &e, err, sizeof(err)), 0);
    assert_int_equal(parse("{}", &e, err, sizeof(err)), 0);
    assert_false(e.min.tflops_set || e.min.vram_set || e.warm.tflops_set || e.warm.vram_set);
    assert_int_equal(e.compaction_period_ms, 5 * MIN);
    assert_false(e.defrag.enabled);
    assert_string_equal(e.defrag.schedule, "0 3 * * *");
    assert_string_equal(e.defrag.timezone, "");
    assert_int_equal(e.defrag.max_duration_ms, 120 * MIN);
    assert_int_equal(e.defrag.utilization_threshold_pct, 40);
    /* The default schedule is parsed too. */
    assert_true(e.defrag.cron.hour == (1u << 3) && e.defrag.cron.minute == 1);
    /* A disabled defrag block needs no timezone; numbers and other modes are fine. */
    assert_int_equal(parse("capacityConfig: {minResources: {tflops: 20.5, vram: 1073741824, cpu: "
                           "\"4\"}}\n"
                           "nodeManagerConfig:\n"
                           "  provisioningMode: Karpenter\n"
                           "  defaultIsolationMode: soft\n"
                           "  nodeCompaction: {defrag: {enabled: false, "
                           "utilizationThresholdPercent: \"25\"}}\n"
                           "qosConfig: {defaultQoS: high}\n",
                           &e, err, sizeof(err)),
                     0);
    assert_int_equal(e.min.tflops_milli, 20500);
    assert_int_equal(e.min.vram_bytes, GiB);
    assert_int_equal(e.provisioning, TF_PROVISION_KARPENTER);
    assert_int_equal(e.defrag.utilization_threshold_pct, 25);
}

static void defrag_without_a_timezone_runs_in_utc_as_upstream(void **state)
{
    (void)state;
    struct tf_pool_efficiency e;
    char err[512];
    /* Upstream's defaulted pool: no timezone (the controller's local time, UTC), marker TTLs. */
    assert_int_equal(parse("nodeManagerConfig: {nodeCompaction: {defrag: {enabled: true, "
                           "evictedPodMarkerTTL: never, sourceNodeMarkerTTL: 30m}}}",
                           &e, err, sizeof(err)),
                     0);
    assert_true(e.defrag.enabled);
    assert_string_equal(e.defrag.timezone, "UTC");
    expect_error("nodeManagerConfig: {nodeCompaction: {defrag: {sourceNodeMarkerTTL: soon}}}",
                 TF_EPARSE,
                 "gpuPools[0].specTemplate.nodeManagerConfig.nodeCompaction.defrag."
                 "sourceNodeMarkerTTL");
    expect_error("nodeManagerConfig: {nodeCompaction: {defrag: {enabled: \"true\", timezone: "
                 "\"\"}}}",
                 TF_EINVAL, "defrag.timezone: empty time zone name");
    expect_error("nodeManagerConfig: {nodeCompaction: {defrag: {enabled: true, timezone: "
                 "\"../etc\"}}}",
                 TF_EINVAL, "\"..\" component");
}

static void schedule_errors_name_the_field_and_reject_tz_prefixes(void **state)
{
    (void)state;
    expect_error("nodeManagerConfig: {nodeCompaction: {defrag: {schedule: \"TZ=Asia/Shanghai 0 3 "
                 "* * *\", timezone: UTC}}}",
                 TF_EINVAL,
                 "nodeCompaction.defrag.schedule: \"TZ=Asia/Shanghai 0 3 * * *\": remove the TZ= "
                 "prefix");
    expect_error("nodeManagerConfig: {nodeCompaction: {defrag: {schedule: \"0 3 * *\"}}}",
                 TF_EINVAL, "defrag.schedule: \"0 3 * *\": expected 5 fields");
    expect_error("nodeManagerConfig: {nodeCompaction: {defrag: {schedule: 3}}}", TF_EINVAL,
                 "defrag.schedule: expected a string");
}

static void bad_values_name_the_path(void **state)
{
    (void)state;
    expect_error("capacityConfig: {warmResources: {vram: 5GB}}", TF_EPARSE,
                 "gpuPools[0].specTemplate.capacityConfig.warmResources.vram");
    expect_error("capacityConfig: {minResources: {tflops: [1]}}", TF_EINVAL,
                 "capacityConfig.minResources.tflops: expected a quantity");
    expect_error("capacityConfig: {minResources: {gpus: 2}}", TF_EINVAL,
                 "capacityConfig.minResources.gpus: unknown field");
    expect_error("capacityConfig: [1]", TF_EINVAL, "capacityConfig: expected a mapping");
    expect_error("nodeManagerConfig: {nodeCompaction: {period: 30}}", TF_EINVAL,
                 "nodeCompaction.period: expected a string");
    expect_error("nodeManagerConfig: {nodeCompaction: {period: 30x}}", TF_EPARSE,
                 "nodeCompaction.period: \"30x\": unknown unit \"x\"");
    expect_error("nodeManagerConfig: {nodeCompaction: {period: 0s}}", TF_ERANGE,
                 "must be longer than zero");
    expect_error("nodeManagerConfig: {nodeCompaction: {periode: 30m}}", TF_EINVAL,
                 "nodeCompaction.periode: unknown field (expected one of: period, defrag)");
    expect_error("nodeManagerConfig: {nodeCompaction: {defrag: {maxDuration: -1h}}}", TF_ERANGE,
                 "defrag.maxDuration: \"-1h\": a duration must not be negative");
    expect_error("nodeManagerConfig: {nodeCompaction: {defrag: {utilizationThresholdPercent: "
                 "101}}}",
                 TF_ERANGE, "utilizationThresholdPercent: 101 is out of range 0..100");
    expect_error("nodeManagerConfig: {nodeCompaction: {defrag: {utilizationThresholdPercent: "
                 "40.5}}}",
                 TF_EINVAL, "expected a whole number");
    expect_error("nodeManagerConfig: {nodeCompaction: {defrag: {enabled: maybe}}}", TF_EINVAL,
                 "defrag.enabled: expected true or false");
    expect_error("nodeManagerConfig: {nodeCompaction: {defrag: {enable: true}}}", TF_EINVAL,
                 "defrag.enable: unknown field");
    expect_error("nodeManagerConfig: {provisioningMode: Auto}", TF_EINVAL,
                 "provisioningMode: \"Auto\" is not a provisioning mode");
}

static void durations_follow_go_syntax(void **state)
{
    (void)state;
    struct {
        const char *s;
        int64_t ms;
    } ok[] = {{"30m", 30 * MIN},
              {"2h", 120 * MIN},
              {"1h30m", 90 * MIN},
              {"1.5h", 90 * MIN},
              {"90s", 90000},
              {"500ms", 500},
              {"1d", 1440 * MIN},
              {"0", 0},
              {"+5m", 5 * MIN},
              {"1h0m0s", 60 * MIN},
              {"2000us", 2},
              {"3000000ns", 3},
              {".5s", 500},
              {"0.0003125d", 27000},
              {"1\xc2\xb5s1ms999us", 2}};
    char err[256];
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t ms = -1;
        if (tf_duration_parse(ok[i].s, &ms, "d", err, sizeof(err)))
            fail_msg("%s: %s", ok[i].s, err);
        if (ms != ok[i].ms)
            fail_msg("%s = %lld, want %lld", ok[i].s, (long long)ms, (long long)ok[i].ms);
    }
    const char *bad[] = {"",          "m",     "5",       "5 m", "1.h5",
                         "-5m",       "1us",   "1.0001s", "1w",  "99999999999999999999h",
                         "36600000h", "1..5s", NULL};
    for (int i = 0; bad[i]; i++) {
        int64_t ms;
        if (tf_duration_parse(bad[i], &ms, "d", err, sizeof(err)) == 0)
            fail_msg("\"%s\" accepted as %lld", bad[i], (long long)ms);
    }
    char buf[32];
    int64_t vals[] = {0, 500, 1500, 45000, 90 * MIN, 120 * MIN, 1440 * MIN + 1};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        tf_duration_format(vals[i], buf, sizeof(buf));
        int64_t back;
        if (tf_duration_parse(buf, &back, "d", err, sizeof(err)) || back != vals[i])
            fail_msg("format %lld -> %s does not round-trip", (long long)vals[i], buf);
    }
    tf_duration_format(90 * MIN, buf, sizeof(buf));
    assert_string_equal(buf, "1h30m");
}

static void timestamps_parse_as_rfc3339(void **state)
{
    (void)state;
    char err[256], buf[48];
    int64_t ms;
    assert_int_equal(tf_rfc3339_parse("2024-03-10T07:00:00Z", &ms, "t", err, sizeof(err)), 0);
    assert_int_equal(ms, INT64_C(1710054000000));
    assert_int_equal(tf_rfc3339_parse("2024-03-10T15:00:00.250+08:00", &ms, "t", err, sizeof(err)),
                     0);
    assert_int_equal(ms, INT64_C(1710054000250));
    tf_rfc3339_format(ms, buf, sizeof(buf));
    assert_string_equal(buf, "2024-03-10T07:00:00.250Z");
    tf_rfc3339_format_offset(INT64_C(1710054000000), -4 * 3600, buf, sizeof(buf));
    assert_string_equal(buf, "2024-03-10T03:00:00-04:00");
    assert_int_equal(tf_rfc3339_parse("1969-12-31T23:59:59.999z", &ms, "t", err, sizeof(err)), 0);
    assert_int_equal(ms, -1);
    const char *bad[] = {"2024-02-30T00:00:00Z",
                         "2024-03-10 07:00:00Z",
                         "2024-03-10T07:00:00",
                         "2024-03-10T24:00:00Z",
                         "2024-3-10T07:00:00Z",
                         "2024-03-10T07:00:60Z",
                         "2024-03-10T07:00:00+25:00",
                         "2024-03-10T07:00:00.Z",
                         "",
                         NULL};
    for (int i = 0; bad[i]; i++)
        if (tf_rfc3339_parse(bad[i], &ms, "creationTimestamp", err, sizeof(err)) == 0)
            fail_msg("\"%s\" accepted", bad[i]);
    assert_non_null(strstr(err, "creationTimestamp"));
    /* Calendar helpers over a wide range agree with each other. */
    for (int64_t d = -800000; d < 3000000; d += 997) {
        int64_t y;
        int m, dd;
        tf_civil_from_days(d, &y, &m, &dd);
        assert_int_equal(tf_days_from_civil(y, m, dd), d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_blocks_parse_with_exact_values),
        cmocka_unit_test(defaults_when_blocks_are_absent),
        cmocka_unit_test(defrag_without_a_timezone_runs_in_utc_as_upstream),
        cmocka_unit_test(schedule_errors_name_the_field_and_reject_tz_prefixes),
        cmocka_unit_test(bad_values_name_the_path),
        cmocka_unit_test(durations_follow_go_syntax),
        cmocka_unit_test(timestamps_parse_as_rfc3339),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
