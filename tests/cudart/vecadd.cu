// SPDX-License-Identifier: Apache-2.0
// Vector add through the CUDA runtime, as a new user writes it: cudaMalloc, cudaMemcpy, <<<>>>,
// cudaGetLastError, cudaDeviceSynchronize. Checks the sum bit for bit, the device's properties
// and that cudaMemGetInfo agrees with them.
#include "check.h"

__global__ void add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

int main()
{
    prog = "vecadd";
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    if (ndev < 1)
        mismatch("cudaGetDeviceCount: %d devices", ndev);
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    if (!prop.name[0] || prop.totalGlobalMem == 0 || prop.major < 7 || prop.multiProcessorCount < 1)
        mismatch("device properties: name '%s' memory %zu cc %d.%d sms %d", prop.name,
                 prop.totalGlobalMem, prop.major, prop.minor, prop.multiProcessorCount);
    const int n = 100003;
    size_t bytes = n * sizeof(float);
    float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes), *c = (float *)malloc(bytes);
    for (int i = 0; i < n; i++) {
        a[i] = rndf() * 1000.0f;
        b[i] = rndf() / 3.0f;
    }
    float *da, *db, *dc;
    CK(cudaMalloc(&da, bytes));
    CK(cudaMalloc(&db, bytes));
    CK(cudaMalloc(&dc, bytes));
    size_t free_b = 0, total_b = 0;
    CK(cudaMemGetInfo(&free_b, &total_b));
    if (total_b != prop.totalGlobalMem || free_b > total_b || free_b + 3 * bytes > total_b + 1)
        mismatch("cudaMemGetInfo: free %zu total %zu, device memory %zu", free_b, total_b,
                 prop.totalGlobalMem);
    CK(cudaMemcpy(da, a, bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b, bytes, cudaMemcpyHostToDevice));
    CK(cudaMemset(dc, 0xff, bytes));
    add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(c, dc, bytes, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        if (!same_bits(c[i], a[i] + b[i]))
            mismatch("c[%d] = %.9g, expected %.9g", i, c[i], a[i] + b[i]);
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dc));
    pass("%d elements on %s (cc %d.%d, %d SMs, %zu MiB)", n, prop.name, prop.major, prop.minor,
         prop.multiProcessorCount, prop.totalGlobalMem >> 20);
    free(a);
    free(b);
    free(c);
    return 0;
}
