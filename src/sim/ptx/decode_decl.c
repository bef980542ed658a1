/* SPDX-License-Identifier: Apache-2.0
 *
 * The PTX decoder's declarations (decode_int.h): variables and their layout, registers,
 * labels, scopes, functions and their parameters, each instruction handed to its family
 * decoder, and finishing a module: calls resolved, .shared laid out, stack needs computed and
 * each function handed to cfg.c for its reconvergence points.
 */
#include "sim/ptx/decode_int.h"

#include "common/strutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    uint32_t mark = dc->in_func ? tf__scope_mark(dc) : 0;
    if (tf__sym_in_scope(dc, v->name, mark)) {
        struct sym *old = tf__sym_find(dc, v->name);
        /* a module variable may be declared (.extern) and then defined */
        if (!dc->in_func && old->kind == SYM_VAR && tf__dvar_at(dc, old->a)->space == v->space &&
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
        if (tf__vec_push(&dc->mvars, &mv, sizeof(mv)) || tf__vec_push(&dc->mspace, &sp, sizeof(sp)))
            return tf__d_oom(dc);
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
    if (tf__vec_push(&dc->dvars, &d, sizeof(d)))
        return tf__d_oom(dc);
    return tf__sym_add(dc, v->name, SYM_VAR, dc->dvars.n - 1, 0, 0);
}

int tf__d_reg(struct tf__dctx *dc, uint32_t line, int ty, const char *name, int64_t count)
{
    dc->cur_line = line;
    if (!dc->in_func)
        return tf__derr(dc, line, ".reg outside a function");
    if (tf__sym_in_scope(dc, name, tf__scope_mark(dc)) ||
        tf__in_scoped_range(dc, name, tf__scope_mark(dc)))
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
        return tf__sym_add(dc, name, count < 0 ? SYM_PRED : SYM_PREDRANGE, first, n, 1);
    }
    uint32_t first = 0;
    if (tf__new_slots(dc, n, &first))
        return -1;
    dc->nregs_declared += n;
    return tf__sym_add(dc, name, count < 0 ? SYM_REG : SYM_REGRANGE, first, n, tf__ty_bits(ty));
}

static int label_find(struct tf__dctx *dc, const char *name)
{
    int i = dc->lbuckets[tf__hash_str(name) % NBUCKET];
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
    uint32_t h = tf__hash_str(name) % NBUCKET;
    int next = dc->lbuckets[h];
    if (tf__vec_push(&dc->labels, &l, sizeof(l)) || tf__vec_push(&dc->lnext, &next, sizeof(next)))
        return tf__d_oom(dc);
    dc->lbuckets[h] = (int)dc->labels.n - 1;
    return 0;
}

int tf__d_scope(struct tf__dctx *dc, uint32_t line, int open)
{
    (void)line;
    if (open) {
        struct scope s = {.nsyms = dc->syms.n, .param_ptr = dc->param_ptr};
        if (tf__vec_push(&dc->scopes, &s, sizeof(s)))
            return tf__d_oom(dc);
        return 0;
    }
    struct scope s = VEC_AT(dc->scopes, struct scope, dc->scopes.n - 1);
    dc->scopes.n--;
    tf__sym_pop_to(dc, s.nsyms);
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
        return tf__d_oom(dc);
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
    struct sym *s = tf__sym_find(dc, name);
    if (s && s->kind == SYM_FUNC)
        return (int)s->a;
    return -1;
}

int tf__d_func_begin(struct tf__dctx *dc, const struct tf__funcdecl *f)
{
    dc->cur_line = f->line;
    int existing = find_func(dc, f->name);
    struct sym *other = tf__sym_find(dc, f->name);
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
        if (tf__vec_push(&dc->funcs, &fn, sizeof(fn)) ||
            tf__sym_add(dc, f->name, SYM_FUNC, fidx, 0, 0))
            return tf__d_oom(dc);
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
    if (tf__vec_push(&dc->scopes, &s, sizeof(s)))
        return tf__d_oom(dc);
    /* parameters are names in the function scope */
    const struct tf__vardecl *lists[2] = {f->params, f->rets};
    const struct tf__param *lay[2] = {dc->fn->params, dc->fn->rets};
    uint32_t counts[2] = {f->nparams, f->nrets};
    for (int k = 0; k < 2; k++) {
        for (uint32_t i = 0; i < counts[k]; i++) {
            if (tf__sym_in_scope(dc, lists[k][i].name, s.nsyms))
                return tf__derr(dc, lists[k][i].line, "duplicate parameter '%s'", lists[k][i].name);
            struct dvar d = {.name = lists[k][i].name,
                             .space = f->is_entry ? MOD_PARAM : TF__SP_FPARAM,
                             .size = lay[k][i].size,
                             .align = lay[k][i].align,
                             .offset = lay[k][i].offset};
            if (tf__vec_push(&dc->dvars, &d, sizeof(d)) ||
                tf__sym_add(dc, d.name, SYM_VAR, dc->dvars.n - 1, 0, 0))
                return tf__d_oom(dc);
        }
    }
    return 0;
}

static int push_insn(struct tf__dctx *dc, const struct tf__insn *in)
{
    if (dc->code.n >= (1u << 28))
        return tf__derr(dc, in->line, "too many instructions");
    if (tf__vec_push(&dc->code, in, sizeof(*in)))
        return tf__d_oom(dc);
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
            return tf__d_oom(dc);
        memcpy(fn->consts, dc->consts.data, fn->nconsts * sizeof(struct tf__const));
    }
    if (fn->nspecials) {
        fn->specials = tf__arena_alloc(&dc->mod->arena, fn->nspecials * sizeof(struct tf__special));
        if (!fn->specials)
            return tf__d_oom(dc);
        memcpy(fn->specials, dc->specials.data, fn->nspecials * sizeof(struct tf__special));
    }
    fn->defined = 1;
    tf__sym_pop_to(dc, VEC_AT(dc->scopes, struct scope, 0).nsyms);
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
        struct tf__call *vc = (struct tf__call *)code[f->pc].aux;
        if (!cf->defined && !strcmp(f->name, "vprintf") && vc->nargs == 2 && vc->arg_size[0] == 8 &&
            vc->arg_size[1] == 8 && (vc->nrets == 0 || (vc->nrets == 1 && vc->ret_size[0] == 4))) {
            code[f->pc].fn = tf__op_vprintf; /* device printf, done by the driver */
            continue;
        }
        if (!cf->defined && !strcmp(f->name, "__assertfail") && vc->nargs == 5 &&
            vc->arg_size[0] == 8 && vc->arg_size[1] == 8 && vc->arg_size[2] == 4 &&
            vc->arg_size[3] == 8 && vc->nrets == 0) {
            code[f->pc].fn = tf__op_assertfail; /* device assert(), done by the driver */
            code[f->pc].cf = CF_END;
            continue;
        }
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
            return tf__d_oom(dc);
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
        return tf__d_oom(dc);
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
        return tf__d_oom(dc);
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
        return tf__d_oom(dc);
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
