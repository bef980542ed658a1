/* SPDX-License-Identifier: Apache-2.0
 *
 * The webhook's environment over tf-controller's informers (controller_int.h).
 */
#include "controller/controller_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/k8s/client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- webhook environment over the informers ------------------------------------------------ */

/* Cache first; on a miss ask the server, since an object created a moment ago may not have
 * reached the informer yet (a pool made by the reconciler, a profile applied with the pod). */
static json_object *cached_or_live(struct ctl *x, struct tf_informer *inf,
                                   const struct tf_k8s_resource *res, const char *ns,
                                   const char *name)
{
    json_object *o = tf_informer_get(inf, ns, name);
    char err[256];
    if (!o && tf_k8s_get(x->c, res, ns, name, &o, err, sizeof(err)) != 0)
        o = NULL;
    return o;
}

static json_object *env_profile(void *arg, const char *ns, const char *name)
{
    struct ctl *x = arg;
    return cached_or_live(x, x->profiles, &tf_k8s_workloadprofiles, ns, name);
}

static json_object *env_namespace(void *arg, const char *name)
{
    return tf_informer_get(((struct ctl *)arg)->namespaces, NULL, name);
}

static json_object *env_pool(void *arg, const char *name)
{
    struct ctl *x = arg;
    return cached_or_live(x, x->pools, &tf_k8s_gpupools, NULL, name);
}

static json_object *env_priority_class(void *arg, const char *name)
{
    struct ctl *x = arg;
    return cached_or_live(x, x->priorities, &tf_k8s_priorityclasses, NULL, name);
}

static json_object *env_owner(void *arg, const char *ns, const char *kind, const char *name)
{
    struct ctl *x = arg;
    if (strcmp(kind, "ReplicaSet") == 0) {
        return cached_or_live(x, x->replicasets, &tf_k8s_replicasets, ns, name);
    }
    /* A gang's size: StatefulSet replicas, Job parallelism (no informer: read live). */
    const struct tf_k8s_resource *res = !strcmp(kind, "StatefulSet") ? &tf_k8s_statefulsets
                                        : !strcmp(kind, "Job")       ? &tf_k8s_jobs
                                                                     : NULL;
    json_object *o = NULL;
    char err[256];
    if (res && tf_k8s_get(x->c, res, ns, name, &o, err, sizeof(err)) != 0)
        o = NULL;
    return o;
}

struct collect {
    const char *ns; /* NULL: every object */
    json_object *arr;
};

static int collect_one(json_object *obj, void *arg)
{
    struct collect *cl = arg;
    const char *ns = tf_json_str(obj, "metadata", "namespace", NULL);
    if (!cl->ns || (ns && strcmp(ns, cl->ns) == 0))
        json_object_array_add(cl->arr, json_object_get(obj));
    return 0;
}

static json_object *collect(struct tf_informer *inf, const char *ns)
{
    struct collect cl = {ns, json_object_new_array()};
    if (inf)
        tf_informer_foreach(inf, collect_one, &cl);
    return cl.arr;
}

static json_object *env_list_pools(void *arg)
{
    return collect(((struct ctl *)arg)->pools, NULL);
}

static json_object *env_list_quotas(void *arg, const char *ns)
{
    return collect(((struct ctl *)arg)->quotas, ns);
}

static json_object *env_list_providers(void *arg)
{
    return collect(((struct ctl *)arg)->providers, NULL);
}

struct owner_count {
    const char *ns, *owner;
    int n;
};

static int count_owner(json_object *pod, void *arg)
{
    struct owner_count *oc = arg;
    const char *ns = tf_json_str(pod, "metadata", "namespace", NULL);
    const char *owner = tf_json_str(pod, "metadata", "annotations", TF_ANN_OWNER, NULL);
    const char *comp = tf_json_str(pod, "metadata", "labels", TF_LABEL_COMPONENT, NULL);
    const char *phase = tf_json_str(pod, "status", "phase", NULL);
    if (ns && owner && comp && strcmp(ns, oc->ns) == 0 && strcmp(owner, oc->owner) == 0 &&
        strcmp(comp, "client") == 0 &&
        !(phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0)))
        oc->n++;
    return 0;
}

static int env_count(void *arg, const char *ns, const char *owner)
{
    struct owner_count oc = {ns, owner, 0};
    tf_informer_foreach(((struct ctl *)arg)->pods, count_owner, &oc);
    return oc.n;
}

static int env_take_index(void *arg, char *err, size_t errlen)
{
    return tf_ctl_podidx_take(&((struct ctl *)arg)->podidx, err, errlen);
}

static int env_ensure_workload(void *arg, const char *ns, const char *name, json_object *w,
                               bool join, char *err, size_t errlen)
{
    struct ctl *x = arg;
    json_object *cur = NULL;
    int rc = tf_k8s_get(x->c, &tf_k8s_tfworkloads, ns, name, &cur, err, errlen);
    if (!join) {
        json_object *meta = tf_json_path(w, "metadata", NULL), *anns = NULL;
        if (!json_object_object_get_ex(meta, "annotations", &anns) || !anns) {
            anns = json_object_new_object();
            json_object_object_add(meta, "annotations", anns);
        }
        json_object_object_add(anns, TF_ANN_GENERATED_WORKLOAD, json_object_new_string("true"));
    }
    if (rc == TF_ENOENT) {
        rc = tf_k8s_create(x->c, &tf_k8s_tfworkloads, ns, w, NULL, err, errlen);
        if (rc == TF_EEXIST)
            rc = 0; /* a sibling pod created it meanwhile */
        if (rc == 0)
            tf_k8s_event(x->c, w, "Normal", "WorkloadCreated",
                         "TensorFusionWorkload created by the webhook", "tf-controller");
        return rc;
    }
    if (rc)
        return rc;
    /* A workload an earlier release generated lacks the mark: it gets it (its workers stay
     * one per client pod). */
    const char *gen = tf_json_str(cur, "metadata", "annotations", TF_ANN_GENERATED_WORKLOAD, NULL);
    bool marked = gen && strcmp(gen, "true") == 0;
    if (!join && (!marked || !json_object_equal(tf_json_path(cur, "spec", NULL),
                                                tf_json_path(w, "spec", NULL)))) {
        json_object *p = json_object_new_object(), *m = json_object_new_object();
        json_object_object_add(m, "annotations",
                               json_object_get(tf_json_path(w, "metadata", "annotations", NULL)));
        json_object_object_add(p, "metadata", m);
        json_object_object_add(p, "spec", json_object_get(tf_json_path(w, "spec", NULL)));
        rc = tf_k8s_merge_patch(x->c, &tf_k8s_tfworkloads, ns, name, NULL, p, NULL, err, errlen);
        json_object_put(p);
    }
    json_object_put(cur);
    return rc;
}

static void env_event(void *arg, json_object *involved, const char *type, const char *reason,
                      const char *message)
{
    tf_k8s_event(((struct ctl *)arg)->c, involved, type, reason, message, "tf-webhook");
}

struct tf_webhook_env tf__ctl_webhook_env(struct ctl *x)
{
    return (struct tf_webhook_env){env_profile,
                                   env_namespace,
                                   env_pool,
                                   env_owner,
                                   env_count,
                                   env_ensure_workload,
                                   x,
                                   env_event,
                                   env_priority_class,
                                   env_list_pools,
                                   env_list_quotas,
                                   env_list_providers,
                                   env_take_index};
}
