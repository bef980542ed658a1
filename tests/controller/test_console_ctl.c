/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-controller's web console (src/controller/console.c) over HTTP: the in-memory API server
 * (fakeapi.py) holding GPUs, pods, a TensorFusionWorkload and Events; the GreptimeDB stand-in
 * (fakegreptime.py) written to by the project's own HTTP metrics sink; a real Alertmanager
 * (Debian's prometheus-alertmanager; that part is skipped without it); the console routes on
 * the controller's HTTP server (https.c, plain). Checks the token Secret made at first use,
 * 401 without it, the cluster's inventory with its per-GPU limits, history from GreptimeDB,
 * series with points, alerts of job tensor-fusion, the controller's and scheduler's Events,
 * read-only, the public pages.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>

#include "common/yamljson.h"
#include "controller/base64.h"
#include "controller/console.h"
#include "controller/https.h"
#include "harness.h"
#include "metrics/sink.h"

#define NS "tensor-fusion-sys"

static struct fake_api api, gdb;

static void create(const struct tf_k8s_resource *res, const char *ns, const char *text)
{
    json_object *o = jparse(text);
    char err[512];
    if (tf_k8s_create(api.client, res, ns, o, NULL, err, sizeof(err)))
        fail_msg("create %s: %s", res->plural, err);
    json_object_put(o);
}

static void patch_status(const struct tf_k8s_resource *res, const char *ns, const char *name,
                         const char *text)
{
    json_object *p = jparse(text);
    char err[512];
    if (tf_k8s_merge_patch(api.client, res, ns, name, "status", p, NULL, err, sizeof(err)))
        fail_msg("status of %s: %s", name, err);
    json_object_put(p);
}

static void gpu(const char *name, const char *node, const char *pool, const char *avail_t,
                const char *avail_v)
{
    char buf[1024];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"tensor-fusion.ai/gpupool\":\"%s\"}}}",
             name, pool);
    create(&tf_k8s_gpus, NULL, buf);
    snprintf(buf, sizeof(buf),
             "{\"status\":{\"uuid\":\"GPU-%s\",\"gpuModel\":\"A100-80GB\",\"index\":0,"
             "\"phase\":\"Running\",\"capacity\":{\"tflops\":\"312\",\"vram\":\"80Gi\"},"
             "\"available\":{\"tflops\":\"%s\",\"vram\":\"%s\"},\"message\":\"\","
             "\"nodeSelector\":{\"kubernetes.io/hostname\":\"%s\"}}}",
             name, avail_t, avail_v, node);
    patch_status(&tf_k8s_gpus, NULL, name, buf);
}

static void pod(const char *name, const char *workload, const char *gpu_ids)
{
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
             "\"tensor-fusion.ai/component\":\"client\"},\"annotations\":{"
             "\"tensor-fusion.ai/gpupool\":\"pool-a\",\"tensor-fusion.ai/workload\":\"%s\","
             "\"tensor-fusion.ai/gpu-ids\":\"%s\",\"tensor-fusion.ai/qos\":\"high\","
             "\"tensor-fusion.ai/isolation\":\"soft\",\"tensor-fusion.ai/tflops-request\":\"50\","
             "\"tensor-fusion.ai/tflops-limit\":\"100\",\"tensor-fusion.ai/vram-request\":\"8Gi\","
             "\"tensor-fusion.ai/vram-limit\":\"16Gi\"}},\"spec\":{\"nodeName\":\"node-a\","
             "\"containers\":[{\"name\":\"app\",\"image\":\"x\"}]}}",
             name, workload, gpu_ids);
    create(&tf_k8s_pods, "ml", buf);
}

/* ---- the console on an HTTP server --------------------------------------------------------- */

static struct tf_ctl_console *con;

static void handler(const struct tf_http_req *req, struct tf_http_resp *resp, void *arg)
{
    if (!tf_ctl_console_handle(con, req, resp)) {
        resp->status = 404;
        resp->body = strdup("{\"error\":\"not the console\"}");
    }
}

struct raw {
    long status;
    char headers[4096];
    size_t hlen;
    char *body;
    size_t blen;
};

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
    struct raw *r = arg;
    if (r->hlen + sz * n < sizeof(r->headers)) {
        memcpy(r->headers + r->hlen, p, sz * n);
        r->hlen += sz * n;
        r->headers[r->hlen] = '\0';
    }
    return sz * n;
}

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
    struct raw *r = arg;
    r->body = realloc(r->body, r->blen + sz * n + 1);
    memcpy(r->body + r->blen, p, sz * n);
    r->blen += sz * n;
    r->body[r->blen] = '\0';
    return sz * n;
}

static char base[64];

static json_object *fetch(const char *method, const char *path, const char *auth, struct raw *r)
{
    memset(r, 0, sizeof(*r));
    char url[512], hdr[300];
    snprintf(url, sizeof(url), "%s%s", base, path);
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    if (auth) {
        snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", auth);
        h = curl_slist_append(h, hdr);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return r->body ? json_tokener_parse(r->body) : NULL;
}

static json_object *get_ok(const char *path, const char *tok)
{
    struct raw r;
    json_object *o = fetch("GET", path, tok, &r);
    if (r.status != 200)
        fail_msg("GET %s: %ld %s", path, r.status, r.body ? r.body : "");
    free(r.body);
    assert_non_null(o);
    return o;
}

static json_object *find(json_object *arr, const char *key, const char *val)
{
    for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        const char *v = json_object_get_string(json_object_object_get(e, key));
        if (v && !strcmp(v, val))
            return e;
    }
    return NULL;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Rows as the node agent and the controller write them: train uses 20 TFLOPS, 6 GiB of each
 * of its GPUs over the last two minutes. */
static void write_history(void)
{
    char url[256], err[256];
    snprintf(url, sizeof(url), "%s/v1/influxdb/api/v2/write?db=public&precision=ms", gdb.server);
    struct tf_metrics_sink *s;
    assert_int_equal(tf_metrics_http_sink_new(url, NULL, &s, err, sizeof(err)), 0);
    int64_t now = now_ms();
    for (int i = 0; i < 8; i++) {
        struct tf_lp_point p[3];
        int64_t ts = now - (8 - i) * 15000;
        const char *uuids[2] = {"GPU-gpu-a0", "GPU-gpu-a1"};
        for (int k = 0; k < 2; k++) {
            tf_lp_point_init(&p[k], "tf_worker_usage", ts);
            tf_lp_tag(&p[k], "node", "node-a");
            tf_lp_tag(&p[k], "pool", "pool-a");
            tf_lp_tag(&p[k], "uuid", uuids[k]);
            tf_lp_tag(&p[k], "worker", k ? "train-1" : "train-0");
            tf_lp_tag(&p[k], "namespace", "ml");
            tf_lp_tag(&p[k], "workload", "train");
            tf_lp_float(&p[k], "compute_percentage", 100.0 * 20 / 312);
            tf_lp_float(&p[k], "compute_tflops", 20);
            tf_lp_int(&p[k], "memory_bytes", INT64_C(6) << 30);
            tf_lp_float(&p[k], "memory_percentage", 7.5);
        }
        tf_lp_point_init(&p[2], "tf_gpu_usage", ts);
        tf_lp_tag(&p[2], "node", "node-a");
        tf_lp_tag(&p[2], "pool", "pool-a");
        tf_lp_tag(&p[2], "uuid", "GPU-gpu-a0");
        tf_lp_float(&p[2], "compute_percentage", 100.0 * 20 / 312);
        tf_lp_float(&p[2], "compute_tflops", 20);
        tf_lp_int(&p[2], "memory_bytes", INT64_C(6) << 30);
        tf_lp_float(&p[2], "memory_percentage", 7.5);
        assert_int_equal(tf_metrics_sink_write(s, p, 3, err, sizeof(err)), 0);
        assert_int_equal(tf_metrics_sink_flush(s, err, sizeof(err)), 0);
    }
    tf_metrics_sink_destroy(s);
}

/* ---- Alertmanager ---------------------------------------------------------------------------- */

static pid_t am_pid;
static char am_url[64], am_dir[300];

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    bind(fd, (struct sockaddr *)&sa, sizeof(sa));
    getsockname(fd, (struct sockaddr *)&sa, &len);
    close(fd);
    return ntohs(sa.sin_port);
}

static bool start_alertmanager(void)
{
    const char *bin = "/usr/bin/prometheus-alertmanager";
    if (access(bin, X_OK) != 0)
        return false;
    snprintf(am_dir, sizeof(am_dir), "%s/am", api.dir);
    mkdir(am_dir, 0755);
    char cfg[400], a_cfg[450], a_store[450], a_listen[64];
    snprintf(cfg, sizeof(cfg), "%s/am.yml", am_dir);
    FILE *f = fopen(cfg, "w");
    fputs("route: {receiver: default, group_wait: 1s}\nreceivers: [{name: default}]\n", f);
    fclose(f);
    int port = free_port();
    snprintf(am_url, sizeof(am_url), "http://127.0.0.1:%d", port);
    snprintf(a_cfg, sizeof(a_cfg), "--config.file=%s", cfg);
    snprintf(a_store, sizeof(a_store), "--storage.path=%s/data", am_dir);
    snprintf(a_listen, sizeof(a_listen), "--web.listen-address=127.0.0.1:%d", port);
    am_pid = fork();
    if (am_pid == 0) {
        freopen("/dev/null", "w", stderr);
        execl(bin, bin, a_cfg, a_store, a_listen, "--cluster.listen-address=", (char *)NULL);
        _exit(127);
    }
    /* Up when it answers; then one alert of ours and one of another job. */
    char url[128];
    snprintf(url, sizeof(url), "%s/api/v2/alerts", am_url);
    char now[40], body[1024];
    time_t t = time(NULL) - 60;
    strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    snprintf(body, sizeof(body),
             "[{\"labels\":{\"alertname\":\"IdleGPU\",\"job\":\"tensor-fusion\",\"severity\":"
             "\"P1\",\"uuid\":\"GPU-gpu-b0\",\"node\":\"node-b\"},\"annotations\":{\"summary\":"
             "\"GPU GPU-gpu-b0 is idle\"},\"startsAt\":\"%s\"},"
             "{\"labels\":{\"alertname\":\"DiskFull\",\"job\":\"node-exporter\"},\"startsAt\":"
             "\"%s\"}]",
             now, now);
    for (int i = 0; i < 100; i++) {
        CURL *c = curl_easy_init();
        struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 2L);
        long st = 0;
        CURLcode cc = curl_easy_perform(c);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
        curl_slist_free_all(h);
        curl_easy_cleanup(c);
        if (cc == CURLE_OK && st == 200)
            return true;
        usleep(100000);
    }
    fail_msg("Alertmanager did not come up at %s", am_url);
    return false;
}

/* ---- tests --------------------------------------------------------------------------------- */

static void cluster_inventory_groups_pods_by_workload_with_per_gpu_limits(void **state)
{
    json_object *gpus = jparse(
        "[{\"metadata\":{\"name\":\"g0\",\"labels\":{\"tensor-fusion.ai/gpupool\":\"p\"}},"
        "\"status\":{\"uuid\":\"GPU-0\",\"gpuModel\":\"L4\",\"capacity\":{\"tflops\":\"100\","
        "\"vram\":\"20Gi\"},\"available\":{\"tflops\":\"40\",\"vram\":\"4Gi\"},"
        "\"nodeSelector\":{\"kubernetes.io/hostname\":\"n1\"}}},"
        "{\"metadata\":{\"name\":\"g1\"},\"status\":{\"uuid\":\"GPU-1\",\"capacity\":"
        "{\"tflops\":\"100\",\"vram\":\"20Gi\"}}}]");
    json_object *pods =
        jparse("[{\"metadata\":{\"name\":\"w-0\",\"namespace\":\"ml\",\"labels\":{"
               "\"tensor-fusion.ai/component\":\"client\"},\"annotations\":{"
               "\"tensor-fusion.ai/workload\":\"w\",\"tensor-fusion.ai/gpu-ids\":\"g0\","
               "\"tensor-fusion.ai/compute-percent-limit\":\"30\",\"tensor-fusion.ai/vram-limit\":"
               "\"2Gi\"}},\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\","
               "\"status\":\"True\"}]}},"
               "{\"metadata\":{\"name\":\"w-1\",\"namespace\":\"ml\",\"labels\":{"
               "\"tensor-fusion.ai/component\":\"client\"},\"annotations\":{"
               "\"tensor-fusion.ai/workload\":\"w\",\"tensor-fusion.ai/gpu-ids\":\"GPU-1, g0\"}}},"
               "{\"metadata\":{\"name\":\"plain\",\"namespace\":\"ml\"}},"
               "{\"metadata\":{\"name\":\"done\",\"namespace\":\"ml\",\"labels\":{"
               "\"tensor-fusion.ai/component\":\"client\"},\"annotations\":{"
               "\"tensor-fusion.ai/gpu-ids\":\"g0\"}},\"status\":{\"phase\":\"Succeeded\"}}]");
    json_object *tfw = jparse("[{\"metadata\":{\"name\":\"w\",\"namespace\":\"ml\"},\"status\":{"
                              "\"recommendation\":{\"requests\":{\"tflops\":\"12\"}}}}]");
    json_object *inv = tf_ctl_console_inventory(pods, gpus, NULL, NULL, tfw, "default-pool");
    assert_string_equal(json_object_get_string(json_object_object_get(inv, "mode")), "cluster");
    json_object *g0 = find(json_object_object_get(inv, "gpus"), "uuid", "GPU-0");
    assert_non_null(g0);
    assert_string_equal(json_object_get_string(json_object_object_get(g0, "node")), "n1");
    assert_string_equal(json_object_get_string(json_object_object_get(g0, "pool")), "p");
    assert_int_equal(json_object_get_int(json_object_object_get(g0, "allocatedTflops")), 60);
    assert_int_equal(json_object_get_int64(json_object_object_get(g0, "allocatedVramBytes")),
                     INT64_C(16) << 30);
    json_object *g1 = find(json_object_object_get(inv, "gpus"), "uuid", "GPU-1");
    assert_string_equal(json_object_get_string(json_object_object_get(g1, "pool")), "default-pool");
    json_object *wl = json_object_object_get(inv, "workloads");
    assert_int_equal(json_object_array_length(wl), 1); /* not the plain pod, not the ended one */
    json_object *w = json_object_array_get_idx(wl, 0);
    /* 30 % of a 100-TFLOPS GPU, per GPU; its GPUs by UUID, each once. */
    assert_int_equal(json_object_get_int(json_object_object_get(w, "tflopsLimit")), 30);
    assert_int_equal(json_object_get_int64(json_object_object_get(w, "vramLimitBytes")), INT64_C(2)
                                                                                             << 30);
    json_object *gl = json_object_object_get(w, "gpus");
    assert_int_equal(json_object_array_length(gl), 2);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(gl, 0)), "GPU-0");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(gl, 1)), "GPU-1");
    assert_int_equal(json_object_array_length(json_object_object_get(w, "workers")), 2);
    assert_true(json_object_get_boolean(json_object_object_get(w, "ready")));
    assert_string_equal(
        json_object_get_string(json_object_object_get(
            json_object_object_get(json_object_object_get(w, "recommendation"), "requests"),
            "tflops")),
        "12");
    json_object_put(inv);
    json_object_put(gpus);
    json_object_put(pods);
    json_object_put(tfw);
}

static void the_cluster_console_reads_the_api_server_greptime_and_alertmanager(void **state)
{
    if (fake_start(&api, NULL) || fake_start_script(&gdb, "tests/controller/fakegreptime.py", NULL))
        skip();
    create(&tf_k8s_namespaces, NULL, "{\"metadata\":{\"name\":\"" NS "\"}}");
    create(&tf_k8s_namespaces, NULL, "{\"metadata\":{\"name\":\"ml\"}}");
    gpu("gpu-a0", "node-a", "pool-a", "212", "64Gi");
    gpu("gpu-a1", "node-a", "pool-a", "212", "64Gi");
    gpu("gpu-b0", "node-b", "pool-a", "312", "80Gi");
    pod("train-0", "train", "gpu-a0");
    pod("train-1", "train", "gpu-a1");
    write_history();
    bool am = start_alertmanager();

    struct tf_informer *inf[5];
    const struct tf_k8s_resource *res[5] = {&tf_k8s_pods, &tf_k8s_gpus, &tf_k8s_gpunodes,
                                            &tf_k8s_gpupools, &tf_k8s_tfworkloads};
    for (int i = 0; i < 5; i++) {
        inf[i] = tf_informer_new(api.client, res[i], NULL, NULL, NULL, NULL);
        assert_int_equal(tf_informer_start(inf[i], 30), 0);
        assert_true(tf_informer_wait_synced(inf[i], 10000));
    }
    struct tf_ctl_console_opts o = {.c = api.client,
                                    .namespace = NS,
                                    .default_pool = "pool-a",
                                    .metrics_url = gdb.server,
                                    .alertmanager_url = am ? am_url : NULL,
                                    .pods = inf[0],
                                    .gpus = inf[1],
                                    .gpunodes = inf[2],
                                    .pools = inf[3],
                                    .workloads = inf[4]};
    con = tf_ctl_console_new(&o);
    struct tf_https_opts ho = {.bind_addr = "127.0.0.1", .port = 0};
    char err[512];
    struct tf_https *srv = tf_https_start(&ho, handler, NULL, err, sizeof(err));
    assert_non_null(srv);
    snprintf(base, sizeof(base), "http://127.0.0.1:%u", tf_https_port(srv));

    /* Pages: public, with the console's headers; / goes there. */
    struct raw r;
    json_object *j = fetch("GET", "/", NULL, &r);
    assert_int_equal(r.status, 302);
    assert_non_null(strcasestr(r.headers, "Location: /console/"));
    free(r.body);
    j = fetch("GET", "/console/", NULL, &r);
    assert_int_equal(r.status, 200);
    assert_non_null(strcasestr(r.headers, "Content-Security-Policy: default-src 'none'"));
    assert_non_null(strcasestr(r.headers, "Content-Type: text/html"));
    assert_non_null(strstr(r.body, "app.js"));
    free(r.body);

    /* The API: 401 without the token, which the first request made in its Secret. */
    j = fetch("GET", "/api/v1/console/overview", NULL, &r);
    assert_int_equal(r.status, 401);
    assert_non_null(
        strstr(json_object_get_string(json_object_object_get(j, "error")), TF_CONSOLE_SECRET));
    json_object_put(j);
    free(r.body);
    json_object *sec = NULL;
    assert_int_equal(
        tf_k8s_get(api.client, &tf_k8s_secrets, NS, TF_CONSOLE_SECRET, &sec, err, sizeof(err)), 0);
    size_t n = 0;
    char *tok = tf_base64_decode(tf_json_str(sec, "data", TF_CONSOLE_SECRET_KEY, NULL), &n);
    json_object_put(sec);
    assert_non_null(tok);
    assert_int_equal(n, 64); /* 32 random bytes as hex */
    j = fetch("GET", "/api/v1/console/overview", "0123456789abcdef0123456789abcdef", &r);
    assert_int_equal(r.status, 401);
    json_object_put(j);
    free(r.body);
    j = fetch("POST", "/api/v1/console/overview", tok, &r);
    assert_int_equal(r.status, 405);
    json_object_put(j);
    free(r.body);

    /* The overview: three GPUs on two nodes, the workload with its per-GPU limits and the
     * usage GreptimeDB has. */
    json_object *ov = get_ok("/api/v1/console/overview?range=1h", tok);
    assert_string_equal(json_object_get_string(json_object_object_get(ov, "mode")), "cluster");
    assert_int_equal(json_object_array_length(json_object_object_get(ov, "gpus")), 3);
    assert_int_equal(json_object_array_length(json_object_object_get(ov, "nodes")), 2);
    json_object *a0 = find(json_object_object_get(ov, "gpus"), "uuid", "GPU-gpu-a0");
    assert_int_equal(json_object_get_int(json_object_object_get(a0, "allocatedTflops")), 100);
    assert_non_null(find(json_object_object_get(a0, "workloads"), "name", "train"));
    json_object *train = find(json_object_object_get(ov, "workloads"), "name", "train");
    assert_non_null(train);
    assert_int_equal(json_object_get_int(json_object_object_get(train, "tflopsLimit")), 100);
    assert_int_equal(json_object_get_int(json_object_object_get(train, "tflopsRequest")), 50);
    json_object *u = json_object_object_get(train, "usage");
    assert_non_null(u);
    assert_int_equal(json_object_get_int(json_object_object_get(u, "tflopsAvg")), 20);
    assert_int_equal(json_object_get_int(json_object_object_get(u, "samples")), 16);
    /* 2 GPUs x (50 requested - 20 used). */
    assert_int_equal(json_object_get_int(
                         json_object_object_get(json_object_object_get(train, "unused"), "tflops")),
                     60);
    json_object *tot = json_object_object_get(ov, "totals");
    assert_int_equal(json_object_get_int(json_object_object_get(tot, "nodesEmpty")), 1);
    json_object_put(ov);

    /* A GPU's series through GreptimeDB's SQL (date_bin buckets). */
    json_object *gv = get_ok("/api/v1/console/gpus/GPU-gpu-a0?range=15m", tok);
    json_object *c = json_object_object_get(json_object_object_get(gv, "series"), "computePercent");
    int points = 0;
    for (size_t i = 0; i < json_object_array_length(c); i++)
        points += json_object_array_get_idx(c, i) != NULL;
    assert_true(points >= 7);
    assert_string_equal(
        json_object_get_string(json_object_object_get(
            json_object_array_get_idx(json_object_object_get(gv, "workloadSeries"), 0), "name")),
        "train");
    json_object_put(gv);
    json_object *wv = get_ok("/api/v1/console/workloads/ml/train?range=15m", tok);
    assert_true(json_object_get_boolean(
        json_object_object_get(json_object_object_get(wv, "workload"), "active")));
    json_object_put(wv);

    /* Events: the controller's and the scheduler's, newest first; not the webhook's. */
    json_object *pool = jparse("{\"apiVersion\":\"tensor-fusion.ai/v1\",\"kind\":\"GPUPool\","
                               "\"metadata\":{\"name\":\"pool-a\"}}");
    json_object *p0 = jparse("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
                             "\"big\",\"namespace\":\"ml\"}}");
    assert_int_equal(tf_k8s_event(api.client, pool, "Normal", "Compaction",
                                  "node node-b released: empty", "tf-controller"),
                     0);
    assert_int_equal(tf_k8s_event(api.client, p0, "Warning", "GPUAllocationFailed",
                                  "0/2 nodes: insufficient VRAM", "tf-scheduler"),
                     0);
    assert_int_equal(tf_k8s_event(api.client, p0, "Normal", "Mutated", "x", "tf-webhook"), 0);
    json_object_put(pool);
    json_object_put(p0);
    json_object *ev = get_ok("/api/v1/console/events?range=1h", tok);
    json_object *list = json_object_object_get(ev, "events");
    assert_int_equal(json_object_array_length(list), 2);
    json_object *cmp = find(list, "reason", "Compaction");
    assert_non_null(cmp);
    assert_string_equal(json_object_get_string(json_object_object_get(cmp, "pool")), "pool-a");
    json_object *fail = find(list, "reason", "GPUAllocationFailed");
    assert_non_null(strstr(json_object_get_string(json_object_object_get(fail, "message")),
                           "insufficient VRAM"));
    json_object_put(ev);

    /* Alerts: what Alertmanager holds for TensorFusion. */
    json_object *al = get_ok("/api/v1/console/alerts", tok);
    if (am) {
        assert_string_equal(json_object_get_string(json_object_object_get(al, "source")),
                            "alertmanager");
        json_object *alist = json_object_object_get(al, "alerts");
        assert_int_equal(json_object_array_length(alist), 1);
        json_object *labels = json_object_object_get(json_object_array_get_idx(alist, 0), "labels");
        assert_string_equal(json_object_get_string(json_object_object_get(labels, "alertname")),
                            "IdleGPU");
        assert_string_equal(json_object_get_string(json_object_object_get(
                                json_object_array_get_idx(alist, 0), "summary")),
                            "GPU GPU-gpu-b0 is idle");
    } else {
        printf("prometheus-alertmanager not installed: alerts part skipped\n");
    }
    json_object_put(al);

    /* GreptimeDB gone: the inventory still shows, with a warning. */
    fake_stop(&gdb);
    ov = get_ok("/api/v1/console/overview", tok);
    assert_true(json_object_array_length(json_object_object_get(ov, "warnings")) >= 1);
    assert_int_equal(json_object_array_length(json_object_object_get(ov, "gpus")), 3);
    json_object_put(ov);

    memset(tok, 0, n);
    free(tok);
    tf_https_destroy(srv);
    tf_ctl_console_destroy(con);
    for (int i = 0; i < 5; i++)
        tf_informer_destroy(inf[i]);
    if (am_pid > 0) {
        kill(am_pid, SIGTERM);
        waitpid(am_pid, NULL, 0);
    }
    fake_stop(&api);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_ALL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cluster_inventory_groups_pods_by_workload_with_per_gpu_limits),
        cmocka_unit_test(the_cluster_console_reads_the_api_server_greptime_and_alertmanager),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
