/* SPDX-License-Identifier: Apache-2.0
 *
 * The real CUDA driver as tf-worker sees it: libcuda.so.1 opened with dlopen (the simulated
 * GPU in tests and CI, the NVIDIA driver on a GPU node) and the entry points the worker calls,
 * resolved by their exact versioned ABI names. One X-macro list below generates the table's
 * fields and the symbol lookups. Private to the worker.
 *
 * A tf_drv is filled once at start-up and read-only afterwards: thread-safe to share between
 * connection threads (the driver itself is thread-safe).
 */
#ifndef TF_REMOTE_WORKER_DRIVER_H
#define TF_REMOTE_WORKER_DRIVER_H

#include "remote/calls.h"

#include <cudaTypedefs.h>
#include <stddef.h>

/* clang-format off */
/* X(FIELD, SYMBOL, PFN TYPE, REQUIRED). Optional entries may be NULL; the operations that need
 * them answer CUDA_ERROR_NOT_SUPPORTED (a driver without modules still serves memory, streams
 * and events). */
#define TF_DRV_FUNCS(X)                                                                          \
    X(init,               "cuInit",                     PFN_cuInit_v2000,                  1)    \
    X(driverGetVersion,   "cuDriverGetVersion",         PFN_cuDriverGetVersion_v2020,      1)    \
    X(getErrorName,       "cuGetErrorName",             PFN_cuGetErrorName_v6000,          1)    \
    X(deviceGet,          "cuDeviceGet",                PFN_cuDeviceGet_v2000,             1)    \
    X(deviceGetCount,     "cuDeviceGetCount",           PFN_cuDeviceGetCount_v2000,        1)    \
    X(deviceGetName,      "cuDeviceGetName",            PFN_cuDeviceGetName_v2000,         1)    \
    X(deviceGetUuid,      "cuDeviceGetUuid_v2",         PFN_cuDeviceGetUuid_v11040,        0)    \
    X(deviceGetUuid1,     "cuDeviceGetUuid",            PFN_cuDeviceGetUuid_v9020,         0)    \
    X(deviceTotalMem,     "cuDeviceTotalMem_v2",        PFN_cuDeviceTotalMem_v3020,        1)    \
    X(deviceGetAttribute, "cuDeviceGetAttribute",       PFN_cuDeviceGetAttribute_v2000,    1)    \
    X(ctxCreate4,         "cuCtxCreate_v4",             PFN_cuCtxCreate_v12050,            0)    \
    X(ctxCreate2,         "cuCtxCreate_v2",             PFN_cuCtxCreate_v3020,             0)    \
    X(ctxDestroy,         "cuCtxDestroy_v2",            PFN_cuCtxDestroy_v4000,            1)    \
    X(ctxSetCurrent,      "cuCtxSetCurrent",            PFN_cuCtxSetCurrent_v4000,         1)    \
    X(ctxGetCurrent,      "cuCtxGetCurrent",            PFN_cuCtxGetCurrent_v4000,         0)    \
    X(ctxSynchronize,     "cuCtxSynchronize",           PFN_cuCtxSynchronize_v2000,        1)    \
    X(memAlloc,           "cuMemAlloc_v2",              PFN_cuMemAlloc_v3020,              1)    \
    X(memAllocPitch,      "cuMemAllocPitch_v2",         PFN_cuMemAllocPitch_v3020,         0)    \
    X(memFree,            "cuMemFree_v2",               PFN_cuMemFree_v3020,               1)    \
    X(memGetInfo,         "cuMemGetInfo_v2",            PFN_cuMemGetInfo_v3020,            1)    \
    X(memcpyHtoD,         "cuMemcpyHtoD_v2",            PFN_cuMemcpyHtoD_v3020,            1)    \
    X(memcpyHtoDAsync,    "cuMemcpyHtoDAsync_v2",       PFN_cuMemcpyHtoDAsync_v3020,       1)    \
    X(memcpyDtoH,         "cuMemcpyDtoH_v2",            PFN_cuMemcpyDtoH_v3020,            1)    \
    X(memcpyDtoHAsync,    "cuMemcpyDtoHAsync_v2",       PFN_cuMemcpyDtoHAsync_v3020,       1)    \
    X(memcpyDtoDAsync,    "cuMemcpyDtoDAsync_v2",       PFN_cuMemcpyDtoDAsync_v3020,       1)    \
    X(memsetD8Async,      "cuMemsetD8Async",            PFN_cuMemsetD8Async_v3020,         1)    \
    X(memsetD16Async,     "cuMemsetD16Async",           PFN_cuMemsetD16Async_v3020,        1)    \
    X(memsetD32Async,     "cuMemsetD32Async",           PFN_cuMemsetD32Async_v3020,        1)    \
    X(memHostAlloc,       "cuMemHostAlloc",             PFN_cuMemHostAlloc_v2020,          0)    \
    X(memFreeHost,        "cuMemFreeHost",              PFN_cuMemFreeHost_v2000,           0)    \
    X(primaryCtxRetain,   "cuDevicePrimaryCtxRetain",   PFN_cuDevicePrimaryCtxRetain_v7000, 0)   \
    X(primaryCtxRelease,  "cuDevicePrimaryCtxRelease_v2", PFN_cuDevicePrimaryCtxRelease_v11000, 0) \
    X(pointerGetAttribute,"cuPointerGetAttribute",      PFN_cuPointerGetAttribute_v4000,   0)    \
    X(moduleLoadDataEx,   "cuModuleLoadDataEx",         PFN_cuModuleLoadDataEx_v2010,      0)    \
    X(moduleLoadData,     "cuModuleLoadData",           PFN_cuModuleLoadData_v2000,        0)    \
    X(moduleUnload,       "cuModuleUnload",             PFN_cuModuleUnload_v2000,          0)    \
    X(moduleGetFunction,  "cuModuleGetFunction",        PFN_cuModuleGetFunction_v2000,     0)    \
    X(moduleGetGlobal,    "cuModuleGetGlobal_v2",       PFN_cuModuleGetGlobal_v3020,       0)    \
    X(moduleGetFunctionCount, "cuModuleGetFunctionCount", PFN_cuModuleGetFunctionCount_v12040, 0) \
    X(moduleEnumerateFunctions, "cuModuleEnumerateFunctions",                                    \
                                                  PFN_cuModuleEnumerateFunctions_v12040,   0)    \
    X(funcGetName,        "cuFuncGetName",              PFN_cuFuncGetName_v12030,          0)    \
    X(funcGetAttribute,   "cuFuncGetAttribute",         PFN_cuFuncGetAttribute_v2020,      0)    \
    X(funcSetAttribute,   "cuFuncSetAttribute",         PFN_cuFuncSetAttribute_v9000,      0)    \
    X(funcGetParamInfo,   "cuFuncGetParamInfo",         PFN_cuFuncGetParamInfo_v12040,     0)    \
    X(libraryLoadData,    "cuLibraryLoadData",          PFN_cuLibraryLoadData_v12000,      0)    \
    X(libraryUnload,      "cuLibraryUnload",            PFN_cuLibraryUnload_v12000,        0)    \
    X(libraryGetKernel,   "cuLibraryGetKernel",         PFN_cuLibraryGetKernel_v12000,     0)    \
    X(libraryGetGlobal,   "cuLibraryGetGlobal",         PFN_cuLibraryGetGlobal_v12000,     0)    \
    X(libraryGetKernelCount, "cuLibraryGetKernelCount", PFN_cuLibraryGetKernelCount_v12040, 0)   \
    X(libraryEnumerateKernels, "cuLibraryEnumerateKernels",                                      \
                                                  PFN_cuLibraryEnumerateKernels_v12040,    0)    \
    X(kernelGetName,      "cuKernelGetName",            PFN_cuKernelGetName_v12030,        0)    \
    X(kernelGetFunction,  "cuKernelGetFunction",        PFN_cuKernelGetFunction_v12000,    0)    \
    X(kernelSetAttribute, "cuKernelSetAttribute",       PFN_cuKernelSetAttribute_v12000,   0)    \
    X(launchKernel,       "cuLaunchKernel",             PFN_cuLaunchKernel_v4000,          0)    \
    X(launchKernelEx,     "cuLaunchKernelEx",           PFN_cuLaunchKernelEx_v11060,       0)    \
    X(streamCreate,       "cuStreamCreate",             PFN_cuStreamCreate_v2000,          1)    \
    X(streamCreateWithPriority, "cuStreamCreateWithPriority",                                    \
                                                  PFN_cuStreamCreateWithPriority_v5050,    0)    \
    X(streamDestroy,      "cuStreamDestroy_v2",         PFN_cuStreamDestroy_v4000,         1)    \
    X(streamSynchronize,  "cuStreamSynchronize",        PFN_cuStreamSynchronize_v2000,     1)    \
    X(streamQuery,        "cuStreamQuery",              PFN_cuStreamQuery_v2000,           1)    \
    X(streamWaitEvent,    "cuStreamWaitEvent",          PFN_cuStreamWaitEvent_v3020,       1)    \
    X(streamIsCapturing,  "cuStreamIsCapturing",        PFN_cuStreamIsCapturing_v10000,    0)    \
    X(graphGetNodes,      "cuGraphGetNodes",            PFN_cuGraphGetNodes_v10000,        0)    \
    X(graphAddKernelNode, "cuGraphAddKernelNode_v2",    PFN_cuGraphAddKernelNode_v12000,   0)    \
    X(graphNodeGetType,   "cuGraphNodeGetType",         PFN_cuGraphNodeGetType_v10000,     0)    \
    X(graphMemAllocNodeGetParams, "cuGraphMemAllocNodeGetParams",                                \
                                            PFN_cuGraphMemAllocNodeGetParams_v11040,       0)    \
    X(exchangeCaptureMode, "cuThreadExchangeStreamCaptureMode",                                  \
                                            PFN_cuThreadExchangeStreamCaptureMode_v10010,  0)    \
    X(eventCreate,        "cuEventCreate",              PFN_cuEventCreate_v2000,           1)    \
    X(eventDestroy,       "cuEventDestroy_v2",          PFN_cuEventDestroy_v4000,          1)    \
    X(eventRecord,        "cuEventRecord",              PFN_cuEventRecord_v2000,           1)    \
    X(eventRecordWithFlags, "cuEventRecordWithFlags",   PFN_cuEventRecordWithFlags_v11010, 0)    \
    X(eventQuery,         "cuEventQuery",               PFN_cuEventQuery_v2000,            1)    \
    X(eventSynchronize,   "cuEventSynchronize",         PFN_cuEventSynchronize_v2000,      1)    \
    X(eventElapsedTime2,  "cuEventElapsedTime_v2",      PFN_cuEventElapsedTime_v12080,     0)    \
    X(eventElapsedTime1,  "cuEventElapsedTime",         PFN_cuEventElapsedTime_v2000,      0)
/* clang-format on */

struct tf_drv {
    void *dl; /* dlopen handle */
#define TF__DRV_FIELD(field, sym, type, req) type field;
    TF_DRV_FUNCS(TF__DRV_FIELD)
#undef TF__DRV_FIELD
    /* The plain forwarded calls (calls.def), by TF_CALL_IDX_*: SYMBOL, else FALLBACK, else
     * NULL (the call answers CUDA_ERROR_NOT_SUPPORTED). */
    void *call[TF_CALL_COUNT];
};

/* Opens PATH (NULL: "libcuda.so.1", found through LD_LIBRARY_PATH like any CUDA program) and
 * resolves the table; a missing required symbol is an error naming it (TF_ENOENT), as is a
 * driver that has neither cuCtxCreate_v4 nor _v2 or neither cuDeviceGetUuid variant. */
int tf_drv_open(struct tf_drv *d, const char *path, char *err, size_t errlen);
void tf_drv_close(struct tf_drv *d);

/* Creates a context with FLAGS on DEV, current on the calling thread afterwards. */
CUresult tf_drv_ctx_create(const struct tf_drv *d, CUcontext *ctx, unsigned flags, CUdevice dev);
CUresult tf_drv_device_uuid(const struct tf_drv *d, CUuuid *uuid, CUdevice dev);
CUresult tf_drv_elapsed(const struct tf_drv *d, float *ms, CUevent start, CUevent end);
/* "CUDA_ERROR_INVALID_VALUE" for logs ("CUresult N" when the driver does not know it). */
const char *tf_drv_err_name(const struct tf_drv *d, CUresult r, char *buf, size_t len);

#endif
