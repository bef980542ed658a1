/* SPDX-License-Identifier: Apache-2.0
 *
 * The controller lookup's pure half (src/remote/lookup.h): what libtf_client accepts as
 * TF_CONTROLLER_URL, the request it sends, and how it reads the controller's answers
 * (the controller's own 200/503/404/400 bodies, escapes, junk, truncation, oversize).
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
#include "remote/lookup.h"

/* ---- URLs ----------------------------------------------------------------------------------- */

static void controller_url_of_the_webhook_is_host_port_and_path(void **state)
{
    (void)state;
    struct tf_lookup_url u;
    char err[256];
    assert_int_equal(
        tf_lookup_url_parse("http://tensor-fusion.tensor-fusion-sys.svc:8080/api/connection", &u,
                            err, sizeof(err)),
        0);
    assert_string_equal(u.host, "tensor-fusion.tensor-fusion-sys.svc");
    assert_string_equal(u.port, "8080");
    assert_string_equal(u.target, "/api/connection");
    assert_int_equal(u.ipv6, 0);
}

static void port_defaults_to_80_and_path_to_slash(void **state)
{
    (void)state;
    struct tf_lookup_url u;
    char err[256];
    assert_int_equal(tf_lookup_url_parse("http://ctl", &u, err, sizeof(err)), 0);
    assert_string_equal(u.host, "ctl");
    assert_string_equal(u.port, "80");
    assert_string_equal(u.target, "/");
    assert_int_equal(tf_lookup_url_parse("HTTP://10.0.0.1?x=1", &u, err, sizeof(err)), 0);
    assert_string_equal(u.host, "10.0.0.1");
    assert_string_equal(u.target, "/?x=1");
}

static void ipv6_literals_are_bracketed(void **state)
{
    (void)state;
    struct tf_lookup_url u;
    char err[256];
    assert_int_equal(tf_lookup_url_parse("http://[::1]:8080/api/connection", &u, err, sizeof(err)),
                     0);
    assert_string_equal(u.host, "::1");
    assert_string_equal(u.port, "8080");
    assert_int_equal(u.ipv6, 1);
    assert_int_equal(tf_lookup_url_parse("http://[fd00::10:2]/c", &u, err, sizeof(err)), 0);
    assert_string_equal(u.host, "fd00::10:2");
    assert_string_equal(u.port, "80");
    /* Unbracketed or broken IPv6. */
    assert_int_equal(tf_lookup_url_parse("http://::1:8080/", &u, err, sizeof(err)), TF_EINVAL);
    assert_int_equal(tf_lookup_url_parse("http://[::1/", &u, err, sizeof(err)), TF_EINVAL);
    assert_int_equal(tf_lookup_url_parse("http://[::1]x/", &u, err, sizeof(err)), TF_EINVAL);
    assert_int_equal(tf_lookup_url_parse("http://[]/", &u, err, sizeof(err)), TF_EINVAL);
    assert_int_equal(tf_lookup_url_parse("http://[zz::1]/", &u, err, sizeof(err)), TF_EINVAL);
}

static void https_is_refused_as_not_supported(void **state)
{
    (void)state;
    struct tf_lookup_url u;
    char err[256];
    assert_int_equal(tf_lookup_url_parse("https://ctl:8443/api/connection", &u, err, sizeof(err)),
                     TF_ENOTSUP);
    assert_non_null(strstr(err, "https is not supported"));
    assert_non_null(strstr(err, "https://ctl:8443/api/connection"));
}

static void malformed_urls_are_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "ctl:8080/api/connection",
        "ftp://ctl/",
        "tcp://ctl:8080",
        "http://",
        "http:///path",
        "http://:8080/",
        "http://ctl:/",
        "http://ctl:0/",
        "http://ctl:65536/",
        "http://ctl:80a/",
        "http://ctl:123456/",
        "http://user@ctl/",
        "http://ctl/a b",
        "http://ctl/a#frag",
        "http://ct l/",
        "http://ctl/\x01",
        "http://ctl/\xc3\xa9",
        "http://ctl%2f/",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct tf_lookup_url u;
        char err[256] = "";
        int rc = tf_lookup_url_parse(bad[i], &u, err, sizeof(err));
        if (rc != TF_EINVAL)
            fail_msg("\"%s\" gave %d", bad[i], rc);
        assert_true(err[0] != 0);
    }
    struct tf_lookup_url u;
    assert_int_equal(tf_lookup_url_parse(NULL, &u, NULL, 0), TF_EINVAL);
    char host[400];
    memset(host, 'a', sizeof(host));
    memcpy(host, "http://", 7);
    host[sizeof(host) - 1] = 0;
    assert_int_equal(tf_lookup_url_parse(host, &u, NULL, 0), TF_EINVAL);
}

/* ---- request -------------------------------------------------------------------------------- */

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void request_asks_for_the_pods_connection(void **state)
{
    (void)state;
    struct tf_lookup_url u;
    char req[TF_LOOKUP_MAX_REQUEST], err[256];
    assert_int_equal(
        tf_lookup_url_parse("http://tensor-fusion.tensor-fusion-sys.svc:8080/api/connection", &u,
                            err, sizeof(err)),
        0);
    int n =
        tf_lookup_request(&u, "my-app-7d4f9-x2k8q", "team-a", req, sizeof(req), err, sizeof(err));
    assert_true(n > 0);
    assert_int_equal((size_t)n, strlen(req));
    assert_string_equal(req, "GET /api/connection?name=my-app-7d4f9-x2k8q&namespace=team-a "
                             "HTTP/1.0\r\n"
                             "Host: tensor-fusion.tensor-fusion-sys.svc:8080\r\n"
                             "Accept: application/json\r\n"
                             "Connection: close\r\n"
                             "User-Agent: libtf_client\r\n\r\n");
}

static void request_host_header_and_query_joining(void **state)
{
    (void)state;
    struct tf_lookup_url u;
    char req[TF_LOOKUP_MAX_REQUEST], err[256];
    assert_int_equal(tf_lookup_url_parse("http://[::1]/c?v=2", &u, err, sizeof(err)), 0);
    assert_true(tf_lookup_request(&u, "p", "n", req, sizeof(req), err, sizeof(err)) > 0);
    assert_true(starts(req, "GET /c?v=2&name=p&namespace=n HTTP/1.0\r\nHost: [::1]\r\n"));
    assert_int_equal(tf_lookup_url_parse("http://[::1]:9/c?", &u, err, sizeof(err)), 0);
    assert_true(tf_lookup_request(&u, "p", "n", req, sizeof(req), err, sizeof(err)) > 0);
    assert_true(starts(req, "GET /c?name=p&namespace=n HTTP/1.0\r\nHost: [::1]:9\r\n"));
}

static void query_values_outside_kubernetes_names_are_percent_encoded(void **state)
{
    (void)state;
    struct tf_lookup_url u;
    char req[TF_LOOKUP_MAX_REQUEST], err[256];
    assert_int_equal(tf_lookup_url_parse("http://c/api", &u, err, sizeof(err)), 0);
    assert_true(tf_lookup_request(&u, "a b&c=d/é", "n~s.1_x", req, sizeof(req), err, sizeof(err)) >
                0);
    assert_true(starts(req, "GET /api?name=a%20b%26c%3Dd%2F%C3%A9&namespace=n~s.1_x HTTP/1.0\r\n"));
    /* Empty values and a buffer too small are refused. */
    assert_int_equal(tf_lookup_request(&u, "", "n", req, sizeof(req), err, sizeof(err)), TF_EINVAL);
    assert_int_equal(tf_lookup_request(&u, "p", NULL, req, sizeof(req), err, sizeof(err)),
                     TF_EINVAL);
    assert_int_equal(tf_lookup_request(&u, "p", "n", req, 40, err, sizeof(err)), TF_ENOSPC);
    assert_true(strlen(req) < 40);
}

/* ---- answers -------------------------------------------------------------------------------- */

/* Parses TEXT and returns the verdict, ADDR/MSG filled. */
static int judge(const char *text, char *addr, size_t addrlen, char *msg, size_t msglen)
{
    struct tf_lookup_reply r;
    char err[256];
    int rc = tf_lookup_reply_parse(text, strlen(text), &r, err, sizeof(err));
    if (rc != 0) {
        snprintf(msg, msglen, "%s", err);
        return rc;
    }
    return tf_lookup_reply_verdict(&r, addr, addrlen, msg, msglen);
}

static void paired_answer_gives_the_worker_url(void **state)
{
    (void)state;
    char addr[300], msg[400];
    /* As libmicrohttpd sends the controller's answer. */
    const char *a = "HTTP/1.1 200 OK\r\n"
                    "Connection: close\r\n"
                    "Content-Length: 36\r\n"
                    "Content-Type: application/json\r\n"
                    "Date: Thu, 03 Dec 2026 12:00:00 GMT\r\n"
                    "\r\n"
                    "{\"workerURL\":\"tcp://10.1.2.3:8001\"}\n";
    assert_int_equal(judge(a, addr, sizeof(addr), msg, sizeof(msg)), 0);
    assert_string_equal(addr, "tcp://10.1.2.3:8001");
    /* HTTP/1.0, LF line ends, no Content-Length, whitespace, other members, IPv6 worker. */
    const char *b = "HTTP/1.0 200\n\n"
                    " {\n  \"name\": \"x\", \"ids\": [1, -2.5e3, true, null, {\"a\": []}],\n"
                    "  \"workerURL\" : \"tcp://[fd00::3]:8001\" } \r\n";
    assert_int_equal(judge(b, addr, sizeof(addr), msg, sizeof(msg)), 0);
    assert_string_equal(addr, "tcp://[fd00::3]:8001");
}

static void escaped_slashes_and_quotes_are_decoded(void **state)
{
    (void)state;
    char addr[300], msg[400];
    assert_int_equal(judge("HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"tcp:\\/\\/w.ns.svc:8001\"}",
                           addr, sizeof(addr), msg, sizeof(msg)),
                     0);
    assert_string_equal(addr, "tcp://w.ns.svc:8001");
    assert_int_equal(judge("HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"unix:\\/\\/\\/run\\/w.sock\"}",
                           addr, sizeof(addr), msg, sizeof(msg)),
                     0);
    assert_string_equal(addr, "unix:///run/w.sock");
    struct tf_lookup_reply r;
    char err[256];
    const char *e = "HTTP/1.1 404 Not Found\r\n\r\n{\"error\":\"say \\\"no\\\" \\\\ bye\"}";
    assert_int_equal(tf_lookup_reply_parse(e, strlen(e), &r, err, sizeof(err)), 0);
    assert_int_equal(r.json, 1);
    assert_string_equal(r.error, "say \"no\" \\ bye");
    /* Other members may use any valid escape: they are skipped, not decoded. */
    assert_int_equal(judge("HTTP/1.1 200 OK\r\n\r\n{\"x\":\"a\\n\\u00e9\\t\",\"workerURL\":\"tcp://"
                           "h:1\"}",
                           addr, sizeof(addr), msg, sizeof(msg)),
                     0);
    assert_string_equal(addr, "tcp://h:1");
}

static void not_paired_yet_is_a_wait(void **state)
{
    (void)state;
    char addr[300], msg[400];
    const char *a = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 51\r\n\r\n"
                    "{\"error\":\"connection not paired with a worker yet\"}";
    assert_int_equal(judge(a, addr, sizeof(addr), msg, sizeof(msg)), TF_EBUSY);
    assert_string_equal(msg, "HTTP 503: connection not paired with a worker yet");
    assert_string_equal(addr, "");
    /* A 503 without JSON (a proxy) is a wait too. */
    assert_int_equal(judge("HTTP/1.1 503 Service Unavailable\r\n\r\nupstream down\n", addr,
                           sizeof(addr), msg, sizeof(msg)),
                     TF_EBUSY);
    assert_string_equal(msg, "HTTP 503 (body: upstream down)");
}

static void unknown_connection_and_bad_request_fail_with_the_controllers_message(void **state)
{
    (void)state;
    char addr[300], msg[400];
    assert_int_equal(judge("HTTP/1.1 404 Not Found\r\n\r\n{\"error\":\"no such "
                           "TensorFusionConnection\"}",
                           addr, sizeof(addr), msg, sizeof(msg)),
                     TF_ENOENT);
    assert_string_equal(msg, "HTTP 404: no such TensorFusionConnection");
    assert_int_equal(judge("HTTP/1.1 400 Bad Request\r\n\r\n{\"error\":\"name and namespace query "
                           "parameters are required\"}",
                           addr, sizeof(addr), msg, sizeof(msg)),
                     TF_EINVAL);
    assert_string_equal(msg, "HTTP 400: name and namespace query parameters are required");
    assert_int_equal(
        judge("HTTP/1.1 500 Internal Server Error\r\n\r\n", addr, sizeof(addr), msg, sizeof(msg)),
        TF_EPROTO);
    assert_string_equal(msg, "HTTP 500 (empty body)");
    assert_int_equal(judge("HTTP/1.1 302 Found\r\nLocation: /x\r\n\r\n<html>moved</html>", addr,
                           sizeof(addr), msg, sizeof(msg)),
                     TF_EPROTO);
    assert_string_equal(msg, "HTTP 302 (body: <html>moved</html>)");
    /* Non-printable bytes of a message never reach the log. */
    struct tf_lookup_reply r;
    char err[256];
    const char *b = "HTTP/1.1 404 x\r\n\r\n{\"error\":\"a\xc3\xa9\x7f\"}";
    assert_int_equal(tf_lookup_reply_parse(b, strlen(b), &r, err, sizeof(err)), 0);
    assert_string_equal(r.error, "a???");
}

static void ok_without_a_usable_worker_url_is_an_error(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "HTTP/1.1 200 OK\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerUrl\":\"tcp://h:1\"}",
        "HTTP/1.1 200 OK\r\n\r\n{\"nested\":{\"workerURL\":\"tcp://h:1\"}}",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"\"}",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"http://h:1\"}",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"tcp://h\"}",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"tcp://h:0\"}",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"tcp://h :1\"}",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"tcp://h\xc3\xa9:1\"}",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":null}",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":8001}",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"tcp://a:1\",\"workerURL\":\"tcp://b:1\"}",
        /* Escapes the strict scanner does not decode, in the member or in a name. */
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"tcp://h:1\\n\"}",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"tcp:\\u002f/h:1\"}",
        "HTTP/1.1 200 OK\r\n\r\n{\"\\u0077orkerURL\":\"tcp://h:1\"}",
        /* Not JSON, or not only JSON. */
        "HTTP/1.1 200 OK\r\n\r\n",
        "HTTP/1.1 200 OK\r\n\r\ntcp://10.1.2.3:8001",
        "HTTP/1.1 200 OK\r\n\r\n[\"tcp://h:1\"]",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"tcp://h:1\"} x",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"tcp://h:1\"",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"tcp://h:1}",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\" \"tcp://h:1\"}",
        "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"tcp://h:1\",}",
        "HTTP/1.1 200 OK\r\n\r\n{'workerURL':'tcp://h:1'}",
        "HTTP/1.1 200 OK\r\n\r\n{\"a\":01,\"workerURL\":\"tcp://h:1\"}",
        "HTTP/1.1 200 OK\r\n\r\n{\"a\":tru,\"workerURL\":\"tcp://h:1\"}",
        "HTTP/1.1 200 OK\r\n\r\n{\"a\":\"\\x\",\"workerURL\":\"tcp://h:1\"}",
        "HTTP/1.1 200 OK\r\n\r\n{\"a\":\"\\u12\",\"workerURL\":\"tcp://h:1\"}",
        "HTTP/1.1 200 OK\r\n\r\n{\"a\":\"\x01\",\"workerURL\":\"tcp://h:1\"}",
        ("HTTP/1.1 200 OK\r\n\r\n{\"a\":[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]],"
         "\"workerURL\":\"tcp://h:1\"}"),
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char addr[300] = "x", msg[400] = "";
        int rc = judge(bad[i], addr, sizeof(addr), msg, sizeof(msg));
        if (rc != TF_EPROTO)
            fail_msg("answer %zu gave %d (%s)", i, rc, msg);
        assert_string_equal(addr, "");
        assert_true(strncmp(msg, "HTTP 200", 8) == 0);
    }
    /* A workerURL too long for the caller's buffer. */
    char addr[12], msg[400];
    assert_int_equal(judge("HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"tcp://10.1.2.3:8001\"}", addr,
                           sizeof(addr), msg, sizeof(msg)),
                     TF_EPROTO);
    assert_string_equal(addr, "");
}

static void broken_http_is_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "\r\n\r\n",
        "SSH-2.0-OpenSSH_9.2\r\n",
        "HTTP/2 200\r\n\r\n{}",
        "HTTP/1.1 200OK\r\n\r\n{}",
        "HTTP/1.1 20 OK\r\n\r\n{}",
        "HTTP/1.1 099 x\r\n\r\n{}",
        "HTTP/1.1 600 x\r\n\r\n{}",
        "http/1.1 200 OK\r\n\r\n{}",
        "<html><body>hello</body></html>",
        /* Truncated headers: no empty line. */
        "HTTP/1.1 200 OK",
        "HTTP/1.1 200 OK\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r",
        /* Malformed header lines. */
        "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nA: b\x01\r\n\r\n{}",
        "HTTP/1.1 200 OK\x01\r\n\r\n{}",
        /* Content-Length that does not match the body. */
        "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nContent-Length: 2x\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nContent-Length: 99999999999\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct tf_lookup_reply r;
        char err[256] = "";
        int rc = tf_lookup_reply_parse(bad[i], strlen(bad[i]), &r, err, sizeof(err));
        if (rc != TF_EPROTO)
            fail_msg("answer %zu gave %d", i, rc);
        assert_true(err[0] != 0);
    }
    struct tf_lookup_reply r;
    char err[256];
    const char *t = "HTTP/1.1 404 x\r\nContent-Length: 2\r\n\r\nhiHTTP";
    assert_int_equal(tf_lookup_reply_parse(t, strlen(t), &r, err, sizeof(err)), TF_EPROTO);
    assert_non_null(strstr(err, "after the 2-byte body"));
    t = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}";
    assert_int_equal(tf_lookup_reply_parse(t, strlen(t), &r, err, sizeof(err)), TF_EPROTO);
    assert_string_equal(err, "truncated body (2 of 10 bytes)");
    t = "HTTP/1.1 200 OK";
    assert_int_equal(tf_lookup_reply_parse(t, strlen(t), &r, err, sizeof(err)), TF_EPROTO);
    assert_string_equal(err, "not an HTTP/1.x answer");
    t = "HTTP/1.1 200 OK\r\nServer: x\r\n";
    assert_int_equal(tf_lookup_reply_parse(t, strlen(t), &r, err, sizeof(err)), TF_EPROTO);
    assert_string_equal(err, "truncated headers (no empty line)");
    /* NUL bytes anywhere are just bytes: never read as the end. */
    const char nul[] = "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"tcp://h:1\"}\0junk";
    assert_int_equal(tf_lookup_reply_parse(nul, sizeof(nul) - 1, &r, err, sizeof(err)), 0);
    assert_int_equal(r.json, 0);
}

static void chunked_answers_are_not_supported(void **state)
{
    (void)state;
    struct tf_lookup_reply r;
    char err[256];
    const char *t = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
    assert_int_equal(tf_lookup_reply_parse(t, strlen(t), &r, err, sizeof(err)), TF_ENOTSUP);
    assert_non_null(strstr(err, "chunked"));
    t = "HTTP/1.1 200 OK\r\ntransfer-encoding: Identity\r\n\r\n{\"workerURL\":\"tcp://h:1\"}";
    assert_int_equal(tf_lookup_reply_parse(t, strlen(t), &r, err, sizeof(err)), 0);
    assert_string_equal(r.worker_url, "tcp://h:1");
}

static void oversized_answers_are_refused(void **state)
{
    (void)state;
    size_t n = TF_LOOKUP_MAX_ANSWER + 1;
    char *big = malloc(n);
    const char *head = "HTTP/1.1 200 OK\r\n\r\n{\"workerURL\":\"tcp://h:1\",\"pad\":\"";
    size_t hl = strlen(head);
    memcpy(big, head, hl);
    memset(big + hl, 'x', n - hl - 2);
    memcpy(big + n - 2, "\"}", 2);
    struct tf_lookup_reply r;
    char err[256];
    assert_int_equal(tf_lookup_reply_parse(big, n, &r, err, sizeof(err)), TF_EPROTO);
    assert_non_null(strstr(err, "16384"));
    /* Exactly at the cap is fine. */
    memcpy(big + n - 3, "\"}", 2);
    assert_int_equal(tf_lookup_reply_parse(big, n - 1, &r, err, sizeof(err)), 0);
    assert_int_equal(r.json, 1);
    assert_string_equal(r.worker_url, "tcp://h:1");
    /* A long error member is cut, a long workerURL refused. */
    char *e = malloc(2000);
    int k = snprintf(e, 2000, "HTTP/1.1 404 x\r\n\r\n{\"error\":\"");
    memset(e + k, 'm', 1000);
    strcpy(e + k + 1000, "\"}");
    assert_int_equal(tf_lookup_reply_parse(e, strlen(e), &r, err, sizeof(err)), 0);
    assert_int_equal(r.json, 1);
    assert_int_equal(strlen(r.error), sizeof(r.error) - 1);
    k = snprintf(e, 2000, "HTTP/1.1 200 x\r\n\r\n{\"workerURL\":\"tcp://");
    memset(e + k, 'h', 400);
    strcpy(e + k + 400, ":1\"}");
    assert_int_equal(tf_lookup_reply_parse(e, strlen(e), &r, err, sizeof(err)), 0);
    assert_int_equal(r.json, 0);
    assert_non_null(strstr(r.json_err, "longer than"));
    free(e);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(controller_url_of_the_webhook_is_host_port_and_path),
        cmocka_unit_test(port_defaults_to_80_and_path_to_slash),
        cmocka_unit_test(ipv6_literals_are_bracketed),
        cmocka_unit_test(https_is_refused_as_not_supported),
        cmocka_unit_test(malformed_urls_are_refused),
        cmocka_unit_test(request_asks_for_the_pods_connection),
        cmocka_unit_test(request_host_header_and_query_joining),
        cmocka_unit_test(query_values_outside_kubernetes_names_are_percent_encoded),
        cmocka_unit_test(paired_answer_gives_the_worker_url),
        cmocka_unit_test(escaped_slashes_and_quotes_are_decoded),
        cmocka_unit_test(not_paired_yet_is_a_wait),
        cmocka_unit_test(unknown_connection_and_bad_request_fail_with_the_controllers_message),
        cmocka_unit_test(ok_without_a_usable_worker_url_is_an_error),
        cmocka_unit_test(broken_http_is_refused),
        cmocka_unit_test(chunked_answers_are_not_supported),
        cmocka_unit_test(oversized_answers_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
