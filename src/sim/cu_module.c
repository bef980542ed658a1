/* SPDX-License-Identifier: Apache-2.0
 *
 * Module, function, library and kernel entry points of the simulated driver: PTX text is
 * handed to the PTX engine (ptx/ptx.h) once per load; module variables (.global / .const)
 * get device memory in the loading context and are bound before any launch; functions carry
 * the attributes a launch checks (max dynamic shared memory opt-in, ...).
 *
 * Images other than PTX text (cubin ELF, fatbin) cannot run on the simulator:
 * CUDA_ERROR_NO_BINARY_FOR_GPU. PTX whose .target is newer than the device fails with
 * CUDA_ERROR_INVALID_PTX, a .version newer than CUDA 13's PTX ISA 9.0 with
 * CUDA_ERROR_UNSUPPORTED_PTX_VERSION, and anything the engine cannot execute with
 * CUDA_ERROR_INVALID_PTX and the engine's message ("line N: unsupported instruction ...") in
 * the JIT error log and the driver log.
 *
 * Libraries (cuLibrary*) are context-independent: the PTX is parsed once at load and
 * instantiated as a hidden module in each context that uses it (cuKernelGetFunction,
 * cuLibraryGetModule, cuLibraryGetGlobal, launching a CUkernel).
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

struct CUlib_st;

struct CUmod_st {
    CUcontext ctx;
    struct CUmod_st *next; /* ctx->modules, guarded by ctx->mu */
    struct tf_ptx_module *pm;
    struct CUfunc_st *funcs;
    size_t nfuncs;
    uint64_t *vars; /* device address of each module variable */
    size_t nvars;
    int ptx_version; /* 10 * major + minor */
    int target_sm;
    struct CUlib_st *lib; /* instance of this library, or NULL */
};

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
    char *text;
    size_t len;
    struct tf_ptx_module *pm; /* metadata (kernel names); instances parse their own */
    struct CUkern_st *kernels;
    size_t nkernels;
    pthread_mutex_t mu; /* guards inst */
    struct lib_inst *inst;
    size_t ninst, cap_inst;
};

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

/* Where the JIT log options of cuModuleLoadDataEx / cuLibraryLoadData point. */
struct jit_log {
    char *err;
    size_t errcap;
    void **err_size_slot; /* optionValues entry to update with the bytes written */
};

static void jit_log_write(struct jit_log *log, const char *msg)
{
    if (!log || !log->err || !log->errcap)
        return;
    snprintf(log->err, log->errcap, "%s", msg);
    if (log->err_size_slot)
        *log->err_size_slot = (void *)(uintptr_t)(strlen(log->err) + 1);
}

static CUresult parse_jit_options(unsigned n, const CUjit_option *opt, void **val,
                                  struct jit_log *log)
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
static CUresult load_ptx(const void *image, size_t len, struct sim_device *d,
                         struct tf_ptx_module **out, int *version, int *target, struct jit_log *log)
{
    const unsigned char *b = image;
    if (len >= 4 && b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') {
        jit_log_write(log, "cubin (ELF) images cannot run on the simulated GPU; load PTX");
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    uint32_t magic = len >= 4 ? (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                                    (uint32_t)b[3] << 24
                              : 0;
    if (magic == 0x466243b1u || magic == 0xba55ed50u) {
        jit_log_write(log, "fatbin images cannot run on the simulated GPU; load PTX");
        return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    char msg[512];
    ptx_header(image, len, version, target);
    if (*version > PTX_ISA_MAX) {
        snprintf(msg, sizeof(msg), "PTX ISA %d.%d is newer than this driver's %d.%d", *version / 10,
                 *version % 10, PTX_ISA_MAX / 10, PTX_ISA_MAX % 10);
        jit_log_write(log, msg);
        tf_log(TF_LOG_ERROR, "sim", "module load: %s", msg);
        return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    }
    if (d) {
        int cc = d->cfg->hw->cc_major * 10 + d->cfg->hw->cc_minor;
        if (*target > cc) {
            snprintf(msg, sizeof(msg),
                     "ptxas fatal: SM version specified by .target (sm_%d) is higher than the "
                     "device's (sm_%d)",
                     *target, cc);
            jit_log_write(log, msg);
            tf_log(TF_LOG_ERROR, "sim", "module load: %s", msg);
            return CUDA_ERROR_INVALID_PTX;
        }
    }
    enum tf_ptx_status st = tf_ptx_module_load(image, len, out, msg, sizeof(msg));
    if (st == TF_PTX_OK)
        return CUDA_SUCCESS;
    jit_log_write(log, msg);
    tf_log(TF_LOG_ERROR, "sim", "module load: %s", msg);
    return st == TF_PTX_NO_MEMORY ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_PTX;
}

/* ---- Modules --------------------------------------------------------------------------- */

static void module_free(struct CUmod_st *m)
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
static CUresult module_create(CUcontext ctx, struct tf_ptx_module *pm, int version, int target,
                              struct CUmod_st **out)
{
    struct CUmod_st *m = calloc(1, sizeof(*m));
    if (!m) {
        tf_ptx_module_destroy(pm);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->ctx = ctx;
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
        uint64_t addr;
        if ((rc = tf__mem_alloc(ctx, M_MODVAR, v->size ? v->size : 1, 0, v->is_const, &addr)))
            goto fail;
        m->vars[i] = addr;
        if (v->init_len)
            memcpy((void *)(uintptr_t)addr, v->init,
                   (size_t)(v->init_len < v->size ? v->init_len : v->size));
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
    module_free(m);
    return rc;
}

static CUresult module_load(CUmodule *module, const void *image, size_t len, struct jit_log *log)
{
    CUcontext ctx;
    CUresult rc = tf__ctx_current(&ctx, 0);
    if (rc)
        return rc;
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    struct tf_ptx_module *pm;
    int version, target;
    if ((rc = load_ptx(image, len, ctx->dev, &pm, &version, &target, log)))
        return rc;
    return module_create(ctx, pm, version, target, module);
}

/* Length of an image: PTX text is NUL-terminated; binary images are not supported anyway. */
static size_t image_len(const void *image)
{
    return strnlen(image, MAX_IMAGE);
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
    if (!image)
        return CUDA_ERROR_INVALID_VALUE;
    return module_load(module, image, image_len(image), NULL);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                    CUjit_option *options, void **optionValues)
{
    struct jit_log log;
    CUresult rc = parse_jit_options(numOptions, options, optionValues, &log);
    if (rc)
        return rc;
    if (!image)
        return CUDA_ERROR_INVALID_VALUE;
    return module_load(module, image, image_len(image), &log);
}

/* Reads file FNAME (NUL-terminated copy in *OUT). */
static CUresult read_image(const char *fname, char **out, size_t *len)
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
    if ((rc = read_image(fname, &text, &len)))
        return rc;
    rc = module_load(module, text, len, NULL);
    free(text);
    return rc;
}

static void module_unlink(struct CUmod_st *m)
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
    module_unlink(hmod);
    module_free(hmod);
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
        module_unlink(m); /* a library instance: the library finds it gone by handle */
        module_free(m);
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
static CUresult func_attr(const struct CUfunc_st *f, const struct sim_device *d,
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

static CUresult func_set_attr(struct CUfunc_st *f, const struct sim_device *d,
                              CUfunction_attribute a, int v)
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
    return func_attr(hfunc, hfunc->mod->ctx->dev, attrib, pi);
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    CUresult rc = check_func(hfunc);
    if (rc)
        return rc;
    return func_set_attr(hfunc, hfunc->mod->ctx->dev, attrib, value);
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

/* ---- Libraries and kernels ------------------------------------------------------------- */

static void library_free(struct CUlib_st *lib)
{
    for (size_t i = 0; i < lib->nkernels; i++) {
        tf__handle_del(&lib->kernels[i]);
        free(lib->kernels[i].name);
    }
    free(lib->kernels);
    free(lib->inst);
    tf_ptx_module_destroy(lib->pm);
    free(lib->text);
    pthread_mutex_destroy(&lib->mu);
    free(lib);
}

static CUresult library_load(CUlibrary *library, const char *text, size_t len, struct jit_log *log)
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
    if ((rc = load_ptx(text, len, NULL, &lib->pm, &version, &target, log))) {
        lib->pm = NULL;
        goto fail;
    }
    lib->text = malloc(len + 1);
    lib->nkernels = tf_ptx_module_kernel_count(lib->pm);
    lib->kernels = calloc(lib->nkernels ? lib->nkernels : 1, sizeof(*lib->kernels));
    if (!lib->text || !lib->kernels) {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
        goto fail;
    }
    memcpy(lib->text, text, len);
    lib->text[len] = 0;
    lib->len = len;
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

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                   void **jitOptionsValues, unsigned int numJitOptions,
                                   CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                   unsigned int numLibraryOptions)
{
    struct jit_log log;
    CUresult rc = parse_jit_options(numJitOptions, jitOptions, jitOptionsValues, &log);
    if (rc)
        return rc;
    if (numLibraryOptions && (!libraryOptions || !libraryOptionValues))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < numLibraryOptions; i++)
        if ((unsigned)libraryOptions[i] >= CU_LIBRARY_NUM_OPTIONS)
            return CUDA_ERROR_INVALID_VALUE;
    if (!code)
        return CUDA_ERROR_INVALID_VALUE;
    return library_load(library, code, image_len(code), &log);
}

CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                       CUjit_option *jitOptions, void **jitOptionsValues,
                                       unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                       void **libraryOptionValues, unsigned int numLibraryOptions)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    char *text;
    size_t len;
    if ((rc = read_image(fileName, &text, &len)))
        return rc;
    rc = cuLibraryLoadData(library, text, jitOptions, jitOptionsValues, numJitOptions,
                           libraryOptions, libraryOptionValues, numLibraryOptions);
    free(text);
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
    if ((rc = load_ptx(lib->text, lib->len, ctx->dev, &pm, &version, &target, NULL)))
        goto out;
    struct CUmod_st *m;
    if ((rc = module_create(ctx, pm, version, target, &m)))
        goto out;
    m->lib = lib;
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
            module_unlink(m);
            module_free(m);
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
            module_unlink(m);
            module_free(m);
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
    return func_attr(f, ctx->dev, attrib, pi);
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
    if ((rc = func_set_attr(f, ctx->dev, attrib, val)))
        return rc;
    if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        pthread_mutex_lock(&kernel->lib->mu); /* library_instance reads it under the lock */
        kernel->max_dynamic_smem = val;       /* for contexts instantiated later */
        pthread_mutex_unlock(&kernel->lib->mu);
    }
    return CUDA_SUCCESS;
}
