/* SPDX-License-Identifier: Apache-2.0
 *
 * libFuzzer target: alert rules as a user writes them in the controller's config
 * (dynamicConfig.alertRules, YAML or JSON), their templates, and the firing / resolved
 * bookkeeping over a GreptimeDB answer (controller/alertrules.h).
 *
 * Input: the rules' document, then optionally a line "%%" and a GreptimeDB SQL API answer.
 * The document is an object with alertRules (as in the config) or the list itself. For each
 * rule accepted: its SQL is rendered, then three evaluations over the answer's rows and one
 * over none. Aborts when a rule read without error has a template that fails to render, when a
 * posted alert lacks its rule's alertname, job or severity label or its times, when the same
 * instance is posted twice in one evaluation, or when an evaluation over no rows leaves an
 * instance firing or posts anything but resolved alerts.
 */
#include "common/dynbuf.h"
#include "common/yamljson.h"
#include "controller/alertrules.h"
#include "controller/greptime_codec.h"
#include "core/timeutil.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *str_at(json_object *o, const char *a, const char *b)
{
    json_object *v = json_object_object_get(o, a);
    if (b)
        v = json_object_object_get(v, b);
    return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

/* Checks the alerts one evaluation of R posted; EMPTY: it saw no rows. */
static void check_post(const struct tf_alert_rule *r, json_object *post, bool empty,
                       const char *now)
{
    if (!post)
        abort();
    for (size_t i = 0; i < json_object_array_length(post); i++) {
        json_object *a = json_object_array_get_idx(post, i);
        const char *name = str_at(a, "labels", "alertname"), *job = str_at(a, "labels", "job"),
                   *sev = str_at(a, "labels", "severity"), *ends = str_at(a, "endsAt", NULL);
        if (!name || strcmp(name, r->name) || !job || strcmp(job, "tensor-fusion") || !sev ||
            strcmp(sev, r->severity) || !str_at(a, "startsAt", NULL) || !ends)
            abort();
        if (empty && strcmp(ends, now)) /* with no rows, only resolutions */
            abort();
        for (size_t j = 0; j < i; j++) /* json_object_equal: key order aside */
            if (json_object_equal(
                    json_object_object_get(a, "labels"),
                    json_object_object_get(json_object_array_get_idx(post, j), "labels")))
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    const char *in = (const char *)data, *sep = memmem(in, size, "\n%%\n", 4);
    size_t rules_len = sep ? (size_t)(sep - in) : size;
    json_object *docs = NULL, *doc_names = NULL, *names = NULL, *rows = NULL;
    char err[256];
    if (tf_yaml_to_json(in, rules_len, &docs, err, sizeof(err)))
        return 0;
    json_object *doc = json_object_array_get_idx(docs, 0), *arr = doc;
    if (json_object_is_type(doc, json_type_object))
        arr = json_object_object_get(doc, "alertRules");
    struct tf_alert_rule *r = NULL;
    size_t n = 0;
    if (tf_alert_rules_parse(arr, &r, &n, err, sizeof(err))) {
        if (r || n)
            abort();
        json_object_put(docs);
        return 0;
    }
    if (sep)
        tf_greptime_records_parse(sep + 4, size - rules_len - 4, &doc_names, &names, &rows, err,
                                  sizeof(err));
    for (size_t i = 0; i < n; i++) {
        struct tf_dynbuf q;
        tf_dynbuf_init(&q, 1 << 20);
        if (tf_alert_query(&r[i], &q, err, sizeof(err)))
            abort(); /* templates were checked when the rule was read */
        tf_dynbuf_free(&q);
        struct tf_alert_state *st = tf_alert_state_new();
        int64_t now = INT64_C(1767225600000);
        char ts[48];
        bool none = !rows || !json_object_array_length(rows);
        for (int k = 0; k < 3; k++, now += r[i].interval_ms) {
            json_object *post = tf_alert_evaluate(st, &r[i], names, rows, now);
            tf_rfc3339_format(now, ts, sizeof(ts));
            check_post(&r[i], post, none, ts);
            json_object_put(post);
        }
        json_object *post = tf_alert_evaluate(st, &r[i], NULL, NULL, now);
        tf_rfc3339_format(now, ts, sizeof(ts));
        check_post(&r[i], post, true, ts);
        if (tf_alert_state_firing(st))
            abort();
        json_object_put(post);
        tf_alert_state_free(st);
    }
    tf_alert_rules_free(r, n);
    json_object_put(doc_names);
    json_object_put(docs);
    return 0;
}
