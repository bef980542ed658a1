/* SPDX-License-Identifier: Apache-2.0
 *
 * Local placement (see place.h): filter with reasons, CompactFirst ordering.
 */
#include "hypervisor/place.h"

#include "common/err.h"
#include "core/gpu_models.h"
#include "core/quantity.h"

#include <stdlib.h>
#include <string.h>

struct cand {
    int gpu;
    int64_t free_vram, free_tflops;
};

static int cmp_cand(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    if (x->free_vram != y->free_vram)
        return x->free_vram < y->free_vram ? -1 : 1;
    if (x->free_tflops != y->free_tflops)
        return x->free_tflops < y->free_tflops ? -1 : 1;
    return x->gpu - y->gpu;
}

/* Per-GPU amounts for request R on GPU G. */
static void amounts(const struct tf_hv_request *r, const struct tf_hv_gpu_view *g,
                    struct tf_hv_grant *gr)
{
    if (r->tflops_limit) {
        gr->tflops_milli = r->tflops_request;
        gr->tflops_limit = r->tflops_limit;
        gr->compute_limit_bp = tf_tflops_to_percent(r->tflops_limit, g->tflops_milli);
        if (gr->compute_limit_bp > 10000)
            gr->compute_limit_bp = 10000;
        if (gr->compute_limit_bp < 1)
            gr->compute_limit_bp = 1;
    } else {
        gr->tflops_milli = tf_percent_to_tflops(r->percent_request, g->tflops_milli);
        gr->tflops_limit = tf_percent_to_tflops(r->percent_limit, g->tflops_milli);
        gr->compute_limit_bp = r->percent_limit;
    }
    gr->vram_bytes = r->vram_request ? r->vram_request : g->vram_bytes;
    gr->vram_limit = r->vram_limit ? r->vram_limit : g->vram_bytes;
    if (r->isolation == TF_HV_SHARED) {
        gr->tflops_milli = gr->tflops_limit = g->tflops_milli;
        gr->vram_bytes = gr->vram_limit = g->vram_bytes;
        gr->compute_limit_bp = 10000;
    }
}

int tf_hv_place(const struct tf_hv_request *r, const struct tf_hv_gpu_view *gpus, int n,
                struct tf_hv_grant *out, struct tf_dynbuf *reasons)
{
    struct cand *c = calloc((size_t)(n > 0 ? n : 1), sizeof(*c));
    if (!c)
        return TF_ENOMEM;
    int nc = 0;
    tf_dynbuf_reset(reasons);
    for (int i = 0; i < n; i++) {
        const struct tf_hv_gpu_view *g = &gpus[i];
        struct tf_hv_grant gr;
        amounts(r, g, &gr);
        int64_t free_t = g->tflops_milli - g->alloc_tflops_milli;
        int64_t free_v = g->vram_bytes - g->alloc_vram_bytes;
        char a[32], b[32];
        if (r->gpu_model[0] && !tf_gpu_model_matches(tf_gpu_model_find(g->model), r->gpu_model)) {
            tf_dynbuf_addf(reasons, "GPU %d %s (%s): model is not %s\n", g->index, g->uuid,
                           g->model, r->gpu_model);
        } else if (g->nworkloads > 0 && g->mode != r->isolation) {
            tf_dynbuf_addf(reasons, "GPU %d %s (%s): runs %s workloads, request is %s\n", g->index,
                           g->uuid, g->model, tf_hv_isolation_name(g->mode),
                           tf_hv_isolation_name(r->isolation));
        } else if (r->isolation == TF_HV_SHARED && g->nworkloads > 0) {
            tf_dynbuf_addf(reasons,
                           "GPU %d %s (%s): shared needs a whole GPU, %d workload(s) on it\n",
                           g->index, g->uuid, g->model, g->nworkloads);
        } else if (gr.vram_bytes > free_v) {
            tf_quantity_format_bytes(gr.vram_bytes, a, sizeof(a));
            tf_quantity_format_bytes(free_v, b, sizeof(b));
            tf_dynbuf_addf(reasons, "GPU %d %s (%s): insufficient VRAM: requested %s, %s free\n",
                           g->index, g->uuid, g->model, a, b);
        } else if (gr.tflops_milli > free_t) {
            tf_quantity_format_milli(gr.tflops_milli, a, sizeof(a));
            tf_quantity_format_milli(free_t, b, sizeof(b));
            tf_dynbuf_addf(reasons, "GPU %d %s (%s): insufficient TFLOPS: requested %s, %s free\n",
                           g->index, g->uuid, g->model, a, b);
        } else {
            c[nc].gpu = i;
            c[nc].free_vram = free_v;
            c[nc].free_tflops = free_t;
            nc++;
        }
    }
    if (n == 0)
        tf_dynbuf_adds(reasons, "no GPU on this machine\n");
    if (nc < r->gpu_count) {
        if (nc > 0)
            tf_dynbuf_addf(reasons, "only %d of the %d GPUs requested fit\n", nc, r->gpu_count);
        free(c);
        return TF_ENOSPC;
    }
    qsort(c, (size_t)nc, sizeof(*c), cmp_cand);
    for (int k = 0; k < r->gpu_count; k++) {
        out[k].gpu = c[k].gpu;
        amounts(r, &gpus[c[k].gpu], &out[k]);
    }
    free(c);
    return 0;
}
