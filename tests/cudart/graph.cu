// SPDX-License-Identifier: Apache-2.0
// A captured CUDA graph replayed through the runtime. Captured on a stream and forked to a
// second one through events: a cudaMallocAsync scratch buffer (a graph memory node), copies in
// from page-locked memory, c = a + b on one branch and y = 2a + y on the other (<<<>>>
// launches), c += y after the join, a memset, the copy out, a host function, cudaFreeAsync.
// Instantiated once and launched many times with new inputs, every result checked bit for
// bit. A second, small graph is updated with cudaGraphExecUpdate from a recapture of the same
// shape and replayed.
// Also: cudaStreamSynchronize during a capture fails with cudaErrorStreamCaptureUnsupported
// and invalidates it, and cudaStreamEndCapture then returns cudaErrorStreamCaptureInvalidated.
#include "check.h"

#include <cmath>

__global__ void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

__global__ void axpy(float alpha, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = alpha * x[i] + y[i];
}

static int host_calls;
static void CUDART_CB count(void *arg)
{
    (*(int *)arg)++;
}

struct bufs {
    float *a, *b, *c, *y;    // page-locked host
    float *da, *db, *dc, *z; // device (z: zeroed scratch, unused but written)
};

static cudaGraph_t capture(cudaStream_t s1, cudaStream_t s2, cudaEvent_t fork, cudaEvent_t join,
                           const bufs &m, int n, float alpha)
{
    size_t bytes = n * sizeof(float);
    unsigned grid = (n + 255) / 256;
    float *dy;
    CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    CK(cudaMallocAsync(&dy, bytes, s1));
    CK(cudaMemcpyAsync(m.da, m.a, bytes, cudaMemcpyHostToDevice, s1));
    CK(cudaEventRecord(fork, s1));
    CK(cudaStreamWaitEvent(s2, fork, 0));
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    unsigned long long id1 = 0, id2 = 0;
    CK(cudaStreamGetCaptureInfo(s1, &cs, &id1));
    CK(cudaStreamGetCaptureInfo(s2, &cs, &id2));
    if (cs != cudaStreamCaptureStatusActive || id1 != id2)
        mismatch("the forked stream is not in the capture (status %d, ids %llu, %llu)", (int)cs,
                 id1, id2);
    CK(cudaMemcpyAsync(dy, m.y, bytes, cudaMemcpyHostToDevice, s2));
    axpy<<<grid, 256, 0, s2>>>(alpha, m.da, dy, n);
    CK(cudaEventRecord(join, s2));
    CK(cudaMemcpyAsync(m.db, m.b, bytes, cudaMemcpyHostToDevice, s1));
    add<<<grid, 256, 0, s1>>>(m.da, m.db, m.dc, n);
    CK(cudaMemsetAsync(m.z, 0, bytes, s1));
    CK(cudaStreamWaitEvent(s1, join, 0));
    add<<<grid, 256, 0, s1>>>(m.dc, dy, m.dc, n);
    CK(cudaMemcpyAsync(m.c, m.dc, bytes, cudaMemcpyDeviceToHost, s1));
    CK(cudaLaunchHostFunc(s1, count, &host_calls));
    CK(cudaFreeAsync(dy, s1));
    cudaGraph_t g;
    CK(cudaStreamEndCapture(s1, &g));
    return g;
}

static void check(const bufs &m, int n, float alpha, const char *what)
{
    for (int i = 0; i < n; i++) {
        float want = (m.a[i] + m.b[i]) + fmaf(alpha, m.a[i], m.y[i]);
        if (!same_bits(m.c[i], want))
            mismatch("%s: c[%d] = %a, want %a", what, i, (double)m.c[i], (double)want);
    }
}

static void fill(const bufs &m, int n, int r)
{
    for (int i = 0; i < n; i++) {
        m.a[i] = rndf() * (float)(r + 1);
        m.b[i] = rndf();
        m.y[i] = rndf() * 4.0f;
    }
}

int main()
{
    prog = "graph";
    const int n = 30001, rounds = 10;
    size_t bytes = n * sizeof(float);
    bufs m;
    CK(cudaMallocHost(&m.a, bytes));
    CK(cudaMallocHost(&m.b, bytes));
    CK(cudaMallocHost(&m.c, bytes));
    CK(cudaMallocHost(&m.y, bytes));
    CK(cudaMalloc(&m.da, bytes));
    CK(cudaMalloc(&m.db, bytes));
    CK(cudaMalloc(&m.dc, bytes));
    CK(cudaMalloc(&m.z, bytes));
    cudaStream_t s1, s2;
    cudaEvent_t fork, join;
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));

    cudaGraph_t g = capture(s1, s2, fork, join, m, n, 2.0f);
    size_t nodes = 0;
    CK(cudaGraphGetNodes(g, NULL, &nodes));
    cudaGraphExec_t e;
    CK(cudaGraphInstantiate(&e, g, 0));
    for (int r = 0; r < rounds; r++) {
        fill(m, n, r);
        CK(cudaGraphLaunch(e, s1));
        CK(cudaStreamSynchronize(s1));
        check(m, n, 2.0f, "replay");
    }
    if (host_calls != rounds)
        mismatch("the host node ran %d times in %d launches", host_calls, rounds);

    // A small graph (no memory nodes) updated in place from a recapture of the same shape
    // with another alpha (cudaGraphExecUpdate), and replayed.
    cudaGraph_t k1, k2;
    cudaGraphExec_t ke;
    for (int v = 0; v < 2; v++) {
        CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
        axpy<<<(n + 255) / 256, 256, 0, s1>>>(v ? -0.5f : 2.0f, m.da, m.dc, n);
        CK(cudaStreamEndCapture(s1, v ? &k2 : &k1));
    }
    CK(cudaGraphInstantiate(&ke, k1, 0));
    cudaGraphExecUpdateResultInfo info;
    CK(cudaGraphExecUpdate(ke, k2, &info));
    fill(m, n, 99);
    CK(cudaMemcpy(m.da, m.a, bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(m.dc, m.y, bytes, cudaMemcpyHostToDevice));
    CK(cudaGraphLaunch(ke, s1));
    CK(cudaMemcpyAsync(m.c, m.dc, bytes, cudaMemcpyDeviceToHost, s1));
    CK(cudaStreamSynchronize(s1));
    for (int i = 0; i < n; i++)
        if (!same_bits(m.c[i], fmaf(-0.5f, m.a[i], m.y[i])))
            mismatch("updated: c[%d] = %a", i, (double)m.c[i]);
    CK(cudaGraphExecDestroy(ke));
    CK(cudaGraphDestroy(k1));
    CK(cudaGraphDestroy(k2));

    // A capture broken by a synchronize.
    CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    add<<<1, 32, 0, s1>>>(m.da, m.db, m.dc, 32);
    EXPECT_ERR(cudaStreamSynchronize(s1), cudaErrorStreamCaptureUnsupported);
    cudaGraph_t bad = NULL;
    EXPECT_ERR(cudaStreamEndCapture(s1, &bad), cudaErrorStreamCaptureInvalidated);
    cudaGetLastError();
    if (bad)
        mismatch("an invalidated capture returned a graph");

    CK(cudaGraphExecDestroy(e));
    CK(cudaGraphDestroy(g));
    CK(cudaEventDestroy(fork));
    CK(cudaEventDestroy(join));
    CK(cudaStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    CK(cudaFree(m.da));
    CK(cudaFree(m.db));
    CK(cudaFree(m.dc));
    CK(cudaFree(m.z));
    CK(cudaFreeHost(m.a));
    CK(cudaFreeHost(m.b));
    CK(cudaFreeHost(m.c));
    CK(cudaFreeHost(m.y));
    pass("n=%d nodes=%zu launches=%d bit-exact", n, nodes, rounds + 1);
    return 0;
}
