/* SPDX-License-Identifier: Apache-2.0
 *
 * The HTTP/1.1 request parser of the controller's server: what kube-apiserver, kube-scheduler,
 * Prometheus, curl and browsers send is read as they mean it; what would let two parsers
 * disagree (smuggling) or make the server hold too much is refused with the right status.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "controller/httpparse.h"

static struct tf_http_head h;
static char buf[TF_HTTP_MAX_HEAD + 64];

static int parse(const char *text)
{
    size_t n = strlen(text);
    assert_true(n < sizeof(buf));
    memcpy(buf, text, n + 1);
    return tf_http_parse_head(buf, n, &h);
}

static void kube_scheduler_extender_call_is_read_whole(void **state)
{
    const char *req = "POST /scheduler/filter HTTP/1.1\r\n"
                      "Host: tensor-fusion.tensor-fusion-sys.svc:9443\r\n"
                      "User-Agent: kube-scheduler/v1.31.0\r\n"
                      "Content-Length: 15\r\n"
                      "Content-Type: application/json\r\n"
                      "Accept-Encoding: gzip\r\n\r\n{\"Pod\":null}   ";
    int hl = parse(req);
    assert_int_equal(hl, (int)(strstr(req, "\r\n\r\n") - req + 4));
    assert_string_equal(h.method, "POST");
    assert_string_equal(h.path, "/scheduler/filter");
    assert_int_equal(h.minor, 1);
    assert_int_equal(h.length, 15);
    assert_false(h.chunked);
    assert_true(h.keep_alive);
    assert_false(h.expect_100);
    assert_string_equal(tf_http_head_header(&h, "content-type"), "application/json");
    assert_string_equal(tf_http_head_header(&h, "HOST"),
                        "tensor-fusion.tensor-fusion-sys.svc:9443");
    assert_null(tf_http_head_header(&h, "Authorization"));
}

static void incomplete_heads_ask_for_more_and_full_ones_are_431(void **state)
{
    assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\n"), 0);
    assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\n\r"), 0);
    assert_int_equal(parse(""), 0);
    char *big = malloc(TF_HTTP_MAX_HEAD + 32);
    assert_non_null(big);
    strcpy(big, "GET / HTTP/1.1\r\nHost: a\r\nX-Big: ");
    size_t n = strlen(big);
    memset(big + n, 'x', TF_HTTP_MAX_HEAD + 8 - n);
    big[TF_HTTP_MAX_HEAD + 8] = '\0';
    assert_int_equal(parse(big), -431);
    free(big);
    char many[8192] = "GET / HTTP/1.1\r\nHost: a\r\n";
    for (int i = 0; i < TF_HTTP_MAX_HEADERS; i++)
        strcat(many, "X-A: 1\r\n");
    strcat(many, "\r\n");
    assert_int_equal(parse(many), -431);
}

static void query_and_path_are_decoded(void **state)
{
    assert_true(parse("GET /api/v1/console/gpus/GPU%2D1?range=1h&name=a+b%21&flag&=x&&step=60 "
                      "HTTP/1.1\r\nHost: a\r\n\r\n") > 0);
    assert_string_equal(h.path, "/api/v1/console/gpus/GPU-1");
    assert_string_equal(tf_http_head_arg(&h, "range"), "1h");
    assert_string_equal(tf_http_head_arg(&h, "name"), "a b!");
    assert_string_equal(tf_http_head_arg(&h, "flag"), "");
    assert_string_equal(tf_http_head_arg(&h, "step"), "60");
    assert_string_equal(tf_http_head_arg(&h, ""), "x");
    assert_null(tf_http_head_arg(&h, "missing"));
    /* '+' is a space only in the query. */
    assert_true(parse("GET /a+b HTTP/1.1\r\nHost: a\r\n\r\n") > 0);
    assert_string_equal(h.path, "/a+b");
    assert_int_equal(parse("GET /a%00b HTTP/1.1\r\nHost: a\r\n\r\n"), -400);
    assert_int_equal(parse("GET /a%zz HTTP/1.1\r\nHost: a\r\n\r\n"), -400);
    assert_int_equal(parse("GET /a?x=%4 HTTP/1.1\r\nHost: a\r\n\r\n"), -400);
    char many[1024] = "GET /?";
    for (int i = 0; i <= TF_HTTP_MAX_ARGS; i++)
        strcat(many, "a=1&");
    strcat(many, " HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_int_equal(parse(many), -400);
}

static void connection_semantics_follow_the_version(void **state)
{
    assert_true(parse("GET / HTTP/1.0\r\n\r\n") > 0); /* 1.0 needs no Host */
    assert_false(h.keep_alive);
    assert_true(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n") > 0);
    assert_true(h.keep_alive);
    assert_true(parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: TE, close\r\n\r\n") > 0);
    assert_false(h.keep_alive);
    assert_true(parse("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n") > 0); /* a stray CRLF before */
    assert_int_equal(parse("GET / HTTP/2.0\r\nHost: a\r\n\r\n"), -505);
    assert_int_equal(parse("GET / HTTP/1.1\r\n\r\n"), -400); /* no Host */
    assert_int_equal(parse("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), -400);
}

static void expect_100_continue_is_honoured_and_other_expectations_refused(void **state)
{
    assert_true(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\n"
                      "Expect: 100-Continue\r\n\r\n") > 0);
    assert_true(h.expect_100);
    assert_true(parse("POST / HTTP/1.1\r\nHost: a\r\nExpect:\r\n\r\n") > 0);
    assert_false(h.expect_100);
    assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n"), -417);
}

/* Request smuggling: the framing must be unambiguous. */
static void ambiguous_framing_is_refused(void **state)
{
    assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n"),
                     -400);
    assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
                           "Content-Length: 6\r\n\r\n"),
                     -400);
    assert_true(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
                      "Content-Length: 5\r\n\r\n") > 0);
    assert_int_equal(h.length, 5);
    assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n"), -400);
    assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5 5\r\n\r\n"), -400);
    assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\n"
                           "Content-Length: 99999999999999999999\r\n\r\n"),
                     -400);
    assert_int_equal(
        parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), -501);
    assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n"),
                     -501);
    assert_int_equal(parse("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), -400);
    assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length : 5\r\n\r\n"), -400);
    assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\r\n Folded: x\r\n\r\n"), -400);
    assert_int_equal(parse("POST / HTTP/1.1\nHost: a\n\n"), -400);              /* bare LF */
    assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\rb\r\n\r\n"), -400);     /* bare CR */
    assert_int_equal(parse("POST / HTTP/1.1\r\nHost: a\x01\r\n\r\n"), -400);    /* control */
    assert_int_equal(parse("GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n"), -400); /* absolute */
    assert_int_equal(parse("GET  / HTTP/1.1\r\nHost: a\r\n\r\n"), -400);
    assert_int_equal(parse("G(T / HTTP/1.1\r\nHost: a\r\n\r\n"), -400);
    assert_int_equal(parse("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"),
                     -400); /* two empty lines */
}

/* Feeds TEXT to a fresh decoder in pieces of STEP bytes; the body into OUT. */
static int dechunk(const char *text, size_t step, char *out, size_t *outlen, size_t *consumed)
{
    struct tf_http_chunked c = {0};
    size_t len = strlen(text), off = 0, n = 0;
    while (off < len) {
        size_t lim = len - off < step ? len - off : step, used = 0;
        while (used < lim) {
            size_t u, dl;
            const char *d;
            int rc = tf_http_chunked_step(&c, text + off + used, lim - used, &u, &d, &dl);
            used += u;
            if (dl) {
                memcpy(out + n, d, dl);
                n += dl;
            }
            if (rc) {
                out[n] = '\0';
                *outlen = n;
                *consumed = off + used;
                return rc;
            }
        }
        off += lim;
    }
    out[n] = '\0';
    *outlen = n;
    *consumed = len;
    return 0;
}

static void chunked_bodies_decode_however_they_are_split(void **state)
{
    const char *body = "5;name=v\r\nhello\r\n6\r\n world\r\nA\r\n0123456789\r\n0\r\n"
                       "X-Trailer: 1\r\n\r\nGET /next";
    for (size_t step = 1; step <= strlen(body); step++) {
        char out[64];
        size_t n, used;
        assert_int_equal(dechunk(body, step, out, &n, &used), 1);
        assert_string_equal(out, "hello world0123456789");
        assert_string_equal(body + used, "GET /next");
    }
    char out[64];
    size_t n, used;
    assert_int_equal(dechunk("5\r\nhel", 2, out, &n, &used), 0); /* more to come */
    assert_string_equal(out, "hel");
    assert_int_equal(dechunk("x\r\n", 3, out, &n, &used), -1);
    assert_int_equal(dechunk("5\r\nhelloXY0\r\n\r\n", 3, out, &n, &used), -1); /* no CRLF */
    assert_int_equal(dechunk("1000000000000000\r\n", 3, out, &n, &used), -1);  /* 16 digits */
    assert_int_equal(dechunk("5\nhello\r\n", 3, out, &n, &used), -1);
    assert_int_equal(dechunk("0\r\n: x\r\n\r\n", 3, out, &n, &used), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kube_scheduler_extender_call_is_read_whole),
        cmocka_unit_test(incomplete_heads_ask_for_more_and_full_ones_are_431),
        cmocka_unit_test(query_and_path_are_decoded),
        cmocka_unit_test(connection_semantics_follow_the_version),
        cmocka_unit_test(expect_100_continue_is_honoured_and_other_expectations_refused),
        cmocka_unit_test(ambiguous_framing_is_refused),
        cmocka_unit_test(chunked_bodies_decode_however_they_are_split),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
