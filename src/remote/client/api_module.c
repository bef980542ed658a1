/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so: modules and libraries (the image is uploaded in chunks, loaded with one
 * round trip whose reply carries every function's parameter layout and attributes), function
 * lookups and attributes (answered from that cache), globals, and kernel launches
 * (parameters packed with the cached layout, straight into the batch: fire-and-forget).
 */
#include "remote/client/client.h"
#include "remote/sha256.h"

#include "common/log.h"

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

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static uint32_t rd32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/* Size of an in-memory image (the driver API passes only a pointer): ELF cubin from its
 * header, fatbin from its header, else NUL-terminated PTX text. 0 when it cannot be told. */
static size_t image_size(const void *image, const void **start)
{
    const uint8_t *p = image;
    *start = image;
    if (memcmp(p, "\177ELF", 4) == 0 && p[4] == 2) {
        uint64_t shoff = rd64(p + 0x28), phoff = rd64(p + 0x20);
        uint64_t s1 = shoff + (uint64_t)rd16(p + 0x3c) * rd16(p + 0x3a);
        uint64_t s2 = phoff + (uint64_t)rd16(p + 0x38) * rd16(p + 0x36);
        uint64_t n = s1 > s2 ? s1 : s2;
        return n <= TF_PROTO_MAX_BLOB ? (size_t)n : 0;
    }
    if (rd32(p) == 0x466243b1u) { /* __fatBinC_Wrapper_t: magic, version, data pointer */
        const void *data;
        memcpy(&data, p + 8, sizeof(data));
        return data ? image_size(data, start) : 0;
    }
    if (rd32(p) == 0xba55ed50u) { /* fatbin header: magic, version, header size, fat size */
        uint64_t n = (uint64_t)rd16(p + 6) + rd64(p + 8);
        return n <= TF_PROTO_MAX_BLOB ? (size_t)n : 0;
    }
    size_t n = strnlen(image, TF_PROTO_MAX_BLOB);
    return n < TF_PROTO_MAX_BLOB ? n + 1 : 0;
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
    /* PTX text travels with its terminating NUL; binaries as they are. */
    int text = !(len >= 4 && (memcmp(b, "\177ELF", 4) == 0 || rd32(b) == 0xba55ed50u));
    r = module_load(module, b, len + (text ? 1 : 0), NULL, NULL, 0);
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

/* ---- function queries ----------------------------------------------------------------------- */

/* A function or kernel record for a CUfunction/CUkernel handle (lock held). */
static struct tfc_func *func_of(struct tfc *t, uint64_t id)
{
    struct tfc_func *f = tfc_obj(t, id, TF_PROTO_H_FUNC);
    return f ? f : tfc_obj(t, id, TF_PROTO_H_KERNEL);
}

static CUresult param_info(uint64_t id, size_t idx, size_t *off, size_t *size)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = t->state == TFC_UNINIT ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
    struct tfc_func *f = r ? NULL : func_of(t, id);
    if (!r && !f)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (!r && idx >= f->nparams)
        r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        if (off)
            *off = f->off[idx];
        if (size)
            *size = f->sz[idx];
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                                            size_t *paramSize)
{
    return param_info((uintptr_t)func, paramIndex, paramOffset, paramSize);
}

TFC_API CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex,
                                              size_t *paramOffset, size_t *paramSize)
{
    return param_info((uintptr_t)kernel, paramIndex, paramOffset, paramSize);
}

TFC_API CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = t->state == TFC_UNINIT ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
    struct tfc_func *f = r ? NULL : func_of(t, (uintptr_t)hfunc);
    if (!r && !f)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (!r && (unsigned)attrib >= f->nattrs)
        r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        r = (CUresult)f->attr_st[attrib];
        if (!r)
            *pi = f->attr_val[attrib];
    }
    return leave(t, r);
}

/* A plain forward (calls.def) that also updates the cached attribute. */
TFC_API CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib,
                                            int value)
{
    CUresult r = tfc_fwd_cuFuncSetAttribute(hfunc, attrib, value);
    if (r)
        return r;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    struct tfc_func *f = func_of(t, (uintptr_t)hfunc);
    if (f && (unsigned)attrib < f->nattrs) {
        f->attr_val[attrib] = value;
        f->attr_st[attrib] = CUDA_SUCCESS;
    }
    return leave(t, r);
}

/* A plain forward that also updates the cached attribute of the kernel and of its functions
 * (launches are checked against them). */
TFC_API CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                              CUdevice dev)
{
    CUresult r = tfc_fwd_cuKernelSetAttribute(attrib, val, kernel, dev);
    if (r)
        return r;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    struct tfc_func *k = tfc_obj(t, (uintptr_t)kernel, TF_PROTO_H_KERNEL);
    for (int i = -1; k && i < k->nkf; i++) {
        struct tfc_func *f = i < 0 ? k : tfc_obj(t, k->kf[i].func, TF_PROTO_H_FUNC);
        if (f && (unsigned)attrib < f->nattrs) {
            f->attr_val[attrib] = val;
            f->attr_st[attrib] = CUDA_SUCCESS;
        }
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc)
{
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = t->state == TFC_UNINIT ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
    struct tfc_func *f = r ? NULL : func_of(t, (uintptr_t)hfunc);
    if (!r && !f)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (!r)
        *name = f->name;
    return leave(t, r);
}

/* ---- launches ------------------------------------------------------------------------------- */

/* Launch attributes forwarded (values of up to three u32); others are not supported. */
static CUresult encode_attr(const CUlaunchAttribute *a, struct tf_msg_launch_attr *w)
{
    memset(w, 0, sizeof(*w));
    w->id = (uint32_t)a->id;
    switch (a->id) {
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        w->v0 = (uint32_t)a->value.cooperative;
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        w->v0 = (uint32_t)a->value.priority;
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        w->v0 = a->value.clusterDim.x;
        w->v1 = a->value.clusterDim.y;
        w->v2 = a->value.clusterDim.z;
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        w->v0 = (uint32_t)a->value.clusterSchedulingPolicyPreference;
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        w->v0 = (uint32_t)a->value.programmaticStreamSerializationAllowed;
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
        w->v0 = (uint32_t)a->value.memSyncDomain;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

/* Parameter bytes from EXTRA (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE/END). */
static CUresult extra_params(void **extra, const void **buf, size_t *size)
{
    *buf = NULL;
    *size = 0;
    int have_size = 0;
    for (int i = 0; i < 16 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
            *buf = extra[i + 1];
        } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
            if (!extra[i + 1])
                return CUDA_ERROR_INVALID_VALUE;
            memcpy(size, extra[i + 1], sizeof(*size));
            have_size = 1;
        } else {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return *buf && have_size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* What the real driver answers the runtime for grid or block dimensions outside the device's
 * limits when launching a CUkernel (the runtime reports it as cudaErrorInvalidConfiguration;
 * cuda.h does not name it); CUfunction launches get CUDA_ERROR_INVALID_VALUE. */
#define CUDA_ERROR_INVALID_CONFIGURATION_RT ((CUresult)9)

/* The launch configuration errors the driver reports at the launch itself, checked here
 * against the cached device and function attributes so that they come from the same call as
 * on a local GPU (the worker's driver checks again; what only it can tell comes back from
 * the next synchronising call). */
static CUresult launch_geometry(struct tfc *t, int dev, const struct tfc_func *fn,
                                const unsigned grid[3], const unsigned block[3], unsigned shmem)
{
    const struct tfc_dev *d = &t->dev[dev];
    int lim[7] = {1024, 1024, 64, 1024, 2147483647, 65535, 65535};
    static const CUdevice_attribute la[7] = {
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
    for (int i = 0; i < 7; i++)
        if ((unsigned)la[i] < d->nattrs && d->attr_st[la[i]] == CUDA_SUCCESS &&
            d->attr_val[la[i]] > 0)
            lim[i] = d->attr_val[la[i]];
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    int ok = grid[0] && grid[1] && grid[2] && block[0] && block[1] && block[2] &&
             block[0] <= (unsigned)lim[0] && block[1] <= (unsigned)lim[1] &&
             block[2] <= (unsigned)lim[2] && threads <= (uint64_t)lim[3] &&
             grid[0] <= (unsigned)lim[4] && grid[1] <= (unsigned)lim[5] &&
             grid[2] <= (unsigned)lim[6];
    if (!ok)
        return fn->type == TF_PROTO_H_KERNEL ? CUDA_ERROR_INVALID_CONFIGURATION_RT
                                             : CUDA_ERROR_INVALID_VALUE;
    const unsigned mt = CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
    const unsigned ms = CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
    if (mt < fn->nattrs && fn->attr_st[mt] == CUDA_SUCCESS && fn->attr_val[mt] > 0 &&
        threads > (uint64_t)fn->attr_val[mt])
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    if (ms < fn->nattrs && fn->attr_st[ms] == CUDA_SUCCESS && fn->attr_val[ms] >= 0 &&
        shmem > (unsigned)fn->attr_val[ms])
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult launch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                       unsigned shmem, CUstream hs, void **kernelParams, void **extra,
                       const CUlaunchAttribute *attrs, unsigned nattrs)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    if (r)
        return leave(t, r);
    uint64_t ctx = tfc_current(), sid;
    if (!ctx || !tfc_ctx_of(t, ctx))
        return leave(t, CUDA_ERROR_INVALID_CONTEXT);
    r = tfc_sticky(t, ctx);
    if (r)
        return leave(t, r);
    struct tfc_func *fn = func_of(t, (uintptr_t)f);
    if (!fn)
        return leave(t, CUDA_ERROR_INVALID_HANDLE);
    r = tfc_stream_id(t, hs, &sid);
    if (r)
        return leave(t, r);
    if (nattrs > TF_PROTO_MAX_LAUNCH_ATTRS || (kernelParams && extra))
        return leave(t, CUDA_ERROR_INVALID_VALUE);
    r = launch_geometry(t, tfc_ctx_of(t, ctx)->dev, fn, grid, block, shmem);
    if (r)
        return leave(t, r);
    const void *xbuf = NULL;
    size_t xsize = 0;
    if (extra) {
        r = extra_params(extra, &xbuf, &xsize);
        if (r || xsize != fn->params_size)
            return leave(t, CUDA_ERROR_INVALID_VALUE);
    } else if (fn->nparams && !kernelParams) {
        return leave(t, CUDA_ERROR_INVALID_VALUE);
    }
    struct tf_msg_launch_attr wa[TF_PROTO_MAX_LAUNCH_ATTRS];
    for (unsigned i = 0; i < nattrs; i++) {
        r = encode_attr(&attrs[i], &wa[i]);
        if (r)
            return leave(t, r);
    }
    size_t body =
        TF_PROTO_SIZE_launch_req + (size_t)nattrs * TF_PROTO_SIZE_launch_attr + fn->params_size;
    uint8_t *p = tfc_async_reserve(t, TF_OP_LAUNCH, body);
    if (!p)
        return leave(t, CUDA_ERROR_LAUNCH_FAILED);
    struct tf_msg_launch_req m = {.ctx = ctx,
                                  .func = fn->id,
                                  .stream = sid,
                                  .grid_x = grid[0],
                                  .grid_y = grid[1],
                                  .grid_z = grid[2],
                                  .block_x = block[0],
                                  .block_y = block[1],
                                  .block_z = block[2],
                                  .shmem = shmem,
                                  .nattrs = nattrs};
    tf_msg_launch_req_put(p, &m);
    p += TF_PROTO_SIZE_launch_req;
    for (unsigned i = 0; i < nattrs; i++, p += TF_PROTO_SIZE_launch_attr)
        tf_msg_launch_attr_put(p, &wa[i]);
    if (xbuf) {
        memcpy(p, xbuf, fn->params_size);
    } else {
        /* Padding between parameters travels as zeros. */
        memset(p, 0, fn->params_size);
        for (uint32_t i = 0; i < fn->nparams; i++)
            memcpy(p + fn->off[i], kernelParams[i], fn->sz[i]);
    }
    return leave(t, CUDA_SUCCESS);
}

TFC_API CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX,
                                        unsigned int blockDimY, unsigned int blockDimZ,
                                        unsigned int sharedMemBytes, CUstream hStream,
                                        void **kernelParams, void **extra)
{
    unsigned g[3] = {gridDimX, gridDimY, gridDimZ}, b[3] = {blockDimX, blockDimY, blockDimZ};
    return launch(f, g, b, sharedMemBytes, hStream, kernelParams, extra, NULL, 0);
}

TFC_API CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                          void **kernelParams, void **extra)
{
    if (!config)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned g[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
    unsigned b[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
    if (config->numAttrs && !config->attrs)
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, g, b, config->sharedMemBytes, config->hStream, kernelParams, extra,
                  config->attrs, config->numAttrs);
}

TFC_API CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                                   unsigned int gridDimY, unsigned int gridDimZ,
                                                   unsigned int blockDimX, unsigned int blockDimY,
                                                   unsigned int blockDimZ,
                                                   unsigned int sharedMemBytes, CUstream hStream,
                                                   void **kernelParams)
{
    unsigned g[3] = {gridDimX, gridDimY, gridDimZ}, b[3] = {blockDimX, blockDimY, blockDimZ};
    CUlaunchAttribute coop = {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE, .value.cooperative = 1};
    return launch(f, g, b, sharedMemBytes, hStream, kernelParams, NULL, &coop, 1);
}
