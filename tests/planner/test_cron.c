/* SPDX-License-Identifier: Apache-2.0
 *
 * Cron schedules (src/core/cron.h) in IANA zones read from Debian's tzdata: the seed's
 * "0 3 * * *" in UTC and Asia/Shanghai, field syntax, the TZ= prefix and timezone-required
 * errors, and daylight-saving transitions (spring forward, fall back, southern hemisphere,
 * half-hour DST) in both the TZif table and the POSIX-rule footer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "core/cron.h"
#include "core/timeutil.h"
#include "core/tz.h"
#include "core/tzload.h"

static struct tf_tz *zone(const char *name)
{
    struct tf_tz *z = NULL;
    char err[256];
    int rc = tf_tz_load(NULL, name, &z, NULL, err, sizeof(err));
    if (rc)
        fail_msg("load %s: %s", name, err);
    return z;
}

static int64_t ts(const char *s)
{
    int64_t ms;
    char err[256];
    if (tf_rfc3339_parse(s, &ms, "t", err, sizeof(err)))
        fail_msg("%s", err);
    return ms;
}

static struct tf_cron cron(const char *expr)
{
    struct tf_cron c;
    char err[256];
    if (tf_cron_parse(expr, &c, "schedule", err, sizeof(err)))
        fail_msg("parse %s: %s", expr, err);
    return c;
}

/* Asserts the N fire times after AFTER, as RFC 3339 UTC strings. */
static void expect_next(const char *expr, struct tf_tz *z, const char *after, int n, ...)
{
    struct tf_cron c = cron(expr);
    int64_t t = ts(after);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        int64_t nx;
        assert_int_equal(tf_cron_next(&c, z, t, &nx), 0);
        char got[40];
        tf_rfc3339_format(nx, got, sizeof(got));
        const char *want = va_arg(ap, const char *);
        if (strcmp(got, want))
            fail_msg("%s in %s after %s: fire %d is %s, want %s", expr, tf_tz_name(z), after, i + 1,
                     got, want);
        t = nx;
    }
    va_end(ap);
}

static void expect_parse_error(const char *expr, int code, const char *needle)
{
    struct tf_cron c;
    char err[256] = "";
    int rc = tf_cron_parse(expr, &c, "defrag.schedule", err, sizeof(err));
    if (rc != code)
        fail_msg("%s: rc %d (%s), want %d", expr, rc, err, code);
    if (!strstr(err, needle))
        fail_msg("%s: message \"%s\" lacks \"%s\"", expr, err, needle);
    if (!strstr(err, "defrag.schedule"))
        fail_msg("%s: message \"%s\" does not name the key", expr, err);
}

static void seed_default_schedule_runs_daily_at_3_utc(void **state)
{
    (void)state;
    struct tf_tz *z = zone("UTC");
    expect_next("0 3 * * *", z, "2024-05-01T02:59:59Z", 3, "2024-05-01T03:00:00Z",
                "2024-05-02T03:00:00Z", "2024-05-03T03:00:00Z");
    /* Exactly at a fire time: the next one is strictly later. */
    expect_next("0 3 * * *", z, "2024-05-01T03:00:00Z", 1, "2024-05-02T03:00:00Z");
    tf_tz_destroy(z);
}

static void shanghai_3am_is_19h_utc_the_day_before(void **state)
{
    (void)state;
    struct tf_tz *z = zone("Asia/Shanghai");
    expect_next("0 3 * * *", z, "2024-05-01T00:00:00Z", 2, "2024-05-01T19:00:00Z",
                "2024-05-02T19:00:00Z");
    tf_tz_destroy(z);
}

static void field_syntax_lists_ranges_steps_names(void **state)
{
    (void)state;
    struct tf_tz *z = zone("UTC");
    /* 2024-05-01 is a Wednesday. */
    expect_next("*/20 9-10 * * MON-FRI", z, "2024-05-01T09:30:00Z", 4, "2024-05-01T09:40:00Z",
                "2024-05-01T10:00:00Z", "2024-05-01T10:20:00Z", "2024-05-01T10:40:00Z");
    expect_next("15,45 0 1 jan,Jul *", z, "2024-05-01T00:00:00Z", 3, "2024-07-01T00:15:00Z",
                "2024-07-01T00:45:00Z", "2025-01-01T00:15:00Z");
    expect_next("0 0 * * 7", z, "2024-05-01T00:00:00Z", 1, "2024-05-05T00:00:00Z"); /* Sunday */
    expect_next("0 0 * * 5-7", z, "2024-05-04T00:00:00Z", 2, "2024-05-05T00:00:00Z",
                "2024-05-10T00:00:00Z");
    expect_next("5/20 0 * * *", z, "2024-05-01T00:00:00Z", 3, "2024-05-01T00:05:00Z",
                "2024-05-01T00:25:00Z", "2024-05-01T00:45:00Z");
    expect_next("@hourly", z, "2024-05-01T00:00:00Z", 1, "2024-05-01T01:00:00Z");
    expect_next("@weekly", z, "2024-05-01T00:00:00Z", 1, "2024-05-05T00:00:00Z");
    expect_next("@yearly", z, "2024-05-01T00:00:00Z", 1, "2025-01-01T00:00:00Z");
    tf_tz_destroy(z);
}

static void both_day_fields_restricted_match_either(void **state)
{
    (void)state;
    struct tf_tz *z = zone("UTC");
    /* 13th of the month OR Friday. 2024-09-06 is a Friday, 2024-09-13 a Friday the 13th. */
    expect_next("0 0 13 * 5", z, "2024-09-01T00:00:00Z", 3, "2024-09-06T00:00:00Z",
                "2024-09-13T00:00:00Z", "2024-09-20T00:00:00Z");
    /* A day field starting with '*' makes it AND: odd days that are Mondays. */
    expect_next("0 0 */2 * 1", z, "2024-09-01T00:00:00Z", 2, "2024-09-09T00:00:00Z",
                "2024-09-23T00:00:00Z");
    tf_tz_destroy(z);
}

static void february_29th_fires_in_leap_years_only(void **state)
{
    (void)state;
    struct tf_tz *z = zone("UTC");
    expect_next("0 12 29 2 *", z, "2024-03-01T00:00:00Z", 2, "2028-02-29T12:00:00Z",
                "2032-02-29T12:00:00Z");
    /* 2096 -> 2104 (2100 is not a leap year). */
    expect_next("0 12 29 2 *", z, "2096-03-01T00:00:00Z", 1, "2104-02-29T12:00:00Z");
    tf_tz_destroy(z);
}

static void tz_prefix_is_rejected_with_a_pointer_to_the_timezone_field(void **state)
{
    (void)state;
    expect_parse_error("TZ=Asia/Shanghai 0 3 * * *", TF_EINVAL, "timezone field");
    expect_parse_error("CRON_TZ=UTC 0 3 * * *", TF_EINVAL, "CRON_TZ=");
}

static void malformed_schedules_name_the_field(void **state)
{
    (void)state;
    expect_parse_error("0 3 * *", TF_EINVAL, "expected 5 fields");
    expect_parse_error("0 0 3 * * *", TF_EINVAL, "seconds fields are not supported");
    expect_parse_error("", TF_EINVAL, "empty cron expression");
    expect_parse_error("60 3 * * *", TF_ERANGE, "minute field \"60\": value out of range 0-59");
    expect_parse_error("0 24 * * *", TF_ERANGE, "hour field");
    expect_parse_error("0 3 0 * *", TF_ERANGE, "day-of-month field");
    expect_parse_error("0 3 * 13 *", TF_ERANGE, "month field");
    expect_parse_error("0 3 * * 8", TF_ERANGE, "day-of-week field");
    expect_parse_error("0 3 * * MOO", TF_EPARSE, "\"MOO\" is not a number or name");
    expect_parse_error("0 3 * JANUARY *", TF_EPARSE, "month field");
    expect_parse_error("*/0 3 * * *", TF_EPARSE, "step must be a positive number");
    expect_parse_error("5-1 3 * * *", TF_ERANGE, "range start after its end");
    expect_parse_error("1,,2 3 * * *", TF_EPARSE, "empty list item");
    expect_parse_error("1, 3 * * *", TF_EPARSE, "minute field \"1,\": empty list item");
    expect_parse_error("? 3 * * *", TF_EPARSE, "only allowed in the day fields");
    expect_parse_error("0 3 30 2 *", TF_ERANGE, "never occurs");
    expect_parse_error("0 3 31 4,6,9,11 *", TF_ERANGE, "never occurs");
    expect_parse_error("@every 1h", TF_EINVAL, "unsupported descriptor");
    expect_parse_error("@reboot", TF_EINVAL, "unsupported descriptor");
}

static void unknown_and_malicious_timezones_are_rejected(void **state)
{
    (void)state;
    struct tf_tz *z = NULL;
    char err[256];
    assert_int_equal(tf_tz_load(NULL, "Asia/Shangai", &z, "defrag.timezone", err, sizeof(err)),
                     TF_ENOENT);
    assert_non_null(strstr(err, "defrag.timezone: \"Asia/Shangai\": unknown time zone"));
    assert_null(z);
    assert_int_equal(tf_tz_load(NULL, "../../etc/passwd", &z, NULL, err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "\"..\" component"));
    assert_int_equal(tf_tz_load(NULL, "/etc/localtime", &z, NULL, err, sizeof(err)), TF_EINVAL);
    assert_int_equal(tf_tz_load(NULL, "", &z, NULL, err, sizeof(err)), TF_EINVAL);
    assert_int_equal(tf_tz_load(NULL, "Asia/Shang hai", &z, NULL, err, sizeof(err)), TF_EINVAL);
    /* A directory of the database is not a zone. */
    assert_int_equal(tf_tz_load(NULL, "America", &z, NULL, err, sizeof(err)), TF_ENOENT);
    /* Not a TZif file. */
    assert_int_equal(tf_tz_load(NULL, "zone.tab", &z, NULL, err, sizeof(err)), TF_EPARSE);
    assert_non_null(strstr(err, "not a TZif file"));
}

static void utc_works_without_tzdata(void **state)
{
    (void)state;
    struct tf_tz *z = NULL;
    char err[256];
    assert_int_equal(tf_tz_load("/nonexistent-zoneinfo", "UTC", &z, NULL, err, sizeof(err)), 0);
    expect_next("0 3 * * *", z, "2024-05-01T00:00:00Z", 1, "2024-05-01T03:00:00Z");
    tf_tz_destroy(z);
    assert_int_equal(
        tf_tz_load("/nonexistent-zoneinfo", "Asia/Shanghai", &z, NULL, err, sizeof(err)),
        TF_ENOENT);
    assert_non_null(strstr(err, "install the tzdata package"));
}

/* America/New_York, 2024: clocks go 02:00 EST -> 03:00 EDT on 10 March (07:00Z) and
 * 02:00 EDT -> 01:00 EST on 3 November (06:00Z). */
static void spring_forward_skipped_time_fires_at_the_jump(void **state)
{
    (void)state;
    struct tf_tz *z = zone("America/New_York");
    expect_next("30 2 * * *", z, "2024-03-09T00:00:00Z", 3, "2024-03-09T07:30:00Z",
                "2024-03-10T07:00:00Z", "2024-03-11T06:30:00Z");
    /* Every 15 minutes: 01:45 EST, then the skipped 02:xx all fire once at 03:00 EDT. */
    expect_next("*/15 * * * *", z, "2024-03-10T06:40:00Z", 3, "2024-03-10T06:45:00Z",
                "2024-03-10T07:00:00Z", "2024-03-10T07:15:00Z");
    /* The seed's 3 AM exists every day. */
    expect_next("0 3 * * *", z, "2024-03-09T12:00:00Z", 2, "2024-03-10T07:00:00Z",
                "2024-03-11T07:00:00Z");
    tf_tz_destroy(z);
}

static void fall_back_repeated_time_fires_once(void **state)
{
    (void)state;
    struct tf_tz *z = zone("America/New_York");
    expect_next("30 1 * * *", z, "2024-11-02T00:00:00Z", 3, "2024-11-02T05:30:00Z",
                "2024-11-03T05:30:00Z", "2024-11-04T06:30:00Z");
    /* Half-hourly across the change: 01:00 and 01:30 EDT, then 02:00 EST. */
    expect_next("*/30 * * * *", z, "2024-11-03T04:50:00Z", 4, "2024-11-03T05:00:00Z",
                "2024-11-03T05:30:00Z", "2024-11-03T07:00:00Z", "2024-11-03T07:30:00Z");
    /* Starting inside the repeated hour (01:10 EST = 06:10Z): 01:30 already fired at 05:30Z. */
    expect_next("30 1 * * *", z, "2024-11-03T06:10:00Z", 1, "2024-11-04T06:30:00Z");
    tf_tz_destroy(z);
}

static void southern_hemisphere_and_half_hour_dst(void **state)
{
    (void)state;
    /* Australia/Sydney 2024: AEDT (+11) ends 7 April 03:00 -> 02:00 AEST (+10) (16:00Z on
     * 6 April); AEST starts DST 6 October 02:00 -> 03:00 AEDT (16:00Z on 5 October). */
    struct tf_tz *z = zone("Australia/Sydney");
    expect_next("30 2 * * *", z, "2024-04-05T00:00:00Z", 2, "2024-04-05T15:30:00Z",
                "2024-04-06T15:30:00Z");
    expect_next("30 2 * * *", z, "2024-10-04T00:00:00Z", 2, "2024-10-04T16:30:00Z",
                "2024-10-05T16:00:00Z");
    tf_tz_destroy(z);
    /* Australia/Lord_Howe: +10:30, DST +11 (half an hour) from 6 October 2024 02:00 local. */
    z = zone("Australia/Lord_Howe");
    expect_next("15 2 6 10 *", z, "2024-10-01T00:00:00Z", 1, "2024-10-05T15:30:00Z");
    tf_tz_destroy(z);
}

static void far_future_uses_the_posix_footer_rule(void **state)
{
    (void)state;
    /* Beyond the table (tzdata's 2037), the footer EST5EDT,M3.2.0,M11.1.0 applies. 2100: second
     * Sunday of March is the 14th, first Sunday of November the 7th. */
    struct tf_tz *z = zone("America/New_York");
    expect_next("30 2 * * *", z, "2100-03-13T12:00:00Z", 2, "2100-03-14T07:00:00Z",
                "2100-03-15T06:30:00Z");
    expect_next("30 1 * * *", z, "2100-11-06T12:00:00Z", 2, "2100-11-07T05:30:00Z",
                "2100-11-08T06:30:00Z");
    tf_tz_destroy(z);
    /* The same from a rule string alone agrees with the table in 2024. */
    char err[256];
    assert_int_equal(tf_tz_parse_posix("EST5EDT,M3.2.0,M11.1.0", "rule", &z, err, sizeof(err)), 0);
    expect_next("30 2 * * *", z, "2024-03-09T00:00:00Z", 2, "2024-03-09T07:30:00Z",
                "2024-03-10T07:00:00Z");
    expect_next("30 1 * * *", z, "2024-11-02T12:00:00Z", 2, "2024-11-03T05:30:00Z",
                "2024-11-04T06:30:00Z");
    tf_tz_destroy(z);
}

static void posix_rules_cover_the_footer_grammar(void **state)
{
    (void)state;
    struct tf_tz *z;
    char err[256];
    struct tf_tz_period p;
    /* Quoted names, minutes, southern rule, Jn / n dates, explicit times. */
    assert_int_equal(
        tf_tz_parse_posix("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0", "lh", &z, err, sizeof(err)), 0);
    tf_tz_period_at(z, ts("2024-07-01T00:00:00Z") / 1000, &p);
    assert_int_equal(p.utoff, 37800);
    assert_string_equal(p.abbr, "+1030");
    tf_tz_period_at(z, ts("2024-12-01T00:00:00Z") / 1000, &p);
    assert_int_equal(p.utoff, 39600);
    assert_true(p.isdst);
    tf_tz_destroy(z);
    assert_int_equal(tf_tz_parse_posix("XXX3YYY,J60/1,300/-1:30", "j", &z, err, sizeof(err)), 0);
    /* J60 is 1 March every year; DST starts 01:00 local standard (04:00Z). */
    tf_tz_period_at(z, ts("2024-03-01T04:00:00Z") / 1000, &p);
    assert_true(p.isdst);
    assert_int_equal(p.start, ts("2024-03-01T04:00:00Z") / 1000);
    tf_tz_destroy(z);
    /* All-year DST (as zic writes for permanent-DST zones) never switches back. */
    assert_int_equal(tf_tz_parse_posix("EST5EDT4,0/0,J365/25", "dst", &z, err, sizeof(err)), 0);
    for (int m = 1; m <= 12; m++) {
        char t[32];
        snprintf(t, sizeof(t), "2030-%02d-15T00:00:00Z", m);
        tf_tz_period_at(z, ts(t) / 1000, &p);
        assert_int_equal(p.utoff, -4 * 3600);
    }
    expect_next("0 0 1 1 *", z, "2030-06-01T00:00:00Z", 1, "2031-01-01T04:00:00Z");
    tf_tz_destroy(z);
    /* DST name without a rule: the US rule. */
    assert_int_equal(tf_tz_parse_posix("CST6CDT", "c", &z, err, sizeof(err)), 0);
    assert_int_equal(tf_tz_offset_at(z, ts("2024-07-01T00:00:00Z") / 1000), -5 * 3600);
    tf_tz_destroy(z);
    const char *bad[] = {"",
                         "E",
                         "EST",
                         "EST5EDT,M13.1.0,M11.1.0",
                         "EST5EDT,M3.2.0",
                         "EST25",
                         "<+0>0",
                         "EST5EDT,J0,J365",
                         "EST5EDT,M3.2.0/168,M11.1.0",
                         "EST5 x",
                         NULL};
    for (int i = 0; bad[i]; i++) {
        z = NULL;
        if (tf_tz_parse_posix(bad[i], "bad", &z, err, sizeof(err)) == 0)
            fail_msg("rule \"%s\" accepted", bad[i]);
        assert_null(z);
    }
}

static void cron_due_reports_the_last_missed_fire_once(void **state)
{
    (void)state;
    struct tf_tz *z = zone("Asia/Shanghai");
    struct tf_cron c = cron("0 3 * * *");
    int64_t fire;
    /* Last check yesterday 12:00 local, now 05:00 local: 03:00 local today was due. */
    assert_int_equal(
        tf_cron_due(&c, z, ts("2024-05-01T04:00:00Z"), ts("2024-05-01T21:00:00Z"), &fire), 0);
    char s[40];
    tf_rfc3339_format(fire, s, sizeof(s));
    assert_string_equal(s, "2024-05-01T19:00:00Z");
    /* Down for three days: only the latest is reported. */
    assert_int_equal(
        tf_cron_due(&c, z, ts("2024-04-28T00:00:00Z"), ts("2024-05-01T21:00:00Z"), &fire), 0);
    assert_int_equal(fire, ts("2024-05-01T19:00:00Z"));
    /* Nothing in between. */
    assert_int_equal(
        tf_cron_due(&c, z, ts("2024-05-01T19:00:00Z"), ts("2024-05-02T18:59:59Z"), &fire),
        TF_ENOENT);
    /* A yearly schedule checked after 11 months. */
    c = cron("0 0 1 1 *");
    assert_int_equal(
        tf_cron_due(&c, z, ts("2023-12-01T00:00:00Z"), ts("2024-11-30T00:00:00Z"), &fire), 0);
    assert_int_equal(fire, ts("2023-12-31T16:00:00Z"));
    tf_tz_destroy(z);
}

static void out_of_range_instants_are_errors_not_wraparounds(void **state)
{
    (void)state;
    struct tf_tz *z = zone("UTC");
    struct tf_cron c = cron("0 3 * * *");
    int64_t nx;
    assert_int_equal(tf_cron_next(&c, z, INT64_MAX, &nx), TF_ERANGE);
    assert_int_equal(tf_cron_next(&c, z, INT64_MIN, &nx), TF_ERANGE);
    assert_int_equal(tf_cron_next(&c, z, ts("9999-12-31T12:00:00Z"), &nx), TF_ENOENT);
    tf_tz_destroy(z);
}

static void every_zone_in_the_database_maps_wall_times_consistently(void **state)
{
    (void)state;
    /* A sample of zones with unusual histories: for each hour over two years the UTC instant
     * of a wall time reads that wall time (or lies at a jump), and offsets stay in range. */
    const char *names[] = {"Pacific/Apia",    "Pacific/Kiritimati", "Antarctica/Troll",
                           "Europe/Dublin",   "Africa/Casablanca",  "America/Santiago",
                           "Asia/Kathmandu",  "America/St_Johns",   "Europe/Moscow",
                           "America/Godthab", "Asia/Tehran",        NULL};
    for (int i = 0; names[i]; i++) {
        struct tf_tz *z = zone(names[i]);
        int64_t w0 = ts("2010-01-01T00:00:00Z") / 1000;
        for (int64_t w = w0; w < w0 + 2 * 366 * 86400; w += 1800) {
            enum tf_tz_local kind;
            int64_t u = tf_tz_local_to_utc(z, w, &kind);
            int32_t off = tf_tz_offset_at(z, u);
            assert_true(off > -26 * 3600 && off < 27 * 3600);
            if (kind != TF_TZ_LOCAL_SKIPPED) {
                if (u + off != w)
                    fail_msg("%s: wall %lld -> %lld reads %lld", names[i], (long long)w,
                             (long long)u, (long long)(u + off));
            } else {
                /* At a jump the clock is now past W and was before it just before. */
                assert_true(u + off > w);
                assert_true(u - 1 + tf_tz_offset_at(z, u - 1) < w);
            }
        }
        tf_tz_destroy(z);
    }
}

static void truncated_or_corrupted_zone_files_are_rejected_cleanly(void **state)
{
    (void)state;
    FILE *f = fopen(TF_ZONEINFO_DIR "/America/New_York", "rb");
    assert_non_null(f);
    static uint8_t buf[16384];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    assert_true(n > 100 && n < sizeof(buf));
    char err[256];
    struct tf_tz *z;
    /* Every strict prefix fails (the footer's newline ends the file) without reading past it. */
    for (size_t len = 0; len < n; len++) {
        z = NULL;
        int rc = tf_tz_parse_tzif(buf, len, "ny", &z, err, sizeof(err));
        if (rc == 0)
            fail_msg("prefix of %zu/%zu bytes accepted", len, n);
        assert_null(z);
    }
    assert_int_equal(tf_tz_parse_tzif(buf, n, "ny", &z, err, sizeof(err)), 0);
    tf_tz_destroy(z);
    /* Flipping any byte either fails or still gives a usable zone. */
    for (size_t i = 0; i < n; i++) {
        uint8_t keep = buf[i];
        buf[i] ^= 0x5a;
        z = NULL;
        if (tf_tz_parse_tzif(buf, n, "ny", &z, err, sizeof(err)) == 0) {
            int32_t off = tf_tz_offset_at(z, 1714550400);
            assert_true(off >= -89999 && off <= 93599);
            (void)tf_tz_local_to_utc(z, 1714550400, NULL);
            tf_tz_destroy(z);
        } else {
            assert_null(z);
        }
        buf[i] = keep;
    }
    /* Leap-second zones are refused with a pointer to the right name. */
    f = fopen(TF_ZONEINFO_DIR "/right/UTC", "rb");
    if (f) {
        n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        assert_int_equal(tf_tz_parse_tzif(buf, n, "right/UTC", &z, err, sizeof(err)), TF_ENOTSUP);
        assert_non_null(strstr(err, "leap-second"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_default_schedule_runs_daily_at_3_utc),
        cmocka_unit_test(shanghai_3am_is_19h_utc_the_day_before),
        cmocka_unit_test(field_syntax_lists_ranges_steps_names),
        cmocka_unit_test(both_day_fields_restricted_match_either),
        cmocka_unit_test(february_29th_fires_in_leap_years_only),
        cmocka_unit_test(tz_prefix_is_rejected_with_a_pointer_to_the_timezone_field),
        cmocka_unit_test(malformed_schedules_name_the_field),
        cmocka_unit_test(unknown_and_malicious_timezones_are_rejected),
        cmocka_unit_test(utc_works_without_tzdata),
        cmocka_unit_test(spring_forward_skipped_time_fires_at_the_jump),
        cmocka_unit_test(fall_back_repeated_time_fires_once),
        cmocka_unit_test(southern_hemisphere_and_half_hour_dst),
        cmocka_unit_test(far_future_uses_the_posix_footer_rule),
        cmocka_unit_test(posix_rules_cover_the_footer_grammar),
        cmocka_unit_test(cron_due_reports_the_last_missed_fire_once),
        cmocka_unit_test(out_of_range_instants_are_errors_not_wraparounds),
        cmocka_unit_test(every_zone_in_the_database_maps_wall_times_consistently),
        cmocka_unit_test(truncated_or_corrupted_zone_files_are_rejected_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
