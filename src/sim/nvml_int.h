/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to the simulated libnvidia-ml.so.1: the device handles of nvml.c, shared with the
 * MIG entry points of nvml_mig.c.
 */
#ifndef TF_SIM_NVML_INT_H
#define TF_SIM_NVML_INT_H

#include "sim/devshm.h"
#include "sim/migtab.h"
#include "sim/nvml_abi.h"
#include "sim/simcfg.h"

struct nvmlDevice_st {
    int index;
    const struct tf_sim_devcfg *cfg;
    struct tf_sim_shm *shm;
    char mig_path[520]; /* the device's MIG table (migtab.h) */
    /* A MIG device handle (nvml_mig.c): the GPU instance it stands for, 0 for a whole GPU. */
    uint32_t gi_id;
    struct nvmlDevice_st *parent;
};

/* The whole GPUs (valid while NVML is initialised). */
extern struct nvmlDevice_st tf__nv_dev[TF_SIM_MAX_DEVICES];
extern int tf__nv_ndev;

int tf__nv_initialized(void);
/* Validates a whole-GPU handle: UNINITIALIZED, INVALID_ARGUMENT or SUCCESS. */
nvmlReturn_t tf__nv_dev_check(nvmlDevice_t device);
/* Copies S into BUF of LENGTH: INSUFFICIENT_SIZE when it does not fit. */
nvmlReturn_t tf__nv_put_string(char *buf, unsigned int length, const char *s);

/* nvml_mig.c: whether DEVICE is a MIG device handle, and its UUID and memory. */
int tf__nv_is_mig(nvmlDevice_t device);
nvmlReturn_t tf__nv_mig_uuid(nvmlDevice_t device, char *uuid, unsigned int length);
nvmlReturn_t tf__nv_mig_memory(nvmlDevice_t device, nvmlMemory_t *memory);

#endif
