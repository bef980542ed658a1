/* SPDX-License-Identifier: Apache-2.0
 *
 * GPU, GPUNode, GPUPool and TensorFusionCluster reconcilers (see reconcile.h).
 */
#include "controller/reconcile_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/webhook.h"
#include "core/defaults.h"
#include "core/quantity.h"

#include <stdio.h>
#include <string.h>

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

/* The pool spec's tflopsOversellRatio (percent), 500 when unset as the CRD defaults it. */
static int64_t oversell_pct(json_object *spec)
{
    json_object *v =
        tf_json_path(spec, "capacityConfig", "oversubscription", "tflopsOversellRatio", NULL);
    return v && json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 100
               ? json_object_get_int64(v)
               : 500;
}

static void put_q(json_object *st, const char *key, int64_t x, bool bytes)
{
    char buf[48];
    if (bytes)
        tf_quantity_format_bytes(x, buf, sizeof(buf));
    else
        tf_quantity_format_milli(x, buf, sizeof(buf));
    json_object_object_add(st, key, json_object_new_string(buf));
}

/* Totals and availability of A into status ST; with RATIO_PCT also the virtual capacity
 * (TFLOPS after oversubscription; VRAM as physical: host-memory expansion depends on each
 * node's memory, which is not known here). */
static void put_totals(json_object *st, const struct agg *a, int64_t ratio_pct)
{
    put_q(st, "totalTFlops", a->tt, false);
    put_q(st, "totalVRAM", a->tv, true);
    put_q(st, "availableTFlops", a->at, false);
    put_q(st, "availableVRAM", a->av, true);
    if (ratio_pct) {
        put_q(st, "virtualTFlops", a->tt * ratio_pct / 100, false);
        put_q(st, "virtualVRAM", a->tv, true);
    }
}

const char *tf__rc_gpu_node(json_object *gpu)
{
    const char *n = tf_json_str(gpu, "status", "nodeSelector", "kubernetes.io/hostname", NULL);
    return n ? n : tf__rc_lbl(gpu, "tensor-fusion.ai/node");
}

/* Upstream's PodGPUInfo of POD on a GPU of capacity CT/CV: its share of the GPU (T/V) as
 * requests, its limits from the normalised annotations (the request where it sets none). */
static json_object *pod_gpu_info(json_object *pod, int64_t ct, int64_t cv, int64_t t, int64_t v)
{
    const char *iso = tf__rc_ann(pod, TF_ANN_ISOLATION);
    bool whole = iso && strcmp(iso, "shared") == 0;
    int64_t lt = whole ? ct : tf__rc_q_milli(tf__rc_ann(pod, TF_ANN_TFLOPS_LIMIT));
    const char *pct = tf__rc_ann(pod, TF_ANN_PERCENT_LIMIT);
    int32_t bp = 0;
    if (!lt && pct && tf_percent_parse(pct, &bp, "", NULL, 0) == 0)
        lt = ct * bp / 10000;
    int64_t lv = whole ? cv : tf__rc_q_bytes(tf__rc_ann(pod, TF_ANN_VRAM_LIMIT));
    const char *qos = tf__rc_ann(pod, TF_ANN_QOS);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name",
                           json_object_new_string(tf_json_str(pod, "metadata", "name", NULL)
                                                      ? tf_json_str(pod, "metadata", "name", NULL)
                                                      : ""));
    const char *ns = tf_json_str(pod, "metadata", "namespace", NULL);
    json_object_object_add(o, "namespace", json_object_new_string(ns ? ns : ""));
    json_object_object_add(o, "uid", json_object_new_string(tf__rc_pod_uid(pod)));
    if (qos && tf_qos_parse(qos, &(enum tf_qos){0}) == 0)
        json_object_object_add(o, "qos", json_object_new_string(qos));
    json_object_object_add(o, "requests", tf__rc_q_obj(t, v));
    json_object_object_add(o, "limits", tf__rc_q_obj(lt ? lt : t, lv ? lv : v));
    return o;
}

/* Adds POD's INFO to the runningApps entry of its workload (the workload annotation, else the
 * pod itself), creating the entry: {name, namespace, count, pods[]}. */
static void add_running_app(json_object *apps, json_object *pod, json_object *info)
{
    const char *wl = tf__rc_ann(pod, TF_ANN_WORKLOAD);
    const char *name = wl ? wl : tf_json_str(info, "name", NULL);
    const char *ns = tf_json_str(info, "namespace", NULL);
    json_object *app = NULL;
    for (size_t i = 0; i < json_object_array_length(apps) && !app; i++) {
        json_object *a = json_object_array_get_idx(apps, i);
        if (strcmp(tf_json_str(a, "name", NULL), name) == 0 &&
            strcmp(tf_json_str(a, "namespace", NULL), ns) == 0)
            app = a;
    }
    if (!app) {
        app = json_object_new_object();
        json_object_object_add(app, "name", json_object_new_string(name));
        json_object_object_add(app, "namespace", json_object_new_string(ns));
        json_object_object_add(app, "count", json_object_new_int(0));
        json_object_object_add(app, "pods", json_object_new_array());
        json_object_array_add(apps, app);
    }
    json_object *count = tf_json_path(app, "count", NULL);
    json_object_set_int(count, json_object_get_int(count) + 1);
    json_object_array_add(tf_json_path(app, "pods", NULL), json_object_get(info));
}

/* The heartbeat phase of NODE (Pending, Running, Unknown) from BEATS; Running when no Lease
 * informer runs. */
static const char *beat_phase(struct tf_reconciler *r, json_object *beats, const char *node)
{
    json_object *fresh = NULL;
    if (!r->src.leases)
        return "Running";
    if (!node || !json_object_object_get_ex(beats, node, &fresh))
        return "Pending";
    return json_object_get_boolean(fresh) ? "Running" : "Unknown";
}

static void reconcile_gpus(struct tf_reconciler *r, json_object *gpus, json_object *pods,
                           json_object *assign, json_object *beats, json_object *nodes_agg,
                           json_object *pools_agg, json_object *node_pods)
{
    for (size_t g = 0; g < json_object_array_length(gpus); g++) {
        json_object *gpu = json_object_array_get_idx(gpus, g);
        const char *uuid = tf_json_str(gpu, "status", "uuid", NULL);
        const char *name = tf_json_str(gpu, "metadata", "name", NULL);
        if (!uuid)
            uuid = name;
        int64_t ct = tf__rc_q_milli(tf_json_str(gpu, "status", "capacity", "tflops", NULL));
        int64_t cv = tf__rc_q_bytes(tf_json_str(gpu, "status", "capacity", "vram", NULL));
        if (!ct && !cv)
            continue; /* the hypervisor has not reported this GPU yet */
        int64_t ut = 0, uv = 0;
        json_object *apps = json_object_new_array();
        json_object *holders = json_object_new_array();
        for (size_t p = 0; p < json_object_array_length(pods); p++) {
            json_object *pod = json_object_array_get_idx(pods, p);
            const char *ids = tf__rc_ann(pod, TF_ANN_GPU_IDS);
            if (!ids || !tf__rc_pod_active(pod) ||
                !(tf__rc_list_has(ids, uuid) || tf__rc_list_has(ids, name)) ||
                !tf_allocsig_verify(r->sig, pod))
                continue;
            int64_t t, v;
            tf__rc_pod_share(pod, tf_json_str(gpu, "status", "gpuModel", NULL), ct, cv, &t, &v);
            ut += t;
            uv += v;
            json_object *info = pod_gpu_info(pod, ct, cv, t, v);
            add_running_app(apps, pod, info);
            json_object_array_add(holders, info);
        }
        int64_t at = ct > ut ? ct - ut : 0, av = cv > uv ? cv - uv : 0;
        json_object *st = json_object_new_object();
        json_object_object_add(st, "available", tf__rc_q_obj(at, av));
        json_object_object_add(st, "runningApps", apps);
        if (!tf_json_str(gpu, "status", "phase", NULL))
            json_object_object_add(st, "phase", json_object_new_string("Running"));
        const char *node = tf__rc_gpu_node(gpu);
        tf__rc_gpu_pool(r, gpu, assign, beat_phase(r, beats, node), st);
        tf__rc_put_status(r, &tf_k8s_gpus, gpu, st);
        const char *pool = tf__rc_assigned_pool(assign, node);
        if (!pool)
            pool = tf__rc_lbl(gpu, "tensor-fusion.ai/gpupool");
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
}

struct beat_ctx {
    json_object *by_node; /* node -> true while its Lease is fresh, false once expired */
    long long now_us;
};

static int collect_beat(json_object *lease, void *arg)
{
    struct beat_ctx *b = arg;
    const char *node = tf__rc_lbl(lease, "tensor-fusion.ai/node");
    const char *renew = tf_json_str(lease, "spec", "renewTime", NULL);
    json_object *dur = tf_json_path(lease, "spec", "leaseDurationSeconds", NULL);
    long long us = 0;
    if (!node || !renew || tf_k8s_time_parse(renew, &us))
        return 0;
    /* Seconds, as the Lease says (40 when absent or not an integer), at most a day: a
     * larger one (or one that would overflow) must not keep a silent node fresh. */
    int64_t secs = dur && json_object_is_type(dur, json_type_int) ? json_object_get_int64(dur) : 40;
    long long ttl = (secs < 0 ? 0 : secs > 86400 ? 86400 : secs) * 1000000LL;
    json_object_object_add(b->by_node, node, json_object_new_boolean(us + ttl >= b->now_us));
    return 0;
}

/* Node -> heartbeat fresh (true) or expired (false), from the hypervisors' Leases. */
static json_object *collect_beats(struct tf_reconciler *r)
{
    char now[40];
    tf_k8s_time_now(now, sizeof(now), true);
    struct beat_ctx bc = {json_object_new_object(), 0};
    tf_k8s_time_parse(now, &bc.now_us);
    if (r->src.leases)
        tf_informer_foreach(r->src.leases, collect_beat, &bc);
    return bc.by_node;
}

/* NODE's phase (see reconcile.h) from BEATS and its GPUNode GN (may be NULL). */
static const char *node_phase(struct tf_reconciler *r, json_object *beats, const char *node,
                              json_object *gn)
{
    if (gn && tf_json_path(gn, "metadata", "deletionTimestamp", NULL))
        return "Destroying";
    return beat_phase(r, beats, node);
}

static void reconcile_gpunodes(struct tf_reconciler *r, json_object *beats, json_object *assign,
                               json_object *nodes_agg, json_object *node_pods, json_object *phases)
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
                     "{\"name\":\"%s\"},\"spec\":{\"manageMode\":\"AutoSelect\"}}",
                     node);
            json_object *obj = json_tokener_parse(buf);
            int rc = tf_k8s_create(r->c, &tf_k8s_gpunodes, NULL, obj, &gn, err, sizeof(err));
            json_object_put(obj);
            /* Made already (our informer has not seen it yet): use the stored one. */
            if (rc == TF_EEXIST)
                rc = tf_k8s_get(r->c, &tf_k8s_gpunodes, NULL, node, &gn, err, sizeof(err));
            else if (rc == 0)
                r->writes++;
            if (rc) {
                tf_log(TF_LOG_WARN, "reconcile", "cannot create GPUNode %s: %s", node, err);
                continue;
            }
        }
        json_object *st = json_object_new_object();
        const char *phase = node_phase(r, beats, node, gn);
        const char *was = tf_json_str(gn, "status", "phase", NULL);
        if (was && strcmp(was, phase) != 0)
            tf__rc_event(
                r, gn, strcmp(phase, "Running") == 0 ? "Normal" : "Warning",
                strcmp(phase, "Running") == 0   ? "NodeReady"
                : strcmp(phase, "Pending") == 0 ? "NodePending"
                                                : "NodeNotReady",
                "GPU node %s: %s -> %s%s", node, was, phase,
                strcmp(phase, "Unknown") == 0 ? " (its hypervisor's heartbeat Lease expired)" : "");
        json_object_object_add(phases, node, json_object_new_string(phase));
        json_object_object_add(st, "phase", json_object_new_string(phase));
        json_object_object_add(st, "totalGPUs", json_object_new_int(a.gpus));
        json_object_object_add(st, "managedGPUs", json_object_new_int(a.gpus));
        put_totals(st, &a, 0);
        json_object *np = NULL;
        json_object_object_get_ex(node_pods, node, &np);
        int npods = 0;
        if (np) {
            json_object_object_foreach(np, uuid, held)
            {
                (void)uuid;
                npods += (int)json_object_array_length(held);
            }
        }
        json_object_object_add(st, "totalGPUPods", json_object_new_int(npods));
        json_object_object_add(st, "allocatedPods",
                               np ? json_object_get(np) : json_object_new_object());
        tf__rc_gpunode_pool(r, gn, assign, st);
        tf__rc_put_status(r, &tf_k8s_gpunodes, gn, st);
        json_object_put(gn);
    }
}

/* Nodes with GPUs of pool PNAME (the "pool\nnode" keys of POOLS_AGG); with PHASES (node ->
 * phase), those Running in *READY and those Pending in *PENDING. */
static int pool_nodes(json_object *pools_agg, const char *pname, json_object *phases, int *ready,
                      int *pending)
{
    int nodes = 0;
    size_t plen = strlen(pname);
    json_object_object_foreach(pools_agg, k, v)
    {
        (void)v;
        if (strncmp(k, pname, plen) == 0 && k[plen] == '\n') {
            nodes++;
            const char *ph = phases ? tf_json_str(phases, k + plen + 1, NULL) : NULL;
            if (ready)
                *ready += ph && strcmp(ph, "Running") == 0;
            if (pending)
                *pending += ph && strcmp(ph, "Pending") == 0;
        }
    }
    return nodes;
}

/* The GPUPool of cluster CNAME's pool ENAME: "<cluster>-<pool>" as upstream names it, unless
 * a pool named ENAME of that cluster already exists (made by an earlier release: it is kept). */
static void pool_name(struct tf_reconciler *r, const char *cname, const char *ename, char *out,
                      size_t len)
{
    json_object *legacy = tf_informer_get(r->src.pools, NULL, ename);
    const char *owner = tf_json_str(legacy, "metadata", "labels", "tensor-fusion.ai/cluster", NULL);
    if (owner && !strcmp(owner, cname))
        snprintf(out, len, "%s", ename);
    else
        snprintf(out, len, "%s-%s", cname, ename);
    json_object_put(legacy);
}

static void reconcile_pools(struct tf_reconciler *r, json_object *pools_agg, json_object *phases)
{
    /* Cluster -> pools. */
    json_object *clusters = tf_informer_snapshot(r->src.clusters);
    for (size_t i = 0; i < json_object_array_length(clusters); i++) {
        json_object *cl = json_object_array_get_idx(clusters, i);
        const char *cname = tf_json_str(cl, "metadata", "name", NULL);
        json_object *gp = tf_json_path(cl, "spec", "gpuPools", NULL);
        json_object *ready = json_object_new_array(), *not_ready = json_object_new_array();
        int total_gpus = 0, total_nodes = 0, npools = 0;
        struct agg sum = {0};
        int64_t virt_tflops = 0;
        for (size_t j = 0; gp && json_object_array_length(gp) > j; j++) {
            json_object *entry = json_object_array_get_idx(gp, j);
            const char *ename = tf_json_str(entry, "name", NULL);
            if (!ename)
                continue;
            npools++;
            char pname[254];
            pool_name(r, cname, ename, pname, sizeof(pname));
            bool is_default = tf_json_true(entry, "isDefault", NULL);
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
                json_object_object_add(labels, "tensor-fusion.ai/managed-by",
                                       json_object_new_string(cname));
                json_object_object_add(meta, "labels", labels);
                if (is_default) {
                    json_object *ann = json_object_new_object();
                    json_object_object_add(ann, TF_ANN_DEFAULT_POOL,
                                           json_object_new_string("true"));
                    json_object_object_add(meta, "annotations", ann);
                }
                json_object_object_add(obj, "metadata", meta);
                json_object_object_add(obj, "spec", json_object_get(want));
                if (tf_k8s_create(r->c, &tf_k8s_gpupools, NULL, obj, NULL, err, sizeof(err)) == 0) {
                    r->writes++;
                    tf__rc_event(r, cl, "Normal", "GPUPoolCreated",
                                 "GPUPool %s created from cluster %s", pname, cname);
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
                    tf__rc_event(r, cl, "Normal", "GPUPoolUpdated",
                                 "GPUPool %s spec overridden by cluster %s specTemplate", pname,
                                 cname);
                } else {
                    tf_log(TF_LOG_WARN, "reconcile", "cannot update GPUPool %s: %s", pname, err);
                }
            }
            if (pool && is_default != tf_pool_is_default(pool)) {
                /* The cluster's isDefault is the pool's is-default-pool annotation. */
                json_object *p = json_object_new_object(), *m = json_object_new_object(),
                            *ann = json_object_new_object();
                json_object_object_add(ann, TF_ANN_DEFAULT_POOL,
                                       is_default ? json_object_new_string("true") : NULL);
                json_object_object_add(m, "annotations", ann);
                json_object_object_add(p, "metadata", m);
                if (tf_k8s_merge_patch(r->c, &tf_k8s_gpupools, NULL, pname, NULL, p, NULL, err,
                                       sizeof(err)) == 0)
                    r->writes++;
                else
                    tf_log(TF_LOG_WARN, "reconcile", "cannot annotate GPUPool %s: %s", pname, err);
                json_object_put(p);
            }
            json_object_put(pool);
            json_object_put(want);
            struct agg a = agg_get(pools_agg, pname);
            total_gpus += a.gpus;
            total_nodes += pool_nodes(pools_agg, pname, NULL, NULL, NULL);
            sum.tt += a.tt;
            sum.tv += a.tv;
            sum.at += a.at;
            sum.av += a.av;
            virt_tflops += a.tt * oversell_pct(tpl) / 100;
            json_object_array_add(a.gpus ? ready : not_ready, json_object_new_string(pname));
        }
        json_object *st = json_object_new_object();
        json_object_object_add(st, "phase",
                               json_object_new_string(total_gpus ? "Running" : "Pending"));
        json_object_object_add(st, "totalPools", json_object_new_int(npools));
        json_object_object_add(st, "totalNodes", json_object_new_int(total_nodes));
        json_object_object_add(st, "totalGPUs", json_object_new_int(total_gpus));
        put_totals(st, &sum, 0);
        put_q(st, "virtualTFlops", virt_tflops, false);
        put_q(st, "virtualVRAM", sum.tv, true);
        json_object_object_add(st, "readyGPUPools", ready);
        json_object_object_add(st, "notReadyGPUPools", not_ready);
        tf__rc_put_status(r, &tf_k8s_tfclusters, cl, st);
    }
    json_object_put(clusters);

    /* Pool status. */
    json_object *pools = tf_informer_snapshot(r->src.pools);
    for (size_t i = 0; i < json_object_array_length(pools); i++) {
        json_object *pool = json_object_array_get_idx(pools, i);
        const char *pname = tf_json_str(pool, "metadata", "name", NULL);
        struct agg a = agg_get(pools_agg, pname);
        int ready = 0, pending = 0;
        int nodes = pool_nodes(pools_agg, pname, phases, &ready, &pending);
        const char *phase = !nodes || ready + pending == nodes
                                ? (ready == nodes && nodes ? "Running" : "Pending")
                                : "Unknown";
        json_object *st = json_object_new_object();
        json_object_object_add(st, "phase", json_object_new_string(phase));
        json_object_object_add(st, "totalNodes", json_object_new_int(nodes));
        json_object_object_add(st, "readyNodes", json_object_new_int(ready));
        json_object_object_add(st, "notReadyNodes", json_object_new_int(nodes - ready));
        json_object_object_add(st, "totalGPUs", json_object_new_int(a.gpus));
        put_totals(st, &a, oversell_pct(tf_json_path(pool, "spec", NULL)));
        if (!tf_json_path(pool, "status", "componentStatus", NULL))
            json_object_object_add(st, "componentStatus", json_object_new_object());
        tf__rc_pool_isolation(r, pool, st);
        tf__rc_put_status(r, &tf_k8s_gpupools, pool, st);
    }
    json_object_put(pools);
}

/* GPU, GPUNode, GPUPool and TensorFusionCluster status from the pods' allocations. */
void tf__rc_infra(struct tf_reconciler *r, json_object *pods)
{
    json_object *nodes_agg = json_object_new_object(), *pools_agg = json_object_new_object(),
                *node_pods = json_object_new_object();
    json_object *gpus = tf_informer_snapshot(r->src.gpus);
    json_object *beats = collect_beats(r), *assign = tf__rc_assign_pools(r, gpus);
    reconcile_gpus(r, gpus, pods, assign, beats, nodes_agg, pools_agg, node_pods);
    json_object *phases = json_object_new_object();
    reconcile_gpunodes(r, beats, assign, nodes_agg, node_pods, phases);
    reconcile_pools(r, pools_agg, phases);
    json_object_put(phases);
    json_object_put(assign);
    json_object_put(beats);
    json_object_put(gpus);
    json_object_put(node_pods);
    json_object_put(pools_agg);
    json_object_put(nodes_agg);
}
