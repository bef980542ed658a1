/* SPDX-License-Identifier: Apache-2.0
 *
 * What libtf_limiter.so adds to the driver calls on the hot path: cuLaunchKernel without a
 * compute limit ("uncapped": the limiter loaded, a VRAM limit only) and with one in force
 * but tokens available ("capped", the unthrottled path: flags check, the kernel's measured
 * cost from the launch cost model including the launches it measures with timing events,
 * batched bucket takes and launch counter), and cuMemAlloc + cuMemFree (with a VRAM limit:
 * reservation CAS, pointer table), measured side by side in one run by the same driver-API
 * program (lim_host timing) without the limiter ("plain") and with it, alternating 5 times
 * and keeping the best of each. Two drivers: the null driver (tests/limiter/fake: calls,
 * timing events included, cost almost nothing, so the difference is the limiter's own cost)
 * and, when built, the simulated GPU (real PTX module; its launch path dominates).
 * Output: limiter_overhead_<driver>_launch_{plain,uncapped,capped}: ns/call, then
 * _{uncapped,capped}_added (ns/call) and _ratio (x, capped), and
 * limiter_overhead_<driver>_alloc_free_{plain,limited,added,ratio}.
 */
#include "limits/bucket.h"
#include "limits/shm.h"
#include "spawn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 5

enum { PLAIN, UNCAPPED, CAPPED, MODES };
static const struct tf_shm_perms bench_perms = {.lmode = 0644, .umode = 0600, .uid = -1, .gid = -1};

static char region[MODES][256];

/* The regions: UNCAPPED with a VRAM limit only, CAPPED with a compute limit too. */
static void make_region(int mode)
{
    snprintf(region[mode], sizeof(region[mode]), "/tmp/tf-bench-overhead-%d-%d", (int)getpid(),
             mode);
    unlink(region[mode]);
    struct tf_shm_config c;
    memset(&c, 0, sizeof(c));
    snprintf(c.name, sizeof(c.name), "bench/overhead");
    c.ndev = 1; /* zero UUID: the device at ordinal 0, whichever driver */
    c.dev[0].flags = TF_SHM_DEV_PRESENT | TF_SHM_DEV_VRAM_LIMIT;
    if (mode == CAPPED)
        c.dev[0].flags |= TF_SHM_DEV_COMPUTE_LIMIT;
    c.dev[0].vram_limit = UINT64_C(1) << 30;
    c.dev[0].compute_limit_bp = 10000;
    struct tf_shm_map m;
    char err[256];
    if (tf_shm_create(region[mode], &c, &bench_perms, &m, err, sizeof(err)) != 0) {
        fprintf(stderr, "bench_limiter_overhead: %s\n", err);
        exit(1);
    }
    /* Tokens always available (no engine runs here): the unthrottled path is measured, with
     * launches priced as usual (measured, or 1 token while not measured yet). */
    atomic_store(&m.r.lim->dev[0].launch_cost, 1);
    tf_bucket_init(&m.r.use->dev[0].bucket, &m.r.lim->dev[0].bucket, UINT64_C(1) << 50,
                   INT64_C(1) << 50, 1);
    tf_shm_unmap(&m);
}

static int measure(const char *libdir, const char *ptx, int mode, long n, double *launch,
                   double *alloc)
{
    int limited = mode != PLAIN;
    char nbuf[32], ld[600], pre[600], shm[300], ptxenv[600], simprefix[300];
    snprintf(nbuf, sizeof(nbuf), "%ld", n);
    snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", libdir);
    snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", limited ? LIM_PRELOAD_PATH : "");
    snprintf(shm, sizeof(shm), "TF_SHM_PATH=%s", limited ? region[mode] : "");
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
    double best[MODES][2];
    for (int m = 0; m < MODES; m++)
        best[m][0] = best[m][1] = 1e18;
    for (int r = 0; r < ROUNDS; r++) {
        for (int m = 0; m < MODES; m++) {
            double l, a;
            if (measure(libdir, ptx, m, n, &l, &a) != 0)
                return 1;
            if (l < best[m][0])
                best[m][0] = l;
            if (a < best[m][1])
                best[m][1] = a;
        }
    }
    double plain = best[PLAIN][0], unc = best[UNCAPPED][0], cap = best[CAPPED][0];
    printf("limiter_overhead_%s_launch_plain: %.1f ns/call\n", name, plain);
    printf("limiter_overhead_%s_launch_uncapped: %.1f ns/call\n", name, unc);
    printf("limiter_overhead_%s_launch_capped: %.1f ns/call\n", name, cap);
    printf("limiter_overhead_%s_launch_uncapped_added: %.1f ns/call\n", name, unc - plain);
    printf("limiter_overhead_%s_launch_capped_added: %.1f ns/call\n", name, cap - plain);
    printf("limiter_overhead_%s_launch_ratio: %.3f x\n", name, cap / plain);
    /* Allocations: the VRAM limit is in force in both limiter modes; the best of them. */
    double alim = best[UNCAPPED][1] < best[CAPPED][1] ? best[UNCAPPED][1] : best[CAPPED][1];
    printf("limiter_overhead_%s_alloc_free_plain: %.1f ns/call\n", name, best[PLAIN][1]);
    printf("limiter_overhead_%s_alloc_free_limited: %.1f ns/call\n", name, alim);
    printf("limiter_overhead_%s_alloc_free_added: %.1f ns/call\n", name, alim - best[PLAIN][1]);
    printf("limiter_overhead_%s_alloc_free_ratio: %.3f x\n", name, alim / best[PLAIN][1]);
    fflush(stdout);
    return 0;
}

int main(void)
{
    make_region(UNCAPPED);
    make_region(CAPPED);
    int rc = run_driver("null", LIM_FAKE_DIR, NULL, 200000);
#ifdef LIM_SIM_DIR
    if (rc == 0)
        rc = run_driver("sim", LIM_SIM_DIR, LIM_TIMER_PTX, 20000);
#endif
    unlink(region[UNCAPPED]);
    unlink(region[CAPPED]);
    return rc;
}
