/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tf-hypervisor: soft isolation. Each soft workload has a limit region (the shm ABI
 * of include/tf/shm.h, created with src/limits/shm.h) at
 *   <state dir>/shm/<namespace>/<name>/shm
 * holding one device entry per allocated GPU (its UUID, compute limit in basis points, VRAM
 * limit, memory size), registered with the limit engine (src/limits/engine.h), which the
 * hypervisor steps every TF_HV_ENGINE_PERIOD_MS: it reclaims dead processes' slots, samples
 * per-process GPU time through NVML, runs the compute controller and publishes the heartbeat.
 * The app runs with LD_PRELOAD=libtf_limiter.so and TF_SHM_PATH=<region>.
 * After a hypervisor restart the regions of the recorded workloads are reopened (or recreated
 * from the recorded limits when the file is gone), so running apps keep their limits.
 * The limiter library is found in $TF_LIMITER_LIB, next to the hypervisor, in
 * ../lib/tensor-fusion/, then in the build tree's src/limiter/.
 *
 * Thread-safe: one mutex guards the engine and the region table (API threads add/remove, the
 * main loop steps).
 */
#ifndef TF_HYPERVISOR_SOFT_H
#define TF_HYPERVISOR_SOFT_H

#include "hypervisor/hv.h"

#include <json-c/json.h>
#include <stdbool.h>

#define TF_HV_ENGINE_PERIOD_MS 100

struct tf_hv_soft;

/* Creates the engine over NVML library NVML_LIB (NULL: the default). Without NVML the engine
 * still runs (feed-forward limits, heartbeat). */
int tf_hv_soft_new(const char *nvml_lib, struct tf_hv_soft **out, char *err, size_t errlen);
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
/* One engine step (main loop). */
void tf_hv_soft_step(struct tf_hv *hv);
/* Measured share (bp) and VRAM in use of W on its K-th GPU; false when W has no region. */
bool tf_hv_soft_usage(struct tf_hv *hv, const char *name, int k, int32_t *share_bp,
                      int64_t *vram_used);
/* True while some process holds a PID slot of W's region (the limiter registers every
 * process of the app, children included). */
bool tf_hv_soft_has_processes(struct tf_hv *hv, const char *name);

#endif
