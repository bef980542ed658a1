/* SPDX-License-Identifier: Apache-2.0
 *
 * The hypervisor's local state store: an SQLite database (state.db in the state directory)
 * holding devices, workloads, their per-GPU allocations and limits, their processes, and
 * counters. Every change is one IMMEDIATE transaction with synchronous=FULL, so a hypervisor
 * killed with SIGKILL at any instant restarts with exactly the committed workloads and
 * allocations, and two writers (threads or processes) can never place two workloads on the
 * same free capacity: placement reads the allocations and writes the new ones inside the same
 * write transaction.
 *
 * Tables (the schema is created by tf_hv_state_open; user_version tracks it):
 *   devices(uuid PK, idx, name, model, vendor, tflops_milli, vram_bytes, present, seen_ms,
 *           numa)
 *   workloads(name PK, namespace, isolation, qos, gpu_count, gpu_model, tflops_request,
 *             tflops_limit, percent_request, percent_limit, vram_request, vram_limit, remote,
 *             shm_path, worker_pid, worker_addr, created_ms, lease, lease_ms)
 *   allocations(workload FK, ord, uuid, tflops_milli, vram_bytes, tflops_limit, vram_limit,
 *               compute_limit_bp; PK(workload, ord))
 *   processes(workload FK, pid, start_ticks; PK(workload, pid))
 *   counters(name PK, value)   alloc_success, alloc_fail
 *
 * A tf_hv_state is thread-safe (one internal mutex around its connection). The caller owns
 * it: tf_hv_state_close (accepts NULL).
 */
#ifndef TF_HYPERVISOR_STATE_H
#define TF_HYPERVISOR_STATE_H

#include "common/dynbuf.h"
#include "hypervisor/place.h"
#include "hypervisor/workload.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_HV_MAX_DEVICES 64
#define TF_HV_MAX_PIDS 32

struct tf_hv_device {
    char uuid[64];
    int index;
    char name[96];  /* as NVML reports it */
    char model[32]; /* canonical table name, "" if unknown */
    char vendor[16];
    int64_t tflops_milli;
    int64_t vram_bytes;
    bool present;
    int numa; /* NUMA node of the GPU's PCI device, -1 when unknown or none */
    /* derived from allocations */
    int64_t alloc_tflops_milli, alloc_vram_bytes;
    int nworkloads;
    enum tf_hv_isolation mode;
};

struct tf_hv_alloc {
    char uuid[64];
    int64_t tflops_milli, vram_bytes; /* reserved */
    int64_t tflops_limit, vram_limit; /* enforced */
    int32_t compute_limit_bp;
};

struct tf_hv_process {
    int pid;
    int64_t start_ticks; /* /proc/PID/stat field 22, tells a reused PID apart */
};

struct tf_hv_workload {
    struct tf_hv_request req;
    int nalloc;
    struct tf_hv_alloc alloc[TF_HV_MAX_GPUS];
    int npids;
    struct tf_hv_process pids[TF_HV_MAX_PIDS];
    char shm_path[256];
    int worker_pid;
    char worker_addr[128];
    int64_t created_ms;
    int64_t lease_ms; /* last heartbeat of a leased workload (req.lease), wall-clock ms */
};

struct tf_hv_state;

int tf_hv_state_open(const char *path, struct tf_hv_state **out, char *err, size_t errlen);
void tf_hv_state_close(struct tf_hv_state *st);

/* Records the discovered devices: each is inserted or updated and marked present; devices
 * not in DEVS are marked absent (their allocations are kept: a GPU that comes back keeps its
 * workloads). */
int tf_hv_state_sync_devices(struct tf_hv_state *st, const struct tf_hv_device *devs, int n,
                             char *err, size_t errlen);

/* Present and absent devices with their allocation sums, by index. *N gets the count. */
int tf_hv_state_devices(struct tf_hv_state *st, struct tf_hv_device *out, int max, int *n,
                        char *err, size_t errlen);

/* Places R and records the workload, its allocations and (if R->pid) its first process, in one
 * transaction. TF_EEXIST (name taken), TF_ENOSPC (REASONS says why, one line per GPU). */
int tf_hv_state_create(struct tf_hv_state *st, const struct tf_hv_request *r,
                       struct tf_hv_workload *out, struct tf_dynbuf *reasons, char *err,
                       size_t errlen);

/* The placement decision of tf_hv_state_create without recording anything: 0 when R would
 * fit now, TF_EEXIST, TF_ENOSPC (REASONS says why). */
int tf_hv_state_check(struct tf_hv_state *st, const struct tf_hv_request *r,
                      struct tf_dynbuf *reasons, char *err, size_t errlen);

/* Removes a workload and everything it holds. TF_ENOENT when absent. */
int tf_hv_state_delete(struct tf_hv_state *st, const char *name, char *err, size_t errlen);

int tf_hv_state_get(struct tf_hv_state *st, const char *name, struct tf_hv_workload *out, char *err,
                    size_t errlen);

/* All workloads (ordered by creation). *OUT is malloc'ed (caller frees), *N its length. */
int tf_hv_state_list(struct tf_hv_state *st, struct tf_hv_workload **out, int *n, char *err,
                     size_t errlen);

/* Adds a process to a workload (idempotent). TF_ENOENT, TF_ERANGE (too many). */
int tf_hv_state_add_process(struct tf_hv_state *st, const char *name, int pid, int64_t start_ticks,
                            char *err, size_t errlen);
/* Removes a process from a workload (no error when absent). */
int tf_hv_state_remove_process(struct tf_hv_state *st, const char *name, int pid, char *err,
                               size_t errlen);

/* Records where a workload's runtime lives (shm region path, worker pid and address). */
int tf_hv_state_set_runtime(struct tf_hv_state *st, const char *name, const char *shm_path,
                            int worker_pid, const char *worker_addr, char *err, size_t errlen);

/* Renews a leased workload's lease (now). TF_ENOENT; TF_EINVAL when it is not leased. */
int tf_hv_state_heartbeat(struct tf_hv_state *st, const char *name, char *err, size_t errlen);

/* Counters (alloc_success, alloc_fail): add DELTA / read. */
int tf_hv_state_counter_add(struct tf_hv_state *st, const char *name, int64_t delta);
int64_t tf_hv_state_counter(struct tf_hv_state *st, const char *name);

#endif
