/* SPDX-License-Identifier: Apache-2.0
 *
 * How exactly soft isolation holds compute caps on the simulated GPU. Workloads run the
 * real %globaltimer spin kernel (tests/cuda/kernels/timer.cu) from separate processes
 * under LD_PRELOAD=libtf_limiter.so, each keeping 4 launches in flight (unsynchronised),
 * so the device stays saturated; this process runs the limit engine (NVML of the simulated
 * GPU, 100 ms steps) exactly as the hypervisor would. Every second it asks the simulated
 * driver (NVML, through its own handle, independent of the engine's sampling) how much GPU
 * time each workload's process used in that 1 s window, and prints the achieved share.
 * Scenarios: caps 30 % + 60 % sharing one device (short kernels; then one short and one
 * long kernel), 10 %, 30 % and 90 % alone. Hard isolation side by side: the same load as a
 * client of a tf-worker started with --compute-percent 10 / 30 / 90 (the worker runs the
 * same engine on its own thread and throttles the launches it issues); the share is then
 * the GPU time accounted to the worker's process, and each hard scenario runs right after
 * its soft twin. A last block prints the soft and hard means per cap next to each other.
 * Output per scenario: one `limiter_accuracy_<scenario>_<workload>_w<N>: SHARE %` line per
 * window, then _mean and _max_error (percentage points) over the windows after the first
 * 2 s, and _settling (seconds until every later window of the scenario is within +-3
 * points; "never" if the last window is not). The share
 * is the GPU time the simulated driver accounted to the workload's process; as an
 * independent check, _work_share is the kernels the workload completed (device-side
 * counter) over the whole run, normalised to an uncapped run of the same kernel alone.
 */
#include "limits/engine.h"
#include "limits/nvml.h"
#include "limits/proc.h"
#include "limits/shm.h"
#include "spawn.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAXW 2
#define SECONDS 10
#define TOL 3.0

struct wl {
    const char *name;
    uint32_t bp; /* 0: no compute limit (calibration) */
    int hard;    /* a client of a tf-worker holding the cap (one workload per scenario) */
    unsigned long long kernel_ns;
    char path[512];
    struct tf_shm_map map;
    struct child c;
    struct child worker; /* hard */
    double share[SECONDS];
    double mean;
    long long completed;
};

static long long uncapped_short, uncapped_long;

static struct tf_nvml *nv, *meas;
static uint8_t uuid[16];
static char prefix[128];
static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Starts W's tf-worker (hard) and waits for its address in ADDR. */
static int start_worker(struct wl *w, const char *name, char *addr, size_t len)
{
    char tok[300], ready[300], listen[320], pct[16], ld[600], simp[300];
    snprintf(tok, sizeof(tok), "%stoken", prefix);
    snprintf(ready, sizeof(ready), "%sready-%s", prefix, name);
    snprintf(listen, sizeof(listen), "unix://%sworker-%s.sock", prefix, name);
    snprintf(pct, sizeof(pct), "%u.%02u", w->bp / 100, w->bp % 100);
    snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", LIM_SIM_DIR);
    snprintf(simp, sizeof(simp), "TF_SIM_SHM_PREFIX=%s", prefix);
    FILE *f = fopen(tok, "w");
    if (!f)
        return 1;
    fputs("bench-accuracy-token-42\n", f);
    fclose(f);
    unlink(ready);
    char *argv[] = {
        LIM_WORKER_PATH,     "--listen", listen, "--token-file", tok, "--ready-file", ready,
        "--compute-percent", pct,        NULL};
    const char *env[] = {ld, simp, "TF_SIM_DEVICES=L4", "TF_LOG_LEVEL=error", NULL};
    child_start(&w->worker, argv, env);
    for (int i = 0; i < 1000; i++) {
        f = fopen(ready, "r");
        if (f) {
            if (!fgets(addr, (int)len, f))
                addr[0] = 0;
            fclose(f);
            addr[strcspn(addr, "\n")] = 0;
            if (addr[0])
                return 0;
        }
        struct timespec d = {0, 10 * 1000 * 1000};
        nanosleep(&d, NULL);
    }
    fprintf(stderr, "bench_limiter_accuracy: tf-worker did not start\n");
    return 1;
}

static int scenario(const char *name, struct wl *w, int n)
{
    struct tf_engine_opts o = {
        .period_ms = 100,
        .usage = {.sample = tf_nvml_sample, .ctx = nv},
        .self_owner = tf_proc_self_owner(),
        .pidns = tf_proc_pidns(0),
    };
    struct tf_engine *e = tf_engine_new(&o);
    for (int i = 0; i < n && !w[i].hard; i++) {
        snprintf(w[i].path, sizeof(w[i].path), "%sregion-%s-%s", prefix, name, w[i].name);
        unlink(w[i].path);
        struct tf_shm_config c;
        memset(&c, 0, sizeof(c));
        snprintf(c.name, sizeof(c.name), "%s/%s", name, w[i].name);
        c.ndev = 1;
        memcpy(c.dev[0].uuid, uuid, 16);
        c.dev[0].flags = TF_SHM_DEV_PRESENT | (w[i].bp ? TF_SHM_DEV_COMPUTE_LIMIT : 0);
        c.dev[0].compute_limit_bp = w[i].bp;
        char err[256];
        if (tf_shm_create(w[i].path, &c, 0600, &w[i].map, err, sizeof(err)) != 0) {
            fprintf(stderr, "bench_limiter_accuracy: %s\n", err);
            return 1;
        }
        tf_engine_add(e, w[i].map.r, c.name);
    }
    struct tf_engine_thread *th;
    if (tf_engine_thread_start(e, "engine", &th) != 0)
        return 1;
    char ld[600], pre[600], shm[MAXW][600], simp[300], kns[MAXW][32], secs[32];
    char addr[300] = "", remote[320];
    snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", LIM_SIM_DIR);
    snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", LIM_PRELOAD_PATH);
    snprintf(simp, sizeof(simp), "TF_SIM_SHM_PREFIX=%s", prefix);
    snprintf(secs, sizeof(secs), "%d", SECONDS + 1);
    for (int i = 0; i < n; i++) {
        snprintf(shm[i], sizeof(shm[i]), "TF_SHM_PATH=%s", w[i].path);
        snprintf(kns[i], sizeof(kns[i]), "%llu", w[i].kernel_ns);
        char *argv[] = {LIM_HOST_PATH, "load", LIM_TIMER_PTX, kns[i], secs, "4", NULL};
        if (w[i].hard) {
            if (start_worker(&w[i], name, addr, sizeof(addr)) != 0)
                return 1;
            snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", LIM_CLIENT_DIR);
            snprintf(remote, sizeof(remote), "TF_REMOTE=%s", addr);
            const char *env[] = {ld, remote, "TF_TOKEN=bench-accuracy-token-42",
                                 "TF_LOG_LEVEL=error", NULL};
            child_start(&w[i].c, argv, env);
            continue;
        }
        const char *env[] = {ld,  pre, shm[i], simp, "TF_SIM_DEVICES=L4", "TF_LOG_LEVEL=error",
                             NULL};
        child_start(&w[i].c, argv, env);
    }
    for (int i = 0; i < n; i++)
        if (!child_wait_for(&w[i].c, "load: running", 30)) {
            fprintf(stderr, "bench_limiter_accuracy: workload did not start: %s%s\n", w[i].c.out,
                    w[i].c.err);
            return 1;
        }
    struct tf_usage_dev u;
    uint64_t t0 = mono_ns();
    tf_nvml_sample(meas, uuid, 0, t0, &u); /* starts the measurement window */
    for (int s = 0; s < SECONDS; s++) {
        uint64_t until = t0 + 1000000000u, now = mono_ns();
        if (until > now) {
            struct timespec ts = {(time_t)((until - now) / 1000000000u),
                                  (long)((until - now) % 1000000000u)};
            nanosleep(&ts, NULL);
        }
        uint64_t t1 = mono_ns();
        tf_nvml_sample(meas, uuid, 0, t1, &u);
        for (int i = 0; i < n; i++) {
            uint64_t b = 0;
            pid_t gpu_pid = w[i].hard ? w[i].worker.pid : w[i].c.pid; /* who runs kernels */
            for (int k = 0; k < u.nproc; k++)
                if (u.proc[k].pid == (uint32_t)gpu_pid)
                    b = u.proc[k].busy_ns;
            w[i].share[s] = (double)b * 100.0 / (double)(t1 - t0);
        }
        t0 = t1;
    }
    for (int i = 0; i < n; i++) {
        child_finish(&w[i].c, 30); /* the load ends by itself one second later */
        w[i].completed = child_num(&w[i].c, "completed");
        if (w[i].hard) {
            kill(w[i].worker.pid, SIGTERM);
            child_finish(&w[i].worker, 30);
        }
    }
    tf_engine_thread_stop(th);
    if (w[0].bp == 0) { /* calibration: the device's throughput for this kernel */
        if (w[0].kernel_ns > 5000000)
            uncapped_long = w[0].completed;
        else
            uncapped_short = w[0].completed;
        printf("limiter_accuracy_%s_completed: %lld kernels\n", name, w[0].completed);
        tf_shm_unmap(&w[0].map);
        unlink(w[0].path);
        tf_engine_destroy(e);
        return w[0].completed > 0 ? 0 : 1;
    }
    /* Settling: the first window from which every later window of every workload is
     * within TOL of its cap. */
    int settle = SECONDS;
    for (int s = SECONDS - 1; s >= 0; s--) {
        int ok = 1;
        for (int i = 0; i < n; i++)
            if (fabs(w[i].share[s] - w[i].bp / 100.0) > TOL)
                ok = 0;
        if (!ok)
            break;
        settle = s;
    }
    for (int i = 0; i < n; i++) {
        double sum = 0, maxerr = 0;
        int k = 0;
        for (int s = 0; s < SECONDS; s++) {
            printf("limiter_accuracy_%s_%s_w%02d: %.1f %%\n", name, w[i].name, s + 1,
                   w[i].share[s]);
            if (s >= 2) {
                sum += w[i].share[s];
                k++;
                double err = fabs(w[i].share[s] - w[i].bp / 100.0);
                if (err > maxerr)
                    maxerr = err;
            }
        }
        printf("limiter_accuracy_%s_%s_cap: %.1f %%\n", name, w[i].name, w[i].bp / 100.0);
        w[i].mean = k ? sum / k : 0.0;
        printf("limiter_accuracy_%s_%s_mean: %.1f %%\n", name, w[i].name, w[i].mean);
        printf("limiter_accuracy_%s_%s_max_error: %.1f pp\n", name, w[i].name, maxerr);
        long long ref = w[i].kernel_ns > 5000000 ? uncapped_long : uncapped_short;
        if (ref > 0)
            printf("limiter_accuracy_%s_%s_work_share: %.1f %%\n", name, w[i].name,
                   (double)w[i].completed * 100.0 / (double)ref);
        if (!w[i].hard) {
            tf_shm_unmap(&w[i].map);
            unlink(w[i].path);
        }
    }
    if (settle < SECONDS)
        printf("limiter_accuracy_%s_settling: %d s\n", name, settle);
    else
        printf("limiter_accuracy_%s_settling: never (not within +-%.0f points) s\n", name, TOL);
    fflush(stdout);
    tf_engine_destroy(e);
    return 0;
}

int main(void)
{
    snprintf(prefix, sizeof(prefix), "/tmp/tf-bench-accuracy-%d-", (int)getpid());
    setenv("TF_SIM_DEVICES", "L4", 1);
    setenv("TF_SIM_SHM_PREFIX", prefix, 1);
    setenv("TF_LOG_LEVEL", "error", 0);
    char err[256];
    if (tf_nvml_open(LIM_SIM_DIR "/libnvidia-ml.so.1", NULL, &nv, err, sizeof(err)) != 0 ||
        tf_nvml_open(LIM_SIM_DIR "/libnvidia-ml.so.1", NULL, &meas, err, sizeof(err)) != 0 ||
        tf_nvml_device_uuid(nv, 0, uuid, NULL) != 0) {
        fprintf(stderr, "bench_limiter_accuracy: simulated NVML: %s\n", err);
        return 1;
    }
    struct wl pair[2] = {{.name = "a", .bp = 3000, .kernel_ns = 1000000},
                         {.name = "b", .bp = 6000, .kernel_ns = 1000000}};
    struct wl mixed[2] = {{.name = "a", .bp = 3000, .kernel_ns = 1000000},
                          {.name = "b", .bp = 6000, .kernel_ns = 20000000}};
    /* Soft and hard at the same caps, each hard run right after its soft twin. */
    static const uint32_t caps[3] = {1000, 3000, 9000};
    struct wl soft[3][1], hard[3][1];
    for (int i = 0; i < 3; i++) {
        soft[i][0] = (struct wl){.name = "a", .bp = caps[i], .kernel_ns = 1000000};
        hard[i][0] = (struct wl){.name = "a", .bp = caps[i], .kernel_ns = 1000000, .hard = 1};
    }
    struct wl cal_short[1] = {{.name = "a", .bp = 0, .kernel_ns = 1000000}};
    struct wl cal_long[1] = {{.name = "a", .bp = 0, .kernel_ns = 20000000}};
    int rc = scenario("uncapped_1ms", cal_short, 1);
    rc |= scenario("uncapped_20ms", cal_long, 1);
    rc |= scenario("pair_30_60", pair, 2);
    rc |= scenario("pair_30_60_long", mixed, 2);
    for (int i = 0; i < 3; i++) {
        char nm[32];
        snprintf(nm, sizeof(nm), "alone_%u", caps[i] / 100);
        rc |= scenario(nm, soft[i], 1);
        snprintf(nm, sizeof(nm), "hard_%u", caps[i] / 100);
        rc |= scenario(nm, hard[i], 1);
    }
    for (int i = 0; i < 3; i++) {
        printf("limiter_accuracy_cap_%u_soft_mean: %.1f %%\n", caps[i] / 100, soft[i][0].mean);
        printf("limiter_accuracy_cap_%u_hard_mean: %.1f %%\n", caps[i] / 100, hard[i][0].mean);
    }
    tf_nvml_close(meas);
    tf_nvml_close(nv);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -f %s*", prefix);
    if (system(cmd) != 0)
        rc = 1;
    return rc;
}
