/* SPDX-License-Identifier: Apache-2.0
 *
 * Module images by content: see imgcache.h. A list, searched linearly: it holds at most
 * TF_IMGCACHE_MAX_ENTRIES entries and is searched once per module load.
 */
#include "remote/worker/imgcache.h"

#include <stdlib.h>
#include <string.h>

void tf_imgcache_init(struct tf_imgcache *c)
{
    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
}

static int64_t drop(struct tf_imgcache *c, struct tf_img **link)
{
    struct tf_img *e = *link;
    *link = e->next;
    int64_t charged = e->charged;
    c->st.entries--;
    c->st.bytes -= e->len;
    free(e->data);
    free(e);
    return charged;
}

int64_t tf_imgcache_fini(struct tf_imgcache *c)
{
    int64_t freed = 0;
    while (c->head)
        freed += drop(c, &c->head);
    pthread_mutex_destroy(&c->mu);
    return freed;
}

static struct tf_img **find(struct tf_imgcache *c, const uint8_t *digest)
{
    struct tf_img **l = &c->head;
    while (*l && memcmp((*l)->digest, digest, TF_IMG_DIGEST_LEN) != 0)
        l = &(*l)->next;
    return l;
}

struct tf_img *tf_imgcache_get(struct tf_imgcache *c, const uint8_t digest[TF_IMG_DIGEST_LEN])
{
    pthread_mutex_lock(&c->mu);
    struct tf_img *e = *find(c, digest);
    if (e) {
        e->refs++;
        e->used = ++c->clock;
        c->st.loads_cached++;
    }
    pthread_mutex_unlock(&c->mu);
    return e;
}

static int64_t evict_locked(struct tf_imgcache *c)
{
    struct tf_img **victim = NULL;
    for (struct tf_img **l = &c->head; *l; l = &(*l)->next)
        if (!(*l)->refs && (!victim || (*l)->used < (*victim)->used))
            victim = l;
    if (!victim)
        return 0;
    c->st.evicted++;
    return drop(c, victim);
}

struct tf_img *tf_imgcache_put(struct tf_imgcache *c, const uint8_t digest[TF_IMG_DIGEST_LEN],
                               uint8_t *data, size_t len, int64_t charged, int64_t *freed_bytes)
{
    *freed_bytes = 0;
    pthread_mutex_lock(&c->mu);
    c->st.loads_sent++;
    c->st.bytes_sent += len ? len - 1 : 0;
    struct tf_img *e = *find(c, digest);
    if (e) {
        free(data);
        *freed_bytes = charged;
    } else if ((e = calloc(1, sizeof(*e))) == NULL) {
        free(data);
        *freed_bytes = charged;
        pthread_mutex_unlock(&c->mu);
        return NULL;
    } else {
        while (c->st.entries >= TF_IMGCACHE_MAX_ENTRIES) {
            int64_t k = evict_locked(c);
            if (!k && c->st.entries >= TF_IMGCACHE_MAX_ENTRIES)
                break; /* all in use: over the bound until their loads end */
            *freed_bytes += k;
        }
        memcpy(e->digest, digest, TF_IMG_DIGEST_LEN);
        e->data = data;
        e->len = len;
        e->charged = charged;
        e->next = c->head;
        c->head = e;
        c->st.entries++;
        c->st.bytes += len;
    }
    e->refs++;
    e->used = ++c->clock;
    pthread_mutex_unlock(&c->mu);
    return e;
}

void tf_imgcache_unref(struct tf_imgcache *c, struct tf_img *e)
{
    pthread_mutex_lock(&c->mu);
    e->refs--;
    pthread_mutex_unlock(&c->mu);
}

int64_t tf_imgcache_evict_one(struct tf_imgcache *c)
{
    pthread_mutex_lock(&c->mu);
    int64_t k = evict_locked(c);
    pthread_mutex_unlock(&c->mu);
    return k;
}

struct tf_imgcache_stats tf_imgcache_stats(struct tf_imgcache *c)
{
    pthread_mutex_lock(&c->mu);
    struct tf_imgcache_stats st = c->st;
    pthread_mutex_unlock(&c->mu);
    return st;
}
