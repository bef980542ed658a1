// SPDX-License-Identifier: Apache-2.0
// Ampere-style kernels: tiles copied from global to shared memory with
// cooperative_groups::memcpy_async (cp.async, waited for with cg::wait), and libcu++'s
// cuda::atomic_ref with memory orders and a scope (atom.add.relaxed.gpu, atom.add.acq_rel.gpu).
// Built for sm_80, where memcpy_async is cp.async. Checks every tile's sum and the counters.
#include "check.h"

#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/atomic>

namespace cg = cooperative_groups;

#define TILE 256

__global__ void tile_sums(const int *in, long long *sums, unsigned *done, unsigned *order)
{
    __shared__ int tile[TILE];
    auto block = cg::this_thread_block();
    cg::memcpy_async(block, tile, in + (size_t)blockIdx.x * TILE, sizeof(int) * TILE);
    cg::wait(block);
    if (threadIdx.x == 0) {
        long long s = 0;
        for (int i = 0; i < TILE; i++)
            s += tile[i];
        sums[blockIdx.x] = s;
    }
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> d(*done);
    d.fetch_add(1, cuda::memory_order_relaxed);
    if (threadIdx.x == 0) {
        cuda::atomic_ref<unsigned, cuda::thread_scope_device> o(*order);
        o.fetch_add(1, cuda::memory_order_acq_rel);
    }
}

int main()
{
    prog = "async";
    const int blocks = 37, n = blocks * TILE;
    int *h = (int *)malloc(n * sizeof(int)), *d_in;
    long long want[blocks], got[blocks], *d_sums;
    unsigned *d_done, *d_order, done = 0, order = 0;
    for (int b = 0; b < blocks; b++) {
        want[b] = 0;
        for (int i = 0; i < TILE; i++) {
            h[b * TILE + i] = (int)(rnd() % 100000) - 50000;
            want[b] += h[b * TILE + i];
        }
    }
    CK(cudaMalloc(&d_in, n * sizeof(int)));
    CK(cudaMalloc(&d_sums, sizeof(got)));
    CK(cudaMalloc(&d_done, sizeof(unsigned)));
    CK(cudaMalloc(&d_order, sizeof(unsigned)));
    CK(cudaMemcpy(d_in, h, n * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMemset(d_done, 0, sizeof(unsigned)));
    CK(cudaMemset(d_order, 0, sizeof(unsigned)));
    tile_sums<<<blocks, TILE>>>(d_in, d_sums, d_done, d_order);
    CK(cudaGetLastError());
    CK(cudaMemcpy(got, d_sums, sizeof(got), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&done, d_done, sizeof(done), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&order, d_order, sizeof(order), cudaMemcpyDeviceToHost));
    for (int b = 0; b < blocks; b++)
        if (got[b] != want[b])
            mismatch("tile %d: sum %lld, expected %lld", b, got[b], want[b]);
    if (done != (unsigned)n || order != (unsigned)blocks)
        mismatch("counters %u and %u, expected %d and %d", done, order, n, blocks);
    CK(cudaFree(d_in));
    CK(cudaFree(d_sums));
    CK(cudaFree(d_done));
    CK(cudaFree(d_order));
    free(h);
    pass("%d tiles of %d ints through memcpy_async, %u atomic_ref adds", blocks, TILE, done);
    return 0;
}
