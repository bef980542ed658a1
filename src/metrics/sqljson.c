/* SPDX-License-Identifier: Apache-2.0
 *
 * A query's answer as JSON (sqlquery.h tf_sql_query_json): the shape GreptimeDB's SQL API
 * answers in (column names, rows of values), so a caller reads SQLite and GreptimeDB alike.
 */
#include "metrics/sqlquery.h"

#include "common/err.h"
#include "common/strutil.h"

#include <json-c/json.h>
#include <stdbool.h>

struct collect {
    json_object *names, *rows;
    int64_t max_rows;
    int ncols;
    bool overflow;
};

json_object *tf_sql_column_json(sqlite3_stmt *st, int col)
{
    switch (sqlite3_column_type(st, col)) {
    case SQLITE_INTEGER:
        return json_object_new_int64(sqlite3_column_int64(st, col));
    case SQLITE_FLOAT:
        return json_object_new_double(sqlite3_column_double(st, col));
    case SQLITE_NULL:
        return NULL;
    default:
        return json_object_new_string((const char *)sqlite3_column_text(st, col));
    }
}

static int on_row(void *arg, sqlite3_stmt *st, int64_t row)
{
    struct collect *c = arg;
    if (row < 0) {
        c->ncols = sqlite3_column_count(st);
        for (int i = 0; i < c->ncols; i++)
            json_object_array_add(c->names, json_object_new_string(sqlite3_column_name(st, i)));
        return 0;
    }
    if (row >= c->max_rows) {
        c->overflow = true;
        return TF_ERANGE;
    }
    json_object *r = json_object_new_array_ext(c->ncols);
    if (!r)
        return TF_ENOMEM;
    for (int i = 0; i < c->ncols; i++)
        json_object_array_add(r, tf_sql_column_json(st, i));
    json_object_array_add(c->rows, r);
    return 0;
}

int tf_sql_query_json(const char *dbpath, const char *sql, int64_t max_rows, json_object **doc,
                      json_object **names, json_object **rows, char *err, size_t errlen)
{
    *doc = json_object_new_object();
    struct collect c = {json_object_new_array(), json_object_new_array(), max_rows, 0, false};
    json_object_object_add(*doc, "names", c.names);
    json_object_object_add(*doc, "rows", c.rows);
    int rc = tf_sql_query(dbpath, sql, on_row, &c, NULL, err, errlen);
    if (c.overflow)
        tf_errf(err, errlen, "more than %lld rows", (long long)max_rows);
    if (rc) {
        json_object_put(*doc);
        *doc = *names = *rows = NULL;
        return rc;
    }
    *names = c.names;
    *rows = c.rows;
    return 0;
}
