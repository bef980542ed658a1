/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so: cuGetProcAddress (v1 and v2) over the generated table of every driver
 * entry point (procs.c: this library's implementation or a not-supported stub, the shared
 * lookup of src/exptab/procaddr.h), cuGetExportTable (the CUDA runtime's private tables,
 * src/exptab), and the hand-written per-thread-default-stream variants (_ptsz / _ptds) that
 * programs built with --default-stream per-thread link to (those of plain forwards are
 * generated with them, calls.def).
 *
 * Per-thread default stream: the _ptsz variants run on CU_STREAM_PER_THREAD when given the
 * NULL stream; the synchronous _ptds copies and memsets are the ordinary synchronous ones
 * (they synchronise at least as much as the per-thread versions would).
 */
#include "remote/client/client.h"

#include "exptab/exptab.h"
#include "exptab/procaddr.h"

#include <string.h>

/* Exact symbol names below, never cuda.h's version remaps. */
#undef cuGetProcAddress

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                  cuuint64_t flags);

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
    X(cuStreamGetFlags_ptsz, cuStreamGetFlags, (CUstream h, unsigned int *f), (ptsz(h), f))      \
    X(cuStreamGetPriority_ptsz, cuStreamGetPriority, (CUstream h, int *p), (ptsz(h), p))         \
    X(cuStreamGetCtx_ptsz, cuStreamGetCtx, (CUstream h, CUcontext *c), (ptsz(h), c))             \
    X(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel,                                 \
      (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,         \
       unsigned int by, unsigned int bz, unsigned int sm, CUstream h, void **kp),                \
      (f, gx, gy, gz, bx, by, bz, sm, ptsz(h), kp))                                              \
    X(cuMemcpy2DAsync_v2_ptsz, cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *p, CUstream h),       \
      (p, ptsz(h)))                                                                              \
    X(cuMemcpy3DAsync_v2_ptsz, cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *p, CUstream h),       \
      (p, ptsz(h)))                                                                              \
    X(cuMemsetD2D8Async_ptsz, cuMemsetD2D8Async,                                                 \
      (CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t hh, CUstream h),               \
      (d, p, v, w, hh, ptsz(h)))                                                                 \
    X(cuMemsetD2D16Async_ptsz, cuMemsetD2D16Async,                                               \
      (CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t hh, CUstream h),              \
      (d, p, v, w, hh, ptsz(h)))                                                                 \
    X(cuMemsetD2D32Async_ptsz, cuMemsetD2D32Async,                                               \
      (CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t hh, CUstream h),                \
      (d, p, v, w, hh, ptsz(h)))                                                                 \
    X(cuMemcpy2D_v2_ptds, cuMemcpy2D_v2, (const CUDA_MEMCPY2D *p), (p))                          \
    X(cuMemcpy2DUnaligned_v2_ptds, cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *p), (p))        \
    X(cuMemcpy3D_v2_ptds, cuMemcpy3D_v2, (const CUDA_MEMCPY3D *p), (p))                          \
    X(cuMemsetD2D8_v2_ptds, cuMemsetD2D8_v2,                                                     \
      (CUdeviceptr d, size_t p, unsigned char v, size_t w, size_t hh), (d, p, v, w, hh))         \
    X(cuMemsetD2D16_v2_ptds, cuMemsetD2D16_v2,                                                   \
      (CUdeviceptr d, size_t p, unsigned short v, size_t w, size_t hh), (d, p, v, w, hh))        \
    X(cuMemsetD2D32_v2_ptds, cuMemsetD2D32_v2,                                                   \
      (CUdeviceptr d, size_t p, unsigned int v, size_t w, size_t hh), (d, p, v, w, hh))          \
    X(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture_v2, (CUstream h, CUstreamCaptureMode m), \
      (ptsz(h), m))                                                                              \
    X(cuStreamEndCapture_ptsz, cuStreamEndCapture, (CUstream h, CUgraph *g), (ptsz(h), g))      \
    X(cuStreamGetCaptureInfo_v3_ptsz, cuStreamGetCaptureInfo_v3,                                 \
      (CUstream h, CUstreamCaptureStatus *s, cuuint64_t *i, CUgraph *g, const CUgraphNode **d,    \
       const CUgraphEdgeData **e, size_t *n),                                                    \
      (ptsz(h), s, i, g, d, e, n))                                                               \
    X(cuGraphLaunch_ptsz, cuGraphLaunch, (CUgraphExec e, CUstream h), (e, ptsz(h)))             \
    X(cuLaunchHostFunc_ptsz, cuLaunchHostFunc, (CUstream h, CUhostFn fn, void *u),              \
      (ptsz(h), fn, u))                                                                          \
    X(cuStreamAddCallback_ptsz, cuStreamAddCallback,                                             \
      (CUstream h, CUstreamCallback cb, void *u, unsigned int f), (ptsz(h), cb, u, f))            \
    X(cuLaunchKernel_ptsz, cuLaunchKernel,                                                       \
      (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,         \
       unsigned int by, unsigned int bz, unsigned int sm, CUstream h, void **kp, void **ex),     \
      (f, gx, gy, gz, bx, by, bz, sm, ptsz(h), kp, ex))                                          \
    X(cuMemAllocAsync_ptsz, cuMemAllocAsync, (CUdeviceptr *d, size_t n, CUstream h),          \
      (d, n, ptsz(h)))                                                                           \
    X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync,                                     \
      (CUdeviceptr *d, size_t n, CUmemoryPool p, CUstream h), (d, n, p, ptsz(h)))                \
    X(cuMemFreeAsync_ptsz, cuMemFreeAsync, (CUdeviceptr d, CUstream h), (d, ptsz(h)))           \
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

extern const struct tf_proc tfc_procs[]; /* procs.c */

static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status)
{
    return tf_procaddr_lookup(tfc_procs, "client", symbol, pfn, version, flags, status);
}

/* The CUDA runtime's private tables, over this library's own entry points (src/exptab). */
TFC_API CUresult CUDAAPI cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    return tf_exptab_get(ppExportTable, pExportTableId);
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
