/* SPDX-License-Identifier: Apache-2.0
 *
 * Private header of the simulated libcuda.so.1: the function object shared by the module
 * (cu_module.c) and launch (cu_launch.c) entry points. Built only with the PTX engine.
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

#endif
