/* SPDX-License-Identifier: Apache-2.0
 *
 * The simulated driver's allocation table: every device, managed, page-locked host and
 * module-variable allocation of the process as a sorted array of address ranges. Device
 * pointers are host addresses (identity mapping, see ptx/ptx.h), so the table is what makes
 * a pointer "device memory": copies validate against it, kernels get it as their memview,
 * cuPointerGetAttribute reads it. Backing memory: mmap for large allocations (lazily
 * committed, so an 80 GiB budget costs nothing until touched), zeroed malloc for small ones.
 * Device-memory bytes are charged to the device's shared budget (devshm.c) before the backing
 * is allocated and returned when it is freed. Entries whose backing belongs to someone else
 * (a memory pool's block, registered user memory) are inserted and removed without touching
 * it; when such an entry goes with its context or a free, its owner is told. Thread-safe (one
 * rwlock, never held while calling out).
 */
#include "sim/drv.h"

#include "sim/ptx/ptx.h"

#include "common/err.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MMAP_THRESHOLD (1u << 20)
#define ALLOC_ALIGN 256

static pthread_rwlock_t mt_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct sim_alloc *tab; /* sorted by base, non-overlapping; guarded by mt_lock */
static size_t ntab, captab;
static _Atomic uint64_t mt_gen = 1;
static uint64_t next_buffer_id = 1; /* guarded by mt_lock */

uint64_t tf__mem_gen(void)
{
    return atomic_load(&mt_gen);
}

/* Index of the first entry with base > ADDR. */
static size_t upper(uint64_t addr)
{
    size_t lo = 0, hi = ntab;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tab[mid].base <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Entry containing ADDR (or NULL). Caller holds mt_lock. */
static struct sim_alloc *containing(uint64_t addr)
{
    size_t i = upper(addr);
    if (i == 0)
        return NULL;
    struct sim_alloc *a = &tab[i - 1];
    return addr - a->base < a->size ? a : NULL;
}

static int charged_kind(enum sim_mem_kind k)
{
    return k == M_DEVICE || k == M_MANAGED || k == M_MODVAR;
}

static CUresult alloc(CUcontext ctx, enum sim_mem_kind kind, uint64_t size, unsigned flags,
                      int read_only, void *owner, uint64_t *out);

/* Backing of SIZE bytes; PAGED: whole pages (mmap) whatever the size. */
static void *backing(uint64_t size, int paged, size_t *map_len)
{
    void *p = NULL;
    *map_len = 0;
    if (size >= MMAP_THRESHOLD || paged) {
        size_t len = (size_t)((size + 4095) & ~(uint64_t)4095);
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
                 0);
        if (p == MAP_FAILED)
            return NULL;
        *map_len = len;
    } else if (posix_memalign(&p, ALLOC_ALIGN, (size_t)size) == 0) {
        memset(p, 0, (size_t)size);
    } else {
        p = NULL;
    }
    return p;
}

void *tf__mem_backing_alloc(uint64_t size, size_t *map_len)
{
    return backing(size, 0, map_len);
}

void tf__mem_backing_free(void *p, size_t map_len)
{
    if (p && map_len)
        munmap(p, map_len);
    else
        free(p);
}

/* Inserts A (its buffer id assigned here). 0, TF_EEXIST (it overlaps an entry), or
 * TF_ENOMEM. */
static int insert(struct sim_alloc *a)
{
    pthread_rwlock_wrlock(&mt_lock);
    if (ntab == captab) {
        size_t ncap = captab ? captab * 2 : 64;
        struct sim_alloc *n = realloc(tab, ncap * sizeof(*n));
        if (!n) {
            pthread_rwlock_unlock(&mt_lock);
            return TF_ENOMEM;
        }
        tab = n;
        captab = ncap;
    }
    size_t i = upper(a->base);
    if ((i > 0 && tab[i - 1].base + tab[i - 1].size > a->base) ||
        (i < ntab && tab[i].base < a->base + a->size)) {
        pthread_rwlock_unlock(&mt_lock);
        return TF_EEXIST; /* the table's ranges never overlap */
    }
    memmove(&tab[i + 1], &tab[i], (ntab - i) * sizeof(*tab));
    a->buffer_id = next_buffer_id++;
    tab[i] = *a;
    ntab++;
    atomic_fetch_add(&mt_gen, 1);
    pthread_rwlock_unlock(&mt_lock);
    return 0;
}

CUresult tf__mem_alloc(CUcontext ctx, enum sim_mem_kind kind, uint64_t size, unsigned flags,
                       int read_only, uint64_t *out)
{
    return alloc(ctx, kind, size, flags, read_only, NULL, out);
}

CUresult tf__mem_alloc_owned(CUcontext ctx, enum sim_mem_kind kind, uint64_t size, unsigned flags,
                             void *owner, uint64_t *out)
{
    return alloc(ctx, kind, size, flags, 0, owner, out);
}

static CUresult alloc(CUcontext ctx, enum sim_mem_kind kind, uint64_t size, unsigned flags,
                      int read_only, void *owner, uint64_t *out)
{
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (size > (uint64_t)TF_SIM_MAX_MEMORY)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_device *d = ctx ? ctx->dev : NULL;
    uint64_t charge = d && charged_kind(kind) ? size : 0;
    if (charge && tf_sim_shm_mem_reserve(d->shm, atomic_load(&d->slot), charge) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t map_len;
    /* Managed memory is page-aligned: advice and prefetches work on pages. */
    void *p = backing(size, kind == M_MANAGED, &map_len);
    struct sim_alloc a = {
        .base = (uint64_t)(uintptr_t)p,
        .size = size,
        .kind = kind,
        .dev = kind == M_HOST || !d ? -1 : d->index,
        .ctx = ctx,
        .flags = flags,
        .read_only = read_only,
        .charged = charge,
        .map_len = map_len,
        .backing = B_OWN,
        .owner = owner,
    };
    if (!p || insert(&a) != 0) {
        tf__mem_backing_free(p, map_len);
        if (charge)
            tf_sim_shm_mem_release(d->shm, atomic_load(&d->slot), charge);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *out = a.base;
    return CUDA_SUCCESS;
}

CUresult tf__mem_insert(CUcontext ctx, int dev, enum sim_mem_kind kind, uint64_t base,
                        uint64_t size, unsigned flags, int read_only, enum sim_backing backing,
                        void *owner, uint64_t *buffer_id)
{
    struct sim_alloc a = {
        .base = base,
        .size = size,
        .kind = kind,
        .dev = dev,
        .ctx = ctx,
        .flags = flags,
        .read_only = read_only,
        .backing = backing,
        .owner = owner,
    };
    int rc = insert(&a);
    if (rc)
        return rc == TF_EEXIST ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_OUT_OF_MEMORY;
    if (buffer_id)
        *buffer_id = a.buffer_id;
    return CUDA_SUCCESS;
}

int tf__mem_remove(uint64_t base, struct sim_alloc *out)
{
    pthread_rwlock_wrlock(&mt_lock);
    size_t i = upper(base);
    if (i == 0 || tab[i - 1].base != base) {
        pthread_rwlock_unlock(&mt_lock);
        return TF_ENOENT;
    }
    if (out)
        *out = tab[i - 1];
    memmove(&tab[i - 1], &tab[i], (ntab - i) * sizeof(*tab));
    ntab--;
    atomic_fetch_add(&mt_gen, 1);
    pthread_rwlock_unlock(&mt_lock);
    return 0;
}

int tf__mem_update(uint64_t base, uint64_t size, CUcontext ctx, uint64_t *buffer_id)
{
    pthread_rwlock_wrlock(&mt_lock);
    size_t i = upper(base);
    if (i == 0 || tab[i - 1].base != base) {
        pthread_rwlock_unlock(&mt_lock);
        return TF_ENOENT;
    }
    struct sim_alloc *a = &tab[i - 1];
    a->size = size;
    if (ctx)
        a->ctx = ctx;
    if (buffer_id)
        *buffer_id = a->buffer_id = next_buffer_id++;
    atomic_fetch_add(&mt_gen, 1);
    pthread_rwlock_unlock(&mt_lock);
    return 0;
}

static void release_backing(const struct sim_alloc *a)
{
    switch (a->backing) {
    case B_OWN:
        tf__mem_backing_free((void *)(uintptr_t)a->base, a->map_len);
        if (a->charged) {
            struct sim_device *d = a->ctx->dev;
            tf_sim_shm_mem_release(d->shm, atomic_load(&d->slot), a->charged);
        }
        if (a->kind == M_MANAGED)
            tf__managed_state_free(a->owner);
        break;
    case B_POOL:
        tf__pool_entry_released(a);
        break;
    case B_GRAPH:
        tf__gmem_entry_released(a);
        break;
    case B_USER:
        break;
    }
}

CUresult tf__mem_free(uint64_t base, enum sim_mem_kind kind)
{
    pthread_rwlock_wrlock(&mt_lock);
    size_t i = upper(base);
    struct sim_alloc a;
    if (i == 0 || tab[i - 1].base != base ||
        (kind ? tab[i - 1].kind != kind : tab[i - 1].kind == M_HOST) ||
        tab[i - 1].kind == M_MODVAR || tab[i - 1].backing == B_USER) {
        pthread_rwlock_unlock(&mt_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    a = tab[i - 1];
    memmove(&tab[i - 1], &tab[i], (ntab - i) * sizeof(*tab));
    ntab--;
    atomic_fetch_add(&mt_gen, 1);
    pthread_rwlock_unlock(&mt_lock);
    release_backing(&a);
    return CUDA_SUCCESS;
}

void tf__mem_free_modvar(uint64_t base)
{
    pthread_rwlock_wrlock(&mt_lock);
    size_t i = upper(base);
    if (i == 0 || tab[i - 1].base != base || tab[i - 1].kind != M_MODVAR) {
        pthread_rwlock_unlock(&mt_lock);
        return;
    }
    struct sim_alloc a = tab[i - 1];
    memmove(&tab[i - 1], &tab[i], (ntab - i) * sizeof(*tab));
    ntab--;
    atomic_fetch_add(&mt_gen, 1);
    pthread_rwlock_unlock(&mt_lock);
    release_backing(&a);
}

void tf__mem_free_ctx(CUcontext ctx)
{
    for (;;) {
        struct sim_alloc a;
        int found = 0;
        pthread_rwlock_wrlock(&mt_lock);
        for (size_t i = 0; i < ntab; i++) {
            if (tab[i].ctx == ctx) {
                a = tab[i];
                memmove(&tab[i], &tab[i + 1], (ntab - i - 1) * sizeof(*tab));
                ntab--;
                found = 1;
                break;
            }
        }
        if (found)
            atomic_fetch_add(&mt_gen, 1);
        pthread_rwlock_unlock(&mt_lock);
        if (!found)
            return;
        release_backing(&a);
    }
}

int tf__mem_overlap(uint64_t base, uint64_t size, struct sim_alloc *out)
{
    pthread_rwlock_rdlock(&mt_lock);
    size_t i = upper(base);
    struct sim_alloc *a = NULL;
    if (i > 0 && tab[i - 1].base + tab[i - 1].size > base)
        a = &tab[i - 1];
    else if (i < ntab && tab[i].base < base + size)
        a = &tab[i];
    if (a)
        *out = *a;
    pthread_rwlock_unlock(&mt_lock);
    return a ? 0 : TF_ENOENT;
}

int tf__mem_lookup(uint64_t addr, struct sim_alloc *out)
{
    pthread_rwlock_rdlock(&mt_lock);
    struct sim_alloc *a = containing(addr);
    if (a)
        *out = *a;
    pthread_rwlock_unlock(&mt_lock);
    return a ? 0 : TF_ENOENT;
}

static int visible(const struct sim_alloc *a, int dev)
{
    return a->kind == M_HOST || a->kind == M_MANAGED || a->dev == dev;
}

int tf__mem_range_ok(uint64_t addr, uint64_t n, int dev)
{
    pthread_rwlock_rdlock(&mt_lock);
    struct sim_alloc *a = containing(addr);
    int ok = a && visible(a, dev) && n <= a->size - (addr - a->base);
    pthread_rwlock_unlock(&mt_lock);
    return ok;
}

/* What a kernel running in context CTX may touch, as a GPU's per-context page tables allow:
 * the device memory and module variables of CTX itself (another context's, even on the same
 * device, is not mapped: CUDA_ERROR_ILLEGAL_ADDRESS), and the process-wide kinds unified
 * addressing maps into every context, page-locked host memory and managed memory. */
static int kernel_visible(const struct sim_alloc *a, CUcontext ctx)
{
    return a->kind == M_HOST || a->kind == M_MANAGED || a->ctx == ctx;
}

size_t tf__mem_ranges(CUcontext ctx, struct tf_ptx_range **v, size_t *cap)
{
    pthread_rwlock_rdlock(&mt_lock);
    if (*cap < ntab) {
        size_t ncap = ntab + 64;
        struct tf_ptx_range *n = realloc(*v, ncap * sizeof(*n));
        if (!n) {
            pthread_rwlock_unlock(&mt_lock);
            return (size_t)-1;
        }
        *v = n;
        *cap = ncap;
    }
    size_t k = 0;
    for (size_t i = 0; i < ntab; i++) {
        if (!kernel_visible(&tab[i], ctx))
            continue;
        (*v)[k++] = (struct tf_ptx_range){tab[i].base, tab[i].size, tab[i].read_only};
    }
    pthread_rwlock_unlock(&mt_lock);
    return k;
}
