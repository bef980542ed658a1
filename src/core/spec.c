/* SPDX-License-Identifier: Apache-2.0
 *
 * Pod labels + annotations (+ WorkloadProfile, pool defaults, seed 004 nvidia.com/gpu limits)
 * into a normalised struct tf_spec (see spec.h; user documentation in docs/spec.md): the key
 * table, the metadata scan, the scalar annotations and the parse itself. Resources are in
 * spec_res.c, containers in spec_ctr.c, manifests in spec_manifest.c.
 */
#include "core/spec.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/partition.h"
#include "core/quantity.h"
#include "core/spec_int.h"
#include "core/spec_util.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- keys ---------------------------------------------------------------------------------- */

const char *const tf__spec_akeys[NKEYS] = {
    TF_ANN_TFLOPS_REQUEST,
    TF_ANN_TFLOPS_LIMIT,
    TF_ANN_VRAM_REQUEST,
    TF_ANN_VRAM_LIMIT,
    TF_ANN_PERCENT_REQUEST,
    TF_ANN_PERCENT_LIMIT,
    TF_ANN_INJECT_CONTAINER,
    TF_ANN_QOS,
    TF_ANN_IS_LOCAL_GPU,
    TF_ANN_GPU_COUNT,
    TF_ANN_GPUPOOL,
    TF_ANN_VENDOR,
    TF_ANN_GPU_MODEL,
    TF_ANN_DEDICATED_GPU,
    TF_ANN_ISOLATION,
    TF_ANN_GPU_INDICES,
    TF_ANN_CONTAINER_GPU_COUNT,
    TF_ANN_CONTAINER_GPUS,
    TF_ANN_WORKLOAD,
    TF_ANN_WORKLOAD_PROFILE,
    TF_ANN_ENABLED_REPLICAS,
    TF_ANN_AUTOSCALE,
    TF_ANN_AUTOSCALE_TARGET,
    TF_ANN_STANDALONE_WORKER_MODE,
    TF_ANN_DISABLE_FEATURES,
    TF_ANN_GANG_ENABLED,
    TF_ANN_GANG_MIN_MEMBERS,
    TF_ANN_GANG_TIMEOUT,
    TF_ANN_SIDECAR_WORKER,
    TF_ANN_WORKER_POD_TEMPLATE,
    TF_ANN_PARTITION,
};

/* Annotations the system itself writes on pods (scheduler, webhook, device plugin): known,
 * not user input, never warned about. */
static const char *const system_annotations[] = {
    "gpu-ids",
    "index",
    "selected-workload",
    "pod-counter-key",
    "tf-pod-count",
    "hourly-pricing",
    "gpu-released",
    "eviction-protection",
    "port-number",
    "pending-owned-workload",
    "last-sync",
    "workload-mode",
    "gang-desired-members",
    "gang-required-members",
    "gang-group-key",
};

/* Labels of the tensor-fusion.ai domain that are not ours to interpret. */
static const char *const system_labels[] = {
    "component",   "managed-by", "cluster",   "pod-template-hash", "node-selector-hash",
    "worker-name", "host-port",  "port-name", "do-not-disrupt",    "node-class",
};

static int akey_index(const char *k)
{
    for (int i = 0; i < NKEYS; i++)
        if (!strcmp(k, tf__spec_akeys[i]))
            return i;
    return -1;
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, list[i]))
            return true;
    return false;
}

int tf__spec_fail(struct ctx *c, int rc, const char *fmt, ...)
{
    if (c->err && c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* Text of a label or annotation value V under KEY; non-string scalars are accepted as their
 * text with a warning. *OUT is NULL for null/empty values (treated as absent, warned). */
static int scalar_text(struct ctx *c, const char *where, const char *key, json_object *v,
                       char *numbuf, size_t numlen, const char **out)
{
    *out = NULL;
    if (!v) {
        WARN(c, "%s: empty value, ignored", key);
        return 0;
    }
    switch (json_object_get_type(v)) {
    case json_type_string:
        if (!*json_object_get_string(v)) {
            WARN(c, "%s: empty value, ignored", key);
            return 0;
        }
        *out = json_object_get_string(v);
        return 0;
    case json_type_int:
        snprintf(numbuf, numlen, "%" PRId64, json_object_get_int64(v));
        *out = numbuf;
        break;
    case json_type_boolean:
        *out = json_object_get_boolean(v) ? "true" : "false";
        break;
    case json_type_double:
        *out = json_object_get_string(v); /* the source text (tf_yaml_to_json keeps it) */
        break;
    default:
        return tf__spec_fail(c, TF_EINVAL, "%s: the %s value must be a string", key, where);
    }
    WARN(c, "%s: %s value %s is not a string; Kubernetes rejects non-string %ss (quote it: '%s')",
         key, where, *out, where, *out);
    return 0;
}

/* ---- metadata scan ------------------------------------------------------------------------- */

static int check_map(struct ctx *c, json_object *m, const char *what)
{
    if (m && !json_object_is_type(m, json_type_object))
        return tf__spec_fail(c, TF_EINVAL, "metadata.%s: must be a map of strings", what);
    return 0;
}

/* Warns about tensor-fusion.ai/... keys nobody reads, and keys put in the wrong map. */
static int scan_keys(struct ctx *c)
{
    if (c->ann) {
        json_object_object_foreach(c->ann, k, v)
        {
            (void)v;
            if (strncmp(k, TF_KEY_PREFIX, PREFIX_LEN) != 0 || akey_index(k) >= 0 ||
                in_list(k + PREFIX_LEN, system_annotations, NELEMS(system_annotations)) ||
                !strncmp(k, TF_ANN_CONTAINER_GPU_IDS_PREFIX,
                         sizeof(TF_ANN_CONTAINER_GPU_IDS_PREFIX) - 1))
                continue;
            if (!strcmp(k, TF_LABEL_ENABLED))
                WARN(c,
                     "%s is a label, not an annotation: set it under metadata.labels "
                     "(ignored here)",
                     k);
            else
                WARN(c, "%s: unknown annotation, ignored", k);
        }
    }
    if (c->labels) {
        json_object_object_foreach(c->labels, k, v)
        {
            (void)v;
            if (strncmp(k, TF_KEY_PREFIX, PREFIX_LEN) != 0 || !strcmp(k, TF_LABEL_ENABLED) ||
                in_list(k + PREFIX_LEN, system_labels, NELEMS(system_labels)))
                continue;
            if (akey_index(k) >= 0)
                WARN(c,
                     "%s is an annotation, not a label: set it under metadata.annotations "
                     "(ignored here)",
                     k);
            else
                WARN(c, "%s: unknown label, ignored", k);
        }
    }
    return 0;
}

static int read_annotations(struct ctx *c)
{
    for (int i = 0; i < NKEYS; i++) {
        json_object *v;
        if (!c->ann || !json_object_object_get_ex(c->ann, tf__spec_akeys[i], &v))
            continue;
        int rc = scalar_text(c, "annotation", tf__spec_akeys[i], v, c->num[i], sizeof(c->num[i]),
                             &c->a[i]);
        if (rc)
            return rc;
    }
    return 0;
}

static int count_tf_annotations(struct ctx *c)
{
    int n = 0;
    if (c->ann) {
        json_object_object_foreach(c->ann, k, v)
        {
            (void)v;
            if (!strncmp(k, TF_KEY_PREFIX, PREFIX_LEN))
                n++;
        }
    }
    return n;
}

/* ---- scalar annotations -------------------------------------------------------------------- */

static int ann_bool(struct ctx *c, int k, bool *out)
{
    if (tf_parse_bool(c->a[k], out))
        return tf__spec_fail(c, TF_EINVAL, "%s: \"%s\" must be \"true\" or \"false\"",
                             tf__spec_akeys[k], c->a[k]);
    return 0;
}

static int ann_name(struct ctx *c, int k, const char *what, char **out)
{
    if (!tf__is_object_name(c->a[k]))
        return tf__spec_fail(c, TF_EINVAL,
                             "%s: \"%s\" is not a valid %s name (lower-case letters, digits, "
                             "'-' and '.')",
                             tf__spec_akeys[k], c->a[k], what);
    return (*out = strdup(c->a[k])) ? 0 : TF_ENOMEM;
}

/* tensor-fusion.ai/partition: the partition template of a partitioned pod (a template id of
 * its GPU model's profile, checked by the scheduler against the GPU it lands on). Any other
 * isolation has no partition: the key is ignored with a warning. */
static int parse_partition(struct ctx *c)
{
    if (!c->a[A_PARTITION])
        return 0;
    if (c->s->isolation != TF_ISOLATION_PARTITIONED) {
        WARN(c, "%s: ignored: only partitioned isolation uses a partition template (this pod: %s)",
             tf__spec_akeys[A_PARTITION], tf_isolation_name(c->s->isolation));
        return 0;
    }
    if (strlen(c->a[A_PARTITION]) >= TF_PART_ID_MAX)
        return tf__spec_fail(c, TF_EINVAL, "%s: \"%.40s...\" is longer than a template id (%d)",
                             tf__spec_akeys[A_PARTITION], c->a[A_PARTITION], TF_PART_ID_MAX - 1);
    return ann_name(c, A_PARTITION, "partition template", &c->s->partition);
}

struct feat_ctx {
    struct ctx *c;
};

static int one_feature(const char *item, size_t len, void *arg)
{
    struct ctx *c = ((struct feat_ctx *)arg)->c;
    struct tf_spec *s = c->s;
    char name[64];
    if (len >= sizeof(name))
        len = sizeof(name) - 1;
    memcpy(name, item, len);
    name[len] = 0;
    if (tf__strv_has(s->disable_feature_names, s->ndisable_feature_names, name, len))
        return 0;
    enum tf_feature f;
    if (tf_feature_parse(name, &f) == 0) {
        s->disable_features |= f;
        if (f == TF_FEATURE_GPU_LIMITER)
            WARN(c, "%s: gpu-limiter: the pod's compute and VRAM limits are not enforced",
                 tf__spec_akeys[A_DISABLE]);
        else if (f == TF_FEATURE_GPU_OPT)
            WARN(c,
                 "%s: gpu-opt has no effect here: TensorFusion in C applies no CUDA "
                 "optimisation to the application's calls (nothing to turn off)",
                 tf__spec_akeys[A_DISABLE]);
        else if (f == TF_FEATURE_MEM_MANAGER)
            WARN(c,
                 "%s: mem-manager has no effect here: no VRAM manager runs (VRAM is never moved "
                 "to host memory; the pool's vramExpandToHostMem only sizes the limits "
                 "the scheduler allows)",
                 tf__spec_akeys[A_DISABLE]);
        else if (f == TF_FEATURE_START_WORKER && s->isolation != TF_ISOLATION_HARD &&
                 s->is_local_gpu)
            WARN(c, "%s: start-worker has no effect: this pod runs no tf-worker (%s isolation)",
                 tf__spec_akeys[A_DISABLE], tf_isolation_name(s->isolation));
        else if (f == TF_FEATURE_START_WORKER)
            WARN(c,
                 "%s: start-worker: the tf-worker container sleeps instead of serving "
                 "(debugging); the application cannot reach its GPU",
                 tf__spec_akeys[A_DISABLE]);
    } else
        WARN(c,
             "%s: unknown feature \"%s\" (known: gpu-limiter, gpu-opt, mem-manager, "
             "start-worker)",
             tf__spec_akeys[A_DISABLE], name);
    return tf__strv_push(&s->disable_feature_names, &s->ndisable_feature_names, name, len);
}

/* ---- worker placement ---------------------------------------------------------------------- */

/* Seed 001's standalone-worker-mode, for local-GPU pods: "true" = the app reaches the GPU
 * only through a standalone vGPU worker (here: hard isolation, a tf-worker sidecar), "false" =
 * the worker lives in the app's own process (soft isolation: the in-process limiter, which
 * the app could bypass). It decides the isolation the profile or pool would have given; an
 * isolation annotation of the pod's own that contradicts it is refused. */
static int standalone_key(struct ctx *c)
{
    struct tf_spec *s = c->s;
    int rc;
    if (!c->a[A_STANDALONE])
        return 0;
    if ((rc = ann_bool(c, A_STANDALONE, &s->standalone_worker_mode)))
        return rc;
    s->has_standalone_worker_mode = true;
    if (!s->is_local_gpu) {
        WARN(c, "%s has no effect when %s is false (remote workers are standalone)",
             tf__spec_akeys[A_STANDALONE], tf__spec_akeys[A_LOCAL]);
        return 0;
    }
    enum tf_isolation want = s->standalone_worker_mode ? TF_ISOLATION_HARD : TF_ISOLATION_SOFT;
    bool whole = s->isolation == TF_ISOLATION_SHARED || s->isolation == TF_ISOLATION_PARTITIONED;
    if (s->isolation == want || (!s->standalone_worker_mode && whole))
        return 0; /* consistent; whole GPUs run no worker at all */
    if (c->a[A_ISOLATION] || whole)
        return tf__spec_fail(
            c, TF_EINVAL, "%s: \"%s\" %s, but the isolation is %s (%s): drop one of them",
            tf__spec_akeys[A_STANDALONE], s->standalone_worker_mode ? "true" : "false",
            s->standalone_worker_mode
                ? "means the app reaches the GPU only through a standalone tf-worker (hard "
                  "isolation)"
                : "puts the worker in the app's own process (soft isolation)",
            tf_isolation_name(s->isolation),
            c->a[A_ISOLATION] ? tf__spec_akeys[A_ISOLATION] : "from the profile or pool");
    WARN(c, "%s: \"%s\": %s isolation instead of the profile's or pool's %s",
         tf__spec_akeys[A_STANDALONE], s->standalone_worker_mode ? "true" : "false",
         tf_isolation_name(want), tf_isolation_name(s->isolation));
    s->isolation = want;
    return 0;
}

/* Upstream's sidecar-worker (true: local GPU with a tf-worker sidecar, whatever is-local-gpu
 * says) and worker-pod-template (remote mode only: upstream refuses it on local pods). */
static int worker_keys(struct ctx *c)
{
    struct tf_spec *s = c->s;
    bool sidecar = false;
    int rc;
    if ((rc = standalone_key(c)))
        return rc;
    if (c->a[A_SIDECAR] && (rc = ann_bool(c, A_SIDECAR, &sidecar)))
        return rc;
    if (sidecar) {
        if (!s->is_local_gpu)
            WARN(c, "%s: \"true\" makes the workload use a local GPU (as upstream), %s is ignored",
                 tf__spec_akeys[A_SIDECAR], tf__spec_akeys[A_LOCAL]);
        s->is_local_gpu = true;
        if (s->isolation != TF_ISOLATION_HARD)
            WARN(c,
                 "%s: only hard isolation runs a tf-worker sidecar here; %s isolation works "
                 "without one",
                 tf__spec_akeys[A_SIDECAR], tf_isolation_name(s->isolation));
    }
    if (c->a[A_WORKER_TEMPLATE]) {
        if (s->is_local_gpu)
            return tf__spec_fail(c, TF_EINVAL,
                                 "%s: a worker pod template is not supported in local GPU mode "
                                 "(set %s: \"false\")",
                                 tf__spec_akeys[A_WORKER_TEMPLATE], tf__spec_akeys[A_LOCAL]);
        WARN(c, "%s is ignored: the controller builds remote worker pods itself",
             tf__spec_akeys[A_WORKER_TEMPLATE]);
    }
    return 0;
}

/* ---- vendor -------------------------------------------------------------------------------- */

/* The vendor: annotation > profile > the model's > the native resource's > the pool's
 * default. Free-form as upstream: known names are written canonically, others kept as
 * written with a warning. Soft isolation needs a limiter for the vendor's GPUs. */
static int parse_vendor(struct ctx *c)
{
    struct tf_spec *s = c->s;
    const struct tf_profile *p = c->prof;
    const char *v = NULL, *src = NULL;
    if (c->a[A_VENDOR]) {
        v = c->a[A_VENDOR];
        src = tf__spec_akeys[A_VENDOR];
    } else if (p && p->vendor) {
        v = p->vendor;
        src = "WorkloadProfile spec.vendor";
    }
    if (s->model) {
        if (v && (!tf_vendor_canonical(v) || strcmp(tf_vendor_canonical(v), s->model->vendor)))
            return tf__spec_fail(
                c, TF_EINVAL, "%s \"%s\" does not match %s \"%s\" (a %s GPU)", src, v,
                c->a[A_MODEL] ? tf__spec_akeys[A_MODEL] : "WorkloadProfile spec.gpuModel",
                s->gpu_model, s->model->vendor);
        v = s->model->vendor;
        src = c->a[A_MODEL] ? tf__spec_akeys[A_MODEL] : "WorkloadProfile spec.gpuModel";
    }
    for (size_t i = 0; !v && i < c->nctr; i++)
        if (c->ctr[i].vendor) {
            v = c->ctr[i].vendor;
            src = "the native GPU resource";
        }
    if (!v && c->pool && c->pool->vendor) {
        v = c->pool->vendor;
        src = "GPUPool spec.nodeManagerConfig.defaultVendor";
    }
    if (!v)
        return 0;
    const char *known = tf_vendor_known(v);
    if (!known)
        WARN(c, "%s: \"%s\" is not a vendor TensorFusion knows: only GPUs reporting it match", src,
             v);
    if (!(s->vendor = strdup(known ? known : v)))
        return TF_ENOMEM;
    if (s->isolation == TF_ISOLATION_SOFT && !tf_vendor_soft_isolation(s->vendor))
        return tf__spec_fail(c, TF_EINVAL,
                             "%s: soft isolation needs a limiter for %s GPUs and there is none "
                             "(%s); use hard or shared",
                             c->a[A_ISOLATION] ? tf__spec_akeys[A_ISOLATION] : "isolation soft",
                             s->vendor, src);
    return 0;
}

/* ---- the parse ----------------------------------------------------------------------------- */

static int parse_enabled(struct ctx *c)
{
    struct tf_spec *s = c->s;
    json_object *v;
    if (!c->labels || !json_object_object_get_ex(c->labels, TF_LABEL_ENABLED, &v))
        return 0;
    char num[32];
    const char *txt;
    int rc = scalar_text(c, "label", TF_LABEL_ENABLED, v, num, sizeof(num), &txt);
    if (rc || !txt)
        return rc;
    if (tf_streq_ci(txt, "true"))
        s->enabled = true;
    else if (tf_streq_ci(txt, "false"))
        s->opted_out = true;
    else
        return tf__spec_fail(c, TF_EINVAL, "label %s: \"%s\" must be \"true\" or \"false\"",
                             TF_LABEL_ENABLED, txt);
    return 0;
}

static int parse_body(struct ctx *c, json_object *meta, json_object *podspec)
{
    struct tf_spec *s = c->s;
    const struct tf_profile *p = c->prof;
    int rc;
    c->meta = meta;
    if (meta && !json_object_is_type(meta, json_type_object))
        return tf__spec_fail(c, TF_EINVAL, "metadata: must be a map");
    if (podspec && !json_object_is_type(podspec, json_type_object))
        return tf__spec_fail(c, TF_EINVAL, "spec: must be a map");
    c->labels = tf__get(meta, "labels");
    c->ann = tf__get(meta, "annotations");
    if ((rc = check_map(c, c->labels, "labels")) || (rc = check_map(c, c->ann, "annotations")))
        return rc;
    const char *name = tf__get_str(meta, "name");
    if (!name)
        name = tf__get_str(meta, "generateName");
    const char *ns = tf__get_str(meta, "namespace");
    if ((name && !(s->name = strdup(name))) || (ns && !(s->ns = strdup(ns))))
        return TF_ENOMEM;

    if ((rc = parse_enabled(c)))
        return rc;
    if (s->opted_out)
        return 0;
    /* Containers matter to enabled pods, and to auto-migration candidates. A pod that is
     * not ours is never rejected for its containers (Kubernetes validates those itself). */
    if (s->enabled) {
        if ((rc = tf__spec_read_containers(c, podspec)))
            return rc;
    } else if (c->pool && c->pool->auto_migration) {
        char why[256];
        char *saved = c->err;
        size_t savedlen = c->errlen;
        c->err = why;
        c->errlen = sizeof(why);
        rc = tf__spec_read_containers(c, podspec);
        c->err = saved;
        c->errlen = savedlen;
        if (rc == TF_ENOMEM)
            return rc;
        if (rc)
            WARN(c, "auto-migration skipped: %s", why);
        else if (tf__spec_native_total(c) > 0)
            s->enabled = s->auto_migrated = true;
    }
    if (!s->enabled) {
        int n = count_tf_annotations(c);
        if (n)
            WARN(c, "label %s is not \"true\": the %d %s* annotation(s) are ignored",
                 TF_LABEL_ENABLED, n, TF_KEY_PREFIX);
        return 0;
    }
    if ((rc = scan_keys(c)) || (rc = read_annotations(c)))
        return rc;
    if (p)
        for (size_t i = 0; i < p->nwarnings; i++)
            WARN(c, "%s", p->warnings[i]);

    /* Isolation: annotation > auto-migration's "shared" > profile > pool > soft. */
    if (c->a[A_ISOLATION]) {
        if (tf_isolation_parse(c->a[A_ISOLATION], &s->isolation))
            return tf__spec_fail(c, TF_EINVAL,
                                 "%s: \"%s\" must be one of shared, soft, hard, partitioned",
                                 tf__spec_akeys[A_ISOLATION], c->a[A_ISOLATION]);
    } else if (s->auto_migrated) {
        s->isolation = TF_ISOLATION_SHARED;
    } else if (p && p->isolation) {
        s->isolation = p->isolation;
    } else if (c->pool && c->pool->isolation) {
        s->isolation = c->pool->isolation;
    } else {
        s->isolation = TF_ISOLATION_SOFT;
    }

    if ((rc = parse_partition(c)))
        return rc;

    /* Pool, locality, model, vendor. */
    if (c->a[A_POOL]) {
        if ((rc = ann_name(c, A_POOL, "GPUPool", &s->pool)))
            return rc;
    } else if ((p && p->pool) || (c->pool && c->pool->pool_name)) {
        if (!(s->pool = strdup(p && p->pool ? p->pool : c->pool->pool_name)))
            return TF_ENOMEM;
    }
    if (c->a[A_LOCAL]) {
        if ((rc = ann_bool(c, A_LOCAL, &s->is_local_gpu)))
            return rc;
    } else if (p && p->is_local_gpu_set) {
        s->is_local_gpu = p->is_local_gpu;
    } else if (c->pool && c->pool->is_local_gpu_set) {
        s->is_local_gpu = c->pool->is_local_gpu;
    } else {
        s->is_local_gpu = true;
    }
    if ((rc = worker_keys(c)))
        return rc;
    const char *model = c->a[A_MODEL] ? c->a[A_MODEL] : p ? p->gpu_model : NULL;
    if (model) {
        if (!(s->gpu_model = strdup(model)))
            return TF_ENOMEM;
        s->model = tf_gpu_model_find(model);
        if (!s->model)
            WARN(c,
                 "%s: \"%s\" is not in the GPU model table (tfctl models): it matches GPUs "
                 "whose status.gpuModel is that name; compute percent cannot be converted to "
                 "TFLOPS",
                 c->a[A_MODEL] ? tf__spec_akeys[A_MODEL] : "WorkloadProfile spec.gpuModel", model);
    }
    if ((rc = parse_vendor(c)))
        return rc;
    if (c->a[A_DEDICATED] && (rc = ann_bool(c, A_DEDICATED, &s->dedicated_gpu)))
        return rc;
    if (s->dedicated_gpu && !s->gpu_model)
        return tf__spec_fail(c, TF_EINVAL, "%s: \"true\" needs %s (which GPU to dedicate)",
                             tf__spec_akeys[A_DEDICATED], tf__spec_akeys[A_MODEL]);
    if (s->dedicated_gpu && !s->model)
        return tf__spec_fail(c, TF_EINVAL,
                             "%s needs a known %s: \"%s\" is not in the GPU model table",
                             tf__spec_akeys[A_DEDICATED], tf__spec_akeys[A_MODEL], s->gpu_model);

    /* Autoscale (before resources: it relaxes the "no resources" error). */
    if (c->a[A_AUTOSCALE]) {
        if ((rc = ann_bool(c, A_AUTOSCALE, &s->autoscale)))
            return rc;
    } else if (p && p->autoscale_set) {
        s->autoscale = p->autoscale;
    }
    enum tf_autoscale_target tgt = TF_AUTOSCALE_UNSET;
    if (c->a[A_AUTOSCALE_TARGET]) {
        if (tf_autoscale_target_parse(c->a[A_AUTOSCALE_TARGET], &tgt))
            return tf__spec_fail(c, TF_EINVAL, "%s: \"%s\" must be one of compute, vram, all",
                                 tf__spec_akeys[A_AUTOSCALE_TARGET], c->a[A_AUTOSCALE_TARGET]);
        if (!s->autoscale)
            WARN(c, "%s has no effect unless %s is \"true\"", tf__spec_akeys[A_AUTOSCALE_TARGET],
                 tf__spec_akeys[A_AUTOSCALE]);
    } else if (p && p->autoscale_target) {
        tgt = p->autoscale_target;
    }
    if (s->autoscale)
        s->autoscale_target = tgt ? tgt : TF_AUTOSCALE_ALL;

    /* GPU count and indices (before resources: an explicit count stops seed 004's 100 %
     * compute limit, as upstream). */
    int explicit_count = 0;
    const char *count_src = NULL;
    if (c->a[A_GPU_COUNT]) {
        long long n;
        if (tf__parse_uint(c->a[A_GPU_COUNT], strlen(c->a[A_GPU_COUNT]), 1, TF_SPEC_MAX_GPUS, &n))
            return tf__spec_fail(c, TF_ERANGE,
                                 "%s: \"%s\" must be a whole number of GPUs from 1 to %d",
                                 tf__spec_akeys[A_GPU_COUNT], c->a[A_GPU_COUNT], TF_SPEC_MAX_GPUS);
        explicit_count = (int)n;
        count_src = tf__spec_akeys[A_GPU_COUNT];
    } else if (p && p->gpu_count) {
        explicit_count = p->gpu_count;
        count_src = "WorkloadProfile spec.gpuCount";
    }
    if (c->a[A_INDICES]) {
        if ((rc = tf__parse_indices(c->a[A_INDICES], s->gpu_indices, &s->ngpu_indices,
                                    tf__spec_akeys[A_INDICES], c->err, c->errlen)))
            return rc;
    } else if (p && p->ngpu_indices) {
        memcpy(s->gpu_indices, p->gpu_indices, sizeof(s->gpu_indices));
        s->ngpu_indices = p->ngpu_indices;
    }
    const char *migrated_from = NULL;
    for (size_t i = 0; !explicit_count && !migrated_from && i < c->nctr; i++)
        if (c->ctr[i].native)
            migrated_from = "the containers' native GPU limits";
    if ((rc = tf__spec_resources(c, migrated_from)))
        return rc;

    /* QoS: annotation > profile > high when requests == limits > pool > medium. */
    if (c->a[A_QOS]) {
        if (tf_qos_parse(c->a[A_QOS], &s->qos))
            return tf__spec_fail(c, TF_EINVAL,
                                 "%s: \"%s\" must be one of low, medium, high, critical",
                                 tf__spec_akeys[A_QOS], c->a[A_QOS]);
    } else if (p && p->qos) {
        s->qos = p->qos;
    } else if (tf__spec_guaranteed(s)) {
        s->qos = TF_QOS_HIGH;
    } else if (c->pool && c->pool->qos) {
        s->qos = c->pool->qos;
    } else {
        s->qos = TF_QOS_MEDIUM;
    }

    if ((rc = tf__spec_containers_and_count(c, explicit_count, count_src)))
        return rc;
    if (c->a[A_CGPUS] && (rc = tf__spec_container_gpus(c)))
        return rc;

    /* Names, rollout, worker mode, kill switches. */
    if (c->a[A_WORKLOAD] && (rc = ann_name(c, A_WORKLOAD, "TensorFusionWorkload", &s->workload)))
        return rc;
    if (c->a[A_PROFILE]) {
        if ((rc = ann_name(c, A_PROFILE, "WorkloadProfile", &s->workload_profile)))
            return rc;
        if (p && p->name && strcmp(p->name, s->workload_profile) != 0)
            WARN(c, "%s names \"%s\" but the WorkloadProfile applied is \"%s\"",
                 tf__spec_akeys[A_PROFILE], s->workload_profile, p->name);
    } else if (p && p->name && !(s->workload_profile = strdup(p->name))) {
        return TF_ENOMEM;
    }
    if (c->a[A_ENABLED_REPLICAS]) {
        long long n;
        if (tf__parse_uint(c->a[A_ENABLED_REPLICAS], strlen(c->a[A_ENABLED_REPLICAS]), 0, INT32_MAX,
                           &n))
            return tf__spec_fail(c, TF_ERANGE, "%s: \"%s\" must be a whole number of replicas",
                                 tf__spec_akeys[A_ENABLED_REPLICAS], c->a[A_ENABLED_REPLICAS]);
        if (n == 0)
            WARN(c, "%s: \"0\": no pod of the workload is taken over",
                 tf__spec_akeys[A_ENABLED_REPLICAS]);
        s->has_enabled_replicas = true;
        s->enabled_replicas = (int32_t)n;
    }
    if (p && p->replicas_set) {
        s->has_worker_replicas = true;
        s->worker_replicas = p->replicas;
    }
    if (c->a[A_DISABLE]) {
        struct feat_ctx fc = {c};
        if ((rc = tf_split_list(c->a[A_DISABLE], one_feature, &fc)))
            return rc;
    }
    if ((rc = tf__spec_gang(c)))
        return rc;
    /* Upstream ignores it in local GPU mode; here it still sizes a gang. */
    if (s->has_worker_replicas && s->is_local_gpu && !s->gang)
        WARN(c,
             "WorkloadProfile spec.replicas (%d) has no effect in local GPU mode: every pod "
             "carries its own worker (it sets the worker count of remote workloads and the size "
             "of a gang)",
             (int)s->worker_replicas);
    return 0;
}

void tf_spec_init(struct tf_spec *s)
{
    memset(s, 0, sizeof(*s));
}

void tf_spec_free(struct tf_spec *s)
{
    if (!s)
        return;
    free(s->name);
    free(s->ns);
    free(s->kind);
    free(s->pool);
    free(s->gpu_model);
    free(s->vendor);
    free(s->workload);
    free(s->workload_profile);
    free(s->partition);
    tf__strv_free(&s->disable_feature_names, &s->ndisable_feature_names);
    tf__strv_free(&s->inject_containers, &s->ninject_containers);
    for (size_t i = 0; i < s->ncontainers; i++) {
        free(s->containers[i].name);
        tf__strv_free(&s->containers[i].native_names, &s->containers[i].nnative_names);
        tf__strv_free(&s->containers[i].gpu_ids, &s->containers[i].ngpu_ids);
    }
    free(s->containers);
    tf__strv_free(&s->warnings, &s->nwarnings);
    tf_spec_init(s);
}

int tf__spec_parse_meta(json_object *meta, json_object *podspec, const struct tf_profile *profile,
                        const struct tf_pool_defaults *pool, struct tf_spec *out, char *err,
                        size_t errlen)
{
    tf_spec_init(out);
    struct ctx c = {.s = out, .prof = profile, .pool = pool, .err = err, .errlen = errlen};
    int rc = parse_body(&c, meta, podspec);
    free(c.ctr);
    if (rc)
        tf_spec_free(out);
    return rc;
}

int tf_spec_parse(json_object *pod, const struct tf_profile *profile,
                  const struct tf_pool_defaults *pool, struct tf_spec *out, char *err,
                  size_t errlen)
{
    if (!json_object_is_type(pod, json_type_object)) {
        tf_spec_init(out);
        tf_errf(err, errlen, "pod: not a map");
        return TF_EINVAL;
    }
    json_object *meta = tf__get(pod, "metadata");
    if (meta)
        return tf__spec_parse_meta(meta, tf__get(pod, "spec"), profile, pool, out, err, errlen);
    return tf__spec_parse_meta(pod, NULL, profile, pool, out, err, errlen);
}
