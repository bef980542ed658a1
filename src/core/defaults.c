/* SPDX-License-Identifier: Apache-2.0
 *
 * GPUPool, GPUResourceQuota and ProviderConfig objects into a pod's spec defaults (see
 * defaults.h).
 */
#include "core/defaults.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/strutil.h"
#include "core/quantity.h"
#include "core/spec_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool tf_pool_is_default(json_object *pool)
{
    const char *v =
        tf__get_str(tf__get(tf__get(pool, "metadata"), "annotations"), TF_ANN_DEFAULT_POOL);
    return v && !strcmp(v, "true");
}

void tf_defaults_from_pool(json_object *pool, struct tf_pool_defaults *d)
{
    json_object *spec = tf__get(pool, "spec");
    const char *name = tf__get_str(tf__get(pool, "metadata"), "name");
    if (name)
        d->pool_name = name;
    const char *qos = tf__get_str(tf__get(spec, "qosConfig"), "defaultQoS");
    if (qos)
        tf_qos_parse(qos, &d->qos);
    json_object *nm = tf__get(spec, "nodeManagerConfig");
    const char *iso = tf__get_str(nm, "defaultIsolationMode");
    if (iso)
        tf_isolation_parse(iso, &d->isolation);
    const char *vendor = tf__get_str(nm, "defaultVendor");
    if (vendor && *vendor)
        d->vendor = vendor;
    json_object *local = tf__get(spec, "defaultUsingLocalGPU");
    if (local && json_object_is_type(local, json_type_boolean)) {
        d->is_local_gpu_set = true;
        d->is_local_gpu = json_object_get_boolean(local);
    }
}

static int quota_side(json_object *side, const char *qname, const char *field,
                      struct tf_spec_res *r, char *err, size_t errlen)
{
    char key[300];
    json_object *v;
    int rc;
    if (json_object_object_get_ex(side, "tflops", &v) && v) {
        snprintf(key, sizeof(key), "GPUResourceQuota %s: spec.single.%s.tflops", qname, field);
        if ((rc = tf_quantity_milli(json_object_get_string(v), &r->tflops_milli, key, err, errlen)))
            return rc;
        r->tflops_set = r->tflops_milli != 0;
    }
    if (json_object_object_get_ex(side, "vram", &v) && v) {
        snprintf(key, sizeof(key), "GPUResourceQuota %s: spec.single.%s.vram", qname, field);
        if ((rc = tf_quantity_bytes(json_object_get_string(v), &r->vram_bytes, key, err, errlen)))
            return rc;
        r->vram_set = r->vram_bytes != 0;
    }
    return 0;
}

int tf_defaults_from_quota(json_object *quota, struct tf_pool_defaults *d, char *err, size_t errlen)
{
    const char *name = tf__get_str(tf__get(quota, "metadata"), "name");
    json_object *single = tf__get(tf__get(quota, "spec"), "single");
    int rc = quota_side(tf__get(single, "defaultRequests"), name ? name : "?", "defaultRequests",
                        &d->requests, err, errlen);
    if (!rc)
        rc = quota_side(tf__get(single, "defaultLimits"), name ? name : "?", "defaultLimits",
                        &d->limits, err, errlen);
    return rc;
}

static int push(struct tf_native_resource **out, size_t *n, size_t *cap, const char *name,
                bool prefix, const char *vendor)
{
    size_t len = strlen(name);
    if (len && name[len - 1] == '*') {
        len--;
        prefix = true;
    }
    if (!len)
        return 0;
    struct tf_native_resource *g = tf_grow(*out, cap, *n + 1, sizeof(*g), 8);
    if (!g)
        return TF_ENOMEM;
    *out = g;
    char *nm = strndup(name, len), *vd = strdup(vendor);
    if (!nm || !vd) {
        free(nm);
        free(vd);
        return TF_ENOMEM;
    }
    (*out)[(*n)++] = (struct tf_native_resource){nm, prefix, vd};
    return 0;
}

/* Each string of the JSON array LIST. */
static int push_list(struct tf_native_resource **out, size_t *n, size_t *cap, json_object *list,
                     bool prefix, const char *vendor)
{
    if (!json_object_is_type(list, json_type_array))
        return 0;
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *e = json_object_array_get_idx(list, i);
        if (!json_object_is_type(e, json_type_string))
            continue;
        int rc = push(out, n, cap, json_object_get_string(e), prefix, vendor);
        if (rc)
            return rc;
    }
    return 0;
}

int tf_defaults_native(json_object *array, struct tf_native_resource **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    int rc = 0;
    for (size_t i = 0;
         !rc && json_object_is_type(array, json_type_array) && i < json_object_array_length(array);
         i++) {
        json_object *spec = tf__get(json_object_array_get_idx(array, i), "spec");
        const char *vendor = tf__get_str(spec, "vendor");
        if (!vendor || !*vendor)
            continue;
        const char *known = tf_vendor_known(vendor);
        vendor = known ? known : vendor;
        rc = push_list(out, n, &cap, tf__get(spec, "inUseResourceNames"), false, vendor);
        if (!rc)
            rc = push_list(out, n, &cap,
                           tf__get(tf__get(spec, "devicePluginDetection"), "resourceNamePrefixes"),
                           true, vendor);
    }
    if (rc) {
        tf_defaults_native_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

void tf_defaults_native_free(struct tf_native_resource *list, size_t n)
{
    for (size_t i = 0; list && i < n; i++) {
        free((char *)list[i].name);
        free((char *)list[i].vendor);
    }
    free(list);
}
