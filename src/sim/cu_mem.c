/* SPDX-License-Identifier: Apache-2.0
 *
 * Memory entry points of the simulated driver: device and pitched allocations (stream-ordered
 * ones are in cu_pool.c, page-locked host memory in cu_hostmem.c, managed memory in
 * cu_managed.c), memory info, address ranges, pointer
 * attributes, copies (host/device in every direction, sync and async, unified cuMemcpy) and
 * memsets.
 *
 * Synchronous copies and memsets are ops on the legacy default stream (the per-thread stream
 * for the _ptds entry points) that the call waits for, so they are ordered after earlier
 * work exactly as on hardware. cuMemFree waits for the device to go idle first (as the real
 * driver effectively does), so no queued kernel can touch freed memory.
 */
#include "sim/drv.h"

#include <string.h>

#define PITCH_ALIGN 512

static CUresult cur(CUcontext *ctx)
{
    return tf__ctx_current(ctx, 0);
}

/* The current context, for a call that stream capture may prohibit (cu_capture.c). */
static CUresult cur_unsafe(CUcontext *ctx)
{
    CUresult rc = tf__ctx_current(ctx, 0);
    return rc ? rc : tf__capture_unsafe_call();
}

/* ---- Allocation ------------------------------------------------------------------------ */

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    CUcontext ctx;
    CUresult rc = cur_unsafe(&ctx);
    if (rc)
        return rc;
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t p;
    if ((rc = tf__mem_alloc(ctx, M_DEVICE, bytesize, 0, 0, &p)))
        return rc;
    *dptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                 size_t Height, unsigned int ElementSizeBytes)
{
    CUcontext ctx;
    CUresult rc = cur_unsafe(&ctx);
    if (rc)
        return rc;
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t pitch = (WidthInBytes + PITCH_ALIGN - 1) / PITCH_ALIGN * PITCH_ALIGN;
    if (Height > SIZE_MAX / pitch)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t p;
    if ((rc = tf__mem_alloc(ctx, M_DEVICE, (uint64_t)pitch * Height, 0, 0, &p)))
        return rc;
    *dptr = (CUdeviceptr)p;
    *pPitch = pitch;
    return CUDA_SUCCESS;
}

/* Waits until DEV's contexts are idle (cuMemFree is synchronous). */
static CUresult sync_owner(CUdeviceptr p, CUcontext cur_ctx)
{
    struct sim_alloc a;
    if (tf__mem_lookup((uint64_t)p, &a) != 0 || a.base != (uint64_t)p)
        return CUDA_ERROR_INVALID_VALUE;
    if (a.backing == B_GRAPH && tf__gmem_freed_in_graph(&a))
        return CUDA_ERROR_INVALID_VALUE; /* only its own graph frees it */
    if (!a.ctx)
        return CUDA_ERROR_INVALID_VALUE; /* a library's __managed__ variable */
    (void)tf__ctx_sync(a.ctx);
    (void)cur_ctx;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr dptr)
{
    CUcontext ctx;
    CUresult rc = cur_unsafe(&ctx);
    if (rc)
        return rc;
    if (!dptr) /* freeing NULL is a no-op */
        return CUDA_SUCCESS;
    if ((rc = sync_owner(dptr, ctx)))
        return rc;
    return tf__mem_free((uint64_t)dptr, 0);
}

CUresult CUDAAPI cuMemGetInfo(size_t *free, size_t *total)
{
    CUcontext ctx;
    CUresult rc = cur(&ctx);
    if (rc)
        return rc;
    if (!free || !total)
        return CUDA_ERROR_INVALID_VALUE;
    struct tf_sim_shm_mem m;
    tf_sim_shm_mem_info(ctx->dev->shm, &m);
    *total = (size_t)m.total;
    *free = (size_t)(m.total - m.used);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CUcontext ctx;
    CUresult rc = cur(&ctx);
    if (rc)
        return rc;
    struct sim_alloc a;
    if (tf__mem_lookup((uint64_t)dptr, &a) != 0 || a.kind == M_HOST)
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = (CUdeviceptr)a.base;
    if (psize)
        *psize = (size_t)a.size;
    return CUDA_SUCCESS;
}

/* ---- Pointer attributes ---------------------------------------------------------------- */

static CUresult pointer_attr(void *data, CUpointer_attribute attr, CUdeviceptr ptr, int lenient)
{
    struct sim_alloc a;
    int known = tf__mem_lookup((uint64_t)ptr, &a) == 0;
    if (!known && !lenient)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *(CUcontext *)data = known ? a.ctx : NULL;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = !known             ? 0
                                : a.kind == M_HOST ? CU_MEMORYTYPE_HOST
                                                   : CU_MEMORYTYPE_DEVICE;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *(CUdeviceptr *)data = known ? ptr : 0;
        break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (known && a.kind != M_HOST && a.kind != M_MANAGED && !lenient)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data =
            known && (a.kind == M_HOST || a.kind == M_MANAGED) ? (void *)(uintptr_t)ptr : NULL;
        break;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *(int *)data = 1; /* all simulated copies are synchronous w.r.t. their stream */
        break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
        *(unsigned long long *)data = known ? a.buffer_id : 0;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        *(int *)data = known && a.kind == M_MANAGED;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        *(int *)data = known && a.ctx ? a.ctx->dev->index : known ? -1 : -2;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(CUdeviceptr *)data = known ? (CUdeviceptr)a.base : 0;
        break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = known ? (size_t)a.size : 0;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *(int *)data = known;
        break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        *(int *)data = 0;
        break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        *(unsigned long long *)data = 0;
        break;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
        *(int *)data = 0;
        break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        *(unsigned int *)data = !known        ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE
                                : a.read_only ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ
                                              : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        *(size_t *)data = known ? (size_t)a.size : 0;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        *(void **)data = known ? (void *)(uintptr_t)a.base : NULL;
        break;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        *(unsigned long long *)data = known ? a.buffer_id : 0;
        break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        *(CUmemoryPool *)data = known ? tf__pool_of(&a) : NULL;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    return pointer_attr(data, attribute, ptr, 0);
}

CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
                                        void **data, CUdeviceptr ptr)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!numAttributes || !attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    /* Unknown pointers are not an error here: their attributes read as zero/NULL. */
    for (unsigned i = 0; i < numAttributes; i++) {
        if (!data[i])
            return CUDA_ERROR_INVALID_VALUE;
        if ((rc = pointer_attr(data[i], attributes[i], ptr, 1)))
            return rc;
    }
    return CUDA_SUCCESS;
}

/* ---- Copies ---------------------------------------------------------------------------- */

enum { END_HOST = 1, END_DEV = 2, END_ANY = 3 };

/* Validates one end of a copy: device ends must lie inside one allocation the context's
 * device can access (or, for work being captured, a graph allocation's range: it exists when
 * the graph runs); END_ANY accepts host memory too (unified addressing). */
static CUresult check_end(CUcontext ctx, uint64_t p, size_t n, int kind, int captured)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if (kind == END_HOST)
        return CUDA_SUCCESS;
    if (tf__mem_range_ok(p, n, ctx->dev->index) || (captured && tf__gmem_contains(p, n)))
        return CUDA_SUCCESS;
    if (kind == END_ANY) {
        struct sim_alloc a;
        /* An untracked address is host memory; one inside an allocation must fit in it. */
        if (tf__mem_lookup(p, &a) != 0)
            return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

static CUresult copy(CUstream h, int per_thread, int wait, uint64_t dst, int dk, uint64_t src,
                     int sk, size_t n)
{
    CUcontext ctx;
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, &ctx, &s);
    if (rc)
        return rc;
    if (n == 0)
        return CUDA_SUCCESS;
    int captured = atomic_load(&s->cap) != NULL;
    if ((rc = check_end(ctx, dst, n, dk, captured)) || (rc = check_end(ctx, src, n, sk, captured)))
        return rc;
    struct sim_op *op = tf__op_new(OP_COPY);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.copy.dst = (void *)(uintptr_t)dst;
    op->u.copy.src = (const void *)(uintptr_t)src;
    op->u.copy.n = n;
    op->u.copy.to_device = dk != END_HOST && tf__mem_range_ok(dst, n, ctx->dev->index);
    return tf__enqueue(s, op, wait);
}

#define HP(p) ((uint64_t)(uintptr_t)(p))

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return copy(NULL, 0, 1, dstDevice, END_DEV, HP(srcHost), END_HOST, ByteCount);
}

CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return copy(NULL, 1, 1, dstDevice, END_DEV, HP(srcHost), END_HOST, ByteCount);
}

CUresult CUDAAPI cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy(NULL, 0, 1, HP(dstHost), END_HOST, srcDevice, END_DEV, ByteCount);
}

CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy(NULL, 1, 1, HP(dstHost), END_HOST, srcDevice, END_DEV, ByteCount);
}

CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
    return copy(NULL, 0, 1, dstDevice, END_DEV, srcDevice, END_DEV, ByteCount);
}

CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                      size_t ByteCount)
{
    return copy(NULL, 1, 1, dstDevice, END_DEV, srcDevice, END_DEV, ByteCount);
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
                                   CUstream hStream)
{
    return copy(hStream, 0, 0, dstDevice, END_DEV, HP(srcHost), END_HOST, ByteCount);
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost,
                                           size_t ByteCount, CUstream hStream)
{
    return copy(hStream, 1, 0, dstDevice, END_DEV, HP(srcHost), END_HOST, ByteCount);
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream)
{
    return copy(hStream, 0, 0, HP(dstHost), END_HOST, srcDevice, END_DEV, ByteCount);
}

CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                           CUstream hStream)
{
    return copy(hStream, 1, 0, HP(dstHost), END_HOST, srcDevice, END_DEV, ByteCount);
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                                   CUstream hStream)
{
    return copy(hStream, 0, 0, dstDevice, END_DEV, srcDevice, END_DEV, ByteCount);
}

CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                           size_t ByteCount, CUstream hStream)
{
    return copy(hStream, 1, 0, dstDevice, END_DEV, srcDevice, END_DEV, ByteCount);
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return copy(NULL, 0, 1, dst, END_ANY, src, END_ANY, ByteCount);
}

CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return copy(NULL, 1, 1, dst, END_ANY, src, END_ANY, ByteCount);
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    return copy(hStream, 0, 0, dst, END_ANY, src, END_ANY, ByteCount);
}

CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                    CUstream hStream)
{
    return copy(hStream, 1, 0, dst, END_ANY, src, END_ANY, ByteCount);
}

/* ---- Memsets --------------------------------------------------------------------------- */

static CUresult memset_op(CUstream h, int per_thread, int wait, CUdeviceptr dst, uint32_t v,
                          size_t count, int width)
{
    CUcontext ctx;
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, &ctx, &s);
    if (rc)
        return rc;
    if (count == 0)
        return CUDA_SUCCESS;
    if (count > SIZE_MAX / (size_t)width || (dst % (CUdeviceptr)width) != 0 ||
        check_end(ctx, (uint64_t)dst, count * (size_t)width, END_DEV, atomic_load(&s->cap) != NULL))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_op *op = tf__op_new(OP_SET);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.set.dst = (void *)(uintptr_t)dst;
    op->u.set.value = v;
    op->u.set.count = count;
    op->u.set.width = width;
    return tf__enqueue(s, op, wait);
}

CUresult CUDAAPI cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return memset_op(NULL, 0, 1, dstDevice, uc, N, 1);
}

CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return memset_op(NULL, 1, 1, dstDevice, uc, N, 1);
}

CUresult CUDAAPI cuMemsetD16(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return memset_op(NULL, 0, 1, dstDevice, us, N, 2);
}

CUresult CUDAAPI cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return memset_op(NULL, 1, 1, dstDevice, us, N, 2);
}

CUresult CUDAAPI cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return memset_op(NULL, 0, 1, dstDevice, ui, N, 4);
}

CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return memset_op(NULL, 1, 1, dstDevice, ui, N, 4);
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                 CUstream hStream)
{
    return memset_op(hStream, 0, 0, dstDevice, uc, N, 1);
}

CUresult CUDAAPI cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                      CUstream hStream)
{
    return memset_op(hStream, 1, 0, dstDevice, uc, N, 1);
}

CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N,
                                  CUstream hStream)
{
    return memset_op(hStream, 0, 0, dstDevice, us, N, 2);
}

CUresult CUDAAPI cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N,
                                       CUstream hStream)
{
    return memset_op(hStream, 1, 0, dstDevice, us, N, 2);
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                  CUstream hStream)
{
    return memset_op(hStream, 0, 0, dstDevice, ui, N, 4);
}

CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                       CUstream hStream)
{
    return memset_op(hStream, 1, 0, dstDevice, ui, N, 4);
}
