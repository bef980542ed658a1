/* SPDX-License-Identifier: Apache-2.0
 *
 * Pod mutating webhook (see webhook.h): scope checks, spec resolution and the review with its
 * JSONPatch answer. The configuration is in webhook_config.c, the pod-spec edits of each
 * isolation mode in webhook_inject.c, defaults in webhook_defaults.c.
 */
#include "controller/webhook.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/jsonpatch.h"
#include "controller/webhook_int.h"
#include "core/defaults.h"
#include "controller/sysguard.h"
#include "core/selector.h"
#include "core/quantity.h"
#include "core/podindex.h"
#include "core/selector.h"
#include "tf/shm.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MEMO_WINDOW_S 30

/* ---- spec resolution ---------------------------------------------------------------------- */

static void percent_text(int32_t bp, char *buf, size_t len)
{
    if (bp % 100 == 0)
        snprintf(buf, len, "%d", bp / 100);
    else if (bp % 10 == 0)
        snprintf(buf, len, "%d.%d", bp / 100, (bp % 100) / 10);
    else
        snprintf(buf, len, "%d.%02d", bp / 100, bp % 100);
}

static void res_annotations(json_object *ann, const struct tf_spec_res *r, const char *tfl,
                            const char *pct, const char *vram)
{
    char buf[64];
    if (r->tflops_set) {
        tf_quantity_format_milli(r->tflops_milli, buf, sizeof(buf));
        tf__wh_set_str(ann, tfl, buf);
        json_object_object_del(ann, pct);
    } else if (r->percent_set) {
        percent_text(r->percent_bp, buf, sizeof(buf));
        tf__wh_set_str(ann, pct, buf);
        json_object_object_del(ann, tfl);
    }
    if (r->vram_set) {
        tf_quantity_format_bytes(r->vram_bytes, buf, sizeof(buf));
        tf__wh_set_str(ann, vram, buf);
    }
}

/* "Kind/name" of the pod's controlling owner, following a ReplicaSet up to its Deployment. */
static bool owner_key(struct tf_webhook *wh, json_object *pod, const char *ns, char *buf,
                      size_t len)
{
    json_object *refs = tf_json_array(pod, "metadata", "ownerReferences", NULL);
    for (size_t i = 0; refs && i < json_object_array_length(refs); i++) {
        json_object *r = json_object_array_get_idx(refs, i);
        if (!tf_json_true(r, "controller", NULL))
            continue;
        const char *kind = tf_json_str(r, "kind", NULL), *name = tf_json_str(r, "name", NULL);
        if (!kind || !name)
            return false;
        snprintf(buf, len, "%s/%s", kind, name);
        if (strcmp(kind, "ReplicaSet") == 0 && wh->env.get_owner) {
            json_object *rs = wh->env.get_owner(wh->env.arg, ns, kind, name);
            json_object *up = tf_json_array(rs, "metadata", "ownerReferences", NULL);
            for (size_t j = 0; up && j < json_object_array_length(up); j++) {
                json_object *u = json_object_array_get_idx(up, j);
                const char *uk = tf_json_str(u, "kind", NULL), *un = tf_json_str(u, "name", NULL);
                if (tf_json_true(u, "controller", NULL) && uk && un)
                    snprintf(buf, len, "%s/%s", uk, un);
            }
            json_object_put(rs);
        }
        return true;
    }
    return false;
}

/* Takes over one more pod of OWNER if fewer than LIMIT are (cache + recent admissions). */
static bool owner_slot(struct tf_webhook *wh, const char *ns, const char *owner, int limit,
                       bool dry_run, int *have)
{
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", ns, owner);
    int cached = wh->env.count_owner_pods ? wh->env.count_owner_pods(wh->env.arg, ns, owner) : 0;
    pthread_mutex_lock(&wh->memo_lock);
    json_object *times = NULL;
    if (!json_object_object_get_ex(wh->memo, key, &times)) {
        times = json_object_new_array();
        json_object_object_add(wh->memo, key, times);
    }
    long now = (long)time(NULL);
    json_object *fresh = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(times); i++) {
        long t = (long)json_object_get_int64(json_object_array_get_idx(times, i));
        if (now - t < MEMO_WINDOW_S)
            json_object_array_add(fresh, json_object_new_int64(t));
    }
    int recent = (int)json_object_array_length(fresh);
    int count = cached > recent ? cached : recent;
    bool ok = count < limit;
    if (ok && !dry_run)
        json_object_array_add(fresh, json_object_new_int64(now));
    json_object_object_add(wh->memo, key, fresh);
    pthread_mutex_unlock(&wh->memo_lock);
    *have = count;
    return ok;
}

/* Event on the owner ("Deployment/web") saying why a pod was left alone. */
static void owner_event(struct tf_webhook *wh, const char *ns, const char *owner, int have,
                        int limit)
{
    char kind[64], msg[512];
    const char *slash = strchr(owner, '/');
    snprintf(kind, sizeof(kind), "%.*s", (int)(slash ? slash - owner : 0), owner);
    json_object *inv = json_object_new_object(), *m = json_object_new_object();
    tf__wh_set_str(inv, "kind", kind);
    tf__wh_set_str(inv, "apiVersion", strcmp(kind, "Job") == 0 ? "batch/v1" : "apps/v1");
    tf__wh_set_str(m, "name", slash ? slash + 1 : owner);
    tf__wh_set_str(m, "namespace", ns);
    json_object_object_add(inv, "metadata", m);
    snprintf(msg, sizeof(msg),
             "%d pod(s) already use TensorFusion (%s: %d): new pod admitted unmodified", have,
             TF_ANN_ENABLED_REPLICAS, limit);
    wh->env.record_event(wh->env.arg, inv, "Normal", "EnabledReplicasReached", msg);
    json_object_put(inv);
}

static void warn(struct tf_webhook_result *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn(struct tf_webhook_result *out, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (!out->warnings)
        out->warnings = json_object_new_array();
    json_object_array_add(out->warnings, json_object_new_string(buf));
}

/* A PriorityClass's value when WH's environment knows class NAME (*PC then owns it). */
static bool priority_class(struct tf_webhook *wh, const char *name, json_object **pc,
                           int32_t *value)
{
    *pc = wh->env.get_priority_class ? wh->env.get_priority_class(wh->env.arg, name) : NULL;
    json_object *v;
    if (*pc && json_object_object_get_ex(*pc, "value", &v) &&
        json_object_is_type(v, json_type_int)) {
        int64_t x = json_object_get_int64(v);
        if (x >= INT32_MIN && x <= INT32_MAX) {
            *value = (int32_t)x;
            return true;
        }
    }
    json_object_put(*pc);
    *pc = NULL;
    return false;
}

/* Seed 000: a high or critical pod that names no PriorityClass of its own gets the configured
 * one. A pod carrying the cluster's globalDefault class counts as naming none: the apiserver's
 * Priority admission plugin filled it in. That plugin runs before mutating webhooks and has
 * already resolved the pod's priority, so the class's value (and its preemption policy) are
 * written as well; the scheduler goes by them. */
static void qos_priority(struct tf_webhook *wh, enum tf_qos qos, json_object *spec,
                         struct tf_webhook_result *out)
{
    const char *cls = qos == TF_QOS_CRITICAL ? wh->cfg.priority_class_critical
                      : qos == TF_QOS_HIGH   ? wh->cfg.priority_class_high
                                             : NULL;
    if (!cls || !*cls)
        return;
    const char *own = tf_json_str(spec, "priorityClassName", NULL);
    json_object *pc;
    int32_t value;
    if (own && *own) {
        if (strcmp(own, cls) == 0 || !priority_class(wh, own, &pc, &value))
            return;
        bool by_default = tf_json_true(pc, "globalDefault", NULL);
        json_object_put(pc);
        if (!by_default)
            return;
    }
    if (!priority_class(wh, cls, &pc, &value)) {
        warn(out, "%s %s: PriorityClass %s does not exist; the pod keeps its priority", TF_ANN_QOS,
             tf_qos_name(qos), cls);
        return;
    }
    tf__wh_set_str(spec, "priorityClassName", cls);
    json_object_object_add(spec, "priority", json_object_new_int(value));
    const char *policy = tf_json_str(pc, "preemptionPolicy", NULL);
    if (policy)
        tf__wh_set_str(spec, "preemptionPolicy", policy);
    json_object_put(pc);
}

static void deny(struct tf_webhook_result *out, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void deny(struct tf_webhook_result *out, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof(out->message), fmt, ap);
    va_end(ap);
    out->allowed = false;
    out->code = code;
}

/* The TensorFusionWorkload object for SPEC. */
static json_object *workload_object(const struct tf_spec *s, const char *ns, const char *name,
                                    const char *pool)
{
    char buf[64];
    json_object *w = json_object_new_object(), *meta = json_object_new_object(),
                *spec = json_object_new_object(), *res = json_object_new_object();
    tf__wh_set_str(w, "apiVersion", "tensor-fusion.ai/v1");
    tf__wh_set_str(w, "kind", "TensorFusionWorkload");
    tf__wh_set_str(meta, "name", name);
    tf__wh_set_str(meta, "namespace", ns);
    json_object_object_add(w, "metadata", meta);
    tf__wh_set_str(spec, "poolName", pool);
    const struct tf_spec_res *sides[2] = {&s->requests, &s->limits};
    const char *names[2] = {"requests", "limits"};
    for (int i = 0; i < 2; i++) {
        json_object *side = json_object_new_object();
        if (sides[i]->tflops_set) {
            tf_quantity_format_milli(sides[i]->tflops_milli, buf, sizeof(buf));
            tf__wh_set_str(side, "tflops", buf);
        }
        if (sides[i]->percent_set) {
            percent_text(sides[i]->percent_bp, buf, sizeof(buf));
            tf__wh_set_str(side, "compute", buf); /* upstream's field (readers also take ours) */
        }
        if (sides[i]->vram_set) {
            tf_quantity_format_bytes(sides[i]->vram_bytes, buf, sizeof(buf));
            tf__wh_set_str(side, "vram", buf);
        }
        json_object_object_add(res, names[i], side);
    }
    json_object_object_add(spec, "resources", res);
    tf__wh_set_str(spec, "qos", tf_qos_name(s->qos));
    tf__wh_set_str(spec, "isolation", tf_isolation_name(s->isolation));
    json_object_object_add(spec, "gpuCount", json_object_new_int(s->gpu_count));
    json_object_object_add(spec, "isLocalGPU", json_object_new_boolean(s->is_local_gpu));
    if (s->has_worker_replicas && !s->is_local_gpu)
        json_object_object_add(spec, "replicas", json_object_new_int(s->worker_replicas));
    if (s->gpu_model)
        tf__wh_set_str(spec, "gpuModel", s->gpu_model);
    if (s->vendor)
        tf__wh_set_str(spec, "vendor", s->vendor);
    json_object_object_add(w, "spec", spec);
    return w;
}

/* Workload name: the annotation, else the top owner's name, else the pod's (generate)name. */
static void workload_name(const struct tf_spec *s, json_object *pod, const char *owner, char *buf,
                          size_t len)
{
    if (s->workload) {
        snprintf(buf, len, "%s", s->workload);
        return;
    }
    if (owner) {
        const char *slash = strchr(owner, '/');
        snprintf(buf, len, "%s", slash ? slash + 1 : owner);
        return;
    }
    const char *n = tf_json_str(pod, "metadata", "name", NULL);
    if (!n || !*n)
        n = tf_json_str(pod, "metadata", "generateName", NULL);
    snprintf(buf, len, "%s", n && *n ? n : "workload");
    size_t l = strlen(buf);
    while (l && (buf[l - 1] == '-' || buf[l - 1] == '.'))
        buf[--l] = '\0';
}

/* ---- review ------------------------------------------------------------------------------- */

static void review_create(struct tf_webhook *wh, const struct tf_admission_req *req,
                          struct tf_webhook_result *out)
{
    memset(out, 0, sizeof(*out));
    out->allowed = true;
    if (strcmp(req->kind, "Pod") != 0 || strcmp(req->operation, "CREATE") != 0 || !req->object)
        return;
    json_object *pod = req->object;
    const char *ns = req->namespace && *req->namespace
                         ? req->namespace
                         : tf_json_str(pod, "metadata", "namespace", NULL);
    if (!ns || !*ns)
        ns = "default";
    if (wh->cfg.own_namespace && strcmp(ns, wh->cfg.own_namespace) == 0)
        return; /* never mutate ourselves (the hypervisor, the controller) */
    const char *label = tf_json_str(pod, "metadata", "labels", TF_LABEL_ENABLED, NULL);
    if (label && strcmp(label, "false") == 0)
        return;
    const char *comp = tf_json_str(pod, "metadata", "labels", TF_LABEL_COMPONENT, NULL);
    if (comp && strcmp(comp, "worker") == 0)
        return; /* remote workers are built complete by the controller */
    bool enabled = label && strcmp(label, "true") == 0;
    struct tf_pool_defaults pd;
    memset(&pd, 0, sizeof(pd));
    /* The ProviderConfigs' native GPU resources (default: NVIDIA's). */
    json_object *providers = wh->env.list_providers ? wh->env.list_providers(wh->env.arg) : NULL;
    struct tf_native_resource *native = NULL;
    size_t nnative = 0;
    if (tf_defaults_native(providers, &native, &nnative)) {
        json_object_put(providers);
        deny(out, 500, "out of memory");
        return;
    }
    json_object_put(providers);
    pd.native = native;
    pd.nnative = nnative;
    if (!enabled) {
        if (!wh->cfg.auto_migration.enable ||
            !tf__wh_has_native_gpus(pod, native ? native : tf_native_resources_default,
                                    native ? nnative : 2)) {
            tf_defaults_native_free(native, nnative);
            return;
        }
        json_object *nso = wh->env.get_namespace ? wh->env.get_namespace(wh->env.arg, ns) : NULL;
        bool in = tf_automigration_in_scope(&wh->cfg.auto_migration, ns, nso, pod);
        json_object_put(nso);
        if (!in) {
            tf_defaults_native_free(native, nnative);
            return;
        }
        pd.auto_migration = true;
    }

    char err[1024] = "";
    struct tf_profile prof;
    bool have_prof = false;
    struct tf_spec s;
    tf_spec_init(&s);
    json_object *mut = NULL, *pool_obj = NULL, *quotas = NULL;
    const char *prof_name =
        tf_json_str(pod, "metadata", "annotations", TF_ANN_WORKLOAD_PROFILE, NULL);
    memset(&prof, 0, sizeof(prof));
    if (prof_name) {
        json_object *pj =
            wh->env.get_profile ? wh->env.get_profile(wh->env.arg, ns, prof_name) : NULL;
        if (!pj) {
            deny(out, 400, "%s: WorkloadProfile \"%s\" not found in namespace %s",
                 TF_ANN_WORKLOAD_PROFILE, prof_name, ns);
            goto done;
        }
        int rc = tf_profile_parse(pj, &prof, err, sizeof(err));
        json_object_put(pj);
        if (rc) {
            deny(out, 400, "%s", err);
            goto done;
        }
        have_prof = true;
    }
    const char *pool = tf_json_str(pod, "metadata", "annotations", TF_ANN_GPUPOOL, NULL);
    if (!pool && have_prof && prof.pool)
        pool = prof.pool;
    if (pool)
        pool_obj = wh->env.get_pool ? wh->env.get_pool(wh->env.arg, pool) : NULL;
    else
        pool_obj = tf__wh_default_pool(wh, &pool);
    if (!pool_obj) {
        deny(out, 400, "%s: GPUPool \"%s\" does not exist", TF_ANN_GPUPOOL, pool);
        goto done;
    }
    tf_defaults_from_pool(pool_obj, &pd);
    pd.pool_name = pool;
    /* The namespace's first GPUResourceQuota fills the defaults (upstream's order). */
    quotas = wh->env.list_quotas ? wh->env.list_quotas(wh->env.arg, ns) : NULL;
    if (json_object_is_type(quotas, json_type_array) && json_object_array_length(quotas) &&
        tf_defaults_from_quota(json_object_array_get_idx(quotas, 0), &pd, err, sizeof(err))) {
        deny(out, 400, "%s", err);
        goto done;
    }
    int rc = tf_spec_parse(pod, have_prof ? &prof : NULL, &pd, &s, err, sizeof(err));
    if (rc) {
        deny(out, rc == TF_ENOMEM ? 500 : 400, "%s", err);
        goto done;
    }
    for (size_t i = 0; i < s.nwarnings; i++)
        warn(out, "%s", s.warnings[i]);
    if (!s.enabled)
        goto done;
    char owner[600] = "";
    bool has_owner = owner_key(wh, pod, ns, owner, sizeof(owner));
    if (s.has_enabled_replicas && has_owner) {
        int have = 0;
        if (!owner_slot(wh, ns, owner, s.enabled_replicas, req->dry_run, &have)) {
            warn(out,
                 "%s: %d of %s's pods already use TensorFusion (limit %d); admitted "
                 "unmodified",
                 TF_ANN_ENABLED_REPLICAS, have, owner, s.enabled_replicas);
            if (wh->env.record_event && !req->dry_run)
                owner_event(wh, ns, owner, have, s.enabled_replicas);
            goto done;
        }
    }

    /* Mutate a copy; the patch is the difference. */
    if (json_object_deep_copy(pod, &mut, NULL)) {
        deny(out, 500, "out of memory");
        goto done;
    }
    json_object *meta = tf__wh_child_obj(mut, "metadata");
    json_object *labels = tf__wh_child_obj(meta, "labels");
    json_object *ann = tf__wh_child_obj(meta, "annotations");
    json_object *spec = tf__wh_child_obj(mut, "spec");
    tf__wh_set_str(labels, TF_LABEL_ENABLED, "true");
    tf__wh_set_str(labels, TF_LABEL_COMPONENT, "client");
    const char *final_pool = s.pool ? s.pool : pool;
    char wname[300], buf[64];
    workload_name(&s, pod, has_owner ? owner : NULL, wname, sizeof(wname));
    tf__wh_set_str(ann, TF_ANN_GPUPOOL, final_pool);
    tf__wh_set_str(ann, TF_ANN_ISOLATION, tf_isolation_name(s.isolation));
    tf__wh_set_str(ann, TF_ANN_QOS, tf_qos_name(s.qos));
    snprintf(buf, sizeof(buf), "%d", s.gpu_count);
    tf__wh_set_str(ann, TF_ANN_GPU_COUNT, buf);
    tf__wh_set_str(ann, TF_ANN_IS_LOCAL_GPU, s.is_local_gpu ? "true" : "false");
    tf__wh_set_str(ann, TF_ANN_WORKLOAD, wname);
    if (has_owner)
        tf__wh_set_str(ann, TF_ANN_OWNER, owner);
    if (s.gpu_model)
        tf__wh_set_str(ann, TF_ANN_GPU_MODEL, s.gpu_model);
    if (s.vendor)
        tf__wh_set_str(ann, TF_ANN_VENDOR, s.vendor);
    res_annotations(ann, &s.requests, TF_ANN_TFLOPS_REQUEST, TF_ANN_PERCENT_REQUEST,
                    TF_ANN_VRAM_REQUEST);
    res_annotations(ann, &s.limits, TF_ANN_TFLOPS_LIMIT, TF_ANN_PERCENT_LIMIT, TF_ANN_VRAM_LIMIT);
    if (s.ninject_containers) {
        char list[1024] = "";
        for (size_t i = 0; i < s.ninject_containers; i++) {
            if (i)
                strncat(list, ",", sizeof(list) - strlen(list) - 1);
            strncat(list, s.inject_containers[i], sizeof(list) - strlen(list) - 1);
        }
        tf__wh_set_str(ann, TF_ANN_INJECT_CONTAINER, list);
    }
    bool split = tf_spec_split(&s);
    if (split) {
        json_object *m = json_object_new_object();
        for (size_t i = 0; i < s.ncontainers; i++)
            json_object_object_add(m, s.containers[i].name,
                                   json_object_new_int(s.containers[i].gpu_count));
        tf__wh_set_str(ann, TF_ANN_CONTAINER_GPU_COUNT,
                       json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN));
        json_object_put(m);
    }
    if (s.gang &&
        !tf__wh_gang_annotations(wh, &s, have_prof ? &prof : NULL, pod, ns, wname, ann, out))
        goto done;
    tf__wh_set_str(spec, "schedulerName", TF_SCHEDULER_NAME);
    qos_priority(wh, s.qos, spec, out);

    /* Migrated containers drop nvidia.com/gpu; local modes request vGPU slots on the app;
     * partitioned ones also their pod index, which names their MIG device in Allocate. */
    bool remote = !s.is_local_gpu;
    bool hard_local = s.is_local_gpu && s.isolation == TF_ISOLATION_HARD;
    bool indexed = !remote && s.isolation == TF_ISOLATION_PARTITIONED && wh->env.take_index;
    int pidx = 0;
    if (indexed && !req->dry_run) {
        char ierr[256] = "";
        pidx = wh->env.take_index(wh->env.arg, ierr, sizeof(ierr));
        if (pidx < 0) {
            deny(out, 503, "no pod index for a partitioned pod: %s", ierr);
            goto done;
        }
        snprintf(buf, sizeof(buf), "%d", pidx);
        tf__wh_set_str(ann, TF_PODIDX_ANNOTATION, buf);
    }
    for (size_t i = 0; i < s.ncontainers; i++) {
        json_object *c = tf__wh_container_named(spec, s.containers[i].name);
        if (!c)
            continue;
        if (s.containers[i].migrated)
            tf__wh_drop_native_gpu(c, &s.containers[i]);
        if (!remote && !hard_local)
            tf__wh_set_limit(c, TF_RESOURCE_VGPU, s.containers[i].gpu_count);
        if (pidx > 0)
            tf__wh_index_limit(c, pidx);
        else if (!remote && !hard_local && !indexed)
            tf__wh_visible_devices(c, split ? s.containers[i].name : NULL);
    }
    if (remote)
        tf__wh_inject_client(wh, spec, &s, wname, false);
    else if (s.isolation == TF_ISOLATION_SOFT && !(s.disable_features & TF_FEATURE_GPU_LIMITER))
        tf__wh_inject_soft(wh, spec, &s);
    else if (hard_local)
        tf__wh_inject_client(wh, spec, &s, wname, true);

    if (!req->dry_run && wh->env.ensure_workload) {
        json_object *w = workload_object(&s, ns, wname, final_pool);
        char werr[512] = "";
        rc = wh->env.ensure_workload(wh->env.arg, ns, wname, w, s.workload != NULL, werr,
                                     sizeof(werr));
        json_object_put(w);
        if (rc) {
            deny(out, 500, "TensorFusionWorkload %s/%s: %s", ns, wname, werr);
            goto done;
        }
    }
    struct tf_dynbuf patch;
    tf_dynbuf_init(&patch, SIZE_MAX / 2);
    if (tf_jsonpatch_diff(pod, mut, &patch, &out->nops)) {
        tf_dynbuf_free(&patch);
        deny(out, 500, "cannot build the JSON patch");
        goto done;
    }
    out->patch = patch.data;
    out->mutated = mut;
    mut = NULL;
    out->taken_over = true;
done:
    if (!out->allowed) {
        free(out->patch);
        out->patch = NULL;
        out->nops = 0;
    }
    json_object_put(mut);
    json_object_put(pool_obj);
    json_object_put(quotas);
    tf_spec_free(&s);
    tf_defaults_native_free(native, nnative);
    if (have_prof)
        tf_profile_free(&prof);
}

/* ---- the system-annotation guard around the review (sysguard.h) -------------------------- */

/* CREATE by anyone but the controller: the review sees the pod without system keys, and the
 * patch (from the pod as sent) removes them too. */
static void guarded_create(struct tf_webhook *wh, const struct tf_admission_req *req,
                           struct tf_webhook_result *out)
{
    json_object *pod = NULL, *removed = json_object_new_array();
    if (!removed || json_object_deep_copy(req->object, &pod, NULL)) {
        json_object_put(removed);
        deny(out, 500, "out of memory");
        return;
    }
    size_t n = tf_sysguard_strip(pod, removed);
    const char *label = tf_json_str(pod, "metadata", "labels", TF_LABEL_ENABLED, NULL);
    const char *node = tf_json_str(pod, "spec", "nodeName", NULL);
    char why[512];
    if (!(label && strcmp(label, "false") == 0) && tf_sysguard_reserved(pod, why, sizeof(why))) {
        deny(out, 403, "%s", why);
        goto out;
    }
    if (node && label && strcmp(label, "true") == 0) {
        deny(out, 403,
             "spec.nodeName %s: a TensorFusion pod is placed by %s, which books its GPUs; "
             "pin a node with a nodeSelector or nodeAffinity on kubernetes.io/hostname instead",
             node, TF_SCHEDULER_NAME);
        goto out;
    }
    if (!node) { /* (a pod pinned to a node is never auto-migrated: it skips the scheduler) */
        struct tf_admission_req r = *req;
        r.object = pod;
        review_create(wh, &r, out);
    }
    if (out->allowed && n) {
        struct tf_dynbuf patch;
        tf_dynbuf_init(&patch, SIZE_MAX / 2);
        free(out->patch);
        out->patch = NULL;
        if (tf_jsonpatch_diff(req->object, out->mutated ? out->mutated : pod, &patch, &out->nops)) {
            tf_dynbuf_free(&patch);
            deny(out, 500, "cannot build the JSON patch");
            goto out;
        }
        out->patch = patch.data;
    }
    for (size_t i = 0; i < json_object_array_length(removed); i++)
        warn(out, "%s", json_object_get_string(json_object_array_get_idx(removed, i)));
out:
    json_object_put(removed);
    json_object_put(pod);
}

void tf_webhook_review(struct tf_webhook *wh, const struct tf_admission_req *req,
                       struct tf_webhook_result *out)
{
    memset(out, 0, sizeof(*out));
    out->allowed = true;
    bool create = strcmp(req->operation, "CREATE") == 0;
    const char *ns = req->namespace && *req->namespace
                         ? req->namespace
                         : tf_json_str(req->object, "metadata", "namespace", NULL);
    bool own = ns && wh->cfg.own_namespace && strcmp(ns, wh->cfg.own_namespace) == 0;
    if (strcmp(req->kind, "Pod") != 0 || !req->object || own ||
        tf_sysguard_is_system(wh->cfg.system_user, wh->cfg.own_namespace, req->username)) {
        if (create)
            review_create(wh, req, out);
        return;
    }
    if (create) {
        guarded_create(wh, req, out);
    } else if (strcmp(req->operation, "UPDATE") == 0 && req->old_object &&
               tf_sysguard_update(req->old_object, req->object, out->message,
                                  sizeof(out->message))) {
        out->allowed = false;
        out->code = 403;
    }
}

char *tf_webhook_handle(struct tf_webhook *wh, const char *body, size_t len, int *status)
{
    struct tf_admission_req req;
    char err[512];
    if (tf_admission_decode(body, len, &req, err, sizeof(err))) {
        *status = 400;
        tf_log(TF_LOG_WARN, "webhook", "bad review: %s", err);
        return strdup(err);
    }
    struct tf_webhook_result r;
    tf_webhook_review(wh, &req, &r);
    char *out = tf_admission_encode(req.uid, r.allowed, r.nops ? r.patch : NULL, r.code, r.message,
                                    r.warnings);
    if (!r.allowed)
        tf_log(TF_LOG_INFO, "webhook", "denied pod namespace=%s name=%s reason=%s", req.namespace,
               req.name, r.message);
    else if (r.taken_over)
        tf_log(TF_LOG_DEBUG, "webhook", "mutated pod namespace=%s ops=%zu", req.namespace, r.nops);
    tf_webhook_result_free(&r);
    tf_admission_req_free(&req);
    *status = out ? 200 : 500;
    return out ? out : strdup("out of memory");
}
