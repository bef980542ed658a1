/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to the allocator (alloc*.c): the allocator object, the compiled request ("plan"),
 * and the helpers its files share. Everything here follows the contract of alloc.h; nothing
 * outside src/core/alloc*.c may include it.
 *
 *   alloc.c         records, reserve/place/restore/release/resize/suspend/resume
 *   alloc_plan.c    request compilation and the per-GPU / per-node checks
 *   alloc_select.c  scores, GPU selection, filter/score/choose
 *   alloc_reason.c  reason buffers and the per-node reasons
 *   alloc_check.c   full invariant check
 *   alloc_index.c   the verdict index (public header alloc_index.h)
 *
 * Records live in fixed-size chunks that never move, so a record's inline key (the key of the
 * by_key map) and its inline slots keep their addresses. A slot ref is (record id << 6 | slot
 * position); each GPU threads its workloads through the slots' next/prev refs.
 */
#ifndef TF_CORE_ALLOC_INT_H
#define TF_CORE_ALLOC_INT_H

#include "core/alloc.h"

#include <stdbool.h>
#include <stdint.h>

#define CHUNK_SHIFT 10
#define CHUNK_SIZE (1u << CHUNK_SHIFT)
#define MAX_RECORDS (1u << 26) /* slot refs keep 6 bits for the position */
#define REF(id, pos) (((id) << 6) | (uint32_t)(pos))
#define REF_ID(ref) ((ref) >> 6)
#define REF_POS(ref) ((ref)&63u)

struct tf_alloc {
    struct tf_cluster *c;
    struct tf_quota_set *q;
    struct tf_alloc_record **chunks; /* owned */
    uint32_t nchunks, chunks_cap;
    uint32_t limit;     /* ids handed out so far */
    uint32_t free_head; /* free-list of ids, TF_NONE-terminated */
    uint32_t live;
    struct tf_strmap by_key; /* key -> id; keys point into the records */
    uint8_t *stale;          /* bulk loading: nodes whose aggregates wait (one bit each) */
};

/* Filter stages, in the order of alloc.h. */
enum stage {
    ST_QUOTA,
    ST_POOL,
    ST_PHASE,
    ST_ISO,
    ST_INDEX,
    ST_WHOLE,
    ST_PART,
    ST_RES,
    ST_MODEL,
    ST_VENDOR,
    ST_COUNT,
    ST_WORKERS,
    ST_PASS,
};

/* A request compiled once per call. */
struct plan {
    const struct tf_alloc_request *req;
    char key[TF_KEY_MAX];
    size_t key_len, ns_len;
    uint32_t pool;
    const struct tf_pool_config *cfg;
    unsigned count;
    enum tf_isolation iso;
    enum tf_qos qos; /* resolved: the pool's default when unset */
    bool whole;      /* shared or dedicated: a whole idle GPU */
    bool part;       /* partitioned */
    uint64_t model_mask, index_mask;
    uint32_t vendor_mask;
    struct tf_alloc_resources res; /* normalised: limits filled */
    bool quota_exempt;
    struct tf_quota_ask ask;
};

/* What a request takes on one GPU. */
struct need {
    int64_t t, v, lt, lv;
    int tpl; /* partition template, -1 none */
};

/* A GPU selection on one node. */
struct selection {
    unsigned n;
    unsigned tier; /* 2 NVLink, 1 same NUMA, 0 other (multi-GPU only) */
    uint16_t pos[TF_NODE_MAX_GPUS];
    int8_t tpl[TF_NODE_MAX_GPUS];
};

static inline struct tf_alloc_record *rec(const struct tf_alloc *a, uint32_t id)
{
    return &a->chunks[id >> CHUNK_SHIFT][id & (CHUNK_SIZE - 1)];
}

static inline struct tf_alloc_slot *slot_of(struct tf_alloc_record *r, unsigned i)
{
    return r->slots_heap ? &r->slots_heap[i] : &r->slots_inline[i];
}

static inline struct tf_alloc_slot *slot_ref(const struct tf_alloc *a, uint32_t ref)
{
    return slot_of(rec(a, REF_ID(ref)), REF_POS(ref));
}

static inline bool iso_ok(const struct tf_cluster *c, const struct tf_gpu *g, const struct plan *p)
{
    if (c->policy == TF_ISOPOL_STATIC)
        return p->iso == TF_ISOLATION_SHARED || g->mode == p->iso;
    return g->mode == TF_ISOLATION_UNSET || (g->mode == p->iso && p->iso != TF_ISOLATION_SHARED);
}

static inline bool idle(const struct tf_gpu *g)
{
    return !g->nworkloads && !g->nparts;
}

static inline int64_t frac_bp(int64_t used, int64_t cap)
{
    if (cap <= 0)
        return 0;
    if (used < INT64_MAX / 10000)
        return used * 10000 / cap;
    return (int64_t)((__int128)used * 10000 / cap);
}

/* alloc_plan.c: compiles REQ into P (pod-level errors with ERR set), the quota stage, the
 * normalised resources, what P takes on G, the first stage G fails (ST_PASS if none), the same
 * verdict cheapest test first, and the node-level O(1) rejection. */
int tf__alloc_compile(const struct tf_alloc *a, const struct tf_alloc_request *req, struct plan *p,
                      char *err, size_t errlen);
int tf__alloc_pod_checks(const struct tf_alloc *a, const struct plan *p, char *err, size_t errlen);
/* Both, the pod-level error also added to RB (may be NULL). */
int tf__alloc_prepare(const struct tf_alloc *a, const struct tf_alloc_request *req, struct plan *p,
                      struct tf_reasons *rb, char *err, size_t errlen);
int tf__alloc_normalise(const struct tf_alloc_resources *in, struct tf_alloc_resources *out,
                        char *err, size_t errlen);
void tf__alloc_need_on(const struct tf_cluster *c, const struct plan *p, const struct tf_gpu *g,
                       struct need *n);
enum stage tf__alloc_gpu_stage(const struct tf_cluster *c, const struct plan *p,
                               const struct tf_gpu *g, struct need *n);
bool tf__alloc_gpu_fits(const struct tf_cluster *c, const struct plan *p, const struct tf_gpu *g,
                        struct need *n);
bool tf__alloc_node_quick_reject(const struct plan *p, const struct tf_node *n);

/* alloc_select.c: the node's score (basis points), its full check with GPU selection, the
 * result of a selection, and the best node of the pool (or TF_ENOSPC with reasons). */
int32_t tf__alloc_node_score_bp(const struct tf_cluster *c, const struct plan *p,
                                const struct tf_node *n);
bool tf__alloc_node_select(const struct tf_cluster *c, const struct plan *p,
                           const struct tf_node *n, struct selection *sel);
void tf__alloc_to_result(const struct tf_cluster *c, uint32_t nid, const struct selection *sel,
                         int32_t score_bp, struct tf_alloc_result *res);
/* Whether N fits P (the verdict of tf__alloc_node_select, without choosing GPUs). */
bool tf__alloc_node_fits(const struct tf_cluster *c, const struct plan *p, const struct tf_node *n);
/* Every verdict of a filter unfit with the pod-level reason ERR; returns RC. */
int tf__alloc_fail_all(int rc, const char *err, size_t n, struct tf_node_verdict *out,
                       struct tf_reasons *rb, const struct tf_cluster *c, const char *const *names);
int tf__alloc_choose_or_reasons(const struct tf_alloc *a, const struct plan *p, uint32_t *node,
                                struct selection *sel, int32_t *score, struct tf_reasons *rb,
                                char *err, size_t errlen);

/* alloc_reason.c: appends a formatted reason (NULL when RB is full), writes why P does not
 * fit node N into BUF, and both at once. */
__attribute__((format(printf, 2, 3))) const char *tf__alloc_reason_add(struct tf_reasons *rb,
                                                                       const char *fmt, ...);
/* Appends the string S as a reason (cut as tf__alloc_reason_add cuts). */
const char *tf__alloc_reason_put(struct tf_reasons *rb, const char *s);
void tf__alloc_node_reason(const struct tf_cluster *c, const struct plan *p,
                           const struct tf_node *n, char *buf, size_t len);
const char *tf__alloc_node_reason_add(const struct tf_cluster *c, const struct plan *p,
                                      const struct tf_node *n, struct tf_reasons *rb);

/* alloc.c: the partition template slot S holds, or NULL. */
const struct tf_partition_template *tf__alloc_slot_tpl(const struct tf_alloc *a,
                                                       const struct tf_alloc_slot *s);

#endif
