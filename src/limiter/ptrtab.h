/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to libtf_limiter.so: a lock-free map from a 64-bit key (device pointer, array
 * handle, VMM handle, graph exec) to what the limiter must remember about it (bytes, region
 * device index, owning context), so frees give back exactly what allocations took.
 *
 * Open addressing in a chain of tables that only grows (4096 entries, then twice the size
 * each time, allocated on demand and published by CAS); every probe sequence is bounded
 * (TF_PTRTAB_PROBES per table), so no operation loops unboundedly. Entries move through
 *   EMPTY -> INSERTING -> LIVE -> CLAIMED -> (TOMB | LIVE again)
 * by CAS on their state word. A free claims its entry before calling the real driver and
 * removes or restores it afterwards, so a concurrent allocation that gets the same address
 * back from the driver can never be confused with the one being freed.
 *
 * Keys are unique while live (the driver never hands out a live address twice); 0 is not
 * a valid key. All functions are thread-safe and lock-free; only growth allocates.
 */
#ifndef TF_LIMITER_PTRTAB_H
#define TF_LIMITER_PTRTAB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define TF_PTRTAB_PROBES 32
#define TF_PTRTAB_LEVELS 16

struct tf_ptrtab_entry {
    _Atomic(uint32_t) state;
    uint32_t idx; /* region device index */
    _Atomic(uint64_t) key;
    uint64_t bytes;
    uint64_t ctx; /* owning CUcontext (0: none, e.g. VMM handles) */
};

struct tf_ptrtab_level {
    uint64_t mask;
    struct tf_ptrtab_entry e[];
};

struct tf_ptrtab {
    _Atomic(struct tf_ptrtab_level *) level[TF_PTRTAB_LEVELS];
};

/* What was stored, handed back by take/sweep. */
struct tf_ptrtab_val {
    uint64_t key, bytes, ctx;
    uint32_t idx;
};

/* Inserts KEY. Returns false only if every level is full and no new one can be allocated
 * (the allocation is then not tracked: the caller gives its reservation back). */
bool tf_ptrtab_put(struct tf_ptrtab *t, uint64_t key, uint64_t bytes, uint32_t idx, uint64_t ctx);

/* Reads KEY's value without claiming it (for immutable values, e.g. graph kernel counts).
 * True if found. */
bool tf_ptrtab_get(struct tf_ptrtab *t, uint64_t key, struct tf_ptrtab_val *out);

/* Claims KEY's entry: returns a handle (>0) and its value, or 0 if KEY is not tracked.
 * The entry stays invisible to other takers until tf_ptrtab_done or tf_ptrtab_restore. */
uintptr_t tf_ptrtab_take(struct tf_ptrtab *t, uint64_t key, struct tf_ptrtab_val *out);
/* Removes a claimed entry (the real free succeeded). */
void tf_ptrtab_done(uintptr_t handle);
/* Puts a claimed entry back (the real free failed). */
void tf_ptrtab_restore(uintptr_t handle);

/* Removes every entry whose ctx == CTX, calling FN for each (a destroyed context took its
 * allocations with it). Returns how many. */
int tf_ptrtab_sweep_ctx(struct tf_ptrtab *t, uint64_t ctx,
                        void (*fn)(const struct tf_ptrtab_val *v, void *arg), void *arg);

/* Forgets everything without freeing the levels (after fork, in the child). Not
 * thread-safe. */
void tf_ptrtab_reset(struct tf_ptrtab *t);

/* Releases the levels (tests). Not thread-safe. */
void tf_ptrtab_free(struct tf_ptrtab *t);

#endif
