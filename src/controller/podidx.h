/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-controller's pod-index allocator for the webhook (core/podindex.h): before each
 * assignment it rebuilds the live set from the pod cache (every pod that exists and has not
 * finished, with a valid tensor-fusion.ai/index annotation), so indexes come back when pods
 * finish or are deleted and a restarted controller knows every index in use; indexes handed
 * out for pods not yet in the cache stay reserved for TF_PODIDX_RESERVE_MS. Thread-safe
 * (admission reviews run concurrently).
 */
#ifndef TF_CONTROLLER_PODIDX_H
#define TF_CONTROLLER_PODIDX_H

#include "controller/k8s/informer.h"
#include "core/podindex.h"

#include <pthread.h>
#include <stddef.h>

struct tf_ctl_podidx {
    pthread_mutex_t mu;
    struct tf_podidx_alloc a;
    struct tf_informer *pods; /* borrowed */
};

void tf_ctl_podidx_init(struct tf_ctl_podidx *p, struct tf_informer *pods);
void tf_ctl_podidx_destroy(struct tf_ctl_podidx *p);
/* A fresh index, or TF_ENOSPC with ERR saying how many pods hold one. */
int tf_ctl_podidx_take(struct tf_ctl_podidx *p, char *err, size_t errlen);

#endif
