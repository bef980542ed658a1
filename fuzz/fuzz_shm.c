/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: validation of a soft-isolation region from arbitrary bytes (what a
 * limiter does with whatever file TF_SHM_PATH names). Checks that validation never reads
 * out of bounds, that an accepted region has sane limits, and that the reservation and
 * memory-view arithmetic on an accepted region never reports used > total.
 */
#include "limits/shm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    if (tf_shm_validate(data, size, err, sizeof(err)) != 0) {
        if (!memchr(err, 0, sizeof(err)) || err[0] == 0)
            abort(); /* every rejection says why */
        return 0;
    }
    /* Accepted: map it as a live region (aligned copy) and exercise the readers. */
    struct tf_shm_region *r = aligned_alloc(64, TF_SHM_SIZE);
    if (!r)
        return 0;
    memcpy(r, data, TF_SHM_SIZE);
    struct tf_shm_config c;
    if (tf_shm_read_config(r, &c) == 0) {
        if (tf_shm_check_config(&c, err, sizeof(err)) != 0)
            abort(); /* validate and the live snapshot must agree */
        for (unsigned i = 0; i < c.ndev; i++) {
            if ((c.dev[i].flags & TF_SHM_DEV_COMPUTE_LIMIT) &&
                (c.dev[i].compute_limit_bp < 1 || c.dev[i].compute_limit_bp > 10000))
                abort();
            uint64_t free, total;
            (void)tf_shm_vram_reserve(r, i, -1, 1u << 20);
            tf_shm_vram_view(r, i, 1ull << 33, 1ull << 34, &free, &total);
            if (free > total)
                abort();
            tf_shm_vram_release(r, i, -1, 1u << 20);
        }
    }
    free(r);
    return 0;
}
