/* SPDX-License-Identifier: Apache-2.0
 *
 * CSV usage samples (see usage_csv.h).
 */
#include "core/usage_csv.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/strutil.h"
#include "core/quantity.h"
#include "core/timeutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLS 64
#define MAX_CELL 256

struct reader {
    const char *p, *end;
    size_t line;
};

/* Reads one cell into CELL; *EOL set at the end of a record. false on a syntax error. */
static bool cell(struct reader *r, char *cell, size_t cap, bool *eol, bool *toolong)
{
    size_t n = 0;
    *eol = false;
    *toolong = false;
    if (r->p < r->end && *r->p == '"') {
        r->p++;
        for (;;) {
            if (r->p >= r->end)
                return false; /* unterminated quote */
            char c = *r->p++;
            if (c == '"') {
                if (r->p < r->end && *r->p == '"') {
                    r->p++;
                } else {
                    break;
                }
            } else if (c == '\n') {
                r->line++;
            }
            if (n + 1 < cap)
                cell[n++] = c;
            else
                *toolong = true;
        }
    } else {
        while (r->p < r->end && *r->p != ',' && *r->p != '\n' && *r->p != '\r') {
            if (*r->p == '"')
                return false;
            if (n + 1 < cap)
                cell[n++] = *r->p;
            else
                *toolong = true;
            r->p++;
        }
    }
    cell[n] = 0;
    if (r->p >= r->end) {
        *eol = true;
        return true;
    }
    if (*r->p == ',') {
        r->p++;
        return true;
    }
    if (*r->p == '\r') {
        r->p++;
        if (r->p < r->end && *r->p != '\n')
            return false;
    }
    if (r->p < r->end && *r->p == '\n')
        r->p++;
    *eol = true;
    return true;
}

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = 0;
    size_t i = 0;
    while (s[i] == ' ' || s[i] == '\t')
        i++;
    if (i)
        memmove(s, s + i, n - i + 1);
}

static bool blank_line(const struct reader *r)
{
    const char *p = r->p;
    while (p < r->end && (*p == ' ' || *p == '\t' || *p == '\r'))
        p++;
    return p >= r->end || *p == '\n';
}

static void skip_line(struct reader *r)
{
    while (r->p < r->end && *r->p != '\n')
        r->p++;
    if (r->p < r->end)
        r->p++;
}

static int parse_time(const char *s, int64_t *out, char *err, size_t errlen, size_t line)
{
    char key[48];
    snprintf(key, sizeof(key), "line %zu: time", line);
    if (*s && strspn(s, "0123456789-") == strlen(s)) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (*end || v < TF_TIME_MIN_MS || v > TF_TIME_MAX_MS) {
            tf_errf(err, errlen, "%s: \"%s\" is not milliseconds since the epoch", key, s);
            return TF_ERANGE;
        }
        *out = v;
        return 0;
    }
    return tf_rfc3339_parse(s, out, key, err, errlen);
}

int tf_usage_csv_parse(const char *buf, size_t len, struct tf_usage_sample **out, size_t *n,
                       char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    struct reader r = {buf, buf + len, 1};
    char c[MAX_CELL];
    int tcol = -1, ccol = -1, vcol = -1, ncols = 0;
    bool eol = false, toolong;
    while (r.p < r.end && blank_line(&r)) {
        skip_line(&r);
        r.line++;
    }
    if (r.p >= r.end) {
        tf_errf(err, errlen,
                "usage CSV: empty (want a header line such as "
                "greptime_timestamp,compute_tflops,memory_bytes)");
        return TF_EINVAL;
    }
    /* Skip a UTF-8 byte order mark. */
    if (r.end - r.p >= 3 && !memcmp(r.p, "\xef\xbb\xbf", 3))
        r.p += 3;
    while (!eol) {
        if (!cell(&r, c, sizeof(c), &eol, &toolong)) {
            tf_errf(err, errlen, "usage CSV: line 1: malformed header");
            return TF_EPARSE;
        }
        if (ncols >= MAX_COLS) {
            tf_errf(err, errlen, "usage CSV: line 1: more than %d columns", MAX_COLS);
            return TF_ERANGE;
        }
        trim(c);
        if (!strcmp(c, "greptime_timestamp") || !strcmp(c, "timestamp") || !strcmp(c, "ts") ||
            !strcmp(c, "time"))
            tcol = tcol < 0 ? ncols : tcol;
        else if (!strcmp(c, "compute_tflops"))
            ccol = ncols;
        else if (!strcmp(c, "memory_bytes"))
            vcol = ncols;
        ncols++;
    }
    if (tcol < 0 || (ccol < 0 && vcol < 0)) {
        tf_errf(err, errlen,
                "usage CSV: line 1: the header needs a time column "
                "(greptime_timestamp) and compute_tflops and/or memory_bytes");
        return TF_EINVAL;
    }
    size_t cap = 0, cnt = 0;
    struct tf_usage_sample *v = NULL;
    int rc = 0;
    while (r.p < r.end) {
        r.line++;
        if (blank_line(&r)) {
            skip_line(&r);
            continue;
        }
        if (cnt >= TF_USAGE_CSV_MAX_ROWS) {
            tf_errf(err, errlen, "usage CSV: more than %d rows", TF_USAGE_CSV_MAX_ROWS);
            rc = TF_ERANGE;
            goto fail;
        }
        struct tf_usage_sample s = {0, -1, -1};
        bool have_t = false;
        size_t line = r.line;
        eol = false;
        for (int col = 0; !eol; col++) {
            if (!cell(&r, c, sizeof(c), &eol, &toolong)) {
                tf_errf(err, errlen, "usage CSV: line %zu: malformed field (quotes)", line);
                rc = TF_EPARSE;
                goto fail;
            }
            if (toolong) {
                tf_errf(err, errlen, "usage CSV: line %zu: column %d is too long", line, col + 1);
                rc = TF_ERANGE;
                goto fail;
            }
            trim(c);
            if (col == tcol && *c) {
                if ((rc = parse_time(c, &s.ts_ms, err, errlen, line)))
                    goto fail;
                have_t = true;
            } else if (col == ccol && *c) {
                char *end;
                double t = strtod(c, &end);
                if (*end || !(t >= 0) || t > 1e9) {
                    tf_errf(err, errlen,
                            "usage CSV: line %zu: compute_tflops \"%s\" is not a "
                            "number of TFLOPS",
                            line, c);
                    rc = TF_EPARSE;
                    goto fail;
                }
                s.tflops_milli = (int64_t)llround(t * 1000.0);
            } else if (col == vcol && *c) {
                char key[48];
                snprintf(key, sizeof(key), "line %zu: memory_bytes", line);
                /* Accept "3221225472.0" as printed for REAL columns. */
                size_t l = strlen(c);
                if (l > 2 && !strcmp(c + l - 2, ".0"))
                    c[l - 2] = 0;
                if ((rc = tf_quantity_bytes(c, &s.vram_bytes, key, err, errlen)))
                    goto fail;
            }
        }
        if (!have_t) {
            tf_errf(err, errlen, "usage CSV: line %zu: no time", line);
            rc = TF_EINVAL;
            goto fail;
        }
        struct tf_usage_sample *nv = tf_grow(v, &cap, cnt + 1, sizeof(*nv), 256);
        if (!nv) {
            tf_errf(err, errlen, "usage CSV: out of memory");
            rc = TF_ENOMEM;
            goto fail;
        }
        v = nv;
        v[cnt++] = s;
    }
    *out = v;
    *n = cnt;
    return 0;
fail:
    free(v);
    return rc;
}
