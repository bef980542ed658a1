/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: validation of a soft-isolation region's parts from arbitrary bytes (what a
 * limiter or tf-worker does with whatever file TF_SHM_PATH / --limits-region names, and the
 * engine with a usage part the workload may have written). Checks that validation never reads
 * out of bounds and always says why it rejects, that an accepted limits part has sane limits,
 * and that the reservation, memory-view and audit arithmetic on an accepted limits part with
 * an arbitrary usage part never reports used > total nor leaves tokens above the ceiling.
 */
#include "limits/shm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void said_why(const char *err, size_t len)
{
    if (!memchr(err, 0, len) || err[0] == 0)
        abort(); /* every rejection says why */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    uint64_t instance;
    if (tf_shm_validate_usage(data, size, &instance, err, sizeof(err)) != 0)
        said_why(err, sizeof(err));
    if (tf_shm_validate_limits(data, size, err, sizeof(err)) != 0) {
        said_why(err, sizeof(err));
        return 0;
    }
    /* Accepted: map it as a live limits part (aligned copy) beside a usage part made of the
     * same bytes over again (whatever a workload wrote) and exercise the readers. */
    struct tf_shm_region r = {aligned_alloc(64, TF_SHM_LIMITS_SIZE),
                              aligned_alloc(64, TF_SHM_USAGE_SIZE)};
    if (!r.lim || !r.use)
        goto out;
    memcpy(r.lim, data, TF_SHM_LIMITS_SIZE);
    for (size_t i = 0; i < TF_SHM_USAGE_SIZE; i++)
        ((uint8_t *)r.use)[i] = data[i % size];
    struct tf_shm_config c;
    if (tf_shm_read_config(&r, &c) == 0) {
        if (tf_shm_check_config(&c, err, sizeof(err)) != 0)
            abort(); /* validate and the live snapshot must agree */
        for (unsigned i = 0; i < c.ndev; i++) {
            if ((c.dev[i].flags & TF_SHM_DEV_COMPUTE_LIMIT) &&
                (c.dev[i].compute_limit_bp < 1 || c.dev[i].compute_limit_bp > 10000))
                abort();
            uint64_t free, total;
            (void)tf_shm_vram_reserve(&r, i, -1, 1u << 20);
            tf_shm_vram_view(&r, i, 1ull << 33, 1ull << 34, &free, &total);
            if (free > total)
                abort();
            tf_shm_vram_release(&r, i, -1, 1u << 20);
            struct tf_shm_audit a = {.ceiling = 1000, .deficit = 1};
            tf_shm_audit(&r, i, &a);
            int64_t cap = atomic_load(&r.lim->dev[i].bucket.capacity);
            if (atomic_load(&r.use->dev[i].bucket.tokens) > (cap > 1000 ? cap : 1000))
                abort();
        }
    }
out:
    free(r.lim);
    free(r.use);
    return 0;
}
