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

/* Annotation side: tflops / percent / vram keys, mutually exclusive compute. */
static int ann_side(struct ctx *c, struct side *sd, int kt, int kp, int kv)
{
    int rc;
    if (c->a[kt] && c->a[kp])
        return tf__spec_fail(c, TF_EINVAL, "%s and %s are mutually exclusive: set only one",
                             tf__spec_akeys[kt], tf__spec_akeys[kp]);
    if (c->a[kt]) {
        int64_t m;
        if ((rc = tf_quantity_milli(c->a[kt], &m, tf__spec_akeys[kt], c->err, c->errlen)))
            return rc;
        set_val(&sd->tflops, m, tf__spec_akeys[kt]);
    }
    if (c->a[kp]) {
        int32_t bp;
        if ((rc = tf_percent_parse(c->a[kp], &bp, tf__spec_akeys[kp], c->err, c->errlen)))
            return rc;
        set_val(&sd->pct, bp, tf__spec_akeys[kp]);
    }
    if (c->a[kv]) {
        int64_t b;
        if ((rc = tf_quantity_bytes(c->a[kv], &b, tf__spec_akeys[kv], c->err, c->errlen)))
            return rc;
        set_val(&sd->vram, b, tf__spec_akeys[kv]);
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
    return tf__spec_fail(c, TF_EINVAL,
                         "%s \"%s\" is above %s \"%s\": a request cannot exceed its limit",
                         req->src, a, lim->src, b);
}

int tf__spec_resources(struct ctx *c, bool migrated)
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
            return tf__spec_fail(c, TF_EINVAL,
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
            return tf__spec_fail(c, TF_ERANGE,
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
            return tf__spec_fail(
                c, TF_EINVAL,
                "no GPU resources requested: set %s/%s (or %s/%s) and %s/%s, or %s: "
                "shared for whole GPUs",
                TF_ANN_TFLOPS_REQUEST, TF_ANN_TFLOPS_LIMIT, TF_ANN_PERCENT_REQUEST,
                TF_ANN_PERCENT_LIMIT, TF_ANN_VRAM_REQUEST, TF_ANN_VRAM_LIMIT, TF_ANN_ISOLATION);
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
            return tf__spec_fail(c, TF_ERANGE, "%s \"%s\" is more than one %s GPU has (%s TFLOPS)",
                                 req.tflops.src, a, s->gpu_model, b);
        }
        if (req.vram.set && req.vram.v > vmax) {
            tf_quantity_format_bytes(req.vram.v, a, sizeof(a));
            tf_quantity_format_bytes(vmax, b, sizeof(b));
            return tf__spec_fail(c, TF_ERANGE, "%s \"%s\" is more than one %s GPU has (%s)",
                                 req.vram.src, a, s->gpu_model, b);
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

bool tf__spec_guaranteed(const struct tf_spec *s)
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
