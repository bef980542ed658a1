/* SPDX-License-Identifier: Apache-2.0
 *
 * The allocator's scores, GPU selection within a node (topology-aware), and the read-only
 * verbs filter, score and choose (see alloc.h).
 */
#include "core/alloc_int.h"

#include "common/err.h"
#include "common/strutil.h"

#include <string.h>

/* ---------- scores ---------- */

/* Which utilisation view ranks nodes for P (see enum tf_view). */
static enum tf_view view_of(const struct tf_cluster *c, const struct plan *p)
{
    if (c->policy == TF_ISOPOL_STATIC || p->whole)
        return TF_VIEW_ALL;
    return p->iso == TF_ISOLATION_HARD ? TF_VIEW_HARD : TF_VIEW_SOFT;
}

/* The node's placement score in basis points (0..10000): its utilisation over the GPUs the
 * pod could share (dynamic policy: unlocked or in its mode, so another mode's load does not
 * make a node look packed; shared/dedicated take whole GPUs and see the whole node). O(1):
 * the utilisation is kept with the node's aggregates. */
int32_t tf__alloc_node_score_bp(const struct tf_cluster *c, const struct plan *p,
                                const struct tf_node *n)
{
    int32_t u = n->util[view_of(c, p)];
    return p->cfg->placement == TF_PLACE_LOW_LOAD_FIRST ? 10000 - u : u;
}

static int32_t gpu_used_bp(const struct tf_pool_config *cfg, const struct tf_gpu *g)
{
    return tf_util_bp(cfg, g->cap_tflops, g->avail_tflops, g->cap_vram, g->avail_vram);
}

/* ---------- GPU selection on one node ---------- */

struct cand {
    uint16_t pos;
    int8_t tpl;
    int32_t pref; /* higher = preferred */
};

/* Picks P->count GPUs among CANDS (sorted by preference) into SEL: the best topology tier
 * that can be had (2: every pair NVLinked, 1: one known NUMA node, 0: any), and within it the
 * set with the highest total preference. O(candidates^2), candidates <= 64. */
static void pick_set(const struct tf_cluster *c, const struct tf_node *n, const struct plan *p,
                     const struct cand *cands, unsigned nc, struct selection *sel)
{
    unsigned need = p->count;
    sel->n = need;
    sel->tier = 0;
    if (need > 1) {
        int64_t best = INT64_MIN;
        uint16_t pos[TF_NODE_MAX_GPUS];
        int8_t tpl[TF_NODE_MAX_GPUS];
        /* Tier 2: greedy cliques from each seed, in preference order. */
        for (unsigned s = 0; s < nc; s++) {
            uint64_t set = UINT64_C(1) << cands[s].pos;
            unsigned k = 0;
            int64_t sum = cands[s].pref;
            pos[k] = cands[s].pos;
            tpl[k++] = cands[s].tpl;
            for (unsigned d = 0; d < nc && k < need; d++) {
                if (d == s)
                    continue;
                const struct tf_gpu *g = &c->gpus[n->gpu_first + cands[d].pos];
                if ((g->nvlink & set) == set) {
                    set |= UINT64_C(1) << cands[d].pos;
                    sum += cands[d].pref;
                    pos[k] = cands[d].pos;
                    tpl[k++] = cands[d].tpl;
                }
            }
            if (k == need && sum > best) {
                best = sum;
                sel->tier = 2;
                memcpy(sel->pos, pos, need * sizeof(pos[0]));
                memcpy(sel->tpl, tpl, need * sizeof(tpl[0]));
            }
        }
        if (sel->tier == 2)
            return;
        /* Tier 1: the best NUMA node holding enough candidates. */
        uint64_t seen = 0; /* NUMA ids 0..63 tried */
        for (unsigned s = 0; s < nc; s++) {
            int numa = c->gpus[n->gpu_first + cands[s].pos].numa;
            if (numa < 0 || (numa < 64 && (seen & (UINT64_C(1) << numa))))
                continue;
            if (numa < 64)
                seen |= UINT64_C(1) << numa;
            unsigned k = 0;
            int64_t sum = 0;
            for (unsigned d = 0; d < nc && k < need; d++)
                if (c->gpus[n->gpu_first + cands[d].pos].numa == numa) {
                    sum += cands[d].pref;
                    pos[k] = cands[d].pos;
                    tpl[k++] = cands[d].tpl;
                }
            if (k == need && sum > best) {
                best = sum;
                sel->tier = 1;
                memcpy(sel->pos, pos, need * sizeof(pos[0]));
                memcpy(sel->tpl, tpl, need * sizeof(tpl[0]));
            }
        }
        if (sel->tier == 1)
            return;
    }
    for (unsigned k = 0; k < need; k++) {
        sel->pos[k] = cands[k].pos;
        sel->tpl[k] = cands[k].tpl;
    }
}

/* Full check of node N for P (all GPU stages, count, workers) and GPU selection. */
bool tf__alloc_node_select(const struct tf_cluster *c, const struct plan *p,
                           const struct tf_node *n, struct selection *sel)
{
    if (n->pool != p->pool || (n->max_workers && n->nworkers >= n->max_workers) ||
        n->ngpus < p->count)
        return false;
    bool compact = p->cfg->placement == TF_PLACE_COMPACT_FIRST;
    struct cand cands[TF_NODE_MAX_GPUS];
    unsigned nc = 0;
    for (unsigned i = 0; i < n->ngpus; i++) {
        const struct tf_gpu *g = &c->gpus[n->gpu_first + i];
        struct need nd;
        if (!tf__alloc_gpu_fits(c, p, g, &nd))
            continue;
        int32_t used = gpu_used_bp(p->cfg, g);
        struct cand cd = {(uint16_t)i, (int8_t)nd.tpl, compact ? used : -used};
        if (p->count == 1) { /* keep only the best: first wins ties */
            if (!nc || cd.pref > cands[0].pref)
                cands[0] = cd;
            nc = 1;
            continue;
        }
        unsigned j = nc++;
        while (j > 0 && cands[j - 1].pref < cd.pref) {
            cands[j] = cands[j - 1];
            j--;
        }
        cands[j] = cd;
    }
    if (nc < p->count)
        return false;
    pick_set(c, n, p, cands, nc, sel);
    return true;
}

void tf__alloc_to_result(const struct tf_cluster *c, uint32_t nid, const struct selection *sel,
                         int32_t score_bp, struct tf_alloc_result *res)
{
    res->node = nid;
    res->ngpus = (uint16_t)sel->n;
    res->score = (score_bp + 50) / 100;
    for (unsigned i = 0; i < sel->n; i++)
        res->gpus[i] = c->nodes[nid].gpu_first + sel->pos[i];
}

/* ---------- filter / score / choose ---------- */

int tf__alloc_fail_all(int rc, const char *err, size_t n, struct tf_node_verdict *out,
                       struct tf_reasons *rb, const struct tf_cluster *c, const char *const *names)
{
    const char *r = rb ? tf__alloc_reason_add(rb, "%s", err) : NULL;
    for (size_t i = 0; i < n; i++) {
        out[i].node = names[i] ? tf_cluster_node_find(c, names[i], strlen(names[i])) : TF_NONE;
        out[i].fit = false;
        out[i].score = 0;
        out[i].reason = r;
    }
    return rc;
}

bool tf__alloc_node_fits(const struct tf_cluster *c, const struct plan *p, const struct tf_node *n)
{
    /* tf__alloc_node_select's verdict without ranking: its node checks, then count GPUs. */
    if (tf__alloc_node_quick_reject(p, n) || n->pool != p->pool ||
        (n->max_workers && n->nworkers >= n->max_workers) || n->ngpus < p->count)
        return false;
    unsigned k = 0;
    for (unsigned i = 0; i < n->ngpus; i++) {
        struct need nd;
        if (tf__alloc_gpu_fits(c, p, &c->gpus[n->gpu_first + i], &nd) && ++k >= p->count)
            return true;
    }
    return false;
}

/* Evaluates node NID (TF_NONE = unknown) for P: fit, score and GPU selection. */
static bool eval_node(const struct tf_cluster *c, const struct plan *p, uint32_t nid,
                      struct selection *sel, int32_t *score_bp)
{
    if (nid == TF_NONE)
        return false;
    const struct tf_node *n = &c->nodes[nid];
    if (tf__alloc_node_quick_reject(p, n) || !tf__alloc_node_select(c, p, n, sel))
        return false;
    *score_bp = tf__alloc_node_score_bp(c, p, n);
    return true;
}

int tf_alloc_filter(const struct tf_alloc *a, const struct tf_alloc_request *req,
                    const char *const *names, size_t n, struct tf_node_verdict *out,
                    struct tf_reasons *rb, char *err, size_t errlen)
{
    const struct tf_cluster *c = a->c;
    struct plan p;
    char perr[512];
    int rc = tf__alloc_compile(a, req, &p, perr, sizeof(perr));
    if (!rc)
        rc = tf__alloc_pod_checks(a, &p, perr, sizeof(perr));
    if (rc) {
        tf_errf(err, errlen, "%s", perr);
        return tf__alloc_fail_all(rc, perr, n, out, rb, c, names);
    }
    for (size_t i = 0; i < n; i++) {
        const char *nm = names[i] ? names[i] : "";
        uint32_t nid = tf_cluster_node_find(c, nm, strlen(nm));
        struct selection sel;
        int32_t sc = 0;
        out[i].node = nid;
        out[i].fit = eval_node(c, &p, nid, &sel, &sc);
        out[i].score = out[i].fit ? (sc + 50) / 100 : 0;
        out[i].reason = NULL;
        if (!out[i].fit && rb) {
            if (nid == TF_NONE)
                out[i].reason =
                    tf__alloc_reason_add(rb, "node %s: not a GPU node of this cluster", nm);
            else
                out[i].reason = tf__alloc_node_reason_add(c, &p, &c->nodes[nid], rb);
        }
    }
    return 0;
}

int tf_alloc_score(const struct tf_alloc *a, const struct tf_alloc_request *req,
                   const char *const *names, size_t n, int *scores, char *err, size_t errlen)
{
    struct plan p;
    int rc = tf__alloc_compile(a, req, &p, err, errlen);
    if (!rc)
        rc = tf__alloc_pod_checks(a, &p, err, errlen);
    for (size_t i = 0; i < n; i++) {
        scores[i] = 0;
        if (rc)
            continue;
        const char *nm = names[i] ? names[i] : "";
        struct selection sel;
        int32_t sc;
        if (eval_node(a->c, &p, tf_cluster_node_find(a->c, nm, strlen(nm)), &sel, &sc))
            scores[i] = (sc + 50) / 100;
    }
    return rc;
}

/* Best node of P's pool: true with its id, selection and score, or false. Walks the pool's
 * utilisation index best-first (fullest first for CompactFirst and NodeCompactGPULowLoad,
 * emptiest first for LowLoadFirst) and stops at the first node that fits, so the cost is the
 * number of better-scored nodes that do not fit (mostly rejected in O(1)), not the pool size.
 * Nodes of equal score are taken in the order they reached that score. */
static bool choose(const struct tf_cluster *c, const struct plan *p, uint32_t *node,
                   struct selection *sel, int32_t *score)
{
    enum tf_view v = view_of(c, p);
    bool desc = p->cfg->placement != TF_PLACE_LOW_LOAD_FIRST;
    for (uint32_t nid = tf_cluster_index_first(c, p->pool, v, desc); nid != TF_NONE;
         nid = tf_cluster_index_next(c, nid, v, desc)) {
        const struct tf_node *n = &c->nodes[nid];
        if (tf__alloc_node_quick_reject(p, n) || !tf__alloc_node_select(c, p, n, sel))
            continue;
        *node = nid;
        *score = tf__alloc_node_score_bp(c, p, n);
        return true;
    }
    *node = TF_NONE;
    return false;
}

int tf__alloc_choose_or_reasons(const struct tf_alloc *a, const struct plan *p, uint32_t *node,
                                struct selection *sel, int32_t *score, struct tf_reasons *rb,
                                char *err, size_t errlen)
{
    const struct tf_cluster *c = a->c;
    if (choose(c, p, node, sel, score))
        return 0;
    const struct tf_pool *pool = &c->pools[p->pool];
    tf_errf(err, errlen, "pod %s: 0/%u nodes of pool %s fit", p->key, pool->nnodes, pool->name);
    if (rb) {
        if (!pool->nnodes)
            tf__alloc_reason_add(rb, "pool %s has no nodes", pool->name);
        for (uint32_t i = 0; i < pool->nnodes; i++)
            tf__alloc_node_reason_add(c, p, &c->nodes[pool->nodes[i]], rb);
    }
    return TF_ENOSPC;
}

int tf_alloc_choose(const struct tf_alloc *a, const struct tf_alloc_request *req,
                    struct tf_alloc_result *res, struct tf_reasons *rb, char *err, size_t errlen)
{
    struct plan p;
    int rc = tf__alloc_prepare(a, req, &p, rb, err, errlen);
    if (rc)
        return rc;
    uint32_t nid;
    struct selection sel;
    int32_t sc;
    if ((rc = tf__alloc_choose_or_reasons(a, &p, &nid, &sel, &sc, rb, err, errlen)))
        return rc;
    tf__alloc_to_result(a->c, nid, &sel, sc, res);
    return 0;
}
