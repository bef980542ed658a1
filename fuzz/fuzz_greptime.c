/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: GreptimeDB SQL API answers (tf_greptime_usage_parse and the generic
 * tf_greptime_records_parse the alert evaluator uses), and the recommender over the samples
 * it accepts.
 */
#include "controller/greptime_codec.h"
#include "autoscale_fuzz.h"

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
    json_object *doc, *names, *rows;
    if (tf_greptime_records_parse((const char *)data, size, &doc, &names, &rows, err,
                                  sizeof(err)) == 0) {
        size_t ncols = json_object_array_length(names);
        for (size_t i = 0; i < json_object_array_length(rows); i++)
            if (json_object_array_length(json_object_array_get_idx(rows, i)) != ncols)
                abort();
        json_object_put(doc);
    } else if (doc) {
        abort();
    }
    if (tf_greptime_usage_parse((const char *)data, size, &s, &n, err, sizeof(err))) {
        if (s || n)
            abort();
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (s[i].tflops_milli < -1 || s[i].vram_bytes < -1)
            abort();
    /* Timestamps beyond years 1..9999 are outside what the recommender takes. */
    if (!n ||
        (s[n - 1].ts_ms > -INT64_C(62135596800000) && s[n - 1].ts_ms < INT64_C(253402300799000)))
        fuzz_recommend(s, n, false);
    free(s);
    return 0;
}
