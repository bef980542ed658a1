/* SPDX-License-Identifier: Apache-2.0
 *
 * Benchmark: scheduler-extender filter + prioritize latency as kube-scheduler pays it per pod
 * (nodeCacheCapable: ExtenderArgs with every candidate node name), for 1,000 and 5,000 nodes
 * of 8 GPUs each (mixed models, half of the GPUs partly allocated). Each iteration decodes the
 * ExtenderArgs, asks the allocator, and encodes the ExtenderFilterResult / HostPriorityList,
 * through the same handler the HTTPS server calls. Prints p50/p99 per call.
 * Usage: bench_extender [ITERATIONS]
 */
#include "common/log.h"
#include "controller/extender.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static const char *const models[] = {"A100-80GB", "H100", "L40S", "L4"};
static const char *const vram[] = {"80Gi", "80Gi", "48Gi", "24Gi"};
static const char *const tflops[] = {"312", "989", "362", "121"};

/* A pod as the webhook leaves it; BOUND ones also carry their allocation (GPU 0 of NODE). */
static json_object *pod_json(int i, bool bound, int node)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-%d\","
             "\"namespace\":\"ml\",\"uid\":\"u-%d\",\"labels\":{\"tensor-fusion.ai/enabled\":"
             "\"true\",\"tensor-fusion.ai/component\":\"client\"},\"annotations\":{"
             "\"tensor-fusion.ai/gpupool\":\"default-pool\",\"tensor-fusion.ai/isolation\":"
             "\"soft\",\"tensor-fusion.ai/tflops-request\":\"20\",\"tensor-fusion.ai/tflops-limit"
             "\":\"40\",\"tensor-fusion.ai/vram-request\":\"8Gi\",\"tensor-fusion.ai/vram-limit\":"
             "\"8Gi\"}},\"spec\":{\"containers\":[{\"name\":\"app\"}]}}",
             i, i);
    json_object *o = json_tokener_parse(buf);
    if (bound) {
        char v[32];
        snprintf(v, sizeof(v), "GPU-%d", node * 8);
        json_object_object_add(
            json_object_object_get(json_object_object_get(o, "metadata"), "annotations"),
            "tensor-fusion.ai/gpu-ids", json_object_new_string(v));
        snprintf(v, sizeof(v), "node-%d", node);
        json_object_object_add(json_object_object_get(o, "spec"), "nodeName",
                               json_object_new_string(v));
    }
    return o;
}

static void run(int nodes, int iters)
{
    struct tf_extender *x = tf_extender_new(NULL, "default-pool", "dynamic");
    json_object *gpus = json_object_new_array(), *pools = json_object_new_array(),
                *tpls = json_object_new_array(), *quotas = json_object_new_array(),
                *pods = json_object_new_array();
    json_object_array_add(pools, json_tokener_parse("{\"metadata\":{\"name\":\"default-pool\"},"
                                                    "\"spec\":{\"schedulingConfigTemplate\":"
                                                    "\"t\"}}"));
    json_object_array_add(tpls, json_tokener_parse("{\"metadata\":{\"name\":\"t\"},\"spec\":{"
                                                   "\"placement\":{\"mode\":"
                                                   "\"NodeCompactGPULowLoad\"}}}"));
    char buf[512];
    for (int n = 0; n < nodes; n++) {
        int m = n % 4;
        for (int g = 0; g < 8; g++) {
            snprintf(buf, sizeof(buf),
                     "{\"metadata\":{\"name\":\"gpu-%d\"},\"status\":{\"uuid\":\"GPU-%d\","
                     "\"gpuModel\":\"%s\",\"index\":%d,\"phase\":\"Running\",\"capacity\":{"
                     "\"tflops\":\"%s\",\"vram\":\"%s\"},\"nodeSelector\":{"
                     "\"kubernetes.io/hostname\":\"node-%d\"}}}",
                     n * 8 + g, n * 8 + g, models[m], g, tflops[m], vram[m], n);
            json_object_array_add(gpus, json_tokener_parse(buf));
        }
        if (n % 2 == 0) /* half the nodes already carry a workload on their first GPU */
            json_object_array_add(pods, pod_json(n, true, n));
    }
    double t0 = now_s();
    tf_extender_load(x, gpus, pools, tpls, quotas, pods);
    double load = now_s() - t0;
    /* The ExtenderArgs kube-scheduler sends for the next pod: every node name. */
    json_object *args = json_object_new_object(), *names = json_object_new_array();
    json_object_object_add(args, "Pod", pod_json(999999, false, 0));
    json_object_object_add(args, "Nodes", NULL);
    for (int n = 0; n < nodes; n++) {
        snprintf(buf, sizeof(buf), "node-%d", n);
        json_object_array_add(names, json_object_new_string(buf));
    }
    json_object_object_add(args, "NodeNames", names);
    const char *body = json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN);
    size_t len = strlen(body);
    double *fl = calloc((size_t)iters, sizeof(double)), *pl = calloc((size_t)iters, sizeof(double));
    int fit = 0;
    for (int i = 0; i < iters; i++) {
        struct tf_http_req rf = {"POST", "/scheduler/filter", body, len, NULL};
        struct tf_http_resp out = {200, NULL, NULL};
        double a = now_s();
        tf_extender_handle(x, &rf, &out);
        double b = now_s();
        if (i == 0) {
            json_object *r = json_tokener_parse(out.body);
            fit = (int)json_object_array_length(json_object_object_get(r, "NodeNames"));
            json_object_put(r);
        }
        free(out.body);
        struct tf_http_req rp = {"POST", "/scheduler/prioritize", body, len, NULL};
        struct tf_http_resp out2 = {200, NULL, NULL};
        tf_extender_handle(x, &rp, &out2);
        double c = now_s();
        free(out2.body);
        fl[i] = b - a;
        pl[i] = c - b;
    }
    qsort(fl, (size_t)iters, sizeof(double), cmp);
    qsort(pl, (size_t)iters, sizeof(double), cmp);
    printf("extender_%d_nodes_load_state: %.1f ms\n", nodes, load * 1e3);
    printf("extender_%d_nodes_fit: %d nodes\n", nodes, fit);
    printf("extender_%d_nodes_filter_p50: %.3f ms\n", nodes, fl[iters / 2] * 1e3);
    printf("extender_%d_nodes_filter_p99: %.3f ms\n", nodes, fl[(int)(iters * 0.99)] * 1e3);
    printf("extender_%d_nodes_prioritize_p50: %.3f ms\n", nodes, pl[iters / 2] * 1e3);
    printf("extender_%d_nodes_prioritize_p99: %.3f ms\n", nodes, pl[(int)(iters * 0.99)] * 1e3);
    printf("extender_%d_nodes_filter_plus_prioritize_p50: %.3f ms\n", nodes,
           (fl[iters / 2] + pl[iters / 2]) * 1e3);
    free(fl);
    free(pl);
    json_object_put(args);
    json_object_put(gpus);
    json_object_put(pools);
    json_object_put(tpls);
    json_object_put(quotas);
    json_object_put(pods);
    tf_extender_destroy(x);
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 200;
    tf_log_set_level(TF_LOG_WARN);
    run(1000, iters);
    run(5000, iters);
    return 0;
}
