// SPDX-License-Identifier: Apache-2.0
// Sum reduction: dynamic shared memory tree, warp shuffle for the last 32, one atomicAdd per
// block; plus integer atomics (min/max/exch/cas) on global and shared memory.
extern "C" __global__ void reduce_sum(const int *in, int n, unsigned long long *out)
{
    extern __shared__ int sdata[];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    int v = 0;
    if (i < n)
        v += in[i];
    if (i + blockDim.x < n)
        v += in[i + blockDim.x];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s >= 32; s >>= 1) {
        if (tid < s)
            sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid < 32) {
        v = sdata[tid];
        for (int off = 16; off > 0; off >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, off);
        if (tid == 0)
            atomicAdd(out, (unsigned long long)v);
    }
}

extern "C" __global__ void atomics_mix(const int *in, int n, int *gmin, int *gmax, int *gexch,
                                       int *gcas_count, unsigned *shared_total)
{
    __shared__ unsigned block_total;
    if (threadIdx.x == 0)
        block_total = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v = in[i];
        atomicMin(gmin, v);
        atomicMax(gmax, v);
        atomicExch(gexch, v);
        // Each thread increments the counter exactly once through a CAS loop.
        int old = *gcas_count, assumed;
        do {
            assumed = old;
            old = atomicCAS(gcas_count, assumed, assumed + 1);
        } while (old != assumed);
        atomicAdd(&block_total, (unsigned)v);
    }
    __syncthreads();
    if (threadIdx.x == 0)
        atomicAdd(shared_total, block_total);
}
