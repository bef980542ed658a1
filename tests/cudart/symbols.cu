// SPDX-License-Identifier: Apache-2.0
// Module globals through the runtime: __device__ and __constant__ variables set with
// cudaMemcpyToSymbol, read back with cudaMemcpyFromSymbol and through cudaGetSymbolAddress,
// sized by cudaGetSymbolSize, updated by kernels with atomics (add, max, min, CAS, exchange);
// and the CUDA programming guide's __threadfence() sum: each block publishes its partial sum,
// fences, counts itself done, and the last block adds the partials.
#include "check.h"

#define N 64

__device__ int counter;
__device__ unsigned int biggest;
__device__ int smallest = 1 << 30;
__device__ unsigned long long cas_sum;
__device__ float table[N];
__constant__ float coef[4];
__device__ int flag_value = 7; // initialised in the image

__global__ void work(int rounds)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        table[i] = table[i] * coef[i % 4];
    for (int r = 0; r < rounds; r++)
        atomicAdd(&counter, 1);
    atomicMax(&biggest, (unsigned)i * 3u);
    atomicMin(&smallest, i - 5);
    unsigned long long old = cas_sum, seen;
    do { // a 64-bit add built from compare-and-swap
        seen = old;
        old = atomicCAS(&cas_sum, seen, seen + (unsigned long long)i);
    } while (old != seen);
    if (i == 17)
        atomicExch(&flag_value, flag_value + 100);
}

__device__ float partial[8];
__device__ unsigned int blocks_done;
__device__ float total;

__global__ void fenced_sum(const float *in, int n)
{
    __shared__ float s[64];
    __shared__ bool last;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    if (threadIdx.x == 0) {
        float sum = 0;
        for (int k = 0; k < blockDim.x; k++)
            sum += s[k];
        partial[blockIdx.x] = sum;
        __threadfence(); // the partial is visible before the count says so
        last = atomicInc(&blocks_done, gridDim.x) == gridDim.x - 1;
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
        float sum = 0;
        for (int b = 0; b < gridDim.x; b++)
            sum += ((volatile float *)partial)[b];
        __threadfence_block();
        total = sum;
        __threadfence_system();
        blocks_done = 0;
    }
}

int main()
{
    prog = "symbols";
    float h_table[N], h_coef[4] = {0.5f, -2.0f, 3.0f, 0.25f};
    for (int i = 0; i < N; i++)
        h_table[i] = rndf();
    CK(cudaMemcpyToSymbol(table, h_table, sizeof(h_table)));
    CK(cudaMemcpyToSymbol(coef, h_coef, sizeof(h_coef)));
    int zero = 0;
    CK(cudaMemcpyToSymbol(counter, &zero, sizeof(zero)));
    size_t sz = 0;
    CK(cudaGetSymbolSize(&sz, table));
    if (sz != sizeof(h_table))
        mismatch("cudaGetSymbolSize(table) = %zu, expected %zu", sz, sizeof(h_table));
    int init = 0;
    CK(cudaMemcpyFromSymbol(&init, flag_value, sizeof(init)));
    if (init != 7)
        mismatch("flag_value initialised to %d, expected 7", init);
    const int threads = 96, blocks = 3, rounds = 5; // 288 threads
    work<<<blocks, threads>>>(rounds);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    int h_counter = 0, h_small = 0, h_flag = 0;
    unsigned h_big = 0;
    unsigned long long h_cas = 0;
    CK(cudaMemcpyFromSymbol(&h_counter, counter, sizeof(int)));
    CK(cudaMemcpyFromSymbol(&h_big, biggest, sizeof(unsigned)));
    CK(cudaMemcpyFromSymbol(&h_small, smallest, sizeof(int)));
    CK(cudaMemcpyFromSymbol(&h_cas, cas_sum, sizeof(h_cas)));
    CK(cudaMemcpyFromSymbol(&h_flag, flag_value, sizeof(int)));
    const int nthreads = threads * blocks;
    if (h_counter != nthreads * rounds)
        mismatch("counter = %d, expected %d", h_counter, nthreads * rounds);
    if (h_big != (unsigned)(nthreads - 1) * 3u || h_small != -5)
        mismatch("atomicMax = %u (expected %u), atomicMin = %d (expected -5)", h_big,
                 (unsigned)(nthreads - 1) * 3u, h_small);
    if (h_cas != (unsigned long long)nthreads * (nthreads - 1) / 2)
        mismatch("CAS sum = %llu, expected %llu", h_cas,
                 (unsigned long long)nthreads * (nthreads - 1) / 2);
    if (h_flag != 107)
        mismatch("flag_value = %d, expected 107", h_flag);
    float *dtable = NULL, back[N];
    CK(cudaGetSymbolAddress((void **)&dtable, table));
    CK(cudaMemcpy(back, dtable, sizeof(back), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++)
        if (!same_bits(back[i], h_table[i] * h_coef[i % 4]))
            mismatch("table[%d] = %.9g, expected %.9g", i, back[i], h_table[i] * h_coef[i % 4]);
    // Symbols copy at an offset, too.
    float two[2] = {1.5f, -1.5f};
    CK(cudaMemcpyToSymbol(table, two, sizeof(two), 10 * sizeof(float)));
    CK(cudaMemcpy(back, dtable, sizeof(back), cudaMemcpyDeviceToHost));
    if (back[10] != 1.5f || back[11] != -1.5f)
        mismatch("offset copy: table[10..11] = %g %g", back[10], back[11]);
    // The fenced sum over 8 blocks of 64: integers, so any order gives the same float.
    float h_in[512], *d_in = NULL, h_total = 0, want = 0;
    for (int i = 0; i < 512; i++) {
        h_in[i] = (float)(i % 37);
        want += h_in[i];
    }
    CK(cudaMalloc(&d_in, sizeof(h_in)));
    CK(cudaMemcpy(d_in, h_in, sizeof(h_in), cudaMemcpyHostToDevice));
    fenced_sum<<<8, 64>>>(d_in, 512);
    CK(cudaGetLastError());
    CK(cudaMemcpyFromSymbol(&h_total, total, sizeof(float)));
    if (h_total != want)
        mismatch("__threadfence sum = %g, expected %g", h_total, want);
    CK(cudaFree(d_in));
    pass("%d threads: atomic add/max/min/CAS/exch on __device__ globals, __constant__ "
         "coefficients, symbol address and size; a __threadfence() sum over 8 blocks",
         nthreads);
    return 0;
}
