/* SPDX-License-Identifier: Apache-2.0
 *
 * The scheduler extender's bind verb (see extender.h): reserve on the allocator, record the
 * placement on the pod, create the Binding, roll everything back on failure.
 */
#include "controller/extender_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/extender_codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends the UUID of RES's GPU G to LIST (a comma list of LISTLEN bytes). */
static void add_uuid(char *list, size_t listlen, const struct tf_alloc_result *res, size_t g,
                     const struct tf_cluster *c)
{
    size_t n = strlen(list);
    snprintf(list + n, listlen - n, "%s%.128s", n ? "," : "", c->gpus[res->gpus[g]].uuid);
}

/* The annotations recording placement RES of P: tensor-fusion.ai/gpu-ids, container-gpus
 * and, when P splits its GPUs per container, each container's gpu-ids-<container> (what the
 * webhook points that container's NVIDIA_VISIBLE_DEVICES at). IDS receives gpu-ids. */
static json_object *allocation_annotations(const struct tf_podreq *p,
                                           const struct tf_alloc_result *res,
                                           const struct tf_cluster *c, char *ids, size_t idslen)
{
    json_object *anns = json_object_new_object(), *m = json_object_new_object();
    ids[0] = '\0';
    for (size_t g = 0; g < res->ngpus; g++)
        add_uuid(ids, idslen, res, g, c);
    json_object_object_add(anns, ANN_GPU_IDS, json_object_new_string(ids));
    size_t next = 0;
    for (int i = 0; i < p->ngpu_containers; i++) {
        json_object *arr = json_object_new_array();
        char list[TF_NODE_MAX_GPUS * 130] = "";
        int want = 0;
        size_t from = 0;
        if (p->ncontainers) { /* disjoint split */
            for (int k = 0; k < p->ncontainers; k++)
                if (strcmp(p->containers[k].name, p->gpu_containers[i]) == 0)
                    want = p->containers[k].gpus;
            from = next;
            next += (size_t)want;
        } else {
            want = (int)res->ngpus;
        }
        for (size_t g = from; g < from + (size_t)want && g < res->ngpus; g++) {
            json_object_array_add(arr, json_object_new_string(c->gpus[res->gpus[g]].uuid));
            add_uuid(list, sizeof(list), res, g, c);
        }
        json_object_object_add(m, p->gpu_containers[i], arr);
        if (p->split)
            json_object_object_add(anns, p->gpu_ids_key[i], json_object_new_string(list));
    }
    json_object_object_add(anns, ANN_CONTAINER_GPUS,
                           json_object_new_string(json_object_to_json_string_ext(
                               m, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)));
    json_object_put(m);
    return anns;
}

/* Adds the allocation signature (allocsig.h) of POD on NODE to ANNS. 0 or TF_E* with ERR. */
static int sign(const struct tf_extender *x, json_object *pod, const char *node, json_object *anns,
                char *err, size_t errlen)
{
    if (!x->sig)
        return 0;
    char sig[TF_ALLOCSIG_LEN];
    int rc = tf_allocsig_sign(x->sig, tf_json_str(pod, "metadata", "namespace", NULL),
                              tf_json_str(pod, "metadata", "name", NULL),
                              tf_json_str(pod, "metadata", "uid", NULL), node, anns, sig);
    if (rc) {
        tf_errf(err, errlen, "cannot sign the allocation (pod without metadata.uid?): %s",
                tf_strerror(rc));
        return rc;
    }
    json_object_object_add(anns, TF_ANN_ALLOCATION_SIGNATURE, json_object_new_string(sig));
    return 0;
}

static json_object *get_pod(struct tf_extender *x, const char *ns, const char *name)
{
    json_object *pod = x->src.pods ? tf_informer_get(x->src.pods, ns, name) : NULL;
    char err[256];
    if (!pod && tf_k8s_get(x->c, &tf_k8s_pods, ns, name, &pod, err, sizeof(err)))
        pod = NULL;
    return pod;
}

/* Merges ANNS into the pod's annotations or, with CLEAR, removes every key of ANNS. */
static void annotate(struct tf_extender *x, const char *ns, const char *name, json_object *anns,
                     bool clear, char *err, size_t errlen, int *rc)
{
    json_object *p = json_object_new_object(), *meta = json_object_new_object(),
                *set = json_object_new_object();
    json_object_object_foreach(anns, k, v)
    {
        json_object_object_add(set, k, clear ? NULL : json_object_get(v));
    }
    json_object_object_add(meta, "annotations", set);
    json_object_object_add(p, "metadata", meta);
    *rc = tf_k8s_merge_patch(x->c, &tf_k8s_pods, ns, name, NULL, p, NULL, err, errlen);
    json_object_put(p);
}

char *tf__ext_bind(struct tf_extender *x, const char *body, size_t len, int *status)
{
    struct tf_ext_binding ba;
    char err[1024], msg[1200];
    if (tf_ext_decode_binding(body, len, &ba, err, sizeof(err))) {
        *status = 400;
        return tf_ext_encode_binding_result(err);
    }
    char *out = NULL;
    json_object *anns = NULL;
    json_object *pod = get_pod(x, ba.pod_namespace, ba.pod_name);
    struct req_buf b;
    int rc = 0;
    if (!pod) {
        snprintf(msg, sizeof(msg), "pod %s/%s not found", ba.pod_namespace, ba.pod_name);
        out = tf_ext_encode_binding_result(msg);
        goto out;
    }
    if ((rc = tf_podreq_from_pod(pod, &b.pr, err, sizeof(err)))) {
        out = tf_ext_encode_binding_result(err);
        goto out;
    }
    bool reserve = b.pr.managed && !b.pr.remote_client;
    char ids[TF_NODE_MAX_GPUS * 130] = "";
    struct tf_alloc_result res;
    if (reserve) {
        tf__ext_to_alloc(&b);
        if (!tf__ext_write_state(x)) {
            out = tf_ext_encode_binding_result("extender state unavailable");
            goto out;
        }
        rc = tf_alloc_reserve(x->alloc, &b.req, ba.node, &res, err, sizeof(err));
        if (rc == TF_EEXIST) {
            /* A retried bind after a timeout: release the old reservation and place again. */
            tf_alloc_release(x->alloc, b.pr.ns, b.pr.name);
            rc = tf_alloc_reserve(x->alloc, &b.req, ba.node, &res, err, sizeof(err));
        }
        if (rc == 0) {
            anns = allocation_annotations(&b.pr, &res, x->cluster, ids, sizeof(ids));
            if ((rc = sign(x, pod, ba.node, anns, err, sizeof(err))))
                tf_alloc_release(x->alloc, b.pr.ns, b.pr.name);
        }
        if (rc == 0) {
            char key[400];
            snprintf(key, sizeof(key), "%s/%s", b.pr.ns, b.pr.name);
            json_object *e = json_object_new_object();
            json_object_object_add(e, "node", json_object_new_string(ba.node));
            json_object_object_add(e, "ids", json_object_new_string(ids));
            json_object_object_add(e, "pod", json_object_get(pod));
            pthread_mutex_lock(&x->inflight_lock);
            json_object_object_add(x->inflight, key, e);
            pthread_mutex_unlock(&x->inflight_lock);
        }
        pthread_rwlock_unlock(&x->lock);
        if (rc) {
            snprintf(msg, sizeof(msg), "cannot reserve GPUs on %s: %s", ba.node, err);
            tf_k8s_event(x->c, pod, "Warning", "GPUAllocationFailed", msg, "tf-scheduler");
            out = tf_ext_encode_binding_result(msg);
            goto out;
        }
        annotate(x, b.pr.ns, b.pr.name, anns, false, err, sizeof(err), &rc);
        if (rc) {
            snprintf(msg, sizeof(msg), "cannot record GPU allocation on pod: %s", err);
            goto rollback;
        }
    }
    rc = tf_k8s_bind(x->c, ba.pod_namespace, ba.pod_name, ba.pod_uid[0] ? ba.pod_uid : NULL,
                     ba.node, err, sizeof(err));
    if (rc) {
        snprintf(msg, sizeof(msg), "binding to %s failed: %s", ba.node, err);
        if (reserve) {
            int urc;
            annotate(x, b.pr.ns, b.pr.name, anns, true, err, sizeof(err), &urc);
            goto rollback;
        }
        out = tf_ext_encode_binding_result(msg);
        goto out;
    }
    if (reserve) {
        snprintf(msg, sizeof(msg), "allocated GPUs %.900s on node %.200s", ids, ba.node);
        tf_k8s_event(x->c, pod, "Normal", "GPUAllocated", msg, "tf-scheduler");
        tf_log(TF_LOG_INFO, "extender", "bound pod=%s/%s node=%s gpus=%s", b.pr.ns, b.pr.name,
               ba.node, ids);
    }
    out = tf_ext_encode_binding_result(NULL);
    goto out;
rollback:
    tf__ext_release_pod(x, pod);
    tf_k8s_event(x->c, pod, "Warning", "GPUAllocationFailed", msg, "tf-scheduler");
    out = tf_ext_encode_binding_result(msg);
out:
    json_object_put(anns);
    json_object_put(pod);
    tf_ext_binding_free(&ba);
    if (!out) {
        *status = 500;
        out = strdup("{\"Error\":\"out of memory\"}");
    }
    return out;
}
