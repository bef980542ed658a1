/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_limiter.so under CUDA runtime programs built with plain nvcc (tests/cudart), on the
 * simulated GPU, in standalone mode (TF_VRAM_LIMIT / TF_COMPUTE_PERCENT): every program passes
 * unchanged with static and shared runtime under both limits; the VRAM limit holds for
 * cudaMalloc, cudaMallocPitch, cudaMalloc3D, module variables, stream-ordered allocation
 * (default and own pools), managed memory and graph memory nodes, and is what the device and
 * cudaMemGetInfo report; the compute limit throttles <<<>>>, cudaLaunchKernelEx, cooperative
 * and graph launches, the last with static and shared runtime (device busy share measured
 * through NVML, so the figure does not depend on how fast the loaded machine runs the kernels).
 *
 * Environment (from meson): LIM_PRELOAD (the limiter, preceded by the ASan runtime in
 * sanitizer builds), LIM_LIBPATH (the simulated driver and the toolkit's libraries),
 * CUDART_EXES ("name_kind=path;..."), TF_SIM_DEVICES, TF_SIM_SHM_PREFIX.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../limits/region_fixture.h"
#include "busy.h"
#include "limits/nvml.h"
#include "sim/simcfg.h"
#include "spawn.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char preload[1200], libpath[1200];
static const char *exes;
static struct tf_nvml *nv;

/* Path of program NAME ("vecadd_static") from CUDART_EXES, in a static buffer. */
static const char *exe(const char *name)
{
    static char path[1024];
    size_t n = strlen(name);
    for (const char *p = exes; p && *p;) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > n && p[n] == '=' && strncmp(p, name, n) == 0 && len - n - 1 < sizeof(path)) {
            memcpy(path, p + n + 1, len - n - 1);
            path[len - n - 1] = 0;
            return path;
        }
        p = end ? end + 1 : NULL;
    }
    fail_msg("no program %s in CUDART_EXES", name);
    return NULL;
}

static int setup(void **state)
{
    const char *pre = getenv("LIM_PRELOAD"), *lp = getenv("LIM_LIBPATH");
    exes = getenv("CUDART_EXES");
    if (!pre || !lp || !exes)
        return -1;
    snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", pre);
    snprintf(libpath, sizeof(libpath), "LD_LIBRARY_PATH=%s", lp);
    char lib[1300], err[256];
    const char *colon = strchr(lp, ':');
    snprintf(lib, sizeof(lib), "%.*s/libnvidia-ml.so.1",
             colon ? (int)(colon - lp) : (int)strlen(lp), lp);
    if (tf_nvml_open(lib, NULL, &nv, err, sizeof(err)) != 0) {
        fprintf(stderr, "simulated NVML: %s\n", err);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    tf_nvml_close(nv);
    return 0;
}

/* Runs program NAME with ARG (or none) under the limiter with limits E1, E2. */
static int run(struct child *c, const char *name, const char *arg, const char *e1, const char *e2)
{
    char *argv[] = {(char *)exe(name), (char *)arg, NULL};
    const char *env[] = {preload, libpath, "TF_SHM_PATH=", e1, e2, "TF_LOG_LEVEL=warn", NULL};
    int rc = child_run(c, argv, env, 120);
    /* (nor may it meet an entry point the simulated driver does not support: logged at warn) */
    if (rc != 0 || !strstr(c->out, ": PASS") || strstr(c->err, "by the simulated GPU"))
        fail_msg("%s %s: exit %d\nstdout:\n%s\nstderr:\n%s", name, arg ? arg : "", rc, c->out,
                 c->err);
    return rc;
}

static void runtime_programs_pass_unchanged_under_vram_and_compute_limits(void **state)
{
    static const char *const progs[] = {"vecadd",  "matmul",  "pitched", "streams",
                                        "symbols", "launch",  "errors",  "nvrtc",
                                        "mempool", "managed", "graph"};
    for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
        for (int shared = 0; shared < 2; shared++) {
            char name[64];
            snprintf(name, sizeof(name), "%s_%s", progs[i], shared ? "shared" : "static");
            struct child c;
            run(&c, name, NULL, "TF_VRAM_LIMIT=2Gi", "TF_COMPUTE_PERCENT=50");
            if (strcmp(progs[i], "vecadd") == 0)
                assert_non_null(strstr(c.out, "2048 MiB)")); /* the device shows the limit */
        }
}

static void vram_limits_hold_for_every_runtime_allocation_path(void **state)
{
    struct child c;
    run(&c, "vram_static", "256", "TF_VRAM_LIMIT=256Mi", "TF_COMPUTE_PERCENT=");
    run(&c, "vram_shared", "160", "TF_VRAM_LIMIT=160Mi", "TF_COMPUTE_PERCENT=");
}

/* Device busy share (percent) of `burn PATH` (PROG: burn_static or burn_shared) started with
 * compute limit E, measured through NVML's per-process busy time over 2 s after 2 s of
 * settling. */
static double burn_share(const char *prog, const char *path, const char *e)
{
    char *argv[] = {(char *)exe(prog), (char *)path, "6", "10", NULL};
    const char *env[] = {preload, libpath, "TF_SHM_PATH=", e, "TF_LOG_LEVEL=warn", NULL};
    struct child c;
    child_start(&c, argv, env);
    assert_true(child_wait_for(&c, "burn: running", 60));
    double share = busy_share(nv, &c);
    int rc = child_finish(&c, 60);
    if (rc != 0)
        fail_msg("burn %s: exit %d\nstdout:\n%s\nstderr:\n%s", path, rc, c.out, c.err);
    return share;
}

static void compute_limit_throttles_every_runtime_launch_path(void **state)
{
    double free_run = burn_share("burn_static", "launch", "TF_COMPUTE_PERCENT=");
    print_message("<<<>>> uncapped: %.1f %% of the device\n", free_run);
    assert_true(free_run > 45.0);
    /* every launch path with the static runtime; graph launches with the shared one too */
    static const struct {
        const char *prog, *path;
    } runs[] = {{"burn_static", "launch"},
                {"burn_static", "ex"},
                {"burn_static", "coop"},
                {"burn_static", "graph"},
                {"burn_shared", "graph"}};
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        double capped = burn_share(runs[i].prog, runs[i].path, "TF_COMPUTE_PERCENT=25");
        print_message("%s (%s) at a 25 %% cap: %.1f %% of the device\n", runs[i].path, runs[i].prog,
                      capped);
        /* held under the cap; the floor only says the load still runs (a starved CPU on a
         * loaded machine lowers the share, never raises it) */
        assert_true(capped > 5.0 && capped < 36.0);
    }
}

/* A region naming only the second GPU of an L4 + T4 machine (CUDA_VISIBLE_DEVICES unset): the
 * runtime program sees one device, the T4, as device 0, with the region's limit as its memory.
 * (The CUDA runtime rejects device handles at or above the count it was given, so the limiter
 * makes the driver number the region's devices itself.) */
static void a_region_of_the_second_gpu_is_the_runtime_programs_device_0(void **state)
{
    struct tf_sim_config cfg;
    char err[256];
    tf_sim_config_default(&cfg);
    assert_int_equal(tf_sim_config_parse_devices(&cfg, "L4,T4", "test", err, sizeof(err)), 0);
    char dir[] = "/tmp/tf-test-limrt-XXXXXX", region[64], shm[96], prefix[96];
    assert_non_null(mkdtemp(dir));
    snprintf(region, sizeof(region), "%s/shm", dir);
    snprintf(shm, sizeof(shm), "TF_SHM_PATH=%s", region);
    snprintf(prefix, sizeof(prefix), "TF_SIM_SHM_PREFIX=%s/sim-", dir);
    struct tf_shm_map m = tf_test_region(
        region, "sim/pod", 1, (const uint8_t(*)[16])cfg.dev[1].uuid, UINT64_C(1) << 30, 0, 0);
    char *argv[] = {(char *)exe("vecadd_static"), NULL};
    const char *env[] = {preload,
                         libpath,
                         shm,
                         prefix,
                         "TF_SIM_DEVICES=L4,T4",
                         "CUDA_VISIBLE_DEVICES=",
                         "TF_LOG_LEVEL=warn",
                         NULL};
    struct child c;
    int rc = child_run(&c, argv, env, 120);
    if (rc != 0 || !strstr(c.out, "vecadd: PASS"))
        fail_msg("exit %d\nstdout:\n%s\nstderr:\n%s", rc, c.out, c.err);
    assert_non_null(strstr(c.out, "Tesla T4"));
    assert_non_null(strstr(c.out, "1024 MiB)"));
    tf_shm_unmap(&m);
    unlink(region);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(runtime_programs_pass_unchanged_under_vram_and_compute_limits),
        cmocka_unit_test(vram_limits_hold_for_every_runtime_allocation_path),
        cmocka_unit_test(a_region_of_the_second_gpu_is_the_runtime_programs_device_0),
        cmocka_unit_test(compute_limit_throttles_every_runtime_launch_path),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
