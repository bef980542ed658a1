// SPDX-License-Identifier: Apache-2.0
// Device functions nvcc keeps as real calls (__noinline__): parameters and results through
// .param (scalars and a struct), recursion (with a .local frame per level), a local array
// on the callee's stack, and a divergent early return inside the callee. out_i holds 4*n ints.
struct pair {
    int a;
    float b;
};

__device__ __noinline__ int mix(int a, int b, float f)
{
    return a * 3 + b - (int)(f * 2.0f);
}

__device__ __noinline__ unsigned fib(unsigned n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__device__ __noinline__ float sum_local(int n, float x)
{
    float buf[8]; /* indexed by data: lives in the callee's .local frame */
    for (int i = 0; i < 8; i++)
        buf[i] = x * (float)i + (float)n;
    return buf[n & 7] + buf[(n >> 3) & 7];
}

__device__ __noinline__ int depth_sum(int d, int x)
{
    int a[4]; /* a .local frame per recursion level */
    for (int i = 0; i < 4; i++)
        a[i] = d * 10 + i;
    a[x & 3] += x;
    if (d == 0)
        return a[(x >> 2) & 3];
    return a[(x >> 4) & 3] + depth_sum(d - 1, x * 3 + 1) - a[x & 3];
}

__device__ __noinline__ int early(int x)
{
    if (x & 1)
        return -x;
    int r = 0;
    for (int i = 0; i < (x & 15); i++)
        r += i * x;
    return r;
}

__device__ __noinline__ pair make_pair(int a, float b)
{
    pair p = {a + 1, b * 2.0f};
    return p;
}

extern "C" __global__ void calls(const int *in, int *out_i, unsigned *out_f, float *out_s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int x = in[i];
    out_i[i * 3 + 0] = mix(x, i, (float)x * 0.5f);
    out_i[i * 3 + 1] = early(x);
    pair p = make_pair(x, (float)i);
    out_i[i * 3 + 2] = p.a + (int)p.b;
    out_f[i] = fib((unsigned)(x & 7) + 3);
    out_s[i] = sum_local(x, (float)i * 0.25f);
    out_i[n * 3 + i] = depth_sum(x & 7, x);
}
