/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to tf-controller's wiring (controller.c, controller_env.c): its state, and the
 * webhook's view of the cluster through the controller's informers. Not a public header.
 */
#ifndef TF_CONTROLLER_CONTROLLER_INT_H
#define TF_CONTROLLER_CONTROLLER_INT_H

#include "controller/alerts.h"
#include "controller/allocsig.h"
#include "controller/console.h"
#include "controller/controller.h"
#include "controller/ctlmetrics.h"
#include "controller/efficiency.h"
#include "controller/extender.h"
#include "controller/https.h"
#include "controller/k8s/informer.h"
#include "controller/leader.h"
#include "controller/podidx.h"
#include "controller/reconcile.h"
#include "controller/tls.h"
#include "controller/webhook.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

struct ctl {
    struct tf_k8s_client *c;
    const struct tf_controller_opts *o;
    struct tf_informer *pods, *namespaces, *profiles, *pools, *replicasets, *clusters, *gpus,
        *gpunodes, *workloads, *connections, *quotas, *templates, *nodes, *pdbs, *priorities,
        *providers, *claims, *nodeclasses, *leases;
    struct tf_extender *ext;
    struct tf_efficiency *eff;
    struct tf_ctlmetrics *metrics;  /* NULL without a metrics URL */
    struct tf_alerts *alerts;       /* NULL without --enable-alert */
    struct tf_ctl_console *console; /* the web console (console.h) */
    json_object *alert_rules;       /* the config's alertRules */
    char *config_text;              /* the config file as last applied */
    char *bad_config_text;          /* a content that failed to load (not retried) */
    pthread_rwlock_t cfg_lock;      /* webhook reviews (read) vs a reload (write) of wh.cfg */
    struct tf_informer_handlers ext_inventory; /* chained behind the pool informer's handlers */
    char policy[32];
    struct tf_webhook wh;
    struct tf_ctl_podidx podidx; /* partitioned pods' indexes (podidx.h) */
    bool wh_ready;
    struct tf_https *https, *http;
    struct tf_leader *leader;
    struct tf_reconciler *rec;
    struct tf_tls_bundle tls;
    time_t cert_mtime;
    bool ca_patched;
    struct tf_allocsig sig; /* the allocation-signature key (allocsig.h) */
};

/* The webhook's environment (webhook.h) over X's informers: cached objects first, the API
 * server for what the caches do not hold yet, pod indexes from X's allocator. */
struct tf_webhook_env tf__ctl_webhook_env(struct ctl *x);

#endif
