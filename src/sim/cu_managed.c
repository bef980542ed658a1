/* SPDX-License-Identifier: Apache-2.0
 *
 * Managed (unified) memory of the simulated driver: cuMemAllocManaged, cuMemAdvise (v1 and
 * v2), cuMemPrefetchAsync (v1 and v2, and their _ptsz forms), cuMemRangeGetAttribute(s) and
 * cuStreamAttachMemAsync.
 *
 * Managed memory lives in host memory that the host and every device reach directly, so no
 * data ever migrates and every access is coherent: what the documented semantics promise,
 * with the devices reporting CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 1. It is charged
 * to the budget of the device current at allocation (no oversubscription). Advice and
 * prefetches change no data; the driver keeps what they set per page (host page size, the
 * range rounded outwards and clipped to the allocation, as the driver API documents) for
 * cuMemRangeGetAttribute(s) to report: read-mostly, preferred location, accessed-by set, last
 * prefetch location (recorded when the prefetch is queued: the attribute "gives no
 * indication as to whether the prefetch operation has completed or even begun").
 * Stream attachment is checked and accepted; on devices with concurrent managed access it
 * constrains nothing.
 *
 * The per-page state is a sorted run-length list of segments per allocation (the allocation
 * table entry's owner), guarded by one mutex.
 */
#include "sim/drv.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NONE_LOC 0 /* CU_MEM_LOCATION_TYPE_INVALID */

struct loc {
    int type; /* CUmemLocationType; NONE_LOC: none */
    int id;
};

struct pstate {
    int read_mostly;
    struct loc preferred, prefetched;
    uint32_t accessed_by; /* bit d: device d; bit 31: the host */
};

struct seg {
    uint64_t off, len;
    struct pstate st;
};

struct sim_managed {
    struct seg *segs; /* sorted, covering [0, size) without gaps */
    size_t n, cap;
};

#define HOST_BIT 31u

static pthread_mutex_t mg_mu = PTHREAD_MUTEX_INITIALIZER;

static struct sim_managed *state_new(uint64_t size)
{
    struct sim_managed *m = calloc(1, sizeof(*m));
    if (!m || !(m->segs = calloc(4, sizeof(*m->segs)))) {
        free(m);
        return NULL;
    }
    m->cap = 4;
    m->n = 1;
    m->segs[0].len = size;
    return m;
}

void tf__managed_state_free(struct sim_managed *m)
{
    if (m)
        free(m->segs);
    free(m);
}

/* Splits the segment containing OFF so that one starts there. Caller holds mg_mu. */
static int split_at(struct sim_managed *m, uint64_t off)
{
    for (size_t i = 0; i < m->n; i++) {
        struct seg *s = &m->segs[i];
        if (off == s->off)
            return 0;
        if (off > s->off && off < s->off + s->len) {
            if (m->n == m->cap) {
                struct seg *g = realloc(m->segs, m->cap * 2 * sizeof(*g));
                if (!g)
                    return -1;
                m->segs = g;
                m->cap *= 2;
                s = &m->segs[i];
            }
            memmove(&m->segs[i + 2], &m->segs[i + 1], (m->n - i - 1) * sizeof(*s));
            m->segs[i + 1] = (struct seg){off, s->off + s->len - off, s->st};
            s->len = off - s->off;
            m->n++;
            return 0;
        }
    }
    return 0;
}

/* Merges neighbouring segments with equal state. */
static void coalesce(struct sim_managed *m)
{
    size_t k = 0;
    for (size_t i = 1; i < m->n; i++) {
        if (memcmp(&m->segs[k].st, &m->segs[i].st, sizeof(struct pstate)) == 0)
            m->segs[k].len += m->segs[i].len;
        else
            m->segs[++k] = m->segs[i];
    }
    m->n = k + 1;
}

/* The managed allocation holding [P, P+N) and the page-rounded offsets of that range in it:
 * INVALID_VALUE when the range is empty or not inside one managed allocation. */
static CUresult managed_range(CUdeviceptr p, size_t n, struct sim_alloc *a, uint64_t *lo,
                              uint64_t *hi)
{
    if (!p || !n || tf__mem_lookup((uint64_t)p, a) != 0 || a->kind != M_MANAGED ||
        n > a->size - ((uint64_t)p - a->base))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t start = (uint64_t)p / pg * pg, end = ((uint64_t)p + n + pg - 1) / pg * pg;
    *lo = start > a->base ? start - a->base : 0;
    *hi = end - a->base < a->size ? end - a->base : a->size;
    return CUDA_SUCCESS;
}

typedef void (*apply_fn)(struct pstate *st, const void *arg);

/* Applies FN to every page of [P, P+N) in its managed allocation. */
static CUresult apply(CUdeviceptr p, size_t n, apply_fn fn, const void *arg)
{
    struct sim_alloc a;
    uint64_t lo, hi;
    CUresult rc = managed_range(p, n, &a, &lo, &hi);
    if (rc)
        return rc;
    struct sim_managed *m = a.owner;
    pthread_mutex_lock(&mg_mu);
    if (split_at(m, lo) != 0 || split_at(m, hi) != 0) {
        pthread_mutex_unlock(&mg_mu);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < m->n; i++)
        if (m->segs[i].off >= lo && m->segs[i].off < hi)
            fn(&m->segs[i].st, arg);
    coalesce(m);
    pthread_mutex_unlock(&mg_mu);
    return CUDA_SUCCESS;
}

/* ---- Allocation ------------------------------------------------------------------------ */

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    CUcontext ctx;
    CUresult rc = tf__ctx_current(&ctx, 0);
    if (rc || (rc = tf__capture_unsafe_call()))
        return rc;
    if (!dptr || bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_managed *m = state_new(bytesize);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t p;
    if ((rc = tf__mem_alloc_owned(ctx, M_MANAGED, bytesize, flags, m, &p))) {
        tf__managed_state_free(m);
        return rc;
    }
    *dptr = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

CUresult tf__managed_alloc_global(uint64_t size, uint64_t *out)
{
    struct sim_managed *m = state_new(size);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = tf__mem_alloc_owned(NULL, M_MANAGED, size, CU_MEM_ATTACH_GLOBAL, m, out);
    if (rc)
        tf__managed_state_free(m);
    return rc;
}

/* ---- Locations ------------------------------------------------------------------------- */

/* A location as the v2 entry points take it, for advice or prefetch: devices (by a valid
 * ordinal), the host, and host NUMA node 0 (the simulator's only one). */
static CUresult check_loc(CUmemLocation in, int allow_numa, struct loc *out)
{
    switch (in.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        if (!tf__device(in.id))
            return CUDA_ERROR_INVALID_DEVICE;
        *out = (struct loc){CU_MEM_LOCATION_TYPE_DEVICE, in.id};
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST:
        *out = (struct loc){CU_MEM_LOCATION_TYPE_HOST, 0};
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        if (!allow_numa || in.id != 0)
            return CUDA_ERROR_INVALID_VALUE;
        *out = (struct loc){CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
        return CUDA_SUCCESS;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        if (!allow_numa)
            return CUDA_ERROR_INVALID_VALUE;
        *out = (struct loc){CU_MEM_LOCATION_TYPE_HOST_NUMA, 0};
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* The v1 entry points' device argument: an ordinal or CU_DEVICE_CPU. */
static CUresult device_loc(CUdevice d, CUmemLocation *out)
{
    if (d == CU_DEVICE_CPU) {
        *out = (CUmemLocation){CU_MEM_LOCATION_TYPE_HOST, 0};
        return CUDA_SUCCESS;
    }
    if (!tf__device(d))
        return CUDA_ERROR_INVALID_DEVICE;
    *out = (CUmemLocation){CU_MEM_LOCATION_TYPE_DEVICE, d};
    return CUDA_SUCCESS;
}

/* ---- Advice ---------------------------------------------------------------------------- */

struct advice {
    CUmem_advise what;
    struct loc where;
};

static void apply_advice(struct pstate *st, const void *arg)
{
    const struct advice *ad = arg;
    uint32_t bit =
        ad->where.type == CU_MEM_LOCATION_TYPE_DEVICE ? 1u << ad->where.id : 1u << HOST_BIT;
    switch (ad->what) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY:
        st->read_mostly = 1;
        break;
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
        st->read_mostly = 0;
        break;
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
        st->preferred = ad->where;
        break;
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
        st->preferred = (struct loc){NONE_LOC, 0};
        break;
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
        st->accessed_by |= bit;
        break;
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
        st->accessed_by &= ~bit;
        break;
    }
}

static CUresult advise(CUdeviceptr p, size_t n, CUmem_advise what, CUmemLocation where)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    struct advice ad = {what, {NONE_LOC, 0}};
    switch (what) {
    case CU_MEM_ADVISE_SET_READ_MOSTLY:
    case CU_MEM_ADVISE_UNSET_READ_MOSTLY:
    case CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION:
        break; /* the location is ignored */
    case CU_MEM_ADVISE_SET_PREFERRED_LOCATION:
        rc = check_loc(where, 1, &ad.where);
        break;
    case CU_MEM_ADVISE_SET_ACCESSED_BY:
    case CU_MEM_ADVISE_UNSET_ACCESSED_BY:
        rc = check_loc(where, 0, &ad.where);
        break;
    default:
        rc = CUDA_ERROR_INVALID_VALUE;
    }
    return rc ? rc : apply(p, n, apply_advice, &ad);
}

CUresult CUDAAPI cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
                                CUmemLocation location)
{
    return advise(devPtr, count, advice, location);
}

CUresult CUDAAPI cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUdevice device)
{
    CUmemLocation loc = {CU_MEM_LOCATION_TYPE_HOST, 0};
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    /* The device only matters for the advice kinds that take a location. */
    if ((advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION ||
         advice == CU_MEM_ADVISE_SET_ACCESSED_BY || advice == CU_MEM_ADVISE_UNSET_ACCESSED_BY) &&
        (rc = device_loc(device, &loc)))
        return rc;
    return advise(devPtr, count, advice, loc);
}

/* ---- Prefetch -------------------------------------------------------------------------- */

static void apply_prefetch(struct pstate *st, const void *arg)
{
    st->prefetched = *(const struct loc *)arg;
}

static CUresult prefetch(CUdeviceptr p, size_t n, CUmemLocation where, unsigned flags, CUstream h,
                         int per_thread)
{
    CUcontext ctx;
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, &ctx, &s);
    if (rc)
        return rc;
    struct loc to;
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if ((rc = check_loc(where, 1, &to)))
        return rc;
    /* No data moves (it is reachable from everywhere); the request is what is recorded. */
    return apply(p, n, apply_prefetch, &to);
}

CUresult CUDAAPI cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count, CUmemLocation location,
                                       unsigned int flags, CUstream hStream)
{
    return prefetch(devPtr, count, location, flags, hStream, 0);
}

CUresult CUDAAPI cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count,
                                            CUmemLocation location, unsigned int flags,
                                            CUstream hStream)
{
    return prefetch(devPtr, count, location, flags, hStream, 1);
}

static CUresult prefetch_v1(CUdeviceptr p, size_t n, CUdevice d, CUstream h, int per_thread)
{
    CUmemLocation loc;
    CUresult rc = tf__init_check();
    if (rc || (rc = device_loc(d, &loc)))
        return rc;
    return prefetch(p, n, loc, 0, h, per_thread);
}

CUresult CUDAAPI cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                    CUstream hStream)
{
    return prefetch_v1(devPtr, count, dstDevice, hStream, 0);
}

CUresult CUDAAPI cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
                                         CUstream hStream)
{
    return prefetch_v1(devPtr, count, dstDevice, hStream, 1);
}

/* ---- Range attributes ------------------------------------------------------------------ */

/* The location every page of [LO, HI) has in field F (0: preferred, 1: prefetched), or
 * NONE_LOC when they differ or some page has none. Caller holds mg_mu. */
static struct loc common_loc(const struct sim_managed *m, uint64_t lo, uint64_t hi, int f)
{
    struct loc l = {NONE_LOC, 0};
    int first = 1;
    for (size_t i = 0; i < m->n; i++) {
        const struct seg *s = &m->segs[i];
        if (s->off + s->len <= lo || s->off >= hi)
            continue;
        struct loc x = f ? s->st.prefetched : s->st.preferred;
        if (first) {
            l = x;
            first = 0;
        } else if (x.type != l.type || x.id != l.id) {
            return (struct loc){NONE_LOC, 0};
        }
    }
    return l;
}

static int loc_as_device(struct loc l)
{
    if (l.type == CU_MEM_LOCATION_TYPE_DEVICE)
        return l.id;
    return l.type == NONE_LOC ? CU_DEVICE_INVALID : CU_DEVICE_CPU;
}

static CUresult range_attr(void *data, size_t size, CUmem_range_attribute attr,
                           const struct sim_managed *m, uint64_t lo, uint64_t hi)
{
    int *out = data;
    if (!data ||
        (attr == CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY ? size == 0 || size % 4 != 0 : size != 4))
        return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY: {
        int all = 1;
        for (size_t i = 0; i < m->n; i++)
            if (m->segs[i].off < hi && m->segs[i].off + m->segs[i].len > lo &&
                !m->segs[i].st.read_mostly)
                all = 0;
        *out = all;
        return CUDA_SUCCESS;
    }
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION:
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
        *out = loc_as_device(
            common_loc(m, lo, hi, attr == CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION));
        return CUDA_SUCCESS;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_TYPE:
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE:
        *out =
            common_loc(m, lo, hi, attr == CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE).type;
        return CUDA_SUCCESS;
    case CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION_ID:
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID:
        *out = common_loc(m, lo, hi, attr == CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_ID).id;
        return CUDA_SUCCESS;
    case CU_MEM_RANGE_ATTRIBUTE_ACCESSED_BY: {
        uint32_t all = UINT32_MAX;
        for (size_t i = 0; i < m->n; i++)
            if (m->segs[i].off < hi && m->segs[i].off + m->segs[i].len > lo)
                all &= m->segs[i].st.accessed_by;
        size_t k = 0, cap = size / 4;
        for (unsigned b = 0; b < 32 && k < cap; b++)
            if (all & (1u << b))
                out[k++] = b == HOST_BIT ? CU_DEVICE_CPU : (int)b;
        while (k < cap)
            out[k++] = CU_DEVICE_INVALID;
        return CUDA_SUCCESS;
    }
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult CUDAAPI cuMemRangeGetAttributes(void **data, size_t *dataSizes,
                                         CUmem_range_attribute *attributes, size_t numAttributes,
                                         CUdeviceptr devPtr, size_t count)
{
    CUresult rc = tf__init_check();
    if (rc)
        return rc;
    if (!data || !dataSizes || !attributes || !numAttributes)
        return CUDA_ERROR_INVALID_VALUE;
    struct sim_alloc a;
    uint64_t lo, hi;
    if ((rc = managed_range(devPtr, count, &a, &lo, &hi)))
        return rc;
    pthread_mutex_lock(&mg_mu);
    for (size_t i = 0; i < numAttributes && !rc; i++)
        rc = range_attr(data[i], dataSizes[i], attributes[i], a.owner, lo, hi);
    pthread_mutex_unlock(&mg_mu);
    return rc;
}

CUresult CUDAAPI cuMemRangeGetAttribute(void *data, size_t dataSize,
                                        CUmem_range_attribute attribute, CUdeviceptr devPtr,
                                        size_t count)
{
    return cuMemRangeGetAttributes(&data, &dataSize, &attribute, 1, devPtr, count);
}

/* ---- Stream attachment ----------------------------------------------------------------- */

static CUresult attach(CUstream h, CUdeviceptr p, size_t length, unsigned flags, int per_thread)
{
    CUcontext ctx;
    struct CUstream_st *s;
    CUresult rc = tf__cur_stream(h, per_thread, 0, &ctx, &s);
    if (rc)
        return rc;
    struct sim_alloc a;
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
        flags != CU_MEM_ATTACH_SINGLE)
        return CUDA_ERROR_INVALID_VALUE;
    /* The NULL stream is a virtual global stream: no single attachment to it. */
    if (flags == CU_MEM_ATTACH_SINGLE && s->kind == S_LEGACY)
        return CUDA_ERROR_INVALID_VALUE;
    /* Managed memory only (no pageable memory access), and always the whole allocation. */
    if (tf__mem_lookup((uint64_t)p, &a) != 0 || a.kind != M_MANAGED || a.base != (uint64_t)p ||
        (length != 0 && length != a.size))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr, size_t length,
                                        unsigned int flags)
{
    return attach(hStream, dptr, length, flags, 0);
}

CUresult CUDAAPI cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr, size_t length,
                                             unsigned int flags)
{
    return attach(hStream, dptr, length, flags, 1);
}
