/* SPDX-License-Identifier: Apache-2.0
 *
 * Tiled SGEMM with shared memory (kernels/sgemm.cu), C = alpha*A*B + beta*C for sizes that
 * are not multiples of the 16x16 tile, checked bit for bit against a CPU reference that
 * performs the kernel's operations in the kernel's order (one fmaf per k, then
 * fmaf(acc, alpha, C*beta)). Prints the kernel time measured with events.
 * Usage: sgemm sgemm.ptx [M N K]
 */
#include "hostcommon.h"

#include <math.h>

#define TILE 16

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod = host_setup("sgemm", argc, argv, &dev);
    int M = (int)host_arg(argc, argv, 2, 100), N = (int)host_arg(argc, argv, 3, 72),
        K = (int)host_arg(argc, argv, 4, 90);
    float alpha = 1.5f, beta = -0.5f;
    float *A = malloc(sizeof(float) * (size_t)M * K), *B = malloc(sizeof(float) * (size_t)K * N);
    float *C = malloc(sizeof(float) * (size_t)M * N), *R = malloc(sizeof(float) * (size_t)M * N);
    for (int i = 0; i < M * K; i++)
        A[i] = host_randf();
    for (int i = 0; i < K * N; i++)
        B[i] = host_randf();
    for (int i = 0; i < M * N; i++)
        C[i] = host_randf();
    CUfunction f;
    CUdeviceptr dA, dB, dC;
    CK(cuModuleGetFunction(&f, mod, "sgemm_tiled"));
    int smem = -1;
    CK(cuFuncGetAttribute(&smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f));
    if (smem != 2 * TILE * TILE * 4)
        host_mismatch("static shared memory %d bytes, want %d", smem, 2 * TILE * TILE * 4);
    CK(cuMemAlloc(&dA, sizeof(float) * (size_t)M * K));
    CK(cuMemAlloc(&dB, sizeof(float) * (size_t)K * N));
    CK(cuMemAlloc(&dC, sizeof(float) * (size_t)M * N));
    CK(cuMemcpyHtoD(dA, A, sizeof(float) * (size_t)M * K));
    CK(cuMemcpyHtoD(dB, B, sizeof(float) * (size_t)K * N));
    CK(cuMemcpyHtoD(dC, C, sizeof(float) * (size_t)M * N));
    void *params[] = {&M, &N, &K, &alpha, &dA, &dB, &beta, &dC};
    CUevent e0, e1;
    CK(cuEventCreate(&e0, 0));
    CK(cuEventCreate(&e1, 0));
    CK(cuEventRecord(e0, NULL));
    CK(cuLaunchKernel(f, (unsigned)(N + TILE - 1) / TILE, (unsigned)(M + TILE - 1) / TILE, 1, TILE,
                      TILE, 1, 0, NULL, params, NULL));
    CK(cuEventRecord(e1, NULL));
    CK(cuEventSynchronize(e1));
    float ms = 0;
    CK(cuEventElapsedTime(&ms, e0, e1));
    CK(cuMemcpyDtoH(R, dC, sizeof(float) * (size_t)M * N));
    for (int row = 0; row < M; row++)
        for (int col = 0; col < N; col++) {
            float acc = 0.0f;
            for (int t = 0; t < (K + TILE - 1) / TILE; t++)
                for (int k = 0; k < TILE; k++) {
                    int kk = t * TILE + k;
                    float a = kk < K ? A[row * K + kk] : 0.0f, b = kk < K ? B[kk * N + col] : 0.0f;
                    acc = fmaf(a, b, acc);
                }
            float want = fmaf(acc, alpha, C[row * N + col] * beta);
            float got = R[row * N + col];
            if (host_bits(got) != host_bits(want))
                host_mismatch("C[%d][%d] = %a, want %a", row, col, (double)got, (double)want);
        }
    CK(cuEventDestroy(e0));
    CK(cuEventDestroy(e1));
    CK(cuMemFree(dA));
    CK(cuMemFree(dB));
    CK(cuMemFree(dC));
    host_teardown(mod, dev);
    printf("sgemm: PASS %dx%dx%d bit-exact kernel %.3f ms\n", M, N, K, (double)ms);
    free(A);
    free(B);
    free(C);
    free(R);
    return 0;
}
