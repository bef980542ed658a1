/* SPDX-License-Identifier: Apache-2.0
 *
 * Benchmark: the PTX engine. Runs the real tiled sgemm kernel (tests/cuda/kernels/sgemm.cu)
 * on 256x256 matrices and reports thread-instructions per second and the launch time, then
 * the per-launch overhead of an empty kernel. Prints `name: value unit` lines. The sgemm PTX
 * path is compiled in; argv[1] overrides it.
 */
#include "sim/ptx/ptx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static int cmp_range(const void *a, const void *b)
{
    const struct tf_ptx_range *x = a, *y = b;
    return x->base < y->base ? -1 : x->base > y->base;
}

static int bench_sgemm(const char *path)
{
    size_t len;
    char *text = read_file(path, &len);
    if (!text) {
        fprintf(stderr, "bench_ptx: cannot read %s\n", path);
        return 1;
    }
    struct tf_ptx_module *m;
    char err[512];
    if (tf_ptx_module_load(text, len, &m, err, sizeof(err)) != TF_PTX_OK) {
        fprintf(stderr, "bench_ptx: %s\n", err);
        free(text);
        return 1;
    }
    free(text);
    const struct tf_ptx_kernel *k = tf_ptx_module_kernel(m, "sgemm_tiled");
    int n = 256;
    size_t bytes = (size_t)n * n * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    for (int i = 0; i < n * n; i++) {
        a[i] = (float)(i % 7) * 0.25f;
        b[i] = (float)(i % 5) * 0.5f;
        c[i] = 0;
    }
    float alpha = 1.0f, beta = 0.0f;
    uint8_t params[48];
    const void *args[] = {&n, &n, &n, &alpha, &a, &b, &beta, &c};
    for (uint32_t i = 0; i < 8; i++) {
        uint32_t off, sz;
        tf_ptx_kernel_param(k, i, &off, &sz);
        memcpy(params + off, args[i], sz);
    }
    struct tf_ptx_range r[3] = {{(uint64_t)(uintptr_t)a, bytes, 0},
                                {(uint64_t)(uintptr_t)b, bytes, 0},
                                {(uint64_t)(uintptr_t)c, bytes, 0}};
    qsort(r, 3, sizeof(r[0]), cmp_range);
    struct tf_ptx_memview mv = {r, 3};
    struct tf_ptx_env env = {.sm_count = 132};
    struct tf_ptx_launch l = {.kernel = k,
                              .grid = {16, 16, 1},
                              .block = {16, 16, 1},
                              .params = params,
                              .params_size = sizeof(params),
                              .mem = &mv,
                              .env = &env};
    double best = 1e30;
    uint64_t insns = 0;
    for (int rep = 0; rep < 3; rep++) {
        uint64_t cnt = 0;
        double t0 = now();
        if (tf_ptx_launch_run(&l, &cnt, err, sizeof(err)) != TF_PTX_OK) {
            fprintf(stderr, "bench_ptx: %s\n", err);
            return 1;
        }
        double dt = now() - t0;
        if (dt < best)
            best = dt;
        insns = cnt;
    }
    printf("ptx_sgemm_256: %.0f insn/s\n", (double)insns / best);
    printf("ptx_sgemm_256_seconds: %.4f s\n", best);
    free(a);
    free(b);
    free(c);
    tf_ptx_module_destroy(m);
    return 0;
}

static int bench_empty(void)
{
    static const char ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n"
                              ".visible .entry empty()\n{\n\tret;\n}\n";
    struct tf_ptx_module *m;
    char err[256];
    if (tf_ptx_module_load(ptx, sizeof(ptx) - 1, &m, err, sizeof(err)) != TF_PTX_OK) {
        fprintf(stderr, "bench_ptx: %s\n", err);
        return 1;
    }
    struct tf_ptx_memview mv = {NULL, 0};
    struct tf_ptx_launch l = {.kernel = tf_ptx_module_kernel(m, "empty"),
                              .grid = {1, 1, 1},
                              .block = {32, 1, 1},
                              .mem = &mv};
    int reps = 20000;
    double t0 = now();
    for (int i = 0; i < reps; i++)
        if (tf_ptx_launch_run(&l, NULL, err, sizeof(err)) != TF_PTX_OK) {
            fprintf(stderr, "bench_ptx: %s\n", err);
            return 1;
        }
    double dt = now() - t0;
    printf("ptx_launch_empty: %.2f us\n", dt / reps * 1e6);
    tf_ptx_module_destroy(m);
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : TF_BENCH_SGEMM_PTX;
    if (bench_sgemm(path))
        return 1;
    return bench_empty();
}
