/* SPDX-License-Identifier: Apache-2.0
 *
 * Events (see client.h): core/v1 Events written now (tf_k8s_event) or queued to a recorder's
 * thread (tf_k8s_record), and the API's timestamps.
 */
#include "controller/k8s/client.h"

#include "common/abstime.h"
#include "common/err.h"
#include "core/timeutil.h"
#include "common/log.h"
#include "common/yamljson.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void tf_k8s_time_now(char *buf, size_t len, bool micro)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    if (micro)
        snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000);
    else
        snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

int tf_k8s_time_parse(const char *s, long long *usec)
{
    /* RFC 3339 as the API server writes Time and MicroTime (checked: fields, ranges, offsets),
     * to milliseconds; the microseconds from the fraction's next three digits. */
    int64_t ms;
    char err[64];
    if (!s || tf_rfc3339_parse(s, &ms, "time", err, sizeof(err)))
        return TF_EPARSE;
    long sub = 0;
    const char *f = strchr(s, '.');
    if (f) {
        int n = 0;
        while (f[1 + n] >= '0' && f[1 + n] <= '9')
            n++;
        for (int i = 3; i < 6; i++)
            sub = sub * 10 + (i < n ? f[1 + i] - '0' : 0);
    }
    *usec = (long long)ms * 1000LL + sub;
    return 0;
}

/* The core/v1 Event about INVOLVED (NULL when it has no name), its namespace in *NS (the
 * object's, "default" for a cluster-scoped one: a string of the event). */
static json_object *event_new(json_object *involved, const char *type, const char *reason,
                              const char *message, const char *component, const char **ns)
{
    const char *ons = tf_json_str(involved, "metadata", "namespace", NULL);
    const char *name = tf_json_str(involved, "metadata", "name", NULL);
    if (!name)
        return NULL;
    if (!ons || !*ons)
        ons = "default";
    char ts[40];
    tf_k8s_time_now(ts, sizeof(ts), false);
    json_object *ev = json_object_new_object();
    json_object *meta = json_object_new_object();
    char gen[300];
    snprintf(gen, sizeof(gen), "%.250s.", name);
    json_object_object_add(meta, "generateName", json_object_new_string(gen));
    json_object_object_add(meta, "namespace", json_object_new_string(ons));
    json_object_object_add(ev, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(ev, "kind", json_object_new_string("Event"));
    json_object_object_add(ev, "metadata", meta);
    json_object *inv = json_object_new_object();
    static const char *const keys[] = {"kind", "apiVersion"};
    for (int i = 0; i < 2; i++) {
        const char *v = tf_json_str(involved, keys[i], NULL);
        if (v)
            json_object_object_add(inv, keys[i], json_object_new_string(v));
    }
    static const char *const mkeys[] = {"name", "namespace", "uid", "resourceVersion"};
    for (int i = 0; i < 4; i++) {
        const char *v = tf_json_str(involved, "metadata", mkeys[i], NULL);
        if (v)
            json_object_object_add(inv, mkeys[i], json_object_new_string(v));
    }
    json_object_object_add(ev, "involvedObject", inv);
    json_object_object_add(ev, "type", json_object_new_string(type));
    json_object_object_add(ev, "reason", json_object_new_string(reason));
    json_object_object_add(ev, "message", json_object_new_string(message));
    json_object *src = json_object_new_object();
    json_object_object_add(src, "component",
                           json_object_new_string(component ? component : "tf-controller"));
    json_object_object_add(ev, "source", src);
    json_object_object_add(ev, "firstTimestamp", json_object_new_string(ts));
    json_object_object_add(ev, "lastTimestamp", json_object_new_string(ts));
    json_object_object_add(ev, "count", json_object_new_int(1));
    *ns = tf_json_str(ev, "metadata", "namespace", NULL);
    return ev;
}

/* Creates EV in NS; logs a failure. */
static int event_post(struct tf_k8s_client *c, json_object *ev, const char *ns)
{
    char err[256];
    int rc = tf_k8s_create(c, &tf_k8s_events, ns, ev, NULL, err, sizeof(err));
    if (rc)
        tf_log(TF_LOG_WARN, "k8s", "event not recorded reason=%s err=%s",
               tf_json_str(ev, "reason", NULL), err);
    return rc;
}

int tf_k8s_event(struct tf_k8s_client *c, json_object *involved, const char *type,
                 const char *reason, const char *message, const char *component)
{
    const char *ns;
    json_object *ev = event_new(involved, type, reason, message, component, &ns);
    if (!ev)
        return TF_EINVAL;
    int rc = event_post(c, ev, ns);
    json_object_put(ev);
    return rc;
}

/* ---- the recorder --------------------------------------------------------------------------- */

#define RECORDER_CAP 1024      /* events waiting, by default (client-go's broadcaster: 1000) */
#define RECORDER_DRAIN_MS 2000 /* what destroy waits for the queue to empty */

struct tf_k8s_recorder {
    struct tf_k8s_client *c; /* derived: shorter timeouts, closed by destroy */
    char component[64];
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t work; /* an event queued, or stopping */
    pthread_cond_t done; /* an event posted or given up */
    /* Under LOCK: a ring of CAP events, the oldest at HEAD. */
    json_object **q;
    size_t cap, head, n;
    uint64_t queued, finished; /* events taken into the ring / posted or given up */
    uint64_t dropped, failed;
    time_t drop_logged; /* when the last drop was logged */
    bool stopping;
};

static void *recorder_main(void *arg)
{
    struct tf_k8s_recorder *r = arg;
    pthread_mutex_lock(&r->lock);
    for (;;) {
        while (!r->n && !r->stopping)
            pthread_cond_wait(&r->work, &r->lock);
        if (!r->n)
            break;
        json_object *ev = r->q[r->head];
        r->head = (r->head + 1) % r->cap;
        r->n--;
        pthread_mutex_unlock(&r->lock);
        int rc = event_post(r->c, ev, tf_json_str(ev, "metadata", "namespace", NULL));
        json_object_put(ev);
        pthread_mutex_lock(&r->lock);
        r->failed += rc != 0;
        r->finished++;
        pthread_cond_broadcast(&r->done);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* Frees R, its thread gone (or never started) and its queue empty. */
static void recorder_free(struct tf_k8s_recorder *r)
{
    tf_k8s_client_destroy(r->c);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->work);
    pthread_cond_destroy(&r->done);
    free(r->q);
    free(r);
}

struct tf_k8s_recorder *tf_k8s_recorder_new(struct tf_k8s_client *c, const char *component,
                                            size_t cap)
{
    struct tf_k8s_recorder *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->cap = cap ? cap : RECORDER_CAP;
    r->q = calloc(r->cap, sizeof(*r->q));
    /* 10 s a request and 3 attempts (backoff at most 1 s): an event is worth less than the
     * queue behind it. */
    r->c = r->q ? tf_k8s_client_derive(c, 10000, 3, 1000) : NULL;
    snprintf(r->component, sizeof(r->component), "%s", component ? component : "tf-controller");
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->work, NULL);
    pthread_cond_init(&r->done, NULL);
    if (!r->c || pthread_create(&r->thread, NULL, recorder_main, r)) {
        recorder_free(r);
        return NULL;
    }
    return r;
}

void tf_k8s_record(struct tf_k8s_recorder *r, json_object *involved, const char *type,
                   const char *reason, const char *message)
{
    const char *ns;
    json_object *ev = event_new(involved, type, reason, message, r->component, &ns);
    if (!ev)
        return;
    pthread_mutex_lock(&r->lock);
    if (r->n == r->cap || r->stopping) {
        r->dropped++;
        time_t now = time(NULL);
        bool log = now - r->drop_logged >= 10; /* the first drop, then one line per 10 s */
        if (log)
            r->drop_logged = now;
        uint64_t dropped = r->dropped;
        pthread_mutex_unlock(&r->lock);
        if (log)
            tf_log(TF_LOG_WARN, "k8s",
                   "event dropped, %zu waiting for the API server reason=%s dropped_total=%llu",
                   r->cap, reason, (unsigned long long)dropped);
        json_object_put(ev);
        return;
    }
    r->q[(r->head + r->n) % r->cap] = ev;
    r->n++;
    r->queued++;
    pthread_cond_signal(&r->work);
    pthread_mutex_unlock(&r->lock);
}

bool tf_k8s_recorder_flush(struct tf_k8s_recorder *r, int timeout_ms)
{
    struct timespec until = tf_abstime_ms(CLOCK_REALTIME, timeout_ms);
    pthread_mutex_lock(&r->lock);
    uint64_t target = r->queued;
    int rc = 0;
    while (r->finished < target && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&r->done, &r->lock, &until);
    bool ok = r->finished >= target;
    pthread_mutex_unlock(&r->lock);
    return ok;
}

void tf_k8s_recorder_stats(struct tf_k8s_recorder *r, uint64_t *posted, uint64_t *failed,
                           uint64_t *dropped)
{
    pthread_mutex_lock(&r->lock);
    if (posted)
        *posted = r->finished - r->failed;
    if (failed)
        *failed = r->failed;
    if (dropped)
        *dropped = r->dropped;
    pthread_mutex_unlock(&r->lock);
}

double tf_k8s_recorder_cpu_s(struct tf_k8s_recorder *r)
{
    clockid_t clk;
    struct timespec ts;
    if (pthread_getcpuclockid(r->thread, &clk) || clock_gettime(clk, &ts))
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void tf_k8s_recorder_destroy(struct tf_k8s_recorder *r)
{
    if (!r)
        return;
    bool drained = tf_k8s_recorder_flush(r, RECORDER_DRAIN_MS);
    pthread_mutex_lock(&r->lock);
    r->stopping = true;
    size_t left = r->n; /* given up unwritten */
    for (; r->n; r->n--, r->head = (r->head + 1) % r->cap)
        json_object_put(r->q[r->head]);
    pthread_cond_signal(&r->work);
    pthread_mutex_unlock(&r->lock);
    if (!drained) /* the write in flight, if any, is cut */
        tf_k8s_client_close(r->c);
    pthread_join(r->thread, NULL);
    if (left)
        tf_log(TF_LOG_WARN, "k8s", "events not recorded at shutdown count=%zu component=%s", left,
               r->component);
    recorder_free(r);
}
