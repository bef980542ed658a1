/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_client.so: function queries (parameter layouts and attributes, answered from the
 * cache filled at module load) and kernel launches (parameters packed with the cached layout,
 * straight into the batch: fire-and-forget).
 */
#include "remote/client/client.h"

#include <stdlib.h>
#include <string.h>

static CUresult leave(struct tfc *t, CUresult r)
{
    pthread_mutex_unlock(&t->lock);
    return r;
}

/* ---- function queries ----------------------------------------------------------------------- */

/* A function or kernel record for a CUfunction/CUkernel handle (lock held). */
static struct tfc_func *func_of(struct tfc *t, uint64_t id)
{
    struct tfc_func *f = tfc_obj(t, id, TF_PROTO_H_FUNC);
    return f ? f : tfc_obj(t, id, TF_PROTO_H_KERNEL);
}

static CUresult param_info(uint64_t id, size_t idx, size_t *off, size_t *size)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = t->state == TFC_UNINIT ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
    struct tfc_func *f = r ? NULL : func_of(t, id);
    if (!r && !f)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (!r && idx >= f->nparams)
        r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        if (off)
            *off = f->off[idx];
        if (size)
            *size = f->sz[idx];
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                                            size_t *paramSize)
{
    return param_info((uintptr_t)func, paramIndex, paramOffset, paramSize);
}

TFC_API CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex,
                                              size_t *paramOffset, size_t *paramSize)
{
    return param_info((uintptr_t)kernel, paramIndex, paramOffset, paramSize);
}

TFC_API CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = t->state == TFC_UNINIT ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
    struct tfc_func *f = r ? NULL : func_of(t, (uintptr_t)hfunc);
    if (!r && !f)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (!r && (unsigned)attrib >= f->nattrs)
        r = CUDA_ERROR_INVALID_VALUE;
    if (!r) {
        r = (CUresult)f->attr_st[attrib];
        if (!r)
            *pi = f->attr_val[attrib];
    }
    return leave(t, r);
}

/* A plain forward (calls.def) that also updates the cached attribute. */
TFC_API CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib,
                                            int value)
{
    CUresult r = tfc_fwd_cuFuncSetAttribute(hfunc, attrib, value);
    if (r)
        return r;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    struct tfc_func *f = func_of(t, (uintptr_t)hfunc);
    if (f && (unsigned)attrib < f->nattrs) {
        f->attr_val[attrib] = value;
        f->attr_st[attrib] = CUDA_SUCCESS;
    }
    return leave(t, r);
}

/* A plain forward that also updates the cached attribute of the kernel and of its functions
 * (launches are checked against them). */
TFC_API CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                              CUdevice dev)
{
    CUresult r = tfc_fwd_cuKernelSetAttribute(attrib, val, kernel, dev);
    if (r)
        return r;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    struct tfc_func *k = tfc_obj(t, (uintptr_t)kernel, TF_PROTO_H_KERNEL);
    for (int i = -1; k && i < k->nkf; i++) {
        struct tfc_func *f = i < 0 ? k : tfc_obj(t, k->kf[i].func, TF_PROTO_H_FUNC);
        if (f && (unsigned)attrib < f->nattrs) {
            f->attr_val[attrib] = val;
            f->attr_st[attrib] = CUDA_SUCCESS;
        }
    }
    return leave(t, r);
}

TFC_API CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc)
{
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    CUresult r = t->state == TFC_UNINIT ? CUDA_ERROR_NOT_INITIALIZED : CUDA_SUCCESS;
    struct tfc_func *f = r ? NULL : func_of(t, (uintptr_t)hfunc);
    if (!r && !f)
        r = CUDA_ERROR_INVALID_HANDLE;
    if (!r)
        *name = f->name;
    return leave(t, r);
}

/* ---- launches ------------------------------------------------------------------------------- */

/* Launch attributes forwarded (values of up to three u32); others are not supported. */
static CUresult encode_attr(const CUlaunchAttribute *a, struct tf_msg_launch_attr *w)
{
    memset(w, 0, sizeof(*w));
    w->id = (uint32_t)a->id;
    switch (a->id) {
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        w->v0 = (uint32_t)a->value.cooperative;
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
        w->v0 = (uint32_t)a->value.priority;
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        w->v0 = a->value.clusterDim.x;
        w->v1 = a->value.clusterDim.y;
        w->v2 = a->value.clusterDim.z;
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        w->v0 = (uint32_t)a->value.clusterSchedulingPolicyPreference;
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        w->v0 = (uint32_t)a->value.programmaticStreamSerializationAllowed;
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
        w->v0 = (uint32_t)a->value.memSyncDomain;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

/* Parameter bytes from EXTRA (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE/END). */
static CUresult extra_params(void **extra, const void **buf, size_t *size)
{
    *buf = NULL;
    *size = 0;
    int have_size = 0;
    for (int i = 0; i < 16 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
            *buf = extra[i + 1];
        } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
            if (!extra[i + 1])
                return CUDA_ERROR_INVALID_VALUE;
            memcpy(size, extra[i + 1], sizeof(*size));
            have_size = 1;
        } else {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    return *buf && have_size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* What the real driver answers the runtime for grid or block dimensions outside the device's
 * limits when launching a CUkernel (the runtime reports it as cudaErrorInvalidConfiguration;
 * cuda.h does not name it); CUfunction launches get CUDA_ERROR_INVALID_VALUE. */
#define CUDA_ERROR_INVALID_CONFIGURATION_RT ((CUresult)9)

/* The launch configuration errors the driver reports at the launch itself, checked here
 * against the cached device and function attributes so that they come from the same call as
 * on a local GPU (the worker's driver checks again; what only it can tell comes back from
 * the next synchronising call). */
static CUresult launch_geometry(struct tfc *t, int dev, const struct tfc_func *fn,
                                const unsigned grid[3], const unsigned block[3], unsigned shmem)
{
    const struct tfc_dev *d = &t->dev[dev];
    int lim[7] = {1024, 1024, 64, 1024, 2147483647, 65535, 65535};
    static const CUdevice_attribute la[7] = {
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
    for (int i = 0; i < 7; i++)
        if ((unsigned)la[i] < d->nattrs && d->attr_st[la[i]] == CUDA_SUCCESS &&
            d->attr_val[la[i]] > 0)
            lim[i] = d->attr_val[la[i]];
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    int ok = grid[0] && grid[1] && grid[2] && block[0] && block[1] && block[2] &&
             block[0] <= (unsigned)lim[0] && block[1] <= (unsigned)lim[1] &&
             block[2] <= (unsigned)lim[2] && threads <= (uint64_t)lim[3] &&
             grid[0] <= (unsigned)lim[4] && grid[1] <= (unsigned)lim[5] &&
             grid[2] <= (unsigned)lim[6];
    if (!ok)
        return fn->type == TF_PROTO_H_KERNEL ? CUDA_ERROR_INVALID_CONFIGURATION_RT
                                             : CUDA_ERROR_INVALID_VALUE;
    const unsigned mt = CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
    const unsigned ms = CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
    if (mt < fn->nattrs && fn->attr_st[mt] == CUDA_SUCCESS && fn->attr_val[mt] > 0 &&
        threads > (uint64_t)fn->attr_val[mt])
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    if (ms < fn->nattrs && fn->attr_st[ms] == CUDA_SUCCESS && fn->attr_val[ms] >= 0 &&
        shmem > (unsigned)fn->attr_val[ms])
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* FN's parameter buffer at DST: XBUF (CU_LAUNCH_PARAM_BUFFER_POINTER), else KERNELPARAMS by
 * the cached layout (padding between parameters travels as zeros). */
static void pack_params(const struct tfc_func *fn, void **kernelParams, const void *xbuf,
                        uint8_t *dst)
{
    if (xbuf) {
        memcpy(dst, xbuf, fn->params_size);
        return;
    }
    memset(dst, 0, fn->params_size);
    for (uint32_t i = 0; i < fn->nparams; i++)
        memcpy(dst + fn->off[i], kernelParams[i], fn->sz[i]);
}

/* The parameter source of a launch of FN (KERNELPARAMS or EXTRA, not both): *XBUF is EXTRA's
 * buffer or NULL. */
static CUresult params_of(const struct tfc_func *fn, void **kernelParams, void **extra,
                          const void **xbuf)
{
    *xbuf = NULL;
    if (kernelParams && extra)
        return CUDA_ERROR_INVALID_VALUE;
    size_t xsize = 0;
    if (extra) {
        CUresult r = extra_params(extra, xbuf, &xsize);
        return r || xsize != fn->params_size ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    }
    return fn->nparams && !kernelParams ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* The checks a launch of function (or kernel) FID in context CTX makes before anything is
 * sent: connection, context, sticky error, function (BAD_FUNC when unknown), geometry and
 * parameters (*FN, *XBUF). Lock held. */
static CUresult launch_checks(struct tfc *t, uint64_t ctx, uint64_t fid, CUresult bad_func,
                              const unsigned grid[3], const unsigned block[3], unsigned shmem,
                              void **kernelParams, void **extra, struct tfc_func **fn,
                              const void **xbuf)
{
    CUresult r = tfc_ready(t);
    if (r)
        return r;
    if (!ctx || !tfc_ctx_of(t, ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if ((r = tfc_sticky(t, ctx)))
        return r;
    if (!(*fn = func_of(t, fid)))
        return bad_func;
    if ((r = launch_geometry(t, tfc_ctx_of(t, ctx)->dev, *fn, grid, block, shmem)))
        return r;
    return params_of(*fn, kernelParams, extra, xbuf);
}

static CUresult launch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                       unsigned shmem, CUstream hs, void **kernelParams, void **extra,
                       const CUlaunchAttribute *attrs, unsigned nattrs)
{
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    uint64_t ctx = tfc_current(), sid = 0;
    struct tfc_func *fn;
    const void *xbuf;
    CUresult r = launch_checks(t, ctx, (uintptr_t)f, CUDA_ERROR_INVALID_HANDLE, grid, block, shmem,
                               kernelParams, extra, &fn, &xbuf);
    if (!r)
        r = tfc_stream_id(t, hs, &sid);
    sid = tfc_capture_route(t, sid);
    if (!r && nattrs > TF_PROTO_MAX_LAUNCH_ATTRS)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r)
        return leave(t, r);
    struct tf_msg_launch_attr wa[TF_PROTO_MAX_LAUNCH_ATTRS];
    for (unsigned i = 0; i < nattrs; i++) {
        r = encode_attr(&attrs[i], &wa[i]);
        if (r)
            return leave(t, r);
    }
    size_t body =
        TF_PROTO_SIZE_launch_req + (size_t)nattrs * TF_PROTO_SIZE_launch_attr + fn->params_size;
    uint8_t *p = tfc_async_reserve(t, TF_OP_LAUNCH, body);
    if (!p)
        return leave(t, CUDA_ERROR_LAUNCH_FAILED);
    struct tf_msg_launch_req m = {.ctx = ctx,
                                  .func = fn->id,
                                  .stream = sid,
                                  .grid_x = grid[0],
                                  .grid_y = grid[1],
                                  .grid_z = grid[2],
                                  .block_x = block[0],
                                  .block_y = block[1],
                                  .block_z = block[2],
                                  .shmem = shmem,
                                  .nattrs = nattrs};
    tf_msg_launch_req_put(p, &m);
    p += TF_PROTO_SIZE_launch_req;
    for (unsigned i = 0; i < nattrs; i++, p += TF_PROTO_SIZE_launch_attr)
        tf_msg_launch_attr_put(p, &wa[i]);
    pack_params(fn, kernelParams, xbuf, p);
    return leave(t, CUDA_SUCCESS);
}

TFC_API CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX,
                                        unsigned int blockDimY, unsigned int blockDimZ,
                                        unsigned int sharedMemBytes, CUstream hStream,
                                        void **kernelParams, void **extra)
{
    unsigned g[3] = {gridDimX, gridDimY, gridDimZ}, b[3] = {blockDimX, blockDimY, blockDimZ};
    return launch(f, g, b, sharedMemBytes, hStream, kernelParams, extra, NULL, 0);
}

TFC_API CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                          void **kernelParams, void **extra)
{
    if (!config)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned g[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
    unsigned b[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
    if (config->numAttrs && !config->attrs)
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, g, b, config->sharedMemBytes, config->hStream, kernelParams, extra,
                  config->attrs, config->numAttrs);
}

TFC_API CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX,
                                                   unsigned int gridDimY, unsigned int gridDimZ,
                                                   unsigned int blockDimX, unsigned int blockDimY,
                                                   unsigned int blockDimZ,
                                                   unsigned int sharedMemBytes, CUstream hStream,
                                                   void **kernelParams)
{
    unsigned g[3] = {gridDimX, gridDimY, gridDimZ}, b[3] = {blockDimX, blockDimY, blockDimZ};
    CUlaunchAttribute coop = {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE, .value.cooperative = 1};
    return launch(f, g, b, sharedMemBytes, hStream, kernelParams, NULL, &coop, 1);
}

/* A kernel node of a graph built node by node (api_graph.c): the launch's checks, one round
 * trip carrying the packed parameters, then its edges. */
TFC_API CUresult CUDAAPI cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph,
                                                 const CUgraphNode *dependencies,
                                                 size_t numDependencies,
                                                 const CUDA_KERNEL_NODE_PARAMS *p)
{
    if (!phGraphNode || !p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = tfc_graph_deps(hGraph, dependencies, numDependencies);
    if (r)
        return r;
    struct tfc *t = tfc_get();
    pthread_mutex_lock(&t->lock);
    uint64_t ctx = p->ctx ? (uintptr_t)p->ctx : tfc_current();
    unsigned grid[3] = {p->gridDimX, p->gridDimY, p->gridDimZ};
    unsigned block[3] = {p->blockDimX, p->blockDimY, p->blockDimZ};
    struct tfc_func *fn;
    const void *xbuf;
    r = launch_checks(t, ctx, p->func ? (uintptr_t)p->func : (uintptr_t)p->kern,
                      CUDA_ERROR_INVALID_VALUE, grid, block, p->sharedMemBytes, p->kernelParams,
                      p->extra, &fn, &xbuf);
    if (r)
        return leave(t, r);
    uint8_t *params = malloc(fn->params_size ? fn->params_size : 1);
    if (!params)
        return leave(t, CUDA_ERROR_OUT_OF_MEMORY);
    pack_params(fn, p->kernelParams, xbuf, params);
    uint64_t id = tfc_new_id(t, TF_PROTO_H_NODE);
    uint8_t m[TF_PROTO_SIZE_knode_req];
    struct tf_msg_knode_req k = {.ctx = ctx,
                                 .func = fn->id,
                                 .graph = (uintptr_t)hGraph,
                                 .node = id,
                                 .grid_x = grid[0],
                                 .grid_y = grid[1],
                                 .grid_z = grid[2],
                                 .block_x = block[0],
                                 .block_y = block[1],
                                 .block_z = block[2],
                                 .shmem = p->sharedMemBytes};
    tf_msg_knode_req_put(m, &k);
    r = tfc_call(t, TF_OP_GRAPH_KERNEL_NODE, m, sizeof(m), params, fn->params_size);
    free(params);
    if (!r && !tfc_obj_add(t, id, TF_PROTO_H_NODE, ctx))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (!r)
        *phGraphNode = (CUgraphNode)(uintptr_t)id;
    pthread_mutex_unlock(&t->lock);
    return tfc_graph_node_added(r, phGraphNode, hGraph, dependencies, numDependencies);
}
