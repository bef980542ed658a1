/* SPDX-License-Identifier: Apache-2.0
 *
 * Node compaction in the cluster (seed 002 step 4): when a pool's check is due (its period, or
 * a fresh manual-compaction annotation), the core planner picks the idle nodes to release and
 * this file releases them and records what it did on the GPUPool (see efficiency.h).
 */
#include "controller/efficiency_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/timeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stale or malformed manual-compaction values younger than this are reported as an Event; older
 * ones (a value left on the pool across restarts) are only logged. */
#define MANUAL_REPORT_WINDOW_MS (10 * 60 * INT64_C(1000))

static int label_should_delete(struct tf_efficiency *e, const char *node, char *err, size_t errlen)
{
    json_object *p = json_object_new_object(), *meta = json_object_new_object(),
                *labels = json_object_new_object();
    json_object_object_add(labels, TF_LABEL_SHOULD_DELETE, json_object_new_string("true"));
    json_object_object_add(meta, "labels", labels);
    json_object_object_add(p, "metadata", meta);
    int rc = tf_k8s_merge_patch(e->c, &tf_k8s_nodes, NULL, node, NULL, p, NULL, err, errlen);
    json_object_put(p);
    if (rc == 0)
        e->writes++;
    return rc;
}

struct claims {
    const char *node;
    json_object *names;
};

static int match_claim(json_object *claim, void *arg)
{
    struct claims *c = arg;
    const char *n = tf_json_str(claim, "status", "nodeName", NULL);
    const char *name = tf_json_str(claim, "metadata", "name", NULL);
    if (n && name && strcmp(n, c->node) == 0)
        json_object_array_add(c->names, json_object_new_string(name));
    return 0;
}

/* Deletes the Karpenter NodeClaims of NODE. Returns how many, or a TF_E* code. */
static int delete_claims(struct tf_efficiency *e, const char *node, char *err, size_t errlen)
{
    struct claims c = {node, json_object_new_array()};
    int rc = tf_k8s_list(e->c, &tf_k8s_nodeclaims, NULL, NULL, NULL, 500, match_claim, &c, NULL,
                         err, errlen);
    int n = 0;
    for (size_t i = 0; rc == 0 && i < json_object_array_length(c.names); i++) {
        const char *name = json_object_get_string(json_object_array_get_idx(c.names, i));
        rc = tf_k8s_delete(e->c, &tf_k8s_nodeclaims, NULL, name, err, errlen);
        if (rc == TF_ENOENT)
            rc = 0; /* already going */
        else if (rc == 0)
            n++;
    }
    json_object_put(c.names);
    if (rc == 0)
        e->writes += n;
    return rc ? rc : n;
}

static void release(struct tf_efficiency *e, json_object *pool, enum tf_provisioning_mode mode,
                    const char *node, const char *why)
{
    char err[512];
    if (mode == TF_PROVISION_KARPENTER) {
        int n = delete_claims(e, node, err, sizeof(err));
        if (n <= 0) {
            tf__eff_event(e, pool, "Warning", "CompactionFailed",
                          "node %s: cannot delete its Karpenter NodeClaim: %s", node,
                          n == 0 ? "no NodeClaim has this node in status.nodeName" : err);
            return;
        }
    }
    /* The label also marks the node as released for the next checks (effplan.h). */
    int rc = label_should_delete(e, node, err, sizeof(err));
    if (rc) {
        tf__eff_event(e, pool, "Warning", "CompactionFailed",
                      "node %s: cannot label it %s=true: %s", node, TF_LABEL_SHOULD_DELETE, err);
        return;
    }
    tf__eff_event(e, pool, "Normal", "Compaction", "node %s released: %s", node, why);
}

/* Whether a manual run was asked for; records the value so it acts once. */
static bool manual_requested(struct tf_efficiency *e, struct tf__eff_pass *p, json_object *pool,
                             struct tf__eff_pool *ps)
{
    const char *v = tf_json_str(pool, "metadata", "annotations", TF_ANN_MANUAL_COMPACTION, NULL);
    if (!v || strcmp(v, ps->manual_handled) == 0)
        return false;
    int64_t at = tf__eff_seen_at(e, ps->name, v);
    if (!at)
        at = p->now_ms;
    char why[512];
    enum tf_manual_compaction m = tf_compaction_manual(
        v, ps->manual_handled[0] ? ps->manual_handled : NULL, at, why, sizeof(why));
    tf_strlcpy(ps->manual_handled, v, sizeof(ps->manual_handled));
    if (m == TF_MANUAL_TRIGGER)
        return true;
    int64_t t = 0;
    bool recent = m == TF_MANUAL_INVALID ||
                  (tf_rfc3339_parse(v, &t, TF_ANN_MANUAL_COMPACTION, NULL, 0) == 0 &&
                   at - t < MANUAL_REPORT_WINDOW_MS);
    if (m != TF_MANUAL_HANDLED && recent)
        tf__eff_event(e, pool, "Warning", "ManualCompactionIgnored", "%s", why);
    else
        tf_log(TF_LOG_DEBUG, "efficiency", "pool %s: %s", ps->name, why);
    return false;
}

void tf__compact_pass(struct tf_efficiency *e, struct tf__eff_pass *p, json_object *pool,
                      struct tf__eff_pool *ps, const struct tf_pool_efficiency *pe)
{
    bool manual = manual_requested(e, p, pool, ps);
    if (!manual && !tf_compaction_due(pe, ps->compaction_last_ms, p->now_ms, NULL))
        return;
    ps->compaction_last_ms = p->now_ms;
    if (tf__eff_plan(e, p))
        return;
    struct tf_compaction_node *nodes = NULL;
    size_t n = 0;
    uint32_t pid = tf_cluster_pool_find(p->cluster, ps->name);
    if (pid != TF_NONE && tf_plan_state_compaction(p->plan, pid, &nodes, &n)) {
        tf_log(TF_LOG_ERROR, "efficiency", "pool %s: compaction: out of memory", ps->name);
        return;
    }
    tf_effplan_mark_released(nodes, n, p->nodes);
    struct tf_compaction_decision *d = calloc(n ? n : 1, sizeof(*d));
    if (!d) {
        free(nodes);
        return;
    }
    struct tf_compaction_summary sum;
    size_t nrel = tf_compaction_plan(pe, nodes, n, p->now_ms, d, &sum);
    for (size_t i = 0; i < n; i++) {
        const char *name = nodes[d[i].node].name;
        if (d[i].verdict == TF_COMPACT_RELEASE)
            release(e, pool, pe->provisioning, name, d[i].reason);
        else
            tf_log(TF_LOG_DEBUG, "efficiency", "pool %s: node %s kept (%s): %s", ps->name, name,
                   tf_compaction_verdict_name(d[i].verdict), d[i].reason);
    }
    if (manual)
        tf__eff_event(e, pool, "Normal", "ManualCompaction",
                      "manual compaction %s: %zu of %zu node%s released", ps->manual_handled, nrel,
                      n, n == 1 ? "" : "s");
    tf_log(TF_LOG_INFO, "efficiency", "pool %s: compaction %s: released %zu of %zu nodes", ps->name,
           manual ? "(manual)" : "(periodic)", nrel, n);
    free(d);
    free(nodes);
}
