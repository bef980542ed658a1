/* SPDX-License-Identifier: Apache-2.0
 *
 * Soft isolation: limit regions and the limit engine (see soft.h).
 */
#include "hypervisor/soft.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "hypervisor/paths.h"
#include "hypervisor/proc.h"
#include "limits/engine.h"
#include "limits/nvml.h"
#include "limits/proc.h"
#include "limits/shm.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct entry {
    char name[TF_HV_SOFT_KEY_MAX];
    struct tf_shm_map map;
    int id; /* engine id */
};

struct tf_hv_soft {
    pthread_mutex_t mu;
    struct tf_engine *engine;
    struct tf_nvml *nvml; /* NULL: no usage source */
    struct entry *e;
    int n, cap;
    uint64_t pidns; /* ours, for judging PID slots */
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int tf_hv_soft_new(const char *nvml_lib, bool (*may_pause)(void *, const char *, uint32_t),
                   void *pause_ctx, struct tf_hv_soft **out, char *err, size_t errlen)
{
    *out = NULL;
    struct tf_hv_soft *s = calloc(1, sizeof(*s));
    if (!s)
        return TF_ENOMEM;
    pthread_mutex_init(&s->mu, NULL);
    char nerr[256];
    if (tf_nvml_open(nvml_lib && *nvml_lib ? nvml_lib : NULL, NULL, &s->nvml, nerr, sizeof(nerr)))
        tf_log(TF_LOG_WARN, "soft", "no usage source (%s): limits are feed-forward only", nerr);
    struct tf_engine_opts o;
    memset(&o, 0, sizeof(o));
    o.period_ms = TF_HV_ENGINE_PERIOD_MS;
    if (s->nvml) {
        o.usage.sample = tf_nvml_sample;
        o.usage.ctx = s->nvml;
    }
    o.self_owner = tf_proc_self_owner();
    o.pidns = tf_proc_pidns(0);
    o.may_pause = may_pause;
    o.pause_ctx = pause_ctx;
    s->pidns = o.pidns;
    s->engine = tf_engine_new(&o);
    if (!s->engine) {
        tf_hv_soft_destroy(s);
        tf_errf(err, errlen, "cannot create the limit engine");
        return TF_ENOMEM;
    }
    *out = s;
    return 0;
}

void tf_hv_soft_destroy(struct tf_hv_soft *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        tf_shm_unmap(&s->e[i].map);
    free(s->e);
    tf_engine_destroy(s->engine);
    tf_nvml_close(s->nvml);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static bool try_lib(char *out, size_t len, const char *dir, const char *suffix)
{
    int n = snprintf(out, len, "%s%s", dir, suffix);
    return n > 0 && (size_t)n < len && access(out, R_OK) == 0;
}

int tf_hv_soft_find_limiter(const struct tf_hv *hv, char *lib, char *err, size_t errlen)
{
    char p[512];
    const char *e = getenv("TF_LIMITER_LIB");
    const char *dir = hv->cfg.lib_dir;
    bool ok = (e && *e && try_lib(p, sizeof(p), e, "")) ||
              try_lib(p, sizeof(p), dir, "/libtf_limiter.so") ||
              try_lib(p, sizeof(p), dir, "/../lib/tensor-fusion/libtf_limiter.so") ||
              try_lib(p, sizeof(p), dir, "/../limiter/libtf_limiter.so");
    if (!ok || !hv->soft) {
        tf_errf(err, errlen,
                "isolation soft needs %s (looked next to the hypervisor in %s and in the build "
                "tree)",
                ok ? "the limit engine, which did not start" : "libtf_limiter.so", dir);
        return TF_ENOTSUP;
    }
    if (lib)
        tf_strlcpy(lib, p, 512);
    return 0;
}

static struct entry *find(struct tf_hv_soft *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->e[i].name, name))
            return &s->e[i];
    return NULL;
}

bool tf_hv_soft_region_path(const char *root, const char *ns, const char *name, char *dir,
                            size_t dlen, char *path, size_t plen)
{
    int n = snprintf(dir, dlen, "%s/%s/%s", root, ns, name);
    int m = snprintf(path, plen, "%s/" TF_SHM_LIMITS_FILE, dir);
    return n > 0 && (size_t)n < dlen && m > 0 && (size_t)m < plen;
}

void tf_hv_soft_remove_region(const char *root, const char *ns, const char *name)
{
    char dir[700], path[800], nsdir[700];
    if (!tf_hv_soft_region_path(root, ns, name, dir, sizeof(dir), path, sizeof(path)))
        return;
    unlink(path);
    snprintf(path, sizeof(path), "%s/" TF_SHM_USAGE_DIR "/" TF_SHM_LIMITS_FILE, dir);
    unlink(path);
    snprintf(path, sizeof(path), "%s/" TF_SHM_USAGE_DIR, dir);
    rmdir(path); /* only when empty */
    rmdir(dir);  /* only when empty */
    int n = snprintf(nsdir, sizeof(nsdir), "%s/%s", root, ns);
    if (n > 0 && (size_t)n < sizeof(nsdir))
        rmdir(nsdir); /* only when empty */
}

/* DIR and PATH of W's region; false when they do not fit. */
static bool region_path(const struct tf_hv *hv, const struct tf_hv_workload *w, char *dir,
                        size_t dlen, char *path, size_t plen)
{
    char root[600];
    int n = snprintf(root, sizeof(root), "%s/shm", hv->cfg.state_dir);
    return n > 0 && (size_t)n < sizeof(root) &&
           tf_hv_soft_region_path(root, w->req.ns, w->req.name, dir, dlen, path, plen);
}

static int device_mem(struct tf_hv *hv, const char *uuid, uint64_t *mem)
{
    struct tf_hv_device devs[TF_HV_MAX_DEVICES];
    int n = 0;
    char err[128];
    *mem = 0;
    if (tf_hv_state_devices(hv->state, devs, TF_HV_MAX_DEVICES, &n, err, sizeof(err)))
        return TF_EIO;
    for (int i = 0; i < n; i++)
        if (!strcmp(devs[i].uuid, uuid))
            *mem = (uint64_t)devs[i].vram_bytes;
    return 0;
}

int tf_hv_soft_attach(struct tf_hv_soft *s, const char *key, const char *path,
                      const struct tf_shm_config *cfg, const struct tf_shm_perms *perms,
                      bool reopen, bool *reopened, char *err, size_t errlen)
{
    char dir[800];
    if (reopened)
        *reopened = false;
    if (!s) {
        tf_errf(err, errlen, "the limit engine did not start");
        return TF_ENOTSUP;
    }
    if (strlen(key) >= TF_HV_SOFT_KEY_MAX || !tf_strlcpy(dir, path, sizeof(dir))) {
        tf_errf(err, errlen, "limit region name or path too long");
        return TF_ERANGE;
    }
    pthread_mutex_lock(&s->mu);
    bool taken = find(s, key) != NULL;
    pthread_mutex_unlock(&s->mu);
    if (taken) {
        tf_errf(err, errlen, "workload %s already has a region", key);
        return TF_EEXIST;
    }
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    struct tf_shm_map map = {0};
    int rc;
    if (slash && (rc = tf_hv_mkdirs(dir, 0755, err, errlen)))
        return rc;
    if (slash && chmod(dir, 0755) != 0) /* (whoever made it: the workload reads through it) */
        tf_log(TF_LOG_WARN, "soft", "workload %s: %s: %s", key, dir, strerror(errno));
    rc = TF_ENOENT;
    struct stat st;
    if (reopen) {
        char oerr[512], rerr[512];
        rc = tf_shm_open(path, TF_SHM_ENGINE, &map, oerr, sizeof(oerr));
        if (rc && lstat(path, &st) == 0) {
            /* Corrupt or half there (an app may have rewritten its usage part): its processes
             * still map these files, so they are repaired in place from the recorded limits,
             * the reservations kept; never replaced by an empty region they would not see. */
            rc = tf_shm_repair(path, cfg, perms, &map, rerr, sizeof(rerr));
            tf_log(TF_LOG_WARN, "soft", "workload %s: region %s: %s; %s%s", key, path, oerr,
                   rc ? "cannot repair it, recreating it: "
                      : "repaired in place from the recorded limits",
                   rc ? rerr : "");
        }
        if (!rc && reopened)
            *reopened = true;
    }
    if (rc) {
        (void)unlink(path); /* a stale region of an earlier workload of that name */
        if ((rc = tf_shm_create(path, cfg, perms, &map, err, errlen)))
            return rc;
    } else if (tf_shm_set_perms(path, perms, err, errlen) != 0) {
        /* (an adopted region, perhaps of an earlier version of these rules) */
        tf_log(TF_LOG_WARN, "soft", "workload %s: %s", key, err);
    }
    pthread_mutex_lock(&s->mu);
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        struct entry *e = realloc(s->e, (size_t)cap * sizeof(*e));
        if (!e) {
            pthread_mutex_unlock(&s->mu);
            tf_shm_unmap(&map);
            return TF_ENOMEM;
        }
        s->e = e;
        s->cap = cap;
    }
    int id = tf_engine_add(s->engine, &map.r, key);
    if (id < 0) {
        pthread_mutex_unlock(&s->mu);
        tf_shm_unmap(&map);
        tf_errf(err, errlen, "the limit engine is full");
        return id;
    }
    struct entry *e = &s->e[s->n++];
    tf_strlcpy(e->name, key, sizeof(e->name));
    e->map = map;
    e->id = id;
    tf_engine_step(s->engine, mono_ns()); /* heartbeat before the app starts */
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* True when A and B configure the same devices with the same limits. */
static bool same_config(const struct tf_shm_config *a, const struct tf_shm_config *b)
{
    if (a->ndev != b->ndev || a->flags != b->flags || strcmp(a->name, b->name) != 0)
        return false;
    for (uint32_t i = 0; i < a->ndev; i++) {
        const struct tf_shm_dev_config *x = &a->dev[i], *y = &b->dev[i];
        if (memcmp(x->uuid, y->uuid, sizeof(x->uuid)) != 0 || x->flags != y->flags ||
            x->compute_limit_bp != y->compute_limit_bp || x->vram_limit != y->vram_limit ||
            x->mem_total != y->mem_total)
            return false;
    }
    return true;
}

int tf_hv_soft_configure(struct tf_hv_soft *s, const char *key, const struct tf_shm_config *cfg,
                         bool *changed)
{
    int rc = TF_ENOENT;
    *changed = false;
    if (!s)
        return rc;
    pthread_mutex_lock(&s->mu);
    struct entry *e = find(s, key);
    if (e) {
        struct tf_shm_config cur;
        rc = tf_shm_read_config(&e->map.r, &cur);
        if (rc == 0 && !same_config(&cur, cfg)) {
            rc = tf_shm_write_config(&e->map.r, cfg);
            *changed = rc == 0;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void tf_hv_soft_detach(struct tf_hv_soft *s, const char *key)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    struct entry *e = find(s, key);
    if (e) {
        tf_engine_remove(s->engine, e->id);
        tf_shm_unmap(&e->map);
        *e = s->e[--s->n];
    }
    pthread_mutex_unlock(&s->mu);
}

int tf_hv_soft_start(struct tf_hv *hv, const struct tf_hv_workload *w, bool reopen,
                     json_object *env, char *err, size_t errlen)
{
    struct tf_hv_soft *s = hv->soft;
    char lib[512], dir[700], path[800];
    int rc = tf_hv_soft_find_limiter(hv, lib, err, errlen);
    if (rc)
        return rc;
    if (!region_path(hv, w, dir, sizeof(dir), path, sizeof(path))) {
        tf_errf(err, errlen, "state directory path too long for a limit region");
        return TF_ERANGE;
    }
    struct tf_shm_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    tf_strlcpy(cfg.name, w->req.name, sizeof(cfg.name));
    cfg.ndev = (uint32_t)w->nalloc;
    for (int i = 0; i < w->nalloc; i++) {
        struct tf_shm_dev_config *d = &cfg.dev[i];
        if (tf_shm_uuid_parse(w->alloc[i].uuid, d->uuid) != 0) {
            tf_errf(err, errlen, "GPU uuid %s cannot go into a limit region", w->alloc[i].uuid);
            return TF_EINVAL;
        }
        d->flags = TF_SHM_DEV_PRESENT | TF_SHM_DEV_COMPUTE_LIMIT | TF_SHM_DEV_VRAM_LIMIT;
        d->compute_limit_bp = (uint32_t)w->alloc[i].compute_limit_bp;
        d->vram_limit = (uint64_t)w->alloc[i].vram_limit;
        device_mem(hv, w->alloc[i].uuid, &d->mem_total);
    }
    /* The limits part is the hypervisor's (mode 0644: the app reads it, cannot write it); the
     * usage part belongs to the user of the process that asked for the workload (tfctl run),
     * mode 0600: that user's processes, and no other user's, may map it. */
    int uid = w->req.pid > 0 && geteuid() == 0 ? tf_hv_proc_uid(w->req.pid) : -1;
    struct tf_shm_perms perms = {.lmode = 0644, .umode = 0600, .uid = uid, .gid = -1};
    if ((rc = tf_hv_soft_attach(s, w->req.name, path, &cfg, &perms, reopen, NULL, err, errlen)))
        return rc;
    if (!reopen && (rc = tf_hv_state_set_runtime(hv->state, w->req.name, path, w->worker_pid,
                                                 w->worker_addr, err, errlen))) {
        tf_hv_soft_stop(hv, w);
        return rc;
    }
    if (env) {
        json_object_object_add(env, "LD_PRELOAD", json_object_new_string(lib));
        json_object_object_add(env, "TF_SHM_PATH", json_object_new_string(path));
    }
    tf_log(TF_LOG_INFO, "soft", "workload %s: region %s (%d GPU(s))%s", w->req.name, path,
           w->nalloc, reopen ? " reopened" : "");
    return 0;
}

void tf_hv_soft_stop(struct tf_hv *hv, const struct tf_hv_workload *w)
{
    char root[600];
    tf_hv_soft_detach(hv->soft, w->req.name);
    int n = snprintf(root, sizeof(root), "%s/shm", hv->cfg.state_dir);
    if (n > 0 && (size_t)n < sizeof(root))
        tf_hv_soft_remove_region(root, w->req.ns, w->req.name);
}

void tf_hv_soft_step(struct tf_hv *hv)
{
    struct tf_hv_soft *s = hv->soft;
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    if (s->n)
        tf_engine_step(s->engine, mono_ns());
    pthread_mutex_unlock(&s->mu);
}

bool tf_hv_soft_usage(struct tf_hv *hv, const char *name, int k, int32_t *share_bp,
                      int64_t *vram_used)
{
    struct tf_hv_soft *s = hv->soft;
    if (!s || k < 0 || k >= TF_SHM_MAX_DEVICES)
        return false;
    pthread_mutex_lock(&s->mu);
    struct entry *e = find(s, name);
    if (e) {
        *share_bp =
            (int32_t)atomic_load_explicit(&e->map.r.lim->dev[k].share_bp, memory_order_relaxed);
        int64_t v = atomic_load_explicit(&e->map.r.use->dev[k].vram_used, memory_order_relaxed);
        *vram_used = v > 0 ? v : 0;
    }
    pthread_mutex_unlock(&s->mu);
    return e != NULL;
}

int64_t tf_hv_soft_throttles(struct tf_hv *hv, const char *name, int k)
{
    struct tf_hv_soft *s = hv->soft;
    if (!s || k < 0 || k >= TF_SHM_MAX_DEVICES)
        return -1;
    int64_t n = -1;
    pthread_mutex_lock(&s->mu);
    struct entry *e = find(s, name);
    if (e)
        n = (int64_t)atomic_load_explicit(&e->map.r.use->dev[k].throttle_count,
                                          memory_order_relaxed);
    pthread_mutex_unlock(&s->mu);
    return n;
}

bool tf_hv_soft_registered(struct tf_hv *hv, const char *name, int host_pid)
{
    struct tf_hv_soft *s = hv->soft;
    bool found = false;
    if (!s || host_pid <= 0)
        return false;
    pthread_mutex_lock(&s->mu);
    struct entry *e = find(s, name);
    for (int i = 0; e && i < TF_SHM_MAX_PIDS && !found; i++) {
        struct tf_shm_pid *p = &e->map.r.use->pid[i];
        uint64_t owner = atomic_load_explicit(&p->owner, memory_order_relaxed);
        found = owner && !(owner & TF_SHM_OWNER_RECLAIM) &&
                atomic_load_explicit(&p->host_pid, memory_order_relaxed) == (uint32_t)host_pid;
    }
    pthread_mutex_unlock(&s->mu);
    return found;
}

bool tf_hv_soft_has_processes(struct tf_hv *hv, const char *name)
{
    struct tf_hv_soft *s = hv->soft;
    bool any = false;
    if (!s)
        return false;
    pthread_mutex_lock(&s->mu);
    struct entry *e = find(s, name);
    for (int i = 0; e && i < TF_SHM_MAX_PIDS && !any; i++) {
        struct tf_shm_pid *p = &e->map.r.use->pid[i];
        uint64_t owner = atomic_load_explicit(&p->owner, memory_order_relaxed);
        any = owner != 0 && tf_proc_alive_host(p, owner, &s->pidns);
    }
    pthread_mutex_unlock(&s->mu);
    return any;
}
