/* SPDX-License-Identifier: Apache-2.0
 *
 * The controller's metric tables (see ctlmetrics.h).
 */
#include "controller/ctlmetrics.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/quantity.h"
#include "core/spec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define GIB 1073741824.0

static const char *ann(json_object *o, const char *key)
{
    return tf_json_str(o, "metadata", "annotations", key, NULL);
}

static const char *lbl(json_object *o, const char *key)
{
    return tf_json_str(o, "metadata", "labels", key, NULL);
}

static double q_tflops(const char *s)
{
    int64_t v = 0;
    return s && tf_quantity_milli(s, &v, "", NULL, 0) == 0 ? (double)v / 1000.0 : 0;
}

static double q_bytes(const char *s)
{
    int64_t v = 0;
    return s && tf_quantity_bytes(s, &v, "", NULL, 0) == 0 ? (double)v : 0;
}

static bool pod_active(json_object *pod)
{
    const char *phase = tf_json_str(pod, "status", "phase", NULL);
    return !tf_json_path(pod, "metadata", "deletionTimestamp", NULL) &&
           !(phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0));
}

static bool pod_ready(json_object *pod)
{
    const char *phase = tf_json_str(pod, "status", "phase", NULL);
    if (!phase || strcmp(phase, "Running") != 0)
        return false;
    json_object *conds = tf_json_path(pod, "status", "conditions", NULL);
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tf_json_str(c, "type", NULL), *st = tf_json_str(c, "status", NULL);
        if (t && st && strcmp(t, "Ready") == 0)
            return strcmp(st, "True") == 0;
    }
    return false; /* Running, but no Ready condition reported yet */
}

/* A price string: "0.0069", "$0.0069" or a JSON number; < 0 when absent or invalid. */
static double price(json_object *o, const char *key)
{
    json_object *v = tf_json_path(o, key, NULL);
    if (!v)
        return -1;
    if (json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int))
        return json_object_get_double(v) >= 0 ? json_object_get_double(v) : -1;
    const char *s = json_object_get_string(v);
    if (!s)
        return -1;
    if (*s == '$')
        s++;
    char *end;
    double d = strtod(s, &end);
    return *s && !*end && isfinite(d) && d >= 0 ? d : -1;
}

bool tf_ctlmetrics_price(json_object *pool, const char *qos, double *tflops_hour,
                         double *vram_gib_hour, double *over_ratio)
{
    json_object *arr = tf_json_path(pool, "spec", "qosConfig", "pricing", NULL);
    for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        const char *q = tf_json_str(e, "qos", NULL);
        if (!q || strcmp(q, qos) != 0)
            continue;
        json_object *req = tf_json_path(e, "requests", NULL);
        double t = price(req, "perFP16TFlopsPerHour"), v = price(req, "perGBOfVRAMPerHour");
        double r = price(e, "limitsOverRequests");
        *tflops_hour = t > 0 ? t : 0;
        *vram_gib_hour = v > 0 ? v : 0;
        *over_ratio = r >= 0 ? r : 1;
        return true;
    }
    return false;
}

/* ---- aggregation --------------------------------------------------------------------------- */

struct agg {
    const char *node, *pool, *phase; /* borrowed */
    double cap_t, cap_v, alloc_t, alloc_v, virt_t, virt_v, limit_t, limit_v, cost;
    int gpus, nodes, workers;
};

struct aggs {
    struct agg *a;
    size_t n, cap;
    json_object *index; /* key -> position */
};

static struct agg *agg_get(struct aggs *s, const char *key)
{
    json_object *pos;
    if (json_object_object_get_ex(s->index, key, &pos))
        return &s->a[json_object_get_int(pos)];
    struct agg *a = tf_grow(s->a, &s->cap, s->n + 1, sizeof(*a), 16);
    if (!a)
        return NULL;
    s->a = a;
    memset(&s->a[s->n], 0, sizeof(s->a[0]));
    json_object_object_add(s->index, key, json_object_new_int((int)s->n));
    return &s->a[s->n++];
}

static void aggs_free(struct aggs *s)
{
    free(s->a);
    json_object_put(s->index);
}

static json_object *find_named(json_object *arr, const char *name)
{
    for (size_t i = 0; name && arr && i < json_object_array_length(arr); i++) {
        json_object *o = json_object_array_get_idx(arr, i);
        const char *n = tf_json_str(o, "metadata", "name", NULL);
        if (n && strcmp(n, name) == 0)
            return o;
    }
    return NULL;
}

static const char *gpu_node(json_object *gpu)
{
    const char *n = tf_json_str(gpu, "status", "nodeSelector", "kubernetes.io/hostname", NULL);
    return n ? n : lbl(gpu, "tensor-fusion.ai/node");
}

static int pct_of(json_object *pool, const char *key, int dflt)
{
    json_object *v = tf_json_path(pool, "spec", "capacityConfig", "oversubscription", key, NULL);
    return v ? json_object_get_int(v) : dflt;
}

/* ---- build --------------------------------------------------------------------------------- */

struct out {
    struct tf_lp_point *p;
    size_t n, cap;
};

static struct tf_lp_point *point(struct out *o, const char *meas, int64_t ts)
{
    struct tf_lp_point *p = tf_grow(o->p, &o->cap, o->n + 1, sizeof(*p), 64);
    if (!p)
        return NULL;
    o->p = p;
    tf_lp_point_init(&o->p[o->n], meas, ts);
    return &o->p[o->n++];
}

/* The GPU object named by the first entry of IDS (a uuid or an object name). */
static json_object *first_gpu(json_object *gpus, const char *ids, int *count)
{
    *count = 0;
    char first[256] = "";
    for (const char *p = ids; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        while (len && *p == ' ')
            p++, len--;
        if (len) {
            if (!*count)
                snprintf(first, sizeof(first), "%.*s", (int)len, p);
            (*count)++;
        }
        p = e ? e + 1 : NULL;
    }
    for (size_t i = 0; first[0] && i < json_object_array_length(gpus); i++) {
        json_object *g = json_object_array_get_idx(gpus, i);
        const char *u = tf_json_str(g, "status", "uuid", NULL);
        const char *n = tf_json_str(g, "metadata", "name", NULL);
        if ((u && strcasecmp(u, first) == 0) || (n && strcasecmp(n, first) == 0))
            return g;
    }
    return NULL;
}

const char *tf_ctlmetrics_gpu_node(json_object *gpu)
{
    return gpu_node(gpu);
}

void tf_ctlmetrics_gpu_capacity(json_object *gpu, double *tflops, double *vram,
                                double *avail_tflops, double *avail_vram)
{
    *tflops = q_tflops(tf_json_str(gpu, "status", "capacity", "tflops", NULL));
    *vram = q_bytes(tf_json_str(gpu, "status", "capacity", "vram", NULL));
    const char *avt = tf_json_str(gpu, "status", "available", "tflops", NULL);
    const char *avv = tf_json_str(gpu, "status", "available", "vram", NULL);
    *avail_tflops = avt ? q_tflops(avt) : *tflops;
    *avail_vram = avv ? q_bytes(avv) : *vram;
}

bool tf_ctlmetrics_worker(json_object *pod, json_object *gpus, const char *default_pool,
                          struct tf_ctlmetrics_worker *w)
{
    memset(w, 0, sizeof(*w));
    const char *comp = lbl(pod, TF_KEY_PREFIX "component");
    const char *ids = ann(pod, TF_KEY_PREFIX "gpu-ids");
    if (!comp || !ids || !*ids || !pod_active(pod) ||
        (strcmp(comp, "client") != 0 && strcmp(comp, "worker") != 0))
        return false;
    w->ids = ids;
    w->gpu = first_gpu(gpus, ids, &w->gpu_count);
    double cap_t = w->gpu ? q_tflops(tf_json_str(w->gpu, "status", "capacity", "tflops", NULL)) : 0;
    double cap_v = w->gpu ? q_bytes(tf_json_str(w->gpu, "status", "capacity", "vram", NULL)) : 0;
    w->isolation = ann(pod, TF_ANN_ISOLATION);
    double tr, tl, vr, vl;
    if (w->isolation && strcmp(w->isolation, "shared") == 0) {
        tr = tl = cap_t;
        vr = vl = cap_v;
    } else {
        tr = q_tflops(ann(pod, TF_ANN_TFLOPS_REQUEST));
        tl = q_tflops(ann(pod, TF_ANN_TFLOPS_LIMIT));
        int32_t bp;
        const char *pr = ann(pod, TF_ANN_PERCENT_REQUEST), *pl = ann(pod, TF_ANN_PERCENT_LIMIT);
        if (!tr && pr && tf_percent_parse(pr, &bp, "", NULL, 0) == 0)
            tr = cap_t * bp / 10000.0;
        if (!tl && pl && tf_percent_parse(pl, &bp, "", NULL, 0) == 0)
            tl = cap_t * bp / 10000.0;
        if (tl < tr)
            tl = tr;
        vr = q_bytes(ann(pod, TF_ANN_VRAM_REQUEST));
        vl = q_bytes(ann(pod, TF_ANN_VRAM_LIMIT));
        if (!vl)
            vl = cap_v > vr ? cap_v : vr;
    }
    w->tflops_request = tr;
    w->tflops_limit = tl;
    w->vram_request = vr;
    w->vram_limit = vl;
    w->pool = ann(pod, TF_ANN_GPUPOOL);
    if (!w->pool && w->gpu)
        w->pool = lbl(w->gpu, TF_KEY_PREFIX "gpupool");
    if (!w->pool)
        w->pool = default_pool;
    w->qos = ann(pod, TF_ANN_QOS);
    if (!w->qos || !*w->qos)
        w->qos = "medium";
    w->name = tf_json_str(pod, "metadata", "name", NULL);
    w->ns = tf_json_str(pod, "metadata", "namespace", NULL);
    w->workload = ann(pod, TF_ANN_WORKLOAD);
    if (!w->workload)
        w->workload = lbl(pod, TF_KEY_PREFIX "workload");
    if (!w->workload)
        w->workload = w->name;
    w->node = tf_json_str(pod, "spec", "nodeName", NULL);
    w->ready = pod_ready(pod);
    return true;
}

static void worker_rows(const struct tf_ctlmetrics_in *in, struct out *o, struct aggs *nodes,
                        struct aggs *pools)
{
    for (size_t i = 0; i < json_object_array_length(in->pods); i++) {
        json_object *pod = json_object_array_get_idx(in->pods, i);
        struct tf_ctlmetrics_worker w;
        if (!tf_ctlmetrics_worker(pod, in->gpus, in->default_pool, &w))
            continue;
        double tr = w.tflops_request, tl = w.tflops_limit, vr = w.vram_request, vl = w.vram_limit;
        const char *pool = w.pool, *qos = w.qos, *name = w.name;
        int count = w.gpu_count;
        double pt = 0, pv = 0, ratio = 1, cost = 0;
        if (tf_ctlmetrics_price(find_named(in->pools, pool), qos, &pt, &pv, &ratio))
            cost =
                (tr * pt + vr / GIB * pv + (tl - tr) * pt * ratio + (vl - vr) / GIB * pv * ratio) /
                3600.0 * count * in->elapsed_s;
        struct tf_lp_point *p = point(o, "tf_worker_resources", in->now_ms);
        if (!p)
            return;
        tf_lp_tag(p, "worker", name);
        tf_lp_tag(p, "workload", w.workload);
        tf_lp_tag(p, "pool", pool);
        tf_lp_tag(p, "namespace", w.ns);
        tf_lp_tag(p, "qos", qos);
        tf_lp_float(p, "tflops_request", tr);
        tf_lp_float(p, "tflops_limit", tl);
        tf_lp_float(p, "vram_bytes_request", vr);
        tf_lp_float(p, "vram_bytes_limit", vl);
        tf_lp_int(p, "gpu_count", count);
        tf_lp_float(p, "raw_cost", cost);
        tf_lp_bool(p, "ready", w.ready);
        const char *node = w.node;
        struct agg *na = node ? agg_get(nodes, node) : NULL;
        struct agg *pa = agg_get(pools, pool);
        if (na) {
            na->cost += cost;
            na->workers++;
        }
        if (pa) {
            pa->limit_t += tl * count;
            pa->limit_v += vl * count;
            pa->workers++;
        }
    }
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void alloc_fields(struct tf_lp_point *p, const struct agg *a)
{
    tf_lp_float(p, "allocated_tflops", a->alloc_t);
    tf_lp_float(p, "allocated_tflops_percent", a->cap_t > 0 ? 100.0 * a->alloc_t / a->cap_t : 0);
    tf_lp_float(p, "allocated_vram_bytes", a->alloc_v);
    tf_lp_float(p, "allocated_vram_percent", a->cap_v > 0 ? 100.0 * a->alloc_v / a->cap_v : 0);
    tf_lp_float(p, "allocated_tflops_percent_virtual",
                a->virt_t > 0 ? 100.0 * a->alloc_t / a->virt_t : 0);
    tf_lp_float(p, "allocated_vram_percent_virtual",
                a->virt_v > 0 ? 100.0 * a->alloc_v / a->virt_v : 0);
    tf_lp_int(p, "gpu_count", a->gpus);
}

int tf_ctlmetrics_build(const struct tf_ctlmetrics_in *in, struct tf_lp_point **out, size_t *n)
{
    struct out o = {0};
    struct aggs nodes = {.index = json_object_new_object()};
    struct aggs pools = {.index = json_object_new_object()};
    *out = NULL;
    *n = 0;
    int64_t ts = in->now_ms ? in->now_ms : wall_ms();
    struct tf_ctlmetrics_in x = *in;
    x.now_ms = ts;
    /* Nodes and pools from the GPU objects, so that a node without workers is reported. */
    for (size_t i = 0; i < json_object_array_length(in->gpus); i++) {
        json_object *g = json_object_array_get_idx(in->gpus, i);
        const char *node = gpu_node(g);
        double ct, cv, at, av;
        tf_ctlmetrics_gpu_capacity(g, &ct, &cv, &at, &av);
        if (!node || (!ct && !cv))
            continue; /* not reported by its hypervisor yet */
        const char *pool = lbl(g, TF_KEY_PREFIX "gpupool");
        if (!pool)
            pool = in->default_pool;
        json_object *pobj = find_named(in->pools, pool);
        struct agg *na = agg_get(&nodes, node), *pa = agg_get(&pools, pool);
        if (!na || !pa)
            goto fail;
        double vt = ct * pct_of(pobj, "tflopsOversellRatio", 500) / 100.0;
        double vv = cv * (100 + pct_of(pobj, "vramExpandToHostMem", 0)) / 100.0;
        struct agg *both[2] = {na, pa};
        for (int k = 0; k < 2; k++) {
            both[k]->cap_t += ct;
            both[k]->cap_v += cv;
            both[k]->alloc_t += ct > at ? ct - at : 0;
            both[k]->alloc_v += cv > av ? cv - av : 0;
            both[k]->virt_t += vt;
            both[k]->virt_v += vv;
            both[k]->gpus++;
        }
        if (!na->node) {
            na->node = node;
            na->pool = pool;
            pa->nodes++;
        }
    }
    worker_rows(&x, &o, &nodes, &pools);
    for (size_t i = 0; i < nodes.n; i++) {
        struct agg *a = &nodes.a[i];
        if (!a->node)
            continue; /* a pod's node without reported GPUs */
        json_object *gn = find_named(in->gpunodes, a->node);
        const char *phase = gn ? tf_json_str(gn, "status", "phase", NULL) : NULL;
        struct tf_lp_point *p = point(&o, "tf_node_metrics", ts);
        if (!p)
            goto fail;
        tf_lp_tag(p, "node", a->node);
        tf_lp_tag(p, "pool", a->pool);
        tf_lp_tag(p, "phase", phase ? phase : "Pending");
        alloc_fields(p, a);
        tf_lp_float(p, "raw_cost", a->cost);
    }
    for (size_t i = 0; i < json_object_array_length(in->pools); i++) {
        json_object *pobj = json_object_array_get_idx(in->pools, i);
        const char *name = tf_json_str(pobj, "metadata", "name", NULL);
        if (!name)
            continue;
        struct agg *a = agg_get(&pools, name);
        if (!a)
            goto fail;
        const char *phase = tf_json_str(pobj, "status", "phase", NULL);
        struct tf_lp_point *p = point(&o, "tf_pool_metrics", ts);
        if (!p)
            goto fail;
        tf_lp_tag(p, "pool", name);
        tf_lp_tag(p, "phase", phase ? phase : "Pending");
        alloc_fields(p, a);
        tf_lp_float(p, "limited_tflops", a->limit_t);
        tf_lp_float(p, "limited_vram_bytes", a->limit_v);
        tf_lp_float(p, "limited_tflops_percent_virtual",
                    a->virt_t > 0 ? 100.0 * a->limit_t / a->virt_t : 0);
        tf_lp_float(p, "limited_vram_percent_virtual",
                    a->virt_v > 0 ? 100.0 * a->limit_v / a->virt_v : 0);
        p = point(&o, "tf_system_metrics", ts);
        if (!p)
            goto fail;
        tf_lp_tag(p, "pool", name);
        tf_lp_int(p, "total_workers_cnt", a->workers);
        tf_lp_int(p, "total_nodes_cnt", a->nodes);
    }
    aggs_free(&nodes);
    aggs_free(&pools);
    *out = o.p;
    *n = o.n;
    return 0;
fail:
    aggs_free(&nodes);
    aggs_free(&pools);
    free(o.p);
    return TF_ENOMEM;
}

/* ---- the writer ---------------------------------------------------------------------------- */

struct tf_ctlmetrics {
    struct tf_metrics_sink *sink;
    int interval_ms;
    int64_t next_mono, last_wall;
};

struct tf_ctlmetrics *tf_ctlmetrics_new(const char *write_url, int interval_ms, char *err,
                                        size_t errlen)
{
    struct tf_ctlmetrics *m = calloc(1, sizeof(*m));
    if (!m) {
        tf_errf(err, errlen, "out of memory");
        return NULL;
    }
    m->interval_ms = interval_ms > 0 ? interval_ms : 60000;
    if (tf_metrics_sink_open_async(write_url, &m->sink, err, errlen)) {
        free(m);
        return NULL;
    }
    return m;
}

void tf_ctlmetrics_destroy(struct tf_ctlmetrics *m)
{
    if (!m)
        return;
    tf_metrics_sink_destroy(m->sink);
    free(m);
}

bool tf_ctlmetrics_due(const struct tf_ctlmetrics *m, int64_t now_mono_ms)
{
    return m && now_mono_ms >= m->next_mono;
}

void tf_ctlmetrics_tick(struct tf_ctlmetrics *m, struct tf_ctlmetrics_in *in, int64_t now_mono_ms)
{
    if (!tf_ctlmetrics_due(m, now_mono_ms))
        return;
    m->next_mono = now_mono_ms + m->interval_ms;
    int64_t now = wall_ms();
    in->now_ms = now;
    /* The first round of a leader accrues no cost: it does not know since when it would. */
    in->elapsed_s = m->last_wall ? (double)(now - m->last_wall) / 1000.0 : 0;
    m->last_wall = now;
    struct tf_lp_point *pts;
    size_t n;
    char err[256];
    if (tf_ctlmetrics_build(in, &pts, &n)) {
        tf_log(TF_LOG_WARN, "metrics", "controller metrics: out of memory");
        return;
    }
    if (tf_metrics_sink_write(m->sink, pts, n, err, sizeof(err)))
        tf_log(TF_LOG_WARN, "metrics", "controller metrics: %s", err);
    tf_metrics_sink_flush(m->sink, err, sizeof(err));
    free(pts);
}

void tf_ctlmetrics_stats(struct tf_ctlmetrics *m, struct tf_metrics_sink_stats *out)
{
    tf_metrics_sink_stats(m->sink, out);
}
