/* SPDX-License-Identifier: Apache-2.0
 *
 * Cron schedules for the planners (defrag.schedule, cronScalingRules start/end): standard
 * 5-field expressions evaluated in an IANA time zone given separately (tz.h), never through a
 * "TZ=" / "CRON_TZ=" prefix (seed 002: the timezone field is required and the schedule must
 * not carry one).
 *
 *   field          values            names
 *   minute         0-59
 *   hour           0-23
 *   day of month   1-31
 *   month          1-12              JAN-DEC
 *   day of week    0-7 (0, 7 Sunday) SUN-SAT
 * Each field is a comma list of: "*", "?" (day fields only, same as "*"), N, N-M, with an
 * optional step "/S" after "*", a range, or N (N/S = N-max/S). Names are case-insensitive.
 * Descriptors: @yearly @annually @monthly @weekly @daily @midnight @hourly. @every and
 * @reboot are rejected. As in Vixie cron and robfig/cron (which upstream TensorFusion uses),
 * when both day fields are restricted (neither starts with "*" or "?") a day matches if
 * EITHER matches; otherwise both must. Expressions that can never fire (e.g. "0 0 30 2 *")
 * are rejected at parse time.
 *
 * Evaluation in a zone with daylight saving time. Schedules are matched against the local
 * wall clock, and each matching wall-clock minute fires at most once:
 *   - clocks go forward (the minute does not exist that day): it fires at the instant of the
 *     jump (e.g. "30 2 * * *" in America/New_York fires at 03:00 EDT on the spring day);
 *     several skipped minutes fire once, together;
 *   - clocks go back (the minute occurs twice): it fires at its first occurrence only
 *     ("30 1 * * *" fires once at 01:30 EDT, not again at 01:30 EST).
 * Fire times are whole seconds; they are whole minutes whenever the zone's offset is.
 *
 * Pure and thread-safe: a parsed tf_cron is a plain value.
 */
#ifndef TF_CORE_CRON_H
#define TF_CORE_CRON_H

#include "core/tz.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_CRON_EXPR_MAX 256
/* How far ahead tf_cron_next searches (any satisfiable expression fires within it). */
#define TF_CRON_HORIZON_YEARS 100

struct tf_cron {
    uint64_t minute; /* bit m: minute m (0..59) */
    uint32_t hour;   /* bit h (0..23) */
    uint32_t dom;    /* bit d (1..31) */
    uint16_t month;  /* bit m (1..12) */
    uint8_t dow;     /* bit d (0..6, 0 = Sunday) */
    bool dom_star, dow_star;
};

/* Parses EXPR. 0, or TF_EINVAL / TF_EPARSE / TF_ERANGE with ERR naming KEY (e.g.
 * "nodeManagerConfig.nodeCompaction.defrag.schedule"), the expression and the bad field:
 *   defrag.schedule: "0 3 * *": expected 5 fields (minute hour day-of-month month
 *   day-of-week), got 4 */
int tf_cron_parse(const char *expr, struct tf_cron *out, const char *key, char *err, size_t errlen);

/* True when the wall-clock minute (Y-M-D H:M, weekday WDAY 0..6) matches. */
bool tf_cron_matches(const struct tf_cron *c, int64_t y, int m, int d, int h, int mi, int wday);

/* The first fire time strictly after AFTER_MS in zone TZ: 0 and *NEXT_MS, TF_ERANGE when
 * AFTER_MS is outside years 1..9999, TF_ENOENT when nothing fires within the horizon. */
int tf_cron_next(const struct tf_cron *c, const struct tf_tz *tz, int64_t after_ms,
                 int64_t *next_ms);

/* The last fire time at or before AT_MS that is later than SINCE_MS (SINCE_MS < AT_MS):
 * 0 and *FIRE_MS, or TF_ENOENT when none fired in (SINCE_MS, AT_MS]. Lets a reconciler that
 * wakes up late see that a run was due (it runs once, not once per missed fire). */
int tf_cron_due(const struct tf_cron *c, const struct tf_tz *tz, int64_t since_ms, int64_t at_ms,
                int64_t *fire_ms);

#endif
