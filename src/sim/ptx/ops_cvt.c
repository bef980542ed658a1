/* SPDX-License-Identifier: Apache-2.0
 *
 * cvt: every integer width to every other (truncation, sign/zero extension, .sat), float to
 * integer (.rni/.rzi/.rmi/.rpi, always saturating, NaN -> 0), integer to float
 * (.rn/.rz/.rm/.rp), float to float (widening exact, narrowing with rounding, round to
 * integral, .ftz/.sat), and f16/bf16 (scalar and packed x2, .relu/.satfinite) with exact
 * software rounding. The common forms have their own handlers; the rare ones share a general
 * handler driven by decode-time fields.
 */
#include "sim/ptx/internal.h"

#include <math.h>

/* ---- half precision ---- */

/* Rounds V to binary16 (BF16 = 0) or bfloat16 (BF16 = 1) in MODE (MOD_RN/RZ/RM/RP). */
uint16_t tf__f2h(double v, int mode, int bf16)
{
    const int mb = bf16 ? 7 : 10, bias = bf16 ? 127 : 15, emin = 1 - bias, emax = bias;
    uint16_t sign = signbit(v) ? 0x8000 : 0;
    if (v != v)
        return 0x7fff;
    double a = fabs(v);
    uint16_t inf = (uint16_t)(((1u << (bf16 ? 8 : 5)) - 1) << mb);
    uint16_t maxf = (uint16_t)(inf - 1);
    if (isinf(a))
        return sign | inf;
    if (a == 0)
        return sign;
    int x;
    frexp(a, &x);
    int e = x - 1;
    int qe = (e < emin ? emin : e) - mb;
    double q = ldexp(a, -qe);
    double n;
    switch (mode) {
    case MOD_RZ:
        n = trunc(q);
        break;
    case MOD_RM:
        n = sign ? ceil(q) : floor(q);
        break;
    case MOD_RP:
        n = sign ? floor(q) : ceil(q);
        break;
    default:
        n = rint(q);
        break;
    }
    uint32_t bits;
    if (e < emin) {
        bits = (uint32_t)n; /* n == 2^mb is the smallest normal, encoded the same way */
    } else {
        uint32_t nn = (uint32_t)n;
        if (nn == (2u << mb)) {
            e++;
            nn = 1u << mb;
        }
        if (e > emax) {
            int to_inf = mode == MOD_RN || (mode == MOD_RP && !sign) || (mode == MOD_RM && sign);
            return sign | (to_inf ? inf : maxf);
        }
        bits = ((uint32_t)(e + bias) << mb) | (nn - (1u << mb));
    }
    return (uint16_t)(sign | bits);
}

double tf__h2f(uint16_t h, int bf16)
{
    const int mb = bf16 ? 7 : 10, bias = bf16 ? 127 : 15;
    unsigned emask = (1u << (bf16 ? 8 : 5)) - 1;
    unsigned e = (h >> mb) & emask, m = h & ((1u << mb) - 1);
    double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == emask)
        return m ? NAN : s * INFINITY;
    if (e == 0)
        return s * ldexp((double)m, 1 - bias - mb);
    return s * ldexp((double)((1u << mb) | m), (int)e - bias - mb);
}

/* ---- integer to integer ---- */

static inline uint64_t ext(uint64_t v, unsigned bits, int is_signed)
{
    return is_signed ? tf__sext(v, bits) : (v & tf__wmask(bits));
}

/* fields: w1 source bits, w2 dest bits, flags: 1 source signed, 2 dest signed, 4 .sat;
 * mask: destination register mask */
TF__OP(cvt_ii)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    unsigned sw = in->w1, dw = in->w2;
    int ss = in->flags & 1, ds = (in->flags >> 1) & 1, sat = (in->flags >> 2) & 1;
    uint64_t mk = in->mask;
    TF__FOR_LANES(m, {
        uint64_t v = ext(pa[l], sw, ss);
        if (sat) {
            if (ss) {
                int64_t x = (int64_t)v;
                int64_t lo = ds ? -(int64_t)(tf__wmask(dw - 1)) - 1 : 0;
                int64_t hi = ds ? (int64_t)tf__wmask(dw - 1)
                                : (dw >= 64 ? INT64_MAX : (int64_t)tf__wmask(dw));
                v = (uint64_t)(x < lo ? lo : x > hi ? hi : x);
            } else {
                uint64_t hi = ds ? tf__wmask(dw - 1) : tf__wmask(dw);
                v = v > hi ? hi : v;
            }
        }
        d[l] = ext(v, dw, ds) & mk;
    });
    return TF__GO;
}

/* ---- float to integer ---- */

static inline uint64_t f2i(double x, unsigned dw, int ds)
{
    if (x != x)
        return 0;
    double dhi = ldexp(1.0, ds ? (int)dw - 1 : (int)dw);
    double dlo = ds ? -dhi : 0.0;
    uint64_t v;
    if (x <= dlo)
        v = ds ? (uint64_t)(-(int64_t)(tf__wmask(dw - 1)) - 1) : 0;
    else if (x >= dhi)
        v = ds ? tf__wmask(dw - 1) : tf__wmask(dw);
    else
        v = ds ? (uint64_t)(int64_t)x : (uint64_t)x;
    return ext(v, dw, ds);
}

/* fields: w2 dest bits, flags: 2 dest signed; mask: destination register mask */
#define F2I(name, read, round)                                                                     \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a);                                                         \
        unsigned dw = in->w2;                                                                      \
        int ds = (in->flags >> 1) & 1;                                                             \
        uint64_t mk = in->mask;                                                                    \
        TF__FOR_LANES(m, {                                                                         \
            double x = read(pa[l]);                                                                \
            d[l] = f2i(round(x), dw, ds) & mk;                                                     \
        });                                                                                        \
        return TF__GO;                                                                             \
    }
static inline double rd_f32(uint64_t v)
{
    return tf__f32(v);
}
static inline double rd_f32ftz(uint64_t v)
{
    return tf__ftz32(tf__f32(v));
}
static inline double rd_f64(uint64_t v)
{
    return tf__f64(v);
}
static inline double rd_f16(uint64_t v)
{
    return tf__h2f((uint16_t)v, 0);
}
static inline double rd_bf16(uint64_t v)
{
    return tf__h2f((uint16_t)v, 1);
}
#define F2I_R(sfx, read)                                                                           \
    F2I(f2i_rni##sfx, read, rint)                                                                  \
    F2I(f2i_rzi##sfx, read, trunc)                                                                 \
    F2I(f2i_rmi##sfx, read, floor)                                                                 \
    F2I(f2i_rpi##sfx, read, ceil)
/* clang-format off */
F2I_R(_f32, rd_f32)
F2I_R(_f32f, rd_f32ftz)
F2I_R(_f64, rd_f64)
F2I_R(_f16, rd_f16)
F2I_R(_bf16, rd_bf16)
/* clang-format on */
#define F2I_ROW(sfx)                                                                               \
    {                                                                                              \
        f2i_rni##sfx, f2i_rzi##sfx, f2i_rmi##sfx, f2i_rpi##sfx                                     \
    }
static const tf__op_fn f2i_tab[5][4] = {F2I_ROW(_f32), F2I_ROW(_f32f), F2I_ROW(_f64), F2I_ROW(_f16),
                                        F2I_ROW(_bf16)};

/* ---- common float to float ---- */

TF__OP(cvt_f64_f32)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    TF__FOR_LANES(m, d[l] = tf__uf64((double)tf__f32(pa[l])));
    return TF__GO;
}
TF__OP(cvt_rn_f32_f64)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    TF__FOR_LANES(m, d[l] = tf__res32((float)tf__f64(pa[l])));
    return TF__GO;
}
#define RINT32(name, fn)                                                                           \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a);                                                         \
        TF__FOR_LANES(m, d[l] = tf__res32(fn(tf__f32(pa[l]))));                                    \
        return TF__GO;                                                                             \
    }
/* clang-format off */
RINT32(rint_rni32, rintf)
RINT32(rint_rzi32, truncf)
RINT32(rint_rmi32, floorf)
RINT32(rint_rpi32, ceilf)
/* clang-format on */

/* ---- general float conversions ---- */

enum { FK_F32, FK_F64, FK_F16, FK_BF16, FK_S, FK_U }; /* value kinds */

static inline double read_kind(uint64_t v, int kind, unsigned sw)
{
    switch (kind) {
    case FK_F32:
        return tf__f32(v);
    case FK_F64:
        return tf__f64(v);
    case FK_F16:
        return tf__h2f((uint16_t)v, 0);
    case FK_BF16:
        return tf__h2f((uint16_t)v, 1);
    default:
        (void)sw;
        return 0;
    }
}

/* Rounds X (exact double) to float in MODE. */
static inline float to_f32(double x, int mode)
{
    if (mode == MOD_RN || mode == MOD_NONE)
        return (float)x;
    return (float)tf__round_f64_to_f32(x, mode);
}

/* General cvt. fields: sub = source kind (FK_*), w1 = source int bits, e? no;
 * imm: dest kind; w2: float rounding mode (MOD_*) or integer rounding (MOD_RNI..);
 * flags: 1 ftz, 2 sat, 4 relu, 8 satfinite; mask: destination register mask. */
TF__OP(cvt_gen)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    int sk = in->sub, dk = (int)in->imm, mode = in->w2;
    int ftz = in->flags & 1, sat = in->flags & 2, relu = in->flags & 4, satf = in->flags & 8;
    uint64_t mk = in->mask;
    TF__FOR_LANES(m, {
        double x;
        if (sk == FK_S || sk == FK_U) {
            uint64_t iv = ext(pa[l], in->w1, sk == FK_S);
            if (mode == MOD_RN || mode == MOD_NONE)
                x = sk == FK_S ? (dk == FK_F32 ? (double)(float)(int64_t)iv : (double)(int64_t)iv)
                               : (dk == FK_F32 ? (double)(float)iv : (double)iv);
            else
                x = tf__round_i2f((int64_t)iv, sk == FK_U, mode, dk == FK_F32);
        } else {
            x = read_kind(pa[l], sk, 0);
            if (ftz && sk == FK_F32)
                x = tf__ftz32((float)x);
            switch (mode) {
            case MOD_RNI:
                x = rint(x);
                break;
            case MOD_RZI:
                x = trunc(x);
                break;
            case MOD_RMI:
                x = floor(x);
                break;
            case MOD_RPI:
                x = ceil(x);
                break;
            default:
                break;
            }
        }
        if (relu && (x < 0 || x != x))
            x = x != x ? NAN : 0.0;
        if (sat)
            x = x > 0 ? (x < 1 ? x : 1) : 0;
        uint64_t r;
        int rm = (mode >= MOD_RNI && mode <= MOD_RPI) ? MOD_RN : mode;
        switch (dk) {
        case FK_F32: {
            float f = (sk == FK_S || sk == FK_U) ? (float)x : to_f32(x, rm);
            if (ftz)
                f = tf__ftz32(f);
            r = tf__res32(f);
            break;
        }
        case FK_F64:
            r = tf__uf64(x);
            break;
        default: {
            uint16_t h = tf__f2h(x, rm == MOD_NONE ? MOD_RN : rm, dk == FK_BF16);
            if (satf && (h & 0x7fff) == (dk == FK_BF16 ? 0x7f80 : 0x7c00))
                h = (uint16_t)(h - 1);
            r = h;
            break;
        }
        }
        d[l] = r & mk;
    });
    return TF__GO;
}

/* cvt.frnd{.relu}{.satfinite}.{f16,bf16}x2.f32 d, a, b: a in the upper half */
TF__OP(cvt_x2)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b);
    int bf = in->sub, mode = in->w2, relu = in->flags & 4, satf = in->flags & 8;
    TF__FOR_LANES(m, {
        uint32_t out = 0;
        for (int k = 0; k < 2; k++) {
            double x = tf__f32(k == 0 ? pa[l] : pb[l]);
            if (relu && (x < 0 || x != x))
                x = x != x ? NAN : 0.0;
            uint16_t h = tf__f2h(x, mode, bf);
            if (satf && (h & 0x7fff) == (bf ? 0x7f80 : 0x7c00))
                h = (uint16_t)(h - 1);
            out |= (uint32_t)h << (k == 0 ? 16 : 0);
        }
        d[l] = out;
    });
    return TF__GO;
}

/* ---- FP8 (e4m3: bias 7, no infinity, NaN S.1111.111, largest 448; e5m2: bias 15, as the
 * top byte of an f16, largest finite 57344) ---- */

/* V rounded to nearest even into e4m3 (E5 0) or e5m2, saturated to the largest finite value
 * (.satfinite, which every FP8 conversion has); NaN 0x7f. */
static uint8_t to_f8(double v, int e5)
{
    if (v != v)
        return 0x7f;
    const int mb = e5 ? 2 : 3, bias = e5 ? 15 : 7;
    const double maxf = e5 ? 57344.0 : 448.0;
    uint8_t sign = signbit(v) ? 0x80 : 0;
    double a = fabs(v);
    if (a >= maxf) /* infinities too */
        return sign | (e5 ? 0x7b : 0x7e);
    if (a == 0)
        return sign;
    int x;
    frexp(a, &x);
    int e = x - 1, emin = 1 - bias;
    int qe = (e < emin ? emin : e) - mb;
    double n = rint(ldexp(a, -qe)); /* the host rounds to nearest even by default */
    if (ldexp(n, qe) > maxf)
        return sign | (e5 ? 0x7b : 0x7e);
    if (e < emin) /* subnormal, or rounded up to the smallest normal (the same encoding) */
        return sign | (uint8_t)n;
    if (n == (double)(2 << mb)) {
        e++;
        n /= 2;
    }
    return sign | (uint8_t)((e + bias) << mb) | (uint8_t)((unsigned)n - (1u << mb));
}

static double from_f8(uint8_t b, int e5)
{
    const int mb = e5 ? 2 : 3, bias = e5 ? 15 : 7, emax = e5 ? 31 : 15;
    int e = (b & 0x7f) >> mb, m = b & ((1 << mb) - 1);
    double v;
    if (e == emax && (e5 || m == 7))
        v = e5 && m == 0 ? INFINITY : NAN;
    else if (e == 0)
        v = ldexp(m, 1 - bias - mb);
    else
        v = ldexp(m | 1 << mb, e - bias - mb);
    return (b & 0x80) ? -v : v;
}

/* cvt.rn.satfinite{.relu}.{e4m3,e5m2}x2.{f32 d, a, b | f16x2 d, a}: a (the upper half) into
 * the upper byte. in->sub: e5m2; in->flags 4: relu; in->w1: the source is f16x2. */
TF__OP(cvt_to_f8x2)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b);
    int e5 = in->sub, relu = in->flags & 4;
    TF__FOR_LANES(m, {
        double x[2];
        if (in->w1) {
            x[0] = tf__h2f((uint16_t)(pa[l] >> 16), 0);
            x[1] = tf__h2f((uint16_t)pa[l], 0);
        } else {
            x[0] = tf__f32(pa[l]);
            x[1] = tf__f32(pb[l]);
        }
        uint32_t out = 0;
        for (int k = 0; k < 2; k++) {
            if (relu && (x[k] < 0 || x[k] != x[k]))
                x[k] = x[k] != x[k] ? NAN : 0.0;
            out |= (uint32_t)to_f8(x[k], e5) << (k == 0 ? 8 : 0);
        }
        d[l] = out;
    });
    return TF__GO;
}

/* cvt.rn{.relu}.f16x2.{e4m3,e5m2}x2 d, a: exact (every FP8 value is an f16 one) */
TF__OP(cvt_from_f8x2)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    int e5 = in->sub, relu = in->flags & 4;
    TF__FOR_LANES(m, {
        uint32_t out = 0;
        for (int k = 0; k < 2; k++) {
            double x = from_f8((uint8_t)(pa[l] >> (k == 0 ? 8 : 0)), e5);
            if (relu && (x < 0 || x != x))
                x = x != x ? NAN : 0.0;
            out |= (uint32_t)tf__f2h(x, MOD_RN, 0) << (k == 0 ? 16 : 0);
        }
        d[l] = out;
    });
    return TF__GO;
}

/* ---- decoding ---- */

/* The FP8 forms of cvt (sm_89): 1, 0 when not one, -1 on error. */
static int decode_f8(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in,
                     const struct tf__mods *md, int rnd)
{
    int dty = md->t[0], sty = md->t[1];
    int to = dty == TY_E4M3X2 || dty == TY_E5M2X2, from = sty == TY_E4M3X2 || sty == TY_E5M2X2;
    if (!to && !from)
        return 0;
    int relu = tf__has(md, MOD_RELU), satf = tf__has(md, MOD_SATFINITE);
    if (tf__has(md, MOD_FTZ) || tf__has(md, MOD_SAT) || rnd != MOD_RN)
        return tf__unsupported(dc, pi);
    in->flags = (uint8_t)(relu ? 4 : 0);
    if (to) {
        if (!satf || (sty != TY_F32 && sty != TY_F16X2))
            return tf__unsupported(dc, pi);
        int nsrc = sty == TY_F32 ? 2 : 1;
        if (tf__opcount(dc, pi, 1 + (uint32_t)nsrc, 1 + (uint32_t)nsrc))
            return -1;
        in->fn = cvt_to_f8x2;
        in->sub = dty == TY_E5M2X2;
        in->w1 = sty == TY_F16X2;
        if (tf__dst(dc, pi, &pi->ops[0], &in->d[0], NULL) ||
            tf__src(dc, pi, &pi->ops[1], sty, &in->a) ||
            (nsrc == 2 && tf__src(dc, pi, &pi->ops[2], sty, &in->b)))
            return -1;
        return 1;
    }
    if (satf || dty != TY_F16X2 || tf__opcount(dc, pi, 2, 2))
        return satf || dty != TY_F16X2 ? tf__unsupported(dc, pi) : -1;
    in->fn = cvt_from_f8x2;
    in->sub = sty == TY_E5M2X2;
    if (tf__dst(dc, pi, &pi->ops[0], &in->d[0], NULL) ||
        tf__src(dc, pi, &pi->ops[1], TY_B16, &in->a))
        return -1;
    return 1;
}

static int kind_of(int ty)
{
    switch (ty) {
    case TY_F32:
        return FK_F32;
    case TY_F64:
        return FK_F64;
    case TY_F16:
        return FK_F16;
    case TY_BF16:
        return FK_BF16;
    default:
        return tf__ty_is_signed(ty) ? FK_S : FK_U;
    }
}

int tf__decode_cvt(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in)
{
    if (strcmp(pi->base, "cvt"))
        return 0;
    static const int ok[] = {MOD_RN,  MOD_RZ,  MOD_RM,  MOD_RP,   MOD_RNI,       MOD_RZI, MOD_RMI,
                             MOD_RPI, MOD_FTZ, MOD_SAT, MOD_RELU, MOD_SATFINITE, MOD_NONE};
    struct tf__mods md;
    if (tf__mods(dc, pi, ok, &md))
        return -1;
    if (md.nt != 2)
        return tf__unsupported(dc, pi);
    int dty = md.t[0], sty = md.t[1];
    static const int rnds[] = {MOD_RN, MOD_RZ, MOD_RM, MOD_RP, MOD_RNI, MOD_RZI, MOD_RMI, MOD_RPI};
    int rnd = MOD_NONE, n = 0;
    for (int i = 0; i < 8; i++)
        if (tf__has(&md, rnds[i])) {
            rnd = rnds[i];
            n++;
        }
    int ftz = tf__has(&md, MOD_FTZ), sat = tf__has(&md, MOD_SAT), relu = tf__has(&md, MOD_RELU),
        satf = tf__has(&md, MOD_SATFINITE);
    int irnd = rnd >= MOD_RNI && rnd <= MOD_RPI;
    if (n > 1 || dty == TY_PRED || sty == TY_PRED || dty == TY_B128 || sty == TY_B128)
        return tf__unsupported(dc, pi);
    int f8 = decode_f8(dc, pi, in, &md, rnd);
    if (f8)
        return f8;
    if (dty == TY_F16X2 || dty == TY_BF16X2) {
        if (sty != TY_F32 || (rnd != MOD_RN && rnd != MOD_RZ) || ftz || sat ||
            tf__opcount(dc, pi, 3, 3))
            return sty != TY_F32 || (rnd != MOD_RN && rnd != MOD_RZ) || ftz || sat
                       ? tf__unsupported(dc, pi)
                       : -1;
        in->fn = cvt_x2;
        in->sub = dty == TY_BF16X2;
        in->w2 = (uint8_t)rnd;
        in->flags = (uint8_t)((relu ? 4 : 0) | (satf ? 8 : 0));
        if (tf__dst(dc, pi, &pi->ops[0], &in->d[0], NULL) ||
            tf__src(dc, pi, &pi->ops[1], TY_F32, &in->a) ||
            tf__src(dc, pi, &pi->ops[2], TY_F32, &in->b))
            return -1;
        return 1;
    }
    if (sty == TY_F16X2 || sty == TY_BF16X2)
        return tf__unsupported(dc, pi);
    if (tf__opcount(dc, pi, 2, 2))
        return -1;
    unsigned regbits;
    if (tf__dst(dc, pi, &pi->ops[0], &in->d[0], &regbits) ||
        tf__src(dc, pi, &pi->ops[1], sty, &in->a))
        return -1;
    unsigned dw = tf__ty_bits(dty), sw = tf__ty_bits(sty);
    unsigned rb = regbits < dw ? dw : regbits;
    in->mask = tf__wmask(rb > 64 ? 64 : rb);
    int dint = tf__ty_is_int(dty), sint = tf__ty_is_int(sty);
    int ds = tf__ty_is_signed(dty);
    if (dint && sint) {
        if (rnd != MOD_NONE || ftz || relu || satf)
            return tf__unsupported(dc, pi);
        in->fn = cvt_ii;
        in->w1 = (uint8_t)sw;
        in->w2 = (uint8_t)dw;
        in->flags = (uint8_t)(tf__ty_is_signed(sty) | (ds << 1) | (sat << 2));
        return 1;
    }
    if (dint) {
        /* float -> integer: integer rounding required, saturating always */
        if (!irnd || relu || satf || (ftz && sty != TY_F32))
            return tf__unsupported(dc, pi);
        int row = sty == TY_F32 ? (ftz ? 1 : 0) : sty == TY_F64 ? 2 : sty == TY_F16 ? 3 : 4;
        in->fn = f2i_tab[row][rnd - MOD_RNI];
        in->w2 = (uint8_t)dw;
        in->flags = (uint8_t)(ds << 1);
        return 1;
    }
    if (sint) {
        if (irnd || relu || satf)
            return tf__unsupported(dc, pi);
    } else if (dty == sty) {
        if (rnd != MOD_NONE && !irnd)
            return tf__unsupported(dc, pi);
        if (dty == TY_F32 && !ftz && !sat && irnd) {
            static const tf__op_fn t[] = {rint_rni32, rint_rzi32, rint_rmi32, rint_rpi32};
            in->fn = t[rnd - MOD_RNI];
            return 1;
        }
    } else {
        if (irnd)
            return tf__unsupported(dc, pi);
        int narrowing = tf__ty_bits(dty) < tf__ty_bits(sty) || dty == TY_BF16 ||
                        (dty == TY_F16 && sty == TY_BF16);
        if (narrowing && rnd == MOD_NONE)
            return tf__derr(dc, pi->line, "'%s' needs a rounding modifier", pi->opcode);
        if (dty == TY_F64 && sty == TY_F32 && !ftz && !sat) {
            in->fn = cvt_f64_f32;
            return 1;
        }
        if (dty == TY_F32 && sty == TY_F64 && rnd == MOD_RN && !ftz && !sat) {
            in->fn = cvt_rn_f32_f64;
            return 1;
        }
    }
    in->fn = cvt_gen;
    in->sub = (uint8_t)kind_of(sty);
    in->w1 = (uint8_t)sw;
    in->imm = kind_of(dty);
    in->w2 = (uint8_t)rnd;
    in->flags = (uint8_t)((ftz ? 1 : 0) | (sat ? 2 : 0) | (relu ? 4 : 0) | (satf ? 8 : 0));
    return 1;
}
