/* SPDX-License-Identifier: Apache-2.0
 *
 * Pitched copies and memsets of the simulated driver: cuMemcpy2D / 2DUnaligned / 2DAsync,
 * cuMemcpy3D / 3DAsync (what cudaMemcpy2D/3D and their Async forms call) and cuMemsetD2D8 /
 * 16 / 32 and their Async forms (cudaMemset2D/3D), with the per-thread-stream variants.
 * Host, device and unified ends; CUDA arrays are not simulated (CUDA_ERROR_NOT_SUPPORTED).
 *
 * A pitched transfer is queued as one copy (or set) op per row on the stream, rows that are
 * contiguous on both sides merged into one op; the synchronous forms wait for the last op,
 * so they are ordered after earlier work like every other copy. Every row is checked before
 * anything is queued: a device end must lie inside one allocation the context's device can
 * access (INVALID_VALUE otherwise), and a pitch below the width is INVALID_VALUE.
 */
#include "sim/drv.h"

#include <string.h>

/* One end of a pitched transfer. */
struct end {
    CUmemorytype type;
    uint64_t base; /* address of (0, 0, 0) */
    size_t x, y, z, pitch, height;
};

/* Address of row (Y, Z) of end E. */
static uint64_t row_addr(const struct end *e, size_t y, size_t z)
{
    return e->base + (uint64_t)((e->z + z) * e->height + e->y + y) * e->pitch + e->x;
}

static CUresult check_row(CUcontext ctx, const struct end *e, uint64_t p, size_t n)
{
    if (e->type == CU_MEMORYTYPE_HOST)
        return CUDA_SUCCESS;
    if (tf__mem_range_ok(p, n, ctx->dev->index))
        return CUDA_SUCCESS;
    struct sim_alloc a;
    /* unified: an untracked address is host memory; one inside an allocation must fit */
    if (e->type == CU_MEMORYTYPE_UNIFIED && tf__mem_lookup(p, &a) != 0)
        return CUDA_SUCCESS;
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult end_of(CUmemorytype type, const void *host, CUdeviceptr dev, CUarray array,
                       size_t x, size_t y, size_t z, size_t pitch, size_t height, struct end *e)
{
    memset(e, 0, sizeof(*e));
    e->type = type;
    switch (type) {
    case CU_MEMORYTYPE_HOST:
        e->base = (uint64_t)(uintptr_t)host;
        break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED:
        e->base = (uint64_t)dev;
        break;
    case CU_MEMORYTYPE_ARRAY:
        (void)array;
        return CUDA_ERROR_NOT_SUPPORTED; /* CUDA arrays are not simulated */
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!e->base)
        return CUDA_ERROR_INVALID_VALUE;
    e->x = x;
    e->y = y;
    e->z = z;
    e->pitch = pitch;
    e->height = height;
    return CUDA_SUCCESS;
}

/* Copies WIDTH x HEIGHT x DEPTH bytes between S and D on stream H. */
static CUresult copy3d(CUstream h, int per_thread, int wait, const struct end *d,
                       const struct end *s, size_t width, size_t height, size_t depth)
{
    CUcontext ctx;
    struct CUstream_st *st;
    CUresult rc = tf__cur_stream(h, per_thread, 0, &ctx, &st);
    if (rc)
        return rc;
    if (!width || !height || !depth)
        return CUDA_SUCCESS;
    if ((height > 1 || depth > 1) && (d->pitch < d->x + width || s->pitch < s->x + width))
        return CUDA_ERROR_INVALID_VALUE;
    if (depth > 1 && (d->height < d->y + height || s->height < s->y + height))
        return CUDA_ERROR_INVALID_VALUE;
    if (height > SIZE_MAX / depth)
        return CUDA_ERROR_INVALID_VALUE;
    /* Rows that are contiguous on both sides (pitch == width) are one run. */
    int merge = d->pitch == width && s->pitch == width && d->x == 0 && s->x == 0;
    size_t rows = height * depth,
           run = merge && (depth == 1 || (d->height == height && s->height == height)) ? rows
                 : merge                                                               ? height
                                                                                       : 1;
    for (size_t r = 0; r < rows; r += run) {
        uint64_t dp = row_addr(d, r % height, r / height), sp = row_addr(s, r % height, r / height);
        if ((rc = check_row(ctx, d, dp, width * run)) || (rc = check_row(ctx, s, sp, width * run)))
            return rc;
    }
    for (size_t r = 0; r < rows; r += run) {
        struct sim_op *op = tf__op_new(OP_COPY);
        if (!op)
            return CUDA_ERROR_OUT_OF_MEMORY;
        uint64_t dp = row_addr(d, r % height, r / height), sp = row_addr(s, r % height, r / height);
        op->u.copy.dst = (void *)(uintptr_t)dp;
        op->u.copy.src = (const void *)(uintptr_t)sp;
        op->u.copy.n = width * run;
        op->u.copy.to_device =
            d->type != CU_MEMORYTYPE_HOST && tf__mem_range_ok(dp, width * run, ctx->dev->index);
        if ((rc = tf__enqueue(st, op, wait && r + run >= rows)))
            return rc;
    }
    return CUDA_SUCCESS;
}

static CUresult copy2d(const CUDA_MEMCPY2D *p, CUstream h, int per_thread, int wait)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    struct end d, s;
    if ((rc = end_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes,
                     p->dstY, 0, p->dstPitch, 0, &d)) ||
        (rc = end_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes,
                     p->srcY, 0, p->srcPitch, 0, &s)))
        return rc;
    return copy3d(h, per_thread, wait, &d, &s, p->WidthInBytes, p->Height, 1);
}

static CUresult copy3d_desc(const CUDA_MEMCPY3D *p, CUstream h, int per_thread, int wait)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!p || p->srcLOD || p->dstLOD)
        return CUDA_ERROR_INVALID_VALUE;
    struct end d, s;
    if ((rc = end_of(p->dstMemoryType, p->dstHost, p->dstDevice, p->dstArray, p->dstXInBytes,
                     p->dstY, p->dstZ, p->dstPitch, p->dstHeight, &d)) ||
        (rc = end_of(p->srcMemoryType, p->srcHost, p->srcDevice, p->srcArray, p->srcXInBytes,
                     p->srcY, p->srcZ, p->srcPitch, p->srcHeight, &s)))
        return rc;
    return copy3d(h, per_thread, wait, &d, &s, p->WidthInBytes, p->Height, p->Depth);
}

/* The entry points: NAME(descriptor[, stream]) -> IMPL on the legacy or per-thread stream. */
#define COPY(name, desc, impl, per_thread)                                                         \
    CUresult CUDAAPI name(const desc *pCopy)                                                       \
    {                                                                                              \
        return impl(pCopy, NULL, per_thread, 1);                                                   \
    }
#define COPY_ASYNC(name, desc, impl, per_thread)                                                   \
    CUresult CUDAAPI name(const desc *pCopy, CUstream hStream)                                     \
    {                                                                                              \
        return impl(pCopy, hStream, per_thread, 0);                                                \
    }
COPY(cuMemcpy2D, CUDA_MEMCPY2D, copy2d, 0)
COPY(cuMemcpy2D_v2_ptds, CUDA_MEMCPY2D, copy2d, 1)
COPY(cuMemcpy2DUnaligned, CUDA_MEMCPY2D, copy2d, 0)
COPY(cuMemcpy2DUnaligned_v2_ptds, CUDA_MEMCPY2D, copy2d, 1)
COPY_ASYNC(cuMemcpy2DAsync, CUDA_MEMCPY2D, copy2d, 0)
COPY_ASYNC(cuMemcpy2DAsync_v2_ptsz, CUDA_MEMCPY2D, copy2d, 1)
COPY(cuMemcpy3D, CUDA_MEMCPY3D, copy3d_desc, 0)
COPY(cuMemcpy3D_v2_ptds, CUDA_MEMCPY3D, copy3d_desc, 1)
COPY_ASYNC(cuMemcpy3DAsync, CUDA_MEMCPY3D, copy3d_desc, 0)
COPY_ASYNC(cuMemcpy3DAsync_v2_ptsz, CUDA_MEMCPY3D, copy3d_desc, 1)
#undef COPY
#undef COPY_ASYNC

/* ---- 2D memsets ------------------------------------------------------------------------ */

static CUresult set2d(CUstream h, int per_thread, int wait, CUdeviceptr dst, size_t pitch,
                      uint32_t v, size_t w, size_t height, int width)
{
    CUcontext ctx;
    struct CUstream_st *st;
    CUresult rc = tf__cur_stream(h, per_thread, 0, &ctx, &st);
    if (rc)
        return rc;
    if (!w || !height)
        return CUDA_SUCCESS;
    if (w > SIZE_MAX / (size_t)width || (dst % (CUdeviceptr)width) != 0 ||
        (height > 1 && pitch < w * (size_t)width))
        return CUDA_ERROR_INVALID_VALUE;
    size_t bytes = w * (size_t)width, run = pitch == bytes ? height : 1;
    for (size_t r = 0; r < height; r += run)
        if (!tf__mem_range_ok((uint64_t)dst + (uint64_t)r * pitch, (uint64_t)bytes * run,
                              ctx->dev->index))
            return CUDA_ERROR_INVALID_VALUE;
    for (size_t r = 0; r < height; r += run) {
        struct sim_op *op = tf__op_new(OP_SET);
        if (!op)
            return CUDA_ERROR_OUT_OF_MEMORY;
        op->u.set.dst = (void *)(uintptr_t)(dst + (CUdeviceptr)r * pitch);
        op->u.set.value = v;
        op->u.set.count = w * run;
        op->u.set.width = width;
        if ((rc = tf__enqueue(st, op, wait && r + run >= height)))
            return rc;
    }
    return CUDA_SUCCESS;
}

#define SET2D(name, type, width, per_thread, wait)                                                 \
    CUresult CUDAAPI name(CUdeviceptr dstDevice, size_t dstPitch, type v, size_t Width,            \
                          size_t Height)                                                           \
    {                                                                                              \
        return set2d(NULL, per_thread, wait, dstDevice, dstPitch, v, Width, Height, width);        \
    }
#define SET2D_ASYNC(name, type, width, per_thread)                                                 \
    CUresult CUDAAPI name(CUdeviceptr dstDevice, size_t dstPitch, type v, size_t Width,            \
                          size_t Height, CUstream hStream)                                         \
    {                                                                                              \
        return set2d(hStream, per_thread, 0, dstDevice, dstPitch, v, Width, Height, width);        \
    }
SET2D(cuMemsetD2D8, unsigned char, 1, 0, 1)
SET2D(cuMemsetD2D8_v2_ptds, unsigned char, 1, 1, 1)
SET2D(cuMemsetD2D16, unsigned short, 2, 0, 1)
SET2D(cuMemsetD2D16_v2_ptds, unsigned short, 2, 1, 1)
SET2D(cuMemsetD2D32, unsigned int, 4, 0, 1)
SET2D(cuMemsetD2D32_v2_ptds, unsigned int, 4, 1, 1)
SET2D_ASYNC(cuMemsetD2D8Async, unsigned char, 1, 0)
SET2D_ASYNC(cuMemsetD2D8Async_ptsz, unsigned char, 1, 1)
SET2D_ASYNC(cuMemsetD2D16Async, unsigned short, 2, 0)
SET2D_ASYNC(cuMemsetD2D16Async_ptsz, unsigned short, 2, 1)
SET2D_ASYNC(cuMemsetD2D32Async, unsigned int, 4, 0)
SET2D_ASYNC(cuMemsetD2D32Async_ptsz, unsigned int, 4, 1)
#undef SET2D
#undef SET2D_ASYNC
