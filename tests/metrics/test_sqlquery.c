/* SPDX-License-Identifier: Apache-2.0
 *
 * GreptimeDB SQL -> SQLite: intervals become milliseconds, literals/identifiers/comments are
 * left alone, unsupported casts are refused with a message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "metrics/sqlquery.h"

static void expect_translation(const char *in, const char *want)
{
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 1 << 16);
    char err[256] = "";
    if (tf_sql_translate(in, &b, err, sizeof(err)))
        fail_msg("translate \"%s\": %s", in, err);
    assert_string_equal(tf_dynbuf_str(&b), want);
    tf_dynbuf_free(&b);
}

static void seed_interval_syntax_becomes_milliseconds(void **state)
{
    expect_translation("WHERE greptime_timestamp >= now() - '1d'::INTERVAL",
                       "WHERE greptime_timestamp >= now() - 86400000");
    expect_translation("x > now() - '2h30m' :: interval", "x > now() - 9000000");
    expect_translation("x > now() - INTERVAL '1 day'", "x > now() - 86400000");
    expect_translation("date_bin('1 minute'::INTERVAL, greptime_timestamp)",
                       "date_bin(60000, greptime_timestamp)");
}

static void literals_identifiers_and_comments_pass_through(void **state)
{
    expect_translation("SELECT 'it''s ::INTERVAL', \"a::b\", `c` -- '1d'::INTERVAL\nFROM t",
                       "SELECT 'it''s ::INTERVAL', \"a::b\", `c` -- '1d'::INTERVAL\nFROM t");
    expect_translation("/* INTERVAL '1d' */ SELECT interval_col FROM t",
                       "/* INTERVAL '1d' */ SELECT interval_col FROM t");
}

static void durations_accept_the_usual_units(void **state)
{
    static const struct {
        const char *s;
        int64_t ms;
    } ok[] = {{"1d", 86400000},           {"1 day", 86400000},   {"7 days", 604800000},
              {"1w", 604800000},          {"90 seconds", 90000}, {"250ms", 250},
              {"1h 15m", 4500000},        {"2 HOURS", 7200000},  {"5 min", 300000},
              {"1 week 1 day", 691200000}};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t ms;
        char err[128];
        assert_int_equal(tf_sql_duration_ms(ok[i].s, strlen(ok[i].s), &ms, err, sizeof(err)), 0);
        assert_int_equal(ms, ok[i].ms);
    }
    static const char *const bad[] = {"",        "d",    "1",   "1 month",
                                      "2 years", "1.5h", "-1d", "99999999999999999999d"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t ms;
        char err[128] = "";
        assert_true(tf_sql_duration_ms(bad[i], strlen(bad[i]), &ms, err, sizeof(err)) < 0);
        assert_true(strlen(err) > 0);
    }
}

static void other_casts_and_broken_sql_are_refused(void **state)
{
    static const char *const bad[] = {"SELECT x::DOUBLE FROM t",
                                      "SELECT '1'::TIMESTAMP",
                                      "SELECT 'open",
                                      "SELECT \"open",
                                      "SELECT /* open",
                                      "SELECT now() - '1 fortnight'::INTERVAL"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct tf_dynbuf b;
        tf_dynbuf_init(&b, 1 << 16);
        char err[256] = "";
        assert_int_equal(tf_sql_translate(bad[i], &b, err, sizeof(err)), TF_EPARSE);
        assert_non_null(strstr(err, "position"));
        tf_dynbuf_free(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_interval_syntax_becomes_milliseconds),
        cmocka_unit_test(literals_identifiers_and_comments_pass_through),
        cmocka_unit_test(durations_accept_the_usual_units),
        cmocka_unit_test(other_casts_and_broken_sql_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
