/* SPDX-License-Identifier: Apache-2.0
 *
 * The PTX engine runs the real nvcc kernels of tests/cuda/kernels (vecadd, saxpy, tiled
 * sgemm, reduction, atomics, integer/float/fast-math ops, the %globaltimer spin, the
 * out-of-bounds writer) on malloc'd buffers, and the results match CPU references computed
 * here with the same float operations in the same order (fma where the PTX has fma),
 * bit for bit; approximations stay inside the PTX ISA's error bounds.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "ptxtest.h"

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void assert_float_bits(float got, float want, const char *what, size_t i)
{
    if (f2u(got) != f2u(want))
        fail_msg("%s[%zu]: got %a (0x%08x), want %a (0x%08x)", what, i, (double)got, f2u(got),
                 (double)want, f2u(want));
}

static void vecadd_matches_cpu_bit_exactly(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("vecadd");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "vecadd");
    int n = 1000; /* not a multiple of the block */
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    float *c = calloc(n, sizeof(float));
    uint32_t seed = 1;
    for (int i = 0; i < n; i++) {
        a[i] = ptxt_randf(&seed, -100, 100);
        b[i] = ptxt_randf(&seed, -1e-3f, 1e-3f);
    }
    struct tf_ptx_range bufs[] = {PTXT_RANGE(a, n * 4), PTXT_RANGE(b, n * 4), PTXT_RANGE(c, n * 4)};
    struct ptxt_arg args[] = {PTXT_ARG(a), PTXT_ARG(b), PTXT_ARG(c), PTXT_ARG(n)};
    ptxt_launch_ok(k, (struct ptxt_dim){(n + 255) / 256, 1, 1}, (struct ptxt_dim){256, 1, 1}, 0,
                   args, 4, bufs, 3);
    for (int i = 0; i < n; i++)
        assert_float_bits(c[i], a[i] + b[i], "c", (size_t)i);
    free(a);
    free(b);
    free(c);
    tf_ptx_module_destroy(m);
}

static void saxpy_grid_stride_loop_covers_every_element(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("vecadd");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "saxpy");
    int n = 5003;
    float alpha = 1.7f;
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float)),
          *ref = malloc(n * sizeof(float));
    uint32_t seed = 7;
    for (int i = 0; i < n; i++) {
        x[i] = ptxt_randf(&seed, -10, 10);
        y[i] = ptxt_randf(&seed, -10, 10);
        ref[i] = fmaf(x[i], alpha, y[i]); /* the PTX: fma.rn.f32 x, alpha, y */
    }
    struct tf_ptx_range bufs[] = {PTXT_RANGE(x, n * 4), PTXT_RANGE(y, n * 4)};
    struct ptxt_arg args[] = {PTXT_ARG(n), PTXT_ARG(alpha), PTXT_ARG(x), PTXT_ARG(y)};
    /* 3 blocks of 96 threads: each thread loops over ~17 elements */
    ptxt_launch_ok(k, (struct ptxt_dim){3, 1, 1}, (struct ptxt_dim){96, 1, 1}, 0, args, 4, bufs, 2);
    for (int i = 0; i < n; i++)
        assert_float_bits(y[i], ref[i], "y", (size_t)i);
    free(x);
    free(y);
    free(ref);
    tf_ptx_module_destroy(m);
}

/* CPU reference of sgemm_tiled as its PTX computes it: a chain of fma over zero-padded 16-wide
 * tiles, then C = fma(acc, alpha, C * beta). */
static void sgemm_ref(int M, int N, int K, float alpha, const float *A, const float *B, float beta,
                      float *C)
{
    int kp = (K + 15) / 16 * 16;
    for (int r = 0; r < M; r++) {
        for (int c = 0; c < N; c++) {
            float acc = 0.0f;
            for (int k = 0; k < kp; k++) {
                float a = k < K ? A[r * K + k] : 0.0f, b = k < K ? B[k * N + c] : 0.0f;
                acc = fmaf(a, b, acc);
            }
            C[r * N + c] = fmaf(acc, alpha, C[r * N + c] * beta);
        }
    }
}

static void run_sgemm(int M, int N, int K, float alpha, float beta)
{
    struct tf_ptx_module *m = ptxt_load("sgemm");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "sgemm_tiled");
    float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4);
    float *C = malloc((size_t)M * N * 4), *R = malloc((size_t)M * N * 4);
    uint32_t seed = (uint32_t)(M * 131 + N * 7 + K);
    for (int i = 0; i < M * K; i++)
        A[i] = ptxt_randf(&seed, -1, 1);
    for (int i = 0; i < K * N; i++)
        B[i] = ptxt_randf(&seed, -1, 1);
    for (int i = 0; i < M * N; i++)
        C[i] = R[i] = ptxt_randf(&seed, -1, 1);
    sgemm_ref(M, N, K, alpha, A, B, beta, R);
    struct tf_ptx_range bufs[] = {PTXT_RANGE(A, (size_t)M * K * 4),
                                  PTXT_RANGE(B, (size_t)K * N * 4),
                                  PTXT_RANGE(C, (size_t)M * N * 4)};
    struct ptxt_arg args[] = {PTXT_ARG(M), PTXT_ARG(N), PTXT_ARG(K),    PTXT_ARG(alpha),
                              PTXT_ARG(A), PTXT_ARG(B), PTXT_ARG(beta), PTXT_ARG(C)};
    ptxt_launch_ok(k, (struct ptxt_dim){(uint32_t)(N + 15) / 16, (uint32_t)(M + 15) / 16, 1},
                   (struct ptxt_dim){16, 16, 1}, 0, args, 8, bufs, 3);
    for (int i = 0; i < M * N; i++)
        assert_float_bits(C[i], R[i], "C", (size_t)i);
    free(A);
    free(B);
    free(C);
    free(R);
    tf_ptx_module_destroy(m);
}

static void tiled_sgemm_256_matches_cpu(void **state)
{
    (void)state;
    run_sgemm(256, 256, 256, 1.0f, 0.0f);
}

static void tiled_sgemm_odd_sizes_match_cpu(void **state)
{
    (void)state;
    run_sgemm(33, 17, 45, 0.75f, -1.25f); /* no dimension a multiple of 16 */
    run_sgemm(16, 48, 1, 2.0f, 0.5f);
    run_sgemm(5, 3, 0, 1.0f, 1.0f); /* K = 0: the loop never runs */
}

static void reduction_with_dynamic_shared_shfl_and_atomic_u64(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("reduce");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "reduce_sum");
    int n = 100003;
    int *in = malloc(n * sizeof(int));
    unsigned long long out = 0, want = 0;
    uint32_t seed = 3;
    for (int i = 0; i < n; i++) {
        in[i] = (int)(ptxt_rand(&seed) % 2000) - 1000;
        want += (unsigned long long)(long long)in[i];
    }
    /* per block: the block sum as a signed int, widened, added: same as the total mod 2^64 */
    struct tf_ptx_range bufs[] = {PTXT_RANGE(in, n * 4), PTXT_RANGE(&out, 8)};
    uint32_t threads = 256;
    unsigned long long *outp = &out;
    struct ptxt_arg args[] = {PTXT_ARG(in), PTXT_ARG(n), PTXT_ARG(outp)};
    ptxt_launch_ok(k, (struct ptxt_dim){(n + 2 * threads - 1) / (2 * threads), 1, 1},
                   (struct ptxt_dim){threads, 1, 1}, threads * 4, args, 3, bufs, 2);
    assert_int_equal(out, want);
    /* a 64-thread block takes the shortest tree */
    out = 0;
    ptxt_launch_ok(k, (struct ptxt_dim){(n + 127) / 128, 1, 1}, (struct ptxt_dim){64, 1, 1}, 64 * 4,
                   args, 3, bufs, 2);
    assert_int_equal(out, want);
    free(in);
    tf_ptx_module_destroy(m);
}

static void atomics_mix_min_max_exch_cas_and_shared_add(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("reduce");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "atomics_mix");
    int n = 3001;
    int *in = malloc(n * sizeof(int));
    uint32_t seed = 11;
    int wmin = INT32_MAX, wmax = INT32_MIN;
    unsigned wtotal = 0;
    for (int i = 0; i < n; i++) {
        in[i] = (int)ptxt_rand(&seed);
        wmin = in[i] < wmin ? in[i] : wmin;
        wmax = in[i] > wmax ? in[i] : wmax;
        wtotal += (unsigned)in[i];
    }
    int gmin = INT32_MAX, gmax = INT32_MIN, gexch = 0, gcas = 0;
    unsigned total = 0;
    int *pmin = &gmin, *pmax = &gmax, *pexch = &gexch, *pcas = &gcas;
    unsigned *ptotal = &total;
    struct tf_ptx_range bufs[] = {PTXT_RANGE(in, n * 4), PTXT_RANGE(&gmin, 4),
                                  PTXT_RANGE(&gmax, 4),  PTXT_RANGE(&gexch, 4),
                                  PTXT_RANGE(&gcas, 4),  PTXT_RANGE(&total, 4)};
    struct ptxt_arg args[] = {PTXT_ARG(in),    PTXT_ARG(n),    PTXT_ARG(pmin),  PTXT_ARG(pmax),
                              PTXT_ARG(pexch), PTXT_ARG(pcas), PTXT_ARG(ptotal)};
    ptxt_launch_ok(k, (struct ptxt_dim){(n + 127) / 128, 1, 1}, (struct ptxt_dim){128, 1, 1}, 0,
                   args, 7, bufs, 6);
    assert_int_equal(gmin, wmin);
    assert_int_equal(gmax, wmax);
    assert_int_equal(gcas, n); /* every thread's CAS loop incremented exactly once */
    assert_int_equal(total, wtotal);
    int found = 0;
    for (int i = 0; i < n; i++)
        found |= in[i] == gexch;
    assert_true(found);
    free(in);
    tf_ptx_module_destroy(m);
}

/* int_ops as its PTX computes it (wrapping arithmetic, PTX division semantics) */
static void int_ops_ref(int x, int bv, int *o)
{
    int y = bv == 0 ? 1 : bv;
    int q = (x == INT32_MIN && y == -1) ? INT32_MIN : x / y;
    o[0] = q;
    o[1] = (int)((uint32_t)x - (uint32_t)q * (uint32_t)y);
    o[2] = x < y ? x : y;
    o[3] = x > y ? x : y;
    o[4] = x < 0 ? (int)(0u - (uint32_t)x) : x;
    o[5] = (int)((uint32_t)x * (uint32_t)y + 7u);
    o[6] = x ^ y;
    o[7] = (int)(((uint32_t)x << 3) | ((uint32_t)y & 7));
    o[8] = x >> 2;
    o[9] = (int)((uint32_t)x >> 5);
    o[10] = (int)(((long long)x * (long long)y) >> 16);
    o[11] = __builtin_popcount((uint32_t)x) + __builtin_clz((uint32_t)y);
}

static void int_ops_match_cpu(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("math");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "int_ops");
    enum { N = 300 };
    int a[N], b[N], out[N * 12], want[12];
    uint32_t seed = 5;
    static const int edge[][2] = {{INT32_MIN, -1}, {INT32_MIN, 1}, {INT32_MAX, -1}, {0, 0},
                                  {-7, 2},         {7, -2},        {-1, INT32_MIN}, {5, 0}};
    for (int i = 0; i < N; i++) {
        if (i < 8) {
            a[i] = edge[i][0];
            b[i] = edge[i][1];
        } else {
            a[i] = (int)ptxt_rand(&seed);
            b[i] = (i % 3) ? (int)ptxt_rand(&seed) % 1000 : (int)ptxt_rand(&seed);
        }
    }
    int n = N;
    int *pa = a, *pb = b, *po = out;
    struct tf_ptx_range bufs[] = {PTXT_RANGE(a, sizeof(a)), PTXT_RANGE(b, sizeof(b)),
                                  PTXT_RANGE(out, sizeof(out))};
    struct ptxt_arg args[] = {PTXT_ARG(pa), PTXT_ARG(pb), PTXT_ARG(po), PTXT_ARG(n)};
    ptxt_launch_ok(k, (struct ptxt_dim){3, 1, 1}, (struct ptxt_dim){128, 1, 1}, 0, args, 4, bufs,
                   3);
    for (int i = 0; i < N; i++) {
        int_ops_ref(a[i], b[i], want);
        for (int j = 0; j < 12; j++)
            if (out[i * 12 + j] != want[j])
                fail_msg("int_ops x=%d y=%d slot %d: got %d want %d", a[i], b[i], j,
                         out[i * 12 + j], want[j]);
    }
    tf_ptx_module_destroy(m);
}

static void float_ops_match_cpu(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("math");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "float_ops");
    enum { N = 257 };
    float a[N], b[N], out[N * 8];
    uint32_t seed = 9;
    for (int i = 0; i < N; i++) {
        a[i] = ptxt_randf(&seed, -1000, 1000);
        b[i] = ptxt_randf(&seed, -1000, 1000);
        if (b[i] == 0)
            b[i] = 1;
    }
    a[0] = 1e-40f; /* subnormal input: no .ftz, so it must survive */
    b[0] = 3.0f;
    int n = N;
    float *pa = a, *pb = b, *po = out;
    struct tf_ptx_range bufs[] = {PTXT_RANGE(a, sizeof(a)), PTXT_RANGE(b, sizeof(b)),
                                  PTXT_RANGE(out, sizeof(out))};
    struct ptxt_arg args[] = {PTXT_ARG(pa), PTXT_ARG(pb), PTXT_ARG(po), PTXT_ARG(n)};
    ptxt_launch_ok(k, (struct ptxt_dim){2, 1, 1}, (struct ptxt_dim){192, 1, 1}, 0, args, 4, bufs,
                   3);
    for (int i = 0; i < N; i++) {
        float x = a[i], y = b[i], loc[4];
        for (int j = 0; j < 4; j++)
            loc[j] = fmaf(x, (float)j, y);
        float *o = out + i * 8;
        assert_float_bits(o[0], x / y, "div", (size_t)i);
        assert_float_bits(o[1], sqrtf(fabsf(x)), "sqrt", (size_t)i);
        assert_float_bits(o[2], fminf(x, y) - fmaxf(x, y), "minmax", (size_t)i);
        assert_float_bits(o[3], (float)(int)x + (float)(unsigned)fabsf(y), "cvt", (size_t)i);
        assert_float_bits(o[4], loc[i & 3] + loc[3 - (i & 3)], "local", (size_t)i);
        /* __fdividef: div.approx.f32, within 2 ulp of x / y */
        float q = x / y;
        float ulp = nextafterf(fabsf(q), INFINITY) - fabsf(q);
        if (fabsf(o[5] - q) > 2 * ulp)
            fail_msg("fdividef[%d]: %a vs %a", i, (double)o[5], (double)q);
        assert_float_bits(o[6], x * y, "mul", (size_t)i);
        assert_float_bits(o[7], x > y ? x : -y, "select", (size_t)i);
    }
    assert_true(out[1] > 0 && out[1] < 1e-19f); /* sqrt of the subnormal */
    tf_ptx_module_destroy(m);
}

static void fast_math_within_documented_error_bounds(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("math");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "fast_math");
    enum { N = 500 };
    float a[N], out[N * 5];
    uint32_t seed = 13;
    for (int i = 0; i < N; i++)
        a[i] = ptxt_randf(&seed, -3.14159f, 3.14159f);
    int n = N;
    float *pa = a, *po = out;
    struct tf_ptx_range bufs[] = {PTXT_RANGE(a, sizeof(a)), PTXT_RANGE(out, sizeof(out))};
    struct ptxt_arg args[] = {PTXT_ARG(pa), PTXT_ARG(po), PTXT_ARG(n)};
    ptxt_launch_ok(k, (struct ptxt_dim){4, 1, 1}, (struct ptxt_dim){128, 1, 1}, 0, args, 3, bufs,
                   2);
    for (int i = 0; i < N; i++) {
        float x = a[i], *o = out + i * 5;
        /* ex2.approx.f32: relative error 2^-22 of 2^(x*log2e) (x*log2e rounded as the PTX) */
        double e = exp2((double)(x * 1.44269502f));
        assert_true(fabs(o[0] - e) <= e * ldexp(1, -22));
        /* lg2.approx.f32: absolute error 2^-22 on [0.5, 2], relative 2^-22 elsewhere */
        float xa = fabsf(x) + 1.0f;
        double l2 = log2((double)xa);
        double got = (double)o[1] / (double)0.693147182f;
        assert_true(fabs(got - l2) <= fmax(ldexp(1, -22), fabs(l2) * ldexp(1, -22)) * 1.01);
        /* sin/cos.approx.f32: absolute error 2^-20.9 on [-pi, pi] */
        assert_true(fabs(o[2] - sin((double)x)) <= ldexp(1, -20));
        assert_true(fabs(o[3] - cos((double)x)) <= ldexp(1, -20));
        /* rsqrt.approx.f32: relative error 2^-22.9 */
        double rs = 1.0 / sqrt((double)xa);
        assert_true(fabs(o[4] - rs) <= rs * ldexp(1, -22));
    }
    tf_ptx_module_destroy(m);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void globaltimer_spin_runs_at_least_its_duration(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("timer");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "spin_ns");
    unsigned long long ns = 3000000, done = 0, *pd = &done;
    struct tf_ptx_range bufs[] = {PTXT_RANGE(&done, 8)};
    struct ptxt_arg args[] = {PTXT_ARG(ns), PTXT_ARG(pd)};
    uint64_t t0 = now_ns();
    ptxt_launch_ok(k, (struct ptxt_dim){1, 1, 1}, (struct ptxt_dim){32, 1, 1}, 0, args, 2, bufs, 1);
    uint64_t dt = now_ns() - t0;
    assert_true(dt >= ns);
    assert_true(dt < ns + 2000000000ull);
    assert_int_equal(done, 1);
    tf_ptx_module_destroy(m);
}

static uint64_t fake_timer(void *arg)
{
    uint64_t *t = arg;
    return *t += 1000;
}

static void globaltimer_comes_from_the_driver_clock(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("timer");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "spin_ns");
    unsigned long long ns = 1000000000ull, done = 0, *pd = &done; /* one virtual second */
    uint64_t clock = 0;
    struct tf_ptx_kernel_info info;
    tf_ptx_kernel_get_info(k, &info);
    uint8_t params[16];
    memcpy(params, &ns, 8);
    memcpy(params + 8, &pd, 8);
    struct tf_ptx_range r = PTXT_RANGE(&done, 8);
    struct tf_ptx_memview mv = {&r, 1};
    struct tf_ptx_env env = {
        .sm_count = 1, .globaltimer_ns = fake_timer, .globaltimer_arg = &clock};
    struct tf_ptx_launch l = {.kernel = k,
                              .grid = {2, 1, 1},
                              .block = {1, 1, 1},
                              .params = params,
                              .params_size = info.params_size,
                              .mem = &mv,
                              .env = &env};
    char err[256];
    assert_int_equal(tf_ptx_launch_run(&l, NULL, err, sizeof(err)), TF_PTX_OK);
    assert_int_equal(done, 1);
    assert_true(clock >= 2 * ns); /* each block spun a virtual second */
    tf_ptx_module_destroy(m);
}

static void out_of_bounds_write_faults_naming_kernel_insn_and_thread(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("oob");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "write_oob");
    int buf[16] = {0};
    int *p = buf;
    long long off = 3;
    struct tf_ptx_range bufs[] = {PTXT_RANGE(buf, sizeof(buf))};
    struct ptxt_arg args[] = {PTXT_ARG(p), PTXT_ARG(off)};
    ptxt_launch_ok(k, (struct ptxt_dim){1, 1, 1}, (struct ptxt_dim){64, 1, 1}, 0, args, 2, bufs, 1);
    assert_int_equal(buf[3], 42);
    off = 1 << 20;
    char err[512];
    enum tf_ptx_status st = ptxt_launch(k, (struct ptxt_dim){2, 1, 1}, (struct ptxt_dim){64, 1, 1},
                                        0, args, 2, bufs, 1, 0, NULL, err, sizeof(err));
    assert_int_equal(st, TF_PTX_ILLEGAL_ADDRESS);
    char want[64];
    snprintf(want, sizeof(want), "0x%llx", (unsigned long long)(uintptr_t)(buf + off));
    if (!strstr(err, "illegal address") || !strstr(err, want) || !strstr(err, "write_oob") ||
        !strstr(err, "st.global.u32") || !strstr(err, "block (0,0,0) thread (0,0,0)") ||
        !strstr(err, "line "))
        fail_msg("unexpected message: %s", err);
    /* 16 bytes before the buffer is outside too */
    off = -4;
    assert_int_equal(ptxt_launch(k, (struct ptxt_dim){1, 1, 1}, (struct ptxt_dim){1, 1, 1}, 0, args,
                                 2, bufs, 1, 0, NULL, err, sizeof(err)),
                     TF_PTX_ILLEGAL_ADDRESS);
    tf_ptx_module_destroy(m);
}

struct pexp {
    const char *module, *kernel;
    uint32_t nparams, size;
    uint32_t off[8], sz[8];
    uint32_t shared, local;
};

static void param_info_gives_offsets_and_sizes_for_each_kernel(void **state)
{
    (void)state;
    static const struct pexp ex[] = {
        {"vecadd", "vecadd", 4, 28, {0, 8, 16, 24}, {8, 8, 8, 4}, 0, 0},
        {"vecadd", "saxpy", 4, 24, {0, 4, 8, 16}, {4, 4, 8, 8}, 0, 0},
        {"sgemm",
         "sgemm_tiled",
         8,
         48,
         {0, 4, 8, 12, 16, 24, 32, 40},
         {4, 4, 4, 4, 8, 8, 4, 8},
         2048,
         0},
        {"reduce", "reduce_sum", 3, 24, {0, 8, 16}, {8, 4, 8}, 0, 0},
        {"reduce", "atomics_mix", 7, 56, {0, 8, 16, 24, 32, 40, 48}, {8, 4, 8, 8, 8, 8, 8}, 4, 0},
        {"math", "int_ops", 4, 28, {0, 8, 16, 24}, {8, 8, 8, 4}, 0, 0},
        {"math", "float_ops", 4, 28, {0, 8, 16, 24}, {8, 8, 8, 4}, 0, 16},
        {"math", "fast_math", 3, 20, {0, 8, 16}, {8, 8, 4}, 0, 0},
        {"timer", "spin_ns", 2, 16, {0, 8}, {8, 8}, 0, 0},
        {"oob", "write_oob", 2, 16, {0, 8}, {8, 8}, 0, 0},
    };
    for (size_t i = 0; i < sizeof(ex) / sizeof(ex[0]); i++) {
        struct tf_ptx_module *m = ptxt_load(ex[i].module);
        const struct tf_ptx_kernel *k = ptxt_kernel(m, ex[i].kernel);
        struct tf_ptx_kernel_info info;
        tf_ptx_kernel_get_info(k, &info);
        assert_string_equal(info.name, ex[i].kernel);
        assert_int_equal(info.nparams, ex[i].nparams);
        assert_int_equal(info.params_size, ex[i].size);
        assert_int_equal(info.static_shared, ex[i].shared);
        assert_int_equal(info.local_bytes, ex[i].local);
        assert_true(info.num_regs > 0);
        for (uint32_t p = 0; p < ex[i].nparams; p++) {
            uint32_t off, sz;
            assert_int_equal(tf_ptx_kernel_param(k, p, &off, &sz), TF_PTX_OK);
            assert_int_equal(off, ex[i].off[p]);
            assert_int_equal(sz, ex[i].sz[p]);
        }
        uint32_t off, sz;
        assert_int_equal(tf_ptx_kernel_param(k, ex[i].nparams, &off, &sz), TF_PTX_INVALID_VALUE);
        tf_ptx_module_destroy(m);
    }
}

static void module_lists_its_kernels_and_finds_them_by_name(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("reduce");
    assert_int_equal(tf_ptx_module_kernel_count(m), 2);
    struct tf_ptx_kernel_info i0, i1;
    tf_ptx_kernel_get_info(tf_ptx_module_kernel_at(m, 0), &i0);
    tf_ptx_kernel_get_info(tf_ptx_module_kernel_at(m, 1), &i1);
    assert_string_equal(i0.name, "reduce_sum");
    assert_string_equal(i1.name, "atomics_mix");
    assert_null(tf_ptx_module_kernel_at(m, 2));
    assert_null(tf_ptx_module_kernel(m, "nope"));
    assert_int_equal(tf_ptx_module_var_count(m), 0);
    tf_ptx_module_destroy(m);
    tf_ptx_module_destroy(NULL);
}

int main(int argc, char **argv)
{
    ptxt_init(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(vecadd_matches_cpu_bit_exactly),
        cmocka_unit_test(saxpy_grid_stride_loop_covers_every_element),
        cmocka_unit_test(tiled_sgemm_256_matches_cpu),
        cmocka_unit_test(tiled_sgemm_odd_sizes_match_cpu),
        cmocka_unit_test(reduction_with_dynamic_shared_shfl_and_atomic_u64),
        cmocka_unit_test(atomics_mix_min_max_exch_cas_and_shared_add),
        cmocka_unit_test(int_ops_match_cpu),
        cmocka_unit_test(float_ops_match_cpu),
        cmocka_unit_test(fast_math_within_documented_error_bounds),
        cmocka_unit_test(globaltimer_spin_runs_at_least_its_duration),
        cmocka_unit_test(globaltimer_comes_from_the_driver_clock),
        cmocka_unit_test(out_of_bounds_write_faults_naming_kernel_insn_and_thread),
        cmocka_unit_test(param_info_gives_offsets_and_sizes_for_each_kernel),
        cmocka_unit_test(module_lists_its_kernels_and_finds_them_by_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
