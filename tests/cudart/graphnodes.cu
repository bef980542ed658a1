// SPDX-License-Identifier: Apache-2.0
// A CUDA graph built node by node through the runtime (no capture): two memset nodes fill
// the inputs, a kernel node adds them, a 1D device-to-device memcpy node copies the sum (its
// dependency added afterwards with cudaGraphAddDependencies), an empty node joins, a second
// kernel node scales and accumulates. Instantiated once, launched many times back to back on
// a stream and checked bit for bit; then built again with another scale and replayed. Runs on
// the simulated GPU and through the remote client (libtf_client -> tf-worker) alike.
#include "check.h"

__global__ void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

__global__ void axpy(int n, float alpha, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = alpha * x[i] + y[i];
}

static unsigned bits(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

// Builds the graph (see the header) writing T = ALPHA * (A + B) + T, with A = 1.5, B = 2.25.
static cudaGraph_t build(float *a, float *b, float *c, float *t, int n, float *alpha)
{
    cudaGraph_t g;
    CK(cudaGraphCreate(&g, 0));
    cudaGraphNode_t ma, mb, k, cp, e, sx;
    cudaMemsetParams ms = {};
    ms.dst = a;
    ms.value = bits(1.5f);
    ms.elementSize = 4;
    ms.width = n;
    ms.height = 1;
    CK(cudaGraphAddMemsetNode(&ma, g, NULL, 0, &ms));
    ms.dst = b;
    ms.value = bits(2.25f);
    CK(cudaGraphAddMemsetNode(&mb, g, NULL, 0, &ms));
    void *kp[] = {&a, &b, &c, &n};
    cudaKernelNodeParams kn = {};
    kn.func = (void *)add;
    kn.gridDim = dim3((n + 255) / 256);
    kn.blockDim = dim3(256);
    kn.kernelParams = kp;
    cudaGraphNode_t ab[2] = {ma, mb};
    CK(cudaGraphAddKernelNode(&k, g, ab, 2, &kn));
    CK(cudaGraphAddMemcpyNode1D(&cp, g, NULL, 0, t, c, n * sizeof(float),
                                cudaMemcpyDeviceToDevice));
    CK(cudaGraphAddDependencies(g, &k, &cp, NULL, 1)); // the edge after the fact
    CK(cudaGraphAddEmptyNode(&e, g, &cp, 1));
    void *ap[] = {&n, alpha, &c, &t};
    kn.func = (void *)axpy;
    kn.kernelParams = ap;
    CK(cudaGraphAddKernelNode(&sx, g, &e, 1, &kn));
    return g;
}

int main()
{
    prog = "graphnodes";
    const int n = 50001, launches = 20;
    size_t bytes = n * sizeof(float);
    float *a, *b, *c, *t, *h;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMalloc(&c, bytes));
    CK(cudaMalloc(&t, bytes));
    h = (float *)malloc(bytes);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const float scales[2] = {3.0f, 0.5f};
    for (int round = 0; round < 2; round++) {
        float alpha = scales[round];
        cudaGraph_t g = build(a, b, c, t, n, &alpha);
        cudaGraphExec_t ge;
        CK(cudaGraphInstantiate(&ge, g, 0));
        for (int i = 0; i < launches; i++)
            CK(cudaGraphLaunch(ge, s));
        CK(cudaStreamSynchronize(s));
        CK(cudaMemcpy(h, t, bytes, cudaMemcpyDeviceToHost));
        // Each launch: t = c, then t = alpha * c + t = (alpha + 1) * 3.75.
        float want = alpha * 3.75f + 3.75f;
        for (int i = 0; i < n; i++)
            if (!same_bits(h[i], want))
                mismatch("round %d: t[%d] = %a, want %a", round, i, (double)h[i], (double)want);
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
    }
    CK(cudaStreamDestroy(s));
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(c));
    CK(cudaFree(t));
    free(h);
    pass("n=%d launches=%d x 2 graphs, 6 nodes each, bit-exact", n, launches);
    return 0;
}
