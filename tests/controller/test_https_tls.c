/* SPDX-License-Identifier: Apache-2.0
 *
 * Certificates and the HTTPS server: a generated CA + serving certificate verify for the
 * Service names kube-apiserver dials; the server answers over TLS; bodies are bounded; a
 * rotated certificate is picked up without restarting; mounted files load and bad pairs are
 * refused.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "common/err.h"
#include "controller/httpparse.h"
#include "controller/https.h"
#include "controller/tls.h"

static void echo(const struct tf_http_req *req, struct tf_http_resp *resp, void *arg)
{
    char buf[256];
    const char *q = tf_http_query(req, "name");
    snprintf(buf, sizeof(buf), "{\"method\":\"%s\",\"path\":\"%s\",\"len\":%zu,\"name\":\"%s\"}",
             req->method, req->path, req->body_len, q ? q : "");
    resp->body = strdup(buf);
}

struct got {
    char buf[4096];
    size_t n;
};

static size_t collect(char *d, size_t sz, size_t nm, void *arg)
{
    struct got *g = arg;
    size_t n = sz * nm;
    if (g->n + n < sizeof(g->buf)) {
        memcpy(g->buf + g->n, d, n);
        g->n += n;
        g->buf[g->n] = '\0';
    }
    return n;
}

/* POSTs BODY to https://HOST:PORT/PATH, trusting CA_PEM and resolving HOST to 127.0.0.1.
 * Returns the HTTP status, or -curl error. */
static long post_with(const char *host, uint16_t port, const char *path, const char *ca_pem,
                      const char *body, const char *header, struct got *g)
{
    CURL *h = curl_easy_init();
    struct curl_slist *hd = header ? curl_slist_append(NULL, header) : NULL;
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    char url[512], resolve[300];
    snprintf(url, sizeof(url), "https://%s:%u%s", host, port, path);
    snprintf(resolve, sizeof(resolve), "%s:%u:127.0.0.1", host, port);
    struct curl_slist *rs = curl_slist_append(NULL, resolve);
    struct curl_blob blob = {(void *)ca_pem, strlen(ca_pem), CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_RESOLVE, rs);
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, g);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
    g->n = 0;
    g->buf[0] = '\0';
    CURLcode cc = curl_easy_perform(h);
    long st = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
    curl_easy_cleanup(h);
    curl_slist_free_all(rs);
    curl_slist_free_all(hd);
    return cc == CURLE_OK ? st : -(long)cc;
}

static long post(const char *host, uint16_t port, const char *path, const char *ca_pem,
                 const char *body, struct got *g)
{
    return post_with(host, port, path, ca_pem, body, NULL, g);
}

static struct tf_https *serve(const struct tf_tls_bundle *b)
{
    char err[256];
    struct tf_https_opts o = {
        .bind_addr = "127.0.0.1", .cert_pem = b->cert_pem, .key_pem = b->key_pem, .max_body = 1024};
    struct tf_https *s = tf_https_start(&o, echo, NULL, err, sizeof(err));
    if (!s)
        fail_msg("server: %s", err);
    return s;
}

static void apiserver_reaches_the_webhook_by_service_dns_name(void **state)
{
    struct tf_tls_bundle b;
    char err[256];
    assert_int_equal(
        tf_tls_generate("tensor-fusion", "tensor-fusion-sys", NULL, 0, 365, &b, err, sizeof(err)),
        0);
    assert_non_null(strstr(b.ca_pem, "BEGIN CERTIFICATE"));
    assert_non_null(strstr(b.key_pem, "PRIVATE KEY"));
    struct tf_https *s = serve(&b);
    struct got g;
    assert_int_equal(post("tensor-fusion.tensor-fusion-sys.svc", tf_https_port(s),
                          "/mutate-pod?name=x", b.ca_pem, "{\"a\":1}", &g),
                     200);
    assert_string_equal(g.buf, "{\"method\":\"POST\",\"path\":\"/mutate-pod\",\"len\":7,"
                               "\"name\":\"x\"}");
    assert_int_equal(post("tensor-fusion.tensor-fusion-sys.svc.cluster.local", tf_https_port(s),
                          "/", b.ca_pem, "", &g),
                     200);
    /* A name outside the SANs fails verification. */
    assert_true(post("evil.example", tf_https_port(s), "/", b.ca_pem, "", &g) < 0);
    tf_https_destroy(s);
    tf_tls_bundle_free(&b);
}

static void oversized_bodies_get_413_without_reaching_the_handler(void **state)
{
    struct tf_tls_bundle b;
    char err[256];
    const char *extra[] = {"127.0.0.1", "localhost"};
    assert_int_equal(tf_tls_generate(NULL, NULL, extra, 2, 1, &b, err, sizeof(err)), 0);
    struct tf_https *s = serve(&b);
    char big[4000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    struct got g;
    assert_int_equal(post("localhost", tf_https_port(s), "/", b.ca_pem, big, &g), 413);
    tf_https_destroy(s);
    tf_tls_bundle_free(&b);
}

/* A body is read into its connection's buffer, grown as it arrives, with a Content-Length or
 * without one (chunked); either way the handler sees the whole body, and the size limit holds. */
static void bodies_arrive_whole_with_or_without_content_length(void **state)
{
    struct tf_tls_bundle b;
    char err[256];
    const char *extra[] = {"localhost"};
    assert_int_equal(tf_tls_generate(NULL, NULL, extra, 1, 1, &b, err, sizeof(err)), 0);
    struct tf_https *s = serve(&b);
    char body[1001];
    memset(body, 'x', sizeof(body) - 1);
    body[sizeof(body) - 1] = '\0';
    struct got g;
    uint16_t port = tf_https_port(s);
    assert_int_equal(post("localhost", port, "/p", b.ca_pem, body, &g), 200);
    assert_non_null(strstr(g.buf, "\"len\":1000,"));
    assert_int_equal(
        post_with("localhost", port, "/p", b.ca_pem, body, "Transfer-Encoding: chunked", &g), 200);
    assert_non_null(strstr(g.buf, "\"len\":1000,"));
    /* The limit holds for chunked bodies too. */
    char big[1100];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(
        post_with("localhost", port, "/p", b.ca_pem, big, "Transfer-Encoding: chunked", &g), 413);
    tf_https_destroy(s);
    tf_tls_bundle_free(&b);
}

static void rotated_certificate_is_served_without_restart(void **state)
{
    struct tf_tls_bundle a, b;
    char err[256];
    const char *extra[] = {"localhost"};
    assert_int_equal(tf_tls_generate(NULL, NULL, extra, 1, 1, &a, err, sizeof(err)), 0);
    assert_int_equal(tf_tls_generate(NULL, NULL, extra, 1, 1, &b, err, sizeof(err)), 0);
    struct tf_https *s = serve(&a);
    uint16_t port = tf_https_port(s);
    struct got g;
    assert_int_equal(post("localhost", port, "/", a.ca_pem, "", &g), 200);
    assert_true(post("localhost", port, "/", b.ca_pem, "", &g) < 0);
    assert_int_equal(tf_https_reload(s, b.cert_pem, b.key_pem, err, sizeof(err)), 0);
    assert_int_equal(tf_https_port(s), port);
    assert_int_equal(post("localhost", port, "/", b.ca_pem, "", &g), 200);
    assert_true(post("localhost", port, "/", a.ca_pem, "", &g) < 0);
    /* A broken pair is refused and the server keeps the current one. */
    assert_int_equal(tf_https_reload(s, b.cert_pem, a.key_pem, err, sizeof(err)), TF_EINVAL);
    assert_int_equal(post("localhost", port, "/", b.ca_pem, "", &g), 200);
    tf_https_destroy(s);
    tf_tls_bundle_free(&a);
    tf_tls_bundle_free(&b);
}

static void mounted_certificate_files_load_and_mismatched_keys_fail(void **state)
{
    struct tf_tls_bundle a, b, got;
    char err[256], dir[] = "/tmp/tf-tls-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(tf_tls_generate("svc", "ns", NULL, 0, 1, &a, err, sizeof(err)), 0);
    assert_int_equal(tf_tls_generate("svc", "ns", NULL, 0, 1, &b, err, sizeof(err)), 0);
    char crt[64], key[64], ca[64];
    snprintf(crt, sizeof(crt), "%s/tls.crt", dir);
    snprintf(key, sizeof(key), "%s/tls.key", dir);
    snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
    FILE *f = fopen(crt, "w");
    fputs(a.cert_pem, f);
    fclose(f);
    f = fopen(key, "w");
    fputs(a.key_pem, f);
    fclose(f);
    f = fopen(ca, "w");
    fputs(a.ca_pem, f);
    fclose(f);
    time_t mt = 0;
    assert_int_equal(tf_tls_load_files(crt, key, ca, &got, &mt, err, sizeof(err)), 0);
    assert_string_equal(got.cert_pem, a.cert_pem);
    assert_true(mt > 0);
    assert_true(tf_tls_files_mtime(crt, key) == mt);
    tf_tls_bundle_free(&got);
    f = fopen(key, "w");
    fputs(b.key_pem, f);
    fclose(f);
    assert_int_equal(tf_tls_load_files(crt, key, NULL, &got, NULL, err, sizeof(err)), TF_EINVAL);
    assert_int_equal(
        tf_tls_load_files("/nonexistent/tls.crt", key, NULL, &got, NULL, err, sizeof(err)),
        TF_ENOENT);
    assert_non_null(strstr(err, "/nonexistent/tls.crt"));
    unlink(crt);
    unlink(key);
    unlink(ca);
    rmdir(dir);
    tf_tls_bundle_free(&a);
    tf_tls_bundle_free(&b);
}

/* Answers with the body itself, read as the NUL-terminated string handlers may take it for
 * (500 when its length is not BODY_LEN). */
static void echo_body(const struct tf_http_req *req, struct tf_http_resp *resp, void *arg)
{
    (void)arg;
    resp->body = strdup(req->body);
    resp->content_type = "text/plain";
    if (strlen(req->body) != req->body_len)
        resp->status = 500;
}

/* POSTs LEN bytes of BODY on the keep-alive handle H; the answer into G. Returns the status
 * (or -curl error); *REUSED: whether the connection was the previous request's. */
static long post_on(CURL *h, const char *url, const char *body, size_t len, struct got *g,
                    bool *reused)
{
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    g->n = 0;
    g->buf[0] = '\0';
    CURLcode cc = curl_easy_perform(h);
    long st = 0, connects = -1;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
    curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &connects);
    *reused = connects == 0;
    return cc == CURLE_OK ? st : -(long)cc;
}

/* kube-scheduler sends every extender call on a kept-alive connection, whose body buffer the
 * server keeps from request to request: each request sees exactly its own body (never the
 * tail of a longer one before it, never the previous body when it has none), also after one
 * was refused as too large and after one that grew the buffer past what is kept. */
static void keep_alive_requests_each_see_only_their_own_body(void **state)
{
    struct tf_tls_bundle b;
    char err[256];
    const char *extra[] = {"127.0.0.1"};
    assert_int_equal(tf_tls_generate(NULL, NULL, extra, 1, 1, &b, err, sizeof(err)), 0);
    struct tf_https_opts o = {.bind_addr = "127.0.0.1",
                              .cert_pem = b.cert_pem,
                              .key_pem = b.key_pem,
                              .max_body = 600u << 10};
    struct tf_https *s = tf_https_start(&o, echo_body, NULL, err, sizeof(err));
    assert_non_null(s);
    char url[128];
    snprintf(url, sizeof(url), "https://127.0.0.1:%u/scheduler/filter", tf_https_port(s));
    CURL *h = curl_easy_init();
    struct curl_blob blob = {(void *)b.ca_pem, strlen(b.ca_pem), CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    struct curl_slist *hd = curl_slist_append(NULL, "Expect:");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
    struct got *g = malloc(sizeof(*g));
    assert_non_null(g);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, g);
    size_t big_len = 700u << 10, grown_len = 300u << 10; /* over the limit; over what is kept */
    char *big = malloc(big_len);
    assert_non_null(big);
    memset(big, 'z', big_len);
    bool reused;
    assert_int_equal(post_on(h, url, "0123456789abcdefghij", 20, g, &reused), 200);
    assert_string_equal(g->buf, "0123456789abcdefghij");
    assert_int_equal(post_on(h, url, "xyz", 3, g, &reused), 200);
    assert_true(reused);
    assert_string_equal(g->buf, "xyz");
    assert_int_equal(post_on(h, url, "", 0, g, &reused), 200);
    assert_true(reused);
    assert_string_equal(g->buf, "");
    assert_int_equal(post_on(h, url, big, big_len, g, &reused), 413);
    /* The body buffer grows past what a connection keeps (the answer is longer than G holds:
     * only its size is seen), then smaller bodies follow. */
    assert_int_equal(post_on(h, url, big, grown_len, g, &reused), 200);
    curl_off_t got_len = 0;
    curl_easy_getinfo(h, CURLINFO_SIZE_DOWNLOAD_T, &got_len);
    assert_int_equal(got_len, grown_len);
    assert_int_equal(post_on(h, url, "ab", 2, g, &reused), 200);
    assert_true(reused);
    assert_string_equal(g->buf, "ab");
    assert_int_equal(post_on(h, url, "", 0, g, &reused), 200);
    assert_string_equal(g->buf, "");
    curl_easy_cleanup(h);
    curl_slist_free_all(hd);
    free(big);
    free(g);
    tf_https_destroy(s);
    tf_tls_bundle_free(&b);
}

static void plain_http_mode_serves_health_checks(void **state)
{
    char err[256];
    struct tf_https_opts o = {.bind_addr = "127.0.0.1"};
    struct tf_https *s = tf_https_start(&o, echo, NULL, err, sizeof(err));
    assert_non_null(s);
    CURL *h = curl_easy_init();
    char url[128];
    struct got g = {.n = 0};
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/healthz", tf_https_port(s));
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &g);
    assert_int_equal(curl_easy_perform(h), CURLE_OK);
    curl_easy_cleanup(h);
    assert_non_null(strstr(g.buf, "\"path\":\"/healthz\""));
    assert_int_equal(tf_https_reload(s, "x", "y", err, sizeof(err)), TF_ESTATE);
    tf_https_destroy(s);
    struct tf_https_opts bad = {.bind_addr = "not-an-ip"};
    assert_null(tf_https_start(&bad, echo, NULL, err, sizeof(err)));
    assert_non_null(strstr(err, "not-an-ip"));
}

static int tcp_connect(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

/* Everything the server sends on FD until it closes (at most LEN-1 bytes), NUL-terminated. */
static size_t read_all(int fd, char *out, size_t len)
{
    size_t n = 0;
    for (;;) {
        ssize_t r = recv(fd, out + n, len - 1 - n, 0);
        if (r <= 0 || (n += (size_t)r) == len - 1)
            break;
    }
    out[n] = '\0';
    return n;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Clients that pipeline (send the next request before the answer) get their answers in order,
 * each request with its own body and query; HEAD gets the headers alone; HTTP/1.0 gets a
 * closed connection unless it asked to keep it. */
static void pipelined_head_and_http10_requests_are_answered_as_sent(void **state)
{
    char err[256];
    struct tf_https_opts o = {.bind_addr = "127.0.0.1"};
    struct tf_https *s = tf_https_start(&o, echo, NULL, err, sizeof(err));
    assert_non_null(s);
    int fd = tcp_connect(tf_https_port(s));
    assert_true(fd >= 0);
    const char *reqs = "GET /one?name=a%20b HTTP/1.1\r\nHost: x\r\n\r\n"
                       "POST /two?name=z HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
                       "POST /three HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                       "2\r\nab\r\n0\r\n\r\n"
                       "HEAD /four HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_int_equal(send(fd, reqs, strlen(reqs), 0), (ssize_t)strlen(reqs));
    static char got[8192];
    read_all(fd, got, sizeof(got));
    close(fd);
    const char *a = strstr(got, "\"path\":\"/one\",\"len\":0,\"name\":\"a b\"");
    const char *b = strstr(got, "\"path\":\"/two\",\"len\":3,\"name\":\"z\"");
    const char *c = strstr(got, "\"path\":\"/three\",\"len\":2,");
    assert_true(a && b && c && a < b && b < c);
    assert_int_equal(count(got, "HTTP/1.1 200 OK\r\n"), 4);
    assert_non_null(strstr(got, "\"method\":\"POST\",\"path\":\"/three\""));
    assert_null(strstr(got, "/four\"")); /* HEAD: no body */
    assert_int_equal(count(got, "Connection: close\r\n"), 1);

    fd = tcp_connect(tf_https_port(s));
    const char *old = "GET /old HTTP/1.0\r\n\r\n";
    assert_int_equal(send(fd, old, strlen(old), 0), (ssize_t)strlen(old));
    read_all(fd, got, sizeof(got)); /* returns: the server closed */
    close(fd);
    assert_non_null(strstr(got, "Connection: close\r\n"));
    assert_non_null(strstr(got, "\"path\":\"/old\""));
    tf_https_destroy(s);
}

/* A request the parser refuses is answered with its status, and the connection is closed
 * (what followed on it is never read as a request). */
static void malformed_requests_are_refused_and_the_connection_closed(void **state)
{
    char err[256];
    struct tf_https_opts o = {.bind_addr = "127.0.0.1"};
    struct tf_https *s = tf_https_start(&o, echo, NULL, err, sizeof(err));
    assert_non_null(s);
    static const struct {
        const char *req, *status;
    } cases[] = {
        {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
         "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
         "HTTP/1.1 400 "},
        {"GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 400 "},
        {"GET / HTTP/3.0\r\nHost: x\r\n\r\n", "HTTP/1.1 505 "},
        {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", "HTTP/1.1 501 "},
        {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "HTTP/1.1 400 "},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int fd = tcp_connect(tf_https_port(s));
        assert_true(fd >= 0);
        assert_int_equal(send(fd, cases[i].req, strlen(cases[i].req), 0),
                         (ssize_t)strlen(cases[i].req));
        char got[2048];
        read_all(fd, got, sizeof(got));
        close(fd);
        if (strncmp(got, cases[i].status, strlen(cases[i].status)) != 0)
            fail_msg("case %zu: %s", i, got);
        assert_null(strstr(got, "smuggled"));
        assert_int_equal(count(got, "HTTP/1.1 "), 1);
    }
    /* A head that never ends is cut at 16 KiB with 431. */
    int fd = tcp_connect(tf_https_port(s));
    char big[TF_HTTP_MAX_HEAD + 100];
    memset(big, 'a', sizeof(big));
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    assert_int_equal(send(fd, big, sizeof(big), MSG_NOSIGNAL), (ssize_t)sizeof(big));
    char got[2048];
    read_all(fd, got, sizeof(got));
    close(fd);
    assert_int_equal(strncmp(got, "HTTP/1.1 431 ", 13), 0);
    tf_https_destroy(s);
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The attack: connections that never start (or finish) a TLS handshake. They hold no serving
 * slot and at most 64 of them wait at once (the oldest dropped for a newer one), so with a
 * server of 2 slots and 100 such peers a real client is still answered at once. */
static void silent_peers_never_lock_out_a_tls_client(void **state)
{
    struct tf_tls_bundle b;
    char err[256];
    const char *extra[] = {"localhost"};
    assert_int_equal(tf_tls_generate(NULL, NULL, extra, 1, 1, &b, err, sizeof(err)), 0);
    struct tf_https_opts o = {
        .bind_addr = "127.0.0.1", .cert_pem = b.cert_pem, .key_pem = b.key_pem, .max_conns = 2};
    struct tf_https *s = tf_https_start(&o, echo, NULL, err, sizeof(err));
    assert_non_null(s);
    int silent[100];
    for (int i = 0; i < 100; i++)
        assert_true((silent[i] = tcp_connect(tf_https_port(s))) >= 0);
    struct got g;
    double t0 = mono();
    for (int i = 0; i < 3; i++) /* (one after another: 2 slots, each freed on close) */
        assert_int_equal(post("localhost", tf_https_port(s), "/", b.ca_pem, "", &g), 200);
    assert_true(mono() - t0 < 5.0);
    /* The first silent peers were dropped to make room (the server closed them). */
    char c;
    assert_int_equal(recv(silent[0], &c, 1, 0), 0);
    for (int i = 0; i < 100; i++)
        close(silent[i]);
    tf_https_destroy(s);
    tf_tls_bundle_free(&b);
}

/* Seconds until the server closes FD (reading and dropping what it sends), or -1 after 10 s. */
static double closed_after(int fd, double t0)
{
    char buf[4096];
    for (;;) {
        ssize_t r = recv(fd, buf, sizeof(buf), 0);
        if (r == 0)
            return mono() - t0;
        if (r < 0)
            return -1;
    }
}

struct dribbler {
    int fd;
    int sent;
};

/* Sends a request head one byte per 50 ms, for as long as the server takes it (at most 5 s). */
static void *dribble(void *arg)
{
    struct dribbler *d = arg;
    const char *head =
        "GET /slow HTTP/1.1\r\nHost: x\r\nX-Pad: "
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "\r\n\r\n";
    for (size_t i = 0; head[i]; i++) {
        if (send(d->fd, head + i, 1, MSG_NOSIGNAL) != 1)
            break;
        d->sent++;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

/* The deadlines hold against slow peers: a request dribbled a byte at a time is cut at the
 * request deadline (not kept alive by each byte), a kept-alive connection that sends nothing
 * more is closed at the idle deadline, and a TLS peer that never starts its handshake at the
 * handshake deadline. */
static void slow_and_silent_peers_are_cut_at_their_deadlines(void **state)
{
    char err[256];
    struct tf_https_opts o = {.bind_addr = "127.0.0.1", .request_ms = 800, .idle_ms = 600};
    struct tf_https *s = tf_https_start(&o, echo, NULL, err, sizeof(err));
    assert_non_null(s);
    /* Dribbled (~10 s to send whole): cut after 0.8 s, at its next byte. */
    struct dribbler d = {.fd = tcp_connect(tf_https_port(s))};
    pthread_t th;
    double t0 = mono();
    assert_int_equal(pthread_create(&th, NULL, dribble, &d), 0);
    double cut = closed_after(d.fd, t0);
    pthread_join(th, NULL);
    close(d.fd);
    assert_true(cut >= 0.7 && cut < 4.0);
    assert_true(d.sent < 100); /* of ~200 */
    /* Idle after one answer: closed after 0.6 s (+ a slice). */
    int fd = tcp_connect(tf_https_port(s));
    const char *req = "GET /one HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
    t0 = mono();
    double idle = closed_after(fd, t0);
    close(fd);
    assert_true(idle >= 0.5 && idle < 4.0);
    tf_https_destroy(s);

    struct tf_tls_bundle b;
    const char *extra[] = {"localhost"};
    assert_int_equal(tf_tls_generate(NULL, NULL, extra, 1, 1, &b, err, sizeof(err)), 0);
    struct tf_https_opts to = {.bind_addr = "127.0.0.1",
                               .cert_pem = b.cert_pem,
                               .key_pem = b.key_pem,
                               .handshake_ms = 700};
    s = tf_https_start(&to, echo, NULL, err, sizeof(err));
    assert_non_null(s);
    fd = tcp_connect(tf_https_port(s));
    t0 = mono();
    double hs = closed_after(fd, t0);
    close(fd);
    assert_true(hs >= 0.6 && hs < 4.0);
    struct got g; /* and real clients still get in */
    assert_int_equal(post("localhost", tf_https_port(s), "/", b.ca_pem, "", &g), 200);
    tf_https_destroy(s);
    tf_tls_bundle_free(&b);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(apiserver_reaches_the_webhook_by_service_dns_name),
        cmocka_unit_test(oversized_bodies_get_413_without_reaching_the_handler),
        cmocka_unit_test(bodies_arrive_whole_with_or_without_content_length),
        cmocka_unit_test(rotated_certificate_is_served_without_restart),
        cmocka_unit_test(mounted_certificate_files_load_and_mismatched_keys_fail),
        cmocka_unit_test(plain_http_mode_serves_health_checks),
        cmocka_unit_test(keep_alive_requests_each_see_only_their_own_body),
        cmocka_unit_test(pipelined_head_and_http10_requests_are_answered_as_sent),
        cmocka_unit_test(malformed_requests_are_refused_and_the_connection_closed),
        cmocka_unit_test(silent_peers_never_lock_out_a_tls_client),
        cmocka_unit_test(slow_and_silent_peers_are_cut_at_their_deadlines),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
