/* SPDX-License-Identifier: Apache-2.0
 *
 * The simulated libnvidia-ml.so.1: the NVML subset of nvml_abi.h over the simulated devices.
 * Devices come from the same configuration as the simulated libcuda.so.1 (simcfg.h); live
 * numbers (memory used, utilisation, processes, per-process samples) come from each
 * device's shared state region (devshm.h), so an NVML reader in one process sees the CUDA
 * work of every process on the device, as on hardware.
 *
 * Sample window of nvmlDeviceGetUtilizationRates: 1 s (TF_SIM_UTIL_WINDOW_MS overrides).
 * Clocks are the model's maximum; temperature and power are derived from utilisation
 * (idle 30 C / 15 % of the power limit, rising linearly to 70 C / 100 % at full load).
 * Thread-safe: one mutex guards initialisation; device queries only read immutable state
 * and the (process-shared, locked) regions.
 */
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#pragma GCC visibility push(default)
#include "sim/nvml_abi.h"
#pragma GCC visibility pop

#include "sim/devshm.h"
#include "sim/nvml_int.h"
#include "sim/simcfg.h"

#include "common/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DRIVER_VERSION "580.65.06"
#define NVML_VERSION "13.580.65.06"
#define CUDA_DRIVER_VERSION 13000
#define DEFAULT_WINDOW_MS 1000
#define MAX_SAMPLE_SPAN_NS (TF_SIM_BUCKET_NS * TF_SIM_PROC_BUCKETS)

static pthread_mutex_t nv_mu = PTHREAD_MUTEX_INITIALIZER;
static int nv_refs;                 /* guarded by nv_mu */
static struct tf_sim_config nv_cfg; /* valid while nv_refs > 0 */
struct nvmlDevice_st tf__nv_dev[TF_SIM_MAX_DEVICES];
int tf__nv_ndev;
#define nv_dev tf__nv_dev
#define nv_ndev tf__nv_ndev
static uint64_t nv_window_ns;

static void close_all(void)
{
    for (int i = 0; i < nv_ndev; i++) {
        tf_sim_shm_close(nv_dev[i].shm);
        nv_dev[i].shm = NULL;
    }
    nv_ndev = 0;
}

static nvmlReturn_t init_locked(unsigned flags)
{
    char err[512] = "";
    if (tf_sim_config_load(&nv_cfg, err, sizeof(err)) != 0) {
        tf_log(TF_LOG_ERROR, "sim-nvml", "nvmlInit: %s", err);
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    if (nv_cfg.ndev == 0 && !(flags & NVML_INIT_FLAG_NO_GPUS))
        return NVML_ERROR_GPU_NOT_FOUND;
    for (int i = 0; i < nv_cfg.ndev; i++) {
        struct nvmlDevice_st *d = &nv_dev[i];
        d->index = i;
        d->cfg = &nv_cfg.dev[i];
        char path[512];
        snprintf(path, sizeof(path), "%s%s", nv_cfg.shm_prefix, d->cfg->uuid_str);
        snprintf(d->mig_path, sizeof(d->mig_path), "%s.mig", path);
        if (tf_sim_shm_open(path, d->cfg->uuid_str, d->cfg->model->name, d->cfg->memory, &d->shm,
                            NULL, err, sizeof(err)) != 0) {
            tf_log(TF_LOG_ERROR, "sim-nvml", "nvmlInit: device %d: %s", i, err);
            nv_ndev = i;
            close_all();
            return NVML_ERROR_DRIVER_NOT_LOADED;
        }
        nv_ndev = i + 1;
    }
    const char *w = getenv("TF_SIM_UTIL_WINDOW_MS");
    long ms = w && *w ? strtol(w, NULL, 10) : DEFAULT_WINDOW_MS;
    if (ms < 10 || ms > 5000)
        ms = DEFAULT_WINDOW_MS;
    nv_window_ns = (uint64_t)ms * 1000000u;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
    if (flags & ~(unsigned)(NVML_INIT_FLAG_NO_GPUS | NVML_INIT_FLAG_NO_ATTACH))
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t rc = NVML_SUCCESS;
    pthread_mutex_lock(&nv_mu);
    if (nv_refs == 0)
        rc = init_locked(flags);
    if (rc == NVML_SUCCESS)
        nv_refs++;
    pthread_mutex_unlock(&nv_mu);
    return rc;
}

nvmlReturn_t nvmlInit_v2(void)
{
    return nvmlInitWithFlags(0);
}

nvmlReturn_t nvmlInit(void)
{
    return nvmlInitWithFlags(0);
}

nvmlReturn_t nvmlShutdown(void)
{
    nvmlReturn_t rc = NVML_SUCCESS;
    pthread_mutex_lock(&nv_mu);
    if (nv_refs == 0)
        rc = NVML_ERROR_UNINITIALIZED;
    else if (--nv_refs == 0)
        close_all();
    pthread_mutex_unlock(&nv_mu);
    return rc;
}

int tf__nv_initialized(void)
{
    pthread_mutex_lock(&nv_mu);
    int ok = nv_refs > 0;
    pthread_mutex_unlock(&nv_mu);
    return ok;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS:
        return "Success";
    case NVML_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
        return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
        return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
        return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
        return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
        return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
        return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
        return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
        return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
        return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
        return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
        return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM:
        return "The operating system has blocked the request.";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_IN_USE:
        return "In use by another client";
    case NVML_ERROR_MEMORY:
        return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
        return "No data";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
        return "The requested vgpu operation is not available on target device, because ECC is "
               "enabled";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
        return "Ran out of critical resources, other than memory";
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
        return "Frequency not supported";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
        return "Argument version mismatch";
    case NVML_ERROR_DEPRECATED:
        return "The requested functionality has been deprecated";
    case NVML_ERROR_NOT_READY:
        return "System is not ready for the request";
    case NVML_ERROR_GPU_NOT_FOUND:
        return "No GPUs were found";
    case NVML_ERROR_INVALID_STATE:
        return "Resource not in correct state to perform requested operation";
    case NVML_ERROR_RESET_TYPE_NOT_SUPPORTED:
        return "Reset type not supported";
    case NVML_ERROR_UNKNOWN:
        return "Unknown Error";
    }
    return "Unknown Error";
}

/* ---- System ---------------------------------------------------------------------------- */

nvmlReturn_t tf__nv_put_string(char *buf, unsigned int length, const char *s)
{
    if (!buf)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(s) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    if (!tf__nv_initialized())
        return NVML_ERROR_UNINITIALIZED;
    return tf__nv_put_string(version, length, DRIVER_VERSION);
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    return tf__nv_put_string(version, length, NVML_VERSION);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
    if (!cudaDriverVersion)
        return NVML_ERROR_INVALID_ARGUMENT;
    *cudaDriverVersion = CUDA_DRIVER_VERSION;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
    return nvmlSystemGetCudaDriverVersion(cudaDriverVersion);
}

/* ---- Device handles -------------------------------------------------------------------- */

/* Validates DEVICE: UNINITIALIZED, INVALID_ARGUMENT or SUCCESS. */
nvmlReturn_t tf__nv_dev_check(nvmlDevice_t device)
{
    if (!tf__nv_initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (!device || device < nv_dev || device >= nv_dev + nv_ndev)
        return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    if (!tf__nv_initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (!deviceCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    *deviceCount = (unsigned)nv_ndev;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
    return nvmlDeviceGetCount_v2(deviceCount);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (!tf__nv_initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (!device || index >= (unsigned)nv_ndev)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &nv_dev[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    if (!tf__nv_initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (!uuid || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < nv_ndev; i++)
        if (strcasecmp(nv_dev[i].cfg->uuid_str, uuid) == 0) {
            *device = &nv_dev[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

/* PCI location, as the simulated libcuda.so.1 reports it: domain 0, bus 0x10 + index. */
#define PCI_BUS(d) (0x10u + (unsigned)(d)->index)

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    if (!tf__nv_initialized())
        return NVML_ERROR_UNINITIALIZED;
    if (!pciBusId || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned dom = 0, bus = 0, slot = 0;
    if (sscanf(pciBusId, "%x:%x:%x", &dom, &bus, &slot) != 3) {
        dom = 0;
        if (sscanf(pciBusId, "%x:%x", &bus, &slot) != 2)
            return NVML_ERROR_INVALID_ARGUMENT;
    }
    for (int i = 0; i < nv_ndev; i++)
        if (dom == 0 && slot == 0 && bus == PCI_BUS(&nv_dev[i])) {
            *device = &nv_dev[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!index)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = (unsigned)device->index;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int *minorNumber)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!minorNumber)
        return NVML_ERROR_INVALID_ARGUMENT;
    *minorNumber = (unsigned)device->index;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    return rc ? rc : tf__nv_put_string(name, length, device->cfg->model->nvml_name);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    if (tf__nv_is_mig(device))
        return tf__nv_mig_uuid(device, uuid, length);
    nvmlReturn_t rc = tf__nv_dev_check(device);
    return rc ? rc : tf__nv_put_string(uuid, length, device->cfg->uuid_str);
}

nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t *type)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!type)
        return NVML_ERROR_INVALID_ARGUMENT;
    *type = device->cfg->hw->geforce ? NVML_BRAND_GEFORCE : NVML_BRAND_NVIDIA;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!pci)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(pci, 0, sizeof(*pci));
    pci->domain = 0;
    pci->bus = PCI_BUS(device);
    pci->device = 0;
    pci->pciDeviceId = (unsigned)device->cfg->hw->pci_device_id << 16 | 0x10DEu;
    pci->pciSubSystemId = pci->pciDeviceId;
    snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT,
             pci->domain, pci->bus, pci->device);
    snprintf(pci->busId, sizeof(pci->busId), NVML_DEVICE_PCI_BUS_ID_FMT, pci->domain, pci->bus,
             pci->device);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!major || !minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    *major = device->cfg->hw->cc_major;
    *minor = device->cfg->hw->cc_minor;
    return NVML_SUCCESS;
}

/* ---- Memory and utilisation ------------------------------------------------------------ */

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
    if (tf__nv_is_mig(device))
        return tf__nv_mig_memory(device, memory);
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct tf_sim_shm_mem m;
    tf_sim_shm_mem_info(device->shm, &m);
    memory->total = m.total;
    memory->used = m.used;
    memory->free = m.total - m.used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *memory)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!memory)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != nvmlMemory_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    struct tf_sim_shm_mem m;
    tf_sim_shm_mem_info(device->shm, &m);
    memory->total = m.total;
    memory->reserved = 0;
    memory->used = m.used;
    memory->free = m.total - m.used;
    return NVML_SUCCESS;
}

static void utilization(nvmlDevice_t device, unsigned *gpu, unsigned *mem)
{
    tf_sim_shm_utilization(device->shm, tf_sim_now_ns(), nv_window_ns, gpu, mem);
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *u)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!u)
        return NVML_ERROR_INVALID_ARGUMENT;
    utilization(device, &u->gpu, &u->memory);
    return NVML_SUCCESS;
}

/* Processes of DEVICE into a caller array of NMAX via FILL; NVML count semantics. */
static nvmlReturn_t processes(nvmlDevice_t device, unsigned int *infoCount, void *infos,
                              void (*fill)(void *infos, int i,
                                           const struct tf_sim_shm_proc_info *p))
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!infoCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct tf_sim_shm_proc_info p[TF_SIM_MAX_PROCS];
    uint64_t now = tf_sim_now_ns();
    int n = tf_sim_shm_processes(device->shm, now, now, p, TF_SIM_MAX_PROCS);
    if (n > TF_SIM_MAX_PROCS)
        n = TF_SIM_MAX_PROCS;
    if (*infoCount < (unsigned)n || (!infos && n > 0)) {
        *infoCount = (unsigned)n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (int i = 0; i < n; i++)
        fill(infos, i, &p[i]);
    *infoCount = (unsigned)n;
    return NVML_SUCCESS;
}

static void fill_v2(void *infos, int i, const struct tf_sim_shm_proc_info *p)
{
    nvmlProcessInfo_v2_t *o = (nvmlProcessInfo_v2_t *)infos + i;
    o->pid = p->pid;
    o->usedGpuMemory = p->mem_used;
    o->gpuInstanceId = 0xFFFFFFFFu;
    o->computeInstanceId = 0xFFFFFFFFu;
}

static void fill_v1(void *infos, int i, const struct tf_sim_shm_proc_info *p)
{
    nvmlProcessInfo_v1_t *o = (nvmlProcessInfo_v1_t *)infos + i;
    o->pid = p->pid;
    o->usedGpuMemory = p->mem_used;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos)
{
    return processes(device, infoCount, infos, fill_v2);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_v2_t *infos)
{
    return processes(device, infoCount, infos, fill_v2);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *infoCount,
                                                  nvmlProcessInfo_v1_t *infos)
{
    return processes(device, infoCount, infos, fill_v1);
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t *utilization_,
                                             unsigned int *processSamplesCount,
                                             unsigned long long lastSeenTimeStamp)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!processSamplesCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    uint64_t now = tf_sim_now_ns();
    uint64_t from = (uint64_t)lastSeenTimeStamp * 1000u;
    if (lastSeenTimeStamp == 0 || from + MAX_SAMPLE_SPAN_NS < now)
        from = lastSeenTimeStamp == 0 ? now - nv_window_ns : now - MAX_SAMPLE_SPAN_NS;
    if (from >= now) {
        *processSamplesCount = 0;
        return NVML_ERROR_NOT_FOUND;
    }
    struct tf_sim_shm_proc_info p[TF_SIM_MAX_PROCS];
    int n = tf_sim_shm_processes(device->shm, from, now, p, TF_SIM_MAX_PROCS);
    if (n > TF_SIM_MAX_PROCS)
        n = TF_SIM_MAX_PROCS;
    int k = 0; /* processes with activity in the window */
    for (int i = 0; i < n; i++)
        if (p[i].window_sm_ns || p[i].window_copy_ns)
            p[k++] = p[i];
    if (k == 0) {
        *processSamplesCount = 0;
        return NVML_ERROR_NOT_FOUND;
    }
    if (!utilization_ || *processSamplesCount < (unsigned)k) {
        *processSamplesCount = (unsigned)k;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (int i = 0; i < k; i++) {
        nvmlProcessUtilizationSample_t *s = &utilization_[i];
        memset(s, 0, sizeof(*s));
        s->pid = p[i].pid;
        s->timeStamp = now / 1000u;
        s->smUtil = p[i].sm_util;
        s->memUtil = p[i].mem_util;
    }
    *processSamplesCount = (unsigned)k;
    return NVML_SUCCESS;
}

/* ---- Clocks, thermals, power, modes ---------------------------------------------------- */

static nvmlReturn_t clock_of(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!clock)
        return NVML_ERROR_INVALID_ARGUMENT;
    const struct tf_sim_hwspec *hw = device->cfg->hw;
    switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM:
        *clock = (unsigned)hw->clock_mhz;
        break;
    case NVML_CLOCK_MEM:
        *clock = (unsigned)hw->mem_clock_mhz;
        break;
    case NVML_CLOCK_VIDEO:
        *clock = (unsigned)hw->clock_mhz * 4 / 5;
        break;
    default:
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int *clock)
{
    return clock_of(device, type, clock);
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                       unsigned int *clock)
{
    return clock_of(device, type, clock);
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int *temp)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!temp || sensorType != NVML_TEMPERATURE_GPU)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned gpu, mem;
    utilization(device, &gpu, &mem);
    *temp = 30 + gpu * 40 / 100;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *power)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!power)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned gpu, mem;
    utilization(device, &gpu, &mem);
    unsigned limit = (unsigned)device->cfg->hw->power_w * 1000u;
    *power = limit * 15 / 100 + limit / 100 * 85 * gpu / 100;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device, unsigned int *limit)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!limit)
        return NVML_ERROR_INVALID_ARGUMENT;
    *limit = (unsigned)device->cfg->hw->power_w * 1000u;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int *limit)
{
    return nvmlDeviceGetPowerManagementLimit(device, limit);
}

nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t *mode)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!mode)
        return NVML_ERROR_INVALID_ARGUMENT;
    *mode = NVML_COMPUTEMODE_DEFAULT;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t *mode)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!mode)
        return NVML_ERROR_INVALID_ARGUMENT;
    *mode = NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}
