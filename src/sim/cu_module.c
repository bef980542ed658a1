/* SPDX-License-Identifier: Apache-2.0
 *
 * Module and function entry points of the simulated driver: the PTX of an image (PTX text, or
 * the entry of a fatbin the device can JIT: cu_image.c) is handed to the PTX engine
 * (ptx/ptx.h) once per load; module variables (.global / .const) get device memory in the
 * loading context and are bound before any launch; functions carry the attributes a launch
 * checks (max dynamic shared memory opt-in, ...).
 *
 * Cubins (ELF) and fatbins without suitable PTX cannot run on the simulator:
 * CUDA_ERROR_NO_BINARY_FOR_GPU. PTX whose .target is newer than the device fails with
 * CUDA_ERROR_INVALID_PTX, a .version newer than CUDA 13's PTX ISA 9.0 with
 * CUDA_ERROR_UNSUPPORTED_PTX_VERSION, and anything the engine cannot execute with
 * CUDA_ERROR_INVALID_PTX and the engine's message ("line N: unsupported instruction ...") in
 * the JIT error log and the driver log.
 */
#include "sim/drv.h"
#include "sim/kernel.h"

#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PTX_ISA_MAX 90 /* PTX ISA 9.0, CUDA 13.0 */
#define MAX_IMAGE (64u << 20)

/* ---- PTX checks ------------------------------------------------------------------------ */

/* Reads ".version X.Y" and ".target sm_NN" from the PTX header. */
static void ptx_header(const char *t, size_t len, int *version, int *target)
{
    *version = 0;
    *target = 0;
    const char *end = t + len;
    for (const char *p = t; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        while (p < le && (*p == ' ' || *p == '\t'))
            p++;
        char line[128];
        size_t n = (size_t)(le - p) < sizeof(line) - 1 ? (size_t)(le - p) : sizeof(line) - 1;
        memcpy(line, p, n);
        line[n] = 0;
        int a, b;
        if (!*version && sscanf(line, ".version %d.%d", &a, &b) == 2)
            *version = a * 10 + b;
        if (!*target && sscanf(line, ".target sm_%d", &a) == 1)
            *target = a;
        if (*version && *target)
            return;
        p = nl ? nl + 1 : end;
    }
}

void tf__jit_log_write(struct tf__jit_log *log, const char *msg)
{
    if (!log || !log->err || !log->errcap)
        return;
    snprintf(log->err, log->errcap, "%s", msg);
    if (log->err_size_slot)
        *log->err_size_slot = (void *)(uintptr_t)(strlen(log->err) + 1);
}

CUresult tf__jit_options(unsigned n, const CUjit_option *opt, void **val, struct tf__jit_log *log)
{
    memset(log, 0, sizeof(*log));
    if (n && (!opt || !val))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < n; i++) {
        if ((unsigned)opt[i] >= CU_JIT_NUM_OPTIONS)
            return CUDA_ERROR_INVALID_VALUE;
        if (opt[i] == CU_JIT_ERROR_LOG_BUFFER)
            log->err = val[i];
        else if (opt[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) {
            log->errcap = (size_t)(uintptr_t)val[i];
            log->err_size_slot = &val[i];
        }
        /* Other options (optimisation level, target, info log, ...) do not change how the
         * simulator runs PTX. */
    }
    return CUDA_SUCCESS;
}

/* Parses and checks PTX IMAGE for device D (NULL: no device check). */
CUresult tf__ptx_load(const void *image, size_t len, struct sim_device *d,
                      struct tf_ptx_module **out, int *version, int *target,
                      struct tf__jit_log *log)
{
    char msg[512];
    ptx_header(image, len, version, target);
    if (*version > PTX_ISA_MAX) {
        snprintf(msg, sizeof(msg), "PTX ISA %d.%d is newer than this driver's %d.%d", *version / 10,
                 *version % 10, PTX_ISA_MAX / 10, PTX_ISA_MAX % 10);
        tf__jit_log_write(log, msg);
        tf_log(TF_LOG_ERROR, "sim", "module load: %s", msg);
        return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    }
    if (d) {
        int cc = (int)tf__device_cc(d);
        if (*target > cc) {
            snprintf(msg, sizeof(msg),
                     "ptxas fatal: SM version specified by .target (sm_%d) is higher than the "
                     "device's (sm_%d)",
                     *target, cc);
            tf__jit_log_write(log, msg);
            tf_log(TF_LOG_ERROR, "sim", "module load: %s", msg);
            return CUDA_ERROR_INVALID_PTX;
        }
    }
    enum tf_ptx_status st = tf_ptx_module_load(image, len, out, msg, sizeof(msg));
    if (st == TF_PTX_OK)
        return CUDA_SUCCESS;
    tf__jit_log_write(log, msg);
    tf_log(TF_LOG_ERROR, "sim", "module load: %s", msg);
    return st == TF_PTX_NO_MEMORY ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_PTX;
}

/* ---- Modules --------------------------------------------------------------------------- */

unsigned tf__device_cc(const struct sim_device *d)
{
    return (unsigned)(d->cfg->hw->cc_major * 10 + d->cfg->hw->cc_minor);
}

void tf__module_free(struct CUmod_st *m)
{
    for (size_t i = 0; i < m->nfuncs; i++)
        tf__handle_del(&m->funcs[i]);
    for (size_t i = 0; i < m->nvars; i++)
        if (m->vars[i])
            tf__mem_free_modvar(m->vars[i]);
    tf_ptx_module_destroy(m->pm);
    free(m->funcs);
    free(m->vars);
    free(m);
}

/* Builds a module of CTX from parsed PM (takes ownership of PM). */
CUresult tf__module_create(CUcontext ctx, struct tf_ptx_module *pm, int version, int target,
                           struct CUlib_st *lib, struct CUmod_st **out)
{
    struct CUmod_st *m = calloc(1, sizeof(*m));
    if (!m) {
        tf_ptx_module_destroy(pm);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->ctx = ctx;
    m->lib = lib;
    m->pm = pm;
    m->ptx_version = version;
    m->target_sm = target;
    m->nvars = tf_ptx_module_var_count(pm);
    m->nfuncs = tf_ptx_module_kernel_count(pm);
    m->vars = calloc(m->nvars ? m->nvars : 1, sizeof(*m->vars));
    m->funcs = calloc(m->nfuncs ? m->nfuncs : 1, sizeof(*m->funcs));
    CUresult rc = CUDA_SUCCESS;
    if (!m->vars || !m->funcs) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto fail;
    }
    for (size_t i = 0; i < m->nvars; i++) {
        const struct tf_ptx_var *v = tf_ptx_module_var_at(pm, i);
        /* (tf__module_free leaves the library's alone: they are not M_MODVAR) */
        uint64_t addr = lib && v->is_managed ? tf__library_managed(lib, v->name) : 0;
        if (!addr) {
            if ((rc = tf__mem_alloc(ctx, M_MODVAR, v->size ? v->size : 1, 0, v->is_const, &addr)))
                goto fail;
            if (v->init_len)
                memcpy((void *)(uintptr_t)addr, v->init,
                       (size_t)(v->init_len < v->size ? v->init_len : v->size));
        }
        m->vars[i] = addr;
        tf_ptx_module_var_bind(pm, i, addr);
    }
    for (size_t i = 0; i < m->nfuncs; i++) {
        struct CUfunc_st *f = &m->funcs[i];
        f->mod = m;
        f->k = tf_ptx_module_kernel_at(pm, i);
        tf_ptx_kernel_get_info(f->k, &f->info);
        f->max_dynamic_smem = (int)TF_PTX_MAX_SHARED_PER_BLOCK - (int)f->info.static_shared;
        if (f->max_dynamic_smem < 0)
            f->max_dynamic_smem = 0;
        f->carveout = -1;
        if (tf__handle_add(f, H_FUNC) != 0) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
            goto fail;
        }
    }
    if (tf__handle_add(m, H_MODULE) != 0) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto fail;
    }
    pthread_mutex_lock(&ctx->mu);
    m->next = ctx->modules;
    ctx->modules = m;
    pthread_mutex_unlock(&ctx->mu);
    *out = m;
    return CUDA_SUCCESS;
fail:
    tf__module_free(m);
    return rc;
}

/* Loads IMAGE (FILE_LEN: see tf__image_ptx) into the current context. */
static CUresult module_load(CUmodule *module, const void *image, size_t file_len,
                            struct tf__jit_log *log)
{
    CUcontext ctx;
    CUresult rc = tf__ctx_current(&ctx, 0);
    if (rc)
        return rc;
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_ptx_text ptx;
    if ((rc = tf__image_ptx(image, file_len, tf__device_cc(ctx->dev), &ptx, log)))
        return rc;
    struct tf_ptx_module *pm;
    int version, target;
    rc = tf__ptx_load(ptx.text, ptx.len, ctx->dev, &pm, &version, &target, log);
    tf__ptx_text_free(&ptx);
    if (rc)
        return rc;
    return tf__module_create(ctx, pm, version, target, NULL, module);
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
    if (!image)
        return CUDA_ERROR_INVALID_VALUE;
    return module_load(module, image, 0, NULL);
}

CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    if (!fatCubin)
        return CUDA_ERROR_INVALID_VALUE;
    return module_load(module, fatCubin, 0, NULL);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                    CUjit_option *options, void **optionValues)
{
    struct tf__jit_log log;
    CUresult rc = tf__jit_options(numOptions, options, optionValues, &log);
    if (rc)
        return rc;
    if (!image)
        return CUDA_ERROR_INVALID_VALUE;
    return module_load(module, image, 0, &log);
}

/* Reads file FNAME (NUL-terminated copy in *OUT). */
CUresult tf__read_image(const char *fname, char **out, size_t *len)
{
    if (!fname)
        return CUDA_ERROR_INVALID_VALUE;
    int fd = open(fname, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? CUDA_ERROR_FILE_NOT_FOUND : CUDA_ERROR_OPERATING_SYSTEM;
    struct stat st;
    CUresult rc = CUDA_SUCCESS;
    char *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = CUDA_ERROR_FILE_NOT_FOUND;
        goto out;
    }
    if ((uint64_t)st.st_size > MAX_IMAGE) {
        rc = CUDA_ERROR_INVALID_IMAGE;
        goto out;
    }
    buf = malloc((size_t)st.st_size + 1);
    if (!buf) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto out;
    }
    size_t n = 0;
    while (n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = CUDA_ERROR_OPERATING_SYSTEM;
            goto out;
        }
        n += (size_t)r;
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    buf = NULL;
out:
    free(buf);
    close(fd);
    return rc;
}

CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
    CUcontext ctx;
    CUresult rc = tf__ctx_current(&ctx, 0);
    if (rc)
        return rc;
    if (!module)
        return CUDA_ERROR_INVALID_VALUE;
    char *text;
    size_t len;
    if ((rc = tf__read_image(fname, &text, &len)))
        return rc;
    rc = module_load(module, text, len, NULL);
    free(text);
    return rc;
}

void tf__module_unlink(struct CUmod_st *m)
{
    CUcontext ctx = m->ctx;
    pthread_mutex_lock(&ctx->mu);
    for (struct CUmod_st **pp = &ctx->modules; *pp; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            break;
        }
    pthread_mutex_unlock(&ctx->mu);
    tf__handle_del(m);
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!tf__handle_is(hmod, H_MODULE) || hmod->lib)
        return CUDA_ERROR_INVALID_HANDLE;
    (void)tf__ctx_sync(hmod->ctx); /* no queued launch may still use it */
    tf__module_unlink(hmod);
    tf__module_free(hmod);
    return CUDA_SUCCESS;
}

void tf__modules_free_ctx(CUcontext ctx)
{
    for (;;) {
        pthread_mutex_lock(&ctx->mu);
        struct CUmod_st *m = ctx->modules;
        pthread_mutex_unlock(&ctx->mu);
        if (!m)
            return;
        tf__module_unlink(m); /* a library instance: the library finds it gone by handle */
        tf__module_free(m);
    }
}

static CUresult check_module(CUmodule hmod)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!tf__handle_is(hmod, H_MODULE))
        return CUDA_ERROR_INVALID_HANDLE;
    int sticky = atomic_load(&hmod->ctx->sticky);
    return sticky ? (CUresult)sticky : CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    CUresult rc = check_module(hmod);
    if (rc)
        return rc;
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < hmod->nfuncs; i++)
        if (strcmp(hmod->funcs[i].info.name, name) == 0) {
            *hfunc = &hmod->funcs[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int *count, CUmodule mod)
{
    CUresult rc = check_module(mod);
    if (rc)
        return rc;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = (unsigned)mod->nfuncs;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions,
                                            CUmodule mod)
{
    CUresult rc = check_module(mod);
    if (rc)
        return rc;
    if (!functions || numFunctions < mod->nfuncs)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < mod->nfuncs; i++)
        functions[i] = &mod->funcs[i];
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                   const char *name)
{
    CUresult rc = check_module(hmod);
    if (rc)
        return rc;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    long i = tf_ptx_module_var_find(hmod->pm, name);
    if (i < 0)
        return CUDA_ERROR_NOT_FOUND;
    if (dptr)
        *dptr = (CUdeviceptr)hmod->vars[i];
    if (bytes)
        *bytes = (size_t)tf_ptx_module_var_at(hmod->pm, (size_t)i)->size;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    *mode = CU_MODULE_EAGER_LOADING;
    return CUDA_SUCCESS;
}

/* ---- Functions ------------------------------------------------------------------------- */

static CUresult check_func(CUfunction f)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    return tf__handle_is(f, H_FUNC) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static int optin_limit(const struct sim_device *d)
{
    int v = d->cfg->hw->smem_optin;
    return v > (int)TF_PTX_MAX_SHARED_OPTIN ? (int)TF_PTX_MAX_SHARED_OPTIN : v;
}

/* Attribute A of F (a function of a context on device D). */
CUresult tf__func_attr(const struct CUfunc_st *f, const struct sim_device *d,
                       CUfunction_attribute a, int *v)
{
    const struct tf_ptx_kernel_info *in = &f->info;
    const struct tf_sim_hwspec *hw = d->cfg->hw;
    int maxt = TF_PTX_MAX_THREADS_PER_BLOCK;
    if (in->max_threads && (int)in->max_threads < maxt)
        maxt = (int)in->max_threads;
    if (in->reqntid[0]) {
        int r = (int)(in->reqntid[0] * (in->reqntid[1] ? in->reqntid[1] : 1) *
                      (in->reqntid[2] ? in->reqntid[2] : 1));
        if (r < maxt)
            maxt = r;
    }
    size_t const_bytes = 0;
    for (size_t i = 0; i < tf_ptx_module_var_count(f->mod->pm); i++) {
        const struct tf_ptx_var *var = tf_ptx_module_var_at(f->mod->pm, i);
        if (var->is_const)
            const_bytes += (size_t)var->size;
    }
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *v = maxt;
        break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
        *v = (int)in->static_shared;
        break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
        *v = (int)const_bytes;
        break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
        *v = (int)in->local_bytes;
        break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
        *v = in->num_regs > 255 ? 255 : (int)in->num_regs;
        break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
        *v = f->mod->ptx_version;
        break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
        *v = hw->cc_major * 10 + hw->cc_minor;
        break;
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
        *v = 0;
        break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        *v = f->max_dynamic_smem;
        break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        *v = f->carveout;
        break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
        *v = 0;
        break;
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        *v = 0;
        break;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
        *v = 0;
        break;
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        *v = 0;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult tf__func_set_attr(struct CUfunc_st *f, const struct sim_device *d, CUfunction_attribute a,
                           int v)
{
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if (v < 0 || v + (int)f->info.static_shared > optin_limit(d))
            return CUDA_ERROR_INVALID_VALUE;
        f->max_dynamic_smem = v;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        if (v < -1 || v > 100)
            return CUDA_ERROR_INVALID_VALUE;
        f->carveout = v;
        return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        return v == 0 ? CUDA_SUCCESS : CUDA_ERROR_NOT_SUPPORTED; /* no thread-block clusters */
    default:
        return CUDA_ERROR_INVALID_VALUE; /* read-only attributes */
    }
}

CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    CUresult rc = check_func(hfunc);
    if (rc)
        return rc;
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    return tf__func_attr(hfunc, hfunc->mod->ctx->dev, attrib, pi);
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    CUresult rc = check_func(hfunc);
    if (rc)
        return rc;
    return tf__func_set_attr(hfunc, hfunc->mod->ctx->dev, attrib, value);
}

CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    CUresult rc = check_func(hfunc);
    if (rc)
        return rc;
    if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    hfunc->cache_config = config;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                                    size_t *paramSize)
{
    CUresult rc = check_func(func);
    if (rc)
        return rc;
    uint32_t off, size;
    if (paramIndex > UINT32_MAX ||
        tf_ptx_kernel_param(func->k, (uint32_t)paramIndex, &off, &size) != TF_PTX_OK)
        return CUDA_ERROR_INVALID_VALUE;
    if (paramOffset)
        *paramOffset = off;
    if (paramSize)
        *paramSize = size;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc)
{
    CUresult rc = check_func(hfunc);
    if (rc)
        return rc;
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    *name = hfunc->info.name;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
    CUresult rc = check_func(hfunc);
    if (rc)
        return rc;
    if (!hmod)
        return CUDA_ERROR_INVALID_VALUE;
    *hmod = hfunc->mod;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction function)
{
    CUresult rc = check_func(function);
    if (rc)
        return rc;
    if (!state)
        return CUDA_ERROR_INVALID_VALUE;
    *state = CU_FUNCTION_LOADING_STATE_LOADED; /* eager loading */
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncLoad(CUfunction function)
{
    return check_func(function);
}
