/* SPDX-License-Identifier: Apache-2.0
 *
 * The simulated GPU's MIG state: which GPU instances (each with at most one compute instance
 * spanning it) exist on a device, kept in a small file next to the device's region
 * (<shm_prefix><uuid>.mig) so that every process sees the same instances, as on hardware:
 * the hypervisor creates one through NVML, the workload's CUDA sees it as a device
 * (CUDA_VISIBLE_DEVICES=MIG-...).
 *
 * Instances follow the GPU model's partition profile (core/partition.h): a template takes its
 * compute and memory slices; its placement is in memory slices, aligned to its size (as MIG's
 * placements are), and the compute slices of all instances stay within the device's. NVML
 * profile ids come from the template's slices (1 compute slice with 2 memory slices is
 * 1_SLICE_REV2, otherwise the n-slice profile).
 *
 * The table functions are pure (no I/O); tf_sim_mig_lock / _store do the file's I/O under
 * flock(2). A file that is short, of another version or inconsistent with the device's
 * profile reads as an empty table with MIG off (and a warning from the caller).
 */
#ifndef TF_SIM_MIGTAB_H
#define TF_SIM_MIGTAB_H

#include "core/partition.h"

#include <stddef.h>
#include <stdint.h>

#define TF_SIM_MIG_MAX 8
#define TF_SIM_MIG_MAGIC UINT64_C(0x3147494d4d495346) /* "FSIMMIG1" */
#define TF_SIM_MIG_UUID_LEN 41                        /* "MIG-" + 36 + NUL */

struct tf_sim_mig_inst {
    uint32_t gi_id;       /* 1..TF_SIM_MIG_MAX; 0 = free entry (entry index = gi_id - 1) */
    uint32_t tpl;         /* template index in the device's profile */
    uint32_t start, size; /* placement, memory slices */
    uint32_t has_ci;      /* a compute instance (id 0) spans the GPU instance */
    uint32_t gen;         /* creation number: the MIG device UUID changes with it */
};

struct tf_sim_mig_table {
    uint64_t magic;
    uint32_t version;  /* 1 */
    uint32_t mode;     /* NVML_DEVICE_MIG_ENABLE or _DISABLE */
    uint32_t next_gen; /* */
    uint32_t reserved;
    struct tf_sim_mig_inst inst[TF_SIM_MIG_MAX];
};

/* An empty table, MIG off. */
void tf_sim_mig_init(struct tf_sim_mig_table *t);
/* 0 when T is a table of this version whose instances fit profile P; TF_ESTATE otherwise. */
int tf_sim_mig_check(const struct tf_sim_mig_table *t, const struct tf_partition_profile *p);

/* The NVML GPU instance profile id of template TPL, and the template of PROFILE_ID in P (its
 * index, or -1). */
unsigned tf_sim_mig_profile_id(const struct tf_partition_template *tpl);
int tf_sim_mig_template(const struct tf_partition_profile *p, unsigned profile_id);

/* How many more instances of template TPL fit T now. */
unsigned tf_sim_mig_capacity(const struct tf_sim_mig_table *t, const struct tf_partition_profile *p,
                             unsigned tpl);
/* Creates an instance of template TPL at the lowest free placement: 0 and *GI_ID, or
 * TF_ENOSPC (no placement, compute slices or entry left). */
int tf_sim_mig_create(struct tf_sim_mig_table *t, const struct tf_partition_profile *p,
                      unsigned tpl, uint32_t *gi_id);
/* The live instance GI_ID of T, or NULL. */
struct tf_sim_mig_inst *tf_sim_mig_find(struct tf_sim_mig_table *t, uint32_t gi_id);

/* The UUID of the MIG device of instance INST on the GPU whose UUID is PARENT:
 * "MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", derived from both (stable while it lives). */
void tf_sim_mig_uuid(const char *parent, const struct tf_sim_mig_inst *inst,
                     char out[TF_SIM_MIG_UUID_LEN]);

/* Opens (creating, 0600) the table file PATH and locks it (flock LOCK_EX), reading it into *T
 * (an unusable file reads as empty: *T initialised, *FRESH set). 0 and *FD, or TF_EIO with
 * ERR. P checks the content. */
int tf_sim_mig_lock(const char *path, const struct tf_partition_profile *p, int *fd,
                    struct tf_sim_mig_table *t, int *fresh, char *err, size_t errlen);
/* Writes *T back to the locked file FD; 0 or TF_EIO. */
int tf_sim_mig_store(int fd, const struct tf_sim_mig_table *t);
/* Unlocks and closes FD. */
void tf_sim_mig_unlock(int fd);

#endif
