/* SPDX-License-Identifier: Apache-2.0
 *
 * A captured CUDA graph replayed (kernels/vecadd.cu: vecadd, saxpy). Captured on a stream,
 * forked to a second stream and joined back through events: a stream-ordered scratch
 * allocation (a graph memory node), copies in from page-locked memory, c = a + b on one
 * branch, y = 2 * a + y on the other, c += y after the join, the copy out, a host function
 * and the free. The graph is instantiated once and launched ROUNDS times with new inputs each
 * time, every result checked bit for bit (nvcc contracts saxpy into an fma). Then the
 * executable graph is updated in place (the kernel node's arguments) and replayed again.
 * Usage: graph vecadd.ptx [N] [ROUNDS]
 */
#include "hostcommon.h"

#include <math.h>

static int calls;
static void CUDA_CB count(void *arg)
{
    (*(int *)arg)++;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod = host_setup("graph", argc, argv, &dev);
    int n = (int)host_arg(argc, argv, 2, 30001);
    int rounds = (int)host_arg(argc, argv, 3, 6);
    size_t bytes = (size_t)n * sizeof(float);
    CUfunction add, axpy;
    CK(cuModuleGetFunction(&add, mod, "vecadd"));
    CK(cuModuleGetFunction(&axpy, mod, "saxpy"));
    float *a, *b, *c, *y;
    CK(cuMemAllocHost((void **)&a, bytes));
    CK(cuMemAllocHost((void **)&b, bytes));
    CK(cuMemAllocHost((void **)&c, bytes));
    CK(cuMemAllocHost((void **)&y, bytes));
    CUdeviceptr da, db, dc, dy;
    CK(cuMemAlloc(&da, bytes));
    CK(cuMemAlloc(&db, bytes));
    CK(cuMemAlloc(&dc, bytes));
    CUstream s1, s2;
    CUevent fork, join;
    CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    CK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    unsigned block = 256, grid = ((unsigned)n + block - 1) / block;
    float alpha = 2.0f;

    CK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CK(cuMemAllocAsync(&dy, bytes, s1));
    CK(cuMemcpyHtoDAsync(da, a, bytes, s1));
    CK(cuEventRecord(fork, s1));
    CK(cuStreamWaitEvent(s2, fork, 0));
    CK(cuMemcpyHtoDAsync(dy, y, bytes, s2));
    void *pa[] = {&n, &alpha, &da, &dy};
    CK(cuLaunchKernel(axpy, grid, 1, 1, block, 1, 1, 0, s2, pa, NULL));
    CK(cuEventRecord(join, s2));
    CK(cuMemcpyHtoDAsync(db, b, bytes, s1));
    void *pb[] = {&da, &db, &dc, &n};
    CK(cuLaunchKernel(add, grid, 1, 1, block, 1, 1, 0, s1, pb, NULL));
    CK(cuStreamWaitEvent(s1, join, 0));
    void *pc[] = {&dc, &dy, &dc, &n};
    CK(cuLaunchKernel(add, grid, 1, 1, block, 1, 1, 0, s1, pc, NULL));
    CK(cuMemcpyDtoHAsync(c, dc, bytes, s1));
    CK(cuLaunchHostFunc(s1, count, &calls));
    CK(cuMemFreeAsync(dy, s1));
    CUgraph g;
    CK(cuStreamEndCapture(s1, &g));
    size_t nodes = 0;
    CK(cuGraphGetNodes(g, NULL, &nodes));
    CUgraphExec e;
    CK(cuGraphInstantiate(&e, g, 0));

    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) {
            a[i] = host_randf() * (float)(r + 1);
            b[i] = host_randf();
            y[i] = host_randf() * 4.0f;
        }
        CK(cuGraphLaunch(e, s1));
        CK(cuStreamSynchronize(s1));
        for (int i = 0; i < n; i++) {
            float want = (a[i] + b[i]) + fmaf(alpha, a[i], y[i]);
            if (host_bits(c[i]) != host_bits(want))
                host_mismatch("round %d: c[%d] = %a, want %a", r, i, (double)c[i], (double)want);
        }
    }
    if (calls != rounds)
        host_mismatch("host node ran %d times in %d launches", calls, rounds);

    /* Update the executable graph in place: the first add now computes a + a. */
    CUgraphNode all[32];
    size_t na = 32;
    CK(cuGraphGetNodes(g, all, &na));
    CUgraphNode first_add = NULL;
    for (size_t i = 0; i < na && !first_add; i++) {
        CUgraphNodeType t;
        CUDA_KERNEL_NODE_PARAMS kp;
        CK(cuGraphNodeGetType(all[i], &t));
        if (t != CU_GRAPH_NODE_TYPE_KERNEL)
            continue;
        CK(cuGraphKernelNodeGetParams(all[i], &kp));
        if (kp.func == add && *(CUdeviceptr *)kp.kernelParams[1] == db)
            first_add = all[i];
    }
    if (!first_add)
        host_mismatch("the captured graph has no a + b kernel node");
    CUDA_KERNEL_NODE_PARAMS kp;
    CK(cuGraphKernelNodeGetParams(first_add, &kp));
    void *pd[] = {&da, &da, &dc, &n};
    kp.kernelParams = pd;
    CK(cuGraphExecKernelNodeSetParams(e, first_add, &kp));
    CK(cuGraphLaunch(e, s1));
    CK(cuStreamSynchronize(s1));
    for (int i = 0; i < n; i++) {
        float want = (a[i] + a[i]) + fmaf(alpha, a[i], y[i]);
        if (host_bits(c[i]) != host_bits(want))
            host_mismatch("updated: c[%d] = %a, want %a", i, (double)c[i], (double)want);
    }

    CK(cuGraphExecDestroy(e));
    CK(cuGraphDestroy(g));
    CK(cuEventDestroy(fork));
    CK(cuEventDestroy(join));
    CK(cuStreamDestroy(s1));
    CK(cuStreamDestroy(s2));
    CK(cuMemFree(da));
    CK(cuMemFree(db));
    CK(cuMemFree(dc));
    CK(cuMemFreeHost(a));
    CK(cuMemFreeHost(b));
    CK(cuMemFreeHost(c));
    CK(cuMemFreeHost(y));
    host_teardown(mod, dev);
    printf("graph: PASS n=%d nodes=%zu launches=%d bit-exact\n", n, nodes, rounds + 1);
    return 0;
}
