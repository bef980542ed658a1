/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tf-hypervisor: soft isolation. Each soft workload has a limit region (the shm ABI
 * of include/tf/shm.h, created with src/limits/shm.h) at
 *   <state dir>/shm/<namespace>/<name>/shm     (its usage part beside it: rw/shm)
 * holding one device entry per allocated GPU (its UUID, compute limit in basis points, VRAM
 * limit, memory size), registered with the limit engine (src/limits/engine.h), which the
 * hypervisor steps every TF_HV_ENGINE_PERIOD_MS: it reclaims dead processes' slots, samples
 * per-process GPU time through NVML, runs the compute controller and publishes the heartbeat.
 * The app runs with LD_PRELOAD=libtf_limiter.so and TF_SHM_PATH=<region>.
 * After a hypervisor restart the regions of the recorded workloads are reopened (recreated
 * from the recorded limits when the file is gone; repaired in place from them, reservations
 * kept, when it is corrupt: tf_shm_repair), so running apps keep their limits.
 * The limiter library is found in $TF_LIMITER_LIB, next to the hypervisor, in
 * ../lib/tensor-fusion/, then in the build tree's src/limiter/.
 * Regions of other owners (the Kubernetes node agent's pods, k8s_pods.h) are registered with
 * the same engine through tf_hv_soft_attach / _configure / _detach under their own keys
 * ("<namespace>/<pod>"; local workload names never contain '/').
 *
 * Thread-safe: one mutex guards the engine and the region table (API threads add/remove, the
 * main loop steps).
 */
#ifndef TF_HYPERVISOR_SOFT_H
#define TF_HYPERVISOR_SOFT_H

#include "hypervisor/hv.h"
#include "limits/shm.h"

#include <json-c/json.h>
#include <stdbool.h>

#define TF_HV_ENGINE_PERIOD_MS 100
#define TF_HV_SOFT_KEY_MAX 320 /* longest region key + 1 ("<ns>/<pod>": 63 + 1 + 253) */

struct tf_hv_soft;

/* Creates the engine over NVML library NVML_LIB (NULL: the default). Without NVML the engine
 * still runs (feed-forward limits, heartbeat). */
int tf_hv_soft_new(const char *nvml_lib, bool (*may_pause)(void *, const char *, uint32_t),
                   void *pause_ctx, struct tf_hv_soft **out, char *err, size_t errlen);
void tf_hv_soft_destroy(struct tf_hv_soft *s);

/* 0 when libtf_limiter.so is found (path in LIB, capacity 512, if non-NULL), else
 * TF_ENOTSUP with ERR naming what is missing. */
int tf_hv_soft_find_limiter(const struct tf_hv *hv, char *lib, char *err, size_t errlen);

/* Creates (or, with REOPEN, reopens) W's region, registers it, records its path and adds
 * LD_PRELOAD / TF_SHM_PATH to ENV (may be NULL when reopening). */
int tf_hv_soft_start(struct tf_hv *hv, const struct tf_hv_workload *w, bool reopen,
                     json_object *env, char *err, size_t errlen);
/* Unregisters and removes W's region. */
void tf_hv_soft_stop(struct tf_hv *hv, const struct tf_hv_workload *w);

/* Registers the region whose limits part is PATH under KEY (copied, shorter than
 * TF_HV_SOFT_KEY_MAX) with the engine, creating PATH's directory (mode 0755: the workload may
 * not replace the files in it). With REOPEN a valid region already at PATH is adopted as it is
 * (limits, VRAM accounting and PID slots kept; *REOPENED, if non-NULL, set true), and one that
 * is invalid or half there is repaired in place from CFG (tf_shm_repair: its processes keep
 * their mappings and their reservations count); otherwise, or when it is missing or beyond
 * repair, a fresh region is created from CFG (replacing any file there). Either way its files
 * get PERMS (the usage part's owner: who may write it). TF_EEXIST when KEY is registered,
 * TF_ENOTSUP when S is NULL. */
int tf_hv_soft_attach(struct tf_hv_soft *s, const char *key, const char *path,
                      const struct tf_shm_config *cfg, const struct tf_shm_perms *perms,
                      bool reopen, bool *reopened, char *err, size_t errlen);
/* Rewrites KEY's configuration with CFG when it differs (a live limit change: *CHANGED set).
 * TF_ENOENT when KEY is not registered; tf_shm_read_config / _write_config errors. */
int tf_hv_soft_configure(struct tf_hv_soft *s, const char *key, const struct tf_shm_config *cfg,
                         bool *changed);
/* Unregisters KEY (no-op when absent). The file stays: see tf_hv_soft_remove_region. */
void tf_hv_soft_detach(struct tf_hv_soft *s, const char *key);

/* DIR = ROOT/NS/NAME and PATH = DIR/shm (the limits part); false when they do not fit. */
bool tf_hv_soft_region_path(const char *root, const char *ns, const char *name, char *dir,
                            size_t dlen, char *path, size_t plen);
/* Removes the region in ROOT/NS/NAME and then the NAME and NS directories when they are
 * empty. */
void tf_hv_soft_remove_region(const char *root, const char *ns, const char *name);
/* One engine step (main loop). */
void tf_hv_soft_step(struct tf_hv *hv);
/* Measured share (bp) and VRAM in use of the region registered as NAME on its K-th GPU;
 * false when there is none. */
bool tf_hv_soft_usage(struct tf_hv *hv, const char *name, int k, int32_t *share_bp,
                      int64_t *vram_used);
/* Launches of NAME's K-th GPU that waited for compute tokens since its region was made
 * (throttle_count, counted by the limiters and tf-worker); -1 when there is no such region. */
int64_t tf_hv_soft_throttles(struct tf_hv *hv, const char *name, int k);
/* True when the process HOST_PID (as the hypervisor sees it) holds a PID slot of workload
 * NAME's region: it runs under the limiter. */
bool tf_hv_soft_registered(struct tf_hv *hv, const char *name, int host_pid);
/* True while some process holds a PID slot of W's region (the limiter registers every
 * process of the app, children included). */
bool tf_hv_soft_has_processes(struct tf_hv *hv, const char *name);

#endif
