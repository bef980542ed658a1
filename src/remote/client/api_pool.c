/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so: the stream-ordered allocator and memory pools (calls.def "pools"). Pools
 * live on the worker; the client keeps, per device, the id of the session's default pool
 * (created on the worker at first use) and the current pool, so cuMemAllocAsync leaves as
 * cuMemAllocFromPoolAsync of the current pool and cuDeviceGetMemPool / cuDeviceSetMemPool are
 * answered here (the worker never changes its driver's process-wide current pool, which
 * other clients of the worker share). Allocations join this process's ranges like
 * cuMemAlloc's; cuMemFreeAsync drops them at once (the pointer is invalid for the caller from
 * the call on). Pointers and properties are checked here, the VRAM limit on the worker.
 */
#include "remote/client/client.h"

#include <string.h>

/* Serialises the creation of default pools (one per device per process). */
static pthread_mutex_t default_mu = PTHREAD_MUTEX_INITIALIZER;

static int int_attr(CUmemPool_attribute a)
{
    return a == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ||
           a == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ||
           a == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
}

static int u64_attr(CUmemPool_attribute a)
{
    return a == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD || a == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT ||
           a == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH || a == CU_MEMPOOL_ATTR_USED_MEM_CURRENT ||
           a == CU_MEMPOOL_ATTR_USED_MEM_HIGH;
}

/* Locks T; CUDA_SUCCESS when connected and DEV is a device (the lock stays held either way). */
static CUresult lock_dev(struct tfc *t, CUdevice dev)
{
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    if (!r && (dev < 0 || dev >= t->ndev))
        r = CUDA_ERROR_INVALID_DEVICE;
    return r;
}

/* The id of the session's default pool of DEV, created on the worker at first use. */
static CUresult default_pool(CUdevice dev, uint64_t *id)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&default_mu);
    CUresult r = lock_dev(t, dev);
    *id = r ? 0 : t->dev[dev].pool_default;
    pthread_mutex_unlock(&t->lock);
    if (!r && !*id) {
        CUmemoryPool p = NULL;
        r = tfc_fwd_cuDeviceGetDefaultMemPool(&p, dev);
        pthread_mutex_lock(&t->lock);
        struct tfc_pool *o = r ? NULL : tfc_obj(t, (uintptr_t)p, TF_PROTO_H_POOL);
        if (o) {
            o->dev = dev;
            t->dev[dev].pool_default = *id = o->id;
        }
        pthread_mutex_unlock(&t->lock);
    }
    pthread_mutex_unlock(&default_mu);
    return r;
}

TFC_API CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t id;
    CUresult r = default_pool(dev, &id);
    if (!r)
        *pool_out = (CUmemoryPool)(uintptr_t)id;
    return r;
}

TFC_API CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    CUresult r = lock_dev(t, dev);
    uint64_t cur = r ? 0 : t->dev[dev].pool_current;
    pthread_mutex_unlock(&t->lock);
    if (!r && !cur)
        r = default_pool(dev, &cur);
    if (!r)
        *pool = (CUmemoryPool)(uintptr_t)cur;
    return r;
}

TFC_API CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    struct tfc *t = tfc_get();
    CUresult r = lock_dev(t, dev);
    struct tfc_pool *p = r ? NULL : tfc_obj(t, (uintptr_t)pool, TF_PROTO_H_POOL);
    if (!r && (!p || p->dev != dev))
        r = CUDA_ERROR_INVALID_VALUE;
    if (!r)
        t->dev[dev].pool_current = p->id == t->dev[dev].pool_default ? 0 : p->id;
    pthread_mutex_unlock(&t->lock);
    return r;
}

/* The location-based forms (CUDA 13): pinned memory on a device only. */
static CUresult location_dev(const CUmemLocation *loc, CUmemAllocationType type, CUdevice *dev)
{
    if (!loc || (type != CU_MEM_ALLOCATION_TYPE_PINNED && type != CU_MEM_ALLOCATION_TYPE_MANAGED))
        return CUDA_ERROR_INVALID_VALUE;
    if (type == CU_MEM_ALLOCATION_TYPE_MANAGED || loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_NOT_SUPPORTED; /* managed and host pools are not served */
    *dev = loc->id;
    return CUDA_SUCCESS;
}

TFC_API CUresult CUDAAPI cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
                                                CUmemAllocationType type)
{
    CUdevice dev;
    CUresult r = location_dev(location, type, &dev);
    return r ? r : cuDeviceGetDefaultMemPool(pool_out, dev);
}

TFC_API CUresult CUDAAPI cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location,
                                         CUmemAllocationType type)
{
    CUdevice dev;
    CUresult r = location_dev(location, type, &dev);
    return r ? r : cuDeviceGetMemPool(pool, dev);
}

TFC_API CUresult CUDAAPI cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type,
                                         CUmemoryPool pool)
{
    CUdevice dev;
    CUresult r = location_dev(location, type, &dev);
    return r ? r : cuDeviceSetMemPool(dev, pool);
}

TFC_API CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    /* Pools in host memory of the worker, and pools whose memory is exported to other
     * processes, mean nothing to a process on another machine. */
    if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        props->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult r = tfc_fwd_cuMemPoolCreate(pool, props->location.id, props->maxSize, props->usage);
    if (!r) {
        struct tfc *t = tfc_get();
        pthread_mutex_lock(&t->lock);
        struct tfc_pool *o = tfc_obj(t, (uintptr_t)*pool, TF_PROTO_H_POOL);
        if (o)
            o->dev = props->location.id;
        pthread_mutex_unlock(&t->lock);
    }
    return r;
}

TFC_API CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    struct tfc_pool *p = r ? NULL : tfc_obj(t, (uintptr_t)pool, TF_PROTO_H_POOL);
    if (!r && (!p || t->dev[p->dev].pool_default == p->id))
        r = CUDA_ERROR_INVALID_VALUE; /* a device's default pool cannot be destroyed */
    if (!r && t->dev[p->dev].pool_current == p->id)
        t->dev[p->dev].pool_current = 0; /* the default is current again */
    pthread_mutex_unlock(&t->lock);
    return r ? r : tfc_fwd_cuMemPoolDestroy(pool);
}

TFC_API CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                               void *value)
{
    if (!value ||
        (!int_attr(attr) && attr != CU_MEMPOOL_ATTR_RELEASE_THRESHOLD &&
         attr != CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH && attr != CU_MEMPOOL_ATTR_USED_MEM_HIGH))
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long v;
    if (int_attr(attr)) {
        int i;
        memcpy(&i, value, sizeof(i));
        v = (unsigned long long)(unsigned)i;
    } else {
        cuuint64_t u;
        memcpy(&u, value, sizeof(u));
        v = u;
    }
    return tfc_fwd_cuMemPoolSetAttribute(pool, attr, v);
}

TFC_API CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                               void *value)
{
    if (!value || (!int_attr(attr) && !u64_attr(attr)))
        return CUDA_ERROR_INVALID_VALUE;
    unsigned long long v = 0;
    CUresult r = tfc_fwd_cuMemPoolGetAttribute(pool, attr, &v);
    if (r)
        return r;
    if (int_attr(attr)) {
        int i = (int)v;
        memcpy(value, &i, sizeof(i));
    } else {
        cuuint64_t u = v;
        memcpy(value, &u, sizeof(u));
    }
    return CUDA_SUCCESS;
}

TFC_API CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map,
                                            size_t count)
{
    if (count && !map)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; i < count && !r; i++)
        r = tfc_fwd_cuMemPoolSetAccess(pool, map[i].location.type, map[i].location.id,
                                       map[i].flags);
    return r;
}

TFC_API CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool,
                                            CUmemLocation *location)
{
    if (!flags || !location)
        return CUDA_ERROR_INVALID_VALUE;
    return tfc_fwd_cuMemPoolGetAccess(flags, memPool, location->type, location->id);
}

/* ---- allocation and free -------------------------------------------------------------------- */

/* The context an operation on stream HS runs in (its own, or the current one for the NULL and
 * special streams); 0 when there is none. Lock held. */
static uint64_t stream_ctx(struct tfc *t, CUstream hs)
{
    uintptr_t v = (uintptr_t)hs;
    if (v > (uintptr_t)CU_STREAM_PER_THREAD) {
        struct tfc_obj *o = tfc_obj(t, v, TF_PROTO_H_STREAM);
        return o ? o->ctx : 0;
    }
    return tfc_current();
}

static CUresult from_pool(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hs)
{
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr p = 0;
    CUresult r = tfc_fwd_cuMemAllocFromPoolAsync(&p, bytesize, pool, hs);
    if (r)
        return r;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    if (tf_rangeset_add(&t->mem, p, bytesize, 0, stream_ctx(t, hs)) != 0) {
        tfc_lose(t, "worker returned an overlapping pool allocation");
        r = CUDA_ERROR_LAUNCH_FAILED;
    } else {
        *dptr = p;
        tfc_capture_note_alloc(t, (uintptr_t)hs);
    }
    pthread_mutex_unlock(&t->lock);
    return r;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream hs)
{
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    uint64_t ctx = r ? 0 : stream_ctx(t, hs);
    struct tfc_ctx *c = ctx ? tfc_ctx_of(t, ctx) : NULL;
    if (!r && !c)
        r = (uintptr_t)hs > (uintptr_t)CU_STREAM_PER_THREAD && !ctx ? CUDA_ERROR_INVALID_HANDLE
                                                                    : CUDA_ERROR_INVALID_CONTEXT;
    int dev = c ? c->dev : 0;
    uint64_t pool = r ? 0 : t->dev[dev].pool_current;
    pthread_mutex_unlock(&t->lock);
    if (!r && !pool)
        r = default_pool(dev, &pool);
    return r ? r : from_pool(dptr, bytesize, (CUmemoryPool)(uintptr_t)pool, hs);
}

TFC_API CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async(dptr, bytesize, hStream);
}

TFC_API CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                                 CUmemoryPool pool, CUstream hStream)
{
    return from_pool(dptr, bytesize, pool, hStream);
}

TFC_API CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    uint64_t sid;
    if (!r)
        r = tfc_stream_id(t, hStream, &sid);
    const struct tf_range *rg = r ? NULL : tf_rangeset_find(&t->mem, dptr, 0);
    if (!r && (!rg || rg->base != dptr || rg->owner != 0))
        r = CUDA_ERROR_INVALID_VALUE;
    struct tf_range gone = {0};
    if (!r)
        tf_rangeset_del(&t->mem, dptr, 0, &gone);
    pthread_mutex_unlock(&t->lock);
    if (r)
        return r;
    r = tfc_fwd_cuMemFreeAsync(dptr, hStream);
    if (r == CUDA_ERROR_INVALID_CONTEXT || r == CUDA_ERROR_INVALID_HANDLE) {
        /* Refused before it left: the memory is still the caller's. */
        pthread_mutex_lock(&t->lock);
        (void)tf_rangeset_add(&t->mem, gone.base, gone.size, 0, gone.aux);
        pthread_mutex_unlock(&t->lock);
    }
    return r;
}
