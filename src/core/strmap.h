/* SPDX-License-Identifier: Apache-2.0
 *
 * An open-addressing hash map from strings to uint32 values (node names, GPU uuids, pod keys,
 * namespaces -> indexes into the owner's arrays). Linear probing with backward-shift deletion
 * (no tombstones), FNV-1a hashes cached per slot, grown at 50 % load, so lookups stay O(1)
 * expected without allocating.
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
/* The hash the map uses (FNV-1a, 32 bits) of the LEN bytes of KEY, and tf_strmap_get with it
 * already computed (callers that hash while reading their input). */
uint32_t tf_strmap_hash(const char *key, size_t len);
int tf_strmap_get_hashed(const struct tf_strmap *m, const char *key, size_t len, uint32_t hash,
                         uint32_t *val);
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
