/* SPDX-License-Identifier: Apache-2.0
 *
 * Compute hooks: every kernel launch (plain, Ex, cooperative, legacy grid launches, graph
 * launches) takes its GPU time in tokens from its device's bucket in the region: the time
 * its kernel was measured to take on the app's own stream (the launch cost model,
 * src/limits/costmodel.h, calibrated by the engine), or the engine's average while it has
 * not been measured yet. The unthrottled path is: a few loads, a thread-local estimate
 * lookup and, per batch of launches, one atomic take on the bucket and one add to this
 * process's launch counter -- no lock, no syscall, no clock read, no log. One launch in
 * hundreds is measured (two event records around it, read later without waiting). An empty
 * bucket sends the launching thread to a bounded sleep loop (50 us .. 10 ms naps, never a
 * spin: src/limits/throttle.h) until the tokens are there; the engine trues the charges up
 * against the GPU time the driver accounts, so tokens track real GPU time.
 */
#include "limiter/pass.h"

#include "limits/bucket.h"
#include "limits/controller.h"
#include "limits/costmodel.h"
#include "limits/throttle.h"

#include <stdlib.h>
#include <string.h>

/* Launch -> region index cache for multi-device processes (context of the calling thread). */
static __thread CUcontext t_ctx __attribute__((tls_model("initial-exec")));
static __thread int t_idx __attribute__((tls_model("initial-exec")));
static __thread unsigned t_gen __attribute__((tls_model("initial-exec")));

static __attribute__((noinline)) int launch_idx_multi(void)
{
    struct tf__lim *L = &tf__L;
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

static inline __attribute__((always_inline)) int launch_idx(void)
{
    return tf__L.nvis == 1 ? tf__L.vis_idx[0] : launch_idx_multi();
}

__attribute__((noinline)) static void wait_for_tokens(int idx, int64_t cost)
{
    uint64_t now = tf__now_ns();
    tf__check_heartbeat(now);
    tf_throttle_wait(tf__L.r, (unsigned)idx, cost, now);
}

/* Per-thread batching. A locked instruction costs ~20 ns on the machines we measured, so
 * the fast path avoids them: launches are counted in the thread and published to the
 * region's per-process counter every TF_LIM_BATCH launches, and tokens are taken from the
 * shared bucket for up to TF_LIM_BATCH launches at once (never more than a quarter of the
 * bucket, so a long kernel still takes its tokens alone). A thread that stops launching
 * keeps at most that many launches' worth of tokens unused, which only under-uses the cap,
 * and its last < TF_LIM_BATCH launches stay uncounted until its next launch. */
#define TF_LIM_BATCH 8
#define TF_LIM_BATCH_FREE 64 /* without a compute limit */

struct tcache {
    int idx;           /* region index the cache is for (-1 none) */
    uint32_t launches; /* counted, not yet published */
    int64_t tokens;    /* taken from the bucket, not yet spent */
};
static __thread struct tcache tc __attribute__((tls_model("initial-exec"))) = {.idx = -1};

/* The launch cost model (src/limits/costmodel.h): each launch is charged its kernel's GPU
 * time as measured on the app's own streams, set up at the first launch under a compute
 * limit. */
static struct tf_costmodel cm;
static _Atomic(int) cm_state; /* 0 none, 1 being set up, 2 ready */
static __thread struct tf_cost_thread cth __attribute__((tls_model("initial-exec")));

static __attribute__((noinline)) bool cm_setup(void)
{
    int expect = 0;
    if (atomic_compare_exchange_strong(&cm_state, &expect, 1)) {
        struct tf_gpu_timer t;
        tf__gpu_timer(&t);
        tf_costmodel_init(&cm, &t);
        atomic_store_explicit(&cm_state, 2, memory_order_release);
        return true;
    }
    return expect == 2; /* another thread is setting it up: charge the prior meanwhile */
}

static void publish(struct tf__lim *L)
{
    int slot = atomic_load_explicit(&L->slot, memory_order_relaxed);
    if (tc.launches && tc.idx >= 0 && slot >= 0)
        atomic_fetch_add_explicit(&L->r->use->pid[slot].launches[tc.idx], tc.launches,
                                  memory_order_relaxed);
    tc.launches = 0;
}

void tf__launch_after_fork(void)
{
    tc.idx = -1;
    tc.launches = 0;
    tc.tokens = 0;
    memset(&cth, 0, sizeof(cth));
    if (atomic_load(&cm_state) == 2)
        tf_cost_after_fork(&cm);
}

void tf__launch_ctx_gone(CUcontext ctx)
{
    if (atomic_load_explicit(&cm_state, memory_order_acquire) == 2)
        tf_cost_ctx_gone(&cm, (uintptr_t)ctx);
}

__attribute__((noinline)) static void take_tokens(int idx, int64_t cost, int64_t borrow)
{
    const struct tf_bucket_limit *lim = &tf__L.r->lim->dev[idx].bucket;
    struct tf_bucket *b = &tf__L.r->use->dev[idx].bucket;
    if (borrow > 0 && tf_bucket_try_borrow(b, cost, borrow))
        return; /* the first launch priced by its kernel's first measurement */
    int64_t cap = atomic_load_explicit(&lim->capacity, memory_order_relaxed);
    int64_t k = cost > 0 ? cap / (4 * cost) : 1;
    if (k > TF_LIM_BATCH)
        k = TF_LIM_BATCH;
    if (k > 1 && tf_bucket_try_take(b, cost * k)) {
        tc.tokens += cost * (k - 1);
        return;
    }
    if (!tf_bucket_try_take(b, cost))
        wait_for_tokens(idx, cost);
}

/* One launch under a compute limit on its way to the driver: what the hook knows, and what
 * the accounting needs after the real call (a launch being measured). Every launch hook goes
 * through LAUNCH: launch_count, launch_charge under a limit, the real call, launch_end. */
struct launch {
    bool keyed;       /* measured and priced by the cost model (else: the prior) */
    uintptr_t func;   /* kernel function or graph exec */
    uint64_t threads; /* threads launched (the size class of the estimate) */
    bool graph;       /* func is a graph exec */
    uint64_t nlaunch; /* kernels it launches (the prior is that many average launches) */
    uintptr_t stream; /* where it runs */
    int ptsz;         /* stream 0 means the per-thread default stream */
    struct tf_cost_launch cl;
};

/* The GPU ns to charge for L on device entry IDX: its measured estimate, or the prior. */
static inline int64_t price(struct launch *l, int idx)
{
    const struct tf_shm_ldev *d = &tf__L.r->lim->dev[idx];
    uint64_t c = atomic_load_explicit(&d->launch_cost, memory_order_relaxed);
    uint64_t prior = (c ? c : TF_LIMIT_COST_DEFAULT_NS) * l->nlaunch;
    if (!l->keyed || (atomic_load_explicit(&cm_state, memory_order_acquire) != 2 && !cm_setup()))
        return (int64_t)prior;
    uint64_t key = tf_cost_key(l->func, l->threads, (unsigned)idx, l->graph);
    uint32_t scale = atomic_load_explicit(&d->cost_scale, memory_order_relaxed);
    int64_t cost = tf_cost_price(&cm, &cth, &l->cl, key, prior, scale,
                                 &tf__L.r->use->dev[idx].bucket, &d->bucket);
    if (__builtin_expect(l->cl.correction != 0, 0)) /* a key measured at last: settle it */
        tf_bucket_adjust(&tf__L.r->use->dev[idx].bucket, &d->bucket, -l->cl.correction);
    return cost;
}

/* Counts NLAUNCH launches on the current device. Returns its region index when a compute
 * limit is in force there (the launch must then be charged: launch_charge), else -1. This is
 * the whole path of a launch without a compute limit, inlined into every hook. */
static inline __attribute__((always_inline)) int launch_count(uint64_t nlaunch)
{
    struct tf__lim *L = &tf__L;
    if (!L->r || atomic_load_explicit(&L->devmap, memory_order_acquire) != TF_LIM_MAP_READY)
        return -1;
    int idx = launch_idx();
    if (idx < 0)
        return -1;
    if (idx != tc.idx) {
        publish(L);
        tc.idx = idx;
        tc.tokens = 0;
    }
    tc.launches += (uint32_t)nlaunch;
    if (!(atomic_load_explicit(&L->r->lim->dev[idx].flags, memory_order_relaxed) &
          TF_SHM_DEV_COMPUTE_LIMIT)) {
        /* No compute limit: the counts are statistics only, published less often. */
        if (tc.launches >= TF_LIM_BATCH_FREE)
            publish(L);
        return -1;
    }
    return idx;
}

/* Charges L to device entry IDX before the real call (may sleep for tokens), and starts
 * measuring it if the cost model asks for that. */
static __attribute__((noinline)) void launch_charge(struct launch *l, int idx)
{
    struct tf__lim *L = &tf__L;
    l->cl.sample = false;
    l->cl.slot = -1;
    l->cl.borrow = 0;
    int64_t cost = price(l, idx);
    /* A measured launch reads the clock anyway: credit the bucket up to now first, so the
     * time it sat full before this take is not credited again once it is spent (a first
     * launch after an idle gap is measured when its kernel is new). */
    if (l->cl.sample)
        tf_bucket_refill(&L->r->use->dev[idx].bucket, &L->r->lim->dev[idx].bucket, tf__now_ns());
    if (tc.tokens >= cost) {
        tc.tokens -= cost;
        if (tc.launches >= TF_LIM_BATCH)
            publish(L);
    } else {
        take_tokens(idx, cost, l->cl.borrow);
        publish(L); /* the slow path publishes: waiting workloads are counted promptly */
    }
    if (l->cl.sample)
        tf_cost_sample_begin(&cm, &cth, &l->cl, l->stream, l->ptsz);
}

/* After the real call: ends the measurement of L, if one was started. */
static inline void launch_end(struct launch *l, CUresult rc)
{
    if (__builtin_expect(l->cl.slot >= 0, 0))
        tf_cost_sample_end(&cm, &cth, &l->cl, l->stream, l->ptsz, rc == CUDA_SUCCESS);
}

static uint64_t threads_of(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                           unsigned bz)
{
    return (uint64_t)gx * gy * gz * ((uint64_t)bx * by * bz);
}

/* The common case under a compute limit, inline: the thread's warm kernel (KEY) with its
 * tokens already taken. False: launch_charge does the rest. */
static inline __attribute__((always_inline)) bool charge_fast(int idx, uint64_t key)
{
    struct tf__lim *L = &tf__L;
    uint32_t scale = atomic_load_explicit(&L->r->lim->dev[idx].cost_scale, memory_order_relaxed);
    int64_t cost = tf_cost_price_fast(&cth, key, scale);
    if (cost < 0 || tc.tokens < cost)
        return false;
    tc.tokens -= cost;
    if (tc.launches >= TF_LIM_BATCH)
        publish(L);
    return true;
}

/* The body of every launch hook: NLAUNCH kernels of FUNC (THREADS threads; GRAPH: a graph
 * exec; KEYED: kept in the cost model); DESC (a struct launch) is built only when a compute
 * limit is in force and the fast path does not do. */
#define LAUNCH(nlaunch, keyed, func, threads, graph, desc, name, ...)                              \
    TF_PASS_IF_NESTED(name, __VA_ARGS__);                                                          \
    struct launch l;                                                                               \
    l.cl.slot = -1;                                                                                \
    int idx_ = launch_count(nlaunch);                                                              \
    if (__builtin_expect(idx_ >= 0, 0) &&                                                          \
        !((keyed) && charge_fast(idx_, tf_cost_key((uintptr_t)(func), (threads), (unsigned)idx_,   \
                                                   (graph))))) {                                   \
        l = (desc);                                                                                \
        launch_charge(&l, idx_);                                                                   \
    }                                                                                              \
    CUresult rc;                                                                                   \
    TF_CALL(rc, name, __VA_ARGS__);                                                                \
    launch_end(&l, rc);                                                                            \
    return rc

/* LAUNCH for a kernel of function F, grid GX..GZ, blocks BX..BZ on stream ST. */
#define LAUNCH_KERNEL(f, gx, gy, gz, bx, by, bz, st, per_thread, name, ...)                        \
    LAUNCH(1, true, f, threads_of(gx, gy, gz, bx, by, bz), false,                                  \
           KERNEL(f, gx, gy, gz, bx, by, bz, st, per_thread), name, __VA_ARGS__)

#define KERNEL(f, gx, gy, gz, bx, by, bz, st, per_thread)                                          \
    ((struct launch){.keyed = true,                                                                \
                     .func = (uintptr_t)(f),                                                       \
                     .threads = threads_of(gx, gy, gz, bx, by, bz),                                \
                     .nlaunch = 1,                                                                 \
                     .stream = (uintptr_t)(st),                                                    \
                     .ptsz = (per_thread)})

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                unsigned int gridDimZ, unsigned int blockDimX,
                                unsigned int blockDimY, unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream, void **kernelParams,
                                void **extra)
{
    LAUNCH_KERNEL(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream, 0,
                  cuLaunchKernel, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                  sharedMemBytes, hStream, kernelParams, extra);
}

CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                     unsigned int gridDimZ, unsigned int blockDimX,
                                     unsigned int blockDimY, unsigned int blockDimZ,
                                     unsigned int sharedMemBytes, CUstream hStream,
                                     void **kernelParams, void **extra)
{
    LAUNCH_KERNEL(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream, 1,
                  cuLaunchKernel_ptsz, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                  blockDimZ, sharedMemBytes, hStream, kernelParams, extra);
}

/* A launch with a config: its grid and stream come from CONFIG (none: charged the prior). */
static uint64_t threads_ex(const CUlaunchConfig *c)
{
    return threads_of(c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                      c->blockDimZ);
}

static struct launch launch_ex(const CUlaunchConfig *c, CUfunction f, int ptsz)
{
    if (!c)
        return (struct launch){.nlaunch = 1};
    return (struct launch)KERNEL(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX,
                                 c->blockDimY, c->blockDimZ, c->hStream, ptsz);
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                                  void **extra)
{
    LAUNCH(1, config != NULL, f, config ? threads_ex(config) : 0, false, launch_ex(config, f, 0),
           cuLaunchKernelEx, config, f, kernelParams, extra);
}

CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                       void **kernelParams, void **extra)
{
    LAUNCH(1, config != NULL, f, config ? threads_ex(config) : 0, false, launch_ex(config, f, 1),
           cuLaunchKernelEx_ptsz, config, f, kernelParams, extra);
}

CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                           unsigned int gridDimY, unsigned int gridDimZ,
                                           unsigned int blockDimX, unsigned int blockDimY,
                                           unsigned int blockDimZ, unsigned int sharedMemBytes,
                                           CUstream hStream, void **kernelParams)
{
    LAUNCH_KERNEL(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream, 0,
                  cuLaunchCooperativeKernel, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
                  blockDimZ, sharedMemBytes, hStream, kernelParams);
}

CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX,
                                                unsigned int gridDimY, unsigned int gridDimZ,
                                                unsigned int blockDimX, unsigned int blockDimY,
                                                unsigned int blockDimZ, unsigned int sharedMemBytes,
                                                CUstream hStream, void **kernelParams)
{
    LAUNCH_KERNEL(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream, 1,
                  cuLaunchCooperativeKernel_ptsz, f, gridDimX, gridDimY, gridDimZ, blockDimX,
                  blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams);
}

CUresult CUDAAPI cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS *launchParamsList,
                                                      unsigned int numDevices, unsigned int flags)
{
    /* Deprecated API, one launch per device on several streams: charged the prior, one
     * launch per device, on the current device. */
    uint64_t n = numDevices ? numDevices : 1;
    LAUNCH(n, false, 0, 0, false, ((struct launch){.nlaunch = n}),
           cuLaunchCooperativeKernelMultiDevice, launchParamsList, numDevices, flags);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
/* The legacy launches run on the NULL stream with the block shape set beforehand (unknown
 * here: the size class counts blocks only). */
CUresult CUDAAPI cuLaunch(CUfunction f)
{
    LAUNCH_KERNEL(f, 1, 1, 1, 1, 1, 1, NULL, 0, cuLaunch, f);
}

CUresult CUDAAPI cuLaunchGrid(CUfunction f, int grid_width, int grid_height)
{
    LAUNCH_KERNEL(f, (unsigned)grid_width, (unsigned)grid_height, 1, 1, 1, 1, NULL, 0, cuLaunchGrid,
                  f, grid_width, grid_height);
}

CUresult CUDAAPI cuLaunchGridAsync(CUfunction f, int grid_width, int grid_height, CUstream hStream)
{
    LAUNCH_KERNEL(f, (unsigned)grid_width, (unsigned)grid_height, 1, 1, 1, 1, hStream, 0,
                  cuLaunchGridAsync, f, grid_width, grid_height, hStream);
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

/* A graph launch is measured as one unit (its own estimate); its prior is one average
 * launch per kernel node. */
static struct launch launch_graph(CUgraphExec e, uint64_t nlaunch, CUstream s, int ptsz)
{
    return (struct launch){.keyed = true,
                           .func = (uintptr_t)e,
                           .graph = true,
                           .nlaunch = nlaunch,
                           .stream = (uintptr_t)s,
                           .ptsz = ptsz};
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    uint64_t n = tf__depth ? 1 : graph_launches(hGraphExec);
    LAUNCH(n, true, hGraphExec, 0, true, launch_graph(hGraphExec, n, hStream, 0), cuGraphLaunch,
           hGraphExec, hStream);
}

CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    uint64_t n = tf__depth ? 1 : graph_launches(hGraphExec);
    LAUNCH(n, true, hGraphExec, 0, true, launch_graph(hGraphExec, n, hStream, 1),
           cuGraphLaunch_ptsz, hGraphExec, hStream);
}
