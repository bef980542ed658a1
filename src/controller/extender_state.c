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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- state rebuild ------------------------------------------------------------------------ */

static int copy_into(json_object *o, void *arg)
{
    json_object *cp = NULL;
    if (json_object_deep_copy(o, &cp, NULL) == 0)
        json_object_array_add(arg, cp);
    return 0;
}

static json_object *snapshot(struct tf_informer *inf)
{
    json_object *arr = json_object_new_array();
    if (inf)
        tf_informer_foreach(inf, copy_into, arr);
    return arr;
}

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

/* Splits "a,b" into UUIDS (pointers into BUF). */
static size_t split_ids(const char *ids, char *buf, size_t len, const char **uuids, size_t cap)
{
    tf_strlcpy(buf, ids, len);
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < cap;
         t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        if (*t)
            uuids[n++] = t;
    }
    return n;
}

static void restore_one(struct tf_alloc *a, json_object *pod, const char *node, const char *ids)
{
    struct req_buf b;
    char err[512], buf[4096];
    const char *uuids[TF_NODE_MAX_GPUS];
    if (tf_podreq_from_pod(pod, &b.pr, err, sizeof(err)) || !b.pr.managed || b.pr.remote_client)
        return;
    tf__ext_to_alloc(&b);
    size_t n = split_ids(ids, buf, sizeof(buf), uuids, TF_NODE_MAX_GPUS);
    int rc = tf_alloc_restore(a, &b.req, node, uuids, n, err, sizeof(err));
    if (rc && rc != TF_EEXIST)
        tf_log(TF_LOG_WARN, "extender", "cannot restore allocation pod=%s/%s err=%s", b.pr.ns,
               b.pr.name, err);
}

/* The cluster (pools, nodes, GPUs; no allocations) of the arrays (borrowed). NULL on ENOMEM. */
static struct tf_cluster *build_cluster(const struct tf_extender *x, json_object *gpus,
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
    /* Group GPUs by node: node name -> array of GPU objects. */
    json_object *by_node = json_object_new_object();
    for (size_t i = 0; i < json_object_array_length(gpus); i++) {
        json_object *g = json_object_array_get_idx(gpus, i);
        const char *node = tf_json_str(g, "status", "nodeSelector", "kubernetes.io/hostname", NULL);
        if (!node)
            continue;
        json_object *arr = NULL;
        if (!json_object_object_get_ex(by_node, node, &arr)) {
            arr = json_object_new_array();
            json_object_object_add(by_node, node, arr);
        }
        json_object_array_add(arr, json_object_get(g));
    }
    json_object_object_foreach(by_node, node, arr)
    {
        struct tf_gpu_spec specs[TF_NODE_MAX_GPUS];
        uint16_t n = 0;
        const char *pool_name = NULL;
        for (size_t i = 0; i < json_object_array_length(arr) && n < TF_NODE_MAX_GPUS; i++) {
            json_object *g = json_object_array_get_idx(arr, i);
            const char *model = tf_json_str(g, "status", "gpuModel", NULL);
            int64_t vram = q_bytes(tf_json_str(g, "status", "capacity", "vram", NULL));
            const struct tf_gpu_model *m = model ? tf_gpu_model_find(model) : NULL;
            if (!m && model)
                m = tf_gpu_model_from_nvml(model, vram);
            if (!m) {
                tf_log(TF_LOG_WARN, "extender", "GPU %s: unknown model %s, not schedulable",
                       tf_json_str(g, "metadata", "name", NULL), model ? model : "(none)");
                continue;
            }
            struct tf_gpu_spec *s = &specs[n];
            memset(s, 0, sizeof(*s));
            s->uuid = tf_json_str(g, "status", "uuid", NULL);
            if (!s->uuid)
                s->uuid = tf_json_str(g, "metadata", "name", NULL);
            s->model = m;
            json_object *idx = tf_json_path(g, "status", "index", NULL);
            s->index = idx ? json_object_get_int(idx) : (int32_t)n;
            json_object *numa = tf_json_path(g, "status", "numaNode", NULL);
            s->numa = numa ? (int16_t)json_object_get_int(numa) : -1;
            const char *phase = tf_json_str(g, "status", "phase", NULL);
            enum tf_gpu_phase ph = TF_GPU_RUNNING;
            if (phase && tf_gpu_phase_parse(phase, &ph))
                ph = TF_GPU_UNKNOWN;
            s->phase = ph;
            s->tflops_milli = q_milli(tf_json_str(g, "status", "capacity", "tflops", NULL));
            s->vram_bytes = vram;
            if (!pool_name)
                pool_name = tf_json_str(g, "metadata", "labels", LABEL_GPUPOOL, NULL);
            n++;
        }
        if (!n)
            continue;
        uint32_t pool = tf_cluster_pool_find(c, pool_name ? pool_name : x->default_pool);
        if (pool == TF_NONE)
            pool = tf_cluster_default_pool(c);
        struct tf_node_spec ns = {.name = node, .gpus = specs, .ngpus = n};
        uint32_t id;
        if (tf_cluster_add_node(c, pool, &ns, &id, err, sizeof(err)))
            tf_log(TF_LOG_WARN, "extender", "node %s ignored: %s", node, err);
    }
    json_object_put(by_node);
    return c;
}

int tf_extender_build_cluster(const struct tf_extender *x, json_object *gpus, json_object *pools,
                              json_object *templates, struct tf_cluster **out)
{
    *out = build_cluster(x, gpus, pools, templates);
    return *out ? 0 : TF_ENOMEM;
}

/* Builds a fresh cluster + allocator from the arrays (borrowed); caller holds the write
 * lock. Returns 0 or TF_ENOMEM. */
int tf__ext_load(struct tf_extender *x, json_object *gpus, json_object *pools,
                 json_object *templates, json_object *quotas, json_object *pods)
{
    int rc = TF_ENOMEM;
    struct tf_cluster *c = build_cluster(x, gpus, pools, templates);
    struct tf_quota_set *qs = build_quotas(quotas);
    struct tf_alloc *a = c && qs ? tf_alloc_new(c, qs) : NULL;
    if (!a)
        goto fail;
    /* Restore: recorded allocations first, then binds whose annotations the cache lags. */
    for (size_t i = 0; i < json_object_array_length(pods); i++) {
        json_object *pod = json_object_array_get_idx(pods, i);
        const char *ids = tf_json_str(pod, "metadata", "annotations", ANN_GPU_IDS, NULL);
        const char *pnode = tf_json_str(pod, "spec", "nodeName", NULL);
        if (ids && pnode && tf__ext_pod_live(pod))
            restore_one(a, pod, pnode, ids);
    }
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
        json_object *pod = tf_json_path(v, "pod", NULL);
        restore_one(a, pod, tf_json_str(v, "node", NULL), tf_json_str(v, "ids", NULL));
    }
    pthread_mutex_unlock(&x->inflight_lock);
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

void tf__ext_rebuild(struct tf_extender *x)
{
    json_object *gpus = snapshot(x->src.gpus), *pools = snapshot(x->src.pools),
                *templates = snapshot(x->src.templates), *quotas = snapshot(x->src.quotas),
                *pods = snapshot(x->src.pods);
    if (tf__ext_load(x, gpus, pools, templates, quotas, pods))
        tf_log(TF_LOG_ERROR, "extender", "state rebuild failed: out of memory");
    json_object_put(gpus);
    json_object_put(pools);
    json_object_put(templates);
    json_object_put(quotas);
    json_object_put(pods);
}
