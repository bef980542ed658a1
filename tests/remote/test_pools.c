/* SPDX-License-Identifier: Apache-2.0
 *
 * The stream-ordered allocator, memory pools and graph memory nodes through libtf_client ->
 * tf-worker --vram-limit 64Mi -> the simulated GPU: pools are reported and served; what a
 * pool holds reserved counts against the limit (allocations past it refused with
 * CUDA_ERROR_OUT_OF_MEMORY at the allocating call, memory a pool keeps after a free still
 * charged, and given back by a synchronisation below the release threshold or by
 * cuMemPoolTrimTo); a pool's idle memory serves an allocation the limit would refuse as fresh
 * memory; a captured graph's allocation node is charged from instantiation to the executable
 * graph's destruction (refused at cuGraphInstantiate when it does not fit) and the graph may
 * be relaunched before its previous launch ran; memory a client leaves in pools (its own and
 * the default one, destroyed or not) comes back when it disconnects.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>

#include "e2e_cuda.h"

#define MiB (1024ull * 1024ull)
#define LIMIT (64 * MiB)

static struct e2e_worker W;

static size_t free_now(void)
{
    size_t fr = 0, tot = 0;
    return cuMemGetInfo(&fr, &tot) == CUDA_SUCCESS ? fr : 0;
}

static cuuint64_t attr(CUmemoryPool p, CUmemPool_attribute a)
{
    cuuint64_t v = ~0ull;
    (void)cuMemPoolGetAttribute(p, a, &v);
    return v;
}

static int c_reported(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    int v = 0;
    E2E_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
    E2E_CHECK(v == 1);
    E2E_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, 0));
    E2E_CHECK(v == 0); /* no export of pool memory to other processes */
    CUmemoryPool def, cur, own;
    E2E_CU(cuDeviceGetDefaultMemPool(&def, 0));
    E2E_CU(cuDeviceGetMemPool(&cur, 0));
    E2E_CHECK(def == cur);
    E2E_CHECK_CU(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE, "destroy the default pool");
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    E2E_CHECK_CU(cuMemPoolCreate(&own, &props), CUDA_ERROR_NOT_SUPPORTED, "exportable pool");
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.id = 7;
    E2E_CHECK_CU(cuMemPoolCreate(&own, &props), CUDA_ERROR_INVALID_DEVICE, "no such device");
    props.location.id = 0;
    E2E_CU(cuMemPoolCreate(&own, &props));
    E2E_CU(cuDeviceSetMemPool(0, own));
    E2E_CU(cuDeviceGetMemPool(&cur, 0));
    E2E_CHECK(cur == own);
    int reuse = 0;
    E2E_CU(cuMemPoolSetAttribute(own, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse));
    reuse = 1;
    E2E_CU(cuMemPoolGetAttribute(own, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse));
    E2E_CHECK(reuse == 0);
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    E2E_CU(cuMemPoolSetAccess(own, &acc, 1));
    CUmemAccess_flags fl = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    E2E_CU(cuMemPoolGetAccess(&fl, own, &acc.location));
    E2E_CHECK(fl == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CUdeviceptr q;
    E2E_CU(cuMemAllocAsync(&q, 4096, NULL)); /* from the current pool: own */
    CUmemoryPool of = NULL;
    E2E_CU(cuPointerGetAttribute(&of, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, q));
    E2E_CHECK(of == own);
    E2E_CU(cuMemFreeAsync(q, NULL));
    E2E_CU(cuMemPoolDestroy(own));
    E2E_CU(cuDeviceGetMemPool(&cur, 0));
    E2E_CHECK(cur == def); /* the default is current again */
    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
    E2E_CU(cuMemGetMemPool(&cur, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
    E2E_CHECK(cur == def);
    E2E_CU(cuMemGetDefaultMemPool(&cur, &loc, CU_MEM_ALLOCATION_TYPE_PINNED));
    E2E_CHECK(cur == def);
    loc.type = CU_MEM_LOCATION_TYPE_HOST;
    E2E_CHECK_CU(cuMemGetMemPool(&cur, &loc, CU_MEM_ALLOCATION_TYPE_PINNED),
                 CUDA_ERROR_NOT_SUPPORTED, "host pool");
    CUdeviceptr p;
    E2E_CHECK_CU(cuMemAllocFromPoolAsync(&p, 4096, own, NULL), CUDA_ERROR_INVALID_HANDLE,
                 "allocation from a destroyed pool");
    E2E_CHECK_CU(cuMemFreeAsync(0x1000, NULL), CUDA_ERROR_INVALID_VALUE, "free of a stranger");
    return 0;
}

static int c_limit(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    size_t f0 = free_now();
    E2E_CHECK(f0 == LIMIT);
    CUstream s;
    E2E_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUmemoryPool def;
    E2E_CU(cuDeviceGetDefaultMemPool(&def, 0));
    CUdeviceptr a, b, c;
    /* Past the limit: refused at the call, by cuMemAlloc and cuMemAllocAsync alike. */
    E2E_CU(cuMemAllocAsync(&a, 48 * MiB, s));
    E2E_CHECK(free_now() <= 16 * MiB);
    E2E_CHECK_CU(cuMemAlloc(&b, 32 * MiB), CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc past the limit");
    E2E_CHECK_CU(cuMemAllocAsync(&b, 32 * MiB, s), CUDA_ERROR_OUT_OF_MEMORY,
                 "cuMemAllocAsync past the limit");
    E2E_CU(cuMemAllocAsync(&b, 8 * MiB, s));
    E2E_CU(cuMemsetD8Async(a, 1, 48 * MiB, s));
    E2E_CU(cuMemsetD8Async(b, 2, 8 * MiB, s));
    unsigned char x = 0;
    E2E_CU(cuStreamSynchronize(s));
    E2E_CU(cuMemcpyDtoH(&x, a + 48 * MiB - 1, 1));
    E2E_CHECK(x == 1);
    E2E_CU(cuMemFreeAsync(a, s));
    E2E_CU(cuMemFreeAsync(b, s));
    E2E_CHECK_CU(cuMemcpyDtoH(&x, a, 1), CUDA_ERROR_INVALID_VALUE, "copy from freed memory");
    E2E_CU(cuStreamSynchronize(s)); /* release threshold 0: the pool gives it all back */
    E2E_CHECK(free_now() == f0);

    /* A pool keeping its memory keeps it charged, and serves from it; a trim gives it back. */
    cuuint64_t keep = ~0ull;
    E2E_CU(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    E2E_CU(cuMemAllocAsync(&a, 48 * MiB, s));
    E2E_CU(cuMemFreeAsync(a, s));
    E2E_CU(cuStreamSynchronize(s));
    E2E_CHECK(attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >= 48 * MiB);
    E2E_CHECK(free_now() <= 16 * MiB);
    E2E_CHECK_CU(cuMemAlloc(&b, 32 * MiB), CUDA_ERROR_OUT_OF_MEMORY, "memory a pool keeps");
    E2E_CU(cuMemAllocAsync(&a, 40 * MiB, s)); /* from the pool's idle memory */
    E2E_CU(cuMemFreeAsync(a, s));
    E2E_CU(cuStreamSynchronize(s));
    E2E_CU(cuMemPoolTrimTo(def, 0));
    E2E_CHECK(attr(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 0);
    E2E_CHECK(free_now() == f0);
    E2E_CU(cuMemAlloc(&b, 32 * MiB));
    E2E_CU(cuMemFree(b));

    /* A pool of its own, and cuMemFree of pool memory. */
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CUmemoryPool own;
    E2E_CU(cuMemPoolCreate(&own, &props));
    E2E_CU(cuMemAllocFromPoolAsync(&a, 40 * MiB, own, s));
    E2E_CHECK_CU(cuMemAllocFromPoolAsync(&b, 32 * MiB, own, s), CUDA_ERROR_OUT_OF_MEMORY,
                 "own pool past the limit");
    E2E_CHECK_CU(cuMemAllocAsync(&b, 32 * MiB, s), CUDA_ERROR_OUT_OF_MEMORY,
                 "default pool past the limit");
    E2E_CU(cuStreamSynchronize(s));
    E2E_CU(cuMemFree(a));
    E2E_CU(cuMemPoolDestroy(own));
    E2E_CHECK(free_now() == f0);

    /* A captured allocation node: charged from instantiation, refused there when it does not
     * fit; launches may queue behind each other. */
    CUgraph g;
    CUgraphExec e;
    E2E_CU(cuMemAlloc(&c, 4096));
    E2E_CU(cuMemsetD32(c, 0, 1));
    E2E_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    E2E_CU(cuMemAllocAsync(&a, 40 * MiB, s));
    E2E_CU(cuMemsetD32Async(a, 0x01010101u, 10 * MiB, s));
    E2E_CU(cuMemcpyDtoDAsync(c, a + 40 * MiB - 4, 4, s));
    E2E_CU(cuMemFreeAsync(a, s));
    E2E_CU(cuStreamEndCapture(s, &g));
    E2E_CU(cuMemAlloc(&b, 32 * MiB));
    E2E_CHECK_CU(cuGraphInstantiateWithFlags(&e, g, 0), CUDA_ERROR_OUT_OF_MEMORY,
                 "a graph whose memory does not fit");
    E2E_CU(cuMemFree(b));
    E2E_CU(cuGraphInstantiateWithFlags(&e, g, 0));
    E2E_CHECK_CU(cuMemAlloc(&b, 32 * MiB), CUDA_ERROR_OUT_OF_MEMORY, "while the graph exists");
    for (int i = 0; i < 3; i++)
        E2E_CU(cuGraphLaunch(e, s));
    E2E_CU(cuStreamSynchronize(s));
    uint32_t w = 0;
    E2E_CU(cuMemcpyDtoH(&w, c, 4));
    E2E_CHECK(w == 0x01010101u);
    E2E_CU(cuGraphExecDestroy(e));
    E2E_CU(cuGraphDestroy(g));
    E2E_CU(cuDeviceGraphMemTrim(0));
    E2E_CU(cuMemFree(c));
    E2E_CHECK(free_now() == f0);
    E2E_CU(cuStreamDestroy(s));
    return 0;
}

/* Leaves memory in pools: allocated from the default pool, kept by a pool of its own after a
 * free, and held by a pool destroyed with an allocation outstanding. */
static int c_leave(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    CUdeviceptr a, b, c;
    E2E_CU(cuMemAllocAsync(&a, 16 * MiB, NULL));
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CUmemoryPool own, gone;
    E2E_CU(cuMemPoolCreate(&own, &props));
    cuuint64_t keep = ~0ull;
    E2E_CU(cuMemPoolSetAttribute(own, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
    E2E_CU(cuMemAllocFromPoolAsync(&b, 16 * MiB, own, NULL));
    E2E_CU(cuMemFreeAsync(b, NULL));
    E2E_CU(cuMemPoolCreate(&gone, &props));
    E2E_CU(cuMemAllocFromPoolAsync(&c, 16 * MiB, gone, NULL));
    E2E_CU(cuMemPoolDestroy(gone));
    E2E_CU(cuCtxSynchronize());
    E2E_CHECK(free_now() <= 16 * MiB);
    return 0;
}

/* The next client gets the whole limit. */
static int c_all_back(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    E2E_CHECK(free_now() == LIMIT);
    CUdeviceptr a;
    E2E_CU(cuMemAlloc(&a, 60 * MiB));
    E2E_CU(cuMemFree(a));
    return 0;
}

/* Client A: 48 MiB through its default pool, freed and synchronised (release threshold 0:
 * the pool gives it back), then it stays connected until the parent writes to its pipe. */
static int c_hold(void *arg)
{
    int *fds = arg;
    if (e2e_ctx())
        return 1;
    CUstream s;
    E2E_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr a;
    E2E_CU(cuMemAllocAsync(&a, 48 * MiB, s));
    E2E_CU(cuMemFreeAsync(a, s));
    E2E_CU(cuStreamSynchronize(s));
    char c = 1;
    E2E_CHECK(write(fds[1], &c, 1) == 1); /* synchronised */
    E2E_CHECK(read(fds[0], &c, 1) == 1);  /* the other client is done */
    return 0;
}

/* Client B, while A is connected: the limit has room for 60 MiB again. */
static int c_other(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    CUdeviceptr b;
    E2E_CU(cuMemAlloc(&b, 60 * MiB));
    E2E_CU(cuMemFree(b));
    return 0;
}

static void pools_are_reported_and_served(void **state)
{
    (void)state;
    assert_int_equal(e2e_run(c_reported, NULL, 60), 0);
}

static void pool_memory_counts_against_the_vram_limit(void **state)
{
    (void)state;
    assert_int_equal(e2e_run(c_limit, NULL, 120), 0);
}

static void pool_memory_left_by_a_client_comes_back_when_it_goes(void **state)
{
    (void)state;
    assert_int_equal(e2e_run(c_leave, NULL, 60), 0);
    assert_int_equal(e2e_run(c_all_back, NULL, 60), 0);
}

/* Memory a client's pool gave back at a synchronisation is another client's to use at once,
 * while the first stays connected and idle. */
static void pool_memory_released_at_a_sync_is_free_for_another_client(void **state)
{
    (void)state;
    int up[2], down[2];
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    int fds[2] = {down[0], up[1]};
    pid_t a = e2e_spawn(c_hold, fds);
    char c;
    assert_int_equal(read(up[0], &c, 1), 1);
    assert_int_equal(e2e_run(c_other, NULL, 60), 0);
    assert_int_equal(write(down[1], &c, 1), 1);
    assert_int_equal(e2e_wait(a, 60), 0);
    close(up[0]);
    close(up[1]);
    close(down[0]);
    close(down[1]);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pools_are_reported_and_served),
        cmocka_unit_test(pool_memory_counts_against_the_vram_limit),
        cmocka_unit_test(pool_memory_left_by_a_client_comes_back_when_it_goes),
        cmocka_unit_test(pool_memory_released_at_a_sync_is_free_for_another_client),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
