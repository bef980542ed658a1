/* SPDX-License-Identifier: Apache-2.0
 *
 * bench_extender's peers (peers.h): kube-scheduler's HTTP client, the stub kube-apiserver,
 * the transport floor's handler and what the machine itself charges.
 */
#include "peers.h"

#include <arpa/inet.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

double now_s(void)
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

double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof(double), cmp);
    int i = (int)(n * p);
    return v[i < n ? i : n - 1] * 1e3;
}

void loadavg(const char *when)
{
    double l = 0;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1)
            l = 0;
        fclose(f);
    }
    printf("extender_loadavg_1min_%s: %.2f\n", when, l);
}

double cpu_s(bool thread)
{
    struct timespec ts;
    clock_gettime(thread ? CLOCK_THREAD_CPUTIME_ID : CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

long rss_kib(void)
{
    long kib = 0;
    char line[256];
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

double clock_s(clockid_t clk)
{
    struct timespec ts;
    if (clock_gettime(clk, &ts))
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int pod_text(char *buf, size_t len, const char *name, const char *vram_req, const char *node,
             const char *ids)
{
    char extra[256] = "", spec[128] = "";
    if (ids)
        snprintf(extra, sizeof(extra), ",\"tensor-fusion.ai/gpu-ids\":\"%s\"", ids);
    if (node)
        snprintf(spec, sizeof(spec), "\"nodeName\":\"%s\",", node);
    return snprintf(
        buf, len,
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
        "\"namespace\":\"" NS "\",\"uid\":\"u-%s\",\"labels\":{\"tensor-fusion.ai/enabled\":"
        "\"true\",\"tensor-fusion.ai/component\":\"client\"},\"annotations\":{"
        "\"tensor-fusion.ai/gpupool\":\"default-pool\",\"tensor-fusion.ai/isolation\":"
        "\"soft\",\"tensor-fusion.ai/tflops-request\":\"20\",\"tensor-fusion.ai/tflops-limit"
        "\":\"40\",\"tensor-fusion.ai/vram-request\":\"%s\",\"tensor-fusion.ai/vram-limit\":"
        "\"%s\"%s}},\"spec\":{%s\"schedulerName\":\"tensor-fusion-scheduler\",\"containers\":"
        "[{\"name\":\"app\",\"image\":\"x\"}]}}",
        name, name, vram_req, vram_req, extra, spec);
}

/* ---- the stub API server ---------------------------------------------------------------- */

void stub_handler(const struct tf_http_req *req, struct tf_http_resp *resp, void *arg)
{
    struct stub *s = arg;
    static const char prefix[] = "/api/v1/namespaces/" NS "/";
    char name[128] = "", sub[32] = "";
    resp->status = 200;
    if (strncmp(req->path, prefix, sizeof(prefix) - 1) != 0) {
        resp->status = 404;
        resp->body = strdup("{\"kind\":\"Status\",\"code\":404}");
        return;
    }
    const char *rest = req->path + sizeof(prefix) - 1;
    if (strcmp(rest, "events") == 0) {
        resp->status = 201;
        resp->body = strdup("{\"kind\":\"Event\"}");
        return;
    }
    if (sscanf(rest, "pods/%127[^/]/%31s", name, sub) < 1) {
        resp->status = 404;
        resp->body = strdup("{\"kind\":\"Status\",\"code\":404}");
        return;
    }
    char *buf = malloc(4096);
    if (strcmp(req->method, "GET") == 0) {
        pod_text(buf, 4096, name, "10Gi", NULL, NULL);
    } else if (strcmp(sub, "binding") == 0) {
        /* As kube-apiserver: the Binding's annotations merged into the pod with its node. */
        json_object *b = json_tokener_parse(req->body);
        const char *node = json_object_get_string(
            json_object_object_get(json_object_object_get(b, "target"), "name"));
        const char *v = json_object_get_string(json_object_object_get(
            json_object_object_get(json_object_object_get(b, "metadata"), "annotations"),
            "tensor-fusion.ai/gpu-ids"));
        char ids[256];
        snprintf(ids, sizeof(ids), "%s", v ? v : "");
        /* The pod informer's MODIFIED event: the pod with its annotations and node. */
        pod_text(buf, 4096, name, "10Gi", NULL, NULL);
        json_object *old = json_tokener_parse(buf);
        pod_text(buf, 4096, name, "10Gi", node, ids);
        json_object *upd = json_tokener_parse(buf);
        struct tf_informer_handlers h = tf_extender_pod_handlers(s->x);
        h.on_update(old, upd, h.arg);
        json_object_put(old);
        json_object_put(upd);
        json_object_put(b);
        resp->status = 201;
        snprintf(buf, 4096, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Success\"}");
    } else {
        resp->status = 405;
        snprintf(buf, 4096, "{\"kind\":\"Status\",\"code\":405}");
    }
    resp->body = buf;
}

/* ---- the kube-scheduler side ------------------------------------------------------------ */

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
    struct conn *c = arg;
    size_t add = sz * n;
    if (c->len + add + 1 > c->cap) {
        c->cap = (c->len + add + 1) * 2;
        c->out = realloc(c->out, c->cap);
    }
    memcpy(c->out + c->len, p, add);
    c->len += add;
    c->out[c->len] = '\0';
    return add;
}

void conn_init(struct conn *c, int port, const char *ca_pem)
{
    memset(c, 0, sizeof(*c));
    c->h = curl_easy_init();
    snprintf(c->url, sizeof(c->url), "https://127.0.0.1:%d/scheduler/", port);
    c->ca.data = (void *)ca_pem;
    c->ca.len = strlen(ca_pem);
    c->ca.flags = CURL_BLOB_NOCOPY;
    curl_easy_setopt(c->h, CURLOPT_CAINFO_BLOB, &c->ca);
    curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c->h, CURLOPT_WRITEDATA, c);
    /* TLS 1.3 suites in the order of Go's crypto/tls (kube-scheduler's client) on a CPU with
     * AES instructions: AES-128-GCM first. The server follows the client's order, and curl's
     * default (OpenSSL's: AES-256-GCM first) would measure a cipher kube-scheduler does not
     * pick. */
    curl_easy_setopt(c->h, CURLOPT_TLS13_CIPHERS,
                     "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256");
}

void conn_free(struct conn *c)
{
    curl_easy_cleanup(c->h);
    free(c->out);
}

int post(struct conn *c, const char *verb, const char *body, size_t len)
{
    char url[160];
    /* No "Expect: 100-continue" (curl asks for it on bodies over 1 KiB, an extra round trip
     * kube-scheduler's Go client does not make). */
    struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
    hd = curl_slist_append(hd, "Expect:");
    snprintf(url, sizeof(url), "%s%s", c->url, verb);
    c->len = 0;
    curl_easy_setopt(c->h, CURLOPT_URL, url);
    curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    CURLcode rc = curl_easy_perform(c->h);
    long status = 0;
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hd);
    if (rc != CURLE_OK || status != 200 || !c->out) {
        fprintf(stderr, "bench_extender: %s: %s (HTTP %ld): %.300s -> %.300s\n", verb,
                curl_easy_strerror(rc), status, body, c->out ? c->out : "");
        return -1;
    }
    return 0;
}

void put(struct text *t, const char *p, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->s = realloc(t->s, t->cap);
    }
    memcpy(t->s + t->len, p, n);
    t->len += n;
    t->s[t->len] = '\0';
}

void puts_(struct text *t, const char *s)
{
    put(t, s, strlen(s));
}

/* ---- the transport floor ---------------------------------------------------------------- */

/* The same server (TLS, HTTP, a thread per connection) with a handler that does no work: it
 * answers /filter and /prioritize with the bytes the extender answered the pass's first pod.
 * The scheduling cycle over it costs what kube-scheduler's side, TLS, HTTP and the kernel cost
 * for the same bytes: the floor under the extender's latency on this machine. */

void floor_handler(const struct tf_http_req *req, struct tf_http_resp *resp, void *arg)
{
    const struct canned *k = arg;
    bool f = strstr(req->path, "filter") != NULL;
    resp->static_body = f ? k->filter : k->prioritize;
    resp->static_len = f ? k->flen : k->plen;
}

static void *echo_main(void *arg)
{
    int fd = *(int *)arg;
    char b;
    while (recv(fd, &b, 1, 0) == 1)
        if (send(fd, &b, 1, MSG_NOSIGNAL) != 1)
            break;
    return NULL;
}

/* p50 of ROUNDS one-byte round trips over loopback TCP between two threads, in microseconds:
 * what this machine charges for waking a blocked peer, twice (printed for comparing runs). */
double loopback_rtt_us(int rounds)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    int lfd = socket(AF_INET, SOCK_STREAM, 0), fd[2] = {-1, -1}, one = 1;
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1) ||
        getsockname(lfd, (struct sockaddr *)&a, &alen) ||
        (fd[0] = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
        connect(fd[0], (struct sockaddr *)&a, sizeof(a)) || (fd[1] = accept(lfd, NULL, NULL)) < 0) {
        perror("bench_extender: loopback");
        exit(1);
    }
    close(lfd);
    for (int i = 0; i < 2; i++)
        setsockopt(fd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    pthread_t th;
    pthread_create(&th, NULL, echo_main, &fd[1]);
    double *v = calloc((size_t)rounds, sizeof(double));
    char b = 'x';
    for (int i = 0; i < rounds; i++) {
        double t = now_s();
        if (send(fd[0], &b, 1, MSG_NOSIGNAL) != 1 || recv(fd[0], &b, 1, 0) != 1)
            exit(1);
        v[i] = now_s() - t;
    }
    shutdown(fd[0], SHUT_RDWR);
    pthread_join(th, NULL);
    close(fd[0]);
    close(fd[1]);
    double p50 = pct(v, rounds, 0.5) * 1e3;
    free(v);
    return p50;
}

/* The first line of the file at PATH into BUF (without its newline); false when unreadable. */
static bool read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    bool ok = f && fgets(buf, (int)len, f);
    if (f)
        fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

/* A blocked thread woken on an idle CPU waits for that CPU to come out of its idle state; in a
 * virtual machine with the cpuidle driver haltpoll, an idle vCPU first polls for
 * guest_halt_poll_ns (the kernel's default 200 us) and then halts, and waking a halted vCPU
 * goes through the hypervisor (tens of microseconds, twice per round trip). Printed so that a
 * run's round trips can be read against it. */
void machine_idle(void)
{
    char drv[64], ns[32];
    if (!read_line("/sys/devices/system/cpu/cpuidle/current_driver", drv, sizeof(drv)))
        snprintf(drv, sizeof(drv), "none");
    if (strcmp(drv, "haltpoll") == 0 &&
        read_line("/sys/module/haltpoll/parameters/guest_halt_poll_ns", ns, sizeof(ns)))
        printf("extender_machine_guest_halt_poll: %.0f us (cpuidle driver haltpoll; the "
               "kernel's default 200 us)\n",
               strtod(ns, NULL) / 1e3);
    else
        printf("extender_machine_cpuidle_driver: %s\n", drv);
}
