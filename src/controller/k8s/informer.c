/* SPDX-License-Identifier: Apache-2.0
 *
 * Shared informer: list + watch into a keyed cache (see informer.h).
 */
#include "controller/k8s/informer.h"

#include "common/abstime.h"
#include "common/err.h"
#include "common/log.h"
#include "common/yamljson.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tf_informer {
    struct tf_k8s_client *c;
    const struct tf_k8s_resource *res;
    char *ns, *label, *field;
    struct tf_informer_handlers h;
    int watch_timeout_s;

    pthread_rwlock_t lock; /* guards cache */
    json_object *cache;    /* key "ns/name" or "name" -> object (owned refs) */

    pthread_mutex_t sync_lock; /* guards synced, with sync_cond */
    pthread_cond_t sync_cond;
    bool synced;
    _Atomic uint64_t relists;

    atomic_bool stop;
    bool started;
    pthread_t thread;
    char rv[64]; /* informer thread only */
};

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

struct tf_informer *tf_informer_new(struct tf_k8s_client *c, const struct tf_k8s_resource *res,
                                    const char *ns, const char *label_selector,
                                    const char *field_selector,
                                    const struct tf_informer_handlers *h)
{
    struct tf_informer *inf = calloc(1, sizeof(*inf));
    if (!inf)
        return NULL;
    inf->c = c;
    inf->res = res;
    inf->ns = dup_or_null(ns);
    inf->label = dup_or_null(label_selector);
    inf->field = dup_or_null(field_selector);
    if (h)
        inf->h = *h;
    inf->cache = json_object_new_object();
    pthread_rwlock_init(&inf->lock, NULL);
    pthread_mutex_init(&inf->sync_lock, NULL);
    pthread_cond_init(&inf->sync_cond, NULL);
    atomic_init(&inf->stop, false);
    if (!inf->cache || (ns && !inf->ns) || (label_selector && !inf->label) ||
        (field_selector && !inf->field)) {
        tf_informer_destroy(inf);
        return NULL;
    }
    return inf;
}

static void obj_key(const struct tf_informer *inf, json_object *obj, char *buf, size_t len)
{
    const char *ns = tf_json_str(obj, "metadata", "namespace", NULL);
    const char *name = tf_json_str(obj, "metadata", "name", NULL);
    if (inf->res->namespaced)
        snprintf(buf, len, "%s/%s", ns ? ns : "", name ? name : "");
    else
        snprintf(buf, len, "%s", name ? name : "");
}

/* Stores OBJ (takes a new reference) and returns the previous object (caller puts) or NULL. */
static json_object *cache_put(struct tf_informer *inf, json_object *obj)
{
    char key[600];
    obj_key(inf, obj, key, sizeof(key));
    json_object *old = NULL;
    pthread_rwlock_wrlock(&inf->lock);
    if (json_object_object_get_ex(inf->cache, key, &old))
        json_object_get(old); /* keep it alive across the replace */
    json_object_object_add(inf->cache, key, json_object_get(obj));
    pthread_rwlock_unlock(&inf->lock);
    return old;
}

static json_object *cache_del(struct tf_informer *inf, json_object *obj)
{
    char key[600];
    obj_key(inf, obj, key, sizeof(key));
    json_object *old = NULL;
    pthread_rwlock_wrlock(&inf->lock);
    if (json_object_object_get_ex(inf->cache, key, &old)) {
        json_object_get(old);
        json_object_object_del(inf->cache, key);
    }
    pthread_rwlock_unlock(&inf->lock);
    return old;
}

static void deliver(struct tf_informer *inf, json_object *old, json_object *obj)
{
    if (old) {
        const char *a = tf_json_str(old, "metadata", "resourceVersion", NULL);
        const char *b = tf_json_str(obj, "metadata", "resourceVersion", NULL);
        if (inf->h.on_update && !(a && b && strcmp(a, b) == 0))
            inf->h.on_update(old, obj, inf->h.arg);
    } else if (inf->h.on_add) {
        inf->h.on_add(obj, inf->h.arg);
    }
}

struct listing {
    const struct tf_informer *inf;
    json_object *fresh; /* key (as the cache keys it) -> object */
};

static int list_item(json_object *item, void *arg)
{
    struct listing *l = arg;
    char key[600];
    obj_key(l->inf, item, key, sizeof(key));
    json_object_object_add(l->fresh, key, json_object_get(item));
    return 0;
}

/* Full list; replaces the cache and emits the differences. */
static int relist(struct tf_informer *inf)
{
    char err[512];
    char *rv = NULL;
    json_object *fresh = json_object_new_object();
    if (!fresh)
        return TF_ENOMEM;
    struct listing l = {inf, fresh};
    int rc = tf_k8s_list(inf->c, inf->res, inf->ns, inf->label, inf->field, 500, list_item, &l, &rv,
                         err, sizeof(err));
    if (rc) {
        tf_log(TF_LOG_WARN, "informer", "list failed kind=%s err=%s", inf->res->kind, err);
        json_object_put(fresh);
        return rc;
    }
    /* Deletes first: objects cached but absent from the new list. */
    json_object *gone = json_object_new_array();
    pthread_rwlock_rdlock(&inf->lock);
    json_object_object_foreach(inf->cache, k, v)
    {
        if (!json_object_object_get_ex(fresh, k, NULL))
            json_object_array_add(gone, json_object_get(v));
    }
    pthread_rwlock_unlock(&inf->lock);
    for (size_t i = 0; i < json_object_array_length(gone); i++) {
        json_object *o = json_object_array_get_idx(gone, i);
        json_object *old = cache_del(inf, o);
        if (old && inf->h.on_delete)
            inf->h.on_delete(old, inf->h.arg);
        json_object_put(old);
    }
    json_object_put(gone);
    json_object_object_foreach(fresh, k2, v2)
    {
        (void)k2;
        json_object *old = cache_put(inf, v2);
        deliver(inf, old, v2);
        json_object_put(old);
    }
    json_object_put(fresh);
    snprintf(inf->rv, sizeof(inf->rv), "%s", rv ? rv : "");
    free(rv);
    atomic_fetch_add(&inf->relists, 1);
    pthread_mutex_lock(&inf->sync_lock);
    inf->synced = true;
    pthread_cond_broadcast(&inf->sync_cond);
    pthread_mutex_unlock(&inf->sync_lock);
    return 0;
}

static int on_event(enum tf_k8s_event_type type, json_object *obj, void *arg)
{
    struct tf_informer *inf = arg;
    json_object *old;
    switch (type) {
    case TF_K8S_ADDED:
    case TF_K8S_MODIFIED:
        old = cache_put(inf, obj);
        deliver(inf, old, obj);
        json_object_put(old);
        break;
    case TF_K8S_DELETED:
        old = cache_del(inf, obj);
        if (inf->h.on_delete)
            inf->h.on_delete(old ? old : obj, inf->h.arg);
        json_object_put(old);
        break;
    case TF_K8S_BOOKMARK:
        break; /* the resourceVersion was recorded by tf_k8s_watch */
    }
    return 0;
}

static void nap(struct tf_informer *inf, long ms)
{
    for (long left = ms; left > 0 && !atomic_load(&inf->stop); left -= 50) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static void *run(void *arg)
{
    struct tf_informer *inf = arg;
    bool need_list = true;
    int failures = 0;
    while (!atomic_load(&inf->stop)) {
        if (need_list) {
            if (relist(inf)) {
                nap(inf, failures < 6 ? 100L << failures : 5000);
                failures++;
                continue;
            }
            need_list = false;
            failures = 0;
        }
        char err[512] = "";
        int rc = tf_k8s_watch(inf->c, inf->res, inf->ns, inf->label, inf->field, inf->rv,
                              inf->watch_timeout_s, on_event, inf, &inf->stop, inf->rv,
                              sizeof(inf->rv), err, sizeof(err));
        if (atomic_load(&inf->stop))
            break;
        if (rc == TF_ESTATE) {
            tf_log(TF_LOG_INFO, "informer", "watch expired, relisting kind=%s rv=%s",
                   inf->res->kind, inf->rv);
            need_list = true;
        } else if (rc) {
            failures++;
            tf_log(TF_LOG_WARN, "informer", "watch failed kind=%s err=%s", inf->res->kind, err);
            nap(inf, failures < 6 ? 100L << failures : 5000);
            if (failures >= 3)
                need_list = true;
        } else {
            failures = 0;
        }
    }
    return NULL;
}

int tf_informer_start(struct tf_informer *inf, int watch_timeout_s)
{
    inf->watch_timeout_s = watch_timeout_s > 0 ? watch_timeout_s : 300;
    if (pthread_create(&inf->thread, NULL, run, inf))
        return TF_ENOMEM;
    inf->started = true;
    return 0;
}

bool tf_informer_wait_synced(struct tf_informer *inf, int timeout_ms)
{
    struct timespec ts = tf_abstime_ms(CLOCK_REALTIME, timeout_ms);
    pthread_mutex_lock(&inf->sync_lock);
    while (!inf->synced)
        if (pthread_cond_timedwait(&inf->sync_cond, &inf->sync_lock, &ts))
            break;
    bool s = inf->synced;
    pthread_mutex_unlock(&inf->sync_lock);
    return s;
}

bool tf_informer_synced(struct tf_informer *inf)
{
    pthread_mutex_lock(&inf->sync_lock);
    bool s = inf->synced;
    pthread_mutex_unlock(&inf->sync_lock);
    return s;
}

void tf_informer_destroy(struct tf_informer *inf)
{
    if (!inf)
        return;
    atomic_store(&inf->stop, true);
    if (inf->started)
        pthread_join(inf->thread, NULL);
    json_object_put(inf->cache);
    pthread_rwlock_destroy(&inf->lock);
    pthread_mutex_destroy(&inf->sync_lock);
    pthread_cond_destroy(&inf->sync_cond);
    free(inf->ns);
    free(inf->label);
    free(inf->field);
    free(inf);
}

json_object *tf_informer_get(struct tf_informer *inf, const char *ns, const char *name)
{
    char key[600];
    if (inf->res->namespaced)
        snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name);
    else
        snprintf(key, sizeof(key), "%s", name);
    json_object *o = NULL, *copy = NULL;
    pthread_rwlock_rdlock(&inf->lock);
    if (json_object_object_get_ex(inf->cache, key, &o) && json_object_deep_copy(o, &copy, NULL))
        copy = NULL;
    pthread_rwlock_unlock(&inf->lock);
    return copy;
}

int tf_informer_foreach(struct tf_informer *inf, int (*fn)(json_object *obj, void *arg), void *arg)
{
    int rc = 0;
    pthread_rwlock_rdlock(&inf->lock);
    json_object_object_foreach(inf->cache, k, v)
    {
        (void)k;
        if ((rc = fn(v, arg)))
            break;
    }
    pthread_rwlock_unlock(&inf->lock);
    return rc;
}

static int copy_into(json_object *o, void *arg)
{
    json_object *cp = NULL;
    if (json_object_deep_copy(o, &cp, NULL) == 0)
        json_object_array_add(arg, cp);
    return 0;
}

json_object *tf_informer_snapshot(struct tf_informer *inf)
{
    json_object *arr = json_object_new_array();
    if (inf && arr)
        tf_informer_foreach(inf, copy_into, arr);
    return arr;
}

size_t tf_informer_count(struct tf_informer *inf)
{
    pthread_rwlock_rdlock(&inf->lock);
    size_t n = (size_t)json_object_object_length(inf->cache);
    pthread_rwlock_unlock(&inf->lock);
    return n;
}

uint64_t tf_informer_relists(struct tf_informer *inf)
{
    return atomic_load(&inf->relists);
}
