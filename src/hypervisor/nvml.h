/* SPDX-License-Identifier: Apache-2.0
 *
 * GPU discovery and sampling through NVML loaded with dlopen: the real libnvidia-ml.so.1 on a
 * GPU machine, the simulated one (src/sim) elsewhere; which one is decided by the library
 * search path or an explicit path (TF_NVML_LIBRARY or the hypervisor's --nvml flag). Nothing
 * links against NVML, so the hypervisor starts (with no GPUs) where NVML is absent.
 *
 * Each device is mapped to the core model table (tf_gpu_model_from_nvml) for its TFLOPS; a
 * device whose name is not in the table is reported with model "" and 0 TFLOPS (and is then
 * never chosen by placement, which needs capacity).
 *
 * A tf_hv_nvml is used by one thread at a time (the hypervisor's sampler); the caller owns it:
 * tf_hv_nvml_close (accepts NULL).
 */
#ifndef TF_HYPERVISOR_NVML_H
#define TF_HYPERVISOR_NVML_H

#include "hypervisor/state.h"
#include "sim/nvml_abi.h"

#include <stddef.h>
#include <stdint.h>

struct tf_hv_nvml;

/* dlopens LIB (NULL: $TF_NVML_LIBRARY, else "libnvidia-ml.so.1") and initialises NVML.
 * TF_ENOENT when the library cannot be loaded, TF_EIO when nvmlInit fails (ERR says why). */
int tf_hv_nvml_open(const char *lib, struct tf_hv_nvml **out, char *err, size_t errlen);
void tf_hv_nvml_close(struct tf_hv_nvml *n);

/* The path or name that was loaded. */
const char *tf_hv_nvml_library(const struct tf_hv_nvml *n);

/* The NUMA node of PCI device DOMAIN:BUS:DEVICE.0 from SYSFS/bus/pci/devices/.../numa_node
 * (SYSFS NULL or "": /sys), or -1 when the kernel reports none or the file is missing or
 * unreadable. */
int tf_hv_pci_numa_node(const char *sysfs, unsigned domain, unsigned bus, unsigned device);

/* Lists the devices (at most MAX), each with its NUMA node (tf_hv_pci_numa_node; the sysfs
 * root is $TF_SYSFS_ROOT when set, for tests and unusual mounts). */
int tf_hv_nvml_devices(struct tf_hv_nvml *n, struct tf_hv_device *out, int max, int *count,
                       char *err, size_t errlen);

#define TF_HV_MAX_PROCS 64

struct tf_hv_gpu_sample {
    int32_t util_bp;    /* GPU utilisation, basis points */
    int64_t mem_used;   /* bytes */
    int64_t mem_total;  /* bytes */
    double temperature; /* Celsius, 0 if unknown */
    double power_w;     /* watts, 0 if unknown */
    int nproc;          /* compute processes on the device (host PIDs) and their memory */
    struct {
        int pid;
        int64_t mem; /* bytes */
    } procs[TF_HV_MAX_PROCS];
};

/* Samples device INDEX. Fields NVML cannot report are left 0. */
int tf_hv_nvml_sample(struct tf_hv_nvml *n, int index, struct tf_hv_gpu_sample *out, char *err,
                      size_t errlen);

/* ---- MIG (nvml_mig.c): the partitions of the `partitioned` isolation mode ---------------- */

/* A MIG device: a GPU instance with the compute instance spanning it. */
struct tf_hv_mig {
    char uuid[96];        /* "MIG-..." */
    unsigned gi_id;       /* GPU instance id on its GPU */
    unsigned profile_id;  /* NVML GPU instance profile */
    unsigned start, size; /* placement, memory slices */
    unsigned slices;      /* compute slices */
    int64_t vram;         /* bytes */
};

#define TF_HV_MAX_MIG 8

/* GPU instance profile choice for a template of SLICES compute slices and VRAM bytes among
 * the device's profiles INFOS[0..N) (entries with sliceCount 0 are absent): the profile with
 * exactly SLICES slices whose memory is nearest VRAM, within an eighth of it (NVML reports a
 * little less than the nominal size). Its index, or -1. Pure. */
int tf_hv_mig_pick(const nvmlGpuInstanceProfileInfo_t *infos, int n, unsigned slices, int64_t vram);

/* The MIG devices of device INDEX (none when MIG is off). 0, or TF_ENOTSUP when the library
 * or the GPU has no MIG, TF_EIO. */
int tf_hv_nvml_mig_list(struct tf_hv_nvml *n, int index, struct tf_hv_mig *out, int max, int *count,
                        char *err, size_t errlen);
/* Creates a MIG device of SLICES compute slices and about VRAM bytes on device INDEX, turning
 * MIG mode on first when it is off: the GPU instance (tf_hv_mig_pick's profile) and a compute
 * instance over all of it. 0 and *OUT; TF_ENOSPC (no room left on the GPU), TF_ENOTSUP (no MIG,
 * or no such profile), TF_EIO (NVML failed: ERR says which call). */
int tf_hv_nvml_mig_create(struct tf_hv_nvml *n, int index, unsigned slices, int64_t vram,
                          struct tf_hv_mig *out, char *err, size_t errlen);
/* Destroys GPU instance GI_ID of device INDEX with its compute instances. 0 (also when it was
 * gone already), TF_EBUSY when a process still uses it, TF_EIO. */
int tf_hv_nvml_mig_destroy(struct tf_hv_nvml *n, int index, unsigned gi_id, char *err,
                           size_t errlen);

#endif
