/* SPDX-License-Identifier: Apache-2.0
 *
 * Managed memory on the simulated driver: the host and kernels reading and writing the same
 * allocation without copies (both attach modes), advice and prefetches as
 * cuMemRangeGetAttribute(s) report them page by page, their argument checks, stream
 * attachment rules, pointer attributes, the device budget, and a library's __managed__
 * variables (one for the whole process, reached before any context exists).
 * Usage: test_managed vecadd.ptx
 */
#include "simtest.h"

#include <cuda.h>
#include <unistd.h>

/* The CUDA 8 forms (a device ordinal or CU_DEVICE_CPU), exported under the unversioned
 * names; cuda.h maps those names to the CUDA 12.2 forms that take a CUmemLocation. */
#undef cuMemAdvise
#undef cuMemPrefetchAsync
CUresult CUDAAPI cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                             CUdevice device);
CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                    CUstream hStream);

static const char *ptx_path;
static CUcontext ctx;
static CUmodule mod;
static CUfunction vecadd;
static size_t pg;

static int range_int(CUmem_range_attribute attr, CUdeviceptr p, size_t n)
{
    int v = 12345;
    CU_OK(cuMemRangeGetAttribute(&v, 4, attr, p, n));
    return v;
}

static void host_and_kernels_share_managed_memory(void **state)
{
    enum { N = 5000 };
    for (unsigned attach = CU_MEM_ATTACH_GLOBAL; attach <= CU_MEM_ATTACH_HOST; attach++) {
        CUdeviceptr a, b, c;
        CU_OK(cuMemAllocManaged(&a, N * sizeof(float), attach));
        CU_OK(cuMemAllocManaged(&b, N * sizeof(float), attach));
        CU_OK(cuMemAllocManaged(&c, N * sizeof(float), CU_MEM_ATTACH_GLOBAL));
        float *ha = (float *)(uintptr_t)a, *hb = (float *)(uintptr_t)b, *hc = (float *)(uintptr_t)c;
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < N; i++) {
                ha[i] = (float)(i + round);
                hb[i] = 0.25f * (float)i;
            }
            int n = N;
            void *p[] = {&a, &b, &c, &n};
            CU_OK(cuLaunchKernel(vecadd, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, p, NULL));
            CU_OK(cuCtxSynchronize());
            for (int i = 0; i < N; i++)
                assert_true(hc[i] == ha[i] + hb[i]);
        }
        int managed = 0;
        unsigned mt = 0;
        void *host = NULL;
        CU_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, c + 40));
        CU_OK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, c));
        CU_OK(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, c + 40));
        assert_int_equal(managed, 1);
        assert_int_equal(mt, CU_MEMORYTYPE_DEVICE);
        assert_ptr_equal(host, hc + 10);
        CU_OK(cuMemFree(a));
        CU_OK(cuMemFree(b));
        CU_OK(cuMemFree(c));
    }
    CUdeviceptr x;
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemAllocManaged(&x, 0, CU_MEM_ATTACH_GLOBAL));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemAllocManaged(&x, 64, CU_MEM_ATTACH_SINGLE));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemAllocManaged(NULL, 64, CU_MEM_ATTACH_GLOBAL));
}

static void advice_is_reported_page_by_page(void **state)
{
    CUdeviceptr m;
    CU_OK(cuMemAllocManaged(&m, 8 * pg, CU_MEM_ATTACH_GLOBAL));
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 8 * pg), 0);
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, 8 * pg),
                     CU_DEVICE_INVALID);
    /* Bytes 10 .. 2 pages + 10 round out to pages 0..2. */
    CU_OK(cuMemAdvise(m + 10, 2 * pg, CU_MEM_ADVISE_SET_READ_MOSTLY, 0));
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 3 * pg), 1);
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 4 * pg), 0);
    CU_OK(cuMemAdvise(m + pg, pg, CU_MEM_ADVISE_UNSET_READ_MOSTLY, 0));
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, pg), 1);
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, 2 * pg), 0);
    /* Preferred location: device 1 on the first half, the host on the second. */
    CUmemLocation dev1 = {CU_MEM_LOCATION_TYPE_DEVICE, 1}, host = {CU_MEM_LOCATION_TYPE_HOST, 0};
    CU_OK(cuMemAdvise_v2(m, 4 * pg, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, dev1));
    CU_OK(cuMemAdvise(m + 4 * pg, 4 * pg, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_DEVICE_CPU));
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, 4 * pg), 1);
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m + 4 * pg, pg),
                     CU_DEVICE_CPU);
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, m, 8 * pg),
                     CU_DEVICE_INVALID);
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, m, pg),
                     CU_MEM_LOCATION_TYPE_DEVICE);
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID, m, pg), 1);
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, m + 5 * pg, pg),
                     CU_MEM_LOCATION_TYPE_HOST);
    CU_OK(cuMemAdvise_v2(m, 8 * pg, CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION, host));
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE, m, 8 * pg),
                     CU_MEM_LOCATION_TYPE_INVALID);
    /* Accessed-by: listed only where set over the whole range; extra slots invalid. */
    CU_OK(cuMemAdvise(m, 8 * pg, CU_MEM_ADVISE_SET_ACCESSED_BY, 0));
    CU_OK(cuMemAdvise_v2(m, 2 * pg, CU_MEM_ADVISE_SET_ACCESSED_BY, host));
    int who[3];
    CU_OK(cuMemRangeGetAttribute(who, sizeof(who), CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m, pg));
    assert_int_equal(who[0], 0);
    assert_int_equal(who[1], CU_DEVICE_CPU);
    assert_int_equal(who[2], CU_DEVICE_INVALID);
    CU_OK(cuMemRangeGetAttribute(who, sizeof(who), CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m, 8 * pg));
    assert_int_equal(who[0], 0);
    assert_int_equal(who[1], CU_DEVICE_INVALID);
    CU_OK(cuMemAdvise(m, 8 * pg, CU_MEM_ADVISE_UNSET_ACCESSED_BY, 0));
    CU_OK(cuMemRangeGetAttribute(who, 4, CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY, m + 3 * pg, pg));
    assert_int_equal(who[0], CU_DEVICE_INVALID);
    /* Several at once. */
    int rm = -1, pref = -1;
    void *data[] = {&rm, &pref};
    size_t sizes[] = {4, 4};
    CUmem_range_attribute attrs[] = {CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY,
                                     CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION};
    CU_OK(cuMemRangeGetAttributes(data, sizes, attrs, 2, m, pg));
    assert_int_equal(rm, 1);
    assert_int_equal(pref, CU_DEVICE_INVALID);
    CU_OK(cuMemFree(m));
}

static void prefetches_are_recorded_in_stream_calls(void **state)
{
    CUdeviceptr m;
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemAllocManaged(&m, 4 * pg, CU_MEM_ATTACH_GLOBAL));
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, pg),
                     CU_DEVICE_INVALID);
    CU_OK(cuMemPrefetchAsync(m, 4 * pg, 0, s));
    CUmemLocation host = {CU_MEM_LOCATION_TYPE_HOST, 0};
    CU_OK(cuMemPrefetchAsync_v2(m + 2 * pg, 2 * pg, host, 0, s));
    CU_OK(cuStreamSynchronize(s));
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, 2 * pg), 0);
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m + 3 * pg, pg),
                     CU_DEVICE_CPU);
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, m, 4 * pg),
                     CU_DEVICE_INVALID);
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, m + 3 * pg, 1),
                     CU_MEM_LOCATION_TYPE_HOST);
    CUmemLocation numa = {CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 99};
    CU_OK(cuMemPrefetchAsync_v2(m, pg, numa, 0, s));
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, m, 1),
                     CU_MEM_LOCATION_TYPE_HOST_NUMA);
    assert_int_equal(range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID, m, 1), 0);
    /* Argument checks. */
    CU_IS(CUDA_ERROR_INVALID_DEVICE, cuMemPrefetchAsync(m, pg, 7, s));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemPrefetchAsync_v2(m, pg, host, 1, s));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemPrefetchAsync(m, 5 * pg, 0, s)); /* past the end */
    CU_IS(CUDA_ERROR_INVALID_HANDLE, cuMemPrefetchAsync(m, pg, 0, (CUstream)&m));
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, pg));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemPrefetchAsync(d, pg, 0, s)); /* not managed */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemAdvise(d, pg, CU_MEM_ADVISE_SET_READ_MOSTLY, 0));
    CU_IS(CUDA_ERROR_INVALID_VALUE,
          cuMemRangeGetAttribute(&(int){0}, 4, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, d, pg));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemAdvise(m, pg, (CUmem_advise)42, 0));
    CU_IS(CUDA_ERROR_INVALID_DEVICE, cuMemAdvise(m, pg, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, 9));
    CUmemLocation numa0 = {CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemAdvise_v2(m, pg, CU_MEM_ADVISE_SET_ACCESSED_BY, numa0));
    CU_IS(CUDA_ERROR_INVALID_VALUE,
          cuMemRangeGetAttribute(&(int){0}, 8, CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, m, pg));
    CU_OK(cuMemFree(d));
    CU_OK(cuMemFree(m));
    CU_OK(cuStreamDestroy(s));
}

static void stream_attachment_takes_whole_managed_allocations(void **state)
{
    CUdeviceptr m, d;
    CUstream s;
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuMemAllocManaged(&m, 3000, CU_MEM_ATTACH_HOST));
    CU_OK(cuMemAlloc(&d, 64));
    CU_OK(cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE));
    CU_OK(cuStreamAttachMemAsync(s, m, 3000, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuStreamAttachMemAsync(NULL, m, 0, CU_MEM_ATTACH_HOST));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuStreamAttachMemAsync(NULL, m, 0, CU_MEM_ATTACH_SINGLE));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuStreamAttachMemAsync(s, m, 100, CU_MEM_ATTACH_SINGLE));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuStreamAttachMemAsync(s, m + 64, 0, CU_MEM_ATTACH_SINGLE));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuStreamAttachMemAsync(s, d, 0, CU_MEM_ATTACH_SINGLE));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuStreamAttachMemAsync(s, m, 0, 8));
    /* A singly attached allocation is used on its stream. */
    unsigned v = 0;
    CU_OK(cuStreamAttachMemAsync(s, m, 0, CU_MEM_ATTACH_SINGLE));
    CU_OK(cuMemsetD32Async(m, 0xC0FFEE, 750, s));
    CU_OK(cuStreamSynchronize(s));
    v = ((unsigned *)(uintptr_t)m)[749];
    assert_int_equal(v, 0xC0FFEE);
    CU_OK(cuMemFree(m));
    CU_OK(cuMemFree(d));
    CU_OK(cuStreamDestroy(s));
}

static void managed_memory_is_charged_to_the_device(void **state)
{
    size_t f0, f1, t;
    CU_OK(cuMemGetInfo(&f0, &t));
    CUdeviceptr m;
    CU_OK(cuMemAllocManaged(&m, 8 << 20, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuMemGetInfo(&f1, &t));
    assert_int_equal(f0 - f1, 8 << 20);
    CU_IS(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocManaged(&m + 0, t, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuMemFree(m));
    CU_OK(cuMemGetInfo(&f1, &t));
    assert_int_equal(f0, f1);
}

/* A __managed__ variable as nvcc 13 emits it (initialised to 7), and a kernel adding to it. */
static const char managed_ptx[] = ".version 9.0\n.target sm_75\n.address_size 64\n"
                                  ".global .attribute(.managed) .align 4 .u32 counter = 7;\n"
                                  ".visible .entry bump(.param .u32 bump_param_0)\n{\n"
                                  "  .reg .b32 %r<3>;\n  .reg .b64 %rd<2>;\n"
                                  "  ld.param.u32 %r1, [bump_param_0];\n"
                                  "  mov.u64 %rd1, counter;\n"
                                  "  atom.global.add.u32 %r2, [%rd1], %r1;\n  ret;\n}\n";

/* The runtime asks for a library's __managed__ variables with no context current: they exist
 * once for the process, the same memory in every context (and for the host), initialised
 * from the image, not the application's to free, and gone with the library. */
static void library_managed_variables_belong_to_the_whole_library(void **state)
{
    CUcontext saved;
    CU_OK(cuCtxPopCurrent(&saved));
    CUlibrary lib;
    CU_OK(cuLibraryLoadData(&lib, managed_ptx, NULL, NULL, 0, NULL, NULL, 0));
    CUdeviceptr var;
    size_t size = 0;
    CU_OK(cuLibraryGetManaged(&var, &size, lib, "counter"));
    assert_int_equal(size, 4);
    volatile unsigned *host = (volatile unsigned *)(uintptr_t)var;
    assert_int_equal(*host, 7);
    CU_IS(CUDA_ERROR_NOT_FOUND, cuLibraryGetManaged(&var, &size, lib, "nothing"));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuLibraryGetManaged(&var, &size, lib, NULL));
    *host = 100;

    /* Kernels of two contexts (two devices) add to the same variable. */
    CUkernel k;
    CU_OK(cuLibraryGetKernel(&k, lib, "bump"));
    unsigned add[2] = {1, 20};
    CUcontext c2;
    CU_OK(cuCtxCreate(&c2, NULL, 0, 1));
    for (int i = 0; i < 2; i++) {
        CU_OK(cuCtxSetCurrent(i ? c2 : saved));
        void *p[] = {&add[i]};
        CU_OK(cuLaunchKernel((CUfunction)k, 1, 1, 1, 1, 1, 1, 0, NULL, p, NULL));
        CU_OK(cuCtxSynchronize());
        CUdeviceptr g;
        CU_OK(cuLibraryGetGlobal(&g, &size, lib, "counter"));
        assert_true(g == var);
    }
    assert_int_equal(*host, 121);
    int managed = 0;
    CU_OK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, var));
    assert_int_equal(managed, 1);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemFree(var));
    CU_OK(cuCtxDestroy(c2));
    CU_OK(cuCtxSetCurrent(saved));
    assert_int_equal(*host, 121); /* a context going does not take it */
    CU_OK(cuLibraryUnload(lib));
    CU_IS(CUDA_ERROR_INVALID_VALUE,
          cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, var));
}

static int setup(void **state)
{
    pg = (size_t)sysconf(_SC_PAGESIZE);
    char *ptx = simtest_slurp(ptx_path);
    CU_OK(cuInit(0));
    CU_OK(cuCtxCreate(&ctx, NULL, 0, 0));
    CU_OK(cuModuleLoadData(&mod, ptx));
    CU_OK(cuModuleGetFunction(&vecadd, mod, "vecadd"));
    free(ptx);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s vecadd.ptx\n", argv[0]);
        return 2;
    }
    ptx_path = argv[1];
    simtest_env("L4:256Mi,T4");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(host_and_kernels_share_managed_memory),
        cmocka_unit_test(advice_is_reported_page_by_page),
        cmocka_unit_test(prefetches_are_recorded_in_stream_calls),
        cmocka_unit_test(stream_attachment_takes_whole_managed_allocations),
        cmocka_unit_test(managed_memory_is_charged_to_the_device),
        cmocka_unit_test(library_managed_variables_belong_to_the_whole_library),
    };
    int rc = cmocka_run_group_tests(tests, setup, NULL);
    simtest_cleanup();
    return rc;
}
