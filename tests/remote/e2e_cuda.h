/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only driver-API steps the remote e2e children share (built against libtf_client).
 * Each returns 0, or fails the child like E2E_CU.
 */
#ifndef TF_TESTS_REMOTE_E2E_CUDA_H
#define TF_TESTS_REMOTE_E2E_CUDA_H

#include "e2e.h"

#include <cuda.h>

/* cuInit and device 0's primary context, current on this thread. */
static inline int e2e_ctx(void)
{
    E2E_CU(cuInit(0));
    CUcontext c;
    E2E_CU(cuDevicePrimaryCtxRetain(&c, 0));
    E2E_CU(cuCtxSetCurrent(c));
    return 0;
}

/* spin_ns of the timer PTX and its zeroed 8-byte device-side completion counter. */
static inline int e2e_spin_kernel(const char *timer_ptx, CUfunction *f, CUdeviceptr *done)
{
    CUmodule m;
    E2E_CU(cuModuleLoadData(&m, timer_ptx));
    E2E_CU(cuModuleGetFunction(f, m, "spin_ns"));
    E2E_CU(cuMemAlloc(done, 8));
    E2E_CU(cuMemsetD32(*done, 0, 2));
    return 0;
}

#endif
