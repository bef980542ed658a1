/* SPDX-License-Identifier: Apache-2.0
 *
 * Occupancy queries of the simulated driver (cuOccupancy*), computed as NVIDIA's occupancy
 * calculator does from the function's resources and the device model's per-SM limits
 * (src/sim/hwspec.c): resident blocks per SM are limited by the SM's warps, its block slots,
 * its registers (allocated per warp in units of 256, at least the function's NUM_REGS per
 * thread) and its shared memory (static + dynamic + the 1 KiB the driver reserves per block
 * from compute capability 8.0). The register count is the PTX's declared count, which ptxas
 * would lower on hardware, so the figures are conservative. Thread-block clusters are not
 * simulated: the cluster queries stay unimplemented (CUDA_ERROR_NOT_SUPPORTED).
 */
#include "sim/kernel.h"

#define WARP 32
#define REG_UNIT 256 /* registers are allocated to a warp in units of this many */

struct occ_fn {
    const struct sim_device *d;
    int max_threads;   /* the function's CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK */
    int regs;          /* per thread */
    int static_smem;   /* bytes */
    int max_dyn_smem;  /* the function's current MAX_DYNAMIC_SHARED_SIZE_BYTES */
    int reserved_smem; /* per block */
};

/* F (a CUfunction, or a CUkernel in the current context). */
static CUresult occ_fn(CUfunction f, struct occ_fn *o)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    struct CUfunc_st *fn = NULL;
    if (tf__handle_is(f, H_FUNC)) {
        fn = f;
    } else {
        CUcontext ctx;
        if ((rc = tf__ctx_current(&ctx, 0)) || (rc = tf__func_resolve(f, ctx, &fn)))
            return rc;
    }
    o->d = fn->mod->ctx->dev;
    if ((rc = tf__func_attr(fn, o->d, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &o->max_threads)) ||
        (rc = tf__func_attr(fn, o->d, CU_FUNC_ATTRIBUTE_NUM_REGS, &o->regs)))
        return rc;
    o->static_smem = (int)fn->info.static_shared;
    o->max_dyn_smem = fn->max_dynamic_smem;
    o->reserved_smem = tf__device_cc(o->d) >= 80 ? 1024 : 0;
    if (o->regs < 1)
        o->regs = 1;
    return CUDA_SUCCESS;
}

static int ceil_to(int v, int unit)
{
    return (v + unit - 1) / unit * unit;
}

/* Resident blocks of BLOCK threads with DYN bytes of dynamic shared memory per SM. */
static int blocks_per_sm(const struct occ_fn *o, int block, size_t dyn)
{
    const struct tf_sim_hwspec *hw = o->d->cfg->hw;
    if (block < 1 || block > o->max_threads || dyn > (size_t)o->max_dyn_smem)
        return 0;
    int warps = (block + WARP - 1) / WARP;
    int by_warps = hw->threads_per_sm / WARP / warps;
    int regs_per_warp = ceil_to(o->regs * WARP, REG_UNIT);
    int by_regs = regs_per_warp * warps > 65536 ? 0 : hw->regs_per_sm / regs_per_warp / warps;
    int smem = o->static_smem + (int)dyn + o->reserved_smem;
    int by_smem = smem > 0 ? hw->smem_per_sm / smem : hw->blocks_per_sm;
    int n = hw->blocks_per_sm;
    if (by_warps < n)
        n = by_warps;
    if (by_regs < n)
        n = by_regs;
    if (by_smem < n)
        n = by_smem;
    return n;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags)
{
    struct occ_fn o;
    CUresult rc = occ_fn(func, &o);
    if (rc)
        return rc;
    if (!numBlocks || blockSize < 0 || (flags & ~(unsigned)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE))
        return CUDA_ERROR_INVALID_VALUE;
    *numBlocks = blocks_per_sm(&o, blockSize, dynamicSMemSize);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func,
                                                             int blockSize, size_t dynamicSMemSize)
{
    return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        numBlocks, func, blockSize, dynamicSMemSize, CU_OCCUPANCY_DEFAULT);
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(
    int *minGridSize, int *blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit,
    unsigned int flags)
{
    struct occ_fn o;
    CUresult rc = occ_fn(func, &o);
    if (rc)
        return rc;
    if (!minGridSize || !blockSize || blockSizeLimit < 0 ||
        (flags & ~(unsigned)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE))
        return CUDA_ERROR_INVALID_VALUE;
    int limit = o.max_threads;
    if (blockSizeLimit > 0 && blockSizeLimit < limit)
        limit = blockSizeLimit;
    /* The largest block size (a multiple of the warp, or the limit itself) reaching the highest
     * number of resident threads per SM. */
    int best_block = 0, best_blocks = 0, best_threads = 0;
    for (int b = limit; b > 0; b = (b % WARP) ? b / WARP * WARP : b - WARP) {
        size_t dyn = blockSizeToDynamicSMemSize ? blockSizeToDynamicSMemSize(b) : dynamicSMemSize;
        int n = blocks_per_sm(&o, b, dyn);
        if (n * b > best_threads) {
            best_threads = n * b;
            best_blocks = n;
            best_block = b;
        }
    }
    *blockSize = best_block;
    *minGridSize = best_blocks * o.d->cfg->sm_count;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                                  CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                  size_t dynamicSMemSize, int blockSizeLimit)
{
    return cuOccupancyMaxPotentialBlockSizeWithFlags(minGridSize, blockSize, func,
                                                     blockSizeToDynamicSMemSize, dynamicSMemSize,
                                                     blockSizeLimit, CU_OCCUPANCY_DEFAULT);
}

CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func,
                                                         int numBlocks, int blockSize)
{
    struct occ_fn o;
    CUresult rc = occ_fn(func, &o);
    if (rc)
        return rc;
    if (!dynamicSmemSize || numBlocks < 1 || blockSize < 1)
        return CUDA_ERROR_INVALID_VALUE;
    *dynamicSmemSize = 0;
    if (blocks_per_sm(&o, blockSize, 0) < numBlocks)
        return CUDA_SUCCESS; /* not even without dynamic shared memory */
    int per_block = o.d->cfg->hw->smem_per_sm / numBlocks - o.reserved_smem - o.static_smem;
    int optin = o.d->cfg->hw->smem_optin - o.static_smem;
    if (per_block > optin)
        per_block = optin;
    *dynamicSmemSize = per_block > 0 ? (size_t)per_block : 0;
    return CUDA_SUCCESS;
}
