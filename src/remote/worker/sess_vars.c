/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker sessions: the variables (__device__ / __constant__ arrays) of libraries against the
 * VRAM limit. The CUDA runtime loads each translation unit's fatbin as a library
 * (cuLibraryLoadData), whose module the driver loads, variables and all, in each context the
 * library is used in. A library's variables are sized from its image when it loads
 * (src/fatbin/image.h: PTX declarations, cubin sections, decompressed fatbin entries) and
 * charged per context when a kernel of it is first resolved there or a global is asked for
 * (that call fails with CUDA_ERROR_OUT_OF_MEMORY when they do not fit). The charge goes back
 * when the driver frees the memory: library unload, or the context's destruction. Modules
 * (cuModuleLoadData*) are charged at load by sess_module.c (session_int.h).
 */
#include "remote/worker/session_int.h"

#include "common/log.h"
#include "fatbin/image.h"

#include <stdint.h>

/* Reserves BYTES on context CTX's device; logs a refusal. */
static CUresult reserve(struct session *s, uint64_t ctx, int64_t bytes, struct obj **cx)
{
    struct obj *c = tf__ws_obj_get(s, ctx, TF_PROTO_H_CTX);
    *cx = c;
    if (!c || tf_worker_vram_reserve(s->w, c->dev, bytes) != 0) {
        tf_log(TF_LOG_INFO, "worker",
               "conn %llu: library variables of %lld bytes over the VRAM limit",
               (unsigned long long)s->c->id, (long long)bytes);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

void tf__ws_vars_library(struct session *s, struct obj *lib, const void *img, size_t len)
{
    struct tf_image im;
    uint64_t n = 0;
    char err[256] = "";
    if (tf_image_locate(img, len, &im, err, sizeof(err)) != 0 ||
        tf_image_globals(&im, &n, err, sizeof(err)) != 0 || n > (uint64_t)INT64_MAX) {
        tf_log(TF_LOG_INFO, "worker",
               "conn %llu: library image not understood (%s): its variables are not charged",
               (unsigned long long)s->c->id, err);
        n = 0;
    }
    lib->var_bytes = (int64_t)n;
}

CUresult tf__ws_vars_use(struct session *s, struct obj *lib, uint64_t ctx)
{
    if (!lib->var_bytes)
        return CUDA_SUCCESS;
    for (int i = 0; i < lib->nlc; i++)
        if (lib->lc[i].ctx == ctx)
            return CUDA_SUCCESS;
    if (lib->nlc >= MAX_KFUNCS)
        return CUDA_ERROR_OUT_OF_MEMORY; /* more contexts than we can account for */
    int64_t bytes = lib->var_bytes;
    struct obj *c = NULL;
    CUresult r = reserve(s, ctx, bytes, &c);
    if (r)
        return r;
    if (c) /* the context releases them if it goes first (tf__ws_vars_ctx_gone) */
        c->bytes += bytes;
    lib->lc[lib->nlc++] = (struct libcharge){ctx, bytes};
    return CUDA_SUCCESS;
}

void tf__ws_vars_unload(struct session *s, struct obj *lib, CUresult freed)
{
    for (int i = 0; i < lib->nlc; i++) {
        struct obj *c = tf__ws_obj_get(s, lib->lc[i].ctx, TF_PROTO_H_CTX);
        if (!c || !lib->lc[i].bytes)
            continue;
        c->bytes -= lib->lc[i].bytes;
        tf__ws_vram_freed(s, c->id, lib->lc[i].bytes, freed);
    }
    lib->nlc = 0;
}

void tf__ws_vars_ctx_gone(struct session *s, uint64_t ctx)
{
    size_t pos = 0;
    uint64_t key;
    void *val;
    while (tf_htab_next(&s->objs, &pos, &key, &val)) {
        struct obj *o = val;
        if (o->type != TF_PROTO_H_LIBRARY)
            continue;
        for (int i = 0; i < o->nlc; i++)
            if (o->lc[i].ctx == ctx)
                o->lc[i--] = o->lc[--o->nlc];
    }
}
