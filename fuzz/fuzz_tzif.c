/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: TZif zone files (tf_tz_parse_tzif). An accepted zone must answer every
 * lookup without crashing, with offsets in RFC 8536's range, and map wall times back to
 * instants that read them (or lie at a jump).
 */
#include "core/tz.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tf_tz *z = NULL;
    char err[256];
    if (tf_tz_parse_tzif(data, size, "fuzz", &z, err, sizeof(err))) {
        if (z)
            abort();
        return 0;
    }
    /* 1900..2100 in steps of ~61 days, plus a few extremes. */
    for (int64_t t = -2208988800; t < 4102444800; t += 61 * 86400 + 3607) {
        struct tf_tz_period p;
        tf_tz_period_at(z, t, &p);
        if (p.utoff < -89999 || p.utoff > 93599 || t < p.start || t >= p.end || !p.abbr)
            abort();
        enum tf_tz_local k;
        int64_t w = t + p.utoff;
        int64_t u = tf_tz_local_to_utc(z, w, &k);
        if (k != TF_TZ_LOCAL_SKIPPED && u + tf_tz_offset_at(z, u) != w)
            abort();
    }
    (void)tf_tz_min_offset(z, 0, 86400 * 400);
    tf_tz_destroy(z);
    return 0;
}
