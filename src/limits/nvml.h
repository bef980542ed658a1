/* SPDX-License-Identifier: Apache-2.0
 *
 * NVML usage source for the limit engine: libnvidia-ml.so.1 loaded with dlopen (the real one
 * on hardware, the simulated one in tests), per-process GPU time from
 * nvmlDeviceGetProcessUtilization (samples since the previous call, smUtil x the span they
 * cover), per-process memory from nvmlDeviceGetComputeRunningProcesses_v3, device
 * utilisation from nvmlDeviceGetUtilizationRates.
 *
 * The symbol resolver is injected: the hypervisor passes dlsym, while the limiter (which
 * interposes NVML names and dlsym itself) passes its private resolver of the real library
 * so its own hooks are never measured. Not thread-safe: one engine thread uses a handle.
 */
#ifndef TF_LIMITS_NVML_H
#define TF_LIMITS_NVML_H

#include "limits/usage.h"

#include <stddef.h>

struct tf_nvml;

/* Resolves SYMBOL in the library HANDLE (like dlsym). */
typedef void *(*tf_nvml_resolve_fn)(void *handle, const char *symbol);

/* Loads LIBPATH (NULL: "libnvidia-ml.so.1") and initialises NVML. RESOLVE NULL = dlsym.
 * Returns 0 and *out, or TF_ENOENT (library missing) / TF_EIO (nvmlInit failed), with a
 * message in ERR. */
int tf_nvml_open(const char *libpath, tf_nvml_resolve_fn resolve, struct tf_nvml **out, char *err,
                 size_t errlen);
/* nvmlShutdown and dlclose; NULL is fine. */
void tf_nvml_close(struct tf_nvml *n);

/* The tf_usage_source sample function; CTX is a struct tf_nvml *. */
int tf_nvml_sample(void *ctx, const uint8_t uuid[16], unsigned ordinal, uint64_t now_ns,
                   struct tf_usage_dev *out);

/* Number of devices and the UUID of device I (for `tfctl limits serve --device 0`). */
int tf_nvml_device_count(struct tf_nvml *n, unsigned *count);
int tf_nvml_device_uuid(struct tf_nvml *n, unsigned i, uint8_t uuid[16], uint64_t *mem_total);

#endif
