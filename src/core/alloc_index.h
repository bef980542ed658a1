/* SPDX-License-Identifier: Apache-2.0
 *
 * Filter and score answered from an index of verdicts, for the scheduler extender: the same
 * results as tf_alloc_filter / tf_alloc_score (verdicts, scores, reasons byte for byte), at a
 * per-request cost that does not grow with the work of re-deriving every candidate node.
 *
 * A request's verdict on a node (fit, score, reason) is a function of the node's state and of
 * the request's shape: pool, GPU count, isolation, whole-GPU, partition template, model,
 * vendor, indices and per-GPU resources (name, namespace and QoS do not enter it; the quota
 * stage is pod-level and is checked on every call). The index keeps, for the shapes asked
 * recently (at most TF_ALLOC_INDEX_SHAPES, least recently used dropped), each node's verdict
 * and score stamped with the node's version (tf_node.version, changed by every reservation,
 * release, resize and phase change on the node), and its failure reason once one was asked
 * for. A call intersects the candidate list with the index: a candidate whose stamp is
 * current costs a comparison; only nodes that changed since the shape's last request (the
 * node the previous pod was bound to, released pods' nodes) are evaluated again, with the
 * allocator's own checks. So the index is exact by construction; the randomized comparison
 * against the full scan in tests/core/test_alloc_index.c checks it.
 *
 * Cost: O(candidates) comparisons + O(changed candidates x their GPUs); the first request of a
 * shape costs what tf_alloc_filter does, plus 10 bytes per node of the cluster. Reasons are
 * kept per shape in an arena of at most ~160 bytes per node (emptied when full).
 *
 * Ownership and threads: an index borrows its allocator (and cluster) for its whole life; it
 * must be destroyed before them, and rebuilt when the allocator is replaced. Calls modify the
 * index: the caller serialises them with each other, and holds the allocator's read lock (no
 * writer may run during a call).
 */
#ifndef TF_CORE_ALLOC_INDEX_H
#define TF_CORE_ALLOC_INDEX_H

#include "core/alloc.h"

#include <stddef.h>
#include <stdint.h>

#define TF_ALLOC_INDEX_SHAPES 16

struct tf_alloc_index;

/* New empty index over A; NULL on allocation failure. */
struct tf_alloc_index *tf_alloc_index_new(const struct tf_alloc *a);
void tf_alloc_index_destroy(struct tf_alloc_index *x);

/* tf_alloc_filter from the index. IDS (may be NULL) are the candidates' node ids already
 * resolved from NAMES (TF_NONE for names that are not nodes); NAMES are always given. Same
 * return codes, verdicts and reasons as tf_alloc_filter. */
int tf_alloc_index_filter(struct tf_alloc_index *x, const struct tf_alloc_request *req,
                          const char *const *names, const uint32_t *ids, size_t n,
                          struct tf_node_verdict *out, struct tf_reasons *rb, char *err,
                          size_t errlen);

/* tf_alloc_score from the index (IDS as above). */
int tf_alloc_index_score(struct tf_alloc_index *x, const struct tf_alloc_request *req,
                         const char *const *names, const uint32_t *ids, size_t n, int *scores,
                         char *err, size_t errlen);

/* This index's serial number, unique in the process (never reused, unlike its address):
 * what a caller keeping node ids resolved under it compares to know they still hold. */
uint64_t tf_alloc_index_serial(const struct tf_alloc_index *x);

/* Counters since the index was made: candidates looked up, verdicts (re)computed, reasons
 * formatted, shapes built and dropped. */
struct tf_alloc_index_stats {
    uint64_t lookups, computed, reasons, shapes_built, shapes_dropped;
};
void tf_alloc_index_stats(const struct tf_alloc_index *x, struct tf_alloc_index_stats *out);

#endif
