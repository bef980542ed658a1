/* SPDX-License-Identifier: Apache-2.0
 *
 * Stream and event semantics of the simulated driver, observed through host functions that
 * block until released (gates) and record the order in which queued work ran: per-stream
 * order, legacy default stream barriers, non-blocking streams, cuStreamWaitEvent (also
 * across devices), priorities, per-thread default streams, NOT_READY queries, event
 * elapsed time, and async copies and memsets in stream order.
 */
#include "gate.h"
#include "simtest.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

static CUcontext ctx, ctx1;

/* ---- An order log ---------------------------------------------------------------------- */

static char order[64];
static _Atomic int norder;

static void reset_order(void)
{
    memset(order, 0, sizeof(order));
    atomic_store(&norder, 0);
}

/* Host functions that append their tag to ORDER. */
static char tags[128];
static void CUDA_CB note(void *arg)
{
    order[atomic_fetch_add(&norder, 1)] = *(char *)arg;
}
#define NOTE(stream, ch) CU_OK(cuLaunchHostFunc((stream), note, &tags[(unsigned char)(ch)]))

/* ---- Tests ----------------------------------------------------------------------------- */

static void work_on_one_stream_runs_in_order_and_queries_say_not_ready(void **state)
{
    CUstream s;
    CUevent e;
    struct gate g;
    gate_init(&g);
    reset_order();
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuEventCreate(&e, 0));
    CU_OK(cuLaunchHostFunc(s, gate_wait, &g));
    NOTE(s, 'a');
    CU_OK(cuEventRecord(e, s));
    NOTE(s, 'b');
    NOTE(s, 'c');
    sleep_ms(20);
    CU_IS(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
    CU_IS(CUDA_ERROR_NOT_READY, cuEventQuery(e));
    assert_int_equal(atomic_load(&norder), 0);
    gate_open(&g);
    CU_OK(cuEventSynchronize(e));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamQuery(s));
    CU_OK(cuEventQuery(e));
    assert_string_equal(order, "abc");
    CU_OK(cuEventDestroy(e));
    CU_OK(cuStreamDestroy(s));
}

/* Host functions may be serialised on one thread (CUDA allows it), so while a gate blocks,
 * progress elsewhere is observed through device work (memsets), not other host functions. */
static unsigned read_u32(CUdeviceptr p)
{
    unsigned v = 0;
    CU_OK(cuMemcpyDtoH(&v, p, 4));
    return v;
}

static void legacy_stream_waits_for_blocking_streams_but_not_non_blocking_ones(void **state)
{
    CUstream blocking, nonblocking;
    struct gate g1, g2;
    gate_init(&g1);
    gate_init(&g2);
    reset_order();
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 16));
    CU_OK(cuMemsetD32(p, 0, 4));
    CU_OK(cuStreamCreate(&blocking, 0));
    CU_OK(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
    CU_OK(cuLaunchHostFunc(blocking, gate_wait, &g1));
    NOTE(blocking, 'B');
    NOTE(NULL, 'L'); /* must wait for the blocking stream's earlier work */
    CU_OK(cuMemsetD32Async(p, 7, 1, NULL));
    CU_OK(cuMemsetD32Async(p + 4, 8, 1, nonblocking));
    NOTE(blocking, 'b');                     /* must wait for the legacy stream's earlier work */
    CU_OK(cuStreamSynchronize(nonblocking)); /* runs although the rest is gated */
    CU_IS(CUDA_ERROR_NOT_READY, cuStreamQuery(NULL));
    CU_IS(CUDA_ERROR_NOT_READY, cuStreamQuery(blocking));
    unsigned v[4];
    CU_OK(cuMemcpyDtoHAsync(v, p, 16, nonblocking));
    CU_OK(cuStreamSynchronize(nonblocking));
    assert_int_equal(v[0], 0); /* the legacy-stream memset has not run */
    assert_int_equal(v[1], 8);
    assert_int_equal(atomic_load(&norder), 0);
    gate_open(&g1);
    CU_OK(cuCtxSynchronize());
    assert_string_equal(order, "BLb");
    assert_int_equal(read_u32(p), 7);
    /* A synchronous copy is a legacy-stream op too: it waits for gated blocking work. */
    CU_OK(cuLaunchHostFunc(blocking, gate_wait, &g2));
    CU_OK(cuMemsetD32Async(p, 2, 1, blocking));
    pthread_t opener;
    pthread_create(&opener, NULL, gate_open_thread, &g2);
    assert_int_equal(read_u32(p), 2); /* ordered after the async memset */
    pthread_join(opener, NULL);
    CU_OK(cuMemFree(p));
    CU_OK(cuStreamDestroy(blocking));
    CU_OK(cuStreamDestroy(nonblocking));
}

static void stream_wait_event_orders_work_across_streams_and_devices(void **state)
{
    CUstream s1, s2, s3;
    CUevent e, never;
    struct gate g;
    gate_init(&g);
    CUdeviceptr p, q;
    CU_OK(cuMemAlloc(&p, 8));
    CU_OK(cuMemsetD32(p, 0, 2));
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventCreate(&never, 0));
    CU_OK(cuLaunchHostFunc(s1, gate_wait, &g));
    CU_OK(cuMemsetD32Async(p, 1, 1, s1));
    CU_OK(cuEventRecord(e, s1));
    CU_OK(cuStreamWaitEvent(s2, e, 0));
    CU_OK(cuStreamWaitEvent(s2, never, 0)); /* never recorded: no wait */
    CU_OK(cuMemsetD32Async(p + 4, 2, 1, s2));
    /* A stream of the other device waits on the same event. */
    CU_OK(cuCtxPushCurrent(ctx1));
    CU_OK(cuMemAlloc(&q, 4));
    CU_OK(cuMemsetD32(q, 0, 1));
    CU_OK(cuStreamCreate(&s3, 0));
    CU_OK(cuStreamWaitEvent(s3, e, 0));
    CU_OK(cuMemsetD32Async(q, 3, 1, s3));
    sleep_ms(20);
    CU_IS(CUDA_ERROR_NOT_READY, cuStreamQuery(s3));
    CU_OK(cuCtxPopCurrent(NULL));
    CU_IS(CUDA_ERROR_NOT_READY, cuStreamQuery(s2));
    CU_IS(CUDA_ERROR_NOT_READY, cuEventQuery(e));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuStreamWaitEvent(s2, e, 0x10));
    unsigned v[2];
    CU_OK(cuMemcpyDtoH(v, p, 8)); /* legacy stream: independent of non-blocking s1, s2 */
    assert_int_equal(v[0], 0);
    assert_int_equal(v[1], 0);
    gate_open(&g);
    CU_OK(cuStreamSynchronize(s2));
    CU_OK(cuMemcpyDtoH(v, p, 8));
    assert_int_equal(v[0], 1);
    assert_int_equal(v[1], 2);
    CU_OK(cuCtxPushCurrent(ctx1));
    CU_OK(cuStreamSynchronize(s3));
    assert_int_equal(read_u32(q), 3);
    CU_OK(cuMemFree(q));
    CU_OK(cuStreamDestroy(s3));
    CU_OK(cuCtxPopCurrent(NULL));
    CU_OK(cuMemFree(p));
    CU_OK(cuEventDestroy(e));
    CU_OK(cuEventDestroy(never));
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuStreamDestroy(s2));
}

static void higher_priority_streams_run_first(void **state)
{
    int least, greatest;
    CU_OK(cuCtxGetStreamPriorityRange(&least, &greatest));
    assert_int_equal(least, 0);
    assert_true(greatest < least);
    CUstream lo, hi, busy;
    CU_OK(cuStreamCreateWithPriority(&lo, CU_STREAM_NON_BLOCKING, least));
    CU_OK(cuStreamCreateWithPriority(&hi, CU_STREAM_NON_BLOCKING, greatest));
    CU_OK(cuStreamCreate(&busy, CU_STREAM_NON_BLOCKING));
    int prio;
    CU_OK(cuStreamGetPriority(hi, &prio));
    assert_int_equal(prio, greatest);
    CU_OK(cuStreamCreateWithPriority(&lo, CU_STREAM_NON_BLOCKING, least + 100)); /* clamped */
    CU_OK(cuStreamGetPriority(lo, &prio));
    assert_int_equal(prio, least);
    /* Occupy the device with a large memset, then queue low- before high-priority work. */
    enum { BIG = 128 << 20 };
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, BIG));
    CUevent el, eh;
    CU_OK(cuEventCreate(&el, 0));
    CU_OK(cuEventCreate(&eh, 0));
    CU_OK(cuMemsetD8Async(p, 1, BIG, busy));
    CU_OK(cuEventRecord(el, lo));
    CU_OK(cuEventRecord(eh, hi));
    CU_OK(cuCtxSynchronize());
    float ms;
    CU_OK(cuEventElapsedTime(&ms, eh, el));
    assert_true(ms > 0); /* the high-priority record ran first */
    CU_OK(cuMemFree(p));
    CU_OK(cuEventDestroy(el));
    CU_OK(cuEventDestroy(eh));
    CU_OK(cuStreamDestroy(lo));
    CU_OK(cuStreamDestroy(hi));
    CU_OK(cuStreamDestroy(busy));
}

static void CUDA_CB callback(CUstream s, CUresult status, void *arg)
{
    CUstream *seen = arg;
    *seen = status == CUDA_SUCCESS ? s : NULL;
}

static void callbacks_get_their_stream_and_status(void **state)
{
    CUstream s, seen = NULL;
    CU_OK(cuStreamCreate(&s, 0));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuStreamAddCallback(s, callback, &seen, 1));
    CU_OK(cuStreamAddCallback(s, callback, &seen, 0));
    CU_OK(cuStreamSynchronize(s));
    assert_ptr_equal(seen, s);
    CU_OK(cuStreamDestroy(s));
}

static void CUDA_CB sleep_50ms(void *arg)
{
    sleep_ms(50);
}

static void elapsed_time_measures_the_work_between_two_events(void **state)
{
    CUstream s;
    CUevent a, b, untimed, unrecorded;
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuEventCreate(&a, 0));
    CU_OK(cuEventCreate(&b, CU_EVENT_BLOCKING_SYNC));
    CU_OK(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventCreate(&unrecorded, 0));
    CU_OK(cuEventRecord(a, s));
    CU_OK(cuLaunchHostFunc(s, sleep_50ms, NULL));
    CU_OK(cuEventRecord(b, s));
    CU_OK(cuEventRecord(untimed, s));
    float ms = -1;
    CUresult early = cuEventElapsedTime(&ms, a, b);
    assert_true(early == CUDA_ERROR_NOT_READY || early == CUDA_SUCCESS);
    CU_OK(cuEventSynchronize(b));
    CU_OK(cuEventElapsedTime(&ms, a, b));
    assert_true(ms >= 49.0f && ms < 1000.0f);
    float back;
    CU_OK(cuEventElapsedTime(&back, b, a));
    assert_true(back < 0 && back == -ms);
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime(&ms, a, untimed));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime(&ms, a, unrecorded));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuEventElapsedTime(NULL, a, b));
    /* Never recorded events are complete. */
    CU_OK(cuEventQuery(unrecorded));
    CU_OK(cuEventSynchronize(unrecorded));
    CU_OK(cuEventDestroy(a));
    CU_OK(cuEventDestroy(b));
    CU_OK(cuEventDestroy(untimed));
    CU_OK(cuEventDestroy(unrecorded));
    CU_OK(cuStreamDestroy(s));
}

static void destroying_busy_streams_and_events_lets_work_finish(void **state)
{
    CUstream s;
    CUevent e;
    struct gate g;
    gate_init(&g);
    reset_order();
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuEventCreate(&e, 0));
    CU_OK(cuLaunchHostFunc(s, gate_wait, &g));
    CU_OK(cuEventRecord(e, s));
    NOTE(s, 'x');
    CU_OK(cuEventDestroy(e));
    CU_OK(cuStreamDestroy(s)); /* returns at once; the work still runs */
    gate_open(&g);
    CU_OK(cuCtxSynchronize());
    assert_string_equal(order, "x");
}

static struct gate ptds_gate;

/* The per-thread-default-stream entry points, resolved the way a program compiled with
 * --default-stream per-thread (or the CUDA runtime) gets them. */
static PFN_cuMemsetD32Async_v3020 memset32_async_pt;
static PFN_cuStreamSynchronize_v2000 sync_pt;
static PFN_cuStreamQuery_v2000 query_pt;
static PFN_cuMemcpyDtoH_v3020 dtoh_pt;
static PFN_cuLaunchHostFunc_v10000 host_pt;
static PFN_cuStreamGetId_v12000 getid_pt;

static void resolve_per_thread(void)
{
    const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    CUdriverProcAddressQueryResult st;
    CU_OK(cuGetProcAddress("cuMemsetD32Async", (void **)&memset32_async_pt, 13000, pt, &st));
    CU_OK(cuGetProcAddress("cuStreamSynchronize", (void **)&sync_pt, 13000, pt, &st));
    CU_OK(cuGetProcAddress("cuStreamQuery", (void **)&query_pt, 13000, pt, &st));
    CU_OK(cuGetProcAddress("cuMemcpyDtoH", (void **)&dtoh_pt, 13000, pt, &st));
    CU_OK(cuGetProcAddress("cuLaunchHostFunc", (void **)&host_pt, 13000, pt, &st));
    CU_OK(cuGetProcAddress("cuStreamGetId", (void **)&getid_pt, 13000, pt, &st));
    assert_ptr_not_equal(sync_pt, cuStreamSynchronize);
}

static CUdeviceptr ptds_buf;

/* cuMemFree would synchronise the whole context (as on hardware), gated stream included, so
 * the buffer is allocated and freed by the main thread. */
static void *other_thread_ptds(void *arg)
{
    _Atomic int *done = arg;
    unsigned v = 0;
    int ok = cuCtxSetCurrent(ctx) == CUDA_SUCCESS &&
             memset32_async_pt(ptds_buf, 9, 1, NULL) == CUDA_SUCCESS && /* own stream */
             sync_pt(NULL) == CUDA_SUCCESS && dtoh_pt(&v, ptds_buf, 4) == CUDA_SUCCESS;
    atomic_store(done, ok && v == 9 ? 1 : -1);
    return NULL;
}

static void per_thread_default_streams_are_independent(void **state)
{
    resolve_per_thread();
    gate_init(&ptds_gate);
    CU_OK(cuMemAlloc(&ptds_buf, 4));
    /* Block this thread's per-thread stream; another thread's is unaffected. */
    CU_OK(host_pt(NULL, gate_wait, &ptds_gate));
    CU_IS(CUDA_ERROR_NOT_READY, cuStreamQuery(CU_STREAM_PER_THREAD));
    CU_IS(CUDA_ERROR_NOT_READY, query_pt(NULL));
    CU_OK(cuStreamQuery(NULL)); /* the legacy stream is idle */
    _Atomic int done = 0;
    pthread_t t;
    pthread_create(&t, NULL, other_thread_ptds, &done);
    pthread_join(t, NULL);
    assert_int_equal(atomic_load(&done), 1);
    gate_open(&ptds_gate);
    CU_OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    unsigned long long id1, id2;
    CU_OK(cuStreamGetId(CU_STREAM_PER_THREAD, &id1));
    CU_OK(getid_pt(NULL, &id2));
    assert_int_equal(id1, id2);
    CU_OK(cuStreamGetId(NULL, &id2));
    assert_int_not_equal(id1, id2);
    CU_OK(cuMemFree(ptds_buf));
}

static void stream_ordered_free_happens_in_stream_order(void **state)
{
    CUstream s;
    struct gate g;
    gate_init(&g);
    size_t f0, f1, t;
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuMemGetInfo(&f0, &t));
    CUdeviceptr p;
    CU_OK(cuMemAllocAsync(&p, 1 << 20, s));
    CU_OK(cuMemsetD8Async(p, 1, 1 << 20, s));
    CU_OK(cuLaunchHostFunc(s, gate_wait, &g));
    CU_OK(cuMemFreeAsync(p, s));
    CU_OK(cuMemGetInfo(&f1, &t));
    assert_int_equal(f0 - f1, 1 << 20); /* not freed yet: the stream is gated */
    gate_open(&g);
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemGetInfo(&f1, &t));
    assert_int_equal(f1, f0);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(p, s));
    CU_OK(cuStreamDestroy(s));
}

static void async_copies_and_memsets_wait_their_turn(void **state)
{
    CUstream s, nb, other;
    CUevent e;
    struct gate g;
    gate_init(&g);
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&e, 0));
    CUdeviceptr p;
    unsigned short *host;
    CU_OK(cuMemAlloc(&p, 64));
    CU_OK(cuMemAllocHost((void **)&host, 64)); /* page-locked: the copy is truly async */
    memset(host, 0x11, 64);
    CU_OK(cuLaunchHostFunc(s, gate_wait, &g));
    CU_OK(cuMemsetD16Async(p, 0xBEEF, 32, s));
    CU_OK(cuMemcpyAsync((CUdeviceptr)host, p, 64, s)); /* unified: a host destination */
    CU_OK(cuEventRecordWithFlags(e, s, CU_EVENT_RECORD_DEFAULT));
    sleep_ms(20);
    CU_IS(CUDA_ERROR_NOT_READY, cuEventQuery(e));
    assert_int_equal(host[31], 0x1111);
    gate_open(&g);
    CU_OK(cuEventSynchronize(e));
    for (int i = 0; i < 32; i++)
        assert_int_equal(host[i], 0xBEEF);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemsetD16Async(p + 1, 0, 2, s)); /* misaligned */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemsetD16Async(p, 0, 33, s));    /* past the end */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpyAsync(p + 60, (CUdeviceptr)host, 8, s));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuEventRecordWithFlags(e, s, 0x80));
    /* what a stream says about itself */
    unsigned flags;
    CUdevice d;
    CU_OK(cuStreamGetFlags(s, &flags));
    assert_int_equal(flags, CU_STREAM_DEFAULT);
    CU_OK(cuStreamGetFlags(nb, &flags));
    assert_int_equal(flags, CU_STREAM_NON_BLOCKING);
    CU_OK(cuStreamGetDevice(nb, &d));
    assert_int_equal(d, 0);
    CU_OK(cuCtxPushCurrent(ctx1));
    CU_OK(cuStreamCreate(&other, 0));
    CU_OK(cuStreamGetDevice(other, &d));
    assert_int_equal(d, 1);
    CU_OK(cuStreamGetDevice(NULL, &d)); /* the current context's legacy stream */
    assert_int_equal(d, 1);
    CU_OK(cuStreamDestroy(other));
    CU_OK(cuCtxPopCurrent(NULL));
    CU_OK(cuMemFreeHost(host));
    CU_OK(cuMemFree(p));
    CU_OK(cuEventDestroy(e));
    CU_OK(cuStreamDestroy(nb));
    CU_OK(cuStreamDestroy(s));
}

/* Device buffer D (SIZE bytes) holds WANT's N bytes at AT and FILL everywhere else. */
static void expect_copy(CUdeviceptr d, size_t size, size_t at, const uint8_t *want, size_t n,
                        uint8_t fill, size_t k)
{
    uint8_t *all = malloc(size);
    assert_non_null(all);
    CU_OK(cuMemcpyDtoH(all, d, size));
    for (size_t i = 0; i < size; i++) {
        uint8_t w = i >= at && i < at + n ? want[i - at] : fill;
        if (all[i] != w)
            fail_msg("case %zu: byte %zu of %#llx is %#x, want %#x", k, i, (unsigned long long)d,
                     all[i], w);
    }
    free(all);
}

/* Large copies into device memory take the copy engine's streaming path (exec.c dma_copy):
 * every byte lands, at any alignment of either end, and nothing past the range is touched. */
static void large_copies_into_device_memory_are_exact_at_any_alignment(void **state)
{
    (void)state;
    enum { N = 1 << 20, PAD = 64 };
    uint8_t *src = malloc(N + PAD);
    assert_non_null(src);
    for (size_t i = 0; i < N + PAD; i++)
        src[i] = (uint8_t)(i * 131 + 7);
    CUdeviceptr d, d2;
    CU_OK(cuMemAlloc(&d, N + 2 * PAD));
    CU_OK(cuMemAlloc(&d2, N + 2 * PAD));
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    static const size_t offs[][3] = {
        {0, 0, N}, {3, 0, N - 5}, {0, 9, N - 1}, {17, 33, N - 63}, {1, 1, 300 * 1024 + 3}};
    for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
        size_t so = offs[k][0], dof = offs[k][1], n = offs[k][2];
        CU_OK(cuMemsetD8(d, 0xA5, N + 2 * PAD));
        CU_OK(cuMemsetD8(d2, 0x5A, N + 2 * PAD));
        if (k % 2)
            CU_OK(cuMemcpyHtoD(d + PAD + dof, src + so, n));
        else
            CU_OK(cuMemcpyHtoDAsync(d + PAD + dof, src + so, n, s));
        CU_OK(cuMemcpyDtoDAsync(d2 + PAD + so, d + PAD + dof, n, s)); /* device to device */
        CU_OK(cuStreamSynchronize(s));
        expect_copy(d, N + 2 * PAD, PAD + dof, src + so, n, 0xA5, k);
        expect_copy(d2, N + 2 * PAD, PAD + so, src + so, n, 0x5A, k);
    }
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(d));
    CU_OK(cuMemFree(d2));
    free(src);
}

static int setup(void **state)
{
    for (int i = 0; i < 128; i++)
        tags[i] = (char)i;
    CU_OK(cuInit(0));
    CU_OK(cuCtxCreate(&ctx1, NULL, 0, 1));
    CU_OK(cuCtxPopCurrent(NULL));
    CU_OK(cuCtxCreate(&ctx, NULL, 0, 0));
    return 0;
}

int main(void)
{
    simtest_env("L4,T4");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(work_on_one_stream_runs_in_order_and_queries_say_not_ready),
        cmocka_unit_test(legacy_stream_waits_for_blocking_streams_but_not_non_blocking_ones),
        cmocka_unit_test(stream_wait_event_orders_work_across_streams_and_devices),
        cmocka_unit_test(higher_priority_streams_run_first),
        cmocka_unit_test(callbacks_get_their_stream_and_status),
        cmocka_unit_test(elapsed_time_measures_the_work_between_two_events),
        cmocka_unit_test(destroying_busy_streams_and_events_lets_work_finish),
        cmocka_unit_test(per_thread_default_streams_are_independent),
        cmocka_unit_test(stream_ordered_free_happens_in_stream_order),
        cmocka_unit_test(async_copies_and_memsets_wait_their_turn),
        cmocka_unit_test(large_copies_into_device_memory_are_exact_at_any_alignment),
    };
    int rc = cmocka_run_group_tests(tests, setup, NULL);
    simtest_cleanup();
    return rc;
}
