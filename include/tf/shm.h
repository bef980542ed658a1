/* SPDX-License-Identifier: Apache-2.0
 *
 * The soft-isolation shared-memory ABI between the limit engine (hypervisor side, or
 * `tfctl limits serve`) and the app side (libtf_limiter.so inside every process of a
 * workload, or the workload's tf-worker with --limits-region). The code that creates, opens,
 * validates and updates a region is src/limits/shm.h; this header only pins the bytes.
 *
 * A region is two files, so that the app side cannot raise its own limits; named by the path of
 * its limits part, <dir>/<name> (the hypervisor's name is "shm"):
 *   <dir>/<name>      the limits part (struct tf_shm_limits): configuration, the token
 *                     buckets' rate and capacity, the engine's control outputs and heartbeat.
 *                     Written by the engine alone; the app side opens it O_RDONLY and maps it
 *                     PROT_READ (a MAP_SHARED mapping of a read-only descriptor can never be
 *                     made writable), and its file is not writable by the workload's user
 *                     (local: owned by the hypervisor's user, mode 0644; Kubernetes: the pod
 *                     mounts it read-only).
 *   <dir>/rw/<name>   the usage part (struct tf_shm_usage): what the app side must write --
 *                     token-bucket levels, VRAM reservations, throttle and OOM counts, PID
 *                     slots with per-process reservations and launch counts. Read-write for
 *                     the workload; rw/ is the only directory of a region the app may write
 *                     into (the one Kubernetes mounts read-write).
 * The two parts of one region carry the same random `instance`; a usage part whose instance
 * differs from its limits part (left over from an earlier workload of that name) is rejected.
 *
 * What the app side can still do with its usage part (it can write every byte of it):
 * under-report (lower its VRAM reservations, put tokens back into its buckets, hide launches,
 * free PID slots). That is no more than what a process that ignores the limiter can do, and
 * it is bounded the same way: the engine checks the invariants an honest limiter keeps
 * (tokens never above what the engine granted, a device's reservation never below the sum of
 * its PID slots'), repairs a violated one and counts it (`tampered`), and the hypervisor
 * compares what NVML measures for the workload's processes (VRAM and GPU time) with the
 * limits in the limits part (its escape checks). docs/security.md has the whole model.
 *
 * Rules every reader and writer follows
 * - Every field that changes after creation is a lock-free atomic (_Atomic, 32 or 64 bit),
 *   so a process killed with SIGKILL at any instant never leaves anything locked.
 * - Configuration (limits hdr.ndev, hdr.flags, hdr.name, and per device uuid, flags,
 *   compute_limit_bp, vram_limit, mem_total) is covered by the seqlock hdr.seq: the engine
 *   makes seq odd, stores the fields, makes it even again. Readers that need several config
 *   fields to agree (a snapshot) retry while seq is odd or changes, a bounded number of times;
 *   a writer that died mid-update leaves seq odd, and readers then keep their last good
 *   snapshot. Readers of a single field (the limiter's hot paths) just load that field.
 * - Dynamic state (buckets, VRAM reservations, counters, heartbeat) is per-field atomics with
 *   the writers named in the tables below. No field is ever protected by a lock.
 * - Fields are native-endian: the region never leaves the host, and every supported host
 *   (x86-64, aarch64) is little-endian, which the assert at the bottom enforces.
 * - Versioning: a reader accepts a part only if its magic, version, header_size, size,
 *   max_devices (and, for usage, max_pids) all equal this header's constants; anything else
 *   is rejected with a message naming the field (tf_shm_validate_limits / _usage). Version 1
 *   (one file, TF_SHM_SIZE 24832 bytes, everything writable by the app) is rejected as such.
 * - Regions are updated in place, never replaced: a process keeps its mappings for life.
 *
 * Limits part = header, then TF_SHM_MAX_DEVICES device entries.
 *
 *   OFFSET SIZE  DESCRIPTION
 *   0      256   struct tf_shm_header hdr
 *   256    3072  struct tf_shm_ldev dev[16]   (192 bytes each)
 *   3328         total (TF_SHM_LIMITS_SIZE)
 *
 * Limits header (struct tf_shm_header)
 *   OFFSET SIZE FIELD               WRITER   DESCRIPTION
 *   0      8    magic               creator  TF_SHM_MAGIC ("TFLIMSHM" in memory order)
 *   8      4    version             creator  TF_SHM_VERSION
 *   12     4    header_size         creator  256
 *   16     8    size                creator  TF_SHM_LIMITS_SIZE
 *   24     4    max_devices         creator  16
 *   28     4    max_pids            creator  64 (the usage part's PID slots)
 *   32     8    seq                 engine   config seqlock; odd while a write is in progress
 *   40     4    ndev                engine   number of device entries in use (<= 16) [seq]
 *   44     4    flags               engine   TF_SHM_F_* [seq]
 *   48     8    heartbeat_ns        engine   CLOCK_MONOTONIC ns of the engine's last step;
 *                                            0 = never. Stale => "hypervisor gone": readers
 *                                            keep the last limits (never unlimit)
 *   56     4    heartbeat_period_ms engine   the engine's step period
 *   60     4    writer_pid          engine   pid of the engine (diagnostics only)
 *   64     8    created_unix_ms     creator  wall-clock creation time (diagnostics)
 *   72     8    instance            creator  random id of this region's life (the usage part
 *                                            carries the same)
 *   80     64   name                engine   workload name, NUL-terminated [seq]
 *   144    112  reserved                     zero
 *
 * Limits device entry (struct tf_shm_ldev), one per visible GPU, in the workload's order
 *   OFFSET SIZE FIELD               WRITER   DESCRIPTION
 *   0      16   uuid                engine   the GPU's 16-byte UUID (CUuuid / NVML "GPU-..."),
 *                                            all zero = "any GPU at this ordinal" [seq]
 *   16     4    flags               engine   TF_SHM_DEV_* [seq]
 *   20     4    compute_limit_bp    engine   compute share limit, basis points 1..10000 [seq]
 *   24     8    vram_limit          engine   VRAM limit in bytes [seq]
 *   32     8    mem_total           engine   physical memory of the GPU, bytes (0 = unknown)
 *                                            [seq]
 *   40     24   reserved                     zero
 *   64     16   bucket              engine   struct tf_bucket_limit (include/tf/bucket.h):
 *                                            the rate (device-ns per second) and capacity of
 *                                            the device's token bucket, whose level is in the
 *                                            usage part
 *   80     8    tampered            engine   times the engine found the usage part outside
 *                                            what an honest limiter writes (tokens above any
 *                                            capacity granted, the device's reservation below
 *                                            its PID slots' sum) and repaired it
 *   88     8    underreported       engine   times the engine caught a process of the
 *                                            workload using GPU time (as NVML measures it)
 *                                            without reporting launches for it, with the
 *                                            workload over its compute limit
 *   96     32   reserved                     zero
 *   128    8    launch_cost         engine   tokens charged per kernel launch not yet measured
 *                                            by its launcher (src/limits/costmodel.h): the
 *                                            engine's average GPU ns per launch, from measured
 *                                            busy time / launches (0 = limiter default)
 *   136    4    share_bp            engine   measured share of the last window (bp)
 *   140    4    util_bp             engine   whole-device utilisation of the last window (bp)
 *   144    8    busy_ns             engine   cumulative measured GPU ns of this workload
 *   152    8    vram_observed       engine   VRAM the driver reports for the workload's PIDs
 *   160    8    sample_ns           engine   CLOCK_MONOTONIC ns of the last control step
 *   168    4    rate_bp             engine   controller output: bucket rate as bp of a device
 *   172    4    cost_scale          engine   calibration of the launchers' measured kernel
 *                                            times to the GPU time the driver accounts,
 *                                            fixed point (65536 = 1.0; 0 = 1.0)
 *   176    16   reserved                     zero
 *
 * Usage part = header, then TF_SHM_MAX_DEVICES device entries, then TF_SHM_MAX_PIDS slots.
 *
 *   OFFSET SIZE  DESCRIPTION
 *   0      64    struct tf_shm_usage_header hdr
 *   64     2048  struct tf_shm_udev dev[16]   (128 bytes each)
 *   2112   20480 struct tf_shm_pid pid[64]    (320 bytes each)
 *   22592        total (TF_SHM_USAGE_SIZE)
 *
 * Usage header (struct tf_shm_usage_header)
 *   OFFSET SIZE FIELD               WRITER   DESCRIPTION
 *   0      8    magic               creator  TF_SHM_USAGE_MAGIC ("TFUSGSHM" in memory order)
 *   8      4    version             creator  TF_SHM_VERSION
 *   12     4    header_size         creator  64
 *   16     8    size                creator  TF_SHM_USAGE_SIZE
 *   24     4    max_devices         creator  16
 *   28     4    max_pids            creator  64
 *   32     8    instance            creator  the limits part's instance
 *   40     24   reserved                     zero
 *
 * Usage device entry (struct tf_shm_udev), parallel to the limits part's dev[]
 *   OFFSET SIZE FIELD               WRITER   DESCRIPTION
 *   0      32   bucket              both     struct tf_bucket (include/tf/bucket.h): the
 *                                            level; limiters take and refill (at the limits
 *                                            part's rate, up to its capacity), the engine
 *                                            trues it up against measured GPU time
 *   32     32   reserved                     zero
 *   64     8    vram_used           limiters bytes reserved by all processes of the workload
 *                                            (reserve before allocating, roll back on failure);
 *                                            never negative, never above vram_limit by a
 *                                            reservation
 *   72     8    vram_peak           limiters high-water mark of vram_used
 *   80     8    oom_count           limiters allocations refused for the limit
 *   88     8    throttle_count      limiters launches that had to wait for tokens
 *   96     8    throttle_ns         limiters total time launches waited
 *   104    24   reserved                     zero
 *
 * PID slot (struct tf_shm_pid): the workload's registered processes
 *   OFFSET SIZE FIELD               WRITER   DESCRIPTION
 *   0      8    owner               limiter  0 = free; else an owner id: bits 0-31 the pid as
 *                                            the process sees it, bits 32-62 the low 31 bits of
 *                                            its start time (clock ticks since boot), bit 63
 *                                            TF_SHM_OWNER_RECLAIM while a reclaimer (whose own
 *                                            owner id is in bits 0-62) returns a dead owner's
 *                                            bytes. Claimed, released and reclaimed by CAS only
 *   8      4    host_pid            engine   the same process's pid in the engine's namespace
 *                                            (matched by NSpid + start time; 0 = unknown)
 *   12     4    flags               limiter  reserved, zero
 *   16     8    pidns               limiter  inode of the owner's pid namespace (0 = unknown);
 *                                            an owner in another namespace is only judged dead
 *                                            through a resolved host_pid
 *   24     8    reclaim_ns          reclaimer CLOCK_MONOTONIC ns when the reclaim mark was
 *                                            set; a mark older than TF_SHM_RECLAIM_STALE_MS
 *                                            belongs to a dead reclaimer and is taken over
 *   32     128  vram_used[16]       limiter  this process's share of dev[i].vram_used
 *   160    128  launches[16]        limiter  kernel launches of this process per device
 *   288    32   reserved                     zero
 */
#ifndef TF_SHM_H
#define TF_SHM_H

#include "tf/bucket.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define TF_SHM_MAGIC UINT64_C(0x4d48534d494c4654)       /* bytes "TFLIMSHM" on little-endian */
#define TF_SHM_USAGE_MAGIC UINT64_C(0x4d48534753554654) /* bytes "TFUSGSHM" on little-endian */
#define TF_SHM_VERSION 2u
#define TF_SHM_MAX_DEVICES 16
#define TF_SHM_MAX_PIDS 64
#define TF_SHM_NAME_MAX 64

/* The hypervisor's file name of a region's limits part, and the directory of the usage part
 * (<dir>/rw/<name> for the limits part <dir>/<name>). */
#define TF_SHM_LIMITS_FILE "shm"
#define TF_SHM_USAGE_DIR "rw"

/* In Kubernetes: the supplementary group the admission webhook gives every pod that mounts a
 * region (securityContext.supplementalGroups), so that the node agent can make the pod's usage
 * part group-writable (0660, owned by root and this group) even when it does not know which
 * user the pod's containers run as. Only that pod mounts its region directory, and no node
 * user is meant to hold this group, so the file is writable by that pod alone. */
#define TF_SHM_POD_GROUP 60515

/* hdr.flags */
#define TF_SHM_F_STANDALONE 0x1u /* written by a limiter's own controller, not an engine */

/* dev[i].flags */
#define TF_SHM_DEV_PRESENT 0x1u       /* entry in use */
#define TF_SHM_DEV_COMPUTE_LIMIT 0x2u /* compute_limit_bp is enforced */
#define TF_SHM_DEV_VRAM_LIMIT 0x4u    /* vram_limit is enforced */
#define TF_SHM_DEV_ALL_FLAGS 0x7u

/* pid[j].owner */
#define TF_SHM_OWNER_RECLAIM (UINT64_C(1) << 63)
#define TF_SHM_RECLAIM_STALE_MS 1000u

/* A heartbeat is stale after this many periods, and never sooner than TF_SHM_STALE_MIN_MS. */
#define TF_SHM_STALE_PERIODS 5u
#define TF_SHM_STALE_MIN_MS 2000u

/* ---- limits part ------------------------------------------------------------------------ */

struct tf_shm_header {
    uint64_t magic;
    uint32_t version;
    uint32_t header_size;
    uint64_t size;
    uint32_t max_devices;
    uint32_t max_pids;
    _Atomic(uint64_t) seq;
    _Atomic(uint32_t) ndev;
    _Atomic(uint32_t) flags;
    _Atomic(uint64_t) heartbeat_ns;
    _Atomic(uint32_t) heartbeat_period_ms;
    _Atomic(uint32_t) writer_pid;
    uint64_t created_unix_ms;
    uint64_t instance;
    _Atomic(uint64_t) name[TF_SHM_NAME_MAX / 8];
    uint8_t reserved[112];
};

struct tf_shm_ldev {
    /* config line [seq] */
    _Atomic(uint64_t) uuid[2];
    _Atomic(uint32_t) flags;
    _Atomic(uint32_t) compute_limit_bp;
    _Atomic(uint64_t) vram_limit;
    _Atomic(uint64_t) mem_total;
    uint8_t reserved0[24];
    /* grant line */
    struct tf_bucket_limit bucket;
    _Atomic(uint64_t) tampered;
    _Atomic(uint64_t) underreported;
    uint8_t reserved1[32];
    /* control line */
    _Atomic(uint64_t) launch_cost;
    _Atomic(uint32_t) share_bp;
    _Atomic(uint32_t) util_bp;
    _Atomic(uint64_t) busy_ns;
    _Atomic(uint64_t) vram_observed;
    _Atomic(uint64_t) sample_ns;
    _Atomic(uint32_t) rate_bp;
    _Atomic(uint32_t) cost_scale;
    uint8_t reserved2[16];
};

struct tf_shm_limits {
    struct tf_shm_header hdr;
    struct tf_shm_ldev dev[TF_SHM_MAX_DEVICES];
};

#define TF_SHM_LIMITS_SIZE 3328u

/* ---- usage part -------------------------------------------------------------------------- */

struct tf_shm_usage_header {
    uint64_t magic;
    uint32_t version;
    uint32_t header_size;
    uint64_t size;
    uint32_t max_devices;
    uint32_t max_pids;
    uint64_t instance;
    uint8_t reserved[24];
};

struct tf_shm_udev {
    /* bucket line (launchers) */
    struct tf_bucket bucket;
    uint8_t reserved0[32];
    /* usage line (limiters) */
    _Atomic(int64_t) vram_used;
    _Atomic(int64_t) vram_peak;
    _Atomic(uint64_t) oom_count;
    _Atomic(uint64_t) throttle_count;
    _Atomic(uint64_t) throttle_ns;
    uint8_t reserved1[24];
};

struct tf_shm_pid {
    _Atomic(uint64_t) owner;
    _Atomic(uint32_t) host_pid;
    _Atomic(uint32_t) flags;
    _Atomic(uint64_t) pidns;
    _Atomic(uint64_t) reclaim_ns;
    _Atomic(int64_t) vram_used[TF_SHM_MAX_DEVICES];
    _Atomic(uint64_t) launches[TF_SHM_MAX_DEVICES];
    uint8_t reserved1[32];
};

struct tf_shm_usage {
    struct tf_shm_usage_header hdr;
    struct tf_shm_udev dev[TF_SHM_MAX_DEVICES];
    struct tf_shm_pid pid[TF_SHM_MAX_PIDS];
};

#define TF_SHM_USAGE_SIZE 22592u

/* The size of a version-1 region (one file), recognised to say so when one is met. */
#define TF_SHM_V1_SIZE 24832u

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the shm ABI is defined for little-endian hosts"
#endif
_Static_assert(sizeof(_Atomic(uint32_t)) == 4, "32-bit atomics must be plain 4-byte words");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics must be lock-free (shared memory)");

#define TF_SHM_AT(type, field, off) _Static_assert(offsetof(type, field) == (off), #field)
TF_SHM_AT(struct tf_shm_header, magic, 0);
TF_SHM_AT(struct tf_shm_header, version, 8);
TF_SHM_AT(struct tf_shm_header, header_size, 12);
TF_SHM_AT(struct tf_shm_header, size, 16);
TF_SHM_AT(struct tf_shm_header, max_devices, 24);
TF_SHM_AT(struct tf_shm_header, max_pids, 28);
TF_SHM_AT(struct tf_shm_header, seq, 32);
TF_SHM_AT(struct tf_shm_header, ndev, 40);
TF_SHM_AT(struct tf_shm_header, flags, 44);
TF_SHM_AT(struct tf_shm_header, heartbeat_ns, 48);
TF_SHM_AT(struct tf_shm_header, heartbeat_period_ms, 56);
TF_SHM_AT(struct tf_shm_header, writer_pid, 60);
TF_SHM_AT(struct tf_shm_header, created_unix_ms, 64);
TF_SHM_AT(struct tf_shm_header, instance, 72);
TF_SHM_AT(struct tf_shm_header, name, 80);
TF_SHM_AT(struct tf_shm_header, reserved, 144);
_Static_assert(sizeof(struct tf_shm_header) == 256, "limits header size");

TF_SHM_AT(struct tf_shm_ldev, uuid, 0);
TF_SHM_AT(struct tf_shm_ldev, flags, 16);
TF_SHM_AT(struct tf_shm_ldev, compute_limit_bp, 20);
TF_SHM_AT(struct tf_shm_ldev, vram_limit, 24);
TF_SHM_AT(struct tf_shm_ldev, mem_total, 32);
TF_SHM_AT(struct tf_shm_ldev, bucket, 64);
TF_SHM_AT(struct tf_shm_ldev, tampered, 80);
TF_SHM_AT(struct tf_shm_ldev, underreported, 88);
TF_SHM_AT(struct tf_shm_ldev, launch_cost, 128);
TF_SHM_AT(struct tf_shm_ldev, share_bp, 136);
TF_SHM_AT(struct tf_shm_ldev, util_bp, 140);
TF_SHM_AT(struct tf_shm_ldev, busy_ns, 144);
TF_SHM_AT(struct tf_shm_ldev, vram_observed, 152);
TF_SHM_AT(struct tf_shm_ldev, sample_ns, 160);
TF_SHM_AT(struct tf_shm_ldev, rate_bp, 168);
TF_SHM_AT(struct tf_shm_ldev, cost_scale, 172);
_Static_assert(sizeof(struct tf_shm_ldev) == 192, "limits device entry size");
TF_SHM_AT(struct tf_shm_limits, dev, 256);
_Static_assert(sizeof(struct tf_shm_limits) == TF_SHM_LIMITS_SIZE, "limits part size");

TF_SHM_AT(struct tf_shm_usage_header, magic, 0);
TF_SHM_AT(struct tf_shm_usage_header, version, 8);
TF_SHM_AT(struct tf_shm_usage_header, header_size, 12);
TF_SHM_AT(struct tf_shm_usage_header, size, 16);
TF_SHM_AT(struct tf_shm_usage_header, max_devices, 24);
TF_SHM_AT(struct tf_shm_usage_header, max_pids, 28);
TF_SHM_AT(struct tf_shm_usage_header, instance, 32);
TF_SHM_AT(struct tf_shm_usage_header, reserved, 40);
_Static_assert(sizeof(struct tf_shm_usage_header) == 64, "usage header size");

TF_SHM_AT(struct tf_shm_udev, bucket, 0);
TF_SHM_AT(struct tf_shm_udev, vram_used, 64);
TF_SHM_AT(struct tf_shm_udev, vram_peak, 72);
TF_SHM_AT(struct tf_shm_udev, oom_count, 80);
TF_SHM_AT(struct tf_shm_udev, throttle_count, 88);
TF_SHM_AT(struct tf_shm_udev, throttle_ns, 96);
_Static_assert(sizeof(struct tf_shm_udev) == 128, "usage device entry size");

TF_SHM_AT(struct tf_shm_pid, owner, 0);
TF_SHM_AT(struct tf_shm_pid, host_pid, 8);
TF_SHM_AT(struct tf_shm_pid, flags, 12);
TF_SHM_AT(struct tf_shm_pid, pidns, 16);
TF_SHM_AT(struct tf_shm_pid, reclaim_ns, 24);
TF_SHM_AT(struct tf_shm_pid, vram_used, 32);
TF_SHM_AT(struct tf_shm_pid, launches, 160);
_Static_assert(sizeof(struct tf_shm_pid) == 320, "pid slot size");

TF_SHM_AT(struct tf_shm_usage, dev, 64);
TF_SHM_AT(struct tf_shm_usage, pid, 2112);
_Static_assert(sizeof(struct tf_shm_usage) == TF_SHM_USAGE_SIZE, "usage part size");
#undef TF_SHM_AT

#endif
