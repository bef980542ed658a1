// SPDX-License-Identifier: Apache-2.0
// Integer and float arithmetic, conversions, local arrays and fast-math intrinsics, one result
// slot per operation, checked against CPU references by the host program.
extern "C" __global__ void int_ops(const int *a, const int *b, int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int x = a[i], y = b[i] == 0 ? 1 : b[i];
    int *o = out + i * 12;
    o[0] = x / y;
    o[1] = x % y;
    o[2] = min(x, y);
    o[3] = max(x, y);
    o[4] = abs(x);
    o[5] = x * y + 7;
    o[6] = x ^ y;
    o[7] = (x << 3) | (y & 7);
    o[8] = x >> 2;
    o[9] = (int)((unsigned)x >> 5);
    o[10] = (int)(((long long)x * (long long)y) >> 16);
    o[11] = __popc(x) + __clz(y);
}

extern "C" __global__ void float_ops(const float *a, const float *b, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = a[i], y = b[i];
    float loc[4];
    for (int k = 0; k < 4; k++)
        loc[k] = x * (float)k + y;
    float *o = out + i * 8;
    o[0] = x / y;
    o[1] = sqrtf(fabsf(x));
    o[2] = fminf(x, y) - fmaxf(x, y);
    o[3] = (float)(int)x + (float)(unsigned)(fabsf(y));
    o[4] = loc[(i & 3)] + loc[3 - (i & 3)];
    o[5] = __fdividef(x, y);
    o[6] = (double)x * (double)y;
    o[7] = x > y ? x : -y;
}

extern "C" __global__ void fast_math(const float *a, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = a[i];
    float *o = out + i * 5;
    o[0] = __expf(x);
    o[1] = __logf(fabsf(x) + 1.0f);
    o[2] = __sinf(x);
    o[3] = __cosf(x);
    o[4] = rsqrtf(fabsf(x) + 1.0f);
}
