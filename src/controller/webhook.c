/* SPDX-License-Identifier: Apache-2.0
 *
 * Pod mutating webhook (see webhook.h): scope checks, spec resolution, per-mode injection,
 * JSONPatch answer.
 */
#include "controller/webhook.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/jsonpatch.h"
#include "controller/webhook_int.h"
#include "core/defaults.h"
#include "controller/sysguard.h"
#include "core/selector.h"
#include "core/quantity.h"
#include "core/podindex.h"
#include "core/selector.h"
#include "tf/shm.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LIB_DIR "/tensor-fusion"
#define LIB_VOLUME "tf-lib"
#define SHM_VOLUME "tf-shm"
/* Where a soft pod sees its own directory <shm host dir>/<namespace>/<pod>. */
#define SHM_POD_DIR "/run/tensor-fusion/pod"
#define MEMO_WINDOW_S 30

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

/* ---- JSON editing helpers ----------------------------------------------------------------- */

static json_object *child_obj(json_object *parent, const char *key)
{
    json_object *c = NULL;
    if (json_object_object_get_ex(parent, key, &c) && json_object_is_type(c, json_type_object))
        return c;
    c = json_object_new_object();
    json_object_object_add(parent, key, c);
    return c;
}

static json_object *child_arr(json_object *parent, const char *key)
{
    json_object *c = NULL;
    if (json_object_object_get_ex(parent, key, &c) && json_object_is_type(c, json_type_array))
        return c;
    c = json_object_new_array();
    json_object_object_add(parent, key, c);
    return c;
}

static void set_str(json_object *o, const char *key, const char *val)
{
    json_object_object_add(o, key, json_object_new_string(val));
}

static json_object *find_named(json_object *arr, const char *name)
{
    for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        const char *n = tf_json_str(e, "name", NULL);
        if (n && strcmp(n, name) == 0)
            return e;
    }
    return NULL;
}

/* Sets env NAME=VALUE on container C (replacing an existing entry of that name). */
static void env_set(json_object *c, const char *name, const char *value)
{
    json_object *env = child_arr(c, "env");
    json_object *e = find_named(env, name);
    if (!e) {
        e = json_object_new_object();
        set_str(e, "name", name);
        json_object_array_add(env, e);
    }
    json_object_object_del(e, "valueFrom");
    set_str(e, "value", value);
}

/* The GPUs the extender bound the pod to (it writes the annotation before the Binding, so the
 * kubelet resolves this when it creates the containers). As NVIDIA_VISIBLE_DEVICES the NVIDIA
 * container runtime exposes exactly those GPUs; the device plugin's Allocate cannot, since its
 * request names slots, not the pod. */
#define GPU_IDS_FIELD "metadata.annotations['" TF_ANN_GPU_IDS "']"

static void env_field(json_object *c, const char *name, const char *field_path)
{
    json_object *env = child_arr(c, "env");
    if (find_named(env, name))
        return;
    json_object *e = json_object_new_object();
    set_str(e, "name", name);
    json_object *vf = json_object_new_object(), *fr = json_object_new_object();
    set_str(fr, "fieldPath", field_path);
    json_object_object_add(vf, "fieldRef", fr);
    json_object_object_add(e, "valueFrom", vf);
    json_object_array_add(env, e);
}

/* NVIDIA_VISIBLE_DEVICES of container C from the pod's gpu-ids or, when the pod splits its
 * GPUs per container, from SPLIT_NAME's tensor-fusion.ai/gpu-ids-<container> (the extender
 * writes both before the Binding). A value the container sets itself is kept. */
static void visible_devices(json_object *c, const char *split_name)
{
    if (!split_name) {
        env_field(c, "NVIDIA_VISIBLE_DEVICES", GPU_IDS_FIELD);
        return;
    }
    char key[TF_SPEC_CONTAINER_GPU_IDS_KEY_MAX], path[TF_SPEC_CONTAINER_GPU_IDS_KEY_MAX + 32];
    tf_spec_container_gpu_ids_key(split_name, key);
    snprintf(path, sizeof(path), "metadata.annotations['%s']", key);
    env_field(c, "NVIDIA_VISIBLE_DEVICES", path);
}

/* Prepends PATH to the colon list in env NAME (keeping what the container already had). */
static void env_prepend(json_object *c, const char *name, const char *path)
{
    json_object *e = find_named(tf_json_path(c, "env", NULL), name);
    const char *old = e ? tf_json_str(e, "value", NULL) : NULL;
    char buf[2048];
    if (old && *old && !strstr(old, path))
        snprintf(buf, sizeof(buf), "%s:%s", path, old);
    else
        snprintf(buf, sizeof(buf), "%s", old && strstr(old, path) ? old : path);
    env_set(c, name, buf);
}

/* SUB_KEY: "subPath" or "subPathExpr" (expanded by the kubelet from the container's env). */
static void add_mount_sub(json_object *c, const char *vol, const char *path, const char *sub_key,
                          const char *sub, bool ro)
{
    json_object *mounts = child_arr(c, "volumeMounts");
    for (size_t i = 0; i < json_object_array_length(mounts); i++) {
        const char *mp = tf_json_str(json_object_array_get_idx(mounts, i), "mountPath", NULL);
        if (mp && strcmp(mp, path) == 0)
            return;
    }
    json_object *m = json_object_new_object();
    set_str(m, "name", vol);
    set_str(m, "mountPath", path);
    if (sub)
        set_str(m, sub_key, sub);
    if (ro)
        json_object_object_add(m, "readOnly", json_object_new_boolean(true));
    json_object_array_add(mounts, m);
}

static void add_mount(json_object *c, const char *vol, const char *path, const char *sub, bool ro)
{
    add_mount_sub(c, vol, path, "subPath", sub, ro);
}

void tf_webhook_region_mounts(json_object *mounts)
{
    static const struct {
        const char *path, *sub;
        bool ro;
    } m[] = {{SHM_POD_DIR, "$(POD_NAMESPACE)/$(POD_NAME)", true},
             {SHM_POD_DIR "/" TF_SHM_USAGE_DIR, "$(POD_NAMESPACE)/$(POD_NAME)/" TF_SHM_USAGE_DIR,
              false}};
    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
        bool have = false;
        for (size_t k = 0; k < json_object_array_length(mounts); k++) {
            const char *mp = tf_json_str(json_object_array_get_idx(mounts, k), "mountPath", NULL);
            have |= mp && strcmp(mp, m[i].path) == 0;
        }
        if (have)
            continue;
        json_object *o = json_object_new_object();
        set_str(o, "name", SHM_VOLUME);
        set_str(o, "mountPath", m[i].path);
        set_str(o, "subPathExpr", m[i].sub);
        if (m[i].ro)
            json_object_object_add(o, "readOnly", json_object_new_boolean(true));
        json_object_array_add(mounts, o);
    }
}

/* Gives every container of pod SPEC the region group TF_SHM_POD_GROUP as a supplementary group
 * (once), so that the node agent can make the pod's usage part 0660 instead of world-writable. */
static void add_region_group(json_object *spec)
{
    json_object *g = child_arr(child_obj(spec, "securityContext"), "supplementalGroups");
    for (size_t i = 0; i < json_object_array_length(g); i++) {
        json_object *v = json_object_array_get_idx(g, i);
        if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) == TF_SHM_POD_GROUP)
            return;
    }
    json_object_array_add(g, json_object_new_int64(TF_SHM_POD_GROUP));
}

static void add_volume(json_object *spec, json_object *vol)
{
    json_object *vols = child_arr(spec, "volumes");
    if (find_named(vols, tf_json_str(vol, "name", NULL))) {
        json_object_put(vol);
        return;
    }
    json_object_array_add(vols, vol);
}

static json_object *empty_dir_volume(const char *name)
{
    json_object *v = json_object_new_object();
    set_str(v, "name", name);
    json_object_object_add(v, "emptyDir", json_object_new_object());
    return v;
}

static json_object *host_path_volume(const char *name, const char *path)
{
    json_object *v = json_object_new_object(), *hp = json_object_new_object();
    set_str(v, "name", name);
    set_str(hp, "path", path);
    set_str(hp, "type", "DirectoryOrCreate");
    json_object_object_add(v, "hostPath", hp);
    return v;
}

static json_object *container_named(json_object *spec, const char *name)
{
    return find_named(tf_json_path(spec, "containers", NULL), name);
}

static void init_container(json_object *spec, const char *name, const char *image,
                           const char *script)
{
    json_object *inits = child_arr(spec, "initContainers");
    if (find_named(inits, name))
        return;
    json_object *c = json_object_new_object();
    set_str(c, "name", name);
    set_str(c, "image", image);
    json_object *cmd = json_object_new_array();
    json_object_array_add(cmd, json_object_new_string("/bin/sh"));
    json_object_array_add(cmd, json_object_new_string("-c"));
    json_object_array_add(cmd, json_object_new_string(script));
    json_object_object_add(c, "command", cmd);
    add_mount(c, LIB_VOLUME, LIB_DIR, NULL, false);
    json_object_array_add(inits, c);
}

static void set_limit(json_object *c, const char *res, int n)
{
    json_object *r = child_obj(c, "resources");
    char v[16];
    snprintf(v, sizeof(v), "%d", n);
    set_str(child_obj(r, "limits"), res, v);
    set_str(child_obj(r, "requests"), res, v);
}

/* Pod index I as the resource tensor-fusion.ai/index_<k>: <n> (core/podindex.h). */
static void index_limit(json_object *c, int i)
{
    int k, n;
    char res[40];
    if (tf_podidx_encode(i, &k, &n) == 0 && tf_podidx_resource(k, res, sizeof(res)) == 0)
        set_limit(c, res, n);
}

/* Removes the native GPU resources (nvidia.com/gpu, ...) container CT takes over. */
static void drop_native_gpu(json_object *c, const struct tf_spec_container *ct)
{
    json_object *r = tf_json_path(c, "resources", NULL);
    json_object *lim = tf_json_path(r, "limits", NULL), *req = tf_json_path(r, "requests", NULL);
    for (size_t i = 0; i < ct->nnative_names; i++) {
        if (lim)
            json_object_object_del(lim, ct->native_names[i]);
        if (req)
            json_object_object_del(req, ct->native_names[i]);
    }
}

/* ---- spec resolution ---------------------------------------------------------------------- */

static void percent_text(int32_t bp, char *buf, size_t len)
{
    if (bp % 100 == 0)
        snprintf(buf, len, "%d", bp / 100);
    else if (bp % 10 == 0)
        snprintf(buf, len, "%d.%d", bp / 100, (bp % 100) / 10);
    else
        snprintf(buf, len, "%d.%02d", bp / 100, bp % 100);
}

static void res_annotations(json_object *ann, const struct tf_spec_res *r, const char *tfl,
                            const char *pct, const char *vram)
{
    char buf[64];
    if (r->tflops_set) {
        tf_quantity_format_milli(r->tflops_milli, buf, sizeof(buf));
        set_str(ann, tfl, buf);
        json_object_object_del(ann, pct);
    } else if (r->percent_set) {
        percent_text(r->percent_bp, buf, sizeof(buf));
        set_str(ann, pct, buf);
        json_object_object_del(ann, tfl);
    }
    if (r->vram_set) {
        tf_quantity_format_bytes(r->vram_bytes, buf, sizeof(buf));
        set_str(ann, vram, buf);
    }
}

/* "Kind/name" of the pod's controlling owner, following a ReplicaSet up to its Deployment. */
static bool owner_key(struct tf_webhook *wh, json_object *pod, const char *ns, char *buf,
                      size_t len)
{
    json_object *refs = tf_json_path(pod, "metadata", "ownerReferences", NULL);
    for (size_t i = 0; refs && i < json_object_array_length(refs); i++) {
        json_object *r = json_object_array_get_idx(refs, i);
        json_object *ctl = tf_json_path(r, "controller", NULL);
        if (!ctl || !json_object_get_boolean(ctl))
            continue;
        const char *kind = tf_json_str(r, "kind", NULL), *name = tf_json_str(r, "name", NULL);
        if (!kind || !name)
            return false;
        snprintf(buf, len, "%s/%s", kind, name);
        if (strcmp(kind, "ReplicaSet") == 0 && wh->env.get_owner) {
            json_object *rs = wh->env.get_owner(wh->env.arg, ns, kind, name);
            json_object *up = tf_json_path(rs, "metadata", "ownerReferences", NULL);
            for (size_t j = 0; up && j < json_object_array_length(up); j++) {
                json_object *u = json_object_array_get_idx(up, j);
                json_object *uc = tf_json_path(u, "controller", NULL);
                const char *uk = tf_json_str(u, "kind", NULL), *un = tf_json_str(u, "name", NULL);
                if (uc && json_object_get_boolean(uc) && uk && un)
                    snprintf(buf, len, "%s/%s", uk, un);
            }
            json_object_put(rs);
        }
        return true;
    }
    return false;
}

/* Takes over one more pod of OWNER if fewer than LIMIT are (cache + recent admissions). */
static bool owner_slot(struct tf_webhook *wh, const char *ns, const char *owner, int limit,
                       bool dry_run, int *have)
{
    char key[600];
    snprintf(key, sizeof(key), "%s/%s", ns, owner);
    int cached = wh->env.count_owner_pods ? wh->env.count_owner_pods(wh->env.arg, ns, owner) : 0;
    pthread_mutex_lock(&wh->memo_lock);
    json_object *times = NULL;
    if (!json_object_object_get_ex(wh->memo, key, &times)) {
        times = json_object_new_array();
        json_object_object_add(wh->memo, key, times);
    }
    long now = (long)time(NULL);
    json_object *fresh = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(times); i++) {
        long t = (long)json_object_get_int64(json_object_array_get_idx(times, i));
        if (now - t < MEMO_WINDOW_S)
            json_object_array_add(fresh, json_object_new_int64(t));
    }
    int recent = (int)json_object_array_length(fresh);
    int count = cached > recent ? cached : recent;
    bool ok = count < limit;
    if (ok && !dry_run)
        json_object_array_add(fresh, json_object_new_int64(now));
    json_object_object_add(wh->memo, key, fresh);
    pthread_mutex_unlock(&wh->memo_lock);
    *have = count;
    return ok;
}

/* Event on the owner ("Deployment/web") saying why a pod was left alone. */
static void owner_event(struct tf_webhook *wh, const char *ns, const char *owner, int have,
                        int limit)
{
    char kind[64], msg[512];
    const char *slash = strchr(owner, '/');
    snprintf(kind, sizeof(kind), "%.*s", (int)(slash ? slash - owner : 0), owner);
    json_object *inv = json_object_new_object(), *m = json_object_new_object();
    set_str(inv, "kind", kind);
    set_str(inv, "apiVersion", strcmp(kind, "Job") == 0 ? "batch/v1" : "apps/v1");
    set_str(m, "name", slash ? slash + 1 : owner);
    set_str(m, "namespace", ns);
    json_object_object_add(inv, "metadata", m);
    snprintf(msg, sizeof(msg),
             "%d pod(s) already use TensorFusion (%s: %d): new pod admitted unmodified", have,
             TF_ANN_ENABLED_REPLICAS, limit);
    wh->env.record_event(wh->env.arg, inv, "Normal", "EnabledReplicasReached", msg);
    json_object_put(inv);
}

static void warn(struct tf_webhook_result *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void warn(struct tf_webhook_result *out, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (!out->warnings)
        out->warnings = json_object_new_array();
    json_object_array_add(out->warnings, json_object_new_string(buf));
}

/* A PriorityClass's value when WH's environment knows class NAME (*PC then owns it). */
static bool priority_class(struct tf_webhook *wh, const char *name, json_object **pc,
                           int32_t *value)
{
    *pc = wh->env.get_priority_class ? wh->env.get_priority_class(wh->env.arg, name) : NULL;
    json_object *v;
    if (*pc && json_object_object_get_ex(*pc, "value", &v) &&
        json_object_is_type(v, json_type_int)) {
        int64_t x = json_object_get_int64(v);
        if (x >= INT32_MIN && x <= INT32_MAX) {
            *value = (int32_t)x;
            return true;
        }
    }
    json_object_put(*pc);
    *pc = NULL;
    return false;
}

/* Seed 000: a high or critical pod that names no PriorityClass of its own gets the configured
 * one. A pod carrying the cluster's globalDefault class counts as naming none: the apiserver's
 * Priority admission plugin filled it in. That plugin runs before mutating webhooks and has
 * already resolved the pod's priority, so the class's value (and its preemption policy) are
 * written as well; the scheduler goes by them. */
static void qos_priority(struct tf_webhook *wh, enum tf_qos qos, json_object *spec,
                         struct tf_webhook_result *out)
{
    const char *cls = qos == TF_QOS_CRITICAL ? wh->cfg.priority_class_critical
                      : qos == TF_QOS_HIGH   ? wh->cfg.priority_class_high
                                             : NULL;
    if (!cls || !*cls)
        return;
    const char *own = tf_json_str(spec, "priorityClassName", NULL);
    json_object *pc;
    int32_t value;
    if (own && *own) {
        if (strcmp(own, cls) == 0 || !priority_class(wh, own, &pc, &value))
            return;
        json_object *gd;
        bool by_default =
            json_object_object_get_ex(pc, "globalDefault", &gd) && json_object_get_boolean(gd);
        json_object_put(pc);
        if (!by_default)
            return;
    }
    if (!priority_class(wh, cls, &pc, &value)) {
        warn(out, "%s %s: PriorityClass %s does not exist; the pod keeps its priority", TF_ANN_QOS,
             tf_qos_name(qos), cls);
        return;
    }
    set_str(spec, "priorityClassName", cls);
    json_object_object_add(spec, "priority", json_object_new_int(value));
    const char *policy = tf_json_str(pc, "preemptionPolicy", NULL);
    if (policy)
        set_str(spec, "preemptionPolicy", policy);
    json_object_put(pc);
}

static void deny(struct tf_webhook_result *out, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void deny(struct tf_webhook_result *out, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof(out->message), fmt, ap);
    va_end(ap);
    out->allowed = false;
    out->code = code;
}

/* The TensorFusionWorkload object for SPEC. */
static json_object *workload_object(const struct tf_spec *s, const char *ns, const char *name,
                                    const char *pool)
{
    char buf[64];
    json_object *w = json_object_new_object(), *meta = json_object_new_object(),
                *spec = json_object_new_object(), *res = json_object_new_object();
    set_str(w, "apiVersion", "tensor-fusion.ai/v1");
    set_str(w, "kind", "TensorFusionWorkload");
    set_str(meta, "name", name);
    set_str(meta, "namespace", ns);
    json_object_object_add(w, "metadata", meta);
    set_str(spec, "poolName", pool);
    const struct tf_spec_res *sides[2] = {&s->requests, &s->limits};
    const char *names[2] = {"requests", "limits"};
    for (int i = 0; i < 2; i++) {
        json_object *side = json_object_new_object();
        if (sides[i]->tflops_set) {
            tf_quantity_format_milli(sides[i]->tflops_milli, buf, sizeof(buf));
            set_str(side, "tflops", buf);
        }
        if (sides[i]->percent_set) {
            percent_text(sides[i]->percent_bp, buf, sizeof(buf));
            set_str(side, "compute", buf); /* upstream's field (readers also take ours) */
        }
        if (sides[i]->vram_set) {
            tf_quantity_format_bytes(sides[i]->vram_bytes, buf, sizeof(buf));
            set_str(side, "vram", buf);
        }
        json_object_object_add(res, names[i], side);
    }
    json_object_object_add(spec, "resources", res);
    set_str(spec, "qos", tf_qos_name(s->qos));
    set_str(spec, "isolation", tf_isolation_name(s->isolation));
    json_object_object_add(spec, "gpuCount", json_object_new_int(s->gpu_count));
    json_object_object_add(spec, "isLocalGPU", json_object_new_boolean(s->is_local_gpu));
    if (s->has_worker_replicas && !s->is_local_gpu)
        json_object_object_add(spec, "replicas", json_object_new_int(s->worker_replicas));
    if (s->gpu_model)
        set_str(spec, "gpuModel", s->gpu_model);
    if (s->vendor)
        set_str(spec, "vendor", s->vendor);
    json_object_object_add(w, "spec", spec);
    return w;
}

/* Workload name: the annotation, else the top owner's name, else the pod's (generate)name. */
static void workload_name(const struct tf_spec *s, json_object *pod, const char *owner, char *buf,
                          size_t len)
{
    if (s->workload) {
        snprintf(buf, len, "%s", s->workload);
        return;
    }
    if (owner) {
        const char *slash = strchr(owner, '/');
        snprintf(buf, len, "%s", slash ? slash + 1 : owner);
        return;
    }
    const char *n = tf_json_str(pod, "metadata", "name", NULL);
    if (!n || !*n)
        n = tf_json_str(pod, "metadata", "generateName", NULL);
    snprintf(buf, len, "%s", n && *n ? n : "workload");
    size_t l = strlen(buf);
    while (l && (buf[l - 1] == '-' || buf[l - 1] == '.'))
        buf[--l] = '\0';
}

/* ---- injection ---------------------------------------------------------------------------- */

static void inject_common_env(json_object *c, const char *cname)
{
    env_field(c, "POD_NAME", "metadata.name");
    env_field(c, "POD_NAMESPACE", "metadata.namespace");
    env_set(c, "CONTAINER_NAME", cname);
}

static void inject_soft(struct tf_webhook *wh, json_object *spec, const struct tf_spec *s)
{
    add_volume(spec, empty_dir_volume(LIB_VOLUME));
    add_volume(spec, host_path_volume(SHM_VOLUME, wh->cfg.shm_host_dir));
    add_region_group(spec);
    init_container(spec, "tf-limiter-copy", wh->cfg.limiter_image,
                   "cp /opt/tensor-fusion/lib/libtf_limiter.so " LIB_DIR "/libtf_limiter.so");
    for (size_t i = 0; i < s->ninject_containers; i++) {
        json_object *c = container_named(spec, s->inject_containers[i]);
        if (!c)
            continue;
        /* The merge runs in the app's own image so its /etc/ld.so.preload entries survive. */
        char name[80], script[512];
        snprintf(name, sizeof(name), "tf-preload-%.60s", s->inject_containers[i]);
        snprintf(script, sizeof(script),
                 "{ echo " LIB_DIR "/libtf_limiter.so; grep -v libtf_limiter "
                 "/etc/ld.so.preload 2>/dev/null || true; } > " LIB_DIR "/ld.so.preload.%.60s",
                 s->inject_containers[i]);
        const char *image = tf_json_str(c, "image", NULL);
        init_container(spec, name, image ? image : wh->cfg.limiter_image, script);
        char sub[80];
        snprintf(sub, sizeof(sub), "ld.so.preload.%.60s", s->inject_containers[i]);
        inject_common_env(c, s->inject_containers[i]);
        env_prepend(c, "LD_PRELOAD", LIB_DIR "/libtf_limiter.so");
        env_set(c, "TF_SHM_PATH", SHM_POD_DIR "/shm");
        /* The app may reach cuInit before the node agent has written the pod's region: wait
         * for it, and never run unlimited (a region that never comes refuses CUDA). */
        env_set(c, "TF_LIMITER_WAIT_MS", "60000");
        env_set(c, "TF_LIMITER_STRICT", "1");
        add_mount(c, LIB_VOLUME, LIB_DIR, NULL, true);
        add_mount(c, LIB_VOLUME, "/etc/ld.so.preload", sub, true);
        /* Only the pod's own directory of the host shm tree (the node agent creates the region
         * in it), so no pod can open another's: read-only, but for the region's usage part. */
        tf_webhook_region_mounts(child_arr(c, "volumeMounts"));
    }
}

void tf_webhook_token_secret(const char *workload, char *out, size_t outlen)
{
    tf_name_fit("tf-token-", workload, 253, out, outlen);
}

void tf_webhook_worker_debug(json_object *cmd, unsigned disabled)
{
    if (!(disabled & TF_FEATURE_START_WORKER))
        return;
    while (json_object_array_length(cmd))
        json_object_array_del_idx(cmd, 0, 1);
    json_object_array_add(cmd, json_object_new_string("sleep"));
    json_object_array_add(cmd, json_object_new_string("infinity"));
}

void tf_webhook_worker_args(json_object *cmd, int ngpus, const char *token_file, bool limits)
{
    json_object_array_add(cmd, json_object_new_string("--token-file"));
    json_object_array_add(cmd, json_object_new_string(token_file));
    /* The pod's limits, live: the node agent writes the pod's region (as for soft pods) and
     * the worker enforces it; it waits for the region and never runs unlimited. */
    if (limits) {
        json_object_array_add(cmd, json_object_new_string("--limits-region"));
        json_object_array_add(cmd, json_object_new_string(SHM_POD_DIR "/shm"));
    }
    if (ngpus > 1) {
        char list[4 * TF_SPEC_MAX_GPUS] = "";
        for (int i = 0; i < ngpus && i < TF_SPEC_MAX_GPUS; i++) {
            size_t n = strlen(list);
            snprintf(list + n, sizeof(list) - n, "%s%d", i ? "," : "", i);
        }
        json_object_array_add(cmd, json_object_new_string("--device"));
        json_object_array_add(cmd, json_object_new_string(list));
    }
    /* Every client of this worker is the pod's (or the client pod's) own: one tenant, so
     * page-locked staging (reachable from all its contexts' kernels) is safe. */
    json_object_array_add(cmd, json_object_new_string("--pinned-staging"));
}

/* Hard, local: the app and its tf-worker sidecar share a token made for this pod alone by
 * the init container, in the pod's emptyDir (nothing outside the pod can read it). */
#define POD_TOKEN LIB_DIR "/run/token"

static void env_secret(json_object *c, const char *name, const char *secret, const char *key)
{
    json_object *env = child_arr(c, "env");
    if (find_named(env, name))
        return;
    json_object *e = json_object_new_object(), *vf = json_object_new_object(),
                *ref = json_object_new_object();
    set_str(e, "name", name);
    set_str(ref, "name", secret);
    set_str(ref, "key", key);
    json_object_object_add(vf, "secretKeyRef", ref);
    json_object_object_add(e, "valueFrom", vf);
    json_object_array_add(env, e);
}

static void inject_client(struct tf_webhook *wh, json_object *spec, const struct tf_spec *s,
                          const char *workload, bool local)
{
    add_volume(spec, empty_dir_volume(LIB_VOLUME));
#define CLIENT_COPY                                                                                \
    "mkdir -p " LIB_DIR "/client " LIB_DIR                                                         \
    "/run && cp /opt/tensor-fusion/lib/libtf_client.so " LIB_DIR "/client/libcuda.so.1"
    init_container(spec, "tf-client-copy", wh->cfg.client_image,
                   local ? CLIENT_COPY
                       " && head -c 32 /dev/urandom | od -An -vtx1 | tr -d ' \\n' > " POD_TOKEN
                         : CLIENT_COPY);
#undef CLIENT_COPY
    for (size_t i = 0; i < s->ninject_containers; i++) {
        json_object *c = container_named(spec, s->inject_containers[i]);
        if (!c)
            continue;
        inject_common_env(c, s->inject_containers[i]);
        env_prepend(c, "LD_LIBRARY_PATH", LIB_DIR "/client");
        add_mount(c, LIB_VOLUME, LIB_DIR, NULL, false);
        if (local) {
            env_set(c, "TF_REMOTE", "unix://" LIB_DIR "/run/worker.sock");
            env_set(c, "TF_TOKEN_FILE", POD_TOKEN);
            /* The sidecar may still be waiting for the pod's region when the app starts. */
            env_set(c, "TF_CONNECT_WAIT_MS", "120000");
        } else {
            char url[600], secret[254];
            tf_webhook_token_secret(workload, secret, sizeof(secret));
            env_secret(c, "TF_TOKEN", secret, TF_TOKEN_SECRET_KEY);
            env_field(c, "TF_CONNECTION_NAME", "metadata.name");
            env_field(c, "TF_CONNECTION_NAMESPACE", "metadata.namespace");
            snprintf(url, sizeof(url), "%s/api/connection", wh->cfg.controller_url);
            env_set(c, "TF_CONTROLLER_URL", url);
        }
    }
    if (local) {
        json_object *cs = child_arr(spec, "containers");
        if (!find_named(cs, "tf-worker")) {
            json_object *w = json_object_new_object();
            set_str(w, "name", "tf-worker");
            set_str(w, "image", wh->cfg.worker_image);
            json_object *cmd = json_object_new_array();
            json_object_array_add(cmd, json_object_new_string("tf-worker"));
            json_object_array_add(cmd, json_object_new_string("--listen"));
            json_object_array_add(cmd,
                                  json_object_new_string("unix://" LIB_DIR "/run/worker.sock"));
            tf_webhook_worker_args(cmd, s->gpu_count, POD_TOKEN,
                                   !(s->disable_features & TF_FEATURE_GPU_LIMITER));
            tf_webhook_worker_debug(cmd, s->disable_features);
            json_object_object_add(w, "command", cmd);
            inject_common_env(w, "tf-worker");
            add_mount(w, LIB_VOLUME, LIB_DIR, NULL, false);
            tf_webhook_region_mounts(child_arr(w, "volumeMounts"));
            add_volume(spec, host_path_volume(SHM_VOLUME, wh->cfg.shm_host_dir));
            add_region_group(spec);
            set_limit(w, TF_RESOURCE_VGPU, s->gpu_count);
            env_field(w, "NVIDIA_VISIBLE_DEVICES", GPU_IDS_FIELD);
            json_object_array_add(cs, w);
        }
    }
}

/* ---- review ------------------------------------------------------------------------------- */

static void review_create(struct tf_webhook *wh, const struct tf_admission_req *req,
                          struct tf_webhook_result *out)
{
    memset(out, 0, sizeof(*out));
    out->allowed = true;
    if (strcmp(req->kind, "Pod") != 0 || strcmp(req->operation, "CREATE") != 0 || !req->object)
        return;
    json_object *pod = req->object;
    const char *ns = req->namespace && *req->namespace
                         ? req->namespace
                         : tf_json_str(pod, "metadata", "namespace", NULL);
    if (!ns || !*ns)
        ns = "default";
    if (wh->cfg.own_namespace && strcmp(ns, wh->cfg.own_namespace) == 0)
        return; /* never mutate ourselves (the hypervisor, the controller) */
    const char *label = tf_json_str(pod, "metadata", "labels", TF_LABEL_ENABLED, NULL);
    if (label && strcmp(label, "false") == 0)
        return;
    const char *comp = tf_json_str(pod, "metadata", "labels", TF_LABEL_COMPONENT, NULL);
    if (comp && strcmp(comp, "worker") == 0)
        return; /* remote workers are built complete by the controller */
    bool enabled = label && strcmp(label, "true") == 0;
    struct tf_pool_defaults pd;
    memset(&pd, 0, sizeof(pd));
    /* The ProviderConfigs' native GPU resources (default: NVIDIA's). */
    json_object *providers = wh->env.list_providers ? wh->env.list_providers(wh->env.arg) : NULL;
    struct tf_native_resource *native = NULL;
    size_t nnative = 0;
    if (tf_defaults_native(providers, &native, &nnative)) {
        json_object_put(providers);
        deny(out, 500, "out of memory");
        return;
    }
    json_object_put(providers);
    pd.native = native;
    pd.nnative = nnative;
    if (!enabled) {
        if (!wh->cfg.auto_migration.enable ||
            !tf__wh_has_native_gpus(pod, native ? native : tf_native_resources_default,
                                    native ? nnative : 2)) {
            tf_defaults_native_free(native, nnative);
            return;
        }
        json_object *nso = wh->env.get_namespace ? wh->env.get_namespace(wh->env.arg, ns) : NULL;
        bool in = tf_automigration_in_scope(&wh->cfg.auto_migration, ns, nso, pod);
        json_object_put(nso);
        if (!in) {
            tf_defaults_native_free(native, nnative);
            return;
        }
        pd.auto_migration = true;
    }

    char err[1024] = "";
    struct tf_profile prof;
    bool have_prof = false;
    struct tf_spec s;
    tf_spec_init(&s);
    json_object *mut = NULL, *pool_obj = NULL, *quotas = NULL;
    const char *prof_name =
        tf_json_str(pod, "metadata", "annotations", TF_ANN_WORKLOAD_PROFILE, NULL);
    memset(&prof, 0, sizeof(prof));
    if (prof_name) {
        json_object *pj =
            wh->env.get_profile ? wh->env.get_profile(wh->env.arg, ns, prof_name) : NULL;
        if (!pj) {
            deny(out, 400, "%s: WorkloadProfile \"%s\" not found in namespace %s",
                 TF_ANN_WORKLOAD_PROFILE, prof_name, ns);
            goto done;
        }
        int rc = tf_profile_parse(pj, &prof, err, sizeof(err));
        json_object_put(pj);
        if (rc) {
            deny(out, 400, "%s", err);
            goto done;
        }
        have_prof = true;
    }
    const char *pool = tf_json_str(pod, "metadata", "annotations", TF_ANN_GPUPOOL, NULL);
    if (!pool && have_prof && prof.pool)
        pool = prof.pool;
    if (pool)
        pool_obj = wh->env.get_pool ? wh->env.get_pool(wh->env.arg, pool) : NULL;
    else
        pool_obj = tf__wh_default_pool(wh, &pool);
    if (!pool_obj) {
        deny(out, 400, "%s: GPUPool \"%s\" does not exist", TF_ANN_GPUPOOL, pool);
        goto done;
    }
    tf_defaults_from_pool(pool_obj, &pd);
    pd.pool_name = pool;
    /* The namespace's first GPUResourceQuota fills the defaults (upstream's order). */
    quotas = wh->env.list_quotas ? wh->env.list_quotas(wh->env.arg, ns) : NULL;
    if (json_object_is_type(quotas, json_type_array) && json_object_array_length(quotas) &&
        tf_defaults_from_quota(json_object_array_get_idx(quotas, 0), &pd, err, sizeof(err))) {
        deny(out, 400, "%s", err);
        goto done;
    }
    int rc = tf_spec_parse(pod, have_prof ? &prof : NULL, &pd, &s, err, sizeof(err));
    if (rc) {
        deny(out, rc == TF_ENOMEM ? 500 : 400, "%s", err);
        goto done;
    }
    for (size_t i = 0; i < s.nwarnings; i++)
        warn(out, "%s", s.warnings[i]);
    if (!s.enabled)
        goto done;
    char owner[600] = "";
    bool has_owner = owner_key(wh, pod, ns, owner, sizeof(owner));
    if (s.has_enabled_replicas && has_owner) {
        int have = 0;
        if (!owner_slot(wh, ns, owner, s.enabled_replicas, req->dry_run, &have)) {
            warn(out,
                 "%s: %d of %s's pods already use TensorFusion (limit %d); admitted "
                 "unmodified",
                 TF_ANN_ENABLED_REPLICAS, have, owner, s.enabled_replicas);
            if (wh->env.record_event && !req->dry_run)
                owner_event(wh, ns, owner, have, s.enabled_replicas);
            goto done;
        }
    }

    /* Mutate a copy; the patch is the difference. */
    if (json_object_deep_copy(pod, &mut, NULL)) {
        deny(out, 500, "out of memory");
        goto done;
    }
    json_object *meta = child_obj(mut, "metadata");
    json_object *labels = child_obj(meta, "labels");
    json_object *ann = child_obj(meta, "annotations");
    json_object *spec = child_obj(mut, "spec");
    set_str(labels, TF_LABEL_ENABLED, "true");
    set_str(labels, TF_LABEL_COMPONENT, "client");
    const char *final_pool = s.pool ? s.pool : pool;
    char wname[300], buf[64];
    workload_name(&s, pod, has_owner ? owner : NULL, wname, sizeof(wname));
    set_str(ann, TF_ANN_GPUPOOL, final_pool);
    set_str(ann, TF_ANN_ISOLATION, tf_isolation_name(s.isolation));
    set_str(ann, TF_ANN_QOS, tf_qos_name(s.qos));
    snprintf(buf, sizeof(buf), "%d", s.gpu_count);
    set_str(ann, TF_ANN_GPU_COUNT, buf);
    set_str(ann, TF_ANN_IS_LOCAL_GPU, s.is_local_gpu ? "true" : "false");
    set_str(ann, TF_ANN_WORKLOAD, wname);
    if (has_owner)
        set_str(ann, TF_ANN_OWNER, owner);
    if (s.gpu_model)
        set_str(ann, TF_ANN_GPU_MODEL, s.gpu_model);
    if (s.vendor)
        set_str(ann, TF_ANN_VENDOR, s.vendor);
    res_annotations(ann, &s.requests, TF_ANN_TFLOPS_REQUEST, TF_ANN_PERCENT_REQUEST,
                    TF_ANN_VRAM_REQUEST);
    res_annotations(ann, &s.limits, TF_ANN_TFLOPS_LIMIT, TF_ANN_PERCENT_LIMIT, TF_ANN_VRAM_LIMIT);
    if (s.ninject_containers) {
        char list[1024] = "";
        for (size_t i = 0; i < s.ninject_containers; i++) {
            if (i)
                strncat(list, ",", sizeof(list) - strlen(list) - 1);
            strncat(list, s.inject_containers[i], sizeof(list) - strlen(list) - 1);
        }
        set_str(ann, TF_ANN_INJECT_CONTAINER, list);
    }
    bool split = tf_spec_split(&s);
    if (split) {
        json_object *m = json_object_new_object();
        for (size_t i = 0; i < s.ncontainers; i++)
            json_object_object_add(m, s.containers[i].name,
                                   json_object_new_int(s.containers[i].gpu_count));
        set_str(ann, TF_ANN_CONTAINER_GPU_COUNT,
                json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN));
        json_object_put(m);
    }
    if (s.gang &&
        !tf__wh_gang_annotations(wh, &s, have_prof ? &prof : NULL, pod, ns, wname, ann, out))
        goto done;
    set_str(spec, "schedulerName", TF_SCHEDULER_NAME);
    qos_priority(wh, s.qos, spec, out);

    /* Migrated containers drop nvidia.com/gpu; local modes request vGPU slots on the app;
     * partitioned ones also their pod index, which names their MIG device in Allocate. */
    bool remote = !s.is_local_gpu;
    bool hard_local = s.is_local_gpu && s.isolation == TF_ISOLATION_HARD;
    bool indexed = !remote && s.isolation == TF_ISOLATION_PARTITIONED && wh->env.take_index;
    int pidx = 0;
    if (indexed && !req->dry_run) {
        char ierr[256] = "";
        pidx = wh->env.take_index(wh->env.arg, ierr, sizeof(ierr));
        if (pidx < 0) {
            deny(out, 503, "no pod index for a partitioned pod: %s", ierr);
            goto done;
        }
        snprintf(buf, sizeof(buf), "%d", pidx);
        set_str(ann, TF_PODIDX_ANNOTATION, buf);
    }
    for (size_t i = 0; i < s.ncontainers; i++) {
        json_object *c = container_named(spec, s.containers[i].name);
        if (!c)
            continue;
        if (s.containers[i].migrated)
            drop_native_gpu(c, &s.containers[i]);
        if (!remote && !hard_local)
            set_limit(c, TF_RESOURCE_VGPU, s.containers[i].gpu_count);
        if (pidx > 0)
            index_limit(c, pidx);
        else if (!remote && !hard_local && !indexed)
            visible_devices(c, split ? s.containers[i].name : NULL);
    }
    if (remote)
        inject_client(wh, spec, &s, wname, false);
    else if (s.isolation == TF_ISOLATION_SOFT && !(s.disable_features & TF_FEATURE_GPU_LIMITER))
        inject_soft(wh, spec, &s);
    else if (hard_local)
        inject_client(wh, spec, &s, wname, true);

    if (!req->dry_run && wh->env.ensure_workload) {
        json_object *w = workload_object(&s, ns, wname, final_pool);
        char werr[512] = "";
        rc = wh->env.ensure_workload(wh->env.arg, ns, wname, w, s.workload != NULL, werr,
                                     sizeof(werr));
        json_object_put(w);
        if (rc) {
            deny(out, 500, "TensorFusionWorkload %s/%s: %s", ns, wname, werr);
            goto done;
        }
    }
    struct tf_dynbuf patch;
    tf_dynbuf_init(&patch, SIZE_MAX / 2);
    if (tf_jsonpatch_diff(pod, mut, &patch, &out->nops)) {
        tf_dynbuf_free(&patch);
        deny(out, 500, "cannot build the JSON patch");
        goto done;
    }
    out->patch = patch.data;
    out->mutated = mut;
    mut = NULL;
    out->taken_over = true;
done:
    if (!out->allowed) {
        free(out->patch);
        out->patch = NULL;
        out->nops = 0;
    }
    json_object_put(mut);
    json_object_put(pool_obj);
    json_object_put(quotas);
    tf_spec_free(&s);
    tf_defaults_native_free(native, nnative);
    if (have_prof)
        tf_profile_free(&prof);
}

/* ---- the system-annotation guard around the review (sysguard.h) -------------------------- */

/* CREATE by anyone but the controller: the review sees the pod without system keys, and the
 * patch (from the pod as sent) removes them too. */
static void guarded_create(struct tf_webhook *wh, const struct tf_admission_req *req,
                           struct tf_webhook_result *out)
{
    json_object *pod = NULL, *removed = json_object_new_array();
    if (!removed || json_object_deep_copy(req->object, &pod, NULL)) {
        json_object_put(removed);
        deny(out, 500, "out of memory");
        return;
    }
    size_t n = tf_sysguard_strip(pod, removed);
    const char *label = tf_json_str(pod, "metadata", "labels", TF_LABEL_ENABLED, NULL);
    const char *node = tf_json_str(pod, "spec", "nodeName", NULL);
    char why[512];
    if (!(label && strcmp(label, "false") == 0) && tf_sysguard_reserved(pod, why, sizeof(why))) {
        deny(out, 403, "%s", why);
        goto out;
    }
    if (node && label && strcmp(label, "true") == 0) {
        deny(out, 403,
             "spec.nodeName %s: a TensorFusion pod is placed by %s, which books its GPUs; "
             "pin a node with a nodeSelector or nodeAffinity on kubernetes.io/hostname instead",
             node, TF_SCHEDULER_NAME);
        goto out;
    }
    if (!node) { /* (a pod pinned to a node is never auto-migrated: it skips the scheduler) */
        struct tf_admission_req r = *req;
        r.object = pod;
        review_create(wh, &r, out);
    }
    if (out->allowed && n) {
        struct tf_dynbuf patch;
        tf_dynbuf_init(&patch, SIZE_MAX / 2);
        free(out->patch);
        out->patch = NULL;
        if (tf_jsonpatch_diff(req->object, out->mutated ? out->mutated : pod, &patch, &out->nops)) {
            tf_dynbuf_free(&patch);
            deny(out, 500, "cannot build the JSON patch");
            goto out;
        }
        out->patch = patch.data;
    }
    for (size_t i = 0; i < json_object_array_length(removed); i++)
        warn(out, "%s", json_object_get_string(json_object_array_get_idx(removed, i)));
out:
    json_object_put(removed);
    json_object_put(pod);
}

void tf_webhook_review(struct tf_webhook *wh, const struct tf_admission_req *req,
                       struct tf_webhook_result *out)
{
    memset(out, 0, sizeof(*out));
    out->allowed = true;
    bool create = strcmp(req->operation, "CREATE") == 0;
    const char *ns = req->namespace && *req->namespace
                         ? req->namespace
                         : tf_json_str(req->object, "metadata", "namespace", NULL);
    bool own = ns && wh->cfg.own_namespace && strcmp(ns, wh->cfg.own_namespace) == 0;
    if (strcmp(req->kind, "Pod") != 0 || !req->object || own ||
        tf_sysguard_is_system(wh->cfg.system_user, wh->cfg.own_namespace, req->username)) {
        if (create)
            review_create(wh, req, out);
        return;
    }
    if (create) {
        guarded_create(wh, req, out);
    } else if (strcmp(req->operation, "UPDATE") == 0 && req->old_object &&
               tf_sysguard_update(req->old_object, req->object, out->message,
                                  sizeof(out->message))) {
        out->allowed = false;
        out->code = 403;
    }
}

char *tf_webhook_handle(struct tf_webhook *wh, const char *body, size_t len, int *status)
{
    struct tf_admission_req req;
    char err[512];
    if (tf_admission_decode(body, len, &req, err, sizeof(err))) {
        *status = 400;
        tf_log(TF_LOG_WARN, "webhook", "bad review: %s", err);
        return strdup(err);
    }
    struct tf_webhook_result r;
    tf_webhook_review(wh, &req, &r);
    char *out = tf_admission_encode(req.uid, r.allowed, r.nops ? r.patch : NULL, r.code, r.message,
                                    r.warnings);
    if (!r.allowed)
        tf_log(TF_LOG_INFO, "webhook", "denied pod namespace=%s name=%s reason=%s", req.namespace,
               req.name, r.message);
    else if (r.taken_over)
        tf_log(TF_LOG_DEBUG, "webhook", "mutated pod namespace=%s ops=%zu", req.namespace, r.nops);
    tf_webhook_result_free(&r);
    tf_admission_req_free(&req);
    *status = out ? 200 : 500;
    return out ? out : strdup("out of memory");
}
