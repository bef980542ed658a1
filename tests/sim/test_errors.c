/* SPDX-License-Identifier: Apache-2.0
 *
 * The simulated driver answers misuse with the real driver's CUresult codes: calls before
 * cuInit, without a context, with foreign or destroyed handles, with bad values, and beyond
 * the device's memory budget; and it reports devices (names, UUIDs, attributes) as the
 * configuration says.
 */
#include "simtest.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>

#include "sim/simcfg.h"

#define MiB (1u << 20)

static CUcontext ctx;

static void calls_before_cuinit_return_not_initialized(void **state)
{
    int n = -1;
    CUdevice d;
    CUcontext c;
    CUdeviceptr p;
    CU_IS(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&n));
    CU_IS(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGet(&d, 0));
    CU_IS(CUDA_ERROR_NOT_INITIALIZED, cuCtxGetCurrent(&c));
    CU_IS(CUDA_ERROR_NOT_INITIALIZED, cuMemAlloc(&p, 16));
    CU_IS(CUDA_ERROR_NOT_INITIALIZED, cuCtxSynchronize());
    /* Version and error strings need no initialisation. */
    CU_OK(cuDriverGetVersion(&n));
    assert_int_equal(n, 13000);
    const char *s;
    CU_OK(cuGetErrorName(CUDA_ERROR_NOT_INITIALIZED, &s));
    assert_string_equal(s, "CUDA_ERROR_NOT_INITIALIZED");
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuInit(1));
    CU_OK(cuInit(0));
    CU_OK(cuInit(0)); /* idempotent */
}

static void every_cuda_h_code_has_a_name_and_message(void **state)
{
    int named = 0;
    for (int code = 0; code < 1000; code++) {
        const char *n = NULL, *m = NULL;
        CUresult rn = cuGetErrorName((CUresult)code, &n);
        CUresult rm = cuGetErrorString((CUresult)code, &m);
        assert_int_equal(rn, rm);
        if (rn == CUDA_SUCCESS) {
            named++;
            assert_non_null(n);
            assert_non_null(m);
            assert_memory_equal(n, "CUDA_", 5);
            assert_true(strlen(m) > 3);
        } else {
            assert_int_equal(rn, CUDA_ERROR_INVALID_VALUE);
            assert_null(n);
        }
    }
    assert_int_equal(named, 101); /* every code of cuda.h's CUresult enum */
    const char *s;
    CU_OK(cuGetErrorString(CUDA_ERROR_UNKNOWN, &s));
    CU_OK(cuGetErrorString(CUDA_ERROR_ILLEGAL_ADDRESS, &s));
    assert_string_equal(s, "an illegal memory access was encountered");
    CU_OK(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s));
    assert_string_equal(s, "invalid argument");
    CU_OK(cuGetErrorName(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, &s));
    assert_string_equal(s, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGetErrorName(CUDA_SUCCESS, NULL));
}

static void calls_without_a_context_return_invalid_context(void **state)
{
    CUdeviceptr p;
    CUstream s;
    CUevent e;
    size_t f, t;
    CUdevice d;
    CU_IS(CUDA_ERROR_INVALID_CONTEXT, cuMemAlloc(&p, 16));
    CU_IS(CUDA_ERROR_INVALID_CONTEXT, cuMemGetInfo(&f, &t));
    CU_IS(CUDA_ERROR_INVALID_CONTEXT, cuStreamCreate(&s, 0));
    CU_IS(CUDA_ERROR_INVALID_CONTEXT, cuEventCreate(&e, 0));
    CU_IS(CUDA_ERROR_INVALID_CONTEXT, cuCtxSynchronize());
    CU_IS(CUDA_ERROR_INVALID_CONTEXT, cuCtxGetDevice(&d));
    CU_IS(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent(NULL));
    CU_IS(CUDA_ERROR_INVALID_CONTEXT, cuMemsetD8(0x1000, 0, 1));
    CUcontext c = (CUcontext)0x1;
    CU_OK(cuCtxGetCurrent(&c));
    assert_null(c);
}

static void devices_are_reported_as_configured(void **state)
{
    int n;
    CU_OK(cuDeviceGetCount(&n));
    assert_int_equal(n, 2);
    CUdevice d;
    CU_IS(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&d, 2));
    CU_IS(CUDA_ERROR_INVALID_DEVICE, cuDeviceGet(&d, -1));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuDeviceGet(NULL, 0));
    char name[64];
    CU_OK(cuDeviceGetName(name, sizeof(name), 0));
    assert_string_equal(name, "NVIDIA L4");
    CU_OK(cuDeviceGetName(name, sizeof(name), 1));
    assert_string_equal(name, "Tesla T4");
    CU_OK(cuDeviceGetName(name, 4, 0)); /* truncated, still terminated */
    assert_string_equal(name, "NVI");
    size_t total;
    CU_OK(cuDeviceTotalMem(&total, 0));
    assert_int_equal(total, 64 * MiB);
    /* UUIDs are the configuration's (stable, derived from seed, index and model). */
    struct tf_sim_config cfg;
    char err[128];
    assert_int_equal(tf_sim_config_load(&cfg, err, sizeof(err)), 0);
    CUuuid u;
    CU_OK(cuDeviceGetUuid(&u, 1));
    assert_memory_equal(u.bytes, cfg.dev[1].uuid, 16);
    char bus[32];
    CU_OK(cuDeviceGetPCIBusId(bus, sizeof(bus), 1));
    assert_string_equal(bus, "0000:11:00.0");
    CU_OK(cuDeviceGetByPCIBusId(&d, "0000:11:00.0"));
    assert_int_equal(d, 1);
    CU_IS(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetByPCIBusId(&d, "0000:42:00.0"));
}

static int attr(CUdevice_attribute a, CUdevice d)
{
    int v = -12345;
    CU_OK(cuDeviceGetAttribute(&v, a, d));
    return v;
}

static void attribute_table_follows_the_model(void **state)
{
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0), 4); /* configured */
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 1), 40);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0), 8);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0), 9);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 1), 7);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 1), 5);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0), 32);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0), 1024);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 0), 64);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 0), 2147483647);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 0), 48 * 1024);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0), 99 * 1024);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 1), 64 * 1024);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0), 1);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 0), 1);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0), 2040000);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 0), 192);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 0), 1536);
    assert_int_equal(attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 1), 0x11);
    /* Every attribute of the enum answers; values outside it are INVALID_VALUE. */
    for (int a = 1; a < CU_DEVICE_ATTRIBUTE_MAX; a++)
        (void)attr((CUdevice_attribute)a, 0);
    int v;
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuDeviceGetAttribute(&v, (CUdevice_attribute)0, 0));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
    CU_IS(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 7));
}

static void context_stack_and_primary_context(void **state)
{
    CUcontext a, b, top;
    CU_OK(cuCtxCreate(&a, NULL, 0, 0));
    CU_OK(cuCtxCreate(&b, NULL, 0, 1));
    CU_OK(cuCtxGetCurrent(&top));
    assert_ptr_equal(top, b);
    CUdevice d;
    CU_OK(cuCtxGetDevice(&d));
    assert_int_equal(d, 1);
    CU_OK(cuCtxPopCurrent(&top));
    assert_ptr_equal(top, b);
    CU_OK(cuCtxGetDevice(&d));
    assert_int_equal(d, 0);
    unsigned ver;
    CU_OK(cuCtxGetApiVersion(a, &ver));
    assert_int_equal(ver, 3020);
    CU_OK(cuCtxDestroy(b));
    CU_IS(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxPushCurrent(b));
    CU_IS(CUDA_ERROR_INVALID_CONTEXT, cuCtxPushCurrent((CUcontext)&d));
    CU_OK(cuCtxDestroy(a)); /* current: popped */
    CU_OK(cuCtxGetCurrent(&top));
    assert_null(top);

    /* Primary context: one handle per device, reference counted. */
    unsigned flags;
    int active;
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    assert_int_equal(active, 0);
    CU_IS(CUDA_ERROR_INVALID_CONTEXT, cuDevicePrimaryCtxRelease(0));
    CU_OK(cuDevicePrimaryCtxSetFlags(0, CU_CTX_SCHED_BLOCKING_SYNC));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuDevicePrimaryCtxSetFlags(0, 3));
    CUcontext p1, p2;
    CU_OK(cuDevicePrimaryCtxRetain(&p1, 0));
    CU_OK(cuDevicePrimaryCtxRetain(&p2, 0));
    assert_ptr_equal(p1, p2);
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    assert_int_equal(active, 1);
    assert_int_equal(flags, CU_CTX_SCHED_BLOCKING_SYNC);
    CU_IS(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy(p1));
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
    assert_int_equal(active, 0);
    /* Retained again: the same handle, usable. */
    CU_OK(cuDevicePrimaryCtxRetain(&p2, 0));
    assert_ptr_equal(p1, p2);
    CU_OK(cuCtxPushCurrent(p2));
    CUdeviceptr x;
    CU_OK(cuMemAlloc(&x, 64));
    CU_OK(cuDevicePrimaryCtxReset(0)); /* frees x, deactivates */
    CU_IS(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuMemAlloc(&x, 64));
    CU_OK(cuCtxPopCurrent(NULL));
}

static pthread_barrier_t bar;

/* Makes ARG current, lets the main thread destroy it, then allocates in it. */
static void *use_destroyed_ctx(void *arg)
{
    CUcontext c = arg;
    CUdeviceptr p;
    CUresult set = cuCtxSetCurrent(c);
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    CUresult alloc = cuMemAlloc(&p, 16);
    return (void *)(intptr_t)(set == CUDA_SUCCESS ? (int)alloc : -1);
}

static void context_destroyed_while_current_elsewhere_reports_destroyed(void **state)
{
    CUcontext c;
    CU_OK(cuCtxCreate(&c, NULL, 0, 0));
    pthread_barrier_init(&bar, NULL, 2);
    pthread_t t;
    void *ret;
    pthread_create(&t, NULL, use_destroyed_ctx, c);
    pthread_barrier_wait(&bar);
    CU_OK(cuCtxDestroy(c));
    pthread_barrier_wait(&bar);
    pthread_join(t, &ret);
    pthread_barrier_destroy(&bar);
    assert_int_equal((intptr_t)ret, CUDA_ERROR_CONTEXT_IS_DESTROYED);
    CU_IS(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxSetCurrent(c));
}

static int setup_ctx(void **state)
{
    CU_OK(cuCtxCreate(&ctx, NULL, 0, 0));
    return 0;
}

static int teardown_ctx(void **state)
{
    CU_OK(cuCtxDestroy(ctx));
    return 0;
}

/* The deprecated queries are still driver API that old programs call. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void device_queries_of_every_abi_agree(void **state)
{
    int major, minor;
    CU_OK(cuDeviceComputeCapability(&major, &minor, 1));
    assert_int_equal(major * 10 + minor, 75);
    CUdevprop p;
    CU_OK(cuDeviceGetProperties(&p, 0));
    assert_int_equal(p.maxThreadsPerBlock, 1024);
    assert_int_equal(p.maxThreadsDim[2], 64);
    assert_int_equal(p.SIMDWidth, 32);
    assert_int_equal(p.sharedMemPerBlock, 48 * 1024);
    assert_int_equal(p.clockRate, attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuDeviceGetProperties(NULL, 0));
    /* cuDeviceGetUuid's first ABI (CUDA 9.2) answers like _v2. */
    PFN_cuDeviceGetUuid_v9020 v1;
    CUdriverProcAddressQueryResult st;
    CU_OK(cuGetProcAddress("cuDeviceGetUuid", (void **)&v1, 11000, 0, &st));
    CUuuid a, b;
    CU_OK(v1(&a, 1));
    CU_OK(cuDeviceGetUuid_v2(&b, 1));
    assert_memory_equal(a.bytes, b.bytes, 16);
    CU_IS(CUDA_ERROR_INVALID_DEVICE, v1(&a, 2));
    int can = -1;
    CU_OK(cuDeviceCanAccessPeer(&can, 0, 1));
    assert_int_equal(can, 0);
    CU_IS(CUDA_ERROR_INVALID_DEVICE, cuDeviceCanAccessPeer(&can, 0, 0));
    CU_IS(CUDA_ERROR_INVALID_DEVICE, cuDeviceCanAccessPeer(&can, 0, 5));
}
#pragma GCC diagnostic pop

static void context_settings_round_trip_and_bad_ones_are_refused(void **state)
{
    CUcontext other;
    CU_OK(cuCtxCreate(&other, NULL, 0, 1));
    CU_OK(cuCtxPopCurrent(NULL)); /* ctx is current again */
    /* CUDA 13's context-explicit forms */
    CUdevice d;
    CU_OK(cuCtxGetDevice_v2(&d, other));
    assert_int_equal(d, 1);
    CU_OK(cuCtxGetDevice_v2(&d, NULL));
    assert_int_equal(d, 0);
    CU_OK(cuCtxSynchronize_v2(other));
    int junk;
    CU_IS(CUDA_ERROR_INVALID_CONTEXT, cuCtxSynchronize_v2((CUcontext)&junk));
    unsigned long long id0, id1, idc;
    CU_OK(cuCtxGetId(NULL, &idc));
    CU_OK(cuCtxGetId(ctx, &id0));
    CU_OK(cuCtxGetId(other, &id1));
    assert_true(id0 == idc && id0 != id1);
    /* limits */
    size_t v;
    CU_OK(cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE));
    assert_int_equal(v, 1024);
    CU_OK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 4096));
    CU_OK(cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE));
    assert_int_equal(v, 4096);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuCtxSetLimit(CU_LIMIT_MAX_L2_FETCH_GRANULARITY, 48));
    CU_IS(CUDA_ERROR_UNSUPPORTED_LIMIT, cuCtxGetLimit(&v, (CUlimit)99));
    CU_IS(CUDA_ERROR_UNSUPPORTED_LIMIT, cuCtxSetLimit((CUlimit)99, 1));
    /* cache config and flags */
    CUfunc_cache cc;
    CU_OK(cuCtxGetCacheConfig(&cc));
    assert_int_equal(cc, CU_FUNC_CACHE_PREFER_NONE);
    CU_OK(cuCtxSetCacheConfig(CU_FUNC_CACHE_PREFER_SHARED));
    CU_OK(cuCtxGetCacheConfig(&cc));
    assert_int_equal(cc, CU_FUNC_CACHE_PREFER_SHARED);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuCtxSetCacheConfig((CUfunc_cache)7));
    unsigned flags;
    CU_OK(cuCtxSetFlags(CU_CTX_SCHED_YIELD));
    CU_OK(cuCtxGetFlags(&flags));
    assert_int_equal(flags & CU_CTX_SCHED_MASK, CU_CTX_SCHED_YIELD);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuCtxSetFlags(CU_CTX_SCHED_SPIN | CU_CTX_SCHED_YIELD));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuCtxGetFlags(NULL));
    /* the other context kept its own settings */
    CU_OK(cuCtxPushCurrent(other));
    CU_OK(cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE));
    assert_int_equal(v, 1024);
    CU_OK(cuCtxGetCacheConfig(&cc));
    assert_int_equal(cc, CU_FUNC_CACHE_PREFER_NONE);
    CU_OK(cuCtxDestroy(other));
    CU_IS(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxGetId(other, &id1));
    CU_IS(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxSynchronize_v2(other));
}

static void page_locked_host_memory_keeps_its_flags(void **state)
{
    void *h, *plain;
    CU_OK(cuMemHostAlloc(&h, 4096, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_WRITECOMBINED));
    CU_OK(cuMemAllocHost(&plain, 64));
    unsigned f;
    CU_OK(cuMemHostGetFlags(&f, (char *)h + 100));
    /* mapped into the device address space always (unified addressing) */
    assert_int_equal(f, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_WRITECOMBINED |
                            CU_MEMHOSTALLOC_DEVICEMAP);
    CU_OK(cuMemHostGetFlags(&f, plain));
    assert_int_equal(f, CU_MEMHOSTALLOC_DEVICEMAP);
    int local;
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostGetFlags(&f, &local));
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 64));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostGetFlags(&f, (void *)d));
    /* a kernel-visible pointer that copies accept from either side */
    memset(h, 0x5a, 4096);
    CU_OK(cuMemcpyDtoD(d, (CUdeviceptr)h, 64));
    unsigned char back[64];
    CU_OK(cuMemcpyDtoH(back, d, 64));
    assert_int_equal(back[63], 0x5a);
    CU_OK(cuMemFree(d));
    CU_OK(cuMemFreeHost(h));
    CU_OK(cuMemFreeHost(plain));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostGetFlags(&f, h));
}

static void device_budget_exhaustion_gives_out_of_memory(void **state)
{
    CUdeviceptr a, b, c;
    size_t free0, free1, total;
    CU_OK(cuMemGetInfo(&free0, &total));
    assert_int_equal(total, 64 * MiB);
    CU_OK(cuMemAlloc(&a, 48 * MiB));
    CU_IS(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&b, 32 * MiB));
    CU_OK(cuMemGetInfo(&free1, &total));
    assert_int_equal(free0 - free1, 48 * MiB);
    CU_OK(cuMemAlloc(&b, free1)); /* exactly what is left */
    CU_IS(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&c, 1));
    CU_IS(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocManaged(&c, 1, CU_MEM_ATTACH_GLOBAL));
    void *h; /* host allocations do not use device memory */
    CU_OK(cuMemAllocHost(&h, MiB));
    CU_OK(cuMemFreeHost(h));
    CU_OK(cuMemFree(b));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemGetInfo(&free1, &total));
    assert_int_equal(free1, free0);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemAlloc(&a, 0));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemAlloc(NULL, 16));
    CU_OK(cuMemFree(0));
}

static void destroying_a_context_returns_its_memory(void **state)
{
    size_t f0, f1, t;
    CU_OK(cuMemGetInfo(&f0, &t));
    CUcontext c;
    CUdeviceptr p;
    CU_OK(cuCtxCreate(&c, NULL, 0, 0));
    CU_OK(cuMemAlloc(&p, 8 * MiB));
    CU_OK(cuMemGetInfo(&f1, &t));
    assert_int_equal(f0 - f1, 8 * MiB);
    CU_OK(cuCtxDestroy(c));
    CU_OK(cuMemGetInfo(&f1, &t));
    assert_int_equal(f1, f0);
}

static void foreign_and_destroyed_handles_are_invalid_handle(void **state)
{
    int junk[16];
    CUstream bogus_s = (CUstream)(void *)junk;
    CUevent bogus_e = (CUevent)(void *)junk;
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize(bogus_s));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuStreamQuery(bogus_s));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(bogus_e));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(bogus_e, NULL));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy(NULL));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy(CU_STREAM_LEGACY));
    CUstream s;
    CUevent e;
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuEventCreate(&e, 0));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuEventDestroy(e));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize(s));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy(s));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuEventSynchronize(e));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuEventDestroy(e));
    /* A stream of another context cannot be used from this one. */
    CUcontext other;
    CU_OK(cuCtxCreate(&other, NULL, 0, 1));
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuCtxPopCurrent(NULL));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize(s));
    CU_OK(cuCtxDestroy(other));
}

static void bad_values_are_invalid_value(void **state)
{
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    char host[8192];
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD(p, host, 4097));               /* past the end */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD(p + 4000, host, 200));         /* straddles it */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD((CUdeviceptr)host, host, 16)); /* not device */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH(host, p, 8192));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD(p, NULL, 16));
    CU_OK(cuMemcpyHtoD(p, host, 0));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemsetD32(p + 2, 0, 4)); /* misaligned */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemsetD16(p + 1, 0, 4));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemsetD32(p, 0, 1025));  /* too many elements */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemFree(p + 16));        /* interior pointer */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost((void *)p)); /* wrong kind */
    size_t pitch;
    CUdeviceptr q;
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch(&q, &pitch, 100, 10, 3));
    CU_OK(cuMemAllocPitch(&q, &pitch, 100, 10, 4));
    assert_int_equal(pitch, 512);
    CUdeviceptr base;
    size_t size;
    CU_OK(cuMemGetAddressRange(&base, &size, q + 700));
    assert_int_equal(base, q);
    assert_int_equal(size, 5120);
    CU_IS(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange(&base, &size, (CUdeviceptr)host));
    CUstream s;
    CUevent e;
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuStreamCreate(&s, 8));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuEventCreate(&e, CU_EVENT_INTERPROCESS));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuEventCreate(&e, 0x40));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemAllocManaged(&q, 16, 0));
    void *hp;
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostAlloc(&hp, 16, 0x80));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuCtxCreate(&ctx, NULL, 0x1000, 0));
    CU_IS(CUDA_ERROR_INVALID_DEVICE, cuCtxCreate(&ctx, NULL, 0, 9));
    CU_OK(cuMemFree(q));
    CU_OK(cuMemFree(p));
}

static void pointer_attributes_describe_allocations(void **state)
{
    CUdeviceptr d;
    void *h;
    CU_OK(cuMemAlloc(&d, 1000));
    CU_OK(cuMemHostAlloc(&h, 100, CU_MEMHOSTALLOC_DEVICEMAP));
    unsigned mt;
    CU_OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 10));
    assert_int_equal(mt, CU_MEMORYTYPE_DEVICE);
    CU_OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)h));
    assert_int_equal(mt, CU_MEMORYTYPE_HOST);
    CUcontext c;
    CU_OK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, d));
    assert_ptr_equal(c, ctx);
    int ord = -1;
    CU_OK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d));
    assert_int_equal(ord, 0);
    CUdeviceptr start;
    size_t size;
    CU_OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d + 999));
    CU_OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 999));
    assert_int_equal(start, d);
    assert_int_equal(size, 1000);
    CUdeviceptr dh;
    CU_OK(cuMemHostGetDevicePointer(&dh, h, 0));
    assert_int_equal(dh, (CUdeviceptr)h);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostGetDevicePointer(&dh, (void *)d, 0));
    int local;
    CU_IS(CUDA_ERROR_INVALID_VALUE,
          cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)&local));
    /* The plural form reports an unknown pointer as zeros instead of failing. */
    CUpointer_attribute as[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_CONTEXT};
    mt = 77;
    c = ctx;
    void *data[2] = {&mt, &c};
    CU_OK(cuPointerGetAttributes(2, as, data, (CUdeviceptr)&local));
    assert_int_equal(mt, 0);
    assert_null(c);
    CU_OK(cuMemFreeHost(h));
    CU_OK(cuMemFree(d));
}

static void copies_and_memsets_move_the_bytes(void **state)
{
    enum { N = 3 * 1024 * 1024 };
    unsigned char *src = malloc(N), *dst = malloc(N);
    for (int i = 0; i < N; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    CUdeviceptr a, b;
    CU_OK(cuMemAlloc(&a, N));
    CU_OK(cuMemAlloc(&b, N));
    CU_OK(cuMemcpyHtoD(a, src, N));
    CU_OK(cuMemcpyDtoD(b, a, N));
    CU_OK(cuMemcpyDtoH(dst, b, N));
    assert_memory_equal(src, dst, N);
    CU_OK(cuMemsetD8(b + 1, 0xAB, 3));
    CU_OK(cuMemsetD16(b + 4, 0xBEEF, 2));
    CU_OK(cuMemsetD32(b + 8, 0xDEADBEEF, 2));
    CU_OK(cuMemcpyDtoH(dst, b, 16));
    static const unsigned char want[16] = {3,    0xAB, 0xAB, 0xAB, 0xEF, 0xBE, 0xEF, 0xBE,
                                           0xEF, 0xBE, 0xAD, 0xDE, 0xEF, 0xBE, 0xAD, 0xDE};
    assert_memory_equal(dst, want, 16);
    /* Unified cuMemcpy accepts host and device pointers on either side. */
    CU_OK(cuMemcpy((CUdeviceptr)dst, a + 100, 50));
    assert_memory_equal(dst, src + 100, 50);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpy(a + N - 10, (CUdeviceptr)src, 20));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    free(src);
    free(dst);
}

/* cuInit's result in a fresh process whose TF_SIM_DEVICES is DEVICES. */
static int init_code_with(const char *devices)
{
    char *old = getenv("TF_SIM_DEVICES") ? strdup(getenv("TF_SIM_DEVICES")) : NULL;
    setenv("TF_SIM_DEVICES", devices, 1);
    int out;
    const char *args[] = {"init", NULL};
    pid_t pid = simtest_spawn(&out, NULL, args);
    char line[64] = "";
    simtest_read_line(out, line, sizeof(line));
    close(out);
    assert_int_equal(simtest_wait(pid), 0);
    setenv("TF_SIM_DEVICES", old ? old : "", 1);
    free(old);
    return atoi(line);
}

static void failed_initialisation_reports_the_real_codes(void **state)
{
    assert_int_equal(init_code_with("none"), CUDA_ERROR_NO_DEVICE);
    assert_int_equal(init_code_with("X100:1Gi"), CUDA_ERROR_INVALID_VALUE); /* logged */
    assert_int_equal(init_code_with("T4"), CUDA_SUCCESS);
}

int main(void)
{
    simtest_env("L4:64Mi:4,T4");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(calls_before_cuinit_return_not_initialized),
        cmocka_unit_test(every_cuda_h_code_has_a_name_and_message),
        cmocka_unit_test(calls_without_a_context_return_invalid_context),
        cmocka_unit_test(failed_initialisation_reports_the_real_codes),
        cmocka_unit_test(devices_are_reported_as_configured),
        cmocka_unit_test(attribute_table_follows_the_model),
        cmocka_unit_test(context_stack_and_primary_context),
        cmocka_unit_test(context_destroyed_while_current_elsewhere_reports_destroyed),
        cmocka_unit_test_setup_teardown(device_budget_exhaustion_gives_out_of_memory, setup_ctx,
                                        teardown_ctx),
        cmocka_unit_test_setup_teardown(destroying_a_context_returns_its_memory, setup_ctx,
                                        teardown_ctx),
        cmocka_unit_test_setup_teardown(foreign_and_destroyed_handles_are_invalid_handle, setup_ctx,
                                        teardown_ctx),
        cmocka_unit_test_setup_teardown(bad_values_are_invalid_value, setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(pointer_attributes_describe_allocations, setup_ctx,
                                        teardown_ctx),
        cmocka_unit_test_setup_teardown(copies_and_memsets_move_the_bytes, setup_ctx, teardown_ctx),
        cmocka_unit_test(device_queries_of_every_abi_agree),
        cmocka_unit_test_setup_teardown(context_settings_round_trip_and_bad_ones_are_refused,
                                        setup_ctx, teardown_ctx),
        cmocka_unit_test_setup_teardown(page_locked_host_memory_keeps_its_flags, setup_ctx,
                                        teardown_ctx),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    simtest_cleanup();
    return rc;
}
