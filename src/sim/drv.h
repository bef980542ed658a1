/* SPDX-License-Identifier: Apache-2.0
 *
 * Private header of the simulated libcuda.so.1: the driver's objects and the functions the
 * entry-point files (cu_*.c) share. Not installed, not used outside src/sim.
 *
 * Object model (all handles handed to applications are pointers to these structs, checked
 * against the handle registry before use, so a stale or foreign handle yields
 * CUDA_ERROR_INVALID_HANDLE / INVALID_CONTEXT instead of a crash):
 *   driver (one per process, tf__drv()) -> devices[ndev] -> executor (one thread per device)
 *   context (CUctx_st) -> streams (CUstream_st), events (CUevent_st), modules (CUmod_st)
 *   allocations: one process-wide table of address ranges (memtab.c)
 *
 * Locking order (outer to inner): drv.mu -> device.mu -> ctx.mu -> exec.mu -> memtab lock
 * -> handle registry lock. The executor thread holds exec.mu only while picking or
 * completing work, never while executing it. The shared device region's own mutex
 * (devshm.c) is innermost and never held across calls.
 */
#ifndef TF_SIM_DRV_H
#define TF_SIM_DRV_H

#include "sim/cuda_api.h"
#include "sim/devshm.h"
#include "sim/simcfg.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define TF_SIM_DRIVER_VERSION 13000 /* cuDriverGetVersion */
#define TF_SIM_CTX_API_VERSION 3020 /* cuCtxGetApiVersion */

struct sim_op;
struct tf_ptx_range;

/* ---- Handle registry (handles.c) ------------------------------------------------------- */
enum sim_htype {
    H_CTX = 1,
    H_STREAM,
    H_EVENT,
    H_MODULE,
    H_FUNC,
    H_LIBRARY,
    H_KERNEL,
    H_POOL,
    H_GRAPH,
    H_GNODE,
    H_GEXEC,
};
/* Registers P as a live handle of TYPE; 0 or TF_ENOMEM. Thread-safe. */
int tf__handle_add(const void *p, enum sim_htype type);
void tf__handle_del(const void *p);
/* True when P is a live handle of TYPE. */
int tf__handle_is(const void *p, enum sim_htype type);

/* ---- Executor (exec.c) ----------------------------------------------------------------- */
struct sim_exec {
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* the executor waits here for runnable work */
    pthread_cond_t done_cv; /* host threads wait here for completions */
    pthread_t thread;
    int started, stop;
    /* Host functions run on a second thread, so one that blocks holds up only its stream
     * (and work ordered after it), as with the real driver's callback thread. */
    pthread_t host_thread;
    pthread_cond_t host_cv;
    struct sim_op *host_head, *host_tail; /* guarded by mu */
    uint64_t next_seq;                    /* guarded by mu */
    struct CUstream_st *streams;          /* live streams of the device, guarded by mu */
    struct CUevent_st *events;            /* live events of the device's contexts, guarded by mu */
    struct tf_ptx_range *ranges;          /* memview cache, executor thread only */
    size_t nranges, cap_ranges;
    uint64_t view_gen;
    struct CUctx_st *view_ctx; /* the context the cache is for */
};

/* ---- Devices --------------------------------------------------------------------------- */
struct sim_device {
    int index;                       /* CUDA ordinal (after CUDA_VISIBLE_DEVICES) */
    int phys;                        /* index in the machine's list: cfg.dev, NVML, PCI bus */
    const struct tf_sim_devcfg *cfg; /* &drv.cfg.dev[phys], or a MIG device's &drv.migcfg[] */
    int64_t total_mem;               /* budget in force (the shared region's) */
    struct tf_sim_shm *shm;          /* shared state, opened at cuInit */
    _Atomic int slot;          /* this process's slot in shm while it has contexts here, or -1 */
    pthread_mutex_t attach_mu; /* guards slot changes and users */
    int users;                 /* live contexts (and creations in progress) on the device */
    pthread_mutex_t mu;        /* guards the primary context fields; taken before attach_mu */
    struct CUctx_st *primary;
    int primary_refs;
    unsigned primary_flags;
    struct sim_exec exec;
};

struct sim_driver {
    pthread_mutex_t mu; /* guards ctx_list and zombie contexts */
    CUresult init_result;
    struct tf_sim_config cfg; /* every device of the machine */
    /* MIG devices made visible by CUDA_VISIBLE_DEVICES=MIG-...: their configuration, derived
     * from the GPU's and the instance's template (memory, SM share, UUID). */
    struct tf_sim_devcfg migcfg[TF_SIM_MAX_DEVICES];
    int ndev; /* devices visible to CUDA (CUDA_VISIBLE_DEVICES) */
    struct sim_device dev[TF_SIM_MAX_DEVICES];
    struct CUctx_st *ctx_list; /* all contexts ever created (destroyed ones stay as zombies) */
    _Atomic unsigned long long next_id;
    uint64_t max_insns; /* TF_SIM_LAUNCH_MAX_INSNS: 0 = unlimited */
};

/* The process's driver state; NULL before a successful cuInit. */
struct sim_driver *tf__drv(void);
/* CUDA_SUCCESS when cuInit succeeded, else NOT_INITIALIZED (or the init failure). */
CUresult tf__init_check(void);
/* Device DEV or NULL (INVALID_DEVICE). */
struct sim_device *tf__device(CUdevice dev);
/* Takes a reference on D for a context being created: the first one attaches this process to
 * the device's shared state (it then shows in NVML's process list) and starts the
 * executor. Every successful call is paired with one tf__device_unref (context teardown, or
 * a failed creation); the last one detaches the process again. */
CUresult tf__device_ref(struct sim_device *d);
void tf__device_unref(struct sim_device *d);

/* ---- Contexts (cu_ctx.c) --------------------------------------------------------------- */
enum { SIM_LIMIT_COUNT = 8 };
struct CUctx_st {
    struct sim_device *dev;
    struct CUctx_st *next_all; /* drv.ctx_list */
    unsigned flags;
    int primary;
    _Atomic int destroyed;
    _Atomic int sticky; /* CUresult of a fault that broke the context, 0 if none */
    unsigned long long id;
    struct CUstream_st *null_stream; /* the legacy default stream */
    pthread_mutex_t mu;              /* guards modules, ptds, limits, cache_config */
    struct CUmod_st *modules;
    size_t limits[SIM_LIMIT_COUNT];
    CUfunc_cache cache_config;
    _Atomic int captures;           /* active stream capture sequences (cu_capture.c) */
    _Atomic int capturing_blocking; /* blocking streams among their streams */
};

/* The calling thread's current context, checked: NOT_INITIALIZED, INVALID_CONTEXT (none),
 * CONTEXT_IS_DESTROYED, or the context's sticky error unless ALLOW_STICKY. */
CUresult tf__ctx_current(CUcontext *out, int allow_sticky);
/* Validates a context handle (NULL -> current). */
CUresult tf__ctx_resolve(CUcontext in, CUcontext *out, int allow_sticky);
/* Creates a context on D (primary or not), with its legacy stream. */
CUresult tf__ctx_new(struct sim_device *d, unsigned flags, int primary, CUcontext *out);
/* Waits for all work, frees all resources of CTX (allocations, modules, streams, events);
 * the struct itself stays (marked destroyed) unless it is a primary context. */
void tf__ctx_teardown(CUcontext ctx);
/* Re-activates a torn-down primary context (same handle, fresh state). */
CUresult tf__ctx_revive(CUcontext ctx, unsigned flags);
/* Marks CTX broken by a device fault. */
void tf__ctx_set_sticky(CUcontext ctx, CUresult err);
/* Waits until every stream of CTX is idle; returns CTX's sticky error or success. */
CUresult tf__ctx_sync(CUcontext ctx);

/* ---- Streams and events (cu_stream.c) -------------------------------------------------- */
enum sim_stream_kind { S_LEGACY = 1, S_PER_THREAD, S_USER };
struct CUstream_st {
    CUcontext ctx;
    struct sim_device *dev;
    unsigned flags; /* CU_STREAM_NON_BLOCKING */
    int priority;
    enum sim_stream_kind kind;
    unsigned long long id;
    pthread_t owner;                   /* S_PER_THREAD: the thread it belongs to */
    _Atomic(struct sim_capture *) cap; /* the capture sequence it is part of (cu_capture.c) */
    /* Guarded by dev->exec.mu: */
    struct sim_op *head, *tail;
    uint64_t last_seq; /* seq of the last op enqueued */
    /* Newest (stream id, seq) this stream was made to wait for by cuStreamWaitEvent, per
     * waited stream (the oldest entry is replaced): what the stream-ordered allocator's
     * event-dependency reuse rule reads. */
    struct {
        unsigned long long id;
        uint64_t seq;
    } waited[4];
    _Atomic uint64_t done_seq; /* seq of the last op completed (ops complete in stream order);
                                  written under exec.mu, read lock-free by other devices */
    int refs;                  /* 1 while the handle lives + 1 per op or wait that names it */
    int destroyed;
    struct CUstream_st *next; /* exec.streams */
};

struct CUevent_st {
    CUcontext ctx;
    unsigned flags;
    /* Guarded by ctx->dev->exec.mu: */
    struct CUstream_st *rec_stream; /* stream of the latest record (ref held), or NULL */
    uint64_t rec_seq;               /* its op's seq */
    uint64_t time_seq;              /* seq of the record whose time is in time_ns */
    uint64_t time_ns;
    int refs; /* 1 while the handle lives + 1 per pending record op */
    int destroyed;
    struct CUevent_st *next; /* exec.events */
    /* Its latest record in a capturing stream (guarded by the graph mutex, cu_capture.c):
     * the capture's id (0: none) and the stream's dependency set at that point. */
    _Atomic unsigned long long cap_id;
    CUgraphNode *cap_deps;
    size_t ncap_deps;
};

/* Resolves a stream argument for CTX: NULL means the legacy stream, or the per-thread stream
 * when PER_THREAD (a _ptsz/_ptds entry point); CU_STREAM_LEGACY / CU_STREAM_PER_THREAD are
 * the special handles. Fails with INVALID_HANDLE for unknown or destroyed streams or streams
 * of another context. */
CUresult tf__stream_resolve(CUcontext ctx, CUstream h, int per_thread, struct CUstream_st **out);
/* The calling thread's current context (checked as tf__ctx_current, into *PCTX if not NULL)
 * and stream H of it resolved (as tf__stream_resolve). */
CUresult tf__cur_stream(CUstream h, int per_thread, int allow_sticky, CUcontext *pctx,
                        struct CUstream_st **out);
/* Creates a stream (kind S_USER or S_LEGACY) of CTX. */
CUresult tf__stream_new(CUcontext ctx, unsigned flags, int priority, enum sim_stream_kind kind,
                        struct CUstream_st **out);
/* Drops the handle's reference (destroy): freed once its queue drains. */
void tf__stream_release_handle(struct CUstream_st *s);
/* Drops one reference taken for a wait op or an event (locks S's device exec.mu). */
void tf__stream_unref(struct CUstream_st *s);
/* Takes a reference on S (dropped with tf__stream_unref). */
void tf__stream_ref(struct CUstream_st *s);
/* The seq of the last op queued on S. */
uint64_t tf__stream_last_seq(struct CUstream_st *s);
/* Queues on S a wait for EV's latest record (nothing if it was never recorded). */
CUresult tf__stream_wait_event_now(struct CUstream_st *s, struct CUevent_st *ev);
/* Queues on S a wait for op SEQ of TARGET (as cuStreamWaitEvent does for a record). */
CUresult tf__stream_wait_seq(struct CUstream_st *s, struct CUstream_st *target, uint64_t seq);
/* True when work queued on S from now on runs after op SEQ of stream T (same stream, the
 * legacy stream's implicit synchronisation, or a cuStreamWaitEvent recorded in S->waited).
 * T may be gone: only its id, kind, flags and context are given. */
int tf__stream_follows(struct CUstream_st *s, unsigned long long t_id, enum sim_stream_kind t_kind,
                       unsigned t_flags, CUcontext t_ctx, uint64_t seq);

/* ---- Work queue (exec.c) --------------------------------------------------------------- */
enum sim_op_kind {
    OP_COPY = 1,   /* memcpy */
    OP_SET,        /* memset of 1/2/4-byte elements */
    OP_RECORD,     /* event record */
    OP_WAIT,       /* stream waits for (stream, seq) */
    OP_HOST,       /* host function */
    OP_FREE,       /* stream-ordered free */
    OP_KERNEL,     /* kernel launch (cu_launch.c) */
    OP_SYNC_POINT, /* no-op whose completion a host thread waits for */
    OP_GALLOC,     /* a graph allocation comes into existence (cu_gexec.c) */
};

struct sim_kernel_op;  /* cu_launch.c */
struct sim_pool_block; /* cu_pool.c */
struct sim_gmem;       /* cu_gexec.c */
struct sim_capture;    /* cu_capture.c */

struct sim_op {
    struct sim_op *next;
    struct sim_op *host_next;   /* exec.host_head queue */
    struct CUstream_st *stream; /* the stream it is queued on */
    uint64_t seq;
    enum sim_op_kind kind;
    int claimed; /* 1: executed by the enqueuing host thread, 2: by the executor */
    union {
        struct {
            void *dst;
            const void *src;
            size_t n;
            int to_device; /* the destination is device memory (see exec.c dma_copy) */
        } copy;
        struct {
            void *dst;
            uint32_t value;
            size_t count;
            int width;
        } set;
        struct {
            struct CUevent_st *ev;
            int external; /* CU_EVENT_RECORD_EXTERNAL: a node of its own when captured */
        } rec;
        struct {
            struct CUstream_st *stream;
            uint64_t seq;
        } wait;
        struct {
            CUhostFn fn;         /* cuLaunchHostFunc */
            CUstreamCallback cb; /* cuStreamAddCallback (fn NULL) */
            CUstream handle;     /* the stream argument given to cuStreamAddCallback */
            void *data;
        } host;
        struct {
            CUdeviceptr ptr;
            struct sim_pool_block *block; /* a pool allocation's block (cu_pool.c), or NULL */
        } free;
        struct sim_kernel_op *kernel;
        struct sim_gmem *galloc; /* a reference */
    } u;
};

/* Allocates a zeroed op. */
struct sim_op *tf__op_new(enum sim_op_kind kind);
/* Queues OP on S (takes ownership). When WAIT, blocks until OP has completed; if OP is
 * runnable at once it is executed on the calling thread. Returns S's context sticky error
 * when WAIT and the context broke, else CUDA_SUCCESS. */
CUresult tf__enqueue(struct CUstream_st *s, struct sim_op *op, int wait);
/* Blocks until every op queued on S so far has completed. */
void tf__stream_wait_idle(struct CUstream_st *s);
/* True when S has no pending op (exec.mu taken inside). */
int tf__stream_idle(struct CUstream_st *s);
/* Starts D's executor thread if needed. */
CUresult tf__exec_start(struct sim_device *d);
/* Stops all executor threads (library unload). */
void tf__exec_shutdown(void);
/* Runs a kernel op on the executor thread (cu_launch.c; absent without the PTX engine). */
void tf__kernel_run(struct sim_device *d, CUcontext ctx, struct sim_kernel_op *k);
void tf__kernel_free(struct sim_kernel_op *k);
/* Drops a reference of EV; frees it when it was the last. Caller holds E->mu. */
void tf__event_unref_locked(struct sim_exec *e, struct CUevent_st *ev);
/* Current memview ranges for a kernel of context CTX on device D (executor thread only). */
void tf__exec_memview(struct sim_device *d, CUcontext ctx, const struct tf_ptx_range **ranges,
                      size_t *n);

/* ---- Memory (memtab.c, cu_mem.c) ------------------------------------------------------- */
enum sim_mem_kind {
    M_DEVICE = 1, /* cuMemAlloc*, cuMemAllocPitch, cuMemAllocAsync */
    M_MANAGED,    /* cuMemAllocManaged */
    M_HOST,       /* cuMemAllocHost / cuMemHostAlloc / cuMemHostRegister (page-locked, mapped) */
    M_MODVAR,     /* module .global/.const variable */
};
/* Who owns an entry's backing memory. */
enum sim_backing {
    B_OWN = 0, /* memtab.c: allocated with the entry, freed (and uncharged) with it */
    B_POOL,    /* a memory pool's block (cu_pool.c), told when the entry goes */
    B_GRAPH,   /* a graph allocation (cu_gexec.c), told when the entry goes */
    B_USER,    /* the application's (cuMemHostRegister): never freed by the driver */
};
struct sim_alloc {
    uint64_t base, size;
    enum sim_mem_kind kind;
    int dev;            /* device index (host allocations: -1) */
    CUcontext ctx;      /* owner context: the entry goes when it is destroyed */
    unsigned flags;     /* cuMemHostAlloc / cuMemHostRegister / cuMemAllocManaged flags */
    int read_only;      /* .const variables, CU_MEMHOSTREGISTER_READ_ONLY */
    uint64_t buffer_id; /* CU_POINTER_ATTRIBUTE_BUFFER_ID */
    uint64_t charged;   /* bytes reserved in the device budget (B_OWN) */
    size_t map_len;     /* B_OWN: >0: backing is an mmap of this length, else malloc */
    enum sim_backing backing;
    void *owner; /* B_POOL: sim_pool_block; B_GRAPH: sim_gmem; M_MANAGED: sim_managed */
};
/* Allocates SIZE bytes of backing memory (zeroed) and registers it; *OUT gets the base. */
CUresult tf__mem_alloc(CUcontext ctx, enum sim_mem_kind kind, uint64_t size, unsigned flags,
                       int read_only, uint64_t *out);
/* The same, with OWNER kept in the entry (B_OWN: M_MANAGED's advice state, freed with it). */
CUresult tf__mem_alloc_owned(CUcontext ctx, enum sim_mem_kind kind, uint64_t size, unsigned flags,
                             void *owner, uint64_t *out);
/* Zeroed backing memory of SIZE bytes (mmap from 1 MiB: *MAP_LEN gets its length, else 0),
 * or NULL; freed with tf__mem_backing_free. Not registered, not charged. */
void *tf__mem_backing_alloc(uint64_t size, size_t *map_len);
void tf__mem_backing_free(void *p, size_t map_len);
/* Registers [BASE, BASE+SIZE) owned by OWNER (BACKING != B_OWN) for CTX, on device DEV
 * (-1: host memory); *BUFFER_ID (if not NULL) gets its buffer id. INVALID_VALUE when the
 * range overlaps an entry. */
CUresult tf__mem_insert(CUcontext ctx, int dev, enum sim_mem_kind kind, uint64_t base,
                        uint64_t size, unsigned flags, int read_only, enum sim_backing backing,
                        void *owner, uint64_t *buffer_id);
/* Unregisters the entry starting at BASE without touching its backing; *OUT (if not NULL)
 * gets it. 0, or TF_ENOENT. */
int tf__mem_remove(uint64_t base, struct sim_alloc *out);
/* Sets the size of the entry starting at BASE; with CTX, makes it a new allocation of CTX
 * (new buffer id into *BUFFER_ID). 0, or TF_ENOENT. */
int tf__mem_update(uint64_t base, uint64_t size, CUcontext ctx, uint64_t *buffer_id);
/* Unregisters and frees the allocation starting at BASE of KIND (any device kind when
 * KIND is 0); INVALID_VALUE when there is none (registered host memory is never freed). */
CUresult tf__mem_free(uint64_t base, enum sim_mem_kind kind);
/* Frees module variable BASE (module unload). */
void tf__mem_free_modvar(uint64_t base);
/* Frees every allocation owned by CTX. */
void tf__mem_free_ctx(CUcontext ctx);
/* Copies an allocation overlapping [BASE, BASE+SIZE) into *OUT; 0 if found, else TF_ENOENT. */
int tf__mem_overlap(uint64_t base, uint64_t size, struct sim_alloc *out);
/* Copies the allocation containing ADDR into *OUT; 0 if found, else TF_ENOENT. */
int tf__mem_lookup(uint64_t addr, struct sim_alloc *out);
/* True when [ADDR, ADDR+N) lies inside one allocation a device of index DEV can access. */
int tf__mem_range_ok(uint64_t addr, uint64_t n, int dev);
/* Change counter of the allocation table. */
uint64_t tf__mem_gen(void);
/* Writes the ranges a kernel of context CTX may access (sorted) into *V (grown with realloc):
 * CTX's own device memory and module variables, and page-locked host and managed memory of
 * the process (unified addressing maps those into every context). Another context's device
 * memory is not there, even on the same device: touching it is CUDA_ERROR_ILLEGAL_ADDRESS,
 * as on hardware. Returns the count, or (size_t)-1 on allocation failure. */
size_t tf__mem_ranges(CUcontext ctx, struct tf_ptx_range **v, size_t *cap);

/* ---- Managed memory (cu_managed.c) ---------------------------------------------------- */
struct sim_managed;
/* Managed memory of no context (a library's __managed__ variable): uncharged, freed with
 * tf__mem_free(*OUT, M_MANAGED). */
CUresult tf__managed_alloc_global(uint64_t size, uint64_t *out);
/* Frees the advice state of a managed allocation (NULL is fine). */
void tf__managed_state_free(struct sim_managed *m);

/* ---- Memory pools (cu_pool.c) ---------------------------------------------------------- */
/* The entry of a pool allocation went without cuMemFreeAsync (cuMemFree, context teardown):
 * its block returns to the pool. */
void tf__pool_entry_released(const struct sim_alloc *a);
/* The device of POOL. */
struct sim_device *tf__pool_device(CUmemoryPool pool);
/* The pool allocation A came from (NULL: not a pool allocation). */
CUmemoryPool tf__pool_of(const struct sim_alloc *a);
/* Executor: the stream-ordered free of BLOCK's allocation ran. */
void tf__pool_free_done(struct sim_pool_block *block);
/* After a stream, event or context synchronize on D: pools holding more than their release
 * threshold give idle memory back. */
void tf__pools_synced(struct sim_device *d);
/* Context teardown (before its device reference is dropped): when it is the device's last
 * context, the device's pools give all idle memory back to the budget. */
void tf__pools_ctx_gone(CUcontext ctx);

/* Frees every event of CTX (context teardown; cu_stream.c). */
void tf__events_free_ctx(CUcontext ctx);

/* ---- Graphs (cu_graph.c, cu_gexec.c, cu_capture.c; nograph.c without the PTX engine) ---- */
/* True when [P, P+N) lies inside a graph allocation's address range. */
int tf__gmem_contains(uint64_t p, uint64_t n);
/* Executor: graph allocation M comes into existence (OP_GALLOC); drops the op's reference. */
void tf__gmem_alloc_done(struct sim_gmem *m);
/* The entry of graph allocation A went (a free): it no longer exists. */
void tf__gmem_entry_released(const struct sim_alloc *a);
/* True when graph allocation A is freed by a node of its own graph (no other free). */
int tf__gmem_freed_in_graph(const struct sim_alloc *a);
/* OP queued on S while S captures: becomes a node (takes OP). WAIT: synchronous work. */
CUresult tf__capture_op(struct CUstream_st *s, struct sim_op *op, int wait);
/* The legacy stream of CTX used while a blocking stream captures: invalidates those
 * captures, returns CUDA_ERROR_STREAM_CAPTURE_IMPLICIT. */
CUresult tf__capture_implicit(CUcontext ctx);
/* Synchronizing or querying S (NULL: all of CTX) is allowed by capture: 0, or the error. */
CUresult tf__capture_sync_check(CUcontext ctx, struct CUstream_st *s);
/* Querying or synchronizing EV is allowed (not last recorded in an active capture). */
CUresult tf__capture_event_check(struct CUevent_st *ev);
/* A potentially unsafe call (allocation, free, ...) is allowed by the capture modes. */
CUresult tf__capture_unsafe_call(void);
/* Work may be queued on S outside of tf__enqueue (a graph launch, a stream-ordered
 * allocation): S is not capturing and, if legacy, usable. */
CUresult tf__capture_check_launch(struct CUstream_st *s);
/* cuStreamWaitEvent under capture: *HANDLED when capture rules decided it. */
CUresult tf__capture_wait_event(struct CUstream_st *s, struct CUevent_st *ev, unsigned flags,
                                int *handled);
/* CTX is being destroyed: its capture sequences end, their graphs discarded. */
void tf__capture_ctx_gone(CUcontext ctx);
/* cuMemAllocAsync / cuMemFreeAsync on a capturing stream: allocation and free nodes. */
CUresult tf__capture_mem_alloc(struct CUstream_st *s, uint64_t size, CUmemoryPool pool,
                               CUdeviceptr *out);
CUresult tf__capture_mem_free(struct CUstream_st *s, CUdeviceptr ptr);

/* ---- Modules (cu_module.c) ------------------------------------------------------------- */
/* Unloads every module of CTX (context teardown). */
void tf__modules_free_ctx(CUcontext ctx);

/* ---- Errors ---------------------------------------------------------------------------- */
/* Logs (once per WHAT, at warn) that a corner of the driver API is not implemented by the
 * simulated GPU and returns CUDA_ERROR_NOT_SUPPORTED. */
CUresult tf__not_supported(const char *what);
/* Sets the thread's "last error detail" shown by logs. */
const char *tf__cu_error_name(CUresult r);

#endif
