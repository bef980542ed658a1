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

#endif
