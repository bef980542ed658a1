/* SPDX-License-Identifier: Apache-2.0
 *
 * Shared scaffolding of the driver-API host programs in tests/cuda/host/: plain C against the
 * CUDA toolkit's cuda.h, linked with -lcuda, so the same programs run on the simulated GPU
 * and on a real one (docs/sim.md). Each program prints one result line
 *   "<name>: PASS <details>"  or  "<name>: FAIL <what>: <CUDA error name or mismatch>"
 * and exits 0 (pass), 1 (fail) or 2 (bad usage / unreadable PTX).
 *
 * Header-only on purpose: every program stays a single translation unit.
 */
#ifndef TF_TESTS_CUDA_HOST_COMMON_H
#define TF_TESTS_CUDA_HOST_COMMON_H

#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *host_name = "host";

static inline void host_fail(const char *what, CUresult r)
{
    const char *n = NULL;
    cuGetErrorName(r, &n);
    printf("%s: FAIL %s: %s\n", host_name, what, n ? n : "unknown CUresult");
    exit(1);
}

#define CK(expr)                                                                                   \
    do {                                                                                           \
        CUresult ck_ = (expr);                                                                     \
        if (ck_ != CUDA_SUCCESS)                                                                   \
            host_fail(#expr, ck_);                                                                 \
    } while (0)

static inline void host_mismatch(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#include <stdarg.h>
static inline void host_mismatch(const char *fmt, ...)
{
    va_list ap;
    printf("%s: FAIL ", host_name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    exit(1);
}

/* Fails unless CALL returned WANT (an expected error code). */
static inline void host_expect(CUresult want, CUresult got, const char *what)
{
    if (got != want) {
        const char *w = NULL, *g = NULL;
        cuGetErrorName(want, &w);
        cuGetErrorName(got, &g);
        printf("%s: FAIL %s: %s, want %s\n", host_name, what, g ? g : "?", w ? w : "?");
        exit(1);
    }
}

/* Deterministic pseudo-random numbers (the same inputs on every machine). */
static uint32_t host_rng = 0x12345678u;
static inline uint32_t host_rand(void)
{
    host_rng ^= host_rng << 13;
    host_rng ^= host_rng >> 17;
    host_rng ^= host_rng << 5;
    return host_rng;
}

/* Uniform float in [-1, 1) with 24 random bits. */
static inline float host_randf(void)
{
    return (float)((int32_t)(host_rand() >> 8) - (1 << 23)) / (float)(1 << 23);
}

static inline uint32_t host_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Checks C = A + B bit for bit (the vecadd kernel's result). */
static inline void host_check_add(const float *a, const float *b, const float *c, int n,
                                  const char *what)
{
    for (int i = 0; i < n; i++)
        if (host_bits(c[i]) != host_bits(a[i] + b[i]))
            host_mismatch("%s: c[%d] = %a, want %a", what, i, (double)c[i], (double)(a[i] + b[i]));
}

/* Reads the PTX file named by argv[1] (NUL-terminated, caller frees). */
static inline char *host_read_ptx(int argc, char **argv)
{
    if (argc < 2) {
        printf("usage: %s KERNEL.ptx [args...]\n", host_name);
        exit(2);
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        printf("%s: FAIL cannot open %s\n", host_name, argv[1]);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    if (!text || fread(text, 1, (size_t)n, f) != (size_t)n) {
        printf("%s: FAIL cannot read %s\n", host_name, argv[1]);
        exit(2);
    }
    text[n] = 0;
    fclose(f);
    return text;
}

/* cuInit, device 0's primary context made current (as the CUDA runtime does), and the PTX
 * of argv[1] loaded (the JIT error log is printed when loading fails). */
static inline CUmodule host_setup(const char *name, int argc, char **argv, CUdevice *dev)
{
    host_name = name;
    char *ptx = host_read_ptx(argc, argv);
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, *dev));
    CK(cuCtxSetCurrent(ctx));
    char log[4096] = "";
    CUjit_option opt[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[2] = {log, (void *)(uintptr_t)sizeof(log)};
    CUmodule mod;
    CUresult r = cuModuleLoadDataEx(&mod, ptx, 2, opt, val);
    if (r != CUDA_SUCCESS) {
        printf("%s: JIT log: %s\n", name, log);
        host_fail("cuModuleLoadDataEx", r);
    }
    free(ptx);
    return mod;
}

static inline void host_teardown(CUmodule mod, CUdevice dev)
{
    CK(cuModuleUnload(mod));
    CK(cuCtxSetCurrent(NULL));
    CK(cuDevicePrimaryCtxRelease(dev));
}

static inline long host_arg(int argc, char **argv, int i, long dflt)
{
    return argc > i ? strtol(argv[i], NULL, 0) : dflt;
}

#endif
