/* SPDX-License-Identifier: Apache-2.0
 *
 * Private header of the simulated libcuda.so.1: CUDA graphs. Shared by cu_graph.c (graphs
 * and their nodes), cu_gexec.c (executable graphs, launches, graph memory) and cu_capture.c
 * (stream capture). Built only with the PTX engine (kernel nodes carry kernel ops).
 *
 * Objects:
 *   CUgraph_st      nodes (creation order), owned by the application or by a child node
 *   CUgraphNode_st  one operation with its incoming edges; owned by its graph
 *   CUgraphExec_st  a snapshot of a graph: the nodes in a topological order, child graphs
 *                   inlined, each with a copy of its parameters; launched as ops on a stream
 *   sim_gmem        the memory of one allocation node: an address range reserved when the
 *                   node is made, backed and charged to the device at a graph launch, in the
 *                   allocation table while allocated (between its alloc and free ops);
 *                   reference counted by the nodes and executable graphs that name it
 *
 * Locking: one mutex (tf__graph_mu) guards every graph, node, executable graph, sim_gmem
 * and capture sequence. It is taken before an executor's exec.mu and the allocation table's
 * lock, never while either is held, and never while a host function or kernel runs.
 */
#ifndef TF_SIM_GRAPH_H
#define TF_SIM_GRAPH_H

#include "sim/kernel.h"

extern pthread_mutex_t tf__graph_mu;

struct sim_gmem {
    int refs;
    CUcontext ctx;
    uint64_t base, size; /* the allocation's address and size */
    size_t len;          /* the reservation (whole pages) */
    int mapped;          /* backed and charged to the device budget */
    int live;            /* allocated: its allocation table entry exists */
    int pending;         /* launched allocations whose op has not run yet */
    int freed_in_graph;  /* a free node of the owning graph frees it */
    struct sim_gmem *next;
};

struct sim_capture;

struct CUgraphNode_st {
    struct CUgraph_st *g;
    int mark;                    /* scratch for graph walks (tf__graph_mu held) */
    struct CUgraphNode_st *next; /* g->nodes, in creation order */
    CUgraphNodeType type;
    struct CUgraphNode_st **deps; /* incoming edges */
    size_t ndeps, capdeps;
    union {
        struct {
            struct sim_kernel_op *k; /* template, copied at each launch */
            CUcontext ctx;
            void **args; /* kernelParams handed out by GetParams (into k->params) */
        } kernel;
        struct {
            CUDA_MEMCPY3D p;
            CUcontext ctx;
        } memcpy;
        struct {
            CUDA_MEMSET_NODE_PARAMS p;
            CUcontext ctx;
        } memset;
        CUDA_HOST_NODE_PARAMS host;
        struct {
            CUevent ev;
        } event;
        struct {
            struct CUgraph_st *graph; /* owned by the node */
        } child;
        struct {
            struct sim_gmem *mem;
            CUDA_MEM_ALLOC_NODE_PARAMS params; /* accessDescs not kept */
        } alloc;
        struct {
            CUdeviceptr ptr;
            struct sim_gmem *mem; /* a reference */
        } free;
    } u;
};

struct CUgraph_st {
    struct CUgraphNode_st *nodes, *last;
    size_t n;
    int has_mem_nodes;       /* allocation or free nodes: one executable graph at a time */
    int execs;               /* executable graphs instantiated from it and alive */
    struct sim_capture *cap; /* the capture sequence building it, if any */
    int owned_by_node;       /* a child graph: destroyed with its node */
    unsigned long long id;   /* unique over the process's life */
};

/* Makes an empty graph (registered as a handle unless OWNED_BY_NODE). Caller holds
 * tf__graph_mu. */
CUresult tf__graph_new(struct CUgraph_st **out, int owned_by_node);
/* Destroys G and its nodes. Caller holds tf__graph_mu. */
void tf__graph_free(struct CUgraph_st *g);
/* Adds a node of TYPE to G after DEPS (checked: nodes of G, no duplicates). The caller fills
 * in its parameters. Caller holds tf__graph_mu. */
CUresult tf__graph_add(struct CUgraph_st *g, CUgraphNodeType type, const CUgraphNode *deps,
                       size_t ndeps, CUgraphNode *out);
/* Copies every node and edge of FROM into TO (NOT_SUPPORTED for graphs with memory nodes,
 * which cannot be cloned). Caller holds tf__graph_mu. */
CUresult tf__graph_copy(struct CUgraph_st *to, struct CUgraph_st *from);
/* Adds to G a free node of graph allocation DPTR (INVALID_VALUE: none, or freed already). */
CUresult tf__graph_add_free(struct CUgraph_st *g, const CUgraphNode *deps, size_t ndeps,
                            CUdeviceptr dptr, CUgraphNode *out);
/* Checks memcpy / memset node parameters for CTX. */
CUresult tf__graph_check_memcpy(const CUDA_MEMCPY3D *p, CUcontext ctx);
CUresult tf__graph_check_memset(const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx);
/* Removes N from its graph (edges to and from it too) and frees it. Caller holds
 * tf__graph_mu. */
void tf__node_free(CUgraphNode n);
/* Takes tf__graph_mu after the driver's init check and checks graph G / node N (of TYPE, or
 * any when TYPE < 0); on failure the mutex is not held and the error is returned. */
CUresult tf__graph_lock(CUgraph g);
CUresult tf__graph_lock_node(CUgraphNode n, int type);
/* Releases tf__graph_mu; returns RC. */
CUresult tf__graph_unlock(CUresult rc);
/* Whether D is among N's dependencies; adds D to them (tf__graph_mu held). */
int tf__graph_has_dep(CUgraphNode n, CUgraphNode d);
CUresult tf__graph_add_dep(CUgraphNode n, CUgraphNode d);
/* Valid graph / node handles (tf__graph_mu held). */
int tf__graph_ok(const struct CUgraph_st *g);
int tf__node_ok(const struct CUgraphNode_st *n);

/* Graph memory (cu_gexec.c). A new allocation of SIZE bytes for CTX's device: its range is
 * reserved now (one reference, the node's). */
CUresult tf__gmem_new(CUcontext ctx, uint64_t size, struct sim_gmem **out);
void tf__gmem_unref(struct sim_gmem *m);
/* The graph allocation whose address is PTR, or NULL. */
struct sim_gmem *tf__gmem_find(CUdeviceptr ptr);

/* Capture (cu_capture.c): the sequence building G has ended or G is destroyed. */
void tf__capture_graph_gone(struct CUgraph_st *g);

#endif
