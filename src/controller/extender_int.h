/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to the scheduler extender (extender*.c): the extender object and the helpers its
 * files share. Nothing outside src/controller/extender*.c may include it.
 *
 *   extender.c        lifecycle, state locking, informer handlers, autoscaler calls, dispatch
 *   extender_state.c  the allocator's state built from GPU, pool, template, quota, pod objects
 *   extender_verbs.c  /filter, /prioritize (with QoS preemption) and /bind
 */
#ifndef TF_CONTROLLER_EXTENDER_INT_H
#define TF_CONTROLLER_EXTENDER_INT_H

#include "controller/extender.h"

#include "controller/podreq.h"
#include "core/alloc.h"
#include "core/alloc_index.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define ANN_GPU_IDS "tensor-fusion.ai/gpu-ids"
#define ANN_CONTAINER_GPUS "tensor-fusion.ai/container-gpus"
#define LABEL_GPUPOOL "tensor-fusion.ai/gpupool"

struct tf_extender {
    struct tf_k8s_client *c;
    struct tf_extender_sources src;
    char *default_pool;
    enum tf_iso_policy policy;
    pthread_rwlock_t lock; /* guards cluster, alloc, quotas */
    struct tf_cluster *cluster;
    struct tf_alloc *alloc;
    struct tf_quota_set *quotas;
    struct tf_alloc_index *index; /* verdicts of filter/prioritize (core/alloc_index.h) over
                                     ALLOC: replaced with it; guarded by index_lock too */
    pthread_mutex_t index_lock;   /* serialises index calls (under the read lock) */
    atomic_bool dirty;
    pthread_mutex_t inflight_lock; /* guards inflight */
    json_object *inflight;   /* "ns/name" -> {"node": n, "uuids": [..]}: reserved, not yet seen
                                with gpu-ids in the pod cache */
    json_object *preempting; /* "ns/name" -> {"at": s, "node": n, "msg": m}: evictions started
                                for that pod (guarded by inflight_lock) */
};

/* Seconds a started preemption is left to take effect before the same pod may plan again. */
#define PREEMPT_HOLD_S 30

struct req_buf {
    struct tf_podreq pr;
    struct tf_alloc_request req;
    struct tf_alloc_container containers[TF_PODREQ_MAX_CONTAINERS];
};

/* extender.c */
/* Fills B->req from B->pr (strings stay borrowed from B->pr). */
void tf__ext_to_alloc(struct req_buf *b);
/* Takes the read (write) lock with a current state, rebuilding first when dirty. False (and
 * no lock held) when there is no state at all. */
bool tf__ext_read_state(struct tf_extender *x);
bool tf__ext_write_state(struct tf_extender *x);
/* Releases POD's GPUs and forgets its in-flight bind (takes the locks itself). */
void tf__ext_release_pod(struct tf_extender *x, json_object *pod);

/* extender_state.c */
/* True unless POD is terminating, Succeeded or Failed. */
bool tf__ext_pod_live(json_object *pod);
/* Builds a fresh cluster + allocator from the arrays (borrowed) and swaps it in; the caller
 * holds the write lock. 0 or TF_ENOMEM. */
int tf__ext_load(struct tf_extender *x, json_object *gpus, json_object *pools,
                 json_object *templates, json_object *quotas, json_object *pods);
/* tf__ext_load from the informers' current contents; the caller holds the write lock. */
void tf__ext_rebuild(struct tf_extender *x);

/* extender_verbs.c: the three verbs; *STATUS is set on errors, the body is a new string. */
char *tf__ext_filter(struct tf_extender *x, const char *body, size_t len, int *status);
char *tf__ext_prioritize(struct tf_extender *x, const char *body, size_t len, int *status);
char *tf__ext_bind(struct tf_extender *x, const char *body, size_t len, int *status);

#endif
