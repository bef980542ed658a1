/* SPDX-License-Identifier: Apache-2.0
 *
 * The PTX decoder (see decode.h), its context and operands: scoped names (registers,
 * variables, functions), register slot allocation, immediates/special registers/symbol
 * addresses as frame-initialised slots, labels and calls. Types and modifiers are in
 * decode_types.c; declarations, the dispatch of each instruction to the family decoders in
 * ops_*.c and finishing a module (calls resolved, .shared laid out, stack needs, cfg.c's
 * reconvergence points) in decode_decl.c.
 */
#include "sim/ptx/decode_int.h"

#include "common/strutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tf__vec_push(struct vec *v, const void *item, size_t sz)
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

struct tf__arena *tf__d_arena(struct tf__dctx *dc)
{
    return &dc->mod->arena;
}

uint32_t tf__hash_str(const char *s)
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

int tf__d_oom(struct tf__dctx *dc)
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

int tf__sym_add(struct tf__dctx *dc, const char *name, int kind, uint32_t a, uint32_t count,
                unsigned bits)
{
    struct sym s = {
        .name = name, .kind = (uint8_t)kind, .bits = (uint8_t)bits, .a = a, .count = count};
    s.bucket = tf__hash_str(name) % NBUCKET;
    s.next = dc->buckets[s.bucket];
    if (tf__vec_push(&dc->syms, &s, sizeof(s)))
        return tf__d_oom(dc);
    dc->buckets[s.bucket] = (int)dc->syms.n - 1;
    return 0;
}

struct sym *tf__sym_find(struct tf__dctx *dc, const char *name)
{
    int i = dc->buckets[tf__hash_str(name) % NBUCKET];
    while (i >= 0) {
        struct sym *s = &VEC_AT(dc->syms, struct sym, i);
        if (strcmp(s->name, name) == 0)
            return s;
        i = s->next;
    }
    return NULL;
}

/* Finds NAME in the innermost scope holding it only when it was added at or after MARK. */
int tf__sym_in_scope(struct tf__dctx *dc, const char *name, uint32_t mark)
{
    int i = dc->buckets[tf__hash_str(name) % NBUCKET];
    while (i >= 0 && (uint32_t)i >= mark) {
        struct sym *s = &VEC_AT(dc->syms, struct sym, i);
        if (strcmp(s->name, name) == 0)
            return 1;
        i = s->next;
    }
    return 0;
}

/* Whether NAME (prefix + number) falls in a NAME<N> range declared at or after MARK. */
int tf__in_scoped_range(struct tf__dctx *dc, const char *name, uint32_t mark)
{
    size_t n = strlen(name), d = n;
    while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
        d--;
    if (d == n || d == 0 || n - d > 9 || d >= 64)
        return 0;
    char prefix[64];
    memcpy(prefix, name, d);
    prefix[d] = 0;
    int i = dc->buckets[tf__hash_str(prefix) % NBUCKET];
    while (i >= 0 && (uint32_t)i >= mark) {
        struct sym *s = &VEC_AT(dc->syms, struct sym, i);
        if (strcmp(s->name, prefix) == 0)
            return (s->kind == SYM_REGRANGE || s->kind == SYM_PREDRANGE) &&
                   strtoul(name + d, NULL, 10) < s->count;
        i = s->next;
    }
    return 0;
}

void tf__sym_pop_to(struct tf__dctx *dc, uint32_t n)
{
    while (dc->syms.n > n) {
        struct sym *s = &VEC_AT(dc->syms, struct sym, dc->syms.n - 1);
        dc->buckets[s->bucket] = s->next;
        dc->syms.n--;
    }
}

uint32_t tf__scope_mark(struct tf__dctx *dc)
{
    return dc->scopes.n ? VEC_AT(dc->scopes, struct scope, dc->scopes.n - 1).nsyms : 0;
}

/* Register lookup: exact name, else a NAME<N> range holding it. */
static struct sym *reg_find(struct tf__dctx *dc, const char *name, uint32_t *index)
{
    struct sym *s = tf__sym_find(dc, name);
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
    s = tf__sym_find(dc, prefix);
    if (!s || (s->kind != SYM_REGRANGE && s->kind != SYM_PREDRANGE))
        return NULL;
    uint32_t idx = (uint32_t)strtoul(name + d, NULL, 10);
    if (idx >= s->count)
        return NULL;
    *index = idx;
    return s;
}

/* ---- slots ---- */

int tf__new_slots(struct tf__dctx *dc, uint32_t n, uint32_t *first)
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
    if (tf__new_slots(dc, 1, &s))
        return -1;
    struct tf__const c = {.slot = s, .value = v};
    uint8_t t = (uint8_t)tag;
    if (tf__vec_push(&dc->consts, &c, sizeof(c)) || tf__vec_push(&dc->ctags, &t, 1))
        return tf__d_oom(dc);
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
    if (tf__new_slots(dc, 1, &s))
        return -1;
    struct tf__special sp = {.slot = s, .kind = kind, .arg = arg};
    if (tf__vec_push(&dc->specials, &sp, sizeof(sp)))
        return tf__d_oom(dc);
    *slot = s * TF__WARP;
    return 0;
}

uint32_t tf__sink(struct tf__dctx *dc)
{
    if (dc->sink == TF__NONE) {
        uint32_t s = 0;
        if (tf__new_slots(dc, 1, &s))
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

struct dvar *tf__dvar_at(struct tf__dctx *dc, uint32_t i)
{
    return &VEC_AT(dc->dvars, struct dvar, i);
}

/* A slot holding the address of variable V plus ADDEND (window address for .shared/.local,
 * device address for .global/.const, launch-buffer offset for kernel params). */
static int var_slot(struct tf__dctx *dc, uint32_t line, struct dvar *v, int64_t addend,
                    uint32_t *slot)
{
    uint32_t cidx = 0;
    switch (v->space) {
    case MOD_GLOBAL:
    case MOD_CONST: {
        if (new_const(dc, (uint64_t)addend, 1, slot, &cidx))
            return -1;
        struct tf__reloc r = {.func = dc->fidx, .cidx = cidx, .var = v->modvar, .addend = addend};
        if (tf__vec_push(&dc->relocs, &r, sizeof(r)))
            return tf__d_oom(dc);
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
            if (tf__vec_push(&dc->cfixes, &f, sizeof(f)))
                return tf__d_oom(dc);
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
        return var_slot(dc, pi->line, tf__dvar_at(dc, s->a), op->imm, slot);
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
    struct dvar *v = tf__dvar_at(dc, s->a);
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
    if (tf__vec_push(&dc->lfix, &f, sizeof(f)))
        return tf__d_oom(dc);
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
        return tf__d_oom(dc);
    c->callee = TF__NONE;
    c->callee_name = fn->name;
    const struct tf__pop *lists[2] = {rets, args};
    for (int k = 0; k < 2; k++) {
        const struct tf__pop *l = lists[k];
        uint32_t n = l ? l->n : 0;
        uint32_t *off = n ? tf__arena_alloc(&dc->mod->arena, n * sizeof(uint32_t)) : NULL;
        uint32_t *size = n ? tf__arena_alloc(&dc->mod->arena, n * sizeof(uint32_t)) : NULL;
        if (n && (!off || !size))
            return tf__d_oom(dc);
        for (uint32_t j = 0; j < n; j++) {
            const struct tf__pop *e = &l->elems[j];
            struct sym *ps = e->kind == PK_REG ? tf__sym_find(dc, e->name) : NULL;
            if (!ps || ps->kind != SYM_VAR || tf__dvar_at(dc, ps->a)->space != TF__SP_FPARAM ||
                e->imm)
                return tf__derr(dc, pi->line, "call %s must be .param variables",
                                k ? "arguments" : "results");
            off[j] = (uint32_t)tf__dvar_at(dc, ps->a)->offset;
            size[j] = (uint32_t)tf__dvar_at(dc, ps->a)->size;
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
    if (tf__vec_push(&dc->callfix, &f, sizeof(f)))
        return tf__d_oom(dc);
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
