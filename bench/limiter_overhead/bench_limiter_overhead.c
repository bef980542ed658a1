/* SPDX-License-Identifier: Apache-2.0
 *
 * What libtf_limiter.so adds to the driver calls on the hot path: cuLaunchKernel (with a
 * compute limit in force but tokens available, i.e. the unthrottled path: flags check,
 * bucket CAS, launch counter) and cuMemAlloc + cuMemFree (with a VRAM limit: reservation
 * CAS, pointer table), measured side by side in one run by the same driver-API program
 * (lim_host timing) with and without LD_PRELOAD, alternating 5 times and keeping the best
 * of each. Two drivers: the null driver (tests/limiter/fake: calls cost almost nothing, so
 * the difference is the limiter's own cost) and, when built, the simulated GPU (real PTX
 * module; its launch path dominates).
 * Output: limiter_overhead_<driver>_<call>_{plain,limited,added,ratio}: VALUE UNIT
 */
#include "limits/shm.h"
#include "spawn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 5

static char region[256];

static void make_region(void)
{
    snprintf(region, sizeof(region), "/tmp/tf-bench-overhead-%d", (int)getpid());
    unlink(region);
    struct tf_shm_config c;
    memset(&c, 0, sizeof(c));
    snprintf(c.name, sizeof(c.name), "bench/overhead");
    c.ndev = 1; /* zero UUID: the device at ordinal 0, whichever driver */
    c.dev[0].flags = TF_SHM_DEV_PRESENT | TF_SHM_DEV_VRAM_LIMIT | TF_SHM_DEV_COMPUTE_LIMIT;
    c.dev[0].vram_limit = UINT64_C(1) << 30;
    c.dev[0].compute_limit_bp = 10000;
    struct tf_shm_map m;
    char err[256];
    if (tf_shm_create(region, &c, 0600, &m, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_limiter_overhead: %s\n", err);
        exit(1);
    }
    /* As if the engine had measured tiny kernels: 1 token per launch, never throttled. */
    atomic_store(&m.r->dev[0].launch_cost, 1);
    tf_shm_unmap(&m);
}

static int measure(const char *libdir, const char *ptx, int limited, long n, double *launch,
                   double *alloc)
{
    char nbuf[32], ld[600], pre[600], shm[300], ptxenv[600], simprefix[300];
    snprintf(nbuf, sizeof(nbuf), "%ld", n);
    snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", libdir);
    snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", limited ? LIM_PRELOAD_PATH : "");
    snprintf(shm, sizeof(shm), "TF_SHM_PATH=%s", limited ? region : "");
    snprintf(ptxenv, sizeof(ptxenv), "LIM_PTX=%s", ptx ? ptx : "");
    snprintf(simprefix, sizeof(simprefix), "TF_SIM_SHM_PREFIX=/tmp/tf-bench-overhead-%d-sim-",
             (int)getpid());
    char *argv[] = {LIM_HOST_PATH, "timing", nbuf, NULL};
    const char *env[] = {ld,
                         pre,
                         shm,
                         ptxenv,
                         "TF_SIM_DEVICES=L4",
                         simprefix,
                         "TF_LOG_LEVEL=error",
                         "ASAN_OPTIONS=verify_asan_link_order=0",
                         NULL};
    struct child c;
    int rc = child_run(&c, argv, env, 300);
    if (rc != 0) {
        fprintf(stderr, "bench_limiter_overhead: lim_host exited %d: %s%s\n", rc, c.out, c.err);
        return -1;
    }
    *launch = strtod(child_value(&c, "launch_ns"), NULL);
    *alloc = strtod(child_value(&c, "alloc_free_ns"), NULL);
    return 0;
}

static int run_driver(const char *name, const char *libdir, const char *ptx, long n)
{
    double best[2][2] = {{1e18, 1e18}, {1e18, 1e18}};
    for (int r = 0; r < ROUNDS; r++) {
        for (int lim = 0; lim < 2; lim++) {
            double l, a;
            if (measure(libdir, ptx, lim, n, &l, &a) != 0)
                return 1;
            if (l < best[lim][0])
                best[lim][0] = l;
            if (a < best[lim][1])
                best[lim][1] = a;
        }
    }
    const char *call[2] = {"launch", "alloc_free"};
    for (int k = 0; k < 2; k++) {
        printf("limiter_overhead_%s_%s_plain: %.1f ns/call\n", name, call[k], best[0][k]);
        printf("limiter_overhead_%s_%s_limited: %.1f ns/call\n", name, call[k], best[1][k]);
        printf("limiter_overhead_%s_%s_added: %.1f ns/call\n", name, call[k],
               best[1][k] - best[0][k]);
        printf("limiter_overhead_%s_%s_ratio: %.3f x\n", name, call[k], best[1][k] / best[0][k]);
    }
    fflush(stdout);
    return 0;
}

int main(void)
{
    make_region();
    int rc = run_driver("null", LIM_FAKE_DIR, NULL, 200000);
#ifdef LIM_SIM_DIR
    if (rc == 0)
        rc = run_driver("sim", LIM_SIM_DIR, LIM_TIMER_PTX, 20000);
#endif
    unlink(region);
    return rc;
}
