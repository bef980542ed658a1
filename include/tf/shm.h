/* SPDX-License-Identifier: Apache-2.0
 *
 * The soft-isolation shared-memory ABI between the limit engine (hypervisor side, or
 * `tfctl limits serve`) and libtf_limiter.so (inside every process of a workload). One file
 * per workload, e.g. /run/tensor-fusion/shm/<ns>/<pod>/shm, mapped MAP_SHARED by both sides.
 * The code that creates, opens, validates and updates a region is src/limits/shm.h; this
 * header only pins the bytes.
 *
 * Rules every reader and writer follows
 * - Every field that changes after creation is a lock-free atomic (_Atomic, 32 or 64 bit),
 *   so a process killed with SIGKILL at any instant never leaves anything locked.
 * - Configuration (hdr.ndev, hdr.name, and per device uuid, flags, compute_limit_bp,
 *   vram_limit, mem_total) is also covered by the seqlock hdr.seq: a writer makes seq odd,
 *   stores the fields, makes it even again. Readers that need several config fields to agree
 *   (a snapshot) retry while seq is odd or changes, a bounded number of times; a writer that
 *   died mid-update leaves seq odd, and readers then keep their last good snapshot. Readers of
 *   a single field (the limiter's hot paths) just load that field.
 * - Dynamic state (token buckets, VRAM reservations, counters, heartbeat) is per-field
 *   atomics with the writers named in the tables below. No field is ever protected by a lock.
 * - Fields are native-endian: the region never leaves the host, and every supported host
 *   (x86-64, aarch64) is little-endian, which the assert at the bottom enforces.
 * - Versioning: a reader accepts a region only if magic, version, header_size, size,
 *   max_devices and max_pids all equal this header's constants; anything else is rejected
 *   with a message naming the field (tf_shm_validate).
 * - Regions are updated in place, never replaced: a process keeps its mapping for life.
 *
 * Region = header, then TF_SHM_MAX_DEVICES device entries, then TF_SHM_MAX_PIDS PID slots.
 *
 *   OFFSET SIZE  DESCRIPTION
 *   0      256   struct tf_shm_header
 *   256    4096  struct tf_shm_device dev[16]   (256 bytes each)
 *   4352   20480 struct tf_shm_pid pid[64]      (320 bytes each)
 *   24832        total (TF_SHM_SIZE)
 *
 * Header (struct tf_shm_header)
 *   OFFSET SIZE FIELD               WRITER   DESCRIPTION
 *   0      8    magic               creator  TF_SHM_MAGIC ("TFLIMSHM" in memory order)
 *   8      4    version             creator  TF_SHM_VERSION
 *   12     4    header_size         creator  256
 *   16     8    size                creator  TF_SHM_SIZE
 *   24     4    max_devices         creator  16
 *   28     4    max_pids            creator  64
 *   32     8    seq                 engine   config seqlock; odd while a write is in progress
 *   40     4    ndev                engine   number of device entries in use (<= 16) [seq]
 *   44     4    flags               engine   TF_SHM_F_* [seq]
 *   48     8    heartbeat_ns        engine   CLOCK_MONOTONIC ns of the engine's last step;
 *                                            0 = never. Stale => "hypervisor gone": readers
 *                                            keep the last limits (never unlimit)
 *   56     4    heartbeat_period_ms engine   the engine's step period
 *   60     4    writer_pid          engine   pid of the engine (diagnostics only)
 *   64     8    created_unix_ms     creator  wall-clock creation time (diagnostics)
 *   72     8    instance            creator  random id of this region's life
 *   80     64   name                engine   workload name, NUL-terminated [seq]
 *   144    112  reserved                     zero
 *
 * Device entry (struct tf_shm_device), one per visible GPU, in the workload's order
 *   OFFSET SIZE FIELD               WRITER   DESCRIPTION
 *   0      16   uuid                engine   the GPU's 16-byte UUID (CUuuid / NVML "GPU-..."),
 *                                            all zero = "any GPU at this ordinal" [seq]
 *   16     4    flags               engine   TF_SHM_DEV_* [seq]
 *   20     4    compute_limit_bp    engine   compute share limit, basis points 1..10000 [seq]
 *   24     8    vram_limit          engine   VRAM limit in bytes [seq]
 *   32     8    mem_total           engine   physical memory of the GPU, bytes (0 = unknown)
 *   40     24   reserved                     zero
 *   64     64   bucket              both     struct tf_bucket (include/tf/bucket.h); tokens
 *                                            are device-ns; the engine sets rate/capacity,
 *                                            limiters take and refill
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
 *   192    8    vram_used           limiters bytes reserved by all processes of the workload
 *                                            (reserve before allocating, roll back on failure);
 *                                            never negative, never above vram_limit by a
 *                                            reservation
 *   200    8    vram_peak           limiters high-water mark of vram_used
 *   208    8    oom_count           limiters allocations refused for the limit
 *   216    8    throttle_count      limiters launches that had to wait for tokens
 *   224    8    throttle_ns         limiters total time launches waited
 *   232    24   reserved                     zero
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

#define TF_SHM_MAGIC UINT64_C(0x4d48534d494c4654) /* bytes "TFLIMSHM" on little-endian */
#define TF_SHM_VERSION 1u
#define TF_SHM_MAX_DEVICES 16
#define TF_SHM_MAX_PIDS 64
#define TF_SHM_NAME_MAX 64

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

struct tf_shm_device {
    /* config line [seq] */
    _Atomic(uint64_t) uuid[2];
    _Atomic(uint32_t) flags;
    _Atomic(uint32_t) compute_limit_bp;
    _Atomic(uint64_t) vram_limit;
    _Atomic(uint64_t) mem_total;
    uint8_t reserved0[24];
    /* bucket line */
    struct tf_bucket bucket;
    /* control line (engine) */
    _Atomic(uint64_t) launch_cost;
    _Atomic(uint32_t) share_bp;
    _Atomic(uint32_t) util_bp;
    _Atomic(uint64_t) busy_ns;
    _Atomic(uint64_t) vram_observed;
    _Atomic(uint64_t) sample_ns;
    _Atomic(uint32_t) rate_bp;
    _Atomic(uint32_t) cost_scale;
    uint8_t reserved2[16];
    /* usage line (limiters) */
    _Atomic(int64_t) vram_used;
    _Atomic(int64_t) vram_peak;
    _Atomic(uint64_t) oom_count;
    _Atomic(uint64_t) throttle_count;
    _Atomic(uint64_t) throttle_ns;
    uint8_t reserved3[24];
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

struct tf_shm_region {
    struct tf_shm_header hdr;
    struct tf_shm_device dev[TF_SHM_MAX_DEVICES];
    struct tf_shm_pid pid[TF_SHM_MAX_PIDS];
};

#define TF_SHM_SIZE 24832u

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
_Static_assert(sizeof(struct tf_shm_header) == 256, "header size");

TF_SHM_AT(struct tf_shm_device, uuid, 0);
TF_SHM_AT(struct tf_shm_device, flags, 16);
TF_SHM_AT(struct tf_shm_device, compute_limit_bp, 20);
TF_SHM_AT(struct tf_shm_device, vram_limit, 24);
TF_SHM_AT(struct tf_shm_device, mem_total, 32);
TF_SHM_AT(struct tf_shm_device, bucket, 64);
TF_SHM_AT(struct tf_shm_device, launch_cost, 128);
TF_SHM_AT(struct tf_shm_device, share_bp, 136);
TF_SHM_AT(struct tf_shm_device, util_bp, 140);
TF_SHM_AT(struct tf_shm_device, busy_ns, 144);
TF_SHM_AT(struct tf_shm_device, vram_observed, 152);
TF_SHM_AT(struct tf_shm_device, sample_ns, 160);
TF_SHM_AT(struct tf_shm_device, rate_bp, 168);
TF_SHM_AT(struct tf_shm_device, cost_scale, 172);
TF_SHM_AT(struct tf_shm_device, vram_used, 192);
TF_SHM_AT(struct tf_shm_device, vram_peak, 200);
TF_SHM_AT(struct tf_shm_device, oom_count, 208);
TF_SHM_AT(struct tf_shm_device, throttle_count, 216);
TF_SHM_AT(struct tf_shm_device, throttle_ns, 224);
_Static_assert(sizeof(struct tf_shm_device) == 256, "device entry size");

TF_SHM_AT(struct tf_shm_pid, owner, 0);
TF_SHM_AT(struct tf_shm_pid, host_pid, 8);
TF_SHM_AT(struct tf_shm_pid, flags, 12);
TF_SHM_AT(struct tf_shm_pid, pidns, 16);
TF_SHM_AT(struct tf_shm_pid, reclaim_ns, 24);
TF_SHM_AT(struct tf_shm_pid, vram_used, 32);
TF_SHM_AT(struct tf_shm_pid, launches, 160);
_Static_assert(sizeof(struct tf_shm_pid) == 320, "pid slot size");

TF_SHM_AT(struct tf_shm_region, dev, 256);
TF_SHM_AT(struct tf_shm_region, pid, 4352);
_Static_assert(sizeof(struct tf_shm_region) == TF_SHM_SIZE, "region size");
#undef TF_SHM_AT

#endif
