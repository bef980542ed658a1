/* SPDX-License-Identifier: Apache-2.0
 *
 * Cluster description documents -> tf_cluster + tf_quota_set (see cluster_yaml.h). Every
 * value is checked where it is read and every error names its path.
 */
#include "core/cluster_yaml.h"

#include "common/err.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/quantity.h"
#include "core/selector.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATHLEN 160

struct px {
    char *err;
    size_t errlen;
    enum tf_iso_policy policy;
};

__attribute__((format(printf, 4, 5))) static int bad(struct px *x, int rc, const char *path,
                                                     const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    tf_errf(x->err, x->errlen, "%s: %s", path, msg);
    return rc;
}

/* Paths longer than PATHLEN (absurdly deep or long keys) end in "...". */
static void clip(char *out, int n)
{
    if (n < 0 || n >= PATHLEN)
        memcpy(out + PATHLEN - 4, "...", 4);
}

static void join(char *out, const char *path, const char *key)
{
    clip(out, snprintf(out, PATHLEN, "%s%s%s", path, *path ? "." : "", key));
}

static void at(char *out, const char *path, size_t i)
{
    clip(out, snprintf(out, PATHLEN, "%s[%zu]", path, i));
}

/* O must be a mapping whose keys are all in ALLOWED (NULL-terminated). */
static int keys(struct px *x, json_object *o, const char *path, const char *const *allowed)
{
    if (!json_object_is_type(o, json_type_object))
        return bad(x, TF_EINVAL, *path ? path : "(document)", "must be a mapping");
    json_object_object_foreach(o, k, v)
    {
        (void)v;
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = !strcmp(*a, k);
        if (!ok) {
            char p[PATHLEN];
            join(p, path, k);
            return bad(x, TF_EINVAL, p, "unknown key");
        }
    }
    return 0;
}

/* The member KEY of O, or NULL when absent or null. */
static json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
        return NULL;
    return v;
}

static int list(struct px *x, json_object *o, const char *path, const char *key, json_object **out,
                bool required)
{
    char p[PATHLEN];
    join(p, path, key);
    *out = get(o, key);
    if (!*out)
        return required ? bad(x, TF_EINVAL, p, "required") : 0;
    if (!json_object_is_type(*out, json_type_array))
        return bad(x, TF_EINVAL, p, "must be a list");
    return 0;
}

static int str(struct px *x, json_object *o, const char *path, const char *key, const char **out,
               bool required)
{
    char p[PATHLEN];
    join(p, path, key);
    json_object *v = get(o, key);
    *out = NULL;
    if (!v)
        return required ? bad(x, TF_EINVAL, p, "required") : 0;
    if (!json_object_is_type(v, json_type_string))
        return bad(x, TF_EINVAL, p, "must be a string, got %s", json_object_to_json_string(v));
    *out = json_object_get_string(v);
    if (!**out)
        return bad(x, TF_EINVAL, p, "must not be empty");
    return 0;
}

static int integer(struct px *x, json_object *o, const char *path, const char *key, int64_t lo,
                   int64_t hi, int64_t *out, bool *present)
{
    char p[PATHLEN];
    join(p, path, key);
    json_object *v = get(o, key);
    if (present)
        *present = v != NULL;
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_int))
        return bad(x, TF_EINVAL, p, "must be an integer, got %s", json_object_to_json_string(v));
    int64_t n = json_object_get_int64(v);
    if (n < lo || n > hi)
        return bad(x, TF_ERANGE, p, "%lld out of range %lld..%lld", (long long)n, (long long)lo,
                   (long long)hi);
    *out = n;
    return 0;
}

static int boolean(struct px *x, json_object *o, const char *path, const char *key, bool *out)
{
    char p[PATHLEN];
    join(p, path, key);
    json_object *v = get(o, key);
    if (!v)
        return 0;
    if (!json_object_is_type(v, json_type_boolean))
        return bad(x, TF_EINVAL, p, "must be true or false, got %s", json_object_to_json_string(v));
    *out = json_object_get_boolean(v);
    return 0;
}

/* A quantity given as a string or a number: its text. */
static int qtext(struct px *x, json_object *v, const char *p, const char **out)
{
    if (!json_object_is_type(v, json_type_string) && !json_object_is_type(v, json_type_int) &&
        !json_object_is_type(v, json_type_double))
        return bad(x, TF_EINVAL, p, "must be a quantity, got %s", json_object_to_json_string(v));
    *out = json_object_get_string(v);
    return 0;
}

/* The quantity at PATH.KEY through PARSE (milli or bytes); *PRESENT tells whether it was given. */
static int quantity(struct px *x, json_object *o, const char *path, const char *key,
                    int (*parse)(const char *, int64_t *, const char *, char *, size_t),
                    int64_t *out, bool *present)
{
    char p[PATHLEN], msg[256];
    join(p, path, key);
    json_object *v = get(o, key);
    if (present)
        *present = v != NULL;
    if (!v)
        return 0;
    const char *t = NULL;
    int rc = qtext(x, v, p, &t);
    if (rc)
        return rc;
    if ((rc = parse(t, out, p, msg, sizeof(msg)))) {
        tf_errf(x->err, x->errlen, "%s", msg);
        return rc;
    }
    return 0;
}

/* TFLOPS (or a 0..1 weight) as thousandths. */
static int milli(struct px *x, json_object *o, const char *path, const char *key, int64_t *out,
                 bool *present)
{
    return quantity(x, o, path, key, tf_quantity_milli, out, present);
}

static int bytes(struct px *x, json_object *o, const char *path, const char *key, int64_t *out,
                 bool *present)
{
    return quantity(x, o, path, key, tf_quantity_bytes, out, present);
}

/* A price ("0.0069", or "$0.0069228" as upstream writes it) in nano-units, exactly. */
static int nano(struct px *x, json_object *o, const char *path, const char *key, int64_t *out)
{
    char p[PATHLEN], msg[256];
    join(p, path, key);
    json_object *v = get(o, key);
    if (!v)
        return 0;
    const char *t = NULL;
    int rc = qtext(x, v, p, &t);
    if (rc)
        return rc;
    if (*t == '$')
        t++;
    struct tf_quantity q;
    if ((rc = tf_quantity_parse(t, &q, p, msg, sizeof(msg)))) {
        tf_errf(x->err, x->errlen, "%s", msg);
        return rc;
    }
    int e = q.e10 + 9;
    int64_t m = q.mant;
    if (q.e2 != 0)
        return bad(x, TF_EINVAL, p, "\"%s\": a price cannot have a binary suffix", t);
    for (; e > 0; e--) {
        if (m > INT64_MAX / 10)
            return bad(x, TF_ERANGE, p, "\"%s\" is too large", t);
        m *= 10;
    }
    for (; e < 0; e++) {
        if (m % 10)
            return bad(x, TF_EINVAL, p, "\"%s\" is finer than one billionth", t);
        m /= 10;
    }
    *out = m;
    return 0;
}

static int isolation(struct px *x, json_object *o, const char *path, const char *key,
                     enum tf_isolation *out, bool node_mode)
{
    const char *s;
    char p[PATHLEN];
    join(p, path, key);
    int rc = str(x, o, path, key, &s, false);
    if (rc || !s)
        return rc;
    if (tf_isolation_parse(s, out))
        return bad(x, TF_EINVAL, p, "unknown isolation mode \"%s\"", s);
    if (node_mode && *out == TF_ISOLATION_SHARED)
        return bad(x, TF_EINVAL, p, "\"shared\" is not a node mode (soft, hard or partitioned)");
    return 0;
}

static int model(struct px *x, json_object *o, const char *path, const struct tf_gpu_model **out)
{
    const char *s;
    char p[PATHLEN];
    join(p, path, "model");
    int rc = str(x, o, path, "model", &s, true);
    if (rc)
        return rc;
    *out = tf_gpu_model_find(s);
    if (!*out)
        return bad(x, TF_EINVAL, p, "unknown GPU model \"%s\"", s);
    return 0;
}

/* ---------- partition templates ---------- */

static int parse_profiles(struct px *x, json_object *doc, struct tf_cluster *c)
{
    static const char *const pkeys[] = {"model", "computeSlots", "memorySlots", "templates", NULL};
    static const char *const tkeys[] = {"id",     "computeSlots", "memorySlots",
                                        "tflops", "vram",         NULL};
    json_object *arr;
    int rc = list(x, doc, "", "partitionTemplates", &arr, false);
    if (rc || !arr)
        return rc;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        char p[PATHLEN];
        at(p, "partitionTemplates", i);
        json_object *o = json_object_array_get_idx(arr, i);
        if ((rc = keys(x, o, p, pkeys)))
            return rc;
        struct tf_partition_profile pp;
        memset(&pp, 0, sizeof(pp));
        int64_t ct = 0, mt = 0;
        bool has_c, has_m;
        if ((rc = model(x, o, p, &pp.model)) ||
            (rc = integer(x, o, p, "computeSlots", 1, 64, &ct, &has_c)) ||
            (rc = integer(x, o, p, "memorySlots", 1, 64, &mt, &has_m)))
            return rc;
        if (!has_c || !has_m) {
            char q[PATHLEN];
            join(q, p, has_c ? "memorySlots" : "computeSlots");
            return bad(x, TF_EINVAL, q, "required");
        }
        pp.compute_total = (uint8_t)ct;
        pp.memory_total = (uint8_t)mt;
        json_object *tl;
        if ((rc = list(x, o, p, "templates", &tl, true)))
            return rc;
        char tp[PATHLEN];
        join(tp, p, "templates");
        size_t nt = json_object_array_length(tl);
        if (nt < 1 || nt > TF_PART_MAX_TEMPLATES)
            return bad(x, TF_EINVAL, tp, "needs 1..%d templates", TF_PART_MAX_TEMPLATES);
        for (size_t t = 0; t < nt; t++) {
            char q[PATHLEN];
            at(q, tp, t);
            json_object *to = json_object_array_get_idx(tl, t);
            struct tf_partition_template *pt = &pp.templates[t];
            const char *id;
            int64_t cs = 0, ms = 0;
            bool hc, hm, ht, hv;
            if ((rc = keys(x, to, q, tkeys)) || (rc = str(x, to, q, "id", &id, true)) ||
                (rc = integer(x, to, q, "computeSlots", 1, ct, &cs, &hc)) ||
                (rc = integer(x, to, q, "memorySlots", 1, mt, &ms, &hm)) ||
                (rc = milli(x, to, q, "tflops", &pt->tflops_milli, &ht)) ||
                (rc = bytes(x, to, q, "vram", &pt->vram_bytes, &hv)))
                return rc;
            if (!hc || !hm) {
                char r[PATHLEN];
                join(r, q, hc ? "memorySlots" : "computeSlots");
                return bad(x, TF_EINVAL, r, "required");
            }
            if (!tf_strlcpy(pt->id, id, sizeof(pt->id)))
                return bad(x, TF_EINVAL, q, "id \"%s\" longer than %d characters", id,
                           TF_PART_ID_MAX - 1);
            pt->compute_slots = (uint8_t)cs;
            pt->memory_slots = (uint8_t)ms;
            if (!ht)
                pt->tflops_milli = pp.model->tflops_milli * cs / ct;
            if (!hv)
                pt->vram_bytes = pp.model->vram_bytes / mt * ms;
        }
        pp.ntemplates = (uint8_t)nt;
        char msg[256];
        if ((rc = tf_cluster_set_partition_profile(c, &pp, msg, sizeof(msg))))
            return bad(x, rc, p, "%s", msg);
    }
    return 0;
}

/* ---------- pools ---------- */

static int resources(struct px *x, json_object *o, const char *path, const char *key,
                     int64_t *tflops, int64_t *vram)
{
    /* cpu/memory (upstream: cloud-vendor provisioning only) are checked, not used here. */
    static const char *const rkeys[] = {"tflops", "vram", "cpu", "memory", NULL};
    char p[PATHLEN];
    join(p, path, key);
    json_object *r = get(o, key);
    if (!r)
        return 0;
    int rc;
    int64_t ignored;
    if ((rc = keys(x, r, p, rkeys)) || (rc = milli(x, r, p, "tflops", tflops, NULL)) ||
        (rc = bytes(x, r, p, "vram", vram, NULL)) || (rc = milli(x, r, p, "cpu", &ignored, NULL)) ||
        (rc = bytes(x, r, p, "memory", &ignored, NULL)))
        return rc;
    return 0;
}

static int parse_pricing(struct px *x, json_object *qc, const char *path,
                         struct tf_pool_config *cfg)
{
    static const char *const ekeys[] = {"qos", "requests", "limitsOverRequests",
                                        "limitsOverRequestsChargingRatio", NULL};
    static const char *const rkeys[] = {"perFP16TFlopsPerHour", "perGBOfVRAMPerHour", NULL};
    json_object *arr;
    int rc = list(x, qc, path, "pricing", &arr, false);
    if (rc || !arr)
        return rc;
    char pp[PATHLEN];
    join(pp, path, "pricing");
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        char p[PATHLEN], q[PATHLEN];
        at(p, pp, i);
        json_object *e = json_object_array_get_idx(arr, i);
        const char *qs;
        enum tf_qos qos;
        if ((rc = keys(x, e, p, ekeys)) || (rc = str(x, e, p, "qos", &qs, true)))
            return rc;
        join(q, p, "qos");
        if (tf_qos_parse(qs, &qos))
            return bad(x, TF_EINVAL, q, "unknown QoS \"%s\"", qs);
        struct tf_qos_price *pr = &cfg->pricing[qos];
        if (pr->set)
            return bad(x, TF_EINVAL, q, "QoS %s priced twice", qs);
        pr->set = true;
        json_object *r = get(e, "requests");
        join(q, p, "requests");
        if (r && ((rc = keys(x, r, q, rkeys)) ||
                  (rc = nano(x, r, q, "perFP16TFlopsPerHour", &pr->tflops_hour_nano)) ||
                  (rc = nano(x, r, q, "perGBOfVRAMPerHour", &pr->vram_gib_hour_nano))))
            return rc;
        /* Upstream's limitsOverRequests is a ratio as a string ("0.3"); ours was a percent. */
        int64_t ratio = 0, milli_ratio = 0;
        bool has_pct, has_ratio;
        if ((rc = integer(x, e, p, "limitsOverRequestsChargingRatio", 0, 100000, &ratio,
                          &has_pct)) ||
            (rc = milli(x, e, p, "limitsOverRequests", &milli_ratio, &has_ratio)))
            return rc;
        join(q, p, "limitsOverRequests");
        if (has_pct && has_ratio)
            return bad(x, TF_EINVAL, q,
                       "set only one of limitsOverRequests (a ratio) and "
                       "limitsOverRequestsChargingRatio (a percent)");
        if (has_ratio && (milli_ratio < 0 || milli_ratio > 1000000))
            return bad(x, TF_ERANGE, q, "ratio must be between 0 and 1000");
        pr->limits_over_requests_pct = (int32_t)(has_ratio ? milli_ratio / 10 : ratio);
    }
    return 0;
}

/* The static mode of a node: its own, else the first matching rule, else the default. */
static int node_mode(struct px *x, json_object *nmc, json_object *node, const char *npath,
                     enum tf_isolation *out)
{
    int rc = isolation(x, node, npath, "isolationMode", out, true);
    if (rc || *out != TF_ISOLATION_UNSET || !nmc)
        return rc;
    json_object *rules = get(nmc, "isolationModeRules");
    json_object *labels = get(node, "labels");
    for (size_t i = 0; rules && i < json_object_array_length(rules); i++) {
        json_object *rule = json_object_array_get_idx(rules, i);
        if (tf_selector_match(get(rule, "selector"), labels)) {
            json_object *m = get(rule, "mode");
            return tf_isolation_parse(json_object_get_string(m), out) ? TF_EINVAL : 0;
        }
    }
    return 0; /* the pool's defaultIsolationMode (tf_cluster_add_node) */
}

static int string_map(struct px *x, json_object *o, const char *p)
{
    if (!json_object_is_type(o, json_type_object))
        return bad(x, TF_EINVAL, p, "must be a mapping");
    json_object_object_foreach(o, k, v)
    {
        if (!json_object_is_type(v, json_type_string)) {
            char q[PATHLEN];
            join(q, p, k);
            return bad(x, TF_EINVAL, q, "must be a string");
        }
    }
    return 0;
}

/* A metav1.LabelSelector: matchLabels (strings) and matchExpressions ({key, operator,
 * values}). */
static int check_selector(struct px *x, json_object *sel, const char *path)
{
    static const char *const ekeys[] = {"key", "operator", "values", NULL};
    static const char *const ops[] = {"In", "NotIn", "Exists", "DoesNotExist"};
    char p[PATHLEN];
    int rc;
    json_object *ml = get(sel, "matchLabels");
    join(p, path, "matchLabels");
    if (ml && (rc = string_map(x, ml, p)))
        return rc;
    json_object *me;
    if ((rc = list(x, sel, path, "matchExpressions", &me, false)) || !me)
        return rc;
    join(p, path, "matchExpressions");
    for (size_t i = 0; i < json_object_array_length(me); i++) {
        char q[PATHLEN], r[PATHLEN];
        at(q, p, i);
        json_object *e = json_object_array_get_idx(me, i);
        const char *key, *op;
        if ((rc = keys(x, e, q, ekeys)) || (rc = str(x, e, q, "key", &key, true)) ||
            (rc = str(x, e, q, "operator", &op, true)))
            return rc;
        bool known = false;
        for (size_t k = 0; k < 4 && !known; k++)
            known = !strcmp(ops[k], op);
        join(r, q, "operator");
        if (!known)
            return bad(x, TF_EINVAL, r, "unknown operator \"%s\" (In, NotIn, Exists, DoesNotExist)",
                       op);
        json_object *vals;
        if ((rc = list(x, e, q, "values", &vals, false)))
            return rc;
        join(r, q, "values");
        for (size_t k = 0; vals && k < json_object_array_length(vals); k++)
            if (!json_object_is_type(json_object_array_get_idx(vals, k), json_type_string))
                return bad(x, TF_EINVAL, r, "values must be strings");
    }
    return 0;
}

static int check_rules(struct px *x, json_object *nmc, const char *path)
{
    static const char *const rkeys[] = {"mode", "selector", NULL};
    static const char *const skeys[] = {"matchLabels", "matchExpressions", NULL};
    json_object *rules;
    int rc = list(x, nmc, path, "isolationModeRules", &rules, false);
    if (rc || !rules)
        return rc;
    char rp[PATHLEN];
    join(rp, path, "isolationModeRules");
    for (size_t i = 0; i < json_object_array_length(rules); i++) {
        char p[PATHLEN], s[PATHLEN];
        at(p, rp, i);
        json_object *r = json_object_array_get_idx(rules, i);
        enum tf_isolation m = TF_ISOLATION_UNSET;
        if ((rc = keys(x, r, p, rkeys)) || (rc = isolation(x, r, p, "mode", &m, true)))
            return rc;
        if (m == TF_ISOLATION_UNSET) {
            join(s, p, "mode");
            return bad(x, TF_EINVAL, s, "required");
        }
        json_object *sel = get(r, "selector");
        join(s, p, "selector");
        if (!sel)
            return bad(x, TF_EINVAL, s, "required");
        if ((rc = keys(x, sel, s, skeys)) || (rc = check_selector(x, sel, s)))
            return rc;
    }
    return 0;
}

static int parse_pool_config(struct px *x, json_object *o, const char *p,
                             struct tf_pool_config *cfg)
{
    static const char *const okeys[] = {"tflopsOversellRatio", "vramExpandToHostMem",
                                        "vramExpandToHostDisk", NULL};
    static const char *const skeys[] = {"vramWeight", "tflopsWeight", NULL};
    /* warmResources, provisioningMode and nodeCompaction are read by the efficiency planners
     * (core/efficiency.h), not by the cluster model. */
    static const char *const ckeys[] = {"minResources", "maxResources", "warmResources",
                                        "oversubscription", NULL};
    static const char *const qkeys[] = {"defaultQoS", "pricing", NULL};
    static const char *const nkeys[] = {"defaultIsolationMode", "isolationModeRules",
                                        "provisioningMode", "nodeCompaction", NULL};
    char q[PATHLEN];
    int rc;
    tf_pool_config_init(cfg);
    if ((rc = boolean(x, o, p, "isDefault", &cfg->is_default)))
        return rc;
    const char *pl;
    if ((rc = str(x, o, p, "placement", &pl, false)))
        return rc;
    join(q, p, "placement");
    if (pl && tf_placement_parse(pl, &cfg->placement))
        return bad(x, TF_EINVAL, q,
                   "unknown placement mode \"%s\" (CompactFirst, LowLoadFirst, "
                   "NodeCompactGPULowLoad)",
                   pl);
    /* Upstream keeps oversubscription in capacityConfig; ours had it on the pool: either. */
    json_object *os = get(o, "oversubscription"),
                *cos = get(get(o, "capacityConfig"), "oversubscription");
    join(q, p, os ? "oversubscription" : "capacityConfig.oversubscription");
    if (os && cos)
        return bad(x, TF_EINVAL, q, "also set in capacityConfig.oversubscription: set it once");
    if (!os)
        os = cos;
    int64_t v;
    bool has;
    if (os) {
        if ((rc = keys(x, os, q, okeys)) ||
            (rc = integer(x, os, q, "tflopsOversellRatio", 100, 100000, &v, &has)))
            return rc;
        if (has)
            cfg->tflops_oversell_pct = (int32_t)v;
        if ((rc = integer(x, os, q, "vramExpandToHostMem", 0, 100, &v, &has)))
            return rc;
        if (has)
            cfg->vram_expand_host_mem_pct = (int32_t)v;
        /* Checked; VRAM is not tiered to host disk here (docs/spec.md). */
        if ((rc = integer(x, os, q, "vramExpandToHostDisk", 0, 100, &v, &has)))
            return rc;
    }
    json_object *sc = get(o, "scoring");
    join(q, p, "scoring");
    if (sc) {
        int64_t vw = 0, tw = 0;
        bool hv, ht;
        if ((rc = keys(x, sc, q, skeys)) || (rc = milli(x, sc, q, "vramWeight", &vw, &hv)) ||
            (rc = milli(x, sc, q, "tflopsWeight", &tw, &ht)))
            return rc;
        if ((hv && vw > 1000) || (ht && tw > 1000))
            return bad(x, TF_ERANGE, q, "weights must be between 0 and 1");
        if (hv && !ht)
            tw = 1000 - vw;
        if (ht && !hv)
            vw = 1000 - tw;
        if (hv || ht) {
            if (vw + tw != 1000)
                return bad(x, TF_EINVAL, q, "vramWeight + tflopsWeight must be 1");
            cfg->vram_weight = (int32_t)vw;
            cfg->tflops_weight = (int32_t)tw;
        }
    }
    if ((rc = integer(x, o, p, "maxWorkersPerNode", 0, 1000000, &v, &has)))
        return rc;
    if (has)
        cfg->max_workers_per_node = (uint32_t)v;
    json_object *cc = get(o, "capacityConfig");
    join(q, p, "capacityConfig");
    if (cc && ((rc = keys(x, cc, q, ckeys)) ||
               (rc = resources(x, cc, q, "minResources", &cfg->min_tflops, &cfg->min_vram)) ||
               (rc = resources(x, cc, q, "maxResources", &cfg->max_tflops, &cfg->max_vram))))
        return rc;
    json_object *qc = get(o, "qosConfig");
    join(q, p, "qosConfig");
    if (qc) {
        const char *dq;
        char r[PATHLEN];
        if ((rc = keys(x, qc, q, qkeys)) || (rc = str(x, qc, q, "defaultQoS", &dq, false)) ||
            (rc = parse_pricing(x, qc, q, cfg)))
            return rc;
        join(r, q, "defaultQoS");
        if (dq && tf_qos_parse(dq, &cfg->default_qos))
            return bad(x, TF_EINVAL, r, "unknown QoS \"%s\"", dq);
    }
    json_object *nmc = get(o, "nodeManagerConfig");
    join(q, p, "nodeManagerConfig");
    if (nmc) {
        enum tf_isolation m = TF_ISOLATION_UNSET;
        if ((rc = keys(x, nmc, q, nkeys)) ||
            (rc = isolation(x, nmc, q, "defaultIsolationMode", &m, true)) ||
            (rc = check_rules(x, nmc, q)))
            return rc;
        if (m != TF_ISOLATION_UNSET)
            cfg->default_isolation = m;
    }
    return 0;
}

/* ---------- nodes ---------- */

struct gpubuf {
    struct tf_gpu_spec g[TF_NODE_MAX_GPUS];
    char uuid[TF_NODE_MAX_GPUS][300];
    unsigned n;
};

static int gpu_common(struct px *x, json_object *o, const char *p, struct tf_gpu_spec *g)
{
    const char *ph;
    int rc = str(x, o, p, "phase", &ph, false);
    if (rc)
        return rc;
    g->phase = TF_GPU_RUNNING;
    char q[PATHLEN];
    join(q, p, "phase");
    if (ph && tf_gpu_phase_parse(ph, &g->phase))
        return bad(x, TF_EINVAL, q,
                   "unknown phase \"%s\" (Pending, Provisioning, Running, Unknown, Destroying, "
                   "Migrating)",
                   ph);
    if ((rc = milli(x, o, p, "tflops", &g->tflops_milli, NULL)) ||
        (rc = bytes(x, o, p, "vram", &g->vram_bytes, NULL)))
        return rc;
    return 0;
}

static int parse_gpus(struct px *x, json_object *node, const char *np, const char *name,
                      struct gpubuf *b)
{
    static const char *const ckeys[] = {"model", "count",  "nvlink", "numaNodes",
                                        "phase", "tflops", "vram",   NULL};
    static const char *const ekeys[] = {"uuid",  "model",  "index", "numa", "nvlink",
                                        "phase", "tflops", "vram",  NULL};
    json_object *arr;
    int rc = list(x, node, np, "gpus", &arr, true);
    if (rc)
        return rc;
    char gp[PATHLEN];
    join(gp, np, "gpus");
    size_t n = json_object_array_length(arr);
    if (n == 0)
        return bad(x, TF_EINVAL, gp, "needs at least one GPU");
    /* Pass 1: indexes taken explicitly. */
    uint64_t taken = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *o = json_object_array_get_idx(arr, i);
        char p[PATHLEN];
        at(p, gp, i);
        if (!json_object_is_type(o, json_type_object))
            return bad(x, TF_EINVAL, p, "must be a mapping");
        if (!get(o, "count")) {
            int64_t idx = 0;
            bool has;
            if ((rc = integer(x, o, p, "index", 0, TF_NODE_MAX_GPUS - 1, &idx, &has)))
                return rc;
            if (has) {
                char q[PATHLEN];
                join(q, p, "index");
                if (taken & (UINT64_C(1) << idx))
                    return bad(x, TF_EINVAL, q, "index %lld used twice", (long long)idx);
                taken |= UINT64_C(1) << idx;
            }
        }
    }
    /* Pass 2: build the GPUs; `count` entries and entries without an index take the lowest
     * free indexes. */
    b->n = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *o = json_object_array_get_idx(arr, i);
        char p[PATHLEN], q[PATHLEN];
        at(p, gp, i);
        bool counted = get(o, "count") != NULL;
        if ((rc = keys(x, o, p, counted ? ckeys : ekeys)))
            return rc;
        struct tf_gpu_spec tmpl;
        memset(&tmpl, 0, sizeof(tmpl));
        tmpl.numa = -1;
        if ((rc = model(x, o, p, &tmpl.model)) || (rc = gpu_common(x, o, p, &tmpl)))
            return rc;
        int64_t count = 1, numas = 1;
        bool linked = false;
        if (counted) {
            if ((rc = integer(x, o, p, "count", 1, TF_NODE_MAX_GPUS, &count, NULL)) ||
                (rc = integer(x, o, p, "numaNodes", 1, 64, &numas, NULL)) ||
                (rc = boolean(x, o, p, "nvlink", &linked)))
                return rc;
        }
        if (b->n + count > TF_NODE_MAX_GPUS)
            return bad(x, TF_EINVAL, gp, "more than %d GPUs on one node", TF_NODE_MAX_GPUS);
        unsigned first = b->n;
        uint64_t group = 0;
        for (int64_t k = 0; k < count; k++) {
            struct tf_gpu_spec *g = &b->g[b->n];
            *g = tmpl;
            int64_t idx = -1;
            bool has = false;
            if (!counted && (rc = integer(x, o, p, "index", 0, 63, &idx, &has)))
                return rc;
            if (!has) {
                if (taken == ~UINT64_C(0))
                    return bad(x, TF_EINVAL, gp, "no free GPU index left");
                idx = __builtin_ctzll(~taken);
                taken |= UINT64_C(1) << idx;
            }
            g->index = (int32_t)idx;
            group |= UINT64_C(1) << idx;
            if (counted) {
                g->numa = (int16_t)(k * numas / count);
                snprintf(b->uuid[b->n], sizeof(b->uuid[0]), "GPU-%s-%d", name, g->index);
            } else {
                const char *u;
                int64_t numa = -1;
                bool hn;
                if ((rc = str(x, o, p, "uuid", &u, false)) ||
                    (rc = integer(x, o, p, "numa", 0, 1023, &numa, &hn)))
                    return rc;
                g->numa = hn ? (int16_t)numa : -1;
                if (u)
                    tf_strlcpy(b->uuid[b->n], u, sizeof(b->uuid[0]));
                else
                    snprintf(b->uuid[b->n], sizeof(b->uuid[0]), "GPU-%s-%d", name, g->index);
                json_object *nv = get(o, "nvlink");
                join(q, p, "nvlink");
                if (nv && !json_object_is_type(nv, json_type_array))
                    return bad(x, TF_EINVAL, q, "must be a list of GPU indexes");
                for (size_t l = 0; nv && l < json_object_array_length(nv); l++) {
                    json_object *e = json_object_array_get_idx(nv, l);
                    int64_t peer =
                        json_object_is_type(e, json_type_int) ? json_object_get_int64(e) : -1;
                    if (peer < 0 || peer >= TF_NODE_MAX_GPUS)
                        return bad(x, TF_EINVAL, q, "%s is not a GPU index 0..63",
                                   json_object_to_json_string(e));
                    g->nvlink |= UINT64_C(1) << peer;
                }
            }
            g->uuid = b->uuid[b->n];
            b->n++;
        }
        if (linked)
            for (unsigned k = first; k < b->n; k++)
                b->g[k].nvlink = group & ~(UINT64_C(1) << b->g[k].index);
    }
    return 0;
}

static int parse_nodes(struct px *x, json_object *o, const char *pp, struct tf_cluster *c,
                       uint32_t pool, json_object *nmc)
{
    static const char *const nkeys[] = {
        "name", "labels", "isolationMode", "hostMemory", "maxWorkers", "gpus", NULL};
    json_object *arr;
    int rc = list(x, o, pp, "nodes", &arr, true);
    if (rc)
        return rc;
    char np[PATHLEN];
    join(np, pp, "nodes");
    struct gpubuf *b = malloc(sizeof(*b));
    if (!b)
        return bad(x, TF_ENOMEM, np, "out of memory");
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        char p[PATHLEN], q[PATHLEN];
        at(p, np, i);
        json_object *n = json_object_array_get_idx(arr, i);
        const char *name;
        struct tf_node_spec ns;
        memset(&ns, 0, sizeof(ns));
        int64_t mw = 0;
        if ((rc = keys(x, n, p, nkeys)) || (rc = str(x, n, p, "name", &name, true)) ||
            (rc = bytes(x, n, p, "hostMemory", &ns.host_mem_bytes, NULL)) ||
            (rc = integer(x, n, p, "maxWorkers", 0, 1000000, &mw, NULL)))
            goto out;
        json_object *labels = get(n, "labels");
        join(q, p, "labels");
        if (labels && (rc = string_map(x, labels, q)))
            goto out;
        if ((rc = node_mode(x, nmc, n, p, &ns.static_mode)))
            goto out;
        if ((rc = parse_gpus(x, n, p, name, b)))
            goto out;
        ns.name = name;
        ns.max_workers = (uint32_t)mw;
        ns.gpus = b->g;
        ns.ngpus = (uint16_t)b->n;
        char msg[256];
        if ((rc = tf_cluster_add_node(c, pool, &ns, NULL, msg, sizeof(msg)))) {
            rc = bad(x, rc == TF_ENOMEM ? TF_ENOMEM : TF_EINVAL, p, "%s", msg);
            goto out;
        }
    }
out:
    free(b);
    return rc;
}

static int parse_pools(struct px *x, json_object *doc, struct tf_cluster *c)
{
    static const char *const pkeys[] = {"name",
                                        "isDefault",
                                        "placement",
                                        "oversubscription",
                                        "scoring",
                                        "maxWorkersPerNode",
                                        "capacityConfig",
                                        "qosConfig",
                                        "nodeManagerConfig",
                                        "nodes",
                                        NULL};
    json_object *arr;
    int rc = list(x, doc, "", "pools", &arr, true);
    if (rc)
        return rc;
    if (json_object_array_length(arr) == 0)
        return bad(x, TF_EINVAL, "pools", "needs at least one pool");
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        char p[PATHLEN];
        at(p, "pools", i);
        json_object *o = json_object_array_get_idx(arr, i);
        const char *name;
        struct tf_pool_config cfg;
        if ((rc = keys(x, o, p, pkeys)) || (rc = str(x, o, p, "name", &name, true)) ||
            (rc = parse_pool_config(x, o, p, &cfg)))
            return rc;
        uint32_t id;
        char msg[256];
        if ((rc = tf_cluster_add_pool(c, name, &cfg, &id, msg, sizeof(msg))))
            return bad(x, rc == TF_ENOMEM ? TF_ENOMEM : TF_EINVAL, p, "%s", msg);
        if ((rc = parse_nodes(x, o, p, c, id, get(o, "nodeManagerConfig"))))
            return rc;
    }
    return 0;
}

/* ---------- quotas ---------- */

static int quota_res(struct px *x, json_object *o, const char *path, const char *key,
                     struct tf_quota_res *r)
{
    int64_t t = TF_QUOTA_UNSET, v = TF_QUOTA_UNSET;
    int rc = resources(x, o, path, key, &t, &v);
    r->tflops = t;
    r->vram = v;
    return rc;
}

static int parse_quotas(struct px *x, json_object *doc, struct tf_quota_set *qs)
{
    static const char *const qkeys[] = {"namespace", "total", "single", NULL};
    static const char *const tkeys[] = {"requests", "limits", "maxWorkers", "alertThresholdPercent",
                                        NULL};
    static const char *const skeys[] = {"maxRequests",     "maxLimits",     "maxGPUCount",
                                        "defaultRequests", "defaultLimits", NULL};
    json_object *arr;
    int rc = list(x, doc, "", "quotas", &arr, false);
    if (rc || !arr)
        return rc;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        char p[PATHLEN], q[PATHLEN];
        at(p, "quotas", i);
        json_object *o = json_object_array_get_idx(arr, i);
        const char *ns;
        struct tf_quota_spec s;
        tf_quota_spec_init(&s);
        if ((rc = keys(x, o, p, qkeys)) || (rc = str(x, o, p, "namespace", &ns, true)))
            return rc;
        if (tf_quota_get(qs, ns, strlen(ns))) {
            join(q, p, "namespace");
            return bad(x, TF_EINVAL, q, "namespace \"%s\" has a quota already", ns);
        }
        json_object *t = get(o, "total");
        join(q, p, "total");
        int64_t v;
        bool has;
        if (t) {
            if ((rc = keys(x, t, q, tkeys)) ||
                (rc = quota_res(x, t, q, "requests", &s.total_requests)) ||
                (rc = quota_res(x, t, q, "limits", &s.total_limits)) ||
                (rc = integer(x, t, q, "maxWorkers", 0, INT32_MAX, &v, &has)))
                return rc;
            if (has)
                s.max_workers = (int32_t)v;
            if ((rc = integer(x, t, q, "alertThresholdPercent", 0, 100, &v, &has)))
                return rc;
            if (has)
                s.alert_threshold_pct = (int32_t)v;
        }
        json_object *sg = get(o, "single");
        join(q, p, "single");
        if (sg) {
            if ((rc = keys(x, sg, q, skeys)) ||
                (rc = quota_res(x, sg, q, "maxRequests", &s.max_requests)) ||
                (rc = quota_res(x, sg, q, "maxLimits", &s.max_limits)) ||
                (rc = quota_res(x, sg, q, "defaultRequests", &s.default_requests)) ||
                (rc = quota_res(x, sg, q, "defaultLimits", &s.default_limits)) ||
                (rc = integer(x, sg, q, "maxGPUCount", 1, TF_SPEC_MAX_GPUS, &v, &has)))
                return rc;
            if (has)
                s.max_gpu_count = (int32_t)v;
        }
        char msg[256];
        if ((rc = tf_quota_put(qs, ns, &s, msg, sizeof(msg))))
            return bad(x, rc, p, "%s", msg);
    }
    return 0;
}

int tf_cluster_from_json(json_object *doc, struct tf_cluster **cluster,
                         struct tf_quota_set **quotas, char *err, size_t errlen)
{
    static const char *const dkeys[] = {"isolationModePolicy", "partitionTemplates", "quotas",
                                        "pools", NULL};
    struct px x = {err, errlen, TF_ISOPOL_DYNAMIC};
    struct tf_cluster *c = NULL;
    struct tf_quota_set *qs = NULL;
    *cluster = NULL;
    *quotas = NULL;
    int rc = keys(&x, doc, "", dkeys);
    if (rc)
        return rc;
    const char *pol;
    if ((rc = str(&x, doc, "", "isolationModePolicy", &pol, false)))
        return rc;
    if (pol && tf_iso_policy_parse(pol, &x.policy))
        return bad(&x, TF_EINVAL, "isolationModePolicy",
                   "unknown policy \"%s\" (dynamic or static)", pol);
    c = tf_cluster_new(x.policy);
    qs = tf_quota_set_new();
    if (!c || !qs) {
        rc = bad(&x, TF_ENOMEM, "(document)", "out of memory");
        goto out;
    }
    if ((rc = parse_profiles(&x, doc, c)) || (rc = parse_quotas(&x, doc, qs)) ||
        (rc = parse_pools(&x, doc, c)))
        goto out;
    *cluster = c;
    *quotas = qs;
    return 0;
out:
    tf_cluster_destroy(c);
    tf_quota_set_destroy(qs);
    return rc;
}

int tf_cluster_yaml_parse(const char *buf, size_t len, struct tf_cluster **cluster,
                          struct tf_quota_set **quotas, char *err, size_t errlen)
{
    json_object *docs = NULL;
    char msg[256];
    *cluster = NULL;
    *quotas = NULL;
    int rc = tf_manifest_parse(buf, len, &docs, msg, sizeof(msg));
    if (rc) {
        tf_errf(err, errlen, "%s", msg);
        return rc;
    }
    size_t n = json_object_array_length(docs);
    if (n != 1) {
        tf_errf(err, errlen, "a cluster description is one document, found %zu", n);
        json_object_put(docs);
        return TF_EINVAL;
    }
    rc = tf_cluster_from_json(json_object_array_get_idx(docs, 0), cluster, quotas, err, errlen);
    json_object_put(docs);
    return rc;
}
