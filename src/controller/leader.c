/* SPDX-License-Identifier: Apache-2.0
 *
 * Lease-based leader election (see leader.h).
 */
#include "controller/leader.h"

#include "common/err.h"
#include "common/log.h"
#include "common/yamljson.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tf_leader {
    struct tf_k8s_client *c;
    struct tf_leader_opts o;
    char *ns, *name, *id;
    atomic_bool stop, leader;
    pthread_t thread;
    /* elector thread only */
    char seen_holder[256], seen_renew[64];
    double seen_at, last_renew;
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static json_object *lease_body(struct tf_leader *l, json_object *old, int transitions,
                               const char *acquire)
{
    char now[40];
    tf_k8s_time_now(now, sizeof(now), true);
    json_object *lease = NULL;
    if (old) {
        json_object_deep_copy(old, &lease, NULL);
    } else {
        lease = json_object_new_object();
        json_object *meta = json_object_new_object();
        json_object_object_add(meta, "name", json_object_new_string(l->name));
        json_object_object_add(meta, "namespace", json_object_new_string(l->ns));
        json_object_object_add(lease, "apiVersion",
                               json_object_new_string("coordination.k8s.io/v1"));
        json_object_object_add(lease, "kind", json_object_new_string("Lease"));
        json_object_object_add(lease, "metadata", meta);
    }
    json_object *spec = json_object_new_object();
    json_object_object_add(spec, "holderIdentity", json_object_new_string(l->id));
    json_object_object_add(spec, "leaseDurationSeconds",
                           json_object_new_int(l->o.lease_duration_s));
    json_object_object_add(spec, "acquireTime", json_object_new_string(acquire ? acquire : now));
    json_object_object_add(spec, "renewTime", json_object_new_string(now));
    json_object_object_add(spec, "leaseTransitions", json_object_new_int(transitions));
    json_object_object_add(lease, "spec", spec);
    return lease;
}

/* One round: returns true when we hold the lease afterwards. */
static bool try_acquire_or_renew(struct tf_leader *l)
{
    char err[256];
    json_object *cur = NULL;
    int rc = tf_k8s_get(l->c, &tf_k8s_leases, l->ns, l->name, &cur, err, sizeof(err));
    if (rc == TF_ENOENT) {
        json_object *b = lease_body(l, NULL, 0, NULL);
        rc = tf_k8s_create(l->c, &tf_k8s_leases, l->ns, b, NULL, err, sizeof(err));
        json_object_put(b);
        return rc == 0;
    }
    if (rc) {
        tf_log(TF_LOG_WARN, "leader", "cannot read lease err=%s", err);
        return false;
    }
    const char *holder = tf_json_str(cur, "spec", "holderIdentity", NULL);
    const char *renew = tf_json_str(cur, "spec", "renewTime", NULL);
    const char *acquire = tf_json_str(cur, "spec", "acquireTime", NULL);
    json_object *tr = tf_json_path(cur, "spec", "leaseTransitions", NULL);
    int transitions = tr ? json_object_get_int(tr) : 0;
    json_object *dur = tf_json_path(cur, "spec", "leaseDurationSeconds", NULL);
    int duration = dur ? json_object_get_int(dur) : l->o.lease_duration_s;
    double now = mono();
    if (strcmp(holder ? holder : "", l->seen_holder) != 0 ||
        strcmp(renew ? renew : "", l->seen_renew) != 0) {
        snprintf(l->seen_holder, sizeof(l->seen_holder), "%s", holder ? holder : "");
        snprintf(l->seen_renew, sizeof(l->seen_renew), "%s", renew ? renew : "");
        l->seen_at = now;
    }
    bool mine = holder && strcmp(holder, l->id) == 0;
    bool expired = !holder || !*holder || now - l->seen_at > duration;
    bool ok = false;
    if (mine || expired) {
        json_object *b =
            lease_body(l, cur, mine ? transitions : transitions + 1, mine ? acquire : NULL);
        rc = tf_k8s_update(l->c, &tf_k8s_leases, l->ns, l->name, NULL, b, NULL, err, sizeof(err));
        json_object_put(b);
        ok = rc == 0;
        if (!ok && rc != TF_ECONFLICT)
            tf_log(TF_LOG_WARN, "leader", "lease update failed err=%s", err);
    }
    json_object_put(cur);
    return ok;
}

static void nap_ms(struct tf_leader *l, int ms)
{
    for (int left = ms; left > 0 && !atomic_load(&l->stop); left -= 20) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static void *run(void *arg)
{
    struct tf_leader *l = arg;
    while (!atomic_load(&l->stop)) {
        bool held = try_acquire_or_renew(l);
        double now = mono();
        if (held) {
            l->last_renew = now;
            if (!atomic_load(&l->leader)) {
                atomic_store(&l->leader, true);
                tf_log(TF_LOG_INFO, "leader", "became leader lease=%s/%s identity=%s", l->ns,
                       l->name, l->id);
                if (l->o.on_start)
                    l->o.on_start(l->o.arg);
            }
        } else if (atomic_load(&l->leader) && now - l->last_renew > l->o.renew_deadline_s) {
            atomic_store(&l->leader, false);
            tf_log(TF_LOG_WARN, "leader", "lost leadership lease=%s/%s", l->ns, l->name);
            if (l->o.on_stop)
                l->o.on_stop(l->o.arg);
        }
        nap_ms(l, l->o.retry_period_ms);
    }
    return NULL;
}

struct tf_leader *tf_leader_start(struct tf_k8s_client *c, const struct tf_leader_opts *o)
{
    struct tf_leader *l = calloc(1, sizeof(*l));
    if (!l)
        return NULL;
    l->c = c;
    l->o = *o;
    if (l->o.lease_duration_s <= 0)
        l->o.lease_duration_s = 15;
    if (l->o.renew_deadline_s <= 0)
        l->o.renew_deadline_s = 10;
    if (l->o.retry_period_ms <= 0)
        l->o.retry_period_ms = 2000;
    l->ns = strdup(o->ns);
    l->name = strdup(o->name);
    l->id = strdup(o->identity);
    l->seen_at = mono();
    if (!l->ns || !l->name || !l->id || pthread_create(&l->thread, NULL, run, l)) {
        free(l->ns);
        free(l->name);
        free(l->id);
        free(l);
        return NULL;
    }
    return l;
}

bool tf_leader_is_leader(struct tf_leader *l)
{
    return l && atomic_load(&l->leader);
}

static int release(json_object *lease, void *arg)
{
    struct tf_leader *l = arg;
    const char *holder = tf_json_str(lease, "spec", "holderIdentity", NULL);
    if (!holder || strcmp(holder, l->id) != 0)
        return 1;
    json_object *spec = tf_json_path(lease, "spec", NULL);
    json_object_object_add(spec, "holderIdentity", json_object_new_string(""));
    return 0;
}

void tf_leader_destroy(struct tf_leader *l)
{
    if (!l)
        return;
    atomic_store(&l->stop, true);
    pthread_join(l->thread, NULL);
    if (atomic_load(&l->leader)) {
        char err[256];
        tf_k8s_update_retry(l->c, &tf_k8s_leases, l->ns, l->name, NULL, release, l, NULL, err,
                            sizeof(err));
        if (l->o.on_stop)
            l->o.on_stop(l->o.arg);
    }
    free(l->ns);
    free(l->name);
    free(l->id);
    free(l);
}
