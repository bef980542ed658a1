/* SPDX-License-Identifier: Apache-2.0
 *
 * Page-locked host memory of the simulated driver: kernels reading and writing memory from
 * cuMemHostAlloc and cuMemHostRegister through its device pointer (zero-copy), read-only
 * registrations (a kernel store is an illegal address, sticky to its context), the error
 * codes of overlapping, unmapped and missing registrations, cuMemHostGetFlags,
 * cuMemHostGetDevicePointer and pointer attributes, and what context destruction does to
 * each kind.
 * Usage: test_hostmem vecadd.ptx
 */
#include "simtest.h"

#include <cuda.h>
#include <sys/mman.h>

static const char *ptx_path;
static char *ptx;
static CUcontext ctx;

static CUfunction vecadd(CUmodule *mod)
{
    CUfunction f;
    CU_OK(cuModuleLoadData(mod, ptx));
    CU_OK(cuModuleGetFunction(&f, *mod, "vecadd"));
    return f;
}

static CUresult add(CUfunction f, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int n)
{
    void *p[] = {&a, &b, &c, &n};
    CUresult r = cuLaunchKernel(f, (unsigned)(n + 63) / 64, 1, 1, 64, 1, 1, 0, NULL, p, NULL);
    return r ? r : cuCtxSynchronize();
}

static void kernels_use_mapped_and_registered_host_memory_in_place(void **state)
{
    enum { N = 3000 };
    CUmodule mod;
    CUfunction f = vecadd(&mod);
    float *a, *b;
    CU_OK(cuMemHostAlloc((void **)&a, N * sizeof(float),
                         CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    CU_OK(cuMemHostAlloc((void **)&b, N * sizeof(float), CU_MEMHOSTALLOC_WRITECOMBINED));
    float *c =
        mmap(NULL, N * sizeof(float), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(c != MAP_FAILED);
    CU_OK(cuMemHostRegister(c, N * sizeof(float), CU_MEMHOSTREGISTER_DEVICEMAP));
    for (int i = 0; i < N; i++) {
        a[i] = (float)i * 0.5f;
        b[i] = (float)(N - i);
        c[i] = -1.0f;
    }
    CUdeviceptr da, db, dc;
    CU_OK(cuMemHostGetDevicePointer(&da, a, 0));
    CU_OK(cuMemHostGetDevicePointer(&db, b, 0));
    CU_OK(cuMemHostGetDevicePointer(&dc, c, 0));
    CU_OK(add(f, da, db, dc, N));
    for (int i = 0; i < N; i++)
        assert_true(c[i] == a[i] + b[i]);
    /* An interior address maps too; the flag argument must be 0. */
    CUdeviceptr mid;
    CU_OK(cuMemHostGetDevicePointer(&mid, c + 100, 0));
    assert_true(mid == dc + 400);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostGetDevicePointer(&mid, c, 1));
    int local;
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostGetDevicePointer(&mid, &local, 0));
    unsigned mt = 0, flags = 0;
    CU_OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, dc));
    assert_int_equal(mt, CU_MEMORYTYPE_HOST);
    void *hp = NULL;
    CU_OK(cuPointerGetAttribute(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, dc + 8));
    assert_ptr_equal(hp, (char *)c + 8);
    CU_OK(cuMemHostGetFlags(&flags, a));
    assert_int_equal(flags, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
    CU_OK(cuMemHostGetFlags(&flags, b));
    assert_int_equal(flags, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostGetFlags(&flags, c)); /* a registration */
    /* Unregistered, the memory is the application's again and no longer device-reachable. */
    CU_OK(cuMemHostUnregister(c));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostGetDevicePointer(&mid, c, 0));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD((CUdeviceptr)c, a, 16));
    c[0] = 5.0f;
    assert_true(c[0] == 5.0f);
    munmap(c, N * sizeof(float));
    CU_OK(cuMemFreeHost(a));
    CU_OK(cuMemFreeHost(b));
    CU_OK(cuModuleUnload(mod));
}

static void registrations_are_checked(void **state)
{
    size_t pg = 4096;
    char *m = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(m != MAP_FAILED);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostRegister(NULL, pg, 0));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostRegister(m, 0, 0));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostRegister(m, pg, 0x80));
    CU_IS(CUDA_ERROR_NOT_SUPPORTED, cuMemHostRegister(m, pg, CU_MEMHOSTREGISTER_IOMEMORY));
    CU_OK(cuMemHostRegister(m + pg, 2 * pg, CU_MEMHOSTREGISTER_PORTABLE));
    CU_IS(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, cuMemHostRegister(m, 2 * pg, 0));
    CU_IS(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, cuMemHostRegister(m + 2 * pg, 10, 0));
    CU_OK(cuMemHostRegister(m, pg, 0)); /* adjacent is fine */
    CU_IS(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cuMemHostUnregister(m + 2 * pg)); /* interior */
    CU_IS(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cuMemHostUnregister(m + 3 * pg));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(m)); /* registered, not allocated */
    CU_OK(cuMemHostUnregister(m + pg));
    CU_IS(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cuMemHostUnregister(m + pg));
    CU_OK(cuMemHostUnregister(m));
    munmap(m + 2 * pg, 2 * pg); /* an unmapped range cannot be registered */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostRegister(m + pg, 2 * pg, 0));
    munmap(m, 2 * pg);
    /* Device memory is not host memory. */
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, pg));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostRegister((void *)(uintptr_t)d, pg, 0));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostGetFlags(&(unsigned){0}, (void *)(uintptr_t)d));
    CU_OK(cuMemFree(d));
    void *h;
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostAlloc(&h, 64, 0x40));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostAlloc(&h, 0, 0));
}

static void read_only_registrations_fault_on_kernel_stores(void **state)
{
    enum { N = 256 };
    static float in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = (float)i;
    CUcontext c2;
    CU_OK(cuCtxCreate(&c2, NULL, 0, 0));
    CUmodule mod;
    CUfunction f = vecadd(&mod);
    CU_OK(cuMemHostRegister(in, sizeof(in), CU_MEMHOSTREGISTER_READ_ONLY));
    CU_OK(cuMemHostRegister(out, sizeof(out), 0));
    unsigned acc = 0;
    CU_OK(cuPointerGetAttribute(&acc, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, (CUdeviceptr)in));
    assert_int_equal(acc, CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ);
    CU_OK(add(f, (CUdeviceptr)in, (CUdeviceptr)in, (CUdeviceptr)out, N)); /* reads are fine */
    for (int i = 0; i < N; i++)
        assert_true(out[i] == 2.0f * (float)i);
    CU_IS(CUDA_ERROR_ILLEGAL_ADDRESS,
          add(f, (CUdeviceptr)out, (CUdeviceptr)out, (CUdeviceptr)in, N));
    CU_IS(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize()); /* sticky */
    assert_true(in[5] == 5.0f);
    /* The broken context goes, and its registrations with it: the ranges are free again. */
    CU_OK(cuCtxDestroy(c2));
    CU_OK(cuCtxSetCurrent(ctx));
    CU_OK(cuMemHostRegister(in, sizeof(in), 0));
    CU_OK(cuMemHostUnregister(in));
}

static void context_destruction_frees_allocations_and_drops_registrations(void **state)
{
    CUcontext c2;
    CU_OK(cuCtxCreate(&c2, NULL, 0, 0));
    void *h;
    static char user[8192];
    CU_OK(cuMemHostAlloc(&h, 4096, CU_MEMHOSTALLOC_PORTABLE));
    CU_OK(cuMemHostRegister(user, sizeof(user), CU_MEMHOSTREGISTER_PORTABLE));
    CUcontext owner = NULL;
    CU_OK(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)user));
    assert_ptr_equal(owner, c2);
    CU_OK(cuCtxDestroy(c2));
    CU_OK(cuCtxSetCurrent(ctx));
    CUdeviceptr d;
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostGetDevicePointer(&d, h, 0));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemHostGetDevicePointer(&d, user, 0));
    user[100] = 1; /* still the application's memory */
}

static int setup(void **state)
{
    ptx = simtest_slurp(ptx_path);
    CU_OK(cuInit(0));
    CU_OK(cuCtxCreate(&ctx, NULL, 0, 0));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s vecadd.ptx\n", argv[0]);
        return 2;
    }
    ptx_path = argv[1];
    simtest_env("L4");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kernels_use_mapped_and_registered_host_memory_in_place),
        cmocka_unit_test(registrations_are_checked),
        cmocka_unit_test(read_only_registrations_fault_on_kernel_stores),
        cmocka_unit_test(context_destruction_frees_allocations_and_drops_registrations),
    };
    int rc = cmocka_run_group_tests(tests, setup, NULL);
    free(ptx);
    simtest_cleanup();
    return rc;
}
