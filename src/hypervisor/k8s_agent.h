/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tf-hypervisor: Kubernetes mode (`tf-hypervisor --kubernetes`), the node agent.
 * It connects to the API server (controller/k8s/flags.h: in-cluster, --kubeconfig or
 * --server, as tf-controller does), publishes this node's GPUs as GPU objects (k8s_gpus.h)
 * and serves the pods bound to this node with limit regions (k8s_pods.h). Local mode keeps
 * running beside it (state store, HTTP API, metrics).
 *
 * Flags: --kubernetes, --node-name NAME (default $NODE_NAME; required), --shm-root DIR
 * (default /run/tensor-fusion/shm: the directory the webhook mounts into soft pods), and the
 * API flags. The node name also becomes the node tag of metric lines (--node).
 * Threads: _start (before any other thread reads the configuration) and _stop on the main
 * thread, _step on the main loop.
 */
#ifndef TF_HYPERVISOR_K8S_AGENT_H
#define TF_HYPERVISOR_K8S_AGENT_H

#include "controller/k8s/flags.h"
#include "hypervisor/hv.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_HV_K8S_SHM_ROOT "/run/tensor-fusion/shm"

/* Borrowed strings (argv). */
struct tf_hv_k8s_opts {
    bool enabled;         /* --kubernetes */
    const char *node;     /* --node-name; NULL: $NODE_NAME */
    const char *shm_root; /* --shm-root; NULL: TF_HV_K8S_SHM_ROOT */
    const char *lease_ns; /* --lease-namespace; NULL: $POD_NAMESPACE, else tensor-fusion-sys */
    struct tf_k8s_flags api;
};

#define TF_HV_K8S_USAGE                                                                            \
    "  --kubernetes           node agent: publish GPU objects, serve the pods bound here\n"        \
    "  --node-name NAME       this node (default $NODE_NAME)\n"                                    \
    "  --shm-root DIR         pod limit regions (default " TF_HV_K8S_SHM_ROOT ")\n"                \
    "  --lease-namespace NS   the node's heartbeat Lease (default "                                \
    "$POD_NAMESPACE)\n" TF_K8S_FLAGS_USAGE

/* Consumes ARG (and VAL, its value, NULL when absent) if it is one of the flags above:
 * returns the number of arguments used (1 or 2), 0 when ARG is not one of them, -1 when a
 * value is missing (message on stderr). */
int tf_hv_k8s_flag(struct tf_hv_k8s_opts *o, const char *arg, const char *val);

struct tf_hv_k8s;

/* Connects and starts the publisher and the pod informer. Errors (bad flags or API
 * configuration, no node name) are returned with ERR set; an unreachable API server is not
 * an error (both sides retry). */
int tf_hv_k8s_start(struct tf_hv *hv, const struct tf_hv_k8s_opts *o, struct tf_hv_k8s **out,
                    char *err, size_t errlen);
/* One main-loop turn (NOW_MS: CLOCK_MONOTONIC milliseconds). */
void tf_hv_k8s_step(struct tf_hv_k8s *k, int64_t now_ms);
/* Whether process PID is in the cgroup of this node's pod KEY ("<ns>/<pod>"). Accepts NULL. */
bool tf_hv_k8s_owns(struct tf_hv_k8s *k, const char *key, int pid);
/* The VRAM escape check over the pods of this node (escape.h); main loop, after sampling.
 * Accepts NULL. */
void tf_hv_k8s_check_escapes(struct tf_hv_k8s *k);
/* Stops everything (accepts NULL); regions and GPU objects stay. */
void tf_hv_k8s_stop(struct tf_hv_k8s *k);

#endif
