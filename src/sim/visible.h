/* SPDX-License-Identifier: Apache-2.0
 *
 * CUDA_VISIBLE_DEVICES as the real driver reads it: which of the machine's devices a
 * process sees through the driver API, and in which order. Used by the simulated
 * libcuda.so.1 at cuInit; NVML ignores the variable (as on hardware) and never calls this.
 *
 * The value is a comma-separated list; every entry has its leading white space skipped.
 * The first entry decides the kind of the list:
 *   - indices (the first entry does not start with "GPU-" or "MIG-"): each entry is read
 *     like strtoul in base 10, so an optional sign and digits, anything after them ignored
 *     ("1gpu" is 1); no digits, a negative value or an index >= the device count is invalid;
 *   - UUIDs ("GPU-..."): an entry names the one device whose UUID starts with it (the full
 *     UUID or any unique prefix, "GPU-8932f937"); an entry that is not "GPU-...", matches no
 *     device or matches several is invalid;
 *   - MIG devices ("MIG-..."): an entry names the one MIG device (of the list the caller
 *     gives: tf_sim_visible_parse_mig) whose UUID starts with it; as with the real driver, a
 *     process sees one MIG device at most: entries after the first are ignored.
 * Parsing stops at the first invalid entry: the devices named before it are visible, the
 * rest of the list is ignored ("0,2,-1,1" shows devices 0 and 2). A device named twice
 * before that point makes the whole list name no device. Unset means every device in
 * machine order; an empty value (or one whose first entry is invalid) hides every device,
 * and then cuInit fails with CUDA_ERROR_NO_DEVICE, as on hardware.
 *
 * Pure and thread-safe: no I/O, no allocation.
 */
#ifndef TF_SIM_VISIBLE_H
#define TF_SIM_VISIBLE_H

#include <stddef.h>

#include "sim/simcfg.h"

struct tf_sim_visible {
    int n;                        /* visible devices: CUDA ordinals 0..n-1 */
    int phys[TF_SIM_MAX_DEVICES]; /* ordinal -> index in the machine's device list */
    int mig[TF_SIM_MAX_DEVICES];  /* ordinal -> index in the MIG list, -1 for a whole GPU */
    /* Why devices were left out: "" when the whole list was used, else e.g.
     * "entry 3 (\"-1\") is not the index of a device; it and the rest are ignored". */
    char note[160];
};

/* Applies CUDA_VISIBLE_DEVICES value SPEC (NULL: the variable is unset) to the machine's
 * NDEV devices (0..TF_SIM_MAX_DEVICES), whose UUID strings ("GPU-...") are UUIDS[0..NDEV),
 * filling *OUT. Never fails. */
void tf_sim_visible_parse(const char *spec, const char *const *uuids, int ndev,
                          struct tf_sim_visible *out);
/* The same with the machine's MIG devices: MIGS[0..NMIG) their UUIDs ("MIG-..."), PARENT[i]
 * the index of the GPU holding MIG device i (its phys). */
void tf_sim_visible_parse_mig(const char *spec, const char *const *uuids, int ndev,
                              const char *const *migs, const int *parent, int nmig,
                              struct tf_sim_visible *out);

#endif
