/* SPDX-License-Identifier: Apache-2.0
 *
 * Base64 codec (see base64.h).
 */
#include "controller/base64.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *tf_base64_encode(const void *src, size_t len)
{
    const unsigned char *p = src;
    if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
        return NULL;
    char *out = malloc((len + 2) / 3 * 4 + 1);
    if (!out)
        return NULL;
    size_t o = 0, i = 0;
    for (; i + 3 <= len; i += 3) { /* whole triples: no per-byte branches */
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        out[o] = alphabet[v >> 18];
        out[o + 1] = alphabet[(v >> 12) & 63];
        out[o + 2] = alphabet[(v >> 6) & 63];
        out[o + 3] = alphabet[v & 63];
        o += 4;
    }
    if (i < len) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < len)
            v |= (uint32_t)p[i + 1] << 8;
        out[o++] = alphabet[v >> 18];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = '\0';
    return out;
}

static int val(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

char *tf_base64_decode(const char *s, size_t *outlen)
{
    size_t n = strlen(s);
    char *out = malloc(n / 4 * 3 + 4);
    if (!out)
        return NULL;
    uint32_t acc = 0;
    int bits = 0, pad = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        int v = val(c);
        if (v < 0 || pad) {
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    /* Leftover bits must be zero padding and fewer than one byte: 0, 2 or 4 bits. */
    if (bits >= 6 || (acc & ((1u << bits) - 1)) != 0 || pad > 2) {
        free(out);
        return NULL;
    }
    out[o] = '\0';
    if (outlen)
        *outlen = o;
    return out;
}
