/* SPDX-License-Identifier: Apache-2.0
 *
 * SAXPY with a grid-stride loop (kernels/vecadd.cu: saxpy) on a grid smaller than the data,
 * checked bit for bit against the CPU (nvcc contracts alpha*x+y into one fma, so the
 * reference is fmaf).
 * Usage: saxpy vecadd.ptx [N]
 */
#include "hostcommon.h"

#include <math.h>

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod = host_setup("saxpy", argc, argv, &dev);
    int n = (int)host_arg(argc, argv, 2, 100003);
    float alpha = 2.5f;
    size_t bytes = (size_t)n * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes), *out = malloc(bytes);
    for (int i = 0; i < n; i++) {
        x[i] = host_randf();
        y[i] = host_randf() * 3.0f;
    }
    CUfunction f;
    CUdeviceptr dx, dy;
    CUstream s;
    CK(cuModuleGetFunction(&f, mod, "saxpy"));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&dx, bytes));
    CK(cuMemAlloc(&dy, bytes));
    CK(cuMemcpyHtoDAsync(dx, x, bytes, s));
    CK(cuMemcpyHtoDAsync(dy, y, bytes, s));
    void *params[] = {&n, &alpha, &dx, &dy};
    CK(cuLaunchKernel(f, 40, 1, 1, 128, 1, 1, 0, s, params, NULL));
    CK(cuMemcpyDtoHAsync(out, dy, bytes, s));
    CK(cuStreamSynchronize(s));
    for (int i = 0; i < n; i++) {
        float want = fmaf(x[i], alpha, y[i]);
        if (host_bits(out[i]) != host_bits(want))
            host_mismatch("y[%d] = %a, want %a", i, (double)out[i], (double)want);
    }
    CK(cuMemFree(dx));
    CK(cuMemFree(dy));
    CK(cuStreamDestroy(s));
    host_teardown(mod, dev);
    printf("saxpy: PASS n=%d grid=40x128 bit-exact\n", n);
    free(x);
    free(y);
    free(out);
    return 0;
}
