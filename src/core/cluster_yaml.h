/* SPDX-License-Identifier: Apache-2.0
 *
 * Cluster descriptions (YAML or JSON, one document) -> a tf_cluster and its quotas, for
 * `tfctl simulate`, benchmarks and tests. Shape (every key optional unless marked; unknown
 * keys are errors):
 *
 *   isolationModePolicy: dynamic | static          # default dynamic (the chart's)
 *   partitionTemplates:                            # replace a model's built-in MIG profile
 *     - model: A100-80GB                           # required
 *       computeSlots: 7                            # required
 *       memorySlots: 8                             # required
 *       templates:                                 # required, 1..8
 *         - {id: 1g.10gb, computeSlots: 1, memorySlots: 1, tflops: "44.5", vram: 10Gi}
 *           # tflops / vram default to the model's x slots / total
 *   quotas:                                        # GPUResourceQuota specs by namespace
 *     - namespace: team-a                          # required
 *       total:  {requests: {tflops, vram}, limits: {tflops, vram}, maxWorkers,
 *                alertThresholdPercent}
 *       single: {maxRequests, maxLimits, maxGPUCount, defaultRequests, defaultLimits}
 *   pools:                                         # required, at least one
 *     - name: default                              # required
 *       isDefault: true
 *       placement: CompactFirst | LowLoadFirst | NodeCompactGPULowLoad
 *       oversubscription: {tflopsOversellRatio: 500, vramExpandToHostMem: 50,
 *                          vramExpandToHostDisk: 70}  # or in capacityConfig, as upstream;
 *                                                     # host disk: checked, not modelled
 *       scoring: {vramWeight: 0.7, tflopsWeight: 0.3}
 *       maxWorkersPerNode: 0
 *       capacityConfig: {minResources: {tflops, vram, cpu, memory}, maxResources: {...},
 *                        warmResources: {...}, oversubscription}  # cpu/memory: checked only
 *       qosConfig: {defaultQoS: medium, pricing: [{qos, requests: {perFP16TFlopsPerHour,
 *                   perGBOfVRAMPerHour}, limitsOverRequests: "0.3"}]}
 *                   # upstream's ratio string; limitsOverRequestsChargingRatio: 30 (percent,
 *                   # our former spelling) is still read
 *       nodeManagerConfig: {defaultIsolationMode: soft,
 *                           isolationModeRules: [{mode: hard, selector: LabelSelector}]}
 *       nodes:                                     # required
 *         - name: n1                               # required
 *           labels: {k: v}                         # matched by isolationModeRules
 *           isolationMode: hard                    # static policy: overrides the rules
 *           hostMemory: 512Gi                      # for vramExpandToHostMem
 *           maxWorkers: 8                          # overrides maxWorkersPerNode
 *           gpus:                                  # required, 1..64 GPUs in all
 *             - {model: A100-80GB, count: 8, nvlink: true, numaNodes: 2}
 *             - {uuid: GPU-1234, model: H100, index: 3, numa: 1, nvlink: [0, 1, 2]}
 *             # either form also takes phase (Running, Pending, ...), tflops, vram
 *
 * `count` GPUs get the next free indexes and uuids "GPU-<node>-<index>"; `nvlink: true` links
 * all GPUs of the entry, `numaNodes: N` splits them evenly over N NUMA nodes. Under the static
 * policy a node's mode is its isolationMode, else the first isolationModeRules entry whose
 * selector matches its labels, else defaultIsolationMode, else soft. Quantities are Kubernetes
 * quantities (strings or numbers): TFLOPS "312" / 0.5, VRAM "80Gi" / bytes.
 *
 * Errors name the offending path and value, e.g.
 *   pools[0].nodes[3].gpus[1].model: unknown GPU model "A1000"
 * Pure (parses the caller's buffer); thread-safe.
 */
#ifndef TF_CORE_CLUSTER_YAML_H
#define TF_CORE_CLUSTER_YAML_H

#include "core/cluster.h"
#include "core/quota.h"

#include <json-c/json.h>
#include <stddef.h>

/* Parses the description in BUF[0..LEN) (YAML or JSON). On success returns 0 and the new
 * cluster in *CLUSTER and quota set in *QUOTAS (caller owns both: tf_cluster_destroy,
 * tf_quota_set_destroy). On error returns TF_EPARSE (syntax), TF_EINVAL (bad key or value),
 * TF_ERANGE or TF_ENOMEM, with the message in ERR, and leaves both NULL. */
int tf_cluster_yaml_parse(const char *buf, size_t len, struct tf_cluster **cluster,
                          struct tf_quota_set **quotas, char *err, size_t errlen);

/* The same from a parsed document DOC (not modified). */
int tf_cluster_from_json(json_object *doc, struct tf_cluster **cluster,
                         struct tf_quota_set **quotas, char *err, size_t errlen);

#endif
