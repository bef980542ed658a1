/* SPDX-License-Identifier: Apache-2.0
 *
 * JSON Patch generation by structural diff, written as text (see jsonpatch.h).
 */
#include "controller/jsonpatch.h"

#include "common/err.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define PTR_MAX 4096

int tf_jsonpatch_escape(const char *token, char *buf, size_t len)
{
    size_t o = 0;
    for (const char *p = token; *p; p++) {
        const char *rep = *p == '~' ? "~0" : *p == '/' ? "~1" : NULL;
        size_t n = rep ? 2 : 1;
        if (o + n >= len)
            return -1;
        if (rep) {
            buf[o++] = rep[0];
            buf[o++] = rep[1];
        } else {
            buf[o++] = *p;
        }
    }
    if (o >= len)
        return -1;
    buf[o] = '\0';
    return (int)o;
}

struct diff {
    struct tf_dynbuf *out;
    size_t nops;
};

/* Appends VALUE as JSON text, as json-c writes it with JSON_C_TO_STRING_PLAIN |
 * JSON_C_TO_STRING_NOSLASHESCAPE, without json-c's per-value print buffer. */
static int add_value(struct tf_dynbuf *o, json_object *v)
{
    int rc = 0;
    switch (json_object_get_type(v)) {
    case json_type_null:
        return tf_dynbuf_add(o, "null", 4);
    case json_type_boolean:
        return tf_dynbuf_adds(o, json_object_get_boolean(v) ? "true" : "false");
    case json_type_int: {
        int64_t i = json_object_get_int64(v);
        /* A uint64 beyond INT64_MAX reads as INT64_MAX through get_int64. */
        return i < 0 ? tf_dynbuf_addf(o, "%" PRId64, i)
                     : tf_dynbuf_addf(o, "%" PRIu64, json_object_get_uint64(v));
    }
    case json_type_string:
        return tf_dynbuf_add_json_str(o, json_object_get_string(v),
                                      (size_t)json_object_get_string_len(v));
    case json_type_object: {
        bool first = true;
        rc = tf_dynbuf_addc(o, '{');
        json_object_object_foreach(v, k, m)
        {
            if (!rc && !first)
                rc = tf_dynbuf_addc(o, ',');
            first = false;
            if (!rc)
                rc = tf_dynbuf_add_json_str(o, k, strlen(k));
            if (!rc)
                rc = tf_dynbuf_addc(o, ':');
            if (!rc)
                rc = add_value(o, m);
        }
        return rc ? rc : tf_dynbuf_addc(o, '}');
    }
    case json_type_array: {
        size_t n = json_object_array_length(v);
        rc = tf_dynbuf_addc(o, '[');
        for (size_t i = 0; i < n && !rc; i++) {
            if (i)
                rc = tf_dynbuf_addc(o, ',');
            if (!rc)
                rc = add_value(o, json_object_array_get_idx(v, i));
        }
        return rc ? rc : tf_dynbuf_addc(o, ']');
    }
    case json_type_double:
    default: { /* json-c keeps a parsed number's own text: let it write doubles */
        size_t n = 0;
        const char *text = json_object_to_json_string_length(
            v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
        return text ? tf_dynbuf_add(o, text, n) : TF_ENOMEM;
    }
    }
}

/* Appends one operation; VALUE NULL is JSON null (omitted for "remove"). */
static int add_op(struct diff *d, const char *op, const char *path, json_object *value)
{
    struct tf_dynbuf *o = d->out;
    int rc = tf_dynbuf_adds(o, d->nops++ ? ",{\"op\":\"" : "{\"op\":\"");
    if (!rc)
        rc = tf_dynbuf_adds(o, op);
    if (!rc)
        rc = tf_dynbuf_adds(o, "\",\"path\":");
    if (!rc)
        rc = tf_dynbuf_add_json_str(o, path, strlen(path));
    if (rc || strcmp(op, "remove") == 0)
        return rc ? rc : tf_dynbuf_addc(o, '}');
    rc = tf_dynbuf_adds(o, ",\"value\":");
    if (!rc)
        rc = add_value(o, value);
    return rc ? rc : tf_dynbuf_addc(o, '}');
}

static int child(char *buf, const char *prefix, const char *token)
{
    size_t pl = strlen(prefix);
    if (pl + 2 >= PTR_MAX)
        return TF_ERANGE;
    memcpy(buf, prefix, pl);
    buf[pl] = '/';
    return tf_jsonpatch_escape(token, buf + pl + 1, PTR_MAX - pl - 1) < 0 ? TF_ERANGE : 0;
}

static int diff(struct diff *d, json_object *a, json_object *b, const char *prefix)
{
    char path[PTR_MAX];
    int rc = 0;
    if (a == b)
        return 0;
    if (a && b && json_object_is_type(a, json_type_object) &&
        json_object_is_type(b, json_type_object)) {
        json_object_object_foreach(a, ka, va)
        {
            (void)va;
            if (!json_object_object_get_ex(b, ka, NULL)) {
                if ((rc = child(path, prefix, ka)) || (rc = add_op(d, "remove", path, NULL)))
                    return rc;
            }
        }
        json_object_object_foreach(b, kb, vb)
        {
            json_object *old = NULL;
            if ((rc = child(path, prefix, kb)))
                return rc;
            if (!json_object_object_get_ex(a, kb, &old))
                rc = add_op(d, "add", path, vb);
            else
                rc = diff(d, old, vb, path);
            if (rc)
                return rc;
        }
        return 0;
    }
    if (a && b && json_object_is_type(a, json_type_array) &&
        json_object_is_type(b, json_type_array)) {
        size_t na = json_object_array_length(a), nb = json_object_array_length(b);
        bool prefix_same = nb > na; /* only growth at the end needs the prefix check */
        for (size_t i = 0; prefix_same && i < na; i++)
            prefix_same =
                json_object_equal(json_object_array_get_idx(a, i), json_object_array_get_idx(b, i));
        if (na == nb || prefix_same) {
            for (size_t i = 0; i < nb; i++) {
                char idx[24], *p = idx + sizeof(idx) - 1;
                *p = '\0';
                size_t v = i;
                do
                    *--p = (char)('0' + v % 10);
                while (v /= 10);
                if ((rc = child(path, prefix, p)))
                    return rc;
                if (i < na)
                    rc = diff(d, json_object_array_get_idx(a, i), json_object_array_get_idx(b, i),
                              path);
                else
                    rc = add_op(d, "add", path, json_object_array_get_idx(b, i));
                if (rc)
                    return rc;
            }
            return 0;
        }
    }
    /* Scalars (and containers of different shape): one comparison, then replace. */
    if (json_object_equal(a, b))
        return 0;
    return add_op(d, "replace", prefix, b);
}

int tf_jsonpatch_diff(json_object *a, json_object *b, struct tf_dynbuf *out, size_t *nops)
{
    struct diff d = {out, 0};
    int rc = tf_dynbuf_addc(out, '[');
    if (!rc)
        rc = diff(&d, a, b, "");
    if (!rc)
        rc = tf_dynbuf_addc(out, ']');
    if (nops)
        *nops = d.nops;
    return rc;
}
