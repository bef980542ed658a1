/* SPDX-License-Identifier: Apache-2.0
 *
 * The system-annotation guard (see sysguard.h).
 */
#include "controller/sysguard.h"

#include "common/err.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/allocsig.h"
#include "core/podindex.h"
#include "core/spec.h"

#include <stdio.h>
#include <string.h>

#define PREFIX_LEN (sizeof(TF_KEY_PREFIX) - 1)

bool tf_sysguard_system_annotation(const char *key)
{
    /* tensor-fusion.ai/partition is signed but the user's to choose (the template wanted). */
    return (tf_allocsig_covers(key) && strcmp(key, TF_ANN_PARTITION) != 0) ||
           strcmp(key, TF_ANN_ALLOCATION_SIGNATURE) == 0 ||
           strcmp(key, TF_KEY_PREFIX "owner") == 0 || strcmp(key, TF_PODIDX_ANNOTATION) == 0;
}

static bool index_resource(const char *key)
{
    return strncmp(key, TF_PODIDX_RESOURCE_PREFIX, sizeof(TF_PODIDX_RESOURCE_PREFIX) - 1) == 0;
}

bool tf_sysguard_system_label(const char *key)
{
    return strcmp(key, TF_KEY_PREFIX "component") == 0 ||
           strcmp(key, TF_KEY_PREFIX "workload") == 0;
}

bool tf_sysguard_is_system(const char *system_user, const char *ns, const char *username)
{
    if (!username || !*username)
        return false;
    if (system_user && *system_user)
        return strcmp(username, system_user) == 0;
    static const char sa[] = "system:serviceaccount:";
    size_t nl = ns ? strlen(ns) : 0;
    return nl && strncmp(username, sa, sizeof(sa) - 1) == 0 &&
           strncmp(username + sizeof(sa) - 1, ns, nl) == 0 &&
           username[sizeof(sa) - 1 + nl] == ':' &&
           strcmp(username + sizeof(sa) + nl, TF_SYSGUARD_DEFAULT_SA) == 0;
}

static size_t strip_map(json_object *map, bool (*is_system)(const char *), const char *what,
                        json_object *warnings)
{
    if (!map || !json_object_is_type(map, json_type_object))
        return 0;
    const char *drop[64];
    size_t n = 0, total = 0;
    do { /* json-c cannot delete while iterating: collect, delete, repeat */
        n = 0;
        json_object_object_foreach(map, k, v)
        {
            (void)v;
            if (is_system(k) && n < 64)
                drop[n++] = k;
        }
        for (size_t i = 0; i < n; i++) {
            if (warnings) {
                char w[512];
                snprintf(w, sizeof(w),
                         "%s %.200s removed: only TensorFusion sets it (the scheduler or the "
                         "controller)",
                         what, drop[i]);
                json_object_array_add(warnings, json_object_new_string(w));
            }
            json_object_object_del(map, drop[i]);
        }
        total += n;
    } while (n == 64);
    return total;
}

/* The pod-index resources (core/podindex.h) of every container's limits and requests. */
static size_t strip_index_resources(json_object *pod, json_object *warnings)
{
    static const char *const lists[] = {"initContainers", "containers"};
    static const char *const kinds[] = {"limits", "requests"};
    size_t total = 0;
    for (size_t l = 0; l < 2; l++) {
        json_object *cs = tf_json_path(pod, "spec", lists[l], NULL);
        size_t nc =
            cs && json_object_is_type(cs, json_type_array) ? json_object_array_length(cs) : 0;
        for (size_t i = 0; i < nc; i++)
            for (size_t k = 0; k < 2; k++)
                total += strip_map(
                    tf_json_path(json_object_array_get_idx(cs, i), "resources", kinds[k], NULL),
                    index_resource, "resource", warnings);
    }
    return total;
}

size_t tf_sysguard_strip(json_object *pod, json_object *warnings)
{
    return strip_map(tf_json_path(pod, "metadata", "annotations", NULL),
                     tf_sysguard_system_annotation, "annotation", warnings) +
           strip_map(tf_json_path(pod, "metadata", "labels", NULL), tf_sysguard_system_label,
                     "label", warnings) +
           strip_index_resources(pod, warnings);
}

static const char *str_of(json_object *map, const char *k)
{
    json_object *v = NULL;
    if (!map || !json_object_object_get_ex(map, k, &v) || !v)
        return NULL;
    return json_object_get_string(v);
}

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool any_key(const char *k)
{
    return strncmp(k, TF_KEY_PREFIX, PREFIX_LEN) == 0;
}

/* The first key of OLD or NEW that KEEP selects and whose value differs between them. */
static const char *changed(json_object *old, json_object *now, bool (*keep)(const char *))
{
    json_object *maps[2] = {old, now};
    for (int m = 0; m < 2; m++) {
        if (!maps[m] || !json_object_is_type(maps[m], json_type_object))
            continue;
        json_object_object_foreach(maps[m], k, v)
        {
            (void)v;
            if (keep(k) && !same(str_of(old, k), str_of(now, k)))
                return k;
        }
    }
    return NULL;
}

static bool reserved_volume(const char *n)
{
    return n && (!strcmp(n, "tf-shm") || !strcmp(n, "tf-lib"));
}

static bool reserved_container(const char *n)
{
    return n && (!strcmp(n, "tf-worker") || !strcmp(n, "tf-limiter-copy") ||
                 !strcmp(n, "tf-client-copy") || !strncmp(n, "tf-preload-", 11));
}

int tf_sysguard_reserved(json_object *pod, char *msg, size_t msglen)
{
    json_object *vols = tf_json_path(pod, "spec", "volumes", NULL);
    for (size_t i = 0; vols && i < json_object_array_length(vols); i++) {
        const char *n = tf_json_str(json_object_array_get_idx(vols, i), "name", NULL);
        if (reserved_volume(n)) {
            tf_errf(msg, msglen,
                    "spec.volumes %s: the name is TensorFusion's (it injects that "
                    "volume itself)",
                    n);
            return TF_EPERM;
        }
    }
    static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
        json_object *cs = tf_json_path(pod, "spec", lists[l], NULL);
        for (size_t i = 0; cs && i < json_object_array_length(cs); i++) {
            json_object *c = json_object_array_get_idx(cs, i);
            const char *cn = tf_json_str(c, "name", NULL);
            if (reserved_container(cn)) {
                tf_errf(msg, msglen,
                        "spec.%s %s: the name is TensorFusion's (it injects that "
                        "container itself)",
                        lists[l], cn);
                return TF_EPERM;
            }
            json_object *ms = tf_json_path(c, "volumeMounts", NULL);
            for (size_t k = 0; ms && k < json_object_array_length(ms); k++) {
                const char *mn = tf_json_str(json_object_array_get_idx(ms, k), "name", NULL);
                if (reserved_volume(mn)) {
                    tf_errf(msg, msglen,
                            "spec.%s %s: volumeMount %s is TensorFusion's (it mounts "
                            "that volume itself)",
                            lists[l], cn ? cn : "?", mn);
                    return TF_EPERM;
                }
            }
        }
    }
    return 0;
}

int tf_sysguard_update(json_object *old, json_object *pod, char *msg, size_t msglen)
{
    json_object *oa = tf_json_path(old, "metadata", "annotations", NULL),
                *na = tf_json_path(pod, "metadata", "annotations", NULL),
                *ol = tf_json_path(old, "metadata", "labels", NULL),
                *nl = tf_json_path(pod, "metadata", "labels", NULL);
    const char *k = changed(oa, na, tf_sysguard_system_annotation);
    const char *what = "annotation";
    if (!k) {
        k = changed(ol, nl, tf_sysguard_system_label);
        what = "label";
    }
    if (k) {
        tf_errf(msg, msglen, "%s %s: only TensorFusion may set, change or remove it", what, k);
        return TF_EPERM;
    }
    if (!str_of(ol, TF_KEY_PREFIX "component"))
        return 0; /* not taken over: the user's own keys until the webhook takes it over */
    what = "annotation";
    k = changed(oa, na, any_key);
    if (!k) {
        k = changed(ol, nl, any_key);
        what = "label";
    }
    if (k) {
        tf_errf(msg, msglen,
                "%s %s of a running TensorFusion pod cannot change: its GPUs and limits were "
                "booked by the scheduler; change the workload (or recreate the pod) instead",
                what, k);
        return TF_EPERM;
    }
    return 0;
}
