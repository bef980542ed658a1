/* SPDX-License-Identifier: Apache-2.0
 *
 * The autoscaler's GreptimeDB side: the usage query, the parser of GreptimeDB's JSON answers
 * (columns by name, timestamp units, nulls, error answers, every malformed part named), and
 * the SQL HTTP client against tests/controller/fakegreptime.py (form-encoded POST to
 * /v1/sql?db=..., rows filtered by namespace, workload and time, errors surfaced).
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
#include "controller/greptime.h"
#include "controller/greptime_codec.h"
#include "harness.h"

static int parse(const char *body, struct tf_usage_sample **v, size_t *n, char *err, size_t el)
{
    return tf_greptime_usage_parse(body, strlen(body), v, n, err, el);
}

static void usage_query_is_bounded_and_names_are_checked(void **state)
{
    (void)state;
    char sql[TF_GREPTIME_SQL_MAX];
    assert_int_equal(tf_greptime_usage_sql("ml", "infer-1.a", 1000, 2000, sql, sizeof(sql)), 0);
    assert_string_equal(sql, "SELECT greptime_timestamp, compute_tflops, memory_bytes FROM "
                             "tf_worker_usage WHERE namespace = 'ml' AND workload = 'infer-1.a' "
                             "AND greptime_timestamp >= 1000 AND greptime_timestamp <= 2000 "
                             "ORDER BY greptime_timestamp");
    assert_int_equal(tf_greptime_usage_sql("ml", "x' OR '1'='1", 0, 1, sql, sizeof(sql)),
                     TF_EINVAL);
    assert_int_equal(tf_greptime_usage_sql("ML", "x", 0, 1, sql, sizeof(sql)), TF_EINVAL);
    assert_int_equal(tf_greptime_usage_sql("", "x", 0, 1, sql, sizeof(sql)), TF_EINVAL);
    assert_int_equal(tf_greptime_usage_sql("ml", "x", 0, 1, sql, 40), TF_ERANGE);
}

static void records_are_read_by_column_name(void **state)
{
    (void)state;
    const char *body =
        "{\"output\":[{\"records\":{\"schema\":{\"column_schemas\":["
        "{\"name\":\"memory_bytes\",\"data_type\":\"Int64\"},"
        "{\"name\":\"worker\",\"data_type\":\"String\"},"
        "{\"name\":\"greptime_timestamp\",\"data_type\":\"TimestampMillisecond\"},"
        "{\"name\":\"compute_tflops\",\"data_type\":\"Float64\"}]},"
        "\"rows\":[[3221225472,\"w\",1714546800000,5.25],[null,\"w\",1714546860000,5],"
        "[1.5e9,\"w\",1714546920000,null]],\"total_rows\":3}}],\"execution_time_ms\":3}";
    struct tf_usage_sample *v;
    size_t n;
    char err[256];
    assert_int_equal(parse(body, &v, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 3);
    assert_int_equal(v[0].ts_ms, INT64_C(1714546800000));
    assert_int_equal(v[0].tflops_milli, 5250);
    assert_int_equal(v[0].vram_bytes, INT64_C(3221225472));
    assert_int_equal(v[1].vram_bytes, -1);
    assert_int_equal(v[1].tflops_milli, 5000);
    assert_int_equal(v[2].tflops_milli, -1);
    assert_int_equal(v[2].vram_bytes, 1500000000);
    free(v);
    /* No rows, and no value columns at all. */
    assert_int_equal(parse("{\"output\":[{\"records\":{\"schema\":{\"column_schemas\":[{\"name\":"
                           "\"greptime_timestamp\"}]},\"rows\":[[1]]}}]}",
                           &v, &n, err, sizeof(err)),
                     0);
    assert_int_equal(n, 1);
    assert_int_equal(v[0].tflops_milli, -1);
    free(v);
    assert_int_equal(parse("{\"output\":[{\"affectedrows\":0},{\"records\":{\"schema\":{"
                           "\"column_schemas\":[{\"name\":\"greptime_timestamp\"}]},\"rows\":[]}}"
                           "]} \n",
                           &v, &n, err, sizeof(err)),
                     0);
    assert_int_equal(n, 0);
    assert_null(v);
}

static void timestamps_follow_their_unit_or_rfc3339(void **state)
{
    (void)state;
    static const struct {
        const char *type, *value;
        int64_t want;
    } cases[] = {
        {"TimestampSecond", "1714546800", INT64_C(1714546800000)},
        {"TimestampMicrosecond", "1714546800123456", INT64_C(1714546800123)},
        {"TimestampNanosecond", "1714546800123456789", INT64_C(1714546800123)},
        {"Int64", "1714546800000", INT64_C(1714546800000)},
        {"TimestampMillisecond", "\"2024-05-01T07:00:00.250Z\"", INT64_C(1714546800250)},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char body[512], err[256];
        snprintf(body, sizeof(body),
                 "{\"output\":[{\"records\":{\"schema\":{\"column_schemas\":[{\"name\":"
                 "\"greptime_timestamp\",\"data_type\":\"%s\"}]},\"rows\":[[%s]]}}]}",
                 cases[i].type, cases[i].value);
        struct tf_usage_sample *v;
        size_t n;
        assert_int_equal(parse(body, &v, &n, err, sizeof(err)), 0);
        assert_int_equal(v[0].ts_ms, cases[i].want);
        free(v);
    }
}

static void error_answers_and_malformed_ones_are_named(void **state)
{
    (void)state;
    struct tf_usage_sample *v;
    size_t n;
    char err[256];
    assert_int_equal(parse("{\"code\":4001,\"error\":\"Table not found: greptime.public.x\","
                           "\"execution_time_ms\":0}",
                           &v, &n, err, sizeof(err)),
                     TF_EIO);
    assert_string_equal(err, "GreptimeDB error 4001: Table not found: greptime.public.x");
    static const struct {
        const char *body, *msg;
    } bad[] = {
        {"not json", "not JSON"},
        {"{\"output\":[]} x", "trailing data"},
        {"{\"output\":[{\"records\":{}}", "not JSON"},
        {"{\"execution_time_ms\":1}", "no output"},
        {"{\"output\":[{\"affectedrows\":1}]}", "no records"},
        {"{\"output\":[{\"records\":{\"schema\":{\"column_schemas\":[{\"name\":\"x\"}]},"
         "\"rows\":[]}}]}",
         "no greptime_timestamp"},
        {"{\"output\":[{\"records\":{\"schema\":{\"column_schemas\":[{\"name\":"
         "\"greptime_timestamp\"},{\"name\":\"compute_tflops\"}]},\"rows\":[[1,2],[3]]}}]}",
         "rows[1]: expected an array of 2 values"},
        {"{\"output\":[{\"records\":{\"schema\":{\"column_schemas\":[{\"name\":"
         "\"greptime_timestamp\"},{\"name\":\"compute_tflops\"}]},\"rows\":[[1,-2]]}}]}",
         "rows[0].compute_tflops: -2 out of range"},
        {"{\"output\":[{\"records\":{\"schema\":{\"column_schemas\":[{\"name\":"
         "\"greptime_timestamp\"},{\"name\":\"memory_bytes\"}]},\"rows\":[[1,\"3Gi\"]]}}]}",
         "rows[0].memory_bytes: expected a number"},
        {"{\"output\":[{\"records\":{\"schema\":{\"column_schemas\":[{\"name\":"
         "\"greptime_timestamp\"}]},\"rows\":[[true]]}}]}",
         "rows[0].greptime_timestamp"},
        {"{\"output\":[{\"records\":{\"schema\":{\"column_schemas\":[{\"name\":"
         "\"greptime_timestamp\",\"data_type\":\"TimestampSecond\"}]},\"rows\":"
         "[[9223372036854775807]]}}]}",
         "out of range"},
        {"{\"output\":[{\"records\":{\"schema\":{\"column_schemas\":[{\"name\":"
         "\"greptime_timestamp\"}]},\"rows\":[[\"yesterday\"]]}}]}",
         "rows[0].greptime_timestamp"},
        {"{\"output\":[{\"records\":{\"schema\":{\"column_schemas\":[{\"data_type\":"
         "\"Int64\"}]},\"rows\":[]}}]}",
         "column_schemas[0]: no name"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        int rc = parse(bad[i].body, &v, &n, err, sizeof(err));
        if (rc == 0 || !strstr(err, bad[i].msg))
            fail_msg("case %zu: rc %d, message \"%s\", want \"%s\"", i, rc, err, bad[i].msg);
        assert_null(v);
    }
}

static struct fake_api gdb;

static void insert(const char *rows)
{
    struct tf_k8s_config cfg;
    tf_k8s_config_init(&cfg);
    cfg.server = gdb.server;
    struct tf_k8s_client *c = tf_k8s_client_new(&cfg);
    char body[8192], err[256];
    snprintf(body, sizeof(body), "{\"table\":\"tf_worker_usage\",\"rows\":%s}", rows);
    assert_int_equal(tf_k8s_request(c, "POST", "/_fake/insert", "application/json", body, NULL,
                                    NULL, err, sizeof(err)),
                     0);
    tf_k8s_client_destroy(c);
}

static void usage_is_read_through_the_sql_http_api(void **state)
{
    (void)state;
    if (fake_start_script(&gdb, "tests/controller/fakegreptime.py", NULL))
        skip();
    insert("[{\"greptime_timestamp\":3000,\"namespace\":\"ml\",\"workload\":\"a\","
           "\"compute_tflops\":2.5,\"memory_bytes\":100},"
           "{\"greptime_timestamp\":1000,\"namespace\":\"ml\",\"workload\":\"a\","
           "\"compute_tflops\":1.5,\"memory_bytes\":200},"
           "{\"greptime_timestamp\":2000,\"namespace\":\"ml\",\"workload\":\"b\","
           "\"compute_tflops\":9,\"memory_bytes\":9},"
           "{\"greptime_timestamp\":2000,\"namespace\":\"other\",\"workload\":\"a\","
           "\"compute_tflops\":9,\"memory_bytes\":9},"
           "{\"greptime_timestamp\":9000,\"namespace\":\"ml\",\"workload\":\"a\","
           "\"compute_tflops\":9,\"memory_bytes\":9}]");
    struct tf_greptime *g = tf_greptime_new(gdb.server, NULL, 5000);
    assert_non_null(g);
    struct tf_usage_sample *v;
    size_t n;
    char err[512];
    assert_int_equal(tf_greptime_usage(g, "ml", "a", 0, 5000, &v, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 2);
    assert_int_equal(v[0].ts_ms, 1000); /* ordered by time */
    assert_int_equal(v[0].tflops_milli, 1500);
    assert_int_equal(v[1].vram_bytes, 100);
    free(v);
    assert_int_equal(tf_greptime_usage(g, "ml", "none", 0, 5000, &v, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 0);
    tf_greptime_destroy(g);
    /* The database goes in the query string; GreptimeDB's error message comes back. */
    char url[128];
    snprintf(url, sizeof(url), "%s/", gdb.server);
    g = tf_greptime_new(url, "nope", 5000);
    assert_int_equal(tf_greptime_usage(g, "ml", "a", 0, 5000, &v, &n, err, sizeof(err)), TF_EIO);
    assert_non_null(strstr(err, "Database not found: nope"));
    tf_greptime_destroy(g);
    fake_stop(&gdb);
    /* Nobody listening any more. */
    g = tf_greptime_new(url, NULL, 2000);
    assert_int_equal(tf_greptime_usage(g, "ml", "a", 0, 5000, &v, &n, err, sizeof(err)), TF_EIO);
    assert_non_null(strstr(err, "GreptimeDB query failed"));
    tf_greptime_destroy(g);
    assert_null(tf_greptime_new("", NULL, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(usage_query_is_bounded_and_names_are_checked),
        cmocka_unit_test(records_are_read_by_column_name),
        cmocka_unit_test(timestamps_follow_their_unit_or_rfc3339),
        cmocka_unit_test(error_answers_and_malformed_ones_are_named),
        cmocka_unit_test(usage_is_read_through_the_sql_http_api),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
