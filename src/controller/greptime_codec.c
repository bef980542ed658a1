/* SPDX-License-Identifier: Apache-2.0
 *
 * GreptimeDB usage query and answer parser (see greptime_codec.h).
 */
#include "controller/greptime_codec.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/timeutil.h"

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool k8s_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
            return false;
    }
    return true;
}

int tf_greptime_usage_sql(const char *ns, const char *name, int64_t from_ms, int64_t to_ms,
                          char *buf, size_t len)
{
    if (!k8s_name(ns) || !k8s_name(name))
        return TF_EINVAL;
    int n = snprintf(buf, len,
                     "SELECT greptime_timestamp, compute_tflops, memory_bytes FROM tf_worker_usage "
                     "WHERE namespace = '%s' AND workload = '%s' AND greptime_timestamp >= %lld "
                     "AND greptime_timestamp <= %lld ORDER BY greptime_timestamp",
                     ns, name, (long long)from_ms, (long long)to_ms);
    return n < 0 || (size_t)n >= len ? TF_ERANGE : 0;
}

static json_object *member(json_object *o, const char *key, enum json_type t)
{
    json_object *v = NULL;
    if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v) ||
        !json_object_is_type(v, t))
        return NULL;
    return v;
}

/* Milliseconds per unit of a timestamp column's data_type, as a divisor (< 0: multiplier). */
static int64_t ts_scale(const char *type)
{
    if (!type)
        return 1;
    if (strcmp(type, "TimestampSecond") == 0)
        return -1000;
    if (strcmp(type, "TimestampMicrosecond") == 0)
        return 1000;
    if (strcmp(type, "TimestampNanosecond") == 0)
        return 1000000;
    return 1; /* TimestampMillisecond, Timestamp, Int64 ... */
}

static int row_ts(json_object *v, int64_t scale, size_t row, int64_t *out, char *err, size_t errlen)
{
    if (json_object_is_type(v, json_type_string)) {
        char key[64];
        snprintf(key, sizeof(key), "rows[%zu].greptime_timestamp", row);
        return tf_rfc3339_parse(json_object_get_string(v), out, key, err, errlen);
    }
    if (!json_object_is_type(v, json_type_int)) {
        tf_errf(err, errlen,
                "rows[%zu].greptime_timestamp: expected an integer or a timestamp "
                "string",
                row);
        return TF_EPARSE;
    }
    int64_t t = json_object_get_int64(v);
    if (scale < 0) {
        if (t > INT64_MAX / -scale || t < INT64_MIN / -scale) {
            tf_errf(err, errlen, "rows[%zu].greptime_timestamp: %lld out of range", row,
                    (long long)t);
            return TF_ERANGE;
        }
        t *= -scale;
    } else {
        t /= scale;
    }
    *out = t;
    return 0;
}

/* A non-negative number scaled by MUL, rounded; -1 for null. */
static int row_value(json_object *v, double mul, size_t row, const char *col, int64_t *out,
                     char *err, size_t errlen)
{
    if (!v) {
        *out = -1;
        return 0;
    }
    double d;
    if (json_object_is_type(v, json_type_int))
        d = (double)json_object_get_int64(v);
    else if (json_object_is_type(v, json_type_double))
        d = json_object_get_double(v);
    else {
        tf_errf(err, errlen, "rows[%zu].%s: expected a number or null", row, col);
        return TF_EPARSE;
    }
    d *= mul;
    if (!isfinite(d) || d < 0 || d > 9e18) {
        tf_errf(err, errlen, "rows[%zu].%s: %g out of range", row, col, d / mul);
        return TF_ERANGE;
    }
    *out = (int64_t)llround(d);
    return 0;
}

static int parse_records(json_object *rec, struct tf_usage_sample **out, size_t *n, char *err,
                         size_t errlen)
{
    json_object *cols =
        member(member(rec, "schema", json_type_object), "column_schemas", json_type_array);
    json_object *rows = member(rec, "rows", json_type_array);
    if (!cols || !rows) {
        tf_errf(err, errlen, "records: schema.column_schemas and rows are required");
        return TF_EPROTO;
    }
    size_t ncols = json_object_array_length(cols);
    long its = -1, itf = -1, imem = -1;
    int64_t scale = 1;
    for (size_t i = 0; i < ncols; i++) {
        json_object *c = json_object_array_get_idx(cols, i);
        json_object *nm = member(c, "name", json_type_string);
        json_object *ty = member(c, "data_type", json_type_string);
        if (!nm) {
            tf_errf(err, errlen, "column_schemas[%zu]: no name", i);
            return TF_EPROTO;
        }
        const char *s = json_object_get_string(nm);
        if (strcmp(s, "greptime_timestamp") == 0) {
            its = (long)i;
            scale = ts_scale(ty ? json_object_get_string(ty) : NULL);
        } else if (strcmp(s, "compute_tflops") == 0) {
            itf = (long)i;
        } else if (strcmp(s, "memory_bytes") == 0) {
            imem = (long)i;
        }
    }
    if (its < 0) {
        tf_errf(err, errlen, "column_schemas: no greptime_timestamp column");
        return TF_EPROTO;
    }
    size_t nrows = json_object_array_length(rows);
    if (nrows > TF_GREPTIME_MAX_ROWS) {
        tf_errf(err, errlen, "rows: %zu rows, at most %d accepted", nrows, TF_GREPTIME_MAX_ROWS);
        return TF_ERANGE;
    }
    struct tf_usage_sample *v = nrows ? calloc(nrows, sizeof(*v)) : NULL;
    if (nrows && !v) {
        tf_errf(err, errlen, "out of memory");
        return TF_ENOMEM;
    }
    int rc = 0;
    for (size_t r = 0; r < nrows && !rc; r++) {
        json_object *row = json_object_array_get_idx(rows, r);
        if (!json_object_is_type(row, json_type_array) || json_object_array_length(row) != ncols) {
            tf_errf(err, errlen, "rows[%zu]: expected an array of %zu values", r, ncols);
            rc = TF_EPROTO;
            break;
        }
        rc =
            row_ts(json_object_array_get_idx(row, (size_t)its), scale, r, &v[r].ts_ms, err, errlen);
        if (!rc)
            rc = itf < 0 ? (v[r].tflops_milli = -1, 0)
                         : row_value(json_object_array_get_idx(row, (size_t)itf), 1000.0, r,
                                     "compute_tflops", &v[r].tflops_milli, err, errlen);
        if (!rc)
            rc = imem < 0 ? (v[r].vram_bytes = -1, 0)
                          : row_value(json_object_array_get_idx(row, (size_t)imem), 1.0, r,
                                      "memory_bytes", &v[r].vram_bytes, err, errlen);
    }
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    *n = nrows;
    return 0;
}

/* The records object of answer BODY: 0 with *DOC (owned) and *REC (inside it). */
static int parse_doc(const char *body, size_t len, json_object **doc_out, json_object **rec_out,
                     char *err, size_t errlen)
{
    *doc_out = *rec_out = NULL;
    if (len > INT32_MAX) {
        tf_errf(err, errlen, "answer too large");
        return TF_ERANGE;
    }
    json_tokener *tok = json_tokener_new();
    if (!tok) {
        tf_errf(err, errlen, "out of memory");
        return TF_ENOMEM;
    }
    json_object *doc = json_tokener_parse_ex(tok, body, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    int rc = 0;
    if (!doc || jerr != json_tokener_success) {
        tf_errf(err, errlen, "answer is not JSON: %s",
                doc ? "trailing data" : json_tokener_error_desc(jerr));
        rc = TF_EPARSE;
        goto fail;
    }
    for (; used < len; used++)
        if (body[used] != ' ' && body[used] != '\n' && body[used] != '\r' && body[used] != '\t') {
            tf_errf(err, errlen, "answer is not JSON: trailing data after the object");
            rc = TF_EPARSE;
            goto fail;
        }
    json_object *e = member(doc, "error", json_type_string);
    if (e) {
        json_object *code = member(doc, "code", json_type_int);
        tf_errf(err, errlen, "GreptimeDB error %lld: %s",
                code ? (long long)json_object_get_int64(code) : 0LL, json_object_get_string(e));
        rc = TF_EIO;
        goto fail;
    }
    json_object *outs = member(doc, "output", json_type_array);
    if (!outs) {
        tf_errf(err, errlen, "answer has no output array");
        rc = TF_EPROTO;
        goto fail;
    }
    for (size_t i = 0; i < json_object_array_length(outs); i++) {
        json_object *rec = member(json_object_array_get_idx(outs, i), "records", json_type_object);
        if (rec) {
            *doc_out = doc;
            *rec_out = rec;
            return 0;
        }
    }
    tf_errf(err, errlen, "answer has no records");
    rc = TF_EPROTO;
fail:
    json_object_put(doc);
    return rc;
}

int tf_greptime_usage_parse(const char *body, size_t len, struct tf_usage_sample **out, size_t *n,
                            char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    json_object *doc, *rec;
    int rc = parse_doc(body, len, &doc, &rec, err, errlen);
    if (rc == 0)
        rc = parse_records(rec, out, n, err, errlen);
    json_object_put(doc);
    return rc;
}

int tf_greptime_records_parse(const char *body, size_t len, json_object **doc, json_object **names,
                              json_object **rows, char *err, size_t errlen)
{
    *names = *rows = NULL;
    json_object *rec;
    int rc = parse_doc(body, len, doc, &rec, err, errlen);
    if (rc)
        return rc;
    json_object *cols =
        member(member(rec, "schema", json_type_object), "column_schemas", json_type_array);
    json_object *rr = member(rec, "rows", json_type_array);
    if (!cols || !rr) {
        tf_errf(err, errlen, "records: schema.column_schemas and rows are required");
        rc = TF_EPROTO;
        goto fail;
    }
    size_t ncols = json_object_array_length(cols), nrows = json_object_array_length(rr);
    if (nrows > TF_GREPTIME_MAX_ROWS) {
        tf_errf(err, errlen, "rows: %zu rows, at most %d accepted", nrows, TF_GREPTIME_MAX_ROWS);
        rc = TF_ERANGE;
        goto fail;
    }
    json_object *nm = json_object_new_array();
    for (size_t i = 0; i < ncols; i++) {
        json_object *c = member(json_object_array_get_idx(cols, i), "name", json_type_string);
        if (!c) {
            json_object_put(nm);
            tf_errf(err, errlen, "column_schemas[%zu]: no name", i);
            rc = TF_EPROTO;
            goto fail;
        }
        json_object_array_add(nm, json_object_get(c));
    }
    for (size_t r = 0; r < nrows; r++) {
        json_object *row = json_object_array_get_idx(rr, r);
        if (!json_object_is_type(row, json_type_array) || json_object_array_length(row) != ncols) {
            json_object_put(nm);
            tf_errf(err, errlen, "rows[%zu]: expected an array of %zu values", r, ncols);
            rc = TF_EPROTO;
            goto fail;
        }
    }
    /* The names live in their own array owned by the document, so one put frees all. */
    json_object_object_add(*doc, "_tf_names", nm);
    *names = nm;
    *rows = rr;
    return 0;
fail:
    json_object_put(*doc);
    *doc = NULL;
    return rc;
}
