/* SPDX-License-Identifier: Apache-2.0
 *
 * kube-scheduler extender JSON codec (see extender_codec.h).
 */
#include "controller/extender_codec.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static json_object *parse_doc(const char *body, size_t len, const char *what, char *err,
                              size_t errlen)
{
    json_tokener *tok = json_tokener_new_ex(64);
    if (!tok)
        return NULL;
    json_object *root = json_tokener_parse_ex(tok, body, (int)(len > 0x7fffffff ? 0 : len));
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (!root || jerr != json_tokener_success) {
        tf_errf(err, errlen, "%s: invalid JSON: %s", what,
                jerr == json_tokener_continue ? "truncated input" : json_tokener_error_desc(jerr));
        json_object_put(root);
        return NULL;
    }
    for (; used < len; used++)
        if (!strchr(" \t\r\n", body[used]) || !body[used]) {
            tf_errf(err, errlen, "%s: trailing data after the JSON document", what);
            json_object_put(root);
            return NULL;
        }
    if (!json_object_is_type(root, json_type_object)) {
        tf_errf(err, errlen, "%s: not a JSON object", what);
        json_object_put(root);
        return NULL;
    }
    return root;
}

void tf_ext_args_free(struct tf_ext_args *args)
{
    if (!args)
        return;
    json_object_put(args->root);
    free(args->node_names);
    free(args->nodes);
    free(args->names_buf);
    free(args->name_lens);
    free(args->name_hashes);
    memset(args, 0, sizeof(*args));
}

/* ---- the strict scan ------------------------------------------------------------------------
 * Accepts a subset of RFC 8259 and answers "not mine" (false) for everything else, never an
 * error of its own: the json-c tree decoder then decides. */

#define SCAN_DEPTH 32 /* well below json-c's 64, so json-c never refuses what is accepted */

struct scan {
    const char *p, *end;
    int depth;
};

static void scan_ws(struct scan *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
        s->p++;
}

static bool scan_lit(struct scan *s, const char *lit, size_t n)
{
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n) != 0)
        return false;
    s->p += n;
    return true;
}

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A string at P: its raw bytes [*START, *START + *LEN) and whether it has escapes. */
static bool scan_str(struct scan *s, const char **start, size_t *len, bool *esc)
{
    if (s->p >= s->end || *s->p != '"')
        return false;
    const char *q = ++s->p;
    *esc = false;
    while (q < s->end) {
        unsigned char c = (unsigned char)*q;
        if (c == '"') {
            *start = s->p;
            *len = (size_t)(q - s->p);
            s->p = q + 1;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c != '\\') {
            q++;
            continue;
        }
        *esc = true;
        if (++q >= s->end)
            return false;
        if (*q == 'u') {
            for (int i = 1; i <= 4; i++)
                if (q + i >= s->end || !is_hex(q[i]))
                    return false;
            q += 5;
        } else if (strchr("\"\\/bfnrt", *q) && *q) {
            q++;
        } else {
            return false;
        }
    }
    return false;
}

static bool scan_digits(struct scan *s)
{
    const char *b = s->p;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
        s->p++;
    return s->p > b;
}

static bool scan_num(struct scan *s)
{
    if (s->p < s->end && *s->p == '-')
        s->p++;
    if (s->p < s->end && *s->p == '0')
        s->p++;
    else if (!scan_digits(s))
        return false;
    if (s->p < s->end && *s->p == '.') {
        s->p++;
        if (!scan_digits(s))
            return false;
    }
    if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
        s->p++;
        if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
            s->p++;
        if (!scan_digits(s))
            return false;
    }
    return true;
}

static bool scan_value(struct scan *s)
{
    const char *st;
    size_t n;
    bool esc;
    if (s->p >= s->end)
        return false;
    switch (*s->p) {
    case '"':
        return scan_str(s, &st, &n, &esc);
    case 't':
        return scan_lit(s, "true", 4);
    case 'f':
        return scan_lit(s, "false", 5);
    case 'n':
        return scan_lit(s, "null", 4);
    case '{':
    case '[': {
        char close = *s->p == '{' ? '}' : ']';
        bool obj = close == '}';
        if (++s->depth > SCAN_DEPTH)
            return false;
        s->p++;
        scan_ws(s);
        if (s->p < s->end && *s->p == close) {
            s->p++;
            s->depth--;
            return true;
        }
        for (;;) {
            if (obj) {
                if (!scan_str(s, &st, &n, &esc))
                    return false;
                scan_ws(s);
                if (!scan_lit(s, ":", 1))
                    return false;
                scan_ws(s);
            }
            if (!scan_value(s))
                return false;
            scan_ws(s);
            if (s->p < s->end && *s->p == ',') {
                s->p++;
                scan_ws(s);
                continue;
            }
            if (!scan_lit(s, &close, 1))
                return false;
            s->depth--;
            return true;
        }
    }
    default:
        return scan_num(s);
    }
}

/* NodeNames: an array of escape-free strings. The array's text is copied once into ARGS's
 * buffer, each name ends where its closing quote was (NUL-terminated in place), hashed as it
 * is found. */
static bool scan_names(struct scan *s, struct tf_ext_args *args)
{
    size_t n = 0, room = (size_t)(s->end - s->p);
    /* Names take 8 bytes or more with their quotes and comma as kube-scheduler sends them
     * (node names are DNS names): room for that many at once, grown if they are shorter. */
    size_t cap = room / 8 < TF_EXT_MAX_NODES ? room / 8 + 16 : TF_EXT_MAX_NODES + 1;
    const char **names = malloc(cap * sizeof(*names));
    size_t *lens = malloc(cap * sizeof(*lens));
    uint32_t *hashes = malloc(cap * sizeof(*hashes));
    char *buf = malloc(room + 1);
    if (!names || !lens || !hashes || !buf)
        goto no;
    memcpy(buf, s->p, room);
    buf[room] = '\0';
    struct scan b = {buf, buf + room, s->depth};
    if (!scan_lit(&b, "[", 1))
        goto no;
    scan_ws(&b);
    if (b.p < b.end && *b.p == ']') {
        b.p++;
    } else {
        for (;;) {
            if (b.p >= b.end || *b.p != '"' || n == TF_EXT_MAX_NODES)
                goto no;
            char *st = (char *)++b.p;
            size_t len = tf_json_plain_len(st, (size_t)(b.end - st));
            if (st + len >= b.end || st[len] != '"') /* an escape, a control byte, cut short */
                goto no;
            if (n == cap) {
                cap *= 2;
                const char **nn = realloc(names, cap * sizeof(*names));
                if (nn)
                    names = nn;
                size_t *nl = realloc(lens, cap * sizeof(*lens));
                if (nl)
                    lens = nl;
                uint32_t *nh = realloc(hashes, cap * sizeof(*hashes));
                if (nh)
                    hashes = nh;
                if (!nn || !nl || !nh)
                    goto no;
            }
            st[len] = '\0';
            names[n] = st;
            lens[n] = len;
            hashes[n++] = tf_strmap_hash(st, len);
            b.p = st + len + 1;
            scan_ws(&b);
            if (b.p < b.end && *b.p == ',') {
                b.p++;
                scan_ws(&b);
                continue;
            }
            if (!scan_lit(&b, "]", 1))
                goto no;
            break;
        }
    }
    s->p += b.p - buf;
    args->node_names = names;
    args->name_lens = lens;
    args->name_hashes = hashes;
    args->names_buf = buf;
    args->n_nodes = n;
    args->names_plain = true; /* no quote, backslash or control character got through */
    return true;
no:
    free(names);
    free(lens);
    free(hashes);
    free(buf);
    return false;
}

/* Whether the LEN bytes EXPECT are at S's position (then skipped). */
static bool scan_expected(struct scan *s, const char *expect, size_t len)
{
    if (!expect || !len || (size_t)(s->end - s->p) < len || memcmp(s->p, expect, len) != 0)
        return false;
    s->p += len;
    return true;
}

/* The strict scan of an ExtenderArgs in NodeNames mode; false: leave it to json-c. A Pod or
 * NodeNames of exactly EX's bytes (EX may be NULL) is skipped and flagged, not decoded. */
static bool decode_scan(const char *body, size_t len, const struct tf_ext_expect *ex,
                        struct tf_ext_args *args)
{
    struct scan s = {body, body + len, 1};
    const char *pod = NULL, *pod_end = NULL;
    bool names = false, nodes = false;
    scan_ws(&s);
    if (!scan_lit(&s, "{", 1))
        return false;
    scan_ws(&s);
    if (s.p < s.end && *s.p == '}')
        return false;
    for (;;) {
        const char *k;
        size_t kl;
        bool esc;
        if (!scan_str(&s, &k, &kl, &esc) || esc)
            goto no;
        scan_ws(&s);
        if (!scan_lit(&s, ":", 1))
            goto no;
        scan_ws(&s);
        if (kl == 3 && !memcmp(k, "Pod", 3)) {
            if (pod || s.p >= s.end || *s.p != '{')
                goto no;
            pod = s.p;
            args->pod_expected = ex && scan_expected(&s, ex->pod, ex->pod_len);
            if (!args->pod_expected && !scan_value(&s))
                goto no;
            pod_end = s.p;
        } else if (kl == 9 && !memcmp(k, "NodeNames", 9)) {
            if (names)
                goto no;
            const char *at = s.p;
            args->names_expected = ex && scan_expected(&s, ex->names, ex->names_len);
            if (!args->names_expected) {
                if (!scan_names(&s, args))
                    goto no;
                args->names_text = at;
                args->names_text_len = (size_t)(s.p - at);
            }
            names = true;
        } else if (kl == 5 && !memcmp(k, "Nodes", 5)) {
            if (nodes || !scan_lit(&s, "null", 4)) /* a NodeList: json-c's */
                goto no;
            nodes = true;
        } else if (!scan_value(&s)) {
            goto no;
        }
        scan_ws(&s);
        if (s.p < s.end && *s.p == ',') {
            s.p++;
            scan_ws(&s);
            continue;
        }
        if (!scan_lit(&s, "}", 1))
            goto no;
        break;
    }
    scan_ws(&s);
    if (s.p != s.end || !pod || !names)
        goto no;
    args->pod_text = pod;
    args->pod_len = (size_t)(pod_end - pod);
    if (args->pod_expected)
        return true;
    json_tokener *tok = json_tokener_new_ex(64);
    if (!tok)
        goto no;
    json_object *root = json_tokener_parse_ex(tok, pod, (int)(pod_end - pod));
    bool ok = root && json_tokener_get_error(tok) == json_tokener_success &&
              json_tokener_get_parse_end(tok) == (size_t)(pod_end - pod) &&
              json_object_is_type(root, json_type_object);
    json_tokener_free(tok);
    if (!ok) {
        json_object_put(root);
        goto no;
    }
    args->root = root;
    args->pod = root;
    return true;
no:
    tf_ext_args_free(args);
    return false;
}

int tf_ext_decode_args_expect(const char *body, size_t len, const struct tf_ext_expect *ex,
                              struct tf_ext_args *args, char *err, size_t errlen)
{
    memset(args, 0, sizeof(*args));
    if (len < 0x7fffffff && decode_scan(body, len, ex, args))
        return 0;
    return tf_ext_decode_args_tree(body, len, args, err, errlen);
}

int tf_ext_decode_args(const char *body, size_t len, struct tf_ext_args *args, char *err,
                       size_t errlen)
{
    return tf_ext_decode_args_expect(body, len, NULL, args, err, errlen);
}

int tf_ext_decode_args_tree(const char *body, size_t len, struct tf_ext_args *args, char *err,
                            size_t errlen)
{
    memset(args, 0, sizeof(*args));
    json_object *root = parse_doc(body, len, "ExtenderArgs", err, errlen);
    if (!root)
        return TF_EPARSE;
    args->root = root;
    int rc = TF_EINVAL;
    json_object *pod = NULL, *names = NULL, *nodes = NULL;
    if (!json_object_object_get_ex(root, "Pod", &pod) ||
        !json_object_is_type(pod, json_type_object)) {
        tf_errf(err, errlen, "ExtenderArgs: Pod is missing or not an object");
        goto fail;
    }
    args->pod = pod;
    json_object_object_get_ex(root, "NodeNames", &names);
    json_object_object_get_ex(root, "Nodes", &nodes);
    if (names && json_object_is_type(names, json_type_array)) {
        size_t n = json_object_array_length(names);
        if (n > TF_EXT_MAX_NODES) {
            tf_errf(err, errlen, "ExtenderArgs: NodeNames has %zu entries (max %d)", n,
                    TF_EXT_MAX_NODES);
            goto fail;
        }
        args->node_names = calloc(n ? n : 1, sizeof(char *));
        if (!args->node_names) {
            rc = TF_ENOMEM;
            goto fail;
        }
        for (size_t i = 0; i < n; i++) {
            json_object *e = json_object_array_get_idx(names, i);
            if (!json_object_is_type(e, json_type_string)) {
                tf_errf(err, errlen, "ExtenderArgs: NodeNames[%zu] is not a string", i);
                goto fail;
            }
            args->node_names[i] = json_object_get_string(e);
        }
        args->n_nodes = n;
    } else if (nodes && json_object_is_type(nodes, json_type_object)) {
        json_object *items = tf_json_path(nodes, "items", NULL);
        size_t n = items && json_object_is_type(items, json_type_array)
                       ? json_object_array_length(items)
                       : 0;
        if (n > TF_EXT_MAX_NODES) {
            tf_errf(err, errlen, "ExtenderArgs: Nodes.items has %zu entries (max %d)", n,
                    TF_EXT_MAX_NODES);
            goto fail;
        }
        args->node_names = calloc(n ? n : 1, sizeof(char *));
        args->nodes = calloc(n ? n : 1, sizeof(json_object *));
        if (!args->node_names || !args->nodes) {
            rc = TF_ENOMEM;
            goto fail;
        }
        for (size_t i = 0; i < n; i++) {
            json_object *node = json_object_array_get_idx(items, i);
            const char *name = tf_json_str(node, "metadata", "name", NULL);
            if (!name) {
                tf_errf(err, errlen, "ExtenderArgs: Nodes.items[%zu].metadata.name is missing", i);
                goto fail;
            }
            args->node_names[i] = name;
            args->nodes[i] = node;
        }
        args->n_nodes = n;
        args->node_list = true;
    } else {
        tf_errf(err, errlen, "ExtenderArgs: neither NodeNames nor Nodes is given");
        goto fail;
    }
    return 0;
fail:
    tf_ext_args_free(args);
    return rc;
}

static char *finish(json_object *o)
{
    char *s = strdup(
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
    return s;
}

static size_t name_len(const struct tf_ext_args *args, size_t i)
{
    return args->name_lens ? args->name_lens[i] : strlen(args->node_names[i]);
}

/* Bytes of the JSON string of the N bytes of S (quotes included); PLAIN: S needs no escape. */
static size_t str_size(const char *s, size_t n, bool plain)
{
    return (plain ? n : tf_json_escaped_len(s, n)) + 2;
}

/* Writes the JSON string of the N bytes of S at P; returns its end. PLAIN: S needs no escape. */
static char *put_str(char *p, const char *s, size_t n, bool plain)
{
    *p++ = '"';
    if (plain) {
        memcpy(p, s, n);
        p += n;
    } else {
        p = tf_json_escape(p, s, n);
    }
    *p++ = '"';
    return p;
}

static char *put_lit(char *p, const char *lit)
{
    size_t n = strlen(lit);
    memcpy(p, lit, n);
    return p + n;
}

/* Whether two failing nodes share a name (json-c would keep one key: leave it to json-c). */
static bool failed_repeat(const struct tf_ext_args *args, const char *const *reasons)
{
    if (args->names_distinct)
        return false;
    size_t nf = 0, cap = 16;
    for (size_t i = 0; i < args->n_nodes; i++)
        nf += reasons[i] != NULL;
    while (cap < nf * 2)
        cap *= 2;
    const char **set = calloc(cap, sizeof(*set));
    if (!set)
        return true;
    bool rep = false;
    for (size_t i = 0; i < args->n_nodes && !rep; i++) {
        if (!reasons[i])
            continue;
        const char *nm = args->node_names[i];
        uint32_t h = tf_strmap_hash(nm, name_len(args, i));
        for (size_t j = h & (cap - 1);; j = (j + 1) & (cap - 1)) {
            if (!set[j]) {
                set[j] = nm;
                break;
            }
            if (!strcmp(set[j], nm)) {
                rep = true;
                break;
            }
        }
    }
    free(set);
    return rep;
}

/* REASON as kube-scheduler shows it: without the allocator's "node NAME: " prefix (NAME of
 * NLEN bytes). The map's key names the node already, and kube-scheduler counts equal reasons
 * together in its FailedScheduling event ("0/5000 nodes are available: 1250 gpu 8/8 eligible,
 * …"), which a node name in every reason would defeat. */
static const char *reason_body(const char *reason, const char *name, size_t nlen)
{
    if (strncmp(reason, "node ", 5) || strncmp(reason + 5, name, nlen) || reason[5 + nlen] != ':' ||
        reason[6 + nlen] != ' ')
        return reason;
    return reason + 7 + nlen;
}

/* The failed nodes of one map (those UNRESOLVABLE says WANT of) as "name":"reason" pairs, at P
 * (NULL: only their size); RLEN holds each reason's length, ELEN its escaped length. Returns
 * the end (or the size). */
static char *put_failed(char *p, const struct tf_ext_args *args, const char *const *reasons,
                        const size_t *rlen, const size_t *elen, const bool *unresolvable, bool want,
                        size_t *size)
{
    bool first = true;
    for (size_t i = 0; i < args->n_nodes; i++) {
        if (!reasons[i] || (unresolvable && unresolvable[i]) != want)
            continue;
        size_t n = name_len(args, i);
        if (!p) {
            *size += !first + str_size(args->node_names[i], n, args->names_plain) + 3 + elen[i];
        } else {
            if (!first)
                *p++ = ',';
            p = put_str(p, args->node_names[i], n, args->names_plain);
            *p++ = ':';
            p = put_str(p, reasons[i], rlen[i], elen[i] == rlen[i]);
        }
        first = false;
    }
    return p;
}

char *tf_ext_encode_filter(const struct tf_ext_args *args, const char *const *reasons,
                           const bool *unresolvable, const char *error)
{
    return tf_ext_encode_filter_span(args, reasons, unresolvable, error, NULL);
}

char *tf_ext_encode_filter_span(const struct tf_ext_args *args, const char *const *reasons,
                                const bool *unresolvable, const char *error, size_t span[2])
{
    if (span)
        span[0] = span[1] = 0;
    /* Written as text (as json-c writes it: keys in insertion order, no spaces), into one
     * allocation of the exact size. */
    if (args->node_list || (reasons && failed_repeat(args, reasons)))
        return tf_ext_encode_filter_tree(args, reasons, unresolvable, error);
    static const char head[] = "{\"Nodes\":null,\"NodeNames\":[", mid1[] = "],\"FailedNodes\":{",
                      mid2[] = "},\"FailedAndUnresolvableNodes\":{", tail[] = "},\"Error\":";
    /* Per node, in one allocation: its reason's length, escaped length and text as written
     * (NULL for a node that passed). */
    size_t n1 = args->n_nodes + 1;
    size_t *rlen = reasons ? malloc(n1 * (2 * sizeof(size_t) + sizeof(const char *))) : NULL;
    size_t *elen = rlen ? rlen + n1 : NULL;
    const char **body = rlen ? (const char **)(elen + n1) : NULL;
    if (reasons && !rlen)
        return NULL;
    size_t errl = error ? strlen(error) : 0, passed = 0;
    size_t size = sizeof(head) + sizeof(mid1) + sizeof(mid2) + sizeof(tail) + 2 +
                  str_size(error ? error : "", errl, false);
    for (size_t i = 0; i < args->n_nodes; i++) {
        if (reasons && reasons[i]) {
            body[i] = reason_body(reasons[i], args->node_names[i], name_len(args, i));
            rlen[i] = strlen(body[i]);
            elen[i] = tf_json_escaped_len(body[i], rlen[i]);
            continue;
        }
        if (body)
            body[i] = NULL;
        size += !!passed + str_size(args->node_names[i], name_len(args, i), args->names_plain);
        passed++;
    }
    if (reasons) {
        put_failed(NULL, args, body, rlen, elen, unresolvable, false, &size);
        put_failed(NULL, args, body, rlen, elen, unresolvable, true, &size);
    }
    char *out = malloc(size + 1), *p = out;
    if (!out) {
        free(rlen);
        return NULL;
    }
    p = put_lit(p, head);
    if (span)
        span[0] = (size_t)(p - out) - 1; /* at the '[' */
    bool first = true;
    for (size_t i = 0; i < args->n_nodes; i++) {
        if (reasons && reasons[i])
            continue;
        if (!first)
            *p++ = ',';
        p = put_str(p, args->node_names[i], name_len(args, i), args->names_plain);
        first = false;
    }
    if (span)
        span[1] = (size_t)(p - out) + 1 - span[0]; /* through the ']' */
    p = put_lit(p, mid1);
    if (reasons)
        p = put_failed(p, args, body, rlen, elen, unresolvable, false, NULL);
    p = put_lit(p, mid2);
    if (reasons)
        p = put_failed(p, args, body, rlen, elen, unresolvable, true, NULL);
    p = put_lit(p, tail);
    p = put_str(p, error ? error : "", errl, false);
    *p++ = '}';
    *p = '\0';
    free(rlen);
    return out;
}

char *tf_ext_encode_filter_tree(const struct tf_ext_args *args, const char *const *reasons,
                                const bool *unresolvable, const char *error)
{
    json_object *res = json_object_new_object();
    json_object *failed = json_object_new_object();
    json_object *unres = json_object_new_object();
    json_object *ok = json_object_new_array();
    for (size_t i = 0; i < args->n_nodes; i++) {
        if (!reasons || !reasons[i]) {
            json_object_array_add(ok, args->node_list
                                          ? json_object_get(args->nodes[i])
                                          : json_object_new_string(args->node_names[i]));
        } else {
            json_object_object_add(
                unresolvable && unresolvable[i] ? unres : failed, args->node_names[i],
                json_object_new_string(
                    reason_body(reasons[i], args->node_names[i], strlen(args->node_names[i]))));
        }
    }
    if (args->node_list) {
        json_object *list = json_object_new_object();
        json_object_object_add(list, "apiVersion", json_object_new_string("v1"));
        json_object_object_add(list, "kind", json_object_new_string("NodeList"));
        json_object_object_add(list, "metadata", json_object_new_object());
        json_object_object_add(list, "items", ok);
        json_object_object_add(res, "Nodes", list);
        json_object_object_add(res, "NodeNames", NULL);
    } else {
        json_object_object_add(res, "Nodes", NULL);
        json_object_object_add(res, "NodeNames", ok);
    }
    json_object_object_add(res, "FailedNodes", failed);
    json_object_object_add(res, "FailedAndUnresolvableNodes", unres);
    json_object_object_add(res, "Error", json_object_new_string(error ? error : ""));
    return finish(res);
}

char *tf_ext_encode_priorities(const struct tf_ext_args *args, const int *scores)
{
    /* Written as text straight into one allocation of its size: thousands of tiny objects
     * through json-c cost more than the scoring. Hosts scoring 0 are left out: kube-scheduler
     * adds each listed host's score to that node's total (a map lookup, 0 when absent), so a
     * missing host and a host with score 0 rank the same. */
    static const char host[] = "{\"Host\":", score[] = ",\"Score\":";
    size_t size = 3;
    for (size_t i = 0; i < args->n_nodes; i++)
        if (scores[i] > 0)
            size += str_size(args->node_names[i], name_len(args, i), args->names_plain) +
                    sizeof(host) + sizeof(score) + 2;
    char *out = malloc(size), *p = out;
    if (!out)
        return NULL;
    *p++ = '[';
    for (size_t i = 0; i < args->n_nodes; i++) {
        if (scores[i] <= 0)
            continue;
        int sc = scores[i] > 10 ? 10 : scores[i];
        if (p > out + 1)
            *p++ = ',';
        memcpy(p, host, sizeof(host) - 1);
        p = put_str(p + sizeof(host) - 1, args->node_names[i], name_len(args, i),
                    args->names_plain);
        memcpy(p, score, sizeof(score) - 1);
        p += sizeof(score) - 1;
        if (sc == 10)
            *p++ = '1';
        *p++ = (char)('0' + sc % 10);
        *p++ = '}';
    }
    *p++ = ']';
    *p = '\0';
    return out;
}

void tf_ext_binding_free(struct tf_ext_binding *b)
{
    if (!b)
        return;
    json_object_put(b->root);
    memset(b, 0, sizeof(*b));
}

int tf_ext_decode_binding(const char *body, size_t len, struct tf_ext_binding *b, char *err,
                          size_t errlen)
{
    memset(b, 0, sizeof(*b));
    json_object *root = parse_doc(body, len, "ExtenderBindingArgs", err, errlen);
    if (!root)
        return TF_EPARSE;
    static const char *const keys[] = {"PodName", "PodNamespace", "PodUID", "Node"};
    const char *vals[4];
    for (int i = 0; i < 4; i++) {
        json_object *v = NULL;
        if (!json_object_object_get_ex(root, keys[i], &v) ||
            !json_object_is_type(v, json_type_string) || (i != 2 && !*json_object_get_string(v))) {
            tf_errf(err, errlen, "ExtenderBindingArgs: %s is missing or not a string", keys[i]);
            json_object_put(root);
            return TF_EINVAL;
        }
        vals[i] = json_object_get_string(v);
    }
    b->root = root;
    b->pod_name = vals[0];
    b->pod_namespace = vals[1];
    b->pod_uid = vals[2];
    b->node = vals[3];
    return 0;
}

char *tf_ext_encode_binding_result(const char *error)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "Error", json_object_new_string(error ? error : ""));
    return finish(o);
}
