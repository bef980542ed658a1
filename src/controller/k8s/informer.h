/* SPDX-License-Identifier: Apache-2.0
 *
 * Shared informer: an in-memory cache of one kind kept current by list + watch, so the
 * extender and the webhook answer from memory. One thread per informer lists (limit/continue
 * pages), then watches from the list's resourceVersion with bookmarks; a 410 Gone (or a
 * watch that keeps failing) triggers a relist, after which the cache is diffed against the
 * new list so handlers see exactly the adds, updates and deletes that happened meanwhile.
 *
 * Threads: handlers run on the informer's thread, one at a time, after the cache has been
 * updated; the objects they receive are borrowed and must not be modified. tf_informer_get,
 * _foreach, _count, _synced and _relists may be called from any thread. _foreach holds a
 * read lock while it runs FN: FN must not modify or serialise the (shared) objects, and must
 * not call back into the same informer's writers. _destroy stops and joins the thread.
 */
#ifndef TF_CONTROLLER_K8S_INFORMER_H
#define TF_CONTROLLER_K8S_INFORMER_H

#include "controller/k8s/client.h"

#include <stdbool.h>
#include <stdint.h>

struct tf_informer_handlers {
    void (*on_add)(json_object *obj, void *arg);
    void (*on_update)(json_object *old_obj, json_object *new_obj, void *arg);
    void (*on_delete)(json_object *obj, void *arg);
    void *arg;
};

struct tf_informer;

/* Creates an informer of RES (namespace NS or all when NULL; selectors may be NULL). The
 * client and RES must outlive it; strings are copied. H may be NULL. NULL on OOM. */
struct tf_informer *tf_informer_new(struct tf_k8s_client *c, const struct tf_k8s_resource *res,
                                    const char *ns, const char *label_selector,
                                    const char *field_selector,
                                    const struct tf_informer_handlers *h);
/* Starts the thread. Watches last WATCH_TIMEOUT_S seconds each (0 = 300). */
int tf_informer_start(struct tf_informer *inf, int watch_timeout_s);
/* Waits until the first list has been applied; false on timeout. */
bool tf_informer_wait_synced(struct tf_informer *inf, int timeout_ms);
bool tf_informer_synced(struct tf_informer *inf);
void tf_informer_destroy(struct tf_informer *inf);

/* A deep copy of the cached object NS/NAME (NS ignored for cluster-scoped kinds), or NULL.
 * Caller owns it. */
json_object *tf_informer_get(struct tf_informer *inf, const char *ns, const char *name);
/* Calls FN(obj, arg) for each cached object (see the thread note above); stops at FN's first
 * non-zero result and returns it. */
int tf_informer_foreach(struct tf_informer *inf, int (*fn)(json_object *obj, void *arg), void *arg);
size_t tf_informer_count(struct tf_informer *inf);
/* Deep copies of every cached object, in a new array (caller owns); an empty array when INF is
 * NULL. */
json_object *tf_informer_snapshot(struct tf_informer *inf);
/* Number of full lists done so far (1 after the initial sync; more after 410s). */
uint64_t tf_informer_relists(struct tf_informer *inf);

#endif
