/* SPDX-License-Identifier: Apache-2.0
 *
 * The console's JSON API over a real metrics store: points written by the SQLite sink (as the
 * hypervisor writes them), read back through the GreptimeDB dialect (metrics/sqlquery.h), and
 * an inventory as a server builds it. Request parsing (the view path and the range/step
 * arguments), the seed 002 figures of the overview, the series of the detail views, and the
 * embedded pages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/err.h"
#include "console/console.h"
#include "metrics/sink.h"
#include "metrics/sqlquery.h"

#define GiB (1024.0 * 1024 * 1024)

static char dbpath[256];

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int query(void *arg, const char *sql, json_object **doc, json_object **names,
                 json_object **rows, char *err, size_t errlen)
{
    return tf_sql_query_json(arg, sql, 100000, doc, names, rows, err, errlen);
}

static int failing(void *arg, const char *sql, json_object **doc, json_object **names,
                   json_object **rows, char *err, size_t errlen)
{
    snprintf(err, errlen, "connection refused");
    return TF_EIO;
}

static json_object *inventory(void *arg)
{
    return json_tokener_parse(
        "{\"mode\": \"cluster\","
        " \"nodes\": [{\"name\": \"n1\", \"pool\": \"p\", \"phase\": \"Running\"},"
        "             {\"name\": \"n2\", \"pool\": \"p\", \"phase\": \"Running\"}],"
        " \"gpus\": [{\"uuid\": \"GPU-a\", \"node\": \"n1\", \"pool\": \"p\", \"model\": \"A\","
        "             \"tflops\": 100, \"vramBytes\": 42949672960, \"allocatedTflops\": 40,"
        "             \"allocatedVramBytes\": 10737418240},"
        "            {\"uuid\": \"GPU-b\", \"node\": \"n2\", \"pool\": \"p\", \"model\": \"A\","
        "             \"tflops\": 100, \"vramBytes\": 42949672960, \"allocatedTflops\": 0,"
        "             \"allocatedVramBytes\": 0}],"
        " \"workloads\": [{\"name\": \"train\", \"namespace\": \"default\", \"pool\": \"p\","
        "   \"gpus\": [\"GPU-a\"], \"tflopsRequest\": 40, \"tflopsLimit\": 80,"
        "   \"vramRequestBytes\": 10737418240, \"vramLimitBytes\": 17179869184,"
        "   \"recommendation\": {\"requests\": {\"tflops\": \"12\"}}}]}");
}

static struct tf_con_provider provider(void)
{
    struct tf_con_provider p = {.inventory = inventory, .arg = NULL};
    p.store.query = query;
    p.store.arg = dbpath;
    return p;
}

/* Writes the rows of the last 5 minutes (every 30 s): workload train on GPU-a uses 10 TFLOPS
 * and 4 GiB and is throttled (a counter that restarts once); "old" ran and is gone. */
static int setup(void **state)
{
    snprintf(dbpath, sizeof(dbpath), "/tmp/tf-console-test-%d.db", (int)getpid());
    unlink(dbpath);
    struct tf_metrics_sink *s;
    char err[256];
    assert_int_equal(tf_metrics_sqlite_sink_new(dbpath, NULL, &s, err, sizeof(err)), 0);
    int64_t now = now_ms();
    static const int64_t throttled[] = {0, 10, 20, 5, 15, 25, 35, 45, 55, 65, 75};
    for (int i = 0; i <= 10; i++) {
        int64_t ts = now - (10 - i) * 30000;
        struct tf_lp_point p[5];
        tf_lp_point_init(&p[0], "tf_gpu_usage", ts);
        tf_lp_tag(&p[0], "node", "n1");
        tf_lp_tag(&p[0], "pool", "p");
        tf_lp_tag(&p[0], "uuid", "GPU-a");
        tf_lp_float(&p[0], "compute_percentage", 10);
        tf_lp_float(&p[0], "compute_tflops", 10);
        tf_lp_int(&p[0], "memory_bytes", (int64_t)(4 * GiB));
        tf_lp_float(&p[0], "memory_percentage", 10);
        tf_lp_point_init(&p[1], "tf_worker_usage", ts);
        tf_lp_tag(&p[1], "node", "n1");
        tf_lp_tag(&p[1], "pool", "p");
        tf_lp_tag(&p[1], "uuid", "GPU-a");
        tf_lp_tag(&p[1], "worker", "train-0");
        tf_lp_tag(&p[1], "namespace", "default");
        tf_lp_tag(&p[1], "workload", "train");
        tf_lp_float(&p[1], "compute_percentage", 10);
        tf_lp_float(&p[1], "compute_tflops", 10);
        tf_lp_int(&p[1], "memory_bytes", (int64_t)(4 * GiB));
        tf_lp_float(&p[1], "memory_percentage", 10);
        tf_lp_int(&p[1], "compute_throttled_cnt", throttled[i]);
        tf_lp_point_init(&p[2], "tf_worker_resources", ts);
        tf_lp_tag(&p[2], "worker", "train-0");
        tf_lp_tag(&p[2], "workload", "train");
        tf_lp_tag(&p[2], "pool", "p");
        tf_lp_tag(&p[2], "namespace", "default");
        tf_lp_float(&p[2], "tflops_request", 40);
        tf_lp_float(&p[2], "tflops_limit", 80);
        tf_lp_float(&p[2], "vram_bytes_request", 10 * GiB);
        tf_lp_float(&p[2], "vram_bytes_limit", 16 * GiB);
        tf_lp_int(&p[2], "gpu_count", 1);
        tf_lp_point_init(&p[3], "tf_node_metrics", ts);
        tf_lp_tag(&p[3], "node", "n1");
        tf_lp_tag(&p[3], "pool", "p");
        tf_lp_float(&p[3], "allocated_tflops_percent", 40);
        tf_lp_float(&p[3], "allocated_vram_percent", 25);
        tf_lp_point_init(&p[4], "tf_worker_usage", ts);
        tf_lp_tag(&p[4], "uuid", "GPU-b");
        tf_lp_tag(&p[4], "worker", "old-0");
        tf_lp_tag(&p[4], "namespace", "batch");
        tf_lp_tag(&p[4], "workload", "old");
        tf_lp_float(&p[4], "compute_tflops", 1);
        tf_lp_int(&p[4], "memory_bytes", 1 << 20);
        assert_int_equal(tf_metrics_sink_write(s, p, 5, err, sizeof(err)), 0);
    }
    tf_metrics_sink_destroy(s);
    return 0;
}

static int teardown(void **state)
{
    unlink(dbpath);
    return 0;
}

static json_object *get(const struct tf_con_provider *p, const char *sub, const char *range,
                        int want)
{
    json_object *o = NULL;
    int st = tf_con_api(p, "GET", sub, range, NULL, &o);
    if (st != want)
        fprintf(stderr, "%s: %d %s\n", sub, st, json_object_to_json_string(o));
    assert_int_equal(st, want);
    return o;
}

static json_object *at(json_object *o, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *save = NULL, *k = strtok_r(buf, ".", &save); o && k;
         k = strtok_r(NULL, ".", &save)) {
        if (json_object_is_type(o, json_type_array))
            o = json_object_array_get_idx(o, (size_t)atoi(k));
        else if (!json_object_object_get_ex(o, k, &o))
            return NULL;
    }
    return o;
}

static double dnum(json_object *o, const char *path)
{
    json_object *v = at(o, path);
    assert_non_null(v);
    return json_object_get_double(v);
}

static json_object *workload(json_object *ov, const char *name)
{
    json_object *a = at(ov, "workloads");
    for (size_t i = 0; i < json_object_array_length(a); i++)
        if (!strcmp(json_object_get_string(at(json_object_array_get_idx(a, i), "name")), name))
            return json_object_array_get_idx(a, i);
    return NULL;
}

/* ---- requests ------------------------------------------------------------------------------ */

static void ranges_of_1h_1d_7d_give_about_240_points(void **state)
{
    struct tf_con_req r;
    char err[256];
    static const struct {
        const char *range;
        int64_t range_s, step_s;
    } cases[] = {{NULL, 3600, 15},     {"1h", 3600, 15}, {"1d", 86400, 600},
                 {"7d", 604800, 3600}, {"15m", 900, 5},  {"90 seconds", 90, 1}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        assert_int_equal(tf_con_req_parse("/overview", cases[i].range, NULL, &r, err, sizeof(err)),
                         0);
        assert_int_equal(r.range_s, cases[i].range_s);
        assert_int_equal(r.step_s, cases[i].step_s);
    }
    assert_int_equal(tf_con_req_parse("/overview", "1h", "1m", &r, err, sizeof(err)), 0);
    assert_int_equal(r.step_s, 60);
}

static void ranges_and_steps_out_of_bounds_are_refused_by_name(void **state)
{
    struct tf_con_req r;
    char err[256];
    const char *bad[] = {"30s", "31d", "1 month", "-1h", "1h; DROP TABLE x", "", "1.5h"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(tf_con_req_parse("/overview", bad[i], NULL, &r, err, sizeof(err)),
                         TF_EINVAL);
        assert_non_null(strstr(err, "range"));
    }
    assert_int_equal(tf_con_req_parse("/overview", "7d", "1s", &r, err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "step"));
    assert_int_equal(tf_con_req_parse("/overview", "1h", "0s", &r, err, sizeof(err)), TF_EINVAL);
}

static void names_that_could_leave_a_sql_literal_are_refused(void **state)
{
    struct tf_con_req r;
    char err[256];
    assert_int_equal(tf_con_req_parse("/gpus/GPU-1'--", NULL, NULL, &r, err, sizeof(err)),
                     TF_EINVAL);
    assert_int_equal(tf_con_req_parse("/gpus/", NULL, NULL, &r, err, sizeof(err)), TF_EINVAL);
    assert_int_equal(tf_con_req_parse("/workloads/default/a'b", NULL, NULL, &r, err, sizeof(err)),
                     TF_EINVAL);
    assert_int_equal(tf_con_req_parse("/workloads/Default/a", NULL, NULL, &r, err, sizeof(err)),
                     TF_EINVAL);
    assert_int_equal(tf_con_req_parse("/workloads/default", NULL, NULL, &r, err, sizeof(err)),
                     TF_EINVAL);
    assert_int_equal(tf_con_req_parse("/workloads/default/a/b", NULL, NULL, &r, err, sizeof(err)),
                     TF_EINVAL);
    char longname[400];
    memset(longname, 'a', sizeof(longname));
    memcpy(longname, "/workloads/ns/", 14);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(tf_con_req_parse(longname, NULL, NULL, &r, err, sizeof(err)), TF_EINVAL);
    assert_int_equal(
        tf_con_req_parse("/gpus/GPU-6f0c1b2e-aa:01.0_x", NULL, NULL, &r, err, sizeof(err)), 0);
    assert_string_equal(r.uuid, "GPU-6f0c1b2e-aa:01.0_x");
    assert_int_equal(
        tf_con_req_parse("/workloads/kube-system/my.app-1", NULL, NULL, &r, err, sizeof(err)), 0);
    assert_string_equal(r.ns, "kube-system");
    assert_string_equal(r.name, "my.app-1");
    assert_int_equal(tf_con_req_parse("/nothing", NULL, NULL, &r, err, sizeof(err)), TF_ENOENT);
}

static void the_console_api_is_read_only(void **state)
{
    struct tf_con_provider p = provider();
    json_object *o = NULL;
    assert_int_equal(tf_con_api(&p, "POST", "/overview", NULL, NULL, &o), 405);
    assert_non_null(strstr(json_object_get_string(at(o, "error")), "read-only"));
    json_object_put(o);
    assert_int_equal(tf_con_api(&p, "DELETE", "/workloads/default/train", NULL, NULL, &o), 405);
    json_object_put(o);
    assert_int_equal(tf_con_api(&p, "GET", "/nothing", NULL, NULL, &o), 404);
    json_object_put(o);
    assert_int_equal(tf_con_api(&p, "GET", "/overview", "1 fortnight", NULL, &o), 400);
    json_object_put(o);
}

/* ---- views --------------------------------------------------------------------------------- */

static void overview_shows_what_was_requested_and_not_used(void **state)
{
    struct tf_con_provider p = provider();
    json_object *o = get(&p, "/overview", "15m", 200);
    json_object *t = workload(o, "train");
    assert_non_null(t);
    assert_true(json_object_get_boolean(at(t, "active")));
    assert_true(fabs(dnum(t, "usage.tflopsAvg") - 10) < 1e-6);
    assert_true(fabs(dnum(t, "usage.vramPeakBytes") - 4 * GiB) < 1);
    assert_true(fabs(dnum(t, "requestAvg.tflops") - 40) < 1e-6);
    /* Seed 002: 40 TFLOPS requested, 10 used on average; 10 GiB requested, 4 GiB peak. */
    assert_true(fabs(dnum(t, "unused.tflops") - 30) < 1e-6);
    assert_true(fabs(dnum(t, "unused.vramBytes") - 6 * GiB) < 1);
    assert_true(fabs(dnum(o, "totals.tflops.requestedUnused") - 30) < 1e-6);
    /* Throttled launches: the counters' growth over the range (a counter that restarted
     * within it is undercounted here; the workload's series count the restart). */
    assert_int_equal((int)dnum(t, "usage.throttled"), 75);
    assert_string_equal(json_object_get_string(at(t, "recommendation.requests.tflops")), "12");
    json_object_put(o);
}

static void overview_lists_workloads_that_ended_within_the_range(void **state)
{
    struct tf_con_provider p = provider();
    json_object *o = get(&p, "/overview", "1h", 200);
    json_object *old = workload(o, "old");
    assert_non_null(old);
    assert_false(json_object_get_boolean(at(old, "active")));
    assert_string_equal(json_object_get_string(at(old, "namespace")), "batch");
    assert_true(fabs(dnum(old, "usage.tflopsAvg") - 1) < 1e-6);
    assert_int_equal((int)dnum(o, "totals.workloads"), 1);
    json_object_put(o);
}

static void overview_per_node_allocation_and_empty_nodes(void **state)
{
    struct tf_con_provider p = provider();
    json_object *o = get(&p, "/overview", "1d", 200);
    json_object *n1 = at(o, "nodes.0"), *n2 = at(o, "nodes.1");
    assert_string_equal(json_object_get_string(at(n1, "name")), "n1");
    assert_true(fabs(dnum(n1, "tflops.allocatedPercent") - 40) < 1e-6);
    assert_true(fabs(dnum(n1, "tflops.allocatedPercentAvg") - 40) < 1e-6);
    assert_true(fabs(dnum(n1, "vram.allocatedPercentAvg") - 25) < 1e-6);
    assert_true(fabs(dnum(n1, "tflops.usedPercent") - 10) < 1e-6);
    assert_true(fabs(dnum(n2, "tflops.allocatedPercent")) < 1e-6);
    assert_int_equal((int)dnum(o, "totals.nodesEmpty"), 1);
    assert_int_equal((int)dnum(o, "totals.nodesUnderAllocated"), 0);
    assert_int_equal((int)dnum(o, "totals.gpus"), 2);
    assert_true(fabs(dnum(o, "totals.tflops.capacity") - 200) < 1e-6);
    assert_true(fabs(dnum(o, "totals.tflops.allocatedPercent") - 20) < 1e-6);
    assert_string_equal(json_object_get_string(at(o, "gpus.0.workloads.0.name")), "train");
    assert_int_equal(json_object_array_length(at(o, "warnings")), 0);
    json_object_put(o);
}

static void a_store_that_fails_is_a_warning_and_the_inventory_still_shows(void **state)
{
    struct tf_con_provider p = provider();
    p.store.query = failing;
    json_object *o = get(&p, "/overview", NULL, 200);
    assert_true(json_object_array_length(at(o, "warnings")) >= 3);
    assert_non_null(strstr(json_object_get_string(at(o, "warnings.0")), "connection refused"));
    assert_true(fabs(dnum(o, "workloads.0.tflopsLimit") - 80) < 1e-6);
    assert_null(at(o, "workloads.0.usage"));
    json_object_put(o);
    p.store.query = NULL;
    p.store.why_none = "metrics are off";
    o = get(&p, "/overview", NULL, 200);
    assert_string_equal(json_object_get_string(at(o, "warnings.0")), "metrics are off");
    json_object_put(o);
}

static void gpu_series_have_gaps_where_nothing_was_written(void **state)
{
    struct tf_con_provider p = provider();
    json_object *o = get(&p, "/gpus/GPU-a", "15m", 200);
    json_object *t = at(o, "series.t"), *c = at(o, "series.computePercent");
    size_t n = json_object_array_length(t);
    assert_true(n >= 180 && n <= 182);
    assert_int_equal(json_object_array_length(c), n);
    assert_null(json_object_array_get_idx(c, 0)); /* 15 min ago: nothing */
    size_t have = 0;
    for (size_t i = 0; i < n; i++)
        if (json_object_array_get_idx(c, i)) {
            have++;
            assert_true(fabs(json_object_get_double(json_object_array_get_idx(c, i)) - 10) < 1e-6);
        }
    assert_true(have >= 10 && have <= 11);
    assert_int_equal(json_object_get_int64(json_object_array_get_idx(t, 1)) -
                         json_object_get_int64(json_object_array_get_idx(t, 0)),
                     5);
    assert_string_equal(json_object_get_string(at(o, "workloadSeries.0.name")), "train");
    assert_string_equal(json_object_get_string(at(o, "workloads.0.name")), "train");
    json_object_put(o);
    o = get(&p, "/gpus/GPU-nope", NULL, 404);
    json_object_put(o);
}

static void workload_series_show_request_limit_use_and_throttling(void **state)
{
    struct tf_con_provider p = provider();
    json_object *o = get(&p, "/workloads/default/train", "15m", 200);
    json_object *s = at(o, "series");
    size_t n = json_object_array_length(at(s, "t"));
    double thr = 0;
    int req = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *v = json_object_array_get_idx(at(s, "throttled"), i);
        if (v)
            thr += json_object_get_double(v);
        v = json_object_array_get_idx(at(s, "tflopsRequest"), i);
        if (v) {
            req++;
            assert_true(fabs(json_object_get_double(v) - 40) < 1e-6);
            assert_true(
                fabs(json_object_get_double(json_object_array_get_idx(at(s, "tflopsLimit"), i)) -
                     80) < 1e-6);
            assert_true(
                fabs(json_object_get_double(json_object_array_get_idx(at(s, "tflopsUsed"), i)) -
                     10) < 1e-6);
        }
    }
    assert_true(req >= 10);
    /* 0..20, restart, 5..75: 20 + 5 + 70. */
    assert_true(fabs(thr - 95) < 1e-6);
    assert_true(json_object_get_boolean(at(o, "workload.active")));
    json_object_put(o);
    /* Gone from the inventory, still in the metrics. */
    o = get(&p, "/workloads/batch/old", "1h", 200);
    assert_false(json_object_get_boolean(at(o, "workload.active")));
    json_object_put(o);
    o = get(&p, "/workloads/default/never", "1h", 404);
    json_object_put(o);
}

static void local_resources_summed_over_gpus_are_shown_per_gpu(void **state)
{
    struct tf_con_provider p = provider();
    p.store.resources_summed = true;
    /* gpu_count is 1 in the rows: the same numbers; the division is what matters when 2. */
    json_object *o = get(&p, "/overview", "15m", 200);
    assert_true(fabs(dnum(workload(o, "train"), "requestAvg.tflops") - 40) < 1e-6);
    json_object_put(o);
}

static void events_come_newest_first_and_no_table_is_no_warning(void **state)
{
    struct tf_con_provider p = provider();
    json_object *o = get(&p, "/events", "1h", 200);
    assert_int_equal(json_object_array_length(at(o, "events")), 0);
    assert_int_equal(json_object_array_length(at(o, "warnings")), 0);
    json_object_put(o);
    struct tf_metrics_sink *s;
    char err[256];
    assert_int_equal(tf_metrics_sqlite_sink_new(dbpath, NULL, &s, err, sizeof(err)), 0);
    struct tf_lp_point e[2];
    int64_t now = now_ms();
    for (int i = 0; i < 2; i++) {
        tf_lp_point_init(&e[i], "tf_events", now - 1000 + i);
        tf_lp_tag(&e[i], "event_type", "Warning");
        tf_lp_tag(&e[i], "reason", i ? "AllocationRefused" : "WorkloadCreated");
        tf_lp_tag(&e[i], "object_kind", "Workload");
        tf_lp_tag(&e[i], "namespace", "default");
        tf_lp_tag(&e[i], "object", "big");
        tf_lp_string(&e[i], "message", i ? "insufficient VRAM: need 200Gi, max free 80Gi" : "ok");
    }
    assert_int_equal(tf_metrics_sink_write(s, e, 2, err, sizeof(err)), 0);
    tf_metrics_sink_destroy(s);
    o = get(&p, "/events", "1h", 200);
    assert_int_equal(json_object_array_length(at(o, "events")), 2);
    assert_string_equal(json_object_get_string(at(o, "events.0.reason")), "AllocationRefused");
    assert_non_null(strstr(json_object_get_string(at(o, "events.0.message")), "insufficient VRAM"));
    assert_string_equal(json_object_get_string(at(o, "events.0.kind")), "Workload");
    json_object_put(o);
}

/* ---- pages --------------------------------------------------------------------------------- */

static void the_pages_are_built_in_with_their_types(void **state)
{
    const struct tf_con_asset *a = tf_con_asset_find("/console/");
    assert_non_null(a);
    assert_string_equal(a->path, "/console/index.html");
    assert_non_null(strstr(a->ctype, "text/html"));
    assert_non_null(memmem(a->data, a->len, "app.js", 6));
    assert_int_equal(a->etag[0], '"');
    a = tf_con_asset_find("/console/vendor/uPlot.iife.min.js");
    assert_non_null(a);
    assert_non_null(strstr(a->ctype, "javascript"));
    assert_true(a->len > 10000 && a->len < 200000);
    assert_non_null(tf_con_asset_find("/console/app.js"));
    assert_non_null(tf_con_asset_find("/console/style.css"));
    assert_null(tf_con_asset_find("/console/../etc/passwd"));
    assert_null(tf_con_asset_find("/console/nothing.js"));
    /* No page may load anything from elsewhere. */
    for (int i = 0; tf_con_headers[i]; i += 2)
        if (!strcmp(tf_con_headers[i], "Content-Security-Policy"))
            assert_non_null(strstr(tf_con_headers[i + 1], "default-src 'none'"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ranges_of_1h_1d_7d_give_about_240_points),
        cmocka_unit_test(ranges_and_steps_out_of_bounds_are_refused_by_name),
        cmocka_unit_test(names_that_could_leave_a_sql_literal_are_refused),
        cmocka_unit_test(the_console_api_is_read_only),
        cmocka_unit_test_setup_teardown(overview_shows_what_was_requested_and_not_used, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(overview_lists_workloads_that_ended_within_the_range, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(overview_per_node_allocation_and_empty_nodes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            a_store_that_fails_is_a_warning_and_the_inventory_still_shows, setup, teardown),
        cmocka_unit_test_setup_teardown(gpu_series_have_gaps_where_nothing_was_written, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(workload_series_show_request_limit_use_and_throttling,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(local_resources_summed_over_gpus_are_shown_per_gpu, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(events_come_newest_first_and_no_table_is_no_warning, setup,
                                        teardown),
        cmocka_unit_test(the_pages_are_built_in_with_their_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
