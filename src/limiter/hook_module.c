/* SPDX-License-Identifier: Apache-2.0
 *
 * Module memory hooks: the device memory of a loaded module's variables (__device__ and
 * __constant__, sized from the image by src/fatbin/image.h) counts against the workload's
 * VRAM limit like an allocation of that size, and a load that would exceed the limit fails
 * with CUDA_ERROR_OUT_OF_MEMORY before the driver is asked.
 *
 * A module (cuModuleLoad*) belongs to the context current at its load: charged then, given
 * back at cuModuleUnload or when the context goes. A library (cuLibraryLoad*, what the CUDA
 * runtime registers every translation unit's fatbin with) is context-independent and the
 * driver instantiates it in each context that uses it: its size is remembered at load and
 * charged once per context, at the first cuLibraryGetKernel / GetModule / GetGlobal or
 * cuKernelGetFunction made with that context current (the runtime makes one before its first
 * launch or symbol access); given back at cuLibraryUnload or when the context goes.
 *
 * Charges live in one mutex-guarded list (module loads are rare; launches never look at it).
 */
#include "limiter/pass.h"

#include "common/dynbuf.h"
#include "common/log.h"
#include "fatbin/image.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct charge {
    uint64_t handle; /* CUmodule or CUlibrary */
    uint64_t ctx;
    int idx; /* region device index */
    uint64_t bytes;
};

struct libsize {
    uint64_t lib;
    uint64_t bytes;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct charge *charges; /* guarded by mu */
static size_t ncharges, cap_charges;
static struct libsize *libs; /* guarded by mu */
static size_t nlibs, cap_libs;
static _Atomic(int) size_logged;

/* Module-variable bytes of IMAGE (LEN: 0 = by pointer); 0 when it cannot be sized. */
static uint64_t image_bytes(const void *image, size_t len)
{
    uint64_t bytes = 0;
    char err[256] = "";
    if (!image || tf_image_vars_bytes(image, len, &bytes, err, sizeof(err)) != 0) {
        int expect = 0;
        if (atomic_compare_exchange_strong(&size_logged, &expect, 1))
            tf_log(TF_LOG_WARN, TF_LIM_SUBSYS,
                   "module image not understood (%s): its variables are not counted", err);
        return 0;
    }
    return bytes;
}

/* The bytes of file FNAME's image; 0 when unreadable (the driver will say why). */
static uint64_t file_bytes(const char *fname)
{
    uint64_t bytes = 0;
    int fd = fname ? open(fname, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0)
        return 0;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        (uint64_t)st.st_size > TF_IMAGE_MAX || !(buf = malloc((size_t)st.st_size + 1)))
        goto out;
    size_t n = 0;
    while (n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            goto out;
        n += (size_t)r;
    }
    buf[n] = 0;
    bytes = image_bytes(buf, n);
out:
    free(buf);
    close(fd);
    return bytes;
}

static uint64_t cur_ctx(void)
{
    CUcontext c = NULL;
    CUresult rc;
    TF_CALL(rc, cuCtxGetCurrent, &c);
    return rc == CUDA_SUCCESS ? (uint64_t)(uintptr_t)c : 0;
}

/* Records a charge; on ENOMEM it is given back at once (never counted twice, never leaked). */
static void record(uint64_t handle, uint64_t ctx, int idx, uint64_t bytes)
{
    pthread_mutex_lock(&mu);
    struct charge *c = tf_grow(charges, &cap_charges, ncharges + 1, sizeof(*c), 16);
    bool ok = c != NULL;
    if (ok) {
        charges = c;
        charges[ncharges++] = (struct charge){handle, ctx, idx, bytes};
    }
    pthread_mutex_unlock(&mu);
    if (!ok)
        tf__unreserve(idx, bytes);
}

/* Gives back every charge matching HANDLE (0: any) and CTX (0: any). */
static void release(uint64_t handle, uint64_t ctx)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < ncharges;) {
        struct charge *c = &charges[i];
        if ((!handle || c->handle == handle) && (!ctx || c->ctx == ctx)) {
            tf__unreserve(c->idx, c->bytes);
            *c = charges[--ncharges];
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&mu);
}

void tf__modules_sweep_ctx(uint64_t ctx)
{
    if (ctx)
        release(0, ctx);
}

/* ---- modules ------------------------------------------------------------------------------ */

/* Reserves BYTES for a module about to be loaded in the current context; false: over the
 * limit (*IDX, *CTX: where it was reserved). */
static bool module_reserve(uint64_t bytes, int *idx, uint64_t *ctx)
{
    *ctx = cur_ctx();
    *idx = bytes && *ctx ? tf__cur_idx() : -1;
    return tf__reserve(*idx, bytes);
}

static void module_done(CUresult rc, CUmodule *module, uint64_t bytes, int idx, uint64_t ctx)
{
    if (idx < 0)
        return;
    if (rc == CUDA_SUCCESS && module)
        record((uint64_t)(uintptr_t)*module, ctx, idx, bytes);
    else
        tf__unreserve(idx, bytes);
}

#define MODULE_LOAD(name, bytes_expr, module, ...)                                                 \
    TF_PASS_IF_NESTED(name, __VA_ARGS__);                                                          \
    uint64_t bytes = tf__L.r ? (bytes_expr) : 0, ctx;                                              \
    int idx;                                                                                       \
    if (!module_reserve(bytes, &idx, &ctx))                                                        \
        return CUDA_ERROR_OUT_OF_MEMORY;                                                           \
    CUresult rc;                                                                                   \
    TF_CALL(rc, name, __VA_ARGS__);                                                                \
    module_done(rc, module, bytes, idx, ctx);                                                      \
    return rc

CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
    MODULE_LOAD(cuModuleLoad, file_bytes(fname), module, module, fname);
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
    MODULE_LOAD(cuModuleLoadData, image_bytes(image, 0), module, module, image);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                    CUjit_option *options, void **optionValues)
{
    MODULE_LOAD(cuModuleLoadDataEx, image_bytes(image, 0), module, module, image, numOptions,
                options, optionValues);
}

CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    MODULE_LOAD(cuModuleLoadFatBinary, image_bytes(fatCubin, 0), module, module, fatCubin);
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
    TF_PASS_IF_NESTED(cuModuleUnload, hmod);
    CUresult rc;
    TF_CALL(rc, cuModuleUnload, hmod);
    if (rc == CUDA_SUCCESS && hmod)
        release((uint64_t)(uintptr_t)hmod, 0);
    return rc;
}

/* ---- libraries ---------------------------------------------------------------------------- */

static void library_loaded(CUresult rc, CUlibrary *library, uint64_t bytes)
{
    if (rc != CUDA_SUCCESS || !library || !bytes)
        return;
    pthread_mutex_lock(&mu);
    struct libsize *l = tf_grow(libs, &cap_libs, nlibs + 1, sizeof(*l), 16);
    if (l) {
        libs = l;
        libs[nlibs++] = (struct libsize){(uint64_t)(uintptr_t)*library, bytes};
    }
    pthread_mutex_unlock(&mu);
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                   void **jitOptionsValues, unsigned int numJitOptions,
                                   CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                   unsigned int numLibraryOptions)
{
    TF_PASS_IF_NESTED(cuLibraryLoadData, library, code, jitOptions, jitOptionsValues, numJitOptions,
                      libraryOptions, libraryOptionValues, numLibraryOptions);
    uint64_t bytes = tf__L.r ? image_bytes(code, 0) : 0;
    CUresult rc;
    TF_CALL(rc, cuLibraryLoadData, library, code, jitOptions, jitOptionsValues, numJitOptions,
            libraryOptions, libraryOptionValues, numLibraryOptions);
    library_loaded(rc, library, bytes);
    return rc;
}

CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                       CUjit_option *jitOptions, void **jitOptionsValues,
                                       unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                       void **libraryOptionValues, unsigned int numLibraryOptions)
{
    TF_PASS_IF_NESTED(cuLibraryLoadFromFile, library, fileName, jitOptions, jitOptionsValues,
                      numJitOptions, libraryOptions, libraryOptionValues, numLibraryOptions);
    uint64_t bytes = tf__L.r ? file_bytes(fileName) : 0;
    CUresult rc;
    TF_CALL(rc, cuLibraryLoadFromFile, library, fileName, jitOptions, jitOptionsValues,
            numJitOptions, libraryOptions, libraryOptionValues, numLibraryOptions);
    library_loaded(rc, library, bytes);
    return rc;
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
    TF_PASS_IF_NESTED(cuLibraryUnload, library);
    CUresult rc;
    TF_CALL(rc, cuLibraryUnload, library);
    if (rc != CUDA_SUCCESS || !library)
        return rc;
    uint64_t lib = (uint64_t)(uintptr_t)library;
    release(lib, 0);
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nlibs; i++)
        if (libs[i].lib == lib) {
            libs[i] = libs[--nlibs];
            break;
        }
    pthread_mutex_unlock(&mu);
    return rc;
}

/* Charges LIB's variables to the current context once. Returns false when that would exceed
 * the limit; *CHARGED tells whether this call made the charge (to undo it if the real call
 * fails). */
static bool library_charge(CUlibrary library, bool *charged)
{
    *charged = false;
    if (!tf__L.r || !library)
        return true;
    uint64_t lib = (uint64_t)(uintptr_t)library, ctx = cur_ctx(), bytes = 0;
    if (!ctx)
        return true;
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < nlibs && !bytes; i++)
        if (libs[i].lib == lib)
            bytes = libs[i].bytes;
    bool done = !bytes;
    for (size_t i = 0; i < ncharges && !done; i++)
        done = charges[i].handle == lib && charges[i].ctx == ctx;
    pthread_mutex_unlock(&mu);
    if (done)
        return true;
    int idx = tf__cur_idx();
    if (idx < 0)
        return true;
    if (!tf__reserve(idx, bytes))
        return false;
    /* Two threads may race to charge the same instance: keep one. */
    pthread_mutex_lock(&mu);
    bool dup = false;
    for (size_t i = 0; i < ncharges && !dup; i++)
        dup = charges[i].handle == lib && charges[i].ctx == ctx;
    pthread_mutex_unlock(&mu);
    if (dup) {
        tf__unreserve(idx, bytes);
        return true;
    }
    record(lib, ctx, idx, bytes);
    *charged = true;
    return true;
}

/* After the real call: a failed one undoes the charge it brought. */
static void library_settle(CUresult rc, CUlibrary library, bool charged)
{
    if (rc != CUDA_SUCCESS && charged)
        release((uint64_t)(uintptr_t)library, cur_ctx());
}

#define LIBRARY_USE(name, library, ...)                                                            \
    TF_PASS_IF_NESTED(name, __VA_ARGS__);                                                          \
    bool charged;                                                                                  \
    if (!library_charge(library, &charged))                                                        \
        return CUDA_ERROR_OUT_OF_MEMORY;                                                           \
    CUresult rc;                                                                                   \
    TF_CALL(rc, name, __VA_ARGS__);                                                                \
    library_settle(rc, library, charged);                                                          \
    return rc

CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
    LIBRARY_USE(cuLibraryGetKernel, library, pKernel, library, name);
}

CUresult CUDAAPI cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    LIBRARY_USE(cuLibraryGetModule, library, pMod, library);
}

CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                    const char *name)
{
    LIBRARY_USE(cuLibraryGetGlobal, library, dptr, bytes, library, name);
}

CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    TF_PASS_IF_NESTED(cuKernelGetFunction, pFunc, kernel);
    CUlibrary library = NULL;
    CUresult rc;
    if (tf__L.r && kernel) {
        TF_CALL(rc, cuKernelGetLibrary, &library, kernel);
        if (rc != CUDA_SUCCESS)
            library = NULL;
    }
    bool charged;
    if (!library_charge(library, &charged))
        return CUDA_ERROR_OUT_OF_MEMORY;
    TF_CALL(rc, cuKernelGetFunction, pFunc, kernel);
    library_settle(rc, library, charged);
    return rc;
}

void tf__modules_after_fork(void)
{
    pthread_mutex_init(&mu, NULL);
    ncharges = 0;
    nlibs = 0;
}
