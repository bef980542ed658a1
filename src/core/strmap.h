/* SPDX-License-Identifier: Apache-2.0
 *
 * An open-addressing hash map from strings to uint32 values (node names, GPU uuids, pod keys,
 * namespaces -> indexes into the owner's arrays). Linear probing with backward-shift deletion
 * (no tombstones), hashes (tf_strmap_hash) cached per slot, grown at 50 % load, so lookups stay
 * O(1) expected without allocating.
 *
 * Ownership: the map never copies or frees keys. Each entry stores the caller's KEY pointer,
 * which must stay valid and unchanged until the entry is removed or the map is freed.
 * Not thread-safe: callers serialise all access (lookups are read-only and may run concurrently
 * with each other, never with a put or del).
 */
#ifndef TF_CORE_STRMAP_H
#define TF_CORE_STRMAP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct tf_strmap_slot {
    const char *key; /* NULL = empty slot */
    uint32_t hash;
    uint32_t val;
};

struct tf_strmap {
    struct tf_strmap_slot *slots; /* owned */
    size_t cap;                   /* power of two, or 0 before the first put */
    size_t len;
};

/* Empty map (no allocation until the first put). */
void tf_strmap_init(struct tf_strmap *m);
/* Frees the slot array (not the keys). Accepts a zeroed or NULL map. */
void tf_strmap_free(struct tf_strmap *m);

/* Looks KEY (LEN bytes, need not be NUL-terminated) up: 0 and *VAL, or TF_ENOENT. */
int tf_strmap_get(const struct tf_strmap *m, const char *key, size_t len, uint32_t *val);
/* The hash the map uses (32 bits) of the LEN bytes of KEY, and tf_strmap_get with it already
 * computed (callers that hash while reading their input). Eight bytes per step (the last
 * eight overlap the step before, keys under eight bytes are read as two overlapping halves),
 * each folded in by a multiply and a shift, then a 64-bit finaliser: a few cycles per key where
 * a byte-serial hash costs one multiply per byte. In-process only: values differ between byte
 * orders. */
static inline uint64_t tf__strmap_mix(uint64_t v)
{
    v *= UINT64_C(0xbf58476d1ce4e5b9);
    return v ^ (v >> 31);
}

static inline uint32_t tf_strmap_hash(const char *key, size_t len)
{
    uint64_t h = (uint64_t)len * UINT64_C(0x9e3779b97f4a7c15), w;
    if (len >= 8) {
        size_t i = 0;
        for (; i + 8 < len; i += 8) {
            memcpy(&w, key + i, 8);
            h = tf__strmap_mix(h ^ w);
        }
        memcpy(&w, key + len - 8, 8);
        h = tf__strmap_mix(h ^ w);
    } else if (len >= 4) {
        uint32_t a, b;
        memcpy(&a, key, 4);
        memcpy(&b, key + len - 4, 4);
        h = tf__strmap_mix(h ^ ((uint64_t)a << 32 | b));
    } else if (len) {
        h = tf__strmap_mix(h ^ ((uint64_t)(uint8_t)key[0] << 16 |
                                (uint64_t)(uint8_t)key[len >> 1] << 8 | (uint8_t)key[len - 1]));
    }
    h ^= h >> 33;
    h *= UINT64_C(0xc4ceb9fe1a85ec53);
    return (uint32_t)(h ^ (h >> 33));
}

int tf_strmap_get_hashed(const struct tf_strmap *m, const char *key, size_t len, uint32_t hash,
                         uint32_t *val);
/* Prefetches the slot HASH probes first (callers looking many keys up in a row issue it a few
 * keys ahead). */
static inline void tf_strmap_prefetch(const struct tf_strmap *m, uint32_t hash)
{
    if (m->cap)
        __builtin_prefetch(&m->slots[hash & (m->cap - 1)]);
}
/* Prefetches the key stored in that slot (best issued once the slot itself is in cache). */
static inline void tf_strmap_prefetch_key(const struct tf_strmap *m, uint32_t hash)
{
    const char *k = m->cap ? m->slots[hash & (m->cap - 1)].key : NULL;
    if (k)
        __builtin_prefetch(k);
}
/* Makes room for N entries in all (no growth until then). 0 or TF_ENOMEM (map unchanged). */
int tf_strmap_reserve(struct tf_strmap *m, size_t n);
/* Inserts KEY (NUL-terminated, borrowed) -> VAL. TF_EEXIST if present (map unchanged),
 * TF_ENOMEM if growing failed (map unchanged). */
int tf_strmap_put(struct tf_strmap *m, const char *key, uint32_t val);
/* Replaces the stored key pointer and value of an existing entry (same text), e.g. after the
 * owner moved its key storage. TF_ENOENT if absent. */
int tf_strmap_set(struct tf_strmap *m, const char *key, uint32_t val);
/* Removes KEY; TF_ENOENT if absent. */
int tf_strmap_del(struct tf_strmap *m, const char *key, size_t len);

#endif
