/* SPDX-License-Identifier: Apache-2.0
 *
 * AdmissionReview v1 codec (see admission.h).
 */
#include "controller/admission.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/base64.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void tf_admission_req_free(struct tf_admission_req *req)
{
    if (!req)
        return;
    json_object_put(req->root);
    memset(req, 0, sizeof(*req));
}

static const char *need_str(json_object *o, const char *key, bool required, char *err,
                            size_t errlen, int *rc)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) {
        if (required) {
            tf_errf(err, errlen, "AdmissionReview: request.%s is missing", key);
            *rc = TF_EINVAL;
        }
        return "";
    }
    if (!json_object_is_type(v, json_type_string)) {
        tf_errf(err, errlen, "AdmissionReview: request.%s must be a string", key);
        *rc = TF_EINVAL;
        return "";
    }
    return json_object_get_string(v);
}

/* One tokener per thread, reset per review: a new one costs a 2 KiB zeroed allocation (its
 * parse stack) per request. Freed when the thread exits; *OWN is set when the caller must
 * free it instead (no thread key available). */
static pthread_key_t tok_key;
static pthread_once_t tok_once = PTHREAD_ONCE_INIT;
static bool tok_key_ok;

static void tok_free(void *tok)
{
    json_tokener_free(tok);
}

static void tok_key_init(void)
{
    tok_key_ok = pthread_key_create(&tok_key, tok_free) == 0;
}

static json_tokener *thread_tokener(bool *own)
{
    pthread_once(&tok_once, tok_key_init);
    json_tokener *tok = tok_key_ok ? pthread_getspecific(tok_key) : NULL;
    *own = false;
    if (tok) {
        json_tokener_reset(tok);
        return tok;
    }
    tok = json_tokener_new_ex(64);
    if (tok && (!tok_key_ok || pthread_setspecific(tok_key, tok) != 0))
        *own = true;
    return tok;
}

int tf_admission_decode(const char *body, size_t len, struct tf_admission_req *req, char *err,
                        size_t errlen)
{
    memset(req, 0, sizeof(*req));
    bool own_tok;
    json_tokener *tok = thread_tokener(&own_tok);
    if (!tok)
        return TF_ENOMEM;
    json_object *root = json_tokener_parse_ex(tok, body, (int)(len > 0x7fffffff ? 0 : len));
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    if (own_tok)
        json_tokener_free(tok);
    if (!root || jerr != json_tokener_success) {
        tf_errf(err, errlen, "AdmissionReview: invalid JSON: %s",
                jerr == json_tokener_continue ? "truncated input" : json_tokener_error_desc(jerr));
        json_object_put(root);
        return TF_EPARSE;
    }
    for (; used < len; used++) {
        char ch = body[used];
        if (ch != ' ' && ch != '\n' && ch != '\r' && ch != '\t') {
            tf_errf(err, errlen, "AdmissionReview: trailing data after the JSON document");
            json_object_put(root);
            return TF_EPARSE;
        }
    }
    int rc = 0;
    const char *api = tf_json_str(root, "apiVersion", NULL);
    const char *kind = tf_json_str(root, "kind", NULL);
    json_object *r = tf_json_path(root, "request", NULL);
    if (!json_object_is_type(root, json_type_object) || !api ||
        strcmp(api, "admission.k8s.io/v1") != 0) {
        tf_errf(err, errlen, "AdmissionReview: apiVersion must be admission.k8s.io/v1, got %s",
                api ? api : "none");
        rc = TF_EINVAL;
    } else if (!kind || strcmp(kind, "AdmissionReview") != 0) {
        tf_errf(err, errlen, "AdmissionReview: kind must be AdmissionReview, got %s",
                kind ? kind : "none");
        rc = TF_EINVAL;
    } else if (!r) {
        tf_errf(err, errlen, "AdmissionReview: request is missing");
        rc = TF_EINVAL;
    }
    if (rc) {
        json_object_put(root);
        return rc;
    }
    req->root = root;
    req->uid = need_str(r, "uid", true, err, errlen, &rc);
    if (!rc)
        req->operation = need_str(r, "operation", true, err, errlen, &rc);
    if (!rc)
        req->namespace = need_str(r, "namespace", false, err, errlen, &rc);
    if (!rc)
        req->name = need_str(r, "name", false, err, errlen, &rc);
    if (!rc) {
        json_object *k = tf_json_path(r, "kind", NULL);
        req->kind = k ? need_str(k, "kind", true, err, errlen, &rc) : "";
        if (!k) {
            tf_errf(err, errlen, "AdmissionReview: request.kind is missing");
            rc = TF_EINVAL;
        }
    }
    if (!rc) {
        json_object *o = NULL;
        if (json_object_object_get_ex(r, "object", &o) && o &&
            !json_object_is_type(o, json_type_object)) {
            tf_errf(err, errlen, "AdmissionReview: request.object must be an object");
            rc = TF_EINVAL;
        }
        req->object = o;
        json_object *old = NULL;
        if (json_object_object_get_ex(r, "oldObject", &old) && old &&
            !json_object_is_type(old, json_type_object)) {
            tf_errf(err, errlen, "AdmissionReview: request.oldObject must be an object");
            rc = TF_EINVAL;
        }
        req->old_object = old;
        json_object *ui = tf_json_path(r, "userInfo", NULL);
        req->username = "";
        if (ui && !json_object_is_type(ui, json_type_object)) {
            tf_errf(err, errlen, "AdmissionReview: request.userInfo must be an object");
            rc = TF_EINVAL;
        } else if (ui && !rc) {
            req->username = need_str(ui, "username", false, err, errlen, &rc);
        }
        json_object *dr = NULL;
        if (json_object_object_get_ex(r, "dryRun", &dr) && dr)
            req->dry_run =
                json_object_is_type(dr, json_type_boolean) && json_object_get_boolean(dr);
    }
    if (!rc && !*req->uid) {
        tf_errf(err, errlen, "AdmissionReview: request.uid is empty");
        rc = TF_EINVAL;
    }
    if (rc)
        tf_admission_req_free(req);
    return rc;
}

char *tf_admission_encode(const char *uid, bool allowed, const char *patch, int code,
                          const char *message, json_object *warnings)
{
    /* Written as text: the review is a handful of fixed members, and the patch (base64 needs
     * no JSON escaping) is copied once instead of becoming a json-c string. */
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, SIZE_MAX / 2);
    char *b64 = NULL;
    const char *u = uid ? uid : "";
    int rc = tf_dynbuf_adds(&b, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
                                "\"AdmissionReview\",\"response\":{\"uid\":");
    if (!rc)
        rc = tf_dynbuf_add_json_str(&b, u, strlen(u));
    if (!rc)
        rc = tf_dynbuf_adds(&b, allowed ? ",\"allowed\":true" : ",\"allowed\":false");
    if (!rc && !allowed) {
        const char *m = message ? message : "";
        rc = tf_dynbuf_addf(&b, ",\"status\":{\"code\":%d,\"message\":", code ? code : 400);
        if (!rc)
            rc = tf_dynbuf_add_json_str(&b, m, strlen(m));
        if (!rc)
            rc = tf_dynbuf_addc(&b, '}');
    }
    if (!rc && warnings && json_object_array_length(warnings) > 0) {
        size_t n = 0;
        const char *w = json_object_to_json_string_length(
            warnings, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
        rc = tf_dynbuf_adds(&b, ",\"warnings\":");
        if (!rc)
            rc = w ? tf_dynbuf_add(&b, w, n) : TF_ENOMEM;
    }
    if (!rc && allowed && patch && *patch) {
        b64 = tf_base64_encode(patch, strlen(patch));
        rc = b64 ? tf_dynbuf_adds(&b, ",\"patchType\":\"JSONPatch\",\"patch\":\"") : TF_ENOMEM;
        if (!rc)
            rc = tf_dynbuf_adds(&b, b64);
        if (!rc)
            rc = tf_dynbuf_addc(&b, '"');
    }
    if (!rc)
        rc = tf_dynbuf_adds(&b, "}}");
    free(b64);
    if (rc) {
        tf_dynbuf_free(&b);
        return NULL;
    }
    return b.data;
}
