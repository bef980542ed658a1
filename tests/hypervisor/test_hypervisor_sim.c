/* SPDX-License-Identifier: Apache-2.0
 *
 * Local mode on the simulated GPU (src/sim): the hypervisor discovers the simulated devices
 * through the sim's libnvidia-ml.so.1, `tfctl run` executes real PTX kernels (gpu_burn, the
 * timer.cu spin kernel) on the sim's libcuda.so.1, and the metric rows carry the utilisation
 * the sim measured.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hvtest.h"

static struct hvt T;

static const char *sim_devices = "A100-80GB,L4";

static int setup(void **state)
{
    hvt_init(&T, "");
    char nvml[600], shm[400];
    snprintf(nvml, sizeof(nvml), "%s/libnvidia-ml.so.1", getenv("TF_SIM_LIBDIR"));
    snprintf(shm, sizeof(shm), "%s/sim-", T.dir);
    setenv("TF_NVML_LIBRARY", nvml, 1);
    setenv("LD_LIBRARY_PATH", getenv("TF_SIM_LIBDIR"), 1);
    setenv("TF_SIM_DEVICES", sim_devices, 1);
    setenv("TF_SIM_SHM_PREFIX", shm, 1);
    hvt_start(&T, NULL);
    return 0;
}

static int setup_a100(void **state)
{
    sim_devices = "A100-80GB";
    return setup(state);
}

static int teardown(void **state)
{
    hvt_cleanup(&T);
    return 0;
}

static void the_simulated_gpus_are_discovered_with_their_models(void **state)
{
    json_object *o = NULL;
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/devices", NULL, NULL, &o), 200);
    assert_int_equal(json_object_array_length(o), 2);
    json_object *a = json_object_array_get_idx(o, 0), *l = json_object_array_get_idx(o, 1);
    assert_string_equal(json_object_get_string(json_object_object_get(a, "model")), "A100-80GB");
    assert_string_equal(json_object_get_string(json_object_object_get(a, "tflops")), "312");
    assert_int_equal(json_object_get_int64(json_object_object_get(a, "vramBytes")), INT64_C(80)
                                                                                        << 30);
    assert_string_equal(json_object_get_string(json_object_object_get(l, "model")), "L4");
    assert_int_equal(strncmp(json_object_get_string(json_object_object_get(a, "uuid")), "GPU-", 4),
                     0);
    json_object_put(o);
}

static bool busy_rows(struct hvt *t, void *arg)
{
    char *out = NULL;
    const char *q[] = {"query", "-o", "csv",
                       "SELECT max(compute_percentage) FROM tf_gpu_usage WHERE greptime_timestamp"
                       " >= now() - '1 minute'::INTERVAL",
                       NULL};
    bool ok = hvt_tfctl(t, &out, q) == 0 && out && strchr(out, '\n') &&
              atof(strchr(out, '\n') + 1) > 10.0;
    free(out);
    return ok;
}

static void a_shared_run_executes_real_kernels_and_its_utilisation_is_recorded(void **state)
{
    char *out = NULL;
    const char *argv[] = {"run",
                          "--isolation",
                          "shared",
                          "--gpu-model",
                          "L4",
                          "--",
                          getenv("TF_GPU_BURN"),
                          getenv("TF_TIMER_PTX"),
                          "1.5",
                          "512",
                          "1000",
                          "burn",
                          NULL};
    assert_int_equal(hvt_tfctl(&T, &out, argv), 0);
    /* Its device 0 is the L4, the machine's second GPU: CUDA_VISIBLE_DEVICES (the allocated
     * UUIDs) hides the A100 from it. */
    assert_non_null(strstr(out, "burn vram_total_mib=24576 vram_alloc_mib=512"));
    const char *k = strstr(out, "burn kernels=");
    assert_non_null(k);
    const char *share = strstr(k, "share_pct=");
    assert_non_null(share);
    printf("shared run: %s", k);
    /* Alone on its GPU: well above what a capped tenant gets, even under sanitizers. */
    assert_true(atof(share + 10) > 20.0);
    free(out);
    /* The sim's NVML utilisation reached the metric rows (sampled every 200 ms here). */
    assert_true(hvt_wait(busy_rows, &T, NULL, 5000));
    assert_int_equal(hvt_count_workloads(&T), 0);
}

static char *burn_argv_out(const char *const *argv, int *rc)
{
    char *out = NULL;
    *rc = hvt_tfctl(&T, &out, argv);
    return out;
}

__attribute__((noinline)) static double field(const char *out, const char *who, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof(pat), "%s kernels=", who);
    const char *l = strstr(out, pat);
    const char *k = l ? strstr(l, key) : NULL;
    return k ? atof(k + strlen(key)) : -1;
}

static void soft_workloads_side_by_side_get_their_vram_and_compute_limits(void **state)
{
    char la[400], lb[400];
    snprintf(la, sizeof(la), "%s/w30.log", T.dir);
    snprintf(lb, sizeof(lb), "%s/w60.log", T.dir);
    const char *a[] = {"run",
                       "--compute-percent",
                       "30",
                       "--vram-limit",
                       "2Gi",
                       "--name",
                       "w30",
                       "--",
                       getenv("TF_GPU_BURN"),
                       getenv("TF_TIMER_PTX"),
                       "2.5",
                       "1024",
                       "1000",
                       "w30",
                       NULL};
    const char *b[] = {"run",
                       "--compute-percent",
                       "60",
                       "--vram-limit",
                       "4Gi",
                       "--name",
                       "w60",
                       "--",
                       getenv("TF_GPU_BURN"),
                       getenv("TF_TIMER_PTX"),
                       "2.5",
                       "3072",
                       "1000",
                       "w60",
                       NULL};
    pid_t pa = hvt_tfctl_bg(&T, la, a), pb = hvt_tfctl_bg(&T, lb, b);
    int sa, sb;
    waitpid(pa, &sa, 0);
    waitpid(pb, &sb, 0);
    char *oa = NULL, *ob = NULL;
    FILE *f = fopen(la, "r");
    char buf[8192];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    oa = strdup(buf);
    f = fopen(lb, "r");
    n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    ob = strdup(buf);
    if (!WIFEXITED(sa) || WEXITSTATUS(sa) || !WIFEXITED(sb) || WEXITSTATUS(sb))
        fail_msg("runs failed:\n%s\n%s", oa, ob);
    /* Each sees its own VRAM limit as the GPU's memory. */
    assert_non_null(strstr(oa, "w30 vram_total_mib=2048 vram_alloc_mib=1024"));
    assert_non_null(strstr(ob, "w60 vram_total_mib=4096 vram_alloc_mib=3072"));
    double s30 = field(oa, "w30", "share_pct="), s60 = field(ob, "w60", "share_pct=");
    printf("achieved shares: w30 %.1f%%, w60 %.1f%%\n", s30, s60);
    assert_true(s30 > 0 && s60 > 0);
    assert_true(s30 < 45.0); /* capped near its 30 % */
    free(oa);
    free(ob);
    /* Over the VRAM limit: the allocation fails the way the driver fails, and nothing leaks. */
    int rc;
    const char *big[] = {"run",
                         "--compute-percent",
                         "30",
                         "--vram-limit",
                         "2Gi",
                         "--",
                         getenv("TF_GPU_BURN"),
                         getenv("TF_TIMER_PTX"),
                         "1",
                         "3072",
                         "1000",
                         "big",
                         NULL};
    char *out = burn_argv_out(big, &rc);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "big vram_refused mib=3072 total_mib=2048 "
                                "error=CUDA_ERROR_OUT_OF_MEMORY"));
    free(out);
    assert_int_equal(hvt_count_workloads(&T), 0);
    char shm[400];
    snprintf(shm, sizeof(shm), "%s/shm/default/w30", T.state);
    assert_int_not_equal(access(shm, F_OK), 0); /* regions removed with their workloads */
}

static bool has_workloads(struct hvt *t, void *arg)
{
    return hvt_count_workloads(t) == *(int *)arg;
}

static bool registered(struct hvt *t, void *arg)
{
    char path[128];
    snprintf(path, sizeof(path), "/api/v1/workloads/%s", (const char *)arg);
    json_object *o = NULL;
    int st = hvt_http(t, "GET", path, NULL, NULL, &o);
    bool ok = st == 200 && json_object_array_length(json_object_object_get(o, "pids")) == 2;
    json_object_put(o);
    return ok;
}

static void a_soft_workload_keeps_its_region_and_limits_across_a_hypervisor_kill9(void **state)
{
    char log[400];
    snprintf(log, sizeof(log), "%s/long.log", T.dir);
    const char *a[] = {"run",
                       "--compute-percent",
                       "30",
                       "--vram-limit",
                       "2Gi",
                       "--name",
                       "long",
                       "--",
                       getenv("TF_GPU_BURN"),
                       getenv("TF_TIMER_PTX"),
                       "4",
                       "512",
                       "1000",
                       "long",
                       NULL};
    pid_t pa = hvt_tfctl_bg(&T, log, a);
    assert_true(hvt_wait(registered, &T, "long", 10000));
    json_object *before = NULL, *after = NULL;
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/workloads/long", NULL, NULL, &before), 200);
    const char *shm = json_object_get_string(json_object_object_get(before, "shmPath"));
    assert_non_null(shm);
    assert_int_equal(access(shm, F_OK), 0);
    hvt_kill(&T, SIGKILL);
    assert_int_equal(access(shm, F_OK), 0); /* the app keeps running on its region */
    hvt_start(&T, NULL);
    assert_int_equal(hvt_http(&T, "GET", "/api/v1/workloads/long", NULL, NULL, &after), 200);
    json_object_object_del(before, "usage");
    json_object_object_del(after, "usage");
    assert_string_equal(json_object_to_json_string(before), json_object_to_json_string(after));
    json_object_put(after);
    /* No double booking: the GPU's VRAM still counts the running workload. */
    char *out = NULL;
    const char *fill[] = {"run", "--vram-limit", "79Gi", "--", "true", NULL};
    assert_int_equal(hvt_tfctl(&T, &out, fill), 1);
    assert_non_null(strstr(out, "insufficient VRAM"));
    free(out);
    int st;
    waitpid(pa, &st, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    FILE *f = fopen(log, "r");
    char buf[4096];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_non_null(strstr(buf, "long vram_total_mib=2048"));
    assert_non_null(strstr(buf, "long kernels="));
    int zero = 0;
    assert_true(hvt_wait(has_workloads, &T, &zero, 3000));
    assert_int_not_equal(access(shm, F_OK), 0);
    json_object_put(before);
}

static void a_hard_workload_runs_on_its_worker_with_the_limits(void **state)
{
    int rc;
    const char *a[] = {"run",
                       "--isolation",
                       "hard",
                       "--compute-percent",
                       "30",
                       "--vram-limit",
                       "2Gi",
                       "--",
                       getenv("TF_GPU_BURN"),
                       getenv("TF_TIMER_PTX"),
                       "1.5",
                       "1024",
                       "1000",
                       "hard",
                       NULL};
    char *out = burn_argv_out(a, &rc);
    if (rc != 0)
        fail_msg("hard run failed (%d):\n%s", rc, out);
    assert_non_null(strstr(out, "hard vram_total_mib=2048 vram_alloc_mib=1024"));
    assert_true(field(out, "hard", "kernels=") > 0);
    /* The worker holds the workload near its 30 % (loosely: 1.5 s include the start). */
    double share = field(out, "hard", "share_pct=");
    printf("hard workload share: %.1f%%\n", share);
    assert_true(share > 0 && share < 45.0);
    free(out);
    const char *big[] = {"run",
                         "--isolation",
                         "hard",
                         "--vram-limit",
                         "2Gi",
                         "--",
                         getenv("TF_GPU_BURN"),
                         getenv("TF_TIMER_PTX"),
                         "1",
                         "3072",
                         "1000",
                         "hardbig",
                         NULL};
    out = burn_argv_out(big, &rc);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(out, "error=CUDA_ERROR_OUT_OF_MEMORY"));
    free(out);
    assert_int_equal(hvt_count_workloads(&T), 0);
}

/* The attack: a soft workload's child drops LD_PRELOAD and allocates past the workload's VRAM
 * limit; nothing in the data path sees it. The hypervisor adds up the real VRAM NVML reports
 * for the workload's process tree, finds it over the limit, and (--vram-escape kill) kills the
 * process that runs without the limiter. */
static void a_child_that_drops_the_limiter_is_caught_and_killed(void **state)
{
    hvt_kill(&T, SIGTERM);
    const char *extra[] = {"--vram-escape", "kill", "--vram-escape-slack", "0", NULL};
    hvt_start(&T, extra);
    char script[1200];
    snprintf(script, sizeof(script), "env -u LD_PRELOAD %s %s 20 1800 1000 child; echo child_rc=$?",
             getenv("TF_GPU_BURN"), getenv("TF_TIMER_PTX"));
    const char *argv[] = {"run", "--vram-limit", "1Gi", "--name", "sly",
                          "--",  "sh",           "-c",  script,   NULL};
    int rc;
    char *out = burn_argv_out(argv, &rc);
    if (rc != 0 || !strstr(out, "child_rc=137"))
        fail_msg("run exited %d:\n%s", rc, out);
    /* it got its 1.8 GiB (nothing in the data path stops it) before it was caught */
    assert_non_null(strstr(out, "child vram_total_mib="));
    assert_null(strstr(out, "child kernels=")); /* killed long before its 20 s */
    free(out);
    char log[400];
    snprintf(log, sizeof(log), "%s/hypervisor-test.log", T.dir);
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    assert_non_null(strstr(buf, "workload sly escaped its VRAM limit"));
    assert_non_null(strstr(buf, "not under the limiter"));
}

static void remote_runs_use_a_worker_of_another_hypervisor_kept_by_heartbeats(void **state)
{
    /* T plays the GPU machine: API token (200 characters: both sides once cut tokens, at 127
     * and 150, and every request failed), short leases. This side needs no hypervisor. */
    char tokfile[400], token[201], hdr[260];
    for (int i = 0; i < 200; i++)
        token[i] = "0123456789abcdef"[(i * 7) % 16];
    token[200] = '\0';
    snprintf(tokfile, sizeof(tokfile), "%s/api.token", T.dir);
    FILE *f = fopen(tokfile, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", token);
    fclose(f);
    hvt_kill(&T, SIGTERM);
    const char *extra[] = {"--api-token-file", tokfile, "--lease-timeout", "1500", NULL};
    hvt_start(&T, extra);
    const char *hostport = T.base + 7; /* past "http://" */
    char *out = NULL;
    int rc;
    const char *argv[] = {"run",
                          "--remote",
                          hostport,
                          "--compute-percent",
                          "30",
                          "--vram-limit",
                          "2Gi",
                          "--",
                          getenv("TF_GPU_BURN"),
                          getenv("TF_TIMER_PTX"),
                          "2.5",
                          "1024",
                          "1000",
                          "far",
                          NULL};
    /* Without the token: refused by the GPU machine. */
    setenv("TF_REMOTE_API_TOKEN", "wrong-token-wrong-token", 1);
    out = burn_argv_out(argv, &rc);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, "API token"));
    free(out);
    /* With it: the app runs here on the remote client, the worker there holds the GPU and its
     * limits; heartbeats keep the lease past its 1.5 s timeout. */
    setenv("TF_REMOTE_API_TOKEN", token, 1);
    setenv("TF_REMOTE_HEARTBEAT_MS", "300", 1);
    out = burn_argv_out(argv, &rc);
    if (rc != 0)
        fail_msg("remote run failed (%d):\n%s", rc, out);
    assert_non_null(strstr(out, "far vram_total_mib=2048 vram_alloc_mib=1024"));
    assert_true(field(out, "far", "kernels=") > 0);
    free(out);
    snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", token);
    snprintf(T.auth, sizeof(T.auth), "%s", hdr);
    assert_int_equal(hvt_count_workloads(&T), 0);
    /* A client that vanishes without releasing: its lease expires, the worker goes. */
    json_object *o = NULL;
    assert_int_equal(hvt_http(&T, "POST", "/api/v1/workloads",
                              "{\"name\":\"ghost\",\"isolation\":\"hard\",\"lease\":true,"
                              "\"vramLimit\":\"1Gi\",\"computePercentLimit\":\"10\"}",
                              NULL, &o),
                     201);
    int wpid = json_object_get_int(json_object_object_get(o, "workerPid"));
    json_object_put(o);
    assert_true(wpid > 0);
    assert_int_equal(hvt_http(&T, "POST", "/api/v1/workloads/ghost/heartbeat", NULL, NULL, &o),
                     200);
    json_object_put(o);
    int zero = 0;
    assert_true(hvt_wait(has_workloads, &T, &zero, 6000));
    for (int i = 0; i < 100 && kill(wpid, 0) == 0; i++)
        usleep(20000);
    assert_int_not_equal(kill(wpid, 0), 0);
    T.auth[0] = '\0';
    unsetenv("TF_REMOTE_API_TOKEN");
    unsetenv("TF_REMOTE_HEARTBEAT_MS");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_simulated_gpus_are_discovered_with_their_models, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            a_shared_run_executes_real_kernels_and_its_utilisation_is_recorded, setup, teardown),
        cmocka_unit_test_setup_teardown(a_child_that_drops_the_limiter_is_caught_and_killed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            soft_workloads_side_by_side_get_their_vram_and_compute_limits, setup_a100, teardown),
        cmocka_unit_test_setup_teardown(
            a_soft_workload_keeps_its_region_and_limits_across_a_hypervisor_kill9, setup_a100,
            teardown),
        cmocka_unit_test_setup_teardown(a_hard_workload_runs_on_its_worker_with_the_limits,
                                        setup_a100, teardown),
        cmocka_unit_test_setup_teardown(
            remote_runs_use_a_worker_of_another_hypervisor_kept_by_heartbeats, setup_a100,
            teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
