/* SPDX-License-Identifier: Apache-2.0
 *
 * The metric tables of seed 002 (and upstream TensorFusion's GreptimeDB schema): names, tag
 * columns and field columns with their types. Every writer of metric lines uses these names,
 * and the SQLite sink creates exactly these tables, so the seed's SQL runs unchanged.
 *
 *   table               tags                                        fields
 *   tf_gpu_usage        node pool uuid                              compute_percentage ...
 *   tf_worker_usage     node pool uuid worker namespace workload    compute_tflops ...
 *   tf_worker_resources worker workload pool namespace qos          tflops_request ...
 *   tf_node_metrics     node pool phase                             allocated_tflops ...
 *   tf_pool_metrics     pool phase                                  allocated_tflops ...
 *   tf_system_metrics   pool                                        total_workers_cnt ...
 * Every table also has the time column "greptime_timestamp" (GreptimeDB's name for the
 * line-protocol timestamp), milliseconds since the epoch.
 *
 * The table is static and read-only; functions are pure and thread-safe.
 */
#ifndef TF_METRICS_SCHEMA_H
#define TF_METRICS_SCHEMA_H

#include "metrics/lineproto.h"

#include <stddef.h>

#define TF_METRICS_TS_COLUMN "greptime_timestamp"

struct tf_metric_column {
    const char *name;
    enum tf_lp_type type; /* of a field; tags are strings */
};

struct tf_metric_table {
    const char *name;
    const char *const *tags; /* NULL-terminated */
    const struct tf_metric_column *fields;
    size_t nfields;
};

size_t tf_metric_table_count(void);
const struct tf_metric_table *tf_metric_table_at(size_t i);
/* The table named NAME, or NULL. */
const struct tf_metric_table *tf_metric_table_find(const char *name);

#endif
