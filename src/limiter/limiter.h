/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to libtf_limiter.so: the process-wide limiter state and the helpers the hook
 * files share. An LD_PRELOAD interposer has no caller to hand it a context, so there is
 * exactly one state object (tf__L), defined in state.c and hidden from the host process
 * (-fvisibility=hidden plus the version script).
 *
 * Lifecycle (all lazy, from the first hook call; nothing runs in processes that never touch
 * CUDA or NVML, e.g. a shell that inherited LD_PRELOAD):
 *   1. tf__init: resolve the real libcuda.so.1, read the environment, open the limit region
 *      (TF_SHM_PATH) or build a standalone one from TF_VRAM_LIMIT / TF_COMPUTE_PERCENT.
 *   2. tf__devmap: after a successful cuInit, map real devices to region entries by UUID,
 *      decide which are visible, register this process in a PID slot, start the standalone
 *      controller if there is one.
 * Hot paths (launches) then touch only the region's atomics: no lock, no syscall, no log.
 *
 * Thread-safety: every helper is thread-safe. Fields written during init are published by
 * the release store of `phase` / `devmap` and read after an acquire load.
 */
#ifndef TF_LIMITER_LIMITER_H
#define TF_LIMITER_LIMITER_H

#include "limiter/hooks.h"
#include "limiter/ptrtab.h"
#include "limits/shm.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define TF_LIM_MAX_REAL 64 /* real device ordinals the limiter can map */
#define TF_LIM_SUBSYS "limiter"

enum { TF_LIM_PHASE_NONE = 0, TF_LIM_PHASE_INIT = 1, TF_LIM_PHASE_READY = 2 };
enum { TF_LIM_MAP_NONE = 0, TF_LIM_MAP_BUILDING = 1, TF_LIM_MAP_READY = 2 };

struct tf__lim {
    _Atomic(int) phase;
    _Atomic(long) init_tid;
    void *cuda;           /* dlopen handle of the real libcuda.so.1 */
    struct tf__real real; /* real functions (NVML ones filled by tf__nvml_init) */
    _Atomic(int) nvml_phase;
    void *nvml;
    /* limits */
    struct tf_shm_region *r; /* NULL: no limits known, everything passes through; else
                              * &region (its limits part mapped read-only) */
    struct tf_shm_region region;
    bool standalone;  /* r is private, driven by our own controller thread */
    bool strict_fail; /* TF_LIMITER_STRICT and no usable limits: refuse cuInit */
    char region_path[512];
    uint64_t env_vram; /* standalone limits */
    uint32_t env_bp;
    bool env_has_vram, env_has_compute;
    _Atomic(int) slot; /* our PID slot, -1 none */
    uint64_t owner;
    /* devices */
    _Atomic(int) devmap;
    int nvis;                                    /* devices this process may see */
    CUdevice vis[TF_SHM_MAX_DEVICES];            /* visible ordinal -> real device */
    int vis_idx[TF_SHM_MAX_DEVICES];             /* visible ordinal -> region index */
    int8_t idx_of[TF_LIM_MAX_REAL];              /* real device -> region index, -1 hidden */
    bool filter;                                 /* hide devices not in the region */
    _Atomic(uintptr_t) primary[TF_LIM_MAX_REAL]; /* primary contexts seen by retain */
    _Atomic(unsigned) ctx_gen;                   /* bumped when a context dies (launch caches) */
    /* tracked allocations */
    struct tf_ptrtab mem, arr, vmm, graphs, gmem;
    /* diagnostics, logged once */
    _Atomic(int) stale_state; /* 0 fresh, 1 stale (logged) */
    _Atomic(int) untracked_logged;
};

extern struct tf__lim tf__L;

/* Per-thread re-entrancy depth: a hook entered while this thread is already inside one
 * (the real driver calling an exported name) passes straight through. */
extern __thread int tf__depth __attribute__((tls_model("initial-exec")));

/* Resolves the real driver and reads the configuration, once. Returns true when the real
 * table is usable (false only during a recursive call from inside initialisation). */
bool tf__init(void);

static inline bool tf__ready(void)
{
    return atomic_load_explicit(&tf__L.phase, memory_order_acquire) == TF_LIM_PHASE_READY ||
           tf__init();
}

/* Real function lookup by name in the real libcuda (for calls during initialisation). */
void *tf__real_cuda_sym(const char *name);

/* Builds the device map if the driver is initialised (cuInit succeeded). Returns true
 * when the map is ready. */
bool tf__devmap(void);

/* Region index of real device DEV, or -1 (hidden, unknown, or no region). */
int tf__idx_of_dev(CUdevice dev);
/* Region index of the calling thread's current context's device, or -1. */
int tf__cur_idx(void);

/* True if real device DEV may be used by this process. */
bool tf__visible(CUdevice dev);

uint64_t tf__now_ns(void);

/* Logs once when the engine's heartbeat goes stale (and when it comes back). Slow paths. */
void tf__check_heartbeat(uint64_t now_ns);

/* VRAM helpers (hook_mem.c): reserve BYTES on region index IDX for this process. */
bool tf__reserve(int idx, uint64_t bytes);
void tf__unreserve(int idx, uint64_t bytes);

/* dlsym of the real libc (never our own dlsym). */
void *tf__real_dlsym(void *handle, const char *name);

/* Our hook for real function P, or P itself. */
void *tf__subst(void *p);

/* NVML side (hook_nvml.c): resolves the real libnvidia-ml.so.1 once; true if usable. */
bool tf__nvml_init(void);

/* Standalone controller (standalone.c): starts the in-process engine thread. */
void tf__standalone_start(void);

/* Module memory (hook_module.c): gives back the charges of context CTX (it went away); forgets
 * the parent's charges in a forked child. */
void tf__modules_sweep_ctx(uint64_t ctx);
void tf__modules_after_fork(void);

/* Resets the calling thread's launch batching and the launch cost model (hook_launch.c), in
 * a forked child. */
void tf__launch_after_fork(void);
/* CTX was destroyed or reset: the cost model's events on it are gone (hook_launch.c). */
void tf__launch_ctx_gone(CUcontext ctx);

struct tf_gpu_timer;
/* The launch cost model's timer over the real driver (gputime.c). */
void tf__gpu_timer(struct tf_gpu_timer *t);

/* The process's PID slot, claimed on first use; -1 if none could be had. */
int tf__slot(void);

#endif
