/* SPDX-License-Identifier: Apache-2.0
 *
 * Quantity parsing as users write it in annotations and WorkloadProfiles.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "core/quantity.h"

#define KEY "tensor-fusion.ai/vram-limit"
#define GiB (INT64_C(1) << 30)
#define MiB (INT64_C(1) << 20)

static int64_t bytes_ok(const char *s)
{
    int64_t v = -1;
    char err[256] = "";
    int rc = tf_quantity_bytes(s, &v, KEY, err, sizeof(err));
    if (rc != 0)
        fail_msg("%s: %s", s, err);
    return v;
}

static void user_writes_vram_in_binary_units(void **state)
{
    assert_int_equal(bytes_ok("4Gi"), 4 * GiB);
    assert_int_equal(bytes_ok("512Mi"), 512 * MiB);
    assert_int_equal(bytes_ok("1.5Gi"), 3 * GiB / 2);
    assert_int_equal(bytes_ok("1Ki"), 1024);
    assert_int_equal(bytes_ok("1Ti"), 1024 * GiB);
    assert_int_equal(bytes_ok("0.25Mi"), MiB / 4);
    assert_int_equal(bytes_ok("7Ei"), 7 * (INT64_C(1) << 60));
}

static void user_writes_vram_in_decimal_units_and_exponents(void **state)
{
    assert_int_equal(bytes_ok("1G"), 1000000000);
    assert_int_equal(bytes_ok("100"), 100);
    assert_int_equal(bytes_ok("1e9"), 1000000000);
    assert_int_equal(bytes_ok("1E9"), 1000000000);
    assert_int_equal(bytes_ok("2.5e3"), 2500);
    assert_int_equal(bytes_ok("12e1"), 120);
    assert_int_equal(bytes_ok("1200e-2"), 12);
    /* 19-digit byte counts (found by the fuzzer) and long zero runs parse exactly. */
    assert_int_equal(bytes_ok("2511115151000000000"), INT64_C(2511115151000000000));
    assert_int_equal(bytes_ok("2511115151e9"), INT64_C(2511115151000000000));
    assert_int_equal(bytes_ok("0.000000000000000000000000001e30"), 1000);
    assert_int_equal(bytes_ok("9223372036854775807"), INT64_MAX);
}

static void fractional_bytes_are_refused_with_a_hint(void **state)
{
    int64_t v;
    char err[256];
    assert_int_equal(tf_quantity_bytes("500m", &v, KEY, err, sizeof(err)), TF_ERANGE);
    assert_non_null(strstr(err, KEY));
    assert_non_null(strstr(err, "\"500m\""));
    assert_non_null(strstr(err, "whole number of bytes"));
    assert_int_equal(tf_quantity_bytes("0.5", &v, KEY, err, sizeof(err)), TF_ERANGE);
    /* But milli that lands on a whole byte is fine. */
    assert_int_equal(bytes_ok("2000m"), 2);
}

static void garbage_negative_empty_and_overflow_are_errors_naming_key_and_value(void **state)
{
    static const struct {
        const char *s;
        int rc;
    } bad[] = {
        {"", TF_EINVAL},
        {"-1Gi", TF_ERANGE},
        {"4Gb", TF_EPARSE},
        {"4 Gi", TF_EPARSE},
        {"Gi", TF_EPARSE},
        {".", TF_EPARSE},
        {"1..2", TF_EPARSE},
        {"1e", TF_EPARSE},
        {"1e9x", TF_EPARSE},
        {"8Ei", TF_ERANGE},
        {"1e19", TF_ERANGE},
        {"0x10", TF_EPARSE},
        {"99999999999999999999", TF_ERANGE},
        {"4gi", TF_EPARSE},
        {" 4Gi", TF_EPARSE},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t v = 42;
        char err[256] = "";
        int rc = tf_quantity_bytes(bad[i].s, &v, KEY, err, sizeof(err));
        if (rc != bad[i].rc)
            fail_msg("\"%s\": got %s, want %s (%s)", bad[i].s, tf_err_name(rc),
                     tf_err_name(bad[i].rc), err);
        assert_non_null(strstr(err, KEY));
        assert_int_equal(v, 42); /* output untouched on error */
    }
    int64_t v;
    assert_int_equal(tf_quantity_bytes(NULL, &v, KEY, NULL, 0), TF_EINVAL);
}

static void tflops_are_decimals_in_thousandths(void **state)
{
    int64_t v;
    char err[256];
    assert_int_equal(tf_quantity_milli("10", &v, "k", err, sizeof(err)), 0);
    assert_int_equal(v, 10000);
    assert_int_equal(tf_quantity_milli("0.5", &v, "k", err, sizeof(err)), 0);
    assert_int_equal(v, 500);
    assert_int_equal(tf_quantity_milli("500m", &v, "k", err, sizeof(err)), 0);
    assert_int_equal(v, 500);
    assert_int_equal(tf_quantity_milli("+12.345", &v, "k", err, sizeof(err)), 0);
    assert_int_equal(v, 12345);
    assert_int_equal(tf_quantity_milli("1k", &v, "k", err, sizeof(err)), 0);
    assert_int_equal(v, 1000000);
    assert_int_equal(
        tf_quantity_milli("0.0001", &v, "tensor-fusion.ai/tflops-limit", err, sizeof(err)),
        TF_ERANGE);
    assert_non_null(strstr(err, "tensor-fusion.ai/tflops-limit"));
    assert_int_equal(tf_quantity_milli("ten", &v, "k", err, sizeof(err)), TF_EPARSE);
}

static void percent_is_0_to_100_in_basis_points(void **state)
{
    int32_t bp;
    char err[256];
    assert_int_equal(tf_percent_parse("100", &bp, "k", err, sizeof(err)), 0);
    assert_int_equal(bp, 10000);
    assert_int_equal(tf_percent_parse("0", &bp, "k", err, sizeof(err)), 0);
    assert_int_equal(bp, 0);
    assert_int_equal(tf_percent_parse("12.5", &bp, "k", err, sizeof(err)), 0);
    assert_int_equal(bp, 1250);
    assert_int_equal(
        tf_percent_parse("101", &bp, "tensor-fusion.ai/compute-percent-limit", err, sizeof(err)),
        TF_ERANGE);
    assert_non_null(strstr(err, "between 0 and 100"));
    assert_non_null(strstr(err, "compute-percent-limit"));
    assert_int_equal(tf_percent_parse("-5", &bp, "k", err, sizeof(err)), TF_ERANGE);
    assert_int_equal(tf_percent_parse("50Ki", &bp, "k", err, sizeof(err)), TF_EPARSE);
    assert_int_equal(tf_percent_parse("33.333", &bp, "k", err, sizeof(err)), TF_ERANGE);
    assert_int_equal(tf_percent_parse("50%", &bp, "k", err, sizeof(err)), TF_EPARSE);
}

static void formatting_round_trips(void **state)
{
    char buf[64];
    tf_quantity_format_bytes(4 * GiB, buf, sizeof(buf));
    assert_string_equal(buf, "4Gi");
    tf_quantity_format_bytes(1536 * MiB, buf, sizeof(buf));
    assert_string_equal(buf, "1536Mi");
    tf_quantity_format_bytes(1000, buf, sizeof(buf));
    assert_string_equal(buf, "1000");
    tf_quantity_format_bytes(0, buf, sizeof(buf));
    assert_string_equal(buf, "0");
    tf_quantity_format_milli(10000, buf, sizeof(buf));
    assert_string_equal(buf, "10");
    tf_quantity_format_milli(500, buf, sizeof(buf));
    assert_string_equal(buf, "0.5");
    tf_quantity_format_milli(12340, buf, sizeof(buf));
    assert_string_equal(buf, "12.34");
    const char *samples[] = {"4Gi", "1.5Gi", "512Mi", "123", "7Ei"};
    for (size_t i = 0; i < 5; i++) {
        int64_t v = bytes_ok(samples[i]);
        tf_quantity_format_bytes(v, buf, sizeof(buf));
        assert_int_equal(bytes_ok(buf), v);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(user_writes_vram_in_binary_units),
        cmocka_unit_test(user_writes_vram_in_decimal_units_and_exponents),
        cmocka_unit_test(fractional_bytes_are_refused_with_a_hint),
        cmocka_unit_test(garbage_negative_empty_and_overflow_are_errors_naming_key_and_value),
        cmocka_unit_test(tflops_are_decimals_in_thousandths),
        cmocka_unit_test(percent_is_0_to_100_in_basis_points),
        cmocka_unit_test(formatting_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
