/* SPDX-License-Identifier: Apache-2.0
 *
 * Local placement on the core allocator (see place.h).
 */
#include "hypervisor/place.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "core/alloc.h"
#include "core/cluster.h"
#include "core/gpu_models.h"
#include "core/quantity.h"

#include <stdlib.h>
#include <string.h>

#define NODE "local"

static enum tf_isolation iso_of(enum tf_hv_isolation m)
{
    switch (m) {
    case TF_HV_SHARED:
        return TF_ISOLATION_SHARED;
    case TF_HV_HARD:
    case TF_HV_REMOTE:
        return TF_ISOLATION_HARD;
    default:
        return TF_ISOLATION_SOFT;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Appends the allocator's reasons (or ERR when it gave none) to OUT, prefixed by LABEL. */
static void add_reasons(struct tf_dynbuf *out, const struct tf_reasons *rb, int rc, const char *err,
                        const char *label)
{
    if (rc == 0)
        return;
    for (const char *s = tf_reasons_next(rb, NULL); s; s = tf_reasons_next(rb, s))
        tf_dynbuf_addf(out, "%s%s%s\n", label ? label : "", label ? " GPUs: " : "", s);
    if (rb->n == 0 && err[0])
        tf_dynbuf_addf(out, "%s%s%s\n", label ? label : "", label ? " GPUs: " : "", err);
}

static void clamp_bp(struct tf_hv_grant *g, int64_t cap)
{
    if (g->compute_limit_bp == 0)
        g->compute_limit_bp = tf_tflops_to_percent(g->tflops_limit, cap);
    if (g->compute_limit_bp > 10000)
        g->compute_limit_bp = 10000;
    if (g->compute_limit_bp < 1)
        g->compute_limit_bp = 1;
}

int tf_hv_place(const struct tf_hv_request *r, const struct tf_hv_gpu_view *gpus, int n,
                const struct tf_hv_held *held, int nheld, struct tf_hv_grant *out,
                struct tf_dynbuf *reasons)
{
    tf_dynbuf_reset(reasons);
    struct tf_gpu_spec spec[TF_NODE_MAX_GPUS];
    int view_of[TF_NODE_MAX_GPUS]; /* cluster position -> view index */
    int ns = 0;
    for (int i = 0; i < n && ns < TF_NODE_MAX_GPUS; i++) {
        const struct tf_gpu_model *m = gpus[i].model ? tf_gpu_model_find(gpus[i].model) : NULL;
        if (!m || gpus[i].index < 0 || gpus[i].index >= TF_NODE_MAX_GPUS) {
            tf_dynbuf_addf(reasons, "GPU %d %s: model not in the TFLOPS table, not offered\n",
                           gpus[i].index, gpus[i].uuid);
            continue;
        }
        memset(&spec[ns], 0, sizeof(spec[ns]));
        spec[ns].uuid = gpus[i].uuid;
        spec[ns].model = m;
        spec[ns].index = gpus[i].index;
        spec[ns].numa = -1;
        spec[ns].phase = TF_GPU_RUNNING;
        spec[ns].tflops_milli = gpus[i].tflops_milli;
        spec[ns].vram_bytes = gpus[i].vram_bytes;
        view_of[ns++] = i;
    }
    if (ns == 0) {
        tf_dynbuf_adds(reasons, "no GPU on this machine\n");
        return TF_ENOSPC;
    }
    int rc = TF_ENOMEM;
    char err[512] = "";
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    struct tf_alloc *a = NULL;
    if (!c)
        goto out;
    struct tf_pool_config cfg;
    tf_pool_config_init(&cfg);
    cfg.is_default = true;
    cfg.placement = TF_PLACE_COMPACT_FIRST;
    uint32_t pool, node;
    struct tf_node_spec nspec = {NODE, TF_ISOLATION_UNSET, 0, 0, spec, (uint16_t)ns};
    if ((rc = tf_cluster_add_pool(c, "local", &cfg, &pool, err, sizeof(err))) ||
        (rc = tf_cluster_add_node(c, pool, &nspec, &node, err, sizeof(err)))) {
        tf_dynbuf_addf(reasons, "%s\n", err);
        goto out;
    }
    if (!(a = tf_alloc_new(c, NULL))) {
        rc = TF_ENOMEM;
        goto out;
    }
    /* Restore what is already held, one workload at a time. */
    for (int i = 0; i < nheld;) {
        int j = i;
        const char *uuids[TF_HV_MAX_GPUS];
        int k = 0;
        while (j < nheld && !strcmp(held[j].workload, held[i].workload) && k < TF_HV_MAX_GPUS)
            uuids[k++] = held[j++].uuid;
        struct tf_alloc_request q;
        memset(&q, 0, sizeof(q));
        q.ns = held[i].ns;
        q.name = held[i].workload;
        q.isolation = iso_of(held[i].isolation);
        q.gpu_count = (uint16_t)k;
        q.res.req_tflops = held[i].tflops_milli;
        q.res.lim_tflops = held[i].tflops_limit;
        q.res.req_vram = held[i].vram_bytes;
        q.res.lim_vram = held[i].vram_limit;
        q.dedicated = held[i].isolation == TF_HV_SHARED;
        char rerr[256];
        int rr = tf_alloc_restore(a, &q, NODE, uuids, (size_t)k, rerr, sizeof(rerr));
        if (rr && rr != TF_ENOENT) /* TF_ENOENT: its GPU is absent now, irrelevant here */
            tf_log(TF_LOG_WARN, "place", "restoring %s: %s", held[i].workload, rerr);
        i = j;
    }
    struct tf_alloc_request q;
    memset(&q, 0, sizeof(q));
    q.ns = r->ns;
    q.name = r->name;
    q.isolation = iso_of(r->isolation);
    q.gpu_count = (uint16_t)r->gpu_count;
    q.model = r->gpu_model[0] ? r->gpu_model : NULL;
    if (r->tflops_limit) {
        q.res.req_tflops = r->tflops_request;
        q.res.lim_tflops = r->tflops_limit;
    } else {
        q.res.req_percent = r->percent_request;
        q.res.lim_percent = r->percent_limit;
        q.res.req_by_percent = q.res.lim_by_percent = true;
    }
    q.res.req_vram = r->vram_request;
    q.res.lim_vram = r->vram_limit;
    bool whole_vram = r->vram_limit == 0 && r->isolation != TF_HV_SHARED;
    char rbuf[8192];
    struct tf_reasons rb;
    struct tf_alloc_result res;
    if (!whole_vram) {
        tf_reasons_init(&rb, rbuf, sizeof(rbuf));
        rc = tf_alloc_place(a, &q, &res, &rb, err, sizeof(err));
        add_reasons(reasons, &rb, rc, err, NULL);
    } else {
        /* No VRAM given: each GPU's whole memory. The allocator reserves bytes, so try each
         * distinct memory size in turn (smallest first) on the GPUs of that size only. */
        int64_t sizes[TF_NODE_MAX_GPUS];
        int nsizes = 0;
        for (int i = 0; i < ns; i++) {
            int k = 0;
            while (k < nsizes && sizes[k] != spec[i].vram_bytes)
                k++;
            if (k == nsizes)
                sizes[nsizes++] = spec[i].vram_bytes;
        }
        qsort(sizes, (size_t)nsizes, sizeof(sizes[0]), cmp_i64);
        rc = TF_ENOSPC;
        for (int k = 0; k < nsizes && rc; k++) {
            int32_t idx[TF_NODE_MAX_GPUS];
            uint16_t nidx = 0;
            for (int i = 0; i < ns; i++)
                if (spec[i].vram_bytes == sizes[k])
                    idx[nidx++] = spec[i].index;
            q.gpu_indices = idx;
            q.n_indices = nidx;
            q.res.req_vram = q.res.lim_vram = sizes[k];
            tf_reasons_init(&rb, rbuf, sizeof(rbuf));
            err[0] = '\0';
            rc = tf_alloc_place(a, &q, &res, &rb, err, sizeof(err));
            char label[64];
            tf_quantity_format_bytes(sizes[k], label, sizeof(label));
            add_reasons(reasons, &rb, rc, err, label);
        }
        q.gpu_indices = NULL;
        q.n_indices = 0;
    }
    if (rc) {
        if (rc != TF_ENOSPC && rc != TF_ENOMEM)
            rc = TF_ENOSPC; /* pod-level refusals are unschedulable too, with their reason */
        goto out;
    }
    tf_dynbuf_reset(reasons);
    const struct tf_alloc_record *rec = tf_alloc_record_at(a, tf_alloc_find(a, r->ns, r->name));
    for (int k = 0; k < r->gpu_count; k++) {
        const struct tf_gpu *g = &c->gpus[res.gpus[k]];
        const struct tf_alloc_slot *sl = rec ? tf_alloc_record_slot(rec, (unsigned)k) : NULL;
        struct tf_hv_grant *o = &out[k];
        o->gpu = view_of[g->pos];
        o->tflops_milli = sl ? sl->tflops : tf_alloc_req_tflops(&q.res, g->cap_tflops);
        o->tflops_limit = sl ? sl->lim_tflops : tf_alloc_lim_tflops(&q.res, g->cap_tflops);
        o->vram_bytes = sl ? sl->vram : q.res.req_vram;
        o->vram_limit = sl ? sl->lim_vram : q.res.lim_vram;
        o->compute_limit_bp = r->tflops_limit ? 0 : r->percent_limit;
        if (r->isolation == TF_HV_SHARED) {
            o->tflops_milli = o->tflops_limit = g->cap_tflops;
            o->vram_bytes = o->vram_limit = g->cap_vram;
            o->compute_limit_bp = 10000;
        }
        clamp_bp(o, g->cap_tflops);
    }
    rc = 0;
out:
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
    return rc;
}
