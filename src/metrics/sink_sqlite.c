/* SPDX-License-Identifier: Apache-2.0
 *
 * SQLite sink: one table per measurement, one column per tag (TEXT) and field (DOUBLE, BIGINT,
 * BOOLEAN or TEXT), plus greptime_timestamp (milliseconds, declared TIMESTAMP_MS). The seed 002
 * tables are created at open with all their columns, so the seed's queries work before the
 * first row; other measurements and extra columns are added when first written, as GreptimeDB
 * does. Integer fields whose name ends in "_bytes" are stored as DOUBLE so that the seed's
 * `max(memory_bytes) / 1073741824` gives fractional GiB instead of SQLite's integer division.
 * WAL mode: `tfctl query` reads while the hypervisor writes.
 */
#include "metrics/schema.h"
#include "metrics/sink.h"
#include "metrics/sqlquery.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct known_table {
    char *name;
    char **cols;
    size_t ncols;
};

struct sqlite_sink {
    struct tf_metrics_sink base;
    sqlite3 *db;
    int64_t retention_ms;
    int64_t last_prune_ms;
    struct known_table *tables;
    size_t ntables;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Appends NAME as a double-quoted SQL identifier. */
static int add_ident(struct tf_dynbuf *b, const char *name)
{
    int rc = tf_dynbuf_addc(b, '"');
    for (const char *c = name; !rc && *c; c++)
        rc = *c == '"' ? tf_dynbuf_adds(b, "\"\"") : tf_dynbuf_addc(b, *c);
    return rc ? rc : tf_dynbuf_addc(b, '"');
}

static int exec_sql(struct sqlite_sink *s, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        tf_errf(err, errlen, "metrics db: %s (in: %.120s)", msg ? msg : "error", sql);
        sqlite3_free(msg);
        return TF_EIO;
    }
    return 0;
}

static const char *sql_type(enum tf_lp_type t, const char *name)
{
    size_t n = strlen(name);
    switch (t) {
    case TF_LP_FLOAT:
        return "DOUBLE";
    case TF_LP_INT:
        return n > 6 && !strcmp(name + n - 6, "_bytes") ? "DOUBLE" : "BIGINT";
    case TF_LP_BOOL:
        return "BOOLEAN";
    case TF_LP_STRING:
        return "TEXT";
    }
    return "TEXT";
}

static struct known_table *find_table(struct sqlite_sink *s, const char *name)
{
    for (size_t i = 0; i < s->ntables; i++)
        if (!strcmp(s->tables[i].name, name))
            return &s->tables[i];
    return NULL;
}

static bool has_col(const struct known_table *t, const char *col)
{
    for (size_t i = 0; i < t->ncols; i++)
        if (!strcmp(t->cols[i], col))
            return true;
    return false;
}

static int remember_col(struct known_table *t, const char *col)
{
    char **c = realloc(t->cols, (t->ncols + 1) * sizeof(*c));
    if (!c)
        return TF_ENOMEM;
    t->cols = c;
    if (!(t->cols[t->ncols] = strdup(col)))
        return TF_ENOMEM;
    t->ncols++;
    return 0;
}

/* Loads the columns of table NAME (creating the table when absent). */
static int load_table(struct sqlite_sink *s, const char *name, struct known_table **out, char *err,
                      size_t errlen)
{
    if ((*out = find_table(s, name)))
        return 0;
    struct tf_dynbuf q;
    tf_dynbuf_init(&q, 4096);
    int rc = tf_dynbuf_adds(&q, "CREATE TABLE IF NOT EXISTS ");
    if (!rc)
        rc = add_ident(&q, name);
    if (!rc)
        rc = tf_dynbuf_adds(&q, " (" TF_METRICS_TS_COLUMN " TIMESTAMP_MS NOT NULL); CREATE INDEX "
                                "IF NOT EXISTS ");
    char idx[160];
    snprintf(idx, sizeof(idx), "%s_ts", name);
    if (!rc)
        rc = add_ident(&q, idx);
    if (!rc)
        rc = tf_dynbuf_adds(&q, " ON ");
    if (!rc)
        rc = add_ident(&q, name);
    if (!rc)
        rc = tf_dynbuf_adds(&q, " (" TF_METRICS_TS_COLUMN ")");
    if (!rc)
        rc = exec_sql(s, q.data, err, errlen);
    tf_dynbuf_free(&q);
    if (rc)
        return rc;
    struct known_table *tabs = realloc(s->tables, (s->ntables + 1) * sizeof(*tabs));
    if (!tabs)
        return TF_ENOMEM;
    s->tables = tabs;
    struct known_table *t = &s->tables[s->ntables];
    memset(t, 0, sizeof(*t));
    if (!(t->name = strdup(name)))
        return TF_ENOMEM;
    s->ntables++;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT name FROM pragma_table_info(?)", -1, &st, NULL)) {
        tf_errf(err, errlen, "metrics db: %s", sqlite3_errmsg(s->db));
        return TF_EIO;
    }
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    rc = 0;
    while (!rc && sqlite3_step(st) == SQLITE_ROW)
        rc = remember_col(t, (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    *out = t;
    return rc;
}

static int ensure_col(struct sqlite_sink *s, struct known_table *t, const char *col,
                      const char *type, char *err, size_t errlen)
{
    if (has_col(t, col))
        return 0;
    struct tf_dynbuf q;
    tf_dynbuf_init(&q, 1024);
    int rc = tf_dynbuf_adds(&q, "ALTER TABLE ");
    if (!rc)
        rc = add_ident(&q, t->name);
    if (!rc)
        rc = tf_dynbuf_adds(&q, " ADD COLUMN ");
    if (!rc)
        rc = add_ident(&q, col);
    if (!rc)
        rc = tf_dynbuf_addf(&q, " %s", type);
    if (!rc)
        rc = exec_sql(s, q.data, err, errlen);
    tf_dynbuf_free(&q);
    return rc ? rc : remember_col(t, col);
}

static int validate_name(const char *what, const char *n, char *err, size_t errlen)
{
    if (!n || !*n || strlen(n) > 128) {
        tf_errf(err, errlen, "%s name must be 1..128 characters", what);
        return TF_EINVAL;
    }
    if (!strcmp(n, TF_METRICS_TS_COLUMN)) {
        tf_errf(err, errlen, "%s name \"%s\" is reserved", what, n);
        return TF_EINVAL;
    }
    return 0;
}

static int insert_point(struct sqlite_sink *s, const struct tf_lp_point *p, char *err,
                        size_t errlen)
{
    int rc = validate_name("measurement", p->measurement, err, errlen);
    if (rc)
        return rc;
    if (p->nfields == 0) {
        tf_errf(err, errlen, "%s: a point needs at least one field", p->measurement);
        return TF_EINVAL;
    }
    struct known_table *t;
    if ((rc = load_table(s, p->measurement, &t, err, errlen)))
        return rc;
    for (size_t i = 0; i < p->ntags; i++) {
        if ((rc = validate_name("tag", p->tags[i].key, err, errlen)))
            return rc;
        if (p->tags[i].value && (rc = ensure_col(s, t, p->tags[i].key, "TEXT", err, errlen)))
            return rc;
    }
    for (size_t i = 0; i < p->nfields; i++) {
        const struct tf_lp_field *f = &p->fields[i];
        if ((rc = validate_name("field", f->key, err, errlen)))
            return rc;
        if (tf_lp_tag_get(p, f->key)) {
            tf_errf(err, errlen, "%s: \"%s\" is both a tag and a field", p->measurement, f->key);
            return TF_EINVAL;
        }
        if ((rc = ensure_col(s, t, f->key, sql_type(f->type, f->key), err, errlen)))
            return rc;
    }
    struct tf_dynbuf q;
    tf_dynbuf_init(&q, 16384);
    rc = tf_dynbuf_adds(&q, "INSERT INTO ");
    if (!rc)
        rc = add_ident(&q, p->measurement);
    if (!rc)
        rc = tf_dynbuf_adds(&q, " (" TF_METRICS_TS_COLUMN);
    size_t nvals = 1;
    for (size_t i = 0; !rc && i < p->ntags; i++) {
        if (!p->tags[i].value || !*p->tags[i].value)
            continue;
        rc = tf_dynbuf_addc(&q, ',');
        if (!rc)
            rc = add_ident(&q, p->tags[i].key);
        nvals++;
    }
    for (size_t i = 0; !rc && i < p->nfields; i++) {
        rc = tf_dynbuf_addc(&q, ',');
        if (!rc)
            rc = add_ident(&q, p->fields[i].key);
        nvals++;
    }
    if (!rc)
        rc = tf_dynbuf_adds(&q, ") VALUES (?");
    for (size_t i = 1; !rc && i < nvals; i++)
        rc = tf_dynbuf_adds(&q, ",?");
    if (!rc)
        rc = tf_dynbuf_addc(&q, ')');
    sqlite3_stmt *st = NULL;
    if (!rc && sqlite3_prepare_v2(s->db, q.data, (int)q.len, &st, NULL) != SQLITE_OK) {
        tf_errf(err, errlen, "metrics db: %s", sqlite3_errmsg(s->db));
        rc = TF_EIO;
    }
    tf_dynbuf_free(&q);
    if (rc)
        return rc;
    int k = 1;
    sqlite3_bind_int64(st, k++, p->ts_ms);
    for (size_t i = 0; i < p->ntags; i++)
        if (p->tags[i].value && *p->tags[i].value)
            sqlite3_bind_text(st, k++, p->tags[i].value, -1, SQLITE_STATIC);
    for (size_t i = 0; i < p->nfields; i++) {
        const struct tf_lp_field *f = &p->fields[i];
        switch (f->type) {
        case TF_LP_FLOAT:
            sqlite3_bind_double(st, k++, f->v.f);
            break;
        case TF_LP_INT:
            sqlite3_bind_int64(st, k++, f->v.i);
            break;
        case TF_LP_BOOL:
            sqlite3_bind_int(st, k++, f->v.b);
            break;
        case TF_LP_STRING:
            sqlite3_bind_text(st, k++, f->v.s, -1, SQLITE_STATIC);
            break;
        }
    }
    if (sqlite3_step(st) != SQLITE_DONE) {
        tf_errf(err, errlen, "metrics db insert into %s: %s", p->measurement,
                sqlite3_errmsg(s->db));
        rc = TF_EIO;
    }
    sqlite3_finalize(st);
    return rc;
}

static void prune(struct sqlite_sink *s)
{
    int64_t now = now_ms();
    if (s->retention_ms <= 0 || now - s->last_prune_ms < 60000)
        return;
    s->last_prune_ms = now;
    for (size_t i = 0; i < s->ntables; i++) {
        struct tf_dynbuf q;
        tf_dynbuf_init(&q, 1024);
        if (!tf_dynbuf_adds(&q, "DELETE FROM ") && !add_ident(&q, s->tables[i].name) &&
            !tf_dynbuf_addf(&q, " WHERE " TF_METRICS_TS_COLUMN " < %lld",
                            (long long)(now - s->retention_ms))) {
            char err[256];
            if (exec_sql(s, q.data, err, sizeof(err)))
                tf_log(TF_LOG_WARN, "metrics", "retention: %s", err);
        }
        tf_dynbuf_free(&q);
    }
}

/* Drops the column cache (after a rollback it may name columns that no longer exist). */
static void forget_tables(struct sqlite_sink *s)
{
    for (size_t i = 0; i < s->ntables; i++) {
        for (size_t j = 0; j < s->tables[i].ncols; j++)
            free(s->tables[i].cols[j]);
        free(s->tables[i].cols);
        free(s->tables[i].name);
    }
    free(s->tables);
    s->tables = NULL;
    s->ntables = 0;
}

static int sqlite_write(struct tf_metrics_sink *base, const struct tf_lp_point *pts, size_t n,
                        char *err, size_t errlen)
{
    struct sqlite_sink *s = (struct sqlite_sink *)base;
    int rc = exec_sql(s, "BEGIN IMMEDIATE", err, errlen);
    if (rc) {
        base->points_dropped += n;
        return rc;
    }
    int first_bad = 0;
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        char perr[256];
        int r = insert_point(s, &pts[i], perr, sizeof(perr));
        if (r) {
            base->points_dropped++;
            if (!first_bad) {
                first_bad = r;
                tf_errf(err, errlen, "point %zu: %s", i, perr);
            }
        } else {
            ok++;
        }
    }
    char cerr[256];
    if (exec_sql(s, "COMMIT", cerr, sizeof(cerr))) {
        (void)exec_sql(s, "ROLLBACK", NULL, 0);
        forget_tables(s);
        base->points_dropped += ok;
        tf_errf(err, errlen, "%s", cerr);
        return TF_EIO;
    }
    base->points_written += ok;
    prune(s);
    return first_bad;
}

static void sqlite_destroy(struct tf_metrics_sink *base)
{
    struct sqlite_sink *s = (struct sqlite_sink *)base;
    forget_tables(s);
    sqlite3_close(s->db);
    free(s);
}

static const struct tf_metrics_sink_ops sqlite_ops = {"sqlite", sqlite_write, NULL, sqlite_destroy,
                                                      NULL};

static int create_seed_tables(struct sqlite_sink *s, char *err, size_t errlen)
{
    int rc = exec_sql(s, "BEGIN IMMEDIATE", err, errlen);
    for (size_t i = 0; !rc && i < tf_metric_table_count(); i++) {
        const struct tf_metric_table *mt = tf_metric_table_at(i);
        struct known_table *t;
        rc = load_table(s, mt->name, &t, err, errlen);
        for (const char *const *tag = mt->tags; !rc && *tag; tag++)
            rc = ensure_col(s, t, *tag, "TEXT", err, errlen);
        for (size_t f = 0; !rc && f < mt->nfields; f++)
            rc = ensure_col(s, t, mt->fields[f].name,
                            sql_type(mt->fields[f].type, mt->fields[f].name), err, errlen);
    }
    if (rc) {
        (void)exec_sql(s, "ROLLBACK", NULL, 0);
        forget_tables(s);
        return rc;
    }
    return exec_sql(s, "COMMIT", err, errlen);
}

int tf_metrics_sqlite_sink_new(const char *path, const struct tf_metrics_sqlite_opts *opts,
                               struct tf_metrics_sink **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!path || !*path) {
        tf_errf(err, errlen, "metrics sqlite sink: empty path");
        return TF_EINVAL;
    }
    struct sqlite_sink *s = calloc(1, sizeof(*s));
    if (!s)
        return TF_ENOMEM;
    s->base.ops = &sqlite_ops;
    s->retention_ms = opts && opts->retention_ms ? opts->retention_ms : 30LL * 86400 * 1000;
    s->last_prune_ms = 0;
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        tf_errf(err, errlen, "metrics db %s: %s", path,
                s->db ? sqlite3_errmsg(s->db) : "cannot open");
        sqlite_destroy(&s->base);
        return TF_EIO;
    }
    sqlite3_busy_timeout(s->db, 5000);
    int rc = exec_sql(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", err, errlen);
    if (!rc && tf_sql_register(s->db) != SQLITE_OK) {
        tf_errf(err, errlen, "metrics db: cannot register SQL functions");
        rc = TF_EIO;
    }
    if (!rc)
        rc = create_seed_tables(s, err, errlen);
    if (rc) {
        sqlite_destroy(&s->base);
        return rc;
    }
    *out = &s->base;
    return 0;
}
