/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: the simulated-GPU configuration parsers (TF_SIM_DEVICES lists and
 * TF_SIM_CONFIG files). The first byte picks the parser; a successful parse must yield a
 * valid configuration (known models with hardware facts, memory and SM counts in range,
 * UUIDs that format and parse back to the same bytes).
 */
#include "sim/simcfg.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct tf_sim_config *cfg)
{
    if (cfg->ndev < 0 || cfg->ndev > TF_SIM_MAX_DEVICES)
        abort();
    for (int i = 0; i < cfg->ndev; i++) {
        const struct tf_sim_devcfg *d = &cfg->dev[i];
        if (!d->model || !d->hw || d->memory <= 0 || d->memory > TF_SIM_MAX_MEMORY ||
            d->sm_count < 1 || d->sm_count > TF_SIM_MAX_SMS)
            abort();
        uint8_t back[16];
        if (strlen(d->uuid_str) != TF_SIM_UUID_LEN || tf_sim_uuid_parse(d->uuid_str, back) ||
            memcmp(back, d->uuid, 16) != 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 8192)
        return 0;
    struct tf_sim_config cfg;
    char err[256];
    tf_sim_config_default(&cfg);
    if (data[0] & 1) {
        if (tf_sim_config_parse_file(&cfg, (const char *)data + 1, size - 1, "fuzz", err,
                                     sizeof(err)) == 0)
            check(&cfg);
    } else {
        char *s = malloc(size);
        if (!s)
            return 0;
        memcpy(s, data + 1, size - 1);
        s[size - 1] = 0;
        if (tf_sim_config_parse_devices(&cfg, s, "TF_SIM_DEVICES", err, sizeof(err)) == 0)
            check(&cfg);
        free(s);
    }
    return 0;
}
