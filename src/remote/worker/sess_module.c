/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker sessions: modules, libraries, functions, globals and kernel launches (with the
 * compute limit's tokens) (session_int.h).
 */
#include "remote/worker/session_int.h"

#include "remote/sha256.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "fatbin/image.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- modules and functions ------------------------------------------------------------------ */

/* Parameter layout and attributes of FN into O, and its record into the reply. */
static CUresult describe_func(struct session *s, struct obj *o, CUfunction fn)
{
    uint32_t off[TF_PROTO_MAX_PARAMS], sz[TF_PROTO_MAX_PARAMS];
    uint32_t n = 0, end = 0;
    for (; n < TF_PROTO_MAX_PARAMS; n++) {
        size_t po = 0, ps = 0;
        CUresult r = s->d->funcGetParamInfo(fn, n, &po, &ps);
        if (r == CUDA_ERROR_INVALID_VALUE)
            break;
        if (r)
            return r;
        if (ps == 0 || po < end || po + ps > TF_PROTO_MAX_PARAM_BYTES)
            return CUDA_ERROR_NOT_SUPPORTED;
        off[n] = (uint32_t)po;
        sz[n] = (uint32_t)ps;
        end = (uint32_t)(po + ps);
    }
    free(o->param_off);
    o->param_off = n ? malloc(2 * n * sizeof(uint32_t)) : NULL;
    if (n && !o->param_off)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (n) {
        memcpy(o->param_off, off, n * sizeof(uint32_t));
        memcpy(o->param_off + n, sz, n * sizeof(uint32_t));
    }
    o->nparams = n;
    o->params_size = end;
    return CUDA_SUCCESS;
}

/* Appends the record of O (named NAME) to the reply. */
static int append_func_record(struct session *s, const struct obj *o, CUfunction fn,
                              const char *name)
{
    uint32_t nlen = (uint32_t)strnlen(name, TF_PROTO_MAX_NAME + 1);
    if (nlen == 0 || nlen > TF_PROTO_MAX_NAME)
        return TF_ERANGE;
    uint32_t nattrs = CU_FUNC_ATTRIBUTE_MAX;
    size_t need = tf_proto_func_size(nlen, o->nparams, nattrs);
    uint8_t *p = tf_buf_grow(&s->reply, need);
    if (!p)
        return TF_ENOSPC;
    struct tf_msg_func_info fi = {.func = o->id,
                                  .nparams = o->nparams,
                                  .name_len = nlen,
                                  .nattrs = nattrs,
                                  .params_size = o->params_size};
    tf_msg_func_info_put(p, &fi);
    p += TF_PROTO_SIZE_func_info;
    memcpy(p, name, nlen);
    p += nlen;
    for (uint32_t i = 0; i < o->nparams; i++) {
        struct tf_msg_param_info pi = {.offset = o->param_off[i],
                                       .size = o->param_off[o->nparams + i]};
        tf_msg_param_info_put(p, &pi);
        p += TF_PROTO_SIZE_param_info;
    }
    for (uint32_t a = 0; a < nattrs; a++) {
        int v = 0;
        CUresult r = s->d->funcGetAttribute(&v, (CUfunction_attribute)a, fn);
        struct tf_msg_attr_val av = {.status = (uint32_t)r, .value = (uint32_t)v};
        tf_msg_attr_val_put(p, &av);
        p += TF_PROTO_SIZE_attr_val;
    }
    return 0;
}

CUresult tf__ws_kernel_func(struct session *s, struct obj *k, uint64_t ctx, CUfunction *fn)
{
    for (int i = 0; i < k->nkf; i++) {
        if (k->kf[i].ctx == ctx) {
            *fn = k->kf[i].fn;
            return CUDA_SUCCESS;
        }
    }
    if (!s->d->kernelGetFunction)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult r = s->d->kernelGetFunction(fn, k->h.kern);
    if (r)
        return r;
    /* The library's module is in CTX now: its variables count. */
    struct obj *lib = tf__ws_obj_get(s, k->owner, TF_PROTO_H_LIBRARY);
    if (lib && (r = tf__ws_vars_use(s, lib, ctx)) != CUDA_SUCCESS)
        return r;
    if (k->nkf < MAX_KFUNCS)
        k->kf[k->nkf++] = (struct kfunc){ctx, *fn};
    return CUDA_SUCCESS;
}

/* The function client handle ID names in context CTX: a function, or a kernel (its function
 * in CTX); *O is the handle's object. */
static CUresult func_of(struct session *s, uint64_t id, uint64_t ctx, struct obj **o,
                        CUfunction *fn)
{
    if ((*o = tf__ws_obj_get(s, id, TF_PROTO_H_FUNC))) {
        *fn = (*o)->h.fn;
        return CUDA_SUCCESS;
    }
    if (!(*o = tf__ws_obj_get(s, id, TF_PROTO_H_KERNEL)))
        return CUDA_ERROR_INVALID_HANDLE;
    return tf__ws_kernel_func(s, *o, ctx, fn);
}

/* Next ".entry NAME" in PTX text [*P, END); 1 with NAME (NUL-terminated) or 0. */
static int ptx_next_entry(const char **pp, const char *end, char *name, size_t cap)
{
    const char *p = *pp;
    while (p < end) {
        if (p + 1 < end && p[0] == '/' && p[1] == '/') {
            while (p < end && *p != '\n')
                p++;
            continue;
        }
        if (p + 1 < end && p[0] == '/' && p[1] == '*') {
            p += 2;
            while (p + 1 < end && !(p[0] == '*' && p[1] == '/'))
                p++;
            p = p + 1 < end ? p + 2 : end; /* past the comment, or the text's end if unclosed */
            continue;
        }
        if ((size_t)(end - p) > 7 && memcmp(p, ".entry", 6) == 0 && (p[6] == ' ' || p[6] == '\t')) {
            p += 6;
            while (p < end && (*p == ' ' || *p == '\t'))
                p++;
            size_t n = 0;
            while (p < end && n + 1 < cap &&
                   ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || *p == '_' || *p == '$' || *p == '.'))
                name[n++] = *p++;
            name[n] = 0;
            *pp = p;
            if (n)
                return 1;
            continue;
        }
        p++;
    }
    *pp = end;
    return 0;
}

static uint64_t worker_id(struct session *s, unsigned type)
{
    return TF_PROTO_HANDLE(type, TF_PROTO_H_WORKER | ++s->next_worker_serial);
}

/* Registers function FN (or kernel KERN) named NAME of module/library OWNER and appends its
 * record. Returns 0, or non-zero when the reply is full (the client will ask by name). */
static int report_one(struct session *s, struct obj *owner, uint64_t ctx, CUfunction fn,
                      CUkernel kern, const char *name, uint32_t *count)
{
    int is_kernel = kern != NULL;
    struct obj *o =
        tf__ws_obj_new(s, worker_id(s, is_kernel ? TF_PROTO_H_KERNEL : TF_PROTO_H_FUNC),
                       is_kernel ? TF_PROTO_H_KERNEL : TF_PROTO_H_FUNC, is_kernel ? 0 : ctx);
    if (!o)
        return TF_ENOMEM;
    o->owner = owner->id;
    if (is_kernel) {
        o->h.kern = kern;
        if (tf__ws_kernel_func(s, o, ctx, &fn) != CUDA_SUCCESS) {
            tf__ws_obj_drop(s, o);
            return 0;
        }
    } else {
        o->h.fn = fn;
    }
    size_t mark = s->reply.len;
    if (describe_func(s, o, fn) != CUDA_SUCCESS || append_func_record(s, o, fn, name) != 0) {
        s->reply.len = mark;
        tf__ws_obj_drop(s, o);
        return mark + 64 > TF_PROTO_MAX_PAYLOAD / 2 ? TF_ENOSPC : 0;
    }
    (*count)++;
    return 0;
}

static uint32_t report_funcs(struct session *s, struct obj *owner, uint64_t ctx, const char *img,
                             size_t len)
{
    uint32_t count = 0;
    char name[TF_PROTO_MAX_NAME + 1];
    const char *p = img, *end = img + len;
    /* PTX text: the entry names are in the image. Binary images (cubin, fatbin): the client
     * looks functions up by name instead. */
    while (ptx_next_entry(&p, end, name, sizeof(name)) && count < TF_PROTO_MAX_FUNCS) {
        CUfunction fn = NULL;
        CUkernel kern = NULL;
        CUresult r;
        if (owner->type == TF_PROTO_H_LIBRARY)
            r = s->d->libraryGetKernel(&kern, owner->h.lib, name);
        else
            r = s->d->moduleGetFunction(&fn, owner->h.mod, name);
        if (r != CUDA_SUCCESS)
            continue;
        if (report_one(s, owner, ctx, fn, kern, name, &count) != 0)
            break;
    }
    return count;
}

/* Reserves the device memory module image IMG (LEN bytes)'s variables take (__device__ /
 * __constant__: the driver allocates them at load; sized from the image by src/fatbin/image.h) on
 * device DEV, before the load: CUDA_ERROR_OUT_OF_MEMORY when they do not fit the limit. An image
 * not understood is charged nothing (the driver then says whether it loads). */
static CUresult reserve_vars(struct session *s, int dev, const void *img, size_t len,
                             int64_t *bytes)
{
    uint64_t n = 0;
    char err[256] = "";
    *bytes = 0;
    if (tf_image_vars_bytes(img, len, &n, err, sizeof(err)) != 0) {
        tf_log(TF_LOG_INFO, "worker",
               "conn %llu: module image not understood (%s): its variables are not charged",
               (unsigned long long)s->c->id, err);
        return CUDA_SUCCESS;
    }
    if (!n)
        return CUDA_SUCCESS;
    if (n > (uint64_t)INT64_MAX || tf_worker_vram_reserve(s->w, dev, (int64_t)n) != 0) {
        tf_log(TF_LOG_INFO, "worker",
               "conn %llu: module variables of %llu bytes over the VRAM limit",
               (unsigned long long)s->c->id, (unsigned long long)n);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *bytes = (int64_t)n;
    return CUDA_SUCCESS;
}

/* The image a MODULE_LOAD names: the one held under its digest (BY_DIGEST), or the uploaded
 * blob, checked against the digest and then kept under it. NULL with *R set when there is
 * none (NEED_IMAGE: the client is to send it). The entry is referenced; the blob consumed. */
static struct tf_img *load_image(struct session *s, const struct tf_msg_module_load_req *m,
                                 CUresult *r, uint32_t *need_image)
{
    struct tf_worker *w = s->w;
    if (m->flags & TF_PROTO_LOAD_BY_DIGEST) {
        tf__ws_blob_drop(s); /* nothing is uploaded for these */
        struct tf_img *e = tf_imgcache_get(&w->images, m->digest);
        if (!e) {
            *need_image = 1;
            *r = CUDA_ERROR_NOT_FOUND;
        }
        return e;
    }
    uint8_t got[TF_SHA256_LEN];
    /* Images are NUL-terminated for the driver (PTX text needs it; binaries ignore it); the
     * budget charged for the image includes that byte. */
    if (s->blob_refused || tf_buf_append(&s->blob, "", 1) != 0) {
        *r = CUDA_ERROR_OUT_OF_MEMORY;
        return NULL;
    }
    tf_sha256(s->blob.data, s->blob.len - 1, got);
    if (memcmp(got, m->digest, TF_SHA256_LEN) != 0) {
        tf_log(TF_LOG_WARN, "worker", "conn %llu: module image does not match its digest",
               (unsigned long long)s->c->id);
        *r = CUDA_ERROR_INVALID_IMAGE;
        return NULL;
    }
    /* The cache takes the buffer (trimmed to its length) and its charge. */
    uint8_t *data = s->blob.data;
    size_t len = s->blob.len;
    uint8_t *trim = realloc(data, len);
    if (trim)
        data = trim;
    int64_t charged = s->blob_charged;
    if (trim && (int64_t)len < charged) {
        tf_worker_blob_release(w, charged - (int64_t)len);
        charged = (int64_t)len;
    }
    memset(&s->blob, 0, sizeof(s->blob));
    tf_buf_init(&s->blob, TF_PROTO_MAX_BLOB + 1);
    s->blob_charged = 0;
    int64_t freed;
    struct tf_img *e = tf_imgcache_put(&w->images, m->digest, data, len, charged, &freed);
    if (freed)
        tf_worker_blob_release(w, freed);
    if (!e)
        *r = CUDA_ERROR_OUT_OF_MEMORY;
    return e;
}

int tf__ws_h_module_load(struct session *s, struct req *q)
{
    struct tf_msg_module_load_req m;
    tf_msg_module_load_req_get(q->p, &m);
    if (!s->d->moduleLoadData || !s->d->moduleUnload || !s->d->moduleGetFunction ||
        !s->d->funcGetParamInfo || !s->d->funcGetAttribute || !s->d->launchKernel) {
        tf__ws_blob_drop(s);
        s->blob_refused = 0;
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    unsigned type = m.kind == TF_PROTO_LOAD_LIBRARY ? TF_PROTO_H_LIBRARY : TF_PROTO_H_MODULE;
    if (m.kind > TF_PROTO_LOAD_LIBRARY || (m.flags & ~TF_PROTO_LOAD_BY_DIGEST) ||
        !tf__ws_client_id_ok(s, m.module, type))
        PROTO_FAIL(q, "bad module load request");
    CUresult r = CUDA_SUCCESS;
    uint32_t need_image = 0;
    char log[TF_PROTO_MAX_LOG];
    log[0] = 0;
    struct tf_img *img = load_image(s, &m, &r, &need_image);
    tf__ws_blob_drop(s); /* what is left of an upload and its budget go back at once */
    s->blob_refused = 0;
    struct obj *ctxo = NULL;
    int64_t vars = 0; /* reserved for the module's variables, until its object holds them */
    int dev = 0;
    if (!r && (type == TF_PROTO_H_MODULE || m.ctx))
        r = tf__ws_use_ctx(s, m.ctx, &ctxo);
    if (!r && type == TF_PROTO_H_MODULE) {
        dev = ctxo->dev;
        r = reserve_vars(s, dev, img->data, img->len, &vars);
    }
    if (!r && type == TF_PROTO_H_LIBRARY && !s->d->libraryLoadData)
        r = CUDA_ERROR_NOT_SUPPORTED;
    CUmodule mod = NULL;
    CUlibrary lib = NULL;
    if (!r) {
        CUjit_option opt[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
        void *val[2] = {log, (void *)(uintptr_t)sizeof(log)};
        tf_wconn_wait_begin(s->c);
        if (type == TF_PROTO_H_LIBRARY)
            r = s->d->libraryLoadData(&lib, img->data, opt, val, 2, NULL, NULL, 0);
        else if (s->d->moduleLoadDataEx)
            r = s->d->moduleLoadDataEx(&mod, img->data, 2, opt, val);
        else
            r = s->d->moduleLoadData(&mod, img->data);
        tf_wconn_wait_end(s->c);
        log[sizeof(log) - 1] = 0;
    }
    uint32_t nfuncs = 0;
    size_t loglen = strnlen(log, sizeof(log) - 1);
    if (tf_buf_append(&s->reply, log, loglen) != 0)
        loglen = 0;
    if (!r) {
        struct obj *o = tf__ws_obj_new(s, m.module, type, type == TF_PROTO_H_MODULE ? m.ctx : 0);
        if (!o) {
            if (mod)
                s->d->moduleUnload(mod);
            if (lib)
                s->d->libraryUnload(lib);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            if (type == TF_PROTO_H_MODULE)
                o->h.mod = mod;
            else
                o->h.lib = lib;
            o->bytes = vars; /* given back when it is unloaded */
            vars = 0;
            if (type == TF_PROTO_H_LIBRARY)
                tf__ws_vars_library(s, o, img->data, img->len);
            if (type == TF_PROTO_H_MODULE || (m.ctx && s->d->libraryGetKernel))
                nfuncs = report_funcs(s, o, m.ctx, (const char *)img->data, img->len - 1);
        }
    }
    if (vars) /* the load failed */
        tf_worker_vram_release(s->w, dev, vars);
    if (img) {
        tf_imgcache_unref(&s->w->images, img);
        tf_worker_images_changed(s->w);
    }
    struct tf_msg_module_load_rep rep = {
        .nfuncs = nfuncs, .log_len = (uint32_t)loglen, .need_image = need_image};
    tf_msg_module_load_rep_put(s->reply.data, &rep);
    return r;
}

int tf__ws_h_module_unload(struct session *s, struct req *q)
{
    struct tf_msg_module_req m;
    tf_msg_module_req_get(q->p, &m);
    struct obj *o = tf__ws_obj_get(s, m.module, TF_PROTO_H_MODULE);
    if (!o)
        o = tf__ws_obj_get(s, m.module, TF_PROTO_H_LIBRARY);
    if (!o)
        return CUDA_ERROR_INVALID_HANDLE;
    tf__ws_destroy_where(s, o->type == TF_PROTO_H_MODULE ? TF_PROTO_H_FUNC : TF_PROTO_H_KERNEL,
                         tf__ws_pred_owner, o->id);
    if (o->type == TF_PROTO_H_LIBRARY) {
        /* Functions resolved from its kernels. */
        tf__ws_destroy_where(s, TF_PROTO_H_FUNC, tf__ws_pred_owner, o->id);
    }
    tf__ws_destroy_obj(s, o);
    return CUDA_SUCCESS;
}

/* NUL-terminated copy of a name tail. */
static int tail_name(const struct req *q, char *name, size_t cap)
{
    if (q->tlen == 0 || q->tlen >= cap || memchr(q->tail, 0, q->tlen))
        return TF_EINVAL;
    memcpy(name, q->tail, q->tlen);
    name[q->tlen] = 0;
    return 0;
}

int tf__ws_h_get_func(struct session *s, struct req *q, int from_kernel)
{
    struct tf_msg_get_func_req m;
    tf_msg_get_func_req_get(q->p, &m);
    char name[TF_PROTO_MAX_NAME + 1];
    struct obj *owner = NULL;
    CUfunction fn = NULL;
    CUkernel kern = NULL;
    CUresult r = CUDA_SUCCESS;
    unsigned type = TF_PROTO_H_FUNC;
    if (from_kernel) {
        owner = tf__ws_obj_get(s, m.owner, TF_PROTO_H_KERNEL);
        if (!owner)
            return CUDA_ERROR_INVALID_HANDLE;
        r = tf__ws_use_ctx(s, m.ctx, NULL);
        if (!r)
            r = tf__ws_kernel_func(s, owner, m.ctx, &fn);
        snprintf(name, sizeof(name), "kernel");
    } else {
        if (tail_name(q, name, sizeof(name)) != 0)
            PROTO_FAIL(q, "bad function name");
        owner = tf__ws_obj_get(s, m.owner, TF_PROTO_H_MODULE);
        if (owner) {
            r = tf__ws_use_ctx(s, m.ctx, NULL);
            if (!r)
                r = s->d->moduleGetFunction(&fn, owner->h.mod, name);
        } else {
            owner = tf__ws_obj_get(s, m.owner, TF_PROTO_H_LIBRARY);
            if (!owner)
                return CUDA_ERROR_INVALID_HANDLE;
            type = TF_PROTO_H_KERNEL;
            if (!s->d->libraryGetKernel)
                return CUDA_ERROR_NOT_SUPPORTED;
            r = m.ctx ? tf__ws_use_ctx(s, m.ctx, NULL) : CUDA_ERROR_INVALID_CONTEXT;
            if (!r)
                r = s->d->libraryGetKernel(&kern, owner->h.lib, name);
        }
    }
    if (r)
        return r;
    if (!tf__ws_client_id_ok(s, m.func, type))
        PROTO_FAIL(q, "bad new function id");
    struct obj *o = tf__ws_obj_new(s, m.func, type, type == TF_PROTO_H_FUNC ? m.ctx : 0);
    if (!o)
        return CUDA_ERROR_OUT_OF_MEMORY;
    o->owner = from_kernel ? owner->owner : owner->id;
    if (type == TF_PROTO_H_KERNEL) {
        o->h.kern = kern;
        r = tf__ws_kernel_func(s, o, m.ctx, &fn);
    } else {
        o->h.fn = fn;
    }
    if (!r)
        r = describe_func(s, o, fn);
    if (!r && append_func_record(s, o, fn, name) != 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r)
        tf__ws_obj_drop(s, o);
    return r;
}

int tf__ws_h_get_global(struct session *s, struct req *q)
{
    struct tf_msg_module_req m;
    tf_msg_module_req_get(q->p, &m);
    char name[TF_PROTO_MAX_NAME + 1];
    if (tail_name(q, name, sizeof(name)) != 0)
        PROTO_FAIL(q, "bad global name");
    CUdeviceptr p = 0;
    size_t size = 0;
    CUresult r;
    struct obj *o = tf__ws_obj_get(s, m.module, TF_PROTO_H_MODULE);
    if (o) {
        r = tf__ws_use_ctx(s, m.ctx, NULL);
        if (!r)
            r = s->d->moduleGetGlobal ? s->d->moduleGetGlobal(&p, &size, o->h.mod, name)
                                      : CUDA_ERROR_NOT_SUPPORTED;
    } else {
        o = tf__ws_obj_get(s, m.module, TF_PROTO_H_LIBRARY);
        if (!o)
            return CUDA_ERROR_INVALID_HANDLE;
        r = tf__ws_use_ctx(s, m.ctx, NULL);
        if (!r)
            r = s->d->libraryGetGlobal ? s->d->libraryGetGlobal(&p, &size, o->h.lib, name)
                                       : CUDA_ERROR_NOT_SUPPORTED;
        if (!r)
            r = tf__ws_vars_use(s, o, m.ctx);
    }
    if (r)
        return r;
    if (size && tf_rangeset_add(&s->mem, p, size, o->id, m.ctx) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct tf_msg_global_rep rep = {.dptr = p, .size = size};
    tf_msg_global_rep_put(s->reply.data, &rep);
    return CUDA_SUCCESS;
}

/* The compute limit: a launch takes its tokens before it is issued, waiting for them on this
 * connection's thread (later requests of this client wait behind it, in order; other
 * clients' connections are not held). The connection counts as waiting from the first
 * throttled launch until the session reads from the client again: a batch of launches that
 * each wait less than the keepalive period may add up to more than the client's timeout. */
void tf__ws_charge_launch(struct session *s, struct tf_wlaunch *l)
{
    if (!tf_wcompute_try(&s->w->compute, &s->cost, l)) {
        tf_wconn_wait_begin(s->c);
        tf_wcompute_wait(&s->w->compute, l);
    }
    tf_wcompute_issue(&s->w->compute, &s->cost, l);
}

int tf__ws_h_launch(struct session *s, struct req *q)
{
    struct tf_msg_launch_req m;
    tf_msg_launch_req_get(q->p, &m);
    const uint8_t *attrs, *params;
    size_t plen;
    if (tf_proto_launch_tail(&m, q->tail, q->tlen, &attrs, &params, &plen) != 0)
        PROTO_FAIL(q, "bad launch tail");
    struct obj *cx;
    CUresult r = tf__ws_use_ctx(s, m.ctx, &cx);
    if (r)
        return r;
    CUfunction fn;
    struct obj *o;
    if ((r = func_of(s, m.func, m.ctx, &o, &fn)))
        return r;
    if (plen != o->params_size)
        return CUDA_ERROR_INVALID_VALUE;
    CUstream st;
    r = tf__ws_get_stream(s, m.stream, &st);
    if (r)
        return r;
    memcpy(s->pbuf, params, plen);
    for (uint32_t i = 0; i < o->nparams; i++)
        s->kparams[i] = s->pbuf + o->param_off[i];
    struct tf_wlaunch wl = {.dev = cx->dev,
                            .func = (uintptr_t)fn,
                            .threads = (uint64_t)m.grid_x * m.grid_y * m.grid_z *
                                       ((uint64_t)m.block_x * m.block_y * m.block_z),
                            .stream = (uintptr_t)st};
    if (m.nattrs == 0) {
        tf__ws_charge_launch(s, &wl);
        r = s->d->launchKernel(fn, m.grid_x, m.grid_y, m.grid_z, m.block_x, m.block_y, m.block_z,
                               m.shmem, st, o->nparams ? s->kparams : NULL, NULL);
        tf_wcompute_issued(&s->w->compute, &s->cost, &wl, r == CUDA_SUCCESS);
        return r;
    }
    if (!s->d->launchKernelEx)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUlaunchAttribute la[TF_PROTO_MAX_LAUNCH_ATTRS];
    memset(la, 0, sizeof(la));
    for (uint32_t i = 0; i < m.nattrs; i++) {
        struct tf_msg_launch_attr a;
        tf_msg_launch_attr_get(attrs + (size_t)i * TF_PROTO_SIZE_launch_attr, &a);
        la[i].id = (CUlaunchAttributeID)a.id;
        switch (a.id) {
        case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
            la[i].value.cooperative = (int)a.v0;
            break;
        case CU_LAUNCH_ATTRIBUTE_PRIORITY:
            la[i].value.priority = (int)a.v0;
            break;
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
            la[i].value.clusterDim.x = a.v0;
            la[i].value.clusterDim.y = a.v1;
            la[i].value.clusterDim.z = a.v2;
            break;
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
            la[i].value.clusterSchedulingPolicyPreference = (CUclusterSchedulingPolicy)a.v0;
            break;
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
            la[i].value.programmaticStreamSerializationAllowed = (int)a.v0;
            break;
        case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
            la[i].value.memSyncDomain = (CUlaunchMemSyncDomain)a.v0;
            break;
        default:
            return CUDA_ERROR_NOT_SUPPORTED;
        }
    }
    CUlaunchConfig cfg = {.gridDimX = m.grid_x,
                          .gridDimY = m.grid_y,
                          .gridDimZ = m.grid_z,
                          .blockDimX = m.block_x,
                          .blockDimY = m.block_y,
                          .blockDimZ = m.block_z,
                          .sharedMemBytes = m.shmem,
                          .hStream = st,
                          .attrs = la,
                          .numAttrs = m.nattrs};
    tf__ws_charge_launch(s, &wl);
    r = s->d->launchKernelEx(&cfg, fn, o->nparams ? s->kparams : NULL, NULL);
    tf_wcompute_issued(&s->w->compute, &s->cost, &wl, r == CUDA_SUCCESS);
    return r;
}

/* A kernel node of an explicitly built graph: the launch's checks and parameter layout, the
 * node registered under the client's id in the graph (its launches are charged when the graph
 * is launched). */
int tf__ws_h_graph_kernel_node(struct session *s, struct req *q)
{
    struct tf_msg_knode_req m;
    tf_msg_knode_req_get(q->p, &m);
    if (!tf__ws_client_id_ok(s, m.node, TF_PROTO_H_NODE))
        PROTO_FAIL(q, "bad new graph node id");
    struct obj *cx;
    CUresult r = tf__ws_use_ctx(s, m.ctx, &cx);
    if (r)
        return r;
    struct obj *g = tf__ws_obj_get(s, m.graph, TF_PROTO_H_GRAPH);
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    CUfunction fn;
    struct obj *o;
    if ((r = func_of(s, m.func, m.ctx, &o, &fn)))
        return r;
    if (q->tlen != o->params_size)
        return CUDA_ERROR_INVALID_VALUE;
    if (!s->d->graphAddKernelNode)
        return CUDA_ERROR_NOT_SUPPORTED;
    memcpy(s->pbuf, q->tail, q->tlen);
    for (uint32_t i = 0; i < o->nparams; i++)
        s->kparams[i] = s->pbuf + o->param_off[i];
    CUDA_KERNEL_NODE_PARAMS p;
    memset(&p, 0, sizeof(p));
    p.func = fn;
    p.gridDimX = m.grid_x;
    p.gridDimY = m.grid_y;
    p.gridDimZ = m.grid_z;
    p.blockDimX = m.block_x;
    p.blockDimY = m.block_y;
    p.blockDimZ = m.block_z;
    p.sharedMemBytes = m.shmem;
    p.kernelParams = o->nparams ? s->kparams : NULL;
    p.ctx = cx->h.ctx;
    struct obj *n = tf__ws_obj_new(s, m.node, TF_PROTO_H_NODE, m.ctx);
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = s->d->graphAddKernelNode(&n->h.node, g->h.graph, NULL, 0, &p);
    if (r) {
        tf__ws_obj_drop(s, n);
        return r;
    }
    n->owner = g->id;
    n->dev = cx->dev;
    return CUDA_SUCCESS;
}

/* A graph launch: charged as one launch of the executable graph (the cost model learns what
 * it costs from its measured launches, as for a kernel). */
CUresult tf__ws_hook_cuGraphLaunch(struct session *s, uint64_t ctx, tf_ws_tramp call, void *fn,
                                   const uint64_t *v, uint64_t *o, void **nh)
{
    struct obj *cx = tf__ws_obj_get(s, ctx, TF_PROTO_H_CTX);
    if (!cx)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct tf_wlaunch wl = {
        .dev = cx->dev, .func = (uintptr_t)v[0], .threads = 1, .stream = (uintptr_t)v[1]};
    tf__ws_charge_launch(s, &wl);
    CUresult r = call(fn, v, o, nh);
    tf_wcompute_issued(&s->w->compute, &s->cost, &wl, r == CUDA_SUCCESS);
    return r;
}
