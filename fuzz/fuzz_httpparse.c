/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: HTTP/1.1 request heads and chunked bodies as the controller's server
 * (https.c) reads them. The head parser must never read past its input or crash; an accepted
 * head's strings all lie inside the head, NUL-terminated; a refusal is a status the server
 * can send. The chunked decoder, fed the bytes after the head split at every position given
 * by the input's first byte, must hand out the same body and stop at the same byte as when
 * fed them whole.
 */
#include "controller/httpparse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const char *p, const char *buf, size_t hl)
{
    if (!p || p < buf || p >= buf + hl ||
        strnlen(p, (size_t)(buf + hl - p)) == (size_t)(buf + hl - p))
        abort();
}

/* Decodes IN in pieces of at most STEP bytes: 1 ended, 0 needs more, -1 bad framing. */
static int dechunk(const char *in, size_t len, size_t step, char *out, size_t *outlen,
                   size_t *consumed)
{
    struct tf_http_chunked c = {0};
    size_t off = 0, n = 0;
    while (off < len) {
        size_t lim = len - off < step ? len - off : step, used = 0;
        while (used < lim) {
            size_t u;
            const char *d;
            size_t dl;
            int rc = tf_http_chunked_step(&c, in + off + used, lim - used, &u, &d, &dl);
            if (u > lim - used || (dl && (d < in + off + used || d + dl > in + off + lim)))
                abort();
            used += u;
            if (dl)
                memcpy(out + n, d, dl);
            n += dl;
            if (rc) {
                *outlen = n;
                *consumed = off + used;
                return rc;
            }
            if (!u && !dl)
                abort(); /* no progress */
        }
        off += lim;
    }
    *outlen = n;
    *consumed = len;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    size_t step = (size_t)data[0] % 16 + 1;
    data++;
    size--;
    char *buf = malloc(size + 1);
    if (!buf)
        abort();
    memcpy(buf, data, size);
    struct tf_http_head *h = malloc(sizeof(*h));
    if (!h)
        abort();
    int hl = tf_http_parse_head(buf, size, h);
    if (hl > 0) {
        if ((size_t)hl > size || hl > TF_HTTP_MAX_HEAD)
            abort();
        inside(h->method, buf, (size_t)hl);
        inside(h->path, buf, (size_t)hl);
        for (int i = 0; i < h->nheaders; i++) {
            inside(h->headers[i].name, buf, (size_t)hl);
            inside(h->headers[i].value, buf, (size_t)hl);
        }
        for (int i = 0; i < h->nargs; i++) {
            inside(h->args[i].name, buf, (size_t)hl);
            inside(h->args[i].value, buf, (size_t)hl);
        }
        if (h->chunked && h->length >= 0)
            abort();
        const char *rest = (const char *)data + hl;
        size_t rlen = size - (size_t)hl;
        char *a = malloc(rlen + 1), *b = malloc(rlen + 1);
        size_t al, bl, ac, bc;
        if (!a || !b)
            abort();
        int ra = dechunk(rest, rlen, rlen ? rlen : 1, a, &al, &ac);
        int rb = dechunk(rest, rlen, step, b, &bl, &bc);
        if (ra != rb || (ra >= 0 && (al != bl || memcmp(a, b, al) != 0)) || (ra == 1 && ac != bc))
            abort();
        free(a);
        free(b);
    } else if (hl < 0) {
        if (hl != -400 && hl != -417 && hl != -431 && hl != -501 && hl != -505)
            abort();
    } else if (size >= TF_HTTP_MAX_HEAD) {
        abort(); /* a full buffer is never "need more" */
    }
    free(h);
    free(buf);
    return 0;
}
