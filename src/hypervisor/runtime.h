/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tf-hypervisor: what each isolation mode needs at run time, beyond the
 * allocation. For every mode the app sees only its GPUs (CUDA_VISIBLE_DEVICES and
 * NVIDIA_VISIBLE_DEVICES = the allocated UUIDs, TF_WORKLOAD = its name).
 *   shared  whole GPUs, nothing else.
 *   soft    a shm limit region per workload written by the limit engine (src/limits) and the
 *           LD_PRELOAD limiter (libtf_limiter.so) reading it (soft.h).
 *   hard    a tf-worker process holding the GPU with the limits, the app running on the
 *           remote client (libtf_client.so as libcuda.so.1) pointed at it.
 *   remote  the worker runs under another machine's hypervisor (--remote host:port).
 * Modes whose components are not part of this build are refused by tf_hv_runtime_check with
 * TF_ENOTSUP and a message naming the missing piece (never run without the promised limits).
 * Thread-safe.
 */
#ifndef TF_HYPERVISOR_RUNTIME_H
#define TF_HYPERVISOR_RUNTIME_H

#include "hypervisor/hv.h"

#include <json-c/json.h>

struct tf_hv_usage {
    struct {
        int32_t compute_bp; /* share of the GPU used by this workload, basis points */
        int64_t vram_used;  /* bytes */
    } gpu[TF_HV_MAX_GPUS];
};

/* Refuses requests this build cannot honour (before anything is allocated). */
int tf_hv_runtime_check(struct tf_hv *hv, const struct tf_hv_request *r, char *err, size_t errlen);
/* Sets up W's runtime and fills ENV (string values) with the app's environment. On error
 * nothing is left behind; the caller releases the allocation. */
int tf_hv_runtime_setup(struct tf_hv *hv, const struct tf_hv_workload *w, json_object *env,
                        char *err, size_t errlen);
/* After a hypervisor restart: reattaches W's runtime (reopens its limit region). */
int tf_hv_runtime_resume(struct tf_hv *hv, const struct tf_hv_workload *w, char *err,
                         size_t errlen);
/* Tears W's runtime down (idempotent; after a restart too). */
void tf_hv_runtime_teardown(struct tf_hv *hv, const struct tf_hv_workload *w);
/* Current usage of W per allocated GPU (zeros when unknown). */
void tf_hv_runtime_usage(struct tf_hv *hv, const struct tf_hv_workload *w, struct tf_hv_usage *u);
json_object *tf_hv_usage_json(const struct tf_hv_usage *u);

#endif
