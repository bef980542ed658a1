/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so: modules and libraries (the image is uploaded in chunks, loaded with one
 * round trip whose reply carries every function's parameter layout and attributes), function
 * lookups and globals. Function queries and launches are in api_launch.c.
 */
#include "remote/client/client.h"
#include "remote/sha256.h"

#include "common/log.h"
#include "fatbin/image.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static CUresult leave(struct tfc *t, CUresult r)
{
    pthread_mutex_unlock(&t->lock);
    return r;
}

/* ---- images --------------------------------------------------------------------------------- */

/* Where an in-memory image starts and how many bytes it spans (the driver API passes only a
 * pointer): an ELF cubin or a fatbin from its headers, through a wrapper record, else PTX text
 * with its NUL (libtfimageloc, fuzzed with the fatbin parser). 0 when it cannot be told. */
static size_t image_size(const void *image, const void **start)
{
    struct tf_image im;
    char err[160];
    if (tf_image_locate(image, 0, &im, err, sizeof(err))) {
        tf_log(TF_LOG_WARN, "client", "module image: %s", err);
        return 0;
    }
    *start = im.start;
    size_t n = im.kind == TF_IMAGE_PTX ? im.size + 1 : im.size;
    return n <= TF_PROTO_MAX_BLOB ? n : 0;
}

/* Reads FNAME into a malloc'd buffer (NUL-terminated; *LEN excludes the NUL). */
static CUresult read_file(const char *fname, uint8_t **out, size_t *len)
{
    int fd = open(fname, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_FILE_NOT_FOUND;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < 0 || (uint64_t)st.st_size >= TF_PROTO_MAX_BLOB) {
        close(fd);
        return CUDA_ERROR_INVALID_VALUE;
    }
    uint8_t *b = malloc((size_t)st.st_size + 1);
    if (!b) {
        close(fd);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = read(fd, b + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    b[got] = 0;
    *out = b;
    *len = got;
    return CUDA_SUCCESS;
}

/* JIT options the client honours: the error log comes back from the worker; the info log is
 * left empty; every other option is a hint and is dropped. */
static void jit_outputs(CUjit_option *opts, void **vals, unsigned n, const char *log, size_t loglen)
{
    size_t ecap = 0, icap = 0;
    char *ebuf = NULL, *ibuf = NULL;
    for (unsigned i = 0; opts && vals && i < n; i++) {
        if (opts[i] == CU_JIT_ERROR_LOG_BUFFER)
            ebuf = vals[i];
        else if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            ecap = (size_t)(uintptr_t)vals[i];
        else if (opts[i] == CU_JIT_INFO_LOG_BUFFER)
            ibuf = vals[i];
        else if (opts[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
            icap = (size_t)(uintptr_t)vals[i];
    }
    if (ebuf && ecap) {
        size_t k = loglen < ecap - 1 ? loglen : ecap - 1;
        memcpy(ebuf, log, k);
        ebuf[k] = 0;
    }
    if (ibuf && icap)
        ibuf[0] = 0;
    for (unsigned i = 0; opts && vals && i < n; i++) {
        if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES && ebuf && ecap)
            vals[i] = (void *)(uintptr_t)(loglen < ecap - 1 ? loglen : ecap - 1);
        else if (opts[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES && ibuf && icap)
            vals[i] = (void *)(uintptr_t)0;
    }
}

/* Loads IMAGE as a module (KIND TF_PROTO_LOAD_MODULE, in context CTX) or a library, and
 * registers the object and the functions the reply describes. The image is named by its
 * SHA-256 first and travels only when the worker does not hold it already (N processes
 * loading one library send it once). Lock held. */
static CUresult load_image(struct tfc *t, const void *image, size_t len, unsigned kind,
                           uint64_t ctx, uint64_t *out, CUjit_option *opts, void **vals,
                           unsigned nopts)
{
    unsigned type = kind == TF_PROTO_LOAD_LIBRARY ? TF_PROTO_H_LIBRARY : TF_PROTO_H_MODULE;
    uint64_t id = tfc_new_id(t, type);
    uint8_t p[TF_PROTO_SIZE_module_load_req];
    struct tf_msg_module_load_req m = {
        .ctx = ctx, .module = id, .kind = kind, .flags = TF_PROTO_LOAD_BY_DIGEST};
    tf_sha256(image, len, m.digest);
    tf_msg_module_load_req_put(p, &m);
    CUresult r = tfc_call(t, TF_OP_MODULE_LOAD, p, sizeof(p), NULL, 0);
    if (t->state != TFC_CONNECTED)
        return r;
    struct tf_msg_module_load_rep rep;
    tf_msg_module_load_rep_get(t->reply.data, &rep);
    if (r == CUDA_ERROR_NOT_FOUND && rep.need_image) {
        const size_t piece = TF_PROTO_MAX_PAYLOAD - 4096;
        r = CUDA_SUCCESS;
        for (size_t off = 0; off < len && !r;) {
            size_t k = len - off < piece ? len - off : piece;
            r = tfc_async(t, TF_OP_BLOB_APPEND, NULL, 0, (const uint8_t *)image + off, k);
            off += k;
        }
        if (r)
            return r;
        m.flags = 0;
        tf_msg_module_load_req_put(p, &m);
        r = tfc_call(t, TF_OP_MODULE_LOAD, p, sizeof(p), NULL, 0);
        if (t->state != TFC_CONNECTED)
            return r;
        tf_msg_module_load_rep_get(t->reply.data, &rep);
    }
    const uint8_t *log;
    struct tf_proto_funcs_iter it;
    if (tf_proto_module_load_rep_begin(&rep, t->reply.data + TF_PROTO_SIZE_module_load_rep,
                                       t->reply.len - TF_PROTO_SIZE_module_load_rep, &log,
                                       &it) != 0) {
        tfc_lose(t, "malformed MODULE_LOAD reply");
        return CUDA_ERROR_LAUNCH_FAILED;
    }
    jit_outputs(opts, vals, nopts, (const char *)log, rep.log_len);
    if (r)
        return r;
    struct tfc_module *mod = calloc(1, sizeof(*mod));
    if (!mod || tf_htab_put(&t->objs, id, mod) != 0) {
        free(mod);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    mod->id = id;
    mod->type = type;
    mod->ctx = type == TF_PROTO_H_MODULE ? ctx : 0;
    struct tf_proto_func f;
    int rc;
    while ((rc = tf_proto_funcs_next(&it, &f)) == 1) {
        unsigned ft = type == TF_PROTO_H_LIBRARY ? TF_PROTO_H_KERNEL : TF_PROTO_H_FUNC;
        if (TF_PROTO_HANDLE_TYPE(f.info.func) != ft || tf_htab_get(&t->objs, f.info.func)) {
            rc = -1;
            break;
        }
        if (!tfc_func_add(t, &f, ft, f.info.func, id, mod->ctx))
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (rc < 0) {
        tfc_lose(t, "malformed function records");
        return CUDA_ERROR_LAUNCH_FAILED;
    }
    *out = id;
    return CUDA_SUCCESS;
}

static CUresult module_load(CUmodule *module, const void *image, size_t len, CUjit_option *opts,
                            void **vals, unsigned nopts)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    uint64_t ctx = tfc_current(), id = 0;
    if (!r && (!ctx || !tfc_ctx_of(t, ctx)))
        r = CUDA_ERROR_INVALID_CONTEXT;
    if (!r)
        r = load_image(t, image, len, TF_PROTO_LOAD_MODULE, ctx, &id, opts, vals, nopts);
    if (!r)
        *module = (CUmodule)(uintptr_t)id;
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image,
                                            unsigned int numOptions, CUjit_option *options,
                                            void **optionValues)
{
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    const void *start;
    size_t len = image_size(image, &start);
    if (len == 0)
        return CUDA_ERROR_INVALID_IMAGE;
    return module_load(module, start, len, options, optionValues, numOptions);
}

TFC_API CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
    return cuModuleLoadDataEx(module, image, 0, NULL, NULL);
}

TFC_API CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    return cuModuleLoadDataEx(module, fatCubin, 0, NULL, NULL);
}

TFC_API CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
    if (!module || !fname)
        return CUDA_ERROR_INVALID_VALUE;
    uint8_t *b;
    size_t len;
    CUresult r = read_file(fname, &b, &len);
    if (r)
        return r;
    /* PTX text travels with its terminating NUL; binaries as they are (checked against the
     * file's length). */
    struct tf_image im;
    char err[160];
    if (tf_image_locate(b, len, &im, err, sizeof(err))) {
        tf_log(TF_LOG_WARN, "client", "module file %s: %s", fname, err);
        free(b);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    r = module_load(module, b, len + (im.kind == TF_IMAGE_PTX ? 1 : 0), NULL, NULL, 0);
    free(b);
    return r;
}

/* Forgets module/library ID and everything found in it (a library's modules too). Lock
 * held. */
static void forget_module(struct tfc *t, struct tfc_module *m)
{
    for (int again = 1; again && m->type == TF_PROTO_H_LIBRARY;) {
        again = 0;
        size_t pos = 0;
        uint64_t key;
        void *val;
        while (tf_htab_next(&t->objs, &pos, &key, &val)) {
            struct tfc_module *a = val;
            if (TF_PROTO_HANDLE_TYPE(key) == TF_PROTO_H_MODULE && a->alias == m->id) {
                tf_htab_del(&t->objs, key);
                free(a);
                again = 1;
                break;
            }
        }
    }
    tf_rangeset_del_owner(&t->mem, m->id);
    for (;;) {
        size_t pos = 0;
        uint64_t key;
        void *val;
        struct tfc_func *victim = NULL;
        while (tf_htab_next(&t->objs, &pos, &key, &val)) {
            unsigned ty = TF_PROTO_HANDLE_TYPE(key);
            if ((ty == TF_PROTO_H_FUNC || ty == TF_PROTO_H_KERNEL) &&
                ((struct tfc_func *)val)->owner == m->id) {
                victim = val;
                break;
            }
        }
        if (!victim)
            break;
        tf_htab_del(&t->objs, victim->id);
        tfc_func_free(victim);
    }
    tf_htab_del(&t->objs, m->id);
    free(m);
}

static CUresult unload(uint64_t id, unsigned type)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    struct tfc_module *m = r ? NULL : tfc_obj(t, id, type);
    if (!r && !m)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (!r && m->alias) { /* a library's module: only a name here */
        tf_htab_del(&t->objs, m->id);
        free(m);
        return leave(t, CUDA_SUCCESS);
    }
    if (!r) {
        uint8_t p[TF_PROTO_SIZE_module_req];
        struct tf_msg_module_req q = {.ctx = m->ctx, .module = id};
        tf_msg_module_req_put(p, &q);
        r = tfc_async(t, TF_OP_MODULE_UNLOAD, p, sizeof(p), NULL, 0);
        forget_module(t, m);
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
    return unload((uintptr_t)hmod, TF_PROTO_H_MODULE);
}

static CUresult kernel_function(struct tfc *t, struct tfc_func *k, uint64_t ctx,
                                struct tfc_func **out);

/* Function/kernel NAME of OWNER: from the cache, else asked by name. Lock held. */
static CUresult find_func(struct tfc *t, struct tfc_module *m, const char *name, uint64_t ctx,
                          struct tfc_func **out)
{
    for (struct tfc_func *f = m->funcs; f; f = f->next_in_owner) {
        if (strcmp(f->name, name) == 0) {
            *out = f;
            return CUDA_SUCCESS;
        }
    }
    size_t nlen = strlen(name);
    if (nlen == 0 || nlen > TF_PROTO_MAX_NAME)
        return CUDA_ERROR_NOT_FOUND;
    unsigned ft = m->type == TF_PROTO_H_LIBRARY ? TF_PROTO_H_KERNEL : TF_PROTO_H_FUNC;
    uint64_t id = tfc_new_id(t, ft);
    uint8_t p[TF_PROTO_SIZE_get_func_req];
    struct tf_msg_get_func_req q = {.ctx = ctx, .owner = m->id, .func = id};
    tf_msg_get_func_req_put(p, &q);
    CUresult r = tfc_call(t, TF_OP_MODULE_GET_FUNC, p, sizeof(p), name, nlen);
    if (r)
        return r;
    struct tf_proto_func f;
    size_t used;
    if (tf_proto_func_decode(t->reply.data + TF_PROTO_SIZE_func_rep,
                             t->reply.len - TF_PROTO_SIZE_func_rep, &f, &used) != 0 ||
        f.info.func != id) {
        tfc_lose(t, "malformed function record");
        return CUDA_ERROR_LAUNCH_FAILED;
    }
    *out = tfc_func_add(t, &f, ft, id, m->id, ft == TF_PROTO_H_FUNC ? ctx : 0);
    return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

TFC_API CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    struct tfc_module *m = r ? NULL : tfc_obj(t, (uintptr_t)hmod, TF_PROTO_H_MODULE);
    if (!r && !m)
        r = CUDA_ERROR_INVALID_HANDLE;
    struct tfc_func *f = NULL;
    if (!r && m->alias) {
        /* The module of a library: its kernel's function in the module's context. */
        struct tfc_module *lib = tfc_obj(t, m->alias, TF_PROTO_H_LIBRARY);
        struct tfc_func *k = NULL;
        r = lib ? find_func(t, lib, name, m->ctx, &k) : CUDA_ERROR_INVALID_HANDLE;
        if (!r)
            r = kernel_function(t, k, m->ctx, &f);
    } else if (!r) {
        r = find_func(t, m, name, m->ctx, &f);
    }
    if (!r)
        *hfunc = (CUfunction)(uintptr_t)f->id;
    return leave(t, r);
}

static CUresult get_global(uint64_t owner, unsigned type, CUdeviceptr *dptr, size_t *bytes,
                           const char *name)
{
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    struct tfc_module *m = r ? NULL : tfc_obj(t, owner, type);
    if (!r && !m)
        r = CUDA_ERROR_INVALID_HANDLE;
    uint64_t ctx = m && m->ctx ? m->ctx : tfc_current();
    size_t nlen = name ? strlen(name) : 0;
    if (!r && (nlen == 0 || nlen > TF_PROTO_MAX_NAME))
        r = CUDA_ERROR_NOT_FOUND;
    if (!r && (!ctx || !tfc_ctx_of(t, ctx)))
        r = CUDA_ERROR_INVALID_CONTEXT;
    if (!r) {
        uint8_t p[TF_PROTO_SIZE_module_req];
        struct tf_msg_module_req q = {.ctx = ctx, .module = owner};
        tf_msg_module_req_put(p, &q);
        r = tfc_call(t, TF_OP_MODULE_GET_GLOBAL, p, sizeof(p), name, nlen);
    }
    if (!r) {
        struct tf_msg_global_rep rep;
        tf_msg_global_rep_get(t->reply.data, &rep);
        if (rep.size)
            (void)tf_rangeset_add(&t->mem, rep.dptr, rep.size, owner, ctx);
        if (dptr)
            *dptr = rep.dptr;
        if (bytes)
            *bytes = rep.size;
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                           const char *name)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    struct tfc_module *m = tfc_obj(t, (uintptr_t)hmod, TF_PROTO_H_MODULE);
    uint64_t lib = m ? m->alias : 0;
    pthread_mutex_unlock(&t->lock);
    if (lib) /* the module of a library: the library's global in the current context */
        return get_global(lib, TF_PROTO_H_LIBRARY, dptr, bytes, name);
    return get_global((uintptr_t)hmod, TF_PROTO_H_MODULE, dptr, bytes, name);
}

/* ---- libraries and kernels ------------------------------------------------------------------ */

static CUresult library_load(CUlibrary *library, const void *code, CUjit_option *jo, void **jv,
                             unsigned nj)
{
    if (!library || !code)
        return CUDA_ERROR_INVALID_VALUE;
    const void *start;
    size_t len = image_size(code, &start);
    if (len == 0)
        return CUDA_ERROR_INVALID_IMAGE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    uint64_t ctx = tfc_current(), id = 0;
    if (ctx && !tfc_ctx_of(t, ctx))
        ctx = 0;
    if (!r)
        r = load_image(t, start, len, TF_PROTO_LOAD_LIBRARY, ctx, &id, jo, jv, nj);
    if (!r)
        *library = (CUlibrary)(uintptr_t)id;
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code,
                                           CUjit_option *jitOptions, void **jitOptionsValues,
                                           unsigned int numJitOptions,
                                           CUlibraryOption *libraryOptions,
                                           void **libraryOptionValues,
                                           unsigned int numLibraryOptions)
{
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    return library_load(library, code, jitOptions, jitOptionsValues, numJitOptions);
}

TFC_API CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                               CUjit_option *jitOptions, void **jitOptionsValues,
                                               unsigned int numJitOptions,
                                               CUlibraryOption *libraryOptions,
                                               void **libraryOptionValues,
                                               unsigned int numLibraryOptions)
{
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    if (!fileName)
        return CUDA_ERROR_INVALID_VALUE;
    uint8_t *b;
    size_t len;
    CUresult r = read_file(fileName, &b, &len);
    if (r)
        return r;
    r = library_load(library, b, jitOptions, jitOptionsValues, numJitOptions);
    free(b);
    return r;
}

TFC_API CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
    return unload((uintptr_t)library, TF_PROTO_H_LIBRARY);
}

TFC_API CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    struct tfc_module *m = r ? NULL : tfc_obj(t, (uintptr_t)library, TF_PROTO_H_LIBRARY);
    if (!r && !m)
        r = CUDA_ERROR_INVALID_HANDLE;
    struct tfc_func *f = NULL;
    if (!r)
        r = find_func(t, m, name, tfc_current(), &f);
    if (!r)
        *pKernel = (CUkernel)(uintptr_t)f->id;
    return leave(t, r);
}

/* The module of a library in the current context: a client-side name for the library there
 * (functions and globals are asked of the library; the worker never sees it). */
TFC_API CUresult CUDAAPI cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    if (!pMod)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    uint64_t ctx = tfc_current(), lib = (uintptr_t)library;
    if (!r && !tfc_obj(t, lib, TF_PROTO_H_LIBRARY))
        r = CUDA_ERROR_INVALID_HANDLE;
    if (!r && (!ctx || !tfc_ctx_of(t, ctx)))
        r = CUDA_ERROR_INVALID_CONTEXT;
    if (r)
        return leave(t, r);
    size_t pos = 0;
    uint64_t key;
    void *val;
    while (tf_htab_next(&t->objs, &pos, &key, &val)) {
        struct tfc_module *a = val;
        if (TF_PROTO_HANDLE_TYPE(key) == TF_PROTO_H_MODULE && a->alias == lib && a->ctx == ctx) {
            *pMod = (CUmodule)(uintptr_t)key;
            return leave(t, CUDA_SUCCESS);
        }
    }
    struct tfc_module *m = calloc(1, sizeof(*m));
    if (!m)
        return leave(t, CUDA_ERROR_OUT_OF_MEMORY);
    m->id = tfc_new_id(t, TF_PROTO_H_MODULE);
    m->type = TF_PROTO_H_MODULE;
    m->ctx = ctx;
    m->alias = lib;
    if (tf_htab_put(&t->objs, m->id, m) != 0) {
        free(m);
        return leave(t, CUDA_ERROR_OUT_OF_MEMORY);
    }
    *pMod = (CUmodule)(uintptr_t)m->id;
    return leave(t, CUDA_SUCCESS);
}

TFC_API CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                            const char *name)
{
    return get_global((uintptr_t)library, TF_PROTO_H_LIBRARY, dptr, bytes, name);
}

/* The function of kernel K in context CTX, from the cache or the worker. Lock held. */
static CUresult kernel_function(struct tfc *t, struct tfc_func *k, uint64_t ctx,
                                struct tfc_func **out)
{
    for (int i = 0; i < k->nkf; i++) {
        if (k->kf[i].ctx == ctx) {
            *out = tfc_obj(t, k->kf[i].func, TF_PROTO_H_FUNC);
            if (*out)
                return CUDA_SUCCESS;
            k->kf[i--] = k->kf[--k->nkf];
        }
    }
    uint64_t id = tfc_new_id(t, TF_PROTO_H_FUNC);
    uint8_t p[TF_PROTO_SIZE_get_func_req];
    struct tf_msg_get_func_req q = {.ctx = ctx, .owner = k->id, .func = id};
    tf_msg_get_func_req_put(p, &q);
    CUresult r = tfc_call(t, TF_OP_KERNEL_GET_FUNC, p, sizeof(p), NULL, 0);
    if (r)
        return r;
    struct tf_proto_func f;
    size_t used;
    if (tf_proto_func_decode(t->reply.data + TF_PROTO_SIZE_func_rep,
                             t->reply.len - TF_PROTO_SIZE_func_rep, &f, &used) != 0 ||
        f.info.func != id) {
        tfc_lose(t, "malformed function record");
        return CUDA_ERROR_LAUNCH_FAILED;
    }
    struct tfc_func *fn = tfc_func_add(t, &f, TF_PROTO_H_FUNC, id, k->owner, ctx);
    if (!fn)
        return CUDA_ERROR_OUT_OF_MEMORY;
    free(fn->name);
    fn->name = strdup(k->name);
    if (k->nkf < (int)(sizeof(k->kf) / sizeof(k->kf[0])))
        k->kf[k->nkf++] = (struct tfc_kfunc){ctx, id};
    *out = fn;
    return fn->name ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

TFC_API CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    uint64_t ctx = tfc_current();
    struct tfc_func *k = r ? NULL : tfc_obj(t, (uintptr_t)kernel, TF_PROTO_H_KERNEL);
    if (!r && !k)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (!r && (!ctx || !tfc_ctx_of(t, ctx)))
        r = CUDA_ERROR_INVALID_CONTEXT;
    struct tfc_func *f = NULL;
    if (!r)
        r = kernel_function(t, k, ctx, &f);
    if (!r)
        *pFunc = (CUfunction)(uintptr_t)f->id;
    return leave(t, r);
}
