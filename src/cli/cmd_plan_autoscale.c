/* SPDX-License-Identifier: Apache-2.0
 *
 * `tfctl plan autoscale`: the autoscaling recommendation (core/autoscale.h) for one workload
 * from its usage history, i.e. what the controller would write to the TensorFusionWorkload's
 * .status.recommendation.
 *
 *   tfctl plan autoscale (--usage USAGE.csv | --query WORKLOAD [--db PATH])
 *       [--workload FILE] [--rules TEMPLATE.yaml] [--requests TFLOPS,VRAM]
 *       [--limits TFLOPS,VRAM] [--current-requests TFLOPS,VRAM] [--current-limits TFLOPS,VRAM]
 *       [--created TIME] [--now TIME] [--timezone ZONE] [--zoneinfo DIR] [--enable]
 *       [--target compute|vram|all] [-o table|json]
 *
 * Samples: a CSV file (core/usage_csv.h; `tfctl query -o csv` output of tf_worker_usage) or
 * the local metrics database's tf_worker_usage rows of WORKLOAD within historyDataPeriod;
 * with --query the current requests/limits default to the latest tf_worker_resources row.
 * --workload reads a TensorFusionWorkload or WorkloadProfile (spec.resources,
 * spec.autoScalingConfig, metadata.labels, metadata.creationTimestamp) or a Pod / Deployment
 * (its TensorFusion annotations, tensor-fusion.ai/autoscale and -target included);
 * --rules reads a SchedulingConfigTemplate whose spec.verticalScalingRules apply by label.
 * Without --created the workload counts as created long ago (initialDelayPeriod passed).
 *
 * JSON: {"workload", "recommendation" (the .status.recommendation object), "changed",
 * "source", "activeCronScalingRule", "reason", "matchedRule", "confidence",
 * "estimates": {"compute": {"lower","target","upper","samples"}, "vram": {...}},
 * "current": {...}}. Exit codes: 0, 2 bad usage or invalid input, 1 runtime failure.
 */
#include "cli/cmds.h"
#include "cli/planio.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "core/autoscale.h"
#include "core/efficiency.h"
#include "core/quantity.h"
#include "core/spec.h"
#include "core/timeutil.h"
#include "core/usage_csv.h"
#include "hypervisor/paths.h"
#include "metrics/sqlquery.h"

#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "tfctl plan autoscale"

int tf_cmd_plan_autoscale(int argc, char **argv);

static void usage(FILE *f)
{
    fprintf(
        f, "usage: tfctl plan autoscale (--usage USAGE.csv | --query WORKLOAD [--db PATH])\n"
           "                            [options] [-o table|json]\n"
           "  -u, --usage FILE             CSV: greptime_timestamp,compute_tflops,memory_bytes\n"
           "  -q, --query WORKLOAD         read tf_worker_usage from the local metrics database\n"
           "      --db PATH                metrics database (default <state dir>/metrics.db)\n"
           "  -w, --workload FILE          TensorFusionWorkload/WorkloadProfile or Pod/Deployment\n"
           "      --rules FILE             SchedulingConfigTemplate (spec.verticalScalingRules)\n"
           "      --requests T,V           original per-GPU requests, e.g. 20,8Gi\n"
           "      --limits T,V             original per-GPU limits, e.g. 40,16Gi\n"
           "      --current-requests T,V   applied now (default: the original ones)\n"
           "      --current-limits T,V\n"
           "      --created TIME           workload creation time (default long ago)\n"
           "      --now TIME               RFC 3339 (default now)\n"
           "      --timezone ZONE          zone of the cron scaling rules (default UTC)\n"
           "      --zoneinfo DIR           zone database (default /usr/share/zoneinfo)\n"
           "      --enable                 as tensor-fusion.ai/autoscale: \"true\"\n"
           "      --target compute|vram|all  as tensor-fusion.ai/autoscale-target\n"
           "  -o, --output FMT             table (default) or json\n");
}

struct opts {
    const char *usage_path, *query, *db, *workload_path, *rules_path, *tz, *zdir;
    const char *req_s, *lim_s, *creq_s, *clim_s;
    int64_t now, created;
    bool enable, json;
    enum tf_autoscale_target target;
};

/* "TFLOPS,VRAM" -> milli, bytes (either side may be empty). */
static int pair(const char *opt, const char *s, int64_t *t, int64_t *v)
{
    char buf[128], err[256];
    if (strlen(s) >= sizeof(buf))
        goto bad;
    strcpy(buf, s);
    char *comma = strchr(buf, ',');
    if (!comma)
        goto bad;
    *comma = 0;
    if (*buf && tf_quantity_milli(buf, t, opt, err, sizeof(err)))
        goto msg;
    if (comma[1] && tf_quantity_bytes(comma + 1, v, opt, err, sizeof(err)))
        goto msg;
    return 0;
msg:
    fprintf(stderr, CMD ": %s\n", err);
    return TF_EINVAL;
bad:
    fprintf(stderr, CMD ": %s: \"%s\": want TFLOPS,VRAM (e.g. 20,8Gi)\n", opt, s);
    return TF_EINVAL;
}

/* Workload manifest -> resources, own autoScalingConfig, labels, creation time, annotations. */
struct wl {
    json_object *docs;
    json_object *doc, *own, *labels;
    const char *name;
    struct tf_autoscale_resources res;
    bool annotated;
    enum tf_autoscale_target ann_target;
    int64_t created;
    bool have_created;
};

static int res_block(json_object *o, const char *path, int64_t *t, int64_t *v)
{
    char err[256], p[96];
    json_object *x;
    if (!o)
        return 0;
    if (json_object_object_get_ex(o, "tflops", &x) && x) {
        snprintf(p, sizeof(p), "%s.tflops", path);
        if (tf_json_quantity_milli(x, t, p, err, sizeof(err)))
            goto bad;
    }
    if (json_object_object_get_ex(o, "vram", &x) && x) {
        snprintf(p, sizeof(p), "%s.vram", path);
        if (tf_json_quantity_bytes(x, v, p, err, sizeof(err)))
            goto bad;
    }
    return 0;
bad:
    fprintf(stderr, CMD ": %s\n", err);
    return TF_EINVAL;
}

static json_object *path2(json_object *o, const char *a, const char *b)
{
    json_object *x = NULL, *y = NULL;
    if (!o || !json_object_object_get_ex(o, a, &x) || !x)
        return NULL;
    if (!b)
        return x;
    if (!json_object_is_type(x, json_type_object) || !json_object_object_get_ex(x, b, &y))
        return NULL;
    return y;
}

static int read_workload(const char *path, struct wl *w)
{
    if (tf_planio_manifest(CMD, path, &w->docs))
        return TF_EINVAL;
    if (json_object_array_length(w->docs) < 1) {
        fprintf(stderr, CMD ": %s: no document\n", path);
        return TF_EINVAL;
    }
    w->doc = json_object_array_get_idx(w->docs, 0);
    json_object *kind = path2(w->doc, "kind", NULL), *meta = path2(w->doc, "metadata", NULL);
    const char *k =
        kind && json_object_is_type(kind, json_type_string) ? json_object_get_string(kind) : "";
    json_object *nm = path2(meta, "name", NULL);
    w->name = nm && json_object_is_type(nm, json_type_string) ? json_object_get_string(nm) : NULL;
    json_object *ct = path2(meta, "creationTimestamp", NULL);
    if (ct && json_object_is_type(ct, json_type_string)) {
        char err[256];
        if (tf_rfc3339_parse(json_object_get_string(ct), &w->created, "metadata.creationTimestamp",
                             err, sizeof(err))) {
            fprintf(stderr, CMD ": %s: %s\n", path, err);
            return TF_EINVAL;
        }
        w->have_created = true;
    }
    if (!strcmp(k, "TensorFusionWorkload") || !strcmp(k, "WorkloadProfile")) {
        json_object *spec = path2(w->doc, "spec", NULL);
        w->labels = path2(meta, "labels", NULL);
        w->own = path2(spec, "autoScalingConfig", NULL);
        json_object *res = path2(spec, "resources", NULL);
        if (res_block(path2(res, "requests", NULL), "spec.resources.requests", &w->res.req_tflops,
                      &w->res.req_vram) ||
            res_block(path2(res, "limits", NULL), "spec.resources.limits", &w->res.lim_tflops,
                      &w->res.lim_vram))
            return TF_EINVAL;
        return 0;
    }
    if (!tf_spec_kind_supported(w->doc)) {
        fprintf(stderr,
                CMD ": %s: kind \"%s\": want TensorFusionWorkload, WorkloadProfile, Pod or a "
                    "workload controller\n",
                path, k);
        return TF_EINVAL;
    }
    struct tf_spec s;
    char err[512];
    if (tf_spec_parse_object(w->doc, NULL, NULL, &s, err, sizeof(err))) {
        fprintf(stderr, CMD ": %s: %s\n", path, err);
        return TF_EINVAL;
    }
    if (!s.enabled) {
        tf_spec_free(&s);
        fprintf(stderr, CMD ": %s: not a TensorFusion workload\n", path);
        return TF_EINVAL;
    }
    w->res.req_tflops = s.requests.tflops_set ? s.requests.tflops_milli : 0;
    w->res.lim_tflops = s.limits.tflops_set ? s.limits.tflops_milli : 0;
    w->res.req_vram = s.requests.vram_set ? s.requests.vram_bytes : 0;
    w->res.lim_vram = s.limits.vram_set ? s.limits.vram_bytes : 0;
    w->annotated = s.autoscale;
    w->ann_target = s.autoscale_target;
    json_object *tpl = tf_spec_pod_template(w->doc);
    w->labels = path2(path2(tpl, "metadata", NULL), "labels", NULL);
    tf_spec_free(&s);
    return 0;
}

/* ---- the metrics database ---- */

struct rows {
    struct tf_usage_sample *v;
    size_t n, cap;
    bool nomem;
};

static int on_usage(void *arg, sqlite3_stmt *st, int64_t row)
{
    (void)row;
    struct rows *r = arg;
    struct tf_usage_sample *nv = tf_grow(r->v, &r->cap, r->n + 1, sizeof(*nv), 1024);
    if (!nv) {
        r->nomem = true;
        return TF_ENOMEM;
    }
    r->v = nv;
    struct tf_usage_sample *s = &r->v[r->n++];
    s->ts_ms = sqlite3_column_int64(st, 0);
    s->tflops_milli = sqlite3_column_type(st, 1) == SQLITE_NULL
                          ? -1
                          : (int64_t)(sqlite3_column_double(st, 1) * 1000.0 + 0.5);
    s->vram_bytes = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 2);
    return 0;
}

struct resrow {
    bool found;
    struct tf_autoscale_resources r;
};

static int on_res(void *arg, sqlite3_stmt *st, int64_t row)
{
    struct resrow *x = arg;
    if (row)
        return 0;
    x->found = true;
    x->r.req_tflops = (int64_t)(sqlite3_column_double(st, 0) * 1000.0 + 0.5);
    x->r.lim_tflops = (int64_t)(sqlite3_column_double(st, 1) * 1000.0 + 0.5);
    x->r.req_vram = sqlite3_column_int64(st, 2);
    x->r.lim_vram = sqlite3_column_int64(st, 3);
    return 0;
}

/* WORKLOAD as an SQL string literal body (quotes doubled). */
static int sql_quote(const char *s, char *out, size_t cap)
{
    size_t n = 0;
    for (; *s; s++) {
        if (n + 3 >= cap)
            return TF_ERANGE;
        if (*s == '\'')
            out[n++] = '\'';
        out[n++] = *s;
    }
    out[n] = 0;
    return 0;
}

static int query_db(const struct opts *o, int64_t history_ms, struct rows *rows, struct resrow *res)
{
    char dbpath[4096];
    const char *db = o->db;
    if (!db) {
        char dir[4000];
        if (tf_hv_state_dir(dir, sizeof(dir))) {
            fprintf(stderr, CMD ": cannot determine the state directory; use --db\n");
            return 2;
        }
        snprintf(dbpath, sizeof(dbpath), "%s/metrics.db", dir);
        db = dbpath;
    }
    char q[600], sql[1400], err[512];
    if (sql_quote(o->query, q, sizeof(q))) {
        fprintf(stderr, CMD ": --query: workload name too long\n");
        return 2;
    }
    snprintf(sql, sizeof(sql),
             "SELECT greptime_timestamp, compute_tflops, memory_bytes FROM tf_worker_usage "
             "WHERE workload = '%s' AND greptime_timestamp >= %lld AND greptime_timestamp <= "
             "%lld ORDER BY greptime_timestamp",
             q, (long long)(o->now - history_ms), (long long)o->now);
    int rc = tf_sql_query(db, sql, on_usage, rows, NULL, err, sizeof(err));
    if (rc) {
        fprintf(stderr, CMD ": %s: %s\n", db, rows->nomem ? "out of memory" : err);
        return rc == TF_ENOENT || rc == TF_EPARSE ? 2 : 1;
    }
    snprintf(sql, sizeof(sql),
             "SELECT tflops_request, tflops_limit, vram_bytes_request, vram_bytes_limit FROM "
             "tf_worker_resources WHERE workload = '%s' AND greptime_timestamp <= %lld ORDER BY "
             "greptime_timestamp DESC LIMIT 1",
             q, (long long)o->now);
    rc = tf_sql_query(db, sql, on_res, res, NULL, err, sizeof(err));
    if (rc) {
        fprintf(stderr, CMD ": %s: %s\n", db, err);
        return 1;
    }
    return 0;
}

/* ---- output ---- */

static json_object *res_json(const struct tf_autoscale_resources *r)
{
    json_object *o = tf_autoscale_resources_to_json(r);
    return o ? o : json_object_new_object();
}

static json_object *est_json(const struct tf_autoscale_estimate *e, bool tflops)
{
    json_object *o = json_object_new_object();
    char b[48];
    const int64_t v[3] = {e->lower, e->target, e->upper};
    const char *k[3] = {"lower", "target", "upper"};
    for (int i = 0; i < 3; i++) {
        if (tflops)
            tf_quantity_format_milli(v[i], b, sizeof(b));
        else
            tf_quantity_format_bytes(v[i], b, sizeof(b));
        json_object_object_add(o, k[i], json_object_new_string(b));
    }
    json_object_object_add(o, "samples", json_object_new_int64((int64_t)e->samples));
    return o;
}

static void print_res(const char *what, const struct tf_autoscale_resources *r)
{
    char a[48], b[48], c[48], d[48];
    tf_quantity_format_milli(r->req_tflops, a, sizeof(a));
    tf_quantity_format_milli(r->lim_tflops, b, sizeof(b));
    tf_quantity_format_bytes(r->req_vram, c, sizeof(c));
    tf_quantity_format_bytes(r->lim_vram, d, sizeof(d));
    printf("%-16s requests %s TFLOPS / %s VRAM, limits %s TFLOPS / %s VRAM\n", what, a, c, b, d);
}

static int run(struct opts *o)
{
    int rc = 2;
    struct wl w = {0};
    json_object *rules_docs = NULL;
    struct tf_usage_sample *samples = NULL;
    size_t nsamples = 0;
    struct rows rows = {0};
    struct tf_tz *z = NULL;
    char err[1024];
    if (o->workload_path && read_workload(o->workload_path, &w))
        goto out;
    json_object *rules = NULL;
    if (o->rules_path) {
        if (tf_planio_manifest(CMD, o->rules_path, &rules_docs))
            goto out;
        json_object *d = json_object_array_get_idx(rules_docs, 0);
        rules = path2(path2(d, "spec", NULL), "verticalScalingRules", NULL);
    }
    struct tf_autoscale_config cfg;
    char matched[TF_AUTOSCALE_NAME_MAX] = "";
    if (tf_autoscale_config_resolve(rules, w.labels, w.own, "spec.autoScalingConfig",
                                    w.annotated || o->enable,
                                    o->target != TF_AUTOSCALE_UNSET ? o->target : w.ann_target,
                                    &cfg, matched, sizeof(matched), err, sizeof(err))) {
        fprintf(stderr, CMD ": %s\n", err);
        goto out;
    }
    struct tf_autoscale_input in = {0};
    in.cfg = &cfg;
    in.original = w.res;
    if ((o->req_s &&
         pair("--requests", o->req_s, &in.original.req_tflops, &in.original.req_vram)) ||
        (o->lim_s && pair("--limits", o->lim_s, &in.original.lim_tflops, &in.original.lim_vram)))
        goto out;
    struct resrow dbres = {0};
    if (o->usage_path) {
        struct tf_dynbuf b;
        if (tf_planio_read(CMD, o->usage_path, &b)) {
            tf_dynbuf_free(&b);
            goto out;
        }
        int prc =
            tf_usage_csv_parse(tf_dynbuf_str(&b), b.len, &samples, &nsamples, err, sizeof(err));
        tf_dynbuf_free(&b);
        if (prc) {
            fprintf(stderr, CMD ": %s: %s\n", o->usage_path, err);
            goto out;
        }
    } else {
        int qrc = query_db(o, cfg.history_ms, &rows, &dbres);
        if (qrc) {
            rc = qrc;
            goto out;
        }
        samples = rows.v;
        nsamples = rows.n;
        rows.v = NULL;
        if (dbres.found && !o->req_s && !o->lim_s && !o->workload_path)
            in.original = dbres.r;
    }
    in.current = dbres.found ? dbres.r : in.original;
    if ((o->creq_s &&
         pair("--current-requests", o->creq_s, &in.current.req_tflops, &in.current.req_vram)) ||
        (o->clim_s &&
         pair("--current-limits", o->clim_s, &in.current.lim_tflops, &in.current.lim_vram)))
        goto out;
    if (!in.original.req_tflops && !in.original.req_vram) {
        fprintf(stderr, CMD ": the workload's requests are unknown: give --workload, "
                            "--requests, or --query with tf_worker_resources rows\n");
        goto out;
    }
    in.samples = samples;
    in.nsamples = nsamples;
    in.now_ms = o->now;
    in.created_ms = o->created != INT64_MIN ? o->created : w.have_created ? w.created : 0;
    if (o->tz && tf_planio_zone(CMD, o->zdir, o->tz, "--timezone", &z))
        goto out;
    in.tz = z;
    struct tf_autoscale_recommendation r;
    int arc = tf_autoscale_recommend(&in, &r, err, sizeof(err));
    if (arc) {
        fprintf(stderr, CMD ": %s\n", err);
        rc = arc == TF_ECONFLICT || arc == TF_EINVAL ? 2 : 1;
        goto out;
    }
    static const char *const src[] = {"none", "percentile", "cron"};
    const char *wname = o->query ? o->query : w.name;
    if (o->json) {
        json_object *j = json_object_new_object();
        json_object_object_add(j, "workload", wname ? json_object_new_string(wname) : NULL);
        json_object_object_add(j, "recommendation", res_json(&r.resources));
        json_object_object_add(j, "changed", json_object_new_boolean(r.changed));
        json_object_object_add(j, "source", json_object_new_string(src[r.source]));
        json_object_object_add(j, "activeCronScalingRule",
                               r.active_rule[0] ? json_object_new_string(r.active_rule) : NULL);
        json_object_object_add(j, "reason", json_object_new_string(r.reason));
        json_object_object_add(j, "matchedRule",
                               matched[0] ? json_object_new_string(matched) : NULL);
        json_object_object_add(j, "confidence", json_object_new_double(r.confidence));
        json_object *e = json_object_new_object();
        json_object_object_add(e, "compute", est_json(&r.compute, true));
        json_object_object_add(e, "vram", est_json(&r.vram, false));
        json_object_object_add(j, "estimates", e);
        json_object_object_add(j, "current", res_json(&in.current));
        printf("%s\n", json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(j);
    } else {
        printf("workload %s: %s (%s)\n", wname ? wname : "(unnamed)",
               r.changed ? "change recommended" : "no change", r.reason);
        print_res("current:", &in.current);
        print_res("recommendation:", &r.resources);
        char a[48], b[48], c[48], d[48], e[48], f[48];
        tf_quantity_format_milli(r.compute.lower, a, sizeof(a));
        tf_quantity_format_milli(r.compute.target, b, sizeof(b));
        tf_quantity_format_milli(r.compute.upper, c, sizeof(c));
        tf_quantity_format_bytes(r.vram.lower, d, sizeof(d));
        tf_quantity_format_bytes(r.vram.target, e, sizeof(e));
        tf_quantity_format_bytes(r.vram.upper, f, sizeof(f));
        printf("estimates:       compute %s / %s / %s TFLOPS (lower/target/upper, %zu samples)\n",
               a, b, c, r.compute.samples);
        printf("                 VRAM %s / %s / %s (%zu samples), confidence %.2f\n", d, e, f,
               r.vram.samples, r.confidence);
        if (r.active_rule[0])
            printf("active cron scaling rule: %s\n", r.active_rule);
        if (matched[0])
            printf("pool rule: %s\n", matched);
    }
    rc = 0;
out:
    tf_tz_destroy(z);
    free(samples);
    free(rows.v);
    json_object_put(w.docs);
    json_object_put(rules_docs);
    return rc;
}

int tf_cmd_plan_autoscale(int argc, char **argv)
{
    static const struct option lopts[] = {
        {"usage", required_argument, NULL, 'u'},
        {"query", required_argument, NULL, 'q'},
        {"db", required_argument, NULL, 'D'},
        {"workload", required_argument, NULL, 'w'},
        {"rules", required_argument, NULL, 'R'},
        {"requests", required_argument, NULL, 'r'},
        {"limits", required_argument, NULL, 'l'},
        {"current-requests", required_argument, NULL, 'C'},
        {"current-limits", required_argument, NULL, 'L'},
        {"created", required_argument, NULL, 'T'},
        {"now", required_argument, NULL, 'N'},
        {"timezone", required_argument, NULL, 'z'},
        {"zoneinfo", required_argument, NULL, 'Z'},
        {"enable", no_argument, NULL, 'e'},
        {"target", required_argument, NULL, 't'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct opts o = {0};
    o.created = INT64_MIN;
    const char *fmt = "table", *now_s = NULL, *created_s = NULL;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "u:q:w:o:h", lopts, NULL)) != -1) {
        switch (c) {
        case 'u':
            o.usage_path = optarg;
            break;
        case 'q':
            o.query = optarg;
            break;
        case 'D':
            o.db = optarg;
            break;
        case 'w':
            o.workload_path = optarg;
            break;
        case 'R':
            o.rules_path = optarg;
            break;
        case 'r':
            o.req_s = optarg;
            break;
        case 'l':
            o.lim_s = optarg;
            break;
        case 'C':
            o.creq_s = optarg;
            break;
        case 'L':
            o.clim_s = optarg;
            break;
        case 'T':
            created_s = optarg;
            break;
        case 'N':
            now_s = optarg;
            break;
        case 'z':
            o.tz = optarg;
            break;
        case 'Z':
            o.zdir = optarg;
            break;
        case 'e':
            o.enable = true;
            break;
        case 't':
            if (tf_autoscale_target_parse(optarg, &o.target) || o.target == TF_AUTOSCALE_UNSET) {
                fprintf(stderr, CMD ": --target: \"%s\": want compute, vram or all\n", optarg);
                return 2;
            }
            break;
        case 'o':
            fmt = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, CMD ": unexpected argument \"%s\"\n", argv[optind]);
        return 2;
    }
    if (!o.usage_path == !o.query) {
        fprintf(stderr, CMD ": give exactly one of --usage and --query\n");
        return 2;
    }
    if (strcmp(fmt, "table") && strcmp(fmt, "json")) {
        fprintf(stderr, CMD ": -o: \"%s\": want table or json\n", fmt);
        return 2;
    }
    o.json = !strcmp(fmt, "json");
    o.now = tf_planio_now();
    if (now_s && tf_planio_time(CMD, "--now", now_s, &o.now))
        return 2;
    if (created_s && tf_planio_time(CMD, "--created", created_s, &o.created))
        return 2;
    return run(&o);
}
