/* SPDX-License-Identifier: Apache-2.0
 *
 * VRAM hooks: every allocation entry point reserves its bytes in the workload's region
 * first (an atomic CAS that fails if the workload would exceed its limit -> the call returns
 * CUDA_ERROR_OUT_OF_MEMORY and the app keeps working), allocates for real, and gives the
 * reservation back if the driver fails. Sizes are remembered per pointer/handle, so frees
 * give back exactly what was taken. Memory queries report the limit as total and the
 * workload's use (all its processes) as used.
 */
#include "limiter/pass.h"

#include "common/err.h"
#include "common/log.h"
#include "limits/proc.h"
#include "limits/shm.h"

static __thread unsigned hb_tick __attribute__((tls_model("initial-exec")));

bool tf__reserve(int idx, uint64_t bytes)
{
    if (idx < 0 || !tf__L.r)
        return true;
    if ((hb_tick++ & 63) == 0) /* a clock read per 64 allocations, not per allocation */
        tf__check_heartbeat(tf__now_ns());
    int slot = tf__slot();
    int rc = tf_shm_vram_reserve(tf__L.r, (unsigned)idx, slot, bytes);
    if (rc == TF_ENOSPC) {
        /* Before refusing: a peer killed with SIGKILL may still hold reservations. */
        uint64_t now = tf__now_ns(), ns = tf_proc_pidns(0);
        tf__check_heartbeat(now);
        if (tf_shm_reap(tf__L.r, tf__L.owner, now, tf_proc_alive, &ns) > 0)
            rc = tf_shm_vram_reserve(tf__L.r, (unsigned)idx, slot, bytes);
    }
    return rc == 0;
}

void tf__unreserve(int idx, uint64_t bytes)
{
    if (idx >= 0 && tf__L.r)
        tf_shm_vram_release(tf__L.r, (unsigned)idx, tf__slot(), bytes);
}

static uint64_t cur_ctx(void)
{
    CUcontext c = NULL;
    CUresult rc;
    TF_CALL(rc, cuCtxGetCurrent, &c);
    return rc == CUDA_SUCCESS ? (uint64_t)(uintptr_t)c : 0;
}

static void track(struct tf_ptrtab *t, uint64_t key, uint64_t bytes, int idx, uint64_t ctx)
{
    if (tf_ptrtab_put(t, key, bytes, (uint32_t)idx, ctx))
        return;
    int expect = 0;
    if (atomic_compare_exchange_strong(&tf__L.untracked_logged, &expect, 1))
        tf_log(TF_LOG_WARN, TF_LIM_SUBSYS,
               "out of memory for the allocation table: an allocation of %llu bytes stays "
               "counted until the process exits",
               (unsigned long long)bytes);
}

/* Claims KEY in TABLE, makes CALL (the real free, setting rc_), then forgets KEY and gives
 * its bytes back if the free succeeded, or puts it back if it failed; returns rc_. */
#define UNTRACK_AND_FREE(table, key, call)                                                         \
    do {                                                                                           \
        struct tf_ptrtab_val v_;                                                                   \
        uintptr_t h_ = tf__L.r ? tf_ptrtab_take(&(table), (uint64_t)(key), &v_) : 0;               \
        CUresult rc_;                                                                              \
        call;                                                                                      \
        if (h_) {                                                                                  \
            if (rc_ == CUDA_SUCCESS) {                                                             \
                tf_ptrtab_done(h_);                                                                \
                tf__unreserve((int)v_.idx, v_.bytes);                                              \
            } else {                                                                               \
                tf_ptrtab_restore(h_);                                                             \
            }                                                                                      \
        }                                                                                          \
        return rc_;                                                                                \
    } while (0)

/* --- linear allocations ---------------------------------------------------------------- */

CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    TF_PASS_IF_NESTED(cuMemAlloc_v2, dptr, bytesize);
    CUresult rc;
    int idx = bytesize && dptr ? tf__cur_idx() : -1;
    if (!tf__reserve(idx, bytesize))
        return CUDA_ERROR_OUT_OF_MEMORY;
    TF_CALL(rc, cuMemAlloc_v2, dptr, bytesize);
    if (idx >= 0) {
        if (rc == CUDA_SUCCESS)
            track(&tf__L.mem, *dptr, bytesize, idx, cur_ctx());
        else
            tf__unreserve(idx, bytesize);
    }
    return rc;
}

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    TF_PASS_IF_NESTED(cuMemAllocManaged, dptr, bytesize, flags);
    CUresult rc;
    int idx = bytesize && dptr ? tf__cur_idx() : -1;
    if (!tf__reserve(idx, bytesize))
        return CUDA_ERROR_OUT_OF_MEMORY;
    TF_CALL(rc, cuMemAllocManaged, dptr, bytesize, flags);
    if (idx >= 0) {
        if (rc == CUDA_SUCCESS)
            track(&tf__L.mem, *dptr, bytesize, idx, cur_ctx());
        else
            tf__unreserve(idx, bytesize);
    }
    return rc;
}

/* Rows are padded by the driver; reserve for a 512-byte pitch, then settle to the real one. */
#define PITCH_GUESS 512u

CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                    size_t Height, unsigned int ElementSizeBytes)
{
    TF_PASS_IF_NESTED(cuMemAllocPitch_v2, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    CUresult rc;
    int idx = dptr && pPitch && WidthInBytes && Height ? tf__cur_idx() : -1;
    unsigned __int128 guess =
        (unsigned __int128)((WidthInBytes + PITCH_GUESS - 1) / PITCH_GUESS * PITCH_GUESS) * Height;
    if (idx >= 0 && guess > (unsigned __int128)INT64_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t reserved = idx >= 0 ? (uint64_t)guess : 0;
    if (!tf__reserve(idx, reserved))
        return CUDA_ERROR_OUT_OF_MEMORY;
    TF_CALL(rc, cuMemAllocPitch_v2, dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (idx < 0)
        return rc;
    if (rc != CUDA_SUCCESS) {
        tf__unreserve(idx, reserved);
        return rc;
    }
    uint64_t actual = (uint64_t)*pPitch * Height;
    if (actual > reserved) {
        if (!tf__reserve(idx, actual - reserved)) {
            CUresult frc;
            TF_CALL(frc, cuMemFree_v2, *dptr);
            (void)frc;
            tf__unreserve(idx, reserved);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    } else if (actual < reserved) {
        tf__unreserve(idx, reserved - actual);
    }
    track(&tf__L.mem, *dptr, actual, idx, cur_ctx());
    return rc;
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    TF_PASS_IF_NESTED(cuMemFree_v2, dptr);
    UNTRACK_AND_FREE(tf__L.mem, dptr, TF_CALL(rc_, cuMemFree_v2, dptr));
}

/* --- stream-ordered allocations --------------------------------------------------------- */

/* True when H (PTSZ: a per-thread-stream entry point) is capturing: an allocation there
 * makes a graph allocation node, accounted when the graph is instantiated (hook_graph.c). */
static bool capturing(CUstream h, bool ptsz)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult rc;
    if (ptsz)
        TF_CALL(rc, cuStreamIsCapturing_ptsz, h, &st);
    else
        TF_CALL(rc, cuStreamIsCapturing, h, &st);
    return rc == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
}

#define ALLOC_ASYNC(name, ptsz, ...)                                                               \
    TF_PASS_IF_NESTED(name, __VA_ARGS__);                                                          \
    CUresult rc;                                                                                   \
    if (tf__L.r && capturing(hStream, ptsz)) {                                                     \
        TF_CALL(rc, name, __VA_ARGS__);                                                            \
        return rc;                                                                                 \
    }                                                                                              \
    int idx = bytesize && dptr ? tf__cur_idx() : -1;                                               \
    if (!tf__reserve(idx, bytesize))                                                               \
        return CUDA_ERROR_OUT_OF_MEMORY;                                                           \
    TF_CALL(rc, name, __VA_ARGS__);                                                                \
    if (idx >= 0) {                                                                                \
        if (rc == CUDA_SUCCESS)                                                                    \
            track(&tf__L.mem, *dptr, bytesize, idx, cur_ctx());                                    \
        else                                                                                       \
            tf__unreserve(idx, bytesize);                                                          \
    }                                                                                              \
    return rc

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    ALLOC_ASYNC(cuMemAllocAsync, false, dptr, bytesize, hStream);
}

CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    ALLOC_ASYNC(cuMemAllocAsync_ptsz, true, dptr, bytesize, hStream);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                         CUstream hStream)
{
    ALLOC_ASYNC(cuMemAllocFromPoolAsync, false, dptr, bytesize, pool, hStream);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream)
{
    ALLOC_ASYNC(cuMemAllocFromPoolAsync_ptsz, true, dptr, bytesize, pool, hStream);
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    TF_PASS_IF_NESTED(cuMemFreeAsync, dptr, hStream);
    UNTRACK_AND_FREE(tf__L.mem, dptr, TF_CALL(rc_, cuMemFreeAsync, dptr, hStream));
}

CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    TF_PASS_IF_NESTED(cuMemFreeAsync_ptsz, dptr, hStream);
    UNTRACK_AND_FREE(tf__L.mem, dptr, TF_CALL(rc_, cuMemFreeAsync_ptsz, dptr, hStream));
}

/* --- virtual memory management ------------------------------------------------------------ */

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                             const CUmemAllocationProp *prop, unsigned long long flags)
{
    TF_PASS_IF_NESTED(cuMemCreate, handle, size, prop, flags);
    CUresult rc;
    int idx = -1;
    if (handle && size && prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        idx = tf__idx_of_dev((CUdevice)prop->location.id);
    if (!tf__reserve(idx, size))
        return CUDA_ERROR_OUT_OF_MEMORY;
    TF_CALL(rc, cuMemCreate, handle, size, prop, flags);
    if (idx >= 0) {
        if (rc == CUDA_SUCCESS)
            track(&tf__L.vmm, (uint64_t)*handle, size, idx, 0);
        else
            tf__unreserve(idx, size);
    }
    return rc;
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
    TF_PASS_IF_NESTED(cuMemRelease, handle);
    UNTRACK_AND_FREE(tf__L.vmm, handle, TF_CALL(rc_, cuMemRelease, handle));
}

/* --- arrays ------------------------------------------------------------------------------ */

static uint64_t format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 4; /* packed and block-compressed formats: a conservative 4 bytes/element */
    }
}

/* Nominal bytes of a WxHxD array (0 for dimensions that are unused), saturating. */
static uint64_t array_bytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned ch)
{
    unsigned __int128 b = (unsigned __int128)(w ? w : 1) * (h ? h : 1) * (d ? d : 1) *
                          format_bytes(f) * (ch ? ch : 1);
    return b > (unsigned __int128)INT64_MAX ? (uint64_t)INT64_MAX : (uint64_t)b;
}

CUresult CUDAAPI cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d)
{
    TF_PASS_IF_NESTED(cuArrayCreate_v2, pHandle, d);
    CUresult rc;
    int idx = pHandle && d ? tf__cur_idx() : -1;
    uint64_t bytes = d ? array_bytes(d->Width, d->Height, 0, d->Format, d->NumChannels) : 0;
    if (!tf__reserve(idx, bytes))
        return CUDA_ERROR_OUT_OF_MEMORY;
    TF_CALL(rc, cuArrayCreate_v2, pHandle, d);
    if (idx >= 0) {
        if (rc == CUDA_SUCCESS)
            track(&tf__L.arr, (uint64_t)(uintptr_t)*pHandle, bytes, idx, cur_ctx());
        else
            tf__unreserve(idx, bytes);
    }
    return rc;
}

CUresult CUDAAPI cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    TF_PASS_IF_NESTED(cuArray3DCreate_v2, pHandle, d);
    CUresult rc;
    int idx = pHandle && d ? tf__cur_idx() : -1;
    uint64_t bytes = d ? array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels) : 0;
    if (!tf__reserve(idx, bytes))
        return CUDA_ERROR_OUT_OF_MEMORY;
    TF_CALL(rc, cuArray3DCreate_v2, pHandle, d);
    if (idx >= 0) {
        if (rc == CUDA_SUCCESS)
            track(&tf__L.arr, (uint64_t)(uintptr_t)*pHandle, bytes, idx, cur_ctx());
        else
            tf__unreserve(idx, bytes);
    }
    return rc;
}

CUresult CUDAAPI cuArrayDestroy(CUarray hArray)
{
    TF_PASS_IF_NESTED(cuArrayDestroy, hArray);
    UNTRACK_AND_FREE(tf__L.arr, (uintptr_t)hArray, TF_CALL(rc_, cuArrayDestroy, hArray));
}

static uint64_t mipmap_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    bool layered = d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
    unsigned __int128 sum = 0;
    for (unsigned l = 0; l < levels && l < 64; l++) {
        size_t w = d->Width >> l, h = d->Height >> l, dd = layered ? d->Depth : d->Depth >> l;
        sum += array_bytes(w ? w : 1, d->Height ? (h ? h : 1) : 0, d->Depth ? (dd ? dd : 1) : 0,
                           d->Format, d->NumChannels);
    }
    return sum > (unsigned __int128)INT64_MAX ? (uint64_t)INT64_MAX : (uint64_t)sum;
}

CUresult CUDAAPI cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                        const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                        unsigned int numMipmapLevels)
{
    TF_PASS_IF_NESTED(cuMipmappedArrayCreate, pHandle, pMipmappedArrayDesc, numMipmapLevels);
    CUresult rc;
    const CUDA_ARRAY3D_DESCRIPTOR *d = pMipmappedArrayDesc;
    int idx = pHandle && d ? tf__cur_idx() : -1;
    uint64_t bytes = d ? mipmap_bytes(d, numMipmapLevels ? numMipmapLevels : 1) : 0;
    if (!tf__reserve(idx, bytes))
        return CUDA_ERROR_OUT_OF_MEMORY;
    TF_CALL(rc, cuMipmappedArrayCreate, pHandle, d, numMipmapLevels);
    if (idx >= 0) {
        if (rc == CUDA_SUCCESS)
            track(&tf__L.arr, (uint64_t)(uintptr_t)*pHandle, bytes, idx, cur_ctx());
        else
            tf__unreserve(idx, bytes);
    }
    return rc;
}

CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    TF_PASS_IF_NESTED(cuMipmappedArrayDestroy, hMipmappedArray);
    UNTRACK_AND_FREE(tf__L.arr, (uintptr_t)hMipmappedArray,
                     TF_CALL(rc_, cuMipmappedArrayDestroy, hMipmappedArray));
}

/* --- queries ----------------------------------------------------------------------------- */

CUresult CUDAAPI cuMemGetInfo_v2(size_t *free, size_t *total)
{
    TF_PASS_IF_NESTED(cuMemGetInfo_v2, free, total);
    CUresult rc;
    TF_CALL(rc, cuMemGetInfo_v2, free, total);
    if (rc != CUDA_SUCCESS || !free || !total)
        return rc;
    int idx = tf__cur_idx();
    if (idx >= 0) {
        uint64_t f, t;
        tf_shm_vram_view(tf__L.r, (unsigned)idx, *free, *total, &f, &t);
        *free = (size_t)f;
        *total = (size_t)t;
    }
    return rc;
}
