/* SPDX-License-Identifier: Apache-2.0
 *
 * String -> uint32 open-addressing hash map (see strmap.h).
 */
#include "core/strmap.h"

#include "common/err.h"

#include <stdlib.h>
#include <string.h>

static int key_eq(const struct tf_strmap_slot *s, uint32_t h, const char *key, size_t len)
{
    if (s->hash != h)
        return 0;
    for (size_t i = 0; i < len; i++) /* stops at the stored key's end: never reads past it */
        if (s->key[i] != key[i] || !s->key[i])
            return 0;
    return s->key[len] == '\0';
}

void tf_strmap_init(struct tf_strmap *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->len = 0;
}

void tf_strmap_free(struct tf_strmap *m)
{
    if (!m)
        return;
    free(m->slots);
    tf_strmap_init(m);
}

static size_t find(const struct tf_strmap *m, const char *key, size_t len, uint32_t h)
{
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        const struct tf_strmap_slot *s = &m->slots[i];
        if (!s->key || key_eq(s, h, key, len))
            return i;
    }
}

int tf_strmap_get(const struct tf_strmap *m, const char *key, size_t len, uint32_t *val)
{
    return m->cap ? tf_strmap_get_hashed(m, key, len, tf_strmap_hash(key, len), val) : TF_ENOENT;
}

int tf_strmap_get_hashed(const struct tf_strmap *m, const char *key, size_t len, uint32_t hash,
                         uint32_t *val)
{
    if (!m->cap)
        return TF_ENOENT;
    size_t i = find(m, key, len, hash);
    if (!m->slots[i].key)
        return TF_ENOENT;
    *val = m->slots[i].val;
    return 0;
}

static int grow_to(struct tf_strmap *m, size_t ncap)
{
    struct tf_strmap_slot *ns = calloc(ncap, sizeof(*ns));
    if (!ns)
        return TF_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        const struct tf_strmap_slot *s = &m->slots[i];
        if (!s->key)
            continue;
        size_t j = s->hash & (ncap - 1);
        while (ns[j].key)
            j = (j + 1) & (ncap - 1);
        ns[j] = *s;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return 0;
}

static int grow(struct tf_strmap *m)
{
    return grow_to(m, m->cap ? m->cap * 2 : 16);
}

int tf_strmap_reserve(struct tf_strmap *m, size_t n)
{
    size_t cap = m->cap ? m->cap : 16;
    while (cap < n * 2) /* the load stays at or below 50 % */
        cap *= 2;
    return cap > m->cap ? grow_to(m, cap) : 0;
}

int tf_strmap_put(struct tf_strmap *m, const char *key, uint32_t val)
{
    size_t len = strlen(key);
    uint32_t h = tf_strmap_hash(key, len);
    if (m->cap) {
        size_t i = find(m, key, len, h);
        if (m->slots[i].key)
            return TF_EEXIST;
    }
    if ((m->len + 1) * 2 > m->cap) {
        int rc = grow(m);
        if (rc)
            return rc;
    }
    size_t i = find(m, key, len, h);
    m->slots[i].key = key;
    m->slots[i].hash = h;
    m->slots[i].val = val;
    m->len++;
    return 0;
}

int tf_strmap_set(struct tf_strmap *m, const char *key, uint32_t val)
{
    size_t len = strlen(key);
    if (!m->cap)
        return TF_ENOENT;
    size_t i = find(m, key, len, tf_strmap_hash(key, len));
    if (!m->slots[i].key)
        return TF_ENOENT;
    m->slots[i].key = key;
    m->slots[i].val = val;
    return 0;
}

int tf_strmap_del(struct tf_strmap *m, const char *key, size_t len)
{
    if (!m->cap)
        return TF_ENOENT;
    size_t mask = m->cap - 1;
    size_t i = find(m, key, len, tf_strmap_hash(key, len));
    if (!m->slots[i].key)
        return TF_ENOENT;
    /* Backward-shift: pull later members of the probe run into the hole. */
    for (size_t j = (i + 1) & mask;; j = (j + 1) & mask) {
        struct tf_strmap_slot *s = &m->slots[j];
        if (!s->key)
            break;
        size_t home = s->hash & mask;
        /* Move S into hole I unless its home lies cyclically in (I, J]. */
        int in_range = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
        if (!in_range) {
            m->slots[i] = *s;
            i = j;
        }
    }
    m->slots[i].key = NULL;
    m->len--;
    return 0;
}
