/* SPDX-License-Identifier: Apache-2.0
 *
 * Pod indexes for the device plugin (see podindex.h).
 */
#include "core/podindex.h"

#include "common/err.h"

#include <stdio.h>
#include <string.h>

int tf_podidx_encode(int index, int *k, int *n)
{
    if (index < 1 || index > TF_PODIDX_MAX)
        return TF_ERANGE;
    *k = (index - 1) / TF_PODIDX_MOD;
    *n = (index - 1) % TF_PODIDX_MOD + 1;
    return 0;
}

int tf_podidx_decode(int k, int n)
{
    if (k < 0 || k >= TF_PODIDX_KEYS || n < 1 || n > TF_PODIDX_MOD)
        return TF_ERANGE;
    return n + k * TF_PODIDX_MOD;
}

int tf_podidx_resource(int k, char *buf, size_t len)
{
    if (k < 0 || k >= TF_PODIDX_KEYS)
        return TF_ERANGE;
    int w = snprintf(buf, len, "%s%x", TF_PODIDX_RESOURCE_PREFIX, (unsigned)k);
    return w < 0 || (size_t)w >= len ? TF_ERANGE : 0;
}

static int hexdigit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

int tf_podidx_parse_resource(const char *name)
{
    size_t pl = sizeof(TF_PODIDX_RESOURCE_PREFIX) - 1;
    if (!name || strncmp(name, TF_PODIDX_RESOURCE_PREFIX, pl) != 0 || !name[pl] || name[pl + 1])
        return -1;
    int k = hexdigit(name[pl]);
    return k < TF_PODIDX_KEYS ? k : -1;
}

/* Decimal V in LO..HI from the whole of S (no sign, no leading zero, no spaces), or -1. */
static int small_uint(const char *s, int lo, int hi)
{
    int v = 0;
    if (!s || !*s || (s[0] == '0' && s[1]))
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > hi)
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v >= lo && v <= hi ? v : -1;
}

int tf_podidx_parse_annotation(const char *value)
{
    return small_uint(value, 1, TF_PODIDX_MAX);
}

int tf_podidx_device_id(int k, int j, char *buf, size_t len)
{
    if (k < 0 || k >= TF_PODIDX_KEYS || j < 1 || j > TF_PODIDX_DEVICES)
        return TF_ERANGE;
    int w = snprintf(buf, len, "%d-%d", k, j);
    return w < 0 || (size_t)w >= len ? TF_ERANGE : 0;
}

bool tf_podidx_is_device(int k, const char *id)
{
    char pre[8];
    int w = snprintf(pre, sizeof(pre), "%d-", k);
    if (!id || k < 0 || k >= TF_PODIDX_KEYS || strncmp(id, pre, (size_t)w) != 0)
        return false;
    return small_uint(id + w, 1, TF_PODIDX_DEVICES) > 0;
}

void tf_podidx_init(struct tf_podidx_alloc *a)
{
    memset(a, 0, sizeof(*a));
}

void tf_podidx_live(struct tf_podidx_alloc *a, const int *live, size_t n)
{
    memset(a->live, 0, sizeof(a->live));
    for (size_t i = 0; i < n; i++) {
        if (live[i] < 1 || live[i] > TF_PODIDX_MAX)
            continue;
        a->live[live[i]] = true;
        a->reserved_until[live[i]] = 0;
    }
}

static bool taken(const struct tf_podidx_alloc *a, int i, int64_t now_ms)
{
    return a->live[i] || a->reserved_until[i] > now_ms;
}

int tf_podidx_take(struct tf_podidx_alloc *a, int64_t now_ms)
{
    for (int step = 1; step <= TF_PODIDX_MAX; step++) {
        int i = (a->cursor + step - 1) % TF_PODIDX_MAX + 1;
        if (taken(a, i, now_ms))
            continue;
        a->reserved_until[i] = now_ms + TF_PODIDX_RESERVE_MS;
        a->cursor = i;
        return i;
    }
    return TF_ENOSPC;
}

int tf_podidx_used(const struct tf_podidx_alloc *a, int64_t now_ms)
{
    int n = 0;
    for (int i = 1; i <= TF_PODIDX_MAX; i++)
        n += taken(a, i, now_ms);
    return n;
}
