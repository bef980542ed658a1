/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so: initialisation, error strings, device queries (answered from the cache
 * filled at connect), primary and ordinary contexts (the current-context stack is per thread
 * and local; creation is a round trip, destruction is fire-and-forget).
 */
#include "remote/client/client.h"

#include "common/cuerr.h"
#include "exptab/exptab.h"

#include <stdlib.h>
#include <string.h>

/* ---- init and errors ------------------------------------------------------------------------ */

TFC_API CUresult CUDAAPI cuInit(unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_connect(t);
    pthread_mutex_unlock(&t->lock);
    return r;
}

TFC_API CUresult CUDAAPI cuDriverGetVersion(int *v)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    /* What this client implements, capped by the worker's driver once connected. */
    *v = t->state != TFC_UNINIT && t->driver_version > 0 && t->driver_version < CUDA_VERSION
             ? t->driver_version
             : CUDA_VERSION;
    pthread_mutex_unlock(&t->lock);
    return CUDA_SUCCESS;
}

/* Names and messages from the table the simulated GPU uses too (src/common/cuerr.def). */
TFC_API CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = tf_cuerr_name((int)error);
    return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

TFC_API CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = tf_cuerr_string((int)error);
    return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- devices -------------------------------------------------------------------------------- */

/* Cached queries need cuInit but keep working after the worker is lost. */
static CUresult dev_lock(struct tfc **tp, CUdevice dev, int check_dev)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    *tp = t;
    if (t->state == TFC_UNINIT) {
        pthread_mutex_unlock(&t->lock);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    if (check_dev && (dev < 0 || dev >= t->ndev)) {
        pthread_mutex_unlock(&t->lock);
        return CUDA_ERROR_INVALID_DEVICE;
    }
    return CUDA_SUCCESS;
}

TFC_API CUresult CUDAAPI cuDeviceGetCount(int *count)
{
    struct tfc *t;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = dev_lock(&t, 0, 0);
    if (r)
        return r;
    *count = t->ndev;
    pthread_mutex_unlock(&t->lock);
    return CUDA_SUCCESS;
}

TFC_API CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
    struct tfc *t;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = dev_lock(&t, ordinal, 1);
    if (r)
        return r;
    *device = ordinal;
    pthread_mutex_unlock(&t->lock);
    return CUDA_SUCCESS;
}

TFC_API CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
    struct tfc *t;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = dev_lock(&t, dev, 1);
    if (r)
        return r;
    size_t n = strlen(t->dev[dev].name);
    if (n >= (size_t)len)
        n = (size_t)len - 1;
    memcpy(name, t->dev[dev].name, n);
    name[n] = 0;
    pthread_mutex_unlock(&t->lock);
    return CUDA_SUCCESS;
}

TFC_API CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    struct tfc *t;
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = dev_lock(&t, dev, 1);
    if (r)
        return r;
    memcpy(uuid->bytes, t->dev[dev].uuid, 16);
    pthread_mutex_unlock(&t->lock);
    return CUDA_SUCCESS;
}

#undef cuDeviceGetUuid
TFC_API CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev);
TFC_API CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid_v2(uuid, dev);
}

TFC_API CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
    struct tfc *t;
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = dev_lock(&t, dev, 1);
    if (r)
        return r;
    *bytes = (size_t)t->dev[dev].total;
    pthread_mutex_unlock(&t->lock);
    return CUDA_SUCCESS;
}

TFC_API CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    struct tfc *t;
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = dev_lock(&t, dev, 1);
    if (r)
        return r;
    const struct tfc_dev *d = &t->dev[dev];
    if ((unsigned)attrib >= d->nattrs) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        r = (CUresult)d->attr_st[attrib];
        if (r == CUDA_SUCCESS)
            *pi = d->attr_val[attrib];
    }
    pthread_mutex_unlock(&t->lock);
    return r;
}

/* ---- contexts ------------------------------------------------------------------------------- */

/* Drops the client-side records of everything that lived in context CTX. */
static void forget_ctx(struct tfc *t, uint64_t ctx)
{
    for (size_t i = 0; i < t->mem.n;) {
        if (t->mem.v[i].aux == ctx)
            tf_rangeset_del(&t->mem, t->mem.v[i].base, t->mem.v[i].owner, NULL);
        else
            i++;
    }
    for (;;) {
        size_t pos = 0;
        uint64_t key;
        void *val, *victim = NULL;
        uint64_t vkey = 0;
        while (tf_htab_next(&t->objs, &pos, &key, &val)) {
            unsigned ty = TF_PROTO_HANDLE_TYPE(key);
            uint64_t c = 0;
            if (ty == TF_PROTO_H_STREAM)
                c = ((struct tfc_stream *)val)->ctx;
            else if (ty == TF_PROTO_H_EVENT)
                c = ((struct tfc_event *)val)->ctx;
            else if (ty == TF_PROTO_H_MODULE)
                c = ((struct tfc_module *)val)->ctx;
            else if (ty == TF_PROTO_H_FUNC)
                c = ((struct tfc_func *)val)->ctx;
            else if (ty == TF_PROTO_H_CTX)
                c = key;
            if (c == ctx) {
                victim = val;
                vkey = key;
                break;
            }
        }
        if (!victim)
            break;
        tf_htab_del(&t->objs, vkey);
        unsigned ty = TF_PROTO_HANDLE_TYPE(vkey);
        if (ty == TF_PROTO_H_FUNC)
            tfc_func_free(victim);
        else
            free(victim);
    }
    /* Kernels keep per-context functions: drop those of CTX. */
    size_t pos = 0;
    uint64_t key;
    void *val;
    while (tf_htab_next(&t->objs, &pos, &key, &val)) {
        if (TF_PROTO_HANDLE_TYPE(key) != TF_PROTO_H_KERNEL)
            continue;
        struct tfc_func *k = val;
        for (int i = 0; i < k->nkf; i++)
            if (k->kf[i].ctx == ctx)
                k->kf[i--] = k->kf[--k->nkf];
    }
}

static CUresult register_ctx(struct tfc *t, uint64_t id, int dev, unsigned flags, int primary)
{
    struct tfc_ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->id = id;
    c->type = TF_PROTO_H_CTX;
    c->ctx = id;
    c->dev = dev;
    c->flags = flags;
    c->primary = primary;
    if (tf_htab_put(&t->objs, id, c) != 0) {
        free(c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    if (!r && (dev < 0 || dev >= t->ndev))
        r = CUDA_ERROR_INVALID_DEVICE;
    uint64_t id = 0;
    if (!r) {
        id = tfc_new_id(t, TF_PROTO_H_CTX);
        uint8_t p[TF_PROTO_SIZE_ctx_create_req];
        struct tf_msg_ctx_create_req m = {.ctx = id, .flags = flags, .device = (uint32_t)dev};
        tf_msg_ctx_create_req_put(p, &m);
        r = tfc_call(t, TF_OP_CTX_CREATE, p, sizeof(p), NULL, 0);
    }
    if (!r)
        r = register_ctx(t, id, dev, flags, 0);
    if (!r && tfc_push(id) != 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!r)
        *pctx = (CUcontext)(uintptr_t)id;
    pthread_mutex_unlock(&t->lock);
    return r;
}

TFC_API CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
TFC_API CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev);
}

TFC_API CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                        int numParams, unsigned int flags, CUdevice dev);
TFC_API CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                        int numParams, unsigned int flags, CUdevice dev)
{
    if (numParams > 0 && paramsArray)
        return CUDA_ERROR_NOT_SUPPORTED; /* execution affinity is not forwarded */
    return ctx_create(pctx, flags, dev);
}

TFC_API CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                                     CUdevice dev)
{
    if (params && (params->numExecAffinityParams > 0 || params->cigParams))
        return CUDA_ERROR_NOT_SUPPORTED;
    return ctx_create(pctx, flags, dev);
}

/* Whether ID is a live ordinary context (lock taken and released). */
static CUresult ctx_check(struct tfc *t, uint64_t id)
{
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    struct tfc_ctx *c = r ? NULL : tfc_ctx_of(t, id);
    if (!r && (!c || c->primary))
        r = CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_unlock(&t->lock);
    return r;
}

TFC_API CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
    struct tfc *t = tfc_get();
    uint64_t id = (uintptr_t)ctx;
    CUresult r = ctx_check(t, id);
    if (r)
        return r;
    /* The CUDA runtime's per-context state goes first, while the context still works
     * (src/exptab): its destructors may call the driver, so not under the lock. */
    tf_exptab_ctx_gone(ctx);
    pthread_mutex_lock(&t->lock);
    r = tfc_ready(t);
    struct tfc_ctx *c = r ? NULL : tfc_ctx_of(t, id);
    if (!r && (!c || c->primary))
        r = CUDA_ERROR_INVALID_CONTEXT;
    if (!r) {
        uint8_t p[TF_PROTO_SIZE_ctx_req];
        struct tf_msg_ctx_req m = {.ctx = id};
        tf_msg_ctx_req_put(p, &m);
        r = tfc_async(t, TF_OP_CTX_DESTROY, p, sizeof(p), NULL, 0);
        forget_ctx(t, id);
        if (tfc_current() == id)
            tfc_pop();
    }
    pthread_mutex_unlock(&t->lock);
    return r;
}

/* Context calls that only touch the thread's stack still need cuInit. */
static CUresult ctx_lock(struct tfc **tp)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    *tp = t;
    if (t->state == TFC_UNINIT) {
        pthread_mutex_unlock(&t->lock);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    return CUDA_SUCCESS;
}

/* ID is the handle of a device's primary context, active or not: a primary context keeps its
 * handle for the process's lifetime, across releases and resets, as the driver's does (the
 * CUDA runtime relies on it after cudaDeviceReset). */
static int primary_handle(struct tfc *t, uint64_t id)
{
    for (int i = 0; i < t->ndev; i++)
        if (t->dev[i].primary == id)
            return 1;
    return 0;
}

TFC_API CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    struct tfc *t;
    CUresult r = ctx_lock(&t);
    if (r)
        return r;
    uint64_t id = (uintptr_t)ctx;
    if (id && !tfc_ctx_of(t, id) && !primary_handle(t, id))
        r = CUDA_ERROR_INVALID_CONTEXT;
    else
        tfc_set_current(id);
    pthread_mutex_unlock(&t->lock);
    return r;
}

TFC_API CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    struct tfc *t;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = ctx_lock(&t);
    if (r)
        return r;
    uint64_t id = tfc_current();
    /* A context destroyed by another thread is no longer current anywhere; a released or
     * reset primary context stays current (as with the driver, its handle lives on). */
    *pctx = id && (tfc_ctx_of(t, id) || primary_handle(t, id)) ? (CUcontext)(uintptr_t)id : NULL;
    pthread_mutex_unlock(&t->lock);
    return CUDA_SUCCESS;
}

TFC_API CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
    struct tfc *t;
    CUresult r = ctx_lock(&t);
    if (r)
        return r;
    uint64_t id = (uintptr_t)ctx;
    if (!id || !tfc_ctx_of(t, id))
        r = CUDA_ERROR_INVALID_CONTEXT;
    else if (tfc_push(id) != 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&t->lock);
    return r;
}

TFC_API CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
    struct tfc *t;
    CUresult r = ctx_lock(&t);
    if (r)
        return r;
    uint64_t id = tfc_current();
    if (!id) {
        r = CUDA_ERROR_INVALID_CONTEXT;
    } else {
        tfc_pop();
        if (pctx)
            *pctx = (CUcontext)(uintptr_t)id;
    }
    pthread_mutex_unlock(&t->lock);
    return r;
}

/* The thread's current context record, or NULL (lock held). */
static struct tfc_ctx *current_ctx(struct tfc *t)
{
    uint64_t id = tfc_current();
    return id ? tfc_ctx_of(t, id) : NULL;
}

TFC_API CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    struct tfc *t;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = ctx_lock(&t);
    if (r)
        return r;
    struct tfc_ctx *c = current_ctx(t);
    if (!c)
        r = CUDA_ERROR_INVALID_CONTEXT;
    else
        *device = c->dev;
    pthread_mutex_unlock(&t->lock);
    return r;
}

TFC_API CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    if (!ctx)
        return cuCtxGetDevice(device);
    struct tfc *t;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = ctx_lock(&t);
    if (r)
        return r;
    struct tfc_ctx *c = tfc_ctx_of(t, (uintptr_t)ctx);
    if (!c)
        r = CUDA_ERROR_INVALID_CONTEXT;
    else
        *device = c->dev;
    pthread_mutex_unlock(&t->lock);
    return r;
}

TFC_API CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags)
{
    struct tfc *t;
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = ctx_lock(&t);
    if (r)
        return r;
    struct tfc_ctx *c = current_ctx(t);
    if (!c)
        r = CUDA_ERROR_INVALID_CONTEXT;
    else
        *flags = c->flags;
    pthread_mutex_unlock(&t->lock);
    return r;
}

TFC_API CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    struct tfc *t;
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = ctx_lock(&t);
    if (r)
        return r;
    uint64_t id = ctx ? (uintptr_t)ctx : tfc_current();
    if (!id || !tfc_ctx_of(t, id))
        r = CUDA_ERROR_INVALID_CONTEXT;
    else
        *version = 3020;
    pthread_mutex_unlock(&t->lock);
    return r;
}

/* cuCtxSynchronize is a plain forward (calls.def); this is its form with a context. */
TFC_API CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
    if (!ctx)
        return cuCtxSynchronize();
    struct tfc *t;
    CUresult r = ctx_lock(&t);
    if (r)
        return r;
    if (!tfc_ctx_of(t, (uintptr_t)ctx))
        r = CUDA_ERROR_INVALID_CONTEXT;
    else if (tfc_push((uintptr_t)ctx) != 0)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&t->lock);
    if (r)
        return r;
    r = cuCtxSynchronize();
    tfc_pop();
    return r;
}

/* ---- primary contexts ----------------------------------------------------------------------- */

TFC_API CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    if (!r && (dev < 0 || dev >= t->ndev))
        r = CUDA_ERROR_INVALID_DEVICE;
    struct tfc_dev *d = r ? NULL : &t->dev[dev];
    if (!r && d->primary_refs == 0) {
        uint64_t id = d->primary ? d->primary : tfc_new_id(t, TF_PROTO_H_CTX);
        uint8_t p[TF_PROTO_SIZE_ctx_create_req];
        struct tf_msg_ctx_create_req m = {
            .ctx = id, .flags = d->primary_flags, .device = (uint32_t)dev};
        tf_msg_ctx_create_req_put(p, &m);
        r = tfc_call(t, TF_OP_PRIMARY_RETAIN, p, sizeof(p), NULL, 0);
        if (!r)
            r = register_ctx(t, id, dev, d->primary_flags, 1);
        if (!r)
            d->primary = id;
    }
    if (!r) {
        d->primary_refs++;
        *pctx = (CUcontext)(uintptr_t)d->primary;
    }
    pthread_mutex_unlock(&t->lock);
    return r;
}

static void primary_drop(struct tfc *t, CUdevice dev)
{
    struct tfc_dev *d = &t->dev[dev];
    uint8_t p[TF_PROTO_SIZE_primary_drop_req];
    struct tf_msg_primary_drop_req m = {.device = (uint32_t)dev};
    tf_msg_primary_drop_req_put(p, &m);
    (void)tfc_async(t, TF_OP_PRIMARY_DROP, p, sizeof(p), NULL, 0);
    forget_ctx(t, d->primary);
    d->primary_refs = 0; /* d->primary keeps the handle for the next retain */
}

/* Before the primary context of DEV goes (its last release: LAST_REF, or a reset), the CUDA
 * runtime's per-context state is torn down while it still works (src/exptab); not under the
 * lock, the runtime's destructors call the driver. */
static void primary_going(struct tfc *t, CUdevice dev, int last_ref)
{
    pthread_mutex_lock(&t->lock);
    uint64_t id = 0;
    if (t->state == TFC_CONNECTED && dev >= 0 && dev < t->ndev && t->dev[dev].primary_refs > 0 &&
        (!last_ref || t->dev[dev].primary_refs == 1))
        id = t->dev[dev].primary;
    pthread_mutex_unlock(&t->lock);
    if (id)
        tf_exptab_ctx_gone((CUcontext)(uintptr_t)id);
}

TFC_API CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    struct tfc *t = tfc_get();
    primary_going(t, dev, 1);
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    if (!r && (dev < 0 || dev >= t->ndev))
        r = CUDA_ERROR_INVALID_DEVICE;
    if (!r && t->dev[dev].primary_refs == 0)
        r = CUDA_ERROR_INVALID_CONTEXT;
    if (!r && --t->dev[dev].primary_refs == 0)
        primary_drop(t, dev);
    pthread_mutex_unlock(&t->lock);
    return r;
}

TFC_API CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
    struct tfc *t = tfc_get();
    primary_going(t, dev, 0);
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    if (!r && (dev < 0 || dev >= t->ndev))
        r = CUDA_ERROR_INVALID_DEVICE;
    if (!r && t->dev[dev].primary_refs > 0)
        primary_drop(t, dev);
    pthread_mutex_unlock(&t->lock);
    return r;
}

TFC_API CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    struct tfc *t;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = dev_lock(&t, dev, 1);
    if (r)
        return r;
    *flags = t->dev[dev].primary_flags;
    *active = t->dev[dev].primary_refs > 0;
    pthread_mutex_unlock(&t->lock);
    return CUDA_SUCCESS;
}

TFC_API CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    struct tfc *t;
    if (flags &
        ~(unsigned)(CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX |
                    CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = dev_lock(&t, dev, 1);
    if (r)
        return r;
    /* Applies when the primary context is (re)created on the worker. */
    t->dev[dev].primary_flags = flags;
    pthread_mutex_unlock(&t->lock);
    return CUDA_SUCCESS;
}

/* Pre-CUDA-11 names with the same ABI. */
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuDevicePrimaryCtxSetFlags
TFC_API CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev);
TFC_API CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev);
TFC_API CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags);
TFC_API CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return cuDevicePrimaryCtxRelease_v2(dev);
}
TFC_API CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
    return cuDevicePrimaryCtxReset_v2(dev);
}
TFC_API CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}
