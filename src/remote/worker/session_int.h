/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to tf-worker's sessions (session.c: stream creation, dispatch and the connection
 * loop; sess_call.c: the plain driver calls of calls.def; sess_core.c: per-client handle
 * tables, the staging ring and cleanup; sess_mem.c: contexts and memory; sess_module.c:
 * modules, functions and launches; worker.c: the state shared by all sessions). Not a public
 * interface: see session.h.
 */
#ifndef TF_REMOTE_WORKER_SESSION_INT_H
#define TF_REMOTE_WORKER_SESSION_INT_H

#include "remote/codec.h"
#include "remote/htab.h"
#include "remote/rangeset.h"
#include "remote/worker/session.h"
#include "remote/worker/staging.h"

#include <stdint.h>

#define MAX_OBJECTS (1u << 18) /* handles per client */
#define MAX_RANGES (1u << 18)  /* allocations + globals per client */
#define MAX_KFUNCS 64          /* contexts a library kernel is resolved in */

struct kfunc {
    uint64_t ctx;
    CUfunction fn;
};

/* VRAM charged for a library's variables in one context. */
struct libcharge {
    uint64_t ctx;
    int64_t bytes;
};

struct obj {
    uint64_t id;
    unsigned type;  /* TF_PROTO_H_* */
    uint64_t ctx;   /* owning client context (0 for libraries and their kernels) */
    uint64_t owner; /* module/library of a function/kernel, graph of a node */
    union {
        CUcontext ctx;
        CUmodule mod;
        CUlibrary lib;
        CUfunction fn;
        CUkernel kern;
        CUstream st;
        CUevent ev;
        CUmemoryPool pool;
        CUgraph graph;
        CUgraphExec gexec;
        CUgraphNode node;
    } h;
    int dev;          /* contexts, pools: worker device index */
    uint32_t nparams; /* functions/kernels */
    uint32_t params_size;
    uint32_t *param_off;         /* nparams offsets, then nparams sizes */
    struct kfunc kf[MAX_KFUNCS]; /* kernels: their function per context */
    int nkf;
    int64_t var_bytes;               /* libraries: their variables, per context */
    struct libcharge lc[MAX_KFUNCS]; /* libraries: their variables charged per context */
    int nlc;
    /* VRAM bytes reserved for this object, released when the driver really frees them:
     * modules: their variables (charged at load); contexts: bytes the driver refused to free
     * (a free in a context broken by a fault), released once the context is destroyed;
     * pools: what they reserve from the driver, as last looked at (sess_pool.c). */
    int64_t bytes;
};

/* Staging ring per client: 4 chunks in flight are enough to keep the network and the device
 * copy overlapped, and a small ring stays in the CPU caches (on the simulated GPU, whose
 * device copies are CPU copies, 4 MiB cost ~15 % less CPU per byte than 16 MiB) and pins
 * less memory per client. DtoH cuts it into chunk slots (dtoh_pipelined). */
#define STAGE_BYTES (4u << 20)
_Static_assert(STAGE_BYTES % TF_PROTO_CHUNK == 0 && STAGE_BYTES >= 2 * TF_PROTO_CHUNK,
               "DtoH cuts the ring into at least two chunk slots");
#define STAGE_ENTRIES 256
#define EV_POOL 32

struct evslot {
    uint64_t ctx;
    CUevent ev;
};

struct session {
    struct tf_worker *w;
    const struct tf_drv *d;
    struct tf_wconn *c;
    struct tf_htab objs;
    struct tf_rangeset mem;  /* owner 0: allocation, a pool's id: allocation from it, else
                                module/library id of a global; aux: client context id */
    struct tf_rangeset gmem; /* graph memory: the allocation nodes' ranges of each live
                                executable graph (owner: its id), valid while it lives */
    struct tf_htab pools;    /* driver pool handle -> its object */
    int64_t pool_orphans[TF_PROTO_MAX_DEVICES]; /* charges of pools destroyed while in use */
    int64_t new_charge; /* VRAM a WORKER HOOK charged for the object its call creates */
    uint64_t primary[TF_PROTO_MAX_DEVICES];
    uint64_t cur_id; /* client context current on this thread */
    CUresult pending;
    struct tf_buf blob;   /* module image being uploaded */
    int64_t blob_charged; /* bytes of the worker's module budget held for BLOB (>= its cap) */
    int blob_refused;     /* an append did not fit the budget: the next load fails */
    struct tf_buf reply;
    uint64_t next_worker_serial;
    void *kparams[TF_PROTO_MAX_PARAMS];
    _Alignas(16) uint8_t pbuf[TF_PROTO_MAX_PARAM_BYTES];
    uint8_t *staging; /* DtoH chunk buffer */
    struct tf_stage stage;
    uint8_t *stage_mem; /* NULL until the first bulk copy */
    int stage_pinned;
    int stage_failed;
    struct evslot evs[EV_POOL]; /* spare events per context */
    int nevs;
    int goodbye;
    struct tf_cost_thread cost; /* this connection's launch cost-model state (compute.h) */
};

/* Each handler returns a CUresult (>= 0) or TF_EPROTO for a request that is malformed beyond
 * CUDA misuse (which closes the connection). */
#define PROTO_FAIL(s, msg)                                                                         \
    do {                                                                                           \
        (s)->why = (msg);                                                                          \
        return TF_EPROTO;                                                                          \
    } while (0)

struct req {
    const uint8_t *p; /* fixed part */
    const uint8_t *tail;
    size_t tlen;
    const char *why;
};

/* Selects objects for tf__ws_destroy_where. */
typedef int (*obj_pred)(const struct obj *o, uint64_t arg);

/* worker.c: the state shared by all sessions */
void tf__worker_vram_view(const struct tf_worker *w, int i, uint64_t phys_free, uint64_t phys_total,
                          uint64_t *free_out, uint64_t *total_out);

/* sess_core.c: handle tables, staging ring, cleanup */
void tf__ws_vram_freed(struct session *s, uint64_t ctx, int64_t bytes, CUresult freed);
void tf__ws_defer(struct session *s, CUresult r);
struct obj *tf__ws_obj_get(struct session *s, uint64_t id, unsigned type);
int tf__ws_client_id_ok(struct session *s, uint64_t id, unsigned type);
struct obj *tf__ws_obj_new(struct session *s, uint64_t id, unsigned type, uint64_t ctx);
void tf__ws_obj_drop(struct session *s, struct obj *o);
CUresult tf__ws_use_ctx(struct session *s, uint64_t id, struct obj **out);
CUresult tf__ws_get_stream(struct session *s, uint64_t id, CUstream *st);
CUresult tf__ws_get_event(struct session *s, uint64_t id, CUevent *ev);
CUresult tf__ws_ev_get(struct session *s, uint64_t ctx, CUevent *ev);
void tf__ws_ev_put(struct session *s, uint64_t ctx, CUevent ev);
int tf__ws_stage_ready(struct session *s);
void tf__ws_stage_reap(struct session *s);
void tf__ws_stage_drain(struct session *s);
uint8_t *tf__ws_stage_alloc(struct session *s, size_t n, size_t *off, size_t *charge);
int tf__ws_mem_ok(struct session *s, uint64_t ptr, uint64_t len);
int tf__ws_ctx_dev(struct session *s, uint64_t ctx);
/* Gives O's driver object back to the driver (nothing else: O stays registered). */
void tf__ws_release_handle(struct session *s, struct obj *o);
/* Releases O's driver object and forgets O. */
void tf__ws_destroy_obj(struct session *s, struct obj *o);
void tf__ws_destroy_where(struct session *s, unsigned type, obj_pred pred, uint64_t arg);
int tf__ws_pred_owner(const struct obj *o, uint64_t owner);
void tf__ws_destroy_ctx(struct session *s, struct obj *ctx);
void tf__ws_session_cleanup(struct session *s);

/* sess_mem.c: contexts and memory requests */
int tf__ws_h_ctx_create(struct session *s, struct req *q, int primary);
int tf__ws_h_ctx_destroy(struct session *s, struct req *q);
int tf__ws_h_primary_drop(struct session *s, struct req *q);
int tf__ws_h_mem_alloc(struct session *s, struct req *q);
int tf__ws_h_mem_pitch(struct session *s, struct req *q);
int tf__ws_h_mem_free(struct session *s, struct req *q);
int tf__ws_h_mem_info(struct session *s, struct req *q);
int tf__ws_htod_chunk(struct session *s, const struct tf_msg_htod_req *m, const uint8_t *src,
                      size_t n);
int tf__ws_h_htod(struct session *s, struct req *q);
int tf__ws_h_dtoh(struct session *s, struct req *q);
int tf__ws_h_dtod(struct session *s, struct req *q);
int tf__ws_h_memset(struct session *s, struct req *q);
int tf__ws_h_ptr_attr(struct session *s, struct req *q);
int tf__ws_h_blob(struct session *s, struct req *q);
/* Drops the module image buffer and gives its budget back. */
void tf__ws_blob_drop(struct session *s);

/* sess_module.c: modules, functions, launches */
int tf__ws_h_module_load(struct session *s, struct req *q);
int tf__ws_h_module_unload(struct session *s, struct req *q);
int tf__ws_h_get_func(struct session *s, struct req *q, int from_kernel);
int tf__ws_h_get_global(struct session *s, struct req *q);
int tf__ws_h_launch(struct session *s, struct req *q);
int tf__ws_h_graph_kernel_node(struct session *s, struct req *q);
/* The function of kernel object K in context CTX (current), resolved once per context. */
CUresult tf__ws_kernel_func(struct session *s, struct obj *k, uint64_t ctx, CUfunction *fn);

/* sess_vars.c: library variables against the VRAM limit: sized at load, charged per context on
 * first use (CUDA_ERROR_OUT_OF_MEMORY: they do not fit), released at unload (FREED: what the
 * driver answered) or with the context. */
void tf__ws_vars_library(struct session *s, struct obj *lib, const void *img, size_t len);
CUresult tf__ws_vars_use(struct session *s, struct obj *lib, uint64_t ctx);
void tf__ws_vars_unload(struct session *s, struct obj *lib, CUresult freed);
void tf__ws_vars_ctx_gone(struct session *s, uint64_t ctx);

/* sess_pool.c: memory pools against the VRAM limit. A new pool object is registered
 * (pool_added: 0, or an error when it cannot be, and then the pool must go); its charge is set
 * to what it reserves from the driver (pools_settle: DEV's pools, -1: all; returns the bytes
 * given back to the limit), released when it is destroyed (pool_release) or with the session
 * (pools_gone). */
int tf__ws_pool_added(struct session *s, struct obj *p);
int64_t tf__ws_pools_settle(struct session *s, int dev);
void tf__ws_pool_release(struct session *s, struct obj *p);
void tf__ws_pools_gone(struct session *s);

/* sess_call.c: the plain driver calls of calls.def (SYNC: CALL, else CALL_ASYNC) */
int tf__ws_h_call(struct session *s, struct req *q, int sync);
/* The driver call of a calls.def entry with decoded arguments V (outputs O, new handles NH). */
typedef CUresult (*tf_ws_tramp)(void *fn, const uint64_t *v, uint64_t *o, void **nh);
/* WORKER HOOK entries of calls.def: the hook makes the call (CALL(FN, V, O, NH)) with what it
 * must do around it; CTX is the call's context id, V's handles are resolved. */
#define TF__WS_HOOK_PLAIN(sym)
#define TF__WS_HOOK_HOOK(sym)                                                                      \
    CUresult tf__ws_hook_##sym(struct session *s, uint64_t ctx, tf_ws_tramp call, void *fn,        \
                               const uint64_t *v, uint64_t *o, void **nh);
#define C(code, sym, kind, ctx, waits, client, worker, fallback, args) TF__WS_HOOK_##worker(sym)
#include "remote/calls.def"
#undef C
/* The compute limit's charge for launch L (its tokens taken, waiting for them if need be),
 * right before it is issued; tf_wcompute_issued right after. */
void tf__ws_charge_launch(struct session *s, struct tf_wlaunch *l);

#endif
