/* SPDX-License-Identifier: Apache-2.0
 *
 * Cluster descriptions: the shipped examples load into the model they describe, and every
 * bad key or value is refused with its path.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "core/cluster_yaml.h"

#define GiB (INT64_C(1) << 30)

static char *slurp(const char *rel)
{
    const char *src = getenv("TF_SRCDIR");
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", src ? src : ".", rel);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

struct loaded {
    struct tf_cluster *c;
    struct tf_quota_set *q;
};

static struct loaded load_ok(const char *text)
{
    struct loaded l;
    char err[512];
    if (tf_cluster_yaml_parse(text, strlen(text), &l.c, &l.q, err, sizeof(err)))
        fail_msg("parse: %s", err);
    return l;
}

static void unload(struct loaded *l)
{
    tf_cluster_destroy(l->c);
    tf_quota_set_destroy(l->q);
}

static const char *load_err(const char *text, int want_rc)
{
    static char err[512];
    struct tf_cluster *c = (struct tf_cluster *)1;
    struct tf_quota_set *q = (struct tf_quota_set *)1;
    int rc = tf_cluster_yaml_parse(text, strlen(text), &c, &q, err, sizeof(err));
    if (rc != want_rc)
        fail_msg("rc %s, want %s (%s)", tf_err_name(rc), tf_err_name(want_rc), rc ? err : "");
    assert_null(c);
    assert_null(q);
    return err;
}

static const struct tf_gpu *gpu(const struct tf_cluster *c, const char *uuid)
{
    uint32_t g = tf_cluster_gpu_find(c, uuid, strlen(uuid));
    if (g == TF_NONE)
        fail_msg("no GPU %s", uuid);
    return &c->gpus[g];
}

static void the_mixed_pool_example_loads(void **state)
{
    struct loaded l = load_ok(slurp("examples/clusters/mixed-pool.yaml"));
    const struct tf_cluster *c = l.c;
    assert_int_equal(c->policy, TF_ISOPOL_DYNAMIC);
    assert_int_equal(c->npools, 1);
    assert_int_equal(c->pools[0].cfg.placement, TF_PLACE_COMPACT_FIRST);
    assert_true(c->pools[0].cfg.is_default);
    assert_int_equal(c->nnodes, 5);
    assert_int_equal(c->ngpus, 8 + 8 + 4 + 2 + 2);
    const struct tf_gpu *g = gpu(c, "GPU-a100-1-3");
    assert_string_equal(g->model->name, "A100-80GB");
    assert_int_equal(g->index, 3);
    assert_int_equal(g->numa, 0);
    assert_int_equal(gpu(c, "GPU-a100-1-4")->numa, 1);
    assert_int_equal(__builtin_popcountll(g->nvlink), 7);
    assert_int_equal(g->virt_tflops, 312000 * 5);
    assert_int_equal(g->virt_vram, 80 * GiB + 1024 * GiB / 2 / 8);
    assert_int_equal(gpu(c, "GPU-h100-1-0")->nvlink, 0);
    assert_int_equal(gpu(c, "GPU-l4-2-b")->phase, TF_GPU_PENDING);
    assert_int_equal(gpu(c, "GPU-l4-2-a")->phase, TF_GPU_RUNNING);
    assert_int_equal(tf_quota_entries(l.q), 0);
    unload(&l);
}

static void the_mig_example_resolves_node_modes_from_rules(void **state)
{
    struct loaded l = load_ok(slurp("examples/clusters/mig-pool.yaml"));
    const struct tf_cluster *c = l.c;
    assert_int_equal(c->policy, TF_ISOPOL_STATIC);
    static const struct {
        const char *node;
        enum tf_isolation mode;
    } want[] = {{"mig-h100", TF_ISOLATION_PARTITIONED},
                {"mig-a100", TF_ISOLATION_PARTITIONED},
                {"hard-l40s", TF_ISOLATION_HARD},
                {"soft-l4", TF_ISOLATION_SOFT}};
    for (size_t i = 0; i < 4; i++) {
        uint32_t n = tf_cluster_node_find(c, want[i].node, strlen(want[i].node));
        assert_int_not_equal(n, TF_NONE);
        assert_int_equal(c->nodes[n].static_mode, want[i].mode);
        assert_int_equal(c->gpus[c->nodes[n].gpu_first].mode, want[i].mode);
    }
    const struct tf_partition_profile *p = tf_cluster_profile(c, gpu(c, "GPU-mig-a100-0"));
    assert_non_null(p);
    assert_int_equal(p->ntemplates, 3);
    assert_string_equal(p->templates[1].id, "3g.20gb");
    assert_int_equal(p->templates[1].vram_bytes, 20 * GiB);
    assert_int_equal(p->templates[1].tflops_milli, 312000 * 3 / 7);
    /* H100 keeps its built-in profile. */
    assert_int_equal(tf_cluster_profile(c, gpu(c, "GPU-mig-h100-0"))->ntemplates, 6);
    unload(&l);
}

static void the_multi_pool_example_keeps_pool_settings_and_quotas(void **state)
{
    struct loaded l = load_ok(slurp("examples/clusters/multi-pool.yaml"));
    const struct tf_cluster *c = l.c;
    assert_int_equal(c->npools, 2);
    assert_int_equal(tf_cluster_default_pool(c), 1);
    const struct tf_pool_config *t = &c->pools[0].cfg, *i = &c->pools[1].cfg;
    assert_int_equal(t->placement, TF_PLACE_NODE_COMPACT_GPU_LOW_LOAD);
    assert_int_equal(t->tflops_oversell_pct, 100);
    assert_int_equal(t->vram_weight, 500);
    assert_int_equal(t->tflops_weight, 500);
    assert_int_equal(t->min_tflops, 1000000);
    assert_int_equal(t->max_vram, 4096 * GiB);
    assert_int_equal(i->placement, TF_PLACE_LOW_LOAD_FIRST);
    assert_int_equal(i->max_workers_per_node, 16);
    assert_true(i->pricing[TF_QOS_LOW].set);
    assert_int_equal(i->pricing[TF_QOS_LOW].tflops_hour_nano, 2000000);
    assert_int_equal(i->pricing[TF_QOS_LOW].vram_gib_hour_nano, 1000000);
    assert_int_equal(i->pricing[TF_QOS_LOW].limits_over_requests_pct, 50);
    assert_false(i->pricing[TF_QOS_HIGH].set);
    uint32_t n3 = tf_cluster_node_find(c, "infer-3", 7);
    assert_int_equal(c->nodes[n3].max_workers, 4);
    uint32_t n1 = tf_cluster_node_find(c, "infer-1", 7);
    assert_int_equal(c->nodes[n1].max_workers, 16);
    const struct tf_quota_spec *q = tf_quota_get(l.q, "team-a", 6);
    assert_non_null(q);
    assert_int_equal(q->total_requests.tflops, 400000);
    assert_int_equal(q->total_requests.vram, 200 * GiB);
    assert_int_equal(q->total_limits.tflops, TF_QUOTA_UNSET);
    assert_int_equal(q->max_workers, 10);
    assert_int_equal(q->max_gpu_count, 4);
    assert_int_equal(q->default_requests.vram, 4 * GiB);
    assert_int_equal(tf_quota_get(l.q, "team-b", 6)->total_requests.vram, TF_QUOTA_UNSET);
    unload(&l);
}

static void json_descriptions_work_too(void **state)
{
    struct loaded l = load_ok("{\"pools\": [{\"name\": \"p\", \"oversubscription\": "
                              "{\"tflopsOversellRatio\": 200}, \"placement\": \"LowLoadFirst\", "
                              "\"nodes\": [{\"name\": \"n\", \"gpus\": [{\"model\": \"L4\", "
                              "\"count\": 2}, {\"uuid\": \"x\", \"model\": \"T4\", \"index\": "
                              "7}]}]}]}");
    assert_int_equal(l.c->ngpus, 3);
    assert_int_equal(gpu(l.c, "GPU-n-1")->index, 1);
    assert_int_equal(gpu(l.c, "x")->index, 7);
    assert_int_equal(gpu(l.c, "x")->virt_tflops, 130000);
    unload(&l);
}

/* A GPUPool spec as upstream writes it (capacityConfig.oversubscription with host disk,
 * cpu/memory capacities, pricing.limitsOverRequests as a ratio) reads as ours does. */
static void upstream_pool_spec_spellings_are_read(void **state)
{
    struct loaded l =
        load_ok("pools:\n- name: p\n"
                "  capacityConfig:\n"
                "    minResources: {tflops: '20', vram: 10Gi, cpu: '0', memory: '0'}\n"
                "    oversubscription: {tflopsOversellRatio: 2000, vramExpandToHostDisk: 60,\n"
                "                       vramExpandToHostMem: 40}\n"
                "  qosConfig:\n"
                "    pricing:\n"
                "    - {qos: low, limitsOverRequests: '0.1', requests: {perFP16TFlopsPerHour: "
                "$0.0069228, perGBOfVRAMPerHour: $0.01548}}\n"
                "    - {qos: critical, limitsOverRequests: '1'}\n"
                "  nodes:\n  - name: n\n    gpus: [{model: L4, count: 1}]\n");
    const struct tf_pool_config *cfg = &l.c->pools[0].cfg;
    assert_int_equal(cfg->tflops_oversell_pct, 2000);
    assert_int_equal(cfg->vram_expand_host_mem_pct, 40);
    assert_int_equal(cfg->min_tflops, 20000);
    assert_int_equal(cfg->pricing[TF_QOS_LOW].limits_over_requests_pct, 10);
    assert_int_equal(cfg->pricing[TF_QOS_LOW].tflops_hour_nano, 6922800);
    assert_int_equal(cfg->pricing[TF_QOS_LOW].vram_gib_hour_nano, 15480000);
    assert_int_equal(cfg->pricing[TF_QOS_CRITICAL].limits_over_requests_pct, 100);
    unload(&l);
}

static void explicit_indexes_are_kept_and_counts_fill_the_gaps(void **state)
{
    struct loaded l = load_ok("pools:\n- name: p\n  nodes:\n  - name: n\n    gpus:\n"
                              "    - {model: L4, count: 2}\n"
                              "    - {model: H100, index: 0, nvlink: [2]}\n"
                              "    - {model: H100, index: 2, numa: 1}\n");
    assert_int_equal(gpu(l.c, "GPU-n-1")->model->tflops_milli, 121000);
    assert_int_equal(gpu(l.c, "GPU-n-3")->model->tflops_milli, 121000);
    assert_string_equal(gpu(l.c, "GPU-n-0")->model->name, "H100");
    assert_true(gpu(l.c, "GPU-n-2")->nvlink != 0); /* linked from index 0: symmetric */
    assert_int_equal(gpu(l.c, "GPU-n-2")->numa, 1);
    unload(&l);
}

static void bad_descriptions_name_the_offending_path(void **state)
{
    static const struct {
        const char *yaml;
        int rc;
        const char *err;
    } cases[] = {
        {"pools:\n- name: p\n  nodes:\n  - {name: a, gpus: [{model: L4, count: 1}]}\n"
         "  - {name: b, gpus: [{model: L4, count: 1}]}\n"
         "  - {name: c, gpus: [{model: L4, count: 1}]}\n"
         "  - {name: d, gpus: [{model: L4, count: 1}, {model: A1000}]}\n",
         TF_EINVAL, "pools[0].nodes[3].gpus[1].model: unknown GPU model \"A1000\""},
        {"pools:\n- name: p\n  colour: red\n  nodes: []\n", TF_EINVAL,
         "pools[0].colour: unknown key"},
        {"pool: []\n", TF_EINVAL, "pool: unknown key"},
        {"{}\n", TF_EINVAL, "pools: required"},
        {"pools: []\n", TF_EINVAL, "pools: needs at least one pool"},
        {"pools: {a: 1}\n", TF_EINVAL, "pools: must be a list"},
        {"pools:\n- name: p\n  placement: Compact\n  nodes: []\n", TF_EINVAL,
         "pools[0].placement: unknown placement mode \"Compact\" (CompactFirst, LowLoadFirst, "
         "NodeCompactGPULowLoad)"},
        {"pools:\n- name: p\n  oversubscription: {tflopsOversellRatio: 50}\n  nodes: []\n",
         TF_ERANGE, "pools[0].oversubscription.tflopsOversellRatio: 50 out of range 100..100000"},
        {"pools:\n- name: p\n  oversubscription: {tflopsOversellRatio: \"5\"}\n  nodes: []\n",
         TF_EINVAL,
         "pools[0].oversubscription.tflopsOversellRatio: must be an integer, got "
         "\"5\""},
        {"pools:\n- name: p\n  scoring: {vramWeight: 0.6, tflopsWeight: 0.6}\n  nodes: []\n",
         TF_EINVAL, "pools[0].scoring: vramWeight + tflopsWeight must be 1"},
        {"pools:\n- name: p\n  nodes:\n  - name: n\n    gpus: [{model: L4, count: 65}]\n",
         TF_ERANGE, "pools[0].nodes[0].gpus[0].count: 65 out of range 1..64"},
        {"pools:\n- name: p\n  nodes:\n  - name: n\n    gpus: [{model: L4, index: 1}, {model: "
         "L4, index: 1}]\n",
         TF_EINVAL, "pools[0].nodes[0].gpus[1].index: index 1 used twice"},
        {"pools:\n- name: p\n  nodes:\n  - name: n\n    gpus: [{model: L4, count: 1, uuid: "
         "x}]\n",
         TF_EINVAL, "pools[0].nodes[0].gpus[0].uuid: unknown key"},
        {"pools:\n- name: p\n  nodes:\n  - name: n\n    gpus: [{model: L4, phase: running}]\n",
         TF_EINVAL,
         "pools[0].nodes[0].gpus[0].phase: unknown phase \"running\" (Pending, "
         "Provisioning, Running, Unknown, Destroying, Migrating)"},
        {"pools:\n- name: p\n  nodes:\n  - name: n\n    gpus: [{model: L4, vram: 4Gb}]\n",
         TF_EPARSE,
         "pools[0].nodes[0].gpus[0].vram: \"4Gb\" is not a valid quantity: unknown "
         "suffix \"Gb\""},
        {"pools:\n- name: p\n  nodes:\n  - name: n\n    gpus: []\n", TF_EINVAL,
         "pools[0].nodes[0].gpus: needs at least one GPU"},
        {"pools:\n- name: p\n  nodes:\n  - {name: n, gpus: [{model: L4}]}\n  - {name: n, gpus: "
         "[{model: L4, uuid: u2}]}\n",
         TF_EINVAL, "pools[0].nodes[1]: duplicate node \"n\""},
        {"pools:\n- name: p\n  nodes:\n  - {name: n, isolationMode: shared, gpus: [{model: "
         "L4}]}\n",
         TF_EINVAL,
         "pools[0].nodes[0].isolationMode: \"shared\" is not a node mode (soft, hard "
         "or partitioned)"},
        {"pools:\n- name: p\n  nodeManagerConfig:\n    isolationModeRules: [{mode: hard}]\n"
         "  nodes: []\n",
         TF_EINVAL, "pools[0].nodeManagerConfig.isolationModeRules[0].selector: required"},
        {"pools:\n- name: p\n  nodeManagerConfig:\n    isolationModeRules:\n    - mode: hard\n"
         "      selector: {matchLabels: \"a=b\"}\n  nodes: []\n",
         TF_EINVAL,
         "pools[0].nodeManagerConfig.isolationModeRules[0].selector.matchLabels: must be a "
         "mapping"},
        {"pools:\n- name: p\n  nodeManagerConfig:\n    isolationModeRules:\n    - mode: hard\n"
         "      selector: {matchExpressions: [{key: a, operator: Like}]}\n  nodes: []\n",
         TF_EINVAL,
         "pools[0].nodeManagerConfig.isolationModeRules[0].selector.matchExpressions[0]."
         "operator: unknown operator \"Like\" (In, NotIn, Exists, DoesNotExist)"},
        {"pools:\n- name: p\n  nodes:\n  - {name: n, labels: {a: 1}, gpus: [{model: L4}]}\n",
         TF_EINVAL, "pools[0].nodes[0].labels.a: must be a string"},
        {"isolationModePolicy: sometimes\npools: []\n", TF_EINVAL,
         "isolationModePolicy: unknown policy \"sometimes\" (dynamic or static)"},
        {"partitionTemplates:\n- {model: L4, computeSlots: 4, memorySlots: 4, templates: [{id: "
         "a, computeSlots: 5, memorySlots: 1}]}\npools: []\n",
         TF_ERANGE, "partitionTemplates[0].templates[0].computeSlots: 5 out of range 1..4"},
        {"quotas:\n- namespace: a\n  total: {requests: {tflops: lots}}\npools: []\n", TF_EPARSE,
         "quotas[0].total.requests.tflops: \"lots\" is not a valid quantity: no "
         "digits"},
        {"pools:\n- name: p\n  qosConfig: {pricing: [{qos: low, requests: "
         "{perFP16TFlopsPerHour: \"0.0000000001\"}}]}\n  nodes: []\n",
         TF_EINVAL,
         "pools[0].qosConfig.pricing[0].requests.perFP16TFlopsPerHour: \"0.0000000001\" "
         "is finer than one billionth"},
        {"pools:\n- name: p\n  qosConfig: {pricing: [{qos: low, limitsOverRequests: '0.1', "
         "limitsOverRequestsChargingRatio: 10}]}\n  nodes: []\n",
         TF_EINVAL,
         "pools[0].qosConfig.pricing[0].limitsOverRequests: set only one of limitsOverRequests "
         "(a ratio) and limitsOverRequestsChargingRatio (a percent)"},
        {"pools:\n- name: p\n  oversubscription: {tflopsOversellRatio: 200}\n  capacityConfig: "
         "{oversubscription: {tflopsOversellRatio: 300}}\n  nodes: []\n",
         TF_EINVAL,
         "pools[0].oversubscription: also set in capacityConfig.oversubscription: set it once"},
        {"a: 1\n---\nb: 2\n", TF_EINVAL, "a cluster description is one document, found 2"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = load_err(cases[i].yaml, cases[i].rc);
        if (strcmp(got, cases[i].err))
            fail_msg("case %zu:\n got: %s\nwant: %s", i, got, cases[i].err);
    }
    /* Syntax errors come from the YAML reader with a line and column. */
    const char *e = load_err("pools: \"unclosed\n", TF_EPARSE);
    assert_non_null(strstr(e, "line"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_mixed_pool_example_loads),
        cmocka_unit_test(the_mig_example_resolves_node_modes_from_rules),
        cmocka_unit_test(the_multi_pool_example_keeps_pool_settings_and_quotas),
        cmocka_unit_test(json_descriptions_work_too),
        cmocka_unit_test(explicit_indexes_are_kept_and_counts_fill_the_gaps),
        cmocka_unit_test(upstream_pool_spec_spellings_are_read),
        cmocka_unit_test(bad_descriptions_name_the_offending_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
