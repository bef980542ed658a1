/* SPDX-License-Identifier: Apache-2.0
 *
 * 5-field cron expressions and their next fire time in an IANA zone (see cron.h).
 *
 * Next fire time: candidates are enumerated as matching wall-clock minutes W in increasing
 * order; each maps to the instant f(W) = tf_tz_local_to_utc(W) (first occurrence, or the jump
 * over a skipped time). f never decreases as W grows, so the first candidate with
 * f(W) > after is the answer, and enumeration may start at the earliest wall time that could
 * map past AFTER: AFTER plus the smallest offset in effect around it.
 */
#include "core/cron.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/timeutil.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define KEY(k) ((k) ? (k) : "schedule")

struct field {
    const char *what;
    bool day; /* accepts '?' */
    int lo, hi;
    const char *const *names; /* names[i] is value lo_name + i */
    int name_base;
    int nnames;
};

static const char *const months[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                     "jul", "aug", "sep", "oct", "nov", "dec"};
static const char *const days[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

static const struct field fields[5] = {
    {"minute", false, 0, 59, NULL, 0, 0},      {"hour", false, 0, 23, NULL, 0, 0},
    {"day-of-month", true, 1, 31, NULL, 0, 0}, {"month", false, 1, 12, months, 1, 12},
    {"day-of-week", true, 0, 7, days, 0, 7},
};

struct ctx {
    const char *expr, *key;
    char *err;
    size_t errlen;
};

static int ferr(const struct ctx *cx, const struct field *f, const char *tok, size_t tlen,
                const char *why, int code)
{
    tf_errf(cx->err, cx->errlen, "%s: \"%s\": %s field \"%.*s\": %s", KEY(cx->key), cx->expr,
            f->what, (int)tlen, tok, why);
    return code;
}

/* A number or a name at *P (within END); advances *P. */
static bool value(const struct field *f, const char **p, const char *end, int *out)
{
    const char *s = *p;
    if (s < end && *s >= '0' && *s <= '9') {
        int v = 0, n = 0;
        while (s < end && *s >= '0' && *s <= '9' && n < 4) {
            v = v * 10 + (*s++ - '0');
            n++;
        }
        if (s < end && *s >= '0' && *s <= '9')
            return false;
        *out = v;
        *p = s;
        return true;
    }
    if (f->names && end - s >= 3) {
        for (int i = 0; i < f->nnames; i++)
            if (!strncasecmp(s, f->names[i], 3) &&
                (end - s == 3 || !((s[3] | 0x20) >= 'a' && (s[3] | 0x20) <= 'z'))) {
                *out = f->name_base + i;
                *p = s + 3;
                return true;
            }
    }
    return false;
}

/* One comma-separated field TOK[0..TLEN) into the bit set *BITS. */
static int parse_field(const struct ctx *cx, const struct field *f, const char *tok, size_t tlen,
                       uint64_t *bits, bool *star)
{
    *bits = 0;
    *star = tlen > 0 && (tok[0] == '*' || tok[0] == '?');
    const char *p = tok, *end = tok + tlen;
    while (p < end) {
        const char *q = memchr(p, ',', (size_t)(end - p));
        const char *ie = q ? q : end;
        const char *it = p;
        size_t ilen = (size_t)(ie - p);
        if (!ilen)
            return ferr(cx, f, tok, tlen, "empty list item", TF_EPARSE);
        int lo, hi, step = 1;
        bool range = false;
        if (*p == '*' || *p == '?') {
            if (*p == '?' && !f->day)
                return ferr(cx, f, tok, tlen, "'?' is only allowed in the day fields", TF_EPARSE);
            lo = f->lo;
            hi = f->hi == 7 ? 6 : f->hi;
            range = true;
            p++;
        } else {
            if (!value(f, &p, ie, &lo)) {
                char why[96];
                snprintf(why, sizeof(why), "\"%.*s\" is not a number%s", (int)ilen, it,
                         f->names ? " or name" : "");
                return ferr(cx, f, tok, tlen, why, TF_EPARSE);
            }
            hi = lo;
            if (p < ie && *p == '-') {
                p++;
                if (!value(f, &p, ie, &hi))
                    return ferr(cx, f, tok, tlen, "bad range end", TF_EPARSE);
                range = true;
            }
        }
        if (p < ie && *p == '/') {
            p++;
            static const struct field stepf = {"step", false, 1, 9999, NULL, 0, 0};
            if (!value(&stepf, &p, ie, &step) || step < 1)
                return ferr(cx, f, tok, tlen, "the step must be a positive number", TF_EPARSE);
            if (!range)
                hi = f->hi == 7 ? 6 : f->hi; /* N/S means N-max/S */
        }
        if (p != ie)
            return ferr(cx, f, tok, tlen, "unexpected characters", TF_EPARSE);
        if (lo < f->lo || lo > f->hi || hi < f->lo || hi > f->hi) {
            char why[48];
            snprintf(why, sizeof(why), "value out of range %d-%d", f->lo, f->hi);
            return ferr(cx, f, tok, tlen, why, TF_ERANGE);
        }
        if (lo > hi)
            return ferr(cx, f, tok, tlen, "range start after its end", TF_ERANGE);
        for (int v = lo; v <= hi; v += step)
            *bits |= UINT64_C(1) << (f->hi == 7 && v == 7 ? 0 : v);
        p = q ? q + 1 : end;
        if (q && p == end)
            return ferr(cx, f, tok, tlen, "empty list item", TF_EPARSE);
    }
    return 0;
}

struct descriptor {
    const char *name, *expr;
};

static const struct descriptor descriptors[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

static bool feasible(const struct tf_cron *c)
{
    if (!c->minute || !c->hour || !c->dom || !c->month || !c->dow)
        return false;
    if (!c->dom_star && !c->dow_star)
        return true; /* either day field may match */
    if (!c->dom_star) {
        /* Day-of-month restricted, AND with the (star) weekday: some selected month must
         * have one of the selected days (February counts 29). */
        for (int m = 1; m <= 12; m++) {
            if (!(c->month & (1u << m)))
                continue;
            int dim = m == 2 ? 29 : tf_days_in_month(2001, m);
            if (c->dom & ((UINT32_C(2) << dim) - 2))
                return true;
        }
        return false;
    }
    return true;
}

int tf_cron_parse(const char *expr, struct tf_cron *out, const char *key, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!expr || !*expr) {
        tf_errf(err, errlen, "%s: empty cron expression (e.g. \"0 3 * * *\")", KEY(key));
        return TF_EINVAL;
    }
    if (strlen(expr) > TF_CRON_EXPR_MAX) {
        tf_errf(err, errlen, "%s: cron expression longer than %d characters", KEY(key),
                TF_CRON_EXPR_MAX);
        return TF_ERANGE;
    }
    struct ctx cx = {expr, key, err, errlen};
    const char *s = expr;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!strncmp(s, "TZ=", 3) || !strncmp(s, "CRON_TZ=", 8)) {
        tf_errf(err, errlen,
                "%s: \"%s\": remove the %s prefix and set the time zone in the timezone field",
                KEY(key), expr, s[0] == 'T' ? "TZ=" : "CRON_TZ=");
        return TF_EINVAL;
    }
    if (*s == '@') {
        size_t n = strcspn(s, " \t");
        const char *rest = s + n;
        while (*rest == ' ' || *rest == '\t')
            rest++;
        for (size_t i = 0; i < sizeof(descriptors) / sizeof(descriptors[0]); i++)
            if (strlen(descriptors[i].name) == n && !strncasecmp(s, descriptors[i].name, n) &&
                !*rest) {
                int rc = tf_cron_parse(descriptors[i].expr, out, key, err, errlen);
                return rc;
            }
        tf_errf(err, errlen,
                "%s: \"%s\": unsupported descriptor (use @yearly, @monthly, @weekly, @daily, "
                "@hourly or 5 fields)",
                KEY(key), expr);
        return TF_EINVAL;
    }
    const char *tok[6];
    size_t tlen[6];
    int n = 0;
    while (*s) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            break;
        const char *b = s;
        while (*s && *s != ' ' && *s != '\t')
            s++;
        if (n < 6) {
            tok[n] = b;
            tlen[n] = (size_t)(s - b);
        }
        n++;
    }
    if (n != 5) {
        tf_errf(err, errlen,
                "%s: \"%s\": expected 5 fields (minute hour day-of-month month day-of-week), "
                "got %d%s",
                KEY(key), expr, n, n == 6 ? " (seconds fields are not supported)" : "");
        return TF_EINVAL;
    }
    uint64_t b[5];
    bool star[5];
    for (int i = 0; i < 5; i++) {
        int rc = parse_field(&cx, &fields[i], tok[i], tlen[i], &b[i], &star[i]);
        if (rc)
            return rc;
    }
    out->minute = b[0];
    out->hour = (uint32_t)b[1];
    out->dom = (uint32_t)b[2];
    out->month = (uint16_t)b[3];
    out->dow = (uint8_t)b[4];
    out->dom_star = star[2];
    out->dow_star = star[4];
    if (!feasible(out)) {
        tf_errf(err, errlen, "%s: \"%s\": the day-of-month never occurs in the selected months",
                KEY(key), expr);
        memset(out, 0, sizeof(*out));
        return TF_ERANGE;
    }
    return 0;
}

static bool day_ok(const struct tf_cron *c, int d, int wday)
{
    bool dm = (c->dom >> d) & 1, wm = (c->dow >> wday) & 1;
    if (c->dom_star || c->dow_star)
        return dm && wm;
    return dm || wm;
}

bool tf_cron_matches(const struct tf_cron *c, int64_t y, int m, int d, int h, int mi, int wday)
{
    (void)y;
    return ((c->month >> m) & 1) && day_ok(c, d, wday) && ((c->hour >> h) & 1) &&
           ((c->minute >> mi) & 1);
}

/* Lowest set bit of BITS at or above FROM, or -1. */
static int next_bit(uint64_t bits, int from)
{
    if (from >= 64)
        return -1;
    uint64_t m = bits & (~UINT64_C(0) << from);
    return m ? __builtin_ctzll(m) : -1;
}

/* The first matching wall minute >= WALL (wall seconds, minute-aligned), or false past
 * LIMIT_YEAR. */
static bool next_wall(const struct tf_cron *c, int64_t wall, int64_t limit_year, int64_t *out)
{
    int64_t day = wall / 86400;
    if (wall < 0 && wall % 86400)
        day--;
    int mod = (int)((wall - day * 86400) / 60); /* minute of the day */
    for (;;) {
        int64_t y;
        int m, d;
        tf_civil_from_days(day, &y, &m, &d);
        if (y > limit_year)
            return false;
        if (!((c->month >> m) & 1)) {
            int nm = next_bit(c->month, m + 1);
            if (nm < 0 || nm > 12)
                day = tf_days_from_civil(y + 1, next_bit(c->month, 1), 1);
            else
                day = tf_days_from_civil(y, nm, 1);
            mod = 0;
            continue;
        }
        if (!day_ok(c, d, tf_weekday_from_days(day))) {
            day++;
            mod = 0;
            continue;
        }
        int h = mod / 60, mi = mod % 60;
        if (!((c->hour >> h) & 1)) {
            int nh = next_bit(c->hour, h + 1);
            if (nh < 0 || nh > 23) {
                day++;
                mod = 0;
            } else {
                mod = nh * 60;
            }
            continue;
        }
        if (!((c->minute >> mi) & 1)) {
            int nmi = next_bit(c->minute, mi + 1);
            if (nmi < 0 || nmi > 59) {
                if (h == 23) {
                    day++;
                    mod = 0;
                } else {
                    mod = (h + 1) * 60;
                }
            } else {
                mod = h * 60 + nmi;
            }
            continue;
        }
        *out = day * 86400 + (int64_t)mod * 60;
        return true;
    }
}

int tf_cron_next(const struct tf_cron *c, const struct tf_tz *tz, int64_t after_ms,
                 int64_t *next_ms)
{
    if (after_ms < TF_TIME_MIN_MS || after_ms > TF_TIME_MAX_MS)
        return TF_ERANGE;
    if (!c->minute || !c->hour || !c->dom || !c->month || !c->dow)
        return TF_ENOENT;
    int64_t after_s = after_ms / 1000 - (after_ms < 0 && after_ms % 1000 ? 1 : 0);
    /* Earliest wall reading that could map past AFTER (offsets are within +-26 h). */
    int32_t omin = tf_tz_min_offset(tz, after_s - 27 * 3600, after_s + 27 * 3600);
    int64_t wall = after_s + omin;
    wall -= ((wall % 60) + 60) % 60;
    struct tf_civil ac;
    tf_civil_from_ms(after_ms, &ac);
    int64_t limit = ac.year + TF_CRON_HORIZON_YEARS;
    if (limit > 9999)
        limit = 9999;
    for (int guard = 0; guard < 1000000; guard++) {
        int64_t w;
        if (!next_wall(c, wall, limit, &w))
            return TF_ENOENT;
        int64_t u = tf_tz_local_to_utc(tz, w, NULL);
        if (u * 1000 > after_ms) {
            if (u * 1000 > TF_TIME_MAX_MS)
                return TF_ENOENT;
            *next_ms = u * 1000;
            return 0;
        }
        wall = w + 60;
    }
    return TF_ENOENT;
}

int tf_cron_due(const struct tf_cron *c, const struct tf_tz *tz, int64_t since_ms, int64_t at_ms,
                int64_t *fire_ms)
{
    if (since_ms >= at_ms)
        return TF_ENOENT;
    static const int64_t windows[] = {
        TF_MS_PER_HOUR,          TF_MS_PER_DAY,
        32 * TF_MS_PER_DAY,      366 * TF_MS_PER_DAY,
        8 * 366 * TF_MS_PER_DAY, (int64_t)(TF_CRON_HORIZON_YEARS + 1) * 366 * TF_MS_PER_DAY};
    for (size_t i = 0; i < sizeof(windows) / sizeof(windows[0]); i++) {
        int64_t from = at_ms - windows[i];
        bool last_window = from <= since_ms;
        if (last_window)
            from = since_ms;
        int64_t t;
        int rc = tf_cron_next(c, tz, from, &t);
        if (rc == TF_ERANGE)
            return rc;
        if (rc == 0 && t <= at_ms) {
            /* Walk forward to the last fire <= at. */
            int64_t last = t;
            while (tf_cron_next(c, tz, last, &t) == 0 && t <= at_ms)
                last = t;
            *fire_ms = last;
            return 0;
        }
        if (last_window)
            return TF_ENOENT;
    }
    return TF_ENOENT;
}
