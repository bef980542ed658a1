/* SPDX-License-Identifier: Apache-2.0
 *
 * Benchmark: the workload model on the webhook's hot path. Parses the seed 001 pod template
 * (and a seed 004 migration pod) from a prebuilt json-c tree, and converts a spec to the JSON
 * contract. Prints `name: value unit` lines.
 */
#include "common/yamljson.h"
#include "core/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char seed001[] = "metadata:\n  labels:\n    tensor-fusion.ai/enabled: \"true\"\n"
                              "  annotations:\n"
                              "    tensor-fusion.ai/inject-container: python\n"
                              "    tensor-fusion.ai/tflops-limit: '20'\n"
                              "    tensor-fusion.ai/tflops-request: '10'\n"
                              "    tensor-fusion.ai/vram-limit: 4Gi\n"
                              "    tensor-fusion.ai/vram-request: 4Gi\n"
                              "    tensor-fusion.ai/qos: medium\n"
                              "    tensor-fusion.ai/workload-profile: default-profile\n"
                              "    tensor-fusion.ai/is-local-gpu: 'true'\n"
                              "    tensor-fusion.ai/gpu-count: '1'\n"
                              "spec:\n  containers: [{name: python}]\n";

static const char seed004[] = "metadata:\n  labels: {tensor-fusion.ai/enabled: 'true'}\n"
                              "  annotations: {tensor-fusion.ai/isolation: shared, "
                              "tensor-fusion.ai/enabled-replicas: '1'}\n"
                              "spec:\n  containers:\n  - name: app\n"
                              "    resources: {limits: {nvidia.com/gpu: 1}}\n"
                              "  - name: log-shipper\n";

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static json_object *doc(const char *y)
{
    json_object *docs;
    char err[256];
    if (tf_manifest_parse(y, strlen(y), &docs, err, sizeof(err))) {
        fprintf(stderr, "bench_spec: %s\n", err);
        exit(1);
    }
    json_object *d = json_object_get(json_object_array_get_idx(docs, 0));
    json_object_put(docs);
    return d;
}

static void bench_parse(const char *name, json_object *pod, int n)
{
    char err[256];
    double t0 = now();
    for (int i = 0; i < n; i++) {
        struct tf_spec s;
        if (tf_spec_parse(pod, NULL, NULL, &s, err, sizeof(err))) {
            fprintf(stderr, "bench_spec: %s\n", err);
            exit(1);
        }
        tf_spec_free(&s);
    }
    printf("%s: %.0f ns/op\n", name, (now() - t0) / n * 1e9);
}

int main(void)
{
    const int n = 200000;
    json_object *a = doc(seed001), *b = doc(seed004);
    bench_parse("spec_parse_seed001", a, n);
    bench_parse("spec_parse_seed004_migration", b, n);
    struct tf_spec s;
    char err[256];
    if (tf_spec_parse(a, NULL, NULL, &s, err, sizeof(err)))
        return 1;
    double t0 = now();
    for (int i = 0; i < n / 4; i++) {
        json_object *j = tf_spec_to_json(&s);
        if (!j || !json_object_to_json_string(j))
            return 1;
        json_object_put(j);
    }
    printf("spec_to_json_string: %.0f ns/op\n", (now() - t0) / (n / 4) * 1e9);
    tf_spec_free(&s);
    json_object_put(a);
    json_object_put(b);
    return 0;
}
