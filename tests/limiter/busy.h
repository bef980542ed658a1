/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only: the share of the simulated device a running child's kernels get, measured
 * through NVML's per-process busy time over 2 s after 2 s of settling -- independent of how
 * fast the loaded machine runs the kernels. Used by the limiter suites' compute tests.
 */
#ifndef TF_TEST_BUSY_H
#define TF_TEST_BUSY_H

#include "limits/nvml.h"
#include "spawn.h"

#include <stdint.h>
#include <time.h>

static inline uint64_t busy_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Device busy share (percent) of child C (already running its load) on device 0 of NV. */
static inline double busy_share(struct tf_nvml *nv, const struct child *c)
{
    struct timespec two = {2, 0};
    nanosleep(&two, NULL);
    struct tf_usage_dev u;
    static const uint8_t any[16];
    assert_int_equal(tf_nvml_sample(nv, any, 0, busy_mono_ns(), &u), 0);
    nanosleep(&two, NULL);
    assert_int_equal(tf_nvml_sample(nv, any, 0, busy_mono_ns(), &u), 0);
    assert_true(u.have_busy && u.window_ns > 0);
    uint64_t busy = 0;
    for (int i = 0; i < u.nproc; i++)
        if (u.proc[i].pid == (uint32_t)c->pid)
            busy += u.proc[i].busy_ns;
    return (double)busy * 100.0 / (double)u.window_ns;
}

#endif
