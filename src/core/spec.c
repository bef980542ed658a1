/* SPDX-License-Identifier: Apache-2.0
 *
 * Pod labels + annotations (+ WorkloadProfile, pool defaults, seed 004 nvidia.com/gpu limits)
 * into a normalised struct tf_spec (see spec.h; user documentation in docs/spec.md).
 */
#include "core/spec.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/quantity.h"
#include "core/spec_util.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- enum names ---------------------------------------------------------------------------- */

static const char *const isolation_names[] = {NULL, "shared", "soft", "hard", "partitioned"};
static const char *const qos_names[] = {NULL, "low", "medium", "high", "critical"};
static const char *const target_names[] = {NULL, "compute", "vram", "all"};
static const char *const feature_names[] = {"gpu-limiter", "gpu-opt", "mem-manager",
                                            "start-worker"};
#define NFEATURES (sizeof(feature_names) / sizeof(feature_names[0]))

static int parse_enum(const char *s, const char *const *names, int n)
{
    for (int i = 1; i < n; i++)
        if (tf_streq_ci(s, names[i]))
            return i;
    return 0;
}

const char *tf_isolation_name(enum tf_isolation v)
{
    return (unsigned)v < 5 ? isolation_names[v] : NULL;
}

int tf_isolation_parse(const char *s, enum tf_isolation *out)
{
    int v = parse_enum(s, isolation_names, 5);
    if (!v)
        return TF_EINVAL;
    *out = (enum tf_isolation)v;
    return 0;
}

const char *tf_qos_name(enum tf_qos v)
{
    return (unsigned)v < 5 ? qos_names[v] : NULL;
}

int tf_qos_parse(const char *s, enum tf_qos *out)
{
    int v = parse_enum(s, qos_names, 5);
    if (!v)
        return TF_EINVAL;
    *out = (enum tf_qos)v;
    return 0;
}

const char *tf_autoscale_target_name(enum tf_autoscale_target v)
{
    return (unsigned)v < 4 ? target_names[v] : NULL;
}

int tf_autoscale_target_parse(const char *s, enum tf_autoscale_target *out)
{
    int v = parse_enum(s, target_names, 4);
    if (!v)
        return TF_EINVAL;
    *out = (enum tf_autoscale_target)v;
    return 0;
}

const char *tf_feature_name(enum tf_feature f)
{
    for (size_t i = 0; i < NFEATURES; i++)
        if ((unsigned)f == 1u << i)
            return feature_names[i];
    return NULL;
}

int tf_feature_parse(const char *s, enum tf_feature *out)
{
    for (size_t i = 0; i < NFEATURES; i++) {
        if (tf_streq_ci(s, feature_names[i])) {
            *out = (enum tf_feature)(1u << i);
            return 0;
        }
    }
    return TF_EINVAL;
}

int64_t tf_spec_res_tflops_on(const struct tf_spec_res *r, int64_t gpu_tflops_milli)
{
    if (r->tflops_set)
        return r->tflops_milli;
    if (r->percent_set)
        return tf_percent_to_tflops(r->percent_bp, gpu_tflops_milli);
    return 0;
}

/* ---- keys ---------------------------------------------------------------------------------- */

enum akey {
    A_TFLOPS_REQ,
    A_TFLOPS_LIM,
    A_VRAM_REQ,
    A_VRAM_LIM,
    A_PCT_REQ,
    A_PCT_LIM,
    A_INJECT,
    A_QOS,
    A_LOCAL,
    A_GPU_COUNT,
    A_POOL,
    A_VENDOR,
    A_MODEL,
    A_DEDICATED,
    A_ISOLATION,
    A_INDICES,
    A_CGC,
    A_CGPUS,
    A_WORKLOAD,
    A_PROFILE,
    A_ENABLED_REPLICAS,
    A_AUTOSCALE,
    A_AUTOSCALE_TARGET,
    A_STANDALONE,
    A_DISABLE,
    NKEYS
};

static const char *const akeys[NKEYS] = {
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
};

/* Annotations the system itself writes on pods (scheduler, webhook, device plugin): known,
 * not user input, never warned about. */
static const char *const system_annotations[] = {
    "gpu-ids",           "index",
    "selected-workload", "pod-counter-key",
    "tf-pod-count",      "hourly-pricing",
    "gpu-released",      "eviction-protection",
    "port-number",       "pending-owned-workload",
    "last-sync",         "workload-mode",
};

/* Labels of the tensor-fusion.ai domain that are not ours to interpret. */
static const char *const system_labels[] = {
    "component",   "managed-by", "cluster",   "pod-template-hash", "node-selector-hash",
    "worker-name", "host-port",  "port-name", "do-not-disrupt",    "node-class",
};

#define NELEMS(a) (sizeof(a) / sizeof((a)[0]))
#define PREFIX_LEN (sizeof(TF_KEY_PREFIX) - 1)

static int akey_index(const char *k)
{
    for (int i = 0; i < NKEYS; i++)
        if (!strcmp(k, akeys[i]))
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

/* ---- parse context ------------------------------------------------------------------------- */

struct container {
    const char *name; /* borrowed from the pod tree */
    int native;       /* nvidia.com/gpu limit */
};

/* One resource value with where it came from, for messages naming the key. */
struct val {
    int64_t v;
    bool set;
    const char *src;
};

struct side {
    struct val tflops, pct, vram;
};

struct ctx {
    struct tf_spec *s;
    const struct tf_profile *prof;
    const struct tf_pool_defaults *pool;
    char *err;
    size_t errlen;
    json_object *meta, *labels, *ann;
    bool have_containers;
    struct container *ctr;
    size_t nctr;
    const char *a[NKEYS]; /* annotation values as text, NULL when absent */
    char num[NKEYS][32];  /* text of integer annotation values */
};

#define WARN(c, ...)                                                                               \
    do {                                                                                           \
        int wrc_ = tf__warn(&(c)->s->warnings, &(c)->s->nwarnings, __VA_ARGS__);                   \
        if (wrc_)                                                                                  \
            return wrc_;                                                                           \
    } while (0)

static int fail(struct ctx *c, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct ctx *c, int rc, const char *fmt, ...)
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
        return fail(c, TF_EINVAL, "%s: the %s value must be a string", key, where);
    }
    WARN(c, "%s: %s value %s is not a string; Kubernetes rejects non-string %ss (quote it: '%s')",
         key, where, *out, where, *out);
    return 0;
}

/* ---- containers (seed 004 input) ----------------------------------------------------------- */

static int native_gpus(struct ctx *c, size_t i, const char *name, json_object *q, int *out)
{
    const char *txt;
    char buf[32];
    if (json_object_is_type(q, json_type_int)) {
        snprintf(buf, sizeof(buf), "%" PRId64, json_object_get_int64(q));
        txt = buf;
    } else if (json_object_is_type(q, json_type_string) ||
               json_object_is_type(q, json_type_double)) {
        txt = json_object_get_string(q);
    } else {
        return fail(c, TF_EINVAL,
                    "spec.containers[%zu] (%s): resources.limits.%s must be a whole number", i,
                    name, TF_RES_NVIDIA_GPU);
    }
    int64_t milli;
    char key[160];
    snprintf(key, sizeof(key), "spec.containers[%zu] (%s): resources.limits.%s", i, name,
             TF_RES_NVIDIA_GPU);
    int rc = tf_quantity_milli(txt, &milli, key, c->err, c->errlen);
    if (rc)
        return rc;
    if (milli % 1000 != 0 || milli / 1000 > TF_SPEC_MAX_GPUS)
        return fail(c, TF_ERANGE, "%s: \"%s\" must be a whole number of GPUs (0..%d)", key, txt,
                    TF_SPEC_MAX_GPUS);
    *out = (int)(milli / 1000);
    return 0;
}

static int read_containers(struct ctx *c, json_object *podspec)
{
    json_object *arr = tf__get(podspec, "containers");
    if (!arr)
        return 0;
    if (!json_object_is_type(arr, json_type_array))
        return fail(c, TF_EINVAL, "spec.containers: must be a list");
    c->have_containers = true;
    size_t n = json_object_array_length(arr);
    if (n > 4096)
        return fail(c, TF_ERANGE, "spec.containers: %zu containers, at most 4096", n);
    if (n == 0)
        return 0;
    c->ctr = calloc(n, sizeof(*c->ctr));
    if (!c->ctr)
        return TF_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        json_object *ct = json_object_array_get_idx(arr, i);
        const char *name = tf__get_str(ct, "name");
        if (!name || !*name)
            return fail(c, TF_EINVAL, "spec.containers[%zu]: name is missing", i);
        for (size_t j = 0; j < c->nctr; j++)
            if (!strcmp(c->ctr[j].name, name))
                return fail(c, TF_EINVAL,
                            "spec.containers[%zu]: container name \"%s\" is used "
                            "twice",
                            i, name);
        c->ctr[c->nctr].name = name;
        json_object *q = tf__get(tf__get(tf__get(ct, "resources"), "limits"), TF_RES_NVIDIA_GPU);
        if (q) {
            int rc = native_gpus(c, i, name, q, &c->ctr[c->nctr].native);
            if (rc)
                return rc;
        }
        c->nctr++;
    }
    return 0;
}

static struct container *find_container(struct ctx *c, const char *name, size_t len)
{
    for (size_t i = 0; i < c->nctr; i++)
        if (strlen(c->ctr[i].name) == len && !memcmp(c->ctr[i].name, name, len))
            return &c->ctr[i];
    return NULL;
}

static int native_total(struct ctx *c)
{
    int n = 0;
    for (size_t i = 0; i < c->nctr; i++)
        n += c->ctr[i].native;
    return n;
}

/* ---- metadata scan ------------------------------------------------------------------------- */

static int check_map(struct ctx *c, json_object *m, const char *what)
{
    if (m && !json_object_is_type(m, json_type_object))
        return fail(c, TF_EINVAL, "metadata.%s: must be a map of strings", what);
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
        if (!c->ann || !json_object_object_get_ex(c->ann, akeys[i], &v))
            continue;
        int rc = scalar_text(c, "annotation", akeys[i], v, c->num[i], sizeof(c->num[i]), &c->a[i]);
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
        return fail(c, TF_EINVAL, "%s: \"%s\" must be \"true\" or \"false\"", akeys[k], c->a[k]);
    return 0;
}

static int ann_name(struct ctx *c, int k, const char *what, char **out)
{
    if (!tf__is_object_name(c->a[k]))
        return fail(c, TF_EINVAL,
                    "%s: \"%s\" is not a valid %s name (lower-case letters, digits, "
                    "'-' and '.')",
                    akeys[k], c->a[k], what);
    return (*out = strdup(c->a[k])) ? 0 : TF_ENOMEM;
}

/* ---- resources ----------------------------------------------------------------------------- */

static void set_val(struct val *d, int64_t v, const char *src)
{
    d->v = v;
    d->set = true;
    d->src = src;
}

/* Annotation side: tflops / percent / vram keys, mutually exclusive compute. */
static int ann_side(struct ctx *c, struct side *sd, int kt, int kp, int kv)
{
    int rc;
    if (c->a[kt] && c->a[kp])
        return fail(c, TF_EINVAL, "%s and %s are mutually exclusive: set only one", akeys[kt],
                    akeys[kp]);
    if (c->a[kt]) {
        int64_t m;
        if ((rc = tf_quantity_milli(c->a[kt], &m, akeys[kt], c->err, c->errlen)))
            return rc;
        set_val(&sd->tflops, m, akeys[kt]);
    }
    if (c->a[kp]) {
        int32_t bp;
        if ((rc = tf_percent_parse(c->a[kp], &bp, akeys[kp], c->err, c->errlen)))
            return rc;
        set_val(&sd->pct, bp, akeys[kp]);
    }
    if (c->a[kv]) {
        int64_t b;
        if ((rc = tf_quantity_bytes(c->a[kv], &b, akeys[kv], c->err, c->errlen)))
            return rc;
        set_val(&sd->vram, b, akeys[kv]);
    }
    return 0;
}

/* Fills the dimensions SD lacks from R (profile or pool defaults). */
static void fill_side(struct side *sd, const struct tf_spec_res *r, const char *src_tflops,
                      const char *src_pct, const char *src_vram)
{
    if (!sd->tflops.set && !sd->pct.set) {
        if (r->tflops_set)
            set_val(&sd->tflops, r->tflops_milli, src_tflops);
        else if (r->percent_set)
            set_val(&sd->pct, r->percent_bp, src_pct);
    }
    if (!sd->vram.set && r->vram_set)
        set_val(&sd->vram, r->vram_bytes, src_vram);
}

static bool side_any(const struct side *sd)
{
    return sd->tflops.set || sd->pct.set || sd->vram.set;
}

static bool compute_set(const struct side *sd)
{
    return sd->tflops.set || sd->pct.set;
}

static int64_t compute_nonzero(const struct side *sd)
{
    return sd->tflops.set ? sd->tflops.v : sd->pct.set ? sd->pct.v : 0;
}

/* Writes a side's value as the user wrote it: "20" TFLOPS, "50" percent, "4Gi". */
static void fmt_val(const struct val *v, int kind, char *buf, size_t len)
{
    if (kind == 0)
        tf_quantity_format_milli(v->v, buf, len);
    else if (kind == 1)
        tf_quantity_format_milli(v->v * 10, buf, len);
    else
        tf_quantity_format_bytes(v->v, buf, len);
}

static int check_not_above(struct ctx *c, const struct val *req, int rkind, const struct val *lim,
                           int lkind, int64_t rv, int64_t lv)
{
    if (rv <= lv)
        return 0;
    char a[32], b[32];
    fmt_val(req, rkind, a, sizeof(a));
    fmt_val(lim, lkind, b, sizeof(b));
    return fail(c, TF_EINVAL, "%s \"%s\" is above %s \"%s\": a request cannot exceed its limit",
                req->src, a, lim->src, b);
}

static int resources(struct ctx *c, bool migrated)
{
    struct tf_spec *s = c->s;
    struct side req = {0}, lim = {0};
    int rc;
    if ((rc = ann_side(c, &req, A_TFLOPS_REQ, A_PCT_REQ, A_VRAM_REQ)) ||
        (rc = ann_side(c, &lim, A_TFLOPS_LIM, A_PCT_LIM, A_VRAM_LIM)))
        return rc;
    if (c->prof) {
        fill_side(&req, &c->prof->requests, "WorkloadProfile spec.resources.requests.tflops",
                  "WorkloadProfile spec.resources.requests.computePercent",
                  "WorkloadProfile spec.resources.requests.vram");
        fill_side(&lim, &c->prof->limits, "WorkloadProfile spec.resources.limits.tflops",
                  "WorkloadProfile spec.resources.limits.computePercent",
                  "WorkloadProfile spec.resources.limits.vram");
    }
    if (c->pool) {
        if ((c->pool->requests.tflops_set && c->pool->requests.percent_set) ||
            (c->pool->limits.tflops_set && c->pool->limits.percent_set))
            return fail(c, TF_EINVAL,
                        "pool defaults: tflops and computePercent are mutually "
                        "exclusive");
        fill_side(&req, &c->pool->requests, "pool default requests.tflops",
                  "pool default requests.computePercent", "pool default requests.vram");
        fill_side(&lim, &c->pool->limits, "pool default limits.tflops",
                  "pool default limits.computePercent", "pool default limits.vram");
    }

    /* Whole-GPU allocations replace whatever was asked. */
    if (s->dedicated_gpu || s->isolation == TF_ISOLATION_SHARED) {
        const char *why =
            s->dedicated_gpu ? TF_ANN_DEDICATED_GPU ": true" : TF_ANN_ISOLATION ": shared";
        if (side_any(&req) || side_any(&lim))
            WARN(c, "%s allocates whole GPUs: the TFLOPS/percent/VRAM values (%s) are ignored", why,
                 side_any(&req) ? (req.tflops.set ? req.tflops.src
                                   : req.pct.set  ? req.pct.src
                                                  : req.vram.src)
                                : (lim.tflops.set ? lim.tflops.src
                                   : lim.pct.set  ? lim.pct.src
                                                  : lim.vram.src));
        s->whole_gpu = true;
        struct tf_spec_res w = {0};
        if (s->dedicated_gpu) {
            w.tflops_milli = s->model->tflops_milli;
            w.tflops_set = true;
        } else {
            w.percent_bp = 10000;
            w.percent_set = true;
        }
        if (s->model) {
            w.vram_bytes = s->model->vram_bytes;
            w.vram_set = true;
        }
        s->requests = s->limits = w;
        return 0;
    }

    /* Seed 004 migration into a fractional mode: the native limit means one whole GPU of
     * compute unless a compute limit was given. */
    if (migrated && !compute_set(&lim))
        set_val(&lim.pct, 10000, TF_RES_NVIDIA_GPU " limit");

    /* Explicit zero limits block the workload entirely: refuse them. */
    const struct val *lv[] = {&lim.tflops, &lim.pct, &lim.vram};
    for (int i = 0; i < 3; i++)
        if (lv[i]->set && lv[i]->v == 0)
            return fail(c, TF_ERANGE,
                        "%s: a limit of 0 allows nothing; remove it or set a "
                        "positive value",
                        lv[i]->src);

    /* Inheritance: a missing request takes the limit; a missing limit takes a non-zero
     * request (same unit). */
    if (!compute_set(&req))
        req.tflops = lim.tflops, req.pct = lim.pct;
    else if (!compute_set(&lim) && compute_nonzero(&req))
        lim.tflops = req.tflops, lim.pct = req.pct;
    if (!req.vram.set)
        req.vram = lim.vram;
    else if (!lim.vram.set && req.vram.v > 0)
        lim.vram = req.vram;

    if (!side_any(&req) && !side_any(&lim)) {
        if (!s->autoscale)
            return fail(c, TF_EINVAL,
                        "no GPU resources requested: set %s/%s (or %s/%s) and %s/%s, or %s: "
                        "shared for whole GPUs",
                        TF_ANN_TFLOPS_REQUEST, TF_ANN_TFLOPS_LIMIT, TF_ANN_PERCENT_REQUEST,
                        TF_ANN_PERCENT_LIMIT, TF_ANN_VRAM_REQUEST, TF_ANN_VRAM_LIMIT,
                        TF_ANN_ISOLATION);
        WARN(c, "no GPU resources requested: %s will size the workload from its usage",
             TF_ANN_AUTOSCALE);
    }

    /* request <= limit, per dimension; mixed units compare through the GPU model. */
    int64_t cap = s->model ? s->model->tflops_milli : 0;
    if (req.tflops.set && lim.tflops.set)
        rc = check_not_above(c, &req.tflops, 0, &lim.tflops, 0, req.tflops.v, lim.tflops.v);
    else if (req.pct.set && lim.pct.set)
        rc = check_not_above(c, &req.pct, 1, &lim.pct, 1, req.pct.v, lim.pct.v);
    else if (req.tflops.set && lim.pct.set && cap)
        rc = check_not_above(c, &req.tflops, 0, &lim.pct, 1, req.tflops.v,
                             tf_percent_to_tflops((int32_t)lim.pct.v, cap));
    else if (req.pct.set && lim.tflops.set && cap)
        rc = check_not_above(c, &req.pct, 1, &lim.tflops, 0,
                             tf_percent_to_tflops((int32_t)req.pct.v, cap), lim.tflops.v);
    else if (compute_set(&req) && compute_set(&lim))
        WARN(c, "%s and %s use different units and no known %s: cannot check request <= limit",
             req.tflops.set ? req.tflops.src : req.pct.src,
             lim.tflops.set ? lim.tflops.src : lim.pct.src, TF_ANN_GPU_MODEL);
    if (rc)
        return rc;
    if (req.vram.set && lim.vram.set &&
        (rc = check_not_above(c, &req.vram, 2, &lim.vram, 2, req.vram.v, lim.vram.v)))
        return rc;

    /* Against the GPU model's capacity: a request above it can never be scheduled. */
    if (s->model) {
        char a[32], b[32];
        int64_t vmax = 0;
        for (size_t i = 0; i < tf_gpu_model_count(); i++) {
            const struct tf_gpu_model *m = tf_gpu_model_at(i);
            if (tf_gpu_model_matches(m, s->gpu_model) && m->vram_bytes > vmax)
                vmax = m->vram_bytes;
        }
        if (req.tflops.set && req.tflops.v > cap) {
            tf_quantity_format_milli(req.tflops.v, a, sizeof(a));
            tf_quantity_format_milli(cap, b, sizeof(b));
            return fail(c, TF_ERANGE, "%s \"%s\" is more than one %s GPU has (%s TFLOPS)",
                        req.tflops.src, a, s->gpu_model, b);
        }
        if (req.vram.set && req.vram.v > vmax) {
            tf_quantity_format_bytes(req.vram.v, a, sizeof(a));
            tf_quantity_format_bytes(vmax, b, sizeof(b));
            return fail(c, TF_ERANGE, "%s \"%s\" is more than one %s GPU has (%s)", req.vram.src, a,
                        s->gpu_model, b);
        }
        if (lim.tflops.set && lim.tflops.v > cap && lim.tflops.src != req.tflops.src)
            WARN(c, "%s is above the %s's capacity: compute is effectively uncapped",
                 lim.tflops.src, s->gpu_model);
    }

    s->requests.tflops_set = req.tflops.set;
    s->requests.tflops_milli = req.tflops.v;
    s->requests.percent_set = req.pct.set;
    s->requests.percent_bp = (int32_t)req.pct.v;
    s->requests.vram_set = req.vram.set;
    s->requests.vram_bytes = req.vram.v;
    s->limits.tflops_set = lim.tflops.set;
    s->limits.tflops_milli = lim.tflops.v;
    s->limits.percent_set = lim.pct.set;
    s->limits.percent_bp = (int32_t)lim.pct.v;
    s->limits.vram_set = lim.vram.set;
    s->limits.vram_bytes = lim.vram.v;
    return 0;
}

/* requests == limits on every dimension, and something non-zero. */
static bool guaranteed(const struct tf_spec *s)
{
    const struct tf_spec_res *r = &s->requests, *l = &s->limits;
    if (r->tflops_set != l->tflops_set || r->percent_set != l->percent_set ||
        r->vram_set != l->vram_set)
        return false;
    if ((r->tflops_set && r->tflops_milli != l->tflops_milli) ||
        (r->percent_set && r->percent_bp != l->percent_bp) ||
        (r->vram_set && r->vram_bytes != l->vram_bytes))
        return false;
    return (r->tflops_set && r->tflops_milli) || (r->percent_set && r->percent_bp) ||
           (r->vram_set && r->vram_bytes);
}

/* ---- containers and GPU counts ------------------------------------------------------------- */

struct cgc_entry {
    const char *name;
    int count;
};

static int add_container(struct ctx *c, const char *name, size_t len, int count, int native)
{
    struct tf_spec *s = c->s;
    struct tf_spec_container *grown = realloc(s->containers, (s->ncontainers + 1) * sizeof(*grown));
    if (!grown)
        return TF_ENOMEM;
    s->containers = grown;
    struct tf_spec_container *ct = &grown[s->ncontainers];
    memset(ct, 0, sizeof(*ct));
    if (!(ct->name = strndup(name, len)))
        return TF_ENOMEM;
    ct->gpu_count = count;
    ct->native_gpus = native;
    ct->migrated = native > 0;
    s->ncontainers++;
    return 0;
}

static json_object *parse_json_ann(struct ctx *c, int k, int *rc)
{
    enum json_tokener_error jerr;
    json_object *o = json_tokener_parse_verbose(c->a[k], &jerr);
    if (!o || !json_object_is_type(o, json_type_object)) {
        *rc = fail(c, TF_EPARSE, "%s: \"%.60s\" is not a JSON object of container names (%s)",
                   akeys[k], c->a[k], o ? "not an object" : json_tokener_error_desc(jerr));
        json_object_put(o);
        return NULL;
    }
    *rc = 0;
    return o;
}

static int check_container_name(struct ctx *c, int k, const char *name, size_t len)
{
    if (len == 0)
        return fail(c, TF_EINVAL, "%s: empty container name", akeys[k]);
    if (c->have_containers && !find_container(c, name, len))
        return fail(c, TF_EINVAL, "%s: container \"%.*s\" is not in spec.containers", akeys[k],
                    (int)(len > 64 ? 64 : len), name);
    return 0;
}

struct inject_ctx {
    struct ctx *c;
};

static int one_inject(const char *item, size_t len, void *arg)
{
    struct ctx *c = ((struct inject_ctx *)arg)->c;
    int rc = check_container_name(c, A_INJECT, item, len);
    if (rc)
        return rc;
    if (tf__strv_has(c->s->inject_containers, c->s->ninject_containers, item, len))
        return tf__warn(&c->s->warnings, &c->s->nwarnings,
                        "%s: container \"%.*s\" is listed "
                        "twice",
                        akeys[A_INJECT], (int)len, item);
    return tf__strv_push(&c->s->inject_containers, &c->s->ninject_containers, item, len);
}

static int containers_and_count(struct ctx *c, int explicit_count, const char *count_src)
{
    struct tf_spec *s = c->s;
    int rc = 0;
    json_object *cgc = NULL;
    bool explicit_inject = c->a[A_INJECT] != NULL;

    if (explicit_inject) {
        struct inject_ctx ic = {c};
        if ((rc = tf_split_list(c->a[A_INJECT], one_inject, &ic)))
            return rc;
        if (s->ninject_containers == 0)
            return fail(c, TF_EINVAL, "%s: no container named", akeys[A_INJECT]);
    }

    int sum = 0, max = 0;
    if (c->a[A_CGC]) {
        if (!(cgc = parse_json_ann(c, A_CGC, &rc)))
            return rc;
        json_object_object_foreach(cgc, k, v)
        {
            if ((rc = check_container_name(c, A_CGC, k, strlen(k))))
                goto out;
            if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1 ||
                json_object_get_int64(v) > TF_SPEC_MAX_GPUS) {
                rc = fail(c, TF_ERANGE,
                          "%s: container \"%s\": %s must be an integer GPU count "
                          "1..%d",
                          akeys[A_CGC], k, json_object_get_string(v), TF_SPEC_MAX_GPUS);
                goto out;
            }
            if (explicit_inject &&
                !tf__strv_has(s->inject_containers, s->ninject_containers, k, strlen(k))) {
                rc = fail(c, TF_EINVAL, "%s: container \"%s\" is not in %s", akeys[A_CGC], k,
                          akeys[A_INJECT]);
                goto out;
            }
            int n = (int)json_object_get_int64(v);
            struct container *ct = find_container(c, k, strlen(k));
            if ((rc = add_container(c, k, strlen(k), n, ct ? ct->native : 0)))
                goto out;
            sum += n;
            max = n > max ? n : max;
        }
        if (s->ncontainers == 0) {
            rc = fail(c, TF_EINVAL, "%s: names no container", akeys[A_CGC]);
            goto out;
        }
        for (size_t i = 0; i < s->ninject_containers; i++) {
            if (!json_object_object_get_ex(cgc, s->inject_containers[i], NULL)) {
                rc = fail(c, TF_EINVAL, "%s: no GPU count for container \"%s\" of %s", akeys[A_CGC],
                          s->inject_containers[i], akeys[A_INJECT]);
                goto out;
            }
        }
        if (!explicit_count && sum > TF_SPEC_MAX_GPUS) {
            rc = fail(c, TF_ERANGE, "%s: %d GPUs in total, at most %d", akeys[A_CGC], sum,
                      TF_SPEC_MAX_GPUS);
            goto out;
        }
    } else if (explicit_inject) {
        for (size_t i = 0; i < s->ninject_containers; i++) {
            const char *n = s->inject_containers[i];
            struct container *ct = find_container(c, n, strlen(n));
            int native = ct ? ct->native : 0;
            if ((rc = add_container(c, n, strlen(n), native, native)))
                goto out;
            sum += native;
            max = native > max ? native : max;
        }
    } else if (native_total(c) > 0) {
        for (size_t i = 0; i < c->nctr; i++) {
            if (!c->ctr[i].native)
                continue;
            const char *n = c->ctr[i].name;
            if ((rc = add_container(c, n, strlen(n), c->ctr[i].native, c->ctr[i].native)))
                goto out;
            sum += c->ctr[i].native;
            max = c->ctr[i].native > max ? c->ctr[i].native : max;
        }
    } else if (c->nctr == 1) {
        if ((rc = add_container(c, c->ctr[0].name, strlen(c->ctr[0].name), 0, 0)))
            goto out;
    } else if (c->nctr > 1) {
        rc = fail(c, TF_EINVAL,
                  "%s: required when the pod has %zu containers (name the ones "
                  "that use the GPU, comma-separated)",
                  akeys[A_INJECT], c->nctr);
        goto out;
    }
    if (!cgc && sum > TF_SPEC_MAX_GPUS) {
        rc = fail(c, TF_ERANGE, "%s limits: %d GPUs in total, at most %d", TF_RES_NVIDIA_GPU, sum,
                  TF_SPEC_MAX_GPUS);
        goto out;
    }

    /* The pod's GPU count: explicit > per-container sum > gpu-indices > 1. */
    if (explicit_count) {
        s->gpu_count = explicit_count;
        if (max > explicit_count) {
            rc = fail(c, TF_EINVAL,
                      "%s \"%d\" is less than the %d GPUs one container asks for "
                      "(%s)",
                      count_src, explicit_count, max,
                      cgc ? akeys[A_CGC] : TF_RES_NVIDIA_GPU " limit");
            goto out;
        }
        if (!cgc && sum && sum != explicit_count &&
            (rc = tf__warn(&s->warnings, &s->nwarnings,
                           "%s \"%d\" overrides the %d GPUs of the %s limits", count_src,
                           explicit_count, sum, TF_RES_NVIDIA_GPU)))
            goto out;
    } else if (sum) {
        s->gpu_count = sum;
    } else if (s->ngpu_indices) {
        s->gpu_count = s->ngpu_indices;
    } else {
        s->gpu_count = 1;
    }
    for (size_t i = 0; i < s->ncontainers; i++)
        if (s->containers[i].gpu_count == 0)
            s->containers[i].gpu_count = s->gpu_count;
    if (s->ngpu_indices && s->ngpu_indices < s->gpu_count) {
        rc =
            fail(c, TF_EINVAL, "%s lists %d GPU index(es) but the workload needs %d GPUs (%s)",
                 c->a[A_INDICES] ? akeys[A_INDICES] : "WorkloadProfile spec.gpuIndices",
                 s->ngpu_indices, s->gpu_count, explicit_count ? count_src : "from the containers");
        goto out;
    }
    if (!explicit_inject)
        for (size_t i = 0; i < s->ncontainers; i++)
            if ((rc = tf__strv_push(&s->inject_containers, &s->ninject_containers,
                                    s->containers[i].name, strlen(s->containers[i].name))))
                goto out;
out:
    json_object_put(cgc);
    return rc;
}

static int container_gpus(struct ctx *c)
{
    struct tf_spec *s = c->s;
    int rc;
    json_object *o = parse_json_ann(c, A_CGPUS, &rc);
    if (!o)
        return rc;
    json_object_object_foreach(o, k, v)
    {
        if ((rc = check_container_name(c, A_CGPUS, k, strlen(k))))
            goto out;
        if (!json_object_is_type(v, json_type_array) ||
            json_object_array_length(v) > TF_SPEC_MAX_GPUS) {
            rc = fail(c, TF_EINVAL, "%s: container \"%s\": must be a list of at most %d GPU IDs",
                      akeys[A_CGPUS], k, TF_SPEC_MAX_GPUS);
            goto out;
        }
        struct tf_spec_container *ct = NULL;
        for (size_t i = 0; i < s->ncontainers; i++)
            if (!strcmp(s->containers[i].name, k))
                ct = &s->containers[i];
        char **ids = NULL;
        size_t nids = 0;
        for (size_t i = 0; i < json_object_array_length(v); i++) {
            json_object *id = json_object_array_get_idx(v, i);
            const char *str =
                json_object_is_type(id, json_type_string) ? json_object_get_string(id) : NULL;
            if (!str || !*str) {
                tf__strv_free(&ids, &nids);
                rc = fail(c, TF_EINVAL, "%s: container \"%s\": GPU IDs must be non-empty strings",
                          akeys[A_CGPUS], k);
                goto out;
            }
            if (tf__strv_has(ids, nids, str, strlen(str))) {
                tf__strv_free(&ids, &nids);
                rc = fail(c, TF_EINVAL, "%s: container \"%s\": GPU ID \"%s\" is listed twice",
                          akeys[A_CGPUS], k, str);
                goto out;
            }
            if ((rc = tf__strv_push(&ids, &nids, str, strlen(str)))) {
                tf__strv_free(&ids, &nids);
                goto out;
            }
        }
        if (!ct) {
            tf__strv_free(&ids, &nids);
            if ((rc = tf__warn(&s->warnings, &s->nwarnings,
                               "%s: container \"%s\" does not use the GPU, ignored", akeys[A_CGPUS],
                               k)))
                goto out;
            continue;
        }
        tf__strv_free(&ct->gpu_ids, &ct->ngpu_ids);
        ct->gpu_ids = ids;
        ct->ngpu_ids = nids;
        if ((int)nids != ct->gpu_count &&
            (rc = tf__warn(&s->warnings, &s->nwarnings,
                           "%s: container \"%s\" has %zu GPU IDs for %d GPUs", akeys[A_CGPUS], k,
                           nids, ct->gpu_count)))
            goto out;
    }
out:
    json_object_put(o);
    return rc;
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
    if (tf_feature_parse(name, &f) == 0)
        s->disable_features |= f;
    else
        WARN(c,
             "%s: unknown feature \"%s\" (known: gpu-limiter, gpu-opt, mem-manager, "
             "start-worker)",
             akeys[A_DISABLE], name);
    return tf__strv_push(&s->disable_feature_names, &s->ndisable_feature_names, name, len);
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
        return fail(c, TF_EINVAL, "label %s: \"%s\" must be \"true\" or \"false\"",
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
        return fail(c, TF_EINVAL, "metadata: must be a map");
    if (podspec && !json_object_is_type(podspec, json_type_object))
        return fail(c, TF_EINVAL, "spec: must be a map");
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
        if ((rc = read_containers(c, podspec)))
            return rc;
    } else if (c->pool && c->pool->auto_migration) {
        char why[256];
        char *saved = c->err;
        size_t savedlen = c->errlen;
        c->err = why;
        c->errlen = sizeof(why);
        rc = read_containers(c, podspec);
        c->err = saved;
        c->errlen = savedlen;
        if (rc == TF_ENOMEM)
            return rc;
        if (rc)
            WARN(c, "auto-migration skipped: %s", why);
        else if (native_total(c) > 0)
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
            return fail(c, TF_EINVAL, "%s: \"%s\" must be one of shared, soft, hard, partitioned",
                        akeys[A_ISOLATION], c->a[A_ISOLATION]);
    } else if (s->auto_migrated) {
        s->isolation = TF_ISOLATION_SHARED;
    } else if (p && p->isolation) {
        s->isolation = p->isolation;
    } else if (c->pool && c->pool->isolation) {
        s->isolation = c->pool->isolation;
    } else {
        s->isolation = TF_ISOLATION_SOFT;
    }

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
    const char *model = c->a[A_MODEL] ? c->a[A_MODEL] : p ? p->gpu_model : NULL;
    if (model) {
        if (!(s->gpu_model = strdup(model)))
            return TF_ENOMEM;
        s->model = tf_gpu_model_find(model);
        if (!s->model)
            WARN(c,
                 "%s: \"%s\" is not in the GPU model table (tfctl models): compute percent "
                 "cannot be converted to TFLOPS",
                 c->a[A_MODEL] ? akeys[A_MODEL] : "WorkloadProfile spec.gpuModel", model);
    }
    if (c->a[A_VENDOR]) {
        if (!(s->vendor = tf_vendor_canonical(c->a[A_VENDOR])))
            return fail(c, TF_EINVAL,
                        "%s: \"%s\" is not a known vendor (NVIDIA, AMD, Ascend, "
                        "Intel, Hygon, MetaX, MThreads, Cambricon, Enflame, Qualcomm, Cerebras, "
                        "AWSNeuron, Google)",
                        akeys[A_VENDOR], c->a[A_VENDOR]);
    } else if (p && p->vendor) {
        s->vendor = p->vendor;
    }
    if (s->model) {
        if (s->vendor && strcmp(s->vendor, s->model->vendor) != 0)
            return fail(c, TF_EINVAL, "%s \"%s\" does not match %s \"%s\" (a %s GPU)",
                        c->a[A_VENDOR] ? akeys[A_VENDOR] : "WorkloadProfile spec.vendor", s->vendor,
                        c->a[A_MODEL] ? akeys[A_MODEL] : "WorkloadProfile spec.gpuModel",
                        s->gpu_model, s->model->vendor);
        s->vendor = s->model->vendor;
    }
    if (c->a[A_DEDICATED] && (rc = ann_bool(c, A_DEDICATED, &s->dedicated_gpu)))
        return rc;
    if (s->dedicated_gpu && !s->gpu_model)
        return fail(c, TF_EINVAL, "%s: \"true\" needs %s (which GPU to dedicate)",
                    akeys[A_DEDICATED], akeys[A_MODEL]);
    if (s->dedicated_gpu && !s->model)
        return fail(c, TF_EINVAL, "%s needs a known %s: \"%s\" is not in the GPU model table",
                    akeys[A_DEDICATED], akeys[A_MODEL], s->gpu_model);

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
            return fail(c, TF_EINVAL, "%s: \"%s\" must be one of compute, vram, all",
                        akeys[A_AUTOSCALE_TARGET], c->a[A_AUTOSCALE_TARGET]);
        if (!s->autoscale)
            WARN(c, "%s has no effect unless %s is \"true\"", akeys[A_AUTOSCALE_TARGET],
                 akeys[A_AUTOSCALE]);
    } else if (p && p->autoscale_target) {
        tgt = p->autoscale_target;
    }
    if (s->autoscale)
        s->autoscale_target = tgt ? tgt : TF_AUTOSCALE_ALL;

    bool migrated = native_total(c) > 0;
    if ((rc = resources(c, migrated)))
        return rc;

    /* QoS: annotation > profile > high when requests == limits > pool > medium. */
    if (c->a[A_QOS]) {
        if (tf_qos_parse(c->a[A_QOS], &s->qos))
            return fail(c, TF_EINVAL, "%s: \"%s\" must be one of low, medium, high, critical",
                        akeys[A_QOS], c->a[A_QOS]);
    } else if (p && p->qos) {
        s->qos = p->qos;
    } else if (guaranteed(s)) {
        s->qos = TF_QOS_HIGH;
    } else if (c->pool && c->pool->qos) {
        s->qos = c->pool->qos;
    } else {
        s->qos = TF_QOS_MEDIUM;
    }

    /* GPU count and indices. */
    int explicit_count = 0;
    const char *count_src = NULL;
    if (c->a[A_GPU_COUNT]) {
        long long n;
        if (tf__parse_uint(c->a[A_GPU_COUNT], strlen(c->a[A_GPU_COUNT]), 1, TF_SPEC_MAX_GPUS, &n))
            return fail(c, TF_ERANGE, "%s: \"%s\" must be a whole number of GPUs from 1 to %d",
                        akeys[A_GPU_COUNT], c->a[A_GPU_COUNT], TF_SPEC_MAX_GPUS);
        explicit_count = (int)n;
        count_src = akeys[A_GPU_COUNT];
    } else if (p && p->gpu_count) {
        explicit_count = p->gpu_count;
        count_src = "WorkloadProfile spec.gpuCount";
    }
    if (c->a[A_INDICES]) {
        if ((rc = tf__parse_indices(c->a[A_INDICES], s->gpu_indices, &s->ngpu_indices,
                                    akeys[A_INDICES], c->err, c->errlen)))
            return rc;
    } else if (p && p->ngpu_indices) {
        memcpy(s->gpu_indices, p->gpu_indices, sizeof(s->gpu_indices));
        s->ngpu_indices = p->ngpu_indices;
    }
    if ((rc = containers_and_count(c, explicit_count, count_src)))
        return rc;
    if (c->a[A_CGPUS] && (rc = container_gpus(c)))
        return rc;

    /* Names, rollout, worker mode, kill switches. */
    if (c->a[A_WORKLOAD] && (rc = ann_name(c, A_WORKLOAD, "TensorFusionWorkload", &s->workload)))
        return rc;
    if (c->a[A_PROFILE]) {
        if ((rc = ann_name(c, A_PROFILE, "WorkloadProfile", &s->workload_profile)))
            return rc;
        if (p && p->name && strcmp(p->name, s->workload_profile) != 0)
            WARN(c, "%s names \"%s\" but the WorkloadProfile applied is \"%s\"", akeys[A_PROFILE],
                 s->workload_profile, p->name);
    } else if (p && p->name && !(s->workload_profile = strdup(p->name))) {
        return TF_ENOMEM;
    }
    if (c->a[A_ENABLED_REPLICAS]) {
        long long n;
        if (tf__parse_uint(c->a[A_ENABLED_REPLICAS], strlen(c->a[A_ENABLED_REPLICAS]), 1, INT32_MAX,
                           &n))
            return fail(c, TF_ERANGE, "%s: \"%s\" must be a positive whole number of replicas",
                        akeys[A_ENABLED_REPLICAS], c->a[A_ENABLED_REPLICAS]);
        s->has_enabled_replicas = true;
        s->enabled_replicas = (int32_t)n;
    }
    if (c->a[A_STANDALONE]) {
        if ((rc = ann_bool(c, A_STANDALONE, &s->standalone_worker_mode)))
            return rc;
        s->has_standalone_worker_mode = true;
        if (!s->is_local_gpu)
            WARN(c, "%s has no effect when %s is false", akeys[A_STANDALONE], akeys[A_LOCAL]);
    }
    if (c->a[A_DISABLE]) {
        struct feat_ctx fc = {c};
        if ((rc = tf_split_list(c->a[A_DISABLE], one_feature, &fc)))
            return rc;
    }
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
    free(s->workload);
    free(s->workload_profile);
    tf__strv_free(&s->disable_feature_names, &s->ndisable_feature_names);
    tf__strv_free(&s->inject_containers, &s->ninject_containers);
    for (size_t i = 0; i < s->ncontainers; i++) {
        free(s->containers[i].name);
        tf__strv_free(&s->containers[i].gpu_ids, &s->containers[i].ngpu_ids);
    }
    free(s->containers);
    tf__strv_free(&s->warnings, &s->nwarnings);
    tf_spec_init(s);
}

static int parse_meta_spec(json_object *meta, json_object *podspec,
                           const struct tf_profile *profile, const struct tf_pool_defaults *pool,
                           struct tf_spec *out, char *err, size_t errlen)
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
        return parse_meta_spec(meta, tf__get(pod, "spec"), profile, pool, out, err, errlen);
    return parse_meta_spec(pod, NULL, profile, pool, out, err, errlen);
}

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
    char *msg = NULL;
    int len = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (len < 0)
        return TF_ENOMEM;
    int rc = tf__strv_push(&s->warnings, &s->nwarnings, msg, (size_t)len);
    free(msg);
    return rc;
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
    int rc = parse_meta_spec(tmeta, tf__get(tmpl, "spec"), profile, pool, out, sub, sizeof(sub));
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
