/* SPDX-License-Identifier: Apache-2.0
 *
 * The Pod webhook's edits of a pod spec (webhook_int.h): JSON editing helpers, and what each
 * isolation mode injects (soft: the limiter and the pod's limit region; remote: the client
 * library, the worker's address and token), resource limits and native GPU requests.
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
#include "tf/shm.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIB_DIR "/tensor-fusion"
#define LIB_VOLUME "tf-lib"
#define SHM_VOLUME "tf-shm"
/* Where a soft pod sees its own directory <shm host dir>/<namespace>/<pod>. */
#define SHM_POD_DIR "/run/tensor-fusion/pod"

/* ---- JSON editing helpers ----------------------------------------------------------------- */

json_object *tf__wh_child_obj(json_object *parent, const char *key)
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

void tf__wh_set_str(json_object *o, const char *key, const char *val)
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
        tf__wh_set_str(e, "name", name);
        json_object_array_add(env, e);
    }
    json_object_object_del(e, "valueFrom");
    tf__wh_set_str(e, "value", value);
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
    tf__wh_set_str(e, "name", name);
    json_object *vf = json_object_new_object(), *fr = json_object_new_object();
    tf__wh_set_str(fr, "fieldPath", field_path);
    json_object_object_add(vf, "fieldRef", fr);
    json_object_object_add(e, "valueFrom", vf);
    json_object_array_add(env, e);
}

/* NVIDIA_VISIBLE_DEVICES of container C from the pod's gpu-ids or, when the pod splits its
 * GPUs per container, from SPLIT_NAME's tensor-fusion.ai/gpu-ids-<container> (the extender
 * writes both before the Binding). A value the container sets itself is kept. */
void tf__wh_visible_devices(json_object *c, const char *split_name)
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
    tf__wh_set_str(m, "name", vol);
    tf__wh_set_str(m, "mountPath", path);
    if (sub)
        tf__wh_set_str(m, sub_key, sub);
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
        tf__wh_set_str(o, "name", SHM_VOLUME);
        tf__wh_set_str(o, "mountPath", m[i].path);
        tf__wh_set_str(o, "subPathExpr", m[i].sub);
        if (m[i].ro)
            json_object_object_add(o, "readOnly", json_object_new_boolean(true));
        json_object_array_add(mounts, o);
    }
}

/* Gives every container of pod SPEC the region group TF_SHM_POD_GROUP as a supplementary group
 * (once), so that the node agent can make the pod's usage part 0660 instead of world-writable. */
static void add_region_group(json_object *spec)
{
    json_object *g = child_arr(tf__wh_child_obj(spec, "securityContext"), "supplementalGroups");
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
    tf__wh_set_str(v, "name", name);
    json_object_object_add(v, "emptyDir", json_object_new_object());
    return v;
}

static json_object *host_path_volume(const char *name, const char *path)
{
    json_object *v = json_object_new_object(), *hp = json_object_new_object();
    tf__wh_set_str(v, "name", name);
    tf__wh_set_str(hp, "path", path);
    tf__wh_set_str(hp, "type", "DirectoryOrCreate");
    json_object_object_add(v, "hostPath", hp);
    return v;
}

json_object *tf__wh_container_named(json_object *spec, const char *name)
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
    tf__wh_set_str(c, "name", name);
    tf__wh_set_str(c, "image", image);
    json_object *cmd = json_object_new_array();
    json_object_array_add(cmd, json_object_new_string("/bin/sh"));
    json_object_array_add(cmd, json_object_new_string("-c"));
    json_object_array_add(cmd, json_object_new_string(script));
    json_object_object_add(c, "command", cmd);
    add_mount(c, LIB_VOLUME, LIB_DIR, NULL, false);
    json_object_array_add(inits, c);
}

void tf__wh_set_limit(json_object *c, const char *res, int n)
{
    json_object *r = tf__wh_child_obj(c, "resources");
    char v[16];
    snprintf(v, sizeof(v), "%d", n);
    tf__wh_set_str(tf__wh_child_obj(r, "limits"), res, v);
    tf__wh_set_str(tf__wh_child_obj(r, "requests"), res, v);
}

/* Pod index I as the resource tensor-fusion.ai/index_<k>: <n> (core/podindex.h). */
void tf__wh_index_limit(json_object *c, int i)
{
    int k, n;
    char res[40];
    if (tf_podidx_encode(i, &k, &n) == 0 && tf_podidx_resource(k, res, sizeof(res)) == 0)
        tf__wh_set_limit(c, res, n);
}

/* Removes the native GPU resources (nvidia.com/gpu, ...) container CT takes over. */
void tf__wh_drop_native_gpu(json_object *c, const struct tf_spec_container *ct)
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

/* ---- injection ---------------------------------------------------------------------------- */

static void inject_common_env(json_object *c, const char *cname)
{
    env_field(c, "POD_NAME", "metadata.name");
    env_field(c, "POD_NAMESPACE", "metadata.namespace");
    env_set(c, "CONTAINER_NAME", cname);
}

void tf__wh_inject_soft(struct tf_webhook *wh, json_object *spec, const struct tf_spec *s)
{
    add_volume(spec, empty_dir_volume(LIB_VOLUME));
    add_volume(spec, host_path_volume(SHM_VOLUME, wh->cfg.shm_host_dir));
    add_region_group(spec);
    init_container(spec, "tf-limiter-copy", wh->cfg.limiter_image,
                   "cp /opt/tensor-fusion/lib/libtf_limiter.so " LIB_DIR "/libtf_limiter.so");
    for (size_t i = 0; i < s->ninject_containers; i++) {
        json_object *c = tf__wh_container_named(spec, s->inject_containers[i]);
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
    tf__wh_set_str(e, "name", name);
    tf__wh_set_str(ref, "name", secret);
    tf__wh_set_str(ref, "key", key);
    json_object_object_add(vf, "secretKeyRef", ref);
    json_object_object_add(e, "valueFrom", vf);
    json_object_array_add(env, e);
}

void tf__wh_inject_client(struct tf_webhook *wh, json_object *spec, const struct tf_spec *s,
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
        json_object *c = tf__wh_container_named(spec, s->inject_containers[i]);
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
            tf__wh_set_str(w, "name", "tf-worker");
            tf__wh_set_str(w, "image", wh->cfg.worker_image);
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
            tf__wh_set_limit(w, TF_RESOURCE_VGPU, s->gpu_count);
            env_field(w, "NVIDIA_VISIBLE_DEVICES", GPU_IDS_FIELD);
            json_object_array_add(cs, w);
        }
    }
}
