/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker sessions: graphs built node by node (calls.def "graphs built node by node",
 * session_int.h). Nodes are added to the client's graph without dependencies, under the ids
 * the client chose, and belong to their graph (destroyed with it); edges come one call each.
 * The device memory a memset or memcpy node names must lie in the client's own allocations
 * (or a graph allocation of its own captured earlier), as for the same operation on a stream:
 * a graph replays on the worker's GPU long after the node was checked, so an address another
 * client owns is refused when the node is added. Kernel nodes are added by
 * tf__ws_h_graph_kernel_node (sess_module.c).
 */
#include "remote/worker/session_int.h"

#include <string.h>

CUresult tf__ws_hook_cuGraphAddEmptyNode(struct session *s, uint64_t ctx, tf_ws_tramp call,
                                         void *fn, const uint64_t *v, uint64_t *o, void **nh)
{
    (void)s, (void)ctx, (void)call, (void)o;
    CUresult(CUDAAPI * add)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t);
    memcpy(&add, &fn, sizeof(add));
    CUgraphNode n = NULL;
    CUresult r = add(&n, (CUgraph)(uintptr_t)v[1], NULL, 0);
    nh[0] = n;
    return r;
}

CUresult tf__ws_hook_cuGraphAddDependencies_v2(struct session *s, uint64_t ctx, tf_ws_tramp call,
                                               void *fn, const uint64_t *v, uint64_t *o, void **nh)
{
    (void)s, (void)ctx, (void)call, (void)o, (void)nh;
    CUresult(CUDAAPI * add)(CUgraph, const CUgraphNode *, const CUgraphNode *,
                            const CUgraphEdgeData *, size_t);
    memcpy(&add, &fn, sizeof(add));
    CUgraphNode from = (CUgraphNode)(uintptr_t)v[1], to = (CUgraphNode)(uintptr_t)v[2];
    return add((CUgraph)(uintptr_t)v[0], &from, &to, NULL, 1);
}

CUresult tf__ws_hook_cuGraphAddMemsetNode(struct session *s, uint64_t ctx, tf_ws_tramp call,
                                          void *fn, const uint64_t *v, uint64_t *o, void **nh)
{
    (void)ctx, (void)call, (void)o;
    CUDA_MEMSET_NODE_PARAMS p;
    memset(&p, 0, sizeof(p));
    p.dst = (CUdeviceptr)v[2];
    p.pitch = (size_t)v[3];
    p.value = (unsigned int)v[4];
    p.elementSize = (unsigned int)v[5];
    p.width = (size_t)v[6];
    p.height = (size_t)v[7];
    if (p.elementSize != 1 && p.elementSize != 2 && p.elementSize != 4)
        return CUDA_ERROR_INVALID_VALUE;
    /* The extent the node writes: HEIGHT rows of WIDTH elements, PITCH bytes apart. */
    uint64_t row = (uint64_t)p.width * p.elementSize;
    if (p.width > UINT64_MAX / p.elementSize ||
        (p.height > 1 && (p.pitch < row || p.height - 1 > (UINT64_MAX - row) / p.pitch)))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t span = p.height > 1 ? (uint64_t)p.pitch * (p.height - 1) + row : row;
    if (span && !tf__ws_mem_ok(s, p.dst, span))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult(CUDAAPI * add)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                            const CUDA_MEMSET_NODE_PARAMS *, CUcontext);
    memcpy(&add, &fn, sizeof(add));
    CUgraphNode n = NULL;
    CUresult r = add(&n, (CUgraph)(uintptr_t)v[1], NULL, 0, &p, (CUcontext)(uintptr_t)v[8]);
    nh[0] = n;
    return r;
}

CUresult tf__ws_hook_cuGraphAddMemcpyNode(struct session *s, uint64_t ctx, tf_ws_tramp call,
                                          void *fn, const uint64_t *v, uint64_t *o, void **nh)
{
    (void)ctx, (void)call, (void)o;
    uint64_t n = v[4];
    if (n == 0 || !tf__ws_mem_ok(s, v[2], n) || !tf__ws_mem_ok(s, v[3], n))
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = (CUdeviceptr)v[3];
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = (CUdeviceptr)v[2];
    c.WidthInBytes = (size_t)n;
    c.Height = 1;
    c.Depth = 1;
    CUresult(CUDAAPI * add)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                            const CUDA_MEMCPY3D *, CUcontext);
    memcpy(&add, &fn, sizeof(add));
    CUgraphNode node = NULL;
    CUresult r = add(&node, (CUgraph)(uintptr_t)v[1], NULL, 0, &c, (CUcontext)(uintptr_t)v[5]);
    nh[0] = node;
    return r;
}

/* ---- queries and updates of captured graphs ------------------------------------------------- */

CUresult tf__ws_hook_cuGraphGetNodes(struct session *s, uint64_t ctx, tf_ws_tramp call, void *fn,
                                     const uint64_t *v, uint64_t *o, void **nh)
{
    (void)s, (void)ctx, (void)call, (void)nh;
    CUresult(CUDAAPI * get)(CUgraph, CUgraphNode *, size_t *);
    memcpy(&get, &fn, sizeof(get));
    size_t n = 0;
    CUresult r = get((CUgraph)(uintptr_t)v[0], NULL, &n);
    o[1] = n;
    return r;
}

CUresult tf__ws_hook_cuGraphExecUpdate_v2(struct session *s, uint64_t ctx, tf_ws_tramp call,
                                          void *fn, const uint64_t *v, uint64_t *o, void **nh)
{
    (void)s, (void)ctx, (void)call, (void)nh;
    CUresult(CUDAAPI * update)(CUgraphExec, CUgraph, CUgraphExecUpdateResultInfo *);
    memcpy(&update, &fn, sizeof(update));
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof(info));
    CUresult r = update((CUgraphExec)(uintptr_t)v[0], (CUgraph)(uintptr_t)v[1], &info);
    o[2] = (uint64_t)info.result;
    return r;
}

/* A capture in global mode would prohibit the unsafe calls of every thread of the worker,
 * other clients' included: it is begun thread-local, which prohibits them on this client's
 * connection thread, the only one its calls run on. */
CUresult tf__ws_hook_cuStreamBeginCapture_v2(struct session *s, uint64_t ctx, tf_ws_tramp call,
                                             void *fn, const uint64_t *v, uint64_t *o, void **nh)
{
    (void)s, (void)ctx;
    uint64_t w[2] = {v[0], v[1] == CU_STREAM_CAPTURE_MODE_GLOBAL
                               ? (uint64_t)CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
                               : v[1]};
    return call(fn, w, o, nh);
}

CUresult tf__ws_hook_cuThreadExchangeStreamCaptureMode(struct session *s, uint64_t ctx,
                                                       tf_ws_tramp call, void *fn,
                                                       const uint64_t *v, uint64_t *o, void **nh)
{
    (void)s, (void)ctx, (void)call, (void)o, (void)nh;
    CUresult(CUDAAPI * exchange)(CUstreamCaptureMode *);
    memcpy(&exchange, &fn, sizeof(exchange));
    CUstreamCaptureMode m = (CUstreamCaptureMode)v[0];
    return exchange(&m);
}

CUresult tf__ws_hook_cuStreamGetCaptureInfo_v3(struct session *s, uint64_t ctx, tf_ws_tramp call,
                                               void *fn, const uint64_t *v, uint64_t *o, void **nh)
{
    (void)s, (void)ctx, (void)call, (void)nh;
    CUresult(CUDAAPI * info)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                             const CUgraphNode **, const CUgraphEdgeData **, size_t *);
    memcpy(&info, &fn, sizeof(info));
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    CUresult r = info((CUstream)(uintptr_t)v[0], &st, &id, NULL, NULL, NULL, NULL);
    o[1] = (uint64_t)st;
    o[2] = id;
    return r;
}
