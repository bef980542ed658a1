/* SPDX-License-Identifier: Apache-2.0
 *
 * The GreptimeDB SQL dialect of seed 002 on SQLite: `tfctl query` runs the seed's queries
 * unchanged against the local metrics database.
 *
 * Translation (tf_sql_translate), done on tokens so string literals, quoted identifiers and
 * comments are never touched:
 *   '<duration>'::INTERVAL     -> the duration in milliseconds (an integer literal)
 *   INTERVAL '<duration>'      -> the same
 *   any other '::' cast        -> rejected with a message (write CAST(x AS type))
 * A duration is one or more "<number> <unit>" terms, e.g. '1d', '1 day', '2h30m', '90 seconds',
 * '1 week'; units: ms millisecond(s), s sec second(s), m min minute(s), h hour(s), d day(s),
 * w week(s) (case-insensitive). Months and years have no fixed length: rejected.
 *
 * SQL functions registered on the connection (tf_sql_register):
 *   now()                   current time, milliseconds since the epoch (the unit of
 *                           greptime_timestamp), so `greptime_timestamp >= now() - '1d'::INTERVAL`
 *                           compares milliseconds with milliseconds
 *   date_bin(ms, ts[, origin])  start of the ms-wide bucket holding ts (GreptimeDB's date_bin)
 *   to_unixtime(ts)         seconds since the epoch (ts in ms)
 *
 * Everything else is SQLite's own SQL (avg, max, GROUP BY, ORDER BY, LIMIT, ...).
 * Pure functions; thread-safe.
 */
#ifndef TF_METRICS_SQLQUERY_H
#define TF_METRICS_SQLQUERY_H

#include "common/dynbuf.h"

#include <json-c/json.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* Parses a duration string; 0 and *MS, or TF_EPARSE / TF_ERANGE with ERR set. */
int tf_sql_duration_ms(const char *s, size_t len, int64_t *ms, char *err, size_t errlen);

/* Appends the SQLite form of SQL to OUT. TF_EPARSE (unterminated literal or comment,
 * unsupported cast, bad duration) with ERR naming the problem and its position. */
int tf_sql_translate(const char *sql, struct tf_dynbuf *out, char *err, size_t errlen);

/* Registers now(), date_bin() and to_unixtime() on DB. Returns SQLITE_OK or an SQLite code. */
int tf_sql_register(sqlite3 *db);

/* Called once with ROW = -1 before the first row (ST prepared but not stepped: read the
 * column names with sqlite3_column_count/_name), then once per result row with ST positioned
 * on it (sqlite3_column_*; ROW is 0 for the first). A non-zero return stops the query and is
 * returned. */
typedef int (*tf_sql_row_fn)(void *arg, sqlite3_stmt *st, int64_t row);

/* Runs one statement of the dialect above on the database at DBPATH, opened read-only.
 * Returns 0 (ROWS set to the row count if non-NULL), TF_ENOENT (no database), TF_EPARSE
 * (translation or SQL error, with SQLite's message), TF_EIO, or FN's non-zero result. */
int tf_sql_query(const char *dbpath, const char *sql, tf_sql_row_fn fn, void *arg, int64_t *rows,
                 char *err, size_t errlen);

/* Column COL of the row ST is on as JSON: integer, double, string, or NULL for SQL NULL. */
json_object *tf_sql_column_json(sqlite3_stmt *st, int col);

/* Runs SQL as tf_sql_query does and collects the answer as JSON: *NAMES (column names) and
 * *ROWS (arrays of values: integers, doubles, strings, null), both owned by *DOC (caller puts
 * it). More than MAX_ROWS rows: TF_ERANGE. On failure *DOC is NULL. */
int tf_sql_query_json(const char *dbpath, const char *sql, int64_t max_rows, json_object **doc,
                      json_object **names, json_object **rows, char *err, size_t errlen);

#endif
