/* SPDX-License-Identifier: Apache-2.0
 *
 * Without the PTX engine the simulated driver has no kernels and so no graphs or stream
 * capture (their entry points are not exported): the hooks the rest of the driver calls
 * find no capture and no graph memory.
 */
#include "sim/drv.h"

#include <stdlib.h>

int tf__gmem_contains(uint64_t p, uint64_t n)
{
    (void)p;
    (void)n;
    return 0;
}

void tf__gmem_alloc_done(struct sim_gmem *m)
{
    (void)m;
}

void tf__gmem_entry_released(const struct sim_alloc *a)
{
    (void)a;
}

int tf__gmem_freed_in_graph(const struct sim_alloc *a)
{
    (void)a;
    return 0;
}

CUresult tf__capture_op(struct CUstream_st *s, struct sim_op *op, int wait)
{
    (void)s;
    (void)wait;
    free(op);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

CUresult tf__capture_implicit(CUcontext ctx)
{
    (void)ctx;
    return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
}

CUresult tf__capture_sync_check(CUcontext ctx, struct CUstream_st *s)
{
    (void)ctx;
    (void)s;
    return CUDA_SUCCESS;
}

CUresult tf__capture_event_check(struct CUevent_st *ev)
{
    (void)ev;
    return CUDA_SUCCESS;
}

CUresult tf__capture_unsafe_call(void)
{
    return CUDA_SUCCESS;
}

CUresult tf__capture_check_launch(struct CUstream_st *s)
{
    (void)s;
    return CUDA_SUCCESS;
}

CUresult tf__capture_wait_event(struct CUstream_st *s, struct CUevent_st *ev, unsigned flags,
                                int *handled)
{
    (void)s;
    (void)ev;
    (void)flags;
    *handled = 0;
    return CUDA_SUCCESS;
}

void tf__capture_ctx_gone(CUcontext ctx)
{
    (void)ctx;
}

CUresult tf__capture_mem_alloc(struct CUstream_st *s, uint64_t size, CUmemoryPool pool,
                               CUdeviceptr *out)
{
    (void)s;
    (void)size;
    (void)pool;
    (void)out;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

CUresult tf__capture_mem_free(struct CUstream_st *s, CUdeviceptr ptr)
{
    (void)s;
    (void)ptr;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}
