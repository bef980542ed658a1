/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-controller wiring (see controller.h): config, certificates, informers, servers, leader
 * election and the reconcile loop; the webhook's environment is in controller_env.c.
 */
#include "controller/controller_int.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/alerts.h"
#include "controller/console.h"
#include "controller/podidx.h"
#include "controller/allocsig.h"
#include "controller/base64.h"
#include "controller/ctlmetrics.h"
#include "controller/efficiency.h"
#include "controller/extender.h"
#include "controller/https.h"
#include "controller/k8s/informer.h"
#include "controller/k8s/secret.h"
#include "controller/leader.h"
#include "controller/reconcile.h"
#include "controller/tls.h"
#include "controller/webhook.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* ---- configuration -------------------------------------------------------------------------- */

static void set_opt(char **dst, json_object *cfg, const char *key)
{
    const char *v = tf_json_str(cfg, key, NULL);
    if (v) {
        free(*dst);
        *dst = strdup(v);
    }
}

/* The config file's text (at most 1 MiB), or NULL with ERR set. */
static char *read_config(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        tf_errf(err, errlen, "cannot open config file %s", path);
        return NULL;
    }
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    if (buf)
        n = fread(buf, 1, cap, f);
    bool more = buf && fgetc(f) != EOF;
    fclose(f);
    if (!buf || more) {
        free(buf);
        tf_errf(err, errlen, "config file %s: %s", path, buf ? "larger than 1 MiB" : "no memory");
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* Parses TEXT (NULL: no file) into WC (initialised here), *POLICY and *RULES (new reference or
 * NULL). 0, or a TF_E* code with ERR set. */
static int parse_config(struct ctl *x, const char *text, struct tf_webhook_config *wc, char *policy,
                        size_t policylen, json_object **rules, char *err, size_t errlen)
{
    *rules = NULL;
    int rc = tf_webhook_config_init(wc);
    if (rc)
        return rc;
    free(wc->own_namespace);
    wc->own_namespace = strdup(x->o->namespace);
    if (x->o->system_user)
        wc->system_user = strdup(x->o->system_user);
    char url[512];
    if (x->o->controller_url)
        snprintf(url, sizeof(url), "%s", x->o->controller_url);
    else
        snprintf(url, sizeof(url), "http://%s.%s.svc:%u", x->o->service, x->o->namespace,
                 x->o->http_port ? x->o->http_port : 8080);
    free(wc->controller_url);
    wc->controller_url = strdup(url);
    if (!text)
        return 0;
    json_object *docs = NULL;
    if ((rc = tf_yaml_to_json(text, strlen(text), &docs, err, errlen)))
        return rc;
    json_object *cfg = json_object_array_get_idx(docs, 0);
    set_opt(&wc->default_pool, cfg, "defaultPool");
    set_opt(&wc->limiter_image, cfg, "limiterImage");
    set_opt(&wc->client_image, cfg, "clientImage");
    set_opt(&wc->worker_image, cfg, "workerImage");
    set_opt(&wc->shm_host_dir, cfg, "shmDir");
    set_opt(&wc->priority_class_high, cfg, "priorityClassHigh");
    set_opt(&wc->priority_class_critical, cfg, "priorityClassCritical");
    *rules = json_object_get(tf_json_path(cfg, "alertRules", NULL));
    const char *pol = tf_json_str(cfg, "isolationModePolicy", NULL);
    if (pol)
        tf_strlcpy(policy, pol, policylen);
    rc = tf_webhook_config_automigration(wc, tf_json_path(cfg, "autoMigration", NULL), err, errlen);
    json_object_put(docs);
    if (rc) {
        json_object_put(*rules);
        *rules = NULL;
    }
    return rc;
}

static int load_config(struct ctl *x, struct tf_webhook_config *wc)
{
    char err[512];
    char *text = NULL;
    if (x->o->config_file && !(text = read_config(x->o->config_file, err, sizeof(err)))) {
        tf_log(TF_LOG_ERROR, "controller", "%s", err);
        return TF_ENOENT;
    }
    int rc =
        parse_config(x, text, wc, x->policy, sizeof(x->policy), &x->alert_rules, err, sizeof(err));
    if (rc) {
        tf_log(TF_LOG_ERROR, "controller", "config file=%s: %s", x->o->config_file, err);
        free(text);
        return rc;
    }
    x->config_text = text;
    return 0;
}

/* Keeps WANT's value of a key that cannot change while running (the extender, reconcilers and
 * node agents use it) at HAVE's, with a warning. */
static void keep_running(const char *key, char **want, const char *have)
{
    if (*want && have && strcmp(*want, have) != 0) {
        tf_log(TF_LOG_WARN, "controller",
               "config: %s changed from \"%s\" to \"%s\": takes effect after a restart", key, have,
               *want);
        free(*want);
        *want = strdup(have);
    }
}

/* Rereads the config file when its content changed (a ConfigMap update, helm upgrade) and
 * applies it without a restart: the webhook's settings (autoMigration, limiter and client
 * images, PriorityClasses) and the alert rules. An invalid file keeps the running
 * configuration (logged once per content). */
static void reload_config(struct ctl *x)
{
    if (!x->o->config_file)
        return;
    char err[512];
    char *text = read_config(x->o->config_file, err, sizeof(err));
    if (!text || (x->config_text && strcmp(text, x->config_text) == 0) ||
        (x->bad_config_text && strcmp(text, x->bad_config_text) == 0)) {
        free(text);
        return;
    }
    struct tf_webhook_config wc;
    char policy[32] = "";
    json_object *rules = NULL;
    int rc = parse_config(x, text, &wc, policy, sizeof(policy), &rules, err, sizeof(err));
    if (rc == 0 && x->alerts)
        rc = tf_alerts_set_rules(x->alerts, rules, err, sizeof(err));
    if (rc) {
        tf_log(TF_LOG_ERROR, "controller",
               "config file=%s changed but is invalid, the running configuration stays: %s",
               x->o->config_file, err);
        tf_webhook_config_free(&wc);
        json_object_put(rules);
        free(x->bad_config_text);
        x->bad_config_text = text;
        return;
    }
    keep_running("defaultPool", &wc.default_pool, x->wh.cfg.default_pool);
    keep_running("shmDir", &wc.shm_host_dir, x->wh.cfg.shm_host_dir);
    keep_running("workerImage", &wc.worker_image, x->wh.cfg.worker_image);
    if (policy[0] && strcmp(policy, x->policy[0] ? x->policy : "dynamic") != 0)
        tf_log(TF_LOG_WARN, "controller",
               "config: isolationModePolicy changed to \"%s\": takes effect after a restart",
               policy);
    pthread_rwlock_wrlock(&x->cfg_lock);
    struct tf_webhook_config old = x->wh.cfg;
    x->wh.cfg = wc;
    pthread_rwlock_unlock(&x->cfg_lock);
    tf_webhook_config_free(&old);
    json_object_put(x->alert_rules);
    x->alert_rules = rules;
    free(x->config_text);
    x->config_text = text;
    free(x->bad_config_text);
    x->bad_config_text = NULL;
    tf_log(TF_LOG_INFO, "controller", "configuration reloaded from %s (autoMigration %s)",
           x->o->config_file, x->wh.cfg.auto_migration.enable ? "on" : "off");
}

/* ---- certificates --------------------------------------------------------------------------- */

static int cert_bootstrap(struct ctl *x)
{
    char err[512];
    const char *secret = x->o->cert_secret ? x->o->cert_secret : "tensor-fusion-tls";
    if (x->o->cert_dir) {
        char crt[1024], key[1024], ca[1024];
        snprintf(crt, sizeof(crt), "%s/tls.crt", x->o->cert_dir);
        snprintf(key, sizeof(key), "%s/tls.key", x->o->cert_dir);
        snprintf(ca, sizeof(ca), "%s/ca.crt", x->o->cert_dir);
        int rc = tf_tls_load_files(crt, key, ca, &x->tls, &x->cert_mtime, err, sizeof(err));
        if (rc)
            tf_log(TF_LOG_ERROR, "controller", "mounted certificates: %s", err);
        return rc;
    }
    json_object *sec = NULL;
    if (tf_k8s_get(x->c, &tf_k8s_secrets, x->o->namespace, secret, &sec, err, sizeof(err)) == 0) {
        const char *keys[3] = {"ca.crt", "tls.crt", "tls.key"};
        char *vals[3] = {NULL, NULL, NULL};
        for (int i = 0; i < 3; i++) {
            const char *b = tf_json_str(sec, "data", keys[i], NULL);
            vals[i] = b ? tf_base64_decode(b, NULL) : NULL;
        }
        json_object_put(sec);
        if (vals[0] && vals[1] && vals[2]) {
            x->tls.ca_pem = vals[0];
            x->tls.cert_pem = vals[1];
            x->tls.key_pem = vals[2];
            tf_log(TF_LOG_INFO, "controller", "using certificates from secret=%s/%s",
                   x->o->namespace, secret);
            return 0;
        }
        for (int i = 0; i < 3; i++)
            free(vals[i]);
    }
    const char *extra[1] = {x->o->extra_san};
    int rc = tf_tls_generate(x->o->service, x->o->namespace, extra, x->o->extra_san ? 1 : 0, 3650,
                             &x->tls, err, sizeof(err));
    if (rc) {
        tf_log(TF_LOG_ERROR, "controller", "%s", err);
        return rc;
    }
    json_object *s = json_object_new_object(), *meta = json_object_new_object(),
                *data = json_object_new_object();
    json_object_object_add(s, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(s, "kind", json_object_new_string("Secret"));
    json_object_object_add(meta, "name", json_object_new_string(secret));
    json_object_object_add(meta, "namespace", json_object_new_string(x->o->namespace));
    json_object_object_add(s, "metadata", meta);
    json_object_object_add(s, "type", json_object_new_string("kubernetes.io/tls"));
    const char *pems[3] = {x->tls.ca_pem, x->tls.cert_pem, x->tls.key_pem};
    const char *keys[3] = {"ca.crt", "tls.crt", "tls.key"};
    for (int i = 0; i < 3; i++) {
        char *b = tf_base64_encode(pems[i], strlen(pems[i]));
        json_object_object_add(data, keys[i], json_object_new_string(b ? b : ""));
        free(b);
    }
    json_object_object_add(s, "data", data);
    rc = tf_k8s_create(x->c, &tf_k8s_secrets, x->o->namespace, s, NULL, err, sizeof(err));
    json_object_put(s);
    if (rc == TF_EEXIST) {
        /* Another replica won the race: use its certificates so the caBundle agrees. */
        tf_tls_bundle_free(&x->tls);
        return cert_bootstrap(x);
    }
    if (rc)
        tf_log(TF_LOG_WARN, "controller", "cannot store certificates in secret %s: %s", secret,
               err);
    else
        tf_log(TF_LOG_INFO, "controller", "generated CA and serving certificate secret=%s/%s",
               x->o->namespace, secret);
    return 0;
}

/* ---- the allocation-signature key -------------------------------------------------------- */

/* Reads the key from the Secret TF_ALLOCSIG_SECRET in the controller's namespace or, when
 * there is none, makes it (32 random bytes); a replica that loses the race to create it reads
 * the winner's, so all replicas sign alike. */
static int allocsig_bootstrap(struct ctl *x)
{
    char err[512], *raw = NULL;
    size_t n = 0;
    const char *ns = x->o->namespace;
    int rc = tf_k8s_secret_ensure(x->c, ns, TF_ALLOCSIG_SECRET, TF_ALLOCSIG_SECRET_KEY, 32, false,
                                  &raw, &n, err, sizeof(err));
    if (rc) {
        tf_log(TF_LOG_ERROR, "controller", "allocation key: %s", err);
        return rc;
    }
    rc = tf_allocsig_init(&x->sig, raw, n);
    memset(raw, 0, n);
    free(raw);
    if (rc)
        tf_log(TF_LOG_ERROR, "controller", "secret %s/%s: data.%s must hold %d..%d bytes (base64)",
               ns, TF_ALLOCSIG_SECRET, TF_ALLOCSIG_SECRET_KEY, TF_ALLOCSIG_KEY_MIN,
               TF_ALLOCSIG_KEY_MAX);
    return rc;
}

static int set_ca(json_object *mwc, void *arg)
{
    const char *b64 = arg;
    json_object *hooks = tf_json_path(mwc, "webhooks", NULL);
    bool changed = false;
    for (size_t i = 0; hooks && i < json_object_array_length(hooks); i++) {
        json_object *cc = tf_json_path(json_object_array_get_idx(hooks, i), "clientConfig", NULL);
        if (!cc)
            continue;
        const char *cur = tf_json_str(cc, "caBundle", NULL);
        if (!cur || strcmp(cur, b64) != 0) {
            json_object_object_add(cc, "caBundle", json_object_new_string(b64));
            changed = true;
        }
    }
    return changed ? 0 : 1;
}

static void patch_ca_bundle(struct ctl *x)
{
    if (x->ca_patched || !x->o->webhook_config || !x->tls.ca_pem)
        return;
    char err[256];
    char *b64 = tf_base64_encode(x->tls.ca_pem, strlen(x->tls.ca_pem));
    json_object *out = NULL;
    int rc = tf_k8s_update_retry(x->c, &tf_k8s_mutatingwebhookconfigurations, NULL,
                                 x->o->webhook_config, NULL, set_ca, b64, &out, err, sizeof(err));
    free(b64);
    if (rc == 0) {
        x->ca_patched = true;
        tf_log(TF_LOG_INFO, "controller", "caBundle set on MutatingWebhookConfiguration %s",
               x->o->webhook_config);
        if (out)
            tf_k8s_event(x->c, out, "Normal", "CABundleUpdated",
                         "tf-controller installed its CA in the webhook configuration",
                         "tf-controller");
    } else if (rc != TF_ENOENT) {
        tf_log(TF_LOG_WARN, "controller", "caBundle patch failed: %s", err);
    }
    json_object_put(out);
}

static void reload_certs(struct ctl *x)
{
    if (!x->o->cert_dir)
        return;
    char crt[1024], key[1024], ca[1024], err[256];
    snprintf(crt, sizeof(crt), "%s/tls.crt", x->o->cert_dir);
    snprintf(key, sizeof(key), "%s/tls.key", x->o->cert_dir);
    snprintf(ca, sizeof(ca), "%s/ca.crt", x->o->cert_dir);
    time_t mt = tf_tls_files_mtime(crt, key);
    if (!mt || mt == x->cert_mtime)
        return;
    struct tf_tls_bundle b;
    time_t got = 0;
    if (tf_tls_load_files(crt, key, ca, &b, &got, err, sizeof(err)) ||
        tf_https_reload(x->https, b.cert_pem, b.key_pem, err, sizeof(err))) {
        tf_log(TF_LOG_WARN, "controller", "certificate reload failed: %s", err);
        if (b.cert_pem)
            tf_tls_bundle_free(&b);
        x->cert_mtime = mt; /* do not retry a broken pair every tick */
        return;
    }
    bool ca_changed = !x->tls.ca_pem || !b.ca_pem || strcmp(x->tls.ca_pem, b.ca_pem) != 0;
    tf_tls_bundle_free(&x->tls);
    x->tls = b;
    x->cert_mtime = got;
    if (ca_changed)
        x->ca_patched = false;
}

/* ---- HTTP handlers -------------------------------------------------------------------------- */

static char *json_msg(const char *key, const char *msg)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, key, json_object_new_string(msg));
    char *s = strdup(
        json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(o);
    return s;
}

static void https_handler(const struct tf_http_req *req, struct tf_http_resp *resp, void *arg)
{
    struct ctl *x = arg;
    if (tf_extender_handle(x->ext, req, resp))
        return;
    if (strcmp(req->path, "/mutate-v1-pod") == 0 && strcmp(req->method, "POST") == 0) {
        pthread_rwlock_rdlock(&x->cfg_lock);
        resp->body = tf_webhook_handle(&x->wh, req->body, req->body_len, &resp->status);
        pthread_rwlock_unlock(&x->cfg_lock);
        if (resp->status != 200)
            resp->content_type = "text/plain";
        return;
    }
    resp->status = 404;
    resp->body = json_msg("error", "no such endpoint");
}

static void http_handler(const struct tf_http_req *req, struct tf_http_resp *resp, void *arg)
{
    struct ctl *x = arg;
    if (tf_ctl_console_handle(x->console, req, resp))
        return;
    if (strcmp(req->path, "/healthz") == 0) {
        resp->body = strdup("ok\n");
        resp->content_type = "text/plain";
        return;
    }
    if (strcmp(req->path, "/readyz") == 0) {
        /* Only the leader is ready: the Service then routes the webhook and the extender to
         * the one replica that owns the allocation state. */
        bool ready = tf_leader_is_leader(x->leader) && tf_informer_synced(x->pods) &&
                     tf_informer_synced(x->pools);
        resp->status = ready ? 200 : 503;
        resp->body = strdup(ready ? "ready\n" : "standby\n");
        resp->content_type = "text/plain";
        return;
    }
    if (strcmp(req->path, "/metrics") == 0) {
        /* The controller's own health: its metric writes and alert deliveries. */
        struct tf_dynbuf b;
        tf_dynbuf_init(&b, 1 << 16);
        tf_dynbuf_addf(&b,
                       "# HELP tf_controller_leader 1 while this replica leads\n"
                       "# TYPE tf_controller_leader gauge\ntf_controller_leader %d\n",
                       tf_leader_is_leader(x->leader) ? 1 : 0);
        if (x->metrics) {
            struct tf_metrics_sink_stats st;
            tf_ctlmetrics_stats(x->metrics, &st);
            tf_metrics_sink_stats_prom(&st, &b);
        }
        uint64_t ev_ok = 0, ev_failed = 0, ev_dropped = 0;
        tf_extender_event_stats(x->ext, &ev_ok, &ev_failed, &ev_dropped);
        tf_dynbuf_addf(&b,
                       "# HELP tf_events_total Events the scheduler extender recorded, by result\n"
                       "# TYPE tf_events_total counter\n"
                       "tf_events_total{component=\"tf-scheduler\",result=\"written\"} %llu\n"
                       "tf_events_total{component=\"tf-scheduler\",result=\"failed\"} %llu\n"
                       "tf_events_total{component=\"tf-scheduler\",result=\"dropped\"} %llu\n",
                       (unsigned long long)ev_ok, (unsigned long long)ev_failed,
                       (unsigned long long)ev_dropped);
        if (x->alerts) {
            struct tf_alerts_stats as;
            tf_alerts_stats(x->alerts, &as);
            tf_dynbuf_addf(&b,
                           "# HELP tf_alert_evaluations_total rule evaluations by result\n"
                           "# TYPE tf_alert_evaluations_total counter\n"
                           "tf_alert_evaluations_total{result=\"ok\"} %llu\n"
                           "tf_alert_evaluations_total{result=\"query_failed\"} %llu\n"
                           "# HELP tf_alert_posts_total POSTs to Alertmanager by result\n"
                           "# TYPE tf_alert_posts_total counter\n"
                           "tf_alert_posts_total{result=\"ok\"} %llu\n"
                           "tf_alert_posts_total{result=\"failed\"} %llu\n"
                           "# HELP tf_alerts_firing alert instances firing now\n"
                           "# TYPE tf_alerts_firing gauge\ntf_alerts_firing %zu\n",
                           (unsigned long long)(as.evaluations - as.query_failures),
                           (unsigned long long)as.query_failures,
                           (unsigned long long)(as.posts - as.post_failures),
                           (unsigned long long)as.post_failures, as.firing);
        }
        resp->body = strdup(tf_dynbuf_str(&b));
        resp->content_type = "text/plain; version=0.0.4";
        tf_dynbuf_free(&b);
        return;
    }
    if (strcmp(req->path, "/api/connection") == 0) {
        const char *name = tf_http_query(req, "name");
        const char *ns = tf_http_query(req, "namespace");
        if (!name || !ns) {
            resp->status = 400;
            resp->body = json_msg("error", "name and namespace query parameters are required");
            return;
        }
        char url[256];
        int rc = tf_reconcile_connection_url(x->connections, ns, name, url, sizeof(url));
        if (rc == 0) {
            resp->body = json_msg("workerURL", url);
        } else {
            resp->status = rc == TF_EBUSY ? 503 : 404;
            resp->body = json_msg("error", rc == TF_EBUSY ? "connection not paired with a "
                                                            "worker yet"
                                                          : "no such TensorFusionConnection");
        }
        return;
    }
    resp->status = 404;
    resp->body = json_msg("error", "no such endpoint");
}

/* ---- run ------------------------------------------------------------------------------------ */

static struct tf_informer *informer_h(struct ctl *x, const struct tf_k8s_resource *res,
                                      const struct tf_informer_handlers *h)
{
    struct tf_informer *inf = tf_informer_new(x->c, res, NULL, NULL, NULL, h);
    if (inf)
        tf_informer_start(inf, 300);
    return inf;
}

/* The GPUPool informer feeds the extender (inventory changes) and the compactor (when a
 * manual-compaction value arrived). */
static void pool_add(json_object *o, void *arg)
{
    struct ctl *x = arg;
    x->ext_inventory.on_add(o, x->ext_inventory.arg);
    tf_efficiency_pool_seen(x->eff, o);
}

static void pool_update(json_object *a, json_object *b, void *arg)
{
    struct ctl *x = arg;
    x->ext_inventory.on_update(a, b, x->ext_inventory.arg);
    tf_efficiency_pool_seen(x->eff, b);
}

static void pool_delete(json_object *o, void *arg)
{
    struct ctl *x = arg;
    x->ext_inventory.on_delete(o, x->ext_inventory.arg);
}

static bool alerts_active(void *arg)
{
    return tf_leader_is_leader(((struct ctl *)arg)->leader);
}

static void on_leading(void *arg)
{
    /* Another replica may have bound pods while we stood by: rebuild from the API. */
    tf_extender_invalidate(((struct ctl *)arg)->ext);
}

static struct tf_informer *informer(struct ctl *x, const struct tf_k8s_resource *res)
{
    struct tf_informer *inf = tf_informer_new(x->c, res, NULL, NULL, NULL, NULL);
    if (inf)
        tf_informer_start(inf, 300);
    return inf;
}

static int copy_into(json_object *o, void *arg)
{
    json_object *cp = NULL;
    if (json_object_deep_copy(o, &cp, NULL) == 0)
        json_object_array_add(arg, cp);
    return 0;
}

static json_object *snapshot(struct tf_informer *inf)
{
    json_object *arr = json_object_new_array();
    tf_informer_foreach(inf, copy_into, arr);
    return arr;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The controller's metric tables, when a round is due. */
static void record_metrics(struct ctl *x)
{
    int64_t now = mono_ms();
    if (!tf_ctlmetrics_due(x->metrics, now))
        return;
    struct tf_ctlmetrics_in in = {.pods = snapshot(x->pods),
                                  .gpus = snapshot(x->gpus),
                                  .gpunodes = snapshot(x->gpunodes),
                                  .pools = snapshot(x->pools),
                                  .default_pool = x->wh.cfg.default_pool};
    tf_ctlmetrics_tick(x->metrics, &in, now);
    json_object_put(in.pods);
    json_object_put(in.gpus);
    json_object_put(in.gpunodes);
    json_object_put(in.pools);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int tf_controller_run(struct tf_k8s_client *c, const struct tf_controller_opts *o,
                      atomic_bool *stop)
{
    struct ctl x;
    memset(&x, 0, sizeof(x));
    x.c = c;
    x.o = o;
    pthread_rwlock_init(&x.cfg_lock, NULL);
    int rc = 0;
    char err[512];
    struct tf_webhook_config wc;
    if ((rc = load_config(&x, &wc))) {
        tf_webhook_config_free(&wc);
        return rc;
    }
    if ((rc = cert_bootstrap(&x)) || (rc = allocsig_bootstrap(&x)))
        goto out_cfg;
    x.ext = tf_extender_new(c, wc.default_pool, x.policy[0] ? x.policy : "dynamic");
    if (!x.ext) {
        rc = TF_ENOMEM;
        goto out;
    }
    tf_extender_set_allocsig(x.ext, &x.sig);
    struct tf_efficiency_opts eo = {
        .autoscale = o->autoscale,
        .autoscale_every_ms = o->autoscale_interval_ms > 0 ? o->autoscale_interval_ms : 30000,
        .metrics_url = o->metrics_url,
        .metrics_db = o->metrics_db,
        .zoneinfo_dir = o->zoneinfo_dir,
        .clock_offset_ms = o->clock_offset_ms};
    x.eff = tf_efficiency_new(c, x.ext, &eo);
    if (!x.eff) {
        tf_log(TF_LOG_ERROR, "controller",
               "cannot set up the efficiency reconcilers (metrics "
               "URL %s)",
               o->metrics_url ? o->metrics_url : "none");
        rc = TF_EINVAL;
        goto out;
    }
    if (o->metrics_url) {
        char url[1024];
        char *db = curl_easy_escape(NULL, o->metrics_db ? o->metrics_db : "public", 0);
        size_t ul = strlen(o->metrics_url);
        while (ul && o->metrics_url[ul - 1] == '/')
            ul--;
        snprintf(url, sizeof(url), "%.*s/v1/influxdb/api/v2/write?db=%s&precision=ms", (int)ul,
                 o->metrics_url, db ? db : "public");
        curl_free(db);
        x.metrics = tf_ctlmetrics_new(url, o->metrics_interval_ms, err, sizeof(err));
        if (!x.metrics) {
            tf_log(TF_LOG_ERROR, "controller", "metrics: %s", err);
            rc = TF_EINVAL;
            goto out;
        }
        tf_log(TF_LOG_INFO, "controller", "metric tables to %s every %d ms", url,
               o->metrics_interval_ms > 0 ? o->metrics_interval_ms : 60000);
    }
    struct tf_informer_handlers ph = tf_extender_pod_handlers(x.ext);
    struct tf_informer_handlers ih = tf_extender_inventory_handlers(x.ext);
    struct tf_informer_handlers gh = tf_extender_gpu_handlers(x.ext);
    struct tf_informer_handlers poolh = {pool_add, pool_update, pool_delete, &x};
    x.ext_inventory = ih;
    x.pods = informer_h(&x, &tf_k8s_pods, &ph);
    x.namespaces = informer(&x, &tf_k8s_namespaces);
    x.profiles = informer(&x, &tf_k8s_workloadprofiles);
    x.pools = informer_h(&x, &tf_k8s_gpupools, &poolh);
    x.nodes = informer(&x, &tf_k8s_nodes);
    x.pdbs = informer(&x, &tf_k8s_pdbs);
    x.priorities = informer(&x, &tf_k8s_priorityclasses);
    x.replicasets = informer(&x, &tf_k8s_replicasets);
    x.clusters = informer(&x, &tf_k8s_tfclusters);
    x.gpus = informer_h(&x, &tf_k8s_gpus, &gh);
    x.templates = informer_h(&x, &tf_k8s_schedulingconfigtemplates, &ih);
    x.gpunodes = informer(&x, &tf_k8s_gpunodes);
    x.workloads = informer(&x, &tf_k8s_tfworkloads);
    x.connections = informer(&x, &tf_k8s_tfconnections);
    x.quotas = informer_h(&x, &tf_k8s_gpuresourcequotas, &ih);
    x.providers = informer(&x, &tf_k8s_providerconfigs);
    x.claims = informer(&x, &tf_k8s_gpunodeclaims);
    x.nodeclasses = informer(&x, &tf_k8s_gpunodeclasses);
    /* The hypervisors' heartbeats, in this namespace (the chart runs both here). */
    x.leases = tf_informer_new(c, &tf_k8s_leases, o->namespace,
                               "tensor-fusion.ai/component=hypervisor", NULL, NULL);
    if (x.leases)
        tf_informer_start(x.leases, 300);
    struct tf_extender_sources es = {x.pods, x.gpus, x.pools, x.templates, x.quotas};
    tf_extender_set_sources(x.ext, &es);
    struct tf_efficiency_sources efs = {x.pods,      x.nodes, x.gpunodes,  x.gpus,    x.pools,
                                        x.templates, x.pdbs,  x.workloads, x.profiles};
    tf_efficiency_set_sources(x.eff, &efs);
    struct tf_webhook_env env = tf__ctl_webhook_env(&x);
    tf_ctl_podidx_init(&x.podidx, x.pods);
    if ((rc = tf_webhook_init(&x.wh, &wc, &env)))
        goto out;
    x.wh_ready = true;
    struct tf_reconcile_sources src = {x.pods,     x.clusters,    x.pools,       x.gpus,
                                       x.gpunodes, x.workloads,   x.connections, x.quotas,
                                       x.claims,   x.nodeclasses, x.nodes,       x.leases};
    x.rec = tf_reconciler_new(c, &src, x.wh.cfg.default_pool, x.wh.cfg.worker_image,
                              x.wh.cfg.shm_host_dir);
    if (x.rec) {
        tf_reconciler_set_allocsig(x.rec, &x.sig);
        tf_reconciler_set_podidx(x.rec, &x.podidx);
        tf_reconciler_set_static_policy(x.rec, strcasecmp(x.policy, "static") == 0);
    }
    /* Serve only once the caches are warm, so the first reviews see profiles and pools. */
    struct tf_informer *warm[] = {x.pods,        x.namespaces, x.profiles,  x.pools,
                                  x.replicasets, x.gpus,       x.templates, x.quotas};
    for (size_t i = 0; i < sizeof(warm) / sizeof(warm[0]); i++)
        if (!tf_informer_wait_synced(warm[i], 30000))
            tf_log(TF_LOG_WARN, "controller", "informer not synced after 30 s (serving anyway)");
    struct tf_ctl_console_opts co = {.c = c,
                                     .namespace = o->namespace,
                                     .default_pool = x.wh.cfg.default_pool,
                                     .metrics_url = o->metrics_url,
                                     .metrics_db = o->metrics_db,
                                     .alertmanager_url = o->alerts ? o->alertmanager_url : NULL,
                                     .pods = x.pods,
                                     .gpus = x.gpus,
                                     .gpunodes = x.gpunodes,
                                     .pools = x.pools,
                                     .workloads = x.workloads};
    x.console = tf_ctl_console_new(&co);
    /* Webhook and extender (one thread per connection, no head-of-line wait). */
    struct tf_https_opts ho = {.bind_addr = o->bind_addr ? o->bind_addr : "0.0.0.0",
                               .port = o->webhook_port,
                               .cert_pem = x.tls.cert_pem,
                               .key_pem = x.tls.key_pem};
    x.https = tf_https_start(&ho, https_handler, &x, err, sizeof(err));
    struct tf_https_opts po = {.bind_addr = o->bind_addr ? o->bind_addr : "0.0.0.0",
                               .port = o->http_port,
                               .max_conns = 64};
    x.http = x.https ? tf_https_start(&po, http_handler, &x, err, sizeof(err)) : NULL;
    if (!x.https || !x.http) {
        tf_log(TF_LOG_ERROR, "controller", "%s", err);
        rc = TF_EIO;
        goto out;
    }
    tf_log(TF_LOG_INFO, "controller", "serving webhook_port=%u http_port=%u namespace=%s",
           tf_https_port(x.https), tf_https_port(x.http), o->namespace);
    if (o->port_file) {
        char tmp[1024];
        snprintf(tmp, sizeof(tmp), "%s.tmp", o->port_file);
        FILE *pf = fopen(tmp, "w");
        if (pf) {
            fprintf(pf, "%u %u\n", tf_https_port(x.https), tf_https_port(x.http));
            fclose(pf);
            rename(tmp, o->port_file);
        }
    }
    struct tf_leader_opts lo = {.ns = o->namespace,
                                .name = "tensor-fusion-controller",
                                .identity = o->identity ? o->identity : "tf-controller",
                                .lease_duration_s = o->lease_duration_s,
                                .on_start = on_leading,
                                .arg = &x};
    x.leader = tf_leader_start(c, &lo);
    if (o->alerts) {
        struct tf_alerts_opts ao = {.alertmanager_url = o->alertmanager_url,
                                    .metrics_url = o->metrics_url,
                                    .metrics_db = o->metrics_db,
                                    .active = alerts_active,
                                    .arg = &x};
        x.alerts = tf_alerts_start(&ao, x.alert_rules, err, sizeof(err));
        if (!x.alerts) {
            tf_log(TF_LOG_ERROR, "controller", "alerts: %s", err);
            rc = TF_EINVAL;
            goto out;
        }
    }
    int resync = o->resync_ms > 0 ? o->resync_ms : 5000;
    while (!atomic_load(stop)) {
        patch_ca_bundle(&x);
        reload_certs(&x);
        reload_config(&x);
        if (tf_leader_is_leader(x.leader) && x.rec) {
            tf_reconcile_once(x.rec);
            tf_efficiency_once(x.eff);
            tf_extender_gang_expire(x.ext); /* gang waits past their timeout */
            if (x.metrics)
                record_metrics(&x);
        }
        for (int t = 0; t < resync && !atomic_load(stop); t += 50)
            sleep_ms(50);
    }
out:
    tf_alerts_stop(x.alerts);
    tf_leader_destroy(x.leader);
    tf_https_destroy(x.https);
    tf_https_destroy(x.http);
    tf_ctl_console_destroy(x.console);
    tf_reconciler_destroy(x.rec);
    struct tf_informer *all[] = {
        x.pods,       x.namespaces, x.profiles,    x.pools,       x.replicasets, x.clusters, x.gpus,
        x.gpunodes,   x.workloads,  x.connections, x.quotas,      x.templates,   x.nodes,    x.pdbs,
        x.priorities, x.providers,  x.claims,      x.nodeclasses, x.leases};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        tf_informer_destroy(all[i]);
    tf_efficiency_destroy(x.eff);
    tf_ctlmetrics_destroy(x.metrics);
    tf_extender_destroy(x.ext);
    if (x.wh_ready) {
        tf_webhook_free(&x.wh);
        tf_ctl_podidx_destroy(&x.podidx);
    }
    tf_tls_bundle_free(&x.tls);
out_cfg:
    if (!x.wh_ready)
        tf_webhook_config_free(&wc);
    json_object_put(x.alert_rules);
    free(x.config_text);
    free(x.bad_config_text);
    pthread_rwlock_destroy(&x.cfg_lock);
    return rc;
}
