/* SPDX-License-Identifier: Apache-2.0
 *
 * Lock-free pointer -> size table of the limiter (see ptrtab.h).
 */
#include "limiter/ptrtab.h"

#include <stdlib.h>

enum { EMPTY = 0, INSERTING = 1, LIVE = 2, CLAIMED = 3, TOMB = 4 };

#define BASE_ORDER 12

static uint64_t hash64(uint64_t k)
{
    k ^= k >> 33;
    k *= UINT64_C(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k *= UINT64_C(0xc4ceb9fe1a85ec53);
    k ^= k >> 33;
    return k;
}

static struct tf_ptrtab_level *level_get(struct tf_ptrtab *t, int i, bool create)
{
    struct tf_ptrtab_level *l = atomic_load_explicit(&t->level[i], memory_order_acquire);
    if (l || !create)
        return l;
    uint64_t n = UINT64_C(1) << (BASE_ORDER + i);
    struct tf_ptrtab_level *fresh = calloc(1, sizeof(*fresh) + n * sizeof(fresh->e[0]));
    if (!fresh)
        return NULL;
    fresh->mask = n - 1;
    struct tf_ptrtab_level *expect = NULL;
    if (!atomic_compare_exchange_strong_explicit(&t->level[i], &expect, fresh, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        free(fresh); /* another thread published first */
        return expect;
    }
    return fresh;
}

bool tf_ptrtab_put(struct tf_ptrtab *t, uint64_t key, uint64_t bytes, uint32_t idx, uint64_t ctx)
{
    uint64_t h = hash64(key);
    for (int i = 0; i < TF_PTRTAB_LEVELS; i++) {
        struct tf_ptrtab_level *l = level_get(t, i, true);
        if (!l)
            return false;
        for (uint64_t p = 0; p < TF_PTRTAB_PROBES; p++) {
            struct tf_ptrtab_entry *e = &l->e[(h + p) & l->mask];
            uint32_t s = atomic_load_explicit(&e->state, memory_order_relaxed);
            if (s != EMPTY && s != TOMB)
                continue;
            if (!atomic_compare_exchange_strong_explicit(
                    &e->state, &s, INSERTING, memory_order_acquire, memory_order_relaxed))
                continue;
            e->bytes = bytes;
            e->idx = idx;
            e->ctx = ctx;
            atomic_store_explicit(&e->key, key, memory_order_relaxed);
            atomic_store_explicit(&e->state, LIVE, memory_order_release);
            return true;
        }
    }
    return false;
}

bool tf_ptrtab_get(struct tf_ptrtab *t, uint64_t key, struct tf_ptrtab_val *out)
{
    uint64_t h = hash64(key);
    for (int i = 0; i < TF_PTRTAB_LEVELS; i++) {
        struct tf_ptrtab_level *l = level_get(t, i, false);
        if (!l)
            return false;
        for (uint64_t p = 0; p < TF_PTRTAB_PROBES; p++) {
            struct tf_ptrtab_entry *e = &l->e[(h + p) & l->mask];
            uint32_t s = atomic_load_explicit(&e->state, memory_order_acquire);
            if (s == EMPTY)
                break;
            if ((s != LIVE && s != CLAIMED) ||
                atomic_load_explicit(&e->key, memory_order_relaxed) != key)
                continue;
            out->key = key;
            out->bytes = e->bytes;
            out->idx = e->idx;
            out->ctx = e->ctx;
            return true;
        }
    }
    return false;
}

uintptr_t tf_ptrtab_take(struct tf_ptrtab *t, uint64_t key, struct tf_ptrtab_val *out)
{
    uint64_t h = hash64(key);
    for (int i = 0; i < TF_PTRTAB_LEVELS; i++) {
        struct tf_ptrtab_level *l = level_get(t, i, false);
        if (!l)
            return 0;
        for (uint64_t p = 0; p < TF_PTRTAB_PROBES; p++) {
            struct tf_ptrtab_entry *e = &l->e[(h + p) & l->mask];
            uint32_t s = atomic_load_explicit(&e->state, memory_order_acquire);
            if (s == EMPTY)
                break; /* never used: KEY is not further along this probe sequence */
            if (s != LIVE || atomic_load_explicit(&e->key, memory_order_relaxed) != key)
                continue;
            if (!atomic_compare_exchange_strong_explicit(
                    &e->state, &s, CLAIMED, memory_order_acquire, memory_order_relaxed))
                continue;
            if (atomic_load_explicit(&e->key, memory_order_relaxed) != key) {
                atomic_store_explicit(&e->state, LIVE, memory_order_release);
                continue;
            }
            out->key = key;
            out->bytes = e->bytes;
            out->idx = e->idx;
            out->ctx = e->ctx;
            return (uintptr_t)e;
        }
    }
    return 0;
}

void tf_ptrtab_done(uintptr_t handle)
{
    struct tf_ptrtab_entry *e = (struct tf_ptrtab_entry *)handle;
    atomic_store_explicit(&e->key, 0, memory_order_relaxed);
    atomic_store_explicit(&e->state, TOMB, memory_order_release);
}

void tf_ptrtab_restore(uintptr_t handle)
{
    struct tf_ptrtab_entry *e = (struct tf_ptrtab_entry *)handle;
    atomic_store_explicit(&e->state, LIVE, memory_order_release);
}

int tf_ptrtab_sweep_ctx(struct tf_ptrtab *t, uint64_t ctx,
                        void (*fn)(const struct tf_ptrtab_val *v, void *arg), void *arg)
{
    int n = 0;
    for (int i = 0; i < TF_PTRTAB_LEVELS; i++) {
        struct tf_ptrtab_level *l = level_get(t, i, false);
        if (!l)
            break;
        for (uint64_t k = 0; k <= l->mask; k++) {
            struct tf_ptrtab_entry *e = &l->e[k];
            uint32_t s = atomic_load_explicit(&e->state, memory_order_acquire);
            if (s != LIVE || e->ctx != ctx)
                continue;
            if (!atomic_compare_exchange_strong_explicit(
                    &e->state, &s, CLAIMED, memory_order_acquire, memory_order_relaxed))
                continue;
            struct tf_ptrtab_val v = {.key = atomic_load_explicit(&e->key, memory_order_relaxed),
                                      .bytes = e->bytes,
                                      .ctx = e->ctx,
                                      .idx = e->idx};
            if (fn)
                fn(&v, arg);
            tf_ptrtab_done((uintptr_t)e);
            n++;
        }
    }
    return n;
}

void tf_ptrtab_reset(struct tf_ptrtab *t)
{
    for (int i = 0; i < TF_PTRTAB_LEVELS; i++) {
        struct tf_ptrtab_level *l = level_get(t, i, false);
        if (!l)
            break;
        for (uint64_t k = 0; k <= l->mask; k++) {
            atomic_store_explicit(&l->e[k].state, EMPTY, memory_order_relaxed);
            atomic_store_explicit(&l->e[k].key, 0, memory_order_relaxed);
        }
    }
}

void tf_ptrtab_free(struct tf_ptrtab *t)
{
    for (int i = 0; i < TF_PTRTAB_LEVELS; i++) {
        free(atomic_load_explicit(&t->level[i], memory_order_relaxed));
        atomic_store_explicit(&t->level[i], NULL, memory_order_relaxed);
    }
}
