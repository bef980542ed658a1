/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only: a CUDA driver-API program run under LD_PRELOAD=libtf_limiter.so by
 * test_limiter (against the fake driver) and the simulated-GPU tests. It links libcuda.so.1
 * like an ordinary app; NVML and the cuGetProcAddress path go through dlopen/dlsym the way
 * CUDA runtimes do. One scenario per run (argv[1]); results are printed as key=value lines,
 * failures exit non-zero with a message.
 *   vram                 allocation entry points against the limit, rollback, memory info
 *   meminfo              cuMemGetInfo / cuDeviceTotalMem of device 0
 *   procaddr             cuMemAlloc resolved via dlsym("cuGetProcAddress") + cuGetProcAddress
 *   hold MIB [SECS]      allocate MIB on device 0, print held=1, sleep (default 30 s)
 *   fill CHUNK_MIB       allocate CHUNK_MIB blocks until OOM, print how many
 *   devices              device count and UUIDs
 *   nvml                 NVML device count and memory info (dlopen libnvidia-ml.so.1)
 *   launch N [PTX]       N launches (of spin_ns from PTX if given, else a NULL function)
 *   graph K N            a graph of K kernel nodes launched N times
 *   ordered              stream-ordered, pool, managed and graph allocations against the
 *                        limit (graph memory: counted from instantiation to destruction,
 *                        not while captured)
 *   rollback             a driver-side allocation failure (fake driver fault) gives the
 *                        reservation back
 *   fillslow CHUNK MS N  N attempts, one every MS ms, to allocate CHUNK MiB; prints ok=count
 *   load PTX NS SECS DEPTH [BURST GAP_US [WARM_S]]
 *                        keeps DEPTH launches of spin_ns(NS) in flight, unsynchronised
 *                        (an event per launch, waited for DEPTH launches later), for SECS;
 *                        with BURST > 0, after every BURST launches it synchronises the
 *                        stream and sleeps GAP_US (bursts with idle gaps, as an inference
 *                        server's requests); with WARM_S > 0 the same load runs WARM_S
 *                        seconds first. Prints "load: running" when the measured SECS
 *                        start, then launched= and completed= (the device-side counter) of
 *                        the measured run, warm_launched= and launched_sN= (the
 *                        launches of each whole second of the measured run)
 *   modvars              modules whose __device__ arrays (600 MiB, 2 GiB) the VRAM limit must
 *                        count: over= load= free= alloc= alloc_after_unload=
 *   timing N             N x (cuLaunchKernel of spin_ns(0) from PTX in $LIM_PTX) and N x
 *                        (cuMemAlloc 4 KiB + cuMemFree); prints launch_ns= alloc_free_ns=
 *                        per call (benchmark helper)
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#undef cuGetProcAddress

#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include "sim/nvml_abi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MiB (1ull << 20)

static void die(const char *what, CUresult rc)
{
    const char *name = "?";
    cuGetErrorName(rc, &name);
    fprintf(stderr, "lim_host: %s: %s (%d)\n", what, name, (int)rc);
    exit(1);
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        CUresult rc_ = (call);                                                                     \
        if (rc_ != CUDA_SUCCESS)                                                                   \
            die(#call, rc_);                                                                       \
    } while (0)

static CUcontext setup(void)
{
    CUdevice d;
    CUcontext c;
    CK(cuInit(0));
    CK(cuDeviceGet(&d, 0));
    CK(cuDevicePrimaryCtxRetain(&c, d));
    CK(cuCtxSetCurrent(c));
    return c;
}

static const char *errname(CUresult rc)
{
    const char *n = "?";
    cuGetErrorName(rc, &n);
    return n;
}

static int scenario_vram(void)
{
    setup();
    size_t free0, total;
    CK(cuMemGetInfo(&free0, &total));
    printf("total=%zu\nfree=%zu\n", total, free0);
    /* Beyond the limit fails, and the app keeps working. */
    CUdeviceptr big;
    CUresult rc = cuMemAlloc(&big, total + MiB);
    printf("over_limit=%s\n", errname(rc));
    CUdeviceptr a, b, m, p;
    CK(cuMemAlloc(&a, total / 4));
    CK(cuMemAllocManaged(&m, total / 4, CU_MEM_ATTACH_GLOBAL));
    size_t pitch;
    CK(cuMemAllocPitch(&p, &pitch, 1000, 1024, 4));
    size_t f1, t1;
    CK(cuMemGetInfo(&f1, &t1));
    printf("used_after_three=%zu\npitch=%zu\n", free0 - f1, pitch);
    rc = cuMemAlloc(&b, total / 2);
    printf("half_more=%s\n", errname(rc));
    CK(cuMemFree(a));
    CK(cuMemAlloc(&b, total / 4));
    CK(cuMemFree(b));
    CK(cuMemFree(m));
    CK(cuMemFree(p));
    size_t f2, t2;
    CK(cuMemGetInfo(&f2, &t2));
    printf("free_at_end=%zu\n", f2);
    return 0;
}

static int scenario_meminfo(void)
{
    setup();
    size_t free, total, dtotal;
    CUdevice d;
    CK(cuMemGetInfo(&free, &total));
    CK(cuDeviceGet(&d, 0));
    CK(cuDeviceTotalMem(&dtotal, d));
    printf("free=%zu\ntotal=%zu\ndevice_total=%zu\n", free, total, dtotal);
    return 0;
}

static int scenario_procaddr(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "lim_host: dlopen: %s\n", dlerror());
        return 1;
    }
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
        (CUresult(*)(const char *, void **, int, cuuint64_t,
                     CUdriverProcAddressQueryResult *))dlsym(h, "cuGetProcAddress_v2");
    if (!gpa) {
        fprintf(stderr, "lim_host: no cuGetProcAddress_v2\n");
        return 1;
    }
    CUresult (*init)(unsigned) = NULL;
    CUresult (*alloc)(CUdeviceptr *, size_t) = NULL;
    CUresult (*info)(size_t *, size_t *) = NULL;
    CUdriverProcAddressQueryResult st;
    CK(gpa("cuInit", (void **)&init, 12000, 0, &st));
    CK(gpa("cuMemAlloc", (void **)&alloc, 12000, 0, &st));
    CK(gpa("cuMemGetInfo", (void **)&info, 12000, 0, &st));
    CK(init(0));
    CUdevice d;
    CUcontext c;
    CK(cuDeviceGet(&d, 0));
    CK(cuDevicePrimaryCtxRetain(&c, d));
    CK(cuCtxSetCurrent(c));
    size_t free, total;
    CK(info(&free, &total));
    CUdeviceptr p;
    printf("total=%zu\n", total);
    printf("over_limit=%s\n", errname(alloc(&p, total + MiB)));
    printf("within=%s\n", errname(alloc(&p, total / 2)));
    printf("same_as_dlsym=%d\n", (void *)alloc == dlsym(h, "cuMemAlloc_v2"));
    return 0;
}

static int scenario_hold(int argc, char **argv)
{
    setup();
    unsigned long mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 1;
    int secs = argc > 3 ? atoi(argv[3]) : 30;
    CUdeviceptr p;
    CUresult rc = cuMemAlloc(&p, mib * MiB);
    printf("held=%d\nrc=%s\n", rc == CUDA_SUCCESS, errname(rc));
    fflush(stdout);
    sleep((unsigned)secs);
    return 0;
}

static int scenario_fill(int argc, char **argv)
{
    setup();
    unsigned long mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
    int n = 0;
    CUdeviceptr p;
    while (n < 100000 && cuMemAlloc(&p, mib * MiB) == CUDA_SUCCESS)
        n++;
    printf("chunks=%d\n", n);
    return 0;
}

static int scenario_rollback(void)
{
    setup();
    size_t free0, free1, total;
    CK(cuMemGetInfo(&free0, &total));
    CUdeviceptr p;
    CUresult rc = cuMemAlloc(&p, 64 * MiB);
    CK(cuMemGetInfo(&free1, &total));
    printf("first=%s\nfree_unchanged=%d\n", errname(rc), free0 == free1);
    printf("second=%s\n", errname(cuMemAlloc(&p, 64 * MiB)));
    return 0;
}

static int scenario_fillslow(int argc, char **argv)
{
    setup();
    unsigned long mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 64;
    long ms = argc > 3 ? atol(argv[3]) : 100;
    int n = argc > 4 ? atoi(argv[4]) : 10, ok = 0;
    for (int i = 0; i < n; i++) {
        CUdeviceptr p;
        if (cuMemAlloc(&p, mib * MiB) == CUDA_SUCCESS)
            ok++;
        printf("step%d=%d\n", i, ok);
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    printf("ok=%d\n", ok);
    return 0;
}

static int scenario_devices(void)
{
    CK(cuInit(0));
    int n;
    CK(cuDeviceGetCount(&n));
    printf("count=%d\n", n);
    for (int i = 0; i < n; i++) {
        CUdevice d;
        CUuuid u;
        CK(cuDeviceGet(&d, i));
        CK(cuDeviceGetUuid(&u, d));
        printf("uuid%d=", i);
        for (int k = 0; k < 16; k++)
            printf("%02x", (unsigned char)u.bytes[k]);
        printf("\n");
    }
    CUdevice d;
    printf("beyond=%s\n", errname(cuDeviceGet(&d, n)));
    return 0;
}

static int scenario_nvml(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "lim_host: dlopen nvml: %s\n", dlerror());
        return 1;
    }
    nvmlReturn_t (*init)(void) = (nvmlReturn_t(*)(void))dlsym(h, "nvmlInit_v2");
    nvmlReturn_t (*count)(unsigned *) =
        (nvmlReturn_t(*)(unsigned *))dlsym(h, "nvmlDeviceGetCount_v2");
    nvmlReturn_t (*byidx)(unsigned, nvmlDevice_t *) =
        (nvmlReturn_t(*)(unsigned, nvmlDevice_t *))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    nvmlReturn_t (*meminfo)(nvmlDevice_t, nvmlMemory_t *) =
        (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *))dlsym(h, "nvmlDeviceGetMemoryInfo");
    nvmlReturn_t (*meminfo2)(nvmlDevice_t, nvmlMemory_v2_t *) =
        (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_v2_t *))dlsym(h, "nvmlDeviceGetMemoryInfo_v2");
    if (!init || !count || !byidx || !meminfo || init() != NVML_SUCCESS) {
        fprintf(stderr, "lim_host: NVML entry points missing\n");
        return 1;
    }
    unsigned n = 0;
    count(&n);
    printf("nvml_count=%u\n", n);
    for (unsigned i = 0; i < n; i++) {
        nvmlDevice_t d;
        nvmlMemory_t m;
        if (byidx(i, &d) != NVML_SUCCESS || meminfo(d, &m) != NVML_SUCCESS)
            return 1;
        printf("nvml_total%u=%llu\nnvml_used%u=%llu\nnvml_free%u=%llu\n", i, m.total, i, m.used, i,
               m.free);
        if (meminfo2) {
            nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
            if (meminfo2(d, &m2) == NVML_SUCCESS)
                printf("nvml2_total%u=%llu\nnvml2_used%u=%llu\n", i, m2.total, i, m2.used);
        }
    }
    return 0;
}

/* Optional driver functions (not every driver has them): looked up at run time. */
static void *sym(const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    if (!p) {
        fprintf(stderr, "lim_host: the driver has no %s\n", name);
        exit(1);
    }
    return p;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int scenario_launch(int argc, char **argv)
{
    setup();
    long n = argc > 2 ? atol(argv[2]) : 100;
    CUfunction f = NULL;
    CUdeviceptr done = 0;
    unsigned long long ns = 1000;
    void *params[2] = {&ns, &done};
    if (argc > 3) {
        FILE *fp = fopen(argv[3], "rb");
        if (!fp)
            return 1;
        static char ptx[1 << 20];
        size_t len = fread(ptx, 1, sizeof(ptx) - 1, fp);
        fclose(fp);
        ptx[len] = 0;
        CUmodule mod;
        CUresult (*load)(CUmodule *, const void *) =
            (CUresult(*)(CUmodule *, const void *))sym("cuModuleLoadData");
        CUresult (*getf)(CUfunction *, CUmodule, const char *) =
            (CUresult(*)(CUfunction *, CUmodule, const char *))sym("cuModuleGetFunction");
        CK(load(&mod, ptx));
        CK(getf(&f, mod, "spin_ns"));
        CK(cuMemAlloc(&done, 8));
    }
    double t0 = now_s();
    for (long i = 0; i < n; i++)
        CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    double t1 = now_s();
    printf("launches=%ld\nseconds=%.3f\n", n, t1 - t0);
    return 0;
}

static CUfunction load_spin(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "lim_host: cannot read %s\n", path);
        exit(2);
    }
    static char ptx[1 << 20];
    size_t len = fread(ptx, 1, sizeof(ptx) - 1, fp);
    fclose(fp);
    ptx[len] = 0;
    CUmodule mod;
    CUfunction f;
    CUresult (*load)(CUmodule *, const void *) =
        (CUresult(*)(CUmodule *, const void *))sym("cuModuleLoadData");
    CUresult (*getf)(CUfunction *, CUmodule, const char *) =
        (CUresult(*)(CUfunction *, CUmodule, const char *))sym("cuModuleGetFunction");
    CK(load(&mod, ptx));
    CK(getf(&f, mod, "spin_ns"));
    return f;
}

static int scenario_load(int argc, char **argv)
{
    if (argc < 6)
        return 2;
    setup();
    CUfunction f = load_spin(argv[2]);
    unsigned long long ns = strtoull(argv[3], NULL, 10);
    double secs = atof(argv[4]);
    int depth = atoi(argv[5]);
    if (depth < 1 || depth > 64)
        depth = 4;
    long burst = argc > 6 ? atol(argv[6]) : 0;    /* 0: one continuous stream */
    long gap_us = argc > 7 ? atol(argv[7]) : 0;   /* idle after each burst */
    double warm = argc > 8 ? atof(argv[8]) : 0.0; /* the same load before "running" */
    CUresult (*ev_create)(CUevent *, unsigned) =
        (CUresult(*)(CUevent *, unsigned))sym("cuEventCreate");
    CUresult (*ev_record)(CUevent, CUstream) = (CUresult(*)(CUevent, CUstream))sym("cuEventRecord");
    CUresult (*ev_sync)(CUevent) = (CUresult(*)(CUevent))sym("cuEventSynchronize");
    CUresult (*st_create)(CUstream *, unsigned) =
        (CUresult(*)(CUstream *, unsigned))sym("cuStreamCreate");
    CUresult (*st_sync)(CUstream) = (CUresult(*)(CUstream))sym("cuStreamSynchronize");
    CUresult (*memset32)(CUdeviceptr, unsigned, size_t) =
        (CUresult(*)(CUdeviceptr, unsigned, size_t))sym("cuMemsetD32_v2");
    CUresult (*dtoh)(void *, CUdeviceptr, size_t) =
        (CUresult(*)(void *, CUdeviceptr, size_t))sym("cuMemcpyDtoH_v2");
    CUdeviceptr done;
    CK(cuMemAlloc(&done, 8));
    CK(memset32(done, 0, 2));
    CUstream s;
    CK(st_create(&s, 0));
    CUevent ev[64];
    for (int i = 0; i < depth; i++)
        CK(ev_create(&ev[i], 0));
    void *params[] = {&ns, &done};
    /* Launches per whole second of the measured run (the first seconds show a cold start). */
    enum { MAXSEC = 64 };
    long per_s[MAXSEC] = {0};
    long i = 0, measured_from = 0;
    unsigned long long base = 0;
    int warming = warm > 0;
    double t0 = now_s(), end = t0 + (warming ? warm : secs);
    if (!warming)
        printf("load: running\n");
    for (;;) {
        double now = now_s();
        if (now >= end) {
            if (!warming)
                break;
            /* Warm-up over: the measured run starts here, on an idle stream. */
            warming = 0;
            measured_from = i;
            CK(st_sync(s));
            CK(dtoh(&base, done, 8));
            now = now_s();
            t0 = now;
            end = now + secs;
            printf("load: running\n");
        }
        int slot = (int)(i % depth);
        if (i >= depth)
            CK(ev_sync(ev[slot]));
        CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
        CK(ev_record(ev[slot], s));
        i++;
        if (!warming) {
            long sec = (long)(now - t0);
            if (sec >= 0 && sec < MAXSEC)
                per_s[sec]++;
        }
        if (burst > 0 && i % burst == 0) {
            /* End of a burst: wait for its result, then stay idle. */
            CK(st_sync(s));
            if (gap_us > 0) {
                struct timespec ts = {gap_us / 1000000, (gap_us % 1000000) * 1000};
                nanosleep(&ts, NULL);
            }
        }
    }
    CK(st_sync(s));
    unsigned long long got = 0;
    CK(dtoh(&got, done, 8));
    printf("launched=%ld\ncompleted=%llu\nwarm_launched=%ld\n", i - measured_from, got - base,
           measured_from);
    for (int k = 0; k < MAXSEC && k < (int)secs + 1; k++)
        printf("launched_s%d=%ld\n", k + 1, per_s[k]);
    return 0;
}

static int scenario_timing(int argc, char **argv)
{
    setup();
    long n = argc > 2 ? atol(argv[2]) : 20000;
    const char *ptx = getenv("LIM_PTX");
    CUfunction f = ptx ? load_spin(ptx) : NULL;
    CUresult (*st_sync)(CUstream) = (CUresult(*)(CUstream))sym("cuStreamSynchronize");
    CUdeviceptr done;
    CK(cuMemAlloc(&done, 8));
    unsigned long long ns = 0;
    void *params[] = {&ns, &done};
    /* Warm-up, then the timed loop; the queue is drained every 64 launches so the timing
     * is the call path, not a growing queue. */
    for (int i = 0; i < 256; i++)
        CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
    CK(st_sync(NULL));
    double launch_s = 0;
    for (long i = 0; i < n; i += 64) {
        double t0 = now_s();
        for (int k = 0; k < 64; k++)
            CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
        launch_s += now_s() - t0;
        CK(st_sync(NULL));
    }
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        CUdeviceptr p;
        CK(cuMemAlloc(&p, 4096));
        CK(cuMemFree(p));
    }
    double alloc_s = now_s() - t0;
    long launched = (n + 63) / 64 * 64;
    printf("launch_ns=%.1f\nalloc_free_ns=%.1f\n", launch_s * 1e9 / (double)launched,
           alloc_s * 1e9 / (double)n);
    return 0;
}

static int scenario_graph(int argc, char **argv)
{
    setup();
    int k = argc > 2 ? atoi(argv[2]) : 4, n = argc > 3 ? atoi(argv[3]) : 10;
    CUresult (*create)(CUgraph *, unsigned) =
        (CUresult(*)(CUgraph *, unsigned))sym("cuGraphCreate");
    CUresult (*add)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                    const CUDA_KERNEL_NODE_PARAMS *) =
        (CUresult(*)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                     const CUDA_KERNEL_NODE_PARAMS *))sym("cuGraphAddKernelNode_v2");
    CUresult (*inst)(CUgraphExec *, CUgraph, unsigned long long) =
        (CUresult(*)(CUgraphExec *, CUgraph, unsigned long long))sym("cuGraphInstantiateWithFlags");
    CUresult (*launch)(CUgraphExec, CUstream) =
        (CUresult(*)(CUgraphExec, CUstream))sym("cuGraphLaunch");
    CUresult (*destroy)(CUgraphExec) = (CUresult(*)(CUgraphExec))sym("cuGraphExecDestroy");
    CUresult (*gdestroy)(CUgraph) = (CUresult(*)(CUgraph))sym("cuGraphDestroy");
    CUgraph g;
    CK(create(&g, 0));
    CUDA_KERNEL_NODE_PARAMS kp;
    memset(&kp, 0, sizeof(kp));
    for (int i = 0; i < k; i++) {
        CUgraphNode node;
        CK(add(&node, g, NULL, 0, &kp));
    }
    CUgraphExec e;
    CK(inst(&e, g, 0));
    double t0 = now_s();
    for (int i = 0; i < n; i++)
        CK(launch(e, NULL));
    printf("graph_launches=%d\nseconds=%.3f\n", n, now_s() - t0);
    CK(destroy(e));
    CK(gdestroy(g));
    return 0;
}

/* A module whose only content is one __device__ array of N bytes. */
static const char *array_module(unsigned long long n)
{
    static char ptx[256];
    snprintf(ptx, sizeof(ptx),
             ".version 8.0\n.target sm_80\n.address_size 64\n"
             ".visible .global .align 4 .b8 big[%llu];\n",
             n);
    return ptx;
}

static int scenario_modvars(void)
{
    setup();
    CUresult (*load)(CUmodule *, const void *) =
        (CUresult(*)(CUmodule *, const void *))sym("cuModuleLoadData");
    CUresult (*unload)(CUmodule) = (CUresult(*)(CUmodule))sym("cuModuleUnload");
    CUmodule m;
    CUdeviceptr p;
    printf("over=%s\n", errname(load(&m, array_module(2048 * MiB))));
    CUresult rc = load(&m, array_module(600 * MiB));
    printf("load=%s\n", errname(rc));
    if (rc)
        return 1;
    size_t fr, tot;
    CK(cuMemGetInfo(&fr, &tot));
    printf("free=%zu\n", fr);
    printf("alloc=%s\n", errname(cuMemAlloc(&p, 600 * MiB)));
    CK(unload(m));
    rc = cuMemAlloc(&p, 600 * MiB);
    printf("alloc_after_unload=%s\n", errname(rc));
    if (rc == CUDA_SUCCESS)
        CK(cuMemFree(p));
    return 0;
}

/* Resolves NAME as the PFN_ type T (the entry points lim_host uses with the fake driver
 * too are linked; these are looked up, so the program loads where they are missing). */
#define SYM(T, name) ((T)sym(name))

static size_t used_now(size_t free0)
{
    size_t f, t;
    CK(cuMemGetInfo(&f, &t));
    return free0 - f;
}

static int scenario_ordered(void)
{
    setup();
    PFN_cuMemAllocAsync_v11020 alloc = SYM(PFN_cuMemAllocAsync_v11020, "cuMemAllocAsync");
    PFN_cuMemFreeAsync_v11020 freea = SYM(PFN_cuMemFreeAsync_v11020, "cuMemFreeAsync");
    PFN_cuMemPoolCreate_v11020 pcreate = SYM(PFN_cuMemPoolCreate_v11020, "cuMemPoolCreate");
    PFN_cuMemPoolDestroy_v11020 pdestroy = SYM(PFN_cuMemPoolDestroy_v11020, "cuMemPoolDestroy");
    PFN_cuMemAllocFromPoolAsync_v11020 palloc =
        SYM(PFN_cuMemAllocFromPoolAsync_v11020, "cuMemAllocFromPoolAsync");
    PFN_cuStreamBeginCapture_v10010 begin =
        SYM(PFN_cuStreamBeginCapture_v10010, "cuStreamBeginCapture_v2");
    PFN_cuStreamEndCapture_v10000 end = SYM(PFN_cuStreamEndCapture_v10000, "cuStreamEndCapture");
    PFN_cuGraphInstantiateWithFlags_v11040 inst =
        SYM(PFN_cuGraphInstantiateWithFlags_v11040, "cuGraphInstantiateWithFlags");
    PFN_cuGraphLaunch_v10000 launch = SYM(PFN_cuGraphLaunch_v10000, "cuGraphLaunch");
    PFN_cuGraphExecDestroy_v10000 edestroy =
        SYM(PFN_cuGraphExecDestroy_v10000, "cuGraphExecDestroy");
    PFN_cuGraphDestroy_v10000 gdestroy = SYM(PFN_cuGraphDestroy_v10000, "cuGraphDestroy");
    PFN_cuStreamCreate_v2000 screate = SYM(PFN_cuStreamCreate_v2000, "cuStreamCreate");
    PFN_cuStreamDestroy_v4000 sdestroy = SYM(PFN_cuStreamDestroy_v4000, "cuStreamDestroy_v2");
    PFN_cuMemsetD8Async_v3020 memset8 = SYM(PFN_cuMemsetD8Async_v3020, "cuMemsetD8Async");
    size_t free0, total;
    CK(cuMemGetInfo(&free0, &total));
    printf("total=%zu\n", total);
    CUstream s;
    CK(screate(&s, CU_STREAM_NON_BLOCKING));
    CUdeviceptr a, b;
    /* Stream-ordered and pool allocations. */
    printf("async_over=%s\n", errname(alloc(&b, total + MiB, s)));
    CK(alloc(&a, total / 2, s));
    printf("async_used=%zu\n", used_now(free0));
    printf("async_more=%s\n", errname(alloc(&b, total / 2 + MiB, s)));
    CK(freea(a, s));
    CK(cuStreamSynchronize(s));
    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CUmemoryPool pool;
    CK(pcreate(&pool, &props));
    printf("pool_over=%s\n", errname(palloc(&b, total + MiB, pool, s)));
    CK(palloc(&a, total / 4, pool, s));
    printf("pool_used=%zu\n", used_now(free0));
    CK(freea(a, s));
    CK(cuStreamSynchronize(s));
    CK(pdestroy(pool));
    /* Managed memory. */
    printf("managed_over=%s\n", errname(cuMemAllocManaged(&b, total + MiB, CU_MEM_ATTACH_GLOBAL)));
    /* Graph memory: a captured allocation is not counted until the graph is instantiated. */
    CK(begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CK(alloc(&a, total / 2, s));
    CK(memset8(a, 1, total / 2, s));
    CK(freea(a, s));
    CUgraph g;
    CK(end(s, &g));
    printf("captured_used=%zu\n", used_now(free0));
    CUgraphExec e, e2;
    CK(inst(&e, g, 0));
    printf("graph_used=%zu\n", used_now(free0));
    printf("second_graph=%s\n", errname(inst(&e2, g, 0)));
    CUgraph g2;
    CK(begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CK(alloc(&b, total / 2 + MiB, s));
    CK(freea(b, s));
    CK(end(s, &g2));
    printf("graph_over=%s\n", errname(inst(&e2, g2, 0)));
    /* The CUDA 11 ABI (cuGraphInstantiate_v2, what an 11.x runtime resolves) is counted too. */
    CUresult (*getproc)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
        (CUresult(*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *))sym(
            "cuGetProcAddress_v2");
    CUresult (*inst11)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t) = NULL;
    CK(getproc("cuGraphInstantiate", (void **)&inst11, 11080, 0, NULL));
    Dl_info di; /* the limiter's hook (the simulator's own forwards to a hooked name anyway) */
    const char *from = dladdr((void *)inst11, &di) && di.dli_fname ? strrchr(di.dli_fname, '/') : 0;
    printf("cuda11_instantiate_from=%s\n", from ? from + 1 : "?");
    printf("graph_over_cuda11=%s\n", errname(inst11(&e2, g2, NULL, NULL, 0)));
    CK(launch(e, s));
    CK(cuStreamSynchronize(s));
    CK(edestroy(e));
    CK(inst11(&e2, g2, NULL, NULL, 0)); /* fits once the first is gone */
    printf("graph_used_cuda11=%zu\n", used_now(free0));
    CK(launch(e2, s));
    CK(cuStreamSynchronize(s));
    CK(edestroy(e2));
    CK(gdestroy(g));
    CK(gdestroy(g2));
    CK(sdestroy(s));
    printf("used_at_end=%zu\n", used_now(free0));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: lim_host SCENARIO [ARGS]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *s = argv[1];
    if (!strcmp(s, "vram"))
        return scenario_vram();
    if (!strcmp(s, "meminfo"))
        return scenario_meminfo();
    if (!strcmp(s, "procaddr"))
        return scenario_procaddr();
    if (!strcmp(s, "hold"))
        return scenario_hold(argc, argv);
    if (!strcmp(s, "fill"))
        return scenario_fill(argc, argv);
    if (!strcmp(s, "devices"))
        return scenario_devices();
    if (!strcmp(s, "nvml"))
        return scenario_nvml();
    if (!strcmp(s, "launch"))
        return scenario_launch(argc, argv);
    if (!strcmp(s, "ordered"))
        return scenario_ordered();
    if (!strcmp(s, "graph"))
        return scenario_graph(argc, argv);
    if (!strcmp(s, "rollback"))
        return scenario_rollback();
    if (!strcmp(s, "fillslow"))
        return scenario_fillslow(argc, argv);
    if (!strcmp(s, "load"))
        return scenario_load(argc, argv);
    if (!strcmp(s, "modvars"))
        return scenario_modvars();
    if (!strcmp(s, "timing"))
        return scenario_timing(argc, argv);
    fprintf(stderr, "lim_host: unknown scenario %s\n", s);
    return 2;
}
