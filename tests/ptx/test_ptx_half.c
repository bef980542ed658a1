/* SPDX-License-Identifier: Apache-2.0
 *
 * Half-precision instruction semantics (src/sim/ptx/ops_half.c), one PTX instruction at a
 * time over every pair of a set of edge values (zeros, subnormals, the largest and smallest
 * normals, infinities, quiet and signalling NaNs, values one ulp from a tie, ...), each third
 * operand another of them, the packed forms with other pairs in the high halves. Compared bit
 * for bit with a reference written from the PTX ISA: the exact result in quad precision (its
 * rounding error kept, so a sticky bit past 113 bits still decides a tie), rounded to nearest
 * even by searching the format's values; .ftz, .sat, .relu, canonical NaN, min/max with NaN
 * and signed zeros, ordered and unordered compares.
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

typedef __float128 q128;

static const uint16_t f16_vals[] = {
    0x0000, 0x8000, 0x3c00, 0xbc00, 0x3e00, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff,
    0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0x3555, 0x3bff, 0x5640, 0x1400, 0x7800,
    0x3c01, 0x4000, 0x2e66, 0x0200, 0x8400, 0x7bfe, 0x1001, 0xd0ff,
};
static const uint16_t bf16_vals[] = {
    0x0000, 0x8000, 0x3f80, 0xbf80, 0x3fc0, 0x0001, 0x8001, 0x007f, 0x0080,
    0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0x3eab, 0x3f7f, 0x42c8,
    0x3f81, 0x4000, 0x3dcd, 0x0100, 0x7e80, 0x0b00, 0x8b01, 0x4b80, 0xb380,
};

/* ---- reference ---- */

static int isnan16(uint16_t h, int bf)
{
    return bf ? (h & 0x7f80) == 0x7f80 && (h & 0x7f) : (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}
static int sub16(uint16_t h, int bf) /* zero or subnormal */
{
    return (h & (bf ? 0x7f80 : 0x7c00)) == 0;
}
static q128 val16(uint16_t h, int bf) /* finite or infinite, exactly */
{
    int mb = bf ? 7 : 10, bias = bf ? 127 : 15;
    int e = (h & 0x7fff) >> mb, m = h & ((1 << mb) - 1);
    q128 v;
    if (e == (bf ? 0xff : 0x1f))
        v = (q128)INFINITY;
    else if (e == 0)
        v = ldexp((double)m, 1 - bias - mb);
    else
        v = ldexp((double)(m | 1 << mb), e - bias - mb);
    return (h & 0x8000) ? -v : v;
}
/* S + E (E the rounding error of S, exactly) rounded to nearest even. */
static uint16_t round16(q128 s, q128 e, int bf)
{
    if (s != s)
        return 0x7fff;
    uint16_t sign = s < 0 || (s == 0 && signbit((double)s)) ? 0x8000 : 0;
    q128 v = s < 0 ? -s : s, ev = s < 0 ? -e : e;
    uint16_t maxf = bf ? 0x7f7f : 0x7bff, lo = 0, hi = maxf;
    if (v >= val16(maxf, bf)) {
        lo = maxf;
    } else { /* the largest value not above v */
        while (lo < hi) {
            uint16_t mid = (uint16_t)((lo + hi + 1) / 2);
            if (val16(mid, bf) <= v)
                lo = mid;
            else
                hi = (uint16_t)(mid - 1);
        }
    }
    if (val16(lo, bf) == v && ev == 0)
        return sign | lo;
    q128 top = lo == maxf ? (q128)(bf ? ldexp(1.0, 128) : 65536.0) : val16((uint16_t)(lo + 1), bf);
    q128 d = v - (val16(lo, bf) + top) / 2;
    int up = d > 0 || (d == 0 && (ev > 0 || (ev == 0 && (lo & 1))));
    if (!up)
        return sign | lo;
    return sign | (lo == maxf ? (uint16_t)(maxf + 1) : (uint16_t)(lo + 1));
}
static void two_sum(q128 a, q128 b, q128 *s, q128 *e)
{
    *s = a + b;
    q128 bb = *s - a;
    *e = (a - (*s - bb)) + (b - bb);
    if (*s != *s || *s - *s != 0) /* inf or NaN */
        *e = 0;
}

enum { OP_ADD, OP_SUB, OP_MUL, OP_FMA, OP_NEG, OP_ABS, OP_MIN, OP_MAX };
enum { M_FTZ = 1, M_SAT = 2, M_RELU = 4, M_NAN = 8 };

static uint16_t ref_op(int op, int mods, int bf, uint16_t a, uint16_t b, uint16_t c)
{
    if (mods & M_FTZ) {
        a = sub16(a, bf) ? a & 0x8000 : a;
        b = sub16(b, bf) ? b & 0x8000 : b;
        c = sub16(c, bf) ? c & 0x8000 : c;
    }
    if (op == OP_NEG)
        return a ^ 0x8000;
    if (op == OP_ABS)
        return a & 0x7fff;
    if (op == OP_MIN || op == OP_MAX) {
        if (isnan16(a, bf) || isnan16(b, bf))
            return (mods & M_NAN) || (isnan16(a, bf) && isnan16(b, bf)) ? 0x7fff
                   : isnan16(a, bf)                                     ? b
                                                                        : a;
        q128 x = val16(a, bf), y = val16(b, bf);
        if (x == y)
            return (op == OP_MIN) == !!(a & 0x8000) ? a : b;
        return (x < y) == (op == OP_MIN) ? a : b;
    }
    q128 x = val16(a, bf), y = val16(b, bf), s, e = 0;
    int nan = isnan16(a, bf) || isnan16(b, bf) || (op == OP_FMA && isnan16(c, bf));
    if (op == OP_ADD)
        two_sum(x, y, &s, &e);
    else if (op == OP_SUB)
        two_sum(x, -y, &s, &e);
    else if (op == OP_MUL)
        s = x * y;
    else
        two_sum(x * y, val16(c, bf), &s, &e);
    uint16_t r = nan || s != s ? 0x7fff : round16(s, e, bf);
    if (isnan16(r, bf))
        return (mods & M_SAT) ? 0 : 0x7fff;
    if ((mods & M_FTZ) && sub16(r, bf))
        r &= 0x8000;
    if ((mods & M_RELU) && (r & 0x8000))
        r = 0;
    if (mods & M_SAT)
        r = (r & 0x8000) ? 0 : val16(r, bf) > 1 ? (bf ? 0x3f80 : 0x3c00) : r;
    return r;
}

static int ref_cmp(int ci, int ftz, int bf, uint16_t a, uint16_t b)
{
    if (ftz) {
        a = sub16(a, bf) ? a & 0x8000 : a;
        b = sub16(b, bf) ? b & 0x8000 : b;
    }
    int un = isnan16(a, bf) || isnan16(b, bf);
    q128 x = un ? 0 : val16(a, bf), y = un ? 0 : val16(b, bf);
    switch (ci) {
    case 0: /* eq ne lt le gt ge */
        return !un && x == y;
    case 1:
        return !un && x != y;
    case 2:
        return !un && x < y;
    case 3:
        return !un && x <= y;
    case 4:
        return !un && x > y;
    case 5:
        return !un && x >= y;
    case 6: /* equ neu ltu leu gtu geu */
        return un || x == y;
    case 7:
        return un || x != y;
    case 8:
        return un || x < y;
    case 9:
        return un || x <= y;
    case 10:
        return un || x > y;
    case 11:
        return un || x >= y;
    case 12:
        return !un;
    default:
        return un;
    }
}
static const char *const cmp_names[] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",  "equ",
                                        "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};

/* ---- the harness ---- */

static const char prologue[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry t(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd,\n"
    "    .param .u32 pn)\n{\n"
    "\t.reg .pred %p<8>;\n\t.reg .b16 %h<8>;\n\t.reg .b32 %r<24>;\n\t.reg .b64 %rd<24>;\n"
    "\tmov.u32 %r20, %ctaid.x;\n\tmov.u32 %r21, %ntid.x;\n\tmov.u32 %r22, %tid.x;\n"
    "\tmad.lo.u32 %r23, %r20, %r21, %r22;\n\tld.param.u32 %r20, [pn];\n"
    "\tsetp.ge.u32 %p7, %r23, %r20;\n\t@%p7 bra $L_end;\n"
    "\tmul.wide.u32 %rd20, %r23, 4;\n"
    "\tld.param.u64 %rd21, [pa];\n\tadd.s64 %rd21, %rd21, %rd20;\n\tld.global.u32 %r1, [%rd21];\n"
    "\tld.param.u64 %rd21, [pb];\n\tadd.s64 %rd21, %rd21, %rd20;\n\tld.global.u32 %r2, [%rd21];\n"
    "\tld.param.u64 %rd21, [pc];\n\tadd.s64 %rd21, %rd21, %rd20;\n\tld.global.u32 %r3, [%rd21];\n"
    "\tmov.b32 {%h1, %h5}, %r1;\n\tmov.b32 {%h2, %h6}, %r2;\n\tmov.b32 {%h3, %h7}, %r3;\n"
    "\tand.b32 %r19, %r3, 1;\n\tsetp.ne.u32 %p3, %r19, 0;\n"
    "\tmov.u32 %r4, 0;\n";
static const char epilogue[] = "\tld.param.u64 %rd21, [pd];\n\tadd.s64 %rd21, %rd21, %rd20;\n"
                               "\tst.global.u32 [%rd21], %r4;\n$L_end:\n\tret;\n}\n";

/* Runs BODY (result in %r4) on each of the N packed operand triples A, B, C; REF gives the
 * expected 32 bits from them. */
typedef uint32_t (*ref32)(const void *ctx, uint32_t a, uint32_t b, uint32_t c);
static void run_on(const char *body, uint32_t *a, uint32_t *b, uint32_t *c, uint32_t n, ref32 ref,
                   const void *ctx)
{
    uint32_t *d = malloc(n * 4);
    for (uint32_t i = 0; i < n; i++)
        d[i] = 0xdeadbeef;
    size_t len = strlen(prologue) + strlen(body) + strlen(epilogue) + 1;
    char *text = malloc(len);
    snprintf(text, len, "%s%s%s", prologue, body, epilogue);
    struct tf_ptx_module *m = ptxt_load_text(text);
    const struct tf_ptx_kernel *k = ptxt_kernel(m, "t");
    struct tf_ptx_range bufs[] = {PTXT_RANGE(a, n * 4), PTXT_RANGE(b, n * 4), PTXT_RANGE(c, n * 4),
                                  PTXT_RANGE(d, n * 4)};
    struct ptxt_arg args[] = {PTXT_ARG(a), PTXT_ARG(b), PTXT_ARG(c), PTXT_ARG(d), PTXT_ARG(n)};
    uint32_t *a0 = malloc(n * 4); /* the operands as they were (atomics change a) */
    memcpy(a0, a, n * 4);
    ptxt_launch_ok(k, (struct ptxt_dim){(n + 127) / 128, 1, 1}, (struct ptxt_dim){128, 1, 1}, 0,
                   args, 5, bufs, 4);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t want = ref(ctx, a0[i], b[i], c[i]);
        if (d[i] != want)
            fail_msg("'%s' a=0x%08x b=0x%08x c=0x%08x: got 0x%08x want 0x%08x", body, a[i], b[i],
                     c[i], d[i], want);
    }
    tf_ptx_module_destroy(m);
    free(text);
    free(d);
    free(a0);
}

/* BODY over every pair of VALS, each third operand another of them, the packed high halves
 * from other pairs. */
static void run(const char *body, const uint16_t *vals, size_t nv, ref32 ref, const void *ctx)
{
    uint32_t n = (uint32_t)(nv * nv);
    uint32_t *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 4);
    for (uint32_t i = 0; i < n; i++) {
        a[i] = vals[i / nv] | (uint32_t)vals[(i * 5 + 1) % nv] << 16;
        b[i] = vals[i % nv] | (uint32_t)vals[(i * 3 + 2) % nv] << 16;
        c[i] = vals[(i * 7 + 3) % nv] | (uint32_t)vals[(i * 11 + 5) % nv] << 16;
    }
    run_on(body, a, b, c, n, ref, ctx);
    free(a);
    free(b);
    free(c);
}

struct arith {
    const char *insn; /* e.g. "fma.rn.ftz.sat" (the type is appended) */
    int op, mods;
};
struct actx {
    const struct arith *ar;
    int bf, x2;
};
static uint32_t arith_ref(const void *p, uint32_t a, uint32_t b, uint32_t c)
{
    const struct actx *x = p;
    uint32_t lo = ref_op(x->ar->op, x->ar->mods, x->bf, (uint16_t)a, (uint16_t)b, (uint16_t)c);
    if (!x->x2)
        return lo;
    return lo | (uint32_t)ref_op(x->ar->op, x->ar->mods, x->bf, (uint16_t)(a >> 16),
                                 (uint16_t)(b >> 16), (uint16_t)(c >> 16))
                    << 16;
}

static void arith_cases(const struct arith *cases, size_t ncases, int bf)
{
    const uint16_t *vals = bf ? bf16_vals : f16_vals;
    size_t nv = bf ? sizeof(bf16_vals) / 2 : sizeof(f16_vals) / 2;
    for (size_t i = 0; i < ncases; i++)
        for (int x2 = 0; x2 < 2; x2++) {
            const struct arith *ar = &cases[i];
            int nsrc = ar->op == OP_FMA ? 3 : ar->op == OP_NEG || ar->op == OP_ABS ? 1 : 2;
            const char *ty = bf ? (x2 ? "bf16x2" : "bf16") : (x2 ? "f16x2" : "f16");
            char body[256];
            if (x2)
                snprintf(body, sizeof(body), "\t%s.%s %%r4, %%r1%s%s;\n", ar->insn, ty,
                         nsrc > 1 ? ", %r2" : "", nsrc > 2 ? ", %r3" : "");
            else
                snprintf(body, sizeof(body), "\t%s.%s %%h4, %%h1%s%s;\n\tcvt.u32.u16 %%r4, %%h4;\n",
                         ar->insn, ty, nsrc > 1 ? ", %h2" : "", nsrc > 2 ? ", %h3" : "");
            struct actx ctx = {ar, bf, x2};
            run(body, vals, nv, arith_ref, &ctx);
        }
}

static void f16_arithmetic_is_the_isa_s(void **state)
{
    static const struct arith cases[] = {
        {"add", OP_ADD, 0},
        {"add.rn", OP_ADD, 0},
        {"add.ftz", OP_ADD, M_FTZ},
        {"add.sat", OP_ADD, M_SAT},
        {"add.rn.ftz.sat", OP_ADD, M_FTZ | M_SAT},
        {"sub", OP_SUB, 0},
        {"sub.ftz.sat", OP_SUB, M_FTZ | M_SAT},
        {"mul", OP_MUL, 0},
        {"mul.rn.ftz", OP_MUL, M_FTZ},
        {"mul.sat", OP_MUL, M_SAT},
        {"fma.rn", OP_FMA, 0},
        {"fma.rn.ftz", OP_FMA, M_FTZ},
        {"fma.rn.sat", OP_FMA, M_SAT},
        {"fma.rn.relu", OP_FMA, M_RELU},
        {"fma.rn.ftz.relu", OP_FMA, M_FTZ | M_RELU},
        {"neg", OP_NEG, 0},
        {"neg.ftz", OP_NEG, M_FTZ},
        {"abs", OP_ABS, 0},
        {"abs.ftz", OP_ABS, M_FTZ},
        {"min", OP_MIN, 0},
        {"min.ftz", OP_MIN, M_FTZ},
        {"min.NaN", OP_MIN, M_NAN},
        {"max", OP_MAX, 0},
        {"max.ftz.NaN", OP_MAX, M_FTZ | M_NAN},
    };
    arith_cases(cases, sizeof(cases) / sizeof(cases[0]), 0);
}

static void bf16_arithmetic_is_the_isa_s(void **state)
{
    static const struct arith cases[] = {
        {"add", OP_ADD, 0},         {"add.rn", OP_ADD, 0}, {"sub.rn", OP_SUB, 0},
        {"mul", OP_MUL, 0},         {"fma.rn", OP_FMA, 0}, {"fma.rn.relu", OP_FMA, M_RELU},
        {"neg", OP_NEG, 0},         {"abs", OP_ABS, 0},    {"min", OP_MIN, 0},
        {"min.NaN", OP_MIN, M_NAN}, {"max", OP_MAX, 0},    {"max.NaN", OP_MAX, M_NAN},
    };
    arith_cases(cases, sizeof(cases) / sizeof(cases[0]), 1);
}

/* A tie that only a bit far past double precision decides. bf16: 1.125 * 0.90625 is
 * 1 + 5 * 2^-8, midway between 1 + 2^-6 (even) and 1 + 5 * 2^-8 + 2^-8; adding 2^-133 (the
 * smallest subnormal) must round up, and subtracting it down: a sum in double drops the 2^-133
 * and rounds the tie to even both times. And a product exactly at a tie goes to even. */
static void fma_rounds_once_even_past_double_precision(void **state)
{
    static const struct arith fma = {"fma.rn", OP_FMA, 0};
    struct actx ctx = {&fma, 1, 0};
    uint32_t a[] = {0x3f90, 0x3f90, 0x3f90, 0xbf90, 0x3b80},
             b[] = {0x3f68, 0x3f68, 0x3f68, 0x3f68, 0x3f80},
             c[] = {0x0001, 0x8001, 0x0000, 0x8001, 0x3f80};
    uint32_t want[] = {0x3f83, 0x3f82, 0x3f82, 0xbf83, 0x3f80};
    for (int i = 0; i < 5; i++)
        assert_int_equal(arith_ref(&ctx, a[i], b[i], c[i]), want[i]); /* the reference agrees */
    run_on("\tfma.rn.bf16 %h4, %h1, %h2, %h3;\n\tcvt.u32.u16 %r4, %h4;\n", a, b, c, 5, arith_ref,
           &ctx);
    /* packed: the same in both halves */
    for (int i = 0; i < 5; i++) {
        a[i] |= a[i] << 16;
        b[i] |= b[i] << 16;
        c[i] |= c[i] << 16;
    }
    ctx.x2 = 1;
    run_on("\tfma.rn.bf16x2 %r4, %r1, %r2, %r3;\n", a, b, c, 5, arith_ref, &ctx);
}

/* atom.add.noftz on halves: the memory gets the sum rounded once (subnormals kept), the old
 * value comes back; 16-bit compare-and-swap. */
struct atctx {
    int bf, x2, cas;
};
static uint32_t atom_ref(const void *p, uint32_t a, uint32_t b, uint32_t c)
{
    const struct atctx *x = p;
    if (x->cas) /* returns the old low half; stores C's low half where A's low half equals B's */
        return (uint16_t)a | (uint32_t)((uint16_t)a == (uint16_t)b ? (uint16_t)c : (uint16_t)a)
                                 << 16;
    uint32_t lo = ref_op(OP_ADD, 0, x->bf, (uint16_t)a, (uint16_t)b, 0);
    if (!x->x2) /* low: the new value, high: the old one */
        return lo | (a & 0xffff) << 16;
    return lo | (uint32_t)ref_op(OP_ADD, 0, x->bf, (uint16_t)(a >> 16), (uint16_t)(b >> 16), 0)
                    << 16;
}

static void half_atomics_round_once(void **state)
{
    static const char addr[] = "\tld.param.u64 %rd5, [pa];\n\tadd.s64 %rd5, %rd5, %rd20;\n";
    for (int bf = 0; bf < 2; bf++) {
        const uint16_t *vals = bf ? bf16_vals : f16_vals;
        size_t nv = bf ? sizeof(bf16_vals) / 2 : sizeof(f16_vals) / 2;
        const char *ty = bf ? "bf16" : "f16";
        char body[512];
        struct atctx x = {bf, 0, 0};
        snprintf(body, sizeof(body),
                 "%s\tatom.global.add.noftz.%s %%h4, [%%rd5], %%h2;\n"
                 "\tld.global.u16 %%h3, [%%rd5];\n\tmov.b32 %%r4, {%%h3, %%h4};\n",
                 addr, ty);
        run(body, vals, nv, atom_ref, &x);
        x.x2 = 1;
        snprintf(body, sizeof(body),
                 "%s\tred.global.add.noftz.%sx2 [%%rd5], %%r2;\n\tld.global.u32 %%r4, [%%rd5];\n",
                 addr, ty);
        run(body, vals, nv, atom_ref, &x);
    }
    struct atctx x = {0, 0, 1};
    char body[512];
    snprintf(body, sizeof(body),
             "%s\tatom.global.cas.b16 %%h4, [%%rd5], %%h2, %%h3;\n\tld.global.u16 %%h3, [%%rd5];\n"
             "\tmov.b32 %%r4, {%%h4, %%h3};\n",
             addr);
    static const uint16_t cv[] = {0, 1, 7, 0xffff, 0x8000};
    run(body, cv, 5, atom_ref, &x);
}

/* ---- FP8 ---- */

/* The value of FP8 byte B (e4m3 or, with E5, e5m2); NaN for its NaNs. */
static double f8_value(uint8_t b, int e5)
{
    int mb = e5 ? 2 : 3, bias = e5 ? 15 : 7, e = (b & 0x7f) >> mb, m = b & ((1 << mb) - 1);
    double v;
    if (e5 ? e == 31 : (e == 15 && m == 7))
        v = e5 && !m ? INFINITY : NAN;
    else
        v = e ? ldexp(m | 1 << mb, e - bias - mb) : ldexp(m, 1 - bias - mb);
    return (b & 0x80) ? -v : v;
}

/* V to FP8 by search: the nearest finite value, ties to the even code, saturated (satfinite). */
static uint8_t f8_ref(double v, int e5)
{
    if (v != v)
        return 0x7f;
    uint8_t sign = signbit(v) ? 0x80 : 0, best = 0;
    double a = fabs(v), bd = INFINITY;
    if (isinf(a)) /* satfinite: the largest finite value */
        return sign | (e5 ? 0x7b : 0x7e);
    for (int c = 0; c < 0x80; c++) {
        double x = f8_value((uint8_t)c, e5);
        if (x != x || isinf(x))
            continue;
        double dd = fabs(x - a);
        if (dd < bd || (dd == bd && !(c & 1))) {
            bd = dd;
            best = (uint8_t)c;
        }
    }
    return sign | best;
}

struct f8ctx {
    int e5; /* 1: e5m2, else e4m3; 2: from f32 pairs */
};
static uint32_t to_f8_ref(const void *p, uint32_t a, uint32_t b, uint32_t c)
{
    int e5 = ((const struct f8ctx *)p)->e5 & 1;
    if (((const struct f8ctx *)p)->e5 & 2) { /* from f32 A (upper byte) and B */
        float fa, fb;
        memcpy(&fa, &a, 4);
        memcpy(&fb, &b, 4);
        return (uint32_t)f8_ref(fa, e5) << 8 | f8_ref(fb, e5);
    }
    double hi = val16((uint16_t)(a >> 16), 0), lo = val16((uint16_t)a, 0);
    hi = isnan16((uint16_t)(a >> 16), 0) ? NAN : hi;
    lo = isnan16((uint16_t)a, 0) ? NAN : lo;
    return (uint32_t)f8_ref(hi, e5) << 8 | f8_ref(lo, e5);
}
static uint32_t from_f8_ref(const void *p, uint32_t a, uint32_t b, uint32_t c)
{
    int e5 = ((const struct f8ctx *)p)->e5;
    uint32_t out = 0;
    for (int k = 0; k < 2; k++) {
        double x = f8_value((uint8_t)(a >> (k ? 8 : 0)), e5);
        out |= (uint32_t)(x != x ? 0x7fff : round16(x, 0, 0)) << (k ? 16 : 0);
    }
    return out;
}

/* Every f16 value to e4m3 and e5m2 (a pair per conversion), and every pair of FP8 bytes back
 * to f16x2, against the search above. */
static void fp8_conversions_are_exact_and_saturate(void **state)
{
    uint32_t n = 32768, *a = malloc(n * 4), *b = calloc(n, 4), *c = calloc(n, 4);
    for (uint32_t i = 0; i < n; i++)
        a[i] = (2 * i) | (2 * i + 1) << 16;
    for (int e5 = 0; e5 < 2; e5++) {
        struct f8ctx x = {e5};
        char body[256];
        snprintf(body, sizeof(body),
                 "\tcvt.rn.satfinite.%s.f16x2 %%h4, %%r1;\n\tcvt.u32.u16 %%r4, %%h4;\n",
                 e5 ? "e5m2x2" : "e4m3x2");
        run_on(body, a, b, c, n, to_f8_ref, &x);
        for (uint32_t i = 0; i < n; i++) /* the other sign too */
            a[i] ^= 0x80008000u;
        run_on(body, a, b, c, n, to_f8_ref, &x);
        uint32_t *f = malloc(65536 * 4), *z = calloc(65536, 4);
        for (uint32_t i = 0; i < 65536; i++)
            f[i] = i;
        snprintf(body, sizeof(body), "\tcvt.rn.f16x2.%s %%r4, %%h1;\n", e5 ? "e5m2x2" : "e4m3x2");
        run_on(body, f, z, z, 65536, from_f8_ref, &x);
        free(f);
        free(z);
    }
    /* and from f32 pairs: a into the upper byte */
    static const float fv[] = {0.0f,     -0.0f,     1.0f,   0.3f,         448.0f,   464.0f,
                               480.0f,   1e9f,      -3e-3f, 1.5e-3f,      57344.0f, 61440.0f,
                               INFINITY, -INFINITY, NAN,    0.0009765625f};
    uint32_t nf = sizeof(fv) / sizeof(fv[0]), *fa = malloc(nf * nf * 4), *fb = malloc(nf * nf * 4);
    for (uint32_t i = 0; i < nf * nf; i++) {
        memcpy(&fa[i], &fv[i / nf], 4);
        memcpy(&fb[i], &fv[i % nf], 4);
    }
    for (int e5 = 0; e5 < 2; e5++) {
        struct f8ctx x = {e5 + 2};
        char body[256];
        snprintf(body, sizeof(body),
                 "\tcvt.rn.satfinite.%s.f32 %%h4, %%r1, %%r2;\n\tcvt.u32.u16 %%r4, %%h4;\n",
                 e5 ? "e5m2x2" : "e4m3x2");
        run_on(body, fa, fb, fb, nf * nf, to_f8_ref, &x);
    }
    free(fa);
    free(fb);
    assert_int_equal(f8_ref(448.0, 0), 0x7e);
    assert_int_equal(f8_ref(1e9, 0), 0x7e);
    assert_int_equal(f8_ref(INFINITY, 1), 0x7b);
    free(a);
    free(b);
    free(c);
}

struct cctx {
    int ci, ftz, bf, x2, set;
};
static uint32_t cmp_ref(const void *p, uint32_t a, uint32_t b, uint32_t c)
{
    const struct cctx *x = p;
    int lo = ref_cmp(x->ci, x->ftz, x->bf, (uint16_t)a, (uint16_t)b);
    int hi = ref_cmp(x->ci, x->ftz, x->bf, (uint16_t)(a >> 16), (uint16_t)(b >> 16));
    if (!x->set) /* setp ...: p (and q from the high halves) combined .and with %p3 (c & 1) */
        return (uint32_t)((lo && (c & 1)) | (x->x2 ? ((hi && (c & 1)) << 1) : 0));
    if (!x->x2) /* set.u32 */
        return lo ? 0xffffffffu : 0;
    uint32_t one = x->bf ? 0x3f80 : 0x3c00; /* set.f16x2 */
    return (lo ? one : 0) | (hi ? one << 16 : 0);
}

static void half_compares_are_the_isa_s(void **state)
{
    for (int bf = 0; bf < 2; bf++)
        for (int ci = 0; ci < 14; ci++)
            for (int form = 0; form < 4; form++) {
                struct cctx ctx = {ci, bf ? 0 : ci % 3 == 0, bf, form & 1, form >> 1};
                const char *ty = bf ? (ctx.x2 ? "bf16x2" : "bf16") : (ctx.x2 ? "f16x2" : "f16");
                const char *ftz = ctx.ftz ? ".ftz" : "";
                char body[320];
                if (!ctx.set && !ctx.x2)
                    snprintf(body, sizeof(body),
                             "\tsetp.%s.and%s.%s %%p1, %%h1, %%h2, %%p3;\n"
                             "\tselp.u32 %%r4, 1, 0, %%p1;\n",
                             cmp_names[ci], ftz, ty);
                else if (!ctx.set)
                    snprintf(body, sizeof(body),
                             "\tsetp.%s.and%s.%s %%p1|%%p2, %%r1, %%r2, %%p3;\n"
                             "\tselp.u32 %%r4, 1, 0, %%p1;\n\tselp.u32 %%r5, 2, 0, %%p2;\n"
                             "\tor.b32 %%r4, %%r4, %%r5;\n",
                             cmp_names[ci], ftz, ty);
                else if (!ctx.x2)
                    snprintf(body, sizeof(body), "\tset.%s%s.u32.%s %%r4, %%h1, %%h2;\n",
                             cmp_names[ci], ftz, ty);
                else
                    snprintf(body, sizeof(body), "\tset.%s%s.%s.%s %%r4, %%r1, %%r2;\n",
                             cmp_names[ci], ftz, ty, ty);
                const uint16_t *vals = bf ? bf16_vals : f16_vals;
                size_t nv = bf ? sizeof(bf16_vals) / 2 : sizeof(f16_vals) / 2;
                run(body, vals, nv, cmp_ref, &ctx);
            }
}

/* What the engine does not do is refused when the module loads, naming the instruction. */
static void unsupported_half_forms_are_refused(void **state)
{
    static const char *const bodies[] = {
        "\tmin.xorsign.abs.f16 %h4, %h1, %h2;\n",
        "\tadd.rz.f16 %h4, %h1, %h2;\n",
        "\tfma.f16 %h4, %h1, %h2, %h3;\n",
        "\tadd.ftz.bf16 %h4, %h1, %h2;\n",
        "\tfma.rn.sat.relu.f16 %h4, %h1, %h2, %h3;\n",
        "\tex2.approx.f16 %h4, %h1;\n",
        "\tset.lt.f16.f32 %h4, %r1, %r2;\n",
    };
    for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
        char text[2048];
        snprintf(text, sizeof(text), "%s%s%s", prologue, bodies[i], epilogue);
        struct tf_ptx_module *m = NULL;
        char err[256] = "";
        if (tf_ptx_module_load(text, strlen(text), &m, err, sizeof(err)) == TF_PTX_OK)
            fail_msg("'%s' was accepted", bodies[i]);
        if (!strstr(err, "unsupported instruction"))
            fail_msg("'%s': %s", bodies[i], err);
    }
}

int main(int argc, char **argv)
{
    ptxt_init(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f16_arithmetic_is_the_isa_s),
        cmocka_unit_test(bf16_arithmetic_is_the_isa_s),
        cmocka_unit_test(fma_rounds_once_even_past_double_precision),
        cmocka_unit_test(half_compares_are_the_isa_s),
        cmocka_unit_test(half_atomics_round_once),
        cmocka_unit_test(fp8_conversions_are_exact_and_saturate),
        cmocka_unit_test(unsupported_half_forms_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
