/* SPDX-License-Identifier: Apache-2.0
 *
 * Page-locked host memory (kernels/vecadd.cu: vecadd). Zero-copy: the kernel reads inputs
 * from cuMemHostAlloc(DEVICEMAP) memory and writes its output straight into malloc'd memory
 * registered with cuMemHostRegister(DEVICEMAP), through cuMemHostGetDevicePointer. Staged:
 * async copies between registered memory and device memory on a stream. Read-only
 * registration for an input. Checked bit for bit; plus the error codes of registering twice
 * and unregistering what is not registered, and cuMemHostGetFlags.
 * Usage: hostmem vecadd.ptx [N]
 */
#include "hostcommon.h"

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod = host_setup("hostmem", argc, argv, &dev);
    int n = (int)host_arg(argc, argv, 2, 70001);
    size_t bytes = (size_t)n * sizeof(float);
    int mappable = 0;
    CK(cuDeviceGetAttribute(&mappable, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, dev));
    if (!mappable)
        host_mismatch("device cannot map host memory");
    CUfunction f;
    CK(cuModuleGetFunction(&f, mod, "vecadd"));
    unsigned block = 256, grid = ((unsigned)n + block - 1) / block;

    /* Zero-copy: inputs in mapped pinned memory, output in registered user memory. */
    float *a, *b, *c;
    CK(cuMemHostAlloc((void **)&a, bytes, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    CK(cuMemHostAlloc((void **)&b, bytes, CU_MEMHOSTALLOC_DEVICEMAP));
    if (posix_memalign((void **)&c, 4096, bytes) != 0)
        host_mismatch("out of host memory");
    CK(cuMemHostRegister(c, bytes, CU_MEMHOSTREGISTER_DEVICEMAP));
    for (int i = 0; i < n; i++) {
        a[i] = host_randf() * 100.0f;
        b[i] = host_randf();
        c[i] = -1.0f;
    }
    CUdeviceptr da, db, dc;
    CK(cuMemHostGetDevicePointer(&da, a, 0));
    CK(cuMemHostGetDevicePointer(&db, b, 0));
    CK(cuMemHostGetDevicePointer(&dc, c, 0));
    void *params[] = {&da, &db, &dc, &n};
    CK(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL));
    CK(cuCtxSynchronize());
    host_check_add(a, b, c, n, "zero-copy");
    unsigned flags = 0;
    CK(cuMemHostGetFlags(&flags, a));
    if (!(flags & CU_MEMHOSTALLOC_DEVICEMAP) || !(flags & CU_MEMHOSTALLOC_PORTABLE))
        host_mismatch("cuMemHostGetFlags = %#x", flags);
    unsigned mt = 0;
    CK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)c));
    if (mt != CU_MEMORYTYPE_HOST)
        host_mismatch("registered memory has memory type %u", mt);
    host_expect(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, cuMemHostRegister(c, bytes, 0),
                "registering twice");

    /* Staged: async copies from and to registered memory, a read-only registered input. */
    float *x;
    if (posix_memalign((void **)&x, 4096, bytes) != 0)
        host_mismatch("out of host memory");
    for (int i = 0; i < n; i++)
        x[i] = host_randf();
    CK(cuMemHostRegister(x, bytes, CU_MEMHOSTREGISTER_READ_ONLY));
    CUstream s;
    CUdeviceptr d1, d2, d3;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&d1, bytes));
    CK(cuMemAlloc(&d2, bytes));
    CK(cuMemAlloc(&d3, bytes));
    CK(cuMemcpyHtoDAsync(d1, x, bytes, s));
    CK(cuMemcpyHtoDAsync(d2, a, bytes, s));
    void *p2[] = {&d1, &d2, &d3, &n};
    CK(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, p2, NULL));
    CK(cuMemcpyDtoHAsync(c, d3, bytes, s));
    CK(cuStreamSynchronize(s));
    host_check_add(x, a, c, n, "staged");
    CUdeviceptr dx;
    CK(cuMemHostGetDevicePointer(&dx, x, 0)); /* the read-only input, read in place */
    void *p3[] = {&dx, &db, &dc, &n};
    CK(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, p3, NULL));
    CK(cuStreamSynchronize(s));
    host_check_add(x, b, c, n, "read-only input");

    CK(cuMemHostUnregister(x));
    host_expect(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cuMemHostUnregister(x),
                "unregistering twice");
    CK(cuMemHostUnregister(c));
    CK(cuMemFree(d1));
    CK(cuMemFree(d2));
    CK(cuMemFree(d3));
    CK(cuStreamDestroy(s));
    CK(cuMemFreeHost(a));
    CK(cuMemFreeHost(b));
    free(c);
    free(x);
    host_teardown(mod, dev);
    printf("hostmem: PASS n=%d zero-copy, staged and read-only bit-exact\n", n);
    return 0;
}
