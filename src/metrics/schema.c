/* SPDX-License-Identifier: Apache-2.0
 *
 * The seed 002 metric tables (see schema.h).
 */
#include "metrics/schema.h"

#include <string.h>

#define F(n)                                                                                       \
    {                                                                                              \
        n, TF_LP_FLOAT                                                                             \
    }
#define I(n)                                                                                       \
    {                                                                                              \
        n, TF_LP_INT                                                                               \
    }
#define B(n)                                                                                       \
    {                                                                                              \
        n, TF_LP_BOOL                                                                              \
    }
#define N(a) (sizeof(a) / sizeof(a[0]))

static const char *const gpu_tags[] = {"node", "pool", "uuid", NULL};
static const struct tf_metric_column gpu_fields[] = {
    F("compute_percentage"),
    F("compute_tflops"),
    I("memory_bytes"),
    F("memory_percentage"),
    F("rx"),
    F("tx"),
    F("temperature"),
    F("graphics_clock_mhz"),
    F("sm_clock_mhz"),
    F("memory_clock_mhz"),
    F("video_clock_mhz"),
    F("power_usage"),
    F("nvlink_rx"),
    F("nvlink_tx"),
};

static const char *const wu_tags[] = {"node",      "pool",     "uuid", "worker",
                                      "namespace", "workload", NULL};
static const struct tf_metric_column wu_fields[] = {
    F("compute_percentage"), F("compute_tflops"),        I("memory_bytes"),
    F("memory_percentage"),  I("compute_throttled_cnt"),
};

static const char *const wr_tags[] = {"worker", "workload", "pool", "namespace", "qos", NULL};
static const struct tf_metric_column wr_fields[] = {
    F("tflops_request"),
    F("tflops_limit"),
    F("vram_bytes_request"),
    F("vram_bytes_limit"),
    I("gpu_count"),
    F("raw_cost"),
    B("ready"),
};

static const char *const node_tags[] = {"node", "pool", "phase", NULL};
static const struct tf_metric_column node_fields[] = {
    F("allocated_tflops"),
    F("allocated_tflops_percent"),
    F("allocated_vram_bytes"),
    F("allocated_vram_percent"),
    F("allocated_tflops_percent_virtual"),
    F("allocated_vram_percent_virtual"),
    F("raw_cost"),
    I("gpu_count"),
};

static const char *const pool_tags[] = {"pool", "phase", NULL};
static const struct tf_metric_column pool_fields[] = {
    F("allocated_tflops"),
    F("allocated_tflops_percent"),
    F("allocated_vram_bytes"),
    F("allocated_vram_percent"),
    F("allocated_tflops_percent_virtual"),
    F("allocated_vram_percent_virtual"),
    F("limited_tflops"),
    F("limited_vram_bytes"),
    F("limited_tflops_percent_virtual"),
    F("limited_vram_percent_virtual"),
    I("gpu_count"),
};

static const char *const sys_tags[] = {"pool", NULL};
static const struct tf_metric_column sys_fields[] = {
    I("total_workers_cnt"),         I("total_nodes_cnt"),
    I("total_allocation_fail_cnt"), I("total_allocation_success_cnt"),
    I("total_scale_up_cnt"),        I("total_scale_down_cnt"),
};

static const struct tf_metric_table tables[] = {
    {"tf_gpu_usage", gpu_tags, gpu_fields, N(gpu_fields)},
    {"tf_worker_usage", wu_tags, wu_fields, N(wu_fields)},
    {"tf_worker_resources", wr_tags, wr_fields, N(wr_fields)},
    {"tf_node_metrics", node_tags, node_fields, N(node_fields)},
    {"tf_pool_metrics", pool_tags, pool_fields, N(pool_fields)},
    {"tf_system_metrics", sys_tags, sys_fields, N(sys_fields)},
};

size_t tf_metric_table_count(void)
{
    return N(tables);
}

const struct tf_metric_table *tf_metric_table_at(size_t i)
{
    return i < N(tables) ? &tables[i] : NULL;
}

const struct tf_metric_table *tf_metric_table_find(const char *name)
{
    for (size_t i = 0; name && i < N(tables); i++)
        if (strcmp(tables[i].name, name) == 0)
            return &tables[i];
    return NULL;
}
