/* SPDX-License-Identifier: Apache-2.0
 *
 * Line protocol: escaping that InfluxDB/GreptimeDB read back exactly, strict parsing with
 * messages, and the encode/parse round trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "metrics/lineproto.h"

static char *encode(const struct tf_lp_point *p, struct tf_dynbuf *b)
{
    char err[256] = "";
    tf_dynbuf_reset(b);
    int rc = tf_lp_encode(p, b, err, sizeof(err));
    if (rc)
        fail_msg("encode failed: %s", err);
    return b->data;
}

static void gpu_usage_line_matches_what_greptime_expects(void **state)
{
    struct tf_lp_point p;
    tf_lp_point_init(&p, "tf_gpu_usage", 1764698189123);
    tf_lp_tag(&p, "node", "node-1");
    tf_lp_tag(&p, "pool", "");
    tf_lp_tag(&p, "uuid", "GPU-0000");
    tf_lp_float(&p, "compute_percentage", 37.5);
    tf_lp_float(&p, "compute_tflops", 0.1);
    tf_lp_int(&p, "memory_bytes", 1073741824);
    tf_lp_bool(&p, "ready", true);
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 1 << 20);
    assert_string_equal(encode(&p, &b),
                        "tf_gpu_usage,node=node-1,uuid=GPU-0000 compute_percentage=37.5,"
                        "compute_tflops=0.1,memory_bytes=1073741824i,ready=true 1764698189123\n");
    tf_dynbuf_free(&b);
}

static void special_characters_are_escaped_per_element(void **state)
{
    struct tf_lp_point p;
    tf_lp_point_init(&p, "my meas,x=1", 5);
    tf_lp_tag(&p, "tag key", "a,b=c d");
    tf_lp_string(&p, "msg", "say \"hi\" \\ bye, x=1");
    tf_lp_float(&p, "f k=", -2.5e-7);
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 1 << 20);
    assert_string_equal(encode(&p, &b),
                        "my\\ meas\\,x=1,tag\\ key=a\\,b\\=c\\ d msg=\"say \\\"hi\\\" \\\\ bye, "
                        "x=1\",f\\ k\\==-2.5e-07 5\n");
    struct tf_lp_point q;
    char scratch[512], err[256];
    assert_int_equal(tf_lp_parse(b.data, b.len, 0, &q, scratch, sizeof(scratch), err, sizeof(err)),
                     0);
    assert_true(tf_lp_point_equal(&p, &q));
    assert_string_equal(q.measurement, "my meas,x=1");
    assert_string_equal(tf_lp_tag_get(&q, "tag key"), "a,b=c d");
    assert_string_equal(tf_lp_field_get(&q, "msg")->v.s, "say \"hi\" \\ bye, x=1");
    tf_dynbuf_free(&b);
}

static void invalid_points_are_rejected_with_the_element_named(void **state)
{
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 1 << 20);
    char err[256];
    struct tf_lp_point p;

    tf_lp_point_init(&p, "m", 1);
    assert_int_equal(tf_lp_encode(&p, &b, err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "at least one field"));

    tf_lp_float(&p, "f", 0.0 / 0.0);
    assert_int_equal(tf_lp_encode(&p, &b, err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "NaN"));

    tf_lp_point_init(&p, "m", 1);
    tf_lp_tag(&p, "node", "bad\nname");
    tf_lp_int(&p, "x", 1);
    assert_int_equal(tf_lp_encode(&p, &b, err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "tag value"));

    tf_lp_point_init(&p, "m", 1);
    tf_lp_tag(&p, "node", "C:\\gpu");
    tf_lp_int(&p, "x", 1);
    assert_int_equal(tf_lp_encode(&p, &b, err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "backslash"));

    tf_lp_point_init(&p, "#comment", 1);
    tf_lp_int(&p, "x", 1);
    assert_int_equal(tf_lp_encode(&p, &b, err, sizeof(err)), TF_EINVAL);
    assert_int_equal(b.len, 0); /* nothing appended on error */
    tf_dynbuf_free(&b);
}

static void a_full_buffer_appends_nothing(void **state)
{
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 16);
    struct tf_lp_point p;
    tf_lp_point_init(&p, "tf_worker_usage", 1);
    tf_lp_float(&p, "compute_tflops", 1);
    char err[64];
    assert_int_equal(tf_lp_encode(&p, &b, err, sizeof(err)), TF_ERANGE);
    assert_int_equal(b.len, 0);
    tf_dynbuf_free(&b);
}

static void parser_reads_every_value_type(void **state)
{
    const char *line = "cpu,host=a f=1.5,i=-42i,b=T,b2=false,s=\"x y\",e=1e3 1700000000000\n";
    struct tf_lp_point p;
    char scratch[256], err[128];
    assert_int_equal(
        tf_lp_parse(line, strlen(line), 0, &p, scratch, sizeof(scratch), err, sizeof(err)), 0);
    assert_int_equal(p.nfields, 6);
    assert_true(p.fields[0].type == TF_LP_FLOAT && p.fields[0].v.f == 1.5);
    assert_true(p.fields[1].type == TF_LP_INT && p.fields[1].v.i == -42);
    assert_true(p.fields[2].type == TF_LP_BOOL && p.fields[2].v.b);
    assert_true(p.fields[3].type == TF_LP_BOOL && !p.fields[3].v.b);
    assert_string_equal(p.fields[4].v.s, "x y");
    assert_true(p.fields[5].v.f == 1000.0);
    assert_int_equal(p.ts_ms, 1700000000000);
    /* No timestamp: the default. */
    assert_int_equal(tf_lp_parse("m v=1i", 6, 77, &p, scratch, sizeof(scratch), err, sizeof(err)),
                     0);
    assert_int_equal(p.ts_ms, 77);
}

static void malformed_lines_report_the_column(void **state)
{
    static const char *const bad[] = {
        "",
        "m",
        "m ",
        "m,t v=1",
        "m v=",
        "m v=1 x",
        "m v=\"abc",
        "m v=1i2",
        "m v=nan",
        "m v=0x10",
        "m,t=1 v=1 ",
        "m v=1,",
        "m v=1 12-3",
        "m\\x v=1",
        "m v=\"a\\nb\"",
        "m v=--1i",
        "m v=1 9999999999999999999",
        "m =1",
        "# comment",
    };
    struct tf_lp_point p;
    char scratch[256], err[128];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        int rc =
            tf_lp_parse(bad[i], strlen(bad[i]), 0, &p, scratch, sizeof(scratch), err, sizeof(err));
        if (rc == 0)
            fail_msg("accepted bad line \"%s\"", bad[i]);
        assert_true(rc == TF_EPARSE || rc == TF_ERANGE);
        assert_true(strlen(err) > 0);
    }
    /* Embedded NUL bytes (found by fuzz_lineproto): never accepted, escaped or not. */
    static const struct {
        const char *s;
        size_t n;
    } nul[] = {{"\\\0P-1 y=2", 9}, {"m\0 v=1", 6}, {"m v=1\0", 6}, {"m,t=\0 v=1", 9}};
    for (size_t i = 0; i < sizeof(nul) / sizeof(nul[0]); i++)
        assert_int_equal(
            tf_lp_parse(nul[i].s, nul[i].n, 0, &p, scratch, sizeof(scratch), err, sizeof(err)),
            TF_EPARSE);
    assert_int_equal(tf_lp_parse("m v=1", 5, 0, &p, scratch, sizeof(scratch), err, sizeof(err)), 0);
    err[0] = '\0';
    tf_lp_parse("m v=1 x", 7, 0, &p, scratch, sizeof(scratch), err, sizeof(err));
    assert_non_null(strstr(err, "column 7"));
}

static void floats_round_trip_bit_exactly(void **state)
{
    static const double vals[] = {0.1,  1.0 / 3.0, 1e300, -0.0, 5e-324, 123456789.125,
                                  1e21, 2.0,       -7.25, 0.3,  4.35,   1.7976931348623157e308};
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 1 << 20);
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        struct tf_lp_point p, q;
        tf_lp_point_init(&p, "m", (int64_t)i);
        tf_lp_float(&p, "v", vals[i]);
        encode(&p, &b);
        char scratch[128], err[128];
        assert_int_equal(
            tf_lp_parse(b.data, b.len, 0, &q, scratch, sizeof(scratch), err, sizeof(err)), 0);
        assert_true(tf_lp_point_equal(&p, &q));
    }
    tf_dynbuf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gpu_usage_line_matches_what_greptime_expects),
        cmocka_unit_test(special_characters_are_escaped_per_element),
        cmocka_unit_test(invalid_points_are_rejected_with_the_element_named),
        cmocka_unit_test(a_full_buffer_appends_nothing),
        cmocka_unit_test(parser_reads_every_value_type),
        cmocka_unit_test(malformed_lines_report_the_column),
        cmocka_unit_test(floats_round_trip_bit_exactly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
