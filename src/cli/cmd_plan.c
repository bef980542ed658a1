/* SPDX-License-Identifier: Apache-2.0
 *
 * `tfctl plan compaction|defrag|autoscale`: runs the efficiency planners of seed 002 offline,
 * on the same code the controller runs.
 *
 *   tfctl plan compaction --cluster CLUSTER.yaml [--state STATE.yaml] [--pool NAME]
 *                         [--now TIME] [--last-run TIME] [--last-manual VALUE] [-o table|json]
 *   tfctl plan defrag     --cluster CLUSTER.yaml [--state STATE.yaml] [--pool NAME]
 *                         [--now TIME] [--started TIME] [--zoneinfo DIR] [-o table|json]
 *   tfctl plan autoscale  (see cmd_plan_autoscale.c)
 *
 * CLUSTER.yaml is a cluster description (core/cluster_yaml.h) whose pools may carry the
 * seed's capacityConfig.warmResources and nodeManagerConfig.{provisioningMode,
 * nodeCompaction} blocks (core/efficiency.h). STATE.yaml holds Kubernetes objects as
 * `kubectl get -o yaml` prints them: Pods (TensorFusion pods are placed on their nodes first),
 * PodDisruptionBudgets, Nodes, GPUNodes and GPUPools (core/plan_state.h). When STATE has no
 * GPUNode at all, every node is taken as a Running GPUNode created long ago.
 *
 * JSON output: {"pools": [...], "warnings": [...]}; each pool object is described in
 * docs/efficiency.md. Exit codes: 0 planned, 2 bad usage or invalid input (message on stderr,
 * nothing on stdout), 1 runtime failure.
 */
#include "cli/cmds.h"
#include "cli/planio.h"

#include "common/err.h"
#include "core/alloc.h"
#include "core/cluster_yaml.h"
#include "core/compaction.h"
#include "core/cron.h"
#include "core/defrag.h"
#include "core/efficiency.h"
#include "core/plan_state.h"
#include "core/quantity.h"
#include "core/timeutil.h"

#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "tfctl plan"

int tf_cmd_plan_autoscale(int argc, char **argv);

static void usage(FILE *f)
{
    fprintf(f, "usage: tfctl plan compaction|defrag --cluster CLUSTER.yaml [--state STATE.yaml]\n"
               "                  [--pool NAME] [--now TIME] [-o table|json]\n"
               "       tfctl plan autoscale --usage USAGE.csv | --query WORKLOAD [options]\n"
               "  -c, --cluster FILE      cluster description with the pools' efficiency settings\n"
               "  -s, --state FILE        Kubernetes objects: Pods, PodDisruptionBudgets, Nodes,\n"
               "                          GPUNodes, GPUPools\n"
               "  -p, --pool NAME         plan one pool (default: every pool)\n"
               "      --now TIME          RFC 3339 time to plan at (default now)\n"
               "  compaction: --last-run TIME      previous periodic run (for the due time)\n"
               "              --last-manual VALUE  manual-compaction value already handled\n"
               "  defrag:     --started TIME       when the run began (default --now)\n"
               "              --zoneinfo DIR       zone database (default /usr/share/zoneinfo)\n"
               "  -o, --output FMT        table (default) or json\n"
               "Run 'tfctl plan autoscale --help' for the autoscale options.\n");
}

struct ctx {
    bool defrag;
    const char *cluster_path, *state_path, *pool, *zdir, *last_manual;
    int64_t now, started, last_run;
    bool json;
    json_object *cluster_docs, *state_docs;
    struct tf_cluster *c;
    struct tf_alloc *a;
    struct tf_plan_state *st;
};

static json_object *jstr(const char *s)
{
    return s ? json_object_new_string(s) : NULL;
}

static json_object *jtime(int64_t ms)
{
    char b[48];
    tf_rfc3339_format(ms, b, sizeof(b));
    return json_object_new_string(b);
}

static void add(json_object *o, const char *k, json_object *v)
{
    json_object_object_add(o, k, v);
}

static json_object *jmilli(int64_t v)
{
    char b[48];
    tf_quantity_format_milli(v, b, sizeof(b));
    return json_object_new_string(b);
}

static json_object *jbytes(int64_t v)
{
    char b[48];
    tf_quantity_format_bytes(v, b, sizeof(b));
    return json_object_new_string(b);
}

static const char *fmt_t(int64_t v, char *b, size_t n)
{
    tf_quantity_format_milli(v, b, n);
    return b;
}

static const char *fmt_v(int64_t v, char *b, size_t n)
{
    tf_quantity_format_bytes(v, b, n);
    return b;
}

static int plan_compaction(struct ctx *x, uint32_t pid, const struct tf_pool_efficiency *pe,
                           json_object *out)
{
    const char *pname = x->c->pools[pid].name;
    struct tf_compaction_node *nodes;
    size_t n;
    if (tf_plan_state_compaction(x->st, pid, &nodes, &n)) {
        fprintf(stderr, CMD ": out of memory\n");
        return 1;
    }
    struct tf_compaction_decision *d = calloc(n ? n : 1, sizeof(*d));
    if (!d) {
        free(nodes);
        fprintf(stderr, CMD ": out of memory\n");
        return 1;
    }
    struct tf_compaction_summary sum;
    size_t nrel = tf_compaction_plan(pe, nodes, n, x->now, d, &sum);
    int64_t next;
    bool due = tf_compaction_due(pe, x->last_run, x->now, &next);
    char why[512];
    const char *mval = tf_plan_state_pool_annotation(x->st, pname, TF_ANN_MANUAL_COMPACTION);
    enum tf_manual_compaction m =
        tf_compaction_manual(mval, x->last_manual, x->now, why, sizeof(why));
    static const char *const mnames[] = {"None",   "Trigger", "Stale",
                                         "Future", "Invalid", "AlreadyHandled"};
    char a[48], b[48], c2[48], e[48];
    if (x->json) {
        json_object *o = json_object_new_object();
        add(o, "pool", jstr(pname));
        add(o, "provisioningMode", jstr(tf_provisioning_mode_name(pe->provisioning)));
        add(o, "action", jstr(tf_compaction_action(pe->provisioning)));
        char per[32];
        tf_duration_format(pe->compaction_period_ms, per, sizeof(per));
        add(o, "period", jstr(per));
        add(o, "periodicRunDue", json_object_new_boolean(due));
        add(o, "nextPeriodicRun", jtime(next));
        json_object *mo = json_object_new_object();
        add(mo, "value", jstr(mval));
        add(mo, "verdict", jstr(mnames[m]));
        add(mo, "message", jstr(why));
        add(o, "manualCompaction", mo);
        json_object *cap = json_object_new_object();
        add(cap, "totalTflops", jmilli(sum.total_tflops_milli));
        add(cap, "totalVram", jbytes(sum.total_vram_bytes));
        add(cap, "availableTflops", jmilli(sum.avail_tflops_milli));
        add(cap, "availableVram", jbytes(sum.avail_vram_bytes));
        add(cap, "afterTotalTflops", jmilli(sum.after_total_tflops_milli));
        add(cap, "afterTotalVram", jbytes(sum.after_total_vram_bytes));
        add(cap, "afterAvailableTflops", jmilli(sum.after_avail_tflops_milli));
        add(cap, "afterAvailableVram", jbytes(sum.after_avail_vram_bytes));
        add(o, "capacity", cap);
        json_object *rel = json_object_new_array(), *all = json_object_new_array();
        for (size_t i = 0; i < n; i++) {
            const char *nn = nodes[d[i].node].name;
            if (d[i].verdict == TF_COMPACT_RELEASE)
                json_object_array_add(rel, jstr(nn));
            json_object *no = json_object_new_object();
            add(no, "node", jstr(nn));
            add(no, "decision", jstr(tf_compaction_verdict_name(d[i].verdict)));
            add(no, "reason", jstr(d[i].reason));
            json_object_array_add(all, no);
        }
        add(o, "release", rel);
        add(o, "nodes", all);
        json_object_array_add(out, o);
    } else {
        printf("pool %s: release %zu of %zu node%s (%s: %s)\n", pname, nrel, n, n == 1 ? "" : "s",
               tf_provisioning_mode_name(pe->provisioning), tf_compaction_action(pe->provisioning));
        printf("  capacity now:   %s TFLOPS / %s total, %s TFLOPS / %s free\n",
               fmt_t(sum.total_tflops_milli, a, sizeof(a)),
               fmt_v(sum.total_vram_bytes, b, sizeof(b)),
               fmt_t(sum.avail_tflops_milli, c2, sizeof(c2)),
               fmt_v(sum.avail_vram_bytes, e, sizeof(e)));
        printf("  capacity after: %s TFLOPS / %s total, %s TFLOPS / %s free\n",
               fmt_t(sum.after_total_tflops_milli, a, sizeof(a)),
               fmt_v(sum.after_total_vram_bytes, b, sizeof(b)),
               fmt_t(sum.after_avail_tflops_milli, c2, sizeof(c2)),
               fmt_v(sum.after_avail_vram_bytes, e, sizeof(e)));
        char nt[48];
        tf_rfc3339_format(next, nt, sizeof(nt));
        printf("  periodic run %s; next %s; manual: %s\n", due ? "due now" : "not due", nt, why);
        printf("  %-24s %-20s %s\n", "NODE", "DECISION", "REASON");
        for (size_t i = 0; i < n; i++)
            printf("  %-24s %-20s %s\n", nodes[d[i].node].name,
                   tf_compaction_verdict_name(d[i].verdict), d[i].reason);
    }
    free(d);
    free(nodes);
    return 0;
}

static int plan_defrag(struct ctx *x, uint32_t pid, const struct tf_pool_efficiency *pe,
                       json_object *out)
{
    const char *pname = x->c->pools[pid].name;
    const struct tf_defrag_config *cfg = &pe->defrag;
    struct tf_tz *z = NULL;
    char key[96];
    snprintf(key, sizeof(key), "pool %s: defrag.timezone", pname);
    if (cfg->timezone[0] && tf_planio_zone(CMD, x->zdir, cfg->timezone, key, &z))
        return 2;
    struct tf_defrag_node *nodes;
    struct tf_defrag_pod *pods;
    size_t nn, np;
    if (tf_plan_state_defrag(x->st, &nodes, &nn, &pods, &np)) {
        tf_tz_destroy(z);
        fprintf(stderr, CMD ": out of memory\n");
        return 1;
    }
    struct tf_defrag_input in = {x->a, pname, cfg, nodes, nn, pods, np, x->now, x->started, false};
    struct tf_defrag_plan p;
    char err[512];
    int rc = tf_defrag_plan(&in, &p, err, sizeof(err));
    free(nodes);
    free(pods);
    if (rc) {
        tf_tz_destroy(z);
        fprintf(stderr, CMD ": pool %s: %s\n", pname, err);
        return 1;
    }
    int64_t next = 0;
    bool have_next = z && tf_cron_next(&cfg->cron, z, x->now, &next) == 0;
    char md[32];
    tf_duration_format(cfg->max_duration_ms, md, sizeof(md));
    if (x->json) {
        json_object *o = json_object_new_object();
        add(o, "pool", jstr(pname));
        add(o, "enabled", json_object_new_boolean(cfg->enabled));
        add(o, "schedule", jstr(cfg->schedule));
        add(o, "timezone", cfg->timezone[0] ? jstr(cfg->timezone) : NULL);
        add(o, "maxDuration", jstr(md));
        add(o, "utilizationThresholdPercent", json_object_new_int(cfg->utilization_threshold_pct));
        add(o, "nextRun", have_next ? jtime(next) : NULL);
        add(o, "deadline", jtime(p.deadline_ms));
        json_object *ev = json_object_new_array();
        for (size_t i = 0; i < p.nevents; i++) {
            json_object *e = json_object_new_object();
            add(e, "type", jstr(p.events[i].type));
            add(e, "reason", jstr(p.events[i].reason));
            add(e, "message", jstr(p.events[i].message));
            json_object_array_add(ev, e);
        }
        add(o, "events", ev);
        json_object *evs = json_object_new_array();
        for (size_t i = 0; i < p.nevictions; i++) {
            json_object *e = json_object_new_object();
            add(e, "namespace", jstr(p.evictions[i].ns));
            add(e, "name", jstr(p.evictions[i].name));
            add(e, "node", jstr(p.evictions[i].node));
            add(e, "simulatedTarget", jstr(p.evictions[i].target));
            json_object_array_add(evs, e);
        }
        add(o, "evictions", evs);
        json_object *ns = json_object_new_array();
        for (size_t i = 0; i < p.nnodes; i++) {
            json_object *e = json_object_new_object();
            add(e, "node", jstr(p.nodes[i].node));
            add(e, "usedGPUs", json_object_new_int((int32_t)p.nodes[i].used_gpus));
            add(e, "gpus", json_object_new_int((int32_t)p.nodes[i].gpus));
            add(e, "status", jstr(tf_defrag_status_name(p.nodes[i].status)));
            add(e, "reason", jstr(p.nodes[i].reason));
            json_object_array_add(ns, e);
        }
        add(o, "nodes", ns);
        json_object_array_add(out, o);
    } else {
        char nt[48] = "-";
        if (have_next)
            tf_rfc3339_format(next, nt, sizeof(nt));
        printf("pool %s: defrag %s, schedule \"%s\" in %s (next %s), maxDuration %s, threshold "
               "%d%%\n",
               pname, cfg->enabled ? "enabled" : "disabled", cfg->schedule,
               cfg->timezone[0] ? cfg->timezone : "(no timezone)", nt, md,
               cfg->utilization_threshold_pct);
        printf("  events:\n");
        for (size_t i = 0; i < p.nevents; i++)
            printf("    %-7s %-21s %s\n", p.events[i].type, p.events[i].reason,
                   p.events[i].message);
        printf("  %-24s %-6s %-14s %s\n", "NODE", "GPUS", "STATUS", "REASON");
        for (size_t i = 0; i < p.nnodes; i++) {
            char g[24];
            snprintf(g, sizeof(g), "%u/%u", p.nodes[i].used_gpus, p.nodes[i].gpus);
            printf("  %-24s %-6s %-14s %s\n", p.nodes[i].node, g,
                   tf_defrag_status_name(p.nodes[i].status), p.nodes[i].reason);
        }
    }
    tf_defrag_plan_free(&p);
    tf_tz_destroy(z);
    return 0;
}

static bool has_kind(json_object *docs, const char *kind)
{
    size_t n = docs ? json_object_array_length(docs) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *k;
        json_object *d = json_object_array_get_idx(docs, i);
        if (json_object_is_type(d, json_type_object) && json_object_object_get_ex(d, "kind", &k) &&
            json_object_is_type(k, json_type_string) && !strcmp(json_object_get_string(k), kind))
            return true;
    }
    return false;
}

static int run(struct ctx *x)
{
    char err[1024];
    if (tf_planio_manifest(CMD, x->cluster_path, &x->cluster_docs))
        return 2;
    json_object *cdoc = json_object_array_get_idx(x->cluster_docs, 0);
    if (json_object_array_length(x->cluster_docs) != 1 || !cdoc) {
        fprintf(stderr, CMD ": %s: expected exactly one cluster description document\n",
                x->cluster_path);
        return 2;
    }
    struct tf_quota_set *q = NULL;
    if (tf_cluster_from_json(cdoc, &x->c, &q, err, sizeof(err))) {
        fprintf(stderr, CMD ": %s: %s\n", x->cluster_path, err);
        return 2;
    }
    tf_quota_set_destroy(q); /* existing pods are accounted whatever their quota says */
    x->a = tf_alloc_new(x->c, NULL);
    if (!x->a) {
        fprintf(stderr, CMD ": out of memory\n");
        return 1;
    }
    if (x->state_path && tf_planio_manifest(CMD, x->state_path, &x->state_docs))
        return 2;
    struct tf_plan_state_opts so = {!has_kind(x->state_docs, "GPUNode"), cdoc};
    if (tf_plan_state_load(x->a, x->state_docs, &so, x->now, &x->st, err, sizeof(err))) {
        fprintf(stderr, CMD ": %s: %s\n", x->state_path ? x->state_path : "state", err);
        return 2;
    }
    json_object *pools = NULL;
    json_object_object_get_ex(cdoc, "pools", &pools);
    /* Parse every pool's settings first: invalid input prints nothing on stdout. */
    size_t np = x->c->npools;
    struct tf_pool_efficiency *pe = calloc(np ? np : 1, sizeof(*pe));
    if (!pe) {
        fprintf(stderr, CMD ": out of memory\n");
        return 1;
    }
    bool found = !x->pool;
    for (uint32_t i = 0; i < np; i++) {
        char path[64];
        snprintf(path, sizeof(path), "pools[%u]", i);
        json_object *po = pools ? json_object_array_get_idx(pools, i) : NULL;
        if (tf_pool_efficiency_parse(po, path, &pe[i], err, sizeof(err))) {
            fprintf(stderr, CMD ": %s: %s\n", x->cluster_path, err);
            free(pe);
            return 2;
        }
        if (x->pool && !strcmp(x->pool, x->c->pools[i].name))
            found = true;
    }
    if (!found) {
        fprintf(stderr, CMD ": --pool %s: no such pool in %s\n", x->pool, x->cluster_path);
        free(pe);
        return 2;
    }
    json_object *out = x->json ? json_object_new_array() : NULL;
    int rc = 0;
    for (uint32_t i = 0; i < np && !rc; i++) {
        if (x->pool && strcmp(x->pool, x->c->pools[i].name))
            continue;
        rc = x->defrag ? plan_defrag(x, i, &pe[i], out) : plan_compaction(x, i, &pe[i], out);
    }
    free(pe);
    size_t nw = tf_plan_state_nwarnings(x->st);
    if (x->json) {
        if (!rc) {
            json_object *top = json_object_new_object(), *w = json_object_new_array();
            add(top, "pools", out);
            for (size_t i = 0; i < nw; i++)
                json_object_array_add(w, jstr(tf_plan_state_warning(x->st, i)));
            add(top, "warnings", w);
            printf("%s\n", json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY |
                                                                   JSON_C_TO_STRING_NOSLASHESCAPE));
            json_object_put(top);
        } else {
            json_object_put(out);
        }
    } else {
        for (size_t i = 0; i < nw; i++)
            fprintf(stderr, CMD ": warning: %s\n", tf_plan_state_warning(x->st, i));
    }
    return rc;
}

int tf_cmd_plan(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "autoscale"))
        return tf_cmd_plan_autoscale(argc - 1, argv + 1);
    struct ctx x = {0};
    if (!strcmp(argv[1], "defrag"))
        x.defrag = true;
    else if (strcmp(argv[1], "compaction")) {
        fprintf(stderr, CMD ": unknown planner \"%s\" (compaction, defrag or autoscale)\n",
                argv[1]);
        return 2;
    }
    static const struct option opts[] = {
        {"cluster", required_argument, NULL, 'c'},
        {"state", required_argument, NULL, 's'},
        {"pool", required_argument, NULL, 'p'},
        {"now", required_argument, NULL, 'N'},
        {"started", required_argument, NULL, 'S'},
        {"last-run", required_argument, NULL, 'L'},
        {"last-manual", required_argument, NULL, 'M'},
        {"zoneinfo", required_argument, NULL, 'Z'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *now_s = NULL, *started_s = NULL, *last_s = NULL, *fmt = "table";
    optind = 1;
    int c;
    while ((c = getopt_long(argc - 1, argv + 1, "c:s:p:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            x.cluster_path = optarg;
            break;
        case 's':
            x.state_path = optarg;
            break;
        case 'p':
            x.pool = optarg;
            break;
        case 'N':
            now_s = optarg;
            break;
        case 'S':
            started_s = optarg;
            break;
        case 'L':
            last_s = optarg;
            break;
        case 'M':
            x.last_manual = optarg;
            break;
        case 'Z':
            x.zdir = optarg;
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
    if (optind != argc - 1) {
        fprintf(stderr, CMD ": unexpected argument \"%s\"\n", argv[1 + optind]);
        return 2;
    }
    if (!x.cluster_path) {
        fprintf(stderr, CMD ": --cluster is required\n");
        return 2;
    }
    if (strcmp(fmt, "table") && strcmp(fmt, "json")) {
        fprintf(stderr, CMD ": -o: \"%s\": want table or json\n", fmt);
        return 2;
    }
    x.json = !strcmp(fmt, "json");
    x.now = tf_planio_now();
    if ((now_s && tf_planio_time(CMD, "--now", now_s, &x.now)) ||
        (last_s && tf_planio_time(CMD, "--last-run", last_s, &x.last_run)))
        return 2;
    x.started = x.now;
    if (started_s && tf_planio_time(CMD, "--started", started_s, &x.started))
        return 2;
    int rc = run(&x);
    tf_plan_state_destroy(x.st);
    tf_alloc_destroy(x.a);
    tf_cluster_destroy(x.c);
    json_object_put(x.cluster_docs);
    json_object_put(x.state_docs);
    return rc;
}
