/* SPDX-License-Identifier: Apache-2.0
 *
 * Real kernels through libtf_client -> tf-worker -> simulated GPU: module loads and the
 * function cache (parameter layouts, attributes, names), the three ways to pass parameters
 * (kernelParams, extra, cuLaunchKernelEx), by-value struct parameters with padding, module
 * globals, opt-in shared memory, libraries and kernels, thousands of batched launches, JIT
 * error logs and unloading. Results are checked bit-exactly against the CPU.
 *
 * Arguments (from meson): the vecadd.ptx, driver.ptx and timer.ptx paths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <cuda.h>

#include "e2e_cuda.h"

static struct e2e_worker W;
static char *vecadd_ptx, *driver_ptx, *timer_ptx;

static int c_function_cache(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    CUmodule m;
    E2E_CU(cuModuleLoadData(&m, vecadd_ptx));
    CUfunction va, sx, again;
    E2E_CU(cuModuleGetFunction(&va, m, "vecadd"));
    E2E_CU(cuModuleGetFunction(&sx, m, "saxpy"));
    E2E_CU(cuModuleGetFunction(&again, m, "vecadd"));
    E2E_CHECK(va == again && va != sx);
    CUfunction none;
    E2E_CHECK_CU(cuModuleGetFunction(&none, m, "no_such_kernel"), CUDA_ERROR_NOT_FOUND,
                 "unknown kernel");
    size_t off, sz;
    size_t want[4][2] = {{0, 8}, {8, 8}, {16, 8}, {24, 4}}; /* a, b, c, n */
    for (int i = 0; i < 4; i++) {
        E2E_CU(cuFuncGetParamInfo(va, (size_t)i, &off, &sz));
        E2E_CHECK(off == want[i][0] && sz == want[i][1]);
    }
    E2E_CHECK_CU(cuFuncGetParamInfo(va, 4, &off, &sz), CUDA_ERROR_INVALID_VALUE, "param 4");
    int v = 0;
    E2E_CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, va));
    E2E_CHECK(v > 0);
    const char *name = NULL;
    E2E_CU(cuFuncGetName(&name, sx));
    E2E_CHECK(strcmp(name, "saxpy") == 0);
    E2E_CU(cuModuleUnload(m));
    int zero = 0;
    void *p[] = {&zero, &zero, &zero, &zero};
    E2E_CHECK_CU(cuLaunchKernel(va, 1, 1, 1, 1, 1, 1, 0, NULL, p, NULL), CUDA_ERROR_INVALID_HANDLE,
                 "function of an unloaded module");
    return 0;
}

static float frand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)(int)(*s >> 20) - 2048.0f; /* exact small integers */
}

static int c_launch_variants(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    CUmodule m;
    E2E_CU(cuModuleLoadData(&m, vecadd_ptx));
    CUfunction va, sx;
    E2E_CU(cuModuleGetFunction(&va, m, "vecadd"));
    E2E_CU(cuModuleGetFunction(&sx, m, "saxpy"));
    int n = 10007;
    size_t bytes = sizeof(float) * (size_t)n;
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    uint32_t seed = 5;
    for (int i = 0; i < n; i++) {
        a[i] = frand(&seed);
        b[i] = frand(&seed);
    }
    CUdeviceptr da, db, dc;
    E2E_CU(cuMemAlloc(&da, bytes));
    E2E_CU(cuMemAlloc(&db, bytes));
    E2E_CU(cuMemAlloc(&dc, bytes));
    E2E_CU(cuMemcpyHtoD(da, a, bytes));
    E2E_CU(cuMemcpyHtoD(db, b, bytes));
    /* kernelParams */
    void *p[] = {&da, &db, &dc, &n};
    E2E_CU(cuLaunchKernel(va, (unsigned)(n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, p, NULL));
    E2E_CU(cuMemcpyDtoH(c, dc, bytes));
    for (int i = 0; i < n; i++)
        E2E_CHECK(c[i] == a[i] + b[i]);
    /* extra: saxpy(int n, float alpha, const float *x, float *y), packed by hand */
    struct {
        int n;
        float alpha;
        CUdeviceptr x, y;
    } packed = {n, 3.0f, da, dc};
    size_t psize = sizeof(packed);
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &psize,
                     CU_LAUNCH_PARAM_END};
    E2E_CU(cuLaunchKernel(sx, 8, 1, 1, 128, 1, 1, 0, NULL, NULL, extra));
    E2E_CU(cuMemcpyDtoH(b, dc, bytes));
    for (int i = 0; i < n; i++)
        E2E_CHECK(b[i] == 3.0f * a[i] + c[i]);
    /* cuLaunchKernelEx on a stream */
    CUstream s;
    E2E_CU(cuStreamCreate(&s, 0));
    CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_PRIORITY};
    attr.value.priority = 0;
    CUlaunchConfig cfg = {.gridDimX = (unsigned)(n + 127) / 128,
                          .gridDimY = 1,
                          .gridDimZ = 1,
                          .blockDimX = 128,
                          .blockDimY = 1,
                          .blockDimZ = 1,
                          .hStream = s,
                          .attrs = &attr,
                          .numAttrs = 1};
    void *p2[] = {&da, &da, &dc, &n};
    E2E_CU(cuLaunchKernelEx(&cfg, va, p2, NULL));
    E2E_CU(cuMemcpyDtoHAsync(c, dc, bytes, s));
    E2E_CU(cuStreamSynchronize(s));
    for (int i = 0; i < n; i++)
        E2E_CHECK(c[i] == a[i] + a[i]);
    /* Misuse caught before anything is sent. */
    E2E_CHECK_CU(cuLaunchKernel(va, 0, 1, 1, 1, 1, 1, 0, NULL, p, NULL), CUDA_ERROR_INVALID_VALUE,
                 "empty grid");
    E2E_CHECK_CU(cuLaunchKernel(va, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                 CUDA_ERROR_INVALID_VALUE, "missing parameters");
    psize = 4;
    E2E_CHECK_CU(cuLaunchKernel(sx, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra),
                 CUDA_ERROR_INVALID_VALUE, "short extra buffer");
    E2E_CU(cuStreamDestroy(s));
    E2E_CU(cuModuleUnload(m));
    free(a);
    free(b);
    free(c);
    return 0;
}

static int c_batched_launches(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    CUmodule m;
    E2E_CU(cuModuleLoadData(&m, vecadd_ptx));
    CUfunction sx;
    E2E_CU(cuModuleGetFunction(&sx, m, "saxpy"));
    int n = 1000;
    float x[1000], y[1000], want[1000];
    for (int i = 0; i < n; i++) {
        x[i] = (float)(i % 13);
        y[i] = want[i] = (float)i;
    }
    CUdeviceptr dx, dy;
    E2E_CU(cuMemAlloc(&dx, sizeof(x)));
    E2E_CU(cuMemAlloc(&dy, sizeof(y)));
    E2E_CU(cuMemcpyHtoD(dx, x, sizeof(x)));
    E2E_CU(cuMemcpyHtoD(dy, y, sizeof(y)));
    /* 3000 fire-and-forget launches, alpha alternating: order matters for the result. */
    for (int k = 0; k < 3000; k++) {
        float alpha = (k % 3 == 0) ? 2.0f : -1.0f;
        void *p[] = {&n, &alpha, &dx, &dy};
        E2E_CU(cuLaunchKernel(sx, 4, 1, 1, 256, 1, 1, 0, NULL, p, NULL));
        for (int i = 0; i < n; i++)
            want[i] = alpha * x[i] + want[i];
    }
    E2E_CU(cuCtxSynchronize());
    E2E_CU(cuMemcpyDtoH(y, dy, sizeof(y)));
    for (int i = 0; i < n; i++)
        E2E_CHECK(y[i] == want[i]);
    return 0;
}

static int c_globals_structs_shared(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    CUmodule m;
    E2E_CU(cuModuleLoadData(&m, driver_ptx));
    CUfunction ug, bd, bs, sp;
    E2E_CU(cuModuleGetFunction(&ug, m, "use_globals"));
    E2E_CU(cuModuleGetFunction(&bd, m, "bounded"));
    E2E_CU(cuModuleGetFunction(&bs, m, "big_shared"));
    E2E_CU(cuModuleGetFunction(&sp, m, "struct_param"));
    /* Globals: write the __constant__ table, run, read the __device__ counter. */
    CUdeviceptr coeff, table, launches;
    size_t sz;
    E2E_CU(cuModuleGetGlobal(&coeff, &sz, m, "coeff"));
    E2E_CHECK(sz == 16);
    E2E_CU(cuModuleGetGlobal(&table, &sz, m, "table"));
    E2E_CU(cuModuleGetGlobal(&launches, &sz, m, "launches"));
    float cf[4] = {0.5f, 1.5f, -2.0f, 4.0f};
    E2E_CU(cuMemcpyHtoD(coeff, cf, sizeof(cf)));
    int tb[4];
    E2E_CU(cuMemcpyDtoH(tb, table, sizeof(tb)));
    E2E_CHECK(tb[0] == 10 && tb[3] == 40);
    CUdeviceptr out;
    E2E_CU(cuMemAlloc(&out, 1024));
    int n = 64;
    void *p[] = {&out, &n};
    E2E_CU(cuLaunchKernel(ug, 1, 1, 1, 64, 1, 1, 0, NULL, p, NULL));
    E2E_CU(cuLaunchKernel(ug, 1, 1, 1, 64, 1, 1, 0, NULL, p, NULL));
    float res[64];
    E2E_CU(cuMemcpyDtoH(res, out, sizeof(res)));
    for (int i = 0; i < 64; i++)
        E2E_CHECK(res[i] == cf[i & 3] * (float)tb[i & 3]);
    int count = 0;
    E2E_CU(cuMemcpyDtoH(&count, launches, sizeof(count)));
    E2E_CHECK(count == 2);
    /* Launch bounds come back as an attribute. */
    int maxt = 0;
    E2E_CU(cuFuncGetAttribute(&maxt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, bd));
    E2E_CHECK(maxt == 128);
    /* A by-value struct with padding, laid out as the worker's layout says. */
    size_t o0, s0, o1, s1;
    E2E_CU(cuFuncGetParamInfo(sp, 0, &o0, &s0));
    E2E_CU(cuFuncGetParamInfo(sp, 1, &o1, &s1));
    E2E_CHECK(o0 == 0 && s0 == 24 && o1 == 24 && s1 == 8);
    struct {
        char c;
        double d;
        int i;
    } mixed = {'x', 12345.0, -77};
    CUdeviceptr ll;
    E2E_CU(cuMemAlloc(&ll, 3 * sizeof(long long)));
    void *p2[] = {&mixed, &ll};
    E2E_CU(cuLaunchKernel(sp, 1, 1, 1, 32, 1, 1, 0, NULL, p2, NULL));
    long long got[3];
    E2E_CU(cuMemcpyDtoH(got, ll, sizeof(got)));
    E2E_CHECK(got[0] == 'x' && got[1] == 12345 && got[2] == -77);
    /* Opt-in dynamic shared memory above 48 KiB. */
    int words = 16384; /* 64 KiB */
    E2E_CU(cuFuncSetAttribute(bs, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536));
    int v = 0;
    E2E_CU(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bs));
    E2E_CHECK(v == 65536);
    E2E_CU(cuMemsetD32(out, 0, 1));
    void *p3[] = {&out, &words};
    E2E_CU(cuLaunchKernel(bs, 1, 1, 1, 256, 1, 1, 65536, NULL, p3, NULL));
    int acc = 0;
    E2E_CU(cuMemcpyDtoH(&acc, out, sizeof(acc)));
    E2E_CHECK(acc == 3 * (words - 1) * words / 2);
    E2E_CU(cuModuleUnload(m));
    E2E_CHECK_CU(cuMemcpyDtoH(&acc, launches, 4), CUDA_ERROR_INVALID_VALUE,
                 "global of an unloaded module");
    return 0;
}

static int c_libraries(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    CUlibrary lib;
    E2E_CU(cuLibraryLoadData(&lib, vecadd_ptx, NULL, NULL, 0, NULL, NULL, 0));
    CUkernel k;
    E2E_CU(cuLibraryGetKernel(&k, lib, "vecadd"));
    size_t off, sz;
    E2E_CU(cuKernelGetParamInfo(k, 3, &off, &sz));
    E2E_CHECK(off == 24 && sz == 4);
    CUfunction f, f2;
    E2E_CU(cuKernelGetFunction(&f, k));
    E2E_CU(cuKernelGetFunction(&f2, k));
    E2E_CHECK(f == f2);
    int n = 300;
    float a[300], c[300];
    for (int i = 0; i < n; i++)
        a[i] = (float)i;
    CUdeviceptr da, dc;
    E2E_CU(cuMemAlloc(&da, sizeof(a)));
    E2E_CU(cuMemAlloc(&dc, sizeof(c)));
    E2E_CU(cuMemcpyHtoD(da, a, sizeof(a)));
    void *p[] = {&da, &da, &dc, &n};
    E2E_CU(cuLaunchKernel(f, 2, 1, 1, 256, 1, 1, 0, NULL, p, NULL));
    E2E_CU(cuMemcpyDtoH(c, dc, sizeof(c)));
    for (int i = 0; i < n; i++)
        E2E_CHECK(c[i] == 2.0f * a[i]);
    /* A CUkernel is accepted where a CUfunction is expected. */
    E2E_CU(cuMemsetD32(dc, 0, (size_t)n));
    E2E_CU(cuLaunchKernel((CUfunction)k, 2, 1, 1, 256, 1, 1, 0, NULL, p, NULL));
    E2E_CU(cuMemcpyDtoH(c, dc, sizeof(c)));
    for (int i = 0; i < n; i++)
        E2E_CHECK(c[i] == 2.0f * a[i]);
    E2E_CU(cuLibraryUnload(lib));
    E2E_CHECK_CU(cuKernelGetFunction(&f, k), CUDA_ERROR_INVALID_HANDLE, "unloaded library");
    return 0;
}

static int c_jit_error(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    const char *bad = ".version 8.0\n.target sm_80\n.address_size 64\n"
                      ".visible .entry k()\n{\n\tfrobnicate.b32 %r1, 7;\n\tret;\n}\n";
    char log[1024] = "";
    CUjit_option opt[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[2] = {log, (void *)(uintptr_t)sizeof(log)};
    CUmodule m;
    CUresult r = cuModuleLoadDataEx(&m, bad, 2, opt, val);
    E2E_CHECK(r != CUDA_SUCCESS);
    E2E_CHECK(strstr(log, "frobnicate") != NULL);
    /* Images the client cannot size are refused before anything is sent: an empty string in
     * a one-byte allocation (no magic may be read past it) and a fatbin wrapper record that
     * points to itself (it was followed without end). */
    char *empty = calloc(1, 1);
    E2E_CHECK(cuModuleLoadData(&m, empty) != CUDA_SUCCESS);
    free(empty);
    struct {
        uint32_t magic, version;
        const void *data, *unused;
    } wrap = {0x466243b1u, 1, NULL, NULL};
    wrap.data = &wrap;
    E2E_CHECK_CU(cuModuleLoadData(&m, &wrap), CUDA_ERROR_INVALID_IMAGE, "self-wrapper");
    /* The connection is fine afterwards. */
    E2E_CU(cuModuleLoadData(&m, vecadd_ptx));
    E2E_CU(cuModuleUnload(m));
    return 0;
}

/* A 100 ms kernel launched, then no call for 400 ms: with the background flush (default)
 * the kernel has run by then; with TF_REMOTE_FLUSH_US=0 it leaves only with the next call. */
static int c_flush(void *arg)
{
    int pump = arg != NULL;
    if (!pump)
        setenv("TF_REMOTE_FLUSH_US", "0", 1);
    if (e2e_ctx())
        return 1;
    CUfunction f;
    CUdeviceptr done;
    if (e2e_spin_kernel(timer_ptx, &f, &done))
        return 1;
    CUstream s;
    E2E_CU(cuStreamCreate(&s, 0));
    E2E_CU(cuStreamSynchronize(s));
    unsigned long long ns = 100 * 1000 * 1000;
    void *p[] = {&ns, &done};
    E2E_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, p, NULL));
    struct timespec d = {0, 400 * 1000 * 1000};
    nanosleep(&d, NULL);
    E2E_CHECK_CU(cuStreamQuery(s), pump ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY,
                 "query after the pause");
    E2E_CU(cuStreamSynchronize(s));
    unsigned long long n = 0;
    E2E_CU(cuMemcpyDtoH(&n, done, 8));
    E2E_CHECK(n == 1);
    return 0;
}

/* Graphs are captured on the worker: device-side work captured into a graph replays
 * exactly; a copy from this process's memory is a host step of the capture (api_capture.c),
 * which reads the memory anew at each launch rather than replaying stale bytes. */
static int c_graphs(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    enum { N = 4096 };
    static uint32_t h[N];
    CUstream st;
    E2E_CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    CUdeviceptr d;
    E2E_CU(cuMemAlloc(&d, N * 4));
    E2E_CU(cuMemsetD32(d, 0, N));
    CUgraph g;
    CUgraphExec ge;
    E2E_CU(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_RELAXED));
    E2E_CU(cuMemsetD32Async(d, 0x5a5a5a5a, N / 2, st));
    E2E_CU(cuStreamEndCapture(st, &g));
    E2E_CU(cuMemsetD32(d, 7, N));
    E2E_CU(cuGraphInstantiateWithFlags(&ge, g, 0));
    for (int i = 0; i < 3; i++)
        E2E_CU(cuGraphLaunch(ge, st));
    E2E_CU(cuStreamSynchronize(st));
    E2E_CU(cuMemcpyDtoH(h, d, sizeof(h)));
    for (int i = 0; i < N; i++)
        E2E_CHECK(h[i] == (i < N / 2 ? 0x5a5a5a5au : 7u));
    E2E_CU(cuGraphExecDestroy(ge));
    E2E_CU(cuGraphDestroy(g));
    /* a host-to-device copy inside a capture: a host step, reading H at each launch */
    E2E_CU(cuStreamBeginCapture(st, CU_STREAM_CAPTURE_MODE_RELAXED));
    E2E_CU(cuMemcpyHtoDAsync(d, h, sizeof(h), st));
    E2E_CU(cuStreamEndCapture(st, &g));
    E2E_CU(cuGraphInstantiateWithFlags(&ge, g, 0));
    static uint32_t back[N];
    for (uint32_t k = 0; k < 2; k++) {
        for (int i = 0; i < N; i++)
            h[i] = (uint32_t)i + k;
        E2E_CU(cuGraphLaunch(ge, st));
        E2E_CU(cuStreamSynchronize(st));
        E2E_CU(cuMemcpyDtoH(back, d, sizeof(back)));
        for (int i = 0; i < N; i++)
            E2E_CHECK(back[i] == (uint32_t)i + k);
    }
    E2E_CU(cuGraphExecDestroy(ge));
    E2E_CU(cuGraphDestroy(g));
    /* the stream and context stay usable */
    E2E_CU(cuMemsetD32Async(d, 9, N, st));
    E2E_CU(cuStreamSynchronize(st));
    E2E_CU(cuMemcpyDtoH(h, d, 4));
    E2E_CHECK(h[0] == 9);
    E2E_CU(cuMemFree(d));
    E2E_CU(cuStreamDestroy(st));
    return 0;
}

/* Graphs built node by node are forwarded: memsets, a device-to-device copy, an empty node
 * and kernels (parameters packed by the cached layout) with their dependencies replay
 * exactly, launched back to back; nodes the worker's GPU cannot run (host functions, copies
 * from this process's memory) are refused at the call, bad dependencies too. */
static int c_explicit_graphs(void *arg)
{
    (void)arg;
    if (e2e_ctx())
        return 1;
    enum { N = 3000 };
    static float h[N];
    CUmodule m;
    CUfunction add, saxpy;
    E2E_CU(cuModuleLoadData(&m, vecadd_ptx));
    E2E_CU(cuModuleGetFunction(&add, m, "vecadd"));
    E2E_CU(cuModuleGetFunction(&saxpy, m, "saxpy"));
    CUdeviceptr a, b, c, t;
    E2E_CU(cuMemAlloc(&a, N * 4));
    E2E_CU(cuMemAlloc(&b, N * 4));
    E2E_CU(cuMemAlloc(&c, N * 4));
    E2E_CU(cuMemAlloc(&t, N * 4));
    CUcontext ctx;
    E2E_CU(cuCtxGetCurrent(&ctx));
    CUgraph g, other;
    E2E_CU(cuGraphCreate(&g, 0));
    E2E_CU(cuGraphCreate(&other, 0));
    CUgraphNode ma, mb, k, cp, e, sx, stray, none;
    CUDA_MEMSET_NODE_PARAMS ms = {
        .dst = a, .value = 0x3f800000u, .elementSize = 4, .width = N, .height = 1}; /* 1.0f */
    E2E_CU(cuGraphAddMemsetNode(&ma, g, NULL, 0, &ms, ctx));
    ms.dst = b;
    ms.value = 0x40000000u; /* 2.0f */
    E2E_CU(cuGraphAddMemsetNode(&mb, g, NULL, 0, &ms, ctx));
    int n = N;
    void *kp[] = {&a, &b, &c, &n};
    CUDA_KERNEL_NODE_PARAMS kn = {.func = add,
                                  .gridDimX = (N + 127) / 128,
                                  .gridDimY = 1,
                                  .gridDimZ = 1,
                                  .blockDimX = 128,
                                  .blockDimY = 1,
                                  .blockDimZ = 1,
                                  .kernelParams = kp};
    CUgraphNode ab[2] = {ma, mb};
    E2E_CU(cuGraphAddKernelNode(&k, g, ab, 2, &kn));
    CUDA_MEMCPY3D c3 = {.srcMemoryType = CU_MEMORYTYPE_DEVICE,
                        .srcDevice = c,
                        .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                        .dstDevice = t,
                        .WidthInBytes = N * 4,
                        .Height = 1,
                        .Depth = 1};
    E2E_CU(cuGraphAddMemcpyNode(&cp, g, &k, 1, &c3, ctx));
    E2E_CU(cuGraphAddEmptyNode(&e, g, &cp, 1));
    float alpha = 3.0f;
    void *sp[] = {&n, &alpha, &c, &t};
    kn.func = saxpy;
    kn.kernelParams = sp;
    E2E_CU(cuGraphAddKernelNode(&sx, g, &e, 1, &kn)); /* t = 3c + t */
    /* refused: host nodes, copies from host memory, dependencies of another graph, twice */
    CUDA_HOST_NODE_PARAMS hp = {0};
    CUresult(CUDAAPI * host_node)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                  const CUDA_HOST_NODE_PARAMS *) = NULL;
    E2E_CU(cuGetProcAddress("cuGraphAddHostNode", (void **)&host_node, 13000, 0, NULL));
    E2E_CHECK_CU(host_node(&none, g, NULL, 0, &hp), CUDA_ERROR_NOT_SUPPORTED, "host node");
    c3.srcMemoryType = CU_MEMORYTYPE_HOST;
    c3.srcHost = h;
    E2E_CHECK_CU(cuGraphAddMemcpyNode(&none, g, NULL, 0, &c3, ctx), CUDA_ERROR_NOT_SUPPORTED,
                 "copy from host memory");
    E2E_CU(cuGraphAddEmptyNode(&stray, other, NULL, 0));
    E2E_CHECK_CU(cuGraphAddEmptyNode(&none, g, &stray, 1), CUDA_ERROR_INVALID_VALUE,
                 "dependency in another graph");
    CUgraphNode twice[2] = {e, e};
    E2E_CHECK_CU(cuGraphAddEmptyNode(&none, g, twice, 2), CUDA_ERROR_INVALID_VALUE,
                 "dependency twice");
    ms.dst = 0x1000;
    E2E_CHECK_CU(cuGraphAddMemsetNode(&none, g, NULL, 0, &ms, ctx), CUDA_ERROR_INVALID_VALUE,
                 "memset of memory not ours");
    CUgraphExec ge;
    E2E_CU(cuGraphInstantiateWithFlags(&ge, g, 0));
    E2E_CU(cuMemsetD32(t, 0, N));
    for (int i = 0; i < 3; i++)
        E2E_CU(cuGraphLaunch(ge, NULL));
    E2E_CU(cuCtxSynchronize());
    E2E_CU(cuMemcpyDtoH(h, t, sizeof(h)));
    for (int i = 0; i < N; i++)
        E2E_CHECK(h[i] == 12.0f); /* t = c = 3, then 3 * 3 + 3 */
    E2E_CU(cuGraphExecDestroy(ge));
    E2E_CU(cuGraphDestroy(g));
    E2E_CHECK_CU(cuGraphAddEmptyNode(&none, other, &e, 1), CUDA_ERROR_INVALID_VALUE,
                 "a node of a destroyed graph");
    E2E_CU(cuGraphDestroy(other));
    E2E_CU(cuMemFree(a));
    E2E_CU(cuMemFree(b));
    E2E_CU(cuMemFree(c));
    E2E_CU(cuMemFree(t));
    E2E_CU(cuModuleUnload(m));
    return 0;
}

static void graphs_built_node_by_node_replay_exactly(void **state)
{
    (void)state;
    assert_int_equal(e2e_run(c_explicit_graphs, NULL, 60), 0);
}

static void captured_graphs_replay_host_copies_included(void **state)
{
    (void)state;
    assert_int_equal(e2e_run(c_graphs, NULL, 60), 0);
}

static void batched_work_leaves_within_the_flush_delay_without_a_sync(void **state)
{
    assert_int_equal(e2e_run(c_flush, (void *)1, 60), 0);
    assert_int_equal(e2e_run(c_flush, NULL, 60), 0);
}

static void module_loads_fill_the_function_cache(void **state)
{
    assert_int_equal(e2e_run(c_function_cache, NULL, 60), 0);
}

static void parameters_pass_by_pointer_array_buffer_and_launch_config(void **state)
{
    assert_int_equal(e2e_run(c_launch_variants, NULL, 120), 0);
}

static void thousands_of_batched_launches_run_in_order(void **state)
{
    assert_int_equal(e2e_run(c_batched_launches, NULL, 120), 0);
}

static void globals_struct_parameters_and_opt_in_shared_memory_work(void **state)
{
    assert_int_equal(e2e_run(c_globals_structs_shared, NULL, 120), 0);
}

static void libraries_and_kernels_work_remotely(void **state)
{
    assert_int_equal(e2e_run(c_libraries, NULL, 60), 0);
}

static void jit_errors_come_back_with_their_log(void **state)
{
    assert_int_equal(e2e_run(c_jit_error, NULL, 60), 0);
}

static int setup(void **state)
{
    (void)state;
    e2e_start(&W, 0, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    e2e_stop(&W);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4 || !(vecadd_ptx = e2e_slurp(argv[1])) || !(driver_ptx = e2e_slurp(argv[2])) ||
        !(timer_ptx = e2e_slurp(argv[3]))) {
        fprintf(stderr, "usage: test_kernels VECADD.ptx DRIVER.ptx TIMER.ptx\n");
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(module_loads_fill_the_function_cache),
        cmocka_unit_test(parameters_pass_by_pointer_array_buffer_and_launch_config),
        cmocka_unit_test(thousands_of_batched_launches_run_in_order),
        cmocka_unit_test(globals_struct_parameters_and_opt_in_shared_memory_work),
        cmocka_unit_test(libraries_and_kernels_work_remotely),
        cmocka_unit_test(jit_errors_come_back_with_their_log),
        cmocka_unit_test(batched_work_leaves_within_the_flush_delay_without_a_sync),
        cmocka_unit_test(captured_graphs_replay_host_copies_included),
        cmocka_unit_test(graphs_built_node_by_node_replay_exactly),
    };
    int rc = cmocka_run_group_tests(tests, setup, teardown);
    free(vecadd_ptx);
    free(driver_ptx);
    free(timer_ptx);
    return rc;
}
