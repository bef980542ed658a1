/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker sessions: the stream-ordered allocator and memory pools (calls.def "pools",
 * session_int.h).
 *
 * Every pool a client uses is its own: the one standing for a device's default pool is
 * created for the session (cuDeviceGetDefaultMemPool), so two clients of one worker never
 * hand each other memory (nor its old contents), and allocations name their pool explicitly
 * (the driver's process-wide current pool is never changed).
 *
 * VRAM accounting: a pool is charged what it holds reserved from the driver
 * (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), which covers every allocation made from it and the
 * freed memory it keeps for reuse. Before an allocation the worker reserves its size against
 * the limit (after crediting back what the session's pools gave to the driver since they were
 * last looked at); without room it is refused with CUDA_ERROR_OUT_OF_MEMORY before the driver
 * sees it, unless the pool's own idle memory can serve it. After it the charge is set to what
 * the pool then reserves; growth past the limit (a driver reserving more than was asked) is
 * undone and refused too. Memory a pool gives back (at a synchronisation past its release
 * threshold, cuMemPoolTrimTo, destruction) is credited at the session's synchronisations
 * (context, stream, event), next allocation, cuMemGetInfo, trim or attribute change, and
 * when an allocation of the session would otherwise be refused. A pool destroyed with allocations
 * outstanding keeps its charge until the session ends.
 */
#include "remote/worker/session_int.h"

#include "common/err.h"
#include "common/log.h"

#include <stdlib.h>
#include <string.h>

#define POOL_ROUND 512u

static CUresult pool_attr(struct session *s, CUmemoryPool p, CUmemPool_attribute a, uint64_t *v)
{
    void *fn = s->d->call[TF_CALL_IDX_cuMemPoolGetAttribute];
    CUresult(CUDAAPI * get)(CUmemoryPool, CUmemPool_attribute, void *);
    if (!fn)
        return CUDA_ERROR_NOT_SUPPORTED;
    memcpy(&get, &fn, sizeof(get));
    cuuint64_t u = 0;
    CUresult r = get(p, a, &u);
    *v = u;
    return r;
}

/* Sets P's charge to what it reserves now; returns the bytes given back to the limit. */
static int64_t settle(struct session *s, struct obj *p)
{
    uint64_t cur;
    if (pool_attr(s, p->h.pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &cur) != CUDA_SUCCESS ||
        cur > INT64_MAX)
        return 0;
    int64_t d = (int64_t)cur - p->bytes;
    if (d < 0) {
        tf_worker_vram_release(s->w, p->dev, -d);
    } else if (d > 0 && tf_worker_vram_reserve(s->w, p->dev, d) != 0) {
        tf_log(TF_LOG_WARN, "worker", "conn %llu: a pool reserves %lld bytes past the VRAM limit",
               (unsigned long long)s->c->id, (long long)d);
        return 0;
    }
    p->bytes = (int64_t)cur;
    return d < 0 ? -d : 0;
}

int64_t tf__ws_pools_settle(struct session *s, int dev)
{
    size_t pos = 0;
    uint64_t key;
    void *val;
    int64_t back = 0;
    while (tf_htab_next(&s->pools, &pos, &key, &val)) {
        struct obj *p = val;
        if (dev < 0 || p->dev == dev)
            back += settle(s, p);
    }
    return back;
}

int tf__ws_pool_added(struct session *s, struct obj *p)
{
    return tf_htab_put(&s->pools, (uintptr_t)p->h.pool, p);
}

void tf__ws_pool_release(struct session *s, struct obj *p)
{
    uint64_t used = 0;
    (void)pool_attr(s, p->h.pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
    void *fn = s->d->call[TF_CALL_IDX_cuMemPoolDestroy];
    CUresult(CUDAAPI * destroy)(CUmemoryPool);
    memcpy(&destroy, &fn, sizeof(destroy));
    CUresult r = fn ? destroy(p->h.pool) : CUDA_ERROR_NOT_SUPPORTED;
    tf_htab_del(&s->pools, (uintptr_t)p->h.pool);
    if (r == CUDA_SUCCESS && used == 0)
        tf_worker_vram_release(s->w, p->dev, p->bytes);
    else if (p->dev >= 0 && p->dev < (int)TF_PROTO_MAX_DEVICES)
        s->pool_orphans[p->dev] += p->bytes; /* its memory goes with its last allocation */
    p->bytes = 0;
}

void tf__ws_pools_gone(struct session *s)
{
    for (int i = 0; i < (int)TF_PROTO_MAX_DEVICES; i++) {
        if (s->pool_orphans[i])
            tf_worker_vram_release(s->w, i, s->pool_orphans[i]);
        s->pool_orphans[i] = 0;
    }
}

/* A synchronisation is where the driver gives what pools hold past their release threshold
 * back: credited to the limit at once, so another client of the worker can use it. */
#define SYNC_HOOK(sym)                                                                             \
    CUresult tf__ws_hook_##sym(struct session *s, uint64_t ctx, tf_ws_tramp call, void *fn,        \
                               const uint64_t *v, uint64_t *o, void **nh)                          \
    {                                                                                              \
        (void)ctx;                                                                                 \
        CUresult r = call(fn, v, o, nh);                                                           \
        if (s->pools.count)                                                                        \
            (void)tf__ws_pools_settle(s, -1);                                                      \
        return r;                                                                                  \
    }
SYNC_HOOK(cuCtxSynchronize)
SYNC_HOOK(cuStreamSynchronize)
SYNC_HOOK(cuEventSynchronize)
#undef SYNC_HOOK

static struct obj *pool_obj(struct session *s, uint64_t h)
{
    return tf_htab_get(&s->pools, h);
}

/* A new pool on device V[1] (a worker device), of the properties' fields of the wire form. */
static CUresult create(struct session *s, int dev, size_t max_size, unsigned short usage, void **nh)
{
    void *fn = s->d->call[TF_CALL_IDX_cuMemPoolCreate];
    if (!fn)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult(CUDAAPI * mk)(CUmemoryPool *, const CUmemPoolProps *);
    memcpy(&mk, &fn, sizeof(mk));
    CUmemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev;
    props.maxSize = max_size;
    props.usage = usage;
    CUmemoryPool p = NULL;
    CUresult r = mk(&p, &props);
    if (r == CUDA_SUCCESS)
        nh[0] = p;
    return r;
}

CUresult tf__ws_hook_cuMemPoolCreate(struct session *s, uint64_t ctx, tf_ws_tramp call, void *fn,
                                     const uint64_t *v, uint64_t *o, void **nh)
{
    (void)ctx, (void)call, (void)fn, (void)o;
    return create(s, (int)(int64_t)v[1], (size_t)v[2], (unsigned short)v[3], nh);
}

CUresult tf__ws_hook_cuDeviceGetDefaultMemPool(struct session *s, uint64_t ctx, tf_ws_tramp call,
                                               void *fn, const uint64_t *v, uint64_t *o, void **nh)
{
    (void)ctx, (void)call, (void)fn, (void)o;
    return create(s, (int)(int64_t)v[1], 0, 0, nh);
}

CUresult tf__ws_hook_cuMemPoolSetAttribute(struct session *s, uint64_t ctx, tf_ws_tramp call,
                                           void *fn, const uint64_t *v, uint64_t *o, void **nh)
{
    (void)ctx, (void)call, (void)o, (void)nh;
    CUresult(CUDAAPI * set)(CUmemoryPool, CUmemPool_attribute, void *);
    memcpy(&set, &fn, sizeof(set));
    CUmemoryPool p = (CUmemoryPool)(uintptr_t)v[0];
    CUmemPool_attribute a = (CUmemPool_attribute)v[1];
    int i = (int)v[2];
    cuuint64_t u = v[2];
    int is_int = a == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ||
                 a == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ||
                 a == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
    CUresult r = set(p, a, is_int ? (void *)&i : (void *)&u);
    struct obj *po = pool_obj(s, v[0]);
    if (r == CUDA_SUCCESS && po)
        settle(s, po);
    return r;
}

CUresult tf__ws_hook_cuMemPoolGetAttribute(struct session *s, uint64_t ctx, tf_ws_tramp call,
                                           void *fn, const uint64_t *v, uint64_t *o, void **nh)
{
    (void)s, (void)ctx, (void)call, (void)nh;
    CUresult(CUDAAPI * get)(CUmemoryPool, CUmemPool_attribute, void *);
    memcpy(&get, &fn, sizeof(get));
    CUmemPool_attribute a = (CUmemPool_attribute)v[1];
    /* Room for either type; an int attribute fills the first bytes. */
    union {
        int i;
        cuuint64_t u;
    } val = {.u = 0};
    CUresult r = get((CUmemoryPool)(uintptr_t)v[0], a, &val);
    int is_int = a == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ||
                 a == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC ||
                 a == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES;
    o[2] = is_int ? (uint64_t)(unsigned)val.i : val.u;
    return r;
}

CUresult tf__ws_hook_cuMemPoolTrimTo(struct session *s, uint64_t ctx, tf_ws_tramp call, void *fn,
                                     const uint64_t *v, uint64_t *o, void **nh)
{
    (void)ctx;
    CUresult r = call(fn, v, o, nh);
    struct obj *po = pool_obj(s, v[0]);
    if (r == CUDA_SUCCESS && po)
        settle(s, po);
    return r;
}

/* A location of the wire form: device ordinals are the client's. */
static CUresult location(struct session *s, uint64_t type, uint64_t id, CUmemLocation *loc)
{
    loc->type = (CUmemLocationType)type;
    loc->id = (int)(int64_t)id;
    if (loc->type == CU_MEM_LOCATION_TYPE_DEVICE) {
        if (loc->id < 0 || loc->id >= s->w->ndev)
            return CUDA_ERROR_INVALID_DEVICE;
        loc->id = (int)s->w->devs[loc->id].dev;
    }
    return CUDA_SUCCESS;
}

CUresult tf__ws_hook_cuMemPoolSetAccess(struct session *s, uint64_t ctx, tf_ws_tramp call, void *fn,
                                        const uint64_t *v, uint64_t *o, void **nh)
{
    (void)ctx, (void)call, (void)o, (void)nh;
    CUresult(CUDAAPI * set)(CUmemoryPool, const CUmemAccessDesc *, size_t);
    memcpy(&set, &fn, sizeof(set));
    CUmemAccessDesc d;
    memset(&d, 0, sizeof(d));
    CUresult r = location(s, v[1], v[2], &d.location);
    d.flags = (CUmemAccess_flags)v[3];
    return r ? r : set((CUmemoryPool)(uintptr_t)v[0], &d, 1);
}

CUresult tf__ws_hook_cuMemPoolGetAccess(struct session *s, uint64_t ctx, tf_ws_tramp call, void *fn,
                                        const uint64_t *v, uint64_t *o, void **nh)
{
    (void)ctx, (void)call, (void)nh;
    CUresult(CUDAAPI * get)(CUmemAccess_flags *, CUmemoryPool, CUmemLocation *);
    memcpy(&get, &fn, sizeof(get));
    CUmemLocation loc;
    CUmemAccess_flags f = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    CUresult r = location(s, v[2], v[3], &loc);
    if (!r)
        r = get(&f, (CUmemoryPool)(uintptr_t)v[1], &loc);
    o[0] = (uint64_t)f;
    return r;
}

/* Undoes allocation P of pool PO on stream ST that grew the pool past the limit: the memory
 * goes back to the pool, the pool gives what it holds idle back to the driver. */
static void undo(struct session *s, struct obj *po, CUdeviceptr p, CUstream st)
{
    void *ffn = s->d->call[TF_CALL_IDX_cuMemFreeAsync];
    void *tfn = s->d->call[TF_CALL_IDX_cuMemPoolTrimTo];
    CUresult(CUDAAPI * fr)(CUdeviceptr, CUstream);
    CUresult(CUDAAPI * trim)(CUmemoryPool, size_t);
    memcpy(&fr, &ffn, sizeof(fr));
    memcpy(&trim, &tfn, sizeof(trim));
    if (ffn && fr(p, st) == CUDA_SUCCESS) {
        tf_wconn_wait_begin(s->c);
        (void)s->d->streamSynchronize(st);
        tf_wconn_wait_end(s->c);
    }
    if (tfn)
        (void)trim(po->h.pool, 0);
    settle(s, po);
}

CUresult tf__ws_hook_cuMemAllocFromPoolAsync(struct session *s, uint64_t ctx, tf_ws_tramp call,
                                             void *fn, const uint64_t *v, uint64_t *o, void **nh)
{
    struct obj *po = pool_obj(s, v[2]);
    if (!po)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t n = v[1];
    CUstream st = (CUstream)(uintptr_t)v[3];
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    if (n == 0 || (s->d->streamIsCapturing && s->d->streamIsCapturing(st, &cs) == CUDA_SUCCESS &&
                   cs == CU_STREAM_CAPTURE_STATUS_ACTIVE)) {
        /* Captured: an allocation node of the graph, charged when the graph is instantiated;
         * its address is usable by the work captured after it. (Size 0: the driver's error.) */
        CUresult r = call(fn, v, o, nh);
        if (r == CUDA_SUCCESS && tf_rangeset_add(&s->mem, o[0], n, po->id, ctx) != 0)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        return r;
    }
    if (n > INT64_MAX - POOL_ROUND)
        return CUDA_ERROR_OUT_OF_MEMORY;
    settle(s, po);
    int64_t held = (int64_t)((n + POOL_ROUND - 1) / POOL_ROUND * POOL_ROUND);
    if (tf_worker_vram_reserve(s->w, po->dev, held) != 0) {
        if (tf__ws_pools_settle(s, po->dev) == 0 ||
            tf_worker_vram_reserve(s->w, po->dev, held) != 0) {
            uint64_t used = 0;
            if (pool_attr(s, po->h.pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) != 0 ||
                (uint64_t)po->bytes < used || (uint64_t)po->bytes - used < n)
                return CUDA_ERROR_OUT_OF_MEMORY;
            held = 0; /* the pool's idle memory may serve it */
        }
    }
    CUresult r = call(fn, v, o, nh);
    if (r) {
        tf_worker_vram_release(s->w, po->dev, held);
        return r;
    }
    uint64_t cur = 0;
    if (pool_attr(s, po->h.pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &cur) == CUDA_SUCCESS &&
        cur <= INT64_MAX) {
        int64_t d = (int64_t)cur - po->bytes - held;
        if (d < 0) {
            tf_worker_vram_release(s->w, po->dev, -d);
        } else if (d > 0 && tf_worker_vram_reserve(s->w, po->dev, d) != 0) {
            po->bytes += held;
            undo(s, po, (CUdeviceptr)o[0], st);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        po->bytes = (int64_t)cur;
    } else {
        po->bytes += held;
    }
    if (tf_rangeset_add(&s->mem, o[0], n, po->id, ctx) != 0) {
        undo(s, po, (CUdeviceptr)o[0], st);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

CUresult tf__ws_hook_cuMemFreeAsync(struct session *s, uint64_t ctx, tf_ws_tramp call, void *fn,
                                    const uint64_t *v, uint64_t *o, void **nh)
{
    (void)ctx;
    const struct tf_range *rg = tf_rangeset_find(&s->mem, v[0], 0);
    if (!rg || rg->base != v[0] ||
        (rg->owner != 0 && TF_PROTO_HANDLE_TYPE(rg->owner) != TF_PROTO_H_POOL))
        return CUDA_ERROR_INVALID_VALUE;
    struct tf_range gone = *rg;
    CUresult r = call(fn, v, o, nh);
    if (r)
        return r;
    tf_rangeset_del(&s->mem, gone.base, gone.owner, NULL);
    if (gone.owner == 0) /* cuMemAlloc's memory, freed in stream order */
        tf__ws_vram_freed(s, gone.aux, (int64_t)gone.size, r);
    return CUDA_SUCCESS;
}

/* ---- graph memory nodes --------------------------------------------------------------------- */

/* The bytes graph G's allocation nodes allocate (0 when the driver cannot tell: a driver
 * without graph memory has none). With OWNER, their ranges are added to the session's graph
 * memory under OWNER instead. */
static CUresult graph_alloc_bytes(struct session *s, CUgraph g, uint64_t *total, uint64_t owner)
{
    const struct tf_drv *d = s->d;
    *total = 0;
    size_t n = 0;
    if (!d->graphGetNodes || !d->graphNodeGetType || !d->graphMemAllocNodeGetParams ||
        d->graphGetNodes(g, NULL, &n) != CUDA_SUCCESS || n == 0)
        return CUDA_SUCCESS;
    CUgraphNode *v = calloc(n, sizeof(*v));
    if (!v)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = d->graphGetNodes(g, v, &n);
    for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
        CUgraphNodeType t;
        if (d->graphNodeGetType(v[i], &t) != CUDA_SUCCESS || t != CU_GRAPH_NODE_TYPE_MEM_ALLOC)
            continue;
        CUDA_MEM_ALLOC_NODE_PARAMS p;
        memset(&p, 0, sizeof(p));
        r = d->graphMemAllocNodeGetParams(v[i], &p);
        if (r == CUDA_SUCCESS && owner) {
            /* the same range twice: an earlier executable graph of G that still lives */
            int e = tf_rangeset_add(&s->gmem, p.dptr, p.bytesize, owner, 0);
            if (e != 0 && e != TF_EEXIST)
                r = CUDA_ERROR_OUT_OF_MEMORY;
            continue;
        }
        if (r == CUDA_SUCCESS && p.bytesize > UINT64_MAX - *total)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        if (r == CUDA_SUCCESS)
            *total += p.bytesize;
    }
    free(v);
    return r;
}

/* An executable graph is charged what its allocation nodes allocate for as long as it exists
 * (the driver backs them at its first launch and keeps them for the next ones): a graph
 * whose memory does not fit is refused at instantiation with CUDA_ERROR_OUT_OF_MEMORY. */
CUresult tf__ws_hook_cuGraphInstantiateWithFlags(struct session *s, uint64_t ctx, tf_ws_tramp call,
                                                 void *fn, const uint64_t *v, uint64_t *o,
                                                 void **nh)
{
    int dev = tf__ws_ctx_dev(s, ctx);
    uint64_t bytes;
    CUresult r = graph_alloc_bytes(s, (CUgraph)(uintptr_t)v[1], &bytes, 0);
    if (r)
        return r;
    if (bytes > INT64_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (bytes && tf_worker_vram_reserve(s->w, dev, (int64_t)bytes) != 0 &&
        (tf__ws_pools_settle(s, dev) == 0 ||
         tf_worker_vram_reserve(s->w, dev, (int64_t)bytes) != 0))
        return CUDA_ERROR_OUT_OF_MEMORY;
    r = call(fn, v, o, nh);
    /* Its memory stays this client's for host copies between the launches of a captured
     * program (api_capture.c) while the executable graph lives: the driver keeps the
     * addresses of an executable graph's allocation nodes for as long as it exists. */
    uint64_t unused;
    if (!r && bytes && graph_alloc_bytes(s, (CUgraph)(uintptr_t)v[1], &unused, v[0]) != 0) {
        tf_rangeset_del_owner(&s->gmem, v[0]);
        CUresult(CUDAAPI * destroy)(CUgraphExec);
        void *dfn = s->d->call[TF_CALL_IDX_cuGraphExecDestroy];
        memcpy(&destroy, &dfn, sizeof(destroy));
        if (destroy)
            (void)destroy((CUgraphExec)nh[0]);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r)
        tf_worker_vram_release(s->w, dev, (int64_t)bytes);
    else
        s->new_charge = (int64_t)bytes;
    return r;
}
