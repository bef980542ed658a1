// SPDX-License-Identifier: Apache-2.0
// The errors a runtime program sees, as the runtime maps the driver's: a launch with 2048
// threads per block (cudaErrorInvalidConfiguration, not sticky), a 1 PiB cudaMalloc
// (cudaErrorMemoryAllocation, not sticky), a bad device ordinal (cudaErrorInvalidDevice), and
// a store to an address mapped nowhere (cudaErrorIllegalAddress, sticky: every later call fails
// the same way until cudaDeviceReset, after which the program works again). The store goes to
// 2^57 + 4 KiB, above every GPU's virtual address range and not a canonical host address, so
// it faults on real hardware as on the simulated GPU. Then a failed assert() in a kernel
// (cudaErrorAssert, sticky the same way), after which a reset makes the program work again.
#include "check.h"

#include <cassert>

__global__ void fill(int *p, int v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = v;
}

__global__ void checked(int *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(i < n);
    p[i] = i;
}

__global__ void write_oob(int *p, long long offset)
{
    if (threadIdx.x == 0)
        p[offset] = 42;
}

// A small job that must work: fills N ints with V and checks them.
static void works(int v, const char *when)
{
    const int n = 1000;
    int *d, h[n];
    cudaError_t e = cudaMalloc(&d, n * sizeof(int));
    if (e != cudaSuccess)
        mismatch("%s: cudaMalloc: %s", when, cudaGetErrorName(e));
    fill<<<(n + 127) / 128, 128>>>(d, v, n);
    if ((e = cudaGetLastError()) != cudaSuccess ||
        (e = cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost)) != cudaSuccess)
        mismatch("%s: %s", when, cudaGetErrorName(e));
    for (int i = 0; i < n; i++)
        if (h[i] != v)
            mismatch("%s: h[%d] = %d, expected %d", when, i, h[i], v);
    CK(cudaFree(d));
}

int main()
{
    prog = "errors";
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    EXPECT_ERR(cudaSetDevice(ndev), cudaErrorInvalidDevice);
    EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidDevice); // and reading it clears it
    CK(cudaSetDevice(0));
    works(1, "start");

    // Too many threads per block: a launch error, reported once, not sticky.
    int *d;
    CK(cudaMalloc(&d, 4096 * sizeof(int)));
    fill<<<1, 2048>>>(d, 5, 4096);
    EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidConfiguration);
    EXPECT_ERR(cudaGetLastError(), cudaSuccess);
    fill<<<dim3(1, 1, 1), dim3(32, 32, 2)>>>(d, 5, 4096);
    EXPECT_ERR(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
    EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidConfiguration);
    works(2, "after an invalid configuration");

    // 1 PiB: out of memory, not sticky.
    void *huge = NULL;
    EXPECT_ERR(cudaMalloc(&huge, (size_t)1 << 50), cudaErrorMemoryAllocation);
    EXPECT_ERR(cudaGetLastError(), cudaErrorMemoryAllocation);
    EXPECT_ERR(cudaGetLastError(), cudaSuccess);
    works(3, "after a failed allocation");

    // An illegal address: sticky until the device is reset.
    unsigned long long target = (1ull << 57) + 4096;
    long long offset = (long long)(target - (unsigned long long)(uintptr_t)d) / 4;
    write_oob<<<1, 32>>>(d, offset);
    CK(cudaGetLastError()); // the launch itself is fine; the fault comes at synchronisation
    EXPECT_ERR(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    void *p = NULL;
    EXPECT_ERR(cudaMalloc(&p, 64), cudaErrorIllegalAddress);
    int h = 0;
    EXPECT_ERR(cudaMemcpy(&h, d, sizeof(h), cudaMemcpyDeviceToHost), cudaErrorIllegalAddress);
    fill<<<1, 32>>>(d, 9, 32);
    EXPECT_ERR(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    EXPECT_ERR(cudaGetLastError(), cudaErrorIllegalAddress);
    cudaStream_t st;
    EXPECT_ERR(cudaStreamCreate(&st), cudaErrorIllegalAddress); // still, after reading it

    // cudaDeviceReset gives the program a fresh context.
    CK(cudaDeviceReset());
    (void)cudaGetLastError(); // the thread's last error is still the one from before the reset
    EXPECT_ERR(cudaGetLastError(), cudaSuccess);
    works(4, "after cudaDeviceReset");

    // assert() in a kernel: nothing when it holds; when it fails, cudaErrorAssert at
    // synchronisation, sticky until cudaDeviceReset.
    CK(cudaMalloc(&d, 64 * sizeof(int)));
    checked<<<2, 32>>>(d, 64);
    CK(cudaDeviceSynchronize());
    checked<<<2, 32>>>(d, 40);
    CK(cudaGetLastError());
    EXPECT_ERR(cudaDeviceSynchronize(), cudaErrorAssert);
    EXPECT_ERR(cudaMalloc(&p, 64), cudaErrorAssert);
    CK(cudaDeviceReset());
    (void)cudaGetLastError();
    works(5, "after an assert and cudaDeviceReset");
    pass("invalid device, 2048 threads per block -> %s, 1 PiB -> %s, out-of-bounds store -> %s, "
         "failed assert -> %s (sticky until cudaDeviceReset)",
         cudaGetErrorName(cudaErrorInvalidConfiguration),
         cudaGetErrorName(cudaErrorMemoryAllocation), cudaGetErrorName(cudaErrorIllegalAddress),
         cudaGetErrorName(cudaErrorAssert));
    return 0;
}
