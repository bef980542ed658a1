/* SPDX-License-Identifier: Apache-2.0
 *
 * Isolation policies (dynamic: per-GPU mode lock; static: per-node mode) and partition
 * (MIG) slots.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/partition.h"
#include "sched_fixture.h"

static struct tf_alloc_request iso_req(const char *name, enum tf_isolation iso, int64_t tflops,
                                       int64_t vram)
{
    struct tf_alloc_request r = fx_req("ns", name, tflops, vram);
    r.isolation = iso;
    return r;
}

static void dynamic_mode_is_set_by_the_first_pod_and_reset_by_the_last(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node(c, 0, "n1", "L4", 2);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    assert_int_equal(c->gpus[0].mode, TF_ISOLATION_UNSET);
    struct tf_alloc_request r = iso_req("s1", TF_ISOLATION_SOFT, 10, GiB);
    struct tf_alloc_result res;
    fx_place(a, &r, &res);
    assert_int_equal(res.gpus[0], 0);
    assert_int_equal(c->gpus[0].mode, TF_ISOLATION_SOFT);
    r = iso_req("s2", TF_ISOLATION_SOFT, 10, GiB);
    fx_place(a, &r, &res);
    assert_int_equal(res.gpus[0], 0); /* same mode shares the GPU */
    r = iso_req("h1", TF_ISOLATION_HARD, 10, GiB);
    fx_place(a, &r, &res);
    assert_int_equal(res.gpus[0], 1); /* the soft GPU is off limits */
    assert_int_equal(c->gpus[1].mode, TF_ISOLATION_HARD);
    assert_int_equal(tf_alloc_release(a, "ns", "s1"), 0);
    assert_int_equal(c->gpus[0].mode, TF_ISOLATION_SOFT); /* s2 still there */
    assert_int_equal(tf_alloc_release(a, "ns", "s2"), 0);
    assert_int_equal(c->gpus[0].mode, TF_ISOLATION_UNSET);
    /* Unlocked again: a hard pod may take it (CompactFirst prefers the used hard GPU first,
     * so ask for more than it has left). */
    r = iso_req("h2", TF_ISOLATION_HARD, 112, GiB);
    fx_place(a, &r, &res);
    assert_int_equal(res.gpus[0], 0);
    assert_int_equal(c->gpus[0].mode, TF_ISOLATION_HARD);
    fx_check(a);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void dynamic_node_hosts_soft_hard_and_shared_on_different_gpus(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node(c, 0, "n1", "H100", 3);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_alloc_request r = iso_req("soft", TF_ISOLATION_SOFT, 10, GiB);
    fx_place(a, &r, NULL);
    r = iso_req("hard", TF_ISOLATION_HARD, 10, GiB);
    fx_place(a, &r, NULL);
    r = iso_req("shared", TF_ISOLATION_SHARED, 0, 0);
    fx_place(a, &r, NULL);
    assert_int_equal(c->gpus[0].mode, TF_ISOLATION_SOFT);
    assert_int_equal(c->gpus[1].mode, TF_ISOLATION_HARD);
    assert_int_equal(c->gpus[2].mode, TF_ISOLATION_SHARED);
    assert_int_equal(c->gpus[2].avail_vram, 0);
    fx_check(a);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void dynamic_node_score_ignores_gpus_locked_to_another_mode(void **state)
{
    /* "a": a busy hard GPU and an empty one; "b": a lightly used soft GPU and an empty one.
     * A soft pod under CompactFirst must not see "a" as packed: its hard load is not
     * shareable. */
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node(c, 0, "a", "L4", 2);
    fx_node(c, 0, "b", "L4", 2);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_alloc_request r = iso_req("busy-hard", TF_ISOLATION_HARD, 100, 20 * GiB);
    assert_int_equal(tf_alloc_reserve(a, &r, "a", NULL, NULL, 0), 0);
    r = iso_req("light-soft", TF_ISOLATION_SOFT, 5, GiB);
    assert_int_equal(tf_alloc_reserve(a, &r, "b", NULL, NULL, 0), 0);
    r = iso_req("probe", TF_ISOLATION_SOFT, 5, GiB);
    assert_string_equal(fx_place(a, &r, NULL), "b");
    /* A hard pod sees it the other way round. */
    r = iso_req("probe-hard", TF_ISOLATION_HARD, 5, GiB);
    assert_string_equal(fx_place(a, &r, NULL), "a");
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void static_policy_uses_each_nodes_mode(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_STATIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node_ex(c, 0, "soft-node", "L4", 1, false, false,
               TF_ISOLATION_UNSET); /* pool default: soft */
    fx_node_ex(c, 0, "hard-node", "L4", 1, false, false, TF_ISOLATION_HARD);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    assert_int_equal(c->gpus[0].mode, TF_ISOLATION_SOFT);
    assert_int_equal(c->gpus[1].mode, TF_ISOLATION_HARD);
    struct tf_alloc_request r = iso_req("h", TF_ISOLATION_HARD, 10, GiB);
    assert_string_equal(fx_place(a, &r, NULL), "hard-node");
    r = iso_req("s", TF_ISOLATION_SOFT, 10, GiB);
    assert_string_equal(fx_place(a, &r, NULL), "soft-node");
    /* Shared takes a whole idle GPU of any node mode... none is idle now. */
    r = iso_req("sh", TF_ISOLATION_SHARED, 0, 0);
    char err[256];
    struct tf_alloc_result res;
    assert_int_equal(tf_alloc_place(a, &r, &res, NULL, err, sizeof(err)), TF_ENOSPC);
    assert_int_equal(tf_alloc_release(a, "ns", "h"), 0);
    assert_int_equal(c->gpus[1].mode, TF_ISOLATION_HARD); /* static modes never reset */
    assert_string_equal(fx_place(a, &r, NULL), "hard-node");
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void mig_slots_bound_the_partitions_per_gpu(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_STATIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node_ex(c, 0, "mig", "A100-80GB", 1, false, false, TF_ISOLATION_PARTITIONED);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    const struct tf_gpu *g = &c->gpus[0];
    /* Seven 1g.10gb slices fit (7 compute slots), the eighth does not. */
    for (int i = 0; i < 7; i++) {
        char nm[8];
        snprintf(nm, sizeof(nm), "s%d", i);
        struct tf_alloc_request r = iso_req(nm, TF_ISOLATION_PARTITIONED, 20, 4 * GiB);
        fx_place(a, &r, NULL);
    }
    assert_int_equal(g->nparts, 7);
    assert_int_equal(g->part_compute, 7);
    assert_int_equal(g->part_memory, 7);
    /* Each slice reserves its template, not the request: 312/7 TFLOPS and 10Gi. */
    assert_int_equal(g->cap_tflops - g->avail_tflops, 7 * (312000 / 7));
    assert_int_equal(g->cap_vram - g->avail_vram, 70 * GiB);
    struct tf_alloc_request r = iso_req("s7", TF_ISOLATION_PARTITIONED, 20, 4 * GiB);
    char err[256];
    struct tf_alloc_result res;
    assert_int_equal(tf_alloc_place(a, &r, &res, NULL, err, sizeof(err)), TF_ENOSPC);
    /* Free three slices: a 3g.40gb needs 3 compute but 4 memory slots: only 4 free (8-4). */
    for (int i = 0; i < 3; i++) {
        char nm[8];
        snprintf(nm, sizeof(nm), "s%d", i);
        assert_int_equal(tf_alloc_release(a, "ns", nm), 0);
    }
    r = iso_req("big", TF_ISOLATION_PARTITIONED, 100, 30 * GiB);
    fx_place(a, &r, &res);
    const struct tf_alloc_record *rec = tf_alloc_record_at(a, tf_alloc_find(a, "ns", "big"));
    const struct tf_partition_profile *pp = tf_cluster_profile(c, g);
    assert_string_equal(pp->templates[tf_alloc_record_slot(rec, 0)->part].id, "3g.40gb");
    assert_int_equal(g->part_compute, 7);
    assert_int_equal(g->part_memory, 8);
    fx_check(a);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void a_partition_template_can_be_asked_for_by_id(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_STATIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node_ex(c, 0, "mig", "H100", 1, false, false, TF_ISOLATION_PARTITIONED);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_alloc_request r = iso_req("p", TF_ISOLATION_PARTITIONED, 1, GiB);
    r.partition_template = "1g.20gb"; /* not the smallest: 1g.10gb would do */
    fx_place(a, &r, NULL);
    assert_int_equal(c->gpus[0].part_memory, 2);
    assert_int_equal(c->gpus[0].cap_vram - c->gpus[0].avail_vram, 20 * GiB);
    r.name = "q";
    r.partition_template = "9g.1tb";
    char err[256];
    struct tf_alloc_result res;
    assert_int_equal(tf_alloc_place(a, &r, &res, NULL, err, sizeof(err)), TF_ENOSPC);
    fx_check(a);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void custom_partition_profiles_replace_the_builtin_ones(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_STATIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node_ex(c, 0, "n", "L40S", 1, false, false, TF_ISOLATION_PARTITIONED);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_partition_profile p;
    memset(&p, 0, sizeof(p));
    p.model = tf_gpu_model_find("L40S");
    p.compute_total = 4;
    p.memory_total = 4;
    p.ntemplates = 1;
    strcpy(p.templates[0].id, "quarter");
    p.templates[0].compute_slots = 1;
    p.templates[0].memory_slots = 1;
    p.templates[0].tflops_milli = TF(90);
    p.templates[0].vram_bytes = 12 * GiB;
    char err[256];
    assert_int_equal(tf_cluster_set_partition_profile(c, &p, err, sizeof(err)), 0);
    for (int i = 0; i < 4; i++) {
        char nm[8];
        snprintf(nm, sizeof(nm), "q%d", i);
        struct tf_alloc_request r = iso_req(nm, TF_ISOLATION_PARTITIONED, 50, 8 * GiB);
        fx_place(a, &r, NULL);
    }
    /* Replacing a profile while partitions exist would orphan them. */
    assert_int_equal(tf_cluster_set_partition_profile(c, &p, err, sizeof(err)), TF_EBUSY);
    /* A template larger than the GPU is refused. */
    p.templates[0].vram_bytes = 64 * GiB;
    assert_int_equal(tf_cluster_set_partition_profile(c, &p, err, sizeof(err)), TF_EINVAL);
    assert_string_equal(err,
                        "L40S: template quarter: resources must be positive and within the GPU's");
    fx_check(a);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void builtin_mig_profiles_follow_nvidias_tables(void **state)
{
    struct tf_partition_profile p;
    assert_int_equal(tf_partition_builtin(tf_gpu_model_find("A100-40GB"), &p), 0);
    assert_int_equal(p.compute_total, 7);
    assert_int_equal(p.memory_total, 8);
    assert_string_equal(p.templates[0].id, "1g.5gb");
    assert_int_equal(p.templates[0].vram_bytes, 5 * GiB);
    assert_int_equal(tf_partition_builtin(tf_gpu_model_find("H200"), &p), 0);
    assert_string_equal(p.templates[p.ntemplates - 1].id, "7g.141gb");
    assert_int_equal(tf_partition_builtin(tf_gpu_model_find("L4"), &p), TF_ENOENT);
    assert_int_equal(tf_partition_validate(&p, NULL, 0), 0);
    /* Smallest fit, or -1. */
    assert_int_equal(tf_partition_builtin(tf_gpu_model_find("A100-80GB"), &p), 0);
    int t = tf_partition_match(&p, TF(50), 5 * GiB, 7, 8, NULL);
    assert_string_equal(p.templates[t].id, "2g.20gb");
    assert_int_equal(tf_partition_match(&p, TF(50), 5 * GiB, 1, 8, NULL), -1);
    assert_int_equal(tf_partition_match(&p, TF(400), GiB, 7, 8, NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dynamic_mode_is_set_by_the_first_pod_and_reset_by_the_last),
        cmocka_unit_test(dynamic_node_hosts_soft_hard_and_shared_on_different_gpus),
        cmocka_unit_test(dynamic_node_score_ignores_gpus_locked_to_another_mode),
        cmocka_unit_test(static_policy_uses_each_nodes_mode),
        cmocka_unit_test(mig_slots_bound_the_partitions_per_gpu),
        cmocka_unit_test(a_partition_template_can_be_asked_for_by_id),
        cmocka_unit_test(custom_partition_profiles_replace_the_builtin_ones),
        cmocka_unit_test(builtin_mig_profiles_follow_nvidias_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
