/* SPDX-License-Identifier: Apache-2.0
 *
 * Internals of libtf_client.so, the remote-GPU client installed as libcuda.so.1: the one
 * per-process connection to a tf-worker, the client-side object tables and caches, and the
 * request machinery the API entry points (api_*.c) are built on. Private to the client.
 *
 * Process state. The CUDA driver API is process-global, so the library keeps exactly one
 * struct tfc (tfc_get()); it is the only mutable global and nothing outside the library sees
 * it. tfc.lock guards every field (connection, batch, tables) and is taken by each API call
 * that touches them; calls from many threads therefore serialise on the connection (a
 * blocking synchronise from one thread delays the calls of other threads until it returns).
 * The current-context stack is per thread (thread-local, no lock).
 *
 * Latency design. Requests with asynchronous CUDA semantics are appended to the batch
 * (tfc_async) and leave in one BATCH frame when the next request that needs a reply is sent
 * (tfc_call) or when the pump thread finds the batch older than TF_REMOTE_FLUSH_US; their
 * errors come back with the next reply. Device facts, function layouts and attributes are
 * cached at connect / module load and answered locally. Bulk copies travel in TF_PROTO_CHUNK
 * frames sent straight from (HtoD) and received straight into (DtoH) the caller's buffer.
 *
 * Failure. When the worker goes away (EOF, reset, no byte for TF_REMOTE_TIMEOUT_MS while a
 * reply is due) the connection is marked lost: the pending call and every later call that
 * needs the worker return CUDA_ERROR_LAUNCH_FAILED at once; cached queries keep answering.
 */
#ifndef TF_REMOTE_CLIENT_H
#define TF_REMOTE_CLIENT_H

#include "remote/buf.h"
#include "remote/calls.h"
#include "remote/codec.h"
#include "remote/htab.h"
#include "remote/rangeset.h"

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TFC_API __attribute__((visibility("default")))

#define TFC_BATCH_MAX (256u * 1024u) /* flush the batch beyond this many bytes */
#define TFC_INLINE_MAX (16u * 1024u) /* larger HtoD tails go in their own frame */
#define TFC_CTX_STACK 64             /* per-thread context stack depth */

enum tfc_state { TFC_UNINIT = 0, TFC_CONNECTED = 1, TFC_LOST = 2 };

struct tfc_dev {
    char name[257];
    uint8_t uuid[16];
    uint64_t total;
    uint32_t nattrs;
    int32_t *attr_val; /* nattrs */
    uint32_t *attr_st;
    /* Primary context (client-side refcount; the worker holds one real context for it). */
    uint64_t primary;
    int primary_refs;
    unsigned primary_flags;
    /* Memory pools (api_pool.c): the session's default pool on the worker (0: not yet
     * created) and the current one (0: the default). */
    uint64_t pool_default, pool_current;
};

/* Every client object (context, module, library, function, kernel, stream, event, pool,
 * graph, executable graph) starts with these fields, in this order; objects of the kinds
 * without client-side state are just this. */
struct tfc_obj {
    uint64_t id;
    unsigned type; /* TF_PROTO_H_* */
    uint64_t ctx;  /* the context it belongs to (a context: itself; 0: none) */
};

struct tfc_ctx {
    uint64_t id;
    unsigned type; /* TF_PROTO_H_CTX */
    uint64_t ctx;  /* = id */
    int dev;
    unsigned flags;
    int primary;
    CUresult sticky; /* a kernel fault poisoned the context: every later call returns it */
};

struct tfc_func {
    uint64_t id;
    unsigned type;  /* TF_PROTO_H_FUNC or TF_PROTO_H_KERNEL */
    uint64_t ctx;   /* FUNC: context it belongs to */
    uint64_t owner; /* module or library */
    uint32_t nparams, params_size;
    uint32_t *off, *sz;
    uint32_t nattrs;
    int32_t *attr_val;
    uint32_t *attr_st;
    char *name;
    struct tfc_func *next_in_owner;
    /* KERNEL: its functions per context (cuKernelGetFunction / launches). */
    struct tfc_kfunc {
        uint64_t ctx;
        uint64_t func;
    } kf[8];
    int nkf;
};

struct tfc_module {
    uint64_t id;
    unsigned type; /* TF_PROTO_H_MODULE or TF_PROTO_H_LIBRARY */
    uint64_t ctx;
    struct tfc_func *funcs; /* known functions/kernels, by name */
    uint64_t alias;         /* cuLibraryGetModule: the library it is the module of in CTX */
};

/* Stream capture (api_capture.c). A capture is owned by its origin stream; the streams that
 * joined it and the events recorded in it name it by (origin stream, capture serial), so
 * nothing dangles once it ends. */
struct tfc_capture;
struct tfc_capref {
    uint64_t origin;
    uint64_t serial;
};

struct tfc_stream {
    uint64_t id;
    unsigned type; /* TF_PROTO_H_STREAM */
    uint64_t ctx;
    unsigned flags;
    int priority;
    struct tfc_capref cap;       /* the capture it takes part in, if any */
    struct tfc_capture *capture; /* the capture it began (origin) */
};

struct tfc_event {
    uint64_t id;
    unsigned type; /* TF_PROTO_H_EVENT */
    uint64_t ctx;
    unsigned flags;
    struct tfc_capref cap; /* the capture it was last recorded in, if any */
};

struct tfc_pool {
    uint64_t id;
    unsigned type; /* TF_PROTO_H_POOL */
    uint64_t ctx;  /* 0: pools are device-wide */
    int dev;
};

struct tfc_node {
    uint64_t id;
    unsigned type; /* TF_PROTO_H_NODE */
    uint64_t ctx;
    uint64_t graph; /* the graph it belongs to */
};

/* A DtoH transfer whose DATA events are expected. */
struct tfc_xfer {
    uint64_t tag;
    uint8_t *dst;
    uint64_t len;
    int done;
    CUresult status;
};

struct tfc {
    pthread_mutex_t lock;
    enum tfc_state state;
    pid_t pid; /* process that connected (fork detection) */
    int fd;
    char address[300];
    int timeout_ms;
    int flush_us;
    int64_t spin_ns; /* TF_REMOTE_SPIN_US: polls this long for an answer before sleeping */
    /* Outgoing batch of ASYNC records. */
    struct tf_buf tx;
    _Atomic int64_t tx_since_ns; /* when the batch became non-empty; 0: empty */
    /* Incoming bytes, always starting at a frame boundary at rx_off. */
    struct tf_buf rx;
    size_t rx_off;
    struct tf_buf reply; /* payload of the last reply */
    uint64_t next_req;
    uint64_t next_serial;
    /* Tables. objs: every client object by id; mem: device allocations + globals;
     * host: cuMemAllocHost blocks (key: address, value: size as pointer-sized integer). */
    struct tf_htab objs;
    struct tf_htab progs; /* captured programs (api_capture.c) by graph / executable id */
    struct tf_rangeset mem;
    struct tf_rangeset host;
    struct tf_htab xfers;
    _Atomic int nxfers;
    /* Devices. */
    int ndev;
    int driver_version;
    struct tfc_dev dev[TF_PROTO_MAX_DEVICES];
    /* Pump thread: flushes old batches, drains DATA events of async copies. */
    pthread_t pump;
    int pump_running;
    _Atomic int pump_stop;
    int lost_logged;
    uint64_t round_trips; /* blocking requests (tfc_call); TF_REMOTE_STATS reports them */
};

#define TFC_OBJ_LAYOUT(T)                                                                          \
    _Static_assert(offsetof(struct T, id) == offsetof(struct tfc_obj, id) &&                       \
                       offsetof(struct T, type) == offsetof(struct tfc_obj, type) &&               \
                       offsetof(struct T, ctx) == offsetof(struct tfc_obj, ctx),                   \
                   #T " starts as struct tfc_obj")
TFC_OBJ_LAYOUT(tfc_ctx);
TFC_OBJ_LAYOUT(tfc_func);
TFC_OBJ_LAYOUT(tfc_module);
TFC_OBJ_LAYOUT(tfc_stream);
TFC_OBJ_LAYOUT(tfc_event);
TFC_OBJ_LAYOUT(tfc_pool);
TFC_OBJ_LAYOUT(tfc_node);

struct tfc *tfc_get(void);

/* Thread-local current context (0: none). */
uint64_t tfc_current(void);
void tfc_set_current(uint64_t ctx);
int tfc_push(uint64_t ctx);
uint64_t tfc_pop(void);

/* Entry checks for calls that need the worker. Take T->lock first. Returns CUDA_SUCCESS when
 * connected, CUDA_ERROR_NOT_INITIALIZED before cuInit, CUDA_ERROR_LAUNCH_FAILED when lost. */
CUresult tfc_ready(struct tfc *t);
/* Connects (cuInit) to TF_REMOTE or, when that is unset or empty and TF_CONTROLLER_URL is
 * set, to the worker the controller names for TF_CONNECTION_NAMESPACE/TF_CONNECTION_NAME
 * (locate.h; waits up to TF_CONNECT_WAIT_MS, holding the lock). Lock held. */
CUresult tfc_connect(struct tfc *t);
/* Marks the connection lost (logs WHY once). Lock held. */
void tfc_lose(struct tfc *t, const char *why);

/* A fresh client id of TYPE. Lock held. */
uint64_t tfc_new_id(struct tfc *t, unsigned type);

/* Appends an ASYNC request (fixed part FIXED/FLEN plus TAIL/TLEN) to the batch, flushing
 * first when it would overflow; tails above TFC_INLINE_MAX leave at once in their own frame,
 * sent from TAIL without a copy. Lock held. CUDA_SUCCESS or CUDA_ERROR_LAUNCH_FAILED. */
CUresult tfc_async(struct tfc *t, uint16_t op, const uint8_t *fixed, size_t flen, const void *tail,
                   size_t tlen);
/* Room for an ASYNC record of BODY bytes at the end of the batch (the record header is
 * written); NULL if the connection failed. Lock held. */
uint8_t *tfc_async_reserve(struct tfc *t, uint16_t op, size_t body);
/* Sends the batch now. Lock held. */
CUresult tfc_flush(struct tfc *t);
/* Sends the batch and a SYNC request, then waits for its reply (handling the events that
 * arrive first). On CUDA_SUCCESS-or-error replies, returns the reply status and leaves the
 * reply payload in t->reply (at least the reply layout's size). Lock held. */
CUresult tfc_call(struct tfc *t, uint16_t op, const uint8_t *fixed, size_t flen, const void *tail,
                  size_t tlen);
/* Processes incoming events without blocking (pump thread, send back-pressure). Lock held. */
void tfc_drain(struct tfc *t);

/* Copies and memsets in the current context (api_mem.c; take the lock): HtoD/DtoH on stream
 * HS (SYNC: a synchronous copy, done on return), DtoD and memsets of COUNT elements of ELEM
 * bytes (1, 2, 4) asynchronous on HS. tfc_copies_done waits for the copies sent so far (one
 * round trip: their data has landed, their errors are reported). tfc_is_dev: [P, P+N) lies in
 * one of this process's allocations or globals. */
CUresult tfc_htod(CUdeviceptr dst, const void *src, size_t n, CUstream hs, int sync);
CUresult tfc_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream hs, int sync);
/* SYNC of tfc_htod / tfc_dtoh for a captured program's host step replayed by a graph launch:
 * asynchronous, neither captured nor checked here (the memory may be graph memory the
 * program frees; the worker checks it against its executable graphs). */
#define TFC_COPY_REPLAY 2
CUresult tfc_dtod(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream hs);
CUresult tfc_memset(CUdeviceptr dst, uint32_t value, size_t count, uint32_t elem, CUstream hs);
CUresult tfc_copies_done(void);
int tfc_is_dev(CUdeviceptr p, size_t n);

/* The sticky error of context CTX (CUDA_SUCCESS when healthy). Replies carrying a sticky
 * code (illegal address, launch failure, ...) mark the calling thread's current context, so
 * later fire-and-forget calls in it fail at once, as on a local GPU. Lock held. */
CUresult tfc_sticky(struct tfc *t, uint64_t ctx);

/* Forwards the plain driver call D (calls.def) with its arguments A by position (A_IN/A_DEV
 * encoded, handles as ids; A_NEW positions get the new object's id). Checks handles and the
 * context, sends it (batched when asynchronous) and, for a synchronous call that succeeded,
 * stores the outputs in O by position. PTSZ: the NULL stream is the per-thread stream.
 * Takes the lock. */
CUresult tfc_forward(const struct tf_call_desc *d, int ptsz, uint64_t *a, uint64_t *o);
/* Hand-written entry points around generated forwards (CLIENT HOOK in calls.def). */
#define C(code, sym, kind, ctx, waits, client, worker, fallback, args)                             \
    TF_PP_CAT(TFC_DECL_, client)(sym, args)
#define TFC_DECL_EXP(sym, args)
#define TFC_DECL_PTSZ(sym, args)
#define TFC_DECL_HOOK(sym, args) CUresult tfc_fwd_##sym(TF_CALL_PARAMS(args));
#include "remote/calls.def"
#undef C
#undef TFC_DECL_EXP
#undef TFC_DECL_PTSZ
#undef TFC_DECL_HOOK

/* A new object of TYPE (any kind without client-side state) in context CTX, registered under
 * ID. Lock held. NULL when out of memory. */
struct tfc_obj *tfc_obj_add(struct tfc *t, uint64_t id, unsigned type, uint64_t ctx);
/* Forgets object O and frees it. Lock held. */
void tfc_obj_drop(struct tfc *t, struct tfc_obj *o);

/* Object lookups (NULL when ID is not a live object of that type). Lock held. */
void *tfc_obj(struct tfc *t, uint64_t id, unsigned type);
struct tfc_ctx *tfc_ctx_of(struct tfc *t, uint64_t id);

/* Registers a function record received from the worker under OWNER (module/library) and
 * returns it (NULL on allocation failure). Lock held. */
struct tfc_func *tfc_func_add(struct tfc *t, const struct tf_proto_func *f, unsigned type,
                              uint64_t id, uint64_t owner, uint64_t ctx);
void tfc_func_free(struct tfc_func *f);

/* Graphs built node by node (api_graph.c): checks DEPS (N of them) name distinct nodes of
 * graph G; after the node *PNODE was added (R: the result; nothing happens unless it
 * succeeded), names it a node of G and adds its edges from DEPS. Take the lock. */
CUresult tfc_graph_deps(CUgraph g, const CUgraphNode *deps, size_t n);
CUresult tfc_graph_node_added(CUresult r, const CUgraphNode *pnode, CUgraph g,
                              const CUgraphNode *deps, size_t n);

/* Stream capture with host steps (api_capture.c). Lock held. tfc_capture_route: the stream
 * the worker runs work of stream SID on (while SID takes part in a capture, the capture's
 * origin: a capture's work is serialised in issue order on one worker stream).
 * tfc_capture_call: the capture's view of a plain forward D with arguments A: routes its
 * streams, notes event records in a capture, answers waits on captured events (joining the
 * capture) itself; returns 1 (with *R) when nothing is to be sent. tfc_capture_step: records
 * a host step (TFC_STEP_*) in SID's capture, or returns 0 when SID is not capturing; the
 * lock is released and taken again. tfc_capture_gone: frees what stream S's capture kept. */
enum { TFC_STEP_SEG, TFC_STEP_HTOD, TFC_STEP_DTOH, TFC_STEP_HOST };
struct tfc_step {
    int kind;
    uint64_t id;     /* SEG: the worker graph, or executable graph */
    CUdeviceptr dev; /* HTOD destination, DTOH source */
    void *host;      /* HTOD source, DTOH destination, HOST argument */
    size_t n;
    CUhostFn fn;
};
uint64_t tfc_capture_route(struct tfc *t, uint64_t sid);
int tfc_capture_call(struct tfc *t, const struct tf_call_desc *d, uint64_t *a, CUresult *r);
int tfc_capture_step(struct tfc *t, uint64_t sid, const struct tfc_step *st, CUresult *r);
void tfc_capture_gone(struct tfc *t, struct tfc_stream *s);
/* An allocation on stream SID succeeded: in a capture, a graph memory node. Lock held. */
void tfc_capture_note_alloc(struct tfc *t, uint64_t sid);
/* Destroys the other segments of captured graph G, if it is a program. Takes the lock. */
CUresult tfc_capture_graph_gone(CUgraph g);

/* Stream handle -> wire id (NULL -> TF_PROTO_STREAM_NULL, CU_STREAM_LEGACY, ...). Returns
 * CUDA_ERROR_INVALID_HANDLE for an unknown stream. PTDS maps the NULL stream to the
 * per-thread stream (the _ptsz/_ptds entry points). Lock held. */
CUresult tfc_stream_id(struct tfc *t, CUstream s, uint64_t *id);

#endif
