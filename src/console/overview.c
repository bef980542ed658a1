/* SPDX-License-Identifier: Apache-2.0
 *
 * The overview (console.h tf_con_overview): seed 002 step 1 at a glance. Per GPU, node and
 * pool: capacity, what is allocated now, what was used over the range (average TFLOPS, peak
 * VRAM); per workload: its request and limit, its use, and the part of its request it did not
 * use (the "requested but unused" waste the seed's first paragraph names). Workloads that ran
 * within the range but are gone now are listed too (active: false), from the metrics alone.
 */
#include "console/conint.h"

#include "common/dynbuf.h"
#include "common/strutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Defrag's default utilizationThresholdPercent: nodes allocated below it are what
 * compaction and defragmentation exist for (seed 002 step 5). */
#define UNDER_ALLOCATED_PCT 40.0

struct agg {
    char name[128], pool[128], phase[32];
    int gpus;
    double cap_t, alloc_t, used_t, cap_v, alloc_v, used_v;
    bool used;             /* some GPU had usage rows */
    double seed_t, seed_v; /* average allocated % over the range (tf_node_metrics) */
    bool seed;
};

struct aggs {
    struct agg *a;
    size_t n, cap;
};

static struct agg *agg_get(struct aggs *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->a[i].name, name))
            return &s->a[i];
    struct agg *p = tf_grow(s->a, &s->cap, s->n + 1, sizeof(*p), 16);
    if (!p)
        return NULL;
    s->a = p;
    struct agg *g = &s->a[s->n++];
    memset(g, 0, sizeof(*g));
    tf_strlcpy(g->name, name, sizeof(g->name));
    return g;
}

static json_object *copy(json_object *o)
{
    json_object *c = NULL;
    if (json_object_deep_copy(o, &c, NULL))
        return json_object_new_object();
    return c;
}

static json_object *arr_of(json_object *inv, const char *key)
{
    json_object *a;
    return json_object_object_get_ex(inv, key, &a) && json_object_is_type(a, json_type_array)
               ? a
               : NULL;
}

static double pct(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : NAN;
}

static json_object *resource(double cap, double alloc, double used, bool have_used, double seed,
                             bool have_seed)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "capacity", tf__con_dbl(cap));
    json_object_object_add(o, "allocated", tf__con_dbl(alloc));
    json_object_object_add(o, "allocatedPercent", tf__con_dbl(pct(alloc, cap)));
    json_object_object_add(o, "used", have_used ? tf__con_dbl(used) : NULL);
    json_object_object_add(o, "usedPercent", have_used ? tf__con_dbl(pct(used, cap)) : NULL);
    if (have_seed)
        json_object_object_add(o, "allocatedPercentAvg", tf__con_dbl(seed));
    return o;
}

static json_object *agg_json(const struct agg *g, const char *kind)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(g->name));
    if (!strcmp(kind, "node"))
        json_object_object_add(o, "pool", json_object_new_string(g->pool));
    if (g->phase[0])
        json_object_object_add(o, "phase", json_object_new_string(g->phase));
    json_object_object_add(o, "gpus", json_object_new_int(g->gpus));
    json_object_object_add(o, "tflops",
                           resource(g->cap_t, g->alloc_t, g->used_t, g->used, g->seed_t, g->seed));
    json_object_object_add(o, "vram",
                           resource(g->cap_v, g->alloc_v, g->used_v, g->used, g->seed_v, g->seed));
    return o;
}

/* Per GPU: its use over the range. */
static void gpu_usage(const struct tf_con_req *r, const struct tf_con_store *st, json_object *warn,
                      json_object *gpus)
{
    struct tf__con_rows q;
    tf__con_query(st, warn, "GPU usage (tf_gpu_usage)", &q,
                  "SELECT uuid, avg(compute_percentage) AS compute_avg, max(compute_percentage) "
                  "AS compute_peak, avg(compute_tflops) AS tflops_avg, max(memory_bytes) AS "
                  "vram_peak, count(*) AS samples FROM tf_gpu_usage WHERE " TF__CON_SINCE
                  " GROUP BY uuid",
                  (long long)r->range_s);
    int cu = tf__con_col(&q, "uuid"), ca = tf__con_col(&q, "compute_avg"),
        cp = tf__con_col(&q, "compute_peak"), ct = tf__con_col(&q, "tflops_avg"),
        cv = tf__con_col(&q, "vram_peak"), cs = tf__con_col(&q, "samples");
    size_t n = json_object_array_length(gpus);
    for (size_t i = 0; i < n; i++) {
        json_object *g = json_object_array_get_idx(gpus, i);
        const char *uuid = tf__con_get_str(g, "uuid");
        json_object *u = NULL;
        for (size_t k = 0; k < q.n; k++) {
            if (strcmp(tf__con_str(&q, k, cu), uuid))
                continue;
            double v;
            u = json_object_new_object();
            json_object_object_add(u, "computeAvgPercent",
                                   tf__con_num(&q, k, ca, &v) ? tf__con_dbl(v) : NULL);
            json_object_object_add(u, "computePeakPercent",
                                   tf__con_num(&q, k, cp, &v) ? tf__con_dbl(v) : NULL);
            json_object_object_add(u, "tflopsAvg",
                                   tf__con_num(&q, k, ct, &v) ? tf__con_dbl(v) : NULL);
            json_object_object_add(u, "vramPeakBytes",
                                   tf__con_num(&q, k, cv, &v) ? tf__con_dbl(v) : NULL);
            double cap = tf__con_get_num(g, "vramBytes");
            json_object_object_add(
                u, "vramPeakPercent",
                tf__con_num(&q, k, cv, &v) && cap > 0 ? tf__con_dbl(100.0 * v / cap) : NULL);
            json_object_object_add(
                u, "samples", json_object_new_int64(tf__con_num(&q, k, cs, &v) ? (int64_t)v : 0));
            break;
        }
        json_object_object_add(g, "usage", u);
        json_object_object_add(g, "workloads", json_object_new_array());
    }
    tf__con_rows_free(&q);
}

static json_object *find_workload(json_object *wls, const char *ns, const char *name)
{
    size_t n = json_object_array_length(wls);
    for (size_t i = 0; i < n; i++) {
        json_object *w = json_object_array_get_idx(wls, i);
        if (!strcmp(tf__con_get_str(w, "namespace"), ns) &&
            !strcmp(tf__con_get_str(w, "name"), name))
            return w;
    }
    return NULL;
}

/* Adds a workload that only the metrics know (it ran within the range, and is gone). */
static json_object *past_workload(json_object *wls, const char *ns, const char *name,
                                  const char *pool)
{
    json_object *w = json_object_new_object();
    json_object_object_add(w, "name", json_object_new_string(name));
    json_object_object_add(w, "namespace", json_object_new_string(ns));
    json_object_object_add(w, "pool", json_object_new_string(pool));
    json_object_object_add(w, "active", json_object_new_boolean(false));
    json_object_object_add(w, "gpus", json_object_new_array());
    json_object_array_add(wls, w);
    return w;
}

/* Per workload: usage (tf_worker_usage over its workers and GPUs), throttling, the average
 * request over the range (tf_worker_resources), and what of the request went unused. */
static void workload_usage(const struct tf_con_req *r, const struct tf_con_store *st,
                           json_object *warn, json_object *wls, double *unused_t, double *unused_v)
{
    struct tf__con_rows u, t, q;
    long long R = (long long)r->range_s;
    tf__con_query(st, warn, "workload usage (tf_worker_usage)", &u,
                  "SELECT namespace, workload, pool, sum(compute_tflops) AS tflops_sum, "
                  "max(compute_tflops) AS tflops_peak, max(memory_bytes) AS vram_peak, "
                  "avg(compute_percentage) AS compute_avg, count(*) AS samples FROM "
                  "tf_worker_usage WHERE " TF__CON_SINCE " GROUP BY namespace, workload, pool",
                  R);
    /* A store whose writers never counted throttling has no such column: no warning. */
    tf__con_query(
        st, NULL, "throttling", &t,
        "SELECT namespace, workload, worker, uuid, max(compute_throttled_cnt) - "
        "min(compute_throttled_cnt) AS throttled FROM tf_worker_usage WHERE " TF__CON_SINCE
        " GROUP BY namespace, workload, worker, uuid",
        R);
    tf__con_query(st, warn, "workload requests (tf_worker_resources)", &q,
                  "SELECT namespace, workload, pool, avg(tflops_request) AS tflops_request, "
                  "avg(vram_bytes_request) AS vram_request, avg(gpu_count) AS gpu_count FROM "
                  "tf_worker_resources WHERE " TF__CON_SINCE " GROUP BY namespace, workload, pool",
                  R);
    size_t ninv = json_object_array_length(wls);
    for (size_t i = 0; i < ninv; i++)
        json_object_object_add(json_object_array_get_idx(wls, i), "active",
                               json_object_new_boolean(true));
    /* Rows of workloads the inventory no longer has. */
    struct tf__con_rows *both[2] = {&u, &q};
    for (int b = 0; b < 2; b++) {
        int cn = tf__con_col(both[b], "namespace"), cw = tf__con_col(both[b], "workload"),
            cp = tf__con_col(both[b], "pool");
        for (size_t k = 0; k < both[b]->n; k++) {
            const char *ns = tf__con_str(both[b], k, cn), *name = tf__con_str(both[b], k, cw);
            if (*name && !find_workload(wls, ns, name))
                past_workload(wls, ns, name, tf__con_str(both[b], k, cp));
        }
    }
    int un = tf__con_col(&u, "namespace"), uw = tf__con_col(&u, "workload"),
        us = tf__con_col(&u, "tflops_sum"), up = tf__con_col(&u, "tflops_peak"),
        uv = tf__con_col(&u, "vram_peak"), uc = tf__con_col(&u, "compute_avg"),
        un2 = tf__con_col(&u, "samples");
    int tn = tf__con_col(&t, "namespace"), tw = tf__con_col(&t, "workload"),
        tt = tf__con_col(&t, "throttled");
    int qn = tf__con_col(&q, "namespace"), qw = tf__con_col(&q, "workload"),
        qt = tf__con_col(&q, "tflops_request"), qv = tf__con_col(&q, "vram_request"),
        qg = tf__con_col(&q, "gpu_count");
    size_t n = json_object_array_length(wls);
    for (size_t i = 0; i < n; i++) {
        json_object *w = json_object_array_get_idx(wls, i);
        const char *ns = tf__con_get_str(w, "namespace"), *name = tf__con_get_str(w, "name");
        double sum = 0, peak = NAN, vpeak = NAN, cavg = 0, samples = 0, thr = 0, v;
        bool have_thr = false;
        for (size_t k = 0; k < u.n; k++) {
            if (strcmp(tf__con_str(&u, k, un), ns) || strcmp(tf__con_str(&u, k, uw), name))
                continue;
            double s = 0;
            tf__con_num(&u, k, un2, &s);
            if (tf__con_num(&u, k, us, &v))
                sum += v;
            if (tf__con_num(&u, k, up, &v) && !(v <= peak))
                peak = v;
            if (tf__con_num(&u, k, uv, &v) && !(v <= vpeak))
                vpeak = v;
            if (tf__con_num(&u, k, uc, &v))
                cavg += v * s;
            samples += s;
        }
        for (size_t k = 0; k < t.n; k++) {
            if (!strcmp(tf__con_str(&t, k, tn), ns) && !strcmp(tf__con_str(&t, k, tw), name) &&
                tf__con_num(&t, k, tt, &v)) {
                thr += v;
                have_thr = true;
            }
        }
        json_object *usage = NULL;
        double avg = NAN;
        if (samples > 0) {
            avg = sum / samples;
            usage = json_object_new_object();
            json_object_object_add(usage, "tflopsAvg", tf__con_dbl(avg));
            json_object_object_add(usage, "tflopsPeak", tf__con_dbl(peak));
            json_object_object_add(usage, "vramPeakBytes", tf__con_dbl(vpeak));
            json_object_object_add(usage, "computeAvgPercent", tf__con_dbl(cavg / samples));
            json_object_object_add(usage, "samples", json_object_new_int64((int64_t)samples));
            if (have_thr)
                json_object_object_add(usage, "throttled", json_object_new_int64((int64_t)thr));
        }
        json_object_object_add(w, "usage", usage);
        /* The request over the range (per GPU), else the one in force now. */
        double req_t = tf__con_get_num(w, "tflopsRequest"),
               req_v = tf__con_get_num(w, "vramRequestBytes");
        for (size_t k = 0; k < q.n; k++) {
            if (strcmp(tf__con_str(&q, k, qn), ns) || strcmp(tf__con_str(&q, k, qw), name))
                continue;
            double g = 1, rt, rv;
            if (!st->resources_summed || !tf__con_num(&q, k, qg, &g) || g < 1)
                g = 1;
            json_object *ra = json_object_new_object();
            if (tf__con_num(&q, k, qt, &rt)) {
                req_t = rt / g;
                json_object_object_add(ra, "tflops", tf__con_dbl(req_t));
            }
            if (tf__con_num(&q, k, qv, &rv)) {
                req_v = rv / g;
                json_object_object_add(ra, "vramBytes", tf__con_dbl(req_v));
            }
            json_object_object_add(w, "requestAvg", ra);
            break;
        }
        json_object *gl = NULL;
        size_t ngpu = json_object_object_get_ex(w, "gpus", &gl) ? json_object_array_length(gl) : 0;
        if (ngpu == 0)
            ngpu = 1;
        if (usage) {
            double wt = req_t > avg ? (req_t - avg) * (double)ngpu : 0;
            double wv = isfinite(vpeak) && req_v > vpeak ? (req_v - vpeak) * (double)ngpu : 0;
            json_object *waste = json_object_new_object();
            json_object_object_add(waste, "tflops", tf__con_dbl(wt));
            json_object_object_add(waste, "vramBytes", tf__con_dbl(wv));
            json_object_object_add(w, "unused", waste);
            *unused_t += wt;
            *unused_v += wv;
        }
    }
    tf__con_rows_free(&u);
    tf__con_rows_free(&t);
    tf__con_rows_free(&q);
}

/* Lists each active workload's name under the GPUs it holds. */
static void gpu_workloads(json_object *gpus, json_object *wls)
{
    size_t nw = json_object_array_length(wls), ng = json_object_array_length(gpus);
    for (size_t i = 0; i < nw; i++) {
        json_object *w = json_object_array_get_idx(wls, i), *gl;
        if (!json_object_object_get_ex(w, "gpus", &gl))
            continue;
        for (size_t k = 0; k < json_object_array_length(gl); k++) {
            const char *uuid = json_object_get_string(json_object_array_get_idx(gl, k));
            for (size_t j = 0; uuid && j < ng; j++) {
                json_object *g = json_object_array_get_idx(gpus, j), *list;
                if (strcmp(tf__con_get_str(g, "uuid"), uuid) ||
                    !json_object_object_get_ex(g, "workloads", &list))
                    continue;
                json_object *e = json_object_new_object();
                json_object_object_add(e, "namespace",
                                       json_object_new_string(tf__con_get_str(w, "namespace")));
                json_object_object_add(e, "name",
                                       json_object_new_string(tf__con_get_str(w, "name")));
                json_object_array_add(list, e);
            }
        }
    }
}

/* Folds GPU G into its node's (or pool's) aggregate. */
static void fold(struct aggs *s, json_object *g, const char *key)
{
    struct agg *a = agg_get(s, tf__con_get_str(g, key));
    if (!a)
        return;
    tf_strlcpy(a->pool, tf__con_get_str(g, "pool"), sizeof(a->pool));
    a->gpus++;
    a->cap_t += tf__con_get_num(g, "tflops");
    a->alloc_t += tf__con_get_num(g, "allocatedTflops");
    a->cap_v += tf__con_get_num(g, "vramBytes");
    a->alloc_v += tf__con_get_num(g, "allocatedVramBytes");
    json_object *u;
    if (json_object_object_get_ex(g, "usage", &u) && u) {
        a->used = true;
        a->used_t += tf__con_get_num(u, "tflopsAvg");
        a->used_v += tf__con_get_num(u, "vramPeakBytes");
    }
}

/* Seed 002's first query: each node's average allocated share over the range. */
static void node_allocation(const struct tf_con_req *r, const struct tf_con_store *st,
                            json_object *warn, struct aggs *nodes)
{
    struct tf__con_rows q;
    tf__con_query(st, warn, "node allocation (tf_node_metrics)", &q,
                  "SELECT node, pool, avg(allocated_tflops_percent) AS tflops_allocated_pct, "
                  "avg(allocated_vram_percent) AS vram_allocated_pct FROM tf_node_metrics "
                  "WHERE " TF__CON_SINCE " GROUP BY node, pool",
                  (long long)r->range_s);
    int cn = tf__con_col(&q, "node"), ct = tf__con_col(&q, "tflops_allocated_pct"),
        cv = tf__con_col(&q, "vram_allocated_pct");
    for (size_t k = 0; k < q.n; k++) {
        for (size_t i = 0; i < nodes->n; i++) {
            struct agg *a = &nodes->a[i];
            if (strcmp(a->name, tf__con_str(&q, k, cn)))
                continue;
            a->seed = tf__con_num(&q, k, ct, &a->seed_t) && tf__con_num(&q, k, cv, &a->seed_v);
        }
    }
    tf__con_rows_free(&q);
}

/* Pre-seeds aggregates from the inventory's own node or pool list (phases, empty ones). */
static void seed_list(struct aggs *s, json_object *inv, const char *key)
{
    json_object *a = arr_of(inv, key);
    for (size_t i = 0; a && i < json_object_array_length(a); i++) {
        json_object *o = json_object_array_get_idx(a, i);
        const char *name = tf__con_get_str(o, "name");
        struct agg *g = *name ? agg_get(s, name) : NULL;
        if (!g)
            continue;
        tf_strlcpy(g->pool, tf__con_get_str(o, "pool"), sizeof(g->pool));
        tf_strlcpy(g->phase, tf__con_get_str(o, "phase"), sizeof(g->phase));
    }
}

json_object *tf_con_overview(const struct tf_con_req *r, json_object *inv,
                             const struct tf_con_store *st)
{
    json_object *out = json_object_new_object();
    json_object *warn = json_object_new_array();
    json_object_object_add(out, "mode", json_object_new_string(tf__con_get_str(inv, "mode")));
    json_object_object_add(out, "rangeSeconds", json_object_new_int64(r->range_s));
    json_object_object_add(out, "now", json_object_new_int64(tf__con_now_ms()));
    if (!st->query)
        json_object_array_add(
            warn, json_object_new_string(st->why_none ? st->why_none : "no metrics store"));
    json_object *gin = arr_of(inv, "gpus"), *win = arr_of(inv, "workloads");
    json_object *gpus = gin ? copy(gin) : json_object_new_array();
    json_object *wls = win ? copy(win) : json_object_new_array();
    gpu_usage(r, st, warn, gpus);
    double unused_t = 0, unused_v = 0;
    workload_usage(r, st, warn, wls, &unused_t, &unused_v);
    gpu_workloads(gpus, wls);

    struct aggs nodes = {0}, pools = {0}, all = {0};
    seed_list(&nodes, inv, "nodes");
    seed_list(&pools, inv, "pools");
    for (size_t i = 0; i < json_object_array_length(gpus); i++) {
        json_object *g = json_object_array_get_idx(gpus, i);
        fold(&nodes, g, "node");
        fold(&pools, g, "pool");
        fold(&all, g, "mode"); /* one aggregate: the key is absent from every GPU */
    }
    node_allocation(r, st, warn, &nodes);
    json_object *na = json_object_new_array(), *pa = json_object_new_array();
    int empty = 0, under = 0;
    for (size_t i = 0; i < nodes.n; i++) {
        json_object_array_add(na, agg_json(&nodes.a[i], "node"));
        double p = pct(nodes.a[i].alloc_t, nodes.a[i].cap_t);
        if (nodes.a[i].alloc_t <= 0 && nodes.a[i].alloc_v <= 0)
            empty++;
        else if (p < UNDER_ALLOCATED_PCT)
            under++;
    }
    for (size_t i = 0; i < pools.n; i++)
        json_object_array_add(pa, agg_json(&pools.a[i], "pool"));

    json_object *tot = json_object_new_object();
    struct agg z = {0}, *a = all.n ? &all.a[0] : &z;
    int active = 0;
    for (size_t i = 0; i < json_object_array_length(wls); i++) {
        json_object *v;
        if (json_object_object_get_ex(json_object_array_get_idx(wls, i), "active", &v) &&
            json_object_get_boolean(v))
            active++;
    }
    json_object_object_add(tot, "pools", json_object_new_int((int)pools.n));
    json_object_object_add(tot, "nodes", json_object_new_int((int)nodes.n));
    json_object_object_add(tot, "gpus", json_object_new_int(a->gpus));
    json_object_object_add(tot, "workloads", json_object_new_int(active));
    json_object *tt = resource(a->cap_t, a->alloc_t, a->used_t, a->used, 0, false);
    json_object_object_add(tt, "requestedUnused", tf__con_dbl(unused_t));
    json_object *tv = resource(a->cap_v, a->alloc_v, a->used_v, a->used, 0, false);
    json_object_object_add(tv, "requestedUnused", tf__con_dbl(unused_v));
    json_object_object_add(tot, "tflops", tt);
    json_object_object_add(tot, "vram", tv);
    json_object_object_add(tot, "nodesEmpty", json_object_new_int(empty));
    json_object_object_add(tot, "nodesUnderAllocated", json_object_new_int(under));
    json_object_object_add(tot, "underAllocatedPercent", tf__con_dbl(UNDER_ALLOCATED_PCT));
    free(nodes.a);
    free(pools.a);
    free(all.a);

    json_object_object_add(out, "totals", tot);
    json_object_object_add(out, "pools", pa);
    json_object_object_add(out, "nodes", na);
    json_object_object_add(out, "gpus", gpus);
    json_object_object_add(out, "workloads", wls);
    json_object_object_add(out, "warnings", warn);
    return out;
}
