/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so: cuGetProcAddress (v1 and v2) over one table of every entry point this
 * library implements, with the CUDA version each ABI appeared in, and the per-thread-default-
 * stream variants (_ptsz / _ptds) that programs built with --default-stream per-thread link
 * to. A symbol the table does not know returns CUDA_ERROR_NOT_SUPPORTED (with symbolStatus
 * CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND and *pfn NULL): it cannot be forwarded.
 *
 * Per-thread default stream: the _ptsz variants run on CU_STREAM_PER_THREAD when given the
 * NULL stream; the synchronous _ptds copies and memsets are the ordinary synchronous ones
 * (they synchronise at least as much as the per-thread versions would).
 */
#include "remote/client/client.h"

#include <string.h>

/* Exact symbol names below, never cuda.h's version remaps. */
#undef cuGetProcAddress
#undef cuDeviceGetUuid
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
#undef cuEventElapsedTime

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                  cuuint64_t flags);
CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags);
CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd);
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                unsigned int flags, CUdevice dev);

/* ---- per-thread default stream variants ----------------------------------------------------- */

static CUstream ptsz(CUstream s)
{
    return s ? s : CU_STREAM_PER_THREAD;
}

/* clang-format off */
/* X(VARIANT, BASE, PARAMS, ARGS): VARIANT calls BASE with ARGS (hStream mapped by ptsz()). */
#define TFC_PTSZ(X)                                                                              \
    X(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync_v2,                                           \
      (CUdeviceptr d, const void *s, size_t n, CUstream h), (d, s, n, ptsz(h)))                  \
    X(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync_v2,                                           \
      (void *d, CUdeviceptr s, size_t n, CUstream h), (d, s, n, ptsz(h)))                        \
    X(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync_v2,                                           \
      (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h), (d, s, n, ptsz(h)))                  \
    X(cuMemcpyAsync_ptsz, cuMemcpyAsync,                                                         \
      (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h), (d, s, n, ptsz(h)))                  \
    X(cuMemsetD8Async_ptsz, cuMemsetD8Async,                                                     \
      (CUdeviceptr d, unsigned char v, size_t n, CUstream h), (d, v, n, ptsz(h)))                \
    X(cuMemsetD16Async_ptsz, cuMemsetD16Async,                                                   \
      (CUdeviceptr d, unsigned short v, size_t n, CUstream h), (d, v, n, ptsz(h)))               \
    X(cuMemsetD32Async_ptsz, cuMemsetD32Async,                                                   \
      (CUdeviceptr d, unsigned int v, size_t n, CUstream h), (d, v, n, ptsz(h)))                 \
    X(cuStreamSynchronize_ptsz, cuStreamSynchronize, (CUstream h), (ptsz(h)))                    \
    X(cuStreamQuery_ptsz, cuStreamQuery, (CUstream h), (ptsz(h)))                                \
    X(cuStreamWaitEvent_ptsz, cuStreamWaitEvent, (CUstream h, CUevent e, unsigned int f),        \
      (ptsz(h), e, f))                                                                           \
    X(cuStreamGetFlags_ptsz, cuStreamGetFlags, (CUstream h, unsigned int *f), (ptsz(h), f))      \
    X(cuStreamGetPriority_ptsz, cuStreamGetPriority, (CUstream h, int *p), (ptsz(h), p))         \
    X(cuStreamGetCtx_ptsz, cuStreamGetCtx, (CUstream h, CUcontext *c), (ptsz(h), c))             \
    X(cuEventRecord_ptsz, cuEventRecord, (CUevent e, CUstream h), (e, ptsz(h)))                  \
    X(cuEventRecordWithFlags_ptsz, cuEventRecordWithFlags,                                       \
      (CUevent e, CUstream h, unsigned int f), (e, ptsz(h), f))                                  \
    X(cuLaunchKernel_ptsz, cuLaunchKernel,                                                       \
      (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,         \
       unsigned int by, unsigned int bz, unsigned int sm, CUstream h, void **kp, void **ex),     \
      (f, gx, gy, gz, bx, by, bz, sm, ptsz(h), kp, ex))                                          \
    X(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD_v2, (CUdeviceptr d, const void *s, size_t n), (d, s, n))\
    X(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH_v2, (void *d, CUdeviceptr s, size_t n), (d, s, n))      \
    X(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD_v2, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))\
    X(cuMemcpy_ptds, cuMemcpy, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))              \
    X(cuMemsetD8_v2_ptds, cuMemsetD8_v2, (CUdeviceptr d, unsigned char v, size_t n), (d, v, n))  \
    X(cuMemsetD16_v2_ptds, cuMemsetD16_v2, (CUdeviceptr d, unsigned short v, size_t n),          \
      (d, v, n))                                                                                 \
    X(cuMemsetD32_v2_ptds, cuMemsetD32_v2, (CUdeviceptr d, unsigned int v, size_t n), (d, v, n))
/* clang-format on */

#define TFC_PTSZ_DEFINE(variant, base, params, args)                                               \
    TFC_API CUresult CUDAAPI variant params;                                                       \
    TFC_API CUresult CUDAAPI variant params                                                        \
    {                                                                                              \
        return base args;                                                                          \
    }
TFC_PTSZ(TFC_PTSZ_DEFINE)
#undef TFC_PTSZ_DEFINE

TFC_API CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                               void **kernelParams, void **extra);
TFC_API CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                               void **kernelParams, void **extra)
{
    if (!config)
        return CUDA_ERROR_INVALID_VALUE;
    CUlaunchConfig c = *config;
    c.hStream = ptsz(c.hStream);
    return cuLaunchKernelEx(&c, f, kernelParams, extra);
}

/* ---- the table ------------------------------------------------------------------------------ */

/* clang-format off */
/* X(NAME, VERSION, SYMBOL, PTDS): SYMBOL answers NAME for requested versions >= VERSION;
 * PTDS 1 marks the per-thread-default-stream variant of NAME. */
#define TFC_PROCS(X)                                                                             \
    X(cuInit, 2000, cuInit, 0)                                                                   \
    X(cuDriverGetVersion, 2020, cuDriverGetVersion, 0)                                           \
    X(cuGetErrorName, 6000, cuGetErrorName, 0)                                                   \
    X(cuGetErrorString, 6000, cuGetErrorString, 0)                                               \
    X(cuGetProcAddress, 11030, cuGetProcAddress, 0)                                              \
    X(cuGetProcAddress, 12000, cuGetProcAddress_v2, 0)                                           \
    X(cuDeviceGet, 2000, cuDeviceGet, 0)                                                         \
    X(cuDeviceGetCount, 2000, cuDeviceGetCount, 0)                                               \
    X(cuDeviceGetName, 2000, cuDeviceGetName, 0)                                                 \
    X(cuDeviceGetUuid, 9020, cuDeviceGetUuid, 0)                                                 \
    X(cuDeviceGetUuid, 11040, cuDeviceGetUuid_v2, 0)                                             \
    X(cuDeviceTotalMem, 3020, cuDeviceTotalMem_v2, 0)                                            \
    X(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute, 0)                                       \
    X(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain, 0)                               \
    X(cuDevicePrimaryCtxRelease, 7000, cuDevicePrimaryCtxRelease, 0)                             \
    X(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2, 0)                         \
    X(cuDevicePrimaryCtxReset, 7000, cuDevicePrimaryCtxReset, 0)                                 \
    X(cuDevicePrimaryCtxReset, 11000, cuDevicePrimaryCtxReset_v2, 0)                             \
    X(cuDevicePrimaryCtxSetFlags, 7000, cuDevicePrimaryCtxSetFlags, 0)                           \
    X(cuDevicePrimaryCtxSetFlags, 11000, cuDevicePrimaryCtxSetFlags_v2, 0)                       \
    X(cuDevicePrimaryCtxGetState, 7000, cuDevicePrimaryCtxGetState, 0)                           \
    X(cuCtxCreate, 3020, cuCtxCreate_v2, 0)                                                      \
    X(cuCtxCreate, 11040, cuCtxCreate_v3, 0)                                                     \
    X(cuCtxCreate, 12050, cuCtxCreate_v4, 0)                                                     \
    X(cuCtxDestroy, 4000, cuCtxDestroy_v2, 0)                                                    \
    X(cuCtxSetCurrent, 4000, cuCtxSetCurrent, 0)                                                 \
    X(cuCtxGetCurrent, 4000, cuCtxGetCurrent, 0)                                                 \
    X(cuCtxPushCurrent, 4000, cuCtxPushCurrent_v2, 0)                                            \
    X(cuCtxPopCurrent, 4000, cuCtxPopCurrent_v2, 0)                                              \
    X(cuCtxGetDevice, 2000, cuCtxGetDevice, 0)                                                   \
    X(cuCtxGetFlags, 7000, cuCtxGetFlags, 0)                                                     \
    X(cuCtxGetApiVersion, 3020, cuCtxGetApiVersion, 0)                                           \
    X(cuCtxSynchronize, 2000, cuCtxSynchronize, 0)                                               \
    X(cuCtxSynchronize, 13000, cuCtxSynchronize_v2, 0)                                           \
    X(cuMemAlloc, 3020, cuMemAlloc_v2, 0)                                                        \
    X(cuMemAllocPitch, 3020, cuMemAllocPitch_v2, 0)                                              \
    X(cuMemFree, 3020, cuMemFree_v2, 0)                                                          \
    X(cuMemGetInfo, 3020, cuMemGetInfo_v2, 0)                                                    \
    X(cuMemGetAddressRange, 3020, cuMemGetAddressRange_v2, 0)                                    \
    X(cuMemAllocHost, 3020, cuMemAllocHost_v2, 0)                                                \
    X(cuMemHostAlloc, 2020, cuMemHostAlloc, 0)                                                   \
    X(cuMemFreeHost, 2000, cuMemFreeHost, 0)                                                     \
    X(cuMemHostGetFlags, 2030, cuMemHostGetFlags, 0)                                             \
    X(cuMemHostGetDevicePointer, 3020, cuMemHostGetDevicePointer_v2, 0)                          \
    X(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2, 0)                                                    \
    X(cuMemcpyHtoD, 7000, cuMemcpyHtoD_v2_ptds, 1)                                               \
    X(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2, 0)                                                    \
    X(cuMemcpyDtoH, 7000, cuMemcpyDtoH_v2_ptds, 1)                                               \
    X(cuMemcpyDtoD, 3020, cuMemcpyDtoD_v2, 0)                                                    \
    X(cuMemcpyDtoD, 7000, cuMemcpyDtoD_v2_ptds, 1)                                               \
    X(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync_v2, 0)                                          \
    X(cuMemcpyHtoDAsync, 7000, cuMemcpyHtoDAsync_v2_ptsz, 1)                                     \
    X(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync_v2, 0)                                          \
    X(cuMemcpyDtoHAsync, 7000, cuMemcpyDtoHAsync_v2_ptsz, 1)                                     \
    X(cuMemcpyDtoDAsync, 3020, cuMemcpyDtoDAsync_v2, 0)                                          \
    X(cuMemcpyDtoDAsync, 7000, cuMemcpyDtoDAsync_v2_ptsz, 1)                                     \
    X(cuMemcpy, 4000, cuMemcpy, 0)                                                               \
    X(cuMemcpy, 7000, cuMemcpy_ptds, 1)                                                          \
    X(cuMemcpyAsync, 4000, cuMemcpyAsync, 0)                                                     \
    X(cuMemcpyAsync, 7000, cuMemcpyAsync_ptsz, 1)                                                \
    X(cuMemsetD8, 3020, cuMemsetD8_v2, 0)                                                        \
    X(cuMemsetD8, 7000, cuMemsetD8_v2_ptds, 1)                                                   \
    X(cuMemsetD16, 3020, cuMemsetD16_v2, 0)                                                      \
    X(cuMemsetD16, 7000, cuMemsetD16_v2_ptds, 1)                                                 \
    X(cuMemsetD32, 3020, cuMemsetD32_v2, 0)                                                      \
    X(cuMemsetD32, 7000, cuMemsetD32_v2_ptds, 1)                                                 \
    X(cuMemsetD8Async, 3020, cuMemsetD8Async, 0)                                                 \
    X(cuMemsetD8Async, 7000, cuMemsetD8Async_ptsz, 1)                                            \
    X(cuMemsetD16Async, 3020, cuMemsetD16Async, 0)                                               \
    X(cuMemsetD16Async, 7000, cuMemsetD16Async_ptsz, 1)                                          \
    X(cuMemsetD32Async, 3020, cuMemsetD32Async, 0)                                               \
    X(cuMemsetD32Async, 7000, cuMemsetD32Async_ptsz, 1)                                          \
    X(cuPointerGetAttribute, 4000, cuPointerGetAttribute, 0)                                     \
    X(cuPointerGetAttributes, 7000, cuPointerGetAttributes, 0)                                   \
    X(cuModuleLoad, 2000, cuModuleLoad, 0)                                                       \
    X(cuModuleLoadData, 2000, cuModuleLoadData, 0)                                               \
    X(cuModuleLoadDataEx, 2010, cuModuleLoadDataEx, 0)                                           \
    X(cuModuleLoadFatBinary, 2000, cuModuleLoadFatBinary, 0)                                     \
    X(cuModuleUnload, 2000, cuModuleUnload, 0)                                                   \
    X(cuModuleGetFunction, 2000, cuModuleGetFunction, 0)                                         \
    X(cuModuleGetGlobal, 3020, cuModuleGetGlobal_v2, 0)                                          \
    X(cuLibraryLoadData, 12000, cuLibraryLoadData, 0)                                            \
    X(cuLibraryLoadFromFile, 12000, cuLibraryLoadFromFile, 0)                                    \
    X(cuLibraryUnload, 12000, cuLibraryUnload, 0)                                                \
    X(cuLibraryGetKernel, 12000, cuLibraryGetKernel, 0)                                          \
    X(cuLibraryGetGlobal, 12000, cuLibraryGetGlobal, 0)                                          \
    X(cuKernelGetFunction, 12000, cuKernelGetFunction, 0)                                        \
    X(cuKernelGetParamInfo, 12040, cuKernelGetParamInfo, 0)                                      \
    X(cuFuncGetParamInfo, 12040, cuFuncGetParamInfo, 0)                                          \
    X(cuFuncGetAttribute, 2020, cuFuncGetAttribute, 0)                                           \
    X(cuFuncSetAttribute, 9000, cuFuncSetAttribute, 0)                                           \
    X(cuFuncGetName, 12030, cuFuncGetName, 0)                                                    \
    X(cuLaunchKernel, 4000, cuLaunchKernel, 0)                                                   \
    X(cuLaunchKernel, 7000, cuLaunchKernel_ptsz, 1)                                              \
    X(cuLaunchKernelEx, 11060, cuLaunchKernelEx, 0)                                              \
    X(cuLaunchKernelEx, 11060, cuLaunchKernelEx_ptsz, 1)                                         \
    X(cuStreamCreate, 2000, cuStreamCreate, 0)                                                   \
    X(cuStreamCreateWithPriority, 5050, cuStreamCreateWithPriority, 0)                           \
    X(cuStreamDestroy, 4000, cuStreamDestroy_v2, 0)                                              \
    X(cuStreamSynchronize, 2000, cuStreamSynchronize, 0)                                         \
    X(cuStreamSynchronize, 7000, cuStreamSynchronize_ptsz, 1)                                    \
    X(cuStreamQuery, 2000, cuStreamQuery, 0)                                                     \
    X(cuStreamQuery, 7000, cuStreamQuery_ptsz, 1)                                                \
    X(cuStreamWaitEvent, 3020, cuStreamWaitEvent, 0)                                             \
    X(cuStreamWaitEvent, 7000, cuStreamWaitEvent_ptsz, 1)                                        \
    X(cuStreamGetFlags, 5050, cuStreamGetFlags, 0)                                               \
    X(cuStreamGetFlags, 7000, cuStreamGetFlags_ptsz, 1)                                          \
    X(cuStreamGetPriority, 5050, cuStreamGetPriority, 0)                                         \
    X(cuStreamGetPriority, 7000, cuStreamGetPriority_ptsz, 1)                                    \
    X(cuStreamGetCtx, 9020, cuStreamGetCtx, 0)                                                   \
    X(cuStreamGetCtx, 9020, cuStreamGetCtx_ptsz, 1)                                              \
    X(cuEventCreate, 2000, cuEventCreate, 0)                                                     \
    X(cuEventDestroy, 4000, cuEventDestroy_v2, 0)                                                \
    X(cuEventRecord, 2000, cuEventRecord, 0)                                                     \
    X(cuEventRecord, 7000, cuEventRecord_ptsz, 1)                                                \
    X(cuEventRecordWithFlags, 11010, cuEventRecordWithFlags, 0)                                  \
    X(cuEventRecordWithFlags, 11010, cuEventRecordWithFlags_ptsz, 1)                             \
    X(cuEventQuery, 2000, cuEventQuery, 0)                                                       \
    X(cuEventSynchronize, 2000, cuEventSynchronize, 0)                                           \
    X(cuEventElapsedTime, 2000, cuEventElapsedTime, 0)                                           \
    X(cuEventElapsedTime, 12080, cuEventElapsedTime_v2, 0)
/* clang-format on */

struct proc {
    const char *name;
    int version;
    void *fn;
    int ptds;
};

#define TFC_PROC_ENTRY(name, ver, sym, ptds) {#name, ver, (void *)&sym, ptds},
static const struct proc procs[] = {TFC_PROCS(TFC_PROC_ENTRY)};
#undef TFC_PROC_ENTRY

static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    int want_ptds = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    const struct proc *best = NULL;
    int known = 0;
    for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
        const struct proc *p = &procs[i];
        if (strcmp(p->name, symbol) != 0)
            continue;
        known = 1;
        if (p->version > version || (p->ptds && !want_ptds))
            continue;
        /* Highest version wins; at equal version the per-thread variant when asked. */
        if (!best || p->version > best->version ||
            (p->version == best->version && p->ptds == want_ptds))
            best = p;
    }
    if (best) {
        *pfn = best->fn;
        if (status)
            *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    if (status)
        *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                        : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return known ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_NOT_SUPPORTED;
}

TFC_API CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                             cuuint64_t flags,
                                             CUdriverProcAddressQueryResult *symbolStatus)
{
    return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

TFC_API CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                          cuuint64_t flags)
{
    return lookup(symbol, pfn, cudaVersion, flags, NULL);
}
