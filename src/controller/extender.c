/* SPDX-License-Identifier: Apache-2.0
 *
 * kube-scheduler extender over the core allocator (see extender.h).
 */
#include "controller/extender.h"
#include "controller/extender_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/extender_codec.h"
#include "controller/podreq.h"
#include "core/alloc.h"
#include "core/preempt.h"
#include "core/quantity.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LABEL_GPUPOOL "tensor-fusion.ai/gpupool"

/* Seconds a started preemption is left to take effect before the same pod may plan again. */
#define PREEMPT_HOLD_S 30

struct tf_extender *tf_extender_new(struct tf_k8s_client *c, const char *default_pool,
                                    const char *policy)
{
    struct tf_extender *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    x->c = c;
    x->default_pool = strdup(default_pool ? default_pool : "default-pool");
    x->policy = TF_ISOPOL_DYNAMIC;
    if (policy && tf_iso_policy_parse(policy, &x->policy))
        tf_log(TF_LOG_WARN, "extender", "unknown isolationModePolicy %s, using dynamic", policy);
    pthread_rwlock_init(&x->lock, NULL);
    pthread_mutex_init(&x->inflight_lock, NULL);
    x->inflight = json_object_new_object();
    x->preempting = json_object_new_object();
    atomic_init(&x->dirty, true);
    if (!x->default_pool || !x->inflight || !x->preempting) {
        tf_extender_destroy(x);
        return NULL;
    }
    return x;
}

void tf_extender_set_sources(struct tf_extender *x, const struct tf_extender_sources *src)
{
    x->src = *src;
    atomic_store(&x->dirty, true);
}

void tf_extender_set_allocsig(struct tf_extender *x, const struct tf_allocsig *sig)
{
    x->sig = sig;
    atomic_store(&x->dirty, true);
}

void tf_extender_destroy(struct tf_extender *x)
{
    if (!x)
        return;
    tf_alloc_destroy(x->alloc);
    tf_cluster_destroy(x->cluster);
    tf_quota_set_destroy(x->quotas);
    json_object_put(x->inflight);
    json_object_put(x->preempting);
    pthread_rwlock_destroy(&x->lock);
    pthread_mutex_destroy(&x->inflight_lock);
    free(x->default_pool);
    free(x);
}

void tf_extender_invalidate(struct tf_extender *x)
{
    atomic_store(&x->dirty, true);
}

/* ---- request mapping ---------------------------------------------------------------------- */

void tf__ext_to_alloc(struct req_buf *b)
{
    struct tf_podreq *p = &b->pr;
    struct tf_alloc_request *r = &b->req;
    memset(r, 0, sizeof(*r));
    r->ns = p->ns;
    r->name = p->name;
    r->pool = p->pool[0] ? p->pool : NULL;
    r->res.req_by_percent = p->req_pct;
    r->res.lim_by_percent = p->lim_pct;
    r->res.req_tflops = p->req_tflops;
    r->res.lim_tflops = p->lim_tflops;
    r->res.req_percent = p->req_bp;
    r->res.lim_percent = p->lim_bp;
    r->res.req_vram = p->req_vram;
    r->res.lim_vram = p->lim_vram;
    r->gpu_count = (uint16_t)p->gpu_count;
    static const enum tf_isolation iso[] = {TF_ISOLATION_SOFT, TF_ISOLATION_HARD,
                                            TF_ISOLATION_SHARED, TF_ISOLATION_PARTITIONED};
    static const enum tf_qos qos[] = {TF_QOS_LOW, TF_QOS_MEDIUM, TF_QOS_HIGH, TF_QOS_CRITICAL};
    r->isolation = iso[p->iso];
    r->qos = qos[p->qos];
    r->model = p->model[0] ? p->model : NULL;
    r->vendor = p->vendor[0] ? p->vendor : NULL;
    r->gpu_indices = p->nindices ? p->indices : NULL;
    r->n_indices = (uint16_t)p->nindices;
    r->dedicated = p->dedicated;
    for (int i = 0; i < p->ncontainers; i++) {
        b->containers[i].name = p->containers[i].name;
        b->containers[i].gpus = (uint16_t)p->containers[i].gpus;
    }
    r->containers = p->ncontainers ? b->containers : NULL;
    r->ncontainers = (uint16_t)p->ncontainers;
}

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

static bool pod_live(json_object *pod)
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
static int load(struct tf_extender *x, json_object *gpus, json_object *pools,
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
        if (!ids || !pnode || !pod_live(pod))
            continue;
        if (tf_allocsig_verify(x->sig, pod))
            restore_one(a, pod, pnode, ids);
        else
            tf_log(TF_LOG_WARN, "extender",
                   "pod=%s/%s claims GPUs %.200s on node %s without this controller's "
                   "allocation signature: not booked",
                   tf_json_str(pod, "metadata", "namespace", NULL),
                   tf_json_str(pod, "metadata", "name", NULL), ids, pnode);
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

static void rebuild(struct tf_extender *x)
{
    json_object *gpus = snapshot(x->src.gpus), *pools = snapshot(x->src.pools),
                *templates = snapshot(x->src.templates), *quotas = snapshot(x->src.quotas),
                *pods = snapshot(x->src.pods);
    if (load(x, gpus, pools, templates, quotas, pods))
        tf_log(TF_LOG_ERROR, "extender", "state rebuild failed: out of memory");
    json_object_put(gpus);
    json_object_put(pools);
    json_object_put(templates);
    json_object_put(quotas);
    json_object_put(pods);
}

int tf_extender_load(struct tf_extender *x, json_object *gpus, json_object *pools,
                     json_object *templates, json_object *quotas, json_object *pods)
{
    pthread_rwlock_wrlock(&x->lock);
    atomic_store(&x->dirty, false);
    int rc = load(x, gpus, pools, templates, quotas, pods);
    pthread_rwlock_unlock(&x->lock);
    return rc;
}

/* Takes the read lock with a current state (rebuilding under the write lock first if
 * needed). Returns false when there is no state at all. */
static bool read_state(struct tf_extender *x)
{
    if (atomic_load(&x->dirty)) {
        pthread_rwlock_wrlock(&x->lock);
        if (atomic_exchange(&x->dirty, false))
            rebuild(x);
        pthread_rwlock_unlock(&x->lock);
    }
    pthread_rwlock_rdlock(&x->lock);
    if (!x->alloc) {
        pthread_rwlock_unlock(&x->lock);
        return false;
    }
    return true;
}

bool tf__ext_write_state(struct tf_extender *x)
{
    pthread_rwlock_wrlock(&x->lock);
    if (atomic_exchange(&x->dirty, false))
        rebuild(x);
    if (!x->alloc) {
        pthread_rwlock_unlock(&x->lock);
        return false;
    }
    return true;
}

int tf_extender_allocations(struct tf_extender *x)
{
    if (!read_state(x))
        return 0;
    int n = (int)tf_alloc_count(x->alloc);
    pthread_rwlock_unlock(&x->lock);
    return n;
}

int tf_extender_room(struct tf_extender *x, const char *ns, const char *name, int64_t *tflops,
                     int64_t *vram)
{
    if (!read_state(x))
        return TF_ESTATE;
    uint32_t id = tf_alloc_find(x->alloc, ns, name);
    const struct tf_alloc_record *r = id == TF_NONE ? NULL : tf_alloc_record_at(x->alloc, id);
    int rc = r ? 0 : TF_ENOENT;
    for (unsigned i = 0; r && i < r->ngpus; i++) {
        const struct tf_alloc_slot *s = tf_alloc_record_slot(r, i);
        const struct tf_gpu *g = &x->cluster->gpus[s->gpu];
        int64_t t = g->avail_tflops + s->tflops, v = g->avail_vram + s->vram;
        if (i == 0 || t < *tflops)
            *tflops = t;
        if (i == 0 || v < *vram)
            *vram = v;
    }
    pthread_rwlock_unlock(&x->lock);
    return rc;
}

int tf_extender_resize(struct tf_extender *x, const char *ns, const char *name, int64_t req_tflops,
                       int64_t lim_tflops, int64_t req_vram, int64_t lim_vram, char *err,
                       size_t errlen)
{
    if (!tf__ext_write_state(x)) {
        tf_errf(err, errlen, "extender state unavailable");
        return TF_ESTATE;
    }
    uint32_t id = tf_alloc_find(x->alloc, ns, name);
    const struct tf_alloc_record *r = id == TF_NONE ? NULL : tf_alloc_record_at(x->alloc, id);
    int rc = TF_ENOENT;
    if (!r) {
        tf_errf(err, errlen, "pod %s/%s holds no GPUs", ns, name);
    } else {
        struct tf_alloc_resources res = r->res;
        if (req_tflops && !res.req_by_percent)
            res.req_tflops = req_tflops;
        if (lim_tflops && !res.lim_by_percent)
            res.lim_tflops = lim_tflops;
        if (req_vram)
            res.req_vram = req_vram;
        if (lim_vram)
            res.lim_vram = lim_vram;
        rc = tf_alloc_resize(x->alloc, ns, name, &res, err, errlen);
    }
    pthread_rwlock_unlock(&x->lock);
    return rc;
}

/* ---- informer handlers -------------------------------------------------------------------- */

void tf__ext_release_pod(struct tf_extender *x, json_object *pod)
{
    const char *ns = tf_json_str(pod, "metadata", "namespace", NULL);
    const char *name = tf_json_str(pod, "metadata", "name", NULL);
    if (!ns || !name)
        return;
    char key[400];
    snprintf(key, sizeof(key), "%s/%s", ns, name);
    pthread_mutex_lock(&x->inflight_lock);
    json_object_object_del(x->inflight, key);
    pthread_mutex_unlock(&x->inflight_lock);
    pthread_rwlock_wrlock(&x->lock);
    if (x->alloc && tf_alloc_release(x->alloc, ns, name) == 0)
        tf_log(TF_LOG_INFO, "extender", "released GPUs of pod=%s", key);
    pthread_rwlock_unlock(&x->lock);
}

static void on_pod_add(json_object *pod, void *arg)
{
    (void)pod, (void)arg;
}

static void on_pod_update(json_object *old, json_object *pod, void *arg)
{
    struct tf_extender *x = arg;
    if (!pod_live(pod)) {
        tf__ext_release_pod(x, pod);
        return;
    }
    if (tf_json_str(pod, "metadata", "annotations", ANN_GPU_IDS, NULL)) {
        char key[400];
        snprintf(key, sizeof(key), "%s/%s", tf_json_str(pod, "metadata", "namespace", NULL),
                 tf_json_str(pod, "metadata", "name", NULL));
        pthread_mutex_lock(&x->inflight_lock);
        json_object_object_del(x->inflight, key); /* the cache has caught up */
        pthread_mutex_unlock(&x->inflight_lock);
    }
}

static void on_pod_delete(json_object *pod, void *arg)
{
    tf__ext_release_pod(arg, pod);
}

static void on_inventory_add(json_object *o, void *arg)
{
    atomic_store(&((struct tf_extender *)arg)->dirty, true);
}

static void on_inventory_update(json_object *a, json_object *b, void *arg)
{
    /* Status writes of available/runningApps by the reconciler do not change the inventory. */
    json_object *sa = tf_json_path(a, "status", "capacity", NULL);
    json_object *sb = tf_json_path(b, "status", "capacity", NULL);
    if (json_object_equal(tf_json_path(a, "spec", NULL), tf_json_path(b, "spec", NULL)) &&
        json_object_equal(sa, sb) &&
        json_object_equal(tf_json_path(a, "status", "phase", NULL),
                          tf_json_path(b, "status", "phase", NULL)) &&
        json_object_equal(tf_json_path(a, "metadata", "labels", NULL),
                          tf_json_path(b, "metadata", "labels", NULL)) &&
        json_object_equal(tf_json_path(a, "status", "nodeSelector", NULL),
                          tf_json_path(b, "status", "nodeSelector", NULL)))
        return;
    atomic_store(&((struct tf_extender *)arg)->dirty, true);
}

struct tf_informer_handlers tf_extender_pod_handlers(struct tf_extender *x)
{
    struct tf_informer_handlers h = {on_pod_add, on_pod_update, on_pod_delete, x};
    return h;
}

struct tf_informer_handlers tf_extender_inventory_handlers(struct tf_extender *x)
{
    struct tf_informer_handlers h = {on_inventory_add, on_inventory_update, on_inventory_add, x};
    return h;
}

/* ---- handlers ----------------------------------------------------------------------------- */

/* QoS preemption (seed 000): a high or critical pod that fits none of the scheduler's candidate
 * nodes evicts the fewest low/medium pods that make room on one of them (core/preempt.h), via
 * the Eviction API, so PodDisruptionBudgets are honoured. kube-scheduler's own preemption cannot
 * do it: GPUs are the extender's resource (ignoredByScheduler), so its dry run never finds a
 * victim. The victims' reservations are released as their deletion reaches the pod cache; a
 * later filter call then finds the room. A pod's started preemption is not planned again for
 * PREEMPT_HOLD_S (evictions take effect asynchronously), and its message is repeated instead.
 * Returns the index in NODES (N of them, verdicts V) of the node being freed, or -1; MSG says
 * what is happening. Call without x->lock. */
static int preempt(struct tf_extender *x, struct req_buf *b, json_object *pod,
                   const char *const *nodes, const struct tf_node_verdict *v, size_t n, char *msg,
                   size_t msglen)
{
    if (b->pr.qos != TF_PODREQ_HIGH && b->pr.qos != TF_PODREQ_CRITICAL)
        return -1;
    char key[400], node[256] = "";
    snprintf(key, sizeof(key), "%s/%s", b->pr.ns, b->pr.name);
    time_t now = time(NULL);
    pthread_mutex_lock(&x->inflight_lock);
    json_object *held = NULL;
    if (json_object_object_get_ex(x->preempting, key, &held) &&
        now - json_object_get_int64(tf_json_path(held, "at", NULL)) < PREEMPT_HOLD_S) {
        tf_strlcpy(node, tf_json_str(held, "node", NULL), sizeof(node));
        tf_strlcpy(msg, tf_json_str(held, "msg", NULL), msglen);
    } else {
        held = NULL;
        /* Forget every preemption past its hold (pods scheduled or gone since). */
        json_object_object_foreach(x->preempting, k, e)
        {
            if (now - json_object_get_int64(tf_json_path(e, "at", NULL)) >= PREEMPT_HOLD_S)
                json_object_object_del(x->preempting, k);
        }
    }
    pthread_mutex_unlock(&x->inflight_lock);
    if (held) {
        for (size_t i = 0; i < n; i++)
            if (strcmp(nodes[i], node) == 0)
                return (int)i;
        return -1;
    }
    /* Plan under the write lock; keep the victims' keys, evict without it. */
    struct tf_preempt_plan *plan = malloc(sizeof(*plan));
    char(*victims)[TF_KEY_MAX] = calloc(TF_PREEMPT_MAX_VICTIMS, TF_KEY_MAX);
    uint32_t *cand = calloc(n + 1, sizeof(*cand));
    char err[512];
    int idx = -1;
    uint32_t nv = 0;
    if (!plan || !victims || !cand || !tf__ext_write_state(x))
        goto out;
    size_t nc = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].node != TF_NONE)
            cand[nc++] = v[i].node;
    int rc = tf_preempt_plan_on(x->alloc, &b->req, cand, nc, plan, err, sizeof(err));
    if (rc == 0 && plan->nvictims > 0)
        for (size_t i = 0; i < n; i++)
            if (v[i].node == plan->placement.node)
                idx = (int)i;
    if (idx >= 0) {
        nv = plan->nvictims;
        for (uint32_t i = 0; i < nv; i++)
            tf_strlcpy(victims[i],
                       tf_alloc_record_key(tf_alloc_record_at(x->alloc, plan->victims[i])),
                       TF_KEY_MAX);
    }
    pthread_rwlock_unlock(&x->lock);
    if (idx < 0) {
        if (rc && rc != TF_EPERM)
            tf_log(TF_LOG_DEBUG, "extender", "no preemption for %s: %s", key, err);
        goto out;
    }
    char list[1024] = "";
    uint32_t evicted = 0, deferred = 0;
    for (uint32_t i = 0; i < nv; i++) {
        char *slash = strchr(victims[i], '/');
        if (!slash)
            continue;
        *slash = '\0';
        const char *vns = victims[i], *vname = slash + 1;
        char verr[256];
        int erc = tf_k8s_evict(x->c, vns, vname, verr, sizeof(verr));
        if (erc == 0 || erc == TF_ENOENT) {
            evicted++;
            json_object *vp = x->src.pods ? tf_informer_get(x->src.pods, vns, vname) : NULL;
            if (vp) {
                char vmsg[700];
                snprintf(vmsg, sizeof(vmsg),
                         "evicted to make room on %s for %s pod %s (QoS preemption)", nodes[idx],
                         b->pr.qos == TF_PODREQ_CRITICAL ? "critical" : "high", key);
                tf_k8s_event(x->c, vp, "Warning", "Preempted", vmsg, "tf-scheduler");
                json_object_put(vp);
            }
        } else {
            deferred++;
            tf_log(TF_LOG_WARN, "extender", "preemption for %s: eviction of %s/%s: %s", key, vns,
                   vname, verr);
        }
        size_t l = strlen(list);
        snprintf(list + l, sizeof(list) - l, "%s%s/%s", i ? ", " : "", vns, vname);
    }
    snprintf(msg, msglen,
             "preempting %u lower-QoS pod%s on this node for this pod (%s)%s; it fits once they "
             "are gone",
             nv, nv == 1 ? "" : "s", list,
             deferred ? "; an eviction was refused for now (PodDisruptionBudget or API error; "
                        "planned again after 30 s)"
                      : "");
    tf_log(TF_LOG_INFO, "extender", "QoS preemption for %s on %s: %u evicted, %u deferred (%s)",
           key, nodes[idx], evicted, deferred, list);
    tf_k8s_event(x->c, pod, "Normal", "Preempting", msg, "tf-scheduler");
    json_object *e = json_object_new_object();
    json_object_object_add(e, "at", json_object_new_int64(now));
    json_object_object_add(e, "node", json_object_new_string(nodes[idx]));
    json_object_object_add(e, "msg", json_object_new_string(msg));
    pthread_mutex_lock(&x->inflight_lock);
    json_object_object_add(x->preempting, key, e);
    pthread_mutex_unlock(&x->inflight_lock);
out:
    free(plan);
    free(victims);
    free(cand);
    return idx;
}

static char *filter(struct tf_extender *x, const char *body, size_t len, int *status)
{
    struct tf_ext_args args;
    char err[1024];
    if (tf_ext_decode_args(body, len, &args, err, sizeof(err))) {
        *status = 400;
        return tf_ext_encode_binding_result(err);
    }
    struct req_buf b;
    const char **reasons = calloc(args.n_nodes + 1, sizeof(char *));
    struct tf_node_verdict *v = calloc(args.n_nodes + 1, sizeof(*v));
    char *rbuf = malloc(args.n_nodes * 160 + 1024);
    char *out = NULL;
    if (!reasons || !v || !rbuf)
        goto out;
    int rc = tf_podreq_from_pod(args.pod, &b.pr, err, sizeof(err));
    if (rc) {
        for (size_t i = 0; i < args.n_nodes; i++)
            reasons[i] = err;
        out = tf_ext_encode_filter(&args, reasons, NULL, NULL);
        goto out;
    }
    if (!b.pr.managed || b.pr.remote_client) {
        out = tf_ext_encode_filter(&args, reasons, NULL, NULL); /* all pass */
        goto out;
    }
    tf__ext_to_alloc(&b);
    if (!read_state(x)) {
        out = tf_ext_encode_filter(&args, reasons, NULL, "extender state unavailable");
        goto out;
    }
    struct tf_reasons rb;
    tf_reasons_init(&rb, rbuf, args.n_nodes * 160 + 1024);
    rc = tf_alloc_filter(x->alloc, &b.req, args.node_names, args.n_nodes, v, &rb, err, sizeof(err));
    pthread_rwlock_unlock(&x->lock);
    bool any_fit = false;
    for (size_t i = 0; i < args.n_nodes; i++)
        any_fit = any_fit || (v[i].node != TF_NONE && v[i].fit);
    char pmsg[1400];
    int freeing = rc == 0 && !any_fit ? preempt(x, &b, args.pod, args.node_names, v, args.n_nodes,
                                                pmsg, sizeof(pmsg))
                                      : -1;
    for (size_t i = 0; i < args.n_nodes; i++) {
        if (rc)
            reasons[i] = err;
        else if (v[i].node == TF_NONE)
            reasons[i] = "node has no TensorFusion GPUs";
        else if ((int)i == freeing)
            reasons[i] = pmsg;
        else if (!v[i].fit)
            reasons[i] = v[i].reason ? v[i].reason : "no GPU fits the request";
    }
    out = tf_ext_encode_filter(&args, reasons, NULL, NULL);
out:
    if (!out) {
        *status = 500;
        out = tf_ext_encode_binding_result("out of memory");
    }
    free(reasons);
    free(v);
    free(rbuf);
    tf_ext_args_free(&args);
    return out;
}

static char *prioritize(struct tf_extender *x, const char *body, size_t len, int *status)
{
    struct tf_ext_args args;
    char err[1024];
    if (tf_ext_decode_args(body, len, &args, err, sizeof(err))) {
        *status = 400;
        return tf_ext_encode_binding_result(err);
    }
    int *scores = calloc(args.n_nodes + 1, sizeof(int));
    char *out = NULL;
    struct req_buf b;
    if (!scores)
        goto out;
    if (tf_podreq_from_pod(args.pod, &b.pr, err, sizeof(err)) == 0 && b.pr.managed &&
        !b.pr.remote_client && read_state(x)) {
        tf__ext_to_alloc(&b);
        int rc = tf_alloc_score(x->alloc, &b.req, args.node_names, args.n_nodes, scores, err,
                                sizeof(err));
        pthread_rwlock_unlock(&x->lock);
        for (size_t i = 0; i < args.n_nodes; i++)
            scores[i] = rc ? 0 : (scores[i] + 5) / 10; /* 0..100 -> 0..10 */
    }
    out = tf_ext_encode_priorities(&args, scores);
out:
    free(scores);
    tf_ext_args_free(&args);
    if (!out) {
        *status = 500;
        out = strdup("[]");
    }
    return out;
}

bool tf_extender_handle(struct tf_extender *x, const struct tf_http_req *req,
                        struct tf_http_resp *resp)
{
    if (strncmp(req->path, "/scheduler/", 11) != 0)
        return false;
    const char *verb = req->path + 11;
    if (strcmp(req->method, "POST") != 0) {
        resp->status = 405;
        resp->body = strdup("{\"Error\":\"POST only\"}");
        return true;
    }
    resp->status = 200;
    if (strcmp(verb, "filter") == 0)
        resp->body = filter(x, req->body, req->body_len, &resp->status);
    else if (strcmp(verb, "prioritize") == 0)
        resp->body = prioritize(x, req->body, req->body_len, &resp->status);
    else if (strcmp(verb, "bind") == 0)
        resp->body = tf__ext_bind(x, req->body, req->body_len, &resp->status);
    else {
        resp->status = 404;
        resp->body = strdup("{\"Error\":\"unknown extender verb\"}");
    }
    return true;
}
