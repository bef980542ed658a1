/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: GreptimeDB SQL API answers (tf_greptime_usage_parse), and the
 * recommender over the samples it accepts.
 */
#include "controller/greptime_codec.h"
#include "core/autoscale.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 20)
        return 0;
    struct tf_usage_sample *s = NULL;
    size_t n = 0;
    char err[256];
    if (tf_greptime_usage_parse((const char *)data, size, &s, &n, err, sizeof(err))) {
        if (s || n)
            abort();
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (s[i].tflops_milli < -1 || s[i].vram_bytes < -1)
            abort();
    struct tf_autoscale_config c;
    tf_autoscale_config_init(&c);
    c.enable = true;
    c.initial_delay_ms = 0;
    struct tf_autoscale_input in = {0};
    in.cfg = &c;
    in.original =
        (struct tf_autoscale_resources){20000, 40000, INT64_C(8) << 30, INT64_C(16) << 30};
    in.current = in.original;
    in.samples = s;
    in.nsamples = n;
    in.now_ms = n ? s[n - 1].ts_ms : 0;
    struct tf_autoscale_recommendation r;
    if (in.now_ms > -INT64_C(62135596800000) && in.now_ms < INT64_C(253402300799000) &&
        tf_autoscale_recommend(&in, &r, err, sizeof(err)) == 0 &&
        (r.resources.req_tflops < 0 || r.resources.lim_tflops < r.resources.req_tflops ||
         r.resources.req_vram < 0 || r.resources.lim_vram < r.resources.req_vram))
        abort();
    free(s);
    return 0;
}
