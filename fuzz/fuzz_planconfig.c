/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: the planners' configuration parsers on YAML input: a pool spec's
 * efficiency blocks (tf_pool_efficiency_parse) and an autoScalingConfig
 * (tf_autoscale_config_parse, then resolve with the document as verticalScalingRules), and
 * the node requests of Provisioned pools (tf_provision_plan on the parsed pool,
 * tf_node_claim_parse on the document as a GPUNodeClaim spec). What they accept must satisfy
 * the documented ranges.
 */
#include "common/yamljson.h"
#include "core/autoscale.h"
#include "core/efficiency.h"
#include "core/provision.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    json_object *docs = NULL;
    char err[512];
    if (tf_yaml_to_json((const char *)data, size, &docs, err, sizeof(err)))
        return 0;
    json_object *d = json_object_array_get_idx(docs, 0);
    struct tf_pool_efficiency e;
    if (tf_pool_efficiency_parse(d, "pool", &e, err, sizeof(err)) == 0) {
        if (e.compaction_period_ms <= 0 || e.defrag.max_duration_ms <= 0 ||
            e.defrag.utilization_threshold_pct < 0 || e.defrag.utilization_threshold_pct > 100 ||
            (e.defrag.enabled && !e.defrag.timezone[0]))
            abort();
        struct tf_provision_pool p = {
            .eff = e, .running = size & 1, .nodes = (int)(size % 5), .gpus = (int)(size % 17)};
        struct tf_provision_decision pd;
        tf_provision_plan(&p, &pd);
        if (pd.request && (pd.tflops_milli < 0 || pd.vram_bytes < 0 || pd.gpus < 1 ||
                           (!pd.tflops_milli && !pd.vram_bytes)))
            abort();
    } else if (!err[0]) {
        abort();
    }
    struct tf_node_claim nc;
    if (tf_node_claim_parse(d, &nc, err, sizeof(err)) == 0 && (nc.gpus < 0 || nc.gpus > 1024))
        abort();
    struct tf_autoscale_config c;
    if (tf_autoscale_config_parse(d, "spec.autoScalingConfig", &c, err, sizeof(err)) == 0) {
        if (c.nrules > TF_AUTOSCALE_MAX_RULES ||
            !(c.target_compute >= 0 && c.target_compute <= 1) || !(c.margin >= 0) ||
            c.history_ms <= 0)
            abort();
    }
    char matched[TF_AUTOSCALE_NAME_MAX];
    (void)tf_autoscale_config_resolve(d, d, d, "own", true, TF_AUTOSCALE_UNSET, &c, matched,
                                      sizeof(matched), err, sizeof(err));
    json_object_put(docs);
    return 0;
}
