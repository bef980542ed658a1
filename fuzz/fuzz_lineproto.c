/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: line protocol round trip. Mode 0 (first byte even): the rest is a line;
 * when the parser accepts it, encoding the point must succeed, parse back to an equal point
 * and re-encode to the same bytes. Mode 1: the rest is split at NUL bytes into measurement,
 * tag and field strings to build a point; when the encoder accepts it, the parser must read
 * back an equal point.
 */
#include "common/dynbuf.h"
#include "metrics/lineproto.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const struct tf_lp_point *p)
{
    struct tf_dynbuf a, b;
    tf_dynbuf_init(&a, 1 << 20);
    tf_dynbuf_init(&b, 1 << 20);
    char err[256];
    if (tf_lp_encode(p, &a, err, sizeof(err)) == 0) {
        char *scratch = malloc(a.len + 1);
        struct tf_lp_point q;
        if (!scratch)
            abort();
        if (tf_lp_parse(a.data, a.len, -1, &q, scratch, a.len + 1, err, sizeof(err)) != 0)
            abort();
        if (!tf_lp_point_equal(p, &q))
            abort();
        if (tf_lp_encode(&q, &b, err, sizeof(err)) != 0 || b.len != a.len ||
            memcmp(a.data, b.data, a.len) != 0)
            abort();
        free(scratch);
    }
    tf_dynbuf_free(&a);
    tf_dynbuf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 8192)
        return 0;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    if ((data[0] & 1) == 0) {
        char *scratch = malloc(n + 1);
        struct tf_lp_point p;
        char err[256];
        if (!scratch)
            abort();
        if (tf_lp_parse(s, n, 42, &p, scratch, n + 1, err, sizeof(err)) == 0) {
            struct tf_dynbuf a;
            tf_dynbuf_init(&a, 1 << 20);
            if (tf_lp_encode(&p, &a, err, sizeof(err)) != 0)
                abort(); /* everything the parser accepts must encode */
            tf_dynbuf_free(&a);
            check_round_trip(&p);
        }
        free(scratch);
        return 0;
    }
    /* Build a point from NUL-separated strings: measurement, then (kind byte + key, value). */
    char *copy = malloc(n + 1);
    if (!copy)
        abort();
    memcpy(copy, s, n);
    copy[n] = '\0';
    const char *parts[64];
    size_t np = 0;
    for (size_t i = 0, start = 0; i <= n && np < 64; i++) {
        if (copy[i] == '\0') {
            parts[np++] = copy + start;
            start = i + 1;
        }
    }
    struct tf_lp_point p;
    tf_lp_point_init(&p, parts[0], (int64_t)(data[0] >> 1) * 1000003 - 50000000);
    for (size_t i = 1; i + 1 < np; i += 2) {
        const char *key = parts[i];
        const char *val = parts[i + 1];
        char kind = key[0] ? key[0] : 't';
        if (key[0])
            key++;
        switch (kind % 5) {
        case 0:
            tf_lp_tag(&p, key, val);
            break;
        case 1:
            tf_lp_float(&p, key, strtod(val, NULL));
            break;
        case 2:
            tf_lp_int(&p, key, strtoll(val, NULL, 10));
            break;
        case 3:
            tf_lp_bool(&p, key, val[0] & 1);
            break;
        default:
            tf_lp_string(&p, key, val);
            break;
        }
    }
    check_round_trip(&p);
    free(copy);
    return 0;
}
