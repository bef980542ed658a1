/* SPDX-License-Identifier: Apache-2.0
 *
 * Remote GPU end to end: this test program uses libtf_client (it is linked against it, as an
 * application is against libcuda.so.1), talking to a real tf-worker that runs the simulated
 * GPU. Each scenario runs in a forked child with its own connection. Covers device queries,
 * memory round trips, streams and events, hard VRAM limits, isolation between clients,
 * deferred errors, hostile frames, cleanup on disconnect and the worker dying or hanging.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>

#include "e2e.h"
#include "rawconn.h"
#include "remote/calls.h"
#include "remote/codec.h"

#define MiB (1024u * 1024u)

static struct e2e_worker W;

/* A CALL request for the call at index IDX of calls.def in context CTX: its size in P. */
static size_t call_req(uint8_t *p, size_t idx, uint64_t ctx, const uint64_t *args, unsigned n)
{
    struct tf_msg_call_req m = {.call = tf_calls[idx].code, .nargs = n, .ctx = ctx};
    tf_msg_call_req_put(p, &m);
    for (unsigned i = 0; i < n; i++)
        tf__put_8(p + TF_PROTO_SIZE_call_req + 8 * i, args[i]);
    return TF_PROTO_SIZE_call_req + 8 * (size_t)n;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* cuInit + primary context of device 0 made current. */
static int open_primary(CUcontext *ctx)
{
    E2E_CU(cuInit(0));
    CUdevice dev;
    E2E_CU(cuDeviceGet(&dev, 0));
    E2E_CU(cuDevicePrimaryCtxRetain(ctx, dev));
    E2E_CU(cuCtxSetCurrent(*ctx));
    return 0;
}

/* ---- scenarios (run in children) ------------------------------------------------------------ */

static int c_device_queries(void *arg)
{
    (void)arg;
    E2E_CHECK_CU(cuDeviceGetCount(&(int){0}), CUDA_ERROR_NOT_INITIALIZED, "count before init");
    E2E_CU(cuInit(0));
    int n = 0, v = 0, major = 0;
    E2E_CU(cuDeviceGetCount(&n));
    E2E_CHECK(n == 1);
    char name[128];
    E2E_CU(cuDeviceGetName(name, sizeof(name), 0));
    E2E_CHECK(strstr(name, "A100") != NULL);
    size_t total = 0;
    E2E_CU(cuDeviceTotalMem(&total, 0));
    E2E_CHECK(total == 256u * MiB); /* the worker's --vram-limit, not the 4 GiB device */
    E2E_CU(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
    E2E_CHECK(major == 8);
    E2E_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
    E2E_CHECK(v > 0);
    /* features the remote path does not serve are absent, so the runtime never offers them;
     * pools are served, exported pool memory is not */
    E2E_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
    E2E_CHECK(v == 1);
    E2E_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, 0));
    E2E_CHECK(v == 0);
    E2E_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0));
    E2E_CHECK(v == 0);
    E2E_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0));
    E2E_CHECK(v == 1);
    E2E_CHECK_CU(cuDeviceGetAttribute(&v, (CUdevice_attribute)100000, 0), CUDA_ERROR_INVALID_VALUE,
                 "bad attribute");
    E2E_CHECK_CU(cuDeviceGetName(name, sizeof(name), 1), CUDA_ERROR_INVALID_DEVICE, "device 1");
    CUuuid u;
    E2E_CU(cuDeviceGetUuid(&u, 0));
    int nonzero = 0;
    for (int i = 0; i < 16; i++)
        nonzero |= u.bytes[i];
    E2E_CHECK(nonzero);
    int drv = 0;
    E2E_CU(cuDriverGetVersion(&drv));
    E2E_CHECK(drv >= 12000);
    const char *s = NULL;
    E2E_CU(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
    E2E_CHECK(strcmp(s, "CUDA_ERROR_OUT_OF_MEMORY") == 0);
    E2E_CU(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s));
    E2E_CHECK(strcmp(s, "invalid argument") == 0);
    return 0;
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (uint8_t)(seed >> 24);
    }
}

static int c_memory_round_trip(void *arg)
{
    (void)arg;
    CUcontext ctx;
    if (open_primary(&ctx))
        return 1;
    const size_t n = 3 * MiB + 17; /* several chunks and a ragged end */
    uint8_t *a = malloc(n), *b = malloc(n);
    fill(a, n, 42);
    CUdeviceptr d, e;
    E2E_CU(cuMemAlloc(&d, n));
    E2E_CU(cuMemAlloc(&e, n));
    E2E_CU(cuMemcpyHtoD(d, a, n));
    E2E_CU(cuMemcpyDtoD(e, d, n));
    memset(b, 0, n);
    E2E_CU(cuMemcpyDtoH(b, e, n));
    E2E_CHECK(memcmp(a, b, n) == 0);
    /* Memsets of each width, synchronous and on a stream. */
    E2E_CU(cuMemsetD8(d, 0xab, 1000));
    E2E_CU(cuMemsetD16(d + 1000, 0x1234, 500));
    CUstream s;
    E2E_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    E2E_CU(cuMemsetD32Async(d + 2000, 0xdeadbeef, 250, s));
    E2E_CU(cuStreamSynchronize(s));
    E2E_CU(cuMemcpyDtoH(b, d, 3000));
    for (int i = 0; i < 1000; i++)
        E2E_CHECK(b[i] == 0xab);
    for (int i = 0; i < 500; i++)
        E2E_CHECK(b[1000 + 2 * i] == 0x34 && b[1001 + 2 * i] == 0x12);
    for (int i = 0; i < 250; i++) {
        uint32_t w;
        memcpy(&w, b + 2000 + 4 * i, 4);
        E2E_CHECK(w == 0xdeadbeef);
    }
    /* Async copies on a stream land after the stream is synchronised. */
    fill(a, n, 7);
    E2E_CU(cuMemcpyHtoDAsync(e, a, n, s));
    memset(b, 0, n);
    E2E_CU(cuMemcpyDtoHAsync(b, e, n, s));
    E2E_CU(cuStreamSynchronize(s));
    E2E_CHECK(memcmp(a, b, n) == 0);
    /* Local checks: out of range, unknown pointers. */
    E2E_CHECK_CU(cuMemcpyHtoD(d + n - 4, a, 8), CUDA_ERROR_INVALID_VALUE, "past the end");
    E2E_CHECK_CU(cuMemFree(d + 1), CUDA_ERROR_INVALID_VALUE, "free inside");
    CUdeviceptr base;
    size_t sz;
    E2E_CU(cuMemGetAddressRange(&base, &sz, d + 100));
    E2E_CHECK(base == d && sz == n);
    unsigned mt = 0;
    E2E_CU(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 5));
    E2E_CHECK(mt == CU_MEMORYTYPE_DEVICE);
    CUcontext pc = NULL;
    E2E_CU(cuPointerGetAttribute(&pc, CU_POINTER_ATTRIBUTE_CONTEXT, d));
    E2E_CHECK(pc == ctx);
    size_t fr = 0, tot = 0;
    E2E_CU(cuMemGetInfo(&fr, &tot));
    E2E_CHECK(tot == 256u * MiB && fr <= tot - 2 * n);
    /* Host memory stays here. */
    void *h;
    E2E_CU(cuMemAllocHost(&h, 4096));
    E2E_CU(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)h));
    E2E_CHECK(mt == CU_MEMORYTYPE_HOST);
    E2E_CU(cuMemFreeHost(h));
    E2E_CU(cuStreamDestroy(s));
    E2E_CU(cuMemFree(d));
    E2E_CU(cuMemFree(e));
    E2E_CHECK_CU(cuMemFree(d), CUDA_ERROR_INVALID_VALUE, "double free");
    E2E_CU(cuDevicePrimaryCtxRelease(0));
    free(a);
    free(b);
    return 0;
}

/* A 32 MiB async DtoH and no call for a while: the worker's DATA exceeds the socket buffers,
 * so the client must drain it (pump thread, or the next call when the pump is off). */
static int c_async_dtoh_drained(void *arg)
{
    if (!arg)
        setenv("TF_REMOTE_FLUSH_US", "0", 1);
    CUcontext ctx;
    if (open_primary(&ctx))
        return 1;
    const size_t n = 32 * MiB;
    uint8_t *a = malloc(n), *b = calloc(1, n);
    fill(a, n, 11);
    CUdeviceptr d;
    E2E_CU(cuMemAlloc(&d, n));
    E2E_CU(cuMemcpyHtoD(d, a, n));
    CUstream s;
    E2E_CU(cuStreamCreate(&s, 0));
    E2E_CU(cuMemcpyDtoHAsync(b, d, n, s));
    struct timespec pause = {0, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
    E2E_CU(cuMemsetD8Async(d, 0, n, s)); /* more work queued behind the copy */
    E2E_CU(cuStreamSynchronize(s));
    E2E_CHECK(memcmp(a, b, n) == 0);
    free(a);
    free(b);
    return 0;
}

static int c_streams_and_events(void *arg)
{
    (void)arg;
    CUcontext ctx;
    if (open_primary(&ctx))
        return 1;
    CUstream s1, s2;
    CUevent e0, e1;
    E2E_CU(cuStreamCreate(&s1, 0));
    E2E_CU(cuStreamCreateWithPriority(&s2, CU_STREAM_NON_BLOCKING, -1));
    unsigned fl = 9;
    int prio = 9;
    E2E_CU(cuStreamGetFlags(s2, &fl));
    E2E_CU(cuStreamGetPriority(s2, &prio));
    E2E_CHECK(fl == CU_STREAM_NON_BLOCKING && prio == -1);
    CUcontext sc;
    E2E_CU(cuStreamGetCtx(s1, &sc));
    E2E_CHECK(sc == ctx);
    E2E_CU(cuEventCreate(&e0, CU_EVENT_DEFAULT));
    E2E_CU(cuEventCreate(&e1, CU_EVENT_DEFAULT));
    CUdeviceptr d;
    const size_t n = 1 * MiB;
    E2E_CU(cuMemAlloc(&d, n));
    uint8_t *buf = malloc(n);
    fill(buf, n, 3);
    E2E_CU(cuEventRecord(e0, s1));
    E2E_CU(cuMemcpyHtoDAsync(d, buf, n, s1));
    E2E_CU(cuEventRecord(e1, s1));
    E2E_CU(cuStreamWaitEvent(s2, e1, 0));
    E2E_CU(cuMemsetD8Async(d, 0x5a, 16, s2));
    E2E_CU(cuEventSynchronize(e1));
    E2E_CU(cuEventQuery(e1));
    float ms = -1;
    E2E_CU(cuEventElapsedTime(&ms, e0, e1));
    E2E_CHECK(ms >= 0);
    E2E_CU(cuStreamSynchronize(s2));
    E2E_CU(cuStreamQuery(s2));
    uint8_t head[32];
    E2E_CU(cuMemcpyDtoH(head, d, sizeof(head)));
    for (int i = 0; i < 16; i++)
        E2E_CHECK(head[i] == 0x5a);
    E2E_CHECK(memcmp(head + 16, buf + 16, 16) == 0);
    E2E_CU(cuEventDestroy(e0));
    E2E_CU(cuEventDestroy(e1));
    E2E_CHECK_CU(cuEventQuery(e1), CUDA_ERROR_INVALID_HANDLE, "destroyed event");
    E2E_CU(cuStreamDestroy(s1));
    E2E_CU(cuStreamDestroy(s2));
    E2E_CHECK_CU(cuStreamSynchronize(s1), CUDA_ERROR_INVALID_HANDLE, "destroyed stream");
    E2E_CU(cuCtxSynchronize());
    free(buf);
    return 0;
}

static int c_contexts(void *arg)
{
    (void)arg;
    E2E_CU(cuInit(0));
    CUcontext a, b, cur;
    E2E_CU(cuCtxCreate(&a, NULL, 0, 0));
    E2E_CU(cuCtxGetCurrent(&cur));
    E2E_CHECK(cur == a);
    E2E_CU(cuCtxCreate(&b, NULL, 0, 0));
    E2E_CU(cuCtxGetCurrent(&cur));
    E2E_CHECK(cur == b);
    CUdeviceptr p;
    E2E_CU(cuMemAlloc(&p, 4096));
    E2E_CU(cuCtxPopCurrent(&cur));
    E2E_CHECK(cur == b);
    E2E_CU(cuCtxGetCurrent(&cur));
    E2E_CHECK(cur == a);
    CUdevice dev = -1;
    E2E_CU(cuCtxGetDevice(&dev));
    E2E_CHECK(dev == 0);
    E2E_CU(cuCtxPushCurrent(b));
    E2E_CU(cuCtxDestroy(b));
    E2E_CU(cuCtxGetCurrent(&cur));
    E2E_CHECK(cur == a);
    /* Destroying the context freed its memory. */
    E2E_CHECK_CU(cuMemFree(p), CUDA_ERROR_INVALID_VALUE, "memory of a destroyed context");
    E2E_CU(cuCtxSynchronize());
    E2E_CU(cuCtxDestroy(a));
    E2E_CU(cuCtxGetCurrent(&cur));
    E2E_CHECK(cur == NULL);
    E2E_CHECK_CU(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT, "no context");
    E2E_CHECK_CU(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT, "alloc without context");
    /* Primary context state. */
    unsigned flags;
    int active;
    E2E_CU(cuDevicePrimaryCtxGetState(0, &flags, &active));
    E2E_CHECK(!active);
    CUcontext pc, pc2;
    E2E_CU(cuDevicePrimaryCtxRetain(&pc, 0));
    E2E_CU(cuDevicePrimaryCtxRetain(&pc2, 0));
    E2E_CHECK(pc == pc2);
    E2E_CU(cuDevicePrimaryCtxGetState(0, &flags, &active));
    E2E_CHECK(active);
    E2E_CU(cuDevicePrimaryCtxRelease(0));
    E2E_CU(cuDevicePrimaryCtxRelease(0));
    E2E_CHECK_CU(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT, "over-release");
    return 0;
}

static int c_proc_address(void *arg)
{
    (void)arg;
    E2E_CU(cuInit(0));
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    E2E_CU(cuGetProcAddress("cuMemAlloc", &fn, 12000, 0, &st));
    E2E_CHECK(fn == (void *)&cuMemAlloc && st == CU_GET_PROC_ADDRESS_SUCCESS);
    E2E_CU(cuGetProcAddress("cuLaunchKernel", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    E2E_CHECK(fn == (void *)&cuLaunchKernel);
    E2E_CU(cuGetProcAddress("cuLaunchKernel", &fn, 13000,
                            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
    E2E_CHECK(fn != NULL && fn != (void *)&cuLaunchKernel);
    /* A function the driver has but the client cannot forward: a stub that says so. */
    E2E_CU(cuGetProcAddress("cuArrayCreate", &fn, 13000, 0, &st));
    E2E_CHECK(fn != NULL && st == CU_GET_PROC_ADDRESS_SUCCESS);
    CUarray arr;
    CUDA_ARRAY_DESCRIPTOR ad = {
        .Width = 4, .Height = 4, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    E2E_CHECK_CU(((CUresult(*)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *))fn)(&arr, &ad),
                 CUDA_ERROR_NOT_SUPPORTED, "unforwarded call");
    /* A name no driver has. */
    fn = (void *)1;
    E2E_CHECK_CU(cuGetProcAddress("cuNoSuchFunction", &fn, 13000, 0, &st), CUDA_ERROR_NOT_FOUND,
                 "unknown symbol");
    E2E_CHECK(fn == NULL && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    E2E_CHECK_CU(cuGetProcAddress("cuLibraryLoadData", &fn, 11080, 0, &st), CUDA_ERROR_NOT_FOUND,
                 "too old");
    E2E_CHECK(st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    return 0;
}

static int c_vram_limit(void *arg)
{
    (void)arg;
    CUcontext ctx;
    if (open_primary(&ctx))
        return 1;
    CUdeviceptr a, b;
    E2E_CU(cuMemAlloc(&a, 200 * MiB));
    E2E_CHECK_CU(cuMemAlloc(&b, 100 * MiB), CUDA_ERROR_OUT_OF_MEMORY, "over the cap");
    E2E_CU(cuMemFree(a));
    E2E_CU(cuMemAlloc(&b, 100 * MiB));
    size_t pitch;
    CUdeviceptr c;
    E2E_CHECK_CU(cuMemAllocPitch(&c, &pitch, 64 * MiB, 3, 4), CUDA_ERROR_OUT_OF_MEMORY,
                 "pitched over the cap");
    E2E_CU(cuMemAllocPitch(&c, &pitch, 1000, 100, 4));
    E2E_CHECK(pitch >= 1000);
    return 0;
}

/* Holds 200 MiB until its parent says stop (a byte on fd 0 of the pipe). */
struct holder {
    int ready[2], stop[2];
};

static int c_hold_memory(void *arg)
{
    struct holder *h = arg;
    CUcontext ctx;
    if (open_primary(&ctx))
        return 1;
    CUdeviceptr a;
    E2E_CU(cuMemAlloc(&a, 200 * MiB));
    char c = 'r';
    E2E_CHECK(write(h->ready[1], &c, 1) == 1);
    E2E_CHECK(read(h->stop[0], &c, 1) == 1);
    return 0;
}

static int c_alloc_200_until_ok(void *arg)
{
    (void)arg;
    CUcontext ctx;
    if (open_primary(&ctx))
        return 1;
    CUdeviceptr a;
    for (int i = 0; i < 200; i++) {
        CUresult r = cuMemAlloc(&a, 200 * MiB);
        if (r == CUDA_SUCCESS)
            return 0;
        E2E_CHECK_CU(r, CUDA_ERROR_OUT_OF_MEMORY, "alloc while the other holds the cap");
        usleep(20000);
    }
    return 99;
}

static int c_alloc_200_must_fail(void *arg)
{
    (void)arg;
    CUcontext ctx;
    if (open_primary(&ctx))
        return 1;
    CUdeviceptr a;
    E2E_CHECK_CU(cuMemAlloc(&a, 200 * MiB), CUDA_ERROR_OUT_OF_MEMORY, "cap shared by clients");
    return 0;
}

/* A client that is killed mid-session; its allocations must come back to the pool. */
static int c_die_holding_memory(void *arg)
{
    (void)arg;
    CUcontext ctx;
    if (open_primary(&ctx))
        return 1;
    CUdeviceptr a;
    E2E_CU(cuMemAlloc(&a, 200 * MiB));
    CUstream s;
    E2E_CU(cuStreamCreate(&s, 0));
    E2E_CU(cuMemsetD8Async(a, 1, 200 * MiB, s));
    kill(getpid(), SIGKILL);
    return 0;
}

struct victim {
    int ready[2], done[2];
    CUdeviceptr ptr;
    uint64_t ctx_id, stream_id;
};

static int c_victim(void *arg)
{
    struct victim *v = arg;
    CUcontext ctx;
    if (open_primary(&ctx))
        return 1;
    CUdeviceptr p;
    E2E_CU(cuMemAlloc(&p, MiB));
    uint8_t pat[256];
    fill(pat, sizeof(pat), 99);
    E2E_CU(cuMemcpyHtoD(p, pat, sizeof(pat)));
    CUstream s;
    E2E_CU(cuStreamCreate(&s, 0));
    uint64_t ids[3] = {p, (uintptr_t)ctx, (uintptr_t)s};
    E2E_CHECK(write(v->ready[1], ids, sizeof(ids)) == sizeof(ids));
    char c;
    E2E_CHECK(read(v->done[0], &c, 1) == 1);
    /* The attacker changed nothing. */
    uint8_t back[256];
    E2E_CU(cuMemcpyDtoH(back, p, sizeof(back)));
    E2E_CHECK(memcmp(back, pat, sizeof(pat)) == 0);
    E2E_CU(cuStreamSynchronize(s));
    return 0;
}

/* ---- raw-protocol helpers (a client that ignores the rules) --------------------------------- */

/* ---- tests ---------------------------------------------------------------------------------- */

static void device_facts_come_from_the_worker_cache(void **state)
{
    assert_int_equal(e2e_run(c_device_queries, NULL, 30), 0);
}

static void memory_round_trips_bit_exactly_through_the_worker(void **state)
{
    assert_int_equal(e2e_run(c_memory_round_trip, NULL, 60), 0);
}

static void big_async_copies_back_land_even_without_a_prompt_sync(void **state)
{
    assert_int_equal(e2e_run(c_async_dtoh_drained, (void *)1, 60), 0);
    assert_int_equal(e2e_run(c_async_dtoh_drained, NULL, 60), 0);
}

static void streams_and_events_order_work_as_on_a_local_gpu(void **state)
{
    assert_int_equal(e2e_run(c_streams_and_events, NULL, 60), 0);
}

static void contexts_stack_per_thread_and_free_their_memory(void **state)
{
    assert_int_equal(e2e_run(c_contexts, NULL, 30), 0);
}

static void entry_points_the_client_cannot_forward_say_so_never_crash(void **state)
{
    assert_int_equal(e2e_run(c_proc_address, NULL, 30), 0);
}

static void allocation_beyond_the_vram_limit_is_out_of_memory(void **state)
{
    assert_int_equal(e2e_run(c_vram_limit, NULL, 30), 0);
}

static void vram_limit_is_shared_by_the_workers_clients(void **state)
{
    struct holder h;
    assert_int_equal(pipe(h.ready), 0);
    assert_int_equal(pipe(h.stop), 0);
    pid_t p = e2e_spawn(c_hold_memory, &h);
    char c;
    assert_int_equal(read(h.ready[0], &c, 1), 1);
    assert_int_equal(e2e_run(c_alloc_200_must_fail, NULL, 30), 0);
    assert_int_equal(write(h.stop[1], "x", 1), 1);
    assert_int_equal(e2e_wait(p, 30), 0);
    /* The holder exited: its 200 MiB are released once the worker sees the disconnect. */
    assert_int_equal(e2e_run(c_alloc_200_until_ok, NULL, 30), 0);
    for (int i = 0; i < 2; i++) {
        close(h.ready[i]);
        close(h.stop[i]);
    }
}

static void killed_client_has_all_its_resources_freed(void **state)
{
    for (int i = 0; i < 3; i++) {
        assert_int_equal(e2e_run(c_die_holding_memory, NULL, 30), -1); /* SIGKILL */
        assert_int_equal(e2e_run(c_alloc_200_until_ok, NULL, 30), 0);
    }
}

static void another_clients_pointers_and_handles_are_rejected(void **state)
{
    struct victim v;
    assert_int_equal(pipe(v.ready), 0);
    assert_int_equal(pipe(v.done), 0);
    pid_t p = e2e_spawn(c_victim, &v);
    uint64_t ids[3];
    assert_int_equal(read(v.ready[0], ids, sizeof(ids)), (ssize_t)sizeof(ids));
    int fd = raw_connect(W.addr);
    assert_int_equal(raw_hello(fd, E2E_TOKEN), CUDA_SUCCESS);
    uint64_t ctx = raw_ctx(fd);
    assert_true(ctx != 0);
    static uint8_t rep[TF_PROTO_MAX_PAYLOAD];
    /* Read the victim's memory: no DATA, the transfer fails, the error surfaces. */
    uint8_t p1[TF_PROTO_SIZE_dtoh_req];
    struct tf_msg_dtoh_req rd = {.ctx = ctx, .src = ids[0], .len = 256, .tag = 5};
    tf_msg_dtoh_req_put(p1, &rd);
    assert_int_equal(raw_send(fd, TF_OP_MEMCPY_DTOH, 0, p1, sizeof(p1), NULL, 0), 0);
    struct tf_msg_frame_hdr h;
    assert_int_equal(raw_recv(fd, &h, rep, sizeof(rep)), 0);
    assert_int_equal(h.opcode, TF_OP_DTOH_DONE);
    struct tf_msg_dtoh_done_ev done;
    tf_msg_dtoh_done_ev_get(rep, &done);
    assert_int_equal(done.status, CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(raw_call(fd, TF_OP_FLUSH, NULL, 0, NULL, 0, rep, sizeof(rep)),
                     CUDA_ERROR_INVALID_VALUE);
    /* Overwrite it, free it, query it. */
    uint8_t p2[TF_PROTO_SIZE_memset_req];
    struct tf_msg_memset_req ms = {.ctx = ctx, .dst = ids[0], .count = 256, .elemsize = 1};
    tf_msg_memset_req_put(p2, &ms);
    assert_int_equal(raw_send(fd, TF_OP_MEMSET, 0, p2, sizeof(p2), NULL, 0), 0);
    uint8_t p3[TF_PROTO_SIZE_htod_req];
    struct tf_msg_htod_req wr = {.ctx = ctx, .dst = ids[0]};
    tf_msg_htod_req_put(p3, &wr);
    assert_int_equal(raw_send(fd, TF_OP_MEMCPY_HTOD, 0, p3, sizeof(p3), "evil", 4), 0);
    uint8_t p4[TF_PROTO_SIZE_mem_free_req];
    struct tf_msg_mem_free_req fr = {.ctx = ctx, .dptr = ids[0]};
    tf_msg_mem_free_req_put(p4, &fr);
    assert_int_equal(raw_send(fd, TF_OP_MEM_FREE, 0, p4, sizeof(p4), NULL, 0), 0);
    assert_int_equal(raw_call(fd, TF_OP_FLUSH, NULL, 0, NULL, 0, rep, sizeof(rep)),
                     CUDA_ERROR_INVALID_VALUE);
    uint8_t p5[TF_PROTO_SIZE_ptr_attr_req];
    struct tf_msg_ptr_attr_req pa = {
        .ctx = ctx, .ptr = ids[0], .attr = CU_POINTER_ATTRIBUTE_MEMORY_TYPE};
    tf_msg_ptr_attr_req_put(p5, &pa);
    assert_int_equal(raw_call(fd, TF_OP_POINTER_ATTR, p5, sizeof(p5), NULL, 0, rep, sizeof(rep)),
                     CUDA_ERROR_INVALID_VALUE);
    /* Use its context and stream ids: they are not ours. */
    uint8_t p6[TF_PROTO_SIZE_call_req + 8];
    size_t n6 = call_req(p6, TF_CALL_IDX_cuStreamSynchronize, ctx, &ids[2], 1);
    assert_int_equal(raw_call(fd, TF_OP_CALL, p6, n6, NULL, 0, rep, sizeof(rep)),
                     CUDA_ERROR_INVALID_HANDLE);
    uint8_t p7[TF_PROTO_SIZE_call_req];
    size_t n7 = call_req(p7, TF_CALL_IDX_cuCtxSynchronize, ids[1], NULL, 0);
    assert_int_equal(raw_call(fd, TF_OP_CALL, p7, n7, NULL, 0, rep, sizeof(rep)),
                     CUDA_ERROR_INVALID_CONTEXT);
    close(fd);
    assert_int_equal(write(v.done[1], "x", 1), 1);
    assert_int_equal(e2e_wait(p, 30), 0);
    for (int i = 0; i < 2; i++) {
        close(v.ready[i]);
        close(v.done[i]);
    }
}

static void hostile_frames_close_only_the_hostile_connection(void **state)
{
    struct victim v;
    assert_int_equal(pipe(v.ready), 0);
    assert_int_equal(pipe(v.done), 0);
    pid_t p = e2e_spawn(c_victim, &v);
    uint64_t ids[3];
    assert_int_equal(read(v.ready[0], ids, sizeof(ids)), (ssize_t)sizeof(ids));
    for (int k = 0; k < 4; k++) {
        int fd = raw_connect(W.addr);
        assert_int_equal(raw_hello(fd, E2E_TOKEN), CUDA_SUCCESS);
        uint64_t ctx = raw_ctx(fd);
        uint8_t junk[64];
        size_t n = sizeof(junk);
        if (k == 0) { /* a batch record claiming more bytes than the batch has */
            uint8_t rec[8];
            struct tf_msg_batch_rec r = {.opcode = TF_OP_MEM_FREE, .body_len = 4000};
            tf_msg_batch_rec_put(rec, &r);
            assert_int_equal(raw_send(fd, TF_OP_BATCH, 0, rec, 8, "12345678", 8), 0);
        } else if (k == 1) { /* a stream id of the wrong type */
            uint8_t sc[TF_PROTO_SIZE_stream_create_req];
            struct tf_msg_stream_create_req m = {.ctx = ctx, .stream = ctx};
            tf_msg_stream_create_req_put(sc, &m);
            assert_int_equal(raw_send(fd, TF_OP_STREAM_CREATE, 0, sc, sizeof(sc), NULL, 0), 0);
        } else if (k == 2) { /* launch with an absurd attribute count */
            uint8_t l[TF_PROTO_SIZE_launch_req];
            struct tf_msg_launch_req m = {.ctx = ctx, .nattrs = 1000};
            tf_msg_launch_req_put(l, &m);
            assert_int_equal(raw_send(fd, TF_OP_LAUNCH, 0, l, sizeof(l), NULL, 0), 0);
        } else { /* random bytes */
            for (size_t i = 0; i < n; i++)
                junk[i] = (uint8_t)(i * 37 + 11);
            assert_int_equal(raw_send_bytes(fd, junk, n), 0);
        }
        uint32_t reason;
        assert_true(raw_wait_closed(fd, &reason));
        assert_int_equal(reason, TF_PROTO_CLOSE_PROTOCOL);
        close(fd);
    }
    /* The victim, connected all along, still works and kept its data. */
    assert_int_equal(write(v.done[1], "x", 1), 1);
    assert_int_equal(e2e_wait(p, 30), 0);
    for (int i = 0; i < 2; i++) {
        close(v.ready[i]);
        close(v.done[i]);
    }
}

static void async_errors_surface_at_the_next_synchronising_call(void **state)
{
    int fd = raw_connect(W.addr);
    assert_int_equal(raw_hello(fd, E2E_TOKEN), CUDA_SUCCESS);
    uint64_t ctx = raw_ctx(fd);
    static uint8_t rep[4096];
    /* Two bad fire-and-forget requests: the first error is reported once. */
    uint8_t p[TF_PROTO_SIZE_call_req + 16];
    uint64_t args[2] = {TF_PROTO_HANDLE(5, 77), TF_PROTO_STREAM_NULL}; /* event, stream */
    size_t n = call_req(p, TF_CALL_IDX_cuEventRecord, ctx, args, 2);
    assert_int_equal(raw_send(fd, TF_OP_CALL_ASYNC, 0, p, n, NULL, 0), 0);
    uint8_t f[TF_PROTO_SIZE_mem_free_req];
    struct tf_msg_mem_free_req fr = {.ctx = ctx, .dptr = 0x1234};
    tf_msg_mem_free_req_put(f, &fr);
    assert_int_equal(raw_send(fd, TF_OP_MEM_FREE, 0, f, sizeof(f), NULL, 0), 0);
    assert_int_equal(raw_call(fd, TF_OP_FLUSH, NULL, 0, NULL, 0, rep, sizeof(rep)),
                     CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(raw_call(fd, TF_OP_FLUSH, NULL, 0, NULL, 0, rep, sizeof(rep)), CUDA_SUCCESS);
    close(fd);
}

static int c_many_clients(void *arg)
{
    uint32_t seed = (uint32_t)(uintptr_t)arg;
    CUcontext ctx;
    if (open_primary(&ctx))
        return 1;
    const size_t n = 512 * 1024;
    uint8_t *a = malloc(n), *b = malloc(n);
    CUdeviceptr d;
    E2E_CU(cuMemAlloc(&d, n));
    for (int round = 0; round < 10; round++) {
        fill(a, n, seed * 100 + (uint32_t)round);
        E2E_CU(cuMemcpyHtoD(d, a, n));
        E2E_CU(cuMemsetD8(d + (size_t)round, (unsigned char)seed, 1));
        a[round] = (uint8_t)seed;
        E2E_CU(cuMemcpyDtoH(b, d, n));
        E2E_CHECK(memcmp(a, b, n) == 0);
    }
    E2E_CU(cuMemFree(d));
    free(a);
    free(b);
    return 0;
}

static void several_clients_share_one_worker_concurrently(void **state)
{
    pid_t p[6];
    for (int i = 0; i < 6; i++)
        p[i] = e2e_spawn(c_many_clients, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < 6; i++)
        assert_int_equal(e2e_wait(p[i], 60), 0);
}

/* ---- the worker goes away ------------------------------------------------------------------- */

struct doomed {
    int ready[2], go[2];
    int expect_fast;
};

static int c_worker_dies(void *arg)
{
    struct doomed *dm = arg;
    CUcontext ctx;
    if (open_primary(&ctx))
        return 1;
    CUdeviceptr d;
    E2E_CU(cuMemAlloc(&d, MiB));
    char c = 'r';
    E2E_CHECK(write(dm->ready[1], &c, 1) == 1);
    E2E_CHECK(read(dm->go[0], &c, 1) == 1);
    double t0 = now_s();
    E2E_CU(cuMemsetD8(d, 1, MiB)); /* batched: nothing noticed yet */
    E2E_CHECK_CU(cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED, "sync after the worker died");
    E2E_CHECK(now_s() - t0 < 5.0);
    /* Later calls fail at once; cached facts still answer. */
    t0 = now_s();
    E2E_CHECK_CU(cuMemAlloc(&d, 16), CUDA_ERROR_LAUNCH_FAILED, "alloc after loss");
    E2E_CHECK_CU(cuMemsetD8(d, 0, 1), CUDA_ERROR_LAUNCH_FAILED, "memset after loss");
    E2E_CHECK_CU(cuStreamSynchronize(NULL), CUDA_ERROR_LAUNCH_FAILED, "stream after loss");
    E2E_CHECK(now_s() - t0 < 0.5);
    int n = 0;
    E2E_CU(cuDeviceGetCount(&n));
    E2E_CHECK(n == 1);
    return 0;
}

static void killed_worker_fails_the_client_cleanly(void **state)
{
    struct e2e_worker w2;
    const char *extra[] = {NULL};
    e2e_start(&w2, 1, extra);
    struct doomed dm;
    assert_int_equal(pipe(dm.ready), 0);
    assert_int_equal(pipe(dm.go), 0);
    pid_t p = e2e_spawn(c_worker_dies, &dm);
    char c;
    assert_int_equal(read(dm.ready[0], &c, 1), 1);
    e2e_kill(&w2);
    assert_int_equal(write(dm.go[1], "x", 1), 1);
    assert_int_equal(e2e_wait(p, 30), 0);
    e2e_stop(&w2);
    setenv("TF_REMOTE", W.addr, 1);
    for (int i = 0; i < 2; i++) {
        close(dm.ready[i]);
        close(dm.go[i]);
    }
}

static int c_worker_hangs(void *arg)
{
    struct doomed *dm = arg;
    setenv("TF_REMOTE_TIMEOUT_MS", "700", 1);
    CUcontext ctx;
    if (open_primary(&ctx))
        return 1;
    char c = 'r';
    E2E_CHECK(write(dm->ready[1], &c, 1) == 1);
    E2E_CHECK(read(dm->go[0], &c, 1) == 1);
    double t0 = now_s();
    E2E_CHECK_CU(cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED, "sync with a frozen worker");
    /* The property is "no hang". On a loaded machine the worker may also be seen closing the
     * connection before the stop lands, which fails the call sooner than the timeout. */
    double dt = now_s() - t0;
    E2E_CHECK(dt < 5.0);
    return 0;
}

/* True once every thread of PID is stopped (kill(SIGSTOP) returns before they are). */
static int all_stopped(pid_t pid)
{
    char dir[64];
    snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int ok = 1;
    struct dirent *e;
    while (ok && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[128], buf[512];
        snprintf(path, sizeof(path), "%s/%s/stat", dir, e->d_name);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = 0;
        const char *st = strrchr(buf, ')'); /* "pid (comm) S ..." */
        ok = st && (st[2] == 'T' || st[2] == 't');
    }
    closedir(d);
    return ok;
}

static void frozen_worker_times_out_instead_of_hanging(void **state)
{
    struct e2e_worker w2;
    e2e_start(&w2, 0, NULL);
    struct doomed dm;
    assert_int_equal(pipe(dm.ready), 0);
    assert_int_equal(pipe(dm.go), 0);
    pid_t p = e2e_spawn(c_worker_hangs, &dm);
    char c;
    assert_int_equal(read(dm.ready[0], &c, 1), 1);
    kill(w2.pid, SIGSTOP);
    for (int i = 0; i < 500 && !all_stopped(w2.pid); i++)
        usleep(10000);
    assert_true(all_stopped(w2.pid));
    assert_int_equal(write(dm.go[1], "x", 1), 1);
    int rc = e2e_wait(p, 30);
    kill(w2.pid, SIGCONT);
    assert_int_equal(rc, 0);
    e2e_stop(&w2);
    setenv("TF_REMOTE", W.addr, 1);
    for (int i = 0; i < 2; i++) {
        close(dm.ready[i]);
        close(dm.go[i]);
    }
}

static int c_bad_token(void *arg)
{
    (void)arg;
    setenv("TF_TOKEN", "not-the-token", 1);
    E2E_CHECK_CU(cuInit(0), CUDA_ERROR_NOT_PERMITTED, "wrong token");
    unsetenv("TF_TOKEN");
    unsetenv("TF_TOKEN_FILE");
    E2E_CHECK_CU(cuInit(0), CUDA_ERROR_NOT_PERMITTED, "no token");
    setenv("TF_TOKEN", E2E_TOKEN, 1);
    unsetenv("TF_REMOTE");
    E2E_CHECK_CU(cuInit(0), CUDA_ERROR_NO_DEVICE, "no TF_REMOTE");
    setenv("TF_REMOTE", "unix:///nonexistent/socket", 1);
    E2E_CHECK_CU(cuInit(0), CUDA_ERROR_NO_DEVICE, "nobody listening");
    return 0;
}

static void client_without_the_right_token_gets_no_gpu(void **state)
{
    assert_int_equal(e2e_run(c_bad_token, NULL, 30), 0);
}

/* Every code's name and message as the simulated driver itself says them (loaded privately
 * next to the client): a remote app reads the same errors as a local one. */
static int c_error_strings(void *arg)
{
    (void)arg;
    char path[600];
    snprintf(path, sizeof(path), "%s/libcuda.so.1", getenv("TF_SIM_LIBDIR"));
    void *sim = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    E2E_CHECK(sim != NULL);
    CUresult (*sim_name)(CUresult, const char **) =
        (CUresult(*)(CUresult, const char **))dlsym(sim, "cuGetErrorName");
    CUresult (*sim_msg)(CUresult, const char **) =
        (CUresult(*)(CUresult, const char **))dlsym(sim, "cuGetErrorString");
    E2E_CHECK(sim_name && sim_msg && (void *)sim_name != (void *)cuGetErrorName);
    int named = 0;
    for (int code = 0; code < 1000; code++) {
        const char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
        E2E_CHECK(cuGetErrorName((CUresult)code, &a) == sim_name((CUresult)code, &b));
        E2E_CHECK(cuGetErrorString((CUresult)code, &c) == sim_msg((CUresult)code, &d));
        E2E_CHECK((a == NULL) == (b == NULL) && (!a || strcmp(a, b) == 0));
        E2E_CHECK((c == NULL) == (d == NULL) && (!c || strcmp(c, d) == 0));
        named += a != NULL;
    }
    E2E_CHECK(named == 101);
    return 0;
}

static void error_names_and_messages_are_the_local_drivers(void **state)
{
    assert_int_equal(e2e_run(c_error_strings, NULL, 30), 0);
}

static int setup(void **state)
{
    (void)state;
    const char *extra[] = {"--vram-limit", "256Mi", NULL};
    e2e_start(&W, 0, extra);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    e2e_stop(&W);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_facts_come_from_the_worker_cache),
        cmocka_unit_test(memory_round_trips_bit_exactly_through_the_worker),
        cmocka_unit_test(streams_and_events_order_work_as_on_a_local_gpu),
        cmocka_unit_test(big_async_copies_back_land_even_without_a_prompt_sync),
        cmocka_unit_test(contexts_stack_per_thread_and_free_their_memory),
        cmocka_unit_test(entry_points_the_client_cannot_forward_say_so_never_crash),
        cmocka_unit_test(allocation_beyond_the_vram_limit_is_out_of_memory),
        cmocka_unit_test(vram_limit_is_shared_by_the_workers_clients),
        cmocka_unit_test(killed_client_has_all_its_resources_freed),
        cmocka_unit_test(another_clients_pointers_and_handles_are_rejected),
        cmocka_unit_test(hostile_frames_close_only_the_hostile_connection),
        cmocka_unit_test(async_errors_surface_at_the_next_synchronising_call),
        cmocka_unit_test(several_clients_share_one_worker_concurrently),
        cmocka_unit_test(killed_worker_fails_the_client_cleanly),
        cmocka_unit_test(frozen_worker_times_out_instead_of_hanging),
        cmocka_unit_test(client_without_the_right_token_gets_no_gpu),
        cmocka_unit_test(error_names_and_messages_are_the_local_drivers),
    };
    if (getenv("TF_TEST_FILTER"))
        cmocka_set_test_filter(getenv("TF_TEST_FILTER"));
    return cmocka_run_group_tests(tests, setup, teardown);
}
