/* SPDX-License-Identifier: Apache-2.0
 *
 * Namespace quotas (the GPUResourceQuota CRD of tensor-fusion.ai/v1) and per-namespace usage.
 *
 *   spec.total:  requests {tflops, vram}, limits {tflops, vram}, maxWorkers,
 *                alertThresholdPercent       -- sums over the namespace's workers
 *   spec.single: maxRequests, maxLimits, maxGPUCount -- per worker, per GPU amounts
 *                defaultRequests, defaultLimits      -- filled into pods that omit them
 *
 * Usage counts what pods declared: request x gpu count and limit x gpu count, one worker per
 * pod. Pods whose TFLOPS are given as a compute percent bypass the quota entirely (seed 000:
 * "requests by compute percent bypass the namespace quota check"): they are neither checked
 * nor counted. Usage is tracked for every namespace that has allocations, with or without a
 * quota, so a quota created later sees the existing usage.
 *
 * Ownership: the set copies namespace strings and specs. Not thread-safe (the allocator's
 * owner serialises calls; tf_quota_check is read-only).
 */
#ifndef TF_CORE_QUOTA_H
#define TF_CORE_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_QUOTA_UNSET (-1)

/* A {tflops, vram} pair; each TF_QUOTA_UNSET when not given. */
struct tf_quota_res {
    int64_t tflops; /* milli-TFLOPS */
    int64_t vram;   /* bytes */
};

struct tf_quota_spec {
    struct tf_quota_res total_requests, total_limits;
    int32_t max_workers;                          /* TF_QUOTA_UNSET or >= 0 */
    int32_t alert_threshold_pct;                  /* 0..100, default 95 */
    struct tf_quota_res max_requests, max_limits; /* single, per GPU */
    int32_t max_gpu_count;                        /* single; TF_QUOTA_UNSET or >= 1 */
    struct tf_quota_res default_requests, default_limits;
};

struct tf_quota_usage {
    int64_t req_tflops, req_vram, lim_tflops, lim_vram;
    int32_t workers;
};

/* What one pod asks for: per-GPU amounts and a GPU count; WORKERS is 1 for a new pod and 0
 * for a resize. */
struct tf_quota_ask {
    int64_t req_tflops, req_vram, lim_tflops, lim_vram; /* per GPU */
    uint32_t gpu_count;
    int32_t workers;
};

struct tf_quota_set;

/* Spec with nothing set (every field TF_QUOTA_UNSET, threshold 95). */
void tf_quota_spec_init(struct tf_quota_spec *s);

struct tf_quota_set *tf_quota_set_new(void);
void tf_quota_set_destroy(struct tf_quota_set *qs);

/* Creates or replaces NAMESPACE's quota; usage is kept. TF_EINVAL for negative amounts. */
int tf_quota_put(struct tf_quota_set *qs, const char *ns, const struct tf_quota_spec *spec,
                 char *err, size_t errlen);
/* Drops NAMESPACE's quota (usage is kept). TF_ENOENT if it had none. */
int tf_quota_remove(struct tf_quota_set *qs, const char *ns);
/* NAMESPACE's quota, or NULL. Borrowed, valid until the next put/remove. */
const struct tf_quota_spec *tf_quota_get(const struct tf_quota_set *qs, const char *ns,
                                         size_t ns_len);
/* NAMESPACE's usage (all zero when unknown). */
struct tf_quota_usage tf_quota_usage_of(const struct tf_quota_set *qs, const char *ns,
                                        size_t ns_len);

/* Would ASK fit NAMESPACE's quota once OLD (the usage the asker already holds, e.g. before a
 * resize; NULL for none) is given back? 0, or TF_ENOSPC with a reason like
 *   namespace team-a: quota total.requests.tflops exceeded: used 120 + asked 40 > 150
 * NS need not be NUL-terminated. Namespaces without a quota always fit. */
int tf_quota_check(const struct tf_quota_set *qs, const char *ns, size_t ns_len,
                   const struct tf_quota_ask *ask, const struct tf_quota_usage *old, char *reason,
                   size_t reasonlen);

/* Adds (SIGN +1) or subtracts (-1) DELTA to NAMESPACE's usage. TF_ENOMEM if a new namespace
 * entry could not be created (only possible with SIGN +1; usage unchanged). */
int tf_quota_charge(struct tf_quota_set *qs, const char *ns, size_t ns_len,
                    const struct tf_quota_usage *delta, int sign);

/* Fills the per-GPU request/limit amounts a pod left at 0 from NAMESPACE's defaultRequests /
 * defaultLimits (each pointer may be NULL). Returns true when something was filled. */
bool tf_quota_apply_defaults(const struct tf_quota_set *qs, const char *ns, int64_t *req_tflops,
                             int64_t *req_vram, int64_t *lim_tflops, int64_t *lim_vram);

/* Namespaces known to the set (with a quota or with usage): their count, and the name and usage
 * of entry I (0 <= I < count). The name is borrowed, valid while the set lives. */
size_t tf_quota_entries(const struct tf_quota_set *qs);
const char *tf_quota_entry(const struct tf_quota_set *qs, size_t i, struct tf_quota_usage *used);

/* Usage as the ask of tf_quota_check would charge it. */
struct tf_quota_usage tf_quota_ask_usage(const struct tf_quota_ask *ask);

#endif
