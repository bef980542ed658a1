/* SPDX-License-Identifier: Apache-2.0
 *
 * Placement of one local workload on this machine's GPUs through the core allocator
 * (src/core/alloc.h): the machine becomes a one-node cluster (pool "local", dynamic isolation
 * policy, CompactFirst), the workloads already recorded are restored onto it, and the new
 * request is placed. So local mode applies exactly the allocator's filters (phase, isolation
 * compatibility, whole-GPU needs, available TFLOPS/VRAM with percent converted per GPU, sum of
 * limits within the oversubscribed capacity, model, gpu-count) and its reasons.
 * Pure (the cluster is built per call) and thread-safe.
 */
#ifndef TF_HYPERVISOR_PLACE_H
#define TF_HYPERVISOR_PLACE_H

#include "common/dynbuf.h"
#include "hypervisor/workload.h"

#include <stdint.h>

/* A GPU as placement sees it. */
struct tf_hv_gpu_view {
    const char *uuid;
    const char *model; /* canonical table name ("" when unknown: such a GPU is not offered) */
    int index;
    int64_t tflops_milli, vram_bytes;             /* capacity */
    int64_t alloc_tflops_milli, alloc_vram_bytes; /* sums of current allocations (listing) */
    int nworkloads;
    enum tf_hv_isolation mode; /* meaningful when nworkloads > 0 */
};

/* One GPU share of a workload already recorded. */
struct tf_hv_held {
    const char *workload, *ns;
    enum tf_hv_isolation isolation;
    const char *uuid;
    int64_t tflops_milli, vram_bytes, tflops_limit, vram_limit;
};

/* One GPU of a placement result. */
struct tf_hv_grant {
    int gpu;              /* index into the views array */
    int64_t tflops_milli; /* reserved (request) */
    int64_t vram_bytes;   /* reserved (request) */
    int64_t tflops_limit; /* enforced */
    int64_t vram_limit;   /* enforced */
    int32_t compute_limit_bp;
};

/* Chooses R->gpu_count GPUs from GPUS[0..N), given the shares HELD[0..NHELD) (grouped by
 * workload, in GPU order). Returns 0 with OUT[0..gpu_count) filled, or TF_ENOSPC with the
 * allocator's reasons in REASONS (one per line), or TF_EINVAL / TF_ENOMEM. */
int tf_hv_place(const struct tf_hv_request *r, const struct tf_hv_gpu_view *gpus, int n,
                const struct tf_hv_held *held, int nheld, struct tf_hv_grant *out,
                struct tf_dynbuf *reasons);

#endif
