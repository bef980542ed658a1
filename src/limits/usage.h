/* SPDX-License-Identifier: Apache-2.0
 *
 * Where the limit engine learns how busy each GPU was and for whom: a usage source reports,
 * per device (by UUID), the GPU time each process used since the previous sample of that
 * device, plus whole-device utilisation and per-process memory. The NVML source
 * (src/limits/nvml.h) reads NVML on hardware and on the simulated GPU; tests pass their own.
 * A source is driven by one thread (the engine's); it need not be thread-safe.
 */
#ifndef TF_LIMITS_USAGE_H
#define TF_LIMITS_USAGE_H

#include <stdbool.h>
#include <stdint.h>

#define TF_USAGE_MAX_PROCS 64

struct tf_usage_proc {
    uint32_t pid;     /* as the source sees it (host PID for NVML) */
    uint64_t busy_ns; /* GPU time used since the previous sample of this device */
    uint64_t mem;     /* device memory in use, bytes (0 if unknown) */
    bool sampled;     /* it was in this window's utilisation samples (it ran), even where
                       * they rounded its share to 0 */
};

struct tf_usage_dev {
    uint64_t window_ns; /* span since the previous sample of this device */
    uint32_t util_bp;   /* whole-device utilisation, basis points */
    bool have_busy;     /* per-process busy time is available */
    bool have_mem;      /* per-process memory is available */
    int nproc;
    struct tf_usage_proc proc[TF_USAGE_MAX_PROCS];
};

struct tf_usage_source {
    /* Fills OUT for the device with UUID (all zero: the device at ORDINAL). 0 or TF_E*. */
    int (*sample)(void *ctx, const uint8_t uuid[16], unsigned ordinal, uint64_t now_ns,
                  struct tf_usage_dev *out);
    void *ctx;
};

#endif
