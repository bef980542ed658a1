// SPDX-License-Identifier: Apache-2.0
// SGEMM through cuBLAS (C = alpha * A * B + beta * C, column-major, 512 x 384 x 256), the
// library most CUDA applications reach the GPU through. It runs on real hardware only
// (scripts/gpu-check.sh): cuBLAS's kernels are SASS for NVIDIA's architectures plus PTX the
// simulated GPU's engine cannot run yet (half-precision arithmetic such as add.f16), so there
// cublasCreate fails with CUBLAS_STATUS_NOT_INITIALIZED and the driver logs the instruction.
// Checked against a double-precision CPU product (relative error per element <= 1e-4;
// cuBLAS's default math mode is FP32, without TF32).
// Build: nvcc cublas_sgemm.cu -o cublas_sgemm -lcublas
#include "check.h"

#include <cmath>
#include <cublas_v2.h>

int main()
{
    prog = "cublas_sgemm";
    const int m = 512, n = 384, k = 256;
    const float alpha = 1.25f, beta = -0.5f;
    float *a = new float[m * k], *b = new float[k * n], *c = new float[m * n],
          *out = new float[m * n];
    for (int i = 0; i < m * k; i++)
        a[i] = rndf();
    for (int i = 0; i < k * n; i++)
        b[i] = rndf();
    for (int i = 0; i < m * n; i++)
        c[i] = rndf();
    float *da, *db, *dc;
    CK(cudaMalloc(&da, m * k * sizeof(float)));
    CK(cudaMalloc(&db, k * n * sizeof(float)));
    CK(cudaMalloc(&dc, m * n * sizeof(float)));
    CK(cudaMemcpy(da, a, m * k * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b, k * n * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dc, c, m * n * sizeof(float), cudaMemcpyHostToDevice));
    cublasHandle_t h;
    cublasStatus_t st = cublasCreate(&h);
    if (st != CUBLAS_STATUS_SUCCESS)
        mismatch("cublasCreate: %s", cublasGetStatusName(st));
    st = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, da, m, db, k, &beta, dc, m);
    if (st != CUBLAS_STATUS_SUCCESS)
        mismatch("cublasSgemm: %s", cublasGetStatusName(st));
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out, dc, m * n * sizeof(float), cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double acc = 0, mag = 0;
            for (int t = 0; t < k; t++) {
                acc += (double)a[t * m + i] * b[j * k + t];
                mag += fabs((double)a[t * m + i] * b[j * k + t]);
            }
            double want = alpha * acc + beta * c[j * m + i];
            double scale = fabs(alpha) * mag + fabs(beta * c[j * m + i]) + 1e-30;
            double err = fabs(out[j * m + i] - want) / scale;
            if (err > worst)
                worst = err;
            if (err > 1e-4)
                mismatch("C[%d][%d] = %.9g, expected %.9g (relative error %.2g)", i, j,
                         out[j * m + i], want, err);
        }
    cublasDestroy(h);
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dc));
    pass("%dx%dx%d, worst relative error %.2g", m, n, k, worst);
    return 0;
}
