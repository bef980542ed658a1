/* SPDX-License-Identifier: Apache-2.0
 *
 * Efficiency decisions over Kubernetes objects (see effplan.h).
 */
#include "controller/effplan.h"

#include "common/err.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/efficiency.h"
#include "core/quantity.h"
#include "core/spec.h"
#include "core/timeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool terminated(json_object *pod)
{
    const char *phase = tf_json_str(pod, "status", "phase", NULL);
    return tf_json_str(pod, "metadata", "deletionTimestamp", NULL) != NULL ||
           (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0));
}

static bool str_eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* ---- autoscaling ---------------------------------------------------------------------------- */

static bool gpu_pod_of(json_object *pod, const char *ns, const char *name)
{
    if (!str_eq(tf_json_str(pod, "metadata", "namespace", NULL), ns) || terminated(pod))
        return false;
    const char *comp = tf_json_str(pod, "metadata", "labels", TF_KEY_PREFIX "component", NULL);
    if (str_eq(comp, "worker"))
        return str_eq(tf_json_str(pod, "metadata", "labels", TF_KEY_PREFIX "workload", NULL), name);
    if (!str_eq(comp, "client"))
        return false;
    const char *local = tf_json_str(pod, "metadata", "annotations", TF_ANN_IS_LOCAL_GPU, NULL);
    return str_eq(tf_json_str(pod, "metadata", "annotations", TF_ANN_WORKLOAD, NULL), name) &&
           !str_eq(local, "false");
}

/* spec.resources.SIDE of the workload into *T, *V and *BP (compute, or our former spelling
 * computePercent); *PCT when a percent is set. */
static int res_side(json_object *res, const char *side, int64_t *t, int64_t *v, int32_t *bp,
                    bool *pct, char *err, size_t errlen)
{
    json_object *o = tf_json_path(res, side, NULL), *x;
    char key[64];
    if (!o)
        return 0;
    if (json_object_object_get_ex(o, "tflops", &x) && x) {
        snprintf(key, sizeof(key), "spec.resources.%s.tflops", side);
        if (tf_json_quantity_milli(x, t, key, err, errlen))
            return TF_EINVAL;
    }
    if (json_object_object_get_ex(o, "vram", &x) && x) {
        snprintf(key, sizeof(key), "spec.resources.%s.vram", side);
        if (tf_json_quantity_bytes(x, v, key, err, errlen))
            return TF_EINVAL;
    }
    const char *pk = json_object_object_get_ex(o, "compute", &x) && x          ? "compute"
                     : json_object_object_get_ex(o, "computePercent", &x) && x ? "computePercent"
                                                                               : NULL;
    if (pk) {
        snprintf(key, sizeof(key), "spec.resources.%s.%s", side, pk);
        if (tf_json_percent(x, bp, key, err, errlen))
            return TF_EINVAL;
        *pct = true;
    }
    return 0;
}

/* The per-GPU resources of parsed pod spec S. */
static void spec_resources(const struct tf_spec *s, struct tf_autoscale_resources *r)
{
    r->req_tflops = s->requests.tflops_set ? s->requests.tflops_milli : 0;
    r->lim_tflops = s->limits.tflops_set ? s->limits.tflops_milli : 0;
    r->req_vram = s->requests.vram_set ? s->requests.vram_bytes : 0;
    r->lim_vram = s->limits.vram_set ? s->limits.vram_bytes : 0;
    r->req_percent = s->requests.percent_set ? s->requests.percent_bp : 0;
    r->lim_percent = s->limits.percent_set ? s->limits.percent_bp : 0;
}

int tf_effplan_pod_resources(json_object *pod, struct tf_autoscale_resources *r, bool *by_percent)
{
    struct tf_spec s;
    char err[256];
    memset(r, 0, sizeof(*r));
    int rc = tf_spec_parse(pod, NULL, NULL, &s, err, sizeof(err));
    if (rc)
        return rc;
    spec_resources(&s, r);
    if (by_percent)
        *by_percent = s.requests.percent_set || s.limits.percent_set;
    tf_spec_free(&s);
    return 0;
}

/* The name of the workload's status.activeCronScalingRule (the CronScalingRule object the
 * CRD declares; a plain name, as earlier releases wrote it, is read too), or NULL. */
static const char *active_rule_name(json_object *wl)
{
    json_object *r = tf_json_path(wl, "status", TF_STATUS_ACTIVE_CRON_RULE, NULL);
    if (r && json_object_is_type(r, json_type_string))
        return json_object_get_string(r);
    return tf_json_str(r, "name", NULL);
}

int tf_effplan_workload_read(json_object *wl, json_object *pods, struct tf_effplan_workload *out,
                             char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    tf_autoscale_config_init(&out->cfg);
    out->ns = tf_json_str(wl, "metadata", "namespace", NULL);
    out->name = tf_json_str(wl, "metadata", "name", NULL);
    if (!out->ns || !out->name) {
        tf_errf(err, errlen, "TensorFusionWorkload without metadata.name/namespace");
        return TF_EINVAL;
    }
    json_object *res = tf_json_path(wl, "spec", "resources", NULL);
    struct tf_autoscale_resources *o = &out->original;
    if (res_side(res, "requests", &o->req_tflops, &o->req_vram, &o->req_percent,
                 &out->compute_by_percent, err, errlen) ||
        res_side(res, "limits", &o->lim_tflops, &o->lim_vram, &o->lim_percent,
                 &out->compute_by_percent, err, errlen))
        return TF_EINVAL;
    const char *ct = tf_json_str(wl, "metadata", "creationTimestamp", NULL);
    if (ct && tf_rfc3339_parse(ct, &out->created_ms, "metadata.creationTimestamp", err, errlen))
        return TF_EINVAL;
    out->own = tf_json_path(wl, "spec", "autoScalingConfig", NULL);
    out->labels = tf_json_path(wl, "metadata", "labels", NULL);
    if (out->labels && json_object_object_length(out->labels) == 0)
        out->labels = NULL;
    const char *rule = active_rule_name(wl);
    out->current_from_cron = rule && *rule;
    out->current = out->original;
    out->pods = json_object_new_array();
    if (!out->pods) {
        tf_errf(err, errlen, "out of memory");
        return TF_ENOMEM;
    }
    bool first = true;
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
        json_object *pod = json_object_array_get_idx(pods, i);
        if (!gpu_pod_of(pod, out->ns, out->name))
            continue;
        struct tf_spec s;
        char perr[256];
        if (tf_spec_parse(pod, NULL, NULL, &s, perr, sizeof(perr)))
            continue; /* the webhook admitted it; an edited pod we cannot read is left alone */
        json_object_array_add(out->pods, json_object_get(pod));
        if (s.autoscale) {
            out->annotated = true;
            out->ann_target = s.autoscale_target;
        }
        if (first) {
            first = false;
            spec_resources(&s, &out->current);
            if (s.requests.percent_set || s.limits.percent_set)
                out->compute_by_percent = true;
            if (!out->labels)
                out->labels = tf_json_path(pod, "metadata", "labels", NULL);
            out->profile =
                tf_json_str(pod, "metadata", "annotations", TF_ANN_WORKLOAD_PROFILE, NULL);
        }
        tf_spec_free(&s);
    }
    return 0;
}

int tf_effplan_workload_config(struct tf_effplan_workload *w, json_object *tmpl,
                               json_object *profile, char *err, size_t errlen)
{
    json_object *rules = NULL;
    json_object *spec = tf_json_path(tmpl, "spec", NULL);
    if (spec && json_object_object_get_ex(spec, "verticalScalingRules", &rules) &&
        !json_object_is_type(rules, json_type_array))
        rules = NULL;
    json_object *own = w->own;
    const char *path = "spec.autoScalingConfig";
    if (!own && profile) {
        own = tf_json_path(profile, "spec", "autoScalingConfig", NULL);
        path = "WorkloadProfile spec.autoScalingConfig";
    }
    int rc =
        tf_autoscale_config_resolve(rules, w->labels, own, path, w->annotated, w->ann_target,
                                    &w->cfg, w->matched_rule, sizeof(w->matched_rule), err, errlen);
    if (rc)
        return rc;
    if (w->compute_by_percent) {
        if (w->cfg.target == TF_AUTOSCALE_ALL)
            w->cfg.target = TF_AUTOSCALE_VRAM;
        else if (w->cfg.target == TF_AUTOSCALE_COMPUTE)
            w->cfg.enable = false;
    }
    return 0;
}

void tf_effplan_workload_free(struct tf_effplan_workload *w)
{
    if (!w)
        return;
    json_object_put(w->pods);
    w->pods = NULL;
}

bool tf_effplan_workload_active(const struct tf_effplan_workload *w)
{
    if (w->cfg.enable)
        return true;
    for (size_t i = 0; i < w->cfg.nrules; i++)
        if (w->cfg.rules[i].enable)
            return true;
    return w->current_from_cron; /* a rule was removed: go back to the original resources */
}

json_object *tf_effplan_status_patch(json_object *wl, const struct tf_autoscale_config *cfg,
                                     const struct tf_autoscale_recommendation *rec)
{
    json_object *st = json_object_new_object();
    bool changed = false;
    if (rec->compute.samples || rec->vram.samples || rec->source != TF_AUTOSCALE_SRC_NONE) {
        json_object *want = tf_autoscale_resources_to_json(&rec->resources);
        if (!want) {
            json_object_put(st);
            return NULL;
        }
        if (!json_object_equal(tf_json_path(wl, "status", "recommendation", NULL), want))
            changed = true;
        json_object_object_add(st, "recommendation", want);
    }
    const char *cur = active_rule_name(wl);
    if (rec->active_rule[0]) {
        const struct tf_cron_scaling_rule *r = NULL;
        for (size_t i = 0; cfg && i < cfg->nrules && !r; i++)
            if (str_eq(cfg->rules[i].name, rec->active_rule))
                r = &cfg->rules[i];
        json_object *want = r ? tf_autoscale_rule_to_json(r) : NULL;
        if (!want) {
            json_object_put(st);
            return NULL;
        }
        if (!json_object_equal(tf_json_path(wl, "status", TF_STATUS_ACTIVE_CRON_RULE, NULL),
                               want)) {
            json_object_object_add(st, TF_STATUS_ACTIVE_CRON_RULE, want);
            changed = true;
        } else {
            json_object_put(want);
        }
    } else if (cur || tf_json_path(wl, "status", TF_STATUS_ACTIVE_CRON_RULE, NULL)) {
        json_object_object_add(st, TF_STATUS_ACTIVE_CRON_RULE, NULL); /* merge patch: delete */
        changed = true;
    }
    if (!changed) {
        json_object_put(st);
        return NULL;
    }
    json_object *p = json_object_new_object();
    json_object_object_add(p, "status", st);
    return p;
}

json_object *tf_effplan_pod_patch(json_object *pod, const struct tf_autoscale_resources *r,
                                  bool compute_by_percent)
{
    enum { TFLOPS, PERCENT, VRAM };
    struct {
        const char *key;
        int64_t v;
        int unit;
    } want[6] = {{TF_ANN_TFLOPS_REQUEST, r->req_tflops, TFLOPS},
                 {TF_ANN_TFLOPS_LIMIT, r->lim_tflops, TFLOPS},
                 {TF_ANN_PERCENT_REQUEST, r->req_percent, PERCENT},
                 {TF_ANN_PERCENT_LIMIT, r->lim_percent, PERCENT},
                 {TF_ANN_VRAM_REQUEST, r->req_vram, VRAM},
                 {TF_ANN_VRAM_LIMIT, r->lim_vram, VRAM}};
    json_object *anns = NULL;
    for (int i = 0; i < 6; i++) {
        if (!want[i].v || (want[i].unit == TFLOPS && compute_by_percent) ||
            (want[i].unit == PERCENT && !compute_by_percent))
            continue;
        const char *have = tf_json_str(pod, "metadata", "annotations", want[i].key, NULL);
        int64_t hv = -1;
        int32_t bp = -1;
        int rc = !have;
        if (have && want[i].unit == TFLOPS)
            rc = tf_quantity_milli(have, &hv, want[i].key, NULL, 0);
        else if (have && want[i].unit == VRAM)
            rc = tf_quantity_bytes(have, &hv, want[i].key, NULL, 0);
        else if (have && !(rc = tf_percent_parse(have, &bp, want[i].key, NULL, 0)))
            hv = bp;
        if (!rc && hv == want[i].v)
            continue;
        char buf[48];
        if (want[i].unit == VRAM)
            tf_quantity_format_bytes(want[i].v, buf, sizeof(buf));
        else
            tf_quantity_format_milli(want[i].unit == PERCENT ? want[i].v * 10 : want[i].v, buf,
                                     sizeof(buf));
        if (!anns)
            anns = json_object_new_object();
        json_object_object_add(anns, want[i].key, json_object_new_string(buf));
    }
    if (!anns)
        return NULL;
    json_object *p = json_object_new_object(), *meta = json_object_new_object();
    json_object_object_add(meta, "annotations", anns);
    json_object_object_add(p, "metadata", meta);
    return p;
}

/* ---- compaction ----------------------------------------------------------------------------- */

void tf_effplan_mark_released(struct tf_compaction_node *nodes, size_t n, json_object *node_objs)
{
    for (size_t k = 0; node_objs && k < json_object_array_length(node_objs); k++) {
        json_object *o = json_object_array_get_idx(node_objs, k);
        const char *name = tf_json_str(o, "metadata", "name", NULL);
        if (!str_eq(tf_json_str(o, "metadata", "labels", TF_LABEL_SHOULD_DELETE, NULL), "true"))
            continue;
        for (size_t i = 0; i < n; i++)
            if (str_eq(nodes[i].name, name))
                nodes[i].deleting = true;
    }
}

/* ---- defragmentation runs ------------------------------------------------------------------- */

void tf_effplan_defrag_start(struct tf_effplan_defrag_run *r, struct tf_defrag_plan *p,
                             int64_t started_ms)
{
    tf_effplan_defrag_end(r);
    r->active = true;
    r->started_ms = started_ms;
    r->plan = *p;
    memset(p, 0, sizeof(*p));
}

void tf_effplan_defrag_end(struct tf_effplan_defrag_run *r)
{
    if (r->active)
        tf_defrag_plan_free(&r->plan);
    memset(r, 0, sizeof(*r));
}

static json_object *find_pod(json_object *pods, const char *ns, const char *name)
{
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
        json_object *p = json_object_array_get_idx(pods, i);
        if (str_eq(tf_json_str(p, "metadata", "name", NULL), name) &&
            str_eq(tf_json_str(p, "metadata", "namespace", NULL), ns))
            return p;
    }
    return NULL;
}

/* A TensorFusion pod of POOL waiting for a node. */
static bool pool_pod_pending(json_object *pods, const char *pool)
{
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++) {
        json_object *p = json_object_array_get_idx(pods, i);
        if (str_eq(tf_json_str(p, "metadata", "labels", TF_LABEL_ENABLED, NULL), "true") &&
            str_eq(tf_json_str(p, "metadata", "annotations", TF_ANN_GPUPOOL, NULL), pool) &&
            !tf_json_str(p, "spec", "nodeName", NULL) && !terminated(p))
            return true;
    }
    return false;
}

enum tf_effplan_defrag_step tf_effplan_defrag_next(struct tf_effplan_defrag_run *r,
                                                   const struct tf_defrag_config *cfg,
                                                   json_object *pods, const char *pool,
                                                   int64_t now_ms, size_t *idx)
{
    if (!r->active)
        return TF_DEFRAG_STEP_WAIT;
    if (r->waiting) {
        const struct tf_defrag_eviction *e = &r->plan.evictions[r->next - 1];
        json_object *p = find_pod(pods, e->ns, e->name);
        if ((p && !terminated(p)) || pool_pod_pending(pods, pool) ||
            now_ms - r->evicted_at_ms < TF_DEFRAG_SETTLE_MS)
            return tf_defrag_may_continue(cfg, r->started_ms, now_ms) ? TF_DEFRAG_STEP_WAIT
                                                                      : TF_DEFRAG_STEP_DEADLINE;
        r->waiting = false;
    }
    while (r->next < r->plan.nevictions) {
        const struct tf_defrag_eviction *e = &r->plan.evictions[r->next];
        json_object *p = find_pod(pods, e->ns, e->name);
        if (!p || terminated(p) || !str_eq(tf_json_str(p, "spec", "nodeName", NULL), e->node)) {
            r->next++;
            r->skipped++;
            continue;
        }
        if (!tf_defrag_may_continue(cfg, r->started_ms, now_ms))
            return TF_DEFRAG_STEP_DEADLINE;
        *idx = r->next;
        return TF_DEFRAG_STEP_EVICT;
    }
    return TF_DEFRAG_STEP_FINISH;
}

void tf_effplan_defrag_done(struct tf_effplan_defrag_run *r, bool evicted, int64_t now_ms)
{
    if (!r->active || r->next >= r->plan.nevictions)
        return;
    r->next++;
    if (evicted) {
        r->evicted++;
        r->waiting = true;
        r->evicted_at_ms = now_ms;
    } else {
        r->skipped++;
    }
}

const struct tf_defrag_event *tf_effplan_defrag_event(const struct tf_defrag_plan *p, size_t idx)
{
    for (size_t i = 0; i < p->nevents; i++)
        if (p->events[i].kind == TF_DEFRAG_EV_POD_EVICTED && p->events[i].eviction == (int32_t)idx)
            return &p->events[i];
    return NULL;
}
