/* SPDX-License-Identifier: Apache-2.0
 *
 * The node agent's partitions: partitioned pods -> MIG devices (see k8s_parts.h).
 */
#include "hypervisor/k8s_parts.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/partition.h"
#include "hypervisor/k8s_objects.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALLOCATED "allocatedPartitions"

/* One partition: a MIG device of GPU GPU held by pod UID. */
struct rec {
    char gpu[64];
    unsigned gi_id;       /* 0 until matched with NVML's instances */
    unsigned start, size; /* placement, memory slices */
    char uid[64], ns[64], name[254], tpl[24], at[32];
    char mig[96]; /* the MIG device's uuid, "" until matched with NVML's instances */
    bool live;    /* its instance was seen this round */
};

struct tf_hv_k8s_parts {
    struct tf_hv *hv;
    struct tf_k8s_client *c;
    char *node;
    struct rec *r;
    int n, cap;
    bool loaded;
    json_object *dirty;    /* GPU uuid -> true: its record must be published */
    json_object *reported; /* "uid gpu" -> the last failure reported on the pod */
};

struct tf_hv_k8s_parts *tf_hv_k8s_parts_new(struct tf_hv *hv, struct tf_k8s_client *c,
                                            const char *node)
{
    struct tf_hv_k8s_parts *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->hv = hv;
    p->c = c;
    p->node = strdup(node);
    p->dirty = json_object_new_object();
    p->reported = json_object_new_object();
    if (!p->node || !p->dirty || !p->reported) {
        tf_hv_k8s_parts_free(p);
        return NULL;
    }
    return p;
}

void tf_hv_k8s_parts_free(struct tf_hv_k8s_parts *p)
{
    if (!p)
        return;
    free(p->r);
    free(p->node);
    json_object_put(p->dirty);
    json_object_put(p->reported);
    free(p);
}

static struct rec *add_rec(struct tf_hv_k8s_parts *p)
{
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 8;
        struct rec *r = realloc(p->r, (size_t)cap * sizeof(*r));
        if (!r)
            return NULL;
        p->r = r;
        p->cap = cap;
    }
    struct rec *r = &p->r[p->n++];
    memset(r, 0, sizeof(*r));
    return r;
}

static void del_rec(struct tf_hv_k8s_parts *p, int i)
{
    json_object_object_add(p->dirty, p->r[i].gpu, json_object_new_boolean(true));
    p->r[i] = p->r[--p->n];
}

/* ---- the records on the GPU objects ------------------------------------------------------- */

static unsigned uint_of(json_object *o, const char *key)
{
    json_object *v = tf_json_path(o, key, NULL);
    int64_t x = v ? json_object_get_int64(v) : 0;
    return x < 0 || x > 64 ? 0 : (unsigned)x;
}

static int load_gpu(json_object *gpu, void *arg)
{
    struct tf_hv_k8s_parts *p = arg;
    const char *uuid = tf_json_str(gpu, "status", "uuid", NULL);
    json_object *ap = tf_json_path(gpu, "status", ALLOCATED, NULL);
    if (!uuid || !ap || !json_object_is_type(ap, json_type_object))
        return 0;
    json_object_object_foreach(ap, uid, v)
    {
        unsigned start = uint_of(v, "allocatedSlotStart"), end = uint_of(v, "allocatedSlotEnd");
        const char *tpl = tf_json_str(v, "templateId", NULL);
        struct rec *r;
        if (!tpl || end <= start || !(r = add_rec(p)))
            continue;
        tf_strlcpy(r->gpu, uuid, sizeof(r->gpu));
        tf_strlcpy(r->uid, uid, sizeof(r->uid));
        tf_strlcpy(r->tpl, tpl, sizeof(r->tpl));
        const char *ns = tf_json_str(v, "namespace", NULL), *name = tf_json_str(v, "podName", NULL),
                   *at = tf_json_str(v, "allocatedAt", NULL);
        tf_strlcpy(r->ns, ns ? ns : "", sizeof(r->ns));
        tf_strlcpy(r->name, name ? name : "", sizeof(r->name));
        tf_strlcpy(r->at, at ? at : "", sizeof(r->at));
        r->start = start;
        r->size = end - start;
    }
    return 0;
}

/* Reads what this node's GPU objects record (once, before anything is destroyed). */
static int load(struct tf_hv_k8s_parts *p)
{
    char sel[320], err[512];
    snprintf(sel, sizeof(sel), "%s=%s", TF_HV_LABEL_NODE, p->node);
    p->n = 0;
    int rc =
        tf_k8s_list(p->c, &tf_k8s_gpus, NULL, sel, NULL, 0, load_gpu, p, NULL, err, sizeof(err));
    if (rc) {
        tf_log(TF_LOG_WARN, "k8s", "partitions: cannot read the GPU objects: %s", err);
        p->n = 0;
    }
    return rc;
}

struct pub_ctx {
    struct tf_hv_k8s_parts *p;
    const char *gpu;
};

/* The merge patch making OBJ's allocatedPartitions this GPU's records, or NULL. */
static json_object *build_pub(json_object *obj, void *arg)
{
    struct pub_ctx *x = arg;
    json_object *have = tf_json_path(obj, "status", ALLOCATED, NULL),
                *want = json_object_new_object();
    for (int i = 0; i < x->p->n; i++) {
        const struct rec *r = &x->p->r[i];
        if (strcmp(r->gpu, x->gpu) != 0)
            continue;
        json_object *e = json_object_new_object();
        json_object_object_add(e, "templateId", json_object_new_string(r->tpl));
        json_object_object_add(e, "podUid", json_object_new_string(r->uid));
        json_object_object_add(e, "podName", json_object_new_string(r->name));
        json_object_object_add(e, "namespace", json_object_new_string(r->ns));
        json_object_object_add(e, "allocatedAt", json_object_new_string(r->at));
        json_object_object_add(e, "allocatedSlotStart", json_object_new_int((int)r->start));
        json_object_object_add(e, "allocatedSlotEnd",
                               json_object_new_int((int)(r->start + r->size)));
        json_object_object_add(want, r->uid, e);
    }
    if (!tf_hv_k8s_differs(have, want) &&
        json_object_object_length(have ? have : want) == json_object_object_length(want)) {
        json_object_put(want);
        return NULL;
    }
    if (have && json_object_is_type(have, json_type_object)) {
        json_object_object_foreach(have, k, v)
        {
            (void)v;
            if (!json_object_object_get_ex(want, k, NULL))
                json_object_object_add(want, k, NULL); /* merge patch: removed */
        }
    }
    json_object *patch = json_object_new_object(), *st = json_object_new_object();
    json_object_object_add(st, ALLOCATED, want);
    json_object_object_add(patch, "status", st);
    return patch;
}

static void publish(struct tf_hv_k8s_parts *p)
{
    json_object *done = json_object_new_array();
    json_object_object_foreach(p->dirty, gpu, v)
    {
        (void)v;
        char name[128], err[512];
        struct pub_ctx x = {p, gpu};
        if (!tf_hv_k8s_gpu_name(gpu, name, sizeof(name)))
            continue;
        int rc = tf_k8s_merge_patch_retry(p->c, &tf_k8s_gpus, NULL, name, "status", build_pub, &x,
                                          NULL, err, sizeof(err));
        if (rc)
            tf_log(TF_LOG_WARN, "k8s", "partitions of GPU %s not recorded (retried): %s", gpu, err);
        else
            json_object_array_add(done, json_object_new_string(gpu));
    }
    for (size_t i = 0; i < json_object_array_length(done); i++)
        json_object_object_del(p->dirty,
                               json_object_get_string(json_object_array_get_idx(done, i)));
    json_object_put(done);
}

/* ---- reconcile ---------------------------------------------------------------------------- */

struct wants {
    struct tf_hv_k8s_part_want *w;
    int n;
    json_object *keep; /* uids of pods whose annotations are broken now: their partitions stay */
};

/* The want of pod UID holding template TPL on GPU, or NULL. */
static struct tf_hv_k8s_part_want *wanted(struct wants *ws, const char *uid, const char *gpu,
                                          const char *tpl, int *g)
{
    for (int i = 0; i < ws->n; i++) {
        if (strcmp(ws->w[i].uid, uid) != 0 || strcmp(ws->w[i].tpl, tpl) != 0)
            continue;
        for (*g = 0; *g < ws->w[i].ngpu; (*g)++)
            if (strcmp(ws->w[i].gpus[*g].uuid, gpu) == 0)
                return &ws->w[i];
    }
    return NULL;
}

/* An Event on the pod of W (a small involved object: the informer's items lack kind). */
static void pod_event(struct tf_hv_k8s_parts *p, const struct tf_hv_k8s_part_want *w,
                      const char *type, const char *reason, const char *msg)
{
    json_object *o = json_object_new_object(), *m = json_object_new_object();
    json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(o, "kind", json_object_new_string("Pod"));
    json_object_object_add(m, "name", json_object_new_string(w->name));
    json_object_object_add(m, "namespace", json_object_new_string(w->ns));
    json_object_object_add(m, "uid", json_object_new_string(w->uid));
    json_object_object_add(o, "metadata", m);
    tf_k8s_event(p->c, o, type, reason, msg, "tf-hypervisor");
    json_object_put(o);
}

/* Matches GPU D's MIG devices with the records: an instance a live pod's record claims is
 * kept (its want satisfied: SAT[w][g]), any other is destroyed; records whose instance is
 * gone are dropped. */
static bool sweep_gpu(struct tf_hv_k8s_parts *p, const struct tf_hv_device *d, struct wants *ws,
                      bool (*sat)[TF_SHM_MAX_DEVICES])
{
    struct tf_hv_mig m[TF_HV_MAX_MIG];
    int nm = 0;
    char err[512];
    if (tf_hv_nvml_mig_list(p->hv->nvml, d->index, m, TF_HV_MAX_MIG, &nm, err, sizeof(err))) {
        tf_log(TF_LOG_DEBUG, "k8s", "partitions: GPU %s: %s", d->uuid, err);
        return false; /* records stay as they are; nothing is created there this round */
    }
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->r[i].gpu, d->uuid) == 0)
            p->r[i].live = false;
    for (int k = 0; k < nm; k++) {
        struct rec *r = NULL;
        for (int i = 0; i < p->n && !r; i++)
            if (strcmp(p->r[i].gpu, d->uuid) == 0 && p->r[i].start == m[k].start &&
                p->r[i].size == m[k].size)
                r = &p->r[i];
        int g = 0;
        struct tf_hv_k8s_part_want *w = r ? wanted(ws, r->uid, d->uuid, r->tpl, &g) : NULL;
        if (r && (w || json_object_object_get_ex(ws->keep, r->uid, NULL))) {
            r->live = true;
            r->gi_id = m[k].gi_id;
            tf_strlcpy(r->mig, m[k].uuid, sizeof(r->mig));
            if (w)
                sat[w - ws->w][g] = true;
            continue;
        }
        int rc = tf_hv_nvml_mig_destroy(p->hv->nvml, d->index, m[k].gi_id, err, sizeof(err));
        if (rc)
            tf_log(TF_LOG_WARN, "k8s", "partition %s on GPU %s not destroyed (retried): %s",
                   m[k].uuid, d->uuid, err);
        else
            tf_log(TF_LOG_INFO, "k8s", "partition %s on GPU %s destroyed (%s)", m[k].uuid, d->uuid,
                   r ? r->name : "held by no pod");
        if (r) /* kept while it could not be destroyed */
            r->live = rc != 0;
    }
    for (int i = p->n - 1; i >= 0; i--)
        if (strcmp(p->r[i].gpu, d->uuid) == 0 && !p->r[i].live)
            del_rec(p, i);
    return true;
}

/* Creates the partition of want W on its GPU G. */
static void create(struct tf_hv_k8s_parts *p, const struct tf_hv_k8s_part_want *w, int g)
{
    struct tf_hv_mig m;
    char err[512], msg[800], key[160];
    snprintf(key, sizeof(key), "%s %s", w->uid, w->gpus[g].uuid);
    int rc = tf_hv_nvml_mig_create(p->hv->nvml, w->gpus[g].index, w->gpus[g].slices,
                                   w->gpus[g].vram, &m, err, sizeof(err));
    struct rec *r = rc ? NULL : add_rec(p);
    if (!r) {
        snprintf(msg, sizeof(msg), "cannot create the %s partition on GPU %s: %s", w->tpl,
                 w->gpus[g].uuid, rc ? err : "out of memory");
        const char *last = tf_json_str(p->reported, key, NULL);
        if (!last || strcmp(last, msg) != 0) {
            tf_log(TF_LOG_WARN, "k8s", "pod %s: %s", w->key, msg);
            pod_event(p, w, "Warning", "PartitionFailed", msg);
            json_object_object_add(p->reported, key, json_object_new_string(msg));
        }
        if (!rc) /* created but cannot be recorded: take it back */
            tf_hv_nvml_mig_destroy(p->hv->nvml, w->gpus[g].index, m.gi_id, err, sizeof(err));
        return;
    }
    json_object_object_del(p->reported, key);
    tf_strlcpy(r->gpu, w->gpus[g].uuid, sizeof(r->gpu));
    tf_strlcpy(r->uid, w->uid, sizeof(r->uid));
    tf_strlcpy(r->ns, w->ns, sizeof(r->ns));
    tf_strlcpy(r->name, w->name, sizeof(r->name));
    tf_strlcpy(r->tpl, w->tpl, sizeof(r->tpl));
    tf_k8s_time_now(r->at, sizeof(r->at), false);
    r->gi_id = m.gi_id;
    tf_strlcpy(r->mig, m.uuid, sizeof(r->mig));
    r->start = m.start;
    r->size = m.size;
    r->live = true;
    json_object_object_add(p->dirty, r->gpu, json_object_new_boolean(true));
    snprintf(msg, sizeof(msg), "partition %s (%s) created on GPU %s, slots %u-%u", m.uuid, w->tpl,
             w->gpus[g].uuid, m.start, m.start + m.size);
    tf_log(TF_LOG_INFO, "k8s", "pod %s: %s", w->key, msg);
    pod_event(p, w, "Normal", "PartitionCreated", msg);
}

void tf_hv_k8s_parts_reconcile(struct tf_hv_k8s_parts *p, json_object *pods,
                               const struct tf_hv_device *devs, int ndev)
{
    if (!p || !p->hv->nvml)
        return;
    if (!p->loaded && load(p) != 0)
        return;
    p->loaded = true;
    size_t np = json_object_array_length(pods);
    struct wants ws = {calloc(np + 1, sizeof(*ws.w)), 0, json_object_new_object()};
    bool(*sat)[TF_SHM_MAX_DEVICES] = calloc(np + 1, sizeof(*sat));
    if (!ws.w || !sat || !ws.keep)
        goto out;
    char err[512];
    for (size_t i = 0; i < np; i++) {
        struct tf_hv_k8s_part_want *w = &ws.w[ws.n];
        int rc = tf_hv_k8s_part_want(json_object_array_get_idx(pods, i), p->node, devs, ndev, w,
                                     err, sizeof(err));
        if (rc == 1) {
            ws.n++;
        } else if (rc < 0) {
            if (w->uid[0])
                json_object_object_add(ws.keep, w->uid, NULL);
            const char *last = tf_json_str(p->reported, w->key, NULL);
            if (!last || strcmp(last, err) != 0) {
                tf_log(TF_LOG_WARN, "k8s", "pod %s: no partition: %s", w->key, err);
                json_object_object_add(p->reported, w->key, json_object_new_string(err));
            }
        }
    }
    /* Sweep every GPU whose model partitions; then create what is missing where the sweep
     * saw the GPU's instances. */
    bool swept[TF_HV_MAX_DEVICES] = {false};
    for (int d = 0; d < ndev; d++) {
        struct tf_partition_profile pp;
        const struct tf_gpu_model *m = tf_gpu_model_find(devs[d].model);
        if (devs[d].present && m && tf_partition_builtin(m, &pp) == 0 && devs[d].index >= 0 &&
            devs[d].index < TF_HV_MAX_DEVICES)
            swept[devs[d].index] = sweep_gpu(p, &devs[d], &ws, sat);
    }
    for (int i = 0; i < ws.n; i++)
        for (int g = 0; g < ws.w[i].ngpu; g++)
            if (!sat[i][g] && swept[ws.w[i].gpus[g].index])
                create(p, &ws.w[i], g);
    publish(p);
out:
    json_object_put(ws.keep);
    free(ws.w);
    free(sat);
}

const char *tf_hv_k8s_parts_mig(const struct tf_hv_k8s_parts *p, const char *uid, const char *gpu)
{
    for (int i = 0; p && i < p->n; i++)
        if (p->r[i].live && p->r[i].mig[0] && strcmp(p->r[i].uid, uid) == 0 &&
            strcmp(p->r[i].gpu, gpu) == 0)
            return p->r[i].mig;
    return NULL;
}

const char *tf_hv_k8s_parts_problem(const struct tf_hv_k8s_parts *p, const char *uid,
                                    const char *gpu)
{
    char key[160];
    snprintf(key, sizeof(key), "%s %s", uid, gpu);
    return p ? tf_json_str(p->reported, key, NULL) : NULL;
}
