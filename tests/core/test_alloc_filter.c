/* SPDX-License-Identifier: Apache-2.0
 *
 * Every filter stage of the allocator and the reason it gives kube-scheduler, in the issue's
 * order: quota, phase, isolation, gpu-indices, whole GPU, partition, resources, model, vendor,
 * gpu-count, max workers.
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
};

static struct env env_new(enum tf_iso_policy pol)
{
    struct env e;
    e.c = tf_cluster_new(pol);
    e.q = tf_quota_set_new();
    assert_non_null(e.c);
    assert_non_null(e.q);
    fx_pool(e.c, "default", TF_PLACE_COMPACT_FIRST);
    e.a = tf_alloc_new(e.c, e.q);
    assert_non_null(e.a);
    return e;
}

static void env_free(struct env *e)
{
    fx_check(e->a);
    tf_alloc_destroy(e->a);
    tf_quota_set_destroy(e->q);
    tf_cluster_destroy(e->c);
}

static void namespace_over_quota_fails_every_node_with_the_quota_reason(void **state)
{
    struct env e = env_new(TF_ISOPOL_DYNAMIC);
    fx_node(e.c, 0, "n1", "A100-80GB", 2);
    fx_node(e.c, 0, "n2", "A100-80GB", 2);
    struct tf_quota_spec qs;
    tf_quota_spec_init(&qs);
    qs.total_requests.tflops = TF(150);
    assert_int_equal(tf_quota_put(e.q, "team-a", &qs, NULL, 0), 0);
    struct tf_alloc_request r = fx_req("team-a", "p1", 120, 4 * GiB);
    fx_place(e.a, &r, NULL);
    r = fx_req("team-a", "p2", 40, 4 * GiB);
    const char *names[] = {"n1", "n2"};
    struct tf_node_verdict v[2];
    char buf[2048], err[256];
    struct tf_reasons rb;
    tf_reasons_init(&rb, buf, sizeof(buf));
    assert_int_equal(tf_alloc_filter(e.a, &r, names, 2, v, &rb, err, sizeof(err)), TF_ENOSPC);
    const char *want = "namespace team-a: quota total.requests.tflops exceeded: used 120 + "
                       "asked 40 > 150";
    assert_string_equal(err, want);
    for (int i = 0; i < 2; i++) {
        assert_false(v[i].fit);
        assert_string_equal(v[i].reason, want);
    }
    /* Another namespace is not limited. */
    r = fx_req("team-b", "p2", 40, 4 * GiB);
    assert_int_equal(tf_alloc_filter(e.a, &r, names, 2, v, &rb, err, sizeof(err)), 0);
    assert_true(v[0].fit && v[1].fit);
    env_free(&e);
}

static void gpus_not_running_are_skipped(void **state)
{
    struct env e = env_new(TF_ISOPOL_DYNAMIC);
    fx_node(e.c, 0, "n1", "L4", 2);
    tf_cluster_set_gpu_phase(e.c, 0, TF_GPU_PENDING);
    tf_cluster_set_gpu_phase(e.c, 1, TF_GPU_UNKNOWN);
    struct tf_alloc_request r = fx_req("ns", "p", 10, GiB);
    assert_string_equal(fx_reason(e.a, &r, TF_ENOSPC), "node n1: gpu 0/2 in phase Running");
    tf_cluster_set_gpu_phase(e.c, 1, TF_GPU_RUNNING);
    struct tf_alloc_result res;
    fx_place(e.a, &r, &res);
    assert_string_equal(gpu_uuid(e.a, res.gpus[0]), "n1-g1");
    env_free(&e);
}

static void dynamic_policy_rejects_a_hard_pod_on_gpus_locked_soft(void **state)
{
    struct env e = env_new(TF_ISOPOL_DYNAMIC);
    fx_node(e.c, 0, "n1", "L4", 2);
    struct tf_alloc_request r = fx_req("ns", "s1", 10, GiB);
    fx_place(e.a, &r, NULL);
    r.name = "s2";
    fx_place(e.a, &r, NULL);          /* CompactFirst packs: both on g0? then g1 is free */
    r = fx_req("ns", "s3", 110, GiB); /* only fits the empty GPU, locks it soft */
    fx_place(e.a, &r, NULL);
    r = fx_req("ns", "h1", 1, GiB);
    r.isolation = TF_ISOLATION_HARD;
    assert_string_equal(
        fx_reason(e.a, &r, TF_ENOSPC),
        "node n1: gpu 2/2 eligible, none compatible with isolation hard (GPUs in use as soft)");
    env_free(&e);
}

static void static_policy_rejects_a_soft_pod_on_a_hard_node(void **state)
{
    struct env e = env_new(TF_ISOPOL_STATIC);
    fx_node_ex(e.c, 0, "n1", "L4", 2, false, false, TF_ISOLATION_HARD);
    struct tf_alloc_request r = fx_req("ns", "p", 10, GiB);
    assert_string_equal(fx_reason(e.a, &r, TF_ENOSPC),
                        "node n1: node isolation mode is hard, the pod needs soft");
    r.isolation = TF_ISOLATION_HARD;
    fx_place(e.a, &r, NULL);
    env_free(&e);
}

static void gpu_indices_restrict_the_devices(void **state)
{
    struct env e = env_new(TF_ISOPOL_DYNAMIC);
    fx_node(e.c, 0, "n1", "L4", 2);
    struct tf_alloc_request r = fx_req("ns", "p", 10, GiB);
    int32_t idx[] = {5, 7};
    r.gpu_indices = idx;
    r.n_indices = 2;
    assert_string_equal(fx_reason(e.a, &r, TF_ENOSPC),
                        "node n1: gpu 2/2 eligible, none has an index in gpu-indices 5,7");
    idx[1] = 1;
    struct tf_alloc_result res;
    fx_place(e.a, &r, &res);
    assert_string_equal(gpu_uuid(e.a, res.gpus[0]), "n1-g1");
    env_free(&e);
}

static void shared_needs_a_whole_idle_gpu(void **state)
{
    /* Static policy: shared passes any node mode, then needs the GPU idle. */
    struct env e = env_new(TF_ISOPOL_STATIC);
    fx_node(e.c, 0, "n1", "L4", 1);
    struct tf_alloc_request r = fx_req("ns", "small", 1, MiB);
    fx_place(e.a, &r, NULL);
    r = fx_req("ns", "whole", 0, 0);
    r.isolation = TF_ISOLATION_SHARED;
    assert_string_equal(fx_reason(e.a, &r, TF_ENOSPC),
                        "node n1: gpu 1/1 eligible, shared needs a whole idle GPU, none is idle");
    env_free(&e);
    /* Dynamic policy: a GPU locked soft is not even compatible with shared... */
    e = env_new(TF_ISOPOL_DYNAMIC);
    fx_node(e.c, 0, "n1", "L4", 1);
    r = fx_req("ns", "small", 1, MiB);
    fx_place(e.a, &r, NULL);
    r = fx_req("ns", "whole", 0, 0);
    r.isolation = TF_ISOLATION_SHARED;
    assert_string_equal(
        fx_reason(e.a, &r, TF_ENOSPC),
        "node n1: gpu 1/1 eligible, none compatible with isolation shared (GPUs in use as soft)");
    /* ...while a dedicated soft pod is, and then needs it idle. */
    r.isolation = TF_ISOLATION_UNSET;
    r.dedicated = true;
    r.model = "L4";
    assert_string_equal(
        fx_reason(e.a, &r, TF_ENOSPC),
        "node n1: gpu 1/1 eligible, dedicated-gpu needs a whole idle GPU, none is idle");
    env_free(&e);
}

static void partitioned_pods_need_a_template_with_free_slots(void **state)
{
    struct env e = env_new(TF_ISOPOL_STATIC);
    fx_node_ex(e.c, 0, "l4", "L4", 1, false, false, TF_ISOLATION_PARTITIONED);
    struct tf_alloc_request r = fx_req("ns", "p", 10, 4 * GiB);
    r.isolation = TF_ISOLATION_PARTITIONED;
    assert_string_equal(fx_reason(e.a, &r, TF_ENOSPC),
                        "node l4: gpu 1/1 eligible, L4 cannot be partitioned");
    struct env e2 = env_new(TF_ISOPOL_STATIC);
    fx_node_ex(e2.c, 0, "a1", "A100-80GB", 1, false, false, TF_ISOLATION_PARTITIONED);
    r = fx_req("ns", "big", 200, 40 * GiB); /* 4g.40gb: 4 of 7 compute slots */
    r.isolation = TF_ISOLATION_PARTITIONED;
    fx_place(e2.a, &r, NULL);
    r.name = "big2";
    assert_string_equal(fx_reason(e2.a, &r, TF_ENOSPC),
                        "node a1: gpu 1/1 eligible, no A100-80GB partition template fits 200 "
                        "TFLOPS / 40Gi in the free slots");
    env_free(&e2);
    env_free(&e);
}

static void insufficient_vram_names_need_and_max_free(void **state)
{
    struct env e = env_new(TF_ISOPOL_DYNAMIC);
    fx_node(e.c, 0, "n1", "L4", 8); /* 24Gi each */
    for (uint32_t g = 2; g < 8; g++)
        tf_cluster_set_gpu_phase(e.c, g, TF_GPU_PENDING);
    struct tf_alloc_request r = fx_req("ns", "a", 1, 12 * GiB);
    fx_place(e.a, &r, NULL);
    r.name = "b";
    fx_place(e.a, &r, NULL);
    r.name = "c";
    fx_place(e.a, &r, NULL);
    r = fx_req("ns", "big", 1, 16 * GiB);
    assert_string_equal(fx_reason(e.a, &r, TF_ENOSPC),
                        "node n1: gpu 2/8 available, insufficient VRAM: need 16Gi, max free 12Gi");
    env_free(&e);
}

static void insufficient_tflops_by_value_and_by_percent(void **state)
{
    struct env e = env_new(TF_ISOPOL_DYNAMIC);
    fx_node(e.c, 0, "n1", "L4", 1); /* 121 TFLOPS */
    struct tf_alloc_request r = fx_req("ns", "a", 91, GiB);
    r.res.lim_tflops = TF(91);
    fx_place(e.a, &r, NULL);
    r = fx_req("ns", "b", 31, GiB);
    assert_string_equal(fx_reason(e.a, &r, TF_ENOSPC),
                        "node n1: gpu 1/1 available, insufficient TFLOPS: need 31, max free 30");
    r.res.req_tflops = 0;
    r.res.req_by_percent = true;
    r.res.req_percent = 5000;
    assert_string_equal(
        fx_reason(e.a, &r, TF_ENOSPC),
        "node n1: gpu 1/1 available, insufficient TFLOPS: need 50.00%, max free 24.79%");
    env_free(&e);
}

static void tflops_and_vram_free_on_different_gpus_do_not_add_up(void **state)
{
    struct env e = env_new(TF_ISOPOL_DYNAMIC);
    fx_node(e.c, 0, "n1", "L4", 2);
    struct tf_alloc_request r = fx_req("ns", "a", 100, GiB);
    int32_t i0 = 0, i1 = 1;
    r.gpu_indices = &i0;
    r.n_indices = 1;
    fx_place(e.a, &r, NULL); /* g0: 21 TFLOPS, 23Gi free */
    r = fx_req("ns", "b", 1, 20 * GiB);
    r.gpu_indices = &i1;
    r.n_indices = 1;
    fx_place(e.a, &r, NULL); /* g1: 120 TFLOPS, 4Gi free */
    r = fx_req("ns", "c", 50, 10 * GiB);
    assert_string_equal(
        fx_reason(e.a, &r, TF_ENOSPC),
        "node n1: gpu 2/2 available, no GPU has 50 TFLOPS and 10Gi VRAM free at once");
    env_free(&e);
}

static void limits_beyond_the_oversell_ratio_are_refused(void **state)
{
    struct env e = env_new(TF_ISOPOL_DYNAMIC);
    fx_node(e.c, 0, "n1", "L4", 1); /* 121 TFLOPS x 500 % = 605 virtual */
    struct tf_alloc_request r = fx_req("ns", "a", 1, GiB);
    r.res.lim_tflops = TF(600);
    fx_place(e.a, &r, NULL);
    r.name = "b";
    r.res.lim_tflops = TF(5);
    fx_place(e.a, &r, NULL); /* 605 of 605 */
    r.name = "c";
    r.res.lim_tflops = TF(1);
    assert_string_equal(fx_reason(e.a, &r, TF_ENOSPC),
                        "node n1: gpu 1/1 available, limits 1 TFLOPS / 1Gi VRAM exceed the "
                        "oversubscribed capacity (tflopsOversellRatio 500%, "
                        "vramExpandToHostMem 50%)");
    env_free(&e);
}

static void wrong_model_and_vendor_are_named(void **state)
{
    struct env e = env_new(TF_ISOPOL_DYNAMIC);
    fx_node(e.c, 0, "n1", "L4", 2);
    struct tf_alloc_request r = fx_req("ns", "p", 10, GiB);
    r.model = "H100";
    assert_string_equal(fx_reason(e.a, &r, TF_ENOSPC),
                        "node n1: gpu 2/2 eligible, none of model H100 (node has L4)");
    r.model = "l4";
    r.vendor = "AMD";
    assert_string_equal(fx_reason(e.a, &r, TF_ENOSPC),
                        "node n1: gpu 2/2 eligible, none of vendor AMD (node has NVIDIA)");
    r.vendor = "nvidia";
    fx_place(e.a, &r, NULL);
    env_free(&e);
}

/* Upstream's model names (tensor-fusion.ai/gpu-model: A100_SXM_80G) match the GPUs of that
 * board, whatever name their GPU objects use (table, upstream, NVML). */
static void upstream_model_names_match_the_gpus_of_that_board(void **state)
{
    struct env e = env_new(TF_ISOPOL_DYNAMIC);
    fx_node(e.c, 0, "n1", "A100_SXM_80G", 1);
    fx_node(e.c, 0, "n2", "NVIDIA A100-SXM4-40GB", 1);
    struct tf_alloc_request r = fx_req("ns", "p", 10, GiB);
    r.model = "A100_SXM_40G";
    assert_string_equal(fx_place(e.a, &r, NULL), "n2");
    r.name = "q";
    r.model = "A100-80GB";
    assert_string_equal(fx_place(e.a, &r, NULL), "n1");
    r.name = "s";
    r.model = "H100_SXM";
    assert_string_equal(fx_reason(e.a, &r, TF_ENOSPC),
                        "node n1: gpu 1/1 eligible, none of model H100_SXM (node has A100-80GB)");
    env_free(&e);
}

static void multi_gpu_pods_need_enough_gpus_on_one_node(void **state)
{
    struct env e = env_new(TF_ISOPOL_DYNAMIC);
    fx_node(e.c, 0, "n1", "L4", 2);
    fx_node(e.c, 0, "n2", "L4", 2);
    struct tf_alloc_request r = fx_req("ns", "p", 10, GiB);
    r.gpu_count = 3;
    char buf[1024];
    struct tf_reasons rb;
    tf_reasons_init(&rb, buf, sizeof(buf));
    struct tf_alloc_result res;
    assert_int_equal(tf_alloc_place(e.a, &r, &res, &rb, NULL, 0), TF_ENOSPC);
    assert_int_equal(rb.n, 2);
    const char *r1 = tf_reasons_next(&rb, NULL);
    assert_string_equal(r1, "node n1: needs 3 GPUs on one node, 2 eligible");
    assert_string_equal(tf_reasons_next(&rb, r1), "node n2: needs 3 GPUs on one node, 2 eligible");
    assert_null(tf_reasons_next(&rb, tf_reasons_next(&rb, r1)));
    r.gpu_count = 2;
    fx_place(e.a, &r, &res);
    assert_int_equal(res.ngpus, 2);
    env_free(&e);
}

static void max_workers_per_node_caps_the_pods(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    struct tf_pool_config cfg;
    tf_pool_config_init(&cfg);
    cfg.max_workers_per_node = 1;
    assert_int_equal(tf_cluster_add_pool(c, "p", &cfg, NULL, NULL, 0), 0);
    fx_node(c, 0, "n1", "L4", 2);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_alloc_request r = fx_req("ns", "a", 1, GiB);
    fx_place(a, &r, NULL);
    r.name = "b";
    assert_string_equal(fx_reason(a, &r, TF_ENOSPC), "node n1: max workers per node reached (1/1)");
    assert_int_equal(tf_alloc_release(a, "ns", "a"), 0);
    fx_place(a, &r, NULL);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void filters_run_in_the_issue_order(void **state)
{
    /* The GPU is too small AND of the wrong model: resources come before model. */
    struct env e = env_new(TF_ISOPOL_DYNAMIC);
    fx_node(e.c, 0, "n1", "T4", 1);
    struct tf_alloc_request r = fx_req("ns", "p", 10, 32 * GiB);
    r.model = "H100";
    assert_string_equal(fx_reason(e.a, &r, TF_ENOSPC),
                        "node n1: gpu 1/1 available, insufficient VRAM: need 32Gi, max free 16Gi");
    /* Not running AND wrong model: phase first. */
    tf_cluster_set_gpu_phase(e.c, 0, TF_GPU_PENDING);
    r.res.req_vram = GiB;
    assert_string_equal(fx_reason(e.a, &r, TF_ENOSPC), "node n1: gpu 0/1 in phase Running");
    env_free(&e);
}

static void extender_filter_reports_pools_unknown_nodes_and_scores(void **state)
{
    struct env e = env_new(TF_ISOPOL_DYNAMIC);
    fx_pool(e.c, "other", TF_PLACE_COMPACT_FIRST);
    fx_node(e.c, 0, "n1", "L4", 1);
    fx_node(e.c, 1, "o1", "L4", 1);
    struct tf_alloc_request r = fx_req("ns", "p", 10, GiB);
    const char *names[] = {"n1", "o1", "zz"};
    struct tf_node_verdict v[3];
    char buf[1024];
    struct tf_reasons rb;
    tf_reasons_init(&rb, buf, sizeof(buf));
    assert_int_equal(tf_alloc_filter(e.a, &r, names, 3, v, &rb, NULL, 0), 0);
    assert_true(v[0].fit);
    assert_int_equal(v[0].score, 0); /* empty node, CompactFirst */
    assert_null(v[0].reason);
    assert_false(v[1].fit);
    assert_string_equal(v[1].reason, "node o1: in pool other, the pod asks for pool default");
    assert_false(v[2].fit);
    assert_int_equal(v[2].node, TF_NONE);
    assert_string_equal(v[2].reason, "node zz: not a GPU node of this cluster");
    /* Without a reason buffer the verdicts are the same, the reasons NULL. */
    assert_int_equal(tf_alloc_filter(e.a, &r, names, 3, v, NULL, NULL, 0), 0);
    assert_true(v[0].fit && !v[1].fit && !v[2].fit && !v[1].reason);
    env_free(&e);
}

static void pod_level_errors_come_back_as_codes(void **state)
{
    struct env e = env_new(TF_ISOPOL_DYNAMIC);
    fx_node(e.c, 0, "n1", "A100-80GB", 1);
    struct tf_alloc_request r = fx_req("ns", "p", 10, GiB);
    r.isolation = TF_ISOLATION_PARTITIONED;
    char err[256];
    struct tf_alloc_result res;
    assert_int_equal(tf_alloc_place(e.a, &r, &res, NULL, err, sizeof(err)), TF_ENOTSUP);
    assert_string_equal(err, "pod ns/p: isolation partitioned needs isolationModePolicy static "
                             "(this cluster is dynamic)");
    r = fx_req("ns", "p", 10, GiB);
    r.pool = "nope";
    assert_int_equal(tf_alloc_place(e.a, &r, &res, NULL, err, sizeof(err)), TF_ENOENT);
    assert_string_equal(err, "pod ns/p: unknown GPU pool \"nope\"");
    r = fx_req("ns", "p", 10, 2 * GiB);
    r.res.lim_vram = GiB;
    assert_int_equal(tf_alloc_place(e.a, &r, &res, NULL, err, sizeof(err)), TF_EINVAL);
    assert_string_equal(err, "pod ns/p: limit below request");
    r = fx_req("", "p", 10, GiB);
    assert_int_equal(tf_alloc_place(e.a, &r, &res, NULL, err, sizeof(err)), TF_EINVAL);
    env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(namespace_over_quota_fails_every_node_with_the_quota_reason),
        cmocka_unit_test(gpus_not_running_are_skipped),
        cmocka_unit_test(dynamic_policy_rejects_a_hard_pod_on_gpus_locked_soft),
        cmocka_unit_test(static_policy_rejects_a_soft_pod_on_a_hard_node),
        cmocka_unit_test(gpu_indices_restrict_the_devices),
        cmocka_unit_test(shared_needs_a_whole_idle_gpu),
        cmocka_unit_test(partitioned_pods_need_a_template_with_free_slots),
        cmocka_unit_test(insufficient_vram_names_need_and_max_free),
        cmocka_unit_test(insufficient_tflops_by_value_and_by_percent),
        cmocka_unit_test(tflops_and_vram_free_on_different_gpus_do_not_add_up),
        cmocka_unit_test(limits_beyond_the_oversell_ratio_are_refused),
        cmocka_unit_test(wrong_model_and_vendor_are_named),
        cmocka_unit_test(upstream_model_names_match_the_gpus_of_that_board),
        cmocka_unit_test(multi_gpu_pods_need_enough_gpus_on_one_node),
        cmocka_unit_test(max_workers_per_node_caps_the_pods),
        cmocka_unit_test(filters_run_in_the_issue_order),
        cmocka_unit_test(extender_filter_reports_pools_unknown_nodes_and_scores),
        cmocka_unit_test(pod_level_errors_come_back_as_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
