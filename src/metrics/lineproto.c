/* SPDX-License-Identifier: Apache-2.0
 *
 * InfluxDB line protocol encoder and strict parser (see lineproto.h).
 */
#include "metrics/lineproto.h"

#include "common/err.h"
#include "common/strutil.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tf_lp_point_init(struct tf_lp_point *p, const char *measurement, int64_t ts_ms)
{
    p->measurement = measurement;
    p->ntags = 0;
    p->nfields = 0;
    p->ts_ms = ts_ms;
}

int tf_lp_tag(struct tf_lp_point *p, const char *key, const char *value)
{
    if (p->ntags >= TF_LP_MAX_TAGS)
        return TF_ERANGE;
    p->tags[p->ntags].key = key;
    p->tags[p->ntags].value = value;
    p->ntags++;
    return 0;
}

static struct tf_lp_field *add_field(struct tf_lp_point *p, const char *key, enum tf_lp_type t)
{
    if (p->nfields >= TF_LP_MAX_FIELDS)
        return NULL;
    struct tf_lp_field *f = &p->fields[p->nfields++];
    f->key = key;
    f->type = t;
    return f;
}

int tf_lp_float(struct tf_lp_point *p, const char *key, double v)
{
    struct tf_lp_field *f = add_field(p, key, TF_LP_FLOAT);
    if (!f)
        return TF_ERANGE;
    f->v.f = v;
    return 0;
}

int tf_lp_int(struct tf_lp_point *p, const char *key, int64_t v)
{
    struct tf_lp_field *f = add_field(p, key, TF_LP_INT);
    if (!f)
        return TF_ERANGE;
    f->v.i = v;
    return 0;
}

int tf_lp_bool(struct tf_lp_point *p, const char *key, bool v)
{
    struct tf_lp_field *f = add_field(p, key, TF_LP_BOOL);
    if (!f)
        return TF_ERANGE;
    f->v.b = v;
    return 0;
}

int tf_lp_string(struct tf_lp_point *p, const char *key, const char *v)
{
    struct tf_lp_field *f = add_field(p, key, TF_LP_STRING);
    if (!f)
        return TF_ERANGE;
    f->v.s = v;
    return 0;
}

const struct tf_lp_field *tf_lp_field_get(const struct tf_lp_point *p, const char *key)
{
    for (size_t i = 0; i < p->nfields; i++)
        if (strcmp(p->fields[i].key, key) == 0)
            return &p->fields[i];
    return NULL;
}

const char *tf_lp_tag_get(const struct tf_lp_point *p, const char *key)
{
    for (size_t i = 0; i < p->ntags; i++)
        if (strcmp(p->tags[i].key, key) == 0)
            return p->tags[i].value;
    return NULL;
}

/* ---- encoder ---- */

static bool is_ctl(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

/* Appends S escaping the characters in SPECIAL; rejects control characters and backslashes. */
static int put_escaped(struct tf_dynbuf *out, const char *what, const char *s, const char *special,
                       char *err, size_t errlen)
{
    if (!s || !*s) {
        tf_errf(err, errlen, "%s is empty", what);
        return TF_EINVAL;
    }
    for (const char *c = s; *c; c++) {
        if (is_ctl((unsigned char)*c) || *c == '\\') {
            tf_errf(err, errlen, "%s \"%.64s\": %s not allowed", what, s,
                    *c == '\\' ? "backslash" : "control character");
            return TF_EINVAL;
        }
        int rc = 0;
        if (strchr(special, *c))
            rc = tf_dynbuf_addc(out, '\\');
        if (!rc)
            rc = tf_dynbuf_addc(out, *c);
        if (rc)
            return rc;
    }
    return 0;
}

/* Shortest "%.Ng" that reads back to exactly V. */
static void format_double(double v, char *buf, size_t len)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

static int put_field_value(struct tf_dynbuf *out, const struct tf_lp_field *f, char *err,
                           size_t errlen)
{
    char num[48];
    switch (f->type) {
    case TF_LP_FLOAT:
        if (!isfinite(f->v.f)) {
            tf_errf(err, errlen, "field %s: %s is not allowed", f->key,
                    isnan(f->v.f) ? "NaN" : "infinity");
            return TF_EINVAL;
        }
        format_double(f->v.f, num, sizeof(num));
        return tf_dynbuf_adds(out, num);
    case TF_LP_INT:
        snprintf(num, sizeof(num), "%" PRId64 "i", f->v.i);
        return tf_dynbuf_adds(out, num);
    case TF_LP_BOOL:
        return tf_dynbuf_adds(out, f->v.b ? "true" : "false");
    case TF_LP_STRING: {
        if (!f->v.s) {
            tf_errf(err, errlen, "field %s: NULL string", f->key);
            return TF_EINVAL;
        }
        int rc = tf_dynbuf_addc(out, '"');
        for (const char *c = f->v.s; !rc && *c; c++) {
            if (is_ctl((unsigned char)*c)) {
                tf_errf(err, errlen, "field %s: control character in string value", f->key);
                return TF_EINVAL;
            }
            if (*c == '"' || *c == '\\')
                rc = tf_dynbuf_addc(out, '\\');
            if (!rc)
                rc = tf_dynbuf_addc(out, *c);
        }
        return rc ? rc : tf_dynbuf_addc(out, '"');
    }
    }
    tf_errf(err, errlen, "field %s: unknown type", f->key);
    return TF_EINVAL;
}

static int encode_line(const struct tf_lp_point *p, struct tf_dynbuf *out, char *err, size_t errlen)
{
    if (!p->measurement || p->measurement[0] == '#') {
        tf_errf(err, errlen, "measurement %s", p->measurement ? "starts with #" : "is NULL");
        return TF_EINVAL;
    }
    int rc = put_escaped(out, "measurement", p->measurement, ", ", err, errlen);
    for (size_t i = 0; !rc && i < p->ntags; i++) {
        const struct tf_lp_tag *t = &p->tags[i];
        if (!t->value || !*t->value)
            continue;
        rc = tf_dynbuf_addc(out, ',');
        if (!rc)
            rc = put_escaped(out, "tag key", t->key, ",= ", err, errlen);
        if (!rc)
            rc = tf_dynbuf_addc(out, '=');
        if (!rc)
            rc = put_escaped(out, "tag value", t->value, ",= ", err, errlen);
    }
    if (rc)
        return rc;
    if (p->nfields == 0) {
        tf_errf(err, errlen, "measurement %s: a point needs at least one field", p->measurement);
        return TF_EINVAL;
    }
    for (size_t i = 0; !rc && i < p->nfields; i++) {
        rc = tf_dynbuf_addc(out, i ? ',' : ' ');
        if (!rc)
            rc = put_escaped(out, "field key", p->fields[i].key, ",= ", err, errlen);
        if (!rc)
            rc = tf_dynbuf_addc(out, '=');
        if (!rc)
            rc = put_field_value(out, &p->fields[i], err, errlen);
    }
    if (!rc)
        rc = tf_dynbuf_addf(out, " %" PRId64 "\n", p->ts_ms);
    return rc;
}

int tf_lp_encode(const struct tf_lp_point *p, struct tf_dynbuf *out, char *err, size_t errlen)
{
    size_t start = out->len;
    int rc = encode_line(p, out, err, errlen);
    if (!rc && out->len - start > TF_LP_MAX_LINE) {
        tf_errf(err, errlen, "line longer than %d bytes", TF_LP_MAX_LINE);
        rc = TF_ERANGE;
    }
    if (rc) {
        if (rc == TF_ERANGE && err && !*err)
            tf_errf(err, errlen, "output buffer full");
        tf_dynbuf_truncate(out, start);
    }
    return rc;
}

/* ---- parser ---- */

struct lp_in {
    const char *s;
    size_t len, pos;
    char *scratch;
    size_t scap, sused;
    char *err;
    size_t errlen;
};

static int perr(struct lp_in *in, const char *what)
{
    tf_errf(in->err, in->errlen, "column %zu: %s", in->pos + 1, what);
    return TF_EPARSE;
}

/* Reads an escaped token up to an unescaped character of STOP (or the end); writes the
 * unescaped text into scratch and returns it in *OUT. ESCAPABLE: characters a backslash may
 * precede. */
static int read_token(struct lp_in *in, const char *stop, const char *escapable, const char **out)
{
    size_t start = in->sused;
    while (in->pos < in->len) {
        char c = in->s[in->pos];
        if (is_ctl((unsigned char)c)) /* before strchr: strchr finds a NUL in any STOP */
            return perr(in, "control character");
        if (strchr(stop, c))
            break;
        if (c == '\\') {
            if (in->pos + 1 >= in->len || in->s[in->pos + 1] == '\0' ||
                !strchr(escapable, in->s[in->pos + 1]))
                return perr(in, "backslash must escape one of the special characters");
            c = in->s[++in->pos];
        }
        if (in->sused + 1 >= in->scap) {
            tf_errf(in->err, in->errlen, "scratch buffer too small");
            return TF_ERANGE;
        }
        in->scratch[in->sused++] = c;
        in->pos++;
    }
    if (in->sused == start)
        return perr(in, "empty name");
    in->scratch[in->sused++] = '\0';
    *out = in->scratch + start;
    return 0;
}

static int expect(struct lp_in *in, char c, const char *what)
{
    if (in->pos >= in->len || in->s[in->pos] != c)
        return perr(in, what);
    in->pos++;
    return 0;
}

static int read_string_value(struct lp_in *in, const char **out)
{
    in->pos++; /* opening quote */
    size_t start = in->sused;
    for (;;) {
        if (in->pos >= in->len)
            return perr(in, "unterminated string value");
        char c = in->s[in->pos];
        if (c == '"')
            break;
        if (is_ctl((unsigned char)c))
            return perr(in, "control character in string value");
        if (c == '\\') {
            if (in->pos + 1 >= in->len || (in->s[in->pos + 1] != '"' && in->s[in->pos + 1] != '\\'))
                return perr(in, "backslash in a string value must escape \" or \\");
            c = in->s[++in->pos];
        }
        if (in->sused + 1 >= in->scap) {
            tf_errf(in->err, in->errlen, "scratch buffer too small");
            return TF_ERANGE;
        }
        in->scratch[in->sused++] = c;
        in->pos++;
    }
    in->pos++; /* closing quote */
    if (in->sused + 1 > in->scap) {
        tf_errf(in->err, in->errlen, "scratch buffer too small");
        return TF_ERANGE;
    }
    in->scratch[in->sused++] = '\0';
    *out = in->scratch + start;
    return 0;
}

static int read_scalar_value(struct lp_in *in, struct tf_lp_field *f)
{
    size_t start = in->pos;
    while (in->pos < in->len && in->s[in->pos] != ',' && in->s[in->pos] != ' ')
        in->pos++;
    size_t n = in->pos - start;
    char tok[64];
    if (n == 0 || n >= sizeof(tok)) {
        in->pos = start;
        return perr(in, n ? "field value too long" : "missing field value");
    }
    memcpy(tok, in->s + start, n);
    tok[n] = '\0';
    static const char *const t[] = {"t", "T", "true", "True", "TRUE"};
    static const char *const fl[] = {"f", "F", "false", "False", "FALSE"};
    for (int i = 0; i < 5; i++) {
        if (!strcmp(tok, t[i]) || !strcmp(tok, fl[i])) {
            f->type = TF_LP_BOOL;
            f->v.b = !strcmp(tok, t[i]);
            return 0;
        }
    }
    bool is_int = tok[n - 1] == 'i';
    if (is_int)
        tok[--n] = '\0';
    if (n == 0 || strspn(tok, is_int ? "-0123456789" : "-+.0123456789eE") != n ||
        (is_int && strchr(tok + 1, '-'))) {
        in->pos = start;
        return perr(in, "invalid field value");
    }
    char *end;
    errno = 0;
    if (is_int) {
        long long v = strtoll(tok, &end, 10);
        if (*end || end == tok || (tok[0] == '-' && tok[1] == '\0')) {
            in->pos = start;
            return perr(in, "invalid integer field value");
        }
        if (errno == ERANGE) {
            in->pos = start;
            tf_errf(in->err, in->errlen, "column %zu: integer out of range", start + 1);
            return TF_ERANGE;
        }
        f->type = TF_LP_INT;
        f->v.i = v;
        return 0;
    }
    double v = strtod(tok, &end);
    if (*end || end == tok || !isfinite(v)) {
        in->pos = start;
        return perr(in, "invalid float field value");
    }
    f->type = TF_LP_FLOAT;
    f->v.f = v;
    return 0;
}

int tf_lp_parse(const char *line, size_t len, int64_t default_ts, struct tf_lp_point *p,
                char *scratch, size_t scratchlen, char *err, size_t errlen)
{
    if (len && line[len - 1] == '\n')
        len--;
    if (len && line[len - 1] == '\r')
        len--;
    struct lp_in in = {line, len, 0, scratch, scratchlen, 0, err, errlen};
    tf_lp_point_init(p, NULL, default_ts);
    if (!scratch || scratchlen == 0) {
        tf_errf(err, errlen, "scratch buffer too small");
        return TF_ERANGE;
    }
    if (len && line[0] == '#')
        return perr(&in, "comment line, not a point");
    int rc = read_token(&in, ", ", ", ", &p->measurement);
    if (rc)
        return rc;
    while (in.pos < in.len && in.s[in.pos] == ',') {
        in.pos++;
        if (p->ntags >= TF_LP_MAX_TAGS) {
            tf_errf(err, errlen, "column %zu: more than %d tags", in.pos, TF_LP_MAX_TAGS);
            return TF_ERANGE;
        }
        struct tf_lp_tag *t = &p->tags[p->ntags];
        if ((rc = read_token(&in, ",= ", ",= ", &t->key)) ||
            (rc = expect(&in, '=', "expected = after tag key")) ||
            (rc = read_token(&in, ",= ", ",= ", &t->value)))
            return rc;
        p->ntags++;
    }
    if ((rc = expect(&in, ' ', "expected a space before the fields")))
        return rc;
    do {
        if (p->nfields >= TF_LP_MAX_FIELDS) {
            tf_errf(err, errlen, "column %zu: more than %d fields", in.pos, TF_LP_MAX_FIELDS);
            return TF_ERANGE;
        }
        struct tf_lp_field *f = &p->fields[p->nfields];
        if ((rc = read_token(&in, ",= ", ",= ", &f->key)) ||
            (rc = expect(&in, '=', "expected = after field key")))
            return rc;
        if (in.pos < in.len && in.s[in.pos] == '"') {
            f->type = TF_LP_STRING;
            rc = read_string_value(&in, &f->v.s);
        } else {
            rc = read_scalar_value(&in, f);
        }
        if (rc)
            return rc;
        p->nfields++;
    } while (in.pos < in.len && in.s[in.pos] == ',' && ++in.pos);
    if (in.pos == in.len)
        return 0;
    if ((rc = expect(&in, ' ', "expected a space before the timestamp")))
        return rc;
    char tok[32];
    size_t n = in.len - in.pos;
    if (n == 0 || n >= sizeof(tok))
        return perr(&in, "invalid timestamp");
    memcpy(tok, in.s + in.pos, n);
    tok[n] = '\0';
    if (strspn(tok, "-0123456789") != n || strchr(tok + 1, '-'))
        return perr(&in, "invalid timestamp");
    char *end;
    errno = 0;
    long long ts = strtoll(tok, &end, 10);
    if (*end || end == tok || errno == ERANGE)
        return perr(&in, "invalid timestamp");
    p->ts_ms = ts;
    return 0;
}

static bool float_eq(double a, double b)
{
    return memcmp(&a, &b, sizeof(a)) == 0;
}

static size_t next_tag(const struct tf_lp_point *p, size_t i)
{
    while (i < p->ntags && (!p->tags[i].value || !*p->tags[i].value))
        i++;
    return i;
}

bool tf_lp_point_equal(const struct tf_lp_point *a, const struct tf_lp_point *b)
{
    if (strcmp(a->measurement, b->measurement) || a->ts_ms != b->ts_ms || a->nfields != b->nfields)
        return false;
    size_t i = next_tag(a, 0), j = next_tag(b, 0);
    while (i < a->ntags && j < b->ntags) {
        if (strcmp(a->tags[i].key, b->tags[j].key) || strcmp(a->tags[i].value, b->tags[j].value))
            return false;
        i = next_tag(a, i + 1);
        j = next_tag(b, j + 1);
    }
    if (i < a->ntags || j < b->ntags)
        return false;
    for (size_t k = 0; k < a->nfields; k++) {
        const struct tf_lp_field *x = &a->fields[k], *y = &b->fields[k];
        if (strcmp(x->key, y->key) || x->type != y->type)
            return false;
        switch (x->type) {
        case TF_LP_FLOAT:
            if (!float_eq(x->v.f, y->v.f))
                return false;
            break;
        case TF_LP_INT:
            if (x->v.i != y->v.i)
                return false;
            break;
        case TF_LP_BOOL:
            if (x->v.b != y->v.b)
                return false;
            break;
        case TF_LP_STRING:
            if (strcmp(x->v.s, y->v.s))
                return false;
            break;
        }
    }
    return true;
}
