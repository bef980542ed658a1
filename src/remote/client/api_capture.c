/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so: stream capture with host steps, and the graphs it makes (docs/remote.md
 * "Stream capture and graphs"). Device work is captured on the worker, so a capture of device
 * work only is one worker graph and its launch one request. Work that touches this process
 * (copies from or to host memory, host functions) cannot run on the worker's GPU: the client
 * records it as a host step that ends the worker's capture there and begins the next one, so
 * such a capture becomes a program [segment | host step | segment ...] kept here by the id
 * of its first segment: instantiating it instantiates every segment, launching it replays
 * the program on the launch stream (segments as worker graph launches, copies as
 * asynchronous copies reading or filling the host memory at launch, host functions once the
 * stream has reached them).
 *
 * One worker stream per capture: while a stream takes part in a capture (its origin, or a
 * stream that waited for an event recorded in it), its work goes to the origin stream on the
 * worker, in issue order (a valid order of the captured graph: work can only depend on work
 * issued before it; branches are serialised). Event records in the capture are forwarded
 * (the worker's capture ignores them as the driver does), waits for events recorded in the
 * capture are answered here (the stream joins the capture; on one stream the wait holds).
 */
#include "remote/client/client.h"

#include <stdlib.h>
#include <string.h>

struct tfc_capture {
    uint64_t serial;
    uint64_t origin; /* stream id */
    CUstreamCaptureMode mode;
    CUresult err; /* set: the capture is invalidated, its end fails with it */
    int mem;      /* it has graph memory nodes */
    size_t n, cap;
    struct tfc_step *v; /* segments ended so far and host steps */
};

/* A captured program, of a graph (segments: worker graphs) or of an executable graph
 * (segments: worker executable graphs). */
struct tfc_prog {
    size_t n;
    int mem;      /* it has graph memory nodes */
    int launched; /* an executable graph that was launched */
    struct tfc_step v[];
};

static struct tfc_capture *cap_of(struct tfc *t, struct tfc_capref ref)
{
    struct tfc_stream *o = ref.origin ? tfc_obj(t, ref.origin, TF_PROTO_H_STREAM) : NULL;
    return o && o->capture && o->capture->serial == ref.serial ? o->capture : NULL;
}

static struct tfc_capture *stream_cap(struct tfc *t, uint64_t sid)
{
    struct tfc_stream *s = tfc_obj(t, sid, TF_PROTO_H_STREAM);
    return s ? cap_of(t, s->cap) : NULL;
}

uint64_t tfc_capture_route(struct tfc *t, uint64_t sid)
{
    struct tfc_capture *c = stream_cap(t, sid);
    return c ? c->origin : sid;
}

int tfc_capture_call(struct tfc *t, const struct tf_call_desc *d, uint64_t *a, CUresult *r)
{
    if (d == &tf_calls[TF_CALL_IDX_cuStreamWaitEvent]) {
        struct tfc_event *e = tfc_obj(t, a[1], TF_PROTO_H_EVENT);
        struct tfc_stream *s = tfc_obj(t, a[0], TF_PROTO_H_STREAM);
        if (e && s && cap_of(t, e->cap)) {
            s->cap = e->cap; /* joins the capture (or stays in it) */
            *r = CUDA_SUCCESS;
            return 1;
        }
    } else if (d == &tf_calls[TF_CALL_IDX_cuEventRecord] ||
               d == &tf_calls[TF_CALL_IDX_cuEventRecordWithFlags]) {
        struct tfc_event *e = tfc_obj(t, a[0], TF_PROTO_H_EVENT);
        struct tfc_stream *s = tfc_obj(t, a[1], TF_PROTO_H_STREAM);
        if (e)
            e->cap = s && cap_of(t, s->cap) ? s->cap : (struct tfc_capref){0};
    }
    for (uint8_t i = 0; i < d->nargs; i++)
        if (d->args[i].kind == TF_CALL_A_H && d->args[i].htype == TF_PROTO_H_STREAM)
            a[i] = tfc_capture_route(t, a[i]);
    return 0;
}

static int push(struct tfc_capture *c, const struct tfc_step *st)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        struct tfc_step *v = realloc(c->v, cap * sizeof(*v));
        if (!v)
            return -1;
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n++] = *st;
    return 0;
}

/* A segment after the first that captured nothing (host steps in a row) is destroyed rather
 * than launched at every replay. */
static int seg_dropped(CUgraph g)
{
    size_t k = 1;
    if (tfc_fwd_cuGraphGetNodes(g, &k) != CUDA_SUCCESS || k != 0)
        return 0;
    (void)tfc_fwd_cuGraphDestroy(g);
    return 1;
}

int tfc_capture_step(struct tfc *t, uint64_t sid, const struct tfc_step *st, CUresult *r)
{
    struct tfc_capture *c = stream_cap(t, sid);
    if (!c)
        return 0;
    *r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (c->err)
        return 1;
    struct tfc_capref ref = {c->origin, c->serial};
    CUstream origin = (CUstream)(uintptr_t)c->origin;
    CUstreamCaptureMode mode = c->mode;
    int first = c->n == 0;
    /* The segment so far ends here and the next one begins (the lock is not held across the
     * forwards, which take it). */
    pthread_mutex_unlock(&t->lock);
    CUgraph g = NULL;
    CUresult e = tfc_fwd_cuStreamEndCapture(origin, &g);
    int keep = !e && (first || !seg_dropped(g));
    CUresult b = tfc_fwd_cuStreamBeginCapture_v2(origin, mode);
    pthread_mutex_lock(&t->lock);
    c = cap_of(t, ref);
    struct tfc_step seg = {.kind = TFC_STEP_SEG, .id = (uint64_t)(uintptr_t)g};
    if (!c || (keep && push(c, &seg) != 0)) {
        if (c)
            c->err = CUDA_ERROR_OUT_OF_MEMORY;
        if (keep) {
            pthread_mutex_unlock(&t->lock);
            (void)tfc_fwd_cuGraphDestroy(g);
            pthread_mutex_lock(&t->lock);
        }
        return 1;
    }
    if (e || b) {
        c->err = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        return 1;
    }
    if (push(c, st) != 0) {
        c->err = CUDA_ERROR_OUT_OF_MEMORY;
        return 1;
    }
    *r = CUDA_SUCCESS;
    return 1;
}

void tfc_capture_note_alloc(struct tfc *t, uint64_t sid)
{
    struct tfc_capture *c = stream_cap(t, sid);
    if (c)
        c->mem = 1;
}

void tfc_capture_gone(struct tfc *t, struct tfc_stream *s)
{
    (void)t;
    if (s->capture)
        free(s->capture->v);
    free(s->capture);
    s->capture = NULL;
}

/* ---- captured programs ---------------------------------------------------------------------- */

/* A copy of the program registered under ID (NULL: none, or out of memory: *OOM). TAKE: it is
 * unregistered; LAUNCH: it is marked launched (the copy says whether it was before). Takes
 * the lock. */
enum { PROG_COPY, PROG_TAKE, PROG_LAUNCH };
static struct tfc_prog *prog_get(uint64_t id, int how, int *oom)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    struct tfc_prog *p = tf_htab_get(&t->progs, id), *q = p;
    if (p && how == PROG_TAKE) {
        tf_htab_del(&t->progs, id);
    } else if (p) {
        size_t sz = sizeof(*p) + p->n * sizeof(p->v[0]);
        q = malloc(sz);
        if (q)
            memcpy(q, p, sz);
        else
            *oom = 1;
        if (q && how == PROG_LAUNCH)
            p->launched = 1;
    }
    pthread_mutex_unlock(&t->lock);
    return q;
}

static CUresult prog_put(uint64_t id, struct tfc_prog *p)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    int e = tf_htab_put(&t->progs, id, p);
    pthread_mutex_unlock(&t->lock);
    return e ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

static struct tfc_prog *prog_new(const struct tfc_step *v, size_t n, int mem)
{
    struct tfc_prog *p = malloc(sizeof(*p) + n * sizeof(p->v[0]));
    if (p) {
        p->n = n;
        p->mem = mem;
        p->launched = 0;
        memcpy(p->v, v, n * sizeof(p->v[0]));
    }
    return p;
}

/* Destroys the segments of V[FROM..N) (worker graphs, or executable graphs: EXEC). */
static CUresult destroy_segs(const struct tfc_step *v, size_t from, size_t n, int exec)
{
    CUresult r = CUDA_SUCCESS, x;
    for (size_t i = from; i < n; i++) {
        if (v[i].kind != TFC_STEP_SEG)
            continue;
        x = exec ? tfc_fwd_cuGraphExecDestroy((CUgraphExec)(uintptr_t)v[i].id)
                 : tfc_fwd_cuGraphDestroy((CUgraph)(uintptr_t)v[i].id);
        r = r ? r : x;
    }
    return r;
}

/* ---- capture -------------------------------------------------------------------------------- */

TFC_API CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    CUresult r = tfc_fwd_cuStreamBeginCapture_v2(hStream, mode);
    if (r)
        return r;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    struct tfc_stream *s = tfc_obj(t, (uintptr_t)hStream, TF_PROTO_H_STREAM);
    /* Without a record (the per-thread stream, no memory) the capture still serves device
     * work; host steps in it then invalidate it on the worker. */
    struct tfc_capture *c = s ? calloc(1, sizeof(*c)) : NULL;
    if (c) {
        tfc_capture_gone(t, s);
        c->serial = ++t->next_serial;
        c->origin = s->id;
        c->mode = mode;
        s->capture = c;
        s->cap = (struct tfc_capref){s->id, c->serial};
    }
    pthread_mutex_unlock(&t->lock);
    return r;
}

TFC_API CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    if (!phGraph)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    struct tfc_stream *s = tfc_obj(t, (uintptr_t)hStream, TF_PROTO_H_STREAM);
    struct tfc_capture *c = s ? cap_of(t, s->cap) : NULL;
    if (c && c->origin != s->id) { /* a stream that joined the capture: not its end */
        c->err = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        pthread_mutex_unlock(&t->lock);
        return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    }
    if (c)
        s->capture = NULL; /* over, whatever the worker says */
    pthread_mutex_unlock(&t->lock);
    CUgraph g = NULL;
    CUresult r = tfc_fwd_cuStreamEndCapture(hStream, &g);
    if (!c || (!c->err && !c->n)) { /* device work only: one worker graph */
        free(c);
        if (!r)
            *phGraph = g;
        return r;
    }
    struct tfc_step seg = {.kind = TFC_STEP_SEG, .id = (uint64_t)(uintptr_t)g};
    int dropped = !r && !c->err && seg_dropped(g); /* it ends with a host step */
    if (!r && !dropped && push(c, &seg) != 0) {
        (void)tfc_fwd_cuGraphDestroy(g);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    r = c->err ? c->err : r;
    struct tfc_prog *p = r ? NULL : prog_new(c->v, c->n, c->mem);
    if (!r && (!p || prog_put(c->v[0].id, p) != 0)) {
        free(p);
        r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r) {
        (void)destroy_segs(c->v, 0, c->n, 0);
        *phGraph = NULL;
    } else {
        *phGraph = (CUgraph)(uintptr_t)c->v[0].id;
    }
    free(c->v);
    free(c);
    return r;
}

/* The calling thread's capture mode: kept per thread here and set on the worker's thread for
 * this client (in order with the calls around it), whose capture rules then apply to the
 * calls that follow, whichever thread of this process makes them. */
static _Thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

TFC_API CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode m = *mode;
    if (m != CU_STREAM_CAPTURE_MODE_GLOBAL && m != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        m != CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = tfc_fwd_cuThreadExchangeStreamCaptureMode(m);
    if (r == CUDA_SUCCESS) {
        *mode = thread_mode;
        thread_mode = m;
    }
    return r;
}

/* A stream's capture status, and its id: the client's for a capture it keeps (the same for
 * all its segments), else the worker's. The capture's graph and dependencies stay on the
 * worker: asking for them while the stream captures is CUDA_ERROR_NOT_SUPPORTED. */
static CUresult capture_info(CUstream hs, CUstreamCaptureStatus *status, cuuint64_t *id,
                             CUgraph *graph, const CUgraphNode **deps,
                             const CUgraphEdgeData **edges, size_t *ndeps)
{
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t wid = 0;
    CUresult r = tfc_fwd_cuStreamGetCaptureInfo_v3(hs, &st, &wid);
    if (r)
        return r;
    if (st == CU_STREAM_CAPTURE_STATUS_ACTIVE && (graph || deps || edges || ndeps))
        return CUDA_ERROR_NOT_SUPPORTED;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    struct tfc_capture *c = stream_cap(t, (uintptr_t)hs);
    if (c)
        wid = c->serial;
    pthread_mutex_unlock(&t->lock);
    *status = st;
    if (id)
        *id = wid;
    return CUDA_SUCCESS;
}

TFC_API CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream hStream,
                                                   CUstreamCaptureStatus *captureStatus_out,
                                                   cuuint64_t *id_out, CUgraph *graph_out,
                                                   const CUgraphNode **dependencies_out,
                                                   const CUgraphEdgeData **edgeData_out,
                                                   size_t *numDependencies_out)
{
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out,
                        edgeData_out, numDependencies_out);
}

TFC_API CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream,
                                                   CUstreamCaptureStatus *captureStatus_out,
                                                   cuuint64_t *id_out, CUgraph *graph_out,
                                                   const CUgraphNode **dependencies_out,
                                                   size_t *numDependencies_out);
TFC_API CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream hStream,
                                                   CUstreamCaptureStatus *captureStatus_out,
                                                   cuuint64_t *id_out, CUgraph *graph_out,
                                                   const CUgraphNode **dependencies_out,
                                                   size_t *numDependencies_out)
{
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, NULL,
                        numDependencies_out);
}

#undef cuStreamGetCaptureInfo
TFC_API CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream,
                                                CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out);
TFC_API CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream hStream,
                                                CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out)
{
    return capture_info(hStream, captureStatus_out, id_out, NULL, NULL, NULL, NULL);
}

/* A stream destroyed while it captures: the segments its capture ended go too. */
TFC_API CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    struct tfc_stream *s = tfc_obj(t, (uintptr_t)hStream, TF_PROTO_H_STREAM);
    struct tfc_capture *c = s ? s->capture : NULL;
    if (c)
        s->capture = NULL;
    pthread_mutex_unlock(&t->lock);
    CUresult r = tfc_fwd_cuStreamDestroy_v2(hStream);
    if (c) {
        (void)destroy_segs(c->v, 0, c->n, 0);
        free(c->v);
        free(c);
    }
    return r;
}

/* ---- graphs of captured programs ------------------------------------------------------------ */

CUresult tfc_capture_graph_gone(CUgraph g)
{
    int oom = 0;
    struct tfc_prog *p = prog_get((uintptr_t)g, PROG_TAKE, &oom);
    if (!p)
        return CUDA_SUCCESS;
    CUresult r = destroy_segs(p->v, 1, p->n, 0); /* the first is G itself */
    free(p);
    return r;
}

TFC_API CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                     unsigned long long flags)
{
    if (!phGraphExec)
        return CUDA_ERROR_INVALID_VALUE;
    int oom = 0;
    struct tfc_prog *p = prog_get((uintptr_t)hGraph, PROG_COPY, &oom);
    if (!p)
        return oom ? CUDA_ERROR_OUT_OF_MEMORY
                   : tfc_fwd_cuGraphInstantiateWithFlags(phGraphExec, hGraph, flags);
    CUresult r = CUDA_SUCCESS;
    size_t made = 0; /* steps whose segment is instantiated */
    for (size_t i = 0; !r && i < p->n; i++) {
        if (p->v[i].kind == TFC_STEP_SEG) {
            CUgraphExec e = NULL;
            r = tfc_fwd_cuGraphInstantiateWithFlags(&e, (CUgraph)(uintptr_t)p->v[i].id, flags);
            if (r)
                break;
            p->v[i].id = (uint64_t)(uintptr_t)e;
        }
        made = i + 1;
    }
    if (!r)
        r = prog_put(p->v[0].id, p);
    if (r) {
        (void)destroy_segs(p->v, 0, made, 1);
        free(p);
        return r;
    }
    *phGraphExec = (CUgraphExec)(uintptr_t)p->v[0].id;
    return CUDA_SUCCESS;
}

TFC_API CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    int oom = 0;
    struct tfc_prog *p = prog_get((uintptr_t)hGraphExec, PROG_TAKE, &oom);
    if (!p)
        return tfc_fwd_cuGraphExecDestroy(hGraphExec);
    CUresult r = destroy_segs(p->v, 0, p->n, 1);
    free(p);
    return r;
}

/* A host copy from or to graph memory (not one of this process's allocations) waits for the
 * stream first (one round trip): the driver may check that the memory is allocated when the
 * copy is queued (the simulated GPU does), which holds once the segment that allocates it
 * has run. */
static CUresult gmem_wait(const struct tfc_step *s, CUstream hs)
{
    return tfc_is_dev(s->dev, s->n) ? CUDA_SUCCESS : cuStreamSynchronize(hs);
}

/* Replays a program on HS. A copy from host memory reads it when it is sent: after the copies
 * into this process sent before it have landed (one round trip when any is pending), as the
 * stream order of the graph wants. A host function runs once the stream has reached it. */
TFC_API CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    int oom = 0;
    struct tfc_prog *p = prog_get((uintptr_t)hGraphExec, PROG_LAUNCH, &oom);
    if (!p)
        return oom ? CUDA_ERROR_OUT_OF_MEMORY : tfc_fwd_cuGraphLaunch(hGraphExec, hStream);
    struct tfc *t = tfc_get();
    /* Graph memory a later segment frees must be freed before the first segment allocates
     * it again: the previous launch must have run (the driver may refuse the relaunch
     * before; the simulated GPU does). */
    CUresult r = p->mem && p->launched ? cuCtxSynchronize() : CUDA_SUCCESS;
    for (size_t i = 0; !r && i < p->n; i++) {
        const struct tfc_step *s = &p->v[i];
        switch (s->kind) {
        case TFC_STEP_SEG:
            r = tfc_fwd_cuGraphLaunch((CUgraphExec)(uintptr_t)s->id, hStream);
            break;
        case TFC_STEP_HTOD:
            r = gmem_wait(s, hStream);
            if (!r && atomic_load(&t->nxfers) > 0)
                r = tfc_copies_done();
            if (!r)
                r = tfc_htod(s->dev, s->host, s->n, hStream, TFC_COPY_REPLAY);
            break;
        case TFC_STEP_DTOH:
            r = gmem_wait(s, hStream);
            if (!r)
                r = tfc_dtoh(s->host, s->dev, s->n, hStream, TFC_COPY_REPLAY);
            break;
        default:
            r = cuStreamSynchronize(hStream);
            if (!r)
                s->fn(s->host);
            break;
        }
    }
    free(p);
    return r;
}

/* The nodes of a program: its segments' and one per host step. The nodes themselves are not
 * handed out (CUDA_ERROR_NOT_SUPPORTED when asked for). */
TFC_API CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    if (!numNodes)
        return CUDA_ERROR_INVALID_VALUE;
    if (nodes && *numNodes)
        return CUDA_ERROR_NOT_SUPPORTED;
    int oom = 0;
    struct tfc_prog *p = prog_get((uintptr_t)hGraph, PROG_COPY, &oom);
    if (!p)
        return oom ? CUDA_ERROR_OUT_OF_MEMORY : tfc_fwd_cuGraphGetNodes(hGraph, numNodes);
    CUresult r = CUDA_SUCCESS;
    size_t total = 0;
    for (size_t i = 0; !r && i < p->n; i++) {
        size_t k = 1;
        if (p->v[i].kind == TFC_STEP_SEG)
            r = tfc_fwd_cuGraphGetNodes((CUgraph)(uintptr_t)p->v[i].id, &k);
        total += k;
    }
    free(p);
    if (!r)
        *numNodes = total;
    return r;
}

/* Whole-graph update: a program from one of the same shape (the same steps, in the same
 * order), segment by segment, then the host steps' parameters; a plain graph as the worker's
 * driver does. The error nodes are not handed out. */
TFC_API CUresult CUDAAPI cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                                              CUgraphExecUpdateResultInfo *resultInfo)
{
    if (!resultInfo)
        return CUDA_ERROR_INVALID_VALUE;
    memset(resultInfo, 0, sizeof(*resultInfo));
    int oom = 0;
    struct tfc_prog *pe = prog_get((uintptr_t)hGraphExec, PROG_COPY, &oom);
    struct tfc_prog *pg = prog_get((uintptr_t)hGraph, PROG_COPY, &oom);
    CUresult r = CUDA_SUCCESS;
    CUgraphExecUpdateResult res = CU_GRAPH_EXEC_UPDATE_SUCCESS;
    if (oom) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else if (!pe && !pg) {
        r = tfc_fwd_cuGraphExecUpdate_v2(hGraphExec, hGraph, &res);
        if (r)
            res = CU_GRAPH_EXEC_UPDATE_ERROR;
    } else {
        int same = pe && pg && pe->n == pg->n;
        for (size_t i = 0; same && i < pe->n; i++)
            same = pe->v[i].kind == pg->v[i].kind;
        for (size_t i = 0; same && !r && i < pe->n; i++) {
            if (pe->v[i].kind == TFC_STEP_SEG) {
                r = tfc_fwd_cuGraphExecUpdate_v2((CUgraphExec)(uintptr_t)pe->v[i].id,
                                                 (CUgraph)(uintptr_t)pg->v[i].id, &res);
                if (r)
                    res = CU_GRAPH_EXEC_UPDATE_ERROR;
            } else {
                uint64_t id = pe->v[i].id;
                pe->v[i] = pg->v[i];
                pe->v[i].id = id;
            }
        }
        if (!same) {
            res = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
            r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
        } else if (!r) { /* the host steps' new parameters */
            struct tfc *t = tfc_get();
            pthread_mutex_lock(&t->lock);
            struct tfc_prog *cur = tf_htab_get(&t->progs, (uintptr_t)hGraphExec);
            if (cur && cur->n == pe->n)
                memcpy(cur->v, pe->v, pe->n * sizeof(pe->v[0]));
            pthread_mutex_unlock(&t->lock);
        }
    }
    free(pe);
    free(pg);
    resultInfo->result = res;
    return r;
}
