/* SPDX-License-Identifier: Apache-2.0
 *
 * Defragmentation planning (src/core/defrag.h), seed 002 step 5: candidate selection by the
 * share of GPUs in use, every skip rule (unschedulable, do-not-disrupt, foreign GPU pods,
 * missing PodDisruptionBudget, young workers), the simulation on a copy of the allocator's
 * state (targets at least as utilised, the real allocator's fit, the original state untouched),
 * one-at-a-time eviction events, maxDuration and the schedule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../core/sched_fixture.h"
#include "common/err.h"
#include "core/alloc_copy.h"
#include "core/defrag.h"
#include "core/timeutil.h"
#include "core/tzload.h"

#define NOW (INT64_C(1714532400000)) /* 2024-05-01T03:00:00Z */
#define HOUR (3600 * INT64_C(1000))

struct env {
    struct tf_cluster *c;
    struct tf_alloc *a;
    struct tf_defrag_config cfg;
    struct tf_defrag_node nodes[16];
    size_t nnodes;
    struct tf_defrag_pod pods[64];
    char names[64][32];
    size_t npods;
};

static struct env *env_new(enum tf_placement_mode mode, unsigned nnodes)
{
    struct env *e = calloc(1, sizeof(*e));
    e->c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    uint32_t pool = fx_pool(e->c, "default", mode);
    for (unsigned i = 0; i < nnodes; i++) {
        char name[16];
        snprintf(name, sizeof(name), "n%u", i + 1);
        fx_node(e->c, pool, name, "A100-80GB", 4);
    }
    e->a = tf_alloc_new(e->c, NULL);
    struct tf_pool_efficiency pe;
    tf_pool_efficiency_init(&pe);
    e->cfg = pe.defrag;
    e->cfg.enabled = true;
    strcpy(e->cfg.timezone, "UTC");
    return e;
}

static void env_free(struct env *e)
{
    tf_alloc_destroy(e->a);
    tf_cluster_destroy(e->c);
    free(e);
}

/* Places pod NAME (60Gi: one per GPU) on NODE, created AGE ago, PDB-covered. */
static struct tf_defrag_pod *pod(struct env *e, const char *name, const char *node, int64_t vram)
{
    strcpy(e->names[e->npods], name);
    struct tf_alloc_request r = fx_req("team", e->names[e->npods], 10, vram);
    char err[512];
    if (tf_alloc_reserve(e->a, &r, node, NULL, err, sizeof(err)))
        fail_msg("reserve %s on %s: %s", name, node, err);
    fx_check(e->a);
    struct tf_defrag_pod *p = &e->pods[e->npods++];
    *p = (struct tf_defrag_pod){"team", e->names[e->npods - 1], node, NOW - 24 * HOUR, true, NULL};
    return p;
}

static struct tf_defrag_node *node_facts(struct env *e, const char *name)
{
    struct tf_defrag_node *n = &e->nodes[e->nnodes++];
    memset(n, 0, sizeof(*n));
    n->name = name;
    return n;
}

static struct tf_defrag_plan plan(struct env *e, int64_t now, int64_t started)
{
    struct tf_defrag_input in = {e->a,    "default", &e->cfg, e->nodes, e->nnodes,
                                 e->pods, e->npods,  now,     started,  false};
    struct tf_defrag_plan p;
    char err[256];
    int rc = tf_defrag_plan(&in, &p, err, sizeof(err));
    if (rc)
        fail_msg("plan: %s", err);
    return p;
}

static const struct tf_defrag_node_result *result(const struct tf_defrag_plan *p, const char *node)
{
    for (size_t i = 0; i < p->nnodes; i++)
        if (!strcmp(p->nodes[i].node, node))
            return &p->nodes[i];
    fail_msg("node %s not in the plan", node);
    return NULL;
}

static void expect_node(const struct tf_defrag_plan *p, const char *node,
                        enum tf_defrag_node_status st, const char *needle)
{
    const struct tf_defrag_node_result *r = result(p, node);
    if (r->status != st)
        fail_msg("%s: %s (%s), want %s", node, tf_defrag_status_name(r->status), r->reason,
                 tf_defrag_status_name(st));
    if (needle && !strstr(r->reason, needle))
        fail_msg("%s: reason \"%s\" lacks \"%s\"", node, r->reason, needle);
}

/* The events' reasons joined by spaces. */
static const char *reasons(const struct tf_defrag_plan *p)
{
    static char buf[1024];
    buf[0] = 0;
    for (size_t i = 0; i < p->nevents; i++) {
        if (i)
            strcat(buf, " ");
        strcat(buf, p->events[i].reason);
    }
    return buf;
}

/* Snapshot of every GPU's availability, to prove the planner left the allocator alone. */
static void snapshot(const struct env *e, int64_t *out)
{
    for (uint32_t g = 0; g < e->c->ngpus; g++) {
        out[2 * g] = e->c->gpus[g].avail_tflops;
        out[2 * g + 1] = e->c->gpus[g].avail_vram;
    }
}

/* n1: 1/4 GPUs used (25 %), n2: 2/4 (50 %), n3: 3/4 (75 %); threshold 40 %. */
static struct env *three_nodes(void)
{
    struct env *e = env_new(TF_PLACE_COMPACT_FIRST, 3);
    pod(e, "a", "n1", 60 * GiB);
    pod(e, "b1", "n2", 60 * GiB);
    pod(e, "b2", "n2", 60 * GiB);
    pod(e, "c1", "n3", 60 * GiB);
    pod(e, "c2", "n3", 60 * GiB);
    pod(e, "c3", "n3", 60 * GiB);
    return e;
}

static void lightly_used_node_is_drained_onto_the_fullest_node(void **state)
{
    (void)state;
    struct env *e = three_nodes();
    int64_t before[64];
    snapshot(e, before);
    uint32_t count = tf_alloc_count(e->a);
    struct tf_defrag_plan p = plan(e, NOW, NOW);
    assert_string_equal(reasons(&p), "DefragStarted DefragPodEvicted DefragFinished");
    assert_int_equal(p.nevictions, 1);
    assert_string_equal(p.evictions[0].ns, "team");
    assert_string_equal(p.evictions[0].name, "a");
    assert_string_equal(p.evictions[0].node, "n1");
    assert_string_equal(p.evictions[0].target, "n3"); /* CompactFirst: the fullest */
    assert_int_equal(p.events[1].eviction, 0);
    assert_non_null(strstr(p.events[0].message, "1 of 3 nodes have at most 40% of their GPUs"));
    assert_non_null(strstr(p.events[0].message, "until 2024-05-01T05:00:00Z (maxDuration 2h)"));
    assert_non_null(
        strstr(p.events[1].message, "Evicting pod team/a from node n1 (1/4 GPUs in use (25.0%))"));
    assert_non_null(strstr(p.events[2].message, "1 pod to evict from 1 node"));
    expect_node(&p, "n1", TF_DEFRAG_DRAIN, NULL);
    expect_node(&p, "n2", TF_DEFRAG_NOT_CANDIDATE, "above utilizationThresholdPercent 40");
    expect_node(&p, "n3", TF_DEFRAG_NOT_CANDIDATE, NULL);
    assert_string_equal(p.nodes[0].node, "n1"); /* considered in utilisation order */
    assert_int_equal(p.deadline_ms, NOW + 2 * HOUR);
    /* The real allocator is untouched. */
    int64_t after[64];
    snapshot(e, after);
    assert_memory_equal(before, after, sizeof(int64_t) * 2 * e->c->ngpus);
    assert_int_equal(tf_alloc_count(e->a), count);
    fx_check(e->a);
    tf_defrag_plan_free(&p);
    env_free(e);
}

static void idle_nodes_are_left_to_compaction(void **state)
{
    (void)state;
    struct env *e = env_new(TF_PLACE_COMPACT_FIRST, 2);
    pod(e, "x", "n2", 60 * GiB);
    e->cfg.utilization_threshold_pct = 100;
    struct tf_defrag_plan p = plan(e, NOW, NOW);
    expect_node(&p, "n1", TF_DEFRAG_IDLE, "left to node compaction");
    /* n2 (25 %) is a candidate, but the only other node is idle (0 %, lower): no room. */
    expect_node(&p, "n2", TF_DEFRAG_NO_ROOM, "no other schedulable node of the pool is at least");
    assert_int_equal(p.nevictions, 0);
    tf_defrag_plan_free(&p);
    env_free(e);
}

static void skip_rules_unschedulable_do_not_disrupt_foreign_gpu_pods(void **state)
{
    (void)state;
    struct env *e = env_new(TF_PLACE_COMPACT_FIRST, 4);
    pod(e, "a", "n1", 60 * GiB);
    pod(e, "b", "n2", 60 * GiB);
    pod(e, "c", "n3", 60 * GiB);
    pod(e, "d1", "n4", 60 * GiB);
    pod(e, "d2", "n4", 60 * GiB);
    pod(e, "d3", "n4", 60 * GiB);
    node_facts(e, "n1")->unschedulable = true;
    node_facts(e, "n2")->do_not_disrupt = true;
    node_facts(e, "n3")->foreign_pod = "ml/legacy-trainer";
    struct tf_defrag_plan p = plan(e, NOW, NOW);
    expect_node(&p, "n1", TF_DEFRAG_UNSCHEDULABLE, "cordoned");
    expect_node(&p, "n2", TF_DEFRAG_DO_NOT_DISRUPT, "tensor-fusion.ai/do-not-disrupt");
    expect_node(&p, "n3", TF_DEFRAG_FOREIGN_GPU_POD, "pod ml/legacy-trainer uses GPUs outside");
    assert_int_equal(p.nevictions, 0);
    assert_string_equal(reasons(&p), "DefragStarted DefragFinished");
    assert_non_null(strstr(p.events[1].message, "skipped 3 candidate nodes (0 missing"));
    tf_defrag_plan_free(&p);
    env_free(e);
}

static void unschedulable_nodes_receive_nothing(void **state)
{
    (void)state;
    struct env *e = three_nodes();
    node_facts(e, "n3")->unschedulable = true;
    node_facts(e, "n2")->unschedulable = true;
    struct tf_defrag_plan p = plan(e, NOW, NOW);
    expect_node(&p, "n1", TF_DEFRAG_NO_ROOM, "no other schedulable node");
    tf_defrag_plan_free(&p);
    env_free(e);
}

static void missing_pdb_skips_the_node_and_names_the_pod(void **state)
{
    (void)state;
    struct env *e = three_nodes();
    e->pods[0].pdb_covered = false; /* team/a on n1 */
    struct tf_defrag_plan p = plan(e, NOW, NOW);
    assert_string_equal(reasons(&p), "DefragStarted DefragSkipMissingPDB DefragFinished");
    assert_string_equal(p.events[1].type, "Warning");
    assert_string_equal(p.events[1].message,
                        "Skipping node n1: pod team/a is not covered by a PodDisruptionBudget");
    expect_node(&p, "n1", TF_DEFRAG_MISSING_PDB, "team/a");
    assert_non_null(strstr(p.events[2].message, "skipped 1 candidate node (1 missing"));
    tf_defrag_plan_free(&p);
    env_free(e);
}

static void allocation_without_a_pod_counts_as_uncovered(void **state)
{
    (void)state;
    struct env *e = three_nodes();
    e->npods = 0; /* the planner knows the allocations but no pod */
    struct tf_defrag_plan p = plan(e, NOW, NOW);
    expect_node(&p, "n1", TF_DEFRAG_MISSING_PDB, "no pod found for its allocation");
    tf_defrag_plan_free(&p);
    env_free(e);
}

static void workers_younger_than_max_duration_are_not_evicted(void **state)
{
    (void)state;
    struct env *e = three_nodes();
    e->pods[0].created_ms = NOW - HOUR; /* 1h < maxDuration 2h */
    struct tf_defrag_plan p = plan(e, NOW, NOW);
    expect_node(&p, "n1", TF_DEFRAG_YOUNG_WORKER,
                "pod team/a was created 1h ago, less than maxDuration 2h");
    assert_int_equal(p.nevictions, 0);
    tf_defrag_plan_free(&p);
    env_free(e);
    e = three_nodes();
    e->pods[0].created_ms = NOW - 2 * HOUR;
    p = plan(e, NOW, NOW);
    assert_int_equal(p.nevictions, 1);
    tf_defrag_plan_free(&p);
    env_free(e);
}

static void nothing_moves_unless_every_worker_of_the_node_fits(void **state)
{
    (void)state;
    /* n1 holds two pods (50 %); threshold 50. n2 is at 3/4 with one GPU free: only one of
     * n1's pods fits there, so n1 stays put. */
    struct env *e = env_new(TF_PLACE_COMPACT_FIRST, 2);
    e->cfg.utilization_threshold_pct = 50;
    pod(e, "a1", "n1", 60 * GiB);
    pod(e, "a2", "n1", 60 * GiB);
    pod(e, "b1", "n2", 60 * GiB);
    pod(e, "b2", "n2", 60 * GiB);
    pod(e, "b3", "n2", 60 * GiB);
    int64_t before[64];
    snapshot(e, before);
    struct tf_defrag_plan p = plan(e, NOW, NOW);
    expect_node(&p, "n1", TF_DEFRAG_NO_ROOM, "fits no other node at least as utilised");
    assert_int_equal(p.nevictions, 0);
    int64_t after[64];
    snapshot(e, after);
    assert_memory_equal(before, after, sizeof(int64_t) * 2 * e->c->ngpus);
    fx_check(e->a);
    tf_defrag_plan_free(&p);
    env_free(e);
}

static void targets_must_be_at_least_as_utilised(void **state)
{
    (void)state;
    /* n1 2/4 (50 %), n2 1/4 (25 %), threshold 50. n2 drains onto n1 (50 % >= 25 %); n1 is
     * then a receiver and is not drained in the same run; n2 is never a target for n1. */
    struct env *e = env_new(TF_PLACE_COMPACT_FIRST, 2);
    e->cfg.utilization_threshold_pct = 50;
    pod(e, "a1", "n1", 60 * GiB);
    pod(e, "a2", "n1", 60 * GiB);
    pod(e, "b1", "n2", 60 * GiB);
    struct tf_defrag_plan p = plan(e, NOW, NOW);
    assert_string_equal(p.nodes[0].node, "n2");
    expect_node(&p, "n2", TF_DEFRAG_DRAIN, NULL);
    expect_node(&p, "n1", TF_DEFRAG_NOT_CANDIDATE, "receives workers");
    assert_int_equal(p.nevictions, 1);
    assert_string_equal(p.evictions[0].target, "n1");
    tf_defrag_plan_free(&p);
    env_free(e);
}

static void several_pods_are_evicted_one_at_a_time_largest_first(void **state)
{
    (void)state;
    /* n1: two pods on different GPUs (2/4), n2 2/4, n3 3/4. */
    struct env *e = env_new(TF_PLACE_COMPACT_FIRST, 3);
    e->cfg.utilization_threshold_pct = 50;
    pod(e, "small", "n1", 20 * GiB);
    pod(e, "large", "n1", 70 * GiB); /* cannot share a GPU with "small" (80Gi) */
    pod(e, "x1", "n2", 60 * GiB);
    pod(e, "x2", "n2", 60 * GiB);
    pod(e, "y1", "n3", 60 * GiB);
    pod(e, "y2", "n3", 60 * GiB);
    pod(e, "y3", "n3", 60 * GiB);
    struct tf_defrag_plan p = plan(e, NOW, NOW);
    /* n1 and n2 are both at 50 %: n1 sorts first by name and drains (both pods go to n3);
     * n2 then finds no room (n3 is full, n1 is drained). */
    expect_node(&p, "n1", TF_DEFRAG_DRAIN, "2 workers fit");
    assert_int_equal(p.nevictions, 2);
    assert_string_equal(p.evictions[0].name, "large");
    assert_string_equal(p.evictions[1].name, "small");
    assert_string_equal(reasons(&p),
                        "DefragStarted DefragPodEvicted DefragPodEvicted DefragFinished");
    assert_int_equal(p.events[1].eviction, 0);
    assert_int_equal(p.events[2].eviction, 1);
    /* "large" (70Gi) needs the free GPU of n3, "small" then fits next to a 60Gi pod. */
    assert_string_equal(p.evictions[0].target, "n3");
    tf_defrag_plan_free(&p);
    env_free(e);
}

static void max_duration_ends_the_run(void **state)
{
    (void)state;
    struct env *e = three_nodes();
    struct tf_defrag_plan p = plan(e, NOW + 2 * HOUR, NOW);
    assert_string_equal(reasons(&p), "DefragFinished");
    assert_non_null(strstr(p.events[0].message, "maxDuration 2h reached at 2024-05-01T05:00:00Z"));
    assert_int_equal(p.nevictions, 0);
    expect_node(&p, "n1", TF_DEFRAG_DEADLINE, NULL);
    tf_defrag_plan_free(&p);
    assert_true(tf_defrag_may_continue(&e->cfg, NOW, NOW + 2 * HOUR - 1));
    assert_false(tf_defrag_may_continue(&e->cfg, NOW, NOW + 2 * HOUR));
    /* Re-planning mid-run (resume) omits DefragStarted. */
    struct tf_defrag_input in = {e->a,    "default", &e->cfg,    NULL, 0,
                                 e->pods, e->npods,  NOW + HOUR, NOW,  true};
    char err[128];
    assert_int_equal(tf_defrag_plan(&in, &p, err, sizeof(err)), 0);
    assert_string_equal(reasons(&p), "DefragPodEvicted DefragFinished");
    tf_defrag_plan_free(&p);
    env_free(e);
}

static void unknown_pool_is_an_error(void **state)
{
    (void)state;
    struct env *e = three_nodes();
    struct tf_defrag_input in = {e->a, "nope", &e->cfg, NULL, 0, NULL, 0, NOW, NOW, false};
    struct tf_defrag_plan p;
    char err[128];
    assert_int_equal(tf_defrag_plan(&in, &p, err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "unknown GPU pool \"nope\""));
    assert_int_equal(p.nevents, 0);
    env_free(e);
}

static void schedule_decides_when_a_run_starts(void **state)
{
    (void)state;
    struct env *e = three_nodes();
    struct tf_tz *z;
    char err[128];
    assert_int_equal(tf_tz_load(NULL, "Asia/Shanghai", &z, NULL, err, sizeof(err)), 0);
    int64_t fire;
    /* 0 3 * * * in Asia/Shanghai = 19:00Z. Checked at 19:00:30Z after a check at 18:59:30Z. */
    int64_t t;
    assert_int_equal(tf_rfc3339_parse("2024-05-01T19:00:30Z", &t, "t", err, sizeof(err)), 0);
    assert_true(tf_defrag_due(&e->cfg, z, t - 60000, t, &fire));
    assert_int_equal(fire, t - 30000);
    assert_false(tf_defrag_due(&e->cfg, z, t, t + 60000, &fire));
    /* Down from 18:00Z to 22:00Z: the 19:00Z run's 2h window is over, it is not started. */
    assert_false(tf_defrag_due(&e->cfg, z, t - HOUR, t + 3 * HOUR, &fire));
    assert_true(tf_defrag_due(&e->cfg, z, t - HOUR, t + HOUR, &fire));
    e->cfg.enabled = false;
    assert_false(tf_defrag_due(&e->cfg, z, t - 60000, t, &fire));
    tf_tz_destroy(z);
    env_free(e);
}

static void copy_reproduces_every_allocation(void **state)
{
    (void)state;
    struct env *e = three_nodes();
    struct tf_cluster *c2;
    struct tf_alloc *a2;
    char err[256];
    assert_int_equal(tf_alloc_copy(e->a, &c2, &a2, err, sizeof(err)), 0);
    assert_int_equal(tf_alloc_count(a2), tf_alloc_count(e->a));
    assert_int_equal(c2->ngpus, e->c->ngpus);
    for (uint32_t g = 0; g < c2->ngpus; g++) {
        assert_string_equal(c2->gpus[g].uuid, e->c->gpus[g].uuid);
        assert_int_equal(c2->gpus[g].avail_vram, e->c->gpus[g].avail_vram);
        assert_int_equal(c2->gpus[g].avail_tflops, e->c->gpus[g].avail_tflops);
        assert_int_equal(c2->gpus[g].nworkloads, e->c->gpus[g].nworkloads);
        assert_int_equal(c2->gpus[g].mode, e->c->gpus[g].mode);
    }
    assert_int_not_equal(tf_alloc_find(a2, "team", "c3"), TF_NONE);
    if (tf_alloc_check(a2, err, sizeof(err)))
        fail_msg("%s", err);
    tf_alloc_destroy(a2);
    tf_cluster_destroy(c2);
    env_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lightly_used_node_is_drained_onto_the_fullest_node),
        cmocka_unit_test(idle_nodes_are_left_to_compaction),
        cmocka_unit_test(skip_rules_unschedulable_do_not_disrupt_foreign_gpu_pods),
        cmocka_unit_test(unschedulable_nodes_receive_nothing),
        cmocka_unit_test(missing_pdb_skips_the_node_and_names_the_pod),
        cmocka_unit_test(allocation_without_a_pod_counts_as_uncovered),
        cmocka_unit_test(workers_younger_than_max_duration_are_not_evicted),
        cmocka_unit_test(nothing_moves_unless_every_worker_of_the_node_fits),
        cmocka_unit_test(targets_must_be_at_least_as_utilised),
        cmocka_unit_test(several_pods_are_evicted_one_at_a_time_largest_first),
        cmocka_unit_test(max_duration_ends_the_run),
        cmocka_unit_test(unknown_pool_is_an_error),
        cmocka_unit_test(schedule_decides_when_a_run_starts),
        cmocka_unit_test(copy_reproduces_every_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
