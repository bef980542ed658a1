/* SPDX-License-Identifier: Apache-2.0
 *
 * The vertical autoscaling recommender (seed 002 step 2): from a workload's usage history
 * (tf_worker_usage rows: compute_tflops and memory_bytes per worker and GPU over time) it
 * recommends per-GPU requests and limits, what the controller writes to the
 * TensorFusionWorkload's .status.recommendation and applies to its workers.
 *
 * Configuration: WorkloadProfile/TensorFusionWorkload spec.autoScalingConfig, based on the
 * first SchedulingConfigTemplate spec.verticalScalingRules[] entry whose selector matches the
 * workload's labels (pool-level rules; the workload's own fields win field by field), and the
 * pod annotations tensor-fusion.ai/autoscale: "true" + tensor-fusion.ai/autoscale-target
 * (enable, targetResource). Fields of autoSetResources (upstream TensorFusion's names) with
 * their defaults:
 *   enable false, targetResource all (compute | vram | all),
 *   targetComputePercentile 0.95, lowerBoundComputePercentile 0.5,
 *   upperBoundComputePercentile 0.98, targetVRAMPercentile 0.95, lowerBoundVRAMPercentile 0.5,
 *   upperBoundVRAMPercentile 0.99, marginFraction 0.15, updateThreshold 0.1,
 *   historyDataPeriod 2h, confidenceInterval (= historyDataPeriod), histogramDecayHalfLife 24h,
 *   minComputeResourcesRatio 0.1, maxComputeResourcesRatio 10, minVRAMResourcesRatio 0.2,
 *   maxVRAMResourcesRatio 5, initialDelayPeriod 30m, interval (the controller's; 0 here).
 * Older spellings are accepted too: targetTflopsPercentile, lowerBoundTflopsPercentile,
 * upperBoundTflopsPercentile, targetVramPercentile, ..., requestMarginFraction.
 * cronScalingRules[]: {enable, name, start, end (5-field cron), desiredResources:
 * {requests: {tflops | compute, vram}, limits: {tflops | compute, vram}}} (upstream's Resources;
 * compute is a percentage of one GPU, computePercent its former spelling; tflops and compute
 * are exclusive per side); at most one may be active at a time. A rule's compute must be in
 * the workload's own unit: percent for a workload whose compute is a percentage, TFLOPS for
 * one given in TFLOPS (tf_autoscale_recommend refuses the other, naming the rule and key).
 * autoSetReplicas and externalScaler are declared by the CRDs; enabling either is refused
 * (TF_ENOTSUP, naming the key): this controller scales neither replicas nor through an
 * external service.
 *
 * Estimation follows the Kubernetes VPA recommender: samples go into decaying exponential
 * histograms (first bucket 0.1 TFLOPS / 10 MB, buckets 5 % wider each, weights halving every
 * half-life), one for compute and one for VRAM, and
 *   target = P(target percentile) x (1 + margin)
 *   lower  = P(lower percentile)  x (1 + margin) x (1 + 0.001/confidence)^-2
 *   upper  = P(upper percentile)  x (1 + margin) x (1 + 1/confidence)
 * where confidence = min(history span, samples x 1 min) / confidenceInterval, so bounds are
 * wide while little history exists. For each dimension the targetResource selects:
 *   - the request changes only when the current one lies outside [lower, upper]; it becomes
 *     the target, unless the change is below updateThreshold of the current request;
 *   - the limit keeps the current limit/request ratio, and covers at least the upper
 *     percentile's usage plus margin (without the confidence factor);
 *   - requests are clamped to [original x min ratio, original x max ratio]; VRAM limits too;
 *     compute limits never drop below the original limit (scaling compute down must not cut
 *     the burst headroom) nor exceed original x max ratio; a limit is never below its request;
 *   - an optional ceiling (the room on the worker's GPUs) caps the request, the limit scaled
 *     with it;
 *   - TFLOPS round up to hundredths, VRAM up to MiB (the precision promised to users).
 * Nothing is recommended before initialDelayPeriod has passed since the workload was created,
 * or without samples. An active cron rule overrides: its desiredResources (fields it leaves
 * out come from the rest of the recommendation). When no rule is active any more and the
 * current resources came from one, the recommendation starts again from the original ones.
 *
 * Pure and deterministic (same inputs, same output; time and samples are parameters); all
 * functions are thread-safe on distinct outputs.
 */
#ifndef TF_CORE_AUTOSCALE_H
#define TF_CORE_AUTOSCALE_H

#include "core/cron.h"
#include "core/spec.h"
#include "core/tz.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_AUTOSCALE_MAX_RULES 16
#define TF_AUTOSCALE_NAME_MAX 64
#define TF_HIST_MAX_BUCKETS 256

/* Per-GPU resources; 0 = not set. TFLOPS in milli, VRAM in bytes, compute percentages in
 * basis points (a side has TFLOPS or a percentage, never both). */
struct tf_autoscale_resources {
    int64_t req_tflops, lim_tflops, req_vram, lim_vram;
    int32_t req_percent, lim_percent;
};

struct tf_cron_scaling_rule {
    bool enable;
    char name[TF_AUTOSCALE_NAME_MAX];
    char start_expr[TF_CRON_EXPR_MAX + 1], end_expr[TF_CRON_EXPR_MAX + 1];
    struct tf_cron start, end;
    struct tf_autoscale_resources desired;
};

/* Bits of tf_autoscale_config.set: which fields were given (for merging). */
enum {
    TF_AS_ENABLE = 1u << 0,
    TF_AS_TARGET = 1u << 1,
    TF_AS_TARGET_COMPUTE = 1u << 2,
    TF_AS_LOWER_COMPUTE = 1u << 3,
    TF_AS_UPPER_COMPUTE = 1u << 4,
    TF_AS_TARGET_VRAM = 1u << 5,
    TF_AS_LOWER_VRAM = 1u << 6,
    TF_AS_UPPER_VRAM = 1u << 7,
    TF_AS_MARGIN = 1u << 8,
    TF_AS_THRESHOLD = 1u << 9,
    TF_AS_HISTORY = 1u << 10,
    TF_AS_CONFIDENCE = 1u << 11,
    TF_AS_HALF_LIFE = 1u << 12,
    TF_AS_MIN_COMPUTE = 1u << 13,
    TF_AS_MAX_COMPUTE = 1u << 14,
    TF_AS_MIN_VRAM = 1u << 15,
    TF_AS_MAX_VRAM = 1u << 16,
    TF_AS_INITIAL_DELAY = 1u << 17,
    TF_AS_INTERVAL = 1u << 18,
    TF_AS_RULES = 1u << 19,
};

struct tf_autoscale_config {
    uint32_t set;
    bool enable;
    enum tf_autoscale_target target;                     /* never UNSET after init: ALL */
    double target_compute, lower_compute, upper_compute; /* percentiles, 0..1 */
    double target_vram, lower_vram, upper_vram;
    double margin;                                   /* >= 0 */
    double update_threshold;                         /* >= 0 */
    int64_t history_ms, confidence_ms, half_life_ms; /* confidence 0 = history */
    double min_compute_ratio, max_compute_ratio, min_vram_ratio, max_vram_ratio;
    int64_t initial_delay_ms, interval_ms;
    struct tf_cron_scaling_rule rules[TF_AUTOSCALE_MAX_RULES];
    size_t nrules;
};

/* Defaults (above), nothing marked set. */
void tf_autoscale_config_init(struct tf_autoscale_config *c);

/* Parses an autoScalingConfig object OBJ (NULL = defaults) into *OUT (initialised first).
 * PATH prefixes messages ("spec.autoScalingConfig"). Unknown keys inside autoSetResources,
 * cronScalingRules entries and desiredResources are errors; autoSetReplicas and
 * externalScaler are accepted while not enabled. 0 or TF_EINVAL / TF_EPARSE / TF_ERANGE /
 * TF_ENOTSUP. */
int tf_autoscale_config_parse(json_object *obj, const char *path, struct tf_autoscale_config *out,
                              char *err, size_t errlen);

/* OVER's set fields replace BASE's (rules replace as a whole list). */
void tf_autoscale_config_merge(struct tf_autoscale_config *base,
                               const struct tf_autoscale_config *over);

/* The effective configuration of a workload: the first SchedulingConfigTemplate
 * verticalScalingRules entry (RULES: a JSON array, may be NULL) whose selector matches LABELS
 * (an object, may be NULL), overlaid with the workload's own autoScalingConfig (OWN, may be
 * NULL), then the annotations (ANNOTATED: tensor-fusion.ai/autoscale "true" enables;
 * ANN_TARGET from tensor-fusion.ai/autoscale-target, UNSET = keep). *MATCHED (may be NULL)
 * gets the matched rule's name ("" when none). Same errors as the parser, paths
 * "verticalScalingRules[i].autoScaling..." or OWN_PATH. */
int tf_autoscale_config_resolve(json_object *rules, json_object *labels, json_object *own,
                                const char *own_path, bool annotated,
                                enum tf_autoscale_target ann_target,
                                struct tf_autoscale_config *out, char *matched, size_t matchedlen,
                                char *err, size_t errlen);

/* ---- decaying histograms (VPA) ---- */

struct tf_decay_hist {
    double first, ratio;
    int nbuckets;
    double start[TF_HIST_MAX_BUCKETS]; /* bucket i covers [start[i], start[i+1]) */
    double weight[TF_HIST_MAX_BUCKETS];
    double total;
    int64_t ref_ms; /* reference time of the weights */
    int64_t half_life_ms;
    int lo, hi; /* non-empty bucket range, lo > hi when empty */
};

/* Exponential buckets from 0: the first FIRST wide, each RATIO times wider, up to MAX. */
void tf_decay_hist_init(struct tf_decay_hist *h, double first, double ratio, double max,
                        int64_t half_life_ms);
/* Adds VALUE (clamped to >= 0) with WEIGHT at time T_MS. */
void tf_decay_hist_add(struct tf_decay_hist *h, double value, double weight, int64_t t_ms);
/* The upper end of the bucket holding the P-quantile (0..1) of the weight, 0 when empty. */
double tf_decay_hist_percentile(const struct tf_decay_hist *h, double p);

/* ---- recommendation ---- */

/* One usage sample of one worker on one GPU; a negative value = not reported. */
struct tf_usage_sample {
    int64_t ts_ms;
    int64_t tflops_milli;
    int64_t vram_bytes;
};

struct tf_autoscale_input {
    const struct tf_autoscale_config *cfg;
    struct tf_autoscale_resources original;       /* the workload spec's (before autoscaling) */
    struct tf_autoscale_resources current;        /* applied now */
    bool current_from_cron;                       /* CURRENT was set by a cron rule */
    const struct tf_autoscale_resources *ceiling; /* max per-GPU requests (GPU room), or NULL */
    const struct tf_usage_sample *samples;
    size_t nsamples;
    int64_t created_ms, now_ms;
    const struct tf_tz *tz;  /* zone of the cron rules; NULL = UTC */
    bool compute_by_percent; /* the workload's compute is a percentage (else TFLOPS or none) */
};

struct tf_autoscale_estimate {
    int64_t lower, target, upper; /* after margin and confidence */
    int64_t upper_usage;          /* upper percentile x (1 + margin), for the limit */
    size_t samples;
};

enum tf_autoscale_source {
    TF_AUTOSCALE_SRC_NONE = 0, /* keep the current resources */
    TF_AUTOSCALE_SRC_PERCENTILE,
    TF_AUTOSCALE_SRC_CRON,
};

struct tf_autoscale_recommendation {
    enum tf_autoscale_source source;
    bool changed;                            /* RESOURCES differ from the current ones */
    struct tf_autoscale_resources resources; /* the recommended (full) resources */
    struct tf_autoscale_estimate compute, vram;
    double confidence;
    char active_rule[TF_AUTOSCALE_NAME_MAX]; /* "" when none */
    char reason[512];
};

/* Computes the recommendation. 0 and *OUT, or TF_EINVAL (no config; the active rule's compute
 * in the other unit than the workload's) / TF_ECONFLICT (two cron rules active at once; names
 * in ERR) / TF_ENOMEM. */
int tf_autoscale_recommend(const struct tf_autoscale_input *in,
                           struct tf_autoscale_recommendation *out, char *err, size_t errlen);

/* The .status.recommendation object (tensor-fusion.ai/v1 Resources):
 * {"requests":{"tflops":"12.5","vram":"6Gi"},"limits":{"tflops":"25","vram":"12Gi"}}
 * ("compute":"50" for a percentage; unset values omitted). Caller owns the result; NULL on
 * ENOMEM. */
json_object *tf_autoscale_resources_to_json(const struct tf_autoscale_resources *r);

/* The CronScalingRule object of R as the CRD declares it (status.activeCronScalingRule):
 * {"enable":true,"name":...,"start":...,"end":...,"desiredResources":{...}}. Caller owns the
 * result; NULL on ENOMEM. */
json_object *tf_autoscale_rule_to_json(const struct tf_cron_scaling_rule *r);

#endif
