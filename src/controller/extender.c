/* SPDX-License-Identifier: Apache-2.0
 *
 * kube-scheduler extender over the core allocator (see extender.h): lifecycle, state locking,
 * informer handlers, the autoscaler's calls and the verb dispatch (extender_int.h lists the
 * other files).
 */
#include "controller/extender_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/autoscale.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
    pthread_mutex_init(&x->index_lock, NULL);
    pthread_mutex_init(&x->scratch_lock, NULL);
    pthread_mutex_init(&x->memo_lock, NULL);
    x->inflight = json_object_new_object();
    x->preempting = json_object_new_object();
    x->ledger = tf__ledger_new();
    x->gpus = tf__gpus_new();
    atomic_init(&x->dirty, true);
    x->events = tf_k8s_recorder_new(c, "tf-scheduler", 0);
    x->gangs = tf__ext_gangs_new(x);
    if (!x->default_pool || !x->inflight || !x->preempting || !x->ledger || !x->gpus ||
        !x->events || !x->gangs) {
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
    tf__ledger_set_sig(x->ledger, sig);
    atomic_store(&x->dirty, true);
}

void tf_extender_destroy(struct tf_extender *x)
{
    if (!x)
        return;
    tf_k8s_recorder_destroy(x->events);
    tf_alloc_index_destroy(x->index);
    tf_alloc_destroy(x->alloc);
    tf_cluster_destroy(x->cluster);
    tf_quota_set_destroy(x->quotas);
    json_object_put(x->inflight);
    json_object_put(x->preempting);
    tf__ledger_destroy(x->ledger);
    tf__gpus_destroy(x->gpus);
    for (int i = 0; i < 3; i++)
        json_object_put(x->loaded[i]);
    pthread_rwlock_destroy(&x->lock);
    pthread_mutex_destroy(&x->inflight_lock);
    tf_ext_gangs_destroy(x->gangs);
    pthread_mutex_destroy(&x->index_lock);
    pthread_mutex_destroy(&x->scratch_lock);
    pthread_mutex_destroy(&x->memo_lock);
    tf__ext_memo_free(x->memo);
    tf__ext_cands_free(x->cands);
    for (int i = 0; i < 4; i++)
        free(x->scratch[i].p);
    free(x->default_pool);
    free(x);
}

bool tf_extender_flush_events(struct tf_extender *x, int timeout_ms)
{
    return tf_k8s_recorder_flush(x->events, timeout_ms);
}

void tf_extender_event_stats(struct tf_extender *x, uint64_t *written, uint64_t *failed,
                             uint64_t *dropped)
{
    tf_k8s_recorder_stats(x->events, written, failed, dropped);
}

double tf_extender_events_cpu_s(struct tf_extender *x)
{
    return tf_k8s_recorder_cpu_s(x->events);
}

void tf_extender_invalidate(struct tf_extender *x)
{
    atomic_store(&x->dirty, true);
}

void *tf__ext_scratch_get(struct tf_extender *x, size_t size, size_t *got)
{
    void *p = NULL;
    pthread_mutex_lock(&x->scratch_lock);
    for (int i = 0; i < 4 && !p; i++)
        if (x->scratch[i].p && x->scratch[i].size >= size) {
            p = x->scratch[i].p;
            *got = x->scratch[i].size;
            x->scratch[i].p = NULL;
        }
    pthread_mutex_unlock(&x->scratch_lock);
    if (!p && (p = malloc(size)))
        *got = size;
    return p;
}

void tf__ext_scratch_put(struct tf_extender *x, void *p, size_t size)
{
    if (!p)
        return;
    pthread_mutex_lock(&x->scratch_lock);
    int slot = 0; /* an empty slot, else the one keeping the smallest buffer */
    for (int i = 0; i < 4; i++) {
        if (!x->scratch[i].p) {
            slot = i;
            break;
        }
        if (x->scratch[i].size < x->scratch[slot].size)
            slot = i;
    }
    if (x->scratch[slot].p && x->scratch[slot].size >= size) {
        pthread_mutex_unlock(&x->scratch_lock);
        free(p);
        return;
    }
    void *old = x->scratch[slot].p;
    x->scratch[slot].p = p;
    x->scratch[slot].size = size;
    pthread_mutex_unlock(&x->scratch_lock);
    free(old);
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
    r->partition_template = p->partition[0] ? p->partition : NULL;
    for (int i = 0; i < p->ncontainers; i++) {
        b->containers[i].name = p->containers[i].name;
        b->containers[i].gpus = (uint16_t)p->containers[i].gpus;
    }
    r->containers = p->ncontainers ? b->containers : NULL;
    r->ncontainers = (uint16_t)p->ncontainers;
}

/* ---- state ---------------------------------------------------------------------------------- */

int tf_extender_load(struct tf_extender *x, json_object *gpus, json_object *pools,
                     json_object *templates, json_object *quotas, json_object *pods)
{
    pthread_rwlock_wrlock(&x->lock);
    atomic_store(&x->dirty, false);
    int rc = tf__ext_load(x, gpus, pools, templates, quotas, pods);
    pthread_rwlock_unlock(&x->lock);
    return rc;
}

int tf_extender_rebuild(struct tf_extender *x)
{
    pthread_rwlock_wrlock(&x->lock);
    atomic_store(&x->dirty, false);
    int rc = tf__ext_rebuild(x);
    pthread_rwlock_unlock(&x->lock);
    return rc;
}

double tf__ext_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Seconds a bind may stay unconfirmed by the pod cache before the API is asked about it. */
#define CONFIRM_S 2.0

struct unconfirmed {
    char key[TF_KEY_MAX], node[256], ids[TF_NODE_MAX_GPUS * 130];
    double at;
};

/* Binds the pod cache has not confirmed: a pod created, bound and deleted while the pod watch
 * was down never reaches the cache, so no delete would ever release its GPUs. Completed binds
 * unconfirmed for CONFIRM_S, or all completed ones once the pod informer relisted, are checked
 * against the API; a pod gone, finished or no longer bound to those GPUs gives them back (a
 * bind still in progress is never checked: its pod has no gpu-ids or node yet). At most once
 * a second; call without locks (it takes them, and asks the API without them). */
static void sweep_unconfirmed(struct tf_extender *x)
{
    double now = tf__ext_now();
    uint64_t relists = x->src.pods ? tf_informer_relists(x->src.pods) : 0;
    pthread_mutex_lock(&x->inflight_lock);
    bool relisted = relists != x->sweep_relists;
    if (x->sweeping || (!relisted && now < x->sweep_next) ||
        json_object_object_length(x->inflight) == 0) {
        if (!x->sweeping)
            x->sweep_relists = relists;
        pthread_mutex_unlock(&x->inflight_lock);
        return;
    }
    x->sweeping = true;
    x->sweep_relists = relists;
    x->sweep_next = now + 1.0;
    size_t n = 0, cap = (size_t)json_object_object_length(x->inflight);
    struct unconfirmed *u = calloc(cap, sizeof(*u));
    json_object_object_foreach(x->inflight, key, e)
    {
        /* Only binds that completed: one in progress has no gpu-ids or node on the pod yet. */
        double at = json_object_get_double(tf_json_path(e, "at", NULL));
        if (!u || n == cap || !json_object_get_boolean(tf_json_path(e, "done", NULL)) ||
            (!relisted && now - at < CONFIRM_S))
            continue;
        tf_strlcpy(u[n].key, key, sizeof(u[n].key));
        tf_strlcpy(u[n].node, tf_json_str(e, "node", NULL), sizeof(u[n].node));
        tf_strlcpy(u[n].ids, tf_json_str(e, "ids", NULL), sizeof(u[n].ids));
        u[n++].at = at;
    }
    pthread_mutex_unlock(&x->inflight_lock);
    for (size_t i = 0; i < n; i++) {
        char *slash = strchr(u[i].key, '/'), err[256];
        if (!slash)
            continue;
        *slash = '\0';
        const char *ns = u[i].key, *name = slash + 1;
        json_object *pod = NULL;
        int rc = tf_k8s_get(x->c, &tf_k8s_pods, ns, name, &pod, err, sizeof(err));
        const char *node = pod ? tf_json_str(pod, "spec", "nodeName", NULL) : NULL;
        const char *ids =
            pod ? tf_json_str(pod, "metadata", "annotations", ANN_GPU_IDS, NULL) : NULL;
        /* Bound as reserved: keep. */
        bool keep = rc == 0 && tf__ext_pod_live(pod) && ids && !strcmp(ids, u[i].ids) && node &&
                    !strcmp(node, u[i].node);
        json_object_put(pod);
        if (keep || (rc && rc != TF_ENOENT))
            continue;
        *slash = '/';
        pthread_rwlock_wrlock(&x->lock);
        pthread_mutex_lock(&x->inflight_lock);
        json_object *cur = NULL;
        /* Unless a newer bind of the same name replaced the entry meanwhile. */
        if (json_object_object_get_ex(x->inflight, u[i].key, &cur) &&
            json_object_get_double(tf_json_path(cur, "at", NULL)) == u[i].at) {
            json_object_object_del(x->inflight, u[i].key);
            *slash = '\0';
            if (x->alloc && tf_alloc_release(x->alloc, ns, name) == 0)
                tf_log(TF_LOG_INFO, "extender",
                       "released GPUs of pod=%s/%s: bound, then gone before the pod cache saw it",
                       ns, name);
            if (rc == 0) /* bound elsewhere since: the ledger has it, a rebuild restores it */
                atomic_store(&x->dirty, true);
        }
        pthread_mutex_unlock(&x->inflight_lock);
        pthread_rwlock_unlock(&x->lock);
    }
    free(u);
    pthread_mutex_lock(&x->inflight_lock);
    x->sweeping = false;
    pthread_mutex_unlock(&x->inflight_lock);
}

/* Takes the read lock with a current state (rebuilding under the write lock first if
 * needed). Returns false when there is no state at all. */
bool tf__ext_read_state(struct tf_extender *x)
{
    sweep_unconfirmed(x);
    if (atomic_load(&x->dirty)) {
        pthread_rwlock_wrlock(&x->lock);
        if (atomic_exchange(&x->dirty, false))
            tf__ext_rebuild(x);
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
    sweep_unconfirmed(x);
    pthread_rwlock_wrlock(&x->lock);
    if (atomic_exchange(&x->dirty, false))
        tf__ext_rebuild(x);
    if (!x->alloc) {
        pthread_rwlock_unlock(&x->lock);
        return false;
    }
    return true;
}

int tf_extender_allocations(struct tf_extender *x)
{
    if (!tf__ext_read_state(x))
        return 0;
    int n = (int)tf_alloc_count(x->alloc);
    pthread_rwlock_unlock(&x->lock);
    return n;
}

int tf_extender_gpu_usage(struct tf_extender *x, const char *uuid, int64_t *tflops, int64_t *vram,
                          uint32_t *pods)
{
    if (!tf__ext_read_state(x))
        return TF_ESTATE;
    uint32_t gi = tf_cluster_gpu_find(x->cluster, uuid, strlen(uuid));
    int rc = gi == TF_NONE ? TF_ENOENT : 0;
    if (!rc) {
        const struct tf_gpu *g = &x->cluster->gpus[gi];
        *tflops = g->cap_tflops - g->avail_tflops;
        *vram = g->cap_vram - g->avail_vram;
        *pods = g->nworkloads;
    }
    pthread_rwlock_unlock(&x->lock);
    return rc;
}

int tf_extender_check(struct tf_extender *x, char *err, size_t errlen)
{
    if (!tf__ext_read_state(x)) {
        tf_errf(err, errlen, "no state");
        return TF_ESTATE;
    }
    int rc = tf_alloc_check(x->alloc, err, errlen);
    pthread_rwlock_unlock(&x->lock);
    return rc;
}

int tf_extender_room(struct tf_extender *x, const char *ns, const char *name, int64_t *tflops,
                     int64_t *vram)
{
    if (!tf__ext_read_state(x))
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

int tf_extender_resize(struct tf_extender *x, const char *ns, const char *name,
                       const struct tf_autoscale_resources *want, char *err, size_t errlen)
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
        if (want->req_tflops && !res.req_by_percent)
            res.req_tflops = want->req_tflops;
        if (want->lim_tflops && !res.lim_by_percent)
            res.lim_tflops = want->lim_tflops;
        if (want->req_percent && res.req_by_percent)
            res.req_percent = want->req_percent;
        if (want->lim_percent && res.lim_by_percent)
            res.lim_percent = want->lim_percent;
        if (want->req_vram)
            res.req_vram = want->req_vram;
        if (want->lim_vram)
            res.lim_vram = want->lim_vram;
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
    /* Most finished pods hold nothing (a relist reports every Succeeded Job pod): look first,
     * and hold the scheduler's requests up only for a real release. */
    pthread_rwlock_rdlock(&x->lock);
    bool held = x->alloc && tf_alloc_find(x->alloc, ns, name) != TF_NONE;
    pthread_rwlock_unlock(&x->lock);
    if (!held)
        return;
    pthread_rwlock_wrlock(&x->lock);
    if (x->alloc && tf_alloc_release(x->alloc, ns, name) == 0)
        tf_log(TF_LOG_INFO, "extender", "released GPUs of pod=%s", key);
    pthread_rwlock_unlock(&x->lock);
}

static void on_pod_update(json_object *old, json_object *pod, void *arg)
{
    struct tf_extender *x = arg;
    tf__ledger_pod(x->ledger, old, pod);
    if (!tf__ext_pod_live(pod)) {
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

static void on_pod_add(json_object *pod, void *arg)
{
    on_pod_update(NULL, pod, arg); /* a relist's new pod: the same as an update */
}

static void on_pod_delete(json_object *pod, void *arg)
{
    struct tf_extender *x = arg;
    const char *ns = tf_json_str(pod, "metadata", "namespace", NULL);
    const char *name = tf_json_str(pod, "metadata", "name", NULL);
    if (ns && name)
        tf__ledger_del(x->ledger, ns, name);
    tf__ext_release_pod(x, pod);
    tf_ext_gangs_forget(x->gangs, pod);
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

static void on_gpu_add(json_object *o, void *arg)
{
    struct tf_extender *x = arg;
    if (tf__gpus_put(x->gpus, o))
        atomic_store(&x->dirty, true);
}

static void on_gpu_update(json_object *a, json_object *b, void *arg)
{
    /* Status writes of available/runningApps by the reconciler change nothing it keeps. */
    on_gpu_add(b, arg);
}

static void on_gpu_delete(json_object *o, void *arg)
{
    struct tf_extender *x = arg;
    if (tf__gpus_del(x->gpus, o))
        atomic_store(&x->dirty, true);
}

struct tf_informer_handlers tf_extender_gpu_handlers(struct tf_extender *x)
{
    struct tf_informer_handlers h = {on_gpu_add, on_gpu_update, on_gpu_delete, x};
    return h;
}

struct tf_informer_handlers tf_extender_inventory_handlers(struct tf_extender *x)
{
    struct tf_informer_handlers h = {on_inventory_add, on_inventory_update, on_inventory_add, x};
    return h;
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
        resp->body = tf__ext_filter(x, req->body, req->body_len, &resp->status);
    else if (strcmp(verb, "prioritize") == 0)
        resp->body = tf__ext_prioritize(x, req->body, req->body_len, &resp->status);
    else if (strcmp(verb, "bind") == 0)
        resp->body = tf__ext_bind(x, req->body, req->body_len, &resp->status);
    else {
        resp->status = 404;
        resp->body = strdup("{\"Error\":\"unknown extender verb\"}");
    }
    return true;
}
