/* SPDX-License-Identifier: Apache-2.0
 *
 * Hooks for initialisation, device visibility and contexts: cuInit builds the device map;
 * device enumeration shows only the workload's devices (in the region's order); contexts
 * cannot be created on hidden devices; a destroyed or reset context gives back the VRAM
 * reservations of the allocations and module variables it took with it.
 */
#include "limiter/pass.h"

#include "limits/shm.h"

static void give_back(const struct tf_ptrtab_val *v, void *arg)
{
    tf__unreserve((int)v->idx, v->bytes);
}

static void sweep_ctx(CUcontext ctx)
{
    if (!ctx || !tf__L.r)
        return;
    atomic_fetch_add_explicit(&tf__L.ctx_gen, 1, memory_order_relaxed);
    tf__launch_ctx_gone(ctx);
    tf_ptrtab_sweep_ctx(&tf__L.mem, (uint64_t)(uintptr_t)ctx, give_back, NULL);
    tf_ptrtab_sweep_ctx(&tf__L.arr, (uint64_t)(uintptr_t)ctx, give_back, NULL);
    tf__modules_sweep_ctx((uint64_t)(uintptr_t)ctx);
    tf_ptrtab_sweep_ctx(&tf__L.gmem, (uint64_t)(uintptr_t)ctx, give_back, NULL);
}

CUresult CUDAAPI cuInit(unsigned int Flags)
{
    TF_PASS_IF_NESTED(cuInit, Flags);
    if (tf__L.strict_fail)
        return CUDA_ERROR_NOT_PERMITTED;
    CUresult rc;
    TF_CALL(rc, cuInit, Flags);
    if (rc == CUDA_SUCCESS)
        tf__devmap();
    return rc;
}

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    TF_PASS_IF_NESTED(cuDeviceGetCount, count);
    CUresult rc;
    TF_CALL(rc, cuDeviceGetCount, count);
    if (rc == CUDA_SUCCESS && count && tf__L.filter && tf__devmap())
        *count = tf__L.nvis;
    return rc;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
    TF_PASS_IF_NESTED(cuDeviceGet, device, ordinal);
    CUresult rc;
    if (tf__L.filter && tf__devmap()) {
        if (!device)
            return CUDA_ERROR_INVALID_VALUE;
        if (ordinal < 0 || ordinal >= tf__L.nvis)
            return CUDA_ERROR_INVALID_DEVICE;
        ordinal = (int)tf__L.vis[ordinal];
    }
    TF_CALL(rc, cuDeviceGet, device, ordinal);
    return rc;
}

CUresult CUDAAPI cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    TF_PASS_IF_NESTED(cuDeviceGetByPCIBusId, dev, pciBusId);
    CUresult rc;
    TF_CALL(rc, cuDeviceGetByPCIBusId, dev, pciBusId);
    if (rc == CUDA_SUCCESS && dev && !tf__visible(*dev))
        return CUDA_ERROR_INVALID_DEVICE;
    return rc;
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    TF_PASS_IF_NESTED(cuDeviceTotalMem_v2, bytes, dev);
    if (!tf__visible(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult rc;
    TF_CALL(rc, cuDeviceTotalMem_v2, bytes, dev);
    int idx = rc == CUDA_SUCCESS && bytes ? tf__idx_of_dev(dev) : -1;
    if (idx >= 0) {
        uint64_t free, total;
        tf_shm_vram_view(tf__L.r, (unsigned)idx, *bytes, *bytes, &free, &total);
        *bytes = (size_t)total;
    }
    return rc;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    TF_PASS_IF_NESTED(cuDevicePrimaryCtxRetain, pctx, dev);
    if (!tf__visible(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult rc;
    TF_CALL(rc, cuDevicePrimaryCtxRetain, pctx, dev);
    if (rc == CUDA_SUCCESS && pctx && dev >= 0 && dev < TF_LIM_MAX_REAL)
        atomic_store_explicit(&tf__L.primary[dev], (uintptr_t)*pctx, memory_order_relaxed);
    return rc;
}

static CUcontext primary_of(CUdevice dev)
{
    if (dev < 0 || dev >= TF_LIM_MAX_REAL)
        return NULL;
    return (CUcontext)atomic_load_explicit(&tf__L.primary[dev], memory_order_relaxed);
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    TF_PASS_IF_NESTED(cuDevicePrimaryCtxRelease_v2, dev);
    CUresult rc;
    TF_CALL(rc, cuDevicePrimaryCtxRelease_v2, dev);
    if (rc == CUDA_SUCCESS) {
        unsigned flags;
        int active = 1;
        CUresult st;
        TF_CALL(st, cuDevicePrimaryCtxGetState, dev, &flags, &active);
        if (st == CUDA_SUCCESS && !active)
            sweep_ctx(primary_of(dev)); /* the last release destroyed it */
    }
    return rc;
}

CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    TF_PASS_IF_NESTED(cuDevicePrimaryCtxReset_v2, dev);
    CUresult rc;
    TF_CALL(rc, cuDevicePrimaryCtxReset_v2, dev);
    if (rc == CUDA_SUCCESS)
        sweep_ctx(primary_of(dev));
    return rc;
}

CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    TF_PASS_IF_NESTED(cuCtxCreate_v2, pctx, flags, dev);
    if (!tf__visible(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult rc;
    TF_CALL(rc, cuCtxCreate_v2, pctx, flags, dev);
    return rc;
}

CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                unsigned int flags, CUdevice dev)
{
    TF_PASS_IF_NESTED(cuCtxCreate_v4, pctx, ctxCreateParams, flags, dev);
    if (!tf__visible(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult rc;
    TF_CALL(rc, cuCtxCreate_v4, pctx, ctxCreateParams, flags, dev);
    return rc;
}

CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
    TF_PASS_IF_NESTED(cuCtxDestroy_v2, ctx);
    CUresult rc;
    TF_CALL(rc, cuCtxDestroy_v2, ctx);
    if (rc == CUDA_SUCCESS)
        sweep_ctx(ctx);
    return rc;
}
