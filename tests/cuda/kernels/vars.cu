// SPDX-License-Identifier: Apache-2.0
// Module variables: .global with and without initialisers, .const with and without, read and
// updated (atomics) by a kernel; the driver allocates and binds them.
__device__ int counter = 5;
__device__ float table[4] = {1.5f, -2.0f, 3.25f, 0.125f};
__constant__ float coeffs[4] = {0.5f, 0.25f, 2.0f, -1.0f};
__constant__ int lut[8];
__device__ unsigned long long hits;

extern "C" __global__ void use_vars(float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    out[i] = table[i & 3] * coeffs[(i + 1) & 3] + (float)lut[i & 7];
    atomicAdd(&counter, 1);
    atomicAdd(&hits, (unsigned long long)i);
}
