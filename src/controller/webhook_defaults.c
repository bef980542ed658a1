/* SPDX-License-Identifier: Apache-2.0
 *
 * What the cluster contributes to a pod at admission, beyond the core's defaults
 * (core/defaults.h): whether a pod asks for a native GPU resource, the default GPUPool (the one
 * annotated tensor-fusion.ai/is-default-pool), and a gang's size and key from the pod's owner
 * (see webhook.h, webhook_int.h).
 */
#include "controller/webhook_int.h"

#include "common/yamljson.h"
#include "core/defaults.h"
#include "core/gang.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static void put(json_object *o, const char *key, const char *val)
{
    json_object_object_add(o, key, json_object_new_string(val));
}

/* A container of POD asks for one of the native GPU resources NATIVE[0..N). */
bool tf__wh_has_native_gpus(json_object *pod, const struct tf_native_resource *native, size_t n)
{
    json_object *cs = tf_json_path(pod, "spec", "containers", NULL);
    for (size_t i = 0; cs && i < json_object_array_length(cs); i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        json_object *lim = tf_json_path(c, "resources", "limits", NULL);
        if (!lim || !json_object_is_type(lim, json_type_object))
            continue;
        json_object_object_foreach(lim, k, v)
        {
            const char *q = json_object_get_string(v);
            if (tf_native_resource_find(native, n, k) && q && strcmp(q, "0") != 0)
                return true;
        }
    }
    return false;
}

/* The default GPUPool: the one annotated tensor-fusion.ai/is-default-pool: "true", else the
 * configured one. Returns the pool object (owned) or NULL, and its name in NAME. */
json_object *tf__wh_default_pool(struct tf_webhook *wh, const char **name)
{
    json_object *all = wh->env.list_pools ? wh->env.list_pools(wh->env.arg) : NULL;
    json_object *found = NULL;
    for (size_t i = 0;
         json_object_is_type(all, json_type_array) && i < json_object_array_length(all) && !found;
         i++)
        if (tf_pool_is_default(json_object_array_get_idx(all, i)))
            found = json_object_get(json_object_array_get_idx(all, i));
    json_object_put(all);
    *name = found ? tf_json_str(found, "metadata", "name", NULL) : NULL;
    if (found && *name)
        return found;
    json_object_put(found);
    *name = wh->cfg.default_pool;
    return wh->env.get_pool ? wh->env.get_pool(wh->env.arg, *name) : NULL;
}

/* The gang's size for a pod of spec S (upstream's resolveDesiredGangMembers): enabled-replicas,
 * the profile's replicas, else the controlling owner's spec.replicas / parallelism /
 * completions. */
static bool gang_desired(struct tf_webhook *wh, const struct tf_spec *s, const struct tf_profile *p,
                         json_object *pod, const char *ns, int32_t *desired)
{
    if (s->has_enabled_replicas) {
        *desired = s->enabled_replicas;
        return true;
    }
    if (p && p->replicas_set) {
        *desired = p->replicas;
        return true;
    }
    json_object *refs = tf_json_array(pod, "metadata", "ownerReferences", NULL);
    for (size_t i = 0; wh->env.get_owner && refs && i < json_object_array_length(refs); i++) {
        json_object *r = json_object_array_get_idx(refs, i);
        const char *kind = tf_json_str(r, "kind", NULL), *name = tf_json_str(r, "name", NULL);
        if (!tf_json_true(r, "controller", NULL) || !kind || !name)
            continue;
        json_object *o = wh->env.get_owner(wh->env.arg, ns, kind, name);
        static const char *const fields[] = {"replicas", "parallelism", "completions"};
        bool known = false;
        for (size_t f = 0; o && !known && f < 3; f++) {
            json_object *v = tf_json_path(o, "spec", fields[f], NULL);
            if (v && json_object_is_type(v, json_type_int)) {
                int64_t x = json_object_get_int64(v);
                *desired = x < 0 ? 0 : x > INT32_MAX ? INT32_MAX : (int32_t)x;
                known = true;
            }
        }
        json_object_put(o);
        return known;
    }
    return false;
}

/* Writes the gang's normalised keys and its size onto ANN (deny on a bad size). */
bool tf__wh_gang_annotations(struct tf_webhook *wh, const struct tf_spec *s,
                             const struct tf_profile *p, json_object *pod, const char *ns,
                             const char *wname, json_object *ann, struct tf_webhook_result *out)
{
    int32_t desired = 0, required = 0;
    bool known = gang_desired(wh, s, p, pod, ns, &desired);
    char err[256], buf[320];
    if (tf_gang_quorum(s->gang_min_members, desired, known, &desired, &required, err,
                       sizeof(err))) {
        snprintf(out->message, sizeof(out->message), "%s", err);
        out->allowed = false;
        out->code = 400;
        return false;
    }
    put(ann, TF_ANN_GANG_ENABLED, "true");
    if (s->gang_min_members) {
        snprintf(buf, sizeof(buf), "%d", s->gang_min_members);
        put(ann, TF_ANN_GANG_MIN_MEMBERS, buf);
    }
    if (s->gang_timeout_ms) {
        snprintf(buf, sizeof(buf), "%lldms", (long long)s->gang_timeout_ms);
        put(ann, TF_ANN_GANG_TIMEOUT, buf);
    }
    snprintf(buf, sizeof(buf), "%d", desired);
    put(ann, TF_ANN_GANG_DESIRED_MEMBERS, buf);
    snprintf(buf, sizeof(buf), "%d", required);
    put(ann, TF_ANN_GANG_REQUIRED_MEMBERS, buf);
    snprintf(buf, sizeof(buf), "%s/%s", ns, wname);
    put(ann, TF_ANN_GANG_GROUP_KEY, buf);
    return true;
}
