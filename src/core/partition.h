/* SPDX-License-Identifier: Apache-2.0
 *
 * Hardware partition templates (NVIDIA MIG and MIG-like slicing) per GPU model, for the
 * `partitioned` isolation mode.
 *
 * Model: a partitionable GPU has COMPUTE_TOTAL compute slices and MEMORY_TOTAL memory slices
 * (A100/H100: 7 and 8). A template ("3g.40gb") takes COMPUTE_SLOTS and MEMORY_SLOTS of them and
 * reserves its own TFLOPS and VRAM (not the pod's request: the partition is the unit that
 * exists on the device). A GPU can host any multiset of templates whose slot sums fit; MIG's
 * finer placement-position rules are not modelled (documented in docs/scheduling.md).
 *
 * Built-in profiles exist for the MIG-capable models of the model table (A100, A800, A30,
 * H100, H800, H20, H200, B200); a cluster description may replace a model's profile.
 * Pure; the built-in table is static and read-only (thread-safe).
 */
#ifndef TF_CORE_PARTITION_H
#define TF_CORE_PARTITION_H

#include "core/gpu_models.h"

#include <stdint.h>

#define TF_PART_MAX_TEMPLATES 8
#define TF_PART_ID_MAX 24

struct tf_partition_template {
    char id[TF_PART_ID_MAX]; /* e.g. "1g.10gb" */
    uint8_t compute_slots;   /* >= 1 */
    uint8_t memory_slots;    /* >= 1 */
    int64_t tflops_milli;    /* what one partition of this template reserves */
    int64_t vram_bytes;
};

struct tf_partition_profile {
    const struct tf_gpu_model *model; /* the exact model (variant) this profile applies to */
    uint8_t compute_total;            /* 1..64 */
    uint8_t memory_total;             /* 1..64 */
    uint8_t ntemplates;               /* 1..TF_PART_MAX_TEMPLATES */
    struct tf_partition_template templates[TF_PART_MAX_TEMPLATES];
};

/* Fills *OUT with the built-in profile of MODEL (by canonical name); TF_ENOENT when the model
 * has no hardware partitioning. Template resources are the model's TFLOPS x slots/total
 * (rounded down) and VRAM x memory slots/total. */
int tf_partition_builtin(const struct tf_gpu_model *model, struct tf_partition_profile *out);

/* Checks a profile (slot counts in range, templates fit the totals, ids unique and non-empty,
 * resources within the model's). 0 or TF_EINVAL with a message in ERR. */
int tf_partition_validate(const struct tf_partition_profile *p, char *err, size_t errlen);

/* The template to carve for a request of REQ_TFLOPS (milli) and REQ_VRAM bytes on a GPU with
 * FREE_COMPUTE / FREE_MEMORY slots left: the smallest template (fewest compute slots, then
 * memory slots, then VRAM) whose resources cover the request and whose slots fit. ONLY_ID
 * (optional) restricts the choice to that template id. Returns the template index or -1. */
int tf_partition_match(const struct tf_partition_profile *p, int64_t req_tflops, int64_t req_vram,
                       unsigned free_compute, unsigned free_memory, const char *only_id);

#endif
