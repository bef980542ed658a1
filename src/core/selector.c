/* SPDX-License-Identifier: Apache-2.0
 *
 * LabelSelector matching (see selector.h).
 */
#include "core/selector.h"

#include <string.h>

static const char *label(json_object *labels, const char *key)
{
    json_object *v = NULL;
    if (!labels || !json_object_object_get_ex(labels, key, &v) ||
        !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

static bool in_values(json_object *values, const char *v)
{
    if (!values || !json_object_is_type(values, json_type_array))
        return false;
    for (size_t i = 0; i < json_object_array_length(values); i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(values, i));
        if (s && strcmp(s, v) == 0)
            return true;
    }
    return false;
}

bool tf_selector_match(json_object *sel, json_object *labels)
{
    if (!sel || !json_object_is_type(sel, json_type_object))
        return false;
    json_object *ml = NULL, *me = NULL;
    if (json_object_object_get_ex(sel, "matchLabels", &ml) && ml) {
        if (!json_object_is_type(ml, json_type_object))
            return false; /* malformed: never matches (iterating it would crash) */
        json_object_object_foreach(ml, k, v)
        {
            const char *have = label(labels, k);
            if (!have || !json_object_is_type(v, json_type_string) ||
                strcmp(have, json_object_get_string(v)) != 0)
                return false;
        }
    }
    if (json_object_object_get_ex(sel, "matchExpressions", &me) && me &&
        json_object_is_type(me, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(me); i++) {
            json_object *e = json_object_array_get_idx(me, i), *k = NULL, *op = NULL, *vals = NULL;
            json_object_object_get_ex(e, "key", &k);
            json_object_object_get_ex(e, "operator", &op);
            json_object_object_get_ex(e, "values", &vals);
            const char *key = k ? json_object_get_string(k) : NULL;
            const char *o = op ? json_object_get_string(op) : NULL;
            if (!key || !o)
                return false;
            const char *have = label(labels, key);
            if (strcmp(o, "In") == 0) {
                if (!have || !in_values(vals, have))
                    return false;
            } else if (strcmp(o, "NotIn") == 0) {
                if (have && in_values(vals, have))
                    return false;
            } else if (strcmp(o, "Exists") == 0) {
                if (!have)
                    return false;
            } else if (strcmp(o, "DoesNotExist") == 0) {
                if (have)
                    return false;
            } else {
                return false;
            }
        }
    }
    return true;
}
