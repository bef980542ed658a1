/* SPDX-License-Identifier: Apache-2.0
 *
 * The controller's connection answer for libtf_client: URL parser, request builder, HTTP
 * answer parser and strict scanner of its JSON body. No I/O; see lookup.h.
 */
#include "remote/lookup.h"

#include "common/err.h"
#include "common/strutil.h"
#include "remote/net.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- URL ------------------------------------------------------------------------------------ */

static int is_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int is_hex(unsigned char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int tf_lookup_url_parse(const char *s, struct tf_lookup_url *u, char *err, size_t errlen)
{
    memset(u, 0, sizeof(*u));
    if (!s || !*s) {
        tf_errf(err, errlen, "empty controller URL (want http://host[:port]/path)");
        return TF_EINVAL;
    }
    if (strncasecmp(s, "https://", 8) == 0) {
        tf_errf(err, errlen, "controller URL \"%s\": https is not supported (use http://)", s);
        return TF_ENOTSUP;
    }
    if (strncasecmp(s, "http://", 7) != 0) {
        tf_errf(err, errlen, "controller URL \"%s\": want http://host[:port]/path", s);
        return TF_EINVAL;
    }
    const char *h = s + 7;
    size_t alen = strcspn(h, "/?#");
    const char *aend = h + alen, *hs, *port = NULL;
    size_t hl;
    if (memchr(h, '@', alen)) {
        tf_errf(err, errlen, "controller URL \"%s\": user information is not supported", s);
        return TF_EINVAL;
    }
    if (alen && h[0] == '[') {
        const char *close = memchr(h, ']', alen);
        if (!close) {
            tf_errf(err, errlen, "controller URL \"%s\": unterminated [IPv6] host", s);
            return TF_EINVAL;
        }
        hs = h + 1;
        hl = (size_t)(close - hs);
        int colons = 0;
        for (size_t i = 0; i < hl; i++) {
            unsigned char c = (unsigned char)hs[i];
            if (c == ':')
                colons++;
            else if (!is_hex(c) && c != '.')
                colons = -1000;
        }
        if (colons < 1) {
            tf_errf(err, errlen, "controller URL \"%s\": bad IPv6 literal", s);
            return TF_EINVAL;
        }
        if (close + 1 < aend) {
            if (close[1] != ':') {
                tf_errf(err, errlen, "controller URL \"%s\": junk after the [IPv6] host", s);
                return TF_EINVAL;
            }
            port = close + 2;
        }
        u->ipv6 = 1;
    } else {
        const char *colon = memchr(h, ':', alen);
        hs = h;
        hl = colon ? (size_t)(colon - h) : alen;
        if (colon)
            port = colon + 1;
        for (size_t i = 0; i < hl; i++) {
            unsigned char c = (unsigned char)hs[i];
            if (!is_alnum(c) && c != '-' && c != '.' && c != '_') {
                tf_errf(err, errlen, "controller URL \"%s\": bad character in the host name", s);
                return TF_EINVAL;
            }
        }
    }
    if (hl == 0 || hl >= sizeof(u->host)) {
        tf_errf(err, errlen, "controller URL \"%s\": empty or overlong host", s);
        return TF_EINVAL;
    }
    memcpy(u->host, hs, hl);
    u->host[hl] = 0;
    if (port) {
        size_t pl = (size_t)(aend - port);
        long pn = 0;
        for (size_t i = 0; i < pl && pl <= 5; i++)
            pn = is_digit((unsigned char)port[i]) ? pn * 10 + (port[i] - '0') : -1000000;
        if (pl == 0 || pl > 5 || pn < 1 || pn > 65535) {
            tf_errf(err, errlen, "controller URL \"%s\": port is not 1..65535", s);
            return TF_EINVAL;
        }
        snprintf(u->port, sizeof(u->port), "%ld", pn);
    } else {
        snprintf(u->port, sizeof(u->port), "80");
    }
    const char *t = aend;
    for (const char *q = t; *q; q++) {
        unsigned char c = (unsigned char)*q;
        if (c == '#') {
            tf_errf(err, errlen, "controller URL \"%s\": a #fragment is not allowed", s);
            return TF_EINVAL;
        }
        if (c <= 0x20 || c >= 0x7f) {
            tf_errf(err, errlen, "controller URL \"%s\": space or non-printable byte in the path",
                    s);
            return TF_EINVAL;
        }
    }
    int n = snprintf(u->target, sizeof(u->target), "%s%s", *t == '/' ? "" : "/", t);
    if (n < 0 || (size_t)n >= sizeof(u->target)) {
        tf_errf(err, errlen, "controller URL \"%s\": path longer than %zu bytes", s,
                sizeof(u->target) - 2);
        return TF_EINVAL;
    }
    return 0;
}

/* ---- request -------------------------------------------------------------------------------- */

struct out {
    char *p;
    size_t cap, len;
    int over;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->over || n >= o->cap - o->len) {
        o->over = 1;
        return;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = 0;
}

static void puts_(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

static void put_encoded(struct out *o, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (is_alnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            put(o, (const char *)&c, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            put(o, e, 3);
        }
    }
}

int tf_lookup_request(const struct tf_lookup_url *u, const char *name, const char *ns, char *out,
                      size_t outlen, char *err, size_t errlen)
{
    if (!name || !*name || !ns || !*ns) {
        tf_errf(err, errlen, "empty connection name or namespace");
        return TF_EINVAL;
    }
    if (outlen == 0)
        return TF_ENOSPC;
    struct out o = {.p = out, .cap = outlen};
    out[0] = 0;
    puts_(&o, "GET ");
    puts_(&o, u->target);
    const char *q = strchr(u->target, '?');
    size_t tl = strlen(u->target);
    if (!q)
        puts_(&o, "?");
    else if (u->target[tl - 1] != '?' && u->target[tl - 1] != '&')
        puts_(&o, "&");
    puts_(&o, "name=");
    put_encoded(&o, name);
    puts_(&o, "&namespace=");
    put_encoded(&o, ns);
    puts_(&o, " HTTP/1.0\r\nHost: ");
    if (u->ipv6)
        puts_(&o, "[");
    puts_(&o, u->host);
    if (u->ipv6)
        puts_(&o, "]");
    if (strcmp(u->port, "80") != 0) {
        puts_(&o, ":");
        puts_(&o, u->port);
    }
    puts_(&o, "\r\nAccept: application/json\r\nConnection: close\r\n"
              "User-Agent: libtf_client\r\n\r\n");
    if (o.over) {
        tf_errf(err, errlen, "request for %s/%s longer than %zu bytes", ns, name, outlen - 1);
        return TF_ENOSPC;
    }
    return (int)o.len;
}

/* ---- JSON body ------------------------------------------------------------------------------ */

#define JS_MAX_DEPTH 16

struct js {
    const char *p, *end;
    struct tf_lookup_reply *r;
    int seen_url, seen_err;
};

static int js_fail(struct js *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int js_fail(struct js *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->r->json_err, sizeof(j->r->json_err), fmt, ap);
    va_end(ap);
    return -1;
}

static int js_at(const struct js *j, char c)
{
    return j->p < j->end && *j->p == c;
}

static void js_ws(struct js *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

/* The string at J->p (its opening quote). STRICT: only \" \\ \/ (the string is decoded into
 * DST/CAP, NUL-terminated; *OVER set when it did not fit); else any valid JSON escape,
 * nothing stored. WHAT names the string in messages. */
static int js_string(struct js *j, int strict, char *dst, size_t cap, int *over, const char *what)
{
    size_t n = 0;
    j->p++;
    for (;;) {
        if (j->p >= j->end)
            return js_fail(j, "unterminated string");
        unsigned char c = (unsigned char)*j->p++;
        if (c == '"')
            break;
        if (c < 0x20)
            return js_fail(j, "control character in a string");
        if (c == '\\') {
            if (j->p >= j->end)
                return js_fail(j, "unterminated string");
            unsigned char e = (unsigned char)*j->p++;
            if (e == '"' || e == '\\' || e == '/') {
                c = e;
            } else if (!strchr("bfnrtu", e) || e == 0) {
                return js_fail(j, "invalid escape in a string");
            } else if (strict) {
                return js_fail(j, "escape \\%c in %s is not supported", e, what);
            } else if (e == 'u') {
                for (int i = 0; i < 4; i++)
                    if (j->p >= j->end || !is_hex((unsigned char)*j->p++))
                        return js_fail(j, "invalid \\u escape in a string");
            }
        }
        if (dst) {
            if (n + 1 < cap)
                dst[n++] = (char)c;
            else
                *over = 1;
        }
    }
    if (dst)
        dst[n] = 0;
    return 0;
}

static int js_digits(struct js *j)
{
    if (j->p >= j->end || !is_digit((unsigned char)*j->p))
        return js_fail(j, "malformed number");
    while (j->p < j->end && is_digit((unsigned char)*j->p))
        j->p++;
    return 0;
}

static int js_number(struct js *j)
{
    if (js_at(j, '-'))
        j->p++;
    if (js_at(j, '0'))
        j->p++;
    else if (js_digits(j))
        return -1;
    if (js_at(j, '.')) {
        j->p++;
        if (js_digits(j))
            return -1;
    }
    if (js_at(j, 'e') || js_at(j, 'E')) {
        j->p++;
        if (js_at(j, '+') || js_at(j, '-'))
            j->p++;
        if (js_digits(j))
            return -1;
    }
    return 0;
}

static int js_literal(struct js *j, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
        return js_fail(j, "malformed literal (want %s)", word);
    j->p += n;
    return 0;
}

static int js_object(struct js *j, int depth);

static int js_array(struct js *j, int depth);

static int js_value(struct js *j, int depth)
{
    js_ws(j);
    if (j->p >= j->end)
        return js_fail(j, "value expected");
    switch (*j->p) {
    case '{':
        return js_object(j, depth + 1);
    case '[':
        return js_array(j, depth + 1);
    case '"':
        return js_string(j, 0, NULL, 0, NULL, "a string");
    case 't':
        return js_literal(j, "true");
    case 'f':
        return js_literal(j, "false");
    case 'n':
        return js_literal(j, "null");
    default:
        if (*j->p == '-' || is_digit((unsigned char)*j->p))
            return js_number(j);
        if ((unsigned char)*j->p < 0x20 || (unsigned char)*j->p >= 0x7f)
            return js_fail(j, "unexpected byte 0x%02x", (unsigned char)*j->p);
        return js_fail(j, "unexpected character '%c'", *j->p);
    }
}

static int js_array(struct js *j, int depth)
{
    if (depth > JS_MAX_DEPTH)
        return js_fail(j, "nested deeper than %d levels", JS_MAX_DEPTH);
    j->p++;
    js_ws(j);
    if (js_at(j, ']')) {
        j->p++;
        return 0;
    }
    for (;;) {
        if (js_value(j, depth))
            return -1;
        js_ws(j);
        if (js_at(j, ',')) {
            j->p++;
            continue;
        }
        if (js_at(j, ']')) {
            j->p++;
            return 0;
        }
        return js_fail(j, "',' or ']' expected");
    }
}

/* A member the client takes: a string with the strict escapes, each at most once. */
static int js_member(struct js *j, const char *key, int *seen, char *dst, size_t cap)
{
    if (*seen)
        return js_fail(j, "duplicate member \"%s\"", key);
    *seen = 1;
    if (!js_at(j, '"'))
        return js_fail(j, "member \"%s\" is not a string", key);
    int over = 0;
    if (js_string(j, 1, dst, cap, &over, key))
        return -1;
    return over ? 1 : 0;
}

static int js_object(struct js *j, int depth)
{
    if (depth > JS_MAX_DEPTH)
        return js_fail(j, "nested deeper than %d levels", JS_MAX_DEPTH);
    j->p++;
    js_ws(j);
    if (js_at(j, '}')) {
        j->p++;
        return 0;
    }
    struct tf_lookup_reply *r = j->r;
    for (;;) {
        js_ws(j);
        if (!js_at(j, '"'))
            return js_fail(j, "member name expected");
        char key[64];
        int long_key = 0;
        if (js_string(j, 1, key, sizeof(key), &long_key, "a member name"))
            return -1;
        js_ws(j);
        if (!js_at(j, ':'))
            return js_fail(j, "':' expected after a member name");
        j->p++;
        js_ws(j);
        int top = depth == 1 && !long_key;
        if (top && strcmp(key, "workerURL") == 0) {
            int rc = js_member(j, key, &j->seen_url, r->worker_url, sizeof(r->worker_url));
            if (rc < 0)
                return -1;
            if (rc > 0)
                return js_fail(j, "workerURL longer than %zu bytes", sizeof(r->worker_url) - 1);
            for (const char *c = r->worker_url; *c; c++)
                if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
                    return js_fail(j, "workerURL holds a space or a non-printable byte");
        } else if (top && strcmp(key, "error") == 0) {
            if (js_member(j, key, &j->seen_err, r->error, sizeof(r->error)) < 0)
                return -1;
            for (char *c = r->error; *c; c++)
                if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
                    *c = '?';
        } else if (js_value(j, depth)) {
            return -1;
        }
        js_ws(j);
        if (js_at(j, ',')) {
            j->p++;
            continue;
        }
        if (js_at(j, '}')) {
            j->p++;
            return 0;
        }
        return js_fail(j, "',' or '}' expected");
    }
}

static void scan_body(struct tf_lookup_reply *r, const char *p, size_t n)
{
    struct js j = {.p = p, .end = p + n, .r = r};
    js_ws(&j);
    int rc;
    if (j.p == j.end)
        rc = js_fail(&j, "empty body");
    else if (*j.p != '{')
        rc = js_fail(&j, "the body is not a JSON object");
    else
        rc = js_object(&j, 1);
    if (rc == 0) {
        js_ws(&j);
        if (j.p != j.end)
            rc = js_fail(&j, "bytes after the JSON object");
    }
    r->json = rc == 0;
    if (!r->json) {
        r->worker_url[0] = 0;
        r->error[0] = 0;
    }
}

/* ---- HTTP answer ---------------------------------------------------------------------------- */

/* The line at P (up to END): its length without the line end, *NEXT after it; -1 when there
 * is no line end. */
static long line_at(const char *p, const char *end, const char **next)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl)
        return -1;
    *next = nl + 1;
    return (long)(nl > p && nl[-1] == '\r' ? nl - 1 - p : nl - p);
}

static int is_tchar(unsigned char c)
{
    return is_alnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Header values and the reason phrase: visible ASCII, space, tab, obs-text. */
static int is_field_byte(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static int name_is(const char *name, size_t n, const char *want)
{
    return strlen(want) == n && strncasecmp(name, want, n) == 0;
}

int tf_lookup_reply_parse(const char *data, size_t len, struct tf_lookup_reply *r, char *err,
                          size_t errlen)
{
    memset(r, 0, sizeof(*r));
    if (len == 0) {
        tf_errf(err, errlen, "empty answer");
        return TF_EPROTO;
    }
    if (len > TF_LOOKUP_MAX_ANSWER) {
        tf_errf(err, errlen, "answer of %zu bytes (at most %d)", len, TF_LOOKUP_MAX_ANSWER);
        return TF_EPROTO;
    }
    const char *end = data + len, *next;
    long n = line_at(data, end, &next);
    if (n < 12 || memcmp(data, "HTTP/1.", 7) != 0 || !is_digit((unsigned char)data[7]) ||
        data[8] != ' ' || !is_digit((unsigned char)data[9]) || !is_digit((unsigned char)data[10]) ||
        !is_digit((unsigned char)data[11]) || (n > 12 && data[12] != ' ')) {
        tf_errf(err, errlen, "not an HTTP/1.x answer");
        return TF_EPROTO;
    }
    for (long i = 12; i < n; i++) {
        if (!is_field_byte((unsigned char)data[i])) {
            tf_errf(err, errlen, "control character in the status line");
            return TF_EPROTO;
        }
    }
    r->status = (data[9] - '0') * 100 + (data[10] - '0') * 10 + (data[11] - '0');
    if (r->status < 100 || r->status > 599) {
        tf_errf(err, errlen, "HTTP status %d out of range", r->status);
        return TF_EPROTO;
    }
    long clen = -1;
    const char *p = next;
    for (;;) {
        n = line_at(p, end, &next);
        if (n < 0) {
            tf_errf(err, errlen, "truncated headers (no empty line)");
            return TF_EPROTO;
        }
        if (n == 0)
            break;
        if (*p == ' ' || *p == '\t') {
            tf_errf(err, errlen, "folded header line");
            return TF_EPROTO;
        }
        const char *colon = memchr(p, ':', (size_t)n);
        size_t nl = colon ? (size_t)(colon - p) : 0;
        for (size_t i = 0; i < nl; i++)
            if (!is_tchar((unsigned char)p[i]))
                nl = 0;
        if (nl == 0) {
            tf_errf(err, errlen, "malformed header line");
            return TF_EPROTO;
        }
        const char *v = colon + 1, *ve = p + n;
        for (const char *c = v; c < ve; c++) {
            if (!is_field_byte((unsigned char)*c)) {
                tf_errf(err, errlen, "control character in header %.*s", (int)nl, p);
                return TF_EPROTO;
            }
        }
        while (v < ve && (*v == ' ' || *v == '\t'))
            v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        size_t vl = (size_t)(ve - v);
        if (name_is(p, nl, "Content-Length")) {
            long cl = 0;
            for (size_t i = 0; i < vl && vl <= 9; i++)
                cl = is_digit((unsigned char)v[i]) ? cl * 10 + (v[i] - '0') : -1000000000L;
            if (vl == 0 || vl > 9 || cl < 0 || (clen >= 0 && cl != clen)) {
                tf_errf(err, errlen, "bad Content-Length \"%.*s\"", (int)(vl > 40 ? 40 : vl), v);
                return TF_EPROTO;
            }
            clen = cl;
        } else if (name_is(p, nl, "Transfer-Encoding") && !name_is(v, vl, "identity")) {
            tf_errf(err, errlen, "Transfer-Encoding \"%.*s\" is not supported",
                    (int)(vl > 40 ? 40 : vl), v);
            return TF_ENOTSUP;
        }
        p = next;
    }
    const char *body = next;
    size_t blen = (size_t)(end - body);
    if (clen >= 0 && blen < (size_t)clen) {
        tf_errf(err, errlen, "truncated body (%zu of %ld bytes)", blen, clen);
        return TF_EPROTO;
    }
    if (clen >= 0 && blen > (size_t)clen) {
        tf_errf(err, errlen, "%zu bytes after the %ld-byte body", blen - (size_t)clen, clen);
        return TF_EPROTO;
    }
    size_t k = 0;
    for (size_t i = 0; i < blen && k + 1 < sizeof(r->body); i++) {
        unsigned char c = (unsigned char)body[i];
        r->body[k++] = c >= 0x20 && c < 0x7f ? (char)c : ' ';
    }
    while (k > 0 && r->body[k - 1] == ' ')
        k--;
    r->body[k] = 0;
    scan_body(r, body, blen);
    return 0;
}

int tf_lookup_reply_verdict(const struct tf_lookup_reply *r, char *addr, size_t addrlen, char *msg,
                            size_t msglen)
{
    if (addrlen)
        addr[0] = 0;
    if (r->error[0])
        tf_errf(msg, msglen, "HTTP %d: %s", r->status, r->error);
    else if (r->body[0])
        tf_errf(msg, msglen, "HTTP %d (body: %s)", r->status, r->body);
    else
        tf_errf(msg, msglen, "HTTP %d (empty body)", r->status);
    switch (r->status) {
    case 200:
        break;
    case 503:
        return TF_EBUSY;
    case 404:
        return TF_ENOENT;
    case 400:
        return TF_EINVAL;
    default:
        return TF_EPROTO;
    }
    if (!r->json) {
        tf_errf(msg, msglen, "HTTP 200 but the body is not understood (%s): %s", r->json_err,
                r->body);
        return TF_EPROTO;
    }
    if (!r->worker_url[0]) {
        tf_errf(msg, msglen, "HTTP 200 without \"workerURL\": %s", r->body);
        return TF_EPROTO;
    }
    struct tf_net_addr a;
    char e[200];
    if (tf_net_addr_parse(r->worker_url, &a, e, sizeof(e)) != 0) {
        tf_errf(msg, msglen, "HTTP 200 with a bad workerURL: %s", e);
        return TF_EPROTO;
    }
    if (a.kind == TF_NET_TCP && strcmp(a.port, "0") == 0) {
        tf_errf(msg, msglen, "HTTP 200 with a bad workerURL \"%s\": port 0", r->worker_url);
        return TF_EPROTO;
    }
    if (addrlen == 0 || !tf_strlcpy(addr, r->worker_url, addrlen)) {
        if (addrlen)
            addr[0] = 0;
        tf_errf(msg, msglen, "HTTP 200 with a workerURL longer than %zu bytes",
                addrlen ? addrlen - 1 : 0);
        return TF_EPROTO;
    }
    tf_errf(msg, msglen, "HTTP 200: workerURL %s", r->worker_url);
    return 0;
}
