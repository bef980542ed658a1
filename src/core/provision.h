/* SPDX-License-Identifier: Apache-2.0
 *
 * Node requests of Provisioned pools (GPUNodeClass / GPUNodeClaim, upstream TensorFusion's
 * provisioning model), the pure half: whether a pool needs another node and how big a
 * request to record, and the reading of a GPUNodeClaim's spec. The controller half is
 * controller/provisioner.c.
 *
 * When a pool needs a node, as upstream decides it:
 *   1. its total TFLOPS or VRAM is below capacityConfig.minResources: the gap to the minimum;
 *   2. else, while the pool is Running, its available TFLOPS or VRAM is below warmResources:
 *      the gap to the warm amount;
 *   3. never when the total already reaches capacityConfig.maxResources in either dimension
 *      (max_reached: upstream's MaxResourceConstraintReached).
 * Capacity already requested by Pending claims counts as coming, so a pass never requests
 * twice what is missing. The request offers the whole gap (at least one GPU); how many GPUs
 * it takes is the pool's GPUs per node when it has nodes, else 1.
 *
 * Pure and thread-safe.
 */
#ifndef TF_CORE_PROVISION_H
#define TF_CORE_PROVISION_H

#include "core/efficiency.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tf_provision_pool {
    struct tf_pool_efficiency eff;          /* capacityConfig, provisioningMode */
    bool running;                           /* the pool's status.phase is Running */
    int64_t total_tflops_milli, total_vram; /* the pool's GPUs now */
    int64_t avail_tflops_milli, avail_vram;
    int64_t pending_tflops_milli, pending_vram; /* offered by Pending claims */
    int nodes, gpus;                            /* the pool's nodes with GPUs and their GPUs */
};

struct tf_provision_decision {
    bool request;     /* record one node request of the size below */
    bool max_reached; /* a node is missing but maxResources forbids it */
    int64_t tflops_milli, vram_bytes;
    int gpus;
    char reason[192]; /* why (or why not), e.g. "total TFLOPS 0 below minResources 20" */
};

/* Decides for IN. Fills *OUT (reason set whenever a node is missing). */
void tf_provision_plan(const struct tf_provision_pool *in, struct tf_provision_decision *out);

/* A GPUNodeClaim's spec as tf-controller reads it. */
struct tf_node_claim {
    const char *node_name;  /* spec.nodeName, or NULL (borrowed from the object) */
    const char *node_class; /* spec.nodeClassRef.name, or NULL */
    int64_t tflops_milli, vram_bytes;
    int gpus;
};

/* Reads SPEC (a GPUNodeClaim's spec). 0, or TF_EINVAL / TF_EPARSE with ERR naming the field
 * (tflopsOffered, vramOffered and gpuDeviceOffered are required, as upstream). */
int tf_node_claim_parse(json_object *spec, struct tf_node_claim *out, char *err, size_t errlen);

#endif
