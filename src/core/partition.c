/* SPDX-License-Identifier: Apache-2.0
 *
 * Built-in MIG profiles and template matching (see partition.h).
 */
#include "core/partition.h"

#include "common/err.h"
#include "common/strutil.h"

#include <string.h>

struct builtin_tpl {
    const char *id;
    uint8_t c, m;
};

struct builtin_profile {
    const char *model;
    uint8_t compute_total, memory_total;
    struct builtin_tpl tpl[TF_PART_MAX_TEMPLATES];
};

/* NVIDIA's MIG profiles (compute slices of 7 or 4, memory slices of 8 or 4). */
static const struct builtin_profile builtins[] = {
    {"A100-40GB",
     7,
     8,
     {{"1g.5gb", 1, 1},
      {"2g.10gb", 2, 2},
      {"3g.20gb", 3, 4},
      {"4g.20gb", 4, 4},
      {"7g.40gb", 7, 8}}},
    {"A100-80GB",
     7,
     8,
     {{"1g.10gb", 1, 1},
      {"2g.20gb", 2, 2},
      {"3g.40gb", 3, 4},
      {"4g.40gb", 4, 4},
      {"7g.80gb", 7, 8}}},
    {"A800-80GB",
     7,
     8,
     {{"1g.10gb", 1, 1},
      {"2g.20gb", 2, 2},
      {"3g.40gb", 3, 4},
      {"4g.40gb", 4, 4},
      {"7g.80gb", 7, 8}}},
    {"A30", 4, 4, {{"1g.6gb", 1, 1}, {"2g.12gb", 2, 2}, {"4g.24gb", 4, 4}}},
    {"H100",
     7,
     8,
     {{"1g.10gb", 1, 1},
      {"1g.20gb", 1, 2},
      {"2g.20gb", 2, 2},
      {"3g.40gb", 3, 4},
      {"4g.40gb", 4, 4},
      {"7g.80gb", 7, 8}}},
    {"H100-PCIe",
     7,
     8,
     {{"1g.10gb", 1, 1},
      {"1g.20gb", 1, 2},
      {"2g.20gb", 2, 2},
      {"3g.40gb", 3, 4},
      {"4g.40gb", 4, 4},
      {"7g.80gb", 7, 8}}},
    {"H800",
     7,
     8,
     {{"1g.10gb", 1, 1},
      {"1g.20gb", 1, 2},
      {"2g.20gb", 2, 2},
      {"3g.40gb", 3, 4},
      {"4g.40gb", 4, 4},
      {"7g.80gb", 7, 8}}},
    {"H20",
     7,
     8,
     {{"1g.12gb", 1, 1},
      {"1g.24gb", 1, 2},
      {"2g.24gb", 2, 2},
      {"3g.48gb", 3, 4},
      {"4g.48gb", 4, 4},
      {"7g.96gb", 7, 8}}},
    {"H200",
     7,
     8,
     {{"1g.18gb", 1, 1},
      {"1g.35gb", 1, 2},
      {"2g.35gb", 2, 2},
      {"3g.71gb", 3, 4},
      {"4g.71gb", 4, 4},
      {"7g.141gb", 7, 8}}},
    {"B200",
     7,
     8,
     {{"1g.23gb", 1, 1},
      {"1g.45gb", 1, 2},
      {"2g.45gb", 2, 2},
      {"3g.90gb", 3, 4},
      {"4g.90gb", 4, 4},
      {"7g.180gb", 7, 8}}},
};

int tf_partition_builtin(const struct tf_gpu_model *model, struct tf_partition_profile *out)
{
    if (!model)
        return TF_EINVAL;
    for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
        const struct builtin_profile *b = &builtins[i];
        if (strcmp(b->model, model->name) != 0)
            continue;
        memset(out, 0, sizeof(*out));
        out->model = model;
        out->compute_total = b->compute_total;
        out->memory_total = b->memory_total;
        for (int t = 0; t < TF_PART_MAX_TEMPLATES && b->tpl[t].id; t++) {
            struct tf_partition_template *pt = &out->templates[out->ntemplates++];
            tf_strlcpy(pt->id, b->tpl[t].id, sizeof(pt->id));
            pt->compute_slots = b->tpl[t].c;
            pt->memory_slots = b->tpl[t].m;
            pt->tflops_milli = model->tflops_milli * b->tpl[t].c / b->compute_total;
            pt->vram_bytes = model->vram_bytes / b->memory_total * b->tpl[t].m;
        }
        return 0;
    }
    return TF_ENOENT;
}

int tf_partition_validate(const struct tf_partition_profile *p, char *err, size_t errlen)
{
    if (!p->model) {
        tf_errf(err, errlen, "partition profile without a GPU model");
        return TF_EINVAL;
    }
    if (p->compute_total < 1 || p->compute_total > 64 || p->memory_total < 1 ||
        p->memory_total > 64) {
        tf_errf(err, errlen, "%s: computeSlots and memorySlots must be 1..64", p->model->name);
        return TF_EINVAL;
    }
    if (p->ntemplates < 1 || p->ntemplates > TF_PART_MAX_TEMPLATES) {
        tf_errf(err, errlen, "%s: 1..%d templates needed", p->model->name, TF_PART_MAX_TEMPLATES);
        return TF_EINVAL;
    }
    for (unsigned i = 0; i < p->ntemplates; i++) {
        const struct tf_partition_template *t = &p->templates[i];
        if (!t->id[0]) {
            tf_errf(err, errlen, "%s: template %u has no id", p->model->name, i);
            return TF_EINVAL;
        }
        if (t->compute_slots < 1 || t->compute_slots > p->compute_total || t->memory_slots < 1 ||
            t->memory_slots > p->memory_total) {
            tf_errf(err, errlen, "%s: template %s: slots must be 1..%u compute, 1..%u memory",
                    p->model->name, t->id, p->compute_total, p->memory_total);
            return TF_EINVAL;
        }
        if (t->tflops_milli <= 0 || t->tflops_milli > p->model->tflops_milli ||
            t->vram_bytes <= 0 || t->vram_bytes > p->model->vram_bytes) {
            tf_errf(err, errlen, "%s: template %s: resources must be positive and within the GPU's",
                    p->model->name, t->id);
            return TF_EINVAL;
        }
        for (unsigned j = 0; j < i; j++)
            if (!strcmp(p->templates[j].id, t->id)) {
                tf_errf(err, errlen, "%s: duplicate template %s", p->model->name, t->id);
                return TF_EINVAL;
            }
    }
    return 0;
}

int tf_partition_match(const struct tf_partition_profile *p, int64_t req_tflops, int64_t req_vram,
                       unsigned free_compute, unsigned free_memory, const char *only_id)
{
    int best = -1;
    for (unsigned i = 0; i < p->ntemplates; i++) {
        const struct tf_partition_template *t = &p->templates[i];
        if (only_id && strcmp(t->id, only_id) != 0)
            continue;
        if (t->tflops_milli < req_tflops || t->vram_bytes < req_vram)
            continue;
        if (t->compute_slots > free_compute || t->memory_slots > free_memory)
            continue;
        if (best >= 0) {
            const struct tf_partition_template *b = &p->templates[best];
            if (t->compute_slots > b->compute_slots)
                continue;
            if (t->compute_slots == b->compute_slots) {
                if (t->memory_slots > b->memory_slots)
                    continue;
                if (t->memory_slots == b->memory_slots && t->vram_bytes >= b->vram_bytes)
                    continue;
            }
        }
        best = (int)i;
    }
    return best;
}
