// SPDX-License-Identifier: Apache-2.0
// Run-time compilation: a kernel held as a string is compiled with the toolkit's NVRTC for the
// device's architecture, its PTX loaded and launched twice -- through the driver API (the
// classic NVRTC sample: cuModuleLoadDataEx + cuLaunchKernel in the runtime's primary context)
// and through the runtime's library API (cudaLibraryLoadData + cudaLaunchKernel of the
// cudaKernel_t). Built with -lnvrtc -lcuda; results checked bit for bit.
#include "check.h"

#include <cuda.h>
#include <nvrtc.h>

static const char *source = R"(
extern "C" __global__ void saxpy(float a, const float *x, const float *y, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * x[i] + y[i];
}
)";

static void nv_check(nvrtcResult r, const char *what)
{
    if (r != NVRTC_SUCCESS)
        mismatch("%s: %s", what, nvrtcGetErrorString(r));
}

static void cu_check(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        const char *name = NULL;
        cuGetErrorName(r, &name);
        mismatch("%s: %s", what, name ? name : "?");
    }
}

static void check_out(const float *dout, const float *x, const float *y, float a, int n,
                      const char *how)
{
    float *out = new float[n];
    CK(cudaMemcpy(out, dout, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        float want = fmaf(a, x[i], y[i]); // nvcc and NVRTC contract a * x + y
        if (!same_bits(out[i], want))
            mismatch("%s: out[%d] = %.9g, expected %.9g", how, i, out[i], want);
    }
    delete[] out;
}

int main()
{
    prog = "nvrtc";
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    char arch[64];
    snprintf(arch, sizeof(arch), "--gpu-architecture=compute_%d%d", prop.major, prop.minor);
    nvrtcProgram p;
    nv_check(nvrtcCreateProgram(&p, source, "saxpy.cu", 0, NULL, NULL), "nvrtcCreateProgram");
    const char *opts[] = {arch};
    nvrtcResult cr = nvrtcCompileProgram(p, 1, opts);
    if (cr != NVRTC_SUCCESS) {
        size_t n = 0;
        nvrtcGetProgramLogSize(p, &n);
        char *log = new char[n + 1];
        nvrtcGetProgramLog(p, log);
        mismatch("nvrtcCompileProgram(%s): %s: %s", arch, nvrtcGetErrorString(cr), log);
    }
    size_t ptx_size = 0;
    nv_check(nvrtcGetPTXSize(p, &ptx_size), "nvrtcGetPTXSize");
    char *ptx = new char[ptx_size];
    nv_check(nvrtcGetPTX(p, ptx), "nvrtcGetPTX");
    nv_check(nvrtcDestroyProgram(&p), "nvrtcDestroyProgram");

    const int n = 5000;
    float *x = new float[n], *y = new float[n], a = 1.75f;
    for (int i = 0; i < n; i++) {
        x[i] = rndf();
        y[i] = rndf();
    }
    float *dx, *dy, *dout;
    CK(cudaMalloc(&dx, n * sizeof(float)));
    CK(cudaMalloc(&dy, n * sizeof(float)));
    CK(cudaMalloc(&dout, n * sizeof(float)));
    CK(cudaMemcpy(dx, x, n * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dy, y, n * sizeof(float), cudaMemcpyHostToDevice));

    // Driver API in the runtime's primary context (current since the calls above).
    CUmodule mod;
    CUfunction fn;
    char jit_err[1024] = "";
    CUjit_option o[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *ov[] = {jit_err, (void *)(uintptr_t)sizeof(jit_err)};
    CUresult lr = cuModuleLoadDataEx(&mod, ptx, 2, o, ov);
    if (lr != CUDA_SUCCESS)
        mismatch("cuModuleLoadDataEx: %d: %s", (int)lr, jit_err);
    cu_check(cuModuleGetFunction(&fn, mod, "saxpy"), "cuModuleGetFunction");
    int nn = n;
    void *args[] = {&a, &dx, &dy, &dout, &nn};
    cu_check(cuLaunchKernel(fn, (n + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, args, NULL),
             "cuLaunchKernel");
    cu_check(cuCtxSynchronize(), "cuCtxSynchronize");
    check_out(dout, x, y, a, n, "driver API");
    cu_check(cuModuleUnload(mod), "cuModuleUnload");

    // The runtime's library API on the same PTX.
    cudaLibrary_t lib;
    cudaKernel_t k;
    CK(cudaMemset(dout, 0, n * sizeof(float)));
    CK(cudaLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
    CK(cudaLibraryGetKernel(&k, lib, "saxpy"));
    a = -0.5f;
    CK(cudaLaunchKernel((const void *)k, dim3((n + 255) / 256), dim3(256), args, 0, 0));
    CK(cudaDeviceSynchronize());
    check_out(dout, x, y, a, n, "runtime library API");
    CK(cudaLibraryUnload(lib));

    CK(cudaFree(dx));
    CK(cudaFree(dy));
    CK(cudaFree(dout));
    pass("NVRTC %s -> %zu bytes of PTX, run through cuModuleLoadDataEx and cudaLibraryLoadData",
         arch + 19, ptx_size);
    delete[] ptx;
    delete[] x;
    delete[] y;
    return 0;
}
