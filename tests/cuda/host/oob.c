/* SPDX-License-Identifier: Apache-2.0
 *
 * A kernel that writes far outside its buffer (kernels/oob.cu): the launch itself succeeds,
 * the next synchronising call reports CUDA_ERROR_ILLEGAL_ADDRESS, and the context stays
 * broken (sticky error) for every later call, as on hardware.
 *
 * The write goes to 2^57 + 4 KiB, an address that is mapped nowhere on any machine: above
 * every GPU's virtual address range (49 bits up to Hopper) and not a canonical host address
 * even with 5-level paging, so a GPU that can reach pageable host memory (HMM/ATS) faults on
 * it too; were the high bits ignored, the low 4 KiB page is never mapped either. A small
 * overrun (past the end of the buffer but inside the driver's 2 MiB allocation granule) is
 * not detected by real GPUs and so is not tested here; the simulator would report it.
 * Usage: oob oob.ptx
 */
#include "hostcommon.h"

#define EXPECT(want, expr)                                                                         \
    do {                                                                                           \
        CUresult r_ = (expr);                                                                      \
        if (r_ != (want))                                                                          \
            host_fail(#expr " (want CUDA_ERROR_ILLEGAL_ADDRESS)", r_);                             \
    } while (0)

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod = host_setup("oob", argc, argv, &dev);
    CUfunction f;
    CUdeviceptr p, q;
    CK(cuModuleGetFunction(&f, mod, "write_oob"));
    CK(cuMemAlloc(&p, 4096));
    CUdeviceptr target = (1ULL << 57) + 4096;
    long long offset = (long long)(target - p) / 4; /* p[offset] is at target */
    void *params[] = {&p, &offset};
    CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    int x;
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemcpyDtoH(&x, p, 4));
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemAlloc(&q, 16));
    EXPECT(CUDA_ERROR_ILLEGAL_ADDRESS, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    /* Only resetting the (primary) context makes the device usable again. */
    CK(cuCtxSetCurrent(NULL));
    CK(cuDevicePrimaryCtxReset(dev));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuMemAlloc(&q, 16));
    CK(cuMemFree(q));
    CK(cuCtxSetCurrent(NULL));
    CK(cuDevicePrimaryCtxRelease(dev));
    (void)mod; /* unloaded with the reset context */
    printf("oob: PASS CUDA_ERROR_ILLEGAL_ADDRESS, sticky until reset\n");
    return 0;
}
