/* SPDX-License-Identifier: Apache-2.0
 *
 * Soft-isolation regions, live: the config seqlock, the heartbeat, the engine's audit of the
 * usage part, VRAM reservations and PID slots (see shm.h; files: shm_file.c).
 */
#include "limits/shm.h"

#include "common/err.h"
#include "common/strutil.h"
#include "limits/bucket.h"
#include "limits/shm_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define READ_RETRIES 2000

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

void tf__shm_sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* --- seqlock -------------------------------------------------------------------------- */

void tf__shm_store_config(struct tf_shm_region *r, const struct tf_shm_config *cfg)
{
    uint64_t name[TF_SHM_NAME_MAX / 8];
    memcpy(name, cfg->name, sizeof(name));
    for (unsigned i = 0; i < TF_SHM_NAME_MAX / 8; i++)
        atomic_store_explicit(&r->lim->hdr.name[i], name[i], memory_order_relaxed);
    atomic_store_explicit(&r->lim->hdr.flags, cfg->flags, memory_order_relaxed);
    atomic_store_explicit(&r->lim->hdr.ndev, cfg->ndev, memory_order_relaxed);
    for (unsigned i = 0; i < TF_SHM_MAX_DEVICES; i++) {
        struct tf_shm_ldev *d = &r->lim->dev[i];
        const struct tf_shm_dev_config *c = &cfg->dev[i];
        bool used = i < cfg->ndev;
        uint64_t u[2];
        memcpy(u, c->uuid, 16);
        atomic_store_explicit(&d->uuid[0], used ? u[0] : 0, memory_order_relaxed);
        atomic_store_explicit(&d->uuid[1], used ? u[1] : 0, memory_order_relaxed);
        atomic_store_explicit(&d->flags, used ? c->flags : 0, memory_order_relaxed);
        atomic_store_explicit(&d->compute_limit_bp, used ? c->compute_limit_bp : 0,
                              memory_order_relaxed);
        atomic_store_explicit(&d->vram_limit, used ? c->vram_limit : 0, memory_order_relaxed);
        atomic_store_explicit(&d->mem_total, used ? c->mem_total : 0, memory_order_relaxed);
    }
}

int tf_shm_read_config(const struct tf_shm_region *r, struct tf_shm_config *out)
{
    const struct tf_shm_region *rw = r; /* loads only */
    for (int tries = 0; tries < READ_RETRIES; tries++) {
        uint64_t s1 = atomic_load_explicit(&rw->lim->hdr.seq, memory_order_acquire);
        if (s1 & 1) {
            cpu_relax();
            continue;
        }
        uint64_t name[TF_SHM_NAME_MAX / 8];
        for (unsigned i = 0; i < TF_SHM_NAME_MAX / 8; i++)
            name[i] = atomic_load_explicit(&rw->lim->hdr.name[i], memory_order_relaxed);
        memcpy(out->name, name, sizeof(name));
        out->flags = atomic_load_explicit(&rw->lim->hdr.flags, memory_order_relaxed);
        out->ndev = atomic_load_explicit(&rw->lim->hdr.ndev, memory_order_relaxed);
        for (unsigned i = 0; i < TF_SHM_MAX_DEVICES; i++) {
            struct tf_shm_ldev *d = &rw->lim->dev[i];
            struct tf_shm_dev_config *c = &out->dev[i];
            uint64_t u[2] = {atomic_load_explicit(&d->uuid[0], memory_order_relaxed),
                             atomic_load_explicit(&d->uuid[1], memory_order_relaxed)};
            memcpy(c->uuid, u, 16);
            c->flags = atomic_load_explicit(&d->flags, memory_order_relaxed);
            c->compute_limit_bp = atomic_load_explicit(&d->compute_limit_bp, memory_order_relaxed);
            c->vram_limit = atomic_load_explicit(&d->vram_limit, memory_order_relaxed);
            c->mem_total = atomic_load_explicit(&d->mem_total, memory_order_relaxed);
        }
        atomic_thread_fence(memory_order_acquire);
        uint64_t s2 = atomic_load_explicit(&rw->lim->hdr.seq, memory_order_relaxed);
        if (s1 == s2)
            return 0;
    }
    return TF_EBUSY;
}

/* Makes seq odd for this writer. A writer that left it odd without progress for
 * TF_SHM_WRITER_TAKEOVER_MS is presumed dead and taken over. Returns the odd value held. */
static uint64_t write_begin(struct tf_shm_region *r)
{
    uint64_t start = 0, seen = UINT64_MAX;
    for (;;) {
        uint64_t s = atomic_load_explicit(&r->lim->hdr.seq, memory_order_relaxed);
        if (!(s & 1)) {
            if (atomic_compare_exchange_weak_explicit(&r->lim->hdr.seq, &s, s + 1,
                                                      memory_order_relaxed, memory_order_relaxed))
                break;
            continue;
        }
        uint64_t now = mono_ms();
        if (s != seen) {
            seen = s;
            start = now;
        } else if (now - start >= TF_SHM_WRITER_TAKEOVER_MS) {
            if (atomic_compare_exchange_strong_explicit(&r->lim->hdr.seq, &s, s + 2,
                                                        memory_order_relaxed, memory_order_relaxed))
                break;
            continue;
        }
        tf__shm_sleep_ms(1);
    }
    atomic_thread_fence(memory_order_release);
    return atomic_load_explicit(&r->lim->hdr.seq, memory_order_relaxed);
}

static void write_end(struct tf_shm_region *r, uint64_t odd)
{
    atomic_store_explicit(&r->lim->hdr.seq, odd + 1, memory_order_release);
}

void tf_shm_bucket_params(uint32_t compute_limit_bp, uint64_t *rate, int64_t *capacity)
{
    if (compute_limit_bp > 10000)
        compute_limit_bp = 10000;
    uint64_t r = (uint64_t)compute_limit_bp * (TF_BUCKET_NS_PER_S / 10000u);
    *rate = r;
    int64_t cap = (int64_t)(r / 1000u * TF_SHM_BURST_MS);
    *capacity = cap < 1 ? 1 : cap;
}

static void reset_bucket_if_changed(struct tf_shm_ldev *d, uint32_t old_flags, uint32_t old_bp,
                                    uint32_t new_flags, uint32_t new_bp)
{
    bool was = old_flags & TF_SHM_DEV_COMPUTE_LIMIT, now = new_flags & TF_SHM_DEV_COMPUTE_LIMIT;
    if (!now || (was && old_bp == new_bp))
        return;
    uint64_t rate;
    int64_t cap;
    tf_shm_bucket_params(new_bp, &rate, &cap);
    tf_bucket_set(&d->bucket, rate, cap);
    atomic_store_explicit(&d->rate_bp, new_bp, memory_order_relaxed);
}

int tf_shm_write_config(struct tf_shm_region *r, const struct tf_shm_config *cfg)
{
    if (tf_shm_check_config(cfg, NULL, 0))
        return TF_EINVAL;
    uint32_t old_flags[TF_SHM_MAX_DEVICES], old_bp[TF_SHM_MAX_DEVICES];
    uint64_t odd = write_begin(r);
    for (unsigned i = 0; i < TF_SHM_MAX_DEVICES; i++) {
        old_flags[i] = atomic_load_explicit(&r->lim->dev[i].flags, memory_order_relaxed);
        old_bp[i] = atomic_load_explicit(&r->lim->dev[i].compute_limit_bp, memory_order_relaxed);
    }
    tf__shm_store_config(r, cfg);
    write_end(r, odd);
    for (unsigned i = 0; i < cfg->ndev; i++)
        reset_bucket_if_changed(&r->lim->dev[i], old_flags[i], old_bp[i], cfg->dev[i].flags,
                                cfg->dev[i].compute_limit_bp);
    return 0;
}

int tf_shm_set_limits(struct tf_shm_region *r, unsigned dev, uint32_t flags,
                      uint32_t compute_limit_bp, uint64_t vram_limit)
{
    if (flags & ~(TF_SHM_DEV_COMPUTE_LIMIT | TF_SHM_DEV_VRAM_LIMIT | TF_SHM_DEV_PRESENT))
        return TF_EINVAL;
    if ((flags & TF_SHM_DEV_COMPUTE_LIMIT) && (compute_limit_bp < 1 || compute_limit_bp > 10000))
        return TF_EINVAL;
    if ((flags & TF_SHM_DEV_VRAM_LIMIT) && vram_limit > (uint64_t)INT64_MAX)
        return TF_EINVAL;
    uint64_t odd = write_begin(r);
    if (dev >= atomic_load_explicit(&r->lim->hdr.ndev, memory_order_relaxed)) {
        write_end(r, odd);
        return TF_ERANGE;
    }
    struct tf_shm_ldev *d = &r->lim->dev[dev];
    uint32_t old_flags = atomic_load_explicit(&d->flags, memory_order_relaxed);
    uint32_t old_bp = atomic_load_explicit(&d->compute_limit_bp, memory_order_relaxed);
    flags |= TF_SHM_DEV_PRESENT;
    atomic_store_explicit(&d->compute_limit_bp,
                          (flags & TF_SHM_DEV_COMPUTE_LIMIT) ? compute_limit_bp : 0,
                          memory_order_relaxed);
    atomic_store_explicit(&d->vram_limit, (flags & TF_SHM_DEV_VRAM_LIMIT) ? vram_limit : 0,
                          memory_order_relaxed);
    atomic_store_explicit(&d->flags, flags, memory_order_relaxed);
    write_end(r, odd);
    reset_bucket_if_changed(d, old_flags, old_bp, flags, compute_limit_bp);
    return 0;
}

/* --- heartbeat ------------------------------------------------------------------------ */

void tf_shm_heartbeat(struct tf_shm_region *r, uint64_t now_ns, uint32_t period_ms,
                      uint32_t writer_pid)
{
    struct tf_shm_header *h = &r->lim->hdr;
    atomic_store_explicit(&h->heartbeat_period_ms, period_ms, memory_order_relaxed);
    atomic_store_explicit(&h->writer_pid, writer_pid, memory_order_relaxed);
    atomic_store_explicit(&h->heartbeat_ns, now_ns ? now_ns : 1, memory_order_release);
}

bool tf_shm_heartbeat_stale(const struct tf_shm_region *r, uint64_t now_ns)
{
    struct tf_shm_header *h = &r->lim->hdr;
    uint64_t hb = atomic_load_explicit(&h->heartbeat_ns, memory_order_acquire);
    if (hb == 0)
        return false;
    uint64_t period = atomic_load_explicit(&h->heartbeat_period_ms, memory_order_relaxed);
    uint64_t bound_ms = period * TF_SHM_STALE_PERIODS;
    if (bound_ms < TF_SHM_STALE_MIN_MS)
        bound_ms = TF_SHM_STALE_MIN_MS;
    return now_ns > hb && now_ns - hb > bound_ms * 1000000u;
}

/* --- audit ----------------------------------------------------------------------------- */

unsigned tf_shm_audit(struct tf_shm_region *r, unsigned dev, struct tf_shm_audit *a)
{
    int64_t prev_deficit = a->deficit;
    a->deficit = 0;
    a->taken = 0;
    if (dev >= TF_SHM_MAX_DEVICES)
        return 0;
    struct tf_shm_udev *d = &r->use->dev[dev];
    unsigned found = 0;
    /* Tokens: refills stop at the capacity and refunds at the engine's ceiling, so a level
     * above both (the capacity may have been raised since: a live limit change) was written
     * by someone else. Take the excess back. */
    int64_t ceiling = a->ceiling,
            cap = atomic_load_explicit(&r->lim->dev[dev].bucket.capacity, memory_order_relaxed);
    if (ceiling < cap)
        ceiling = cap;
    int64_t t = atomic_load_explicit(&d->bucket.tokens, memory_order_relaxed);
    while (t > ceiling) {
        if (atomic_compare_exchange_weak_explicit(&d->bucket.tokens, &t, ceiling,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            found |= TF_SHM_FORGED_TOKENS;
            a->taken = t - ceiling;
            t = ceiling;
            break;
        }
    }
    a->tokens = t;
    /* VRAM: reserve adds to the device before the slot, release and reclaim take from the
     * slot before the device, so the device never holds less than its slots. Read the device
     * on both sides of the slots: a reservation or release in between makes them differ. */
    int64_t before = atomic_load_explicit(&d->vram_used, memory_order_acquire), sum = 0;
    for (int j = 0; j < TF_SHM_MAX_PIDS; j++) {
        struct tf_shm_pid *p = &r->use->pid[j];
        uint64_t o = atomic_load_explicit(&p->owner, memory_order_acquire);
        int64_t v = atomic_load_explicit(&p->vram_used[dev], memory_order_relaxed);
        if (o && v > 0)
            sum = v > INT64_MAX - sum ? INT64_MAX : sum + v;
    }
    int64_t after = atomic_load_explicit(&d->vram_used, memory_order_acquire);
    if (before == after && after < sum) {
        a->deficit = sum - (after < 0 ? 0 : after);
        if (prev_deficit > 0 &&
            atomic_compare_exchange_strong_explicit(&d->vram_used, &after, sum,
                                                    memory_order_relaxed, memory_order_relaxed))
            found |= TF_SHM_FORGED_VRAM;
    }
    if (found)
        atomic_fetch_add_explicit(&r->lim->dev[dev].tampered, 1, memory_order_relaxed);
    return found;
}

/* --- VRAM ------------------------------------------------------------------------------ */

static void sub_clamped(_Atomic(int64_t) *v, uint64_t bytes)
{
    int64_t cur = atomic_load_explicit(v, memory_order_relaxed);
    for (;;) {
        int64_t next = (uint64_t)cur <= bytes || cur < 0 ? 0 : cur - (int64_t)bytes;
        if (atomic_compare_exchange_weak_explicit(v, &cur, next, memory_order_relaxed,
                                                  memory_order_relaxed))
            return;
    }
}

int tf_shm_vram_reserve(struct tf_shm_region *r, unsigned dev, int slot, uint64_t bytes)
{
    if (dev >= TF_SHM_MAX_DEVICES || slot >= TF_SHM_MAX_PIDS || bytes > (uint64_t)INT64_MAX)
        return TF_ERANGE;
    struct tf_shm_ldev *l = &r->lim->dev[dev];
    struct tf_shm_udev *d = &r->use->dev[dev];
    int64_t cur = atomic_load_explicit(&d->vram_used, memory_order_relaxed);
    int64_t next;
    for (;;) {
        int64_t base = cur < 0 ? 0 : cur; /* a negative counter (corruption) counts as 0 */
        if ((int64_t)bytes > INT64_MAX - base)
            return TF_ERANGE;
        next = base + (int64_t)bytes;
        uint32_t flags = atomic_load_explicit(&l->flags, memory_order_relaxed);
        if (flags & TF_SHM_DEV_VRAM_LIMIT) {
            uint64_t limit = atomic_load_explicit(&l->vram_limit, memory_order_relaxed);
            if ((uint64_t)next > limit) {
                atomic_fetch_add_explicit(&d->oom_count, 1, memory_order_relaxed);
                return TF_ENOSPC;
            }
        }
        if (atomic_compare_exchange_weak_explicit(&d->vram_used, &cur, next, memory_order_relaxed,
                                                  memory_order_relaxed))
            break;
    }
    int64_t peak = atomic_load_explicit(&d->vram_peak, memory_order_relaxed);
    while (next > peak &&
           !atomic_compare_exchange_weak_explicit(&d->vram_peak, &peak, next, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
    if (slot >= 0)
        atomic_fetch_add_explicit(&r->use->pid[slot].vram_used[dev], (int64_t)bytes,
                                  memory_order_relaxed);
    return 0;
}

void tf_shm_vram_release(struct tf_shm_region *r, unsigned dev, int slot, uint64_t bytes)
{
    if (dev >= TF_SHM_MAX_DEVICES || slot >= TF_SHM_MAX_PIDS || bytes == 0)
        return;
    /* Slot first: a process killed between the two leaves the device over-counted (slack a
     * reap cannot see), never under-counted (room beyond the limit). */
    if (slot >= 0)
        sub_clamped(&r->use->pid[slot].vram_used[dev], bytes);
    sub_clamped(&r->use->dev[dev].vram_used, bytes);
}

void tf_shm_vram_view(const struct tf_shm_region *r, unsigned dev, uint64_t phys_free,
                      uint64_t phys_total, uint64_t *free_out, uint64_t *total_out)
{
    if (dev >= TF_SHM_MAX_DEVICES) {
        *free_out = phys_free;
        *total_out = phys_total;
        return;
    }
    struct tf_shm_ldev *l = &r->lim->dev[dev];
    struct tf_shm_udev *d = &r->use->dev[dev];
    uint32_t flags = atomic_load_explicit(&l->flags, memory_order_relaxed);
    if (!(flags & TF_SHM_DEV_VRAM_LIMIT)) {
        *free_out = phys_free > phys_total ? phys_total : phys_free;
        *total_out = phys_total;
        return;
    }
    uint64_t total = atomic_load_explicit(&l->vram_limit, memory_order_relaxed);
    if (phys_total && total > phys_total)
        total = phys_total;
    int64_t used = atomic_load_explicit(&d->vram_used, memory_order_relaxed);
    uint64_t u = used < 0 ? 0 : (uint64_t)used;
    if (u > total)
        u = total;
    uint64_t free = total - u;
    if (phys_total && free > phys_free)
        free = phys_free;
    *free_out = free;
    *total_out = total;
}

/* --- PID slots ------------------------------------------------------------------------- */

uint64_t tf_shm_owner_id(uint32_t pid, uint64_t starttime_ticks)
{
    return (uint64_t)pid | ((starttime_ticks & 0x7fffffffu) << 32);
}

int tf_shm_pid_claim(struct tf_shm_region *r, uint64_t owner, uint64_t pidns)
{
    owner &= ~TF_SHM_OWNER_RECLAIM;
    if (owner == 0)
        return TF_EINVAL;
    for (int i = 0; i < TF_SHM_MAX_PIDS; i++) {
        uint64_t expect = 0;
        if (atomic_compare_exchange_strong_explicit(&r->use->pid[i].owner, &expect, owner,
                                                    memory_order_acq_rel, memory_order_relaxed)) {
            atomic_store_explicit(&r->use->pid[i].host_pid, 0, memory_order_relaxed);
            atomic_store_explicit(&r->use->pid[i].pidns, pidns, memory_order_relaxed);
            return i;
        }
    }
    return TF_ENOSPC;
}

/* Returns the slot's bytes to the devices and clears its counters. The caller holds the
 * slot: its owner word equals HELD (the owner id, or this reclaimer's mark); draining stops
 * if that changes (a stalled reclaimer was taken over). */
static void drain_slot(struct tf_shm_region *r, int slot, uint64_t held)
{
    struct tf_shm_pid *p = &r->use->pid[slot];
    for (unsigned d = 0; d < TF_SHM_MAX_DEVICES; d++) {
        if (atomic_load_explicit(&p->owner, memory_order_acquire) != held)
            return;
        int64_t b = atomic_exchange_explicit(&p->vram_used[d], 0, memory_order_relaxed);
        if (b > 0)
            sub_clamped(&r->use->dev[d].vram_used, (uint64_t)b);
        atomic_store_explicit(&p->launches[d], 0, memory_order_relaxed);
    }
    atomic_store_explicit(&p->host_pid, 0, memory_order_relaxed);
    atomic_store_explicit(&p->pidns, 0, memory_order_relaxed);
}

void tf_shm_pid_release(struct tf_shm_region *r, int slot, uint64_t owner)
{
    if (slot < 0 || slot >= TF_SHM_MAX_PIDS)
        return;
    owner &= ~TF_SHM_OWNER_RECLAIM;
    if (atomic_load_explicit(&r->use->pid[slot].owner, memory_order_acquire) != owner)
        return;
    drain_slot(r, slot, owner);
    uint64_t expect = owner;
    atomic_compare_exchange_strong_explicit(&r->use->pid[slot].owner, &expect, 0,
                                            memory_order_release, memory_order_relaxed);
}

int tf_shm_reap(struct tf_shm_region *r, uint64_t self, uint64_t now_ns, tf_shm_alive_fn alive,
                void *ctx)
{
    int n = 0;
    uint64_t mark = TF_SHM_OWNER_RECLAIM | (self & ~TF_SHM_OWNER_RECLAIM);
    for (int i = 0; i < TF_SHM_MAX_PIDS; i++) {
        struct tf_shm_pid *p = &r->use->pid[i];
        uint64_t o = atomic_load_explicit(&p->owner, memory_order_acquire);
        if (o == 0 || o == mark)
            continue;
        if (o & TF_SHM_OWNER_RECLAIM) {
            uint64_t since = atomic_load_explicit(&p->reclaim_ns, memory_order_relaxed);
            if (now_ns < since || now_ns - since < TF_SHM_RECLAIM_STALE_MS * UINT64_C(1000000))
                continue; /* a reclaim in progress */
        } else if (alive(p, o, ctx)) {
            continue;
        }
        atomic_store_explicit(&p->reclaim_ns, now_ns, memory_order_relaxed);
        if (!atomic_compare_exchange_strong_explicit(&p->owner, &o, mark, memory_order_acq_rel,
                                                     memory_order_relaxed))
            continue; /* changed under us: someone else handles it */
        drain_slot(r, i, mark);
        uint64_t expect = mark;
        if (atomic_compare_exchange_strong_explicit(&p->owner, &expect, 0, memory_order_release,
                                                    memory_order_relaxed))
            n++;
    }
    return n;
}

/* --- helpers ---------------------------------------------------------------------------- */

void tf_shm_uuid_load(const struct tf_shm_region *r, unsigned dev, uint8_t out[16])
{
    uint64_t u[2] = {0, 0};
    if (dev < TF_SHM_MAX_DEVICES) {
        u[0] = atomic_load_explicit(&r->lim->dev[dev].uuid[0], memory_order_relaxed);
        u[1] = atomic_load_explicit(&r->lim->dev[dev].uuid[1], memory_order_relaxed);
    }
    memcpy(out, u, 16);
}

void tf_shm_uuid_format(const uint8_t u[16], char *buf, size_t len)
{
    snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}

int tf_shm_uuid_parse(const char *s, uint8_t out[16])
{
    if (!s)
        return TF_EINVAL;
    if (!strncmp(s, "GPU-", 4))
        s += 4;
    int n = 0, hi = -1;
    for (; *s; s++) {
        if (*s == '-')
            continue;
        int v = tf_hexval(*s);
        if (v < 0 || n >= 16)
            return TF_EINVAL;
        if (hi < 0) {
            hi = v;
        } else {
            out[n++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    return n == 16 && hi < 0 ? 0 : TF_EINVAL;
}
