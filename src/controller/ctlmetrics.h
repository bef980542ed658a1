/* SPDX-License-Identifier: Apache-2.0
 *
 * The controller's metric tables (seed 002; src/metrics/schema.h), written by the elected
 * leader every metrics interval from the cluster's objects, as upstream's controller does:
 *
 *   tf_worker_resources  one row per pod holding GPUs (a local TensorFusion client or a
 *                        remote-mode worker, bound: tensor-fusion.ai/gpu-ids): tags worker
 *                        (pod), workload, pool, namespace, qos (default medium); per-GPU
 *                        tflops_request/_limit (compute-percent converted with the first GPU's
 *                        TFLOPS; shared: the whole GPU), vram_bytes_request/_limit (no limit:
 *                        the GPU's VRAM), gpu_count, ready (the pod's Ready condition) and
 *                        raw_cost;
 *   tf_node_metrics      one row per GPU node: tags node, pool, phase (the GPUNode's status,
 *                        else Pending); allocated TFLOPS/VRAM = capacity - available of its
 *                        GPU objects (kept by the reconciler), their percent of capacity and of
 *                        the virtual capacity (TFLOPS x tflopsOversellRatio / 100; VRAM x (100
 *                        + vramExpandToHostMem) / 100), gpu_count, raw_cost (its workers');
 *   tf_pool_metrics      one row per GPUPool: the same sums over its nodes (phase: the pool's
 *                        status) plus limited_tflops / limited_vram_bytes (the limits of its
 *                        workers) and their percent of the virtual capacity;
 *   tf_system_metrics    one row per pool: total_workers_cnt, total_nodes_cnt.
 *
 * Cost (raw_cost, the cost accrued since the previous round) comes from the pool's QoS
 * pricing, spec.qosConfig.pricing[] {qos, requests: {perFP16TFlopsPerHour,
 * perGBOfVRAMPerHour} (decimal strings, a leading "$" allowed), limitsOverRequests (the
 * fraction of that price charged for limits above requests; default 1)}:
 *   per GPU and second: (tflops_request x P_tflops + vram_request_GiB x P_vram
 *                        + (tflops_limit - tflops_request) x P_tflops x ratio
 *                        + (vram_limit_GiB - vram_request_GiB) x P_vram x ratio) / 3600
 *   raw_cost = that x gpu_count x seconds since the previous round.
 * A QoS without a price costs 0.
 *
 * tf_ctlmetrics_build is pure (the caller's JSON arrays in, points out); tf_ctlmetrics_*
 * below it own a background metrics sink (sink.h) so that the reconcile loop never waits on
 * the database. Threads: one caller at a time (the leader's loop).
 */
#ifndef TF_CONTROLLER_CTLMETRICS_H
#define TF_CONTROLLER_CTLMETRICS_H

#include "metrics/lineproto.h"
#include "metrics/sink.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tf_ctlmetrics_in {
    json_object *pods, *gpus, *gpunodes, *pools; /* arrays of objects (borrowed) */
    const char *default_pool;                    /* pool of GPUs without the label */
    int64_t now_ms;                              /* timestamp of the points */
    double elapsed_s;                            /* since the previous round (cost) */
};

/* The points of one round into *OUT (*N of them; caller frees *OUT). Strings are borrowed
 * from IN's objects. 0, or TF_ENOMEM. */
int tf_ctlmetrics_build(const struct tf_ctlmetrics_in *in, struct tf_lp_point **out, size_t *n);

/* What tf_worker_resources says of one pod (borrowed strings; values per GPU). */
struct tf_ctlmetrics_worker {
    const char *name, *ns, *workload, *pool, *qos, *node, *isolation, *ids;
    json_object *gpu; /* the GPU object of its first id, or NULL */
    int gpu_count;
    double tflops_request, tflops_limit, vram_request, vram_limit;
    bool ready;
};

/* Fills W from POD (GPUS: the GPU objects, DEFAULT_POOL for GPUs without the label); false
 * when the pod holds no GPU (not a bound, active TensorFusion client or worker). */
bool tf_ctlmetrics_worker(json_object *pod, json_object *gpus, const char *default_pool,
                          struct tf_ctlmetrics_worker *w);
/* The node of a GPU object (status.nodeSelector's hostname, else its node label), or NULL. */
const char *tf_ctlmetrics_gpu_node(json_object *gpu);
/* A GPU object's status.capacity and status.available (TFLOPS, bytes; available defaults to
 * the capacity when the hypervisor has not reported it); 0 for what is missing or invalid. */
void tf_ctlmetrics_gpu_capacity(json_object *gpu, double *tflops, double *vram,
                                double *avail_tflops, double *avail_vram);

/* Price of QOS in POOL (a GPUPool object): per hour of one FP16 TFLOPS and of one GiB of VRAM
 * and the limits-over-requests ratio; false when the pool prices no such QoS. */
bool tf_ctlmetrics_price(json_object *pool, const char *qos, double *tflops_hour,
                         double *vram_gib_hour, double *over_ratio);

struct tf_ctlmetrics;

/* WRITE_URL: a line-protocol write endpoint (sink.h URI form), e.g.
 * http://greptimedb:4000/v1/influxdb/api/v2/write?db=public&precision=ms. NULL with ERR set
 * when it cannot be used. */
struct tf_ctlmetrics *tf_ctlmetrics_new(const char *write_url, int interval_ms, char *err,
                                        size_t errlen);
void tf_ctlmetrics_destroy(struct tf_ctlmetrics *m);
/* Writes a round when the interval has passed (NOW_MONO_MS: CLOCK_MONOTONIC ms); IN's
 * now_ms and elapsed_s are filled here. */
void tf_ctlmetrics_tick(struct tf_ctlmetrics *m, struct tf_ctlmetrics_in *in, int64_t now_mono_ms);
/* Whether a round is due at NOW_MONO_MS (so the caller snapshots only then). */
bool tf_ctlmetrics_due(const struct tf_ctlmetrics *m, int64_t now_mono_ms);
/* The sink's counters. */
void tf_ctlmetrics_stats(struct tf_ctlmetrics *m, struct tf_metrics_sink_stats *out);

#endif
