/* SPDX-License-Identifier: Apache-2.0
 *
 * A pool's efficiency settings (seed 002 steps 4-5), read from a GPUPool spec or a
 * TensorFusionCluster's spec.gpuPools[].specTemplate (same shape):
 *
 *   capacityConfig:
 *     minResources:  {tflops: "20", vram: 10Gi}   # compaction never goes below (total)
 *     warmResources: {tflops: "10", vram: 5Gi}    # compaction keeps this much free
 *     maxResources:  {tflops, vram}               # Provisioned pools stop there (provision.h)
 *   nodeManagerConfig:
 *     provisioningMode: AutoSelect | Provisioned | Karpenter   # default AutoSelect
 *     nodeCompaction:
 *       period: 30m                               # default 5m
 *       defrag:
 *         enabled: true                           # default false
 *         schedule: "0 3 * * *"                   # default; 5-field cron, no TZ= prefix
 *         timezone: "Asia/Shanghai"               # IANA name; default UTC
 *         evictedPodMarkerTTL: never              # upstream's; checked (duration or never),
 *         sourceNodeMarkerTTL: 30m                #   no effect: our runs keep no markers
 *         maxDuration: 2h                         # default 2h
 *         utilizationThresholdPercent: 40         # default 40, 0..100
 *
 * Every block and field is optional (upstream TensorFusion has no timezone and evaluates the
 * schedule in the controller's local time, which is UTC in its image). Quantities
 * are Kubernetes quantities as strings or YAML numbers ("20", 20, 0.5, "10Gi"); durations are
 * Go durations ("30m", "2h", "1h30m"; "1d" too). Unknown keys inside capacityConfig's
 * resource blocks, nodeCompaction and defrag are errors (typos would otherwise silently keep a
 * default); other pool-spec fields belong to other modules and are ignored here. cpu/memory in
 * the resource blocks are accepted and ignored (cloud-vendor provisioning only).
 *
 * Errors name the full path and value, e.g.
 *   gpuPools[0].specTemplate.nodeManagerConfig.nodeCompaction.period: "0s": must be longer
 *   than zero
 * Whether the zone exists is checked where zones are loaded (tzload.h), not here.
 *
 * Pure; the parsed struct is a plain value (no pointers), thread-safe to share.
 */
#ifndef TF_CORE_EFFICIENCY_H
#define TF_CORE_EFFICIENCY_H

#include "core/cron.h"
#include "core/tz.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_DEFRAG_DEFAULT_SCHEDULE "0 3 * * *"
#define TF_DEFRAG_DEFAULT_MAX_DURATION_MS (2 * 3600 * INT64_C(1000))
#define TF_DEFRAG_DEFAULT_THRESHOLD_PCT 40
#define TF_COMPACTION_DEFAULT_PERIOD_MS (5 * 60 * INT64_C(1000))

enum tf_provisioning_mode {
    TF_PROVISION_AUTO_SELECT = 0, /* existing nodes; release = label should-delete */
    TF_PROVISION_PROVISIONED,     /* nodes created by TensorFusion; release = delete them */
    TF_PROVISION_KARPENTER,       /* nodes from Karpenter NodeClaims; release = delete claim */
};

/* {tflops, vram}; a field is meaningful only when its _set flag is true. */
struct tf_capacity {
    int64_t tflops_milli;
    int64_t vram_bytes;
    bool tflops_set, vram_set;
};

struct tf_defrag_config {
    bool enabled;
    char schedule[TF_CRON_EXPR_MAX + 1];
    struct tf_cron cron;               /* parsed schedule */
    char timezone[TF_TZ_NAME_MAX + 1]; /* "UTC" when not given */
    int64_t max_duration_ms;           /* > 0 */
    int32_t utilization_threshold_pct; /* 0..100 */
};

struct tf_pool_efficiency {
    struct tf_capacity min, warm, max;
    enum tf_provisioning_mode provisioning;
    int64_t compaction_period_ms; /* > 0 */
    struct tf_defrag_config defrag;
};

/* Names as written in the CRD ("AutoSelect", ...); the parser is exact. */
const char *tf_provisioning_mode_name(enum tf_provisioning_mode m);
int tf_provisioning_mode_parse(const char *s, enum tf_provisioning_mode *out);

/* Fills *OUT with every default (nothing set, defrag disabled with the default schedule). */
void tf_pool_efficiency_init(struct tf_pool_efficiency *out);

/* Parses the efficiency blocks of pool spec SPEC (an object with capacityConfig and
 * nodeManagerConfig; NULL = all defaults) into *OUT. PATH prefixes every message (e.g.
 * "gpuPools[0].specTemplate"; NULL or "" for none). 0, or TF_EINVAL / TF_EPARSE / TF_ERANGE
 * with the message in ERR; *OUT then holds the defaults. */
int tf_pool_efficiency_parse(json_object *spec, const char *path, struct tf_pool_efficiency *out,
                             char *err, size_t errlen);

/* Reads a Kubernetes quantity from a JSON string, integer or double, as milli-units (TFLOPS)
 * or bytes; KEY names it in messages. Shared by the autoscale config parser. */
int tf_json_quantity_milli(json_object *v, int64_t *out, const char *key, char *err, size_t errlen);
int tf_json_quantity_bytes(json_object *v, int64_t *out, const char *key, char *err, size_t errlen);
/* A compute percentage (0..100, at most two decimals; upstream's Resource.compute) from a JSON
 * string or number, as basis points. */
int tf_json_percent(json_object *v, int32_t *bp, const char *key, char *err, size_t errlen);

#endif
