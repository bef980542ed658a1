/* SPDX-License-Identifier: Apache-2.0
 *
 * The worker's module images by content (SHA-256): a client names an image by its digest
 * first, and only an image the worker does not hold travels. An uploaded image is filed only
 * under the digest the worker computed itself. The images' memory is charged to the worker's
 * module buffer budget (struct tf_worker's blob_used); entries no load is using are evicted,
 * least recently used first, when an upload needs room or the entry count is at its bound.
 * Pure (no I/O); thread-safe.
 */
#ifndef TF_REMOTE_WORKER_IMGCACHE_H
#define TF_REMOTE_WORKER_IMGCACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define TF_IMG_DIGEST_LEN 32
#define TF_IMGCACHE_MAX_ENTRIES 1024

struct tf_img {
    uint8_t digest[TF_IMG_DIGEST_LEN];
    uint8_t *data; /* the image, NUL-terminated (LEN counts the NUL) */
    size_t len;
    int64_t charged; /* bytes of the module buffer budget it holds */
    int refs;        /* loads using it now */
    uint64_t used;   /* LRU stamp */
    struct tf_img *next;
};

struct tf_imgcache_stats {
    uint64_t loads_cached; /* loads served from an image already held */
    uint64_t loads_sent;   /* loads whose image was uploaded */
    uint64_t bytes_sent;   /* image bytes uploaded */
    uint64_t entries, bytes;
    uint64_t evicted;
};

struct tf_imgcache {
    pthread_mutex_t mu;
    struct tf_img *head;
    uint64_t clock;
    struct tf_imgcache_stats st;
};

void tf_imgcache_init(struct tf_imgcache *c);
/* Frees every entry; returns the budget they held (the caller gives it back). */
int64_t tf_imgcache_fini(struct tf_imgcache *c);

/* The entry for DIGEST with a reference taken (counted as a cached load), or NULL. */
struct tf_img *tf_imgcache_get(struct tf_imgcache *c, const uint8_t digest[TF_IMG_DIGEST_LEN]);
/* Files DATA[0..LEN) (malloc'ed, NUL-terminated, CHARGED bytes of the budget) under DIGEST
 * and returns it referenced; the cache owns DATA and its charge from then on, whatever the
 * outcome. Counted as a load whose image was sent. When DIGEST is already held (another
 * client raced) DATA is dropped and *FREED_BYTES tells what to give back; likewise for any
 * entry evicted to stay within TF_IMGCACHE_MAX_ENTRIES. NULL only when out of memory (DATA
 * dropped too). */
struct tf_img *tf_imgcache_put(struct tf_imgcache *c, const uint8_t digest[TF_IMG_DIGEST_LEN],
                               uint8_t *data, size_t len, int64_t charged, int64_t *freed_bytes);
void tf_imgcache_unref(struct tf_imgcache *c, struct tf_img *e);
/* Evicts the least recently used entry no load is using: the budget it held, or 0 when
 * there is none. */
int64_t tf_imgcache_evict_one(struct tf_imgcache *c);
struct tf_imgcache_stats tf_imgcache_stats(struct tf_imgcache *c);

#endif
