/* SPDX-License-Identifier: Apache-2.0
 *
 * The limit engine step (see engine.h).
 */
#include "limits/engine.h"

#include "common/err.h"
#include "common/log.h"
#include "limits/bucket.h"
#include "limits/proc.h"
#include "limits/shm.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SUBSYS "limits"
#define MAX_SAMPLED (TF_SHM_MAX_DEVICES * 4)

struct wl_dev {
    struct tf_limit_ctl ctl;
    bool ctl_on;                /* the controller ran last step (compute limit in force) */
    uint64_t throttles;         /* dev.throttle_count at the previous step */
    uint64_t pending;           /* launches since the last measured window */
    struct tf_bucket_mark mark; /* the bucket at the previous step */
    int64_t adjusted;           /* what this engine's true-ups changed its tokens by since */
    int64_t charged;            /* tokens launches consumed since the last measured window */
    bool blind_logged;
    struct tf_shm_audit audit; /* the usage part's audit (ceiling carried between steps) */
    uint64_t forged_logged_ns; /* last time a forged usage part was logged */
    struct tf_engine_dev_stats st;
};

struct workload {
    bool used;
    struct tf_shm_region r;
    char name[TF_SHM_NAME_MAX];
    struct tf_shm_config cfg; /* last good snapshot */
    bool have_cfg;
    /* per PID slot: owner and launch counters seen last step */
    uint64_t slot_owner[TF_SHM_MAX_PIDS];
    uint64_t slot_launches[TF_SHM_MAX_PIDS][TF_SHM_MAX_DEVICES];
    /* the compute cross-check, per PID slot: measured windows in a row with GPU time but no
     * reported launch, and the host pid this engine paused (0: none) */
    uint8_t lie[TF_SHM_MAX_PIDS]; /* (one past the threshold once caught) */
    uint32_t paused[TF_SHM_MAX_PIDS];
    uint8_t held[TF_SHM_MAX_PIDS]; /* steps paused in a row */
    struct wl_dev dev[TF_SHM_MAX_DEVICES];
};

struct sampled {
    uint8_t uuid[16];
    unsigned ordinal;
    int rc;
    struct tf_usage_dev u;
};

struct tf_engine {
    struct tf_engine_opts o;
    struct tf_ctl_params ctl;
    struct workload wl[TF_ENGINE_MAX_WORKLOADS];
    struct sampled smp[MAX_SAMPLED];
    int nsmp;
};

struct tf_engine *tf_engine_new(const struct tf_engine_opts *o)
{
    struct tf_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->o = *o;
    if (e->o.period_ms == 0)
        e->o.period_ms = 100;
    if (o->ctl)
        e->ctl = *o->ctl;
    else
        tf_ctl_default_params(&e->ctl);
    return e;
}

/* Resumes the process this engine paused for slot S of W, if any. */
static void resume(struct workload *w, int s)
{
    if (w->paused[s]) {
        kill((pid_t)w->paused[s], SIGCONT);
        tf_log(TF_LOG_INFO, SUBSYS, "%s: process %u resumed", w->name, w->paused[s]);
    }
    w->paused[s] = 0;
}

static void resume_all(struct workload *w)
{
    for (int s = 0; s < TF_SHM_MAX_PIDS; s++)
        resume(w, s);
}

void tf_engine_destroy(struct tf_engine *e)
{
    if (!e)
        return;
    for (int i = 0; i < TF_ENGINE_MAX_WORKLOADS; i++)
        if (e->wl[i].used)
            resume_all(&e->wl[i]);
    free(e);
}

int tf_engine_add(struct tf_engine *e, const struct tf_shm_region *r, const char *name)
{
    for (int i = 0; i < TF_ENGINE_MAX_WORKLOADS; i++) {
        struct workload *w = &e->wl[i];
        if (w->used)
            continue;
        memset(w, 0, sizeof(*w));
        w->used = true;
        w->r = *r;
        snprintf(w->name, sizeof(w->name), "%s", name ? name : "workload");
        struct tf_shm_usage *u = r->use;
        for (int d = 0; d < TF_SHM_MAX_DEVICES; d++) {
            tf_limit_ctl_init(&w->dev[d].ctl, &e->ctl);
            w->dev[d].throttles =
                atomic_load_explicit(&u->dev[d].throttle_count, memory_order_relaxed);
            tf_bucket_mark(&u->dev[d].bucket, &w->dev[d].mark);
            w->dev[d].audit.ceiling = INT64_MAX; /* what was granted before is not known */
        }
        for (int s = 0; s < TF_SHM_MAX_PIDS; s++) {
            w->slot_owner[s] = atomic_load_explicit(&u->pid[s].owner, memory_order_relaxed);
            for (int d = 0; d < TF_SHM_MAX_DEVICES; d++)
                w->slot_launches[s][d] =
                    atomic_load_explicit(&u->pid[s].launches[d], memory_order_relaxed);
        }
        return i;
    }
    return TF_ENOSPC;
}

void tf_engine_remove(struct tf_engine *e, int id)
{
    if (id >= 0 && id < TF_ENGINE_MAX_WORKLOADS) {
        if (e->wl[id].used)
            resume_all(&e->wl[id]);
        e->wl[id].used = false;
    }
}

int tf_engine_stats(const struct tf_engine *e, int id, unsigned dev,
                    struct tf_engine_dev_stats *out)
{
    if (id < 0 || id >= TF_ENGINE_MAX_WORKLOADS || !e->wl[id].used || dev >= TF_SHM_MAX_DEVICES)
        return TF_EINVAL;
    *out = e->wl[id].dev[dev].st;
    return 0;
}

/* One usage sample per device per step, shared by every workload on it. */
static const struct sampled *sample_dev(struct tf_engine *e, const uint8_t uuid[16],
                                        unsigned ordinal, uint64_t now)
{
    static const uint8_t zero[16];
    bool any = memcmp(uuid, zero, 16) == 0;
    for (int i = 0; i < e->nsmp; i++) {
        const struct sampled *s = &e->smp[i];
        if (memcmp(s->uuid, uuid, 16) == 0 && (!any || s->ordinal == ordinal))
            return s;
    }
    if (e->nsmp >= MAX_SAMPLED || !e->o.usage.sample)
        return NULL;
    struct sampled *s = &e->smp[e->nsmp++];
    memcpy(s->uuid, uuid, 16);
    s->ordinal = ordinal;
    s->rc = e->o.usage.sample(e->o.usage.ctx, uuid, ordinal, now, &s->u);
    return s;
}

/* Finds the usage-source PID of the process registered in SLOT. */
static void resolve_host_pid(struct tf_engine *e, struct tf_shm_pid *slot, uint64_t owner,
                             const struct tf_usage_dev *u)
{
    uint64_t ns = atomic_load_explicit(&slot->pidns, memory_order_relaxed);
    uint32_t pid = tf_shm_owner_pid(owner);
    uint64_t st;
    if (ns != 0 && ns == e->o.pidns) {
        if (tf_proc_starttime((pid_t)pid, &st) == 0 && tf_shm_owner_id(pid, st) == owner)
            atomic_store_explicit(&slot->host_pid, pid, memory_order_relaxed);
        return;
    }
    if (!u)
        return;
    for (int i = 0; i < u->nproc; i++) {
        uint32_t cand = u->proc[i].pid, inner;
        if (ns && tf_proc_pidns((pid_t)cand) != ns)
            continue;
        if (tf_proc_nspid((pid_t)cand, &inner) != 0 || inner != pid)
            continue;
        if (tf_proc_starttime((pid_t)cand, &st) != 0 ||
            tf_shm_owner_id(pid, st) != owner) /* same start time in every namespace */
            continue;
        atomic_store_explicit(&slot->host_pid, cand, memory_order_relaxed);
        return;
    }
}

static const struct tf_usage_proc *usage_of(const struct tf_usage_dev *u, uint32_t pid)
{
    for (int i = 0; i < u->nproc; i++)
        if (u->proc[i].pid == pid)
            return &u->proc[i];
    return NULL;
}

/* Audits device D of W's usage part (after this step's consumption was measured, so a
 * repair counts as the engine's own adjustment in the next). */
static void audit(struct workload *w, unsigned d, uint64_t now)
{
    struct wl_dev *wd = &w->dev[d];
    unsigned found = tf_shm_audit(&w->r, d, &wd->audit);
    wd->adjusted -= wd->audit.taken;
    wd->st.forged = found;
    if (found && now - wd->forged_logged_ns >= 10 * TF_BUCKET_NS_PER_S) {
        tf_log(TF_LOG_WARN, SUBSYS,
               "%s: device %u: its usage part was forged (%s%s%s) and is repaired; the limits "
               "part stays the engine's (tampered=%llu)",
               w->name, d, (found & TF_SHM_FORGED_TOKENS) ? "tokens above what was granted" : "",
               found == (TF_SHM_FORGED_TOKENS | TF_SHM_FORGED_VRAM) ? ", " : "",
               (found & TF_SHM_FORGED_VRAM) ? "VRAM reservation below its processes'" : "",
               (unsigned long long)atomic_load(&w->r.lim->dev[d].tampered));
        wd->forged_logged_ns = now;
    }
}

/* The next audit's ceiling: what the level may legitimately reach from here (the level the
 * audit left plus any refund just applied, or a refill up to either capacity). */
static void audit_ceiling(struct wl_dev *wd, int64_t cap_before, int64_t cap_after, int64_t applied)
{
    int64_t c = wd->audit.tokens + (applied > 0 ? applied : 0);
    if (c < cap_before)
        c = cap_before;
    if (c < cap_after)
        c = cap_after;
    wd->audit.ceiling = c;
}

/* The compute cross-check of W after a measured step (see tf_engine_step in engine.h): BUSY is
 * the GPU time measured per slot and device, REPORTED whether each slot counted a launch. */
static void cross_check(struct tf_engine *e, struct workload *w,
                        uint64_t (*busy)[TF_SHM_MAX_DEVICES], const bool *reported, uint64_t now)
{
    struct tf_shm_region *r = &w->r;
    const struct tf_shm_config *c = &w->cfg;
    bool debt = false, limited = false;
    for (unsigned d = 0; d < c->ndev; d++) {
        if (!(atomic_load_explicit(&r->lim->dev[d].flags, memory_order_relaxed) &
              TF_SHM_DEV_COMPUTE_LIMIT))
            continue;
        limited = true;
        debt |= atomic_load_explicit(&r->use->dev[d].bucket.tokens, memory_order_relaxed) < 0;
    }
    for (int s = 0; s < TF_SHM_MAX_PIDS; s++) {
        uint64_t owner = w->slot_owner[s];
        uint32_t host = atomic_load_explicit(&r->use->pid[s].host_pid, memory_order_relaxed);
        uint64_t total = 0;
        for (unsigned d = 0; d < c->ndev; d++)
            total += busy[s][d];
        bool lying = limited && owner && !(owner & TF_SHM_OWNER_RECLAIM) && host &&
                     total >= TF_ENGINE_LIE_MIN_NS && !reported[s];
        /* a paused liar shows neither GPU time nor launches: still the liar */
        bool held = w->paused[s] && total == 0 && !reported[s];
        if (!lying && !held) {
            w->lie[s] = 0;
            resume(w, s);
            continue;
        }
        /* a process that never reported a launch is caught sooner than one that did (whose GPU
         * time may be one long kernel) */
        uint64_t ever = 0;
        for (unsigned d = 0; d < c->ndev; d++)
            ever += w->slot_launches[s][d];
        uint8_t need = ever ? TF_ENGINE_LIE_WINDOWS_LAUNCHED : TF_ENGINE_LIE_WINDOWS;
        if (lying && w->lie[s] < need)
            w->lie[s]++;
        if (w->lie[s] < need)
            continue;
        /* its debt is paid off in time, at the limit's rate */
        for (unsigned d = 0; d < c->ndev; d++)
            tf_bucket_refill(&r->use->dev[d].bucket, &r->lim->dev[d].bucket, now);
        if (lying && w->lie[s] == need) {
            w->lie[s]++; /* (logged and counted once per episode) */
            for (unsigned d = 0; d < c->ndev; d++)
                if (busy[s][d])
                    atomic_fetch_add_explicit(&r->lim->dev[d].underreported, 1,
                                              memory_order_relaxed);
            tf_log(TF_LOG_WARN, SUBSYS,
                   "%s: process %u used %llu us of GPU time in the last window but reported no "
                   "launch for %d windows: under-reporting its compute use; its GPU time is "
                   "charged to the workload's bucket%s",
                   w->name, host, (unsigned long long)(total / 1000), need,
                   e->o.may_pause ? ", and it is paused while the bucket is in debt" : "");
        }
        bool may = e->o.may_pause && e->o.may_pause(e->o.pause_ctx, w->name, host) &&
                   tf_proc_alive_host(&r->use->pid[s], owner, NULL);
        /* (never stopped for good: work it queued may still show as GPU time while it is
         * stopped, so after TF_ENGINE_PAUSE_MAX steps it runs for one) */
        if (w->paused[s] && ++w->held[s] > TF_ENGINE_PAUSE_MAX) {
            resume(w, s);
            w->held[s] = 0;
        } else if (debt && may && !w->paused[s] && w->held[s] == 0) {
            if (kill((pid_t)host, SIGSTOP) == 0)
                w->paused[s] = host;
        } else if (!debt) {
            resume(w, s);
            w->held[s] = 0;
        } else if (!w->paused[s]) {
            w->held[s] = 0;
        }
        for (unsigned d = 0; d < c->ndev; d++) {
            w->dev[d].st.liars++;
            w->dev[d].st.paused += w->paused[s] != 0;
        }
    }
}

static void step_workload(struct tf_engine *e, struct workload *w, uint64_t now)
{
    struct tf_shm_region *r = &w->r;
    struct tf_shm_usage *use = r->use;
    if (!e->o.no_reap) {
        int n = tf_shm_reap(r, e->o.self_owner, now, tf_proc_alive_host, &e->o.pidns);
        if (n > 0)
            tf_log(TF_LOG_INFO, SUBSYS, "%s: reclaimed %d dead process slot(s)", w->name, n);
    }
    struct tf_shm_config cfg;
    if (tf_shm_read_config(r, &cfg) == 0) {
        w->cfg = cfg;
        w->have_cfg = true;
    } else if (!w->have_cfg) {
        return;
    }
    const struct tf_shm_config *c = &w->cfg;

    /* Launches per device since the last step, summed over the workload's processes. */
    uint64_t launches[TF_SHM_MAX_DEVICES] = {0};
    bool reported[TF_SHM_MAX_PIDS] = {false}; /* the slot reported a launch this step */
    for (int s = 0; s < TF_SHM_MAX_PIDS; s++) {
        uint64_t owner = atomic_load_explicit(&use->pid[s].owner, memory_order_acquire);
        bool same = owner == w->slot_owner[s];
        if (!same) {
            resume(w, s); /* another process now, or none */
            w->lie[s] = 0;
        }
        for (unsigned d = 0; d < c->ndev; d++) {
            uint64_t cur = atomic_load_explicit(&use->pid[s].launches[d], memory_order_relaxed);
            uint64_t base = same ? w->slot_launches[s][d] : 0;
            if (owner && !(owner & TF_SHM_OWNER_RECLAIM) && cur >= base)
                launches[d] += cur - base;
            reported[s] |= cur != base;
            w->slot_launches[s][d] = cur;
        }
        w->slot_owner[s] = owner;
    }
    /* GPU time the source measured per slot and device, in this step's measured windows */
    uint64_t slot_busy[TF_SHM_MAX_PIDS][TF_SHM_MAX_DEVICES] = {{0}};
    bool measured = false;

    for (unsigned d = 0; d < c->ndev; d++) {
        struct tf_shm_ldev *dev = &r->lim->dev[d];
        struct tf_shm_udev *ud = &use->dev[d];
        struct wl_dev *wd = &w->dev[d];
        const struct sampled *smp = sample_dev(e, c->dev[d].uuid, d, now);
        const struct tf_usage_dev *u = smp && smp->rc == 0 ? &smp->u : NULL;

        /* Attribute GPU time and memory by PID. */
        uint64_t busy = 0, mem = 0;
        bool sampled = false;
        for (int s = 0; s < TF_SHM_MAX_PIDS; s++) {
            struct tf_shm_pid *slot = &use->pid[s];
            uint64_t owner = atomic_load_explicit(&slot->owner, memory_order_acquire);
            if (!owner || (owner & TF_SHM_OWNER_RECLAIM))
                continue;
            uint32_t host = atomic_load_explicit(&slot->host_pid, memory_order_relaxed);
            if (!host) {
                resolve_host_pid(e, slot, owner, u);
                host = atomic_load_explicit(&slot->host_pid, memory_order_relaxed);
            }
            const struct tf_usage_proc *p = host && u ? usage_of(u, host) : NULL;
            if (p) {
                busy += p->busy_ns;
                mem += p->mem;
                sampled |= p->sampled;
                if (u->have_busy && u->window_ns)
                    slot_busy[s][d] = p->busy_ns;
            }
        }
        measured |= u && u->have_busy && u->window_ns;
        uint64_t thr = atomic_load_explicit(&ud->throttle_count, memory_order_relaxed);
        bool throttled = thr != wd->throttles;
        wd->throttles = thr;
        /* Credit the bucket up to now: takers only refill it when they find it short, and a
         * refill claims all the time since the last one, so without this a bucket that sat
         * full through an idle gap would credit that gap again once spent. */
        if (atomic_load_explicit(&dev->flags, memory_order_relaxed) & TF_SHM_DEV_COMPUTE_LIMIT)
            tf_bucket_refill(&ud->bucket, &dev->bucket, now);
        /* Launches of unmeasured windows count in the next measured one, where their GPU
         * time shows up (the true-up must see both); so do the tokens they consumed. */
        wd->pending += launches[d];
        wd->charged += tf_bucket_consumed(&ud->bucket, &wd->mark, wd->adjusted);
        wd->adjusted = 0;

        memset(&wd->st, 0, sizeof(wd->st));
        int64_t cap_before = atomic_load_explicit(&dev->bucket.capacity, memory_order_relaxed);
        audit(w, d, now);
        if (!u || !u->have_busy || u->window_ns == 0) {
            if (u && u->have_mem)
                atomic_store_explicit(&dev->vram_observed, mem, memory_order_relaxed);
            audit_ceiling(wd, cap_before, cap_before, 0);
            continue; /* no measurement this step: feed-forward stays in force */
        }
        atomic_fetch_add_explicit(&dev->busy_ns, busy, memory_order_relaxed);
        if (u->have_mem)
            atomic_store_explicit(&dev->vram_observed, mem, memory_order_relaxed);
        atomic_store_explicit(&dev->util_bp, u->util_bp, memory_order_relaxed);
        atomic_store_explicit(&dev->sample_ns, now, memory_order_relaxed);
        uint64_t share = busy * 10000u / u->window_ns;
        wd->st.valid = true;
        wd->st.window_ns = u->window_ns;
        wd->st.busy_ns = busy;
        wd->st.launches = wd->pending; /* (reset below, once used) */
        wd->st.charged = wd->charged;
        wd->st.throttled = throttled;
        wd->st.share_bp = share > 40000 ? 40000 : (uint32_t)share;
        atomic_store_explicit(&dev->share_bp, wd->st.share_bp, memory_order_relaxed);
        uint64_t nlaunch = wd->pending;
        int64_t charged = wd->charged;
        wd->pending = 0;
        wd->charged = 0;

        uint32_t flags = atomic_load_explicit(&dev->flags, memory_order_relaxed);
        if (!(flags & TF_SHM_DEV_COMPUTE_LIMIT)) {
            if (wd->ctl_on)
                tf_limit_ctl_init(&wd->ctl, &e->ctl); /* a later limit starts afresh */
            wd->ctl_on = false;
            audit_ceiling(wd, cap_before, cap_before, 0);
            continue;
        }
        wd->ctl_on = true;
        struct tf_limit_in in = {
            .limit_bp = atomic_load_explicit(&dev->compute_limit_bp, memory_order_relaxed),
            .window_ns = u->window_ns,
            .busy_ns = busy,
            .launches = nlaunch,
            .charged = charged,
            .sampled = sampled,
            .scale = atomic_load_explicit(&dev->cost_scale, memory_order_relaxed),
            .throttled = throttled,
            .tokens = atomic_load_explicit(&ud->bucket.tokens, memory_order_relaxed),
        };
        struct tf_limit_out out;
        tf_limit_ctl_step(&wd->ctl, &in, &out);
        if (tf_log_enabled(TF_LOG_TRACE))
            tf_log(TF_LOG_TRACE, SUBSYS,
                   "%s: device %u: window %.1f ms busy %.1f ms launches %llu charged %.1f ms%s "
                   "tokens %.1f ms debit %.1f ms rate %u bp capacity %.1f ms launch cost "
                   "%.3f ms scale %.3f",
                   w->name, d, u->window_ns / 1e6, busy / 1e6, (unsigned long long)nlaunch,
                   charged / 1e6, throttled ? " (throttled)" : "", in.tokens / 1e6, out.debit / 1e6,
                   out.rate_bp, out.capacity / 1e6, out.launch_cost / 1e6,
                   out.cost_scale / 65536.0);
        tf_bucket_set(&dev->bucket, out.rate, out.capacity);
        int64_t applied = 0;
        if (out.debit)
            applied = tf_bucket_apply(&ud->bucket, &dev->bucket, -out.debit, out.refund_ceiling);
        wd->adjusted += applied;
        audit_ceiling(wd, cap_before,
                      atomic_load_explicit(&dev->bucket.capacity, memory_order_relaxed), applied);
        atomic_store_explicit(&dev->launch_cost, out.launch_cost, memory_order_relaxed);
        atomic_store_explicit(&dev->cost_scale, out.cost_scale, memory_order_relaxed);
        atomic_store_explicit(&dev->rate_bp, out.rate_bp, memory_order_relaxed);
        wd->st.rate_bp = out.rate_bp;
        /* (the controller's share: the launches' own measure where the source saw none) */
        wd->st.share_bp = out.share_bp;
        atomic_store_explicit(&dev->share_bp, out.share_bp, memory_order_relaxed);
        wd->st.launch_cost = out.launch_cost;
        wd->st.cost_scale = out.cost_scale;
        wd->st.blind = tf_limit_ctl_blind(&wd->ctl);
        if (wd->st.blind && !wd->blind_logged) {
            tf_log(TF_LOG_WARN, SUBSYS,
                   "%s: device %u: launches but no GPU time attributed for %d windows "
                   "(process not found in the usage source?); enforcing on the launches' own "
                   "measured GPU time",
                   w->name, d, TF_LIMIT_BLIND_WINDOWS);
            wd->blind_logged = true;
        } else if (!wd->st.blind && wd->blind_logged) {
            tf_log(TF_LOG_INFO, SUBSYS, "%s: device %u: GPU time attributed again", w->name, d);
            wd->blind_logged = false;
        }
    }
    if (measured)
        cross_check(e, w, slot_busy, reported, now);
    tf_shm_heartbeat(r, now, e->o.period_ms, (uint32_t)getpid());
}

void tf_engine_step(struct tf_engine *e, uint64_t now_ns)
{
    e->nsmp = 0;
    for (int i = 0; i < TF_ENGINE_MAX_WORKLOADS; i++)
        if (e->wl[i].used)
            step_workload(e, &e->wl[i], now_ns);
}

/* --- engine thread ----------------------------------------------------------------------- */

struct tf_engine_thread {
    struct tf_engine *e;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    bool stop;         /* under mu */
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *engine_thread_main(void *arg)
{
    struct tf_engine_thread *t = arg;
    uint64_t period = (uint64_t)t->e->o.period_ms * 1000000u, next = mono_ns();
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        next += period;
        uint64_t now = mono_ns();
        if (next + period < now)
            next = now; /* far behind (suspended): do not step in a burst */
        struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu, &ts) != ETIMEDOUT)
            ;
        if (t->stop)
            break;
        pthread_mutex_unlock(&t->mu);
        tf_engine_step(t->e, mono_ns());
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

int tf_engine_thread_start(struct tf_engine *e, const char *name, struct tf_engine_thread **out)
{
    struct tf_engine_thread *t = calloc(1, sizeof(*t));
    if (!t)
        return TF_ENOMEM;
    t->e = e;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&t->mu, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&t->th, NULL, engine_thread_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
        free(t);
        return TF_EIO;
    }
    if (name)
        pthread_setname_np(t->th, name);
    *out = t;
    return 0;
}

void tf_engine_thread_stop(struct tf_engine_thread *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    t->stop = true;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->th, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}
