/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tf-hypervisor (local mode): the VRAM escape check. A limit region only limits
 * the processes that run the limiter, and only as long as they leave their region alone: a
 * child that drops LD_PRELOAD, a program that calls the driver directly next to its tf-worker,
 * or an app that rewrites its own region holds more VRAM than its limit and nothing in the
 * data path notices. After every sample the hypervisor therefore adds up, per workload and
 * GPU, the device memory NVML reports for the workload's processes — its registered
 * processes, its hard-isolation worker, and every descendant of them — and compares it with
 * the workload's limit on that GPU, allowing SLACK bytes per process for what the driver
 * itself keeps per context. Over it, the workload has escaped: with action "report" that is
 * logged (once per episode, naming each process and whether the limiter governs it) and
 * counted in /api/v1/workloads ("vramEscapes"); with "kill" the offending processes are also
 * sent SIGKILL, the ones outside the limiter first, the largest first, until the rest fit.
 * Workloads on whole GPUs (no VRAM limit) are not checked.
 *
 * Kubernetes pods with a limit region (k8s_pods.h) are checked the same way
 * (tf_hv_check_pod_escapes), under the pod key "<namespace>/<pod>". A pod's processes are
 * those whose cgroup (/proc/PID/cgroup) names the pod's uid, as the kubelet's cgroup drivers
 * do (".../pod<uid>/...", ".../kubepods-...-pod<uid with _>.slice/..."); a process in no pod's
 * cgroup counts when it is, or descends from, a process that holds a PID slot of the pod's
 * region (a process in another pod's cgroup never does: a forged PID slot cannot make the
 * hypervisor count, or kill, another pod's process).
 */
#ifndef TF_HYPERVISOR_ESCAPE_H
#define TF_HYPERVISOR_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tf_hv_escape_action { TF_HV_ESCAPE_OFF = 0, TF_HV_ESCAPE_REPORT, TF_HV_ESCAPE_KILL };

/* "off", "report", "kill" -> *OUT; TF_EINVAL otherwise. */
int tf_hv_escape_action_parse(const char *s, enum tf_hv_escape_action *out);

/* One process of a workload on one GPU. */
struct tf_hv_escape_proc {
    int pid;
    int64_t mem;     /* bytes NVML reports */
    bool registered; /* governed by the limiter (holds a PID slot of its region) */
};

/* The pure decision for one workload on one GPU: its N processes P hold *USED bytes; over
 * LIMIT + N * SLACK it escaped (true), and VICTIMS receives (in order, *NVICTIMS of them) the
 * processes to kill so the rest fit: unregistered ones first, then the largest. */
bool tf_hv_escape_judge(int64_t limit, int64_t slack, const struct tf_hv_escape_proc *p, int n,
                        int64_t *used, int *victims, int *nvictims);

/* The pod uid named by the cgroup lines TEXT (/proc/PID/cgroup), with '_' read as '-', into
 * UID (37 bytes at least); false when no line names a pod. Pure. */
bool tf_hv_cgroup_pod_uid(const char *text, char *uid, size_t len);

struct tf_hv;
/* Whether process PID is local workload NAME's (one of its live processes or its worker, or
 * below one), by the hypervisor's own records. */
bool tf_hv_workload_owns(struct tf_hv *hv, const char *name, int pid);
/* Whether process PID's cgroup is that of the pod with metadata.uid UID. */
bool tf_hv_pod_owns(const char *uid, int pid);

/* The check over every workload, from the last samples (main loop, after sampling). */
void tf_hv_check_escapes(struct tf_hv *hv);

/* A Kubernetes pod with a limit region, for tf_hv_check_pod_escapes. */
struct tf_hv_escape_pod {
    const char *key;           /* "<namespace>/<pod>": its region's key and the log's name */
    const char *uid;           /* metadata.uid */
    int ngpu;                  /* its GPUs: */
    const char (*uuids)[64];   /* UUIDs as in gpu-ids */
    const int64_t *vram_limit; /* bytes per GPU, <= 0 when not limited */
};
/* The same check over the pods PODS[0..N) (main loop, after sampling). */
void tf_hv_check_pod_escapes(struct tf_hv *hv, const struct tf_hv_escape_pod *pods, int n);

#endif
