/* SPDX-License-Identifier: Apache-2.0
 *
 * The static GPU model table and vendor list (see gpu_models.h). TFLOPS are FP16 dense
 * tensor-core figures from the vendors' datasheets (no sparsity).
 */
#include "core/gpu_models.h"

#include "common/strutil.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define GiB (INT64_C(1) << 30)
#define T(x) ((int64_t)((x)*1000.0 + 0.5))

/* Order matters for tf_gpu_model_find on a family: the first entry of a family is returned. */
static const struct tf_gpu_model models[] = {
    {"A100-40GB", "A100", NULL, "NVIDIA", "NVIDIA A100-SXM4-40GB", T(312), 40 * GiB, 108},
    {"A100-80GB", "A100", NULL, "NVIDIA", "NVIDIA A100-SXM4-80GB", T(312), 80 * GiB, 108},
    {"A800-80GB", "A800", NULL, "NVIDIA", "NVIDIA A800-SXM4-80GB", T(312), 80 * GiB, 108},
    {"H100", "H100", NULL, "NVIDIA", "NVIDIA H100 80GB HBM3", T(989), 80 * GiB, 132},
    {"H100-PCIe", "H100", "PCIE", "NVIDIA", "NVIDIA H100 PCIe", T(756), 80 * GiB, 114},
    {"H800", "H800", NULL, "NVIDIA", "NVIDIA H800", T(989), 80 * GiB, 132},
    {"H200", "H200", NULL, "NVIDIA", "NVIDIA H200", T(989), 141 * GiB, 132},
    {"H20", "H20", NULL, "NVIDIA", "NVIDIA H20", T(148), 96 * GiB, 78},
    {"B200", "B200", NULL, "NVIDIA", "NVIDIA B200", T(2250), 180 * GiB, 148},
    {"L40S", "L40S", NULL, "NVIDIA", "NVIDIA L40S", T(362), 48 * GiB, 142},
    {"L40", "L40", NULL, "NVIDIA", "NVIDIA L40", T(181), 48 * GiB, 142},
    {"L4", "L4", NULL, "NVIDIA", "NVIDIA L4", T(121), 24 * GiB, 58},
    {"A10", "A10", NULL, "NVIDIA", "NVIDIA A10", T(125), 24 * GiB, 72},
    {"A30", "A30", NULL, "NVIDIA", "NVIDIA A30", T(165), 24 * GiB, 56},
    {"A40", "A40", NULL, "NVIDIA", "NVIDIA A40", T(149.7), 48 * GiB, 84},
    {"V100", "V100", NULL, "NVIDIA", "Tesla V100-SXM2-32GB", T(125), 32 * GiB, 80},
    {"T4", "T4", NULL, "NVIDIA", "Tesla T4", T(65), 16 * GiB, 40},
    {"RTX4090", "RTX4090", NULL, "NVIDIA", "NVIDIA GeForce RTX 4090", T(165.2), 24 * GiB, 128},
    {"RTX5090", "RTX5090", NULL, "NVIDIA", "NVIDIA GeForce RTX 5090", T(209.5), 32 * GiB, 170},
    {"MI300X", "MI300X", NULL, "AMD", "AMD Instinct MI300X", T(1307.4), 192 * GiB, 304},
    {"Ascend910B", "Ascend910B", NULL, "Ascend", "Ascend910B", T(320), 64 * GiB, 24},
};

#define NMODELS (sizeof(models) / sizeof(models[0]))

const char *const tf_vendors[13] = {"NVIDIA",   "AMD",       "Ascend",    "Intel",   "Hygon",
                                    "MetaX",    "MThreads",  "Cambricon", "Enflame", "Qualcomm",
                                    "Cerebras", "AWSNeuron", "Google"};

size_t tf_gpu_model_count(void)
{
    return NMODELS;
}

const struct tf_gpu_model *tf_gpu_model_at(size_t i)
{
    return i < NMODELS ? &models[i] : NULL;
}

/* Compares ignoring case and the characters ' ', '-', '_' ("RTX 4090" == "rtx4090"). */
static bool name_eq(const char *a, const char *b)
{
    for (;;) {
        while (*a == ' ' || *a == '-' || *a == '_')
            a++;
        while (*b == ' ' || *b == '-' || *b == '_')
            b++;
        if (!*a || !*b)
            return !*a && !*b;
        if (toupper((unsigned char)*a) != toupper((unsigned char)*b))
            return false;
        a++;
        b++;
    }
}

/* Upstream TensorFusion's board names (its public GPU info list: `model`, GPUModel_BoardSlotType,
 * with the NVML name it lists as `fullModelName`) for the boards of the table, each naming the
 * table entry it is. Form factors the table does not tell apart (A100 SXM and PCIe) name the
 * same entry; an entry's first board is its default (tf_gpu_model_upstream_name). */
static const struct {
    const char *upstream, *name, *nvml;
} aliases[] = {
    {"A100_SXM_40G", "A100-40GB", "NVIDIA A100-SXM4-40GB"},
    {"A100_PCIe_40G", "A100-40GB", "NVIDIA A100 40GB PCIe"},
    {"A100_PCIe_40GB", "A100-40GB", "NVIDIA A100-PCIE-40GB"},
    {"A100_SXM_80G", "A100-80GB", "NVIDIA A100-SXM4-80GB"},
    {"A100_PCIe_80G", "A100-80GB", "NVIDIA A100 80GB PCIe"},
    {"A100_PCIe_80GB", "A100-80GB", "NVIDIA A100-PCIE-80GB"},
    {"A800_SXM_80G", "A800-80GB", "NVIDIA A800-SXM4-80GB"},
    {"A800_PCIe_80G", "A800-80GB", "NVIDIA A800-PCIE-80GB"},
    {"H100_SXM", "H100", "NVIDIA H100 80GB HBM3"},
    {"H100_PCIe", "H100-PCIe", "NVIDIA H100 PCIe"},
    {"H800_SXM", "H800", "NVIDIA H800 80GB HBM3"},
    {"B200_SXM", "B200", "NVIDIA B200 SXM"},
    {"RTX_5090", "RTX5090", "NVIDIA GeForce RTX 5090"},
};

#define NALIASES (sizeof(aliases) / sizeof(aliases[0]))

/* The entry named NAME exactly (canonical name, upstream alias or NVML name), else NULL. */
static const struct tf_gpu_model *find_exact(const char *name)
{
    for (size_t i = 0; i < NMODELS; i++)
        if (name_eq(models[i].name, name))
            return &models[i];
    for (size_t i = 0; i < NALIASES; i++)
        if (name_eq(aliases[i].upstream, name))
            return find_exact(aliases[i].name);
    for (size_t i = 0; i < NMODELS; i++)
        if (name_eq(models[i].nvml_name, name))
            return &models[i];
    return NULL;
}

const struct tf_gpu_model *tf_gpu_model_find(const char *name)
{
    if (!name)
        return NULL;
    const struct tf_gpu_model *m = find_exact(name);
    for (size_t i = 0; !m && i < NMODELS; i++)
        if (name_eq(models[i].family, name))
            m = &models[i];
    return m;
}

const char *tf_gpu_model_upstream_name(const struct tf_gpu_model *m, const char *nvml_name)
{
    if (!m)
        return NULL;
    const char *first = NULL;
    for (size_t i = 0; i < NALIASES; i++) {
        if (strcmp(aliases[i].name, m->name) != 0)
            continue;
        if (nvml_name && name_eq(aliases[i].nvml, nvml_name))
            return aliases[i].upstream;
        if (!first)
            first = aliases[i].upstream;
    }
    return first ? first : m->name;
}

bool tf_gpu_model_matches(const struct tf_gpu_model *gpu, const char *requested)
{
    if (!gpu || !requested)
        return false;
    return name_eq(gpu->family, requested) || find_exact(requested) == gpu;
}

/* Splits an NVML name into upper-case alphanumeric tokens, dropping vendor/brand words, and
 * joins "RTX" with a following number ("GeForce RTX 4090" -> "RTX4090"). */
static int tokenize(const char *name, char tok[][24], int max)
{
    int n = 0;
    const char *p = name;
    while (*p && n < max) {
        while (*p && !isalnum((unsigned char)*p))
            p++;
        int l = 0;
        while (isalnum((unsigned char)*p)) {
            if (l < 23)
                tok[n][l++] = (char)toupper((unsigned char)*p);
            p++;
        }
        if (l == 0)
            break;
        tok[n][l] = 0;
        if (n > 0 && strcmp(tok[n - 1], "RTX") == 0 && isdigit((unsigned char)tok[n][0]) &&
            strlen(tok[n - 1]) + strlen(tok[n]) < 24) {
            size_t a = strlen(tok[n - 1]), b = strlen(tok[n]);
            memmove(tok[n - 1] + a, tok[n], b + 1);
            continue;
        }
        n++;
    }
    return n;
}

static bool has_tok(char tok[][24], int n, const char *want)
{
    for (int i = 0; i < n; i++)
        if (name_eq(tok[i], want))
            return true;
    return false;
}

const struct tf_gpu_model *tf_gpu_model_from_nvml(const char *name, int64_t mem_bytes)
{
    if (!name)
        return NULL;
    char tok[16][24];
    int n = tokenize(name, tok, 16);
    for (int i = 0; i < n && mem_bytes <= 0; i++) {
        /* A memory size in the name ("80GB") stands in for an unknown total. */
        char *end;
        long gb = strtol(tok[i], &end, 10);
        if (end != tok[i] && strcmp(end, "GB") == 0 && gb > 0 && gb < 100000)
            mem_bytes = gb * GiB;
    }
    const struct tf_gpu_model *best = NULL;
    int best_variant = -1;
    int64_t best_dist = 0;
    for (size_t i = 0; i < NMODELS; i++) {
        const struct tf_gpu_model *m = &models[i];
        if (!has_tok(tok, n, m->family))
            continue;
        int variant = m->variant ? (has_tok(tok, n, m->variant) ? 1 : -2) : 0;
        if (variant < -1)
            continue;
        int64_t dist = mem_bytes > 0 ? (m->vram_bytes > mem_bytes ? m->vram_bytes - mem_bytes
                                                                  : mem_bytes - m->vram_bytes)
                                     : 0;
        if (!best || variant > best_variant || (variant == best_variant && dist < best_dist)) {
            best = m;
            best_variant = variant;
            best_dist = dist;
        }
    }
    return best;
}

int64_t tf_percent_to_tflops(int32_t bp, int64_t tflops_milli)
{
    return (int64_t)((__int128)bp * tflops_milli / 10000);
}

int32_t tf_tflops_to_percent(int64_t milli, int64_t tflops_milli)
{
    if (tflops_milli <= 0)
        return 0;
    return (int32_t)(((__int128)milli * 10000 + tflops_milli / 2) / tflops_milli);
}

const char *tf_vendor_canonical(const char *s)
{
    if (s && tf_streq_ci(s, "MooreThreads"))
        return "MThreads"; /* upstream TensorFusion's spelling */
    for (int i = 0; s && i < 13; i++)
        if (tf_streq_ci(tf_vendors[i], s))
            return tf_vendors[i];
    return NULL;
}

/* Upstream TensorFusion's vendors (pkg/constants/vendors.go) beyond the seed's 13. */
static const char *const more_vendors[] = {"Biren",   "THead", "PPU",     "KunlunXin",
                                           "Horizon", "Moore", "Example", "Apple"};

const char *tf_vendor_known(const char *s)
{
    const char *v = tf_vendor_canonical(s);
    for (size_t i = 0; !v && s && i < sizeof(more_vendors) / sizeof(more_vendors[0]); i++)
        if (tf_streq_ci(more_vendors[i], s))
            v = more_vendors[i];
    return v;
}

bool tf_vendor_soft_isolation(const char *vendor)
{
    const char *v = tf_vendor_known(vendor);
    return !v || !strcmp(v, "NVIDIA") || !strcmp(v, "PPU");
}
