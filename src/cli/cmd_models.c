/* SPDX-License-Identifier: Apache-2.0
 *
 * `tfctl models` and `tfctl version`: print the GPU model table / the version.
 */
#include "cli/cmds.h"
#include "core/gpu_models.h"
#include "core/quantity.h"

#include <stdio.h>

int tf_cmd_models(int argc, char **argv)
{
    printf("%-12s %-10s %-8s %10s %8s %5s  %s\n", "MODEL", "FAMILY", "VENDOR", "FP16-TFLOPS",
           "VRAM", "SMS", "NVML-NAME");
    for (size_t i = 0; i < tf_gpu_model_count(); i++) {
        const struct tf_gpu_model *m = tf_gpu_model_at(i);
        char tf[32], vram[32];
        tf_quantity_format_milli(m->tflops_milli, tf, sizeof(tf));
        tf_quantity_format_bytes(m->vram_bytes, vram, sizeof(vram));
        printf("%-12s %-10s %-8s %10s %8s %5d  %s\n", m->name, m->family, m->vendor, tf, vram,
               m->sm_count, m->nvml_name);
    }
    return 0;
}

int tf_cmd_version(int argc, char **argv)
{
    printf("tfctl %s\n", TF_VERSION);
    return 0;
}
