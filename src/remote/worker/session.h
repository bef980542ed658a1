/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker's CUDA side: the state shared by all clients (the driver, the devices this worker
 * exposes, hard limits) and the per-connection session that executes a client's requests on
 * the driver. Each session owns one handle table (its contexts, modules, functions, streams,
 * events) and one range set (its device allocations and module globals); every id, pointer,
 * size and offset a client sends is checked against those before the driver sees it. When a
 * connection ends, everything its session created is released.
 *
 * Hard limits (hard isolation), both shared by all clients of this worker: a per-device VRAM
 * cap (an atomic reservation taken before each allocation; over the cap the client gets
 * CUDA_ERROR_OUT_OF_MEMORY and cuMemGetInfo/cuDeviceTotalMem report the cap as total), and a
 * per-device compute share (compute.h): every launch takes its tokens before it is issued to
 * the driver, and waits on its connection thread (keepalives flowing) while they are short.
 * The limits come from flags (--vram-limit: per-device atomics here; --compute-percent: a
 * private region and engine) or from the pod's limit region (--limits-region, region.h):
 * then reservations are the region's (tf_shm_vram_reserve against its live limit, charged to
 * the worker's PID slot), cuMemGetInfo reports tf_shm_vram_view of the live limit, a HELLO
 * reports the limit at connect time as total memory (the client caches it), and launches
 * take the region's bucket tokens.
 *
 * Bulk copies go through a per-session staging ring (staging.h): HtoD chunks are received
 * from the socket straight into it and copied to the device asynchronously while the next
 * chunk arrives; DtoH chunks are copied into it asynchronously while the previous one is
 * sent.
 *
 * Threads: tf_worker_init/fini run alone; tf_worker_hello and tf_worker_serve run on
 * connection threads concurrently (the shared state is read-only or atomic).
 */
#ifndef TF_REMOTE_WORKER_SESSION_H
#define TF_REMOTE_WORKER_SESSION_H

#include "remote/buf.h"
#include "remote/worker/compute.h"
#include "remote/worker/driver.h"
#include "remote/worker/imgcache.h"
#include "remote/worker/region.h"
#include "remote/worker/server.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct tf_worker_dev {
    CUdevice dev;         /* the driver's ordinal */
    int64_t total;        /* cuDeviceTotalMem */
    int64_t limit;        /* VRAM cap (= total when unlimited); unused with a region */
    _Atomic int64_t used; /* bytes allocated by this worker's clients; unused with a region */
};

struct tf_worker_config {
    const char *driver_path;     /* NULL: "libcuda.so.1" */
    const char *devices;         /* comma list of driver ordinals; NULL: "0" */
    int64_t vram_limit;          /* bytes per device; 0: none */
    int32_t compute_bp;          /* compute share in basis points; 0 or 10000: none */
    const char *limits_region;   /* limit region file (then vram_limit/compute_bp are 0); NULL */
    int limits_wait_ms;          /* how long to wait for it to appear */
    int64_t module_buffer_limit; /* bytes of module images all sessions may buffer; 0: 1 GiB */
    /* Bulk copies through page-locked staging rings (faster DMA on a real GPU). Page-locked
     * host memory is reachable from every context of the process (unified addressing), so
     * one tenant's kernels could read another's data in transit: only for workers whose
     * clients are all one tenant. false: pageable rings, reachable by no kernel. */
    bool pinned_staging;
    const char *stats_file; /* rewritten after each module load; NULL: none */
};

struct tf_worker {
    struct tf_drv drv;
    int driver_version;
    int ndev;
    struct tf_worker_dev devs[TF_PROTO_MAX_DEVICES];
    struct tf_wregion region;   /* the limit region (region.map.r.lim NULL: from flags) */
    struct tf_wcompute compute; /* the compute limit (inert without one) */
    struct tf_buf hello_tail;   /* device records of the HELLO reply, built once */
    /* Module images being uploaded (BLOB_APPEND) by all sessions together, against
     * module_buffer_limit: one client may buffer TF_PROTO_MAX_BLOB, all of them together no
     * more than this. */
    _Atomic int64_t blob_used;
    int64_t blob_limit;
    /* Module images by digest, charged to blob_used (imgcache.h). */
    struct tf_imgcache images;
    const char *stats_path; /* --stats-file */
    pthread_mutex_t stats_mu;
    /* The worker's own context (the primary context of its first device, never given to a
     * client), in which the sessions' pinned staging rings are allocated (portable), with
     * pinned_staging. NULL: rings are pageable memory. */
    CUcontext stage_ctx;
};

/* Loads the driver, initialises it and collects the devices' immutable facts. */
int tf_worker_init(struct tf_worker *w, const struct tf_worker_config *cfg, char *err,
                   size_t errlen);
/* Before tf_server_destroy at shutdown: connections waiting for compute tokens go on at
 * once (and so see their end of stream promptly). */
void tf_worker_shutdown(struct tf_worker *w);
void tf_worker_fini(struct tf_worker *w);

/* tf_server_handler callbacks; ARG is the struct tf_worker. */
int tf_worker_hello(void *arg, struct tf_msg_hello_rep *rep, struct tf_buf *tail);
void tf_worker_serve(void *arg, struct tf_wconn *c);

/* VRAM reservation against device I's cap (the region's live limit with one): 0 or
 * TF_ENOSPC. Release never underflows. */
int tf_worker_vram_reserve(struct tf_worker *w, int i, int64_t bytes);
void tf_worker_vram_release(struct tf_worker *w, int i, int64_t bytes);

/* Module-image buffer reservation against the worker-wide budget: 0 or TF_ENOSPC (nothing
 * taken). Thread-safe. */
int tf_worker_blob_reserve(struct tf_worker *w, int64_t bytes);
void tf_worker_blob_release(struct tf_worker *w, int64_t bytes);
/* After a module load: rewrites the --stats-file (module image counters, one JSON object)
 * when there is one. */
void tf_worker_images_changed(struct tf_worker *w);

#endif
