/* SPDX-License-Identifier: Apache-2.0
 *
 * MIG in the simulated libnvidia-ml.so.1: MIG mode, GPU instances (each with at most one
 * compute instance spanning it) and MIG device handles, over the device's MIG table
 * (migtab.h), which every process shares. A GPU whose model has no partition profile
 * (core/partition.h) answers NVML_ERROR_NOT_SUPPORTED, as a GPU without MIG does.
 * Handles: a GPU instance, compute instance or MIG device handle names (device, GPU instance
 * id) and stays valid while that instance lives; every call re-reads the table under its lock.
 */
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#pragma GCC visibility push(default)
#include "sim/nvml_abi.h"
#pragma GCC visibility pop

#include "sim/nvml_int.h"

#include "common/err.h"
#include "common/log.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct nvmlGpuInstance_st {
    struct nvmlDevice_st *dev;
    uint32_t gi_id;
};

struct nvmlComputeInstance_st {
    struct nvmlGpuInstance_st *gi;
};

static struct nvmlGpuInstance_st nv_gi[TF_SIM_MAX_DEVICES][TF_SIM_MIG_MAX];
static struct nvmlComputeInstance_st nv_ci[TF_SIM_MAX_DEVICES][TF_SIM_MIG_MAX];
static struct nvmlDevice_st nv_mig[TF_SIM_MAX_DEVICES][TF_SIM_MIG_MAX];

/* The device's MIG table, locked: SUCCESS with *FD, *T and *P, or the NVML error. */
static nvmlReturn_t lock_table(struct nvmlDevice_st *d, struct tf_partition_profile *p, int *fd,
                               struct tf_sim_mig_table *t)
{
    if (tf_partition_builtin(d->cfg->model, p) != 0)
        return NVML_ERROR_NOT_SUPPORTED;
    char err[600];
    int fresh;
    if (tf_sim_mig_lock(d->mig_path, p, fd, t, &fresh, err, sizeof(err))) {
        tf_log(TF_LOG_ERROR, "sim-nvml", "MIG table: %s", err);
        return NVML_ERROR_UNKNOWN;
    }
    return NVML_SUCCESS;
}

static nvmlReturn_t store_unlock(int fd, const struct tf_sim_mig_table *t)
{
    int rc = tf_sim_mig_store(fd, t);
    tf_sim_mig_unlock(fd);
    return rc ? NVML_ERROR_UNKNOWN : NVML_SUCCESS;
}

static struct nvmlGpuInstance_st *gi_handle(struct nvmlDevice_st *d, uint32_t gi_id)
{
    struct nvmlGpuInstance_st *g = &nv_gi[d->index][gi_id - 1];
    g->dev = d;
    g->gi_id = gi_id;
    return g;
}

/* Checks GI: SUCCESS with the device's table locked (*FD, *T, *P) and *IN its instance. */
static nvmlReturn_t gi_lock(nvmlGpuInstance_t gi, struct tf_partition_profile *p, int *fd,
                            struct tf_sim_mig_table *t, struct tf_sim_mig_inst **in)
{
    if (!tf__nv_initialized())
        return NVML_ERROR_UNINITIALIZED;
    const struct nvmlGpuInstance_st *base = &nv_gi[0][0];
    if (!gi || gi < base || gi >= base + TF_SIM_MAX_DEVICES * TF_SIM_MIG_MAX || !gi->dev ||
        tf__nv_dev_check(gi->dev))
        return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t rc = lock_table(gi->dev, p, fd, t);
    if (rc)
        return rc;
    if (!(*in = tf_sim_mig_find(t, gi->gi_id))) {
        tf_sim_mig_unlock(*fd);
        return NVML_ERROR_INVALID_ARGUMENT; /* destroyed */
    }
    return NVML_SUCCESS;
}

/* The compute instance profile id spanning SLICES compute slices. */
static unsigned ci_profile(unsigned slices)
{
    static const unsigned ids[] = {0,
                                   NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
                                   NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE,
                                   NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE,
                                   NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE,
                                   NVML_COMPUTE_INSTANCE_PROFILE_COUNT,
                                   NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE,
                                   NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE,
                                   NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE};
    return slices < sizeof(ids) / sizeof(ids[0]) && slices ? ids[slices]
                                                           : NVML_COMPUTE_INSTANCE_PROFILE_COUNT;
}

static unsigned sm_share(const struct nvmlDevice_st *d, const struct tf_partition_profile *p,
                         unsigned tpl)
{
    return (unsigned)(d->cfg->sm_count * p->templates[tpl].compute_slots / p->compute_total);
}

/* ---- MIG mode ---------------------------------------------------------------------------- */

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                  unsigned int *pendingMode)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!currentMode || !pendingMode)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct tf_partition_profile p;
    struct tf_sim_mig_table t;
    int fd;
    if ((rc = lock_table(device, &p, &fd, &t)))
        return rc;
    tf_sim_mig_unlock(fd);
    *currentMode = *pendingMode = t.mode;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                  nvmlReturn_t *activationStatus)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!activationStatus || (mode != NVML_DEVICE_MIG_ENABLE && mode != NVML_DEVICE_MIG_DISABLE))
        return NVML_ERROR_INVALID_ARGUMENT;
    struct tf_partition_profile p;
    struct tf_sim_mig_table t;
    int fd;
    if ((rc = lock_table(device, &p, &fd, &t)))
        return rc;
    if (t.mode == mode) {
        tf_sim_mig_unlock(fd);
        *activationStatus = NVML_SUCCESS;
        return NVML_SUCCESS;
    }
    bool busy = tf_sim_shm_processes(device->shm, 0, 0, NULL, 0) > 0;
    for (unsigned i = 0; i < TF_SIM_MIG_MAX; i++)
        busy = busy || t.inst[i].gi_id;
    if (busy) { /* instances left, or CUDA processes on the GPU */
        tf_sim_mig_unlock(fd);
        *activationStatus = NVML_ERROR_IN_USE;
        return NVML_ERROR_IN_USE;
    }
    t.mode = mode;
    *activationStatus = NVML_SUCCESS;
    return store_unlock(fd, &t);
}

/* ---- GPU instances ----------------------------------------------------------------------- */

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                 nvmlGpuInstanceProfileInfo_t *info)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    struct tf_partition_profile p;
    if (!info || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT)
        return NVML_ERROR_INVALID_ARGUMENT;
    int tpl = tf_partition_builtin(device->cfg->model, &p) ? -1 : tf_sim_mig_template(&p, profile);
    if (tpl < 0)
        return NVML_ERROR_NOT_SUPPORTED;
    const struct tf_partition_template *pt = &p.templates[tpl];
    memset(info, 0, sizeof(*info));
    info->id = profile;
    info->sliceCount = pt->compute_slots;
    info->instanceCount = p.memory_total / pt->memory_slots;
    if (info->instanceCount * pt->compute_slots > p.compute_total)
        info->instanceCount = p.compute_total / pt->compute_slots;
    info->multiprocessorCount = sm_share(device, &p, (unsigned)tpl);
    info->copyEngineCount = pt->compute_slots;
    info->memorySizeMB = (unsigned long long)pt->vram_bytes >> 20;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profileId,
                                                       unsigned int *count)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct tf_partition_profile p;
    struct tf_sim_mig_table t;
    int fd;
    if ((rc = lock_table(device, &p, &fd, &t)))
        return rc;
    tf_sim_mig_unlock(fd);
    int tpl = tf_sim_mig_template(&p, profileId);
    if (tpl < 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (t.mode != NVML_DEVICE_MIG_ENABLE)
        return NVML_ERROR_NOT_SUPPORTED;
    *count = tf_sim_mig_capacity(&t, &p, (unsigned)tpl);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                         nvmlGpuInstance_t *gpuInstance)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!gpuInstance)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct tf_partition_profile p;
    struct tf_sim_mig_table t;
    int fd;
    if ((rc = lock_table(device, &p, &fd, &t)))
        return rc;
    int tpl = tf_sim_mig_template(&p, profileId);
    uint32_t id;
    if (tpl < 0 || t.mode != NVML_DEVICE_MIG_ENABLE) {
        tf_sim_mig_unlock(fd);
        return tpl < 0 ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
    }
    if (tf_sim_mig_create(&t, &p, (unsigned)tpl, &id)) {
        tf_sim_mig_unlock(fd);
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    if ((rc = store_unlock(fd, &t)))
        return rc;
    *gpuInstance = gi_handle(device, id);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                       nvmlGpuInstance_t *gpuInstances, unsigned int *count)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!count || !gpuInstances)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct tf_partition_profile p;
    struct tf_sim_mig_table t;
    int fd;
    if ((rc = lock_table(device, &p, &fd, &t)))
        return rc;
    tf_sim_mig_unlock(fd);
    int tpl = tf_sim_mig_template(&p, profileId);
    if (tpl < 0)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (t.mode != NVML_DEVICE_MIG_ENABLE)
        return NVML_ERROR_NOT_SUPPORTED;
    unsigned n = 0;
    for (unsigned i = 0; i < TF_SIM_MIG_MAX; i++)
        if (t.inst[i].gi_id && t.inst[i].tpl == (unsigned)tpl)
            gpuInstances[n++] = gi_handle(device, t.inst[i].gi_id);
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info)
{
    struct tf_partition_profile p;
    struct tf_sim_mig_table t;
    struct tf_sim_mig_inst *in;
    int fd;
    nvmlReturn_t rc = info ? gi_lock(gpuInstance, &p, &fd, &t, &in) : NVML_ERROR_INVALID_ARGUMENT;
    if (rc)
        return rc;
    tf_sim_mig_unlock(fd);
    memset(info, 0, sizeof(*info));
    info->device = gpuInstance->dev;
    info->id = in->gi_id;
    info->profileId = tf_sim_mig_profile_id(&p.templates[in->tpl]);
    info->placement.start = in->start;
    info->placement.size = in->size;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance)
{
    struct tf_partition_profile p;
    struct tf_sim_mig_table t;
    struct tf_sim_mig_inst *in;
    int fd;
    nvmlReturn_t rc = gi_lock(gpuInstance, &p, &fd, &t, &in);
    if (rc)
        return rc;
    if (in->has_ci) {
        tf_sim_mig_unlock(fd);
        return NVML_ERROR_IN_USE;
    }
    memset(in, 0, sizeof(*in));
    return store_unlock(fd, &t);
}

/* ---- compute instances ------------------------------------------------------------------- */

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance,
                                                          unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t *info)
{
    struct tf_partition_profile p;
    struct tf_sim_mig_table t;
    struct tf_sim_mig_inst *in;
    int fd;
    nvmlReturn_t rc = info ? gi_lock(gpuInstance, &p, &fd, &t, &in) : NVML_ERROR_INVALID_ARGUMENT;
    if (rc)
        return rc;
    tf_sim_mig_unlock(fd);
    unsigned slices = p.templates[in->tpl].compute_slots;
    if (engProfile != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED || profile != ci_profile(slices))
        return NVML_ERROR_NOT_SUPPORTED; /* only the instance spanning the whole GPU instance */
    memset(info, 0, sizeof(*info));
    info->id = profile;
    info->sliceCount = slices;
    info->instanceCount = 1;
    info->multiprocessorCount = sm_share(gpuInstance->dev, &p, in->tpl);
    info->sharedCopyEngineCount = slices;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance,
                                                  unsigned int profileId,
                                                  nvmlComputeInstance_t *computeInstance)
{
    struct tf_partition_profile p;
    struct tf_sim_mig_table t;
    struct tf_sim_mig_inst *in;
    int fd;
    nvmlReturn_t rc =
        computeInstance ? gi_lock(gpuInstance, &p, &fd, &t, &in) : NVML_ERROR_INVALID_ARGUMENT;
    if (rc)
        return rc;
    if (profileId != ci_profile(p.templates[in->tpl].compute_slots) || in->has_ci) {
        tf_sim_mig_unlock(fd);
        return in->has_ci ? NVML_ERROR_INSUFFICIENT_RESOURCES : NVML_ERROR_NOT_SUPPORTED;
    }
    in->has_ci = 1;
    if ((rc = store_unlock(fd, &t)))
        return rc;
    struct nvmlComputeInstance_st *ci = &nv_ci[gpuInstance->dev->index][in->gi_id - 1];
    ci->gi = gpuInstance;
    *computeInstance = ci;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance,
                                                unsigned int profileId,
                                                nvmlComputeInstance_t *computeInstances,
                                                unsigned int *count)
{
    struct tf_partition_profile p;
    struct tf_sim_mig_table t;
    struct tf_sim_mig_inst *in;
    int fd;
    nvmlReturn_t rc = computeInstances && count ? gi_lock(gpuInstance, &p, &fd, &t, &in)
                                                : NVML_ERROR_INVALID_ARGUMENT;
    if (rc)
        return rc;
    tf_sim_mig_unlock(fd);
    *count = 0;
    if (in->has_ci && profileId == ci_profile(p.templates[in->tpl].compute_slots)) {
        struct nvmlComputeInstance_st *ci = &nv_ci[gpuInstance->dev->index][in->gi_id - 1];
        ci->gi = gpuInstance;
        computeInstances[(*count)++] = ci;
    }
    return NVML_SUCCESS;
}

/* Checks CI: SUCCESS with its GPU instance's table locked. */
static nvmlReturn_t ci_lock(nvmlComputeInstance_t ci, struct tf_partition_profile *p, int *fd,
                            struct tf_sim_mig_table *t, struct tf_sim_mig_inst **in)
{
    const struct nvmlComputeInstance_st *base = &nv_ci[0][0];
    if (!ci || ci < base || ci >= base + TF_SIM_MAX_DEVICES * TF_SIM_MIG_MAX || !ci->gi)
        return tf__nv_initialized() ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED;
    nvmlReturn_t rc = gi_lock(ci->gi, p, fd, t, in);
    if (rc == NVML_SUCCESS && !(*in)->has_ci) {
        tf_sim_mig_unlock(*fd);
        return NVML_ERROR_INVALID_ARGUMENT;
    }
    return rc;
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                           nvmlComputeInstanceInfo_t *info)
{
    struct tf_partition_profile p;
    struct tf_sim_mig_table t;
    struct tf_sim_mig_inst *in;
    int fd;
    nvmlReturn_t rc =
        info ? ci_lock(computeInstance, &p, &fd, &t, &in) : NVML_ERROR_INVALID_ARGUMENT;
    if (rc)
        return rc;
    tf_sim_mig_unlock(fd);
    memset(info, 0, sizeof(*info));
    info->device = computeInstance->gi->dev;
    info->gpuInstance = computeInstance->gi;
    info->id = 0;
    info->profileId = ci_profile(p.templates[in->tpl].compute_slots);
    info->placement.start = 0;
    info->placement.size = p.templates[in->tpl].compute_slots;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance)
{
    struct tf_partition_profile p;
    struct tf_sim_mig_table t;
    struct tf_sim_mig_inst *in;
    int fd;
    nvmlReturn_t rc = ci_lock(computeInstance, &p, &fd, &t, &in);
    if (rc)
        return rc;
    in->has_ci = 0;
    return store_unlock(fd, &t);
}

/* ---- MIG devices ------------------------------------------------------------------------- */

int tf__nv_is_mig(nvmlDevice_t device)
{
    const struct nvmlDevice_st *base = &nv_mig[0][0];
    return device >= base && device < base + TF_SIM_MAX_DEVICES * TF_SIM_MIG_MAX && device->parent;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    struct tf_partition_profile p;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = tf_partition_builtin(device->cfg->model, &p) ? 0 : p.compute_total;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t *migDevice)
{
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc)
        return rc;
    if (!migDevice)
        return NVML_ERROR_INVALID_ARGUMENT;
    struct tf_partition_profile p;
    struct tf_sim_mig_table t;
    int fd;
    if ((rc = lock_table(device, &p, &fd, &t)))
        return rc;
    tf_sim_mig_unlock(fd);
    if (t.mode != NVML_DEVICE_MIG_ENABLE)
        return NVML_ERROR_NOT_SUPPORTED;
    for (unsigned i = 0, n = 0; i < TF_SIM_MIG_MAX; i++) {
        if (!t.inst[i].gi_id || !t.inst[i].has_ci || n++ != index)
            continue;
        struct nvmlDevice_st *m = &nv_mig[device->index][i];
        *m = *device;
        m->parent = device;
        m->gi_id = t.inst[i].gi_id;
        *migDevice = m;
        return NVML_SUCCESS;
    }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int *isMigDevice)
{
    if (!isMigDevice)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (tf__nv_is_mig(device)) {
        *isMigDevice = 1;
        return tf__nv_initialized() ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
    }
    nvmlReturn_t rc = tf__nv_dev_check(device);
    if (rc == NVML_SUCCESS)
        *isMigDevice = 0;
    return rc;
}

/* Checks MIG device handle DEVICE against its GPU's table: SUCCESS with its instance copied
 * to *IN and the profile in *P. */
static nvmlReturn_t mig_inst(nvmlDevice_t device, struct tf_partition_profile *p,
                             struct tf_sim_mig_inst *in)
{
    if (!tf__nv_is_mig(device))
        return tf__nv_dev_check(device) ? tf__nv_dev_check(device) : NVML_ERROR_NOT_SUPPORTED;
    if (!tf__nv_initialized())
        return NVML_ERROR_UNINITIALIZED;
    struct tf_sim_mig_table t;
    int fd;
    nvmlReturn_t rc = lock_table(device->parent, p, &fd, &t);
    if (rc)
        return rc;
    tf_sim_mig_unlock(fd);
    struct tf_sim_mig_inst *f = tf_sim_mig_find(&t, device->gi_id);
    if (!f || !f->has_ci)
        return NVML_ERROR_INVALID_ARGUMENT; /* the instance is gone */
    *in = *f;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id)
{
    struct tf_partition_profile p;
    struct tf_sim_mig_inst in;
    nvmlReturn_t rc = id ? mig_inst(device, &p, &in) : NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        *id = in.gi_id;
    return rc;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id)
{
    struct tf_partition_profile p;
    struct tf_sim_mig_inst in;
    nvmlReturn_t rc = id ? mig_inst(device, &p, &in) : NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        *id = 0;
    return rc;
}

nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                          nvmlDevice_t *device)
{
    struct tf_partition_profile p;
    struct tf_sim_mig_inst in;
    nvmlReturn_t rc = device ? mig_inst(migDevice, &p, &in) : NVML_ERROR_INVALID_ARGUMENT;
    if (rc == NVML_SUCCESS)
        *device = migDevice->parent;
    return rc;
}

nvmlReturn_t tf__nv_mig_uuid(nvmlDevice_t device, char *uuid, unsigned int length)
{
    struct tf_partition_profile p;
    struct tf_sim_mig_inst in;
    nvmlReturn_t rc = mig_inst(device, &p, &in);
    if (rc)
        return rc;
    char u[TF_SIM_MIG_UUID_LEN];
    tf_sim_mig_uuid(device->parent->cfg->uuid_str, &in, u);
    return tf__nv_put_string(uuid, length, u);
}

nvmlReturn_t tf__nv_mig_memory(nvmlDevice_t device, nvmlMemory_t *memory)
{
    struct tf_partition_profile p;
    struct tf_sim_mig_inst in;
    nvmlReturn_t rc = memory ? mig_inst(device, &p, &in) : NVML_ERROR_INVALID_ARGUMENT;
    if (rc)
        return rc;
    memory->total = (unsigned long long)p.templates[in.tpl].vram_bytes;
    memory->used = 0;
    /* What CUDA processes on the MIG device hold: its own region (CUDA_VISIBLE_DEVICES=MIG-). */
    char u[TF_SIM_MIG_UUID_LEN], path[600], err[256];
    const struct nvmlDevice_st *g = device->parent;
    size_t plen = strlen(g->mig_path) - strlen(g->cfg->uuid_str) - 4;
    tf_sim_mig_uuid(g->cfg->uuid_str, &in, u);
    snprintf(path, sizeof(path), "%.*s%s", (int)plen, g->mig_path, u);
    struct tf_sim_shm *shm;
    if (access(path, F_OK) == 0 &&
        tf_sim_shm_open(path, u, g->cfg->model->name, 0, &shm, NULL, err, sizeof(err)) == 0) {
        struct tf_sim_shm_mem m;
        tf_sim_shm_mem_info(shm, &m);
        memory->used = m.used < memory->total ? m.used : memory->total;
        tf_sim_shm_close(shm);
    }
    memory->free = memory->total - memory->used;
    return NVML_SUCCESS;
}
