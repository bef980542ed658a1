/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to the scheduler extender (extender.c: state, filter, prioritize, informer
 * handlers; extender_bind.c: the bind verb). Not a public interface.
 */
#ifndef TF_CONTROLLER_EXTENDER_INT_H
#define TF_CONTROLLER_EXTENDER_INT_H

#include "controller/allocsig.h"
#include "controller/extender.h"
#include "controller/podreq.h"
#include "core/alloc.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define ANN_GPU_IDS "tensor-fusion.ai/gpu-ids"
#define ANN_CONTAINER_GPUS "tensor-fusion.ai/container-gpus"

struct tf_extender {
    struct tf_k8s_client *c;
    struct tf_extender_sources src;
    char *default_pool;
    enum tf_iso_policy policy;
    pthread_rwlock_t lock; /* guards cluster, alloc, quotas */
    struct tf_cluster *cluster;
    struct tf_alloc *alloc;
    struct tf_quota_set *quotas;
    atomic_bool dirty;
    pthread_mutex_t inflight_lock; /* guards inflight */
    json_object *inflight;   /* "ns/name" -> {"node": n, "uuids": [..]}: reserved, not yet seen
                                with gpu-ids in the pod cache */
    json_object *preempting; /* "ns/name" -> {"at": s, "node": n, "msg": m}: evictions started
                                for that pod (guarded by inflight_lock) */
    const struct tf_allocsig *sig; /* signs and checks allocations (borrowed), or NULL */
};

struct req_buf {
    struct tf_podreq pr;
    struct tf_alloc_request req;
    struct tf_alloc_container containers[TF_PODREQ_MAX_CONTAINERS];
};

/* Fills B->req (pointing into B) from B->pr. */
void tf__ext_to_alloc(struct req_buf *b);
/* Takes the write lock with a current state (rebuilt if dirty); false (unlocked) when there is
 * no state at all. */
bool tf__ext_write_state(struct tf_extender *x);
/* Forgets POD's in-flight bind and releases its GPUs. Call without x->lock. */
void tf__ext_release_pod(struct tf_extender *x, json_object *pod);
/* POST /scheduler/bind: BODY is an ExtenderBindingArgs; returns the ExtenderBindingResult
 * (new string) and sets *STATUS on a malformed body or out of memory. */
char *tf__ext_bind(struct tf_extender *x, const char *body, size_t len, int *status);

#endif
