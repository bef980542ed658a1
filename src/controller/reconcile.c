/* SPDX-License-Identifier: Apache-2.0
 *
 * Reconcilers for the tensor-fusion.ai/v1 objects (see reconcile.h): lifecycle, the helpers
 * the reconcilers share (reconcile_int.h) and the pass.
 */
#include "controller/reconcile_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/webhook.h"
#include "core/partition.h"
#include "core/quantity.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tf_reconciler_set_allocsig(struct tf_reconciler *r, const struct tf_allocsig *sig)
{
    r->sig = sig;
}

void tf_reconciler_set_podidx(struct tf_reconciler *r, struct tf_ctl_podidx *podidx)
{
    r->podidx = podidx;
}

void tf_reconciler_set_static_policy(struct tf_reconciler *r, bool is_static)
{
    r->static_policy = is_static;
}

struct tf_reconciler *tf_reconciler_new(struct tf_k8s_client *c,
                                        const struct tf_reconcile_sources *src,
                                        const char *default_pool, const char *worker_image,
                                        const char *shm_host_dir)
{
    struct tf_reconciler *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->c = c;
    r->src = *src;
    r->default_pool = strdup(default_pool ? default_pool : "default-pool");
    r->worker_image = strdup(worker_image ? worker_image : "tensorfusion/tf-worker:latest");
    r->shm_host_dir = strdup(shm_host_dir ? shm_host_dir : "/run/tensor-fusion/shm");
    r->prov_notes = json_object_new_object();
    if (!r->default_pool || !r->worker_image || !r->shm_host_dir || !r->prov_notes) {
        tf_reconciler_destroy(r);
        return NULL;
    }
    return r;
}

void tf_reconciler_destroy(struct tf_reconciler *r)
{
    if (!r)
        return;
    free(r->default_pool);
    free(r->worker_image);
    free(r->shm_host_dir);
    json_object_put(r->prov_notes);
    free(r);
}

/* ---- helpers ------------------------------------------------------------------------------ */

const char *tf__rc_ann(json_object *o, const char *key)
{
    return tf_json_str(o, "metadata", "annotations", key, NULL);
}

const char *tf__rc_lbl(json_object *o, const char *key)
{
    return tf_json_str(o, "metadata", "labels", key, NULL);
}

bool tf__rc_pod_active(json_object *pod)
{
    const char *phase = tf_json_str(pod, "status", "phase", NULL);
    if (tf_json_path(pod, "metadata", "deletionTimestamp", NULL))
        return false;
    return !phase || (strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0);
}

bool tf__rc_pod_ready(json_object *pod)
{
    const char *phase = tf_json_str(pod, "status", "phase", NULL);
    if (!phase || strcmp(phase, "Running") != 0)
        return false;
    json_object *conds = tf_json_path(pod, "status", "conditions", NULL);
    for (size_t i = 0; conds && i < json_object_array_length(conds); i++) {
        json_object *c = json_object_array_get_idx(conds, i);
        const char *t = tf_json_str(c, "type", NULL), *s = tf_json_str(c, "status", NULL);
        if (t && s && strcmp(t, "Ready") == 0)
            return strcmp(s, "True") == 0;
    }
    return true; /* Running without conditions (no probes reported yet) */
}

int64_t tf__rc_q_milli(const char *s)
{
    int64_t v = 0;
    return s && tf_quantity_milli(s, &v, "", NULL, 0) == 0 ? v : 0;
}

int64_t tf__rc_q_bytes(const char *s)
{
    int64_t v = 0;
    return s && tf_quantity_bytes(s, &v, "", NULL, 0) == 0 ? v : 0;
}

json_object *tf__rc_q_obj(int64_t milli, int64_t bytes)
{
    char a[48], b[48];
    tf_quantity_format_milli(milli, a, sizeof(a));
    tf_quantity_format_bytes(bytes, b, sizeof(b));
    json_object *o = json_object_new_object();
    json_object_object_add(o, "tflops", json_object_new_string(a));
    json_object_object_add(o, "vram", json_object_new_string(b));
    return o;
}

/* Merge-patches STATUS into OBJ's status subresource when it differs. */
void tf__rc_put_status(struct tf_reconciler *r, const struct tf_k8s_resource *res, json_object *obj,
                       json_object *status)
{
    json_object *cur = tf_json_path(obj, "status", NULL);
    bool same = cur != NULL;
    if (same) {
        json_object_object_foreach(status, k, v)
        {
            json_object *old = NULL;
            if (!json_object_object_get_ex(cur, k, &old) || !json_object_equal(old, v)) {
                same = false;
                break;
            }
        }
    }
    if (!same) {
        json_object *p = json_object_new_object();
        json_object_object_add(p, "status", json_object_get(status));
        char err[256];
        const char *ns = tf_json_str(obj, "metadata", "namespace", NULL);
        const char *name = tf_json_str(obj, "metadata", "name", NULL);
        if (tf_k8s_merge_patch(r->c, res, ns, name, "status", p, NULL, err, sizeof(err)))
            tf_log(TF_LOG_WARN, "reconcile", "status update failed kind=%s name=%s err=%s",
                   res->kind, name, err);
        else
            r->writes++;
        json_object_put(p);
    }
    json_object_put(status);
}

void tf__rc_event(struct tf_reconciler *r, json_object *obj, const char *type, const char *reason,
                  const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    tf_log(TF_LOG_INFO, "reconcile", "%s: %s", reason, msg);
    tf_k8s_event(r->c, obj, type, reason, msg, "tf-controller");
}

/* Per-GPU request of a pod from its normalised annotations (whole GPU when shared). */
/* The template TPL of GPU model MODEL (status.gpuModel, with VRAM CAP_V) in its built-in
 * profile, or NULL. */
static bool template_of(const char *model, int64_t cap_v, const char *tpl,
                        struct tf_partition_template *out)
{
    const struct tf_gpu_model *m = model ? tf_gpu_model_find(model) : NULL;
    if (!m && model)
        m = tf_gpu_model_from_nvml(model, cap_v);
    struct tf_partition_profile pp;
    if (!m || !tpl || tf_partition_builtin(m, &pp))
        return false;
    for (unsigned i = 0; i < pp.ntemplates; i++)
        if (strcmp(pp.templates[i].id, tpl) == 0) {
            *out = pp.templates[i];
            return true;
        }
    return false;
}

void tf__rc_pod_share(json_object *pod, const char *model, int64_t cap_t, int64_t cap_v, int64_t *t,
                      int64_t *v)
{
    const char *iso = tf__rc_ann(pod, TF_ANN_ISOLATION);
    if (iso && strcmp(iso, "shared") == 0) {
        *t = cap_t;
        *v = cap_v;
        return;
    }
    struct tf_partition_template pt;
    if (iso && strcmp(iso, "partitioned") == 0 &&
        template_of(model, cap_v, tf__rc_ann(pod, TF_ANN_PARTITION), &pt)) {
        *t = pt.tflops_milli; /* the partition exists on the device, whatever was requested */
        *v = pt.vram_bytes;
        return;
    }
    *t = tf__rc_q_milli(tf__rc_ann(pod, TF_ANN_TFLOPS_REQUEST));
    const char *pct = tf__rc_ann(pod, TF_ANN_PERCENT_REQUEST);
    if (!*t && pct) {
        int32_t bp = 0;
        if (tf_percent_parse(pct, &bp, "", NULL, 0) == 0)
            *t = cap_t * bp / 10000;
    }
    *v = tf__rc_q_bytes(tf__rc_ann(pod, TF_ANN_VRAM_REQUEST));
}

const char *tf__rc_pod_uid(json_object *pod)
{
    const char *u = tf_json_str(pod, "metadata", "uid", NULL);
    return u ? u : "";
}

bool tf__rc_list_has(const char *list, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        while (len && *p == ' ') {
            p++;
            len--;
        }
        if (len == n && strncmp(p, item, n) == 0)
            return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

int tf_reconcile_once(struct tf_reconciler *r)
{
    struct tf_informer *all[] = {r->src.pods,        r->src.clusters, r->src.pools,
                                 r->src.gpus,        r->src.gpunodes, r->src.workloads,
                                 r->src.connections, r->src.quotas,   r->src.claims,
                                 r->src.nodeclasses, r->src.nodes,    r->src.leases};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i] && !tf_informer_synced(all[i]))
            return TF_EBUSY;
    r->writes = 0;
    json_object *pods = tf_informer_snapshot(r->src.pods);
    tf__rc_infra(r, pods);
    tf__rc_workloads(r, pods);
    tf__rc_connections(r, pods);
    tf__rc_quotas(r, pods);
    tf__rc_provision(r);
    json_object_put(pods);
    return r->writes;
}
