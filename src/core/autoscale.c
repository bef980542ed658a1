/* SPDX-License-Identifier: Apache-2.0
 *
 * The vertical autoscaling recommender: configuration, VPA-style decaying histograms and the
 * recommendation rules (see autoscale.h).
 */
#include "core/autoscale.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/efficiency.h"
#include "core/quantity.h"
#include "core/selector.h"
#include "core/timeutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_LEN 256
#define MAX_AMOUNT 1e15       /* cap on any estimate (milli-TFLOPS or bytes) */
#define MAX_DECAY_EXPONENT 64 /* re-base the weights before 2^x overflows */
#define TFLOPS_QUANTUM 10     /* 0.01 TFLOPS */
#define VRAM_QUANTUM (INT64_C(1) << 20)
#define MIN_CONFIDENCE 1e-3

void tf_autoscale_config_init(struct tf_autoscale_config *c)
{
    memset(c, 0, sizeof(*c));
    c->target = TF_AUTOSCALE_ALL;
    c->target_compute = 0.95;
    c->lower_compute = 0.5;
    c->upper_compute = 0.98;
    c->target_vram = 0.95;
    c->lower_vram = 0.5;
    c->upper_vram = 0.99;
    c->margin = 0.15;
    c->update_threshold = 0.1;
    c->history_ms = 2 * TF_MS_PER_HOUR;
    c->confidence_ms = 0;
    c->half_life_ms = 24 * TF_MS_PER_HOUR;
    c->min_compute_ratio = 0.1;
    c->max_compute_ratio = 10.0;
    c->min_vram_ratio = 0.2;
    c->max_vram_ratio = 5.0;
    c->initial_delay_ms = 30 * TF_MS_PER_MIN;
    c->interval_ms = 0;
}

/* ---- parsing ---- */

static const char *join(char *buf, const char *path, const char *key)
{
    int n = path && *path ? snprintf(buf, PATH_LEN, "%s.%s", path, key)
                          : snprintf(buf, PATH_LEN, "%s", key);
    if (n < 0)
        buf[0] = 0; /* truncation is harmless: it only shortens a message */
    return buf;
}

static int parse_number(json_object *v, const char *path, double lo, double hi, double *out,
                        char *err, size_t errlen)
{
    double d;
    if (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)) {
        d = json_object_get_double(v);
    } else if (json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        char *end;
        d = strtod(s, &end);
        if (!*s || *end || s[0] == ' ') {
            tf_errf(err, errlen, "%s: \"%s\" is not a number", path, s);
            return TF_EPARSE;
        }
    } else {
        tf_errf(err, errlen, "%s: expected a number", path);
        return TF_EINVAL;
    }
    if (!(d >= lo && d <= hi)) { /* also rejects NaN */
        tf_errf(err, errlen, "%s: %g is out of range %g..%g", path, d, lo, hi);
        return TF_ERANGE;
    }
    *out = d;
    return 0;
}

static int parse_dur(json_object *v, const char *path, int64_t *out, char *err, size_t errlen)
{
    if (!json_object_is_type(v, json_type_string)) {
        tf_errf(err, errlen, "%s: expected a duration string (e.g. 30m)", path);
        return TF_EINVAL;
    }
    return tf_duration_parse(json_object_get_string(v), out, path, err, errlen);
}

static int parse_boolv(json_object *v, const char *path, bool *out, char *err, size_t errlen)
{
    if (json_object_is_type(v, json_type_boolean)) {
        *out = json_object_get_boolean(v);
        return 0;
    }
    if (json_object_is_type(v, json_type_string) && !tf_parse_bool(json_object_get_string(v), out))
        return 0;
    tf_errf(err, errlen, "%s: expected true or false", path);
    return TF_EINVAL;
}

struct numfield {
    const char *key;
    uint32_t bit;
    size_t off;
    double lo, hi;
};

#define OFF(f) offsetof(struct tf_autoscale_config, f)
static const struct numfield numfields[] = {
    {"targetComputePercentile", TF_AS_TARGET_COMPUTE, OFF(target_compute), 0, 1},
    {"targetTflopsPercentile", TF_AS_TARGET_COMPUTE, OFF(target_compute), 0, 1},
    {"lowerBoundComputePercentile", TF_AS_LOWER_COMPUTE, OFF(lower_compute), 0, 1},
    {"lowerBoundTflopsPercentile", TF_AS_LOWER_COMPUTE, OFF(lower_compute), 0, 1},
    {"upperBoundComputePercentile", TF_AS_UPPER_COMPUTE, OFF(upper_compute), 0, 1},
    {"upperBoundTflopsPercentile", TF_AS_UPPER_COMPUTE, OFF(upper_compute), 0, 1},
    {"targetVRAMPercentile", TF_AS_TARGET_VRAM, OFF(target_vram), 0, 1},
    {"targetVramPercentile", TF_AS_TARGET_VRAM, OFF(target_vram), 0, 1},
    {"lowerBoundVRAMPercentile", TF_AS_LOWER_VRAM, OFF(lower_vram), 0, 1},
    {"lowerBoundVramPercentile", TF_AS_LOWER_VRAM, OFF(lower_vram), 0, 1},
    {"upperBoundVRAMPercentile", TF_AS_UPPER_VRAM, OFF(upper_vram), 0, 1},
    {"upperBoundVramPercentile", TF_AS_UPPER_VRAM, OFF(upper_vram), 0, 1},
    {"marginFraction", TF_AS_MARGIN, OFF(margin), 0, 100},
    {"requestMarginFraction", TF_AS_MARGIN, OFF(margin), 0, 100},
    {"updateThreshold", TF_AS_THRESHOLD, OFF(update_threshold), 0, 1},
    {"minComputeResourcesRatio", TF_AS_MIN_COMPUTE, OFF(min_compute_ratio), 0, 1},
    {"maxComputeResourcesRatio", TF_AS_MAX_COMPUTE, OFF(max_compute_ratio), 1, 1000},
    {"minVRAMResourcesRatio", TF_AS_MIN_VRAM, OFF(min_vram_ratio), 0, 1},
    {"maxVRAMResourcesRatio", TF_AS_MAX_VRAM, OFF(max_vram_ratio), 1, 1000},
};

struct durfield {
    const char *key;
    uint32_t bit;
    size_t off;
    bool positive;
};

static const struct durfield durfields[] = {
    {"historyDataPeriod", TF_AS_HISTORY, OFF(history_ms), true},
    {"historyLength", TF_AS_HISTORY, OFF(history_ms), true},
    {"confidenceInterval", TF_AS_CONFIDENCE, OFF(confidence_ms), true},
    {"histogramDecayHalfLife", TF_AS_HALF_LIFE, OFF(half_life_ms), true},
    {"initialDelayPeriod", TF_AS_INITIAL_DELAY, OFF(initial_delay_ms), false},
    {"interval", TF_AS_INTERVAL, OFF(interval_ms), false},
};

static int parse_asr(json_object *obj, const char *path, struct tf_autoscale_config *c, char *err,
                     size_t errlen)
{
    char p[PATH_LEN];
    if (!json_object_is_type(obj, json_type_object)) {
        tf_errf(err, errlen, "%s: expected a mapping", path);
        return TF_EINVAL;
    }
    int rc;
    json_object_object_foreach(obj, k, v)
    {
        join(p, path, k);
        if (!v)
            continue;
        if (!strcmp(k, "enable")) {
            if ((rc = parse_boolv(v, p, &c->enable, err, errlen)))
                return rc;
            c->set |= TF_AS_ENABLE;
            continue;
        }
        if (!strcmp(k, "targetResource")) {
            const char *s =
                json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
            if (!s || tf_autoscale_target_parse(s, &c->target) || c->target == TF_AUTOSCALE_UNSET) {
                tf_errf(err, errlen, "%s: expected compute, vram or all", p);
                return TF_EINVAL;
            }
            c->set |= TF_AS_TARGET;
            continue;
        }
        bool done = false;
        for (size_t i = 0; i < sizeof(numfields) / sizeof(numfields[0]) && !done; i++)
            if (!strcmp(k, numfields[i].key)) {
                double *dst = (double *)((char *)c + numfields[i].off);
                if ((rc = parse_number(v, p, numfields[i].lo, numfields[i].hi, dst, err, errlen)))
                    return rc;
                c->set |= numfields[i].bit;
                done = true;
            }
        for (size_t i = 0; i < sizeof(durfields) / sizeof(durfields[0]) && !done; i++)
            if (!strcmp(k, durfields[i].key)) {
                int64_t *dst = (int64_t *)((char *)c + durfields[i].off);
                if ((rc = parse_dur(v, p, dst, err, errlen)))
                    return rc;
                if (durfields[i].positive && *dst <= 0) {
                    tf_errf(err, errlen, "%s: must be longer than zero", p);
                    return TF_ERANGE;
                }
                c->set |= durfields[i].bit;
                done = true;
            }
        if (!done) {
            tf_errf(err, errlen, "%s: unknown field", p);
            return TF_EINVAL;
        }
    }
    return 0;
}

static int parse_res_block(json_object *obj, const char *path, int64_t *tflops, int32_t *pct,
                           int64_t *vram, char *err, size_t errlen)
{
    char p[PATH_LEN];
    if (!json_object_is_type(obj, json_type_object)) {
        tf_errf(err, errlen, "%s: expected a mapping", path);
        return TF_EINVAL;
    }
    json_object_object_foreach(obj, k, v)
    {
        join(p, path, k);
        int rc;
        if (!v)
            continue;
        if (!strcmp(k, "tflops"))
            rc = tf_json_quantity_milli(v, tflops, p, err, errlen);
        else if (!strcmp(k, "vram"))
            rc = tf_json_quantity_bytes(v, vram, p, err, errlen);
        else if (!strcmp(k, "compute") || !strcmp(k, "computePercent"))
            rc = tf_json_percent(v, pct, p, err, errlen);
        else {
            tf_errf(err, errlen, "%s: unknown field (tflops, compute or vram)", p);
            rc = TF_EINVAL;
        }
        if (rc)
            return rc;
    }
    if (*tflops && *pct) {
        tf_errf(err, errlen, "%s: tflops and compute are exclusive (give one)", path);
        return TF_EINVAL;
    }
    return 0;
}

static int parse_rule(json_object *obj, const char *path, struct tf_cron_scaling_rule *r, char *err,
                      size_t errlen)
{
    char p[PATH_LEN], q[PATH_LEN];
    memset(r, 0, sizeof(*r));
    if (!json_object_is_type(obj, json_type_object)) {
        tf_errf(err, errlen, "%s: expected a mapping", path);
        return TF_EINVAL;
    }
    int rc = 0;
    bool have_start = false, have_end = false;
    json_object_object_foreach(obj, k, v)
    {
        join(p, path, k);
        if (!v)
            continue;
        if (!strcmp(k, "enable")) {
            rc = parse_boolv(v, p, &r->enable, err, errlen);
        } else if (!strcmp(k, "name") || !strcmp(k, "start") || !strcmp(k, "end")) {
            if (!json_object_is_type(v, json_type_string)) {
                tf_errf(err, errlen, "%s: expected a string", p);
                return TF_EINVAL;
            }
            const char *s = json_object_get_string(v);
            if (k[0] == 'n') {
                if (!tf_strlcpy(r->name, s, sizeof(r->name))) {
                    tf_errf(err, errlen, "%s: longer than %d characters", p,
                            TF_AUTOSCALE_NAME_MAX - 1);
                    return TF_ERANGE;
                }
            } else if (k[0] == 's') {
                rc = tf_cron_parse(s, &r->start, p, err, errlen);
                tf_strlcpy(r->start_expr, s, sizeof(r->start_expr));
                have_start = true;
            } else {
                rc = tf_cron_parse(s, &r->end, p, err, errlen);
                tf_strlcpy(r->end_expr, s, sizeof(r->end_expr));
                have_end = true;
            }
        } else if (!strcmp(k, "desiredResources")) {
            if (!json_object_is_type(v, json_type_object)) {
                tf_errf(err, errlen, "%s: expected a mapping", p);
                return TF_EINVAL;
            }
            json_object_object_foreach(v, k2, v2)
            {
                join(q, p, k2);
                if (!v2)
                    continue;
                struct tf_autoscale_resources *d = &r->desired;
                if (!strcmp(k2, "requests"))
                    rc = parse_res_block(v2, q, &d->req_tflops, &d->req_percent, &d->req_vram, err,
                                         errlen);
                else if (!strcmp(k2, "limits"))
                    rc = parse_res_block(v2, q, &d->lim_tflops, &d->lim_percent, &d->lim_vram, err,
                                         errlen);
                else {
                    tf_errf(err, errlen, "%s: unknown field (requests or limits)", q);
                    rc = TF_EINVAL;
                }
                if (rc)
                    return rc;
            }
        } else {
            tf_errf(err, errlen, "%s: unknown field", p);
            rc = TF_EINVAL;
        }
        if (rc)
            return rc;
    }
    if (r->enable) {
        if (!r->name[0]) {
            tf_errf(err, errlen, "%s: required for an enabled rule", join(p, path, "name"));
            return TF_EINVAL;
        }
        if (!have_start || !have_end) {
            tf_errf(err, errlen, "%s: required for an enabled rule",
                    join(p, path, have_start ? "end" : "start"));
            return TF_EINVAL;
        }
        if (!strcmp(r->start_expr, r->end_expr)) {
            tf_errf(err, errlen, "%s: start and end must differ (\"%s\")", path, r->start_expr);
            return TF_EINVAL;
        }
    }
    return 0;
}

/* autoSetReplicas / externalScaler (at P): declared by the CRDs, not acted on by this
 * controller, so enabling one is refused rather than silently ignored. */
static int refuse_enabled(json_object *v, const char *p, char *err, size_t errlen)
{
    json_object *en = NULL;
    bool on = false;
    if (!json_object_is_type(v, json_type_object)) {
        tf_errf(err, errlen, "%s: expected a mapping", p);
        return TF_EINVAL;
    }
    if (json_object_object_get_ex(v, "enable", &en) && en) {
        char q[PATH_LEN + 8];
        snprintf(q, sizeof(q), "%.240s.enable", p);
        int rc = parse_boolv(en, q, &on, err, errlen);
        if (rc)
            return rc;
    }
    if (!on)
        return 0;
    tf_errf(err, errlen,
            "%s.enable: not supported: this controller scales workloads vertically only "
            "(autoSetResources, cronScalingRules)%s",
            p,
            strstr(p, "externalScaler") ? "; it calls no external scaler"
                                        : "; set the workload's replicas yourself");
    return TF_ENOTSUP;
}

static int parse_config(json_object *obj, const char *path, struct tf_autoscale_config *c,
                        char *err, size_t errlen)
{
    char p[PATH_LEN], q[PATH_LEN + 32];
    if (!json_object_is_type(obj, json_type_object)) {
        tf_errf(err, errlen, "%s: expected a mapping", path && *path ? path : "autoScalingConfig");
        return TF_EINVAL;
    }
    int rc;
    json_object_object_foreach(obj, k, v)
    {
        join(p, path, k);
        if (!v)
            continue;
        if (!strcmp(k, "autoSetResources")) {
            if ((rc = parse_asr(v, p, c, err, errlen)))
                return rc;
        } else if (!strcmp(k, "cronScalingRules")) {
            if (!json_object_is_type(v, json_type_array)) {
                tf_errf(err, errlen, "%s: expected a list", p);
                return TF_EINVAL;
            }
            size_t n = json_object_array_length(v);
            if (n > TF_AUTOSCALE_MAX_RULES) {
                tf_errf(err, errlen, "%s: at most %d rules", p, TF_AUTOSCALE_MAX_RULES);
                return TF_ERANGE;
            }
            for (size_t i = 0; i < n; i++) {
                snprintf(q, sizeof(q), "%.200s[%zu]", p, i);
                if ((rc =
                         parse_rule(json_object_array_get_idx(v, i), q, &c->rules[i], err, errlen)))
                    return rc;
            }
            c->nrules = n;
            c->set |= TF_AS_RULES;
        } else if (!strcmp(k, "autoSetReplicas") || !strcmp(k, "externalScaler")) {
            if ((rc = refuse_enabled(v, p, err, errlen)))
                return rc;
        } else {
            tf_errf(err, errlen, "%s: unknown field", p);
            return TF_EINVAL;
        }
    }
    return 0;
}

int tf_autoscale_config_parse(json_object *obj, const char *path, struct tf_autoscale_config *out,
                              char *err, size_t errlen)
{
    tf_autoscale_config_init(out);
    if (!obj)
        return 0;
    int rc = parse_config(obj, path, out, err, errlen);
    if (rc)
        tf_autoscale_config_init(out);
    return rc;
}

void tf_autoscale_config_merge(struct tf_autoscale_config *b, const struct tf_autoscale_config *o)
{
    uint32_t s = o->set;
#define M(bit, f)                                                                                  \
    if (s & (bit))                                                                                 \
    b->f = o->f
    M(TF_AS_ENABLE, enable);
    M(TF_AS_TARGET, target);
    M(TF_AS_TARGET_COMPUTE, target_compute);
    M(TF_AS_LOWER_COMPUTE, lower_compute);
    M(TF_AS_UPPER_COMPUTE, upper_compute);
    M(TF_AS_TARGET_VRAM, target_vram);
    M(TF_AS_LOWER_VRAM, lower_vram);
    M(TF_AS_UPPER_VRAM, upper_vram);
    M(TF_AS_MARGIN, margin);
    M(TF_AS_THRESHOLD, update_threshold);
    M(TF_AS_HISTORY, history_ms);
    M(TF_AS_CONFIDENCE, confidence_ms);
    M(TF_AS_HALF_LIFE, half_life_ms);
    M(TF_AS_MIN_COMPUTE, min_compute_ratio);
    M(TF_AS_MAX_COMPUTE, max_compute_ratio);
    M(TF_AS_MIN_VRAM, min_vram_ratio);
    M(TF_AS_MAX_VRAM, max_vram_ratio);
    M(TF_AS_INITIAL_DELAY, initial_delay_ms);
    M(TF_AS_INTERVAL, interval_ms);
#undef M
    if (s & TF_AS_RULES) {
        memcpy(b->rules, o->rules, sizeof(b->rules));
        b->nrules = o->nrules;
    }
    b->set |= s;
}

int tf_autoscale_config_resolve(json_object *rules, json_object *labels, json_object *own,
                                const char *own_path, bool annotated,
                                enum tf_autoscale_target ann_target,
                                struct tf_autoscale_config *out, char *matched, size_t matchedlen,
                                char *err, size_t errlen)
{
    tf_autoscale_config_init(out);
    if (matched && matchedlen)
        matched[0] = 0;
    char p[PATH_LEN];
    int rc;
    if (rules && !json_object_is_type(rules, json_type_array)) {
        tf_errf(err, errlen, "verticalScalingRules: expected a list");
        return TF_EINVAL;
    }
    size_t n = rules ? json_object_array_length(rules) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *r = json_object_array_get_idx(rules, i);
        json_object *sel = NULL, *as = NULL, *nm = NULL;
        if (!json_object_is_type(r, json_type_object)) {
            tf_errf(err, errlen, "verticalScalingRules[%zu]: expected a mapping", i);
            return TF_EINVAL;
        }
        json_object_object_get_ex(r, "selector", &sel);
        json_object_object_get_ex(r, "autoScaling", &as);
        json_object_object_get_ex(r, "name", &nm);
        if (!tf_selector_match(sel, labels))
            continue;
        snprintf(p, sizeof(p), "verticalScalingRules[%zu].autoScaling", i);
        struct tf_autoscale_config base;
        if ((rc = tf_autoscale_config_parse(as, p, &base, err, errlen)))
            return rc;
        *out = base;
        if (matched && matchedlen)
            tf_strlcpy(matched,
                       nm && json_object_is_type(nm, json_type_string) ? json_object_get_string(nm)
                                                                       : "",
                       matchedlen);
        break;
    }
    if (own) {
        struct tf_autoscale_config o;
        if ((rc = tf_autoscale_config_parse(own, own_path ? own_path : "autoScalingConfig", &o, err,
                                            errlen))) {
            tf_autoscale_config_init(out);
            return rc;
        }
        tf_autoscale_config_merge(out, &o);
    }
    if (annotated) {
        out->enable = true;
        out->set |= TF_AS_ENABLE;
    }
    if (ann_target != TF_AUTOSCALE_UNSET) {
        out->target = ann_target;
        out->set |= TF_AS_TARGET;
    }
    return 0;
}

/* ---- histograms ---- */

void tf_decay_hist_init(struct tf_decay_hist *h, double first, double ratio, double max,
                        int64_t half_life_ms)
{
    memset(h, 0, sizeof(*h));
    h->first = first;
    h->ratio = ratio;
    h->half_life_ms = half_life_ms > 0 ? half_life_ms : 24 * TF_MS_PER_HOUR;
    double s = 0, w = first;
    int n = 0;
    while (n < TF_HIST_MAX_BUCKETS) {
        h->start[n++] = s;
        if (s > max)
            break;
        s += w;
        w *= ratio;
    }
    h->nbuckets = n;
    h->lo = n;
    h->hi = -1;
}

static int find_bucket(const struct tf_decay_hist *h, double v)
{
    int lo = 0, hi = h->nbuckets - 1; /* start[lo] <= v */
    if (v >= h->start[hi])
        return hi;
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (h->start[mid] <= v)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

void tf_decay_hist_add(struct tf_decay_hist *h, double value, double weight, int64_t t_ms)
{
    if (!(value >= 0))
        value = 0;
    if (!(weight > 0))
        return;
    if (h->total == 0)
        h->ref_ms = t_ms;
    double e = (double)(t_ms - h->ref_ms) / (double)h->half_life_ms;
    if (e > MAX_DECAY_EXPONENT) {
        /* Move the reference forward: every weight shrinks by 2^-shift. */
        double shift = e;
        double f = exp2(-shift);
        h->total = 0;
        for (int b = 0; b < h->nbuckets; b++) {
            h->weight[b] *= f;
            h->total += h->weight[b];
        }
        h->ref_ms = t_ms;
        e = 0;
    }
    int b = find_bucket(h, value);
    double w = weight * exp2(e);
    h->weight[b] += w;
    h->total += w;
    if (b < h->lo)
        h->lo = b;
    if (b > h->hi)
        h->hi = b;
}

double tf_decay_hist_percentile(const struct tf_decay_hist *h, double p)
{
    if (h->total <= 0 || h->lo > h->hi)
        return 0;
    double threshold = p * h->total, sum = 0;
    int b = h->lo;
    for (; b < h->hi; b++) {
        sum += h->weight[b];
        if (sum >= threshold && h->weight[b] > 0)
            break;
    }
    return b + 1 < h->nbuckets ? h->start[b + 1] : h->start[b];
}

/* ---- recommendation ---- */

static int64_t round_up(double v, int64_t quantum)
{
    if (!(v > 0))
        return 0;
    if (v > MAX_AMOUNT)
        v = MAX_AMOUNT;
    double q = ceil(v / (double)quantum - 1e-9);
    return (int64_t)q * quantum;
}

static int64_t scale(int64_t v, double f, int64_t quantum)
{
    return round_up((double)v * f, quantum);
}

/* Is the cron rule active at NOW (between a start and the following end)? */
static int rule_active(const struct tf_cron_scaling_rule *r, const struct tf_tz *tz, int64_t now_ms,
                       bool *active)
{
    int64_t ns, ne;
    int rc1 = tf_cron_next(&r->start, tz, now_ms, &ns);
    int rc2 = tf_cron_next(&r->end, tz, now_ms, &ne);
    if (rc1 == TF_ERANGE || rc2 == TF_ERANGE)
        return TF_ERANGE;
    if (rc2) {
        *active = false;
        return 0;
    }
    *active = rc1 != 0 || ne < ns;
    return 0;
}

struct dim {
    bool compute;
    double tp, lp, up;
    double min_ratio, max_ratio;
    int64_t quantum;
};

static void estimate(const struct tf_decay_hist *h, const struct dim *d, double margin, double conf,
                     size_t n, struct tf_autoscale_estimate *e)
{
    double m = 1 + margin;
    e->samples = n;
    e->target = round_up(tf_decay_hist_percentile(h, d->tp) * m, d->quantum);
    e->lower =
        round_up(tf_decay_hist_percentile(h, d->lp) * m * pow(1 + 0.001 / conf, -2.0), d->quantum);
    e->upper = round_up(tf_decay_hist_percentile(h, d->up) * m * (1 + 1 / conf), d->quantum);
    e->upper_usage = round_up(tf_decay_hist_percentile(h, d->up) * m, d->quantum);
}

/* Applies the rules of one dimension; returns true when its request changed. */
static bool recommend_dim(const struct dim *d, const struct tf_autoscale_config *cfg,
                          const struct tf_autoscale_estimate *e, int64_t orig_req, int64_t orig_lim,
                          int64_t cur_req, int64_t cur_lim, int64_t ceiling, int64_t *req,
                          int64_t *lim, char *why, size_t whylen)
{
    *req = cur_req;
    *lim = cur_lim;
    const char *what = d->compute ? "compute" : "VRAM";
    if (!e->samples) {
        snprintf(why, whylen, "%s: no samples", what);
        return false;
    }
    if (cur_req >= e->lower && cur_req <= e->upper) {
        snprintf(why, whylen, "%s: request within [lower, upper] bounds", what);
        return false;
    }
    int64_t nr = e->target;
    if (cur_req > 0 && llabs(nr - cur_req) < (double)cur_req * cfg->update_threshold) {
        snprintf(why, whylen, "%s: change below updateThreshold", what);
        return false;
    }
    int64_t base_req = orig_req > 0 ? orig_req : cur_req;
    int64_t base_lim = orig_lim > 0 ? orig_lim : cur_lim;
    if (base_req > 0) {
        int64_t lo = scale(base_req, d->min_ratio, d->quantum),
                hi = scale(base_req, d->max_ratio, d->quantum);
        if (nr < lo)
            nr = lo;
        if (nr > hi)
            nr = hi;
    }
    if (nr < d->quantum)
        nr = d->quantum;
    /* Limit: same ratio to the request as now, covering the upper percentile's usage. */
    double ratio = cur_req > 0 && cur_lim > 0 ? (double)cur_lim / (double)cur_req : 1.0;
    if (ceiling > 0 && nr > ceiling) {
        nr = ceiling - ceiling % d->quantum;
        if (nr < d->quantum)
            nr = ceiling;
    }
    int64_t nl = scale(nr, ratio, d->quantum);
    if (nl < e->upper_usage)
        nl = e->upper_usage;
    if (base_lim > 0) {
        int64_t lo = d->compute ? base_lim : scale(base_lim, d->min_ratio, d->quantum),
                hi = scale(base_lim, d->max_ratio, d->quantum);
        if (nl < lo)
            nl = lo;
        if (nl > hi)
            nl = hi;
    }
    if (nl < nr)
        nl = nr;
    *req = nr;
    *lim = nl;
    snprintf(why, whylen, "%s: request %s [lower, upper] bounds", what,
             cur_req < e->lower ? "below" : "above");
    return nr != cur_req || nl != cur_lim;
}

/* The active rule's compute must be in the workload's unit: a percentage cannot be applied to
 * a workload in TFLOPS (the pods would hold both) nor TFLOPS to one in percent. */
static int unit_check(const struct tf_cron_scaling_rule *r, const struct tf_autoscale_input *in,
                      char *err, size_t errlen)
{
    const struct tf_autoscale_resources *d = &r->desired, *o = &in->original, *c = &in->current;
    bool tflops_wl = o->req_tflops || o->lim_tflops || c->req_tflops || c->lim_tflops;
    bool req;
    const char *have, *want, *unit;
    if (!in->compute_by_percent && tflops_wl && (d->req_percent || d->lim_percent)) {
        req = d->req_percent != 0;
        have = "compute", want = "tflops", unit = "TFLOPS";
    } else if (in->compute_by_percent && (d->req_tflops || d->lim_tflops)) {
        req = d->req_tflops != 0;
        have = "tflops", want = "compute", unit = "percent of a GPU";
    } else {
        return 0;
    }
    const char *side = req ? "requests" : "limits";
    tf_errf(err, errlen,
            "cronScalingRules \"%s\": desiredResources.%s.%s: this workload's compute is given "
            "in %s; give desiredResources.%s.%s instead",
            r->name, side, have, unit, side, want);
    return TF_EINVAL;
}

int tf_autoscale_recommend(const struct tf_autoscale_input *in,
                           struct tf_autoscale_recommendation *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!in || !in->cfg) {
        tf_errf(err, errlen, "autoscale: missing configuration");
        return TF_EINVAL;
    }
    const struct tf_autoscale_config *cfg = in->cfg;
    struct tf_tz *utc = NULL;
    const struct tf_tz *tz = in->tz;
    if (!tz && cfg->nrules) {
        if (tf_tz_new_utc("UTC", &utc)) {
            tf_errf(err, errlen, "autoscale: out of memory");
            return TF_ENOMEM;
        }
        tz = utc;
    }
    /* Active cron rule, at most one. */
    const struct tf_cron_scaling_rule *active = NULL;
    for (size_t i = 0; i < cfg->nrules; i++) {
        const struct tf_cron_scaling_rule *r = &cfg->rules[i];
        if (!r->enable)
            continue;
        bool on;
        if (rule_active(r, tz, in->now_ms, &on)) {
            tf_tz_destroy(utc);
            tf_errf(err, errlen, "autoscale: time out of range");
            return TF_EINVAL;
        }
        if (!on)
            continue;
        if (active) {
            tf_errf(err, errlen,
                    "cronScalingRules: rules \"%s\" and \"%s\" are active at the same time (only "
                    "one may be)",
                    active->name, r->name);
            tf_tz_destroy(utc);
            return TF_ECONFLICT;
        }
        active = r;
    }
    tf_tz_destroy(utc);
    int rc = active ? unit_check(active, in, err, errlen) : 0;
    if (rc)
        return rc;

    struct tf_autoscale_resources cur = in->current;
    if (in->current_from_cron && !active)
        cur = in->original; /* the rule's window ended: start again from the spec */
    out->resources = cur;
    char why[512] = "";

    if (!cfg->enable) {
        snprintf(why, sizeof(why), "autoSetResources is not enabled");
    } else if (in->now_ms - in->created_ms < cfg->initial_delay_ms) {
        char a[32], b[32];
        int64_t age = in->now_ms - in->created_ms;
        tf_duration_format(age > 0 ? age : 0, a, sizeof(a));
        tf_duration_format(cfg->initial_delay_ms, b, sizeof(b));
        snprintf(why, sizeof(why), "waiting for initialDelayPeriod %s (workload created %s ago)", b,
                 a);
    } else {
        struct tf_decay_hist *ht = malloc(2 * sizeof(*ht));
        if (!ht) {
            tf_errf(err, errlen, "autoscale: out of memory");
            return TF_ENOMEM;
        }
        struct tf_decay_hist *hv = ht + 1;
        tf_decay_hist_init(ht, 100, 1.05, 1e7, cfg->half_life_ms);  /* milli-TFLOPS */
        tf_decay_hist_init(hv, 1e7, 1.05, 1e12, cfg->half_life_ms); /* bytes */
        int64_t from = in->now_ms - cfg->history_ms, first = INT64_MAX, last = INT64_MIN;
        size_t nt = 0, nv = 0;
        for (size_t i = 0; i < in->nsamples; i++) {
            const struct tf_usage_sample *s = &in->samples[i];
            if (s->ts_ms < from || s->ts_ms > in->now_ms)
                continue;
            if (s->tflops_milli >= 0) {
                tf_decay_hist_add(ht, (double)s->tflops_milli, 1.0, s->ts_ms);
                nt++;
            }
            if (s->vram_bytes >= 0) {
                tf_decay_hist_add(hv, (double)s->vram_bytes, 1.0, s->ts_ms);
                nv++;
            }
            if (s->tflops_milli >= 0 || s->vram_bytes >= 0) {
                if (s->ts_ms < first)
                    first = s->ts_ms;
                if (s->ts_ms > last)
                    last = s->ts_ms;
            }
        }
        size_t nmax = nt > nv ? nt : nv;
        double ci = (double)(cfg->confidence_ms > 0 ? cfg->confidence_ms : cfg->history_ms);
        double span = nmax ? (double)(last - first) : 0;
        double bycount = (double)nmax * (double)TF_MS_PER_MIN;
        double conf = (span < bycount ? span : bycount) / ci;
        if (conf < MIN_CONFIDENCE)
            conf = MIN_CONFIDENCE;
        out->confidence = conf;
        struct dim dc = {true,
                         cfg->target_compute,
                         cfg->lower_compute,
                         cfg->upper_compute,
                         cfg->min_compute_ratio,
                         cfg->max_compute_ratio,
                         TFLOPS_QUANTUM};
        struct dim dv = {false,           cfg->target_vram,    cfg->lower_vram,
                         cfg->upper_vram, cfg->min_vram_ratio, cfg->max_vram_ratio,
                         VRAM_QUANTUM};
        estimate(ht, &dc, cfg->margin, conf, nt, &out->compute);
        estimate(hv, &dv, cfg->margin, conf, nv, &out->vram);
        free(ht);
        char wc[160] = "", wv[160] = "";
        bool ch = false;
        if (cfg->target != TF_AUTOSCALE_VRAM)
            ch |= recommend_dim(
                &dc, cfg, &out->compute, in->original.req_tflops, in->original.lim_tflops,
                cur.req_tflops, cur.lim_tflops, in->ceiling ? in->ceiling->req_tflops : 0,
                &out->resources.req_tflops, &out->resources.lim_tflops, wc, sizeof(wc));
        if (cfg->target != TF_AUTOSCALE_COMPUTE)
            ch |= recommend_dim(&dv, cfg, &out->vram, in->original.req_vram, in->original.lim_vram,
                                cur.req_vram, cur.lim_vram, in->ceiling ? in->ceiling->req_vram : 0,
                                &out->resources.req_vram, &out->resources.lim_vram, wv, sizeof(wv));
        if (ch)
            out->source = TF_AUTOSCALE_SRC_PERCENTILE;
        snprintf(why, sizeof(why), "%s%s%s", wc, wc[0] && wv[0] ? "; " : "", wv);
    }
    if (active) {
        const struct tf_autoscale_resources *d = &active->desired;
        if (d->req_tflops)
            out->resources.req_tflops = d->req_tflops;
        if (d->lim_tflops)
            out->resources.lim_tflops = d->lim_tflops;
        if (d->req_percent)
            out->resources.req_percent = d->req_percent;
        if (d->lim_percent)
            out->resources.lim_percent = d->lim_percent;
        if (d->req_vram)
            out->resources.req_vram = d->req_vram;
        if (d->lim_vram)
            out->resources.lim_vram = d->lim_vram;
        out->source = TF_AUTOSCALE_SRC_CRON;
        tf_strlcpy(out->active_rule, active->name, sizeof(out->active_rule));
        char tmp[512];
        snprintf(tmp, sizeof(tmp), "cron scaling rule \"%s\" is active", active->name);
        tf_strlcpy(why, tmp, sizeof(why));
    }
    const struct tf_autoscale_resources *r = &out->resources;
    out->changed =
        r->req_tflops != in->current.req_tflops || r->lim_tflops != in->current.lim_tflops ||
        r->req_vram != in->current.req_vram || r->lim_vram != in->current.lim_vram ||
        r->req_percent != in->current.req_percent || r->lim_percent != in->current.lim_percent;
    if (out->changed && out->source == TF_AUTOSCALE_SRC_NONE)
        out->source = TF_AUTOSCALE_SRC_PERCENTILE; /* reverting after a cron window */
    tf_strlcpy(out->reason, why, sizeof(out->reason));
    return 0;
}

json_object *tf_autoscale_resources_to_json(const struct tf_autoscale_resources *r)
{
    json_object *o = json_object_new_object(), *rq = json_object_new_object(),
                *lm = json_object_new_object();
    if (!o || !rq || !lm) {
        json_object_put(o);
        json_object_put(rq);
        json_object_put(lm);
        return NULL;
    }
    char buf[48];
    int bad = 0;
    if (r->req_tflops) {
        tf_quantity_format_milli(r->req_tflops, buf, sizeof(buf));
        bad |= json_object_object_add(rq, "tflops", json_object_new_string(buf));
    }
    if (r->req_vram) {
        tf_quantity_format_bytes(r->req_vram, buf, sizeof(buf));
        bad |= json_object_object_add(rq, "vram", json_object_new_string(buf));
    }
    if (r->lim_tflops) {
        tf_quantity_format_milli(r->lim_tflops, buf, sizeof(buf));
        bad |= json_object_object_add(lm, "tflops", json_object_new_string(buf));
    }
    if (r->lim_vram) {
        tf_quantity_format_bytes(r->lim_vram, buf, sizeof(buf));
        bad |= json_object_object_add(lm, "vram", json_object_new_string(buf));
    }
    if (r->req_percent) {
        tf_quantity_format_milli((int64_t)r->req_percent * 10, buf, sizeof(buf));
        bad |= json_object_object_add(rq, "compute", json_object_new_string(buf));
    }
    if (r->lim_percent) {
        tf_quantity_format_milli((int64_t)r->lim_percent * 10, buf, sizeof(buf));
        bad |= json_object_object_add(lm, "compute", json_object_new_string(buf));
    }
    bad |= json_object_object_add(o, "requests", rq);
    bad |= json_object_object_add(o, "limits", lm);
    if (bad) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

json_object *tf_autoscale_rule_to_json(const struct tf_cron_scaling_rule *r)
{
    json_object *o = json_object_new_object();
    json_object *d = tf_autoscale_resources_to_json(&r->desired);
    if (!o || !d || json_object_object_add(o, "enable", json_object_new_boolean(r->enable)) ||
        json_object_object_add(o, "name", json_object_new_string(r->name)) ||
        json_object_object_add(o, "start", json_object_new_string(r->start_expr)) ||
        json_object_object_add(o, "end", json_object_new_string(r->end_expr))) {
        json_object_put(o);
        json_object_put(d);
        return NULL;
    }
    json_object_object_add(o, "desiredResources", d);
    return o;
}
