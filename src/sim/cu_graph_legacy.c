/* SPDX-License-Identifier: Apache-2.0
 *
 * The older ABI versions of the graph and capture entry points, for programs and runtimes
 * built against CUDA 10 .. 12.2 headers (a CUDA 12.1 runtime, as PyTorch wheels bundle, asks
 * cuGetProcAddress for cuStreamGetCaptureInfo at 12010 and gets the _v2 ABI): the kernel node
 * parameters without kern/ctx, the queries and edits without edge data, capture info without
 * the graph and dependencies, cuGraphExecUpdate with its two out-parameters, cuGraphInstantiate
 * with an error node and log buffer. Each forwards to the current version (cu_graph.c,
 * cu_gexec.c, cu_capture.c). Their prototypes are in cuda_api.h.
 */
#include "sim/drv.h"

#include <string.h>

/* ---- Kernel node parameters: the v1 layout has no kern / ctx ---------------------------- */

static CUDA_KERNEL_NODE_PARAMS widen(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    CUDA_KERNEL_NODE_PARAMS w = {0};
    memcpy(&w, p, sizeof(*p)); /* the v2 layout starts with the v1 one */
    return w;
}

CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                      const CUgraphNode *dependencies, size_t numDependencies,
                                      const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    if (!nodeParams)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS w = widen(nodeParams);
    return cuGraphAddKernelNode_v2(phGraphNode, hGraph, dependencies, numDependencies, &w);
}

CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS w;
    CUresult rc = cuGraphKernelNodeGetParams_v2(hNode, &w);
    if (!rc)
        memcpy(p, &w, sizeof(*p));
    return rc;
}

CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS w = widen(p);
    return cuGraphKernelNodeSetParams_v2(hNode, &w);
}

CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS w = widen(p);
    return cuGraphExecKernelNodeSetParams_v2(hGraphExec, hNode, &w);
}

/* ---- Structure without edge data --------------------------------------------------------- */

CUresult CUDAAPI cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to,
                                 size_t *numEdges)
{
    return cuGraphGetEdges_v2(hGraph, from, to, NULL, numEdges);
}

CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies,
                                            size_t *numDependencies)
{
    return cuGraphNodeGetDependencies_v2(hNode, dependencies, NULL, numDependencies);
}

CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *dependentNodes,
                                              size_t *numDependentNodes)
{
    return cuGraphNodeGetDependentNodes_v2(hNode, dependentNodes, NULL, numDependentNodes);
}

CUresult CUDAAPI cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from,
                                        const CUgraphNode *to, size_t numDependencies)
{
    return cuGraphAddDependencies_v2(hGraph, from, to, NULL, numDependencies);
}

CUresult CUDAAPI cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode *from,
                                           const CUgraphNode *to, size_t numDependencies)
{
    return cuGraphRemoveDependencies_v2(hGraph, from, to, NULL, numDependencies);
}

CUresult CUDAAPI cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                const CUgraphNode *dependencies, size_t numDependencies,
                                CUgraphNodeParams *nodeParams)
{
    return cuGraphAddNode_v2(phGraphNode, hGraph, dependencies, NULL, numDependencies, nodeParams);
}

/* ---- Executable graphs ------------------------------------------------------------------- */

CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph,
                                   CUgraphNode *hErrorNode_out,
                                   CUgraphExecUpdateResult *updateResult_out)
{
    if (!hErrorNode_out || !updateResult_out)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphExecUpdateResultInfo info = {CU_GRAPH_EXEC_UPDATE_ERROR, NULL, NULL};
    CUresult rc = cuGraphExecUpdate_v2(hGraphExec, hGraph, &info);
    *hErrorNode_out = info.errorNode;
    *updateResult_out = info.result;
    return rc;
}

/* The CUDA 10 / 11.0 form: no flags; an error node and a log of what went wrong. */
static CUresult instantiate_logged(CUgraphExec *e, CUgraph g, CUgraphNode *err, char *log,
                                   size_t size)
{
    if (err)
        *err = NULL;
    if (log && size)
        log[0] = 0;
    CUresult rc = cuGraphInstantiateWithFlags(e, g, 0);
    if (rc && log && size) {
        const char *name = tf__cu_error_name(rc);
        size_t n = strlen(name) < size - 1 ? strlen(name) : size - 1;
        memcpy(log, name, n);
        log[n] = 0;
    }
    return rc;
}

CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
                                    CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    return instantiate_logged(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
                                       CUgraphNode *phErrorNode, char *logBuffer, size_t bufferSize)
{
    return instantiate_logged(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

/* ---- Capture ----------------------------------------------------------------------------- */

CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream)
{
    return cuStreamBeginCapture_v2(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream)
{
    return cuStreamBeginCapture_v2_ptsz(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus,
                                        cuuint64_t *id)
{
    return cuStreamGetCaptureInfo_v3(hStream, captureStatus, id, NULL, NULL, NULL, NULL);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus,
                                             cuuint64_t *id)
{
    return cuStreamGetCaptureInfo_v3_ptsz(hStream, captureStatus, id, NULL, NULL, NULL, NULL);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream,
                                           CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out,
                                           size_t *numDependencies_out)
{
    return cuStreamGetCaptureInfo_v3(hStream, captureStatus_out, id_out, graph_out,
                                     dependencies_out, NULL, numDependencies_out);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream,
                                                CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out, CUgraph *graph_out,
                                                const CUgraphNode **dependencies_out,
                                                size_t *numDependencies_out)
{
    return cuStreamGetCaptureInfo_v3_ptsz(hStream, captureStatus_out, id_out, graph_out,
                                          dependencies_out, NULL, numDependencies_out);
}

CUresult CUDAAPI cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode *dependencies,
                                                   size_t numDependencies, unsigned int flags)
{
    return cuStreamUpdateCaptureDependencies_v2(hStream, dependencies, NULL, numDependencies,
                                                flags);
}

CUresult CUDAAPI cuStreamUpdateCaptureDependencies_ptsz(CUstream hStream, CUgraphNode *dependencies,
                                                        size_t numDependencies, unsigned int flags)
{
    return cuStreamUpdateCaptureDependencies_v2_ptsz(hStream, dependencies, NULL, numDependencies,
                                                     flags);
}
