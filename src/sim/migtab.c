/* SPDX-License-Identifier: Apache-2.0
 *
 * The simulated GPU's MIG table (see migtab.h).
 */
#include "sim/migtab.h"

#include "common/err.h"
#include "common/strutil.h"
#include "sim/nvml_abi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

void tf_sim_mig_init(struct tf_sim_mig_table *t)
{
    memset(t, 0, sizeof(*t));
    t->magic = TF_SIM_MIG_MAGIC;
    t->version = 1;
    t->mode = NVML_DEVICE_MIG_DISABLE;
    t->next_gen = 1;
}

/* Compute and memory slices used by T's instances, and a bitmap of its memory slices. */
static void used(const struct tf_sim_mig_table *t, const struct tf_partition_profile *p,
                 unsigned *compute, uint64_t *mem)
{
    *compute = 0;
    *mem = 0;
    for (unsigned i = 0; i < TF_SIM_MIG_MAX; i++) {
        const struct tf_sim_mig_inst *in = &t->inst[i];
        if (!in->gi_id)
            continue;
        *compute += p->templates[in->tpl].compute_slots;
        for (uint32_t s = in->start; s < in->start + in->size && s < 64; s++)
            *mem |= UINT64_C(1) << s;
    }
}

int tf_sim_mig_check(const struct tf_sim_mig_table *t, const struct tf_partition_profile *p)
{
    if (t->magic != TF_SIM_MIG_MAGIC || t->version != 1 ||
        (t->mode != NVML_DEVICE_MIG_ENABLE && t->mode != NVML_DEVICE_MIG_DISABLE))
        return TF_ESTATE;
    unsigned compute = 0;
    uint64_t mem = 0;
    for (unsigned i = 0; i < TF_SIM_MIG_MAX; i++) {
        const struct tf_sim_mig_inst *in = &t->inst[i];
        if (!in->gi_id)
            continue;
        if (in->gi_id != i + 1 || t->mode != NVML_DEVICE_MIG_ENABLE || in->tpl >= p->ntemplates ||
            in->size != p->templates[in->tpl].memory_slots || in->start % in->size ||
            in->start + in->size > p->memory_total || in->has_ci > 1)
            return TF_ESTATE;
        uint64_t bits = ((UINT64_C(1) << in->size) - 1) << in->start;
        if (mem & bits)
            return TF_ESTATE;
        mem |= bits;
        compute += p->templates[in->tpl].compute_slots;
    }
    return compute <= p->compute_total ? 0 : TF_ESTATE;
}

unsigned tf_sim_mig_profile_id(const struct tf_partition_template *tpl)
{
    if (tpl->compute_slots == 1 && tpl->memory_slots == 2)
        return NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2;
    switch (tpl->compute_slots) {
    case 1:
        return NVML_GPU_INSTANCE_PROFILE_1_SLICE;
    case 2:
        return NVML_GPU_INSTANCE_PROFILE_2_SLICE;
    case 3:
        return NVML_GPU_INSTANCE_PROFILE_3_SLICE;
    case 4:
        return NVML_GPU_INSTANCE_PROFILE_4_SLICE;
    case 6:
        return NVML_GPU_INSTANCE_PROFILE_6_SLICE;
    case 7:
        return NVML_GPU_INSTANCE_PROFILE_7_SLICE;
    case 8:
        return NVML_GPU_INSTANCE_PROFILE_8_SLICE;
    default:
        return NVML_GPU_INSTANCE_PROFILE_COUNT; /* no NVML profile */
    }
}

int tf_sim_mig_template(const struct tf_partition_profile *p, unsigned profile_id)
{
    for (unsigned i = 0; i < p->ntemplates; i++)
        if (tf_sim_mig_profile_id(&p->templates[i]) == profile_id)
            return (int)i;
    return -1;
}

/* The lowest free aligned placement of TPL in T, or -1. */
static int placement(const struct tf_sim_mig_table *t, const struct tf_partition_profile *p,
                     unsigned tpl, uint64_t mem_extra, unsigned compute_extra)
{
    unsigned compute;
    uint64_t mem;
    used(t, p, &compute, &mem);
    mem |= mem_extra;
    compute += compute_extra;
    const struct tf_partition_template *pt = &p->templates[tpl];
    if (compute + pt->compute_slots > p->compute_total)
        return -1;
    uint64_t bits = (UINT64_C(1) << pt->memory_slots) - 1;
    for (unsigned s = 0; s + pt->memory_slots <= p->memory_total; s += pt->memory_slots)
        if (!(mem & (bits << s)))
            return (int)s;
    return -1;
}

unsigned tf_sim_mig_capacity(const struct tf_sim_mig_table *t, const struct tf_partition_profile *p,
                             unsigned tpl)
{
    unsigned n = 0, free_entries = 0, compute = 0;
    uint64_t mem = 0;
    for (unsigned i = 0; i < TF_SIM_MIG_MAX; i++)
        free_entries += !t->inst[i].gi_id;
    if (t->mode != NVML_DEVICE_MIG_ENABLE || tpl >= p->ntemplates)
        return 0;
    int s;
    while (n < free_entries && (s = placement(t, p, tpl, mem, compute)) >= 0) {
        mem |= ((UINT64_C(1) << p->templates[tpl].memory_slots) - 1) << s;
        compute += p->templates[tpl].compute_slots;
        n++;
    }
    return n;
}

int tf_sim_mig_create(struct tf_sim_mig_table *t, const struct tf_partition_profile *p,
                      unsigned tpl, uint32_t *gi_id)
{
    if (t->mode != NVML_DEVICE_MIG_ENABLE || tpl >= p->ntemplates)
        return TF_EINVAL;
    int s = placement(t, p, tpl, 0, 0);
    for (unsigned i = 0; s >= 0 && i < TF_SIM_MIG_MAX; i++) {
        struct tf_sim_mig_inst *in = &t->inst[i];
        if (in->gi_id)
            continue;
        memset(in, 0, sizeof(*in));
        in->gi_id = i + 1;
        in->tpl = tpl;
        in->start = (uint32_t)s;
        in->size = p->templates[tpl].memory_slots;
        in->gen = t->next_gen++;
        *gi_id = in->gi_id;
        return 0;
    }
    return TF_ENOSPC;
}

struct tf_sim_mig_inst *tf_sim_mig_find(struct tf_sim_mig_table *t, uint32_t gi_id)
{
    if (gi_id < 1 || gi_id > TF_SIM_MIG_MAX || t->inst[gi_id - 1].gi_id != gi_id)
        return NULL;
    return &t->inst[gi_id - 1];
}

void tf_sim_mig_uuid(const char *parent, const struct tf_sim_mig_inst *inst,
                     char out[TF_SIM_MIG_UUID_LEN])
{
    uint64_t h[2] = {UINT64_C(0xcbf29ce484222325), UINT64_C(0x84222325cbf29ce4)};
    for (int k = 0; k < 2; k++) {
        for (const char *c = parent; *c; c++)
            h[k] = (h[k] ^ (unsigned char)*c) * UINT64_C(0x100000001b3);
        uint32_t v[2] = {inst->gi_id, inst->gen};
        for (size_t i = 0; i < sizeof(v); i++)
            h[k] = (h[k] ^ ((const unsigned char *)v)[i]) * UINT64_C(0x100000001b3);
        h[k] ^= h[k] >> 29;
    }
    snprintf(out, TF_SIM_MIG_UUID_LEN, "MIG-%08x-%04x-%04x-%04x-%012llx", (unsigned)(h[0] >> 32),
             (unsigned)(h[0] >> 16) & 0xffffu, ((unsigned)h[0] & 0x0fffu) | 0x4000u,
             (unsigned)(h[1] >> 48 & 0x3fffu) | 0x8000u,
             (unsigned long long)(h[1] & UINT64_C(0xffffffffffff)));
}

int tf_sim_mig_lock(const char *path, const struct tf_partition_profile *p, int *fd,
                    struct tf_sim_mig_table *t, int *fresh, char *err, size_t errlen)
{
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (f < 0) {
        tf_errf(err, errlen, "%s: %s", path, strerror(errno));
        return TF_EIO;
    }
    while (flock(f, LOCK_EX) != 0)
        if (errno != EINTR) {
            tf_errf(err, errlen, "%s: flock: %s", path, strerror(errno));
            close(f);
            return TF_EIO;
        }
    ssize_t n = pread(f, t, sizeof(*t), 0);
    *fresh = n != (ssize_t)sizeof(*t) || tf_sim_mig_check(t, p) != 0;
    if (*fresh)
        tf_sim_mig_init(t);
    *fd = f;
    return 0;
}

int tf_sim_mig_store(int fd, const struct tf_sim_mig_table *t)
{
    return pwrite(fd, t, sizeof(*t), 0) == (ssize_t)sizeof(*t) ? 0 : TF_EIO;
}

void tf_sim_mig_unlock(int fd)
{
    flock(fd, LOCK_UN);
    close(fd);
}
