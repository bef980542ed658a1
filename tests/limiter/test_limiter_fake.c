/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_limiter.so under LD_PRELOAD of a real driver-API program (lim_host) against the
 * fake driver (tests/limiter/fake): what the simulated GPU cannot do on demand -- driver
 * allocation failures, a driver that re-enters its own exported names, a cuGetProcAddress
 * that hands out real addresses -- plus every user-visible limiter behaviour that does not
 * need real kernels: VRAM caps and rollback, memory info, runtime-style lookups, device
 * visibility, NVML, env fallback, corrupt and stale regions, processes sharing and dying,
 * live limit changes, launch throttling by sleeping (not spinning), and launches charged
 * the GPU time the driver's timing events measure (short kernels are not held).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include "../limits/region_fixture.h"

#include "limits/shm.h"
#include "spawn.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static char dir[256], region[300], ld_preload[600], ld_path[600], shm_env[400];
static const char *host;

static int setup(void **state)
{
    const char *pre = getenv("LIM_PRELOAD"), *fake = getenv("LIM_FAKE_DIR");
    host = getenv("LIM_HOST");
    if (!pre || !fake || !host)
        return -1;
    snprintf(dir, sizeof(dir), "/tmp/tf-test-limiter-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(region, sizeof(region), "%s/shm", dir);
    snprintf(ld_preload, sizeof(ld_preload), "LD_PRELOAD=%s", pre);
    snprintf(ld_path, sizeof(ld_path), "LD_LIBRARY_PATH=%s", fake);
    snprintf(shm_env, sizeof(shm_env), "TF_SHM_PATH=%s", region);
    return 0;
}

static int teardown(void **state)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The fake driver's UUIDs: fa ce 00 .. 00 <device>. */
static void fake_uuid(uint8_t u[16], int dev)
{
    memset(u, 0, 16);
    u[0] = 0xfa;
    u[1] = 0xce;
    u[15] = (uint8_t)dev;
}

/* (Re)creates the region: device DEVS[i] of the fake driver with the given limits. */
static struct tf_shm_map make_region(int ndev, const int *devs, uint64_t vram, uint32_t bp)
{
    uint8_t uuids[TF_SHM_MAX_DEVICES][16];
    for (int i = 0; i < ndev; i++)
        fake_uuid(uuids[i], devs[i]);
    return tf_test_region(region, "test/pod", ndev, (const uint8_t(*)[16])uuids, vram, bp, 0);
}

static int run(struct child *c, const char *const *args, const char *e1, const char *e2,
               const char *e3)
{
    char *argv[8] = {(char *)host};
    for (int i = 0; args[i] && i < 6; i++)
        argv[i + 1] = (char *)args[i];
    const char *env[] = {ld_preload, ld_path, e1, e2, e3, NULL};
    int rc = child_run(c, argv, env, 60);
    if (rc != 0)
        print_message("lim_host %s exited %d\nstdout:\n%s\nstderr:\n%s\n", args[0], rc, c->out,
                      c->err);
    return rc;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void expect(const struct child *c, const char *key, const char *want)
{
    const char *v = child_value(c, key);
    if (!v || strcmp(v, want) != 0)
        fail_msg("%s=%s, want %s\nstdout:\n%s\nstderr:\n%s", key, v ? v : "(missing)", want, c->out,
                 c->err);
}

static void app_beyond_its_vram_limit_gets_oom_and_keeps_working(void **state)
{
    int devs[] = {0};
    struct tf_shm_map m = make_region(1, devs, GiB, 0);
    struct child c;
    assert_int_equal(run(&c, ARGS("vram"), shm_env, NULL, NULL), 0);
    assert_int_equal(child_num(&c, "total"), (long long)GiB);
    assert_int_equal(child_num(&c, "free"), (long long)GiB);
    expect(&c, "over_limit", "CUDA_ERROR_OUT_OF_MEMORY");
    /* alloc + managed (1/4 each) + pitch (the fake pads rows to 256: 1024 x 1024). */
    assert_int_equal(child_num(&c, "pitch"), 1024);
    assert_int_equal(child_num(&c, "used_after_three"), (long long)(GiB / 2 + MiB));
    expect(&c, "half_more", "CUDA_ERROR_OUT_OF_MEMORY");
    assert_int_equal(child_num(&c, "free_at_end"), (long long)GiB);
    /* The process exited: everything it reserved is back, and it never exceeded the cap. */
    assert_int_equal(atomic_load(&m.r.use->dev[0].vram_used), 0);
    assert_true(atomic_load(&m.r.use->dev[0].vram_peak) <= (int64_t)GiB);
    assert_int_equal(atomic_load(&m.r.use->dev[0].oom_count), 2);
    tf_shm_unmap(&m);
}

static void memory_info_reports_the_limit_as_total(void **state)
{
    int devs[] = {0};
    struct tf_shm_map m = make_region(1, devs, 3 * GiB / 2, 0);
    struct child c;
    assert_int_equal(run(&c, ARGS("meminfo"), shm_env, NULL, NULL), 0);
    assert_int_equal(child_num(&c, "total"), (long long)(3 * GiB / 2));
    assert_int_equal(child_num(&c, "device_total"), (long long)(3 * GiB / 2));
    assert_int_equal(child_num(&c, "free"), (long long)(3 * GiB / 2));
    assert_int_equal(run(&c, ARGS("nvml"), shm_env, NULL, NULL), 0);
    assert_int_equal(child_num(&c, "nvml_count"), 1);
    assert_int_equal(child_num(&c, "nvml_total0"), (long long)(3 * GiB / 2));
    assert_int_equal(child_num(&c, "nvml2_total0"), (long long)(3 * GiB / 2));
    assert_true(child_num(&c, "nvml_used0") <= child_num(&c, "nvml_total0"));
    tf_shm_unmap(&m);
}

static void runtime_lookups_through_cuGetProcAddress_are_limited(void **state)
{
    int devs[] = {0};
    struct tf_shm_map m = make_region(1, devs, GiB, 0);
    struct child c;
    assert_int_equal(run(&c, ARGS("procaddr"), shm_env, NULL, NULL), 0);
    assert_int_equal(child_num(&c, "total"), (long long)GiB);
    expect(&c, "over_limit", "CUDA_ERROR_OUT_OF_MEMORY");
    expect(&c, "within", "CUDA_SUCCESS");
    /* dlsym(libcuda, "cuMemAlloc_v2") and cuGetProcAddress agree: both are the hook. */
    expect(&c, "same_as_dlsym", "1");
    tf_shm_unmap(&m);
}

static void driver_failure_gives_the_reservation_back(void **state)
{
    int devs[] = {0};
    struct tf_shm_map m = make_region(1, devs, GiB, 0);
    struct child c;
    assert_int_equal(run(&c, ARGS("rollback"), shm_env, "FAKE_CUDA_FAIL_ALLOC=1", NULL), 0);
    expect(&c, "first", "CUDA_ERROR_UNKNOWN");
    expect(&c, "free_unchanged", "1");
    expect(&c, "second", "CUDA_SUCCESS");
    tf_shm_unmap(&m);
}

static void driver_reentering_its_own_exports_is_counted_once(void **state)
{
    int devs[] = {0};
    struct tf_shm_map m = make_region(1, devs, GiB, 0);
    struct child c;
    assert_int_equal(run(&c, ARGS("vram"), shm_env, "FAKE_CUDA_MANAGED_REENTERS=1", NULL), 0);
    assert_int_equal(child_num(&c, "used_after_three"), (long long)(GiB / 2 + MiB));
    assert_int_equal(child_num(&c, "free_at_end"), (long long)GiB);
    tf_shm_unmap(&m);
}

static void only_the_workloads_devices_are_visible(void **state)
{
    int devs[] = {1};
    struct tf_shm_map m = make_region(1, devs, GiB, 0);
    struct child c;
    assert_int_equal(run(&c, ARGS("devices"), shm_env, "FAKE_CUDA_DEVICES=3", NULL), 0);
    assert_int_equal(child_num(&c, "count"), 1);
    expect(&c, "uuid0", "face0000000000000000000000000001");
    expect(&c, "beyond", "CUDA_ERROR_INVALID_DEVICE");
    assert_int_equal(run(&c, ARGS("nvml"), shm_env, "FAKE_CUDA_DEVICES=3", NULL), 0);
    assert_int_equal(child_num(&c, "nvml_count"), 1);
    assert_int_equal(child_num(&c, "nvml_total0"), (long long)GiB);
    /* Without a region every device is there. */
    assert_int_equal(run(&c, ARGS("devices"), "FAKE_CUDA_DEVICES=3", "TF_SHM_PATH=", NULL), 0);
    assert_int_equal(child_num(&c, "count"), 3);
    tf_shm_unmap(&m);
}

static void standalone_env_limit_works_without_a_hypervisor(void **state)
{
    struct child c;
    assert_int_equal(run(&c, ARGS("vram"), "TF_SHM_PATH=", "TF_VRAM_LIMIT=512Mi", NULL), 0);
    assert_int_equal(child_num(&c, "total"), (long long)(512 * MiB));
    expect(&c, "over_limit", "CUDA_ERROR_OUT_OF_MEMORY");
    assert_int_equal(child_num(&c, "free_at_end"), (long long)(512 * MiB));
    /* Garbage is reported, naming the variable, and ignored. */
    assert_int_equal(run(&c, ARGS("meminfo"), "TF_SHM_PATH=", "TF_VRAM_LIMIT=lots", NULL), 0);
    assert_non_null(strstr(c.err, "TF_VRAM_LIMIT: \"lots\" is not a valid quantity"));
    assert_int_equal(child_num(&c, "total"), (long long)(8 * GiB));
}

static void corrupt_region_is_rejected_with_a_clear_message(void **state)
{
    FILE *f = fopen(region, "wb");
    assert_non_null(f);
    static char junk[TF_SHM_LIMITS_SIZE];
    memset(junk, 0x5a, sizeof(junk));
    fwrite(junk, 1, sizeof(junk), f);
    fclose(f);
    struct child c;
    assert_int_equal(run(&c, ARGS("meminfo"), shm_env, NULL, NULL), 0);
    assert_non_null(strstr(c.err, "rejected the limit region's limits part: bad magic"));
    assert_non_null(strstr(c.err, "no limits known"));
    assert_int_equal(child_num(&c, "total"), (long long)(8 * GiB)); /* unlimited */
    /* Policy: with env limits they apply; with TF_LIMITER_STRICT CUDA is refused. */
    assert_int_equal(run(&c, ARGS("meminfo"), shm_env, "TF_VRAM_LIMIT=1Gi", NULL), 0);
    assert_int_equal(child_num(&c, "total"), (long long)GiB);
    char *argv[] = {(char *)host, "meminfo", NULL};
    const char *env[] = {ld_preload, ld_path, shm_env, "TF_LIMITER_STRICT=1", NULL};
    assert_int_equal(child_run(&c, argv, env, 30), 1);
    assert_non_null(strstr(c.err, "CUDA_ERROR_NOT_PERMITTED"));
    unlink(region);
}

/* Kubernetes: the app may reach cuInit before the node agent has written its pod's region.
 * With TF_LIMITER_WAIT_MS it waits for the region instead of running unlimited; with
 * TF_LIMITER_STRICT too, a region that never comes refuses CUDA after the wait. */
static void a_late_region_is_waited_for(void **state)
{
    unlink(region);
    struct child c;
    char *argv[] = {(char *)host, "vram", NULL};
    const char *env[] = {ld_preload, ld_path, shm_env, "TF_LIMITER_WAIT_MS=10000", NULL};
    child_start(&c, argv, env);
    struct timespec nap = {0, 400 * 1000 * 1000};
    nanosleep(&nap, NULL);
    int devs[] = {0};
    struct tf_shm_map m = make_region(1, devs, GiB, 0);
    int rc = child_finish(&c, 60);
    if (rc != 0)
        fail_msg("exit %d\nstdout:\n%s\nstderr:\n%s", rc, c.out, c.err);
    assert_non_null(strstr(c.err, "waiting up to 10000 ms for the limit region"));
    assert_int_equal(child_num(&c, "total"), (long long)GiB);
    expect(&c, "over_limit", "CUDA_ERROR_OUT_OF_MEMORY");
    assert_true(c.wall_s >= 0.35);
    tf_shm_unmap(&m);
    unlink(region);
    char *argv2[] = {(char *)host, "meminfo", NULL};
    const char *strict[] = {
        ld_preload, ld_path, shm_env, "TF_LIMITER_WAIT_MS=300", "TF_LIMITER_STRICT=1", NULL};
    assert_int_equal(child_run(&c, argv2, strict, 30), 1);
    assert_non_null(strstr(c.err, "CUDA_ERROR_NOT_PERMITTED"));
    assert_true(c.wall_s >= 0.3);
    /* Nonsense is named and not waited on. */
    const char *bad[] = {ld_preload, ld_path, shm_env, "TF_LIMITER_WAIT_MS=soon", NULL};
    assert_int_equal(child_run(&c, argv2, bad, 30), 0);
    assert_non_null(strstr(c.err, "TF_LIMITER_WAIT_MS: \"soon\""));
}

static void stale_heartbeat_keeps_the_last_limits(void **state)
{
    int devs[] = {0};
    struct tf_shm_map m = make_region(1, devs, GiB, 0);
    tf_shm_heartbeat(&m.r, 1000, 100, 1); /* an engine that stopped long ago */
    struct child c;
    assert_int_equal(run(&c, ARGS("vram"), shm_env, NULL, NULL), 0);
    expect(&c, "over_limit", "CUDA_ERROR_OUT_OF_MEMORY");
    assert_int_equal(child_num(&c, "total"), (long long)GiB);
    assert_non_null(strstr(c.err, "keeping the last limits"));
    tf_shm_unmap(&m);
}

static void two_processes_of_one_workload_share_one_limit(void **state)
{
    int devs[] = {0};
    struct tf_shm_map m = make_region(1, devs, GiB, 0);
    /* Long enough a hold for B to start on a loaded machine (A is killed below). */
    char *argv[] = {(char *)host, "hold", "600", "30", NULL};
    const char *env[] = {ld_preload, ld_path, shm_env, NULL};
    struct child a, b;
    child_start(&a, argv, env);
    assert_true(child_wait_for(&a, "rc=", 20));
    child_start(&b, argv, env);
    assert_true(child_wait_for(&b, "rc=", 20));
    assert_int_equal(child_num(&a, "held"), 1);
    assert_int_equal(child_num(&b, "held"), 0); /* 600 + 600 MiB > 1 GiB */
    assert_int_equal(atomic_load(&m.r.use->dev[0].vram_used), (int64_t)(600 * MiB));
    kill(a.pid, SIGTERM);
    kill(b.pid, SIGTERM);
    child_finish(&a, 10);
    child_finish(&b, 10);
    tf_shm_unmap(&m);
}

static void killed_process_never_wedges_or_starves_the_others(void **state)
{
    int devs[] = {0};
    struct tf_shm_map m = make_region(1, devs, GiB, 0);
    char *hold[] = {(char *)host, "hold", "800", "30", NULL};
    const char *env[] = {ld_preload, ld_path, shm_env, NULL};
    struct child a, b;
    child_start(&a, hold, env);
    assert_true(child_wait_for(&a, "held=1", 20));
    kill(a.pid, SIGKILL);
    child_finish(&a, 10);
    assert_int_equal(atomic_load(&m.r.use->dev[0].vram_used), (int64_t)(800 * MiB));
    /* The next process gets the memory back: the dead one is reclaimed, nothing is stuck. */
    char *again[] = {(char *)host, "hold", "800", "0", NULL};
    assert_int_equal(child_run(&b, again, env, 30), 0);
    assert_int_equal(child_num(&b, "held"), 1);
    assert_int_equal(atomic_load(&m.r.use->dev[0].vram_used), 0);
    tf_shm_unmap(&m);
}

static void raised_limit_applies_to_a_running_process(void **state)
{
    int devs[] = {0};
    struct tf_shm_map m = make_region(1, devs, 256 * MiB, 0);
    char *argv[] = {(char *)host, "fillslow", "64", "100", "16", NULL};
    const char *env[] = {ld_preload, ld_path, shm_env, NULL};
    struct child c;
    child_start(&c, argv, env);
    assert_true(child_wait_for(&c, "step5=", 20));
    assert_int_equal(tf_shm_set_limits(&m.r, 0, TF_SHM_DEV_VRAM_LIMIT, 0, 512 * MiB), 0);
    assert_int_equal(child_finish(&c, 30), 0);
    assert_int_equal(child_num(&c, "step3"), 4); /* 4 x 64 MiB fill the first limit */
    assert_int_equal(child_num(&c, "ok"), 8);    /* and 8 the raised one */
    tf_shm_unmap(&m);
}

static void empty_bucket_makes_launches_sleep_not_spin(void **state)
{
    int devs[] = {0};
    struct child c;
    /* No limit: 400 launches are instant. */
    struct tf_shm_map m = make_region(1, devs, 0, 0);
    assert_int_equal(run(&c, ARGS("launch", "400"), shm_env, NULL, NULL), 0);
    double free_run = strtod(child_value(&c, "seconds"), NULL);
    assert_true(free_run < 0.5);
    assert_int_equal(atomic_load(&m.r.use->pid[0].launches[0]), 0); /* slot released at exit */
    tf_shm_unmap(&m);
    /* 10 % of the device, kernels the driver's timing events measure at 250 us each (no
     * engine here): 400 launches are 100 ms of GPU time, i.e. 1 s of wall time minus the
     * 20 ms burst, whatever the region's default cost for launches not measured yet. */
    m = make_region(1, devs, 0, 1000);
    assert_int_equal(run(&c, ARGS("launch", "400"), shm_env, "FAKE_KERNEL_NS=250000", NULL), 0);
    double limited = strtod(child_value(&c, "seconds"), NULL);
    assert_true(limited > 0.8 && limited < 2.5);
    assert_true(atomic_load(&m.r.use->dev[0].throttle_count) > 0);
    /* Waiting is sleeping: the process used a small fraction of a core meanwhile. */
    assert_true(c.cpu_s < 0.3 * c.wall_s);
    /* A graph of 5 kernels is measured as one: 80 launches of it take as long as above. */
    assert_int_equal(run(&c, ARGS("graph", "5", "80"), shm_env, "FAKE_KERNEL_NS=250000", NULL), 0);
    double graph = strtod(child_value(&c, "seconds"), NULL);
    assert_true(graph > 0.8 && graph < 2.5);
    tf_shm_unmap(&m);
}

static void short_kernels_are_charged_what_they_use(void **state)
{
    int devs[] = {0};
    struct child c;
    /* 2000 kernels of 1 us, as the driver's timing events measure them, under a 10 % cap:
     * 2 ms of GPU time, which the bucket's 20 ms burst covers. Charged the default cost of an
     * unmeasured launch (500 us) they would take 10 s; measured, they are not held. */
    struct tf_shm_map m = make_region(1, devs, 0, 1000);
    assert_int_equal(run(&c, ARGS("launch", "2000"), shm_env, "FAKE_KERNEL_NS=1000", NULL), 0);
    double secs = strtod(child_value(&c, "seconds"), NULL);
    print_message("2000 x 1 us kernels under a 10 %% cap: %.3f s, %lu throttled\n", secs,
                  (unsigned long)atomic_load(&m.r.use->dev[0].throttle_count));
    assert_true(secs < 0.5);
    assert_true(atomic_load(&m.r.use->dev[0].throttle_count) <= 2);
    tf_shm_unmap(&m);
    /* A driver without timing events: the region's cost stands (here 250 us: 400 launches
     * take about 1 s again). */
    m = make_region(1, devs, 0, 1000);
    atomic_store(&m.r.lim->dev[0].launch_cost, 250000);
    assert_int_equal(
        run(&c, ARGS("launch", "400"), shm_env, "FAKE_KERNEL_NS=1000", "FAKE_CUDA_NO_EVENTS=1"), 0);
    secs = strtod(child_value(&c, "seconds"), NULL);
    assert_true(secs > 0.8 && secs < 2.5);
    tf_shm_unmap(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(app_beyond_its_vram_limit_gets_oom_and_keeps_working),
        cmocka_unit_test(memory_info_reports_the_limit_as_total),
        cmocka_unit_test(runtime_lookups_through_cuGetProcAddress_are_limited),
        cmocka_unit_test(driver_failure_gives_the_reservation_back),
        cmocka_unit_test(driver_reentering_its_own_exports_is_counted_once),
        cmocka_unit_test(only_the_workloads_devices_are_visible),
        cmocka_unit_test(standalone_env_limit_works_without_a_hypervisor),
        cmocka_unit_test(corrupt_region_is_rejected_with_a_clear_message),
        cmocka_unit_test(a_late_region_is_waited_for),
        cmocka_unit_test(stale_heartbeat_keeps_the_last_limits),
        cmocka_unit_test(two_processes_of_one_workload_share_one_limit),
        cmocka_unit_test(killed_process_never_wedges_or_starves_the_others),
        cmocka_unit_test(raised_limit_applies_to_a_running_process),
        cmocka_unit_test(empty_bucket_makes_launches_sleep_not_spin),
        cmocka_unit_test(short_kernels_are_charged_what_they_use),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
