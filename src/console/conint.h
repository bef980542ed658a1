/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to src/console: running the views' SQL on the store, reading answer rows, the
 * time grid series are laid on, and JSON number helpers.
 */
#ifndef TF_CONSOLE_CONINT_H
#define TF_CONSOLE_CONINT_H

#include "console/console.h"

#include <stdbool.h>

/* One answer: column names and rows, owned by DOC. */
struct tf__con_rows {
    json_object *doc, *names, *rows;
    size_t n;
};

/* Runs the printf-formatted SQL on ST. On failure (or without a store) adds a warning naming
 * WHAT to WARN and leaves R empty (n = 0). Returns 0 when the query ran. */
int tf__con_query(const struct tf_con_store *st, json_object *warn, const char *what,
                  struct tf__con_rows *r, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void tf__con_rows_free(struct tf__con_rows *r);
/* Column index of NAME in R, or -1. */
int tf__con_col(const struct tf__con_rows *r, const char *name);
/* Row I, column C as a number (false when null, absent or not a number) / a string ("" when
 * not one). */
bool tf__con_num(const struct tf__con_rows *r, size_t i, int c, double *out);
const char *tf__con_str(const struct tf__con_rows *r, size_t i, int c);
/* A time value of row I column C (milliseconds: integers, or RFC 3339 strings). */
bool tf__con_ms(const struct tf__con_rows *r, size_t i, int c, int64_t *out);

/* The buckets of a series: N of STEP_S seconds from T0_S (aligned to multiples of STEP_S,
 * as date_bin aligns them), the last one holding now. */
struct tf__con_grid {
    int64_t t0_s, step_s;
    int n;
};
void tf__con_grid_init(struct tf__con_grid *g, const struct tf_con_req *r, int64_t now_s);
/* Bucket index of a bucket start in ms, or -1 when outside. */
int tf__con_grid_index(const struct tf__con_grid *g, int64_t ms);
/* {"t": [bucket starts in seconds]} */
json_object *tf__con_grid_times(const struct tf__con_grid *g);
/* An array of G->n nulls. */
json_object *tf__con_grid_column(const struct tf__con_grid *g);
/* Sets element IDX of COL to V (rounded as tf__con_dbl). */
void tf__con_grid_set(json_object *col, int idx, double v);

/* A JSON number with 6 significant digits (null for NaN and infinities). */
json_object *tf__con_dbl(double v);
/* Member KEY of O as a number (0 when absent or not a number). */
double tf__con_get_num(json_object *o, const char *key);
/* Member KEY of O as a string ("" when absent). */
const char *tf__con_get_str(json_object *o, const char *key);
/* The SQL range condition: "greptime_timestamp >= now() - 'N seconds'::INTERVAL". */
#define TF__CON_SINCE "greptime_timestamp >= now() - '%lld seconds'::INTERVAL"
/* The bucket expression (twice the step argument). */
#define TF__CON_BIN "date_bin('%lld seconds'::INTERVAL, greptime_timestamp)"

json_object *tf__con_error(const char *msg);
int64_t tf__con_now_ms(void);

#endif
