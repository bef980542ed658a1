/* SPDX-License-Identifier: Apache-2.0
 *
 * YAML -> json-c conversion over libyaml's event parser (see yamljson.h).
 */
#include "common/yamljson.h"

#include "common/err.h"
#include "common/strutil.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_INPUT (64u << 20) /* bytes */
#define MAX_DEPTH 128         /* nested collections */
#define MAX_NODES (1u << 20)  /* nodes created, aliases counted by their expanded size */
#define MAX_ANCHORS 4096

struct anchor {
    char *name;
    json_object *obj;
    size_t nodes;
    int pending_depth; /* > 0: names the collection open at this depth, not yet complete */
};

struct frame {
    json_object *obj; /* array or object */
    char *key;        /* pending mapping key (object frames), owned */
    size_t first_node;
};

struct ctx {
    struct frame stack[MAX_DEPTH];
    int depth;
    struct anchor anchors[MAX_ANCHORS];
    int nanchors;
    size_t nodes;
    json_object *docs;
    json_object *doc;
    char *err;
    size_t errlen;
};

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* YAML 1.2 core schema typing of a plain scalar. */
static json_object *plain_scalar(const char *v, size_t len)
{
    if (len == 0 || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
        !strcmp(v, "NULL"))
        return NULL;
    if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE"))
        return json_object_new_boolean(1);
    if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE"))
        return json_object_new_boolean(0);
    const char *d = (*v == '-' || *v == '+') ? v + 1 : v;
    if (all_digits(d)) {
        errno = 0;
        char *end;
        long long n = strtoll(v, &end, 10);
        if (errno == 0 && *end == 0)
            return json_object_new_int64(n);
        return json_object_new_string_len(v, (int)len);
    }
    /* Float: digits with a dot and/or an exponent (no hex, no .inf/.nan). */
    const char *p = d;
    int digits = 0, dot = 0;
    while ((*p >= '0' && *p <= '9') || (*p == '.' && !dot)) {
        if (*p == '.')
            dot = 1;
        else
            digits++;
        p++;
    }
    if (digits > 0 && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1;
        if (*q == '+' || *q == '-')
            q++;
        if (all_digits(q))
            p = q + strlen(q);
    }
    if (digits > 0 && *p == 0 && (dot || strpbrk(d, "eE"))) {
        double x = strtod(v, NULL);
        if (isfinite(x))
            return json_object_new_double_s(x, v);
    }
    return json_object_new_string_len(v, (int)len);
}

static int fail_at(struct ctx *c, const yaml_mark_t *m, int rc, const char *why)
{
    tf_errf(c->err, c->errlen, "line %zu column %zu: %s", m->line + 1, m->column + 1, why);
    return rc;
}

/* Attaches VAL (owned) to the current container, or makes it the document root. */
static int attach(struct ctx *c, json_object *val, const yaml_mark_t *m)
{
    if (c->depth == 0) {
        json_object_put(c->doc);
        c->doc = val;
        return 0;
    }
    struct frame *f = &c->stack[c->depth - 1];
    if (json_object_is_type(f->obj, json_type_array)) {
        json_object_array_add(f->obj, val);
        return 0;
    }
    if (!f->key) {
        /* A mapping key: only scalars are supported as keys. */
        if (val && !json_object_is_type(val, json_type_string) &&
            !json_object_is_type(val, json_type_int) &&
            !json_object_is_type(val, json_type_double) &&
            !json_object_is_type(val, json_type_boolean)) {
            json_object_put(val);
            return fail_at(c, m, TF_EPARSE, "complex mapping keys are not supported");
        }
        f->key = strdup(val ? json_object_get_string(val) : "null");
        json_object_put(val);
        return f->key ? 0 : TF_ENOMEM;
    }
    json_object_object_add(f->obj, f->key, val);
    free(f->key);
    f->key = NULL;
    return 0;
}

static int remember_anchor(struct ctx *c, const yaml_char_t *anchor, json_object *obj, size_t nodes,
                           const yaml_mark_t *m)
{
    if (!anchor)
        return 0;
    if (c->nanchors == MAX_ANCHORS)
        return fail_at(c, m, TF_ERANGE, "too many anchors");
    struct anchor *a = &c->anchors[c->nanchors];
    a->name = strdup((const char *)anchor);
    if (!a->name)
        return TF_ENOMEM;
    a->obj = json_object_get(obj);
    a->nodes = nodes;
    a->pending_depth = 0;
    c->nanchors++;
    return 0;
}

static int count_node(struct ctx *c, size_t n, const yaml_mark_t *m)
{
    c->nodes += n;
    if (c->nodes > MAX_NODES)
        return fail_at(c, m, TF_ERANGE, "document too large (alias expansion?)");
    return 0;
}

static int on_event(struct ctx *c, yaml_event_t *ev)
{
    const yaml_mark_t *m = &ev->start_mark;
    int rc;
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        c->doc = NULL;
        return 0;
    case YAML_DOCUMENT_END_EVENT:
        if (c->doc)
            json_object_array_add(c->docs, c->doc);
        c->doc = NULL;
        for (int i = 0; i < c->nanchors; i++) {
            free(c->anchors[i].name);
            json_object_put(c->anchors[i].obj);
        }
        c->nanchors = 0;
        return 0;
    case YAML_SCALAR_EVENT: {
        if ((rc = count_node(c, 1, m)))
            return rc;
        const char *v = (const char *)ev->data.scalar.value;
        size_t len = ev->data.scalar.length;
        json_object *val;
        if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !ev->data.scalar.tag)
            val = plain_scalar(v, len);
        else
            val = json_object_new_string_len(v, (int)len);
        if ((rc = remember_anchor(c, ev->data.scalar.anchor, val, 1, m))) {
            json_object_put(val);
            return rc;
        }
        return attach(c, val, m);
    }
    case YAML_ALIAS_EVENT: {
        const char *name = (const char *)ev->data.alias.anchor;
        for (int i = c->nanchors - 1; i >= 0; i--) {
            if (strcmp(c->anchors[i].name, name) == 0) {
                if (c->anchors[i].pending_depth)
                    return fail_at(c, m, TF_EPARSE, "recursive alias");
                if ((rc = count_node(c, c->anchors[i].nodes, m)))
                    return rc;
                json_object *copy = NULL;
                if (c->anchors[i].obj && json_object_deep_copy(c->anchors[i].obj, &copy, NULL) != 0)
                    return TF_ENOMEM;
                return attach(c, copy, m);
            }
        }
        return fail_at(c, m, TF_EPARSE, "unknown alias");
    }
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        if (c->depth == MAX_DEPTH)
            return fail_at(c, m, TF_ERANGE, "nesting too deep");
        if ((rc = count_node(c, 1, m)))
            return rc;
        bool seq = ev->type == YAML_SEQUENCE_START_EVENT;
        json_object *obj = seq ? json_object_new_array() : json_object_new_object();
        if (!obj)
            return TF_ENOMEM;
        struct frame *f = &c->stack[c->depth++];
        f->obj = obj;
        f->key = NULL;
        f->first_node = c->nodes;
        /* Keep the anchor name on the frame's object until the collection ends. */
        const yaml_char_t *anchor =
            seq ? ev->data.sequence_start.anchor : ev->data.mapping_start.anchor;
        if (anchor) {
            if (c->nanchors == MAX_ANCHORS)
                return fail_at(c, m, TF_ERANGE, "too many anchors");
            c->anchors[c->nanchors].name = strdup((const char *)anchor);
            if (!c->anchors[c->nanchors].name)
                return TF_ENOMEM;
            c->anchors[c->nanchors].obj = NULL; /* filled at the end event */
            c->anchors[c->nanchors].nodes = 0;
            c->anchors[c->nanchors].pending_depth = c->depth;
            c->nanchors++;
        }
        return 0;
    }
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: {
        struct frame *f = &c->stack[--c->depth];
        json_object *obj = f->obj;
        free(f->key);
        f->key = NULL;
        size_t nodes = c->nodes - f->first_node + 1;
        /* Complete a pending anchor that names this collection. */
        for (int i = c->nanchors - 1; i >= 0; i--) {
            if (c->anchors[i].pending_depth == c->depth + 1) {
                c->anchors[i].obj = json_object_get(obj);
                c->anchors[i].nodes = nodes;
                c->anchors[i].pending_depth = 0;
                break;
            }
        }
        return attach(c, obj, m);
    }
    default:
        return 0;
    }
}

int tf_yaml_to_json(const char *buf, size_t len, json_object **out, char *err, size_t errlen)
{
    *out = NULL;
    if (len > MAX_INPUT) {
        tf_errf(err, errlen, "input larger than %u MiB", MAX_INPUT >> 20);
        return TF_ERANGE;
    }
    struct ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return TF_ENOMEM;
    c->err = err;
    c->errlen = errlen;
    c->docs = json_object_new_array();
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        json_object_put(c->docs);
        free(c);
        return TF_ENOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    int rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            tf_errf(err, errlen, "line %zu column %zu: %s", parser.problem_mark.line + 1,
                    parser.problem_mark.column + 1,
                    parser.problem ? parser.problem : "invalid YAML");
            rc = parser.error == YAML_MEMORY_ERROR ? TF_ENOMEM : TF_EPARSE;
            break;
        }
        bool end = ev.type == YAML_STREAM_END_EVENT;
        rc = on_event(c, &ev);
        yaml_event_delete(&ev);
        if (rc || end)
            break;
    }
    yaml_parser_delete(&parser);
    /* Unwind whatever an error left open. */
    while (c->depth > 0) {
        struct frame *f = &c->stack[--c->depth];
        free(f->key);
        json_object_put(f->obj);
    }
    json_object_put(c->doc);
    for (int i = 0; i < c->nanchors; i++) {
        free(c->anchors[i].name);
        json_object_put(c->anchors[i].obj);
    }
    if (rc == 0)
        *out = c->docs;
    else
        json_object_put(c->docs);
    free(c);
    return rc;
}

static int flatten(json_object *docs, json_object *item, int depth)
{
    const char *kind = tf_json_str(item, "kind", NULL);
    json_object *items = tf_json_path(item, "items", NULL);
    if (depth < 4 && kind && strcmp(kind, "List") == 0 && items &&
        json_object_is_type(items, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(items); i++)
            flatten(docs, json_object_array_get_idx(items, i), depth + 1);
        return 0;
    }
    json_object_array_add(docs, json_object_get(item));
    return 0;
}

int tf_manifest_parse(const char *buf, size_t len, json_object **out, char *err, size_t errlen)
{
    json_object *raw = NULL;
    *out = NULL;
    /* YAML is a superset of JSON for our purposes (libyaml reads JSON documents). */
    int rc = tf_yaml_to_json(buf, len, &raw, err, errlen);
    if (rc)
        return rc;
    json_object *docs = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(raw); i++) {
        json_object *d = json_object_array_get_idx(raw, i);
        if (json_object_is_type(d, json_type_array)) {
            for (size_t j = 0; j < json_object_array_length(d); j++)
                flatten(docs, json_object_array_get_idx(d, j), 0);
        } else {
            flatten(docs, d, 0);
        }
    }
    json_object_put(raw);
    *out = docs;
    return 0;
}

static json_object *vpath(json_object *obj, va_list ap)
{
    const char *k;
    while (obj && (k = va_arg(ap, const char *)) != NULL) {
        json_object *next = NULL;
        if (!json_object_is_type(obj, json_type_object) ||
            !json_object_object_get_ex(obj, k, &next))
            return NULL;
        obj = next;
    }
    return obj;
}

json_object *tf_json_path(json_object *obj, ...)
{
    va_list ap;
    va_start(ap, obj);
    json_object *r = vpath(obj, ap);
    va_end(ap);
    return r;
}

const char *tf_json_str(json_object *obj, ...)
{
    va_list ap;
    va_start(ap, obj);
    json_object *r = vpath(obj, ap);
    va_end(ap);
    return r && json_object_is_type(r, json_type_string) ? json_object_get_string(r) : NULL;
}

bool tf_json_true(json_object *obj, ...)
{
    va_list ap;
    va_start(ap, obj);
    json_object *r = vpath(obj, ap);
    va_end(ap);
    return r && json_object_is_type(r, json_type_boolean) && json_object_get_boolean(r);
}

json_object *tf_json_array(json_object *obj, ...)
{
    va_list ap;
    va_start(ap, obj);
    json_object *r = vpath(obj, ap);
    va_end(ap);
    return r && json_object_is_type(r, json_type_array) ? r : NULL;
}
