/* SPDX-License-Identifier: Apache-2.0
 *
 * The alert evaluator (see alerts.h).
 */
#include "controller/alerts.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "controller/alertrules.h"
#include "controller/greptime.h"
#include "core/timeutil.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TIMEOUT_MS 10000
#define PENDING_MAX 1000

struct slot {
    struct tf_alert_rule rule; /* owned through `rules` */
    struct tf_alert_state *st;
    int64_t next_ms;
    bool failing;
};

struct tf_alerts {
    struct tf_alerts_opts o;
    char *am_url; /* <url>/api/v2/alerts */
    struct tf_greptime *g;
    pthread_t thread;
    pthread_mutex_t mu; /* rules, slots, stats, stop */
    pthread_cond_t cv;
    bool stop, was_active, post_failing;
    struct tf_alert_rule *rules;
    struct slot *slots;
    size_t n;
    /* Rules staged by tf_alerts_set_rules, swapped in by the thread between evaluations. */
    struct tf_alert_rule *new_rules;
    struct slot *new_slots;
    size_t new_n;
    bool staged;
    json_object *pending; /* resolved alerts not delivered yet */
    struct tf_alerts_stats stats;
};

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t sink(char *p, size_t size, size_t nmemb, void *arg)
{
    struct tf_dynbuf *b = arg;
    size_t n = size * nmemb;
    (void)tf_dynbuf_add(b, p, n < 512 - b->len ? n : 512 - b->len);
    return n;
}

/* POSTs ALERTS (a JSON array) to Alertmanager: 0, or TF_EIO with ERR. */
static int post(struct tf_alerts *a, json_object *alerts, char *err, size_t errlen)
{
    const char *body = json_object_to_json_string_ext(alerts, JSON_C_TO_STRING_PLAIN);
    CURL *h = curl_easy_init();
    if (!h) {
        tf_errf(err, errlen, "out of memory");
        return TF_EIO;
    }
    struct tf_dynbuf reply;
    tf_dynbuf_init(&reply, 512);
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_URL, a->am_url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)TIMEOUT_MS);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    int rc = 0;
    if (cc != CURLE_OK) {
        tf_errf(err, errlen, "Alertmanager %s: %s", a->am_url, curl_easy_strerror(cc));
        rc = TF_EIO;
    } else if (status != 200) {
        tf_errf(err, errlen, "Alertmanager %s: HTTP %ld: %.300s", a->am_url, status,
                tf_dynbuf_str(&reply));
        rc = TF_EIO;
    }
    tf_dynbuf_free(&reply);
    return rc;
}

/* Marks the resolved alerts of ALERTS (endsAt <= now) so a failed send keeps them. */
static void mark_resolved(json_object *alerts, int64_t now)
{
    char nowbuf[48];
    tf_rfc3339_format(now, nowbuf, sizeof(nowbuf));
    for (size_t i = 0; i < json_object_array_length(alerts); i++) {
        json_object *al = json_object_array_get_idx(alerts, i);
        const char *ends = json_object_get_string(json_object_object_get(al, "endsAt"));
        if (ends && strcmp(ends, nowbuf) <= 0)
            json_object_object_add(al, "_resolved", json_object_new_boolean(true));
    }
}

static void strip_marks(json_object *alerts)
{
    for (size_t i = 0; i < json_object_array_length(alerts); i++)
        json_object_object_del(json_object_array_get_idx(alerts, i), "_resolved");
}

static void evaluate(struct tf_alerts *a, struct slot *s, int64_t now)
{
    struct tf_dynbuf sql;
    tf_dynbuf_init(&sql, 1 << 20);
    char err[512];
    json_object *doc = NULL, *names = NULL, *rows = NULL;
    int rc = tf_alert_query(&s->rule, &sql, err, sizeof(err));
    if (rc == 0)
        rc = tf_greptime_query(a->g, tf_dynbuf_str(&sql), &doc, &names, &rows, err, sizeof(err));
    tf_dynbuf_free(&sql);
    pthread_mutex_lock(&a->mu);
    a->stats.evaluations++;
    if (rc)
        a->stats.query_failures++;
    pthread_mutex_unlock(&a->mu);
    if (rc) {
        if (!s->failing)
            tf_log(TF_LOG_WARN, "alerts", "rule %s: %s (instances kept until it succeeds)",
                   s->rule.name, err);
        s->failing = true;
        return;
    }
    if (s->failing)
        tf_log(TF_LOG_INFO, "alerts", "rule %s: query succeeds again", s->rule.name);
    s->failing = false;
    json_object *alerts = tf_alert_evaluate(s->st, &s->rule, names, rows, now);
    json_object_put(doc);
    if (!alerts)
        return;
    mark_resolved(alerts, now);
    json_object *send = json_object_new_array();
    for (size_t i = 0; i < json_object_array_length(alerts); i++)
        json_object_array_add(send, json_object_get(json_object_array_get_idx(alerts, i)));
    json_object_put(alerts);
    /* The marks travel with pending alerts; Alertmanager ignores unknown members but strip
     * them from what is sent anyway: a copy is posted. */
    json_object *wire = NULL;
    json_object_deep_copy(send, &wire, NULL);
    if (wire) {
        strip_marks(wire);
        char perr[512];
        for (size_t i = 0; i < json_object_array_length(a->pending); i++) {
            json_object *cp = NULL;
            json_object_deep_copy(json_object_array_get_idx(a->pending, i), &cp, NULL);
            if (cp) {
                json_object_object_del(cp, "_resolved");
                json_object_array_add(wire, cp);
            }
        }
        if (json_object_array_length(wire) > 0) {
            int prc = post(a, wire, perr, sizeof(perr));
            pthread_mutex_lock(&a->mu);
            a->stats.posts++;
            if (prc) {
                a->stats.post_failures++;
                /* Keep the resolved ones, old and new, for the next POST. */
                for (size_t i = 0; i < json_object_array_length(send); i++) {
                    json_object *al = json_object_array_get_idx(send, i);
                    if (json_object_get_boolean(json_object_object_get(al, "_resolved")) &&
                        json_object_array_length(a->pending) < PENDING_MAX)
                        json_object_array_add(a->pending, json_object_get(al));
                }
            } else {
                a->stats.alerts_sent += json_object_array_length(wire);
                json_object_put(a->pending);
                a->pending = json_object_new_array();
            }
            bool was = a->post_failing;
            a->post_failing = prc != 0;
            pthread_mutex_unlock(&a->mu);
            if (prc && !was)
                tf_log(TF_LOG_WARN, "alerts", "%s (retried with the next evaluation)", perr);
            else if (!prc && was)
                tf_log(TF_LOG_INFO, "alerts", "Alertmanager %s reachable again", a->am_url);
            else if (!prc)
                tf_log(TF_LOG_DEBUG, "alerts", "rule %s: %zu alert(s) sent", s->rule.name,
                       json_object_array_length(wire));
        }
        json_object_put(wire);
    }
    json_object_put(send);
}

static void free_slots(struct tf_alert_rule *r, struct slot *s, size_t n);

/* Swaps in staged rules (lock held): instances of rules that keep their name are kept. */
static void apply_staged(struct tf_alerts *a)
{
    if (!a->staged)
        return;
    struct slot *s = a->new_slots;
    for (size_t i = 0; i < a->new_n; i++)
        for (size_t j = 0; j < a->n; j++)
            if (strcmp(s[i].rule.name, a->slots[j].rule.name) == 0) {
                struct tf_alert_state *t = s[i].st;
                s[i].st = a->slots[j].st;
                a->slots[j].st = t;
                s[i].next_ms = a->slots[j].next_ms;
                s[i].failing = a->slots[j].failing;
            }
    free_slots(a->rules, a->slots, a->n);
    a->rules = a->new_rules;
    a->slots = a->new_slots;
    a->n = a->new_n;
    a->new_rules = NULL;
    a->new_slots = NULL;
    a->new_n = 0;
    a->staged = false;
    tf_log(TF_LOG_INFO, "alerts", "alert rules reloaded: %zu rule(s)", a->n);
}

static void *run(void *arg)
{
    struct tf_alerts *a = arg;
    pthread_mutex_lock(&a->mu);
    while (!a->stop) {
        apply_staged(a);
        bool active = a->o.active ? a->o.active(a->o.arg) : true;
        if (!active && a->was_active) {
            for (size_t i = 0; i < a->n; i++)
                tf_alert_state_reset(a->slots[i].st);
            json_object_put(a->pending);
            a->pending = json_object_new_array();
        }
        a->was_active = active;
        int64_t now = wall_ms(), next = now + 1000;
        for (size_t i = 0; active && i < a->n && !a->stop; i++) {
            struct slot *s = &a->slots[i];
            if (now >= s->next_ms) {
                s->next_ms = now + s->rule.interval_ms;
                /* The slot stays valid without the lock: only this thread replaces the
                 * array (apply_staged). */
                pthread_mutex_unlock(&a->mu);
                evaluate(a, s, now);
                pthread_mutex_lock(&a->mu);
            }
            if (s->next_ms < next)
                next = s->next_ms;
        }
        int64_t wait = next - wall_ms();
        if (wait > 0 && !a->stop) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            wait = wait > 1000 ? 1000 : wait;
            until.tv_nsec += (long)(wait % 1000) * 1000000L;
            until.tv_sec += wait / 1000 + until.tv_nsec / 1000000000L;
            until.tv_nsec %= 1000000000L;
            pthread_cond_timedwait(&a->cv, &a->mu, &until);
        }
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

static int make_slots(json_object *rules, struct tf_alert_rule **r, struct slot **slots, size_t *n,
                      char *err, size_t errlen)
{
    int rc = tf_alert_rules_parse(rules, r, n, err, errlen);
    if (rc)
        return rc;
    *slots = *n ? calloc(*n, sizeof(**slots)) : NULL;
    for (size_t i = 0; *n && *slots && i < *n; i++) {
        (*slots)[i].rule = (*r)[i];
        (*slots)[i].st = tf_alert_state_new();
        if (!(*slots)[i].st)
            rc = TF_ENOMEM;
    }
    if ((*n && !*slots) || rc) {
        for (size_t i = 0; *slots && i < *n; i++)
            tf_alert_state_free((*slots)[i].st);
        free(*slots);
        tf_alert_rules_free(*r, *n);
        tf_errf(err, errlen, "out of memory");
        return TF_ENOMEM;
    }
    return 0;
}

static void free_slots(struct tf_alert_rule *r, struct slot *s, size_t n)
{
    for (size_t i = 0; s && i < n; i++)
        tf_alert_state_free(s[i].st);
    free(s);
    tf_alert_rules_free(r, n);
}

struct tf_alerts *tf_alerts_start(const struct tf_alerts_opts *o, json_object *rules, char *err,
                                  size_t errlen)
{
    if (!o->alertmanager_url || strncmp(o->alertmanager_url, "http", 4) != 0) {
        tf_errf(err, errlen, "--alertmanager-url: \"%s\" is not an http(s) URL",
                o->alertmanager_url ? o->alertmanager_url : "");
        return NULL;
    }
    if (!o->metrics_url) {
        tf_errf(err, errlen, "alerts are evaluated on GreptimeDB: --metrics-url is required");
        return NULL;
    }
    struct tf_alerts *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->o = *o;
    size_t ul = strlen(o->alertmanager_url);
    while (ul && o->alertmanager_url[ul - 1] == '/')
        ul--;
    if (asprintf(&a->am_url, "%.*s/api/v2/alerts", (int)ul, o->alertmanager_url) < 0)
        a->am_url = NULL;
    a->g = tf_greptime_new(o->metrics_url, o->metrics_db, TIMEOUT_MS);
    a->pending = json_object_new_array();
    if (!a->am_url || !a->g || !a->pending ||
        make_slots(rules, &a->rules, &a->slots, &a->n, err, errlen)) {
        if (!a->am_url || !a->g || !a->pending)
            tf_errf(err, errlen, "out of memory");
        tf_greptime_destroy(a->g);
        json_object_put(a->pending);
        free(a->am_url);
        free(a);
        return NULL;
    }
    a->o.alertmanager_url = a->o.metrics_url = a->o.metrics_db = NULL; /* not kept */
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    if (pthread_create(&a->thread, NULL, run, a) != 0) {
        tf_errf(err, errlen, "cannot start the alert evaluator thread");
        pthread_mutex_destroy(&a->mu);
        pthread_cond_destroy(&a->cv);
        free_slots(a->rules, a->slots, a->n);
        tf_greptime_destroy(a->g);
        json_object_put(a->pending);
        free(a->am_url);
        free(a);
        return NULL;
    }
    tf_log(TF_LOG_INFO, "alerts", "%zu alert rule(s), alerts to %s", a->n, a->am_url);
    return a;
}

int tf_alerts_set_rules(struct tf_alerts *a, json_object *rules, char *err, size_t errlen)
{
    struct tf_alert_rule *r;
    struct slot *s;
    size_t n;
    int rc = make_slots(rules, &r, &s, &n, err, errlen);
    if (rc)
        return rc;
    pthread_mutex_lock(&a->mu);
    if (a->staged)
        free_slots(a->new_rules, a->new_slots, a->new_n);
    a->new_rules = r;
    a->new_slots = s;
    a->new_n = n;
    a->staged = true;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    return 0;
}

void tf_alerts_stats(struct tf_alerts *a, struct tf_alerts_stats *out)
{
    pthread_mutex_lock(&a->mu);
    *out = a->stats;
    out->firing = 0;
    for (size_t i = 0; i < a->n; i++)
        out->firing += tf_alert_state_firing(a->slots[i].st);
    pthread_mutex_unlock(&a->mu);
}

void tf_alerts_stop(struct tf_alerts *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->stop = true;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->thread, NULL);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free_slots(a->rules, a->slots, a->n);
    if (a->staged)
        free_slots(a->new_rules, a->new_slots, a->new_n);
    tf_greptime_destroy(a->g);
    json_object_put(a->pending);
    free(a->am_url);
    free(a);
}
