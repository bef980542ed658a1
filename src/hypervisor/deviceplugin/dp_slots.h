/* SPDX-License-Identifier: Apache-2.0
 *
 * The device plugin's pure logic (no I/O): the vGPU slot list the kubelet sees, the slot ID
 * scheme, and the decisions behind Allocate and GetPreferredAllocation.
 *
 * The hypervisor advertises the extended resource tensor-fusion.ai/vgpu as SLOTS virtual
 * devices per physical GPU. A slot is a counting token, not a GPU: which GPUs a pod really
 * uses is decided by the scheduler extender (annotation tensor-fusion.ai/gpu-ids), so the
 * slots only bound how many TensorFusion containers a node admits (SLOTS per healthy GPU)
 * and make a GPU's health visible to the kubelet.
 *
 * Slot IDs are "<GPU uuid>::<k>", k = 0..SLOTS-1 in decimal (the convention of NVIDIA's own
 * shared-GPU plugin), e.g. "GPU-fef8089b-4820-abfc-e83e-94318197576e::3". The kubelet caps
 * an ID at 63 characters, so a GPU whose uuid is longer than TF_DP_UUID_MAX is not offered.
 * A slot is "Healthy" while NVML discovery reports its GPU present, "Unhealthy" once the GPU
 * has disappeared (the kubelet then stops admitting pods on it). A slot carries its GPU's
 * NUMA node as TopologyInfo when it is known, for the kubelet's Topology Manager.
 *
 * A tf_dp_list is owned by its creator: tf_dp_list_free. Functions are thread-safe on
 * distinct lists; a list is immutable after tf_dp_list_build.
 */
#ifndef TF_HYPERVISOR_DP_SLOTS_H
#define TF_HYPERVISOR_DP_SLOTS_H

#include <stdbool.h>
#include <stddef.h>

#define TF_DP_RESOURCE "tensor-fusion.ai/vgpu"
#define TF_DP_API_VERSION "v1beta1"
#define TF_DP_HEALTHY "Healthy"
#define TF_DP_UNHEALTHY "Unhealthy"
#define TF_DP_ID_MAX 63     /* kubelet limit on a device ID */
#define TF_DP_MAX_SLOTS 256 /* per GPU: k has at most 3 digits */
#define TF_DP_MAX_GPUS 64
#define TF_DP_UUID_MAX (TF_DP_ID_MAX - 2 - 3)
/* Environment variable Allocate sets: the slot IDs the kubelet assigned, comma-separated. */
#define TF_DP_ENV_IDS "TF_VGPU_IDS"

/* A physical GPU as the inventory reports it. */
struct tf_dp_gpu {
    const char *uuid;
    bool healthy;
    int numa; /* NUMA node, -1 when unknown (no topology is advertised then) */
};

struct tf_dp_slot {
    char id[TF_DP_ID_MAX + 1];
    int gpu; /* index into the list's GPUs */
    int k;   /* slot number on that GPU */
    bool healthy;
};

struct tf_dp_list {
    int slots_per_gpu;
    int ngpu;
    char uuids[TF_DP_MAX_GPUS][TF_DP_UUID_MAX + 1];
    int numa[TF_DP_MAX_GPUS]; /* per GPU, -1 unknown */
    int nslot; /* ngpu * slots_per_gpu; slot i is GPU i / slots_per_gpu, k = i % slots */
    struct tf_dp_slot *slot; /* owned */
    int skipped;             /* GPUs left out (uuid too long or beyond TF_DP_MAX_GPUS) */
};

/* Builds the list for GPUS (in their order) with SLOTS (1..TF_DP_MAX_SLOTS) per GPU into
 * *OUT (overwritten; free with tf_dp_list_free). A GPU whose uuid is empty, too long or
 * repeats an earlier one is left out and counted in OUT->skipped. TF_EINVAL (bad SLOTS),
 * TF_ENOMEM. */
int tf_dp_list_build(const struct tf_dp_gpu *gpus, int ngpu, int slots, struct tf_dp_list *out);
void tf_dp_list_free(struct tf_dp_list *l);
/* Same slots with the same health and NUMA nodes (what a ListAndWatch client would see). */
bool tf_dp_list_equal(const struct tf_dp_list *a, const struct tf_dp_list *b);
/* Number of healthy slots. */
int tf_dp_list_healthy(const struct tf_dp_list *l);

/* Writes slot ID "<uuid>::<k>" into BUF (capacity TF_DP_ID_MAX + 1). TF_ERANGE when the
 * uuid is longer than TF_DP_UUID_MAX or K is out of 0..TF_DP_MAX_SLOTS-1. */
int tf_dp_slot_id(const char *uuid, int k, char *buf, size_t len);
/* The index in L of slot ID, or -1 when L has no such slot. */
int tf_dp_list_find(const struct tf_dp_list *l, const char *id);

/* Allocate for one container: IDS (N of them) must be distinct, known and healthy slots.
 * Writes the value of TF_DP_ENV_IDS (the IDs joined by ',') into ENV (capacity LEN).
 * TF_EINVAL (none, or a repeated ID), TF_ENOENT (unknown ID), TF_ESTATE (unhealthy slot),
 * TF_ERANGE (ENV too small); ERR names the offending ID. */
int tf_dp_allocate(const struct tf_dp_list *l, const char *const *ids, size_t n, char *env,
                   size_t len, char *err, size_t errlen);

/* GetPreferredAllocation for one container: chooses SIZE slots, all known IDs of MUST (NMUST;
 * the kubelet already holds them) first, then healthy ones of AVAIL (NAVAIL) spreading over
 * GPUs: each next slot comes from the GPU with the fewest slots chosen so far, ties broken
 * by the most slots still available there, then by GPU order — so a container asking for n
 * slots gets them on n GPUs when it can, as the extender gives it n distinct GPUs. Unknown
 * and repeated IDs are ignored. Writes indices into L's slots into OUT (capacity
 * min(SIZE, L->nslot)) and their count into *NOUT (less than SIZE when there are not
 * enough). TF_EINVAL when SIZE < 0, TF_ENOMEM. */
int tf_dp_preferred(const struct tf_dp_list *l, const char *const *avail, size_t navail,
                    const char *const *must, size_t nmust, int size, int *out, int *nout);

#endif
