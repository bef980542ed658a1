/* SPDX-License-Identifier: Apache-2.0
 *
 * Vector add on the GPU (kernels/vecadd.cu: vecadd), checked bit for bit against the CPU.
 * Usage: vecadd vecadd.ptx [N]
 */
#include "hostcommon.h"

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod = host_setup("vecadd", argc, argv, &dev);
    int n = (int)host_arg(argc, argv, 2, (1 << 18) + 3); /* not a multiple of the block */
    size_t bytes = (size_t)n * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    for (int i = 0; i < n; i++) {
        a[i] = host_randf() * 1000.0f;
        b[i] = host_randf();
    }
    CUfunction f;
    CUdeviceptr da, db, dc;
    CK(cuModuleGetFunction(&f, mod, "vecadd"));
    CK(cuMemAlloc(&da, bytes));
    CK(cuMemAlloc(&db, bytes));
    CK(cuMemAlloc(&dc, bytes));
    CK(cuMemcpyHtoD(da, a, bytes));
    CK(cuMemcpyHtoD(db, b, bytes));
    CK(cuMemsetD32(dc, 0xFFFFFFFFu, (size_t)n));
    void *params[] = {&da, &db, &dc, &n};
    unsigned block = 256, grid = ((unsigned)n + block - 1) / block;
    CK(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL));
    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH(c, dc, bytes));
    for (int i = 0; i < n; i++)
        if (host_bits(c[i]) != host_bits(a[i] + b[i]))
            host_mismatch("c[%d] = %a, want %a", i, (double)c[i], (double)(a[i] + b[i]));
    CK(cuMemFree(da));
    CK(cuMemFree(db));
    CK(cuMemFree(dc));
    host_teardown(mod, dev);
    printf("vecadd: PASS n=%d bit-exact\n", n);
    free(a);
    free(b);
    free(c);
    return 0;
}
