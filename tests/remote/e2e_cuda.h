/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only driver-API steps the remote e2e children share (built against libtf_client).
 * Each returns 0, or fails the child like E2E_CU.
 */
#ifndef TF_TESTS_REMOTE_E2E_CUDA_H
#define TF_TESTS_REMOTE_E2E_CUDA_H

#include "e2e.h"

#include <cuda.h>
#include <stdatomic.h>
#include <time.h>

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

static inline double e2e_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Keeps 4 launches of spin_ns (NS ns each, from e2e_spin_kernel) in flight on a stream of its
 * own for SECS, after adding one to *STARTED (memory shared with the parent) once the stream
 * is ready. Every kernel must have run: the device-side counter must equal the launches.
 * *LAUNCHED: the launches, *ELAPSED: seconds from the first launch to the last completion. */
static inline int e2e_keep_busy(CUfunction f, CUdeviceptr done, unsigned long long ns, double secs,
                                _Atomic int *started, unsigned long long *launched, double *elapsed)
{
    CUstream s;
    E2E_CU(cuStreamCreate(&s, 0));
    CUevent ev[4];
    for (int i = 0; i < 4; i++)
        E2E_CU(cuEventCreate(&ev[i], 0));
    void *p[] = {&ns, &done};
    E2E_CU(cuStreamSynchronize(s));
    (*started)++;
    double t0 = e2e_now_s(), end = t0 + secs;
    unsigned long long i = 0;
    while (e2e_now_s() < end) {
        if (i >= 4)
            E2E_CU(cuEventSynchronize(ev[i % 4]));
        E2E_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, p, NULL));
        E2E_CU(cuEventRecord(ev[i % 4], s));
        i++;
    }
    E2E_CU(cuStreamSynchronize(s));
    *elapsed = e2e_now_s() - t0;
    unsigned long long got = 0;
    E2E_CU(cuMemcpyDtoH(&got, done, 8));
    E2E_CHECK(got == i);
    *launched = i;
    return 0;
}

#endif
