/* SPDX-License-Identifier: Apache-2.0
 *
 * JSON Patch generation by structural diff (see jsonpatch.h).
 */
#include "controller/jsonpatch.h"

#include "common/err.h"

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

static int add_op(json_object *ops, const char *op, const char *path, json_object *value)
{
    json_object *o = json_object_new_object();
    if (!o)
        return TF_ENOMEM;
    json_object_object_add(o, "op", json_object_new_string(op));
    json_object_object_add(o, "path", json_object_new_string(path));
    if (value) {
        json_object_object_add(o, "value", json_object_get(value));
    } else if (strcmp(op, "remove") != 0) {
        json_object_object_add(o, "value", NULL); /* JSON null */
    }
    return json_object_array_add(ops, o) ? TF_ENOMEM : 0;
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

int tf_jsonpatch_diff(json_object *a, json_object *b, const char *prefix, json_object *ops)
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
                if ((rc = child(path, prefix, ka)) || (rc = add_op(ops, "remove", path, NULL)))
                    return rc;
            }
        }
        json_object_object_foreach(b, kb, vb)
        {
            json_object *old = NULL;
            if ((rc = child(path, prefix, kb)))
                return rc;
            if (!json_object_object_get_ex(a, kb, &old))
                rc = add_op(ops, "add", path, vb);
            else
                rc = tf_jsonpatch_diff(old, vb, path, ops);
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
                char idx[24];
                snprintf(idx, sizeof(idx), "%zu", i);
                if ((rc = child(path, prefix, idx)))
                    return rc;
                if (i < na)
                    rc = tf_jsonpatch_diff(json_object_array_get_idx(a, i),
                                           json_object_array_get_idx(b, i), path, ops);
                else
                    rc = add_op(ops, "add", path, json_object_array_get_idx(b, i));
                if (rc)
                    return rc;
            }
            return 0;
        }
    }
    /* Scalars (and containers of different shape): one comparison, then replace. */
    if (json_object_equal(a, b))
        return 0;
    return add_op(ops, "replace", prefix, b);
}
