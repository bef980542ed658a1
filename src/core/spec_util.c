/* SPDX-License-Identifier: Apache-2.0
 *
 * Helpers shared by the workload-model parsers (see spec_util.h).
 */
#include "core/spec_util.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/spec.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tf__strv_push(char ***list, size_t *n, const char *s, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return TF_ENOMEM;
    memcpy(copy, s, len);
    copy[len] = 0;
    char **grown = realloc(*list, (*n + 1) * sizeof(**list));
    if (!grown) {
        free(copy);
        return TF_ENOMEM;
    }
    grown[(*n)++] = copy;
    *list = grown;
    return 0;
}

void tf__strv_free(char ***list, size_t *n)
{
    for (size_t i = 0; i < *n; i++)
        free((*list)[i]);
    free(*list);
    *list = NULL;
    *n = 0;
}

bool tf__strv_has(char *const *list, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == len && memcmp(list[i], s, len) == 0)
            return true;
    return false;
}

int tf__vwarn(char ***list, size_t *n, const char *fmt, va_list ap)
{
    char *msg = NULL;
    int len = vasprintf(&msg, fmt, ap);
    if (len < 0)
        return TF_ENOMEM;
    int rc = tf__strv_push(list, n, msg, (size_t)len);
    free(msg);
    return rc;
}

int tf__warn(char ***list, size_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = tf__vwarn(list, n, fmt, ap);
    va_end(ap);
    return rc;
}

int tf__parse_uint(const char *s, size_t len, long long min, long long max, long long *out)
{
    const char *p = s, *end = s + len;
    while (p < end && isspace((unsigned char)*p))
        p++;
    while (end > p && isspace((unsigned char)end[-1]))
        end--;
    if (p == end)
        return TF_EINVAL;
    long long v = 0;
    bool big = false;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9')
            return TF_EINVAL;
        if (!big) {
            v = v * 10 + (*p - '0');
            if (v > max)
                big = true;
        }
    }
    if (big || v < min)
        return TF_ERANGE;
    *out = v;
    return 0;
}

bool tf__is_object_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        if (!alnum && ch != '-' && ch != '.')
            return false;
        if (!alnum && (i == 0 || i == n - 1))
            return false;
    }
    return true;
}

struct indices_ctx {
    int *idx;
    int n;
    const char *s, *key;
    char *err;
    size_t errlen;
};

static int one_index(const char *item, size_t len, void *arg)
{
    struct indices_ctx *c = arg;
    long long v;
    int rc = tf__parse_uint(item, len, 0, TF_SPEC_MAX_GPUS - 1, &v);
    if (rc) {
        tf_errf(c->err, c->errlen, "%s: \"%s\": \"%.*s\" is not a GPU index (0..%d)", c->key, c->s,
                (int)(len > 32 ? 32 : len), item, TF_SPEC_MAX_GPUS - 1);
        return rc;
    }
    for (int i = 0; i < c->n; i++) {
        if (c->idx[i] == (int)v) {
            tf_errf(c->err, c->errlen, "%s: \"%s\": index %lld is listed twice", c->key, c->s, v);
            return TF_EINVAL;
        }
    }
    /* Distinct values in 0..127 cannot exceed the capacity. */
    c->idx[c->n++] = (int)v;
    return 0;
}

int tf__parse_indices(const char *s, int *idx, int *n, const char *key, char *err, size_t errlen)
{
    struct indices_ctx c = {idx, 0, s, key, err, errlen};
    int rc = tf_split_list(s, one_index, &c);
    if (rc)
        return rc;
    if (c.n == 0) {
        tf_errf(err, errlen, "%s: \"%s\": no GPU index given", key, s);
        return TF_EINVAL;
    }
    *n = c.n;
    return 0;
}

json_object *tf__get(json_object *o, const char *k)
{
    json_object *v = NULL;
    if (o && json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v))
        return v;
    return NULL;
}

const char *tf__get_str(json_object *o, const char *k)
{
    json_object *v = tf__get(o, k);
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}
