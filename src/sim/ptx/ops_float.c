/* SPDX-License-Identifier: Apache-2.0
 *
 * Floating-point instructions on f32 and f64: add/sub/mul, fma/mad, div (.rn/.full/.approx),
 * rcp, sqrt, rsqrt, sin/cos/ex2/lg2/tanh (.approx), min/max (.NaN), abs/neg, copysign,
 * testp, setp/set. Round-to-nearest results are exact IEEE (fmaf/fma for fused ops, host
 * division and sqrt); directed rounding (.rz/.rm/.rp) comes from ops_round.c. .ftz flushes
 * subnormal inputs and results to sign-preserving zero, .sat clamps to [0, 1] (NaN -> 0).
 * An f32 NaN result is the canonical 0x7fffffff, as on NVIDIA hardware; f64 NaNs keep the
 * host's payload. Approximations are computed with the host libm (correctly rounded or
 * within 1-2 ulp), inside the PTX ISA's documented error bounds.
 */
#include "sim/ptx/internal.h"

#include <math.h>

static inline float post32(float r, int ftz, int sat)
{
    if (sat)
        r = r > 0.0f ? (r < 1.0f ? r : 1.0f) : 0.0f;
    if (ftz)
        r = tf__ftz32(r);
    return r;
}

#define F32_OP(name, nin, expr, FTZ, SAT)                                                          \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);                 \
        (void)pb;                                                                                  \
        (void)pc;                                                                                  \
        TF__FOR_LANES(m, {                                                                         \
            float a = tf__f32(pa[l]), b = 0, c = 0;                                                \
            if (nin > 1)                                                                           \
                b = tf__f32(pb[l]);                                                                \
            if (nin > 2)                                                                           \
                c = tf__f32(pc[l]);                                                                \
            if (FTZ) {                                                                             \
                a = tf__ftz32(a);                                                                  \
                b = tf__ftz32(b);                                                                  \
                c = tf__ftz32(c);                                                                  \
            }                                                                                      \
            (void)b;                                                                               \
            (void)c;                                                                               \
            d[l] = tf__res32(post32((expr), FTZ, SAT));                                            \
        });                                                                                        \
        return TF__GO;                                                                             \
    }
/* four variants: plain, .ftz, .sat, .ftz.sat */
#define F32_4(name, nin, expr)                                                                     \
    F32_OP(name, nin, expr, 0, 0)                                                                  \
    F32_OP(name##_f, nin, expr, 1, 0)                                                              \
    F32_OP(name##_s, nin, expr, 0, 1)                                                              \
    F32_OP(name##_fs, nin, expr, 1, 1)
#define F32_TAB(name)                                                                              \
    {                                                                                              \
        name, name##_f, name##_s, name##_fs                                                        \
    }

#define F64_OP(name, nin, expr)                                                                    \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);                 \
        (void)pb;                                                                                  \
        (void)pc;                                                                                  \
        TF__FOR_LANES(m, {                                                                         \
            double a = tf__f64(pa[l]), b = 0, c = 0;                                               \
            if (nin > 1)                                                                           \
                b = tf__f64(pb[l]);                                                                \
            if (nin > 2)                                                                           \
                c = tf__f64(pc[l]);                                                                \
            (void)b;                                                                               \
            (void)c;                                                                               \
            d[l] = tf__uf64(expr);                                                                 \
        });                                                                                        \
        return TF__GO;                                                                             \
    }

static inline float fmin32(float a, float b, int nan)
{
    if (a != a || b != b)
        return (nan || (a != a && b != b)) ? NAN : (a != a ? b : a);
    if (a == b)
        return signbit(a) ? a : b;
    return a < b ? a : b;
}
static inline float fmax32(float a, float b, int nan)
{
    if (a != a || b != b)
        return (nan || (a != a && b != b)) ? NAN : (a != a ? b : a);
    if (a == b)
        return signbit(a) ? b : a;
    return a > b ? a : b;
}
static inline double fmin64(double a, double b)
{
    if (a != a || b != b)
        return (a != a && b != b) ? tf__f64(0x7fffffffffffffffull) : (a != a ? b : a);
    if (a == b)
        return signbit(a) ? a : b;
    return a < b ? a : b;
}
static inline double fmax64(double a, double b)
{
    if (a != a || b != b)
        return (a != a && b != b) ? tf__f64(0x7fffffffffffffffull) : (a != a ? b : a);
    if (a == b)
        return signbit(a) ? b : a;
    return a > b ? a : b;
}
/* rsqrt with one rounding: the double result is exact enough to round once to float. */
static inline float rsqrt32(float a)
{
    return (float)(1.0 / sqrt((double)a));
}

/* clang-format off */
F32_4(add32, 2, a + b)
F32_4(sub32, 2, a - b)
F32_4(mul32, 2, a *b)
F32_4(fma32, 3, fmaf(a, b, c))
F32_4(div32, 2, a / b)
F32_4(divapx32, 2, a *(1.0f / b))
F32_4(rcp32, 1, 1.0f / a)
F32_4(sqrt32, 1, sqrtf(a))
F32_4(rsqrt32_, 1, rsqrt32(a))
F32_4(sin32, 1, sinf(a))
F32_4(cos32, 1, cosf(a))
F32_4(ex232, 1, exp2f(a))
F32_4(lg232, 1, log2f(a))
F32_4(tanh32, 1, tanhf(a))
F32_4(min32, 2, fmin32(a, b, 0))
F32_4(max32, 2, fmax32(a, b, 0))
F32_4(minnan32, 2, fmin32(a, b, 1))
F32_4(maxnan32, 2, fmax32(a, b, 1))
/* clang-format on */

/* clang-format off */
F64_OP(add64, 2, a + b)
F64_OP(sub64, 2, a - b)
F64_OP(mul64, 2, a *b)
F64_OP(fma64, 3, fma(a, b, c))
F64_OP(div64, 2, a / b)
F64_OP(rcp64, 1, 1.0 / a)
F64_OP(rcpftz64, 1, tf__ftz64(1.0 / tf__ftz64(a)))
F64_OP(sqrt64, 1, sqrt(a))
F64_OP(rsqrt64, 1, 1.0 / sqrt(a))
F64_OP(rsqrtftz64, 1, tf__ftz64(1.0 / sqrt(tf__ftz64(a))))
F64_OP(min64, 2, fmin64(a, b))
F64_OP(max64, 2, fmax64(a, b))
/* clang-format on */

/* fma.rn.f32 with the host's FMA instruction when it has one (chosen at decode time): the
 * same IEEE result as fmaf, without a libm call per lane. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TF__HAVE_FMA_TARGET 1
__attribute__((target("fma"))) static int fma32_hw(struct tf__warp *w, const struct tf__insn *in,
                                                   uint32_t m)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);
    TF__FOR_LANES(m, {
        float r = __builtin_fmaf(tf__f32(pa[l]), tf__f32(pb[l]), tf__f32(pc[l]));
        d[l] = r != r ? 0x7fffffffu : tf__uf32(r);
    });
    return TF__GO;
}

static int host_has_fma(void)
{
    static int cached = -1; /* benign race: every thread computes the same value */
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("fma") ? 1 : 0;
    }
    return cached;
}
#endif

/* sign-bit operations keep NaN payloads */
TF__OP(abs32)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    TF__FOR_LANES(m, d[l] = (uint32_t)pa[l] & 0x7fffffffu);
    return TF__GO;
}
TF__OP(abs32_f)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    TF__FOR_LANES(m, d[l] = tf__uf32(tf__ftz32(tf__f32(pa[l]))) & 0x7fffffffu);
    return TF__GO;
}
TF__OP(neg32)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    TF__FOR_LANES(m, d[l] = ((uint32_t)pa[l]) ^ 0x80000000u);
    return TF__GO;
}
TF__OP(neg32_f)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    TF__FOR_LANES(m, d[l] = tf__uf32(tf__ftz32(tf__f32(pa[l]))) ^ 0x80000000u);
    return TF__GO;
}
TF__OP(abs64)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    TF__FOR_LANES(m, d[l] = pa[l] & 0x7fffffffffffffffull);
    return TF__GO;
}
TF__OP(neg64)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    TF__FOR_LANES(m, d[l] = pa[l] ^ 0x8000000000000000ull);
    return TF__GO;
}
/* copysign.type d, a, b: b with the sign of a */
TF__OP(copysign32)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b);
    TF__FOR_LANES(m, d[l] = ((uint32_t)pb[l] & 0x7fffffffu) | ((uint32_t)pa[l] & 0x80000000u));
    return TF__GO;
}
TF__OP(copysign64)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b);
    TF__FOR_LANES(m, d[l] = (pb[l] & 0x7fffffffffffffffull) | (pa[l] & 0x8000000000000000ull));
    return TF__GO;
}

/* testp.op.type p, a */
#define TESTP(name, T, conv, expr)                                                                 \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        const uint64_t *pa = TF__R(in->a);                                                         \
        uint32_t bits = 0;                                                                         \
        TF__FOR_LANES(m, {                                                                         \
            T x = conv(pa[l]);                                                                     \
            bits |= (uint32_t)(expr) << l;                                                         \
        });                                                                                        \
        w->p[in->d[0]] = (w->p[in->d[0]] & ~m) | (bits & m);                                       \
        return TF__GO;                                                                             \
    }
#define TESTP_T(sfx, T, conv)                                                                      \
    TESTP(testp_finite##sfx, T, conv, isfinite(x))                                                 \
    TESTP(testp_infinite##sfx, T, conv, isinf(x))                                                  \
    TESTP(testp_number##sfx, T, conv, !isnan(x))                                                   \
    TESTP(testp_notanumber##sfx, T, conv, isnan(x))                                                \
    TESTP(testp_normal##sfx, T, conv, isnormal(x))                                                 \
    TESTP(testp_subnormal##sfx, T, conv, fpclassify(x) == FP_SUBNORMAL)
/* clang-format off */
TESTP_T(32, float, tf__f32)
TESTP_T(64, double, tf__f64)
/* clang-format on */

#define FCMP(sfx, T, conv, FTZ, cname, expr)                                                       \
    static inline uint32_t fcmp_##cname##sfx(struct tf__warp *w, const struct tf__insn *in,        \
                                             uint32_t m)                                           \
    {                                                                                              \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b);                                     \
        uint32_t bits = 0;                                                                         \
        TF__FOR_LANES(m, {                                                                         \
            T a = conv(pa[l]), b = conv(pb[l]);                                                    \
            if (FTZ) {                                                                             \
                a = (T)tf__ftz32((float)a);                                                        \
                b = (T)tf__ftz32((float)b);                                                        \
            }                                                                                      \
            bits |= (uint32_t)(expr) << l;                                                         \
        });                                                                                        \
        return bits;                                                                               \
    }                                                                                              \
    TF__OP(fsetp_##cname##sfx)                                                                     \
    {                                                                                              \
        return tf__setp_finish(w, in, m, fcmp_##cname##sfx(w, in, m));                             \
    }                                                                                              \
    TF__OP(fset_##cname##sfx)                                                                      \
    {                                                                                              \
        return tf__set_finish(w, in, m, fcmp_##cname##sfx(w, in, m));                              \
    }
#define UNORD (a != a || b != b)
#define FCMP_T(sfx, T, conv, FTZ)                                                                  \
    FCMP(sfx, T, conv, FTZ, eq, a == b)                                                            \
    FCMP(sfx, T, conv, FTZ, ne, a<b || a> b)                                                       \
    FCMP(sfx, T, conv, FTZ, lt, a < b)                                                             \
    FCMP(sfx, T, conv, FTZ, le, a <= b)                                                            \
    FCMP(sfx, T, conv, FTZ, gt, a > b)                                                             \
    FCMP(sfx, T, conv, FTZ, ge, a >= b)                                                            \
    FCMP(sfx, T, conv, FTZ, equ, a == b || UNORD)                                                  \
    FCMP(sfx, T, conv, FTZ, neu, !(a == b))                                                        \
    FCMP(sfx, T, conv, FTZ, ltu, !(a >= b))                                                        \
    FCMP(sfx, T, conv, FTZ, leu, !(a > b))                                                         \
    FCMP(sfx, T, conv, FTZ, gtu, !(a <= b))                                                        \
    FCMP(sfx, T, conv, FTZ, geu, !(a < b))                                                         \
    FCMP(sfx, T, conv, FTZ, num, !UNORD)                                                           \
    FCMP(sfx, T, conv, FTZ, nan, UNORD)
/* clang-format off */
FCMP_T(_32, float, tf__f32, 0)
FCMP_T(_32f, float, tf__f32, 1)
FCMP_T(_64, double, tf__f64, 0)
/* clang-format on */

#define FCMP_ROW(pfx, sfx)                                                                         \
    {                                                                                              \
        pfx##eq##sfx, pfx##ne##sfx, pfx##lt##sfx, pfx##le##sfx, pfx##gt##sfx, pfx##ge##sfx,        \
            pfx##equ##sfx, pfx##neu##sfx, pfx##ltu##sfx, pfx##leu##sfx, pfx##gtu##sfx,             \
            pfx##geu##sfx, pfx##num##sfx, pfx##nan##sfx                                            \
    }
static const tf__op_fn fsetp_tab[3][14] = {FCMP_ROW(fsetp_, _32), FCMP_ROW(fsetp_, _32f),
                                           FCMP_ROW(fsetp_, _64)};
static const tf__op_fn fset_tab[3][14] = {FCMP_ROW(fset_, _32), FCMP_ROW(fset_, _32f),
                                          FCMP_ROW(fset_, _64)};

/* ---- decoding ---- */

static int ftype(const struct tf__pinsn *pi)
{
    int t = TY_NONE;
    for (uint32_t i = 0; i < pi->nmods; i++) {
        int x = tf__ty_parse(pi->mods[i]);
        if (x != TY_NONE)
            t = x;
    }
    return t;
}

static int fops(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in, uint32_t nsrc,
                int ty)
{
    if (tf__opcount(dc, pi, nsrc + 1, nsrc + 1) || tf__dst(dc, pi, &pi->ops[0], &in->d[0], NULL))
        return -1;
    uint32_t *f[3] = {&in->a, &in->b, &in->c};
    for (uint32_t i = 0; i < nsrc; i++)
        if (tf__src(dc, pi, &pi->ops[1 + i], ty, f[i]))
            return -1;
    return 1;
}

static int rounding(const struct tf__mods *md)
{
    static const int r[] = {MOD_RN, MOD_RZ, MOD_RM, MOD_RP};
    int found = MOD_NONE, n = 0;
    for (int i = 0; i < 4; i++)
        if (tf__has(md, r[i])) {
            found = r[i];
            n++;
        }
    return n > 1 ? -1 : found;
}

static const int arith_ok[] = {MOD_RN,  MOD_RZ,     MOD_RM,   MOD_RP,  MOD_FTZ,
                               MOD_SAT, MOD_APPROX, MOD_FULL, MOD_NAN, MOD_NONE};

int tf__decode_float(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in)
{
    const char *b = pi->base;
    int ty = ftype(pi);
    if (ty != TY_F32 && ty != TY_F64) {
        if (tf__ty_is_float(ty) || ty == TY_F16X2 || ty == TY_BF16X2) {
            int rc = tf__decode_half(dc, pi, in, ty);
            if (rc)
                return rc;
            static const char *const fam[] = {"add",  "sub",  "mul",   "fma",     "mad", "div",
                                              "rcp",  "sqrt", "rsqrt", "sin",     "cos", "ex2",
                                              "lg2",  "tanh", "min",   "max",     "abs", "neg",
                                              "setp", "set",  "testp", "copysign"};
            for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++)
                if (!strcmp(b, fam[i]))
                    return tf__unsupported(dc, pi);
        }
        return 0;
    }
    int f64 = ty == TY_F64;
    struct tf__mods md;
    int ftz = 0, sat = 0, rnd = MOD_NONE;
    int v = 0; /* variant index: ftz | sat<<1 */
#define PARSE_MODS(okset)                                                                          \
    do {                                                                                           \
        if (tf__mods(dc, pi, okset, &md))                                                          \
            return -1;                                                                             \
        if (md.nt != 1)                                                                            \
            return tf__unsupported(dc, pi);                                                        \
        ftz = tf__has(&md, MOD_FTZ);                                                               \
        sat = tf__has(&md, MOD_SAT);                                                               \
        rnd = rounding(&md);                                                                       \
        /* f64 has no .sat, and .ftz only in rcp.approx.ftz.f64 */                                 \
        if (rnd < 0 || (f64 && (sat || (ftz && strcmp(b, "rcp")))))                                \
            return tf__unsupported(dc, pi);                                                        \
        v = ftz | (sat << 1);                                                                      \
    } while (0)

    if (!strcmp(b, "add") || !strcmp(b, "sub") || !strcmp(b, "mul")) {
        static const int ok[] = {MOD_RN, MOD_RZ, MOD_RM, MOD_RP, MOD_FTZ, MOD_SAT, MOD_NONE};
        PARSE_MODS(ok);
        if (rnd != MOD_NONE && rnd != MOD_RN) {
            in->fn = tf__round_handler(b, ty, ftz, sat);
            in->w2 = (uint8_t)rnd;
        } else if (f64) {
            in->fn = b[0] == 'a' ? add64 : b[0] == 's' ? sub64 : mul64;
        } else {
            static const tf__op_fn a[] = F32_TAB(add32), s[] = F32_TAB(sub32),
                                   mu[] = F32_TAB(mul32);
            in->fn = b[0] == 'a' ? a[v] : b[0] == 's' ? s[v] : mu[v];
        }
        return fops(dc, pi, in, 2, ty);
    }
    if (!strcmp(b, "fma") || !strcmp(b, "mad")) {
        static const int ok[] = {MOD_RN, MOD_RZ, MOD_RM, MOD_RP, MOD_FTZ, MOD_SAT, MOD_NONE};
        PARSE_MODS(ok);
        if (rnd == MOD_NONE && (b[0] == 'f' || f64))
            return tf__unsupported(dc, pi);
        if (rnd != MOD_NONE && rnd != MOD_RN) {
            in->fn = tf__round_handler("fma", ty, ftz, sat);
            in->w2 = (uint8_t)rnd;
        } else if (f64) {
            in->fn = fma64;
        } else {
            static const tf__op_fn t[] = F32_TAB(fma32);
            in->fn = t[v];
#ifdef TF__HAVE_FMA_TARGET
            if (v == 0 && host_has_fma())
                in->fn = fma32_hw;
#endif
        }
        return fops(dc, pi, in, 3, ty);
    }
    if (!strcmp(b, "div")) {
        PARSE_MODS(arith_ok);
        int apx = tf__has(&md, MOD_APPROX), full = tf__has(&md, MOD_FULL);
        if (sat || tf__has(&md, MOD_NAN) || apx + full + (rnd != MOD_NONE) != 1 ||
            (f64 && (apx || full)))
            return tf__unsupported(dc, pi);
        if (rnd != MOD_NONE && rnd != MOD_RN) {
            in->fn = tf__round_handler("div", ty, ftz, 0);
            in->w2 = (uint8_t)rnd;
        } else if (f64) {
            in->fn = div64;
        } else {
            static const tf__op_fn t[] = F32_TAB(div32), ta[] = F32_TAB(divapx32);
            in->fn = apx ? ta[v] : t[v];
        }
        return fops(dc, pi, in, 2, ty);
    }
    if (!strcmp(b, "rcp") || !strcmp(b, "sqrt")) {
        PARSE_MODS(arith_ok);
        int apx = tf__has(&md, MOD_APPROX);
        if (sat || tf__has(&md, MOD_FULL) || tf__has(&md, MOD_NAN) || apx + (rnd != MOD_NONE) != 1)
            return tf__unsupported(dc, pi);
        int rcp = b[0] == 'r';
        if (f64 && apx && !(rcp && tf__has(&md, MOD_FTZ)))
            return tf__unsupported(dc, pi);
        if (rnd != MOD_NONE && rnd != MOD_RN) {
            if (f64 && ftz)
                return tf__unsupported(dc, pi);
            in->fn = tf__round_handler(b, ty, ftz, 0);
            in->w2 = (uint8_t)rnd;
        } else if (f64) {
            in->fn = rcp ? (apx ? rcpftz64 : rcp64) : sqrt64;
        } else {
            static const tf__op_fn r[] = F32_TAB(rcp32), s[] = F32_TAB(sqrt32);
            in->fn = rcp ? r[v] : s[v];
        }
        return fops(dc, pi, in, 1, ty);
    }
    if (!strcmp(b, "rsqrt") || !strcmp(b, "sin") || !strcmp(b, "cos") || !strcmp(b, "ex2") ||
        !strcmp(b, "lg2") || !strcmp(b, "tanh")) {
        static const int ok[] = {MOD_APPROX, MOD_FTZ, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        ftz = tf__has(&md, MOD_FTZ);
        if (md.nt != 1 || !tf__has(&md, MOD_APPROX))
            return tf__unsupported(dc, pi);
        if (f64) {
            if (strcmp(b, "rsqrt"))
                return tf__unsupported(dc, pi);
            in->fn = ftz ? rsqrtftz64 : rsqrt64;
        } else {
            static const tf__op_fn rs[] = F32_TAB(rsqrt32_), si[] = F32_TAB(sin32),
                                   co[] = F32_TAB(cos32), e2[] = F32_TAB(ex232),
                                   l2[] = F32_TAB(lg232), th[] = F32_TAB(tanh32);
            const tf__op_fn *t = !strcmp(b, "rsqrt") ? rs
                                 : !strcmp(b, "sin") ? si
                                 : !strcmp(b, "cos") ? co
                                 : !strcmp(b, "ex2") ? e2
                                 : !strcmp(b, "lg2") ? l2
                                                     : th;
            in->fn = t[ftz];
        }
        return fops(dc, pi, in, 1, ty);
    }
    if (!strcmp(b, "min") || !strcmp(b, "max")) {
        static const int ok[] = {MOD_FTZ, MOD_NAN, MOD_NONE};
        PARSE_MODS(ok);
        int mx = b[1] == 'a', nan = tf__has(&md, MOD_NAN);
        if (f64) {
            if (nan)
                return tf__unsupported(dc, pi);
            in->fn = mx ? max64 : min64;
        } else {
            static const tf__op_fn mn[] = F32_TAB(min32), mxx[] = F32_TAB(max32),
                                   mnn[] = F32_TAB(minnan32), mxn[] = F32_TAB(maxnan32);
            in->fn = nan ? (mx ? mxn[v] : mnn[v]) : (mx ? mxx[v] : mn[v]);
        }
        return fops(dc, pi, in, 2, ty);
    }
    if (!strcmp(b, "abs") || !strcmp(b, "neg")) {
        static const int ok[] = {MOD_FTZ, MOD_NONE};
        PARSE_MODS(ok);
        int ab = b[0] == 'a';
        in->fn = f64  ? (ab ? abs64 : neg64)
                 : ab ? (ftz ? abs32_f : abs32)
                      : (ftz ? neg32_f : neg32);
        return fops(dc, pi, in, 1, ty);
    }
    if (!strcmp(b, "copysign")) {
        static const int ok[] = {MOD_NONE};
        PARSE_MODS(ok);
        in->fn = f64 ? copysign64 : copysign32;
        return fops(dc, pi, in, 2, ty);
    }
    if (!strcmp(b, "testp")) {
        static const int ok[] = {MOD_FINITE, MOD_INFINITE,  MOD_NUMBER, MOD_NOTANUMBER,
                                 MOD_NORMAL, MOD_SUBNORMAL, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        static const int ops[] = {MOD_FINITE,     MOD_INFINITE, MOD_NUMBER,
                                  MOD_NOTANUMBER, MOD_NORMAL,   MOD_SUBNORMAL};
        static const tf__op_fn t32[] = {testp_finite32,     testp_infinite32, testp_number32,
                                        testp_notanumber32, testp_normal32,   testp_subnormal32};
        static const tf__op_fn t64[] = {testp_finite64,     testp_infinite64, testp_number64,
                                        testp_notanumber64, testp_normal64,   testp_subnormal64};
        int k = -1, n = 0;
        for (int i = 0; i < 6; i++)
            if (tf__has(&md, ops[i])) {
                k = i;
                n++;
            }
        if (md.nt != 1 || n != 1 || tf__opcount(dc, pi, 2, 2))
            return md.nt != 1 || n != 1 ? tf__unsupported(dc, pi) : -1;
        in->fn = f64 ? t64[k] : t32[k];
        if (pi->ops[0].kind != PK_REG || tf__pdst(dc, pi, pi->ops[0].name, &in->d[0]))
            return pi->ops[0].kind != PK_REG
                       ? tf__derr(dc, pi->line, "bad destination of '%s'", pi->opcode)
                       : -1;
        return tf__src(dc, pi, &pi->ops[1], ty, &in->a) ? -1 : 1;
    }
    if (!strcmp(b, "setp") || !strcmp(b, "set")) {
        static const int ok[] = {MOD_EQ,  MOD_NE,  MOD_LT,  MOD_LE,  MOD_GT,  MOD_GE,  MOD_EQU,
                                 MOD_NEU, MOD_LTU, MOD_LEU, MOD_GTU, MOD_GEU, MOD_NUM, MOD_ISNAN,
                                 MOD_AND, MOD_OR,  MOD_XOR, MOD_FTZ, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        int is_set = b[3] == 0;
        if (md.nt != (is_set ? 2u : 1u))
            return tf__unsupported(dc, pi);
        static const int cm[] = {MOD_EQ,  MOD_NE,  MOD_LT,  MOD_LE,  MOD_GT,  MOD_GE,  MOD_EQU,
                                 MOD_NEU, MOD_LTU, MOD_LEU, MOD_GTU, MOD_GEU, MOD_NUM, MOD_ISNAN};
        int ci = -1, n = 0;
        for (int i = 0; i < 14; i++)
            if (tf__has(&md, cm[i])) {
                ci = i;
                n++;
            }
        int bop = tf__bool_op(&md);
        ftz = tf__has(&md, MOD_FTZ);
        if (n != 1 || bop < 0 || (f64 && ftz))
            return tf__unsupported(dc, pi);
        int row = f64 ? 2 : ftz ? 1 : 0;
        if (tf__bool_operand(dc, pi, in, bop, 3))
            return -1;
        if (is_set) {
            int dty = md.t[0];
            if (dty != TY_U32 && dty != TY_S32 && dty != TY_F32)
                return tf__unsupported(dc, pi);
            in->mask = dty == TY_F32 ? 0x3f800000u : 0xffffffffu;
            in->fn = fset_tab[row][ci];
            if (tf__dst(dc, pi, &pi->ops[0], &in->d[0], NULL))
                return -1;
        } else {
            in->fn = fsetp_tab[row][ci];
            return tf__setp_operands(dc, pi, in, ty);
        }
        if (tf__src(dc, pi, &pi->ops[1], ty, &in->a) || tf__src(dc, pi, &pi->ops[2], ty, &in->b))
            return -1;
        return 1;
    }
#undef PARSE_MODS
    return 0;
}
