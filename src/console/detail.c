/* SPDX-License-Identifier: Apache-2.0
 *
 * The console's detail views (console.h): one GPU (utilisation and VRAM over time, overall
 * and per workload), one workload (request, limit and use over time, throttled launches, the
 * recommendation) and the events of the store's tf_events table. Series are laid on one time
 * grid (conint.h) with null where a bucket has no rows, so gaps show as gaps.
 */
#include "console/conint.h"

#include "common/strutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_object *find(json_object *inv, const char *list, const char *k1, const char *v1,
                         const char *k2, const char *v2)
{
    json_object *a;
    if (!json_object_object_get_ex(inv, list, &a) || !json_object_is_type(a, json_type_array))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(a); i++) {
        json_object *o = json_object_array_get_idx(a, i);
        if (!strcmp(tf__con_get_str(o, k1), v1) && (!k2 || !strcmp(tf__con_get_str(o, k2), v2)))
            return o;
    }
    return NULL;
}

static json_object *copy_or(json_object *o, json_object *fallback)
{
    json_object *c = NULL;
    if (!o || json_object_deep_copy(o, &c, NULL)) {
        json_object_put(c);
        return fallback;
    }
    json_object_put(fallback);
    return c;
}

static json_object *head(const struct tf_con_req *r, json_object *inv)
{
    json_object *out = json_object_new_object();
    json_object_object_add(out, "mode", json_object_new_string(tf__con_get_str(inv, "mode")));
    json_object_object_add(out, "rangeSeconds", json_object_new_int64(r->range_s));
    json_object_object_add(out, "stepSeconds", json_object_new_int64(r->step_s));
    json_object_object_add(out, "now", json_object_new_int64(tf__con_now_ms()));
    return out;
}

/* Fills COL[bucket of row k] from column C of Q for every row. */
static void fill(const struct tf__con_grid *g, const struct tf__con_rows *q, int ct, int c,
                 json_object *col, double scale)
{
    for (size_t k = 0; k < q->n; k++) {
        int64_t ms;
        double v;
        if (tf__con_ms(q, k, ct, &ms) && tf__con_num(q, k, c, &v))
            tf__con_grid_set(col, tf__con_grid_index(g, ms), v * scale);
    }
}

json_object *tf_con_gpu(const struct tf_con_req *r, json_object *inv, const struct tf_con_store *st,
                        int *status)
{
    json_object *warn = json_object_new_array();
    struct tf__con_rows q, w;
    long long S = (long long)r->step_s, R = (long long)r->range_s;
    tf__con_query(
        st, warn, "GPU usage (tf_gpu_usage)", &q,
        "SELECT " TF__CON_BIN " AS t, avg(compute_percentage) AS compute_pct, "
        "max(memory_bytes) AS vram_bytes FROM tf_gpu_usage WHERE uuid = '%s' AND " TF__CON_SINCE
        " GROUP BY " TF__CON_BIN " ORDER BY t",
        S, r->uuid, R, S);
    tf__con_query(st, warn, "workload usage (tf_worker_usage)", &w,
                  "SELECT " TF__CON_BIN " AS t, namespace, workload, avg(compute_percentage) AS "
                  "compute_pct, max(memory_bytes) AS vram_bytes FROM tf_worker_usage WHERE uuid "
                  "= '%s' AND " TF__CON_SINCE " GROUP BY " TF__CON_BIN
                  ", namespace, workload ORDER BY t",
                  S, r->uuid, R, S);
    json_object *gpu = find(inv, "gpus", "uuid", r->uuid, NULL, NULL);
    if (!gpu && q.n == 0 && w.n == 0) {
        tf__con_rows_free(&q);
        tf__con_rows_free(&w);
        json_object_put(warn);
        *status = 404;
        char msg[200];
        snprintf(msg, sizeof(msg), "no GPU %s here, and no metrics of it in the range", r->uuid);
        return tf__con_error(msg);
    }
    json_object *out = head(r, inv);
    json_object *g = json_object_new_object();
    json_object_object_add(g, "uuid", json_object_new_string(r->uuid));
    json_object_object_add(out, "gpu", copy_or(gpu, g));

    /* The workloads holding it now (the inventory's). */
    json_object *holders = json_object_new_array(), *wl;
    if (json_object_object_get_ex(inv, "workloads", &wl) &&
        json_object_is_type(wl, json_type_array))
        for (size_t i = 0; i < json_object_array_length(wl); i++) {
            json_object *o = json_object_array_get_idx(wl, i), *gl;
            if (!json_object_object_get_ex(o, "gpus", &gl) ||
                !json_object_is_type(gl, json_type_array))
                continue;
            for (size_t k = 0; k < json_object_array_length(gl); k++) {
                const char *u = json_object_get_string(json_object_array_get_idx(gl, k));
                if (u && !strcmp(u, r->uuid)) {
                    json_object_array_add(holders, copy_or(o, json_object_new_object()));
                    break;
                }
            }
        }
    json_object_object_add(out, "workloads", holders);

    struct tf__con_grid grid;
    tf__con_grid_init(&grid, r, tf__con_now_ms() / 1000);
    json_object *series = json_object_new_object();
    json_object_object_add(series, "t", tf__con_grid_times(&grid));
    json_object *cp = tf__con_grid_column(&grid), *vb = tf__con_grid_column(&grid);
    int ct = tf__con_col(&q, "t");
    fill(&grid, &q, ct, tf__con_col(&q, "compute_pct"), cp, 1);
    fill(&grid, &q, ct, tf__con_col(&q, "vram_bytes"), vb, 1);
    json_object_object_add(series, "computePercent", cp);
    json_object_object_add(series, "vramBytes", vb);
    json_object_object_add(out, "series", series);

    /* One series pair per workload that used the GPU in the range. */
    json_object *per = json_object_new_array();
    int wt = tf__con_col(&w, "t"), wn = tf__con_col(&w, "namespace"),
        ww = tf__con_col(&w, "workload"), wc = tf__con_col(&w, "compute_pct"),
        wv = tf__con_col(&w, "vram_bytes");
    for (size_t k = 0; k < w.n; k++) {
        const char *ns = tf__con_str(&w, k, wn), *name = tf__con_str(&w, k, ww);
        json_object *e = NULL;
        for (size_t i = 0; i < json_object_array_length(per) && !e; i++) {
            json_object *o = json_object_array_get_idx(per, i);
            if (!strcmp(tf__con_get_str(o, "namespace"), ns) &&
                !strcmp(tf__con_get_str(o, "name"), name))
                e = o;
        }
        if (!e) {
            if (json_object_array_length(per) >= 64)
                continue;
            e = json_object_new_object();
            json_object_object_add(e, "namespace", json_object_new_string(ns));
            json_object_object_add(e, "name", json_object_new_string(name));
            json_object_object_add(e, "computePercent", tf__con_grid_column(&grid));
            json_object_object_add(e, "vramBytes", tf__con_grid_column(&grid));
            json_object_array_add(per, e);
        }
        int64_t ms;
        double v;
        if (!tf__con_ms(&w, k, wt, &ms))
            continue;
        int idx = tf__con_grid_index(&grid, ms);
        if (tf__con_num(&w, k, wc, &v))
            tf__con_grid_set(json_object_object_get(e, "computePercent"), idx, v);
        if (tf__con_num(&w, k, wv, &v))
            tf__con_grid_set(json_object_object_get(e, "vramBytes"), idx, v);
    }
    json_object_object_add(out, "workloadSeries", per);
    json_object_object_add(out, "warnings", warn);
    tf__con_rows_free(&q);
    tf__con_rows_free(&w);
    *status = 200;
    return out;
}

/* Throttled launches per bucket: each (worker, GPU) counter's growth since its previous
 * bucket (its minimum in its first bucket; a counter that went back restarted from 0). */
static void throttling(const struct tf__con_grid *g, const struct tf__con_rows *q, json_object *col)
{
    struct prev {
        char key[200];
        double hi;
    } *prev = calloc(256, sizeof(*prev));
    size_t np = 0;
    int ct = tf__con_col(q, "t"), cw = tf__con_col(q, "worker"), cu = tf__con_col(q, "uuid"),
        cl = tf__con_col(q, "lo"), ch = tf__con_col(q, "hi");
    double *sum = calloc((size_t)g->n, sizeof(*sum));
    bool *set = calloc((size_t)g->n, sizeof(*set));
    for (size_t k = 0; prev && sum && set && k < q->n; k++) {
        char key[200];
        snprintf(key, sizeof(key), "%s|%s", tf__con_str(q, k, cw), tf__con_str(q, k, cu));
        int64_t ms;
        double lo, hi;
        if (!tf__con_ms(q, k, ct, &ms) || !tf__con_num(q, k, cl, &lo) ||
            !tf__con_num(q, k, ch, &hi))
            continue;
        size_t i = 0;
        while (i < np && strcmp(prev[i].key, key))
            i++;
        double base = lo;
        if (i < np) {
            base = hi >= prev[i].hi ? prev[i].hi : 0;
        } else if (np < 256) {
            np++;
            tf_strlcpy(prev[i].key, key, sizeof(prev[i].key));
        } else {
            continue;
        }
        prev[i].hi = hi;
        int idx = tf__con_grid_index(g, ms);
        if (idx >= 0) {
            sum[idx] += hi - base;
            set[idx] = true;
        }
    }
    for (int i = 0; sum && set && i < g->n; i++)
        if (set[i])
            tf__con_grid_set(col, i, sum[i]);
    free(prev);
    free(sum);
    free(set);
}

json_object *tf_con_workload(const struct tf_con_req *r, json_object *inv,
                             const struct tf_con_store *st, int *status)
{
    json_object *warn = json_object_new_array();
    struct tf__con_rows res, use, thr;
    long long S = (long long)r->step_s, R = (long long)r->range_s;
    tf__con_query(
        st, warn, "requests and limits (tf_worker_resources)", &res,
        "SELECT " TF__CON_BIN " AS t, avg(tflops_request) AS tflops_request, "
        "avg(tflops_limit) AS tflops_limit, avg(vram_bytes_request) AS vram_request, "
        "avg(vram_bytes_limit) AS vram_limit, avg(gpu_count) AS gpu_count FROM "
        "tf_worker_resources WHERE namespace = '%s' AND workload = '%s' AND " TF__CON_SINCE
        " GROUP BY " TF__CON_BIN " ORDER BY t",
        S, r->ns, r->name, R, S);
    tf__con_query(st, warn, "usage (tf_worker_usage)", &use,
                  "SELECT " TF__CON_BIN " AS t, avg(compute_tflops) AS tflops, max(compute_tflops) "
                  "AS tflops_peak, max(memory_bytes) AS vram_bytes, avg(compute_percentage) AS "
                  "compute_pct FROM tf_worker_usage WHERE namespace = '%s' AND workload = '%s' "
                  "AND " TF__CON_SINCE " GROUP BY " TF__CON_BIN " ORDER BY t",
                  S, r->ns, r->name, R, S);
    tf__con_query(st, NULL, "throttling", &thr,
                  "SELECT " TF__CON_BIN " AS t, worker, uuid, min(compute_throttled_cnt) AS lo, "
                  "max(compute_throttled_cnt) AS hi FROM tf_worker_usage WHERE namespace = '%s' "
                  "AND workload = '%s' AND " TF__CON_SINCE " GROUP BY " TF__CON_BIN
                  ", worker, uuid ORDER BY t",
                  S, r->ns, r->name, R, S);
    json_object *w = find(inv, "workloads", "namespace", r->ns, "name", r->name);
    if (!w && res.n == 0 && use.n == 0) {
        tf__con_rows_free(&res);
        tf__con_rows_free(&use);
        tf__con_rows_free(&thr);
        json_object_put(warn);
        *status = 404;
        char msg[400];
        snprintf(msg, sizeof(msg), "no workload %s/%s here, and no metrics of it in the range",
                 r->ns, r->name);
        return tf__con_error(msg);
    }
    json_object *out = head(r, inv);
    json_object *base = json_object_new_object();
    json_object_object_add(base, "namespace", json_object_new_string(r->ns));
    json_object_object_add(base, "name", json_object_new_string(r->name));
    json_object *wc = copy_or(w, base);
    json_object_object_add(wc, "active", json_object_new_boolean(w != NULL));
    json_object_object_add(out, "workload", wc);

    struct tf__con_grid grid;
    tf__con_grid_init(&grid, r, tf__con_now_ms() / 1000);
    json_object *s = json_object_new_object();
    json_object_object_add(s, "t", tf__con_grid_times(&grid));
    static const struct {
        const char *out, *col;
        int which; /* 0 resources, 1 usage */
        bool per_gpu;
    } cols[] = {
        {"tflopsRequest", "tflops_request", 0, true},
        {"tflopsLimit", "tflops_limit", 0, true},
        {"vramRequestBytes", "vram_request", 0, true},
        {"vramLimitBytes", "vram_limit", 0, true},
        {"tflopsUsed", "tflops", 1, false},
        {"tflopsPeak", "tflops_peak", 1, false},
        {"vramUsedBytes", "vram_bytes", 1, false},
        {"computePercent", "compute_pct", 1, false},
    };
    int rt = tf__con_col(&res, "t"), rg = tf__con_col(&res, "gpu_count"),
        ut = tf__con_col(&use, "t");
    for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++) {
        json_object *col = tf__con_grid_column(&grid);
        if (cols[i].which == 1) {
            fill(&grid, &use, ut, tf__con_col(&use, cols[i].col), col, 1);
        } else {
            int c = tf__con_col(&res, cols[i].col);
            for (size_t k = 0; k < res.n; k++) {
                int64_t ms;
                double v, g = 1;
                if (!tf__con_ms(&res, k, rt, &ms) || !tf__con_num(&res, k, c, &v))
                    continue;
                if (!st->resources_summed || !tf__con_num(&res, k, rg, &g) || g < 1)
                    g = 1;
                tf__con_grid_set(col, tf__con_grid_index(&grid, ms), v / g);
            }
        }
        json_object_object_add(s, cols[i].out, col);
    }
    json_object *tc = tf__con_grid_column(&grid);
    throttling(&grid, &thr, tc);
    json_object_object_add(s, "throttled", tc);
    json_object_object_add(out, "series", s);
    json_object_object_add(out, "warnings", warn);
    tf__con_rows_free(&res);
    tf__con_rows_free(&use);
    tf__con_rows_free(&thr);
    *status = 200;
    return out;
}

json_object *tf_con_store_events(const struct tf_con_req *r, const struct tf_con_store *st)
{
    json_object *warn = json_object_new_array(), *mine = json_object_new_array();
    struct tf__con_rows q;
    tf__con_query(st, mine, "events (tf_events)", &q,
                  "SELECT * FROM tf_events WHERE " TF__CON_SINCE
                  " ORDER BY greptime_timestamp DESC LIMIT 500",
                  (long long)r->range_s);
    /* No table yet means no events yet, not a problem worth a warning. */
    for (size_t i = 0; i < json_object_array_length(mine); i++) {
        const char *m = json_object_get_string(json_object_array_get_idx(mine, i));
        if (!strstr(m, "no such table") && !strstr(m, "not found"))
            json_object_array_add(warn, json_object_new_string(m));
    }
    json_object_put(mine);
    json_object *ev = json_object_new_array();
    static const char *const keys[][2] = {
        {"event_type", "type"},     {"reason", "reason"},   {"object_kind", "kind"},
        {"namespace", "namespace"}, {"object", "object"},   {"pool", "pool"},
        {"node", "node"},           {"message", "message"},
    };
    /* Every column by name: a tag never written has no column (GreptimeDB adds columns as
     * writers first use them). */
    int ct = tf__con_col(&q, "greptime_timestamp");
    for (size_t k = 0; k < q.n; k++) {
        json_object *e = json_object_new_object();
        int64_t ms;
        json_object_object_add(e, "time",
                               tf__con_ms(&q, k, ct, &ms) ? json_object_new_int64(ms) : NULL);
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
            json_object_object_add(
                e, keys[i][1],
                json_object_new_string(tf__con_str(&q, k, tf__con_col(&q, keys[i][0]))));
        json_object_array_add(ev, e);
    }
    tf__con_rows_free(&q);
    json_object *out = json_object_new_object();
    json_object_object_add(out, "rangeSeconds", json_object_new_int64(r->range_s));
    json_object_object_add(out, "source", json_object_new_string("metrics store (tf_events)"));
    json_object_object_add(out, "events", ev);
    json_object_object_add(out, "warnings", warn);
    return out;
}
