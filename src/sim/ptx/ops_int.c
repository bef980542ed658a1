/* SPDX-License-Identifier: Apache-2.0
 *
 * Integer and bitwise instructions: add/sub (.sat, .cc/addc/subc), mul/mad (.lo/.hi/.wide),
 * mul24/mad24, sad, div/rem, min/max, abs/neg, and/or/xor/not/cnot (and/or/xor/not on
 * predicates too), shl/shr, popc/clz/brev/bfind/bfe/bfi/prmt/lop3/shf/dp4a/dp2a. Handlers are
 * generated per width and signedness so none switches on a type at run time. tf__decode_int
 * decodes these and hands comparisons, selections and mov to ops_pred.c.
 */
#include "sim/ptx/internal.h"

/* ---- handler generators ---- */

#define I2(name, UT, ST, expr)                                                                     \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b);                                     \
        TF__FOR_LANES(m, {                                                                         \
            UT ua = (UT)pa[l], ub = (UT)pb[l];                                                     \
            ST sa = (ST)ua, sb = (ST)ub;                                                           \
            (void)sa;                                                                              \
            (void)sb;                                                                              \
            d[l] = (UT)(expr);                                                                     \
        });                                                                                        \
        return TF__GO;                                                                             \
    }

/* like I2, but the result keeps its own (wider) type */
#define I2X(name, UT, ST, expr)                                                                    \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b);                                     \
        TF__FOR_LANES(m, {                                                                         \
            UT ua = (UT)pa[l], ub = (UT)pb[l];                                                     \
            ST sa = (ST)ua, sb = (ST)ub;                                                           \
            (void)sa;                                                                              \
            (void)sb;                                                                              \
            d[l] = (uint64_t)(expr);                                                               \
        });                                                                                        \
        return TF__GO;                                                                             \
    }

#define I3(name, UT, ST, expr)                                                                     \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);                 \
        TF__FOR_LANES(m, {                                                                         \
            UT ua = (UT)pa[l], ub = (UT)pb[l];                                                     \
            ST sa = (ST)ua, sb = (ST)ub;                                                           \
            uint64_t uc = pc[l];                                                                   \
            (void)sa;                                                                              \
            (void)sb;                                                                              \
            (void)uc;                                                                              \
            d[l] = (expr);                                                                         \
        });                                                                                        \
        return TF__GO;                                                                             \
    }

#define I1(name, UT, ST, expr)                                                                     \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a);                                                         \
        TF__FOR_LANES(m, {                                                                         \
            UT ua = (UT)pa[l];                                                                     \
            ST sa = (ST)ua;                                                                        \
            (void)sa;                                                                              \
            d[l] = (UT)(expr);                                                                     \
        });                                                                                        \
        return TF__GO;                                                                             \
    }

/* signed min for width W and all-ones */
#define SMIN(ST) ((ST)((uint64_t)1 << (sizeof(ST) * 8 - 1)))

#define DEF_W(W, UT, ST)                                                                           \
    I2(add_##W, UT, ST, (uint64_t)ua + ub)                                                         \
    I2(sub_##W, UT, ST, (uint64_t)ua - ub)                                                         \
    I2(mullo_##W, UT, ST, (uint64_t)ua *(uint64_t)ub)                                              \
    I2(divu_##W, UT, ST, ub == 0 ? (UT) ~(UT)0 : (UT)(ua / ub))                                    \
    I2(divs_##W, UT, ST,                                                                           \
       sb == 0                        ? (UT)(sa < 0 ? 1 : (UT) ~(UT)0)                             \
       : (sa == SMIN(ST) && sb == -1) ? (UT)sa                                                     \
                                      : (UT)(sa / sb))                                             \
    I2(remu_##W, UT, ST, ub == 0 ? ua : (UT)(ua % ub))                                             \
    I2(rems_##W, UT, ST, sb == 0 ? ua : (sb == -1) ? 0 : (UT)(sa % sb))                            \
    I2(minu_##W, UT, ST, ua < ub ? ua : ub)                                                        \
    I2(maxu_##W, UT, ST, ua > ub ? ua : ub)                                                        \
    I2(mins_##W, UT, ST, sa < sb ? ua : ub)                                                        \
    I2(maxs_##W, UT, ST, sa > sb ? ua : ub)                                                        \
    I2(and_##W, UT, ST, ua &ub)                                                                    \
    I2(or_##W, UT, ST, ua | ub)                                                                    \
    I2(xor_##W, UT, ST, ua ^ ub)                                                                   \
    I1(not_##W, UT, ST, ~ua)                                                                       \
    I1(cnot_##W, UT, ST, ua == 0 ? 1 : 0)                                                          \
    I1(abs_##W, UT, ST, sa < 0 ? (uint64_t)0 - ua : ua)                                            \
    I1(neg_##W, UT, ST, (uint64_t)0 - ua)                                                          \
    I3(madlo_##W, UT, ST, (UT)((uint64_t)ua * (uint64_t)ub + uc))                                  \
    I3(sadu_##W, UT, ST, (UT)(uc + (ua > ub ? ua - ub : ub - ua)))                                 \
    I3(sads_##W, UT, ST, (UT)(uc + (sa > sb ? (uint64_t)ua - ub : (uint64_t)ub - ua)))             \
    TF__OP(shl_##W)                                                                                \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b);                                     \
        TF__FOR_LANES(m, {                                                                         \
            uint32_t s = (uint32_t)pb[l];                                                          \
            d[l] = s >= W ? 0 : (UT)((uint64_t)(UT)pa[l] << s);                                    \
        });                                                                                        \
        return TF__GO;                                                                             \
    }                                                                                              \
    TF__OP(shru_##W)                                                                               \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b);                                     \
        TF__FOR_LANES(m, {                                                                         \
            uint32_t s = (uint32_t)pb[l];                                                          \
            d[l] = s >= W ? 0 : (UT)((UT)pa[l] >> s);                                              \
        });                                                                                        \
        return TF__GO;                                                                             \
    }                                                                                              \
    TF__OP(shrs_##W)                                                                               \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b);                                     \
        TF__FOR_LANES(m, {                                                                         \
            uint32_t s = (uint32_t)pb[l];                                                          \
            ST v = (ST)(UT)pa[l];                                                                  \
            d[l] = (UT)(s >= W ? (v < 0 ? (ST)-1 : 0) : (ST)(v >> s));                             \
        });                                                                                        \
        return TF__GO;                                                                             \
    }

/* clang-format off */
DEF_W(16, uint16_t, int16_t)
DEF_W(32, uint32_t, int32_t)
DEF_W(64, uint64_t, int64_t)
/* clang-format on */

/* high halves and wide products */
/* clang-format off */
I2(mulhiu_16, uint16_t, int16_t, ((uint32_t)ua * ub) >> 16)
I2(mulhis_16, uint16_t, int16_t, (uint32_t)(((int32_t)sa * sb) >> 16))
I2(mulhiu_32, uint32_t, int32_t, ((uint64_t)ua * ub) >> 32)
I2(mulhis_32, uint32_t, int32_t, (uint64_t)(((int64_t)sa * sb) >> 32))
I2(mulhiu_64, uint64_t, int64_t, (uint64_t)(((unsigned __int128)ua * ub) >> 64))
I2(mulhis_64, uint64_t, int64_t, (uint64_t)(((__int128)sa * sb) >> 64))
I2X(mulwideu_16, uint16_t, int16_t, (uint32_t)ua * ub)
I2X(mulwides_16, uint16_t, int16_t, (uint32_t)((int32_t)sa * sb))
I2X(mulwideu_32, uint32_t, int32_t, (uint64_t)ua * ub)
I2X(mulwides_32, uint32_t, int32_t, (uint64_t)((int64_t)sa * sb))
I3(madhiu_16, uint16_t, int16_t, (uint16_t)((((uint32_t)ua * ub) >> 16) + uc))
I3(madhis_16, uint16_t, int16_t, (uint16_t)((uint32_t)(((int32_t)sa * sb) >> 16) + uc))
I3(madhiu_32, uint32_t, int32_t, (uint32_t)((((uint64_t)ua * ub) >> 32) + uc))
I3(madhis_32, uint32_t, int32_t, (uint32_t)((uint64_t)(((int64_t)sa * sb) >> 32) + uc))
I3(madhiu_64, uint64_t, int64_t, (uint64_t)(((unsigned __int128)ua * ub) >> 64) + uc)
I3(madhis_64, uint64_t, int64_t, (uint64_t)(((__int128)sa * sb) >> 64) + uc)
I3(madwideu_16, uint16_t, int16_t, (uint32_t)((uint32_t)ua * ub + uc))
I3(madwides_16, uint16_t, int16_t, (uint32_t)((uint32_t)((int32_t)sa * sb) + uc))
I3(madwideu_32, uint32_t, int32_t, (uint64_t)ua * ub + uc)
I3(madwides_32, uint32_t, int32_t, (uint64_t)((int64_t)sa * sb) + uc)
/* clang-format on */

/* saturating s32 add/sub */
static inline uint32_t sat32(int64_t v)
{
    return (uint32_t)(int32_t)(v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : v);
}
/* clang-format off */
I2(addsat_s32, uint32_t, int32_t, sat32((int64_t)sa + sb))
I2(subsat_s32, uint32_t, int32_t, sat32((int64_t)sa - sb))
I2(maxrelu_s32, uint32_t, int32_t, (sa > sb ? sa : sb) < 0 ? 0 : (uint32_t)(sa > sb ? sa : sb))
I2(minrelu_s32, uint32_t, int32_t, (sa < sb ? sa : sb) < 0 ? 0 : (uint32_t)(sa < sb ? sa : sb))
/* clang-format on */

/* mul24 / mad24: 24-bit operands, 48-bit product */
static inline int64_t s24(uint32_t v)
{
    return (int64_t)((int32_t)(v << 8) >> 8);
}
/* clang-format off */
I2(mul24lou, uint32_t, int32_t, (uint32_t)((uint64_t)(ua & 0xffffff) * (ub & 0xffffff)))
I2(mul24his, uint32_t, int32_t, (uint32_t)((uint64_t)(s24(ua) * s24(ub)) >> 16))
I2(mul24hiu, uint32_t, int32_t, (uint32_t)(((uint64_t)(ua & 0xffffff) * (ub & 0xffffff)) >> 16))
I2(mul24los, uint32_t, int32_t, (uint32_t)(uint64_t)(s24(ua) * s24(ub)))
I3(mad24lou, uint32_t, int32_t, (uint32_t)((uint64_t)(ua & 0xffffff) * (ub & 0xffffff) + uc))
I3(mad24los, uint32_t, int32_t, (uint32_t)((uint64_t)(s24(ua) * s24(ub)) + uc))
I3(mad24hiu, uint32_t, int32_t,
   (uint32_t)((((uint64_t)(ua & 0xffffff) * (ub & 0xffffff)) >> 16) + uc))
I3(mad24his, uint32_t, int32_t, (uint32_t)(((uint64_t)(s24(ua) * s24(ub)) >> 16) + uc))
/* clang-format on */

/* carry chain: the carry (add) or borrow (sub) flag per lane in w->cc */
#define CARRY(name, UT, expr_r, expr_c, usein, setout)                                             \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b);                                     \
        uint32_t cc = w->cc, out = 0;                                                              \
        TF__FOR_LANES(m, {                                                                         \
            UT a = (UT)pa[l], b = (UT)pb[l];                                                       \
            UT ci = usein ? (UT)((cc >> l) & 1) : 0;                                               \
            UT r = (UT)(expr_r);                                                                   \
            (void)ci;                                                                              \
            d[l] = r;                                                                              \
            out |= (uint32_t)(expr_c) << l;                                                        \
        });                                                                                        \
        if (setout)                                                                                \
            w->cc = (cc & ~m) | (out & m);                                                         \
        return TF__GO;                                                                             \
    }
#define CARRY_W(W, UT)                                                                             \
    CARRY(addcc_##W, UT, a + b, r < a, 0, 1)                                                       \
    CARRY(addc_##W, UT, a + b + ci, (r < a) || (ci && r == a), 1, 0)                               \
    CARRY(addccc_##W, UT, a + b + ci, (r < a) || (ci && r == a), 1, 1)                             \
    CARRY(subcc_##W, UT, a - b, a < b, 0, 1)                                                       \
    CARRY(subc_##W, UT, a - b - ci, (a < b) || (ci && a == b), 1, 0)                               \
    CARRY(subccc_##W, UT, a - b - ci, (a < b) || (ci && a == b), 1, 1)
/* clang-format off */
CARRY_W(32, uint32_t)
CARRY_W(64, uint64_t)
/* clang-format on */

/* mad{.lo,.hi}.cc and madc: the product half plus c plus the carry-in (madc), carry-out
 * into w->cc (.cc) */
#define MADC(name, UT, prod, usein, setout)                                                        \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);                 \
        uint32_t cc = w->cc, out = 0;                                                              \
        TF__FOR_LANES(m, {                                                                         \
            UT a = (UT)pa[l], b = (UT)pb[l], c = (UT)pc[l];                                        \
            UT ci = usein ? (UT)((cc >> l) & 1) : 0;                                               \
            UT p = (UT)(prod);                                                                     \
            UT r = (UT)(p + c + ci);                                                               \
            d[l] = r;                                                                              \
            out |= (uint32_t)(ci ? r <= p : r < p) << l;                                           \
        });                                                                                        \
        if (setout)                                                                                \
            w->cc = (cc & ~m) | (out & m);                                                         \
        return TF__GO;                                                                             \
    }
#define LO32 (uint64_t) a *b
#define HIU32 ((uint64_t)a * b) >> 32
#define HIS32 (uint64_t)(((int64_t)(int32_t)a * (int32_t)b) >> 32)
#define LO64 (unsigned __int128)a *b
#define HIU64 ((unsigned __int128)a * b) >> 64
#define HIS64 (uint64_t)(((__int128)(int64_t)a * (int64_t)b) >> 64)
#define MADC_ALL(sfx, UT, P)                                                                       \
    MADC(madcc_##sfx, UT, P, 0, 1)                                                                 \
    MADC(madc_##sfx, UT, P, 1, 0)                                                                  \
    MADC(madccc_##sfx, UT, P, 1, 1)
/* clang-format off */
MADC_ALL(lo32, uint32_t, LO32)
MADC_ALL(hiu32, uint32_t, HIU32)
MADC_ALL(his32, uint32_t, HIS32)
MADC_ALL(lo64, uint64_t, LO64)
MADC_ALL(hiu64, uint64_t, HIU64)
MADC_ALL(his64, uint64_t, HIS64)
/* clang-format on */

/* bit manipulation */
/* clang-format off */
I1(popc_32, uint32_t, int32_t, __builtin_popcount(ua))
I1(popc_64, uint64_t, int64_t, (uint32_t)__builtin_popcountll(ua))
I1(clz_32, uint32_t, int32_t, ua ? __builtin_clz(ua) : 32)
I1(clz_64, uint64_t, int64_t, (uint32_t)(ua ? __builtin_clzll(ua) : 64))
/* clang-format on */

static inline uint64_t brev64(uint64_t v)
{
    v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
    v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
    v = ((v >> 4) & 0x0f0f0f0f0f0f0f0full) | ((v & 0x0f0f0f0f0f0f0f0full) << 4);
    return __builtin_bswap64(v);
}
/* clang-format off */
I1(brev_32, uint32_t, int32_t, (uint32_t)(brev64(ua) >> 32))
I1(brev_64, uint64_t, int64_t, brev64(ua))
/* clang-format on */

/* bfind: position of the most significant non-sign bit, 0xffffffff if none */
static inline uint32_t bfind(uint64_t v, unsigned w, int is_signed, int shiftamt)
{
    if (is_signed && (v >> (w - 1)) & 1)
        v = ~v & tf__wmask(w);
    if (v == 0)
        return 0xffffffffu;
    uint32_t pos = 63u - (uint32_t)__builtin_clzll(v);
    return shiftamt ? (w - 1) - pos : pos;
}
/* clang-format off */
I1(bfindu_32, uint32_t, int32_t, bfind(ua, 32, 0, 0))
I1(bfinds_32, uint32_t, int32_t, bfind(ua, 32, 1, 0))
I1(bfindu_64, uint64_t, int64_t, (uint32_t)bfind(ua, 64, 0, 0))
I1(bfinds_64, uint64_t, int64_t, (uint32_t)bfind(ua, 64, 1, 0))
I1(bfindus_32, uint32_t, int32_t, bfind(ua, 32, 0, 1))
I1(bfindss_32, uint32_t, int32_t, bfind(ua, 32, 1, 1))
I1(bfindus_64, uint64_t, int64_t, (uint32_t)bfind(ua, 64, 0, 1))
I1(bfindss_64, uint64_t, int64_t, (uint32_t)bfind(ua, 64, 1, 1))
/* clang-format on */

static inline uint64_t bfe(uint64_t x, uint32_t pos, uint32_t len, unsigned w, int is_signed)
{
    unsigned msb = w - 1;
    pos &= 0xff;
    len &= 0xff;
    if (len == 0)
        return 0;
    unsigned top = pos + len - 1 > msb ? msb : pos + len - 1;
    unsigned nb = pos > msb ? 0 : top - pos + 1;
    uint64_t field = pos > msb ? 0 : (x >> pos) & tf__wmask(nb);
    if (is_signed && ((x >> top) & 1))
        field |= ~tf__wmask(nb);
    return field & tf__wmask(w);
}
/* clang-format off */
I3(bfeu_32, uint32_t, int32_t, bfe(ua, (uint32_t)ub, (uint32_t)uc, 32, 0))
I3(bfes_32, uint32_t, int32_t, bfe(ua, (uint32_t)ub, (uint32_t)uc, 32, 1))
I3(bfeu_64, uint64_t, int64_t, bfe(ua, (uint32_t)ub, (uint32_t)uc, 64, 0))
I3(bfes_64, uint64_t, int64_t, bfe(ua, (uint32_t)ub, (uint32_t)uc, 64, 1))
/* clang-format on */

static inline uint64_t bfi(uint64_t a, uint64_t b, uint32_t pos, uint32_t len, unsigned w)
{
    pos &= 0xff;
    len &= 0xff;
    if (len == 0 || pos > w - 1)
        return b & tf__wmask(w);
    unsigned nb = len < w - pos ? len : w - pos;
    uint64_t mk = tf__wmask(nb) << pos;
    return ((b & ~mk) | ((a << pos) & mk)) & tf__wmask(w);
}
#define BFI(name, W)                                                                               \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c),                 \
                       *pe = TF__R(in->e);                                                         \
        TF__FOR_LANES(m, d[l] = bfi(pa[l], pb[l], (uint32_t)pc[l], (uint32_t)pe[l], W));           \
        return TF__GO;                                                                             \
    }
/* clang-format off */
BFI(bfi_32, 32)
BFI(bfi_64, 64)
/* clang-format on */

static inline uint32_t prmt(uint32_t a, uint32_t b, uint32_t c, int mode)
{
    uint64_t x = (uint64_t)b << 32 | a;
    uint32_t r = 0;
    unsigned s = c & 3;
    for (unsigned i = 0; i < 4; i++) {
        unsigned sel;
        switch (mode) {
        case MOD_F4E:
            sel = (s + i) & 7;
            break;
        case MOD_B4E:
            sel = (s - i) & 7;
            break;
        case MOD_RC8:
            sel = s;
            break;
        case MOD_ECL:
            sel = i > s ? i : s;
            break;
        case MOD_ECR:
            sel = i < s ? i : s;
            break;
        case MOD_RC16:
            sel = 2 * (s & 1) + (i & 1);
            break;
        default: {
            unsigned n = (c >> (4 * i)) & 0xf;
            uint8_t byte = (uint8_t)(x >> (8 * (n & 7)));
            if (n & 8)
                byte = (byte & 0x80) ? 0xff : 0;
            r |= (uint32_t)byte << (8 * i);
            continue;
        }
        }
        r |= (uint32_t)(uint8_t)(x >> (8 * sel)) << (8 * i);
    }
    return r;
}
#define PRMT(name, mode) I3(name, uint32_t, int32_t, prmt(ua, ub, (uint32_t)uc, mode))
/* clang-format off */
PRMT(prmt_def, 0)
PRMT(prmt_f4e, MOD_F4E)
PRMT(prmt_b4e, MOD_B4E)
PRMT(prmt_rc8, MOD_RC8)
PRMT(prmt_ecl, MOD_ECL)
PRMT(prmt_ecr, MOD_ECR)
PRMT(prmt_rc16, MOD_RC16)
/* clang-format on */

TF__OP(lop3)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);
    uint32_t lut = (uint32_t)in->imm;
    TF__FOR_LANES(m, {
        uint32_t a = (uint32_t)pa[l], b = (uint32_t)pb[l], c = (uint32_t)pc[l], r = 0;
        for (unsigned i = 0; i < 8; i++)
            if ((lut >> i) & 1)
                r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
        d[l] = r;
    });
    return TF__GO;
}

/* shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: funnel shift of {b:a} */
#define SHF(name, left, clamp)                                                                     \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);                 \
        TF__FOR_LANES(m, {                                                                         \
            uint64_t x = (uint64_t)(uint32_t)pb[l] << 32 | (uint32_t)pa[l];                        \
            uint32_t n = (uint32_t)pc[l];                                                          \
            n = clamp ? (n > 32 ? 32 : n) : (n & 31);                                              \
            d[l] = left ? (uint32_t)((x << n) >> 32) : (uint32_t)(x >> n);                         \
        });                                                                                        \
        return TF__GO;                                                                             \
    }
/* clang-format off */
SHF(shf_lw, 1, 0)
SHF(shf_lc, 1, 1)
SHF(shf_rw, 0, 0)
SHF(shf_rc, 0, 1)
/* clang-format on */

/* dp4a.atype.btype d, a, b, c: c + four byte products */
#define DP4A(name, sa_, sb_)                                                                       \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);                 \
        TF__FOR_LANES(m, {                                                                         \
            uint32_t a = (uint32_t)pa[l], b = (uint32_t)pb[l];                                     \
            int64_t acc = sa_ || sb_ ? (int64_t)(int32_t)pc[l] : (int64_t)(uint32_t)pc[l];         \
            for (int i = 0; i < 4; i++) {                                                          \
                int64_t x = sa_ ? (int8_t)(a >> (8 * i)) : (uint8_t)(a >> (8 * i));                \
                int64_t y = sb_ ? (int8_t)(b >> (8 * i)) : (uint8_t)(b >> (8 * i));                \
                acc += x * y;                                                                      \
            }                                                                                      \
            d[l] = (uint32_t)acc;                                                                  \
        });                                                                                        \
        return TF__GO;                                                                             \
    }
/* dp2a.{lo,hi}.atype.btype d, a, b, c: c + a's two 16-bit halves times b's bytes 0, 1 (lo) or
 * 2, 3 (hi). in->flags: 1 a signed, 2 b signed, 4 hi. */
TF__OP(dp2a)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);
    const int sa = in->flags & 1, sb = in->flags & 2, hi = in->flags & 4;
    TF__FOR_LANES(m, {
        uint32_t a = (uint32_t)pa[l], b = (uint32_t)pb[l];
        int64_t acc = sa || sb ? (int64_t)(int32_t)pc[l] : (int64_t)(uint32_t)pc[l];
        for (int i = 0; i < 2; i++) {
            int64_t x = sa ? (int16_t)(a >> (16 * i)) : (uint16_t)(a >> (16 * i));
            int sh = 8 * (i + (hi ? 2 : 0));
            int64_t y = sb ? (int8_t)(b >> sh) : (uint8_t)(b >> sh);
            acc += x * y;
        }
        d[l] = (uint32_t)acc;
    });
    return TF__GO;
}
/* clang-format off */
DP4A(dp4a_uu, 0, 0)
DP4A(dp4a_us, 0, 1)
DP4A(dp4a_su, 1, 0)
DP4A(dp4a_ss, 1, 1)
/* clang-format on */

/* ---- predicates ---- */

TF__OP(pand)
{
    uint32_t r = w->p[in->a] & w->p[in->b];
    w->p[in->d[0]] = (w->p[in->d[0]] & ~m) | (r & m);
    return TF__GO;
}
TF__OP(por)
{
    uint32_t r = w->p[in->a] | w->p[in->b];
    w->p[in->d[0]] = (w->p[in->d[0]] & ~m) | (r & m);
    return TF__GO;
}
TF__OP(pxor)
{
    uint32_t r = w->p[in->a] ^ w->p[in->b];
    w->p[in->d[0]] = (w->p[in->d[0]] & ~m) | (r & m);
    return TF__GO;
}
int tf__op_pnot(struct tf__warp *w, const struct tf__insn *in, uint32_t m)
{
    uint32_t r = ~w->p[in->a];
    w->p[in->d[0]] = (w->p[in->d[0]] & ~m) | (r & m);
    return TF__GO;
}

/* ---- decoding ---- */

static int last_type(const struct tf__pinsn *pi)
{
    int t = TY_NONE;
    for (uint32_t i = 0; i < pi->nmods; i++) {
        int x = tf__ty_parse(pi->mods[i]);
        if (x != TY_NONE)
            t = x;
    }
    return t;
}

int tf__width_index(int ty)
{
    unsigned b = tf__ty_bits(ty);
    return b == 16 ? 0 : b == 32 ? 1 : b == 64 ? 2 : -1;
}

/* d, a, b[, c[, e]] with sources of type TY (shift amounts etc. take U32 for B). */
int tf__int_operands(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in,
                     uint32_t nsrc, const int *ty)
{
    if (tf__opcount(dc, pi, nsrc + 1, nsrc + 1))
        return -1;
    if (tf__dst(dc, pi, &pi->ops[0], &in->d[0], NULL))
        return -1;
    uint32_t *f[4] = {&in->a, &in->b, &in->c, &in->e};
    for (uint32_t i = 0; i < nsrc; i++)
        if (tf__src(dc, pi, &pi->ops[1 + i], ty[i], f[i]))
            return -1;
    return 1;
}

static int ops_same(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in,
                    uint32_t nsrc, int t)
{
    int ty[4] = {t, t, t, t};
    return tf__int_operands(dc, pi, in, nsrc, ty);
}

#define TAB3(n)                                                                                    \
    {                                                                                              \
        n##_16, n##_32, n##_64                                                                     \
    }

static int has_cc(const struct tf__pinsn *pi)
{
    for (uint32_t i = 0; i < pi->nmods; i++)
        if (!strcmp(pi->mods[i], "cc"))
            return 1;
    return 0;
}

static int decode_arith(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in,
                        int ty)
{
    const char *b = pi->base;
    struct tf__mods md;
    int wi = tf__width_index(ty), sg = tf__ty_is_signed(ty);
    static const int add_ok[] = {MOD_SAT, MOD_CC, MOD_NONE};
    static const int mul_ok[] = {MOD_LO, MOD_HI, MOD_WIDE, MOD_NONE};
    static const int none_ok[] = {MOD_NONE};
    static const int minmax_ok[] = {MOD_RELU, MOD_NONE};
    if (!strcmp(b, "add") || !strcmp(b, "sub")) {
        if (tf__mods(dc, pi, add_ok, &md))
            return -1;
        if (md.nt != 1 || wi < 0)
            return tf__unsupported(dc, pi);
        int add = b[0] == 'a';
        if (tf__has(&md, MOD_SAT)) {
            if (ty != TY_S32 || tf__has(&md, MOD_CC))
                return tf__unsupported(dc, pi);
            in->fn = add ? addsat_s32 : subsat_s32;
        } else if (tf__has(&md, MOD_CC)) {
            if (wi == 0)
                return tf__unsupported(dc, pi);
            in->fn = add ? (wi == 1 ? addcc_32 : addcc_64) : (wi == 1 ? subcc_32 : subcc_64);
        } else {
            static const tf__op_fn a[] = TAB3(add), s[] = TAB3(sub);
            in->fn = add ? a[wi] : s[wi];
        }
        return ops_same(dc, pi, in, 2, ty);
    }
    if (!strcmp(b, "addc") || !strcmp(b, "subc")) {
        static const int ok[] = {MOD_CC, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        if (md.nt != 1 || wi < 1)
            return tf__unsupported(dc, pi);
        int cc = tf__has(&md, MOD_CC), add = b[0] == 'a';
        static const tf__op_fn t[2][2][2] = {{{subc_32, subccc_32}, {subc_64, subccc_64}},
                                             {{addc_32, addccc_32}, {addc_64, addccc_64}}};
        in->fn = t[add][wi - 1][cc];
        return ops_same(dc, pi, in, 2, ty);
    }
    if (!strcmp(b, "madc") || (!strcmp(b, "mad") && has_cc(pi))) {
        static const int ok[] = {MOD_LO, MOD_HI, MOD_CC, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        int hi = tf__has(&md, MOD_HI), cc = tf__has(&md, MOD_CC), madc = b[3] == 'c';
        if (md.nt != 1 || wi < 1 || hi == tf__has(&md, MOD_LO))
            return tf__unsupported(dc, pi);
        /* [width][lo, hi unsigned, hi signed][mad.cc, madc, madc.cc] */
        static const tf__op_fn t[2][3][3] = {{{madcc_lo32, madc_lo32, madccc_lo32},
                                              {madcc_hiu32, madc_hiu32, madccc_hiu32},
                                              {madcc_his32, madc_his32, madccc_his32}},
                                             {{madcc_lo64, madc_lo64, madccc_lo64},
                                              {madcc_hiu64, madc_hiu64, madccc_hiu64},
                                              {madcc_his64, madc_his64, madccc_his64}}};
        in->fn = t[wi - 1][hi ? 1 + sg : 0][madc ? 1 + cc : 0];
        return ops_same(dc, pi, in, 3, ty);
    }
    if (!strcmp(b, "mul") || !strcmp(b, "mad")) {
        if (tf__mods(dc, pi, mul_ok, &md))
            return -1;
        int lo = tf__has(&md, MOD_LO), hi = tf__has(&md, MOD_HI), wide = tf__has(&md, MOD_WIDE);
        if (md.nt != 1 || wi < 0 || lo + hi + wide != 1 || (wide && wi == 2))
            return tf__unsupported(dc, pi);
        int mad = b[1] == 'a';
        if (lo) {
            static const tf__op_fn ml[] = TAB3(mullo), ma[] = TAB3(madlo);
            in->fn = mad ? ma[wi] : ml[wi];
        } else if (hi) {
            static const tf__op_fn t[2][2][3] = {
                {{mulhiu_16, mulhiu_32, mulhiu_64}, {mulhis_16, mulhis_32, mulhis_64}},
                {{madhiu_16, madhiu_32, madhiu_64}, {madhis_16, madhis_32, madhis_64}}};
            in->fn = t[mad][sg][wi];
        } else {
            static const tf__op_fn t[2][2][2] = {
                {{mulwideu_16, mulwideu_32}, {mulwides_16, mulwides_32}},
                {{madwideu_16, madwideu_32}, {madwides_16, madwides_32}}};
            in->fn = t[mad][sg][wi];
            int wty = ty == TY_S16   ? TY_S32
                      : ty == TY_U16 ? TY_U32
                      : ty == TY_S32 ? TY_S64
                                     : TY_U64;
            int tys[3] = {ty, ty, wty};
            return tf__int_operands(dc, pi, in, mad ? 3 : 2, tys);
        }
        return ops_same(dc, pi, in, mad ? 3 : 2, ty);
    }
    if (!strcmp(b, "mul24") || !strcmp(b, "mad24")) {
        static const int ok[] = {MOD_LO, MOD_HI, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        int hi = tf__has(&md, MOD_HI);
        if (md.nt != 1 || (ty != TY_U32 && ty != TY_S32) || hi == tf__has(&md, MOD_LO))
            return tf__unsupported(dc, pi);
        int mad = b[1] == 'a';
        static const tf__op_fn t[2][2][2] = {{{mul24lou, mul24los}, {mul24hiu, mul24his}},
                                             {{mad24lou, mad24los}, {mad24hiu, mad24his}}};
        in->fn = t[mad][hi][sg];
        return ops_same(dc, pi, in, mad ? 3 : 2, ty);
    }
    if (!strcmp(b, "sad")) {
        if (tf__mods(dc, pi, none_ok, &md))
            return -1;
        if (md.nt != 1 || wi < 0)
            return tf__unsupported(dc, pi);
        static const tf__op_fn u[] = TAB3(sadu), s[] = TAB3(sads);
        in->fn = sg ? s[wi] : u[wi];
        return ops_same(dc, pi, in, 3, ty);
    }
    if (!strcmp(b, "div") || !strcmp(b, "rem")) {
        if (tf__mods(dc, pi, none_ok, &md))
            return -1;
        if (md.nt != 1 || wi < 0)
            return tf__unsupported(dc, pi);
        static const tf__op_fn du[] = TAB3(divu), ds[] = TAB3(divs), ru[] = TAB3(remu),
                               rs[] = TAB3(rems);
        in->fn = b[0] == 'd' ? (sg ? ds[wi] : du[wi]) : (sg ? rs[wi] : ru[wi]);
        return ops_same(dc, pi, in, 2, ty);
    }
    if (!strcmp(b, "min") || !strcmp(b, "max")) {
        if (tf__mods(dc, pi, minmax_ok, &md))
            return -1;
        if (md.nt != 1 || wi < 0)
            return tf__unsupported(dc, pi);
        int mx = b[1] == 'a';
        if (tf__has(&md, MOD_RELU)) {
            if (ty != TY_S32)
                return tf__unsupported(dc, pi);
            in->fn = mx ? maxrelu_s32 : minrelu_s32;
        } else {
            static const tf__op_fn t[2][2][3] = {{TAB3(minu), TAB3(mins)},
                                                 {TAB3(maxu), TAB3(maxs)}};
            in->fn = t[mx][sg][wi];
        }
        return ops_same(dc, pi, in, 2, ty);
    }
    if (!strcmp(b, "abs") || !strcmp(b, "neg")) {
        if (tf__mods(dc, pi, none_ok, &md))
            return -1;
        if (md.nt != 1 || wi < 0 || !sg)
            return tf__unsupported(dc, pi);
        static const tf__op_fn a[] = TAB3(abs), n[] = TAB3(neg);
        in->fn = b[0] == 'a' ? a[wi] : n[wi];
        return ops_same(dc, pi, in, 1, ty);
    }
    return 0;
}

static int decode_bits(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in, int ty)
{
    const char *b = pi->base;
    struct tf__mods md;
    static const int none_ok[] = {MOD_NONE};
    int wi = tf__width_index(ty), sg = tf__ty_is_signed(ty);
    if (!strcmp(b, "and") || !strcmp(b, "or") || !strcmp(b, "xor") || !strcmp(b, "not") ||
        !strcmp(b, "cnot")) {
        if (tf__mods(dc, pi, none_ok, &md))
            return -1;
        if (md.nt != 1)
            return tf__unsupported(dc, pi);
        int unary = b[0] == 'n' || b[0] == 'c';
        if (ty == TY_PRED) {
            if (b[0] == 'c')
                return tf__unsupported(dc, pi);
            if (tf__opcount(dc, pi, unary ? 2 : 3, unary ? 2 : 3) ||
                tf__pdst(dc, pi, pi->ops[0].name ? pi->ops[0].name : "", &in->d[0]) ||
                tf__psrc(dc, pi, &pi->ops[1], &in->a) ||
                (!unary && tf__psrc(dc, pi, &pi->ops[2], &in->b)))
                return -1;
            if (pi->ops[1].neg || (!unary && pi->ops[2].neg))
                return tf__derr(dc, pi->line, "negated predicate operand in '%s'", pi->opcode);
            in->fn = b[0] == 'a' ? pand : b[0] == 'o' ? por : b[0] == 'x' ? pxor : tf__op_pnot;
            return 1;
        }
        if (wi < 0 || sg || ty == TY_F32 || ty == TY_F64)
            return tf__unsupported(dc, pi);
        static const tf__op_fn a[] = TAB3(and), o[] = TAB3(or), x[] = TAB3(xor), n[] = TAB3(not ),
                               c[] = TAB3(cnot);
        in->fn = b[0] == 'a'   ? a[wi]
                 : b[0] == 'o' ? o[wi]
                 : b[0] == 'x' ? x[wi]
                 : b[0] == 'n' ? n[wi]
                               : c[wi];
        return ops_same(dc, pi, in, unary ? 1 : 2, ty);
    }
    if (!strcmp(b, "shl") || !strcmp(b, "shr")) {
        if (tf__mods(dc, pi, none_ok, &md))
            return -1;
        if (md.nt != 1 || wi < 0 || (b[2] == 'l' && sg) || tf__ty_is_float(ty))
            return tf__unsupported(dc, pi);
        static const tf__op_fn l[] = TAB3(shl), ru[] = TAB3(shru), rs[] = TAB3(shrs);
        in->fn = b[2] == 'l' ? l[wi] : sg ? rs[wi] : ru[wi];
        int tys[2] = {ty, TY_U32};
        return tf__int_operands(dc, pi, in, 2, tys);
    }
    if (!strcmp(b, "popc") || !strcmp(b, "clz") || !strcmp(b, "brev")) {
        if (tf__mods(dc, pi, none_ok, &md))
            return -1;
        if (md.nt != 1 || (ty != TY_B32 && ty != TY_B64))
            return tf__unsupported(dc, pi);
        int w64 = ty == TY_B64;
        in->fn = b[0] == 'p'   ? (w64 ? popc_64 : popc_32)
                 : b[0] == 'c' ? (w64 ? clz_64 : clz_32)
                               : (w64 ? brev_64 : brev_32);
        return ops_same(dc, pi, in, 1, ty);
    }
    if (!strcmp(b, "bfind")) {
        static const int ok[] = {MOD_SHIFTAMT, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        if (md.nt != 1 || wi < 1 || ty == TY_B32 || ty == TY_B64)
            return tf__unsupported(dc, pi);
        static const tf__op_fn t[2][2][2] = {{{bfindu_32, bfindu_64}, {bfinds_32, bfinds_64}},
                                             {{bfindus_32, bfindus_64}, {bfindss_32, bfindss_64}}};
        in->fn = t[tf__has(&md, MOD_SHIFTAMT)][sg][wi - 1];
        return ops_same(dc, pi, in, 1, ty);
    }
    if (!strcmp(b, "bfe")) {
        if (tf__mods(dc, pi, none_ok, &md))
            return -1;
        if (md.nt != 1 || wi < 1 || ty == TY_B32 || ty == TY_B64)
            return tf__unsupported(dc, pi);
        static const tf__op_fn t[2][2] = {{bfeu_32, bfeu_64}, {bfes_32, bfes_64}};
        in->fn = t[sg][wi - 1];
        int tys[3] = {ty, TY_U32, TY_U32};
        return tf__int_operands(dc, pi, in, 3, tys);
    }
    if (!strcmp(b, "bfi")) {
        if (tf__mods(dc, pi, none_ok, &md))
            return -1;
        if (md.nt != 1 || (ty != TY_B32 && ty != TY_B64))
            return tf__unsupported(dc, pi);
        in->fn = ty == TY_B32 ? bfi_32 : bfi_64;
        int tys[4] = {ty, ty, TY_U32, TY_U32};
        return tf__int_operands(dc, pi, in, 4, tys);
    }
    if (!strcmp(b, "prmt")) {
        static const int ok[] = {MOD_F4E, MOD_B4E, MOD_RC8, MOD_ECL, MOD_ECR, MOD_RC16, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        if (md.nt != 1 || ty != TY_B32)
            return tf__unsupported(dc, pi);
        in->fn = tf__has(&md, MOD_F4E)    ? prmt_f4e
                 : tf__has(&md, MOD_B4E)  ? prmt_b4e
                 : tf__has(&md, MOD_RC8)  ? prmt_rc8
                 : tf__has(&md, MOD_ECL)  ? prmt_ecl
                 : tf__has(&md, MOD_ECR)  ? prmt_ecr
                 : tf__has(&md, MOD_RC16) ? prmt_rc16
                                          : prmt_def;
        return ops_same(dc, pi, in, 3, ty);
    }
    if (!strcmp(b, "lop3")) {
        if (tf__mods(dc, pi, none_ok, &md))
            return -1;
        if (md.nt != 1 || ty != TY_B32 || tf__opcount(dc, pi, 5, 5))
            return md.nt != 1 || ty != TY_B32 ? tf__unsupported(dc, pi) : -1;
        int64_t lut;
        if (tf__imm(dc, pi, &pi->ops[4], &lut))
            return -1;
        in->imm = lut & 0xff;
        in->fn = lop3;
        struct tf__pinsn tmp = *pi;
        tmp.nops = 4;
        return ops_same(dc, &tmp, in, 3, ty);
    }
    if (!strcmp(b, "shf")) {
        static const int ok[] = {MOD_L, MOD_R, MOD_WRAP, MOD_CLAMP, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        int l = tf__has(&md, MOD_L), c = tf__has(&md, MOD_CLAMP);
        if (md.nt != 1 || ty != TY_B32 || l == tf__has(&md, MOD_R) || c == tf__has(&md, MOD_WRAP))
            return tf__unsupported(dc, pi);
        in->fn = l ? (c ? shf_lc : shf_lw) : (c ? shf_rc : shf_rw);
        int tys[3] = {ty, ty, TY_U32};
        return tf__int_operands(dc, pi, in, 3, tys);
    }
    if (!strcmp(b, "dp2a")) {
        static const int ok[] = {MOD_LO, MOD_HI, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        if (md.nt != 2 || (md.t[0] != TY_U32 && md.t[0] != TY_S32) ||
            (md.t[1] != TY_U32 && md.t[1] != TY_S32) ||
            tf__has(&md, MOD_LO) + tf__has(&md, MOD_HI) != 1)
            return tf__unsupported(dc, pi);
        in->fn = dp2a;
        in->flags = (uint8_t)((md.t[0] == TY_S32 ? 1 : 0) | (md.t[1] == TY_S32 ? 2 : 0) |
                              (tf__has(&md, MOD_HI) ? 4 : 0));
        int tys[3] = {TY_U32, TY_U32, TY_U32};
        return tf__int_operands(dc, pi, in, 3, tys);
    }
    if (!strcmp(b, "dp4a")) {
        if (tf__mods(dc, pi, none_ok, &md))
            return -1;
        if (md.nt != 2 || (md.t[0] != TY_U32 && md.t[0] != TY_S32) ||
            (md.t[1] != TY_U32 && md.t[1] != TY_S32))
            return tf__unsupported(dc, pi);
        int sa = md.t[0] == TY_S32, sb = md.t[1] == TY_S32;
        static const tf__op_fn t[2][2] = {{dp4a_uu, dp4a_us}, {dp4a_su, dp4a_ss}};
        in->fn = t[sa][sb];
        int tys[3] = {TY_U32, TY_U32, TY_U32};
        return tf__int_operands(dc, pi, in, 3, tys);
    }
    return 0;
}

int tf__decode_int(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in)
{
    const char *b = pi->base;
    if (!strcmp(b, "mov"))
        return tf__decode_mov(dc, pi, in);
    int ty = last_type(pi);
    if (tf__ty_is_float(ty) || ty == TY_F16X2 || ty == TY_BF16X2) {
        /* selp/slct on float types are plain selections */
        if (!strcmp(b, "selp") || !strcmp(b, "slct"))
            return tf__decode_sel(dc, pi, in, ty);
        return 0;
    }
    int rc = decode_arith(dc, pi, in, ty);
    if (rc == 0)
        rc = decode_bits(dc, pi, in, ty);
    if (rc == 0)
        rc = tf__decode_cmp(dc, pi, in, ty);
    if (rc == 0)
        rc = tf__decode_sel(dc, pi, in, ty);
    return rc;
}
