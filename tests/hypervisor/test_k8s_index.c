/* SPDX-License-Identifier: Apache-2.0
 *
 * The node's pods by pod index (hypervisor/k8s_index.h): which pods hold an index (the
 * annotation backed by their own resource request), and what Allocate answers for one — the
 * MIG devices once they exist, a wait while they do not, refusals naming the pods when none
 * or two hold it — plus the bounded wait over the published table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/err.h"
#include "hypervisor/k8s_index.h"

static json_object *pod(const char *index, const char *res, const char *qty)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\",\"annotations\":{%s%s%s}},"
             "\"spec\":{\"containers\":[{\"name\":\"side\"},{\"name\":\"app\",\"resources\":"
             "{\"limits\":{\"%s\":%s}}}]}}",
             index ? "\"tensor-fusion.ai/index\":\"" : "", index ? index : "", index ? "\"" : "",
             res, qty);
    json_object *o = json_tokener_parse(buf);
    assert_non_null(o);
    return o;
}

static void an_index_counts_only_when_the_pods_own_spec_requests_it(void **state)
{
    (void)state;
    static const struct {
        const char *index, *res, *qty;
        int want;
    } cases[] = {
        {"60", "tensor-fusion.ai/index_7", "\"4\"", 60},
        {"1", "tensor-fusion.ai/index_0", "1", 1}, /* a quantity may be a JSON number */
        {"128", "tensor-fusion.ai/index_f", "\"8\"", 128},
        {"60", "tensor-fusion.ai/index_7", "\"5\"", -1}, /* another index's count */
        {"60", "tensor-fusion.ai/index_6", "\"4\"", -1}, /* another bucket */
        {"60", "tensor-fusion.ai/vgpu", "\"4\"", -1},    /* no index resource at all */
        {NULL, "tensor-fusion.ai/index_0", "\"1\"", -1}, /* a resource without annotation */
        {"0", "tensor-fusion.ai/index_0", "\"0\"", -1},
        {"abc", "tensor-fusion.ai/index_0", "\"1\"", -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_object *p = pod(cases[i].index, cases[i].res, cases[i].qty);
        assert_int_equal(tf_hv_k8s_pod_index(p), cases[i].want);
        json_object_put(p);
    }
}

static struct tf_hv_idx_entry entry(int index, const char *key, int ngpu, bool made)
{
    struct tf_hv_idx_entry e;
    memset(&e, 0, sizeof(e));
    e.index = index;
    snprintf(e.key, sizeof(e.key), "%s", key);
    e.ngpu = ngpu;
    for (int g = 0; g < ngpu; g++) {
        snprintf(e.gpus[g], sizeof(e.gpus[g]), "GPU-%d", g);
        if (made)
            snprintf(e.migs[g], sizeof(e.migs[g]), "MIG-%d-%d", index, g);
    }
    return e;
}

static void allocate_names_the_pods_mig_devices_for_runtime_and_cuda(void **state)
{
    (void)state;
    struct tf_hv_idx_entry e[] = {entry(3, "ml/a", 1, true), entry(9, "ml/b", 2, true)};
    struct tf_dp_env env[TF_DP_MAX_ENV];
    int n = 0;
    char err[256];
    assert_int_equal(tf_hv_idx_resolve(e, 2, 9, env, &n, err, sizeof(err)), 0);
    assert_int_equal(n, 2);
    assert_string_equal(env[0].key, "NVIDIA_VISIBLE_DEVICES");
    assert_string_equal(env[0].value, "MIG-9-0,MIG-9-1");
    assert_string_equal(env[1].key, "CUDA_VISIBLE_DEVICES");
    assert_string_equal(env[1].value, "MIG-9-0,MIG-9-1");
}

static void refusals_say_which_pods_and_why(void **state)
{
    (void)state;
    struct tf_hv_idx_entry e[] = {entry(3, "ml/a", 1, true), entry(3, "ml/b", 1, true),
                                  entry(4, "ml/c", 1, false), entry(5, "ml/d", 0, false),
                                  entry(6, "ml/e", 1, false)};
    snprintf(e[4].problem, sizeof(e[4].problem), "no free placement for 7g.80gb");
    struct tf_dp_env env[TF_DP_MAX_ENV];
    int n = 7;
    char err[256];
    assert_int_equal(tf_hv_idx_resolve(e, 5, 3, env, &n, err, sizeof(err)), TF_ECONFLICT);
    assert_non_null(strstr(err, "ml/a"));
    assert_non_null(strstr(err, "ml/b"));
    assert_int_equal(n, 0);
    assert_int_equal(tf_hv_idx_resolve(e, 5, 4, env, &n, err, sizeof(err)), TF_EBUSY);
    assert_non_null(strstr(err, "GPU-0"));
    assert_int_equal(tf_hv_idx_resolve(e, 5, 5, env, &n, err, sizeof(err)), TF_EBUSY);
    assert_int_equal(tf_hv_idx_resolve(e, 5, 6, env, &n, err, sizeof(err)), TF_EBUSY);
    assert_non_null(strstr(err, "7g.80gb"));
    assert_int_equal(tf_hv_idx_resolve(e, 5, 7, env, &n, err, sizeof(err)), TF_ENOENT);
    assert_non_null(strstr(err, "7"));
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void waiting_is_bounded_and_asks_for_a_reconcile(void **state)
{
    (void)state;
    struct tf_hv_idx *t = tf_hv_idx_new();
    assert_non_null(t);
    struct tf_hv_idx_entry e = entry(2, "ml/a", 1, false);
    tf_hv_idx_publish(t, &e, 1);
    assert_false(tf_hv_idx_kicked(t));
    struct tf_dp_env env[TF_DP_MAX_ENV];
    int n;
    char err[256];
    int64_t t0 = mono_ms();
    assert_int_equal(tf_hv_idx_wait(t, 2, 300, env, &n, err, sizeof(err)), TF_ETIMEDOUT);
    assert_true(mono_ms() - t0 >= 300);
    assert_non_null(strstr(err, "not created yet"));
    assert_true(tf_hv_idx_kicked(t));
    assert_false(tf_hv_idx_kicked(t)); /* cleared */
    /* once published with its MIG device, the same wait answers at once */
    e = entry(2, "ml/a", 1, true);
    tf_hv_idx_publish(t, &e, 1);
    assert_int_equal(tf_hv_idx_wait(t, 2, 300, env, &n, err, sizeof(err)), 0);
    assert_string_equal(env[0].value, "MIG-2-0");
    /* a conflict is not waited for */
    struct tf_hv_idx_entry two[] = {entry(2, "ml/a", 1, true), entry(2, "ml/b", 1, true)};
    tf_hv_idx_publish(t, two, 2);
    assert_int_equal(tf_hv_idx_wait(t, 2, 10000, env, &n, err, sizeof(err)), TF_ECONFLICT);
    tf_hv_idx_publish(t, NULL, 0);
    assert_int_equal(tf_hv_idx_wait(t, 2, 0, env, &n, err, sizeof(err)), TF_ETIMEDOUT);
    /* a stopping hypervisor answers at once */
    tf_hv_idx_close(t);
    t0 = mono_ms();
    assert_int_equal(tf_hv_idx_wait(t, 2, 10000, env, &n, err, sizeof(err)), TF_ESTATE);
    assert_true(mono_ms() - t0 < 5000);
    tf_hv_idx_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_index_counts_only_when_the_pods_own_spec_requests_it),
        cmocka_unit_test(allocate_names_the_pods_mig_devices_for_runtime_and_cuda),
        cmocka_unit_test(refusals_say_which_pods_and_why),
        cmocka_unit_test(waiting_is_bounded_and_asks_for_a_reconcile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
