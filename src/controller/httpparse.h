/* SPDX-License-Identifier: Apache-2.0
 *
 * HTTP/1.1 request parsing for the controller's server (https.c): the request head and the
 * chunked body framing, pure and bounds-checked (no I/O; fuzzed by fuzz/fuzz_httpparse.c).
 *
 * Strict where a lenient reading would let two parsers disagree (request smuggling) or let a
 * peer make the server hold more than it must; accepting everything kube-apiserver,
 * kube-scheduler, Prometheus, curl and browsers send:
 * - request line `METHOD SP origin-form SP HTTP/1.x CRLF` (an empty line before it is
 *   skipped); absolute-form, authority-form and `*` targets are refused (400);
 * - header lines `token ":" OWS value OWS CRLF`; control characters, a space before the colon
 *   and obsolete line folding are refused (400); HTTP/1.1 without Host is refused (400);
 * - the head at most TF_HTTP_MAX_HEAD bytes and TF_HTTP_MAX_HEADERS lines (431);
 * - Content-Length: digits only, repeated only with the same value; together with
 *   Transfer-Encoding refused (400); Transfer-Encoding other than exactly `chunked` (501);
 * - the path and the query arguments are percent-decoded (`+` is a space in the query); a bad
 *   escape or an escaped NUL is refused (400); at most TF_HTTP_MAX_ARGS arguments (400).
 */
#ifndef TF_CONTROLLER_HTTPPARSE_H
#define TF_CONTROLLER_HTTPPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_HTTP_MAX_HEAD 16384
#define TF_HTTP_MAX_HEADERS 100
#define TF_HTTP_MAX_ARGS 32

struct tf_http_kv {
    const char *name, *value; /* NUL-terminated, inside the parsed buffer */
};

/* A parsed request head. Every string points into the buffer given to tf_http_parse_head
 * (which is modified in place and holds them all within the head's length) and lives as long
 * as it. */
struct tf_http_head {
    const char *method;
    const char *path; /* decoded, without the query */
    int minor;        /* HTTP/1.MINOR */
    int64_t length;   /* Content-Length, -1 when absent */
    bool chunked;     /* Transfer-Encoding: chunked */
    bool keep_alive;  /* the connection stays open after the answer */
    bool expect_100;  /* Expect: 100-continue */
    int nheaders, nargs;
    struct tf_http_kv headers[TF_HTTP_MAX_HEADERS];
    struct tf_http_kv args[TF_HTTP_MAX_ARGS]; /* decoded query arguments ("" when no '=') */
};

/* Parses the request head at the start of BUF (LEN bytes). Returns the head's length (through
 * the empty line) when it is complete and valid, 0 when more bytes are needed (LEN is below
 * TF_HTTP_MAX_HEAD and no error was found yet), or the negated HTTP status to answer with
 * (-400, -417, -431, -501, -505). BUF is modified in place (strings are cut out of it). */
int tf_http_parse_head(char *buf, size_t len, struct tf_http_head *h);

/* The first header NAME (case-insensitive), or NULL. */
const char *tf_http_head_header(const struct tf_http_head *h, const char *name);
/* The first query argument KEY (exact), or NULL. */
const char *tf_http_head_arg(const struct tf_http_head *h, const char *key);

/* Chunked body framing, streamed: tf_http_chunked_step consumes framing from IN and hands out
 * one span of body data at a time. */
struct tf_http_chunked {
    int state;
    uint64_t left; /* data bytes left in the current chunk */
    size_t count;  /* size digits, extension or trailer bytes seen (bounded) */
};

/* Consumes bytes of IN (LEN of them): *USED of them, of which *DATA and *DLEN (possibly empty) is
 * body data to append. Returns 1 when the body ended (trailer included; *USED stops right after
 * it), 0 when the caller should call again (with the rest of IN, or more bytes when IN is used up),
 * -1 on malformed framing (*USED 0). */
int tf_http_chunked_step(struct tf_http_chunked *c, const char *in, size_t len, size_t *used,
                         const char **data, size_t *dlen);

#endif
