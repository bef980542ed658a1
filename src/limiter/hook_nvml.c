/* SPDX-License-Identifier: Apache-2.0
 *
 * NVML hooks: memory queries report the workload's VRAM limit as total and its use (all its
 * processes) as used, never used > total; device enumeration shows only the region's
 * devices. Devices are matched to region entries by UUID, so this works in processes that
 * use NVML without ever initialising CUDA (monitoring agents, nvidia-smi-like tools).
 */
#include "limiter/limiter.h"

#include "common/log.h"
#include "limits/shm.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool tf__nvml_init(void)
{
    struct tf__lim *L = &tf__L;
    int st = atomic_load_explicit(&L->nvml_phase, memory_order_acquire);
    if (st == 2)
        return L->nvml != NULL;
    int expect = 0;
    if (!atomic_compare_exchange_strong(&L->nvml_phase, &expect, 1)) {
        while (atomic_load_explicit(&L->nvml_phase, memory_order_acquire) != 2) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
        return L->nvml != NULL;
    }
    (void)tf__ready(); /* the region, if any */
    const char *lib = getenv("TF_LIMITER_LIBNVML");
    if (!lib || !*lib)
        lib = "libnvidia-ml.so.1";
    L->nvml = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!L->nvml) {
        const char *why = dlerror();
        tf_log(TF_LOG_ERROR, TF_LIM_SUBSYS, "cannot load the real NVML %s: %s", lib,
               why ? why : "?");
    } else {
        for (size_t i = 0; i < tf__nsyms; i++) {
            if (!tf__syms[i].nvml)
                continue;
            void *p = tf__real_dlsym(L->nvml, tf__syms[i].name);
            if (p && p == tf__syms[i].hook)
                p = NULL;
            *(void **)((char *)&L->real + tf__syms[i].real_off) = p;
        }
    }
    atomic_store_explicit(&L->nvml_phase, 2, memory_order_release);
    return L->nvml != NULL;
}

/* Region index of an NVML device (by UUID), or -1. */
static int nv_idx(nvmlDevice_t dev)
{
    struct tf_shm_region *r = tf__L.r;
    if (!r || !tf__L.real.nvmlDeviceGetUUID)
        return -1;
    char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    uint8_t u[16];
    if (tf__L.real.nvmlDeviceGetUUID(dev, buf, sizeof(buf)) != NVML_SUCCESS ||
        tf_shm_uuid_parse(buf, u) != 0)
        return -1;
    unsigned n = atomic_load_explicit(&r->lim->hdr.ndev, memory_order_relaxed);
    for (unsigned k = 0; k < n && k < TF_SHM_MAX_DEVICES; k++) {
        uint8_t ru[16];
        tf_shm_uuid_load(r, k, ru);
        if (memcmp(ru, u, 16) == 0)
            return (int)k;
    }
    return -1;
}

/* Whether NVML enumeration is filtered: a hypervisor region that names its devices. */
static bool nv_filter(void)
{
    struct tf_shm_region *r = tf__L.r;
    return r && !tf__L.standalone &&
           atomic_load_explicit(&r->lim->hdr.ndev, memory_order_relaxed) > 0;
}

#define NV_ENTER(name)                                                                             \
    do {                                                                                           \
        if (!tf__nvml_init() || !tf__L.real.name)                                                  \
            return NVML_ERROR_LIBRARY_NOT_FOUND;                                                   \
    } while (0)

static void view(nvmlDevice_t dev, unsigned long long *total, unsigned long long *free,
                 unsigned long long *used)
{
    int idx = nv_idx(dev);
    if (idx < 0)
        return;
    uint64_t f, t;
    tf_shm_vram_view(tf__L.r, (unsigned)idx, *free, *total, &f, &t);
    if (t == *total && f == *free)
        return; /* not limited */
    *total = t;
    *free = f;
    *used = t - f;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    NV_ENTER(nvmlDeviceGetMemoryInfo);
    nvmlReturn_t rc = tf__L.real.nvmlDeviceGetMemoryInfo(device, memory);
    if (rc == NVML_SUCCESS && memory)
        view(device, &memory->total, &memory->free, &memory->used);
    return rc;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    NV_ENTER(nvmlDeviceGetMemoryInfo_v2);
    nvmlReturn_t rc = tf__L.real.nvmlDeviceGetMemoryInfo_v2(device, memory);
    if (rc == NVML_SUCCESS && memory) {
        view(device, &memory->total, &memory->free, &memory->used);
        if (memory->reserved > memory->used)
            memory->reserved = memory->used;
    }
    return rc;
}

/* The real index of the I-th visible device (filtering by region UUIDs), or -1. */
static long nth_visible(unsigned i, unsigned *count)
{
    unsigned n = 0, seen = 0;
    if (!tf__L.real.nvmlDeviceGetCount_v2 || !tf__L.real.nvmlDeviceGetHandleByIndex_v2 ||
        tf__L.real.nvmlDeviceGetCount_v2(&n) != NVML_SUCCESS)
        return -1;
    long found = -1;
    for (unsigned k = 0; k < n; k++) {
        nvmlDevice_t d;
        if (tf__L.real.nvmlDeviceGetHandleByIndex_v2(k, &d) != NVML_SUCCESS || nv_idx(d) < 0)
            continue;
        if (seen == i && found < 0)
            found = (long)k;
        seen++;
    }
    if (count)
        *count = seen;
    return found;
}

static nvmlReturn_t count_hook(nvmlReturn_t (*real)(unsigned int *), unsigned int *deviceCount)
{
    nvmlReturn_t rc = real(deviceCount);
    if (rc == NVML_SUCCESS && deviceCount && nv_filter())
        (void)nth_visible(UINT32_MAX, deviceCount);
    return rc;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
    NV_ENTER(nvmlDeviceGetCount);
    return count_hook(tf__L.real.nvmlDeviceGetCount, deviceCount);
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    NV_ENTER(nvmlDeviceGetCount_v2);
    return count_hook(tf__L.real.nvmlDeviceGetCount_v2, deviceCount);
}

static nvmlReturn_t index_hook(nvmlReturn_t (*real)(unsigned int, nvmlDevice_t *), unsigned int i,
                               nvmlDevice_t *device)
{
    if (!nv_filter())
        return real(i, device);
    long k = nth_visible(i, NULL);
    if (k < 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    return real((unsigned)k, device);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    NV_ENTER(nvmlDeviceGetHandleByIndex);
    return index_hook(tf__L.real.nvmlDeviceGetHandleByIndex, index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    NV_ENTER(nvmlDeviceGetHandleByIndex_v2);
    return index_hook(tf__L.real.nvmlDeviceGetHandleByIndex_v2, index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    NV_ENTER(nvmlDeviceGetHandleByUUID);
    nvmlReturn_t rc = tf__L.real.nvmlDeviceGetHandleByUUID(uuid, device);
    if (rc == NVML_SUCCESS && device && nv_filter() && nv_idx(*device) < 0)
        return NVML_ERROR_NOT_FOUND;
    return rc;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    NV_ENTER(nvmlDeviceGetHandleByPciBusId_v2);
    nvmlReturn_t rc = tf__L.real.nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
    if (rc == NVML_SUCCESS && device && nv_filter() && nv_idx(*device) < 0)
        return NVML_ERROR_NOT_FOUND;
    return rc;
}
