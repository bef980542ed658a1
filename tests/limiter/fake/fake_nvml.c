/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only: a tiny libnvidia-ml.so.1 matching fake_cuda.c's devices (same count, UUIDs
 * GPU-face0000-0000-0000-0000-0000000000NN, FAKE_CUDA_MEM bytes each, a fixed 1 GiB used),
 * so NVML hooks can be tested where the simulated GPU is not built.
 */
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include "sim/nvml_abi.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

struct nvmlDevice_st {
    int i;
};
static struct nvmlDevice_st devs[8] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};

static unsigned count(void)
{
    const char *v = getenv("FAKE_CUDA_DEVICES");
    int n = v ? atoi(v) : 2;
    return n > 0 && n <= 8 ? (unsigned)n : 2;
}

static unsigned long long mem(void)
{
    const char *v = getenv("FAKE_CUDA_MEM");
    return v ? strtoull(v, NULL, 0) : 8ull << 30;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
    *n = count();
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *n)
{
    return nvmlDeviceGetCount_v2(n);
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
    if (i >= count())
        return NVML_ERROR_INVALID_ARGUMENT;
    *d = &devs[i];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, nvmlDevice_t *d)
{
    return nvmlDeviceGetHandleByIndex_v2(i, d);
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int len)
{
    snprintf(buf, len, "GPU-face0000-0000-0000-0000-0000000000%02x", d->i);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *d)
{
    char buf[80];
    for (unsigned i = 0; i < count(); i++) {
        nvmlDeviceGetUUID(&devs[i], buf, sizeof(buf));
        if (strcmp(buf, uuid) == 0) {
            *d = &devs[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *d)
{
    unsigned b;
    if (sscanf(bus, "00000000:%02x:00.0", &b) != 1 || b >= count())
        return NVML_ERROR_NOT_FOUND;
    *d = &devs[b];
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
    m->total = mem();
    m->used = 1ull << 30;
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m)
{
    if (m->version != nvmlMemory_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    m->total = mem();
    m->reserved = 256ull << 20;
    m->used = 1ull << 30;
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}
