/* SPDX-License-Identifier: Apache-2.0
 *
 * Process liveness from /proc: a (pid, start time) pair names one process for its whole life,
 * so a PID reused by an unrelated process is never taken for a workload's. Thread-safe.
 */
#ifndef TF_HYPERVISOR_PROC_H
#define TF_HYPERVISOR_PROC_H

#include <stdbool.h>
#include <stdint.h>

/* Start time of PID in clock ticks since boot (/proc/PID/stat field 22), or -1 if PID does not
 * exist. */
int64_t tf_hv_proc_start_ticks(int pid);

/* Real user id of PID (/proc/PID/status), or -1. */
int tf_hv_proc_uid(int pid);

/* Parent of PID (/proc/PID/stat field 4), 0 when PID does not exist. */
int tf_hv_proc_ppid(int pid);

/* True while the process PID that started at START_TICKS runs (a zombie counts as gone). A
 * START_TICKS < 0 only checks that PID exists. */
bool tf_hv_proc_alive(int pid, int64_t start_ticks);

#endif
