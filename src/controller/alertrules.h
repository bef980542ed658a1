/* SPDX-License-Identifier: Apache-2.0
 *
 * Alert rules (seed 002: IdleGPU, EmptyGPU, WorkerTFlopsThrottled, ...), pure: the rules as
 * upstream TensorFusion's chart writes them (dynamicConfig.alertRules), their SQL, and the
 * firing / resolved bookkeeping that turns query rows into Alertmanager API v2 alerts.
 *
 * A rule (unknown keys are errors naming their path, e.g. alertRules[2].treshold):
 *   name                 required; the alertname label
 *   query                required; SQL run on GreptimeDB, a Go template with
 *                        {{ .Conditions }} = greptime_timestamp >= now() - '<N> seconds'::INTERVAL
 *                        (N: the evaluation interval),
 *                        {{ .Threshold }}, {{ .Name }}, {{ .Severity }}
 *   threshold            number (default 0)
 *   evaluationInterval   Go duration, whole seconds, 1s..24h (default 1m): how often, and
 *                        the window of
 *                        {{ .Conditions }}
 *   consecutiveCount     1..1000 (default 1): evaluations in a row a row must appear in
 *                        before it fires
 *   severity             label (default P1)
 *   summary, description annotations; templates over the row's columns and .Threshold
 *   alertTargetInstance  the instance label; template as above (default: the rule's name)
 *   runbookURL           annotation runbook_url
 * Templates take only {{ .Key }} actions (spaces allowed); anything else is refused when the
 * rule is read. A key the data lacks renders as "<no value>", as Go's text/template does.
 *
 * Each row of an evaluation is one alert instance: labels alertname, severity, job
 * ("tensor-fusion"), instance, plus every string column of the row whose name is a valid
 * label name (node, pool, uuid, workload, ...: what a route or a person acts on); annotations
 * summary, description, runbook_url. Rows with the same labels are one instance (the first
 * row's annotations); a row whose labels take more than 16 MiB is skipped. An instance seen in
 * consecutiveCount evaluations in a row fires, and is re-sent every evaluation with endsAt = now +
 * 4 x the interval (so Alertmanager resolves it by itself if the controller stops); one that fired
 * and is absent from an evaluation is sent once more, resolved (endsAt = now). Instances that have
 * not fired yet are forgotten when they miss an evaluation.
 *
 * Pure; one state per rule, used by one thread at a time.
 */
#ifndef TF_CONTROLLER_ALERTRULES_H
#define TF_CONTROLLER_ALERTRULES_H

#include "common/dynbuf.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

struct tf_alert_rule {
    char *name, *query, *severity, *summary, *description, *instance, *runbook;
    double threshold;
    int64_t interval_ms;
    int consecutive;
};

/* Parses ARR (a JSON array of rules; NULL: none). 0 with *OUT / *N (tf_alert_rules_free), or
 * TF_EINVAL / TF_ENOMEM with ERR naming the path. Rule names must be unique. */
int tf_alert_rules_parse(json_object *arr, struct tf_alert_rule **out, size_t *n, char *err,
                         size_t errlen);
void tf_alert_rules_free(struct tf_alert_rule *r, size_t n);

/* Renders TMPL with DATA (a JSON object: strings as they are, numbers as Go prints them, null
 * and missing keys "<no value>") appended to OUT. 0, or TF_EINVAL with ERR. */
int tf_alert_render(const char *tmpl, json_object *data, struct tf_dynbuf *out, char *err,
                    size_t errlen);

/* The SQL of rule R into OUT. */
int tf_alert_query(const struct tf_alert_rule *r, struct tf_dynbuf *out, char *err, size_t errlen);

struct tf_alert_state;
struct tf_alert_state *tf_alert_state_new(void);
void tf_alert_state_free(struct tf_alert_state *st);
/* Forgets every instance (a controller that stops leading). */
void tf_alert_state_reset(struct tf_alert_state *st);
/* Number of instances firing now. */
size_t tf_alert_state_firing(const struct tf_alert_state *st);

/* One evaluation of R: NAMES (column names) and ROWS (arrays of values) as
 * tf_greptime_records_parse gives them, at NOW_MS. Returns the alerts to POST (a JSON array,
 * possibly empty; caller owns), or NULL on allocation failure. */
json_object *tf_alert_evaluate(struct tf_alert_state *st, const struct tf_alert_rule *r,
                               json_object *names, json_object *rows, int64_t now_ms);

#endif
