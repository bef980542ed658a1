/* SPDX-License-Identifier: Apache-2.0
 *
 * Parsing a pool's capacityConfig and nodeManagerConfig efficiency blocks (see efficiency.h).
 */
#include "core/efficiency.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/quantity.h"
#include "core/timeutil.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PATH_MAX_LEN 256

static const char *const prov_names[] = {"AutoSelect", "Provisioned", "Karpenter"};

const char *tf_provisioning_mode_name(enum tf_provisioning_mode m)
{
    return (unsigned)m < 3 ? prov_names[m] : NULL;
}

int tf_provisioning_mode_parse(const char *s, enum tf_provisioning_mode *out)
{
    for (int i = 0; i < 3; i++)
        if (s && !strcmp(s, prov_names[i])) {
            *out = (enum tf_provisioning_mode)i;
            return 0;
        }
    return TF_EINVAL;
}

void tf_pool_efficiency_init(struct tf_pool_efficiency *out)
{
    memset(out, 0, sizeof(*out));
    out->provisioning = TF_PROVISION_AUTO_SELECT;
    out->compaction_period_ms = TF_COMPACTION_DEFAULT_PERIOD_MS;
    struct tf_defrag_config *d = &out->defrag;
    tf_strlcpy(d->schedule, TF_DEFRAG_DEFAULT_SCHEDULE, sizeof(d->schedule));
    char err[64];
    (void)tf_cron_parse(d->schedule, &d->cron, NULL, err, sizeof(err));
    d->max_duration_ms = TF_DEFRAG_DEFAULT_MAX_DURATION_MS;
    d->utilization_threshold_pct = TF_DEFRAG_DEFAULT_THRESHOLD_PCT;
}

/* PATH "." KEY into BUF. */
static const char *join(char *buf, const char *path, const char *key)
{
    int n = path && *path ? snprintf(buf, PATH_MAX_LEN, "%s.%s", path, key)
                          : snprintf(buf, PATH_MAX_LEN, "%s", key);
    if (n < 0)
        buf[0] = 0; /* truncation is harmless: it only shortens a message */
    return buf;
}

/* The text of a scalar for quantity parsing: strings as is, numbers formatted exactly. */
static const char *scalar_text(json_object *v, char *buf, size_t len)
{
    switch (json_object_get_type(v)) {
    case json_type_string:
        return json_object_get_string(v);
    case json_type_int:
        snprintf(buf, len, "%lld", (long long)json_object_get_int64(v));
        return buf;
    case json_type_double:
        snprintf(buf, len, "%.15g", json_object_get_double(v));
        return buf;
    default:
        return NULL;
    }
}

int tf_json_quantity_milli(json_object *v, int64_t *out, const char *key, char *err, size_t errlen)
{
    char buf[64];
    const char *s = scalar_text(v, buf, sizeof(buf));
    if (!s) {
        tf_errf(err, errlen, "%s: expected a quantity (e.g. \"10\" or \"0.5\")", key);
        return TF_EINVAL;
    }
    return tf_quantity_milli(s, out, key, err, errlen);
}

int tf_json_quantity_bytes(json_object *v, int64_t *out, const char *key, char *err, size_t errlen)
{
    char buf[64];
    const char *s = scalar_text(v, buf, sizeof(buf));
    if (!s) {
        tf_errf(err, errlen, "%s: expected a quantity (e.g. 10Gi)", key);
        return TF_EINVAL;
    }
    return tf_quantity_bytes(s, out, key, err, errlen);
}

int tf_json_percent(json_object *v, int32_t *bp, const char *key, char *err, size_t errlen)
{
    char buf[64];
    const char *s = scalar_text(v, buf, sizeof(buf));
    if (!s) {
        tf_errf(err, errlen, "%s: expected a percentage of one GPU (e.g. \"50\")", key);
        return TF_EINVAL;
    }
    return tf_percent_parse(s, bp, key, err, errlen);
}

/* Rejects keys of OBJ not in ALLOWED (NULL-terminated). */
static int only_keys(json_object *obj, const char *path, const char *const *allowed, char *err,
                     size_t errlen)
{
    json_object_object_foreach(obj, k, v)
    {
        (void)v;
        bool ok = false;
        for (int i = 0; allowed[i]; i++)
            if (!strcmp(k, allowed[i]))
                ok = true;
        if (!ok) {
            char p[PATH_MAX_LEN];
            char list[200] = "";
            size_t n = 0;
            for (int i = 0; allowed[i] && n < sizeof(list); i++)
                n +=
                    (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? ", " : "", allowed[i]);
            tf_errf(err, errlen, "%s: unknown field (expected one of: %s)", join(p, path, k), list);
            return TF_EINVAL;
        }
    }
    return 0;
}

static int want_object(json_object *v, const char *path, char *err, size_t errlen)
{
    if (!json_object_is_type(v, json_type_object)) {
        tf_errf(err, errlen, "%s: expected a mapping", path);
        return TF_EINVAL;
    }
    return 0;
}

static int parse_capacity(json_object *obj, const char *path, struct tf_capacity *out, char *err,
                          size_t errlen)
{
    static const char *const keys[] = {"tflops", "vram", "cpu", "memory", NULL};
    int rc = want_object(obj, path, err, errlen);
    if (rc || (rc = only_keys(obj, path, keys, err, errlen)))
        return rc;
    char p[PATH_MAX_LEN];
    json_object *v;
    if (json_object_object_get_ex(obj, "tflops", &v) && v) {
        rc = tf_json_quantity_milli(v, &out->tflops_milli, join(p, path, "tflops"), err, errlen);
        if (rc)
            return rc;
        out->tflops_set = true;
    }
    if (json_object_object_get_ex(obj, "vram", &v) && v) {
        rc = tf_json_quantity_bytes(v, &out->vram_bytes, join(p, path, "vram"), err, errlen);
        if (rc)
            return rc;
        out->vram_set = true;
    }
    return 0;
}

static int parse_bool(json_object *v, const char *path, bool *out, char *err, size_t errlen)
{
    if (json_object_is_type(v, json_type_boolean)) {
        *out = json_object_get_boolean(v);
        return 0;
    }
    if (json_object_is_type(v, json_type_string) &&
        tf_parse_bool(json_object_get_string(v), out) == 0)
        return 0;
    tf_errf(err, errlen, "%s: expected true or false", path);
    return TF_EINVAL;
}

static int parse_string(json_object *v, const char *path, const char **out, char *err,
                        size_t errlen)
{
    if (!json_object_is_type(v, json_type_string)) {
        tf_errf(err, errlen, "%s: expected a string", path);
        return TF_EINVAL;
    }
    *out = json_object_get_string(v);
    return 0;
}

static int parse_duration(json_object *v, const char *path, int64_t *out, char *err, size_t errlen)
{
    const char *s;
    int rc = parse_string(v, path, &s, err, errlen);
    if (rc)
        return rc;
    rc = tf_duration_parse(s, out, path, err, errlen);
    if (rc)
        return rc;
    if (*out <= 0) {
        tf_errf(err, errlen, "%s: \"%s\": must be longer than zero", path, s);
        return TF_ERANGE;
    }
    return 0;
}

static int parse_defrag(json_object *obj, const char *path, struct tf_defrag_config *d, char *err,
                        size_t errlen)
{
    static const char *const keys[] = {"enabled",
                                       "schedule",
                                       "timezone",
                                       "maxDuration",
                                       "utilizationThresholdPercent",
                                       "evictedPodMarkerTTL",
                                       "sourceNodeMarkerTTL",
                                       NULL};
    int rc = want_object(obj, path, err, errlen);
    if (rc || (rc = only_keys(obj, path, keys, err, errlen)))
        return rc;
    char p[PATH_MAX_LEN];
    json_object *v;
    const char *s;
    if (json_object_object_get_ex(obj, "enabled", &v) && v &&
        (rc = parse_bool(v, join(p, path, "enabled"), &d->enabled, err, errlen)))
        return rc;
    if (json_object_object_get_ex(obj, "schedule", &v) && v) {
        join(p, path, "schedule");
        if ((rc = parse_string(v, p, &s, err, errlen)))
            return rc;
        if ((rc = tf_cron_parse(s, &d->cron, p, err, errlen)))
            return rc;
        tf_strlcpy(d->schedule, s, sizeof(d->schedule));
    }
    if (json_object_object_get_ex(obj, "timezone", &v) && v) {
        join(p, path, "timezone");
        if ((rc = parse_string(v, p, &s, err, errlen)))
            return rc;
        if (!tf_tz_name_valid(s, p, err, errlen))
            return TF_EINVAL;
        tf_strlcpy(d->timezone, s, sizeof(d->timezone));
    }
    if (json_object_object_get_ex(obj, "maxDuration", &v) && v &&
        (rc = parse_duration(v, join(p, path, "maxDuration"), &d->max_duration_ms, err, errlen)))
        return rc;
    if (json_object_object_get_ex(obj, "utilizationThresholdPercent", &v) && v) {
        join(p, path, "utilizationThresholdPercent");
        int64_t pct = -1;
        if (json_object_is_type(v, json_type_int)) {
            pct = json_object_get_int64(v);
        } else if (json_object_is_type(v, json_type_string)) {
            const char *t = json_object_get_string(v);
            char *end;
            long long x = strtoll(t, &end, 10);
            if (*t && !*end)
                pct = x;
            else {
                tf_errf(err, errlen, "%s: \"%s\" is not a whole number", p, t);
                return TF_EINVAL;
            }
        } else {
            tf_errf(err, errlen, "%s: expected a whole number 0..100", p);
            return TF_EINVAL;
        }
        if (pct < 0 || pct > 100) {
            tf_errf(err, errlen, "%s: %lld is out of range 0..100", p, (long long)pct);
            return TF_ERANGE;
        }
        d->utilization_threshold_pct = (int32_t)pct;
    }
    /* Upstream's marker TTLs: durations or "never". Checked; our runs keep no markers. */
    static const char *const ttls[] = {"evictedPodMarkerTTL", "sourceNodeMarkerTTL"};
    for (size_t i = 0; i < 2; i++) {
        if (!json_object_object_get_ex(obj, ttls[i], &v) || !v)
            continue;
        join(p, path, ttls[i]);
        int64_t ms;
        if ((rc = parse_string(v, p, &s, err, errlen)))
            return rc;
        if (strcasecmp(s, "never") != 0 && (rc = tf_duration_parse(s, &ms, p, err, errlen)))
            return rc;
    }
    /* Upstream evaluates the schedule in the controller's local time, UTC in its image. */
    if (!d->timezone[0])
        tf_strlcpy(d->timezone, "UTC", sizeof(d->timezone));
    return 0;
}

static int parse_compaction(json_object *obj, const char *path, struct tf_pool_efficiency *out,
                            char *err, size_t errlen)
{
    static const char *const keys[] = {"period", "defrag", NULL};
    int rc = want_object(obj, path, err, errlen);
    if (rc || (rc = only_keys(obj, path, keys, err, errlen)))
        return rc;
    char p[PATH_MAX_LEN];
    json_object *v;
    if (json_object_object_get_ex(obj, "period", &v) && v &&
        (rc = parse_duration(v, join(p, path, "period"), &out->compaction_period_ms, err, errlen)))
        return rc;
    if (json_object_object_get_ex(obj, "defrag", &v) && v &&
        (rc = parse_defrag(v, join(p, path, "defrag"), &out->defrag, err, errlen)))
        return rc;
    return 0;
}

static int parse_all(json_object *spec, const char *path, struct tf_pool_efficiency *out, char *err,
                     size_t errlen)
{
    char p[PATH_MAX_LEN], q[PATH_MAX_LEN];
    int rc = want_object(spec, path && *path ? path : "pool spec", err, errlen);
    if (rc)
        return rc;
    json_object *cc, *nm, *v;
    if (json_object_object_get_ex(spec, "capacityConfig", &cc) && cc) {
        join(p, path, "capacityConfig");
        if ((rc = want_object(cc, p, err, errlen)))
            return rc;
        static const struct {
            const char *key;
            size_t off;
        } blocks[] = {
            {"minResources", offsetof(struct tf_pool_efficiency, min)},
            {"warmResources", offsetof(struct tf_pool_efficiency, warm)},
            {"maxResources", offsetof(struct tf_pool_efficiency, max)},
        };
        for (size_t i = 0; i < 3; i++)
            if (json_object_object_get_ex(cc, blocks[i].key, &v) && v &&
                (rc = parse_capacity(v, join(q, p, blocks[i].key),
                                     (struct tf_capacity *)((char *)out + blocks[i].off), err,
                                     errlen)))
                return rc;
    }
    if (json_object_object_get_ex(spec, "nodeManagerConfig", &nm) && nm) {
        join(p, path, "nodeManagerConfig");
        if ((rc = want_object(nm, p, err, errlen)))
            return rc;
        if (json_object_object_get_ex(nm, "provisioningMode", &v) && v) {
            const char *s;
            join(q, p, "provisioningMode");
            if ((rc = parse_string(v, q, &s, err, errlen)))
                return rc;
            if (tf_provisioning_mode_parse(s, &out->provisioning)) {
                tf_errf(err, errlen,
                        "%s: \"%s\" is not a provisioning mode (AutoSelect, Provisioned or "
                        "Karpenter)",
                        q, s);
                return TF_EINVAL;
            }
        }
        if (json_object_object_get_ex(nm, "nodeCompaction", &v) && v &&
            (rc = parse_compaction(v, join(q, p, "nodeCompaction"), out, err, errlen)))
            return rc;
    }
    return 0;
}

int tf_pool_efficiency_parse(json_object *spec, const char *path, struct tf_pool_efficiency *out,
                             char *err, size_t errlen)
{
    tf_pool_efficiency_init(out);
    if (!spec)
        return 0;
    int rc = parse_all(spec, path, out, err, errlen);
    if (rc)
        tf_pool_efficiency_init(out);
    return rc;
}
