// SPDX-License-Identifier: Apache-2.0
// A training-step-shaped workload for bench_remote: STEPS steps, each copying a fresh batch
// (A) and the weights (B) to the device, a shared-memory tiled matrix multiply (C = A x B) and
// the result copied back, as a training loop moves data every step. Prints the time the
// loop took ("train_s S") and a checksum of every result, so the local and the remote run can
// be compared. Usage: train STEPS DIM
#include "check.h"

#include <ctime>

#define TILE 16

__global__ void matmul(const float *a, const float *b, float *c, int n)
{
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n / TILE; t++) {
        as[threadIdx.y][threadIdx.x] = a[row * n + t * TILE + threadIdx.x];
        bs[threadIdx.y][threadIdx.x] = b[(t * TILE + threadIdx.y) * n + col];
        __syncthreads();
        for (int j = 0; j < TILE; j++)
            acc += as[threadIdx.y][j] * bs[j][threadIdx.x];
        __syncthreads();
    }
    c[row * n + col] = acc;
}

static double secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    prog = "train";
    int steps = argc == 3 ? atoi(argv[1]) : 0, n = argc == 3 ? atoi(argv[2]) : 0;
    if (steps < 1 || n < TILE || n % TILE) {
        printf("usage: train STEPS DIM (DIM a multiple of %d)\n", TILE);
        return 2;
    }
    size_t bytes = sizeof(float) * (size_t)n * n;
    float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes), *c = (float *)malloc(bytes);
    for (int i = 0; i < n * n; i++) {
        a[i] = (float)(i % 7) * 0.25f;
        b[i] = (float)(i % 5) * 0.5f;
    }
    float *da, *db, *dc;
    CK(cudaMalloc(&da, bytes));
    CK(cudaMalloc(&db, bytes));
    CK(cudaMalloc(&dc, bytes));
    CK(cudaDeviceSynchronize()); // start-up (context, module) is not part of the loop
    double sum = 0, t0 = secs();
    for (int s = 0; s < steps; s++) {
        a[0] = (float)s; // a fresh batch
        CK(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice));
        matmul<<<dim3(n / TILE, n / TILE), dim3(TILE, TILE)>>>(da, db, dc, n);
        CK(cudaGetLastError());
        CK(cudaMemcpy(c, dc, bytes, cudaMemcpyDeviceToHost));
        sum += c[0] + c[n * n - 1];
    }
    double t = secs() - t0;
    printf("train_s %.6f\ntrain_checksum %.1f\n", t, sum);
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dc));
    free(a);
    free(b);
    free(c);
    pass("%d steps of %dx%d in %.3f s", steps, n, n, t);
    return 0;
}
