/* SPDX-License-Identifier: Apache-2.0
 *
 * Instruction coverage (kernels/isa.cu): shared-memory atomics min/max/exch/CAS on 32 and
 * 64 bits (the counters in dynamic shared memory), v2/v4 loads and stores on global and
 * shared memory, %clock64, and rcp/sqrt/ex2/lg2/sin/cos.approx.f32. Exact results are checked
 * bit for bit; %clock64 must advance over work; the approximations must lie within the PTX
 * ISA's documented error bounds (loosened a little: the hardware's own answers are not
 * bit-identical to the simulator's, both must be inside the bounds).
 * Usage: isa isa.ptx
 */
#include "hostcommon.h"

#include <limits.h>
#include <math.h>

#define BLOCK 128

static void shared_atomics(CUmodule mod)
{
    enum { N = 1000, NB = (N + BLOCK - 1) / BLOCK };
    int in[N], oi[NB * 4];
    unsigned long long ou[NB * 4];
    for (int i = 0; i < N; i++)
        in[i] = (int)host_rand();
    CUfunction f;
    CUdeviceptr din, doi, dou;
    CK(cuModuleGetFunction(&f, mod, "shared_atomics"));
    CK(cuMemAlloc(&din, sizeof(in)));
    CK(cuMemAlloc(&doi, sizeof(oi)));
    CK(cuMemAlloc(&dou, sizeof(ou)));
    CK(cuMemcpyHtoD(din, in, sizeof(in)));
    int n = N;
    void *p[] = {&din, &n, &doi, &dou};
    CK(cuLaunchKernel(f, NB, 1, 1, BLOCK, 1, 1, 4 * sizeof(int), NULL, p, NULL));
    CK(cuMemcpyDtoH(oi, doi, sizeof(oi)));
    CK(cuMemcpyDtoH(ou, dou, sizeof(ou)));
    for (int b = 0; b < NB; b++) {
        int lo = b * BLOCK, hi = lo + BLOCK < N ? lo + BLOCK : N, mn = INT_MAX, mx = INT_MIN;
        unsigned long long umx = 0, umn = ~0ull, sum = 0;
        int exch_ok = 0, uexch_ok = 0;
        for (int i = lo; i < hi; i++) {
            unsigned long long w = (unsigned long long)(unsigned)in[i] << 20 | (unsigned)i;
            mn = in[i] < mn ? in[i] : mn;
            mx = in[i] > mx ? in[i] : mx;
            umx = w > umx ? w : umx;
            umn = w < umn ? w : umn;
            sum += w;
            exch_ok |= oi[b * 4 + 2] == in[i];
            uexch_ok |= ou[b * 4 + 2] == w;
        }
        if (oi[b * 4] != mn || oi[b * 4 + 1] != mx)
            host_mismatch("block %d: shared atomicMin/Max = %d/%d, want %d/%d", b, oi[b * 4],
                          oi[b * 4 + 1], mn, mx);
        if (!exch_ok || !uexch_ok)
            host_mismatch("block %d: shared atomicExch left a value no thread wrote", b);
        if (oi[b * 4 + 3] != hi - lo)
            host_mismatch("block %d: shared atomicCAS counter = %d, want %d", b, oi[b * 4 + 3],
                          hi - lo);
        if (ou[b * 4] != umx || ou[b * 4 + 1] != umn || ou[b * 4 + 3] != sum)
            host_mismatch("block %d: 64-bit shared max/min/CAS-sum = %llx/%llx/%llx, want "
                          "%llx/%llx/%llx",
                          b, ou[b * 4], ou[b * 4 + 1], ou[b * 4 + 3], umx, umn, sum);
    }
    CK(cuMemFree(din));
    CK(cuMemFree(doi));
    CK(cuMemFree(dou));
}

static void vectors(CUmodule mod)
{
    enum { N = 250 }; /* the last block is partial */
    float in4[N * 4], out2[N * 4];
    double ind[N * 2], outd[N * 2];
    int outi[N * 4];
    for (int i = 0; i < N * 4; i++)
        in4[i] = host_randf() * 100.0f;
    for (int i = 0; i < N * 2; i++)
        ind[i] = (double)host_randf() * 1e10;
    CUfunction f;
    CUdeviceptr d4, dd, d2, di, dod;
    CK(cuModuleGetFunction(&f, mod, "vectors"));
    CK(cuMemAlloc(&d4, sizeof(in4)));
    CK(cuMemAlloc(&dd, sizeof(ind)));
    CK(cuMemAlloc(&d2, sizeof(out2)));
    CK(cuMemAlloc(&di, sizeof(outi)));
    CK(cuMemAlloc(&dod, sizeof(outd)));
    CK(cuMemcpyHtoD(d4, in4, sizeof(in4)));
    CK(cuMemcpyHtoD(dd, ind, sizeof(ind)));
    int n = N;
    void *p[] = {&d4, &dd, &d2, &di, &dod, &n};
    CK(cuLaunchKernel(f, (N + BLOCK - 1) / BLOCK, 1, 1, BLOCK, 1, 1, 0, NULL, p, NULL));
    CK(cuMemcpyDtoH(out2, d2, sizeof(out2)));
    CK(cuMemcpyDtoH(outi, di, sizeof(outi)));
    CK(cuMemcpyDtoH(outd, dod, sizeof(outd)));
    for (int i = 0; i < N; i++) {
        int t = i % BLOCK, j = i - t + (t ^ 1); /* the neighbour, 0 beyond the end */
        float w[4] = {0, 0, 0, 0};
        if (j < N)
            memcpy(w, in4 + 4 * j, sizeof(w));
        float want[4] = {w[0] + w[3], w[1] - w[2], in4[4 * i + 2], in4[4 * i + 3]};
        int wanti[4] = {(int)host_bits(w[0]), i, -i, t};
        for (int k = 0; k < 4; k++)
            if (host_bits(out2[4 * i + k]) != host_bits(want[k]) || outi[4 * i + k] != wanti[k])
                host_mismatch("vectors[%d].%d: %a / %d, want %a / %d", i, k,
                              (double)out2[4 * i + k], outi[4 * i + k], (double)want[k], wanti[k]);
        if (outd[2 * i] != ind[2 * i + 1] || outd[2 * i + 1] != ind[2 * i] * 2.0)
            host_mismatch("vectors[%d]: double2 %a %a", i, outd[2 * i], outd[2 * i + 1]);
    }
    CK(cuMemFree(d4));
    CK(cuMemFree(dd));
    CK(cuMemFree(d2));
    CK(cuMemFree(di));
    CK(cuMemFree(dod));
}

static void clocks(CUmodule mod)
{
    enum { T = 64 };
    long long out[T * 3];
    CUfunction f;
    CUdeviceptr d;
    CK(cuModuleGetFunction(&f, mod, "clocks"));
    CK(cuMemAlloc(&d, sizeof(out)));
    int spins = 2000;
    void *p[] = {&d, &spins};
    CK(cuLaunchKernel(f, 2, 1, 1, T / 2, 1, 1, 0, NULL, p, NULL));
    CK(cuMemcpyDtoH(out, d, sizeof(out)));
    for (int i = 0; i < T; i++) {
        unsigned x = (unsigned)i;
        for (int k = 0; k < spins; k++)
            x = x * 1664525u + 1013904223u;
        if (out[i * 3 + 1] <= out[i * 3])
            host_mismatch("thread %d: %%clock64 went from %lld to %lld over %d steps", i,
                          out[i * 3], out[i * 3 + 1], spins);
        if ((unsigned)out[i * 3 + 2] != x)
            host_mismatch("thread %d: the timed work computed %u, want %u", i,
                          (unsigned)out[i * 3 + 2], x);
    }
    CK(cuMemFree(d));
}

/* |got - want| <= tol, with TOL absolute when ABS else relative to |want| */
static void within(const char *what, double x, double got, double want, double tol, int absolute)
{
    double bound = absolute ? tol : tol * fabs(want);
    if (!(fabs(got - want) <= bound))
        host_mismatch("%s(%a) = %a, want %a within %g%s", what, x, got, want, tol,
                      absolute ? "" : " relative");
}

static void approximations(CUmodule mod)
{
    enum { N = 1024 };
    float in[N], out[N * 6];
    for (int i = 0; i < N; i++)
        in[i] = host_randf() * 3.14159f;
    CUfunction f;
    CUdeviceptr din, dout;
    CK(cuModuleGetFunction(&f, mod, "approx"));
    CK(cuMemAlloc(&din, sizeof(in)));
    CK(cuMemAlloc(&dout, sizeof(out)));
    CK(cuMemcpyHtoD(din, in, sizeof(in)));
    int n = N;
    void *p[] = {&din, &dout, &n};
    CK(cuLaunchKernel(f, N / BLOCK, 1, 1, BLOCK, 1, 1, 0, NULL, p, NULL));
    CK(cuMemcpyDtoH(out, dout, sizeof(out)));
    for (int i = 0; i < N; i++) {
        double x = in[i], ax = (double)(fabsf(in[i]) + 0.5f);
        const float *o = out + i * 6;
        /* rcp: 1 ulp over the full range */
        double r = 1.0 / x, ulp = ldexp(1.0, ilogb(r) - 23);
        within("rcp.approx.f32", x, o[0], r, ulp, 1);
        within("sqrt.approx.f32", ax, o[1], sqrt(ax), ldexp(1, -21), 0);
        within("ex2.approx.f32", x, o[2], exp2(x), ldexp(1, -21), 0);
        double l2 = log2(ax);
        within("lg2.approx.f32", ax, o[3], l2, ldexp(1, -21) * fmax(1.0, fabs(l2)), 1);
        within("sin.approx.f32", x, o[4], sin(x), ldexp(1, -20), 1);
        within("cos.approx.f32", x, o[5], cos(x), ldexp(1, -20), 1);
    }
    CK(cuMemFree(din));
    CK(cuMemFree(dout));
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod = host_setup("isa", argc, argv, &dev);
    shared_atomics(mod);
    vectors(mod);
    clocks(mod);
    approximations(mod);
    host_teardown(mod, dev);
    printf("isa: PASS shared atomics, v2/v4 accesses, clock64 exact; approximations in bounds\n");
    return 0;
}
