/* SPDX-License-Identifier: Apache-2.0
 *
 * Pod indexes (core/podindex.h): upstream's encoding as extended resources and device IDs,
 * and the allocator that keeps indexes unique among live pods, reclaims finished ones,
 * rebuilds from annotations after a restart and reports exhaustion.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "core/podindex.h"

static void encoding_is_upstreams_bucket_and_count(void **state)
{
    (void)state;
    int k, n;
    /* upstream's table: 1 -> index_0:1, 8 -> index_0:8, 9 -> index_1:1, 128 -> index_f:8 */
    static const int want[][3] = {{1, 0, 1}, {8, 0, 8}, {9, 1, 1}, {128, 15, 8}, {60, 7, 4}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        assert_int_equal(tf_podidx_encode(want[i][0], &k, &n), 0);
        assert_int_equal(k, want[i][1]);
        assert_int_equal(n, want[i][2]);
    }
    for (int i = 1; i <= TF_PODIDX_MAX; i++) {
        assert_int_equal(tf_podidx_encode(i, &k, &n), 0);
        assert_int_equal(tf_podidx_decode(k, n), i);
    }
    assert_int_equal(tf_podidx_encode(0, &k, &n), TF_ERANGE);
    assert_int_equal(tf_podidx_encode(129, &k, &n), TF_ERANGE);
    assert_int_equal(tf_podidx_decode(16, 1), TF_ERANGE);
    assert_int_equal(tf_podidx_decode(0, 0), TF_ERANGE);
    assert_int_equal(tf_podidx_decode(0, 9), TF_ERANGE);
    assert_int_equal(tf_podidx_decode(-1, 1), TF_ERANGE);
}

static void resource_names_round_trip_and_refuse_lookalikes(void **state)
{
    (void)state;
    char buf[40];
    assert_int_equal(tf_podidx_resource(15, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "tensor-fusion.ai/index_f");
    assert_int_equal(tf_podidx_resource(16, buf, sizeof(buf)), TF_ERANGE);
    assert_int_equal(tf_podidx_resource(1, buf, 10), TF_ERANGE);
    for (int k = 0; k < TF_PODIDX_KEYS; k++) {
        assert_int_equal(tf_podidx_resource(k, buf, sizeof(buf)), 0);
        assert_int_equal(tf_podidx_parse_resource(buf), k);
    }
    static const char *bad[] = {"tensor-fusion.ai/index",
                                "tensor-fusion.ai/index_",
                                "tensor-fusion.ai/index_g",
                                "tensor-fusion.ai/index_F",
                                "tensor-fusion.ai/index_10",
                                "tensor-fusion.ai/vgpu",
                                NULL};
    for (int i = 0; bad[i]; i++)
        assert_int_equal(tf_podidx_parse_resource(bad[i]), -1);
    assert_int_equal(tf_podidx_parse_resource(NULL), -1);
}

static void annotation_values_are_plain_decimals_in_range(void **state)
{
    (void)state;
    assert_int_equal(tf_podidx_parse_annotation("1"), 1);
    assert_int_equal(tf_podidx_parse_annotation("128"), 128);
    static const char *bad[] = {
        "0", "129", "01", "-1", "+5", " 5", "5 ", "", "12a", "99999999999999999999", NULL};
    for (int i = 0; bad[i]; i++)
        assert_int_equal(tf_podidx_parse_annotation(bad[i]), -1);
    assert_int_equal(tf_podidx_parse_annotation(NULL), -1);
}

static void device_ids_belong_to_their_bucket(void **state)
{
    (void)state;
    char id[16];
    assert_int_equal(tf_podidx_device_id(3, 36, id, sizeof(id)), 0);
    assert_string_equal(id, "3-36");
    assert_true(tf_podidx_is_device(3, id));
    assert_false(tf_podidx_is_device(4, id));
    assert_int_equal(tf_podidx_device_id(3, 37, id, sizeof(id)), TF_ERANGE);
    assert_int_equal(tf_podidx_device_id(3, 0, id, sizeof(id)), TF_ERANGE);
    static const char *bad[] = {"3-0", "3-37", "3-", "3", "3-1x", "13-1", "3-01", NULL};
    for (int i = 0; bad[i]; i++)
        assert_false(tf_podidx_is_device(3, bad[i]));
    assert_true(tf_podidx_is_device(12, "12-1"));
    assert_false(tf_podidx_is_device(1, "12-1"));
    assert_int_equal(TF_PODIDX_DEVICES, 36);
}

static void indexes_are_unique_until_exhausted_then_refused(void **state)
{
    (void)state;
    struct tf_podidx_alloc a;
    tf_podidx_init(&a);
    bool seen[TF_PODIDX_MAX + 1] = {false};
    for (int i = 0; i < TF_PODIDX_MAX; i++) {
        int x = tf_podidx_take(&a, 1000);
        assert_true(x >= 1 && x <= TF_PODIDX_MAX);
        assert_false(seen[x]);
        seen[x] = true;
    }
    assert_int_equal(tf_podidx_used(&a, 1000), TF_PODIDX_MAX);
    assert_int_equal(tf_podidx_take(&a, 1000), TF_ENOSPC);
}

static void finished_pods_give_their_index_back_reused_last(void **state)
{
    (void)state;
    struct tf_podidx_alloc a;
    tf_podidx_init(&a);
    int first = tf_podidx_take(&a, 0), second = tf_podidx_take(&a, 0);
    assert_int_equal(first, 1);
    assert_int_equal(second, 2);
    int live[] = {1, 2};
    tf_podidx_live(&a, live, 2); /* both pods stored: held by them, not by reservations */
    assert_int_equal(tf_podidx_used(&a, 10 * TF_PODIDX_RESERVE_MS), 2);
    tf_podidx_live(&a, live + 1, 1); /* pod 1 finished */
    assert_int_equal(tf_podidx_used(&a, 0), 1);
    /* round robin: the freed 1 comes back only after 3..128 */
    assert_int_equal(tf_podidx_take(&a, 0), 3);
}

static void reservations_expire_when_the_pod_never_appears(void **state)
{
    (void)state;
    struct tf_podidx_alloc a;
    tf_podidx_init(&a);
    for (int i = 0; i < TF_PODIDX_MAX; i++)
        tf_podidx_take(&a, 0);
    tf_podidx_live(&a, NULL, 0); /* none of them was stored (admission denied later) */
    assert_int_equal(tf_podidx_take(&a, TF_PODIDX_RESERVE_MS - 1), TF_ENOSPC);
    int x = tf_podidx_take(&a, TF_PODIDX_RESERVE_MS);
    assert_true(x >= 1 && x <= TF_PODIDX_MAX);
}

static void a_restarted_allocator_rebuilds_from_live_annotations(void **state)
{
    (void)state;
    struct tf_podidx_alloc a;
    tf_podidx_init(&a);                    /* fresh process: nothing in memory */
    int live[] = {1, 2, 3, 5, 0, 999, -4}; /* out-of-range values are ignored */
    tf_podidx_live(&a, live, sizeof(live) / sizeof(live[0]));
    assert_int_equal(tf_podidx_used(&a, 0), 4);
    assert_int_equal(tf_podidx_take(&a, 0), 4);
    assert_int_equal(tf_podidx_take(&a, 0), 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(encoding_is_upstreams_bucket_and_count),
        cmocka_unit_test(resource_names_round_trip_and_refuse_lookalikes),
        cmocka_unit_test(annotation_values_are_plain_decimals_in_range),
        cmocka_unit_test(device_ids_belong_to_their_bucket),
        cmocka_unit_test(indexes_are_unique_until_exhausted_then_refused),
        cmocka_unit_test(finished_pods_give_their_index_back_reused_last),
        cmocka_unit_test(reservations_expire_when_the_pod_never_appears),
        cmocka_unit_test(a_restarted_allocator_rebuilds_from_live_annotations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
