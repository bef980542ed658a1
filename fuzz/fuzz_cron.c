/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: cron expressions (tf_cron_parse) and their evaluation. The first byte
 * picks one of a few zones (UTC, a DST rule, a southern rule, a half-hour rule) and a start
 * time; an accepted expression must yield strictly increasing fire times that match it in
 * local time (or lie at a DST jump), and tf_cron_due must agree with tf_cron_next.
 */
#include "core/cron.h"
#include "core/timeutil.h"
#include "core/tz.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const rules[] = {"UTC0", "EST5EDT,M3.2.0,M11.1.0",
                                    "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0",
                                    "CET-1CEST,M3.5.0,M10.5.0/3"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > TF_CRON_EXPR_MAX + 2)
        return 0;
    char s[TF_CRON_EXPR_MAX + 2];
    memcpy(s, data + 1, size - 1);
    s[size - 1] = 0;
    struct tf_cron c;
    char err[256];
    if (tf_cron_parse(s, &c, "schedule", err, sizeof(err)))
        return 0;
    struct tf_tz *z;
    if (tf_tz_parse_posix(rules[data[0] & 3], "fuzz", &z, err, sizeof(err)))
        abort();
    /* Start somewhere in 1970..2100 on a minute boundary. */
    int64_t t = (int64_t)(data[0] >> 2) * 2 * 366 * TF_MS_PER_DAY;
    int64_t prev = t;
    for (int i = 0; i < 8; i++) {
        int64_t nx;
        if (tf_cron_next(&c, z, t, &nx))
            break;
        if (nx <= t)
            abort();
        struct tf_civil lc;
        int32_t off = tf_tz_offset_at(z, nx / 1000);
        tf_civil_from_ms(nx + (int64_t)off * 1000, &lc);
        /* Either the local reading matches, or it is the instant right after a jump. */
        bool jump = tf_tz_offset_at(z, nx / 1000 - 1) != off;
        if (!jump && !tf_cron_matches(&c, lc.year, lc.month, lc.day, lc.hour, lc.minute, lc.wday))
            abort();
        int64_t due;
        if (tf_cron_due(&c, z, prev, nx, &due) || due != nx)
            abort();
        prev = nx;
        t = nx;
    }
    tf_tz_destroy(z);
    return 0;
}
