/* SPDX-License-Identifier: Apache-2.0
 *
 * The watch stream's decoder (client_int.h): newline-delimited JSON events, each at most
 * LINE_MAX_WATCH bytes, handed to the caller's function as they complete. No I/O: the client
 * feeds it what libcurl receives, the fuzz target (fuzz_k8s_watch) arbitrary bytes.
 */
#include "controller/k8s/client_int.h"

#include "common/err.h"
#include "common/strutil.h"
#include "common/yamljson.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* One event: the whole of S (LEN bytes) is one JSON value (with white space around it). */
static int watch_line(struct tf__k8s_watch *w, const char *s, size_t len)
{
    json_tokener *tok = json_tokener_new();
    json_object *ev = tok ? json_tokener_parse_ex(tok, s, (int)len) : NULL;
    size_t used = tok ? json_tokener_get_parse_end(tok) : 0;
    bool whole = ev && json_tokener_get_error(tok) == json_tokener_success;
    while (whole && used < len && strchr(" \t\r", s[used]) && s[used])
        used++;
    json_tokener_free(tok);
    if (!whole || used != len) {
        json_object_put(ev);
        tf_errf(w->err, w->errlen, "watch: event is not JSON");
        return TF_EPROTO;
    }
    const char *type = tf_json_str(ev, "type", NULL);
    json_object *obj = tf_json_path(ev, "object", NULL);
    int rc = 0;
    if (!type || !obj || !json_object_is_type(obj, json_type_object)) {
        tf_errf(w->err, w->errlen, "watch: event without type/object");
        rc = TF_EPROTO;
    } else if (strcmp(type, "ERROR") == 0) {
        json_object *code = tf_json_path(obj, "code", NULL);
        const char *msg = tf_json_str(obj, "message", NULL);
        tf_errf(w->err, w->errlen, "watch: %s", msg ? msg : "error event");
        rc = code && json_object_get_int(code) == 410 ? TF_ESTATE : TF_EIO;
    } else {
        enum tf_k8s_event_type t;
        if (strcmp(type, "ADDED") == 0)
            t = TF_K8S_ADDED;
        else if (strcmp(type, "MODIFIED") == 0)
            t = TF_K8S_MODIFIED;
        else if (strcmp(type, "DELETED") == 0)
            t = TF_K8S_DELETED;
        else if (strcmp(type, "BOOKMARK") == 0)
            t = TF_K8S_BOOKMARK;
        else {
            json_object_put(ev);
            return 0; /* unknown types are skipped, as client-go does */
        }
        const char *rv = tf_json_str(obj, "metadata", "resourceVersion", NULL);
        if (rv && w->last_rv)
            tf_strlcpy(w->last_rv, rv, w->rvlen);
        rc = w->fn(t, obj, w->arg);
    }
    json_object_put(ev);
    return rc;
}

size_t tf__k8s_watch_feed(struct tf__k8s_watch *w, const char *data, size_t n)
{
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(data + i, '\n', n - i);
        size_t k = (nl ? (size_t)(nl - data) : n) - i; /* the bytes before the newline */
        if (w->n + k + 1 > w->cap) {
            size_t cap = w->cap ? w->cap : 8192;
            while (cap < w->n + k + 1)
                cap *= 2;
            char *p = cap <= LINE_MAX_WATCH ? realloc(w->line, cap) : NULL;
            if (!p) {
                tf_errf(w->err, w->errlen, "watch: event larger than %u bytes", LINE_MAX_WATCH);
                w->rc = TF_ERANGE;
                return 0;
            }
            w->line = p;
            w->cap = cap;
        }
        memcpy(w->line + w->n, data + i, k);
        w->n += k;
        i += k;
        if (!nl)
            break;
        i++; /* the newline */
        if (w->n) {
            w->line[w->n] = '\0';
            w->rc = watch_line(w, w->line, w->n);
            w->n = 0;
            if (w->rc)
                return 0;
        }
    }
    return n;
}

int tf__k8s_watch_end(struct tf__k8s_watch *w)
{
    if (w->rc || !w->n)
        return w->rc;
    w->line[w->n] = '\0';
    size_t n = w->n;
    w->n = 0;
    return w->rc = watch_line(w, w->line, n);
}
