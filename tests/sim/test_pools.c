/* SPDX-License-Identifier: Apache-2.0
 *
 * The stream-ordered allocator of the simulated driver: which freed block an allocation may
 * reuse (same stream, event dependency, completed free, internal dependency under memory
 * pressure), the release threshold and trimming, reserved/used attributes and their
 * watermarks, pool creation and destruction, device default/current pools, pool access,
 * maxSize and device budget limits, and context teardown. Streams are held back with gates
 * (host functions that block until the test opens them) so frees are still queued when the
 * next allocation is made.
 */
#include "gate.h"
#include "simtest.h"

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>

#define MiB (1u << 20)

static CUcontext ctx;

static cuuint64_t attr64(CUmemoryPool p, CUmemPool_attribute a)
{
    cuuint64_t v = 0;
    CU_OK(cuMemPoolGetAttribute(p, a, &v));
    return v;
}

static void set_int(CUmemoryPool p, CUmemPool_attribute a, int v)
{
    CU_OK(cuMemPoolSetAttribute(p, a, &v));
}

static CUmemoryPool new_pool(size_t max_size)
{
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0},
                            .maxSize = max_size};
    CUmemoryPool p;
    CU_OK(cuMemPoolCreate(&p, &props));
    return p;
}

static size_t dev_free(void)
{
    size_t f, t;
    CU_OK(cuMemGetInfo(&f, &t));
    return f;
}

static void a_free_on_the_same_stream_is_reused_before_it_ran(void **state)
{
    CUmemoryPool pool;
    CU_OK(cuDeviceGetMemPool(&pool, 0));
    CUstream s;
    struct gate g;
    gate_init(&g);
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuLaunchHostFunc(s, gate_wait, &g));
    CUdeviceptr a, b;
    CU_OK(cuMemAllocAsync(&a, 1000, s));
    CU_OK(cuMemsetD8Async(a, 7, 1000, s));
    CU_OK(cuMemFreeAsync(a, s));
    CU_OK(cuMemAllocAsync(&b, 900, s)); /* the free is still queued behind the gate */
    cuuint64_t reserved = attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
    cuuint64_t used = attr64(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
    CUmemoryPool owner = NULL;
    CU_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, b));
    gate_open(&g); /* before asserting: a failure must not leave the stream blocked */
    assert_true(a == b);
    assert_int_equal(reserved, 1024);
    assert_int_equal(used, 1024);
    assert_ptr_equal(owner, pool);
    unsigned char host[900];
    CU_OK(cuMemcpyDtoHAsync(host, b, 900, s));
    CU_OK(cuStreamSynchronize(s));
    assert_int_equal(host[899], 7); /* pool memory is not cleared between allocations */
    size_t size = 0;
    CU_OK(cuMemGetAddressRange(NULL, &size, b));
    assert_int_equal(size, 900); /* the entry shrank to the new allocation once the free ran */
    CU_OK(cuMemFreeAsync(b, s));
    CU_OK(cuStreamSynchronize(s));
    assert_int_equal(attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
    CU_OK(cuStreamDestroy(s));
}

static void another_stream_reuses_a_queued_free_only_through_an_event(void **state)
{
    CUmemoryPool pool;
    CU_OK(cuDeviceGetMemPool(&pool, 0));
    CUstream s1, s2;
    CUevent e;
    struct gate g;
    gate_init(&g);
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuLaunchHostFunc(s1, gate_wait, &g));
    CUdeviceptr a, b, c, d;
    CU_OK(cuMemAllocAsync(&a, 4096, s1));
    CU_OK(cuMemFreeAsync(a, s1));
    CU_OK(cuMemAllocAsync(&b, 4096, s2)); /* no ordering between the free and s2 */
    CU_OK(cuEventRecord(e, s1));
    CU_OK(cuStreamWaitEvent(s2, e, 0));
    CU_OK(cuMemAllocAsync(&c, 4096, s2)); /* s2 now follows the free */
    CU_OK(cuMemFreeAsync(c, s1));
    CU_OK(cuEventRecord(e, s1));
    CU_OK(cuStreamWaitEvent(s2, e, 0));
    set_int(pool, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, 0);
    CU_OK(cuMemAllocAsync(&d, 4096, s2)); /* the rule is off: a fresh block */
    set_int(pool, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, 1);
    gate_open(&g);
    assert_true(b != a);
    assert_true(c == a);
    assert_true(d != a && d != b);
    CU_OK(cuMemFreeAsync(b, s2));
    CU_OK(cuMemFreeAsync(d, s2));
    CU_OK(cuCtxSynchronize());
    assert_int_equal(attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
    CU_OK(cuEventDestroy(e));
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuStreamDestroy(s2));
}

static void the_legacy_stream_orders_frees_of_blocking_streams(void **state)
{
    CUstream s;
    struct gate g;
    gate_init(&g);
    CU_OK(cuStreamCreate(&s, 0)); /* blocking: synchronises with the legacy stream */
    CU_OK(cuLaunchHostFunc(s, gate_wait, &g));
    CUdeviceptr a, b;
    CU_OK(cuMemAllocAsync(&a, 256, s));
    CU_OK(cuMemFreeAsync(a, s));
    CU_OK(cuMemAllocAsync(&b, 256, CU_STREAM_LEGACY));
    gate_open(&g);
    assert_true(a == b);
    CU_OK(cuMemFreeAsync(b, NULL));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuStreamDestroy(s));
}

static void completed_frees_are_reused_opportunistically_unless_disabled(void **state)
{
    CUmemoryPool pool = new_pool(0);
    cuuint64_t keep = UINT64_MAX; /* hold on to everything across synchronizes */
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    CUstream s1, s2;
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CUdeviceptr a, b, c;
    CU_OK(cuMemAllocFromPoolAsync(&a, 3000, pool, s1));
    CU_OK(cuMemFreeAsync(a, s1));
    CU_OK(cuStreamSynchronize(s1));
    assert_int_equal(attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 3072);
    CU_OK(cuMemAllocFromPoolAsync(&b, 3000, pool, s2));
    assert_true(b == a);
    CU_OK(cuMemFreeAsync(b, s2));
    CU_OK(cuStreamSynchronize(s2));
    set_int(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, 0);
    CU_OK(cuMemAllocFromPoolAsync(&c, 3000, pool, s1)); /* freed on s2, no dependency */
    assert_true(c != a);
    assert_int_equal(attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 2 * 3072);
    CU_OK(cuMemFreeAsync(c, s1));
    CU_OK(cuStreamSynchronize(s1));
    CU_OK(cuMemPoolTrimTo(pool, 0));
    assert_int_equal(attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuStreamDestroy(s2));
}

static void release_threshold_decides_what_a_synchronize_gives_back(void **state)
{
    CUmemoryPool pool = new_pool(0);
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    size_t f0 = dev_free();
    CUdeviceptr a, b;
    CU_OK(cuMemAllocFromPoolAsync(&a, 4 * MiB, pool, s));
    CU_OK(cuMemAllocFromPoolAsync(&b, 2 * MiB, pool, s));
    assert_int_equal(f0 - dev_free(), 6 * MiB); /* reserved memory is device memory */
    CU_OK(cuMemFreeAsync(a, s));
    CU_OK(cuMemFreeAsync(b, s));
    cuuint64_t thr = 3 * MiB;
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr));
    CU_OK(cuStreamSynchronize(s)); /* above the threshold: gives back, keeping >= 3 MiB */
    cuuint64_t r = attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
    assert_true(r >= 3 * MiB && r < 6 * MiB);
    assert_int_equal(f0 - dev_free(), r);
    CU_OK(cuMemPoolTrimTo(pool, 8 * MiB)); /* less reserved than that: nothing happens */
    assert_int_equal(attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), r);
    CU_OK(cuMemPoolTrimTo(pool, 0));
    assert_int_equal(attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
    assert_int_equal(dev_free(), f0);
    CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr));
    assert_int_equal(thr, 3 * MiB);
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuStreamDestroy(s));
}

static void watermarks_track_peaks_and_reset_only_to_zero(void **state)
{
    CUmemoryPool pool = new_pool(0);
    CUdeviceptr a, b;
    CU_OK(cuMemAllocFromPoolAsync(&a, MiB, pool, NULL));
    CU_OK(cuMemAllocFromPoolAsync(&b, MiB, pool, NULL));
    CU_OK(cuMemFreeAsync(a, NULL));
    CU_OK(cuCtxSynchronize());
    assert_int_equal(attr64(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), MiB);
    assert_int_equal(attr64(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 2 * MiB);
    assert_int_equal(attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), MiB);
    assert_int_equal(attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 2 * MiB);
    cuuint64_t v = 5;
    CU_IS(CUDA_ERROR_INVALID_VALUE,
          cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &v));
    CU_IS(CUDA_ERROR_INVALID_VALUE,
          cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v));
    v = 0;
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &v));
    CU_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
    assert_int_equal(attr64(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), MiB);
    assert_int_equal(attr64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), MiB);
    int on = 0;
    CU_OK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, &on));
    assert_int_equal(on, 1);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemPoolGetAttribute(pool, (CUmemPool_attribute)99, &v));
    CU_IS(CUDA_ERROR_INVALID_VALUE,
          cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, NULL));
    CU_OK(cuMemFreeAsync(b, NULL));
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemPoolDestroy(pool));
}

static void pool_creation_checks_its_properties(void **state)
{
    CUmemoryPool p;
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(NULL, &props));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&p, NULL));
    CUmemPoolProps bad = props;
    bad.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&p, &bad));
    bad = props;
    bad.reserved[10] = 1;
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&p, &bad));
    bad = props;
    bad.location.id = 7;
    CU_IS(CUDA_ERROR_INVALID_DEVICE, cuMemPoolCreate(&p, &bad));
    bad = props;
    bad.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&p, &bad));
    bad = props;
    bad.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CU_IS(CUDA_ERROR_NOT_SUPPORTED, cuMemPoolCreate(&p, &bad));
    bad = props;
    bad.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CU_IS(CUDA_ERROR_NOT_SUPPORTED, cuMemPoolCreate(&p, &bad));
    props.location.id = 1;
    CU_OK(cuMemPoolCreate(&p, &props));
    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, 1};
    CUmemAccess_flags fl;
    CU_OK(cuMemPoolGetAccess(&fl, p, &loc));
    assert_int_equal(fl, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    loc.id = 0;
    CU_OK(cuMemPoolGetAccess(&fl, p, &loc));
    assert_int_equal(fl, CU_MEM_ACCESS_FLAGS_PROT_NONE);
    CUmemAccessDesc d = {{CU_MEM_LOCATION_TYPE_DEVICE, 1}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CU_OK(cuMemPoolSetAccess(p, &d, 1));
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READ; /* the owner's access cannot be lowered */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemPoolSetAccess(p, &d, 1));
    d.location.id = 0; /* no peer mappings between simulated GPUs */
    CU_IS(CUDA_ERROR_INVALID_DEVICE, cuMemPoolSetAccess(p, &d, 1));
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    CU_OK(cuMemPoolSetAccess(p, &d, 1));
    CU_OK(cuMemPoolDestroy(p));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(p));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemPoolTrimTo(p, 0));
}

static void current_pool_serves_allocations_and_falls_back_to_the_default(void **state)
{
    CUmemoryPool def, cur, p, other;
    CU_OK(cuDeviceGetDefaultMemPool(&def, 0));
    CU_OK(cuDeviceGetMemPool(&cur, 0));
    assert_ptr_equal(def, cur);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(def));
    CU_IS(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetMemPool(&cur, 9));
    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    CU_OK(cuMemGetDefaultMemPool(&cur, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
    assert_ptr_equal(def, cur);
    CU_IS(CUDA_ERROR_NOT_SUPPORTED, cuMemGetMemPool(&cur, &loc, CU_MEM_ALLOCATION_TYPE_MANAGED));
    p = new_pool(0);
    CU_OK(cuDeviceGetDefaultMemPool(&other, 1));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuDeviceSetMemPool(0, other)); /* a pool of device 1 */
    CU_OK(cuDeviceSetMemPool(0, p));
    CU_OK(cuMemGetMemPool(&cur, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
    assert_ptr_equal(cur, p);
    CUdeviceptr a;
    CU_OK(cuMemAllocAsync(&a, 100, NULL));
    CUmemoryPool owner;
    CU_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a));
    assert_ptr_equal(owner, p);
    /* Destroyed with an allocation outstanding: the handle goes, the memory stays usable. */
    CU_OK(cuMemPoolDestroy(p));
    CU_OK(cuDeviceGetMemPool(&cur, 0));
    assert_ptr_equal(cur, def);
    CU_IS(CUDA_ERROR_INVALID_VALUE,
          cuMemPoolGetAttribute(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &(cuuint64_t){0}));
    CU_OK(cuMemsetD32(a, 0xAB, 25));
    size_t f0 = dev_free();
    CU_OK(cuMemFreeAsync(a, NULL));
    CU_OK(cuCtxSynchronize());
    assert_int_equal(dev_free() - f0, 512); /* the block went with the destroyed pool */
}

static void max_size_and_device_budget_end_in_out_of_memory(void **state)
{
    CUmemoryPool pool = new_pool(MiB);
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr a, b;
    CU_OK(cuMemAllocFromPoolAsync(&a, 768 * 1024, pool, s));
    CU_IS(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocFromPoolAsync(&b, 768 * 1024, pool, s));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemAllocFromPoolAsync(&b, 0, pool, s));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemAllocFromPoolAsync(NULL, 64, pool, s));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemAllocFromPoolAsync(&b, 64, (CUmemoryPool)&b, s));
    CU_OK(cuMemFreeAsync(a, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemAllocFromPoolAsync(&b, 768 * 1024, pool, s));
    CU_OK(cuMemFreeAsync(b, s));
    /* More than the device has (the L4 here is configured with 64 MiB). */
    CU_IS(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocAsync(&b, 65 * MiB, s));
    CU_IS(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocAsync(&b, (size_t)1 << 50, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuStreamDestroy(s));
}

static _Atomic int norder;
static void CUDA_CB note(void *arg)
{
    (void)arg;
    atomic_fetch_add(&norder, 1);
}

static void short_memory_makes_an_allocation_wait_for_a_queued_free(void **state)
{
    CUmemoryPool pool = new_pool(MiB);
    CUstream s1, s2;
    struct gate g;
    gate_init(&g);
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CUdeviceptr a, b;
    CU_OK(cuMemAllocFromPoolAsync(&a, MiB, pool, s1));
    CU_OK(cuLaunchHostFunc(s1, gate_wait, &g));
    CU_OK(cuMemFreeAsync(a, s1));
    set_int(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, 0);
    CUresult without = cuMemAllocFromPoolAsync(&b, MiB, pool, s2);
    set_int(pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, 1);
    CU_OK(cuMemAllocFromPoolAsync(&b, MiB, pool, s2)); /* s2 now waits for s1's free */
    atomic_store(&norder, 0);
    CU_OK(cuLaunchHostFunc(s2, note, "b"));
    sleep_ms(20);
    CUresult query = cuStreamQuery(s2); /* held back until s1's free runs */
    int ran = atomic_load(&norder);
    gate_open(&g);
    CU_IS(CUDA_ERROR_OUT_OF_MEMORY, without);
    assert_true(b == a);
    CU_IS(CUDA_ERROR_NOT_READY, query);
    assert_int_equal(ran, 0);
    CU_OK(cuStreamSynchronize(s2));
    assert_int_equal(atomic_load(&norder), 1);
    CU_OK(cuMemFreeAsync(b, s2));
    CU_OK(cuStreamSynchronize(s2));
    CU_OK(cuMemPoolDestroy(pool));
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuStreamDestroy(s2));
}

static void frees_check_their_pointer(void **state)
{
    CUdeviceptr a;
    CU_OK(cuMemAllocAsync(&a, 64, NULL));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(a + 8, NULL));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(0x1000, NULL));
    CU_OK(cuMemFreeAsync(a, NULL));
    CU_OK(cuCtxSynchronize());
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(a, NULL));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemsetD8(a, 0, 64)); /* no longer an allocation */
    /* cuMemFree takes stream-ordered allocations too, and cuMemFreeAsync plain ones. */
    CUdeviceptr b, c;
    CU_OK(cuMemAllocAsync(&b, 64, NULL));
    CU_OK(cuMemFree(b));
    CU_OK(cuMemAlloc(&c, 64));
    CU_OK(cuMemFreeAsync(c, NULL));
    CU_OK(cuCtxSynchronize());
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemFree(c));
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuMemFreeAsync(b, (CUstream)&b));
}

static void destroying_a_context_returns_its_pool_memory(void **state)
{
    CUcontext c2;
    size_t f0 = dev_free();
    CU_OK(cuCtxCreate(&c2, NULL, 0, 0));
    CUdeviceptr a;
    CU_OK(cuMemAllocAsync(&a, 2 * MiB, NULL));
    assert_int_equal(f0 - dev_free(), 2 * MiB);
    CU_OK(cuCtxDestroy(c2));
    CU_OK(cuCtxSetCurrent(ctx));
    CU_OK(cuCtxSynchronize()); /* the device's pool keeps the block until a synchronize */
    assert_int_equal(dev_free(), f0);
    CUmemoryPool def;
    CU_OK(cuDeviceGetDefaultMemPool(&def, 0));
    assert_int_equal(attr64(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
}

struct churn {
    int id;
    CUresult rc;
    int bad;
};

/* One thread: allocations of varying sizes on its own stream, filled, checked and freed in
 * stream order, while other threads do the same on the same pool. */
static void *churn_main(void *arg)
{
    struct churn *c = arg;
    c->rc = cuCtxSetCurrent(ctx);
    CUstream s;
    if (c->rc || (c->rc = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)))
        return NULL;
    for (int i = 0; i < 300 && !c->rc; i++) {
        size_t n = 256 + (size_t)((i * 7919 + c->id * 104729) % 20000);
        CUdeviceptr p;
        unsigned v = 0;
        if ((c->rc = cuMemAllocAsync(&p, n * 4, s)) ||
            (c->rc = cuMemsetD32Async(p, (unsigned)(c->id * 1000 + i), n, s)) ||
            (c->rc = cuMemcpyDtoHAsync(&v, p + (n - 1) * 4, 4, s)) ||
            (c->rc = cuMemFreeAsync(p, s)) || (c->rc = cuStreamSynchronize(s)))
            break;
        c->bad += v != (unsigned)(c->id * 1000 + i);
    }
    cuStreamDestroy(s);
    return NULL;
}

static void threads_share_a_pool_without_mixing_up_blocks(void **state)
{
    enum { T = 4 };
    pthread_t th[T];
    struct churn c[T];
    for (int i = 0; i < T; i++) {
        c[i] = (struct churn){.id = i};
        assert_int_equal(pthread_create(&th[i], NULL, churn_main, &c[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        CU_OK(c[i].rc);
        assert_int_equal(c[i].bad, 0);
    }
    CUmemoryPool def;
    CU_OK(cuDeviceGetDefaultMemPool(&def, 0));
    CU_OK(cuCtxSynchronize());
    assert_int_equal(attr64(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
    assert_int_equal(attr64(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
}

static int setup(void **state)
{
    CU_OK(cuInit(0));
    CU_OK(cuCtxCreate(&ctx, NULL, 0, 0));
    return 0;
}

int main(void)
{
    simtest_env("L4:64Mi,T4:64Mi");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_free_on_the_same_stream_is_reused_before_it_ran),
        cmocka_unit_test(another_stream_reuses_a_queued_free_only_through_an_event),
        cmocka_unit_test(the_legacy_stream_orders_frees_of_blocking_streams),
        cmocka_unit_test(completed_frees_are_reused_opportunistically_unless_disabled),
        cmocka_unit_test(release_threshold_decides_what_a_synchronize_gives_back),
        cmocka_unit_test(watermarks_track_peaks_and_reset_only_to_zero),
        cmocka_unit_test(pool_creation_checks_its_properties),
        cmocka_unit_test(current_pool_serves_allocations_and_falls_back_to_the_default),
        cmocka_unit_test(max_size_and_device_budget_end_in_out_of_memory),
        cmocka_unit_test(short_memory_makes_an_allocation_wait_for_a_queued_free),
        cmocka_unit_test(frees_check_their_pointer),
        cmocka_unit_test(destroying_a_context_returns_its_pool_memory),
        cmocka_unit_test(threads_share_a_pool_without_mixing_up_blocks),
    };
    int rc = cmocka_run_group_tests(tests, setup, NULL);
    simtest_cleanup();
    return rc;
}
