// SPDX-License-Identifier: Apache-2.0
// Instructions the other kernels leave out, checked by host/isa.c on the simulated and on a
// real GPU: integer atomics (min/max/exch/cas, 32 and 64 bits) on shared memory, partly
// dynamic; v2/v4 loads and stores on global and shared memory; %clock64; and the PTX
// approximations rcp/sqrt/ex2/lg2/sin/cos.approx.f32 (inline asm: nvcc emits them only
// under fast-math).
#include <climits>

extern "C" __global__ void shared_atomics(const int *in, int n, int *out_i,
                                          unsigned long long *out_u)
{
    extern __shared__ int dyn[]; // min, max, exch, cas counter
    __shared__ unsigned long long umax, umin, uexch, usum;
    if (threadIdx.x == 0) {
        dyn[0] = INT_MAX;
        dyn[1] = INT_MIN;
        dyn[2] = 0;
        dyn[3] = 0;
        umax = 0;
        umin = ~0ull;
        uexch = 0;
        usum = 0;
    }
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int v = in[i];
        atomicMin(&dyn[0], v);
        atomicMax(&dyn[1], v);
        atomicExch(&dyn[2], v);
        int old = dyn[3], assumed;
        do {
            assumed = old;
            old = atomicCAS(&dyn[3], assumed, assumed + 1);
        } while (old != assumed);
        unsigned long long w = (unsigned long long)(unsigned)v << 20 | (unsigned)i;
        atomicMax(&umax, w);
        atomicMin(&umin, w);
        atomicExch(&uexch, w);
        unsigned long long o = usum, a;
        do {
            a = o;
            o = atomicCAS(&usum, a, a + w);
        } while (o != a);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int k = 0; k < 4; k++)
            out_i[blockIdx.x * 4 + k] = dyn[k];
        out_u[blockIdx.x * 4] = umax;
        out_u[blockIdx.x * 4 + 1] = umin;
        out_u[blockIdx.x * 4 + 2] = uexch;
        out_u[blockIdx.x * 4 + 3] = usum;
    }
}

// Blocks of at most 128 threads, an even number of them.
extern "C" __global__ void vectors(const float4 *in4, const double2 *ind, float2 *out2, int4 *outi,
                                   double2 *outd, int n)
{
    __shared__ float4 s4[128];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    s4[t] = i < n ? in4[i] : make_float4(0, 0, 0, 0);
    __syncthreads();
    float4 w = s4[t ^ 1];
    float2 h = reinterpret_cast<float2 *>(s4)[2 * t + 1];
    if (i < n) {
        out2[2 * i] = make_float2(w.x + w.w, w.y - w.z);
        out2[2 * i + 1] = h;
        outi[i] = make_int4(__float_as_int(w.x), i, -i, t);
        double2 d = ind[i];
        outd[i] = make_double2(d.y, d.x * 2.0);
    }
}

// Each thread: %clock64 before and after SPINS dependent steps, and the steps' result.
extern "C" __global__ void clocks(long long *out, int spins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    long long c0 = clock64();
    unsigned x = (unsigned)i;
    for (int k = 0; k < spins; k++)
        x = x * 1664525u + 1013904223u;
    long long c1 = clock64();
    out[i * 3] = c0;
    out[i * 3 + 1] = c1;
    out[i * 3 + 2] = x;
}

extern "C" __global__ void approx(const float *in, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float x = in[i], ax = fabsf(x) + 0.5f, r;
    float *o = out + i * 6;
    asm("rcp.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    o[0] = r;
    asm("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(ax));
    o[1] = r;
    asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    o[2] = r;
    asm("lg2.approx.f32 %0, %1;" : "=f"(r) : "f"(ax));
    o[3] = r;
    asm("sin.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    o[4] = r;
    asm("cos.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    o[5] = r;
}
