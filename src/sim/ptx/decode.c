/* SPDX-License-Identifier: Apache-2.0
 *
 * The PTX decoder (see decode.h): scoped names (registers, variables, functions), variable and
 * parameter layout, register slot allocation, immediates/special registers/symbol addresses
 * as frame-initialised slots, labels and calls, and dispatch of each instruction to the
 * family decoders in ops_*.c. It finishes a module by resolving calls, laying out .shared,
 * computing stack needs and handing each function to cfg.c for reconvergence points.
 */
#include "sim/ptx/decode.h"

#include "common/strutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define NBUCKET 1024

enum symk { SYM_REG, SYM_REGRANGE, SYM_PRED, SYM_PREDRANGE, SYM_VAR, SYM_FUNC };

struct sym {
    const char *name;
    int next; /* previous head of this bucket */
    uint32_t bucket;
    uint8_t kind, bits;
    uint32_t a, count;
};

/* A variable as the decoder sees it. */
struct dvar {
    const char *name;
    int space; /* MOD_GLOBAL / MOD_CONST / MOD_SHARED / MOD_LOCAL / MOD_PARAM / TF__SP_FPARAM */
    uint64_t size;
    uint32_t align;
    uint32_t modvar; /* global/const: module variable index */
    uint64_t offset; /* shared window / frame local / frame param / launch buffer offset */
    int own_shared;  /* .shared inside an entry: offset is relative to the entry's region */
    int extern_shared;
};

struct fixup {
    uint32_t pc, line;
    const char *name;
};

struct cfix { /* const slot whose value gets module_shared added at finish */
    uint32_t func, cidx;
};

struct vec {
    void *data;
    uint32_t n, cap;
};

static int vec_push(struct vec *v, const void *item, size_t sz)
{
    if (v->n == v->cap) {
        uint32_t nc = v->cap ? v->cap * 2 : 16;
        void *nd = realloc(v->data, (size_t)nc * sz);
        if (!nd)
            return -1;
        v->data = nd;
        v->cap = nc;
    }
    memcpy((char *)v->data + (size_t)v->n * sz, item, sz);
    v->n++;
    return 0;
}
#define VEC_AT(v, T, i) (((T *)(v).data)[i])

struct scope {
    uint32_t nsyms;
    uint32_t param_ptr;
};

struct tf__dctx {
    struct tf_ptx_module *mod;
    char *err;
    size_t errlen;
    int buckets[NBUCKET];
    struct vec syms;    /* struct sym */
    struct vec dvars;   /* struct dvar */
    struct vec code;    /* struct tf__insn */
    struct vec funcs;   /* struct tf__func */
    struct vec mvars;   /* struct tf_ptx_var */
    struct vec mspace;  /* int per module var */
    struct vec relocs;  /* struct tf__reloc */
    struct vec cfixes;  /* struct cfix */
    struct vec callfix; /* struct fixup: call insns by callee name */
    uint32_t module_shared, extern_align;
    /* the function being decoded */
    int in_func;
    uint32_t fidx;
    struct tf__func *fn; /* VEC_AT(funcs) entry: re-fetched after pushes */
    struct vec consts, specials, labels, lfix, scopes;
    int lbuckets[NBUCKET]; /* label name hash -> index in labels, chained through lnext */
    struct vec lnext;
    struct vec ctags; /* per const: 0 plain (deduplicated) or 1 */
    uint32_t nslots, npreds, local_size, param_ptr, param_peak;
    uint32_t own_shared;
    uint32_t sink, psink;
    uint32_t cur_line;
    uint32_t nregs_declared;
    struct vec callees;
};

struct tf__arena *tf__d_arena(struct tf__dctx *dc)
{
    return &dc->mod->arena;
}

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

int tf__derr(struct tf__dctx *dc, uint32_t line, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    tf_errf(dc->err, dc->errlen, "line %u: %s", line, msg);
    return -1;
}

int tf__unsupported(struct tf__dctx *dc, const struct tf__pinsn *pi)
{
    return tf__derr(dc, pi->line, "unsupported instruction '%s'", pi->opcode);
}

static int oom(struct tf__dctx *dc)
{
    tf_errf(dc->err, dc->errlen, "out of memory");
    return -1;
}

struct tf__dctx *tf__dctx_new(struct tf_ptx_module *mod, char *err, size_t errlen)
{
    struct tf__dctx *dc = calloc(1, sizeof(*dc));
    if (!dc)
        return NULL;
    dc->mod = mod;
    dc->err = err;
    dc->errlen = errlen;
    for (int i = 0; i < NBUCKET; i++)
        dc->buckets[i] = -1;
    dc->extern_align = 16;
    return dc;
}

void tf__dctx_free(struct tf__dctx *dc)
{
    if (!dc)
        return;
    struct vec *vs[] = {&dc->syms,     &dc->dvars,  &dc->code,   &dc->funcs,   &dc->mvars,
                        &dc->mspace,   &dc->relocs, &dc->cfixes, &dc->callfix, &dc->consts,
                        &dc->specials, &dc->labels, &dc->lfix,   &dc->scopes,  &dc->ctags,
                        &dc->callees,  &dc->lnext};
    for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++)
        free(vs[i]->data);
    free(dc);
}

/* ---- symbols ---- */

static int sym_add(struct tf__dctx *dc, const char *name, int kind, uint32_t a, uint32_t count,
                   unsigned bits)
{
    struct sym s = {
        .name = name, .kind = (uint8_t)kind, .bits = (uint8_t)bits, .a = a, .count = count};
    s.bucket = hash_str(name) % NBUCKET;
    s.next = dc->buckets[s.bucket];
    if (vec_push(&dc->syms, &s, sizeof(s)))
        return oom(dc);
    dc->buckets[s.bucket] = (int)dc->syms.n - 1;
    return 0;
}

static struct sym *sym_find(struct tf__dctx *dc, const char *name)
{
    int i = dc->buckets[hash_str(name) % NBUCKET];
    while (i >= 0) {
        struct sym *s = &VEC_AT(dc->syms, struct sym, i);
        if (strcmp(s->name, name) == 0)
            return s;
        i = s->next;
    }
    return NULL;
}

/* Finds NAME in the innermost scope holding it only when it was added at or after MARK. */
static int sym_in_scope(struct tf__dctx *dc, const char *name, uint32_t mark)
{
    int i = dc->buckets[hash_str(name) % NBUCKET];
    while (i >= 0 && (uint32_t)i >= mark) {
        struct sym *s = &VEC_AT(dc->syms, struct sym, i);
        if (strcmp(s->name, name) == 0)
            return 1;
        i = s->next;
    }
    return 0;
}

/* Whether NAME (prefix + number) falls in a NAME<N> range declared at or after MARK. */
static int in_scoped_range(struct tf__dctx *dc, const char *name, uint32_t mark)
{
    size_t n = strlen(name), d = n;
    while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
        d--;
    if (d == n || d == 0 || n - d > 9 || d >= 64)
        return 0;
    char prefix[64];
    memcpy(prefix, name, d);
    prefix[d] = 0;
    int i = dc->buckets[hash_str(prefix) % NBUCKET];
    while (i >= 0 && (uint32_t)i >= mark) {
        struct sym *s = &VEC_AT(dc->syms, struct sym, i);
        if (strcmp(s->name, prefix) == 0)
            return (s->kind == SYM_REGRANGE || s->kind == SYM_PREDRANGE) &&
                   strtoul(name + d, NULL, 10) < s->count;
        i = s->next;
    }
    return 0;
}

static void sym_pop_to(struct tf__dctx *dc, uint32_t n)
{
    while (dc->syms.n > n) {
        struct sym *s = &VEC_AT(dc->syms, struct sym, dc->syms.n - 1);
        dc->buckets[s->bucket] = s->next;
        dc->syms.n--;
    }
}

static uint32_t scope_mark(struct tf__dctx *dc)
{
    return dc->scopes.n ? VEC_AT(dc->scopes, struct scope, dc->scopes.n - 1).nsyms : 0;
}

/* Register lookup: exact name, else a NAME<N> range holding it. */
static struct sym *reg_find(struct tf__dctx *dc, const char *name, uint32_t *index)
{
    struct sym *s = sym_find(dc, name);
    if (s) {
        *index = 0;
        return s;
    }
    size_t n = strlen(name);
    size_t d = n;
    while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
        d--;
    if (d == n || d == 0 || n - d > 9 || d >= 64)
        return NULL;
    char prefix[64];
    memcpy(prefix, name, d);
    prefix[d] = 0;
    s = sym_find(dc, prefix);
    if (!s || (s->kind != SYM_REGRANGE && s->kind != SYM_PREDRANGE))
        return NULL;
    uint32_t idx = (uint32_t)strtoul(name + d, NULL, 10);
    if (idx >= s->count)
        return NULL;
    *index = idx;
    return s;
}

/* ---- types ---- */

static const struct {
    const char *name;
    uint8_t bits;
} ty_info[TY_COUNT] = {
    [TY_B8] = {"b8", 8},      [TY_B16] = {"b16", 16},       [TY_B32] = {"b32", 32},
    [TY_B64] = {"b64", 64},   [TY_B128] = {"b128", 128},    [TY_U8] = {"u8", 8},
    [TY_U16] = {"u16", 16},   [TY_U32] = {"u32", 32},       [TY_U64] = {"u64", 64},
    [TY_S8] = {"s8", 8},      [TY_S16] = {"s16", 16},       [TY_S32] = {"s32", 32},
    [TY_S64] = {"s64", 64},   [TY_F16] = {"f16", 16},       [TY_F16X2] = {"f16x2", 32},
    [TY_BF16] = {"bf16", 16}, [TY_BF16X2] = {"bf16x2", 32}, [TY_F32] = {"f32", 32},
    [TY_F64] = {"f64", 64},   [TY_PRED] = {"pred", 1},
};

unsigned tf__ty_bits(int ty)
{
    return (ty > 0 && ty < TY_COUNT) ? ty_info[ty].bits : 0;
}

int tf__ty_is_signed(int ty)
{
    return ty == TY_S8 || ty == TY_S16 || ty == TY_S32 || ty == TY_S64;
}

int tf__ty_is_float(int ty)
{
    return ty == TY_F16 || ty == TY_BF16 || ty == TY_F32 || ty == TY_F64;
}

int tf__ty_is_int(int ty)
{
    return (ty >= TY_B8 && ty <= TY_B64) || (ty >= TY_U8 && ty <= TY_S64);
}

int tf__ty_parse(const char *s)
{
    for (int i = 1; i < TY_COUNT; i++)
        if (ty_info[i].name && strcmp(ty_info[i].name, s) == 0)
            return i;
    return TY_NONE;
}

/* ---- modifiers ---- */

static const struct {
    const char *name;
    int mod;
} mod_names[] = {
    {"global", MOD_GLOBAL},
    {"shared", MOD_SHARED},
    {"local", MOD_LOCAL},
    {"param", MOD_PARAM},
    {"const", MOD_CONST},
    {"v2", MOD_V2},
    {"v4", MOD_V4},
    {"to", MOD_TO},
    {"nc", MOD_NC},
    {"ca", MOD_IGNORED_MEM},
    {"cg", MOD_IGNORED_MEM},
    {"cs", MOD_IGNORED_MEM},
    {"lu", MOD_IGNORED_MEM},
    {"cv", MOD_IGNORED_MEM},
    {"wb", MOD_IGNORED_MEM},
    {"wt", MOD_IGNORED_MEM},
    {"volatile", MOD_IGNORED_MEM},
    {"relaxed", MOD_IGNORED_MEM},
    {"acquire", MOD_IGNORED_MEM},
    {"release", MOD_IGNORED_MEM},
    {"acq_rel", MOD_IGNORED_MEM},
    {"weak", MOD_IGNORED_MEM},
    {"sc", MOD_IGNORED_MEM},
    {"sys", MOD_IGNORED_MEM},
    {"gpu", MOD_IGNORED_MEM},
    {"cta", MOD_IGNORED_MEM},
    {"cluster", MOD_IGNORED_MEM},
    {"L2::cache_hint", MOD_CACHE_HINT},
    {"lo", MOD_LO},
    {"hi", MOD_HI},
    {"wide", MOD_WIDE},
    {"sat", MOD_SAT},
    {"ftz", MOD_FTZ},
    {"approx", MOD_APPROX},
    {"full", MOD_FULL},
    {"cc", MOD_CC},
    {"rn", MOD_RN},
    {"rz", MOD_RZ},
    {"rm", MOD_RM},
    {"rp", MOD_RP},
    {"rni", MOD_RNI},
    {"rzi", MOD_RZI},
    {"rmi", MOD_RMI},
    {"rpi", MOD_RPI},
    {"relu", MOD_RELU},
    {"NaN", MOD_NAN},
    {"xorsign", MOD_XORSIGN},
    {"abs", MOD_ABS},
    {"shiftamt", MOD_SHIFTAMT},
    {"satfinite", MOD_SATFINITE},
    {"noftz", MOD_NOFTZ},
    {"eq", MOD_EQ},
    {"ne", MOD_NE},
    {"lt", MOD_LT},
    {"le", MOD_LE},
    {"gt", MOD_GT},
    {"ge", MOD_GE},
    {"ls", MOD_LS},
    {"hs", MOD_HS},
    {"equ", MOD_EQU},
    {"neu", MOD_NEU},
    {"ltu", MOD_LTU},
    {"leu", MOD_LEU},
    {"gtu", MOD_GTU},
    {"geu", MOD_GEU},
    {"num", MOD_NUM},
    {"nan", MOD_ISNAN},
    {"and", MOD_AND},
    {"or", MOD_OR},
    {"xor", MOD_XOR},
    {"add", MOD_ADD},
    {"min", MOD_MIN},
    {"max", MOD_MAX},
    {"exch", MOD_EXCH},
    {"cas", MOD_CAS},
    {"inc", MOD_INC},
    {"dec", MOD_DEC},
    {"uni", MOD_UNI},
    {"sync", MOD_SYNC},
    {"aligned", MOD_ALIGNED},
    {"arrive", MOD_ARRIVE},
    {"red", MOD_RED},
    {"popc", MOD_POPC},
    {"warp", MOD_WARP},
    {"up", MOD_UP},
    {"down", MOD_DOWN},
    {"bfly", MOD_BFLY},
    {"idx", MOD_IDX},
    {"all", MOD_ALL},
    {"any", MOD_ANY},
    {"ballot", MOD_BALLOT},
    {"l", MOD_L},
    {"r", MOD_R},
    {"wrap", MOD_WRAP},
    {"clamp", MOD_CLAMP},
    {"f4e", MOD_F4E},
    {"b4e", MOD_B4E},
    {"rc8", MOD_RC8},
    {"ecl", MOD_ECL},
    {"ecr", MOD_ECR},
    {"rc16", MOD_RC16},
    {"finite", MOD_FINITE},
    {"infinite", MOD_INFINITE},
    {"number", MOD_NUMBER},
    {"notanumber", MOD_NOTANUMBER},
    {"normal", MOD_NORMAL},
    {"subnormal", MOD_SUBNORMAL},
};

static int mod_lookup(const char *s)
{
    for (size_t i = 0; i < sizeof(mod_names) / sizeof(mod_names[0]); i++)
        if (strcmp(mod_names[i].name, s) == 0)
            return mod_names[i].mod;
    if ((strncmp(s, "L1::", 4) == 0 || strncmp(s, "L2::", 4) == 0) && s[4])
        return MOD_IGNORED_MEM;
    return MOD_NONE;
}

int tf__mods(struct tf__dctx *dc, const struct tf__pinsn *pi, const int *allowed,
             struct tf__mods *out)
{
    memset(out, 0, sizeof(*out));
    for (uint32_t i = 0; i < pi->nmods; i++) {
        int ty = tf__ty_parse(pi->mods[i]);
        if (ty != TY_NONE) {
            if (out->nt == 4)
                return tf__unsupported(dc, pi);
            out->t[out->nt++] = (uint8_t)ty;
            continue;
        }
        int m = mod_lookup(pi->mods[i]);
        int ok = 0;
        for (const int *a = allowed; m != MOD_NONE && *a != MOD_NONE; a++)
            if (*a == m)
                ok = 1;
        if (!ok || tf__has(out, m))
            return tf__unsupported(dc, pi);
        out->set[m / 64] |= 1ull << (m % 64);
    }
    return 0;
}

int tf__known_opcode(const char *base)
{
    static const char *const known[] = {
        "mov",        "add",      "sub",       "mul",    "mad",   "mul24",     "mad24", "sad",
        "div",        "rem",      "min",       "max",    "abs",   "neg",       "and",   "or",
        "xor",        "not",      "cnot",      "shl",    "shr",   "popc",      "clz",   "brev",
        "bfind",      "bfe",      "bfi",       "prmt",   "lop3",  "shf",       "dp4a",  "setp",
        "set",        "selp",     "slct",      "addc",   "subc",  "madc",      "fma",   "rcp",
        "sqrt",       "rsqrt",    "sin",       "cos",    "ex2",   "lg2",       "tanh",  "copysign",
        "testp",      "cvt",      "ld",        "ldu",    "st",    "atom",      "red",   "cvta",
        "isspacep",   "prefetch", "prefetchu", "bra",    "ret",   "exit",      "trap",  "brkpt",
        "call",       "bar",      "barrier",   "membar", "fence", "nanosleep", "shfl",  "vote",
        "activemask", "match",    "redux",     "elect",
    };
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(known[i], base) == 0)
            return 1;
    return 0;
}

int tf__opcount(struct tf__dctx *dc, const struct tf__pinsn *pi, uint32_t lo, uint32_t hi)
{
    if (pi->nops < lo || pi->nops > hi)
        return tf__derr(dc, pi->line, "wrong number of operands for '%s'", pi->opcode);
    return 0;
}

/* ---- slots ---- */

static int new_slots(struct tf__dctx *dc, uint32_t n, uint32_t *first)
{
    if (n > TF__MAX_SLOTS || dc->nslots + n > TF__MAX_SLOTS)
        return tf__derr(dc, dc->cur_line, "too many registers in function");
    *first = dc->nslots;
    dc->nslots += n;
    return 0;
}

static int new_const(struct tf__dctx *dc, uint64_t v, int tag, uint32_t *slot, uint32_t *cidx)
{
    if (!tag) {
        for (uint32_t i = dc->consts.n; i-- > 0;) {
            struct tf__const *c = &VEC_AT(dc->consts, struct tf__const, i);
            if (c->value == v && !VEC_AT(dc->ctags, uint8_t, i)) {
                *slot = c->slot * TF__WARP;
                if (cidx)
                    *cidx = i;
                return 0;
            }
            if (dc->consts.n - i > 64)
                break; /* bounded search: recent immediates only */
        }
    }
    uint32_t s = 0;
    if (new_slots(dc, 1, &s))
        return -1;
    struct tf__const c = {.slot = s, .value = v};
    uint8_t t = (uint8_t)tag;
    if (vec_push(&dc->consts, &c, sizeof(c)) || vec_push(&dc->ctags, &t, 1))
        return oom(dc);
    *slot = s * TF__WARP;
    if (cidx)
        *cidx = dc->consts.n - 1;
    return 0;
}

int tf__const_slot(struct tf__dctx *dc, uint64_t v, uint32_t *slot)
{
    return new_const(dc, v, 0, slot, NULL);
}

static int special_slot(struct tf__dctx *dc, uint32_t kind, uint32_t arg, uint32_t *slot)
{
    for (uint32_t i = 0; i < dc->specials.n; i++) {
        struct tf__special *s = &VEC_AT(dc->specials, struct tf__special, i);
        if (s->kind == kind && s->arg == arg) {
            *slot = s->slot * TF__WARP;
            return 0;
        }
    }
    uint32_t s = 0;
    if (new_slots(dc, 1, &s))
        return -1;
    struct tf__special sp = {.slot = s, .kind = kind, .arg = arg};
    if (vec_push(&dc->specials, &sp, sizeof(sp)))
        return oom(dc);
    *slot = s * TF__WARP;
    return 0;
}

uint32_t tf__sink(struct tf__dctx *dc)
{
    if (dc->sink == TF__NONE) {
        uint32_t s = 0;
        if (new_slots(dc, 1, &s))
            return 0;
        dc->sink = s * TF__WARP;
    }
    return dc->sink;
}

static const struct {
    const char *name;
    uint32_t kind;
} special_regs[] = {
    {"%tid.x", SPK_TID_X},
    {"%tid.y", SPK_TID_Y},
    {"%tid.z", SPK_TID_Z},
    {"%ntid.x", SPK_NTID_X},
    {"%ntid.y", SPK_NTID_Y},
    {"%ntid.z", SPK_NTID_Z},
    {"%ctaid.x", SPK_CTAID_X},
    {"%ctaid.y", SPK_CTAID_Y},
    {"%ctaid.z", SPK_CTAID_Z},
    {"%nctaid.x", SPK_NCTAID_X},
    {"%nctaid.y", SPK_NCTAID_Y},
    {"%nctaid.z", SPK_NCTAID_Z},
    {"%laneid", SPK_LANEID},
    {"%warpid", SPK_WARPID},
    {"%nwarpid", SPK_NWARPID},
    {"%smid", SPK_SMID},
    {"%nsmid", SPK_NSMID},
    {"%gridid", SPK_GRIDID},
    {"%lanemask_eq", SPK_LANEMASK_EQ},
    {"%lanemask_lt", SPK_LANEMASK_LT},
    {"%lanemask_le", SPK_LANEMASK_LE},
    {"%lanemask_gt", SPK_LANEMASK_GT},
    {"%lanemask_ge", SPK_LANEMASK_GE},
    {"%dynamic_smem_size", SPK_DYN_SMEM},
    {"%total_smem_size", SPK_TOTAL_SMEM},
    /* no clusters here: every CTA is a cluster of one */
    {"%cluster_ctarank", SPK_CLUSTER_ZERO},
    {"%cluster_nctarank", SPK_CLUSTER_ONE},
    {"%cluster_ctaid.x", SPK_CLUSTER_ZERO},
    {"%cluster_ctaid.y", SPK_CLUSTER_ZERO},
    {"%cluster_ctaid.z", SPK_CLUSTER_ZERO},
    {"%cluster_nctaid.x", SPK_CLUSTER_ONE},
    {"%cluster_nctaid.y", SPK_CLUSTER_ONE},
    {"%cluster_nctaid.z", SPK_CLUSTER_ONE},
    {"%clusterid.x", SPK_CTAID_X},
    {"%clusterid.y", SPK_CTAID_Y},
    {"%clusterid.z", SPK_CTAID_Z},
    {"%nclusterid.x", SPK_NCTAID_X},
    {"%nclusterid.y", SPK_NCTAID_Y},
    {"%nclusterid.z", SPK_NCTAID_Z},
    {"%is_explicit_cluster", SPK_CLUSTER_ZERO},
};

static const char *const dynamic_regs[] = {"%clock",       "%clock_hi",       "%clock64",
                                           "%globaltimer", "%globaltimer_lo", "%globaltimer_hi"};

int tf__dynamic_special(const char *name)
{
    for (size_t i = 0; i < sizeof(dynamic_regs) / sizeof(dynamic_regs[0]); i++)
        if (strcmp(name, dynamic_regs[i]) == 0)
            return (int)i;
    return -1;
}

static struct dvar *dvar_at(struct tf__dctx *dc, uint32_t i)
{
    return &VEC_AT(dc->dvars, struct dvar, i);
}

/* A slot holding the address of variable V plus ADDEND (window address for .shared/.local,
 * device address for .global/.const, launch-buffer offset for kernel params). */
static int var_slot(struct tf__dctx *dc, uint32_t line, struct dvar *v, int64_t addend,
                    uint32_t *slot)
{
    uint32_t cidx;
    switch (v->space) {
    case MOD_GLOBAL:
    case MOD_CONST: {
        if (new_const(dc, (uint64_t)addend, 1, slot, &cidx))
            return -1;
        struct tf__reloc r = {.func = dc->fidx, .cidx = cidx, .var = v->modvar, .addend = addend};
        if (vec_push(&dc->relocs, &r, sizeof(r)))
            return oom(dc);
        return 0;
    }
    case MOD_SHARED:
        if (v->extern_shared) {
            /* [dyn+12]: the launch's dynamic base plus the offset; accesses past the dynamic
             * size fault at run time like any other out-of-window shared access. */
            if (addend < 0 || addend > (int64_t)UINT32_MAX)
                return tf__derr(dc, line, "bad offset on extern .shared '%s'", v->name);
            return special_slot(dc, SPK_EXTERN_SMEM, (uint32_t)addend, slot);
        }
        if (new_const(dc, v->offset + (uint64_t)addend, v->own_shared, slot, &cidx))
            return -1;
        if (v->own_shared) {
            struct cfix f = {.func = dc->fidx, .cidx = cidx};
            if (vec_push(&dc->cfixes, &f, sizeof(f)))
                return oom(dc);
        }
        return 0;
    case MOD_LOCAL:
        if (addend < 0 || (uint64_t)addend > TF__MAX_LOCAL)
            return tf__derr(dc, line, "bad offset on .local '%s'", v->name);
        return special_slot(dc, SPK_LOCAL, (uint32_t)(v->offset + (uint64_t)addend), slot);
    case MOD_PARAM:
        return tf__const_slot(dc, v->offset + (uint64_t)addend, slot);
    default:
        return tf__derr(dc, line, "the address of parameter '%s' cannot be taken", v->name);
    }
}

static int literal_value(struct tf__dctx *dc, const struct tf__pinsn *pi, const struct tf__pop *op,
                         int ty, uint64_t *v)
{
    switch (op->kind) {
    case PK_IMM:
        if (ty == TY_F32 || ty == TY_F64)
            return tf__derr(dc, pi->line, "integer literal for a floating-point operand in '%s'",
                            pi->opcode);
        *v = (uint64_t)op->imm;
        return 0;
    case PK_F32: {
        uint32_t bits = (uint32_t)op->imm;
        if (ty == TY_F64) {
            float f;
            memcpy(&f, &bits, 4);
            *v = tf__uf64((double)f);
        } else {
            *v = bits;
        }
        return 0;
    }
    case PK_F64:
        if (ty == TY_F32)
            *v = tf__uf32((float)tf__f64((uint64_t)op->imm));
        else
            *v = (uint64_t)op->imm;
        return 0;
    case PK_DEC:
        if (ty == TY_F32)
            *v = tf__uf32((float)op->dval);
        else if (ty == TY_F64)
            *v = tf__uf64(op->dval);
        else
            return tf__derr(dc, pi->line, "floating-point literal for an integer operand in '%s'",
                            pi->opcode);
        return 0;
    default:
        return 1;
    }
}

int tf__imm(struct tf__dctx *dc, const struct tf__pinsn *pi, const struct tf__pop *op, int64_t *v)
{
    if (op->kind != PK_IMM)
        return tf__derr(dc, pi->line, "'%s' needs an integer literal operand", pi->opcode);
    *v = op->imm;
    return 0;
}

int tf__src(struct tf__dctx *dc, const struct tf__pinsn *pi, const struct tf__pop *op, int ty,
            uint32_t *slot)
{
    uint64_t v = 0;
    int rc = literal_value(dc, pi, op, ty, &v);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return tf__const_slot(dc, v, slot);
    if (op->kind != PK_REG || op->neg || op->name2)
        return tf__derr(dc, pi->line, "bad source operand in '%s'", pi->opcode);
    uint32_t idx;
    struct sym *s = reg_find(dc, op->name, &idx);
    if (s && op->imm == 0) {
        if (s->kind == SYM_REG || s->kind == SYM_REGRANGE) {
            *slot = (s->a + idx) * TF__WARP;
            return 0;
        }
        if (s->kind == SYM_PRED || s->kind == SYM_PREDRANGE)
            return tf__derr(dc, pi->line, "predicate '%s' used as a value in '%s'", op->name,
                            pi->opcode);
    }
    if (s && s->kind == SYM_VAR)
        return var_slot(dc, pi->line, dvar_at(dc, s->a), op->imm, slot);
    if (s && s->kind == SYM_FUNC)
        return tf__derr(dc, pi->line, "unsupported: address of function '%s'", op->name);
    if (op->imm == 0) {
        for (size_t i = 0; i < sizeof(special_regs) / sizeof(special_regs[0]); i++)
            if (strcmp(op->name, special_regs[i].name) == 0)
                return special_slot(dc, special_regs[i].kind, 0, slot);
        if (strcmp(op->name, "WARP_SZ") == 0)
            return tf__const_slot(dc, 32, slot);
        if (tf__dynamic_special(op->name) >= 0)
            return tf__derr(dc, pi->line, "special register '%s' is only supported in mov",
                            op->name);
    }
    if (op->name[0] == '%' && !s)
        return tf__derr(dc, pi->line, "unknown register '%s'", op->name);
    return tf__derr(dc, pi->line, "unknown symbol '%s'", op->name);
}

int tf__dst(struct tf__dctx *dc, const struct tf__pinsn *pi, const struct tf__pop *op,
            uint32_t *slot, unsigned *regbits)
{
    if (op->kind == PK_SINK) {
        *slot = tf__sink(dc);
        if (regbits)
            *regbits = 64;
        return 0;
    }
    if (op->kind != PK_REG || op->neg || op->imm)
        return tf__derr(dc, pi->line, "bad destination operand in '%s'", pi->opcode);
    uint32_t idx;
    struct sym *s = reg_find(dc, op->name, &idx);
    if (!s || (s->kind != SYM_REG && s->kind != SYM_REGRANGE)) {
        if (s && (s->kind == SYM_PRED || s->kind == SYM_PREDRANGE))
            return tf__derr(dc, pi->line, "predicate '%s' used as a value in '%s'", op->name,
                            pi->opcode);
        return tf__derr(dc, pi->line, "destination '%s' of '%s' is not a register", op->name,
                        pi->opcode);
    }
    *slot = (s->a + idx) * TF__WARP;
    if (regbits)
        *regbits = s->bits;
    return 0;
}

int tf__is_pred(struct tf__dctx *dc, const char *name)
{
    uint32_t idx;
    struct sym *s = reg_find(dc, name, &idx);
    return s && (s->kind == SYM_PRED || s->kind == SYM_PREDRANGE);
}

int tf__pdst(struct tf__dctx *dc, const struct tf__pinsn *pi, const char *name, uint32_t *pidx)
{
    if (strcmp(name, "_") == 0) {
        if (dc->psink == TF__NONE)
            dc->psink = dc->npreds++;
        *pidx = dc->psink;
        return 0;
    }
    uint32_t idx;
    struct sym *s = reg_find(dc, name, &idx);
    if (!s || (s->kind != SYM_PRED && s->kind != SYM_PREDRANGE))
        return tf__derr(dc, pi->line, "'%s' is not a predicate in '%s'", name, pi->opcode);
    *pidx = s->a + idx;
    return 0;
}

int tf__psrc(struct tf__dctx *dc, const struct tf__pinsn *pi, const struct tf__pop *op,
             uint32_t *pidx)
{
    if (op->kind != PK_REG || op->name2 || op->imm)
        return tf__derr(dc, pi->line, "bad predicate operand in '%s'", pi->opcode);
    return tf__pdst(dc, pi, op->name, pidx);
}

int tf__addr(struct tf__dctx *dc, const struct tf__pinsn *pi, const struct tf__pop *op, int *space,
             uint32_t *slot, int64_t *imm, uint32_t *limit)
{
    if (op->kind != PK_ADDR)
        return tf__derr(dc, pi->line, "'%s' needs an address operand", pi->opcode);
    *limit = 0;
    if (!op->name) {
        if (*space == MOD_PARAM && !dc->fn->is_entry)
            return tf__derr(dc, pi->line, "unsupported: absolute .param address");
        *imm = op->imm;
        return tf__const_slot(dc, 0, slot);
    }
    uint32_t idx;
    struct sym *s = reg_find(dc, op->name, &idx);
    if (s && (s->kind == SYM_REG || s->kind == SYM_REGRANGE)) {
        if (*space == MOD_PARAM && !dc->fn->is_entry)
            return tf__derr(dc, pi->line, "unsupported: register address in .param space");
        *slot = (s->a + idx) * TF__WARP;
        *imm = op->imm;
        return 0;
    }
    if (!s || s->kind != SYM_VAR) {
        if (s)
            return tf__derr(dc, pi->line, "'%s' is not an address in '%s'", op->name, pi->opcode);
        return tf__derr(dc, pi->line, "unknown symbol '%s'", op->name);
    }
    struct dvar *v = dvar_at(dc, s->a);
    int want = *space;
    if (v->space == TF__SP_FPARAM) {
        if (want != MOD_PARAM)
            return tf__derr(dc, pi->line, "parameter '%s' accessed outside .param space", v->name);
        if (op->imm < 0 || (uint64_t)op->imm >= v->size)
            return tf__derr(dc, pi->line, "offset out of range of parameter '%s'", v->name);
        *space = TF__SP_FPARAM;
        *slot = 0;
        *imm = (int64_t)v->offset + op->imm;
        *limit = (uint32_t)(v->offset + v->size);
        return 0;
    }
    int ok = want == v->space || (want == MOD_NONE && (v->space == MOD_GLOBAL)) ||
             (want == MOD_GLOBAL && v->space == MOD_CONST) ||
             (want == MOD_NONE && v->space == MOD_CONST);
    if (!ok)
        return tf__derr(dc, pi->line, "variable '%s' is not in the space of '%s'", v->name,
                        pi->opcode);
    if (v->space == MOD_PARAM && !dc->fn->is_entry)
        return tf__derr(dc, pi->line, "unsupported .param access in '%s'", pi->opcode);
    *imm = 0;
    return var_slot(dc, pi->line, v, op->imm, slot);
}

int tf__in_entry(struct tf__dctx *dc)
{
    return dc->fn->is_entry;
}

int tf__label_ref(struct tf__dctx *dc, const struct tf__pinsn *pi, const struct tf__pop *op,
                  uint32_t unused)
{
    (void)unused;
    if (op->kind != PK_REG || op->neg || op->imm || op->name2)
        return tf__derr(dc, pi->line, "'%s' needs a label", pi->opcode);
    struct fixup f = {.pc = dc->code.n, .line = pi->line, .name = op->name};
    if (vec_push(&dc->lfix, &f, sizeof(f)))
        return oom(dc);
    return 0;
}

/* call{.uni} [(rets),] func[, (args)]: the callee is resolved at finish. */
int tf__call_decode(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in)
{
    uint32_t i = 0;
    const struct tf__pop *rets = NULL, *args = NULL, *fn = NULL;
    if (i < pi->nops && pi->ops[i].kind == PK_LIST)
        rets = &pi->ops[i++];
    if (i < pi->nops)
        fn = &pi->ops[i++];
    if (i < pi->nops && pi->ops[i].kind == PK_LIST)
        args = &pi->ops[i++];
    if (!fn || fn->kind != PK_REG || i != pi->nops)
        return tf__derr(dc, pi->line, "unsupported call form in '%s'", pi->opcode);
    uint32_t idx;
    struct sym *s = reg_find(dc, fn->name, &idx);
    if (s && (s->kind == SYM_REG || s->kind == SYM_REGRANGE))
        return tf__derr(dc, pi->line, "unsupported: indirect call through '%s'", fn->name);
    struct tf__call *c = tf__arena_alloc(&dc->mod->arena, sizeof(*c));
    if (!c)
        return oom(dc);
    c->callee = TF__NONE;
    c->callee_name = fn->name;
    const struct tf__pop *lists[2] = {rets, args};
    for (int k = 0; k < 2; k++) {
        const struct tf__pop *l = lists[k];
        uint32_t n = l ? l->n : 0;
        uint32_t *off = n ? tf__arena_alloc(&dc->mod->arena, n * sizeof(uint32_t)) : NULL;
        uint32_t *size = n ? tf__arena_alloc(&dc->mod->arena, n * sizeof(uint32_t)) : NULL;
        if (n && (!off || !size))
            return oom(dc);
        for (uint32_t j = 0; j < n; j++) {
            const struct tf__pop *e = &l->elems[j];
            struct sym *ps = e->kind == PK_REG ? sym_find(dc, e->name) : NULL;
            if (!ps || ps->kind != SYM_VAR || dvar_at(dc, ps->a)->space != TF__SP_FPARAM || e->imm)
                return tf__derr(dc, pi->line, "call %s must be .param variables",
                                k ? "arguments" : "results");
            off[j] = (uint32_t)dvar_at(dc, ps->a)->offset;
            size[j] = (uint32_t)dvar_at(dc, ps->a)->size;
        }
        if (k == 0) {
            c->nrets = n;
            c->ret_off = off;
            c->ret_size = size;
        } else {
            c->nargs = n;
            c->arg_off = off;
            c->arg_size = size;
        }
    }
    in->aux = c;
    in->fn = tf__op_call;
    struct fixup f = {.pc = dc->code.n, .line = pi->line, .name = fn->name};
    if (vec_push(&dc->callfix, &f, sizeof(f)))
        return oom(dc);
    dc->fn->has_calls = 1;
    return 1;
}

void tf__note_barrier(struct tf__dctx *dc)
{
    (void)dc;
}

uint32_t tf__func_end_pc(struct tf__dctx *dc)
{
    return dc->fn->end_pc;
}

/* ---- declarations ---- */

static uint32_t natural_align(const struct tf__vardecl *v)
{
    unsigned b = tf__ty_bits(v->ty) / 8;
    if (b == 0)
        b = 1;
    return v->align ? v->align : b * (v->vec == 3 ? 4 : v->vec);
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) & ~(a - 1);
}

static int var_size(struct tf__dctx *dc, const struct tf__vardecl *v, uint64_t *size)
{
    unsigned b = tf__ty_bits(v->ty) / 8;
    if (v->ty == TY_PRED || b == 0)
        return tf__derr(dc, v->line, "bad type for variable '%s'", v->name);
    if (v->vec != 1 && v->vec != 2 && v->vec != 4)
        return tf__derr(dc, v->line, "bad vector width for variable '%s'", v->name);
    *size = v->count * b * v->vec;
    if (*size > (UINT64_C(1) << 40))
        return tf__derr(dc, v->line, "variable '%s' too large", v->name);
    return 0;
}

int tf__d_var(struct tf__dctx *dc, const struct tf__vardecl *v)
{
    dc->cur_line = v->line;
    uint64_t size = 0;
    if (var_size(dc, v, &size))
        return -1;
    uint32_t align = natural_align(v);
    uint32_t mark = dc->in_func ? scope_mark(dc) : 0;
    if (sym_in_scope(dc, v->name, mark)) {
        struct sym *old = sym_find(dc, v->name);
        /* a module variable may be declared (.extern) and then defined */
        if (!dc->in_func && old->kind == SYM_VAR && dvar_at(dc, old->a)->space == v->space &&
            v->space != MOD_SHARED)
            return tf__derr(dc, v->line, "unsupported: redeclaration of '%s'", v->name);
        return tf__derr(dc, v->line, "duplicate declaration of '%s'", v->name);
    }
    struct dvar d = {.name = v->name, .space = v->space, .size = size, .align = align};
    switch (v->space) {
    case MOD_GLOBAL:
    case MOD_CONST: {
        if (v->is_extern)
            return tf__derr(dc, v->line, "unsupported: .extern variable '%s' (not defined here)",
                            v->name);
        if (v->unsized)
            return tf__derr(dc, v->line, "variable '%s' has no size", v->name);
        struct tf_ptx_var mv = {.name = v->name,
                                .size = size,
                                .align = align,
                                .is_const = v->space == MOD_CONST,
                                .is_managed = v->managed,
                                .init = v->init,
                                .init_len = v->init_len};
        int sp = v->space;
        d.modvar = dc->mvars.n;
        if (vec_push(&dc->mvars, &mv, sizeof(mv)) || vec_push(&dc->mspace, &sp, sizeof(sp)))
            return oom(dc);
        break;
    }
    case MOD_SHARED:
        if (v->init)
            return tf__derr(dc, v->line, ".shared variable '%s' cannot be initialized", v->name);
        if (v->is_extern || v->unsized) {
            if (!v->unsized && !v->is_extern)
                return tf__derr(dc, v->line, "bad extern .shared '%s'", v->name);
            d.extern_shared = 1;
            if (align > dc->extern_align)
                dc->extern_align = align;
            break;
        }
        if (dc->in_func && dc->fn->is_entry) {
            d.own_shared = 1;
            dc->own_shared = (uint32_t)align_up(dc->own_shared, align);
            d.offset = dc->own_shared;
            if (dc->own_shared + size > (1u << 30))
                return tf__derr(dc, v->line, ".shared too large");
            dc->own_shared += (uint32_t)size;
        } else {
            dc->module_shared = (uint32_t)align_up(dc->module_shared, align);
            d.offset = dc->module_shared;
            if (dc->module_shared + size > (1u << 30))
                return tf__derr(dc, v->line, ".shared too large");
            dc->module_shared += (uint32_t)size;
        }
        break;
    case MOD_LOCAL:
        if (!dc->in_func)
            return tf__derr(dc, v->line, "unsupported: module-scope .local '%s'", v->name);
        if (v->init)
            return tf__derr(dc, v->line, ".local variable '%s' cannot be initialized", v->name);
        dc->local_size = (uint32_t)align_up(dc->local_size, align);
        d.offset = dc->local_size;
        if (dc->local_size + size > TF__MAX_LOCAL || v->unsized)
            return tf__derr(dc, v->line, ".local '%s' too large", v->name);
        dc->local_size += (uint32_t)size;
        break;
    case MOD_PARAM:
        /* scoped call parameters inside a body */
        if (!dc->in_func || v->init || v->unsized)
            return tf__derr(dc, v->line, "bad .param declaration '%s'", v->name);
        d.space = TF__SP_FPARAM;
        dc->param_ptr = (uint32_t)align_up(dc->param_ptr, align);
        d.offset = dc->param_ptr;
        if (dc->param_ptr + size > (1u << 16))
            return tf__derr(dc, v->line, ".param '%s' too large", v->name);
        dc->param_ptr += (uint32_t)size;
        if (dc->param_ptr > dc->param_peak)
            dc->param_peak = dc->param_ptr;
        break;
    default:
        return tf__derr(dc, v->line, "bad state space for '%s'", v->name);
    }
    if (vec_push(&dc->dvars, &d, sizeof(d)))
        return oom(dc);
    return sym_add(dc, v->name, SYM_VAR, dc->dvars.n - 1, 0, 0);
}

int tf__d_reg(struct tf__dctx *dc, uint32_t line, int ty, const char *name, int64_t count)
{
    dc->cur_line = line;
    if (!dc->in_func)
        return tf__derr(dc, line, ".reg outside a function");
    if (sym_in_scope(dc, name, scope_mark(dc)) || in_scoped_range(dc, name, scope_mark(dc)))
        return tf__derr(dc, line, "duplicate declaration of '%s'", name);
    if (ty == TY_B128 || ty == TY_F16X2 || ty == TY_BF16X2) {
        if (ty == TY_B128)
            return tf__derr(dc, line, "unsupported register type .b128 for '%s'", name);
    }
    uint32_t n = count < 0 ? 1 : (uint32_t)count;
    if (ty == TY_PRED) {
        if (dc->npreds + n > TF__MAX_SLOTS)
            return tf__derr(dc, line, "too many predicates");
        uint32_t first = dc->npreds;
        dc->npreds += n;
        return sym_add(dc, name, count < 0 ? SYM_PRED : SYM_PREDRANGE, first, n, 1);
    }
    uint32_t first = 0;
    if (new_slots(dc, n, &first))
        return -1;
    dc->nregs_declared += n;
    return sym_add(dc, name, count < 0 ? SYM_REG : SYM_REGRANGE, first, n, tf__ty_bits(ty));
}

static int label_find(struct tf__dctx *dc, const char *name)
{
    int i = dc->lbuckets[hash_str(name) % NBUCKET];
    while (i >= 0) {
        if (strcmp(VEC_AT(dc->labels, struct fixup, i).name, name) == 0)
            return i;
        i = VEC_AT(dc->lnext, int, i);
    }
    return -1;
}

int tf__d_label(struct tf__dctx *dc, uint32_t line, const char *name)
{
    if (!dc->in_func)
        return tf__derr(dc, line, "label outside a function");
    if (label_find(dc, name) >= 0)
        return tf__derr(dc, line, "duplicate label '%s'", name);
    struct fixup l = {.pc = dc->code.n, .line = line, .name = name};
    uint32_t h = hash_str(name) % NBUCKET;
    int next = dc->lbuckets[h];
    if (vec_push(&dc->labels, &l, sizeof(l)) || vec_push(&dc->lnext, &next, sizeof(next)))
        return oom(dc);
    dc->lbuckets[h] = (int)dc->labels.n - 1;
    return 0;
}

int tf__d_scope(struct tf__dctx *dc, uint32_t line, int open)
{
    (void)line;
    if (open) {
        struct scope s = {.nsyms = dc->syms.n, .param_ptr = dc->param_ptr};
        if (vec_push(&dc->scopes, &s, sizeof(s)))
            return oom(dc);
        return 0;
    }
    struct scope s = VEC_AT(dc->scopes, struct scope, dc->scopes.n - 1);
    dc->scopes.n--;
    sym_pop_to(dc, s.nsyms);
    dc->param_ptr = s.param_ptr;
    return 0;
}

static struct tf__func *cur_func(struct tf__dctx *dc)
{
    return &VEC_AT(dc->funcs, struct tf__func, dc->fidx);
}

static int layout_params(struct tf__dctx *dc, const struct tf__vardecl *ps, uint32_t n,
                         struct tf__param **out, uint32_t *ptr, int kernel)
{
    struct tf__param *arr = n ? tf__arena_alloc(&dc->mod->arena, n * sizeof(*arr)) : NULL;
    if (n && !arr)
        return oom(dc);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t size = 0;
        if (var_size(dc, &ps[i], &size))
            return -1;
        if (ps[i].unsized)
            return tf__derr(dc, ps[i].line, "parameter '%s' has no size", ps[i].name);
        uint32_t align = natural_align(&ps[i]);
        *ptr = (uint32_t)align_up(*ptr, align);
        if (*ptr + size > (kernel ? 32764u : 65536u))
            return tf__derr(dc, ps[i].line, "parameters too large at '%s'", ps[i].name);
        arr[i] = (struct tf__param){
            .name = ps[i].name, .offset = *ptr, .size = (uint32_t)size, .align = align};
        *ptr += (uint32_t)size;
    }
    *out = arr;
    return 0;
}

static int find_func(struct tf__dctx *dc, const char *name)
{
    struct sym *s = sym_find(dc, name);
    if (s && s->kind == SYM_FUNC)
        return (int)s->a;
    return -1;
}

int tf__d_func_begin(struct tf__dctx *dc, const struct tf__funcdecl *f)
{
    dc->cur_line = f->line;
    int existing = find_func(dc, f->name);
    struct sym *other = sym_find(dc, f->name);
    if (other && existing < 0)
        return tf__derr(dc, f->line, "duplicate declaration of '%s'", f->name);
    if (existing >= 0) {
        struct tf__func *old = &VEC_AT(dc->funcs, struct tf__func, existing);
        if (old->defined && f->has_body)
            return tf__derr(dc, f->line, "duplicate definition of '%s'", f->name);
        if (old->is_entry != f->is_entry || old->nparams != f->nparams || old->nrets != f->nrets)
            return tf__derr(dc, f->line, "declaration of '%s' does not match", f->name);
    }
    struct tf__func fn;
    memset(&fn, 0, sizeof(fn));
    fn.name = f->name;
    fn.is_entry = f->is_entry;
    fn.decl_line = f->line;
    fn.max_threads = f->maxntid[0] ? f->maxntid[0] * f->maxntid[1] * f->maxntid[2] : 0;
    memcpy(fn.reqntid, f->reqntid, sizeof(fn.reqntid));
    uint32_t ptr = 0;
    if (layout_params(dc, f->params, f->nparams, &fn.params, &ptr, f->is_entry))
        return -1;
    fn.nparams = f->nparams;
    if (f->is_entry) {
        fn.params_size = ptr;
        ptr = 0;
    }
    if (layout_params(dc, f->rets, f->nrets, &fn.rets, &ptr, 0))
        return -1;
    fn.nrets = f->nrets;
    uint32_t fidx;
    if (existing >= 0) {
        fidx = (uint32_t)existing;
        if (f->has_body)
            VEC_AT(dc->funcs, struct tf__func, fidx) = fn;
    } else {
        fidx = dc->funcs.n;
        if (vec_push(&dc->funcs, &fn, sizeof(fn)) || sym_add(dc, f->name, SYM_FUNC, fidx, 0, 0))
            return oom(dc);
    }
    if (!f->has_body)
        return 0;
    /* start decoding the body */
    dc->in_func = 1;
    dc->fidx = fidx;
    dc->fn = cur_func(dc);
    dc->consts.n = dc->specials.n = dc->labels.n = dc->lfix.n = dc->scopes.n = 0;
    dc->lnext.n = 0;
    for (int i = 0; i < NBUCKET; i++)
        dc->lbuckets[i] = -1;
    dc->ctags.n = dc->callees.n = 0;
    dc->nslots = dc->npreds = dc->local_size = dc->own_shared = 0;
    dc->nregs_declared = 0;
    dc->sink = dc->psink = TF__NONE;
    dc->param_ptr = dc->param_peak = ptr;
    dc->fn->entry_pc = dc->code.n;
    struct scope s = {.nsyms = dc->syms.n, .param_ptr = ptr};
    if (vec_push(&dc->scopes, &s, sizeof(s)))
        return oom(dc);
    /* parameters are names in the function scope */
    const struct tf__vardecl *lists[2] = {f->params, f->rets};
    const struct tf__param *lay[2] = {dc->fn->params, dc->fn->rets};
    uint32_t counts[2] = {f->nparams, f->nrets};
    for (int k = 0; k < 2; k++) {
        for (uint32_t i = 0; i < counts[k]; i++) {
            if (sym_in_scope(dc, lists[k][i].name, s.nsyms))
                return tf__derr(dc, lists[k][i].line, "duplicate parameter '%s'", lists[k][i].name);
            struct dvar d = {.name = lists[k][i].name,
                             .space = f->is_entry ? MOD_PARAM : TF__SP_FPARAM,
                             .size = lay[k][i].size,
                             .align = lay[k][i].align,
                             .offset = lay[k][i].offset};
            if (vec_push(&dc->dvars, &d, sizeof(d)) ||
                sym_add(dc, d.name, SYM_VAR, dc->dvars.n - 1, 0, 0))
                return oom(dc);
        }
    }
    return 0;
}

static int push_insn(struct tf__dctx *dc, const struct tf__insn *in)
{
    if (dc->code.n >= (1u << 28))
        return tf__derr(dc, in->line, "too many instructions");
    if (vec_push(&dc->code, in, sizeof(*in)))
        return oom(dc);
    return 0;
}

int tf__d_insn(struct tf__dctx *dc, struct tf__pinsn *pi)
{
    if (!dc->in_func)
        return tf__derr(dc, pi->line, "instruction outside a function");
    dc->cur_line = pi->line;
    struct tf__insn in;
    memset(&in, 0, sizeof(in));
    in.line = pi->line;
    in.text = pi->opcode;
    in.target = in.ipdom = TF__NONE;
    if (pi->guard) {
        struct tf__pop g = {.kind = PK_REG, .name = pi->guard};
        if (tf__psrc(dc, pi, &g, &in.guard))
            return -1;
        in.has_guard = 1;
        in.gneg = (uint8_t)pi->gneg;
    }
    static int (*const decoders[])(struct tf__dctx *, const struct tf__pinsn *,
                                   struct tf__insn *) = {
        tf__decode_ctl, tf__decode_int, tf__decode_float,
        tf__decode_cvt, tf__decode_mem, tf__decode_warp,
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof(decoders) / sizeof(decoders[0]) && rc == 0; i++)
        rc = decoders[i](dc, pi, &in);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return tf__unsupported(dc, pi);
    dc->fn = cur_func(dc);
    return push_insn(dc, &in);
}

int tf__d_func_end(struct tf__dctx *dc, uint32_t line)
{
    struct tf__func *fn = cur_func(dc);
    /* the terminal: every ret branches here, so all lanes reconverge before leaving */
    struct tf__insn end;
    memset(&end, 0, sizeof(end));
    end.line = line;
    end.text = fn->is_entry ? "exit" : "ret";
    end.fn = fn->is_entry ? tf__op_exit : tf__op_ret;
    end.target = end.ipdom = TF__NONE;
    uint32_t end_pc = dc->code.n;
    if (push_insn(dc, &end))
        return -1;
    fn = cur_func(dc);
    fn->end_pc = end_pc;
    struct tf__insn *code = dc->code.data;
    for (uint32_t pc = fn->entry_pc; pc < end_pc; pc++)
        if (code[pc].fn == tf__op_bra && code[pc].flags == 1)
            code[pc].target = end_pc;
    for (uint32_t i = 0; i < dc->lfix.n; i++) {
        struct fixup *f = &VEC_AT(dc->lfix, struct fixup, i);
        int j = label_find(dc, f->name);
        if (j < 0)
            return tf__derr(dc, f->line, "unknown label '%s'", f->name);
        code[f->pc].target = VEC_AT(dc->labels, struct fixup, j).pc;
    }
    if (tf__cfg_ipdom(code, fn->entry_pc, end_pc + 1))
        return tf__derr(dc, line, "out of memory");
    fn->nslots = dc->nslots;
    fn->npreds = dc->npreds;
    fn->local_size = (uint32_t)align_up(dc->local_size, 16);
    fn->param_size = (uint32_t)align_up(dc->param_peak, 8);
    fn->own_shared = dc->own_shared;
    fn->nregs_declared = dc->nregs_declared;
    fn->nconsts = dc->consts.n;
    fn->nspecials = dc->specials.n;
    if (fn->nconsts) {
        fn->consts = tf__arena_alloc(&dc->mod->arena, fn->nconsts * sizeof(struct tf__const));
        if (!fn->consts)
            return oom(dc);
        memcpy(fn->consts, dc->consts.data, fn->nconsts * sizeof(struct tf__const));
    }
    if (fn->nspecials) {
        fn->specials = tf__arena_alloc(&dc->mod->arena, fn->nspecials * sizeof(struct tf__special));
        if (!fn->specials)
            return oom(dc);
        memcpy(fn->specials, dc->specials.data, fn->nspecials * sizeof(struct tf__special));
    }
    fn->defined = 1;
    sym_pop_to(dc, VEC_AT(dc->scopes, struct scope, 0).nsyms);
    dc->scopes.n = 0;
    dc->in_func = 0;
    return 0;
}

/* ---- finish ---- */

/* Local bytes a thread needs in FIDX and its deepest callee chain; recursion (a function on
 * the DFS path again) reserves TF__DEFAULT_STACK. */
static uint32_t stack_need(struct tf__dctx *dc, uint32_t fidx, uint8_t *state, uint32_t depth)
{
    struct tf__func *fn = &VEC_AT(dc->funcs, struct tf__func, fidx);
    if (state[fidx] == 2)
        return fn->stack_need;
    if (state[fidx] == 1 || depth > 64)
        return TF__DEFAULT_STACK;
    state[fidx] = 1;
    uint32_t deepest = 0;
    for (uint32_t i = 0; i < fn->ncallees; i++) {
        uint32_t s = stack_need(dc, fn->callees[i], state, depth + 1);
        if (s > deepest)
            deepest = s;
    }
    uint64_t need = (uint64_t)fn->local_size + deepest;
    fn->stack_need = need > TF__MAX_LOCAL ? TF__MAX_LOCAL : (uint32_t)need;
    state[fidx] = 2;
    return fn->stack_need;
}

int tf__d_finish(struct tf__dctx *dc)
{
    struct tf_ptx_module *mod = dc->mod;
    struct tf__insn *code = dc->code.data;
    struct tf__func *funcs = dc->funcs.data;
    /* calls */
    for (uint32_t i = 0; i < dc->callfix.n; i++) {
        struct fixup *f = &VEC_AT(dc->callfix, struct fixup, i);
        int callee = find_func(dc, f->name);
        if (callee < 0)
            return tf__derr(dc, f->line, "call to unknown function '%s'", f->name);
        struct tf__func *cf = &funcs[callee];
        if (!cf->defined)
            return tf__derr(dc, f->line, "call to undefined function '%s'", f->name);
        if (cf->is_entry)
            return tf__derr(dc, f->line, "call to kernel '%s'", f->name);
        struct tf__call *c = (struct tf__call *)code[f->pc].aux;
        if (c->nargs != cf->nparams || c->nrets != cf->nrets)
            return tf__derr(dc, f->line, "call to '%s' with wrong number of parameters", f->name);
        for (uint32_t j = 0; j < c->nargs; j++)
            if (c->arg_size[j] != cf->params[j].size)
                return tf__derr(dc, f->line, "call to '%s': parameter %u size mismatch", f->name,
                                j);
        for (uint32_t j = 0; j < c->nrets; j++)
            if (c->ret_size[j] != cf->rets[j].size)
                return tf__derr(dc, f->line, "call to '%s': result %u size mismatch", f->name, j);
        c->callee = (uint32_t)callee;
    }
    /* call graph (distinct callees per function) */
    for (uint32_t fi = 0; fi < dc->funcs.n; fi++) {
        struct tf__func *fn = &funcs[fi];
        if (!fn->defined)
            continue;
        uint32_t n = 0;
        for (uint32_t pc = fn->entry_pc; pc < fn->end_pc; pc++)
            if (code[pc].fn == tf__op_call)
                n++;
        if (!n)
            continue;
        fn->callees = tf__arena_alloc(&mod->arena, n * sizeof(uint32_t));
        if (!fn->callees)
            return oom(dc);
        for (uint32_t pc = fn->entry_pc; pc < fn->end_pc; pc++) {
            if (code[pc].fn != tf__op_call)
                continue;
            uint32_t ce = ((const struct tf__call *)code[pc].aux)->callee;
            uint32_t k = 0;
            while (k < fn->ncallees && fn->callees[k] != ce)
                k++;
            if (k == fn->ncallees)
                fn->callees[fn->ncallees++] = ce;
        }
    }
    uint8_t *state = calloc(dc->funcs.n ? dc->funcs.n : 1, 1);
    if (!state)
        return oom(dc);
    for (uint32_t fi = 0; fi < dc->funcs.n; fi++)
        if (funcs[fi].defined)
            stack_need(dc, fi, state, 0);
    free(state);
    /* per entry: the module variables its call tree references (checked at launch) */
    uint8_t *fseen = calloc(dc->funcs.n ? dc->funcs.n : 1, 1);
    uint8_t *vseen = calloc(dc->mvars.n ? dc->mvars.n : 1, 1);
    uint32_t *stack = calloc(dc->funcs.n ? dc->funcs.n : 1, sizeof(uint32_t));
    int failed = !fseen || !vseen || !stack;
    for (uint32_t fi = 0; fi < dc->funcs.n && !failed; fi++) {
        struct tf__func *fn = &funcs[fi];
        if (!fn->is_entry || !fn->defined)
            continue;
        memset(fseen, 0, dc->funcs.n);
        memset(vseen, 0, dc->mvars.n ? dc->mvars.n : 1);
        uint32_t sp = 0, nused = 0;
        stack[sp++] = fi;
        fseen[fi] = 1;
        while (sp) {
            struct tf__func *f = &funcs[stack[--sp]];
            for (uint32_t c = 0; c < f->ncallees; c++)
                if (!fseen[f->callees[c]]) {
                    fseen[f->callees[c]] = 1;
                    stack[sp++] = f->callees[c];
                }
        }
        for (uint32_t r = 0; r < dc->relocs.n; r++) {
            struct tf__reloc *rl = &VEC_AT(dc->relocs, struct tf__reloc, r);
            if (fseen[rl->func] && !vseen[rl->var]) {
                vseen[rl->var] = 1;
                nused++;
            }
        }
        if (!nused)
            continue;
        fn->vars_used = tf__arena_alloc(&mod->arena, nused * sizeof(uint32_t));
        failed = !fn->vars_used;
        for (uint32_t v = 0; v < dc->mvars.n && !failed; v++)
            if (vseen[v])
                fn->vars_used[fn->nvars_used++] = v;
    }
    free(fseen);
    free(vseen);
    free(stack);
    if (failed)
        return oom(dc);
    /* .shared: module region first, then each entry's own */
    uint32_t mshared = (uint32_t)align_up(dc->module_shared, 16);
    for (uint32_t i = 0; i < dc->cfixes.n; i++) {
        struct cfix *f = &VEC_AT(dc->cfixes, struct cfix, i);
        funcs[f->func].consts[f->cidx].value += mshared;
    }
    mod->module_shared = mshared;
    mod->extern_align = dc->extern_align;
    /* hand over */
    mod->ncode = dc->code.n;
    mod->code = tf__arena_alloc(&mod->arena,
                                (size_t)(mod->ncode ? mod->ncode : 1) * sizeof(struct tf__insn));
    mod->nfuncs = dc->funcs.n;
    mod->funcs = tf__arena_alloc(&mod->arena,
                                 (size_t)(mod->nfuncs ? mod->nfuncs : 1) * sizeof(struct tf__func));
    mod->nvars = dc->mvars.n;
    mod->vars = tf__arena_alloc(&mod->arena,
                                (size_t)(mod->nvars ? mod->nvars : 1) * sizeof(struct tf_ptx_var));
    mod->var_addr = tf__arena_alloc(&mod->arena, (size_t)(mod->nvars ? mod->nvars : 1) * 8);
    mod->var_bound = tf__arena_alloc(&mod->arena, mod->nvars ? mod->nvars : 1);
    mod->var_space =
        tf__arena_alloc(&mod->arena, (size_t)(mod->nvars ? mod->nvars : 1) * sizeof(int));
    mod->nrelocs = dc->relocs.n;
    mod->relocs = tf__arena_alloc(&mod->arena, (size_t)(mod->nrelocs ? mod->nrelocs : 1) *
                                                   sizeof(struct tf__reloc));
    uint32_t nk = 0;
    for (uint32_t fi = 0; fi < dc->funcs.n; fi++)
        nk += funcs[fi].is_entry && funcs[fi].defined;
    mod->kernels =
        tf__arena_alloc(&mod->arena, (size_t)(nk ? nk : 1) * sizeof(struct tf_ptx_kernel));
    if (!mod->code || !mod->funcs || !mod->vars || !mod->var_addr || !mod->var_bound ||
        !mod->var_space || !mod->relocs || !mod->kernels)
        return oom(dc);
    if (mod->ncode)
        memcpy(mod->code, code, mod->ncode * sizeof(struct tf__insn));
    if (mod->nfuncs)
        memcpy(mod->funcs, funcs, mod->nfuncs * sizeof(struct tf__func));
    if (mod->nvars) {
        memcpy(mod->vars, dc->mvars.data, mod->nvars * sizeof(struct tf_ptx_var));
        memcpy(mod->var_space, dc->mspace.data, mod->nvars * sizeof(int));
    }
    if (mod->nrelocs)
        memcpy(mod->relocs, dc->relocs.data, mod->nrelocs * sizeof(struct tf__reloc));
    for (uint32_t fi = 0; fi < mod->nfuncs; fi++) {
        if (mod->funcs[fi].is_entry && mod->funcs[fi].defined) {
            mod->kernels[mod->nkernels].mod = mod;
            mod->kernels[mod->nkernels].func = fi;
            mod->nkernels++;
        }
    }
    return 0;
}
