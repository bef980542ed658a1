/* SPDX-License-Identifier: Apache-2.0
 *
 * Stream capture with host steps through libtf_client -> tf-worker -> the simulated GPU
 * (docs/remote.md "Stream capture and graphs"): copies from and to host memory and host
 * functions inside a capture become steps of a program of worker graphs, replayed by each
 * launch. Checked: a capture invalidated by a synchronisation fails at its end (with and
 * without host steps) and leaves the stream usable; a host function runs after the device
 * work and the copy out before it and before the copy in after it; every launch reads the
 * host inputs anew (graph memory included, whose address holds across launches, charged to
 * the worker's VRAM limit while the executable graph lives); a program whose graph is
 * destroyed still launches through its executable graph; a worker's compute
 * limit charges every segment's launch (a kernel after a host step is throttled).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda.h>

#include "e2e_cuda.h"

enum { N = 8192 };

static char *timer_ptx;
static struct e2e_worker W;

static size_t free_now(void)
{
    size_t fr = 0, tot = 0;
    return cuMemGetInfo(&fr, &tot) == CUDA_SUCCESS ? fr : 0;
}

/* ---- a synchronisation invalidates the capture ---------------------------------------------- */

static void CUDA_CB never(CUstream st, CUresult status, void *arg)
{
    (void)st, (void)status;
    (*(int *)arg)++;
}

/* ARG 0: a synchronise, 1: the same after a host step, 2: a stream callback. */
static int c_sync_invalidates(void *arg)
{
    int with_host_step = arg == (void *)1, callback = arg == (void *)2, calls = 0;
    if (e2e_ctx())
        return 1;
    static uint32_t h[N];
    CUstream st;
    CUdeviceptr d;
    E2E_CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    E2E_CU(cuMemAlloc(&d, N * 4));
    E2E_CU(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
    E2E_CU(cuMemsetD32Async(d, 1, N, st));
    if (with_host_step)
        E2E_CU(cuMemcpyDtoHAsync(h, d, sizeof(h), st));
    if (callback) {
        E2E_CHECK_CU(cuStreamAddCallback(st, never, &calls, 0),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "a stream callback in a capture");
        E2E_CHECK(calls == 0);
    } else {
        E2E_CHECK_CU(cuStreamSynchronize(st), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                     "synchronize a capturing stream");
    }
    if (with_host_step) /* the next segment cannot begin: the capture is invalid */
        E2E_CHECK_CU(cuMemcpyHtoDAsync(d, h, sizeof(h), st), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                     "a host step after the sync");
    CUgraph g = NULL;
    E2E_CHECK_CU(cuStreamEndCapture(st, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                 "end an invalidated capture");
    E2E_CHECK(g == NULL);
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    E2E_CU(cuStreamIsCapturing(st, &cs));
    E2E_CHECK(cs == CU_STREAM_CAPTURE_STATUS_NONE);
    /* the stream and context stay usable, nothing of the capture ran */
    E2E_CU(cuMemsetD32Async(d, 9, N, st));
    E2E_CU(cuMemcpyDtoHAsync(h, d, sizeof(h), st));
    E2E_CU(cuStreamSynchronize(st));
    for (int i = 0; i < N; i++)
        E2E_CHECK(h[i] == 9);
    E2E_CU(cuMemFree(d));
    E2E_CU(cuStreamDestroy(st));
    return 0;
}

/* Ending the capture on a stream that only joined it is refused and invalidates it. */
static int c_unmatched_end(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    static uint32_t h[16];
    CUstream st, other;
    CUevent fork;
    CUdeviceptr d;
    E2E_CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    E2E_CU(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    E2E_CU(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    E2E_CU(cuMemAlloc(&d, sizeof(h)));
    E2E_CU(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
    E2E_CU(cuMemcpyHtoDAsync(d, h, sizeof(h), st));
    E2E_CU(cuEventRecord(fork, st));
    E2E_CU(cuStreamWaitEvent(other, fork, 0));
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    E2E_CU(cuStreamIsCapturing(other, &cs)); /* it joined */
    E2E_CHECK(cs == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUgraph g = NULL;
    E2E_CHECK_CU(cuStreamEndCapture(other, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED,
                 "end on a joined stream");
    E2E_CHECK_CU(cuStreamEndCapture(st, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                 "end after an unmatched end");
    E2E_CHECK(g == NULL);
    E2E_CU(cuStreamIsCapturing(other, &cs));
    E2E_CHECK(cs == CU_STREAM_CAPTURE_STATUS_NONE);
    /* a stream destroyed while it captures, after a host step: the capture goes with it */
    E2E_CU(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
    E2E_CU(cuMemsetD32Async(d, 1, 4, st));
    E2E_CU(cuMemcpyHtoDAsync(d, h, sizeof(h), st));
    E2E_CU(cuStreamDestroy(st));
    E2E_CHECK_CU(cuStreamEndCapture(st, &g), CUDA_ERROR_INVALID_HANDLE, "a destroyed stream");
    E2E_CU(cuStreamSynchronize(other));
    E2E_CU(cuMemFree(d));
    E2E_CU(cuEventDestroy(fork));
    E2E_CU(cuStreamDestroy(other));
    return 0;
}

/* Unsafe calls during a capture: prohibited on the capturing thread in global mode (the call
 * fails and invalidates the capture), allowed once the thread's mode is relaxed
 * (cuThreadExchangeStreamCaptureMode, as PyTorch's allocator does around cudaMalloc). */
static int c_capture_modes(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    CUstream st;
    CUdeviceptr d, x;
    E2E_CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    E2E_CU(cuMemAlloc(&d, 64));
    CUgraph g = NULL;
    E2E_CU(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
    E2E_CU(cuMemsetD32Async(d, 1, 16, st));
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    E2E_CU(cuThreadExchangeStreamCaptureMode(&m));
    E2E_CHECK(m == CU_STREAM_CAPTURE_MODE_GLOBAL);
    E2E_CU(cuMemAlloc(&x, 64)); /* relaxed: allowed */
    E2E_CU(cuThreadExchangeStreamCaptureMode(&m));
    E2E_CHECK(m == CU_STREAM_CAPTURE_MODE_RELAXED);
    E2E_CU(cuStreamEndCapture(st, &g));
    E2E_CU(cuGraphDestroy(g));
    E2E_CU(cuMemFree(x));
    E2E_CU(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
    E2E_CHECK_CU(cuMemAlloc(&x, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
                 "an allocation during a global capture");
    E2E_CHECK_CU(cuStreamEndCapture(st, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED,
                 "end after a prohibited call");
    m = 42;
    E2E_CHECK_CU(cuThreadExchangeStreamCaptureMode(&m), CUDA_ERROR_INVALID_VALUE, "bad mode");
    E2E_CU(cuMemFree(d));
    E2E_CU(cuStreamDestroy(st));
    return 0;
}

static void a_sync_in_a_capture_invalidates_it(void **state)
{
    (void)state;
    assert_int_equal(e2e_run(c_sync_invalidates, NULL, 60), 0);
    assert_int_equal(e2e_run(c_sync_invalidates, (void *)1, 60), 0);
    assert_int_equal(e2e_run(c_sync_invalidates, (void *)2, 60), 0);
    assert_int_equal(e2e_run(c_unmatched_end, NULL, 60), 0);
    assert_int_equal(e2e_run(c_capture_modes, NULL, 60), 0);
}

/* ---- a host function between device work and copies ----------------------------------------- */

struct order {
    const uint32_t *seen; /* copied out before the function */
    uint32_t *next;       /* copied in after it */
    uint32_t round;
    int bad, calls;
};

static void CUDA_CB between(void *arg)
{
    struct order *o = arg;
    o->calls++;
    for (int i = 0; i < N; i++) {
        if (o->seen[i] != (i ? 0u : 0x1000u + o->round))
            o->bad++;
        o->next[i] = (uint32_t)i * 3u + o->round;
    }
}

static int c_host_fn_order(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    static uint32_t seen[N], next[N], out[N], val;
    struct order o = {.seen = seen, .next = next};
    CUstream st, other;
    CUevent fork, join;
    CUdeviceptr d;
    E2E_CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    E2E_CU(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    E2E_CU(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    E2E_CU(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    E2E_CU(cuMemAlloc(&d, N * 4));
    CUgraph g;
    E2E_CU(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
    E2E_CU(cuMemcpyHtoDAsync(d, &val, 4, st)); /* the round, read at each launch */
    /* device work forked to another stream and joined back */
    E2E_CU(cuEventRecord(fork, st));
    E2E_CU(cuStreamWaitEvent(other, fork, 0));
    E2E_CU(cuMemsetD32Async(d + 4, 0, N - 1, other));
    /* one capture, one id, across the fork and the host step before it */
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id1 = 0, id2 = 0;
    E2E_CU(cuStreamGetCaptureInfo(st, &cs, &id1, NULL, NULL, NULL, NULL));
    E2E_CU(cuStreamGetCaptureInfo(other, &cs, &id2, NULL, NULL, NULL, NULL));
    E2E_CHECK(cs == CU_STREAM_CAPTURE_STATUS_ACTIVE && id1 == id2 && id1 != 0);
    CUgraph cg;
    E2E_CHECK_CU(cuStreamGetCaptureInfo(st, &cs, NULL, &cg, NULL, NULL, NULL),
                 CUDA_ERROR_NOT_SUPPORTED, "the capture's graph");
    E2E_CU(cuEventRecord(join, other));
    E2E_CU(cuStreamWaitEvent(st, join, 0));
    E2E_CU(cuMemcpyDtoHAsync(seen, d, sizeof(seen), st));
    E2E_CU(cuLaunchHostFunc(st, between, &o));
    E2E_CU(cuMemcpyHtoDAsync(d, next, sizeof(next), st));
    E2E_CU(cuMemcpyDtoHAsync(out, d, sizeof(out), st));
    E2E_CU(cuStreamEndCapture(st, &g));
    E2E_CHECK(o.calls == 0); /* captured, not run */
    E2E_CU(cuStreamGetCaptureInfo(other, &cs, NULL, NULL, NULL, NULL, NULL));
    E2E_CHECK(cs == CU_STREAM_CAPTURE_STATUS_NONE);
    size_t nodes = 0;
    E2E_CU(cuGraphGetNodes(g, NULL, &nodes));
    E2E_CHECK(nodes == 6); /* the memset, 4 copies, the host node (no event nodes) */
    CUgraphExec ge;
    E2E_CU(cuGraphInstantiateWithFlags(&ge, g, 0));
    for (uint32_t r = 0; r < 4; r++) {
        o.round = r;
        val = 0x1000u + r; /* word 0; the memset zeroes the rest */
        E2E_CU(cuGraphLaunch(ge, st));
        E2E_CU(cuStreamSynchronize(st));
        E2E_CHECK(o.calls == (int)r + 1);
        for (int i = 0; i < N; i++)
            E2E_CHECK(out[i] == (uint32_t)i * 3u + r);
        /* the function saw word 0 as sent and the rest zeroed by the memset */
        E2E_CHECK(o.bad == 0);
    }
    E2E_CU(cuGraphExecDestroy(ge));
    E2E_CU(cuGraphDestroy(g));
    E2E_CU(cuMemFree(d));
    E2E_CU(cuEventDestroy(fork));
    E2E_CU(cuEventDestroy(join));
    E2E_CU(cuStreamDestroy(st));
    E2E_CU(cuStreamDestroy(other));
    return 0;
}

static void a_host_function_runs_between_the_work_before_and_after_it(void **state)
{
    (void)state;
    assert_int_equal(e2e_run(c_host_fn_order, NULL, 60), 0);
}

/* ---- repeated launches with new inputs, graph memory, the graph destroyed first ------------ */

static int c_relaunch(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    static uint32_t in[N], out[N], back[N];
    CUstream st;
    CUdeviceptr d;
    E2E_CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    E2E_CU(cuMemAlloc(&d, N * 4));
    CUgraph g;
    CUdeviceptr scratch = 0;
    E2E_CU(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_RELAXED));
    E2E_CU(cuMemAllocAsync(&scratch, N * 4, st)); /* a graph memory node */
    E2E_CU(cuMemcpyHtoDAsync(scratch, in, sizeof(in), st));
    E2E_CU(cuMemcpyDtoDAsync(d, scratch, N * 4, st));
    E2E_CU(cuMemsetD32Async(d, 0x77, 16, st));
    E2E_CU(cuMemcpyDtoHAsync(back, scratch, sizeof(back), st));
    E2E_CU(cuMemcpyDtoHAsync(out, d, sizeof(out), st));
    E2E_CU(cuMemFreeAsync(scratch, st));
    E2E_CU(cuStreamEndCapture(st, &g));
    /* the graph memory is charged from instantiation to the executable graph's end */
    size_t f0 = free_now();
    CUgraphExec ge;
    E2E_CU(cuGraphInstantiateWithFlags(&ge, g, 0));
    E2E_CHECK(f0 - free_now() >= N * 4);
    E2E_CU(cuGraphDestroy(g)); /* the executable graph keeps what it needs */
    for (uint32_t r = 0; r < 6; r++) {
        for (int i = 0; i < N; i++)
            in[i] = (uint32_t)i * 7u + r * 1000003u;
        E2E_CU(cuGraphLaunch(ge, st));
        if (r % 2) /* launched again before the previous launch has run */
            E2E_CU(cuGraphLaunch(ge, st));
        E2E_CU(cuStreamSynchronize(st));
        for (int i = 0; i < N; i++) {
            E2E_CHECK(back[i] == in[i]);
            E2E_CHECK(out[i] == (i < 16 ? 0x77u : in[i]));
        }
    }
    E2E_CU(cuGraphExecDestroy(ge));
    E2E_CHECK(free_now() == f0);
    /* the graph memory is gone with its executable graph: the address is not ours */
    E2E_CHECK_CU(cuMemcpyHtoD(scratch, in, 4), CUDA_ERROR_INVALID_VALUE, "freed graph memory");
    E2E_CU(cuMemFree(d));
    E2E_CU(cuStreamDestroy(st));
    return 0;
}

static void each_launch_reads_the_host_inputs_anew(void **state)
{
    (void)state;
    assert_int_equal(e2e_run(c_relaunch, NULL, 60), 0);
}

/* ---- compute limit -------------------------------------------------------------------------- */

#define KERNEL_NS (20ull * 1000 * 1000)
#define LAUNCHES 12

static int c_throttled(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    CUfunction f;
    CUdeviceptr done;
    if (e2e_spin_kernel(timer_ptx, &f, &done))
        return 1;
    static uint32_t word;
    unsigned long long ns = KERNEL_NS;
    void *p[] = {&ns, &done};
    CUstream st;
    E2E_CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    CUdeviceptr d;
    E2E_CU(cuMemAlloc(&d, 4));
    CUgraph g;
    CUgraphExec ge;
    /* the kernel is in the second segment, after a host step */
    E2E_CU(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_GLOBAL));
    E2E_CU(cuMemsetD32Async(d, 0, 1, st));
    E2E_CU(cuMemcpyHtoDAsync(d, &word, 4, st));
    E2E_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, st, p, NULL));
    E2E_CU(cuStreamEndCapture(st, &g));
    E2E_CU(cuGraphInstantiateWithFlags(&ge, g, 0));
    double t0 = e2e_now_s();
    for (int i = 0; i < LAUNCHES; i++)
        E2E_CU(cuGraphLaunch(ge, st));
    E2E_CU(cuStreamSynchronize(st));
    double secs = e2e_now_s() - t0;
    unsigned long long ran = 0;
    E2E_CU(cuMemcpyDtoH(&ran, done, 8));
    E2E_CHECK(ran == LAUNCHES);
    double share = LAUNCHES * (double)KERNEL_NS / 1e9 / secs;
    printf("%d launches of a 20 ms kernel after a host step at 10 %%: %.2f s, share %.1f %%\n",
           LAUNCHES, secs, share * 100.0);
    E2E_CHECK(share < 0.35); /* unthrottled it is near 100 % */
    E2E_CU(cuGraphExecDestroy(ge));
    E2E_CU(cuGraphDestroy(g));
    return 0;
}

static void a_compute_limit_charges_every_segment_launch(void **state)
{
    (void)state;
    struct e2e_worker w;
    e2e_start(&w, 0, (const char *[]){"--compute-percent", "10", NULL});
    assert_int_equal(e2e_run(c_throttled, NULL, 120), 0);
    e2e_stop(&w);
}

static int setup(void **state)
{
    (void)state;
    e2e_start(&W, 0, (const char *[]){"--vram-limit", "64Mi", NULL});
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    e2e_stop(&W);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2 || !(timer_ptx = e2e_slurp(argv[1]))) {
        fprintf(stderr, "usage: test_capture TIMER.ptx\n");
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_sync_in_a_capture_invalidates_it),
        cmocka_unit_test(a_host_function_runs_between_the_work_before_and_after_it),
        cmocka_unit_test(each_launch_reads_the_host_inputs_anew),
    };
    const struct CMUnitTest limited[] = {
        cmocka_unit_test(a_compute_limit_charges_every_segment_launch),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    rc |= cmocka_run_group_tests(limited, NULL, NULL);
    free(timer_ptx);
    return rc;
}
