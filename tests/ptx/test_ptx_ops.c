/* SPDX-License-Identifier: Apache-2.0
 *
 * Instruction semantics, one PTX instruction at a time: each case wraps a hand-written body
 * in a kernel that loads operands a, b, c (64-bit patterns) per thread and stores one 64-bit
 * result, runs it over every pair of a set of edge values (zeros, subnormals, infinities,
 * NaNs, extremes, shift amounts past the width, ...), and compares bit for bit with a C
 * reference of the PTX ISA semantics: rounding modes, .ftz, .sat, canonical NaN, min/max
 * with NaN and signed zeros, unordered compares, saturating and rounding conversions, carry
 * chains, bit-field operations, byte permutes. Built with -frounding-math (the references
 * switch the host rounding mode).
 */
#include <fenv.h>
#include <float.h>
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

/* ---- the harness ---- */

static const char prologue[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry t(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd,\n"
    "    .param .u32 pn)\n{\n"
    "\t.reg .pred %p<8>;\n\t.reg .b16 %h<8>;\n\t.reg .b32 %r<24>;\n\t.reg .f32 %f<8>;\n"
    "\t.reg .b64 %rd<24>;\n\t.reg .f64 %fd<8>;\n"
    "\tmov.u32 %r20, %ctaid.x;\n\tmov.u32 %r21, %ntid.x;\n\tmov.u32 %r22, %tid.x;\n"
    "\tmad.lo.u32 %r23, %r20, %r21, %r22;\n\tld.param.u32 %r20, [pn];\n"
    "\tsetp.ge.u32 %p7, %r23, %r20;\n\t@%p7 bra $L_end;\n"
    "\tmul.wide.u32 %rd20, %r23, 8;\n"
    "\tld.param.u64 %rd21, [pa];\n\tadd.s64 %rd21, %rd21, %rd20;\n\tld.global.u64 %rd1, [%rd21];\n"
    "\tld.param.u64 %rd21, [pb];\n\tadd.s64 %rd21, %rd21, %rd20;\n\tld.global.u64 %rd2, [%rd21];\n"
    "\tld.param.u64 %rd21, [pc];\n\tadd.s64 %rd21, %rd21, %rd20;\n\tld.global.u64 %rd3, [%rd21];\n"
    "\tmov.b64 {%r1, %r11}, %rd1;\n\tmov.b64 {%r2, %r12}, %rd2;\n\tmov.b64 {%r3, %r13}, %rd3;\n"
    "\tmov.b32 %f1, %r1;\n\tmov.b32 %f2, %r2;\n\tmov.b32 %f3, %r3;\n"
    "\tmov.b64 %fd1, %rd1;\n\tmov.b64 %fd2, %rd2;\n\tmov.b64 %fd3, %rd3;\n"
    "\tcvt.u16.u32 %h1, %r1;\n\tcvt.u16.u32 %h2, %r2;\n\tcvt.u16.u32 %h3, %r3;\n"
    "\tand.b32 %r19, %r3, 1;\n\tsetp.ne.u32 %p3, %r19, 0;\n"
    "\tmov.u64 %rd4, 0;\n";
static const char epilogue[] = "\tld.param.u64 %rd21, [pd];\n\tadd.s64 %rd21, %rd21, %rd20;\n"
                               "\tst.global.u64 [%rd21], %rd4;\n$L_end:\n\tret;\n}\n";

/* result conventions appended to a body */
#define OUT_F32 "\tmov.b32 %r4, %f4;\n\tcvt.u64.u32 %rd4, %r4;\n"
#define OUT_R32 "\tcvt.u64.u32 %rd4, %r4;\n"
#define OUT_F64 "\tmov.b64 %rd4, %fd4;\n"
#define OUT_P12                                                                                    \
    "\tselp.u32 %r4, 1, 0, %p1;\n\tselp.u32 %r5, 2, 0, %p2;\n"                                     \
    "\tor.b32 %r4, %r4, %r5;\n\tcvt.u64.u32 %rd4, %r4;\n"
#define OUT_H16 "\tcvt.u64.u16 %rd4, %h4;\n"

typedef uint64_t (*ref_fn)(uint64_t a, uint64_t b, uint64_t c);

enum set { S_F32, S_F64, S_I32, S_I64, S_I16 };

struct tcase {
    const char *body;
    enum set set;
    ref_fn ref;
};

static const uint32_t f32_vals[] = {
    0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x3fc00000, 0x40200000, 0xc0200000,
    0x3dcccccd, 0x00000001, 0x80000005, 0x007fffff, 0x00800000, 0x7f7fffff, 0xff7fffff,
    0x7f800000, 0xff800000, 0x7fc00000, 0xffc12345, 0x7f800001, 0x60ad78ec, 0xe0ad78ec,
    0x4b800001, 0x3f000000, 0x42f6e979, 0x3f7fffff, 0x4f000000, 0xcf000000, 0x5f000001,
};
static const uint64_t f64_vals[] = {
    0x0000000000000000ull, 0x8000000000000000ull, 0x3ff0000000000000ull, 0xbff0000000000000ull,
    0x3ff8000000000000ull, 0x4004000000000000ull, 0xc004000000000000ull, 0x3fb999999999999aull,
    0x0000000000000001ull, 0x000fffffffffffffull, 0x0010000000000000ull, 0x7fefffffffffffffull,
    0x7ff0000000000000ull, 0xfff0000000000000ull, 0x7ff8000000000000ull, 0x47efffffe0000000ull,
    0x36a0000000000000ull, 0x3ff0000010000000ull, 0x3ff0000008000000ull, 0xc1e0000000000000ull,
    0x43e0000000000000ull, 0x4330000000000001ull, 0x3fe0000000000000ull, 0x47f0000000000000ull,
};
static const uint64_t i32_vals[] = {0,          1,          0xffffffff, 2,          31,
                                    32,         33,         63,         64,         0x7fffffff,
                                    0x80000000, 0x0000ffff, 0x12345678, 0xdeadbeef, 100,
                                    0xffffff9c, 7,          0x00ff00ff, 0x80000001, 0x00800000};
static const uint64_t i64_vals[] = {0,
                                    1,
                                    0xffffffffffffffffull,
                                    2,
                                    63,
                                    64,
                                    65,
                                    0x7fffffffffffffffull,
                                    0x8000000000000000ull,
                                    0x00000000ffffffffull,
                                    0x123456789abcdef0ull,
                                    0xfedcba9876543210ull,
                                    0xffffffff00000000ull,
                                    100,
                                    0xffffffffffffff9cull,
                                    0x0000000100000000ull};
static const uint64_t i16_vals[] = {0,      1,      0xffff, 2,      15,  16,     17,
                                    0x7fff, 0x8000, 0x1234, 0xbeef, 100, 0xff9c, 0x00ff};

static void run_case(const struct tcase *tc)
{
    const uint64_t *vals;
    size_t nv;
    switch (tc->set) {
    case S_F32: {
        static uint64_t tmp[sizeof(f32_vals) / sizeof(f32_vals[0])];
        for (size_t i = 0; i < sizeof(tmp) / sizeof(tmp[0]); i++)
            tmp[i] = f32_vals[i];
        vals = tmp;
        nv = sizeof(tmp) / sizeof(tmp[0]);
        break;
    }
    case S_F64:
        vals = f64_vals;
        nv = sizeof(f64_vals) / sizeof(f64_vals[0]);
        break;
    case S_I32:
        vals = i32_vals;
        nv = sizeof(i32_vals) / sizeof(i32_vals[0]);
        break;
    case S_I64:
        vals = i64_vals;
        nv = sizeof(i64_vals) / sizeof(i64_vals[0]);
        break;
    default:
        vals = i16_vals;
        nv = sizeof(i16_vals) / sizeof(i16_vals[0]);
        break;
    }
    uint32_t n = (uint32_t)(nv * nv);
    uint64_t *a = malloc(n * 8), *b = malloc(n * 8), *c = malloc(n * 8), *d = malloc(n * 8);
    for (uint32_t i = 0; i < n; i++) {
        a[i] = vals[i / nv];
        b[i] = vals[i % nv];
        c[i] = vals[(i * 7 + 3) % nv];
        d[i] = 0xdeadbeefdeadbeefull;
    }
    size_t len = strlen(prologue) + strlen(tc->body) + strlen(epilogue) + 1;
    char *text = malloc(len);
    snprintf(text, len, "%s%s%s", prologue, tc->body, epilogue);
    struct tf_ptx_module *m = NULL;
    char err[256];
    if (tf_ptx_module_load(text, strlen(text), &m, err, sizeof(err)) != TF_PTX_OK)
        fail_msg("case '%s': %s", tc->body, err);
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "t");
    struct tf_ptx_range bufs[] = {PTXT_RANGE(a, n * 8), PTXT_RANGE(b, n * 8), PTXT_RANGE(c, n * 8),
                                  PTXT_RANGE(d, n * 8)};
    struct ptxt_arg args[] = {PTXT_ARG(a), PTXT_ARG(b), PTXT_ARG(c), PTXT_ARG(d), PTXT_ARG(n)};
    ptxt_launch_ok(k, (struct ptxt_dim){(n + 255) / 256, 1, 1}, (struct ptxt_dim){256, 1, 1}, 0,
                   args, 5, bufs, 4);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t want = tc->ref(a[i], b[i], c[i]);
        if (d[i] != want)
            fail_msg("'%s' a=0x%llx b=0x%llx c=0x%llx: got 0x%llx want 0x%llx", tc->body,
                     (unsigned long long)a[i], (unsigned long long)b[i], (unsigned long long)c[i],
                     (unsigned long long)d[i], (unsigned long long)want);
    }
    tf_ptx_module_destroy(m);
    free(text);
    free(a);
    free(b);
    free(c);
    free(d);
}

/* ---- reference helpers ---- */

static float F(uint64_t v)
{
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static double D(uint64_t v)
{
    double d;
    memcpy(&d, &v, 8);
    return d;
}
static uint64_t UF(float f) /* result bits, canonical NaN */
{
    if (f != f)
        return 0x7fffffffu;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static uint64_t RAWF(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static uint64_t UD(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}
static float FTZ(float f)
{
    return fpclassify(f) == FP_SUBNORMAL ? copysignf(0.0f, f) : f;
}
static float SAT(float f)
{
    return f > 0 ? (f < 1 ? f : 1) : 0;
}

enum { RN = FE_TONEAREST, RZ = FE_TOWARDZERO, RM = FE_DOWNWARD, RP = FE_UPWARD };
static float radd(float a, float b, int mode)
{
    fesetround(mode);
    volatile float x = a, y = b, r = x + y;
    fesetround(RN);
    return r;
}
static float rsub(float a, float b, int mode)
{
    fesetround(mode);
    volatile float x = a, y = b, r = x - y;
    fesetround(RN);
    return r;
}
static float rmul(float a, float b, int mode)
{
    fesetround(mode);
    volatile float x = a, y = b, r = x * y;
    fesetround(RN);
    return r;
}
static float rdiv(float a, float b, int mode)
{
    fesetround(mode);
    volatile float x = a, y = b, r = x / y;
    fesetround(RN);
    return r;
}
static float rfma(float a, float b, float c, int mode)
{
    fesetround(mode);
    volatile float x = a, y = b, z = c;
    volatile float r = fmaf(x, y, z);
    fesetround(RN);
    return r;
}
static float rsqrtf_(float a, int mode)
{
    fesetround(mode);
    volatile float x = a;
    volatile float r = sqrtf(x);
    fesetround(RN);
    return r;
}
static double raddd(double a, double b, int mode)
{
    fesetround(mode);
    volatile double x = a, y = b, r = x + y;
    fesetround(RN);
    return r;
}
static double rmuld(double a, double b, int mode)
{
    fesetround(mode);
    volatile double x = a, y = b, r = x * y;
    fesetround(RN);
    return r;
}
static double rsqrtd(double a, int mode)
{
    fesetround(mode);
    volatile double x = a;
    volatile double r = sqrt(x);
    fesetround(RN);
    return r;
}
static float rd2f(double a, int mode)
{
    fesetround(mode);
    volatile double x = a;
    volatile float r = (float)x;
    fesetround(RN);
    return r;
}
static float ri2f(int64_t v, int is_unsigned, int mode)
{
    fesetround(mode);
    volatile int64_t x = v;
    volatile float r = is_unsigned ? (float)(uint64_t)x : (float)x;
    fesetround(RN);
    return r;
}
/* PTX min/max: a NaN operand yields the other; both NaN: canonical; -0 < +0 */
static float pmin(float a, float b)
{
    if (a != a)
        return b;
    if (b != b)
        return a;
    if (a == b)
        return signbit(a) ? a : b;
    return a < b ? a : b;
}
static float pmax(float a, float b)
{
    if (a != a)
        return b;
    if (b != b)
        return a;
    if (a == b)
        return signbit(a) ? b : a;
    return a > b ? a : b;
}
static double pmind(double a, double b)
{
    if (a != a && b != b)
        return D(0x7fffffffffffffffull);
    if (a != a)
        return b;
    if (b != b)
        return a;
    if (a == b)
        return signbit(a) ? a : b;
    return a < b ? a : b;
}
/* float -> integer: NaN 0, saturating, after rounding R */
static uint64_t f2i(double x, int bits, int sgn)
{
    if (x != x)
        return 0;
    double hi = ldexp(1.0, sgn ? bits - 1 : bits);
    int64_t lo = sgn ? -(int64_t)(((uint64_t)1 << (bits - 1)) - 1) - 1 : 0;
    uint64_t v;
    if (x <= (sgn ? -hi : 0.0))
        v = (uint64_t)lo;
    else if (x >= hi)
        v = sgn ? ((uint64_t)1 << (bits - 1)) - 1
                : (bits == 64 ? ~0ull : ((uint64_t)1 << bits) - 1);
    else
        v = sgn ? (uint64_t)(int64_t)x : (uint64_t)x;
    return bits == 64 ? v : v & (((uint64_t)1 << bits) - 1);
}
static uint16_t f2h(float f) /* binary16, round to nearest even */
{
    uint32_t u = (uint32_t)RAWF(f);
    uint32_t sign = (u >> 16) & 0x8000, e = (u >> 23) & 0xff, mant = u & 0x7fffff;
    if (e == 0xff)
        return (uint16_t)(mant ? 0x7fff : sign | 0x7c00);
    int exp = (int)e - 112;
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00);
    if (exp <= 0) {
        if (exp < -11)
            return (uint16_t)sign;
        mant |= 0x800000;
        int sh = 14 - exp;
        uint32_t h = mant >> sh, rem = mant & ((1u << sh) - 1), half = 1u << (sh - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
        h++;
    return (uint16_t)(sign | h);
}

#define A32 ((uint32_t)a)
#define B32 ((uint32_t)b)
#define C32 ((uint32_t)c)
#define SA32 ((int32_t)(uint32_t)a)
#define SB32 ((int32_t)(uint32_t)b)
#define SC32 ((int32_t)(uint32_t)c)
#define SA64 ((int64_t)a)
#define SB64 ((int64_t)b)
#define REF(name, expr)                                                                            \
    static uint64_t name(uint64_t a, uint64_t b, uint64_t c)                                       \
    {                                                                                              \
        (void)a;                                                                                   \
        (void)b;                                                                                   \
        (void)c;                                                                                   \
        return (expr);                                                                             \
    }

/* f32 arithmetic */
REF(r_add, UF(F(a) + F(b)))
REF(r_add_rz, UF(radd(F(a), F(b), RZ)))
REF(r_add_rm, UF(radd(F(a), F(b), RM)))
REF(r_add_rp, UF(radd(F(a), F(b), RP)))
REF(r_sub_rm, UF(rsub(F(a), F(b), RM)))
REF(r_mul, UF(F(a) * F(b)))
REF(r_mul_rz, UF(rmul(F(a), F(b), RZ)))
REF(r_mul_rp, UF(rmul(F(a), F(b), RP)))
REF(r_add_ftz, UF(FTZ(FTZ(F(a)) + FTZ(F(b)))))
REF(r_mul_ftz, UF(FTZ(FTZ(F(a)) * FTZ(F(b)))))
REF(r_add_sat, UF(SAT(F(a) + F(b))))
REF(r_div, UF(F(a) / F(b)))
REF(r_div_rz, UF(rdiv(F(a), F(b), RZ)))
REF(r_div_ftz, UF(FTZ(FTZ(F(a)) / FTZ(F(b)))))
REF(r_fma, UF(fmaf(F(a), F(b), F(c))))
REF(r_fma_rm, UF(rfma(F(a), F(b), F(c), RM)))
REF(r_fma_ftz_sat, UF(SAT(FTZ(fmaf(FTZ(F(a)), FTZ(F(b)), FTZ(F(c)))))))
REF(r_sqrt, UF(sqrtf(F(a))))
REF(r_sqrt_rp, UF(rsqrtf_(F(a), RP)))
REF(r_rcp, UF(1.0f / F(a)))
REF(r_min, UF(pmin(F(a), F(b))))
REF(r_max, UF(pmax(F(a), F(b))))
REF(r_min_nan, (F(a) != F(a) || F(b) != F(b)) ? 0x7fffffffu : UF(pmin(F(a), F(b))))
REF(r_max_ftz, UF(pmax(FTZ(F(a)), FTZ(F(b)))))
REF(r_abs, (uint32_t)a & 0x7fffffffu)
REF(r_neg, (uint32_t)a ^ 0x80000000u)
REF(r_abs_ftz, RAWF(FTZ(F(a))) & 0x7fffffffu)
REF(r_copysign, ((uint32_t)b & 0x7fffffffu) | ((uint32_t)a & 0x80000000u))
/* compares: p1 | p2 << 1 */
REF(r_setp_lt, (uint64_t)(F(a) < F(b)) | (uint64_t)(!(F(a) < F(b))) << 1)
REF(r_setp_ltu, (uint64_t) !(F(a) >= F(b)) | (uint64_t)(F(a) >= F(b)) << 1)
REF(r_setp_ne, (uint64_t)(F(a) < F(b) || F(a) > F(b)))
REF(r_setp_neu, (uint64_t) !(F(a) == F(b)))
REF(r_setp_equ, (uint64_t)(F(a) == F(b) || F(a) != F(a) || F(b) != F(b)))
REF(r_setp_num, (uint64_t)(F(a) == F(a) && F(b) == F(b)))
REF(r_setp_nan, (uint64_t)(F(a) != F(a) || F(b) != F(b)))
REF(r_setp_ge_ftz, (uint64_t)(FTZ(F(a)) >= FTZ(F(b))))
REF(r_setp_gt_and, (uint64_t)((F(a) > F(b)) && (c & 1)) | (uint64_t)(!(F(a) > F(b)) && (c & 1))
                                                              << 1)
REF(r_setp_le_or_not,
    (uint64_t)((F(a) <= F(b)) || !(c & 1)) | (uint64_t)(!(F(a) <= F(b)) || !(c & 1)) << 1)
REF(r_set_lt_u32, F(a) < F(b) ? 0xffffffffu : 0)
REF(r_set_gtu_f32, !(F(a) <= F(b)) ? 0x3f800000u : 0)
REF(r_testp_finite, (uint64_t)(isfinite(F(a)) != 0))
REF(r_testp_subnormal, (uint64_t)(fpclassify(F(a)) == FP_SUBNORMAL))
REF(r_testp_normal, (uint64_t)(isnormal(F(a)) != 0))
REF(r_testp_notanumber, (uint64_t)(isnan(F(a)) != 0))
/* f32 conversions */
REF(r_cvt_rni_s32, f2i(rint((double)F(a)), 32, 1))
REF(r_cvt_rzi_u32, f2i(trunc((double)F(a)), 32, 0))
REF(r_cvt_rmi_s32, f2i(floor((double)F(a)), 32, 1))
REF(r_cvt_rpi_s64, f2i(ceil((double)F(a)), 64, 1))
REF(r_cvt_rzi_u64, f2i(trunc((double)F(a)), 64, 0))
REF(r_cvt_rni_s16, (uint64_t)(uint16_t)f2i(rint((double)F(a)), 16, 1))
REF(r_cvt_rni_f32, UF(rintf(F(a))))
REF(r_cvt_rmi_f32, UF(floorf(F(a))))
REF(r_cvt_rzi_ftz_f32, UF(truncf(FTZ(F(a)))))
REF(r_cvt_sat_f32, UF(SAT(F(a))))
REF(r_cvt_ftz_f32, UF(FTZ(F(a))))
REF(r_cvt_f64_f32, UD((double)F(a)))
REF(r_cvt_f16_f32, f2h(F(a)))
/* f64 */
REF(r_add64, UD(D(a) + D(b)))
REF(r_add64_rz, UD(raddd(D(a), D(b), RZ)))
REF(r_mul64_rm, UD(rmuld(D(a), D(b), RM)))
REF(r_fma64, UD(fma(D(a), D(b), D(c))))
REF(r_div64, UD(D(a) / D(b)))
REF(r_sqrt64, UD(sqrt(D(a))))
REF(r_sqrt64_rp, UD(rsqrtd(D(a), RP)))
REF(r_rcp64, UD(1.0 / D(a)))
REF(r_min64, UD(pmind(D(a), D(b))))
REF(r_neg64, a ^ 0x8000000000000000ull)
REF(r_cvt_rn_f32_f64, UF((float)D(a)))
REF(r_cvt_rz_f32_f64, UF(rd2f(D(a), RZ)))
REF(r_cvt_rm_f32_f64, UF(rd2f(D(a), RM)))
REF(r_cvt_rp_f32_f64, UF(rd2f(D(a), RP)))
REF(r_cvt_rni_s64_f64, f2i(rint(D(a)), 64, 1))
REF(r_cvt_rzi_u64_f64, f2i(trunc(D(a)), 64, 0))
REF(r_cvt_rzi_s32_f64, f2i(trunc(D(a)), 32, 1))
REF(r_cvt_rpi_f64, UD(ceil(D(a))))
REF(r_setp_ltu64, (uint64_t) !(D(a) >= D(b)))
/* i32 */
REF(r_addi, (uint32_t)(A32 + B32))
REF(r_subi, (uint32_t)(A32 - B32))
REF(r_mullo, (uint32_t)(A32 *B32))
REF(r_mulhi_s, (uint32_t)(((int64_t)SA32 * SB32) >> 32))
REF(r_mulhi_u, (uint32_t)(((uint64_t)A32 * B32) >> 32))
REF(r_mulwide_s, (uint64_t)((int64_t)SA32 *SB32))
REF(r_mulwide_u, (uint64_t)A32 *B32)
REF(r_madlo, (uint32_t)(A32 *B32 + C32))
REF(r_madhi_s, (uint32_t)((uint32_t)(((int64_t)SA32 * SB32) >> 32) + C32))
REF(r_madwide_u, (uint64_t)A32 *B32 + c)
REF(r_div_s, SB32 == 0                           ? (SA32 < 0 ? 1u : 0xffffffffu)
             : (SA32 == INT32_MIN && SB32 == -1) ? 0x80000000u
                                                 : (uint32_t)(SA32 / SB32))
REF(r_div_u, B32 == 0 ? 0xffffffffu : A32 / B32)
REF(r_rem_s, SB32 == 0 ? A32 : SB32 == -1 ? 0 : (uint32_t)(SA32 % SB32))
REF(r_rem_u, B32 == 0 ? A32 : A32 % B32)
REF(r_min_s, (uint32_t)(SA32 < SB32 ? SA32 : SB32))
REF(r_max_u, A32 > B32 ? A32 : B32)
REF(r_max_relu, (uint32_t)((SA32 > SB32 ? SA32 : SB32) < 0 ? 0 : (SA32 > SB32 ? SA32 : SB32)))
REF(r_abs_s, SA32 < 0 ? 0u - A32 : A32)
REF(r_neg_s, 0u - A32)
REF(r_addsat, (uint32_t)(int32_t)((int64_t)SA32 + SB32 > INT32_MAX   ? INT32_MAX
                                  : (int64_t)SA32 + SB32 < INT32_MIN ? INT32_MIN
                                                                     : SA32 + (int64_t)SB32))
REF(r_subsat, (uint32_t)(int32_t)((int64_t)SA32 - SB32 > INT32_MAX   ? INT32_MAX
                                  : (int64_t)SA32 - SB32 < INT32_MIN ? INT32_MIN
                                                                     : SA32 - (int64_t)SB32))
REF(r_and, A32 &B32)
REF(r_xor, A32 ^ B32)
REF(r_not, (uint32_t)~A32)
REF(r_cnot, A32 == 0 ? 1u : 0u)
REF(r_shl, B32 >= 32 ? 0 : (uint32_t)(A32 << B32))
REF(r_shr_s, (uint32_t)(B32 >= 32 ? (SA32 < 0 ? -1 : 0) : SA32 >> B32))
REF(r_shr_u, B32 >= 32 ? 0 : A32 >> B32)
REF(r_popc, (uint64_t)__builtin_popcount(A32))
REF(r_clz, A32 ? (uint64_t)__builtin_clz(A32) : 32)
static uint64_t r_brev(uint64_t a, uint64_t b, uint64_t c)
{
    (void)b;
    (void)c;
    uint32_t r = 0;
    for (int i = 0; i < 32; i++)
        r |= ((A32 >> i) & 1u) << (31 - i);
    return r;
}
REF(r_bfind_u, A32 ? 31u - (uint32_t)__builtin_clz(A32) : 0xffffffffu)
REF(r_bfind_s,
    (SA32 < 0 ? ~A32 : A32) ? 31u - (uint32_t)__builtin_clz(SA32 < 0 ? ~A32 : A32) : 0xffffffffu)
REF(r_bfind_shift, A32 ? (uint32_t)__builtin_clz(A32) : 0xffffffffu)
static uint64_t bfe_ref(uint64_t x, uint32_t pos, uint32_t len, int w, int sgn)
{
    pos &= 0xff;
    len &= 0xff;
    uint64_t d = 0;
    int msb = w - 1;
    int top = (int)(pos + len) - 1 > msb ? msb : (int)(pos + len) - 1;
    int sbit = (!sgn || len == 0) ? 0 : (int)((x >> top) & 1);
    for (int i = 0; i <= msb; i++) {
        int bit = ((uint32_t)i < len && pos + (uint32_t)i <= (uint32_t)msb)
                      ? (int)((x >> (pos + (uint32_t)i)) & 1)
                      : sbit;
        d |= (uint64_t)bit << i;
    }
    return d;
}
REF(r_bfe_u, bfe_ref(A32, B32 & 0x3f, C32 & 0x3f, 32, 0))
REF(r_bfe_s, bfe_ref(A32, B32 & 0x3f, C32 & 0x3f, 32, 1))
REF(r_bfe_s64, bfe_ref(a, B32 & 0x7f, C32 & 0x7f, 64, 1))
static uint64_t r_bfi(uint64_t a, uint64_t b, uint64_t c)
{
    uint32_t pos = C32 & 0x3f, len = (C32 >> 8) & 0x3f, f = B32;
    for (uint32_t i = 0; i < len && pos + i <= 31; i++)
        f = (f & ~(1u << (pos + i))) | (((A32 >> i) & 1u) << (pos + i));
    return f;
}
static uint32_t prmt_ref(uint32_t a, uint32_t b, uint32_t c, int mode)
{
    static const uint8_t tab[6][4][4] = {
        /* f4e */ {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},
        /* b4e */ {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},
        /* rc8 */ {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},
        /* ecl */ {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},
        /* ecr */ {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},
        /* rc16 */ {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}},
    };
    uint64_t x = (uint64_t)b << 32 | a;
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t byte;
        if (mode < 0) {
            unsigned s = (c >> (4 * i)) & 0xf;
            byte = (uint8_t)(x >> (8 * (s & 7)));
            if (s & 8)
                byte = (byte & 0x80) ? 0xff : 0;
        } else {
            byte = (uint8_t)(x >> (8 * tab[mode][c & 3][i]));
        }
        r |= (uint32_t)byte << (8 * i);
    }
    return r;
}
REF(r_prmt, prmt_ref(A32, B32, C32, -1))
REF(r_prmt_f4e, prmt_ref(A32, B32, C32, 0))
REF(r_prmt_b4e, prmt_ref(A32, B32, C32, 1))
REF(r_prmt_rc8, prmt_ref(A32, B32, C32, 2))
REF(r_prmt_ecl, prmt_ref(A32, B32, C32, 3))
REF(r_prmt_ecr, prmt_ref(A32, B32, C32, 4))
REF(r_prmt_rc16, prmt_ref(A32, B32, C32, 5))
REF(r_lop3_96, A32 ^ B32 ^ C32)
REF(r_lop3_e8, (A32 & B32) | (A32 & C32) | (B32 & C32))
REF(r_lop3_ca, (A32 & B32) | (~A32 & C32))
REF(r_shf_l_wrap, (uint32_t)((((uint64_t)B32 << 32 | A32) << (C32 & 31)) >> 32))
REF(r_shf_r_clamp, (uint32_t)(((uint64_t)B32 << 32 | A32) >> (C32 > 32 ? 32 : C32)))
REF(r_sad_s, (uint32_t)(C32 + (SA32 > SB32 ? A32 - B32 : B32 - A32)))
REF(r_sad_u, (uint32_t)(C32 + (A32 > B32 ? A32 - B32 : B32 - A32)))
REF(r_mul24_lo_s, (uint32_t)((int64_t)((int32_t)(A32 << 8) >> 8) * ((int32_t)(B32 << 8) >> 8)))
REF(r_mul24_hi_u, (uint32_t)(((uint64_t)(A32 & 0xffffff) * (B32 & 0xffffff)) >> 16))
REF(r_selp, (c & 1) ? A32 : B32)
REF(r_slct, SC32 >= 0 ? A32 : B32)
REF(r_setp_lt_s, (uint64_t)(SA32 < SB32) | (uint64_t)(SA32 >= SB32) << 1)
REF(r_setp_lo_u, (uint64_t)(A32 < B32))
REF(r_setp_hs_u, (uint64_t)(A32 >= B32))
REF(r_setp_ne_xor, (uint64_t)((A32 != B32) ^ (c & 1)))
REF(r_set_le_s, SA32 <= SB32 ? 0xffffffffu : 0)
REF(r_cvt_s8_s32, (uint32_t)(int32_t)(int8_t)A32)
REF(r_cvt_u8_s32, A32 & 0xff)
REF(r_cvt_sat_u8_s32, (uint64_t)(SA32<0 ? 0 : SA32> 255 ? 255 : SA32))
REF(r_cvt_sat_s8_s32, (uint32_t)(int32_t)(SA32<-128 ? -128 : SA32> 127 ? 127 : SA32))
REF(r_cvt_sat_s16_u32, (uint64_t)(A32 > 32767 ? 32767 : A32))
REF(r_cvt_s64_s32, (uint64_t)(int64_t)SA32)
REF(r_cvt_u64_s32, (uint64_t)(int64_t)SA32)
REF(r_cvt_sat_u32_s64,
    (uint64_t)(SA64<0 ? 0 : SA64>(int64_t) UINT32_MAX ? UINT32_MAX : (uint64_t)SA64))
REF(r_cvt_sat_s32_u64, (uint64_t)(uint32_t)(a > INT32_MAX ? INT32_MAX : (int32_t)a))
REF(r_cvt_rn_f32_s32, UF((float)SA32))
REF(r_cvt_rz_f32_s32, UF(ri2f(SA32, 0, RZ)))
REF(r_cvt_rm_f32_u32, UF(ri2f(A32, 1, RM)))
REF(r_cvt_rp_f32_u64, UF(ri2f((int64_t)a, 1, RP)))
REF(r_cvt_rn_f64_s64, UD((double)SA64))
REF(r_dp4a_su, (uint32_t)(C32 + (uint32_t)((int8_t)A32 * (uint8_t)B32 +
                                           (int8_t)(A32 >> 8) * (uint8_t)(B32 >> 8) +
                                           (int8_t)(A32 >> 16) * (uint8_t)(B32 >> 16) +
                                           (int8_t)(A32 >> 24) * (uint8_t)(B32 >> 24))))
/* dp2a: a's signed halves times b's unsigned bytes 2 and 3 (hi), or signed bytes 0 and 1 */
REF(r_dp2a_hi_su, (uint32_t)(C32 + (uint32_t)((int16_t)A32 * (uint8_t)(B32 >> 16) +
                                              (int16_t)(A32 >> 16) * (uint8_t)(B32 >> 24))))
REF(r_dp2a_lo_us, (uint32_t)(C32 + (uint32_t)((uint16_t)A32 * (int8_t)B32 +
                                              (uint16_t)(A32 >> 16) * (int8_t)(B32 >> 8))))
REF(r_add64_cc, a + b)
REF(r_sub64_cc, a - b)
/* i64 */
REF(r_mullo64, a *b)
REF(r_mulhi64_s, (uint64_t)(((__int128)SA64 * SB64) >> 64))
REF(r_mulhi64_u, (uint64_t)(((unsigned __int128)a * b) >> 64))
REF(r_div64_s, b == 0                              ? (SA64 < 0 ? 1 : ~0ull)
               : (SA64 == INT64_MIN && SB64 == -1) ? a
                                                   : (uint64_t)(SA64 / SB64))
REF(r_rem64_u, b == 0 ? a : a % b)
REF(r_min64_s, (uint64_t)(SA64 < SB64 ? SA64 : SB64))
REF(r_shl64, (uint32_t)b >= 64 ? 0 : a << (uint32_t)b)
REF(r_shr64_s, (uint64_t)((uint32_t)b >= 64 ? (SA64 < 0 ? -1 : 0) : SA64 >> (uint32_t)b))
REF(r_popc64, (uint64_t)__builtin_popcountll(a))
REF(r_clz64, a ? (uint64_t)__builtin_clzll(a) : 64)
REF(r_madlocc64, (a * b) + c)
/* i16 */
REF(r_add16, (uint16_t)(a + b))
REF(r_mullo16, (uint16_t)((uint32_t)(uint16_t)a *(uint16_t)b))
REF(r_mulwide16_s, (uint32_t)((int32_t)(int16_t)a *(int16_t)b))
REF(r_min16_s, (uint16_t)((int16_t)a < (int16_t)b ? a : b))
REF(r_shr16_s, (uint16_t)((uint32_t)b >= 16 ? ((int16_t)a < 0 ? 0xffff : 0)
                                            : (uint16_t)((int16_t)a >> (uint32_t)b)))
REF(r_cvt_s32_s16, (uint32_t)(int32_t)(int16_t)a)
REF(r_setp_lt16_s, (uint64_t)((int16_t)a < (int16_t)b))

static const struct tcase cases[] = {
    /* f32 */
    {"\tadd.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_add},
    {"\tadd.rz.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_add_rz},
    {"\tadd.rm.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_add_rm},
    {"\tadd.rp.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_add_rp},
    {"\tsub.rm.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_sub_rm},
    {"\tmul.rn.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_mul},
    {"\tmul.rz.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_mul_rz},
    {"\tmul.rp.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_mul_rp},
    {"\tadd.ftz.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_add_ftz},
    {"\tmul.ftz.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_mul_ftz},
    {"\tadd.sat.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_add_sat},
    {"\tdiv.rn.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_div},
    {"\tdiv.full.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_div},
    {"\tdiv.rz.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_div_rz},
    {"\tdiv.rn.ftz.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_div_ftz},
    {"\tfma.rn.f32 %f4, %f1, %f2, %f3;\n" OUT_F32, S_F32, r_fma},
    {"\tmad.rn.f32 %f4, %f1, %f2, %f3;\n" OUT_F32, S_F32, r_fma},
    {"\tfma.rm.f32 %f4, %f1, %f2, %f3;\n" OUT_F32, S_F32, r_fma_rm},
    {"\tfma.rn.ftz.sat.f32 %f4, %f1, %f2, %f3;\n" OUT_F32, S_F32, r_fma_ftz_sat},
    {"\tsqrt.rn.f32 %f4, %f1;\n" OUT_F32, S_F32, r_sqrt},
    {"\tsqrt.rp.f32 %f4, %f1;\n" OUT_F32, S_F32, r_sqrt_rp},
    {"\trcp.rn.f32 %f4, %f1;\n" OUT_F32, S_F32, r_rcp},
    {"\tmin.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_min},
    {"\tmax.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_max},
    {"\tmin.NaN.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_min_nan},
    {"\tmax.ftz.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_max_ftz},
    {"\tabs.f32 %f4, %f1;\n" OUT_F32, S_F32, r_abs},
    {"\tneg.f32 %f4, %f1;\n" OUT_F32, S_F32, r_neg},
    {"\tabs.ftz.f32 %f4, %f1;\n" OUT_F32, S_F32, r_abs_ftz},
    {"\tcopysign.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_copysign},
    {"\tsetp.lt.f32 %p1|%p2, %f1, %f2;\n" OUT_P12, S_F32, r_setp_lt},
    {"\tsetp.ltu.f32 %p1|%p2, %f1, %f2;\n" OUT_P12, S_F32, r_setp_ltu},
    {"\tsetp.ne.f32 %p1, %f1, %f2;\n" OUT_P12, S_F32, r_setp_ne},
    {"\tsetp.neu.f32 %p1, %f1, %f2;\n" OUT_P12, S_F32, r_setp_neu},
    {"\tsetp.equ.f32 %p1, %f1, %f2;\n" OUT_P12, S_F32, r_setp_equ},
    {"\tsetp.num.f32 %p1, %f1, %f2;\n" OUT_P12, S_F32, r_setp_num},
    {"\tsetp.nan.f32 %p1, %f1, %f2;\n" OUT_P12, S_F32, r_setp_nan},
    {"\tsetp.ge.ftz.f32 %p1, %f1, %f2;\n" OUT_P12, S_F32, r_setp_ge_ftz},
    {"\tsetp.gt.and.f32 %p1|%p2, %f1, %f2, %p3;\n" OUT_P12, S_F32, r_setp_gt_and},
    {"\tsetp.le.or.f32 %p1|%p2, %f1, %f2, !%p3;\n" OUT_P12, S_F32, r_setp_le_or_not},
    {"\tset.lt.u32.f32 %r4, %f1, %f2;\n" OUT_R32, S_F32, r_set_lt_u32},
    {"\tset.gtu.f32.f32 %f4, %f1, %f2;\n" OUT_F32, S_F32, r_set_gtu_f32},
    {"\ttestp.finite.f32 %p1, %f1;\n" OUT_P12, S_F32, r_testp_finite},
    {"\ttestp.subnormal.f32 %p1, %f1;\n" OUT_P12, S_F32, r_testp_subnormal},
    {"\ttestp.normal.f32 %p1, %f1;\n" OUT_P12, S_F32, r_testp_normal},
    {"\ttestp.notanumber.f32 %p1, %f1;\n" OUT_P12, S_F32, r_testp_notanumber},
    {"\tcvt.rni.s32.f32 %r4, %f1;\n" OUT_R32, S_F32, r_cvt_rni_s32},
    {"\tcvt.rzi.u32.f32 %r4, %f1;\n" OUT_R32, S_F32, r_cvt_rzi_u32},
    {"\tcvt.rmi.s32.f32 %r4, %f1;\n" OUT_R32, S_F32, r_cvt_rmi_s32},
    {"\tcvt.rpi.s64.f32 %rd4, %f1;\n", S_F32, r_cvt_rpi_s64},
    {"\tcvt.rzi.u64.f32 %rd4, %f1;\n", S_F32, r_cvt_rzi_u64},
    {"\tcvt.rni.s16.f32 %h4, %f1;\n" OUT_H16, S_F32, r_cvt_rni_s16},
    {"\tcvt.rni.f32.f32 %f4, %f1;\n" OUT_F32, S_F32, r_cvt_rni_f32},
    {"\tcvt.rmi.f32.f32 %f4, %f1;\n" OUT_F32, S_F32, r_cvt_rmi_f32},
    {"\tcvt.rzi.ftz.f32.f32 %f4, %f1;\n" OUT_F32, S_F32, r_cvt_rzi_ftz_f32},
    {"\tcvt.sat.f32.f32 %f4, %f1;\n" OUT_F32, S_F32, r_cvt_sat_f32},
    {"\tcvt.ftz.f32.f32 %f4, %f1;\n" OUT_F32, S_F32, r_cvt_ftz_f32},
    {"\tcvt.f64.f32 %fd4, %f1;\n" OUT_F64, S_F32, r_cvt_f64_f32},
    {"\tcvt.rn.f16.f32 %h4, %f1;\n" OUT_H16, S_F32, r_cvt_f16_f32},
    /* f64 */
    {"\tadd.f64 %fd4, %fd1, %fd2;\n" OUT_F64, S_F64, r_add64},
    {"\tadd.rz.f64 %fd4, %fd1, %fd2;\n" OUT_F64, S_F64, r_add64_rz},
    {"\tmul.rm.f64 %fd4, %fd1, %fd2;\n" OUT_F64, S_F64, r_mul64_rm},
    {"\tfma.rn.f64 %fd4, %fd1, %fd2, %fd3;\n" OUT_F64, S_F64, r_fma64},
    {"\tdiv.rn.f64 %fd4, %fd1, %fd2;\n" OUT_F64, S_F64, r_div64},
    {"\tsqrt.rn.f64 %fd4, %fd1;\n" OUT_F64, S_F64, r_sqrt64},
    {"\tsqrt.rp.f64 %fd4, %fd1;\n" OUT_F64, S_F64, r_sqrt64_rp},
    {"\trcp.rn.f64 %fd4, %fd1;\n" OUT_F64, S_F64, r_rcp64},
    {"\tmin.f64 %fd4, %fd1, %fd2;\n" OUT_F64, S_F64, r_min64},
    {"\tneg.f64 %fd4, %fd1;\n" OUT_F64, S_F64, r_neg64},
    {"\tcvt.rn.f32.f64 %f4, %fd1;\n" OUT_F32, S_F64, r_cvt_rn_f32_f64},
    {"\tcvt.rz.f32.f64 %f4, %fd1;\n" OUT_F32, S_F64, r_cvt_rz_f32_f64},
    {"\tcvt.rm.f32.f64 %f4, %fd1;\n" OUT_F32, S_F64, r_cvt_rm_f32_f64},
    {"\tcvt.rp.f32.f64 %f4, %fd1;\n" OUT_F32, S_F64, r_cvt_rp_f32_f64},
    {"\tcvt.rni.s64.f64 %rd4, %fd1;\n", S_F64, r_cvt_rni_s64_f64},
    {"\tcvt.rzi.u64.f64 %rd4, %fd1;\n", S_F64, r_cvt_rzi_u64_f64},
    {"\tcvt.rzi.s32.f64 %r4, %fd1;\n" OUT_R32, S_F64, r_cvt_rzi_s32_f64},
    {"\tcvt.rpi.f64.f64 %fd4, %fd1;\n" OUT_F64, S_F64, r_cvt_rpi_f64},
    {"\tsetp.ltu.f64 %p1, %fd1, %fd2;\n" OUT_P12, S_F64, r_setp_ltu64},
    /* i32 */
    {"\tadd.s32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_addi},
    {"\tsub.u32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_subi},
    {"\tmul.lo.s32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_mullo},
    {"\tmul.hi.s32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_mulhi_s},
    {"\tmul.hi.u32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_mulhi_u},
    {"\tmul.wide.s32 %rd4, %r1, %r2;\n", S_I32, r_mulwide_s},
    {"\tmul.wide.u32 %rd4, %r1, %r2;\n", S_I32, r_mulwide_u},
    {"\tmad.lo.u32 %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_madlo},
    {"\tmad.hi.s32 %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_madhi_s},
    {"\tmad.wide.u32 %rd4, %r1, %r2, %rd3;\n", S_I32, r_madwide_u},
    {"\tdiv.s32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_div_s},
    {"\tdiv.u32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_div_u},
    {"\trem.s32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_rem_s},
    {"\trem.u32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_rem_u},
    {"\tmin.s32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_min_s},
    {"\tmax.u32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_max_u},
    {"\tmax.relu.s32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_max_relu},
    {"\tabs.s32 %r4, %r1;\n" OUT_R32, S_I32, r_abs_s},
    {"\tneg.s32 %r4, %r1;\n" OUT_R32, S_I32, r_neg_s},
    {"\tadd.sat.s32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_addsat},
    {"\tsub.sat.s32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_subsat},
    {"\tand.b32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_and},
    {"\txor.b32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_xor},
    {"\tnot.b32 %r4, %r1;\n" OUT_R32, S_I32, r_not},
    {"\tcnot.b32 %r4, %r1;\n" OUT_R32, S_I32, r_cnot},
    {"\tshl.b32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_shl},
    {"\tshr.s32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_shr_s},
    {"\tshr.u32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_shr_u},
    {"\tpopc.b32 %r4, %r1;\n" OUT_R32, S_I32, r_popc},
    {"\tclz.b32 %r4, %r1;\n" OUT_R32, S_I32, r_clz},
    {"\tbrev.b32 %r4, %r1;\n" OUT_R32, S_I32, r_brev},
    {"\tbfind.u32 %r4, %r1;\n" OUT_R32, S_I32, r_bfind_u},
    {"\tbfind.s32 %r4, %r1;\n" OUT_R32, S_I32, r_bfind_s},
    {"\tbfind.shiftamt.u32 %r4, %r1;\n" OUT_R32, S_I32, r_bfind_shift},
    {"\tand.b32 %r5, %r2, 63;\n\tand.b32 %r6, %r3, 63;\n\tbfe.u32 %r4, %r1, %r5, %r6;\n" OUT_R32,
     S_I32, r_bfe_u},
    {"\tand.b32 %r5, %r2, 63;\n\tand.b32 %r6, %r3, 63;\n\tbfe.s32 %r4, %r1, %r5, %r6;\n" OUT_R32,
     S_I32, r_bfe_s},
    {"\tand.b32 %r5, %r2, 127;\n\tand.b32 %r6, %r3, 127;\n\tbfe.s64 %rd4, %rd1, %r5, %r6;\n", S_I64,
     r_bfe_s64},
    {"\tand.b32 %r5, %r3, 63;\n\tshr.u32 %r6, %r3, 8;\n\tand.b32 %r6, %r6, 63;\n"
     "\tbfi.b32 %r4, %r1, %r2, %r5, %r6;\n" OUT_R32,
     S_I32, r_bfi},
    {"\tprmt.b32 %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_prmt},
    {"\tprmt.b32.f4e %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_prmt_f4e},
    {"\tprmt.b32.b4e %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_prmt_b4e},
    {"\tprmt.b32.rc8 %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_prmt_rc8},
    {"\tprmt.b32.ecl %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_prmt_ecl},
    {"\tprmt.b32.ecr %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_prmt_ecr},
    {"\tprmt.b32.rc16 %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_prmt_rc16},
    {"\tlop3.b32 %r4, %r1, %r2, %r3, 0x96;\n" OUT_R32, S_I32, r_lop3_96},
    {"\tlop3.b32 %r4, %r1, %r2, %r3, 0xe8;\n" OUT_R32, S_I32, r_lop3_e8},
    {"\tlop3.b32 %r4, %r1, %r2, %r3, 0xca;\n" OUT_R32, S_I32, r_lop3_ca},
    {"\tshf.l.wrap.b32 %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_shf_l_wrap},
    {"\tshf.r.clamp.b32 %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_shf_r_clamp},
    {"\tsad.s32 %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_sad_s},
    {"\tsad.u32 %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_sad_u},
    {"\tmul24.lo.s32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_mul24_lo_s},
    {"\tmul24.hi.u32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_mul24_hi_u},
    {"\tselp.b32 %r4, %r1, %r2, %p3;\n" OUT_R32, S_I32, r_selp},
    {"\tslct.u32.s32 %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_slct},
    {"\tsetp.lt.s32 %p1|%p2, %r1, %r2;\n" OUT_P12, S_I32, r_setp_lt_s},
    {"\tsetp.lo.u32 %p1, %r1, %r2;\n" OUT_P12, S_I32, r_setp_lo_u},
    {"\tsetp.hs.u32 %p1, %r1, %r2;\n" OUT_P12, S_I32, r_setp_hs_u},
    {"\tsetp.ne.xor.b32 %p1, %r1, %r2, %p3;\n" OUT_P12, S_I32, r_setp_ne_xor},
    {"\tset.le.s32.s32 %r4, %r1, %r2;\n" OUT_R32, S_I32, r_set_le_s},
    {"\tcvt.s8.s32 %r4, %r1;\n" OUT_R32, S_I32, r_cvt_s8_s32},
    {"\tcvt.u8.s32 %r4, %r1;\n" OUT_R32, S_I32, r_cvt_u8_s32},
    {"\tcvt.sat.u8.s32 %r4, %r1;\n" OUT_R32, S_I32, r_cvt_sat_u8_s32},
    {"\tcvt.sat.s8.s32 %r4, %r1;\n" OUT_R32, S_I32, r_cvt_sat_s8_s32},
    {"\tcvt.sat.s16.u32 %h4, %r1;\n" OUT_H16, S_I32, r_cvt_sat_s16_u32},
    {"\tcvt.s64.s32 %rd4, %r1;\n", S_I32, r_cvt_s64_s32},
    {"\tcvt.u64.s32 %rd4, %r1;\n", S_I32, r_cvt_u64_s32},
    {"\tcvt.sat.u32.s64 %r4, %rd1;\n" OUT_R32, S_I64, r_cvt_sat_u32_s64},
    {"\tcvt.sat.s32.u64 %r4, %rd1;\n" OUT_R32, S_I64, r_cvt_sat_s32_u64},
    {"\tcvt.rn.f32.s32 %f4, %r1;\n" OUT_F32, S_I32, r_cvt_rn_f32_s32},
    {"\tcvt.rz.f32.s32 %f4, %r1;\n" OUT_F32, S_I32, r_cvt_rz_f32_s32},
    {"\tcvt.rm.f32.u32 %f4, %r1;\n" OUT_F32, S_I32, r_cvt_rm_f32_u32},
    {"\tcvt.rp.f32.u64 %f4, %rd1;\n" OUT_F32, S_I64, r_cvt_rp_f32_u64},
    {"\tcvt.rn.f64.s64 %fd4, %rd1;\n" OUT_F64, S_I64, r_cvt_rn_f64_s64},
    {"\tdp4a.s32.u32 %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_dp4a_su},
    {"\tdp2a.hi.s32.u32 %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_dp2a_hi_su},
    {"\tdp2a.lo.u32.s32 %r4, %r1, %r2, %r3;\n" OUT_R32, S_I32, r_dp2a_lo_us},
    {"\tadd.cc.u32 %r4, %r1, %r2;\n\taddc.u32 %r5, %r11, %r12;\n\tmov.b64 %rd4, {%r4, %r5};\n",
     S_I64, r_add64_cc},
    {"\tsub.cc.u32 %r4, %r1, %r2;\n\tsubc.cc.u32 %r5, %r11, %r12;\n\tmov.b64 %rd4, {%r4, %r5};\n",
     S_I64, r_sub64_cc},
    /* i64 */
    {"\tmul.lo.u64 %rd4, %rd1, %rd2;\n", S_I64, r_mullo64},
    {"\tmul.hi.s64 %rd4, %rd1, %rd2;\n", S_I64, r_mulhi64_s},
    {"\tmul.hi.u64 %rd4, %rd1, %rd2;\n", S_I64, r_mulhi64_u},
    {"\tdiv.s64 %rd4, %rd1, %rd2;\n", S_I64, r_div64_s},
    {"\trem.u64 %rd4, %rd1, %rd2;\n", S_I64, r_rem64_u},
    {"\tmin.s64 %rd4, %rd1, %rd2;\n", S_I64, r_min64_s},
    {"\tshl.b64 %rd4, %rd1, %r2;\n", S_I64, r_shl64},
    {"\tshr.s64 %rd4, %rd1, %r2;\n", S_I64, r_shr64_s},
    {"\tpopc.b64 %r4, %rd1;\n" OUT_R32, S_I64, r_popc64},
    {"\tclz.b64 %r4, %rd1;\n" OUT_R32, S_I64, r_clz64},
    {"\tmad.lo.cc.u64 %rd4, %rd1, %rd2, %rd3;\n", S_I64, r_madlocc64},
    /* i16 */
    {"\tadd.u16 %h4, %h1, %h2;\n" OUT_H16, S_I16, r_add16},
    {"\tmul.lo.s16 %h4, %h1, %h2;\n" OUT_H16, S_I16, r_mullo16},
    {"\tmul.wide.s16 %r4, %h1, %h2;\n" OUT_R32, S_I16, r_mulwide16_s},
    {"\tmin.s16 %h4, %h1, %h2;\n" OUT_H16, S_I16, r_min16_s},
    {"\tshr.s16 %h4, %h1, %r2;\n" OUT_H16, S_I16, r_shr16_s},
    {"\tcvt.s32.s16 %r4, %h1;\n" OUT_R32, S_I16, r_cvt_s32_s16},
    {"\tsetp.lt.s16 %p1, %h1, %h2;\n" OUT_P12, S_I16, r_setp_lt16_s},
};

static void each_instruction_matches_the_ptx_isa_on_edge_values(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(&cases[i]);
}

/* f16 -> f32 is exact, and the round trip through cvt.rn.f16.f32 matches the reference */
static uint64_t r_h2f_trip(uint64_t a, uint64_t b, uint64_t c)
{
    (void)b;
    (void)c;
    uint16_t h = f2h(F(a));
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float s = (h & 0x8000) ? -1.0f : 1.0f, v;
    if (e == 0)
        v = s * ldexpf((float)m, -24);
    else if (e == 31)
        v = m ? NAN : s * INFINITY;
    else
        v = s * ldexpf((float)(m | 0x400), e - 25);
    return UF(v);
}

static void half_round_trip_is_exact(void **state)
{
    (void)state;
    static const struct tcase c = {"\tcvt.rn.f16.f32 %h4, %f1;\n\tcvt.f32.f16 %f4, %h4;\n" OUT_F32,
                                   S_F32, r_h2f_trip};
    run_case(&c);
}

int main(int argc, char **argv)
{
    ptxt_init(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_instruction_matches_the_ptx_isa_on_edge_values),
        cmocka_unit_test(half_round_trip_is_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
