// SPDX-License-Identifier: Apache-2.0
// FP8 as quantised inference code uses it (cuda_fp8.h, sm_89): floats and half pairs to
// __nv_fp8x2_e4m3 / __nv_fp8x2_e5m2 and back, on the device (cvt ... e4m3x2 / e5m2x2) and on
// the host (cuda_fp8.h's own software conversion, the oracle), compared byte for byte over
// values around every range: tiny, subnormal, ties, the largest finite, past it, infinities.
#include "check.h"

#include <cuda_fp16.h>
#include <cuda_fp8.h>

__global__ void to_fp8(const float2 *in, __nv_fp8x2_storage_t *e4, __nv_fp8x2_storage_t *e5,
                       float2 *back4, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    e4[i] = __nv_cvt_float2_to_fp8x2(in[i], __NV_SATFINITE, __NV_E4M3);
    e5[i] = __nv_cvt_float2_to_fp8x2(in[i], __NV_SATFINITE, __NV_E5M2);
    __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(e4[i], __NV_E4M3);
    back4[i] = __half22float2(*(__half2 *)&h);
}

int main()
{
    prog = "fp8";
    const int n = 4096;
    float2 *in = new float2[n], *back = new float2[n];
    __nv_fp8x2_storage_t *e4 = new __nv_fp8x2_storage_t[n], *e5 = new __nv_fp8x2_storage_t[n];
    static const float special[] = {0.0f, -0.0f, 448.0f, 464.0f, 480.0f, 57344.0f, 61440.0f,
                                    1e30f, -1e30f, 1.0f / 512, 1.0f / 1024, 3.0f / 1024};
    for (int i = 0; i < n; i++) {
        float a, b;
        if (i < 12 * 12) {
            a = special[i / 12];
            b = special[i % 12];
        } else {
            // magnitudes 2^-12 .. 2^17, both signs
            a = ldexpf((float)(rnd() % 4096) / 4096.0f + 0.5f, (int)(rnd() % 30) - 12);
            b = -ldexpf((float)(rnd() % 4096) / 4096.0f + 0.5f, (int)(rnd() % 30) - 12);
        }
        in[i] = make_float2(a, b);
    }
    float2 *din, *dback;
    __nv_fp8x2_storage_t *d4, *d5;
    CK(cudaMalloc(&din, n * sizeof(float2)));
    CK(cudaMalloc(&dback, n * sizeof(float2)));
    CK(cudaMalloc(&d4, n * sizeof(*d4)));
    CK(cudaMalloc(&d5, n * sizeof(*d5)));
    CK(cudaMemcpy(din, in, n * sizeof(float2), cudaMemcpyHostToDevice));
    to_fp8<<<(n + 127) / 128, 128>>>(din, d4, d5, dback, n);
    CK(cudaGetLastError());
    CK(cudaMemcpy(e4, d4, n * sizeof(*e4), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(e5, d5, n * sizeof(*e5), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(back, dback, n * sizeof(float2), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        __nv_fp8x2_storage_t w4 = __nv_cvt_float2_to_fp8x2(in[i], __NV_SATFINITE, __NV_E4M3);
        __nv_fp8x2_storage_t w5 = __nv_cvt_float2_to_fp8x2(in[i], __NV_SATFINITE, __NV_E5M2);
        if (e4[i] != w4 || e5[i] != w5)
            mismatch("(%g, %g): e4m3x2 0x%04x e5m2x2 0x%04x, expected 0x%04x 0x%04x", in[i].x,
                     in[i].y, e4[i], e5[i], w4, w5);
        __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(w4, __NV_E4M3);
        float2 wb = __half22float2(*(__half2 *)&h);
        if (!same_bits(back[i].x, wb.x) || !same_bits(back[i].y, wb.y))
            mismatch("e4m3x2 0x%04x back: (%g, %g), expected (%g, %g)", w4, back[i].x,
                     back[i].y, wb.x, wb.y);
    }
    CK(cudaFree(din));
    CK(cudaFree(dback));
    CK(cudaFree(d4));
    CK(cudaFree(d5));
    delete[] in;
    delete[] back;
    delete[] e4;
    delete[] e5;
    pass("%d float pairs to e4m3x2 and e5m2x2 and back, as cuda_fp8.h converts them on the host",
         n);
    return 0;
}
