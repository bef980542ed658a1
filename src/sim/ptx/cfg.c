/* SPDX-License-Identifier: Apache-2.0
 *
 * Control-flow analysis of one decoded function: basic blocks, then immediate
 * post-dominators (Cooper-Harvey-Kennedy on the reverse CFG, rooted at the function's
 * synthetic terminal). A guarded bra gets its block's immediate post-dominator as the pc
 * where lanes that split there reconverge (insn.ipdom). Blocks that cannot reach the
 * terminal (endless loops) reconverge at the terminal.
 */
#include "sim/ptx/internal.h"

#include <stdlib.h>

struct blk {
    uint32_t start, end; /* [start, end) pcs relative to BEGIN */
    uint32_t succ[2];
    uint32_t nsucc;
    uint32_t *pred;
    uint32_t npred, cpred;
    uint32_t po;   /* postorder number in the reverse CFG, TF__NONE if unreached */
    uint32_t idom; /* immediate post-dominator block */
};

static int add_pred(struct blk *b, uint32_t p)
{
    if (b->npred == b->cpred) {
        uint32_t nc = b->cpred ? b->cpred * 2 : 4;
        uint32_t *np = realloc(b->pred, nc * sizeof(uint32_t));
        if (!np)
            return -1;
        b->pred = np;
        b->cpred = nc;
    }
    b->pred[b->npred++] = p;
    return 0;
}

static uint32_t intersect(const struct blk *bl, uint32_t a, uint32_t b)
{
    while (a != b) {
        while (bl[a].po < bl[b].po)
            a = bl[a].idom;
        while (bl[b].po < bl[a].po)
            b = bl[b].idom;
    }
    return a;
}

int tf__cfg_ipdom(struct tf__insn *code, uint32_t begin, uint32_t end)
{
    uint32_t n = end - begin;
    if (n == 0)
        return 0;
    int rc = -1;
    uint8_t *leader = calloc(n + 1, 1);
    uint32_t *blk_of = malloc((size_t)n * sizeof(uint32_t));
    struct blk *bl = NULL;
    uint32_t *order = NULL, *stack = NULL, *iter = NULL;
    uint32_t nb = 0;
    if (!leader || !blk_of)
        goto out;
    leader[0] = 1;
    leader[n - 1] = 1; /* the terminal is its own block */
    for (uint32_t i = 0; i < n; i++) {
        const struct tf__insn *in = &code[begin + i];
        if (in->cf == CF_BRA) {
            if (in->target >= begin && in->target < end)
                leader[in->target - begin] = 1;
            leader[i + 1] = 1;
        } else if (in->cf == CF_END) {
            leader[i + 1] = 1;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        nb += leader[i];
    bl = calloc(nb, sizeof(*bl));
    order = malloc((size_t)nb * sizeof(uint32_t));
    stack = malloc((size_t)nb * sizeof(uint32_t));
    iter = calloc(nb, sizeof(uint32_t));
    if (!bl || !order || !stack || !iter)
        goto out;
    uint32_t b = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (leader[i] && i > 0)
            b++;
        if (leader[i])
            bl[b].start = i;
        bl[b].end = i + 1;
        blk_of[i] = b;
    }
    uint32_t term = blk_of[n - 1];
    for (uint32_t k = 0; k < nb; k++) {
        const struct tf__insn *last = &code[begin + bl[k].end - 1];
        bl[k].po = TF__NONE;
        if (k == term)
            continue;
        if (last->cf == CF_BRA) {
            uint32_t t = last->target >= begin && last->target < end ? last->target - begin : n - 1;
            bl[k].succ[bl[k].nsucc++] = blk_of[t];
            if (last->has_guard && bl[k].end < n)
                bl[k].succ[bl[k].nsucc++] = blk_of[bl[k].end];
        } else if (last->cf == CF_END) {
            bl[k].succ[bl[k].nsucc++] = term;
            if (last->has_guard && bl[k].end < n && blk_of[bl[k].end] != term)
                bl[k].succ[bl[k].nsucc++] = blk_of[bl[k].end];
        } else if (bl[k].end < n) {
            bl[k].succ[bl[k].nsucc++] = blk_of[bl[k].end];
        }
        for (uint32_t s = 0; s < bl[k].nsucc; s++)
            if (add_pred(&bl[bl[k].succ[s]], k))
                goto out;
    }
    /* postorder of the reverse CFG from the terminal (iterative DFS over predecessors) */
    uint32_t npo = 0, sp = 0;
    uint8_t *seen = leader; /* reuse: cleared below */
    memset(seen, 0, n + 1);
    stack[sp++] = term;
    seen[term] = 1;
    while (sp) {
        uint32_t x = stack[sp - 1];
        if (iter[x] < bl[x].npred) {
            uint32_t p = bl[x].pred[iter[x]++];
            if (!seen[p]) {
                seen[p] = 1;
                stack[sp++] = p;
            }
        } else {
            bl[x].po = npo;
            order[npo++] = x;
            sp--;
        }
    }
    for (uint32_t k = 0; k < nb; k++)
        bl[k].idom = TF__NONE;
    bl[term].idom = term;
    int changed = 1;
    while (changed) {
        changed = 0;
        for (uint32_t i = npo; i-- > 0;) {
            uint32_t x = order[i];
            if (x == term)
                continue;
            uint32_t nd = TF__NONE;
            for (uint32_t s = 0; s < bl[x].nsucc; s++) {
                uint32_t y = bl[x].succ[s];
                if (bl[y].po == TF__NONE || bl[y].idom == TF__NONE)
                    continue;
                nd = nd == TF__NONE ? y : intersect(bl, y, nd);
            }
            if (nd != TF__NONE && bl[x].idom != nd) {
                bl[x].idom = nd;
                changed = 1;
            }
        }
    }
    for (uint32_t k = 0; k < nb; k++) {
        struct tf__insn *last = &code[begin + bl[k].end - 1];
        if (last->cf != CF_BRA)
            continue;
        uint32_t pd = bl[k].idom;
        last->ipdom = (pd == TF__NONE) ? end - 1 : begin + bl[pd].start;
    }
    rc = 0;
out:
    if (bl)
        for (uint32_t k = 0; k < nb; k++)
            free(bl[k].pred);
    free(bl);
    free(order);
    free(stack);
    free(iter);
    free(leader);
    free(blk_of);
    return rc;
}
