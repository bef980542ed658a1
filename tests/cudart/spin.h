// SPDX-License-Identifier: Apache-2.0
//
// The load kernel of the runtime programs that keep a GPU busy (burn.cu, gpu_burn.cu): spins
// NS nanoseconds on %globaltimer and counts completed kernels in *DONE; and a wall clock.
// Header-only, so each program stays one translation unit.
#ifndef TF_TESTS_CUDART_SPIN_H
#define TF_TESTS_CUDART_SPIN_H

#include <chrono>

__global__ void spin_ns(unsigned long long ns, unsigned long long *done)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
    if (threadIdx.x == 0 && blockIdx.x == 0)
        atomicAdd(done, 1ull);
}

static double now_s()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

#endif
