/* SPDX-License-Identifier: Apache-2.0
 *
 * NVML usage source (see nvml.h): dlopen'd libnvidia-ml.so.1, per-process GPU time from
 * process-utilisation samples.
 */
#include "limits/nvml.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "limits/shm.h"

#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include "sim/nvml_abi.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVS 64

struct devstate {
    bool used;
    uint8_t uuid[16];
    unsigned ordinal;
    nvmlDevice_t h;
    unsigned long long last_seen_us; /* newest sample timestamp consumed */
    uint64_t last_now_ns;            /* engine time of the previous sample */
};

struct tf_nvml {
    void *lib;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    nvmlReturn_t (*count)(unsigned int *);
    nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*by_uuid)(const char *, nvmlDevice_t *);
    nvmlReturn_t (*get_uuid)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*meminfo)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *);
    nvmlReturn_t (*proc_util)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned int *,
                              unsigned long long);
    nvmlReturn_t (*procs)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *);
    struct devstate dev[MAX_DEVS];
    nvmlProcessUtilizationSample_t samples[TF_USAGE_MAX_PROCS * 4];
    nvmlProcessInfo_t infos[TF_USAGE_MAX_PROCS];
};

static void *plain_dlsym(void *h, const char *s)
{
    return dlsym(h, s);
}

int tf_nvml_open(const char *libpath, tf_nvml_resolve_fn resolve, struct tf_nvml **out, char *err,
                 size_t errlen)
{
    *out = NULL;
    if (!resolve)
        resolve = plain_dlsym;
    if (!libpath)
        libpath = "libnvidia-ml.so.1";
    struct tf_nvml *n = calloc(1, sizeof(*n));
    if (!n)
        return TF_ENOMEM;
    n->lib = dlopen(libpath, RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        const char *why = dlerror();
        tf_errf(err, errlen, "%s: %s", libpath, why ? why : "cannot load");
        free(n);
        return TF_ENOENT;
    }
#define R(field, sym) *(void **)&n->field = resolve(n->lib, sym)
    R(init, "nvmlInit_v2");
    R(shutdown, "nvmlShutdown");
    R(count, "nvmlDeviceGetCount_v2");
    R(by_index, "nvmlDeviceGetHandleByIndex_v2");
    R(by_uuid, "nvmlDeviceGetHandleByUUID");
    R(get_uuid, "nvmlDeviceGetUUID");
    R(meminfo, "nvmlDeviceGetMemoryInfo");
    R(util, "nvmlDeviceGetUtilizationRates");
    R(proc_util, "nvmlDeviceGetProcessUtilization");
    R(procs, "nvmlDeviceGetComputeRunningProcesses_v3");
#undef R
    if (!n->init || !n->count || !n->by_index || !n->get_uuid) {
        tf_errf(err, errlen, "%s: missing core NVML entry points", libpath);
        goto fail;
    }
    nvmlReturn_t rc = n->init();
    if (rc != NVML_SUCCESS) {
        tf_errf(err, errlen, "%s: nvmlInit_v2 failed with NVML error %d", libpath, (int)rc);
        goto fail;
    }
    *out = n;
    return 0;
fail:
    dlclose(n->lib);
    free(n);
    return TF_EIO;
}

void tf_nvml_close(struct tf_nvml *n)
{
    if (!n)
        return;
    if (n->shutdown)
        n->shutdown();
    dlclose(n->lib);
    free(n);
}

int tf_nvml_device_count(struct tf_nvml *n, unsigned *count)
{
    return n->count(count) == NVML_SUCCESS ? 0 : TF_EIO;
}

int tf_nvml_device_uuid(struct tf_nvml *n, unsigned i, uint8_t uuid[16], uint64_t *mem_total)
{
    nvmlDevice_t h;
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    if (n->by_index(i, &h) != NVML_SUCCESS)
        return TF_ENOENT;
    if (n->get_uuid(h, buf, sizeof(buf)) != NVML_SUCCESS || tf_shm_uuid_parse(buf, uuid) != 0)
        return TF_EIO;
    nvmlMemory_t m;
    if (mem_total)
        *mem_total = n->meminfo && n->meminfo(h, &m) == NVML_SUCCESS ? m.total : 0;
    return 0;
}

static struct devstate *dev_for(struct tf_nvml *n, const uint8_t uuid[16], unsigned ordinal)
{
    static const uint8_t zero[16];
    bool any = memcmp(uuid, zero, 16) == 0;
    struct devstate *free_slot = NULL;
    for (int i = 0; i < MAX_DEVS; i++) {
        struct devstate *d = &n->dev[i];
        if (!d->used) {
            if (!free_slot)
                free_slot = d;
            continue;
        }
        if (any ? (d->ordinal == ordinal && memcmp(d->uuid, zero, 16) == 0)
                : memcmp(d->uuid, uuid, 16) == 0)
            return d;
    }
    if (!free_slot)
        return NULL;
    nvmlDevice_t h;
    if (any) {
        if (n->by_index(ordinal, &h) != NVML_SUCCESS)
            return NULL;
    } else {
        char s[48];
        tf_shm_uuid_format(uuid, s, sizeof(s));
        if (!n->by_uuid || n->by_uuid(s, &h) != NVML_SUCCESS)
            return NULL;
    }
    memset(free_slot, 0, sizeof(*free_slot));
    free_slot->used = true;
    memcpy(free_slot->uuid, uuid, 16);
    free_slot->ordinal = ordinal;
    free_slot->h = h;
    return free_slot;
}

static struct tf_usage_proc *proc_entry(struct tf_usage_dev *out, uint32_t pid)
{
    for (int i = 0; i < out->nproc; i++)
        if (out->proc[i].pid == pid)
            return &out->proc[i];
    if (out->nproc >= TF_USAGE_MAX_PROCS)
        return NULL;
    struct tf_usage_proc *p = &out->proc[out->nproc++];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    return p;
}

int tf_nvml_sample(void *ctx, const uint8_t uuid[16], unsigned ordinal, uint64_t now_ns,
                   struct tf_usage_dev *out)
{
    struct tf_nvml *n = ctx;
    memset(out, 0, sizeof(*out));
    struct devstate *d = dev_for(n, uuid, ordinal);
    if (!d)
        return TF_ENOENT;
    bool first = d->last_now_ns == 0;
    out->window_ns = first ? 0 : now_ns - d->last_now_ns;
    d->last_now_ns = now_ns;

    nvmlUtilization_t u;
    if (n->util && n->util(d->h, &u) == NVML_SUCCESS)
        out->util_bp = u.gpu > 100 ? 10000 : u.gpu * 100;

    if (n->proc_util) {
        unsigned int cnt = TF_USAGE_MAX_PROCS * 4;
        nvmlReturn_t rc = n->proc_util(d->h, n->samples, &cnt, d->last_seen_us);
        if (rc == NVML_SUCCESS || rc == NVML_ERROR_NOT_FOUND) {
            out->have_busy = !first && d->last_seen_us != 0;
            if (rc == NVML_ERROR_NOT_FOUND)
                cnt = 0;
            unsigned long long newest = d->last_seen_us;
            /* Each sample holds a process's SM utilisation over the span since the
             * previous sample we consumed; multiply back into GPU time. */
            for (unsigned i = 0; i < cnt && i < TF_USAGE_MAX_PROCS * 4; i++) {
                const nvmlProcessUtilizationSample_t *s = &n->samples[i];
                if (s->timeStamp > newest)
                    newest = s->timeStamp;
                if (!out->have_busy || s->timeStamp <= d->last_seen_us)
                    continue;
                unsigned long long span_us = s->timeStamp - d->last_seen_us;
                struct tf_usage_proc *p = proc_entry(out, s->pid);
                unsigned sm = s->smUtil > 100 ? 100 : s->smUtil;
                if (p) {
                    p->busy_ns += (uint64_t)span_us * 1000u * sm / 100u;
                    p->sampled = true;
                }
            }
            /* NVML timestamps are its own clock: never mix in ours. Until a first sample
             * arrives there is no span to measure against (have_busy stays false). */
            d->last_seen_us = newest;
        }
    }

    if (n->procs) {
        unsigned int cnt = TF_USAGE_MAX_PROCS;
        if (n->procs(d->h, &cnt, n->infos) == NVML_SUCCESS) {
            out->have_mem = true;
            for (unsigned i = 0; i < cnt && i < TF_USAGE_MAX_PROCS; i++) {
                struct tf_usage_proc *p = proc_entry(out, n->infos[i].pid);
                if (p && n->infos[i].usedGpuMemory != (unsigned long long)NVML_VALUE_NOT_AVAILABLE)
                    p->mem = n->infos[i].usedGpuMemory;
            }
        }
    }
    return 0;
}
