/* SPDX-License-Identifier: Apache-2.0
 *
 * A minimal GreptimeDB SQL client for the autoscaler: POST {url}/v1/sql?db={db} with the form
 * field sql (application/x-www-form-urlencoded), as GreptimeDB's HTTP API takes it, over
 * libcurl; the answer (bounded to TF_GREPTIME_BODY_MAX bytes) is parsed by greptime_codec.h.
 * Basic authentication goes in the URL (http://user:password@host:4000).
 *
 * Ownership: tf_greptime_new copies its strings; tf_greptime_destroy accepts NULL.
 * Threads: one caller at a time per client (the leader's reconcile loop; the alert evaluator
 * has its own).
 */
#ifndef TF_CONTROLLER_GREPTIME_H
#define TF_CONTROLLER_GREPTIME_H

#include "core/autoscale.h"

#include <json-c/json.h>

#include <stddef.h>
#include <stdint.h>

#define TF_GREPTIME_BODY_MAX (64u << 20)

struct tf_greptime;

/* URL is the server's base ("http://greptimedb:4000"); DB the database (NULL: "public").
 * NULL on allocation failure or an empty URL. */
struct tf_greptime *tf_greptime_new(const char *url, const char *db, int timeout_ms);
void tf_greptime_destroy(struct tf_greptime *g);

/* The tf_worker_usage rows of workload NS/NAME in [FROM_MS, TO_MS]. 0 and *OUT / *N (caller
 * frees *OUT), or TF_EIO (transport failure, HTTP error, GreptimeDB error), TF_ERANGE (answer
 * too large), TF_EINVAL (not a Kubernetes name), or a parser code, with ERR set. */
int tf_greptime_usage(struct tf_greptime *g, const char *ns, const char *name, int64_t from_ms,
                      int64_t to_ms, struct tf_usage_sample **out, size_t *n, char *err,
                      size_t errlen);

/* Runs SQL (any read-only statement): 0 with the answer as tf_greptime_records_parse gives it
 * (*DOC owned by the caller), or TF_EIO / TF_ERANGE / a parser code with ERR set. */
int tf_greptime_query(struct tf_greptime *g, const char *sql, json_object **doc,
                      json_object **names, json_object **rows, char *err, size_t errlen);

#endif
