/* SPDX-License-Identifier: Apache-2.0
 *
 * Hash map from non-zero 64-bit handle ids to pointers (open addressing, linear probing,
 * backward-shift deletion, so lookups never degrade with churn). The worker keeps one per
 * client connection (that client's objects: nothing else is reachable through it); the
 * client keeps its own objects in one. Private to src/remote.
 *
 * The map owns only its slot array; values are owned by the caller. Not thread-safe.
 */
#ifndef TF_REMOTE_HTAB_H
#define TF_REMOTE_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct tf_htab_slot {
    uint64_t key; /* 0 = empty */
    void *val;
};

struct tf_htab {
    struct tf_htab_slot *slots;
    size_t cap; /* power of two, or 0 */
    size_t count;
    size_t max; /* entries allowed; TF_ENOSPC beyond */
};

void tf_htab_init(struct tf_htab *h, size_t max_entries);
void tf_htab_free(struct tf_htab *h);
/* The value for KEY, or NULL. */
void *tf_htab_get(const struct tf_htab *h, uint64_t key);
/* Inserts KEY (non-zero) -> VAL (non-NULL). TF_EEXIST if present, TF_ENOSPC over the limit,
 * TF_ENOMEM, TF_EINVAL for key 0 / NULL value. */
int tf_htab_put(struct tf_htab *h, uint64_t key, void *val);
/* Removes KEY; returns its value or NULL. */
void *tf_htab_del(struct tf_htab *h, uint64_t key);
/* Iteration: start with *POS = 0; returns 1 with *KEY, *VAL for each entry, then 0. The map
 * must not change during iteration, except by tf_htab_del of the entry just returned followed
 * by restarting from *POS = 0. */
int tf_htab_next(const struct tf_htab *h, size_t *pos, uint64_t *key, void **val);

#endif
