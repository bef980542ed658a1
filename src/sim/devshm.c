/* SPDX-License-Identifier: Apache-2.0
 *
 * The cross-process device state region (see devshm.h): creation, the robust region mutex,
 * memory reservations, the FIFO execution lock and busy-time buckets.
 */
#include "sim/devshm.h"

#include "common/err.h"
#include "common/strutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SHM_MAGIC UINT64_C(0x3156444d49534654) /* "TFSIMDV1" little-endian */
#define OWNER_POLL_NS 20000000L                /* re-check a silent owner every 20 ms */

struct bucket {
    uint64_t slot, sm_ns, copy_ns;
};

struct proc {
    int32_t pid;
    uint32_t reserved;
    uint64_t start_time, attach_ns, mem_used, busy_ns, kernels, wait_ticket, last_busy_ns;
    struct bucket buckets[TF_SIM_PROC_BUCKETS];
};

struct region {
    uint64_t magic;
    uint32_t version, header_size;
    uint64_t region_size;
    int64_t total_mem;
    char uuid[48];
    char model[32];
    union {
        pthread_mutex_t mu;
        uint8_t mu_space[64];
    };
    int32_t exec_owner;
    _Atomic uint32_t exec_turn;
    uint64_t next_ticket, exec_since_ns, busy_total_ns, copy_total_ns, kernels_total, generation;
    uint8_t reserved[24];
    struct bucket buckets[TF_SIM_DEV_BUCKETS];
    struct proc procs[TF_SIM_MAX_PROCS];
};

_Static_assert(sizeof(pthread_mutex_t) <= 64, "pthread_mutex_t fits its slot");
_Static_assert(sizeof(struct bucket) == 24, "bucket layout");
_Static_assert(offsetof(struct region, total_mem) == 24, "layout");
_Static_assert(offsetof(struct region, uuid) == 32, "layout");
_Static_assert(offsetof(struct region, mu) == 112, "layout");
_Static_assert(offsetof(struct region, exec_owner) == 176, "layout");
_Static_assert(offsetof(struct region, exec_turn) == 180, "layout");
_Static_assert(offsetof(struct region, generation) == 224, "layout");
_Static_assert(offsetof(struct region, buckets) == 256, "layout");
_Static_assert(offsetof(struct region, procs) == 256 + 24 * TF_SIM_DEV_BUCKETS, "layout");
_Static_assert(offsetof(struct proc, buckets) == 64, "layout");
_Static_assert(sizeof(struct proc) == 64 + 24 * TF_SIM_PROC_BUCKETS, "layout");

struct tf_sim_shm {
    struct region *r;
    size_t size;
};

uint64_t tf_sim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- Process liveness ------------------------------------------------------------------- */

/* Start time (field 22 of /proc/PID/stat) and state; 0 if unreadable. */
static uint64_t proc_start_time(pid_t pid, char *state)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* comm may contain spaces and parentheses */
    if (!p || p[1] != ' ')
        return 0;
    p += 2;
    if (state)
        *state = *p;
    /* After ") ": field 3 is the state; start time is field 22. */
    for (int field = 3; field < 22 && *p; p++)
        if (*p == ' ')
            field++;
    unsigned long long v = 0;
    if (sscanf(p, "%llu", &v) != 1)
        return 0;
    return v;
}

static int proc_alive(const struct proc *p)
{
    if (p->pid <= 0)
        return 0;
    if (kill(p->pid, 0) != 0 && errno == ESRCH)
        return 0;
    char state = 0;
    uint64_t st = proc_start_time(p->pid, &state);
    if (st == 0) /* /proc not readable (e.g. hidepid): trust kill() */
        return 1;
    if (state == 'Z' || state == 'X')
        return 0;
    return st == p->start_time;
}

/* ---- Locking ---------------------------------------------------------------------------- */

static void futex_wait(_Atomic uint32_t *addr, uint32_t val, long ns)
{
    struct timespec ts = {0, ns};
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void futex_wake_all(_Atomic uint32_t *addr)
{
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void reap_locked(struct region *r, int *count);

static int lock(struct region *r)
{
    int rc = pthread_mutex_lock(&r->mu);
    if (rc == EOWNERDEAD) {
        /* The holder died mid-update: make the mutex usable again and drop dead slots. The
         * derived state (budget sum) is recomputed from the slots on every read. */
        pthread_mutex_consistent(&r->mu);
        reap_locked(r, NULL);
        return 0;
    }
    return rc == 0 ? 0 : TF_ESTATE;
}

static void unlock(struct region *r)
{
    pthread_mutex_unlock(&r->mu);
}

/* Next owner: the live waiter with the smallest ticket, or -1. */
static int next_waiter(struct region *r)
{
    int best = -1;
    for (int i = 0; i < TF_SIM_MAX_PROCS; i++) {
        struct proc *p = &r->procs[i];
        if (p->pid && p->wait_ticket && (best < 0 || p->wait_ticket < r->procs[best].wait_ticket))
            best = i;
    }
    return best;
}

static void hand_over(struct region *r)
{
    r->exec_owner = next_waiter(r);
    r->exec_since_ns = 0;
    atomic_fetch_add(&r->exec_turn, 1);
}

static void free_slot(struct region *r, int i)
{
    int was_owner = r->exec_owner == i;
    memset(&r->procs[i], 0, sizeof(r->procs[i]));
    r->generation++;
    if (was_owner)
        hand_over(r);
}

static void reap_locked(struct region *r, int *count)
{
    int n = 0, owner_changed = 0;
    for (int i = 0; i < TF_SIM_MAX_PROCS; i++) {
        if (r->procs[i].pid && !proc_alive(&r->procs[i])) {
            owner_changed |= r->exec_owner == i;
            free_slot(r, i);
            n++;
        }
    }
    if (r->exec_owner >= 0 && !r->procs[r->exec_owner].pid) {
        hand_over(r);
        owner_changed = 1;
    }
    if (owner_changed)
        futex_wake_all(&r->exec_turn);
    if (count)
        *count = n;
}

/* ---- Open / close ----------------------------------------------------------------------- */

static int init_region(struct region *r, size_t size, const char *uuid, const char *model,
                       int64_t total_mem)
{
    memset(r, 0, sizeof(*r));
    r->version = TF_SIM_SHM_VERSION;
    r->header_size = (uint32_t)offsetof(struct region, buckets);
    r->region_size = size;
    r->total_mem = total_mem;
    tf_strlcpy(r->uuid, uuid, sizeof(r->uuid));
    tf_strlcpy(r->model, model, sizeof(r->model));
    r->exec_owner = -1;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    int rc = pthread_mutex_init(&r->mu, &a);
    pthread_mutexattr_destroy(&a);
    if (rc)
        return TF_ESTATE;
    atomic_thread_fence(memory_order_release);
    __atomic_store_n(&r->magic, SHM_MAGIC, __ATOMIC_RELEASE);
    return 0;
}

int tf_sim_shm_open(const char *path, const char *uuid, const char *model, int64_t total_mem,
                    struct tf_sim_shm **out, int64_t *effective_mem, char *err, size_t errlen)
{
    size_t size = sizeof(struct region);
    struct tf_sim_shm *s = NULL;
    struct region *r = MAP_FAILED;
    int rc = 0;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        tf_errf(err, errlen, "device state %s: open: %s", path, strerror(errno));
        return TF_EIO;
    }
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            tf_errf(err, errlen, "device state %s: flock: %s", path, strerror(errno));
            rc = TF_EIO;
            goto out;
        }
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        tf_errf(err, errlen, "device state %s: fstat: %s", path, strerror(errno));
        rc = TF_EIO;
        goto out;
    }
    int fresh = (size_t)st.st_size < size;
    if (fresh && ftruncate(fd, (off_t)size) != 0) {
        tf_errf(err, errlen, "device state %s: ftruncate: %s", path, strerror(errno));
        rc = TF_EIO;
        goto out;
    }
    r = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (r == MAP_FAILED) {
        tf_errf(err, errlen, "device state %s: mmap: %s", path, strerror(errno));
        rc = TF_EIO;
        goto out;
    }
    if (fresh || __atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) != SHM_MAGIC) {
        rc = init_region(r, size, uuid, model, total_mem);
        if (rc) {
            tf_errf(err, errlen, "device state %s: cannot initialise its mutex", path);
            goto out;
        }
    } else if (r->version != TF_SIM_SHM_VERSION || r->region_size != size ||
               r->header_size != offsetof(struct region, buckets)) {
        tf_errf(err, errlen,
                "device state %s has layout version %u (size %llu), this build uses %u; remove "
                "the stale file",
                path, r->version, (unsigned long long)r->region_size, TF_SIM_SHM_VERSION);
        rc = TF_ESTATE;
        goto out;
    } else if (strncmp(r->uuid, uuid, sizeof(r->uuid)) != 0) {
        tf_errf(err, errlen, "device state %s belongs to %.48s, not %s", path, r->uuid, uuid);
        rc = TF_ECONFLICT;
        goto out;
    }
    s = calloc(1, sizeof(*s));
    if (!s) {
        rc = TF_ENOMEM;
        goto out;
    }
    s->r = r;
    s->size = size;
    if (effective_mem)
        *effective_mem = r->total_mem;
    *out = s;
    r = MAP_FAILED;
out:
    if (r != MAP_FAILED)
        munmap(r, size);
    flock(fd, LOCK_UN);
    close(fd);
    return rc;
}

void tf_sim_shm_close(struct tf_sim_shm *s)
{
    if (!s)
        return;
    munmap(s->r, s->size);
    free(s);
}

/* ---- Processes and memory --------------------------------------------------------------- */

int tf_sim_shm_attach(struct tf_sim_shm *s, int *slot)
{
    struct region *r = s->r;
    if (lock(r))
        return TF_ESTATE;
    int found = -1;
    for (int pass = 0; pass < 2 && found < 0; pass++) {
        if (pass == 1)
            reap_locked(r, NULL);
        for (int i = 0; i < TF_SIM_MAX_PROCS; i++)
            if (!r->procs[i].pid) {
                found = i;
                break;
            }
    }
    if (found >= 0) {
        struct proc *p = &r->procs[found];
        memset(p, 0, sizeof(*p));
        p->pid = (int32_t)getpid();
        p->start_time = proc_start_time(getpid(), NULL);
        p->attach_ns = tf_sim_now_ns();
        r->generation++;
        *slot = found;
    }
    unlock(r);
    return found >= 0 ? 0 : TF_ENOSPC;
}

void tf_sim_shm_detach(struct tf_sim_shm *s, int slot)
{
    struct region *r = s->r;
    if (slot < 0 || slot >= TF_SIM_MAX_PROCS || lock(r))
        return;
    int was_owner = r->exec_owner == slot;
    if (r->procs[slot].pid == (int32_t)getpid())
        free_slot(r, slot);
    unlock(r);
    if (was_owner)
        futex_wake_all(&r->exec_turn);
}

static uint64_t used_locked(const struct region *r)
{
    uint64_t used = 0;
    for (int i = 0; i < TF_SIM_MAX_PROCS; i++)
        if (r->procs[i].pid)
            used += r->procs[i].mem_used;
    return used;
}

int tf_sim_shm_mem_reserve(struct tf_sim_shm *s, int slot, uint64_t bytes)
{
    struct region *r = s->r;
    if (slot < 0 || slot >= TF_SIM_MAX_PROCS)
        return TF_EINVAL;
    if (lock(r))
        return TF_ESTATE;
    uint64_t total = r->total_mem > 0 ? (uint64_t)r->total_mem : 0;
    uint64_t used = used_locked(r);
    if (bytes > total || used > total - bytes) {
        reap_locked(r, NULL); /* dead processes may still hold part of the budget */
        used = used_locked(r);
    }
    int rc = 0;
    if (bytes > total || used > total - bytes)
        rc = TF_ENOSPC;
    else
        r->procs[slot].mem_used += bytes;
    unlock(r);
    return rc;
}

void tf_sim_shm_mem_release(struct tf_sim_shm *s, int slot, uint64_t bytes)
{
    struct region *r = s->r;
    if (slot < 0 || slot >= TF_SIM_MAX_PROCS || lock(r))
        return;
    struct proc *p = &r->procs[slot];
    p->mem_used = p->mem_used > bytes ? p->mem_used - bytes : 0;
    unlock(r);
}

void tf_sim_shm_mem_info(struct tf_sim_shm *s, struct tf_sim_shm_mem *m)
{
    struct region *r = s->r;
    memset(m, 0, sizeof(*m));
    if (lock(r))
        return;
    reap_locked(r, NULL);
    m->total = r->total_mem > 0 ? (uint64_t)r->total_mem : 0;
    m->used = used_locked(r);
    if (m->used > m->total)
        m->used = m->total;
    unlock(r);
}

int tf_sim_shm_reap(struct tf_sim_shm *s)
{
    int n = 0;
    if (lock(s->r))
        return 0;
    reap_locked(s->r, &n);
    unlock(s->r);
    return n;
}

/* ---- Execution lock --------------------------------------------------------------------- */

int tf_sim_shm_exec_acquire(struct tf_sim_shm *s, int slot)
{
    struct region *r = s->r;
    if (slot < 0 || slot >= TF_SIM_MAX_PROCS)
        return TF_EINVAL;
    if (lock(r))
        return TF_ESTATE;
    struct proc *me = &r->procs[slot];
    if (r->exec_owner < 0 && next_waiter(r) < 0) {
        r->exec_owner = slot;
    } else if (r->exec_owner != slot) {
        me->wait_ticket = ++r->next_ticket;
        for (;;) {
            if (r->exec_owner < 0) {
                r->exec_owner = next_waiter(r);
                atomic_fetch_add(&r->exec_turn, 1);
            }
            if (r->exec_owner == slot)
                break;
            if (r->exec_owner >= 0 && !proc_alive(&r->procs[r->exec_owner])) {
                reap_locked(r, NULL);
                continue;
            }
            if (!me->pid) { /* our slot was reaped (cannot happen while we live): re-queue */
                unlock(r);
                return TF_ESTATE;
            }
            uint32_t turn = atomic_load(&r->exec_turn);
            unlock(r);
            futex_wait(&r->exec_turn, turn, OWNER_POLL_NS);
            if (lock(r))
                return TF_ESTATE;
        }
        me->wait_ticket = 0;
    }
    r->exec_since_ns = tf_sim_now_ns();
    unlock(r);
    return 0;
}

/* Adds the part of [START, END) that falls in each bucket's 10 ms slot to FIELD (0: sm, 1:
 * copy) of ring B[N]. */
static void add_interval(struct bucket *b, size_t n, uint64_t start, uint64_t end, int field)
{
    if (end <= start)
        return;
    uint64_t first = start / TF_SIM_BUCKET_NS, last = (end - 1) / TF_SIM_BUCKET_NS;
    if (last - first >= n) /* longer than the ring: only the recent part matters */
        first = last - n + 1;
    for (uint64_t slot = first; slot <= last; slot++) {
        struct bucket *k = &b[slot % n];
        if (k->slot != slot) {
            k->slot = slot;
            k->sm_ns = k->copy_ns = 0;
        }
        uint64_t lo = slot * TF_SIM_BUCKET_NS, hi = lo + TF_SIM_BUCKET_NS;
        uint64_t a = start > lo ? start : lo, z = end < hi ? end : hi;
        if (field == 0)
            k->sm_ns += z - a;
        else
            k->copy_ns += z - a;
    }
}

void tf_sim_shm_exec_release(struct tf_sim_shm *s, int slot, uint64_t start_ns, uint64_t end_ns)
{
    struct region *r = s->r;
    if (slot < 0 || slot >= TF_SIM_MAX_PROCS || lock(r))
        return;
    if (end_ns > start_ns) {
        struct proc *p = &r->procs[slot];
        add_interval(r->buckets, TF_SIM_DEV_BUCKETS, start_ns, end_ns, 0);
        add_interval(p->buckets, TF_SIM_PROC_BUCKETS, start_ns, end_ns, 0);
        r->busy_total_ns += end_ns - start_ns;
        p->busy_ns += end_ns - start_ns;
        p->last_busy_ns = end_ns;
    }
    r->kernels_total++;
    r->procs[slot].kernels++;
    int handed = 0;
    if (r->exec_owner == slot) {
        hand_over(r);
        handed = r->exec_owner >= 0;
    }
    unlock(r);
    if (handed)
        futex_wake_all(&r->exec_turn);
}

void tf_sim_shm_account_copy(struct tf_sim_shm *s, int slot, uint64_t start_ns, uint64_t end_ns)
{
    struct region *r = s->r;
    if (slot < 0 || slot >= TF_SIM_MAX_PROCS || end_ns <= start_ns || lock(r))
        return;
    add_interval(r->buckets, TF_SIM_DEV_BUCKETS, start_ns, end_ns, 1);
    add_interval(r->procs[slot].buckets, TF_SIM_PROC_BUCKETS, start_ns, end_ns, 1);
    r->copy_total_ns += end_ns - start_ns;
    unlock(r);
}

/* ---- Utilisation ------------------------------------------------------------------------ */

/* Busy ns of FIELD in (FROM, NOW] from ring B[N]. A bucket counts in proportion to how much
 * of its elapsed span lies in the window (its busy time is assumed spread evenly). */
static uint64_t busy_in(const struct bucket *b, size_t n, uint64_t from, uint64_t now, int field)
{
    if (now <= from)
        return 0;
    uint64_t first = from / TF_SIM_BUCKET_NS, last = now / TF_SIM_BUCKET_NS;
    if (last - first >= n)
        first = last - n + 1;
    double sum = 0;
    for (uint64_t slot = first; slot <= last; slot++) {
        const struct bucket *k = &b[slot % n];
        if (k->slot != slot)
            continue;
        uint64_t v = field == 0 ? k->sm_ns : k->copy_ns;
        if (!v)
            continue;
        uint64_t lo = slot * TF_SIM_BUCKET_NS, hi = lo + TF_SIM_BUCKET_NS;
        if (hi > now)
            hi = now; /* the current bucket has only run until now */
        if (hi <= lo)
            continue;
        uint64_t a = from > lo ? from : lo;
        if (a >= hi)
            continue;
        sum += (double)v * (double)(hi - a) / (double)(hi - lo);
    }
    return (uint64_t)sum;
}

static unsigned pct(uint64_t busy, uint64_t window)
{
    if (!window)
        return 0;
    uint64_t p = (busy * 100 + window / 2) / window;
    return p > 100 ? 100 : (unsigned)p;
}

/* Part of the running kernel [exec_since_ns, NOW) inside (FROM, NOW]. */
static uint64_t running_in(const struct region *r, uint64_t from, uint64_t now)
{
    if (r->exec_owner < 0 || !r->exec_since_ns || r->exec_since_ns >= now)
        return 0;
    uint64_t a = r->exec_since_ns > from ? r->exec_since_ns : from;
    return now > a ? now - a : 0;
}

void tf_sim_shm_utilization(struct tf_sim_shm *s, uint64_t now_ns, uint64_t window_ns,
                            unsigned *gpu, unsigned *mem)
{
    struct region *r = s->r;
    *gpu = *mem = 0;
    if (!window_ns || lock(r))
        return;
    uint64_t from = now_ns > window_ns ? now_ns - window_ns : 0;
    uint64_t sm = busy_in(r->buckets, TF_SIM_DEV_BUCKETS, from, now_ns, 0);
    sm += running_in(r, from, now_ns);
    uint64_t cp = busy_in(r->buckets, TF_SIM_DEV_BUCKETS, from, now_ns, 1);
    *gpu = pct(sm, now_ns - from);
    *mem = pct(cp, now_ns - from);
    unlock(r);
}

int tf_sim_shm_processes(struct tf_sim_shm *s, uint64_t from_ns, uint64_t now_ns,
                         struct tf_sim_shm_proc_info *out, int max)
{
    struct region *r = s->r;
    if (lock(r))
        return 0;
    reap_locked(r, NULL);
    int n = 0;
    struct tf_sim_shm_proc_info tmp[TF_SIM_MAX_PROCS];
    for (int i = 0; i < TF_SIM_MAX_PROCS; i++) {
        const struct proc *p = &r->procs[i];
        if (!p->pid)
            continue;
        uint64_t sm = busy_in(p->buckets, TF_SIM_PROC_BUCKETS, from_ns, now_ns, 0);
        if (r->exec_owner == i)
            sm += running_in(r, from_ns, now_ns);
        uint64_t cp = busy_in(p->buckets, TF_SIM_PROC_BUCKETS, from_ns, now_ns, 1);
        int j = 0;
        while (j < n && tmp[j].pid != (uint32_t)p->pid)
            j++;
        if (j == n) {
            memset(&tmp[n], 0, sizeof(tmp[n]));
            tmp[n].pid = (uint32_t)p->pid;
            n++;
        }
        tmp[j].mem_used += p->mem_used;
        tmp[j].busy_ns += p->busy_ns;
        tmp[j].window_sm_ns += sm;
        tmp[j].window_copy_ns += cp;
    }
    unlock(r);
    uint64_t window = now_ns > from_ns ? now_ns - from_ns : 0;
    for (int j = 0; j < n; j++) {
        tmp[j].sm_util = pct(tmp[j].window_sm_ns, window);
        tmp[j].mem_util = pct(tmp[j].window_copy_ns, window);
        if (j < max)
            out[j] = tmp[j];
    }
    return n;
}

void tf_sim_shm_totals(struct tf_sim_shm *s, struct tf_sim_shm_totals *t)
{
    struct region *r = s->r;
    memset(t, 0, sizeof(*t));
    if (lock(r))
        return;
    t->busy_ns = r->busy_total_ns;
    t->copy_ns = r->copy_total_ns;
    t->kernels = r->kernels_total;
    t->generation = r->generation;
    unlock(r);
}
