/* SPDX-License-Identifier: Apache-2.0
 *
 * Node compaction (src/core/compaction.h), seed 002 step 4: every release rule, the
 * warmResources/minResources arithmetic with the seed's numbers, release order, the
 * manual-compaction annotation's 3-second window, and the period.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/compaction.h"
#include "core/timeutil.h"

#define GiB (INT64_C(1) << 30)
#define TF(x) ((int64_t)(x)*1000)
#define NOW (INT64_C(1714550400000)) /* 2024-05-01T08:00:00Z */
#define MIN (60 * INT64_C(1000))

/* An idle, Running L4 node created an hour ago. */
static struct tf_compaction_node idle(const char *name)
{
    return (struct tf_compaction_node){
        .name = name,
        .tflops_milli = TF(121),
        .vram_bytes = 24 * GiB,
        .avail_tflops_milli = TF(121),
        .avail_vram_bytes = 24 * GiB,
        .gpunode_found = true,
        .running = true,
        .created_ms = NOW - 60 * MIN,
    };
}

/* A node with one worker reserving TFLOPS T and VRAM V of an L4. */
static struct tf_compaction_node busy(const char *name, int64_t t, int64_t v)
{
    struct tf_compaction_node n = idle(name);
    n.workers = 1;
    n.avail_tflops_milli -= t;
    n.avail_vram_bytes -= v;
    return n;
}

/* The seed's capacityConfig: min 20 TFLOPS / 10Gi, warm 10 TFLOPS / 5Gi. */
static struct tf_pool_efficiency seed_cfg(void)
{
    struct tf_pool_efficiency c;
    tf_pool_efficiency_init(&c);
    c.min = (struct tf_capacity){TF(20), 10 * GiB, true, true};
    c.warm = (struct tf_capacity){TF(10), 5 * GiB, true, true};
    return c;
}

static const struct tf_compaction_decision *find(const struct tf_compaction_decision *d, size_t n,
                                                 const struct tf_compaction_node *nodes,
                                                 const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(nodes[d[i].node].name, name))
            return &d[i];
    fail_msg("no decision for %s", name);
    return NULL;
}

static void expect(const struct tf_compaction_decision *d, size_t n,
                   const struct tf_compaction_node *nodes, const char *name,
                   enum tf_compaction_verdict v, const char *needle)
{
    const struct tf_compaction_decision *x = find(d, n, nodes, name);
    if (x->verdict != v)
        fail_msg("%s: verdict %s (%s), want %s", name, tf_compaction_verdict_name(x->verdict),
                 x->reason, tf_compaction_verdict_name(v));
    if (needle && !strstr(x->reason, needle))
        fail_msg("%s: reason \"%s\" lacks \"%s\"", name, x->reason, needle);
}

static void idle_running_old_node_is_released_and_busy_ones_stay(void **state)
{
    (void)state;
    struct tf_pool_efficiency cfg = seed_cfg();
    struct tf_compaction_node n[] = {busy("n1", TF(30), 8 * GiB), idle("n2"), idle("n3")};
    struct tf_compaction_decision d[3];
    struct tf_compaction_summary s;
    /* Three L4s: 363 TFLOPS, 72Gi in all. Both idle nodes can go: n1 alone keeps 91 TFLOPS
     * and 16Gi free, 121 TFLOPS / 24Gi in total. */
    assert_int_equal(tf_compaction_plan(&cfg, n, 3, NOW, d, &s), 2);
    /* Released first, in release order (equal sizes: by name), then the rejected. */
    assert_string_equal(n[d[0].node].name, "n2");
    assert_string_equal(n[d[1].node].name, "n3");
    expect(d, 3, n, "n1", TF_COMPACT_HAS_WORKERS, "1 TensorFusion worker running");
    expect(d, 3, n, "n2", TF_COMPACT_RELEASE, "label tensor-fusion.ai/should-delete=true");
    assert_int_equal(s.total_tflops_milli, TF(363));
    assert_int_equal(s.after_total_vram_bytes, 24 * GiB);
    assert_int_equal(s.after_avail_tflops_milli, TF(91));
    assert_int_equal(s.after_avail_vram_bytes, 16 * GiB);
}

static void gpunode_must_be_running_and_older_than_five_minutes(void **state)
{
    (void)state;
    struct tf_pool_efficiency cfg;
    tf_pool_efficiency_init(&cfg);
    struct tf_compaction_node n[] = {idle("pending"), idle("young"), idle("exactly5m"),
                                     idle("missing")};
    n[0].running = false;
    n[1].created_ms = NOW - 5 * MIN + 1;
    n[2].created_ms = NOW - 5 * MIN;
    n[3].gpunode_found = false;
    struct tf_compaction_decision d[4];
    assert_int_equal(tf_compaction_plan(&cfg, n, 4, NOW, d, NULL), 1);
    expect(d, 4, n, "pending", TF_COMPACT_NOT_RUNNING, "not Running");
    expect(d, 4, n, "young", TF_COMPACT_TOO_YOUNG, "under 5m");
    expect(d, 4, n, "exactly5m", TF_COMPACT_RELEASE, NULL);
    expect(d, 4, n, "missing", TF_COMPACT_NO_GPUNODE, "no GPUNode");
}

static void do_not_disrupt_label_and_deleting_nodes_are_kept(void **state)
{
    (void)state;
    struct tf_pool_efficiency cfg;
    tf_pool_efficiency_init(&cfg);
    struct tf_compaction_node n[] = {idle("keep"), idle("gone")};
    n[0].do_not_disrupt = true;
    n[1].deleting = true;
    struct tf_compaction_decision d[2];
    assert_int_equal(tf_compaction_plan(&cfg, n, 2, NOW, d, NULL), 0);
    expect(d, 2, n, "keep", TF_COMPACT_DO_NOT_DISRUPT, "tensor-fusion.ai/do-not-disrupt");
    expect(d, 2, n, "gone", TF_COMPACT_DELETING, NULL);
}

static void warm_resources_keep_free_capacity(void **state)
{
    (void)state;
    struct tf_pool_efficiency cfg = seed_cfg();
    /* n1 is nearly full: 2 TFLOPS and 1Gi free. Releasing n2 would leave 2 TFLOPS free. */
    struct tf_compaction_node n[] = {busy("n1", TF(119), 23 * GiB), idle("n2")};
    struct tf_compaction_decision d[2];
    assert_int_equal(tf_compaction_plan(&cfg, n, 2, NOW, d, NULL), 0);
    expect(d, 2, n, "n2", TF_COMPACT_BELOW_WARM,
           "free TFLOPS would drop to 2, below warmResources.tflops 10");
    /* Enough TFLOPS free but not VRAM. */
    n[0] = busy("n1", TF(50), 20 * GiB);
    assert_int_equal(tf_compaction_plan(&cfg, n, 2, NOW, d, NULL), 0);
    expect(d, 2, n, "n2", TF_COMPACT_BELOW_WARM,
           "free VRAM would drop to 4Gi, below warmResources.vram 5Gi");
    /* Without a warm block nothing stops it. */
    cfg.warm = (struct tf_capacity){0};
    assert_int_equal(tf_compaction_plan(&cfg, n, 2, NOW, d, NULL), 1);
}

static void min_resources_keep_total_capacity(void **state)
{
    (void)state;
    struct tf_pool_efficiency cfg;
    tf_pool_efficiency_init(&cfg);
    cfg.min = (struct tf_capacity){TF(200), 10 * GiB, true, true};
    struct tf_compaction_node n[] = {idle("a"), idle("b"), idle("c")};
    struct tf_compaction_decision d[3];
    /* 363 TFLOPS; one release leaves 242 >= 200, a second would leave 121. */
    assert_int_equal(tf_compaction_plan(&cfg, n, 3, NOW, d, NULL), 1);
    assert_string_equal(n[d[0].node].name, "a");
    expect(d, 3, n, "b", TF_COMPACT_BELOW_MIN,
           "pool TFLOPS would drop to 121, below minResources.tflops 200");
    expect(d, 3, n, "c", TF_COMPACT_BELOW_MIN, NULL);
    cfg.min = (struct tf_capacity){0, 60 * GiB, false, true};
    assert_int_equal(tf_compaction_plan(&cfg, n, 3, NOW, d, NULL), 0);
    expect(d, 3, n, "a", TF_COMPACT_BELOW_MIN,
           "pool VRAM would drop to 48Gi, below minResources.vram 60Gi");
}

static void largest_idle_node_goes_first_when_capacity_allows_one(void **state)
{
    (void)state;
    struct tf_pool_efficiency cfg;
    tf_pool_efficiency_init(&cfg);
    struct tf_compaction_node n[] = {idle("small"), idle("big"), busy("busy", 0, 0)};
    n[1].tflops_milli = n[1].avail_tflops_milli = TF(312);
    n[1].vram_bytes = n[1].avail_vram_bytes = 80 * GiB;
    /* Warm: keep 100Gi free. All free: 24 + 80 + 24 = 128Gi. Releasing big leaves 48 < 100;
     * releasing small leaves 104. */
    cfg.warm = (struct tf_capacity){0, 100 * GiB, false, true};
    struct tf_compaction_decision d[3];
    assert_int_equal(tf_compaction_plan(&cfg, n, 3, NOW, d, NULL), 1);
    assert_string_equal(n[d[0].node].name, "small");
    expect(d, 3, n, "big", TF_COMPACT_BELOW_WARM, NULL);
    /* Room for either: the big one goes. */
    cfg.warm = (struct tf_capacity){0, 40 * GiB, false, true};
    assert_int_equal(tf_compaction_plan(&cfg, n, 3, NOW, d, NULL), 1);
    assert_string_equal(n[d[0].node].name, "big");
    expect(d, 3, n, "small", TF_COMPACT_BELOW_WARM, NULL);
    /* The input order of the rejected is kept after the released. */
    assert_string_equal(n[d[1].node].name, "small");
    assert_string_equal(n[d[2].node].name, "busy");
}

static void release_action_follows_the_provisioning_mode(void **state)
{
    (void)state;
    struct tf_pool_efficiency cfg;
    tf_pool_efficiency_init(&cfg);
    struct tf_compaction_node n[] = {idle("a")};
    struct tf_compaction_decision d[1];
    cfg.provisioning = TF_PROVISION_KARPENTER;
    assert_int_equal(tf_compaction_plan(&cfg, n, 1, NOW, d, NULL), 1);
    assert_non_null(strstr(d[0].reason, "delete its Karpenter NodeClaim"));
    assert_string_equal(tf_compaction_action(TF_PROVISION_AUTO_SELECT),
                        "label tensor-fusion.ai/should-delete=true");
    assert_string_equal(tf_compaction_action(TF_PROVISION_PROVISIONED),
                        "label tensor-fusion.ai/should-delete=true");
    assert_int_equal(tf_compaction_plan(&cfg, NULL, 0, NOW, NULL, NULL), 0);
}

static void manual_compaction_annotation_is_honoured_for_three_seconds(void **state)
{
    (void)state;
    char why[256];
    int64_t t0;
    char err[128];
    assert_int_equal(tf_rfc3339_parse("2024-05-01T08:00:00Z", &t0, "t", err, sizeof(err)), 0);
    assert_int_equal(
        tf_compaction_manual("2024-05-01T08:00:00Z", NULL, t0 + 2000, why, sizeof(why)),
        TF_MANUAL_TRIGGER);
    assert_non_null(strstr(why, "compaction runs now"));
    assert_int_equal(
        tf_compaction_manual("2024-05-01T08:00:00Z", NULL, t0 + 3000, why, sizeof(why)),
        TF_MANUAL_TRIGGER);
    assert_int_equal(
        tf_compaction_manual("2024-05-01T08:00:00Z", NULL, t0 + 3001, why, sizeof(why)),
        TF_MANUAL_STALE);
    assert_non_null(strstr(why, "older than 3s"));
    assert_int_equal(tf_compaction_manual("2024-05-01T08:00:05Z", NULL, t0, why, sizeof(why)),
                     TF_MANUAL_FUTURE);
    assert_int_equal(tf_compaction_manual("yesterday", NULL, t0, why, sizeof(why)),
                     TF_MANUAL_INVALID);
    assert_non_null(strstr(why, "tensor-fusion.ai/manual-compaction"));
    assert_int_equal(tf_compaction_manual(NULL, NULL, t0, why, sizeof(why)), TF_MANUAL_NONE);
    /* The value that triggered the previous run does not trigger again. */
    assert_int_equal(
        tf_compaction_manual("2024-05-01T08:00:00Z", "2024-05-01T08:00:00Z", t0, why, sizeof(why)),
        TF_MANUAL_HANDLED);
}

static void period_defaults_to_five_minutes(void **state)
{
    (void)state;
    struct tf_pool_efficiency cfg;
    tf_pool_efficiency_init(&cfg);
    int64_t next;
    assert_true(tf_compaction_due(&cfg, 0, NOW, &next));
    assert_int_equal(next, NOW + 5 * MIN);
    assert_false(tf_compaction_due(&cfg, NOW, NOW + 5 * MIN - 1, &next));
    assert_int_equal(next, NOW + 5 * MIN);
    assert_true(tf_compaction_due(&cfg, NOW, NOW + 5 * MIN, NULL));
    cfg.compaction_period_ms = 30 * MIN;
    assert_false(tf_compaction_due(&cfg, NOW, NOW + 29 * MIN, NULL));
    assert_true(tf_compaction_due(&cfg, NOW, NOW + 30 * MIN, NULL));
    /* A clock that went backwards does not wedge the schedule. */
    assert_true(tf_compaction_due(&cfg, NOW, NOW - MIN, NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idle_running_old_node_is_released_and_busy_ones_stay),
        cmocka_unit_test(gpunode_must_be_running_and_older_than_five_minutes),
        cmocka_unit_test(do_not_disrupt_label_and_deleting_nodes_are_kept),
        cmocka_unit_test(warm_resources_keep_free_capacity),
        cmocka_unit_test(min_resources_keep_total_capacity),
        cmocka_unit_test(largest_idle_node_goes_first_when_capacity_allows_one),
        cmocka_unit_test(release_action_follows_the_provisioning_mode),
        cmocka_unit_test(manual_compaction_annotation_is_honoured_for_three_seconds),
        cmocka_unit_test(period_defaults_to_five_minutes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
