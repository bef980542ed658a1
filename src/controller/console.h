/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-controller's web console (docs/console.md): the pages at /console/ and their JSON API at
 * /api/v1/console/ on the controller's plain HTTP port, over every pool of the cluster.
 *
 *   inventory  the informer caches: GPU objects (capacity, available, node, pool, model),
 *              GPUNodes and GPUPools (phases), the pods holding GPUs (grouped by workload,
 *              their per-GPU requests and limits as tf_worker_resources has them, see
 *              ctlmetrics.h) and the TensorFusionWorkloads (status.recommendation);
 *   history    GreptimeDB's SQL API (--metrics-url; greptime.h), the tables the hypervisors
 *              and the controller write;
 *   alerts     what Alertmanager holds for job="tensor-fusion" (--alertmanager-url);
 *   events     the Events tf-controller and tf-scheduler recorded (compaction, defrag runs
 *              and evictions, autoscaling, refused allocations), listed from the API server
 *              (Kubernetes keeps them for its event TTL, one hour by default).
 *
 * Authentication: the pages are public (no data, no secret); the API needs
 * "Authorization: Bearer <token>" with the token in the Secret tensor-fusion-console-token
 * (data.token) of the controller's namespace, made at first use (random, hex). Whoever can
 * read Secrets there can read the console. Read-only.
 *
 * Threads: tf_ctl_console_handle runs on the HTTP server's threads; all functions are
 * thread-safe. Ownership: the console copies the option strings; informers are borrowed and
 * must outlive it; tf_ctl_console_destroy accepts NULL.
 */
#ifndef TF_CONTROLLER_CONSOLE_H
#define TF_CONTROLLER_CONSOLE_H

#include "controller/https.h"
#include "controller/k8s/client.h"
#include "controller/k8s/informer.h"

#include <json-c/json.h>
#include <stdbool.h>

#define TF_CONSOLE_SECRET "tensor-fusion-console-token"
#define TF_CONSOLE_SECRET_KEY "token"

struct tf_ctl_console_opts {
    struct tf_k8s_client *c;
    const char *namespace;        /* the controller's: where the token Secret lives */
    const char *default_pool;     /* pool of GPUs without the pool label */
    const char *metrics_url;      /* GreptimeDB base URL, or NULL: no history */
    const char *metrics_db;       /* NULL: public */
    const char *alertmanager_url; /* or NULL: the alerts page says alerts are off */
    struct tf_informer *pods, *gpus, *gpunodes, *pools, *workloads;
};

struct tf_ctl_console;

/* NULL on allocation failure. */
struct tf_ctl_console *tf_ctl_console_new(const struct tf_ctl_console_opts *o);
void tf_ctl_console_destroy(struct tf_ctl_console *con);

/* Answers REQ when it is a console path ("/", "/console", "/console/...",
 * "/api/v1/console/..."): true with RESP filled; false for any other path. */
bool tf_ctl_console_handle(struct tf_ctl_console *con, const struct tf_http_req *req,
                           struct tf_http_resp *resp);

/* The inventory (src/console/console.h) of the cluster from arrays of objects (borrowed; any
 * may be NULL). Pure. */
json_object *tf_ctl_console_inventory(json_object *pods, json_object *gpus, json_object *gpunodes,
                                      json_object *pools, json_object *workloads,
                                      const char *default_pool);

#endif
