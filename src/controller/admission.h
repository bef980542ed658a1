/* SPDX-License-Identifier: Apache-2.0
 *
 * AdmissionReview v1 (admission.k8s.io/v1) decoding and encoding.
 *
 * Decoding accepts exactly what kube-apiserver sends: {"apiVersion":"admission.k8s.io/v1",
 * "kind":"AdmissionReview","request":{"uid","kind","resource","namespace","name",
 * "operation","object","oldObject","dryRun","userInfo",...}}; anything else is an error with
 * a message naming the field. Encoding produces the response review with the same uid,
 * allowed, an optional base64 JSONPatch (patchType "JSONPatch"), an optional status
 * {code, message} for denials, and warnings. Pure and thread-safe.
 */
#ifndef TF_CONTROLLER_ADMISSION_H
#define TF_CONTROLLER_ADMISSION_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct tf_admission_req {
    json_object *root;       /* the whole review (owned; freed by tf_admission_req_free) */
    const char *uid;         /* borrowed from ROOT */
    const char *operation;   /* CREATE, UPDATE, DELETE, CONNECT */
    const char *kind;        /* request.kind.kind, e.g. "Pod" */
    const char *namespace;   /* may be "" */
    const char *name;        /* may be "" (generateName pods) */
    json_object *object;     /* request.object (borrowed), NULL for DELETE */
    json_object *old_object; /* request.oldObject (borrowed): UPDATE and DELETE, else NULL */
    const char *username;    /* request.userInfo.username, "" when absent (borrowed) */
    bool dry_run;
};

/* Parses BODY[0..LEN). On error returns TF_EPARSE/TF_EINVAL, writes ERR and leaves REQ
 * empty. On success the caller frees REQ with tf_admission_req_free. */
int tf_admission_decode(const char *body, size_t len, struct tf_admission_req *req, char *err,
                        size_t errlen);
void tf_admission_req_free(struct tf_admission_req *req);

/* Builds the response review as a new string (caller frees), NULL when out of memory.
 * PATCH (the JSON text of an array of operations; NULL or "" = no patch) is
 * base64-encoded. When
 * ALLOWED is false, CODE and MESSAGE fill response.status. WARNINGS may be NULL. */
char *tf_admission_encode(const char *uid, bool allowed, const char *patch, int code,
                          const char *message, json_object *warnings);

#endif
