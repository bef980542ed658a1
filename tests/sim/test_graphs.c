/* SPDX-License-Identifier: Apache-2.0
 *
 * CUDA graphs on the simulated driver: stream capture (the nodes it makes, fork and join
 * through events, the rules that invalidate a capture and their error codes, capture info
 * and dependency updates, capture modes), explicit construction (every supported node kind,
 * parameters, structure queries, clone, cycles), executable graphs replayed many times with
 * exact results, per-node and whole-graph updates, node enabling, and graph memory (captured
 * and explicit allocation/free nodes, relaunch rules, AUTO_FREE_ON_LAUNCH, trimming,
 * attributes, the device budget).
 * Usage: test_graphs vecadd.ptx
 */
#include "simtest.h"

#include <cuda.h>
#include <stdatomic.h>

static const char *ptx_path;
static CUcontext ctx;
static CUmodule mod;
static CUfunction vecadd, saxpy;

enum { N = 1000 };

static _Atomic int host_calls;
static void CUDA_CB bump(void *arg)
{
    (void)arg;
    atomic_fetch_add(&host_calls, 1);
}

static CUresult launch_add(CUstream s, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int n)
{
    void *p[] = {&a, &b, &c, &n};
    return cuLaunchKernel(vecadd, (unsigned)(n + 127) / 128, 1, 1, 128, 1, 1, 0, s, p, NULL);
}

static size_t count_nodes(CUgraph g, CUgraphNodeType type)
{
    size_t n = 0;
    CU_OK(cuGraphGetNodes(g, NULL, &n));
    CUgraphNode v[64];
    assert_true(n <= 64);
    CU_OK(cuGraphGetNodes(g, v, &n));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        CUgraphNodeType t;
        CU_OK(cuGraphNodeGetType(v[i], &t));
        k += t == type;
    }
    return k;
}

static void a_captured_sequence_replays_exactly_every_time(void **state)
{
    CUstream s;
    float *ha, *hb, *hc;
    CUdeviceptr a, b, c;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemAllocHost((void **)&ha, N * 4));
    CU_OK(cuMemAllocHost((void **)&hb, N * 4));
    CU_OK(cuMemAllocHost((void **)&hc, N * 4));
    CU_OK(cuMemAlloc(&a, N * 4));
    CU_OK(cuMemAlloc(&b, N * 4));
    CU_OK(cuMemAlloc(&c, N * 4));
    atomic_store(&host_calls, 0);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureStatus st;
    CU_OK(cuStreamIsCapturing(s, &st));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CU_OK(cuMemcpyHtoDAsync(a, ha, N * 4, s));
    CU_OK(cuMemcpyHtoDAsync(b, hb, N * 4, s));
    CU_OK(cuMemsetD32Async(c, 0xFFFFFFFFu, N, s));
    CU_OK(launch_add(s, a, b, c, N));
    CU_OK(cuMemcpyDtoHAsync(hc, c, N * 4, s));
    CU_OK(cuLaunchHostFunc(s, bump, NULL));
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    assert_int_equal(atomic_load(&host_calls), 0); /* captured, not run */
    CU_OK(cuStreamIsCapturing(s, &st));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(count_nodes(g, CU_GRAPH_NODE_TYPE_MEMCPY), 3);
    assert_int_equal(count_nodes(g, CU_GRAPH_NODE_TYPE_MEMSET), 1);
    assert_int_equal(count_nodes(g, CU_GRAPH_NODE_TYPE_KERNEL), 1);
    assert_int_equal(count_nodes(g, CU_GRAPH_NODE_TYPE_HOST), 1);
    size_t roots = 0, edges = 0;
    CU_OK(cuGraphGetRootNodes(g, NULL, &roots));
    CU_OK(cuGraphGetEdges(g, NULL, NULL, NULL, &edges));
    assert_int_equal(roots, 1);
    assert_int_equal(edges, 5); /* one stream: a chain */
    CUgraphExec e;
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuGraphDestroy(g)); /* the executable graph does not need it */
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < N; i++) {
            ha[i] = (float)(i * (round + 1));
            hb[i] = 0.5f * (float)round;
        }
        CU_OK(cuGraphLaunch(e, s));
        CU_OK(cuStreamSynchronize(s));
        for (int i = 0; i < N; i++)
            assert_true(hc[i] == ha[i] + hb[i]);
    }
    assert_int_equal(atomic_load(&host_calls), 5);
    /* Back-to-back launches on two streams are ordered behind each other. */
    CUstream s2;
    CU_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < N; i++)
        ha[i] = 1.0f;
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuGraphLaunch(e, s2));
    CU_OK(cuStreamSynchronize(s2));
    assert_int_equal(atomic_load(&host_calls), 7);
    CU_OK(cuGraphExecDestroy(e));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuStreamDestroy(s2));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    CU_OK(cuMemFree(c));
    CU_OK(cuMemFreeHost(ha));
    CU_OK(cuMemFreeHost(hb));
    CU_OK(cuMemFreeHost(hc));
}

static void forked_streams_must_join_the_origin(void **state)
{
    CUstream s1, s2;
    CUevent fork, join;
    CUdeviceptr a, b, c, d;
    CU_OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuMemAlloc(&a, N * 4));
    CU_OK(cuMemAlloc(&b, N * 4));
    CU_OK(cuMemAlloc(&c, N * 4));
    CU_OK(cuMemAlloc(&d, N * 4));
    CU_OK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU_OK(cuMemsetD32Async(a, 0x3F800000u, N, s1)); /* 1.0f */
    CU_OK(cuEventRecord(fork, s1));
    CU_IS(CUDA_ERROR_CAPTURED_EVENT, cuEventQuery(fork));
    CU_OK(cuStreamWaitEvent(s2, fork, 0)); /* s2 joins the capture */
    CUstreamCaptureStatus st;
    cuuint64_t id1, id2;
    CU_OK(cuStreamGetCaptureInfo(s1, &st, &id1, NULL, NULL, NULL, NULL));
    CU_OK(cuStreamGetCaptureInfo(s2, &st, &id2, NULL, NULL, NULL, NULL));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_true(id1 == id2);
    CU_OK(cuMemsetD32Async(b, 0x40000000u, N, s2)); /* 2.0f on the fork */
    CU_OK(launch_add(s2, a, b, c, N));              /* c = 3 */
    CU_OK(cuEventRecord(join, s2));
    CU_OK(cuStreamWaitEvent(s1, join, 0));
    CU_OK(launch_add(s1, c, a, d, N)); /* d = 4 after the join */
    CUgraph g;
    CU_OK(cuStreamEndCapture(s1, &g));
    CU_OK(cuStreamIsCapturing(s2, &st));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE); /* the fork ended with it */
    size_t roots = 0;
    CU_OK(cuGraphGetRootNodes(g, NULL, &roots));
    assert_int_equal(roots, 1);
    CUgraphExec e;
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuGraphLaunch(e, s1));
    CU_OK(cuStreamSynchronize(s1));
    float out[N];
    CU_OK(cuMemcpyDtoH(out, d, sizeof(out)));
    for (int i = 0; i < N; i++)
        assert_true(out[i] == 4.0f);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    /* A fork that is not joined back fails the whole capture. */
    CU_OK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuEventRecord(fork, s1));
    CU_OK(cuStreamWaitEvent(s2, fork, 0));
    CU_OK(cuMemsetD8Async(a, 0, 4, s2));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, cuStreamEndCapture(s2, &g)); /* not the origin */
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s1, &g));
    assert_null(g);
    CU_OK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuEventRecord(fork, s1));
    CU_OK(cuStreamWaitEvent(s2, fork, 0));
    CU_OK(cuMemsetD8Async(a, 0, 4, s2));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, cuStreamEndCapture(s1, &g));
    assert_null(g);
    CU_OK(cuStreamIsCapturing(s2, &st));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
    CU_OK(cuEventQuery(fork)); /* its capture is over */
    CU_OK(cuEventDestroy(fork));
    CU_OK(cuEventDestroy(join));
    CU_OK(cuStreamDestroy(s1));
    CU_OK(cuStreamDestroy(s2));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    CU_OK(cuMemFree(c));
    CU_OK(cuMemFree(d));
}

static void capture_rules_fail_and_invalidate_as_on_hardware(void **state)
{
    CUstream s, nb, blk;
    CUevent outside;
    CUdeviceptr a;
    CUgraph g;
    CUstreamCaptureStatus st;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&blk, 0));
    CU_OK(cuEventCreate(&outside, 0));
    CU_OK(cuMemAlloc(&a, 64));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
          cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_IS(CUDA_ERROR_ILLEGAL_STATE, cuStreamEndCapture(s, &g));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuStreamBeginCapture(s, (CUstreamCaptureMode)7));
    /* Synchronizing a capturing stream fails and invalidates the capture. */
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_IS(CUDA_ERROR_ILLEGAL_STATE, cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD8Async(a, 1, 64, s));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamSynchronize(s));
    CU_OK(cuStreamIsCapturing(s, &st));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuMemsetD8Async(a, 1, 64, s));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
    assert_null(g);
    CU_OK(cuStreamIsCapturing(s, &st));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
    /* Destroying it, querying it, and the context's synchronize too. */
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamDestroy(s));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamQuery(s));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuCtxSynchronize());
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
    /* A dependency on work outside the capture. */
    CU_OK(cuEventRecord(outside, nb));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, cuStreamWaitEvent(s, outside, 0));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
    /* ... unless the wait is external: an event wait node. */
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuStreamWaitEvent(s, outside, CU_EVENT_WAIT_EXTERNAL));
    CU_OK(cuEventRecordWithFlags(outside, s, CU_EVENT_RECORD_EXTERNAL));
    CU_OK(cuStreamEndCapture(s, &g));
    assert_int_equal(count_nodes(g, CU_GRAPH_NODE_TYPE_WAIT_EVENT), 1);
    assert_int_equal(count_nodes(g, CU_GRAPH_NODE_TYPE_EVENT_RECORD), 1);
    CU_OK(cuGraphDestroy(g));
    /* Unsafe calls in global mode, allowed once the thread is relaxed. */
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr x;
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuMemAlloc(&x, 64));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CU_OK(cuThreadExchangeStreamCaptureMode(&mode));
    assert_int_equal(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CU_OK(cuMemAlloc(&x, 64));
    CU_OK(cuMemFree(x));
    CU_OK(cuThreadExchangeStreamCaptureMode(&mode));
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cuMemAlloc(&x, 64)); /* a relaxed capture prohibits nothing */
    CU_OK(cuMemFree(x));
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(cuGraphDestroy(g));
    /* The legacy stream while a blocking stream captures. */
    CU_OK(cuStreamBeginCapture(blk, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuStreamIsCapturing(CU_STREAM_LEGACY, &st));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuMemsetD8Async(a, 0, 64, NULL));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(blk, &g));
    CU_OK(cuStreamBeginCapture(blk, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuMemAllocAsync(&x, 64, CU_STREAM_LEGACY));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(blk, &g));
    /* Capture info, and replacing a stream's dependency set. */
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD8Async(a, 1, 8, s));
    CU_OK(cuMemsetD8Async(a + 8, 2, 8, s));
    CUgraph cg;
    const CUgraphNode *deps;
    size_t nd;
    CU_OK(cuStreamGetCaptureInfo(s, &st, NULL, &cg, &deps, NULL, &nd));
    assert_int_equal(nd, 1);
    CU_OK(cuStreamUpdateCaptureDependencies(s, NULL, NULL, 0, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    CU_OK(cuMemsetD8Async(a + 16, 3, 8, s));                                       /* a new root */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiate(&(CUgraphExec){0}, cg, 0)); /* capturing */
    CU_OK(cuStreamEndCapture(s, &g));
    assert_ptr_equal(g, cg);
    size_t roots = 0;
    CU_OK(cuGraphGetRootNodes(g, NULL, &roots));
    assert_int_equal(roots, 2);
    CUgraphExec e;
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuGraphLaunch(e, s));
    CU_IS(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
    CU_IS(CUDA_ERROR_ILLEGAL_STATE,
          cuStreamUpdateCaptureDependencies(s, NULL, NULL, 0, CU_STREAM_ADD_CAPTURE_DEPENDENCIES));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    unsigned char h[24];
    CU_OK(cuMemcpyDtoH(h, a, sizeof(h)));
    assert_int_equal(h[0], 1);
    assert_int_equal(h[8], 2);
    assert_int_equal(h[16], 3);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(cg));
    /* A context destroyed in the middle of a capture takes the capture with it. */
    CUcontext c2;
    CUstream s3;
    CU_OK(cuCtxCreate(&c2, NULL, 0, 0));
    CU_OK(cuStreamCreate(&s3, 0));
    CU_OK(cuStreamBeginCapture(s3, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuCtxDestroy(c2));
    CU_OK(cuCtxSetCurrent(ctx));
    CU_OK(cuMemAlloc(&x, 64)); /* no capture prohibits it any more */
    CU_OK(cuMemFree(x));
    CU_OK(cuEventDestroy(outside));
    CU_OK(cuMemFree(a));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuStreamDestroy(nb));
    CU_OK(cuStreamDestroy(blk));
}

static void an_explicit_graph_runs_every_node_kind(void **state)
{
    CUgraph g, child;
    CUgraphNode set, add, copy, host, empty, sub, rec, wait, ax;
    CUdeviceptr a, b, c, pitched;
    CUevent ev;
    CU_OK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuMemAlloc(&a, N * 4));
    CU_OK(cuMemAlloc(&b, N * 4));
    CU_OK(cuMemAlloc(&c, N * 4));
    CU_OK(cuMemAlloc(&pitched, 8 * 512));
    CU_OK(cuGraphCreate(&g, 0));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGraphCreate(&child, 1));
    CUDA_MEMSET_NODE_PARAMS ms = {a, 0, 0x40400000u, 4, N, 1}; /* 3.0f */
    CU_OK(cuGraphAddMemsetNode(&set, g, NULL, 0, &ms, ctx));
    CUDA_MEMSET_NODE_PARAMS msb = {b, 0, 0x3F000000u, 4, N, 1}; /* 0.5f */
    CUgraphNode setb;
    CU_OK(cuGraphAddMemsetNode(&setb, g, NULL, 0, &msb, ctx));
    int n = N;
    void *args[] = {&a, &b, &c, &n};
    CUDA_KERNEL_NODE_PARAMS kp = {.func = vecadd,
                                  .gridDimX = (N + 127) / 128,
                                  .gridDimY = 1,
                                  .gridDimZ = 1,
                                  .blockDimX = 128,
                                  .blockDimY = 1,
                                  .blockDimZ = 1,
                                  .kernelParams = args};
    CUgraphNode two[2] = {set, setb};
    CU_OK(cuGraphAddKernelNode(&add, g, two, 2, &kp));
    /* A 2D copy: 8 rows of 64 floats of c into a 512-byte pitched buffer. */
    CUDA_MEMCPY3D cp = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
                        .srcDevice = c,
                        .srcPitch = 256,
                        .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                        .dstDevice = pitched,
                        .dstPitch = 512,
                        .WidthInBytes = 256,
                        .Height = 8,
                        .Depth = 1};
    CU_OK(cuGraphAddMemcpyNode(&copy, g, &add, 1, &cp, ctx));
    CUDA_HOST_NODE_PARAMS hp = {bump, NULL};
    CU_OK(cuGraphAddHostNode(&host, g, &copy, 1, &hp));
    CU_OK(cuGraphAddEmptyNode(&empty, g, &host, 1));
    /* A child graph: saxpy b = 2 * a + b (b: 0.5 -> 6.5). */
    CU_OK(cuGraphCreate(&child, 0));
    float alpha = 2.0f;
    void *sargs[] = {&n, &alpha, &a, &b};
    CUDA_KERNEL_NODE_PARAMS sp = kp;
    sp.func = saxpy;
    sp.kernelParams = sargs;
    CU_OK(cuGraphAddKernelNode(&ax, child, NULL, 0, &sp));
    CU_OK(cuGraphAddChildGraphNode(&sub, g, &add, 1, child));
    CU_OK(cuGraphAddEventRecordNode(&rec, g, &sub, 1, ev));
    CU_OK(cuGraphAddEventWaitNode(&wait, g, &rec, 1, ev));
    /* Queries and parameter round trips. */
    CUDA_KERNEL_NODE_PARAMS got;
    CU_OK(cuGraphKernelNodeGetParams(add, &got));
    assert_ptr_equal(got.func, vecadd);
    assert_int_equal(got.blockDimX, 128);
    assert_true(*(CUdeviceptr *)got.kernelParams[0] == a);
    assert_int_equal(*(int *)got.kernelParams[3], N);
    CUDA_MEMCPY3D gotcp;
    CU_OK(cuGraphMemcpyNodeGetParams(copy, &gotcp));
    assert_int_equal(gotcp.dstPitch, 512);
    CUgraphNode deps[4];
    size_t nd = 4;
    CU_OK(cuGraphNodeGetDependencies(add, deps, NULL, &nd));
    assert_int_equal(nd, 2);
    nd = 4;
    CU_OK(cuGraphNodeGetDependentNodes(add, deps, NULL, &nd));
    assert_int_equal(nd, 2); /* the copy and the child graph */
    CUgraph inner;
    CU_OK(cuGraphChildGraphNodeGetGraph(sub, &inner));
    assert_true(inner != child); /* a copy, owned by the node */
    CUevent got_ev;
    CU_OK(cuGraphEventRecordNodeGetEvent(rec, &got_ev));
    assert_ptr_equal(got_ev, ev);
    /* Bad parameters are refused when the node is made. */
    CUgraphNode bad;
    CUDA_KERNEL_NODE_PARAMS big = kp;
    big.blockDimX = 2048;
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGraphAddKernelNode(&bad, g, NULL, 0, &big));
    CUDA_MEMSET_NODE_PARAMS past = {a, 0, 0, 4, N + 1, 1};
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGraphAddMemsetNode(&bad, g, NULL, 0, &past, ctx));
    CUgraphNode dup[2] = {set, set};
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGraphAddEmptyNode(&bad, g, dup, 2));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGraphAddEmptyNode(&bad, g, &ax, 1)); /* another graph's */
    CUDA_MEMCPY3D arr = cp;
    arr.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    CU_IS(CUDA_ERROR_NOT_SUPPORTED, cuGraphAddMemcpyNode(&bad, g, NULL, 0, &arr, ctx));
    /* Run it twice. */
    CUgraphExec e;
    CU_OK(cuGraphInstantiate(&e, g, 0));
    atomic_store(&host_calls, 0);
    for (int round = 0; round < 2; round++) {
        CU_OK(cuGraphLaunch(e, NULL));
        CU_OK(cuCtxSynchronize());
    }
    assert_int_equal(atomic_load(&host_calls), 2);
    float out[8 * 128];
    CU_OK(cuMemcpyDtoH(out, pitched, sizeof(out)));
    for (int r = 0; r < 8; r++)
        for (int i = 0; i < 64; i++)
            assert_true(out[r * 128 + i] == 3.5f);
    float hb[N];
    CU_OK(cuMemcpyDtoH(hb, b, sizeof(hb)));
    assert_true(hb[7] == 6.5f && hb[N - 1] == 6.5f); /* the memset resets b each launch */
    /* Clone, find a node in it, destroy a node, a cycle. */
    CUgraph cl;
    CUgraphNode in_clone;
    CU_OK(cuGraphClone(&cl, g));
    CU_OK(cuGraphNodeFindInClone(&in_clone, add, cl));
    CUgraphNodeType t;
    CU_OK(cuGraphNodeGetType(in_clone, &t));
    assert_int_equal(t, CU_GRAPH_NODE_TYPE_KERNEL);
    CU_OK(cuGraphDestroyNode(in_clone));
    size_t cn = 0;
    CU_OK(cuGraphGetNodes(cl, NULL, &cn));
    assert_int_equal(cn, 8);
    CU_OK(cuGraphAddDependencies(g, &wait, &set, NULL, 1)); /* set <- ... <- wait <- set */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiate(&(CUgraphExec){0}, g, 0));
    CU_OK(cuGraphRemoveDependencies(g, &wait, &set, NULL, 1));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGraphRemoveDependencies(g, &wait, &set, NULL, 1));
    CU_OK(cuGraphDestroy(cl));
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(child));
    CU_OK(cuGraphDestroy(g));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGraphNodeGetType(add, &t)); /* went with its graph */
    CU_OK(cuEventDestroy(ev));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    CU_OK(cuMemFree(c));
    CU_OK(cuMemFree(pitched));
}

static void executable_graphs_take_updates(void **state)
{
    CUdeviceptr a, b, c;
    CU_OK(cuMemAlloc(&a, N * 4));
    CU_OK(cuMemAlloc(&b, N * 4));
    CU_OK(cuMemAlloc(&c, N * 4));
    CU_OK(cuMemsetD32(a, 0x3F800000u, N)); /* 1 */
    CU_OK(cuMemsetD32(b, 0x40000000u, N)); /* 2 */
    CUgraph g;
    CUgraphNode k, s;
    CU_OK(cuGraphCreate(&g, 0));
    int n = N;
    void *args[] = {&a, &b, &c, &n};
    CUDA_KERNEL_NODE_PARAMS kp = {.func = vecadd,
                                  .gridDimX = (N + 127) / 128,
                                  .gridDimY = 1,
                                  .gridDimZ = 1,
                                  .blockDimX = 128,
                                  .blockDimY = 1,
                                  .blockDimZ = 1,
                                  .kernelParams = args};
    CUDA_MEMSET_NODE_PARAMS ms = {c, 0, 0, 4, N, 1};
    CU_OK(cuGraphAddMemsetNode(&s, g, NULL, 0, &ms, ctx));
    CU_OK(cuGraphAddKernelNode(&k, g, &s, 1, &kp));
    CUgraphExec e;
    CU_OK(cuGraphInstantiate(&e, g, 0));
    float out[N];
    /* Per-node: the kernel now adds a to itself. */
    void *args2[] = {&a, &a, &c, &n};
    kp.kernelParams = args2;
    CU_OK(cuGraphExecKernelNodeSetParams(e, k, &kp));
    CU_OK(cuGraphLaunch(e, NULL));
    CU_OK(cuMemcpyDtoH(out, c, sizeof(out)));
    assert_true(out[0] == 2.0f);
    /* Disabled, the kernel does not run: c stays as the memset left it. */
    CU_OK(cuGraphNodeSetEnabled(e, k, 0));
    unsigned en = 1;
    CU_OK(cuGraphNodeGetEnabled(e, k, &en));
    assert_int_equal(en, 0);
    CU_OK(cuGraphLaunch(e, NULL));
    CU_OK(cuMemcpyDtoH(out, c, sizeof(out)));
    assert_true(out[0] == 0.0f);
    CU_OK(cuGraphNodeSetEnabled(e, k, 1));
    /* Whole graph: same topology, new parameters (b + b). */
    void *args3[] = {&b, &b, &c, &n};
    kp.kernelParams = args3;
    CU_OK(cuGraphKernelNodeSetParams(k, &kp));
    CUgraphExecUpdateResultInfo info;
    CU_OK(cuGraphExecUpdate(e, g, &info));
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    CU_OK(cuGraphLaunch(e, NULL));
    CU_OK(cuMemcpyDtoH(out, c, sizeof(out)));
    assert_true(out[N - 1] == 4.0f);
    /* A new topology is refused, with the reason. */
    CUgraphNode extra;
    CU_OK(cuGraphAddEmptyNode(&extra, g, &k, 1));
    CU_IS(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuGraphExecUpdate(e, g, &info));
    assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(b));
    CU_OK(cuMemFree(c));
}

static cuuint64_t gmem(CUgraphMem_attribute attr)
{
    cuuint64_t v = 0;
    CU_OK(cuDeviceGetGraphMemAttribute(0, attr, &v));
    return v;
}

static void graph_memory_lives_between_its_alloc_and_free_nodes(void **state)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    float *host;
    CU_OK(cuMemAllocHost((void **)&host, N * 4));
    size_t f0, total;
    CU_OK(cuMemGetInfo(&f0, &total));
    /* Captured: allocate, fill, add, read back, free. */
    CUdeviceptr t, o;
    CU_OK(cuMemAlloc(&o, N * 4));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemAllocAsync(&t, N * 4, s));
    CU_OK(cuMemsetD32Async(t, 0x40A00000u, N, s)); /* 5 */
    CU_OK(launch_add(s, t, t, o, N));
    CU_OK(cuMemcpyDtoHAsync(host, o, N * 4, s));
    CU_OK(cuMemFreeAsync(t, s));
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    assert_int_equal(count_nodes(g, CU_GRAPH_NODE_TYPE_MEM_ALLOC), 1);
    assert_int_equal(count_nodes(g, CU_GRAPH_NODE_TYPE_MEM_FREE), 1);
    CUgraph cl;
    CU_IS(CUDA_ERROR_NOT_SUPPORTED, cuGraphClone(&cl, g));
    CUgraphExec e, e2;
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGraphInstantiate(&e2, g, 0)); /* one at a time */
    size_t f1;
    for (int round = 0; round < 3; round++) {
        memset(host, 0, N * 4);
        CU_OK(cuGraphLaunch(e, s));
        CU_OK(cuStreamSynchronize(s));
        for (int i = 0; i < N; i++)
            assert_true(host[i] == 10.0f);
    }
    CU_OK(cuMemGetInfo(&f1, &total));
    assert_true(f0 - f1 >= N * 4 + 4096); /* o, and the graph keeps its memory reserved */
    assert_true(gmem(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT) >= N * 4);
    assert_int_equal(gmem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0); /* freed in the graph */
    assert_true(gmem(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) >= N * 4);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemFree(t)); /* not allocated now, and its graph frees it */
    CU_OK(cuDeviceGraphMemTrim(0));
    assert_int_equal(gmem(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT), 0);
    CU_OK(cuMemGetInfo(&f1, &total));
    assert_int_equal(f1, f0 - N * 4); /* only o */
    cuuint64_t zero = 0, five = 5;
    CU_IS(CUDA_ERROR_INVALID_VALUE,
          cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &five));
    CU_OK(cuDeviceSetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &zero));
    assert_int_equal(gmem(CU_GRAPH_MEM_ATTR_USED_MEM_HIGH), 0);
    CU_OK(cuGraphLaunch(e, s)); /* launching backs it again */
    CU_OK(cuStreamSynchronize(s));
    assert_true(host[3] == 10.0f);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));

    /* Explicit nodes; the allocation outlives the graph's run. */
    CUgraph g2;
    CUgraphNode an, sn;
    CU_OK(cuGraphCreate(&g2, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS ap = {.poolProps = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                                                   .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}},
                                     .bytesize = 4096};
    CU_OK(cuGraphAddMemAllocNode(&an, g2, NULL, 0, &ap));
    assert_true(ap.dptr != 0);
    CUDA_MEMSET_NODE_PARAMS ms = {ap.dptr, 0, 0xAB, 1, 4096, 1};
    CU_OK(cuGraphAddMemsetNode(&sn, g2, &an, 1, &ms, ctx));
    CUDA_MEM_ALLOC_NODE_PARAMS back;
    CU_OK(cuGraphMemAllocNodeGetParams(an, &back));
    assert_true(back.dptr == ap.dptr && back.bytesize == 4096);
    CU_OK(cuGraphInstantiate(&e, g2, 0));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    unsigned char byte = 0;
    CU_OK(cuMemcpyDtoH(&byte, ap.dptr + 4000, 1)); /* usable after the graph */
    assert_int_equal(byte, 0xAB);
    assert_true(gmem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) >= 4096);
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGraphLaunch(e, s)); /* still allocated */
    CU_OK(cuMemFreeAsync(ap.dptr, s));
    CU_OK(cuStreamSynchronize(s));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH(&byte, ap.dptr, 1));
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(e));
    CUDA_GRAPH_INSTANTIATE_PARAMS ip = {.flags = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH};
    CU_OK(cuGraphInstantiateWithParams(&e, g2, &ip));
    assert_int_equal(ip.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    CU_OK(cuGraphLaunch(e, s)); /* the previous allocation is freed first */
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemFree(ap.dptr));
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g2));

    /* Graph memory counts against the device: too big to back -> out of memory at launch. */
    CUgraph g3;
    CUgraphNode big;
    CU_OK(cuGraphCreate(&g3, 0));
    ap.bytesize = total; /* the whole device, while o is allocated */
    CU_OK(cuGraphAddMemAllocNode(&big, g3, NULL, 0, &ap));
    CUgraphNode fr;
    CU_OK(cuGraphAddMemFreeNode(&fr, g3, &big, 1, ap.dptr));
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGraphAddMemFreeNode(&fr, g3, &big, 1, ap.dptr)); /* twice */
    CU_IS(CUDA_ERROR_INVALID_VALUE, cuGraphAddMemFreeNode(&fr, g3, NULL, 0, o)); /* not a graph's */
    CU_OK(cuGraphInstantiate(&e, g3, 0));
    CU_IS(CUDA_ERROR_OUT_OF_MEMORY, cuGraphLaunch(e, s));
    CU_OK(cuMemFree(o));
    CU_OK(cuGraphLaunch(e, s)); /* now it fits */
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g3));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFreeHost(host));
}

static _Atomic int gate_open;
static void CUDA_CB gate(void *arg)
{
    (void)arg;
    while (!atomic_load(&gate_open))
        usleep(1000);
}

/* A graph whose free node frees what its allocation node allocates may be relaunched before
 * its previous launch has run: launches of one executable graph run one after the other, so
 * the previous launch's free comes first (the driver serialises them; only an allocation the
 * graph leaves allocated blocks a relaunch). */
static void
relaunching_a_graph_that_frees_its_memory_queues_behind_the_previous_launch(void **state)
{
    (void)state;
    CUstream s;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    float *host;
    CU_OK(cuMemAllocHost((void **)&host, N * 4));
    CUdeviceptr t, o;
    CU_OK(cuMemAlloc(&o, N * 4));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemAllocAsync(&t, N * 4, s));
    CU_OK(cuMemsetD32Async(t, 0x40400000u, N, s)); /* 3 */
    CU_OK(launch_add(s, t, o, o, N));              /* o += 3 */
    CU_OK(cuMemFreeAsync(t, s));
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    CUgraphExec e;
    CU_OK(cuGraphInstantiate(&e, g, 0));
    CU_OK(cuMemsetD32(o, 0, N));
    /* Nothing on S runs until the gate opens: every launch is queued behind the first. */
    atomic_store(&gate_open, 0);
    CU_OK(cuLaunchHostFunc(s, gate, NULL));
    for (int i = 0; i < 5; i++)
        CU_OK(cuGraphLaunch(e, s));
    atomic_store(&gate_open, 1);
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemcpyDtoH(host, o, N * 4));
    for (int i = 0; i < N; i++)
        assert_true(host[i] == 15.0f);
    assert_int_equal(gmem(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT), 0);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuMemFree(o));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFreeHost(host));
    CU_OK(cuDeviceGraphMemTrim(0));
}

static void *proc(const char *name, int version, int per_thread)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    CU_OK(cuGetProcAddress(name, &fn, version,
                           per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, &st));
    assert_non_null(fn);
    return fn;
}

/* What a CUDA 11 / 12.1 runtime resolves (cuGetProcAddress at its own version) works. */
static void older_runtimes_get_the_older_abis(void **state)
{
    /* The older signatures (cuda.h declares them only for the driver's own build). */
    CUresult (*begin1)(CUstream) = proc("cuStreamBeginCapture", 10000, 0);
    CUresult (*info2)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                      const CUgraphNode **, size_t *) = proc("cuStreamGetCaptureInfo", 12010, 0);
    CUresult (*info1)(CUstream, CUstreamCaptureStatus *, cuuint64_t *) =
        proc("cuStreamGetCaptureInfo", 11000, 0);
    CUresult (*upd1)(CUstream, CUgraphNode *, size_t, unsigned) =
        proc("cuStreamUpdateCaptureDependencies", 12010, 0);
    CUresult (*addk1)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                      const CUDA_KERNEL_NODE_PARAMS_v1 *) = proc("cuGraphAddKernelNode", 11080, 0);
    CUresult (*getk1)(CUgraphNode, CUDA_KERNEL_NODE_PARAMS_v1 *) =
        proc("cuGraphKernelNodeGetParams", 11080, 0);
    CUresult (*edges1)(CUgraph, CUgraphNode *, CUgraphNode *, size_t *) =
        proc("cuGraphGetEdges", 12010, 0);
    CUresult (*upd_exec1)(CUgraphExec, CUgraph, CUgraphNode *, CUgraphExecUpdateResult *) =
        proc("cuGraphExecUpdate", 11080, 0);
    CUresult (*inst2)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t) =
        proc("cuGraphInstantiate", 11080, 0);
    CUresult (*addnode1)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraphNodeParams *) =
        proc("cuGraphAddNode", 12020, 0);
    CUresult (*info2pt)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                        const CUgraphNode **, size_t *) = proc("cuStreamGetCaptureInfo", 12010, 1);
    CUstream s;
    CUdeviceptr a, c;
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemAlloc(&a, N * 4));
    CU_OK(cuMemAlloc(&c, N * 4));
    CU_OK(cuMemsetD32(a, 0x3FC00000u, N)); /* 1.5 */
    CU_OK(begin1(s));
    CU_OK(cuMemsetD32Async(c, 0, N, s));
    CUstreamCaptureStatus st;
    cuuint64_t id1 = 0, id2 = 0;
    CUgraph cg;
    const CUgraphNode *deps;
    size_t nd = 0;
    CU_OK(info1(s, &st, &id1));
    CU_OK(info2(s, &st, &id2, &cg, &deps, &nd));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_true(id1 == id2 && nd == 1);
    CU_OK(upd1(s, NULL, 0, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    CUgraph g;
    CU_OK(cuStreamEndCapture(s, &g));
    CU_OK(info2pt(CU_STREAM_PER_THREAD, &st, &id2, NULL, NULL, NULL));
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
    int n = N;
    void *args[] = {&a, &a, &c, &n};
    CUDA_KERNEL_NODE_PARAMS_v1 kp = {vecadd, (N + 127) / 128, 1, 1, 128, 1, 1, 0, args, NULL};
    CUgraphNode k, set;
    size_t nn = 1;
    CU_OK(cuGraphGetNodes(g, &set, &nn));
    CU_OK(addk1(&k, g, &set, 1, &kp));
    CUDA_KERNEL_NODE_PARAMS_v1 back;
    CU_OK(getk1(k, &back));
    assert_ptr_equal(back.func, vecadd);
    CUgraphNode from, to;
    size_t ne = 1;
    CU_OK(edges1(g, &from, &to, &ne));
    assert_int_equal(ne, 1);
    assert_ptr_equal(from, set);
    CUgraphNodeParams np = {.type = CU_GRAPH_NODE_TYPE_EMPTY};
    CUgraphNode empty;
    CU_OK(addnode1(&empty, g, &k, 1, &np));
    CUgraphExec e;
    CUgraphNode err = (CUgraphNode)&e;
    char log[64] = "x";
    CU_OK(inst2(&e, g, &err, log, sizeof(log)));
    assert_null(err);
    assert_string_equal(log, "");
    CUgraphExecUpdateResult why;
    CU_OK(upd_exec1(e, g, &err, &why));
    assert_int_equal(why, CU_GRAPH_EXEC_UPDATE_SUCCESS);
    CU_OK(cuGraphLaunch(e, s));
    CU_OK(cuStreamSynchronize(s));
    float out[N];
    CU_OK(cuMemcpyDtoH(out, c, sizeof(out)));
    assert_true(out[0] == 3.0f && out[N - 1] == 3.0f);
    CU_OK(cuGraphExecDestroy(e));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFree(a));
    CU_OK(cuMemFree(c));
}

static int setup(void **state)
{
    char *ptx = simtest_slurp(ptx_path);
    CU_OK(cuInit(0));
    CU_OK(cuCtxCreate(&ctx, NULL, 0, 0));
    CU_OK(cuModuleLoadData(&mod, ptx));
    CU_OK(cuModuleGetFunction(&vecadd, mod, "vecadd"));
    CU_OK(cuModuleGetFunction(&saxpy, mod, "saxpy"));
    free(ptx);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s vecadd.ptx\n", argv[0]);
        return 2;
    }
    ptx_path = argv[1];
    simtest_env("L4:64Mi");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_captured_sequence_replays_exactly_every_time),
        cmocka_unit_test(forked_streams_must_join_the_origin),
        cmocka_unit_test(capture_rules_fail_and_invalidate_as_on_hardware),
        cmocka_unit_test(an_explicit_graph_runs_every_node_kind),
        cmocka_unit_test(executable_graphs_take_updates),
        cmocka_unit_test(graph_memory_lives_between_its_alloc_and_free_nodes),
        cmocka_unit_test(
            relaunching_a_graph_that_frees_its_memory_queues_behind_the_previous_launch),
        cmocka_unit_test(older_runtimes_get_the_older_abis),
    };
    int rc = cmocka_run_group_tests(tests, setup, NULL);
    simtest_cleanup();
    return rc;
}
