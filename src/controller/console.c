/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-controller's web console (console.h): the cluster's inventory from the informer caches,
 * GreptimeDB as the console's store, Alertmanager's alerts, the controller's Events, the
 * token Secret, and the routes.
 */
#include "controller/console.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "console/console.h"
#include "controller/ctlmetrics.h"
#include "controller/greptime.h"
#include "controller/k8s/secret.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define ALERTS_BODY_MAX (4u << 20)
#define MAX_EVENTS 500

struct tf_ctl_console {
    struct tf_ctl_console_opts o; /* strings below are copies */
    char *ns, *default_pool, *metrics_url, *metrics_db, *alertmanager_url;
    pthread_mutex_t mu;
    char token[160]; /* [mu] "" until read from the Secret */
};

static char *dup_or_null(const char *s)
{
    return s && *s ? strdup(s) : NULL;
}

struct tf_ctl_console *tf_ctl_console_new(const struct tf_ctl_console_opts *o)
{
    struct tf_ctl_console *con = calloc(1, sizeof(*con));
    if (!con)
        return NULL;
    con->o = *o;
    con->ns = dup_or_null(o->namespace);
    con->default_pool = dup_or_null(o->default_pool);
    con->metrics_url = dup_or_null(o->metrics_url);
    con->metrics_db = dup_or_null(o->metrics_db);
    con->alertmanager_url = dup_or_null(o->alertmanager_url);
    pthread_mutex_init(&con->mu, NULL);
    return con;
}

void tf_ctl_console_destroy(struct tf_ctl_console *con)
{
    if (!con)
        return;
    memset(con->token, 0, sizeof(con->token));
    free(con->ns);
    free(con->default_pool);
    free(con->metrics_url);
    free(con->metrics_db);
    free(con->alertmanager_url);
    pthread_mutex_destroy(&con->mu);
    free(con);
}

/* ---- inventory ----------------------------------------------------------------------------- */

static json_object *str_or_empty(const char *s)
{
    return json_object_new_string(s ? s : "");
}

static size_t len_of(json_object *a)
{
    return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

/* The GPU object an id of a pod's gpu-ids names (its uuid or object name), or NULL. */
static json_object *gpu_by_id(json_object *gpus, const char *id, size_t n)
{
    for (size_t i = 0; i < len_of(gpus); i++) {
        json_object *g = json_object_array_get_idx(gpus, i);
        const char *u = tf_json_str(g, "status", "uuid", NULL);
        const char *name = tf_json_str(g, "metadata", "name", NULL);
        if ((u && strlen(u) == n && !strncasecmp(u, id, n)) ||
            (name && strlen(name) == n && !strncasecmp(name, id, n)))
            return g;
    }
    return NULL;
}

static const char *gpu_uuid(json_object *g)
{
    const char *u = tf_json_str(g, "status", "uuid", NULL);
    return u ? u : tf_json_str(g, "metadata", "name", NULL);
}

static json_object *gpu_entry(json_object *g, const char *default_pool)
{
    json_object *o = json_object_new_object();
    const char *pool = tf_json_str(g, "metadata", "labels", "tensor-fusion.ai/gpupool", NULL);
    double ct, cv, at, av;
    tf_ctlmetrics_gpu_capacity(g, &ct, &cv, &at, &av);
    json_object_object_add(o, "uuid", str_or_empty(gpu_uuid(g)));
    json_object_object_add(o, "name", str_or_empty(tf_json_str(g, "metadata", "name", NULL)));
    json_object_object_add(o, "node", str_or_empty(tf_ctlmetrics_gpu_node(g)));
    json_object_object_add(o, "pool", str_or_empty(pool ? pool : default_pool));
    json_object_object_add(o, "model", str_or_empty(tf_json_str(g, "status", "gpuModel", NULL)));
    json_object_object_add(o, "phase", str_or_empty(tf_json_str(g, "status", "phase", NULL)));
    json_object_object_add(o, "tflops", json_object_new_double(ct));
    json_object_object_add(o, "vramBytes", json_object_new_int64((int64_t)cv));
    json_object_object_add(o, "allocatedTflops", json_object_new_double(ct > at ? ct - at : 0));
    json_object_object_add(o, "allocatedVramBytes",
                           json_object_new_int64(cv > av ? (int64_t)(cv - av) : 0));
    return o;
}

static json_object *named_entry(json_object *obj, bool with_pool)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", str_or_empty(tf_json_str(obj, "metadata", "name", NULL)));
    if (with_pool)
        json_object_object_add(
            o, "pool",
            str_or_empty(tf_json_str(obj, "metadata", "labels", "tensor-fusion.ai/gpupool", NULL)));
    json_object_object_add(o, "phase", str_or_empty(tf_json_str(obj, "status", "phase", NULL)));
    return o;
}

/* The workload entry for W (a pod's worker row), made on first sight of its workload. */
static json_object *workload_entry(json_object *list, const struct tf_ctlmetrics_worker *w,
                                   json_object *tfworkloads)
{
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *e = json_object_array_get_idx(list, i);
        if (!strcmp(tf_json_str(e, "namespace", NULL), w->ns ? w->ns : "") &&
            !strcmp(tf_json_str(e, "name", NULL), w->workload))
            return e;
    }
    json_object *e = json_object_new_object();
    json_object_object_add(e, "name", str_or_empty(w->workload));
    json_object_object_add(e, "namespace", str_or_empty(w->ns));
    json_object_object_add(e, "pool", str_or_empty(w->pool));
    json_object_object_add(e, "qos", str_or_empty(w->qos));
    json_object_object_add(e, "isolation", str_or_empty(w->isolation ? w->isolation : "soft"));
    json_object_object_add(e, "tflopsRequest", json_object_new_double(w->tflops_request));
    json_object_object_add(e, "tflopsLimit", json_object_new_double(w->tflops_limit));
    json_object_object_add(e, "vramRequestBytes", json_object_new_int64((int64_t)w->vram_request));
    json_object_object_add(e, "vramLimitBytes", json_object_new_int64((int64_t)w->vram_limit));
    json_object_object_add(e, "gpus", json_object_new_array());
    json_object_object_add(e, "workers", json_object_new_array());
    json_object_object_add(e, "ready", json_object_new_boolean(false));
    for (size_t i = 0; i < len_of(tfworkloads); i++) {
        json_object *t = json_object_array_get_idx(tfworkloads, i);
        const char *n = tf_json_str(t, "metadata", "name", NULL),
                   *ns = tf_json_str(t, "metadata", "namespace", NULL);
        if (!n || !ns || strcmp(n, w->workload) || !w->ns || strcmp(ns, w->ns))
            continue;
        json_object *rec = tf_json_path(t, "status", "recommendation", NULL);
        if (rec)
            json_object_object_add(e, "recommendation", json_object_get(rec));
        json_object *as = tf_json_path(t, "spec", "autoScalingConfig", NULL);
        if (as)
            json_object_object_add(e, "autoScalingConfig", json_object_get(as));
    }
    json_object_array_add(list, e);
    return e;
}

json_object *tf_ctl_console_inventory(json_object *pods, json_object *gpus, json_object *gpunodes,
                                      json_object *pools, json_object *workloads,
                                      const char *default_pool)
{
    json_object *inv = json_object_new_object(), *ga = json_object_new_array(),
                *na = json_object_new_array(), *pa = json_object_new_array(),
                *wa = json_object_new_array();
    json_object_object_add(inv, "mode", json_object_new_string("cluster"));
    for (size_t i = 0; i < len_of(gpus); i++)
        json_object_array_add(ga, gpu_entry(json_object_array_get_idx(gpus, i), default_pool));
    for (size_t i = 0; i < len_of(gpunodes); i++)
        json_object_array_add(na, named_entry(json_object_array_get_idx(gpunodes, i), true));
    for (size_t i = 0; i < len_of(pools); i++)
        json_object_array_add(pa, named_entry(json_object_array_get_idx(pools, i), false));
    for (size_t i = 0; i < len_of(pods); i++) {
        struct tf_ctlmetrics_worker w;
        if (!tf_ctlmetrics_worker(json_object_array_get_idx(pods, i), gpus, default_pool, &w))
            continue;
        json_object *e = workload_entry(wa, &w, workloads);
        json_object_array_add(json_object_object_get(e, "workers"), str_or_empty(w.name));
        if (w.ready)
            json_object_object_add(e, "ready", json_object_new_boolean(true));
        json_object *gl = json_object_object_get(e, "gpus");
        for (const char *p = w.ids; p && *p;) {
            const char *end = strchr(p, ',');
            size_t n = end ? (size_t)(end - p) : strlen(p);
            while (n && *p == ' ')
                p++, n--;
            while (n && p[n - 1] == ' ')
                n--;
            json_object *g = n ? gpu_by_id(gpus, p, n) : NULL;
            char id[256];
            snprintf(id, sizeof(id), "%.*s", (int)n, p);
            const char *uuid = g && gpu_uuid(g) ? gpu_uuid(g) : id;
            bool seen = false;
            for (size_t k = 0; k < json_object_array_length(gl) && !seen; k++)
                seen = !strcmp(json_object_get_string(json_object_array_get_idx(gl, k)), uuid);
            if (n && !seen)
                json_object_array_add(gl, json_object_new_string(uuid));
            p = end ? end + 1 : NULL;
        }
    }
    json_object_object_add(inv, "gpus", ga);
    json_object_object_add(inv, "nodes", na);
    json_object_object_add(inv, "pools", pa);
    json_object_object_add(inv, "workloads", wa);
    return inv;
}

static json_object *inventory(void *arg)
{
    struct tf_ctl_console *con = arg;
    json_object *pods = tf_informer_snapshot(con->o.pods),
                *gpus = tf_informer_snapshot(con->o.gpus),
                *nodes = tf_informer_snapshot(con->o.gpunodes),
                *pools = tf_informer_snapshot(con->o.pools),
                *wls = tf_informer_snapshot(con->o.workloads);
    json_object *inv = tf_ctl_console_inventory(pods, gpus, nodes, pools, wls, con->default_pool);
    json_object_put(pods);
    json_object_put(gpus);
    json_object_put(nodes);
    json_object_put(pools);
    json_object_put(wls);
    return inv;
}

/* ---- GreptimeDB ---------------------------------------------------------------------------- */

static int query(void *arg, const char *sql, json_object **doc, json_object **names,
                 json_object **rows, char *err, size_t errlen)
{
    return tf_greptime_query(arg, sql, doc, names, rows, err, errlen);
}

/* ---- Alertmanager -------------------------------------------------------------------------- */

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
    return tf_dynbuf_add(arg, p, sz * n) ? 0 : sz * n;
}

static json_object *alerts(void *arg, const struct tf_con_req *r)
{
    struct tf_ctl_console *con = arg;
    json_object *out = json_object_new_object(), *list = json_object_new_array(),
                *warn = json_object_new_array();
    json_object_object_add(out, "alerts", list);
    json_object_object_add(out, "warnings", warn);
    if (!con->alertmanager_url) {
        json_object_object_add(out, "source", json_object_new_string("none"));
        return out;
    }
    json_object_object_add(out, "source", json_object_new_string("alertmanager"));
    char url[1024];
    snprintf(url, sizeof(url), "%s/api/v2/alerts?active=true&silenced=false&inhibited=false",
             con->alertmanager_url);
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, ALERTS_BODY_MAX);
    CURL *c = curl_easy_init();
    long status = 0;
    CURLcode cc = CURLE_FAILED_INIT;
    if (c) {
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        cc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(c);
    }
    json_object *arr =
        cc == CURLE_OK && status == 200 ? json_tokener_parse(tf_dynbuf_str(&b)) : NULL;
    if (!json_object_is_type(arr, json_type_array)) {
        char msg[300];
        snprintf(msg, sizeof(msg), "Alertmanager at %.200s: %s", con->alertmanager_url,
                 cc != CURLE_OK ? curl_easy_strerror(cc) : "no list of alerts in the answer");
        json_object_array_add(warn, json_object_new_string(msg));
    }
    for (size_t i = 0; i < len_of(arr); i++) {
        json_object *a = json_object_array_get_idx(arr, i);
        const char *job = tf_json_str(a, "labels", "job", NULL);
        if (!job || strcmp(job, "tensor-fusion"))
            continue;
        json_object *e = json_object_new_object();
        json_object *labels = tf_json_path(a, "labels", NULL),
                    *ann = tf_json_path(a, "annotations", NULL);
        json_object_object_add(e, "labels",
                               labels ? json_object_get(labels) : json_object_new_object());
        if (ann)
            json_object_object_add(e, "annotations", json_object_get(ann));
        json_object_object_add(e, "summary",
                               str_or_empty(tf_json_str(a, "annotations", "summary", NULL)));
        json_object_object_add(e, "startsAt", str_or_empty(tf_json_str(a, "startsAt", NULL)));
        json_object_object_add(e, "state", str_or_empty(tf_json_str(a, "status", "state", NULL)));
        json_object_array_add(list, e);
    }
    json_object_put(arr);
    tf_dynbuf_free(&b);
    return out;
}

/* ---- Events -------------------------------------------------------------------------------- */

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct evlist {
    json_object *arr, *seen; /* seen: uids (a list restarted after a 410 repeats items) */
    long long since_us;
};

static int on_event(json_object *ev, void *arg)
{
    struct evlist *l = arg;
    const char *ts = tf_json_str(ev, "lastTimestamp", NULL);
    if (!ts)
        ts = tf_json_str(ev, "eventTime", NULL);
    if (!ts)
        ts = tf_json_str(ev, "metadata", "creationTimestamp", NULL);
    long long us = 0;
    const char *uid = tf_json_str(ev, "metadata", "uid", NULL);
    if (!ts || tf_k8s_time_parse(ts, &us) || us < l->since_us ||
        (uid && json_object_object_get_ex(l->seen, uid, NULL)))
        return 0;
    if (uid)
        json_object_object_add(l->seen, uid, NULL);
    json_object *e = json_object_new_object();
    const char *kind = tf_json_str(ev, "involvedObject", "kind", NULL);
    const char *obj = tf_json_str(ev, "involvedObject", "name", NULL);
    json_object_object_add(e, "time", json_object_new_int64(us / 1000));
    json_object_object_add(e, "type", str_or_empty(tf_json_str(ev, "type", NULL)));
    json_object_object_add(e, "reason", str_or_empty(tf_json_str(ev, "reason", NULL)));
    json_object_object_add(e, "kind", str_or_empty(kind));
    json_object_object_add(e, "namespace",
                           str_or_empty(tf_json_str(ev, "involvedObject", "namespace", NULL)));
    json_object_object_add(e, "object", str_or_empty(obj));
    json_object_object_add(e, "pool", str_or_empty(kind && !strcmp(kind, "GPUPool") ? obj : ""));
    json_object_object_add(e, "node", json_object_new_string(""));
    json_object_object_add(e, "message", str_or_empty(tf_json_str(ev, "message", NULL)));
    json_object *count = tf_json_path(ev, "count", NULL);
    if (count)
        json_object_object_add(e, "count", json_object_get(count));
    json_object_array_add(l->arr, e);
    return json_object_array_length(l->arr) >= 4 * MAX_EVENTS ? 1 : 0;
}

static int newest_first(const void *a, const void *b)
{
    int64_t x = json_object_get_int64(json_object_object_get(*(json_object *const *)a, "time"));
    int64_t y = json_object_get_int64(json_object_object_get(*(json_object *const *)b, "time"));
    return x < y ? 1 : x > y ? -1 : 0;
}

static json_object *events(void *arg, const struct tf_con_req *r)
{
    struct tf_ctl_console *con = arg;
    json_object *out = json_object_new_object(), *warn = json_object_new_array();
    struct evlist l = {json_object_new_array(), json_object_new_object(),
                       now_us() - r->range_s * 1000000LL};
    static const char *const sources[] = {"source=tf-controller", "source=tf-scheduler"};
    for (size_t i = 0; i < 2; i++) {
        char err[256];
        int rc = tf_k8s_list(con->o.c, &tf_k8s_events, NULL, NULL, sources[i], 500, on_event, &l,
                             NULL, err, sizeof(err));
        if (rc < 0) {
            char msg[400];
            snprintf(msg, sizeof(msg), "events (%s): %s", sources[i], err);
            json_object_array_add(warn, json_object_new_string(msg));
        }
    }
    json_object_array_sort(l.arr, newest_first);
    json_object *ev = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(l.arr) && i < MAX_EVENTS; i++)
        json_object_array_add(ev, json_object_get(json_object_array_get_idx(l.arr, i)));
    json_object_put(l.arr);
    json_object_put(l.seen);
    json_object_object_add(out, "rangeSeconds", json_object_new_int64(r->range_s));
    json_object_object_add(
        out, "source",
        json_object_new_string("Kubernetes Events of tf-controller and "
                               "tf-scheduler, kept for the API server's event TTL"));
    json_object_object_add(out, "events", ev);
    json_object_object_add(out, "warnings", warn);
    return out;
}

/* ---- routes -------------------------------------------------------------------------------- */

static void set_headers(struct tf_http_resp *resp, size_t from)
{
    for (size_t i = 0;
         tf_con_headers[i] && from + i + 1 < sizeof(resp->headers) / sizeof(resp->headers[0]); i++)
        resp->headers[from + i] = tf_con_headers[i];
}

static char *json_body(json_object *o)
{
    char *s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    return s;
}

static void error(struct tf_http_resp *resp, int status, const char *msg)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string(msg));
    resp->status = status;
    resp->body = json_body(o);
}

/* The console's token, read from (or made in) its Secret at first use; false with ERR when
 * the Secret cannot be read or made (asked again next time). */
static bool token(struct tf_ctl_console *con, char *out, size_t len, char *err, size_t errlen)
{
    pthread_mutex_lock(&con->mu);
    if (!con->token[0] && con->o.c) {
        char *raw = NULL;
        size_t n = 0;
        int rc = tf_k8s_secret_ensure(con->o.c, con->ns ? con->ns : "default", TF_CONSOLE_SECRET,
                                      TF_CONSOLE_SECRET_KEY, 32, true, &raw, &n, err, errlen);
        if (rc == 0) {
            while (n && (raw[n - 1] == '\n' || raw[n - 1] == '\r' || raw[n - 1] == ' '))
                n--;
            if (n >= 16 && n < sizeof(con->token) && !memchr(raw, '\0', n)) {
                memcpy(con->token, raw, n);
                con->token[n] = '\0';
            } else {
                tf_errf(err, errlen, "secret %s: data.%s must be 16..%zu characters of text",
                        TF_CONSOLE_SECRET, TF_CONSOLE_SECRET_KEY, sizeof(con->token) - 1);
            }
            memset(raw, 0, n);
        }
        free(raw);
        if (!con->token[0])
            tf_log(TF_LOG_WARN, "console", "token unavailable: %s", err);
    }
    bool ok = tf_strlcpy(out, con->token, len) && con->token[0];
    pthread_mutex_unlock(&con->mu);
    return ok;
}

bool tf_ctl_console_handle(struct tf_ctl_console *con, const struct tf_http_req *req,
                           struct tf_http_resp *resp)
{
    const char *path = req->path;
    bool api = !strncmp(path, "/api/v1/console/", 16);
    if (!con ||
        (!api && strcmp(path, "/") && strcmp(path, "/console") && strncmp(path, "/console/", 9)))
        return false;
    set_headers(resp, 0);
    if (!api) {
        bool get = !strcmp(req->method, "GET") || !strcmp(req->method, "HEAD");
        const struct tf_con_asset *a = tf_con_asset_find(path);
        if (!get) {
            error(resp, 405, "the console is read-only: GET only");
        } else if (!strcmp(path, "/") || !strcmp(path, "/console")) {
            resp->status = 302;
            size_t k = 0;
            while (resp->headers[k])
                k++;
            resp->headers[k] = "Location";
            resp->headers[k + 1] = "/console/";
        } else if (!a) {
            error(resp, 404, "no such console page");
        } else {
            size_t k = 0;
            while (resp->headers[k])
                k++;
            resp->headers[k] = "ETag";
            resp->headers[k + 1] = a->etag;
            resp->headers[k + 2] = "Cache-Control";
            resp->headers[k + 3] = "no-cache";
            const char *inm = tf_http_header(req, "If-None-Match");
            resp->content_type = a->ctype;
            if (inm && !strcmp(inm, a->etag)) {
                resp->status = 304;
            } else {
                resp->static_body = a->data;
                resp->static_len = a->len;
            }
        }
        return true;
    }
    char tok[160], err[512] = "";
    if (!token(con, tok, sizeof(tok), err, sizeof(err))) {
        error(resp, 503, "the console's token is not available yet (see the controller's log)");
        return true;
    }
    bool ok = tf_con_bearer_ok(tf_http_header(req, "Authorization"), tok);
    memset(tok, 0, sizeof(tok));
    if (!ok) {
        error(resp, 401,
              "missing or wrong console token (Authorization: Bearer ...; the token "
              "is in the Secret " TF_CONSOLE_SECRET ")");
        return true;
    }
    struct tf_con_provider p = {
        .inventory = inventory, .alerts = alerts, .events = events, .arg = con};
    struct tf_greptime *g = NULL;
    if (con->metrics_url && (g = tf_greptime_new(con->metrics_url, con->metrics_db, 10000))) {
        p.store.query = query;
        p.store.arg = g;
    } else {
        p.store.why_none = "no metrics store (tf-controller --metrics-url): no history";
    }
    json_object *out = NULL;
    resp->status = tf_con_api(&p, req->method, path + 15, tf_http_query(req, "range"),
                              tf_http_query(req, "step"), &out);
    resp->body = json_body(out);
    tf_greptime_destroy(g);
    return true;
}
