/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only: a limit region file made as the hypervisor makes it (include/tf/shm.h), for the
 * suites that run a consumer of it (the limiter, tf-worker --limits-region). Include after
 * <cmocka.h>: a region that cannot be made fails the test.
 */
#ifndef TF_TESTS_LIMITS_REGION_FIXTURE_H
#define TF_TESTS_LIMITS_REGION_FIXTURE_H

#include "limits/shm.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Files as the tests make them: readable limits, usage for the test's own user. */
static const struct tf_shm_perms test_perms = {.lmode = 0644, .umode = 0600, .uid = -1, .gid = -1};

/* (Re)creates the region at PATH (its usage part in PATH's directory's rw/) named NAME with NDEV
 * devices of UUIDS, each with the VRAM limit VRAM bytes and the compute limit BP basis points where
 * these are not 0, and physical memory MEM_TOTAL (0: unknown). */
static inline struct tf_shm_map tf_test_region(const char *path, const char *name, int ndev,
                                               const uint8_t (*uuids)[16], uint64_t vram,
                                               uint32_t bp, uint64_t mem_total)
{
    unlink(path);
    char upath[600];
    if (tf_shm_usage_path(path, upath, sizeof(upath)))
        unlink(upath);
    struct tf_shm_config c;
    memset(&c, 0, sizeof(c));
    snprintf(c.name, sizeof(c.name), "%s", name);
    c.ndev = (uint32_t)ndev;
    for (int i = 0; i < ndev; i++) {
        memcpy(c.dev[i].uuid, uuids[i], 16);
        c.dev[i].flags = TF_SHM_DEV_PRESENT | (vram ? TF_SHM_DEV_VRAM_LIMIT : 0) |
                         (bp ? TF_SHM_DEV_COMPUTE_LIMIT : 0);
        c.dev[i].vram_limit = vram;
        c.dev[i].compute_limit_bp = bp;
        c.dev[i].mem_total = mem_total;
    }
    struct tf_shm_map m;
    char err[256];
    if (tf_shm_create(path, &c, &test_perms, &m, err, sizeof(err)) != 0)
        fail_msg("create region %s: %s", path, err);
    return m;
}

#endif
