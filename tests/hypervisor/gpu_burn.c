/* SPDX-License-Identifier: Apache-2.0
 *
 * gpu_burn: a real CUDA workload for the local demo and the isolation-mode tests. It allocates
 * VRAM, then keeps the GPU busy with the spin_ns kernel of tests/cuda/kernels/timer.cu (each
 * launch spins KERNEL_US on %globaltimer and bumps a device-side counter) for SECONDS, and
 * reports what it got: completed kernels and the GPU-time share they represent, and the memory
 * the driver shows it (under the soft limiter, the VRAM limit is the total).
 *
 * usage: gpu_burn PTX_FILE SECONDS VRAM_MIB [KERNEL_US] [NAME]
 * Output (one line each, for scripts): "NAME vram_total_mib=N vram_alloc_mib=N",
 * "NAME kernels=N seconds=S share_pct=P", or "NAME vram_refused mib=N error=CUDA_ERROR_..."
 * with exit status 3 when the VRAM allocation is refused. With GPU_BURN_SPAWN set, once its
 * VRAM is allocated it runs that shell command (its child, e.g. one that drops the limiter)
 * (without GPU_BURN_SPAWN) and prints "NAME spawned exit=N signal=N" when it ends, then burns. Runs
 * on whichever libcuda.so.1 the library path selects (the real driver or the simulated one).
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int check(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return 0;
    const char *name = NULL;
    cuGetErrorName(r, &name);
    fprintf(stderr, "gpu_burn: %s: %s\n", what, name ? name : "unknown error");
    return 1;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(1 << 22);
    size_t n = buf ? fread(buf, 1, (1 << 22) - 1, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: gpu_burn PTX_FILE SECONDS VRAM_MIB [KERNEL_US] [NAME]\n");
        return 2;
    }
    double seconds = atof(argv[2]);
    size_t mib = (size_t)strtoull(argv[3], NULL, 10);
    unsigned long long kernel_ns = (argc > 4 ? strtoull(argv[4], NULL, 10) : 2000) * 1000ull;
    const char *name = argc > 5 ? argv[5] : "gpu_burn";
    char *ptx = read_file(argv[1]);
    if (!ptx) {
        fprintf(stderr, "gpu_burn: cannot read %s\n", argv[1]);
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    if (check(cuInit(0), "cuInit") || check(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
        check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
        check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent"))
        return 1;
    size_t freeb = 0, total = 0;
    if (check(cuMemGetInfo(&freeb, &total), "cuMemGetInfo"))
        return 1;
    CUdeviceptr buf = 0, done = 0;
    CUresult r = mib ? cuMemAlloc(&buf, mib << 20) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS) {
        const char *en = NULL;
        cuGetErrorName(r, &en);
        printf("%s vram_refused mib=%zu total_mib=%zu error=%s\n", name, mib, total >> 20,
               en ? en : "?");
        fflush(stdout);
        free(ptx);
        return 3;
    }
    printf("%s vram_total_mib=%zu vram_alloc_mib=%zu\n", name, total >> 20, mib);
    fflush(stdout);
    const char *env = getenv("GPU_BURN_SPAWN");
    if (env && *env) {
        /* The command runs once: its own gpu_burn must not inherit it and spawn again (a
         * chain of burners that outlived the test). */
        char *spawn = strdup(env);
        unsetenv("GPU_BURN_SPAWN");
        int st = spawn ? system(spawn) : -1;
        free(spawn);
        printf("%s spawned exit=%d signal=%d\n", name, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
               WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        fflush(stdout);
    }
    if (check(cuModuleLoadData(&mod, ptx), "cuModuleLoadData") ||
        check(cuModuleGetFunction(&fn, mod, "spin_ns"), "cuModuleGetFunction") ||
        check(cuMemAlloc(&done, sizeof(unsigned long long)), "cuMemAlloc(counter)") ||
        check(cuMemsetD8(done, 0, sizeof(unsigned long long)), "cuMemsetD8"))
        return 1;
    double t0 = now_s(), t;
    unsigned long long launched = 0;
    void *params[] = {&kernel_ns, &done};
    while ((t = now_s()) - t0 < seconds) {
        if (check(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL), "cuLaunchKernel"))
            return 1;
        if (++launched % 32 == 0 && check(cuCtxSynchronize(), "cuCtxSynchronize"))
            return 1;
    }
    if (check(cuCtxSynchronize(), "cuCtxSynchronize"))
        return 1;
    double wall = now_s() - t0;
    unsigned long long completed = 0;
    if (check(cuMemcpyDtoH(&completed, done, sizeof(completed)), "cuMemcpyDtoH"))
        return 1;
    printf("%s kernels=%llu seconds=%.2f share_pct=%.1f\n", name, completed, wall,
           100.0 * (double)completed * (double)kernel_ns / 1e9 / wall);
    cuMemFree(done);
    if (buf)
        cuMemFree(buf);
    cuModuleUnload(mod);
    cuDevicePrimaryCtxRelease(dev);
    free(ptx);
    return 0;
}
