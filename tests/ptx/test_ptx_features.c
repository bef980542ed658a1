/* SPDX-License-Identifier: Apache-2.0
 *
 * The PTX engine on more real nvcc output (tests/cuda/kernels/{calls,warp,vars,ops}.cu):
 * device functions called with `call` (parameters, struct results, recursion with .local
 * frames), divergent branches inside a warp followed by shfl/vote/match/redux and block-wide
 * barrier reductions, module variables bound by the caller, bit-manipulation and 64-bit
 * integer intrinsics, doubles and conversions, half/bfloat16 conversions, more atomics, and
 * the accurate libdevice math functions. Results are checked against CPU references.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ptxtest.h"

#define DIM(x) ((struct ptxt_dim){(x), 1, 1})

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint64_t d2u(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* ---- calls ---- */

static unsigned fib(unsigned n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static int depth_sum(int d, int x)
{
    int a[4];
    for (int i = 0; i < 4; i++)
        a[i] = d * 10 + i;
    a[x & 3] += x;
    if (d == 0)
        return a[(x >> 2) & 3];
    return (int)((unsigned)a[(x >> 4) & 3] +
                 (unsigned)depth_sum(d - 1, (int)((unsigned)x * 3 + 1)) - (unsigned)a[x & 3]);
}

static void device_functions_called_with_call_match_cpu(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("calls");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "calls");
    enum { N = 173 };
    int in[N], out_i[N * 4];
    unsigned out_f[N];
    float out_s[N];
    uint32_t seed = 21;
    for (int i = 0; i < N; i++)
        in[i] = (int)(ptxt_rand(&seed) % 2001) - 1000;
    int n = N;
    int *pi = in, *po = out_i;
    unsigned *pf = out_f;
    float *ps = out_s;
    struct tf_ptx_range bufs[] = {PTXT_RANGE(in, sizeof(in)), PTXT_RANGE(out_i, sizeof(out_i)),
                                  PTXT_RANGE(out_f, sizeof(out_f)),
                                  PTXT_RANGE(out_s, sizeof(out_s))};
    struct ptxt_arg args[] = {PTXT_ARG(pi), PTXT_ARG(po), PTXT_ARG(pf), PTXT_ARG(ps), PTXT_ARG(n)};
    ptxt_launch_ok(k, DIM(3), DIM(64), 0, args, 5, bufs, 4);
    for (int i = 0; i < N; i++) {
        int x = in[i];
        float f = (float)x * 0.5f;
        int want_mix = x * 3 + i - (int)(f * 2.0f);
        int want_early;
        if (x & 1) {
            want_early = -x;
        } else {
            want_early = 0;
            for (int j = 0; j < (x & 15); j++)
                want_early += j * x;
        }
        int want_pair = (x + 1) + (int)((float)i * 2.0f);
        float xs = (float)i * 0.25f, buf[8];
        for (int j = 0; j < 8; j++)
            buf[j] = fmaf(xs, (float)j, (float)x);
        float want_s = buf[x & 7] + buf[(x >> 3) & 7];
        if (out_i[i * 3] != want_mix || out_i[i * 3 + 1] != want_early ||
            out_i[i * 3 + 2] != want_pair)
            fail_msg("calls[%d] x=%d: mix %d/%d early %d/%d pair %d/%d", i, x, out_i[i * 3],
                     want_mix, out_i[i * 3 + 1], want_early, out_i[i * 3 + 2], want_pair);
        assert_int_equal(out_f[i], fib((unsigned)(x & 7) + 3));
        assert_int_equal(f2u(out_s[i]), f2u(want_s));
        assert_int_equal(out_i[N * 3 + i], depth_sum(x & 7, x));
    }
    struct tf_ptx_kernel_info info;
    tf_ptx_kernel_get_info(k, &info);
    assert_true(info.local_bytes >= 48); /* the callees' frames, plus a recursion reserve */
    tf_ptx_module_destroy(m);
}

/* ---- warp ---- */

static void warp_ref(const int *in, int n, uint32_t nthreads, uint32_t block, unsigned *out)
{
    int *acc = calloc(nthreads, sizeof(int));
    int *val = calloc(nthreads, sizeof(int));
    for (uint32_t i = 0; i < nthreads; i++) {
        unsigned lane = (i % block) & 31;
        int v = (int)i < n ? in[i] : 0;
        val[i] = v;
        int a = 0;
        if (lane % 3 == 0) {
            for (int k = 0; k < (v & 7); k++)
                a += k * v;
        } else if (lane % 3 == 1) {
            a = v * 7;
        } else {
            a = -v;
        }
        acc[i] = a;
    }
    for (uint32_t w0 = 0; w0 < nthreads; w0 += 32) {
        unsigned ball = 0, any = 0, all = 1, sum = 0, am = 0, vpos = 0;
        for (unsigned l = 0; l < 32; l++) {
            int a = acc[w0 + l];
            ball |= (unsigned)(a & 1) << l;
            any |= a > 1000;
            all &= a != 12345;
            sum += (unsigned)a;
            if (l % 3 == 1) {
                am |= 1u << l;
                vpos |= (unsigned)(val[w0 + l] > 0) << l;
            }
        }
        for (unsigned l = 0; l < 32; l++) {
            unsigned *o = out + (w0 + l) * 16;
            int a = acc[w0 + l];
            if (l % 3 == 1) {
                o[10] = am;
                o[11] = vpos;
                o[12] = (unsigned)val[w0 + 1];
            }
            o[0] = ball;
            o[1] = any;
            o[2] = all;
            o[3] = sum;
            o[4] = (unsigned)(l >= 3 ? acc[w0 + l - 3] : a);
            o[5] = (unsigned)(l + 5 <= 31 ? acc[w0 + l + 5] : a);
            o[6] = (unsigned)acc[w0 + ((l * 7) & 31)];
            o[7] = (unsigned)((l % 8) + 2 < 8 ? acc[w0 + l + 2] : a);
            o[8] = 32;
            unsigned mt = 0;
            for (unsigned k = 0; k < 32; k++)
                mt |= (unsigned)((acc[w0 + k] & 3) == (a & 3)) << k;
            o[9] = mt;
            o[13] = sum;
        }
    }
    for (uint32_t b0 = 0; b0 < nthreads; b0 += block) {
        unsigned cnt = 0, or42 = 0, and7 = 1;
        for (uint32_t t = 0; t < block; t++) {
            cnt += acc[b0 + t] > 0;
            or42 |= acc[b0 + t] == 42;
            and7 &= acc[b0 + t] != 7;
        }
        for (uint32_t t = 0; t < block; t++) {
            out[(b0 + t) * 16 + 14] = cnt;
            out[(b0 + t) * 16 + 15] = or42 | (and7 << 1);
        }
    }
    free(acc);
    free(val);
}

static void divergent_warp_then_shfl_vote_match_redux_see_the_right_lanes(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("warp");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "warp_ops");
    enum { BLOCK = 64, GRID = 3, T = BLOCK * GRID, N = 170 };
    int in[N];
    uint32_t seed = 77;
    for (int i = 0; i < N; i++)
        in[i] = (int)(ptxt_rand(&seed) % 401) - 200;
    in[4] = 6;  /* lane 4 (lane%3 == 1): acc = 42 in block 0 */
    in[7] = 1;  /* lane 7: acc = 7 in block 0 */
    in[70] = 5; /* keep block 1 free of 42 and 7 */
    for (int i = BLOCK; i < 2 * BLOCK; i++)
        if (in[i] * 7 == 42 || in[i] * 7 == 7 || -in[i] == 42 || -in[i] == 7 || in[i] == 6 ||
            in[i] == 1 || in[i] == -42 || in[i] == -7)
            in[i] = 100;
    unsigned *out = malloc(T * 16 * sizeof(unsigned)), *want = malloc(T * 16 * sizeof(unsigned));
    for (int i = 0; i < T * 16; i++)
        out[i] = want[i] = 0xdeadbeefu;
    warp_ref(in, N, T, BLOCK, want);
    int n = N;
    int *pi = in;
    unsigned *po = out;
    struct tf_ptx_range bufs[] = {PTXT_RANGE(in, sizeof(in)),
                                  PTXT_RANGE(out, T * 16 * sizeof(unsigned))};
    struct ptxt_arg args[] = {PTXT_ARG(pi), PTXT_ARG(po), PTXT_ARG(n)};
    ptxt_launch_ok(k, DIM(GRID), DIM(BLOCK), 0, args, 3, bufs, 2);
    for (int i = 0; i < T; i++)
        for (int j = 0; j < 16; j++)
            if (out[i * 16 + j] != want[i * 16 + j])
                fail_msg("thread %d slot %d: got 0x%08x want 0x%08x", i, j, out[i * 16 + j],
                         want[i * 16 + j]);
    assert_int_equal(want[15], 1);              /* block 0: some 42, some 7 */
    assert_int_equal(want[BLOCK * 16 + 15], 2); /* block 1: neither */
    free(out);
    free(want);
    tf_ptx_module_destroy(m);
}

/* ---- module variables ---- */

struct varmem {
    void *p[8];
    size_t n;
};

static void bind_all(struct tf_ptx_module *m, struct varmem *vm, struct tf_ptx_range *r)
{
    vm->n = tf_ptx_module_var_count(m);
    for (size_t i = 0; i < vm->n; i++) {
        const struct tf_ptx_var *v = tf_ptx_module_var_at(m, i);
        void *p = aligned_alloc(v->align < 16 ? 16 : v->align, (v->size + 15) / 16 * 16);
        memset(p, 0, v->size);
        if (v->init_len)
            memcpy(p, v->init, v->init_len);
        vm->p[i] = p;
        tf_ptx_module_var_bind(m, i, (uint64_t)(uintptr_t)p);
        r[i] = (struct tf_ptx_range){(uint64_t)(uintptr_t)p, v->size, v->is_const};
    }
}

/* Launches K with every module variable of M bound to fresh memory (as the driver does). */
static void launch_bound(struct tf_ptx_module *m, const struct tf_ptx_kernel *k,
                         struct ptxt_dim grid, struct ptxt_dim block, const struct ptxt_arg *args,
                         size_t nargs, const struct tf_ptx_range *bufs, size_t nbufs)
{
    struct tf_ptx_range r[16];
    assert_true(nbufs + tf_ptx_module_var_count(m) <= 16);
    memcpy(r, bufs, nbufs * sizeof(*r));
    struct varmem vm;
    bind_all(m, &vm, r + nbufs);
    ptxt_launch_ok(k, grid, block, 0, args, nargs, r, nbufs + vm.n);
    for (size_t i = 0; i < vm.n; i++)
        free(vm.p[i]);
}

static void managed_variables_are_marked(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load_text(".version 8.0\n.target sm_80\n.address_size 64\n"
                                             ".global .attribute(.managed) .align 4 .u32 counter;\n"
                                             ".global .align 4 .u32 plain;\n");
    const struct tf_ptx_var *v =
        tf_ptx_module_var_at(m, (size_t)tf_ptx_module_var_find(m, "counter"));
    assert_int_equal(v->is_managed, 1);
    assert_int_equal(v->size, 4);
    v = tf_ptx_module_var_at(m, (size_t)tf_ptx_module_var_find(m, "plain"));
    assert_int_equal(v->is_managed, 0);
    tf_ptx_module_destroy(m);
}

static void module_variables_are_laid_out_bound_and_used(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("vars");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "use_vars");
    assert_int_equal(tf_ptx_module_var_count(m), 5);
    static const struct {
        const char *name;
        uint64_t size;
        int is_const;
        uint64_t init_len;
    } ex[] = {{"counter", 4, 0, 4},
              {"table", 16, 0, 16},
              {"coeffs", 16, 1, 16},
              {"lut", 32, 1, 0},
              {"hits", 8, 0, 0}};
    for (size_t i = 0; i < 5; i++) {
        long idx = tf_ptx_module_var_find(m, ex[i].name);
        assert_true(idx >= 0);
        const struct tf_ptx_var *v = tf_ptx_module_var_at(m, (size_t)idx);
        assert_string_equal(v->name, ex[i].name);
        assert_int_equal(v->size, ex[i].size);
        assert_int_equal(v->is_const, ex[i].is_const);
        assert_int_equal(v->init_len, ex[i].init_len);
        assert_true(v->align >= 4);
    }
    assert_int_equal(tf_ptx_module_var_find(m, "nope"), -1);
    assert_int_equal(
        tf_ptx_module_var_at(m, (size_t)tf_ptx_module_var_find(m, "counter"))->is_managed, 0);
    const struct tf_ptx_var *cv =
        tf_ptx_module_var_at(m, (size_t)tf_ptx_module_var_find(m, "counter"));
    int c0;
    memcpy(&c0, cv->init, 4);
    assert_int_equal(c0, 5);

    /* launching before the variables are bound is refused */
    enum { N = 100 };
    float out[N];
    float *po = out;
    int n = N;
    struct ptxt_arg args[] = {PTXT_ARG(po), PTXT_ARG(n)};
    struct tf_ptx_range r[8];
    r[0] = PTXT_RANGE(out, sizeof(out));
    char err[256];
    assert_int_equal(ptxt_launch(k, DIM(1), DIM(128), 0, args, 2, r, 1, 0, NULL, err, sizeof(err)),
                     TF_PTX_INVALID_VALUE);
    assert_non_null(strstr(err, "not bound"));

    struct varmem vm;
    bind_all(m, &vm, r + 1);
    int *lut = vm.p[tf_ptx_module_var_find(m, "lut")];
    for (int i = 0; i < 8; i++)
        lut[i] = i * 10 - 3;
    ptxt_launch_ok(k, DIM(2), DIM(64), 0, args, 2, r, 1 + vm.n);
    static const float table[4] = {1.5f, -2.0f, 3.25f, 0.125f};
    static const float coeffs[4] = {0.5f, 0.25f, 2.0f, -1.0f};
    for (int i = 0; i < N; i++)
        assert_int_equal(f2u(out[i]),
                         f2u(fmaf(table[i & 3], coeffs[(i + 1) & 3], (float)lut[i & 7])));
    assert_int_equal(*(int *)vm.p[tf_ptx_module_var_find(m, "counter")], 5 + N);
    assert_int_equal(*(unsigned long long *)vm.p[tf_ptx_module_var_find(m, "hits")],
                     (unsigned long long)N * (N - 1) / 2);
    for (size_t i = 0; i < vm.n; i++)
        free(vm.p[i]);
    tf_ptx_module_destroy(m);
}

/* ---- ops ---- */

static uint32_t ref_brev(uint32_t x)
{
    uint32_t r = 0;
    for (int i = 0; i < 32; i++)
        r |= ((x >> i) & 1) << (31 - i);
    return r;
}

static void bit_intrinsics_match_cpu(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("ops");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "bit_ops");
    enum { N = 200 };
    unsigned a[N], b[N], o[N * 12];
    uint32_t seed = 99;
    for (int i = 0; i < N; i++) {
        a[i] = ptxt_rand(&seed);
        b[i] = i % 4 == 0 ? (unsigned)i : ptxt_rand(&seed);
    }
    a[0] = 0;
    int n = N;
    unsigned *pa = a, *pb = b, *po = o;
    struct tf_ptx_range bufs[] = {PTXT_RANGE(a, sizeof(a)), PTXT_RANGE(b, sizeof(b)),
                                  PTXT_RANGE(o, sizeof(o))};
    struct ptxt_arg args[] = {PTXT_ARG(pa), PTXT_ARG(pb), PTXT_ARG(po), PTXT_ARG(n)};
    launch_bound(m, k, DIM(2), DIM(128), args, 4, bufs, 3);
    for (int i = 0; i < N; i++) {
        uint32_t x = a[i], y = b[i], w[12];
        uint64_t cat = (uint64_t)y << 32 | x;
        w[0] = ref_brev(x);
        w[1] =
            (x & 0xff) | ((y & 0xff) << 8) | (((x >> 8) & 0xff) << 16) | (((y >> 8) & 0xff) << 24);
        w[2] = (uint32_t)((cat << (y & 31)) >> 32);
        w[3] = (uint32_t)(cat >> (y > 32 ? 32 : y));
        w[4] = x ? (uint32_t)__builtin_ctz(x) + 1 : 0;
        uint64_t xy = (uint64_t)x << 32 | y;
        w[5] = xy ? (uint32_t)__builtin_clzll(xy) : 64;
        w[6] = (uint32_t)__builtin_popcountll(cat);
        w[7] = (x >> (y & 15)) & 0x3f;
        w[8] = (uint32_t)(((uint64_t)x * y) >> 32);
        int64_t x24 = (int32_t)(x << 8) >> 8, y24 = (int32_t)(y << 8) >> 8;
        w[9] = (uint32_t)(uint64_t)(x24 * y24);
        w[10] = ((int32_t)x > (int32_t)y ? x - y : y - x) + 3;
        int32_t dp = 17;
        for (int j = 0; j < 4; j++)
            dp += (int8_t)(x >> (8 * j)) * (int8_t)(y >> (8 * j));
        w[11] = (uint32_t)dp;
        for (int j = 0; j < 12; j++)
            if (o[i * 12 + j] != w[j])
                fail_msg("bit_ops x=0x%08x y=0x%08x slot %d: got 0x%08x want 0x%08x", x, y, j,
                         o[i * 12 + j], w[j]);
    }
    tf_ptx_module_destroy(m);
}

static void wide_integer_ops_match_cpu(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("ops");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "wide_ops");
    enum { N = 150 };
    long long a[N], b[N], o[N * 10];
    uint32_t seed = 5150;
    for (int i = 0; i < N; i++) {
        a[i] = (long long)((uint64_t)ptxt_rand(&seed) << 32 | ptxt_rand(&seed));
        b[i] = i % 3 ? (long long)(int)ptxt_rand(&seed)
                     : (long long)((uint64_t)ptxt_rand(&seed) << 32 | ptxt_rand(&seed));
    }
    b[0] = 0;
    b[1] = -1;
    a[1] = 12345;
    int n = N;
    long long *pa = a, *pb = b, *po = o;
    struct tf_ptx_range bufs[] = {PTXT_RANGE(a, sizeof(a)), PTXT_RANGE(b, sizeof(b)),
                                  PTXT_RANGE(o, sizeof(o))};
    struct ptxt_arg args[] = {PTXT_ARG(pa), PTXT_ARG(pb), PTXT_ARG(po), PTXT_ARG(n)};
    launch_bound(m, k, DIM(2), DIM(96), args, 4, bufs, 3);
    for (int i = 0; i < N; i++) {
        long long x = a[i], y = b[i] == 0 ? 3 : b[i];
        uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
        long long w[10];
        w[0] = x / y;
        w[1] = x % y;
        w[2] = (long long)(ux / uy);
        w[3] = (long long)(ux % uy);
        w[4] = (long long)(((__int128)x * y) >> 64);
        w[5] = (long long)(((unsigned __int128)ux * uy) >> 64);
        w[6] = x < y ? x : y;
        w[7] = (long long)(ux > uy ? ux : uy);
        w[8] = (long long)((ux << (uy & 63)) ^ (ux >> (uy & 63)) ^ (uint64_t)(x >> (y & 31)));
        w[9] = (long long)((uint64_t)(uint32_t)x * (uint32_t)y +
                           (uint64_t)(long long)((short)x * (short)y));
        for (int j = 0; j < 10; j++)
            if (o[i * 10 + j] != w[j])
                fail_msg("wide_ops x=%lld y=%lld slot %d: got %lld want %lld", x, y, j,
                         o[i * 10 + j], w[j]);
    }
    tf_ptx_module_destroy(m);
}

static void doubles_and_conversions_match_cpu(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("ops");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "double_ops");
    enum { N = 130 };
    double a[N], b[N], o[N * 8];
    long long oi[N * 2];
    float of[N * 2];
    uint32_t seed = 31337;
    for (int i = 0; i < N; i++) {
        a[i] = ((double)ptxt_rand(&seed) / 4294967296.0 - 0.5) * 2e6;
        b[i] = ((double)ptxt_rand(&seed) / 4294967296.0 - 0.5) * 2e3;
        if (b[i] == 0)
            b[i] = 0.5;
    }
    a[0] = 2.5;
    b[0] = -3.5; /* rint ties to even */
    int n = N;
    double *pa = a, *pb = b, *po = o;
    long long *pi = oi;
    float *pf = of;
    struct tf_ptx_range bufs[] = {PTXT_RANGE(a, sizeof(a)), PTXT_RANGE(b, sizeof(b)),
                                  PTXT_RANGE(o, sizeof(o)), PTXT_RANGE(oi, sizeof(oi)),
                                  PTXT_RANGE(of, sizeof(of))};
    struct ptxt_arg args[] = {PTXT_ARG(pa), PTXT_ARG(pb), PTXT_ARG(po),
                              PTXT_ARG(pi), PTXT_ARG(pf), PTXT_ARG(n)};
    launch_bound(m, k, DIM(1), DIM(160), args, 6, bufs, 5);
    for (int i = 0; i < N; i++) {
        double x = a[i], y = b[i], w[8];
        w[0] = x / y;
        w[1] = sqrt(fabs(x));
        w[2] = fma(x, y, 1.0);
        w[3] = fmin(x, y) + fmax(x, y);
        w[4] = floor(x) + ceil(y);
        w[5] = trunc(x) - rint(y);
        w[6] = (double)(float)x;
        w[7] = 1.0 / y;
        for (int j = 0; j < 8; j++)
            if (d2u(o[i * 8 + j]) != d2u(w[j]))
                fail_msg("double_ops x=%a y=%a slot %d: got %a want %a", x, y, j, o[i * 8 + j],
                         w[j]);
        assert_int_equal(oi[i * 2], (long long)x);
        assert_int_equal(oi[i * 2 + 1], (long long)(unsigned long long)fabs(y));
        assert_int_equal(f2u(of[i * 2]), f2u((float)x));
        assert_int_equal(f2u(of[i * 2 + 1]), f2u((float)(long long)(x * 1e6)));
    }
    tf_ptx_module_destroy(m);
}

/* float -> binary16 by integer rounding of the f32 bits (independent of the engine's code) */
static uint16_t ref_f2h(float f, int rz)
{
    uint32_t u = f2u(f);
    uint32_t sign = (u >> 16) & 0x8000, e = (u >> 23) & 0xff, mant = u & 0x7fffff;
    int exp = (int)e - 127 + 15;
    if (exp >= 31)
        return (uint16_t)(sign | (rz ? 0x7bff : 0x7c00));
    if (exp <= 0) {
        if (exp < -11)
            return (uint16_t)sign;
        mant |= 0x800000;
        int shift = 14 - exp;
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (!rz && (rem > half || (rem == half && (h & 1))))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fff;
    if (!rz && (rem > 0x1000 || (rem == 0x1000 && (h & 1))))
        h++;
    if (rz && h >= 0x7c00)
        h = 0x7bff;
    return (uint16_t)(sign | h);
}

static uint16_t ref_f2bf(float f)
{
    uint32_t u = f2u(f);
    return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

static float ref_h2f(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float s = (h & 0x8000) ? -1.0f : 1.0f;
    if (e == 0)
        return s * ldexpf((float)m, -24);
    if (e == 31)
        return m ? NAN : s * INFINITY;
    return s * ldexpf((float)(m | 0x400), e - 25);
}

static void half_and_bfloat16_conversions_round_correctly(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("ops");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "half_ops");
    enum { N = 300 };
    float a[N], back[N * 2];
    unsigned short h[N * 3];
    uint32_t seed = 4242;
    static const float edge[] = {1.0f,        -2.5f,      65504.0f, 65519.0f, 65520.0f, 70000.0f,
                                 1e-5f,       -3e-7f,     6.1e-5f,  0.0f,     -0.0f,    1e-9f,
                                 0.33333334f, 1.0009766f, 2049.0f,  3e38f};
    for (int i = 0; i < N; i++) {
        if (i < (int)(sizeof(edge) / sizeof(edge[0]))) {
            a[i] = edge[i];
        } else {
            float mag = ldexpf(1.0f, (int)(ptxt_rand(&seed) % 40) - 26);
            a[i] = ptxt_randf(&seed, -1, 1) * mag;
        }
    }
    int n = N;
    float *pa = a, *pb = back;
    unsigned short *ph = h;
    struct tf_ptx_range bufs[] = {PTXT_RANGE(a, sizeof(a)), PTXT_RANGE(h, sizeof(h)),
                                  PTXT_RANGE(back, sizeof(back))};
    struct ptxt_arg args[] = {PTXT_ARG(pa), PTXT_ARG(ph), PTXT_ARG(pb), PTXT_ARG(n)};
    launch_bound(m, k, DIM(3), DIM(128), args, 4, bufs, 3);
    for (int i = 0; i < N; i++) {
        uint16_t rn = ref_f2h(a[i], 0), rz = ref_f2h(a[i], 1), bf = ref_f2bf(a[i]);
        if (h[i * 3] != rn || h[i * 3 + 1] != rz || h[i * 3 + 2] != bf)
            fail_msg("half_ops %a: rn 0x%04x/0x%04x rz 0x%04x/0x%04x bf16 0x%04x/0x%04x",
                     (double)a[i], h[i * 3], rn, h[i * 3 + 1], rz, h[i * 3 + 2], bf);
        assert_int_equal(f2u(back[i * 2]), f2u(ref_h2f(rn)));
        uint32_t bu = (uint32_t)bf << 16;
        float bff;
        memcpy(&bff, &bu, 4);
        assert_int_equal(f2u(back[i * 2 + 1]), f2u(bff));
    }
    tf_ptx_module_destroy(m);
}

static void more_atomics_float_double_inc_dec_bitwise_u64(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("ops");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "atomics_more");
    int n = 1000;
    float f = 0;
    double d = 0;
    unsigned u[5] = {0, 0, 0xffffffffu, 0, 0};
    unsigned long long ul[4] = {0, ~0ull, 0, 0};
    float *pf = &f;
    double *pd = &d;
    unsigned *pu = u;
    unsigned long long *pl = ul;
    struct tf_ptx_range bufs[] = {PTXT_RANGE(&f, 4), PTXT_RANGE(&d, 8), PTXT_RANGE(u, sizeof(u)),
                                  PTXT_RANGE(ul, sizeof(ul))};
    struct ptxt_arg args[] = {PTXT_ARG(pf), PTXT_ARG(pd), PTXT_ARG(pu), PTXT_ARG(pl), PTXT_ARG(n)};
    launch_bound(m, k, DIM(8), DIM(128), args, 5, bufs, 4);
    assert_true(f == 1.5f * (float)n);
    assert_true(d == 0.25 * n);
    assert_int_equal(u[0], (unsigned)n % 101);
    assert_int_equal(u[1], 50 - (unsigned)(n - 1) % 51);
    assert_int_equal(u[2], 0);
    assert_int_equal(u[3], 0xffffffffu);
    unsigned x = 0;
    for (int i = 0; i < n; i++)
        x ^= (unsigned)i;
    assert_int_equal(u[4], x);
    assert_int_equal(ul[0], (unsigned long long)(n - 1) * 3);
    assert_int_equal(ul[1], 7);
    assert_int_equal(ul[2], (unsigned long long)n);
    assert_true(ul[3] < (unsigned long long)n);
    tf_ptx_module_destroy(m);
}

static double ulp_err32(float got, double want)
{
    float w = (float)want;
    double ulp = (double)nextafterf(fabsf(w), INFINITY) - fabs((double)w);
    return fabs((double)got - want) / ulp;
}

static double ulp_err64(double got, long double want)
{
    double w = (double)want;
    long double ulp = (long double)nextafter(fabs(w), INFINITY) - fabsl((long double)w);
    return (double)(fabsl((long double)got - want) / ulp);
}

static void libdevice_math_within_cuda_ulp_bounds(void **state)
{
    (void)state;
    struct tf_ptx_module *m = ptxt_load("ops");
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "libm_ops");
    enum { N = 256 };
    float a[N], o[N * 8];
    double da[N], od[N * 4];
    uint32_t seed = 8080;
    for (int i = 0; i < N; i++) {
        a[i] = ptxt_randf(&seed, -5, 5);
        da[i] = ((double)ptxt_rand(&seed) / 4294967296.0 - 0.5) * 10.0;
    }
    int n = N;
    float *pa = a, *po = o;
    double *pda = da, *pod = od;
    struct tf_ptx_range bufs[] = {PTXT_RANGE(a, sizeof(a)), PTXT_RANGE(o, sizeof(o)),
                                  PTXT_RANGE(da, sizeof(da)), PTXT_RANGE(od, sizeof(od))};
    struct ptxt_arg args[] = {PTXT_ARG(pa), PTXT_ARG(po), PTXT_ARG(pda), PTXT_ARG(pod),
                              PTXT_ARG(n)};
    launch_bound(m, k, DIM(2), DIM(128), args, 5, bufs, 4);
    /* CUDA's documented maximum ulp errors (programming guide, appendix "Mathematical
     * Functions"), plus one for the reference's own rounding */
    static const struct {
        const char *name;
        double bound;
    } fb[] = {{"expf", 3},  {"logf", 2},  {"sinf", 3}, {"cosf", 3},
              {"powf", 10}, {"tanhf", 3}, {"erff", 3}, {"atan2f", 4}};
    for (int i = 0; i < N; i++) {
        double x = a[i];
        double want[8] = {exp(x),
                          log(fabs(x) + 0.5),
                          sin(x),
                          cos(x),
                          pow((double)(fabsf(a[i]) + 0.1f), (double)1.7f),
                          tanh(x),
                          erf(x),
                          atan2(x, 0.75)};
        for (int j = 0; j < 8; j++) {
            double e = ulp_err32(o[i * 8 + j], want[j]);
            if (e > fb[j].bound)
                fail_msg("%s(%a) = %a, want %a: %.2f ulp", fb[j].name, x, (double)o[i * 8 + j],
                         want[j], e);
        }
        long double dx = da[i];
        long double dw[4] = {expl(dx), logl(fabsl(dx) + 0.5L), sinl(dx), cbrtl(dx)};
        static const char *const dn[] = {"exp", "log", "sin", "cbrt"};
        static const double db[] = {2, 2, 3, 2};
        for (int j = 0; j < 4; j++) {
            double e = ulp_err64(od[i * 4 + j], dw[j]);
            if (e > db[j])
                fail_msg("%s(%a) = %a, want %La: %.2f ulp", dn[j], da[i], od[i * 4 + j], dw[j], e);
        }
    }
    tf_ptx_module_destroy(m);
}

int main(int argc, char **argv)
{
    ptxt_init(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_functions_called_with_call_match_cpu),
        cmocka_unit_test(divergent_warp_then_shfl_vote_match_redux_see_the_right_lanes),
        cmocka_unit_test(module_variables_are_laid_out_bound_and_used),
        cmocka_unit_test(managed_variables_are_marked),
        cmocka_unit_test(bit_intrinsics_match_cpu),
        cmocka_unit_test(wide_integer_ops_match_cpu),
        cmocka_unit_test(doubles_and_conversions_match_cpu),
        cmocka_unit_test(half_and_bfloat16_conversions_round_correctly),
        cmocka_unit_test(more_atomics_float_double_inc_dec_bitwise_u64),
        cmocka_unit_test(libdevice_math_within_cuda_ulp_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
