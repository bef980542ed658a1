/* SPDX-License-Identifier: Apache-2.0
 *
 * Reconcilers for the tensor-fusion.ai/v1 objects (see reconcile.h).
 */
#include "controller/reconcile.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/allocsig.h"
#include "controller/base64.h"
#include "controller/webhook.h"
#include "core/quantity.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <string.h>

#define WORKER_PORT 8001

struct tf_reconciler {
    struct tf_k8s_client *c;
    struct tf_reconcile_sources src;
    char *default_pool, *worker_image, *shm_host_dir;
    int writes;
    const struct tf_allocsig *sig; /* checks recorded allocations (borrowed), or NULL */
};

void tf_reconciler_set_allocsig(struct tf_reconciler *r, const struct tf_allocsig *sig)
{
    r->sig = sig;
}

struct tf_reconciler *tf_reconciler_new(struct tf_k8s_client *c,
                                        const struct tf_reconcile_sources *src,
                                        const char *default_pool, const char *worker_image,
                                        const char *shm_host_dir)
{
    struct tf_reconciler *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->c = c;
    r->src = *src;
    r->default_pool = strdup(default_pool ? default_pool : "default-pool");
    r->worker_image = strdup(worker_image ? worker_image : "tensorfusion/tf-worker:latest");
    r->shm_host_dir = strdup(shm_host_dir ? shm_host_dir : "/run/tensor-fusion/shm");
    if (!r->default_pool || !r->worker_image || !r->shm_host_dir) {
        tf_reconciler_destroy(r);
        return NULL;
    }
    return r;
}

void tf_reconciler_destroy(struct tf_reconciler *r)
{
    if (!r)
        return;
    free(r->default_pool);
    free(r->worker_image);
    free(r->shm_host_dir);
    free(r);
}

/* ---- helpers ------------------------------------------------------------------------------ */

static const char *ann(json_object *o, const char *key)
{
    return tf_json_str(o, "metadata", "annotations", key, NULL);
}

static const char *lbl(json_object *o, const char *key)
{
    return tf_json_str(o, "metadata", "labels", key, NULL);
}

static bool pod_active(json_object *pod)
{
    const char *phase = tf_json_str(pod, "status", "phase", NULL);
    if (tf_json_path(pod, "metadata", "deletionTimestamp", NULL))
        return false;
    return !phase || (strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0);
}

static bool pod_ready(json_object *pod)
{
    const char *phase = tf_json_str(pod, "status", "phase", NULL);
    if (!phase || strcmp(phase, "Running") != 0)
        return false;
    json_object *conds = tf_json_path(pod, "status", "conditions", NULL);
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tf_json_str(c, "type", NULL), *s = tf_json_str(c, "status", NULL);
        if (t && s && strcmp(t, "Ready") == 0)
            return strcmp(s, "True") == 0;
    }
    return true; /* Running without conditions (no probes reported yet) */
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

static json_object *q_obj(int64_t milli, int64_t bytes)
{
    char a[48], b[48];
    tf_quantity_format_milli(milli, a, sizeof(a));
    tf_quantity_format_bytes(bytes, b, sizeof(b));
    json_object *o = json_object_new_object();
    json_object_object_add(o, "tflops", json_object_new_string(a));
    json_object_object_add(o, "vram", json_object_new_string(b));
    return o;
}

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

/* Merge-patches STATUS into OBJ's status subresource when it differs. */
static void put_status(struct tf_reconciler *r, const struct tf_k8s_resource *res, json_object *obj,
                       json_object *status)
{
    json_object *cur = tf_json_path(obj, "status", NULL);
    bool same = cur != NULL;
    if (same) {
        json_object_object_foreach(status, k, v)
        {
            json_object *old = NULL;
            if (!json_object_object_get_ex(cur, k, &old) || !json_object_equal(old, v)) {
                same = false;
                break;
            }
        }
    }
    if (!same) {
        json_object *p = json_object_new_object();
        json_object_object_add(p, "status", json_object_get(status));
        char err[256];
        const char *ns = tf_json_str(obj, "metadata", "namespace", NULL);
        const char *name = tf_json_str(obj, "metadata", "name", NULL);
        if (tf_k8s_merge_patch(r->c, res, ns, name, "status", p, NULL, err, sizeof(err)))
            tf_log(TF_LOG_WARN, "reconcile", "status update failed kind=%s name=%s err=%s",
                   res->kind, name, err);
        else
            r->writes++;
        json_object_put(p);
    }
    json_object_put(status);
}

static void event(struct tf_reconciler *r, json_object *obj, const char *type, const char *reason,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void event(struct tf_reconciler *r, json_object *obj, const char *type, const char *reason,
                  const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    tf_log(TF_LOG_INFO, "reconcile", "%s: %s", reason, msg);
    tf_k8s_event(r->c, obj, type, reason, msg, "tf-controller");
}

/* Per-GPU request of a pod from its normalised annotations (whole GPU when shared). */
static void pod_share(json_object *pod, int64_t cap_t, int64_t cap_v, int64_t *t, int64_t *v)
{
    const char *iso = ann(pod, TF_ANN_ISOLATION);
    if (iso && strcmp(iso, "shared") == 0) {
        *t = cap_t;
        *v = cap_v;
        return;
    }
    *t = q_milli(ann(pod, TF_ANN_TFLOPS_REQUEST));
    const char *pct = ann(pod, TF_ANN_PERCENT_REQUEST);
    if (!*t && pct) {
        int32_t bp = 0;
        if (tf_percent_parse(pct, &bp, "", NULL, 0) == 0)
            *t = cap_t * bp / 10000;
    }
    *v = q_bytes(ann(pod, TF_ANN_VRAM_REQUEST));
}

static const char *pod_uid(json_object *pod)
{
    const char *u = tf_json_str(pod, "metadata", "uid", NULL);
    return u ? u : "";
}

static bool list_has(const char *list, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        while (len && *p == ' ') {
            p++;
            len--;
        }
        if (len == n && strncmp(p, item, n) == 0)
            return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

/* ---- GPUs, nodes, pools ------------------------------------------------------------------- */

struct agg {
    int gpus;
    int64_t tt, tv, at, av; /* total / available TFLOPS (milli) and VRAM */
};

static void agg_add(json_object *map, const char *key, int64_t ct, int64_t cv, int64_t at,
                    int64_t av)
{
    json_object *e = NULL;
    if (!json_object_object_get_ex(map, key, &e)) {
        e = json_object_new_array();
        for (int i = 0; i < 5; i++)
            json_object_array_add(e, json_object_new_int64(0));
        json_object_object_add(map, key, e);
    }
    int64_t add[5] = {1, ct, cv, at, av};
    for (int i = 0; i < 5; i++) {
        json_object *x = json_object_array_get_idx(e, (size_t)i);
        json_object_set_int64(x, json_object_get_int64(x) + add[i]);
    }
}

static struct agg agg_get(json_object *map, const char *key)
{
    struct agg a = {0};
    json_object *e = NULL;
    if (json_object_object_get_ex(map, key, &e)) {
        a.gpus = (int)json_object_get_int64(json_object_array_get_idx(e, 0));
        a.tt = json_object_get_int64(json_object_array_get_idx(e, 1));
        a.tv = json_object_get_int64(json_object_array_get_idx(e, 2));
        a.at = json_object_get_int64(json_object_array_get_idx(e, 3));
        a.av = json_object_get_int64(json_object_array_get_idx(e, 4));
    }
    return a;
}

static const char *gpu_node(json_object *gpu)
{
    const char *n = tf_json_str(gpu, "status", "nodeSelector", "kubernetes.io/hostname", NULL);
    return n ? n : lbl(gpu, "tensor-fusion.ai/node");
}

static void reconcile_gpus(struct tf_reconciler *r, json_object *pods, json_object *nodes_agg,
                           json_object *pools_agg, json_object *node_pods)
{
    json_object *gpus = snapshot(r->src.gpus);
    for (size_t g = 0; g < json_object_array_length(gpus); g++) {
        json_object *gpu = json_object_array_get_idx(gpus, g);
        const char *uuid = tf_json_str(gpu, "status", "uuid", NULL);
        const char *name = tf_json_str(gpu, "metadata", "name", NULL);
        if (!uuid)
            uuid = name;
        int64_t ct = q_milli(tf_json_str(gpu, "status", "capacity", "tflops", NULL));
        int64_t cv = q_bytes(tf_json_str(gpu, "status", "capacity", "vram", NULL));
        if (!ct && !cv)
            continue; /* the hypervisor has not reported this GPU yet */
        int64_t ut = 0, uv = 0;
        json_object *apps = json_object_new_array();
        json_object *holders = json_object_new_array();
        for (size_t p = 0; p < json_object_array_length(pods); p++) {
            json_object *pod = json_object_array_get_idx(pods, p);
            const char *ids = ann(pod, TF_ANN_GPU_IDS);
            if (!ids || !pod_active(pod) || !(list_has(ids, uuid) || list_has(ids, name)) ||
                !tf_allocsig_verify(r->sig, pod))
                continue;
            int64_t t, v;
            pod_share(pod, ct, cv, &t, &v);
            ut += t;
            uv += v;
            const char *pns = tf_json_str(pod, "metadata", "namespace", NULL);
            const char *pn = tf_json_str(pod, "metadata", "name", NULL);
            json_object *app = json_object_new_object();
            json_object_object_add(app, "name", json_object_new_string(pn ? pn : ""));
            json_object_object_add(app, "namespace", json_object_new_string(pns ? pns : ""));
            json_object_object_add(app, "count", json_object_new_int(1));
            json_object_array_add(apps, app);
            char key[400];
            snprintf(key, sizeof(key), "%s/%s", pns ? pns : "", pn ? pn : "");
            json_object_array_add(holders, json_object_new_string(key));
        }
        int64_t at = ct > ut ? ct - ut : 0, av = cv > uv ? cv - uv : 0;
        json_object *st = json_object_new_object();
        json_object_object_add(st, "available", q_obj(at, av));
        json_object_object_add(st, "runningApps", apps);
        if (!tf_json_str(gpu, "status", "phase", NULL))
            json_object_object_add(st, "phase", json_object_new_string("Running"));
        put_status(r, &tf_k8s_gpus, gpu, st);
        const char *node = gpu_node(gpu);
        const char *pool = lbl(gpu, "tensor-fusion.ai/gpupool");
        if (node) {
            agg_add(nodes_agg, node, ct, cv, at, av);
            json_object *np = NULL;
            if (!json_object_object_get_ex(node_pods, node, &np)) {
                np = json_object_new_object();
                json_object_object_add(node_pods, node, np);
            }
            json_object_object_add(np, uuid, holders);
            char pk[600];
            snprintf(pk, sizeof(pk), "%s\n%s", pool ? pool : r->default_pool, node);
            json_object_object_add(pools_agg, pk, json_object_new_boolean(true));
        } else {
            json_object_put(holders);
        }
        agg_add(pools_agg, pool ? pool : r->default_pool, ct, cv, at, av);
    }
    json_object_put(gpus);
}

static void reconcile_gpunodes(struct tf_reconciler *r, json_object *nodes_agg,
                               json_object *node_pods)
{
    json_object_object_foreach(nodes_agg, node, v)
    {
        (void)v;
        struct agg a = agg_get(nodes_agg, node);
        json_object *gn = tf_informer_get(r->src.gpunodes, NULL, node);
        if (!gn) {
            char buf[512], err[256];
            snprintf(buf, sizeof(buf),
                     "{\"apiVersion\":\"tensor-fusion.ai/v1\",\"kind\":\"GPUNode\",\"metadata\":"
                     "{\"name\":\"%s\"},\"spec\":{\"manageMode\":\"Auto\"}}",
                     node);
            json_object *obj = json_tokener_parse(buf);
            if (tf_k8s_create(r->c, &tf_k8s_gpunodes, NULL, obj, &gn, err, sizeof(err))) {
                tf_log(TF_LOG_WARN, "reconcile", "cannot create GPUNode %s: %s", node, err);
                json_object_put(obj);
                continue;
            }
            r->writes++;
            json_object_put(obj);
        }
        json_object *st = json_object_new_object();
        char buf[48];
        json_object_object_add(st, "phase", json_object_new_string("Running"));
        json_object_object_add(st, "totalGPUs", json_object_new_int(a.gpus));
        json_object_object_add(st, "managedGPUs", json_object_new_int(a.gpus));
        tf_quantity_format_milli(a.tt, buf, sizeof(buf));
        json_object_object_add(st, "totalTFlops", json_object_new_string(buf));
        tf_quantity_format_bytes(a.tv, buf, sizeof(buf));
        json_object_object_add(st, "totalVRAM", json_object_new_string(buf));
        tf_quantity_format_milli(a.at, buf, sizeof(buf));
        json_object_object_add(st, "availableTFlops", json_object_new_string(buf));
        tf_quantity_format_bytes(a.av, buf, sizeof(buf));
        json_object_object_add(st, "availableVRAM", json_object_new_string(buf));
        json_object *np = NULL;
        json_object_object_get_ex(node_pods, node, &np);
        json_object_object_add(st, "allocatedPods",
                               np ? json_object_get(np) : json_object_new_object());
        put_status(r, &tf_k8s_gpunodes, gn, st);
        json_object_put(gn);
    }
}

static void reconcile_pools(struct tf_reconciler *r, json_object *pools_agg)
{
    /* Cluster -> pools. */
    json_object *clusters = snapshot(r->src.clusters);
    for (size_t i = 0; i < json_object_array_length(clusters); i++) {
        json_object *cl = json_object_array_get_idx(clusters, i);
        const char *cname = tf_json_str(cl, "metadata", "name", NULL);
        json_object *gp = tf_json_path(cl, "spec", "gpuPools", NULL);
        json_object *ready = json_object_new_array();
        int total_gpus = 0, npools = 0;
        for (size_t j = 0; gp && json_object_array_length(gp) > j; j++) {
            json_object *entry = json_object_array_get_idx(gp, j);
            const char *pname = tf_json_str(entry, "name", NULL);
            if (!pname)
                continue;
            npools++;
            json_object *tpl = tf_json_path(entry, "specTemplate", NULL);
            json_object *want = NULL;
            if (tpl)
                json_object_deep_copy(tpl, &want, NULL);
            else
                want = json_object_new_object();
            json_object *pool = tf_informer_get(r->src.pools, NULL, pname);
            char err[256];
            if (!pool) {
                json_object *obj = json_object_new_object(), *meta = json_object_new_object(),
                            *labels = json_object_new_object();
                json_object_object_add(obj, "apiVersion",
                                       json_object_new_string("tensor-fusion.ai/v1"));
                json_object_object_add(obj, "kind", json_object_new_string("GPUPool"));
                json_object_object_add(meta, "name", json_object_new_string(pname));
                json_object_object_add(labels, "tensor-fusion.ai/cluster",
                                       json_object_new_string(cname));
                json_object_object_add(meta, "labels", labels);
                json_object_object_add(obj, "metadata", meta);
                json_object_object_add(obj, "spec", json_object_get(want));
                if (tf_k8s_create(r->c, &tf_k8s_gpupools, NULL, obj, NULL, err, sizeof(err)) == 0) {
                    r->writes++;
                    event(r, cl, "Normal", "GPUPoolCreated", "GPUPool %s created from cluster %s",
                          pname, cname);
                } else if (!strstr(err, "already exists")) {
                    tf_log(TF_LOG_WARN, "reconcile", "cannot create GPUPool %s: %s", pname, err);
                }
                json_object_put(obj);
            } else if (!json_object_equal(tf_json_path(pool, "spec", NULL), want)) {
                /* A merge patch cannot drop keys the template lost; send the spec whole. */
                json_object_object_add(pool, "spec", json_object_get(want));
                if (tf_k8s_update(r->c, &tf_k8s_gpupools, NULL, pname, NULL, pool, NULL, err,
                                  sizeof(err)) == 0) {
                    r->writes++;
                    event(r, cl, "Normal", "GPUPoolUpdated",
                          "GPUPool %s spec overridden by cluster %s specTemplate", pname, cname);
                } else {
                    tf_log(TF_LOG_WARN, "reconcile", "cannot update GPUPool %s: %s", pname, err);
                }
            }
            json_object_put(pool);
            json_object_put(want);
            struct agg a = agg_get(pools_agg, pname);
            total_gpus += a.gpus;
            if (a.gpus)
                json_object_array_add(ready, json_object_new_string(pname));
        }
        json_object *st = json_object_new_object();
        json_object_object_add(st, "phase",
                               json_object_new_string(total_gpus ? "Running" : "Pending"));
        json_object_object_add(st, "totalPools", json_object_new_int(npools));
        json_object_object_add(st, "totalGPUs", json_object_new_int(total_gpus));
        json_object_object_add(st, "readyGPUPools", ready);
        put_status(r, &tf_k8s_tfclusters, cl, st);
    }
    json_object_put(clusters);

    /* Pool status. */
    json_object *pools = snapshot(r->src.pools);
    for (size_t i = 0; i < json_object_array_length(pools); i++) {
        json_object *pool = json_object_array_get_idx(pools, i);
        const char *pname = tf_json_str(pool, "metadata", "name", NULL);
        struct agg a = agg_get(pools_agg, pname);
        int nodes = 0;
        size_t plen = strlen(pname);
        json_object_object_foreach(pools_agg, k, v)
        {
            (void)v;
            if (strncmp(k, pname, plen) == 0 && k[plen] == '\n')
                nodes++;
        }
        char buf[48];
        json_object *st = json_object_new_object();
        json_object_object_add(st, "phase", json_object_new_string(a.gpus ? "Running" : "Pending"));
        json_object_object_add(st, "totalNodes", json_object_new_int(nodes));
        json_object_object_add(st, "readyNodes", json_object_new_int(nodes));
        json_object_object_add(st, "totalGPUs", json_object_new_int(a.gpus));
        tf_quantity_format_milli(a.tt, buf, sizeof(buf));
        json_object_object_add(st, "totalTFlops", json_object_new_string(buf));
        tf_quantity_format_bytes(a.tv, buf, sizeof(buf));
        json_object_object_add(st, "totalVRAM", json_object_new_string(buf));
        tf_quantity_format_milli(a.at, buf, sizeof(buf));
        json_object_object_add(st, "availableTFlops", json_object_new_string(buf));
        tf_quantity_format_bytes(a.av, buf, sizeof(buf));
        json_object_object_add(st, "availableVRAM", json_object_new_string(buf));
        put_status(r, &tf_k8s_gpupools, pool, st);
    }
    json_object_put(pools);
}

/* ---- workloads, remote workers, connections ----------------------------------------------- */

/* Appends env NAME from the downward-API field PATH to ENV. */
static void env_ref(json_object *env, const char *name, const char *path)
{
    json_object *e = json_object_new_object(), *vf = json_object_new_object(),
                *fr = json_object_new_object();
    json_object_object_add(e, "name", json_object_new_string(name));
    json_object_object_add(fr, "fieldPath", json_object_new_string(path));
    json_object_object_add(vf, "fieldRef", fr);
    json_object_object_add(e, "valueFrom", vf);
    json_object_array_add(env, e);
}

#define WORKER_SHM_DIR "/run/tensor-fusion/pod"
#define WORKER_TOKEN_DIR "/run/tensor-fusion/token"

/* The workload's token Secret (tf_webhook_token_secret), created with 24 random bytes in hex
 * and owned by the workload when missing; an existing one is kept (running workers and
 * clients already use its token). False when it cannot be made (logged). */
static bool ensure_token_secret(struct tf_reconciler *r, json_object *wl)
{
    const char *ns = tf_json_str(wl, "metadata", "namespace", NULL);
    const char *name = tf_json_str(wl, "metadata", "name", NULL);
    const char *uid = tf_json_str(wl, "metadata", "uid", NULL);
    char secret[254], err[256];
    tf_webhook_token_secret(name, secret, sizeof(secret));
    json_object *have = NULL;
    int rc = tf_k8s_get(r->c, &tf_k8s_secrets, ns, secret, &have, err, sizeof(err));
    json_object_put(have);
    if (rc != TF_ENOENT)
        return rc == 0;
    uint8_t raw[24];
    char hex[2 * sizeof(raw) + 1];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        tf_log(TF_LOG_ERROR, "reconcile", "no random bytes for %s/%s's token", ns, name);
        return false;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    char *b64 = tf_base64_encode(hex, strlen(hex));
    json_object *o = json_object_new_object(), *meta = json_object_new_object(),
                *labels = json_object_new_object(), *data = json_object_new_object(),
                *refs = json_object_new_array(), *ref = json_object_new_object();
    json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(o, "kind", json_object_new_string("Secret"));
    json_object_object_add(meta, "name", json_object_new_string(secret));
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    json_object_object_add(labels, "tensor-fusion.ai/workload", json_object_new_string(name));
    json_object_object_add(meta, "labels", labels);
    json_object_object_add(ref, "apiVersion", json_object_new_string("tensor-fusion.ai/v1"));
    json_object_object_add(ref, "kind", json_object_new_string("TensorFusionWorkload"));
    json_object_object_add(ref, "name", json_object_new_string(name));
    json_object_object_add(ref, "uid", json_object_new_string(uid ? uid : ""));
    json_object_array_add(refs, ref);
    json_object_object_add(meta, "ownerReferences", refs);
    json_object_object_add(o, "metadata", meta);
    json_object_object_add(o, "type", json_object_new_string("Opaque"));
    json_object_object_add(data, TF_TOKEN_SECRET_KEY, json_object_new_string(b64 ? b64 : ""));
    json_object_object_add(o, "data", data);
    bool encoded = b64 != NULL;
    free(b64);
    memset(hex, 0, sizeof(hex));
    rc = encoded ? tf_k8s_create(r->c, &tf_k8s_secrets, ns, o, NULL, err, sizeof(err)) : TF_ENOMEM;
    json_object_put(o);
    if (rc == 0)
        r->writes++;
    else if (rc != TF_EEXIST)
        tf_log(TF_LOG_WARN, "reconcile", "cannot create the token Secret %s/%s: %s", ns, secret,
               err);
    return rc == 0 || rc == TF_EEXIST;
}

static json_object *worker_pod(struct tf_reconciler *r, json_object *wl, json_object *client)
{
    const char *ns = tf_json_str(wl, "metadata", "namespace", NULL);
    const char *name = tf_json_str(wl, "metadata", "name", NULL);
    char buf[300];
    json_object *pod = json_object_new_object(), *meta = json_object_new_object(),
                *labels = json_object_new_object(), *anns = json_object_new_object(),
                *spec = json_object_new_object();
    json_object_object_add(pod, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(pod, "kind", json_object_new_string("Pod"));
    snprintf(buf, sizeof(buf), "%.240s-worker-", name);
    json_object_object_add(meta, "generateName", json_object_new_string(buf));
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    json_object_object_add(labels, TF_LABEL_COMPONENT, json_object_new_string("worker"));
    json_object_object_add(labels, TF_LABEL_ENABLED, json_object_new_string("true"));
    json_object_object_add(labels, "tensor-fusion.ai/workload", json_object_new_string(name));
    json_object_object_add(meta, "labels", labels);
    /* The worker holds the GPUs: it carries the client's normalised resource annotations, all
     * of its GPUs in its one container (so no per-container split or placement). */
    json_object *cann = tf_json_path(client, "metadata", "annotations", NULL);
    json_object_object_foreach(cann, k, v)
    {
        if (strncmp(k, TF_KEY_PREFIX, strlen(TF_KEY_PREFIX)) == 0 &&
            strcmp(k, TF_ANN_IS_LOCAL_GPU) != 0 && strcmp(k, TF_ANN_GPU_IDS) != 0 &&
            strcmp(k, TF_ANN_CONTAINER_GPUS) != 0 && strcmp(k, TF_ANN_INJECT_CONTAINER) != 0 &&
            strcmp(k, TF_ANN_CONTAINER_GPU_COUNT) != 0 &&
            strncmp(k, TF_ANN_CONTAINER_GPU_IDS_PREFIX,
                    sizeof(TF_ANN_CONTAINER_GPU_IDS_PREFIX) - 1) != 0)
            json_object_object_add(anns, k, json_object_get(v));
    }
    json_object_object_add(anns, TF_ANN_IS_LOCAL_GPU, json_object_new_string("true"));
    json_object_object_add(anns, TF_ANN_INJECT_CONTAINER, json_object_new_string("tf-worker"));
    json_object_object_add(meta, "annotations", anns);
    json_object_object_add(pod, "metadata", meta);
    json_object_object_add(spec, "schedulerName", json_object_new_string(TF_SCHEDULER_NAME));
    json_object *c = json_object_new_object();
    json_object_object_add(c, "name", json_object_new_string("tf-worker"));
    json_object_object_add(c, "image", json_object_new_string(r->worker_image));
    json_object *cmd = json_object_new_array();
    json_object_array_add(cmd, json_object_new_string("tf-worker"));
    json_object_array_add(cmd, json_object_new_string("--listen"));
    snprintf(buf, sizeof(buf), "tcp://0.0.0.0:%d", WORKER_PORT);
    json_object_array_add(cmd, json_object_new_string(buf));
    json_object_object_add(c, "command", cmd);
    json_object *ports = json_object_new_array(), *port = json_object_new_object();
    json_object_object_add(port, "containerPort", json_object_new_int(WORKER_PORT));
    json_object_array_add(ports, port);
    json_object_object_add(c, "ports", ports);
    /* The NVIDIA container runtime exposes exactly the GPUs the extender bound the worker to
     * (it writes gpu-ids before the Binding; the kubelet resolves this at container start). */
    json_object *env = json_object_new_array();
    env_ref(env, "NVIDIA_VISIBLE_DEVICES", "metadata.annotations['" TF_ANN_GPU_IDS "']");
    env_ref(env, "POD_NAME", "metadata.name");
    env_ref(env, "POD_NAMESPACE", "metadata.namespace");
    json_object_object_add(c, "env", env);
    /* The worker enforces the workload's limits from the pod's region, which the node agent
     * writes (and rewrites when the limits change) in the pod's own directory of the shm tree;
     * only that directory is mounted. */
    const char *gc = ann(client, TF_ANN_GPU_COUNT), *iso = ann(client, TF_ANN_ISOLATION);
    bool whole = iso && (strcmp(iso, "shared") == 0 || strcmp(iso, "partitioned") == 0);
    tf_webhook_worker_args(cmd, gc ? atoi(gc) : 1, WORKER_TOKEN_DIR "/" TF_TOKEN_SECRET_KEY,
                           !whole);
    json_object *mounts = json_object_new_array(), *m = json_object_new_object();
    json_object_object_add(m, "name", json_object_new_string("tf-shm"));
    json_object_object_add(m, "mountPath", json_object_new_string(WORKER_SHM_DIR));
    json_object_object_add(m, "subPathExpr",
                           json_object_new_string("$(POD_NAMESPACE)/$(POD_NAME)"));
    json_object_array_add(mounts, m);
    m = json_object_new_object();
    json_object_object_add(m, "name", json_object_new_string("tf-token"));
    json_object_object_add(m, "mountPath", json_object_new_string(WORKER_TOKEN_DIR));
    json_object_object_add(m, "readOnly", json_object_new_boolean(true));
    json_object_array_add(mounts, m);
    json_object_object_add(c, "volumeMounts", mounts);
    json_object *vols = json_object_new_array(), *vol = json_object_new_object(),
                *hp = json_object_new_object();
    json_object_object_add(vol, "name", json_object_new_string("tf-shm"));
    json_object_object_add(hp, "path", json_object_new_string(r->shm_host_dir));
    json_object_object_add(hp, "type", json_object_new_string("DirectoryOrCreate"));
    json_object_object_add(vol, "hostPath", hp);
    json_object_array_add(vols, vol);
    char secret[254];
    tf_webhook_token_secret(name, secret, sizeof(secret));
    vol = json_object_new_object();
    json_object *sv = json_object_new_object();
    json_object_object_add(vol, "name", json_object_new_string("tf-token"));
    json_object_object_add(sv, "secretName", json_object_new_string(secret));
    json_object_object_add(vol, "secret", sv);
    json_object_array_add(vols, vol);
    json_object_object_add(spec, "volumes", vols);
    json_object *res = json_object_new_object(), *lim = json_object_new_object();
    json_object_object_add(lim, TF_RESOURCE_VGPU, json_object_new_string(gc ? gc : "1"));
    json_object_object_add(res, "limits", lim);
    json_object_object_add(c, "resources", res);
    json_object *cs = json_object_new_array();
    json_object_array_add(cs, c);
    json_object_object_add(spec, "containers", cs);
    json_object_object_add(pod, "spec", spec);
    return pod;
}

static void reconcile_workloads(struct tf_reconciler *r, json_object *pods)
{
    json_object *wls = snapshot(r->src.workloads);
    for (size_t i = 0; i < json_object_array_length(wls); i++) {
        json_object *wl = json_object_array_get_idx(wls, i);
        const char *ns = tf_json_str(wl, "metadata", "namespace", NULL);
        const char *name = tf_json_str(wl, "metadata", "name", NULL);
        json_object *local = tf_json_path(wl, "spec", "isLocalGPU", NULL);
        bool remote = local && !json_object_get_boolean(local);
        int clients = 0, workers = 0, ready = 0;
        json_object *first_client = NULL, *worker_list = json_object_new_array();
        for (size_t p = 0; p < json_object_array_length(pods); p++) {
            json_object *pod = json_object_array_get_idx(pods, p);
            const char *pns = tf_json_str(pod, "metadata", "namespace", NULL);
            if (!pod_active(pod) || !pns || strcmp(pns, ns) != 0)
                continue;
            const char *comp = lbl(pod, TF_LABEL_COMPONENT);
            const char *w = remote && comp && strcmp(comp, "worker") == 0
                                ? lbl(pod, "tensor-fusion.ai/workload")
                                : ann(pod, TF_ANN_WORKLOAD);
            if (!comp || !w || strcmp(w, name) != 0)
                continue;
            if (strcmp(comp, "client") == 0) {
                clients++;
                if (!first_client)
                    first_client = pod;
                if (!remote) {
                    workers++; /* local: the app pod is its own worker */
                    ready += pod_ready(pod);
                }
            } else if (strcmp(comp, "worker") == 0) {
                workers++;
                ready += pod_ready(pod);
                json_object_array_add(worker_list, json_object_get(pod));
            }
        }
        char err[256];
        if (remote && clients > workers && first_client && ensure_token_secret(r, wl)) {
            for (int k = workers; k < clients; k++) {
                json_object *wp = worker_pod(r, wl, first_client);
                if (tf_k8s_create(r->c, &tf_k8s_pods, ns, wp, NULL, err, sizeof(err)) == 0) {
                    r->writes++;
                    event(r, wl, "Normal", "WorkerCreated",
                          "worker pod for remote workload %s/%s (%d of %d)", ns, name, k + 1,
                          clients);
                } else {
                    tf_log(TF_LOG_WARN, "reconcile", "cannot create worker: %s", err);
                }
                json_object_put(wp);
            }
        } else if (remote && clients == 0 && workers > 0) {
            for (size_t k = 0; k < json_object_array_length(worker_list); k++) {
                const char *wn = tf_json_str(json_object_array_get_idx(worker_list, k), "metadata",
                                             "name", NULL);
                if (tf_k8s_delete(r->c, &tf_k8s_pods, ns, wn, err, sizeof(err)) == 0)
                    r->writes++;
            }
            event(r, wl, "Normal", "WorkersScaledDown",
                  "no client pods left: %d worker pods deleted", workers);
        }
        json_object_put(worker_list);
        json_object *st = json_object_new_object();
        json_object_object_add(st, "workerCount", json_object_new_int(workers));
        json_object_object_add(st, "readyWorkers", json_object_new_int(ready));
        json_object_object_add(
            st, "phase",
            json_object_new_string(workers && ready == workers ? "Running" : "Pending"));
        put_status(r, &tf_k8s_tfworkloads, wl, st);
    }
    json_object_put(wls);
}

static void reconcile_connections(struct tf_reconciler *r, json_object *pods)
{
    json_object *conns = snapshot(r->src.connections);
    char err[256];
    /* Remove connections whose client pod is gone. */
    for (size_t i = 0; i < json_object_array_length(conns); i++) {
        json_object *cn = json_object_array_get_idx(conns, i);
        const char *ns = tf_json_str(cn, "metadata", "namespace", NULL);
        const char *client = tf_json_str(cn, "spec", "clientPod", NULL);
        bool found = false;
        for (size_t p = 0; client && p < json_object_array_length(pods) && !found; p++) {
            json_object *pod = json_object_array_get_idx(pods, p);
            const char *pn = tf_json_str(pod, "metadata", "name", NULL);
            const char *pns = tf_json_str(pod, "metadata", "namespace", NULL);
            found = pn && pns && strcmp(pn, client) == 0 && strcmp(pns, ns) == 0 && pod_active(pod);
        }
        if (!found &&
            tf_k8s_delete(r->c, &tf_k8s_tfconnections, ns,
                          tf_json_str(cn, "metadata", "name", NULL), err, sizeof(err)) == 0)
            r->writes++;
    }
    for (size_t p = 0; p < json_object_array_length(pods); p++) {
        json_object *pod = json_object_array_get_idx(pods, p);
        const char *comp = lbl(pod, TF_LABEL_COMPONENT);
        const char *local = ann(pod, TF_ANN_IS_LOCAL_GPU);
        const char *wl = ann(pod, TF_ANN_WORKLOAD);
        if (!pod_active(pod) || !comp || strcmp(comp, "client") != 0 || !local ||
            strcmp(local, "false") != 0 || !wl)
            continue;
        const char *ns = tf_json_str(pod, "metadata", "namespace", NULL);
        const char *pn = tf_json_str(pod, "metadata", "name", NULL);
        json_object *cn = tf_informer_get(r->src.connections, ns, pn);
        if (!cn) {
            char buf[1024];
            snprintf(buf, sizeof(buf),
                     "{\"apiVersion\":\"tensor-fusion.ai/v1\",\"kind\":\"TensorFusionConnection\","
                     "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":{"
                     "\"tensor-fusion.ai/workload\":\"%s\"},\"ownerReferences\":[{\"apiVersion\":"
                     "\"v1\",\"kind\":\"Pod\",\"name\":\"%s\",\"uid\":\"%s\"}]},\"spec\":{"
                     "\"workloadName\":\"%s\",\"clientPod\":\"%s\"}}",
                     pn, ns, wl, pn, pod_uid(pod), wl, pn);
            json_object *obj = json_tokener_parse(buf);
            if (obj &&
                tf_k8s_create(r->c, &tf_k8s_tfconnections, ns, obj, &cn, err, sizeof(err)) == 0)
                r->writes++;
            json_object_put(obj);
            if (!cn)
                continue;
        }
        if (tf_json_str(cn, "status", "workerName", NULL)) {
            json_object_put(cn);
            continue;
        }
        /* Least-loaded running worker of the workload. */
        const char *best = NULL, *best_ip = NULL;
        int best_load = 1 << 30;
        for (size_t w = 0; w < json_object_array_length(pods); w++) {
            json_object *wp = json_object_array_get_idx(pods, w);
            const char *wc = lbl(wp, TF_LABEL_COMPONENT);
            const char *ww = lbl(wp, "tensor-fusion.ai/workload");
            const char *wns = tf_json_str(wp, "metadata", "namespace", NULL);
            const char *ip = tf_json_str(wp, "status", "podIP", NULL);
            if (!wc || strcmp(wc, "worker") != 0 || !ww || strcmp(ww, wl) != 0 || !wns ||
                strcmp(wns, ns) != 0 || !ip || !pod_ready(wp) || !tf_allocsig_verify(r->sig, wp))
                continue;
            const char *wn = tf_json_str(wp, "metadata", "name", NULL);
            int load = 0;
            for (size_t i = 0; i < json_object_array_length(conns); i++) {
                const char *x =
                    tf_json_str(json_object_array_get_idx(conns, i), "status", "workerName", NULL);
                load += x && strcmp(x, wn) == 0;
            }
            if (load < best_load) {
                best_load = load;
                best = wn;
                best_ip = ip;
            }
        }
        if (best) {
            char url[128];
            snprintf(url, sizeof(url), "tcp://%s:%d", best_ip, WORKER_PORT);
            json_object *st = json_object_new_object();
            json_object_object_add(st, "phase", json_object_new_string("Connected"));
            json_object_object_add(st, "workerName", json_object_new_string(best));
            json_object_object_add(st, "connectionURL", json_object_new_string(url));
            put_status(r, &tf_k8s_tfconnections, cn, st);
            event(r, pod, "Normal", "WorkerAssigned", "remote GPU worker %s at %s", best, url);
            /* Count it for the next client in this pass. */
            json_object *fake = json_object_new_object(), *fst = json_object_new_object();
            json_object_object_add(fst, "workerName", json_object_new_string(best));
            json_object_object_add(fake, "status", fst);
            json_object_array_add(conns, fake);
        }
        json_object_put(cn);
    }
    json_object_put(conns);
}

int tf_reconcile_connection_url(struct tf_informer *connections, const char *ns, const char *name,
                                char *url, size_t len)
{
    json_object *cn = tf_informer_get(connections, ns, name);
    if (!cn)
        return TF_ENOENT;
    const char *u = tf_json_str(cn, "status", "connectionURL", NULL);
    int rc = u ? 0 : TF_EBUSY;
    if (u)
        tf_strlcpy(url, u, len);
    json_object_put(cn);
    return rc;
}

/* ---- quotas ------------------------------------------------------------------------------- */

static void reconcile_quotas(struct tf_reconciler *r, json_object *pods)
{
    json_object *qs = snapshot(r->src.quotas);
    for (size_t i = 0; i < json_object_array_length(qs); i++) {
        json_object *q = json_object_array_get_idx(qs, i);
        const char *ns = tf_json_str(q, "metadata", "namespace", NULL);
        int64_t rt = 0, rv = 0, lt = 0, lv = 0;
        int workers = 0;
        for (size_t p = 0; p < json_object_array_length(pods); p++) {
            json_object *pod = json_object_array_get_idx(pods, p);
            const char *comp = lbl(pod, TF_LABEL_COMPONENT);
            const char *pns = tf_json_str(pod, "metadata", "namespace", NULL);
            if (!pod_active(pod) || !comp || !pns || strcmp(pns, ns) != 0)
                continue;
            /* Remote clients hold no GPU themselves: their workers are counted. */
            const char *local = ann(pod, TF_ANN_IS_LOCAL_GPU);
            if (strcmp(comp, "client") == 0 && local && strcmp(local, "false") == 0)
                continue;
            if (strcmp(comp, "client") != 0 && strcmp(comp, "worker") != 0)
                continue;
            long long n = 1;
            const char *gc = ann(pod, TF_ANN_GPU_COUNT);
            if (gc)
                n = atoll(gc) > 0 ? atoll(gc) : 1;
            rt += q_milli(ann(pod, TF_ANN_TFLOPS_REQUEST)) * n;
            rv += q_bytes(ann(pod, TF_ANN_VRAM_REQUEST)) * n;
            lt += q_milli(ann(pod, TF_ANN_TFLOPS_LIMIT)) * n;
            lv += q_bytes(ann(pod, TF_ANN_VRAM_LIMIT)) * n;
            workers++;
        }
        json_object *used = json_object_new_object();
        json_object_object_add(used, "requests", q_obj(rt, rv));
        json_object_object_add(used, "limits", q_obj(lt, lv));
        json_object_object_add(used, "workers", json_object_new_int(workers));
        int64_t tt = q_milli(tf_json_str(q, "spec", "total", "requests", "tflops", NULL));
        int64_t tv = q_bytes(tf_json_str(q, "spec", "total", "requests", "vram", NULL));
        json_object *maxw = tf_json_path(q, "spec", "total", "maxWorkers", NULL);
        json_object *avail = json_object_new_object();
        char buf[32];
        if (tt) {
            snprintf(buf, sizeof(buf), "%lld", (long long)(rt >= tt ? 0 : (tt - rt) * 100 / tt));
            json_object_object_add(avail, "requestsTFlops", json_object_new_string(buf));
        }
        if (tv) {
            snprintf(buf, sizeof(buf), "%lld", (long long)(rv >= tv ? 0 : (tv - rv) * 100 / tv));
            json_object_object_add(avail, "requestsVRAM", json_object_new_string(buf));
        }
        if ((tt && rt > tt) || (tv && rv > tv) || (maxw && workers > json_object_get_int(maxw))) {
            const char *prev = tf_json_str(q, "status", "used", "requests", "tflops", NULL);
            char now[48];
            tf_quantity_format_milli(rt, now, sizeof(now));
            if (!prev || strcmp(prev, now) != 0)
                event(r, q, "Warning", "QuotaExceeded",
                      "namespace %s uses %s TFLOPS requests, %d workers: over the quota", ns, now,
                      workers);
        }
        json_object *st = json_object_new_object();
        json_object_object_add(st, "used", used);
        json_object_object_add(st, "availablePercent", avail);
        put_status(r, &tf_k8s_gpuresourcequotas, q, st);
    }
    json_object_put(qs);
}

int tf_reconcile_once(struct tf_reconciler *r)
{
    struct tf_informer *all[] = {r->src.pods,        r->src.clusters, r->src.pools,
                                 r->src.gpus,        r->src.gpunodes, r->src.workloads,
                                 r->src.connections, r->src.quotas};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i] && !tf_informer_synced(all[i]))
            return TF_EBUSY;
    r->writes = 0;
    json_object *pods = snapshot(r->src.pods);
    json_object *nodes_agg = json_object_new_object(), *pools_agg = json_object_new_object(),
                *node_pods = json_object_new_object();
    reconcile_gpus(r, pods, nodes_agg, pools_agg, node_pods);
    reconcile_gpunodes(r, nodes_agg, node_pods);
    reconcile_pools(r, pools_agg);
    reconcile_workloads(r, pods);
    reconcile_connections(r, pods);
    reconcile_quotas(r, pods);
    json_object_put(node_pods);
    json_object_put(pools_agg);
    json_object_put(nodes_agg);
    json_object_put(pods);
    return r->writes;
}
