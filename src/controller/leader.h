/* SPDX-License-Identifier: Apache-2.0
 *
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does:
 * the holder renews spec.renewTime every retry period; a candidate takes over when the
 * record it observes has not changed for leaseDurationSeconds (measured on its own monotonic
 * clock, so clock skew between nodes does not matter) or has no holder. Writes are PUTs with
 * the resourceVersion read, so two candidates never both win. A leader that cannot renew for
 * renew_deadline_s steps down (on_stop runs) before anyone else may take over.
 *
 * Threads: one thread per elector; callbacks run on it. tf_leader_is_leader is thread-safe.
 */
#ifndef TF_CONTROLLER_LEADER_H
#define TF_CONTROLLER_LEADER_H

#include "controller/k8s/client.h"

#include <stdbool.h>

struct tf_leader_opts {
    const char *ns, *name; /* the Lease */
    const char *identity;  /* this candidate (pod name) */
    int lease_duration_s;  /* default 15 */
    int renew_deadline_s;  /* default 10 */
    int retry_period_ms;   /* default 2000 */
    void (*on_start)(void *arg);
    void (*on_stop)(void *arg);
    void *arg;
};

struct tf_leader;

/* Starts campaigning. Strings are copied. NULL on OOM. */
struct tf_leader *tf_leader_start(struct tf_k8s_client *c, const struct tf_leader_opts *o);
bool tf_leader_is_leader(struct tf_leader *l);
/* Stops; a leader releases the lease (empty holder) so a standby takes over at once. */
void tf_leader_destroy(struct tf_leader *l);

#endif
