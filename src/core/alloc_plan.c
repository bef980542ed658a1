/* SPDX-License-Identifier: Apache-2.0
 *
 * The allocator's request compilation (validation, pool, masks, normalised resources) and
 * the checks of one GPU and one node against a compiled request (see alloc.h).
 */
#include "core/alloc_int.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/quantity.h"

#include <stdio.h>
#include <string.h>

/* ---------- request compilation ---------- */

int64_t tf_alloc_req_tflops(const struct tf_alloc_resources *r, int64_t cap)
{
    return r->req_by_percent ? tf_percent_to_tflops(r->req_percent, cap) : r->req_tflops;
}

int64_t tf_alloc_lim_tflops(const struct tf_alloc_resources *r, int64_t cap)
{
    int64_t lim = r->lim_by_percent ? tf_percent_to_tflops(r->lim_percent, cap) : r->lim_tflops;
    int64_t req = tf_alloc_req_tflops(r, cap);
    return lim > req ? lim : req;
}

/* Validates and fills limits ("0 = same as the request"). */
int tf__alloc_normalise(const struct tf_alloc_resources *in, struct tf_alloc_resources *out,
                        char *err, size_t errlen)
{
    *out = *in;
    if (out->req_tflops < 0 || out->lim_tflops < 0 || out->req_vram < 0 || out->lim_vram < 0 ||
        (out->req_by_percent && (out->req_percent < 0 || out->req_percent > 10000)) ||
        (out->lim_by_percent && (out->lim_percent < 0 || out->lim_percent > 10000))) {
        tf_errf(err, errlen, "negative resources or a compute percent outside 0..100");
        return TF_EINVAL;
    }
    if (!out->lim_by_percent && out->lim_tflops == 0) {
        if (out->req_by_percent) {
            out->lim_by_percent = true;
            out->lim_percent = out->req_percent;
        } else {
            out->lim_tflops = out->req_tflops;
        }
    }
    if (out->lim_vram == 0)
        out->lim_vram = out->req_vram;
    if ((out->req_by_percent == out->lim_by_percent &&
         (out->req_by_percent ? out->lim_percent < out->req_percent
                              : out->lim_tflops < out->req_tflops)) ||
        out->lim_vram < out->req_vram) {
        tf_errf(err, errlen, "limit below request");
        return TF_EINVAL;
    }
    return 0;
}

int tf__alloc_compile(const struct tf_alloc *a, const struct tf_alloc_request *req, struct plan *p,
                      char *err, size_t errlen)
{
    const struct tf_cluster *c = a->c;
    p->req = req;
    if (!req->ns || !*req->ns || !req->name || !*req->name || strchr(req->ns, '/')) {
        tf_errf(err, errlen, "pod needs a namespace and a name");
        return TF_EINVAL;
    }
    size_t nl = strlen(req->ns), ml = strlen(req->name);
    if (nl + 1 + ml >= sizeof(p->key)) {
        tf_errf(err, errlen, "pod %s/%s: namespace/name too long", req->ns, req->name);
        return TF_EINVAL;
    }
    memcpy(p->key, req->ns, nl);
    p->key[nl] = '/';
    memcpy(p->key + nl + 1, req->name, ml + 1);
    p->key_len = nl + 1 + ml;
    p->ns_len = nl;

    p->pool =
        (req->pool && *req->pool) ? tf_cluster_pool_find(c, req->pool) : tf_cluster_default_pool(c);
    if (p->pool == TF_NONE) {
        tf_errf(err, errlen, "pod %s: unknown GPU pool \"%s\"", p->key,
                req->pool && *req->pool ? req->pool : "(default)");
        return TF_ENOENT;
    }
    p->cfg = &c->pools[p->pool].cfg;

    unsigned split = 0;
    for (unsigned i = 0; i < req->ncontainers; i++) {
        if (!req->containers || !req->containers[i].name || !req->containers[i].gpus) {
            tf_errf(err, errlen, "pod %s: container-gpu-count entries need a name and >= 1 GPU",
                    p->key);
            return TF_EINVAL;
        }
        split += req->containers[i].gpus;
    }
    p->count = req->gpu_count ? req->gpu_count : (split ? split : 1);
    if (split && split != p->count) {
        tf_errf(err, errlen, "pod %s: container-gpu-count sums to %u GPUs, gpu-count is %u", p->key,
                split, p->count);
        return TF_EINVAL;
    }
    if (p->count > TF_GPU_COUNT_MAX) {
        tf_errf(err, errlen, "pod %s: gpu-count %u out of range 1..%d", p->key, p->count,
                TF_GPU_COUNT_MAX);
        return TF_EINVAL;
    }

    p->iso = req->isolation == TF_ISOLATION_UNSET ? TF_ISOLATION_SOFT : req->isolation;
    p->qos = req->qos == TF_QOS_UNSET ? p->cfg->default_qos : req->qos;
    if ((unsigned)p->iso >= TF_ISO_MODES || (unsigned)req->qos > TF_QOS_CRITICAL) {
        tf_errf(err, errlen, "pod %s: invalid isolation or QoS", p->key);
        return TF_EINVAL;
    }
    p->part = p->iso == TF_ISOLATION_PARTITIONED;
    p->whole = p->iso == TF_ISOLATION_SHARED || req->dedicated;
    if (p->part && req->dedicated) {
        tf_errf(err, errlen, "pod %s: dedicated-gpu cannot be partitioned", p->key);
        return TF_EINVAL;
    }
    if (p->part && c->policy != TF_ISOPOL_STATIC) {
        tf_errf(err, errlen,
                "pod %s: isolation partitioned needs isolationModePolicy static (this cluster "
                "is dynamic)",
                p->key);
        return TF_ENOTSUP;
    }

    int rc = tf__alloc_normalise(&req->res, &p->res, err, errlen);
    if (rc) {
        char msg[160];
        tf_strlcpy(msg, err ? err : "", sizeof(msg));
        tf_errf(err, errlen, "pod %s: %s", p->key, msg);
        return rc;
    }

    p->model_mask = ~UINT64_C(0);
    if (req->model && *req->model) {
        p->model_mask = 0;
        for (size_t i = 0; i < tf_gpu_model_count() && i < 64; i++)
            if (tf_gpu_model_matches(tf_gpu_model_at(i), req->model))
                p->model_mask |= UINT64_C(1) << i;
    }
    p->vendor_mask = ~UINT32_C(0);
    if (req->vendor && *req->vendor) {
        p->vendor_mask = 0;
        const char *v = tf_vendor_canonical(req->vendor);
        for (int i = 0; v && i < 13; i++)
            if (!strcmp(tf_vendors[i], v))
                p->vendor_mask = UINT32_C(1) << i;
    }
    p->index_mask = ~UINT64_C(0);
    if (req->n_indices) {
        p->index_mask = 0;
        for (unsigned i = 0; req->gpu_indices && i < req->n_indices; i++)
            if (req->gpu_indices[i] >= 0 && req->gpu_indices[i] < TF_NODE_MAX_GPUS)
                p->index_mask |= UINT64_C(1) << req->gpu_indices[i];
    }

    p->quota_exempt = p->res.req_by_percent || p->res.lim_by_percent;
    p->ask.req_tflops = p->res.req_tflops;
    p->ask.req_vram = p->res.req_vram;
    p->ask.lim_tflops = p->res.lim_tflops;
    p->ask.lim_vram = p->res.lim_vram;
    p->ask.gpu_count = p->count;
    p->ask.workers = 1;
    return 0;
}

int tf_alloc_request_from_spec(const struct tf_spec *s, const char *ns, const char *name,
                               struct tf_alloc_request *r, struct tf_alloc_request_buf *buf,
                               char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    r->ns = ns ? ns : (s->ns ? s->ns : "default");
    r->name = name ? name : s->name;
    if (!s->enabled) {
        tf_errf(err, errlen, "pod %s/%s: not a TensorFusion pod", r->ns, r->name ? r->name : "");
        return TF_EINVAL;
    }
    if (!r->name || !*r->name) {
        tf_errf(err, errlen, "pod in %s: no name", r->ns);
        return TF_EINVAL;
    }
    r->pool = s->pool;
    const struct tf_spec_res *q = &s->requests, *l = &s->limits;
    r->res.req_by_percent = q->percent_set;
    r->res.req_percent = q->percent_set ? q->percent_bp : 0;
    r->res.req_tflops = q->tflops_set ? q->tflops_milli : 0;
    r->res.req_vram = q->vram_set ? q->vram_bytes : 0;
    r->res.lim_by_percent = l->percent_set;
    r->res.lim_percent = l->percent_set ? l->percent_bp : 0;
    r->res.lim_tflops = l->tflops_set ? l->tflops_milli : 0;
    r->res.lim_vram = l->vram_set ? l->vram_bytes : 0;
    r->gpu_count = (uint16_t)s->gpu_count;
    r->isolation = s->isolation;
    r->qos = s->qos;
    r->model = s->gpu_model;
    r->vendor = s->vendor;
    r->dedicated = s->dedicated_gpu;
    r->remote = !s->is_local_gpu;
    r->partition_template = s->partition;
    for (int i = 0; i < s->ngpu_indices && i < TF_SPEC_MAX_GPUS; i++)
        buf->indices[i] = s->gpu_indices[i];
    r->gpu_indices = buf->indices;
    r->n_indices = (uint16_t)s->ngpu_indices;
    int sum = 0;
    for (size_t i = 0; i < s->ncontainers; i++)
        sum += s->containers[i].gpu_count;
    if (s->ncontainers > 1 && sum == s->gpu_count && s->ncontainers <= TF_GPU_COUNT_MAX) {
        for (size_t i = 0; i < s->ncontainers; i++) {
            buf->containers[i].name = s->containers[i].name;
            buf->containers[i].gpus = (uint16_t)s->containers[i].gpu_count;
        }
        r->containers = buf->containers;
        r->ncontainers = (uint16_t)s->ncontainers;
    }
    return 0;
}

/* Pod-level checks after compilation: the quota stage. */
int tf__alloc_pod_checks(const struct tf_alloc *a, const struct plan *p, char *err, size_t errlen)
{
    if (p->quota_exempt || !a->q)
        return 0;
    return tf_quota_check(a->q, p->req->ns, p->ns_len, &p->ask, NULL, err, errlen);
}

int tf__alloc_prepare(const struct tf_alloc *a, const struct tf_alloc_request *req, struct plan *p,
                      struct tf_reasons *rb, char *err, size_t errlen)
{
    int rc = tf__alloc_compile(a, req, p, err, errlen);
    if (!rc)
        rc = tf__alloc_pod_checks(a, p, err, errlen);
    if (rc && rb)
        tf__alloc_reason_add(rb, "%s", err ? err : "");
    return rc;
}

/* ---------- per-GPU checks ---------- */

/* What P takes on G; for partitioned pods, TPL < 0 when no template fits the free slots. */
void tf__alloc_need_on(const struct tf_cluster *c, const struct plan *p, const struct tf_gpu *g,
                       struct need *n)
{
    n->tpl = -1;
    if (p->whole) {
        n->t = n->lt = g->cap_tflops;
        n->v = n->lv = g->cap_vram;
        return;
    }
    n->t = tf_alloc_req_tflops(&p->res, g->cap_tflops);
    n->v = p->res.req_vram;
    n->lt = tf_alloc_lim_tflops(&p->res, g->cap_tflops);
    n->lv = p->res.lim_vram;
    if (p->part) {
        const struct tf_partition_profile *pp = tf_cluster_profile(c, g);
        if (!pp)
            return;
        n->tpl = tf_partition_match(pp, n->t, n->v, pp->compute_total - g->part_compute,
                                    pp->memory_total - g->part_memory, p->req->partition_template);
        if (n->tpl >= 0) {
            n->t = n->lt = pp->templates[n->tpl].tflops_milli;
            n->v = n->lv = pp->templates[n->tpl].vram_bytes;
        }
    }
}

static bool res_ok(const struct tf_gpu *g, const struct need *n)
{
    return g->avail_tflops >= n->t && g->avail_vram >= n->v &&
           g->lim_tflops + n->lt <= g->virt_tflops && g->lim_vram + n->lv <= g->virt_vram;
}

/* The first stage G fails for P (ST_PASS if none), filling *N when it gets that far. */
enum stage tf__alloc_gpu_stage(const struct tf_cluster *c, const struct plan *p,
                               const struct tf_gpu *g, struct need *n)
{
    if (g->phase != TF_GPU_RUNNING)
        return ST_PHASE;
    if (!iso_ok(c, g, p))
        return ST_ISO;
    if (!(p->index_mask & (UINT64_C(1) << g->index)))
        return ST_INDEX;
    if (p->whole && !idle(g))
        return ST_WHOLE;
    tf__alloc_need_on(c, p, g, n);
    if (p->part && n->tpl < 0)
        return ST_PART;
    if (!res_ok(g, n))
        return ST_RES;
    if (!(p->model_mask & (UINT64_C(1) << g->model_idx)))
        return ST_MODEL;
    if (!(p->vendor_mask & (UINT32_C(1) << g->vendor_idx)))
        return ST_VENDOR;
    return ST_PASS;
}

/* The same verdict, cheapest tests first (the hot path). */
bool tf__alloc_gpu_fits(const struct tf_cluster *c, const struct plan *p, const struct tf_gpu *g,
                        struct need *n)
{
    if (g->phase != TF_GPU_RUNNING || !(p->model_mask & (UINT64_C(1) << g->model_idx)) ||
        !(p->vendor_mask & (UINT32_C(1) << g->vendor_idx)) ||
        !(p->index_mask & (UINT64_C(1) << g->index)) || !iso_ok(c, g, p) || (p->whole && !idle(g)))
        return false;
    if (!p->part && !p->whole) { /* inline need_on for the common case */
        n->tpl = -1;
        n->t = p->res.req_by_percent ? tf_percent_to_tflops(p->res.req_percent, g->cap_tflops)
                                     : p->res.req_tflops;
        n->v = p->res.req_vram;
        if (g->avail_tflops < n->t || g->avail_vram < n->v)
            return false;
        n->lt = tf_alloc_lim_tflops(&p->res, g->cap_tflops);
        n->lv = p->res.lim_vram;
        return g->lim_tflops + n->lt <= g->virt_tflops && g->lim_vram + n->lv <= g->virt_vram;
    }
    tf__alloc_need_on(c, p, g, n);
    if (p->part && n->tpl < 0)
        return false;
    return res_ok(g, n);
}

/* Node-level tests that reject without looking at GPUs (necessary conditions only). */
bool tf__alloc_node_quick_reject(const struct plan *p, const struct tf_node *n)
{
    if (n->pool != p->pool || (n->max_workers && n->nworkers >= n->max_workers) ||
        n->running_gpus < p->count || !(n->model_mask & p->model_mask) ||
        !(n->vendor_mask & p->vendor_mask))
        return true;
    if (p->whole)
        return n->idle_gpus < p->count;
    return n->max_free_vram < p->res.req_vram ||
           (!p->res.req_by_percent && n->max_free_tflops < p->res.req_tflops);
}
