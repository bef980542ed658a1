/* SPDX-License-Identifier: Apache-2.0
 *
 * The node agent's Kubernetes objects: GPU objects and pod limit regions (see k8s_objects.h).
 */
#include "hypervisor/k8s_objects.h"

#include "common/err.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/gpu_models.h"
#include "core/partition.h"
#include "core/quantity.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

bool tf_hv_k8s_gpu_name(const char *uuid, char *buf, size_t len)
{
    size_t n = strlen(uuid);
    if (n == 0 || n > 253 || n >= len || !isalnum((unsigned char)uuid[0]) ||
        !isalnum((unsigned char)uuid[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)uuid[i];
        if (!isalnum(c) && c != '-' && c != '.')
            return false;
        buf[i] = (char)tolower(c);
    }
    buf[n] = '\0';
    return true;
}

static void put_str(json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, json_object_new_string(v));
}

json_object *tf_hv_k8s_gpu_labels(const char *node, const char *pool)
{
    json_object *l = json_object_new_object();
    put_str(l, TF_HV_LABEL_NODE, node);
    if (pool)
        put_str(l, TF_HV_LABEL_POOL, pool);
    return l;
}

json_object *tf_hv_k8s_gpu_status(const struct tf_hv_device *d, const char *node)
{
    char t[48], v[48];
    tf_quantity_format_milli(d->tflops_milli, t, sizeof(t));
    tf_quantity_format_bytes(d->vram_bytes, v, sizeof(v));
    json_object *st = json_object_new_object(), *cap = json_object_new_object(),
                *sel = json_object_new_object();
    put_str(st, "uuid", d->uuid);
    /* upstream's board name, as its node agent writes it and gpu-model annotations name it */
    const struct tf_gpu_model *m = d->model[0] ? tf_gpu_model_find(d->model) : NULL;
    put_str(st, "gpuModel", m ? tf_gpu_model_upstream_name(m, d->name) : d->name);
    if (d->vendor[0])
        put_str(st, "vendor", d->vendor);
    json_object_object_add(st, "index", json_object_new_int(d->index));
    put_str(st, "phase", "Running");
    put_str(cap, "tflops", t);
    put_str(cap, "vram", v);
    json_object_object_add(st, "capacity", cap);
    put_str(sel, "kubernetes.io/hostname", node);
    json_object_object_add(st, "nodeSelector", sel);
    return st;
}

bool tf_hv_k8s_differs(json_object *have, json_object *want)
{
    json_object_object_foreach(want, k, v)
    {
        json_object *cur = NULL;
        if (!have || !json_object_object_get_ex(have, k, &cur))
            return true;
        if (json_object_is_type(v, json_type_object) && json_object_is_type(cur, json_type_object)
                ? tf_hv_k8s_differs(cur, v)
                : !json_object_equal(cur, v))
            return true;
    }
    return false;
}

/* A namespace or pod name that is safe as one directory component. */
static bool dir_safe(const char *s)
{
    return s && *s && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && !strchr(s, '/');
}

static const struct tf_hv_device *find_dev(const struct tf_hv_device *devs, int ndev,
                                           const char *uuid)
{
    for (int i = 0; i < ndev; i++)
        if (devs[i].present && strcmp(devs[i].uuid, uuid) == 0)
            return &devs[i];
    return NULL;
}

/* Splits the gpu-ids list into OUT->uuids. */
static int split_ids(const char *ids, struct tf_hv_k8s_pod *out, char *err, size_t errlen)
{
    for (const char *p = ids; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ", ");
        if (n == 0)
            break;
        if (out->ngpu == TF_SHM_MAX_DEVICES) {
            tf_errf(err, errlen, "%s: more than %d GPUs on one pod", TF_HV_ANN_GPU_IDS,
                    TF_SHM_MAX_DEVICES);
            return TF_ERANGE;
        }
        if (n >= sizeof(out->uuids[0])) {
            tf_errf(err, errlen, "%s: \"%.*s...\" is not a GPU uuid", TF_HV_ANN_GPU_IDS, 40, p);
            return TF_EINVAL;
        }
        memcpy(out->uuids[out->ngpu], p, n);
        out->uuids[out->ngpu][n] = '\0';
        for (int i = 0; i < out->ngpu; i++) {
            if (strcmp(out->uuids[i], out->uuids[out->ngpu]) == 0) {
                tf_errf(err, errlen, "%s: GPU %s is listed twice", TF_HV_ANN_GPU_IDS,
                        out->uuids[i]);
                return TF_EINVAL;
            }
        }
        out->ngpu++;
        p += n;
    }
    if (out->ngpu == 0) {
        tf_errf(err, errlen, "%s: \"%s\" names no GPU", TF_HV_ANN_GPU_IDS, ids);
        return TF_EINVAL;
    }
    return 0;
}

/* One region entry for GPU D from the spec's limits. */
static int dev_config(const struct tf_spec *s, const struct tf_hv_device *d,
                      struct tf_shm_dev_config *c, char *err, size_t errlen)
{
    if (tf_shm_uuid_parse(d->uuid, c->uuid) != 0) {
        tf_errf(err, errlen, "GPU uuid %s cannot go into a limit region", d->uuid);
        return TF_EINVAL;
    }
    c->flags = TF_SHM_DEV_PRESENT;
    c->mem_total = (uint64_t)d->vram_bytes;
    int64_t bp = -1;
    if (s->limits.percent_set) {
        bp = s->limits.percent_bp;
    } else if (s->limits.tflops_set) {
        if (d->tflops_milli <= 0) {
            tf_errf(err, errlen, "%s: GPU %s (%s) has no known TFLOPS to convert the limit",
                    TF_ANN_TFLOPS_LIMIT, d->uuid, d->name);
            return TF_EINVAL;
        }
        bp = tf_tflops_to_percent(s->limits.tflops_milli, d->tflops_milli);
    }
    if (bp >= 0) {
        c->flags |= TF_SHM_DEV_COMPUTE_LIMIT;
        c->compute_limit_bp = (uint32_t)(bp < 1 ? 1 : bp > 10000 ? 10000 : bp);
    }
    if (s->limits.vram_set) {
        c->flags |= TF_SHM_DEV_VRAM_LIMIT;
        c->vram_limit = (uint64_t)s->limits.vram_bytes;
    }
    return 0;
}

/* securityContext KEY of O (a pod spec or a container) as an id, -1 when unset or not one. */
static int64_t sc_id(json_object *o, const char *key)
{
    json_object *v = tf_json_path(o, "securityContext", key, NULL);
    if (!v || !json_object_is_type(v, json_type_int))
        return -1;
    int64_t id = json_object_get_int64(v);
    return id >= 0 && id <= INT32_MAX ? id : -1;
}

/* Whether container C mounts the region (the webhook's tf-shm volume). */
static bool mounts_region(json_object *c)
{
    json_object *m = tf_json_path(c, "volumeMounts", NULL);
    for (size_t i = 0;
         m && json_object_is_type(m, json_type_array) && i < json_object_array_length(m); i++) {
        const char *n = tf_json_str(json_object_array_get_idx(m, i), "name", NULL);
        if (n && strcmp(n, TF_HV_SHM_VOLUME) == 0)
            return true;
    }
    return false;
}

/* Merges id ID into the one all containers share so far (-2: none seen; -1: unknown or they
 * differ). */
static int64_t common_id(int64_t have, int64_t id)
{
    return have == -2 || have == id ? id : -1;
}

/* Whether pod SPEC lists TF_SHM_POD_GROUP in securityContext.supplementalGroups. */
static bool has_region_group(json_object *spec)
{
    json_object *g = tf_json_path(spec, "securityContext", "supplementalGroups", NULL);
    for (size_t i = 0;
         g && json_object_is_type(g, json_type_array) && i < json_object_array_length(g); i++) {
        json_object *v = json_object_array_get_idx(g, i);
        if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) == TF_SHM_POD_GROUP)
            return true;
    }
    return false;
}

void tf_hv_k8s_pod_perms(json_object *pod, struct tf_shm_perms *out)
{
    *out = (struct tf_shm_perms){.lmode = 0644, .umode = 0600, .uid = -1, .gid = -1};
    json_object *spec = tf_json_path(pod, "spec", NULL);
    json_object *cs = tf_json_path(spec, "containers", NULL);
    int64_t puid = sc_id(spec, "runAsUser"), pgid = sc_id(spec, "runAsGroup"), uid = -2, gid = -2;
    for (size_t i = 0;
         cs && json_object_is_type(cs, json_type_array) && i < json_object_array_length(cs); i++) {
        json_object *c = json_object_array_get_idx(cs, i);
        if (!mounts_region(c))
            continue;
        int64_t cu = sc_id(c, "runAsUser"), cg = sc_id(c, "runAsGroup");
        uid = common_id(uid, cu >= 0 ? cu : puid);
        gid = common_id(gid, cg >= 0 ? cg : pgid);
    }
    /* A group every container has: the webhook's region group, else the pod's fsGroup,
     * else the runAsGroup they share. */
    int64_t fs = sc_id(spec, "fsGroup");
    if (has_region_group(spec))
        gid = TF_SHM_POD_GROUP;
    else if (fs >= 0)
        gid = fs;
    out->uid = uid >= 0 ? (int)uid : -1;
    out->gid = gid >= 0 ? (int)gid : -1;
    out->umode = out->gid >= 0 ? 0660 : 0600;
}

/* Whether POD is a live TensorFusion client or worker bound to NODE with gpu-ids (*IDS) and
 * its component label (*COMP). */
static bool placed_here(json_object *pod, const char *node, const char **ids, const char **comp)
{
    const char *pnode = tf_json_str(pod, "spec", "nodeName", NULL);
    const char *phase = tf_json_str(pod, "status", "phase", NULL);
    *ids = tf_json_str(pod, "metadata", "annotations", TF_HV_ANN_GPU_IDS, NULL);
    *comp = tf_json_str(pod, "metadata", "labels", TF_HV_LABEL_COMPONENT, NULL);
    return pnode && strcmp(pnode, node) == 0 && *ids && *comp &&
           (strcmp(*comp, "client") == 0 || strcmp(*comp, "worker") == 0) &&
           !(phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0));
}

int tf_hv_k8s_pod_plan(json_object *pod, const char *node, const struct tf_hv_device *devs,
                       int ndev, struct tf_hv_k8s_pod *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *ids = NULL, *comp = NULL;
    if (!placed_here(pod, node, &ids, &comp))
        return 0;
    const char *ns = tf_json_str(pod, "metadata", "namespace", NULL);
    const char *name = tf_json_str(pod, "metadata", "name", NULL);
    const char *uid = tf_json_str(pod, "metadata", "uid", NULL);
    if (!dir_safe(ns) || !dir_safe(name) || !tf_strlcpy(out->ns, ns, sizeof(out->ns)) ||
        !tf_strlcpy(out->name, name, sizeof(out->name)) ||
        !tf_strlcpy(out->uid, uid ? uid : "", sizeof(out->uid))) {
        tf_errf(err, errlen, "pod %s/%s: names unusable for a limit region", ns ? ns : "?",
                name ? name : "?");
        return TF_EINVAL;
    }
    snprintf(out->key, sizeof(out->key), "%s/%s", ns, name);
    struct tf_spec s;
    int rc = tf_spec_parse(pod, NULL, NULL, &s, err, errlen);
    if (rc)
        return rc;
    rc = 0;
    /* Soft: the app's limiter reads the region. Hard (the pod's tf-worker sidecar) and remote
     * workers: tf-worker --limits-region does. Whole GPUs (shared, partitioned): nothing to
     * limit. */
    if (!s.enabled || !s.is_local_gpu ||
        (s.isolation != TF_ISOLATION_SOFT && s.isolation != TF_ISOLATION_HARD))
        goto out;
    tf_strlcpy(out->workload, s.workload ? s.workload : name, sizeof(out->workload));
    if ((rc = split_ids(ids, out, err, errlen)))
        goto out;
    tf_strlcpy(out->cfg.name, out->key, sizeof(out->cfg.name));
    tf_hv_k8s_pod_perms(pod, &out->perms);
    out->cfg.ndev = (uint32_t)out->ngpu;
    for (int i = 0; i < out->ngpu; i++) {
        const struct tf_hv_device *d = find_dev(devs, ndev, out->uuids[i]);
        if (!d) {
            tf_errf(err, errlen, "%s: GPU %s is not a GPU of node %s", TF_HV_ANN_GPU_IDS,
                    out->uuids[i], node);
            rc = TF_EINVAL;
            goto out;
        }
        if ((rc = dev_config(&s, d, &out->cfg.dev[i], err, errlen)))
            goto out;
    }
    rc = 1;
out:
    tf_spec_free(&s);
    return rc;
}

int tf_hv_k8s_part_want(json_object *pod, const char *node, const struct tf_hv_device *devs,
                        int ndev, struct tf_hv_k8s_part_want *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *ids = NULL, *comp = NULL;
    if (!placed_here(pod, node, &ids, &comp) ||
        !tf_json_str(pod, "metadata", "annotations", TF_ANN_PARTITION, NULL))
        return 0;
    const char *ns = tf_json_str(pod, "metadata", "namespace", NULL);
    const char *name = tf_json_str(pod, "metadata", "name", NULL);
    const char *uid = tf_json_str(pod, "metadata", "uid", NULL);
    if (!ns || !name || !uid || !*uid || !tf_strlcpy(out->ns, ns, sizeof(out->ns)) ||
        !tf_strlcpy(out->name, name, sizeof(out->name)) ||
        !tf_strlcpy(out->uid, uid, sizeof(out->uid))) {
        tf_errf(err, errlen, "pod %s/%s: no usable name, namespace or uid", ns ? ns : "?",
                name ? name : "?");
        return TF_EINVAL;
    }
    snprintf(out->key, sizeof(out->key), "%s/%s", ns, name);
    struct tf_spec s;
    int rc = tf_spec_parse(pod, NULL, NULL, &s, err, errlen);
    if (rc)
        return rc;
    rc = 0;
    if (!s.enabled || s.isolation != TF_ISOLATION_PARTITIONED || !s.partition ||
        (!s.is_local_gpu && strcmp(comp, "client") == 0))
        goto out; /* a remote client's partitions are its worker's */
    tf_strlcpy(out->tpl, s.partition, sizeof(out->tpl));
    struct tf_hv_k8s_pod ids_only;
    memset(&ids_only, 0, sizeof(ids_only));
    if ((rc = split_ids(ids, &ids_only, err, errlen)))
        goto out;
    for (int i = 0; i < ids_only.ngpu; i++) {
        const struct tf_hv_device *d = find_dev(devs, ndev, ids_only.uuids[i]);
        const struct tf_gpu_model *m = d ? tf_gpu_model_find(d->model) : NULL;
        struct tf_partition_profile pp;
        int t = -1;
        if (m && tf_partition_builtin(m, &pp) == 0)
            for (unsigned k = 0; k < pp.ntemplates && t < 0; k++)
                if (strcmp(pp.templates[k].id, s.partition) == 0)
                    t = (int)k;
        if (!d || t < 0) {
            tf_errf(err, errlen, "%s: %s: %s", TF_ANN_PARTITION, ids_only.uuids[i],
                    !d   ? "not a GPU of this node"
                    : !m ? "a GPU of unknown model has no partitions"
                         : "not a partition template of its model");
            rc = TF_EINVAL;
            goto out;
        }
        tf_strlcpy(out->gpus[i].uuid, d->uuid, sizeof(out->gpus[i].uuid));
        out->gpus[i].index = d->index;
        out->gpus[i].slices = pp.templates[t].compute_slots;
        out->gpus[i].vram = pp.templates[t].vram_bytes;
    }
    out->ngpu = ids_only.ngpu;
    rc = 1;
out:
    tf_spec_free(&s);
    return rc;
}
