/* SPDX-License-Identifier: Apache-2.0
 *
 * Soft-isolation regions (layout: include/tf/shm.h): create, open, validate, read and update
 * them, reserve VRAM in them, and manage their PID slots. Used by the limit engine (writer
 * of the limits part, and of whatever it repairs in the usage part) and by the app side
 * (libtf_limiter.so, tf-worker --limits-region: reader of the limits part, writer of usage).
 *
 * A region is named by the path of its limits part, <dir>/<name>; its usage part is
 * <dir>/rw/<name> (tf_shm_usage_path). The app side opens the limits part read-only
 * (TF_SHM_APP): a write through its mapping faults, and mprotect cannot make it writable.
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

/* A region in memory: pointers to its two parts. A small value: copy it freely; what it
 * points to belongs to whoever mapped it (a struct tf_shm_map). */
struct tf_shm_region {
    struct tf_shm_limits *lim; /* read-only memory on the app side */
    struct tf_shm_usage *use;
};

/* The mappings of a region. The map owns them; tf_shm_unmap releases them. r.lim == NULL:
 * nothing mapped. */
struct tf_shm_map {
    struct tf_shm_region r;
    void *base[2]; /* the mappings (base[1] NULL: one mapping holds both parts) */
    size_t len[2];
};

/* How a region is opened: the app side maps the limits part read-only, the engine both parts
 * read-write, an observer (tfctl limits show) both read-only. */
enum tf_shm_access { TF_SHM_APP = 0, TF_SHM_ENGINE = 1, TF_SHM_READ = 2 };

/* Modes and owners of a region's files, set with fchmod/fchown on the files themselves (never
 * through a path the workload could have turned into a symlink). */
struct tf_shm_perms {
    mode_t lmode; /* the limits part (e.g. 0644: the workload reads it, only its owner writes) */
    mode_t umode; /* the usage part (e.g. 0600) */
    int uid, gid; /* owner and group of the usage part; -1: leave as created */
};

/* --- whole regions ------------------------------------------------------------------- */

/* Checks CFG (ndev <= 16, known flag bits, PRESENT on used entries, limits in range, name
 * terminated). */
int tf_shm_check_config(const struct tf_shm_config *cfg, char *err, size_t errlen);

/* Validates LEN bytes at BUF as a limits part: header constants (magic, version, sizes) and
 * the configuration. Pure; BUF may be unaligned and need not be a live mapping (fuzz target).
 * A part whose seqlock is odd is still valid (a write was in progress). */
int tf_shm_validate_limits(const void *buf, size_t len, char *err, size_t errlen);
/* The same for a usage part (header constants). *INSTANCE, if non-NULL, receives its
 * instance (to compare with its limits part's). */
int tf_shm_validate_usage(const void *buf, size_t len, uint64_t *instance, char *err,
                          size_t errlen);

/* The usage part's path of the region whose limits part is LIMITS_PATH (<dir>/<name>):
 * <dir>/rw/<name>. False when it does not fit in LEN. */
bool tf_shm_usage_path(const char *limits_path, char *out, size_t len);

/* Writes a fresh region into R's two parts (TF_SHM_LIMITS_SIZE and TF_SHM_USAGE_SIZE bytes,
 * zeroed here first) with CFG, full token buckets at the CFG limits and no heartbeat. Not
 * thread-safe. */
void tf_shm_format(struct tf_shm_region *r, const struct tf_shm_config *cfg, uint64_t now_ns);

/* A region in one anonymous shared mapping (a limiter's or tf-worker's private limits, never
 * a file), formatted with CFG (checked: TF_EINVAL). 0, TF_EINVAL or TF_ENOMEM. */
int tf_shm_anon(const struct tf_shm_config *cfg, struct tf_shm_map *out);

/* Creates the region whose limits part is LIMITS_PATH and usage part is its rw/<name> (the
 * rw directory is made when missing and given mode 0755), holding CFG, with the modes and
 * owner of PERMS, and maps both for the engine. The region appears complete or not at all:
 * the usage part is written first, the limits part under a temporary name and then linked; a
 * usage part left at the path (of an earlier region) is replaced. TF_EEXIST if LIMITS_PATH
 * exists. */
int tf_shm_create(const char *limits_path, const struct tf_shm_config *cfg,
                  const struct tf_shm_perms *perms, struct tf_shm_map *out, char *err,
                  size_t errlen);
/* Gives the existing region at LIMITS_PATH the modes and owner of PERMS (a region adopted at
 * restart). 0 or TF_EIO / TF_ENOENT with ERR. */
int tf_shm_set_perms(const char *limits_path, const struct tf_shm_perms *perms, char *err,
                     size_t errlen);

/* Opens and maps an existing region after validating both parts and that they belong
 * together (same instance). ACCESS TF_SHM_APP maps the limits part read-only from a
 * read-only descriptor; TF_SHM_ENGINE maps both read-write; TF_SHM_READ both read-only (then
 * nothing may be written through the map). TF_ENOENT if a part is missing,
 * TF_EPROTO if a part is not valid for this version (ERR says which part and field),
 * TF_EPERM if the caller may not open it, TF_EIO on other failures. Waits up to ~200 ms for
 * a config write in progress. */
int tf_shm_open(const char *limits_path, enum tf_shm_access access, struct tf_shm_map *out,
                char *err, size_t errlen);
/* Repairs the region at LIMITS_PATH in place (same inodes, so processes that map it keep
 * seeing it) when tf_shm_open rejected it: sizes both files, rewrites the limits part's
 * header constants and configuration from CFG (the recorded limits) with reset buckets and
 * no heartbeat, and the usage part's header (its instance made the limits part's); keeps the
 * PID slots and rebuilds each device's vram_used as the sum of the slots' (negative entries
 * count as 0), so reservations made before the corruption still count. A usage part that is
 * missing or not a regular file is created anew. Both get PERMS. Maps the result for the
 * engine into *OUT. 0, TF_ENOENT (no limits part), TF_EINVAL (CFG) or TF_EIO, with ERR. */
int tf_shm_repair(const char *limits_path, const struct tf_shm_config *cfg,
                  const struct tf_shm_perms *perms, struct tf_shm_map *out, char *err,
                  size_t errlen);

/* Unmaps (M may be zeroed or already unmapped). */
void tf_shm_unmap(struct tf_shm_map *m);

/* --- configuration (seqlock) ------------------------------------------------------------ */

/* Consistent snapshot of the configuration (the limits part). TF_EBUSY if a writer kept it odd or
 * changing for the whole (bounded) retry budget: keep the previous snapshot. */
int tf_shm_read_config(const struct tf_shm_region *r, struct tf_shm_config *out);

/* Replaces the configuration with CFG (checked first: TF_EINVAL). Devices whose limits
 * change get their bucket rate/capacity reset to the feed-forward for the new limit. Writes
 * the limits part only (the engine's). */
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

/* --- the engine's audit of the usage part -------------------------------------------------- */

/* What an honest app side never does to its usage part, found (and repaired) by
 * tf_shm_audit. */
#define TF_SHM_FORGED_TOKENS 0x1u /* a bucket above every capacity the engine granted */
#define TF_SHM_FORGED_VRAM 0x2u   /* a device's reservation below the sum of its slots' */

/* The engine's memory of one device between audits. */
struct tf_shm_audit {
    int64_t ceiling; /* in: the most tokens the bucket may hold (every capacity and refund the
                      * engine granted since the last audit; INT64_MAX: unknown) */
    int64_t deficit; /* in: the VRAM shortfall the last audit saw; out: this one's */
    int64_t tokens;  /* out: the level after the audit */
    int64_t taken;   /* out: tokens the audit took back (0 if none) */
};

/* Checks device DEV of R's usage part against what the engine knows (A): its bucket holds at
 * most A->ceiling tokens, and its vram_used is at least the sum of its PID slots' (a shortfall
 * is only taken for forgery when the previous audit saw one too, since a reservation in
 * flight can make one momentarily). Repairs what it finds (tokens back to the ceiling,
 * vram_used up to the slots' sum), counting each repair in the limits part's `tampered`.
 * Returns the TF_SHM_FORGED_* found. */
unsigned tf_shm_audit(struct tf_shm_region *r, unsigned dev, struct tf_shm_audit *a);

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

/* Loads device DEV's uuid as 16 bytes. */
void tf_shm_uuid_load(const struct tf_shm_region *r, unsigned dev, uint8_t out[16]);
/* Formats 16 uuid bytes as NVML does: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (BUF >= 41). */
void tf_shm_uuid_format(const uint8_t uuid[16], char *buf, size_t len);
/* Parses "GPU-..." or the bare 32-hex-digit form with or without dashes. 0 or TF_EINVAL. */
int tf_shm_uuid_parse(const char *s, uint8_t out[16]);

#endif
