/* SPDX-License-Identifier: Apache-2.0
 *
 * Staging ring for bulk copies in tf-worker: one contiguous buffer per client session from
 * which HtoD chunks are received (straight from the socket) and DtoH chunks are copied
 * before they are sent, while the device copies run asynchronously. Regions are handed out
 * in FIFO order at the head and come back in the same order when their copy has completed
 * (the caller tracks completion, e.g. with an event per region), so the copies of chunk k
 * overlap the socket transfer of chunk k+1. Pure bookkeeping: no driver calls, no I/O.
 * Private to the worker. Not thread-safe (one session thread).
 */
#ifndef TF_REMOTE_WORKER_STAGING_H
#define TF_REMOTE_WORKER_STAGING_H

#include <stddef.h>
#include <stdint.h>

struct tf_stage_ent {
    size_t off, len;
    size_t charge; /* bytes accounted: len plus the padding skipped to wrap around */
    void *ev;      /* caller's completion handle */
    uint64_t ctx;  /* caller's context id */
};

struct tf_stage {
    uint8_t *base; /* owned by the caller */
    size_t cap;
    size_t head; /* next free byte */
    size_t used; /* bytes held by entries (with padding) */
    struct tf_stage_ent *q;
    size_t qcap, qfirst, qn;
};

/* Sets up a ring over BASE[0, CAP) with at most MAX_ENTRIES regions in flight. */
int tf_stage_init(struct tf_stage *st, uint8_t *base, size_t cap, size_t max_entries);
void tf_stage_free(struct tf_stage *st);
/* Where N bytes (1 <= N <= cap) would go: the offset, or -1 when the oldest region must
 * come back first (ring or entry queue full). *CHARGE gets what tf_stage_push will account. */
long tf_stage_place(const struct tf_stage *st, size_t n, size_t *charge);
/* Hands out the region placed at OFF (from tf_stage_place, nothing pushed in between). */
void tf_stage_push(struct tf_stage *st, size_t off, size_t n, size_t charge, void *ev,
                   uint64_t ctx);
/* The oldest region in flight, or NULL. */
struct tf_stage_ent *tf_stage_oldest(struct tf_stage *st);
/* Returns the oldest region. */
void tf_stage_pop(struct tf_stage *st);

#endif
