// SPDX-License-Identifier: Apache-2.0
//
// Shared scaffolding of the CUDA runtime test programs in tests/cudart/: ordinary programs
// built with plain nvcc (the user's default flags; static runtime, and each also with
// `-cudart shared`), so the same programs run on the simulated GPU, under the limiter and on a
// real GPU (scripts/gpu-check.sh). Each prints one result line
//   "<name>: PASS <details>"  or  "<name>: FAIL <what>: <cudaError name> (<message>)"
// and exits 0 (pass) or 1 (fail). Header-only: every program stays one translation unit.
#ifndef TF_TESTS_CUDART_CHECK_H
#define TF_TESTS_CUDART_CHECK_H

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

static const char *prog = "cudart";

static void fail_err(const char *what, cudaError_t e)
{
    printf("%s: FAIL %s: %s (%s)\n", prog, what, cudaGetErrorName(e), cudaGetErrorString(e));
    exit(1);
}

#define CK(expr)                                                                                   \
    do {                                                                                           \
        cudaError_t ck_ = (expr);                                                                  \
        if (ck_ != cudaSuccess)                                                                    \
            fail_err(#expr, ck_);                                                                  \
    } while (0)

// EXPECT_ERR(expr, code): the call must fail with exactly CODE.
#define EXPECT_ERR(expr, code)                                                                     \
    do {                                                                                           \
        cudaError_t ck_ = (expr);                                                                  \
        if (ck_ != (code)) {                                                                       \
            printf("%s: FAIL %s: %s, expected %s\n", prog, #expr, cudaGetErrorName(ck_),           \
                   cudaGetErrorName(code));                                                        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

__attribute__((format(printf, 1, 2))) static void mismatch(const char *fmt, ...)
{
    va_list ap;
    printf("%s: FAIL ", prog);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    exit(1);
}

__attribute__((format(printf, 1, 2))) static void pass(const char *fmt, ...)
{
    va_list ap;
    printf("%s: PASS ", prog);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

// Deterministic pseudo-random numbers (the same inputs on every machine).
static uint32_t rng_state = 0x12345678u;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

// A float in [-1, 1) with 16 significant bits (exact sums stay exact).
static float rndf(void)
{
    return (float)((int)(rnd() >> 16) - 32768) / 32768.0f;
}

static bool same_bits(float a, float b)
{
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y;
}

#endif
