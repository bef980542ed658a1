/* SPDX-License-Identifier: Apache-2.0
 *
 * Hard compute limits through libtf_client -> tf-worker -> simulated GPU. Clients keep the
 * device busy with the %globaltimer spin kernel (tests/cuda/kernels/timer.cu, 4 launches in
 * flight, batched and unsynchronised), and the share they get is measured two ways: the GPU
 * time the simulated driver accounted to the worker's process over a window, read through
 * its NVML with a handle of our own (independent of the worker's controller), and the
 * kernels the clients completed times the kernel length over their run.
 *   - a worker with --compute-percent 30 holds one client to about 30 % (20..40);
 *   - two clients of one such worker get about 30 % together (the share is per worker);
 *   - without the flag the same client gets far more;
 *   - a client held back by the limit does not hold back another client's synchronous
 *     calls, and throttled launches still run in order with nothing lost;
 *   - a throttled stretch longer than the client's reply timeout, made of waits shorter
 *     than the keepalive period, keeps the client waiting (keepalives), not failing.
 *
 * Argument (from meson): the timer.ptx path. Environment: TF_WORKER, TF_SIM_LIBDIR.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>

#include "e2e_cuda.h"
#include "limits/nvml.h"

#define KERNEL_NS 1000000ull /* 1 ms kernels */
#define LOAD_S 3.5           /* each client's run */
#define WINDOW_S 2.5         /* the NVML window, inside every client's run */
#define MAX_CLIENTS 2

static char *timer_ptx;

/* Results of the children, in memory shared with them. */
struct shared {
    _Atomic int running; /* clients in their launch loop */
    unsigned long long launched[MAX_CLIENTS], completed[MAX_CLIENTS];
    double secs[MAX_CLIENTS];
    double median_alloc_ms; /* the other client's synchronous calls */
};
static struct shared *S;

static void sleep_s(double s)
{
    struct timespec d = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&d, NULL);
}

struct load_arg {
    int idx;
    unsigned long long ns; /* kernel length */
    double secs;
};

/* Keeps 4 launches of spin_ns in flight for A->secs; every kernel must have run, in order
 * (the device-side counter equals the launches). */
static int c_load(void *arg)
{
    const struct load_arg *a = arg;
    if (e2e_ctx())
        return 1;
    CUfunction f;
    CUdeviceptr done;
    if (e2e_spin_kernel(timer_ptx, &f, &done))
        return 1;
    unsigned long long n = 0;
    double secs = 0;
    int rc = e2e_keep_busy(f, done, a->ns, a->secs, &S->running, &n, &secs);
    if (rc)
        return rc;
    S->launched[a->idx] = n;
    S->completed[a->idx] = n; /* e2e_keep_busy checked the device counter */
    S->secs[a->idx] = secs;
    return 0;
}

static int cmp_d(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* 100 synchronous allocations (one round trip each) while another client is throttled. */
static int c_allocs(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    double t[100];
    for (int i = 0; i < 100; i++) {
        CUdeviceptr d;
        double t0 = e2e_now_s();
        E2E_CU(cuMemAlloc(&d, 4096));
        t[i] = (e2e_now_s() - t0) * 1e3;
        E2E_CU(cuMemFree(d));
        sleep_s(0.005);
    }
    qsort(t, 100, sizeof(t[0]), cmp_d);
    S->median_alloc_ms = (t[49] + t[50]) / 2;
    return 0;
}

/* Waits until N clients are in their launch loop (generous: start-up under ASan and load). */
static void wait_running(int n)
{
    for (int i = 0; i < 3000 && S->running < n; i++)
        sleep_s(0.01);
    assert_true(S->running >= n);
}

struct measured {
    double nvml_pct; /* the worker's GPU time over the window */
    double work_pct; /* completed kernels x length over each client's run, summed */
};

/* Runs NCLIENTS load clients on a worker started with EXTRA and measures their share. */
static void run_load(const char *const *extra, int nclients, unsigned long long kernel_ns,
                     struct measured *out)
{
    struct e2e_worker w;
    e2e_start(&w, 0, extra);
    char prefix[128], err[256];
    snprintf(prefix, sizeof(prefix), "%s/sim-", w.dir);
    setenv("TF_SIM_SHM_PREFIX", prefix, 1); /* our NVML handle sees the worker's device */
    char lib[600];
    snprintf(lib, sizeof(lib), "%s/libnvidia-ml.so.1", getenv("TF_SIM_LIBDIR"));
    struct tf_nvml *nv;
    if (tf_nvml_open(lib, NULL, &nv, err, sizeof(err)) != 0)
        fail_msg("simulated NVML: %s", err);
    memset(S, 0, sizeof(*S));
    struct load_arg a[MAX_CLIENTS];
    pid_t pid[MAX_CLIENTS];
    for (int i = 0; i < nclients; i++) {
        a[i] = (struct load_arg){.idx = i, .ns = kernel_ns, .secs = LOAD_S};
        pid[i] = e2e_spawn(c_load, &a[i]);
    }
    wait_running(nclients);
    static const uint8_t any[16];
    struct tf_usage_dev u;
    double t0 = e2e_now_s();
    assert_int_equal(tf_nvml_sample(nv, any, 0, (uint64_t)(t0 * 1e9), &u), 0); /* starts it */
    sleep_s(WINDOW_S);
    double t1 = e2e_now_s();
    assert_int_equal(tf_nvml_sample(nv, any, 0, (uint64_t)(t1 * 1e9), &u), 0);
    assert_true(u.have_busy);
    uint64_t busy = 0;
    for (int k = 0; k < u.nproc; k++)
        if (u.proc[k].pid == (uint32_t)w.pid)
            busy += u.proc[k].busy_ns;
    for (int i = 0; i < nclients; i++)
        assert_int_equal(e2e_wait(pid[i], 60), 0);
    out->nvml_pct = (double)busy * 100.0 / ((t1 - t0) * 1e9);
    out->work_pct = 0;
    for (int i = 0; i < nclients; i++) {
        double pct = (double)S->completed[i] * (double)kernel_ns * 100.0 / (S->secs[i] * 1e9);
        printf("client %d: %llu kernels of %.1f ms in %.2f s = %.1f %%\n", i, S->completed[i],
               (double)kernel_ns / 1e6, S->secs[i], pct);
        assert_true(S->completed[i] > 0);
        out->work_pct += pct;
    }
    printf("worker GPU time (NVML) %.1f %%, clients' kernels %.1f %%\n", out->nvml_pct,
           out->work_pct);
    tf_nvml_close(nv);
    e2e_stop(&w);
}

/* NCLIENTS load clients of a worker capped at 30 % get 30 % together (±10 points). */
static void capped_at_30_percent(int nclients)
{
    const char *extra[] = {"--compute-percent", "30", NULL};
    struct measured m;
    run_load(extra, nclients, KERNEL_NS, &m);
    /* The limit is on GPU time, which the worker's NVML figure measures. The kernels' own
     * share is below it (each kernel takes more than its 1 ms of device time, the more so on
     * a busy machine), never above. */
    assert_true(m.nvml_pct >= 20.0 && m.nvml_pct <= 40.0);
    assert_true(m.work_pct >= 5.0 && m.work_pct <= 40.0);
}

static void a_worker_at_30_percent_holds_a_kernel_loop_to_30_percent(void **state)
{
    capped_at_30_percent(1);
}

static void two_clients_of_a_30_percent_worker_share_30_percent(void **state)
{
    capped_at_30_percent(2);
}

static void without_a_compute_limit_the_same_loop_gets_far_more(void **state)
{
    struct measured m;
    run_load(NULL, 1, KERNEL_NS, &m);
    /* Device time per kernel exceeds its 1 ms (the PTX engine's own work), so the kernels
     * account for less than the device's busy time. */
    assert_true(m.nvml_pct >= 60.0);
    assert_true(m.work_pct >= 30.0);
}

static void a_throttled_client_does_not_hold_back_another_clients_sync_calls(void **state)
{
    /* 20 ms kernels at 10 %: after the first burst every launch of A waits ~200 ms. */
    const char *extra[] = {"--compute-percent", "10", NULL};
    struct e2e_worker w;
    e2e_start(&w, 0, extra);
    memset(S, 0, sizeof(*S));
    struct load_arg a = {.idx = 0, .ns = 20 * KERNEL_NS, .secs = 2.0};
    pid_t pa = e2e_spawn(c_load, &a);
    wait_running(1);
    sleep_s(0.3); /* A is in its throttled regime now */
    pid_t pb = e2e_spawn(c_allocs, NULL);
    assert_int_equal(e2e_wait(pb, 60), 0);
    assert_int_equal(e2e_wait(pa, 60), 0);
    printf("A: %llu kernels of 20 ms in %.2f s; B: median cuMemAlloc %.3f ms\n", S->completed[0],
           S->secs[0], S->median_alloc_ms);
    assert_true(S->completed[0] == S->launched[0]);
    assert_true(S->median_alloc_ms < 50.0);
    e2e_stop(&w);
}

/* 20 launches of 20 ms at 10 %: each waits ~200 ms for its tokens, ~4 s in all, longer
 * than this client's 2.5 s reply timeout. No single wait reaches the worker's 1 s keepalive
 * period, yet the client must see keepalives and wait, not declare the worker lost. */
static int c_long_throttle(void *arg)
{
    (void)arg;
    setenv("TF_REMOTE_TIMEOUT_MS", "2500", 1);
    if (e2e_ctx())
        return 1;
    CUfunction f;
    CUdeviceptr done;
    if (e2e_spin_kernel(timer_ptx, &f, &done))
        return 1;
    unsigned long long ns = 20 * KERNEL_NS;
    void *p[] = {&ns, &done};
    /* Warm-up: the worker's controller learns what a launch costs (its first estimate is
     * 500 us) and charges what the first kernels really used. */
    for (int i = 0; i < 10; i++)
        E2E_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, p, NULL));
    E2E_CU(cuCtxSynchronize());
    sleep_s(0.5);
    double t0 = e2e_now_s();
    for (int i = 0; i < 20; i++)
        E2E_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, p, NULL));
    E2E_CU(cuCtxSynchronize());
    double secs = e2e_now_s() - t0;
    unsigned long long got = 0;
    E2E_CU(cuMemcpyDtoH(&got, done, 8));
    printf("20 kernels of 20 ms at 10 %% took %.2f s\n", secs);
    E2E_CHECK(got == 30);
    E2E_CHECK(secs > 2.5); /* they were throttled for longer than the timeout */
    return 0;
}

static void a_long_throttled_stretch_keeps_the_client_waiting_not_failing(void **state)
{
    const char *extra[] = {"--compute-percent", "10", NULL};
    struct e2e_worker w;
    e2e_start(&w, 0, extra);
    assert_int_equal(e2e_run(c_long_throttle, NULL, 60), 0);
    e2e_stop(&w);
}

int main(int argc, char **argv)
{
    if (argc != 2 || !(timer_ptx = e2e_slurp(argv[1]))) {
        fprintf(stderr, "usage: test_compute TIMER.ptx\n");
        return 2;
    }
    /* The worker and our NVML handle must see the same simulated device. */
    setenv("TF_SIM_DEVICES", "A100:4Gi", 1);
    S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (S == MAP_FAILED)
        return 2;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_worker_at_30_percent_holds_a_kernel_loop_to_30_percent),
        cmocka_unit_test(two_clients_of_a_30_percent_worker_share_30_percent),
        cmocka_unit_test(without_a_compute_limit_the_same_loop_gets_far_more),
        cmocka_unit_test(a_throttled_client_does_not_hold_back_another_clients_sync_calls),
        cmocka_unit_test(a_long_throttled_stretch_keeps_the_client_waiting_not_failing),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(timer_ptx);
    munmap(S, sizeof(*S));
    return rc;
}
