/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so: graphs built node by node (calls.def "graphs built node by node"),
 * forwarded: each node is added to the graph on the worker, under an id chosen here, with one
 * round trip, then its dependencies one edge each. The dependencies are checked here first
 * (distinct nodes of the same graph), so a node is added with all its edges or not at all.
 * Empty, memset, device-to-device memcpy and kernel nodes (api_launch.c) are served; nodes
 * that would reach this process's memory from the worker's GPU (host nodes, copies from or to
 * host memory) and the other kinds answer CUDA_ERROR_NOT_SUPPORTED.
 */
#include "remote/client/client.h"

#include <string.h>

CUresult tfc_graph_deps(CUgraph g, const CUgraphNode *deps, size_t n)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = tfc_ready(t);
    if (!r && (!tfc_obj(t, (uintptr_t)g, TF_PROTO_H_GRAPH) || (n && !deps)))
        r = CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; !r && i < n; i++) {
        struct tfc_node *d = tfc_obj(t, (uintptr_t)deps[i], TF_PROTO_H_NODE);
        if (!d || d->graph != (uintptr_t)g)
            r = CUDA_ERROR_INVALID_VALUE;
        for (size_t j = 0; !r && j < i; j++)
            if (deps[j] == deps[i])
                r = CUDA_ERROR_INVALID_VALUE; /* a dependency named twice */
    }
    pthread_mutex_unlock(&t->lock);
    return r;
}

CUresult tfc_graph_node_added(CUresult r, const CUgraphNode *pnode, CUgraph g,
                              const CUgraphNode *deps, size_t n)
{
    if (r)
        return r;
    CUgraphNode node = *pnode;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    struct tfc_node *o = tfc_obj(t, (uintptr_t)node, TF_PROTO_H_NODE);
    if (o)
        o->graph = (uintptr_t)g;
    pthread_mutex_unlock(&t->lock);
    for (size_t i = 0; !r && i < n; i++)
        r = tfc_fwd_cuGraphAddDependencies_v2(g, deps[i], node);
    return r;
}

TFC_API CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                             const CUgraphNode *dependencies,
                                             size_t numDependencies)
{
    if (!phGraphNode)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = tfc_graph_deps(hGraph, dependencies, numDependencies);
    if (!r)
        r = tfc_fwd_cuGraphAddEmptyNode(phGraphNode, hGraph);
    return tfc_graph_node_added(r, phGraphNode, hGraph, dependencies, numDependencies);
}

/* The context a node runs in: CTX, or the calling thread's current one. */
static CUcontext node_ctx(CUcontext ctx)
{
    return ctx ? ctx : (CUcontext)(uintptr_t)tfc_current();
}

TFC_API CUresult CUDAAPI cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                              const CUgraphNode *dependencies,
                                              size_t numDependencies,
                                              const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx)
{
    if (!phGraphNode || !p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = tfc_graph_deps(hGraph, dependencies, numDependencies);
    if (!r)
        r = tfc_fwd_cuGraphAddMemsetNode(phGraphNode, hGraph, p->dst, p->pitch, p->value,
                                         p->elementSize, p->width, p->height, node_ctx(ctx));
    return tfc_graph_node_added(r, phGraphNode, hGraph, dependencies, numDependencies);
}

/* The device address one end of a copy names, or 0 when it is not device memory of this
 * process (host memory, an array). */
static CUdeviceptr dev_end(CUmemorytype type, CUdeviceptr dev, const void *host)
{
    CUdeviceptr p = type == CU_MEMORYTYPE_DEVICE    ? dev
                    : type == CU_MEMORYTYPE_UNIFIED ? (dev ? dev : (CUdeviceptr)(uintptr_t)host)
                                                    : 0;
    return p && tfc_is_dev(p, 1) ? p : 0;
}

TFC_API CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                              const CUgraphNode *dependencies,
                                              size_t numDependencies, const CUDA_MEMCPY3D *c,
                                              CUcontext ctx)
{
    if (!phGraphNode || !c)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr dst = dev_end(c->dstMemoryType, c->dstDevice, c->dstHost);
    CUdeviceptr src = dev_end(c->srcMemoryType, c->srcDevice, c->srcHost);
    /* Linear device-to-device copies only: the worker's GPU cannot reach this process's
     * memory when the graph runs, and 2D/3D copies are not served. */
    if (!dst || !src || c->srcXInBytes || c->srcY || c->srcZ || c->dstXInBytes || c->dstY ||
        c->dstZ || c->Height > 1 || c->Depth > 1)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult r = tfc_graph_deps(hGraph, dependencies, numDependencies);
    if (!r)
        r = tfc_fwd_cuGraphAddMemcpyNode(phGraphNode, hGraph, dst, src, c->WidthInBytes,
                                         node_ctx(ctx));
    return tfc_graph_node_added(r, phGraphNode, hGraph, dependencies, numDependencies);
}

TFC_API CUresult CUDAAPI cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
                                                   const CUgraphNode *to,
                                                   const CUgraphEdgeData *edgeData,
                                                   size_t numDependencies)
{
    if (numDependencies && (!from || !to))
        return CUDA_ERROR_INVALID_VALUE;
    static const CUgraphEdgeData plain;
    for (size_t i = 0; edgeData && i < numDependencies; i++)
        if (memcmp(&edgeData[i], &plain, sizeof(plain)) != 0)
            return CUDA_ERROR_NOT_SUPPORTED; /* programmatic edges */
    CUresult r = CUDA_SUCCESS;
    for (size_t i = 0; !r && i < numDependencies; i++)
        r = tfc_fwd_cuGraphAddDependencies_v2(hGraph, from[i], to[i]);
    return r;
}

/* Nodes go with their graph. */
TFC_API CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
    CUresult rp = tfc_capture_graph_gone(hGraph);
    CUresult r = tfc_fwd_cuGraphDestroy(hGraph);
    r = r ? r : rp;
    if (r == CUDA_ERROR_INVALID_HANDLE)
        return r;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    size_t pos = 0;
    uint64_t key;
    void *val;
    while (tf_htab_next(&t->objs, &pos, &key, &val)) {
        struct tfc_node *n = val;
        if (n->type == TF_PROTO_H_NODE && n->graph == (uintptr_t)hGraph) {
            tfc_obj_drop(t, (struct tfc_obj *)n);
            pos = 0; /* a removal moves entries: start over */
        }
    }
    pthread_mutex_unlock(&t->lock);
    return r;
}
