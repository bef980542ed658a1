/* SPDX-License-Identifier: Apache-2.0
 *
 * Graph hooks: instantiating a graph counts its kernel nodes (child graphs included), which
 * is what each launch of it is charged (hook_launch.c), and reserves the memory its
 * allocation nodes will allocate on their devices: a graph whose memory does not fit the
 * workload's VRAM limit is refused at instantiation with CUDA_ERROR_OUT_OF_MEMORY (the
 * runtime's cudaErrorMemoryAllocation). The reservation is held while the executable graph
 * exists -- the memory a graph allocates stays with it between launches (until trimmed) --
 * and given back when it is destroyed, or when its context is.
 */
#include "limiter/pass.h"

#include <stdlib.h>

/* What a graph needs: kernel nodes, and allocation bytes per region device. */
struct needs {
    uint64_t kernels;
    uint64_t bytes[TF_SHM_MAX_DEVICES];
};

static void walk(CUgraph g, int depth, struct needs *n)
{
    size_t count = 0;
    CUresult rc;
    TF_CALL(rc, cuGraphGetNodes, g, NULL, &count);
    if (rc != CUDA_SUCCESS || count == 0 || depth > 8)
        return;
    CUgraphNode *nodes = calloc(count, sizeof(*nodes));
    if (!nodes)
        return;
    TF_CALL(rc, cuGraphGetNodes, g, nodes, &count);
    for (size_t i = 0; rc == CUDA_SUCCESS && i < count; i++) {
        CUgraphNodeType t;
        CUresult trc;
        TF_CALL(trc, cuGraphNodeGetType, nodes[i], &t);
        if (trc != CUDA_SUCCESS)
            continue;
        if (t == CU_GRAPH_NODE_TYPE_KERNEL) {
            n->kernels++;
        } else if (t == CU_GRAPH_NODE_TYPE_GRAPH) {
            CUgraph child;
            TF_CALL(trc, cuGraphChildGraphNodeGetGraph, nodes[i], &child);
            if (trc == CUDA_SUCCESS)
                walk(child, depth + 1, n);
        } else if (t == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
            CUDA_MEM_ALLOC_NODE_PARAMS p;
            TF_CALL(trc, cuGraphMemAllocNodeGetParams, nodes[i], &p);
            int idx =
                trc == CUDA_SUCCESS && p.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE
                    ? tf__idx_of_dev((CUdevice)p.poolProps.location.id)
                    : -1;
            if (idx >= 0)
                n->bytes[idx] += p.bytesize;
        }
    }
    free(nodes);
}

/* The key of exec E's reservation on region device IDX: unique per pair (IDX < 32, and user
 * space addresses leave the top bits of a pointer free). */
static uint64_t gmem_key(CUgraphExec e, int idx)
{
    return ((uint64_t)(uintptr_t)e << 5) | (uint64_t)idx;
}

static void unreserve_all(const struct needs *n, int upto)
{
    for (int i = 0; i < upto; i++)
        if (n->bytes[i])
            tf__unreserve(i, n->bytes[i]);
}

static uint64_t cur_ctx(void)
{
    CUcontext c = NULL;
    CUresult rc;
    TF_CALL(rc, cuCtxGetCurrent, &c);
    return rc == CUDA_SUCCESS ? (uint64_t)(uintptr_t)c : 0;
}

#define INSTANTIATE(name, ...)                                                                     \
    TF_PASS_IF_NESTED(name, __VA_ARGS__);                                                          \
    struct needs n = {0};                                                                          \
    if (tf__L.r && hGraph)                                                                         \
        walk(hGraph, 0, &n);                                                                       \
    for (int i = 0; i < TF_SHM_MAX_DEVICES; i++)                                                   \
        if (n.bytes[i] && !tf__reserve(i, n.bytes[i])) {                                           \
            unreserve_all(&n, i);                                                                  \
            return CUDA_ERROR_OUT_OF_MEMORY;                                                       \
        }                                                                                          \
    CUresult rc;                                                                                   \
    TF_CALL(rc, name, __VA_ARGS__);                                                                \
    if (rc != CUDA_SUCCESS || !phGraphExec) {                                                      \
        unreserve_all(&n, TF_SHM_MAX_DEVICES);                                                     \
        return rc;                                                                                 \
    }                                                                                              \
    remember(*phGraphExec, &n);                                                                    \
    return rc

static void remember(CUgraphExec e, const struct needs *n)
{
    if (!tf__L.r)
        return;
    tf_ptrtab_put(&tf__L.graphs, (uint64_t)(uintptr_t)e, n->kernels ? n->kernels : 1, 0, 0);
    uint64_t ctx = cur_ctx();
    for (int i = 0; i < TF_SHM_MAX_DEVICES; i++)
        if (n->bytes[i] &&
            !tf_ptrtab_put(&tf__L.gmem, gmem_key(e, i), n->bytes[i], (uint32_t)i, ctx))
            tf__unreserve(i, n->bytes[i]); /* untracked: not held (never over-counted) */
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                             unsigned long long flags)
{
    INSTANTIATE(cuGraphInstantiateWithFlags, phGraphExec, hGraph, flags);
}

CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                              CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    INSTANTIATE(cuGraphInstantiateWithParams, phGraphExec, hGraph, instantiateParams);
}

CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                   CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    INSTANTIATE(cuGraphInstantiateWithParams_ptsz, phGraphExec, hGraph, instantiateParams);
}

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                    CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    INSTANTIATE(cuGraphInstantiate, phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                       CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    INSTANTIATE(cuGraphInstantiate_v2, phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    TF_PASS_IF_NESTED(cuGraphExecDestroy, hGraphExec);
    struct tf_ptrtab_val v, m[TF_SHM_MAX_DEVICES];
    uintptr_t h = 0, hm[TF_SHM_MAX_DEVICES] = {0};
    if (tf__L.r) {
        h = tf_ptrtab_take(&tf__L.graphs, (uint64_t)(uintptr_t)hGraphExec, &v);
        for (int i = 0; i < TF_SHM_MAX_DEVICES; i++)
            hm[i] = tf_ptrtab_take(&tf__L.gmem, gmem_key(hGraphExec, i), &m[i]);
    }
    CUresult rc;
    TF_CALL(rc, cuGraphExecDestroy, hGraphExec);
    if (h) {
        if (rc == CUDA_SUCCESS)
            tf_ptrtab_done(h);
        else
            tf_ptrtab_restore(h);
    }
    for (int i = 0; i < TF_SHM_MAX_DEVICES; i++) {
        if (!hm[i])
            continue;
        if (rc == CUDA_SUCCESS) {
            tf_ptrtab_done(hm[i]);
            tf__unreserve((int)m[i].idx, m[i].bytes);
        } else {
            tf_ptrtab_restore(hm[i]);
        }
    }
    return rc;
}
