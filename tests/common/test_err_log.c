/* SPDX-License-Identifier: Apache-2.0
 *
 * Error names/messages come from one list; log records are single lines with level and subsys.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"

static void every_error_has_a_name_and_message(void **state)
{
    assert_string_equal(tf_err_name(TF_EINVAL), "TF_EINVAL");
    assert_string_equal(tf_strerror(TF_ENOSPC), "insufficient resources");
    assert_string_equal(tf_err_name(0), "TF_OK");
    assert_string_equal(tf_err_name(-9999), "TF_EUNKNOWN");
    for (int e = -1; e >= TF_ESTATE; e--)
        assert_string_not_equal(tf_strerror(e), "unknown error");
}

static void log_lines_are_single_writes_filtered_by_level(void **state)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    tf_log_set_fd(fds[1]);
    tf_log_set_level(TF_LOG_INFO);
    tf_log(TF_LOG_DEBUG, "test", "hidden %d", 1);
    tf_log(TF_LOG_WARN, "limiter", "vram over limit key=%s", "4Gi");
    tf_log_set_fd(2);
    close(fds[1]);
    char buf[4096] = "";
    ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
    close(fds[0]);
    assert_true(n > 0);
    assert_null(strstr(buf, "hidden"));
    assert_non_null(strstr(buf, " WARN "));
    assert_non_null(strstr(buf, " limiter vram over limit key=4Gi\n"));
    assert_int_equal(strchr(buf, '\n') - buf + 1, n); /* exactly one line */
    enum tf_log_level l;
    assert_int_equal(tf_log_parse_level("debug", &l), 0);
    assert_int_equal(l, TF_LOG_DEBUG);
    assert_int_equal(tf_log_parse_level("loud", &l), TF_EINVAL);
}

static int collect(const char *item, size_t len, void *arg)
{
    char *out = arg;
    strncat(out, item, len);
    strcat(out, "|");
    return 0;
}

static void lists_and_booleans(void **state)
{
    char out[128] = "";
    assert_int_equal(tf_split_list(" gpu-limiter, gpu-opt ,,mem-manager ", collect, out), 0);
    assert_string_equal(out, "gpu-limiter|gpu-opt|mem-manager|");
    bool b;
    assert_int_equal(tf_parse_bool("TRUE", &b), 0);
    assert_true(b);
    assert_int_equal(tf_parse_bool("no", &b), 0);
    assert_false(b);
    assert_int_equal(tf_parse_bool("maybe", &b), TF_EINVAL);
}

/* Kubernetes names built from other names: whole when they fit, else cut (never ending in
 * '-' or '.') and hashed so distinct long names stay distinct. */
static void names_fit_kubernetes_limits(void **state)
{
    char out[300], out2[300], name[260];
    tf_name_fit("tf-token-", "inference", 253, out, sizeof(out));
    assert_string_equal(out, "tf-token-inference");
    memset(name, 'a', 250);
    name[250] = '\0';
    name[234] = '.'; /* the last character the cut keeps: trimmed */
    tf_name_fit("tf-token-", name, 253, out, sizeof(out));
    assert_int_equal(strlen(out), 253 - 1);
    assert_int_equal(out[strlen(out) - 9], '-');
    assert_int_equal(out[strlen(out) - 10], 'a');
    name[249] = 'b';
    tf_name_fit("tf-token-", name, 253, out2, sizeof(out2));
    assert_string_not_equal(out, out2);
    memset(name, 'c', 244);
    name[244] = '\0'; /* 9 + 244 = 253: fits whole */
    tf_name_fit("tf-token-", name, 253, out, sizeof(out));
    assert_int_equal(strlen(out), 253);
    assert_null(strchr(out + 9, '-'));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_error_has_a_name_and_message),
        cmocka_unit_test(log_lines_are_single_writes_filtered_by_level),
        cmocka_unit_test(lists_and_booleans),
        cmocka_unit_test(names_fit_kubernetes_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
