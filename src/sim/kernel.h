/* SPDX-License-Identifier: Apache-2.0
 *
 * Private header of the simulated libcuda.so.1: the module and function objects shared by the
 * module (cu_module.c), library (cu_library.c) and launch (cu_launch.c) entry points. Built
 * only with the PTX engine.
 */
#ifndef TF_SIM_KERNEL_H
#define TF_SIM_KERNEL_H

#include "sim/drv.h"
#include "sim/ptx/ptx.h"

/* A kernel of a loaded module (CUfunction). Attributes are set by cuFuncSetAttribute and read
 * at launch; like the real driver, setting them concurrently with launches of the same
 * function is the application's race. */
struct CUfunc_st {
    struct CUmod_st *mod;
    const struct tf_ptx_kernel *k;
    struct tf_ptx_kernel_info info;
    int max_dynamic_smem; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    int carveout;         /* CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT */
    CUfunc_cache cache_config;
};

/* A kernel launch, checked and ready to run: what an OP_KERNEL carries and what a graph's
 * kernel node keeps (a copy runs at each graph launch). */
struct sim_kernel_op {
    struct tf_ptx_launch l;
    const char *name;
    struct CUfunc_st *func;
    unsigned char params[]; /* l.params points here (l.params_size bytes) */
};

/* Checks a launch of F in CTX (function, geometry, parameters as cuLaunchKernel takes them)
 * and builds its op; the caller owns it (tf__kernel_free). */
CUresult tf__kernel_op_build(CUcontext ctx, CUfunction f, const unsigned grid[3],
                             const unsigned block[3], unsigned shmem, void **params, void **extra,
                             struct sim_kernel_op **out);
/* A copy of K, or NULL. */
struct sim_kernel_op *tf__kernel_op_dup(const struct sim_kernel_op *k);

/* F (a CUfunction, or a CUkernel launched directly) as a function of context CTX:
 * INVALID_HANDLE for unknown handles or functions of another context. */
CUresult tf__func_resolve(CUfunction f, CUcontext ctx, struct CUfunc_st **out);

struct CUlib_st; /* cu_library.c */

/* A loaded module (CUmodule): a context's instance of one PTX image. */
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

/* Where the JIT log options of cuModuleLoadDataEx / cuLibraryLoadData point. */
struct tf__jit_log {
    char *err;
    size_t errcap;
    void **err_size_slot; /* optionValues entry to update with the bytes written */
};

/* ---- shared by cu_module.c and cu_library.c ---- */
/* Writes MSG into LOG's error buffer (LOG may be NULL). */
void tf__jit_log_write(struct tf__jit_log *log, const char *msg);
/* Checks the JIT options of a load and finds the error-log buffer in them. */
CUresult tf__jit_options(unsigned n, const CUjit_option *opt, void **val, struct tf__jit_log *log);
/* Parses and checks PTX IMAGE of LEN bytes for device D (NULL: no device check); *OUT owns the
 * parsed module. */
CUresult tf__ptx_load(const void *image, size_t len, struct sim_device *d,
                      struct tf_ptx_module **out, int *version, int *target,
                      struct tf__jit_log *log);
/* Builds a module of CTX from parsed PM (takes ownership of PM) and links it into CTX; an
 * instance of library LIB (or NULL) uses the library's __managed__ variables. */
CUresult tf__module_create(CUcontext ctx, struct tf_ptx_module *pm, int version, int target,
                           struct CUlib_st *lib, struct CUmod_st **out);
/* The library-wide memory of LIB's __managed__ variable NAME, or 0 (cu_library.c). */
uint64_t tf__library_managed(const struct CUlib_st *lib, const char *name);
/* Unlinks M from its context and its handle; tf__module_free then frees it. */
void tf__module_unlink(struct CUmod_st *m);
void tf__module_free(struct CUmod_st *m);
/* Reads file FNAME into a NUL-terminated buffer *OUT (caller frees). */
CUresult tf__read_image(const char *fname, char **out, size_t *len);
/* PTX text of a module image (cu_image.c): TEXT/LEN, backed by OWNED when it was extracted
 * from a fatbin. */
struct sim_ptx_text {
    const char *text;
    size_t len;
    char *owned;
};
/* The PTX of IMAGE (PTX text, cubin, fatbin container or wrapper record) for a device of
 * compute capability CC (major * 10 + minor; 0 = any device). FILE_LEN: the bytes known to be
 * readable at IMAGE (a file), 0 when only the pointer is known (the image's own header or NUL
 * bounds it). NO_BINARY_FOR_GPU (logged, with the architectures present) when nothing fits. */
CUresult tf__image_ptx(const void *image, size_t file_len, unsigned cc, struct sim_ptx_text *out,
                       struct tf__jit_log *log);
void tf__ptx_text_free(struct sim_ptx_text *t);
/* A private copy of IMAGE's bytes (the container of a wrapper record), NUL-terminated, for a
 * library to instantiate later; *SIZE excludes the added NUL. */
CUresult tf__image_copy(const void *image, size_t file_len, void **copy, size_t *size,
                        struct tf__jit_log *log);
/* Compute capability of D as major * 10 + minor. */
unsigned tf__device_cc(const struct sim_device *d);
/* Function attribute A of F on device D; setting one. */
CUresult tf__func_attr(const struct CUfunc_st *f, const struct sim_device *d,
                       CUfunction_attribute a, int *v);
CUresult tf__func_set_attr(struct CUfunc_st *f, const struct sim_device *d, CUfunction_attribute a,
                           int v);

#endif
