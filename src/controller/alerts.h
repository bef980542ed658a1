/* SPDX-License-Identifier: Apache-2.0
 *
 * The alert evaluator (`tf-controller --enable-alert`): a thread that, while this replica
 * leads, runs every rule (alertrules.h) on its evaluationInterval against GreptimeDB's SQL
 * API and POSTs the resulting alerts to Alertmanager's API v2 (POST <url>/api/v2/alerts, a
 * JSON array of postable alerts). Alertmanager deduplicates, groups, routes and notifies.
 *
 * Failures never stop the controller: a query that fails (database down, bad SQL) is logged
 * once per rule until it succeeds again and leaves that rule's instances as they were; a POST
 * that fails is logged the same way and its resolved alerts are sent with the next POST (up to
 * 1000 kept), firing ones are re-sent by the next evaluation anyway. Each request is bounded
 * by a 10 s timeout. A replica that stops leading forgets its instances (the new leader
 * starts counting consecutive evaluations afresh).
 *
 * Threads: _start / _set_rules / _stop from the controller's thread; the evaluator has its own.
 */
#ifndef TF_CONTROLLER_ALERTS_H
#define TF_CONTROLLER_ALERTS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tf_alerts_opts {
    const char *alertmanager_url; /* e.g. http://alert-manager:9093 */
    const char *metrics_url;      /* GreptimeDB base URL */
    const char *metrics_db;       /* NULL: public */
    bool (*active)(void *arg);    /* whether this replica leads */
    void *arg;
};

struct tf_alerts_stats {
    uint64_t evaluations, query_failures, posts, post_failures, alerts_sent;
    size_t firing;
};

struct tf_alerts;

/* Starts the evaluator with RULES (a JSON array as alertrules.h reads it; copied). NULL with
 * ERR set when the rules or the URLs are invalid. */
struct tf_alerts *tf_alerts_start(const struct tf_alerts_opts *o, json_object *rules, char *err,
                                  size_t errlen);
/* Replaces the rules (configuration reload): 0, or TF_EINVAL with ERR (the old rules stay).
 * Instances of rules that keep their name are kept. */
int tf_alerts_set_rules(struct tf_alerts *a, json_object *rules, char *err, size_t errlen);
void tf_alerts_stats(struct tf_alerts *a, struct tf_alerts_stats *out);
/* Stops and joins the thread (accepts NULL). */
void tf_alerts_stop(struct tf_alerts *a);

#endif
