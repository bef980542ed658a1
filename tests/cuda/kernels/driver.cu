// SPDX-License-Identifier: Apache-2.0
// Kernels for the simulated driver's own launch tests: module variables (.global and
// .const), launch bounds, opt-in dynamic shared memory and a by-value struct parameter.
struct Mixed {
    char c;
    double d;
    int i;
};

__device__ int launches;
__device__ int table[4] = {10, 20, 30, 40};
__constant__ float coeff[4];

extern "C" __global__ void use_globals(float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = coeff[i & 3] * (float)table[i & 3];
    if (i == 0)
        atomicAdd(&launches, 1);
}

extern "C" __global__ void __launch_bounds__(128) bounded(int *out)
{
    out[blockIdx.x * blockDim.x + threadIdx.x] = (int)threadIdx.x;
}

extern "C" __global__ void big_shared(int *out, int words)
{
    extern __shared__ int buf[];
    for (int k = threadIdx.x; k < words; k += blockDim.x)
        buf[k] = k * 3;
    __syncthreads();
    int acc = 0;
    for (int k = threadIdx.x; k < words; k += blockDim.x)
        acc += buf[words - 1 - k];
    atomicAdd(out, acc);
}

extern "C" __global__ void struct_param(Mixed m, long long *out)
{
    if (threadIdx.x == 0) {
        out[0] = m.c;
        out[1] = (long long)m.d;
        out[2] = m.i;
    }
}
