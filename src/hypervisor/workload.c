/* SPDX-License-Identifier: Apache-2.0
 *
 * Workload requests: JSON parsing, defaults and validation (see workload.h).
 */
#include "hypervisor/workload.h"

#include "common/err.h"
#include "common/strutil.h"
#include "core/gpu_models.h"
#include "core/quantity.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const iso_names[] = {"soft", "shared", "hard", "remote"};

const char *tf_hv_isolation_name(enum tf_hv_isolation m)
{
    return (unsigned)m < 4 ? iso_names[m] : "unknown";
}

int tf_hv_isolation_parse(const char *s, enum tf_hv_isolation *out)
{
    for (int i = 0; s && i < 4; i++) {
        if (tf_streq_ci(s, iso_names[i])) {
            *out = (enum tf_hv_isolation)i;
            return 0;
        }
    }
    return TF_EINVAL;
}

bool tf_hv_valid_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n >= TF_HV_NAME_MAX || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
            return false;
    return true;
}

int tf_hv_request_normalize(struct tf_hv_request *r, char *err, size_t errlen)
{
    if (!tf_hv_valid_name(r->name)) {
        tf_errf(err, errlen,
                "name: \"%s\" is not a valid workload name (1..63 of a-z, 0-9, '-', starting "
                "and ending alphanumeric)",
                r->name);
        return TF_EINVAL;
    }
    if (!r->ns[0])
        snprintf(r->ns, sizeof(r->ns), "default");
    if (!tf_hv_valid_name(r->ns)) {
        tf_errf(err, errlen, "namespace: \"%s\" is not a valid name", r->ns);
        return TF_EINVAL;
    }
    if (r->gpu_count == 0)
        r->gpu_count = 1;
    if (r->gpu_count < 1 || r->gpu_count > TF_HV_MAX_GPUS) {
        tf_errf(err, errlen, "gpuCount: %d is out of range 1..%d on one machine", r->gpu_count,
                TF_HV_MAX_GPUS);
        return TF_ERANGE;
    }
    if (r->gpu_model[0] && !tf_gpu_model_find(r->gpu_model)) {
        tf_errf(err, errlen, "gpuModel: \"%s\" is not a known GPU model (see tfctl models)",
                r->gpu_model);
        return TF_EINVAL;
    }
    if ((r->tflops_request || r->tflops_limit) && (r->percent_request || r->percent_limit)) {
        if ((r->tflops_request && r->percent_request) || (r->tflops_limit && r->percent_limit)) {
            tf_errf(err, errlen, "%s: TFLOPS and compute percent are mutually exclusive",
                    r->tflops_request && r->percent_request ? "request" : "limit");
            return TF_EINVAL;
        }
        tf_errf(err, errlen,
                "compute: use either TFLOPS or compute percent for both request "
                "and limit, not a mix");
        return TF_EINVAL;
    }
    if (r->tflops_request < 0 || r->tflops_limit < 0 || r->vram_request < 0 || r->vram_limit < 0 ||
        r->percent_request < 0 || r->percent_limit < 0 || r->percent_request > 10000 ||
        r->percent_limit > 10000) {
        tf_errf(err, errlen, "resources must be >= 0 (compute percent <= 100)");
        return TF_ERANGE;
    }
    if (r->isolation == TF_HV_SHARED) {
        if (r->tflops_request || r->tflops_limit || r->vram_request || r->vram_limit ||
            (r->percent_request && r->percent_request != 10000) ||
            (r->percent_limit && r->percent_limit != 10000)) {
            tf_errf(err, errlen,
                    "isolation shared takes whole GPUs: compute and VRAM "
                    "requests/limits do not apply (use soft or hard for a share)");
            return TF_EINVAL;
        }
        r->tflops_request = r->tflops_limit = 0;
        r->percent_request = r->percent_limit = 10000;
        r->vram_request = r->vram_limit = 0;
    }
    if (!r->tflops_request && !r->tflops_limit && !r->percent_request && !r->percent_limit)
        r->percent_request = r->percent_limit = 10000;
    if (!r->tflops_request)
        r->tflops_request = r->tflops_limit;
    if (!r->tflops_limit)
        r->tflops_limit = r->tflops_request;
    if (!r->percent_request)
        r->percent_request = r->percent_limit;
    if (!r->percent_limit)
        r->percent_limit = r->percent_request;
    if (!r->vram_request)
        r->vram_request = r->vram_limit;
    if (!r->vram_limit)
        r->vram_limit = r->vram_request;
    if (r->tflops_request > r->tflops_limit || r->percent_request > r->percent_limit ||
        r->vram_request > r->vram_limit) {
        tf_errf(err, errlen, "%s request is above its limit",
                r->vram_request > r->vram_limit ? "VRAM" : "compute");
        return TF_EINVAL;
    }
    if (r->qos[0]) {
        static const char *const q[] = {"low", "medium", "high", "critical"};
        int ok = 0;
        for (int i = 0; i < 4; i++) {
            if (tf_streq_ci(r->qos, q[i])) {
                snprintf(r->qos, sizeof(r->qos), "%s", q[i]);
                ok = 1;
            }
        }
        if (!ok) {
            tf_errf(err, errlen, "qos: \"%s\" is not one of low, medium, high, critical", r->qos);
            return TF_EINVAL;
        }
    } else {
        bool eq = r->tflops_request == r->tflops_limit && r->percent_request == r->percent_limit &&
                  r->vram_request == r->vram_limit &&
                  (r->tflops_limit || r->percent_limit || r->vram_limit);
        snprintf(r->qos, sizeof(r->qos), "%s", eq ? "high" : "medium");
    }
    if (r->isolation == TF_HV_REMOTE && !r->remote[0]) {
        tf_errf(err, errlen, "isolation remote needs remote: \"host:port\"");
        return TF_EINVAL;
    }
    if (r->lease && r->pid) {
        tf_errf(err, errlen, "lease: a leased workload has no local pid");
        return TF_EINVAL;
    }
    if (r->isolation != TF_HV_REMOTE && r->remote[0]) {
        tf_errf(err, errlen, "remote is only valid with isolation remote");
        return TF_EINVAL;
    }
    return 0;
}

/* A quantity from a JSON string or number, with KIND selecting the unit. */
enum qkind { Q_BYTES, Q_MILLI, Q_PERCENT };

static int get_quantity(json_object *v, const char *key, enum qkind kind, int64_t *out, char *err,
                        size_t errlen)
{
    char buf[64];
    const char *s;
    if (json_object_is_type(v, json_type_string)) {
        s = json_object_get_string(v);
    } else if (json_object_is_type(v, json_type_int)) {
        int64_t i = json_object_get_int64(v);
        if (i < 0) {
            tf_errf(err, errlen, "%s: %" PRId64 " must not be negative", key, i);
            return TF_ERANGE;
        }
        snprintf(buf, sizeof(buf), "%" PRId64, i);
        s = buf;
    } else if (json_object_is_type(v, json_type_double)) {
        snprintf(buf, sizeof(buf), "%.6f", json_object_get_double(v));
        /* trim trailing zeros so "12.500000" parses with at most the allowed decimals */
        char *e = buf + strlen(buf) - 1;
        while (e > buf && *e == '0')
            *e-- = '\0';
        if (*e == '.')
            *e = '\0';
        s = buf;
    } else {
        tf_errf(err, errlen, "%s: expected a quantity string or number", key);
        return TF_EINVAL;
    }
    if (kind == Q_BYTES)
        return tf_quantity_bytes(s, out, key, err, errlen);
    if (kind == Q_MILLI)
        return tf_quantity_milli(s, out, key, err, errlen);
    int32_t bp;
    int rc = tf_percent_parse(s, &bp, key, err, errlen);
    if (!rc)
        *out = bp;
    return rc;
}

static int get_string(json_object *v, const char *key, char *dst, size_t cap, char *err,
                      size_t errlen)
{
    if (!json_object_is_type(v, json_type_string)) {
        tf_errf(err, errlen, "%s: expected a string", key);
        return TF_EINVAL;
    }
    if (!tf_strlcpy(dst, json_object_get_string(v), cap)) {
        tf_errf(err, errlen, "%s: longer than %zu characters", key, cap - 1);
        return TF_ERANGE;
    }
    return 0;
}

static int get_int(json_object *v, const char *key, int64_t lo, int64_t hi, int64_t *out, char *err,
                   size_t errlen)
{
    if (!json_object_is_type(v, json_type_int)) {
        tf_errf(err, errlen, "%s: expected an integer", key);
        return TF_EINVAL;
    }
    int64_t i = json_object_get_int64(v);
    if (i < lo || i > hi) {
        tf_errf(err, errlen, "%s: %" PRId64 " is out of range %" PRId64 "..%" PRId64, key, i, lo,
                hi);
        return TF_ERANGE;
    }
    *out = i;
    return 0;
}

int tf_hv_request_from_json(json_object *obj, struct tf_hv_request *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof(*r));
    if (!json_object_is_type(obj, json_type_object)) {
        tf_errf(err, errlen, "request body must be a JSON object");
        return TF_EINVAL;
    }
    int rc = 0;
    bool have_name = false;
    json_object_object_foreach(obj, key, v)
    {
        int64_t q = 0;
        char iso[16];
        if (!strcmp(key, "name")) {
            rc = get_string(v, key, r->name, sizeof(r->name), err, errlen);
            have_name = true;
        } else if (!strcmp(key, "namespace")) {
            rc = get_string(v, key, r->ns, sizeof(r->ns), err, errlen);
        } else if (!strcmp(key, "isolation")) {
            rc = get_string(v, key, iso, sizeof(iso), err, errlen);
            if (!rc && tf_hv_isolation_parse(iso, &r->isolation)) {
                tf_errf(err, errlen, "isolation: \"%s\" is not one of soft, shared, hard, remote",
                        iso);
                rc = TF_EINVAL;
            }
        } else if (!strcmp(key, "qos")) {
            rc = get_string(v, key, r->qos, sizeof(r->qos), err, errlen);
        } else if (!strcmp(key, "gpuModel")) {
            rc = get_string(v, key, r->gpu_model, sizeof(r->gpu_model), err, errlen);
        } else if (!strcmp(key, "remote")) {
            rc = get_string(v, key, r->remote, sizeof(r->remote), err, errlen);
        } else if (!strcmp(key, "gpuCount")) {
            rc = get_int(v, key, 1, 128, &q, err, errlen);
            r->gpu_count = (int)q;
        } else if (!strcmp(key, "lease")) {
            if (!json_object_is_type(v, json_type_boolean)) {
                tf_errf(err, errlen, "lease: expected true or false");
                rc = TF_EINVAL;
            }
            r->lease = json_object_get_boolean(v);
        } else if (!strcmp(key, "pid")) {
            rc = get_int(v, key, 0, INT32_MAX, &q, err, errlen);
            r->pid = (int)q;
        } else if (!strcmp(key, "tflopsRequest")) {
            rc = get_quantity(v, key, Q_MILLI, &r->tflops_request, err, errlen);
        } else if (!strcmp(key, "tflopsLimit")) {
            rc = get_quantity(v, key, Q_MILLI, &r->tflops_limit, err, errlen);
        } else if (!strcmp(key, "computePercentRequest")) {
            rc = get_quantity(v, key, Q_PERCENT, &q, err, errlen);
            r->percent_request = (int32_t)q;
        } else if (!strcmp(key, "computePercentLimit")) {
            rc = get_quantity(v, key, Q_PERCENT, &q, err, errlen);
            r->percent_limit = (int32_t)q;
        } else if (!strcmp(key, "vramRequest")) {
            rc = get_quantity(v, key, Q_BYTES, &r->vram_request, err, errlen);
        } else if (!strcmp(key, "vramLimit")) {
            rc = get_quantity(v, key, Q_BYTES, &r->vram_limit, err, errlen);
        } else {
            tf_errf(err, errlen, "unknown key \"%.64s\"", key);
            rc = TF_EINVAL;
        }
        if (rc)
            return rc;
    }
    if (!have_name) {
        tf_errf(err, errlen, "name: required");
        return TF_EINVAL;
    }
    return tf_hv_request_normalize(r, err, errlen);
}

json_object *tf_hv_request_to_json(const struct tf_hv_request *r)
{
    json_object *o = json_object_new_object();
    char buf[64];
    json_object_object_add(o, "name", json_object_new_string(r->name));
    json_object_object_add(o, "namespace", json_object_new_string(r->ns));
    json_object_object_add(o, "isolation",
                           json_object_new_string(tf_hv_isolation_name(r->isolation)));
    json_object_object_add(o, "qos", json_object_new_string(r->qos));
    json_object_object_add(o, "gpuCount", json_object_new_int(r->gpu_count));
    if (r->gpu_model[0])
        json_object_object_add(o, "gpuModel", json_object_new_string(r->gpu_model));
    if (r->tflops_limit) {
        tf_quantity_format_milli(r->tflops_request, buf, sizeof(buf));
        json_object_object_add(o, "tflopsRequest", json_object_new_string(buf));
        tf_quantity_format_milli(r->tflops_limit, buf, sizeof(buf));
        json_object_object_add(o, "tflopsLimit", json_object_new_string(buf));
    } else {
        tf_quantity_format_milli((int64_t)r->percent_request * 10, buf, sizeof(buf));
        json_object_object_add(o, "computePercentRequest", json_object_new_string(buf));
        tf_quantity_format_milli((int64_t)r->percent_limit * 10, buf, sizeof(buf));
        json_object_object_add(o, "computePercentLimit", json_object_new_string(buf));
    }
    if (r->vram_limit) {
        tf_quantity_format_bytes(r->vram_request, buf, sizeof(buf));
        json_object_object_add(o, "vramRequest", json_object_new_string(buf));
        tf_quantity_format_bytes(r->vram_limit, buf, sizeof(buf));
        json_object_object_add(o, "vramLimit", json_object_new_string(buf));
    }
    if (r->pid)
        json_object_object_add(o, "pid", json_object_new_int(r->pid));
    if (r->lease)
        json_object_object_add(o, "lease", json_object_new_boolean(true));
    if (r->remote[0])
        json_object_object_add(o, "remote", json_object_new_string(r->remote));
    return o;
}
