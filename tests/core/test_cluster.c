/* SPDX-License-Identifier: Apache-2.0
 *
 * The cluster model: pools and nodes are validated as a whole, capacities (physical and
 * virtual) come from the model table and the pool, lookups and names round-trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sched_fixture.h"

static struct tf_gpu_spec gpu(const char *uuid, const char *model, int index)
{
    struct tf_gpu_spec g;
    memset(&g, 0, sizeof(g));
    g.uuid = uuid;
    g.model = tf_gpu_model_find(model);
    g.index = index;
    g.numa = -1;
    g.phase = TF_GPU_RUNNING;
    return g;
}

static void a_node_is_added_whole_or_not_at_all(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    struct tf_gpu_spec g[3] = {gpu("u0", "A100-80GB", 0), gpu("u1", "A100-80GB", 1),
                               gpu("u0", "A100-80GB", 2)};
    struct tf_node_spec ns = {"n1", TF_ISOLATION_UNSET, 0, 0, g, 3};
    char err[256];
    assert_int_equal(tf_cluster_add_node(c, 0, &ns, NULL, err, sizeof(err)), TF_EEXIST);
    assert_string_equal(err, "node n1: duplicate GPU uuid \"u0\"");
    g[2].uuid = "u2";
    g[2].index = 1;
    assert_int_equal(tf_cluster_add_node(c, 0, &ns, NULL, err, sizeof(err)), TF_EEXIST);
    assert_string_equal(err, "node n1: duplicate GPU index 1");
    g[2].index = 64;
    assert_int_equal(tf_cluster_add_node(c, 0, &ns, NULL, err, sizeof(err)), TF_EINVAL);
    assert_string_equal(err, "node n1: gpu u2: index 64 out of range 0..63");
    g[2].index = 2;
    g[0].nvlink = UINT64_C(1) << 5;
    assert_int_equal(tf_cluster_add_node(c, 0, &ns, NULL, err, sizeof(err)), TF_EINVAL);
    assert_string_equal(err, "node n1: gpu u0: NVLink peer index 5 is not on the node");
    g[0].nvlink = UINT64_C(1) << 2;
    g[1].model = NULL;
    assert_int_equal(tf_cluster_add_node(c, 0, &ns, NULL, err, sizeof(err)), TF_EINVAL);
    assert_string_equal(err, "node n1: gpu 1: unknown model");
    assert_int_equal(c->nnodes, 0);
    assert_int_equal(c->ngpus, 0);
    g[1].model = tf_gpu_model_find("A100-80GB");
    uint32_t id;
    assert_int_equal(tf_cluster_add_node(c, 0, &ns, &id, err, sizeof(err)), 0);
    assert_int_equal(id, 0);
    assert_int_equal(tf_cluster_add_node(c, 0, &ns, NULL, err, sizeof(err)), TF_EEXIST);
    assert_string_equal(err, "duplicate node \"n1\"");
    ns.name = "n2";
    assert_int_equal(tf_cluster_add_node(c, 0, &ns, NULL, err, sizeof(err)), TF_EEXIST);
    assert_string_equal(err, "node n2: duplicate GPU uuid \"u0\"");
    assert_int_equal(tf_cluster_add_node(c, 7, &ns, NULL, err, sizeof(err)), TF_EINVAL);
    ns.ngpus = 0;
    assert_int_equal(tf_cluster_add_node(c, 0, &ns, NULL, err, sizeof(err)), TF_EINVAL);
    assert_string_equal(err, "node n2: needs 1..64 GPUs");
    tf_cluster_destroy(c);
}

static void capacities_come_from_the_model_and_the_pool(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    struct tf_pool_config cfg;
    tf_pool_config_init(&cfg);
    cfg.tflops_oversell_pct = 300;
    cfg.vram_expand_host_mem_pct = 25;
    assert_int_equal(tf_cluster_add_pool(c, "p", &cfg, NULL, NULL, 0), 0);
    struct tf_gpu_spec g[2] = {gpu("h0", "H100", 0), gpu("h1", "H100", 1)};
    g[1].vram_bytes = 40 * GiB; /* an override, e.g. a GPU reporting less */
    g[1].tflops_milli = TF(500);
    struct tf_node_spec ns = {"n1", TF_ISOLATION_UNSET, 256 * GiB, 0, g, 2};
    assert_int_equal(tf_cluster_add_node(c, 0, &ns, NULL, NULL, 0), 0);
    assert_int_equal(c->gpus[0].cap_tflops, 989000);
    assert_int_equal(c->gpus[0].cap_vram, 80 * GiB);
    assert_int_equal(c->gpus[0].virt_tflops, 989000 * 3);
    assert_int_equal(c->gpus[0].virt_vram, 80 * GiB + 32 * GiB); /* 256Gi x 25 % / 2 */
    assert_int_equal(c->gpus[1].cap_vram, 40 * GiB);
    assert_int_equal(c->gpus[1].cap_tflops, TF(500));
    const struct tf_node *n = &c->nodes[0];
    assert_int_equal(n->running_gpus, 2);
    assert_int_equal(n->idle_gpus, 2);
    assert_int_equal(n->max_free_vram, 80 * GiB);
    assert_int_equal(n->sum[TF_ISOLATION_UNSET].cap_vram, 120 * GiB);
    tf_cluster_set_gpu_phase(c, 0, TF_GPU_MIGRATING);
    assert_int_equal(n->running_gpus, 1);
    assert_int_equal(n->max_free_vram, 40 * GiB);
    assert_string_equal(tf_gpu_phase_name((enum tf_gpu_phase)c->gpus[0].phase), "Migrating");
    tf_cluster_destroy(c);
}

static void pool_configs_are_validated(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_STATIC);
    struct tf_pool_config cfg;
    char err[256];
    tf_pool_config_init(&cfg);
    cfg.vram_weight = 800;
    assert_int_equal(tf_cluster_add_pool(c, "p", &cfg, NULL, err, sizeof(err)), TF_EINVAL);
    assert_string_equal(err,
                        "score weights must be >= 0 and sum to 1 (vram 800/1000, tflops 300/1000)");
    tf_pool_config_init(&cfg);
    cfg.default_isolation = TF_ISOLATION_SHARED;
    assert_int_equal(tf_cluster_add_pool(c, "p", &cfg, NULL, err, sizeof(err)), TF_EINVAL);
    assert_string_equal(err, "defaultIsolationMode must be soft, hard or partitioned");
    tf_pool_config_init(&cfg);
    cfg.min_vram = 10 * GiB;
    cfg.max_vram = GiB;
    assert_int_equal(tf_cluster_add_pool(c, "p", &cfg, NULL, err, sizeof(err)), TF_EINVAL);
    tf_pool_config_init(&cfg);
    cfg.is_default = true;
    assert_int_equal(tf_cluster_add_pool(c, "a", &cfg, NULL, err, sizeof(err)), 0);
    assert_int_equal(tf_cluster_add_pool(c, "b", &cfg, NULL, err, sizeof(err)), TF_EINVAL);
    assert_string_equal(err, "pools \"a\" and \"b\" are both default");
    cfg.is_default = false;
    assert_int_equal(tf_cluster_add_pool(c, "a", &cfg, NULL, err, sizeof(err)), TF_EEXIST);
    assert_int_equal(tf_cluster_add_pool(c, "b", &cfg, NULL, err, sizeof(err)), 0);
    assert_int_equal(tf_cluster_default_pool(c), 0);
    assert_int_equal(tf_cluster_pool_find(c, "b"), 1);
    assert_int_equal(tf_cluster_pool_find(c, "zz"), TF_NONE);
    tf_cluster_destroy(c);
}

static void static_nodes_get_the_pool_default_mode(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_STATIC);
    struct tf_pool_config cfg;
    tf_pool_config_init(&cfg);
    cfg.default_isolation = TF_ISOLATION_HARD;
    assert_int_equal(tf_cluster_add_pool(c, "p", &cfg, NULL, NULL, 0), 0);
    fx_node_ex(c, 0, "a", "L4", 1, false, false, TF_ISOLATION_UNSET);
    fx_node_ex(c, 0, "b", "A100-80GB", 1, false, false, TF_ISOLATION_PARTITIONED);
    assert_int_equal(c->nodes[0].static_mode, TF_ISOLATION_HARD);
    assert_int_equal(c->gpus[0].mode, TF_ISOLATION_HARD);
    assert_int_equal(c->gpus[1].mode, TF_ISOLATION_PARTITIONED);
    struct tf_gpu_spec g = gpu("x", "L4", 0);
    struct tf_node_spec ns = {"c", TF_ISOLATION_SHARED, 0, 0, &g, 1};
    char err[256];
    assert_int_equal(tf_cluster_add_node(c, 0, &ns, NULL, err, sizeof(err)), TF_EINVAL);
    assert_string_equal(err, "node c: isolation mode must be soft, hard or partitioned");
    tf_cluster_destroy(c);
}

static void names_parse_and_print(void **state)
{
    enum tf_isolation iso;
    enum tf_placement_mode pm;
    enum tf_qos q;
    enum tf_iso_policy pol;
    enum tf_gpu_phase ph;
    assert_int_equal(tf_isolation_parse("Partitioned", &iso), 0);
    assert_int_equal(iso, TF_ISOLATION_PARTITIONED);
    assert_int_equal(tf_isolation_parse("none", &iso), TF_EINVAL);
    assert_int_equal(tf_placement_parse("NodeCompactGPULowLoad", &pm), 0);
    assert_string_equal(tf_placement_name(pm), "NodeCompactGPULowLoad");
    assert_int_equal(tf_placement_parse("compactfirst", &pm), TF_EINVAL);
    assert_int_equal(tf_qos_parse("CRITICAL", &q), 0);
    assert_string_equal(tf_qos_name(q), "critical");
    assert_int_equal(tf_iso_policy_parse("static", &pol), 0);
    assert_string_equal(tf_iso_policy_name(pol), "static");
    assert_int_equal(tf_gpu_phase_parse("Running", &ph), 0);
    assert_int_equal(tf_gpu_phase_parse("running", &ph), TF_EINVAL);
    assert_null(tf_isolation_name(TF_ISOLATION_UNSET));
}

static void lookups_by_name_and_uuid(void **state)
{
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    fx_pool(c, "p", TF_PLACE_COMPACT_FIRST);
    char name[32];
    for (int i = 0; i < 300; i++) { /* enough to grow every index a few times */
        snprintf(name, sizeof(name), "node-%03d", i);
        fx_node(c, 0, name, "L4", 2);
    }
    assert_int_equal(tf_cluster_node_find(c, "node-123", 8), 123);
    assert_int_equal(tf_cluster_node_find(c, "node-1234", 8), 123); /* LEN bytes only */
    assert_int_equal(tf_cluster_node_find(c, "node-300", 8), TF_NONE);
    assert_int_equal(tf_cluster_gpu_find(c, "node-299-g1", 11), 599);
    assert_int_equal(c->gpus[599].node, 299);
    assert_int_equal(c->pools[0].nnodes, 300);
    tf_cluster_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_node_is_added_whole_or_not_at_all),
        cmocka_unit_test(capacities_come_from_the_model_and_the_pool),
        cmocka_unit_test(pool_configs_are_validated),
        cmocka_unit_test(static_nodes_get_the_pool_default_mode),
        cmocka_unit_test(names_parse_and_print),
        cmocka_unit_test(lookups_by_name_and_uuid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
