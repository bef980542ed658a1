/* SPDX-License-Identifier: Apache-2.0
 *
 * Which containers get GPUs: seed 004 migration from nvidia.com/gpu limits (by label and by
 * auto-migration), multi-container pods, inject-container, container-gpu-count and
 * container-gpus.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "spec_test_util.h"

/* A pod: LABELS lines under metadata.labels, ANN lines under annotations (full keys), and
 * CONTAINERS as the YAML list body under spec.containers. */
static json_object *pod3(const char *labels, const char *ann, const char *containers)
{
    char buf[4096];
    snprintf(buf, sizeof(buf),
             "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {%s}\n"
             "  annotations: {%s}\nspec:\n  containers:\n%s",
             labels, ann, containers);
    return yaml_doc(buf);
}

#define ENABLED "tensor-fusion.ai/enabled: 'true'"
#define SHARED "tensor-fusion.ai/isolation: shared"
#define GPU_APP(n) "  - name: app\n    resources:\n      limits:\n        nvidia.com/gpu: " n "\n"
#define SIDECAR "  - name: log-shipper\n    image: fluent-bit\n"

static const struct tf_spec_container *ctr(const struct tf_spec *s, const char *name)
{
    for (size_t i = 0; i < s->ncontainers; i++)
        if (!strcmp(s->containers[i].name, name))
            return &s->containers[i];
    return NULL;
}

static void seed_004_shared_migration_takes_whole_gpus_from_the_limit(void **state)
{
    struct tf_spec s;
    spec_ok(pod3(ENABLED, SHARED ", tensor-fusion.ai/enabled-replicas: '1'", GPU_APP("1")), NULL,
            NULL, &s);
    assert_true(s.enabled);
    assert_false(s.auto_migrated);
    assert_int_equal(s.isolation, TF_ISOLATION_SHARED);
    assert_true(s.whole_gpu);
    assert_int_equal(s.gpu_count, 1);
    assert_int_equal(s.requests.percent_bp, 10000);
    assert_int_equal(s.limits.percent_bp, 10000);
    assert_int_equal(s.enabled_replicas, 1);
    assert_int_equal(s.ncontainers, 1);
    assert_true(s.containers[0].migrated);
    assert_int_equal(s.containers[0].native_gpus, 1);
    assert_int_equal(s.ninject_containers, 1);
    assert_string_equal(s.inject_containers[0], "app");
    assert_int_equal(s.nwarnings, 0);
    tf_spec_free(&s);
}

static void seed_004_limit_of_n_gpus_gives_gpu_count_n(void **state)
{
    struct tf_spec s;
    spec_ok(pod3(ENABLED, SHARED, GPU_APP("4")), NULL, NULL, &s);
    assert_int_equal(s.gpu_count, 4);
    assert_int_equal(s.containers[0].gpu_count, 4);
    tf_spec_free(&s);
    spec_ok(pod3(ENABLED, SHARED, GPU_APP("'2'")), NULL, NULL, &s); /* quantity string */
    assert_int_equal(s.gpu_count, 2);
    tf_spec_free(&s);
}

static void multi_container_migration_takes_over_only_gpu_containers(void **state)
{
    struct tf_spec s;
    spec_ok(pod3(ENABLED, SHARED,
                 SIDECAR GPU_APP("1") "  - name: trainer\n    resources: {limits: "
                                      "{nvidia.com/gpu: 2, cpu: '4'}}\n"),
            NULL, NULL, &s);
    assert_int_equal(s.ncontainers, 2);
    assert_null(ctr(&s, "log-shipper"));
    assert_int_equal(ctr(&s, "app")->gpu_count, 1);
    assert_int_equal(ctr(&s, "trainer")->gpu_count, 2);
    assert_int_equal(s.gpu_count, 3); /* device plugin semantics: distinct GPUs */
    assert_int_equal(s.ninject_containers, 2);
    tf_spec_free(&s);
}

static void migration_without_shared_caps_compute_at_one_gpu(void **state)
{
    struct tf_spec s;
    spec_ok(pod3(ENABLED, "tensor-fusion.ai/vram-limit: 8Gi", GPU_APP("1")), NULL, NULL, &s);
    assert_int_equal(s.isolation, TF_ISOLATION_SOFT);
    assert_false(s.whole_gpu);
    assert_true(s.limits.percent_set);
    assert_int_equal(s.limits.percent_bp, 10000);
    assert_int_equal(s.requests.percent_bp, 10000);
    assert_int_equal(s.limits.vram_bytes, 8 * GiB);
    assert_int_equal(s.gpu_count, 1);
    tf_spec_free(&s);
    /* A TFLOPS limit replaces the implied 100 %. */
    spec_ok(pod3(ENABLED, "tensor-fusion.ai/tflops-limit: '30'", GPU_APP("1")), NULL, NULL, &s);
    assert_false(s.limits.percent_set);
    assert_int_equal(s.limits.tflops_milli, 30000);
    tf_spec_free(&s);
}

static void gpu_count_annotation_overrides_the_native_limit_with_a_warning(void **state)
{
    struct tf_spec s;
    spec_ok(pod3(ENABLED, SHARED ", tensor-fusion.ai/gpu-count: '2'", GPU_APP("1")), NULL, NULL,
            &s);
    assert_int_equal(s.gpu_count, 2);
    assert_warning(&s, "tensor-fusion.ai/gpu-count", "overrides", "native GPU limits", NULL);
    tf_spec_free(&s);
    /* Below the container's own count too, as upstream: the annotation wins. */
    spec_ok(pod3(ENABLED, SHARED ", tensor-fusion.ai/gpu-count: '1'", GPU_APP("2")), NULL, NULL,
            &s);
    assert_int_equal(s.gpu_count, 1);
    assert_int_equal(s.containers[0].gpu_count, 1);
    assert_true(s.containers[0].migrated);
    assert_warning(&s, "tensor-fusion.ai/gpu-count", "\"1\"", "2 GPUs", NULL);
    tf_spec_free(&s);
}

static void invalid_native_gpu_limit_is_rejected_naming_the_container(void **state)
{
    char e[512];
    spec_err(pod3(ENABLED, SHARED, GPU_APP("'1.5'")), NULL, NULL, e);
    assert_contains(e, "spec.containers[0] (app)", "nvidia.com/gpu", "whole number", NULL);
    spec_err(pod3(ENABLED, SHARED, GPU_APP("lots")), NULL, NULL, e);
    assert_contains(e, "nvidia.com/gpu", "\"lots\"", NULL);
    spec_err(pod3(ENABLED, SHARED, GPU_APP("[1]")), NULL, NULL, e);
    assert_contains(e, "nvidia.com/gpu", NULL);
    spec_err(pod3(ENABLED, SHARED, GPU_APP("200")), NULL, NULL, e);
    assert_contains(e, "nvidia.com/gpu", "0..128", NULL);
}

static void zero_native_gpus_is_no_migration(void **state)
{
    char e[512];
    spec_err(pod3(ENABLED, "", GPU_APP("0")), NULL, NULL, e);
    assert_contains(e, "no GPU resources", NULL);
}

static void auto_migration_takes_over_unlabelled_gpu_pods_as_shared(void **state)
{
    struct tf_pool_defaults pool = {.auto_migration = true};
    struct tf_spec s;
    spec_ok(pod3("", "", SIDECAR GPU_APP("1")), NULL, &pool, &s);
    assert_true(s.enabled);
    assert_true(s.auto_migrated);
    assert_int_equal(s.isolation, TF_ISOLATION_SHARED);
    assert_true(s.whole_gpu);
    assert_int_equal(s.ncontainers, 1);
    assert_string_equal(s.containers[0].name, "app");
    tf_spec_free(&s);
    /* An isolation annotation the pod already has is kept. */
    spec_ok(pod3("", "tensor-fusion.ai/isolation: hard", GPU_APP("1")), NULL, &pool, &s);
    assert_true(s.auto_migrated);
    assert_int_equal(s.isolation, TF_ISOLATION_HARD);
    tf_spec_free(&s);
    /* No native GPU limit: nothing to migrate. */
    spec_ok(pod3("", "", SIDECAR), NULL, &pool, &s);
    assert_false(s.enabled);
    tf_spec_free(&s);
    /* A pod that is not ours is never rejected for its containers. */
    spec_ok(pod3("", "", GPU_APP("'1.5'")), NULL, &pool, &s);
    assert_false(s.enabled);
    assert_warning(&s, "auto-migration skipped", "nvidia.com/gpu", NULL);
    tf_spec_free(&s);
    spec_ok(yaml_doc("metadata: {name: x}\nspec: {containers: [{image: x}, 3]}\n"), NULL, NULL, &s);
    assert_false(s.enabled);
    tf_spec_free(&s);
    /* Without the flag the same pod is left alone. */
    spec_ok(pod3("", "", GPU_APP("1")), NULL, NULL, &s);
    assert_false(s.enabled);
    tf_spec_free(&s);
}

static void single_container_pod_gets_the_gpus_by_default(void **state)
{
    struct tf_spec s;
    spec_ok(pod3(ENABLED, "tensor-fusion.ai/tflops-limit: '1', tensor-fusion.ai/gpu-count: '2'",
                 "  - name: main\n"),
            NULL, NULL, &s);
    assert_int_equal(s.ncontainers, 1);
    assert_string_equal(s.containers[0].name, "main");
    assert_int_equal(s.containers[0].gpu_count, 2);
    assert_false(s.containers[0].migrated);
    tf_spec_free(&s);
}

static void multi_container_pod_needs_inject_container(void **state)
{
    char e[512];
    spec_err(pod3(ENABLED, "tensor-fusion.ai/tflops-limit: '1'", "  - name: a\n  - name: b\n"),
             NULL, NULL, e);
    assert_contains(e, "tensor-fusion.ai/inject-container", "2 containers", NULL);
    struct tf_spec s;
    spec_ok(pod3(ENABLED,
                 "tensor-fusion.ai/tflops-limit: '1', tensor-fusion.ai/inject-container: 'b, a'",
                 "  - name: a\n  - name: b\n  - name: c\n"),
            NULL, NULL, &s);
    assert_int_equal(s.ncontainers, 2);
    assert_string_equal(s.containers[0].name, "b");
    assert_int_equal(s.containers[1].gpu_count, 1);
    assert_string_equal(s.inject_containers[1], "a");
    tf_spec_free(&s);
}

static void inject_container_must_name_a_pod_container(void **state)
{
    char e[512];
    spec_err(pod3(ENABLED,
                  "tensor-fusion.ai/tflops-limit: '1', tensor-fusion.ai/inject-container: python",
                  "  - name: app\n"),
             NULL, NULL, e);
    assert_contains(e, "tensor-fusion.ai/inject-container", "\"python\"", "spec.containers", NULL);
    spec_err(pod3(ENABLED,
                  "tensor-fusion.ai/tflops-limit: '1', tensor-fusion.ai/inject-container: ' , '",
                  "  - name: app\n"),
             NULL, NULL, e);
    assert_contains(e, "tensor-fusion.ai/inject-container", "no container", NULL);
    struct tf_spec s;
    spec_ok(pod3(ENABLED,
                 "tensor-fusion.ai/tflops-limit: '1', tensor-fusion.ai/inject-container: 'app,app'",
                 "  - name: app\n"),
            NULL, NULL, &s);
    assert_int_equal(s.ninject_containers, 1);
    assert_warning(&s, "tensor-fusion.ai/inject-container", "twice", NULL);
    tf_spec_free(&s);
}

static void container_gpu_count_gives_each_container_its_own_gpus(void **state)
{
    struct tf_spec s;
    spec_ok(pod3(ENABLED,
                 "tensor-fusion.ai/tflops-limit: '1', tensor-fusion.ai/container-gpu-count: "
                 "'{\"container-a\":1,\"container-b\":2}'",
                 "  - name: container-a\n  - name: container-b\n  - name: metrics\n"),
            NULL, NULL, &s);
    assert_int_equal(s.ncontainers, 2);
    assert_int_equal(ctr(&s, "container-a")->gpu_count, 1);
    assert_int_equal(ctr(&s, "container-b")->gpu_count, 2);
    assert_null(ctr(&s, "metrics"));
    assert_int_equal(s.gpu_count, 3);
    assert_int_equal(s.ninject_containers, 2);
    tf_spec_free(&s);
    /* An explicit gpu-count at least the largest per-container count is kept. */
    spec_ok(pod3(ENABLED,
                 "tensor-fusion.ai/tflops-limit: '1', tensor-fusion.ai/gpu-count: '2', "
                 "tensor-fusion.ai/container-gpu-count: '{\"a\":1,\"b\":2}'",
                 "  - name: a\n  - name: b\n"),
            NULL, NULL, &s);
    assert_int_equal(s.gpu_count, 2);
    tf_spec_free(&s);
}

static void container_gpu_count_errors_name_the_key(void **state)
{
    const char *bad[][2] = {
        {"'{\"a\":1'", "not a JSON object"}, {"'[1,2]'", "not a JSON object"},
        {"'{\"zz\":1}'", "\"zz\""},          {"'{\"a\":0}'", "1..128"},
        {"'{\"a\":\"1\"}'", "1..128"},       {"'{\"a\":1.5}'", "1..128"},
        {"'{}'", "names no container"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char ann[256], e[512];
        snprintf(ann, sizeof(ann),
                 "tensor-fusion.ai/tflops-limit: '1', tensor-fusion.ai/container-gpu-count: %s",
                 bad[i][0]);
        spec_err(pod3(ENABLED, ann, "  - name: a\n  - name: b\n"), NULL, NULL, e);
        assert_contains(e, "tensor-fusion.ai/container-gpu-count", bad[i][1], NULL);
    }
    char e[512];
    spec_err(pod3(ENABLED,
                  "tensor-fusion.ai/tflops-limit: '1', tensor-fusion.ai/gpu-count: '1', "
                  "tensor-fusion.ai/container-gpu-count: '{\"a\":2}'",
                  "  - name: a\n"),
             NULL, NULL, e);
    assert_contains(e, "tensor-fusion.ai/gpu-count", "tensor-fusion.ai/container-gpu-count", NULL);
    spec_err(pod3(ENABLED,
                  "tensor-fusion.ai/tflops-limit: '1', tensor-fusion.ai/inject-container: a, "
                  "tensor-fusion.ai/container-gpu-count: '{\"a\":1,\"b\":1}'",
                  "  - name: a\n  - name: b\n"),
             NULL, NULL, e);
    assert_contains(e, "tensor-fusion.ai/container-gpu-count", "\"b\"",
                    "tensor-fusion.ai/inject-container", NULL);
    spec_err(pod3(ENABLED,
                  "tensor-fusion.ai/tflops-limit: '1', tensor-fusion.ai/inject-container: 'a,b', "
                  "tensor-fusion.ai/container-gpu-count: '{\"a\":1}'",
                  "  - name: a\n  - name: b\n"),
             NULL, NULL, e);
    assert_contains(e, "tensor-fusion.ai/container-gpu-count", "\"b\"", NULL);
}

static void container_gpus_records_the_assigned_ids(void **state)
{
    struct tf_spec s;
    spec_ok(pod3(ENABLED,
                 "tensor-fusion.ai/tflops-limit: '1', tensor-fusion.ai/container-gpu-count: "
                 "'{\"container-a\":2,\"container-b\":1}', tensor-fusion.ai/container-gpus: "
                 "'{\"container-a\":[\"gpu-1\",\"gpu-2\"],\"container-b\":[\"gpu-3\"]}'",
                 "  - name: container-a\n  - name: container-b\n"),
            NULL, NULL, &s);
    const struct tf_spec_container *a = ctr(&s, "container-a");
    assert_int_equal(a->ngpu_ids, 2);
    assert_string_equal(a->gpu_ids[1], "gpu-2");
    assert_string_equal(ctr(&s, "container-b")->gpu_ids[0], "gpu-3");
    assert_int_equal(s.nwarnings, 0);
    tf_spec_free(&s);
    /* The seed's own example has 2 IDs for a count of 1: kept, with a warning. */
    spec_ok(pod3(ENABLED,
                 "tensor-fusion.ai/tflops-limit: '1', tensor-fusion.ai/container-gpu-count: "
                 "'{\"container-a\":1,\"container-b\":2}', tensor-fusion.ai/container-gpus: "
                 "'{\"container-a\":[\"gpu-1\",\"gpu-2\"],\"container-b\":[\"gpu-3\"]}'",
                 "  - name: container-a\n  - name: container-b\n"),
            NULL, NULL, &s);
    assert_warning(&s, "tensor-fusion.ai/container-gpus", "container-a", "2 GPU IDs for 1", NULL);
    tf_spec_free(&s);
}

static void container_gpus_errors_name_the_key(void **state)
{
    const char *bad[][2] = {
        {"'nope'", "not a JSON object"},          {"'{\"app\":\"gpu-1\"}'", "list"},
        {"'{\"app\":[1]}'", "non-empty strings"}, {"'{\"app\":[\"\"]}'", "non-empty strings"},
        {"'{\"app\":[\"g\",\"g\"]}'", "twice"},   {"'{\"ghost\":[\"g\"]}'", "\"ghost\""},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char ann[256], e[512];
        snprintf(ann, sizeof(ann),
                 "tensor-fusion.ai/tflops-limit: '1', tensor-fusion.ai/container-gpus: %s",
                 bad[i][0]);
        spec_err(pod3(ENABLED, ann, "  - name: app\n"), NULL, NULL, e);
        assert_contains(e, "tensor-fusion.ai/container-gpus", bad[i][1], NULL);
    }
    struct tf_spec s;
    spec_ok(pod3(ENABLED,
                 "tensor-fusion.ai/tflops-limit: '1', tensor-fusion.ai/inject-container: app, "
                 "tensor-fusion.ai/container-gpus: '{\"side\":[\"g\"]}'",
                 "  - name: app\n  - name: side\n"),
            NULL, NULL, &s);
    assert_warning(&s, "tensor-fusion.ai/container-gpus", "\"side\"", "does not use", NULL);
    tf_spec_free(&s);
}

static void malformed_containers_are_rejected(void **state)
{
    char e[512];
    spec_err(yaml_doc("metadata: {labels: {tensor-fusion.ai/enabled: 'true'}}\n"
                      "spec: {containers: {name: a}}\n"),
             NULL, NULL, e);
    assert_contains(e, "spec.containers", "list", NULL);
    spec_err(yaml_doc("metadata: {labels: {tensor-fusion.ai/enabled: 'true'}}\n"
                      "spec: {containers: [{image: x}]}\n"),
             NULL, NULL, e);
    assert_contains(e, "spec.containers[0]", "name", NULL);
    spec_err(yaml_doc("metadata: {labels: {tensor-fusion.ai/enabled: 'true'}}\n"
                      "spec: {containers: [{name: a}, {name: a}]}\n"),
             NULL, NULL, e);
    assert_contains(e, "spec.containers[1]", "\"a\"", "twice", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_004_shared_migration_takes_whole_gpus_from_the_limit),
        cmocka_unit_test(seed_004_limit_of_n_gpus_gives_gpu_count_n),
        cmocka_unit_test(multi_container_migration_takes_over_only_gpu_containers),
        cmocka_unit_test(migration_without_shared_caps_compute_at_one_gpu),
        cmocka_unit_test(gpu_count_annotation_overrides_the_native_limit_with_a_warning),
        cmocka_unit_test(invalid_native_gpu_limit_is_rejected_naming_the_container),
        cmocka_unit_test(zero_native_gpus_is_no_migration),
        cmocka_unit_test(auto_migration_takes_over_unlabelled_gpu_pods_as_shared),
        cmocka_unit_test(single_container_pod_gets_the_gpus_by_default),
        cmocka_unit_test(multi_container_pod_needs_inject_container),
        cmocka_unit_test(inject_container_must_name_a_pod_container),
        cmocka_unit_test(container_gpu_count_gives_each_container_its_own_gpus),
        cmocka_unit_test(container_gpu_count_errors_name_the_key),
        cmocka_unit_test(container_gpus_records_the_assigned_ids),
        cmocka_unit_test(container_gpus_errors_name_the_key),
        cmocka_unit_test(malformed_containers_are_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
