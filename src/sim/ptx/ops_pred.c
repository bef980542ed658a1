/* SPDX-License-Identifier: Apache-2.0
 *
 * Comparison, selection and move instructions: setp/set on integers (with .and/.or/.xor),
 * selp/slct, and mov (predicates, registers, immediates, special registers, symbol addresses,
 * packing and unpacking vectors), as tf__decode_int (ops_int.c) hands them here.
 */
#include "sim/ptx/internal.h"

#include <string.h>

/* ---- predicate moves ---- */

TF__OP(pmov)
{
    uint32_t r = w->p[in->a];
    w->p[in->d[0]] = (w->p[in->d[0]] & ~m) | (r & m);
    return TF__GO;
}
TF__OP(pmov_imm)
{
    uint32_t r = in->imm ? TF__FULL : 0;
    w->p[in->d[0]] = (w->p[in->d[0]] & ~m) | (r & m);
    return TF__GO;
}

#define ICMP(W, UT, ST, cname, expr)                                                               \
    static inline uint32_t cmp_##cname##_##W(struct tf__warp *w, const struct tf__insn *in,        \
                                             uint32_t m)                                           \
    {                                                                                              \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b);                                     \
        uint32_t bits = 0;                                                                         \
        TF__FOR_LANES(m, {                                                                         \
            UT ua = (UT)pa[l], ub = (UT)pb[l];                                                     \
            ST sa = (ST)ua, sb = (ST)ub;                                                           \
            (void)sa;                                                                              \
            (void)sb;                                                                              \
            (void)ua;                                                                              \
            (void)ub;                                                                              \
            bits |= (uint32_t)(expr) << l;                                                         \
        });                                                                                        \
        return bits;                                                                               \
    }                                                                                              \
    TF__OP(setp_##cname##_##W)                                                                     \
    {                                                                                              \
        return tf__setp_finish(w, in, m, cmp_##cname##_##W(w, in, m));                             \
    }                                                                                              \
    TF__OP(set_##cname##_##W)                                                                      \
    {                                                                                              \
        return tf__set_finish(w, in, m, cmp_##cname##_##W(w, in, m));                              \
    }
#define ICMP_W(W, UT, ST)                                                                          \
    ICMP(W, UT, ST, eq, ua == ub)                                                                  \
    ICMP(W, UT, ST, ne, ua != ub)                                                                  \
    ICMP(W, UT, ST, ltu, ua < ub)                                                                  \
    ICMP(W, UT, ST, leu, ua <= ub)                                                                 \
    ICMP(W, UT, ST, gtu, ua > ub)                                                                  \
    ICMP(W, UT, ST, geu, ua >= ub)                                                                 \
    ICMP(W, UT, ST, lts, sa < sb)                                                                  \
    ICMP(W, UT, ST, les, sa <= sb)                                                                 \
    ICMP(W, UT, ST, gts, sa > sb)                                                                  \
    ICMP(W, UT, ST, ges, sa >= sb)
/* clang-format off */
ICMP_W(16, uint16_t, int16_t)
ICMP_W(32, uint32_t, int32_t)
ICMP_W(64, uint64_t, int64_t)
/* clang-format on */

#define CMP_ROW(pfx, W)                                                                            \
    {                                                                                              \
        pfx##eq_##W, pfx##ne_##W, pfx##ltu_##W, pfx##leu_##W, pfx##gtu_##W, pfx##geu_##W,          \
            pfx##lts_##W, pfx##les_##W, pfx##gts_##W, pfx##ges_##W                                 \
    }
static const tf__op_fn setp_tab[3][10] = {CMP_ROW(setp_, 16), CMP_ROW(setp_, 32),
                                          CMP_ROW(setp_, 64)};
static const tf__op_fn set_tab[3][10] = {CMP_ROW(set_, 16), CMP_ROW(set_, 32), CMP_ROW(set_, 64)};

/* selp.type d, a, b, c: c ? a : b */
TF__OP(selp)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b);
    uint32_t c = w->p[in->c];
    uint64_t mk = in->mask;
    TF__FOR_LANES(m, d[l] = (((c >> l) & 1) ? pa[l] : pb[l]) & mk);
    return TF__GO;
}
/* slct.dtype.s32 d, a, b, c: c >= 0 ? a : b */
TF__OP(slct_s32)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);
    uint64_t mk = in->mask;
    TF__FOR_LANES(m, d[l] = ((int32_t)(uint32_t)pc[l] >= 0 ? pa[l] : pb[l]) & mk);
    return TF__GO;
}
TF__OP(slct_f32)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);
    uint64_t mk = in->mask;
    TF__FOR_LANES(m, d[l] = (tf__f32(pc[l]) >= 0.0f ? pa[l] : pb[l]) & mk);
    return TF__GO;
}

/* ---- mov ---- */

TF__OP(mov)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    uint64_t mk = in->mask;
    if (m == TF__FULL && mk == ~0ull && d != pa) {
        memcpy(d, pa, TF__WARP * 8);
        return TF__GO;
    }
    TF__FOR_LANES(m, d[l] = pa[l] & mk);
    return TF__GO;
}
/* mov.bW d, {a, b[, c, e]}: pack elements of w1 bits, a lowest */
TF__OP(mov_pack)
{
    uint64_t *d = TF__R(in->d[0]);
    uint32_t src[4] = {in->a, in->b, in->c, in->e};
    unsigned ew = in->w1, n = in->nvec;
    uint64_t em = tf__wmask(ew);
    TF__FOR_LANES(m, {
        uint64_t v = 0;
        for (unsigned i = 0; i < n; i++)
            v |= (w->r[src[i] + (uint32_t)l] & em) << (i * ew);
        d[l] = v;
    });
    return TF__GO;
}
/* mov.bW {d0, d1[, d2, d3]}, a: unpack */
TF__OP(mov_unpack)
{
    const uint64_t *pa = TF__R(in->a);
    unsigned ew = in->w1, n = in->nvec;
    uint64_t em = tf__wmask(ew);
    uint64_t tmp[TF__WARP];
    memcpy(tmp, pa, sizeof(tmp));
    for (unsigned i = 0; i < n; i++) {
        uint64_t *d = TF__R(in->d[i]);
        TF__FOR_LANES(m, d[l] = (tmp[l] >> (i * ew)) & em);
    }
    return TF__GO;
}
TF__OP(mov_clock)
{
    uint64_t *d = TF__R(in->d[0]);
    uint64_t v;
    if (in->sub >= 3) {
        v = tf__globaltimer(w->run);
        if (in->sub == 4)
            v &= 0xffffffffu;
        else if (in->sub == 5)
            v >>= 32;
    } else {
        v = tf__clock64();
        if (in->sub == 0)
            v &= 0xffffffffu;
        else if (in->sub == 1)
            v = (v >> 32) & 0xffffffffu;
    }
    v &= in->mask;
    TF__FOR_LANES(m, d[l] = v);
    return TF__GO;
}

/* ---- decoding ---- */

/* Comparison modifiers -> index into setp_tab rows (eq ne ltu leu gtu geu lts les gts ges). */
static int cmp_index(const struct tf__mods *md, int sg)
{
    static const int mods[] = {MOD_EQ, MOD_NE, MOD_LT, MOD_LE, MOD_GT,
                               MOD_GE, MOD_LO, MOD_LS, MOD_HI, MOD_HS};
    int found = -1, count = 0;
    for (int i = 0; i < 10; i++)
        if (tf__has(md, mods[i])) {
            found = i;
            count++;
        }
    if (count != 1)
        return -1;
    switch (found) {
    case 0:
        return 0;
    case 1:
        return 1;
    case 2:
    case 3:
    case 4:
    case 5:
        return (found - 2) + (sg ? 6 : 2);
    default:
        if (sg)
            return -1;
        return (found - 6) + 2;
    }
}

int tf__bool_op(const struct tf__mods *md)
{
    int n = tf__has(md, MOD_AND) + tf__has(md, MOD_OR) + tf__has(md, MOD_XOR);
    if (n > 1)
        return -1;
    return tf__has(md, MOD_AND)   ? BOOL_AND
           : tf__has(md, MOD_OR)  ? BOOL_OR
           : tf__has(md, MOD_XOR) ? BOOL_XOR
                                  : BOOL_NONE;
}

int tf__bool_operand(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in, int bop,
                     uint32_t idx)
{
    in->sub = (uint8_t)bop;
    if (bop == BOOL_NONE)
        return tf__opcount(dc, pi, idx, idx);
    if (tf__opcount(dc, pi, idx + 1, idx + 1) || tf__psrc(dc, pi, &pi->ops[idx], &in->c))
        return -1;
    in->flags = pi->ops[idx].neg;
    return 0;
}

int tf__setp_operands(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in, int ty)
{
    const struct tf__pop *p = &pi->ops[0];
    if (p->kind != PK_REG)
        return tf__derr(dc, pi->line, "bad destination of '%s'", pi->opcode);
    if (tf__pdst(dc, pi, p->name, &in->d[0]))
        return -1;
    in->d[1] = TF__NONE;
    if (p->name2 && tf__pdst(dc, pi, p->name2, &in->d[1]))
        return -1;
    if (tf__src(dc, pi, &pi->ops[1], ty, &in->a) || tf__src(dc, pi, &pi->ops[2], ty, &in->b))
        return -1;
    return 1;
}

int tf__decode_cmp(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in, int ty)
{
    const char *b = pi->base;
    struct tf__mods md;
    static const int ok[] = {MOD_EQ, MOD_NE, MOD_LT, MOD_LE,  MOD_GT, MOD_GE,  MOD_LO,
                             MOD_LS, MOD_HI, MOD_HS, MOD_AND, MOD_OR, MOD_XOR, MOD_NONE};
    if (!strcmp(b, "setp")) {
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        int wi = tf__width_index(ty), ci = cmp_index(&md, tf__ty_is_signed(ty)),
            bop = tf__bool_op(&md);
        if (md.nt != 1 || wi < 0 || ci < 0 || bop < 0 || !tf__ty_is_int(ty))
            return tf__unsupported(dc, pi);
        in->fn = setp_tab[wi][ci];
        if (tf__bool_operand(dc, pi, in, bop, 3))
            return -1;
        return tf__setp_operands(dc, pi, in, ty);
    }
    if (!strcmp(b, "set")) {
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        if (md.nt != 2)
            return tf__unsupported(dc, pi);
        int dty = md.t[0], sty = md.t[1];
        int wi = tf__width_index(sty), ci = cmp_index(&md, tf__ty_is_signed(sty)),
            bop = tf__bool_op(&md);
        if (wi < 0 || ci < 0 || bop < 0 || !tf__ty_is_int(sty) ||
            (dty != TY_U32 && dty != TY_S32 && dty != TY_F32))
            return tf__unsupported(dc, pi);
        in->fn = set_tab[wi][ci];
        in->mask = dty == TY_F32 ? 0x3f800000u : 0xffffffffu;
        if (tf__bool_operand(dc, pi, in, bop, 3))
            return -1;
        if (tf__dst(dc, pi, &pi->ops[0], &in->d[0], NULL) ||
            tf__src(dc, pi, &pi->ops[1], sty, &in->a) || tf__src(dc, pi, &pi->ops[2], sty, &in->b))
            return -1;
        return 1;
    }
    return 0;
}

int tf__decode_mov(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in)
{
    struct tf__mods md;
    static const int none_ok[] = {MOD_NONE};
    if (tf__mods(dc, pi, none_ok, &md))
        return -1;
    if (md.nt != 1 || tf__opcount(dc, pi, 2, 2))
        return md.nt != 1 ? tf__unsupported(dc, pi) : -1;
    int ty = md.t[0];
    unsigned bits = tf__ty_bits(ty);
    const struct tf__pop *dop = &pi->ops[0], *sop = &pi->ops[1];
    if (ty == TY_PRED) {
        if (dop->kind != PK_REG || tf__pdst(dc, pi, dop->name, &in->d[0]))
            return dop->kind != PK_REG ? tf__derr(dc, pi->line, "bad operand of '%s'", pi->opcode)
                                       : -1;
        if (sop->kind == PK_IMM) {
            in->imm = sop->imm != 0;
            in->fn = pmov_imm;
            return 1;
        }
        if (tf__psrc(dc, pi, sop, &in->a))
            return -1;
        in->fn = sop->neg ? tf__op_pnot : pmov;
        return 1;
    }
    if (bits == 0 || bits > 64)
        return tf__unsupported(dc, pi);
    in->mask = tf__wmask(bits);
    if (sop->kind == PK_VEC) {
        if ((sop->n != 2 && sop->n != 4) || (bits / sop->n) < 8 || dop->kind == PK_VEC)
            return tf__derr(dc, pi->line, "bad vector operand of '%s'", pi->opcode);
        in->nvec = (uint8_t)sop->n;
        in->w1 = (uint8_t)(bits / sop->n);
        uint32_t *f[4] = {&in->a, &in->b, &in->c, &in->e};
        int ety = in->w1 == 32 ? TY_B32 : in->w1 == 16 ? TY_B16 : TY_B8;
        for (uint32_t i = 0; i < sop->n; i++)
            if (tf__src(dc, pi, &sop->elems[i], ety, f[i]))
                return -1;
        in->fn = mov_pack;
        return tf__dst(dc, pi, dop, &in->d[0], NULL) ? -1 : 1;
    }
    if (dop->kind == PK_VEC) {
        if ((dop->n != 2 && dop->n != 4) || (bits / dop->n) < 8)
            return tf__derr(dc, pi->line, "bad vector operand of '%s'", pi->opcode);
        in->nvec = (uint8_t)dop->n;
        in->w1 = (uint8_t)(bits / dop->n);
        for (uint32_t i = 0; i < dop->n; i++)
            if (tf__dst(dc, pi, &dop->elems[i], &in->d[i], NULL))
                return -1;
        in->fn = mov_unpack;
        return tf__src(dc, pi, sop, ty, &in->a) ? -1 : 1;
    }
    if (tf__dst(dc, pi, dop, &in->d[0], NULL))
        return -1;
    if (sop->kind == PK_REG && sop->imm == 0 && !sop->name2) {
        int dyn = tf__dynamic_special(sop->name);
        if (dyn >= 0) {
            in->sub = (uint8_t)dyn;
            in->fn = mov_clock;
            return 1;
        }
    }
    in->fn = mov;
    return tf__src(dc, pi, sop, ty, &in->a) ? -1 : 1;
}

int tf__decode_sel(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in, int ty)
{
    struct tf__mods md;
    static const int none_ok[] = {MOD_NONE};
    const char *b = pi->base;
    if (!strcmp(b, "selp")) {
        if (tf__mods(dc, pi, none_ok, &md))
            return -1;
        unsigned bits = tf__ty_bits(ty);
        if (md.nt != 1 || bits < 16 || bits > 64 || ty == TY_PRED || tf__opcount(dc, pi, 4, 4))
            return md.nt != 1 || bits < 16 || bits > 64 ? tf__unsupported(dc, pi) : -1;
        in->mask = tf__wmask(bits);
        in->fn = selp;
        if (tf__psrc(dc, pi, &pi->ops[3], &in->c))
            return -1;
        if (pi->ops[3].neg)
            return tf__derr(dc, pi->line, "negated predicate operand in '%s'", pi->opcode);
        struct tf__pinsn tmp = *pi;
        tmp.nops = 3;
        return tf__int_operands(dc, &tmp, in, 2, (const int[]){ty, ty});
    }
    if (!strcmp(b, "slct")) {
        static const int ok[] = {MOD_FTZ, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        if (md.nt != 2 || (md.t[1] != TY_S32 && md.t[1] != TY_F32))
            return tf__unsupported(dc, pi);
        unsigned bits = tf__ty_bits(md.t[0]);
        if (bits < 16 || bits > 64)
            return tf__unsupported(dc, pi);
        in->mask = tf__wmask(bits);
        in->fn = md.t[1] == TY_S32 ? slct_s32 : slct_f32;
        int tys[3] = {md.t[0], md.t[0], md.t[1]};
        return tf__int_operands(dc, pi, in, 3, tys);
    }
    return 0;
}
