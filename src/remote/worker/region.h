/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-worker's limits from a limit region (--limits-region PATH, the region's limits part; its
 * usage part is beside it, rw/<name>): in Kubernetes the node hypervisor writes one region per
 * pod (layout: include/tf/shm.h) and runs the limit engine for it; a hard-isolated worker mounts
 * its pod's region and takes both of its limits from there, live, instead of from flags.
 *
 * Attaching: the region file may not exist yet when the worker starts (the hypervisor creates
 * it once the pod is bound); the worker polls for it every 100 ms up to a bound and fails
 * (never runs unlimited) if it does not appear or is rejected by tf_shm_open. The limits part
 * is mapped read-only (TF_SHM_APP), as the limiter maps it: what runs in the pod cannot raise
 * its limits through the worker either. Every device
 * the worker exposes must have an entry in the region, matched by UUID (an entry whose UUID
 * is all zero stands for "the GPU at this driver ordinal", as for the limiter); the map is
 * fixed at start-up. The worker then claims one PID slot, so the hypervisor's engine
 * attributes the worker's GPU time (all clients together) to the pod, and charges its VRAM
 * reservations and launch counts to that slot. It never reaps other slots (the engine does,
 * from the host's PID namespace).
 *
 * What the worker reads live, on every use: the VRAM limit (tf_shm_vram_reserve,
 * tf_shm_vram_view), the compute-limit flag, the bucket and the per-launch cost
 * (compute.h). Nothing is cached but the device map.
 *
 * Private to the worker. Ownership: a tf_wregion owns its mapping and its PID slot.
 * Threads: open/close run alone (start-up, shutdown); the region itself is lock-free and
 * shared with the hypervisor and any other process of the pod.
 */
#ifndef TF_REMOTE_WORKER_REGION_H
#define TF_REMOTE_WORKER_REGION_H

#include "limits/shm.h"

#include <stddef.h>
#include <stdint.h>

#define TF_WREGION_POLL_MS 100

struct tf_wregion {
    struct tf_shm_map map; /* map.r.lim NULL: no region attached */
    char path[512];
    int slot;       /* the worker's PID slot */
    uint64_t owner; /* its owner id */
    int ndev;
    int entry[TF_SHM_MAX_DEVICES]; /* worker device i -> region entry */
};

/* One device the worker exposes. */
struct tf_wregion_dev {
    uint8_t uuid[16];
    int ordinal; /* driver ordinal */
};

/* Attaches G to the region at PATH: waits up to WAIT_MS for the file (logging once that it
 * waits), maps it, maps the NDEV devices to entries and claims a PID slot. 0, or TF_ENOENT
 * (never appeared) / TF_EPROTO (rejected) / TF_EINVAL (a device without an entry, too many
 * devices) / TF_ENOSPC (no free PID slot) / TF_EIO, with a message naming PATH in ERR; G is
 * then detached. */
int tf_wregion_open(struct tf_wregion *g, const char *path, int wait_ms,
                    const struct tf_wregion_dev *devs, int ndev, char *err, size_t errlen);
/* Releases the PID slot (returning whatever VRAM it still holds) and unmaps. G may be zeroed
 * or never opened. */
void tf_wregion_close(struct tf_wregion *g);

#endif
