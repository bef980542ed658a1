/* SPDX-License-Identifier: Apache-2.0
 *
 * Stream-ordered allocation (kernels/vecadd.cu: vecadd): each of ITERS rounds allocates its
 * three vectors with cuMemAllocAsync, copies in, adds, copies out and frees them on one
 * stream; the pool's reserved high watermark must not grow after the first round (frees on
 * the stream are reused by its next allocations). A second stream then computes on vectors a
 * first stream allocated, ordered by an event; a pool of its own caps itself with maxSize;
 * and an allocation larger than the device's total memory (cuMemGetInfo: the limit, under
 * libtf_limiter.so) fails with CUDA_ERROR_OUT_OF_MEMORY. Results are checked bit for bit;
 * after a synchronize and cuMemPoolTrimTo(0) the pool holds nothing.
 * Usage: mempool vecadd.ptx [N] [ITERS]
 */
#include "hostcommon.h"

static cuuint64_t pool_attr(CUmemoryPool p, CUmemPool_attribute a)
{
    cuuint64_t v = 0;
    CK(cuMemPoolGetAttribute(p, a, &v));
    return v;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod = host_setup("mempool", argc, argv, &dev);
    int n = (int)host_arg(argc, argv, 2, 50001);
    int iters = (int)host_arg(argc, argv, 3, 8);
    size_t bytes = (size_t)n * sizeof(float);
    float *a, *b, *c;
    CK(cuMemAllocHost((void **)&a, bytes));
    CK(cuMemAllocHost((void **)&b, bytes));
    CK(cuMemAllocHost((void **)&c, bytes));
    CUfunction f;
    CK(cuModuleGetFunction(&f, mod, "vecadd"));
    CUmemoryPool pool;
    CK(cuDeviceGetMemPool(&pool, dev));
    CUstream s, s2;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    unsigned block = 128, grid = ((unsigned)n + block - 1) / block;
    cuuint64_t high1 = 0;
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < n; i++) {
            a[i] = host_randf() * (float)(it + 1);
            b[i] = host_randf();
        }
        CUdeviceptr da, db, dc;
        CK(cuMemAllocAsync(&da, bytes, s));
        CK(cuMemAllocAsync(&db, bytes, s));
        CK(cuMemAllocAsync(&dc, bytes, s));
        CK(cuMemcpyHtoDAsync(da, a, bytes, s));
        CK(cuMemcpyHtoDAsync(db, b, bytes, s));
        void *params[] = {&da, &db, &dc, &n};
        CK(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, params, NULL));
        CK(cuMemcpyDtoHAsync(c, dc, bytes, s));
        CK(cuMemFreeAsync(da, s));
        CK(cuMemFreeAsync(db, s));
        CK(cuMemFreeAsync(dc, s));
        CK(cuStreamSynchronize(s));
        host_check_add(a, b, c, n, "same-stream round");
        if (it == 0)
            high1 = pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH);
    }
    cuuint64_t high = pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH);
    if (high != high1)
        host_mismatch("the pool grew from %llu to %llu bytes: frees were not reused",
                      (unsigned long long)high1, (unsigned long long)high);

    /* Allocated on s, used and freed on s2 after an event. */
    CUevent ev;
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CUdeviceptr da, db, dc;
    CK(cuMemAllocAsync(&da, bytes, s));
    CK(cuMemAllocAsync(&db, bytes, s));
    CK(cuMemcpyHtoDAsync(da, a, bytes, s));
    CK(cuMemcpyHtoDAsync(db, b, bytes, s));
    CK(cuEventRecord(ev, s));
    CK(cuStreamWaitEvent(s2, ev, 0));
    CK(cuMemAllocAsync(&dc, bytes, s2));
    void *params[] = {&da, &db, &dc, &n};
    CK(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s2, params, NULL));
    memset(c, 0, bytes);
    CK(cuMemcpyDtoHAsync(c, dc, bytes, s2));
    CK(cuMemFreeAsync(da, s2));
    CK(cuMemFreeAsync(db, s2));
    CK(cuMemFreeAsync(dc, s2));
    CK(cuStreamSynchronize(s2));
    host_check_add(a, b, c, n, "cross-stream round");

    /* A pool of its own, capped at 2 MiB. */
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {CU_MEM_LOCATION_TYPE_DEVICE, dev},
                            .maxSize = 2u << 20};
    CUmemoryPool own;
    CK(cuMemPoolCreate(&own, &props));
    CUdeviceptr p1, p2;
    CK(cuMemAllocFromPoolAsync(&p1, 1u << 20, own, s));
    host_expect(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocFromPoolAsync(&p2, 3u << 20, own, s),
                "allocation past the pool's maxSize");
    CUmemoryPool got;
    CK(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p1));
    if (got != own)
        host_mismatch("CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE is not the pool allocated from");
    CK(cuMemFreeAsync(p1, s));
    CK(cuStreamSynchronize(s));
    CK(cuMemPoolDestroy(own));

    /* More than the device has. */
    size_t fr, total;
    CK(cuMemGetInfo(&fr, &total));
    host_expect(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocAsync(&p2, total + (64u << 20), s),
                "allocation past the device's memory");

    CK(cuStreamSynchronize(s));
    CK(cuMemPoolTrimTo(pool, 0));
    cuuint64_t reserved = pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
    cuuint64_t used = pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
    if (reserved || used)
        host_mismatch("pool still holds %llu reserved / %llu used bytes",
                      (unsigned long long)reserved, (unsigned long long)used);
    CK(cuEventDestroy(ev));
    CK(cuStreamDestroy(s));
    CK(cuStreamDestroy(s2));
    CK(cuMemFreeHost(a));
    CK(cuMemFreeHost(b));
    CK(cuMemFreeHost(c));
    host_teardown(mod, dev);
    printf("mempool: PASS n=%d iters=%d reserved_high=%llu bit-exact\n", n, iters,
           (unsigned long long)high);
    return 0;
}
