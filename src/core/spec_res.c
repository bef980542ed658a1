/* SPDX-License-Identifier: Apache-2.0
 *
 * The workload spec's resources: the four slots (request/limit x compute/VRAM) by precedence
 * (annotation > WorkloadProfile > pool defaults), whole-GPU allocations, inheritance and the
 * request <= limit and model capacity checks (see spec.h, docs/spec.md "Resources").
 */
#include "common/err.h"
#include "common/strutil.h"
#include "core/quantity.h"
#include "core/spec_int.h"
#include "core/spec_util.h"

#include <stdint.h>
#include <string.h>

/* One resource value with where it came from, for messages naming the key. */
struct val {
    int64_t v;
    bool set;
    const char *src;
};

struct side {
    struct val tflops, pct, vram;
};

/* ---- resources ----------------------------------------------------------------------------- */

static void set_val(struct val *d, int64_t v, const char *src)
{
    d->v = v;
    d->set = true;
    d->src = src;
}

/* One annotation quantity: KIND 0 TFLOPS, 1 percent, 2 bytes. A value of 0 is "not set", as
 * upstream TensorFusion reads it (resource.Quantity.IsZero), with a warning. */
static int ann_val(struct ctx *c, int k, int kind, struct val *d)
{
    int rc;
    int64_t v;
    const char *key = tf__spec_akeys[k];
    if (kind == 0) {
        rc = tf_quantity_milli(c->a[k], &v, key, c->err, c->errlen);
    } else if (kind == 1) {
        int32_t bp = 0;
        rc = tf_percent_parse(c->a[k], &bp, key, c->err, c->errlen);
        v = bp;
    } else {
        rc = tf_quantity_bytes(c->a[k], &v, key, c->err, c->errlen);
    }
    if (rc)
        return rc;
    if (v == 0) {
        WARN(c, "%s: \"%s\" is zero, which means not set (as in upstream TensorFusion)", key,
             c->a[k]);
        return 0;
    }
    set_val(d, v, key);
    return 0;
}

/* Annotation side: TFLOPS, percent and VRAM keys. TFLOPS wins over percent as upstream reads
 * them: a percent request is ignored when either TFLOPS key is set, a percent limit when the
 * TFLOPS limit is (both still have to be valid numbers). */
static int ann_side(struct ctx *c, struct side *sd, int kt, int kp, int kv, bool tflops_wins)
{
    int rc;
    if (c->a[kt] && (rc = ann_val(c, kt, 0, &sd->tflops)))
        return rc;
    if (c->a[kp]) {
        struct val pct = {0};
        if ((rc = ann_val(c, kp, 1, &pct)))
            return rc;
        if (tflops_wins && pct.set)
            WARN(c, "%s is ignored: %s is set and TFLOPS take precedence over percent",
                 tf__spec_akeys[kp], c->a[kt] ? tf__spec_akeys[kt] : TF_ANN_TFLOPS_LIMIT);
        else
            sd->pct = pct;
    }
    if (c->a[kv] && (rc = ann_val(c, kv, 2, &sd->vram)))
        return rc;
    return 0;
}

/* Fills the dimensions SD lacks from R (profile or pool defaults); zero counts as unset. */
static void fill_side(struct side *sd, const struct tf_spec_res *r, const char *src_tflops,
                      const char *src_pct, const char *src_vram)
{
    if (!sd->tflops.set && !sd->pct.set) {
        if (r->tflops_set && r->tflops_milli)
            set_val(&sd->tflops, r->tflops_milli, src_tflops);
        else if (r->percent_set && r->percent_bp)
            set_val(&sd->pct, r->percent_bp, src_pct);
    }
    if (!sd->vram.set && r->vram_set && r->vram_bytes)
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

/* A request above its limit is admitted (upstream TensorFusion does not check), with a
 * warning: the request is reserved, the limit caps what the workload may use. */
static int warn_above(struct ctx *c, const struct val *req, int rkind, const struct val *lim,
                      int lkind, int64_t rv, int64_t lv)
{
    if (rv <= lv)
        return 0;
    char a[32], b[32];
    fmt_val(req, rkind, a, sizeof(a));
    fmt_val(lim, lkind, b, sizeof(b));
    WARN(c,
         "%s \"%s\" is above %s \"%s\": the request is reserved but usage is capped at the "
         "limit",
         req->src, a, lim->src, b);
    return 0;
}

/* Whole-GPU allocations (dedicated-gpu, isolation shared) replace whatever was asked. */
static int whole_gpu(struct ctx *c, const struct side *req, const struct side *lim)
{
    struct tf_spec *s = c->s;
    const char *why =
        s->dedicated_gpu ? TF_ANN_DEDICATED_GPU ": true" : TF_ANN_ISOLATION ": shared";
    if (side_any(req) || side_any(lim)) {
        const struct side *sd = side_any(req) ? req : lim;
        WARN(c, "%s allocates whole GPUs: the TFLOPS/percent/VRAM values (%s) are ignored", why,
             sd->tflops.set ? sd->tflops.src
             : sd->pct.set  ? sd->pct.src
                            : sd->vram.src);
    }
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

/* Requests and limits against one GPU of the known model: warnings only (the model table can
 * differ from what a cluster's GPU objects report). */
static int against_model(struct ctx *c, const struct side *req, const struct side *lim)
{
    struct tf_spec *s = c->s;
    int64_t cap = s->model->tflops_milli, vmax = 0;
    char a[32], b[32];
    for (size_t i = 0; i < tf_gpu_model_count(); i++) {
        const struct tf_gpu_model *m = tf_gpu_model_at(i);
        if (tf_gpu_model_matches(m, s->gpu_model) && m->vram_bytes > vmax)
            vmax = m->vram_bytes;
    }
    if (req->tflops.set && req->tflops.v > cap) {
        tf_quantity_format_milli(req->tflops.v, a, sizeof(a));
        tf_quantity_format_milli(cap, b, sizeof(b));
        WARN(c, "%s \"%s\" is more than one %s GPU has (%s TFLOPS in the model table)",
             req->tflops.src, a, s->gpu_model, b);
    }
    if (req->vram.set && req->vram.v > vmax) {
        tf_quantity_format_bytes(req->vram.v, a, sizeof(a));
        tf_quantity_format_bytes(vmax, b, sizeof(b));
        WARN(c, "%s \"%s\" is more than one %s GPU has (%s in the model table)", req->vram.src, a,
             s->gpu_model, b);
    }
    if (lim->tflops.set && lim->tflops.v > cap && lim->tflops.src != req->tflops.src)
        WARN(c, "%s is above the %s's capacity: compute is effectively uncapped", lim->tflops.src,
             s->gpu_model);
    return 0;
}

static void store_side(struct tf_spec_res *r, const struct side *sd)
{
    r->tflops_set = sd->tflops.set;
    r->tflops_milli = sd->tflops.v;
    r->percent_set = sd->pct.set;
    r->percent_bp = (int32_t)sd->pct.v;
    r->vram_set = sd->vram.set;
    r->vram_bytes = sd->vram.v;
}

int tf__spec_resources(struct ctx *c, const char *migrated_from)
{
    struct tf_spec *s = c->s;
    struct side req = {0}, lim = {0};
    int rc;
    bool any_tflops = c->a[A_TFLOPS_REQ] || c->a[A_TFLOPS_LIM];
    if ((rc = ann_side(c, &req, A_TFLOPS_REQ, A_PCT_REQ, A_VRAM_REQ, any_tflops)) ||
        (rc = ann_side(c, &lim, A_TFLOPS_LIM, A_PCT_LIM, A_VRAM_LIM, c->a[A_TFLOPS_LIM] != NULL)))
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
            return tf__spec_fail(c, TF_EINVAL,
                                 "pool defaults: tflops and computePercent are mutually "
                                 "exclusive");
        fill_side(&req, &c->pool->requests, "GPUResourceQuota spec.single.defaultRequests.tflops",
                  "GPUResourceQuota spec.single.defaultRequests.computePercent",
                  "GPUResourceQuota spec.single.defaultRequests.vram");
        fill_side(&lim, &c->pool->limits, "GPUResourceQuota spec.single.defaultLimits.tflops",
                  "GPUResourceQuota spec.single.defaultLimits.computePercent",
                  "GPUResourceQuota spec.single.defaultLimits.vram");
    }

    if (s->dedicated_gpu || s->isolation == TF_ISOLATION_SHARED)
        return whole_gpu(c, &req, &lim);

    /* Seed 004 migration into a fractional mode: the native limit means one whole GPU of
     * compute, unless a compute limit was given or the request is in TFLOPS (upstream then
     * drops the migrated percent limit). */
    if (migrated_from && !compute_set(&lim) && !c->a[A_TFLOPS_REQ])
        set_val(&lim.pct, 10000, migrated_from);

    /* A missing request takes the limit (same unit); a missing limit stays unset: no cap. */
    if (!compute_set(&req))
        req.tflops = lim.tflops, req.pct = lim.pct;
    if (!req.vram.set)
        req.vram = lim.vram;

    if (!side_any(&req))
        return tf__spec_fail(c, TF_EINVAL,
                             "no GPU resources requested: set %s (or %s) and/or %s, or %s: "
                             "shared for whole GPUs",
                             TF_ANN_TFLOPS_REQUEST, TF_ANN_PERCENT_REQUEST, TF_ANN_VRAM_REQUEST,
                             TF_ANN_ISOLATION);

    /* request <= limit, per dimension; mixed units compare through the GPU model. */
    int64_t cap = s->model ? s->model->tflops_milli : 0;
    rc = 0;
    if (req.tflops.set && lim.tflops.set)
        rc = warn_above(c, &req.tflops, 0, &lim.tflops, 0, req.tflops.v, lim.tflops.v);
    else if (req.pct.set && lim.pct.set)
        rc = warn_above(c, &req.pct, 1, &lim.pct, 1, req.pct.v, lim.pct.v);
    else if (req.tflops.set && lim.pct.set && cap)
        rc = warn_above(c, &req.tflops, 0, &lim.pct, 1, req.tflops.v,
                        tf_percent_to_tflops((int32_t)lim.pct.v, cap));
    else if (req.pct.set && lim.tflops.set && cap)
        rc = warn_above(c, &req.pct, 1, &lim.tflops, 0,
                        tf_percent_to_tflops((int32_t)req.pct.v, cap), lim.tflops.v);
    else if (compute_set(&req) && compute_set(&lim))
        WARN(c, "%s and %s use different units and no known %s: cannot check request <= limit",
             req.tflops.set ? req.tflops.src : req.pct.src,
             lim.tflops.set ? lim.tflops.src : lim.pct.src, TF_ANN_GPU_MODEL);
    if (rc || (req.vram.set && lim.vram.set &&
               (rc = warn_above(c, &req.vram, 2, &lim.vram, 2, req.vram.v, lim.vram.v))))
        return rc;
    if (s->model && (rc = against_model(c, &req, &lim)))
        return rc;
    store_side(&s->requests, &req);
    store_side(&s->limits, &lim);
    return 0;
}

/* Upstream's rule (calculateQoSLevel): TFLOPS and VRAM requests equal their limits, unset
 * counting as 0. Percent does not take part. */
bool tf__spec_guaranteed(const struct tf_spec *s)
{
    const struct tf_spec_res *r = &s->requests, *l = &s->limits;
    int64_t rt = r->tflops_set ? r->tflops_milli : 0, lt = l->tflops_set ? l->tflops_milli : 0;
    int64_t rv = r->vram_set ? r->vram_bytes : 0, lv = l->vram_set ? l->vram_bytes : 0;
    return rt == lt && rv == lv;
}
