/* SPDX-License-Identifier: Apache-2.0
 *
 * Console API requests: the view path and the range/step arguments (console.h), checked
 * before anything reaches a query. Names and UUIDs are limited to the characters their
 * objects allow, so they can be written into SQL literals without escaping anything.
 */
#include "console/console.h"

#include "common/err.h"
#include "common/strutil.h"
#include "metrics/sqlquery.h"

#include <string.h>

/* Nice bucket widths (seconds): a series has about 240 of them over its range. */
static const int64_t steps[] = {1,   2,   5,    10,   15,   30,    60,    120,  300,
                                600, 900, 1800, 3600, 7200, 21600, 43200, 86400};

static int64_t auto_step(int64_t range_s)
{
    int64_t want = range_s / 240;
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
        if (steps[i] >= want)
            return steps[i];
    return steps[sizeof(steps) / sizeof(steps[0]) - 1];
}

static bool uuid_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == ':';
}

static bool dns_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

/* Copies the segment S[0..N) into OUT (size CAP) when every character passes OK and it is
 * not empty. */
static bool take(const char *s, size_t n, bool (*ok)(char), char *out, size_t cap)
{
    if (n == 0 || n >= cap)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!ok(s[i]))
            return false;
    memcpy(out, s, n);
    out[n] = '\0';
    return true;
}

static int duration(const char *what, const char *s, int64_t *out, char *err, size_t errlen)
{
    int64_t ms;
    char derr[160];
    size_t n = strnlen(s, 65);
    if (n > 64 || tf_sql_duration_ms(s, n, &ms, derr, sizeof(derr))) {
        tf_errf(err, errlen, "%s: \"%.64s\" is not a duration (e.g. 1h, 1d, 7d)", what, s);
        return TF_EINVAL;
    }
    *out = ms / 1000;
    return 0;
}

int tf_con_req_parse(const char *sub, const char *range, const char *step, struct tf_con_req *out,
                     char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!sub)
        sub = "";
    if (!strcmp(sub, "/overview")) {
        out->view = TF_CON_OVERVIEW;
    } else if (!strcmp(sub, "/alerts")) {
        out->view = TF_CON_ALERTS;
    } else if (!strcmp(sub, "/events")) {
        out->view = TF_CON_EVENTS;
    } else if (!strncmp(sub, "/gpus/", 6)) {
        out->view = TF_CON_GPU;
        const char *u = sub + 6;
        if (!take(u, strlen(u), uuid_char, out->uuid, sizeof(out->uuid))) {
            tf_errf(err, errlen, "\"%.100s\" is not a GPU UUID", u);
            return TF_EINVAL;
        }
    } else if (!strncmp(sub, "/workloads/", 11)) {
        out->view = TF_CON_WORKLOAD;
        const char *ns = sub + 11, *slash = strchr(ns, '/');
        if (!slash || !take(ns, (size_t)(slash - ns), dns_char, out->ns, sizeof(out->ns)) ||
            !take(slash + 1, strlen(slash + 1), dns_char, out->name, sizeof(out->name))) {
            tf_errf(err, errlen, "\"%.100s\" is not NAMESPACE/NAME of a workload", ns);
            return TF_EINVAL;
        }
    } else {
        tf_errf(err, errlen, "no such console resource \"%.100s\"", sub);
        return TF_ENOENT;
    }
    out->range_s = 3600;
    if (range && duration("range", range, &out->range_s, err, errlen))
        return TF_EINVAL;
    if (out->range_s < TF_CON_MIN_RANGE_S || out->range_s > TF_CON_MAX_RANGE_S) {
        tf_errf(err, errlen, "range: \"%.64s\" is outside 1m..30d", range);
        return TF_EINVAL;
    }
    out->step_s = auto_step(out->range_s);
    if (step) {
        if (duration("step", step, &out->step_s, err, errlen))
            return TF_EINVAL;
        if (out->step_s < 1 || out->range_s / out->step_s > TF_CON_MAX_POINTS) {
            tf_errf(err, errlen, "step: \"%.64s\" must be at least 1s and give at most %d points",
                    step, TF_CON_MAX_POINTS);
            return TF_EINVAL;
        }
    }
    return 0;
}
