/* SPDX-License-Identifier: Apache-2.0
 *
 * HTTP/1.1 request head and chunked framing parser (see httpparse.h).
 */
#include "controller/httpparse.h"
#include "common/strutil.h"

#include <string.h>
#include <strings.h>

static bool is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A byte no header value, chunk extension or trailer may hold: controls but TAB, and DEL. */
static bool is_ctl(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

/* Percent-decodes S in place (PLUS: '+' is a space). False on a bad escape or an escaped NUL. */
static bool unescape(char *s, bool plus)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r == '%') {
            int hi = tf_hexval((unsigned char)r[1]),
                lo = hi < 0 ? -1 : tf_hexval((unsigned char)r[2]);
            if (lo < 0 || (hi == 0 && lo == 0))
                return false;
            *w++ = (char)(hi * 16 + lo);
            r += 2;
        } else {
            *w++ = plus && *r == '+' ? ' ' : *r;
        }
    }
    *w = '\0';
    return true;
}

/* Splits the query Q (NUL-terminated, in place) into decoded arguments. */
static int parse_query(char *q, struct tf_http_head *h)
{
    while (*q) {
        char *amp = strchr(q, '&');
        if (amp)
            *amp = '\0';
        if (*q) {
            if (h->nargs == TF_HTTP_MAX_ARGS)
                return -400;
            char *eq = strchr(q, '=');
            if (eq)
                *eq = '\0';
            if (!unescape(q, true) || (eq && !unescape(eq + 1, true)))
                return -400;
            /* (without '=' the value is the empty string at the name's end, in BUF too) */
            h->args[h->nargs++] = (struct tf_http_kv){q, eq ? eq + 1 : q + strlen(q)};
        }
        if (!amp)
            break;
        q = amp + 1;
    }
    return 0;
}

/* True when the comma-separated list V holds TOKEN (case-insensitive, OWS around items). */
static bool list_has(const char *v, const char *token)
{
    size_t n = strlen(token);
    for (const char *p = v; *p;) {
        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > p && (t[-1] == ' ' || t[-1] == '\t'))
            t--;
        if ((size_t)(t - p) == n && strncasecmp(p, token, n) == 0)
            return true;
        p = e;
    }
    return false;
}

/* The request line, NUL-terminated in place (without its CRLF). */
static int parse_request_line(char *line, struct tf_http_head *h)
{
    char *sp1 = strchr(line, ' ');
    if (!sp1 || sp1 == line)
        return -400;
    *sp1 = '\0';
    for (const char *p = line; *p; p++)
        if (!is_tchar((unsigned char)*p))
            return -400;
    char *target = sp1 + 1, *sp2 = strchr(target, ' ');
    if (!sp2 || target[0] != '/')
        return -400;
    *sp2 = '\0';
    for (const char *p = target; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return -400;
    const char *ver = sp2 + 1;
    if (strncmp(ver, "HTTP/", 5) != 0 || ver[5] < '0' || ver[5] > '9' || ver[6] != '.' ||
        ver[7] < '0' || ver[7] > '9' || ver[8])
        return -400;
    if (ver[5] != '1')
        return -505;
    h->method = line;
    h->minor = ver[7] - '0';
    char *q = strchr(target, '?');
    if (q) {
        *q = '\0';
        int rc = parse_query(q + 1, h);
        if (rc)
            return rc;
    }
    if (!unescape(target, false))
        return -400;
    h->path = target;
    return 0;
}

static int parse_content_length(const char *v, int64_t *out)
{
    if (!*v)
        return -400;
    int64_t n = 0;
    for (const char *p = v; *p; p++) {
        if (*p < '0' || *p > '9' || n > (INT64_MAX - 9) / 10)
            return -400;
        n = n * 10 + (*p - '0');
    }
    if (*out >= 0 && *out != n)
        return -400;
    *out = n;
    return 0;
}

/* One header line (NUL-terminated in place, without its CRLF). */
static int parse_header(char *line, struct tf_http_head *h, bool *has_host, bool *has_te)
{
    char *colon = strchr(line, ':');
    if (!colon || colon == line)
        return -400;
    *colon = '\0';
    for (const char *p = line; *p; p++)
        if (!is_tchar((unsigned char)*p))
            return -400; /* a space before the colon, or a name that is no token */
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    char *e = v + strlen(v);
    while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    *e = '\0';
    for (const char *p = v; *p; p++)
        if (is_ctl((unsigned char)*p))
            return -400;
    if (h->nheaders == TF_HTTP_MAX_HEADERS)
        return -431;
    h->headers[h->nheaders++] = (struct tf_http_kv){line, v};
    if (strcasecmp(line, "Content-Length") == 0)
        return parse_content_length(v, &h->length);
    if (strcasecmp(line, "Transfer-Encoding") == 0) {
        if (*has_te || strcasecmp(v, "chunked") != 0)
            return -501;
        *has_te = true;
    } else if (strcasecmp(line, "Host") == 0) {
        if (*has_host)
            return -400;
        *has_host = true;
    } else if (strcasecmp(line, "Connection") == 0) {
        if (list_has(v, "close"))
            h->keep_alive = false;
        else if (list_has(v, "keep-alive"))
            h->keep_alive = true;
    } else if (strcasecmp(line, "Expect") == 0 && *v) {
        if (strcasecmp(v, "100-continue") != 0)
            return -417;
        h->expect_100 = true;
    }
    return 0;
}

int tf_http_parse_head(char *buf, size_t len, struct tf_http_head *h)
{
    memset(h, 0, sizeof(*h));
    h->length = -1;
    size_t start = 0;
    if (len >= 2 && buf[0] == '\r' && buf[1] == '\n')
        start = 2; /* one empty line before the request line may be skipped */
    /* Find the end of the head (CRLF CRLF) within the bound; anything else is bare CR/LF. */
    size_t lim = len < TF_HTTP_MAX_HEAD ? len : TF_HTTP_MAX_HEAD, end = 0;
    for (size_t i = start; i < lim; i++) {
        if (buf[i] == '\0')
            return -400;
        if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r'))
            return -400; /* bare LF */
        if (buf[i] == '\r' && i + 1 < lim && buf[i + 1] != '\n')
            return -400; /* bare CR */
        if (i >= start + 3 && buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' &&
            buf[i - 3] == '\r') {
            end = i + 1;
            break;
        }
    }
    if (!end)
        return len >= TF_HTTP_MAX_HEAD ? -431 : 0;
    bool has_host = false, has_te = false;
    char *line = buf + start;
    int rc = 0;
    for (bool first = true;; first = false) {
        char *cr = line;
        while (*cr != '\r')
            cr++;
        *cr = '\0';
        if (!*line) {
            if (first)
                return -400; /* no request line */
            break;
        }
        if (first) {
            rc = parse_request_line(line, h);
            h->keep_alive = h->minor >= 1; /* the default, before any Connection header */
        } else {
            if (*line == ' ' || *line == '\t')
                return -400; /* obsolete line folding */
            rc = parse_header(line, h, &has_host, &has_te);
        }
        if (rc)
            return rc;
        line = cr + 2;
    }
    if (has_te && (h->length >= 0 || h->minor == 0))
        return -400;
    if (h->minor >= 1 && !has_host)
        return -400;
    h->chunked = has_te;
    if (h->expect_100 && h->minor == 0)
        h->expect_100 = false; /* an HTTP/1.0 client waits for no 100 */
    return (int)end;
}

const char *tf_http_head_header(const struct tf_http_head *h, const char *name)
{
    for (int i = 0; i < h->nheaders; i++)
        if (strcasecmp(h->headers[i].name, name) == 0)
            return h->headers[i].value;
    return NULL;
}

const char *tf_http_head_arg(const struct tf_http_head *h, const char *key)
{
    for (int i = 0; i < h->nargs; i++)
        if (strcmp(h->args[i].name, key) == 0)
            return h->args[i].value;
    return NULL;
}

/* Chunked framing states. */
enum {
    CH_SIZE,
    CH_EXT,
    CH_SIZE_LF,
    CH_DATA,
    CH_DATA_CR,
    CH_DATA_LF,
    CH_TRAILER,
    CH_TRAILER_LF,
    CH_TLINE,
    CH_TLINE_LF,
    CH_DONE
};

#define CH_MAX_DIGITS 15 /* < 2^60 per chunk */
#define CH_MAX_EXT 1024  /* extension bytes per chunk */
#define CH_MAX_TRAILER 8192

int tf_http_chunked_step(struct tf_http_chunked *c, const char *in, size_t len, size_t *used,
                         const char **data, size_t *dlen)
{
    size_t i = 0;
    *data = NULL;
    *dlen = 0;
    *used = 0; /* (on malformed framing: nothing) */
    while (i < len) {
        unsigned char ch = (unsigned char)in[i];
        switch (c->state) {
        case CH_SIZE: {
            int v = tf_hexval(ch);
            if (v >= 0) {
                if (++c->count > CH_MAX_DIGITS)
                    return -1;
                c->left = c->left * 16 + (uint64_t)v;
            } else if (c->count == 0) {
                return -1;
            } else if (ch == ';' || ch == ' ' || ch == '\t') {
                c->state = CH_EXT;
                c->count = 0;
            } else if (ch == '\r') {
                c->state = CH_SIZE_LF;
            } else {
                return -1;
            }
            i++;
            break;
        }
        case CH_EXT:   /* a chunk extension, ignored */
        case CH_TLINE: /* a trailer field, dropped */
            if (ch == '\r')
                c->state = c->state == CH_EXT ? CH_SIZE_LF : CH_TLINE_LF;
            else if (is_ctl(ch) || ++c->count > (c->state == CH_EXT ? CH_MAX_EXT : CH_MAX_TRAILER))
                return -1;
            i++;
            break;
        case CH_SIZE_LF:
            if (ch != '\n')
                return -1;
            i++;
            c->count = 0;
            c->state = c->left ? CH_DATA : CH_TRAILER;
            break;
        case CH_DATA: {
            size_t n = len - i;
            if (n > c->left)
                n = (size_t)c->left;
            *data = in + i;
            *dlen = n;
            c->left -= n;
            if (!c->left)
                c->state = CH_DATA_CR;
            *used = i + n;
            return 0;
        }
        case CH_DATA_CR:
            if (ch != '\r')
                return -1;
            c->state = CH_DATA_LF;
            i++;
            break;
        case CH_DATA_LF:
            if (ch != '\n')
                return -1;
            c->state = CH_SIZE;
            c->count = 0;
            i++;
            break;
        case CH_TRAILER: /* the start of a trailer line, or the final CRLF */
            if (ch == '\r') {
                c->state = CH_TRAILER_LF;
            } else if (ch < 0x20 || ch == 0x7f || ch == ':') {
                return -1;
            } else {
                c->state = CH_TLINE;
                if (++c->count > CH_MAX_TRAILER)
                    return -1;
            }
            i++;
            break;
        case CH_TRAILER_LF:
            if (ch != '\n')
                return -1;
            c->state = CH_DONE;
            *used = i + 1;
            return 1;
        case CH_TLINE_LF:
            if (ch != '\n')
                return -1;
            c->state = CH_TRAILER;
            i++;
            break;
        default:
            *used = i;
            return 1;
        }
    }
    *used = i;
    return c->state == CH_DONE ? 1 : 0;
}
