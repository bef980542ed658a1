/* SPDX-License-Identifier: Apache-2.0
 *
 * Alert rules: parsing, templates, firing / resolved bookkeeping (see alertrules.h).
 */
#include "controller/alertrules.h"

#include "common/err.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/timeutil.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tf_alert_rules_free(struct tf_alert_rule *r, size_t n)
{
    for (size_t i = 0; r && i < n; i++) {
        free(r[i].name);
        free(r[i].query);
        free(r[i].severity);
        free(r[i].summary);
        free(r[i].description);
        free(r[i].instance);
        free(r[i].runbook);
    }
    free(r);
}

/* Checks that every action of TMPL is "{{ .Key }}". */
static int check_template(const char *tmpl, const char *path, char *err, size_t errlen)
{
    json_object *empty = json_object_new_object();
    struct tf_dynbuf b;
    tf_dynbuf_init(&b, 1 << 20);
    char e[200];
    int rc = tf_alert_render(tmpl, empty, &b, e, sizeof(e));
    if (rc)
        tf_errf(err, errlen, "%s: %s", path, e);
    tf_dynbuf_free(&b);
    json_object_put(empty);
    return rc;
}

static int str_member(json_object *o, const char *key, const char *path, const char *dflt,
                      bool tmpl, char **out, char *err, size_t errlen)
{
    json_object *v = NULL;
    char p[160];
    snprintf(p, sizeof(p), "%s.%s", path, key);
    if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) {
        if (!dflt) {
            tf_errf(err, errlen, "%s: required", p);
            return TF_EINVAL;
        }
        *out = strdup(dflt);
    } else if (!json_object_is_type(v, json_type_string)) {
        tf_errf(err, errlen, "%s: expected a string", p);
        return TF_EINVAL;
    } else {
        *out = strdup(json_object_get_string(v));
    }
    if (!*out)
        return TF_ENOMEM;
    return tmpl ? check_template(*out, p, err, errlen) : 0;
}

static int parse_one(json_object *o, const char *path, struct tf_alert_rule *r, char *err,
                     size_t errlen)
{
    static const char *const keys[] = {
        "name",     "query",   "threshold",   "evaluationInterval",  "consecutiveCount",
        "severity", "summary", "description", "alertTargetInstance", "runbookURL",
        NULL};
    if (!json_object_is_type(o, json_type_object)) {
        tf_errf(err, errlen, "%s: expected an object", path);
        return TF_EINVAL;
    }
    json_object_object_foreach(o, k, unused)
    {
        (void)unused;
        bool known = false;
        for (size_t i = 0; keys[i] && !known; i++)
            known = strcmp(k, keys[i]) == 0;
        if (!known) {
            tf_errf(err, errlen, "%s.%s: unknown field", path, k);
            return TF_EINVAL;
        }
    }
    int rc;
    if ((rc = str_member(o, "name", path, NULL, false, &r->name, err, errlen)) ||
        (rc = str_member(o, "query", path, NULL, true, &r->query, err, errlen)) ||
        (rc = str_member(o, "severity", path, "P1", false, &r->severity, err, errlen)) ||
        (rc = str_member(o, "summary", path, "", true, &r->summary, err, errlen)) ||
        (rc = str_member(o, "description", path, "", true, &r->description, err, errlen)) ||
        (rc = str_member(o, "alertTargetInstance", path, r->name, true, &r->instance, err,
                         errlen)) ||
        (rc = str_member(o, "runbookURL", path, "", false, &r->runbook, err, errlen)))
        return rc;
    if (!*r->name) {
        tf_errf(err, errlen, "%s.name: empty", path);
        return TF_EINVAL;
    }
    json_object *v;
    r->threshold = 0;
    if (json_object_object_get_ex(o, "threshold", &v)) {
        if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)) {
            tf_errf(err, errlen, "%s.threshold: expected a number", path);
            return TF_EINVAL;
        }
        r->threshold = json_object_get_double(v);
        if (!isfinite(r->threshold)) {
            tf_errf(err, errlen, "%s.threshold: not a finite number", path);
            return TF_EINVAL;
        }
    }
    r->interval_ms = 60000;
    if (json_object_object_get_ex(o, "evaluationInterval", &v)) {
        char p[160];
        snprintf(p, sizeof(p), "%s.evaluationInterval", path);
        const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
        if ((rc = tf_duration_parse(s, &r->interval_ms, p, err, errlen)))
            return rc;
        if (r->interval_ms < 1000 || r->interval_ms > 86400000 || r->interval_ms % 1000) {
            tf_errf(err, errlen, "%s: %s is not whole seconds between 1s and 24h", p, s);
            return TF_EINVAL;
        }
    }
    r->consecutive = 1;
    if (json_object_object_get_ex(o, "consecutiveCount", &v)) {
        int64_t c = json_object_get_int64(v);
        if (!json_object_is_type(v, json_type_int) || c < 1 || c > 1000) {
            tf_errf(err, errlen, "%s.consecutiveCount: expected an integer 1..1000", path);
            return TF_EINVAL;
        }
        r->consecutive = (int)c;
    }
    return 0;
}

int tf_alert_rules_parse(json_object *arr, struct tf_alert_rule **out, size_t *n, char *err,
                         size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (!arr || json_object_is_type(arr, json_type_null))
        return 0;
    if (!json_object_is_type(arr, json_type_array)) {
        tf_errf(err, errlen, "alertRules: expected a list");
        return TF_EINVAL;
    }
    size_t cnt = json_object_array_length(arr);
    struct tf_alert_rule *r = cnt ? calloc(cnt, sizeof(*r)) : NULL;
    if (cnt && !r)
        return TF_ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        char path[64];
        snprintf(path, sizeof(path), "alertRules[%zu]", i);
        int rc = parse_one(json_object_array_get_idx(arr, i), path, &r[i], err, errlen);
        for (size_t j = 0; !rc && j < i; j++)
            if (strcmp(r[j].name, r[i].name) == 0) {
                tf_errf(err, errlen, "%s.name: %s is also alertRules[%zu]", path, r[i].name, j);
                rc = TF_EINVAL;
            }
        if (rc) {
            tf_alert_rules_free(r, cnt);
            return rc;
        }
    }
    *out = r;
    *n = cnt;
    return 0;
}

/* ---- templates ----------------------------------------------------------------------------- */

/* Go's %v of a float64: the shortest decimal that reads back, exponent form from 1e21. */
static void go_float(double d, char *buf, size_t len)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, fabs(d) >= 1e21 || (d != 0 && fabs(d) < 1e-4) ? "%.*e" : "%.*g",
                 fabs(d) >= 1e21 || (d != 0 && fabs(d) < 1e-4) ? prec - 1 : prec, d);
        if (strtod(buf, NULL) == d)
            return;
    }
}

static void value_text(json_object *v, struct tf_dynbuf *out)
{
    char buf[64];
    if (!v || json_object_is_type(v, json_type_null)) {
        tf_dynbuf_adds(out, "<no value>");
    } else if (json_object_is_type(v, json_type_double)) {
        go_float(json_object_get_double(v), buf, sizeof(buf));
        tf_dynbuf_adds(out, buf);
    } else if (json_object_is_type(v, json_type_boolean)) {
        tf_dynbuf_adds(out, json_object_get_boolean(v) ? "true" : "false");
    } else {
        tf_dynbuf_adds(out, json_object_get_string(v));
    }
}

int tf_alert_render(const char *tmpl, json_object *data, struct tf_dynbuf *out, char *err,
                    size_t errlen)
{
    const char *p = tmpl;
    for (;;) {
        const char *open = strstr(p, "{{");
        if (!open) {
            tf_dynbuf_adds(out, p);
            return 0;
        }
        tf_dynbuf_add(out, p, (size_t)(open - p));
        const char *close = strstr(open + 2, "}}");
        if (!close) {
            tf_errf(err, errlen, "unclosed action at offset %zu", (size_t)(open - tmpl));
            return TF_EINVAL;
        }
        const char *a = open + 2, *b = close;
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        bool ok = b - a >= 2 && *a == '.' && (isalpha((unsigned char)a[1]) || a[1] == '_');
        for (const char *c = a + 1; ok && c < b; c++)
            ok = isalnum((unsigned char)*c) || *c == '_';
        if (!ok) {
            tf_errf(err, errlen, "unsupported template action \"{{%.*s}}\": only {{ .Key }}",
                    (int)(close - open - 2), open + 2);
            return TF_EINVAL;
        }
        char *key = strndup(a + 1, (size_t)(b - a - 1));
        if (!key) {
            tf_errf(err, errlen, "out of memory");
            return TF_ENOMEM;
        }
        json_object *v = NULL;
        json_object_object_get_ex(data, key, &v);
        free(key);
        value_text(v, out);
        p = close + 2;
    }
}

int tf_alert_query(const struct tf_alert_rule *r, struct tf_dynbuf *out, char *err, size_t errlen)
{
    char cond[128];
    snprintf(cond, sizeof(cond), "greptime_timestamp >= now() - '%lld seconds'::INTERVAL",
             (long long)(r->interval_ms / 1000));
    json_object *d = json_object_new_object();
    json_object_object_add(d, "Conditions", json_object_new_string(cond));
    json_object_object_add(d, "Threshold", json_object_new_double(r->threshold));
    json_object_object_add(d, "Name", json_object_new_string(r->name));
    json_object_object_add(d, "Severity", json_object_new_string(r->severity));
    int rc = tf_alert_render(r->query, d, out, err, errlen);
    json_object_put(d);
    return rc;
}

/* ---- state --------------------------------------------------------------------------------- */

struct tf_alert_state {
    json_object *inst; /* fingerprint -> {"count": n, "alert": {...}} */
};

struct tf_alert_state *tf_alert_state_new(void)
{
    struct tf_alert_state *st = calloc(1, sizeof(*st));
    if (st && !(st->inst = json_object_new_object())) {
        free(st);
        return NULL;
    }
    return st;
}

void tf_alert_state_free(struct tf_alert_state *st)
{
    if (!st)
        return;
    json_object_put(st->inst);
    free(st);
}

void tf_alert_state_reset(struct tf_alert_state *st)
{
    json_object_put(st->inst);
    st->inst = json_object_new_object();
}

size_t tf_alert_state_firing(const struct tf_alert_state *st)
{
    size_t n = 0;
    json_object_object_foreach(st->inst, k, v)
    {
        (void)k;
        n += json_object_get_boolean(json_object_object_get(v, "fired"));
    }
    return n;
}

static bool label_name(const char *s)
{
    if (!*s || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

static int cmp_keys(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The most an instance's labels may take as its fingerprint. */
enum { FP_MAX = 1 << 24 };

/* Labels as one string, keys sorted, keys and values as JSON strings (so no value can pass
 * for another label): the instance's identity. False when it does not fit OUT or memory. */
static bool fingerprint(json_object *labels, struct tf_dynbuf *out)
{
    size_t n = (size_t)json_object_object_length(labels), i = 0;
    const char **keys = malloc((n ? n : 1) * sizeof(*keys));
    if (!keys)
        return false;
    json_object_object_foreach(labels, k, v)
    {
        (void)v;
        keys[i++] = k;
    }
    qsort(keys, n, sizeof(keys[0]), cmp_keys);
    int rc = 0;
    for (i = 0; i < n && !rc; i++) {
        const char *val = json_object_get_string(json_object_object_get(labels, keys[i]));
        rc = tf_dynbuf_add_json_str(out, keys[i], strlen(keys[i]));
        if (!rc)
            rc = tf_dynbuf_add_json_str(out, val, strlen(val));
    }
    free(keys);
    return rc == 0;
}

static json_object *render_str(const char *tmpl, json_object *data)
{
    struct tf_dynbuf b;
    char err[64];
    tf_dynbuf_init(&b, 1 << 16);
    if (tf_alert_render(tmpl, data, &b, err, sizeof(err)))
        tf_dynbuf_reset(&b);
    json_object *s = json_object_new_string(tf_dynbuf_str(&b));
    tf_dynbuf_free(&b);
    return s;
}

static void set_time(json_object *alert, const char *key, int64_t ms)
{
    char buf[48];
    tf_rfc3339_format(ms, buf, sizeof(buf));
    json_object_object_add(alert, key, json_object_new_string(buf));
}

json_object *tf_alert_evaluate(struct tf_alert_state *st, const struct tf_alert_rule *r,
                               json_object *names, json_object *rows, int64_t now_ms)
{
    json_object *post = json_object_new_array();
    json_object *seen = json_object_new_object();
    struct tf_dynbuf fp;
    tf_dynbuf_init(&fp, FP_MAX);
    size_t ncol = names ? json_object_array_length(names) : 0;
    for (size_t i = 0; rows && i < json_object_array_length(rows); i++) {
        json_object *row = json_object_array_get_idx(rows, i);
        json_object *data = json_object_new_object(), *labels = json_object_new_object();
        for (size_t c = 0; c < ncol; c++) {
            const char *col = json_object_get_string(json_object_array_get_idx(names, c));
            json_object *v = json_object_array_get_idx(row, c);
            json_object_object_add(data, col, json_object_get(v));
            if (json_object_is_type(v, json_type_string) && label_name(col) &&
                strcmp(col, "alertname") != 0 && strcmp(col, "severity") != 0 &&
                strcmp(col, "job") != 0 && strcmp(col, "instance") != 0)
                json_object_object_add(labels, col, json_object_get(v));
        }
        json_object_object_add(data, "Threshold", json_object_new_double(r->threshold));
        json_object_object_add(labels, "alertname", json_object_new_string(r->name));
        json_object_object_add(labels, "severity", json_object_new_string(r->severity));
        json_object_object_add(labels, "job", json_object_new_string("tensor-fusion"));
        json_object_object_add(labels, "instance", render_str(r->instance, data));
        tf_dynbuf_reset(&fp);
        bool fits = fingerprint(labels, &fp);
        const char *key = tf_dynbuf_str(&fp);
        /* The same instance twice, or labels past FP_MAX bytes (or memory): skipped. */
        if (!fits || json_object_object_get_ex(seen, key, NULL)) {
            json_object_put(labels);
            json_object_put(data);
            continue;
        }
        json_object_object_add(seen, key, NULL);
        json_object *ins = json_object_object_get(st->inst, key);
        if (!ins) {
            ins = json_object_new_object();
            json_object_object_add(ins, "count", json_object_new_int(0));
            json_object_object_add(ins, "fired", json_object_new_boolean(false));
            json_object_object_add(st->inst, key, ins);
        }
        int count = json_object_get_int(json_object_object_get(ins, "count")) + 1;
        json_object_object_add(ins, "count", json_object_new_int(count));
        json_object *alert = json_object_new_object(), *ann = json_object_new_object();
        json_object_object_add(alert, "labels", labels);
        json_object_object_add(ann, "summary", render_str(r->summary, data));
        json_object_object_add(ann, "description", render_str(r->description, data));
        if (*r->runbook)
            json_object_object_add(ann, "runbook_url", json_object_new_string(r->runbook));
        json_object_object_add(alert, "annotations", ann);
        json_object_put(data);
        if (count < r->consecutive) {
            json_object_put(alert);
            continue;
        }
        json_object *started = json_object_object_get(ins, "startsAt");
        if (!started) {
            char buf[48];
            tf_rfc3339_format(now_ms, buf, sizeof(buf));
            json_object_object_add(ins, "startsAt", json_object_new_string(buf));
            started = json_object_object_get(ins, "startsAt");
        }
        json_object_object_add(alert, "startsAt", json_object_get(started));
        set_time(alert, "endsAt", now_ms + 4 * r->interval_ms);
        json_object_object_add(ins, "fired", json_object_new_boolean(true));
        json_object_object_add(ins, "alert", json_object_get(alert));
        json_object_array_add(post, alert);
    }
    /* Instances absent from this evaluation: resolved if they fired, else forgotten. */
    json_object *gone = json_object_new_array();
    json_object_object_foreach(st->inst, k, v)
    {
        if (json_object_object_get_ex(seen, k, NULL))
            continue;
        json_object_array_add(gone, json_object_new_string(k));
        json_object *alert = json_object_object_get(v, "alert");
        if (alert && json_object_get_boolean(json_object_object_get(v, "fired"))) {
            json_object *resolved = NULL;
            json_object_deep_copy(alert, &resolved, NULL);
            if (resolved) {
                set_time(resolved, "endsAt", now_ms);
                json_object_array_add(post, resolved);
            }
        }
    }
    for (size_t i = 0; i < json_object_array_length(gone); i++)
        json_object_object_del(st->inst,
                               json_object_get_string(json_object_array_get_idx(gone, i)));
    json_object_put(gone);
    json_object_put(seen);
    tf_dynbuf_free(&fp);
    return post;
}
