/* SPDX-License-Identifier: Apache-2.0
 *
 * The gang planner (core/gang.h) with explicit times: members wait until the quorum holds
 * GPUs, then all bind together; later members (restarts) bind alone; a timeout or a failed
 * bind releases the waiting members and backs the group off; deleted members stop waiting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "core/gang.h"

static enum tf_gang_step hold(struct tf_gang_book *b, const char *key, int required,
                              int64_t timeout, const char *member, int64_t now, int *waiting)
{
    enum tf_gang_step step;
    assert_int_equal(tf_gang_hold(b, key, required, timeout, member, "n1", now, &step, waiting), 0);
    return step;
}

static void members_wait_until_the_quorum_then_bind_together(void **state)
{
    struct tf_gang_book *b = tf_gang_book_new();
    int w;
    assert_int_equal(hold(b, "ml/t", 3, 0, "ml/a", 0, &w), TF_GANG_WAIT);
    assert_int_equal(w, 1);
    assert_int_equal(hold(b, "ml/t", 3, 0, "ml/b", 10, &w), TF_GANG_WAIT);
    /* A retried bind of a waiting member moves it, it does not count twice. */
    enum tf_gang_step step;
    assert_int_equal(tf_gang_hold(b, "ml/t", 3, 0, "ml/a", "n2", 20, &step, &w), 0);
    assert_int_equal(step, TF_GANG_WAIT);
    assert_int_equal(w, 2);
    /* Another group is independent. */
    assert_int_equal(hold(b, "ml/other", 2, 0, "ml/x", 20, &w), TF_GANG_WAIT);
    assert_int_equal(hold(b, "ml/t", 3, 0, "ml/c", 30, &w), TF_GANG_BIND_ALL);
    const char *names[4], *nodes[4];
    assert_int_equal(tf_gang_waiting(b, "ml/t", names, nodes, 4), 3);
    assert_string_equal(names[0], "ml/a");
    assert_string_equal(nodes[0], "n2");
    assert_string_equal(names[2], "ml/c");
    tf_gang_bound(b, "ml/t");
    assert_int_equal(tf_gang_waiting(b, "ml/t", names, nodes, 4), 0);
    /* Once satisfied, a restarted member binds alone (upstream's once-satisfied rule). */
    assert_int_equal(hold(b, "ml/t", 3, 0, "ml/a", 40, &w), TF_GANG_BIND);
    tf_gang_book_destroy(b);
}

static void a_timeout_releases_the_waiting_members_and_backs_off(void **state)
{
    struct tf_gang_book *b = tf_gang_book_new();
    int w;
    char rel[4][TF_GANG_NAME_MAX];
    hold(b, "ml/t", 3, 1000, "ml/a", 0, &w);
    hold(b, "ml/t", 3, 1000, "ml/b", 500, &w);
    hold(b, "ml/forever", 2, 0, "ml/z", 0, &w);
    assert_int_equal(tf_gang_expire(b, 999, rel, 4), 0);
    assert_int_equal(tf_gang_expire(b, 1000, rel, 4), 2); /* from the oldest member's wait */
    assert_string_equal(rel[0], "ml/a");
    assert_string_equal(rel[1], "ml/b");
    assert_int_equal(tf_gang_waiting(b, "ml/t", NULL, NULL, 0), 0);
    /* Timeout 0 waits forever. */
    assert_int_equal(tf_gang_waiting(b, "ml/forever", NULL, NULL, 0), 1);
    /* Backed off, then a fresh wait. */
    assert_int_equal(hold(b, "ml/t", 3, 1000, "ml/c", 1000 + TF_GANG_BACKOFF_MS - 1, &w),
                     TF_GANG_REFUSE);
    assert_int_equal(hold(b, "ml/t", 3, 1000, "ml/c", 1000 + TF_GANG_BACKOFF_MS, &w), TF_GANG_WAIT);
    assert_int_equal(w, 1);
    tf_gang_book_destroy(b);
}

static void a_failed_bind_releases_the_group_and_deleted_members_stop_waiting(void **state)
{
    struct tf_gang_book *b = tf_gang_book_new();
    int w;
    char rel[4][TF_GANG_NAME_MAX];
    hold(b, "ml/t", 3, 0, "ml/a", 0, &w);
    hold(b, "ml/t", 3, 0, "ml/b", 0, &w);
    tf_gang_forget(b, "ml/a");
    assert_int_equal(tf_gang_waiting(b, "ml/t", NULL, NULL, 0), 1);
    hold(b, "ml/t", 3, 0, "ml/c", 0, &w);
    assert_int_equal(w, 2); /* a deleted member no longer counts toward the quorum */
    assert_int_equal(tf_gang_fail(b, "ml/t", 100, rel, 4), 2);
    assert_string_equal(rel[0], "ml/b");
    assert_int_equal(hold(b, "ml/t", 3, 0, "ml/d", 200, &w), TF_GANG_REFUSE);
    tf_gang_book_destroy(b);
}

static void bad_groups_are_refused(void **state)
{
    struct tf_gang_book *b = tf_gang_book_new();
    enum tf_gang_step step;
    int w;
    assert_int_equal(tf_gang_hold(b, "ml/t", 1, 0, "ml/a", "n", 0, &step, &w), TF_EINVAL);
    char longname[TF_GANG_NAME_MAX + 8];
    memset(longname, 'x', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(tf_gang_hold(b, longname, 2, 0, "ml/a", "n", 0, &step, &w), TF_EINVAL);
    tf_gang_book_destroy(b);
    tf_gang_book_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(members_wait_until_the_quorum_then_bind_together),
        cmocka_unit_test(a_timeout_releases_the_waiting_members_and_backs_off),
        cmocka_unit_test(a_failed_bind_releases_the_group_and_deleted_members_stop_waiting),
        cmocka_unit_test(bad_groups_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
