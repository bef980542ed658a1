/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only: a tiny libcuda.so.1 with just what the limiter's hook tests need and the
 * faults the simulated GPU cannot produce on demand. It behaves like the real driver where
 * the limiter depends on it: cuGetProcAddress returns the same addresses as dlsym (linked
 * -Bsymbolic-functions, so internal references are not interposed); device memory is a
 * budget of FAKE_CUDA_MEM bytes per device (default 8 GiB) handed out as fake addresses;
 * kernels do nothing but advance a device clock by FAKE_KERNEL_NS (default 0) each, which
 * timing events (recorded, always complete at once) read back as elapsed time. Faults and
 * quirks, by environment:
 *   FAKE_CUDA_DEVICES=N        device count (default 2)
 *   FAKE_CUDA_FAIL_ALLOC=N     the Nth allocation (any kind) fails with CUDA_ERROR_UNKNOWN
 *   FAKE_CUDA_PITCH=P          pitch alignment of cuMemAllocPitch (default 256)
 *   FAKE_CUDA_MANAGED_REENTERS=1  cuMemAllocManaged allocates through the exported
 *                              cuMemAlloc_v2 (found with dlsym), as some drivers do
 *   FAKE_KERNEL_NS=NS          GPU time of every kernel as events measure it
 *   FAKE_CUDA_NO_EVENTS=1      cuEventCreate answers CUDA_ERROR_NOT_SUPPORTED
 * Kernel launches count in fake_launches (read by tests through dlsym). Thread-safe.
 */
#include <cuda.h>
#undef cuGetProcAddress

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define MAXDEV 8
#define MAXOBJ 4096

static atomic_int inited;
static int ndev = 2;
static uint64_t mem_per_dev = UINT64_C(8) << 30;
static long fail_nth = -1, pitch_align = 256;
static int managed_reenters, no_events;
static uint64_t kernel_ns;
static atomic_long nalloc;
static _Atomic(uint64_t) device_clock; /* ns of kernels run */
EXPORT atomic_long fake_launches;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t used[MAXDEV];
static struct obj {
    uint64_t key, bytes;
    int dev;
} objs[MAXOBJ];
static uint64_t next_addr = UINT64_C(0x700000000000);

struct fake_ctx {
    int dev;
};
static struct fake_ctx primary[MAXDEV];
static int primary_refs[MAXDEV];
static __thread struct fake_ctx *current;

static void config(void)
{
    const char *v = getenv("FAKE_CUDA_DEVICES");
    if (v)
        ndev = atoi(v) > 0 && atoi(v) <= MAXDEV ? atoi(v) : 2;
    if ((v = getenv("FAKE_CUDA_MEM")))
        mem_per_dev = strtoull(v, NULL, 0);
    if ((v = getenv("FAKE_CUDA_FAIL_ALLOC")))
        fail_nth = atol(v);
    if ((v = getenv("FAKE_CUDA_PITCH")))
        pitch_align = atol(v);
    managed_reenters = getenv("FAKE_CUDA_MANAGED_REENTERS") != NULL;
    no_events = getenv("FAKE_CUDA_NO_EVENTS") != NULL;
    if ((v = getenv("FAKE_KERNEL_NS")))
        kernel_ns = strtoull(v, NULL, 0);
    for (int i = 0; i < MAXDEV; i++)
        primary[i].dev = i;
}

#define NEED_INIT                                                                                  \
    do {                                                                                           \
        if (!atomic_load(&inited))                                                                 \
            return CUDA_ERROR_NOT_INITIALIZED;                                                     \
    } while (0)

#define NEED_CTX                                                                                   \
    do {                                                                                           \
        NEED_INIT;                                                                                 \
        if (!current)                                                                              \
            return CUDA_ERROR_INVALID_CONTEXT;                                                     \
    } while (0)

EXPORT CUresult cuInit(unsigned int flags)
{
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (!atomic_exchange(&inited, 1))
        config();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorName(CUresult rc, const char **name)
{
    switch (rc) {
    case CUDA_SUCCESS:
        *name = "CUDA_SUCCESS";
        break;
    case CUDA_ERROR_OUT_OF_MEMORY:
        *name = "CUDA_ERROR_OUT_OF_MEMORY";
        break;
    case CUDA_ERROR_INVALID_DEVICE:
        *name = "CUDA_ERROR_INVALID_DEVICE";
        break;
    case CUDA_ERROR_INVALID_VALUE:
        *name = "CUDA_ERROR_INVALID_VALUE";
        break;
    case CUDA_ERROR_NOT_PERMITTED:
        *name = "CUDA_ERROR_NOT_PERMITTED";
        break;
    case CUDA_ERROR_UNKNOWN:
        *name = "CUDA_ERROR_UNKNOWN";
        break;
    default:
        *name = "CUDA_ERROR_OTHER";
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
    *v = 13000;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
    NEED_INIT;
    *n = ndev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    NEED_INIT;
    if (ordinal < 0 || ordinal >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d)
{
    NEED_INIT;
    if (d < 0 || d >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    memset(u->bytes, 0, 16);
    u->bytes[0] = (char)0xfa;
    u->bytes[1] = (char)0xce;
    u->bytes[15] = (char)d;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d)
{
    NEED_INIT;
    if (d < 0 || d >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    *b = mem_per_dev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    NEED_INIT;
    if (d < 0 || d >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&mu);
    primary_refs[d]++;
    pthread_mutex_unlock(&mu);
    *c = (CUcontext)&primary[d];
    return CUDA_SUCCESS;
}

static void drop_device_objects(int d);

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
    NEED_INIT;
    if (d < 0 || d >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&mu);
    int last = primary_refs[d] > 0 && --primary_refs[d] == 0;
    pthread_mutex_unlock(&mu);
    if (last)
        drop_device_objects(d);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice d, unsigned int *flags, int *active)
{
    NEED_INIT;
    *flags = 0;
    pthread_mutex_lock(&mu);
    *active = primary_refs[d] > 0;
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice d)
{
    NEED_INIT;
    pthread_mutex_lock(&mu);
    primary_refs[d] = 0;
    pthread_mutex_unlock(&mu);
    drop_device_objects(d);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext c)
{
    NEED_INIT;
    current = (struct fake_ctx *)c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *c)
{
    NEED_INIT;
    *c = (CUcontext)current;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *d)
{
    NEED_CTX;
    *d = current->dev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxCreate_v4(CUcontext *c, CUctxCreateParams *p, unsigned int flags, CUdevice d)
{
    NEED_INIT;
    if (d < 0 || d >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    struct fake_ctx *x = calloc(1, sizeof(*x));
    x->dev = d;
    current = x;
    *c = (CUcontext)x;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext c)
{
    NEED_INIT;
    struct fake_ctx *x = (struct fake_ctx *)c;
    if (x >= primary && x < primary + MAXDEV)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (current == x)
        current = NULL;
    drop_device_objects(x->dev);
    free(x);
    return CUDA_SUCCESS;
}

/* --- memory ----------------------------------------------------------------------------- */

static CUresult take(int dev, uint64_t bytes, uint64_t *key)
{
    long n = atomic_fetch_add(&nalloc, 1) + 1;
    if (n == fail_nth)
        return CUDA_ERROR_UNKNOWN;
    if (bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (used[dev] + bytes <= mem_per_dev) {
        for (int i = 0; i < MAXOBJ; i++) {
            if (objs[i].key)
                continue;
            objs[i].key = next_addr;
            objs[i].bytes = bytes;
            objs[i].dev = dev;
            *key = next_addr;
            next_addr += (bytes + 0xfff) & ~UINT64_C(0xfff);
            used[dev] += bytes;
            rc = CUDA_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

static CUresult give(uint64_t key)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAXOBJ; i++) {
        if (objs[i].key == key && key) {
            used[objs[i].dev] -= objs[i].bytes;
            objs[i].key = 0;
            rc = CUDA_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

static void drop_device_objects(int d)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAXOBJ; i++)
        if (objs[i].key && objs[i].dev == d) {
            used[d] -= objs[i].bytes;
            objs[i].key = 0;
        }
    pthread_mutex_unlock(&mu);
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    NEED_CTX;
    uint64_t k;
    CUresult rc = take(current->dev, n, &k);
    if (rc == CUDA_SUCCESS)
        *p = k;
    return rc;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int flags)
{
    NEED_CTX;
    if (managed_reenters) {
        CUresult (*f)(CUdeviceptr *, size_t) =
            (CUresult(*)(CUdeviceptr *, size_t))dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
        return f(p, n);
    }
    return cuMemAlloc_v2(p, n);
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h,
                                   unsigned int elem)
{
    NEED_CTX;
    size_t pt = (w + (size_t)pitch_align - 1) / (size_t)pitch_align * (size_t)pitch_align;
    uint64_t k;
    CUresult rc = take(current->dev, (uint64_t)pt * h, &k);
    if (rc == CUDA_SUCCESS) {
        *p = k;
        *pitch = pt;
    }
    return rc;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
    NEED_INIT;
    return give(p);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
    return cuMemAlloc_v2(p, n);
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    return cuMemFree_v2(p);
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    NEED_CTX;
    pthread_mutex_lock(&mu);
    *free = mem_per_dev - used[current->dev];
    pthread_mutex_unlock(&mu);
    *total = mem_per_dev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t n,
                            const CUmemAllocationProp *prop, unsigned long long flags)
{
    NEED_INIT;
    if (!prop || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop->location.id >= ndev)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t k;
    CUresult rc = take(prop->location.id, n, &k);
    if (rc == CUDA_SUCCESS)
        *h = k;
    return rc;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
    NEED_INIT;
    return give(h);
}

EXPORT CUresult cuArrayCreate_v2(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d)
{
    NEED_CTX;
    uint64_t k;
    CUresult rc = take(current->dev, (uint64_t)d->Width * (d->Height ? d->Height : 1) * 4, &k);
    if (rc == CUDA_SUCCESS)
        *a = (CUarray)(uintptr_t)k;
    return rc;
}

EXPORT CUresult cuArrayDestroy(CUarray a)
{
    NEED_INIT;
    return give((uint64_t)(uintptr_t)a);
}

/* --- launches and graphs ------------------------------------------------------------------ */

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shm, CUstream s, void **params,
                               void **extra)
{
    NEED_CTX;
    atomic_fetch_add(&fake_launches, 1);
    atomic_fetch_add(&device_clock, kernel_ns);
    return CUDA_SUCCESS;
}

/* --- events: recorded at the device clock, complete at once ------------------------------ */

struct fake_event {
    uint64_t t;
    int recorded;
};

EXPORT CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
    NEED_CTX;
    if (no_events)
        return CUDA_ERROR_NOT_SUPPORTED;
    *e = (CUevent)calloc(1, sizeof(struct fake_event));
    return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
    free((void *)e);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
    NEED_CTX;
    struct fake_event *f = (struct fake_event *)e;
    f->t = atomic_load(&device_clock);
    f->recorded = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuEventQuery(CUevent e)
{
    return ((struct fake_event *)e)->recorded ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
    *ms = (float)((double)(((struct fake_event *)b)->t - ((struct fake_event *)a)->t) / 1e6);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
    NEED_CTX;
    return CUDA_SUCCESS;
}

struct fake_graph {
    int kernels;
};

EXPORT CUresult cuGraphCreate(CUgraph *g, unsigned int flags)
{
    *g = (CUgraph)calloc(1, sizeof(struct fake_graph));
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *n, CUgraph g, const CUgraphNode *deps,
                                        size_t ndeps, const CUDA_KERNEL_NODE_PARAMS *p)
{
    struct fake_graph *fg = (struct fake_graph *)g;
    fg->kernels++;
    *n = (CUgraphNode)(uintptr_t)(0x1000 + fg->kernels);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *n)
{
    struct fake_graph *fg = (struct fake_graph *)g;
    if (nodes)
        for (int i = 0; i < fg->kernels && (size_t)i < *n; i++)
            nodes[i] = (CUgraphNode)(uintptr_t)(0x1001 + i);
    *n = (size_t)fg->kernels;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphNodeGetType(CUgraphNode n, CUgraphNodeType *t)
{
    *t = CU_GRAPH_NODE_TYPE_KERNEL;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
    struct fake_graph *copy = malloc(sizeof(*copy));
    *copy = *(struct fake_graph *)g;
    *e = (CUgraphExec)copy;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s)
{
    NEED_CTX;
    atomic_fetch_add(&fake_launches, ((struct fake_graph *)e)->kernels);
    atomic_fetch_add(&device_clock, kernel_ns * (uint64_t)((struct fake_graph *)e)->kernels);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec e)
{
    free((void *)e);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphDestroy(CUgraph g)
{
    free((void *)g);
    return CUDA_SUCCESS;
}

/* --- cuGetProcAddress: the same addresses dlsym gives ------------------------------------- */

static const struct {
    const char *name;
    void *fn;
} procs[] = {
#define P(sym, fn)                                                                                 \
    {                                                                                              \
#sym, (void *)fn                                                                           \
    }
    P(cuInit, cuInit),
    P(cuDriverGetVersion, cuDriverGetVersion),
    P(cuDeviceGetCount, cuDeviceGetCount),
    P(cuDeviceGet, cuDeviceGet),
    P(cuDeviceGetUuid, cuDeviceGetUuid_v2),
    P(cuDeviceTotalMem, cuDeviceTotalMem_v2),
    P(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain),
    P(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2),
    P(cuCtxSetCurrent, cuCtxSetCurrent),
    P(cuCtxGetCurrent, cuCtxGetCurrent),
    P(cuMemAlloc, cuMemAlloc_v2),
    P(cuMemFree, cuMemFree_v2),
    P(cuMemGetInfo, cuMemGetInfo_v2),
    P(cuMemAllocManaged, cuMemAllocManaged),
    P(cuLaunchKernel, cuLaunchKernel),
    P(cuGetProcAddress, cuGetProcAddress_v2),
#undef P
};

EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *st)
{
    for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
        if (strcmp(procs[i].name, sym) == 0) {
            *pfn = procs[i].fn;
            if (st)
                *st = CU_GET_PROC_ADDRESS_SUCCESS;
            return CUDA_SUCCESS;
        }
    }
    *pfn = NULL;
    if (st)
        *st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, cuuint64_t flags);
EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, cuuint64_t flags)
{
    return cuGetProcAddress_v2(sym, pfn, ver, flags, NULL);
}
