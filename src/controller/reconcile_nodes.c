/* SPDX-License-Identifier: Apache-2.0
 *
 * Pools by selector in the cluster (nodepool.h decides): each GPU node's pool and isolation
 * mode, written where the scheduler extender and users read them — the GPU objects' label
 * tensor-fusion.ai/gpupool and status.isolationMode / isolationPolicy, the GPUNode's label
 * and its PoolConflict condition — and the heartbeat-driven phase of GPUs whose node's
 * hypervisor went silent (see reconcile.h).
 */
#include "controller/reconcile_int.h"

#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/nodepool.h"

#include <stdio.h>
#include <string.h>

#define LABEL_POOL "tensor-fusion.ai/gpupool"
#define UNKNOWN_MSG_PREFIX "heartbeat lost: "

json_object *tf__rc_assign_pools(struct tf_reconciler *r, json_object *gpus)
{
    json_object *out = json_object_new_object();
    json_object *pools = tf_informer_snapshot(r->src.pools);
    for (size_t i = 0; out && i < json_object_array_length(gpus); i++) {
        json_object *gpu = json_object_array_get_idx(gpus, i);
        const char *node = tf__rc_gpu_node(gpu);
        if (!node || json_object_object_get_ex(out, node, NULL))
            continue;
        json_object *nobj = r->src.nodes ? tf_informer_get(r->src.nodes, NULL, node) : NULL;
        struct tf_nodepool np;
        tf_nodepool_resolve(pools, node, nobj, tf__rc_lbl(gpu, LABEL_POOL), r->default_pool, &np);
        json_object_put(nobj);
        json_object *a = json_object_new_object();
        json_object_object_add(a, "pool", json_object_new_string(np.pool));
        json_object_object_add(a, "mode", json_object_new_string(tf_isolation_name(np.mode)));
        json_object_object_add(a, "matched", json_object_new_int(np.nmatched));
        json_object_object_add(a, "pools", json_object_new_string(np.matched));
        json_object_object_add(a, "bySelector",
                               json_object_new_boolean(np.source == TF_NODEPOOL_SELECTOR));
        json_object_object_add(out, node, a);
    }
    json_object_put(pools);
    return out;
}

const char *tf__rc_assigned_pool(json_object *assign, const char *node)
{
    return node ? tf_json_str(assign, node, "pool", NULL) : NULL;
}

/* Merge-patches label KEY=VALUE onto OBJ (of RES) when it differs. */
static void put_label(struct tf_reconciler *r, const struct tf_k8s_resource *res, json_object *obj,
                      const char *key, const char *value)
{
    const char *have = tf__rc_lbl(obj, key);
    if (!value || (have && strcmp(have, value) == 0))
        return;
    json_object *p = json_object_new_object(), *m = json_object_new_object(),
                *l = json_object_new_object();
    json_object_object_add(l, key, json_object_new_string(value));
    json_object_object_add(m, "labels", l);
    json_object_object_add(p, "metadata", m);
    char err[256];
    const char *name = tf_json_str(obj, "metadata", "name", NULL);
    if (tf_k8s_merge_patch(r->c, res, NULL, name, NULL, p, NULL, err, sizeof(err)))
        tf_log(TF_LOG_WARN, "reconcile", "cannot label %s %s %s=%s: %s", res->kind, name, key,
               value, err);
    else
        r->writes++;
    json_object_put(p);
}

void tf__rc_gpu_pool(struct tf_reconciler *r, json_object *gpu, json_object *assign,
                     const char *node_phase, json_object *st)
{
    const char *node = tf__rc_gpu_node(gpu);
    json_object *a = node ? tf_json_path(assign, node, NULL) : NULL;
    if (a)
        put_label(r, &tf_k8s_gpus, gpu, LABEL_POOL, tf_json_str(a, "pool", NULL));
    json_object_object_add(st, "isolationPolicy",
                           json_object_new_string(r->static_policy ? "Static" : "Dynamic"));
    if (a && r->static_policy)
        json_object_object_add(st, "isolationMode",
                               json_object_new_string(tf_json_str(a, "mode", NULL)));
    /* A node whose hypervisor stopped renewing its heartbeat takes no new pods: its GPUs go
     * Unknown (the extender places only on Running GPUs; pods there keep their GPUs) and come
     * back when the heartbeat does. A GPU the hypervisor itself marked Unknown (device gone)
     * is left to it. */
    const char *phase = tf_json_str(gpu, "status", "phase", NULL);
    const char *msg = tf_json_str(gpu, "status", "message", NULL);
    bool ours = msg && strncmp(msg, UNKNOWN_MSG_PREFIX, strlen(UNKNOWN_MSG_PREFIX)) == 0;
    if (node_phase && strcmp(node_phase, "Unknown") == 0 &&
        (!phase || strcmp(phase, "Running") == 0)) {
        char m[400];
        snprintf(m, sizeof(m),
                 UNKNOWN_MSG_PREFIX "the heartbeat Lease of node %s's hypervisor expired; no new "
                                    "pods are placed on this GPU until it is renewed",
                 node);
        json_object_object_add(st, "phase", json_object_new_string("Unknown"));
        json_object_object_add(st, "message", json_object_new_string(m));
    } else if (ours && node_phase && strcmp(node_phase, "Unknown") != 0) {
        json_object_object_add(st, "phase", json_object_new_string("Running"));
        json_object_object_add(st, "message", json_object_new_string(""));
    }
}

/* The condition list of GN with the PoolConflict condition set to COND (consumed); the
 * transition time kept while the status does not change. */
static json_object *with_condition(json_object *gn, json_object *cond)
{
    json_object *out = json_object_new_array();
    json_object *have = tf_json_path(gn, "status", "conditions", NULL);
    const char *type = tf_json_str(cond, "type", NULL);
    for (size_t i = 0;
         have && json_object_is_type(have, json_type_array) && i < json_object_array_length(have);
         i++) {
        json_object *c = json_object_array_get_idx(have, i);
        const char *t = tf_json_str(c, "type", NULL);
        if (t && strcmp(t, type) == 0) {
            const char *s0 = tf_json_str(c, "status", NULL),
                       *s1 = tf_json_str(cond, "status", NULL);
            const char *lt = tf_json_str(c, "lastTransitionTime", NULL);
            if (s0 && s1 && lt && strcmp(s0, s1) == 0)
                json_object_object_add(cond, "lastTransitionTime", json_object_new_string(lt));
            continue;
        }
        json_object_array_add(out, json_object_get(c));
    }
    json_object_array_add(out, cond);
    return out;
}

void tf__rc_gpunode_pool(struct tf_reconciler *r, json_object *gn, json_object *assign,
                         json_object *st)
{
    const char *node = tf_json_str(gn, "metadata", "name", NULL);
    json_object *a = node ? tf_json_path(assign, node, NULL) : NULL;
    if (!a)
        return;
    const char *pool = tf_json_str(a, "pool", NULL);
    const char *was = tf__rc_lbl(gn, LABEL_POOL);
    bool by_sel = json_object_get_boolean(tf_json_path(a, "bySelector", NULL));
    if (pool && (!was || strcmp(was, pool) != 0))
        tf__rc_event(r, gn, "Normal", "PoolAssigned", "GPU node %s joins pool %s%s%s%s", node, pool,
                     by_sel ? " (selected by its nodeSelector)" : "", was ? ", leaving " : "",
                     was ? was : "");
    put_label(r, &tf_k8s_gpunodes, gn, LABEL_POOL, pool);
    int n = json_object_get_int(tf_json_path(a, "matched", NULL));
    const char *names = tf_json_str(a, "pools", NULL);
    char now[40], msg[1400];
    tf_k8s_time_now(now, sizeof(now), false);
    json_object *cond = json_object_new_object();
    json_object_object_add(cond, "type", json_object_new_string("PoolConflict"));
    json_object_object_add(cond, "status", json_object_new_string(n > 1 ? "True" : "False"));
    json_object_object_add(cond, "lastTransitionTime", json_object_new_string(now));
    if (n > 1)
        snprintf(msg, sizeof(msg),
                 "the nodeSelectors of %d pools match node %s (%s): assigned to %s; make the "
                 "pools' selectors disjoint",
                 n, node, names ? names : "", pool);
    else
        snprintf(msg, sizeof(msg), "node %s belongs to pool %s", node, pool);
    json_object_object_add(cond, "reason",
                           json_object_new_string(n > 1 ? "SelectorsOverlap" : "SinglePool"));
    json_object_object_add(cond, "message", json_object_new_string(msg));
    /* An Event when the conflict starts or its message changes. */
    json_object *old = NULL, *conds = tf_json_path(gn, "status", "conditions", NULL);
    for (size_t i = 0; conds && json_object_is_type(conds, json_type_array) &&
                       i < json_object_array_length(conds);
         i++) {
        const char *t = tf_json_str(json_object_array_get_idx(conds, i), "type", NULL);
        if (t && strcmp(t, "PoolConflict") == 0)
            old = json_object_array_get_idx(conds, i);
    }
    const char *old_msg = tf_json_str(old, "message", NULL);
    if (n > 1 && (!old_msg || strcmp(old_msg, msg) != 0))
        tf__rc_event(r, gn, "Warning", "PoolConflict", "%s", msg);
    json_object_object_add(st, "conditions", with_condition(gn, cond));
}

void tf__rc_pool_isolation(struct tf_reconciler *r, json_object *pool, json_object *st)
{
    json_object *rules =
        tf_json_path(pool, "spec", "nodeManagerConfig", "isolationModeRules", NULL);
    if (!rules || !json_object_is_type(rules, json_type_array) ||
        json_object_array_length(rules) == 0)
        return;
    char now[40];
    tf_k8s_time_now(now, sizeof(now), false);
    json_object *cond = json_object_new_object();
    json_object_object_add(cond, "type", json_object_new_string("IsolationModeRules"));
    json_object_object_add(cond, "status",
                           json_object_new_string(r->static_policy ? "True" : "False"));
    json_object_object_add(cond, "lastTransitionTime", json_object_new_string(now));
    json_object_object_add(
        cond, "reason",
        json_object_new_string(r->static_policy ? "Applied" : "DynamicIsolationPolicy"));
    json_object_object_add(
        cond, "message",
        json_object_new_string(
            r->static_policy
                ? "each node runs the mode of the first rule matching its labels, else "
                  "defaultIsolationMode"
                : "not applied: the controller's isolationModePolicy is dynamic (each GPU "
                  "takes the mode of the first pod placed on it); set it to static to pin "
                  "nodes to these modes"));
    const char *was = NULL;
    json_object *conds = tf_json_path(pool, "status", "conditions", NULL);
    for (size_t i = 0; conds && json_object_is_type(conds, json_type_array) &&
                       i < json_object_array_length(conds);
         i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tf_json_str(c, "type", NULL);
        if (t && strcmp(t, "IsolationModeRules") == 0)
            was = tf_json_str(c, "status", NULL);
    }
    if (!r->static_policy && (!was || strcmp(was, "False") != 0))
        tf__rc_event(r, pool, "Warning", "IsolationModeRulesIgnored",
                     "pool %s: isolationModeRules are not applied under the dynamic "
                     "isolationModePolicy",
                     tf_json_str(pool, "metadata", "name", NULL));
    json_object_object_add(st, "conditions", with_condition(pool, cond));
}
