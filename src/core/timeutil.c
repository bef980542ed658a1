/* SPDX-License-Identifier: Apache-2.0
 *
 * Calendar arithmetic, RFC 3339 timestamps and Go-style durations (see timeutil.h). The
 * day-number conversions are Howard Hinnant's civil-from-days algorithms (exact over the whole
 * int64 day range the callers use).
 */
#include "core/timeutil.h"

#include "common/err.h"
#include "common/strutil.h"

#include <stdio.h>
#include <string.h>

#define KEY(k) ((k) ? (k) : "value")

bool tf_is_leap_year(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int tf_days_in_month(int64_t y, int m)
{
    static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12)
        return 0;
    return m == 2 && tf_is_leap_year(y) ? 29 : dim[m - 1];
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t tf_days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = floor_div(y, 400);
    int64_t yoe = y - era * 400;                                   /* [0, 399] */
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* [0, 365] */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

void tf_civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;                                      /* [0, 146096] */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
    int64_t mp = (5 * doy + 2) / 153;                                    /* [0, 11] */
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

int tf_weekday_from_days(int64_t z)
{
    /* 1970-01-01 was a Thursday (4). */
    int64_t w = (z + 4) % 7;
    return (int)(w < 0 ? w + 7 : w);
}

void tf_civil_from_ms(int64_t ms, struct tf_civil *out)
{
    int64_t days = floor_div(ms, TF_MS_PER_DAY);
    int64_t rem = ms - days * TF_MS_PER_DAY;
    tf_civil_from_days(days, &out->year, &out->month, &out->day);
    out->hour = (int)(rem / TF_MS_PER_HOUR);
    out->minute = (int)(rem / TF_MS_PER_MIN % 60);
    out->second = (int)(rem / TF_MS_PER_S % 60);
    out->ms = (int)(rem % 1000);
    out->wday = tf_weekday_from_days(days);
}

int64_t tf_civil_to_ms(const struct tf_civil *c)
{
    return tf_days_from_civil(c->year, c->month, c->day) * TF_MS_PER_DAY +
           (int64_t)c->hour * TF_MS_PER_HOUR + (int64_t)c->minute * TF_MS_PER_MIN +
           (int64_t)c->second * TF_MS_PER_S + c->ms;
}

/* Reads exactly N digits at *P. */
static bool digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return true;
}

int tf_rfc3339_parse(const char *s, int64_t *ms, const char *key, char *err, size_t errlen)
{
    if (!s || !*s) {
        tf_errf(err, errlen, "%s: empty timestamp (want RFC 3339, e.g. 2024-03-10T07:00:00Z)",
                KEY(key));
        return TF_EINVAL;
    }
    const char *p = s;
    int y, mo, d, h, mi, se, frac = 0;
    if (!digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' ||
        !digits(&p, 2, &d) || (*p != 'T' && *p != 't') || (++p, !digits(&p, 2, &h)) ||
        *p++ != ':' || !digits(&p, 2, &mi) || *p++ != ':' || !digits(&p, 2, &se))
        goto bad;
    if (*p == '.') {
        p++;
        int n = 0;
        while (*p >= '0' && *p <= '9') {
            if (n < 3)
                frac = frac * 10 + (*p - '0');
            n++;
            p++;
        }
        if (!n)
            goto bad;
        for (; n < 3; n++)
            frac *= 10;
    }
    int32_t off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om;
        if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om))
            goto bad;
        if (oh > 23 || om > 59) {
            tf_errf(err, errlen, "%s: \"%s\": UTC offset out of range", KEY(key), s);
            return TF_ERANGE;
        }
        off = sign * (oh * 3600 + om * 60);
    } else {
        goto bad;
    }
    if (*p)
        goto bad;
    if (mo < 1 || mo > 12 || d < 1 || d > tf_days_in_month(y, mo) || h > 23 || mi > 59 || se > 59) {
        tf_errf(err, errlen, "%s: \"%s\": date or time field out of range", KEY(key), s);
        return TF_ERANGE;
    }
    struct tf_civil c = {y, mo, d, h, mi, se, frac, 0};
    int64_t v = tf_civil_to_ms(&c) - (int64_t)off * TF_MS_PER_S;
    if (v < TF_TIME_MIN_MS || v > TF_TIME_MAX_MS) {
        tf_errf(err, errlen, "%s: \"%s\": outside years 1..9999 UTC", KEY(key), s);
        return TF_ERANGE;
    }
    *ms = v;
    return 0;
bad:
    tf_errf(err, errlen, "%s: \"%s\" is not an RFC 3339 timestamp (e.g. 2024-03-10T07:00:00Z)",
            KEY(key), s);
    return TF_EPARSE;
}

int tf_rfc3339_format_offset(int64_t ms, int32_t offset_s, char *buf, size_t len)
{
    struct tf_civil c;
    tf_civil_from_ms(ms + (int64_t)offset_s * TF_MS_PER_S, &c);
    char frac[16] = "", zone[16] = "Z";
    if (c.ms)
        snprintf(frac, sizeof(frac), ".%03d", c.ms);
    if (offset_s) {
        int32_t a = offset_s < 0 ? -offset_s : offset_s;
        snprintf(zone, sizeof(zone), "%c%02d:%02d", offset_s < 0 ? '-' : '+', (int)(a / 3600),
                 (int)(a / 60 % 60));
    }
    return snprintf(buf, len, "%04lld-%02d-%02dT%02d:%02d:%02d%s%s", (long long)c.year, c.month,
                    c.day, c.hour, c.minute, c.second, frac, zone);
}

int tf_rfc3339_format(int64_t ms, char *buf, size_t len)
{
    return tf_rfc3339_format_offset(ms, 0, buf, len);
}

struct unit {
    const char *name;
    int64_t ns;
};

static const struct unit units[] = {
    {"ns", 1},
    {"us", 1000},
    {"\xc2\xb5s", 1000}, /* U+00B5 micro sign */
    {"\xce\xbcs", 1000}, /* U+03BC Greek mu */
    {"ms", 1000000},
    {"s", INT64_C(1000000000)},
    {"m", INT64_C(60000000000)},
    {"h", INT64_C(3600000000000)},
    {"d", INT64_C(86400000000000)},
};

#define MAX_NS (TF_DURATION_MAX_MS * 1000000)

int tf_duration_parse(const char *s, int64_t *ms, const char *key, char *err, size_t errlen)
{
    if (!s || !*s) {
        tf_errf(err, errlen, "%s: empty duration (e.g. 30m, 2h, 1h30m)", KEY(key));
        return TF_EINVAL;
    }
    const char *p = s;
    if (*p == '-') {
        tf_errf(err, errlen, "%s: \"%s\": a duration must not be negative", KEY(key), s);
        return TF_ERANGE;
    }
    if (*p == '+')
        p++;
    if (!strcmp(p, "0")) {
        *ms = 0;
        return 0;
    }
    if (!*p)
        goto bad;
    int64_t total = 0;
    while (*p) {
        int64_t ip = 0, frac = 0, pow = 1;
        int nint = 0, nfrac = 0;
        bool big = false;
        while (*p >= '0' && *p <= '9') {
            if (ip > MAX_NS / 10)
                big = true;
            else
                ip = ip * 10 + (*p - '0');
            nint++;
            p++;
        }
        if (*p == '.') {
            p++;
            while (*p >= '0' && *p <= '9') {
                if (nfrac < 12) { /* deeper digits are below a nanosecond for every unit */
                    frac = frac * 10 + (*p - '0');
                    pow *= 10;
                } else if (*p != '0') {
                    goto fine;
                }
                nfrac++;
                p++;
            }
        }
        if (!nint && !nfrac)
            goto bad;
        const char *u = p;
        while (*p && !(*p >= '0' && *p <= '9') && *p != '.')
            p++;
        size_t ulen = (size_t)(p - u);
        const struct unit *un = NULL;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
            if (strlen(units[i].name) == ulen && !memcmp(units[i].name, u, ulen))
                un = &units[i];
        if (!un) {
            if (!ulen)
                tf_errf(err, errlen, "%s: \"%s\": missing unit (ms, s, m, h or d)", KEY(key), s);
            else
                tf_errf(err, errlen, "%s: \"%s\": unknown unit \"%.*s\" (ns, us, ms, s, m, h, d)",
                        KEY(key), s, (int)ulen, u);
            return TF_EPARSE;
        }
        if (big || (ip && un->ns > MAX_NS / ip))
            goto range;
        int64_t v = ip * un->ns;
        /* frac / pow of the unit, exactly: divide both by g = gcd(ns, pow), a power of ten;
         * frac < pow <= 1e12 and ns / g <= 864 once pow > g, so the product fits. */
        int64_t pw = pow, nsu = un->ns;
        while (pw % 10 == 0 && nsu % 10 == 0) {
            pw /= 10;
            nsu /= 10;
        }
        int64_t prod = frac * nsu;
        if (prod % pw)
            goto fine;
        int64_t fv = prod / pw;
        v += fv;
        if (v > MAX_NS - total)
            goto range;
        total += v;
    }
    if (total % 1000000)
        goto fine;
    *ms = total / 1000000;
    return 0;
bad:
    tf_errf(err, errlen, "%s: \"%s\" is not a duration (e.g. 30m, 2h, 1h30m, 90s)", KEY(key), s);
    return TF_EPARSE;
range:
    tf_errf(err, errlen, "%s: \"%s\": duration too large (at most 100 years)", KEY(key), s);
    return TF_ERANGE;
fine:
    tf_errf(err, errlen, "%s: \"%s\": finer than a millisecond", KEY(key), s);
    return TF_ERANGE;
}

int tf_duration_format(int64_t ms, char *buf, size_t len)
{
    if (ms <= 0)
        return snprintf(buf, len, "0s");
    int64_t h = ms / TF_MS_PER_HOUR, m = ms / TF_MS_PER_MIN % 60, s = ms / 1000 % 60, f = ms % 1000;
    char tmp[64];
    size_t n = 0;
    if (h)
        n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, "%lldh", (long long)h);
    if (m)
        n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, "%lldm", (long long)m);
    if (s || f) {
        if (!s && !h && !m)
            n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, "%lldms", (long long)f);
        else if (f) {
            char fr[8];
            snprintf(fr, sizeof(fr), "%03lld", (long long)f);
            for (int i = 2; i > 0 && fr[i] == '0'; i--)
                fr[i] = 0;
            n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, "%lld.%ss", (long long)s, fr);
        } else
            n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, "%llds", (long long)s);
    }
    return snprintf(buf, len, "%s", tmp);
}
