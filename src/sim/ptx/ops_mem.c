/* SPDX-License-Identifier: Apache-2.0
 *
 * Memory instructions: ld/ldu/st (scalar, .v2, .v4) in the global, const, shared, local,
 * param (kernel buffer and per-lane call frames) and generic spaces; atom/red on global,
 * shared and generic addresses; cvta to and from generic; isspacep; prefetch (no-op). Every
 * access is bounds- and alignment-checked: global/const/generic addresses against the
 * launch's memview (exec.c keeps a last-hit cache), shared and local offsets against their
 * windows. Cache operators, memory-order and scope qualifiers are accepted and ignored: a
 * launch runs on one host thread, and global atomics use host atomics.
 */
#include "sim/ptx/internal.h"

/* ---- address -> host pointer, per space (P gets the pointer; a fault returns) ---- */

#define ADDR_GLOBAL(WR)                                                                            \
    uint8_t *p = tf__gmem(w, in, l, a, total, WR);                                                 \
    if (!p)                                                                                        \
        return TF__STOP_FAULT;
#define ADDR_GENERIC(WR)                                                                           \
    uint8_t *p = tf__generic(w, in, l, a, total, WR);                                              \
    if (!p)                                                                                        \
        return TF__STOP_FAULT;
#define ADDR_SHARED(WR)                                                                            \
    if (a & (total - 1))                                                                           \
        return tf__fault(w, in, l, TF_PTX_MISALIGNED_ADDRESS, a, ".shared");                       \
    if (a >= run->shared_size || run->shared_size - a < total)                                     \
        return tf__fault(w, in, l, TF_PTX_ILLEGAL_ADDRESS, a, ".shared window");                   \
    uint8_t *p = run->shared + a;
#define ADDR_LOCAL(WR)                                                                             \
    if (a & (total - 1))                                                                           \
        return tf__fault(w, in, l, TF_PTX_MISALIGNED_ADDRESS, a, ".local");                        \
    if (a >= run->local_stride || run->local_stride - a < total)                                   \
        return tf__fault(w, in, l, TF_PTX_ILLEGAL_ADDRESS, a, ".local window");                    \
    uint8_t *p = run->local + (uint64_t)(w->tid0 + (uint32_t)l) * run->local_stride + a;
#define ADDR_KPARAM(WR)                                                                            \
    if (a & (total - 1))                                                                           \
        return tf__fault(w, in, l, TF_PTX_MISALIGNED_ADDRESS, a, ".param");                        \
    if (a >= run->params_size || run->params_size - a < total)                                     \
        return tf__fault(w, in, l, TF_PTX_ILLEGAL_ADDRESS, a, ".param window");                    \
    const uint8_t *p = run->params + a;
#define ADDR_FPARAM(WR) uint8_t *p = w->prm + (size_t)l * w->prm_stride + (uint64_t)in->imm;

/* fields: esize, nvec, flags 1 = sign-extend, mask = destination register mask */
#define LD(name, ADDR, ES, BASE)                                                                   \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        struct tf__run *run = w->run;                                                              \
        (void)run;                                                                                 \
        const uint64_t *pa = TF__R(in->a);                                                         \
        (void)pa;                                                                                  \
        unsigned nv = in->nvec;                                                                    \
        uint32_t total = ES * nv;                                                                  \
        (void)total;                                                                               \
        int sx = in->flags & 1;                                                                    \
        uint64_t mk = in->mask;                                                                    \
        TF__FOR_LANES(m, {                                                                         \
            uint64_t a = (BASE) ? pa[l] + (uint64_t)in->imm : 0;                                   \
            (void)a;                                                                               \
            ADDR(0)                                                                                \
            for (unsigned k = 0; k < nv; k++) {                                                    \
                uint64_t v = 0;                                                                    \
                memcpy(&v, p + k * ES, ES);                                                        \
                if (sx)                                                                            \
                    v = tf__sext(v, ES * 8);                                                       \
                w->r[in->d[k] + (uint32_t)l] = v & mk;                                             \
            }                                                                                      \
        });                                                                                        \
        return TF__GO;                                                                             \
    }
/* st: sources in d[] (the values), address base in a */
#define ST(name, ADDR, ES, BASE)                                                                   \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        struct tf__run *run = w->run;                                                              \
        (void)run;                                                                                 \
        const uint64_t *pa = TF__R(in->a);                                                         \
        (void)pa;                                                                                  \
        unsigned nv = in->nvec;                                                                    \
        uint32_t total = ES * nv;                                                                  \
        (void)total;                                                                               \
        TF__FOR_LANES(m, {                                                                         \
            uint64_t a = (BASE) ? pa[l] + (uint64_t)in->imm : 0;                                   \
            (void)a;                                                                               \
            ADDR(1)                                                                                \
            for (unsigned k = 0; k < nv; k++) {                                                    \
                uint64_t v = w->r[in->d[k] + (uint32_t)l];                                         \
                memcpy(p + k * ES, &v, ES);                                                        \
            }                                                                                      \
        });                                                                                        \
        return TF__GO;                                                                             \
    }
#define LDST_SIZES(sp, ADDR, BASE)                                                                 \
    LD(ld_##sp##_1, ADDR, 1, BASE)                                                                 \
    LD(ld_##sp##_2, ADDR, 2, BASE)                                                                 \
    LD(ld_##sp##_4, ADDR, 4, BASE)                                                                 \
    LD(ld_##sp##_8, ADDR, 8, BASE)                                                                 \
    ST(st_##sp##_1, ADDR, 1, BASE)                                                                 \
    ST(st_##sp##_2, ADDR, 2, BASE)                                                                 \
    ST(st_##sp##_4, ADDR, 4, BASE)                                                                 \
    ST(st_##sp##_8, ADDR, 8, BASE)
/* clang-format off */
LDST_SIZES(global, ADDR_GLOBAL, 1)
LDST_SIZES(generic, ADDR_GENERIC, 1)
LDST_SIZES(shared, ADDR_SHARED, 1)
LDST_SIZES(local, ADDR_LOCAL, 1)
LDST_SIZES(fparam, ADDR_FPARAM, 0)
LD(ld_kparam_1, ADDR_KPARAM, 1, 1)
LD(ld_kparam_2, ADDR_KPARAM, 2, 1)
LD(ld_kparam_4, ADDR_KPARAM, 4, 1)
LD(ld_kparam_8, ADDR_KPARAM, 8, 1)
/* clang-format on */

enum { SPI_GLOBAL, SPI_GENERIC, SPI_SHARED, SPI_LOCAL, SPI_FPARAM, SPI_KPARAM };
#define SZ_ROW(pfx, sp)                                                                            \
    {                                                                                              \
        pfx##sp##_1, pfx##sp##_2, pfx##sp##_4, pfx##sp##_8                                         \
    }
static const tf__op_fn ld_tab[6][4] = {SZ_ROW(ld_, global), SZ_ROW(ld_, generic),
                                       SZ_ROW(ld_, shared), SZ_ROW(ld_, local),
                                       SZ_ROW(ld_, fparam), SZ_ROW(ld_, kparam)};
static const tf__op_fn st_tab[5][4] = {SZ_ROW(st_, global), SZ_ROW(st_, generic),
                                       SZ_ROW(st_, shared), SZ_ROW(st_, local),
                                       SZ_ROW(st_, fparam)};

/* ---- atomics ---- */

typedef uint64_t (*rmw_fn)(void *p, uint64_t b, uint64_t c);
struct rmw {
    rmw_fn fn;
};

#define RMW_INT(name, T, op)                                                                       \
    static uint64_t name(void *p, uint64_t b, uint64_t c)                                          \
    {                                                                                              \
        (void)c;                                                                                   \
        return (uint64_t)op((T *)p, (T)b, __ATOMIC_RELAXED);                                       \
    }
/* clang-format off */
RMW_INT(add_u32, uint32_t, __atomic_fetch_add)
RMW_INT(add_u64, uint64_t, __atomic_fetch_add)
RMW_INT(and_b32, uint32_t, __atomic_fetch_and)
RMW_INT(and_b64, uint64_t, __atomic_fetch_and)
RMW_INT(or_b32, uint32_t, __atomic_fetch_or)
RMW_INT(or_b64, uint64_t, __atomic_fetch_or)
RMW_INT(xor_b32, uint32_t, __atomic_fetch_xor)
RMW_INT(xor_b64, uint64_t, __atomic_fetch_xor)
RMW_INT(exch_b32, uint32_t, __atomic_exchange_n)
RMW_INT(exch_b64, uint64_t, __atomic_exchange_n)
/* clang-format on */

/* read-modify-write through compare-and-swap for the rest */
#define RMW_CAS(name, T, newval)                                                                   \
    static uint64_t name(void *p, uint64_t b_, uint64_t c_)                                        \
    {                                                                                              \
        T *q = (T *)p;                                                                             \
        T b = (T)b_, c = (T)c_;                                                                    \
        (void)c;                                                                                   \
        T old = __atomic_load_n(q, __ATOMIC_RELAXED);                                              \
        for (;;) {                                                                                 \
            T nv = (newval);                                                                       \
            if (__atomic_compare_exchange_n(q, &old, nv, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))   \
                return (uint64_t)old;                                                              \
        }                                                                                          \
    }
/* clang-format off */
RMW_CAS(min_u32, uint32_t, old < b ? old : b)
RMW_CAS(max_u32, uint32_t, old > b ? old : b)
RMW_CAS(min_s32, uint32_t, (int32_t)old < (int32_t)b ? old : b)
RMW_CAS(max_s32, uint32_t, (int32_t)old > (int32_t)b ? old : b)
RMW_CAS(min_u64, uint64_t, old < b ? old : b)
RMW_CAS(max_u64, uint64_t, old > b ? old : b)
RMW_CAS(min_s64, uint64_t, (int64_t)old < (int64_t)b ? old : b)
RMW_CAS(max_s64, uint64_t, (int64_t)old > (int64_t)b ? old : b)
RMW_CAS(inc_u32, uint32_t, old >= b ? 0 : old + 1)
RMW_CAS(dec_u32, uint32_t, (old == 0 || old > b) ? b : old - 1)
RMW_CAS(addf_f32, uint32_t, (uint32_t)tf__uf32(tf__f32(old) + tf__f32(b)))
RMW_CAS(addf_f64, uint64_t, tf__uf64(tf__f64(old) + tf__f64(b)))
/* clang-format on */

static uint64_t cas_b32(void *p, uint64_t b, uint64_t c)
{
    uint32_t exp = (uint32_t)b;
    __atomic_compare_exchange_n((uint32_t *)p, &exp, (uint32_t)c, 0, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
    return exp;
}
static uint64_t cas_b64(void *p, uint64_t b, uint64_t c)
{
    uint64_t exp = b;
    __atomic_compare_exchange_n((uint64_t *)p, &exp, c, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return exp;
}

#define DESC(n) static const struct rmw d_##n = {n};
/* clang-format off */
DESC(add_u32) DESC(add_u64) DESC(and_b32) DESC(and_b64) DESC(or_b32) DESC(or_b64) DESC(xor_b32)
DESC(xor_b64) DESC(exch_b32) DESC(exch_b64) DESC(min_u32) DESC(max_u32) DESC(min_s32)
DESC(max_s32) DESC(min_u64) DESC(max_u64) DESC(min_s64) DESC(max_s64) DESC(inc_u32)
DESC(dec_u32) DESC(addf_f32) DESC(addf_f64) DESC(cas_b32) DESC(cas_b64)
/* clang-format on */

/* fields: esize, aux = struct rmw, d[0] (TF__NONE for red), a address, b, c operands */
#define ATOM(name, ADDR)                                                                           \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        struct tf__run *run = w->run;                                                              \
        (void)run;                                                                                 \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);                 \
        rmw_fn fn = ((const struct rmw *)in->aux)->fn;                                             \
        uint32_t total = in->esize;                                                                \
        uint64_t mk = in->mask;                                                                    \
        for (uint32_t mm = m; mm; mm &= mm - 1) {                                                  \
            int l = __builtin_ctz(mm);                                                             \
            uint64_t a = pa[l] + (uint64_t)in->imm;                                                \
            ADDR(1)                                                                                \
            uint64_t old = fn(p, pb[l], pc[l]);                                                    \
            if (in->d[0] != TF__NONE)                                                              \
                w->r[in->d[0] + (uint32_t)l] = old & mk;                                           \
        }                                                                                          \
        return TF__GO;                                                                             \
    }
    /* clang-format off */
ATOM(atom_global, ADDR_GLOBAL)
ATOM(atom_shared, ADDR_SHARED)
ATOM(atom_generic, ADDR_GENERIC)
    /* clang-format on */

    /* ---- cvta / isspacep ---- */

    TF__OP(cvta_ident)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    uint64_t mk = in->mask;
    TF__FOR_LANES(m, d[l] = pa[l] & mk);
    return TF__GO;
}
TF__OP(cvta_shared)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    uint64_t base = (uint64_t)(uintptr_t)w->run->shared;
    uint64_t mk = in->mask;
    TF__FOR_LANES(m, d[l] = (base + (pa[l] & 0xffffffffu)) & mk);
    return TF__GO;
}
TF__OP(cvta_to_shared)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    uint64_t base = (uint64_t)(uintptr_t)w->run->shared;
    uint64_t mk = in->mask;
    TF__FOR_LANES(m, d[l] = (pa[l] - base) & mk);
    return TF__GO;
}
TF__OP(cvta_local)
{
    struct tf__run *run = w->run;
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    uint64_t mk = in->mask;
    TF__FOR_LANES(m, {
        uint64_t base =
            (uint64_t)(uintptr_t)run->local + (uint64_t)(w->tid0 + (uint32_t)l) * run->local_stride;
        d[l] = (base + (pa[l] & 0xffffffffu)) & mk;
    });
    return TF__GO;
}
TF__OP(cvta_to_local)
{
    struct tf__run *run = w->run;
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    uint64_t mk = in->mask;
    TF__FOR_LANES(m, {
        uint64_t base =
            (uint64_t)(uintptr_t)run->local + (uint64_t)(w->tid0 + (uint32_t)l) * run->local_stride;
        d[l] = (pa[l] - base) & mk;
    });
    return TF__GO;
}
TF__OP(cvta_param)
{
    uint64_t *d = TF__R(in->d[0]);
    const uint64_t *pa = TF__R(in->a);
    uint64_t base = (uint64_t)(uintptr_t)w->run->params;
    uint64_t mk = in->mask;
    TF__FOR_LANES(m, d[l] = (base + pa[l]) & mk);
    return TF__GO;
}

/* isspacep.space p, a. sub: 0 global, 1 shared, 2 local, 3 const, 4 param */
TF__OP(isspacep)
{
    struct tf__run *run = w->run;
    const uint64_t *pa = TF__R(in->a);
    uint32_t bits = 0;
    TF__FOR_LANES(m, {
        uint64_t a = pa[l];
        int sh = a - (uint64_t)(uintptr_t)run->shared < run->shared_size;
        int lo = a - (uint64_t)(uintptr_t)run->local < run->local_total;
        int pr = run->params && a - (uint64_t)(uintptr_t)run->params < run->params_size;
        int ro = 0;
        for (size_t i = 0; i < run->nranges; i++)
            if (a - run->ranges[i].base < run->ranges[i].size && run->ranges[i].read_only)
                ro = 1;
        int r = in->sub == 0   ? !(sh || lo || pr)
                : in->sub == 1 ? sh
                : in->sub == 2 ? lo
                : in->sub == 3 ? ro
                               : pr;
        bits |= (uint32_t)r << l;
    });
    w->p[in->d[0]] = (w->p[in->d[0]] & ~m) | (bits & m);
    return TF__GO;
}

TF__OP(nop)
{
    (void)w;
    (void)in;
    (void)m;
    return TF__GO;
}

/* ---- decoding ---- */

static int space_mod(const struct tf__mods *md, int *space)
{
    static const int sp[] = {MOD_GLOBAL, MOD_SHARED, MOD_LOCAL, MOD_PARAM, MOD_CONST};
    int n = 0;
    *space = MOD_NONE;
    for (int i = 0; i < 5; i++)
        if (tf__has(md, sp[i])) {
            *space = sp[i];
            n++;
        }
    return n > 1 ? -1 : 0;
}

static int esize_idx(unsigned bytes)
{
    return bytes == 1 ? 0 : bytes == 2 ? 1 : bytes == 4 ? 2 : bytes == 8 ? 3 : -1;
}

static int decode_ldst(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in,
                       int is_ld)
{
    static const int ok[] = {MOD_GLOBAL,      MOD_SHARED,     MOD_LOCAL, MOD_PARAM,
                             MOD_CONST,       MOD_V2,         MOD_V4,    MOD_NC,
                             MOD_IGNORED_MEM, MOD_CACHE_HINT, MOD_NONE};
    struct tf__mods md;
    if (tf__mods(dc, pi, ok, &md))
        return -1;
    int space;
    if (md.nt != 1 || space_mod(&md, &space))
        return tf__unsupported(dc, pi);
    int ty = md.t[0];
    unsigned bits = tf__ty_bits(ty);
    int ei = esize_idx(bits / 8);
    if (ty == TY_PRED || ei < 0 || (!is_ld && tf__has(&md, MOD_NC)) ||
        (tf__has(&md, MOD_NC) && space != MOD_GLOBAL))
        return tf__unsupported(dc, pi);
    if (!strcmp(pi->base, "ldu") && space != MOD_GLOBAL && space != MOD_NONE)
        return tf__unsupported(dc, pi);
    unsigned nvec = tf__has(&md, MOD_V4) ? 4 : tf__has(&md, MOD_V2) ? 2 : 1;
    if (tf__has(&md, MOD_V4) && tf__has(&md, MOD_V2))
        return tf__unsupported(dc, pi);
    uint32_t nops = tf__has(&md, MOD_CACHE_HINT) ? 3 : 2;
    if (tf__opcount(dc, pi, nops, nops))
        return -1;
    const struct tf__pop *vop = is_ld ? &pi->ops[0] : &pi->ops[1];
    const struct tf__pop *aop = is_ld ? &pi->ops[1] : &pi->ops[0];
    if (nvec > 1 && (vop->kind != PK_VEC || vop->n != nvec))
        return tf__derr(dc, pi->line, "'%s' needs a vector of %u operands", pi->opcode, nvec);
    if (nvec == 1 && vop->kind == PK_VEC)
        return tf__derr(dc, pi->line, "vector operand without .v2/.v4 in '%s'", pi->opcode);
    if (tf__has(&md, MOD_CACHE_HINT)) {
        uint32_t pol;
        if (tf__src(dc, pi, &pi->ops[2], TY_B64, &pol))
            return -1;
    }
    uint32_t limit = 0;
    if (tf__addr(dc, pi, aop, &space, &in->a, &in->imm, &limit))
        return -1;
    in->esize = (uint8_t)(bits / 8);
    in->nvec = (uint8_t)nvec;
    uint32_t total = in->esize * nvec;
    int si;
    switch (space) {
    case MOD_GLOBAL:
    case MOD_CONST:
        si = SPI_GLOBAL;
        break;
    case MOD_SHARED:
        si = SPI_SHARED;
        break;
    case MOD_LOCAL:
        si = SPI_LOCAL;
        break;
    case MOD_PARAM:
        si = SPI_KPARAM;
        break;
    case TF__SP_FPARAM:
        si = SPI_FPARAM;
        break;
    default:
        si = SPI_GENERIC;
        break;
    }
    if (si == SPI_FPARAM && (uint64_t)in->imm + total > limit)
        return tf__derr(dc, pi->line, "access past the end of the parameter in '%s'", pi->opcode);
    if (si == SPI_KPARAM && !is_ld)
        return tf__derr(dc, pi->line, "unsupported: store to a kernel parameter");
    if (space == MOD_CONST && !is_ld)
        return tf__derr(dc, pi->line, "store to .const space in '%s'", pi->opcode);
    in->fn = is_ld ? ld_tab[si][ei] : st_tab[si][ei];
    in->flags = (uint8_t)(is_ld && tf__ty_is_signed(ty));
    for (unsigned k = 0; k < nvec; k++) {
        const struct tf__pop *e = nvec > 1 ? &vop->elems[k] : vop;
        if (is_ld) {
            unsigned rb;
            if (tf__dst(dc, pi, e, &in->d[k], &rb))
                return -1;
            unsigned mb = rb < bits ? bits : rb;
            uint64_t mk = tf__wmask(mb > 64 ? 64 : mb);
            if (k == 0 || mk > in->mask)
                in->mask = mk;
        } else {
            if (tf__src(dc, pi, e, ty, &in->d[k]))
                return -1;
        }
    }
    return 1;
}

static int decode_atom(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in,
                       int is_red)
{
    static const int ok[] = {MOD_GLOBAL, MOD_SHARED, MOD_IGNORED_MEM, MOD_ADD, MOD_MIN,
                             MOD_MAX,    MOD_EXCH,   MOD_CAS,         MOD_AND, MOD_OR,
                             MOD_XOR,    MOD_INC,    MOD_DEC,         MOD_NONE};
    struct tf__mods md;
    if (tf__mods(dc, pi, ok, &md))
        return -1;
    int space;
    if (md.nt != 1 || space_mod(&md, &space))
        return tf__unsupported(dc, pi);
    static const int ops[] = {MOD_ADD, MOD_MIN, MOD_MAX, MOD_EXCH, MOD_CAS,
                              MOD_AND, MOD_OR,  MOD_XOR, MOD_INC,  MOD_DEC};
    int op = MOD_NONE, n = 0;
    for (int i = 0; i < 10; i++)
        if (tf__has(&md, ops[i])) {
            op = ops[i];
            n++;
        }
    int ty = md.t[0];
    if (n != 1 || (is_red && (op == MOD_EXCH || op == MOD_CAS)))
        return tf__unsupported(dc, pi);
    const struct rmw *r = NULL;
    int w64 = tf__ty_bits(ty) == 64, w32 = tf__ty_bits(ty) == 32;
    switch (op) {
    case MOD_ADD:
        r = ty == TY_U32 || ty == TY_S32 ? &d_add_u32
            : ty == TY_U64               ? &d_add_u64
            : ty == TY_F32               ? &d_addf_f32
            : ty == TY_F64               ? &d_addf_f64
                                         : NULL;
        break;
    case MOD_MIN:
    case MOD_MAX: {
        int mx = op == MOD_MAX;
        r = ty == TY_U32   ? (mx ? &d_max_u32 : &d_min_u32)
            : ty == TY_S32 ? (mx ? &d_max_s32 : &d_min_s32)
            : ty == TY_U64 ? (mx ? &d_max_u64 : &d_min_u64)
            : ty == TY_S64 ? (mx ? &d_max_s64 : &d_min_s64)
                           : NULL;
        break;
    }
    case MOD_EXCH:
        r = (ty == TY_B32 || ty == TY_U32 || ty == TY_S32) ? &d_exch_b32
            : (ty == TY_B64 || ty == TY_U64)               ? &d_exch_b64
                                                           : NULL;
        break;
    case MOD_CAS:
        r = (ty == TY_B32 || ty == TY_U32 || ty == TY_S32) ? &d_cas_b32
            : (ty == TY_B64 || ty == TY_U64)               ? &d_cas_b64
                                                           : NULL;
        break;
    case MOD_AND:
    case MOD_OR:
    case MOD_XOR:
        if (!w32 && !w64)
            break;
        if (op == MOD_AND)
            r = w64 ? &d_and_b64 : &d_and_b32;
        else if (op == MOD_OR)
            r = w64 ? &d_or_b64 : &d_or_b32;
        else
            r = w64 ? &d_xor_b64 : &d_xor_b32;
        break;
    case MOD_INC:
    case MOD_DEC:
        if (ty == TY_U32)
            r = op == MOD_INC ? &d_inc_u32 : &d_dec_u32;
        break;
    }
    if (!r)
        return tf__unsupported(dc, pi);
    uint32_t nsrc = op == MOD_CAS ? 2 : 1;
    uint32_t first = is_red ? 0 : 1;
    if (tf__opcount(dc, pi, first + 1 + nsrc, first + 1 + nsrc))
        return -1;
    in->aux = r;
    in->esize = (uint8_t)(tf__ty_bits(ty) / 8);
    in->mask = tf__wmask(tf__ty_bits(ty));
    in->d[0] = TF__NONE;
    if (!is_red && tf__dst(dc, pi, &pi->ops[0], &in->d[0], NULL))
        return -1;
    uint32_t limit;
    if (tf__addr(dc, pi, &pi->ops[first], &space, &in->a, &in->imm, &limit))
        return -1;
    if (space == TF__SP_FPARAM || space == MOD_PARAM || space == MOD_CONST || space == MOD_LOCAL)
        return tf__unsupported(dc, pi);
    in->fn = space == MOD_GLOBAL ? atom_global : space == MOD_SHARED ? atom_shared : atom_generic;
    if (tf__src(dc, pi, &pi->ops[first + 1], ty, &in->b))
        return -1;
    if (nsrc == 2) {
        if (tf__src(dc, pi, &pi->ops[first + 2], ty, &in->c))
            return -1;
    } else {
        in->c = in->b;
    }
    return 1;
}

static int decode_cvta(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in)
{
    static const int ok[] = {MOD_TO,    MOD_GLOBAL, MOD_SHARED, MOD_LOCAL,
                             MOD_CONST, MOD_PARAM,  MOD_NONE};
    struct tf__mods md;
    if (tf__mods(dc, pi, ok, &md))
        return -1;
    int space;
    if (md.nt != 1 || (md.t[0] != TY_U32 && md.t[0] != TY_U64) || space_mod(&md, &space) ||
        space == MOD_NONE)
        return tf__unsupported(dc, pi);
    int to = tf__has(&md, MOD_TO);
    if (tf__opcount(dc, pi, 2, 2) || tf__dst(dc, pi, &pi->ops[0], &in->d[0], NULL) ||
        tf__src(dc, pi, &pi->ops[1], md.t[0], &in->a))
        return -1;
    in->mask = tf__wmask(tf__ty_bits(md.t[0]));
    switch (space) {
    case MOD_GLOBAL:
    case MOD_CONST:
        in->fn = cvta_ident;
        break;
    case MOD_SHARED:
        in->fn = to ? cvta_to_shared : cvta_shared;
        break;
    case MOD_LOCAL:
        in->fn = to ? cvta_to_local : cvta_local;
        break;
    default:
        if (to || !tf__in_entry(dc))
            return tf__unsupported(dc, pi);
        in->fn = cvta_param;
        break;
    }
    return 1;
}

int tf__decode_mem(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in)
{
    const char *b = pi->base;
    if (!strcmp(b, "ld") || !strcmp(b, "ldu"))
        return decode_ldst(dc, pi, in, 1);
    if (!strcmp(b, "st"))
        return decode_ldst(dc, pi, in, 0);
    if (!strcmp(b, "atom"))
        return decode_atom(dc, pi, in, 0);
    if (!strcmp(b, "red"))
        return decode_atom(dc, pi, in, 1);
    if (!strcmp(b, "cvta"))
        return decode_cvta(dc, pi, in);
    if (!strcmp(b, "isspacep")) {
        static const int ok[] = {MOD_GLOBAL, MOD_SHARED, MOD_LOCAL, MOD_CONST, MOD_PARAM, MOD_NONE};
        struct tf__mods md;
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        int space;
        if (md.nt != 0 || space_mod(&md, &space) || space == MOD_NONE)
            return tf__unsupported(dc, pi);
        in->sub = space == MOD_GLOBAL   ? 0
                  : space == MOD_SHARED ? 1
                  : space == MOD_LOCAL  ? 2
                  : space == MOD_CONST  ? 3
                                        : 4;
        if (tf__opcount(dc, pi, 2, 2) || pi->ops[0].kind != PK_REG ||
            tf__pdst(dc, pi, pi->ops[0].name, &in->d[0]) ||
            tf__src(dc, pi, &pi->ops[1], TY_U64, &in->a))
            return pi->ops[0].kind != PK_REG ? tf__derr(dc, pi->line, "bad operand") : -1;
        in->fn = isspacep;
        return 1;
    }
    if (!strcmp(b, "prefetch") || !strcmp(b, "prefetchu")) {
        static const int ok[] = {MOD_GLOBAL, MOD_LOCAL, MOD_IGNORED_MEM, MOD_NONE};
        struct tf__mods md;
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        if (md.nt != 0 || tf__opcount(dc, pi, 1, 1) || pi->ops[0].kind != PK_ADDR)
            return tf__unsupported(dc, pi);
        in->fn = nop;
        return 1;
    }
    return 0;
}
