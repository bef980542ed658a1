/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker --limits-region: hard limits taken live from the pod's limit region, as the
 * hypervisor writes it in Kubernetes. This process plays the hypervisor: it creates the
 * region (tf_shm_create, one entry with the simulated GPU's UUID), changes its limits
 * (tf_shm_set_limits) and, for the compute test, runs the limit engine on it with the
 * simulated NVML. Clients are forked children using libtf_client, as in the other e2e tests.
 *   - VRAM: an allocation within the limit succeeds and is charged to the region (device and
 *     the worker's PID slot); one beyond fails with CUDA_ERROR_OUT_OF_MEMORY; cuMemGetInfo
 *     and a connecting client's cuDeviceTotalMem report the limit; raising the limit live
 *     lets the same allocation succeed, nothing restarted;
 *   - the worker holds a PID slot while it runs and gives it back when it stops; a client
 *     that disconnects without freeing has its memory returned to the region;
 *   - start-up: a region created 300 ms after the worker started is waited for; a missing
 *     one (--limits-wait 1) makes the worker exit 1 naming the path; a region without the
 *     worker's GPU is refused naming the UUID; --limits-region with --vram-limit is a usage
 *     error (exit 2);
 *   - compute: with the engine feeding the region's bucket, a busy client is held near the
 *     region's 30 % (20..40, as remote_compute); a client of bursts of 1 us kernels under a
 *     90 % cap is not held, cold start included (the worker prices launches by measured GPU time);
 * a launch on an empty bucket waits (also with a stale heartbeat: the last limits stay) and goes
 * once the bucket is refilled.
 *
 * Argument (from meson): the timer.ptx path. Environment: TF_WORKER, TF_SIM_LIBDIR.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>

#include "e2e_cuda.h"
#include "../limits/region_fixture.h"
#include "limits/bucket.h"
#include "limits/engine.h"
#include "limits/nvml.h"
#include "limits/proc.h"
#include "limits/shm.h"

#define MiB (UINT64_C(1) << 20)
#define KERNEL_NS 1000000ull /* 1 ms kernels */
#define LOAD_S 3.5           /* the busy client's run */
#define WINDOW_S 2.5         /* the NVML window, inside it */

static char *timer_ptx;
static char dir[64], region[128]; /* our temp dir; the region file in it */
static uint8_t uuid0[16];         /* the simulated GPU's */

/* State shared with the children. */
struct shared {
    _Atomic int step;
    unsigned long long launched, completed;
    double secs;
};
static struct shared *S;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_s(double s)
{
    struct timespec d = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&d, NULL);
}

/* A region for one device with UUID (VRAM limit VRAM bytes and compute limit BP if not 0),
 * created as the hypervisor does. */
static struct tf_shm_map make_region_for(const uint8_t uuid[16], uint64_t vram, uint32_t bp)
{
    return tf_test_region(region, "ns/pod", 1, (const uint8_t(*)[16])uuid, vram, bp, 4096 * MiB);
}

static struct tf_shm_map make_region(uint64_t vram, uint32_t bp)
{
    return make_region_for(uuid0, vram, bp);
}

/* The PID slot of process PID in R, or -1. */
static int slot_of(const struct tf_shm_region *r, pid_t pid)
{
    struct tf_shm_region *rw = (struct tf_shm_region *)r;
    for (int i = 0; i < TF_SHM_MAX_PIDS; i++) {
        uint64_t o = atomic_load(&rw->use->pid[i].owner);
        if (o && tf_shm_owner_pid(o) == (uint32_t)pid)
            return i;
    }
    return -1;
}

static int64_t used_of(struct tf_shm_region *r)
{
    return atomic_load(&r->use->dev[0].vram_used);
}

static void start_worker(struct e2e_worker *w)
{
    const char *extra[] = {"--limits-region", region, NULL};
    e2e_start(w, 0, extra);
}

/* Runs tf-worker with ARGS (after --listen/--token-file) to its exit, its stderr in OUT.
 * Returns its exit status, or -1 if it did not exit within 10 s (then it is killed). */
static int run_worker(const char *const *args, char *out, size_t outlen)
{
    char token[128], log[128], sock[128];
    snprintf(token, sizeof(token), "%s/token", dir);
    snprintf(log, sizeof(log), "%s/worker.log", dir);
    snprintf(sock, sizeof(sock), "unix://%s/w.sock", dir);
    FILE *f = fopen(token, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", E2E_TOKEN);
    fclose(f);
    const char *argv[16] = {getenv("TF_WORKER"), "--listen", sock, "--token-file", token};
    int n = 5;
    for (int i = 0; args[i] && n < 15; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char prefix[128];
    snprintf(prefix, sizeof(prefix), "%s/sim-", dir);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (!freopen(log, "w", stderr))
            _exit(126);
        setenv("LD_LIBRARY_PATH", getenv("TF_SIM_LIBDIR"), 1);
        setenv("TF_SIM_SHM_PREFIX", prefix, 1);
        setenv("TF_LOG_LEVEL", "error", 1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0, rc = -1;
    for (int i = 0; i < 1000; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid) {
            rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            break;
        }
        sleep_s(0.01);
    }
    if (rc < 0 && waitpid(pid, &st, WNOHANG) == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
    }
    char *t = e2e_slurp(log);
    snprintf(out, outlen, "%s", t ? t : "");
    free(t);
    printf("tf-worker exited %d: %s", rc, out);
    return rc;
}

/* ---- children ------------------------------------------------------------------------------- */

/* Total memory as cuDeviceTotalMem and cuMemGetInfo report it; WANT_TOTAL for both. */
static int c_totals(void *arg)
{
    uint64_t want = *(const uint64_t *)arg;
    if (e2e_ctx())
        return 1;
    size_t total = 0, fr = 0, tot = 0;
    E2E_CU(cuDeviceTotalMem(&total, 0));
    E2E_CU(cuMemGetInfo(&fr, &tot));
    printf("cuDeviceTotalMem %zu, cuMemGetInfo %zu of %zu\n", total, fr, tot);
    E2E_CHECK(total == want);
    E2E_CHECK(tot == want);
    E2E_CHECK(fr <= tot);
    return 0;
}

/* Against a 64 MiB region limit: 48 MiB fits and is charged to the region, 32 MiB more does
 * not; the limit raised to 128 MiB live lets it fit. */
static int c_vram_live(void *arg)
{
    const pid_t *worker = arg;
    struct tf_shm_map m;
    char err[256];
    if (tf_shm_open(region, TF_SHM_ENGINE, &m, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    struct tf_shm_region *r = &m.r;
    if (e2e_ctx())
        return 1;
    size_t total = 0, fr = 0, tot = 0;
    E2E_CU(cuDeviceTotalMem(&total, 0));
    E2E_CU(cuMemGetInfo(&fr, &tot));
    E2E_CHECK(total == 64 * MiB);
    E2E_CHECK(tot == 64 * MiB && fr == 64 * MiB);
    CUdeviceptr a, b;
    E2E_CU(cuMemAlloc(&a, 48 * MiB));
    int slot = slot_of(r, *worker);
    E2E_CHECK(slot >= 0);
    E2E_CHECK(used_of(r) == (int64_t)(48 * MiB));
    E2E_CHECK(atomic_load(&r->use->pid[slot].vram_used[0]) == (int64_t)(48 * MiB));
    E2E_CU(cuMemGetInfo(&fr, &tot));
    E2E_CHECK(tot == 64 * MiB && fr == 16 * MiB);
    E2E_CHECK_CU(cuMemAlloc(&b, 32 * MiB), CUDA_ERROR_OUT_OF_MEMORY, "32 MiB over the limit");
    E2E_CHECK(atomic_load(&r->use->dev[0].oom_count) == 1);
    E2E_CHECK(used_of(r) == (int64_t)(48 * MiB));
    /* The hypervisor raises the limit (the pod's annotations changed). */
    E2E_CHECK(tf_shm_set_limits(r, 0, TF_SHM_DEV_VRAM_LIMIT, 0, 128 * MiB) == 0);
    E2E_CU(cuMemAlloc(&b, 32 * MiB));
    E2E_CHECK(used_of(r) == (int64_t)(80 * MiB));
    E2E_CU(cuMemGetInfo(&fr, &tot));
    E2E_CHECK(tot == 128 * MiB && fr == 48 * MiB);
    E2E_CU(cuMemFree(a));
    E2E_CU(cuCtxSynchronize()); /* frees are asynchronous: this flushes the one above */
    E2E_CHECK(used_of(r) == (int64_t)(32 * MiB));
    E2E_CHECK(atomic_load(&r->use->pid[slot].vram_used[0]) == (int64_t)(32 * MiB));
    E2E_CU(cuMemFree(b));
    E2E_CU(cuCtxSynchronize());
    E2E_CHECK(used_of(r) == 0);
    tf_shm_unmap(&m);
    return 0;
}

/* A module with a 48 MiB __device__ array against the region's 64 MiB: charged to the region
 * at load (the same path as an allocation), so 32 MiB more do not fit until it is unloaded;
 * a second such module does not load. */
static int c_module_vars(void *arg)
{
    (void)arg;
    struct tf_shm_map m;
    char err[256];
    if (tf_shm_open(region, TF_SHM_ENGINE, &m, err, sizeof(err)) != 0)
        return 1;
    if (e2e_ctx())
        return 1;
    static const char ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                              ".visible .global .align 4 .b8 big[50331648];\n";
    CUmodule a, b;
    CUdeviceptr p;
    E2E_CU(cuModuleLoadData(&a, ptx));
    E2E_CHECK(used_of(&m.r) == (int64_t)(48 * MiB));
    E2E_CHECK_CU(cuMemAlloc(&p, 32 * MiB), CUDA_ERROR_OUT_OF_MEMORY, "32 MiB beside the module");
    E2E_CHECK_CU(cuModuleLoadData(&b, ptx), CUDA_ERROR_OUT_OF_MEMORY, "a second module");
    E2E_CU(cuModuleUnload(a));
    E2E_CU(cuCtxSynchronize());
    E2E_CHECK(used_of(&m.r) == 0);
    E2E_CU(cuMemAlloc(&p, 32 * MiB));
    E2E_CU(cuMemFree(p));
    tf_shm_unmap(&m);
    return 0;
}

/* Allocates 40 MiB and leaves without freeing it (the connection just closes). */
static int c_alloc_and_leave(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    CUdeviceptr a;
    E2E_CU(cuMemAlloc(&a, 40 * MiB));
    E2E_CU(cuCtxSynchronize());
    return 0;
}

/* Keeps 4 launches of *ARG ns (NULL: KERNEL_NS) in flight for LOAD_S; every kernel must
 * have run. */
static int c_load(void *arg)
{
    unsigned long long ns = arg ? *(const unsigned long long *)arg : KERNEL_NS;
    if (e2e_ctx())
        return 1;
    CUfunction f;
    CUdeviceptr done;
    if (e2e_spin_kernel(timer_ptx, &f, &done))
        return 1;
    unsigned long long n = 0;
    double secs = 0;
    int rc = e2e_keep_busy(f, done, ns, LOAD_S, &S->step, &n, &secs);
    if (rc)
        return rc;
    S->launched = n;
    S->completed = n; /* e2e_keep_busy checked the device counter */
    S->secs = secs;
    return 0;
}

/* Bursts of 16 launches of 1 us kernels, each burst synchronised and followed by 2 ms idle
 * (an inference server's requests), for LOAD_S; every kernel must have run. */
static int c_bursts(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    CUfunction f;
    CUdeviceptr done;
    if (e2e_spin_kernel(timer_ptx, &f, &done))
        return 1;
    unsigned long long ns = 1000, n = 0, got = 0;
    void *p[] = {&ns, &done};
    E2E_CU(cuCtxSynchronize());
    S->step = 1;
    double t0 = e2e_now_s();
    while (e2e_now_s() < t0 + LOAD_S) {
        for (int i = 0; i < 16; i++, n++)
            E2E_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, p, NULL));
        E2E_CU(cuCtxSynchronize());
        sleep_s(0.002);
    }
    S->secs = e2e_now_s() - t0;
    E2E_CU(cuMemcpyDtoH(&got, done, 8));
    E2E_CHECK(got == n);
    S->launched = S->completed = n;
    return 0;
}

/* One short kernel, timed from its launch to the end of the synchronize. */
static int c_one_launch(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    CUfunction f;
    CUdeviceptr done;
    if (e2e_spin_kernel(timer_ptx, &f, &done))
        return 1;
    unsigned long long ns = 10000, got = 0;
    void *p[] = {&ns, &done};
    E2E_CU(cuCtxSynchronize());
    S->step = 1;
    double t0 = e2e_now_s();
    E2E_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, p, NULL));
    E2E_CU(cuCtxSynchronize());
    S->secs = e2e_now_s() - t0;
    S->step = 2;
    E2E_CU(cuMemcpyDtoH(&got, done, 8));
    E2E_CHECK(got == 1);
    return 0;
}

/* ---- tests ---------------------------------------------------------------------------------- */

static void vram_limit_comes_from_the_region_and_changes_live(void **state)
{
    struct tf_shm_map m = make_region(64 * MiB, 0);
    struct e2e_worker w;
    start_worker(&w);
    int slot = slot_of(&m.r, w.pid);
    assert_true(slot >= 0);
    assert_int_equal(e2e_run(c_vram_live, &w.pid, 60), 0);
    /* A client connecting now sees the raised limit as its total memory. */
    uint64_t want = 128 * MiB;
    assert_int_equal(e2e_run(c_totals, &want, 60), 0);
    e2e_stop(&w);
    /* The worker gave its PID slot back. */
    assert_int_equal(atomic_load(&m.r.use->pid[slot].owner), 0);
    assert_int_equal(slot_of(&m.r, w.pid), -1);
    tf_shm_unmap(&m);
}

static void a_disconnecting_clients_memory_is_released_in_the_region(void **state)
{
    struct tf_shm_map m = make_region(64 * MiB, 0);
    struct e2e_worker w;
    start_worker(&w);
    assert_int_equal(e2e_run(c_alloc_and_leave, NULL, 60), 0);
    int64_t used = used_of(&m.r);
    for (int i = 0; i < 500 && used != 0; i++) {
        sleep_s(0.01);
        used = used_of(&m.r);
    }
    assert_int_equal(used, 0);
    int slot = slot_of(&m.r, w.pid);
    assert_true(slot >= 0);
    assert_int_equal(atomic_load(&m.r.use->pid[slot].vram_used[0]), 0);
    assert_true(atomic_load(&m.r.use->dev[0].vram_peak) >= (int64_t)(40 * MiB));
    e2e_stop(&w);
    tf_shm_unmap(&m);
}

static void module_variables_are_charged_to_the_pods_region(void **state)
{
    struct tf_shm_map m = make_region(64 * MiB, 0);
    struct e2e_worker w;
    start_worker(&w);
    assert_int_equal(e2e_run(c_module_vars, NULL, 60), 0);
    e2e_stop(&w);
    tf_shm_unmap(&m);
}

static void the_worker_waits_for_a_region_created_after_it_started(void **state)
{
    unlink(region);
    fflush(NULL);
    pid_t maker = fork();
    if (maker == 0) {
        sleep_s(0.3);
        struct tf_shm_map m = make_region(64 * MiB, 0);
        tf_shm_unmap(&m);
        _exit(0);
    }
    double t0 = e2e_now_s();
    struct e2e_worker w;
    start_worker(&w);
    double up = e2e_now_s() - t0;
    int st;
    assert_int_equal(waitpid(maker, &st, 0), maker);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    printf("worker up after %.2f s\n", up);
    assert_true(up >= 0.3);
    uint64_t want = 64 * MiB;
    assert_int_equal(e2e_run(c_totals, &want, 60), 0);
    e2e_stop(&w);
}

static void a_missing_region_makes_the_worker_exit_naming_it(void **state)
{
    unlink(region);
    const char *args[] = {"--limits-region", region, "--limits-wait", "1", NULL};
    char out[4096];
    double t0 = e2e_now_s();
    int rc = run_worker(args, out, sizeof(out));
    double secs = e2e_now_s() - t0;
    assert_int_equal(rc, 1);
    assert_non_null(strstr(out, region));
    assert_true(secs >= 0.9 && secs < 8.0);
}

static void a_region_without_the_workers_gpu_is_refused(void **state)
{
    uint8_t other[16];
    memcpy(other, uuid0, 16);
    other[15] ^= 0x5a;
    struct tf_shm_map m = make_region_for(other, 64 * MiB, 0);
    const char *args[] = {"--limits-region", region, "--limits-wait", "1", NULL};
    char out[4096], u[48];
    assert_int_equal(run_worker(args, out, sizeof(out)), 1);
    tf_shm_uuid_format(uuid0, u, sizeof(u));
    assert_non_null(strstr(out, u));
    assert_non_null(strstr(out, "no entry"));
    /* It left no PID slot behind. */
    for (int i = 0; i < TF_SHM_MAX_PIDS; i++)
        assert_int_equal(atomic_load(&m.r.use->pid[i].owner), 0);
    tf_shm_unmap(&m);
}

static void limits_region_with_a_vram_limit_flag_is_a_usage_error(void **state)
{
    struct tf_shm_map m = make_region(64 * MiB, 0);
    const char *args[] = {"--limits-region", region, "--vram-limit", "1Gi", NULL};
    char out[4096];
    assert_int_equal(run_worker(args, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "--limits-region"));
    assert_non_null(strstr(out, "--vram-limit"));
    const char *args2[] = {"--limits-region", region, "--compute-percent", "30", NULL};
    assert_int_equal(run_worker(args2, out, sizeof(out)), 2);
    assert_non_null(strstr(out, "--compute-percent"));
    tf_shm_unmap(&m);
}

/* The hypervisor's side of a region test: the limit engine on the region, measuring through
 * the simulated NVML of worker W's device, on a thread; and an NVML handle of the test's own. */
struct hv {
    struct tf_nvml *env_nv, *nv;
    struct tf_engine *e;
    struct tf_engine_thread *th;
};

static void hv_start(struct hv *h, struct tf_shm_map *m, struct e2e_worker *w)
{
    char prefix[128], lib[600], err[256];
    snprintf(prefix, sizeof(prefix), "%s/sim-", w->dir);
    setenv("TF_SIM_SHM_PREFIX", prefix, 1);
    snprintf(lib, sizeof(lib), "%s/libnvidia-ml.so.1", getenv("TF_SIM_LIBDIR"));
    if (tf_nvml_open(lib, NULL, &h->env_nv, err, sizeof(err)) != 0 ||
        tf_nvml_open(lib, NULL, &h->nv, err, sizeof(err)) != 0)
        fail_msg("simulated NVML: %s", err);
    struct tf_engine_opts o = {
        .period_ms = 100,
        .usage = {.sample = tf_nvml_sample, .ctx = h->env_nv},
        .self_owner = tf_proc_self_owner(),
        .pidns = tf_proc_pidns(0),
    };
    h->e = tf_engine_new(&o);
    assert_non_null(h->e);
    assert_true(tf_engine_add(h->e, &m->r, "ns/pod") >= 0);
    assert_int_equal(tf_engine_thread_start(h->e, "test-engine", &h->th), 0);
}

static void hv_stop(struct hv *h)
{
    tf_engine_thread_stop(h->th);
    tf_engine_destroy(h->e);
    tf_nvml_close(h->nv);
    tf_nvml_close(h->env_nv);
}

/* The share (%) of the device worker W's process used over a WINDOW_S window, through the
 * test's own NVML handle. */
static double worker_share(struct hv *h, const struct e2e_worker *w)
{
    static const uint8_t any[16];
    struct tf_usage_dev u;
    assert_int_equal(tf_nvml_sample(h->nv, any, 0, now_ns(), &u), 0); /* primes the handle */
    double t0 = e2e_now_s();
    assert_int_equal(tf_nvml_sample(h->nv, any, 0, (uint64_t)(t0 * 1e9), &u), 0);
    sleep_s(WINDOW_S);
    double t1 = e2e_now_s();
    assert_int_equal(tf_nvml_sample(h->nv, any, 0, (uint64_t)(t1 * 1e9), &u), 0);
    assert_true(u.have_busy);
    uint64_t busy = 0;
    for (int k = 0; k < u.nproc; k++)
        if (u.proc[k].pid == (uint32_t)w->pid)
            busy += u.proc[k].busy_ns;
    return (double)busy * 100.0 / ((t1 - t0) * 1e9);
}

static void the_regions_compute_limit_holds_a_busy_client_near_it(void **state)
{
    struct tf_shm_map m = make_region(0, 3000);
    struct e2e_worker w;
    start_worker(&w);
    /* The busy client is forked before this process runs any thread of its own: a child forked
     * while the engine thread held an allocator lock would inherit it locked, and hang. */
    memset(S, 0, sizeof(*S));
    pid_t pid = e2e_spawn(c_load, NULL);
    struct hv h;
    hv_start(&h, &m, &w);
    for (int i = 0; i < 3000 && !S->step; i++)
        sleep_s(0.01);
    assert_true(S->step);
    double nvml_pct = worker_share(&h, &w);
    assert_int_equal(e2e_wait(pid, 60), 0);
    double work_pct = (double)S->completed * (double)KERNEL_NS * 100.0 / (S->secs * 1e9);
    int slot = slot_of(&m.r, w.pid);
    uint64_t launches = slot >= 0 ? atomic_load(&m.r.use->pid[slot].launches[0]) : 0;
    uint64_t pod_busy = atomic_load(&m.r.lim->dev[0].busy_ns);
    uint64_t throttled = atomic_load(&m.r.use->dev[0].throttle_count);
    printf("%llu kernels of 1 ms in %.2f s = %.1f %%; worker GPU time (NVML) %.1f %%; slot %d "
           "launches %llu, pod busy %.2f s, throttled %llu\n",
           S->completed, S->secs, work_pct, nvml_pct, slot, (unsigned long long)launches,
           (double)pod_busy / 1e9, (unsigned long long)throttled);
    hv_stop(&h);
    e2e_stop(&w);
    tf_shm_unmap(&m);
    assert_true(nvml_pct >= 20.0 && nvml_pct <= 40.0);
    assert_true(work_pct >= 20.0 && work_pct <= 40.0);
    /* The launches were counted in the worker's slot, and the engine attributed the worker's
     * GPU time to the pod through it. */
    assert_true(slot >= 0);
    assert_true(launches >= S->launched);
    assert_true(pod_busy > 0);
    assert_true(throttled > 0);
}

static void short_kernels_under_a_roomy_cap_are_not_held(void **state)
{
    /* A client sending bursts of 1 us kernels with idle gaps through the worker, the pod's
     * region at 90 %: far above what it uses (a few % of the device in a release build,
     * less than half in a sanitizer build on a quiet machine). The worker prices each launch
     * by its kernel's GPU time measured on the client's stream, so its launches wait for
     * tokens a small fraction of the time at most, cold start included (priced the engine's
     * default 500 us each until NVML had seen enough of it, 16 launches took 8 ms of tokens,
     * as much as the whole burst cycle). */
    struct tf_shm_map m = make_region(0, 9000);
    struct e2e_worker w;
    start_worker(&w);
    memset(S, 0, sizeof(*S));
    pid_t pid = e2e_spawn(c_bursts, NULL);
    struct hv h;
    hv_start(&h, &m, &w);
    for (int i = 0; i < 3000 && !S->step; i++)
        sleep_s(0.01);
    assert_true(S->step);
    sleep_s(0.2);
    double share = worker_share(&h, &w);
    assert_int_equal(e2e_wait(pid, 60), 0);
    double pct = (double)atomic_load(&m.r.use->dev[0].throttle_ns) * 100.0 / (LOAD_S * 1e9);
    printf("%llu kernels of 1 us in %.2f s, the worker at %.1f %% of the device under a 90 %% "
           "cap; throttled %.2f %% of the time\n",
           S->completed, S->secs, share, pct);
    hv_stop(&h);
    e2e_stop(&w);
    tf_shm_unmap(&m);
    assert_true(S->completed > 0);
    assert_true(share < 75.0); /* (the cap is well above its use) */
    assert_true(pct < 5.0);
}

static void a_launch_on_an_empty_bucket_waits_until_it_is_refilled(void **state)
{
    /* 1 %, no engine, and a heartbeat 10 s old (hypervisor gone): the last limits hold. */
    struct tf_shm_map m = make_region(0, 100);
    tf_shm_heartbeat(&m.r, now_ns() - 10 * UINT64_C(1000000000), 100, 1);
    assert_true(tf_shm_heartbeat_stale(&m.r, now_ns()));
    struct e2e_worker w;
    start_worker(&w);
    /* A debt of 100 s at 1 %: refill by time alone would not pay it during the test. */
    tf_bucket_adjust(&m.r.use->dev[0].bucket, &m.r.lim->dev[0].bucket, -(int64_t)1000000000);
    memset(S, 0, sizeof(*S));
    pid_t pid = e2e_spawn(c_one_launch, NULL);
    for (int i = 0; i < 3000 && !S->step; i++)
        sleep_s(0.01);
    assert_int_equal(S->step, 1);
    sleep_s(0.6);
    assert_int_equal(S->step, 1);                                   /* still held */
    assert_true(atomic_load(&m.r.use->dev[0].throttle_count) == 0); /* (counted when it goes) */
    tf_bucket_adjust(&m.r.use->dev[0].bucket, &m.r.lim->dev[0].bucket,
                     INT64_C(1) << 40); /* the engine refills: full */
    assert_int_equal(e2e_wait(pid, 30), 0);
    printf("the launch waited %.2f s\n", S->secs);
    assert_true(S->secs >= 0.6 && S->secs < 5.0);
    assert_int_equal(atomic_load(&m.r.use->dev[0].throttle_count), 1);
    e2e_stop(&w);
    tf_shm_unmap(&m);
}

static int setup(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/tf-region-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    snprintf(region, sizeof(region), "%s/shm", dir);
    /* The simulated GPU's UUID, through its NVML (its device state in our dir). */
    char prefix[128], lib[600], err[256];
    snprintf(prefix, sizeof(prefix), "%s/sim-", dir);
    setenv("TF_SIM_SHM_PREFIX", prefix, 1);
    snprintf(lib, sizeof(lib), "%s/libnvidia-ml.so.1", getenv("TF_SIM_LIBDIR"));
    struct tf_nvml *nv;
    if (tf_nvml_open(lib, NULL, &nv, err, sizeof(err)) != 0) {
        fprintf(stderr, "simulated NVML: %s\n", err);
        return -1;
    }
    int rc = tf_nvml_device_uuid(nv, 0, uuid0, NULL);
    tf_nvml_close(nv);
    return rc;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc != 2 || !(timer_ptx = e2e_slurp(argv[1]))) {
        fprintf(stderr, "usage: test_region TIMER.ptx\n");
        return 2;
    }
    if (!getenv("TF_WORKER") || !getenv("TF_SIM_LIBDIR")) {
        fprintf(stderr, "TF_WORKER and TF_SIM_LIBDIR must be set\n");
        return 2;
    }
    /* The worker and our NVML handles must see the same simulated device. */
    setenv("TF_SIM_DEVICES", "A100:4Gi", 1);
    S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (S == MAP_FAILED)
        return 2;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vram_limit_comes_from_the_region_and_changes_live),
        cmocka_unit_test(a_disconnecting_clients_memory_is_released_in_the_region),
        cmocka_unit_test(module_variables_are_charged_to_the_pods_region),
        cmocka_unit_test(the_worker_waits_for_a_region_created_after_it_started),
        cmocka_unit_test(a_missing_region_makes_the_worker_exit_naming_it),
        cmocka_unit_test(a_region_without_the_workers_gpu_is_refused),
        cmocka_unit_test(limits_region_with_a_vram_limit_flag_is_a_usage_error),
        cmocka_unit_test(the_regions_compute_limit_holds_a_busy_client_near_it),
        cmocka_unit_test(short_kernels_under_a_roomy_cap_are_not_held),
        cmocka_unit_test(a_launch_on_an_empty_bucket_waits_until_it_is_refilled),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    free(timer_ptx);
    munmap(S, sizeof(*S));
    return rc;
}
