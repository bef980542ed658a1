/* SPDX-License-Identifier: Apache-2.0
 *
 * TZif (RFC 8536) and POSIX TZ rule parsing, and UTC <-> wall clock conversions (see tz.h).
 */
#include "core/tz.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/timeutil.h"

#include <stdlib.h>
#include <string.h>

#define UTOFF_MIN (-89999) /* RFC 8536: -25 h + 1 s .. */
#define UTOFF_MAX 93599    /* .. +26 h - 1 s */
#define MAX_TRANSITIONS 65536
#define ABBR_MAX 16
#define DAY INT64_C(86400)

struct ttype {
    int32_t utoff;
    bool isdst;
    uint32_t abbr; /* offset into chars */
};

/* A POSIX rule date: Jn (julian, no Feb 29), n (zero-based, with Feb 29) or Mm.w.d. */
struct rdate {
    char kind; /* 'J', 'N', 'M' */
    int n, m, w, d;
    int32_t time; /* seconds after local midnight, -167 h .. +167 h */
};

struct rule {
    bool present;
    bool has_dst;
    int32_t std_off, dst_off; /* seconds east */
    char std_abbr[ABBR_MAX], dst_abbr[ABBR_MAX];
    struct rdate start, end;
};

struct tf_tz {
    char name[TF_TZ_NAME_MAX + 1];
    int64_t *trans; /* ascending UTC seconds */
    uint8_t *idx;   /* type index per transition */
    uint32_t ntrans;
    struct ttype *types;
    uint32_t ntypes;
    char *chars; /* designations, NUL-terminated strings */
    uint32_t nchars;
    struct rule rule;
};

bool tf_tz_name_valid(const char *name, const char *key, char *err, size_t errlen)
{
    const char *k = key ? key : "timezone";
    if (!name || !*name) {
        tf_errf(err, errlen, "%s: empty time zone name (e.g. UTC, Asia/Shanghai)", k);
        return false;
    }
    size_t n = strlen(name);
    if (n > TF_TZ_NAME_MAX) {
        tf_errf(err, errlen, "%s: time zone name longer than %d characters", k, TF_TZ_NAME_MAX);
        return false;
    }
    if (name[0] == '/') {
        tf_errf(err, errlen, "%s: \"%s\": an IANA name, not a path (e.g. Asia/Shanghai)", k, name);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '+' || c == '-' || c == '/';
        if (!ok) {
            tf_errf(err, errlen, "%s: \"%s\": character '%c' is not allowed in a time zone name", k,
                    name, c);
            return false;
        }
    }
    const char *p = name;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t cl = e ? (size_t)(e - p) : strlen(p);
        if (cl == 0 || (cl == 1 && p[0] == '.') || (cl == 2 && p[0] == '.' && p[1] == '.')) {
            tf_errf(err, errlen, "%s: \"%s\": empty, \".\" or \"..\" component", k, name);
            return false;
        }
        p += cl;
        if (*p == '/') {
            p++;
            if (!*p) {
                tf_errf(err, errlen, "%s: \"%s\": trailing '/'", k, name);
                return false;
            }
        }
    }
    return true;
}

static struct tf_tz *tz_alloc(const char *name)
{
    struct tf_tz *z = calloc(1, sizeof(*z));
    if (z)
        tf_strlcpy(z->name, name ? name : "", sizeof(z->name));
    return z;
}

void tf_tz_destroy(struct tf_tz *z)
{
    if (!z)
        return;
    free(z->trans);
    free(z->idx);
    free(z->types);
    free(z->chars);
    free(z);
}

const char *tf_tz_name(const struct tf_tz *z)
{
    return z->name;
}

/* ---- POSIX TZ rules ---- */

static bool parse_abbr(const char **pp, char *out)
{
    const char *p = *pp;
    size_t n = 0;
    if (*p == '<') {
        p++;
        while (*p && *p != '>') {
            char c = *p;
            if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '+' || c == '-'))
                return false;
            if (n + 1 >= ABBR_MAX)
                return false;
            out[n++] = c;
            p++;
        }
        if (*p != '>')
            return false;
        p++;
    } else {
        while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')) {
            if (n + 1 >= ABBR_MAX)
                return false;
            out[n++] = *p++;
        }
    }
    if (n < 3)
        return false;
    out[n] = 0;
    *pp = p;
    return true;
}

/* [+-]h[h[h]][:mm[:ss]] with hours up to MAXH; *OUT in seconds. */
static bool parse_hms(const char **pp, int maxh, bool sign_ok, int32_t *out)
{
    const char *p = *pp;
    int sign = 1;
    if (*p == '+' || *p == '-') {
        if (!sign_ok)
            return false;
        sign = *p == '-' ? -1 : 1;
        p++;
    }
    int h = 0, m = 0, s = 0, nd = 0;
    while (*p >= '0' && *p <= '9' && nd < 3) {
        h = h * 10 + (*p++ - '0');
        nd++;
    }
    if (!nd || h > maxh)
        return false;
    if (*p == ':') {
        p++;
        if (!(p[0] >= '0' && p[0] <= '9' && p[1] >= '0' && p[1] <= '9'))
            return false;
        m = (p[0] - '0') * 10 + (p[1] - '0');
        p += 2;
        if (m > 59)
            return false;
        if (*p == ':') {
            p++;
            if (!(p[0] >= '0' && p[0] <= '9' && p[1] >= '0' && p[1] <= '9'))
                return false;
            s = (p[0] - '0') * 10 + (p[1] - '0');
            p += 2;
            if (s > 59)
                return false;
        }
    }
    *out = sign * (h * 3600 + m * 60 + s);
    *pp = p;
    return true;
}

static bool parse_int(const char **pp, int lo, int hi, int *out)
{
    const char *p = *pp;
    int v = 0, nd = 0;
    while (*p >= '0' && *p <= '9' && nd < 4) {
        v = v * 10 + (*p++ - '0');
        nd++;
    }
    if (!nd || v < lo || v > hi)
        return false;
    *out = v;
    *pp = p;
    return true;
}

static bool parse_rdate(const char **pp, struct rdate *d)
{
    const char *p = *pp;
    memset(d, 0, sizeof(*d));
    if (*p == 'J') {
        p++;
        d->kind = 'J';
        if (!parse_int(&p, 1, 365, &d->n))
            return false;
    } else if (*p == 'M') {
        p++;
        d->kind = 'M';
        if (!parse_int(&p, 1, 12, &d->m) || *p++ != '.' || !parse_int(&p, 1, 5, &d->w) ||
            *p++ != '.' || !parse_int(&p, 0, 6, &d->d))
            return false;
    } else {
        d->kind = 'N';
        if (!parse_int(&p, 0, 365, &d->n))
            return false;
    }
    d->time = 7200;
    if (*p == '/') {
        p++;
        if (!parse_hms(&p, 167, true, &d->time))
            return false;
    }
    *pp = p;
    return true;
}

/* Parses RULE into *R (an empty rule string leaves R absent). */
static int parse_rule(const char *s, struct rule *r, const char *name, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    if (!*s)
        return 0;
    const char *p = s;
    int32_t off;
    if (!parse_abbr(&p, r->std_abbr) || !parse_hms(&p, 24, true, &off))
        goto bad;
    r->std_off = -off; /* POSIX offsets count hours west */
    r->present = true;
    if (*p) {
        if (!parse_abbr(&p, r->dst_abbr))
            goto bad;
        r->has_dst = true;
        r->dst_off = r->std_off + 3600;
        if (*p && *p != ',') {
            if (!parse_hms(&p, 24, true, &off))
                goto bad;
            r->dst_off = -off;
        }
        if (*p == ',') {
            p++;
            if (!parse_rdate(&p, &r->start) || *p++ != ',' || !parse_rdate(&p, &r->end))
                goto bad;
        } else {
            /* No rule: glibc's default, the US rule since 2007. */
            r->start = (struct rdate){'M', 0, 3, 2, 0, 7200};
            r->end = (struct rdate){'M', 0, 11, 1, 0, 7200};
        }
    }
    if (*p)
        goto bad;
    return 0;
bad:
    tf_errf(err, errlen, "time zone %s: invalid POSIX TZ rule \"%s\"", name, s);
    memset(r, 0, sizeof(*r));
    return TF_EPARSE;
}

/* Day number (days since the epoch) of rule date D in year Y. */
static int64_t rdate_day(const struct rdate *d, int64_t y)
{
    int64_t jan1 = tf_days_from_civil(y, 1, 1);
    switch (d->kind) {
    case 'J':
        return jan1 + d->n - 1 + (tf_is_leap_year(y) && d->n >= 60 ? 1 : 0);
    case 'N':
        return jan1 + d->n;
    default: {
        int64_t first = tf_days_from_civil(y, d->m, 1);
        int wd = tf_weekday_from_days(first);
        int64_t day = first + (d->d - wd + 7) % 7 + 7 * (d->w - 1);
        int64_t last = first + tf_days_in_month(y, d->m) - 1;
        while (day > last)
            day -= 7;
        return day;
    }
    }
}

struct rtrans {
    int64_t at;
    bool dst; /* state after */
};

static int rtrans_cmp(const void *a, const void *b)
{
    const struct rtrans *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    /* At the same instant an end (to standard) sorts before a start, so an all-year DST rule
     * (end of year Y == start of year Y+1) stays in DST. */
    return (int)x->dst - (int)y->dst;
}

static void rule_period(const struct rule *r, int64_t t, struct tf_tz_period *out)
{
    if (!r->has_dst) {
        *out = (struct tf_tz_period){INT64_MIN, INT64_MAX, r->std_off, false, r->std_abbr};
        return;
    }
    struct tf_civil c;
    int64_t tl = t + r->std_off;
    /* Years far outside 1..9999 are clamped; the callers never get there. */
    if (tl < TF_TIME_MIN_MS / 1000)
        tl = TF_TIME_MIN_MS / 1000;
    if (tl > TF_TIME_MAX_MS / 1000)
        tl = TF_TIME_MAX_MS / 1000;
    tf_civil_from_ms(tl * 1000, &c);
    struct rtrans tr[10];
    int n = 0;
    for (int64_t y = c.year - 2; y <= c.year + 2; y++) {
        tr[n++] = (struct rtrans){rdate_day(&r->start, y) * DAY + r->start.time - r->std_off, true};
        tr[n++] = (struct rtrans){rdate_day(&r->end, y) * DAY + r->end.time - r->dst_off, false};
    }
    qsort(tr, (size_t)n, sizeof(tr[0]), rtrans_cmp);
    /* Transitions at the same instant collapse into the last one; transitions that do not
     * change the state (all-year DST) are dropped. */
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (k && tr[k - 1].at == tr[i].at)
            tr[k - 1].dst = tr[i].dst;
        else
            tr[k++] = tr[i];
        if (k >= 2 && tr[k - 1].dst == tr[k - 2].dst)
            k--;
    }
    n = k;
    int last = -1;
    for (int i = 0; i < n; i++)
        if (tr[i].at <= t)
            last = i;
    bool dst;
    int64_t start, end;
    if (last < 0) {
        dst = !tr[0].dst;
        start = INT64_MIN;
        end = tr[0].at;
    } else {
        dst = tr[last].dst;
        start = tr[last].at;
        end = last + 1 < n ? tr[last + 1].at : INT64_MAX;
    }
    out->start = start;
    out->end = end;
    out->utoff = dst ? r->dst_off : r->std_off;
    out->isdst = dst;
    out->abbr = dst ? r->dst_abbr : r->std_abbr;
}

int tf_tz_parse_posix(const char *rule, const char *name, struct tf_tz **out, char *err,
                      size_t errlen)
{
    *out = NULL;
    const char *nm = name ? name : (rule ? rule : "");
    if (!rule || !*rule) {
        tf_errf(err, errlen, "time zone %s: empty POSIX TZ rule", nm);
        return TF_EPARSE;
    }
    struct tf_tz *z = tz_alloc(nm);
    if (!z)
        return TF_ENOMEM;
    int rc = parse_rule(rule, &z->rule, nm, err, errlen);
    if (rc) {
        tf_tz_destroy(z);
        return rc;
    }
    *out = z;
    return 0;
}

int tf_tz_new_utc(const char *name, struct tf_tz **out)
{
    char err[64];
    return tf_tz_parse_posix("UTC0", name ? name : "UTC", out, err, sizeof(err));
}

/* ---- TZif ---- */

struct rd {
    const uint8_t *p;
    size_t left;
};

static bool take(struct rd *r, size_t n, const uint8_t **out)
{
    if (r->left < n)
        return false;
    *out = r->p;
    r->p += n;
    r->left -= n;
    return true;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const uint8_t *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

struct hdr {
    char version;
    uint32_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
};

static bool read_hdr(struct rd *r, struct hdr *h)
{
    const uint8_t *p;
    if (!take(r, 44, &p) || memcmp(p, "TZif", 4))
        return false;
    h->version = (char)p[4];
    h->isutcnt = be32(p + 20);
    h->isstdcnt = be32(p + 24);
    h->leapcnt = be32(p + 28);
    h->timecnt = be32(p + 32);
    h->typecnt = be32(p + 36);
    h->charcnt = be32(p + 40);
    return true;
}

static size_t block_size(const struct hdr *h, size_t tsize)
{
    return (size_t)h->timecnt * tsize + h->timecnt + (size_t)h->typecnt * 6 + h->charcnt +
           (size_t)h->leapcnt * (tsize + 4) + h->isstdcnt + h->isutcnt;
}

int tf_tz_parse_tzif(const uint8_t *buf, size_t len, const char *name, struct tf_tz **out,
                     char *err, size_t errlen)
{
    *out = NULL;
    const char *nm = name ? name : "";
    const char *why = "truncated";
    int rc = TF_EPARSE;
    struct tf_tz *z = NULL;
    if (len > TF_TZ_FILE_MAX) {
        why = "file too large";
        goto bad;
    }
    struct rd r = {buf, len};
    struct hdr h;
    if (!read_hdr(&r, &h)) {
        why = len >= 4 && !memcmp(buf, "TZif", 4) ? "truncated header" : "not a TZif file";
        goto bad;
    }
    if (h.version != 0 && h.version != '2' && h.version != '3' && h.version != '4') {
        why = "unknown TZif version";
        goto bad;
    }
    size_t tsize = 4;
    if (h.version != 0) {
        /* Skip the 32-bit block; the 64-bit one follows with its own header. */
        if (h.timecnt > MAX_TRANSITIONS || h.typecnt > 256 || h.charcnt > 65536 ||
            h.leapcnt > 65536 || h.isstdcnt > 256 || h.isutcnt > 256)
            goto counts;
        const uint8_t *skip;
        if (!take(&r, block_size(&h, 4), &skip) || !read_hdr(&r, &h))
            goto bad;
        tsize = 8;
    }
    if (h.timecnt > MAX_TRANSITIONS || h.typecnt > 256 || h.charcnt > 65536 || h.leapcnt > 65536)
        goto counts;
    if (h.typecnt == 0 || h.charcnt == 0 || (h.isutcnt && h.isutcnt != h.typecnt) ||
        (h.isstdcnt && h.isstdcnt != h.typecnt))
        goto counts;
    if (h.leapcnt) {
        tf_errf(err, errlen,
                "time zone %s: leap-second (\"right/\") zones are not supported: use the zone "
                "without the right/ prefix",
                nm);
        return TF_ENOTSUP;
    }
    if (r.left < block_size(&h, tsize))
        goto bad;
    z = tz_alloc(nm);
    if (!z)
        return TF_ENOMEM;
    z->ntrans = h.timecnt;
    z->ntypes = h.typecnt;
    z->nchars = h.charcnt;
    z->trans = malloc((h.timecnt ? h.timecnt : 1) * sizeof(int64_t));
    z->idx = malloc(h.timecnt ? h.timecnt : 1);
    z->types = malloc(h.typecnt * sizeof(struct ttype));
    z->chars = malloc(h.charcnt + 1);
    if (!z->trans || !z->idx || !z->types || !z->chars) {
        tf_tz_destroy(z);
        return TF_ENOMEM;
    }
    const uint8_t *p = NULL;
    take(&r, (size_t)h.timecnt * tsize, &p);
    for (uint32_t i = 0; i < h.timecnt; i++) {
        z->trans[i] = tsize == 8 ? be64(p + 8 * i) : (int64_t)(int32_t)be32(p + 4 * i);
        if (i && z->trans[i] <= z->trans[i - 1]) {
            why = "transition times not ascending";
            goto bad;
        }
    }
    take(&r, h.timecnt, &p);
    for (uint32_t i = 0; i < h.timecnt; i++) {
        if (p[i] >= h.typecnt) {
            why = "transition type index out of range";
            goto bad;
        }
        z->idx[i] = p[i];
    }
    take(&r, (size_t)h.typecnt * 6, &p);
    for (uint32_t i = 0; i < h.typecnt; i++) {
        int32_t off = (int32_t)be32(p + 6 * i);
        if (off < UTOFF_MIN || off > UTOFF_MAX) {
            why = "UT offset out of range";
            goto bad;
        }
        if (p[6 * i + 4] > 1) {
            why = "bad isdst flag";
            goto bad;
        }
        z->types[i] = (struct ttype){off, p[6 * i + 4] == 1, p[6 * i + 5]};
        if (z->types[i].abbr >= h.charcnt) {
            why = "designation index out of range";
            goto bad;
        }
    }
    take(&r, h.charcnt, &p);
    memcpy(z->chars, p, h.charcnt);
    z->chars[h.charcnt] = 0;
    if (p[h.charcnt - 1] != 0) {
        why = "designations not NUL-terminated";
        goto bad;
    }
    take(&r, h.isstdcnt + h.isutcnt, &p); /* indicators: only matter to zic's POSIX fallback */
    if (tsize == 8) {
        /* Footer: "\n" rule "\n". */
        if (!take(&r, 1, &p) || p[0] != '\n') {
            why = "missing footer";
            goto bad;
        }
        const uint8_t *nl = memchr(r.p, '\n', r.left);
        if (!nl) {
            why = "unterminated footer";
            goto bad;
        }
        size_t fl = (size_t)(nl - r.p);
        char rule[256];
        if (fl >= sizeof(rule) || memchr(r.p, 0, fl)) {
            why = "bad footer";
            goto bad;
        }
        memcpy(rule, r.p, fl);
        rule[fl] = 0;
        rc = parse_rule(rule, &z->rule, nm, err, errlen);
        if (rc) {
            tf_tz_destroy(z);
            return rc;
        }
    }
    *out = z;
    return 0;
counts:
    why = "inconsistent counts in the header";
bad:
    tf_errf(err, errlen, "time zone %s: invalid TZif data: %s", nm, why);
    tf_tz_destroy(z);
    return TF_EPARSE;
}

/* ---- lookups ---- */

static void type_period(const struct tf_tz *z, uint32_t type, int64_t start, int64_t end,
                        struct tf_tz_period *out)
{
    const struct ttype *t = &z->types[type];
    *out = (struct tf_tz_period){start, end, t->utoff, t->isdst, z->chars + t->abbr};
}

void tf_tz_period_at(const struct tf_tz *z, int64_t t, struct tf_tz_period *out)
{
    if (z->ntrans == 0) {
        if (z->rule.present)
            rule_period(&z->rule, t, out);
        else if (z->ntypes)
            type_period(z, 0, INT64_MIN, INT64_MAX, out);
        else
            *out = (struct tf_tz_period){INT64_MIN, INT64_MAX, 0, false, "UTC"};
        return;
    }
    if (t < z->trans[0]) {
        type_period(z, 0, INT64_MIN, z->trans[0], out);
        return;
    }
    /* Last transition <= t. */
    uint32_t lo = 0, hi = z->ntrans; /* trans[lo] <= t < trans[hi] */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (z->trans[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    if (lo + 1 < z->ntrans) {
        type_period(z, z->idx[lo], z->trans[lo], z->trans[lo + 1], out);
        return;
    }
    int64_t last = z->trans[lo];
    if (!z->rule.present) {
        type_period(z, z->idx[lo], last, INT64_MAX, out);
        return;
    }
    rule_period(&z->rule, t, out);
    if (out->start < last)
        out->start = last;
}

int32_t tf_tz_offset_at(const struct tf_tz *z, int64_t t)
{
    struct tf_tz_period p;
    tf_tz_period_at(z, t, &p);
    return p.utoff;
}

int32_t tf_tz_min_offset(const struct tf_tz *z, int64_t from, int64_t to)
{
    struct tf_tz_period p;
    tf_tz_period_at(z, from, &p);
    int32_t m = p.utoff;
    for (int guard = 0; p.end != INT64_MAX && p.end <= to && guard < 4096; guard++) {
        tf_tz_period_at(z, p.end, &p);
        if (p.utoff < m)
            m = p.utoff;
    }
    return m;
}

int64_t tf_tz_local_to_utc(const struct tf_tz *z, int64_t wall, enum tf_tz_local *kind)
{
    /* Every instant reading WALL lies within [wall - UTOFF_MAX, wall - UTOFF_MIN]. */
    int64_t lo = wall - UTOFF_MAX - 1, hi = wall - UTOFF_MIN + 1;
    struct tf_tz_period p;
    tf_tz_period_at(z, lo, &p);
    int matches = 0;
    int64_t best = 0, gap = INT64_MIN;
    for (int guard = 0; guard < 4096; guard++) {
        int64_t u = wall - p.utoff;
        if (u >= p.start && u < p.end) {
            if (!matches)
                best = u;
            matches++;
        } else if (!matches && gap == INT64_MIN && p.start != INT64_MIN &&
                   p.start + p.utoff > wall) {
            gap = p.start;
        }
        if (p.end == INT64_MAX || p.end > hi)
            break;
        tf_tz_period_at(z, p.end, &p);
    }
    if (matches) {
        if (kind)
            *kind = matches > 1 ? TF_TZ_LOCAL_REPEATED : TF_TZ_LOCAL_UNIQUE;
        return best;
    }
    if (kind)
        *kind = TF_TZ_LOCAL_SKIPPED;
    if (gap != INT64_MIN)
        return gap;
    return wall - tf_tz_offset_at(z, wall); /* unreachable for valid zones */
}
