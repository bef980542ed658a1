/* SPDX-License-Identifier: Apache-2.0
 *
 * Warp-level instructions: shfl.sync (up/down/bfly/idx with clamp and segment mask, as the
 * PTX ISA pseudo-code), vote.sync (all/any/uni/ballot), activemask, match.sync (any/all),
 * redux.sync and elect.sync. They see exactly the lanes that execute them (the active mask
 * after divergence, with the guard applied); the membermask is taken from the first of them.
 */
#include "sim/ptx/internal.h"

enum { SH_UP, SH_DOWN, SH_BFLY, SH_IDX };

#define SHFL(name, MODE)                                                                           \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        uint64_t src[TF__WARP];                                                                    \
        memcpy(src, TF__R(in->a), sizeof(src));                                                    \
        const uint64_t *pb = TF__R(in->b), *pc = TF__R(in->c);                                     \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        uint32_t pbits = 0;                                                                        \
        TF__FOR_LANES(m, {                                                                         \
            int bval = (int)(pb[l] & 31), cval = (int)(pc[l] & 31),                                \
                seg = (int)((pc[l] >> 8) & 31);                                                    \
            int maxl = (l & seg) | (cval & ~seg), minl = l & seg, j, pv;                           \
            (void)minl;                                                                            \
            switch (MODE) {                                                                        \
            case SH_UP:                                                                            \
                j = l - bval;                                                                      \
                pv = j >= maxl;                                                                    \
                break;                                                                             \
            case SH_DOWN:                                                                          \
                j = l + bval;                                                                      \
                pv = j <= maxl;                                                                    \
                break;                                                                             \
            case SH_BFLY:                                                                          \
                j = l ^ bval;                                                                      \
                pv = j <= maxl;                                                                    \
                break;                                                                             \
            default:                                                                               \
                j = minl | (bval & ~seg);                                                          \
                pv = j <= maxl;                                                                    \
                break;                                                                             \
            }                                                                                      \
            if (!pv)                                                                               \
                j = l;                                                                             \
            d[l] = src[j] & 0xffffffffu;                                                           \
            pbits |= (uint32_t)pv << l;                                                            \
        });                                                                                        \
        if (in->d[1] != TF__NONE)                                                                  \
            w->p[in->d[1]] = (w->p[in->d[1]] & ~m) | (pbits & m);                                  \
        return TF__GO;                                                                             \
    }
/* clang-format off */
SHFL(shfl_up, SH_UP)
SHFL(shfl_down, SH_DOWN)
SHFL(shfl_bfly, SH_BFLY)
SHFL(shfl_idx, SH_IDX)
/* clang-format on */

static inline uint32_t membermask(struct tf__warp *w, const struct tf__insn *in, uint32_t m)
{
    if (in->e == TF__NONE)
        return TF__FULL;
    return (uint32_t)w->r[in->e + (uint32_t)__builtin_ctz(m)];
}

static inline uint32_t pred_src(struct tf__warp *w, const struct tf__insn *in)
{
    uint32_t p = w->p[in->a];
    return in->flags ? ~p : p;
}

/* vote: sub 0 all, 1 any, 2 uni (predicate results), 3 ballot (b32 result) */
TF__OP(op_vote)
{
    uint32_t grp = m & membermask(w, in, m);
    uint32_t p = pred_src(w, in) & grp;
    if (in->sub == 3) {
        uint64_t *d = TF__R(in->d[0]);
        TF__FOR_LANES(m, d[l] = p);
        return TF__GO;
    }
    int r = in->sub == 0 ? p == grp : in->sub == 1 ? p != 0 : (p == 0 || p == grp);
    w->p[in->d[0]] = (w->p[in->d[0]] & ~m) | (r ? m : 0);
    return TF__GO;
}

TF__OP(op_activemask)
{
    uint64_t *d = TF__R(in->d[0]);
    uint32_t act = w->active;
    TF__FOR_LANES(m, d[l] = act);
    return TF__GO;
}

/* match.any / match.all: sub 0 any, 1 all; mask = value width mask */
TF__OP(op_match)
{
    uint32_t grp = m & membermask(w, in, m);
    const uint64_t *pa = TF__R(in->a);
    uint64_t *d = TF__R(in->d[0]);
    uint64_t vm = in->mask;
    if (in->sub == 0) {
        uint32_t res[TF__WARP];
        TF__FOR_LANES(m, {
            uint32_t r = 0;
            for (uint32_t g = grp; g; g &= g - 1) {
                int k = __builtin_ctz(g);
                if (((pa[k] ^ pa[l]) & vm) == 0)
                    r |= 1u << k;
            }
            res[l] = r;
        });
        TF__FOR_LANES(m, d[l] = res[l]);
        return TF__GO;
    }
    int all = 1;
    uint64_t v0 = pa[__builtin_ctz(grp ? grp : m)] & vm;
    for (uint32_t g = grp; g; g &= g - 1)
        if ((pa[__builtin_ctz(g)] & vm) != v0)
            all = 0;
    TF__FOR_LANES(m, d[l] = all ? grp : 0);
    if (in->d[1] != TF__NONE)
        w->p[in->d[1]] = (w->p[in->d[1]] & ~m) | (all ? m : 0);
    return TF__GO;
}

/* redux.sync: sub 0 add, 1 min, 2 max, 3 and, 4 or, 5 xor; flags 1 = signed */
TF__OP(op_redux)
{
    uint32_t grp = m & membermask(w, in, m);
    const uint64_t *pa = TF__R(in->a);
    uint64_t *d = TF__R(in->d[0]);
    int sg = in->flags & 1;
    uint32_t acc = 0;
    int first = 1;
    for (uint32_t g = grp; g; g &= g - 1) {
        uint32_t v = (uint32_t)pa[__builtin_ctz(g)];
        if (first) {
            acc = v;
            first = 0;
            continue;
        }
        switch (in->sub) {
        case 0:
            acc += v;
            break;
        case 1:
            acc = sg ? ((int32_t)v < (int32_t)acc ? v : acc) : (v < acc ? v : acc);
            break;
        case 2:
            acc = sg ? ((int32_t)v > (int32_t)acc ? v : acc) : (v > acc ? v : acc);
            break;
        case 3:
            acc &= v;
            break;
        case 4:
            acc |= v;
            break;
        default:
            acc ^= v;
            break;
        }
    }
    TF__FOR_LANES(m, d[l] = acc);
    return TF__GO;
}

TF__OP(op_elect)
{
    uint32_t grp = m & membermask(w, in, m);
    int leader = grp ? __builtin_ctz(grp) : __builtin_ctz(m);
    uint64_t *d = TF__R(in->d[0]);
    TF__FOR_LANES(m, d[l] = (uint32_t)leader);
    if (in->d[1] != TF__NONE)
        w->p[in->d[1]] = (w->p[in->d[1]] & ~m) | ((1u << leader) & m);
    return TF__GO;
}

static int member_operand(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in,
                          uint32_t idx, int sync)
{
    in->e = TF__NONE;
    if (!sync)
        return tf__opcount(dc, pi, idx, idx);
    if (tf__opcount(dc, pi, idx + 1, idx + 1))
        return -1;
    return tf__src(dc, pi, &pi->ops[idx], TY_B32, &in->e);
}

int tf__decode_warp(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in)
{
    const char *b = pi->base;
    struct tf__mods md;
    if (!strcmp(b, "shfl")) {
        static const int ok[] = {MOD_SYNC, MOD_UP, MOD_DOWN, MOD_BFLY, MOD_IDX, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        int up = tf__has(&md, MOD_UP), dn = tf__has(&md, MOD_DOWN), bf = tf__has(&md, MOD_BFLY),
            ix = tf__has(&md, MOD_IDX);
        if (md.nt != 1 || md.t[0] != TY_B32 || up + dn + bf + ix != 1)
            return tf__unsupported(dc, pi);
        in->fn = up ? shfl_up : dn ? shfl_down : bf ? shfl_bfly : shfl_idx;
        if (member_operand(dc, pi, in, 4, tf__has(&md, MOD_SYNC)))
            return -1;
        const struct tf__pop *dop = &pi->ops[0];
        in->d[1] = TF__NONE;
        if (tf__dst(dc, pi, &(struct tf__pop){.kind = dop->kind, .name = dop->name}, &in->d[0],
                    NULL) ||
            (dop->name2 && tf__pdst(dc, pi, dop->name2, &in->d[1])) ||
            tf__src(dc, pi, &pi->ops[1], TY_B32, &in->a) ||
            tf__src(dc, pi, &pi->ops[2], TY_B32, &in->b) ||
            tf__src(dc, pi, &pi->ops[3], TY_B32, &in->c))
            return -1;
        return 1;
    }
    if (!strcmp(b, "vote")) {
        static const int ok[] = {MOD_SYNC, MOD_ALL, MOD_ANY, MOD_UNI, MOD_BALLOT, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        int al = tf__has(&md, MOD_ALL), an = tf__has(&md, MOD_ANY), un = tf__has(&md, MOD_UNI),
            ba = tf__has(&md, MOD_BALLOT);
        if (md.nt != 1 || al + an + un + ba != 1 || (ba && md.t[0] != TY_B32) ||
            (!ba && md.t[0] != TY_PRED))
            return tf__unsupported(dc, pi);
        in->sub = (uint8_t)(al ? 0 : an ? 1 : un ? 2 : 3);
        if (member_operand(dc, pi, in, 2, tf__has(&md, MOD_SYNC)))
            return -1;
        if (tf__psrc(dc, pi, &pi->ops[1], &in->a))
            return -1;
        in->flags = pi->ops[1].neg;
        in->fn = op_vote;
        if (ba)
            return tf__dst(dc, pi, &pi->ops[0], &in->d[0], NULL) ? -1 : 1;
        if (pi->ops[0].kind != PK_REG)
            return tf__derr(dc, pi->line, "bad destination of '%s'", pi->opcode);
        return tf__pdst(dc, pi, pi->ops[0].name, &in->d[0]) ? -1 : 1;
    }
    if (!strcmp(b, "activemask")) {
        static const int ok[] = {MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        if (md.nt != 1 || md.t[0] != TY_B32 || tf__opcount(dc, pi, 1, 1))
            return md.nt != 1 || md.t[0] != TY_B32 ? tf__unsupported(dc, pi) : -1;
        in->fn = op_activemask;
        return tf__dst(dc, pi, &pi->ops[0], &in->d[0], NULL) ? -1 : 1;
    }
    if (!strcmp(b, "match")) {
        static const int ok[] = {MOD_SYNC, MOD_ANY, MOD_ALL, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        int an = tf__has(&md, MOD_ANY), al = tf__has(&md, MOD_ALL);
        if (md.nt != 1 || (md.t[0] != TY_B32 && md.t[0] != TY_B64) || an + al != 1 ||
            !tf__has(&md, MOD_SYNC))
            return tf__unsupported(dc, pi);
        in->sub = (uint8_t)al;
        in->mask = tf__wmask(tf__ty_bits(md.t[0]));
        if (member_operand(dc, pi, in, 2, 1))
            return -1;
        const struct tf__pop *dop = &pi->ops[0];
        in->d[1] = TF__NONE;
        if (dop->name2 && (an || tf__pdst(dc, pi, dop->name2, &in->d[1])))
            return an ? tf__unsupported(dc, pi) : -1;
        if (tf__dst(dc, pi, &(struct tf__pop){.kind = dop->kind, .name = dop->name}, &in->d[0],
                    NULL) ||
            tf__src(dc, pi, &pi->ops[1], md.t[0], &in->a))
            return -1;
        in->fn = op_match;
        return 1;
    }
    if (!strcmp(b, "redux")) {
        static const int ok[] = {MOD_SYNC, MOD_ADD, MOD_MIN, MOD_MAX,
                                 MOD_AND,  MOD_OR,  MOD_XOR, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        static const int ops[] = {MOD_ADD, MOD_MIN, MOD_MAX, MOD_AND, MOD_OR, MOD_XOR};
        int op = -1, n = 0;
        for (int i = 0; i < 6; i++)
            if (tf__has(&md, ops[i])) {
                op = i;
                n++;
            }
        int ty = md.nt == 1 ? md.t[0] : TY_NONE;
        int arith_ok = ty == TY_U32 || ty == TY_S32;
        if (n != 1 || !tf__has(&md, MOD_SYNC) || (op < 3 && !arith_ok) || (op >= 3 && ty != TY_B32))
            return tf__unsupported(dc, pi);
        in->sub = (uint8_t)op;
        in->flags = ty == TY_S32;
        if (member_operand(dc, pi, in, 2, 1) || tf__dst(dc, pi, &pi->ops[0], &in->d[0], NULL) ||
            tf__src(dc, pi, &pi->ops[1], ty, &in->a))
            return -1;
        in->fn = op_redux;
        return 1;
    }
    if (!strcmp(b, "elect")) {
        static const int ok[] = {MOD_SYNC, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        if (md.nt || !tf__has(&md, MOD_SYNC))
            return tf__unsupported(dc, pi);
        if (member_operand(dc, pi, in, 1, 1))
            return -1;
        const struct tf__pop *dop = &pi->ops[0];
        in->d[1] = TF__NONE;
        if (tf__dst(dc, pi, &(struct tf__pop){.kind = dop->kind, .name = dop->name}, &in->d[0],
                    NULL) ||
            (dop->name2 && tf__pdst(dc, pi, dop->name2, &in->d[1])))
            return -1;
        in->fn = op_elect;
        return 1;
    }
    return 0;
}
