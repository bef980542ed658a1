/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-hypervisor and `tfctl run/get/top/query` end to end, with the real binaries: bad API
 * input, shared-mode runs, unschedulable requests, concurrent runs, workload crashes, kill -9
 * and restart, re-discovery, Prometheus text and the metric rows behind the seed queries.
 * GPUs come from the fake NVML device file (fake_nvml.c) so discovery and placement are
 * deterministic; CUDA-executing tests live with the simulated GPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hvtest.h"

#define A100                                                                                       \
    "NVIDIA A100-SXM4-80GB|GPU-a1000000-0000-4000-8000-000000000001|85899345920|40|1073741824\n"
#define L4 "NVIDIA L4|GPU-14000000-0000-4000-8000-000000000002|24152899584|0|0\n"

static struct hvt T;

static int setup_one(void **state)
{
    hvt_init(&T, A100);
    hvt_start(&T, NULL);
    return 0;
}

static int setup_two(void **state)
{
    hvt_init(&T, A100 L4);
    hvt_start(&T, NULL);
    return 0;
}

static int setup_none(void **state)
{
    hvt_init(&T, A100 L4);
    return 0;
}

static int teardown(void **state)
{
    hvt_cleanup(&T);
    return 0;
}

static void expect_error(const char *method, const char *path, const char *body, const char *ctype,
                         int status, const char *msg)
{
    json_object *o = NULL;
    int st = hvt_http(&T, method, path, body, ctype, &o);
    if (st != status)
        fail_msg("%s %s %.60s: HTTP %d, want %d (%s)", method, path, body ? body : "", st, status,
                 o ? json_object_to_json_string(o) : "no JSON");
    const char *e = json_object_get_string(json_object_object_get(o, "error"));
    if (!e || !strstr(e, msg))
        fail_msg("%s %s: error \"%s\" does not mention \"%s\"", method, path, e ? e : "(none)",
                 msg);
    json_object_put(o);
}

static int64_t allocated_vram(void)
{
    json_object *o = NULL;
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/devices", NULL, NULL, &o), 200);
    int64_t sum = 0;
    for (size_t i = 0; i < json_object_array_length(o); i++)
        sum += json_object_get_int64(
            json_object_object_get(json_object_array_get_idx(o, i), "allocatedVramBytes"));
    json_object_put(o);
    return sum;
}

static void bad_api_input_gets_4xx_json_and_changes_nothing(void **state)
{
    const char *W = "/api/v1/workloads";
    expect_error("POST", W, "not json", NULL, 400, "not valid JSON");
    expect_error("POST", W, "{\"name\": ", NULL, 400, "not valid JSON");
    expect_error("POST", W, "{}", NULL, 400, "name: required");
    expect_error("POST", W, "[1,2]", NULL, 400, "JSON object");
    expect_error("POST", W, "{\"name\":\"a\"} x", NULL, 400, "trailing");
    expect_error("POST", W, "{\"name\":\"Bad_Name\"}", NULL, 400, "not a valid workload name");
    expect_error("POST", W, "{\"name\":\"a\",\"vramLimit\":\"4Gb\"}", NULL, 400, "vramLimit");
    expect_error("POST", W, "{\"name\":\"a\",\"vramLimit\":-5}", NULL, 400, "vramLimit");
    expect_error("POST", W, "{\"name\":\"a\",\"bogus\":1}", NULL, 400, "unknown key \"bogus\"");
    expect_error("POST", W, "{\"name\":\"a\",\"gpuCount\":0}", NULL, 400, "gpuCount");
    expect_error("POST", W, "{\"name\":\"a\",\"gpuCount\":\"2\"}", NULL, 400, "gpuCount");
    expect_error("POST", W, "{\"name\":\"a\",\"isolation\":\"fast\"}", NULL, 400, "isolation");
    expect_error("POST", W, "{\"name\":\"a\",\"isolation\":\"shared\",\"tflopsLimit\":\"10\"}",
                 NULL, 400, "whole GPUs");
    expect_error("POST", W, "{\"name\":\"a\",\"tflopsLimit\":\"10\",\"computePercentLimit\":50}",
                 NULL, 400, "mutually exclusive");
    expect_error("POST", W, "{\"name\":\"a\",\"computePercentLimit\":\"150\"}", NULL, 400,
                 "computePercentLimit");
    expect_error("POST", W, "{\"name\":\"a\",\"gpuModel\":\"Z80\"}", NULL, 400, "Z80");
    expect_error("POST", W, "{\"name\":\"a\",\"qos\":\"urgent\"}", NULL, 400, "qos");
    expect_error("POST", W, "{\"name\":\"a\"}", "text/plain", 415, "application/json");
    char *big = malloc(70001);
    memset(big, ' ', 70000);
    big[0] = '{';
    big[69999] = '}';
    big[70000] = '\0';
    expect_error("POST", W, big, NULL, 413, "larger than");
    free(big);
    expect_error("DELETE", "/api/v1/workloads/nope", NULL, NULL, 404, "not found");
    expect_error("GET", "/api/v1/workloads/nope", NULL, NULL, 404, "not found");
    expect_error("DELETE", "/api/v1/workloads/NOPE", NULL, NULL, 400, "not a valid");
    expect_error("GET", "/api/v1/nothing", NULL, NULL, 404, "no such resource");
    expect_error("PUT", "/api/v1/devices", "{}", NULL, 405, "not allowed");
    expect_error("POST", "/api/v1/workloads/x/processes", "{\"pid\":-1}", NULL, 400, "pid");
    expect_error("POST", "/api/v1/workloads/x/processes", "{\"pid\":1,\"x\":2}", NULL, 400, "pid");
    /* Valid input that local mode cannot serve is refused, not run without its limits. */
    expect_error("POST", W, "{\"name\":\"a\",\"isolation\":\"remote\",\"remote\":\"h:1\"}", NULL,
                 501, "remote");
    assert_int_equal(hvt_count_workloads(&T), 0);
    assert_int_equal(allocated_vram(), 0);
    /* The server still works after all that. */
    json_object *o = NULL;
    assert_int_equal(
        hvt_http(&T, "POST", W, "{\"name\":\"ok\",\"isolation\":\"shared\"}", NULL, &o), 201);
    assert_string_equal(json_object_get_string(json_object_object_get(
                            json_object_object_get(o, "env"), "CUDA_VISIBLE_DEVICES")),
                        "GPU-a1000000-0000-4000-8000-000000000001");
    json_object_put(o);
    expect_error("POST", W, "{\"name\":\"ok\",\"isolation\":\"shared\"}", NULL, 409,
                 "already exists");
    assert_int_equal(hvt_http(&T, "DELETE", "/api/v1/workloads/ok", NULL, NULL, &o), 200);
    json_object_put(o);
    assert_int_equal(allocated_vram(), 0);
    /* A soft workload gets its limit region and the limiter. */
    assert_int_equal(hvt_http(&T, "POST", W,
                              "{\"name\":\"soft\",\"computePercentLimit\":\"25\","
                              "\"vramLimit\":\"1Gi\"}",
                              NULL, &o),
                     201);
    json_object *env = json_object_object_get(o, "env");
    const char *shm = json_object_get_string(json_object_object_get(env, "TF_SHM_PATH"));
    const char *pre = json_object_get_string(json_object_object_get(env, "LD_PRELOAD"));
    assert_non_null(shm);
    assert_non_null(pre);
    assert_non_null(strstr(pre, "libtf_limiter.so"));
    assert_int_equal(access(shm, R_OK | W_OK), 0);
    char region[512];
    snprintf(region, sizeof(region), "%s", shm);
    json_object_put(o);
    assert_int_equal(allocated_vram(), INT64_C(1) << 30);
    assert_int_equal(hvt_http(&T, "DELETE", "/api/v1/workloads/soft", NULL, NULL, &o), 200);
    json_object_put(o);
    assert_int_not_equal(access(region, F_OK), 0);
    assert_int_equal(allocated_vram(), 0);
}

static void shared_run_sees_its_gpu_and_returns_the_exit_code(void **state)
{
    char *out = NULL;
    const char *argv[] = {"run",
                          "--isolation",
                          "shared",
                          "--",
                          "sh",
                          "-c",
                          "echo visible=$CUDA_VISIBLE_DEVICES workload=$TF_WORKLOAD; exit 7",
                          NULL};
    assert_int_equal(hvt_tfctl(&T, &out, argv), 7);
    assert_non_null(strstr(out, "visible=GPU-a1000000-0000-4000-8000-000000000001 workload=run-"));
    free(out);
    assert_int_equal(hvt_count_workloads(&T), 0);
    /* A manifest's annotations through the core workload model (seed 004: shared). */
    char manifest[512];
    snprintf(manifest, sizeof(manifest), "%s/examples/seed-004-migration.yaml",
             getenv("TF_SRCDIR"));
    const char *fromf[] = {"run", "-f", manifest, "--", "sh", "-c", "echo workload=$TF_WORKLOAD",
                           NULL};
    assert_int_equal(hvt_tfctl(&T, &out, fromf), 0);
    assert_non_null(strstr(out, "workload=recommender"));
    assert_non_null(strstr(out, "isolation shared"));
    free(out);
    /* Too big for any GPU: the VRAM reason wins over "soft is not in this build". */
    const char *huge[] = {"run", "--vram-limit", "4Ti", "--", "true", NULL};
    assert_int_equal(hvt_tfctl(&T, &out, huge), 1);
    assert_non_null(strstr(out, "insufficient VRAM: need 4Ti, max free 80Gi"));
    free(out);
    const char *model[] = {"run", "--isolation", "shared", "--gpu-model", "L4", "--", "true", NULL};
    assert_int_equal(hvt_tfctl(&T, &out, model), 1);
    assert_non_null(strstr(out, "none of model L4 (node has A100-80GB)"));
    free(out);
    const char *badf[] = {"run", "-f", "/nonexistent.yaml", "--", "true", NULL};
    assert_int_equal(hvt_tfctl(&T, &out, badf), 2);
    assert_non_null(strstr(out, "/nonexistent.yaml"));
    free(out);
    const char *bad[] = {"run", "--vram-limit", "4Gb", "--", "true", NULL};
    assert_int_equal(hvt_tfctl(&T, &out, bad), 2);
    assert_non_null(strstr(out, "--vram-limit: \"4Gb\""));
    free(out);
}

static bool has_workloads(struct hvt *t, void *arg)
{
    return hvt_count_workloads(t) == *(int *)arg;
}

static void unschedulable_requests_fail_at_once_with_reasons(void **state)
{
    char log[400];
    snprintf(log, sizeof(log), "%s/holder.log", T.dir);
    const char *hold[] = {"run", "--isolation", "shared", "--name", "holder",
                          "--",  "sleep",       "30",     NULL};
    pid_t holder = hvt_tfctl_bg(&T, log, hold);
    int one = 1;
    assert_true(hvt_wait(has_workloads, &T, &one, 10000));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *out = NULL;
    const char *second[] = {"run", "--isolation", "shared", "--", "true", NULL};
    assert_int_equal(hvt_tfctl(&T, &out, second), 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_non_null(strstr(out, "unschedulable"));
    assert_non_null(strstr(out, "none compatible with isolation shared (GPUs in use as shared)"));
    free(out);
    const char *two[] = {"run", "--isolation", "shared", "--gpu-count", "2", "--", "true", NULL};
    assert_int_equal(hvt_tfctl(&T, &out, two), 1);
    free(out);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(secs < 5.0); /* refused at once, not queued */
    kill(holder, SIGTERM);   /* tfctl forwards it to sleep, then releases */
    int st;
    waitpid(holder, &st, 0);
    int zero = 0;
    assert_true(hvt_wait(has_workloads, &T, &zero, 5000));
}

static void concurrent_runs_never_overallocate(void **state)
{
    enum { N = 6 };
    pid_t pids[N];
    for (int i = 0; i < N; i++) {
        char log[400];
        snprintf(log, sizeof(log), "%s/c%d.log", T.dir, i);
        const char *argv[] = {"run", "--isolation", "shared", "--", "sleep", "1", NULL};
        pids[i] = hvt_tfctl_bg(&T, log, argv);
    }
    int max_seen = 0;
    for (int k = 0; k < 60; k++) { /* ~1.5 s of observation */
        json_object *o = NULL;
        assert_int_equal(hvt_http(&T, "GET", "/api/v1/devices", NULL, NULL, &o), 200);
        int busy = 0;
        for (size_t i = 0; i < json_object_array_length(o); i++) {
            json_object *d = json_object_array_get_idx(o, i);
            int w = json_object_get_int(json_object_object_get(d, "workloads"));
            assert_true(w <= 1); /* shared: one workload per GPU, ever */
            assert_true(json_object_get_int64(json_object_object_get(d, "allocatedVramBytes")) <=
                        json_object_get_int64(json_object_object_get(d, "vramBytes")));
            busy += w;
        }
        json_object_put(o);
        if (busy > max_seen)
            max_seen = busy;
        usleep(25000);
    }
    int ok = 0, refused = 0;
    for (int i = 0; i < N; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        assert_true(WIFEXITED(st));
        if (WEXITSTATUS(st) == 0)
            ok++;
        else if (WEXITSTATUS(st) == 1)
            refused++;
    }
    assert_int_equal(ok + refused, N);
    assert_true(ok >= 2); /* both GPUs were used */
    assert_true(max_seen <= 2);
    assert_int_equal(hvt_count_workloads(&T), 0);
}

static int workload_pids(const char *name, int *pids, int max)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/workloads/%s", name);
    json_object *o = NULL;
    if (hvt_http(&T, "GET", path, NULL, NULL, &o) != 200) {
        json_object_put(o);
        return -1;
    }
    json_object *p = json_object_object_get(o, "pids");
    int n = 0;
    for (size_t i = 0; i < json_object_array_length(p) && n < max; i++)
        pids[n++] = json_object_get_int(json_object_array_get_idx(p, i));
    json_object_put(o);
    return n;
}

static bool has_two_pids(struct hvt *t, void *arg)
{
    int pids[4];
    return workload_pids((const char *)arg, pids, 4) == 2;
}

static void a_crashed_workload_is_released_when_its_last_process_exits(void **state)
{
    char log[400];
    snprintf(log, sizeof(log), "%s/crash.log", T.dir);
    const char *argv[] = {"run", "--isolation", "shared", "--name", "crashy",
                          "--",  "sleep",       "30",     NULL};
    pid_t tfctl = hvt_tfctl_bg(&T, log, argv);
    assert_true(hvt_wait(has_two_pids, &T, "crashy", 10000));
    int pids[4];
    assert_int_equal(workload_pids("crashy", pids, 4), 2);
    int child = pids[0] == tfctl ? pids[1] : pids[0];
    /* tfctl dies hard: the app still runs, so the GPU stays its own. */
    kill(tfctl, SIGKILL);
    int st;
    waitpid(tfctl, &st, 0);
    usleep(600000);
    assert_int_equal(hvt_count_workloads(&T), 1);
    /* The app crashes too: released within the liveness interval. */
    kill(child, SIGKILL);
    int zero = 0;
    assert_true(hvt_wait(has_workloads, &T, &zero, 3000));
    assert_int_equal(allocated_vram(), 0);
}

static void kill9_and_restart_keep_workloads_and_never_double_book(void **state)
{
    char log[400];
    snprintf(log, sizeof(log), "%s/long.log", T.dir);
    const char *argv[] = {"run", "--isolation", "shared", "--name", "long",
                          "--",  "sleep",       "30",     NULL};
    pid_t tfctl = hvt_tfctl_bg(&T, log, argv);
    assert_true(hvt_wait(has_two_pids, &T, "long", 10000));
    json_object *before = NULL, *after = NULL;
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/workloads/long", NULL, NULL, &before), 200);
    hvt_kill(&T, SIGKILL);
    hvt_start(&T, NULL);
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/workloads/long", NULL, NULL, &after), 200);
    /* Same allocation, same limits, same processes. */
    json_object_object_del(before, "usage");
    json_object_object_del(after, "usage");
    assert_string_equal(json_object_to_json_string(before), json_object_to_json_string(after));
    json_object_put(before);
    json_object_put(after);
    char *out = NULL;
    const char *second[] = {"run", "--isolation", "shared", "--", "true", NULL};
    assert_int_equal(hvt_tfctl(&T, &out, second), 1); /* the GPU is still booked */
    assert_non_null(strstr(out, "unschedulable"));
    free(out);
    int pids[4];
    assert_int_equal(workload_pids("long", pids, 4), 2);
    kill(pids[0], SIGKILL);
    kill(pids[1], SIGKILL);
    int st;
    waitpid(tfctl, &st, 0);
    int zero = 0;
    assert_true(hvt_wait(has_workloads, &T, &zero, 3000));
}

static void a_second_hypervisor_on_the_same_state_is_refused(void **state)
{
    char *out = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        char log[400];
        snprintf(log, sizeof(log), "%s/second.log", T.dir);
        freopen(log, "w", stderr);
        execl(getenv("TF_HYPERVISOR_BIN"), "tf-hypervisor", "--state-dir", T.state, (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    char log[400];
    snprintf(log, sizeof(log), "%s/second.log", T.dir);
    FILE *f = fopen(log, "r");
    char buf[2048] = "";
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_non_null(strstr(buf, "another tf-hypervisor"));
    (void)out;
}

static bool has_n_devices(struct hvt *t, void *arg)
{
    json_object *o = NULL;
    int st = hvt_http(t, "GET", "/api/v1/devices", NULL, NULL, &o);
    int present = 0;
    for (size_t i = 0; st == 200 && i < json_object_array_length(o); i++)
        present += json_object_get_boolean(
            json_object_object_get(json_object_array_get_idx(o, i), "present"));
    json_object_put(o);
    return present == *(int *)arg;
}

static void rediscovery_follows_devices_coming_and_going(void **state)
{
    int n = 1;
    assert_true(hvt_wait(has_n_devices, &T, &n, 2000));
    hvt_set_devices(&T, A100 L4);
    n = 2;
    assert_true(hvt_wait(has_n_devices, &T, &n, 5000));
    char *out = NULL;
    const char *get[] = {"get", "gpus", NULL};
    assert_int_equal(hvt_tfctl(&T, &out, get), 0);
    assert_non_null(strstr(out, "A100-80GB"));
    assert_non_null(strstr(out, "L4"));
    free(out);
    hvt_set_devices(&T, L4);
    n = 1;
    assert_true(hvt_wait(has_n_devices, &T, &n, 5000));
    const char *getj[] = {"get", "gpus", "-o", "json", NULL};
    assert_int_equal(hvt_tfctl(&T, &out, getj), 0);
    json_object *o = json_tokener_parse(out);
    assert_non_null(o);
    assert_int_equal(json_object_array_length(o), 2); /* the A100 is remembered as absent */
    json_object_put(o);
    free(out);
}

static void prometheus_text_has_gpu_and_worker_limits(void **state)
{
    json_object *o = NULL;
    assert_int_equal(hvt_http(&T, "POST", "/api/v1/workloads",
                              "{\"name\":\"prom\",\"isolation\":\"shared\"}", NULL, &o),
                     201);
    json_object_put(o);
    char *txt = hvt_get_text(&T, "/metrics");
    assert_non_null(strstr(txt, "# TYPE tf_gpu_tflops_capacity gauge\n"));
    assert_non_null(strstr(txt, "tf_gpu_tflops_capacity{uuid=\"GPU-a1000000-0000-4000-8000-"
                                "000000000001\",index=\"0\",model=\"A100-80GB\"} 312\n"));
    assert_non_null(strstr(txt, "tf_worker_vram_bytes_limit{workload=\"prom\",namespace="
                                "\"default\",uuid=\"GPU-a1000000-0000-4000-8000-000000000001\","
                                "isolation=\"shared\"} 85899345920\n"));
    assert_non_null(strstr(txt, "tf_allocations_total{result=\"success\"} 1\n"));
    free(txt);
    char *out = NULL;
    const char *get[] = {"get", "workloads", NULL};
    assert_int_equal(hvt_tfctl(&T, &out, get), 0);
    assert_non_null(strstr(out, "prom"));
    assert_non_null(strstr(out, "shared"));
    free(out);
    const char *top[] = {"top", "--once", NULL};
    assert_int_equal(hvt_tfctl(&T, &out, top), 0);
    assert_non_null(strstr(out, "prom-0"));
    assert_non_null(strstr(out, "40.0%")); /* the fake GPU's utilisation */
    free(out);
    assert_int_equal(hvt_http(&T, "DELETE", "/api/v1/workloads/prom", NULL, NULL, &o), 200);
    json_object_put(o);
}

static bool has_worker_rows(struct hvt *t, void *arg)
{
    char *out = NULL;
    const char *q[] = {"query", "-o", "csv",
                       "SELECT count(*) FROM tf_worker_usage WHERE workload = 'metered'", NULL};
    int rc = hvt_tfctl(t, &out, q);
    bool ok = rc == 0 && out && atoi(strchr(out, '\n') ? strchr(out, '\n') + 1 : "0") >= 2;
    free(out);
    return ok;
}

static void metric_rows_answer_the_seed_queries(void **state)
{
    json_object *o = NULL;
    assert_int_equal(hvt_http(&T, "POST", "/api/v1/workloads",
                              "{\"name\":\"metered\",\"isolation\":\"shared\"}", NULL, &o),
                     201);
    json_object_put(o);
    assert_true(hvt_wait(has_worker_rows, &T, NULL, 10000));
    static const struct {
        const char *sql, *want;
    } q[] = {
        {"SELECT node, uuid,\n       avg(compute_percentage) AS compute_used_pct,\n"
         "       max(memory_percentage)  AS vram_peak_pct\nFROM tf_gpu_usage\n"
         "WHERE greptime_timestamp >= now() - '1d'::INTERVAL\nGROUP BY node, uuid\n"
         "ORDER BY compute_used_pct;",
         "GPU-a1000000-0000-4000-8000-000000000001,40,1.25\n"},
        {"SELECT node, pool,\n       avg(allocated_tflops_percent) AS tflops_allocated_pct,\n"
         "       avg(allocated_vram_percent)   AS vram_allocated_pct\nFROM tf_node_metrics\n"
         "WHERE greptime_timestamp >= now() - '1d'::INTERVAL\nGROUP BY node, pool\n"
         "ORDER BY tflops_allocated_pct;",
         ",local,"},
        {"SELECT workload,\n       avg(tflops_request)                  AS tflops_request,\n"
         "       avg(vram_bytes_request) / 1073741824 AS vram_request_gib\n"
         "FROM tf_worker_resources\nWHERE greptime_timestamp >= now() - '1d'::INTERVAL\n"
         "GROUP BY workload;",
         "metered,312,80\n"},
        {"SELECT workload,\n       avg(compute_tflops)             AS tflops_avg,\n"
         "       max(compute_tflops)             AS tflops_peak,\n"
         "       max(memory_bytes) / 1073741824  AS vram_peak_gib\nFROM tf_worker_usage\n"
         "WHERE greptime_timestamp >= now() - '1d'::INTERVAL\nGROUP BY workload;",
         "metered,124.8,124.8,1\n"},
        /* ready is the workload's real state: created through the API, no process runs it */
        {"SELECT workload, max(ready) AS ready FROM tf_worker_resources GROUP BY workload;",
         "metered,0\n"},
    };
    for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
        char *out = NULL;
        const char *argv[] = {"query", "-o", "csv", q[i].sql, NULL};
        assert_int_equal(hvt_tfctl(&T, &out, argv), 0);
        if (!strstr(out, q[i].want))
            fail_msg("query %zu: output\n%s\nlacks \"%s\"", i, out, q[i].want);
        free(out);
    }
    char *out = NULL;
    const char *bad[] = {"query", "SELECT x::DOUBLE FROM tf_gpu_usage", NULL};
    assert_int_equal(hvt_tfctl(&T, &out, bad), 2);
    assert_non_null(strstr(out, "CAST"));
    free(out);
    const char *tbl[] = {"query", "SELECT greptime_timestamp FROM tf_gpu_usage LIMIT 1", NULL};
    assert_int_equal(hvt_tfctl(&T, &out, tbl), 0);
    assert_non_null(strstr(out, "Z\n")); /* ISO-8601 UTC */
    assert_non_null(strstr(out, "(1 row)"));
    free(out);
}

static void concurrent_first_runs_start_exactly_one_hypervisor(void **state)
{
    enum { N = 4 };
    pid_t pids[N];
    for (int i = 0; i < N; i++) {
        char log[400];
        snprintf(log, sizeof(log), "%s/first%d.log", T.dir, i);
        const char *argv[] = {"run", "--isolation", "shared", "--", "sleep", "0.5", NULL};
        pids[i] = hvt_tfctl_bg(&T, log, argv);
    }
    int ok = 0;
    for (int i = 0; i < N; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        assert_true(WIFEXITED(st));
        assert_true(WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 1); /* ran, or unschedulable */
        ok += WEXITSTATUS(st) == 0;
    }
    assert_true(ok >= 2);
    /* One hypervisor answers for the state directory; the others gave up on its lock. */
    char path[400], pid[32] = "";
    snprintf(path, sizeof(path), "%s/hypervisor.lock", T.state);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(pid, sizeof(pid), f));
    fclose(f);
    assert_int_equal(kill(atoi(pid), 0), 0);
    char cmd[512], out[64] = "";
    snprintf(cmd, sizeof(cmd), "pgrep -c -f -- '--state-dir %s$'", T.state);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(out, sizeof(out), p));
    pclose(p);
    assert_int_equal(atoi(out), 1);
}

static bool worker_gone(struct hvt *t, void *arg)
{
    return kill(*(int *)arg, 0) != 0;
}

static void hard_workloads_get_a_worker_that_survives_a_hypervisor_crash(void **state)
{
    char client[400], path[500];
    snprintf(client, sizeof(client), "%s/client", T.dir);
    snprintf(path, sizeof(path), "%s/libcuda.so.1", client);
    assert_int_equal(mkdir(client, 0755), 0);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    setenv("TF_WORKER_BIN", getenv("TF_FAKE_WORKER"), 1);
    setenv("TF_CLIENT_DIR", client, 1);
    hvt_kill(&T, SIGTERM);
    hvt_start(&T, NULL); /* with the worker binaries in its environment */
    char log[400];
    snprintf(log, sizeof(log), "%s/hard.log", T.dir);
    const char *argv[] = {"run",
                          "--isolation",
                          "hard",
                          "--compute-percent",
                          "30",
                          "--vram-limit",
                          "4Gi",
                          "--name",
                          "hardy",
                          "--",
                          "sh",
                          "-c",
                          "echo remote=$TF_REMOTE token=$(wc -c < $TF_TOKEN_FILE) "
                          "lib=$LD_LIBRARY_PATH; sleep 30",
                          NULL};
    pid_t tfctl = hvt_tfctl_bg(&T, log, argv);
    assert_true(hvt_wait(has_two_pids, &T, "hardy", 10000));
    json_object *w = NULL;
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/workloads/hardy", NULL, NULL, &w), 200);
    int wpid = json_object_get_int(json_object_object_get(w, "workerPid"));
    const char *addr = json_object_get_string(json_object_object_get(w, "workerAddr"));
    assert_true(wpid > 0);
    assert_non_null(addr);
    assert_int_equal(strncmp(addr, "tcp://127.0.0.1:", 16), 0);
    json_object_put(w);
    /* The worker got the workload's limits and device. */
    snprintf(path, sizeof(path), "%s/workers/hardy/worker.log", T.state);
    f = fopen(path, "r");
    assert_non_null(f);
    char args[1024] = "";
    assert_non_null(fgets(args, sizeof(args), f));
    fclose(f);
    assert_non_null(strstr(args, "--listen tcp://127.0.0.1:0"));
    assert_non_null(strstr(args, "--vram-limit 4294967296 --compute-percent 30.00 --device 0"));
    /* A hypervisor crash leaves the worker serving; the restarted one knows it. */
    hvt_kill(&T, SIGKILL);
    assert_int_equal(kill(wpid, 0), 0);
    hvt_start(&T, NULL);
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/workloads/hardy", NULL, NULL, &w), 200);
    assert_int_equal(json_object_get_int(json_object_object_get(w, "workerPid")), wpid);
    json_object_put(w);
    /* The app's view: its worker, its token, the client library first on the path. */
    f = fopen(log, "r");
    assert_non_null(f);
    char line[1024] = "";
    assert_non_null(fgets(line, sizeof(line), f));
    while (strncmp(line, "remote=", 7) && fgets(line, sizeof(line), f))
        ;
    fclose(f);
    assert_int_equal(strncmp(line, "remote=tcp://127.0.0.1:", 23), 0);
    assert_non_null(strstr(line, " token=64 lib="));
    assert_non_null(strstr(line, client));
    /* The app ends: the workload is released and its worker stopped. */
    kill(tfctl, SIGTERM);
    int st;
    waitpid(tfctl, &st, 0);
    int zero = 0;
    assert_true(hvt_wait(has_workloads, &T, &zero, 5000));
    assert_true(hvt_wait(worker_gone, &T, &wpid, 5000));
    snprintf(path, sizeof(path), "%s/workers/hardy", T.state);
    assert_int_not_equal(access(path, F_OK), 0);
    unsetenv("TF_WORKER_BIN");
    unsetenv("TF_CLIENT_DIR");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(bad_api_input_gets_4xx_json_and_changes_nothing, setup_one,
                                        teardown),
        cmocka_unit_test_setup_teardown(shared_run_sees_its_gpu_and_returns_the_exit_code,
                                        setup_one, teardown),
        cmocka_unit_test_setup_teardown(unschedulable_requests_fail_at_once_with_reasons, setup_one,
                                        teardown),
        cmocka_unit_test_setup_teardown(concurrent_runs_never_overallocate, setup_two, teardown),
        cmocka_unit_test_setup_teardown(a_crashed_workload_is_released_when_its_last_process_exits,
                                        setup_one, teardown),
        cmocka_unit_test_setup_teardown(kill9_and_restart_keep_workloads_and_never_double_book,
                                        setup_one, teardown),
        cmocka_unit_test_setup_teardown(a_second_hypervisor_on_the_same_state_is_refused, setup_one,
                                        teardown),
        cmocka_unit_test_setup_teardown(rediscovery_follows_devices_coming_and_going, setup_one,
                                        teardown),
        cmocka_unit_test_setup_teardown(prometheus_text_has_gpu_and_worker_limits, setup_one,
                                        teardown),
        cmocka_unit_test_setup_teardown(metric_rows_answer_the_seed_queries, setup_one, teardown),
        cmocka_unit_test_setup_teardown(
            hard_workloads_get_a_worker_that_survives_a_hypervisor_crash, setup_one, teardown),
        cmocka_unit_test_setup_teardown(concurrent_first_runs_start_exactly_one_hypervisor,
                                        setup_none, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
