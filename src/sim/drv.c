/* SPDX-License-Identifier: Apache-2.0
 *
 * The simulated driver's process state: cuInit (configuration, CUDA_VISIBLE_DEVICES, shared
 * device regions), cuDriverGetVersion, cuGetErrorName/String, and library unload.
 */
#include "sim/drv.h"

#include "sim/visible.h"

#include "common/cuerr.h"
#include "common/log.h"
#include "common/strutil.h"
#include "sim/migtab.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct sim_driver drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static _Atomic int drv_ready; /* 1 once cuInit succeeded */

struct sim_driver *tf__drv(void)
{
    return atomic_load_explicit(&drv_ready, memory_order_acquire) ? &drv : NULL;
}

CUresult tf__init_check(void)
{
    if (atomic_load_explicit(&drv_ready, memory_order_acquire))
        return CUDA_SUCCESS;
    return CUDA_ERROR_NOT_INITIALIZED;
}

struct sim_device *tf__device(CUdevice dev)
{
    struct sim_driver *d = tf__drv();
    if (!d || dev < 0 || dev >= d->ndev)
        return NULL;
    return &d->dev[dev];
}

static void exec_init(struct sim_exec *e)
{
    pthread_mutex_init(&e->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&e->work_cv, &ca);
    pthread_cond_init(&e->done_cv, &ca);
    pthread_cond_init(&e->host_cv, &ca);
    pthread_condattr_destroy(&ca);
    e->next_seq = 1;
}

/* A fork()ed child has none of the parent's executor threads: CUDA is unusable there (as
 * with the real driver) and must not touch the parent's process slots at exit. */
static void child_after_fork(void)
{
    atomic_store(&drv_ready, 0);
    for (int i = 0; i < drv.ndev; i++) {
        drv.dev[i].exec.started = 0;
        atomic_store(&drv.dev[i].slot, -1);
    }
}

/* The machine's MIG devices (instances with a compute instance), read from each GPU's MIG
 * table: their UUIDs into UUIDS (storage BUF), their GPUs into PARENT and their
 * configuration into drv.migcfg. Returns how many. */
static int mig_devices(char (*buf)[TF_SIM_MIG_UUID_LEN], const char **uuids, int *parent)
{
    int n = 0;
    for (int g = 0; g < drv.cfg.ndev && n < TF_SIM_MAX_DEVICES; g++) {
        const struct tf_sim_devcfg *c = &drv.cfg.dev[g];
        struct tf_partition_profile pp;
        struct tf_sim_mig_table t;
        char path[520], err[600];
        int fd, fresh;
        snprintf(path, sizeof(path), "%s%s.mig", drv.cfg.shm_prefix, c->uuid_str);
        if (access(path, F_OK) != 0 || tf_partition_builtin(c->model, &pp) ||
            tf_sim_mig_lock(path, &pp, &fd, &t, &fresh, err, sizeof(err)))
            continue;
        tf_sim_mig_unlock(fd);
        for (unsigned i = 0; i < TF_SIM_MIG_MAX && n < TF_SIM_MAX_DEVICES; i++) {
            const struct tf_sim_mig_inst *in = &t.inst[i];
            if (!in->gi_id || !in->has_ci)
                continue;
            struct tf_sim_devcfg *m = &drv.migcfg[n];
            *m = *c;
            const struct tf_partition_template *pt = &pp.templates[in->tpl];
            m->memory = pt->vram_bytes;
            m->sm_count = c->sm_count * pt->compute_slots / pp.compute_total;
            if (m->sm_count < 1)
                m->sm_count = 1;
            tf_sim_mig_uuid(c->uuid_str, in, buf[n]);
            tf_strlcpy(m->uuid_str, buf[n], sizeof(m->uuid_str));
            /* The 16 bytes behind "MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". */
            for (int k = 0, b = 0; buf[n][k] && b < 32; k++) {
                int v = isxdigit((unsigned char)buf[n][k]) && k >= 4
                            ? (isdigit((unsigned char)buf[n][k]) ? buf[n][k] - '0'
                                                                 : (tolower(buf[n][k]) - 'a' + 10))
                            : -1;
                if (v < 0)
                    continue;
                m->uuid[b / 2] = (uint8_t)(b % 2 ? (m->uuid[b / 2] | v) : v << 4);
                b++;
            }
            uuids[n] = buf[n];
            parent[n++] = g;
        }
    }
    return n;
}

static void init_driver(void)
{
    char err[512] = "";
    drv.init_result = CUDA_SUCCESS;
    pthread_mutex_init(&drv.mu, NULL);
    atomic_store(&drv.next_id, 1);
    if (tf_sim_config_load(&drv.cfg, err, sizeof(err)) != 0) {
        tf_log(TF_LOG_ERROR, "sim", "cuInit: %s", err);
        drv.init_result = CUDA_ERROR_INVALID_VALUE;
        return;
    }
    const char *mi = getenv("TF_SIM_LAUNCH_MAX_INSNS");
    if (mi && *mi)
        drv.max_insns = strtoull(mi, NULL, 10);
    /* The devices CUDA_VISIBLE_DEVICES leaves, renumbered in its order; the others are not
     * touched at all (no shared state opened), as hidden GPUs on hardware. */
    const char *uuids[TF_SIM_MAX_DEVICES];
    for (int i = 0; i < drv.cfg.ndev; i++)
        uuids[i] = drv.cfg.dev[i].uuid_str;
    /* MIG devices only when the list names one (the tables are not read otherwise). */
    const char *spec = getenv("CUDA_VISIBLE_DEVICES"), *migs[TF_SIM_MAX_DEVICES];
    char migbuf[TF_SIM_MAX_DEVICES][TF_SIM_MIG_UUID_LEN];
    int parent[TF_SIM_MAX_DEVICES], nmig = 0;
    if (spec && strncmp(spec + strspn(spec, " \t\n\v\f\r"), "MIG-", 4) == 0)
        nmig = mig_devices(migbuf, migs, parent);
    struct tf_sim_visible vis;
    tf_sim_visible_parse_mig(spec, uuids, drv.cfg.ndev, migs, parent, nmig, &vis);
    if (vis.note[0])
        tf_log(TF_LOG_DEBUG, "sim", "CUDA_VISIBLE_DEVICES: %s (%d of %d devices visible)", vis.note,
               vis.n, drv.cfg.ndev);
    if (vis.n == 0) {
        drv.init_result = CUDA_ERROR_NO_DEVICE;
        return;
    }
    for (int i = 0; i < vis.n; i++) {
        struct sim_device *d = &drv.dev[i];
        d->index = i;
        d->phys = vis.phys[i];
        d->cfg = vis.mig[i] >= 0 ? &drv.migcfg[vis.mig[i]] : &drv.cfg.dev[d->phys];
        atomic_store(&d->slot, -1);
        pthread_mutex_init(&d->mu, NULL);
        pthread_mutex_init(&d->attach_mu, NULL);
        exec_init(&d->exec);
        char path[512];
        snprintf(path, sizeof(path), "%s%s", drv.cfg.shm_prefix, d->cfg->uuid_str);
        int64_t eff = d->cfg->memory;
        if (tf_sim_shm_open(path, d->cfg->uuid_str, d->cfg->model->name, d->cfg->memory, &d->shm,
                            &eff, err, sizeof(err)) != 0) {
            tf_log(TF_LOG_ERROR, "sim", "cuInit: device %d: %s", i, err);
            drv.init_result = CUDA_ERROR_OPERATING_SYSTEM;
            return;
        }
        if (eff != d->cfg->memory)
            tf_log(TF_LOG_WARN, "sim",
                   "device %d (%s): shared state %s has a budget of %lld bytes, not the "
                   "configured %lld; using the shared one",
                   i, d->cfg->uuid_str, path, (long long)eff, (long long)d->cfg->memory);
        d->total_mem = eff;
    }
    drv.ndev = vis.n;
    pthread_atfork(NULL, NULL, child_after_fork);
    atomic_store_explicit(&drv_ready, 1, memory_order_release);
}

CUresult CUDAAPI cuInit(unsigned int Flags)
{
    if (Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&drv_once, init_driver);
    return drv.init_result;
}

CUresult tf__device_ref(struct sim_device *d)
{
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&d->attach_mu);
    if (atomic_load(&d->slot) < 0) {
        int slot;
        if (tf_sim_shm_attach(d->shm, &slot) != 0) {
            tf_log(TF_LOG_ERROR, "sim", "device %d: all %d process slots of the device are taken",
                   d->index, TF_SIM_MAX_PROCS);
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            atomic_store(&d->slot, slot);
        }
    }
    if (rc == CUDA_SUCCESS)
        d->users++;
    pthread_mutex_unlock(&d->attach_mu);
    if (rc == CUDA_SUCCESS && (rc = tf__exec_start(d)) != CUDA_SUCCESS)
        tf__device_unref(d);
    return rc;
}

void tf__device_unref(struct sim_device *d)
{
    pthread_mutex_lock(&d->attach_mu);
    if (d->users > 0 && --d->users == 0 && atomic_load(&d->slot) >= 0) {
        tf_sim_shm_detach(d->shm, atomic_load(&d->slot));
        atomic_store(&d->slot, -1);
    }
    pthread_mutex_unlock(&d->attach_mu);
}

/* Library unload (normal process exit): stop the executors and give the device budget back
 * at once instead of waiting for another process to notice the death. */
__attribute__((destructor)) static void drv_fini(void)
{
    if (!tf__drv())
        return;
    tf__exec_shutdown();
    for (int i = 0; i < drv.ndev; i++) {
        struct sim_device *d = &drv.dev[i];
        if (atomic_load(&d->slot) >= 0)
            tf_sim_shm_detach(d->shm, atomic_load(&d->slot));
    }
}

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = TF_SIM_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

/* ---- Error names and messages ---------------------------------------------------------- */

/* The shared table's values must be cuda.h's. */
#define X(name, value, msg) _Static_assert(name == value, #name " differs from cuda.h");
#include "common/cuerr.def"
#undef X

CUresult tf__not_supported(const char *what)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static const char *seen[64]; /* guarded by mu; past 64 names every call logs */
    int fresh = 1;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < 64 && fresh; i++) {
        if (!seen[i]) {
            seen[i] = what;
            break;
        }
        fresh = strcmp(seen[i], what) != 0;
    }
    pthread_mutex_unlock(&mu);
    if (fresh)
        tf_log(TF_LOG_WARN, "sim", "not supported by the simulated GPU: %s", what);
    return CUDA_ERROR_NOT_SUPPORTED;
}

const char *tf__cu_error_name(CUresult r)
{
    const char *n = tf_cuerr_name((int)r);
    return n ? n : "CUDA_ERROR_UNRECOGNIZED";
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = tf_cuerr_name((int)error);
    return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    *pStr = tf_cuerr_string((int)error);
    return *pStr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
