/* SPDX-License-Identifier: Apache-2.0
 *
 * Directed rounding (.rz/.rm/.rp) for float arithmetic and conversions. The host's rounding
 * mode is switched around the computation (fesetround) and restored; this file is built with
 * -frounding-math so the compiler neither folds nor moves the operations across the switch.
 * These forms are rare in nvcc output (explicit __fadd_rz-style intrinsics), so a mode switch
 * per instruction (or per lane for cvt) is acceptable.
 */
#include "sim/ptx/internal.h"

#include <fenv.h>
#include <math.h>

static int fe_mode(int mode)
{
    switch (mode) {
    case MOD_RZ:
        return FE_TOWARDZERO;
    case MOD_RM:
        return FE_DOWNWARD;
    case MOD_RP:
        return FE_UPWARD;
    default:
        return FE_TONEAREST;
    }
}

static inline float post32(float r, int ftz, int sat)
{
    if (sat)
        r = r > 0.0f ? (r < 1.0f ? r : 1.0f) : 0.0f;
    if (ftz)
        r = tf__ftz32(r);
    return r;
}

#define R32(name, nin, expr, FTZ, SAT)                                                             \
    static int name(struct tf__warp *w, const struct tf__insn *in, uint32_t m)                     \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);                 \
        int old = fegetround();                                                                    \
        fesetround(fe_mode(in->w2));                                                               \
        TF__FOR_LANES(m, {                                                                         \
            volatile float a = tf__f32(pa[l]), b = nin > 1 ? tf__f32(pb[l]) : 0,                   \
                           c = nin > 2 ? tf__f32(pc[l]) : 0;                                       \
            if (FTZ) {                                                                             \
                a = tf__ftz32(a);                                                                  \
                b = tf__ftz32(b);                                                                  \
                c = tf__ftz32(c);                                                                  \
            }                                                                                      \
            (void)b;                                                                               \
            (void)c;                                                                               \
            volatile float r = (expr);                                                             \
            d[l] = tf__res32(post32(r, FTZ, SAT));                                                 \
        });                                                                                        \
        fesetround(old);                                                                           \
        return TF__GO;                                                                             \
    }
#define R64(name, nin, expr)                                                                       \
    static int name(struct tf__warp *w, const struct tf__insn *in, uint32_t m)                     \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);                 \
        int old = fegetround();                                                                    \
        fesetround(fe_mode(in->w2));                                                               \
        TF__FOR_LANES(m, {                                                                         \
            volatile double a = tf__f64(pa[l]), b = nin > 1 ? tf__f64(pb[l]) : 0,                  \
                            c = nin > 2 ? tf__f64(pc[l]) : 0;                                      \
            (void)b;                                                                               \
            (void)c;                                                                               \
            volatile double r = (expr);                                                            \
            d[l] = tf__uf64(r);                                                                    \
        });                                                                                        \
        fesetround(old);                                                                           \
        return TF__GO;                                                                             \
    }
#define RALL(op, nin, e32, e64)                                                                    \
    R32(op##_32, nin, e32, 0, 0)                                                                   \
    R32(op##_32f, nin, e32, 1, 0)                                                                  \
    R32(op##_32s, nin, e32, 0, 1)                                                                  \
    R32(op##_32fs, nin, e32, 1, 1)                                                                 \
    R64(op##_64, nin, e64)

/* clang-format off */
RALL(radd, 2, a + b, a + b)
RALL(rsub, 2, a - b, a - b)
RALL(rmul, 2, a *b, a *b)
RALL(rfma, 3, fmaf(a, b, c), fma(a, b, c))
RALL(rdiv, 2, a / b, a / b)
RALL(rsqrt, 1, sqrtf(a), sqrt(a))
RALL(rrcp, 1, 1.0f / a, 1.0 / a)
/* clang-format on */

#define RTAB(op)                                                                                   \
    {                                                                                              \
        op##_32, op##_32f, op##_32s, op##_32fs, op##_64                                            \
    }

tf__op_fn tf__round_handler(const char *op, int ty, int ftz, int sat)
{
    static const struct {
        const char *name;
        tf__op_fn fn[5];
    } tab[] = {
        {"add", RTAB(radd)}, {"sub", RTAB(rsub)}, {"mul", RTAB(rmul)},   {"fma", RTAB(rfma)},
        {"mad", RTAB(rfma)}, {"div", RTAB(rdiv)}, {"sqrt", RTAB(rsqrt)}, {"rcp", RTAB(rrcp)},
    };
    int v = ty == TY_F64 ? 4 : (ftz ? 1 : 0) | (sat ? 2 : 0);
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
        if (strcmp(tab[i].name, op) == 0)
            return tab[i].fn[v];
    return NULL;
}

double tf__round_i2f(int64_t v, int is_unsigned, int mode, int to_f32)
{
    int old = fegetround();
    fesetround(fe_mode(mode));
    volatile double r;
    if (to_f32) {
        volatile float f = is_unsigned ? (float)(uint64_t)v : (float)v;
        r = f;
    } else {
        r = is_unsigned ? (double)(uint64_t)v : (double)v;
    }
    fesetround(old);
    return r;
}

double tf__round_f64_to_f32(double v, int mode)
{
    int old = fegetround();
    fesetround(fe_mode(mode));
    volatile double in = v;
    volatile float f = (float)in;
    fesetround(old);
    return f;
}
