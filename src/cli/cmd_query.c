/* SPDX-License-Identifier: Apache-2.0
 *
 * `tfctl query [--db PATH] [-o table|csv|json] SQL`: runs a GreptimeDB-style query (seed 002:
 * `greptime_timestamp >= now() - '1d'::INTERVAL` and all, see src/metrics/sqlquery.h) on the
 * local metrics database (<state dir>/metrics.db by default). Columns declared TIMESTAMP_MS
 * (greptime_timestamp) print as ISO-8601 UTC in tables.
 */
#include "cli/cmds.h"

#include "common/err.h"
#include "hypervisor/paths.h"
#include "metrics/sqlquery.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

enum fmt { F_TABLE, F_CSV, F_JSON };

struct out {
    enum fmt fmt;
    int ncols;
    char **cells; /* rows x ncols, owned */
    size_t nrows, cap;
    char *names[64];
    int width[64];
    json_object *json;
};

static char *cell_text(sqlite3_stmt *st, int c, enum fmt fmt)
{
    char buf[64];
    int t = sqlite3_column_type(st, c);
    if (t == SQLITE_NULL)
        return strdup(fmt == F_TABLE ? "NULL" : "");
    const char *decl = sqlite3_column_decltype(st, c);
    if (fmt != F_JSON && t == SQLITE_INTEGER && decl && !strcasecmp(decl, "TIMESTAMP_MS")) {
        long long ms = sqlite3_column_int64(st, c);
        time_t s = (time_t)(ms / 1000);
        struct tm tm;
        gmtime_r(&s, &tm);
        size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + n, sizeof(buf) - n, ".%03lldZ", ms % 1000);
        return strdup(buf);
    }
    if (t == SQLITE_FLOAT) {
        snprintf(buf, sizeof(buf), "%.6g", sqlite3_column_double(st, c));
        return strdup(buf);
    }
    const unsigned char *s = sqlite3_column_text(st, c);
    return strdup(s ? (const char *)s : "");
}

static int on_row(void *arg, sqlite3_stmt *st, int64_t row)
{
    struct out *o = arg;
    if (row < 0) {
        o->ncols = sqlite3_column_count(st);
        if (o->ncols > 64)
            o->ncols = 64;
        for (int c = 0; c < o->ncols; c++) {
            o->names[c] = strdup(sqlite3_column_name(st, c));
            o->width[c] = (int)strlen(o->names[c]);
        }
        return 0;
    }
    if (o->fmt == F_JSON) {
        json_object *r = json_object_new_object();
        for (int c = 0; c < o->ncols; c++)
            json_object_object_add(r, o->names[c], tf_sql_column_json(st, c));
        json_object_array_add(o->json, r);
        return 0;
    }
    if (o->nrows == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 64;
        char **p = realloc(o->cells, o->cap * (size_t)o->ncols * sizeof(*p));
        if (!p)
            return TF_ENOMEM;
        o->cells = p;
    }
    for (int c = 0; c < o->ncols; c++) {
        char *t = cell_text(st, c, o->fmt);
        o->cells[o->nrows * (size_t)o->ncols + (size_t)c] = t;
        if (t && (int)strlen(t) > o->width[c])
            o->width[c] = (int)strlen(t);
    }
    o->nrows++;
    return 0;
}

static void csv_field(const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, stdout);
        return;
    }
    putchar('"');
    for (; *s; s++) {
        if (*s == '"')
            putchar('"');
        putchar(*s);
    }
    putchar('"');
}

int tf_cmd_query(int argc, char **argv)
{
    const char *db = NULL, *sql = NULL;
    struct out o;
    memset(&o, 0, sizeof(o));
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--db") && i + 1 < argc) {
            db = argv[++i];
        } else if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc) {
            const char *f = argv[++i];
            if (!strcmp(f, "table"))
                o.fmt = F_TABLE;
            else if (!strcmp(f, "csv"))
                o.fmt = F_CSV;
            else if (!strcmp(f, "json"))
                o.fmt = F_JSON;
            else {
                fprintf(stderr, "tfctl query: -o %s: expected table, csv or json\n", f);
                return 2;
            }
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: tfctl query [--db PATH] [-o table|csv|json] \"SQL\"\n"
                   "Tables: tf_gpu_usage tf_worker_usage tf_worker_resources tf_node_metrics\n"
                   "        tf_pool_metrics tf_system_metrics (see docs/metrics.md)\n");
            return 0;
        } else if (!sql) {
            sql = argv[i];
        } else {
            fprintf(stderr, "tfctl query: one SQL argument expected (quote it)\n");
            return 2;
        }
    }
    if (!sql) {
        fprintf(stderr, "usage: tfctl query [--db PATH] [-o table|csv|json] \"SQL\"\n");
        return 2;
    }
    char path[600];
    if (!db) {
        char dir[512];
        if (tf_hv_state_dir(dir, sizeof(dir))) {
            fprintf(stderr, "tfctl query: cannot determine the state directory; use --db\n");
            return 2;
        }
        snprintf(path, sizeof(path), "%s/metrics.db", dir);
        db = path;
    }
    if (o.fmt == F_JSON)
        o.json = json_object_new_array();
    char err[512] = "";
    int64_t rows = 0;
    int rc = tf_sql_query(db, sql, on_row, &o, &rows, err, sizeof(err));
    int code = 0;
    if (rc) {
        fprintf(stderr, "tfctl query: %s\n", err);
        code = rc == TF_ENOENT || rc == TF_EIO ? 1 : 2;
    } else if (o.fmt == F_JSON) {
        printf("%s\n", json_object_to_json_string_ext(o.json, JSON_C_TO_STRING_PRETTY));
    } else {
        for (int c = 0; c < o.ncols; c++) {
            if (o.fmt == F_CSV) {
                if (c)
                    putchar(',');
                csv_field(o.names[c]);
            } else {
                printf("%s%-*s", c ? "  " : "", o.width[c], o.names[c]);
            }
        }
        if (o.ncols)
            putchar('\n');
        for (size_t r = 0; r < o.nrows; r++) {
            for (int c = 0; c < o.ncols; c++) {
                const char *t = o.cells[r * (size_t)o.ncols + (size_t)c];
                if (o.fmt == F_CSV) {
                    if (c)
                        putchar(',');
                    csv_field(t ? t : "");
                } else {
                    printf("%s%-*s", c ? "  " : "", o.width[c], t ? t : "");
                }
            }
            putchar('\n');
        }
        if (o.fmt == F_TABLE)
            printf("(%lld row%s)\n", (long long)rows, rows == 1 ? "" : "s");
    }
    for (size_t i = 0; i < o.nrows * (size_t)o.ncols; i++)
        free(o.cells[i]);
    free(o.cells);
    for (int c = 0; c < o.ncols; c++)
        free(o.names[c]);
    json_object_put(o.json);
    return code;
}
