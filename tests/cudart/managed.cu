// SPDX-License-Identifier: Apache-2.0
// Managed memory through the runtime: cudaMallocManaged memory written by the host, read and
// written by kernels and read back by the host without a copy, for several rounds; a
// __managed__ variable the host and a kernel both update; cudaMemAdvise and
// cudaMemPrefetchAsync (to the device and back) reported by cudaMemRangeGetAttribute;
// cudaStreamAttachMemAsync; cudaPointerGetAttributes says cudaMemoryTypeManaged (for the
// variable too); and an
// allocation past the device's memory (the limit, under libtf_limiter.so) fails with
// cudaErrorMemoryAllocation.
#include "check.h"

__managed__ int counter;

__global__ void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
    if (i == 0)
        atomicAdd(&counter, 1);
}

int main()
{
    prog = "managed";
    const int n = 50001, rounds = 3;
    size_t bytes = n * sizeof(float);
    int dev = 0, managed = 0, concurrent = 0;
    CK(cudaDeviceGetAttribute(&managed, cudaDevAttrManagedMemory, dev));
    CK(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, dev));
    if (!managed || !concurrent)
        mismatch("device lacks (concurrent) managed memory");
    float *a, *b, *c;
    CK(cudaMallocManaged(&a, bytes));
    CK(cudaMallocManaged(&b, bytes));
    CK(cudaMallocManaged(&c, bytes, cudaMemAttachHost));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamAttachMemAsync(s, c, 0, cudaMemAttachSingle));
    cudaMemLocation here = {}, host = {};
    here.type = cudaMemLocationTypeDevice;
    here.id = dev;
    host.type = cudaMemLocationTypeHost;
    CK(cudaMemAdvise(a, bytes, cudaMemAdviseSetReadMostly, here));
    CK(cudaMemAdvise(b, bytes, cudaMemAdviseSetPreferredLocation, here));
    counter = 100;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) {
            a[i] = rndf() * (float)(r + 1);
            b[i] = rndf();
        }
        CK(cudaMemPrefetchAsync(a, bytes, here, 0, s));
        CK(cudaMemPrefetchAsync(b, bytes, here, 0, s));
        add<<<(n + 255) / 256, 256, 0, s>>>(a, b, c, n);
        CK(cudaGetLastError());
        CK(cudaMemPrefetchAsync(c, bytes, host, 0, s));
        CK(cudaStreamSynchronize(s));
        for (int i = 0; i < n; i++)
            if (!same_bits(c[i], a[i] + b[i]))
                mismatch("round %d: c[%d] = %a, want %a", r, i, (double)c[i], (double)(a[i] + b[i]));
    }
    if (counter != 100 + rounds)
        mismatch("__managed__ counter = %d, want %d", counter, 100 + rounds);
    int rm = 0, pref = -5, last = -5;
    CK(cudaMemRangeGetAttribute(&rm, 4, cudaMemRangeAttributeReadMostly, a, bytes));
    CK(cudaMemRangeGetAttribute(&pref, 4, cudaMemRangeAttributePreferredLocation, b, bytes));
    CK(cudaMemRangeGetAttribute(&last, 4, cudaMemRangeAttributeLastPrefetchLocation, c, bytes));
    if (rm != 1 || pref != dev || last != cudaCpuDeviceId)
        mismatch("range attributes read-mostly=%d preferred=%d last-prefetch=%d", rm, pref, last);
    cudaPointerAttributes pa;
    CK(cudaPointerGetAttributes(&pa, c));
    if (pa.type != cudaMemoryTypeManaged || pa.devicePointer != c || pa.hostPointer != c)
        mismatch("pointer attributes of managed memory: type %d", (int)pa.type);
    CK(cudaPointerGetAttributes(&pa, &counter));
    if (pa.type != cudaMemoryTypeManaged || pa.hostPointer != (void *)&counter)
        mismatch("pointer attributes of a __managed__ variable: type %d", (int)pa.type);
    size_t fr, total;
    CK(cudaMemGetInfo(&fr, &total));
    void *big;
    EXPECT_ERR(cudaMallocManaged(&big, total + (64u << 20)), cudaErrorMemoryAllocation);
    cudaGetLastError();
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(c));
    CK(cudaStreamDestroy(s));
    pass("n=%d rounds=%d bit-exact without copies, __managed__ counter %d", n, rounds, counter);
    return 0;
}
