/* SPDX-License-Identifier: Apache-2.0
 *
 * kube-scheduler extender JSON codec (see extender_codec.h).
 */
#include "controller/extender_codec.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/strutil.h"
#include "common/yamljson.h"

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
    memset(args, 0, sizeof(*args));
}

int tf_ext_decode_args(const char *body, size_t len, struct tf_ext_args *args, char *err,
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

char *tf_ext_encode_filter(const struct tf_ext_args *args, const char *const *reasons,
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
            json_object_object_add(unresolvable && unresolvable[i] ? unres : failed,
                                   args->node_names[i], json_object_new_string(reasons[i]));
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
    /* Written as text: thousands of tiny objects through json-c cost more than the scoring. */
    struct tf_dynbuf out;
    tf_dynbuf_init(&out, SIZE_MAX);
    int rc = tf_dynbuf_addc(&out, '[');
    for (size_t i = 0; !rc && i < args->n_nodes; i++) {
        int sc = scores[i] < 0 ? 0 : scores[i] > 10 ? 10 : scores[i];
        const char *name = args->node_names[i];
        if ((i && (rc = tf_dynbuf_addc(&out, ','))) || (rc = tf_dynbuf_adds(&out, "{\"Host\":")) ||
            (rc = tf_dynbuf_add_json_str(&out, name, strlen(name))))
            break;
        if ((rc = tf_dynbuf_adds(&out, sc == 10 ? ",\"Score\":10" : ",\"Score\":")) ||
            (sc < 10 && (rc = tf_dynbuf_addc(&out, (char)('0' + sc)))))
            break;
        rc = tf_dynbuf_addc(&out, '}');
    }
    if (!rc)
        rc = tf_dynbuf_addc(&out, ']');
    if (rc) {
        tf_dynbuf_free(&out);
        return NULL;
    }
    return out.data;
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
