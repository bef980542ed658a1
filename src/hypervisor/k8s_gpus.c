/* SPDX-License-Identifier: Apache-2.0
 *
 * The node agent's GPU publisher (see k8s_gpus.h).
 */
#include "hypervisor/k8s_gpus.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "hypervisor/k8s_objects.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK_MS 1000
#define RESYNC_MS 60000
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 30000
#define HEARTBEAT_MS 10000

struct tf_hv_k8s_gpus {
    struct tf_k8s_client *c;
    struct tf_hv_state *st;
    char *node, *pool, *lease_ns; /* POOL: "" when the controller alone assigns it */
    void (*on_pool)(const char *pool, void *arg);
    void *on_pool_arg;
    char seen_pool[254];  /* the tensor-fusion.ai/gpupool label last read on our objects */
    char first_name[256]; /* the object of the first present device, "" before publishing */
    char lease[254];
    pthread_t thread;
    pthread_mutex_t mu; /* with cv: the interruptible sleep */
    pthread_cond_t cv;
    atomic_bool stop;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Merge patch {PART: WANT} (PART "status", or labels under metadata) when OBJ differs. */
static json_object *build_labels(json_object *obj, void *arg)
{
    if (!tf_hv_k8s_differs(tf_json_path(obj, "metadata", "labels", NULL), arg))
        return NULL;
    json_object *p = json_object_new_object(), *m = json_object_new_object();
    json_object_object_add(m, "labels", json_object_get(arg));
    json_object_object_add(p, "metadata", m);
    return p;
}

/* The GPU CRD requires available and message as upstream's does: a new object starts with
 * available = capacity and an empty message; later the reconciler owns available. */
static json_object *build_status(json_object *obj, void *arg)
{
    json_object *have = tf_json_path(obj, "status", NULL);
    if (!tf_hv_k8s_differs(have, arg))
        return NULL;
    json_object *st = NULL;
    if (json_object_deep_copy(arg, &st, NULL))
        return NULL;
    json_object *cap = tf_json_path(arg, "capacity", NULL), *avail = NULL;
    if (cap && !tf_json_path(have, "available", NULL) && json_object_deep_copy(cap, &avail, NULL))
        avail = NULL;
    if (avail)
        json_object_object_add(st, "available", avail);
    if (!tf_json_path(have, "message", NULL))
        json_object_object_add(st, "message", json_object_new_string(""));
    json_object *p = json_object_new_object();
    json_object_object_add(p, "status", st);
    return p;
}

/* The pool tf-controller assigned (the gpupool label of OBJ), reported when it changes. */
static void learn_pool(struct tf_hv_k8s_gpus *g, json_object *obj)
{
    const char *p = tf_json_str(obj, "metadata", "labels", TF_HV_LABEL_POOL, NULL);
    if (!p || !*p || strcmp(p, g->seen_pool) == 0)
        return;
    tf_strlcpy(g->seen_pool, p, sizeof(g->seen_pool));
    tf_log(TF_LOG_INFO, "k8s", "node %s is in pool %s", g->node, p);
    if (g->on_pool)
        g->on_pool(p, g->on_pool_arg);
}

/* Makes the object of device D current. The node label is ours; the pool label is
 * tf-controller's (pools by selector): --pool only seeds it on creation. */
static int publish_one(struct tf_hv_k8s_gpus *g, const struct tf_hv_device *d, const char *name)
{
    char err[512];
    json_object *labels = tf_hv_k8s_gpu_labels(g->node, NULL);
    json_object *status = tf_hv_k8s_gpu_status(d, g->node), *got = NULL;
    int rc = tf_k8s_merge_patch_retry(g->c, &tf_k8s_gpus, NULL, name, NULL, build_labels, labels,
                                      &got, err, sizeof(err));
    if (rc == TF_ENOENT) {
        json_object *obj = json_object_new_object(), *meta = json_object_new_object();
        json_object *create_labels = tf_hv_k8s_gpu_labels(g->node, g->pool[0] ? g->pool : NULL);
        json_object_object_add(obj, "apiVersion", json_object_new_string("tensor-fusion.ai/v1"));
        json_object_object_add(obj, "kind", json_object_new_string("GPU"));
        json_object_object_add(meta, "name", json_object_new_string(name));
        json_object_object_add(meta, "labels", create_labels);
        json_object_object_add(obj, "metadata", meta);
        rc = tf_k8s_create(g->c, &tf_k8s_gpus, NULL, obj, NULL, err, sizeof(err));
        json_object_put(obj);
        if (rc == 0)
            tf_log(TF_LOG_INFO, "k8s", "GPU object %s created uuid=%s node=%s", name, d->uuid,
                   g->node);
        else if (rc == TF_EEXIST) /* created meanwhile: patch it like any other */
            rc = tf_k8s_merge_patch_retry(g->c, &tf_k8s_gpus, NULL, name, NULL, build_labels,
                                          labels, &got, err, sizeof(err));
    }
    if (got)
        learn_pool(g, got);
    json_object_put(got);
    if (rc == 0)
        rc = tf_k8s_merge_patch_retry(g->c, &tf_k8s_gpus, NULL, name, "status", build_status,
                                      status, NULL, err, sizeof(err));
    if (rc)
        tf_log(TF_LOG_WARN, "k8s", "cannot publish GPU %s: %s", name, err);
    json_object_put(labels);
    json_object_put(status);
    return rc;
}

struct stale_ctx {
    struct tf_hv_k8s_gpus *g;
    json_object *names; /* published names -> true */
    int rc;
};

/* Sets KEY of ST to V (consumed) unless the stored status HAVE has it. */
static void fill(json_object *st, json_object *have, const char *key, json_object *v)
{
    if (tf_json_path(have, key, NULL))
        json_object_put(v);
    else
        json_object_object_add(st, key, v);
}

/* phase Unknown with a message saying why; an object that never got a status from us also
 * gets the members the GPU CRD requires (capacity 0, this node). ARG: the node name. */
static json_object *build_unknown(json_object *obj, void *arg)
{
    const char *phase = tf_json_str(obj, "status", "phase", NULL);
    if (phase && strcmp(phase, "Unknown") == 0)
        return NULL;
    json_object *have = tf_json_path(obj, "status", NULL), *st = json_object_new_object();
    char msg[400];
    snprintf(msg, sizeof(msg),
             "not found on node %s (gone, or reported while the hypervisor "
             "was down)",
             (const char *)arg);
    json_object_object_add(st, "phase", json_object_new_string("Unknown"));
    json_object_object_add(st, "message", json_object_new_string(msg));
    const char *name = tf_json_str(obj, "metadata", "name", NULL);
    fill(st, have, "uuid", json_object_new_string(name ? name : ""));
    fill(st, have, "gpuModel", json_object_new_string(""));
    json_object *sel = json_object_new_object();
    json_object_object_add(sel, "kubernetes.io/hostname", json_object_new_string(arg));
    fill(st, have, "nodeSelector", sel);
    fill(st, have, "capacity", json_tokener_parse("{\"tflops\":\"0\",\"vram\":\"0\"}"));
    fill(st, have, "available", json_tokener_parse("{\"tflops\":\"0\",\"vram\":\"0\"}"));
    json_object *p = json_object_new_object();
    json_object_object_add(p, "status", st);
    return p;
}

/* A GPU object of this node: Unknown unless one of ours. */
static int mark_stale(json_object *item, void *arg)
{
    struct stale_ctx *x = arg;
    const char *name = tf_json_str(item, "metadata", "name", NULL);
    const char *phase = tf_json_str(item, "status", "phase", NULL);
    if (!name || json_object_object_get_ex(x->names, name, NULL) ||
        (phase && strcmp(phase, "Unknown") == 0))
        return 0;
    char err[512];
    int rc = tf_k8s_merge_patch_retry(x->g->c, &tf_k8s_gpus, NULL, name, "status", build_unknown,
                                      (void *)x->g->node, NULL, err, sizeof(err));
    if (rc == 0)
        tf_log(TF_LOG_WARN, "k8s", "GPU %s is no longer on node %s: phase Unknown", name,
               x->g->node);
    else if (rc != TF_ENOENT) {
        tf_log(TF_LOG_WARN, "k8s", "cannot mark GPU %s Unknown: %s", name, err);
        x->rc = rc;
    }
    return 0;
}

/* One round over DEVS[0..N). Returns 0 when every write succeeded. */
static int publish(struct tf_hv_k8s_gpus *g, const struct tf_hv_device *devs, int n)
{
    struct stale_ctx x = {g, json_object_new_object(), 0};
    char name[256], err[512], sel[300];
    for (int i = 0; i < n; i++) {
        if (!devs[i].present)
            continue;
        if (!tf_hv_k8s_gpu_name(devs[i].uuid, name, sizeof(name))) {
            tf_log(TF_LOG_WARN, "k8s", "GPU uuid %s cannot name a GPU object; not published",
                   devs[i].uuid);
            continue;
        }
        json_object_object_add(x.names, name, json_object_new_boolean(true));
        if (!g->first_name[0])
            tf_strlcpy(g->first_name, name, sizeof(g->first_name));
        int rc = publish_one(g, &devs[i], name);
        if (rc)
            x.rc = rc;
    }
    snprintf(sel, sizeof(sel), "%s=%s", TF_HV_LABEL_NODE, g->node);
    int rc =
        tf_k8s_list(g->c, &tf_k8s_gpus, NULL, sel, NULL, 0, mark_stale, &x, NULL, err, sizeof(err));
    if (rc) {
        tf_log(TF_LOG_WARN, "k8s", "cannot list the GPU objects of node %s: %s", g->node, err);
        x.rc = rc;
    }
    json_object_put(x.names);
    return x.rc;
}

/* The node's heartbeat: Lease LEASE (namespace lease_ns), renewTime now. Labelled
 * tensor-fusion.ai/component=hypervisor and tensor-fusion.ai/node=<node> for tf-controller. */
static json_object *build_lease(json_object *obj, void *arg)
{
    struct tf_hv_k8s_gpus *g = arg;
    char now[40];
    tf_k8s_time_now(now, sizeof(now), true);
    json_object *p = json_object_new_object(), *spec = json_object_new_object();
    json_object_object_add(spec, "holderIdentity", json_object_new_string(g->node));
    json_object_object_add(spec, "leaseDurationSeconds",
                           json_object_new_int(TF_HV_K8S_LEASE_SECONDS));
    json_object_object_add(spec, "renewTime", json_object_new_string(now));
    json_object_object_add(p, "spec", spec);
    (void)obj;
    return p;
}

static int heartbeat(struct tf_hv_k8s_gpus *g)
{
    char err[512];
    int rc = tf_k8s_merge_patch_retry(g->c, &tf_k8s_leases, g->lease_ns, g->lease, NULL,
                                      build_lease, g, NULL, err, sizeof(err));
    if (rc == TF_ENOENT) {
        json_object *obj = build_lease(NULL, g), *meta = json_object_new_object(),
                    *labels = json_object_new_object();
        json_object_object_add(obj, "apiVersion", json_object_new_string("coordination.k8s.io/v1"));
        json_object_object_add(obj, "kind", json_object_new_string("Lease"));
        json_object_object_add(meta, "name", json_object_new_string(g->lease));
        json_object_object_add(meta, "namespace", json_object_new_string(g->lease_ns));
        json_object_object_add(labels, TF_HV_LABEL_COMPONENT, json_object_new_string("hypervisor"));
        json_object_object_add(labels, TF_HV_LABEL_NODE, json_object_new_string(g->node));
        json_object_object_add(meta, "labels", labels);
        json_object_object_add(obj, "metadata", meta);
        rc = tf_k8s_create(g->c, &tf_k8s_leases, g->lease_ns, obj, NULL, err, sizeof(err));
        json_object_put(obj);
        if (rc == TF_EEXIST)
            rc = 0; /* renewed next time */
    }
    if (rc)
        tf_log(TF_LOG_WARN, "k8s", "heartbeat Lease %s/%s: %s", g->lease_ns, g->lease, err);
    return rc;
}

/* What publishing depends on, as text: a change means a new round. */
static void fingerprint(const struct tf_hv_device *devs, int n, struct tf_dynbuf *out)
{
    tf_dynbuf_reset(out);
    for (int i = 0; i < n; i++)
        tf_dynbuf_addf(out, "%s|%d|%s|%s|%lld|%lld|%d\n", devs[i].uuid, devs[i].index,
                       devs[i].model, devs[i].name, (long long)devs[i].tflops_milli,
                       (long long)devs[i].vram_bytes, (int)devs[i].present);
}

static void *run(void *arg)
{
    struct tf_hv_k8s_gpus *g = arg;
    struct tf_hv_device *devs = calloc(TF_HV_MAX_DEVICES, sizeof(*devs));
    struct tf_dynbuf fp, last;
    tf_dynbuf_init(&fp, 1 << 20);
    tf_dynbuf_init(&last, 1 << 20);
    int64_t next_full = 0, next_try = 0, backoff = BACKOFF_MIN_MS, next_beat = 0;
    bool published = false;
    while (devs && !atomic_load(&g->stop)) {
        int n = 0;
        char err[256];
        /* The heartbeat goes out once the GPUs are published (the controller then sees the
         * node Running), and keeps going whatever publishing does. */
        if (published && mono_ms() >= next_beat) {
            heartbeat(g);
            next_beat = mono_ms() + HEARTBEAT_MS;
            /* Until the controller's pool is known, look for it with every heartbeat (later
             * changes arrive with the minute's resync). */
            json_object *obj = NULL;
            if (!g->seen_pool[0] && g->first_name[0] &&
                tf_k8s_get(g->c, &tf_k8s_gpus, NULL, g->first_name, &obj, err, sizeof(err)) == 0)
                learn_pool(g, obj);
            json_object_put(obj);
        }
        if (tf_hv_state_devices(g->st, devs, TF_HV_MAX_DEVICES, &n, err, sizeof(err)) == 0) {
            fingerprint(devs, n, &fp);
            int64_t now = mono_ms();
            bool changed = !published || strcmp(tf_dynbuf_str(&fp), tf_dynbuf_str(&last)) != 0;
            if ((changed || now >= next_full) && now >= next_try) {
                if (publish(g, devs, n) == 0) {
                    published = true;
                    tf_dynbuf_reset(&last);
                    tf_dynbuf_adds(&last, tf_dynbuf_str(&fp));
                    next_full = now + RESYNC_MS;
                    backoff = BACKOFF_MIN_MS;
                } else {
                    next_try = mono_ms() + backoff;
                    backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
                }
            }
        } else {
            tf_log(TF_LOG_WARN, "k8s", "devices: %s", err);
        }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += CHECK_MS / 1000;
        pthread_mutex_lock(&g->mu);
        if (!atomic_load(&g->stop))
            pthread_cond_timedwait(&g->cv, &g->mu, &until);
        pthread_mutex_unlock(&g->mu);
    }
    tf_dynbuf_free(&fp);
    tf_dynbuf_free(&last);
    free(devs);
    return NULL;
}

struct tf_hv_k8s_gpus *tf_hv_k8s_gpus_start(struct tf_k8s_client *c, struct tf_hv_state *st,
                                            const char *node, const char *pool,
                                            const char *lease_ns,
                                            void (*on_pool)(const char *pool, void *arg), void *arg)
{
    struct tf_hv_k8s_gpus *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->on_pool = on_pool;
    g->on_pool_arg = arg;
    g->c = c;
    g->st = st;
    g->node = strdup(node);
    g->pool = strdup(pool ? pool : "");
    g->lease_ns = strdup(lease_ns);
    tf_name_fit(TF_HV_K8S_LEASE_PREFIX, node, 253, g->lease, sizeof(g->lease));
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    atomic_init(&g->stop, false);
    if (!g->node || !g->pool || !g->lease_ns || pthread_create(&g->thread, NULL, run, g) != 0) {
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->cv);
        free(g->node);
        free(g->pool);
        free(g->lease_ns);
        free(g);
        return NULL;
    }
    return g;
}

void tf_hv_k8s_gpus_stop(struct tf_hv_k8s_gpus *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    atomic_store(&g->stop, true);
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    pthread_join(g->thread, NULL);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g->node);
    free(g->pool);
    free(g->lease_ns);
    free(g);
}
