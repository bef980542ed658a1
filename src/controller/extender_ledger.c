/* SPDX-License-Identifier: Apache-2.0
 *
 * The extender's ledger (see extender_int.h): the pods that hold GPUs according to the API,
 * read once from their objects as the pod informer reports them, restored by every rebuild
 * of the state without reading JSON again.
 *
 * One allocation per pod: the header below, then "namespace/name", the node name and the
 * gpu-ids annotation, each NUL-terminated. The map's keys point into them.
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
    uint8_t iso, qos, nctr;
    bool dedicated;
    uint16_t ctr[TF_PODREQ_MAX_CONTAINERS]; /* the container split's GPU counts */
    const char *node, *ids;                 /* into TEXT */
    char text[];                            /* key, node, ids */
};

struct tf__ledger {
    pthread_mutex_t lock;    /* guards everything below */
    struct tf_strmap by_key; /* key -> index in PODS */
    struct lpod **pods;
    uint32_t n, cap;
};

struct tf__ledger *tf__ledger_new(void)
{
    struct tf__ledger *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    pthread_mutex_init(&l->lock, NULL);
    tf_strmap_init(&l->by_key);
    return l;
}

static void clear(struct tf__ledger *l)
{
    for (uint32_t i = 0; i < l->n; i++)
        free(l->pods[i]);
    l->n = 0;
    tf_strmap_free(&l->by_key);
}

void tf__ledger_destroy(struct tf__ledger *l)
{
    if (!l)
        return;
    clear(l);
    free(l->pods);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

static void del_locked(struct tf__ledger *l, const char *key, size_t len)
{
    uint32_t i;
    if (tf_strmap_get(&l->by_key, key, len, &i))
        return;
    tf_strmap_del(&l->by_key, key, len);
    free(l->pods[i]);
    if (i != --l->n) { /* the last one takes the hole */
        l->pods[i] = l->pods[l->n];
        tf_strmap_set(&l->by_key, l->pods[i]->text, i);
    }
}

static bool room(struct tf__ledger *l)
{
    if (l->n < l->cap)
        return true;
    uint32_t cap = l->cap ? l->cap * 2 : 1024;
    struct lpod **np = realloc(l->pods, cap * sizeof(*np));
    if (!np)
        return false;
    l->pods = np;
    l->cap = cap;
    return true;
}

/* Records P (a managed, local pod) as holding IDS on NODE under KEY. */
static void put_locked(struct tf__ledger *l, const char *key, const struct tf_podreq *p,
                       const char *node, const char *ids)
{
    size_t kl = strlen(key), nl = strlen(node), il = strlen(ids);
    struct lpod *e = calloc(1, sizeof(*e) + kl + nl + il + 3);
    if (!e || !room(l)) {
        free(e);
        tf_log(TF_LOG_ERROR, "extender", "ledger: out of memory, pod=%s not recorded", key);
        return;
    }
    memcpy(e->text, key, kl + 1);
    e->node = e->text + kl + 1;
    memcpy((char *)e->node, node, nl + 1);
    e->ids = e->node + nl + 1;
    memcpy((char *)e->ids, ids, il + 1);
    struct req_buf b;
    b.pr = *p;
    tf__ext_to_alloc(&b);
    e->res = b.req.res;
    e->ns_len = (uint16_t)strlen(p->ns);
    e->gpu_count = b.req.gpu_count;
    e->iso = (uint8_t)b.req.isolation;
    e->qos = (uint8_t)b.req.qos;
    e->dedicated = b.req.dedicated;
    e->nctr = (uint8_t)b.req.ncontainers;
    for (unsigned i = 0; i < b.req.ncontainers; i++)
        e->ctr[i] = b.req.containers[i].gpus;
    del_locked(l, key, kl);
    if (tf_strmap_put(&l->by_key, e->text, l->n)) {
        free(e);
        tf_log(TF_LOG_ERROR, "extender", "ledger: out of memory, pod=%s not recorded", key);
        return;
    }
    l->pods[l->n++] = e;
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
    uint32_t i;
    bool held = tf_strmap_get(&l->by_key, key, (size_t)kl, &i) == 0;
    if (!ids || !node || !tf__ext_pod_live(pod)) {
        if (held)
            del_locked(l, key, (size_t)kl);
        pthread_mutex_unlock(&l->lock);
        return;
    }
    /* Status updates leave what the ledger keeps as it was: no second reading. */
    bool same = held && old && !strcmp(l->pods[i]->node, node) && !strcmp(l->pods[i]->ids, ids) &&
                json_object_equal(tf_json_path(old, "metadata", NULL),
                                  tf_json_path(pod, "metadata", NULL)) &&
                json_object_equal(tf_json_path(old, "spec", NULL), tf_json_path(pod, "spec", NULL));
    pthread_mutex_unlock(&l->lock);
    if (same)
        return;
    struct tf_podreq *p = malloc(sizeof(*p)); /* ~6 KiB: not on the informer's stack */
    char err[512];
    bool keep =
        p && tf_podreq_from_pod(pod, p, err, sizeof(err)) == 0 && p->managed && !p->remote_client;
    pthread_mutex_lock(&l->lock);
    if (keep)
        put_locked(l, key, p, node, ids);
    else
        del_locked(l, key, (size_t)kl);
    pthread_mutex_unlock(&l->lock);
    free(p);
}

void tf__ledger_del(struct tf__ledger *l, const char *ns, const char *name)
{
    char key[TF_KEY_MAX];
    int kl = snprintf(key, sizeof(key), "%s/%s", ns, name);
    if (kl < 0 || (size_t)kl >= sizeof(key))
        return;
    pthread_mutex_lock(&l->lock);
    del_locked(l, key, (size_t)kl);
    pthread_mutex_unlock(&l->lock);
}

void tf__ledger_load(struct tf__ledger *l, json_object *pods)
{
    pthread_mutex_lock(&l->lock);
    clear(l);
    pthread_mutex_unlock(&l->lock);
    for (size_t i = 0; i < json_object_array_length(pods); i++)
        tf__ledger_pod(l, NULL, json_object_array_get_idx(pods, i));
}

uint32_t tf__ledger_count(struct tf__ledger *l)
{
    pthread_mutex_lock(&l->lock);
    uint32_t n = l->n;
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
    for (uint32_t i = 0; i < l->n; i++) {
        const struct lpod *e = l->pods[i];
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
                                     .dedicated = e->dedicated};
        for (unsigned k = 0; k < e->nctr; k++) {
            ctr[k].name = "c"; /* names play no part in a restore */
            ctr[k].gpus = e->ctr[k];
        }
        r.containers = e->nctr ? ctr : NULL;
        r.ncontainers = e->nctr;
        done += tf__ext_restore(a, r.ns, r.name, &r, e->node, e->ids) == 0;
    }
    pthread_mutex_unlock(&l->lock);
    return done;
}
