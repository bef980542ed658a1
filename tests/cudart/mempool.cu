// SPDX-License-Identifier: Apache-2.0
// Stream-ordered allocation through the runtime: rounds of cudaMallocAsync / kernel /
// cudaFreeAsync on one stream that must not grow the device's memory pool (the frees are
// reused), vectors allocated on one stream and used on another after an event, a pool of its
// own (cudaMemPoolCreate, cudaMallocFromPoolAsync, cudaDeviceSetMemPool) capped by maxSize,
// the release threshold and cudaMemPoolTrimTo, and cudaErrorMemoryAllocation past the
// device's memory (past the limit under libtf_limiter.so, whose cudaMemGetInfo reports it).
#include "check.h"

__global__ void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

static void check_add(const float *a, const float *b, const float *c, int n, const char *what)
{
    for (int i = 0; i < n; i++)
        if (!same_bits(c[i], a[i] + b[i]))
            mismatch("%s: c[%d] = %a, want %a", what, i, (double)c[i], (double)(a[i] + b[i]));
}

static unsigned long long attr(cudaMemPool_t p, cudaMemPoolAttr a)
{
    unsigned long long v = 0;
    CK(cudaMemPoolGetAttribute(p, a, &v));
    return v;
}

int main()
{
    prog = "mempool";
    const int n = 40003, rounds = 8;
    size_t bytes = n * sizeof(float);
    int dev = 0, pools = 0;
    CK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, dev));
    if (!pools)
        mismatch("device reports no memory pool support");
    float *a, *b, *c;
    CK(cudaMallocHost(&a, bytes));
    CK(cudaMallocHost(&b, bytes));
    CK(cudaMallocHost(&c, bytes));
    cudaMemPool_t pool;
    CK(cudaDeviceGetDefaultMemPool(&pool, dev));
    cudaStream_t s, s2;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    unsigned long long high1 = 0;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) {
            a[i] = rndf() * (float)(r + 1);
            b[i] = rndf();
        }
        float *da, *db, *dc;
        CK(cudaMallocAsync(&da, bytes, s));
        CK(cudaMallocAsync(&db, bytes, s));
        CK(cudaMallocAsync(&dc, bytes, s));
        CK(cudaMemcpyAsync(da, a, bytes, cudaMemcpyHostToDevice, s));
        CK(cudaMemcpyAsync(db, b, bytes, cudaMemcpyHostToDevice, s));
        add<<<(n + 255) / 256, 256, 0, s>>>(da, db, dc, n);
        CK(cudaGetLastError());
        CK(cudaMemcpyAsync(c, dc, bytes, cudaMemcpyDeviceToHost, s));
        CK(cudaFreeAsync(da, s));
        CK(cudaFreeAsync(db, s));
        CK(cudaFreeAsync(dc, s));
        CK(cudaStreamSynchronize(s));
        check_add(a, b, c, n, "round");
        if (r == 0)
            high1 = attr(pool, cudaMemPoolAttrReservedMemHigh);
    }
    unsigned long long high = attr(pool, cudaMemPoolAttrReservedMemHigh);
    if (high != high1)
        mismatch("the pool grew from %llu to %llu bytes: frees were not reused", high1, high);

    // Allocated on s, used and freed on s2 after an event.
    cudaEvent_t ev;
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    float *da, *db, *dc;
    CK(cudaMallocAsync(&da, bytes, s));
    CK(cudaMallocAsync(&db, bytes, s));
    CK(cudaMemcpyAsync(da, a, bytes, cudaMemcpyHostToDevice, s));
    CK(cudaMemcpyAsync(db, b, bytes, cudaMemcpyHostToDevice, s));
    CK(cudaEventRecord(ev, s));
    CK(cudaStreamWaitEvent(s2, ev, 0));
    CK(cudaMallocAsync(&dc, bytes, s2));
    add<<<(n + 255) / 256, 256, 0, s2>>>(da, db, dc, n);
    CK(cudaGetLastError());
    memset(c, 0, bytes);
    CK(cudaMemcpyAsync(c, dc, bytes, cudaMemcpyDeviceToHost, s2));
    CK(cudaFreeAsync(da, s2));
    CK(cudaFreeAsync(db, s2));
    CK(cudaFreeAsync(dc, s2));
    CK(cudaStreamSynchronize(s2));
    check_add(a, b, c, n, "cross-stream");

    // A pool of its own, made the device's current one, capped at 2 MiB.
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    props.maxSize = 2u << 20;
    cudaMemPool_t own, cur;
    CK(cudaMemPoolCreate(&own, &props));
    CK(cudaDeviceSetMemPool(dev, own));
    CK(cudaDeviceGetMemPool(&cur, dev));
    if (cur != own)
        mismatch("cudaDeviceGetMemPool does not return the pool just set");
    void *p1, *p2;
    CK(cudaMallocAsync(&p1, 1u << 20, s)); // from the current pool: own
    EXPECT_ERR(cudaMallocFromPoolAsync(&p2, 3u << 20, own, s), cudaErrorMemoryAllocation);
    cudaGetLastError(); // (the runtime keeps the last error)
    cudaPointerAttributes pa;
    CK(cudaPointerGetAttributes(&pa, p1));
    if (pa.type != cudaMemoryTypeDevice)
        mismatch("pool memory has pointer type %d", (int)pa.type);
    CK(cudaFreeAsync(p1, s));
    unsigned long long keep = ~0ull;
    CK(cudaMemPoolSetAttribute(own, cudaMemPoolAttrReleaseThreshold, &keep));
    CK(cudaStreamSynchronize(s));
    if (attr(own, cudaMemPoolAttrReservedMemCurrent) == 0)
        mismatch("a pool holding its release threshold gave its memory back at a synchronize");
    CK(cudaMemPoolTrimTo(own, 0));
    if (attr(own, cudaMemPoolAttrReservedMemCurrent) != 0)
        mismatch("cudaMemPoolTrimTo(0) left memory reserved");
    CK(cudaMemPoolDestroy(own)); // the default pool becomes current again
    CK(cudaDeviceGetMemPool(&cur, dev));
    if (cur != pool)
        mismatch("after destroying the current pool the default is not current");

    // More than the device has (the limit, under the limiter).
    size_t fr, total;
    CK(cudaMemGetInfo(&fr, &total));
    EXPECT_ERR(cudaMallocAsync(&p2, total + (64u << 20), s), cudaErrorMemoryAllocation);
    cudaGetLastError();
    CK(cudaStreamSynchronize(s));
    CK(cudaMemPoolTrimTo(pool, 0));
    if (attr(pool, cudaMemPoolAttrUsedMemCurrent) != 0)
        mismatch("default pool still has %llu bytes in use", attr(pool, cudaMemPoolAttrUsedMemCurrent));
    CK(cudaEventDestroy(ev));
    CK(cudaStreamDestroy(s));
    CK(cudaStreamDestroy(s2));
    CK(cudaFreeHost(a));
    CK(cudaFreeHost(b));
    CK(cudaFreeHost(c));
    pass("n=%d rounds=%d reserved_high=%llu bit-exact", n, rounds, high);
    return 0;
}
