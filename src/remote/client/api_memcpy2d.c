/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so: 2D and 3D copies (cuMemcpy2D*, cuMemcpy3D*) and 2D memsets (cuMemsetD2D*),
 * decomposed into the 1D copies and memsets of api_mem.c: one per row, or one for the whole
 * rectangle when its rows are contiguous on both sides. Host rows are read from and written
 * to the caller's memory, device rows are checked against this process's allocations as 1D
 * copies are. Arrays (CU_MEMORYTYPE_ARRAY) cannot be forwarded: CUDA_ERROR_NOT_SUPPORTED.
 * The synchronous forms wait for all their rows with one round trip.
 */
#include "remote/client/client.h"

#include "common/log.h"

#include <string.h>

/* One side of a copy: memory type, base and the rectangle's origin and pitches. */
struct side {
    CUmemorytype type; /* HOST or DEVICE after resolve() */
    uintptr_t base;    /* host address or device pointer */
    size_t x, y, z, pitch, height;
};

/* Host or device for CU_MEMORYTYPE_UNIFIED (a pointer of ours is device memory). */
static CUresult resolve(struct side *s, CUmemorytype type, const void *host, CUdeviceptr dev,
                        CUarray array)
{
    if (type == CU_MEMORYTYPE_ARRAY || array) {
        static int logged;
        if (!__atomic_exchange_n(&logged, 1, __ATOMIC_RELAXED))
            tf_log(TF_LOG_WARN, "client",
                   "CUDA arrays cannot be forwarded: copy to or from an array is "
                   "CUDA_ERROR_NOT_SUPPORTED");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (type == CU_MEMORYTYPE_HOST) {
        s->type = CU_MEMORYTYPE_HOST;
        s->base = (uintptr_t)host;
    } else if (type == CU_MEMORYTYPE_DEVICE) {
        s->type = CU_MEMORYTYPE_DEVICE;
        s->base = (uintptr_t)dev;
    } else if (type == CU_MEMORYTYPE_UNIFIED) {
        s->base = (uintptr_t)dev;
        s->type = tfc_is_dev(dev, 1) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    } else {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return s->base ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static uintptr_t at(const struct side *s, size_t y, size_t z)
{
    return s->base + ((s->z + z) * s->height + s->y + y) * s->pitch + s->x;
}

/* Copies N bytes from S to D (each host or device) on stream HS. */
static CUresult copy1(const struct side *d, uintptr_t dp, const struct side *s, uintptr_t sp,
                      size_t n, CUstream hs)
{
    if (d->type == CU_MEMORYTYPE_DEVICE && s->type == CU_MEMORYTYPE_DEVICE)
        return tfc_dtod(dp, sp, n, hs);
    if (d->type == CU_MEMORYTYPE_DEVICE)
        return tfc_htod(dp, (const void *)sp, n, hs, 0);
    if (s->type == CU_MEMORYTYPE_DEVICE)
        return tfc_dtoh((void *)dp, sp, n, hs, 0);
    memmove((void *)dp, (const void *)sp, n);
    return CUDA_SUCCESS;
}

static CUresult copy_box(struct side *d, struct side *s, size_t width, size_t height, size_t depth,
                         CUstream hs, int sync)
{
    if (width == 0 || height == 0 || depth == 0)
        return CUDA_SUCCESS;
    if ((height > 1 || depth > 1) && (s->pitch < width || d->pitch < width))
        return CUDA_ERROR_INVALID_VALUE;
    if (depth > 1 && (s->height < height || d->height < height))
        return CUDA_ERROR_INVALID_VALUE;
    if (d->type == CU_MEMORYTYPE_HOST && s->type == CU_MEMORYTYPE_HOST) {
        /* Host to host: ordered after the stream's work, like the driver. */
        CUresult r = sync ? cuCtxSynchronize() : cuStreamSynchronize(hs);
        for (size_t z = 0; !r && z < depth; z++)
            for (size_t y = 0; y < height; y++)
                memmove((void *)at(d, y, z), (const void *)at(s, y, z), width);
        return r;
    }
    CUresult r = CUDA_SUCCESS;
    int flat = s->pitch == width && d->pitch == width &&
               (depth == 1 || (s->height == height && d->height == height));
    if (flat)
        r = copy1(d, at(d, 0, 0), s, at(s, 0, 0), width * height * depth, hs);
    for (size_t z = 0; !flat && !r && z < depth; z++)
        for (size_t y = 0; !r && y < height; y++)
            r = copy1(d, at(d, y, z), s, at(s, y, z), width, hs);
    if (!r && sync)
        r = tfc_copies_done();
    return r;
}

static CUresult copy2d(const CUDA_MEMCPY2D *p, CUstream hs, int sync)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    struct side s = {.x = p->srcXInBytes, .y = p->srcY, .pitch = p->srcPitch, .height = 0};
    struct side d = {.x = p->dstXInBytes, .y = p->dstY, .pitch = p->dstPitch, .height = 0};
    CUresult r = resolve(&s, p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray);
    if (!r)
        r = resolve(&d, p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray);
    if (r)
        return r;
    s.height = d.height = p->Height + p->srcY + p->dstY; /* only one z layer */
    return copy_box(&d, &s, p->WidthInBytes, p->Height, 1, hs, sync);
}

static CUresult copy3d(const CUDA_MEMCPY3D *p, CUstream hs, int sync)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    struct side s = {.x = p->srcXInBytes,
                     .y = p->srcY,
                     .z = p->srcZ,
                     .pitch = p->srcPitch,
                     .height = p->srcHeight};
    struct side d = {.x = p->dstXInBytes,
                     .y = p->dstY,
                     .z = p->dstZ,
                     .pitch = p->dstPitch,
                     .height = p->dstHeight};
    if (p->srcLOD || p->dstLOD)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = resolve(&s, p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray);
    if (!r)
        r = resolve(&d, p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray);
    if (r)
        return r;
    if (p->Depth <= 1) { /* a single layer needs no layer height */
        if (!s.height)
            s.height = p->Height + p->srcY;
        if (!d.height)
            d.height = p->Height + p->dstY;
    }
    return copy_box(&d, &s, p->WidthInBytes, p->Height, p->Depth, hs, sync);
}

TFC_API CUresult CUDAAPI cuMemcpy2D(const CUDA_MEMCPY2D *pCopy)
{
    return copy2d(pCopy, NULL, 1);
}

TFC_API CUresult CUDAAPI cuMemcpy2DUnaligned(const CUDA_MEMCPY2D *pCopy)
{
    return copy2d(pCopy, NULL, 1);
}

TFC_API CUresult CUDAAPI cuMemcpy2DAsync(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    return copy2d(pCopy, hStream, 0);
}

TFC_API CUresult CUDAAPI cuMemcpy3D(const CUDA_MEMCPY3D *pCopy)
{
    return copy3d(pCopy, NULL, 1);
}

TFC_API CUresult CUDAAPI cuMemcpy3DAsync(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
    return copy3d(pCopy, hStream, 0);
}

/* ---- 2D memsets ---------------------------------------------------------------------------- */

static CUresult memset2d(CUdeviceptr dst, size_t pitch, uint32_t value, uint32_t elem, size_t width,
                         size_t height, CUstream hs)
{
    if (width == 0 || height == 0)
        return CUDA_SUCCESS;
    if (height > 1 && pitch < width * elem)
        return CUDA_ERROR_INVALID_VALUE;
    if (pitch == width * elem)
        return tfc_memset(dst, value, width * height, elem, hs);
    CUresult r = CUDA_SUCCESS;
    for (size_t y = 0; !r && y < height; y++)
        r = tfc_memset(dst + y * pitch, value, width, elem, hs);
    return r;
}

TFC_API CUresult CUDAAPI cuMemsetD2D8(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                      size_t Width, size_t Height)
{
    return memset2d(dstDevice, dstPitch, uc, 1, Width, Height, NULL);
}

TFC_API CUresult CUDAAPI cuMemsetD2D16(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
                                       size_t Width, size_t Height)
{
    return memset2d(dstDevice, dstPitch, us, 2, Width, Height, NULL);
}

TFC_API CUresult CUDAAPI cuMemsetD2D32(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                       size_t Width, size_t Height)
{
    return memset2d(dstDevice, dstPitch, ui, 4, Width, Height, NULL);
}

TFC_API CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
                                           size_t Width, size_t Height, CUstream hStream)
{
    return memset2d(dstDevice, dstPitch, uc, 1, Width, Height, hStream);
}

TFC_API CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch,
                                            unsigned short us, size_t Width, size_t Height,
                                            CUstream hStream)
{
    return memset2d(dstDevice, dstPitch, us, 2, Width, Height, hStream);
}

TFC_API CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
                                            size_t Width, size_t Height, CUstream hStream)
{
    return memset2d(dstDevice, dstPitch, ui, 4, Width, Height, hStream);
}
