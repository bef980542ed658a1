/* SPDX-License-Identifier: Apache-2.0
 *
 * Namespace quotas (GPUResourceQuota): totals, per-worker caps, defaults, the compute-percent
 * bypass of seed 000, and usage kept in step with place / release / resize / restore.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sched_fixture.h"

struct env {
    struct tf_cluster *c;
    struct tf_quota_set *q;
    struct tf_alloc *a;
    struct tf_quota_spec spec;
};

static struct env env_new(void)
{
    struct env e;
    e.c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(e.c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node(e.c, 0, "n1", "H100", 8);
    e.q = tf_quota_set_new();
    e.a = tf_alloc_new(e.c, e.q);
    tf_quota_spec_init(&e.spec);
    return e;
}

static void env_free(struct env *e)
{
    fx_check(e->a);
    tf_alloc_destroy(e->a);
    tf_quota_set_destroy(e->q);
    tf_cluster_destroy(e->c);
}

static void put(struct env *e)
{
    char err[256];
    if (tf_quota_put(e->q, "team", &e->spec, err, sizeof(err)))
        fail_msg("quota: %s", err);
}

static int try_place(struct env *e, struct tf_alloc_request *r, char *err, size_t len)
{
    struct tf_alloc_result res;
    int rc = tf_alloc_place(e->a, r, &res, NULL, err, len);
    fx_check(e->a);
    return rc;
}

static void total_requests_count_every_gpu_of_a_pod(void **state)
{
    struct env e = env_new();
    e.spec.total_requests.tflops = TF(100);
    e.spec.total_requests.vram = 40 * GiB;
    put(&e);
    char err[256];
    struct tf_alloc_request r = fx_req("team", "a", 20, 8 * GiB);
    r.gpu_count = 2; /* 40 TFLOPS, 16Gi */
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), 0);
    r.name = "b"; /* 80, 32Gi */
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), 0);
    r.name = "c";
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), TF_ENOSPC);
    assert_string_equal(
        err, "namespace team: quota total.requests.tflops exceeded: used 80 + asked 40 > 100");
    r = fx_req("team", "d", 10, 10 * GiB);
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), TF_ENOSPC);
    assert_string_equal(
        err, "namespace team: quota total.requests.vram exceeded: used 32Gi + asked 10Gi > 40Gi");
    struct tf_quota_usage u = tf_quota_usage_of(e.q, "team", 4);
    assert_int_equal(u.req_tflops, TF(80));
    assert_int_equal(u.req_vram, 32 * GiB);
    assert_int_equal(u.workers, 2);
    /* Releasing gives the room back. */
    assert_int_equal(tf_alloc_release(e.a, "team", "b"), 0);
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), 0);
    env_free(&e);
}

static void total_limits_and_max_workers(void **state)
{
    struct env e = env_new();
    e.spec.total_limits.tflops = TF(300);
    e.spec.max_workers = 2;
    put(&e);
    char err[256];
    struct tf_alloc_request r = fx_req("team", "a", 10, GiB);
    r.res.lim_tflops = TF(200);
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), 0);
    r.name = "b";
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), TF_ENOSPC);
    assert_string_equal(
        err, "namespace team: quota total.limits.tflops exceeded: used 200 + asked 200 > 300");
    r.res.lim_tflops = TF(50);
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), 0);
    r.name = "c";
    r.res.lim_tflops = 0;
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), TF_ENOSPC);
    assert_string_equal(err, "namespace team: quota total.maxWorkers exceeded: 2 workers of 2");
    env_free(&e);
}

static void single_caps_apply_per_worker(void **state)
{
    struct env e = env_new();
    e.spec.max_requests.vram = 16 * GiB;
    e.spec.max_limits.tflops = TF(100);
    e.spec.max_gpu_count = 2;
    put(&e);
    char err[256];
    struct tf_alloc_request r = fx_req("team", "a", 10, 20 * GiB);
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), TF_ENOSPC);
    assert_string_equal(
        err, "namespace team: quota single.maxRequests.vram exceeded: asked 20Gi > 16Gi");
    r = fx_req("team", "a", 10, GiB);
    r.res.lim_tflops = TF(150);
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), TF_ENOSPC);
    assert_string_equal(err,
                        "namespace team: quota single.maxLimits.tflops exceeded: asked 150 > 100");
    r.res.lim_tflops = 0;
    r.gpu_count = 3;
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), TF_ENOSPC);
    assert_string_equal(err, "namespace team: quota single.maxGPUCount exceeded: asked 3 > 2");
    r.gpu_count = 2;
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), 0);
    env_free(&e);
}

static void compute_percent_requests_bypass_the_namespace_quota(void **state)
{
    struct env e = env_new();
    e.spec.total_requests.tflops = TF(10);
    e.spec.max_workers = 1;
    put(&e);
    char err[256];
    struct tf_alloc_request r = fx_req("team", "pct", 0, GiB);
    r.res.req_by_percent = true;
    r.res.req_percent = 5000; /* ~494 TFLOPS of an H100: far over the 10 TFLOPS quota */
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), 0);
    r.name = "pct2";
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), 0);
    struct tf_quota_usage u = tf_quota_usage_of(e.q, "team", 4);
    assert_int_equal(u.req_tflops, 0); /* not counted either */
    assert_int_equal(u.workers, 0);
    /* TFLOPS requests are still checked. */
    r = fx_req("team", "tf", 20, GiB);
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), TF_ENOSPC);
    env_free(&e);
}

static void usage_is_tracked_before_a_quota_exists(void **state)
{
    struct env e = env_new();
    char err[256];
    struct tf_alloc_request r = fx_req("team", "early", 50, GiB);
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), 0);
    e.spec.total_requests.tflops = TF(60);
    put(&e);
    r = fx_req("team", "late", 20, GiB);
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), TF_ENOSPC);
    assert_int_equal(tf_quota_remove(e.q, "team"), 0);
    assert_int_equal(tf_quota_remove(e.q, "team"), TF_ENOENT);
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), 0);
    env_free(&e);
}

static void defaults_fill_what_a_pod_left_out(void **state)
{
    struct env e = env_new();
    e.spec.default_requests.tflops = TF(5);
    e.spec.default_requests.vram = 2 * GiB;
    e.spec.default_limits.tflops = TF(10);
    put(&e);
    int64_t rt = 0, rv = 0, lt = 0, lv = 3 * GiB;
    assert_true(tf_quota_apply_defaults(e.q, "team", &rt, &rv, &lt, &lv));
    assert_int_equal(rt, TF(5));
    assert_int_equal(rv, 2 * GiB);
    assert_int_equal(lt, TF(10));
    assert_int_equal(lv, 3 * GiB); /* given: kept */
    rt = 1;
    assert_false(tf_quota_apply_defaults(e.q, "other", &rt, &rv, &lt, &lv));
    env_free(&e);
}

static void resize_is_checked_against_the_quota_without_a_new_worker(void **state)
{
    struct env e = env_new();
    e.spec.total_requests.tflops = TF(100);
    e.spec.max_workers = 1;
    put(&e);
    char err[256];
    struct tf_alloc_request r = fx_req("team", "a", 40, GiB);
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), 0);
    struct tf_alloc_resources res = r.res;
    res.req_tflops = TF(90); /* 40 -> 90: within 100, and no second worker is counted */
    assert_int_equal(tf_alloc_resize(e.a, "team", "a", &res, err, sizeof(err)), 0);
    fx_check(e.a);
    res.req_tflops = TF(110);
    assert_int_equal(tf_alloc_resize(e.a, "team", "a", &res, err, sizeof(err)), TF_ENOSPC);
    assert_string_equal(
        err, "namespace team: quota total.requests.tflops exceeded: used 0 + asked 110 > 100");
    struct tf_quota_usage u = tf_quota_usage_of(e.q, "team", 4);
    assert_int_equal(u.req_tflops, TF(90));
    assert_int_equal(u.workers, 1);
    env_free(&e);
}

static void restored_pods_are_charged_even_over_quota(void **state)
{
    struct env e = env_new();
    e.spec.total_requests.tflops = TF(10);
    put(&e);
    char err[256];
    struct tf_alloc_request r = fx_req("team", "old", 50, GiB);
    const char *ids[] = {"n1-g3"};
    assert_int_equal(tf_alloc_restore(e.a, &r, "n1", ids, 1, err, sizeof(err)), 0);
    struct tf_quota_usage u = tf_quota_usage_of(e.q, "team", 4);
    assert_int_equal(u.req_tflops, TF(50));
    r = fx_req("team", "new", 1, GiB);
    assert_int_equal(try_place(&e, &r, err, sizeof(err)), TF_ENOSPC);
    env_free(&e);
}

static void invalid_quotas_are_refused(void **state)
{
    struct env e = env_new();
    e.spec.total_requests.vram = -5;
    char err[256];
    assert_int_equal(tf_quota_put(e.q, "team", &e.spec, err, sizeof(err)), TF_EINVAL);
    assert_string_equal(err, "namespace team: invalid quota (negative amount or out of range)");
    tf_quota_spec_init(&e.spec);
    e.spec.max_gpu_count = 0;
    assert_int_equal(tf_quota_put(e.q, "team", &e.spec, err, sizeof(err)), TF_EINVAL);
    assert_int_equal(tf_quota_put(e.q, "", &e.spec, err, sizeof(err)), TF_EINVAL);
    env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(total_requests_count_every_gpu_of_a_pod),
        cmocka_unit_test(total_limits_and_max_workers),
        cmocka_unit_test(single_caps_apply_per_worker),
        cmocka_unit_test(compute_percent_requests_bypass_the_namespace_quota),
        cmocka_unit_test(usage_is_tracked_before_a_quota_exists),
        cmocka_unit_test(defaults_fill_what_a_pod_left_out),
        cmocka_unit_test(resize_is_checked_against_the_quota_without_a_new_worker),
        cmocka_unit_test(restored_pods_are_charged_even_over_quota),
        cmocka_unit_test(invalid_quotas_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
