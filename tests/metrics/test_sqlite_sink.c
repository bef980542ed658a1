/* SPDX-License-Identifier: Apache-2.0
 *
 * Metric rows land in the local SQLite database and the seed 002 queries (GreptimeDB SQL,
 * '1d'::INTERVAL and all) return them through tf_sql_query, as `tfctl query` runs them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "metrics/schema.h"
#include "metrics/sink.h"
#include "metrics/sqlquery.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char dir[256];
static char db[300];

static int setup(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/tf-test-sqlite-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(db, sizeof(db), "%s/metrics.db", dir);
    return 0;
}

static int teardown(void **state)
{
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

struct rows {
    int n;
    char text[16][256];
};

static int collect(void *arg, sqlite3_stmt *st, int64_t row)
{
    struct rows *r = arg;
    if (row < 0 || r->n >= 16)
        return 0;
    char *t = r->text[r->n++];
    t[0] = '\0';
    for (int c = 0; c < sqlite3_column_count(st); c++) {
        const unsigned char *v = sqlite3_column_text(st, c);
        size_t len = strlen(t);
        snprintf(t + len, 256 - len, "%s%s", c ? "|" : "", v ? (const char *)v : "NULL");
    }
    return 0;
}

static void write_usage(struct tf_metrics_sink *s, int64_t ts)
{
    struct tf_lp_point p[4];
    tf_lp_point_init(&p[0], "tf_gpu_usage", ts);
    tf_lp_tag(&p[0], "node", "local");
    tf_lp_tag(&p[0], "pool", "local");
    tf_lp_tag(&p[0], "uuid", "GPU-a");
    tf_lp_float(&p[0], "compute_percentage", 40);
    tf_lp_float(&p[0], "memory_percentage", 25);
    tf_lp_int(&p[0], "memory_bytes", 1 << 30);

    tf_lp_point_init(&p[1], "tf_worker_usage", ts);
    tf_lp_tag(&p[1], "workload", "train");
    tf_lp_tag(&p[1], "uuid", "GPU-a");
    tf_lp_float(&p[1], "compute_tflops", 10.5);
    tf_lp_int(&p[1], "memory_bytes", 512 << 20);

    tf_lp_point_init(&p[2], "tf_worker_resources", ts);
    tf_lp_tag(&p[2], "workload", "train");
    tf_lp_float(&p[2], "tflops_request", 20);
    tf_lp_float(&p[2], "vram_bytes_request", 2147483648.0);
    tf_lp_bool(&p[2], "ready", true);

    tf_lp_point_init(&p[3], "tf_node_metrics", ts);
    tf_lp_tag(&p[3], "node", "local");
    tf_lp_tag(&p[3], "pool", "local");
    tf_lp_float(&p[3], "allocated_tflops_percent", 30);
    tf_lp_float(&p[3], "allocated_vram_percent", 12.5);
    char err[256] = "";
    if (tf_metrics_sink_write(s, p, 4, err, sizeof(err)))
        fail_msg("write: %s", err);
    assert_int_equal(tf_metrics_sink_flush(s, err, sizeof(err)), 0);
}

static void seed_queries_return_the_rows_written(void **state)
{
    struct tf_metrics_sink *s;
    char err[256] = "", uri[320];
    snprintf(uri, sizeof(uri), "sqlite:%s", db);
    if (tf_metrics_sink_open(uri, &s, err, sizeof(err)))
        fail_msg("open: %s", err);
    int64_t now = now_ms();
    write_usage(s, now - 1000);
    write_usage(s, now - 2 * 86400000LL); /* outside the 1-day window */
    assert_int_equal(s->points_written, 8);

    static const char *const q1 = "SELECT node, pool,\n"
                                  "       avg(allocated_tflops_percent) AS tflops_allocated_pct,\n"
                                  "       avg(allocated_vram_percent)   AS vram_allocated_pct\n"
                                  "FROM tf_node_metrics\n"
                                  "WHERE greptime_timestamp >= now() - '1d'::INTERVAL\n"
                                  "GROUP BY node, pool\n"
                                  "ORDER BY tflops_allocated_pct;";
    static const char *const q2 = "SELECT node, uuid,\n"
                                  "       avg(compute_percentage) AS compute_used_pct,\n"
                                  "       max(memory_percentage)  AS vram_peak_pct\n"
                                  "FROM tf_gpu_usage\n"
                                  "WHERE greptime_timestamp >= now() - '1d'::INTERVAL\n"
                                  "GROUP BY node, uuid\n"
                                  "ORDER BY compute_used_pct;";
    static const char *const q3 =
        "SELECT workload,\n"
        "       avg(tflops_request)                  AS tflops_request,\n"
        "       avg(vram_bytes_request) / 1073741824 AS vram_request_gib\n"
        "FROM tf_worker_resources\n"
        "WHERE greptime_timestamp >= now() - '1d'::INTERVAL\n"
        "GROUP BY workload;";
    static const char *const q4 = "SELECT workload,\n"
                                  "       avg(compute_tflops)             AS tflops_avg,\n"
                                  "       max(compute_tflops)             AS tflops_peak,\n"
                                  "       max(memory_bytes) / 1073741824  AS vram_peak_gib\n"
                                  "FROM tf_worker_usage\n"
                                  "WHERE greptime_timestamp >= now() - '1d'::INTERVAL\n"
                                  "GROUP BY workload;";
    struct {
        const char *sql, *want;
    } cases[] = {
        {q1, "local|local|30.0|12.5"},
        {q2, "local|GPU-a|40.0|25.0"},
        {q3, "train|20.0|2.0"},
        {q4, "train|10.5|10.5|0.5"},
    };
    for (size_t i = 0; i < 4; i++) {
        struct rows r = {0};
        int64_t n = -1;
        if (tf_sql_query(db, cases[i].sql, collect, &r, &n, err, sizeof(err)))
            fail_msg("query %zu: %s", i, err);
        assert_int_equal(n, 1);
        assert_string_equal(r.text[0], cases[i].want);
    }
    /* A wider window sees both rows. */
    struct rows r = {0};
    assert_int_equal(tf_sql_query(db,
                                  "SELECT count(*) FROM tf_gpu_usage WHERE greptime_timestamp >= "
                                  "now() - INTERVAL '3 days'",
                                  collect, &r, NULL, err, sizeof(err)),
                     0);
    assert_string_equal(r.text[0], "2");
    tf_metrics_sink_destroy(s);
}

static void every_seed_table_exists_before_the_first_row(void **state)
{
    struct tf_metrics_sink *s;
    char err[256];
    assert_int_equal(tf_metrics_sqlite_sink_new(db, NULL, &s, err, sizeof(err)), 0);
    for (size_t i = 0; i < tf_metric_table_count(); i++) {
        const struct tf_metric_table *t = tf_metric_table_at(i);
        char sql[512];
        snprintf(sql, sizeof(sql), "SELECT greptime_timestamp, %s, %s FROM %s", t->tags[0],
                 t->fields[t->nfields - 1].name, t->name);
        int64_t n = -1;
        if (tf_sql_query(db, sql, NULL, NULL, &n, err, sizeof(err)))
            fail_msg("%s: %s", t->name, err);
        assert_int_equal(n, 0);
    }
    tf_metrics_sink_destroy(s);
}

static void new_measurements_and_columns_are_added_on_write(void **state)
{
    struct tf_metrics_sink *s;
    char err[256];
    assert_int_equal(tf_metrics_sqlite_sink_new(db, NULL, &s, err, sizeof(err)), 0);
    struct tf_lp_point p[2];
    tf_lp_point_init(&p[0], "custom \"meas\"", now_ms());
    tf_lp_tag(&p[0], "team", "ml-ops");
    tf_lp_string(&p[0], "note", "it's \"quoted\"");
    tf_lp_point_init(&p[1], "tf_gpu_usage", now_ms());
    tf_lp_tag(&p[1], "uuid", "GPU-b");
    tf_lp_float(&p[1], "extra_metric", 1.25);
    assert_int_equal(tf_metrics_sink_write(s, p, 2, err, sizeof(err)), 0);
    tf_metrics_sink_destroy(s);
    struct rows r = {0};
    assert_int_equal(tf_sql_query(db, "SELECT team, note FROM \"custom \"\"meas\"\"\"", collect, &r,
                                  NULL, err, sizeof(err)),
                     0);
    assert_string_equal(r.text[0], "ml-ops|it's \"quoted\"");
    memset(&r, 0, sizeof(r));
    assert_int_equal(tf_sql_query(db, "SELECT extra_metric FROM tf_gpu_usage", collect, &r, NULL,
                                  err, sizeof(err)),
                     0);
    assert_string_equal(r.text[0], "1.25");
}

static void invalid_points_are_counted_and_the_rest_written(void **state)
{
    struct tf_metrics_sink *s;
    char err[256];
    assert_int_equal(tf_metrics_sqlite_sink_new(db, NULL, &s, err, sizeof(err)), 0);
    struct tf_lp_point p[3];
    tf_lp_point_init(&p[0], "tf_gpu_usage", 1);
    tf_lp_float(&p[0], "compute_percentage", 1);
    tf_lp_point_init(&p[1], "tf_gpu_usage", 2); /* no field */
    tf_lp_point_init(&p[2], "tf_gpu_usage", 3);
    tf_lp_tag(&p[2], "greptime_timestamp", "x"); /* reserved */
    tf_lp_float(&p[2], "compute_percentage", 1);
    assert_int_equal(tf_metrics_sink_write(s, p, 3, err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "point 1"));
    assert_int_equal(s->points_written, 1);
    assert_int_equal(s->points_dropped, 2);
    tf_metrics_sink_destroy(s);
}

static void query_errors_explain_themselves(void **state)
{
    struct tf_metrics_sink *s;
    char err[256];
    assert_int_equal(tf_metrics_sqlite_sink_new(db, NULL, &s, err, sizeof(err)), 0);
    tf_metrics_sink_destroy(s);
    assert_int_equal(
        tf_sql_query(db, "SELECT nope FROM tf_gpu_usage", NULL, NULL, NULL, err, sizeof(err)),
        TF_EPARSE);
    assert_non_null(strstr(err, "no such column: nope"));
    assert_int_equal(
        tf_sql_query(db, "DELETE FROM tf_gpu_usage", NULL, NULL, NULL, err, sizeof(err)), TF_EPERM);
    assert_int_equal(tf_sql_query(db, "SELECT 1; SELECT 2", NULL, NULL, NULL, err, sizeof(err)),
                     TF_EPARSE);
    assert_non_null(strstr(err, "one statement"));
    assert_int_equal(
        tf_sql_query(db, "SELECT '1 month'::INTERVAL", NULL, NULL, NULL, err, sizeof(err)),
        TF_EPARSE);
    assert_non_null(strstr(err, "month"));
    assert_int_equal(
        tf_sql_query("/nonexistent/x.db", "SELECT 1", NULL, NULL, NULL, err, sizeof(err)),
        TF_ENOENT);
}

static void old_rows_are_pruned_by_retention(void **state)
{
    struct tf_metrics_sink *s;
    char err[256];
    struct tf_metrics_sqlite_opts o = {.retention_ms = 3600 * 1000};
    assert_int_equal(tf_metrics_sqlite_sink_new(db, &o, &s, err, sizeof(err)), 0);
    struct tf_lp_point p[2];
    tf_lp_point_init(&p[0], "tf_gpu_usage", now_ms() - 2 * 3600 * 1000);
    tf_lp_float(&p[0], "compute_percentage", 1);
    tf_lp_point_init(&p[1], "tf_gpu_usage", now_ms());
    tf_lp_float(&p[1], "compute_percentage", 2);
    assert_int_equal(tf_metrics_sink_write(s, p, 2, err, sizeof(err)), 0);
    tf_metrics_sink_destroy(s);
    struct rows r = {0};
    assert_int_equal(tf_sql_query(db, "SELECT compute_percentage FROM tf_gpu_usage", collect, &r,
                                  NULL, err, sizeof(err)),
                     0);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.text[0], "2.0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(seed_queries_return_the_rows_written, setup, teardown),
        cmocka_unit_test_setup_teardown(every_seed_table_exists_before_the_first_row, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(new_measurements_and_columns_are_added_on_write, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(invalid_points_are_counted_and_the_rest_written, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(query_errors_explain_themselves, setup, teardown),
        cmocka_unit_test_setup_teardown(old_rows_are_pruned_by_retention, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
