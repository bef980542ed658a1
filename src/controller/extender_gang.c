/* SPDX-License-Identifier: Apache-2.0
 *
 * Gang scheduling in the scheduler extender: I/O around core/gang.h (see extender_gang.h).
 */
#include "controller/extender_gang.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/extender_codec.h"
#include "core/gang.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct tf_ext_gangs {
    struct tf_ext_gang_ops ops;
    pthread_mutex_t lock; /* guards book */
    struct tf_gang_book *book;
};

struct tf_ext_gangs *tf_ext_gangs_new(const struct tf_ext_gang_ops *ops)
{
    struct tf_ext_gangs *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->ops = *ops;
    pthread_mutex_init(&g->lock, NULL);
    if (!(g->book = tf_gang_book_new())) {
        tf_ext_gangs_destroy(g);
        return NULL;
    }
    return g;
}

void tf_ext_gangs_destroy(struct tf_ext_gangs *g)
{
    if (!g)
        return;
    tf_gang_book_destroy(g->book);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Releases the reservations of the waiting members RELEASED[0..N), with an Event saying WHY. */
static void release_all(struct tf_ext_gangs *g, char (*released)[TF_GANG_NAME_MAX], size_t n,
                        const char *reason, const char *why)
{
    for (size_t i = 0; i < n; i++) {
        json_object *e = g->ops.inflight(g->ops.arg, released[i]);
        json_object *pod = tf_json_path(e, "pod", NULL);
        if (pod) {
            g->ops.release(g->ops.arg, pod);
            tf_k8s_record(g->ops.events, pod, "Warning", reason, why);
        }
        json_object_put(e);
    }
}

void tf_ext_gangs_expire(struct tf_ext_gangs *g)
{
    char released[64][TF_GANG_NAME_MAX];
    pthread_mutex_lock(&g->lock);
    size_t n = tf_gang_expire(g->book, now_ms(), released, 64);
    pthread_mutex_unlock(&g->lock);
    if (n)
        tf_log(TF_LOG_INFO, "extender", "gang wait timed out, released=%zu", n);
    release_all(g, released, n < 64 ? n : 64, "GangSchedulingTimeout",
                "gang scheduling timed out: the GPUs held for it are released");
}

void tf_ext_gangs_forget(struct tf_ext_gangs *g, json_object *pod)
{
    char member[TF_GANG_NAME_MAX];
    snprintf(member, sizeof(member), "%s/%s", tf_json_str(pod, "metadata", "namespace", NULL),
             tf_json_str(pod, "metadata", "name", NULL));
    pthread_mutex_lock(&g->lock);
    tf_gang_forget(g->book, member);
    pthread_mutex_unlock(&g->lock);
}

/* Binds a waiting MEMBER, with its allocation's annotations, on the node its GPUs are held on. */
static int bind_member(struct tf_ext_gangs *g, const char *member, char *err, size_t errlen)
{
    json_object *e = g->ops.inflight(g->ops.arg, member);
    json_object *pod = tf_json_path(e, "pod", NULL);
    const char *ns = tf_json_str(pod, "metadata", "namespace", NULL);
    const char *name = tf_json_str(pod, "metadata", "name", NULL);
    const char *uid = tf_json_str(pod, "metadata", "uid", NULL);
    const char *node = tf_json_str(e, "node", NULL);
    int rc = TF_ENOENT;
    tf_errf(err, errlen, "%s holds no GPUs any more", member);
    if (ns && name && node) {
        rc = tf_k8s_bind(g->ops.c, ns, name, uid, node, tf_json_path(e, "anns", NULL), err, errlen);
        if (!rc)
            tf_log(TF_LOG_INFO, "extender", "bound gang member pod=%s node=%s", member, node);
    }
    json_object_put(e);
    return rc;
}

char *tf_ext_gangs_bind(struct tf_ext_gangs *g, const struct tf_podreq *p, json_object *pod,
                        const char *node)
{
    char member[TF_GANG_NAME_MAX], msg[1200], err[512];
    snprintf(member, sizeof(member), "%s/%s", p->ns, p->name);
    enum tf_gang_step step;
    int waiting = 0;
    pthread_mutex_lock(&g->lock);
    int rc = tf_gang_hold(g->book, p->gang_key, p->gang_required, p->gang_timeout_ms, member, node,
                          now_ms(), &step, &waiting);
    if (rc || step == TF_GANG_BIND) {
        pthread_mutex_unlock(&g->lock);
        if (rc)
            tf_log(TF_LOG_WARN, "extender", "gang %s: cannot track pod=%s, bound alone",
                   p->gang_key, member);
        return NULL;
    }
    if (step == TF_GANG_REFUSE) {
        pthread_mutex_unlock(&g->lock);
        g->ops.release(g->ops.arg, pod);
        snprintf(msg, sizeof(msg), "gang %s is backed off after a failed or timed-out attempt",
                 p->gang_key);
        return tf_ext_encode_binding_result(msg);
    }
    if (step == TF_GANG_WAIT) {
        pthread_mutex_unlock(&g->lock);
        snprintf(msg, sizeof(msg), "waiting for gang %s: %d/%d members hold GPUs", p->gang_key,
                 waiting, p->gang_required);
        tf_k8s_record(g->ops.events, pod, "Normal", "GangWaitingForMembers", msg);
        return tf_ext_encode_binding_result(msg);
    }
    /* The quorum holds GPUs: bind the others, then this one as usual. */
    size_t n = tf_gang_waiting(g->book, p->gang_key, NULL, NULL, 0);
    const char **names = calloc(n ? n : 1, sizeof(*names));
    char(*released)[TF_GANG_NAME_MAX] = calloc(n ? n : 1, sizeof(*released));
    rc = names && released ? 0 : TF_ENOMEM;
    tf_errf(err, sizeof(err), "out of memory");
    if (!rc)
        tf_gang_waiting(g->book, p->gang_key, names, NULL, n);
    for (size_t i = 0; i < n && !rc; i++)
        if (strcmp(names[i], member) != 0)
            rc = bind_member(g, names[i], err, sizeof(err));
    char *out = NULL;
    if (!rc) {
        tf_gang_bound(g->book, p->gang_key);
        pthread_mutex_unlock(&g->lock);
    } else {
        size_t nr = released ? tf_gang_fail(g->book, p->gang_key, now_ms(), released, n) : 0;
        pthread_mutex_unlock(&g->lock);
        snprintf(msg, sizeof(msg), "gang %s: binding a member failed: %s", p->gang_key, err);
        release_all(g, released, nr < n ? nr : n, "GangSchedulingFailed", msg);
        out = tf_ext_encode_binding_result(msg);
    }
    free(names);
    free(released);
    return out;
}
