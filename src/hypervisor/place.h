/* SPDX-License-Identifier: Apache-2.0
 *
 * Placement of one local workload on this machine's GPUs. This is a stand-in, kept to the one
 * function below, for the core allocator (src/core/alloc.h, being built on another branch):
 * when it lands, tf_hv_place builds a one-node tf_cluster from the same views and asks it, and
 * this file's policy goes away.
 *
 * Policy: a GPU fits when its model matches, its isolation mode is free or equal to the
 * request's (dynamic policy: the first workload on a GPU sets its mode), and its unallocated
 * TFLOPS and VRAM cover the per-GPU request (shared: the GPU must be empty). Among fitting
 * GPUs the fullest go first (CompactFirst: least free VRAM, then least free TFLOPS, then index).
 * Pure and thread-safe.
 */
#ifndef TF_HYPERVISOR_PLACE_H
#define TF_HYPERVISOR_PLACE_H

#include "common/dynbuf.h"
#include "hypervisor/workload.h"

#include <stdint.h>

/* A GPU as placement sees it. */
struct tf_hv_gpu_view {
    const char *uuid;
    const char *model; /* canonical table name */
    int index;
    int64_t tflops_milli, vram_bytes;             /* capacity */
    int64_t alloc_tflops_milli, alloc_vram_bytes; /* sums of current allocations */
    int nworkloads;
    enum tf_hv_isolation mode; /* meaningful when nworkloads > 0 */
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

/* Chooses R->gpu_count GPUs from GPUS[0..N). Returns 0 with OUT[0..gpu_count) filled, or
 * TF_ENOSPC with REASONS holding one line per GPU saying why it does not fit (the message
 * users see for an unschedulable request). */
int tf_hv_place(const struct tf_hv_request *r, const struct tf_hv_gpu_view *gpus, int n,
                struct tf_hv_grant *out, struct tf_dynbuf *reasons);

#endif
