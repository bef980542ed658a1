/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-controller: the Kubernetes side of TensorFusion in one leader-elected binary (mutating
 * webhook, scheduler extender, reconcilers). Flags map onto tf_controller_opts; the API
 * connection comes from --kubeconfig / --server or, by default, the pod's service account
 * (controller/k8s/flags.h, shared with tf-hypervisor --kubernetes).
 */
#include "common/err.h"
#include "common/log.h"
#include "controller/controller.h"
#include "controller/k8s/client.h"
#include "controller/k8s/flags.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_bool stop;

static void on_signal(int sig)
{
    (void)sig;
    atomic_store(&stop, true);
}

static void usage(FILE *f)
{
    fputs("usage: tf-controller [options]\n" TF_K8S_FLAGS_USAGE
          "  --namespace NS         the controller's namespace (default tensor-fusion-sys)\n"
          "  --service NAME         its Service, for certificate SANs (default tensor-fusion)\n"
          "  --config FILE          controller config (defaultPool, images, autoMigration)\n"
          "  --webhook-port N       HTTPS port: webhook + scheduler extender (default 9443)\n"
          "  --http-port N          HTTP port: /healthz /readyz /api/connection, the web console\n"
          "                         (/console/, /api/v1/console/; default 8080)\n"
          "  --bind ADDR            listen address (default 0.0.0.0)\n"
          "  --cert-dir DIR         mounted tls.crt/tls.key/ca.crt (reloaded on change)\n"
          "  --cert-secret NAME     Secret for generated certificates (default tensor-fusion-tls)\n"
          "  --webhook-config NAME  MutatingWebhookConfiguration whose caBundle to set\n"
          "  --extra-san NAME       extra certificate SAN (IP or DNS name)\n"
          "  --identity NAME        leader-election identity (default $POD_NAME)\n"
          "  --system-user NAME     the controller's own API username, the only one allowed to\n"
          "                         write system annotations (default\n"
          "                         system:serviceaccount:<namespace>:tensor-fusion)\n"
          "  --resync-ms N          reconcile period (default 5000)\n"
          "  --lease-seconds N      leader lease duration (default 15)\n"
          "  --port-file FILE       write the bound ports there (tests)\n"
          "  --log-level LEVEL      error|warn|info|debug|trace\n"
          "  --enable-auto-scale    run the workload autoscaler (docs/efficiency.md)\n"
          "  --autoscale-interval-ms N  evaluation interval without autoScalingConfig.interval\n"
          "                         (default 30000)\n"
          "  --metrics-url URL      GreptimeDB (http://greptimedb:4000): usage history for the\n"
          "                         autoscaler and alerts; the controller's metric tables\n"
          "  --metrics-db NAME      its database (default public)\n"
          "  --metrics-interval-ms N  how often the metric tables are written (default 60000)\n"
          "  --enable-alert         evaluate the config's alertRules on GreptimeDB\n"
          "  --alertmanager-url URL where alerts go (Alertmanager API v2)\n"
          "  --zoneinfo DIR         time zones for defrag schedules (default /usr/share/zoneinfo)\n"
          "  --clock-offset-ms N    shift the planners' clock by N ms (testing only)\n",
          f);
}

int main(int argc, char **argv)
{
    struct tf_controller_opts o = {.namespace = "tensor-fusion-sys",
                                   .service = "tensor-fusion",
                                   .cert_secret = "tensor-fusion-tls",
                                   .webhook_port = 9443,
                                   .http_port = 8080,
                                   .identity = getenv("POD_NAME")};
    struct tf_k8s_flags api = {0};
    enum {
        KUBECONFIG = 256,
        CONTEXT,
        SERVER,
        NAMESPACE,
        SERVICE,
        CONFIG,
        WPORT,
        HPORT,
        BIND,
        CERTDIR,
        CERTSECRET,
        WEBHOOKCFG,
        EXTRASAN,
        IDENTITY,
        SYSUSER,
        RESYNC,
        LEASE,
        PORTFILE,
        LOGLEVEL,
        AUTOSCALE,
        ASINTERVAL,
        METRICSURL,
        METRICSDB,
        METRICSINTERVAL,
        ALERT,
        AMURL,
        ZONEINFO,
        CLOCKOFFSET,
        HELP
    };
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, KUBECONFIG},
        {"context", required_argument, NULL, CONTEXT},
        {"server", required_argument, NULL, SERVER},
        {"namespace", required_argument, NULL, NAMESPACE},
        {"service", required_argument, NULL, SERVICE},
        {"config", required_argument, NULL, CONFIG},
        {"webhook-port", required_argument, NULL, WPORT},
        {"http-port", required_argument, NULL, HPORT},
        {"bind", required_argument, NULL, BIND},
        {"cert-dir", required_argument, NULL, CERTDIR},
        {"cert-secret", required_argument, NULL, CERTSECRET},
        {"webhook-config", required_argument, NULL, WEBHOOKCFG},
        {"extra-san", required_argument, NULL, EXTRASAN},
        {"identity", required_argument, NULL, IDENTITY},
        {"system-user", required_argument, NULL, SYSUSER},
        {"resync-ms", required_argument, NULL, RESYNC},
        {"lease-seconds", required_argument, NULL, LEASE},
        {"port-file", required_argument, NULL, PORTFILE},
        {"log-level", required_argument, NULL, LOGLEVEL},
        {"enable-auto-scale", no_argument, NULL, AUTOSCALE},
        {"autoscale-interval-ms", required_argument, NULL, ASINTERVAL},
        {"metrics-url", required_argument, NULL, METRICSURL},
        {"metrics-db", required_argument, NULL, METRICSDB},
        {"metrics-interval-ms", required_argument, NULL, METRICSINTERVAL},
        {"enable-alert", no_argument, NULL, ALERT},
        {"alertmanager-url", required_argument, NULL, AMURL},
        {"zoneinfo", required_argument, NULL, ZONEINFO},
        {"clock-offset-ms", required_argument, NULL, CLOCKOFFSET},
        {"help", no_argument, NULL, HELP},
        {NULL, 0, NULL, 0}};
    int ch;
    enum tf_log_level lvl;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case KUBECONFIG:
            api.kubeconfig = optarg;
            break;
        case CONTEXT:
            api.context = optarg;
            break;
        case SERVER:
            api.server = optarg;
            break;
        case NAMESPACE:
            o.namespace = optarg;
            break;
        case SERVICE:
            o.service = optarg;
            break;
        case CONFIG:
            o.config_file = optarg;
            break;
        case WPORT:
            o.webhook_port = (uint16_t)atoi(optarg);
            break;
        case HPORT:
            o.http_port = (uint16_t)atoi(optarg);
            break;
        case BIND:
            o.bind_addr = optarg;
            break;
        case CERTDIR:
            o.cert_dir = optarg;
            break;
        case CERTSECRET:
            o.cert_secret = optarg;
            break;
        case WEBHOOKCFG:
            o.webhook_config = optarg;
            break;
        case EXTRASAN:
            o.extra_san = optarg;
            break;
        case IDENTITY:
            o.identity = optarg;
            break;
        case SYSUSER:
            o.system_user = optarg;
            break;
        case RESYNC:
            o.resync_ms = atoi(optarg);
            break;
        case LEASE:
            o.lease_duration_s = atoi(optarg);
            break;
        case PORTFILE:
            o.port_file = optarg;
            break;
        case LOGLEVEL:
            if (tf_log_parse_level(optarg, &lvl)) {
                fprintf(stderr, "tf-controller: --log-level: unknown level \"%s\"\n", optarg);
                return 2;
            }
            tf_log_set_level(lvl);
            break;
        case AUTOSCALE:
            o.autoscale = true;
            break;
        case ASINTERVAL:
            o.autoscale_interval_ms = atoi(optarg);
            break;
        case METRICSURL:
            o.metrics_url = optarg;
            break;
        case METRICSDB:
            o.metrics_db = optarg;
            break;
        case METRICSINTERVAL:
            o.metrics_interval_ms = atoi(optarg);
            if (o.metrics_interval_ms < 100) {
                fprintf(stderr, "tf-controller: --metrics-interval-ms: \"%s\" is below 100\n",
                        optarg);
                return 2;
            }
            break;
        case ALERT:
            o.alerts = true;
            break;
        case AMURL:
            o.alertmanager_url = optarg;
            break;
        case ZONEINFO:
            o.zoneinfo_dir = optarg;
            break;
        case CLOCKOFFSET:
            o.clock_offset_ms = strtoll(optarg, NULL, 10);
            break;
        case HELP:
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (o.alerts && (!o.alertmanager_url || !o.metrics_url)) {
        fprintf(stderr, "tf-controller: --enable-alert needs --alertmanager-url and --metrics-url "
                        "(rules are evaluated on GreptimeDB)\n");
        return 2;
    }
    if (!o.alerts && o.alertmanager_url) {
        fprintf(stderr, "tf-controller: --alertmanager-url without --enable-alert\n");
        return 2;
    }
    struct tf_k8s_config cfg;
    char err[512];
    int rc = tf_k8s_flags_config(&api, &cfg, err, sizeof(err));
    if (rc) {
        fprintf(stderr, "tf-controller: %s\n", err);
        return 1;
    }
    struct tf_k8s_client *c = tf_k8s_client_new(&cfg);
    tf_k8s_config_free(&cfg);
    if (!c) {
        fprintf(stderr, "tf-controller: cannot create the API client\n");
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    rc = tf_controller_run(c, &o, &stop);
    tf_k8s_client_destroy(c);
    if (rc)
        fprintf(stderr, "tf-controller: start-up failed: %s\n", tf_strerror(rc));
    return rc ? 1 : 0;
}
