/* SPDX-License-Identifier: Apache-2.0
 *
 * libtf_limiter.so state: lazy initialisation (real driver, environment, limit region or
 * standalone limits), the device map, the PID slot, heartbeat watching, exit and fork.
 */
#include "limiter/limiter.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "core/quantity.h"
#include "limits/proc.h"
#include "limits/shm.h"
#include "limits/throttle.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct tf__lim tf__L = {.slot = -2};
__thread int tf__depth __attribute__((tls_model("initial-exec")));

static long gettid_(void)
{
    return (long)syscall(SYS_gettid);
}

uint64_t tf__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void nap_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

void *tf__real_cuda_sym(const char *name)
{
    void *h = tf__L.cuda;
    if (!h) {
        const char *lib = getenv("TF_LIMITER_LIBCUDA");
        h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (!h)
            return NULL;
        void *p = tf__real_dlsym(h, name);
        dlclose(h);
        return p;
    }
    return tf__real_dlsym(h, name);
}

/* --- configuration ----------------------------------------------------------------------- */

static void read_env_limits(void)
{
    char err[256];
    const char *v = getenv("TF_VRAM_LIMIT");
    if (v && *v) {
        int64_t b = -1;
        if (tf_quantity_bytes(v, &b, "TF_VRAM_LIMIT", err, sizeof(err)) == 0 && b > 0) {
            tf__L.env_vram = (uint64_t)b;
            tf__L.env_has_vram = true;
        } else {
            tf_log(TF_LOG_ERROR, TF_LIM_SUBSYS, "%s; ignoring it",
                   b == 0 ? "TF_VRAM_LIMIT: \"0\" leaves no memory at all" : err);
        }
    }
    v = getenv("TF_COMPUTE_PERCENT");
    if (v && *v) {
        int32_t bp = -1;
        if (tf_percent_parse(v, &bp, "TF_COMPUTE_PERCENT", err, sizeof(err)) == 0 && bp > 0) {
            tf__L.env_bp = (uint32_t)bp;
            tf__L.env_has_compute = bp < 10000;
        } else {
            tf_log(TF_LOG_ERROR, TF_LIM_SUBSYS, "%s; ignoring it",
                   bp == 0 ? "TF_COMPUTE_PERCENT: \"0\" would block every kernel" : err);
        }
    }
}

/* TF_LIMITER_WAIT_MS: how long a missing region is waited for (the hypervisor creates it once
 * the pod is bound; in Kubernetes the app may start first). 0 (default) or invalid: not at all. */
static long wait_ms_env(void)
{
    const char *v = getenv("TF_LIMITER_WAIT_MS");
    if (!v || !*v)
        return 0;
    char *end;
    long ms = strtol(v, &end, 10);
    if (*end || ms < 0 || ms > 3600000) {
        tf_log(TF_LOG_ERROR, TF_LIM_SUBSYS,
               "TF_LIMITER_WAIT_MS: \"%s\" is not 0..3600000 milliseconds; not waiting", v);
        return 0;
    }
    return ms;
}

/* Opens the region at PATH, waiting up to TF_LIMITER_WAIT_MS for it to appear. */
static int open_region(const char *path, struct tf_shm_map *m, char *err, size_t errlen)
{
    int rc = tf_shm_open(path, TF_SHM_APP, m, err, errlen);
    long wait_ms = rc == TF_ENOENT ? wait_ms_env() : 0;
    if (wait_ms <= 0)
        return rc;
    tf_log(TF_LOG_INFO, TF_LIM_SUBSYS, "waiting up to %ld ms for the limit region %s", wait_ms,
           path);
    uint64_t end = tf__now_ns() + (uint64_t)wait_ms * 1000000u;
    while (rc == TF_ENOENT && tf__now_ns() < end) {
        struct timespec nap = {0, 50 * 1000 * 1000};
        nanosleep(&nap, NULL);
        rc = tf_shm_open(path, TF_SHM_APP, m, err, errlen);
    }
    return rc;
}

/* Makes the region's devices the process's CUDA devices, in the region's order, through
 * CUDA_VISIBLE_DEVICES (by UUID), when nothing set it: the driver then numbers them 0..n-1
 * itself. The CUDA runtime needs that -- it rejects a device handle at or above the count it
 * was given (cudaErrorInvalidDevice), so the ordinal remapping of the hooks below cannot
 * serve it. Runs before the real cuInit, which reads the variable. A value set by the user
 * (or by local mode, to the same devices) is left alone; the remapping then still hides
 * devices outside the region from driver-API programs. */
static void restrict_visible(void)
{
    const char *cur = getenv("CUDA_VISIBLE_DEVICES");
    if (cur || !tf__L.r)
        return;
    struct tf_shm_config c;
    if (tf_shm_read_config(tf__L.r, &c) != 0 || c.ndev == 0)
        return;
    static const uint8_t zero[16];
    char list[TF_SHM_MAX_DEVICES * 42 + 1] = "";
    size_t used = 0;
    for (uint32_t k = 0; k < c.ndev; k++) {
        if (memcmp(c.dev[k].uuid, zero, 16) == 0)
            return; /* devices named by index: the remapping handles them */
        char u[48];
        tf_shm_uuid_format(c.dev[k].uuid, u, sizeof(u));
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", k ? "," : "", u);
        if (used >= sizeof(list))
            return;
    }
    if (setenv("CUDA_VISIBLE_DEVICES", list, 0) == 0)
        tf_log(TF_LOG_DEBUG, TF_LIM_SUBSYS, "CUDA_VISIBLE_DEVICES=%s (the region's devices)", list);
}

static void configure(void)
{
    read_env_limits();
    bool env = tf__L.env_has_vram || tf__L.env_has_compute;
    bool strict = false;
    const char *s = getenv("TF_LIMITER_STRICT");
    if (s && *s)
        (void)tf_parse_bool(s, &strict);
    const char *path = getenv("TF_SHM_PATH");
    if (path && *path) {
        snprintf(tf__L.region_path, sizeof(tf__L.region_path), "%s", path);
        struct tf_shm_map m;
        char err[512];
        int rc = open_region(path, &m, err, sizeof(err));
        if (rc == 0) {
            tf__L.region = m.r; /* (mapped for the life of the process) */
            tf__L.r = &tf__L.region;
            restrict_visible();
            if (env)
                tf_log(TF_LOG_INFO, TF_LIM_SUBSYS,
                       "limits come from %s; TF_VRAM_LIMIT/TF_COMPUTE_PERCENT are ignored", path);
            return;
        }
        if (env) {
            tf_log(TF_LOG_ERROR, TF_LIM_SUBSYS,
                   "%s; using TF_VRAM_LIMIT/TF_COMPUTE_PERCENT for this process alone", err);
            tf__L.standalone = true;
        } else if (strict) {
            tf_log(TF_LOG_ERROR, TF_LIM_SUBSYS,
                   "%s; TF_LIMITER_STRICT is set, so CUDA is refused (cuInit fails)", err);
            tf__L.strict_fail = true;
        } else {
            tf_log(TF_LOG_ERROR, TF_LIM_SUBSYS,
                   "%s; no limits known: this process runs unlimited (set "
                   "TF_LIMITER_STRICT=1 to refuse CUDA instead)",
                   err);
        }
        return;
    }
    if (env) {
        tf__L.standalone = true;
        return;
    }
    if (strict) {
        tf_log(TF_LOG_ERROR, TF_LIM_SUBSYS,
               "no TF_SHM_PATH and no TF_VRAM_LIMIT/TF_COMPUTE_PERCENT; TF_LIMITER_STRICT is "
               "set, so CUDA is refused");
        tf__L.strict_fail = true;
        return;
    }
    tf_log(TF_LOG_DEBUG, TF_LIM_SUBSYS, "no limits configured: pass-through");
}

static bool resolve_real(void)
{
    const char *lib = getenv("TF_LIMITER_LIBCUDA");
    if (!lib || !*lib)
        lib = "libcuda.so.1";
    tf__L.cuda = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!tf__L.cuda) {
        const char *why = dlerror();
        tf_log(TF_LOG_ERROR, TF_LIM_SUBSYS, "cannot load the real CUDA driver %s: %s", lib,
               why ? why : "?");
        return false;
    }
    for (size_t i = 0; i < tf__nsyms; i++) {
        if (tf__syms[i].nvml)
            continue;
        void *p = tf__real_dlsym(tf__L.cuda, tf__syms[i].name);
        /* A driver whose cuGetProcAddress table was bound to our exports (the interposed
         * symbol) must not make us call ourselves. */
        if (p && p == tf__syms[i].hook)
            p = NULL;
        *(void **)((char *)&tf__L.real + tf__syms[i].real_off) = p;
    }
    return true;
}

bool tf__init(void)
{
    int ph = atomic_load_explicit(&tf__L.phase, memory_order_acquire);
    if (ph == TF_LIM_PHASE_READY)
        return true;
    long me = gettid_();
    int expect = TF_LIM_PHASE_NONE;
    if (atomic_compare_exchange_strong_explicit(&tf__L.phase, &expect, TF_LIM_PHASE_INIT,
                                                memory_order_acq_rel, memory_order_acquire)) {
        atomic_store_explicit(&tf__L.init_tid, me, memory_order_relaxed);
        resolve_real();
        configure();
        atomic_store_explicit(&tf__L.phase, TF_LIM_PHASE_READY, memory_order_release);
        return true;
    }
    if (atomic_load_explicit(&tf__L.init_tid, memory_order_relaxed) == me)
        return false; /* recursion from inside our own initialisation */
    while (atomic_load_explicit(&tf__L.phase, memory_order_acquire) != TF_LIM_PHASE_READY)
        nap_us(100);
    return true;
}

/* --- devices ---------------------------------------------------------------------------- */

static int slot_claim(void)
{
    struct tf_shm_region *r = tf__L.r;
    uint64_t owner = tf_proc_self_owner();
    uint64_t ns = tf_proc_pidns(0);
    tf__L.owner = owner;
    /* Peers killed with SIGKILL may hold slots and memory: reclaim what we can judge (the
     * engine does the same every step, also across PID namespaces). */
    if (!tf__L.standalone)
        tf_shm_reap(r, owner, tf__now_ns(), tf_proc_alive, &ns);
    int s = tf_shm_pid_claim(r, owner, ns);
    if (s < 0)
        tf_log(TF_LOG_WARN, TF_LIM_SUBSYS,
               "all %d PID slots of the limit region are taken: this process is limited but "
               "its memory cannot be reclaimed if it is killed",
               TF_SHM_MAX_PIDS);
    return s < 0 ? -1 : s;
}

int tf__slot(void)
{
    int s = atomic_load_explicit(&tf__L.slot, memory_order_acquire);
    if (s != -2 || !tf__L.r)
        return s < 0 ? -1 : s;
    int got = slot_claim();
    int expect = -2;
    if (!atomic_compare_exchange_strong_explicit(&tf__L.slot, &expect, got, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        if (got >= 0)
            tf_shm_pid_release(tf__L.r, got, tf__L.owner); /* another thread won */
        return expect < 0 ? -1 : expect;
    }
    return got;
}

static struct tf_shm_region *standalone_region(int n, const CUuuid *uuids, const size_t *mem)
{
    struct tf_shm_config c;
    memset(&c, 0, sizeof(c));
    snprintf(c.name, sizeof(c.name), "standalone/%d", (int)getpid());
    c.flags = TF_SHM_F_STANDALONE;
    c.ndev = (uint32_t)(n > TF_SHM_MAX_DEVICES ? TF_SHM_MAX_DEVICES : n);
    for (uint32_t i = 0; i < c.ndev; i++) {
        memcpy(c.dev[i].uuid, uuids[i].bytes, 16);
        c.dev[i].flags = TF_SHM_DEV_PRESENT;
        if (tf__L.env_has_vram) {
            c.dev[i].flags |= TF_SHM_DEV_VRAM_LIMIT;
            c.dev[i].vram_limit = tf__L.env_vram;
        }
        if (tf__L.env_has_compute) {
            c.dev[i].flags |= TF_SHM_DEV_COMPUTE_LIMIT;
            c.dev[i].compute_limit_bp = tf__L.env_bp;
        }
        c.dev[i].mem_total = mem[i];
    }
    struct tf_shm_map m; /* (for the life of the process) */
    if (tf_shm_anon(&c, &m) != 0) {
        tf_log(TF_LOG_ERROR, TF_LIM_SUBSYS, "standalone limits: mmap failed: %s", strerror(errno));
        return NULL;
    }
    tf__L.region = m.r;
    return &tf__L.region;
}

static void build_map(int n, const CUuuid *uuids, const size_t *mem)
{
    struct tf__lim *L = &tf__L;
    for (int i = 0; i < TF_LIM_MAX_REAL; i++)
        L->idx_of[i] = -1;
    L->nvis = 0;
    if (L->standalone && !L->r)
        L->r = standalone_region(n, uuids, mem);
    if (!L->r) {
        for (int i = 0; i < n && L->nvis < TF_SHM_MAX_DEVICES; i++) {
            L->vis[L->nvis] = i;
            L->vis_idx[L->nvis++] = -1;
        }
        return;
    }
    struct tf_shm_config c;
    if (tf_shm_read_config(L->r, &c) != 0) {
        /* A writer died mid-update: use the fields one by one (each is atomic). */
        memset(&c, 0, sizeof(c));
        c.ndev = atomic_load(&L->r->lim->hdr.ndev);
        if (c.ndev > TF_SHM_MAX_DEVICES)
            c.ndev = TF_SHM_MAX_DEVICES;
        for (uint32_t k = 0; k < c.ndev; k++)
            tf_shm_uuid_load(L->r, k, c.dev[k].uuid);
    }
    static const uint8_t zero[16];
    L->filter = !L->standalone && c.ndev > 0;
    if (c.ndev == 0)
        tf_log(TF_LOG_WARN, TF_LIM_SUBSYS, "%s lists no devices: nothing is limited",
               L->region_path);
    for (uint32_t k = 0; k < c.ndev; k++) {
        int found = -1;
        for (int i = 0; i < n; i++) {
            bool match = memcmp(c.dev[k].uuid, zero, 16) == 0
                             ? i == (int)k
                             : memcmp(c.dev[k].uuid, uuids[i].bytes, 16) == 0;
            if (match) {
                found = i;
                break;
            }
        }
        if (found < 0) {
            char u[48];
            tf_shm_uuid_format(c.dev[k].uuid, u, sizeof(u));
            tf_log(TF_LOG_ERROR, TF_LIM_SUBSYS,
                   "device %u of the limit region (%s) is not visible to this process", k, u);
            continue;
        }
        if (found < TF_LIM_MAX_REAL && L->idx_of[found] < 0) {
            L->idx_of[found] = (int8_t)k;
            L->vis[L->nvis] = found;
            L->vis_idx[L->nvis++] = (int)k;
        }
    }
    if (!L->filter) {
        /* Standalone: every device stays visible, limited or not. */
        L->nvis = 0;
        for (int i = 0; i < n && L->nvis < TF_SHM_MAX_DEVICES; i++) {
            L->vis[L->nvis] = i;
            L->vis_idx[L->nvis++] = i < TF_LIM_MAX_REAL ? L->idx_of[i] : -1;
        }
    }
}

bool tf__devmap(void)
{
    struct tf__lim *L = &tf__L;
    if (atomic_load_explicit(&L->devmap, memory_order_acquire) == TF_LIM_MAP_READY)
        return true;
    if (!tf__ready() || !L->real.cuDeviceGetCount || !L->real.cuDeviceGet)
        return false;
    int expect = TF_LIM_MAP_NONE;
    if (!atomic_compare_exchange_strong_explicit(&L->devmap, &expect, TF_LIM_MAP_BUILDING,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        /* Another thread builds it; wait (bounded by its few driver calls). */
        for (int i = 0; i < 20000; i++) {
            int st = atomic_load_explicit(&L->devmap, memory_order_acquire);
            if (st == TF_LIM_MAP_READY)
                return true;
            if (st == TF_LIM_MAP_NONE)
                return false;
            nap_us(100);
        }
        return false;
    }
    int n = 0;
    tf__depth++;
    CUresult rc = L->real.cuDeviceGetCount(&n);
    if (rc != CUDA_SUCCESS) {
        tf__depth--;
        atomic_store_explicit(&L->devmap, TF_LIM_MAP_NONE, memory_order_release);
        return false; /* not initialised yet */
    }
    if (n > TF_LIM_MAX_REAL)
        n = TF_LIM_MAX_REAL;
    CUuuid uuids[TF_LIM_MAX_REAL];
    size_t mem[TF_LIM_MAX_REAL];
    memset(uuids, 0, sizeof(uuids));
    memset(mem, 0, sizeof(mem));
    for (int i = 0; i < n; i++) {
        CUdevice d;
        if (L->real.cuDeviceGet(&d, i) != CUDA_SUCCESS)
            continue;
        if (L->real.cuDeviceGetUuid_v2)
            L->real.cuDeviceGetUuid_v2(&uuids[i], d);
        if (L->real.cuDeviceTotalMem_v2)
            L->real.cuDeviceTotalMem_v2(&mem[i], d);
    }
    tf__depth--;
    build_map(n, uuids, mem);
    atomic_store_explicit(&L->devmap, TF_LIM_MAP_READY, memory_order_release);
    if (L->r)
        (void)tf__slot();
    if (L->standalone && L->r)
        tf__standalone_start();
    return true;
}

int tf__idx_of_dev(CUdevice dev)
{
    if (!tf__L.r || dev < 0 || dev >= TF_LIM_MAX_REAL || !tf__devmap())
        return -1;
    return tf__L.idx_of[dev];
}

bool tf__visible(CUdevice dev)
{
    if (!tf__L.filter || !tf__devmap())
        return true;
    return dev >= 0 && dev < TF_LIM_MAX_REAL && tf__L.idx_of[dev] >= 0;
}

int tf__cur_idx(void)
{
    struct tf__lim *L = &tf__L;
    if (!L->r || !tf__devmap())
        return -1;
    if (L->nvis == 1)
        return L->vis_idx[0];
    CUdevice d;
    if (!L->real.cuCtxGetDevice)
        return -1;
    tf__depth++;
    CUresult rc = L->real.cuCtxGetDevice(&d);
    tf__depth--;
    return rc == CUDA_SUCCESS ? tf__idx_of_dev(d) : -1;
}

void tf__check_heartbeat(uint64_t now_ns)
{
    struct tf__lim *L = &tf__L;
    if (!L->r || L->standalone)
        return;
    tf_throttle_watch_heartbeat(L->r, &L->stale_state, now_ns, TF_LIM_SUBSYS, L->region_path);
}

/* --- exit and fork ----------------------------------------------------------------------- */

__attribute__((destructor)) static void limiter_fini(void)
{
    int s = atomic_load(&tf__L.slot);
    if (tf__L.r && s >= 0)
        tf_shm_pid_release(tf__L.r, s, tf__L.owner);
}

static void after_fork_child(void)
{
    /* The child is a new process: its own PID slot (claimed on first use), and none of
     * the parent's allocations. */
    atomic_store(&tf__L.slot, -2);
    tf__launch_after_fork();
    tf_ptrtab_reset(&tf__L.mem);
    tf_ptrtab_reset(&tf__L.arr);
    tf_ptrtab_reset(&tf__L.vmm);
    tf_ptrtab_reset(&tf__L.graphs);
    tf__modules_after_fork();
    tf_ptrtab_reset(&tf__L.gmem);
}

__attribute__((constructor)) static void limiter_ctor(void)
{
    pthread_atfork(NULL, NULL, after_fork_child);
}
