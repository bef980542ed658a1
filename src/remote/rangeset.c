/* SPDX-License-Identifier: Apache-2.0
 *
 * Sorted disjoint range set; see rangeset.h.
 */
#include "remote/rangeset.h"

#include "common/dynbuf.h"
#include "common/err.h"

#include <stdlib.h>
#include <string.h>

void tf_rangeset_init(struct tf_rangeset *rs, size_t max_ranges)
{
    rs->v = NULL;
    rs->n = rs->cap = 0;
    rs->max = max_ranges;
}

void tf_rangeset_free(struct tf_rangeset *rs)
{
    if (!rs)
        return;
    free(rs->v);
    rs->v = NULL;
    rs->n = rs->cap = 0;
}

/* Index of the first range with base > PTR. */
static size_t upper(const struct tf_rangeset *rs, uint64_t ptr)
{
    size_t lo = 0, hi = rs->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rs->v[mid].base <= ptr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int tf_rangeset_add(struct tf_rangeset *rs, uint64_t base, uint64_t size, uint64_t owner,
                    uint64_t aux)
{
    if (size == 0 || base + size < base)
        return TF_EINVAL;
    size_t i = upper(rs, base);
    if (i > 0) {
        const struct tf_range *p = &rs->v[i - 1];
        if (p->base == base && p->size == size && p->owner == owner)
            return 0;
        if (p->base + p->size > base)
            return TF_EEXIST;
    }
    if (i < rs->n && rs->v[i].base < base + size)
        return TF_EEXIST;
    if (rs->n >= rs->max)
        return TF_ENOSPC;
    struct tf_range *v = tf_grow(rs->v, &rs->cap, rs->n + 1, sizeof(*v), 16);
    if (!v)
        return TF_ENOMEM;
    rs->v = v;
    memmove(&rs->v[i + 1], &rs->v[i], (rs->n - i) * sizeof(*rs->v));
    rs->v[i] = (struct tf_range){.base = base, .size = size, .owner = owner, .aux = aux};
    rs->n++;
    return 0;
}

int tf_rangeset_del(struct tf_rangeset *rs, uint64_t base, uint64_t owner, struct tf_range *out)
{
    size_t i = upper(rs, base);
    if (i == 0 || rs->v[i - 1].base != base || rs->v[i - 1].owner != owner)
        return TF_ENOENT;
    i--;
    if (out)
        *out = rs->v[i];
    memmove(&rs->v[i], &rs->v[i + 1], (rs->n - i - 1) * sizeof(*rs->v));
    rs->n--;
    return 0;
}

const struct tf_range *tf_rangeset_find(const struct tf_rangeset *rs, uint64_t ptr, uint64_t len)
{
    if (ptr + len < ptr)
        return NULL;
    size_t i = upper(rs, ptr);
    if (i == 0)
        return NULL;
    const struct tf_range *r = &rs->v[i - 1];
    uint64_t off = ptr - r->base;
    if (off >= r->size || len > r->size - off)
        return NULL;
    return r;
}

size_t tf_rangeset_del_owner(struct tf_rangeset *rs, uint64_t owner)
{
    size_t w = 0, gone = 0;
    for (size_t i = 0; i < rs->n; i++) {
        if (rs->v[i].owner == owner)
            gone++;
        else
            rs->v[w++] = rs->v[i];
    }
    rs->n = w;
    return gone;
}
