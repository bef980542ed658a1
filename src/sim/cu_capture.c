/* SPDX-License-Identifier: Apache-2.0
 *
 * Stream capture of the simulated driver: cuStreamBeginCapture(_v2) / BeginCaptureToGraph,
 * cuStreamEndCapture, cuStreamIsCapturing, cuStreamGetCaptureInfo_v3,
 * cuStreamUpdateCaptureDependencies_v2, cuThreadExchangeStreamCaptureMode, and what
 * capturing does to the rest of the driver.
 *
 * While a stream captures, the work queued on it (tf__enqueue) becomes graph nodes instead
 * of running: kernels, copies, memsets, host functions; cuMemAllocAsync / cuMemFreeAsync
 * become memory allocation / free nodes. Each capturing stream has a dependency set (the
 * nodes its next node depends on). An event recorded in a capturing stream carries that set;
 * a stream that waits for it joins the capture (fork) or merges the set (join). Waiting for an
 * event recorded outside the capture is CUDA_ERROR_STREAM_CAPTURE_ISOLATION unless the wait is
 * CU_EVENT_WAIT_EXTERNAL (an event wait node); recording with CU_EVENT_RECORD_EXTERNAL makes
 * an event record node. cuStreamEndCapture must be called on the origin stream (else
 * STREAM_CAPTURE_UNMATCHED), from the beginning thread unless the mode is relaxed (else
 * STREAM_CAPTURE_WRONG_THREAD), with every forked stream joined back (else
 * STREAM_CAPTURE_UNJOINED).
 *
 * Rules enforced as the CUDA documentation describes them (the error invalidates the capture
 * sequence, whose later operations then fail with STREAM_CAPTURE_INVALIDATED and whose
 * cuStreamEndCapture returns that error and no graph):
 *   - synchronous work, synchronizing or querying a capturing stream, synchronizing its
 *     context: STREAM_CAPTURE_UNSUPPORTED;
 *   - the legacy stream while a blocking stream of its context captures: STREAM_CAPTURE_IMPLICIT;
 *   - querying or synchronizing an event last recorded in an active capture: CAPTURED_EVENT
 *     (the capture stays valid);
 *   - potentially unsafe calls (cuMemAlloc, cuMemFree, page-locked and managed allocation,
 *     registration, cuGraphExecDestroy) from a thread that the capture modes prohibit:
 *     STREAM_CAPTURE_UNSUPPORTED, invalidating the prohibiting captures;
 *   - launching a graph into a capturing stream: STREAM_CAPTURE_UNSUPPORTED;
 *   - waiting for an event of another capture sequence: STREAM_CAPTURE_MERGE.
 * Captures span one context; joining a stream of another context is not supported.
 */
#include "sim/graph.h"

#include <stdlib.h>
#include <string.h>

struct member {
    struct CUstream_st *s;
    CUgraphNode *deps; /* the stream's dependency set */
    size_t n, cap;
};

struct sim_capture {
    unsigned long long id;
    struct CUgraph_st *graph;
    int to_existing; /* cuStreamBeginCaptureToGraph: the graph stays the application's */
    struct CUstream_st *origin;
    CUcontext ctx;
    CUstreamCaptureMode mode;
    pthread_t thread;
    int invalid;
    struct member *m; /* m[0] is the origin */
    size_t nm, capm;
    CUgraphNode *info; /* the array cuStreamGetCaptureInfo hands out */
    struct sim_capture *next;
};

static struct sim_capture *active; /* guarded by tf__graph_mu */
static _Atomic unsigned long long next_id = 1;
static _Atomic int global_captures; /* active captures begun in GLOBAL mode */
static __thread CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
static __thread int my_strict, my_global; /* this thread's non-relaxed / global captures */

static struct member *member_of(struct sim_capture *c, const struct CUstream_st *s)
{
    for (size_t i = 0; i < c->nm; i++)
        if (c->m[i].s == s)
            return &c->m[i];
    return NULL;
}

static int blocking(const struct CUstream_st *s)
{
    return !(s->flags & CU_STREAM_NON_BLOCKING);
}

static CUresult set_deps(struct member *m, const CUgraphNode *deps, size_t n, int add)
{
    size_t need = (add ? m->n : 0) + n;
    if (need > m->cap) {
        CUgraphNode *v = realloc(m->deps, (need + 4) * sizeof(*v));
        if (!v)
            return CUDA_ERROR_OUT_OF_MEMORY;
        m->deps = v;
        m->cap = need + 4;
    }
    if (!add)
        m->n = 0;
    for (size_t i = 0; i < n; i++) {
        int dup = 0;
        for (size_t j = 0; j < m->n && !dup; j++)
            dup = m->deps[j] == deps[i];
        if (!dup)
            m->deps[m->n++] = deps[i];
    }
    return CUDA_SUCCESS;
}

static CUresult add_member(struct sim_capture *c, struct CUstream_st *s, const CUgraphNode *deps,
                           size_t n)
{
    if (c->nm == c->capm) {
        size_t cap = c->capm ? c->capm * 2 : 4;
        struct member *v = realloc(c->m, cap * sizeof(*v));
        if (!v)
            return CUDA_ERROR_OUT_OF_MEMORY;
        c->m = v;
        c->capm = cap;
    }
    struct member *m = &c->m[c->nm];
    *m = (struct member){s, NULL, 0, 0};
    CUresult rc = set_deps(m, deps, n, 0);
    if (rc)
        return rc;
    c->nm++;
    atomic_store(&s->cap, c);
    if (blocking(s))
        atomic_fetch_add(&s->ctx->capturing_blocking, 1);
    return CUDA_SUCCESS;
}

/* Ends capture C: its streams stop capturing; the graph is destroyed unless KEEP. */
static void finish(struct sim_capture *c, int keep)
{
    for (size_t i = 0; i < c->nm; i++) {
        atomic_store(&c->m[i].s->cap, NULL);
        if (blocking(c->m[i].s))
            atomic_fetch_sub(&c->ctx->capturing_blocking, 1);
        free(c->m[i].deps);
    }
    atomic_fetch_sub(&c->ctx->captures, 1);
    if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && pthread_equal(c->thread, pthread_self()))
        my_strict--;
    if (c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL) {
        atomic_fetch_sub(&global_captures, 1);
        if (pthread_equal(c->thread, pthread_self()))
            my_global--;
    }
    for (struct sim_capture **pp = &active; *pp; pp = &(*pp)->next)
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    if (c->graph) {
        c->graph->cap = NULL;
        if (!keep && !c->to_existing)
            tf__graph_free(c->graph);
    }
    free(c->m);
    free(c->info);
    free(c);
}

void tf__capture_ctx_gone(CUcontext ctx)
{
    if (!atomic_load(&ctx->captures))
        return;
    pthread_mutex_lock(&tf__graph_mu);
    struct sim_capture *c = active, *next;
    for (; c; c = next) {
        next = c->next;
        if (c->ctx == ctx)
            finish(c, 0);
    }
    pthread_mutex_unlock(&tf__graph_mu);
}

void tf__capture_graph_gone(struct CUgraph_st *g)
{
    if (g->cap)
        g->cap->graph = NULL; /* the capture goes on, invalid */
    if (g->cap)
        g->cap->invalid = 1;
    g->cap = NULL;
}

/* ---- Capturing work -------------------------------------------------------------------- */

/* Adds a node of TYPE to C after M's dependency set, which becomes {node}. */
static CUresult add_node(struct sim_capture *c, struct member *m, CUgraphNodeType type,
                         CUgraphNode *out)
{
    if (!c->graph)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    CUresult rc = tf__graph_add(c->graph, type, m->deps, m->n, out);
    if (rc)
        return rc;
    return set_deps(m, out, 1, 0);
}

static CUresult invalidate(struct sim_capture *c, CUresult why)
{
    c->invalid = 1;
    return why;
}

/* Caller holds tf__graph_mu. */
static CUresult capture_op(struct sim_capture *c, struct CUstream_st *s, struct sim_op *op,
                           int wait)
{
    struct member *m = member_of(c, s);
    CUgraphNode n;
    CUresult rc;
    if (c->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (wait) /* synchronous work cannot be captured */
        return invalidate(c, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    switch (op->kind) {
    case OP_KERNEL:
        if ((rc = add_node(c, m, CU_GRAPH_NODE_TYPE_KERNEL, &n)))
            return rc;
        n->u.kernel.k = op->u.kernel;
        n->u.kernel.ctx = s->ctx;
        op->u.kernel = NULL;
        return CUDA_SUCCESS;
    case OP_COPY:
        if ((rc = add_node(c, m, CU_GRAPH_NODE_TYPE_MEMCPY, &n)))
            return rc;
        n->u.memcpy.ctx = s->ctx;
        n->u.memcpy.p = (CUDA_MEMCPY3D){
            .srcMemoryType = CU_MEMORYTYPE_UNIFIED,
            .srcDevice = (CUdeviceptr)(uintptr_t)op->u.copy.src,
            .dstMemoryType = CU_MEMORYTYPE_UNIFIED,
            .dstDevice = (CUdeviceptr)(uintptr_t)op->u.copy.dst,
            .WidthInBytes = op->u.copy.n,
            .Height = 1,
            .Depth = 1,
        };
        return CUDA_SUCCESS;
    case OP_SET:
        if ((rc = add_node(c, m, CU_GRAPH_NODE_TYPE_MEMSET, &n)))
            return rc;
        n->u.memset.ctx = s->ctx;
        n->u.memset.p = (CUDA_MEMSET_NODE_PARAMS){
            .dst = (CUdeviceptr)(uintptr_t)op->u.set.dst,
            .pitch = op->u.set.count * (size_t)op->u.set.width,
            .value = op->u.set.value,
            .elementSize = (unsigned)op->u.set.width,
            .width = op->u.set.count,
            .height = 1,
        };
        return CUDA_SUCCESS;
    case OP_HOST:
        if (!op->u.host.fn) /* a stream callback has no graph form */
            return invalidate(c, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
        if ((rc = add_node(c, m, CU_GRAPH_NODE_TYPE_HOST, &n)))
            return rc;
        n->u.host = (CUDA_HOST_NODE_PARAMS){op->u.host.fn, op->u.host.data};
        return CUDA_SUCCESS;
    case OP_RECORD: {
        struct CUevent_st *ev = op->u.rec.ev;
        if (op->u.rec.external) {
            if ((rc = add_node(c, m, CU_GRAPH_NODE_TYPE_EVENT_RECORD, &n)))
                return rc;
            n->u.event.ev = ev;
            return CUDA_SUCCESS;
        }
        CUgraphNode *v = m->n ? malloc(m->n * sizeof(*v)) : NULL;
        if (m->n && !v)
            return CUDA_ERROR_OUT_OF_MEMORY;
        if (m->n)
            memcpy(v, m->deps, m->n * sizeof(*v));
        free(ev->cap_deps);
        ev->cap_deps = v;
        ev->ncap_deps = m->n;
        ev->cap_id = c->id;
        return CUDA_SUCCESS;
    }
    default:
        return invalidate(c, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    }
}

CUresult tf__capture_op(struct CUstream_st *s, struct sim_op *op, int wait)
{
    pthread_mutex_lock(&tf__graph_mu);
    struct sim_capture *c = atomic_load(&s->cap);
    CUresult rc = c ? capture_op(c, s, op, wait) : CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    pthread_mutex_unlock(&tf__graph_mu);
    if (op->kind == OP_KERNEL && op->u.kernel)
        tf__kernel_free(op->u.kernel);
    free(op);
    return rc;
}

/* The active capture with id ID, or NULL. Caller holds tf__graph_mu. */
static struct sim_capture *by_id(unsigned long long id)
{
    for (struct sim_capture *c = active; c; c = c->next)
        if (c->id == id)
            return c;
    return NULL;
}

CUresult tf__capture_implicit(CUcontext ctx)
{
    pthread_mutex_lock(&tf__graph_mu);
    for (struct sim_capture *c = active; c; c = c->next)
        if (c->ctx == ctx)
            for (size_t i = 0; i < c->nm; i++)
                if (blocking(c->m[i].s))
                    c->invalid = 1;
    pthread_mutex_unlock(&tf__graph_mu);
    return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
}

CUresult tf__capture_sync_check(CUcontext ctx, struct CUstream_st *s)
{
    if (s && atomic_load(&s->cap)) {
        pthread_mutex_lock(&tf__graph_mu);
        struct sim_capture *c = atomic_load(&s->cap);
        if (c)
            c->invalid = 1;
        pthread_mutex_unlock(&tf__graph_mu);
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (s && s->kind == S_LEGACY && atomic_load(&ctx->capturing_blocking) > 0)
        return tf__capture_implicit(ctx);
    if (!s && atomic_load(&ctx->captures) > 0) { /* the whole context */
        pthread_mutex_lock(&tf__graph_mu);
        for (struct sim_capture *c = active; c; c = c->next)
            if (c->ctx == ctx)
                c->invalid = 1;
        pthread_mutex_unlock(&tf__graph_mu);
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return CUDA_SUCCESS;
}

CUresult tf__capture_event_check(struct CUevent_st *ev)
{
    if (!ev->cap_id)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&tf__graph_mu);
    int live = by_id(ev->cap_id) != NULL;
    pthread_mutex_unlock(&tf__graph_mu);
    return live ? CUDA_ERROR_CAPTURED_EVENT : CUDA_SUCCESS;
}

CUresult tf__capture_unsafe_call(void)
{
    int strict_here = thread_mode != CU_STREAM_CAPTURE_MODE_RELAXED && my_strict > 0;
    int global_elsewhere = thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                           atomic_load(&global_captures) - my_global > 0;
    if (!strict_here && !global_elsewhere)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&tf__graph_mu);
    for (struct sim_capture *c = active; c; c = c->next) {
        int mine = pthread_equal(c->thread, pthread_self());
        if ((strict_here && mine && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
            (global_elsewhere && !mine && c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL))
            c->invalid = 1;
    }
    pthread_mutex_unlock(&tf__graph_mu);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

CUresult tf__capture_check_launch(struct CUstream_st *s)
{
    if (atomic_load(&s->cap))
        return tf__capture_sync_check(s->ctx, s);
    if (s->kind == S_LEGACY && atomic_load(&s->ctx->capturing_blocking) > 0)
        return tf__capture_implicit(s->ctx);
    return CUDA_SUCCESS;
}

CUresult tf__capture_wait_event(struct CUstream_st *s, struct CUevent_st *ev, unsigned flags,
                                int *handled)
{
    *handled = 0;
    if (!atomic_load(&s->cap) && !ev->cap_id)
        return CUDA_SUCCESS;
    pthread_mutex_lock(&tf__graph_mu);
    struct sim_capture *sc = atomic_load(&s->cap), *ec = ev->cap_id ? by_id(ev->cap_id) : NULL;
    CUresult rc = CUDA_SUCCESS;
    if (!sc && !ec)
        goto out; /* the event's capture has ended: an ordinary wait */
    *handled = 1;
    if (sc && sc->invalid) {
        rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else if (ec && !sc) { /* fork: S joins the capture */
        if (s->ctx != ec->ctx)
            rc = tf__not_supported("stream capture across contexts");
        else if (ec->invalid)
            rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        else
            rc = add_member(ec, s, ev->cap_deps, ev->ncap_deps);
    } else if (ec == sc) { /* join */
        rc = set_deps(member_of(sc, s), ev->cap_deps, ev->ncap_deps, 1);
    } else if (ec) {
        sc->invalid = 1;
        rc = CUDA_ERROR_STREAM_CAPTURE_MERGE;
    } else if (flags & CU_EVENT_WAIT_EXTERNAL) {
        CUgraphNode n;
        if (!(rc = add_node(sc, member_of(sc, s), CU_GRAPH_NODE_TYPE_WAIT_EVENT, &n)))
            n->u.event.ev = ev;
    } else { /* a dependency on work outside the capture */
        sc->invalid = 1;
        rc = CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
out:
    pthread_mutex_unlock(&tf__graph_mu);
    return rc;
}

CUresult tf__capture_mem_alloc(struct CUstream_st *s, uint64_t size, CUmemoryPool pool,
                               CUdeviceptr *out)
{
    pthread_mutex_lock(&tf__graph_mu);
    struct sim_capture *c = atomic_load(&s->cap);
    CUresult rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    CUgraphNode n;
    struct sim_gmem *m = NULL;
    if (!c || c->invalid)
        goto out;
    if (pool && tf__pool_device(pool) != s->dev) {
        rc = tf__not_supported("captured allocations from a pool of another device");
        goto out;
    }
    if ((rc = tf__gmem_new(s->ctx, size, &m)))
        goto out;
    if ((rc = add_node(c, member_of(c, s), CU_GRAPH_NODE_TYPE_MEM_ALLOC, &n))) {
        tf__gmem_unref(m);
        goto out;
    }
    n->u.alloc.mem = m;
    n->u.alloc.params = (CUDA_MEM_ALLOC_NODE_PARAMS){
        .poolProps = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                      .location = {CU_MEM_LOCATION_TYPE_DEVICE, s->dev->index}},
        .bytesize = size,
        .dptr = m->base,
    };
    c->graph->has_mem_nodes = 1;
    *out = m->base;
out:
    pthread_mutex_unlock(&tf__graph_mu);
    return rc;
}

CUresult tf__capture_mem_free(struct CUstream_st *s, CUdeviceptr ptr)
{
    pthread_mutex_lock(&tf__graph_mu);
    struct sim_capture *c = atomic_load(&s->cap);
    CUresult rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (c && !c->invalid && c->graph) {
        struct member *m = member_of(c, s);
        CUgraphNode n;
        /* Only graph allocations can be freed in a capture. */
        if (!(rc = tf__graph_add_free(c->graph, m->deps, m->n, ptr, &n)))
            rc = set_deps(m, &n, 1, 0);
    }
    pthread_mutex_unlock(&tf__graph_mu);
    return rc;
}

/* ---- Entry points ---------------------------------------------------------------------- */

static CUresult begin(CUstream h, int per_thread, CUgraph into, const CUgraphNode *deps,
                      const CUgraphEdgeData *ed, size_t ndeps, CUstreamCaptureMode mode)
{
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, NULL, &s);
    if (rc)
        return rc;
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->kind == S_LEGACY) /* the legacy stream cannot capture */
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (ed)
        for (size_t i = 0; i < ndeps; i++)
            if (ed[i].from_port || ed[i].to_port || ed[i].type)
                return tf__not_supported("graph edges with ports or programmatic types");
    pthread_mutex_lock(&tf__graph_mu);
    if (atomic_load(&s->cap)) {
        pthread_mutex_unlock(&tf__graph_mu);
        return CUDA_ERROR_ILLEGAL_STATE; /* already capturing */
    }
    struct sim_capture *c = calloc(1, sizeof(*c));
    rc = c ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    if (!rc && into) {
        if (!tf__graph_ok(into) || into->cap || into->owned_by_node)
            rc = CUDA_ERROR_INVALID_VALUE;
        for (size_t i = 0; i < ndeps && !rc; i++)
            if (!tf__node_ok(deps[i]) || deps[i]->g != into)
                rc = CUDA_ERROR_INVALID_VALUE;
        c->graph = into;
        c->to_existing = 1;
    } else if (!rc) {
        rc = tf__graph_new(&c->graph, 0);
    }
    if (rc) {
        if (c && !c->to_existing && c->graph)
            tf__graph_free(c->graph);
        free(c);
        pthread_mutex_unlock(&tf__graph_mu);
        return rc;
    }
    c->id = atomic_fetch_add(&next_id, 1);
    c->origin = s;
    c->ctx = s->ctx;
    c->mode = mode;
    c->thread = pthread_self();
    c->graph->cap = c;
    c->next = active;
    active = c;
    atomic_fetch_add(&s->ctx->captures, 1);
    if (mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        my_strict++;
    if (mode == CU_STREAM_CAPTURE_MODE_GLOBAL) {
        atomic_fetch_add(&global_captures, 1);
        my_global++;
    }
    if ((rc = add_member(c, s, deps, into ? ndeps : 0)))
        finish(c, 0);
    pthread_mutex_unlock(&tf__graph_mu);
    return rc;
}

CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    return begin(hStream, 0, NULL, NULL, NULL, 0, mode);
}

CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
    return begin(hStream, 1, NULL, NULL, NULL, 0, mode);
}

CUresult CUDAAPI cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                             const CUgraphNode *dependencies,
                                             const CUgraphEdgeData *dependencyData,
                                             size_t numDependencies, CUstreamCaptureMode mode)
{
    if (!hGraph || (numDependencies && !dependencies))
        return CUDA_ERROR_INVALID_VALUE;
    return begin(hStream, 0, hGraph, dependencies, dependencyData, numDependencies, mode);
}

CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                  const CUgraphNode *dependencies,
                                                  const CUgraphEdgeData *dependencyData,
                                                  size_t numDependencies, CUstreamCaptureMode mode)
{
    if (!hGraph || (numDependencies && !dependencies))
        return CUDA_ERROR_INVALID_VALUE;
    return begin(hStream, 1, hGraph, dependencies, dependencyData, numDependencies, mode);
}

/* Marks D[0..nd) and all their ancestors in G (mark = 1, the others 0). */
static CUresult mark_ancestors(struct CUgraph_st *g, CUgraphNode *d, size_t nd)
{
    for (CUgraphNode n = g->nodes; n; n = n->next)
        n->mark = 0;
    CUgraphNode *stack = malloc((g->n + 1) * sizeof(*stack));
    if (!stack)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t top = 0;
    for (size_t i = 0; i < nd; i++)
        if (!d[i]->mark) {
            d[i]->mark = 1;
            stack[top++] = d[i];
        }
    while (top) {
        CUgraphNode n = stack[--top];
        for (size_t i = 0; i < n->ndeps; i++)
            if (!n->deps[i]->mark) {
                n->deps[i]->mark = 1;
                stack[top++] = n->deps[i];
            }
    }
    free(stack);
    return CUDA_SUCCESS;
}

static CUresult end(CUstream h, int per_thread, CUgraph *out)
{
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, NULL, &s);
    if (rc)
        return rc;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&tf__graph_mu);
    struct sim_capture *c = atomic_load(&s->cap);
    if (!c) {
        rc = CUDA_ERROR_ILLEGAL_STATE;
    } else if (c->origin != s) {
        c->invalid = 1;
        rc = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    } else if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
               !pthread_equal(c->thread, pthread_self())) {
        rc = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    } else if (c->invalid || !c->graph) {
        *out = NULL;
        finish(c, 0);
        rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else {
        /* Every other stream's work must be joined into the origin's. */
        struct member *o = &c->m[0];
        rc = mark_ancestors(c->graph, o->deps, o->n);
        for (size_t i = 1; i < c->nm && !rc; i++)
            for (size_t k = 0; k < c->m[i].n && !rc; k++)
                if (!c->m[i].deps[k]->mark)
                    rc = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
        *out = rc ? NULL : c->graph;
        finish(c, !rc);
    }
    pthread_mutex_unlock(&tf__graph_mu);
    return rc;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    return end(hStream, 0, phGraph);
}

CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    return end(hStream, 1, phGraph);
}

/* The capture status of S: IMPLICIT for the legacy stream while a blocking stream of its
 * context captures (that capture is not invalidated by asking). */
static CUresult status_of(struct CUstream_st *s, CUstreamCaptureStatus *st, struct sim_capture **c)
{
    if (s->kind == S_LEGACY && atomic_load(&s->ctx->capturing_blocking) > 0)
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    *c = atomic_load(&s->cap);
    *st = !*c             ? CU_STREAM_CAPTURE_STATUS_NONE
          : (*c)->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                          : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
}

static CUresult is_capturing(CUstream h, int per_thread, CUstreamCaptureStatus *st)
{
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, NULL, &s);
    if (rc)
        return rc;
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_capture *c;
    pthread_mutex_lock(&tf__graph_mu);
    rc = status_of(s, st, &c);
    pthread_mutex_unlock(&tf__graph_mu);
    return rc;
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return is_capturing(hStream, 0, captureStatus);
}

CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return is_capturing(hStream, 1, captureStatus);
}

static CUresult capture_info(CUstream h, int per_thread, CUstreamCaptureStatus *st, cuuint64_t *id,
                             CUgraph *graph, const CUgraphNode **deps,
                             const CUgraphEdgeData **edges, size_t *ndeps)
{
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, NULL, &s);
    if (rc)
        return rc;
    if (!st || (edges && !deps))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_capture *c;
    pthread_mutex_lock(&tf__graph_mu);
    if ((rc = status_of(s, st, &c)) || *st != CU_STREAM_CAPTURE_STATUS_ACTIVE) {
        pthread_mutex_unlock(&tf__graph_mu);
        return rc;
    }
    struct member *m = member_of(c, s);
    if (id)
        *id = c->id;
    if (graph)
        *graph = c->graph;
    if (deps) {
        /* Driver-owned, valid until the next call on the stream. */
        free(c->info);
        c->info = m->n ? malloc(m->n * sizeof(*c->info)) : NULL;
        if (m->n && !c->info) {
            pthread_mutex_unlock(&tf__graph_mu);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        if (m->n)
            memcpy(c->info, m->deps, m->n * sizeof(*c->info));
        *deps = c->info;
    }
    if (edges) /* every captured edge is a plain full dependency: no edge data */
        *edges = NULL;
    if (ndeps)
        *ndeps = m->n;
    pthread_mutex_unlock(&tf__graph_mu);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream hStream,
                                           CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out,
                                           const CUgraphEdgeData **edgeData_out,
                                           size_t *numDependencies_out)
{
    return capture_info(hStream, 0, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream,
                                                CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out, CUgraph *graph_out,
                                                const CUgraphNode **dependencies_out,
                                                const CUgraphEdgeData **edgeData_out,
                                                size_t *numDependencies_out)
{
    return capture_info(hStream, 1, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out);
}

static CUresult update_deps(CUstream h, int per_thread, CUgraphNode *deps,
                            const CUgraphEdgeData *ed, size_t n, unsigned flags)
{
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, NULL, &s);
    if (rc)
        return rc;
    if ((n && !deps) || (flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES &&
                         flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES))
        return CUDA_ERROR_INVALID_VALUE;
    if (ed)
        for (size_t i = 0; i < n; i++)
            if (ed[i].from_port || ed[i].to_port || ed[i].type)
                return tf__not_supported("graph edges with ports or programmatic types");
    pthread_mutex_lock(&tf__graph_mu);
    struct sim_capture *c = atomic_load(&s->cap);
    if (!c)
        rc = CUDA_ERROR_ILLEGAL_STATE;
    else if (c->invalid || !c->graph)
        rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    for (size_t i = 0; i < n && !rc; i++)
        if (!tf__node_ok(deps[i]) || deps[i]->g != c->graph)
            rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        rc = set_deps(member_of(c, s), deps, n, flags == CU_STREAM_ADD_CAPTURE_DEPENDENCIES);
    pthread_mutex_unlock(&tf__graph_mu);
    return rc;
}

CUresult CUDAAPI cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode *dependencies,
                                                      const CUgraphEdgeData *dependencyData,
                                                      size_t numDependencies, unsigned int flags)
{
    return update_deps(hStream, 0, dependencies, dependencyData, numDependencies, flags);
}

CUresult CUDAAPI cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream hStream,
                                                           CUgraphNode *dependencies,
                                                           const CUgraphEdgeData *dependencyData,
                                                           size_t numDependencies,
                                                           unsigned int flags)
{
    return update_deps(hStream, 1, dependencies, dependencyData, numDependencies, flags);
}

CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!mode ||
        (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
         *mode != CU_STREAM_CAPTURE_MODE_RELAXED))
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}
