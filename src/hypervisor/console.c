/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-hypervisor's web console (console.h): the inventory of this machine from the state
 * store, the local metrics database as the console's store, the event queue, and the pages.
 */
#include "hypervisor/console.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "console/console.h"
#include "hypervisor/runtime.h"
#include "metrics/lineproto.h"
#include "metrics/sqlquery.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_EVENTS 256
#define MAX_ROWS 200000 /* per console query: 7 d of one GPU at 5 s is 121k */

struct event {
    int64_t ms;
    char type[8], reason[40], ns[TF_HV_NAME_MAX], name[TF_HV_NAME_MAX], msg[1024];
};

struct tf_hv_console {
    pthread_mutex_t mu;
    struct event q[MAX_EVENTS]; /* [mu] */
    int n;                      /* [mu] */
    uint64_t dropped;           /* [mu] */
    char dbpath[700];           /* the SQLite metrics database, "" when the sink is another */
    char why_none[200];
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct tf_hv_console *tf_hv_console_new(const struct tf_hv *hv)
{
    struct tf_hv_console *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    pthread_mutex_init(&c->mu, NULL);
    const char *sink = hv->cfg.metrics_sink;
    if (!sink[0])
        snprintf(c->dbpath, sizeof(c->dbpath), "%s/metrics.db", hv->cfg.state_dir);
    else if (!strncmp(sink, "sqlite:", 7))
        tf_strlcpy(c->dbpath, sink + 7, sizeof(c->dbpath));
    else if (!strcmp(sink, "none"))
        tf_strlcpy(c->why_none, "metrics are off (--metrics-sink none): no history",
                   sizeof(c->why_none));
    else
        snprintf(c->why_none, sizeof(c->why_none),
                 "metrics go to %.20s...: query them there; the console shows no history", sink);
    return c;
}

void tf_hv_console_destroy(struct tf_hv_console *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void tf_hv_console_event(struct tf_hv *hv, const char *type, const char *reason, const char *ns,
                         const char *name, const char *fmt, ...)
{
    struct tf_hv_console *c = hv->console;
    if (!c)
        return;
    struct event e;
    memset(&e, 0, sizeof(e));
    e.ms = now_ms();
    tf_strlcpy(e.type, type, sizeof(e.type));
    tf_strlcpy(e.reason, reason, sizeof(e.reason));
    tf_strlcpy(e.ns, ns ? ns : "", sizeof(e.ns));
    tf_strlcpy(e.name, name ? name : "", sizeof(e.name));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
    va_end(ap);
    /* Line protocol refuses control characters: messages are one line. */
    for (char *p = e.msg; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = ' ';
    for (size_t l = strlen(e.msg); l > 0 && e.msg[l - 1] == ' '; l--)
        e.msg[l - 1] = '\0';
    pthread_mutex_lock(&c->mu);
    if (c->n == MAX_EVENTS) {
        memmove(&c->q[0], &c->q[1], sizeof(c->q[0]) * (MAX_EVENTS - 1));
        c->n--;
        c->dropped++;
    }
    c->q[c->n++] = e;
    pthread_mutex_unlock(&c->mu);
}

void tf_hv_console_flush(struct tf_hv *hv)
{
    struct tf_hv_console *c = hv->console;
    if (!c || !hv->sink)
        return;
    struct event *ev = malloc(sizeof(*ev) * MAX_EVENTS);
    struct tf_lp_point *pts = calloc(MAX_EVENTS, sizeof(*pts));
    if (!ev || !pts)
        goto out;
    pthread_mutex_lock(&c->mu);
    int n = c->n;
    memcpy(ev, c->q, sizeof(*ev) * (size_t)n);
    c->n = 0;
    pthread_mutex_unlock(&c->mu);
    if (n == 0)
        goto out;
    int64_t last = 0;
    for (int i = 0; i < n; i++) {
        /* Two events in one millisecond would be one row (same tags and time). */
        int64_t ts = ev[i].ms > last ? ev[i].ms : last + 1;
        last = ts;
        struct tf_lp_point *p = &pts[i];
        tf_lp_point_init(p, "tf_events", ts);
        tf_lp_tag(p, "event_type", ev[i].type);
        tf_lp_tag(p, "reason", ev[i].reason);
        tf_lp_tag(p, "object_kind", "Workload");
        tf_lp_tag(p, "namespace", ev[i].ns);
        tf_lp_tag(p, "object", ev[i].name);
        tf_lp_tag(p, "pool", hv->cfg.pool);
        tf_lp_tag(p, "node", hv->cfg.node);
        tf_lp_string(p, "message", ev[i].msg);
    }
    char err[256];
    if (tf_metrics_sink_write(hv->sink, pts, (size_t)n, err, sizeof(err)) ||
        tf_metrics_sink_flush(hv->sink, err, sizeof(err)))
        tf_log(TF_LOG_WARN, "console", "events: %s", err);
out:
    free(ev);
    free(pts);
}

/* ---- inventory ----------------------------------------------------------------------------- */

static json_object *dbl(double v)
{
    char b[32];
    snprintf(b, sizeof(b), "%.6g", v);
    return json_object_new_double_s(v, b);
}

static json_object *named(const char *name, const char *pool)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(name));
    if (pool)
        json_object_object_add(o, "pool", json_object_new_string(pool));
    json_object_object_add(o, "phase", json_object_new_string("Running"));
    return o;
}

static json_object *gpus_json(struct tf_hv *hv)
{
    json_object *arr = json_object_new_array();
    struct tf_hv_device *devs = calloc(TF_HV_MAX_DEVICES, sizeof(*devs));
    int n = 0;
    char err[256];
    if (!devs || tf_hv_state_devices(hv->state, devs, TF_HV_MAX_DEVICES, &n, err, sizeof(err)))
        n = 0;
    for (int i = 0; i < n; i++) {
        const struct tf_hv_device *d = &devs[i];
        struct tf_hv_gpu_sample s = {0};
        pthread_mutex_lock(&hv->mu);
        for (int k = 0; k < hv->ndev; k++)
            if (!strcmp(hv->uuids[k], d->uuid))
                s = hv->samples[k];
        pthread_mutex_unlock(&hv->mu);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "uuid", json_object_new_string(d->uuid));
        json_object_object_add(o, "node", json_object_new_string(hv->cfg.node));
        json_object_object_add(o, "pool", json_object_new_string(hv->cfg.pool));
        json_object_object_add(o, "index", json_object_new_int(d->index));
        json_object_object_add(o, "name", json_object_new_string(d->name));
        json_object_object_add(o, "model", json_object_new_string(d->model));
        json_object_object_add(o, "present", json_object_new_boolean(d->present));
        json_object_object_add(o, "tflops", dbl(d->tflops_milli / 1000.0));
        json_object_object_add(o, "vramBytes", json_object_new_int64(d->vram_bytes));
        json_object_object_add(o, "allocatedTflops", dbl(d->alloc_tflops_milli / 1000.0));
        json_object_object_add(o, "allocatedVramBytes", json_object_new_int64(d->alloc_vram_bytes));
        json_object_object_add(
            o, "isolation",
            json_object_new_string(d->nworkloads ? tf_hv_isolation_name(d->mode) : ""));
        json_object_object_add(o, "utilizationPercent", dbl(s.util_bp / 100.0));
        json_object_object_add(o, "memoryUsedBytes", json_object_new_int64(s.mem_used));
        json_object_array_add(arr, o);
    }
    free(devs);
    return arr;
}

static json_object *workloads_json(struct tf_hv *hv)
{
    json_object *arr = json_object_new_array();
    struct tf_hv_workload *ws = NULL;
    int n = 0;
    char err[256];
    if (tf_hv_state_list(hv->state, &ws, &n, err, sizeof(err)))
        return arr;
    for (int i = 0; i < n; i++) {
        const struct tf_hv_workload *w = &ws[i];
        struct tf_hv_usage u;
        tf_hv_runtime_usage(hv, w, &u);
        json_object *o = json_object_new_object(), *gl = json_object_new_array(),
                    *now = json_object_new_array();
        json_object_object_add(o, "name", json_object_new_string(w->req.name));
        json_object_object_add(o, "namespace", json_object_new_string(w->req.ns));
        json_object_object_add(o, "pool", json_object_new_string(hv->cfg.pool));
        json_object_object_add(o, "node", json_object_new_string(hv->cfg.node));
        json_object_object_add(o, "qos", json_object_new_string(w->req.qos));
        json_object_object_add(o, "isolation",
                               json_object_new_string(tf_hv_isolation_name(w->req.isolation)));
        for (int k = 0; k < w->nalloc; k++) {
            json_object_array_add(gl, json_object_new_string(w->alloc[k].uuid));
            json_object *e = json_object_new_object();
            json_object_object_add(e, "uuid", json_object_new_string(w->alloc[k].uuid));
            json_object_object_add(e, "computePercent", dbl(u.gpu[k].compute_bp / 100.0));
            json_object_object_add(e, "vramBytes", json_object_new_int64(u.gpu[k].vram_used));
            json_object_array_add(now, e);
        }
        json_object_object_add(o, "gpus", gl);
        if (w->nalloc > 0) { /* per GPU: every GPU of a workload gets the same */
            const struct tf_hv_alloc *a = &w->alloc[0];
            json_object_object_add(o, "tflopsRequest", dbl(a->tflops_milli / 1000.0));
            json_object_object_add(o, "tflopsLimit", dbl(a->tflops_limit / 1000.0));
            json_object_object_add(o, "computePercentLimit", dbl(a->compute_limit_bp / 100.0));
            json_object_object_add(o, "vramRequestBytes", json_object_new_int64(a->vram_bytes));
            json_object_object_add(o, "vramLimitBytes", json_object_new_int64(a->vram_limit));
        }
        json_object_object_add(o, "usageNow", now);
        json_object_object_add(o, "createdMs", json_object_new_int64(w->created_ms));
        json_object_object_add(o, "vramEscapes",
                               json_object_new_int64(tf_hv_escape_count(hv, w->req.name)));
        json_object_array_add(arr, o);
    }
    free(ws);
    return arr;
}

json_object *tf_hv_console_inventory(struct tf_hv *hv)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "mode", json_object_new_string("local"));
    json_object *nodes = json_object_new_array(), *pools = json_object_new_array();
    json_object_array_add(nodes, named(hv->cfg.node, hv->cfg.pool));
    json_object_array_add(pools, named(hv->cfg.pool, NULL));
    json_object_object_add(o, "nodes", nodes);
    json_object_object_add(o, "pools", pools);
    json_object_object_add(o, "gpus", gpus_json(hv));
    json_object_object_add(o, "workloads", workloads_json(hv));
    return o;
}

/* ---- API ----------------------------------------------------------------------------------- */

static int query(void *arg, const char *sql, json_object **doc, json_object **names,
                 json_object **rows, char *err, size_t errlen)
{
    const struct tf_hv_console *c = arg;
    return tf_sql_query_json(c->dbpath, sql, MAX_ROWS, doc, names, rows, err, errlen);
}

static json_object *inventory(void *arg)
{
    return tf_hv_console_inventory(arg);
}

/* What would need attention now: refused allocations and VRAM escapes are events; the alert
 * rules run in the cluster (tf-controller --enable-alert). Locally: workloads over their VRAM
 * limit now. */
static json_object *alerts(void *arg, const struct tf_con_req *r)
{
    struct tf_hv *hv = arg;
    json_object *out = json_object_new_object(), *list = json_object_new_array();
    json_object_object_add(out, "source", json_object_new_string("local"));
    pthread_mutex_lock(&hv->mu);
    if (hv->escapes) {
        json_object_object_foreach(hv->escapes, name, st)
        {
            json_object *active;
            if (!json_object_object_get_ex(st, "active", &active) ||
                !json_object_get_boolean(active))
                continue;
            json_object *a = json_object_new_object(), *labels = json_object_new_object();
            json_object_object_add(labels, "alertname", json_object_new_string("VRAMEscape"));
            json_object_object_add(labels, "severity", json_object_new_string("P1"));
            json_object_object_add(labels, "workload", json_object_new_string(name));
            json_object_object_add(a, "labels", labels);
            json_object_object_add(
                a, "summary",
                json_object_new_string("processes of the workload hold more VRAM than its limit"));
            json_object_array_add(list, a);
        }
    }
    pthread_mutex_unlock(&hv->mu);
    json_object_object_add(out, "alerts", list);
    return out;
}

int tf_hv_console_api(struct tf_hv *hv, struct MHD_Connection *c, const char *method,
                      const char *sub, json_object **out)
{
    struct tf_con_provider p = {
        .inventory = inventory,
        .alerts = alerts,
        .arg = hv,
    };
    struct tf_hv_console *con = hv->console;
    if (con && con->dbpath[0]) {
        p.store.query = query;
        p.store.arg = con;
    } else {
        p.store.why_none = con ? con->why_none : "the console is not set up";
    }
    p.store.resources_summed = true; /* sampler.c: a workload's resources over its GPUs */
    const char *range = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "range");
    const char *step = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "step");
    return tf_con_api(&p, method, sub, range, step, out);
}

/* ---- pages --------------------------------------------------------------------------------- */

bool tf_hv_console_is_page(const char *url)
{
    return !strcmp(url, "/") || !strcmp(url, "/console") || !strncmp(url, "/console/", 9);
}

enum MHD_Result tf_hv_console_page(struct MHD_Connection *c, const char *url, const char *method)
{
    bool head = !strcmp(method, "HEAD");
    struct MHD_Response *r;
    unsigned int status = 200;
    const struct tf_con_asset *a = NULL;
    if (strcmp(method, "GET") && !head) {
        static const char msg[] = "{\"error\": \"the console is read-only: GET only\"}";
        r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        status = 405;
    } else if (!strcmp(url, "/") || !strcmp(url, "/console")) {
        r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (r)
            MHD_add_response_header(r, "Location", "/console/");
        status = 302;
    } else if (!(a = tf_con_asset_find(url))) {
        static const char msg[] = "{\"error\": \"no such console page\"}";
        r = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        status = 404;
    } else {
        const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match");
        bool fresh = inm && !strcmp(inm, a->etag);
        r = MHD_create_response_from_buffer(fresh ? 0 : a->len, (void *)a->data,
                                            MHD_RESPMEM_PERSISTENT);
        status = fresh ? 304 : 200;
    }
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", a ? a->ctype : "application/json");
    if (a) {
        MHD_add_response_header(r, "ETag", a->etag);
        MHD_add_response_header(r, "Cache-Control", "no-cache");
    }
    for (int i = 0; tf_con_headers[i]; i += 2)
        MHD_add_response_header(r, tf_con_headers[i], tf_con_headers[i + 1]);
    enum MHD_Result ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}
