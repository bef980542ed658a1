/* SPDX-License-Identifier: Apache-2.0
 *
 * Asynchronous copies from global to shared memory (sm_80: cp.async, what
 * cooperative_groups::memcpy_async, cuda::memcpy_async and CUTLASS's pipelines emit):
 *   cp.async.{ca,cg}.shared{::cta}.global{.L2::cache_hint}{.L2::64B/128B/256B}
 *       [dst], [src], cp-size{, src-size | , ignore-src}{, cache-policy};
 *   cp.async.commit_group; cp.async.wait_group N; cp.async.wait_all.
 * The copy is done when the instruction runs: a copy that completed early is one the program
 * may only observe after its wait anyway, so the groups and waits have nothing left to do.
 * src-size bytes (all, when absent; none with ignore-src true) come from global memory and the
 * rest of the cp-size bytes are zeros, as the ISA says. Bulk copies (cp.async.bulk, the tensor
 * memory accelerator) and the mbarrier forms are refused at load.
 */
#include "sim/ptx/internal.h"

#include <string.h>

/* in->a / in->imm: the .shared destination; in->b / in->mask2: the global source; in->esize:
 * cp-size; in->c: src-size (TF__NONE: cp-size) or, with in->flags 1, the ignore-src
 * predicate (negated with in->sub). */
TF__OP(cp_async)
{
    struct tf__run *run = w->run;
    const uint64_t *pd = TF__R(in->a), *ps = TF__R(in->b);
    const uint64_t *pn = in->c != TF__NONE && !in->flags ? TF__R(in->c) : NULL;
    uint32_t total = in->esize, ign = in->flags ? w->p[in->c] ^ (in->sub ? ~0u : 0u) : 0;
    for (uint32_t mm = m; mm; mm &= mm - 1) {
        int l = __builtin_ctz(mm);
        uint64_t a = pd[l] + (uint64_t)in->imm, s = ps[l] + in->mask2;
        if ((a | s) & (total - 1))
            return tf__fault(w, in, l, TF_PTX_MISALIGNED_ADDRESS, a & (total - 1) ? a : s,
                             "cp.async");
        if (a >= run->shared_size || run->shared_size - a < total)
            return tf__fault(w, in, l, TF_PTX_ILLEGAL_ADDRESS, a, ".shared window");
        uint32_t n = (ign >> l) & 1 ? 0 : pn ? (uint32_t)pn[l] : total;
        if (n > total)
            n = total; /* the ISA leaves it undefined; no more than the destination holds */
        uint8_t *dst = run->shared + a;
        if (n) {
            const uint8_t *src = tf__gmem(w, in, l, s, n, 0);
            if (!src)
                return TF__STOP_FAULT;
            memcpy(dst, src, n);
        }
        memset(dst + n, 0, total - n);
    }
    return TF__GO;
}

TF__OP(cp_async_nop)
{
    (void)w;
    (void)in;
    (void)m;
    return TF__GO;
}

int tf__decode_cp_async(struct tf__dctx *dc, const struct tf__pinsn *pi, struct tf__insn *in)
{
    if (pi->nmods < 2 || strcmp(pi->mods[0], "async"))
        return tf__unsupported(dc, pi);
    const char *k = pi->mods[1];
    if (pi->nmods == 2 && (!strcmp(k, "commit_group") || !strcmp(k, "wait_all"))) {
        if (tf__opcount(dc, pi, 0, 0))
            return -1;
        in->fn = cp_async_nop;
        return 1;
    }
    if (pi->nmods == 2 && !strcmp(k, "wait_group")) {
        int64_t n;
        if (tf__opcount(dc, pi, 1, 1) || tf__imm(dc, pi, &pi->ops[0], &n))
            return -1;
        in->fn = cp_async_nop;
        return 1;
    }
    /* the copy: .ca/.cg, .shared{::cta}, .global, then optional L2 hints in any order */
    if (pi->nmods < 4 || (strcmp(k, "ca") && strcmp(k, "cg")) ||
        (strcmp(pi->mods[2], "shared") && strcmp(pi->mods[2], "shared::cta")) ||
        strcmp(pi->mods[3], "global"))
        return tf__unsupported(dc, pi);
    int hint = 0;
    for (uint32_t i = 4; i < pi->nmods; i++) {
        if (!strcmp(pi->mods[i], "L2::cache_hint"))
            hint = 1;
        else if (strcmp(pi->mods[i], "L2::64B") && strcmp(pi->mods[i], "L2::128B") &&
                 strcmp(pi->mods[i], "L2::256B"))
            return tf__unsupported(dc, pi);
    }
    if (tf__opcount(dc, pi, 3, 4 + (uint32_t)hint))
        return -1;
    int64_t size;
    if (tf__imm(dc, pi, &pi->ops[2], &size))
        return -1;
    if (size != 4 && size != 8 && size != 16)
        return tf__derr(dc, pi->line, "cp-size of '%s' must be 4, 8 or 16", pi->opcode);
    if (!strcmp(k, "cg") && size != 16)
        return tf__derr(dc, pi->line, "'%s' copies 16 bytes", pi->opcode);
    in->esize = (uint8_t)size;
    int space = MOD_SHARED;
    uint32_t limit;
    if (tf__addr(dc, pi, &pi->ops[0], &space, &in->a, &in->imm, &limit))
        return -1;
    if (space != MOD_SHARED)
        return tf__unsupported(dc, pi);
    int64_t simm;
    space = MOD_GLOBAL;
    if (tf__addr(dc, pi, &pi->ops[1], &space, &in->b, &simm, &limit))
        return -1;
    if (space != MOD_GLOBAL)
        return tf__unsupported(dc, pi);
    in->mask2 = (uint64_t)simm;
    in->c = TF__NONE;
    in->flags = 0;
    /* the 4th operand: src-size, or the ignore-src predicate; the last: the cache policy */
    uint32_t extra = pi->nops - 3 - (uint32_t)hint;
    if (extra == 1) {
        const struct tf__pop *o = &pi->ops[3];
        if (o->kind == PK_REG && tf__is_pred(dc, o->name)) {
            if (tf__psrc(dc, pi, o, &in->c))
                return -1;
            in->flags = 1;
            in->sub = (uint8_t)o->neg;
        } else if (tf__src(dc, pi, o, TY_U32, &in->c)) {
            return -1;
        }
    } else if (extra != 0) {
        return tf__derr(dc, pi->line, "wrong number of operands for '%s'", pi->opcode);
    }
    if (hint) {
        uint32_t pol;
        if (tf__src(dc, pi, &pi->ops[pi->nops - 1], TY_B64, &pol))
            return -1;
    }
    in->fn = cp_async;
    return 1;
}
