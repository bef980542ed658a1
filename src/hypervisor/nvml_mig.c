/* SPDX-License-Identifier: Apache-2.0
 *
 * MIG through NVML (see nvml.h): the entry points are resolved from the loaded library on
 * first use; a library without them (an old driver) has no MIG.
 */
#include "hypervisor/nvml.h"
#include "hypervisor/nvml_int.h"

#include "common/err.h"
#include "common/strutil.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

typedef nvmlReturn_t ret;

struct tf_hv_mig_api {
    ret (*get_mode)(nvmlDevice_t, unsigned *, unsigned *);
    ret (*set_mode)(nvmlDevice_t, unsigned, nvmlReturn_t *);
    ret (*gi_profile)(nvmlDevice_t, unsigned, nvmlGpuInstanceProfileInfo_t *);
    ret (*gi_create)(nvmlDevice_t, unsigned, nvmlGpuInstance_t *);
    ret (*gi_list)(nvmlDevice_t, unsigned, nvmlGpuInstance_t *, unsigned *);
    ret (*gi_info)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t *);
    ret (*gi_destroy)(nvmlGpuInstance_t);
    ret (*ci_profile)(nvmlGpuInstance_t, unsigned, unsigned, nvmlComputeInstanceProfileInfo_t *);
    ret (*ci_create)(nvmlGpuInstance_t, unsigned, nvmlComputeInstance_t *);
    ret (*ci_list)(nvmlGpuInstance_t, unsigned, nvmlComputeInstance_t *, unsigned *);
    ret (*ci_destroy)(nvmlComputeInstance_t);
    ret (*max_mig)(nvmlDevice_t, unsigned *);
    ret (*mig_by_index)(nvmlDevice_t, unsigned, nvmlDevice_t *);
    ret (*mig_gi_id)(nvmlDevice_t, unsigned *);
    ret (*uuid)(nvmlDevice_t, char *, unsigned);
    ret (*memory)(nvmlDevice_t, nvmlMemory_t *);
};

static struct tf_hv_mig_api *api(struct tf_hv_nvml *n)
{
    struct tf_hv_mig_api **slot = tf__hv_nvml_mig(n);
    if (*slot)
        return *slot;
    struct tf_hv_mig_api *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    void *lib = tf__hv_nvml_lib(n);
    static const char *const names[] = {
        "nvmlDeviceGetMigMode",
        "nvmlDeviceSetMigMode",
        "nvmlDeviceGetGpuInstanceProfileInfo",
        "nvmlDeviceCreateGpuInstance",
        "nvmlDeviceGetGpuInstances",
        "nvmlGpuInstanceGetInfo",
        "nvmlGpuInstanceDestroy",
        "nvmlGpuInstanceGetComputeInstanceProfileInfo",
        "nvmlGpuInstanceCreateComputeInstance",
        "nvmlGpuInstanceGetComputeInstances",
        "nvmlComputeInstanceDestroy",
        "nvmlDeviceGetMaxMigDeviceCount",
        "nvmlDeviceGetMigDeviceHandleByIndex",
        "nvmlDeviceGetGpuInstanceId",
        "nvmlDeviceGetUUID",
        "nvmlDeviceGetMemoryInfo",
    };
    void **fn = (void **)a;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!(fn[i] = dlsym(lib, names[i]))) {
            free(a);
            return NULL;
        }
    return *slot = a;
}

int tf_hv_mig_pick(const nvmlGpuInstanceProfileInfo_t *infos, int n, unsigned slices, int64_t vram)
{
    int best = -1;
    int64_t best_d = vram / 8 + 1;
    for (int i = 0; i < n; i++) {
        if (infos[i].sliceCount != slices || !slices)
            continue;
        int64_t mem = (int64_t)(infos[i].memorySizeMB << 20),
                d = mem > vram ? mem - vram : vram - mem;
        if (d < best_d) {
            best = i;
            best_d = d;
        }
    }
    return best;
}

/* The device and the MIG API: 0, TF_ENOTSUP or TF_EIO. */
static int begin(struct tf_hv_nvml *n, int index, struct tf_hv_mig_api **a, nvmlDevice_t *d,
                 char *err, size_t errlen)
{
    if (!(*a = api(n))) {
        tf_errf(err, errlen, "%s has no MIG entry points", tf_hv_nvml_library(n));
        return TF_ENOTSUP;
    }
    if (!(*d = tf__hv_nvml_device(n, index))) {
        tf_errf(err, errlen, "NVML device %d is gone", index);
        return TF_EIO;
    }
    return 0;
}

static int fail(struct tf_hv_nvml *n, ret r, const char *call, int index, char *err, size_t errlen)
{
    tf_errf(err, errlen, "%s (device %d): %s", call, index, tf__hv_nvml_msg(n, r));
    if (r == NVML_ERROR_NOT_SUPPORTED)
        return TF_ENOTSUP;
    if (r == NVML_ERROR_INSUFFICIENT_RESOURCES)
        return TF_ENOSPC;
    if (r == NVML_ERROR_IN_USE)
        return TF_EBUSY;
    return TF_EIO;
}

int tf_hv_nvml_mig_list(struct tf_hv_nvml *n, int index, struct tf_hv_mig *out, int max, int *count,
                        char *err, size_t errlen)
{
    struct tf_hv_mig_api *a;
    nvmlDevice_t d;
    *count = 0;
    int rc = begin(n, index, &a, &d, err, errlen);
    if (rc)
        return rc;
    unsigned cur = 0, pend = 0, nmax = 0;
    ret r = a->get_mode(d, &cur, &pend);
    if (r)
        return fail(n, r, "nvmlDeviceGetMigMode", index, err, errlen);
    if (cur != NVML_DEVICE_MIG_ENABLE)
        return 0;
    if ((r = a->max_mig(d, &nmax)))
        return fail(n, r, "nvmlDeviceGetMaxMigDeviceCount", index, err, errlen);
    /* By GPU instance: each profile's instances, with the compute instance they hold. */
    for (unsigned prof = 0; prof < NVML_GPU_INSTANCE_PROFILE_COUNT; prof++) {
        nvmlGpuInstanceProfileInfo_t pi;
        if (a->gi_profile(d, prof, &pi) != NVML_SUCCESS)
            continue;
        nvmlGpuInstance_t gis[TF_HV_MAX_MIG * 2];
        unsigned ngi = 0;
        if (pi.instanceCount > TF_HV_MAX_MIG * 2)
            continue; /* more than this array could take: never on NVIDIA's profiles */
        if ((r = a->gi_list(d, pi.id, gis, &ngi)))
            return fail(n, r, "nvmlDeviceGetGpuInstances", index, err, errlen);
        for (unsigned g = 0; g < ngi && *count < max; g++) {
            nvmlGpuInstanceInfo_t gi;
            if ((r = a->gi_info(gis[g], &gi)))
                return fail(n, r, "nvmlGpuInstanceGetInfo", index, err, errlen);
            struct tf_hv_mig *m = &out[(*count)++];
            memset(m, 0, sizeof(*m));
            m->gi_id = gi.id;
            m->profile_id = pi.id;
            m->start = gi.placement.start;
            m->size = gi.placement.size;
            m->slices = pi.sliceCount;
            m->vram = (int64_t)(pi.memorySizeMB << 20);
        }
    }
    /* The MIG device UUIDs, by GPU instance id. */
    for (unsigned i = 0; i < nmax; i++) {
        nvmlDevice_t md;
        unsigned gid;
        char uuid[96];
        if (a->mig_by_index(d, i, &md) != NVML_SUCCESS || a->mig_gi_id(md, &gid) != NVML_SUCCESS ||
            a->uuid(md, uuid, sizeof(uuid)) != NVML_SUCCESS)
            continue;
        for (int k = 0; k < *count; k++)
            if (out[k].gi_id == gid)
                tf_strlcpy(out[k].uuid, uuid, sizeof(out[k].uuid));
    }
    return 0;
}

/* The compute instance profile of GI spanning all its SLICES, into *CIP. */
static ret ci_whole(struct tf_hv_mig_api *a, nvmlGpuInstance_t gi, unsigned slices,
                    nvmlComputeInstanceProfileInfo_t *cip)
{
    ret last = NVML_ERROR_NOT_SUPPORTED;
    for (unsigned p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; p++) {
        ret r = a->ci_profile(gi, p, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, cip);
        if (r == NVML_SUCCESS && cip->sliceCount == slices)
            return NVML_SUCCESS;
        if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_SUPPORTED && r != NVML_ERROR_INVALID_ARGUMENT)
            last = r;
    }
    return last;
}

int tf_hv_nvml_mig_create(struct tf_hv_nvml *n, int index, unsigned slices, int64_t vram,
                          struct tf_hv_mig *out, char *err, size_t errlen)
{
    struct tf_hv_mig_api *a;
    nvmlDevice_t d;
    int rc = begin(n, index, &a, &d, err, errlen);
    if (rc)
        return rc;
    unsigned cur = 0, pend = 0;
    ret r = a->get_mode(d, &cur, &pend), act = NVML_SUCCESS;
    if (r)
        return fail(n, r, "nvmlDeviceGetMigMode", index, err, errlen);
    if (cur != NVML_DEVICE_MIG_ENABLE) {
        if ((r = a->set_mode(d, NVML_DEVICE_MIG_ENABLE, &act)) || act)
            return fail(n, r ? r : act, "nvmlDeviceSetMigMode", index, err, errlen);
    }
    nvmlGpuInstanceProfileInfo_t infos[NVML_GPU_INSTANCE_PROFILE_COUNT];
    memset(infos, 0, sizeof(infos));
    for (unsigned p = 0; p < NVML_GPU_INSTANCE_PROFILE_COUNT; p++)
        if (a->gi_profile(d, p, &infos[p]) != NVML_SUCCESS)
            memset(&infos[p], 0, sizeof(infos[p]));
    int pick = tf_hv_mig_pick(infos, NVML_GPU_INSTANCE_PROFILE_COUNT, slices, vram);
    if (pick < 0) {
        tf_errf(err, errlen, "device %d has no GPU instance profile of %u slices and %lld MiB",
                index, slices, (long long)(vram >> 20));
        return TF_ENOTSUP;
    }
    nvmlGpuInstance_t gi;
    if ((r = a->gi_create(d, infos[pick].id, &gi)))
        return fail(n, r, "nvmlDeviceCreateGpuInstance", index, err, errlen);
    nvmlComputeInstanceProfileInfo_t cip;
    nvmlComputeInstance_t ci;
    nvmlGpuInstanceInfo_t gii;
    if ((r = ci_whole(a, gi, infos[pick].sliceCount, &cip)) ||
        (r = a->ci_create(gi, cip.id, &ci)) || (r = a->gi_info(gi, &gii))) {
        rc = fail(n, r, "creating the compute instance", index, err, errlen);
        a->gi_destroy(gi);
        return rc;
    }
    memset(out, 0, sizeof(*out));
    out->gi_id = gii.id;
    out->profile_id = infos[pick].id;
    out->start = gii.placement.start;
    out->size = gii.placement.size;
    out->slices = infos[pick].sliceCount;
    out->vram = (int64_t)(infos[pick].memorySizeMB << 20);
    struct tf_hv_mig all[TF_HV_MAX_MIG];
    int cnt = 0;
    if ((rc = tf_hv_nvml_mig_list(n, index, all, TF_HV_MAX_MIG, &cnt, err, errlen)))
        return rc;
    for (int k = 0; k < cnt; k++)
        if (all[k].gi_id == out->gi_id)
            tf_strlcpy(out->uuid, all[k].uuid, sizeof(out->uuid));
    if (!out->uuid[0]) {
        tf_errf(err, errlen, "device %d: GPU instance %u has no MIG device", index, out->gi_id);
        return TF_EIO;
    }
    return 0;
}

int tf_hv_nvml_mig_destroy(struct tf_hv_nvml *n, int index, unsigned gi_id, char *err,
                           size_t errlen)
{
    struct tf_hv_mig_api *a;
    nvmlDevice_t d;
    int rc = begin(n, index, &a, &d, err, errlen);
    if (rc)
        return rc;
    for (unsigned prof = 0; prof < NVML_GPU_INSTANCE_PROFILE_COUNT; prof++) {
        nvmlGpuInstanceProfileInfo_t pi;
        nvmlGpuInstance_t gis[TF_HV_MAX_MIG * 2];
        unsigned ngi = 0;
        if (a->gi_profile(d, prof, &pi) != NVML_SUCCESS || pi.instanceCount > TF_HV_MAX_MIG * 2 ||
            a->gi_list(d, pi.id, gis, &ngi) != NVML_SUCCESS)
            continue;
        for (unsigned g = 0; g < ngi; g++) {
            nvmlGpuInstanceInfo_t gi;
            if (a->gi_info(gis[g], &gi) != NVML_SUCCESS || gi.id != gi_id)
                continue;
            for (unsigned cp = 0; cp < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; cp++) {
                nvmlComputeInstance_t cis[TF_HV_MAX_MIG];
                unsigned nci = 0;
                if (a->ci_list(gis[g], cp, cis, &nci) != NVML_SUCCESS)
                    continue;
                for (unsigned c = 0; c < nci && c < TF_HV_MAX_MIG; c++) {
                    ret r = a->ci_destroy(cis[c]);
                    if (r)
                        return fail(n, r, "nvmlComputeInstanceDestroy", index, err, errlen);
                }
            }
            ret r = a->gi_destroy(gis[g]);
            return r ? fail(n, r, "nvmlGpuInstanceDestroy", index, err, errlen) : 0;
        }
    }
    return 0; /* gone already */
}
