/* SPDX-License-Identifier: Apache-2.0
 *
 * Pitched copies and memsets of the simulated driver (cuMemcpy2D/3D, cuMemsetD2D*): what
 * they refuse. Their results are checked by the runtime program tests/cudart/pitched.cu
 * (cudaMemcpy2D/3D, cudaMemset2D/3D); here: a pitch below the width, rows leaving the
 * allocation, CUDA arrays (not simulated), misaligned 2D memsets, and empty transfers.
 */
#include "simtest.h"

#include <cuda.h>

static CUcontext ctx;

static int setup(void **state)
{
    simtest_env("L4");
    if (cuInit(0) != CUDA_SUCCESS || cuCtxCreate(&ctx, NULL, 0, 0) != CUDA_SUCCESS)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    cuCtxDestroy(ctx);
    simtest_cleanup();
    return 0;
}

static void bad_pitched_transfers_are_refused_before_anything_is_queued(void **state)
{
    CUdeviceptr d;
    size_t pitch;
    CU_OK(cuMemAllocPitch(&d, &pitch, 100, 10, 4));
    assert_true(pitch >= 100);
    char host[4096];
    CUDA_MEMCPY2D c = {0};
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = host;
    c.srcPitch = 100;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = d;
    c.dstPitch = pitch;
    c.WidthInBytes = 100;
    c.Height = 10;
    CU_OK(cuMemcpy2D(&c));
    c.srcPitch = 50; /* below the width */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D(&c));
    c.srcPitch = 100;
    c.Height = 11; /* one row past the allocation */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D(&c));
    c.Height = 10;
    c.dstXInBytes = pitch; /* starts in the next row's place: the last row leaves it */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D(&c));
    c.dstXInBytes = 0;
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    CU_IS(CUDA_ERROR_NOT_SUPPORTED, cuMemcpy2D(&c));
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.WidthInBytes = 0; /* nothing to do */
    CU_OK(cuMemcpy2D(&c));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D(NULL));

    CUDA_MEMCPY3D c3 = {0};
    c3.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c3.srcDevice = d;
    c3.srcPitch = pitch;
    c3.srcHeight = 5;
    c3.dstMemoryType = CU_MEMORYTYPE_HOST;
    c3.dstHost = host;
    c3.dstPitch = 100;
    c3.dstHeight = 5;
    c3.WidthInBytes = 100;
    c3.Height = 5;
    c3.Depth = 2;
    CU_OK(cuMemcpy3D(&c3));
    c3.Depth = 3; /* a third plane of 5 rows leaves the 10-row allocation */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D(&c3));
    c3.Depth = 2;
    c3.srcHeight = 4; /* planes shorter than the copy */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D(&c3));
    c3.srcHeight = 5;
    c3.srcLOD = 1;
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D(&c3));

    CU_OK(cuMemsetD2D32(d, pitch, 7, 25, 10));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D32(d + 2, pitch, 7, 25, 10)); /* misaligned */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D32(d, pitch, 7, 25, 11));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D8(d, 10, 7, 25, 2)); /* pitch < width */
    CU_OK(cuMemsetD2D8Async(d, pitch, 1, 100, 10, NULL));
    CU_OK(cuCtxSynchronize());
    unsigned char row[100];
    CU_OK(cuMemcpyDtoH(row, d + 9 * pitch, sizeof(row)));
    for (int i = 0; i < 100; i++)
        assert_int_equal(row[i], 1);
    CU_OK(cuMemFree(d));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_pitched_transfers_are_refused_before_anything_is_queued),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
