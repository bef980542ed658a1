/* SPDX-License-Identifier: Apache-2.0
 *
 * Managed memory (kernels/vecadd.cu: vecadd): the host writes the inputs straight into
 * cuMemAllocManaged memory, the kernel adds them, the host reads the result, with no copy,
 * for several rounds; with advice (read-mostly inputs, a preferred location), prefetches to
 * the device and back to the host on a stream, and the output singly attached to that
 * stream. Checked bit for bit, and through cuMemRangeGetAttribute and pointer attributes.
 * Usage: managed vecadd.ptx [N] [ROUNDS]
 */
#include "hostcommon.h"

static int range_int(CUmem_range_attribute attr, CUdeviceptr p, size_t n)
{
    int v = 0;
    CK(cuMemRangeGetAttribute(&v, 4, attr, p, n));
    return v;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod = host_setup("managed", argc, argv, &dev);
    int n = (int)host_arg(argc, argv, 2, 100000);
    int rounds = (int)host_arg(argc, argv, 3, 3);
    size_t bytes = (size_t)n * sizeof(float);
    int supported = 0, concurrent = 0;
    CK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, dev));
    CK(cuDeviceGetAttribute(&concurrent, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, dev));
    if (!supported || !concurrent)
        host_mismatch("device lacks (concurrent) managed memory");
    CUfunction f;
    CK(cuModuleGetFunction(&f, mod, "vecadd"));
    CUdeviceptr da, db, dc;
    CK(cuMemAllocManaged(&da, bytes, CU_MEM_ATTACH_GLOBAL));
    CK(cuMemAllocManaged(&db, bytes, CU_MEM_ATTACH_GLOBAL));
    CK(cuMemAllocManaged(&dc, bytes, CU_MEM_ATTACH_HOST));
    float *a = (float *)(uintptr_t)da, *b = (float *)(uintptr_t)db, *c = (float *)(uintptr_t)dc;
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuStreamAttachMemAsync(s, dc, 0, CU_MEM_ATTACH_SINGLE));
    CUmemLocation here = {CU_MEM_LOCATION_TYPE_DEVICE, dev}, host = {CU_MEM_LOCATION_TYPE_HOST, 0};
    CK(cuMemAdvise(da, bytes, CU_MEM_ADVISE_SET_READ_MOSTLY, here));
    CK(cuMemAdvise(db, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, here));
    unsigned block = 256, grid = ((unsigned)n + block - 1) / block;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) {
            a[i] = host_randf() * (float)(r + 1);
            b[i] = host_randf();
        }
        CK(cuMemPrefetchAsync(da, bytes, here, 0, s));
        CK(cuMemPrefetchAsync(db, bytes, here, 0, s));
        void *params[] = {&da, &db, &dc, &n};
        CK(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, s, params, NULL));
        CK(cuMemPrefetchAsync(dc, bytes, host, 0, s));
        CK(cuStreamSynchronize(s));
        host_check_add(a, b, c, n, "managed round");
    }
    if (range_int(CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY, da, bytes) != 1)
        host_mismatch("read-mostly advice not reported");
    if (range_int(CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION, db, bytes) != dev)
        host_mismatch("preferred location not reported");
    if (range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, da, bytes) != dev ||
        range_int(CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION, dc, bytes) != CU_DEVICE_CPU)
        host_mismatch("last prefetch locations not reported");
    int managed = 0;
    CK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, dc));
    if (!managed)
        host_mismatch("CU_POINTER_ATTRIBUTE_IS_MANAGED is 0");
    CK(cuMemFree(da));
    CK(cuMemFree(db));
    CK(cuMemFree(dc));
    CK(cuStreamDestroy(s));
    host_teardown(mod, dev);
    printf("managed: PASS n=%d rounds=%d bit-exact without copies\n", n, rounds);
    return 0;
}
