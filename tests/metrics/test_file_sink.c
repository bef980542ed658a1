/* SPDX-License-Identifier: Apache-2.0
 *
 * File sink: line protocol appended, rotated by size into PATH.1..PATH.keep, nothing lost
 * inside the kept files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "metrics/sink.h"

static char dir[256];

static int setup(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/tf-test-file-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int count_lines(const char *path, int64_t *first_ts)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof(line), f)) {
        struct tf_lp_point p;
        char scratch[1024], err[128];
        if (tf_lp_parse(line, strlen(line), -1, &p, scratch, sizeof(scratch), err, sizeof(err)))
            fail_msg("%s: unparsable line %s: %s", path, line, err);
        if (n == 0 && first_ts)
            *first_ts = p.ts_ms;
        n++;
    }
    fclose(f);
    return n;
}

static void lines_are_appended_and_rotated_by_size(void **state)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/metrics.log", dir);
    struct tf_metrics_file_opts o = {.max_bytes = 1000, .keep = 2};
    struct tf_metrics_sink *s;
    char err[256];
    assert_int_equal(tf_metrics_file_sink_new(path, &o, &s, err, sizeof(err)), 0);
    /* Each batch is 5 lines of ~70 bytes: two batches fit in 1000 bytes, the third rotates. */
    for (int b = 0; b < 10; b++) {
        struct tf_lp_point p[5];
        for (int i = 0; i < 5; i++) {
            tf_lp_point_init(&p[i], "tf_worker_usage", b * 5 + i);
            tf_lp_tag(&p[i], "workload", "train-job");
            tf_lp_tag(&p[i], "uuid", "GPU-0123456789");
            tf_lp_float(&p[i], "compute_tflops", 1.5);
        }
        assert_int_equal(tf_metrics_sink_write(s, p, 5, err, sizeof(err)), 0);
    }
    tf_metrics_sink_destroy(s);
    char p1[320], p2[320], p3[320];
    snprintf(p1, sizeof(p1), "%s.1", path);
    snprintf(p2, sizeof(p2), "%s.2", path);
    snprintf(p3, sizeof(p3), "%s.3", path);
    int64_t ts_cur = -1, ts_1 = -1, ts_2 = -1;
    int n0 = count_lines(path, &ts_cur), n1 = count_lines(p1, &ts_1), n2 = count_lines(p2, &ts_2);
    assert_true(n0 > 0 && n1 > 0 && n2 > 0);
    assert_int_equal(count_lines(p3, NULL), -1); /* keep = 2 */
    /* Newest in PATH, older in .1, oldest kept in .2; every batch is whole (multiple of 5). */
    assert_true(ts_cur > ts_1 && ts_1 > ts_2);
    assert_int_equal(n0 % 5, 0);
    assert_int_equal(n1 % 5, 0);
    assert_int_equal(n2 % 5, 0);
    struct stat st;
    assert_int_equal(stat(p1, &st), 0);
    assert_true(st.st_size <= 1000);
    /* The newest 50 - (n0+n1+n2) points were rotated away; the newest ones are all there. */
    assert_int_equal(ts_cur + n0, 50);
}

static void reopening_appends_to_the_existing_file(void **state)
{
    char path[300];
    snprintf(path, sizeof(path), "%s/m.log", dir);
    for (int round = 0; round < 2; round++) {
        struct tf_metrics_sink *s;
        char err[256], uri[320];
        snprintf(uri, sizeof(uri), "file:%s", path);
        assert_int_equal(tf_metrics_sink_open(uri, &s, err, sizeof(err)), 0);
        struct tf_lp_point p;
        tf_lp_point_init(&p, "tf_gpu_usage", round);
        tf_lp_float(&p, "compute_percentage", 1);
        assert_int_equal(tf_metrics_sink_write(s, &p, 1, err, sizeof(err)), 0);
        tf_metrics_sink_destroy(s);
    }
    assert_int_equal(count_lines(path, NULL), 2);
}

static void unknown_sink_uris_are_refused(void **state)
{
    struct tf_metrics_sink *s;
    char err[256];
    assert_int_equal(tf_metrics_sink_open("influx://x", &s, err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "influx://x"));
    assert_null(s);
    assert_int_equal(tf_metrics_sink_open("file:/nonexistent/dir/x.log", &s, err, sizeof(err)),
                     TF_EIO);
    assert_non_null(strstr(err, "/nonexistent/dir/x.log"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(lines_are_appended_and_rotated_by_size, setup, teardown),
        cmocka_unit_test_setup_teardown(reopening_appends_to_the_existing_file, setup, teardown),
        cmocka_unit_test(unknown_sink_uris_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
