/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so: device memory (allocation is a round trip, free is fire-and-forget), host
 * memory (cuMemAllocHost stays in this process), copies and memsets. Pointers and sizes are
 * checked against this process's allocations before anything is sent (the worker checks
 * again). Bulk HtoD data leaves from the caller's buffer in TF_PROTO_CHUNK frames; DtoH data
 * lands directly in the caller's buffer. Synchronous HtoD/DtoH copies cost one round trip;
 * memsets and DtoD copies are asynchronous with respect to the host in CUDA for device memory
 * and are sent fire-and-forget.
 */
#include "remote/client/client.h"

#include <stdlib.h>
#include <string.h>

/* Locks T and checks connection + current context; *CTX gets the context id. */
static CUresult enter(struct tfc **tp, uint64_t *ctx)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    *tp = t;
    CUresult r = tfc_ready(t);
    if (!r) {
        *ctx = tfc_current();
        if (!*ctx || !tfc_ctx_of(t, *ctx))
            r = CUDA_ERROR_INVALID_CONTEXT;
        else
            r = tfc_sticky(t, *ctx);
    }
    if (r)
        pthread_mutex_unlock(&t->lock);
    return r;
}

static CUresult leave(struct tfc *t, CUresult r)
{
    pthread_mutex_unlock(&t->lock);
    return r;
}

static int dev_range(struct tfc *t, CUdeviceptr p, size_t n)
{
    return tf_rangeset_find(&t->mem, p, n) != NULL;
}

/* ---- device memory -------------------------------------------------------------------------- */

TFC_API CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    struct tfc *t;
    uint64_t ctx;
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = enter(&t, &ctx);
    if (r)
        return r;
    if (bytesize == 0)
        return leave(t, CUDA_ERROR_INVALID_VALUE);
    uint8_t p[TF_PROTO_SIZE_mem_alloc_req];
    struct tf_msg_mem_alloc_req m = {.ctx = ctx, .bytesize = bytesize};
    tf_msg_mem_alloc_req_put(p, &m);
    r = tfc_call(t, TF_OP_MEM_ALLOC, p, sizeof(p), NULL, 0);
    if (!r) {
        struct tf_msg_mem_alloc_rep rep;
        tf_msg_mem_alloc_rep_get(t->reply.data, &rep);
        if (tf_rangeset_add(&t->mem, rep.dptr, bytesize, 0, ctx) != 0) {
            tfc_lose(t, "worker returned an overlapping allocation");
            r = CUDA_ERROR_LAUNCH_FAILED;
        } else {
            *dptr = rep.dptr;
        }
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                         size_t Height, unsigned int ElementSizeBytes)
{
    struct tfc *t;
    uint64_t ctx;
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = enter(&t, &ctx);
    if (r)
        return r;
    uint8_t p[TF_PROTO_SIZE_mem_pitch_req];
    struct tf_msg_mem_pitch_req m = {
        .ctx = ctx, .width = WidthInBytes, .height = Height, .elemsize = ElementSizeBytes};
    tf_msg_mem_pitch_req_put(p, &m);
    r = tfc_call(t, TF_OP_MEM_ALLOC_PITCH, p, sizeof(p), NULL, 0);
    if (!r) {
        struct tf_msg_mem_alloc_rep rep;
        tf_msg_mem_alloc_rep_get(t->reply.data, &rep);
        if (rep.pitch < WidthInBytes || rep.pitch > SIZE_MAX / Height ||
            tf_rangeset_add(&t->mem, rep.dptr, rep.pitch * Height, 0, ctx) != 0) {
            tfc_lose(t, "worker returned a bad pitched allocation");
            r = CUDA_ERROR_LAUNCH_FAILED;
        } else {
            *dptr = rep.dptr;
            *pPitch = rep.pitch;
        }
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuMemFree(CUdeviceptr dptr)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    struct tf_range rg;
    if (!r && tf_rangeset_del(&t->mem, dptr, 0, &rg) != 0)
        r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        uint8_t p[TF_PROTO_SIZE_mem_free_req];
        struct tf_msg_mem_free_req m = {.ctx = rg.aux, .dptr = dptr};
        tf_msg_mem_free_req_put(p, &m);
        r = tfc_async(t, TF_OP_MEM_FREE, p, sizeof(p), NULL, 0);
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuMemGetInfo(size_t *free_b, size_t *total_b)
{
    struct tfc *t;
    uint64_t ctx;
    if (!free_b || !total_b)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = enter(&t, &ctx);
    if (r)
        return r;
    uint8_t p[TF_PROTO_SIZE_ctx_req];
    struct tf_msg_ctx_req m = {.ctx = ctx};
    tf_msg_ctx_req_put(p, &m);
    r = tfc_call(t, TF_OP_MEM_GET_INFO, p, sizeof(p), NULL, 0);
    if (!r) {
        struct tf_msg_mem_info_rep rep;
        tf_msg_mem_info_rep_get(t->reply.data, &rep);
        *free_b = rep.free;
        *total_b = rep.total;
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    const struct tf_range *rg = r ? NULL : tf_rangeset_find(&t->mem, dptr, 0);
    if (!r && !rg)
        r = CUDA_ERROR_NOT_FOUND;
    if (!r) {
        if (pbase)
            *pbase = rg->base;
        if (psize)
            *psize = rg->size;
    }
    return leave(t, r);
}

/* ---- host memory (stays in this process) ---------------------------------------------------- */

static CUresult host_alloc(void **pp, size_t bytesize, unsigned flags)
{
    struct tfc *t;
    uint64_t ctx;
    if (!pp || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = enter(&t, &ctx);
    if (r)
        return r;
    void *p = NULL;
    if (posix_memalign(&p, 4096, bytesize) != 0)
        return leave(t, CUDA_ERROR_OUT_OF_MEMORY);
    if (tf_rangeset_add(&t->host, (uintptr_t)p, bytesize, ctx, flags) != 0) {
        free(p);
        return leave(t, CUDA_ERROR_OUT_OF_MEMORY);
    }
    *pp = p;
    return leave(t, CUDA_SUCCESS);
}

TFC_API CUresult CUDAAPI cuMemAllocHost(void **pp, size_t bytesize)
{
    return host_alloc(pp, bytesize, 0);
}

TFC_API CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    if (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                            CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    return host_alloc(pp, bytesize, Flags);
}

TFC_API CUresult CUDAAPI cuMemFreeHost(void *p)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = t->state == TFC_UNINIT ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
    const struct tf_range *rg = r ? NULL : tf_rangeset_find(&t->host, (uintptr_t)p, 0);
    if (!r && (!rg || rg->base != (uintptr_t)p))
        r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        tf_rangeset_del(&t->host, rg->base, rg->owner, NULL);
        free(p);
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    struct tfc *t = tfc_get();
    if (!pFlags)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&t->lock);
    CUresult r = t->state == TFC_UNINIT ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
    const struct tf_range *rg = r ? NULL : tf_rangeset_find(&t->host, (uintptr_t)p, 0);
    if (!r && !rg)
        r = CUDA_ERROR_INVALID_VALUE;
    if (!r)
        *pFlags = (unsigned)rg->aux;
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    (void)pdptr;
    (void)p;
    (void)Flags;
    /* Host memory of this process cannot be mapped into a GPU on another machine. */
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- copies --------------------------------------------------------------------------------- */

CUresult tfc_htod(CUdeviceptr dst, const void *src, size_t n, CUstream hs, int sync)
{
    struct tfc *t;
    uint64_t ctx, sid;
    CUresult r = enter(&t, &ctx);
    if (r)
        return r;
    r = tfc_stream_id(t, hs, &sid);
    if (r)
        return leave(t, r);
    if (n == 0)
        return leave(t, CUDA_SUCCESS);
    if (!src || (sync != TFC_COPY_REPLAY && !dev_range(t, dst, n)))
        return leave(t, CUDA_ERROR_INVALID_VALUE);
    /* In a capture: a host step of the captured program (api_capture.c). */
    struct tfc_step st = {
        .kind = TFC_STEP_HTOD, .dev = dst, .host = (void *)(uintptr_t)src, .n = n};
    if (!sync && tfc_capture_step(t, sid, &st, &r))
        return leave(t, r);
    sid = tfc_capture_route(t, sid);
    int wait = sync == 1;
    for (size_t off = 0; off < n && !r;) {
        size_t k = n - off < TF_PROTO_CHUNK ? n - off : TF_PROTO_CHUNK;
        uint8_t p[TF_PROTO_SIZE_htod_req];
        struct tf_msg_htod_req m = {.ctx = ctx, .stream = wait ? 0 : sid, .dst = dst + off};
        tf_msg_htod_req_put(p, &m);
        r = tfc_async(t, TF_OP_MEMCPY_HTOD, p, sizeof(p), (const uint8_t *)src + off, k);
        off += k;
    }
    if (!r && wait)
        r = tfc_call(t, TF_OP_FLUSH, NULL, 0, NULL, 0);
    return leave(t, r);
}

CUresult tfc_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream hs, int sync)
{
    struct tfc *t;
    uint64_t ctx, sid;
    CUresult r = enter(&t, &ctx);
    if (r)
        return r;
    r = tfc_stream_id(t, hs, &sid);
    if (r)
        return leave(t, r);
    if (n == 0)
        return leave(t, CUDA_SUCCESS);
    if (!dst || (sync != TFC_COPY_REPLAY && !dev_range(t, src, n)))
        return leave(t, CUDA_ERROR_INVALID_VALUE);
    struct tfc_step st = {.kind = TFC_STEP_DTOH, .dev = src, .host = dst, .n = n};
    if (!sync && tfc_capture_step(t, sid, &st, &r))
        return leave(t, r);
    sid = tfc_capture_route(t, sid);
    int wait = sync == 1;
    struct tfc_xfer *x = calloc(1, sizeof(*x));
    if (!x)
        return leave(t, CUDA_ERROR_OUT_OF_MEMORY);
    x->tag = ++t->next_serial;
    x->dst = dst;
    x->len = n;
    if (tf_htab_put(&t->xfers, x->tag, x) != 0) {
        free(x);
        return leave(t, CUDA_ERROR_OUT_OF_MEMORY);
    }
    atomic_fetch_add(&t->nxfers, 1);
    uint8_t p[TF_PROTO_SIZE_dtoh_req];
    struct tf_msg_dtoh_req m = {
        .ctx = ctx, .stream = wait ? 0 : sid, .src = src, .len = n, .tag = x->tag};
    tf_msg_dtoh_req_put(p, &m);
    r = tfc_async(t, TF_OP_MEMCPY_DTOH, p, sizeof(p), NULL, 0);
    /* The data and the transfer's end arrive before the reply: DST is filled on return. */
    if (!r && wait)
        r = tfc_call(t, TF_OP_FLUSH, NULL, 0, NULL, 0);
    return leave(t, r);
}

CUresult tfc_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hs)
{
    struct tfc *t;
    uint64_t ctx, sid;
    CUresult r = enter(&t, &ctx);
    if (r)
        return r;
    r = tfc_stream_id(t, hs, &sid);
    if (r)
        return leave(t, r);
    sid = tfc_capture_route(t, sid);
    if (n == 0)
        return leave(t, CUDA_SUCCESS);
    if (!dev_range(t, dst, n) || !dev_range(t, src, n))
        return leave(t, CUDA_ERROR_INVALID_VALUE);
    uint8_t p[TF_PROTO_SIZE_dtod_req];
    struct tf_msg_dtod_req m = {.ctx = ctx, .stream = sid, .dst = dst, .src = src, .len = n};
    tf_msg_dtod_req_put(p, &m);
    return leave(t, tfc_async(t, TF_OP_MEMCPY_DTOD, p, sizeof(p), NULL, 0));
}

TFC_API CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
    return tfc_htod(dstDevice, srcHost, ByteCount, NULL, 1);
}

TFC_API CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost,
                                           size_t ByteCount, CUstream hStream)
{
    return tfc_htod(dstDevice, srcHost, ByteCount, hStream, 0);
}

TFC_API CUresult CUDAAPI cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
    return tfc_dtoh(dstHost, srcDevice, ByteCount, NULL, 1);
}

TFC_API CUresult CUDAAPI cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                                           CUstream hStream)
{
    return tfc_dtoh(dstHost, srcDevice, ByteCount, hStream, 0);
}

TFC_API CUresult CUDAAPI cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                      size_t ByteCount)
{
    return tfc_dtod(dstDevice, srcDevice, ByteCount, NULL);
}

TFC_API CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                           size_t ByteCount, CUstream hStream)
{
    return tfc_dtod(dstDevice, srcDevice, ByteCount, hStream);
}

int tfc_is_dev(CUdeviceptr p, size_t n)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    int r = dev_range(t, p, n ? n : 1);
    pthread_mutex_unlock(&t->lock);
    return r;
}

CUresult tfc_copies_done(void)
{
    struct tfc *t;
    uint64_t ctx;
    CUresult r = enter(&t, &ctx);
    if (r)
        return r;
    return leave(t, tfc_call(t, TF_OP_FLUSH, NULL, 0, NULL, 0));
}

/* Unified addressing: a pointer is device memory when it is one of ours. */
static CUresult memcpy_any(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hs, int sync)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    int dd = dev_range(t, dst, n ? n : 1), sd = dev_range(t, src, n ? n : 1);
    pthread_mutex_unlock(&t->lock);
    if (dd && sd)
        return tfc_dtod(dst, src, n, hs);
    if (dd)
        return tfc_htod(dst, (const void *)(uintptr_t)src, n, hs, sync);
    if (sd)
        return tfc_dtoh((void *)(uintptr_t)dst, src, n, hs, sync);
    /* Host to host: ordered after the stream's work, like the driver. */
    CUresult r = sync ? cuCtxSynchronize() : cuStreamSynchronize(hs);
    if (r == CUDA_SUCCESS && n)
        memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    return r;
}

TFC_API CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    return memcpy_any(dst, src, ByteCount, NULL, 1);
}

TFC_API CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                       CUstream hStream)
{
    return memcpy_any(dst, src, ByteCount, hStream, 0);
}

/* ---- memsets -------------------------------------------------------------------------------- */

CUresult tfc_memset(CUdeviceptr dst, uint32_t value, size_t count, uint32_t elem, CUstream hs)
{
    struct tfc *t;
    uint64_t ctx, sid;
    CUresult r = enter(&t, &ctx);
    if (r)
        return r;
    r = tfc_stream_id(t, hs, &sid);
    if (r)
        return leave(t, r);
    sid = tfc_capture_route(t, sid);
    if (count == 0)
        return leave(t, CUDA_SUCCESS);
    if (count > SIZE_MAX / elem || !dev_range(t, dst, count * elem) || dst % elem)
        return leave(t, CUDA_ERROR_INVALID_VALUE);
    uint8_t p[TF_PROTO_SIZE_memset_req];
    struct tf_msg_memset_req m = {
        .ctx = ctx, .stream = sid, .dst = dst, .count = count, .value = value, .elemsize = elem};
    tf_msg_memset_req_put(p, &m);
    return leave(t, tfc_async(t, TF_OP_MEMSET, p, sizeof(p), NULL, 0));
}

TFC_API CUresult CUDAAPI cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
    return tfc_memset(dstDevice, uc, N, 1, NULL);
}

TFC_API CUresult CUDAAPI cuMemsetD16(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
    return tfc_memset(dstDevice, us, N, 2, NULL);
}

TFC_API CUresult CUDAAPI cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
    return tfc_memset(dstDevice, ui, N, 4, NULL);
}

TFC_API CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N,
                                         CUstream hStream)
{
    return tfc_memset(dstDevice, uc, N, 1, hStream);
}

TFC_API CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N,
                                          CUstream hStream)
{
    return tfc_memset(dstDevice, us, N, 2, hStream);
}

TFC_API CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N,
                                          CUstream hStream)
{
    return tfc_memset(dstDevice, ui, N, 4, hStream);
}

/* ---- pointer attributes --------------------------------------------------------------------- */

static void put_attr(void *data, CUpointer_attribute attr, uint64_t v)
{
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: {
        void *p = (void *)(uintptr_t)v;
        memcpy(data, &p, sizeof(p));
        break;
    }
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: {
        CUdeviceptr p = (CUdeviceptr)v;
        memcpy(data, &p, sizeof(p));
        break;
    }
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: {
        size_t s = (size_t)v;
        memcpy(data, &s, sizeof(s));
        break;
    }
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: {
        unsigned long long b = v;
        memcpy(data, &b, sizeof(b));
        break;
    }
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: {
        int o = (int)v;
        memcpy(data, &o, sizeof(o));
        break;
    }
    default: {
        unsigned int u = (unsigned int)v;
        memcpy(data, &u, sizeof(u));
        break;
    }
    }
}

TFC_API CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                               CUdeviceptr ptr)
{
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    if (r)
        return leave(t, r);
    const struct tf_range *h = tf_rangeset_find(&t->host, ptr, 0);
    if (h) {
        uint64_t v = 0;
        switch (attribute) {
        case CU_POINTER_ATTRIBUTE_CONTEXT:
            v = h->owner;
            break;
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            v = CU_MEMORYTYPE_HOST;
            break;
        case CU_POINTER_ATTRIBUTE_HOST_POINTER:
            v = ptr;
            break;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
            v = 0;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            v = h->base;
            break;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
            v = h->size;
            break;
        case CU_POINTER_ATTRIBUTE_MAPPED:
            v = 1;
            break;
        default:
            return leave(t, CUDA_ERROR_NOT_SUPPORTED);
        }
        put_attr(data, attribute, v);
        return leave(t, CUDA_SUCCESS);
    }
    if (!tf_rangeset_find(&t->mem, ptr, 0) || attribute == CU_POINTER_ATTRIBUTE_HOST_POINTER)
        return leave(t, CUDA_ERROR_INVALID_VALUE);
    uint8_t p[TF_PROTO_SIZE_ptr_attr_req];
    struct tf_msg_ptr_attr_req m = {.ctx = tfc_current(), .ptr = ptr, .attr = (uint32_t)attribute};
    tf_msg_ptr_attr_req_put(p, &m);
    r = tfc_call(t, TF_OP_POINTER_ATTR, p, sizeof(p), NULL, 0);
    if (!r) {
        struct tf_msg_ptr_attr_rep rep;
        tf_msg_ptr_attr_rep_get(t->reply.data, &rep);
        put_attr(data, attribute, rep.value);
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                                CUpointer_attribute *attributes, void **data,
                                                CUdeviceptr ptr)
{
    if (!numAttributes || !attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    /* As the driver: an attribute that does not apply to PTR (an unknown pointer, the host
     * pointer of device memory, one this side cannot tell) reads as zero / NULL, the device
     * ordinal of an unknown pointer as -2. */
    for (unsigned i = 0; i < numAttributes; i++) {
        if (!data[i])
            return CUDA_ERROR_INVALID_VALUE;
        CUresult r = cuPointerGetAttribute(data[i], attributes[i], ptr);
        if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_NOT_SUPPORTED)
            put_attr(data[i], attributes[i],
                     attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL && !tfc_is_dev(ptr, 0)
                         ? (uint64_t)(int64_t)-2
                         : 0);
        else if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}
