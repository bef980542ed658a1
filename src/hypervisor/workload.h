/* SPDX-License-Identifier: Apache-2.0
 *
 * Local-mode workload requests and their normalisation (DESIGN.md §3.2 rules), plus the JSON
 * form used by the hypervisor's HTTP API:
 *   {"name": "train", "namespace": "default", "isolation": "soft", "qos": "medium",
 *    "gpuCount": 1, "gpuModel": "A100",
 *    "tflopsRequest": "10", "tflopsLimit": "20"        (TFLOPS quantities, or)
 *    "computePercentRequest": "25", "computePercentLimit": "50",
 *    "vramRequest": "4Gi", "vramLimit": "4Gi",
 *    "pid": 1234, "remote": "host:port", "lease": false}
 * Numbers may be JSON numbers or quantity strings. Unknown keys are errors (typos must not
 * silently give a default).
 *
 * Rules: isolation defaults to soft; a missing request inherits the limit and a missing limit
 * the request; TFLOPS and compute percent are mutually exclusive per side; with no compute at
 * all the workload gets 100 % of each GPU, with no VRAM the whole memory of each GPU; gpuCount
 * 1..128 (default 1); shared takes whole GPUs; QoS defaults to high when requests == limits
 * (non-zero), else medium; names are DNS-1123 labels (1..63 of [a-z0-9-], alphanumeric at the
 * ends). "lease": true (for clients on another machine, with isolation hard) keeps the workload
 * alive through POST .../heartbeat instead of local PIDs.
 *
 * Pure and thread-safe.
 */
#ifndef TF_HYPERVISOR_WORKLOAD_H
#define TF_HYPERVISOR_WORKLOAD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_HV_NAME_MAX 64
#define TF_HV_MAX_GPUS 16 /* per workload on one machine (the shm region's device limit) */

enum tf_hv_isolation { TF_HV_SOFT = 0, TF_HV_SHARED, TF_HV_HARD, TF_HV_REMOTE };

struct tf_hv_request {
    char name[TF_HV_NAME_MAX];
    char ns[TF_HV_NAME_MAX];
    enum tf_hv_isolation isolation;
    char qos[16];
    int gpu_count;
    char gpu_model[64];      /* "" = any */
    int64_t tflops_request;  /* milli-TFLOPS per GPU; 0 with percent set */
    int64_t tflops_limit;    /* milli-TFLOPS per GPU */
    int32_t percent_request; /* basis points per GPU; 0 when TFLOPS are used */
    int32_t percent_limit;   /* basis points per GPU */
    int64_t vram_request;    /* bytes per GPU; 0 = whole GPU */
    int64_t vram_limit;      /* bytes per GPU; 0 = whole GPU */
    int pid;                 /* owner process on this host (0 = none) */
    bool lease;              /* kept alive by heartbeats (a remote client), not by PIDs */
    char remote[128];        /* host:port of the GPU's hypervisor for isolation remote */
};

const char *tf_hv_isolation_name(enum tf_hv_isolation m);
int tf_hv_isolation_parse(const char *s, enum tf_hv_isolation *out);

/* True when S is a DNS-1123 label. */
bool tf_hv_valid_name(const char *s);

/* Fills R from the JSON object OBJ and normalises it. Returns 0, or TF_EINVAL / TF_ERANGE /
 * TF_EPARSE with ERR naming the key and value. */
int tf_hv_request_from_json(json_object *obj, struct tf_hv_request *r, char *err, size_t errlen);

/* Applies the defaults and checks above to an R filled by hand (tfctl flags). Same errors. */
int tf_hv_request_normalize(struct tf_hv_request *r, char *err, size_t errlen);

/* JSON form of R (new object, caller owns). */
json_object *tf_hv_request_to_json(const struct tf_hv_request *r);

#endif
