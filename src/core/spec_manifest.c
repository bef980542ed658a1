/* SPDX-License-Identifier: Apache-2.0
 *
 * Whole workload manifests (Pod, Deployment, StatefulSet, ReplicaSet, Job, DaemonSet, CronJob,
 * PodTemplate) into specs through their pod template, and the small public helpers around a
 * parsed spec (split pods, gpu-ids-<container> keys, caller warnings).
 */
#include "common/err.h"
#include "core/gang.h"
#include "common/strutil.h"
#include "core/quantity.h"
#include "core/spec_int.h"
#include "core/spec_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- manifests ----------------------------------------------------------------------------- */

static const struct {
    const char *kind;
    bool replicas;
} kinds[] = {
    {"Pod", false}, {"Deployment", true}, {"StatefulSet", true}, {"ReplicaSet", true},
    {"Job", false}, {"DaemonSet", false}, {"CronJob", false},    {"PodTemplate", false},
};

bool tf_spec_kind_supported(json_object *doc)
{
    const char *kind = tf__get_str(doc, "kind");
    for (size_t i = 0; kind && i < NELEMS(kinds); i++)
        if (!strcmp(kind, kinds[i].kind))
            return true;
    return false;
}

static json_object *template_of(json_object *doc, const char *kind, const char **tpath)
{
    if (!strcmp(kind, "Pod")) {
        *tpath = NULL;
        return doc;
    }
    if (!strcmp(kind, "PodTemplate")) {
        *tpath = "template";
        return tf__get(doc, "template");
    }
    if (!strcmp(kind, "CronJob")) {
        *tpath = "spec.jobTemplate.spec.template";
        return tf__get(tf__get(tf__get(tf__get(doc, "spec"), "jobTemplate"), "spec"), "template");
    }
    *tpath = "spec.template";
    return tf__get(tf__get(doc, "spec"), "template");
}

json_object *tf_spec_pod_template(json_object *doc)
{
    if (!tf_spec_kind_supported(doc))
        return NULL;
    const char *tpath;
    json_object *t = template_of(doc, tf__get_str(doc, "kind"), &tpath);
    return t && json_object_is_type(t, json_type_object) ? t : NULL;
}

bool tf_spec_split(const struct tf_spec *s)
{
    return s->ncontainers > 1 ||
           (s->ncontainers == 1 && s->containers[0].gpu_count != s->gpu_count);
}

void tf_spec_container_gpu_ids_key(const char *container, char *out)
{
    char name[64];
    tf_name_fit("gpu-ids-", container, 63, name, sizeof(name));
    snprintf(out, TF_SPEC_CONTAINER_GPU_IDS_KEY_MAX, "%s%s", TF_KEY_PREFIX, name);
}

int tf_spec_add_warning(struct tf_spec *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = tf__vwarn(&s->warnings, &s->nwarnings, fmt, ap);
    va_end(ap);
    return rc;
}

/* A gang's size from the manifest (upstream's resolveDesiredGangMembers): enabled-replicas,
 * the profile's replicas, the controller's replicas, a Job's parallelism / completions. */
static int gang_size(json_object *doc, const char *kind, bool has_replicas,
                     const struct tf_profile *profile, struct tf_spec *out, char *err,
                     size_t errlen)
{
    int32_t desired = 0;
    bool known = true;
    if (out->has_enabled_replicas) {
        desired = out->enabled_replicas;
    } else if (profile && profile->replicas_set) {
        desired = profile->replicas;
    } else if (has_replicas) {
        desired = out->replicas;
    } else if (!strcmp(kind, "Job") || !strcmp(kind, "CronJob")) {
        json_object *js = tf__get(doc, "spec");
        if (!strcmp(kind, "CronJob"))
            js = tf__get(tf__get(js, "jobTemplate"), "spec");
        json_object *v = tf__get(js, "parallelism");
        if (!v)
            v = tf__get(js, "completions");
        desired =
            v && json_object_is_type(v, json_type_int) ? (int32_t)json_object_get_int64(v) : 1;
    } else {
        known = false;
    }
    return tf_gang_quorum(out->gang_min_members, desired, known, &out->gang_desired,
                          &out->gang_required, err, errlen);
}

int tf_spec_parse_object(json_object *doc, const struct tf_profile *profile,
                         const struct tf_pool_defaults *pool, struct tf_spec *out, char *err,
                         size_t errlen)
{
    tf_spec_init(out);
    const char *kind = tf__get_str(doc, "kind");
    size_t ki;
    for (ki = 0; kind && ki < NELEMS(kinds); ki++)
        if (!strcmp(kind, kinds[ki].kind))
            break;
    if (!kind || ki == NELEMS(kinds)) {
        tf_errf(err, errlen,
                "kind \"%s\" has no pod template (supported: Pod, Deployment, "
                "StatefulSet, ReplicaSet, Job, DaemonSet, CronJob, PodTemplate)",
                kind ? kind : "");
        return TF_ENOTSUP;
    }
    json_object *meta = tf__get(doc, "metadata");
    const char *tpath;
    json_object *tmpl = template_of(doc, kind, &tpath);
    if (tpath && (!tmpl || !json_object_is_type(tmpl, json_type_object))) {
        tf_errf(err, errlen, "%s: %s is missing", kind, tpath);
        return TF_EINVAL;
    }
    json_object *tmeta = tf__get(tmpl, "metadata");
    char sub[200];
    int rc =
        tf__spec_parse_meta(tmeta, tf__get(tmpl, "spec"), profile, pool, out, sub, sizeof(sub));
    if (rc) {
        /* Keys inside the template are relative to it. */
        if (tpath)
            tf_errf(err, errlen, "%s: %s", tpath, sub);
        else
            tf_errf(err, errlen, "%s", sub);
        return rc;
    }
    const char *name = tf__get_str(meta, "name");
    const char *ns = tf__get_str(meta, "namespace");
    if (tpath && name) {
        free(out->name);
        if (!(out->name = strdup(name)))
            goto nomem;
    }
    if (tpath && ns) {
        free(out->ns);
        if (!(out->ns = strdup(ns)))
            goto nomem;
    }
    if (!(out->kind = strdup(kind)))
        goto nomem;
    json_object *reps = tf__get(tf__get(doc, "spec"), "replicas");
    if (kinds[ki].replicas) {
        /* Kubernetes defaults spec.replicas to 1. */
        out->has_replicas = true;
        out->replicas = reps && json_object_is_type(reps, json_type_int)
                            ? (int32_t)json_object_get_int64(reps)
                            : 1;
    }
    if (out->enabled && out->gang &&
        (rc = gang_size(doc, kind, kinds[ki].replicas, profile, out, err, errlen))) {
        tf_spec_free(out);
        return rc;
    }
    if (out->enabled && out->has_enabled_replicas) {
        int wrc = 0;
        if (!strcmp(kind, "Pod"))
            wrc = tf__warn(&out->warnings, &out->nwarnings,
                           "%s only acts on pods a controller owns (Deployment, StatefulSet, ...), "
                           "not on a bare Pod",
                           TF_ANN_ENABLED_REPLICAS);
        else if (out->has_replicas && out->enabled_replicas > out->replicas)
            wrc = tf__warn(&out->warnings, &out->nwarnings,
                           "%s \"%d\" is more than the %s's %d replicas: all of them are taken "
                           "over",
                           TF_ANN_ENABLED_REPLICAS, out->enabled_replicas, kind, out->replicas);
        if (wrc)
            goto nomem;
    }
    return 0;
nomem:
    tf_spec_free(out);
    tf_errf(err, errlen, "out of memory");
    return TF_ENOMEM;
}
