/* SPDX-License-Identifier: Apache-2.0
 *
 * Where pods land: the three placement modes, score weights, NVLink/NUMA preference for
 * multi-GPU pods, container splits, whole-GPU pods, percent requests, pools, and the extender's
 * reserve / release / restore cycle.
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
    struct tf_alloc *a;
};

static struct env env_new(enum tf_placement_mode mode, unsigned nodes, unsigned gpus)
{
    struct env e;
    e.c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(e.c, "default", mode);
    for (unsigned i = 0; i < nodes; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%u", i + 1);
        fx_node(e.c, 0, name, "L4", gpus);
    }
    e.a = tf_alloc_new(e.c, NULL);
    return e;
}

static void env_free(struct env *e)
{
    fx_check(e->a);
    tf_alloc_destroy(e->a);
    tf_cluster_destroy(e->c);
}

/* Places pod NAME (10 TFLOPS, 4Gi) and returns "node/gpu-uuid". */
static const char *put(struct env *e, const char *name)
{
    static char where[128];
    struct tf_alloc_request r = fx_req("ns", name, 10, 4 * GiB);
    struct tf_alloc_result res;
    fx_place(e->a, &r, &res);
    snprintf(where, sizeof(where), "%s", gpu_uuid(e->a, res.gpus[0]));
    return where;
}

static void compact_first_fills_one_gpu_and_node_before_the_next(void **state)
{
    struct env e = env_new(TF_PLACE_COMPACT_FIRST, 2, 2);
    /* An L4 holds 6 such pods by VRAM (24Gi / 4Gi). */
    for (int i = 0; i < 6; i++) {
        char nm[8];
        snprintf(nm, sizeof(nm), "p%d", i);
        assert_string_equal(put(&e, nm), "n1-g0");
    }
    for (int i = 6; i < 12; i++) {
        char nm[8];
        snprintf(nm, sizeof(nm), "p%d", i);
        assert_string_equal(put(&e, nm), "n1-g1");
    }
    assert_string_equal(put(&e, "p12"), "n2-g0");
    env_free(&e);
}

static void low_load_first_spreads_across_nodes_and_gpus(void **state)
{
    struct env e = env_new(TF_PLACE_LOW_LOAD_FIRST, 2, 2);
    assert_string_equal(put(&e, "a"), "n1-g0");
    assert_string_equal(put(&e, "b"), "n2-g0");
    assert_string_equal(put(&e, "c"), "n1-g1");
    assert_string_equal(put(&e, "d"), "n2-g1");
    assert_string_equal(put(&e, "e"), "n1-g0");
    env_free(&e);
}

static void node_compact_gpu_low_load_packs_nodes_and_spreads_gpus(void **state)
{
    struct env e = env_new(TF_PLACE_NODE_COMPACT_GPU_LOW_LOAD, 2, 2);
    assert_string_equal(put(&e, "a"), "n1-g0");
    assert_string_equal(put(&e, "b"), "n1-g1");
    assert_string_equal(put(&e, "c"), "n1-g0");
    assert_string_equal(put(&e, "d"), "n1-g1");
    env_free(&e);
}

static void scores_weight_vram_over_tflops_by_default_and_are_configurable(void **state)
{
    for (int flip = 0; flip < 2; flip++) {
        struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
        struct tf_pool_config cfg;
        tf_pool_config_init(&cfg);
        cfg.placement = TF_PLACE_COMPACT_FIRST;
        if (flip) {
            cfg.vram_weight = 300;
            cfg.tflops_weight = 700;
        }
        assert_int_equal(tf_cluster_add_pool(c, "p", &cfg, NULL, NULL, 0), 0);
        fx_node(c, 0, "vram-heavy", "L4", 1);
        fx_node(c, 0, "tflops-heavy", "L4", 1);
        struct tf_alloc *a = tf_alloc_new(c, NULL);
        struct tf_alloc_request r = fx_req("ns", "v", 10, 12 * GiB); /* 50 % VRAM, 8 % TFLOPS */
        assert_int_equal(tf_alloc_reserve(a, &r, "vram-heavy", NULL, NULL, 0), 0);
        r = fx_req("ns", "t", 90, 2 * GiB); /* 74 % TFLOPS, 8 % VRAM */
        assert_int_equal(tf_alloc_reserve(a, &r, "tflops-heavy", NULL, NULL, 0), 0);
        const char *names[] = {"vram-heavy", "tflops-heavy"};
        int sc[2];
        r = fx_req("ns", "probe", 1, GiB);
        assert_int_equal(tf_alloc_score(a, &r, names, 2, sc, NULL, 0), 0);
        if (!flip) { /* 0.7 x 50 + 0.3 x 8.26 = 37.5; 0.7 x 8.33 + 0.3 x 74.4 = 28.1 */
            assert_int_equal(sc[0], 37);
            assert_int_equal(sc[1], 28);
            assert_string_equal(fx_place(a, &r, NULL), "vram-heavy");
        } else { /* 0.3 x 50 + 0.7 x 8.26 = 20.8; 0.3 x 8.33 + 0.7 x 74.4 = 54.5 */
            assert_int_equal(sc[0], 21);
            assert_int_equal(sc[1], 55);
            assert_string_equal(fx_place(a, &r, NULL), "tflops-heavy");
        }
        tf_alloc_destroy(a);
        tf_cluster_destroy(c);
    }
}

static void multi_gpu_pods_prefer_nvlink_then_same_numa(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    /* n1: 4 GPUs, NVLink only between indexes 2 and 3; NUMA 0 = {0,1}, 1 = {2,3}. */
    struct tf_gpu_spec g[4];
    memset(g, 0, sizeof(g));
    const char *u1[] = {"a0", "a1", "a2", "a3"};
    for (int i = 0; i < 4; i++) {
        g[i].uuid = u1[i];
        g[i].model = tf_gpu_model_find("H100");
        g[i].index = i;
        g[i].numa = (int16_t)(i / 2);
        g[i].phase = TF_GPU_RUNNING;
    }
    g[2].nvlink = UINT64_C(1) << 3; /* one end is enough: links are symmetric */
    struct tf_node_spec ns = {"n1", TF_ISOLATION_UNSET, 0, 0, g, 4};
    assert_int_equal(tf_cluster_add_node(c, 0, &ns, NULL, NULL, 0), 0);
    assert_true(c->gpus[3].nvlink & (UINT64_C(1) << 2));
    /* n2: no NVLink; NUMA 0 = {0,2}, 1 = {1,3}. */
    const char *u2[] = {"b0", "b1", "b2", "b3"};
    for (int i = 0; i < 4; i++) {
        g[i].uuid = u2[i];
        g[i].numa = (int16_t)(i % 2);
        g[i].nvlink = 0;
    }
    ns.name = "n2";
    assert_int_equal(tf_cluster_add_node(c, 0, &ns, NULL, NULL, 0), 0);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_alloc_request r = fx_req("ns", "pair", 100, 10 * GiB);
    r.gpu_count = 2;
    struct tf_alloc_result res;
    assert_int_equal(tf_alloc_reserve(a, &r, "n1", &res, NULL, 0), 0);
    assert_string_equal(gpu_uuid(a, res.gpus[0]), "a2");
    assert_string_equal(gpu_uuid(a, res.gpus[1]), "a3");
    r.name = "pair2";
    assert_int_equal(tf_alloc_reserve(a, &r, "n2", &res, NULL, 0), 0);
    assert_string_equal(gpu_uuid(a, res.gpus[0]), "b0");
    assert_string_equal(gpu_uuid(a, res.gpus[1]), "b2");
    tf_alloc_destroy(a);

    /* Topology picks GPUs inside the node; it does not reorder nodes: of two empty nodes the
     * first in the index wins, and there the pair stays on one NUMA node, the least used GPUs
     * first (NodeCompactGPULowLoad spreads inside the node). */
    struct tf_cluster *c2 = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c2, "p", TF_PLACE_NODE_COMPACT_GPU_LOW_LOAD);
    fx_node_ex(c2, 0, "plain", "H100", 4, false, true, TF_ISOLATION_UNSET);
    fx_node_ex(c2, 0, "linked", "H100", 4, true, false, TF_ISOLATION_UNSET);
    a = tf_alloc_new(c2, NULL);
    struct tf_alloc_request one = fx_req("ns", "one", 10, GiB);
    assert_int_equal(tf_alloc_reserve(a, &one, "plain", NULL, NULL, 0), 0); /* on plain-g0 */
    r = fx_req("ns", "pair", 100, 10 * GiB);
    r.gpu_count = 2;
    assert_string_equal(fx_place(a, &r, &res), "plain"); /* the fuller node */
    assert_string_equal(gpu_uuid(a, res.gpus[0]), "plain-g2");
    assert_string_equal(gpu_uuid(a, res.gpus[1]), "plain-g3"); /* NUMA 1, both idle */
    tf_alloc_destroy(a);
    tf_cluster_destroy(c2);
    tf_cluster_destroy(c);
}

static void container_gpu_count_splits_the_pods_gpus(void **state)
{
    struct env e = env_new(TF_PLACE_COMPACT_FIRST, 1, 4);
    struct tf_alloc_container ctr[] = {{"container-a", 1}, {"container-b", 2}};
    struct tf_alloc_request r = fx_req("ns", "multi", 10, GiB);
    r.containers = ctr;
    r.ncontainers = 2;
    struct tf_alloc_result res;
    fx_place(e.a, &r, &res);
    assert_int_equal(res.ngpus, 3); /* container-a: gpus[0], container-b: gpus[1..2] */
    assert_true(res.gpus[0] != res.gpus[1] && res.gpus[1] != res.gpus[2] &&
                res.gpus[0] != res.gpus[2]);
    const struct tf_alloc_record *rec = tf_alloc_record_at(e.a, tf_alloc_find(e.a, "ns", "multi"));
    assert_int_equal(rec->ngpus, 3);
    for (unsigned i = 0; i < 3; i++)
        assert_int_equal(tf_alloc_record_slot(rec, i)->gpu, res.gpus[i]);
    /* gpu-count must agree with the split. */
    r.name = "bad";
    r.gpu_count = 2;
    char err[256];
    assert_int_equal(tf_alloc_place(e.a, &r, &res, NULL, err, sizeof(err)), TF_EINVAL);
    assert_string_equal(err, "pod ns/bad: container-gpu-count sums to 3 GPUs, gpu-count is 2");
    env_free(&e);
}

static void dedicated_gpu_takes_a_whole_gpu_of_the_model(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node(c, 0, "l4", "L4", 1);
    fx_node(c, 0, "a100", "A100-80GB", 1);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_alloc_request r = fx_req("ns", "d", 1, GiB);
    r.dedicated = true;
    r.model = "A100";
    struct tf_alloc_result res;
    assert_string_equal(fx_place(a, &r, &res), "a100");
    const struct tf_gpu *g = &c->gpus[res.gpus[0]];
    assert_int_equal(g->avail_tflops, 0);
    assert_int_equal(g->avail_vram, 0);
    assert_int_equal(g->mode, TF_ISOLATION_SOFT); /* dedicated keeps the pod's isolation */
    r = fx_req("ns", "x", 1, GiB);
    r.model = "A100";
    char buf[512];
    struct tf_reasons rb;
    tf_reasons_init(&rb, buf, sizeof(buf));
    assert_int_equal(tf_alloc_place(a, &r, &res, &rb, NULL, 0), TF_ENOSPC);
    assert_int_equal(tf_alloc_release(a, "ns", "d"), 0);
    assert_int_equal(g->avail_tflops, g->cap_tflops);
    assert_int_equal(g->mode, TF_ISOLATION_UNSET);
    fx_check(a);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void shared_takes_whole_idle_gpus_and_locks_them(void **state)
{
    struct env e = env_new(TF_PLACE_COMPACT_FIRST, 1, 2);
    struct tf_alloc_request r = fx_req("ns", "s", 0, 0);
    r.isolation = TF_ISOLATION_SHARED;
    r.gpu_count = 2;
    struct tf_alloc_result res;
    fx_place(e.a, &r, &res);
    for (int i = 0; i < 2; i++) {
        const struct tf_gpu *g = &e.c->gpus[res.gpus[i]];
        assert_int_equal(g->avail_tflops, 0);
        assert_int_equal(g->avail_vram, 0);
        assert_int_equal(g->mode, TF_ISOLATION_SHARED);
    }
    r = fx_req("ns", "t", 1, MiB);
    char err[256];
    assert_int_equal(tf_alloc_place(e.a, &r, &res, NULL, err, sizeof(err)), TF_ENOSPC);
    assert_int_equal(tf_alloc_release(e.a, "ns", "s"), 0);
    fx_place(e.a, &r, &res);
    env_free(&e);
}

static void compute_percent_converts_with_each_gpus_tflops(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node(c, 0, "l4", "L4", 1);
    fx_node(c, 0, "a100", "A100-80GB", 1);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_alloc_request r = fx_req("ns", "half-l4", 0, GiB);
    r.res.req_by_percent = true;
    r.res.req_percent = 5000;
    assert_int_equal(tf_alloc_reserve(a, &r, "l4", NULL, NULL, 0), 0);
    r.name = "half-a100";
    assert_int_equal(tf_alloc_reserve(a, &r, "a100", NULL, NULL, 0), 0);
    assert_int_equal(c->gpus[0].cap_tflops - c->gpus[0].avail_tflops, 60500);
    assert_int_equal(c->gpus[1].cap_tflops - c->gpus[1].avail_tflops, 156000);
    fx_check(a);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void pods_schedule_only_within_their_pool(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c, "training", TF_PLACE_COMPACT_FIRST);
    struct tf_pool_config cfg;
    tf_pool_config_init(&cfg);
    cfg.is_default = true;
    assert_int_equal(tf_cluster_add_pool(c, "inference", &cfg, NULL, NULL, 0), 0);
    fx_node(c, 0, "t1", "H100", 1);
    fx_node(c, 1, "i1", "L4", 1);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_alloc_request r = fx_req("ns", "inf", 1, GiB);
    assert_string_equal(fx_place(a, &r, NULL), "i1"); /* the default pool */
    r.name = "train";
    r.pool = "training";
    assert_string_equal(fx_place(a, &r, NULL), "t1");
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void extender_reserve_binds_and_release_is_idempotent(void **state)
{
    struct env e = env_new(TF_PLACE_COMPACT_FIRST, 2, 1);
    struct tf_alloc_request r = fx_req("ns", "p", 10, GiB);
    struct tf_alloc_result res;
    char err[256];
    assert_int_equal(tf_alloc_reserve(e.a, &r, "n2", &res, err, sizeof(err)), 0);
    assert_string_equal(e.c->nodes[res.node].name, "n2");
    assert_int_equal(tf_alloc_reserve(e.a, &r, "n1", &res, err, sizeof(err)), TF_EEXIST);
    assert_int_equal(tf_alloc_place(e.a, &r, &res, NULL, err, sizeof(err)), TF_EEXIST);
    assert_int_equal(tf_alloc_reserve(e.a, &r, "zz", &res, err, sizeof(err)), TF_ENOENT);
    assert_int_equal(tf_alloc_count(e.a), 1);
    fx_check(e.a);
    assert_int_equal(tf_alloc_release(e.a, "ns", "p"), 0);
    assert_int_equal(tf_alloc_release(e.a, "ns", "p"), TF_ENOENT);
    assert_int_equal(tf_alloc_release(e.a, "ns", "never"), TF_ENOENT);
    assert_int_equal(tf_alloc_count(e.a), 0);
    for (uint32_t g = 0; g < e.c->ngpus; g++)
        assert_int_equal(e.c->gpus[g].avail_vram, e.c->gpus[g].cap_vram);
    /* A node that no longer fits at bind time is refused with its reason. */
    r = fx_req("ns", "huge", 10, 30 * GiB);
    assert_int_equal(tf_alloc_reserve(e.a, &r, "n1", &res, err, sizeof(err)), TF_ENOSPC);
    assert_string_equal(err, "node n1: gpu 1/1 available, insufficient VRAM: need 30Gi, max "
                             "free 24Gi");
    env_free(&e);
}

static void restart_rebuilds_allocations_from_pod_annotations(void **state)
{
    struct env e = env_new(TF_PLACE_COMPACT_FIRST, 2, 2);
    struct tf_alloc_request r = fx_req("ns", "old", 10, 20 * GiB);
    const char *ids[] = {"n2-g1"};
    char err[256];
    assert_int_equal(tf_alloc_restore(e.a, &r, "n2", ids, 1, err, sizeof(err)), 0);
    assert_int_equal(e.c->gpus[3].avail_vram, 4 * GiB);
    assert_int_equal(e.c->gpus[3].mode, TF_ISOLATION_SOFT);
    /* Capacity is enforced, so a restart can never double-book. */
    r.name = "old2";
    assert_int_equal(tf_alloc_restore(e.a, &r, "n2", ids, 1, err, sizeof(err)), TF_ENOSPC);
    assert_string_equal(err, "pod ns/old2: GPU n2-g1: not enough TFLOPS or VRAM left");
    assert_int_equal(tf_alloc_restore(e.a, &r, "n1", ids, 1, err, sizeof(err)), TF_ENOENT);
    const char *bad[] = {"nope"};
    assert_int_equal(tf_alloc_restore(e.a, &r, "n2", bad, 1, err, sizeof(err)), TF_ENOENT);
    r.isolation = TF_ISOLATION_HARD;
    r.res.req_vram = GiB;
    assert_int_equal(tf_alloc_restore(e.a, &r, "n2", ids, 1, err, sizeof(err)), TF_ENOSPC);
    assert_string_equal(
        err, "pod ns/old2: GPU n2-g1: isolation mode conflicts with its current workloads");
    const char *two[] = {"n1-g0", "n1-g1"};
    r.isolation = TF_ISOLATION_UNSET;
    assert_int_equal(tf_alloc_restore(e.a, &r, "n1", two, 2, err, sizeof(err)), 0);
    /* New pods see the restored usage: n2 is the fuller node but only its other GPU fits. */
    r = fx_req("ns", "new", 10, 20 * GiB);
    struct tf_alloc_result res;
    fx_place(e.a, &r, &res);
    assert_string_equal(gpu_uuid(e.a, res.gpus[0]), "n2-g0");
    env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(compact_first_fills_one_gpu_and_node_before_the_next),
        cmocka_unit_test(low_load_first_spreads_across_nodes_and_gpus),
        cmocka_unit_test(node_compact_gpu_low_load_packs_nodes_and_spreads_gpus),
        cmocka_unit_test(scores_weight_vram_over_tflops_by_default_and_are_configurable),
        cmocka_unit_test(multi_gpu_pods_prefer_nvlink_then_same_numa),
        cmocka_unit_test(container_gpu_count_splits_the_pods_gpus),
        cmocka_unit_test(dedicated_gpu_takes_a_whole_gpu_of_the_model),
        cmocka_unit_test(shared_takes_whole_idle_gpus_and_locks_them),
        cmocka_unit_test(compute_percent_converts_with_each_gpus_tflops),
        cmocka_unit_test(pods_schedule_only_within_their_pool),
        cmocka_unit_test(extender_reserve_binds_and_release_is_idempotent),
        cmocka_unit_test(restart_rebuilds_allocations_from_pod_annotations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
