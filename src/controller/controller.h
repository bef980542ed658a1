/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-controller as a library: one context that owns the API client, the shared informers,
 * the webhook, the HTTPS server (webhook + scheduler extender) and the plain HTTP server
 * (/healthz, /readyz, /api/connection), leader election and the reconcilers. main.c only
 * parses flags into a tf_controller_opts and runs tf_controller_run.
 *
 * Certificates: with cert_dir, tls.crt/tls.key/ca.crt are read from there and reloaded when
 * they change (cert-manager). Otherwise the Secret cert_secret in the controller's namespace
 * holds them: reused when present and valid for the service, else generated (CA + serving
 * certificate for <service>.<namespace>.svc) and stored. Either way the CA is patched into
 * every webhook of the MutatingWebhookConfiguration webhook_config (retried until it exists).
 *
 * Allocations are signed (allocsig.h) with a key kept in the Secret
 * tensor-fusion-allocation-key of its namespace, made at first start.
 *
 * The elected leader runs the reconcilers (reconcile.h), then the efficiency reconcilers
 * (autoscaling, node compaction, defragmentation: efficiency.h), every resync_ms, and with a
 * metrics URL writes the controller's metric tables (ctlmetrics.h) every metrics interval.
 *
 * Threads: tf_controller_run blocks until *STOP becomes true; everything else runs on the
 * informer, server and elector threads it starts.
 */
#ifndef TF_CONTROLLER_CONTROLLER_H
#define TF_CONTROLLER_CONTROLLER_H

#include "controller/k8s/client.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct tf_controller_opts {
    const char *namespace;      /* where the controller runs (excluded by the webhook) */
    const char *service;        /* its Service name (certificate SANs) */
    const char *identity;       /* leader-election identity (pod name) */
    const char *config_file;    /* YAML: defaultPool, images, shmDir, autoMigration; or NULL */
    const char *cert_dir;       /* mounted certificates, or NULL */
    const char *cert_secret;    /* Secret for generated certificates (default tensor-fusion-tls) */
    const char *webhook_config; /* MutatingWebhookConfiguration to patch, or NULL */
    const char *bind_addr;      /* default 0.0.0.0 */
    const char *extra_san;      /* an extra IP/DNS SAN (tests: 127.0.0.1), or NULL */
    uint16_t webhook_port;      /* HTTPS: webhook + extender (default 9443; 0 = any) */
    uint16_t http_port;         /* HTTP: health, readiness, connection API (default 8080) */
    const char *controller_url; /* what remote clients query; default from service/namespace */
    int resync_ms;              /* reconcile period (default 5000) */
    int lease_duration_s;       /* leader election (default 15) */
    const char *port_file;      /* when set, "WEBHOOK_PORT HTTP_PORT\n" is written there */
    /* The controller's own username in the API server, the only identity the webhook lets
     * write system annotations (sysguard.h); NULL: system:serviceaccount:<namespace>:
     * tensor-fusion (the chart's service account). */
    const char *system_user;
    /* Efficiency reconcilers (efficiency.h). */
    bool autoscale;               /* --enable-auto-scale */
    int autoscale_interval_ms;    /* default evaluation interval (default 30000) */
    const char *metrics_url;      /* GreptimeDB base URL: usage history, metric writes; or NULL */
    const char *metrics_db;       /* GreptimeDB database (default public) */
    int metrics_interval_ms;      /* controller metric tables (ctlmetrics.h; default 60000) */
    bool alerts;                  /* --enable-alert: evaluate the config's alertRules */
    const char *alertmanager_url; /* where alerts go (alerts.h) */
    const char *zoneinfo_dir; /* time zones for defrag schedules (default /usr/share/zoneinfo) */
    int64_t clock_offset_ms;  /* shifts the planners' clock (tests only) */
};

/* Runs the controller with client C until *STOP. Returns 0 on a clean stop or a TF_E* code
 * when start-up fails (message logged). */
int tf_controller_run(struct tf_k8s_client *c, const struct tf_controller_opts *o,
                      atomic_bool *stop);

#endif
