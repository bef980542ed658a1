/* SPDX-License-Identifier: Apache-2.0
 *
 * Compute hooks: every kernel launch (plain, Ex, cooperative, legacy grid launches, graph
 * launches) takes its estimated GPU time in tokens from its device's bucket in the region.
 * The unthrottled path is: one load of the device flags, one CAS on the bucket, one relaxed
 * add to this process's launch counter -- no lock, no syscall, no clock read, no log. An
 * empty bucket sends the launching thread to a bounded sleep loop (50 us .. 10 ms naps, never
 * a spin: src/limits/throttle.h) until the tokens are there; the engine trues the estimate up
 * against the GPU time it measures, so tokens track real GPU time whatever the kernel length.
 */
#include "limiter/pass.h"

#include "limits/bucket.h"
#include "limits/controller.h"
#include "limits/throttle.h"

/* Launch -> region index cache for multi-device processes (context of the calling thread). */
static __thread CUcontext t_ctx __attribute__((tls_model("initial-exec")));
static __thread int t_idx __attribute__((tls_model("initial-exec")));
static __thread unsigned t_gen __attribute__((tls_model("initial-exec")));

static int launch_idx(void)
{
    struct tf__lim *L = &tf__L;
    if (L->nvis == 1)
        return L->vis_idx[0];
    CUcontext c = NULL;
    CUresult rc;
    TF_CALL(rc, cuCtxGetCurrent, &c);
    if (rc != CUDA_SUCCESS)
        return -1;
    unsigned gen = atomic_load_explicit(&L->ctx_gen, memory_order_relaxed);
    if (c && c == t_ctx && gen == t_gen)
        return t_idx;
    t_ctx = c;
    t_gen = gen;
    t_idx = tf__cur_idx();
    return t_idx;
}

__attribute__((noinline)) static void wait_for_tokens(struct tf_shm_device *d, int64_t cost)
{
    uint64_t now = tf__now_ns();
    tf__check_heartbeat(now);
    tf_throttle_wait(d, cost, now);
}

/* Per-thread batching. A locked instruction costs ~20 ns on the machines we measured, so
 * the fast path avoids them: launches are counted in the thread and published to the
 * region's per-process counter every TF_LIM_BATCH launches, and tokens are taken from the
 * shared bucket for up to TF_LIM_BATCH launches at once (never more than a quarter of the
 * bucket, so a long kernel still takes its tokens alone). A thread that stops launching
 * keeps at most that many launches' worth of tokens unused, which only under-uses the cap,
 * and its last < TF_LIM_BATCH launches stay uncounted until its next launch. */
#define TF_LIM_BATCH 8

struct tcache {
    int idx;           /* region index the cache is for (-1 none) */
    uint32_t launches; /* counted, not yet published */
    int64_t tokens;    /* taken from the bucket, not yet spent */
};
static __thread struct tcache tc __attribute__((tls_model("initial-exec"))) = {.idx = -1};

static void publish(struct tf__lim *L)
{
    int slot = atomic_load_explicit(&L->slot, memory_order_relaxed);
    if (tc.launches && tc.idx >= 0 && slot >= 0)
        atomic_fetch_add_explicit(&L->r->pid[slot].launches[tc.idx], tc.launches,
                                  memory_order_relaxed);
    tc.launches = 0;
}

void tf__launch_after_fork(void)
{
    tc.idx = -1;
    tc.launches = 0;
    tc.tokens = 0;
}

__attribute__((noinline)) static void take_tokens(struct tf_shm_device *d, int64_t cost)
{
    int64_t cap = atomic_load_explicit(&d->bucket.capacity, memory_order_relaxed);
    int64_t k = cost > 0 ? cap / (4 * cost) : 1;
    if (k > TF_LIM_BATCH)
        k = TF_LIM_BATCH;
    if (k > 1 && tf_bucket_try_take(&d->bucket, cost * k)) {
        tc.tokens += cost * (k - 1);
        return;
    }
    if (!tf_bucket_try_take(&d->bucket, cost))
        wait_for_tokens(d, cost);
}

/* Charges NLAUNCH launches to the current device. */
static inline void charge(uint64_t nlaunch)
{
    struct tf__lim *L = &tf__L;
    if (!L->r || atomic_load_explicit(&L->devmap, memory_order_acquire) != TF_LIM_MAP_READY)
        return;
    int idx = launch_idx();
    if (idx < 0)
        return;
    if (idx != tc.idx) {
        publish(L);
        tc.idx = idx;
        tc.tokens = 0;
    }
    tc.launches += (uint32_t)nlaunch;
    struct tf_shm_device *d = &L->r->dev[idx];
    if (atomic_load_explicit(&d->flags, memory_order_relaxed) & TF_SHM_DEV_COMPUTE_LIMIT) {
        uint64_t c = atomic_load_explicit(&d->launch_cost, memory_order_relaxed);
        if (c == 0)
            c = TF_LIMIT_COST_DEFAULT_NS;
        int64_t cost = (int64_t)(c * nlaunch);
        if (tc.tokens >= cost) {
            tc.tokens -= cost;
        } else {
            take_tokens(d, cost);
            publish(L); /* the slow path publishes: waiting workloads are counted promptly */
            return;
        }
    }
    if (tc.launches >= TF_LIM_BATCH)
        publish(L);
}

#define LAUNCH(name, ...)                                                                          \
    TF_PASS_IF_NESTED(name, __VA_ARGS__);                                                          \
    charge(1);                                                                                     \
    CUresult rc;                                                                                   \
    TF_CALL(rc, name, __VA_ARGS__);                                                                \
    return rc

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                unsigned int gridDimZ, unsigned int blockDimX,
                                unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams,
                                void **extra)
{
    LAUNCH(cuLaunchKernel, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
           sharedMemBytes, hStream, kernelParams, extra);
}

CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                     unsigned int gridDimZ, unsigned int blockDimX,
                                     unsigned int blockDimY, unsigned int blockDimZ,
                                     unsigned int sharedMemBytes, CUstream hStream,
                                     void **kernelParams, void **extra)
{
    LAUNCH(cuLaunchKernel_ptsz, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
           sharedMemBytes, hStream, kernelParams, extra);
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                                  void **extra)
{
    LAUNCH(cuLaunchKernelEx, config, f, kernelParams, extra);
}

CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                       void **kernelParams, void **extra)
{
    LAUNCH(cuLaunchKernelEx_ptsz, config, f, kernelParams, extra);
}

CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                           unsigned int gridDimY, unsigned int gridDimZ,
                                           unsigned int blockDimX, unsigned int blockDimY,
                                           unsigned int blockDimZ, unsigned int sharedMemBytes,
                                           CUstream hStream, void **kernelParams)
{
    LAUNCH(cuLaunchCooperativeKernel, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
           blockDimZ, sharedMemBytes, hStream, kernelParams);
}

CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                unsigned int gridDimY, unsigned int gridDimZ,
                                                unsigned int blockDimX, unsigned int blockDimY,
                                                unsigned int blockDimZ, unsigned int sharedMemBytes,
                                                CUstream hStream, void **kernelParams)
{
    LAUNCH(cuLaunchCooperativeKernel_ptsz, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
           blockDimZ, sharedMemBytes, hStream, kernelParams);
}

CUresult CUDAAPI cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *launchParamsList,
                                                      unsigned int numDevices, unsigned int flags)
{
    TF_PASS_IF_NESTED(cuLaunchCooperativeKernelMultiDevice, launchParamsList, numDevices, flags);
    /* Deprecated API: charged as one launch per device, on the current device. */
    charge(numDevices ? numDevices : 1);
    CUresult rc;
    TF_CALL(rc, cuLaunchCooperativeKernelMultiDevice, launchParamsList, numDevices, flags);
    return rc;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
CUresult CUDAAPI cuLaunch(CUfunction f)
{
    LAUNCH(cuLaunch, f);
}

CUresult CUDAAPI cuLaunchGrid(CUfunction f, int grid_width, int grid_height)
{
    LAUNCH(cuLaunchGrid, f, grid_width, grid_height);
}

CUresult CUDAAPI cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height, CUstream hStream)
{
    LAUNCH(cuLaunchGridAsync, f, grid_width, grid_height, hStream);
}
#pragma GCC diagnostic pop

/* --- graphs: a launch charges one launch per kernel node, counted at instantiation
 * (hook_graph.c) ------------------------------------------------------------------------ */

static uint64_t graph_launches(CUgraphExec e)
{
    struct tf_ptrtab_val v;
    if (tf__L.r && tf_ptrtab_get(&tf__L.graphs, (uint64_t)(uintptr_t)e, &v))
        return v.bytes;
    return 1; /* instantiated before we saw it: the engine's true-up still charges its time */
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    TF_PASS_IF_NESTED(cuGraphLaunch, hGraphExec, hStream);
    charge(graph_launches(hGraphExec));
    CUresult rc;
    TF_CALL(rc, cuGraphLaunch, hGraphExec, hStream);
    return rc;
}

CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    TF_PASS_IF_NESTED(cuGraphLaunch_ptsz, hGraphExec, hStream);
    charge(graph_launches(hGraphExec));
    CUresult rc;
    TF_CALL(rc, cuGraphLaunch_ptsz, hGraphExec, hStream);
    return rc;
}
