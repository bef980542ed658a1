/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tf-hypervisor: the tf-worker of a hard-isolation workload. The worker holds the
 * workload's GPUs through the real (or simulated) driver and enforces its limits; the app runs
 * on the remote client (libtf_client.so installed as libcuda.so.1) pointed at it:
 *   <state dir>/workers/<name>/token      shared token (0600), TF_TOKEN_FILE for the app
 *   <state dir>/workers/<name>/ready      the worker's bound address (tcp://127.0.0.1:PORT)
 *   <state dir>/workers/<name>/worker.log its log
 * The worker is detached from the hypervisor (double fork, own session), so a hypervisor
 * killed with SIGKILL leaves it serving; the hypervisor records its PID and start time and stops
 * it when the workload is released.
 * Binaries: $TF_WORKER_BIN, else tf-worker in the hypervisor's lib dir, else the build tree's
 * src/remote/worker/; the client: $TF_CLIENT_DIR, else <lib dir>/../lib/tensor-fusion/client,
 * else src/remote/client/ of the build tree. Thread-safe (no shared state).
 */
#ifndef TF_HYPERVISOR_WORKER_H
#define TF_HYPERVISOR_WORKER_H

#include "hypervisor/hv.h"

#include <json-c/json.h>

/* 0 when tf-worker and the client library are found (paths in WORKER / CLIENT_DIR if
 * non-NULL, capacity 512), else TF_ENOTSUP with ERR naming what is missing. */
int tf_hv_worker_find(const struct tf_hv *hv, char *worker, char *client_dir, char *err,
                      size_t errlen);

/* Starts the worker for W (its GPUs and limits), waits until it listens, records its PID and
 * address in the state store and adds the app's environment (TF_REMOTE, TF_TOKEN_FILE,
 * LD_LIBRARY_PATH prefix) to ENV. */
int tf_hv_worker_start(struct tf_hv *hv, const struct tf_hv_workload *w, json_object *env,
                       char *err, size_t errlen);

/* Stops W's worker (if its recorded PID is still that tf-worker) and removes its files. */
void tf_hv_worker_stop(struct tf_hv *hv, const struct tf_hv_workload *w);

#endif
