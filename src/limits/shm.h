/* SPDX-License-Identifier: Apache-2.0
 *
 * Soft-isolation regions (layout: include/tf/shm.h): create, open, validate, read and update
 * them, reserve VRAM in them, and manage their PID slots. Used by the limit engine (writer
 * of configuration) and by libtf_limiter.so (reader of limits, writer of usage).
 *
 * Thread-safety: every function that takes a struct tf_shm_region * is thread-safe and
 * lock-free against any number of processes doing the same, except tf_shm_format (call it
 * before the region is shared). Config writers (tf_shm_write_config, tf_shm_set_limits) are
 * meant to be one process at a time (the engine); a second writer waits for the first and
 * takes over only from a writer that made no progress for TF_SHM_WRITER_TAKEOVER_MS (dead).
 * Errors: 0 or a negative TF_E* code; functions taking ERR/ERRLEN describe the failure there,
 * naming the path and the offending field.
 */
#ifndef TF_LIMITS_SHM_H
#define TF_LIMITS_SHM_H

#include "tf/shm.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TF_SHM_WRITER_TAKEOVER_MS 500

/* One device's configuration, as plain values (a snapshot of the [seq] fields). */
struct tf_shm_dev_config {
    uint8_t uuid[16];
    uint32_t flags; /* TF_SHM_DEV_* */
    uint32_t compute_limit_bp;
    uint64_t vram_limit;
    uint64_t mem_total;
};

struct tf_shm_config {
    char name[TF_SHM_NAME_MAX]; /* NUL-terminated */
    uint32_t flags;             /* TF_SHM_F_* */
    uint32_t ndev;
    struct tf_shm_dev_config dev[TF_SHM_MAX_DEVICES];
};

/* A mapping of a region file. The map owns the mapping; tf_shm_unmap releases it. */
struct tf_shm_map {
    struct tf_shm_region *r;
    size_t len;
};

/* --- whole regions ------------------------------------------------------------------- */

/* Checks CFG (ndev <= 16, known flag bits, PRESENT on used entries, limits in range, name
 * terminated). */
int tf_shm_check_config(const struct tf_shm_config *cfg, char *err, size_t errlen);

/* Validates LEN bytes at BUF as a region: header constants (magic, version, sizes) and the
 * configuration. Pure; BUF may be unaligned and need not be a live mapping (fuzz target).
 * A region whose seqlock is odd is still valid (a write was in progress). */
int tf_shm_validate(const void *buf, size_t len, char *err, size_t errlen);

/* Writes a fresh region into R (TF_SHM_SIZE bytes, zeroed here first) with CFG, full token
 * buckets at the CFG limits and no heartbeat. Not thread-safe. */
void tf_shm_format(struct tf_shm_region *r, const struct tf_shm_config *cfg, uint64_t now_ns);

/* Creates the region file PATH (mode MODE, subject to umask) holding CFG and maps it. The
 * file appears complete or not at all (written under a temporary name, then linked);
 * TF_EEXIST if PATH exists. */
int tf_shm_create(const char *path, const struct tf_shm_config *cfg, mode_t mode,
                  struct tf_shm_map *out, char *err, size_t errlen);

/* Opens and maps an existing region read-write after validating it: TF_ENOENT if missing,
 * TF_EPROTO if it is not a valid region of this version (ERR says which field), TF_EIO on
 * other failures. Waits up to ~200 ms for a config write in progress. */
int tf_shm_open(const char *path, struct tf_shm_map *out, char *err, size_t errlen);
/* Repairs the region file at PATH in place (same inode, so processes that map it keep seeing
 * it) when tf_shm_open rejected it, e.g. an app rewrote its header or limits: sizes the file,
 * rewrites the header constants and the configuration from CFG (the recorded limits), resets
 * the buckets and the heartbeat, keeps the PID slots and rebuilds each device's vram_used as
 * the sum of the slots' (negative entries count as 0), so reservations made before the
 * corruption still count. Maps the result into *OUT. 0, TF_ENOENT (no file), TF_EINVAL
 * (CFG) or TF_EIO, with ERR. */
int tf_shm_repair(const char *path, const struct tf_shm_config *cfg, struct tf_shm_map *out,
                  char *err, size_t errlen);

/* Unmaps (M may be zeroed or already unmapped). */
void tf_shm_unmap(struct tf_shm_map *m);

/* --- configuration (seqlock) ------------------------------------------------------------ */

/* Consistent snapshot of the configuration. TF_EBUSY if a writer kept it odd or changing
 * for the whole (bounded) retry budget: keep the previous snapshot. */
int tf_shm_read_config(const struct tf_shm_region *r, struct tf_shm_config *out);

/* Replaces the configuration with CFG (checked first: TF_EINVAL). Devices whose limits
 * change get their bucket rate/capacity reset to the feed-forward for the new limit. */
int tf_shm_write_config(struct tf_shm_region *r, const struct tf_shm_config *cfg);

/* Changes one device's limits live. FLAGS is TF_SHM_DEV_COMPUTE_LIMIT and/or
 * TF_SHM_DEV_VRAM_LIMIT (PRESENT is implied). TF_ERANGE for DEV >= ndev, TF_EINVAL for a
 * compute limit outside 1..10000. */
int tf_shm_set_limits(struct tf_shm_region *r, unsigned dev, uint32_t flags,
                      uint32_t compute_limit_bp, uint64_t vram_limit);

/* Feed-forward bucket parameters for a compute limit: rate = limit * 1e9 device-ns per
 * second, capacity = rate * TF_SHM_BURST_MS. */
#define TF_SHM_BURST_MS 20
void tf_shm_bucket_params(uint32_t compute_limit_bp, uint64_t *rate, int64_t *capacity);

/* --- heartbeat ------------------------------------------------------------------------ */

void tf_shm_heartbeat(struct tf_shm_region *r, uint64_t now_ns, uint32_t period_ms,
                      uint32_t writer_pid);
/* True if a heartbeat was ever written and is older than the staleness bound (include/tf/
 * shm.h: TF_SHM_STALE_PERIODS periods, at least TF_SHM_STALE_MIN_MS). */
bool tf_shm_heartbeat_stale(const struct tf_shm_region *r, uint64_t now_ns);

/* --- VRAM ------------------------------------------------------------------------------ */

/* Reserves BYTES on device DEV for PID slot SLOT (-1: none) before the caller allocates.
 * TF_ENOSPC (and oom_count++) if the workload would exceed an enforced vram_limit,
 * TF_ERANGE if DEV is out of range or the sum would overflow. Lock-free CAS. */
int tf_shm_vram_reserve(struct tf_shm_region *r, unsigned dev, int slot, uint64_t bytes);

/* Returns BYTES reserved earlier (after a free, or after a failed allocation). Never takes
 * a counter below zero. Reserve adds to the device before the slot and release subtracts
 * from the slot before the device, so a process killed between the two steps leaves the
 * workload over-counted by that one allocation (until the region is recreated), never
 * under-counted. */
void tf_shm_vram_release(struct tf_shm_region *r, unsigned dev, int slot, uint64_t bytes);

/* The memory a limited process should see: with an enforced limit, total = min(limit,
 * physical total) and free = min(total - used, physical free) with used clamped to
 * [0, total], so used never exceeds total and nothing wraps; without a limit, the physical
 * figures. */
void tf_shm_vram_view(const struct tf_shm_region *r, unsigned dev, uint64_t phys_free,
                      uint64_t phys_total, uint64_t *free_out, uint64_t *total_out);

/* --- PID slots ------------------------------------------------------------------------- */

/* Owner id of a process (see include/tf/shm.h): PID plus the low 31 bits of its start time. */
uint64_t tf_shm_owner_id(uint32_t pid, uint64_t starttime_ticks);
static inline uint32_t tf_shm_owner_pid(uint64_t owner)
{
    return (uint32_t)(owner & 0xffffffffu);
}

/* Claims a free slot for OWNER (recording PIDNS). Returns the slot index or TF_ENOSPC. */
int tf_shm_pid_claim(struct tf_shm_region *r, uint64_t owner, uint64_t pidns);

/* Releases SLOT held by OWNER: returns its reserved bytes to the devices, then frees it. */
void tf_shm_pid_release(struct tf_shm_region *r, int slot, uint64_t owner);

/* Liveness oracle for reclaim: true if the owner of SLOT (owner id OWNER) is alive or cannot
 * be judged (never reclaim what cannot be verified). */
typedef bool (*tf_shm_alive_fn)(const struct tf_shm_pid *slot, uint64_t owner, void *ctx);

/* Reclaims every slot whose owner ALIVE says is dead, and every slot whose reclaim mark is
 * older than TF_SHM_RECLAIM_STALE_MS at NOW_NS (its reclaimer died): returns their bytes to
 * the devices and frees the slots. SELF is the caller's own owner id. Returns the number of
 * slots reclaimed. */
int tf_shm_reap(struct tf_shm_region *r, uint64_t self, uint64_t now_ns, tf_shm_alive_fn alive,
                void *ctx);

/* --- small helpers ---------------------------------------------------------------------- */

/* Loads / stores device DEV's uuid as 16 bytes. */
void tf_shm_uuid_load(const struct tf_shm_region *r, unsigned dev, uint8_t out[16]);
/* Formats 16 uuid bytes as NVML does: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (BUF >= 41). */
void tf_shm_uuid_format(const uint8_t uuid[16], char *buf, size_t len);
/* Parses "GPU-..." or the bare 32-hex-digit form with or without dashes. 0 or TF_EINVAL. */
int tf_shm_uuid_parse(const char *s, uint8_t out[16]);

#endif
