/* SPDX-License-Identifier: Apache-2.0
 *
 * WorkloadProfile (tensor-fusion.ai/v1) documents into struct tf_profile (see spec.h).
 */
#include "core/spec.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/quantity.h"
#include "core/spec_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pctx {
    struct tf_profile *p;
    char *err;
    size_t errlen;
    char key[160]; /* "WorkloadProfile NAME: spec.x.y", rebuilt per field */
};

static const char *field(struct pctx *c, const char *path)
{
    snprintf(c->key, sizeof(c->key), "WorkloadProfile %s: spec.%s", c->p->name ? c->p->name : "?",
             path);
    return c->key;
}

/* Quantities in a CRD are int-or-string: both are read as their text. */
static int qty_text(struct pctx *c, json_object *v, const char *path, const char **out)
{
    if (json_object_is_type(v, json_type_string) || json_object_is_type(v, json_type_int) ||
        json_object_is_type(v, json_type_double)) {
        *out = json_object_get_string(v);
        return 0;
    }
    tf_errf(c->err, c->errlen, "%s: must be a quantity string such as \"10\" or \"4Gi\"",
            field(c, path));
    return TF_EINVAL;
}

static int parse_side(struct pctx *c, json_object *side, const char *name, struct tf_spec_res *r)
{
    char path[64];
    if (!json_object_is_type(side, json_type_object)) {
        snprintf(path, sizeof(path), "resources.%s", name);
        tf_errf(c->err, c->errlen, "%s: must be a map", field(c, path));
        return TF_EINVAL;
    }
    int rc;
    json_object_object_foreach(side, k, v)
    {
        const char *txt;
        snprintf(path, sizeof(path), "resources.%s.%s", name, k);
        if (!v)
            continue; /* null: not set */
        if (!strcmp(k, "tflops")) {
            if ((rc = qty_text(c, v, path, &txt)) ||
                (rc = tf_quantity_milli(txt, &r->tflops_milli, field(c, path), c->err, c->errlen)))
                return rc;
            /* Upstream's CRD requires tflops in every side: next to a percent, "0" means unset. */
            r->tflops_set = r->tflops_milli != 0 ||
                            !(tf__get(side, "compute") || tf__get(side, "computePercent"));
        } else if (!strcmp(k, "vram")) {
            if ((rc = qty_text(c, v, path, &txt)) ||
                (rc = tf_quantity_bytes(txt, &r->vram_bytes, field(c, path), c->err, c->errlen)))
                return rc;
            r->vram_set = true;
        } else if (!strcmp(k, "computePercent") || !strcmp(k, "compute")) {
            if ((rc = qty_text(c, v, path, &txt)) ||
                (rc = tf_percent_parse(txt, &r->percent_bp, field(c, path), c->err, c->errlen)))
                return rc;
            r->percent_set = true;
        } else {
            rc = tf__warn(&c->p->warnings, &c->p->nwarnings, "%s: unknown field, ignored",
                          field(c, path));
            if (rc)
                return rc;
        }
    }
    if (r->tflops_set && r->percent_set) {
        snprintf(path, sizeof(path), "resources.%s", name);
        tf_errf(c->err, c->errlen,
                "%s: tflops and compute (computePercent) are mutually exclusive, set only one",
                field(c, path));
        return TF_EINVAL;
    }
    return 0;
}

static int parse_resources(struct pctx *c, json_object *res)
{
    if (!json_object_is_type(res, json_type_object)) {
        tf_errf(c->err, c->errlen, "%s: must be a map", field(c, "resources"));
        return TF_EINVAL;
    }
    int rc;
    json_object_object_foreach(res, k, v)
    {
        if (!strcmp(k, "requests"))
            rc = parse_side(c, v, "requests", &c->p->requests);
        else if (!strcmp(k, "limits"))
            rc = parse_side(c, v, "limits", &c->p->limits);
        else {
            char path[64];
            snprintf(path, sizeof(path), "resources.%s", k);
            rc = tf__warn(&c->p->warnings, &c->p->nwarnings, "%s: unknown field, ignored",
                          field(c, path));
        }
        if (rc)
            return rc;
    }
    return 0;
}

static int want_string(struct pctx *c, json_object *v, const char *path, const char **out)
{
    if (!json_object_is_type(v, json_type_string) || !*json_object_get_string(v)) {
        tf_errf(c->err, c->errlen, "%s: must be a non-empty string", field(c, path));
        return TF_EINVAL;
    }
    *out = json_object_get_string(v);
    return 0;
}

static int want_bool(struct pctx *c, json_object *v, const char *path, bool *out)
{
    if (!json_object_is_type(v, json_type_boolean)) {
        tf_errf(c->err, c->errlen, "%s: must be true or false", field(c, path));
        return TF_EINVAL;
    }
    *out = json_object_get_boolean(v);
    return 0;
}

static int want_int(struct pctx *c, json_object *v, const char *path, int64_t min, int64_t max,
                    int64_t *out)
{
    if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < min ||
        json_object_get_int64(v) > max) {
        tf_errf(c->err, c->errlen, "%s: %s must be an integer between %lld and %lld",
                field(c, path), json_object_get_string(v), (long long)min, (long long)max);
        return TF_EINVAL;
    }
    *out = json_object_get_int64(v);
    return 0;
}

static int parse_autoscaling(struct pctx *c, json_object *as)
{
    if (!json_object_is_type(as, json_type_object)) {
        tf_errf(c->err, c->errlen, "%s: must be a map", field(c, "autoScalingConfig"));
        return TF_EINVAL;
    }
    json_object *asr = tf__get(as, "autoSetResources");
    if (!asr)
        return 0; /* cron rules, external scaler: the autoscaler's business */
    if (!json_object_is_type(asr, json_type_object)) {
        tf_errf(c->err, c->errlen, "%s: must be a map",
                field(c, "autoScalingConfig.autoSetResources"));
        return TF_EINVAL;
    }
    int rc;
    json_object *v = tf__get(asr, "enable");
    if (v) {
        if ((rc = want_bool(c, v, "autoScalingConfig.autoSetResources.enable", &c->p->autoscale)))
            return rc;
        c->p->autoscale_set = true;
    }
    v = tf__get(asr, "targetResource");
    if (v) {
        const char *s;
        const char *path = "autoScalingConfig.autoSetResources.targetResource";
        if ((rc = want_string(c, v, path, &s)))
            return rc;
        if (tf_autoscale_target_parse(s, &c->p->autoscale_target)) {
            tf_errf(c->err, c->errlen, "%s: \"%s\" must be one of compute, vram, all",
                    field(c, path), s);
            return TF_EINVAL;
        }
    }
    return 0;
}

static int parse_indices(struct pctx *c, json_object *v)
{
    if (!json_object_is_type(v, json_type_array)) {
        tf_errf(c->err, c->errlen, "%s: must be a list of GPU indices", field(c, "gpuIndices"));
        return TF_EINVAL;
    }
    size_t n = json_object_array_length(v);
    if (n > TF_SPEC_MAX_GPUS) {
        tf_errf(c->err, c->errlen, "%s: more than %d indices", field(c, "gpuIndices"),
                TF_SPEC_MAX_GPUS);
        return TF_ERANGE;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t x;
        int rc =
            want_int(c, json_object_array_get_idx(v, i), "gpuIndices", 0, TF_SPEC_MAX_GPUS - 1, &x);
        if (rc)
            return rc;
        for (int j = 0; j < c->p->ngpu_indices; j++) {
            if (c->p->gpu_indices[j] == (int)x) {
                tf_errf(c->err, c->errlen, "%s: index %d is listed twice", field(c, "gpuIndices"),
                        (int)x);
                return TF_EINVAL;
            }
        }
        c->p->gpu_indices[c->p->ngpu_indices++] = (int)x;
    }
    return 0;
}

/* spec.gangScheduling {minMembers, timeout}: present = gang scheduling on (upstream). */
static int parse_gang(struct pctx *c, json_object *g)
{
    if (!json_object_is_type(g, json_type_object)) {
        tf_errf(c->err, c->errlen, "%s: must be a map", field(c, "gangScheduling"));
        return TF_EINVAL;
    }
    c->p->gang = true;
    int rc;
    json_object_object_foreach(g, k, v)
    {
        if (!v)
            continue;
        if (!strcmp(k, "minMembers")) {
            int64_t x;
            if ((rc = want_int(c, v, "gangScheduling.minMembers", 0, INT32_MAX, &x)))
                return rc;
            if (x == 1) {
                tf_errf(c->err, c->errlen, "%s: 1: a gang needs at least 2 members (0 = all)",
                        field(c, "gangScheduling.minMembers"));
                return TF_EINVAL;
            }
            c->p->gang_min_members = (int32_t)x;
        } else if (!strcmp(k, "timeout")) {
            const char *s;
            if ((rc = want_string(c, v, "gangScheduling.timeout", &s)) ||
                (rc = tf_go_duration_ms(s, &c->p->gang_timeout_ms,
                                        field(c, "gangScheduling.timeout"), c->err, c->errlen)))
                return rc;
        } else if ((rc =
                        tf__warn(&c->p->warnings, &c->p->nwarnings, "%s.%s: unknown field, ignored",
                                 field(c, "gangScheduling"), k))) {
            return rc;
        }
    }
    return 0;
}

static int parse_spec_field(struct pctx *c, const char *k, json_object *v)
{
    struct tf_profile *p = c->p;
    const char *s;
    int64_t x;
    int rc;
    if (!strcmp(k, "resources"))
        return parse_resources(c, v);
    if (!strcmp(k, "replicas")) {
        if ((rc = want_int(c, v, k, 0, INT32_MAX, &x)))
            return rc;
        p->replicas = (int32_t)x;
        p->replicas_set = true;
        return 0;
    }
    if (!strcmp(k, "isLocalGPU")) {
        if ((rc = want_bool(c, v, k, &p->is_local_gpu)))
            return rc;
        p->is_local_gpu_set = true;
        return 0;
    }
    if (!strcmp(k, "poolName")) {
        if ((rc = want_string(c, v, k, &s)))
            return rc;
        if (!tf__is_object_name(s)) {
            tf_errf(c->err, c->errlen, "%s: \"%s\" is not a valid GPUPool name", field(c, k), s);
            return TF_EINVAL;
        }
        return (p->pool = strdup(s)) ? 0 : TF_ENOMEM;
    }
    if (!strcmp(k, "qos")) {
        if ((rc = want_string(c, v, k, &s)))
            return rc;
        if (tf_qos_parse(s, &p->qos)) {
            tf_errf(c->err, c->errlen, "%s: \"%s\" must be one of low, medium, high, critical",
                    field(c, k), s);
            return TF_EINVAL;
        }
        return 0;
    }
    if (!strcmp(k, "isolation")) {
        if ((rc = want_string(c, v, k, &s)))
            return rc;
        if (tf_isolation_parse(s, &p->isolation)) {
            tf_errf(c->err, c->errlen, "%s: \"%s\" must be one of shared, soft, hard, partitioned",
                    field(c, k), s);
            return TF_EINVAL;
        }
        return 0;
    }
    if (!strcmp(k, "gpuCount")) {
        if ((rc = want_int(c, v, k, 1, TF_SPEC_MAX_GPUS, &x)))
            return rc;
        p->gpu_count = (int)x;
        return 0;
    }
    if (!strcmp(k, "gpuModel")) {
        if ((rc = want_string(c, v, k, &s)))
            return rc;
        return (p->gpu_model = strdup(s)) ? 0 : TF_ENOMEM;
    }
    if (!strcmp(k, "vendor")) {
        if ((rc = want_string(c, v, k, &s)))
            return rc;
        const char *known = tf_vendor_known(s);
        return (p->vendor = strdup(known ? known : s)) ? 0 : TF_ENOMEM;
    }
    if (!strcmp(k, "gangScheduling"))
        return parse_gang(c, v);
    if (!strcmp(k, "gpuIndices"))
        return parse_indices(c, v);
    if (!strcmp(k, "autoScalingConfig"))
        return parse_autoscaling(c, v);
    /* Upstream fields for other components (scheduler, worker): accepted as they are. */
    if (!strcmp(k, "nodeAffinity") || !strcmp(k, "workerPodTemplate") ||
        !strcmp(k, "sidecarWorker"))
        return 0;
    return tf__warn(&p->warnings, &p->nwarnings, "%s: unknown field, ignored", field(c, k));
}

int tf_profile_parse(json_object *doc, struct tf_profile *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    struct pctx c = {.p = out, .err = err, .errlen = errlen};
    int rc = TF_EINVAL;
    if (!json_object_is_type(doc, json_type_object)) {
        tf_errf(err, errlen, "WorkloadProfile: not a map");
        goto out;
    }
    const char *kind = tf__get_str(doc, "kind");
    if (!kind || strcmp(kind, "WorkloadProfile") != 0) {
        tf_errf(err, errlen, "kind: \"%s\" is not WorkloadProfile", kind ? kind : "");
        goto out;
    }
    const char *api = tf__get_str(doc, "apiVersion");
    if (!api || strncmp(api, "tensor-fusion.ai/", 17) != 0) {
        tf_errf(err, errlen, "WorkloadProfile: apiVersion \"%s\" is not tensor-fusion.ai/v1",
                api ? api : "");
        goto out;
    }
    const char *name = tf__get_str(tf__get(doc, "metadata"), "name");
    if (!name || !tf__is_object_name(name)) {
        tf_errf(err, errlen, "WorkloadProfile: metadata.name \"%s\" is missing or invalid",
                name ? name : "");
        goto out;
    }
    rc = TF_ENOMEM;
    if (!(out->name = strdup(name)))
        goto out;
    const char *ns = tf__get_str(tf__get(doc, "metadata"), "namespace");
    if (ns && !(out->ns = strdup(ns)))
        goto out;
    if (strcmp(api, "tensor-fusion.ai/v1") != 0 &&
        (rc = tf__warn(&out->warnings, &out->nwarnings,
                       "WorkloadProfile %s: apiVersion %s read as tensor-fusion.ai/v1", name, api)))
        goto out;
    json_object *spec = tf__get(doc, "spec");
    rc = 0;
    if (!spec)
        goto out;
    if (!json_object_is_type(spec, json_type_object)) {
        tf_errf(err, errlen, "WorkloadProfile %s: spec: must be a map", name);
        rc = TF_EINVAL;
        goto out;
    }
    json_object_object_foreach(spec, k, v)
    {
        if ((rc = parse_spec_field(&c, k, v)))
            goto out;
    }
out:
    if (rc)
        tf_profile_free(out);
    return rc;
}

void tf_profile_free(struct tf_profile *p)
{
    if (!p)
        return;
    free(p->name);
    free(p->ns);
    free(p->pool);
    free(p->gpu_model);
    free(p->vendor);
    tf__strv_free(&p->warnings, &p->nwarnings);
    memset(p, 0, sizeof(*p));
}
