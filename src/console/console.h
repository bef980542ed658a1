/* SPDX-License-Identifier: Apache-2.0
 *
 * The web console's server side, shared by tf-hypervisor (local mode) and tf-controller (the
 * cluster): the JSON API the pages consume (docs/console.md), and the pages themselves,
 * built into the binary (web/console, embedded by embed.py at build time).
 *
 * A server provides three things and calls tf_con_api for every GET under
 * /api/v1/console/ (after its own authentication):
 *   - an inventory: what is there now, as a JSON object (shape below), built from its own
 *     state (the hypervisor's state store, the controller's informer caches);
 *   - a metrics store: a function running one SQL statement of the GreptimeDB dialect the
 *     project supports (SQLite through metrics/sqlquery.h locally, GreptimeDB's SQL API in
 *     the cluster), answering column names and rows as greptime_codec.h does;
 *   - optionally alerts and events functions (what fires now; efficiency actions).
 *
 * Inventory (numbers are JSON numbers; TFLOPS and VRAM of workloads are per GPU):
 *   {"mode": "local" | "cluster",
 *    "gpus": [{"uuid", "node", "pool", "model", "index", "tflops", "vramBytes",
 *              "allocatedTflops", "allocatedVramBytes", "utilizationPercent" (live, optional),
 *              "memoryUsedBytes" (optional), "present", "isolation"}],
 *    "nodes": [{"name", "pool", "phase"}]            (optional: else derived from the GPUs)
 *    "pools": [{"name", "phase"}]                    (optional: likewise)
 *    "workloads": [{"name", "namespace", "pool", "qos", "isolation", "gpus": [uuid, ...],
 *                   "tflopsRequest", "tflopsLimit", "vramRequestBytes", "vramLimitBytes",
 *                   "createdMs", "ready", "recommendation" (object or absent), ...}]}
 * Other members are passed through to the answers unchanged.
 *
 * Ownership: functions returning json_object* return new references (caller puts); the
 * inventory passed in is borrowed. Pure apart from the store and provider callbacks;
 * thread-safe when those are.
 */
#ifndef TF_CONSOLE_CONSOLE_H
#define TF_CONSOLE_CONSOLE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TF_CON_NS_MAX 64    /* namespace: a DNS-1123 label */
#define TF_CON_NAME_MAX 254 /* workload: a DNS-1123 subdomain */
#define TF_CON_UUID_MAX 96
#define TF_CON_MIN_RANGE_S 60
#define TF_CON_MAX_RANGE_S (30 * 86400) /* what the local store keeps */
#define TF_CON_MAX_POINTS 2000          /* buckets per series */

/* ---- requests ------------------------------------------------------------------------------ */

enum tf_con_view {
    TF_CON_OVERVIEW,
    TF_CON_GPU,
    TF_CON_WORKLOAD,
    TF_CON_ALERTS,
    TF_CON_EVENTS,
};

struct tf_con_req {
    enum tf_con_view view;
    int64_t range_s; /* how far back from now (default 1 h) */
    int64_t step_s;  /* bucket width of series (default: range / 240 rounded to a nice step) */
    char uuid[TF_CON_UUID_MAX];
    char ns[TF_CON_NS_MAX];
    char name[TF_CON_NAME_MAX];
};

/* Parses a console API request: SUB is the path after "/api/v1/console" ("/overview",
 * "/gpus/UUID", "/workloads/NS/NAME", "/alerts", "/events"); RANGE and STEP the query
 * arguments of those names (NULL when absent): durations as metrics/sqlquery.h reads them
 * ("1h", "1d", "7d", "90 seconds"), range within [1 min, 30 d], step >= 1 s and at most
 * TF_CON_MAX_POINTS buckets. 0, TF_ENOENT (no such view: 404) or TF_EINVAL (ERR names the
 * part). Bounded: never reads past the strings' ends, never writes past OUT. */
int tf_con_req_parse(const char *sub, const char *range, const char *step, struct tf_con_req *out,
                     char *err, size_t errlen);

/* ---- the metrics store --------------------------------------------------------------------- */

/* Runs SQL: 0 with *DOC (caller puts it), *NAMES (array of column names) and *ROWS (array of
 * arrays of values) owned by *DOC; or a TF_E* code with ERR set. A missing table may be
 * reported as an error: views treat a failed query as "no data" and add a warning. */
typedef int (*tf_con_query_fn)(void *arg, const char *sql, json_object **doc, json_object **names,
                               json_object **rows, char *err, size_t errlen);

struct tf_con_store {
    tf_con_query_fn query; /* NULL: no metrics store (no history) */
    void *arg;
    const char *why_none; /* when QUERY is NULL: why (shown to the user) */
    /* tf_worker_resources rows hold a workload's resources summed over its GPUs (the local
     * hypervisor) rather than per GPU (tf-controller): divided by gpu_count. */
    bool resources_summed;
};

/* ---- views (each a new JSON object; NULL only when out of memory) -------------------------- */

/* Pools, nodes, GPUs and workloads with capacity, allocation and their use over the range
 * (seed 002 step 1 as figures), and the requested-but-unused totals. */
json_object *tf_con_overview(const struct tf_con_req *r, json_object *inv,
                             const struct tf_con_store *st);
/* One GPU: its inventory entry, its workloads, utilisation and VRAM over time (overall and
 * per workload). *STATUS is 200, or 404 when the inventory has no such GPU and the store no
 * rows of it. */
json_object *tf_con_gpu(const struct tf_con_req *r, json_object *inv, const struct tf_con_store *st,
                        int *status);
/* One workload: request, limit and usage over time, throttling, the recommendation. */
json_object *tf_con_workload(const struct tf_con_req *r, json_object *inv,
                             const struct tf_con_store *st, int *status);
/* Events recorded in the store's tf_events table over the range, newest first. */
json_object *tf_con_store_events(const struct tf_con_req *r, const struct tf_con_store *st);

/* ---- dispatch ------------------------------------------------------------------------------ */

struct tf_con_provider {
    /* The inventory now (a new object). */
    json_object *(*inventory)(void *arg);
    struct tf_con_store store;
    /* {"source": ..., "alerts": [...]} (a new object); NULL: the console reports none. */
    json_object *(*alerts)(void *arg, const struct tf_con_req *r);
    /* {"events": [...]} (a new object); NULL: the store's tf_events table. */
    json_object *(*events)(void *arg, const struct tf_con_req *r);
    void *arg;
};

/* Answers METHOD SUB (see tf_con_req_parse) with RANGE / STEP: the HTTP status and *OUT (a new
 * object, an {"error": ...} one on failure). Only GET and HEAD are allowed (405): the console
 * is read-only. */
int tf_con_api(const struct tf_con_provider *p, const char *method, const char *sub,
               const char *range, const char *step, json_object **out);

/* Whether AUTH (an Authorization header value, may be NULL) is "Bearer TOKEN", compared in
 * constant time. */
bool tf_con_bearer_ok(const char *auth, const char *token);

/* ---- pages --------------------------------------------------------------------------------- */

struct tf_con_asset {
    const char *path;  /* "/console/app.js" */
    const char *ctype; /* "text/javascript; charset=utf-8" */
    const unsigned char *data;
    size_t len;
    const char *etag; /* quoted content hash */
};

/* The page asset for URL PATH ("/console/" and "/console" give index.html), or NULL. */
const struct tf_con_asset *tf_con_asset_find(const char *path);

/* Response headers every console page and answer carries (a NULL-terminated list of name,
 * value pairs): a content security policy allowing only the server's own scripts and styles
 * and no framing, nosniff, no referrer. */
extern const char *const tf_con_headers[];

#endif
