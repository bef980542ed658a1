/* SPDX-License-Identifier: Apache-2.0
 *
 * QoS preemption plans: high/critical pods may evict low/medium ones; the victim list is
 * minimal, prefers low over medium, picks the node needing the fewest evictions, and the
 * allocator is left exactly as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/preempt.h"
#include "sched_fixture.h"

static void put(struct tf_alloc *a, const char *node, const char *name, enum tf_qos qos,
                int64_t vram)
{
    struct tf_alloc_request r = fx_req("ns", name, 1, vram);
    r.qos = qos;
    char err[256];
    if (tf_alloc_reserve(a, &r, node, NULL, err, sizeof(err)))
        fail_msg("reserve %s: %s", name, err);
}

static const char *victim(const struct tf_alloc *a, const struct tf_preempt_plan *p, unsigned i)
{
    return tf_alloc_record_key(tf_alloc_record_at(a, p->victims[i]));
}

static void snapshot(const struct tf_cluster *c, int64_t *avail)
{
    for (uint32_t g = 0; g < c->ngpus; g++)
        avail[g] = c->gpus[g].avail_vram * 1000 + c->gpus[g].mode;
}

static void critical_pod_evicts_the_fewest_low_pods(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node(c, 0, "n1", "L4", 1);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    put(a, "n1", "l0", TF_QOS_LOW, 6 * GiB);
    put(a, "n1", "l1", TF_QOS_LOW, 6 * GiB);
    put(a, "n1", "l2", TF_QOS_LOW, 6 * GiB);
    put(a, "n1", "l3", TF_QOS_LOW, 6 * GiB);
    int64_t before[1], after[1];
    snapshot(c, before);
    struct tf_alloc_request r = fx_req("ns", "crit", 1, 10 * GiB);
    r.qos = TF_QOS_CRITICAL;
    struct tf_preempt_plan plan;
    char err[256];
    assert_int_equal(tf_preempt_plan(a, &r, &plan, err, sizeof(err)), 0);
    assert_int_equal(plan.nvictims, 2);
    assert_string_equal(c->nodes[plan.placement.node].name, "n1");
    snapshot(c, after);
    assert_memory_equal(before, after, sizeof(before));
    assert_int_equal(tf_alloc_count(a), 4);
    fx_check(a);
    /* Executing the plan makes the pod fit. */
    for (unsigned i = 0; i < plan.nvictims; i++) {
        char key[64];
        strcpy(key, victim(a, &plan, i));
        *strchr(key, '/') = '\0';
        assert_int_equal(tf_alloc_release(a, key, key + strlen(key) + 1), 0);
    }
    fx_place(a, &r, NULL);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void low_pods_go_before_medium_ones(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node(c, 0, "n1", "L4", 1);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    put(a, "n1", "med", TF_QOS_MEDIUM, 12 * GiB);
    put(a, "n1", "low-a", TF_QOS_LOW, 6 * GiB);
    put(a, "n1", "low-b", TF_QOS_LOW, 6 * GiB);
    struct tf_alloc_request r = fx_req("ns", "hi", 1, 12 * GiB);
    r.qos = TF_QOS_HIGH;
    struct tf_preempt_plan plan;
    assert_int_equal(tf_preempt_plan(a, &r, &plan, NULL, 0), 0);
    assert_int_equal(plan.nvictims, 2);
    assert_string_equal(victim(a, &plan, 0), "ns/low-a");
    assert_string_equal(victim(a, &plan, 1), "ns/low-b");
    fx_check(a);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void high_and_critical_pods_are_never_victims(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node(c, 0, "n1", "L4", 1);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    put(a, "n1", "h", TF_QOS_HIGH, 12 * GiB);
    put(a, "n1", "k", TF_QOS_CRITICAL, 10 * GiB);
    put(a, "n1", "l", TF_QOS_LOW, 2 * GiB);
    struct tf_alloc_request r = fx_req("ns", "crit", 1, 8 * GiB);
    r.qos = TF_QOS_CRITICAL;
    struct tf_preempt_plan plan;
    char err[256];
    assert_int_equal(tf_preempt_plan(a, &r, &plan, err, sizeof(err)), TF_ENOSPC);
    assert_string_equal(err,
                        "pod ns/crit: evicting every low and medium pod of pool p makes no room");
    fx_check(a);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void only_high_and_critical_pods_may_preempt(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node(c, 0, "n1", "L4", 1);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    put(a, "n1", "l", TF_QOS_LOW, 20 * GiB);
    struct tf_alloc_request r = fx_req("ns", "m", 1, 8 * GiB);
    r.qos = TF_QOS_MEDIUM;
    struct tf_preempt_plan plan;
    char err[256];
    assert_int_equal(tf_preempt_plan(a, &r, &plan, err, sizeof(err)), TF_EPERM);
    assert_string_equal(err, "pod ns/m: only high and critical pods may preempt");
    assert_true(tf_preempt_may(TF_QOS_HIGH, TF_QOS_MEDIUM));
    assert_false(tf_preempt_may(TF_QOS_HIGH, TF_QOS_HIGH));
    assert_false(tf_preempt_may(TF_QOS_MEDIUM, TF_QOS_LOW));
    /* A pod that fits needs no victims. */
    r = fx_req("ns", "fits", 1, GiB);
    r.qos = TF_QOS_HIGH;
    assert_int_equal(tf_preempt_plan(a, &r, &plan, err, sizeof(err)), 0);
    assert_int_equal(plan.nvictims, 0);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void the_node_with_the_fewest_victims_wins(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node(c, 0, "many", "L4", 1);
    fx_node(c, 0, "one", "L4", 1);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    put(a, "many", "m1", TF_QOS_LOW, 8 * GiB);
    put(a, "many", "m2", TF_QOS_LOW, 8 * GiB);
    put(a, "many", "m3", TF_QOS_LOW, 8 * GiB);
    put(a, "one", "o1", TF_QOS_MEDIUM, 16 * GiB);
    put(a, "one", "o2", TF_QOS_HIGH, 8 * GiB);
    struct tf_alloc_request r = fx_req("ns", "big", 1, 16 * GiB);
    r.qos = TF_QOS_HIGH;
    struct tf_preempt_plan plan;
    assert_int_equal(tf_preempt_plan(a, &r, &plan, NULL, 0), 0);
    assert_string_equal(c->nodes[plan.placement.node].name, "one");
    assert_int_equal(plan.nvictims, 1);
    assert_string_equal(victim(a, &plan, 0), "ns/o1");
    /* Restricted to the scheduler's candidates: only "many" is offered, so its two low pods
     * go there; a node outside the pool in the list is ignored. */
    uint32_t many = tf_cluster_node_find(c, "many", 4), bogus = 9999;
    uint32_t only[] = {bogus, many};
    assert_int_equal(tf_preempt_plan_on(a, &r, only, 2, &plan, NULL, 0), 0);
    assert_string_equal(c->nodes[plan.placement.node].name, "many");
    assert_int_equal(plan.nvictims, 2);
    /* Where nothing allowed can make room, it says so. */
    uint32_t none[] = {bogus};
    char err[256];
    assert_int_equal(tf_preempt_plan_on(a, &r, none, 1, &plan, err, sizeof(err)), TF_ENOSPC);
    fx_check(a);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void a_multi_gpu_victim_counts_once(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    fx_node(c, 0, "n1", "L4", 2);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct tf_alloc_request r = fx_req("ns", "wide", 1, 20 * GiB);
    r.gpu_count = 2;
    r.qos = TF_QOS_LOW;
    fx_place(a, &r, NULL);
    r = fx_req("ns", "pair", 1, 10 * GiB);
    r.gpu_count = 2;
    r.qos = TF_QOS_CRITICAL;
    struct tf_preempt_plan plan;
    assert_int_equal(tf_preempt_plan(a, &r, &plan, NULL, 0), 0);
    assert_int_equal(plan.nvictims, 1);
    assert_string_equal(victim(a, &plan, 0), "ns/wide");
    assert_int_equal(plan.placement.ngpus, 2);
    fx_check(a);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(critical_pod_evicts_the_fewest_low_pods),
        cmocka_unit_test(low_pods_go_before_medium_ones),
        cmocka_unit_test(high_and_critical_pods_are_never_victims),
        cmocka_unit_test(only_high_and_critical_pods_may_preempt),
        cmocka_unit_test(the_node_with_the_fewest_victims_wins),
        cmocka_unit_test(a_multi_gpu_victim_counts_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
