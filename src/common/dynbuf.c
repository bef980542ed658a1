/* SPDX-License-Identifier: Apache-2.0
 *
 * Bounded dynamic byte buffers (see dynbuf.h).
 */
#include "common/dynbuf.h"

#include "common/err.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tf_dynbuf_init(struct tf_dynbuf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void tf_dynbuf_free(struct tf_dynbuf *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void tf_dynbuf_reset(struct tf_dynbuf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static int grow(struct tf_dynbuf *b, size_t need)
{
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (b->max < SIZE_MAX && cap > b->max + 1) /* max + 1 would wrap for SIZE_MAX */
        cap = b->max + 1;
    char *p = realloc(b->data, cap);
    if (!p)
        return TF_ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int tf_dynbuf_reserve(struct tf_dynbuf *b, size_t n)
{
    if (n > b->max || b->len > b->max - n)
        return TF_ERANGE;
    return grow(b, b->len + n + 1);
}

int tf_dynbuf_add(struct tf_dynbuf *b, const void *p, size_t n)
{
    if (n > b->max || b->len > b->max - n)
        return TF_ERANGE;
    int rc = grow(b, b->len + n + 1);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int tf_dynbuf_addc(struct tf_dynbuf *b, char c)
{
    if (b->len + 2 > b->cap || b->len >= b->max) /* no room (or none allocated yet) */
        return tf_dynbuf_add(b, &c, 1);
    b->data[b->len++] = c;
    b->data[b->len] = '\0';
    return 0;
}

int tf_dynbuf_adds(struct tf_dynbuf *b, const char *s)
{
    return tf_dynbuf_add(b, s, strlen(s));
}

int tf_dynbuf_addf(struct tf_dynbuf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return TF_EINVAL;
    if ((size_t)n < sizeof(small))
        return tf_dynbuf_add(b, small, (size_t)n);
    if ((size_t)n > b->max || b->len > b->max - (size_t)n)
        return TF_ERANGE;
    int rc = grow(b, b->len + (size_t)n + 1);
    if (rc)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

/* Whether any of the 8 bytes of W is below 0x20, a '"' or a '\\' (SWAR: the classic
 * has-zero-byte test on W ^ pattern, and has-less-than for the control characters). */
static int word_needs_escape(uint64_t w)
{
    const uint64_t ones = UINT64_C(0x0101010101010101), highs = UINT64_C(0x8080808080808080);
    uint64_t q = w ^ (ones * '"'), bs = w ^ (ones * '\\');
    uint64_t hit = ((q - ones) & ~q) | ((bs - ones) & ~bs) | ((w - ones * 0x20) & ~w);
    return (hit & highs) != 0;
}

int tf_dynbuf_add_json_str(struct tf_dynbuf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    int rc = tf_dynbuf_addc(b, '"');
    size_t run = 0; /* start of the bytes not yet copied */
    for (size_t i = 0; i < n && !rc; i++) {
        uint64_t w;
        while (i + 8 <= n && (memcpy(&w, s + i, 8), !word_needs_escape(w)))
            i += 8; /* eight plain bytes at once */
        if (i >= n)
            break;
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        const char *short_esc = c == '"'    ? "\\\""
                                : c == '\\' ? "\\\\"
                                : c == '\b' ? "\\b"
                                : c == '\f' ? "\\f"
                                : c == '\n' ? "\\n"
                                : c == '\r' ? "\\r"
                                : c == '\t' ? "\\t"
                                            : NULL;
        char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        rc = tf_dynbuf_add(b, s + run, i - run);
        if (!rc)
            rc = short_esc ? tf_dynbuf_add(b, short_esc, 2) : tf_dynbuf_add(b, esc, sizeof(esc));
        run = i + 1;
    }
    if (!rc)
        rc = tf_dynbuf_add(b, s + run, n - run);
    return rc ? rc : tf_dynbuf_addc(b, '"');
}

void tf_dynbuf_consume(struct tf_dynbuf *b, size_t n)
{
    if (n >= b->len) {
        tf_dynbuf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n + 1);
    b->len -= n;
}

void tf_dynbuf_truncate(struct tf_dynbuf *b, size_t n)
{
    if (n < b->len) {
        b->len = n;
        b->data[n] = '\0';
    }
}

const char *tf_dynbuf_str(const struct tf_dynbuf *b)
{
    return b->data ? b->data : "";
}
