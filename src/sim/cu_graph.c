/* SPDX-License-Identifier: Apache-2.0
 *
 * CUDA graphs of the simulated driver: creating, cloning and destroying graphs, adding
 * nodes (kernel, memcpy, memset, host, empty, child graph, event record/wait, memory
 * allocation and free; also through cuGraphAddNode) and their parameters. The graph's
 * structure (nodes, roots, edges, dependencies) is read and changed in cu_graph_struct.c.
 *
 * Parameters are checked when a node is made, as the real driver does: kernel launches with
 * the launch checks of cu_launch.c (the node keeps the built launch), copies and memsets
 * against the allocation table (or a graph allocation's range), events and child graphs as
 * handles. Copies take host, device and unified memory in 1, 2 or 3 dimensions; CUDA arrays,
 * external semaphores, batch memory operations and conditional nodes are not supported
 * (CUDA_ERROR_NOT_SUPPORTED, logged once). Memory nodes follow the driver's rules: a graph
 * with them cannot be cloned, lose nodes or edges, or have a second executable graph.
 */
#include "sim/graph.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Recursive: a launch holding it may meet the capture rules (tf__enqueue) again. */
pthread_mutex_t tf__graph_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

int tf__graph_ok(const struct CUgraph_st *g)
{
    return tf__handle_is(g, H_GRAPH);
}

int tf__node_ok(const struct CUgraphNode_st *n)
{
    return tf__handle_is(n, H_GNODE);
}

CUresult tf__graph_new(struct CUgraph_st **out, int owned_by_node)
{
    struct CUgraph_st *g = calloc(1, sizeof(*g));
    if (!g)
        return CUDA_ERROR_OUT_OF_MEMORY;
    g->owned_by_node = owned_by_node;
    g->id = atomic_fetch_add(&tf__drv()->next_id, 1);
    if (tf__handle_add(g, H_GRAPH) != 0) {
        free(g);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = g;
    return CUDA_SUCCESS;
}

/* Frees what node N owns (not its edges). */
static void node_release(CUgraphNode n)
{
    switch (n->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        tf__kernel_free(n->u.kernel.k);
        free(n->u.kernel.args);
        break;
    case CU_GRAPH_NODE_TYPE_GRAPH:
        tf__graph_free(n->u.child.graph);
        break;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
        tf__gmem_unref(n->u.alloc.mem);
        break;
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        n->u.free.mem->freed_in_graph = 0;
        tf__gmem_unref(n->u.free.mem);
        break;
    default:
        break;
    }
    free(n->deps);
    tf__handle_del(n);
    free(n);
}

void tf__graph_free(struct CUgraph_st *g)
{
    if (!g)
        return;
    tf__capture_graph_gone(g);
    CUgraphNode n = g->nodes, next;
    for (; n; n = next) {
        next = n->next;
        node_release(n);
    }
    tf__handle_del(g);
    free(g);
}

int tf__graph_has_dep(CUgraphNode n, CUgraphNode d)
{
    for (size_t i = 0; i < n->ndeps; i++)
        if (n->deps[i] == d)
            return 1;
    return 0;
}

CUresult tf__graph_add_dep(CUgraphNode n, CUgraphNode d)
{
    if (n->ndeps == n->capdeps) {
        size_t cap = n->capdeps ? n->capdeps * 2 : 4;
        CUgraphNode *v = realloc(n->deps, cap * sizeof(*v));
        if (!v)
            return CUDA_ERROR_OUT_OF_MEMORY;
        n->deps = v;
        n->capdeps = cap;
    }
    n->deps[n->ndeps++] = d;
    return CUDA_SUCCESS;
}

/* DEPS are nodes of G without duplicates. */
static CUresult check_deps(struct CUgraph_st *g, const CUgraphNode *deps, size_t n)
{
    if (n && !deps)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++) {
        if (!tf__node_ok(deps[i]) || deps[i]->g != g)
            return CUDA_ERROR_INVALID_VALUE;
        for (size_t j = 0; j < i; j++)
            if (deps[j] == deps[i])
                return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult tf__graph_add(struct CUgraph_st *g, CUgraphNodeType type, const CUgraphNode *deps,
                       size_t ndeps, CUgraphNode *out)
{
    CUresult rc = check_deps(g, deps, ndeps);
    if (rc)
        return rc;
    CUgraphNode n = calloc(1, sizeof(*n));
    if (!n)
        return CUDA_ERROR_OUT_OF_MEMORY;
    n->g = g;
    n->type = type;
    for (size_t i = 0; i < ndeps && !rc; i++)
        rc = tf__graph_add_dep(n, deps[i]);
    if (rc || tf__handle_add(n, H_GNODE) != 0) {
        free(n->deps);
        free(n);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (g->last)
        g->last->next = n;
    else
        g->nodes = n;
    g->last = n;
    g->n++;
    *out = n;
    return CUDA_SUCCESS;
}

void tf__node_free(CUgraphNode n)
{
    struct CUgraph_st *g = n->g;
    for (CUgraphNode m = g->nodes; m; m = m->next)
        for (size_t i = 0; i < m->ndeps;)
            if (m->deps[i] == n)
                m->deps[i] = m->deps[--m->ndeps];
            else
                i++;
    CUgraphNode prev = NULL;
    for (CUgraphNode m = g->nodes; m; prev = m, m = m->next)
        if (m == n) {
            if (prev)
                prev->next = n->next;
            else
                g->nodes = n->next;
            if (g->last == n)
                g->last = prev;
            break;
        }
    g->n--;
    node_release(n);
}

/* ---- Graphs ---------------------------------------------------------------------------- */

CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!phGraph || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&tf__graph_mu);
    rc = tf__graph_new(phGraph, 0);
    pthread_mutex_unlock(&tf__graph_mu);
    return rc;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    pthread_mutex_lock(&tf__graph_mu);
    if (!tf__graph_ok(hGraph) || hGraph->owned_by_node || hGraph->cap)
        rc = CUDA_ERROR_INVALID_VALUE;
    else
        tf__graph_free(hGraph);
    pthread_mutex_unlock(&tf__graph_mu);
    return rc;
}

/* Locks the graph mutex and checks G; on failure unlocks and returns the error. */
CUresult tf__graph_lock(CUgraph g)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    pthread_mutex_lock(&tf__graph_mu);
    if (!tf__graph_ok(g)) {
        pthread_mutex_unlock(&tf__graph_mu);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult tf__graph_lock_node(CUgraphNode n, int type)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    pthread_mutex_lock(&tf__graph_mu);
    if (!tf__node_ok(n) || (type >= 0 && n->type != (CUgraphNodeType)type)) {
        pthread_mutex_unlock(&tf__graph_mu);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

CUresult tf__graph_unlock(CUresult rc)
{
    pthread_mutex_unlock(&tf__graph_mu);
    return rc;
}

/* Copies SIZE bytes of node N's parameters (at offset FIELD in the node) into OUT, for the
 * parameter getters. */
static CUresult get_params(CUgraphNode n, CUgraphNodeType type, void *out, size_t field,
                           size_t size)
{
    CUresult rc = tf__graph_lock_node(n, (int)type);
    if (rc)
        return rc;
    if (!out)
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    memcpy(out, (const char *)n + field, size);
    return tf__graph_unlock(CUDA_SUCCESS);
}

#define GET_PARAMS(n, type, out, member)                                                           \
    get_params(n, type, out, offsetof(struct CUgraphNode_st, member), sizeof(*(out)))

/* Copies SRC's parameters into DST, a new node of the copy of SRC's graph. */
static CUresult clone_params(CUgraphNode dst, CUgraphNode src)
{
    dst->u = src->u;
    switch (src->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
        dst->u.kernel.args = NULL;
        if (!(dst->u.kernel.k = tf__kernel_op_dup(src->u.kernel.k)))
            return CUDA_ERROR_OUT_OF_MEMORY;
        return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_GRAPH: {
        dst->u.child.graph = NULL;
        CUresult rc = tf__graph_new(&dst->u.child.graph, 1);
        return rc ? rc : tf__graph_copy(dst->u.child.graph, src->u.child.graph);
    }
    default:
        return CUDA_SUCCESS;
    }
}

/* Index of node N in G's list. */
static size_t index_of(struct CUgraph_st *g, CUgraphNode n)
{
    size_t i = 0;
    for (CUgraphNode m = g->nodes; m && m != n; m = m->next)
        i++;
    return i;
}

CUresult tf__graph_copy(struct CUgraph_st *to, struct CUgraph_st *from)
{
    if (from->has_mem_nodes)
        return CUDA_ERROR_NOT_SUPPORTED; /* graphs with memory nodes cannot be cloned */
    CUgraphNode *map = calloc(from->n ? from->n : 1, sizeof(*map));
    if (!map)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = CUDA_SUCCESS;
    size_t i = 0;
    for (CUgraphNode n = from->nodes; n && !rc; n = n->next, i++) {
        if ((rc = tf__graph_add(to, n->type, NULL, 0, &map[i])))
            break;
        if ((rc = clone_params(map[i], n))) {
            map[i]->type = CU_GRAPH_NODE_TYPE_EMPTY; /* nothing owned yet */
            break;
        }
        for (size_t k = 0; k < n->ndeps && !rc; k++)
            rc = tf__graph_add_dep(map[i], map[index_of(from, n->deps[k])]);
    }
    free(map);
    return rc;
}

CUresult CUDAAPI cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
    CUresult rc = tf__graph_lock(originalGraph);
    if (rc)
        return rc;
    if (!phGraphClone)
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    struct CUgraph_st *g;
    if ((rc = tf__graph_new(&g, 0)))
        return tf__graph_unlock(rc);
    if ((rc = tf__graph_copy(g, originalGraph))) {
        tf__graph_free(g);
        return tf__graph_unlock(rc);
    }
    *phGraphClone = g;
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphNodeFindInClone(CUgraphNode *phNode, CUgraphNode hOriginalNode,
                                        CUgraph hClonedGraph)
{
    CUresult rc = tf__graph_lock(hClonedGraph);
    if (rc)
        return rc;
    if (!phNode || !tf__node_ok(hOriginalNode) || hOriginalNode->g->n != hClonedGraph->n)
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    size_t i = index_of(hOriginalNode->g, hOriginalNode);
    CUgraphNode m = hClonedGraph->nodes;
    while (m && i--)
        m = m->next;
    if (!m || m->type != hOriginalNode->type)
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    *phNode = m;
    return tf__graph_unlock(CUDA_SUCCESS);
}

/* ---- Node parameters ------------------------------------------------------------------- */

/* Builds the launch of kernel node parameters (v2 layout; v1 has no kern/ctx). */
static CUresult kernel_params(const CUDA_KERNEL_NODE_PARAMS *p, CUcontext *ctx,
                              struct sim_kernel_op **k)
{
    if (!p || (!p->func && !p->kern))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = tf__ctx_resolve(p->ctx, ctx, 0);
    if (rc)
        return rc;
    unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
    unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
    CUfunction f = p->func ? p->func : (CUfunction)p->kern;
    return tf__kernel_op_build(*ctx, f, grid, block, p->sharedMemBytes, p->kernelParams, p->extra,
                               k);
}

/* True when [P, P+N) is memory device D may use in a graph: an allocation it can access, or
 * (allocated by the graph at run time) a graph allocation's range. */
static int graph_range_ok(CUdeviceptr p, size_t n, int dev)
{
    return tf__mem_range_ok((uint64_t)p, n, dev) || tf__gmem_contains((uint64_t)p, n);
}

/* One side of a copy: its base address and whether it is usable. */
static CUresult copy_end(CUmemorytype t, const void *host, CUdeviceptr dev, size_t span, int d,
                         uint64_t *base)
{
    switch (t) {
    case CU_MEMORYTYPE_HOST:
        if (!host)
            return CUDA_ERROR_INVALID_VALUE;
        *base = (uint64_t)(uintptr_t)host;
        return CUDA_SUCCESS;
    case CU_MEMORYTYPE_DEVICE:
        if (!dev || !graph_range_ok(dev, span, d))
            return CUDA_ERROR_INVALID_VALUE;
        *base = dev;
        return CUDA_SUCCESS;
    case CU_MEMORYTYPE_UNIFIED: {
        struct sim_alloc a;
        if (!dev)
            return CUDA_ERROR_INVALID_VALUE;
        /* Untracked addresses are host memory; inside an allocation it must fit. */
        if (tf__mem_lookup(dev, &a) == 0 && !graph_range_ok(dev, span, d))
            return CUDA_ERROR_INVALID_VALUE;
        *base = dev;
        return CUDA_SUCCESS;
    }
    case CU_MEMORYTYPE_ARRAY:
        return tf__not_supported("graph memcpy nodes with CUDA arrays");
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* Bytes spanned by a WIDTH x HEIGHT x DEPTH box at (X, Y, Z) with PITCH and row count ROWS. */
static size_t span_of(size_t x, size_t y, size_t z, size_t pitch, size_t rows, size_t w, size_t h,
                      size_t dd)
{
    return ((z + dd - 1) * rows + (y + h - 1)) * pitch + x + w;
}

CUresult tf__graph_check_memcpy(const CUDA_MEMCPY3D *p, CUcontext ctx)
{
    if (!p || !p->WidthInBytes || !p->Height || !p->Depth || p->srcLOD || p->dstLOD ||
        p->reserved0 || p->reserved1)
        return CUDA_ERROR_INVALID_VALUE;
    size_t sp = p->srcPitch ? p->srcPitch : p->WidthInBytes;
    size_t dp = p->dstPitch ? p->dstPitch : p->WidthInBytes;
    size_t sh = p->srcHeight ? p->srcHeight : p->Height,
           dh = p->dstHeight ? p->dstHeight : p->Height;
    if ((p->Height > 1 || p->Depth > 1) &&
        (sp < p->srcXInBytes + p->WidthInBytes || dp < p->dstXInBytes + p->WidthInBytes))
        return CUDA_ERROR_INVALID_VALUE;
    if (p->Depth > 1 && (sh < p->srcY + p->Height || dh < p->dstY + p->Height))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t b;
    int d = ctx->dev->index;
    CUresult rc;
    /* The whole extent of each side, from its base. */
    size_t ss =
        span_of(p->srcXInBytes, p->srcY, p->srcZ, sp, sh, p->WidthInBytes, p->Height, p->Depth);
    size_t ds =
        span_of(p->dstXInBytes, p->dstY, p->dstZ, dp, dh, p->WidthInBytes, p->Height, p->Depth);
    if ((rc = copy_end(p->srcMemoryType, p->srcHost, p->srcDevice, ss, d, &b)))
        return rc;
    return copy_end(p->dstMemoryType, p->dstHost, p->dstDevice, ds, d, &b);
}

CUresult tf__graph_check_memset(const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    if (!p || !p->width || !p->height ||
        (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) ||
        p->dst % p->elementSize)
        return CUDA_ERROR_INVALID_VALUE;
    size_t row = p->width * p->elementSize;
    if (p->height > 1 && p->pitch < row)
        return CUDA_ERROR_INVALID_VALUE;
    size_t span = (p->height - 1) * p->pitch + row;
    return graph_range_ok(p->dst, span, ctx->dev->index) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- Adding nodes ---------------------------------------------------------------------- */

/* Starts adding a node of TYPE to G: locks, checks G and OUT. */
static CUresult begin_add(CUgraph g, CUgraphNode *out)
{
    CUresult rc = tf__graph_lock(g);
    if (rc)
        return rc;
    return out ? CUDA_SUCCESS : tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
}

CUresult CUDAAPI cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                         const CUgraphNode *dependencies, size_t numDependencies,
                                         const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
    CUresult rc = begin_add(hGraph, phGraphNode);
    if (rc)
        return rc;
    CUcontext ctx;
    struct sim_kernel_op *k;
    if ((rc = kernel_params(nodeParams, &ctx, &k)))
        return tf__graph_unlock(rc);
    CUgraphNode n;
    if ((rc =
             tf__graph_add(hGraph, CU_GRAPH_NODE_TYPE_KERNEL, dependencies, numDependencies, &n))) {
        tf__kernel_free(k);
        return tf__graph_unlock(rc);
    }
    n->u.kernel.k = k;
    n->u.kernel.ctx = ctx;
    *phGraphNode = n;
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult rc = tf__graph_lock_node(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
    if (rc)
        return rc;
    if (!p)
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    struct sim_kernel_op *k = hNode->u.kernel.k;
    uint32_t np = k->func->info.nparams;
    if (!hNode->u.kernel.args && np) {
        void **args = calloc(np, sizeof(*args));
        if (!args)
            return tf__graph_unlock(CUDA_ERROR_OUT_OF_MEMORY);
        for (uint32_t i = 0; i < np; i++) {
            uint32_t off = 0, size = 0;
            (void)tf_ptx_kernel_param(k->l.kernel, i, &off, &size);
            args[i] = k->params + off;
        }
        hNode->u.kernel.args = args;
    }
    *p = (CUDA_KERNEL_NODE_PARAMS){
        .func = k->func,
        .gridDimX = k->l.grid[0],
        .gridDimY = k->l.grid[1],
        .gridDimZ = k->l.grid[2],
        .blockDimX = k->l.block[0],
        .blockDimY = k->l.block[1],
        .blockDimZ = k->l.block[2],
        .sharedMemBytes = k->l.dynamic_shared,
        .kernelParams = hNode->u.kernel.args,
        .ctx = hNode->u.kernel.ctx,
    };
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult rc = tf__graph_lock_node(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
    if (rc)
        return rc;
    CUcontext ctx;
    struct sim_kernel_op *k;
    if ((rc = kernel_params(p, &ctx, &k)))
        return tf__graph_unlock(rc);
    tf__kernel_free(hNode->u.kernel.k);
    free(hNode->u.kernel.args);
    hNode->u.kernel.k = k;
    hNode->u.kernel.args = NULL;
    hNode->u.kernel.ctx = ctx;
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                      const CUgraphNode *dependencies, size_t numDependencies,
                                      const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
    CUresult rc = begin_add(hGraph, phGraphNode);
    if (rc)
        return rc;
    if ((rc = tf__ctx_resolve(ctx, &ctx, 0)) || (rc = tf__graph_check_memcpy(copyParams, ctx)))
        return tf__graph_unlock(rc);
    CUgraphNode n;
    if ((rc = tf__graph_add(hGraph, CU_GRAPH_NODE_TYPE_MEMCPY, dependencies, numDependencies, &n)))
        return tf__graph_unlock(rc);
    n->u.memcpy.p = *copyParams;
    n->u.memcpy.ctx = ctx;
    *phGraphNode = n;
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D *nodeParams)
{
    return GET_PARAMS(hNode, CU_GRAPH_NODE_TYPE_MEMCPY, nodeParams, u.memcpy.p);
}

CUresult CUDAAPI cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D *nodeParams)
{
    CUresult rc = tf__graph_lock_node(hNode, CU_GRAPH_NODE_TYPE_MEMCPY);
    if (rc)
        return rc;
    if ((rc = tf__graph_check_memcpy(nodeParams, hNode->u.memcpy.ctx)))
        return tf__graph_unlock(rc);
    hNode->u.memcpy.p = *nodeParams;
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                      const CUgraphNode *dependencies, size_t numDependencies,
                                      const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
{
    CUresult rc = begin_add(hGraph, phGraphNode);
    if (rc)
        return rc;
    if ((rc = tf__ctx_resolve(ctx, &ctx, 0)) || (rc = tf__graph_check_memset(memsetParams, ctx)))
        return tf__graph_unlock(rc);
    CUgraphNode n;
    if ((rc = tf__graph_add(hGraph, CU_GRAPH_NODE_TYPE_MEMSET, dependencies, numDependencies, &n)))
        return tf__graph_unlock(rc);
    n->u.memset.p = *memsetParams;
    n->u.memset.ctx = ctx;
    *phGraphNode = n;
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
    return GET_PARAMS(hNode, CU_GRAPH_NODE_TYPE_MEMSET, nodeParams, u.memset.p);
}

CUresult CUDAAPI cuGraphMemsetNodeSetParams(CUgraphNode hNode,
                                            const CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
    CUresult rc = tf__graph_lock_node(hNode, CU_GRAPH_NODE_TYPE_MEMSET);
    if (rc)
        return rc;
    if ((rc = tf__graph_check_memset(nodeParams, hNode->u.memset.ctx)))
        return tf__graph_unlock(rc);
    hNode->u.memset.p = *nodeParams;
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                    const CUgraphNode *dependencies, size_t numDependencies,
                                    const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    CUresult rc = begin_add(hGraph, phGraphNode);
    if (rc)
        return rc;
    if (!nodeParams || !nodeParams->fn)
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    CUgraphNode n;
    if ((rc = tf__graph_add(hGraph, CU_GRAPH_NODE_TYPE_HOST, dependencies, numDependencies, &n)))
        return tf__graph_unlock(rc);
    n->u.host = *nodeParams;
    *phGraphNode = n;
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *nodeParams)
{
    return GET_PARAMS(hNode, CU_GRAPH_NODE_TYPE_HOST, nodeParams, u.host);
}

CUresult CUDAAPI cuGraphHostNodeSetParams(CUgraphNode hNode,
                                          const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    CUresult rc = tf__graph_lock_node(hNode, CU_GRAPH_NODE_TYPE_HOST);
    if (rc)
        return rc;
    if (!nodeParams || !nodeParams->fn)
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    hNode->u.host = *nodeParams;
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                     const CUgraphNode *dependencies, size_t numDependencies)
{
    CUresult rc = begin_add(hGraph, phGraphNode);
    if (rc)
        return rc;
    return tf__graph_unlock(tf__graph_add(hGraph, CU_GRAPH_NODE_TYPE_EMPTY, dependencies,
                                          numDependencies, phGraphNode));
}

static CUresult add_event_node(CUgraphNode *out, CUgraph g, const CUgraphNode *deps, size_t n,
                               CUevent ev, CUgraphNodeType type)
{
    CUresult rc = begin_add(g, out);
    if (rc)
        return rc;
    if (!tf__handle_is(ev, H_EVENT))
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    if ((rc = tf__graph_add(g, type, deps, n, out)))
        return tf__graph_unlock(rc);
    (*out)->u.event.ev = ev;
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                           const CUgraphNode *dependencies, size_t numDependencies,
                                           CUevent event)
{
    return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event,
                          CU_GRAPH_NODE_TYPE_EVENT_RECORD);
}

CUresult CUDAAPI cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                         const CUgraphNode *dependencies, size_t numDependencies,
                                         CUevent event)
{
    return add_event_node(phGraphNode, hGraph, dependencies, numDependencies, event,
                          CU_GRAPH_NODE_TYPE_WAIT_EVENT);
}

static CUresult set_event(CUgraphNode n, CUgraphNodeType type, CUevent set)
{
    CUresult rc = tf__graph_lock_node(n, (int)type);
    if (rc)
        return rc;
    if (!tf__handle_is(set, H_EVENT))
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    n->u.event.ev = set;
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
    return GET_PARAMS(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event_out, u.event.ev);
}

CUresult CUDAAPI cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event)
{
    return set_event(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event);
}

CUresult CUDAAPI cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
    return GET_PARAMS(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event_out, u.event.ev);
}

CUresult CUDAAPI cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event)
{
    return set_event(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event);
}

CUresult CUDAAPI cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                          const CUgraphNode *dependencies, size_t numDependencies,
                                          CUgraph childGraph)
{
    CUresult rc = begin_add(hGraph, phGraphNode);
    if (rc)
        return rc;
    if (!tf__graph_ok(childGraph) || childGraph == hGraph)
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    if (childGraph->has_mem_nodes) /* would need the ownership moved (cuGraphAddNode) */
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    struct CUgraph_st *copy;
    if ((rc = tf__graph_new(&copy, 1)))
        return tf__graph_unlock(rc);
    if ((rc = tf__graph_copy(copy, childGraph)) ||
        (rc = tf__graph_add(hGraph, CU_GRAPH_NODE_TYPE_GRAPH, dependencies, numDependencies,
                            phGraphNode))) {
        tf__graph_free(copy);
        return tf__graph_unlock(rc);
    }
    (*phGraphNode)->u.child.graph = copy;
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphChildGraphNodeGetGraph(CUgraphNode hNode, CUgraph *phGraph)
{
    return GET_PARAMS(hNode, CU_GRAPH_NODE_TYPE_GRAPH, phGraph, u.child.graph);
}

/* ---- Memory nodes ---------------------------------------------------------------------- */

CUresult CUDAAPI cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                        const CUgraphNode *dependencies, size_t numDependencies,
                                        CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    CUresult rc = begin_add(hGraph, phGraphNode);
    if (rc)
        return rc;
    CUDA_MEM_ALLOC_NODE_PARAMS *p = nodeParams;
    if (!p || !p->bytesize || p->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        p->poolProps.handleTypes != CU_MEM_HANDLE_TYPE_NONE ||
        p->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        (p->accessDescCount && !p->accessDescs))
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    struct sim_device *d = tf__device(p->poolProps.location.id);
    if (!d)
        return tf__graph_unlock(CUDA_ERROR_INVALID_DEVICE);
    for (size_t i = 0; i < p->accessDescCount; i++) /* no peer access between simulated GPUs */
        if (p->accessDescs[i].location.id != p->poolProps.location.id &&
            p->accessDescs[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE)
            return tf__graph_unlock(CUDA_ERROR_INVALID_DEVICE);
    CUcontext ctx;
    if ((rc = tf__ctx_current(&ctx, 0)))
        return tf__graph_unlock(rc);
    if (ctx->dev != d) /* graph memory is allocated through a context of its device */
        return tf__graph_unlock(
            tf__not_supported("graph allocations on a device other than the current"));
    struct sim_gmem *m;
    if ((rc = tf__gmem_new(ctx, p->bytesize, &m)))
        return tf__graph_unlock(rc);
    if ((rc = tf__graph_add(hGraph, CU_GRAPH_NODE_TYPE_MEM_ALLOC, dependencies, numDependencies,
                            phGraphNode))) {
        tf__gmem_unref(m);
        return tf__graph_unlock(rc);
    }
    CUgraphNode n = *phGraphNode;
    n->u.alloc.mem = m;
    n->u.alloc.params = *p;
    n->u.alloc.params.accessDescs = NULL;
    n->u.alloc.params.accessDescCount = 0;
    n->u.alloc.params.dptr = m->base;
    p->dptr = m->base;
    hGraph->has_mem_nodes = 1;
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
                                              CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
    return GET_PARAMS(hNode, CU_GRAPH_NODE_TYPE_MEM_ALLOC, params_out, u.alloc.params);
}

CUresult tf__graph_add_free(struct CUgraph_st *g, const CUgraphNode *deps, size_t ndeps,
                            CUdeviceptr dptr, CUgraphNode *out)
{
    if (!g->has_mem_nodes && g->execs) /* one executable graph at a time with memory nodes */
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_gmem *m = tf__gmem_find(dptr);
    if (!m || m->freed_in_graph)
        return CUDA_ERROR_INVALID_VALUE; /* not a graph allocation, or freed already */
    CUresult rc = tf__graph_add(g, CU_GRAPH_NODE_TYPE_MEM_FREE, deps, ndeps, out);
    if (rc)
        return rc;
    m->refs++;
    m->freed_in_graph = 1;
    (*out)->u.free.ptr = dptr;
    (*out)->u.free.mem = m;
    g->has_mem_nodes = 1;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                       const CUgraphNode *dependencies, size_t numDependencies,
                                       CUdeviceptr dptr)
{
    CUresult rc = begin_add(hGraph, phGraphNode);
    if (rc)
        return rc;
    return tf__graph_unlock(
        tf__graph_add_free(hGraph, dependencies, numDependencies, dptr, phGraphNode));
}

CUresult CUDAAPI cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr *dptr_out)
{
    return GET_PARAMS(hNode, CU_GRAPH_NODE_TYPE_MEM_FREE, dptr_out, u.free.ptr);
}

/* ---- cuGraphAddNode: the same node kinds through one entry point ------------------------ */

CUresult CUDAAPI cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                   const CUgraphNode *dependencies,
                                   const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                   CUgraphNodeParams *nodeParams)
{
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    if (dependencyData)
        for (size_t i = 0; i < numDependencies; i++)
            if (dependencyData[i].from_port || dependencyData[i].to_port || dependencyData[i].type)
                return tf__not_supported("graph edges with ports or programmatic types");
    const CUgraphNode *d = dependencies;
    size_t n = numDependencies;
    CUgraphNodeParams *p = nodeParams;
    switch (p->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: {
        CUDA_KERNEL_NODE_PARAMS k = {
            p->kernel.func,      p->kernel.gridDimX,       p->kernel.gridDimY,
            p->kernel.gridDimZ,  p->kernel.blockDimX,      p->kernel.blockDimY,
            p->kernel.blockDimZ, p->kernel.sharedMemBytes, p->kernel.kernelParams,
            p->kernel.extra,     p->kernel.kern,           p->kernel.ctx};
        return cuGraphAddKernelNode_v2(phGraphNode, hGraph, d, n, &k);
    }
    case CU_GRAPH_NODE_TYPE_MEMCPY:
        return cuGraphAddMemcpyNode(phGraphNode, hGraph, d, n, &p->memcpy.copyParams,
                                    p->memcpy.copyCtx);
    case CU_GRAPH_NODE_TYPE_MEMSET: {
        CUDA_MEMSET_NODE_PARAMS m = {p->memset.dst,         p->memset.pitch, p->memset.value,
                                     p->memset.elementSize, p->memset.width, p->memset.height};
        return cuGraphAddMemsetNode(phGraphNode, hGraph, d, n, &m, p->memset.ctx);
    }
    case CU_GRAPH_NODE_TYPE_HOST: {
        CUDA_HOST_NODE_PARAMS h = {p->host.fn, p->host.userData};
        return cuGraphAddHostNode(phGraphNode, hGraph, d, n, &h);
    }
    case CU_GRAPH_NODE_TYPE_EMPTY:
        return cuGraphAddEmptyNode(phGraphNode, hGraph, d, n);
    case CU_GRAPH_NODE_TYPE_GRAPH:
        if (p->graph.ownership != CU_GRAPH_CHILD_GRAPH_OWNERSHIP_CLONE)
            return tf__not_supported("child graph nodes that take ownership of the graph");
        return cuGraphAddChildGraphNode(phGraphNode, hGraph, d, n, p->graph.graph);
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
        return cuGraphAddEventRecordNode(phGraphNode, hGraph, d, n, p->eventRecord.event);
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
        return cuGraphAddEventWaitNode(phGraphNode, hGraph, d, n, p->eventWait.event);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: {
        CUDA_MEM_ALLOC_NODE_PARAMS a = {p->alloc.poolProps, p->alloc.accessDescs,
                                        p->alloc.accessDescCount, p->alloc.bytesize, 0};
        CUresult rc = cuGraphAddMemAllocNode(phGraphNode, hGraph, d, n, &a);
        if (!rc)
            p->alloc.dptr = a.dptr;
        return rc;
    }
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
        return cuGraphAddMemFreeNode(phGraphNode, hGraph, d, n, p->free.dptr);
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL:
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT:
        return tf__not_supported("external semaphore graph nodes");
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
        return tf__not_supported("batch memory operation graph nodes");
    case CU_GRAPH_NODE_TYPE_CONDITIONAL:
        return tf__not_supported("conditional graph nodes");
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}
