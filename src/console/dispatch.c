/* SPDX-License-Identifier: Apache-2.0
 *
 * The console API's dispatch (console.h tf_con_api) and the headers of its pages. Read-only:
 * only GET and HEAD reach a view.
 */
#include "console/conint.h"

#include "common/err.h"

#include <string.h>

const char *const tf_con_headers[] = {
    "Content-Security-Policy",
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options",
    "nosniff",
    "X-Frame-Options",
    "DENY",
    "Referrer-Policy",
    "no-referrer",
    NULL,
};

bool tf_con_bearer_ok(const char *auth, const char *token)
{
    size_t tl = strlen(token);
    unsigned diff = !tl || !auth || strncmp(auth, "Bearer ", 7) || strlen(auth + 7) != tl;
    for (size_t i = 0; !diff && i < tl; i++)
        diff |= (unsigned char)auth[7 + i] ^ (unsigned char)token[i];
    return !diff;
}

int tf_con_api(const struct tf_con_provider *p, const char *method, const char *sub,
               const char *range, const char *step, json_object **out)
{
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        *out = tf__con_error("the console API is read-only: GET only");
        return 405;
    }
    struct tf_con_req r;
    char err[256];
    int rc = tf_con_req_parse(sub, range, step, &r, err, sizeof(err));
    if (rc) {
        *out = tf__con_error(err);
        return rc == TF_ENOENT ? 404 : 400;
    }
    int status = 200;
    if (r.view == TF_CON_ALERTS) {
        if (p->alerts) {
            *out = p->alerts(p->arg, &r);
        } else {
            *out = json_object_new_object();
            json_object_object_add(*out, "source", json_object_new_string("none"));
            json_object_object_add(*out, "alerts", json_object_new_array());
        }
        return *out ? 200 : 500;
    }
    if (r.view == TF_CON_EVENTS) {
        *out = p->events ? p->events(p->arg, &r) : tf_con_store_events(&r, &p->store);
        return *out ? 200 : 500;
    }
    json_object *inv = p->inventory(p->arg);
    if (!inv) {
        *out = tf__con_error("inventory unavailable");
        return 503;
    }
    switch (r.view) {
    case TF_CON_GPU:
        *out = tf_con_gpu(&r, inv, &p->store, &status);
        break;
    case TF_CON_WORKLOAD:
        *out = tf_con_workload(&r, inv, &p->store, &status);
        break;
    default:
        *out = tf_con_overview(&r, inv, &p->store);
        break;
    }
    json_object_put(inv);
    return *out ? status : 500;
}
