/* SPDX-License-Identifier: Apache-2.0
 *
 * Bounded dynamic byte buffer; see buf.h.
 */
#include "remote/buf.h"

#include "common/err.h"

#include <stdlib.h>
#include <string.h>

void tf_buf_init(struct tf_buf *b, size_t max)
{
    b->data = NULL;
    b->len = b->cap = 0;
    b->max = max;
}

void tf_buf_free(struct tf_buf *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int tf_buf_reserve(struct tf_buf *b, size_t extra)
{
    if (extra > b->max || b->len > b->max - extra)
        return TF_ENOSPC;
    size_t need = b->len + extra;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > b->max / 2 ? b->max : cap * 2;
    uint8_t *p = realloc(b->data, cap);
    if (!p)
        return TF_ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

uint8_t *tf_buf_grow(struct tf_buf *b, size_t n)
{
    if (tf_buf_reserve(b, n) != 0)
        return NULL;
    uint8_t *p = b->data + b->len;
    b->len += n;
    return p;
}

int tf_buf_append(struct tf_buf *b, const void *p, size_t n)
{
    int rc = tf_buf_reserve(b, n);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

void tf_buf_reset(struct tf_buf *b)
{
    b->len = 0;
}

void tf_buf_consume(struct tf_buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}
