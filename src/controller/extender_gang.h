/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to the scheduler extender: gang scheduling's I/O around the pure planner of
 * core/gang.h. The extender reserves a gang member's GPUs as for any pod and records the bind
 * in flight; tf_ext_gangs_bind then decides: the member waits (keeping its GPUs, the bind
 * fails and kube-scheduler retries it), or the quorum holds GPUs and every waiting member is
 * bound with its allocation's annotations (in the Binding), or the group is backed off. Expired
 * waits release their members' reservations. Thread-safe (one lock, taken before the
 * extender's own locks).
 */
#ifndef TF_CONTROLLER_EXTENDER_GANG_H
#define TF_CONTROLLER_EXTENDER_GANG_H

#include "controller/k8s/client.h"
#include "controller/podreq.h"

#include <json-c/json.h>

/* What the gang module asks of the extender. */
struct tf_ext_gang_ops {
    void *arg;
    struct tf_k8s_client *c;        /* for Bindings */
    struct tf_k8s_recorder *events; /* for Events */
    /* The in-flight bind of MEMBER ("ns/name"): {"node", "pod", "anns"}, a new reference, or
     * NULL when it holds no GPUs. */
    json_object *(*inflight)(void *arg, const char *member);
    /* Releases POD's reservation (and its in-flight record). */
    void (*release)(void *arg, json_object *pod);
};

struct tf_ext_gangs;

/* NULL when out of memory. */
struct tf_ext_gangs *tf_ext_gangs_new(const struct tf_ext_gang_ops *ops);
void tf_ext_gangs_destroy(struct tf_ext_gangs *g);

/* Member P (POD) of a gang has just reserved GPUs on NODE. Returns the bind answer (JSON text,
 * caller frees) when the gang decides it (waiting, refused, a member failed), NULL when POD
 * is to be bound as usual (the quorum is complete and the others are bound, or the group has
 * reached its quorum before). */
char *tf_ext_gangs_bind(struct tf_ext_gangs *g, const struct tf_podreq *p, json_object *pod,
                        const char *node);
/* Releases the members of groups whose wait ran out. */
void tf_ext_gangs_expire(struct tf_ext_gangs *g);
/* POD is gone: it stops waiting. */
void tf_ext_gangs_forget(struct tf_ext_gangs *g, json_object *pod);

#endif
