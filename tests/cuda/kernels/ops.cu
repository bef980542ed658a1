// SPDX-License-Identifier: Apache-2.0
// Wider instruction coverage from real nvcc output: bit manipulation intrinsics, 64-bit
// integer arithmetic, doubles and conversions, half/bfloat16 conversions, more atomics, and
// the accurate (libdevice) float and double math functions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void bit_ops(const unsigned *a, const unsigned *b, unsigned *o, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned x = a[i], y = b[i];
    unsigned *r = o + i * 12;
    r[0] = __brev(x);
    r[1] = __byte_perm(x, y, 0x5140);
    r[2] = __funnelshift_l(x, y, y);
    r[3] = __funnelshift_rc(x, y, y);
    r[4] = __ffs(x);
    r[5] = __clzll(((unsigned long long)x << 32) | y);
    r[6] = __popcll(((unsigned long long)y << 32) | x);
    r[7] = (x >> (y & 15)) & 0x3f;
    r[8] = __umulhi(x, y);
    r[9] = __mul24(x, y);
    r[10] = __sad(x, y, 3);
    r[11] = (unsigned)__dp4a((int)x, (int)y, 17);
}

extern "C" __global__ void wide_ops(const long long *a, const long long *b, long long *o, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    long long x = a[i], y = b[i] == 0 ? 3 : b[i];
    unsigned long long ux = (unsigned long long)x, uy = (unsigned long long)y;
    long long *r = o + i * 10;
    r[0] = x / y;
    r[1] = x % y;
    r[2] = (long long)(ux / uy);
    r[3] = (long long)(ux % uy);
    r[4] = __mul64hi(x, y);
    r[5] = (long long)__umul64hi(ux, uy);
    r[6] = x < y ? x : y;
    r[7] = (long long)(ux > uy ? ux : uy);
    r[8] = (x << (y & 63)) ^ (long long)(ux >> (uy & 63)) ^ (x >> (y & 31));
    r[9] = (long long)((unsigned)x * (unsigned long long)(unsigned)y) + (short)x * (short)y;
}

extern "C" __global__ void double_ops(const double *a, const double *b, double *o,
                                      long long *oi, float *of, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    double x = a[i], y = b[i];
    double *r = o + i * 8;
    r[0] = x / y;
    r[1] = sqrt(fabs(x));
    r[2] = fma(x, y, 1.0);
    r[3] = fmin(x, y) + fmax(x, y);
    r[4] = floor(x) + ceil(y);
    r[5] = trunc(x) - rint(y);
    r[6] = (double)(float)x;
    r[7] = 1.0 / y;
    oi[i * 2] = (long long)x;
    oi[i * 2 + 1] = (long long)(unsigned long long)fabs(y);
    of[i * 2] = (float)x;
    of[i * 2 + 1] = (float)(long long)(x * 1e6);
}

extern "C" __global__ void half_ops(const float *a, unsigned short *h, float *back, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = a[i];
    __half hv = __float2half(x);
    __half hz = __float2half_rz(x);
    __nv_bfloat16 bv = __float2bfloat16(x);
    h[i * 3] = __half_as_ushort(hv);
    h[i * 3 + 1] = __half_as_ushort(hz);
    h[i * 3 + 2] = __bfloat16_as_ushort(bv);
    back[i * 2] = __half2float(hv);
    back[i * 2 + 1] = __bfloat162float(bv);
}

extern "C" __global__ void atomics_more(float *f, double *d, unsigned *u, unsigned long long *ul,
                                        int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    atomicAdd(f, 1.5f);
    atomicAdd(d, 0.25);
    atomicInc(u, 100u);
    atomicDec(u + 1, 50u);
    atomicAnd(u + 2, ~(1u << (i & 31)));
    atomicOr(u + 3, 1u << (i & 31));
    atomicXor(u + 4, (unsigned)i);
    atomicMax(ul, (unsigned long long)i * 3);
    atomicMin(ul + 1, (unsigned long long)(i + 7));
    atomicAdd(ul + 2, 1ull);
    atomicExch(ul + 3, (unsigned long long)i);
}

extern "C" __global__ void libm_ops(const float *a, float *o, const double *da, double *od, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = a[i];
    float *r = o + i * 8;
    r[0] = expf(x);
    r[1] = logf(fabsf(x) + 0.5f);
    r[2] = sinf(x);
    r[3] = cosf(x);
    r[4] = powf(fabsf(x) + 0.1f, 1.7f);
    r[5] = tanhf(x);
    r[6] = erff(x);
    r[7] = atan2f(x, 0.75f);
    double dx = da[i];
    double *q = od + i * 4;
    q[0] = exp(dx);
    q[1] = log(fabs(dx) + 0.5);
    q[2] = sin(dx);
    q[3] = cbrt(dx);
}
