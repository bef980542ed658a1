/* SPDX-License-Identifier: Apache-2.0
 *
 * Handle-id hash map; see htab.h.
 */
#include "remote/htab.h"

#include "common/err.h"

#include <stdlib.h>

static size_t slot_of(uint64_t key, size_t cap)
{
    /* splitmix64 finaliser: ids are sequential, spread them. */
    key ^= key >> 30;
    key *= UINT64_C(0xbf58476d1ce4e5b9);
    key ^= key >> 27;
    key *= UINT64_C(0x94d049bb133111eb);
    key ^= key >> 31;
    return (size_t)key & (cap - 1);
}

void tf_htab_init(struct tf_htab *h, size_t max_entries)
{
    h->slots = NULL;
    h->cap = h->count = 0;
    h->max = max_entries;
}

void tf_htab_free(struct tf_htab *h)
{
    if (!h)
        return;
    free(h->slots);
    h->slots = NULL;
    h->cap = h->count = 0;
}

void *tf_htab_get(const struct tf_htab *h, uint64_t key)
{
    if (!h->cap || !key)
        return NULL;
    for (size_t i = slot_of(key, h->cap);; i = (i + 1) & (h->cap - 1)) {
        if (h->slots[i].key == key)
            return h->slots[i].val;
        if (h->slots[i].key == 0)
            return NULL;
    }
}

static void insert_slot(struct tf_htab_slot *slots, size_t cap, uint64_t key, void *val)
{
    size_t i = slot_of(key, cap);
    while (slots[i].key)
        i = (i + 1) & (cap - 1);
    slots[i].key = key;
    slots[i].val = val;
}

static int grow(struct tf_htab *h)
{
    size_t cap = h->cap ? h->cap * 2 : 16;
    struct tf_htab_slot *s = calloc(cap, sizeof(*s));
    if (!s)
        return TF_ENOMEM;
    for (size_t i = 0; i < h->cap; i++)
        if (h->slots[i].key)
            insert_slot(s, cap, h->slots[i].key, h->slots[i].val);
    free(h->slots);
    h->slots = s;
    h->cap = cap;
    return 0;
}

int tf_htab_put(struct tf_htab *h, uint64_t key, void *val)
{
    if (!key || !val)
        return TF_EINVAL;
    if (tf_htab_get(h, key))
        return TF_EEXIST;
    if (h->count >= h->max)
        return TF_ENOSPC;
    if ((h->count + 1) * 10 > h->cap * 7) {
        int rc = grow(h);
        if (rc)
            return rc;
    }
    insert_slot(h->slots, h->cap, key, val);
    h->count++;
    return 0;
}

void *tf_htab_del(struct tf_htab *h, uint64_t key)
{
    if (!h->cap || !key)
        return NULL;
    size_t mask = h->cap - 1, i = slot_of(key, h->cap);
    while (h->slots[i].key != key) {
        if (h->slots[i].key == 0)
            return NULL;
        i = (i + 1) & mask;
    }
    void *val = h->slots[i].val;
    /* Backward-shift: move later entries of the probe run into the hole. */
    size_t hole = i;
    for (size_t j = (i + 1) & mask; h->slots[j].key; j = (j + 1) & mask) {
        size_t home = slot_of(h->slots[j].key, h->cap);
        /* Entry j may move to HOLE if HOLE lies cyclically in [home, j). */
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            h->slots[hole] = h->slots[j];
            hole = j;
        }
    }
    h->slots[hole].key = 0;
    h->slots[hole].val = NULL;
    h->count--;
    return val;
}

int tf_htab_next(const struct tf_htab *h, size_t *pos, uint64_t *key, void **val)
{
    for (size_t i = *pos; i < h->cap; i++) {
        if (h->slots[i].key) {
            *key = h->slots[i].key;
            *val = h->slots[i].val;
            *pos = i + 1;
            return 1;
        }
    }
    *pos = h->cap;
    return 0;
}
