/* SPDX-License-Identifier: Apache-2.0
 *
 * Kernel launch entry points of the simulated driver (cuLaunchKernel, cuLaunchKernelEx,
 * cuLaunchCooperativeKernel and their per-thread-stream variants) and the executor side of a
 * launch: the PTX engine runs the grid on the device's executor thread while the process
 * holds the device's cross-process execution lock, so one kernel runs at a time per device
 * and its time is accounted as busy time.
 *
 * Checked at launch, as the real driver does: block dimensions (each > 0, x,y <= 1024,
 * z <= 64, product <= 1024) and grid dimensions (x < 2^31, y,z <= 65535) -> INVALID_VALUE
 * (for a CUkernel, as the runtime launches: the code the runtime reports as
 * cudaErrorInvalidConfiguration, see CUDA_ERROR_INVALID_CONFIGURATION_RT);
 * more threads than the kernel's .maxntid -> LAUNCH_OUT_OF_RESOURCES; a block size other than
 * .reqntid -> INVALID_VALUE; dynamic shared memory above the function's
 * MAX_DYNAMIC_SHARED_SIZE_BYTES (48 KiB minus static by default, raised up to the device's
 * opt-in limit with cuFuncSetAttribute) -> INVALID_VALUE; parameters: kernelParams (one
 * pointer per parameter, laid out with cuFuncGetParamInfo's offsets) or
 * extra = {CU_LAUNCH_PARAM_BUFFER_POINTER, p, CU_LAUNCH_PARAM_BUFFER_SIZE, &n,
 * CU_LAUNCH_PARAM_END} with n covering the parameter buffer -> else INVALID_VALUE.
 *
 * Faults found while the kernel runs (illegal or misaligned address, trap, instruction
 * budget TF_SIM_LAUNCH_MAX_INSNS) are sticky errors of the context, reported by every later
 * call on it, as on hardware; the engine's description of the fault goes to the log.
 */
#include "sim/kernel.h"

#include "common/log.h"

#include <stdlib.h>
#include <string.h>

void tf__kernel_free(struct sim_kernel_op *k)
{
    free(k);
}

struct sim_kernel_op *tf__kernel_op_dup(const struct sim_kernel_op *k)
{
    size_t n = sizeof(*k) + k->l.params_size;
    struct sim_kernel_op *c = malloc(n);
    if (c) {
        memcpy(c, k, n);
        c->l.params = c->params;
    }
    return c;
}

static CUresult fault_code(enum tf_ptx_status st)
{
    switch (st) {
    case TF_PTX_ILLEGAL_ADDRESS:
        return CUDA_ERROR_ILLEGAL_ADDRESS;
    case TF_PTX_MISALIGNED_ADDRESS:
        return CUDA_ERROR_MISALIGNED_ADDRESS;
    case TF_PTX_LAUNCH_TIMEOUT:
        return CUDA_ERROR_LAUNCH_TIMEOUT;
    case TF_PTX_ASSERT:
        return CUDA_ERROR_ASSERT;
    case TF_PTX_TRAP:
    default:
        return CUDA_ERROR_LAUNCH_FAILED;
    }
}

void tf__kernel_run(struct sim_device *d, CUcontext ctx, struct sim_kernel_op *k)
{
    struct tf_ptx_memview mv;
    tf__exec_memview(d, ctx, &mv.ranges, &mv.count);
    struct tf_ptx_env env = {.sm_count = (uint32_t)d->cfg->sm_count,
                             .device_index = (uint32_t)d->index};
    k->l.mem = &mv;
    k->l.env = &env;
    k->l.max_instructions = tf__drv()->max_insns;
    char err[512] = "";
    uint64_t insns = 0;
    if (tf_sim_shm_exec_acquire(d->shm, atomic_load(&d->slot)) != 0) {
        tf__ctx_set_sticky(ctx, CUDA_ERROR_LAUNCH_FAILED);
        tf_log(TF_LOG_ERROR, "sim", "kernel %s: device %d state region unusable", k->name,
               d->index);
        return;
    }
    uint64_t t0 = tf_sim_now_ns();
    enum tf_ptx_status st = tf_ptx_launch_run(&k->l, &insns, err, sizeof(err));
    uint64_t t1 = tf_sim_now_ns();
    tf_sim_shm_exec_release(d->shm, atomic_load(&d->slot), t0, t1);
    if (st != TF_PTX_OK) {
        CUresult code = fault_code(st);
        tf__ctx_set_sticky(ctx, code);
        tf_log(TF_LOG_ERROR, "sim", "kernel %s on device %d: %s (%s)", k->name, d->index, err,
               tf__cu_error_name(code));
    } else if (tf_log_enabled(TF_LOG_DEBUG)) {
        tf_log(TF_LOG_DEBUG, "sim", "kernel %s: %llu instructions in %llu ns", k->name,
               (unsigned long long)insns, (unsigned long long)(t1 - t0));
    }
}

/* ---- Launch checks --------------------------------------------------------------------- */

struct launch_args {
    CUfunction f;
    unsigned grid[3], block[3];
    unsigned shmem;
    CUstream stream;
    void **params, **extra;
    int cooperative;
    int per_thread;
    int is_kernel; /* F is a CUkernel (library kernel), as the CUDA runtime launches */
};

/* What the real driver answers the runtime for grid or block dimensions outside the device's
 * limits: a code cuda.h does not name, which the runtime reports as
 * cudaErrorInvalidConfiguration (compute-sanitizer shows that error coming out of
 * libcuda.so.1, and the CUDA 13 runtime maps no documented CUresult to it). Launches of
 * CUfunction handles keep the documented CUDA_ERROR_INVALID_VALUE. */
#define CUDA_ERROR_INVALID_CONFIGURATION_RT ((CUresult)9)

/* True when the grid and block dimensions are within the device's limits. */
static int dims_ok(const struct launch_args *a)
{
    const unsigned *b = a->block, *g = a->grid;
    if (!b[0] || !b[1] || !b[2] || !g[0] || !g[1] || !g[2])
        return 0;
    if (b[0] > 1024 || b[1] > 1024 || b[2] > 64)
        return 0;
    if ((uint64_t)b[0] * b[1] * b[2] > TF_PTX_MAX_THREADS_PER_BLOCK)
        return 0;
    return g[0] <= 2147483647u && g[1] <= 65535 && g[2] <= 65535;
}

static CUresult check_geometry(const struct CUfunc_st *f, const struct launch_args *a)
{
    const unsigned *b = a->block;
    if (!dims_ok(a))
        return a->is_kernel ? CUDA_ERROR_INVALID_CONFIGURATION_RT : CUDA_ERROR_INVALID_VALUE;
    uint64_t threads = (uint64_t)b[0] * b[1] * b[2];
    const struct tf_ptx_kernel_info *in = &f->info;
    if (in->reqntid[0]) {
        unsigned ry = in->reqntid[1] ? in->reqntid[1] : 1, rz = in->reqntid[2] ? in->reqntid[2] : 1;
        if (b[0] != in->reqntid[0] || b[1] != ry || b[2] != rz)
            return CUDA_ERROR_INVALID_VALUE;
    }
    if (in->max_threads && threads > in->max_threads)
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    if (a->shmem > (unsigned)f->max_dynamic_smem)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* Builds the packed parameter buffer of F into a new op (caller frees on error). */
static CUresult pack_params(const struct CUfunc_st *f, void **params, void **extra,
                            struct sim_kernel_op **out)
{
    uint32_t psize = f->info.params_size;
    struct sim_kernel_op *k = calloc(1, sizeof(*k) + psize);
    if (!k)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (params && extra) {
        free(k);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (params) {
        for (uint32_t i = 0; i < f->info.nparams; i++) {
            uint32_t off, size;
            if (tf_ptx_kernel_param(f->k, i, &off, &size) != TF_PTX_OK || !params[i]) {
                free(k);
                return CUDA_ERROR_INVALID_VALUE;
            }
            memcpy(k->params + off, params[i], size);
        }
    } else if (extra) {
        const void *buf = NULL;
        size_t size = 0;
        int have_size = 0;
        for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (i > 64 || (extra[i] != CU_LAUNCH_PARAM_BUFFER_POINTER &&
                           extra[i] != CU_LAUNCH_PARAM_BUFFER_SIZE)) {
                free(k);
                return CUDA_ERROR_INVALID_VALUE;
            }
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
                buf = extra[i + 1];
            else if (extra[i + 1]) {
                size = *(const size_t *)extra[i + 1];
                have_size = 1;
            }
        }
        if ((psize && !buf) || !have_size || size < psize) {
            free(k);
            return CUDA_ERROR_INVALID_VALUE;
        }
        if (psize)
            memcpy(k->params, buf, psize);
    } else if (f->info.nparams > 0) {
        free(k);
        return CUDA_ERROR_INVALID_VALUE;
    }
    k->l.params = k->params;
    k->l.params_size = psize;
    *out = k;
    return CUDA_SUCCESS;
}

/* Checks launch A in CTX and builds its op (caller owns it). */
static CUresult build(CUcontext ctx, struct launch_args *a, struct sim_kernel_op **out)
{
    struct CUfunc_st *f;
    CUresult rc;
    a->is_kernel = tf__handle_is((const void *)a->f, H_KERNEL);
    if ((rc = tf__func_resolve(a->f, ctx, &f)))
        return rc;
    if ((rc = check_geometry(f, a))) {
        if (tf_log_enabled(TF_LOG_DEBUG))
            tf_log(TF_LOG_DEBUG, "sim", "launch of %s: grid %ux%ux%u block %ux%ux%u shared %u: %s",
                   f->info.name, a->grid[0], a->grid[1], a->grid[2], a->block[0], a->block[1],
                   a->block[2], a->shmem, tf__cu_error_name(rc));
        return rc;
    }
    if (a->cooperative) {
        const struct tf_sim_hwspec *hw = ctx->dev->cfg->hw;
        uint64_t threads = (uint64_t)a->block[0] * a->block[1] * a->block[2];
        uint64_t per_sm = hw->threads_per_sm / threads;
        if (per_sm > (uint64_t)hw->blocks_per_sm)
            per_sm = (uint64_t)hw->blocks_per_sm;
        uint64_t blocks = (uint64_t)a->grid[0] * a->grid[1] * a->grid[2];
        if (blocks > per_sm * (uint64_t)ctx->dev->cfg->sm_count)
            return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
    struct sim_kernel_op *k;
    if ((rc = pack_params(f, a->params, a->extra, &k)))
        return rc;
    k->name = f->info.name;
    k->func = f;
    k->l.kernel = f->k;
    memcpy(k->l.grid, a->grid, sizeof(k->l.grid));
    memcpy(k->l.block, a->block, sizeof(k->l.block));
    k->l.dynamic_shared = a->shmem;
    k->l.max_dynamic_shared = (uint32_t)f->max_dynamic_smem;
    *out = k;
    return CUDA_SUCCESS;
}

CUresult tf__kernel_op_build(CUcontext ctx, CUfunction f, const unsigned grid[3],
                             const unsigned block[3], unsigned shmem, void **params, void **extra,
                             struct sim_kernel_op **out)
{
    struct launch_args a = {.f = f,
                            .grid = {grid[0], grid[1], grid[2]},
                            .block = {block[0], block[1], block[2]},
                            .shmem = shmem,
                            .params = params,
                            .extra = extra};
    return build(ctx, &a, out);
}

static CUresult launch(struct launch_args *a)
{
    CUcontext ctx;
    CUresult rc = tf__ctx_current(&ctx, 0);
    if (rc)
        return rc;
    struct CUstream_st *s;
    struct sim_kernel_op *k;
    if ((rc = tf__stream_resolve(ctx, a->stream, a->per_thread, &s)) || (rc = build(ctx, a, &k)))
        return rc;
    struct sim_op *op = tf__op_new(OP_KERNEL);
    if (!op) {
        free(k);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    op->u.kernel = k;
    return tf__enqueue(s, op, 0);
}

#define LAUNCH_ARGS                                                                                \
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,             \
        unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
        unsigned int sharedMemBytes, CUstream hStream

/* The launch_args of one of the entry points below (their parameters are LAUNCH_ARGS). */
#define LAUNCH_INIT(params_, extra_, cooperative_, per_thread_)                                    \
    {                                                                                              \
        .f = f, .grid = {gridDimX, gridDimY, gridDimZ},                                            \
        .block = {blockDimX, blockDimY, blockDimZ}, .shmem = sharedMemBytes, .stream = hStream,    \
        .params = params_, .extra = extra_, .cooperative = cooperative_, .per_thread = per_thread_ \
    }

CUresult CUDAAPI cuLaunchKernel(LAUNCH_ARGS, void **kernelParams, void **extra)
{
    struct launch_args a = LAUNCH_INIT(kernelParams, extra, 0, 0);
    return launch(&a);
}

CUresult CUDAAPI cuLaunchKernel_ptsz(LAUNCH_ARGS, void **kernelParams, void **extra)
{
    struct launch_args a = LAUNCH_INIT(kernelParams, extra, 0, 1);
    return launch(&a);
}

CUresult CUDAAPI cuLaunchCooperativeKernel(LAUNCH_ARGS, void **kernelParams)
{
    struct launch_args a = LAUNCH_INIT(kernelParams, NULL, 1, 0);
    return launch(&a);
}

CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(LAUNCH_ARGS, void **kernelParams)
{
    struct launch_args a = LAUNCH_INIT(kernelParams, NULL, 1, 1);
    return launch(&a);
}

static CUresult launch_ex(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra, int per_thread)
{
    if (!config || (config->numAttrs && !config->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    struct launch_args a = {.f = f,
                            .grid = {config->gridDimX, config->gridDimY, config->gridDimZ},
                            .block = {config->blockDimX, config->blockDimY, config->blockDimZ},
                            .shmem = config->sharedMemBytes,
                            .stream = config->hStream,
                            .params = kernelParams,
                            .extra = extra,
                            .per_thread = per_thread};
    for (unsigned i = 0; i < config->numAttrs; i++) {
        const CUlaunchAttribute *at = &config->attrs[i];
        switch (at->id) {
        case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
            a.cooperative = at->value.cooperative != 0;
            break;
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
            if (at->value.clusterDim.x > 1 || at->value.clusterDim.y > 1 ||
                at->value.clusterDim.z > 1)
                return CUDA_ERROR_NOT_SUPPORTED; /* no thread-block clusters */
            break;
        case CU_LAUNCH_ATTRIBUTE_IGNORE:
        case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
        case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
        case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
        case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
            break; /* performance hints: no effect on a serial device */
        default:
            return CUDA_ERROR_NOT_SUPPORTED;
        }
    }
    return launch(&a);
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                                  void **extra)
{
    return launch_ex(config, f, kernelParams, extra, 0);
}

CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                       void **kernelParams, void **extra)
{
    return launch_ex(config, f, kernelParams, extra, 1);
}
