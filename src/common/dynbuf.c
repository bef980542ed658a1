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
#ifdef __SSE2__
#include <emmintrin.h>
#endif

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
static uint64_t word_needs_escape(uint64_t w)
{
    const uint64_t ones = UINT64_C(0x0101010101010101), highs = UINT64_C(0x8080808080808080);
    uint64_t q = w ^ (ones * '"'), bs = w ^ (ones * '\\');
    uint64_t hit = ((q - ones) & ~q) | ((bs - ones) & ~bs) | ((w - ones * 0x20) & ~w);
    return hit & highs; /* the lowest set bit marks the first such byte (borrows run upwards) */
}

size_t tf_json_plain_len(const char *s, size_t n)
{
    size_t i = 0;
#ifdef __SSE2__
    /* Sixteen bytes a step: '"', '\\', and bytes whose unsigned minimum with 0x1f is themselves. */
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                  ctl = _mm_set1_epi8(0x1f);
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i hit =
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                         _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v));
        unsigned mask = (unsigned)_mm_movemask_epi8(hit);
        if (mask)
            return i + (size_t)__builtin_ctz(mask);
    }
#endif
    for (uint64_t w, hit; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        if ((hit = word_needs_escape(w)) != 0) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            return i + (size_t)__builtin_ctzll(hit) / 8;
#else
            break;
#endif
        }
    }
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == '"' || c == '\\')
            break;
    }
    return i;
}

/* The short escape of C (\" \\ \b \f \n \r \t), or 0 when C is written as \u00XX. */
static char short_escape(unsigned char c)
{
    switch (c) {
    case '"':
        return '"';
    case '\\':
        return '\\';
    case '\b':
        return 'b';
    case '\f':
        return 'f';
    case '\n':
        return 'n';
    case '\r':
        return 'r';
    case '\t':
        return 't';
    default:
        return 0;
    }
}

size_t tf_json_escaped_len(const char *s, size_t n)
{
    size_t i = tf_json_plain_len(s, n), len = i;
    for (; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        len += c >= 0x20 && c != '"' && c != '\\' ? 1 : short_escape(c) ? 2 : 6;
    }
    return len;
}

char *tf_json_escape(char *dst, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        size_t run = tf_json_plain_len(s + i, n - i);
        memcpy(dst, s + i, run);
        dst += run;
        if ((i += run) >= n)
            break;
        unsigned char c = (unsigned char)s[i];
        char e = short_escape(c);
        *dst++ = '\\';
        if (e) {
            *dst++ = e;
        } else {
            memcpy(dst, "u00", 3);
            dst[3] = hex[c >> 4];
            dst[4] = hex[c & 15];
            dst += 5;
        }
    }
    return dst;
}

int tf_dynbuf_add_json_str(struct tf_dynbuf *b, const char *s, size_t n)
{
    size_t len = tf_json_escaped_len(s, n);
    int rc = len > SIZE_MAX - 2 ? TF_ERANGE : tf_dynbuf_reserve(b, len + 2);
    if (rc)
        return rc;
    char *p = b->data + b->len;
    *p++ = '"';
    p = tf_json_escape(p, s, n);
    *p++ = '"';
    *p = '\0';
    b->len = (size_t)(p - b->data);
    return 0;
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

void *tf_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap && arr)
        return arr;
    size_t nc = *cap ? *cap : (first ? first : 1);
    while (nc < need) {
        if (nc > SIZE_MAX / 2)
            return NULL;
        nc *= 2;
    }
    if (!elem || nc > SIZE_MAX / elem)
        return NULL;
    void *p = realloc(arr, nc * elem);
    if (p)
        *cap = nc;
    return p;
}
