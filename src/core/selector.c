/* SPDX-License-Identifier: Apache-2.0
 *
 * LabelSelector matching (see selector.h).
 */
#include "core/selector.h"

#include <errno.h>
#include <stdlib.h>
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

/* A NodeSelectorRequirement's integer operand (Gt/Lt take exactly one value). */
static bool one_int(json_object *values, const char *s, long long *have, long long *want)
{
    if (!values || !json_object_is_type(values, json_type_array) ||
        json_object_array_length(values) != 1 || !s || !*s)
        return false;
    const char *w = json_object_get_string(json_object_array_get_idx(values, 0));
    char *end;
    errno = 0;
    *have = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    if (!w || !*w)
        return false;
    *want = strtoll(w, &end, 10);
    return !errno && !*end;
}

/* What a requirement list is: a LabelSelector's matchExpressions (In, NotIn, Exists,
 * DoesNotExist), a NodeSelectorTerm's matchExpressions (those and Gt, Lt) or its matchFields
 * (In, NotIn on metadata.name). */
enum req_kind { REQ_LABELS, REQ_NODE_LABELS, REQ_NODE_FIELDS };

/* One requirement list of KIND against LABELS (or NODE_NAME for fields): all must hold. */
static bool requirements(json_object *reqs, json_object *labels, const char *node_name,
                         enum req_kind kind)
{
    bool fields = kind == REQ_NODE_FIELDS;
    for (size_t i = 0; i < json_object_array_length(reqs); i++) {
        json_object *e = json_object_array_get_idx(reqs, i), *k = NULL, *op = NULL, *vals = NULL;
        json_object_object_get_ex(e, "key", &k);
        json_object_object_get_ex(e, "operator", &op);
        json_object_object_get_ex(e, "values", &vals);
        const char *key = k ? json_object_get_string(k) : NULL;
        const char *o = op ? json_object_get_string(op) : NULL;
        if (!key || !o)
            return false;
        const char *have =
            fields ? (strcmp(key, "metadata.name") == 0 ? node_name : NULL) : label(labels, key);
        long long hv, wv;
        if (fields && strcmp(key, "metadata.name") != 0)
            return false; /* the only field a node selector may name */
        if (strcmp(o, "In") == 0) {
            if (!have || !in_values(vals, have))
                return false;
        } else if (strcmp(o, "NotIn") == 0) {
            if (have && in_values(vals, have))
                return false;
        } else if (!fields && strcmp(o, "Exists") == 0) {
            if (!have)
                return false;
        } else if (!fields && strcmp(o, "DoesNotExist") == 0) {
            if (have)
                return false;
        } else if (kind == REQ_NODE_LABELS && (strcmp(o, "Gt") == 0 || strcmp(o, "Lt") == 0)) {
            if (!one_int(vals, have, &hv, &wv) || (o[0] == 'G' ? hv <= wv : hv >= wv))
                return false;
        } else {
            return false;
        }
    }
    return true;
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
        json_object_is_type(me, json_type_array) && !requirements(me, labels, NULL, REQ_LABELS))
        return false;
    return true;
}

bool tf_node_selector_match(json_object *sel, const char *node_name, json_object *labels)
{
    json_object *terms = NULL;
    if (!sel || !json_object_is_type(sel, json_type_object) ||
        !json_object_object_get_ex(sel, "nodeSelectorTerms", &terms) ||
        !json_object_is_type(terms, json_type_array))
        return false;
    for (size_t t = 0; t < json_object_array_length(terms); t++) {
        json_object *term = json_object_array_get_idx(terms, t), *me = NULL, *mf = NULL;
        if (!json_object_is_type(term, json_type_object))
            continue;
        json_object_object_get_ex(term, "matchExpressions", &me);
        json_object_object_get_ex(term, "matchFields", &mf);
        bool has_me =
            me && json_object_is_type(me, json_type_array) && json_object_array_length(me) > 0;
        bool has_mf =
            mf && json_object_is_type(mf, json_type_array) && json_object_array_length(mf) > 0;
        if (!has_me && !has_mf)
            continue; /* an empty term matches no node */
        if ((!has_me || requirements(me, labels, node_name, REQ_NODE_LABELS)) &&
            (!has_mf || requirements(mf, labels, node_name, REQ_NODE_FIELDS)))
            return true;
    }
    return false;
}
