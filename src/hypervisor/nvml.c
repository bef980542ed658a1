/* SPDX-License-Identifier: Apache-2.0
 *
 * NVML through dlopen (see nvml.h). Only the handful of entry points discovery and sampling
 * need are resolved; their types come from the project's NVML ABI header (src/sim/nvml_abi.h,
 * the toolkit has no nvml.h).
 */
#include "hypervisor/nvml.h"
#include "hypervisor/nvml_int.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/gpu_models.h"
#include "sim/nvml_abi.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef nvmlReturn_t nvml_ret;
typedef nvmlDevice_t nvml_dev;

struct tf_hv_nvml {
    void *lib;
    struct tf_hv_mig_api *mig; /* nvml_mig.c, resolved on first use */
    char path[256];
    nvml_ret (*init)(void);
    nvml_ret (*shutdown)(void);
    const char *(*error_string)(nvml_ret);
    nvml_ret (*count)(unsigned int *);
    nvml_ret (*by_index)(unsigned int, nvml_dev *);
    nvml_ret (*name)(nvml_dev, char *, unsigned int);
    nvml_ret (*uuid)(nvml_dev, char *, unsigned int);
    nvml_ret (*memory)(nvml_dev, nvmlMemory_t *);
    nvml_ret (*util)(nvml_dev, nvmlUtilization_t *);
    nvml_ret (*temperature)(nvml_dev, int, unsigned int *);
    nvml_ret (*power)(nvml_dev, unsigned int *);
    nvml_ret (*procs)(nvml_dev, unsigned int *, nvmlProcessInfo_v2_t *);
    nvml_ret (*pci)(nvml_dev, nvmlPciInfo_t *);
};

static const char *nvml_msg(struct tf_hv_nvml *n, nvml_ret r)
{
    const char *m = n->error_string ? n->error_string(r) : NULL;
    return m ? m : "NVML error";
}

const char *tf__hv_nvml_msg(struct tf_hv_nvml *n, int r)
{
    return nvml_msg(n, (nvml_ret)r);
}

void *tf__hv_nvml_lib(struct tf_hv_nvml *n)
{
    return n->lib;
}

struct tf_hv_mig_api **tf__hv_nvml_mig(struct tf_hv_nvml *n)
{
    return &n->mig;
}

nvmlDevice_t tf__hv_nvml_device(struct tf_hv_nvml *n, int index)
{
    nvml_dev d;
    return n->by_index((unsigned int)index, &d) == 0 ? d : NULL;
}

static void *sym(void *lib, const char *a, const char *b)
{
    void *p = dlsym(lib, a);
    return p || !b ? p : dlsym(lib, b);
}

int tf_hv_nvml_open(const char *lib, struct tf_hv_nvml **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!lib || !*lib)
        lib = getenv("TF_NVML_LIBRARY");
    if (!lib || !*lib)
        lib = "libnvidia-ml.so.1";
    struct tf_hv_nvml *n = calloc(1, sizeof(*n));
    if (!n)
        return TF_ENOMEM;
    tf_strlcpy(n->path, lib, sizeof(n->path));
    n->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!n->lib) {
        tf_errf(err, errlen, "cannot load NVML (%s): %s", lib, dlerror());
        free(n);
        return TF_ENOENT;
    }
    *(void **)&n->init = sym(n->lib, "nvmlInit_v2", "nvmlInit");
    *(void **)&n->shutdown = sym(n->lib, "nvmlShutdown", NULL);
    *(void **)&n->error_string = sym(n->lib, "nvmlErrorString", NULL);
    *(void **)&n->count = sym(n->lib, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    *(void **)&n->by_index =
        sym(n->lib, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    *(void **)&n->name = sym(n->lib, "nvmlDeviceGetName", NULL);
    *(void **)&n->uuid = sym(n->lib, "nvmlDeviceGetUUID", NULL);
    *(void **)&n->memory = sym(n->lib, "nvmlDeviceGetMemoryInfo", NULL);
    *(void **)&n->util = sym(n->lib, "nvmlDeviceGetUtilizationRates", NULL);
    *(void **)&n->temperature = sym(n->lib, "nvmlDeviceGetTemperature", NULL);
    *(void **)&n->power = sym(n->lib, "nvmlDeviceGetPowerUsage", NULL);
    *(void **)&n->procs = sym(n->lib, "nvmlDeviceGetComputeRunningProcesses_v3",
                              "nvmlDeviceGetComputeRunningProcesses_v2");
    *(void **)&n->pci = sym(n->lib, "nvmlDeviceGetPciInfo_v3", NULL);
    if (!n->init || !n->count || !n->by_index || !n->name || !n->uuid || !n->memory) {
        tf_errf(err, errlen, "%s lacks the NVML entry points discovery needs", lib);
        dlclose(n->lib);
        free(n);
        return TF_ENOENT;
    }
    nvml_ret r = n->init();
    if (r != 0) {
        tf_errf(err, errlen, "nvmlInit (%s): %s", lib, nvml_msg(n, r));
        dlclose(n->lib);
        free(n);
        return TF_EIO;
    }
    *out = n;
    return 0;
}

void tf_hv_nvml_close(struct tf_hv_nvml *n)
{
    if (!n)
        return;
    if (n->shutdown)
        n->shutdown();
    free(n->mig);
    dlclose(n->lib);
    free(n);
}

const char *tf_hv_nvml_library(const struct tf_hv_nvml *n)
{
    return n->path;
}

int tf_hv_pci_numa_node(const char *sysfs, unsigned domain, unsigned bus, unsigned device)
{
    char path[512], buf[32];
    snprintf(path, sizeof(path), "%s/bus/pci/devices/%04x:%02x:%02x.0/numa_node",
             sysfs && *sysfs ? sysfs : "/sys", domain, bus, device);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *got = fgets(buf, sizeof(buf), f);
    fclose(f);
    if (!got)
        return -1;
    char *end;
    long v = strtol(buf, &end, 10);
    if (end == buf || (*end && *end != '\n') || v < 0 || v > 4095)
        return -1;
    return (int)v;
}

int tf_hv_nvml_devices(struct tf_hv_nvml *n, struct tf_hv_device *out, int max, int *count,
                       char *err, size_t errlen)
{
    *count = 0;
    unsigned int c = 0;
    nvml_ret r = n->count(&c);
    if (r != 0) {
        tf_errf(err, errlen, "nvmlDeviceGetCount: %s", nvml_msg(n, r));
        return TF_EIO;
    }
    for (unsigned int i = 0; i < c && (int)i < max; i++) {
        nvml_dev d;
        struct tf_hv_device *o = &out[*count];
        memset(o, 0, sizeof(*o));
        nvmlMemory_t mem = {0};
        if ((r = n->by_index(i, &d)) || (r = n->name(d, o->name, sizeof(o->name))) ||
            (r = n->uuid(d, o->uuid, sizeof(o->uuid))) || (r = n->memory(d, &mem))) {
            tf_errf(err, errlen, "NVML device %u: %s", i, nvml_msg(n, r));
            return TF_EIO;
        }
        o->name[sizeof(o->name) - 1] = o->uuid[sizeof(o->uuid) - 1] = '\0';
        o->index = (int)i;
        o->vram_bytes = (int64_t)mem.total;
        o->present = true;
        nvmlPciInfo_t pci;
        o->numa =
            n->pci && n->pci(d, &pci) == 0
                ? tf_hv_pci_numa_node(getenv("TF_SYSFS_ROOT"), pci.domain, pci.bus, pci.device)
                : -1;
        const struct tf_gpu_model *m = tf_gpu_model_from_nvml(o->name, o->vram_bytes);
        if (m) {
            tf_strlcpy(o->model, m->name, sizeof(o->model));
            tf_strlcpy(o->vendor, m->vendor, sizeof(o->vendor));
            o->tflops_milli = m->tflops_milli;
        } else {
            tf_strlcpy(o->vendor, "NVIDIA", sizeof(o->vendor));
        }
        (*count)++;
    }
    return 0;
}

int tf_hv_nvml_sample(struct tf_hv_nvml *n, int index, struct tf_hv_gpu_sample *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof(*out));
    nvml_dev d;
    nvml_ret r = n->by_index((unsigned int)index, &d);
    if (r != 0) {
        tf_errf(err, errlen, "NVML device %d: %s", index, nvml_msg(n, r));
        return TF_EIO;
    }
    nvmlMemory_t mem;
    if (n->memory(d, &mem) == 0) {
        out->mem_used = (int64_t)mem.used;
        out->mem_total = (int64_t)mem.total;
    }
    nvmlUtilization_t u;
    if (n->util && n->util(d, &u) == 0)
        out->util_bp = (int32_t)(u.gpu > 100 ? 10000 : u.gpu * 100);
    unsigned int v;
    if (n->procs) {
        unsigned int cnt = TF_HV_MAX_PROCS;
        nvmlProcessInfo_v2_t info[TF_HV_MAX_PROCS];
        if (n->procs(d, &cnt, info) == 0) {
            out->nproc = (int)(cnt < TF_HV_MAX_PROCS ? cnt : TF_HV_MAX_PROCS);
            for (int i = 0; i < out->nproc; i++) {
                out->procs[i].pid = (int)info[i].pid;
                out->procs[i].mem = (int64_t)info[i].usedGpuMemory;
            }
        }
    }
    if (n->temperature && n->temperature(d, NVML_TEMPERATURE_GPU, &v) == 0)
        out->temperature = v;
    if (n->power && n->power(d, &v) == 0)
        out->power_w = v / 1000.0;
    return 0;
}
