/* SPDX-License-Identifier: Apache-2.0
 *
 * Library and kernel entry points of the simulated driver (cuLibrary*, cuKernel*). Libraries
 * are context-independent: the PTX is parsed once at load and instantiated as a hidden module
 * in each context that uses it (cuKernelGetFunction, cuLibraryGetModule, cuLibraryGetGlobal,
 * launching a CUkernel).
 */
#include "sim/kernel.h"

#include <stdlib.h>
#include <string.h>

struct CUkern_st {
    struct CUlib_st *lib;
    char *name;
    int max_dynamic_smem; /* -1: not set through cuKernelSetAttribute */
};

struct lib_inst {
    CUcontext ctx;
    unsigned long long ctx_id;
    struct CUmod_st *mod;
};

struct CUlib_st {
    void *image; /* private copy of the image loaded (PTX text or fatbin container) */
    size_t size;
    struct tf_ptx_module *pm; /* metadata (kernel names); instances parse their own */
    struct CUkern_st *kernels;
    size_t nkernels;
    uint64_t *managed;  /* per variable of pm: its __managed__ memory (library-wide), or 0 */
    pthread_mutex_t mu; /* guards inst */
    struct lib_inst *inst;
    size_t ninst, cap_inst;
};

/* ---- Libraries and kernels ------------------------------------------------------------- */

static void library_free(struct CUlib_st *lib)
{
    for (size_t i = 0; i < lib->nkernels; i++) {
        tf__handle_del(&lib->kernels[i]);
        free(lib->kernels[i].name);
    }
    free(lib->kernels);
    free(lib->inst);
    size_t nv = lib->pm ? tf_ptx_module_var_count(lib->pm) : 0;
    for (size_t i = 0; lib->managed && i < nv; i++)
        if (lib->managed[i])
            (void)tf__mem_free(lib->managed[i], M_MANAGED);
    free(lib->managed);
    tf_ptx_module_destroy(lib->pm);
    free(lib->image);
    pthread_mutex_destroy(&lib->mu);
    free(lib);
}

/* The library's __managed__ variables exist once for the whole process, in managed memory
 * every context and the host reach (context-independent, as cuLibraryGetManaged needs: the
 * runtime asks for them before any context exists); not charged to a device budget. */
static CUresult managed_vars(struct CUlib_st *lib)
{
    size_t nv = tf_ptx_module_var_count(lib->pm);
    lib->managed = calloc(nv ? nv : 1, sizeof(*lib->managed));
    if (!lib->managed)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < nv; i++) {
        const struct tf_ptx_var *v = tf_ptx_module_var_at(lib->pm, i);
        if (!v->is_managed)
            continue;
        CUresult rc = tf__managed_alloc_global(v->size ? v->size : 1, &lib->managed[i]);
        if (rc)
            return rc;
        if (v->init_len)
            memcpy((void *)(uintptr_t)lib->managed[i], v->init,
                   (size_t)(v->init_len < v->size ? v->init_len : v->size));
    }
    return CUDA_SUCCESS;
}

/* Loads IMAGE (FILE_LEN: see tf__image_ptx): a private copy is kept; its PTX for any device
 * gives the kernel names, each context instantiates the PTX its device runs. */
static CUresult library_load(CUlibrary *library, const void *image, size_t file_len,
                             struct tf__jit_log *log)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!library)
        return CUDA_ERROR_INVALID_VALUE;
    struct CUlib_st *lib = calloc(1, sizeof(*lib));
    if (!lib)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_init(&lib->mu, NULL);
    int version, target;
    struct sim_ptx_text ptx;
    if ((rc = tf__image_copy(image, file_len, &lib->image, &lib->size, log)) ||
        (rc = tf__image_ptx(lib->image, lib->size, 0, &ptx, log)))
        goto fail;
    rc = tf__ptx_load(ptx.text, ptx.len, NULL, &lib->pm, &version, &target, log);
    tf__ptx_text_free(&ptx);
    if (rc) {
        lib->pm = NULL;
        goto fail;
    }
    if ((rc = managed_vars(lib)))
        goto fail;
    lib->nkernels = tf_ptx_module_kernel_count(lib->pm);
    lib->kernels = calloc(lib->nkernels ? lib->nkernels : 1, sizeof(*lib->kernels));
    if (!lib->kernels) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto fail;
    }
    for (size_t i = 0; i < lib->nkernels; i++) {
        struct tf_ptx_kernel_info info;
        tf_ptx_kernel_get_info(tf_ptx_module_kernel_at(lib->pm, i), &info);
        lib->kernels[i].lib = lib;
        lib->kernels[i].max_dynamic_smem = -1;
        lib->kernels[i].name = strdup(info.name);
        if (!lib->kernels[i].name || tf__handle_add(&lib->kernels[i], H_KERNEL) != 0) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
            goto fail;
        }
    }
    if (tf__handle_add(lib, H_LIBRARY) != 0) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto fail;
    }
    *library = lib;
    return CUDA_SUCCESS;
fail:
    library_free(lib);
    return rc;
}

/* cuLibraryLoadData / LoadFromFile after their options are checked. */
static CUresult library_load_opts(CUlibrary *library, const void *image, size_t file_len,
                                  CUjit_option *jitOptions, void **jitOptionsValues,
                                  unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                  void **libraryOptionValues, unsigned int numLibraryOptions)
{
    struct tf__jit_log log;
    CUresult rc = tf__jit_options(numJitOptions, jitOptions, jitOptionsValues, &log);
    if (rc)
        return rc;
    if (numLibraryOptions && (!libraryOptions || !libraryOptionValues))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < numLibraryOptions; i++)
        if ((unsigned)libraryOptions[i] >= CU_LIBRARY_NUM_OPTIONS)
            return CUDA_ERROR_INVALID_VALUE;
    if (!image)
        return CUDA_ERROR_INVALID_VALUE;
    return library_load(library, image, file_len, &log);
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                   void **jitOptionsValues, unsigned int numJitOptions,
                                   CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                   unsigned int numLibraryOptions)
{
    return library_load_opts(library, code, 0, jitOptions, jitOptionsValues, numJitOptions,
                             libraryOptions, libraryOptionValues, numLibraryOptions);
}

CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                       CUjit_option *jitOptions, void **jitOptionsValues,
                                       unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                       void **libraryOptionValues, unsigned int numLibraryOptions)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    char *image;
    size_t len;
    if ((rc = tf__read_image(fileName, &image, &len)))
        return rc;
    rc = library_load_opts(library, image, len, jitOptions, jitOptionsValues, numJitOptions,
                           libraryOptions, libraryOptionValues, numLibraryOptions);
    free(image);
    return rc;
}

/* The module instantiating LIB in CTX, created on first use. */
static CUresult library_instance(struct CUlib_st *lib, CUcontext ctx, struct CUmod_st **out)
{
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&lib->mu);
    for (size_t i = 0; i < lib->ninst; i++) {
        struct lib_inst *in = &lib->inst[i];
        if (in->ctx == ctx && in->ctx_id == ctx->id && tf__handle_is(in->mod, H_MODULE) &&
            in->mod->ctx == ctx) {
            *out = in->mod;
            goto out;
        }
    }
    struct tf_ptx_module *pm;
    int version, target;
    struct sim_ptx_text ptx;
    if ((rc = tf__image_ptx(lib->image, lib->size, tf__device_cc(ctx->dev), &ptx, NULL)))
        goto out;
    rc = tf__ptx_load(ptx.text, ptx.len, ctx->dev, &pm, &version, &target, NULL);
    tf__ptx_text_free(&ptx);
    if (rc)
        goto out;
    struct CUmod_st *m;
    if ((rc = tf__module_create(ctx, pm, version, target, lib, &m)))
        goto out;
    for (size_t i = 0; i < m->nfuncs; i++)
        for (size_t k = 0; k < lib->nkernels; k++)
            if (lib->kernels[k].max_dynamic_smem >= 0 &&
                strcmp(lib->kernels[k].name, m->funcs[i].info.name) == 0)
                m->funcs[i].max_dynamic_smem = lib->kernels[k].max_dynamic_smem;
    size_t slot = lib->ninst;
    for (size_t i = 0; i < lib->ninst; i++)
        if (!tf__handle_is(lib->inst[i].mod, H_MODULE) || lib->inst[i].mod->lib != lib) {
            slot = i; /* reuse the entry of a context that went away */
            break;
        }
    if (slot == lib->cap_inst) {
        size_t ncap = lib->cap_inst ? lib->cap_inst * 2 : 4;
        struct lib_inst *n = realloc(lib->inst, ncap * sizeof(*n));
        if (!n) {
            tf__module_unlink(m);
            tf__module_free(m);
            rc = CUDA_ERROR_OUT_OF_MEMORY;
            goto out;
        }
        lib->inst = n;
        lib->cap_inst = ncap;
    }
    if (slot == lib->ninst)
        lib->ninst++;
    lib->inst[slot] = (struct lib_inst){ctx, ctx->id, m};
    *out = m;
out:
    pthread_mutex_unlock(&lib->mu);
    return rc;
}

static CUresult check_library(CUlibrary lib)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    return tf__handle_is(lib, H_LIBRARY) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
    CUresult rc = check_library(library);
    if (rc)
        return rc;
    tf__handle_del(library);
    pthread_mutex_lock(&library->mu);
    for (size_t i = 0; i < library->ninst; i++) {
        struct CUmod_st *m = library->inst[i].mod;
        if (tf__handle_is(m, H_MODULE) && m->lib == library) {
            (void)tf__ctx_sync(m->ctx);
            tf__module_unlink(m);
            tf__module_free(m);
        }
    }
    library->ninst = 0;
    pthread_mutex_unlock(&library->mu);
    library_free(library);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    CUresult rc = check_library(library);
    if (rc)
        return rc;
    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < library->nkernels; i++)
        if (strcmp(library->kernels[i].name, name) == 0) {
            *pKernel = &library->kernels[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
    CUresult rc = check_library(lib);
    if (rc)
        return rc;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = (unsigned)lib->nkernels;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels,
                                           CUlibrary lib)
{
    CUresult rc = check_library(lib);
    if (rc)
        return rc;
    if (!kernels || numKernels < lib->nkernels)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < lib->nkernels; i++)
        kernels[i] = &lib->kernels[i];
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    CUresult rc = check_library(library);
    if (rc)
        return rc;
    if (!pMod)
        return CUDA_ERROR_INVALID_VALUE;
    CUcontext ctx;
    if ((rc = tf__ctx_current(&ctx, 0)))
        return rc;
    return library_instance(library, ctx, pMod);
}

CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                    const char *name)
{
    CUmodule m;
    CUresult rc = cuLibraryGetModule(&m, library);
    if (rc)
        return rc;
    return cuModuleGetGlobal(dptr, bytes, m, name);
}

uint64_t tf__library_managed(const struct CUlib_st *lib, const char *name)
{
    long i = tf_ptx_module_var_find(lib->pm, name);
    return i < 0 ? 0 : lib->managed[i];
}

/* A __managed__ variable of the library (no context needed: they are library-wide). */
CUresult CUDAAPI cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                     const char *name)
{
    CUresult rc = check_library(library);
    if (rc)
        return rc;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    long i = tf_ptx_module_var_find(library->pm, name);
    if (i < 0 || !library->managed[i])
        return CUDA_ERROR_NOT_FOUND;
    if (dptr)
        *dptr = (CUdeviceptr)library->managed[i];
    if (bytes)
        *bytes = (size_t)tf_ptx_module_var_at(library->pm, (size_t)i)->size;
    return CUDA_SUCCESS;
}

static CUresult check_kernel(CUkernel k)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    return tf__handle_is(k, H_KERNEL) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* The function of kernel K in CTX. */
static CUresult kernel_function(CUkernel k, CUcontext ctx, struct CUfunc_st **out)
{
    struct CUmod_st *m;
    CUresult rc = library_instance(k->lib, ctx, &m);
    if (rc)
        return rc;
    for (size_t i = 0; i < m->nfuncs; i++)
        if (strcmp(m->funcs[i].info.name, k->name) == 0) {
            *out = &m->funcs[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult tf__func_resolve(CUfunction f, CUcontext ctx, struct CUfunc_st **out)
{
    if (tf__handle_is(f, H_FUNC)) {
        if (f->mod->ctx != ctx)
            return CUDA_ERROR_INVALID_HANDLE;
        *out = f;
        return CUDA_SUCCESS;
    }
    if (tf__handle_is((CUkernel)f, H_KERNEL)) /* a CUkernel may be launched directly */
        return kernel_function((CUkernel)f, ctx, out);
    return CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    CUresult rc = check_kernel(kernel);
    if (rc)
        return rc;
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    CUcontext ctx;
    if ((rc = tf__ctx_current(&ctx, 0)))
        return rc;
    return kernel_function(kernel, ctx, pFunc);
}

CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel hfunc)
{
    CUresult rc = check_kernel(hfunc);
    if (rc)
        return rc;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    *name = hfunc->name;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
    CUresult rc = check_kernel(kernel);
    if (rc)
        return rc;
    if (!pLib)
        return CUDA_ERROR_INVALID_VALUE;
    *pLib = kernel->lib;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
                                      size_t *paramSize)
{
    CUresult rc = check_kernel(kernel);
    if (rc)
        return rc;
    const struct tf_ptx_kernel *k = tf_ptx_module_kernel(kernel->lib->pm, kernel->name);
    uint32_t off, size;
    if (!k || paramIndex > UINT32_MAX ||
        tf_ptx_kernel_param(k, (uint32_t)paramIndex, &off, &size) != TF_PTX_OK)
        return CUDA_ERROR_INVALID_VALUE;
    if (paramOffset)
        *paramOffset = off;
    if (paramSize)
        *paramSize = size;
    return CUDA_SUCCESS;
}

/* The context a kernel attribute call for device DEV works in: the current one if it is on
 * DEV, else DEV's primary context (which must be active). */
static CUresult kernel_ctx(CUdevice dev, CUcontext *out)
{
    struct sim_device *d = tf__device(dev);
    if (!d)
        return CUDA_ERROR_INVALID_DEVICE;
    CUcontext cur;
    if (tf__ctx_current(&cur, 0) == CUDA_SUCCESS && cur->dev == d) {
        *out = cur;
        return CUDA_SUCCESS;
    }
    pthread_mutex_lock(&d->mu);
    int active = d->primary && d->primary_refs > 0;
    CUcontext p = d->primary;
    pthread_mutex_unlock(&d->mu);
    if (!active)
        return CUDA_ERROR_INVALID_CONTEXT;
    *out = p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
                                      CUdevice dev)
{
    CUresult rc = check_kernel(kernel);
    if (rc)
        return rc;
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    CUcontext ctx;
    struct CUfunc_st *f;
    if ((rc = kernel_ctx(dev, &ctx)) || (rc = kernel_function(kernel, ctx, &f)))
        return rc;
    return tf__func_attr(f, ctx->dev, attrib, pi);
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                      CUdevice dev)
{
    CUresult rc = check_kernel(kernel);
    if (rc)
        return rc;
    CUcontext ctx;
    struct CUfunc_st *f;
    if ((rc = kernel_ctx(dev, &ctx)) || (rc = kernel_function(kernel, ctx, &f)))
        return rc;
    if ((rc = tf__func_set_attr(f, ctx->dev, attrib, val)))
        return rc;
    if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        pthread_mutex_lock(&kernel->lib->mu); /* library_instance reads it under the lock */
        kernel->max_dynamic_smem = val;       /* for contexts instantiated later */
        pthread_mutex_unlock(&kernel->lib->mu);
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
{
    CUresult rc = check_kernel(kernel);
    if (rc)
        return rc;
    if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    CUcontext ctx;
    struct CUfunc_st *f;
    if ((rc = kernel_ctx(dev, &ctx)) || (rc = kernel_function(kernel, ctx, &f)))
        return rc;
    f->cache_config = config; /* a preference: the simulated SM has no L1/shared split */
    return CUDA_SUCCESS;
}
