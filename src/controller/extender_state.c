/* SPDX-License-Identifier: Apache-2.0
 *
 * The extender's state: the allocator's cluster, pools and quotas built from GPU, GPUPool,
 * SchedulingConfigTemplate and GPUResourceQuota objects, and every live pod's recorded
 * allocation restored (see extender.h).
 */
#include "controller/extender_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/quantity.h"
#include "core/strmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- state rebuild ------------------------------------------------------------------------ */

static int64_t q_milli(const char *s)
{
    int64_t v = 0;
    return s && tf_quantity_milli(s, &v, "", NULL, 0) == 0 ? v : 0;
}

static int64_t q_bytes(const char *s)
{
    int64_t v = 0;
    return s && tf_quantity_bytes(s, &v, "", NULL, 0) == 0 ? v : 0;
}

static void pool_config(json_object *pool, json_object *templates, const char *default_pool,
                        struct tf_pool_config *cfg)
{
    tf_pool_config_init(cfg);
    const char *name = tf_json_str(pool, "metadata", "name", NULL);
    cfg->is_default = name && strcmp(name, default_pool) == 0;
    json_object *ov = tf_json_path(pool, "spec", "capacityConfig", "oversubscription", NULL);
    json_object *v = tf_json_path(ov, "tflopsOversellRatio", NULL);
    if (v && json_object_get_int(v) >= 100)
        cfg->tflops_oversell_pct = json_object_get_int(v);
    v = tf_json_path(ov, "vramExpandToHostMem", NULL);
    if (v && json_object_get_int(v) >= 0 && json_object_get_int(v) <= 100)
        cfg->vram_expand_host_mem_pct = json_object_get_int(v);
    const char *iso = tf_json_str(pool, "spec", "nodeManagerConfig", "defaultIsolationMode", NULL);
    enum tf_isolation m;
    if (iso && tf_isolation_parse(iso, &m) == 0 && m != TF_ISOLATION_UNSET)
        cfg->default_isolation = m;
    const char *qos = tf_json_str(pool, "spec", "qosConfig", "defaultQoS", NULL);
    enum tf_qos q;
    if (qos && tf_qos_parse(qos, &q) == 0)
        cfg->default_qos = q;
    const char *tpl = tf_json_str(pool, "spec", "schedulingConfigTemplate", NULL);
    for (size_t i = 0; tpl && i < json_object_array_length(templates); i++) {
        json_object *t = json_object_array_get_idx(templates, i);
        const char *tn = tf_json_str(t, "metadata", "name", NULL);
        const char *mode = tf_json_str(t, "spec", "placement", "mode", NULL);
        enum tf_placement_mode pm;
        if (tn && strcmp(tn, tpl) == 0 && mode && tf_placement_parse(mode, &pm) == 0)
            cfg->placement = pm;
    }
}

static void quota_res(json_object *o, struct tf_quota_res *r)
{
    const char *t = tf_json_str(o, "tflops", NULL), *v = tf_json_str(o, "vram", NULL);
    if (t)
        r->tflops = q_milli(t);
    if (v)
        r->vram = q_bytes(v);
}

static struct tf_quota_set *build_quotas(json_object *quotas)
{
    struct tf_quota_set *qs = tf_quota_set_new();
    for (size_t i = 0; qs && i < json_object_array_length(quotas); i++) {
        json_object *q = json_object_array_get_idx(quotas, i);
        struct tf_quota_spec spec;
        tf_quota_spec_init(&spec);
        quota_res(tf_json_path(q, "spec", "total", "requests", NULL), &spec.total_requests);
        quota_res(tf_json_path(q, "spec", "total", "limits", NULL), &spec.total_limits);
        json_object *mw = tf_json_path(q, "spec", "total", "maxWorkers", NULL);
        if (mw)
            spec.max_workers = json_object_get_int(mw);
        quota_res(tf_json_path(q, "spec", "single", "maxRequests", NULL), &spec.max_requests);
        quota_res(tf_json_path(q, "spec", "single", "maxLimits", NULL), &spec.max_limits);
        char err[256];
        const char *ns = tf_json_str(q, "metadata", "namespace", NULL);
        if (ns && tf_quota_put(qs, ns, &spec, err, sizeof(err)))
            tf_log(TF_LOG_WARN, "extender", "quota %s ignored: %s", ns, err);
    }
    return qs;
}

bool tf__ext_pod_live(json_object *pod)
{
    const char *phase = tf_json_str(pod, "status", "phase", NULL);
    return !tf_json_path(pod, "metadata", "deletionTimestamp", NULL) &&
           !(phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0));
}

/* Restores a pod kept in the in-flight list (its bind's pod object and GPUs). */
static void restore_inflight(struct tf_alloc *a, json_object *pod, const char *node,
                             const char *ids)
{
    struct req_buf b;
    char err[512];
    if (!node || !ids || tf_podreq_from_pod(pod, &b.pr, err, sizeof(err)) || !b.pr.managed ||
        b.pr.remote_client)
        return;
    tf__ext_to_alloc(&b);
    tf__ext_restore(a, b.pr.ns, b.pr.name, &b.req, node, ids);
}

/* The cluster (pools, nodes, GPUs; no allocations) of the GPU table GT and the pool and
 * template arrays (borrowed). Nodes come in the order their first GPU appears in the table,
 * GPUs in table order. NULL on ENOMEM. */
static struct tf_cluster *build_cluster(const struct tf_extender *x, struct tf__gpus *gt,
                                        json_object *pools, json_object *templates)
{
    struct tf_cluster *c = tf_cluster_new(x->policy);
    char err[512];
    if (!c)
        return NULL;
    for (size_t i = 0; i < json_object_array_length(pools); i++) {
        json_object *p = json_object_array_get_idx(pools, i);
        struct tf_pool_config cfg;
        pool_config(p, templates, x->default_pool, &cfg);
        uint32_t id;
        if (tf_cluster_add_pool(c, tf_json_str(p, "metadata", "name", NULL), &cfg, &id, err,
                                sizeof(err)))
            tf_log(TF_LOG_WARN, "extender", "pool ignored: %s", err);
    }
    if (tf_cluster_pool_find(c, x->default_pool) == TF_NONE) {
        struct tf_pool_config cfg;
        tf_pool_config_init(&cfg);
        cfg.is_default = true;
        uint32_t id;
        tf_cluster_add_pool(c, x->default_pool, &cfg, &id, err, sizeof(err));
    }
    /* Group the GPUs by node: first[g] .. next[] chains in table order. */
    pthread_mutex_lock(&gt->lock);
    struct tf__gpu_rec *const *v = (struct tf__gpu_rec *const *)gt->t.v;
    uint32_t ngpus = gt->t.n;
    struct tf_strmap by_node;
    tf_strmap_init(&by_node);
    uint32_t *first = malloc((ngpus + 1) * sizeof(*first)),
             *last = malloc((ngpus + 1) * sizeof(*last)),
             *next = malloc((ngpus + 1) * sizeof(*next));
    uint32_t ngroups = 0;
    bool ok = first && last && next && !tf_strmap_reserve(&by_node, ngpus);
    for (uint32_t i = 0; ok && i < ngpus; i++) {
        const char *node = v[i]->node;
        uint32_t g;
        next[i] = UINT32_MAX;
        if (tf_strmap_get(&by_node, node, strlen(node), &g) == 0) {
            next[last[g]] = (uint32_t)i;
            last[g] = (uint32_t)i;
            continue;
        }
        if (tf_strmap_put(&by_node, node, ngroups)) {
            ok = false;
            break;
        }
        first[ngroups] = last[ngroups] = (uint32_t)i;
        ngroups++;
    }
    if (ok && tf_cluster_reserve(c, ngroups, ngpus))
        ok = false;
    for (uint32_t g = 0; ok && g < ngroups; g++) {
        struct tf_gpu_spec specs[TF_NODE_MAX_GPUS];
        uint16_t n = 0;
        const char *pool_name = NULL;
        enum tf_isolation mode = TF_ISOLATION_UNSET;
        for (uint32_t i = first[g]; i != UINT32_MAX && n < TF_NODE_MAX_GPUS; i = next[i]) {
            const struct tf__gpu_rec *r = v[i];
            struct tf_gpu_spec *s = &specs[n];
            memset(s, 0, sizeof(*s));
            s->uuid = r->uuid;
            s->model = r->model;
            s->index = r->index >= 0 ? r->index : (int32_t)n;
            s->numa = r->numa;
            s->phase = (enum tf_gpu_phase)r->phase;
            s->tflops_milli = r->tflops;
            s->vram_bytes = r->vram;
            if (!pool_name && r->pool)
                pool_name = r->pool;
            if (mode == TF_ISOLATION_UNSET)
                mode = (enum tf_isolation)r->mode;
            n++;
        }
        const char *node = v[first[g]]->node;
        uint32_t pool = tf_cluster_pool_find(c, pool_name ? pool_name : x->default_pool);
        if (pool == TF_NONE)
            pool = tf_cluster_default_pool(c);
        /* The node's mode from its pool's isolationModeRules (the controller's resolution on
         * its GPUs; shared is no node mode), else the pool's defaultIsolationMode. */
        if (mode != TF_ISOLATION_SOFT && mode != TF_ISOLATION_HARD &&
            mode != TF_ISOLATION_PARTITIONED)
            mode = TF_ISOLATION_UNSET;
        struct tf_node_spec ns = {.name = node, .static_mode = mode, .gpus = specs, .ngpus = n};
        uint32_t id;
        int rc = tf_cluster_add_node(c, pool, &ns, &id, err, sizeof(err));
        if (rc == TF_ENOMEM)
            ok = false;
        else if (rc)
            tf_log(TF_LOG_WARN, "extender", "node %s ignored: %s", node, err);
    }
    pthread_mutex_unlock(&gt->lock);
    tf_strmap_free(&by_node);
    free(first);
    free(last);
    free(next);
    if (ok)
        return c;
    tf_cluster_destroy(c);
    return NULL;
}

int tf_extender_build_cluster(const struct tf_extender *x, json_object *gpus, json_object *pools,
                              json_object *templates, struct tf_cluster **out)
{
    struct tf__gpus *gt = tf__gpus_new();
    if (gt)
        tf__gpus_load(gt, gpus);
    *out = gt ? build_cluster(x, gt, pools, templates) : NULL;
    tf__gpus_destroy(gt);
    return *out ? 0 : TF_ENOMEM;
}

/* Builds a fresh cluster + allocator from the GPU table, the pool/template/quota arrays
 * (borrowed), the ledger and the in-flight binds, and swaps it in; caller holds the write
 * lock. Returns 0 or TF_ENOMEM. */
static int build(struct tf_extender *x, json_object *pools, json_object *templates,
                 json_object *quotas)
{
    int rc = TF_ENOMEM;
    struct tf_cluster *c = build_cluster(x, x->gpus, pools, templates);
    struct tf_quota_set *qs = build_quotas(quotas);
    struct tf_alloc *a = c && qs ? tf_alloc_new(c, qs) : NULL;
    if (!a)
        goto fail;
    /* Restore: recorded allocations first, then binds whose annotations the cache lags. */
    if (tf_alloc_bulk_begin(a, tf__ledger_count(x->ledger))) {
        tf_alloc_destroy(a);
        goto fail;
    }
    tf__ledger_restore(x->ledger, a);
    pthread_mutex_lock(&x->inflight_lock);
    json_object_object_foreach(x->inflight, key, v)
    {
        const char *slash = strchr(key, '/');
        if (!slash)
            continue;
        char ns[64];
        snprintf(ns, sizeof(ns), "%.*s", (int)(slash - key), key);
        if (tf_alloc_find(a, ns, slash + 1) != TF_NONE)
            continue;
        restore_inflight(a, tf_json_path(v, "pod", NULL), tf_json_str(v, "node", NULL),
                         tf_json_str(v, "ids", NULL));
    }
    pthread_mutex_unlock(&x->inflight_lock);
    tf_alloc_bulk_end(a);
    struct tf_alloc_index *ix = tf_alloc_index_new(a);
    if (!ix) {
        tf_alloc_destroy(a);
        goto fail;
    }
    pthread_mutex_lock(&x->index_lock);
    tf_alloc_index_destroy(x->index);
    x->index = ix;
    pthread_mutex_unlock(&x->index_lock);
    tf_alloc_destroy(x->alloc);
    tf_cluster_destroy(x->cluster);
    tf_quota_set_destroy(x->quotas);
    x->alloc = a;
    x->cluster = c;
    x->quotas = qs;
    tf_log(TF_LOG_INFO, "extender", "state rebuilt nodes=%u gpus=%u allocations=%u", c->nnodes,
           c->ngpus, tf_alloc_count(a));
    c = NULL;
    qs = NULL;
    rc = 0;
fail:
    tf_cluster_destroy(c);
    tf_quota_set_destroy(qs);
    return rc;
}

int tf__ext_load(struct tf_extender *x, json_object *gpus, json_object *pools,
                 json_object *templates, json_object *quotas, json_object *pods)
{
    tf__gpus_load(x->gpus, gpus);
    tf__ledger_load(x->ledger, pods);
    /* Kept for rebuilds when no informer feeds them. */
    json_object *arrays[] = {pools, templates, quotas};
    for (int i = 0; i < 3; i++) {
        json_object_put(x->loaded[i]);
        x->loaded[i] = arrays[i] ? json_object_get(arrays[i]) : json_object_new_array();
    }
    return build(x, x->loaded[0], x->loaded[1], x->loaded[2]);
}

/* The objects of informer INF, or (no informers at all) those tf_extender_load was given
 * last. A new reference to an array. */
static json_object *inventory(struct tf_extender *x, bool informers, struct tf_informer *inf, int i)
{
    if (informers)
        return tf_informer_snapshot(inf);
    return x->loaded[i] ? json_object_get(x->loaded[i]) : json_object_new_array();
}

int tf__ext_rebuild(struct tf_extender *x)
{
    bool informers = x->src.pools || x->src.templates || x->src.quotas;
    json_object *pools = inventory(x, informers, x->src.pools, 0),
                *templates = inventory(x, informers, x->src.templates, 1),
                *quotas = inventory(x, informers, x->src.quotas, 2);
    int rc = build(x, pools, templates, quotas);
    if (rc)
        tf_log(TF_LOG_ERROR, "extender", "state rebuild failed: out of memory");
    json_object_put(pools);
    json_object_put(templates);
    json_object_put(quotas);
    return rc;
}
