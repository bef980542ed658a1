/* SPDX-License-Identifier: Apache-2.0
 *
 * The extender's verbs: /filter (with QoS preemption), /prioritize and /bind (see extender.h).
 */
#include "controller/extender_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/extender_codec.h"
#include "core/preempt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- handlers ----------------------------------------------------------------------------- */

/* QoS preemption (seed 000): a high or critical pod that fits none of the scheduler's candidate
 * nodes evicts the fewest low/medium pods that make room on one of them (core/preempt.h), via
 * the Eviction API, so PodDisruptionBudgets are honoured. kube-scheduler's own preemption cannot
 * do it: GPUs are the extender's resource (ignoredByScheduler), so its dry run never finds a
 * victim. The victims' reservations are released as their deletion reaches the pod cache; a
 * later filter call then finds the room. A pod's started preemption is not planned again for
 * PREEMPT_HOLD_S (evictions take effect asynchronously), and its message is repeated instead.
 * Returns the index in NODES (N of them, verdicts V) of the node being freed, or -1; MSG says
 * what is happening. Call without x->lock. */
static int preempt(struct tf_extender *x, struct req_buf *b, json_object *pod,
                   const char *const *nodes, const struct tf_node_verdict *v, size_t n, char *msg,
                   size_t msglen)
{
    if (b->pr.qos != TF_PODREQ_HIGH && b->pr.qos != TF_PODREQ_CRITICAL)
        return -1;
    char key[400], node[256] = "";
    snprintf(key, sizeof(key), "%s/%s", b->pr.ns, b->pr.name);
    time_t now = time(NULL);
    pthread_mutex_lock(&x->inflight_lock);
    json_object *held = NULL;
    if (json_object_object_get_ex(x->preempting, key, &held) &&
        now - json_object_get_int64(tf_json_path(held, "at", NULL)) < PREEMPT_HOLD_S) {
        tf_strlcpy(node, tf_json_str(held, "node", NULL), sizeof(node));
        tf_strlcpy(msg, tf_json_str(held, "msg", NULL), msglen);
    } else {
        held = NULL;
        /* Forget every preemption past its hold (pods scheduled or gone since). */
        json_object_object_foreach(x->preempting, k, e)
        {
            if (now - json_object_get_int64(tf_json_path(e, "at", NULL)) >= PREEMPT_HOLD_S)
                json_object_object_del(x->preempting, k);
        }
    }
    pthread_mutex_unlock(&x->inflight_lock);
    if (held) {
        for (size_t i = 0; i < n; i++)
            if (strcmp(nodes[i], node) == 0)
                return (int)i;
        return -1;
    }
    /* Plan under the write lock; keep the victims' keys, evict without it. */
    struct tf_preempt_plan *plan = malloc(sizeof(*plan));
    char(*victims)[TF_KEY_MAX] = calloc(TF_PREEMPT_MAX_VICTIMS, TF_KEY_MAX);
    uint32_t *cand = calloc(n + 1, sizeof(*cand));
    char err[512];
    int idx = -1;
    uint32_t nv = 0;
    if (!plan || !victims || !cand || !tf__ext_write_state(x))
        goto out;
    size_t nc = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].node != TF_NONE)
            cand[nc++] = v[i].node;
    int rc = tf_preempt_plan_on(x->alloc, &b->req, cand, nc, plan, err, sizeof(err));
    if (rc == 0 && plan->nvictims > 0)
        for (size_t i = 0; i < n; i++)
            if (v[i].node == plan->placement.node)
                idx = (int)i;
    if (idx >= 0) {
        nv = plan->nvictims;
        for (uint32_t i = 0; i < nv; i++)
            tf_strlcpy(victims[i],
                       tf_alloc_record_key(tf_alloc_record_at(x->alloc, plan->victims[i])),
                       TF_KEY_MAX);
    }
    pthread_rwlock_unlock(&x->lock);
    if (idx < 0) {
        if (rc && rc != TF_EPERM)
            tf_log(TF_LOG_DEBUG, "extender", "no preemption for %s: %s", key, err);
        goto out;
    }
    char list[1024] = "";
    uint32_t evicted = 0, deferred = 0;
    for (uint32_t i = 0; i < nv; i++) {
        char *slash = strchr(victims[i], '/');
        if (!slash)
            continue;
        *slash = '\0';
        const char *vns = victims[i], *vname = slash + 1;
        char verr[256];
        int erc = tf_k8s_evict(x->c, vns, vname, verr, sizeof(verr));
        if (erc == 0 || erc == TF_ENOENT) {
            evicted++;
            json_object *vp = x->src.pods ? tf_informer_get(x->src.pods, vns, vname) : NULL;
            if (vp) {
                char vmsg[700];
                snprintf(vmsg, sizeof(vmsg),
                         "evicted to make room on %s for %s pod %s (QoS preemption)", nodes[idx],
                         b->pr.qos == TF_PODREQ_CRITICAL ? "critical" : "high", key);
                tf_k8s_record(x->events, vp, "Warning", "Preempted", vmsg);
                json_object_put(vp);
            }
        } else {
            deferred++;
            tf_log(TF_LOG_WARN, "extender", "preemption for %s: eviction of %s/%s: %s", key, vns,
                   vname, verr);
        }
        size_t l = strlen(list);
        snprintf(list + l, sizeof(list) - l, "%s%s/%s", i ? ", " : "", vns, vname);
    }
    snprintf(msg, msglen,
             "preempting %u lower-QoS pod%s on this node for this pod (%s)%s; it fits once they "
             "are gone",
             nv, nv == 1 ? "" : "s", list,
             deferred ? "; an eviction was refused for now (PodDisruptionBudget or API error; "
                        "planned again after 30 s)"
                      : "");
    tf_log(TF_LOG_INFO, "extender", "QoS preemption for %s on %s: %u evicted, %u deferred (%s)",
           key, nodes[idx], evicted, deferred, list);
    tf_k8s_record(x->events, pod, "Normal", "Preempting", msg);
    json_object *e = json_object_new_object();
    json_object_object_add(e, "at", json_object_new_int64(now));
    json_object_object_add(e, "node", json_object_new_string(nodes[idx]));
    json_object_object_add(e, "msg", json_object_new_string(msg));
    pthread_mutex_lock(&x->inflight_lock);
    json_object_object_add(x->preempting, key, e);
    pthread_mutex_unlock(&x->inflight_lock);
out:
    free(plan);
    free(victims);
    free(cand);
    return idx;
}

/* The candidates' node ids when the decoder hashed their names (NULL: the index resolves the
 * names itself), and A->names_distinct set when every name is a node of its own. Caller holds
 * the read lock; frees the array. */
static uint32_t *resolve(const struct tf_extender *x, struct tf_ext_args *a)
{
    if (!a->name_hashes)
        return NULL;
    const struct tf_cluster *c = x->cluster;
    const struct tf_strmap *m = &c->node_by_name;
    uint32_t *ids = malloc((a->n_nodes + 1) * sizeof(*ids));
    uint64_t *seen = calloc(c->nnodes / 64 + 1, sizeof(*seen));
    bool distinct = seen != NULL;
    for (size_t i = 0; ids && i < a->n_nodes; i++) {
        /* The slots a few names ahead, and the keys of those nearer, are fetched meanwhile. */
        if (i + 16 < a->n_nodes)
            tf_strmap_prefetch(m, a->name_hashes[i + 16]);
        if (i + 8 < a->n_nodes)
            tf_strmap_prefetch_key(m, a->name_hashes[i + 8]);
        uint32_t id =
            tf_cluster_node_find_hashed(c, a->node_names[i], a->name_lens[i], a->name_hashes[i]);
        ids[i] = id;
        if (id == TF_NONE || !seen || (seen[id / 64] & (UINT64_C(1) << (id % 64))))
            distinct = false;
        else
            seen[id / 64] |= UINT64_C(1) << (id % 64);
    }
    free(seen);
    a->names_distinct = ids && distinct;
    return ids;
}

/* Decodes the ExtenderArgs BODY into ARGS (EX: what it is expected to hold, may be NULL); false
 * with *BAD (the 400 answer) set if invalid. */
static bool decode(const char *body, size_t len, const struct tf_ext_expect *ex,
                   struct tf_ext_args *args, char **bad, int *status)
{
    char err[1024];
    if (!tf_ext_decode_args_expect(body, len, ex, args, err, sizeof(err)))
        return true;
    *status = 400;
    *bad = tf_ext_encode_binding_result(err);
    return false;
}

/* The candidates' node ids for a filter (see resolve): C's when ARGS's names were C's bytes
 * and C was resolved under this index, else looked up. C is brought up to date, or a new one
 * made when ARGS's names were not C's (*C replaced). Caller holds the read lock. */
static uint32_t *filter_ids(const struct tf_extender *x, struct tf_ext_args *args,
                            struct tf__ext_cands **c)
{
    uint64_t serial = tf_alloc_index_serial(x->index);
    struct tf__ext_cands *m = *c;
    if (args->names_expected && m->serial == serial) {
        uint32_t *ids = malloc((m->n + 1) * sizeof(*ids));
        if (ids) {
            memcpy(ids, m->ids, m->n * sizeof(*ids));
            args->names_distinct = m->distinct;
        }
        return ids;
    }
    uint32_t *ids = resolve(x, args);
    if (!ids)
        return NULL;
    if (args->names_expected) { /* the same names, another cluster */
        memcpy(m->ids, ids, m->n * sizeof(*ids));
        m->serial = serial;
        m->distinct = args->names_distinct;
    } else {
        struct tf__ext_cands *fresh = tf__ext_cands_new(args, ids, serial);
        if (fresh) {
            tf__ext_cands_free(m);
            *c = fresh;
        }
    }
    return ids;
}

char *tf__ext_filter(struct tf_extender *x, const char *body, size_t len, int *status)
{
    struct tf_ext_args args;
    char err[1024], *bad;
    /* The previous filter's candidates: the same NodeNames bytes are not decoded again. */
    struct tf__ext_cands *cands = tf__ext_cands_take(x);
    struct tf_ext_expect ex = {0};
    if (cands)
        ex = (struct tf_ext_expect){NULL, cands->text, 0, cands->text_len};
    if (!decode(body, len, cands ? &ex : NULL, &args, &bad, status)) {
        tf__ext_cands_put(x, cands);
        return bad;
    }
    if (args.names_expected && !tf__ext_cands_apply(cands, &args)) {
        tf__ext_cands_put(x, cands);
        tf_ext_args_free(&args);
        *status = 500;
        return tf_ext_encode_binding_result("out of memory");
    }
    if (args.names_expected)
        atomic_fetch_add(&x->cands_hits, 1);
    struct req_buf b;
    /* One scratch buffer: verdicts, reason pointers, reason text (160 bytes a node). */
    size_t nv = args.n_nodes + 1, rlen = args.n_nodes * 160 + 1024, got = 0;
    size_t need = nv * sizeof(struct tf_node_verdict) + nv * sizeof(char *) + rlen;
    char *scratch = tf__ext_scratch_get(x, need, &got), *out = NULL;
    struct tf_node_verdict *v = (struct tf_node_verdict *)scratch;
    const char **reasons = scratch ? (const char **)(scratch + nv * sizeof(*v)) : NULL;
    char *rbuf = scratch ? scratch + nv * sizeof(*v) + nv * sizeof(char *) : NULL;
    uint32_t *ids = NULL;
    struct tf__ext_memo *memo = NULL;
    if (!scratch)
        goto out;
    memset(v, 0, nv * sizeof(*v));
    memset(reasons, 0, nv * sizeof(char *));
    int rc = tf_podreq_from_pod(args.pod, &b.pr, err, sizeof(err));
    if (rc) {
        for (size_t i = 0; i < args.n_nodes; i++)
            reasons[i] = err;
        out = tf_ext_encode_filter(&args, reasons, NULL, NULL);
        goto out;
    }
    if (!b.pr.managed || b.pr.remote_client) {
        out = tf_ext_encode_filter(&args, reasons, NULL, NULL); /* all pass */
        goto out;
    }
    tf__ext_to_alloc(&b);
    if (!tf__ext_read_state(x)) {
        out = tf_ext_encode_filter(&args, reasons, NULL, "extender state unavailable");
        goto out;
    }
    struct tf_reasons rb;
    tf_reasons_init(&rb, rbuf, rlen);
    ids = filter_ids(x, &args, &cands);
    pthread_mutex_lock(&x->index_lock);
    uint64_t serial = tf_alloc_index_serial(x->index);
    rc = tf_alloc_index_filter(x->index, &b.req, args.node_names, ids, args.n_nodes, v, &rb, err,
                               sizeof(err));
    pthread_mutex_unlock(&x->index_lock);
    pthread_rwlock_unlock(&x->lock);
    bool any_fit = false;
    for (size_t i = 0; i < args.n_nodes; i++)
        any_fit = any_fit || (v[i].node != TF_NONE && v[i].fit);
    char pmsg[1400];
    int freeing = rc == 0 && !any_fit ? preempt(x, &b, args.pod, args.node_names, v, args.n_nodes,
                                                pmsg, sizeof(pmsg))
                                      : -1;
    for (size_t i = 0; i < args.n_nodes; i++) {
        if (rc)
            reasons[i] = err;
        else if (v[i].node == TF_NONE)
            reasons[i] = "node has no TensorFusion GPUs";
        else if ((int)i == freeing)
            reasons[i] = pmsg;
        else if (!v[i].fit)
            reasons[i] = v[i].reason ? v[i].reason : "no GPU fits the request";
    }
    size_t span[2];
    out = tf_ext_encode_filter_span(&args, reasons, NULL, NULL, span);
    if (out && rc == 0 && (memo = tf__ext_memo_new(&args, &b.pr, ids, reasons, serial, out, span)))
        ids = NULL; /* the memo's now */
out:
    if (!out) {
        *status = 500;
        out = tf_ext_encode_binding_result("out of memory");
    }
    tf__ext_memo_put(x, memo, true);
    tf__ext_cands_put(x, cands);
    free(ids);
    tf__ext_scratch_put(x, scratch, got);
    tf_ext_args_free(&args);
    return out;
}

char *tf__ext_prioritize(struct tf_extender *x, const char *body, size_t len, int *status)
{
    struct tf_ext_args args;
    char err[1024], *bad;
    /* The filter's answer for this pod, when this is the prioritize that follows it. */
    struct tf__ext_memo *m = tf__ext_memo_take(x);
    struct tf_ext_expect ex = {0};
    if (m)
        ex = (struct tf_ext_expect){m->pod, m->names, m->pod_len, m->names_len};
    if (!decode(body, len, m ? &ex : NULL, &args, &bad, status)) {
        tf__ext_memo_put(x, m, false);
        return bad;
    }
    if (args.names_expected) { /* the memo's nodes stand for the body's */
        args.node_names = m->node_names;
        args.name_lens = m->lens;
        args.name_hashes = m->hashes;
        args.n_nodes = m->n;
        args.names_plain = m->names_plain;
    }
    int *scores = calloc(args.n_nodes + 1, sizeof(int));
    char *out = NULL;
    uint32_t *ids = NULL;
    struct req_buf b;
    if (!scores)
        goto out;
    if (args.pod_expected)
        b.pr = m->pr;
    if ((args.pod_expected || tf_podreq_from_pod(args.pod, &b.pr, err, sizeof(err)) == 0) &&
        b.pr.managed && !b.pr.remote_client && tf__ext_read_state(x)) {
        tf__ext_to_alloc(&b);
        /* The index (and its cluster) is replaced only under the write lock. */
        bool hit = args.names_expected && m->serial == tf_alloc_index_serial(x->index);
        const uint32_t *rid = hit ? m->ids : (ids = resolve(x, &args));
        if (hit && args.pod_expected)
            atomic_fetch_add(&x->memo_hits, 1);
        pthread_mutex_lock(&x->index_lock);
        int rc = tf_alloc_index_score(x->index, &b.req, args.node_names, rid, args.n_nodes, scores,
                                      err, sizeof(err));
        pthread_mutex_unlock(&x->index_lock);
        pthread_rwlock_unlock(&x->lock);
        for (size_t i = 0; i < args.n_nodes; i++)
            scores[i] = rc ? 0 : (scores[i] + 5) / 10; /* 0..100 -> 0..10 */
    }
    out = tf_ext_encode_priorities(&args, scores);
out:
    free(ids);
    free(scores);
    if (args.names_expected) { /* borrowed from the memo */
        args.node_names = NULL;
        args.name_lens = NULL;
        args.name_hashes = NULL;
    }
    tf_ext_args_free(&args);
    tf__ext_memo_put(x, m, false); /* kept for a repeated prioritize, unless a filter came */
    if (!out) {
        *status = 500;
        out = strdup("[]");
    }
    return out;
}

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

/* The partition template pod NS/NAME holds on its GPUs (partitioned isolation: one partition
 * of the same template on each), or NULL. */
static const char *held_template(const struct tf_alloc *a, const char *ns, const char *name)
{
    uint32_t id = tf_alloc_find(a, ns, name);
    const struct tf_alloc_record *r = id == TF_NONE ? NULL : tf_alloc_record_at(a, id);
    if (!r || !r->ngpus)
        return NULL;
    const struct tf_alloc_slot *s = tf_alloc_record_slot(r, 0);
    const struct tf_cluster *c = tf_alloc_cluster(a);
    const struct tf_partition_profile *pp =
        s->part < 0 ? NULL : tf_cluster_profile(c, &c->gpus[s->gpu]);
    return pp && s->part < pp->ntemplates ? pp->templates[s->part].id : NULL;
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

/* ---- gang scheduling: a thin hook over extender_gang.h -------------------------------------- */

/* The in-flight bind of MEMBER ("ns/name"), a new reference, or NULL. */
static json_object *gang_inflight(void *arg, const char *member)
{
    struct tf_extender *x = arg;
    json_object *e = NULL;
    pthread_mutex_lock(&x->inflight_lock);
    if (json_object_object_get_ex(x->inflight, member, &e))
        json_object_get(e);
    pthread_mutex_unlock(&x->inflight_lock);
    return e;
}

static void gang_release(void *arg, json_object *pod)
{
    tf__ext_release_pod(arg, pod);
}

struct tf_ext_gangs *tf__ext_gangs_new(struct tf_extender *x)
{
    struct tf_ext_gang_ops gops = {x, x->c, x->events, gang_inflight, gang_release};
    return tf_ext_gangs_new(&gops);
}

void tf_extender_gang_expire(struct tf_extender *x)
{
    tf_ext_gangs_expire(x->gangs);
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
    json_object *anns = NULL, *pending = NULL;
    tf_extender_gang_expire(x);
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
            /* The template held (the hypervisor creates that partition; upstream's key), or
             * the pod's own key as it is: the signature covers whatever the pod carries. */
            const char *tpl = held_template(x->alloc, b.pr.ns, b.pr.name);
            if (!tpl)
                tpl = tf_json_str(pod, "metadata", "annotations", TF_ANN_PARTITION, NULL);
            if (tpl)
                json_object_object_add(anns, TF_ANN_PARTITION, json_object_new_string(tpl));
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
            json_object_object_add(e, "at", json_object_new_double(tf__ext_now()));
            json_object_object_add(e, "anns", json_object_get(anns));
            pthread_mutex_lock(&x->inflight_lock);
            json_object_object_add(x->inflight, key, e);
            pending = json_object_get(e); /* marked done once the Binding is in */
            pthread_mutex_unlock(&x->inflight_lock);
        }
        pthread_rwlock_unlock(&x->lock);
        if (rc) {
            snprintf(msg, sizeof(msg), "cannot reserve GPUs on %s: %s", ba.node, err);
            tf_k8s_record(x->events, pod, "Warning", "GPUAllocationFailed", msg);
            out = tf_ext_encode_binding_result(msg);
            goto out;
        }
        if (b.pr.gang && (out = tf_ext_gangs_bind(x->gangs, &b.pr, pod, ba.node)))
            goto out; /* waiting for the rest of the gang, or refused */
    }
    /* The allocation's annotations travel in the Binding: one write sets them with the node
     * (a failed Binding leaves nothing to take back). */
    rc = tf_k8s_bind(x->c, ba.pod_namespace, ba.pod_name, ba.pod_uid[0] ? ba.pod_uid : NULL,
                     ba.node, anns, err, sizeof(err));
    if (rc) {
        snprintf(msg, sizeof(msg), "binding to %s failed: %s", ba.node, err);
        if (reserve)
            goto rollback;
        out = tf_ext_encode_binding_result(msg);
        goto out;
    }
    if (reserve) {
        /* Only now may the check of unconfirmed binds ask the API about it (before, the pod
         * has no gpu-ids or no node yet, and that is no reason to give its GPUs back). */
        char key[400];
        json_object *cur = NULL;
        snprintf(key, sizeof(key), "%s/%s", b.pr.ns, b.pr.name);
        pthread_mutex_lock(&x->inflight_lock);
        if (json_object_object_get_ex(x->inflight, key, &cur) && cur == pending) {
            json_object_object_add(cur, "done", json_object_new_boolean(true));
            json_object_object_add(cur, "at", json_object_new_double(tf__ext_now()));
        }
        pthread_mutex_unlock(&x->inflight_lock);
        snprintf(msg, sizeof(msg), "allocated GPUs %.900s on node %.200s", ids, ba.node);
        tf_k8s_record(x->events, pod, "Normal", "GPUAllocated", msg);
        tf_log(TF_LOG_INFO, "extender", "bound pod=%s/%s node=%s gpus=%s", b.pr.ns, b.pr.name,
               ba.node, ids);
    }
    out = tf_ext_encode_binding_result(NULL);
    goto out;
rollback:
    tf__ext_release_pod(x, pod);
    tf_k8s_record(x->events, pod, "Warning", "GPUAllocationFailed", msg);
    out = tf_ext_encode_binding_result(msg);
out:
    json_object_put(pending);
    json_object_put(anns);
    json_object_put(pod);
    tf_ext_binding_free(&ba);
    if (!out) {
        *status = 500;
        out = strdup("{\"Error\":\"out of memory\"}");
    }
    return out;
}
