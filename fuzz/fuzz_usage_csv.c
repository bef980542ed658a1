/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: usage CSV (tf_usage_csv_parse) and the recommender over what it accepts.
 */
#include "autoscale_fuzz.h"
#include "core/usage_csv.h"

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
    if (tf_usage_csv_parse((const char *)data, size, &s, &n, err, sizeof(err))) {
        if (s || n)
            abort();
        return 0;
    }
    fuzz_recommend(s, n, true);
    free(s);
    return 0;
}
