/* SPDX-License-Identifier: Apache-2.0
 *
 * Process facts from /proc that the limit engine and the limiter need to register and
 * judge processes across PID namespaces: start time (to tell a live process from a reused
 * PID), pid-namespace inode, the innermost NSpid, and the default liveness oracle for
 * tf_shm_reap. Thread-safe; each call reads /proc (not for hot paths).
 */
#ifndef TF_LIMITS_PROC_H
#define TF_LIMITS_PROC_H

#include "tf/shm.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Start time of PID in clock ticks since boot (field 22 of /proc/PID/stat). 0 or TF_ENOENT
 * (no such process) / TF_EIO. */
int tf_proc_starttime(pid_t pid, uint64_t *ticks);

/* Inode of PID's pid namespace (0 = self); 0 if unknown. */
uint64_t tf_proc_pidns(pid_t pid);

/* PID's pid in its innermost namespace (last field of NSpid in /proc/PID/status; PID itself
 * on kernels without NSpid). 0 or TF_ENOENT / TF_EIO. */
int tf_proc_nspid(pid_t pid, uint32_t *inner);

/* Owner id of the calling process (tf_shm_owner_id of getpid() and its start time). */
uint64_t tf_proc_self_owner(void);

/* tf_shm_alive_fn for the workload's own processes (the limiter, tf-worker), which may run
 * in a container. CTX is a `const uint64_t *` holding the caller's pid-namespace inode. An
 * owner in the caller's namespace is judged by its own pid; any other counts as alive (never
 * reclaim what cannot be verified). The slot's host_pid is not used: it is a pid of the
 * engine's namespace, which in the caller's names another process or none. Dead = no such
 * process, or a different start time. */
bool tf_proc_alive(const struct tf_shm_pid *slot, uint64_t owner, void *ctx);
/* The engine's tf_shm_alive_fn (it runs in the namespace whose pids host_pid holds): an
 * owner whose host_pid the engine resolved is judged through it, else as tf_proc_alive. */
bool tf_proc_alive_host(const struct tf_shm_pid *slot, uint64_t owner, void *ctx);

#endif
