/* SPDX-License-Identifier: Apache-2.0
 *
 * Benchmark: the simulated GPU's driver overheads. Kernel launch latency (enqueue only, and
 * launch + stream synchronize of an empty grid; the same launches replayed from a captured
 * graph), the cost of a synchronous driver call, a stream-ordered allocation + free, and
 * memcpy / memset bandwidth (host memory is device memory, so these measure the driver's
 * queueing plus the host's memory bandwidth). Launch figures need the PTX engine; without it
 * they are skipped (built without it, or the PTX file is missing). Prints `name: value unit` lines.
 * Usage: bench_sim [PTX_DIR] (default: the source tree's tests/cuda/ptx)
 */
#include <cuda.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *n_ = "?";                                                                  \
            cuGetErrorName(r_, &n_);                                                               \
            fprintf(stderr, "bench_sim: %s: %s\n", #x, n_);                                        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#if TF_SIM_HAVE_PTX
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) == (size_t)n)
        s[n] = 0;
    fclose(f);
    return s;
}
#endif

static void bandwidth(const char *name, CUresult (*op)(void *), void *arg, size_t bytes)
{
    CK(op(arg)); /* warm up: first touch of the pages */
    int reps = 0;
    double t0 = now(), t;
    do {
        CK(op(arg));
        reps++;
    } while ((t = now() - t0) < 0.5 && reps < 200);
    printf("%s: %.2f GB/s\n", name, (double)bytes * reps / t / 1e9);
}

enum { BYTES = 64 << 20 };
static CUdeviceptr da, db;
static void *host;

static CUresult htod(void *a)
{
    return cuMemcpyHtoD(da, host, BYTES);
}
static CUresult dtoh(void *a)
{
    return cuMemcpyDtoH(host, da, BYTES);
}
static CUresult dtod(void *a)
{
    return cuMemcpyDtoD(db, da, BYTES);
}
static CUresult memset32(void *a)
{
    return cuMemsetD32(da, 0x01020304u, BYTES / 4);
}

/* Removes the private state directory and the device files in it. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    char dir[] = "/tmp/tf-bench-sim-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "%s/dev-", dir);
    setenv("TF_SIM_SHM_PREFIX", prefix, 1);
    setenv("TF_SIM_DEVICES", "H100", 1);
    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuCtxCreate(&ctx, NULL, 0, dev));

    /* Synchronous driver call: a 4-byte memset on the legacy stream. */
    CK(cuMemAlloc(&da, BYTES));
    CK(cuMemAlloc(&db, BYTES));
    int n = 20000;
    double t0 = now();
    for (int i = 0; i < n; i++)
        CK(cuMemsetD32(da, (unsigned)i, 1));
    printf("sim_sync_call_latency: %.2f us\n", (now() - t0) / n * 1e6);

    /* A stream-ordered allocation and its free, reused from the pool every time. */
    CUstream as;
    CK(cuStreamCreate(&as, CU_STREAM_NON_BLOCKING));
    n = 20000;
    t0 = now();
    for (int i = 0; i < n; i++) {
        CUdeviceptr p;
        CK(cuMemAllocAsync(&p, 1 << 16, as));
        CK(cuMemFreeAsync(p, as));
    }
    CK(cuStreamSynchronize(as));
    printf("sim_alloc_free_async_latency: %.2f us\n", (now() - t0) / n * 1e6);
    CK(cuStreamDestroy(as));

    host = malloc(BYTES);
    memset(host, 1, BYTES);
    bandwidth("sim_memcpy_htod_bandwidth", htod, NULL, BYTES);
    bandwidth("sim_memcpy_dtoh_bandwidth", dtoh, NULL, BYTES);
    bandwidth("sim_memcpy_dtod_bandwidth", dtod, NULL, BYTES);
    bandwidth("sim_memset_d32_bandwidth", memset32, NULL, BYTES);

#if TF_SIM_HAVE_PTX
    char path[1024];
    snprintf(path, sizeof(path), "%s/vecadd.ptx", argc > 1 ? argv[1] : TF_PTX_DIR);
    char *ptx = slurp(path);
    CUmodule mod;
    CUresult r = ptx ? cuModuleLoadData(&mod, ptx) : CUDA_ERROR_FILE_NOT_FOUND;
    if (r != CUDA_SUCCESS) {
        const char *nm = "?";
        cuGetErrorName(r, &nm);
        fprintf(stderr, "bench_sim: launch figures skipped (%s: %s)\n", path, nm);
    } else {
        CUfunction f;
        CUstream s;
        CK(cuModuleGetFunction(&f, mod, "vecadd"));
        CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        int zero = 0; /* every thread returns at once: the launch path itself */
        void *params[] = {&da, &da, &db, &zero};
        n = 20000;
        t0 = now();
        for (int i = 0; i < n; i++)
            CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
        double enq = now() - t0;
        CK(cuStreamSynchronize(s));
        double all = now() - t0;
        printf("sim_launch_enqueue_latency: %.2f us\n", enq / n * 1e6);
        printf("sim_launch_throughput: %.0f launches/s\n", n / all);
        n = 5000;
        t0 = now();
        for (int i = 0; i < n; i++) {
            CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
            CK(cuStreamSynchronize(s));
        }
        printf("sim_launch_sync_latency: %.2f us\n", (now() - t0) / n * 1e6);
        /* The same empty launches, 10 to a captured graph, replayed. */
        CUgraph g;
        CUgraphExec ge;
        CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
        for (int i = 0; i < 10; i++)
            CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
        CK(cuStreamEndCapture(s, &g));
        CK(cuGraphInstantiate(&ge, g, 0));
        n = 2000;
        t0 = now();
        for (int i = 0; i < n; i++)
            CK(cuGraphLaunch(ge, s));
        enq = now() - t0;
        CK(cuStreamSynchronize(s));
        all = now() - t0;
        printf("sim_graph_launch_enqueue_latency: %.2f us\n", enq / n * 1e6);
        printf("sim_graph_kernel_throughput: %.0f launches/s\n", 10.0 * n / all);
        CK(cuGraphExecDestroy(ge));
        CK(cuGraphDestroy(g));
        CK(cuStreamDestroy(s));
        CK(cuModuleUnload(mod));
    }
    free(ptx);
#else
    fprintf(stderr, "bench_sim: launch figures skipped (built without the PTX engine)\n");
#endif
    free(host);
    CK(cuMemFree(da));
    CK(cuMemFree(db));
    CK(cuCtxDestroy(ctx));
    remove_dir(dir);
    return 0;
}
