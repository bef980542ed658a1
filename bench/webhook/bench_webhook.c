/* SPDX-License-Identifier: Apache-2.0
 *
 * Benchmark: the mutating webhook over HTTPS at a fixed request rate (default 1,000 req/s for
 * 3 s), as kube-apiserver drives it: AdmissionReview of a seed 001 pod (soft mode: limiter
 * injection, normalised annotations, JSONPatch answer) POSTed on keep-alive TLS connections.
 * Open loop: each request has a scheduled send time, and its latency runs from that time to
 * the end of the response, so a slow answer also delays (and is charged to) the ones queued
 * behind it. Each connection first makes one unmeasured request (the TLS handshake). Prints
 * p50/p99/max latency, the achieved rate and the cost of one review in process (no HTTP, no
 * TLS).
 * Usage: bench_webhook [RATE [SECONDS [CONNECTIONS]]]
 * (defaults 1000, 3, 4 keep-alive connections; the server as tf-controller runs it, one thread
 * per connection)
 */
#include "common/log.h"
#include "controller/https.h"
#include "controller/tls.h"
#include "controller/webhook.h"

#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static json_object *env_profile(void *arg, const char *ns, const char *name)
{
    return NULL;
}
static json_object *env_ns(void *arg, const char *name)
{
    return NULL;
}
static json_object *env_pool(void *arg, const char *name)
{
    return json_tokener_parse("{\"metadata\":{\"name\":\"default-pool\"},\"spec\":{"
                              "\"qosConfig\":{\"defaultQoS\":\"medium\"}}}");
}
static json_object *env_owner(void *arg, const char *ns, const char *kind, const char *name)
{
    return NULL;
}
static int env_count(void *arg, const char *ns, const char *owner)
{
    return 0;
}
static int env_ensure(void *arg, const char *ns, const char *name, json_object *w, bool join,
                      char *err, size_t errlen)
{
    return 0; /* the API write is the API server's latency, not the webhook's */
}

static struct tf_webhook wh;

static void handler(const struct tf_http_req *req, struct tf_http_resp *resp, void *arg)
{
    resp->body = tf_webhook_handle(&wh, req->body, req->body_len, &resp->status);
}

static const char review[] =
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"
    "\"uid\":\"b1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"resource\":{"
    "\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},\"namespace\":\"ml\",\"operation\":"
    "\"CREATE\",\"userInfo\":{\"username\":\"system:serviceaccount:kube-system:replicaset-"
    "controller\"},\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{"
    "\"generateName\":\"pytorch-example-5d8f9-\",\"namespace\":\"ml\",\"labels\":{\"app\":"
    "\"pytorch\",\"tensor-fusion.ai/enabled\":\"true\"},\"annotations\":{"
    "\"tensor-fusion.ai/inject-container\":\"python\",\"tensor-fusion.ai/tflops-limit\":\"20\","
    "\"tensor-fusion.ai/tflops-request\":\"10\",\"tensor-fusion.ai/vram-limit\":\"4Gi\","
    "\"tensor-fusion.ai/vram-request\":\"4Gi\",\"tensor-fusion.ai/qos\":\"medium\","
    "\"tensor-fusion.ai/is-local-gpu\":\"true\",\"tensor-fusion.ai/gpu-count\":\"1\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"python\",\"image\":\"pytorch/pytorch:2.4\","
    "\"command\":[\"python\",\"train.py\"],\"env\":[{\"name\":\"EPOCHS\",\"value\":\"10\"}],"
    "\"resources\":{\"limits\":{\"cpu\":\"4\",\"memory\":\"16Gi\"}},\"volumeMounts\":[{\"name\":"
    "\"data\",\"mountPath\":\"/data\"}]},{\"name\":\"sidecar\",\"image\":\"busybox\"}],"
    "\"volumes\":[{\"name\":\"data\",\"emptyDir\":{}}]}},\"oldObject\":null,\"dryRun\":false}}";

/* Workers warm up (TLS handshake), then main sets the common start time between the two
 * waits. */
static pthread_barrier_t ready;
static double start;

struct worker {
    char url[128];
    const char *ca;
    double interval; /* seconds */
    int n, offset, stride;
    double *lat; /* shared array, slots offset + k*stride */
    int errors;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t sink(char *d, size_t sz, size_t nm, void *arg)
{
    size_t n = sz * nm;
    int *ok = arg;
    if (n && memmem(d, n, "\"allowed\":true", 14))
        *ok = 1;
    return n;
}

static void *run(void *arg)
{
    struct worker *w = arg;
    CURL *h = curl_easy_init();
    struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
    struct curl_blob blob = {(void *)w->ca, strlen(w->ca), CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_URL, w->url);
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, review);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(review));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    int ok = 0;
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &ok);
    if (curl_easy_perform(h) != CURLE_OK || !ok)
        w->errors++;
    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&ready);
    for (int k = 0; k < w->n; k++) {
        int i = w->offset + k * w->stride;
        double due = start + i * w->interval;
        double t = now_s();
        if (due > t) {
            struct timespec ts = {(time_t)(due - t), (long)((due - t - (time_t)(due - t)) * 1e9)};
            nanosleep(&ts, NULL);
        }
        ok = 0;
        if (curl_easy_perform(h) != CURLE_OK || !ok)
            w->errors++;
        w->lat[i] = now_s() - due;
    }
    curl_slist_free_all(hl);
    curl_easy_cleanup(h);
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int rate = argc > 1 ? atoi(argv[1]) : 1000;
    double secs = argc > 2 ? atof(argv[2]) : 3.0;
    int conns = argc > 3 ? atoi(argv[3]) : 4;
    tf_log_set_level(TF_LOG_WARN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct tf_webhook_config cfg;
    tf_webhook_config_init(&cfg);
    struct tf_webhook_env env = {env_profile, env_ns, env_pool, env_owner, env_count,
                                 env_ensure,  NULL,   NULL,     NULL,      NULL,
                                 NULL,        NULL,   NULL};
    tf_webhook_init(&wh, &cfg, &env);
    struct tf_tls_bundle b;
    char err[256];
    const char *san[] = {"127.0.0.1"};
    if (tf_tls_generate("tensor-fusion", "tensor-fusion-sys", san, 1, 1, &b, err, sizeof(err))) {
        fprintf(stderr, "bench_webhook: %s\n", err);
        return 1;
    }
    struct tf_https_opts o = {
        .bind_addr = "127.0.0.1", .cert_pem = b.cert_pem, .key_pem = b.key_pem};
    struct tf_https *s = tf_https_start(&o, handler, NULL, err, sizeof(err));
    if (!s) {
        fprintf(stderr, "bench_webhook: %s\n", err);
        return 1;
    }
    int total = (int)(rate * secs);
    double *lat = calloc((size_t)total, sizeof(double));
    struct worker *w = calloc((size_t)conns, sizeof(*w));
    pthread_t *t = calloc((size_t)conns, sizeof(pthread_t));
    /* Warm-up: one unmeasured request per connection (TLS handshakes are not what
     * kube-apiserver pays per review: it keeps connections alive). */
    pthread_barrier_init(&ready, NULL, (unsigned)conns + 1);
    for (int i = 0; i < conns; i++) {
        snprintf(w[i].url, sizeof(w[i].url), "https://127.0.0.1:%u/mutate-v1-pod",
                 tf_https_port(s));
        w[i].ca = b.ca_pem;
        w[i].interval = 1.0 / rate;
        w[i].offset = i;
        w[i].stride = conns;
        w[i].n = (total - i + conns - 1) / conns;
        w[i].lat = lat;
        pthread_create(&t[i], NULL, run, &w[i]);
    }
    pthread_barrier_wait(&ready);
    start = now_s() + 0.05;
    pthread_barrier_wait(&ready);
    int errors = 0;
    for (int i = 0; i < conns; i++) {
        pthread_join(t[i], NULL);
        errors += w[i].errors;
    }
    double elapsed = now_s() - start;
    qsort(lat, (size_t)total, sizeof(double), cmp);
    printf("webhook_https_rate_target: %d req/s\n", rate);
    printf("webhook_https_rate_achieved: %.0f req/s\n", total / elapsed);
    printf("webhook_https_p50: %.3f ms\n", lat[total / 2] * 1e3);
    printf("webhook_https_p99: %.3f ms\n", lat[(int)(total * 0.99)] * 1e3);
    printf("webhook_https_max: %.3f ms\n", lat[total - 1] * 1e3);
    printf("webhook_https_errors: %d count\n", errors);
    /* The review itself, without HTTP or TLS. */
    int status, n = 20000;
    double t0 = now_s();
    for (int i = 0; i < n; i++)
        free(tf_webhook_handle(&wh, review, strlen(review), &status));
    printf("webhook_review_inprocess: %.1f us\n", (now_s() - t0) / n * 1e6);
    tf_https_destroy(s);
    tf_tls_bundle_free(&b);
    tf_webhook_free(&wh);
    free(lat);
    free(w);
    free(t);
    pthread_barrier_destroy(&ready);
    curl_global_cleanup();
    return errors ? 1 : 0;
}
