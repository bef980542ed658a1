/* SPDX-License-Identifier: Apache-2.0
 *
 * Running the console's SQL on a store, reading the answers, and the time grid of series
 * (conint.h).
 */
#include "console/conint.h"

#include "common/err.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t tf__con_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

json_object *tf__con_error(const char *msg)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string(msg));
    return o;
}

int tf__con_query(const struct tf_con_store *st, json_object *warn, const char *what,
                  struct tf__con_rows *r, const char *fmt, ...)
{
    memset(r, 0, sizeof(*r));
    if (!st || !st->query)
        return TF_ENOENT;
    va_list ap;
    va_start(ap, fmt);
    char tmp[4096];
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return TF_ERANGE;
    char err[512] = "";
    int rc = st->query(st->arg, tmp, &r->doc, &r->names, &r->rows, err, sizeof(err));
    if (rc || !json_object_is_type(r->rows, json_type_array) ||
        !json_object_is_type(r->names, json_type_array)) {
        if (warn) {
            char msg[700];
            snprintf(msg, sizeof(msg), "%s: %s", what, err[0] ? err : "query failed");
            json_object_array_add(warn, json_object_new_string(msg));
        }
        json_object_put(r->doc);
        memset(r, 0, sizeof(*r));
        return rc ? rc : TF_EPROTO;
    }
    r->n = json_object_array_length(r->rows);
    return 0;
}

void tf__con_rows_free(struct tf__con_rows *r)
{
    json_object_put(r->doc);
    memset(r, 0, sizeof(*r));
}

int tf__con_col(const struct tf__con_rows *r, const char *name)
{
    size_t n = r->names ? json_object_array_length(r->names) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_object_get_string(json_object_array_get_idx(r->names, i));
        if (s && !strcmp(s, name))
            return (int)i;
    }
    return -1;
}

static json_object *cell(const struct tf__con_rows *r, size_t i, int c)
{
    if (c < 0 || i >= r->n)
        return NULL;
    json_object *row = json_object_array_get_idx(r->rows, i);
    if (!json_object_is_type(row, json_type_array) || (size_t)c >= json_object_array_length(row))
        return NULL;
    return json_object_array_get_idx(row, (size_t)c);
}

bool tf__con_num(const struct tf__con_rows *r, size_t i, int c, double *out)
{
    json_object *v = cell(r, i, c);
    if (json_object_is_type(v, json_type_int)) {
        *out = (double)json_object_get_int64(v);
        return true;
    }
    if (json_object_is_type(v, json_type_double)) {
        *out = json_object_get_double(v);
        return isfinite(*out);
    }
    if (json_object_is_type(v, json_type_boolean)) {
        *out = json_object_get_boolean(v) ? 1 : 0;
        return true;
    }
    return false;
}

const char *tf__con_str(const struct tf__con_rows *r, size_t i, int c)
{
    json_object *v = cell(r, i, c);
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
}

bool tf__con_ms(const struct tf__con_rows *r, size_t i, int c, int64_t *out)
{
    json_object *v = cell(r, i, c);
    if (json_object_is_type(v, json_type_int)) {
        *out = json_object_get_int64(v);
        return true;
    }
    if (!json_object_is_type(v, json_type_string))
        return false;
    /* RFC 3339 "YYYY-MM-DDTHH:MM:SS[.fff]Z" (or a space for the T). */
    struct tm tm = {0};
    int ms = 0;
    const char *s = json_object_get_string(v);
    if (sscanf(s, "%4d-%2d-%2d%*1[T ]%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
        return false;
    const char *dot = strchr(s, '.');
    if (dot)
        for (int k = 0, mul = 100; k < 3 && dot[1 + k] >= '0' && dot[1 + k] <= '9'; k++, mul /= 10)
            ms += (dot[1 + k] - '0') * mul;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *out = (int64_t)timegm(&tm) * 1000 + ms;
    return true;
}

void tf__con_grid_init(struct tf__con_grid *g, const struct tf_con_req *r, int64_t now_s)
{
    g->step_s = r->step_s > 0 ? r->step_s : 60;
    int64_t last = now_s / g->step_s * g->step_s;
    int64_t first = (now_s - r->range_s) / g->step_s * g->step_s;
    int64_t n = (last - first) / g->step_s + 1;
    if (n > TF_CON_MAX_POINTS + 1) {
        n = TF_CON_MAX_POINTS + 1;
        first = last - (n - 1) * g->step_s;
    }
    g->t0_s = first;
    g->n = (int)n;
}

int tf__con_grid_index(const struct tf__con_grid *g, int64_t ms)
{
    int64_t s = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    if (s < g->t0_s)
        return -1;
    int64_t i = (s - g->t0_s) / g->step_s;
    return i < g->n ? (int)i : -1;
}

json_object *tf__con_grid_times(const struct tf__con_grid *g)
{
    json_object *t = json_object_new_array_ext(g->n);
    for (int i = 0; i < g->n; i++)
        json_object_array_add(t, json_object_new_int64(g->t0_s + (int64_t)i * g->step_s));
    return t;
}

json_object *tf__con_grid_column(const struct tf__con_grid *g)
{
    json_object *c = json_object_new_array_ext(g->n);
    for (int i = 0; i < g->n; i++)
        json_object_array_add(c, NULL);
    return c;
}

void tf__con_grid_set(json_object *col, int idx, double v)
{
    if (idx >= 0 && (size_t)idx < json_object_array_length(col))
        json_object_array_put_idx(col, (size_t)idx, tf__con_dbl(v));
}

json_object *tf__con_dbl(double v)
{
    if (!isfinite(v))
        return NULL;
    if (v == floor(v) && fabs(v) < 9e15)
        return json_object_new_int64((int64_t)v);
    char b[32];
    snprintf(b, sizeof(b), "%.6g", v);
    if (strchr(b, 'e') || strchr(b, 'n') || strchr(b, 'i'))
        snprintf(b, sizeof(b), "%.6f", v);
    return json_object_new_double_s(v, b);
}

double tf__con_get_num(json_object *o, const char *key)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v))
        return 0;
    if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) {
        double d = json_object_get_double(v);
        return isfinite(d) ? d : 0;
    }
    return 0;
}

const char *tf__con_get_str(json_object *o, const char *key)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
        return "";
    return json_object_get_string(v);
}
