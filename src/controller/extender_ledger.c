/* SPDX-License-Identifier: Apache-2.0
 *
 * The extender's ledger (see extender_int.h): the pods that hold GPUs according to the API,
 * read once from their objects as the pod informer reports them, restored by every rebuild
 * of the state without reading JSON again.
 *
 * One allocation per pod: the header below, then "namespace/name", the node name and the
 * gpu-ids annotation, each NUL-terminated, the container split if any, and the partition
 * template (tensor-fusion.ai/partition, NUL-terminated) of a partitioned pod. The table's keys
 * point into them.
 */
#include "controller/extender_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/strmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lpod {
    struct tf_alloc_resources res;
    uint16_t ns_len, gpu_count;
    uint16_t node_off, ids_off; /* of the node name and the gpu-ids in TEXT */
    uint16_t tpl_off;           /* of the partition template in TEXT, 0 = none */
    uint8_t iso, qos, nctr;
    bool dedicated;
    char text[]; /* key, node, ids (each NUL-terminated), then NCTR uint16 GPU counts of the
                    container split, unaligned */
};

static const char *lp_node(const struct lpod *e)
{
    return e->text + e->node_off;
}

static const char *lp_ids(const struct lpod *e)
{
    return e->text + e->ids_off;
}

static uint16_t lp_ctr(const struct lpod *e, unsigned i)
{
    uint16_t v;
    memcpy(&v, e->text + e->ids_off + strlen(lp_ids(e)) + 1 + 2 * i, sizeof(v));
    return v;
}

struct tf__ledger {
    pthread_mutex_t lock;          /* guards T */
    struct tf__rectab t;           /* struct lpod, keyed by "namespace/name" */
    const struct tf_allocsig *sig; /* set before the informers start (borrowed), or NULL */
};

void tf__ledger_set_sig(struct tf__ledger *l, const struct tf_allocsig *sig)
{
    l->sig = sig;
}

void *tf__rectab_get(const struct tf__rectab *t, const char *key, size_t len)
{
    uint32_t i;
    return tf_strmap_get(&t->by_key, key, len, &i) ? NULL : t->v[i];
}

int tf__rectab_put(struct tf__rectab *t, const char *key, void *rec)
{
    uint32_t i;
    if (tf_strmap_get(&t->by_key, key, strlen(key), &i) == 0) { /* same key, new storage */
        void *old = t->v[i]; /* the map still points at its key: freed only once re-pointed */
        t->v[i] = rec;
        t->keys[i] = key;
        tf_strmap_set(&t->by_key, key, i);
        free(old);
        return 0;
    }
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 1024;
        void **nv = realloc(t->v, cap * sizeof(*nv));
        if (nv)
            t->v = nv;
        const char **nk = realloc(t->keys, cap * sizeof(*nk));
        if (nk)
            t->keys = nk;
        if (!nv || !nk)
            return TF_ENOMEM;
        t->cap = cap;
    }
    if (tf_strmap_put(&t->by_key, key, t->n))
        return TF_ENOMEM;
    t->v[t->n] = rec;
    t->keys[t->n++] = key;
    return 0;
}

bool tf__rectab_del(struct tf__rectab *t, const char *key, size_t len)
{
    uint32_t i;
    if (tf_strmap_get(&t->by_key, key, len, &i))
        return false;
    tf_strmap_del(&t->by_key, key, len);
    free(t->v[i]);
    if (i != --t->n) { /* the last one takes the hole */
        t->v[i] = t->v[t->n];
        t->keys[i] = t->keys[t->n];
        tf_strmap_set(&t->by_key, t->keys[i], i);
    }
    return true;
}

void tf__rectab_clear(struct tf__rectab *t)
{
    for (uint32_t i = 0; i < t->n; i++)
        free(t->v[i]);
    t->n = 0;
    tf_strmap_free(&t->by_key);
}

void tf__rectab_free(struct tf__rectab *t)
{
    tf__rectab_clear(t);
    free(t->v);
    free(t->keys);
    t->v = NULL;
    t->keys = NULL;
    t->cap = 0;
}

struct tf__ledger *tf__ledger_new(void)
{
    struct tf__ledger *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    pthread_mutex_init(&l->lock, NULL);
    tf_strmap_init(&l->t.by_key);
    return l;
}

void tf__ledger_destroy(struct tf__ledger *l)
{
    if (!l)
        return;
    tf__rectab_free(&l->t);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

/* Records P (a managed, local pod) as holding IDS on NODE under KEY. */
static void put_locked(struct tf__ledger *l, const char *key, struct req_buf *b, const char *node,
                       const char *ids)
{
    size_t kl = strlen(key), nl = strlen(node), il = strlen(ids);
    tf__ext_to_alloc(b);
    size_t nctr = b->req.ncontainers;
    const char *tpl = b->req.partition_template;
    size_t tl = tpl ? strlen(tpl) + 1 : 0;
    struct lpod *e = kl + nl + il + 2 * nctr < UINT16_MAX - 8
                         ? calloc(1, sizeof(*e) + kl + nl + il + 3 + 2 * nctr + tl)
                         : NULL;
    if (!e) {
        tf_log(TF_LOG_ERROR, "extender", "ledger: out of memory, pod=%s not recorded", key);
        return;
    }
    memcpy(e->text, key, kl + 1);
    e->node_off = (uint16_t)(kl + 1);
    memcpy(e->text + e->node_off, node, nl + 1);
    e->ids_off = (uint16_t)(kl + 1 + nl + 1);
    memcpy(e->text + e->ids_off, ids, il + 1);
    e->res = b->req.res;
    e->ns_len = (uint16_t)strlen(b->pr.ns);
    e->gpu_count = b->req.gpu_count;
    e->iso = (uint8_t)b->req.isolation;
    e->qos = (uint8_t)b->req.qos;
    e->dedicated = b->req.dedicated;
    e->nctr = (uint8_t)nctr;
    for (unsigned i = 0; i < nctr; i++)
        memcpy(e->text + e->ids_off + il + 1 + 2 * i, &b->req.containers[i].gpus, 2);
    if (tpl) {
        e->tpl_off = (uint16_t)(e->ids_off + il + 1 + 2 * nctr);
        memcpy(e->text + e->tpl_off, tpl, tl);
    }
    if (tf__rectab_put(&l->t, e->text, e)) {
        free(e);
        tf__rectab_del(&l->t, key, kl); /* no stale allocation either */
        tf_log(TF_LOG_ERROR, "extender", "ledger: out of memory, pod=%s not recorded", key);
    }
}

void tf__ledger_pod(struct tf__ledger *l, json_object *old, json_object *pod)
{
    const char *ns = tf_json_str(pod, "metadata", "namespace", NULL);
    const char *name = tf_json_str(pod, "metadata", "name", NULL);
    if (!ns || !name)
        return;
    char key[TF_KEY_MAX];
    int kl = snprintf(key, sizeof(key), "%s/%s", ns, name);
    if (kl < 0 || (size_t)kl >= sizeof(key))
        return;
    const char *ids = tf_json_str(pod, "metadata", "annotations", ANN_GPU_IDS, NULL);
    const char *node = tf_json_str(pod, "spec", "nodeName", NULL);
    pthread_mutex_lock(&l->lock);
    const struct lpod *held = tf__rectab_get(&l->t, key, (size_t)kl);
    bool forged = ids && node && !tf_allocsig_verify(l->sig, pod);
    if (forged)
        tf_log(TF_LOG_WARN, "extender",
               "pod=%s claims GPUs %.200s on node %s without this controller's allocation "
               "signature: not booked",
               key, ids, node);
    if (!ids || !node || forged || !tf__ext_pod_live(pod)) {
        if (held)
            tf__rectab_del(&l->t, key, (size_t)kl);
        pthread_mutex_unlock(&l->lock);
        return;
    }
    /* Status updates leave what the ledger keeps as it was: no second reading. */
    bool same = held && old && !strcmp(lp_node(held), node) && !strcmp(lp_ids(held), ids) &&
                json_object_equal(tf_json_path(old, "metadata", NULL),
                                  tf_json_path(pod, "metadata", NULL)) &&
                json_object_equal(tf_json_path(old, "spec", NULL), tf_json_path(pod, "spec", NULL));
    pthread_mutex_unlock(&l->lock);
    if (same)
        return;
    struct req_buf *b = malloc(sizeof(*b)); /* ~7 KiB */
    char err[512];
    bool keep = b && tf_podreq_from_pod(pod, &b->pr, err, sizeof(err)) == 0 && b->pr.managed &&
                !b->pr.remote_client;
    pthread_mutex_lock(&l->lock);
    if (keep)
        put_locked(l, key, b, node, ids);
    else
        tf__rectab_del(&l->t, key, (size_t)kl);
    pthread_mutex_unlock(&l->lock);
    free(b);
}

void tf__ledger_del(struct tf__ledger *l, const char *ns, const char *name)
{
    char key[TF_KEY_MAX];
    int kl = snprintf(key, sizeof(key), "%s/%s", ns, name);
    if (kl < 0 || (size_t)kl >= sizeof(key))
        return;
    pthread_mutex_lock(&l->lock);
    tf__rectab_del(&l->t, key, (size_t)kl);
    pthread_mutex_unlock(&l->lock);
}

void tf__ledger_load(struct tf__ledger *l, json_object *pods)
{
    pthread_mutex_lock(&l->lock);
    tf__rectab_clear(&l->t);
    pthread_mutex_unlock(&l->lock);
    for (size_t i = 0; pods && i < json_object_array_length(pods); i++)
        tf__ledger_pod(l, NULL, json_object_array_get_idx(pods, i));
}

uint32_t tf__ledger_count(struct tf__ledger *l)
{
    pthread_mutex_lock(&l->lock);
    uint32_t n = l->t.n;
    pthread_mutex_unlock(&l->lock);
    return n;
}

/* Splits "a,b" into UUIDS (pointers into BUF). */
static size_t split_ids(const char *ids, char *buf, size_t len, const char **uuids, size_t cap)
{
    tf_strlcpy(buf, ids, len);
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < cap;
         t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        if (*t)
            uuids[n++] = t;
    }
    return n;
}

int tf__ext_restore(struct tf_alloc *a, const char *ns, const char *name,
                    const struct tf_alloc_request *req, const char *node, const char *ids)
{
    char err[512], buf[4096];
    const char *uuids[TF_NODE_MAX_GPUS];
    size_t n = split_ids(ids, buf, sizeof(buf), uuids, TF_NODE_MAX_GPUS);
    int rc = tf_alloc_restore(a, req, node, uuids, n, err, sizeof(err));
    if (rc && rc != TF_EEXIST)
        tf_log(TF_LOG_WARN, "extender", "cannot restore allocation pod=%s/%s err=%s", ns, name,
               err);
    return rc;
}

uint32_t tf__ledger_restore(struct tf__ledger *l, struct tf_alloc *a)
{
    uint32_t done = 0;
    pthread_mutex_lock(&l->lock);
    for (uint32_t i = 0; i < l->t.n; i++) {
        const struct lpod *e = l->t.v[i];
        char ns[TF_KEY_MAX];
        memcpy(ns, e->text, e->ns_len);
        ns[e->ns_len] = '\0';
        struct tf_alloc_container ctr[TF_PODREQ_MAX_CONTAINERS];
        struct tf_alloc_request r = {.ns = ns,
                                     .name = e->text + e->ns_len + 1,
                                     .res = e->res,
                                     .gpu_count = e->gpu_count,
                                     .isolation = (enum tf_isolation)e->iso,
                                     .qos = (enum tf_qos)e->qos,
                                     .dedicated = e->dedicated,
                                     .partition_template =
                                         e->tpl_off ? e->text + e->tpl_off : NULL};
        for (unsigned k = 0; k < e->nctr; k++) {
            ctr[k].name = "c"; /* names play no part in a restore */
            ctr[k].gpus = lp_ctr(e, k);
        }
        r.containers = e->nctr ? ctr : NULL;
        r.ncontainers = e->nctr;
        done += tf__ext_restore(a, r.ns, r.name, &r, lp_node(e), lp_ids(e)) == 0;
    }
    pthread_mutex_unlock(&l->lock);
    return done;
}
