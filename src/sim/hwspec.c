/* SPDX-License-Identifier: Apache-2.0
 *
 * The simulated GPUs' hardware facts (see hwspec.h). One row per CUDA model of
 * core/gpu_models.c; the limits per SM follow the CUDA programming guide's table of
 * technical specifications per compute capability.
 */
#include "sim/hwspec.h"

#include <stddef.h>
#include <strings.h>

#define KiB 1024
#define MiB (1024 * 1024)

/* CC: compute capability, shared per SM, opt-in per block, threads, blocks, registers per SM */
#define CC70 7, 0, 96 * KiB, 96 * KiB, 2048, 32, 65536
#define CC75 7, 5, 64 * KiB, 64 * KiB, 1024, 16, 65536
#define CC80 8, 0, 164 * KiB, 163 * KiB, 2048, 32, 65536
#define CC86 8, 6, 100 * KiB, 99 * KiB, 1536, 16, 65536
#define CC89 8, 9, 100 * KiB, 99 * KiB, 1536, 24, 65536
#define CC90 9, 0, 228 * KiB, 227 * KiB, 2048, 32, 65536
#define CC100 10, 0, 228 * KiB, 227 * KiB, 2048, 32, 65536
#define CC120 12, 0, 100 * KiB, 99 * KiB, 1536, 32, 65536

static const struct tf_sim_hwspec rows[] = {
    {"A100-40GB", CC80, 1410, 1215, 5120, 40 * MiB, 0x20B0, 400, 0},
    {"A100-80GB", CC80, 1410, 1593, 5120, 40 * MiB, 0x20B2, 400, 0},
    {"A800-80GB", CC80, 1410, 1593, 5120, 40 * MiB, 0x20F3, 400, 0},
    {"H100", CC90, 1980, 2619, 5120, 50 * MiB, 0x2330, 700, 0},
    {"H100-PCIe", CC90, 1755, 1593, 5120, 50 * MiB, 0x2331, 350, 0},
    {"H800", CC90, 1980, 2619, 5120, 50 * MiB, 0x2324, 700, 0},
    {"H200", CC90, 1980, 3201, 6144, 50 * MiB, 0x2335, 700, 0},
    {"H20", CC90, 1980, 2619, 6144, 60 * MiB, 0x2329, 400, 0},
    {"B200", CC100, 1965, 3996, 8192, 126 * MiB, 0x2901, 1000, 0},
    {"L40S", CC89, 2520, 9001, 384, 96 * MiB, 0x26B9, 350, 0},
    {"L40", CC89, 2490, 9001, 384, 96 * MiB, 0x26B5, 300, 0},
    {"L4", CC89, 2040, 6251, 192, 48 * MiB, 0x27B8, 72, 0},
    {"A10", CC86, 1695, 6251, 384, 6 * MiB, 0x2236, 150, 0},
    {"A30", CC80, 1440, 1215, 3072, 24 * MiB, 0x20B7, 165, 0},
    {"A40", CC86, 1740, 7251, 384, 6 * MiB, 0x2235, 300, 0},
    {"V100", CC70, 1530, 877, 4096, 6 * MiB, 0x1DB5, 300, 0},
    {"T4", CC75, 1590, 5001, 256, 4 * MiB, 0x1EB8, 70, 0},
    {"RTX4090", CC89, 2520, 10501, 384, 72 * MiB, 0x2684, 450, 1},
    {"RTX5090", CC120, 2407, 14001, 512, 96 * MiB, 0x2B85, 575, 1},
};

#define NROWS (sizeof(rows) / sizeof(rows[0]))

const struct tf_sim_hwspec *tf_sim_hwspec_find(const char *model)
{
    if (!model)
        return NULL;
    for (size_t i = 0; i < NROWS; i++)
        if (strcasecmp(rows[i].model, model) == 0)
            return &rows[i];
    return NULL;
}
