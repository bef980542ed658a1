/* SPDX-License-Identifier: Apache-2.0
 *
 * QoS preemption planning by suspend / fit / reprieve (see preempt.h).
 */
#include "core/preempt.h"

#include "common/err.h"
#include "common/strutil.h"

#include <assert.h>
#include <string.h>

bool tf_preempt_may(enum tf_qos preemptor, enum tf_qos victim)
{
    return preemptor >= TF_QOS_HIGH && victim >= TF_QOS_LOW && victim <= TF_QOS_MEDIUM;
}

struct victim {
    uint32_t id;
    uint8_t qos;
    int64_t vram, tflops;
};

/* Reprieve order: higher QoS first, then smaller first (keeping small pods leaves fewer
 * victims), then record id for determinism. */
static int reprieve_before(const struct victim *x, const struct victim *y)
{
    if (x->qos != y->qos)
        return x->qos > y->qos;
    if (x->vram != y->vram)
        return x->vram < y->vram;
    if (x->tflops != y->tflops)
        return x->tflops < y->tflops;
    return x->id < y->id;
}

/* Collects the eligible victims on node NID into V (deduplicated, sorted by reprieve order).
 * Returns their count, or -1 when there are more than the cap. */
static int collect(const struct tf_alloc *a, const struct tf_cluster *c, uint32_t nid,
                   enum tf_qos qos, struct victim *v)
{
    const struct tf_node *n = &c->nodes[nid];
    int nv = 0;
    uint32_t ids[TF_PREEMPT_MAX_VICTIMS];
    for (unsigned i = 0; i < n->ngpus; i++) {
        size_t k = tf_alloc_gpu_workloads(a, n->gpu_first + i, ids, TF_PREEMPT_MAX_VICTIMS);
        if (k > TF_PREEMPT_MAX_VICTIMS)
            return -1;
        for (size_t j = 0; j < k; j++) {
            const struct tf_alloc_record *r = tf_alloc_record_at(a, ids[j]);
            if (!tf_preempt_may(qos, (enum tf_qos)r->qos))
                continue;
            bool dup = false;
            for (int e = 0; e < nv && !dup; e++)
                dup = v[e].id == ids[j];
            if (dup)
                continue;
            if (nv == TF_PREEMPT_MAX_VICTIMS)
                return -1;
            struct victim x = {ids[j], r->qos, 0, 0};
            for (unsigned s = 0; s < r->ngpus; s++) {
                x.vram += tf_alloc_record_slot(r, s)->vram;
                x.tflops += tf_alloc_record_slot(r, s)->tflops;
            }
            int at = nv++;
            while (at > 0 && reprieve_before(&x, &v[at - 1])) {
                v[at] = v[at - 1];
                at--;
            }
            v[at] = x;
        }
    }
    return nv;
}

/* Resumes every suspended victim of V (the original state always holds them all). */
static void resume_all(struct tf_alloc *a, const struct victim *v, const bool *out, int nv)
{
    for (int i = 0; i < nv; i++)
        if (out[i]) {
            int rc = tf_alloc_resume(a, v[i].id);
            assert(rc == 0);
            (void)rc;
        }
}

/* Better candidate: fewer victims, then lower highest victim QoS, then lower QoS sum. */
static bool better(int nv, int maxq, int sumq, int best_nv, int best_maxq, int best_sumq)
{
    if (best_nv < 0 || nv != best_nv)
        return best_nv < 0 || nv < best_nv;
    if (maxq != best_maxq)
        return maxq < best_maxq;
    return sumq < best_sumq;
}

static bool allowed(const uint32_t *nodes, size_t n, uint32_t nid)
{
    if (!nodes)
        return true;
    for (size_t i = 0; i < n; i++)
        if (nodes[i] == nid)
            return true;
    return false;
}

int tf_preempt_plan(struct tf_alloc *a, const struct tf_alloc_request *req,
                    struct tf_preempt_plan *plan, char *err, size_t errlen)
{
    return tf_preempt_plan_on(a, req, NULL, 0, plan, err, errlen);
}

int tf_preempt_plan_on(struct tf_alloc *a, const struct tf_alloc_request *req,
                       const uint32_t *nodes, size_t nnodes, struct tf_preempt_plan *plan,
                       char *err, size_t errlen)
{
    memset(plan, 0, sizeof(*plan));
    struct tf_alloc_result res;
    char why[512];
    int rc;
    if (!nodes) {
        rc = tf_alloc_choose(a, req, &res, NULL, why, sizeof(why));
        if (rc == 0) {
            plan->placement = res;
            return 0;
        }
    } else {
        /* Fits as is on one of NODES? (Where it fits elsewhere does not count.) */
        rc = TF_ENOSPC;
        why[0] = '\0';
        for (size_t i = 0; i < nnodes && rc; i++)
            if (tf_alloc_fit_node(a, req, nodes[i], &res, NULL, 0) == 0) {
                plan->placement = res;
                return 0;
            }
    }
    /* Pod-level failures (malformed, unknown pool, quota, policy) are not about room: filtering
     * no node at all reports exactly those. */
    struct tf_node_verdict none;
    int prc = tf_alloc_filter(a, req, NULL, 0, &none, NULL, err, errlen);
    if (prc)
        return prc;
    if (rc != TF_ENOSPC) {
        tf_errf(err, errlen, "%s", why);
        return rc;
    }
    const struct tf_cluster *c = tf_alloc_cluster(a);
    uint32_t pid = tf_alloc_request_pool(a, req);
    enum tf_qos qos = req->qos != TF_QOS_UNSET ? req->qos : c->pools[pid].cfg.default_qos;
    if (qos < TF_QOS_HIGH) {
        tf_errf(err, errlen, "pod %s/%s: only high and critical pods may preempt", req->ns,
                req->name);
        return TF_EPERM;
    }
    const struct tf_pool *pool = &c->pools[pid];
    struct victim v[TF_PREEMPT_MAX_VICTIMS];
    bool out[TF_PREEMPT_MAX_VICTIMS];
    int best_nv = -1, best_maxq = 0, best_sumq = 0;
    for (uint32_t i = 0; i < pool->nnodes; i++) {
        uint32_t nid = pool->nodes[i];
        if (!allowed(nodes, nnodes, nid))
            continue;
        int nv = collect(a, c, nid, qos, v);
        if (nv <= 0)
            continue;
        for (int k = 0; k < nv; k++) {
            rc = tf_alloc_suspend(a, v[k].id);
            assert(rc == 0);
            out[k] = true;
        }
        if (tf_alloc_fit_node(a, req, nid, &res, NULL, 0) != 0) {
            resume_all(a, v, out, nv);
            continue;
        }
        /* Reprieve in order; a victim stays out only if its return leaves no room. */
        int nout = nv, maxq = 0, sumq = 0;
        for (int k = 0; k < nv; k++) {
            rc = tf_alloc_resume(a, v[k].id);
            assert(rc == 0);
            out[k] = false;
            if (tf_alloc_fit_node(a, req, nid, NULL, NULL, 0) != 0) {
                rc = tf_alloc_suspend(a, v[k].id);
                assert(rc == 0);
                out[k] = true;
            } else {
                nout--;
            }
        }
        for (int k = 0; k < nv; k++)
            if (out[k]) {
                maxq = v[k].qos > maxq ? v[k].qos : maxq;
                sumq += v[k].qos;
            }
        if (better(nout, maxq, sumq, best_nv, best_maxq, best_sumq)) {
            rc = tf_alloc_fit_node(a, req, nid, &plan->placement, NULL, 0);
            assert(rc == 0);
            best_nv = nout;
            best_maxq = maxq;
            best_sumq = sumq;
            plan->nvictims = 0;
            for (int k = 0; k < nv; k++)
                if (out[k])
                    plan->victims[plan->nvictims++] = v[k].id;
        }
        resume_all(a, v, out, nv);
    }
    if (best_nv < 0) {
        tf_errf(err, errlen,
                "pod %s/%s: evicting every low and medium pod of pool %s makes no room", req->ns,
                req->name, pool->name);
        return TF_ENOSPC;
    }
    return 0;
}
