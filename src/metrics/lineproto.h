/* SPDX-License-Identifier: Apache-2.0
 *
 * InfluxDB line protocol: one point per line,
 *   measurement[,tag=value...] field=value[,field=value...] timestamp_ms
 * as GreptimeDB (/v1/influxdb/api/v2/write?precision=ms) and InfluxDB 1.x (/write) accept it.
 *
 * Encoding rules (the parser accepts everything the encoder writes, so parse(encode(p)) is p
 * without its empty-valued tags for every point the encoder accepts):
 *   - measurement: "," and " " are escaped with a backslash;
 *   - tag keys, tag values, field keys: ",", "=" and " " are escaped;
 *   - string field values: double-quoted, with "\"" and "\\" escaped;
 *   - floats: shortest decimal that reads back to the same double ("0.1", "1", "2.5e-07");
 *     integers get the "i" suffix; booleans are "true"/"false";
 *   - a tag with an empty value is left out (line protocol cannot carry it);
 *   - rejected with TF_EINVAL: empty measurement or keys, a measurement starting with "#",
 *     backslashes outside string values, control characters (incl. newline) anywhere,
 *     NaN/Inf floats, no fields at all.
 * Timestamps are milliseconds since the Unix epoch.
 *
 * A struct tf_lp_point borrows every string it points to (the caller keeps them alive while
 * the point is used). All functions are pure and thread-safe.
 */
#ifndef TF_METRICS_LINEPROTO_H
#define TF_METRICS_LINEPROTO_H

#include "common/dynbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_LP_MAX_TAGS 32
#define TF_LP_MAX_FIELDS 32
#define TF_LP_MAX_LINE 65536

enum tf_lp_type { TF_LP_FLOAT, TF_LP_INT, TF_LP_BOOL, TF_LP_STRING };

struct tf_lp_tag {
    const char *key;
    const char *value;
};

struct tf_lp_field {
    const char *key;
    enum tf_lp_type type;
    union {
        double f;
        int64_t i;
        bool b;
        const char *s;
    } v;
};

struct tf_lp_point {
    const char *measurement;
    struct tf_lp_tag tags[TF_LP_MAX_TAGS];
    size_t ntags;
    struct tf_lp_field fields[TF_LP_MAX_FIELDS];
    size_t nfields;
    int64_t ts_ms;
};

/* Starts a point (no tags, no fields). */
void tf_lp_point_init(struct tf_lp_point *p, const char *measurement, int64_t ts_ms);
/* Adds a tag / field; TF_ERANGE when the point is full. Values are validated by encode. */
int tf_lp_tag(struct tf_lp_point *p, const char *key, const char *value);
int tf_lp_float(struct tf_lp_point *p, const char *key, double v);
int tf_lp_int(struct tf_lp_point *p, const char *key, int64_t v);
int tf_lp_bool(struct tf_lp_point *p, const char *key, bool v);
int tf_lp_string(struct tf_lp_point *p, const char *key, const char *v);

/* The field named KEY, or NULL. */
const struct tf_lp_field *tf_lp_field_get(const struct tf_lp_point *p, const char *key);
/* The value of tag KEY, or NULL. */
const char *tf_lp_tag_get(const struct tf_lp_point *p, const char *key);

/* Appends P as one line (with the trailing "\n") to OUT. On error nothing is appended and
 * ERR names the bad element: TF_EINVAL (invalid point), TF_ERANGE (OUT full or line longer
 * than TF_LP_MAX_LINE), TF_ENOMEM. */
int tf_lp_encode(const struct tf_lp_point *p, struct tf_dynbuf *out, char *err, size_t errlen);

/* Parses one line LINE[0..LEN) (no newline inside; a trailing "\n" or "\r\n" is allowed) into
 * P. Unescaped strings are written into SCRATCH (capacity SCRATCHLEN; LEN + 1 is always
 * enough) and P points into it. A missing timestamp leaves P->ts_ms = DEFAULT_TS.
 * Returns 0, TF_EPARSE with "column C: problem" in ERR, or TF_ERANGE (too many tags/fields,
 * scratch too small, number out of range). */
int tf_lp_parse(const char *line, size_t len, int64_t default_ts, struct tf_lp_point *p,
                char *scratch, size_t scratchlen, char *err, size_t errlen);

/* True when A and B have the same measurement, non-empty tags and fields (in order, with equal
 * types and values; floats compared bit-exactly) and timestamp. */
bool tf_lp_point_equal(const struct tf_lp_point *a, const struct tf_lp_point *b);

#endif
