/* SPDX-License-Identifier: Apache-2.0
 *
 * The GreptimeDB side of the autoscaler, pure: the SQL that reads a workload's usage history
 * and the parser of the answer of GreptimeDB's SQL HTTP API (POST /v1/sql?db=DB, form field
 * sql; greptime.h sends it).
 *
 * Query (integer millisecond bounds; GreptimeDB casts them to the timestamp column's type):
 *   SELECT greptime_timestamp, compute_tflops, memory_bytes FROM tf_worker_usage
 *   WHERE namespace = 'NS' AND workload = 'NAME' AND greptime_timestamp >= FROM
 *   AND greptime_timestamp <= TO ORDER BY greptime_timestamp
 *
 * Answer (GreptimeDB's "greptimedb_v1" JSON output):
 *   {"output": [{"records": {"schema": {"column_schemas": [
 *        {"name": "greptime_timestamp", "data_type": "TimestampMillisecond"},
 *        {"name": "compute_tflops", "data_type": "Float64"},
 *        {"name": "memory_bytes", "data_type": "Int64"}]},
 *      "rows": [[1714546800000, 5.25, 3221225472], ...], "total_rows": 1}}],
 *    "execution_time_ms": 3}
 * or, on failure (any HTTP status), {"code": 4001, "error": "Table not found: ...",
 * "execution_time_ms": 0}. Columns are found by name (any order, extra ones ignored); the
 * time column is required, a missing value column means "not reported". Timestamps are
 * integers in the unit of their data_type (TimestampSecond, -Millisecond, -Microsecond,
 * -Nanosecond; a plain integer type is taken as milliseconds) or RFC 3339 strings; values are
 * JSON numbers or null. Every malformed part is an error naming its row and column.
 *
 * Pure and thread-safe.
 */
#ifndef TF_CONTROLLER_GREPTIME_CODEC_H
#define TF_CONTROLLER_GREPTIME_CODEC_H

#include "core/autoscale.h"

#include <json-c/json.h>

#include <stddef.h>
#include <stdint.h>

#define TF_GREPTIME_MAX_ROWS 4000000
#define TF_GREPTIME_SQL_MAX 1024

/* Writes the usage query for workload NAME in namespace NS over [FROM_MS, TO_MS] into BUF.
 * NS and NAME must be Kubernetes names ([a-z0-9.-], at most 253 characters), so the literals
 * need no escaping. 0, TF_EINVAL (bad name) or TF_ERANGE (BUF too small). */
int tf_greptime_usage_sql(const char *ns, const char *name, int64_t from_ms, int64_t to_ms,
                          char *buf, size_t len);

/* Parses the answer BODY[0..LEN) into samples. 0 and *OUT / *N (caller frees *OUT; NULL when
 * N is 0); TF_EIO with GreptimeDB's message when the answer is an error object; TF_EPARSE /
 * TF_EPROTO / TF_ERANGE / TF_ENOMEM with ERR set otherwise. */
int tf_greptime_usage_parse(const char *body, size_t len, struct tf_usage_sample **out, size_t *n,
                            char *err, size_t errlen);

/* Any query's answer BODY[0..LEN): 0 with *DOC (caller puts it), *NAMES (array of the column
 * names, strings) and *ROWS (array of rows, each an array of as many JSON values), both owned
 * by *DOC; or the errors above (TF_EIO: GreptimeDB's own error), *DOC NULL. */
int tf_greptime_records_parse(const char *body, size_t len, json_object **doc, json_object **names,
                              json_object **rows, char *err, size_t errlen);

#endif
