// SPDX-License-Identifier: Apache-2.0
// Half-precision arithmetic as mixed-precision code writes it with cuda_fp16.h and cuda_bf16.h:
// __half2 intrinsics (__hfma2, __hadd2, __hsub2, __hmul2, __hmax2, __hmin2, __hneg2, __habs2),
// operators on __half, the same on __nv_bfloat16 / __nv_bfloat162, and atomicAdd on halves. The inputs are small
// dyadic numbers (k/8 and j/16, |k|, |j| < 32), so every intermediate result is exact in
// half precision (and in float, rounded once to bfloat16 at the end): the results are the same
// whether or not the compiler fuses a multiply and an add (as ptxas may on a real GPU), and
// the host computes them in float and converts. Built for sm_80 (cuda_bf16.h's bfloat16
// arithmetic needs it), which also runs on every later GPU.
#include "check.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

__global__ void pairs(const __half2 *x, const __half2 *y, __half2 a, __half2 *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    __half2 p = x[i], q = y[i];
    out[8 * i + 0] = __hfma2(a, p, q);
    out[8 * i + 1] = __hadd2(p, q);
    out[8 * i + 2] = __hsub2(p, q);
    out[8 * i + 3] = __hmul2(p, q);
    out[8 * i + 4] = __hmax2(p, q);
    out[8 * i + 5] = __hmin2(p, q);
    out[8 * i + 6] = __hneg2(p);
    out[8 * i + 7] = __habs2(__hsub2(q, p));
}

__global__ void scalars(const __half *x, const __half *y, __half *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    __half p = x[i], q = y[i];
    out[3 * i + 0] = p * q + p;
    out[3 * i + 1] = -(p - q) * __float2half(0.5f);
    out[3 * i + 2] = __hfma(p, q, q) > p ? p : q;
}

__global__ void bf16(const __nv_bfloat162 *x, const __nv_bfloat162 *y, __nv_bfloat162 *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    __nv_bfloat162 p = x[i], q = y[i];
    out[4 * i + 0] = __hfma2(p, q, p);
    out[4 * i + 1] = __hadd2(p, q);
    out[4 * i + 2] = __hmul2(p, q);
    out[4 * i + 3] = __hmax2(__hneg2(p), q);
}

// Atomics on halves: every thread adds exact quarters (all partial sums stay exact), and
// tries to claim a 16-bit slot with compare-and-swap (exactly one wins).
__global__ void atomics(__half2 *acc2, __half *acc, unsigned short *slot, int *winners)
{
    atomicAdd(acc2, __floats2half2_rn(0.25f, -0.5f));
    atomicAdd(acc, __float2half(1.0f));
    if (atomicCAS(slot, (unsigned short)0, (unsigned short)(threadIdx.x + 1)) == 0)
        atomicAdd(winners, 1);
}

// cuda_fp16.h's math functions (their inline asm declares registers as ".reg.b32 f;").
__global__ void math(const __half *x, __half *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    __half v = x[i];
    out[4 * i + 0] = hexp(v);
    out[4 * i + 1] = hsqrt(v);
    out[4 * i + 2] = hlog(v);
    out[4 * i + 3] = __hdiv(v, __float2half(3.0f));
}

static float small(int den)
{
    return (float)((int)(rnd() % 63) - 31) / (float)den;
}

static void want(const char *what, int i, float got, float ref)
{
    if (!same_bits(got, ref))
        mismatch("%s[%d]: got %g want %g", what, i, got, ref);
}

// The GPU's max and min: +0 above -0.
static float hmax(float p, float q)
{
    return p > q || (p == q && !signbit(p)) ? p : q;
}
static float hmin(float p, float q)
{
    return p < q || (p == q && signbit(p)) ? p : q;
}

int main()
{
    prog = "half";
    const int n = 4099;
    __half2 *x = new __half2[n], *y = new __half2[n], *o = new __half2[8 * n];
    __half *sx = new __half[n], *sy = new __half[n], *so = new __half[3 * n];
    __nv_bfloat162 *bx = new __nv_bfloat162[n], *by = new __nv_bfloat162[n],
                   *bo = new __nv_bfloat162[4 * n];
    float fx[n][2], fy[n][2];
    for (int i = 0; i < n; i++)
        for (int h = 0; h < 2; h++) {
            fx[i][h] = small(8);
            fy[i][h] = small(16);
        }
    for (int i = 0; i < n; i++) {
        x[i] = __floats2half2_rn(fx[i][0], fx[i][1]);
        y[i] = __floats2half2_rn(fy[i][0], fy[i][1]);
        sx[i] = __float2half(fx[i][0]);
        sy[i] = __float2half(fy[i][1]);
        bx[i] = __floats2bfloat162_rn(fx[i][0], fx[i][1]);
        by[i] = __floats2bfloat162_rn(fy[i][0], fy[i][1]);
    }
    const float a = 0.375f;
    __half2 *dx, *dy, *dout;
    __half *dsx, *dsy, *dso;
    __nv_bfloat162 *dbx, *dby, *dbo;
    CK(cudaMalloc(&dx, n * sizeof(*x)));
    CK(cudaMalloc(&dy, n * sizeof(*y)));
    CK(cudaMalloc(&dout, 8 * n * sizeof(*o)));
    CK(cudaMalloc(&dsx, n * sizeof(*sx)));
    CK(cudaMalloc(&dsy, n * sizeof(*sy)));
    CK(cudaMalloc(&dso, 3 * n * sizeof(*so)));
    CK(cudaMalloc(&dbx, n * sizeof(*bx)));
    CK(cudaMalloc(&dby, n * sizeof(*by)));
    CK(cudaMalloc(&dbo, 4 * n * sizeof(*bo)));
    CK(cudaMemcpy(dx, x, n * sizeof(*x), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dy, y, n * sizeof(*y), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dsx, sx, n * sizeof(*sx), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dsy, sy, n * sizeof(*sy), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dbx, bx, n * sizeof(*bx), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dby, by, n * sizeof(*by), cudaMemcpyHostToDevice));
    pairs<<<(n + 127) / 128, 128>>>(dx, dy, __float2half2_rn(a), dout, n);
    CK(cudaGetLastError());
    scalars<<<(n + 127) / 128, 128>>>(dsx, dsy, dso, n);
    CK(cudaGetLastError());
    bf16<<<(n + 127) / 128, 128>>>(dbx, dby, dbo, n);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(o, dout, 8 * n * sizeof(*o), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(so, dso, 3 * n * sizeof(*so), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(bo, dbo, 4 * n * sizeof(*bo), cudaMemcpyDeviceToHost));
    static const char *const pname[] = {"__hfma2", "__hadd2", "__hsub2", "__hmul2",
                                        "__hmax2", "__hmin2", "__hneg2", "__habs2"};
    for (int i = 0; i < n; i++)
        for (int h = 0; h < 2; h++) {
            float p = fx[i][h], q = fy[i][h];
            float ref[8] = {a * p + q,  p + q,      p - q, p * q,
                            hmax(p, q), hmin(p, q), -p,    fabsf(q - p)};
            for (int k = 0; k < 8; k++) {
                __half2 r = o[8 * i + k];
                want(pname[k], i, __half2float(h ? __high2half(r) : __low2half(r)), ref[k]);
            }
            float br[4] = {p * q + p, p + q, p * q, hmax(-p, q)};
            static const char *const bname[] = {"bf16 __hfma2", "bf16 __hadd2", "bf16 __hmul2",
                                                "bf16 __hmax2(__hneg2)"};
            for (int k = 0; k < 4; k++) {
                __nv_bfloat162 r = bo[4 * i + k];
                want(bname[k], i, __bfloat162float(h ? __high2bfloat16(r) : __low2bfloat16(r)),
                     __bfloat162float(__float2bfloat16_rn(br[k])));
            }
        }
    for (int i = 0; i < n; i++) {
        float p = fx[i][0], q = fy[i][1];
        float ref[3] = {p * q + p, -(p - q) * 0.5f, p * q + q > p ? p : q};
        static const char *const sname[] = {"p * q + p", "-(p - q) * 0.5", "__hfma > ?:"};
        for (int k = 0; k < 3; k++)
            want(sname[k], i, __half2float(so[3 * i + k]), ref[k]);
    }
    __half2 *acc2;
    __half *acc;
    unsigned short *slot;
    int *winners;
    CK(cudaMalloc(&acc2, sizeof(*acc2)));
    CK(cudaMalloc(&acc, sizeof(*acc)));
    CK(cudaMalloc(&slot, sizeof(*slot)));
    CK(cudaMalloc(&winners, sizeof(*winners)));
    CK(cudaMemset(acc2, 0, sizeof(*acc2)));
    CK(cudaMemset(acc, 0, sizeof(*acc)));
    CK(cudaMemset(slot, 0, sizeof(*slot)));
    CK(cudaMemset(winners, 0, sizeof(*winners)));
    atomics<<<2, 64>>>(acc2, acc, slot, winners);
    CK(cudaGetLastError());
    __half2 h_acc2;
    __half h_acc;
    unsigned short h_slot;
    int h_winners;
    CK(cudaMemcpy(&h_acc2, acc2, sizeof(h_acc2), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&h_acc, acc, sizeof(h_acc), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&h_slot, slot, sizeof(h_slot), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(&h_winners, winners, sizeof(h_winners), cudaMemcpyDeviceToHost));
    if (__low2float(h_acc2) != 32.0f || __high2float(h_acc2) != -64.0f ||
        __half2float(h_acc) != 128.0f || h_slot < 1 || h_slot > 64 || h_winners != 1)
        mismatch("atomics: half2 (%g, %g), half %g, slot %u, %d winners", __low2float(h_acc2),
                 __high2float(h_acc2), __half2float(h_acc), h_slot, h_winners);
    // The math functions are approximations on a GPU: within 1 % of the host's.
    const int nm = 64;
    __half hx[nm], hm[4 * nm], *dmx, *dmo;
    for (int i = 0; i < nm; i++)
        hx[i] = __float2half(0.125f * (float)(i + 1));
    CK(cudaMalloc(&dmx, sizeof(hx)));
    CK(cudaMalloc(&dmo, sizeof(hm)));
    CK(cudaMemcpy(dmx, hx, sizeof(hx), cudaMemcpyHostToDevice));
    math<<<1, nm>>>(dmx, dmo, nm);
    CK(cudaGetLastError());
    CK(cudaMemcpy(hm, dmo, sizeof(hm), cudaMemcpyDeviceToHost));
    for (int i = 0; i < nm; i++) {
        float v = __half2float(hx[i]);
        float ref[4] = {expf(v), sqrtf(v), logf(v), v / 3.0f};
        for (int k = 0; k < 4; k++) {
            float got = __half2float(hm[4 * i + k]);
            if (fabsf(got - ref[k]) > 0.01f * fabsf(ref[k]) + 1e-3f)
                mismatch("half math %d of %g: got %g want %g", k, v, got, ref[k]);
        }
    }
    void *dev[] = {dx, dy, dout, dsx, dsy, dso, dbx, dby, dbo, acc2, acc, slot, winners, dmx, dmo};
    for (void *p : dev)
        CK(cudaFree(p));
    delete[] x;
    delete[] y;
    delete[] o;
    delete[] sx;
    delete[] sy;
    delete[] so;
    delete[] bx;
    delete[] by;
    delete[] bo;
    pass("%d half2, %d half and %d bfloat162 inputs through 15 operations, exact; atomicAdd on "
         "half2 and half, 16-bit atomicCAS; hexp/hsqrt/hlog/__hdiv within 1 %%",
         n, n, n);
    return 0;
}
