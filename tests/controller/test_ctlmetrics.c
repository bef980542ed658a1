/* SPDX-License-Identifier: Apache-2.0
 *
 * The controller's metric tables (controller/ctlmetrics.h) from cluster objects: worker rows
 * with requests, limits and cost from the pool's QoS pricing, node and pool allocation from
 * the GPU objects, pool limits, system counts; what is not a GPU holder is left out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/ctlmetrics.h"

#define GIB 1073741824.0

static json_object *arr(const char *json)
{
    json_object *o = json_tokener_parse(json);
    assert_non_null(o);
    return o;
}

static const char *GPUS =
    "[{\"metadata\":{\"name\":\"gpu-a0\",\"labels\":{\"tensor-fusion.ai/gpupool\":\"p1\"}},"
    "\"status\":{\"uuid\":\"GPU-A0\",\"capacity\":{\"tflops\":\"100\",\"vram\":\"40Gi\"},"
    "\"available\":{\"tflops\":\"70\",\"vram\":\"30Gi\"},"
    "\"nodeSelector\":{\"kubernetes.io/hostname\":\"n1\"}}},"
    " {\"metadata\":{\"name\":\"gpu-a1\",\"labels\":{\"tensor-fusion.ai/gpupool\":\"p1\"}},"
    "\"status\":{\"uuid\":\"GPU-A1\",\"capacity\":{\"tflops\":\"100\",\"vram\":\"40Gi\"},"
    "\"available\":{\"tflops\":\"100\",\"vram\":\"40Gi\"},"
    "\"nodeSelector\":{\"kubernetes.io/hostname\":\"n1\"}}},"
    " {\"metadata\":{\"name\":\"gpu-b0\"},"
    "\"status\":{\"uuid\":\"GPU-B0\",\"capacity\":{\"tflops\":\"50\",\"vram\":\"20Gi\"},"
    "\"nodeSelector\":{\"kubernetes.io/hostname\":\"n2\"}}}]";

static const char *POOLS =
    "[{\"metadata\":{\"name\":\"p1\"},\"status\":{\"phase\":\"Running\"},"
    "\"spec\":{\"capacityConfig\":{\"oversubscription\":{\"tflopsOversellRatio\":200}},"
    "\"qosConfig\":{\"pricing\":[{\"qos\":\"medium\",\"requests\":{\"perFP16TFlopsPerHour\":"
    "\"$0.36\",\"perGBOfVRAMPerHour\":0.72},\"limitsOverRequests\":\"0.5\"}]}}},"
    " {\"metadata\":{\"name\":\"default-pool\"},\"spec\":{}}]";

static const char *GPUNODES =
    "[{\"metadata\":{\"name\":\"n1\"},\"status\":{\"phase\":\"Running\"}}]";

/* A pod: NAME, annotations JSON, component label, phase. */
static json_object *pods(void)
{
    return arr(
        "["
        /* soft, 20 TFLOPS / 40 limit, 5Gi / 10Gi, on GPU-A0: priced */
        "{\"metadata\":{\"name\":\"w1\",\"namespace\":\"ml\",\"labels\":{"
        "\"tensor-fusion.ai/component\":\"client\"},\"annotations\":{"
        "\"tensor-fusion.ai/gpu-ids\":\"GPU-A0\",\"tensor-fusion.ai/gpupool\":\"p1\","
        "\"tensor-fusion.ai/workload\":\"train\",\"tensor-fusion.ai/tflops-request\":\"20\","
        "\"tensor-fusion.ai/tflops-limit\":\"40\",\"tensor-fusion.ai/vram-request\":\"5Gi\","
        "\"tensor-fusion.ai/vram-limit\":\"10Gi\"}},\"spec\":{\"nodeName\":\"n1\"},"
        "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\","
        "\"status\":\"True\"}]}},"
        /* percent, on GPU-A0 (100 TFLOPS): 10 % -> 10 TFLOPS; QoS high: not priced */
        "{\"metadata\":{\"name\":\"w2\",\"namespace\":\"ml\",\"labels\":{"
        "\"tensor-fusion.ai/component\":\"client\"},\"annotations\":{"
        "\"tensor-fusion.ai/gpu-ids\":\"GPU-A0\",\"tensor-fusion.ai/gpupool\":\"p1\","
        "\"tensor-fusion.ai/qos\":\"high\",\"tensor-fusion.ai/compute-percent-request\":\"10\","
        "\"tensor-fusion.ai/vram-request\":\"5Gi\"}},\"spec\":{\"nodeName\":\"n1\"},"
        "\"status\":{\"phase\":\"Pending\"}},"
        /* shared, whole GPU-B0, default pool */
        "{\"metadata\":{\"name\":\"w3\",\"namespace\":\"ml\",\"labels\":{"
        "\"tensor-fusion.ai/component\":\"client\"},\"annotations\":{"
        "\"tensor-fusion.ai/gpu-ids\":\"GPU-B0\",\"tensor-fusion.ai/isolation\":\"shared\"}},"
        "\"spec\":{\"nodeName\":\"n2\"},\"status\":{\"phase\":\"Running\"}},"
        /* a remote client (no GPU), a finished pod and a plain pod: no rows */
        "{\"metadata\":{\"name\":\"c1\",\"namespace\":\"ml\",\"labels\":{"
        "\"tensor-fusion.ai/component\":\"client\"},\"annotations\":{"
        "\"tensor-fusion.ai/is-local-gpu\":\"false\"}}},"
        "{\"metadata\":{\"name\":\"done\",\"namespace\":\"ml\",\"labels\":{"
        "\"tensor-fusion.ai/component\":\"client\"},\"annotations\":{"
        "\"tensor-fusion.ai/gpu-ids\":\"GPU-A1\"}},\"status\":{\"phase\":\"Succeeded\"}},"
        "{\"metadata\":{\"name\":\"plain\",\"namespace\":\"ml\"}}"
        "]");
}

static const struct tf_lp_point *row(const struct tf_lp_point *p, size_t n, const char *meas,
                                     const char *tag, const char *value)
{
    for (size_t i = 0; i < n; i++) {
        const char *v = tf_lp_tag_get(&p[i], tag);
        if (strcmp(p[i].measurement, meas) == 0 && v && strcmp(v, value) == 0)
            return &p[i];
    }
    return NULL;
}

static double f(const struct tf_lp_point *p, const char *key)
{
    const struct tf_lp_field *x = tf_lp_field_get(p, key);
    assert_non_null(x);
    return x->type == TF_LP_FLOAT ? x->v.f : x->type == TF_LP_INT ? (double)x->v.i : x->v.b;
}

static size_t count(const struct tf_lp_point *p, size_t n, const char *meas)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += strcmp(p[i].measurement, meas) == 0;
    return k;
}

static void build(struct tf_lp_point **out, size_t *n, json_object **keep)
{
    keep[0] = pods();
    keep[1] = arr(GPUS);
    keep[2] = arr(GPUNODES);
    keep[3] = arr(POOLS);
    struct tf_ctlmetrics_in in = {keep[0],        keep[1],       keep[2], keep[3],
                                  "default-pool", 1700000000000, 60.0};
    assert_int_equal(tf_ctlmetrics_build(&in, out, n), 0);
}

static void worker_rows_carry_requests_limits_readiness_and_the_priced_cost(void **state)
{
    struct tf_lp_point *p;
    size_t n;
    json_object *keep[4];
    build(&p, &n, keep);
    assert_int_equal(count(p, n, "tf_worker_resources"), 3);
    const struct tf_lp_point *w1 = row(p, n, "tf_worker_resources", "worker", "w1");
    assert_non_null(w1);
    assert_string_equal(tf_lp_tag_get(w1, "workload"), "train");
    assert_string_equal(tf_lp_tag_get(w1, "pool"), "p1");
    assert_string_equal(tf_lp_tag_get(w1, "qos"), "medium");
    assert_string_equal(tf_lp_tag_get(w1, "namespace"), "ml");
    assert_true(f(w1, "tflops_request") == 20 && f(w1, "tflops_limit") == 40);
    assert_true(f(w1, "vram_bytes_request") == 5 * GIB && f(w1, "vram_bytes_limit") == 10 * GIB);
    assert_true(f(w1, "gpu_count") == 1 && f(w1, "ready") == 1);
    /* (20 x 0.36 + 5 x 0.72 + 20 x 0.36 x 0.5 + 5 x 0.72 x 0.5) / 3600 x 60 s */
    double want = (7.2 + 3.6 + 3.6 + 1.8) / 3600.0 * 60.0;
    assert_true(f(w1, "raw_cost") > want - 1e-9 && f(w1, "raw_cost") < want + 1e-9);
    const struct tf_lp_point *w2 = row(p, n, "tf_worker_resources", "worker", "w2");
    assert_true(f(w2, "tflops_request") == 10 && f(w2, "tflops_limit") == 10);
    assert_true(f(w2, "vram_bytes_limit") == 40 * GIB); /* no limit: the GPU's VRAM */
    assert_true(f(w2, "raw_cost") == 0 && f(w2, "ready") == 0);
    assert_string_equal(tf_lp_tag_get(w2, "workload"), "w2");
    const struct tf_lp_point *w3 = row(p, n, "tf_worker_resources", "worker", "w3");
    assert_string_equal(tf_lp_tag_get(w3, "pool"), "default-pool");
    assert_true(f(w3, "tflops_request") == 50 && f(w3, "vram_bytes_request") == 20 * GIB);
    for (int k = 0; k < 4; k++)
        json_object_put(keep[k]);
    free(p);
}

static void nodes_and_pools_report_allocation_of_their_gpus_even_without_workers(void **state)
{
    struct tf_lp_point *p;
    size_t n;
    json_object *keep[4];
    build(&p, &n, keep);
    const struct tf_lp_point *n1 = row(p, n, "tf_node_metrics", "node", "n1");
    assert_non_null(n1);
    assert_string_equal(tf_lp_tag_get(n1, "pool"), "p1");
    assert_string_equal(tf_lp_tag_get(n1, "phase"), "Running");
    assert_true(f(n1, "allocated_tflops") == 30 && f(n1, "allocated_tflops_percent") == 15);
    assert_true(f(n1, "allocated_vram_bytes") == 10 * GIB);
    assert_true(f(n1, "allocated_vram_percent") == 12.5);
    assert_true(f(n1, "allocated_tflops_percent_virtual") == 7.5); /* 30 of 400 */
    assert_true(f(n1, "gpu_count") == 2 && f(n1, "raw_cost") > 0);
    const struct tf_lp_point *n2 = row(p, n, "tf_node_metrics", "node", "n2");
    assert_string_equal(tf_lp_tag_get(n2, "phase"), "Pending"); /* no GPUNode */
    assert_true(f(n2, "allocated_tflops") == 0); /* no available reported: all free */
    const struct tf_lp_point *p1 = row(p, n, "tf_pool_metrics", "pool", "p1");
    assert_string_equal(tf_lp_tag_get(p1, "phase"), "Running");
    assert_true(f(p1, "limited_tflops") == 50);                   /* 40 + 10 */
    assert_true(f(p1, "limited_tflops_percent_virtual") == 12.5); /* 50 of 400 */
    assert_true(f(p1, "limited_vram_bytes") == 50 * GIB);
    const struct tf_lp_point *s1 = row(p, n, "tf_system_metrics", "pool", "p1");
    assert_true(f(s1, "total_workers_cnt") == 2 && f(s1, "total_nodes_cnt") == 1);
    const struct tf_lp_point *sd = row(p, n, "tf_system_metrics", "pool", "default-pool");
    assert_true(f(sd, "total_workers_cnt") == 1 && f(sd, "total_nodes_cnt") == 1);
    for (size_t i = 0; i < n; i++) {
        struct tf_dynbuf b;
        char err[256];
        tf_dynbuf_init(&b, 1 << 16);
        if (tf_lp_encode(&p[i], &b, err, sizeof(err)))
            fail_msg("point %zu (%s) does not encode: %s", i, p[i].measurement, err);
        tf_dynbuf_free(&b);
    }
    for (int k = 0; k < 4; k++)
        json_object_put(keep[k]);
    free(p);
}

static void prices_are_read_as_upstream_writes_them(void **state)
{
    json_object *pools = arr(POOLS);
    json_object *p1 = json_object_array_get_idx(pools, 0);
    double t, v, r;
    assert_true(tf_ctlmetrics_price(p1, "medium", &t, &v, &r));
    assert_true(t == 0.36 && v == 0.72 && r == 0.5);
    assert_false(tf_ctlmetrics_price(p1, "low", &t, &v, &r));
    json_object *q = arr("{\"spec\":{\"qosConfig\":{\"pricing\":[{\"qos\":\"low\",\"requests\":"
                         "{\"perFP16TFlopsPerHour\":\"cheap\"}}]}}}");
    assert_true(tf_ctlmetrics_price(q, "low", &t, &v, &r));
    assert_true(t == 0 && v == 0 && r == 1); /* invalid prices count as unpriced */
    json_object_put(q);
    json_object_put(pools);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(worker_rows_carry_requests_limits_readiness_and_the_priced_cost),
        cmocka_unit_test(nodes_and_pools_report_allocation_of_their_gpus_even_without_workers),
        cmocka_unit_test(prices_are_read_as_upstream_writes_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
