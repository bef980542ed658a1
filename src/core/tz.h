/* SPDX-License-Identifier: Apache-2.0
 *
 * IANA time zones without the C library: a reader of compiled TZif files (RFC 8536, versions
 * 1-4, as in Debian's tzdata under /usr/share/zoneinfo) and of POSIX TZ rule strings (their
 * footer, e.g. "EST5EDT,M3.2.0,M11.1.0"), and pure conversions between UTC instants and wall
 * clock times. Nothing here touches the process environment (no setenv("TZ"), no tzset(), no
 * localtime_r), so any number of zones can be used from any number of threads at once.
 *
 * Reading the file is the caller's business (tzload.h does it for /usr/share/zoneinfo); this
 * module parses the bytes. The parser validates everything it relies on (counts, ascending
 * transitions, type indexes, designation offsets, UT offsets within -25 h..+26 h, the footer
 * grammar) and rejects leap-second ("right/") zones, whose timestamps are not UTC.
 *
 * Semantics (RFC 8536 section 3): before the first transition the zone is in its first local
 * time type; after the last one, the footer rule applies when there is one, else the last
 * transition's type. A POSIX rule's start time is in standard time and its end time in
 * daylight time; times may be negative or up to 167 h (version 3); "all-year DST" rules work.
 *
 * Times here are whole seconds since the epoch (UTC instants, or "wall" seconds: the local
 * clock reading expressed as if it were UTC). Ownership: a tf_tz owns all its storage;
 * strings returned by the accessors live as long as the zone. A parsed zone is immutable:
 * every function taking a const zone is thread-safe.
 */
#ifndef TF_CORE_TZ_H
#define TF_CORE_TZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_TZ_NAME_MAX 255       /* longest zone name accepted */
#define TF_TZ_FILE_MAX (1 << 20) /* largest TZif file accepted (real ones are < 4 KiB) */

struct tf_tz;

/* One stretch of time with a constant UT offset: [start, end) in UTC seconds. start is
 * INT64_MIN / end INT64_MAX for open ends. ABBR ("EST", "+08") is borrowed from the zone. */
struct tf_tz_period {
    int64_t start, end;
    int32_t utoff; /* seconds east of UTC */
    bool isdst;
    const char *abbr;
};

/* How a wall-clock time maps to UTC. */
enum tf_tz_local {
    TF_TZ_LOCAL_UNIQUE = 0, /* exactly one instant reads this time */
    TF_TZ_LOCAL_REPEATED,   /* two (or more) do (clocks went back): the first is returned */
    TF_TZ_LOCAL_SKIPPED,    /* none does (clocks went forward): the transition is returned */
};

/* True when NAME is a syntactically valid zone name to look up: 1..255 characters of
 * [A-Za-z0-9._+-/], no leading '/', no empty, "." or ".." component. Otherwise false with the
 * reason in ERR (naming KEY). Guards the file lookup against path traversal. */
bool tf_tz_name_valid(const char *name, const char *key, char *err, size_t errlen);

/* Parses a TZif file BUF[0..LEN) for zone NAME (copied; used in messages and tf_tz_name).
 * 0 and *OUT (caller owns: tf_tz_destroy), or TF_EPARSE / TF_ENOTSUP (leap seconds) /
 * TF_ENOMEM with ERR set; *OUT is NULL on error. */
int tf_tz_parse_tzif(const uint8_t *buf, size_t len, const char *name, struct tf_tz **out,
                     char *err, size_t errlen);
/* A zone defined only by the POSIX TZ rule string RULE ("UTC0", "CST-8",
 * "EST5EDT,M3.2.0,M11.1.0", "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0"). A DST name without a
 * rule gets the US rule M3.2.0,M11.1.0 (as glibc does). Same return codes. */
int tf_tz_parse_posix(const char *rule, const char *name, struct tf_tz **out, char *err,
                      size_t errlen);
/* The built-in UTC zone named NAME (e.g. "UTC", "Etc/UTC"): 0 or TF_ENOMEM. */
int tf_tz_new_utc(const char *name, struct tf_tz **out);
/* Frees Z; accepts NULL. */
void tf_tz_destroy(struct tf_tz *z);

/* The zone's name as given at parse time. */
const char *tf_tz_name(const struct tf_tz *z);

/* The period containing UTC second T. */
void tf_tz_period_at(const struct tf_tz *z, int64_t t, struct tf_tz_period *out);
/* UT offset (seconds east) in effect at UTC second T. */
int32_t tf_tz_offset_at(const struct tf_tz *z, int64_t t);
/* Smallest UT offset in effect at any instant of [FROM, TO]. */
int32_t tf_tz_min_offset(const struct tf_tz *z, int64_t from, int64_t to);

/* The UTC instant at which the zone's clock reads WALL (wall seconds): the earliest such
 * instant when the reading occurs more than once, and the instant the clock jumped over it
 * when it never occurs. *KIND (may be NULL) says which case applied. WALL must lie within
 * years 1..9999. */
int64_t tf_tz_local_to_utc(const struct tf_tz *z, int64_t wall, enum tf_tz_local *kind);

#endif
