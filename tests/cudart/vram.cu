// SPDX-License-Identifier: Apache-2.0
// VRAM limits as a runtime program meets them, run under libtf_limiter.so with a limit of
// argv[1] MiB (the limiter suite): the device and cudaMemGetInfo report the limit; the 32 MiB
// __device__ array of this program counts against it once the module is in use; cudaMalloc,
// cudaMallocPitch and cudaMalloc3D past what is left fail with cudaErrorMemoryAllocation while
// smaller ones succeed; frees give the room back.
#include "check.h"

#define BIG (32u << 20)
#define MiB (1u << 20)

__device__ char big[BIG];

__global__ void touch(unsigned i)
{
    big[i] = 1;
}

int main(int argc, char **argv)
{
    prog = "vram";
    if (argc != 2 || atoi(argv[1]) < 96) {
        printf("usage: vram LIMIT_MIB (>= 96), run under the limiter with that VRAM limit\n");
        return 2;
    }
    size_t limit = (size_t)atoi(argv[1]) * MiB;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    size_t free_b, total_b;
    CK(cudaMemGetInfo(&free_b, &total_b));
    if (prop.totalGlobalMem != limit || total_b != limit || free_b > limit)
        mismatch("device memory %zu, cudaMemGetInfo free %zu total %zu: the limit is %zu",
                 prop.totalGlobalMem, free_b, total_b, limit);

    // The module's 32 MiB of variables are charged once it is in use.
    touch<<<1, 1>>>(BIG - 1);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemGetInfo(&free_b, &total_b));
    if (free_b > limit - BIG)
        mismatch("free %zu after the module's use: its %u bytes of variables are not counted",
                 free_b, BIG);
    size_t after_module = free_b;

    void *p = NULL, *q = NULL;
    EXPECT_ERR(cudaMalloc(&p, limit - 16 * MiB), cudaErrorMemoryAllocation);
    (void)cudaGetLastError();
    CK(cudaMalloc(&p, after_module - 16 * MiB)); // 16 MiB left
    EXPECT_ERR(cudaMalloc(&q, 32 * MiB), cudaErrorMemoryAllocation);
    (void)cudaGetLastError();

    size_t pitch;
    EXPECT_ERR(cudaMallocPitch(&q, &pitch, MiB, 32), cudaErrorMemoryAllocation);
    (void)cudaGetLastError();
    CK(cudaMallocPitch(&q, &pitch, MiB, 4));
    CK(cudaFree(q));

    cudaPitchedPtr pp;
    EXPECT_ERR(cudaMalloc3D(&pp, make_cudaExtent(MiB, 8, 4)), cudaErrorMemoryAllocation);
    (void)cudaGetLastError();
    CK(cudaMalloc3D(&pp, make_cudaExtent(MiB, 2, 2)));
    CK(cudaFree(pp.ptr));

    CK(cudaFree(p));
    CK(cudaMemGetInfo(&free_b, &total_b));
    if (free_b != after_module)
        mismatch("free %zu after freeing everything, %zu before", free_b, after_module);
    pass("limit %zu MiB reported; module variables (%u MiB) counted; cudaMalloc, "
         "cudaMallocPitch, cudaMalloc3D refused past the limit",
         limit / MiB, BIG / MiB);
    return 0;
}
