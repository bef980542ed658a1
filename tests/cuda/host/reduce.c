/* SPDX-License-Identifier: Apache-2.0
 *
 * Reductions (kernels/reduce.cu): reduce_sum (dynamic shared memory tree, warp shuffles, one
 * 64-bit atomicAdd per block) and atomics_mix (global atomicMin/Max/Exch/CAS loops and a
 * shared-memory atomicAdd), checked exactly against the CPU.
 * Usage: reduce reduce.ptx [N]
 */
#include "hostcommon.h"

#include <limits.h>

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod = host_setup("reduce", argc, argv, &dev);
    int n = (int)host_arg(argc, argv, 2, 200003);
    int *in = malloc(sizeof(int) * (size_t)n);
    int64_t sum = 0;
    uint32_t usum = 0;
    int mn = INT_MAX, mx = INT_MIN;
    for (int i = 0; i < n; i++) {
        in[i] = (int)(host_rand() % 2000001u) - 1000000;
        sum += in[i];
        usum += (uint32_t)in[i];
        mn = in[i] < mn ? in[i] : mn;
        mx = in[i] > mx ? in[i] : mx;
    }
    CUfunction fsum, fmix;
    CK(cuModuleGetFunction(&fsum, mod, "reduce_sum"));
    CK(cuModuleGetFunction(&fmix, mod, "atomics_mix"));
    CUdeviceptr din, dout, dvals;
    CK(cuMemAlloc(&din, sizeof(int) * (size_t)n));
    CK(cuMemAlloc(&dout, 8));
    CK(cuMemAlloc(&dvals, 5 * sizeof(int)));
    CK(cuMemcpyHtoD(din, in, sizeof(int) * (size_t)n));
    CK(cuMemsetD32(dout, 0, 2));

    unsigned block = 256, grid = ((unsigned)n + 2 * block - 1) / (2 * block);
    void *p1[] = {&din, &n, &dout};
    CK(cuLaunchKernel(fsum, grid, 1, 1, block, 1, 1, block * sizeof(int), NULL, p1, NULL));
    uint64_t got = 0;
    CK(cuMemcpyDtoH(&got, dout, 8));
    if (got != (uint64_t)sum)
        host_mismatch("reduce_sum = %lld, want %lld", (long long)got, (long long)sum);

    int init[5] = {INT_MAX, INT_MIN, 0, 0, 0};
    CK(cuMemcpyHtoD(dvals, init, sizeof(init)));
    CUdeviceptr gmin = dvals, gmax = dvals + 4, gexch = dvals + 8, gcas = dvals + 12,
                total = dvals + 16;
    void *p2[] = {&din, &n, &gmin, &gmax, &gexch, &gcas, &total};
    CK(cuLaunchKernel(fmix, ((unsigned)n + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, p2, NULL));
    int v[5];
    CK(cuMemcpyDtoH(v, dvals, sizeof(v)));
    if (v[0] != mn || v[1] != mx)
        host_mismatch("atomicMin/Max = %d/%d, want %d/%d", v[0], v[1], mn, mx);
    int seen = 0;
    for (int i = 0; i < n && !seen; i++)
        seen = in[i] == v[2];
    if (!seen)
        host_mismatch("atomicExch left %d, which is no input value", v[2]);
    if (v[3] != n)
        host_mismatch("atomicCAS counter = %d, want %d", v[3], n);
    if ((uint32_t)v[4] != usum)
        host_mismatch("shared atomicAdd total = %u, want %u", (uint32_t)v[4], usum);
    CK(cuMemFree(din));
    CK(cuMemFree(dout));
    CK(cuMemFree(dvals));
    host_teardown(mod, dev);
    printf("reduce: PASS n=%d sum=%lld min=%d max=%d exact\n", n, (long long)sum, mn, mx);
    free(in);
    return 0;
}
