/* SPDX-License-Identifier: Apache-2.0
 *
 * Shared by the fuzz targets whose parsers feed the autoscale recommender (usage CSV,
 * GreptimeDB answers): runs it over the samples a parser accepted and aborts on a
 * recommendation that breaks its invariants (negative requests, limits below requests).
 */
#ifndef TF_FUZZ_AUTOSCALE_FUZZ_H
#define TF_FUZZ_AUTOSCALE_FUZZ_H

#include "core/autoscale.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* MUST_SUCCEED: a recommender error is a finding too (else it only skips the check). */
static inline void fuzz_recommend(const struct tf_usage_sample *s, size_t n, bool must_succeed)
{
    struct tf_autoscale_config c;
    tf_autoscale_config_init(&c);
    c.enable = true;
    c.initial_delay_ms = 0;
    struct tf_autoscale_input in = {0};
    in.cfg = &c;
    in.original =
        (struct tf_autoscale_resources){20000, 40000, INT64_C(8) << 30, INT64_C(16) << 30, 0, 0};
    in.current = in.original;
    in.samples = s;
    in.nsamples = n;
    in.now_ms = n ? s[n - 1].ts_ms : 0;
    struct tf_autoscale_recommendation r;
    char err[256];
    if (tf_autoscale_recommend(&in, &r, err, sizeof(err))) {
        if (must_succeed)
            abort();
        return;
    }
    if (r.resources.req_tflops < 0 || r.resources.lim_tflops < r.resources.req_tflops ||
        r.resources.req_vram < 0 || r.resources.lim_vram < r.resources.req_vram)
        abort();
}

#endif
