// SPDX-License-Identifier: Apache-2.0
// gpu_burn, the CUDA runtime version of the demo's workload (tests/hypervisor/gpu_burn.c is
// the driver-API one the hypervisor suites use): allocates VRAM with cudaMalloc, then keeps
// the GPU busy for SECONDS with a kernel spinning KERNEL_US on %globaltimer (launched with
// <<<>>>, a device-side counter of completed kernels), and reports what it got.
//
// usage: gpu_burn SECONDS VRAM_MIB [KERNEL_US] [NAME]
// Output (one line each, for scripts): "NAME vram_total_mib=N vram_alloc_mib=N",
// "NAME kernels=N seconds=S share_pct=P", or "NAME vram_refused mib=N total_mib=N
// error=cudaErrorMemoryAllocation" with exit status 3 when the allocation is refused.
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#include "spin.h"


static bool check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return false;
    fprintf(stderr, "gpu_burn: %s: %s\n", what, cudaGetErrorName(e));
    return true;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: gpu_burn SECONDS VRAM_MIB [KERNEL_US] [NAME]\n");
        return 2;
    }
    double seconds = atof(argv[1]);
    size_t mib = (size_t)strtoull(argv[2], NULL, 10);
    unsigned long long kernel_ns = (argc > 3 ? strtoull(argv[3], NULL, 10) : 2000) * 1000ull;
    const char *name = argc > 4 ? argv[4] : "gpu_burn";
    size_t freeb = 0, total = 0;
    if (check(cudaMemGetInfo(&freeb, &total), "cudaMemGetInfo"))
        return 1;
    void *buf = NULL;
    unsigned long long *done = NULL;
    cudaError_t e = mib ? cudaMalloc(&buf, mib << 20) : cudaSuccess;
    if (e != cudaSuccess) {
        printf("%s vram_refused mib=%zu total_mib=%zu error=%s\n", name, mib, total >> 20,
               cudaGetErrorName(e));
        return 3;
    }
    printf("%s vram_total_mib=%zu vram_alloc_mib=%zu\n", name, total >> 20, mib);
    fflush(stdout);
    if (check(cudaMalloc(&done, sizeof(*done)), "cudaMalloc(counter)") ||
        check(cudaMemset(done, 0, sizeof(*done)), "cudaMemset"))
        return 1;
    double t0 = now_s();
    unsigned long long launched = 0;
    while (now_s() - t0 < seconds) {
        spin_ns<<<1, 1>>>(kernel_ns, done);
        if (check(cudaGetLastError(), "<<<spin_ns>>>"))
            return 1;
        if (++launched % 32 == 0 && check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"))
            return 1;
    }
    if (check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"))
        return 1;
    double wall = now_s() - t0;
    unsigned long long completed = 0;
    if (check(cudaMemcpy(&completed, done, sizeof(completed), cudaMemcpyDeviceToHost),
              "cudaMemcpy"))
        return 1;
    printf("%s kernels=%llu seconds=%.2f share_pct=%.1f\n", name, completed, wall,
           100.0 * (double)completed * (double)kernel_ns / 1e9 / wall);
    cudaFree(done);
    cudaFree(buf);
    return 0;
}
