/* SPDX-License-Identifier: Apache-2.0
 *
 * Set of disjoint device-memory ranges [base, base+size) kept sorted by base, with an owner
 * tag per range. The worker keeps one per client (its allocations and the module globals it
 * looked up) and checks every device pointer, size and offset it is sent against it; the
 * client keeps one to reject bad pointers before they reach the wire. Private to src/remote.
 *
 * Lookups are O(log n), insertions and removals O(n) (memmove). Owns its array only.
 * Not thread-safe.
 */
#ifndef TF_REMOTE_RANGESET_H
#define TF_REMOTE_RANGESET_H

#include <stddef.h>
#include <stdint.h>

struct tf_range {
    uint64_t base;
    uint64_t size;
    uint64_t owner; /* 0 = a plain allocation; else e.g. the module id of a global */
    uint64_t aux;   /* caller data (pitch, flags) */
};

struct tf_rangeset {
    struct tf_range *v;
    size_t n, cap;
    size_t max; /* ranges allowed; TF_ENOSPC beyond */
};

void tf_rangeset_init(struct tf_rangeset *rs, size_t max_ranges);
void tf_rangeset_free(struct tf_rangeset *rs);
/* Adds [BASE, BASE+SIZE). TF_EINVAL for size 0 or wrap-around, TF_EEXIST when it overlaps a
 * range already present (a module global may be looked up twice: same base+size+owner is
 * accepted as already present and returns 0), TF_ENOSPC, TF_ENOMEM. */
int tf_rangeset_add(struct tf_rangeset *rs, uint64_t base, uint64_t size, uint64_t owner,
                    uint64_t aux);
/* Removes the range starting exactly at BASE with owner OWNER; *OUT (may be NULL) gets it.
 * TF_ENOENT when there is none. */
int tf_rangeset_del(struct tf_rangeset *rs, uint64_t base, uint64_t owner, struct tf_range *out);
/* The range that contains all of [PTR, PTR+LEN) (LEN 0: contains PTR), or NULL. Never wraps. */
const struct tf_range *tf_rangeset_find(const struct tf_rangeset *rs, uint64_t ptr, uint64_t len);
/* Removes every range of OWNER; returns how many. */
size_t tf_rangeset_del_owner(struct tf_rangeset *rs, uint64_t owner);

#endif
