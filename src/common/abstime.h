/* SPDX-License-Identifier: Apache-2.0
 *
 * Absolute times for timed waits (pthread_cond_timedwait takes a deadline, not a delay).
 */
#ifndef TF_COMMON_ABSTIME_H
#define TF_COMMON_ABSTIME_H

#include <time.h>

/* The time MS milliseconds (>= 0) from now on CLK: CLOCK_REALTIME for a condition variable
 * with default attributes, the condition's clock otherwise. */
static inline struct timespec tf_abstime_ms(clockid_t clk, long ms)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

#endif
