/* SPDX-License-Identifier: Apache-2.0
 *
 * Node requests of Provisioned pools (src/core/provision.h): when a pool needs a node, as
 * upstream TensorFusion decides it (minResources, then warmResources while Running, never
 * past maxResources), requests already pending, and GPUNodeClaim specs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/yamljson.h"
#include "core/provision.h"

#define GiB (INT64_C(1) << 30)

static struct tf_provision_pool pool(const char *yaml)
{
    struct tf_provision_pool p;
    memset(&p, 0, sizeof(p));
    json_object *docs;
    char err[512];
    if (tf_yaml_to_json(yaml, strlen(yaml), &docs, err, sizeof(err)))
        fail_msg("yaml: %s", err);
    if (tf_pool_efficiency_parse(json_object_array_get_idx(docs, 0), "spec", &p.eff, err,
                                 sizeof(err)))
        fail_msg("pool: %s", err);
    json_object_put(docs);
    return p;
}

static const char *SPEC = "capacityConfig:\n"
                          "  minResources: {tflops: '600', vram: 160Gi}\n"
                          "  warmResources: {tflops: '300', vram: 80Gi}\n"
                          "  maxResources: {tflops: '2000', vram: 640Gi}\n"
                          "nodeManagerConfig: {provisioningMode: Provisioned}\n";

static void an_empty_pool_asks_for_its_minimum(void **state)
{
    (void)state;
    struct tf_provision_pool p = pool(SPEC);
    struct tf_provision_decision d;
    tf_provision_plan(&p, &d);
    assert_true(d.request);
    assert_int_equal(d.tflops_milli, 600000);
    assert_int_equal(d.vram_bytes, 160 * GiB);
    assert_int_equal(d.gpus, 1);
    assert_string_equal(d.reason, "short of minResources by 600 TFLOPS / 160Gi VRAM");
}

static void pending_claims_are_not_asked_for_again(void **state)
{
    (void)state;
    struct tf_provision_pool p = pool(SPEC);
    p.pending_tflops_milli = 600000;
    p.pending_vram = 80 * GiB;
    struct tf_provision_decision d;
    tf_provision_plan(&p, &d);
    assert_true(d.request); /* the VRAM still missing */
    assert_int_equal(d.tflops_milli, 0);
    assert_int_equal(d.vram_bytes, 80 * GiB);
    p.pending_vram = 160 * GiB;
    tf_provision_plan(&p, &d);
    assert_false(d.request);
    assert_string_equal(d.reason,
                        "short of minResources by 600 TFLOPS / 160Gi VRAM, already requested");
}

static void warm_capacity_counts_only_while_running(void **state)
{
    (void)state;
    struct tf_provision_pool p = pool(SPEC);
    p.total_tflops_milli = 624000; /* two A100 nodes: the minimum is met */
    p.total_vram = 160 * GiB;
    p.avail_tflops_milli = 100000;
    p.avail_vram = 100 * GiB;
    p.nodes = 2;
    p.gpus = 2;
    struct tf_provision_decision d;
    tf_provision_plan(&p, &d);
    assert_false(d.request); /* Pending pool: upstream waits for Running */
    assert_string_equal(d.reason, "");
    p.running = true;
    tf_provision_plan(&p, &d);
    assert_true(d.request);
    assert_int_equal(d.tflops_milli, 200000);
    assert_int_equal(d.vram_bytes, 0);
    assert_int_equal(d.gpus, 1);
    assert_string_equal(d.reason, "short of warmResources by 200 TFLOPS / 0 VRAM");
}

static void max_resources_stop_the_requests(void **state)
{
    (void)state;
    struct tf_provision_pool p = pool(SPEC);
    p.running = true;
    p.total_tflops_milli = 2000000;
    p.total_vram = 320 * GiB;
    p.avail_tflops_milli = 0;
    p.avail_vram = 0;
    struct tf_provision_decision d;
    tf_provision_plan(&p, &d);
    assert_false(d.request);
    assert_true(d.max_reached);
    assert_non_null(strstr(d.reason, "at maxResources"));
}

static void a_pool_at_its_minimum_and_warm_asks_nothing(void **state)
{
    (void)state;
    struct tf_provision_pool p = pool(SPEC);
    p.running = true;
    p.total_tflops_milli = 1248000;
    p.total_vram = 640 * GiB - 1;
    p.avail_tflops_milli = 400000;
    p.avail_vram = 100 * GiB;
    p.nodes = 2;
    p.gpus = 8;
    struct tf_provision_decision d;
    tf_provision_plan(&p, &d);
    assert_false(d.request);
    assert_false(d.max_reached);
    p.avail_vram = 0;
    tf_provision_plan(&p, &d);
    assert_true(d.request);
    assert_int_equal(d.gpus, 4); /* the pool's GPUs per node */
}

static void claim_specs_need_what_upstream_requires(void **state)
{
    (void)state;
    struct tf_node_claim c;
    char err[256];
    json_object *spec = json_tokener_parse(
        "{\"nodeName\": \"gpu-node-1\", \"nodeClassRef\": {\"group\": \"tensor-fusion.ai\", "
        "\"kind\": \"GPUNodeClass\", \"name\": \"aws\"}, \"tflopsOffered\": \"70\", "
        "\"vramOffered\": \"24Gi\", \"gpuDeviceOffered\": 1}");
    assert_int_equal(tf_node_claim_parse(spec, &c, err, sizeof(err)), 0);
    assert_int_equal(c.tflops_milli, 70000);
    assert_int_equal(c.vram_bytes, 24 * GiB);
    assert_int_equal(c.gpus, 1);
    assert_string_equal(c.node_name, "gpu-node-1");
    assert_string_equal(c.node_class, "aws");
    json_object_object_del(spec, "gpuDeviceOffered");
    assert_int_equal(tf_node_claim_parse(spec, &c, err, sizeof(err)), TF_EINVAL);
    assert_string_equal(err, "spec.gpuDeviceOffered: required");
    json_object_object_add(spec, "gpuDeviceOffered", json_object_new_int(1));
    json_object_object_add(spec, "vramOffered", json_object_new_string("24GB"));
    assert_int_not_equal(tf_node_claim_parse(spec, &c, err, sizeof(err)), 0);
    assert_non_null(strstr(err, "spec.vramOffered"));
    json_object_put(spec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_empty_pool_asks_for_its_minimum),
        cmocka_unit_test(pending_claims_are_not_asked_for_again),
        cmocka_unit_test(warm_capacity_counts_only_while_running),
        cmocka_unit_test(max_resources_stop_the_requests),
        cmocka_unit_test(a_pool_at_its_minimum_and_warm_asks_nothing),
        cmocka_unit_test(claim_specs_need_what_upstream_requires),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
