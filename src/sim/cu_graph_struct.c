/* SPDX-License-Identifier: Apache-2.0
 *
 * CUDA graphs of the simulated driver: a graph's structure (node types, nodes, roots, edges,
 * dependencies and dependents; adding and removing edges; destroying a node). Graphs and their
 * nodes are made in cu_graph.c.
 */
#include "sim/graph.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---- Structure ------------------------------------------------------------------------- */

CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
    CUresult rc = tf__graph_lock_node(hNode, -1);
    if (rc)
        return rc;
    if (!type)
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    *type = hNode->type;
    return tf__graph_unlock(CUDA_SUCCESS);
}

/* The count/fill protocol of the list queries: with OUT NULL only *N is set; else up to *N
 * entries are written and *N becomes the number written. */
static CUresult list_graph(CUgraph g, CUgraphNode *out, size_t *num, int roots_only)
{
    CUresult rc = tf__graph_lock(g);
    if (rc)
        return rc;
    if (!num)
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    size_t k = 0;
    for (CUgraphNode n = g->nodes; n; n = n->next) {
        if (roots_only && n->ndeps)
            continue;
        if (out && k < *num)
            out[k] = n;
        k++;
    }
    *num = out && k > *num ? *num : k;
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    return list_graph(hGraph, nodes, numNodes, 0);
}

CUresult CUDAAPI cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes, size_t *numRootNodes)
{
    return list_graph(hGraph, rootNodes, numRootNodes, 1);
}

static void zero_edges(CUgraphEdgeData *e, size_t n)
{
    if (e)
        memset(e, 0, n * sizeof(*e));
}

CUresult CUDAAPI cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                                    CUgraphEdgeData *edgeData, size_t *numEdges)
{
    CUresult rc = tf__graph_lock(hGraph);
    if (rc)
        return rc;
    if (!numEdges || (!from != !to) || (edgeData && !from))
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    size_t k = 0;
    for (CUgraphNode n = hGraph->nodes; n; n = n->next)
        for (size_t i = 0; i < n->ndeps; i++, k++)
            if (from && k < *numEdges) {
                from[k] = n->deps[i];
                to[k] = n;
            }
    if (from) {
        size_t w = k > *numEdges ? *numEdges : k;
        zero_edges(edgeData, w);
        *numEdges = w;
    } else {
        *numEdges = k;
    }
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode *dependencies,
                                               CUgraphEdgeData *edgeData, size_t *numDependencies)
{
    CUresult rc = tf__graph_lock_node(hNode, -1);
    if (rc)
        return rc;
    if (!numDependencies || (edgeData && !dependencies))
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    size_t k = hNode->ndeps;
    if (dependencies) {
        size_t w = k > *numDependencies ? *numDependencies : k;
        memcpy(dependencies, hNode->deps, w * sizeof(*dependencies));
        zero_edges(edgeData, w);
        k = w;
    }
    *numDependencies = k;
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode *dependentNodes,
                                                 CUgraphEdgeData *edgeData,
                                                 size_t *numDependentNodes)
{
    CUresult rc = tf__graph_lock_node(hNode, -1);
    if (rc)
        return rc;
    if (!numDependentNodes || (edgeData && !dependentNodes))
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    size_t k = 0;
    for (CUgraphNode n = hNode->g->nodes; n; n = n->next)
        if (tf__graph_has_dep(n, hNode)) {
            if (dependentNodes && k < *numDependentNodes)
                dependentNodes[k] = n;
            k++;
        }
    if (dependentNodes && k > *numDependentNodes)
        k = *numDependentNodes;
    if (dependentNodes)
        zero_edges(edgeData, k);
    *numDependentNodes = k;
    return tf__graph_unlock(CUDA_SUCCESS);
}

/* Checks an edge list: nodes of G, plain edges. */
static CUresult check_edges(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                            const CUgraphEdgeData *ed, size_t n)
{
    if (n && (!from || !to))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++) {
        if (!tf__node_ok(from[i]) || !tf__node_ok(to[i]) || from[i]->g != g || to[i]->g != g ||
            from[i] == to[i])
            return CUDA_ERROR_INVALID_VALUE;
        if (ed && (ed[i].from_port || ed[i].to_port || ed[i].type))
            return tf__not_supported("graph edges with ports or programmatic types");
    }
    return CUDA_SUCCESS;
}

/* tf__graph_lock, then check_edges (on failure the lock is released). */
static CUresult lock_edges(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                           const CUgraphEdgeData *ed, size_t n)
{
    CUresult rc = tf__graph_lock(g);
    if (rc)
        return rc;
    rc = check_edges(g, from, to, ed, n);
    return rc ? tf__graph_unlock(rc) : CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
                                           const CUgraphNode *to, const CUgraphEdgeData *edgeData,
                                           size_t numDependencies)
{
    CUresult rc = lock_edges(hGraph, from, to, edgeData, numDependencies);
    if (rc)
        return rc;
    for (size_t i = 0; i < numDependencies; i++)
        if (tf__graph_has_dep(to[i], from[i]))
            return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE); /* already an edge */
    for (size_t i = 0; i < numDependencies && !rc; i++)
        rc = tf__graph_add_dep(to[i], from[i]);
    return tf__graph_unlock(rc);
}

CUresult CUDAAPI cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode *from,
                                              const CUgraphNode *to,
                                              const CUgraphEdgeData *edgeData,
                                              size_t numDependencies)
{
    CUresult rc = lock_edges(hGraph, from, to, edgeData, numDependencies);
    if (rc)
        return rc;
    if (hGraph->has_mem_nodes) /* edges of graphs with memory nodes cannot be deleted */
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; i < numDependencies; i++)
        if (!tf__graph_has_dep(to[i], from[i]))
            return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    for (size_t i = 0; i < numDependencies; i++) {
        CUgraphNode n = to[i];
        for (size_t k = 0; k < n->ndeps; k++)
            if (n->deps[k] == from[i]) {
                n->deps[k] = n->deps[--n->ndeps];
                break;
            }
    }
    return tf__graph_unlock(CUDA_SUCCESS);
}

CUresult CUDAAPI cuGraphDestroyNode(CUgraphNode hNode)
{
    CUresult rc = tf__graph_lock_node(hNode, -1);
    if (rc)
        return rc;
    if (hNode->g->has_mem_nodes || hNode->g->cap) /* no node removal in these graphs */
        return tf__graph_unlock(CUDA_ERROR_INVALID_VALUE);
    tf__node_free(hNode);
    return tf__graph_unlock(CUDA_SUCCESS);
}
