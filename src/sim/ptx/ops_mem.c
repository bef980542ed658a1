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

/* ---- address -> host pointer, per space ----
 * PREP_x loads the space's window into locals once per instruction (stores through the
 * register file would otherwise force reloads); ADDR_x(WR) turns address A of lane L into P
 * or returns the fault. TOTAL is the access size (vector size for .v2/.v4). */

#define PREP_GLOBAL                                                                                \
    uint64_t cb = run->c_base, cs = run->c_size;                                                   \
    int cro = run->c_ro;
#define ADDR_GLOBAL(WR)                                                                            \
    uint8_t *p;                                                                                    \
    {                                                                                              \
        uint64_t off_ = a - cb;                                                                    \
        if (!(a & (total - 1)) && off_ < cs && cs - off_ >= total && !((WR) && cro)) {             \
            p = (uint8_t *)(uintptr_t)a;                                                           \
        } else {                                                                                   \
            p = tf__gmem(w, in, l, a, total, WR);                                                  \
            if (!p)                                                                                \
                return TF__STOP_FAULT;                                                             \
            cb = run->c_base;                                                                      \
            cs = run->c_size;                                                                      \
            cro = run->c_ro;                                                                       \
        }                                                                                          \
    }
#define PREP_GENERIC PREP_GLOBAL
#define ADDR_GENERIC(WR)                                                                           \
    uint8_t *p;                                                                                    \
    {                                                                                              \
        uint64_t off_ = a - cb;                                                                    \
        if (!(a & (total - 1)) && off_ < cs && cs - off_ >= total && !((WR) && cro)) {             \
            p = (uint8_t *)(uintptr_t)a;                                                           \
        } else {                                                                                   \
            p = tf__generic(w, in, l, a, total, WR);                                               \
            if (!p)                                                                                \
                return TF__STOP_FAULT;                                                             \
            cb = run->c_base;                                                                      \
            cs = run->c_size;                                                                      \
            cro = run->c_ro;                                                                       \
        }                                                                                          \
    }
#define PREP_SHARED                                                                                \
    uint8_t *shb = run->shared;                                                                    \
    uint64_t shs = run->shared_size;
#define ADDR_SHARED(WR)                                                                            \
    if (a & (total - 1))                                                                           \
        return tf__fault(w, in, l, TF_PTX_MISALIGNED_ADDRESS, a, ".shared");                       \
    if (a >= shs || shs - a < total)                                                               \
        return tf__fault(w, in, l, TF_PTX_ILLEGAL_ADDRESS, a, ".shared window");                   \
    uint8_t *p = shb + a;
#define PREP_LOCAL                                                                                 \
    uint8_t *lob = run->local + (uint64_t)w->tid0 * run->local_stride;                             \
    uint64_t los = run->local_stride;
#define ADDR_LOCAL(WR)                                                                             \
    if (a & (total - 1))                                                                           \
        return tf__fault(w, in, l, TF_PTX_MISALIGNED_ADDRESS, a, ".local");                        \
    if (a >= los || los - a < total)                                                               \
        return tf__fault(w, in, l, TF_PTX_ILLEGAL_ADDRESS, a, ".local window");                    \
    uint8_t *p = lob + (uint64_t)l * los + a;
#define PREP_KPARAM                                                                                \
    const uint8_t *pab = run->params;                                                              \
    uint64_t pas = run->params_size;
#define ADDR_KPARAM(WR)                                                                            \
    if (a & (total - 1))                                                                           \
        return tf__fault(w, in, l, TF_PTX_MISALIGNED_ADDRESS, a, ".param");                        \
    if (a >= pas || pas - a < total)                                                               \
        return tf__fault(w, in, l, TF_PTX_ILLEGAL_ADDRESS, a, ".param window");                    \
    const uint8_t *p = pab + a;
#define PREP_FPARAM                                                                                \
    uint8_t *fpb = w->prm + (uint64_t)in->imm;                                                     \
    size_t fps = w->prm_stride;
#define ADDR_FPARAM(WR) uint8_t *p = fpb + (size_t)l * fps;

/* Whole-warp fast path: FASTLIM_x(WR, TOTAL) sets LIM (the largest valid offset) and OK;
 * when every lane's offset A - FBASE is aligned and <= LIM, FPTR_x(l, a) is lane L's pointer
 * and no lane needs the per-lane checks. */
#define FAST_GLOBAL(WR, TOT)                                                                       \
    uint64_t fbase = cb, lim = cs - (TOT);                                                         \
    int fok = cs >= (TOT) && !((WR) && cro);
#define FPTR_GLOBAL(l, a) ((uint8_t *)(uintptr_t)(a))
#define FAST_GENERIC FAST_GLOBAL
#define FPTR_GENERIC FPTR_GLOBAL
#define FAST_SHARED(WR, TOT)                                                                       \
    uint64_t fbase = 0, lim = shs - (TOT);                                                         \
    int fok = shs >= (TOT);
#define FPTR_SHARED(l, a) (shb + (a))
#define FAST_LOCAL(WR, TOT)                                                                        \
    uint64_t fbase = 0, lim = los - (TOT);                                                         \
    int fok = los >= (TOT);
#define FPTR_LOCAL(l, a) (lob + (uint64_t)(l)*los + (a))
#define FAST_KPARAM(WR, TOT)                                                                       \
    uint64_t fbase = 0, lim = pas - (TOT);                                                         \
    int fok = pas >= (TOT);
#define FPTR_KPARAM(l, a) (pab + (a))
#define FAST_FPARAM(WR, TOT)                                                                       \
    uint64_t fbase = 0, lim = ~0ull;                                                               \
    int fok = 1;
#define FPTR_FPARAM(l, a) (fpb + (size_t)(l)*fps)
#define BASE_GLOBAL 1
#define BASE_GENERIC 1
#define BASE_SHARED 1
#define BASE_LOCAL 1
#define BASE_KPARAM 1
#define BASE_FPARAM 0
/* Sets FAST_ when every lane of a full warp may skip the per-lane checks (BASE: the address
 * comes from a register). */
#define WARP_FAST(SP, WR, TOT, BASE)                                                               \
    int fast_ = 0;                                                                                 \
    if (m == TF__FULL) {                                                                           \
        FAST_##SP(WR, TOT) uint64_t bad_ = !fok;                                                   \
        (void)fbase;                                                                               \
        (void)lim;                                                                                 \
        if ((BASE) && fok)                                                                         \
            for (int l = 0; l < TF__WARP; l++) {                                                   \
                uint64_t a_ = pa[l] + (uint64_t)imm;                                               \
                bad_ |= (a_ & ((TOT)-1)) | (uint64_t)(a_ - fbase > lim);                           \
            }                                                                                      \
        fast_ = !bad_;                                                                             \
    }

/* ld: fields esize, nvec, flags 1 = sign-extend, mask = destination register mask, d[] the
 * destinations, a the address base (unused for frame params), imm the offset */
#define LD(name, SP, ES)                                                                           \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        struct tf__run *run = w->run;                                                              \
        (void)run;                                                                                 \
        PREP_##SP const uint64_t *pa = TF__R(in->a);                                               \
        (void)pa;                                                                                  \
        const uint32_t total = ES;                                                                 \
        (void)total;                                                                               \
        const int64_t imm = in->imm;                                                               \
        (void)imm;                                                                                 \
        const int sx = in->flags & 1;                                                              \
        const uint64_t mk = in->mask;                                                              \
        uint64_t *d = TF__R(in->d[0]);                                                             \
        WARP_FAST(SP, 0, ES, BASE_##SP)                                                            \
        if (fast_) {                                                                               \
            for (int l = 0; l < TF__WARP; l++) {                                                   \
                uint64_t a = pa[l] + (uint64_t)imm, v = 0;                                         \
                (void)a;                                                                           \
                memcpy(&v, FPTR_##SP(l, a), ES);                                                   \
                if (sx)                                                                            \
                    v = tf__sext(v, ES * 8);                                                       \
                d[l] = v & mk;                                                                     \
            }                                                                                      \
            return TF__GO;                                                                         \
        }                                                                                          \
        TF__FOR_LANES(m, {                                                                         \
            uint64_t a = pa[l] + (uint64_t)imm;                                                    \
            (void)a;                                                                               \
            ADDR_##SP(0) uint64_t v = 0;                                                           \
            memcpy(&v, p, ES);                                                                     \
            if (sx)                                                                                \
                v = tf__sext(v, ES * 8);                                                           \
            d[l] = v & mk;                                                                         \
        });                                                                                        \
        return TF__GO;                                                                             \
    }
#define LDV(name, SP, ES)                                                                          \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        struct tf__run *run = w->run;                                                              \
        (void)run;                                                                                 \
        PREP_##SP const uint64_t *pa = TF__R(in->a);                                               \
        (void)pa;                                                                                  \
        const unsigned nv = in->nvec;                                                              \
        const uint32_t total = ES * nv;                                                            \
        (void)total;                                                                               \
        const int64_t imm = in->imm;                                                               \
        (void)imm;                                                                                 \
        const int sx = in->flags & 1;                                                              \
        const uint64_t mk = in->mask;                                                              \
        uint64_t *d[4];                                                                            \
        for (unsigned k = 0; k < 4; k++)                                                           \
            d[k] = TF__R(in->d[k < nv ? k : 0]);                                                   \
        TF__FOR_LANES(m, {                                                                         \
            uint64_t a = pa[l] + (uint64_t)imm;                                                    \
            (void)a;                                                                               \
            ADDR_##SP(0) for (unsigned k = 0; k < nv; k++)                                         \
            {                                                                                      \
                uint64_t v = 0;                                                                    \
                memcpy(&v, p + k * ES, ES);                                                        \
                if (sx)                                                                            \
                    v = tf__sext(v, ES * 8);                                                       \
                d[k][l] = v & mk;                                                                  \
            }                                                                                      \
        });                                                                                        \
        return TF__GO;                                                                             \
    }
/* st: the values in d[] (slots), the address base in a */
#define ST(name, SP, ES)                                                                           \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        struct tf__run *run = w->run;                                                              \
        (void)run;                                                                                 \
        PREP_##SP const uint64_t *pa = TF__R(in->a);                                               \
        (void)pa;                                                                                  \
        const uint32_t total = ES;                                                                 \
        (void)total;                                                                               \
        const int64_t imm = in->imm;                                                               \
        (void)imm;                                                                                 \
        const uint64_t *s = TF__R(in->d[0]);                                                       \
        WARP_FAST(SP, 1, ES, BASE_##SP)                                                            \
        if (fast_) {                                                                               \
            for (int l = 0; l < TF__WARP; l++) {                                                   \
                uint64_t a = pa[l] + (uint64_t)imm, v = s[l];                                      \
                (void)a;                                                                           \
                memcpy(FPTR_##SP(l, a), &v, ES);                                                   \
            }                                                                                      \
            return TF__GO;                                                                         \
        }                                                                                          \
        TF__FOR_LANES(m, {                                                                         \
            uint64_t a = pa[l] + (uint64_t)imm;                                                    \
            (void)a;                                                                               \
            ADDR_##SP(1) uint64_t v = s[l];                                                        \
            memcpy(p, &v, ES);                                                                     \
        });                                                                                        \
        return TF__GO;                                                                             \
    }
#define STV(name, SP, ES)                                                                          \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        struct tf__run *run = w->run;                                                              \
        (void)run;                                                                                 \
        PREP_##SP const uint64_t *pa = TF__R(in->a);                                               \
        (void)pa;                                                                                  \
        const unsigned nv = in->nvec;                                                              \
        const uint32_t total = ES * nv;                                                            \
        (void)total;                                                                               \
        const int64_t imm = in->imm;                                                               \
        (void)imm;                                                                                 \
        const uint64_t *s[4];                                                                      \
        for (unsigned k = 0; k < 4; k++)                                                           \
            s[k] = TF__R(in->d[k < nv ? k : 0]);                                                   \
        TF__FOR_LANES(m, {                                                                         \
            uint64_t a = pa[l] + (uint64_t)imm;                                                    \
            (void)a;                                                                               \
            ADDR_##SP(1) for (unsigned k = 0; k < nv; k++)                                         \
            {                                                                                      \
                uint64_t v = s[k][l];                                                              \
                memcpy(p + k * ES, &v, ES);                                                        \
            }                                                                                      \
        });                                                                                        \
        return TF__GO;                                                                             \
    }
#define LDST_SIZES(sp, SP)                                                                         \
    LD(ld_##sp##_1, SP, 1)                                                                         \
    LD(ld_##sp##_2, SP, 2)                                                                         \
    LD(ld_##sp##_4, SP, 4)                                                                         \
    LD(ld_##sp##_8, SP, 8)                                                                         \
    LDV(ldv_##sp##_1, SP, 1)                                                                       \
    LDV(ldv_##sp##_2, SP, 2)                                                                       \
    LDV(ldv_##sp##_4, SP, 4)                                                                       \
    LDV(ldv_##sp##_8, SP, 8)                                                                       \
    ST(st_##sp##_1, SP, 1)                                                                         \
    ST(st_##sp##_2, SP, 2)                                                                         \
    ST(st_##sp##_4, SP, 4)                                                                         \
    ST(st_##sp##_8, SP, 8)                                                                         \
    STV(stv_##sp##_1, SP, 1)                                                                       \
    STV(stv_##sp##_2, SP, 2)                                                                       \
    STV(stv_##sp##_4, SP, 4)                                                                       \
    STV(stv_##sp##_8, SP, 8)
/* clang-format off */
LDST_SIZES(global, GLOBAL)
LDST_SIZES(generic, GENERIC)
LDST_SIZES(shared, SHARED)
LDST_SIZES(local, LOCAL)
LDST_SIZES(fparam, FPARAM)
LD(ld_kparam_1, KPARAM, 1)
LD(ld_kparam_2, KPARAM, 2)
LD(ld_kparam_4, KPARAM, 4)
LD(ld_kparam_8, KPARAM, 8)
LDV(ldv_kparam_1, KPARAM, 1)
LDV(ldv_kparam_2, KPARAM, 2)
LDV(ldv_kparam_4, KPARAM, 4)
LDV(ldv_kparam_8, KPARAM, 8)
/* clang-format on */

enum { SPI_GLOBAL, SPI_GENERIC, SPI_SHARED, SPI_LOCAL, SPI_FPARAM, SPI_KPARAM };
#define SZ_ROW(pfx, sp)                                                                            \
    {                                                                                              \
        pfx##sp##_1, pfx##sp##_2, pfx##sp##_4, pfx##sp##_8                                         \
    }
/* [vector][space][size] */
static const tf__op_fn ld_tab[2][6][4] = {
    {SZ_ROW(ld_, global), SZ_ROW(ld_, generic), SZ_ROW(ld_, shared), SZ_ROW(ld_, local),
     SZ_ROW(ld_, fparam), SZ_ROW(ld_, kparam)},
    {SZ_ROW(ldv_, global), SZ_ROW(ldv_, generic), SZ_ROW(ldv_, shared), SZ_ROW(ldv_, local),
     SZ_ROW(ldv_, fparam), SZ_ROW(ldv_, kparam)}};
static const tf__op_fn st_tab[2][5][4] = {
    {SZ_ROW(st_, global), SZ_ROW(st_, generic), SZ_ROW(st_, shared), SZ_ROW(st_, local),
     SZ_ROW(st_, fparam)},
    {SZ_ROW(stv_, global), SZ_ROW(stv_, generic), SZ_ROW(stv_, shared), SZ_ROW(stv_, local),
     SZ_ROW(stv_, fparam)}};

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

/* Half-precision adds (atom.add.noftz.f16/bf16 and their x2 pairs): each half rounded once to
 * nearest even (the sum of two halves is exact in double), subnormals kept. */
static uint32_t hadd2(uint32_t old, uint32_t b, int bf16, int x2)
{
    uint32_t lo = tf__f2h(tf__h2f((uint16_t)old, bf16) + tf__h2f((uint16_t)b, bf16), MOD_RN, bf16);
    if (!x2)
        return lo;
    uint32_t hi = tf__f2h(tf__h2f((uint16_t)(old >> 16), bf16) + tf__h2f((uint16_t)(b >> 16), bf16),
                          MOD_RN, bf16);
    return hi << 16 | lo;
}
/* clang-format off */
RMW_CAS(addh_f16, uint16_t, (uint16_t)hadd2(old, b, 0, 0))
RMW_CAS(addh_bf16, uint16_t, (uint16_t)hadd2(old, b, 1, 0))
RMW_CAS(addh_f16x2, uint32_t, hadd2(old, b, 0, 1))
RMW_CAS(addh_bf16x2, uint32_t, hadd2(old, b, 1, 1))
/* clang-format on */

static uint64_t cas_b16(void *p, uint64_t b, uint64_t c)
{
    uint16_t exp = (uint16_t)b;
    __atomic_compare_exchange_n((uint16_t *)p, &exp, (uint16_t)c, 0, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
    return exp;
}
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
DESC(dec_u32) DESC(addf_f32) DESC(addf_f64) DESC(cas_b32) DESC(cas_b64) DESC(cas_b16)
DESC(addh_f16) DESC(addh_bf16) DESC(addh_f16x2) DESC(addh_bf16x2)
/* clang-format on */

/* fields: esize, aux = struct rmw, d[0] (TF__NONE for red), a address, b, c operands */
#define ATOM(name, SP)                                                                             \
    TF__OP(name)                                                                                   \
    {                                                                                              \
        struct tf__run *run = w->run;                                                              \
        (void)run;                                                                                 \
        const uint64_t *pa = TF__R(in->a), *pb = TF__R(in->b), *pc = TF__R(in->c);                 \
        PREP_##SP rmw_fn fn = ((const struct rmw *)in->aux)->fn;                                   \
        uint32_t total = in->esize;                                                                \
        uint64_t mk = in->mask;                                                                    \
        for (uint32_t mm = m; mm; mm &= mm - 1) {                                                  \
            int l = __builtin_ctz(mm);                                                             \
            uint64_t a = pa[l] + (uint64_t)in->imm;                                                \
            ADDR_##SP(1) uint64_t old = fn(p, pb[l], pc[l]);                                       \
            if (in->d[0] != TF__NONE)                                                              \
                w->r[in->d[0] + (uint32_t)l] = old & mk;                                           \
        }                                                                                          \
        return TF__GO;                                                                             \
    }
    /* clang-format off */
ATOM(atom_global, GLOBAL)
ATOM(atom_shared, SHARED)
ATOM(atom_generic, GENERIC)
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
    in->fn = is_ld ? ld_tab[nvec > 1][si][ei] : st_tab[nvec > 1][si][ei];
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
    static const int ok[] = {MOD_GLOBAL, MOD_SHARED, MOD_IGNORED_MEM, MOD_ADD,   MOD_MIN,
                             MOD_MAX,    MOD_EXCH,   MOD_CAS,         MOD_AND,   MOD_OR,
                             MOD_XOR,    MOD_INC,    MOD_DEC,         MOD_NOFTZ, MOD_NONE};
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
    int half = ty == TY_F16 || ty == TY_BF16 || ty == TY_F16X2 || ty == TY_BF16X2;
    /* halves take add only, and only as .noftz (the ISA's spelling); nothing else takes it */
    if (n != 1 || (is_red && (op == MOD_EXCH || op == MOD_CAS)) ||
        tf__has(&md, MOD_NOFTZ) != (half && op == MOD_ADD))
        return tf__unsupported(dc, pi);
    const struct rmw *r = NULL;
    int w64 = tf__ty_bits(ty) == 64, w32 = tf__ty_bits(ty) == 32;
    switch (op) {
    case MOD_ADD:
        r = ty == TY_U32 || ty == TY_S32 ? &d_add_u32
            : ty == TY_U64               ? &d_add_u64
            : ty == TY_F32               ? &d_addf_f32
            : ty == TY_F64               ? &d_addf_f64
            : ty == TY_F16               ? &d_addh_f16
            : ty == TY_BF16              ? &d_addh_bf16
            : ty == TY_F16X2             ? &d_addh_f16x2
            : ty == TY_BF16X2            ? &d_addh_bf16x2
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
            : (ty == TY_B16 || ty == TY_U16)               ? &d_cas_b16
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
    if (!strcmp(b, "cp"))
        return tf__decode_cp_async(dc, pi, in);
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
