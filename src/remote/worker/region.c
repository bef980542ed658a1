/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker's limits from the pod's limit region; see region.h.
 */
#include "remote/worker/region.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "limits/proc.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define SUBSYS "worker"

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Opens the region at PATH, polling every TF_WREGION_POLL_MS while it does not exist, for
 * at most WAIT_MS. */
static int wait_open(const char *path, int wait_ms, struct tf_shm_map *m, char *err, size_t errlen)
{
    uint64_t start = mono_ms();
    bool logged = false;
    char why[600];
    for (;;) {
        int rc = tf_shm_open(path, TF_SHM_APP, m, why, sizeof(why));
        if (rc == 0) {
            if (logged)
                tf_log(TF_LOG_INFO, SUBSYS, "limit region %s appeared after %.1f s", path,
                       (double)(mono_ms() - start) / 1e3);
            return 0;
        }
        uint64_t waited = mono_ms() - start;
        if (rc != TF_ENOENT) {
            tf_errf(err, errlen, "--limits-region: %s", why);
            return rc;
        }
        if (waited >= (uint64_t)wait_ms) {
            tf_errf(err, errlen,
                    "--limits-region: no limit region after waiting %d s (%s); a "
                    "hard-isolated worker does not run without its limits",
                    wait_ms / 1000, why);
            return TF_ENOENT;
        }
        if (!logged) {
            tf_log(TF_LOG_INFO, SUBSYS,
                   "waiting up to %d s for the limit region %s (the hypervisor creates it)",
                   wait_ms / 1000, path);
            logged = true;
        }
        uint64_t left = (uint64_t)wait_ms - waited;
        sleep_ms(left < TF_WREGION_POLL_MS ? (unsigned)left : TF_WREGION_POLL_MS);
    }
}

/* The entry of CFG for device D: the one with D's UUID, else an all-zero-UUID entry at D's
 * driver ordinal. -1 if none. */
static int find_entry(const struct tf_shm_config *cfg, const struct tf_wregion_dev *d)
{
    static const uint8_t zero[16];
    for (uint32_t k = 0; k < cfg->ndev; k++)
        if (memcmp(cfg->dev[k].uuid, d->uuid, 16) == 0)
            return (int)k;
    if (d->ordinal >= 0 && (uint32_t)d->ordinal < cfg->ndev &&
        memcmp(cfg->dev[d->ordinal].uuid, zero, 16) == 0)
        return d->ordinal;
    return -1;
}

static void log_entry(const struct tf_wregion *g, int i, const struct tf_shm_dev_config *c)
{
    char u[48], vram[48] = "none", comp[32] = "none";
    tf_shm_uuid_format(c->uuid, u, sizeof(u));
    if (c->flags & TF_SHM_DEV_VRAM_LIMIT)
        snprintf(vram, sizeof(vram), "%" PRIu64 " bytes", c->vram_limit);
    if (c->flags & TF_SHM_DEV_COMPUTE_LIMIT)
        snprintf(comp, sizeof(comp), "%u.%02u%%", c->compute_limit_bp / 100,
                 c->compute_limit_bp % 100);
    tf_log(TF_LOG_INFO, SUBSYS,
           "device %d = entry %d of %s (%s): VRAM limit %s, compute limit %s (live)", i,
           g->entry[i], g->path, u, vram, comp);
}

int tf_wregion_open(struct tf_wregion *g, const char *path, int wait_ms,
                    const struct tf_wregion_dev *devs, int ndev, char *err, size_t errlen)
{
    memset(g, 0, sizeof(*g));
    g->slot = -1;
    if (snprintf(g->path, sizeof(g->path), "%s", path) >= (int)sizeof(g->path)) {
        tf_errf(err, errlen, "--limits-region: path too long (%zu bytes)", strlen(path));
        return TF_EINVAL;
    }
    if (ndev < 1 || ndev > TF_SHM_MAX_DEVICES) {
        tf_errf(err, errlen, "--limits-region %s: %d devices (a region holds at most %d)", path,
                ndev, TF_SHM_MAX_DEVICES);
        return TF_EINVAL;
    }
    int rc = wait_open(path, wait_ms < 0 ? 0 : wait_ms, &g->map, err, errlen);
    if (rc)
        return rc;
    struct tf_shm_config cfg;
    if (tf_shm_read_config(&g->map.r, &cfg) != 0) {
        tf_errf(err, errlen,
                "--limits-region %s: its writer left a config update unfinished (seq stays odd)",
                path);
        rc = TF_EPROTO;
        goto fail;
    }
    g->ndev = ndev;
    for (int i = 0; i < ndev; i++) {
        g->entry[i] = find_entry(&cfg, &devs[i]);
        if (g->entry[i] < 0) {
            char u[48];
            tf_shm_uuid_format(devs[i].uuid, u, sizeof(u));
            tf_errf(err, errlen,
                    "--limits-region %s: device %d (driver device %d, %s) has no entry in the "
                    "region (%" PRIu32 " entries): it is not one of this pod's GPUs",
                    path, i, devs[i].ordinal, u, cfg.ndev);
            rc = TF_EINVAL;
            goto fail;
        }
    }
    g->owner = tf_proc_self_owner();
    rc = tf_shm_pid_claim(&g->map.r, g->owner, tf_proc_pidns(0));
    if (rc < 0) {
        tf_errf(err, errlen,
                "--limits-region %s: all %d PID slots are taken (the hypervisor reclaims those of "
                "dead processes; retry)",
                path, TF_SHM_MAX_PIDS);
        rc = TF_ENOSPC;
        goto fail;
    }
    g->slot = rc;
    for (int i = 0; i < ndev; i++)
        log_entry(g, i, &cfg.dev[g->entry[i]]);
    tf_log(TF_LOG_INFO, SUBSYS, "limits from %s, PID slot %d", path, g->slot);
    return 0;
fail:
    tf_shm_unmap(&g->map);
    g->slot = -1;
    g->ndev = 0;
    return rc;
}

void tf_wregion_close(struct tf_wregion *g)
{
    if (g->map.r.lim && g->slot >= 0)
        tf_shm_pid_release(&g->map.r, g->slot, g->owner);
    tf_shm_unmap(&g->map);
    g->slot = -1;
    g->ndev = 0;
}
