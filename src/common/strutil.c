/* SPDX-License-Identifier: Apache-2.0
 *
 * String helpers for parsers (see strutil.h).
 */
#include "common/strutil.h"

#include "common/err.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

void tf_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int tf_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"true", "1", "yes"};
    static const char *const no[] = {"false", "0", "no"};
    if (!s)
        return TF_EINVAL;
    for (int i = 0; i < 3; i++) {
        if (strcasecmp(s, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(s, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return TF_EINVAL;
}

bool tf_streq_ci(const char *a, const char *b)
{
    return a && b && strcasecmp(a, b) == 0;
}

bool tf_strlcpy(char *dst, const char *s, size_t n)
{
    if (n == 0)
        return false;
    size_t l = strlen(s);
    if (l >= n) {
        memcpy(dst, s, n - 1);
        dst[n - 1] = 0;
        return false;
    }
    memcpy(dst, s, l + 1);
    return true;
}

int tf_split_list(const char *s, int (*fn)(const char *item, size_t len, void *arg), void *arg)
{
    const char *p = s;
    while (p && *p) {
        const char *end = strchr(p, ',');
        const char *stop = end ? end : p + strlen(p);
        const char *a = p, *b = stop;
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        if (b > a) {
            int rc = fn(a, (size_t)(b - a), arg);
            if (rc)
                return rc;
        }
        p = end ? end + 1 : NULL;
    }
    return 0;
}

void tf_name_fit(const char *prefix, const char *name, size_t max, char *out, size_t outlen)
{
    size_t plen = strlen(prefix), n = strlen(name);
    if (plen + n <= max) {
        snprintf(out, outlen, "%s%s", prefix, name);
        return;
    }
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)name[i]) * 16777619u;
    size_t keep = max > plen + 9 ? max - plen - 9 : 0;
    while (keep > 0 && (name[keep - 1] == '-' || name[keep - 1] == '.'))
        keep--;
    snprintf(out, outlen, "%s%.*s-%08x", prefix, (int)keep, name, h);
}

int tf_hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}
