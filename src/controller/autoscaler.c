/* SPDX-License-Identifier: Apache-2.0
 *
 * Workload autoscaling in the cluster (seed 002 step 2): for every TensorFusionWorkload with
 * autoscaling on, its usage history from GreptimeDB goes through the core recommender; the
 * result is written to .status.recommendation and applied to its pods (allocator reservation
 * and the pods' resource annotations). See efficiency.h and effplan.h.
 */
#include "controller/efficiency_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/quantity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_object *find(json_object *arr, const char *ns, const char *name)
{
    for (size_t i = 0; name && i < json_object_array_length(arr); i++) {
        json_object *o = json_object_array_get_idx(arr, i);
        const char *n = tf_json_str(o, "metadata", "name", NULL);
        const char *s = tf_json_str(o, "metadata", "namespace", NULL);
        if (n && strcmp(n, name) == 0 && (!ns || (s && strcmp(s, ns) == 0)))
            return o;
    }
    return NULL;
}

/* The SchedulingConfigTemplate of the workload's pool, or NULL. */
static json_object *pool_template(struct tf__eff_pass *p, json_object *wl)
{
    json_object *pool = find(p->pools, NULL, tf_json_str(wl, "spec", "poolName", NULL));
    return find(p->templates, NULL, tf_json_str(pool, "spec", "schedulingConfigTemplate", NULL));
}

static const char *fmt_compute(int64_t milli, int32_t bp, char *buf, size_t len)
{
    char q[48];
    tf_quantity_format_milli(bp ? (int64_t)bp * 10 : milli, q, sizeof(q));
    snprintf(buf, len, "%s%s", q, bp ? " %" : " TFLOPS");
    return buf;
}

static const char *fmt_res(const struct tf_autoscale_resources *r, char *buf, size_t len)
{
    char a[64], b[48], c[64], d[48];
    fmt_compute(r->req_tflops, r->req_percent, a, sizeof(a));
    tf_quantity_format_bytes(r->req_vram, b, sizeof(b));
    fmt_compute(r->lim_tflops, r->lim_percent, c, sizeof(c));
    tf_quantity_format_bytes(r->lim_vram, d, sizeof(d));
    snprintf(buf, len, "requests %s / %s, limits %s / %s", a, b, c, d);
    return buf;
}

static bool placed(json_object *pod)
{
    return tf_json_str(pod, "spec", "nodeName", NULL) &&
           tf_json_str(pod, "metadata", "annotations", TF_ANN_GPU_IDS_KEY, NULL);
}

/* Applies R to the workload's pods: allocator first (all or nothing per pod), then the pod's
 * annotations. Returns the number of pods changed. */
static int apply(struct tf_efficiency *e, struct tf_effplan_workload *w,
                 const struct tf_autoscale_resources *r)
{
    int n = 0;
    for (size_t i = 0; i < json_object_array_length(w->pods); i++) {
        json_object *pod = json_object_array_get_idx(w->pods, i);
        json_object *patch = tf_effplan_pod_patch(pod, r, w->compute_by_percent);
        if (!patch)
            continue;
        const char *pn = tf_json_str(pod, "metadata", "name", NULL);
        char err[512];
        int rc = 0;
        if (placed(pod)) {
            rc = tf_extender_resize(e->x, w->ns, pn, r, err, sizeof(err));
            if (rc == TF_ENOENT)
                rc = 0; /* the extender has not restored it yet: its rebuild reads the patch */
        }
        if (rc) {
            tf__eff_event(e, pod, "Warning", "AutoscaleResizeFailed",
                          "recommendation not applied: the GPUs cannot hold it: %s", err);
        } else if ((rc = tf_k8s_merge_patch(e->c, &tf_k8s_pods, w->ns, pn, NULL, patch, NULL, err,
                                            sizeof(err)))) {
            tf_log(TF_LOG_WARN, "efficiency", "cannot patch pod %s/%s: %s", w->ns, pn, err);
        } else {
            e->writes++;
            n++;
        }
        json_object_put(patch);
    }
    return n;
}

/* The autoscaler's ceiling: the smallest room over the workload's placed pods. */
static bool ceiling(struct tf_efficiency *e, struct tf_effplan_workload *w,
                    struct tf_autoscale_resources *c)
{
    bool any = false;
    memset(c, 0, sizeof(*c));
    for (size_t i = 0; i < json_object_array_length(w->pods); i++) {
        json_object *pod = json_object_array_get_idx(w->pods, i);
        int64_t t = 0, v = 0;
        if (!placed(pod) ||
            tf_extender_room(e->x, w->ns, tf_json_str(pod, "metadata", "name", NULL), &t, &v))
            continue;
        if (!any || t < c->req_tflops)
            c->req_tflops = t;
        if (!any || v < c->req_vram)
            c->req_vram = v;
        any = true;
    }
    return any;
}

static void evaluate(struct tf_efficiency *e, struct tf__eff_pass *p, json_object *wl,
                     struct tf_effplan_workload *w)
{
    struct tf_usage_sample *samples = NULL;
    size_t nsamples = 0;
    char err[1024];
    if (e->g && w->cfg.enable &&
        tf_greptime_usage(e->g, w->ns, w->name, p->now_ms - w->cfg.history_ms, p->now_ms, &samples,
                          &nsamples, err, sizeof(err)))
        tf_log(TF_LOG_WARN, "efficiency", "workload %s/%s: no usage history: %s", w->ns, w->name,
               err);
    struct tf_autoscale_resources ceil;
    struct tf_autoscale_input in = {.cfg = &w->cfg,
                                    .original = w->original,
                                    .current = w->current,
                                    .current_from_cron = w->current_from_cron,
                                    .ceiling = ceiling(e, w, &ceil) ? &ceil : NULL,
                                    .samples = samples,
                                    .nsamples = nsamples,
                                    .created_ms = w->created_ms,
                                    .now_ms = p->now_ms,
                                    .compute_by_percent = w->compute_by_percent};
    struct tf_autoscale_recommendation rec;
    int rc = tf_autoscale_recommend(&in, &rec, err, sizeof(err));
    free(samples);
    if (rc) {
        tf__eff_event(e, wl, "Warning", "AutoscaleFailed", "%s", err);
        return;
    }
    tf_log(TF_LOG_DEBUG, "efficiency", "workload %s/%s: %zu samples: %s", w->ns, w->name, nsamples,
           rec.reason);
    /* The status is the workload reconciler's first (workerCount is required): until it has
     * written one, the recommendation waits for the next evaluation. */
    json_object *sp = tf_json_path(wl, "status", "workerCount", NULL)
                          ? tf_effplan_status_patch(wl, &w->cfg, &rec)
                          : NULL;
    if (sp) {
        if (tf_k8s_merge_patch(e->c, &tf_k8s_tfworkloads, w->ns, w->name, "status", sp, NULL, err,
                               sizeof(err)))
            tf_log(TF_LOG_WARN, "efficiency", "workload %s/%s: status not written: %s", w->ns,
                   w->name, err);
        else
            e->writes++;
        json_object_put(sp);
    }
    if (rec.source == TF_AUTOSCALE_SRC_NONE)
        return;
    int n = apply(e, w, &rec.resources);
    if (n) {
        char a[200], b[200];
        tf__eff_event(e, wl, "Normal", "ResourcesScaled", "%d pod%s from %s to %s (%s)", n,
                      n == 1 ? "" : "s", fmt_res(&w->current, a, sizeof(a)),
                      fmt_res(&rec.resources, b, sizeof(b)), rec.reason);
    }
}

void tf__autoscale_pass(struct tf_efficiency *e, struct tf__eff_pass *p)
{
    json_object *seen = json_object_new_object();
    for (size_t i = 0; seen && i < json_object_array_length(p->workloads); i++) {
        json_object *wl = json_object_array_get_idx(p->workloads, i);
        struct tf_effplan_workload w;
        char err[1024], key[400];
        int rc = tf_effplan_workload_read(wl, p->pods, &w, err, sizeof(err));
        if (rc == 0) {
            json_object *prof = w.profile ? find(p->profiles, w.ns, w.profile) : NULL;
            rc = tf_effplan_workload_config(&w, pool_template(p, wl), prof, err, sizeof(err));
        }
        snprintf(key, sizeof(key), "%s/%s", w.ns ? w.ns : "", w.name ? w.name : "");
        json_object *last = NULL;
        json_object_object_get_ex(e->as_last, key, &last);
        int64_t last_ms = last ? json_object_get_int64(last) : 0;
        int64_t every =
            rc == 0 && w.cfg.interval_ms > 0 ? w.cfg.interval_ms : e->o.autoscale_every_ms;
        bool due = !last || p->now_ms - last_ms >= every;
        if (rc == 0 && !tf_effplan_workload_active(&w)) {
            tf_effplan_workload_free(&w);
            continue;
        }
        json_object_object_add(seen, key, json_object_new_int64(due ? p->now_ms : last_ms));
        if (due && rc)
            tf__eff_event(e, wl, "Warning", "AutoscaleFailed", "%s", err);
        else if (due)
            evaluate(e, p, wl, &w);
        tf_effplan_workload_free(&w);
    }
    if (seen) {
        json_object_put(e->as_last);
        e->as_last = seen;
    }
}
