/* SPDX-License-Identifier: Apache-2.0
 *
 * Page-locked host memory of the simulated driver: cuMemAllocHost / cuMemHostAlloc (flags
 * portable, devicemap, writecombined), cuMemFreeHost, cuMemHostRegister / Unregister
 * (portable, devicemap, read-only; I/O memory is not supported), cuMemHostGetDevicePointer and
 * cuMemHostGetFlags.
 *
 * All page-locked memory is mapped for every device (unified addressing): its device pointer
 * is its host address, so kernels read and write it directly (zero-copy), and read-only
 * registrations are read-only to kernels (a store is an illegal address). Registered memory
 * stays the application's: unregistering, or destroying the registering context, only takes
 * it out of the driver's table. Each entry belongs to the context that made it; the portable
 * flag is kept with it for the per-context memory views to come.
 */
#include "sim/drv.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

/* The current context, for a call that stream capture may prohibit (cu_capture.c). */
static CUresult cur(CUcontext *ctx)
{
    CUresult rc = tf__ctx_current(ctx, 0);
    return rc ? rc : tf__capture_unsafe_call();
}

#define HP(p) ((uint64_t)(uintptr_t)(p))

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    CUcontext ctx;
    CUresult rc = cur(&ctx);
    if (rc)
        return rc;
    const unsigned known =
        CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
    if (!pp || bytesize == 0 || (Flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t p;
    if ((rc = tf__mem_alloc(ctx, M_HOST, bytesize, Flags, 0, &p)))
        return rc;
    *pp = (void *)(uintptr_t)p;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAllocHost(void **pp, size_t bytesize)
{
    return cuMemHostAlloc(pp, bytesize, 0);
}

/* The page-locked range starting at P (REGISTERED: made by cuMemHostRegister, else by
 * cuMemHostAlloc), after the work of its context has drained, as the real driver's frees do.
 * INVALID_VALUE, or NOT_REGISTERED for registrations. */
static CUresult drained_range(void *p, int registered, struct sim_alloc *a)
{
    CUresult bad = registered ? CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED : CUDA_ERROR_INVALID_VALUE;
    if (tf__mem_lookup(HP(p), a) != 0 || a->base != HP(p) || a->kind != M_HOST ||
        (a->backing == B_USER) != registered)
        return bad;
    (void)tf__ctx_sync(a->ctx);
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFreeHost(void *p)
{
    CUcontext ctx;
    CUresult rc = cur(&ctx);
    if (rc)
        return rc;
    if (!p)
        return CUDA_SUCCESS;
    struct sim_alloc a;
    if ((rc = drained_range(p, 0, &a)))
        return rc;
    return tf__mem_free(HP(p), M_HOST);
}

/* True when every page of [P, P+N) is mapped in this process. */
static int mapped(const void *p, size_t n)
{
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t start = HP(p) & ~(uintptr_t)(pg - 1), end = HP(p) + n;
    unsigned char vec[256];
    while (start < end) {
        size_t len = (size_t)pg * sizeof(vec);
        if (len > end - start)
            len = end - start;
        if (mincore((void *)start, len, vec) != 0 && errno == ENOMEM)
            return 0;
        start += len;
    }
    return 1;
}

static CUresult host_register(void *p, size_t bytesize, unsigned int Flags)
{
    CUcontext ctx;
    CUresult rc = cur(&ctx);
    if (rc)
        return rc;
    const unsigned known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                           CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    if (!p || bytesize == 0 || (Flags & ~known) || HP(p) + bytesize < HP(p))
        return CUDA_ERROR_INVALID_VALUE;
    if (Flags & CU_MEMHOSTREGISTER_IOMEMORY)
        return tf__not_supported("cuMemHostRegister of I/O memory (CU_MEMHOSTREGISTER_IOMEMORY)");
    struct sim_alloc a;
    if (tf__mem_overlap(HP(p), bytesize, &a) == 0)
        return a.kind == M_HOST ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
                                : CUDA_ERROR_INVALID_VALUE;
    if (!mapped(p, bytesize))
        return CUDA_ERROR_INVALID_VALUE;
    return tf__mem_insert(ctx, -1, M_HOST, HP(p), bytesize, Flags,
                          (Flags & CU_MEMHOSTREGISTER_READ_ONLY) != 0, B_USER, NULL, NULL);
}

CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    return host_register(p, bytesize, Flags);
}

CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    return host_register(p, bytesize, Flags);
}

CUresult CUDAAPI cuMemHostUnregister(void *p)
{
    CUcontext ctx;
    CUresult rc = cur(&ctx);
    if (rc)
        return rc;
    struct sim_alloc a;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = drained_range(p, 1, &a)))
        return rc;
    return tf__mem_remove(HP(p), NULL) == 0 ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    CUcontext ctx;
    CUresult rc = tf__ctx_current(&ctx, 0);
    if (rc)
        return rc;
    struct sim_alloc a;
    if (!pdptr || Flags != 0 || tf__mem_lookup(HP(p), &a) != 0 || a.kind != M_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)HP(p); /* unified addressing: the same address */
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    CUcontext ctx;
    CUresult rc = tf__ctx_current(&ctx, 0);
    if (rc)
        return rc;
    struct sim_alloc a;
    /* Only for memory from cuMemHostAlloc / cuMemAllocHost, not registrations. */
    if (!pFlags || tf__mem_lookup(HP(p), &a) != 0 || a.kind != M_HOST || a.backing == B_USER)
        return CUDA_ERROR_INVALID_VALUE;
    *pFlags = a.flags | CU_MEMHOSTALLOC_DEVICEMAP; /* mapped: implied by unified addressing */
    return CUDA_SUCCESS;
}
