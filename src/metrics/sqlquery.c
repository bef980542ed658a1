/* SPDX-License-Identifier: Apache-2.0
 *
 * GreptimeDB-flavoured SQL on SQLite: interval translation and helper functions (see
 * sqlquery.h).
 */
#include "metrics/sqlquery.h"

#include "common/err.h"
#include "common/strutil.h"

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static const struct {
    const char *name;
    int64_t ms;
} units[] = {
    {"ms", 1},          {"msec", 1},        {"millisecond", 1},  {"milliseconds", 1},
    {"s", 1000},        {"sec", 1000},      {"secs", 1000},      {"second", 1000},
    {"seconds", 1000},  {"m", 60000},       {"min", 60000},      {"mins", 60000},
    {"minute", 60000},  {"minutes", 60000}, {"h", 3600000},      {"hr", 3600000},
    {"hour", 3600000},  {"hours", 3600000}, {"d", 86400000},     {"day", 86400000},
    {"days", 86400000}, {"w", 604800000},   {"week", 604800000}, {"weeks", 604800000},
};

int tf_sql_duration_ms(const char *s, size_t len, int64_t *ms, char *err, size_t errlen)
{
    size_t i = 0;
    int64_t total = 0;
    int terms = 0;
    for (;;) {
        while (i < len && isspace((unsigned char)s[i]))
            i++;
        if (i == len)
            break;
        if (!isdigit((unsigned char)s[i])) {
            tf_errf(err, errlen, "interval '%.*s': expected a number at offset %zu", (int)len, s,
                    i);
            return TF_EPARSE;
        }
        int64_t n = 0;
        while (i < len && isdigit((unsigned char)s[i])) {
            if (n > (INT64_MAX - 9) / 10) {
                tf_errf(err, errlen, "interval '%.*s': number too large", (int)len, s);
                return TF_ERANGE;
            }
            n = n * 10 + (s[i++] - '0');
        }
        while (i < len && isspace((unsigned char)s[i]))
            i++;
        size_t u = i;
        while (i < len && isalpha((unsigned char)s[i]))
            i++;
        if (u == i) {
            tf_errf(err, errlen, "interval '%.*s': missing unit after %lld", (int)len, s,
                    (long long)n);
            return TF_EPARSE;
        }
        int64_t mult = 0;
        for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
            if (strlen(units[k].name) == i - u && !strncasecmp(units[k].name, s + u, i - u))
                mult = units[k].ms;
        if (!mult) {
            tf_errf(err, errlen,
                    "interval '%.*s': unsupported unit \"%.*s\" (use ms, s, m, h, d or w; months "
                    "and years have no fixed length)",
                    (int)len, s, (int)(i - u), s + u);
            return TF_EPARSE;
        }
        if (n > (INT64_MAX - total) / mult) {
            tf_errf(err, errlen, "interval '%.*s': too long", (int)len, s);
            return TF_ERANGE;
        }
        total += n * mult;
        terms++;
    }
    if (!terms) {
        tf_errf(err, errlen, "interval '%.*s': empty", (int)len, s);
        return TF_EPARSE;
    }
    *ms = total;
    return 0;
}

struct tok {
    const char *sql;
    size_t pos;
    struct tf_dynbuf *out;
    char *err;
    size_t errlen;
};

static void skip_ws(const char *s, size_t *p)
{
    while (s[*p] && isspace((unsigned char)s[*p]))
        (*p)++;
}

static bool ident_start(char c)
{
    return isalpha((unsigned char)c) || c == '_';
}

static bool ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$';
}

/* Reads a '...' literal starting at *P; unescaped content into LIT (bounded). Returns the end
 * position (after the closing quote) or 0 when unterminated. */
static size_t read_literal(const char *s, size_t p, char *lit, size_t litcap, size_t *litlen)
{
    size_t n = 0;
    for (p++; s[p]; p++) {
        if (s[p] == '\'') {
            if (s[p + 1] == '\'') {
                p++;
            } else {
                if (n < litcap)
                    lit[n] = '\0';
                *litlen = n;
                return p + 1;
            }
        }
        if (n + 1 < litcap)
            lit[n] = s[p];
        n++;
    }
    return 0;
}

static int emit_interval(struct tok *t, const char *lit, size_t litlen, size_t at)
{
    int64_t ms;
    char derr[200];
    int rc = tf_sql_duration_ms(lit, litlen, &ms, derr, sizeof(derr));
    if (rc) {
        tf_errf(t->err, t->errlen, "position %zu: %s", at + 1, derr);
        return rc;
    }
    return tf_dynbuf_addf(t->out, "%lld", (long long)ms);
}

static bool is_word(const char *s, size_t p, size_t n, const char *w)
{
    return strlen(w) == n && !strncasecmp(s + p, w, n);
}

int tf_sql_translate(const char *sql, struct tf_dynbuf *out, char *err, size_t errlen)
{
    struct tok t = {sql, 0, out, err, errlen};
    const char *s = sql;
    size_t p = 0;
    int rc = 0;
    char lit[128];
    size_t litlen;
    while (!rc && s[p]) {
        char c = s[p];
        if (c == '\'') {
            size_t end = read_literal(s, p, lit, sizeof(lit), &litlen);
            if (!end) {
                tf_errf(err, errlen, "position %zu: unterminated string literal", p + 1);
                return TF_EPARSE;
            }
            size_t q = end;
            skip_ws(s, &q);
            if (s[q] == ':' && s[q + 1] == ':') {
                q += 2;
                skip_ws(s, &q);
                size_t w = q;
                while (ident_char(s[q]))
                    q++;
                if (!is_word(s, w, q - w, "interval")) {
                    tf_errf(err, errlen,
                            "position %zu: '::%.*s' casts are not supported (only "
                            "'<duration>'::INTERVAL; write CAST(x AS type))",
                            w + 1, (int)(q - w), s + w);
                    return TF_EPARSE;
                }
                if (litlen >= sizeof(lit)) {
                    tf_errf(err, errlen, "position %zu: interval literal too long", p + 1);
                    return TF_EPARSE;
                }
                rc = emit_interval(&t, lit, litlen, p);
                p = q;
            } else {
                rc = tf_dynbuf_add(out, s + p, end - p);
                p = end;
            }
        } else if (c == '"' || c == '`') {
            size_t q = p + 1;
            while (s[q] && !(s[q] == c && s[q + 1] != c))
                q += s[q] == c ? 2 : 1;
            if (!s[q]) {
                tf_errf(err, errlen, "position %zu: unterminated quoted identifier", p + 1);
                return TF_EPARSE;
            }
            rc = tf_dynbuf_add(out, s + p, q + 1 - p);
            p = q + 1;
        } else if (c == '-' && s[p + 1] == '-') {
            size_t q = p;
            while (s[q] && s[q] != '\n')
                q++;
            rc = tf_dynbuf_add(out, s + p, q - p);
            p = q;
        } else if (c == '/' && s[p + 1] == '*') {
            const char *e = strstr(s + p + 2, "*/");
            if (!e) {
                tf_errf(err, errlen, "position %zu: unterminated comment", p + 1);
                return TF_EPARSE;
            }
            size_t q = (size_t)(e - s) + 2;
            rc = tf_dynbuf_add(out, s + p, q - p);
            p = q;
        } else if (ident_start(c)) {
            size_t q = p;
            while (ident_char(s[q]))
                q++;
            size_t r = q;
            skip_ws(s, &r);
            if (is_word(s, p, q - p, "interval") && s[r] == '\'') {
                size_t end = read_literal(s, r, lit, sizeof(lit), &litlen);
                if (!end) {
                    tf_errf(err, errlen, "position %zu: unterminated string literal", r + 1);
                    return TF_EPARSE;
                }
                if (litlen >= sizeof(lit)) {
                    tf_errf(err, errlen, "position %zu: interval literal too long", r + 1);
                    return TF_EPARSE;
                }
                rc = emit_interval(&t, lit, litlen, r);
                p = end;
            } else {
                rc = tf_dynbuf_add(out, s + p, q - p);
                p = q;
            }
        } else if (c == ':' && s[p + 1] == ':') {
            tf_errf(err, errlen,
                    "position %zu: '::' casts are not supported (only '<duration>'::INTERVAL; "
                    "write CAST(x AS type))",
                    p + 1);
            return TF_EPARSE;
        } else {
            rc = tf_dynbuf_addc(out, c);
            p++;
        }
    }
    if (rc == TF_ERANGE && err)
        tf_errf(err, errlen, "query too long");
    return rc;
}

static void fn_now(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    sqlite3_result_int64(ctx, (sqlite3_int64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

static void fn_date_bin(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    sqlite3_int64 w = sqlite3_value_int64(argv[0]);
    sqlite3_int64 ts = sqlite3_value_int64(argv[1]);
    sqlite3_int64 origin = argc > 2 ? sqlite3_value_int64(argv[2]) : 0;
    if (w <= 0) {
        sqlite3_result_error(ctx, "date_bin: the bucket width must be positive", -1);
        return;
    }
    sqlite3_int64 d = ts - origin;
    sqlite3_int64 b = d / w;
    if (d % w < 0)
        b--;
    sqlite3_result_int64(ctx, origin + b * w);
}

static void fn_to_unixtime(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
        sqlite3_result_null(ctx);
        return;
    }
    sqlite3_result_double(ctx, (double)sqlite3_value_int64(argv[0]) / 1000.0);
}

int tf_sql_register(sqlite3 *db)
{
    int rc = sqlite3_create_function(db, "now", 0, SQLITE_UTF8, NULL, fn_now, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(db, "date_bin", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                     fn_date_bin, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(db, "date_bin", 3, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                     fn_date_bin, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_create_function(db, "to_unixtime", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                     fn_to_unixtime, NULL, NULL);
    return rc;
}

int tf_sql_query(const char *dbpath, const char *sql, tf_sql_row_fn fn, void *arg, int64_t *rows,
                 char *err, size_t errlen)
{
    if (rows)
        *rows = 0;
    if (access(dbpath, F_OK) != 0) {
        tf_errf(err, errlen, "no metrics database at %s", dbpath);
        return TF_ENOENT;
    }
    struct tf_dynbuf q;
    tf_dynbuf_init(&q, 1 << 20);
    int rc = tf_sql_translate(sql, &q, err, errlen);
    if (rc) {
        tf_dynbuf_free(&q);
        return rc == TF_ERANGE ? rc : TF_EPARSE;
    }
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        tf_errf(err, errlen, "metrics db %s: %s", dbpath, db ? sqlite3_errmsg(db) : "cannot open");
        rc = TF_EIO;
        goto out;
    }
    sqlite3_busy_timeout(db, 5000);
    if (tf_sql_register(db) != SQLITE_OK) {
        tf_errf(err, errlen, "metrics db: cannot register SQL functions");
        rc = TF_EIO;
        goto out;
    }
    const char *tail = NULL;
    if (sqlite3_prepare_v2(db, tf_dynbuf_str(&q), (int)q.len, &st, &tail) != SQLITE_OK) {
        tf_errf(err, errlen, "%s", sqlite3_errmsg(db));
        rc = TF_EPARSE;
        goto out;
    }
    if (!st) {
        tf_errf(err, errlen, "empty query");
        rc = TF_EPARSE;
        goto out;
    }
    while (tail && *tail && (isspace((unsigned char)*tail) || *tail == ';'))
        tail++;
    if (tail && *tail) {
        tf_errf(err, errlen, "one statement at a time (extra text: %.40s)", tail);
        rc = TF_EPARSE;
        goto out;
    }
    if (!sqlite3_stmt_readonly(st)) {
        tf_errf(err, errlen, "only read-only queries are allowed");
        rc = TF_EPERM;
        goto out;
    }
    int64_t n = 0;
    int s;
    if (fn && (rc = fn(arg, st, -1)))
        goto out;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (fn && (rc = fn(arg, st, n)))
            goto out;
        n++;
    }
    if (s != SQLITE_DONE) {
        tf_errf(err, errlen, "%s", sqlite3_errmsg(db));
        rc = TF_EPARSE;
        goto out;
    }
    if (rows)
        *rows = n;
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
    tf_dynbuf_free(&q);
    return rc;
}
