/* SPDX-License-Identifier: Apache-2.0
 *
 * Executable graphs of the simulated driver: instantiation (a snapshot of the graph: nodes in
 * a topological order, child graphs inlined, parameters copied), launch and upload, exec
 * destroy, per-node parameter updates, node enabling, whole-graph update (same topology), and
 * graph memory: the memory of allocation nodes, cuDeviceGraphMemTrim and the device's graph
 * memory attributes.
 *
 * A launch queues the nodes' operations on the launch stream in that order (a valid
 * execution of any graph: every node runs after its dependencies), behind the previous launch
 * of the same executable graph, so replays produce exactly what the graph describes, every
 * time. Graph memory: an allocation node reserves its address range when it is made (the
 * address never changes); the first launch backs it and charges it to the device budget (the
 * launch fails with CUDA_ERROR_OUT_OF_MEMORY when it does not fit); the allocation exists
 * from its allocation op to its free (a free node, cuMemFreeAsync or cuMemFree); the backing
 * stays reserved for the next launch until cuDeviceGraphMemTrim, or until no graph names it.
 * Relaunching while an allocation of the previous launch is unfreed is
 * CUDA_ERROR_INVALID_VALUE unless the graph was instantiated with AUTO_FREE_ON_LAUNCH, or
 * frees it itself: then the new launch queues behind the previous one, whose free node runs
 * first, even if that launch has not run yet.
 */
#include "sim/graph.h"

#include "common/log.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- Graph memory ---------------------------------------------------------------------- */

static struct sim_gmem *gmems; /* every live one, guarded by tf__graph_mu */
static struct {
    uint64_t used, used_high, reserved, reserved_high;
} gstat[TF_SIM_MAX_DEVICES]; /* guarded by tf__graph_mu */

CUresult tf__gmem_new(CUcontext ctx, uint64_t size, struct sim_gmem **out)
{
    if (size > (uint64_t)TF_SIM_MAX_MEMORY)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t len = (size_t)((size + pg - 1) / pg * pg);
    /* Readable and writable from the start but committed only when touched: a stray access
     * after a trim reads zeros instead of crashing the process. */
    void *p =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    struct sim_gmem *m = p == MAP_FAILED ? NULL : calloc(1, sizeof(*m));
    if (!m) {
        if (p != MAP_FAILED)
            munmap(p, len);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->refs = 1;
    m->ctx = ctx;
    m->base = (uint64_t)(uintptr_t)p;
    m->size = size;
    m->len = len;
    m->next = gmems;
    gmems = m;
    *out = m;
    return CUDA_SUCCESS;
}

static struct sim_device *gdev(const struct sim_gmem *m)
{
    return m->ctx->dev;
}

/* Gives M's backing back (it stays reserved as an address range). */
static void unback(struct sim_gmem *m)
{
    if (!m->mapped)
        return;
    struct sim_device *d = gdev(m);
    madvise((void *)(uintptr_t)m->base, m->len, MADV_DONTNEED);
    tf_sim_shm_mem_release(d->shm, atomic_load(&d->slot), m->len);
    gstat[d->index].reserved -= m->len;
    m->mapped = 0;
}

static void maybe_free_gmem(struct sim_gmem *m)
{
    if (m->refs > 0 || m->live || m->pending)
        return;
    unback(m);
    for (struct sim_gmem **pp = &gmems; *pp; pp = &(*pp)->next)
        if (*pp == m) {
            *pp = m->next;
            break;
        }
    munmap((void *)(uintptr_t)m->base, m->len);
    free(m);
}

void tf__gmem_unref(struct sim_gmem *m)
{
    m->refs--;
    maybe_free_gmem(m);
}

struct sim_gmem *tf__gmem_find(CUdeviceptr ptr)
{
    for (struct sim_gmem *m = gmems; m; m = m->next)
        if (m->base == (uint64_t)ptr)
            return m;
    return NULL;
}

int tf__gmem_contains(uint64_t p, uint64_t n)
{
    pthread_mutex_lock(&tf__graph_mu);
    int ok = 0;
    for (struct sim_gmem *m = gmems; m && !ok; m = m->next)
        ok = p >= m->base && p - m->base < m->size && n <= m->size - (p - m->base);
    pthread_mutex_unlock(&tf__graph_mu);
    return ok;
}

/* Backs M and charges it to its device (a launch of its allocation node). */
static CUresult back(struct sim_gmem *m)
{
    if (m->mapped)
        return CUDA_SUCCESS;
    struct sim_device *d = gdev(m);
    if (tf_sim_shm_mem_reserve(d->shm, atomic_load(&d->slot), m->len) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->mapped = 1;
    gstat[d->index].reserved += m->len;
    if (gstat[d->index].reserved > gstat[d->index].reserved_high)
        gstat[d->index].reserved_high = gstat[d->index].reserved;
    return CUDA_SUCCESS;
}

void tf__gmem_alloc_done(struct sim_gmem *m)
{
    pthread_mutex_lock(&tf__graph_mu);
    m->pending--;
    if (tf__mem_insert(m->ctx, gdev(m)->index, M_DEVICE, m->base, m->size, 0, 0, B_GRAPH, m,
                       NULL) == CUDA_SUCCESS) {
        m->live = 1;
        int d = gdev(m)->index;
        gstat[d].used += m->len;
        if (gstat[d].used > gstat[d].used_high)
            gstat[d].used_high = gstat[d].used;
    } else {
        tf_log(TF_LOG_ERROR, "sim",
               "graph allocation of %llu bytes: out of host memory for the "
               "allocation table; kernels will not reach it",
               (unsigned long long)m->size);
    }
    tf__gmem_unref(m); /* the op's reference */
    pthread_mutex_unlock(&tf__graph_mu);
}

int tf__gmem_freed_in_graph(const struct sim_alloc *a)
{
    pthread_mutex_lock(&tf__graph_mu);
    int r = ((const struct sim_gmem *)a->owner)->freed_in_graph;
    pthread_mutex_unlock(&tf__graph_mu);
    return r;
}

void tf__gmem_entry_released(const struct sim_alloc *a)
{
    struct sim_gmem *m = a->owner;
    pthread_mutex_lock(&tf__graph_mu);
    if (m->live) {
        m->live = 0;
        gstat[gdev(m)->index].used -= m->len;
    }
    maybe_free_gmem(m);
    pthread_mutex_unlock(&tf__graph_mu);
}

CUresult CUDAAPI cuDeviceGraphMemTrim(CUdevice device)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    struct sim_device *d = tf__device(device);
    if (!d)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&tf__graph_mu);
    for (struct sim_gmem *m = gmems; m; m = m->next)
        if (gdev(m) == d && !m->live && !m->pending)
            unback(m);
    pthread_mutex_unlock(&tf__graph_mu);
    return CUDA_SUCCESS;
}

static CUresult graph_mem_attr(CUdevice device, CUgraphMem_attribute attr, void *value, int set)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    struct sim_device *d = tf__device(device);
    if (!d)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&tf__graph_mu);
    uint64_t *st = NULL, cur = 0;
    switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
        st = set ? NULL : &gstat[d->index].used;
        break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
        st = &gstat[d->index].used_high;
        cur = gstat[d->index].used;
        break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
        st = set ? NULL : &gstat[d->index].reserved;
        break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
        st = &gstat[d->index].reserved_high;
        cur = gstat[d->index].reserved;
        break;
    }
    rc = CUDA_SUCCESS;
    if (!st)
        rc = CUDA_ERROR_INVALID_VALUE; /* unknown, or a current value (read-only) */
    else if (!set)
        *(cuuint64_t *)value = *st;
    else if (*(cuuint64_t *)value != 0)
        rc = CUDA_ERROR_INVALID_VALUE; /* high watermarks can only be reset */
    else
        *st = cur;
    pthread_mutex_unlock(&tf__graph_mu);
    return rc;
}

CUresult CUDAAPI cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                              void *value)
{
    return graph_mem_attr(device, attr, value, 0);
}

CUresult CUDAAPI cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                              void *value)
{
    return graph_mem_attr(device, attr, value, 1);
}

/* ---- Executable graphs ----------------------------------------------------------------- */

struct xnode {
    CUgraphNode orig; /* the node it was made from (exec updates name it) */
    CUgraphNodeType type;
    int disabled;
    union {
        struct {
            struct sim_kernel_op *k;
            CUcontext ctx;
        } kernel;
        CUDA_MEMCPY3D memcpy;
        CUDA_MEMSET_NODE_PARAMS memset;
        CUDA_HOST_NODE_PARAMS host;
        CUevent ev;
        struct sim_gmem *mem;
        struct {
            CUdeviceptr ptr;
            struct sim_gmem *mem;
        } free;
    } u;
    size_t *deps; /* positions of its dependencies in the order (topology checks) */
    size_t ndeps;
};

struct CUgraphExec_st {
    struct CUgraph_st *src; /* the graph it came from (src_id: while that lives) */
    unsigned long long src_id;
    unsigned long long flags;
    struct xnode *x;
    size_t n, cap;
    int has_allocs;
    /* The previous launch: its stream (a reference held) and its last op. */
    struct CUstream_st *last;
    uint64_t last_seq;
};

static void xnode_release(struct xnode *x)
{
    switch (x->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        tf__kernel_free(x->u.kernel.k);
        break;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        tf__gmem_unref(x->u.mem);
        break;
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        tf__gmem_unref(x->u.free.mem);
        break;
    default:
        break;
    }
    free(x->deps);
}

static void exec_free(CUgraphExec e)
{
    for (size_t i = 0; i < e->n; i++)
        xnode_release(&e->x[i]);
    free(e->x);
    if (e->src && tf__graph_ok(e->src) && e->src->id == e->src_id)
        e->src->execs--;
    if (e->last)
        tf__stream_unref(e->last);
    tf__handle_del(e);
    free(e);
}

/* Copies node N's parameters into X. */
static CUresult snapshot(struct xnode *x, CUgraphNode n)
{
    x->orig = n;
    x->type = n->type;
    switch (n->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        x->u.kernel.ctx = n->u.kernel.ctx;
        return (x->u.kernel.k = tf__kernel_op_dup(n->u.kernel.k)) ? CUDA_SUCCESS
                                                                  : CUDA_ERROR_OUT_OF_MEMORY;
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        x->u.memcpy = n->u.memcpy.p;
        break;
    case CU_GRAPH_NODE_TYPE_MEMSET:
        x->u.memset = n->u.memset.p;
        break;
    case CU_GRAPH_NODE_TYPE_HOST:
        x->u.host = n->u.host;
        break;
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        x->u.ev = n->u.event.ev;
        break;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        x->u.mem = n->u.alloc.mem;
        x->u.mem->refs++;
        break;
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        x->u.free.ptr = n->u.free.ptr;
        x->u.free.mem = n->u.free.mem;
        x->u.free.mem->refs++;
        break;
    default:
        break;
    }
    return CUDA_SUCCESS;
}

/* The nodes of G in a topological order (creation order among the ready ones); NULL on a
 * cycle (*CYCLE set) or out of memory. */
static CUgraphNode *topo(struct CUgraph_st *g, int *cycle)
{
    size_t n = g->n;
    *cycle = 0;
    CUgraphNode *all = calloc(n ? n : 1, sizeof(*all)), *out = calloc(n ? n : 1, sizeof(*out));
    unsigned char *done = calloc(n ? n : 1, 1);
    if (!all || !out || !done)
        goto fail;
    size_t i = 0;
    for (CUgraphNode m = g->nodes; m; m = m->next)
        all[i++] = m;
    size_t k = 0;
    while (k < n) {
        size_t before = k;
        for (i = 0; i < n; i++) {
            if (done[i])
                continue;
            int ready = 1;
            for (size_t d = 0; d < all[i]->ndeps && ready; d++) {
                size_t j = 0;
                while (all[j] != all[i]->deps[d])
                    j++;
                ready = done[j] == 1;
            }
            if (ready) {
                done[i] = 2; /* placed this round: dependents wait for the next one */
                out[k++] = all[i];
            }
        }
        if (k == before) {
            *cycle = 1;
            goto fail;
        }
        for (i = 0; i < n; i++)
            if (done[i] == 2)
                done[i] = 1;
    }
    free(all);
    free(done);
    return out;
fail:
    free(all);
    free(out);
    free(done);
    return NULL;
}

static CUresult push(CUgraphExec e, struct xnode *x)
{
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 16;
        struct xnode *v = realloc(e->x, cap * sizeof(*v));
        if (!v)
            return CUDA_ERROR_OUT_OF_MEMORY;
        e->x = v;
        e->cap = cap;
    }
    e->x[e->n++] = *x;
    return CUDA_SUCCESS;
}

/* Appends G's nodes (child graphs inlined) to E in a topological order. */
static CUresult flatten(CUgraphExec e, struct CUgraph_st *g, int *cycle)
{
    CUgraphNode *order = topo(g, cycle);
    if (!order)
        return *cycle ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_OUT_OF_MEMORY;
    size_t first = e->n;
    size_t *pos = calloc(g->n ? g->n : 1, sizeof(*pos)); /* order index -> last x index */
    CUresult rc = pos ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t i = 0; i < g->n && !rc; i++) {
        CUgraphNode n = order[i];
        if (n->type == CU_GRAPH_NODE_TYPE_GRAPH) {
            rc = flatten(e, n->u.child.graph, cycle);
            pos[i] = e->n ? e->n - 1 : 0;
            continue;
        }
        struct xnode x = {0};
        if ((rc = snapshot(&x, n)))
            break;
        if (n->ndeps && !(x.deps = calloc(n->ndeps, sizeof(*x.deps)))) {
            xnode_release(&x);
            rc = CUDA_ERROR_OUT_OF_MEMORY;
            break;
        }
        for (size_t d = 0; d < n->ndeps; d++) {
            size_t j = 0;
            while (order[j] != n->deps[d])
                j++;
            x.deps[x.ndeps++] = pos[j];
        }
        if ((rc = push(e, &x))) {
            xnode_release(&x);
            break;
        }
        pos[i] = e->n - 1;
        if (x.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC)
            e->has_allocs = 1;
    }
    (void)first;
    free(pos);
    free(order);
    return rc;
}

static CUresult instantiate(CUgraphExec *out, CUgraph g, unsigned long long flags,
                            CUgraphInstantiateResult *result)
{
    *result = CUDA_GRAPH_INSTANTIATE_ERROR;
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    const unsigned long long known =
        CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
        CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH | CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    if (!out || (flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH)
        return tf__not_supported("graphs instantiated for device launch");
    pthread_mutex_lock(&tf__graph_mu);
    if (!tf__graph_ok(g) || g->owned_by_node || g->cap ||
        (g->has_mem_nodes && g->execs > 0)) { /* one instantiation at a time with memory nodes */
        pthread_mutex_unlock(&tf__graph_mu);
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUgraphExec e = calloc(1, sizeof(*e));
    if (!e) {
        pthread_mutex_unlock(&tf__graph_mu);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    e->flags = flags;
    int cycle = 0;
    rc = flatten(e, g, &cycle);
    if (!rc && tf__handle_add(e, H_GEXEC) != 0)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc) {
        for (size_t i = 0; i < e->n; i++)
            xnode_release(&e->x[i]);
        free(e->x);
        free(e);
        if (cycle)
            *result = CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE;
        pthread_mutex_unlock(&tf__graph_mu);
        return rc;
    }
    e->src = g;
    e->src_id = g->id;
    g->execs++;
    pthread_mutex_unlock(&tf__graph_mu);
    *result = CUDA_GRAPH_INSTANTIATE_SUCCESS;
    *out = e;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                             unsigned long long flags)
{
    CUgraphInstantiateResult r;
    if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)
        return CUDA_ERROR_INVALID_VALUE; /* needs a stream: cuGraphInstantiateWithParams */
    return instantiate(phGraphExec, hGraph, flags, &r);
}

static CUresult upload(CUgraphExec e, CUstream h, int per_thread);

static CUresult instantiate_params(CUgraphExec *phGraphExec, CUgraph hGraph,
                                   CUDA_GRAPH_INSTANTIATE_PARAMS *p, int per_thread)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    p->hErrNode_out = NULL;
    CUresult rc = instantiate(phGraphExec, hGraph, p->flags, &p->result_out);
    if (!rc && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) &&
        (rc = upload(*phGraphExec, p->hUploadStream, per_thread))) {
        pthread_mutex_lock(&tf__graph_mu);
        exec_free(*phGraphExec);
        pthread_mutex_unlock(&tf__graph_mu);
        p->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
    }
    return rc;
}

CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                              CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return instantiate_params(phGraphExec, hGraph, instantiateParams, 0);
}

CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                   CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    return instantiate_params(phGraphExec, hGraph, instantiateParams, 1);
}

static CUresult lock_exec(CUgraphExec e)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    pthread_mutex_lock(&tf__graph_mu);
    if (!tf__handle_is(e, H_GEXEC)) {
        pthread_mutex_unlock(&tf__graph_mu);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUresult unlock(CUresult rc)
{
    pthread_mutex_unlock(&tf__graph_mu);
    return rc;
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    CUresult rc = tf__capture_unsafe_call();
    if (rc || (rc = lock_exec(hGraphExec)))
        return rc;
    exec_free(hGraphExec); /* queued work keeps copies of what it needs */
    return unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t *flags)
{
    CUresult rc = lock_exec(hGraphExec);
    if (rc)
        return rc;
    if (!flags)
        return unlock(CUDA_ERROR_INVALID_VALUE);
    *flags = hGraphExec->flags;
    return unlock(CUDA_SUCCESS);
}

/* ---- Launch ---------------------------------------------------------------------------- */

static CUresult new_op(enum sim_op_kind kind, struct sim_op **op)
{
    if (!(*op = tf__op_new(kind)))
        return CUDA_ERROR_OUT_OF_MEMORY;
    return CUDA_SUCCESS;
}

static CUresult queue_copy(struct CUstream_st *s, uint64_t dst, uint64_t src, size_t n)
{
    struct sim_op *op;
    CUresult rc = new_op(OP_COPY, &op);
    if (rc)
        return rc;
    op->u.copy.dst = (void *)(uintptr_t)dst;
    op->u.copy.src = (const void *)(uintptr_t)src;
    op->u.copy.n = n;
    op->u.copy.to_device = tf__mem_range_ok(dst, n, s->dev->index);
    return tf__enqueue(s, op, 0);
}

static uint64_t end_base(CUmemorytype t, const void *host, CUdeviceptr dev)
{
    return t == CU_MEMORYTYPE_HOST ? (uint64_t)(uintptr_t)host : (uint64_t)dev;
}

/* The rows of a 3D copy, one op each (one op when the box is contiguous on both sides). */
static CUresult queue_memcpy(struct CUstream_st *s, const CUDA_MEMCPY3D *p)
{
    size_t sp = p->srcPitch ? p->srcPitch : p->WidthInBytes;
    size_t dp = p->dstPitch ? p->dstPitch : p->WidthInBytes;
    size_t sh = p->srcHeight ? p->srcHeight : p->Height,
           dh = p->dstHeight ? p->dstHeight : p->Height;
    uint64_t sb = end_base(p->srcMemoryType, p->srcHost, p->srcDevice) + p->srcXInBytes +
                  (p->srcY + p->srcZ * sh) * sp;
    uint64_t db = end_base(p->dstMemoryType, p->dstHost, p->dstDevice) + p->dstXInBytes +
                  (p->dstY + p->dstZ * dh) * dp;
    if ((p->Height == 1 && p->Depth == 1) ||
        (sp == p->WidthInBytes && dp == p->WidthInBytes &&
         (p->Depth == 1 || (sh == p->Height && dh == p->Height))))
        return queue_copy(s, db, sb, p->WidthInBytes * p->Height * p->Depth);
    CUresult rc = CUDA_SUCCESS;
    for (size_t z = 0; z < p->Depth && !rc; z++)
        for (size_t y = 0; y < p->Height && !rc; y++)
            rc = queue_copy(s, db + (z * dh + y) * dp, sb + (z * sh + y) * sp, p->WidthInBytes);
    return rc;
}

static CUresult queue_memset(struct CUstream_st *s, const CUDA_MEMSET_NODE_PARAMS *p)
{
    CUresult rc = CUDA_SUCCESS;
    for (size_t y = 0; y < p->height && !rc; y++) {
        struct sim_op *op;
        if ((rc = new_op(OP_SET, &op)))
            break;
        op->u.set.dst = (void *)(uintptr_t)(p->dst + y * p->pitch);
        op->u.set.value = p->value;
        op->u.set.count = p->width;
        op->u.set.width = (int)p->elementSize;
        rc = tf__enqueue(s, op, 0);
    }
    return rc;
}

static CUresult queue_node(struct CUstream_st *s, struct xnode *x)
{
    struct sim_op *op = NULL;
    CUresult rc = CUDA_SUCCESS;
    switch (x->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        if ((rc = new_op(OP_KERNEL, &op)))
            return rc;
        if (!(op->u.kernel = tf__kernel_op_dup(x->u.kernel.k))) {
            free(op);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        return tf__enqueue(s, op, 0);
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        return queue_memcpy(s, &x->u.memcpy);
    case CU_GRAPH_NODE_TYPE_MEMSET:
        return queue_memset(s, &x->u.memset);
    case CU_GRAPH_NODE_TYPE_HOST:
        if ((rc = new_op(OP_HOST, &op)))
            return rc;
        op->u.host.fn = x->u.host.fn;
        op->u.host.data = x->u.host.userData;
        return tf__enqueue(s, op, 0);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        if (!tf__handle_is(x->u.ev, H_EVENT) || x->u.ev->ctx != s->ctx)
            return CUDA_ERROR_INVALID_HANDLE;
        if ((rc = new_op(OP_RECORD, &op)))
            return rc;
        op->u.rec.ev = x->u.ev;
        return tf__enqueue(s, op, 0);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        if (!tf__handle_is(x->u.ev, H_EVENT))
            return CUDA_ERROR_INVALID_HANDLE;
        return tf__stream_wait_event_now(s, x->u.ev);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        if ((rc = new_op(OP_GALLOC, &op)))
            return rc;
        op->u.galloc = x->u.mem;
        x->u.mem->refs++;
        x->u.mem->pending++;
        return tf__enqueue(s, op, 0);
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        if ((rc = new_op(OP_FREE, &op)))
            return rc;
        op->u.free.ptr = x->u.free.ptr;
        return tf__enqueue(s, op, 0);
    default: /* empty nodes */
        return CUDA_SUCCESS;
    }
}

/* A free node of E frees graph allocation M. */
static int frees(CUgraphExec e, const struct sim_gmem *m)
{
    for (size_t i = 0; i < e->n; i++)
        if (e->x[i].type == CU_GRAPH_NODE_TYPE_MEM_FREE && e->x[i].u.free.ptr == m->base)
            return 1;
    return 0;
}

static CUresult launch(CUgraphExec e, CUstream h, int per_thread)
{
    CUcontext ctx;
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, &ctx, &s);
    if (rc)
        return rc;
    if ((rc = tf__capture_check_launch(s)))
        return rc;
    if ((rc = lock_exec(e)))
        return rc;
    /* Graph memory: the previous launch's allocations must be freed (or are, with
     * AUTO_FREE_ON_LAUNCH, or by the previous launch's own free nodes, which run before this
     * launch), and every allocation must fit in the device now. */
    int autofree = (e->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH) != 0;
    for (size_t i = 0; i < e->n; i++) {
        struct xnode *x = &e->x[i];
        if (x->type == CU_GRAPH_NODE_TYPE_KERNEL && x->u.kernel.ctx->dev != s->dev)
            return unlock(CUDA_ERROR_INVALID_VALUE);
        if (x->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && (x->u.mem->live || x->u.mem->pending) &&
            !autofree && !frees(e, x->u.mem))
            return unlock(CUDA_ERROR_INVALID_VALUE);
    }
    for (size_t i = 0; i < e->n; i++) {
        struct xnode *x = &e->x[i];
        if (x->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC || x->u.mem->mapped)
            continue;
        if ((rc = back(x->u.mem))) {
            for (size_t j = 0; j < i; j++) /* what this launch backed goes back */
                if (e->x[j].type == CU_GRAPH_NODE_TYPE_MEM_ALLOC && !e->x[j].u.mem->live &&
                    !e->x[j].u.mem->pending)
                    unback(e->x[j].u.mem);
            return unlock(rc);
        }
    }
    /* Behind the previous launch of this graph. */
    if (e->last && e->last != s && !tf__stream_idle(e->last))
        rc = tf__stream_wait_seq(s, e->last, e->last_seq);
    for (size_t i = 0; i < e->n && !rc; i++) {
        struct xnode *x = &e->x[i];
        if (autofree && x->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC &&
            (x->u.mem->live || x->u.mem->pending) && !frees(e, x->u.mem)) {
            struct sim_op *op;
            if (!(rc = new_op(OP_FREE, &op))) {
                op->u.free.ptr = x->u.mem->base;
                rc = tf__enqueue(s, op, 0);
            }
        }
    }
    for (size_t i = 0; i < e->n && !rc; i++)
        if (!e->x[i].disabled)
            rc = queue_node(s, &e->x[i]);
    if (e->last != s) {
        if (e->last)
            tf__stream_unref(e->last);
        tf__stream_ref(s);
        e->last = s;
    }
    e->last_seq = tf__stream_last_seq(s);
    return unlock(rc);
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    return launch(hGraphExec, hStream, 0);
}

CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return launch(hGraphExec, hStream, 1);
}

/* Uploading prepares device-side state the simulator does not have: checked, nothing else. */
static CUresult upload(CUgraphExec e, CUstream h, int per_thread)
{
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, NULL, &s);
    if (rc || (rc = lock_exec(e)))
        return rc;
    return unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
    return upload(hGraphExec, hStream, 0);
}

CUresult CUDAAPI cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    return upload(hGraphExec, hStream, 1);
}

/* ---- Updating an executable graph ------------------------------------------------------ */

/* The node of E made from NODE, of TYPE (any when negative). */
static struct xnode *find_x(CUgraphExec e, CUgraphNode node, int type)
{
    for (size_t i = 0; i < e->n; i++)
        if (e->x[i].orig == node && (type < 0 || (int)e->x[i].type == type))
            return &e->x[i];
    return NULL;
}

static CUresult lock_exec_node(CUgraphExec e, CUgraphNode n, int type, struct xnode **x)
{
    CUresult rc = lock_exec(e);
    if (rc)
        return rc;
    if (!tf__node_ok(n) || !(*x = find_x(e, n, type)))
        return unlock(CUDA_ERROR_INVALID_VALUE);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                   const CUDA_KERNEL_NODE_PARAMS *p)
{
    struct xnode *x;
    CUresult rc = lock_exec_node(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_KERNEL, &x);
    if (rc)
        return rc;
    if (!p || (!p->func && !p->kern))
        return unlock(CUDA_ERROR_INVALID_VALUE);
    CUcontext ctx;
    if ((rc = tf__ctx_resolve(p->ctx, &ctx, 0)))
        return unlock(rc);
    if (ctx != x->u.kernel.ctx) /* the node's context cannot change */
        return unlock(CUDA_ERROR_INVALID_VALUE);
    unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
    unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
    struct sim_kernel_op *k;
    CUfunction f = p->func ? p->func : (CUfunction)p->kern;
    if ((rc = tf__kernel_op_build(ctx, f, grid, block, p->sharedMemBytes, p->kernelParams, p->extra,
                                  &k)))
        return unlock(rc);
    tf__kernel_free(x->u.kernel.k);
    x->u.kernel.k = k;
    return unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
    struct xnode *x;
    CUresult rc = lock_exec_node(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_MEMCPY, &x);
    if (rc)
        return rc;
    /* Checked as the node itself would be: through a scratch node of the graph's kind. */
    if ((rc = tf__ctx_resolve(ctx, &ctx, 0)) || (rc = tf__graph_check_memcpy(copyParams, ctx)))
        return unlock(rc);
    x->u.memcpy = *copyParams;
    return unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                const CUDA_MEMSET_NODE_PARAMS *memsetParams,
                                                CUcontext ctx)
{
    struct xnode *x;
    CUresult rc = lock_exec_node(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_MEMSET, &x);
    if (rc)
        return rc;
    if ((rc = tf__ctx_resolve(ctx, &ctx, 0)) || (rc = tf__graph_check_memset(memsetParams, ctx)))
        return unlock(rc);
    x->u.memset = *memsetParams;
    return unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                              const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    struct xnode *x;
    CUresult rc = lock_exec_node(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_HOST, &x);
    if (rc)
        return rc;
    if (!nodeParams || !nodeParams->fn)
        return unlock(CUDA_ERROR_INVALID_VALUE);
    x->u.host = *nodeParams;
    return unlock(CUDA_SUCCESS);
}

static CUresult exec_set_event(CUgraphExec e, CUgraphNode n, CUevent ev, int type)
{
    struct xnode *x;
    CUresult rc = lock_exec_node(e, n, type, &x);
    if (rc)
        return rc;
    if (!tf__handle_is(ev, H_EVENT))
        return unlock(CUDA_ERROR_INVALID_VALUE);
    x->u.ev = ev;
    return unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                    CUevent event)
{
    return exec_set_event(hGraphExec, hNode, event, CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

CUresult CUDAAPI cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                  CUevent event)
{
    return exec_set_event(hGraphExec, hNode, event, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

CUresult CUDAAPI cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode,
                                       unsigned int isEnabled)
{
    struct xnode *x;
    CUresult rc = lock_exec_node(hGraphExec, hNode, -1, &x);
    if (rc)
        return rc;
    if (x->type != CU_GRAPH_NODE_TYPE_KERNEL && x->type != CU_GRAPH_NODE_TYPE_MEMCPY &&
        x->type != CU_GRAPH_NODE_TYPE_MEMSET)
        return unlock(CUDA_ERROR_INVALID_VALUE);
    x->disabled = !isEnabled;
    return unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode,
                                       unsigned int *isEnabled)
{
    struct xnode *x;
    CUresult rc = lock_exec_node(hGraphExec, hNode, -1, &x);
    if (rc)
        return rc;
    if (!isEnabled ||
        (x->type != CU_GRAPH_NODE_TYPE_KERNEL && x->type != CU_GRAPH_NODE_TYPE_MEMCPY &&
         x->type != CU_GRAPH_NODE_TYPE_MEMSET))
        return unlock(CUDA_ERROR_INVALID_VALUE);
    *isEnabled = !x->disabled;
    return unlock(CUDA_SUCCESS);
}

/* Whole-graph update: the new graph must have the same topology (same node kinds in the same
 * order, same edges) and no memory nodes; every node's parameters are then taken from it. */
CUresult CUDAAPI cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                                      CUgraphExecUpdateResultInfo *resultInfo)
{
    CUresult rc = lock_exec(hGraphExec);
    if (rc)
        return rc;
    CUgraphExec e = hGraphExec;
    if (!resultInfo || !tf__graph_ok(hGraph))
        return unlock(CUDA_ERROR_INVALID_VALUE);
    *resultInfo = (CUgraphExecUpdateResultInfo){CU_GRAPH_EXEC_UPDATE_ERROR, NULL, NULL};
    struct CUgraphExec_st fresh = {0};
    int cycle = 0;
    if ((rc = flatten(&fresh, hGraph, &cycle))) {
        for (size_t i = 0; i < fresh.n; i++)
            xnode_release(&fresh.x[i]);
        free(fresh.x);
        return unlock(cycle ? CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE : rc);
    }
    CUgraphExecUpdateResult why = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    CUgraphNode bad = NULL;
    if (fresh.n != e->n)
        why = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    for (size_t i = 0; i < e->n && !why; i++) {
        struct xnode *a = &e->x[i], *b = &fresh.x[i];
        bad = b->orig;
        if (a->type != b->type)
            why = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
        else if (a->ndeps != b->ndeps ||
                 (a->ndeps && memcmp(a->deps, b->deps, a->ndeps * sizeof(*a->deps))))
            why = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
        else if (a->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC || a->type == CU_GRAPH_NODE_TYPE_MEM_FREE)
            why = CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED;
        else if (a->type == CU_GRAPH_NODE_TYPE_KERNEL && a->u.kernel.ctx != b->u.kernel.ctx)
            why = CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
    }
    if (why) {
        for (size_t i = 0; i < fresh.n; i++)
            xnode_release(&fresh.x[i]);
        free(fresh.x);
        resultInfo->result = why;
        resultInfo->errorNode = bad;
        return unlock(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
    }
    for (size_t i = 0; i < e->n; i++) { /* keep the enable flags, take the rest */
        fresh.x[i].disabled = e->x[i].disabled;
        xnode_release(&e->x[i]);
    }
    free(e->x);
    e->x = fresh.x;
    e->cap = fresh.cap;
    resultInfo->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    return unlock(CUDA_SUCCESS);
}
