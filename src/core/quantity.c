/* SPDX-License-Identifier: Apache-2.0
 *
 * Exact Kubernetes quantity parsing and conversion (see quantity.h for the grammar).
 */
#include "core/quantity.h"

#include "common/err.h"
#include "common/strutil.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int fail(int rc, char *err, size_t errlen, const char *key, const char *s, const char *why)
{
    tf_errf(err, errlen, "%s: \"%s\" is not a valid quantity: %s", key ? key : "value", s ? s : "",
            why);
    return rc;
}

int tf_quantity_parse(const char *s, struct tf_quantity *q, const char *key, char *err,
                      size_t errlen)
{
    if (!s || !*s)
        return fail(TF_EINVAL, err, errlen, key, s, "empty");
    const char *p = s;
    if (*p == '-')
        return fail(TF_ERANGE, err, errlen, key, s, "negative values are not allowed");
    if (*p == '+')
        p++;
    /* The digits form one integer stream: value = mant * 10^pending * 10^-nfrac. Zeros are
     * kept pending until a non-zero digit needs them, so "1000000000000000000000" is 1e21
     * (out of range later for the right reason) and 19-digit byte counts still fit. */
    int64_t mant = 0;
    int pending = 0, nfrac = 0, any = 0, seen_dot = 0;
    for (;; p++) {
        if (*p >= '0' && *p <= '9') {
            any = 1;
            if (seen_dot)
                nfrac++;
            if (*p == '0') {
                if (mant != 0)
                    pending++;
                continue;
            }
            __int128 v = mant;
            for (int i = 0; i <= pending && v <= INT64_MAX; i++)
                v *= 10;
            v += *p - '0';
            if (v > INT64_MAX)
                return fail(TF_ERANGE, err, errlen, key, s, "too many significant digits");
            mant = (int64_t)v;
            pending = 0;
        } else if (*p == '.' && !seen_dot) {
            seen_dot = 1;
        } else {
            break;
        }
        if (nfrac > 1000)
            return fail(TF_ERANGE, err, errlen, key, s, "too many digits");
    }
    if (!any)
        return fail(TF_EPARSE, err, errlen, key, s, "no digits");
    int e10 = pending - nfrac, e2 = 0;
    /* Suffix. */
    static const struct {
        const char *sfx;
        int e10, e2;
    } sfx[] = {
        {"Ki", 0, 10}, {"Mi", 0, 20}, {"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50},
        {"Ei", 0, 60}, {"m", -3, 0},  {"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},
        {"T", 12, 0},  {"P", 15, 0},  {"E", 18, 0},
    };
    if (*p == 'e' || *p == 'E') {
        /* "E" alone is exa; "e"/"E" followed by a signed integer is an exponent. */
        const char *x = p + 1;
        int neg = 0;
        if (*x == '+' || *x == '-')
            neg = *x++ == '-';
        if (*x >= '0' && *x <= '9') {
            int ev = 0;
            while (*x >= '0' && *x <= '9') {
                ev = ev * 10 + (*x++ - '0');
                if (ev > 1000)
                    return fail(TF_ERANGE, err, errlen, key, s, "exponent too large");
            }
            if (*x)
                return fail(TF_EPARSE, err, errlen, key, s, "trailing characters after exponent");
            e10 += neg ? -ev : ev;
            p = x;
        }
    }
    if (*p) {
        size_t i;
        for (i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
            if (strcmp(p, sfx[i].sfx) == 0)
                break;
        }
        if (i == sizeof(sfx) / sizeof(sfx[0])) {
            char why[64];
            snprintf(why, sizeof(why), "unknown suffix \"%.20s\"", p);
            return fail(TF_EPARSE, err, errlen, key, s, why);
        }
        e10 += sfx[i].e10;
        e2 += sfx[i].e2;
    }
    /* Normalise: strip trailing decimal zeros from the mantissa. */
    while (mant != 0 && mant % 10 == 0) {
        mant /= 10;
        e10++;
    }
    if (mant == 0) {
        e10 = 0;
        e2 = 0;
    }
    q->mant = mant;
    q->e10 = e10;
    q->e2 = e2;
    return 0;
}

/* Computes q * 10^shift10 exactly as an int64; TF_ERANGE when not integral or too large. */
static int scaled(const struct tf_quantity *q, int shift10, int64_t *out, int *not_integral)
{
    *not_integral = 0;
    if (q->mant == 0) {
        *out = 0;
        return 0;
    }
    __int128 v = q->mant;
    const __int128 lim = (__int128)INT64_MAX;
    int e10 = q->e10 + shift10;
    for (int i = 0; i < q->e2; i++) {
        v *= 2;
        if (v > lim)
            return TF_ERANGE;
    }
    for (; e10 > 0; e10--) {
        v *= 10;
        if (v > lim)
            return TF_ERANGE;
    }
    for (; e10 < 0; e10++) {
        if (v % 10 != 0) {
            *not_integral = 1;
            return TF_ERANGE;
        }
        v /= 10;
    }
    *out = (int64_t)v;
    return 0;
}

int tf_quantity_bytes(const char *s, int64_t *out, const char *key, char *err, size_t errlen)
{
    struct tf_quantity q;
    int rc = tf_quantity_parse(s, &q, key, err, errlen);
    if (rc)
        return rc;
    int frac;
    if (scaled(&q, 0, out, &frac))
        return fail(TF_ERANGE, err, errlen, key, s,
                    frac ? "not a whole number of bytes (did you mean Mi or M?)"
                         : "larger than 8Ei");
    return 0;
}

int tf_quantity_milli(const char *s, int64_t *out, const char *key, char *err, size_t errlen)
{
    struct tf_quantity q;
    int rc = tf_quantity_parse(s, &q, key, err, errlen);
    if (rc)
        return rc;
    int frac;
    if (scaled(&q, 3, out, &frac))
        return fail(TF_ERANGE, err, errlen, key, s, frac ? "more precise than 0.001" : "too large");
    return 0;
}

int tf_percent_parse(const char *s, int32_t *bp, const char *key, char *err, size_t errlen)
{
    struct tf_quantity q;
    int rc = tf_quantity_parse(s, &q, key, err, errlen);
    if (rc)
        return rc;
    if (q.e2 != 0)
        return fail(TF_EPARSE, err, errlen, key, s, "a percentage takes no binary suffix");
    int64_t v;
    int frac;
    if (scaled(&q, 2, &v, &frac))
        return fail(TF_ERANGE, err, errlen, key, s,
                    frac ? "more than two decimals" : "must be between 0 and 100");
    if (v > 10000)
        return fail(TF_ERANGE, err, errlen, key, s, "must be between 0 and 100");
    *bp = (int32_t)v;
    return 0;
}

int tf_quantity_format_bytes(int64_t bytes, char *buf, size_t len)
{
    static const char *const sfx[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    int best = -1;
    for (int i = 0; i < 6; i++) {
        int64_t unit = (int64_t)1 << (10 * (i + 1));
        if (bytes != 0 && bytes % unit == 0)
            best = i;
    }
    if (best < 0)
        return snprintf(buf, len, "%" PRId64, bytes);
    return snprintf(buf, len, "%" PRId64 "%s", bytes >> (10 * (best + 1)), sfx[best]);
}

int tf_quantity_format_milli(int64_t milli, char *buf, size_t len)
{
    const char *sign = milli < 0 ? "-" : "";
    uint64_t m = milli < 0 ? (uint64_t)0 - (uint64_t)milli : (uint64_t)milli;
    uint64_t ip = m / 1000, fp = m % 1000;
    if (fp == 0)
        return snprintf(buf, len, "%s%" PRIu64, sign, ip);
    char frac[4];
    snprintf(frac, sizeof(frac), "%03" PRIu64, fp);
    for (int i = 2; i > 0 && frac[i] == '0'; i--)
        frac[i] = 0;
    return snprintf(buf, len, "%s%" PRIu64 ".%s", sign, ip, frac);
}

/* ---- Go durations -------------------------------------------------------------------------- */

int tf_go_duration_ms(const char *s, int64_t *out_ms, const char *key, char *err, size_t errlen)
{
    static const struct {
        const char *unit;
        int64_t ns;
    } units[] = {
        {"ns", 1},       {"us", 1000},      {"\xc2\xb5s", 1000},  {"\xce\xbcs", 1000},
        {"ms", 1000000}, {"s", 1000000000}, {"m", 60000000000LL}, {"h", 3600000000000LL},
    };
    const char *p = s ? s : "";
    const char *why = NULL;
    __int128 total = 0;
    if (*p == '+')
        p++;
    else if (*p == '-')
        why = "a timeout cannot be negative";
    if (!why && !strcmp(p, "0")) {
        *out_ms = 0;
        return 0;
    }
    if (!why && !*p)
        why = "empty";
    while (!why && *p) {
        int64_t whole = 0, frac = 0, scale = 1;
        bool digits = false;
        while (*p >= '0' && *p <= '9') {
            if (whole > INT64_MAX / 10 - 9) {
                why = "too large";
                break;
            }
            whole = whole * 10 + (*p++ - '0');
            digits = true;
        }
        if (!why && *p == '.') {
            for (p++; *p >= '0' && *p <= '9'; p++, digits = true)
                if (scale < 1000000000000LL) {
                    frac = frac * 10 + (*p - '0');
                    scale *= 10;
                }
        }
        if (why)
            break;
        if (!digits) {
            why = "expected a number such as 30s, 5m or 1h30m";
            break;
        }
        size_t best = 0;
        int64_t ns = 0;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            size_t l = strlen(units[i].unit);
            if (l > best && !strncmp(p, units[i].unit, l)) {
                best = l;
                ns = units[i].ns;
            }
        }
        if (!best) {
            why = *p ? "unknown unit (ns, us, ms, s, m, h)" : "missing unit (ns, us, ms, s, m, h)";
            break;
        }
        p += best;
        total += (__int128)whole * ns + (__int128)frac * ns / scale;
        if (total > (__int128)INT64_MAX)
            why = "too large";
    }
    if (why) {
        tf_errf(err, errlen, "%s: \"%s\" is not a valid duration: %s", key ? key : "value",
                s ? s : "", why);
        return TF_EINVAL;
    }
    *out_ms = (int64_t)((total + 999999) / 1000000);
    return 0;
}
