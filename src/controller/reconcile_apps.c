/* SPDX-License-Identifier: Apache-2.0
 *
 * TensorFusionWorkload (remote worker pods, token Secrets), TensorFusionConnection and
 * GPUResourceQuota reconcilers (see reconcile.h).
 */
#include "controller/reconcile_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/base64.h"
#include "controller/webhook.h"
#include "controller/podidx.h"
#include "core/quantity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define WORKER_PORT 8001

/* ---- workloads, remote workers, connections ----------------------------------------------- */

/* Appends env NAME from the downward-API field PATH to ENV. */
static void env_ref(json_object *env, const char *name, const char *path)
{
    json_object *e = json_object_new_object(), *vf = json_object_new_object(),
                *fr = json_object_new_object();
    json_object_object_add(e, "name", json_object_new_string(name));
    json_object_object_add(fr, "fieldPath", json_object_new_string(path));
    json_object_object_add(vf, "fieldRef", fr);
    json_object_object_add(e, "valueFrom", vf);
    json_object_array_add(env, e);
}

#define WORKER_TOKEN_DIR "/run/tensor-fusion/token"

/* The workload's token Secret (tf_webhook_token_secret), created with 24 random bytes in hex
 * and owned by the workload when missing; an existing one is kept (running workers and
 * clients already use its token). False when it cannot be made (logged). */
static bool ensure_token_secret(struct tf_reconciler *r, json_object *wl)
{
    const char *ns = tf_json_str(wl, "metadata", "namespace", NULL);
    const char *name = tf_json_str(wl, "metadata", "name", NULL);
    const char *uid = tf_json_str(wl, "metadata", "uid", NULL);
    char secret[254], err[256];
    tf_webhook_token_secret(name, secret, sizeof(secret));
    json_object *have = NULL;
    int rc = tf_k8s_get(r->c, &tf_k8s_secrets, ns, secret, &have, err, sizeof(err));
    json_object_put(have);
    if (rc != TF_ENOENT)
        return rc == 0;
    uint8_t raw[24];
    char hex[2 * sizeof(raw) + 1];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        tf_log(TF_LOG_ERROR, "reconcile", "no random bytes for %s/%s's token", ns, name);
        return false;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    char *b64 = tf_base64_encode(hex, strlen(hex));
    json_object *o = json_object_new_object(), *meta = json_object_new_object(),
                *labels = json_object_new_object(), *data = json_object_new_object(),
                *refs = json_object_new_array(), *ref = json_object_new_object();
    json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(o, "kind", json_object_new_string("Secret"));
    json_object_object_add(meta, "name", json_object_new_string(secret));
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    json_object_object_add(labels, "tensor-fusion.ai/workload", json_object_new_string(name));
    json_object_object_add(meta, "labels", labels);
    json_object_object_add(ref, "apiVersion", json_object_new_string("tensor-fusion.ai/v1"));
    json_object_object_add(ref, "kind", json_object_new_string("TensorFusionWorkload"));
    json_object_object_add(ref, "name", json_object_new_string(name));
    json_object_object_add(ref, "uid", json_object_new_string(uid ? uid : ""));
    json_object_array_add(refs, ref);
    json_object_object_add(meta, "ownerReferences", refs);
    json_object_object_add(o, "metadata", meta);
    json_object_object_add(o, "type", json_object_new_string("Opaque"));
    json_object_object_add(data, TF_TOKEN_SECRET_KEY, json_object_new_string(b64 ? b64 : ""));
    json_object_object_add(o, "data", data);
    bool encoded = b64 != NULL;
    free(b64);
    memset(hex, 0, sizeof(hex));
    rc = encoded ? tf_k8s_create(r->c, &tf_k8s_secrets, ns, o, NULL, err, sizeof(err)) : TF_ENOMEM;
    json_object_put(o);
    if (rc == 0)
        r->writes++;
    else if (rc != TF_EEXIST)
        tf_log(TF_LOG_WARN, "reconcile", "cannot create the token Secret %s/%s: %s", ns, secret,
               err);
    return rc == 0 || rc == TF_EEXIST;
}

static int feature_of(const char *item, size_t len, void *arg)
{
    char name[64];
    enum tf_feature f;
    snprintf(name, sizeof(name), "%.*s", (int)len, item);
    if (tf_feature_parse(name, &f) == 0)
        *(unsigned *)arg |= f;
    return 0;
}

/* The TF_FEATURE_* bits of POD's tensor-fusion.ai/disable-features (the webhook admitted it:
 * unknown names were warned about then). */
static unsigned disabled_features(json_object *pod)
{
    unsigned off = 0;
    const char *list = tf__rc_ann(pod, TF_ANN_DISABLE_FEATURES);
    if (list)
        tf_split_list(list, feature_of, &off);
    return off;
}

/* The worker pod of workload WL for CLIENT; PIDX > 0: a partitioned worker's pod index
 * (core/podindex.h), its MIG devices then come from the device plugin's Allocate. */
static json_object *worker_pod(struct tf_reconciler *r, json_object *wl, json_object *client,
                               int pidx)
{
    const char *ns = tf_json_str(wl, "metadata", "namespace", NULL);
    const char *name = tf_json_str(wl, "metadata", "name", NULL);
    char buf[300];
    json_object *pod = json_object_new_object(), *meta = json_object_new_object(),
                *labels = json_object_new_object(), *anns = json_object_new_object(),
                *spec = json_object_new_object();
    json_object_object_add(pod, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(pod, "kind", json_object_new_string("Pod"));
    snprintf(buf, sizeof(buf), "%.240s-worker-", name);
    json_object_object_add(meta, "generateName", json_object_new_string(buf));
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    json_object_object_add(labels, TF_LABEL_COMPONENT, json_object_new_string("worker"));
    json_object_object_add(labels, TF_LABEL_ENABLED, json_object_new_string("true"));
    json_object_object_add(labels, "tensor-fusion.ai/workload", json_object_new_string(name));
    json_object_object_add(meta, "labels", labels);
    /* The worker holds the GPUs: it carries the client's normalised resource annotations, all
     * of its GPUs in its one container (so no per-container split or placement). */
    json_object *cann = tf_json_path(client, "metadata", "annotations", NULL);
    json_object_object_foreach(cann, k, v)
    {
        if (strncmp(k, TF_KEY_PREFIX, strlen(TF_KEY_PREFIX)) == 0 &&
            strcmp(k, TF_ANN_IS_LOCAL_GPU) != 0 && strcmp(k, TF_ANN_GPU_IDS) != 0 &&
            strcmp(k, TF_ANN_CONTAINER_GPUS) != 0 && strcmp(k, TF_ANN_INJECT_CONTAINER) != 0 &&
            strcmp(k, TF_ANN_CONTAINER_GPU_COUNT) != 0 && strcmp(k, TF_PODIDX_ANNOTATION) != 0 &&
            strncmp(k, TF_ANN_CONTAINER_GPU_IDS_PREFIX,
                    sizeof(TF_ANN_CONTAINER_GPU_IDS_PREFIX) - 1) != 0)
            json_object_object_add(anns, k, json_object_get(v));
    }
    json_object_object_add(anns, TF_ANN_IS_LOCAL_GPU, json_object_new_string("true"));
    json_object_object_add(anns, TF_ANN_INJECT_CONTAINER, json_object_new_string("tf-worker"));
    if (pidx > 0) {
        snprintf(buf, sizeof(buf), "%d", pidx);
        json_object_object_add(anns, TF_PODIDX_ANNOTATION, json_object_new_string(buf));
    }
    json_object_object_add(meta, "annotations", anns);
    json_object_object_add(pod, "metadata", meta);
    json_object_object_add(spec, "schedulerName", json_object_new_string(TF_SCHEDULER_NAME));
    json_object *c = json_object_new_object();
    json_object_object_add(c, "name", json_object_new_string("tf-worker"));
    json_object_object_add(c, "image", json_object_new_string(r->worker_image));
    json_object *cmd = json_object_new_array();
    json_object_array_add(cmd, json_object_new_string("tf-worker"));
    json_object_array_add(cmd, json_object_new_string("--listen"));
    snprintf(buf, sizeof(buf), "tcp://0.0.0.0:%d", WORKER_PORT);
    json_object_array_add(cmd, json_object_new_string(buf));
    json_object_object_add(c, "command", cmd);
    json_object *ports = json_object_new_array(), *port = json_object_new_object();
    json_object_object_add(port, "containerPort", json_object_new_int(WORKER_PORT));
    json_object_array_add(ports, port);
    json_object_object_add(c, "ports", ports);
    /* The NVIDIA container runtime exposes exactly the GPUs the extender bound the worker to
     * (it writes gpu-ids before the Binding; the kubelet resolves this at container start). */
    json_object *env = json_object_new_array();
    if (pidx <= 0)
        env_ref(env, "NVIDIA_VISIBLE_DEVICES", "metadata.annotations['" TF_ANN_GPU_IDS "']");
    env_ref(env, "POD_NAME", "metadata.name");
    env_ref(env, "POD_NAMESPACE", "metadata.namespace");
    json_object_object_add(c, "env", env);
    /* The worker enforces the workload's limits from the pod's region, which the node agent
     * writes (and rewrites when the limits change) in the pod's own directory of the shm tree;
     * only that directory is mounted, read-only but for the region's usage part. */
    const char *gc = tf__rc_ann(client, TF_ANN_GPU_COUNT),
               *iso = tf__rc_ann(client, TF_ANN_ISOLATION);
    bool whole = iso && (strcmp(iso, "shared") == 0 || strcmp(iso, "partitioned") == 0);
    unsigned off = disabled_features(client);
    tf_webhook_worker_args(cmd, gc ? atoi(gc) : 1, WORKER_TOKEN_DIR "/" TF_TOKEN_SECRET_KEY,
                           !whole && !(off & TF_FEATURE_GPU_LIMITER));
    tf_webhook_worker_debug(cmd, off);
    json_object *mounts = json_object_new_array();
    tf_webhook_region_mounts(mounts);
    json_object *m = json_object_new_object();
    json_object_object_add(m, "name", json_object_new_string("tf-token"));
    json_object_object_add(m, "mountPath", json_object_new_string(WORKER_TOKEN_DIR));
    json_object_object_add(m, "readOnly", json_object_new_boolean(true));
    json_object_array_add(mounts, m);
    json_object_object_add(c, "volumeMounts", mounts);
    json_object *vols = json_object_new_array(), *vol = json_object_new_object(),
                *hp = json_object_new_object();
    json_object_object_add(vol, "name", json_object_new_string("tf-shm"));
    json_object_object_add(hp, "path", json_object_new_string(r->shm_host_dir));
    json_object_object_add(hp, "type", json_object_new_string("DirectoryOrCreate"));
    json_object_object_add(vol, "hostPath", hp);
    json_object_array_add(vols, vol);
    char secret[254];
    tf_webhook_token_secret(name, secret, sizeof(secret));
    vol = json_object_new_object();
    json_object *sv = json_object_new_object();
    json_object_object_add(vol, "name", json_object_new_string("tf-token"));
    json_object_object_add(sv, "secretName", json_object_new_string(secret));
    json_object_object_add(vol, "secret", sv);
    json_object_array_add(vols, vol);
    json_object_object_add(spec, "volumes", vols);
    json_object *res = json_object_new_object(), *lim = json_object_new_object();
    json_object_object_add(lim, TF_RESOURCE_VGPU, json_object_new_string(gc ? gc : "1"));
    int bucket, count;
    char ires[40];
    if (pidx > 0 && tf_podidx_encode(pidx, &bucket, &count) == 0 &&
        tf_podidx_resource(bucket, ires, sizeof(ires)) == 0) {
        snprintf(buf, sizeof(buf), "%d", count);
        json_object_object_add(lim, ires, json_object_new_string(buf));
    }
    json_object_object_add(res, "limits", lim);
    json_object_object_add(c, "resources", res);
    json_object *cs = json_object_new_array();
    json_object_array_add(cs, c);
    json_object_object_add(spec, "containers", cs);
    json_object_object_add(pod, "spec", spec);
    return pod;
}

/* How many remote workers WL's CLIENTS get: none without clients; spec.replicas when set (the
 * WorkloadProfile's, through the webhook); else one per client pod for a workload the webhook
 * generated for its pods' owner (upstream's dynamic replicas), and one shared by all for a
 * workload the pods name themselves (tensor-fusion.ai/workload) or a person created. */
static int desired_workers(json_object *wl, int clients)
{
    json_object *reps = tf_json_path(wl, "spec", "replicas", NULL);
    const char *gen = tf__rc_ann(wl, TF_ANN_GENERATED_WORKLOAD);
    if (!clients)
        return 0;
    if (reps && json_object_is_type(reps, json_type_int))
        return json_object_get_int(reps) > 0 ? json_object_get_int(reps) : 0;
    return gen && strcmp(gen, "true") == 0 ? clients : 1;
}

static const char *workers_why(json_object *wl)
{
    if (tf_json_path(wl, "spec", "replicas", NULL))
        return "spec.replicas";
    const char *gen = tf__rc_ann(wl, TF_ANN_GENERATED_WORKLOAD);
    return gen && strcmp(gen, "true") == 0 ? "one per client pod"
                                           : "shared by the pods naming the workload";
}

/* Whether a TensorFusionConnection of namespace NS is paired with worker pod WORKER. */
static bool worker_paired(json_object *conns, const char *ns, const char *worker)
{
    for (size_t i = 0; worker && i < json_object_array_length(conns); i++) {
        json_object *cn = json_object_array_get_idx(conns, i);
        const char *cns = tf_json_str(cn, "metadata", "namespace", NULL);
        const char *w = tf_json_str(cn, "status", "workerName", NULL);
        if (cns && w && strcmp(cns, ns) == 0 && strcmp(w, worker) == 0)
            return true;
    }
    return false;
}

/* Deletes up to N of WORKERS (an array of worker pods): those no client is connected to
 * first; with ALL (no client left) any. Returns how many were deleted. */
static int scale_down(struct tf_reconciler *r, json_object *wl, json_object *workers, int n,
                      bool all)
{
    const char *ns = tf_json_str(wl, "metadata", "namespace", NULL);
    json_object *conns = r->src.connections ? tf_informer_snapshot(r->src.connections) : NULL;
    int gone = 0;
    char err[256];
    for (int pass = 0; pass < 2 && gone < n; pass++) {
        for (size_t k = 0; k < json_object_array_length(workers) && gone < n; k++) {
            json_object *wp = json_object_array_get_idx(workers, k);
            const char *wn = tf_json_str(wp, "metadata", "name", NULL);
            if (!wn || tf_json_path(wp, "metadata", "deletionTimestamp", NULL))
                continue;
            bool paired = worker_paired(conns, ns, wn);
            if ((pass == 0 && paired) || (pass == 1 && (!paired || !all)))
                continue;
            if (tf_k8s_delete(r->c, &tf_k8s_pods, ns, wn, err, sizeof(err)) == 0) {
                r->writes++;
                gone++;
            } else {
                tf_log(TF_LOG_WARN, "reconcile", "cannot delete worker %s/%s: %s", ns, wn, err);
            }
        }
    }
    json_object_put(conns);
    return gone;
}

void tf__rc_workloads(struct tf_reconciler *r, json_object *pods)
{
    json_object *wls = tf_informer_snapshot(r->src.workloads);
    for (size_t i = 0; i < json_object_array_length(wls); i++) {
        json_object *wl = json_object_array_get_idx(wls, i);
        const char *ns = tf_json_str(wl, "metadata", "namespace", NULL);
        const char *name = tf_json_str(wl, "metadata", "name", NULL);
        json_object *local = tf_json_path(wl, "spec", "isLocalGPU", NULL);
        bool remote = local && !tf_json_true(local, NULL); /* the CRD's boolean */
        int clients = 0, workers = 0, ready = 0;
        json_object *first_client = NULL, *worker_list = json_object_new_array();
        for (size_t p = 0; p < json_object_array_length(pods); p++) {
            json_object *pod = json_object_array_get_idx(pods, p);
            const char *pns = tf_json_str(pod, "metadata", "namespace", NULL);
            if (!tf__rc_pod_active(pod) || !pns || strcmp(pns, ns) != 0)
                continue;
            const char *comp = tf__rc_lbl(pod, TF_LABEL_COMPONENT);
            const char *w = remote && comp && strcmp(comp, "worker") == 0
                                ? tf__rc_lbl(pod, "tensor-fusion.ai/workload")
                                : tf__rc_ann(pod, TF_ANN_WORKLOAD);
            if (!comp || !w || strcmp(w, name) != 0)
                continue;
            if (strcmp(comp, "client") == 0) {
                clients++;
                if (!first_client)
                    first_client = pod;
                if (!remote) {
                    workers++; /* local: the app pod is its own worker */
                    ready += tf__rc_pod_ready(pod);
                }
            } else if (strcmp(comp, "worker") == 0) {
                workers++;
                ready += tf__rc_pod_ready(pod);
                json_object_array_add(worker_list, json_object_get(pod));
            }
        }
        char err[256];
        int want = desired_workers(wl, clients);
        if (remote && want > workers && first_client && ensure_token_secret(r, wl)) {
            const char *iso = tf__rc_ann(first_client, TF_ANN_ISOLATION);
            bool indexed = r->podidx && iso && strcmp(iso, "partitioned") == 0;
            for (int k = workers; k < want; k++) {
                int pidx = indexed ? tf_ctl_podidx_take(r->podidx, err, sizeof(err)) : 0;
                if (pidx < 0) {
                    tf__rc_event(r, wl, "Warning", "NoPodIndex",
                                 "no worker pod for partitioned workload %s/%s: %s", ns, name, err);
                    break;
                }
                json_object *wp = worker_pod(r, wl, first_client, pidx);
                if (tf_k8s_create(r->c, &tf_k8s_pods, ns, wp, NULL, err, sizeof(err)) == 0) {
                    r->writes++;
                    tf__rc_event(r, wl, "Normal", "WorkerCreated",
                                 "worker pod for remote workload %s/%s (%d of %d, %s)", ns, name,
                                 k + 1, want, workers_why(wl));
                } else {
                    tf_log(TF_LOG_WARN, "reconcile", "cannot create worker: %s", err);
                }
                json_object_put(wp);
            }
        } else if (remote && workers > want) {
            int gone = scale_down(r, wl, worker_list, workers - want, clients == 0);
            if (gone)
                tf__rc_event(r, wl, "Normal", "WorkersScaledDown", "%d worker pod%s deleted (%s)",
                             gone, gone == 1 ? "" : "s",
                             clients ? workers_why(wl) : "no client pods left");
        }
        json_object_put(worker_list);
        json_object *st = json_object_new_object();
        json_object_object_add(st, "workerCount", json_object_new_int(workers));
        json_object_object_add(st, "readyWorkers", json_object_new_int(ready));
        json_object_object_add(
            st, "phase",
            json_object_new_string(workers && ready == workers ? "Running" : "Pending"));
        tf__rc_put_status(r, &tf_k8s_tfworkloads, wl, st);
    }
    json_object_put(wls);
}

void tf__rc_connections(struct tf_reconciler *r, json_object *pods)
{
    json_object *conns = tf_informer_snapshot(r->src.connections);
    char err[256];
    /* Remove connections whose client pod is gone. */
    for (size_t i = 0; i < json_object_array_length(conns); i++) {
        json_object *cn = json_object_array_get_idx(conns, i);
        const char *ns = tf_json_str(cn, "metadata", "namespace", NULL);
        const char *client = tf_json_str(cn, "spec", "clientPod", NULL);
        bool found = false;
        for (size_t p = 0; client && p < json_object_array_length(pods) && !found; p++) {
            json_object *pod = json_object_array_get_idx(pods, p);
            const char *pn = tf_json_str(pod, "metadata", "name", NULL);
            const char *pns = tf_json_str(pod, "metadata", "namespace", NULL);
            found = pn && pns && strcmp(pn, client) == 0 && strcmp(pns, ns) == 0 &&
                    tf__rc_pod_active(pod);
        }
        if (!found &&
            tf_k8s_delete(r->c, &tf_k8s_tfconnections, ns,
                          tf_json_str(cn, "metadata", "name", NULL), err, sizeof(err)) == 0)
            r->writes++;
    }
    for (size_t p = 0; p < json_object_array_length(pods); p++) {
        json_object *pod = json_object_array_get_idx(pods, p);
        const char *comp = tf__rc_lbl(pod, TF_LABEL_COMPONENT);
        const char *local = tf__rc_ann(pod, TF_ANN_IS_LOCAL_GPU);
        const char *wl = tf__rc_ann(pod, TF_ANN_WORKLOAD);
        if (!tf__rc_pod_active(pod) || !comp || strcmp(comp, "client") != 0 || !local ||
            strcmp(local, "false") != 0 || !wl)
            continue;
        const char *ns = tf_json_str(pod, "metadata", "namespace", NULL);
        const char *pn = tf_json_str(pod, "metadata", "name", NULL);
        json_object *cn = tf_informer_get(r->src.connections, ns, pn);
        if (!cn) {
            char buf[1024];
            snprintf(buf, sizeof(buf),
                     "{\"apiVersion\":\"tensor-fusion.ai/v1\",\"kind\":\"TensorFusionConnection\","
                     "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":{"
                     "\"tensor-fusion.ai/workload\":\"%s\"},\"ownerReferences\":[{\"apiVersion\":"
                     "\"v1\",\"kind\":\"Pod\",\"name\":\"%s\",\"uid\":\"%s\"}]},\"spec\":{"
                     "\"workloadName\":\"%s\",\"clientPod\":\"%s\"}}",
                     pn, ns, wl, pn, tf__rc_pod_uid(pod), wl, pn);
            json_object *obj = json_tokener_parse(buf);
            if (obj &&
                tf_k8s_create(r->c, &tf_k8s_tfconnections, ns, obj, &cn, err, sizeof(err)) == 0)
                r->writes++;
            json_object_put(obj);
            if (!cn)
                continue;
        }
        if (tf_json_str(cn, "status", "workerName", NULL)) {
            json_object_put(cn);
            continue;
        }
        /* Least-loaded running worker of the workload. */
        const char *best = NULL, *best_ip = NULL;
        int best_load = 1 << 30;
        for (size_t w = 0; w < json_object_array_length(pods); w++) {
            json_object *wp = json_object_array_get_idx(pods, w);
            const char *wc = tf__rc_lbl(wp, TF_LABEL_COMPONENT);
            const char *ww = tf__rc_lbl(wp, "tensor-fusion.ai/workload");
            const char *wns = tf_json_str(wp, "metadata", "namespace", NULL);
            const char *ip = tf_json_str(wp, "status", "podIP", NULL);
            if (!wc || strcmp(wc, "worker") != 0 || !ww || strcmp(ww, wl) != 0 || !wns ||
                strcmp(wns, ns) != 0 || !ip || !tf__rc_pod_ready(wp) ||
                !tf_allocsig_verify(r->sig, wp))
                continue;
            const char *wn = tf_json_str(wp, "metadata", "name", NULL);
            int load = 0;
            for (size_t i = 0; i < json_object_array_length(conns); i++) {
                const char *x =
                    tf_json_str(json_object_array_get_idx(conns, i), "status", "workerName", NULL);
                load += x && strcmp(x, wn) == 0;
            }
            if (load < best_load) {
                best_load = load;
                best = wn;
                best_ip = ip;
            }
        }
        if (best) {
            char url[128];
            snprintf(url, sizeof(url), "tcp://%s:%d", best_ip, WORKER_PORT);
            json_object *st = json_object_new_object();
            json_object_object_add(st, "phase", json_object_new_string("Connected"));
            json_object_object_add(st, "workerName", json_object_new_string(best));
            json_object_object_add(st, "connectionURL", json_object_new_string(url));
            tf__rc_put_status(r, &tf_k8s_tfconnections, cn, st);
            tf__rc_event(r, pod, "Normal", "WorkerAssigned", "remote GPU worker %s at %s", best,
                         url);
            /* Count it for the next client in this pass. */
            json_object *fake = json_object_new_object(), *fst = json_object_new_object();
            json_object_object_add(fst, "workerName", json_object_new_string(best));
            json_object_object_add(fake, "status", fst);
            json_object_array_add(conns, fake);
        }
        json_object_put(cn);
    }
    json_object_put(conns);
}

int tf_reconcile_connection_url(struct tf_informer *connections, const char *ns, const char *name,
                                char *url, size_t len)
{
    json_object *cn = tf_informer_get(connections, ns, name);
    if (!cn)
        return TF_ENOENT;
    const char *u = tf_json_str(cn, "status", "connectionURL", NULL);
    int rc = u ? 0 : TF_EBUSY;
    if (u)
        tf_strlcpy(url, u, len);
    json_object_put(cn);
    return rc;
}

/* ---- quotas ------------------------------------------------------------------------------- */

/* status.availablePercent KEY: whole percent of TOTAL not USED (none without a total). */
static void avail_pct(json_object *avail, const char *key, int64_t used, int64_t total)
{
    char buf[32];
    if (total <= 0)
        return;
    snprintf(buf, sizeof(buf), "%lld",
             (long long)(used >= total ? 0 : (total - used) * 100 / total));
    json_object_object_add(avail, key, json_object_new_string(buf));
}

void tf__rc_quotas(struct tf_reconciler *r, json_object *pods)
{
    json_object *qs = tf_informer_snapshot(r->src.quotas);
    for (size_t i = 0; i < json_object_array_length(qs); i++) {
        json_object *q = json_object_array_get_idx(qs, i);
        const char *ns = tf_json_str(q, "metadata", "namespace", NULL);
        int64_t rt = 0, rv = 0, lt = 0, lv = 0;
        int workers = 0;
        for (size_t p = 0; p < json_object_array_length(pods); p++) {
            json_object *pod = json_object_array_get_idx(pods, p);
            const char *comp = tf__rc_lbl(pod, TF_LABEL_COMPONENT);
            const char *pns = tf_json_str(pod, "metadata", "namespace", NULL);
            if (!tf__rc_pod_active(pod) || !comp || !pns || strcmp(pns, ns) != 0)
                continue;
            /* Remote clients hold no GPU themselves: their workers are counted. */
            const char *local = tf__rc_ann(pod, TF_ANN_IS_LOCAL_GPU);
            if (strcmp(comp, "client") == 0 && local && strcmp(local, "false") == 0)
                continue;
            if (strcmp(comp, "client") != 0 && strcmp(comp, "worker") != 0)
                continue;
            long long n = 1;
            const char *gc = tf__rc_ann(pod, TF_ANN_GPU_COUNT);
            if (gc)
                n = atoll(gc) > 0 ? atoll(gc) : 1;
            rt += tf__rc_q_milli(tf__rc_ann(pod, TF_ANN_TFLOPS_REQUEST)) * n;
            rv += tf__rc_q_bytes(tf__rc_ann(pod, TF_ANN_VRAM_REQUEST)) * n;
            lt += tf__rc_q_milli(tf__rc_ann(pod, TF_ANN_TFLOPS_LIMIT)) * n;
            lv += tf__rc_q_bytes(tf__rc_ann(pod, TF_ANN_VRAM_LIMIT)) * n;
            workers++;
        }
        json_object *used = json_object_new_object();
        json_object_object_add(used, "requests", tf__rc_q_obj(rt, rv));
        json_object_object_add(used, "limits", tf__rc_q_obj(lt, lv));
        json_object_object_add(used, "workers", json_object_new_int(workers));
        int64_t tt = tf__rc_q_milli(tf_json_str(q, "spec", "total", "requests", "tflops", NULL));
        int64_t tv = tf__rc_q_bytes(tf_json_str(q, "spec", "total", "requests", "vram", NULL));
        json_object *maxw = tf_json_path(q, "spec", "total", "maxWorkers", NULL);
        json_object *avail = json_object_new_object();
        avail_pct(avail, "requests.tflops", rt, tt);
        avail_pct(avail, "requests.vram", rv, tv);
        avail_pct(avail, "limits.tflops", lt,
                  tf__rc_q_milli(tf_json_str(q, "spec", "total", "limits", "tflops", NULL)));
        avail_pct(avail, "limits.vram", lv,
                  tf__rc_q_bytes(tf_json_str(q, "spec", "total", "limits", "vram", NULL)));
        avail_pct(avail, "workers", workers, maxw ? json_object_get_int64(maxw) : 0);
        if ((tt && rt > tt) || (tv && rv > tv) || (maxw && workers > json_object_get_int(maxw))) {
            const char *prev = tf_json_str(q, "status", "used", "requests", "tflops", NULL);
            char now[48];
            tf_quantity_format_milli(rt, now, sizeof(now));
            if (!prev || strcmp(prev, now) != 0)
                tf__rc_event(r, q, "Warning", "QuotaExceeded",
                             "namespace %s uses %s TFLOPS requests, %d workers: over the quota", ns,
                             now, workers);
        }
        json_object *st = json_object_new_object();
        json_object_object_add(st, "used", used);
        json_object_object_add(st, "availablePercent", avail);
        tf__rc_put_status(r, &tf_k8s_gpuresourcequotas, q, st);
    }
    json_object_put(qs);
}
