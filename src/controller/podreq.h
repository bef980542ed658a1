/* SPDX-License-Identifier: Apache-2.0
 *
 * A scheduled pod's GPU request, as the extender needs it, produced by the core workload
 * spec (core/spec.h) from the pod the webhook mutated. This header is the bridge between the
 * workload model and the allocator (core/alloc.h), whose vocabularies (enum tf_isolation,
 * enum tf_qos) cannot share a translation unit: podreq.c includes only spec.h, extender.c
 * only alloc.h, and both include this plain-data header. Pure and thread-safe.
 */
#ifndef TF_CONTROLLER_PODREQ_H
#define TF_CONTROLLER_PODREQ_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tf_podreq_iso { TF_PODREQ_SOFT, TF_PODREQ_HARD, TF_PODREQ_SHARED, TF_PODREQ_PARTITIONED };
enum tf_podreq_qos { TF_PODREQ_LOW, TF_PODREQ_MEDIUM, TF_PODREQ_HIGH, TF_PODREQ_CRITICAL };

#define TF_PODREQ_MAX_CONTAINERS 16

struct tf_podreq {
    bool managed;       /* a TensorFusion pod (taken over by the webhook, or a worker) */
    bool remote_client; /* is-local-gpu false: holds no GPU itself (its worker does) */
    char ns[64], name[254], uid[64];
    char pool[254];                 /* "" = the default pool */
    int64_t req_tflops, lim_tflops; /* milli-TFLOPS per GPU (when not by percent) */
    int32_t req_bp, lim_bp;         /* percent basis points (when by percent) */
    bool req_pct, lim_pct;
    int64_t req_vram, lim_vram; /* bytes per GPU */
    int gpu_count;
    enum tf_podreq_iso iso;
    enum tf_podreq_qos qos;
    bool dedicated;
    char partition[24]; /* partitioned: the template (tensor-fusion.ai/partition), "" = any */
    char model[64], vendor[32]; /* "" = any */
    int32_t indices[128];
    int nindices;
    /* Disjoint per-container split (container-gpu-count); empty when all containers share. */
    struct {
        char name[64];
        int gpus;
    } containers[TF_PODREQ_MAX_CONTAINERS];
    int ncontainers;
    /* Every GPU-using container (for container-gpus), split or not. */
    char gpu_containers[TF_PODREQ_MAX_CONTAINERS][64];
    int ngpu_containers;
    /* The containers do not all see the same GPUs (tf_spec_split): each gets its own
     * tensor-fusion.ai/gpu-ids-<container> annotation, keyed as in gpu_ids_key. */
    bool split;
    char gpu_ids_key[TF_PODREQ_MAX_CONTAINERS][96];
    /* Gang scheduling, as the webhook stamped it: on only with a group key and a quorum of 2
     * or more (tensor-fusion.ai/gang-group-key, gang-required-members). */
    bool gang;
    int32_t gang_required;
    int64_t gang_timeout_ms; /* 0 = wait indefinitely */
    char gang_key[320];
};

/* Reads POD. Returns 0 with OUT->managed false for pods TensorFusion does not manage, 0 with
 * the request filled, or TF_EINVAL/TF_ERANGE with the spec's message in ERR. */
int tf_podreq_from_pod(json_object *pod, struct tf_podreq *out, char *err, size_t errlen);

#endif
