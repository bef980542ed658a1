/* SPDX-License-Identifier: Apache-2.0
 *
 * Half-precision arithmetic: add, sub, mul, fma, neg, abs, min and max on .f16 and .bf16 and
 * their packed pairs (.f16x2, .bf16x2), as cuda_fp16.h and cuda_bf16.h emit them (__hadd,
 * __hmul2, __hfma, __hmax, operator+ on __half, ...). Results are the PTX ISA's: rounded once
 * to nearest even (the only rounding these take), .ftz flushing subnormal inputs and results
 * to a zero of the same sign, .sat clamping to [0, 1] (NaN to +0), .relu clamping negative
 * results to +0 (NaN stays NaN), NaN results canonical (0x7fff), min/max preferring the number
 * to a NaN (both NaN, or .NaN: canonical NaN) and -0 to +0.
 *
 * Sums, differences and products are exact in double for these widths (or, for bf16 sums,
 * off only where rounding to nearest cannot tell), so one rounding to 16 bits is the hardware's.
 * fma rounds a*b+c to double toward zero with a sticky last bit (round to odd, from the exact
 * error of the sum) before that one rounding, which then is correct too.
 * setp and set compare as the PTX ISA says for floats (ordered, unordered, .num, .nan; the
 * .f16x2 forms per half: setp's p from the low halves and q from the high ones). Not supported
 * (refused at load): .xorsign.abs, ex2/tanh/rcp/sqrt, set with a half result of another
 * type's compare.
 */
#include "sim/ptx/internal.h"

#include <math.h>
#include <string.h>

enum { H_ADD, H_SUB, H_MUL, H_FMA, H_NEG, H_ABS, H_MIN, H_MAX };
/* in->flags */
enum { HF_BF16 = 1, HF_X2 = 2, HF_FTZ = 4, HF_SAT = 8, HF_RELU = 16, HF_NAN = 32 };

#define H_CANON 0x7fffu

static inline int h_isnan(uint16_t h, int bf16)
{
    return bf16 ? (h & 0x7f80u) == 0x7f80u && (h & 0x7fu)
                : (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
}

static inline uint16_t h_ftz(uint16_t h, int bf16)
{
    return (h & (bf16 ? 0x7f80u : 0x7c00u)) == 0 ? (uint16_t)(h & 0x8000u) : h;
}

/* a*b+c rounded toward zero to double with its last bit set when inexact (round to odd):
 * rounding that to 16 bits is then the single rounding of the exact value. A*B is exact. */
static double fma_odd(double a, double b, double c)
{
    double p = a * b, s = p + c;
    if (!isfinite(s))
        return s;
    double bb = s - p, e = (p - (s - bb)) + (c - bb); /* p + c == s + e exactly */
    if (e == 0)
        return s;
    if ((s > 0) != (e > 0)) /* the exact value is nearer zero than s */
        s = nextafter(s, 0.0);
    uint64_t u;
    memcpy(&u, &s, 8);
    if (!(u & 1))
        s = nextafter(s, s > 0 ? INFINITY : -INFINITY);
    return s;
}

static inline uint16_t h_minmax(uint16_t a, uint16_t b, int bf16, int max, int nan)
{
    int an = h_isnan(a, bf16), bn = h_isnan(b, bf16);
    if (an || bn)
        return (nan || (an && bn)) ? H_CANON : an ? b : a;
    double x = tf__h2f(a, bf16), y = tf__h2f(b, bf16);
    if (x == y) /* -0 below +0 */
        return (uint16_t)(((a & 0x8000u) != 0) == !max ? a : b);
    return (x < y) == !max ? a : b;
}

static uint16_t h_one(const struct tf__insn *in, uint16_t a, uint16_t b, uint16_t c)
{
    const int f = in->flags, bf16 = f & HF_BF16;
    if (f & HF_FTZ) {
        a = h_ftz(a, bf16);
        b = h_ftz(b, bf16);
        c = h_ftz(c, bf16);
    }
    switch (in->sub) {
    case H_NEG:
        return (uint16_t)(a ^ 0x8000u);
    case H_ABS:
        return (uint16_t)(a & 0x7fffu);
    case H_MIN:
    case H_MAX:
        return h_minmax(a, b, bf16, in->sub == H_MAX, f & HF_NAN);
    default:
        break;
    }
    double x = tf__h2f(a, bf16), y = tf__h2f(b, bf16), r;
    switch (in->sub) {
    case H_ADD:
        r = x + y;
        break;
    case H_SUB:
        r = x - y;
        break;
    case H_MUL:
        r = x * y;
        break;
    default:
        r = fma_odd(x, y, tf__h2f(c, bf16));
        break;
    }
    uint16_t h = tf__f2h(r, MOD_RN, bf16);
    if (h_isnan(h, bf16))
        return (f & HF_SAT) ? 0 : H_CANON;
    if (f & HF_FTZ)
        h = h_ftz(h, bf16);
    if ((f & HF_RELU) && (h & 0x8000u))
        h = 0;
    if (f & HF_SAT) {
        if (h & 0x8000u)
            h = 0;
        else if (tf__h2f(h, bf16) > 1.0)
            h = bf16 ? 0x3f80u : 0x3c00u;
    }
    return h;
}

TF__OP(half_op)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);
    const int x2 = in->flags & HF_X2, nin = in->sub == H_FMA                       ? 3
                                            : in->sub >= H_NEG && in->sub <= H_ABS ? 1
                                                                                   : 2;
    TF__FOR_LANES(m, {
        uint32_t ra = (uint32_t)pa[l], rb = nin > 1 ? (uint32_t)pb[l] : 0,
                 rc = nin > 2 ? (uint32_t)pc[l] : 0;
        uint32_t lo = h_one(in, (uint16_t)ra, (uint16_t)rb, (uint16_t)rc);
        uint32_t hi =
            x2 ? h_one(in, (uint16_t)(ra >> 16), (uint16_t)(rb >> 16), (uint16_t)(rc >> 16)) : 0;
        d[l] = x2 ? (hi << 16 | lo) : lo;
    });
    return TF__GO;
}

/* ---- comparisons ---- */

/* in->w1: the comparison (the order of CMPS below), in->w2: HF_BF16 | HF_X2 | HF_FTZ; in->sub
 * and in->flags: the .and/.or/.xor with predicate in->c (tf__bool_operand). */
static inline int h_cmp(uint16_t a, uint16_t b, int w2, int ci)
{
    const int bf16 = w2 & HF_BF16;
    if (w2 & HF_FTZ) {
        a = h_ftz(a, bf16);
        b = h_ftz(b, bf16);
    }
    double x = tf__h2f(a, bf16), y = tf__h2f(b, bf16);
    int un = x != x || y != y;
    switch (ci) {
    case 0:
        return x == y;
    case 1:
        return x < y || x > y;
    case 2:
        return x < y;
    case 3:
        return x <= y;
    case 4:
        return x > y;
    case 5:
        return x >= y;
    case 6:
        return x == y || un;
    case 7:
        return !(x == y);
    case 8:
        return !(x >= y);
    case 9:
        return !(x > y);
    case 10:
        return !(x <= y);
    case 11:
        return !(x < y);
    case 12:
        return !un;
    default:
        return un;
    }
}

/* The compare over the lanes of M: low halves' into *LO, high halves' into *HI. */
static void h_cmp_lanes(struct tf__warp *w, const struct tf__insn *in, uint32_t m, uint32_t *lo,
                        uint32_t *hi)
{
    const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b);
    uint32_t l0 = 0, h0 = 0;
    TF__FOR_LANES(m, {
        uint32_t ra = (uint32_t)pa[l], rb = (uint32_t)pb[l];
        l0 |= (uint32_t)h_cmp((uint16_t)ra, (uint16_t)rb, in->w2, in->w1) << l;
        if (in->w2 & HF_X2)
            h0 |= (uint32_t)h_cmp((uint16_t)(ra >> 16), (uint16_t)(rb >> 16), in->w2, in->w1) << l;
    });
    *lo = l0;
    *hi = h0;
}

/* BITS combined with the predicate operand by the .and/.or/.xor, if any. */
static inline uint32_t h_bool(struct tf__warp *w, const struct tf__insn *in, uint32_t bits)
{
    if (in->sub == BOOL_NONE)
        return bits;
    uint32_t c = in->flags ? ~w->p[in->c] : w->p[in->c];
    return in->sub == BOOL_AND ? bits & c : in->sub == BOOL_OR ? bits | c : bits ^ c;
}

TF__OP(half_setp)
{
    uint32_t lo, hi;
    h_cmp_lanes(w, in, m, &lo, &hi);
    if (!(in->w2 & HF_X2))
        return tf__setp_finish(w, in, m, lo);
    /* setp.f16x2 p|q: p from the low halves, q from the high ones */
    w->p[in->d[0]] = (w->p[in->d[0]] & ~m) | (h_bool(w, in, lo) & m);
    if (in->d[1] != TF__NONE)
        w->p[in->d[1]] = (w->p[in->d[1]] & ~m) | (h_bool(w, in, hi) & m);
    return TF__GO;
}

TF__OP(half_set)
{
    uint32_t lo, hi;
    h_cmp_lanes(w, in, m, &lo, &hi);
    if (!(in->w2 & HF_X2))
        return tf__set_finish(w, in, m, lo);
    lo = h_bool(w, in, lo);
    hi = h_bool(w, in, hi);
    uint64_t *d = TF__R(in->d[0]), one = in->mask;
    TF__FOR_LANES(m, d[l] = (((hi >> l) & 1) ? one << 16 : 0) | (((lo >> l) & 1) ? one : 0));
    return TF__GO;
}

static int decode_cmp(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in, int ty)
{
    static const int ok[] = {MOD_EQ,  MOD_NE,  MOD_LT,  MOD_LE,  MOD_GT,  MOD_GE,  MOD_EQU,
                             MOD_NEU, MOD_LTU, MOD_LEU, MOD_GTU, MOD_GEU, MOD_NUM, MOD_ISNAN,
                             MOD_AND, MOD_OR,  MOD_XOR, MOD_FTZ, MOD_NONE};
    static const int cmps[] = {MOD_EQ,  MOD_NE,  MOD_LT,  MOD_LE,  MOD_GT,  MOD_GE,  MOD_EQU,
                               MOD_NEU, MOD_LTU, MOD_LEU, MOD_GTU, MOD_GEU, MOD_NUM, MOD_ISNAN};
    struct tf__mods md;
    if (tf__mods(dc, pi, ok, &md))
        return -1;
    const int set = pi->base[3] == '\0', bf16 = ty == TY_BF16 || ty == TY_BF16X2,
              x2 = ty == TY_F16X2 || ty == TY_BF16X2, ftz = tf__has(&md, MOD_FTZ);
    int ci = -1, n = 0;
    for (int i = 0; i < 14; i++)
        if (tf__has(&md, cmps[i])) {
            ci = i;
            n++;
        }
    int bop = tf__bool_op(&md);
    if (n != 1 || bop < 0 || (ftz && bf16) || md.nt != (set ? 2u : 1u) || md.t[md.nt - 1] != ty)
        return tf__unsupported(dc, pi);
    in->w1 = (uint8_t)ci;
    in->w2 = (uint8_t)((bf16 ? HF_BF16 : 0) | (x2 ? HF_X2 : 0) | (ftz ? HF_FTZ : 0));
    if (tf__bool_operand(dc, pi, in, bop, 3))
        return -1;
    if (!set) {
        in->fn = half_setp;
        return tf__setp_operands(dc, pi, in, ty);
    }
    /* set: the result type takes all ones, or 1.0 of the compared type, per true compare */
    const int dty = md.t[0];
    const uint16_t one = bf16 ? 0x3f80u : 0x3c00u;
    if (x2 && (dty == ty))
        in->mask = one;
    else if (x2 && (dty == TY_U32 || dty == TY_S32))
        in->mask = 0xffffu;
    else if (!x2 && dty == ty)
        in->mask = one;
    else if (!x2 && (dty == TY_U16 || dty == TY_S16))
        in->mask = 0xffffu;
    else if (!x2 && (dty == TY_U32 || dty == TY_S32))
        in->mask = 0xffffffffu;
    else
        return tf__unsupported(dc, pi);
    in->fn = half_set;
    if (tf__dst(dc, pi, &pi->ops[0], &in->d[0], NULL) || tf__src(dc, pi, &pi->ops[1], ty, &in->a) ||
        tf__src(dc, pi, &pi->ops[2], ty, &in->b))
        return -1;
    return 1;
}

/* ---- decoding ---- */

int tf__decode_half(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in, int ty)
{
    if (!strcmp(pi->base, "setp") || !strcmp(pi->base, "set"))
        return decode_cmp(dc, pi, in, ty);
    static const char *const names[] = {"add", "sub", "mul", "fma", "neg", "abs", "min", "max"};
    int op = -1;
    for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
        if (!strcmp(pi->base, names[i]))
            op = i;
    if (op < 0)
        return 0;
    const int bf16 = ty == TY_BF16 || ty == TY_BF16X2, x2 = ty == TY_F16X2 || ty == TY_BF16X2;
    static const int ok[] = {MOD_RN, MOD_FTZ, MOD_SAT, MOD_RELU, MOD_NAN, MOD_NONE};
    struct tf__mods md;
    if (tf__mods(dc, pi, ok, &md))
        return -1;
    const int rn = tf__has(&md, MOD_RN), ftz = tf__has(&md, MOD_FTZ), sat = tf__has(&md, MOD_SAT),
              relu = tf__has(&md, MOD_RELU), nan = tf__has(&md, MOD_NAN);
    /* What each takes (PTX ISA): .rn on add/sub/mul (optional) and fma (required); .ftz and .sat
     * on f16 arithmetic; .relu on fma without .sat; .NaN on min/max; .ftz on f16 neg/abs/min/max.
     */
    int arith = op <= H_FMA, bad = md.nt != 1;
    bad |= rn && !arith;
    bad |= op == H_FMA && !rn;
    bad |= ftz && bf16;
    bad |= sat && (bf16 || !arith);
    bad |= relu && (op != H_FMA || sat);
    bad |= nan && op != H_MIN && op != H_MAX;
    if (bad)
        return tf__unsupported(dc, pi);
    in->fn = half_op;
    in->sub = (uint8_t)op;
    in->flags = (uint8_t)((bf16 ? HF_BF16 : 0) | (x2 ? HF_X2 : 0) | (ftz ? HF_FTZ : 0) |
                          (sat ? HF_SAT : 0) | (relu ? HF_RELU : 0) | (nan ? HF_NAN : 0));
    uint32_t nsrc = op == H_FMA ? 3 : op == H_NEG || op == H_ABS ? 1 : 2;
    int tys[3] = {ty, ty, ty};
    return tf__int_operands(dc, pi, in, nsrc, tys);
}
