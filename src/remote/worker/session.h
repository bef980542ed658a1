/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker's CUDA side: the state shared by all clients (the driver, the devices this worker
 * exposes, hard limits) and the per-connection session that executes a client's requests on
 * the driver. Each session owns one handle table (its contexts, modules, functions, streams,
 * events) and one range set (its device allocations and module globals); every id, pointer,
 * size and offset a client sends is checked against those before the driver sees it. When a
 * connection ends, everything its session created is released.
 *
 * Hard limits (hard isolation): a per-device VRAM cap shared by all clients of this worker
 * (an atomic reservation taken before each allocation; over the cap the client gets
 * CUDA_ERROR_OUT_OF_MEMORY and cuMemGetInfo/cuDeviceTotalMem report the cap as total).
 *
 * Threads: tf_worker_init/fini run alone; tf_worker_hello and tf_worker_serve run on
 * connection threads concurrently (the shared state is read-only or atomic).
 */
#ifndef TF_REMOTE_WORKER_SESSION_H
#define TF_REMOTE_WORKER_SESSION_H

#include "remote/buf.h"
#include "remote/worker/driver.h"
#include "remote/worker/server.h"

#include <stdatomic.h>
#include <stdint.h>

struct tf_worker_dev {
    CUdevice dev;         /* the driver's ordinal */
    int64_t total;        /* cuDeviceTotalMem */
    int64_t limit;        /* VRAM cap (= total when unlimited) */
    _Atomic int64_t used; /* bytes allocated by this worker's clients */
};

struct tf_worker_config {
    const char *driver_path; /* NULL: "libcuda.so.1" */
    const char *devices;     /* comma list of driver ordinals; NULL: "0" */
    int64_t vram_limit;      /* bytes per device; 0: none */
    int32_t compute_bp;      /* compute share in basis points; 0: none */
};

struct tf_worker {
    struct tf_drv drv;
    int driver_version;
    int ndev;
    struct tf_worker_dev devs[TF_PROTO_MAX_DEVICES];
    int32_t compute_bp;
    struct tf_buf hello_tail; /* device records of the HELLO reply, built once */
};

/* Loads the driver, initialises it and collects the devices' immutable facts. */
int tf_worker_init(struct tf_worker *w, const struct tf_worker_config *cfg, char *err,
                   size_t errlen);
void tf_worker_fini(struct tf_worker *w);

/* tf_server_handler callbacks; ARG is the struct tf_worker. */
int tf_worker_hello(void *arg, struct tf_msg_hello_rep *rep, struct tf_buf *tail);
void tf_worker_serve(void *arg, struct tf_wconn *c);

/* VRAM reservation against device I's cap: 0 or TF_ENOSPC. Release never underflows. */
int tf_worker_vram_reserve(struct tf_worker *w, int i, int64_t bytes);
void tf_worker_vram_release(struct tf_worker *w, int i, int64_t bytes);

#endif
