// SPDX-License-Identifier: Apache-2.0
// The launch paths and launch-related queries of the runtime: function attributes, occupancy,
// opting in to large dynamic shared memory, cudaLaunchKernel, cudaLaunchKernelEx (with a launch
// attribute) and cooperative launches, each checked by its results.
#include "check.h"

__global__ void reverse_block(const int *in, int *out)
{
    __shared__ int buf[256];
    int t = threadIdx.x, base = blockIdx.x * blockDim.x;
    buf[t] = in[base + t];
    __syncthreads();
    out[base + t] = buf[blockDim.x - 1 - t];
}

// Uses DYNAMIC bytes of dynamic shared memory: every word written and read back summed.
__global__ void big_shared(int *out, int words)
{
    extern __shared__ int dyn[];
    for (int i = threadIdx.x; i < words; i += blockDim.x)
        dyn[i] = i;
    __syncthreads();
    if (threadIdx.x == 0) {
        long long s = 0;
        for (int i = 0; i < words; i++)
            s += dyn[i];
        out[blockIdx.x] = (int)(s % 1000003);
    }
}

__global__ void axpb(int *x, int a, int b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = a * x[i] + b;
}

static void check_axpb(const int *dx, const int *h0, int n, int a, int b, const char *how)
{
    int *h = (int *)malloc(n * sizeof(int));
    CK(cudaMemcpy(h, dx, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (h[i] != a * h0[i] + b)
            mismatch("%s: x[%d] = %d, expected %d", how, i, h[i], a * h0[i] + b);
    free(h);
}

int main()
{
    prog = "launch";
    int dev = 0;
    CK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));

    // Attributes of a kernel with 1 KiB of static shared memory.
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, reverse_block));
    if (fa.sharedSizeBytes != 1024 || fa.maxThreadsPerBlock < 256 ||
        fa.maxThreadsPerBlock > prop.maxThreadsPerBlock || fa.numRegs < 1 || fa.ptxVersion < 75)
        mismatch("cudaFuncGetAttributes: shared %zu, max threads %d, regs %d, ptx %d",
                 fa.sharedSizeBytes, fa.maxThreadsPerBlock, fa.numRegs, fa.ptxVersion);

    // Occupancy.
    int per_sm = 0, min_grid = 0, best_block = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reverse_block, 256, 0));
    CK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &best_block, axpb, 0, 0));
    if (per_sm < 1 || per_sm * 256 > prop.maxThreadsPerMultiProcessor || best_block < 32 ||
        best_block > prop.maxThreadsPerBlock || min_grid < prop.multiProcessorCount)
        mismatch("occupancy: %d blocks of 256 per SM, best block %d, min grid %d", per_sm,
                 best_block, min_grid);

    // Cache preferences are accepted (the simulated SM has no L1/shared split to change).
    CK(cudaFuncSetCacheConfig(reverse_block, cudaFuncCachePreferShared));
    CK(cudaDeviceSetCacheConfig(cudaFuncCachePreferL1));
    cudaFuncCache pref;
    CK(cudaDeviceGetCacheConfig(&pref));
    if (pref != cudaFuncCachePreferL1)
        mismatch("cudaDeviceGetCacheConfig = %d after setting PreferL1", (int)pref);

    // <<<>>> with static shared memory.
    const int n = 256 * 6;
    int *h0 = (int *)malloc(n * sizeof(int)), *h = (int *)malloc(n * sizeof(int));
    for (int i = 0; i < n; i++)
        h0[i] = (int)(rnd() % 20001) - 10000;
    int *din, *dout;
    CK(cudaMalloc(&din, n * sizeof(int)));
    CK(cudaMalloc(&dout, n * sizeof(int)));
    CK(cudaMemcpy(din, h0, n * sizeof(int), cudaMemcpyHostToDevice));
    reverse_block<<<n / 256, 256>>>(din, dout);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h, dout, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (h[i] != h0[(i / 256) * 256 + 255 - i % 256])
            mismatch("reverse_block: out[%d] = %d", i, h[i]);

    // More dynamic shared memory than the default 48 KiB needs the opt-in.
    int optin = prop.sharedMemPerBlockOptin;
    int dyn = optin > 64 * 1024 ? 64 * 1024 : optin;
    if (dyn > 48 * 1024) {
        big_shared<<<2, 128, dyn>>>(dout, dyn / 4);
        EXPECT_ERR(cudaGetLastError(), cudaErrorInvalidValue);
        CK(cudaFuncSetAttribute(big_shared, cudaFuncAttributeMaxDynamicSharedMemorySize, dyn));
    }
    big_shared<<<2, 128, dyn>>>(dout, dyn / 4);
    CK(cudaGetLastError());
    CK(cudaMemcpy(h, dout, 2 * sizeof(int), cudaMemcpyDeviceToHost));
    long long words = dyn / 4, want = (words * (words - 1) / 2) % 1000003;
    if (h[0] != want || h[1] != want)
        mismatch("big_shared(%d bytes): %d %d, expected %lld", dyn, h[0], h[1], want);

    // cudaLaunchKernel, cudaLaunchKernelEx and a cooperative launch of the same kernel.
    int *dx;
    CK(cudaMalloc(&dx, n * sizeof(int)));
    CK(cudaMemcpy(dx, h0, n * sizeof(int), cudaMemcpyHostToDevice));
    int a = 3, b = -7, nn = n;
    void *args[] = {&dx, &a, &b, &nn};
    CK(cudaLaunchKernel((const void *)axpb, dim3(n / 128), dim3(128), args, 0, 0));
    check_axpb(dx, h0, n, 3, -7, "cudaLaunchKernel");

    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    CK(cudaMemcpy(dx, h0, n * sizeof(int), cudaMemcpyHostToDevice));
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(n / 64);
    cfg.blockDim = dim3(64);
    cfg.stream = st;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributePriority;
    attr[0].val.priority = 0;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, axpb, dx, 5, 11, n));
    CK(cudaStreamSynchronize(st));
    check_axpb(dx, h0, n, 5, 11, "cudaLaunchKernelEx");

    int coop = 0;
    CK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    if (!coop)
        mismatch("cudaDevAttrCooperativeLaunch = 0");
    CK(cudaMemcpy(dx, h0, n * sizeof(int), cudaMemcpyHostToDevice));
    int b2 = 1;
    void *cargs[] = {&dx, &a, &b2, &nn};
    CK(cudaLaunchCooperativeKernel((const void *)axpb, dim3(n / 256), dim3(256), cargs, 0, st));
    CK(cudaStreamSynchronize(st));
    check_axpb(dx, h0, n, 3, 1, "cudaLaunchCooperativeKernel");

    CK(cudaStreamDestroy(st));
    CK(cudaFree(din));
    CK(cudaFree(dout));
    CK(cudaFree(dx));
    free(h0);
    free(h);
    pass("attributes (1024 B shared, %d regs), occupancy %d blocks/SM, best block %d, %d B "
         "dynamic shared, cudaLaunchKernel, cudaLaunchKernelEx, cooperative launch",
         fa.numRegs, per_sm, best_block, dyn);
    return 0;
}
