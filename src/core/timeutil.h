/* SPDX-License-Identifier: Apache-2.0
 *
 * Time arithmetic for the planners, without the C library's time-zone machinery: proleptic
 * Gregorian calendar conversions, RFC 3339 timestamps (metav1.Time, annotation values) and
 * Go-style durations (metav1.Duration: "30m", "2h", "1h30m", "1.5h"). Instants are int64
 * milliseconds since the Unix epoch (UTC), the unit of greptime_timestamp.
 *
 * Durations: a sequence of <decimal number><unit> terms, units ns, us (µs, μs), ms, s, m, h as
 * in Go's time.ParseDuration, plus d (24 h), which Go lacks but users write ("1d"). A lone "0"
 * is zero. Negative durations and values finer than 1 ms are rejected (the planners work in
 * milliseconds), as is anything above TF_DURATION_MAX_MS.
 *
 * All functions are pure and thread-safe. Parsers write a message naming KEY and the value.
 */
#ifndef TF_CORE_TIMEUTIL_H
#define TF_CORE_TIMEUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_MS_PER_S INT64_C(1000)
#define TF_MS_PER_MIN INT64_C(60000)
#define TF_MS_PER_HOUR INT64_C(3600000)
#define TF_MS_PER_DAY INT64_C(86400000)
/* Largest accepted duration: 100 years of 365 days. */
#define TF_DURATION_MAX_MS (INT64_C(100) * 365 * TF_MS_PER_DAY)
/* Instants the planners accept: 0001-01-01T00:00:00Z .. 9999-12-31T23:59:59.999Z. */
#define TF_TIME_MIN_MS INT64_C(-62135596800000)
#define TF_TIME_MAX_MS INT64_C(253402300799999)

/* A broken-down UTC (or wall-clock) time. */
struct tf_civil {
    int64_t year;
    int month;  /* 1..12 */
    int day;    /* 1..31 */
    int hour;   /* 0..23 */
    int minute; /* 0..59 */
    int second; /* 0..59 */
    int ms;     /* 0..999 */
    int wday;   /* 0 = Sunday .. 6 */
};

bool tf_is_leap_year(int64_t y);
/* Days in month M (1..12) of year Y. */
int tf_days_in_month(int64_t y, int m);
/* Days since 1970-01-01 of Y-M-D (M 1..12, D 1..31; not range-checked beyond that). */
int64_t tf_days_from_civil(int64_t y, int m, int d);
/* The date of day number Z (days since 1970-01-01). */
void tf_civil_from_days(int64_t z, int64_t *y, int *m, int *d);
/* 0 = Sunday .. 6 = Saturday for day number Z. */
int tf_weekday_from_days(int64_t z);

/* Breaks MS (any int64) down; floor semantics for times before the epoch. */
void tf_civil_from_ms(int64_t ms, struct tf_civil *out);
/* The instant of C (wday ignored; fields are not range-checked). */
int64_t tf_civil_to_ms(const struct tf_civil *c);

/* Parses an RFC 3339 timestamp ("2024-03-10T07:00:00Z", "2024-03-10T15:00:00.5+08:00";
 * 't'/'z' accepted; a space instead of 'T' is not). Fractions beyond milliseconds are
 * truncated. 0 and *MS, or TF_EINVAL / TF_EPARSE / TF_ERANGE. */
int tf_rfc3339_parse(const char *s, int64_t *ms, const char *key, char *err, size_t errlen);
/* Formats MS as UTC RFC 3339 ("2024-03-10T07:00:00Z", ".123" only when MS has a fraction).
 * Returns the snprintf result. */
int tf_rfc3339_format(int64_t ms, char *buf, size_t len);
/* Formats MS in a fixed offset of OFFSET_S seconds east ("2024-03-10T03:00:00-04:00"). */
int tf_rfc3339_format_offset(int64_t ms, int32_t offset_s, char *buf, size_t len);

/* Parses a duration (see above) into *MS. 0, or TF_EINVAL (empty/NULL), TF_EPARSE (syntax,
 * unknown unit), TF_ERANGE (negative, too large, finer than 1 ms). */
int tf_duration_parse(const char *s, int64_t *ms, const char *key, char *err, size_t errlen);
/* Formats MS (>= 0) compactly: "2h", "1h30m", "45s", "1.5s", "0s". Returns the snprintf
 * result; the output parses back to MS. */
int tf_duration_format(int64_t ms, char *buf, size_t len);

#endif
