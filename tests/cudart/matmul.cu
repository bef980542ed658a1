// SPDX-License-Identifier: Apache-2.0
// Shared-memory tiled matrix multiply (C = A x B) with __syncthreads, on sizes that are not
// multiples of the tile. The reference performs the kernel's own operations in the same order
// (nvcc contracts the multiply-add into one fused multiply-add), so results match bit for bit.
#include "check.h"

#include <cmath>

#define TILE 16

__global__ void matmul(const float *a, const float *b, float *c, int m, int n, int k)
{
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < (k + TILE - 1) / TILE; t++) {
        int ka = t * TILE + threadIdx.x, kb = t * TILE + threadIdx.y;
        as[threadIdx.y][threadIdx.x] = row < m && ka < k ? a[row * k + ka] : 0.0f;
        bs[threadIdx.y][threadIdx.x] = kb < k && col < n ? b[kb * n + col] : 0.0f;
        __syncthreads();
        for (int j = 0; j < TILE; j++)
            acc += as[threadIdx.y][j] * bs[j][threadIdx.x];
        __syncthreads();
    }
    if (row < m && col < n)
        c[row * n + col] = acc;
}

int main()
{
    prog = "matmul";
    const int m = 45, n = 38, k = 53;
    float *a = new float[m * k], *b = new float[k * n], *c = new float[m * n];
    for (int i = 0; i < m * k; i++)
        a[i] = rndf();
    for (int i = 0; i < k * n; i++)
        b[i] = rndf();
    float *da, *db, *dc;
    CK(cudaMalloc(&da, m * k * sizeof(float)));
    CK(cudaMalloc(&db, k * n * sizeof(float)));
    CK(cudaMalloc(&dc, m * n * sizeof(float)));
    CK(cudaMemcpy(da, a, m * k * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b, k * n * sizeof(float), cudaMemcpyHostToDevice));
    dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (m + TILE - 1) / TILE);
    matmul<<<grid, block>>>(da, db, dc, m, n, k);
    CK(cudaGetLastError());
    CK(cudaMemcpy(c, dc, m * n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int t = 0; t < ((k + TILE - 1) / TILE) * TILE; t++)
                acc = fmaf(t < k ? a[i * k + t] : 0.0f, t < k ? b[t * n + j] : 0.0f, acc);
            if (!same_bits(c[i * n + j], acc))
                mismatch("c[%d][%d] = %.9g, expected %.9g", i, j, c[i * n + j], acc);
        }
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dc));
    pass("%dx%d = %dx%d * %dx%d, %dx%d tiles, bit-exact", m, n, m, k, k, n, TILE, TILE);
    delete[] a;
    delete[] b;
    delete[] c;
    return 0;
}
