// SPDX-License-Identifier: Apache-2.0
//
// The load kernel of the runtime programs that keep a GPU busy (burn.cu, gpu_burn.cu): spins
// NS nanoseconds on %globaltimer and counts completed kernels in *DONE (tests/cuda/kernels/
// timer.cu, compiled into the program); and a wall clock.
// Header-only, so each program stays one translation unit.
#ifndef TF_TESTS_CUDART_SPIN_H
#define TF_TESTS_CUDART_SPIN_H

#include <chrono>

// extern "C" spin_ns(ns, done): the same kernel the driver-API programs load as PTX.
#include "../cuda/kernels/timer.cu"

static double now_s()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

#endif
