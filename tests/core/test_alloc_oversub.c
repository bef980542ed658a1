/* SPDX-License-Identifier: Apache-2.0
 *
 * Oversubscription (only requests are reserved; limits bounded by the oversold TFLOPS and the
 * VRAM expanded into host memory) and in-place resize for the autoscaler.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sched_fixture.h"

static struct tf_cluster *one_node(int32_t oversell_pct, int64_t host_mem, unsigned ngpus)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    struct tf_pool_config cfg;
    tf_pool_config_init(&cfg);
    cfg.placement = TF_PLACE_COMPACT_FIRST;
    cfg.tflops_oversell_pct = oversell_pct;
    assert_int_equal(tf_cluster_add_pool(c, "p", &cfg, NULL, NULL, 0), 0);
    struct tf_gpu_spec g[8];
    memset(g, 0, sizeof(g));
    const char *u[] = {"g0", "g1", "g2", "g3", "g4", "g5", "g6", "g7"};
    for (unsigned i = 0; i < ngpus; i++) {
        g[i].uuid = u[i];
        g[i].model = tf_gpu_model_find("L4");
        g[i].index = (int32_t)i;
        g[i].numa = -1;
        g[i].phase = TF_GPU_RUNNING;
    }
    struct tf_node_spec ns = {"n1", TF_ISOLATION_UNSET, host_mem, 0, g, (uint16_t)ngpus};
    assert_int_equal(tf_cluster_add_node(c, 0, &ns, NULL, NULL, 0), 0);
    return c;
}

static void only_requests_are_reserved_and_limits_may_reach_the_oversold_capacity(void **state)
{
    struct tf_cluster *c = one_node(500, 0, 1);
    assert_int_equal(c->gpus[0].virt_tflops, 605000); /* 121 x 500 % */
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    for (int i = 0; i < 10; i++) {
        char nm[8];
        snprintf(nm, sizeof(nm), "p%d", i);
        struct tf_alloc_request r = fx_req("ns", nm, 10, GiB);
        r.res.lim_tflops = TF(60);
        fx_place(a, &r, NULL);
    }
    assert_int_equal(c->gpus[0].avail_tflops, TF(21)); /* 121 - 10 x 10 */
    assert_int_equal(c->gpus[0].lim_tflops, TF(600));
    struct tf_alloc_request r = fx_req("ns", "over", 5, GiB);
    r.res.lim_tflops = TF(60);
    char err[256];
    struct tf_alloc_result res;
    assert_int_equal(tf_alloc_place(a, &r, &res, NULL, err, sizeof(err)), TF_ENOSPC);
    r.res.lim_tflops = TF(5);
    fx_place(a, &r, NULL);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void an_oversell_ratio_of_100_percent_means_no_oversubscription(void **state)
{
    struct tf_cluster *c = one_node(100, 0, 1);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_alloc_request r = fx_req("ns", "a", 10, GiB);
    r.res.lim_tflops = TF(121);
    fx_place(a, &r, NULL);
    r.name = "b";
    r.res.lim_tflops = TF(11);
    char err[256];
    struct tf_alloc_result res;
    assert_int_equal(tf_alloc_place(a, &r, &res, NULL, err, sizeof(err)), TF_ENOSPC);
    /* The ratio is validated. */
    struct tf_pool_config cfg;
    tf_pool_config_init(&cfg);
    cfg.tflops_oversell_pct = 50;
    assert_int_equal(tf_cluster_add_pool(c, "bad", &cfg, NULL, err, sizeof(err)), TF_EINVAL);
    assert_string_equal(err, "tflopsOversellRatio 50 out of range 100..100000");
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void vram_limits_expand_into_host_memory(void **state)
{
    /* 64Gi of host memory x 50 % shared by 2 GPUs: each may promise 24 + 16 = 40Gi. */
    struct tf_cluster *c = one_node(500, 64 * GiB, 2);
    assert_int_equal(c->gpus[0].virt_vram, 40 * GiB);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_alloc_request r = fx_req("ns", "a", 1, 10 * GiB);
    r.res.lim_vram = 30 * GiB;
    int32_t idx = 0;
    r.gpu_indices = &idx;
    r.n_indices = 1;
    fx_place(a, &r, NULL);
    r.name = "b";
    r.res.lim_vram = 11 * GiB; /* 41Gi of limits > 40Gi */
    char err[256];
    struct tf_alloc_result res;
    assert_int_equal(tf_alloc_place(a, &r, &res, NULL, err, sizeof(err)), TF_ENOSPC);
    r.res.lim_vram = 10 * GiB;
    fx_place(a, &r, NULL);
    assert_int_equal(c->gpus[0].avail_vram, 4 * GiB);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
    /* Without known host memory, VRAM limits stay within the GPU. */
    c = one_node(500, 0, 1);
    a = tf_alloc_new(c, NULL);
    r = fx_req("ns", "a", 1, 10 * GiB);
    r.res.lim_vram = 30 * GiB;
    assert_int_equal(tf_alloc_place(a, &r, &res, NULL, err, sizeof(err)), TF_ENOSPC);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void resize_grows_and_shrinks_in_place(void **state)
{
    struct tf_cluster *c = one_node(500, 0, 1);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_alloc_request r = fx_req("ns", "a", 10, 4 * GiB);
    fx_place(a, &r, NULL);
    r = fx_req("ns", "b", 50, 10 * GiB);
    fx_place(a, &r, NULL);
    struct tf_alloc_resources res = {0};
    res.req_tflops = TF(60);
    res.req_vram = 14 * GiB;
    char err[256];
    assert_int_equal(tf_alloc_resize(a, "ns", "a", &res, err, sizeof(err)), 0);
    assert_int_equal(c->gpus[0].avail_tflops, TF(11));
    assert_int_equal(c->gpus[0].avail_vram, 0);
    fx_check(a);
    res.req_vram = 15 * GiB;
    assert_int_equal(tf_alloc_resize(a, "ns", "a", &res, err, sizeof(err)), TF_ENOSPC);
    assert_string_equal(err, "pod ns/a: GPU g0: insufficient VRAM: need 15Gi, max free 14Gi");
    res.req_vram = 2 * GiB;
    res.req_tflops = TF(1);
    assert_int_equal(tf_alloc_resize(a, "ns", "a", &res, err, sizeof(err)), 0);
    assert_int_equal(c->gpus[0].avail_vram, 12 * GiB);
    /* By percent, converted with the GPU's TFLOPS. */
    res.req_tflops = 0;
    res.req_by_percent = true;
    res.req_percent = 2000;
    assert_int_equal(tf_alloc_resize(a, "ns", "a", &res, err, sizeof(err)), 0);
    assert_int_equal(c->gpus[0].avail_tflops, 121000 - 50000 - 24200);
    fx_check(a);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void resize_of_a_multi_gpu_pod_is_all_or_nothing(void **state)
{
    struct tf_cluster *c = one_node(500, 0, 2);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_alloc_request r = fx_req("ns", "pair", 10, 4 * GiB);
    r.gpu_count = 2;
    fx_place(a, &r, NULL);
    r = fx_req("ns", "blocker", 1, 18 * GiB);
    int32_t idx = 1;
    r.gpu_indices = &idx;
    r.n_indices = 1;
    fx_place(a, &r, NULL); /* g1 has 2Gi left, g0 20Gi */
    struct tf_alloc_resources res = {0};
    res.req_tflops = TF(10);
    res.req_vram = 8 * GiB;
    char err[256];
    assert_int_equal(tf_alloc_resize(a, "ns", "pair", &res, err, sizeof(err)), TF_ENOSPC);
    assert_string_equal(err, "pod ns/pair: GPU g1: insufficient VRAM: need 8Gi, max free 6Gi");
    assert_int_equal(c->gpus[0].avail_vram, 20 * GiB); /* g0 untouched */
    fx_check(a);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void whole_gpu_and_missing_pods_cannot_be_resized(void **state)
{
    struct tf_cluster *c = one_node(500, 0, 1);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_alloc_request r = fx_req("ns", "sh", 0, 0);
    r.isolation = TF_ISOLATION_SHARED;
    fx_place(a, &r, NULL);
    struct tf_alloc_resources res = {0};
    res.req_tflops = TF(10);
    char err[256];
    assert_int_equal(tf_alloc_resize(a, "ns", "sh", &res, err, sizeof(err)), TF_ENOTSUP);
    assert_string_equal(
        err, "pod ns/sh: shared allocations take fixed GPU shares and cannot be resized");
    assert_int_equal(tf_alloc_resize(a, "ns", "nope", &res, err, sizeof(err)), TF_ENOENT);
    res.req_vram = -1;
    assert_int_equal(tf_alloc_release(a, "ns", "sh"), 0);
    r = fx_req("ns", "x", 1, GiB);
    fx_place(a, &r, NULL);
    assert_int_equal(tf_alloc_resize(a, "ns", "x", &res, err, sizeof(err)), TF_EINVAL);
    fx_check(a);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void suspended_pods_free_their_share_until_resumed(void **state)
{
    struct tf_cluster *c = one_node(500, 0, 1);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_alloc_request r = fx_req("ns", "a", 100, 20 * GiB);
    fx_place(a, &r, NULL);
    uint32_t id = tf_alloc_find(a, "ns", "a");
    assert_int_equal(tf_alloc_suspend(a, id), 0);
    assert_int_equal(tf_alloc_suspend(a, id), TF_ESTATE);
    assert_int_equal(c->gpus[0].avail_vram, 24 * GiB);
    assert_int_equal(c->gpus[0].mode, TF_ISOLATION_UNSET);
    fx_check(a);
    r = fx_req("ns", "b", 100, 20 * GiB);
    fx_place(a, &r, NULL);
    assert_int_equal(tf_alloc_resume(a, id), TF_ENOSPC); /* b took the room */
    assert_int_equal(tf_alloc_release(a, "ns", "b"), 0);
    assert_int_equal(tf_alloc_resume(a, id), 0);
    assert_int_equal(c->gpus[0].avail_vram, 4 * GiB);
    fx_check(a);
    /* Releasing a suspended pod works too. */
    assert_int_equal(tf_alloc_suspend(a, id), 0);
    assert_int_equal(tf_alloc_release(a, "ns", "a"), 0);
    assert_int_equal(tf_alloc_count(a), 0);
    fx_check(a);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(only_requests_are_reserved_and_limits_may_reach_the_oversold_capacity),
        cmocka_unit_test(an_oversell_ratio_of_100_percent_means_no_oversubscription),
        cmocka_unit_test(vram_limits_expand_into_host_memory),
        cmocka_unit_test(resize_grows_and_shrinks_in_place),
        cmocka_unit_test(resize_of_a_multi_gpu_pod_is_all_or_nothing),
        cmocka_unit_test(whole_gpu_and_missing_pods_cannot_be_resized),
        cmocka_unit_test(suspended_pods_free_their_share_until_resumed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
