/* SPDX-License-Identifier: Apache-2.0
 *
 * Control flow and synchronisation: bra (divergence with reconvergence at the immediate
 * post-dominator), ret (a branch to the function's terminal, so every lane leaves a function
 * together), exit, trap/brkpt, call (frames in exec.c), bar/barrier (.sync, .arrive, .red
 * popc/and/or, named barriers with thread counts), bar.warp.sync, membar/fence and nanosleep
 * (no-ops: a launch runs on one host thread, warps in lockstep).
 */
#include "sim/ptx/internal.h"

void tf__bar_check(struct tf__run *run, uint32_t id);

int tf__op_bra(struct tf__warp *w, const struct tf__insn *in, uint32_t m)
{
    if (m == w->active) {
        w->pc = in->target;
        return TF__GO;
    }
    tf__diverge(w, in->target, m, w->pc, in->ipdom);
    return TF__GO;
}

int tf__op_exit(struct tf__warp *w, const struct tf__insn *in, uint32_t m)
{
    (void)in;
    w->alive &= ~m;
    w->active &= ~m;
    return TF__GO;
}

int tf__op_ret(struct tf__warp *w, const struct tf__insn *in, uint32_t m)
{
    return tf__call_return(w, in, m);
}

int tf__op_call(struct tf__warp *w, const struct tf__insn *in, uint32_t m)
{
    return tf__call_enter(w, in, m);
}

TF__OP(op_trap)
{
    return tf__fault(w, in, __builtin_ctz(m), TF_PTX_TRAP, 0, NULL);
}

TF__OP(op_nop)
{
    (void)w;
    (void)in;
    (void)m;
    return TF__GO;
}

/* bar.sync / bar.arrive / bar.red. a: barrier id slot, b: thread count slot or TF__NONE,
 * flags: 0 sync/arrive, 1 red.popc, 2 red.and, 3 red.or; w1: 1 for arrive; c/sub: the
 * predicate operand of .red and its negation. */
TF__OP(op_bar)
{
    struct tf__run *run = w->run;
    int l0 = __builtin_ctz(m);
    uint64_t id = w->r[in->a + (uint32_t)l0];
    if (id >= 16)
        return tf__fault(w, in, l0, TF_PTX_ILLEGAL_ADDRESS, id, "barrier id out of range");
    struct tf__barrier *b = &run->bar[id];
    if (in->b != TF__NONE) {
        uint64_t cnt = w->r[in->b + (uint32_t)l0];
        if (cnt == 0 || cnt % TF__WARP || cnt > run->nthreads + TF__WARP)
            return tf__fault(w, in, l0, TF_PTX_ILLEGAL_ADDRESS, cnt, "bad barrier thread count");
        b->expected = (uint32_t)cnt;
    }
    b->arrived += w->nlanes;
    if (in->flags) {
        uint32_t pr = w->p[in->c];
        if (in->sub)
            pr = ~pr;
        pr &= m;
        b->red_popc += (uint32_t)__builtin_popcount(pr);
        if (pr != m)
            b->red_and = 0;
        if (pr)
            b->red_or = 1;
    }
    if (in->w1) {
        tf__bar_check(run, (uint32_t)id);
        return TF__GO;
    }
    w->state = WS_BARRIER;
    w->bar_id = (uint32_t)id;
    w->bar_insn = in;
    w->bar_mask = m;
    b->waiting++;
    tf__bar_check(run, (uint32_t)id);
    return TF__STOP_BARRIER;
}

static int decode_bar(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in)
{
    static const int ok[] = {MOD_SYNC, MOD_ARRIVE,  MOD_RED,  MOD_POPC,        MOD_AND,
                             MOD_OR,   MOD_ALIGNED, MOD_WARP, MOD_IGNORED_MEM, MOD_NONE};
    struct tf__mods md;
    if (tf__mods(dc, pi, ok, &md))
        return -1;
    if (tf__has(&md, MOD_WARP)) {
        /* bar.warp.sync membermask: lanes of a warp run in lockstep here */
        if (!tf__has(&md, MOD_SYNC) || md.nt || tf__opcount(dc, pi, 1, 1) ||
            strcmp(pi->base, "bar"))
            return md.nt || !tf__has(&md, MOD_SYNC) ? tf__unsupported(dc, pi) : -1;
        uint32_t s;
        if (tf__src(dc, pi, &pi->ops[0], TY_B32, &s))
            return -1;
        in->fn = op_nop;
        return 1;
    }
    int sync = tf__has(&md, MOD_SYNC), arrive = tf__has(&md, MOD_ARRIVE),
        red = tf__has(&md, MOD_RED);
    if (sync + arrive + red != 1)
        return tf__unsupported(dc, pi);
    uint32_t first = 0;
    if (red) {
        int popc = tf__has(&md, MOD_POPC), a = tf__has(&md, MOD_AND), o = tf__has(&md, MOD_OR);
        if (popc + a + o != 1 || md.nt != 1 || (popc && md.t[0] != TY_U32) ||
            (!popc && md.t[0] != TY_PRED))
            return tf__unsupported(dc, pi);
        in->flags = (uint8_t)(popc ? 1 : a ? 2 : 3);
        if (tf__opcount(dc, pi, 3, 4))
            return -1;
        if (popc) {
            if (tf__dst(dc, pi, &pi->ops[0], &in->d[0], NULL))
                return -1;
        } else if (pi->ops[0].kind != PK_REG || tf__pdst(dc, pi, pi->ops[0].name, &in->d[0])) {
            return pi->ops[0].kind != PK_REG ? tf__derr(dc, pi->line, "bad operand") : -1;
        }
        const struct tf__pop *p = &pi->ops[pi->nops - 1];
        if (tf__psrc(dc, pi, p, &in->c))
            return -1;
        in->sub = p->neg;
        first = 1;
    } else {
        if (md.nt || tf__has(&md, MOD_POPC) || tf__has(&md, MOD_AND) || tf__has(&md, MOD_OR))
            return tf__unsupported(dc, pi);
        if (tf__opcount(dc, pi, arrive ? 2 : 1, 2))
            return -1;
        in->w1 = (uint8_t)arrive;
    }
    uint32_t nargs = pi->nops - first - (red ? 1 : 0);
    if (nargs < 1 || nargs > 2)
        return tf__derr(dc, pi->line, "wrong number of operands for '%s'", pi->opcode);
    if (tf__src(dc, pi, &pi->ops[first], TY_U32, &in->a))
        return -1;
    in->b = TF__NONE;
    if (nargs == 2 && tf__src(dc, pi, &pi->ops[first + 1], TY_U32, &in->b))
        return -1;
    in->fn = op_bar;
    return 1;
}

int tf__decode_ctl(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in)
{
    const char *b = pi->base;
    struct tf__mods md;
    static const int uni_ok[] = {MOD_UNI, MOD_NONE};
    static const int none_ok[] = {MOD_NONE};
    if (!strcmp(b, "bra")) {
        if (tf__mods(dc, pi, uni_ok, &md))
            return -1;
        if (md.nt || tf__opcount(dc, pi, 1, 1))
            return md.nt ? tf__unsupported(dc, pi) : -1;
        in->fn = tf__op_bra;
        in->cf = CF_BRA;
        return tf__label_ref(dc, pi, &pi->ops[0], 0) ? -1 : 1;
    }
    if (!strcmp(b, "ret")) {
        if (tf__mods(dc, pi, uni_ok, &md))
            return -1;
        if (md.nt || tf__opcount(dc, pi, 0, 0))
            return md.nt ? tf__unsupported(dc, pi) : -1;
        /* a branch to the terminal, patched when the function ends */
        in->fn = tf__op_bra;
        in->cf = CF_BRA;
        in->flags = 1;
        return 1;
    }
    if (!strcmp(b, "exit")) {
        if (tf__mods(dc, pi, none_ok, &md))
            return -1;
        if (md.nt || tf__opcount(dc, pi, 0, 0))
            return md.nt ? tf__unsupported(dc, pi) : -1;
        in->fn = tf__op_exit;
        in->cf = CF_END;
        return 1;
    }
    if (!strcmp(b, "trap") || !strcmp(b, "brkpt")) {
        if (tf__mods(dc, pi, none_ok, &md))
            return -1;
        if (md.nt || tf__opcount(dc, pi, 0, 0))
            return md.nt ? tf__unsupported(dc, pi) : -1;
        in->fn = op_trap;
        in->cf = CF_END;
        return 1;
    }
    if (!strcmp(b, "call")) {
        if (tf__mods(dc, pi, uni_ok, &md))
            return -1;
        if (md.nt)
            return tf__unsupported(dc, pi);
        return tf__call_decode(dc, pi, in);
    }
    if (!strcmp(b, "bar") || !strcmp(b, "barrier"))
        return decode_bar(dc, pi, in);
    if (!strcmp(b, "membar") || !strcmp(b, "fence")) {
        static const int ok[] = {MOD_IGNORED_MEM, MOD_NONE};
        if (tf__mods(dc, pi, ok, &md))
            return -1;
        if (md.nt || tf__opcount(dc, pi, 0, 0))
            return md.nt ? tf__unsupported(dc, pi) : -1;
        in->fn = op_nop;
        return 1;
    }
    /* griddepcontrol.wait / .launch_dependents (sm_90 programmatic dependent launch,
     * cudaGridDependencySynchronize): kernels here run one after another in stream order, so
     * the grids a kernel depends on are complete when it starts and there is nothing to wait
     * for or to release early. */
    if (!strcmp(b, "griddepcontrol")) {
        if (pi->nmods != 1 ||
            (strcmp(pi->mods[0], "wait") && strcmp(pi->mods[0], "launch_dependents")))
            return tf__unsupported(dc, pi);
        if (tf__opcount(dc, pi, 0, 0))
            return -1;
        in->fn = op_nop;
        return 1;
    }
    if (!strcmp(b, "nanosleep")) {
        if (tf__mods(dc, pi, none_ok, &md))
            return -1;
        uint32_t s;
        if (md.nt != 1 || md.t[0] != TY_U32 || tf__opcount(dc, pi, 1, 1))
            return md.nt != 1 || md.t[0] != TY_U32 ? tf__unsupported(dc, pi) : -1;
        if (tf__src(dc, pi, &pi->ops[0], TY_U32, &s))
            return -1;
        in->fn = op_nop;
        return 1;
    }
    return 0;
}
