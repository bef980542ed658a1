/* SPDX-License-Identifier: Apache-2.0
 *
 * Cross-process state of one simulated GPU: a small file mapped MAP_SHARED by every process
 * that uses the device (libcuda.so.1) or watches it (libnvidia-ml.so.1). It holds
 *   - the device memory budget: each attached process's reserved bytes; a reservation is
 *     checked against the sum of all live processes atomically (under the region mutex);
 *   - the device execution lock: one kernel at a time on the device, across processes,
 *     handed over in FIFO order (tickets), so kernels of different processes time-slice;
 *   - busy-time accounting: total kernel nanoseconds, and per-10 ms buckets for the device
 *     and for each process, from which NVML computes utilisation and per-process samples.
 *
 * Path: <shm_prefix><uuid>, e.g. /dev/shm/tf-sim-GPU-3b1f...; created 0600 on first use,
 * initialised under flock(2) (a creator that dies half-way leaves an unmarked file that the
 * next opener initialises again).
 *
 * Crash safety: the region mutex is a robust process-shared pthread mutex; a process killed
 * while holding it makes the next locker recover it (EOWNERDEAD) and reap. A process killed
 * while owning the execution lock, waiting for it, or holding memory is detected as dead
 * (kill(pid, 0) fails, its /proc/<pid>/stat start time differs, or it is a zombie) and
 * reaped: its memory is returned and the execution lock passes on. Waiters re-check the
 * owner every 20 ms, so a kill -9'd owner stalls the others for at most about that long.
 * PIDs are host PIDs: all processes sharing a region must be in one PID namespace.
 *
 * Layout (version 1; every field is guarded by `mu` except exec_turn, a futex word):
 *   OFFSET      SIZE  FIELD
 *        0         8  magic "TFSIMDV1" (little-endian u64), stored last on creation
 *        8         4  version (1)
 *       12         4  header_size (offset of `buckets`)
 *       16         8  region_size
 *       24         8  total_mem       device memory budget, bytes (first creator's config)
 *       32        48  uuid            "GPU-..." NUL-terminated
 *       80        32  model           canonical model name
 *      112        64  mu              pthread_mutex_t, robust + process-shared
 *      176         4  exec_owner      slot index owning the device, or -1
 *      180         4  exec_turn       futex word, bumped at every hand-over
 *      184         8  next_ticket     last FIFO ticket issued
 *      192         8  exec_since_ns   CLOCK_REALTIME ns the owner's kernel started (0: none)
 *      200         8  busy_total_ns   kernel time ever accounted on this device
 *      208         8  copy_total_ns   copy/memset time ever accounted
 *      216         8  kernels_total   kernels ever completed
 *      224         8  generation      bumped on every process-table change
 *      232        24  reserved
 *      256  1024*24  buckets[1024]   device buckets {slot, sm_ns, copy_ns}, slot = ns / 10 ms
 *    24832   64*PROC  procs[64]       per-process entries, PROC = 64 + 512*24 bytes:
 *                       0 4 pid (0: free) | 4 4 reserved | 8 8 start_time (clock ticks)
 *                      16 8 attach_ns | 24 8 mem_used | 32 8 busy_ns | 40 8 kernels
 *                      48 8 wait_ticket (0: not waiting) | 56 8 last_busy_ns
 *                      64 512*24 buckets
 *
 * Thread-safety: every function is thread-safe and process-safe. Handles are owned by the
 * caller (tf_sim_shm_open / tf_sim_shm_close).
 */
#ifndef TF_SIM_DEVSHM_H
#define TF_SIM_DEVSHM_H

#include <stddef.h>
#include <stdint.h>

#define TF_SIM_SHM_VERSION 1
#define TF_SIM_MAX_PROCS 64
#define TF_SIM_BUCKET_NS UINT64_C(10000000)
#define TF_SIM_DEV_BUCKETS 1024
#define TF_SIM_PROC_BUCKETS 512

struct tf_sim_shm;

/* Opens (creating and initialising if needed) the region at PATH for device UUID/MODEL with
 * budget TOTAL_MEM. An existing region keeps its own budget; *EFFECTIVE_MEM (if non-NULL)
 * gets the budget in force. */
int tf_sim_shm_open(const char *path, const char *uuid, const char *model, int64_t total_mem,
                    struct tf_sim_shm **out, int64_t *effective_mem, char *err, size_t errlen);
/* Unmaps (NULL is fine). Does not detach: call tf_sim_shm_detach first. */
void tf_sim_shm_close(struct tf_sim_shm *s);

/* Registers the calling process (getpid()) and returns its slot in *SLOT; TF_ENOSPC when
 * all TF_SIM_MAX_PROCS slots hold live processes. */
int tf_sim_shm_attach(struct tf_sim_shm *s, int *slot);
/* Releases SLOT: its memory goes back to the budget, the execution lock is passed on if held. */
void tf_sim_shm_detach(struct tf_sim_shm *s, int slot);

/* Reserves BYTES for SLOT; TF_ENOSPC if the device's live processes would exceed the budget. */
int tf_sim_shm_mem_reserve(struct tf_sim_shm *s, int slot, uint64_t bytes);
/* Returns BYTES of SLOT's reservation (clamped: never below zero). */
void tf_sim_shm_mem_release(struct tf_sim_shm *s, int slot, uint64_t bytes);

struct tf_sim_shm_mem {
    uint64_t total, used;
};
/* Budget and bytes reserved by live processes (dead ones are reaped first). */
void tf_sim_shm_mem_info(struct tf_sim_shm *s, struct tf_sim_shm_mem *m);

/* Blocks until SLOT owns the device's execution lock (FIFO among waiting processes). Returns
 * 0, or TF_ESTATE if the region is unusable. */
int tf_sim_shm_exec_acquire(struct tf_sim_shm *s, int slot);
/* Releases the lock held by SLOT and accounts the kernel that ran in [START_NS, END_NS)
 * (CLOCK_REALTIME) to the device and to SLOT. */
void tf_sim_shm_exec_release(struct tf_sim_shm *s, int slot, uint64_t start_ns, uint64_t end_ns);
/* Accounts a copy or memset of SLOT that ran in [START_NS, END_NS). */
void tf_sim_shm_account_copy(struct tf_sim_shm *s, int slot, uint64_t start_ns, uint64_t end_ns);

/* Percent (0..100, rounded) of the window (NOW_NS - WINDOW_NS, NOW_NS] during which a kernel
 * ran (*GPU) and a copy ran (*MEM). */
void tf_sim_shm_utilization(struct tf_sim_shm *s, uint64_t now_ns, uint64_t window_ns,
                            unsigned *gpu, unsigned *mem);

struct tf_sim_shm_proc_info {
    uint32_t pid;
    uint64_t mem_used;
    uint64_t busy_ns;        /* total kernel time */
    uint64_t window_sm_ns;   /* kernel time inside the sample window */
    uint64_t window_copy_ns; /* copy/memset time inside the sample window */
    unsigned sm_util;        /* window_sm_ns as a percent of the window (rounded) */
    unsigned mem_util;       /* window_copy_ns likewise */
};
/* Live processes attached to the device, one entry per pid (at most MAX written); returns the
 * number of live processes (may exceed MAX). Utilisation is computed over (FROM_NS, NOW_NS]. */
int tf_sim_shm_processes(struct tf_sim_shm *s, uint64_t from_ns, uint64_t now_ns,
                         struct tf_sim_shm_proc_info *out, int max);

/* Totals since the region was created. */
struct tf_sim_shm_totals {
    uint64_t busy_ns, copy_ns, kernels, generation;
};
void tf_sim_shm_totals(struct tf_sim_shm *s, struct tf_sim_shm_totals *t);

/* Frees the slots of dead processes now; returns how many were reaped. */
int tf_sim_shm_reap(struct tf_sim_shm *s);

/* CLOCK_REALTIME in nanoseconds. */
uint64_t tf_sim_now_ns(void);

#endif
