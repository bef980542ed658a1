/* SPDX-License-Identifier: Apache-2.0
 *
 * The Pod webhook's configuration (webhook.h): defaults, the auto-migration scope, the
 * webhook's own state and results.
 */
#include "controller/webhook_int.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/sysguard.h"
#include "core/defaults.h"
#include "core/podindex.h"
#include "core/quantity.h"
#include "core/selector.h"
#include "tf/shm.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- configuration ------------------------------------------------------------------------ */

int tf_webhook_config_init(struct tf_webhook_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->own_namespace = strdup("tensor-fusion-sys");
    cfg->default_pool = strdup("default-pool");
    cfg->controller_url = strdup("http://tensor-fusion.tensor-fusion-sys.svc:8080");
    cfg->limiter_image = strdup("tensorfusion/tf-limiter:latest");
    cfg->client_image = strdup("tensorfusion/tf-client:latest");
    cfg->worker_image = strdup("tensorfusion/tf-worker:latest");
    cfg->shm_host_dir = strdup("/run/tensor-fusion/shm");
    cfg->priority_class_high = strdup(TF_PRIORITY_CLASS_HIGH);
    cfg->priority_class_critical = strdup(TF_PRIORITY_CLASS_CRITICAL);
    if (!cfg->own_namespace || !cfg->default_pool || !cfg->controller_url || !cfg->limiter_image ||
        !cfg->client_image || !cfg->worker_image || !cfg->shm_host_dir ||
        !cfg->priority_class_high || !cfg->priority_class_critical) {
        tf_webhook_config_free(cfg);
        return TF_ENOMEM;
    }
    return 0;
}

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void tf_webhook_config_free(struct tf_webhook_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->own_namespace);
    free(cfg->default_pool);
    free(cfg->controller_url);
    free(cfg->limiter_image);
    free(cfg->client_image);
    free(cfg->worker_image);
    free(cfg->shm_host_dir);
    free(cfg->priority_class_high);
    free(cfg->priority_class_critical);
    free(cfg->system_user);
    struct tf_automigration *am = &cfg->auto_migration;
    strv_free(am->include_ns, am->ninclude_ns);
    strv_free(am->exclude_ns, am->nexclude_ns);
    json_object_put(am->include_ns_selector);
    json_object_put(am->include_pod_selector);
    json_object_put(am->exclude_ns_selector);
    json_object_put(am->exclude_pod_selector);
    memset(cfg, 0, sizeof(*cfg));
}

static int read_scope(json_object *side, const char *which, char ***names, size_t *n,
                      json_object **ns_sel, json_object **pod_sel, char *err, size_t errlen)
{
    if (!side)
        return 0;
    if (!json_object_is_type(side, json_type_object)) {
        tf_errf(err, errlen, "autoMigration.scope.%s must be an object", which);
        return TF_EINVAL;
    }
    json_object *arr = tf_json_path(side, "namespaceNames", NULL);
    if (arr) {
        if (!json_object_is_type(arr, json_type_array)) {
            tf_errf(err, errlen, "autoMigration.scope.%s.namespaceNames must be a list", which);
            return TF_EINVAL;
        }
        size_t len = json_object_array_length(arr);
        *names = calloc(len ? len : 1, sizeof(char *));
        if (!*names)
            return TF_ENOMEM;
        for (size_t i = 0; i < len; i++) {
            json_object *e = json_object_array_get_idx(arr, i);
            if (!json_object_is_type(e, json_type_string)) {
                tf_errf(err, errlen, "autoMigration.scope.%s.namespaceNames[%zu] must be a string",
                        which, i);
                return TF_EINVAL;
            }
            (*names)[(*n)++] = strdup(json_object_get_string(e));
        }
    }
    json_object *s = tf_json_path(side, "namespaceSelector", NULL);
    if (s)
        *ns_sel = json_object_get(s);
    s = tf_json_path(side, "podSelector", NULL);
    if (s)
        *pod_sel = json_object_get(s);
    return 0;
}

int tf_webhook_config_automigration(struct tf_webhook_config *cfg, json_object *am, char *err,
                                    size_t errlen)
{
    struct tf_automigration *a = &cfg->auto_migration;
    if (!am)
        return 0;
    json_object *en = tf_json_path(am, "enable", NULL);
    if (en && !json_object_is_type(en, json_type_boolean)) {
        tf_errf(err, errlen, "autoMigration.enable: expected true or false, not %s",
                json_object_to_json_string(en));
        return TF_EINVAL;
    }
    a->enable = en && json_object_get_boolean(en);
    json_object *scope = tf_json_path(am, "scope", NULL);
    int rc =
        read_scope(tf_json_path(scope, "includes", NULL), "includes", &a->include_ns,
                   &a->ninclude_ns, &a->include_ns_selector, &a->include_pod_selector, err, errlen);
    if (!rc)
        rc = read_scope(tf_json_path(scope, "excludes", NULL), "excludes", &a->exclude_ns,
                        &a->nexclude_ns, &a->exclude_ns_selector, &a->exclude_pod_selector, err,
                        errlen);
    return rc;
}

static bool name_in(char *const *v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (s && strcmp(v[i], s) == 0)
            return true;
    return false;
}

bool tf_automigration_in_scope(const struct tf_automigration *am, const char *ns,
                               json_object *ns_obj, json_object *pod)
{
    if (!am->enable)
        return false;
    json_object *ns_labels = tf_json_path(ns_obj, "metadata", "labels", NULL);
    json_object *pod_labels = tf_json_path(pod, "metadata", "labels", NULL);
    if (name_in(am->exclude_ns, am->nexclude_ns, ns) ||
        (am->exclude_ns_selector && tf_selector_match(am->exclude_ns_selector, ns_labels)) ||
        (am->exclude_pod_selector && tf_selector_match(am->exclude_pod_selector, pod_labels)))
        return false;
    if (!am->ninclude_ns && !am->include_ns_selector && !am->include_pod_selector)
        return true;
    return name_in(am->include_ns, am->ninclude_ns, ns) ||
           (am->include_ns_selector && tf_selector_match(am->include_ns_selector, ns_labels)) ||
           (am->include_pod_selector && tf_selector_match(am->include_pod_selector, pod_labels));
}

int tf_webhook_init(struct tf_webhook *wh, struct tf_webhook_config *cfg,
                    const struct tf_webhook_env *env)
{
    memset(wh, 0, sizeof(*wh));
    wh->cfg = *cfg;
    memset(cfg, 0, sizeof(*cfg));
    wh->env = *env;
    wh->memo = json_object_new_object();
    pthread_mutex_init(&wh->memo_lock, NULL);
    return wh->memo ? 0 : TF_ENOMEM;
}

void tf_webhook_free(struct tf_webhook *wh)
{
    if (!wh)
        return;
    tf_webhook_config_free(&wh->cfg);
    json_object_put(wh->memo);
    pthread_mutex_destroy(&wh->memo_lock);
    memset(wh, 0, sizeof(*wh));
}

void tf_webhook_result_free(struct tf_webhook_result *r)
{
    if (!r)
        return;
    free(r->patch);
    json_object_put(r->mutated);
    json_object_put(r->warnings);
    memset(r, 0, sizeof(*r));
}
