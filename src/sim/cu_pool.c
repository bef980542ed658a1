/* SPDX-License-Identifier: Apache-2.0
 *
 * The stream-ordered allocator of the simulated driver: memory pools (cuMemPool*, each
 * device's default and current pool), cuMemAllocAsync / cuMemAllocFromPoolAsync /
 * cuMemFreeAsync.
 *
 * A pool owns blocks: backing allocations charged to its device's budget (its "reserved"
 * memory). An allocation takes a whole block (a fresh one, or a free one it may reuse) and
 * registers [block, block + size) in the allocation table; cuMemFreeAsync queues a free op
 * whose execution unregisters it, and the block stays reserved in the pool. Which free block
 * an allocation may take follows the pool's reuse attributes, as the driver API documents:
 *   - a block freed on the same stream, even before the free ran (stream order makes it safe);
 *   - REUSE_FOLLOW_EVENT_DEPENDENCIES: a block whose free the allocating stream already
 *     follows (cuStreamWaitEvent on an event recorded after it, or the legacy stream's
 *     implicit synchronisation with blocking streams);
 *   - REUSE_ALLOW_OPPORTUNISTIC: a block whose free has run;
 *   - REUSE_ALLOW_INTERNAL_DEPENDENCIES: when a fresh block would exceed the budget or the
 *     pool's maxSize, a block whose free is still queued elsewhere, the allocating stream
 *     being made to wait for that free first.
 * Until a reused block's earlier frees have run, its table entry covers the largest of the
 * sizes it was handed out with (work queued before those frees may still use it); then it is
 * cut to the current allocation's size.
 *
 * Reserved memory above the release threshold goes back to the budget at the next stream,
 * event or context synchronize (idle blocks only: not allocated, frees run), and on
 * cuMemPoolTrimTo; a failed fresh block first gives the pool's idle blocks back and retries.
 * Blocks round sizes up to 512 bytes. Pools are device-wide; an allocation belongs to its
 * stream's context (it goes with it). Host-located, managed and IPC-capable pools and pool
 * export/import are not supported (CUDA_ERROR_NOT_SUPPORTED, logged once).
 *
 * Locking: one mutex (pool_mu) guards every pool and block; it is taken before an executor's
 * exec.mu and the allocation table's lock, and never while either is held.
 */
#include "sim/drv.h"

#include "common/log.h"

#include <stdlib.h>
#include <string.h>

#define BLOCK_ROUND 512u
#define REUSE_SLACK (64u * 1024u) /* a block may be this much (or 2x) bigger than asked */

struct sim_pool_block {
    struct CUmemPoolHandle_st *pool;
    struct sim_pool_block *next; /* pool->blocks, most recently freed first */
    uint64_t base, size;         /* backing */
    size_t map_len;
    int live;       /* an allocation from it is outstanding */
    int registered; /* it has an allocation table entry */
    uint64_t asked; /* requested size of the live allocation */
    uint64_t span;  /* size of the table entry */
    int pending;    /* stream-ordered frees queued, not yet run */
    /* The latest free: its stream (valid while pending > 0: a queued op keeps it alive),
     * identity and op seq. */
    struct CUstream_st *f_stream;
    unsigned long long f_id;
    enum sim_stream_kind f_kind;
    unsigned f_flags;
    CUcontext f_ctx;
    uint64_t f_seq;
};

struct CUmemPoolHandle_st {
    struct sim_device *dev;
    CUmemPoolProps props;
    int is_default, destroyed;
    int follow_events, opportunistic, internal_deps;
    uint64_t threshold;
    uint64_t reserved, reserved_high, used, used_high;
    struct sim_pool_block *blocks;
    struct CUmemPoolHandle_st *next; /* pools */
};

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static CUmemoryPool pools; /* every pool not yet freed, guarded by pool_mu */
static struct {
    CUmemoryPool def, cur;
} devpool[TF_SIM_MAX_DEVICES]; /* guarded by pool_mu */

static uint64_t round_up(uint64_t n)
{
    return (n + BLOCK_ROUND - 1) / BLOCK_ROUND * BLOCK_ROUND;
}

static CUmemoryPool pool_new(struct sim_device *d, const CUmemPoolProps *props, int is_default)
{
    CUmemoryPool p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->dev = d;
    p->props = *props;
    p->is_default = is_default;
    p->follow_events = p->opportunistic = p->internal_deps = 1;
    if (tf__handle_add(p, H_POOL) != 0) {
        free(p);
        return NULL;
    }
    p->next = pools;
    pools = p;
    return p;
}

/* D's default pool, created on first use. Caller holds pool_mu. */
static CUmemoryPool default_pool(struct sim_device *d)
{
    if (!devpool[d->index].def) {
        CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .handleTypes = CU_MEM_HANDLE_TYPE_NONE,
                                .location = {CU_MEM_LOCATION_TYPE_DEVICE, d->index}};
        devpool[d->index].def = pool_new(d, &props, 1);
    }
    return devpool[d->index].def;
}

static CUmemoryPool current_pool(struct sim_device *d)
{
    return devpool[d->index].cur ? devpool[d->index].cur : default_pool(d);
}

/* Gives BLOCK's backing back to the budget and frees it. Caller holds pool_mu. */
static void block_release(struct sim_pool_block *b)
{
    CUmemoryPool p = b->pool;
    for (struct sim_pool_block **pp = &p->blocks; *pp; pp = &(*pp)->next)
        if (*pp == b) {
            *pp = b->next;
            break;
        }
    p->reserved -= b->size;
    tf_sim_shm_mem_release(p->dev->shm, atomic_load(&p->dev->slot), b->size);
    tf__mem_backing_free((void *)(uintptr_t)b->base, b->map_len);
    free(b);
}

static int idle(const struct sim_pool_block *b)
{
    return !b->live && !b->pending && !b->registered;
}

/* A destroyed pool goes with its last block. Caller holds pool_mu. */
static void maybe_free_pool(CUmemoryPool p)
{
    if (!p->destroyed || p->blocks)
        return;
    for (CUmemoryPool *pp = &pools; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    free(p);
}

/* Releases idle blocks while the pool keeps at least KEEP bytes reserved. */
static void trim(CUmemoryPool p, uint64_t keep)
{
    struct sim_pool_block *b = p->blocks, *next;
    for (; b; b = next) {
        next = b->next;
        if (idle(b) && p->reserved - b->size >= keep)
            block_release(b);
    }
}

/* Moves B to the head of its pool's list (most recently freed first). */
static void to_front(struct sim_pool_block *b)
{
    CUmemoryPool p = b->pool;
    for (struct sim_pool_block **pp = &p->blocks; *pp; pp = &(*pp)->next)
        if (*pp == b) {
            *pp = b->next;
            break;
        }
    b->next = p->blocks;
    p->blocks = b;
}

/* The allocation entry of B has gone or its frees have all run: settle the table. Caller
 * holds pool_mu. */
static void settle(struct sim_pool_block *b)
{
    if (b->pending)
        return;
    if (b->live) {
        if (b->span != b->asked) {
            b->span = b->asked;
            (void)tf__mem_update(b->base, b->span, NULL, NULL);
        }
    } else if (b->registered) {
        b->registered = 0;
        (void)tf__mem_remove(b->base, NULL);
    }
}

/* ---- Allocation ------------------------------------------------------------------------ */

enum fit { FIT_NO, FIT_YES, FIT_WAIT };

/* Whether stream S may take free block B now (FIT_WAIT: only by waiting for its free). */
static enum fit may_reuse(CUmemoryPool p, struct sim_pool_block *b, struct CUstream_st *s)
{
    if (b->live)
        return FIT_NO;
    if (!b->f_id) /* never freed in stream order (cuMemFree, teardown) */
        return FIT_YES;
    int follows = b->f_id == s->id ||
                  (p->follow_events &&
                   tf__stream_follows(s, b->f_id, b->f_kind, b->f_flags, b->f_ctx, b->f_seq));
    if (follows || (!b->pending && p->opportunistic))
        return FIT_YES;
    return b->pending && p->internal_deps ? FIT_WAIT : FIT_NO;
}

/* The smallest free block of P that fits SIZE and S may take with rule WANT. */
static struct sim_pool_block *find_block(CUmemoryPool p, uint64_t size, struct CUstream_st *s,
                                         enum fit want)
{
    struct sim_pool_block *best = NULL;
    uint64_t limit = size * 2 > size + REUSE_SLACK ? size * 2 : size + REUSE_SLACK;
    for (struct sim_pool_block *b = p->blocks; b; b = b->next) {
        if (b->size < size || b->size > limit || (best && b->size >= best->size))
            continue;
        if (may_reuse(p, b, s) == want)
            best = b;
    }
    return best;
}

/* A fresh block of SIZE bytes (charged to the budget), or NULL. Caller holds pool_mu. */
static struct sim_pool_block *fresh_block(CUmemoryPool p, uint64_t size)
{
    struct sim_device *d = p->dev;
    if (p->props.maxSize && p->reserved + size > p->props.maxSize)
        return NULL;
    if (tf_sim_shm_mem_reserve(d->shm, atomic_load(&d->slot), size) != 0)
        return NULL;
    struct sim_pool_block *b = calloc(1, sizeof(*b));
    void *mem = b ? tf__mem_backing_alloc(size, &b->map_len) : NULL;
    if (!mem) {
        free(b);
        tf_sim_shm_mem_release(d->shm, atomic_load(&d->slot), size);
        return NULL;
    }
    b->pool = p;
    b->base = (uint64_t)(uintptr_t)mem;
    b->size = size;
    b->next = p->blocks;
    p->blocks = b;
    p->reserved += size;
    if (p->reserved > p->reserved_high)
        p->reserved_high = p->reserved;
    return b;
}

static CUresult pool_alloc(CUmemoryPool p, uint64_t size, struct CUstream_st *s, uint64_t *out)
{
    if (size > (uint64_t)TF_SIM_MAX_MEMORY)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t rsize = round_up(size);
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&pool_mu);
    struct sim_pool_block *b = find_block(p, rsize, s, FIT_YES);
    if (!b && !(b = fresh_block(p, rsize))) {
        trim(p, 0); /* idle memory of the pool first, then wait for a queued free */
        if (!(b = fresh_block(p, rsize)) && (b = find_block(p, rsize, s, FIT_WAIT)))
            rc = tf__stream_wait_seq(s, b->f_stream, b->f_seq);
        if (!b)
            rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (rc)
        goto out;
    if (b->registered) { /* frees of earlier allocations still queued: widen the entry */
        uint64_t id;
        b->span = b->span > size ? b->span : size;
        (void)tf__mem_update(b->base, b->span, s->ctx, &id);
    } else {
        if ((rc = tf__mem_insert(s->ctx, p->dev->index, M_DEVICE, b->base, size, 0, 0, B_POOL, b,
                                 NULL))) {
            if (!b->pending && !b->f_id)
                block_release(b);
            goto out;
        }
        b->registered = 1;
        b->span = size;
    }
    b->live = 1;
    b->asked = size;
    p->used += b->size;
    if (p->used > p->used_high)
        p->used_high = p->used;
    *out = b->base;
out:
    pthread_mutex_unlock(&pool_mu);
    return rc;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, int from_pool,
                            CUstream h, int per_thread)
{
    CUcontext ctx;
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, &ctx, &s);
    if (rc)
        return rc;
    if (!dptr || bytesize == 0 || (from_pool && !tf__handle_is(pool, H_POOL)))
        return CUDA_ERROR_INVALID_VALUE;
    if (atomic_load(&s->cap)) /* captured: an allocation node, owned by the graph */
        return tf__capture_mem_alloc(s, bytesize, from_pool ? pool : NULL, dptr);
    if ((rc = tf__capture_check_launch(s))) /* the legacy stream during a blocking capture */
        return rc;
    if (!from_pool) {
        pthread_mutex_lock(&pool_mu);
        pool = current_pool(ctx->dev);
        pthread_mutex_unlock(&pool_mu);
        if (!pool)
            return CUDA_ERROR_OUT_OF_MEMORY;
    }
    uint64_t p;
    if ((rc = pool_alloc(pool, bytesize, s, &p)))
        return rc;
    *dptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async(dptr, bytesize, NULL, 0, hStream, 0);
}

CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    return alloc_async(dptr, bytesize, NULL, 0, hStream, 1);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                         CUstream hStream)
{
    return alloc_async(dptr, bytesize, pool, 1, hStream, 0);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream)
{
    return alloc_async(dptr, bytesize, pool, 1, hStream, 1);
}

/* ---- Frees ----------------------------------------------------------------------------- */

/* Queues the free of pool block B on S. Caller holds pool_mu (so the executor, which takes
 * it to run the op, cannot retire the op before its seq is read). */
static CUresult pool_free(struct sim_pool_block *b, CUdeviceptr dptr, struct CUstream_st *s)
{
    struct sim_op *op = tf__op_new(OP_FREE);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.free.ptr = dptr;
    op->u.free.block = b;
    CUresult rc = tf__enqueue(s, op, 0);
    if (rc)
        return rc;
    b->live = 0;
    b->pending++;
    b->pool->used -= b->size;
    b->f_stream = s;
    b->f_id = s->id;
    b->f_kind = s->kind;
    b->f_flags = s->flags;
    b->f_ctx = s->ctx;
    b->f_seq = op->seq;
    to_front(b);
    return CUDA_SUCCESS;
}

static CUresult free_async(CUdeviceptr dptr, CUstream h, int per_thread)
{
    CUcontext ctx;
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, &ctx, &s);
    if (rc)
        return rc;
    if (atomic_load(&s->cap)) /* captured: a free node of a graph allocation */
        return tf__capture_mem_free(s, dptr);
    if ((rc = tf__capture_check_launch(s)))
        return rc;
    struct sim_alloc a;
    if (tf__mem_lookup((uint64_t)dptr, &a) != 0 || a.base != (uint64_t)dptr || a.kind != M_DEVICE ||
        (a.backing == B_GRAPH && tf__gmem_freed_in_graph(&a)))
        return CUDA_ERROR_INVALID_VALUE;
    if (a.backing == B_POOL) {
        pthread_mutex_lock(&pool_mu);
        struct sim_pool_block *b = a.owner;
        rc = b->live ? pool_free(b, dptr, s) : CUDA_ERROR_INVALID_VALUE;
        pthread_mutex_unlock(&pool_mu);
        return rc;
    }
    /* Memory from cuMemAlloc: freed when the stream reaches the free. */
    struct sim_op *op = tf__op_new(OP_FREE);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.free.ptr = dptr;
    return tf__enqueue(s, op, 0);
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(dptr, hStream, 0);
}

CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    return free_async(dptr, hStream, 1);
}

struct sim_device *tf__pool_device(CUmemoryPool pool)
{
    return pool->dev; /* fixed for the pool's life */
}

CUmemoryPool tf__pool_of(const struct sim_alloc *a)
{
    if (a->backing != B_POOL)
        return NULL;
    const struct sim_pool_block *b = a->owner;
    return b->pool; /* a block's pool is fixed for its life */
}

void tf__pool_free_done(struct sim_pool_block *b)
{
    pthread_mutex_lock(&pool_mu);
    if (b->pending > 0)
        b->pending--;
    settle(b);
    CUmemoryPool p = b->pool;
    if (p->destroyed) {
        trim(p, 0);
        maybe_free_pool(p);
    }
    pthread_mutex_unlock(&pool_mu);
}

void tf__pool_entry_released(const struct sim_alloc *a)
{
    struct sim_pool_block *b = a->owner;
    pthread_mutex_lock(&pool_mu);
    b->registered = 0; /* the entry is gone already */
    if (b->live) {
        b->live = 0;
        b->pool->used -= b->size;
        if (!b->pending)
            b->f_id = 0; /* freed synchronously: anyone may take it */
    }
    to_front(b);
    CUmemoryPool p = b->pool;
    if (p->destroyed) {
        trim(p, 0);
        maybe_free_pool(p);
    }
    pthread_mutex_unlock(&pool_mu);
}

void tf__pools_synced(struct sim_device *d)
{
    pthread_mutex_lock(&pool_mu);
    for (CUmemoryPool p = pools; p; p = p->next)
        if (p->dev == d && p->reserved > p->threshold)
            trim(p, p->threshold);
    pthread_mutex_unlock(&pool_mu);
}

void tf__pools_ctx_gone(CUcontext ctx)
{
    struct sim_device *d = ctx->dev;
    pthread_mutex_lock(&d->attach_mu);
    int last = d->users <= 1;
    pthread_mutex_unlock(&d->attach_mu);
    if (!last)
        return;
    pthread_mutex_lock(&pool_mu);
    CUmemoryPool next;
    for (CUmemoryPool p = pools; p; p = next) {
        next = p->next;
        if (p->dev == d) {
            trim(p, 0);
            maybe_free_pool(p);
        }
    }
    pthread_mutex_unlock(&pool_mu);
}

/* ---- Pools ----------------------------------------------------------------------------- */

/* Validates a location naming a device: 0 and *D, or the error. Host locations are valid
 * but not supported (no host memory pools on the simulated GPU). */
static CUresult device_location(const CUmemLocation *loc, struct sim_device **d)
{
    switch (loc->type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        if (!(*d = tf__device(loc->id)))
            return CUDA_ERROR_INVALID_DEVICE;
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        return tf__not_supported("memory pools located in host memory");
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!pool || !props || props->win32SecurityAttributes)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(props->reserved); i++)
        if (props->reserved[i])
            return CUDA_ERROR_INVALID_VALUE;
    if (props->allocType == CU_MEM_ALLOCATION_TYPE_MANAGED)
        return tf__not_supported("managed memory pools");
    if (props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_device *d = NULL;
    if ((rc = device_location(&props->location, &d)))
        return rc;
    if (props->handleTypes != CU_MEM_HANDLE_TYPE_NONE)
        return tf__not_supported("IPC-capable memory pools (handleTypes)");
    if (props->usage)
        return tf__not_supported("memory pool usage flags");
    pthread_mutex_lock(&pool_mu);
    CUmemoryPool p = pool_new(d, props, 0);
    pthread_mutex_unlock(&pool_mu);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *pool = p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    pthread_mutex_lock(&pool_mu);
    if (!tf__handle_is(pool, H_POOL) || pool->is_default) {
        pthread_mutex_unlock(&pool_mu);
        return CUDA_ERROR_INVALID_VALUE;
    }
    tf__handle_del(pool);
    pool->destroyed = 1;
    if (devpool[pool->dev->index].cur == pool)
        devpool[pool->dev->index].cur = NULL;
    trim(pool, 0);
    maybe_free_pool(pool); /* else with its last outstanding allocation */
    pthread_mutex_unlock(&pool_mu);
    return CUDA_SUCCESS;
}

/* Pool handles stay valid until destroyed; their fields are read under pool_mu. */
static CUresult pool_check(CUmemoryPool pool)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    return tf__handle_is(pool, H_POOL) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The int-valued reuse policy attributes of P (NULL: not one of them). */
static int *reuse_attr(CUmemoryPool p, CUmemPool_attribute attr)
{
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
        return &p->follow_events;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
        return &p->opportunistic;
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        return &p->internal_deps;
    default:
        return NULL;
    }
}

/* The 64-bit attributes of P; *WRITABLE tells whether cuMemPoolSetAttribute may set it (the
 * high watermarks only to 0, which resets them). */
static uint64_t *u64_attr(CUmemoryPool p, CUmemPool_attribute attr, int *writable)
{
    *writable = attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD ||
                attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH || attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH;
    switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        return &p->threshold;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
        return &p->reserved;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
        return &p->reserved_high;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
        return &p->used;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        return &p->used_high;
    default:
        return NULL;
    }
}

CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUresult rc = pool_check(pool);
    if (rc)
        return rc;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    rc = CUDA_SUCCESS;
    pthread_mutex_lock(&pool_mu);
    int *flag = reuse_attr(pool, attr), writable;
    uint64_t *v = u64_attr(pool, attr, &writable);
    if (flag) {
        *flag = *(int *)value != 0;
    } else if (!v || !writable) {
        rc = CUDA_ERROR_INVALID_VALUE; /* unknown, or a read-only current value */
    } else if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) {
        *v = *(cuuint64_t *)value;
    } else if (*(cuuint64_t *)value != 0) {
        rc = CUDA_ERROR_INVALID_VALUE; /* a high watermark can only be reset */
    } else {
        *v = attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH ? pool->reserved : pool->used;
    }
    pthread_mutex_unlock(&pool_mu);
    return rc;
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUresult rc = pool_check(pool);
    if (rc)
        return rc;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    rc = CUDA_SUCCESS;
    pthread_mutex_lock(&pool_mu);
    int *flag = reuse_attr(pool, attr), writable;
    uint64_t *v = u64_attr(pool, attr, &writable);
    if (flag)
        *(int *)value = *flag;
    else if (v)
        *(cuuint64_t *)value = *v;
    else
        rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&pool_mu);
    return rc;
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    CUresult rc = pool_check(pool);
    if (rc)
        return rc;
    pthread_mutex_lock(&pool_mu);
    if (pool->reserved > minBytesToKeep)
        trim(pool, minBytesToKeep);
    pthread_mutex_unlock(&pool_mu);
    return CUDA_SUCCESS;
}

/* The simulated devices have no peer mappings: a pool is accessible from its own device
 * (always read-write) and nowhere else. */
CUresult CUDAAPI cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    CUresult rc = pool_check(pool);
    if (rc)
        return rc;
    if (count && !map)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        struct sim_device *d;
        if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
            (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
             map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
             map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            return CUDA_ERROR_INVALID_VALUE;
        if (!(d = tf__device(map[i].location.id)))
            return CUDA_ERROR_INVALID_DEVICE;
        if (d == pool->dev) {
            if (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
                return CUDA_ERROR_INVALID_VALUE; /* the owner's access cannot be revoked */
        } else if (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE) {
            return CUDA_ERROR_INVALID_DEVICE; /* no peer access between simulated GPUs */
        }
    }
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool,
                                    CUmemLocation *location)
{
    CUresult rc = pool_check(memPool);
    if (rc)
        return rc;
    if (!flags || !location)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_device *d = NULL;
    if (location->type == CU_MEM_LOCATION_TYPE_DEVICE && !(d = tf__device(location->id)))
        return CUDA_ERROR_INVALID_DEVICE;
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE &&
        location->type != CU_MEM_LOCATION_TYPE_HOST &&
        location->type != CU_MEM_LOCATION_TYPE_HOST_NUMA)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = d == memPool->dev ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return CUDA_SUCCESS;
}

/* ---- A device's default and current pool ----------------------------------------------- */

static CUresult device_pool(CUmemoryPool *out, struct sim_device *d, int current)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool_mu);
    CUmemoryPool p = current ? current_pool(d) : default_pool(d);
    pthread_mutex_unlock(&pool_mu);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = p;
    return CUDA_SUCCESS;
}

static CUresult set_device_pool(struct sim_device *d, CUmemoryPool pool)
{
    CUresult rc = pool_check(pool);
    if (rc)
        return rc;
    pthread_mutex_lock(&pool_mu);
    if (pool->dev != d) {
        pthread_mutex_unlock(&pool_mu);
        return CUDA_ERROR_INVALID_VALUE;
    }
    devpool[d->index].cur = pool->is_default ? NULL : pool;
    pthread_mutex_unlock(&pool_mu);
    return CUDA_SUCCESS;
}

static CUresult device_arg(CUdevice dev, struct sim_device **d)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    return (*d = tf__device(dev)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    struct sim_device *d = NULL;
    CUresult rc = device_arg(dev, &d);
    return rc ? rc : device_pool(pool_out, d, 0);
}

CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    struct sim_device *d = NULL;
    CUresult rc = device_arg(dev, &d);
    return rc ? rc : device_pool(pool, d, 1);
}

CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    struct sim_device *d = NULL;
    CUresult rc = device_arg(dev, &d);
    return rc ? rc : set_device_pool(d, pool);
}

/* The location-based forms (CUDA 13): device locations of pinned memory only. */
static CUresult location_arg(const CUmemLocation *loc, CUmemAllocationType type,
                             struct sim_device **d)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!loc)
        return CUDA_ERROR_INVALID_VALUE;
    if (type == CU_MEM_ALLOCATION_TYPE_MANAGED)
        return tf__not_supported("managed memory pools");
    if (type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    return device_location(loc, d);
}

CUresult CUDAAPI cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
                                        CUmemAllocationType type)
{
    struct sim_device *d = NULL;
    CUresult rc = location_arg(location, type, &d);
    return rc ? rc : device_pool(pool_out, d, 0);
}

CUresult CUDAAPI cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location,
                                 CUmemAllocationType type)
{
    struct sim_device *d = NULL;
    CUresult rc = location_arg(location, type, &d);
    return rc ? rc : device_pool(pool, d, 1);
}

CUresult CUDAAPI cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type,
                                 CUmemoryPool pool)
{
    struct sim_device *d = NULL;
    CUresult rc = location_arg(location, type, &d);
    return rc ? rc : set_device_pool(d, pool);
}
