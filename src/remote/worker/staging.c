/* SPDX-License-Identifier: Apache-2.0
 *
 * Staging ring bookkeeping; see staging.h.
 */
#include "remote/worker/staging.h"

#include "common/err.h"

#include <stdlib.h>
#include <string.h>

int tf_stage_init(struct tf_stage *st, uint8_t *base, size_t cap, size_t max_entries)
{
    memset(st, 0, sizeof(*st));
    st->q = calloc(max_entries, sizeof(*st->q));
    if (!st->q)
        return TF_ENOMEM;
    st->base = base;
    st->cap = cap;
    st->qcap = max_entries;
    return 0;
}

void tf_stage_free(struct tf_stage *st)
{
    if (!st)
        return;
    free(st->q);
    st->q = NULL;
    st->qn = 0;
}

long tf_stage_place(const struct tf_stage *st, size_t n, size_t *charge)
{
    if (n == 0 || n > st->cap || st->qn == st->qcap)
        return -1;
    size_t head = st->qn ? st->head : 0, used = st->qn ? st->used : 0;
    /* Occupied bytes form the circular range ending at HEAD; the free range starts there. */
    if (head + n <= st->cap) {
        if (used + n > st->cap)
            return -1;
        *charge = n;
        return (long)head;
    }
    size_t c = st->cap - head + n; /* skip the tail end, restart at 0 */
    if (used + c > st->cap)
        return -1;
    *charge = c;
    return 0;
}

void tf_stage_push(struct tf_stage *st, size_t off, size_t n, size_t charge, void *ev, uint64_t ctx)
{
    if (st->qn == 0) {
        st->head = 0;
        st->used = 0;
    }
    struct tf_stage_ent *e = &st->q[(st->qfirst + st->qn) % st->qcap];
    *e = (struct tf_stage_ent){.off = off, .len = n, .charge = charge, .ev = ev, .ctx = ctx};
    st->qn++;
    st->head = off + n;
    st->used += charge;
}

struct tf_stage_ent *tf_stage_oldest(struct tf_stage *st)
{
    return st->qn ? &st->q[st->qfirst] : NULL;
}

void tf_stage_pop(struct tf_stage *st)
{
    if (!st->qn)
        return;
    st->used -= st->q[st->qfirst].charge;
    st->qfirst = (st->qfirst + 1) % st->qcap;
    st->qn--;
}
