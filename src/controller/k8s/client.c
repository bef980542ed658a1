/* SPDX-License-Identifier: Apache-2.0
 *
 * Kubernetes API client over libcurl (see client.h): requests with backoff, token rotation,
 * paginated lists and streaming watches, bindings and evictions. Its configuration is read by
 * config.c, events written by events.c.
 */
#include "controller/k8s/client.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/k8s/client_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BODY_MAX (64u << 20) /* largest response body kept in memory */

const struct tf_k8s_resource tf_k8s_pods = {"", "v1", "pods", "Pod", true};
const struct tf_k8s_resource tf_k8s_secrets = {"", "v1", "secrets", "Secret", true};
const struct tf_k8s_resource tf_k8s_nodes = {"", "v1", "nodes", "Node", false};
const struct tf_k8s_resource tf_k8s_namespaces = {"", "v1", "namespaces", "Namespace", false};
const struct tf_k8s_resource tf_k8s_events = {"", "v1", "events", "Event", true};
const struct tf_k8s_resource tf_k8s_leases = {"coordination.k8s.io", "v1", "leases", "Lease", true};
const struct tf_k8s_resource tf_k8s_replicasets = {"apps", "v1", "replicasets", "ReplicaSet", true};
const struct tf_k8s_resource tf_k8s_deployments = {"apps", "v1", "deployments", "Deployment", true};
const struct tf_k8s_resource tf_k8s_statefulsets = {"apps", "v1", "statefulsets", "StatefulSet",
                                                    true};
const struct tf_k8s_resource tf_k8s_mutatingwebhookconfigurations = {
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration", false};
#define TFG "tensor-fusion.ai"
const struct tf_k8s_resource tf_k8s_tfclusters = {TFG, "v1", "tensorfusionclusters",
                                                  "TensorFusionCluster", false};
const struct tf_k8s_resource tf_k8s_gpupools = {TFG, "v1", "gpupools", "GPUPool", false};
const struct tf_k8s_resource tf_k8s_gpunodes = {TFG, "v1", "gpunodes", "GPUNode", false};
const struct tf_k8s_resource tf_k8s_gpus = {TFG, "v1", "gpus", "GPU", false};
const struct tf_k8s_resource tf_k8s_tfworkloads = {TFG, "v1", "tensorfusionworkloads",
                                                   "TensorFusionWorkload", true};
const struct tf_k8s_resource tf_k8s_tfconnections = {TFG, "v1", "tensorfusionconnections",
                                                     "TensorFusionConnection", true};
const struct tf_k8s_resource tf_k8s_workloadprofiles = {TFG, "v1", "workloadprofiles",
                                                        "WorkloadProfile", true};
const struct tf_k8s_resource tf_k8s_schedulingconfigtemplates = {
    TFG, "v1", "schedulingconfigtemplates", "SchedulingConfigTemplate", false};
const struct tf_k8s_resource tf_k8s_gpuresourcequotas = {TFG, "v1", "gpuresourcequotas",
                                                         "GPUResourceQuota", true};
const struct tf_k8s_resource tf_k8s_providerconfigs = {TFG, "v1", "providerconfigs",
                                                       "ProviderConfig", false};
const struct tf_k8s_resource tf_k8s_jobs = {"batch", "v1", "jobs", "Job", true};
const struct tf_k8s_resource tf_k8s_gpunodeclaims = {TFG, "v1", "gpunodeclaims", "GPUNodeClaim",
                                                     false};
const struct tf_k8s_resource tf_k8s_gpunodeclasses = {TFG, "v1", "gpunodeclasses", "GPUNodeClass",
                                                      false};
const struct tf_k8s_resource tf_k8s_priorityclasses = {"scheduling.k8s.io", "v1", "priorityclasses",
                                                       "PriorityClass", false};
const struct tf_k8s_resource tf_k8s_pdbs = {"policy", "v1", "poddisruptionbudgets",
                                            "PodDisruptionBudget", true};
const struct tf_k8s_resource tf_k8s_nodeclaims = {"karpenter.sh", "v1", "nodeclaims", "NodeClaim",
                                                  false};

/* ---- client ------------------------------------------------------------------------------- */

struct tf_k8s_client {
    struct tf_k8s_config cfg;
    CURLSH *share;
    pthread_mutex_t share_lock[CURL_LOCK_DATA_LAST];
    pthread_mutex_t token_lock; /* guards cfg.token and token_mtime */
    struct timespec token_mtime;
    char server_host[256];
    pthread_mutex_t pool_lock; /* guards pool: easy handles kept for the next requests (their
                                  init and cleanup cost as much as a loopback request) */
    CURL *pool[8];
    int npool;
    atomic_bool closed; /* tf_k8s_client_close: requests fail at once */
};

/* An easy handle for one request (reset to the defaults), and its return. */
static CURL *handle_take(struct tf_k8s_client *c)
{
    CURL *h = NULL;
    pthread_mutex_lock(&c->pool_lock);
    if (c->npool)
        h = c->pool[--c->npool];
    pthread_mutex_unlock(&c->pool_lock);
    return h ? h : curl_easy_init();
}

static void handle_give(struct tf_k8s_client *c, CURL *h)
{
    curl_easy_reset(h);
    pthread_mutex_lock(&c->pool_lock);
    if (c->npool < (int)(sizeof(c->pool) / sizeof(c->pool[0]))) {
        c->pool[c->npool++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&c->pool_lock);
    if (h)
        curl_easy_cleanup(h);
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *userp)
{
    struct tf_k8s_client *c = userp;
    pthread_mutex_lock(&c->share_lock[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *userp)
{
    struct tf_k8s_client *c = userp;
    pthread_mutex_unlock(&c->share_lock[data]);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

struct tf_k8s_client *tf_k8s_client_new(const struct tf_k8s_config *cfg)
{
    if (!cfg || !cfg->server)
        return NULL;
    pthread_once(&curl_once, curl_init_once);
    struct tf_k8s_client *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->cfg = *cfg;
    c->cfg.server = dup_or_null(cfg->server);
    c->cfg.token = dup_or_null(cfg->token);
    c->cfg.token_file = dup_or_null(cfg->token_file);
    c->cfg.ca_pem = dup_or_null(cfg->ca_pem);
    c->cfg.cert_pem = dup_or_null(cfg->cert_pem);
    c->cfg.key_pem = dup_or_null(cfg->key_pem);
    c->cfg.namespace = dup_or_null(cfg->namespace);
    if (c->cfg.max_attempts < 1)
        c->cfg.max_attempts = 1;
    /* Strip a trailing slash so paths can always start with one. */
    size_t n = c->cfg.server ? strlen(c->cfg.server) : 0;
    while (n && c->cfg.server[n - 1] == '/')
        c->cfg.server[--n] = '\0';
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_init(&c->share_lock[i], NULL);
    pthread_mutex_init(&c->token_lock, NULL);
    pthread_mutex_init(&c->pool_lock, NULL);
    c->share = curl_share_init();
    if (!c->cfg.server || !c->share) {
        tf_k8s_client_destroy(c);
        return NULL;
    }
    curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
    curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
    curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
    if (c->cfg.token_file) {
        struct stat st;
        if (stat(c->cfg.token_file, &st) == 0)
            c->token_mtime = st.st_mtim;
    }
    return c;
}

struct tf_k8s_client *tf_k8s_client_derive(struct tf_k8s_client *c, int timeout_ms,
                                           int max_attempts, int backoff_max_ms)
{
    if (!c)
        return NULL;
    struct tf_k8s_config cfg = c->cfg;
    if (timeout_ms > 0)
        cfg.timeout_ms = timeout_ms;
    if (max_attempts > 0)
        cfg.max_attempts = max_attempts;
    if (backoff_max_ms > 0)
        cfg.backoff_max_ms = backoff_max_ms;
    pthread_mutex_lock(&c->token_lock); /* the token as it is now */
    struct tf_k8s_client *d = tf_k8s_client_new(&cfg);
    pthread_mutex_unlock(&c->token_lock);
    return d;
}

void tf_k8s_client_close(struct tf_k8s_client *c)
{
    atomic_store(&c->closed, true);
}

void tf_k8s_client_destroy(struct tf_k8s_client *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->npool; i++) /* before the share they use */
        curl_easy_cleanup(c->pool[i]);
    pthread_mutex_destroy(&c->pool_lock);
    if (c->share)
        curl_share_cleanup(c->share);
    for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
        pthread_mutex_destroy(&c->share_lock[i]);
    pthread_mutex_destroy(&c->token_lock);
    tf_k8s_config_free(&c->cfg);
    free(c);
}

const char *tf_k8s_client_namespace(const struct tf_k8s_client *c)
{
    return c->cfg.namespace;
}

/* Re-reads the token file when it changed (or when FORCE). Returns a new copy of the token
 * (caller frees) or NULL when there is none. */
static char *current_token(struct tf_k8s_client *c, bool force)
{
    pthread_mutex_lock(&c->token_lock);
    if (c->cfg.token_file) {
        struct stat st;
        if (stat(c->cfg.token_file, &st) == 0 &&
            (force || st.st_mtim.tv_sec != c->token_mtime.tv_sec ||
             st.st_mtim.tv_nsec != c->token_mtime.tv_nsec)) {
            char *tok = tf__k8s_read_file(c->cfg.token_file, 64 << 10);
            if (tok) {
                tf__k8s_trim_end(tok);
                free(c->cfg.token);
                c->cfg.token = tok;
                c->token_mtime = st.st_mtim;
                tf_log(TF_LOG_INFO, "k8s", "service-account token reloaded file=%s",
                       c->cfg.token_file);
            }
        }
    }
    char *t = dup_or_null(c->cfg.token);
    pthread_mutex_unlock(&c->token_lock);
    return t;
}

static int url_escape_into(char *buf, size_t len, size_t *pos, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                     (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' || ch == '~';
        if (*pos + (plain ? 1 : 3) >= len)
            return TF_ERANGE;
        if (plain) {
            buf[(*pos)++] = (char)ch;
        } else {
            buf[(*pos)++] = '%';
            buf[(*pos)++] = hex[ch >> 4];
            buf[(*pos)++] = hex[ch & 15];
        }
    }
    buf[*pos] = '\0';
    return 0;
}

static int append(char *buf, size_t len, size_t *pos, const char *s)
{
    size_t n = strlen(s);
    if (*pos + n >= len)
        return TF_ERANGE;
    memcpy(buf + *pos, s, n + 1);
    *pos += n;
    return 0;
}

int tf_k8s_path(char *buf, size_t len, const struct tf_k8s_resource *res, const char *ns,
                const char *name, const char *sub)
{
    size_t pos = 0;
    int rc;
    if (len == 0)
        return TF_ERANGE;
    buf[0] = '\0';
    if (*res->group)
        rc = append(buf, len, &pos, "/apis/") || append(buf, len, &pos, res->group) ||
             append(buf, len, &pos, "/");
    else
        rc = append(buf, len, &pos, "/api/");
    if (rc || append(buf, len, &pos, res->version))
        return TF_ERANGE;
    if (res->namespaced && ns) {
        if (append(buf, len, &pos, "/namespaces/") || url_escape_into(buf, len, &pos, ns))
            return TF_ERANGE;
    }
    if (append(buf, len, &pos, "/") || append(buf, len, &pos, res->plural))
        return TF_ERANGE;
    if (name && (append(buf, len, &pos, "/") || url_escape_into(buf, len, &pos, name)))
        return TF_ERANGE;
    if (name && sub && (append(buf, len, &pos, "/") || append(buf, len, &pos, sub)))
        return TF_ERANGE;
    return 0;
}

/* Bounded growable buffer for response bodies. */
struct body {
    char *p;
    size_t n, cap, max;
    bool overflow;
};

static size_t body_write(char *data, size_t sz, size_t nm, void *arg)
{
    struct body *b = arg;
    size_t n = sz * nm;
    if (b->n + n + 1 > b->max) {
        b->overflow = true;
        return 0;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return 0;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = '\0';
    return n;
}

struct hdrs {
    long retry_after; /* seconds, -1 when absent */
};

static size_t header_cb(char *data, size_t sz, size_t nm, void *arg)
{
    struct hdrs *h = arg;
    size_t n = sz * nm;
    if (n > 12 && strncasecmp(data, "Retry-After:", 12) == 0) {
        /* The line is not NUL-terminated: the value is read from a copy. An HTTP-date (or
         * anything but seconds) leaves the backoff as it is. */
        char v[32];
        size_t k = n - 12 < sizeof(v) - 1 ? n - 12 : sizeof(v) - 1;
        memcpy(v, data + 12, k);
        v[k] = '\0';
        char *end;
        long s = strtol(v, &end, 10);
        if (end != v && s >= 0)
            h->retry_after = s;
    }
    return n;
}

/* Sets the options common to every request on H. */
static struct curl_slist *setup(struct tf_k8s_client *c, CURL *h, const char *method,
                                const char *url, const char *content_type, const char *body,
                                const char *token)
{
    struct curl_slist *hl = NULL;
    char line[8192];
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_SHARE, c->share);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "tf-controller/0.1");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    if (c->cfg.ca_pem) {
        struct curl_blob blob = {c->cfg.ca_pem, strlen(c->cfg.ca_pem), CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob);
    }
    if (c->cfg.cert_pem && c->cfg.key_pem) {
        struct curl_blob cb = {c->cfg.cert_pem, strlen(c->cfg.cert_pem), CURL_BLOB_COPY};
        struct curl_blob kb = {c->cfg.key_pem, strlen(c->cfg.key_pem), CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (c->cfg.insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    hl = curl_slist_append(hl, "Accept: application/json");
    if (token && *token) {
        snprintf(line, sizeof(line), "Authorization: Bearer %s", token);
        hl = curl_slist_append(hl, line);
    }
    if (body) {
        snprintf(line, sizeof(line), "Content-Type: %s",
                 content_type ? content_type : "application/json");
        hl = curl_slist_append(hl, line);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
    }
    hl = curl_slist_append(hl, "Expect:");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
    return hl;
}

static int status_to_err(long st, json_object *body)
{
    const char *reason = tf_json_str(body, "reason", NULL);
    switch (st) {
    case 400:
    case 422:
        return TF_EINVAL;
    case 401:
    case 403:
        return TF_EPERM;
    case 404:
        return TF_ENOENT;
    case 409:
        return reason && strcmp(reason, "AlreadyExists") == 0 ? TF_EEXIST : TF_ECONFLICT;
    case 410:
        return TF_ESTATE;
    case 429:
        return TF_EBUSY;
    default:
        return st >= 500 ? TF_EIO : TF_EPROTO;
    }
}

/* Sleeps MS milliseconds, in slices of at most 100 ms that end early once C is closed. */
static void sleep_ms(const struct tf_k8s_client *c, long ms)
{
    while (ms > 0 && !atomic_load(&c->closed)) {
        long slice = ms < 100 ? ms : 100;
        struct timespec ts = {0, slice * 1000000L};
        while (nanosleep(&ts, &ts) && errno == EINTR) {
        }
        ms -= slice;
    }
}

/* libcurl's progress callback: a transfer of a closed client is aborted (within a second:
 * libcurl calls it at least that often while waiting). */
static int closed_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    return atomic_load(&((const struct tf_k8s_client *)arg)->closed) ? 1 : 0;
}

static long backoff_ms(const struct tf_k8s_config *cfg, int attempt, long retry_after)
{
    long d = cfg->backoff_base_ms;
    for (int i = 1; i < attempt && d < cfg->backoff_max_ms; i++)
        d *= 2;
    /* the server's Retry-After, capped before it is turned into ms (it may be huge) */
    if (retry_after >= 0) {
        long ra =
            retry_after > cfg->backoff_max_ms / 1000 ? cfg->backoff_max_ms : retry_after * 1000;
        if (ra > d)
            d = ra;
    }
    if (d > cfg->backoff_max_ms)
        d = cfg->backoff_max_ms;
    /* Jitter up to 25 % so many controllers do not retry in lockstep. */
    return d + (d / 4 ? (long)((unsigned)rand() % (unsigned)(d / 4)) : 0);
}

int tf_k8s_request(struct tf_k8s_client *c, const char *method, const char *path,
                   const char *content_type, const char *body, json_object **out, long *status,
                   char *err, size_t errlen)
{
    size_t ulen = strlen(c->cfg.server) + strlen(path) + 1;
    char *url = malloc(ulen);
    if (!url)
        return TF_ENOMEM;
    snprintf(url, ulen, "%s%s", c->cfg.server, path);
    if (out)
        *out = NULL;
    int rc = TF_EIO;
    bool reauth = false;
    for (int attempt = 1; attempt <= c->cfg.max_attempts; attempt++) {
        if (atomic_load(&c->closed)) {
            tf_errf(err, errlen, "%s %s: client closed", method, path);
            rc = TF_ESTATE;
            break;
        }
        CURL *h = handle_take(c);
        if (!h) {
            rc = TF_ENOMEM;
            break;
        }
        char *token = current_token(c, reauth);
        struct body b = {.max = BODY_MAX};
        struct hdrs hd = {.retry_after = -1};
        struct curl_slist *hl = setup(c, h, method, url, content_type, body, token);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->cfg.timeout_ms);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, &hd);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, closed_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        CURLcode cc = curl_easy_perform(h);
        long st = 0;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
        curl_slist_free_all(hl);
        handle_give(c, h);
        free(token);
        bool retry = false;
        if (cc != CURLE_OK) {
            tf_errf(err, errlen, "%s %s: %s", method, path,
                    b.overflow ? "response too large" : curl_easy_strerror(cc));
            rc = b.overflow ? TF_ERANGE : TF_EIO;
            retry = !b.overflow;
        } else {
            json_object *j = NULL;
            if (b.n) {
                enum json_tokener_error jerr;
                j = json_tokener_parse_verbose(b.p, &jerr);
            }
            if (status)
                *status = st;
            if (st >= 200 && st < 300) {
                if (b.n && !j) {
                    tf_errf(err, errlen, "%s %s: response is not JSON", method, path);
                    rc = TF_EPROTO;
                } else {
                    rc = 0;
                    if (out)
                        *out = j;
                    else
                        json_object_put(j);
                    j = NULL;
                }
            } else {
                const char *msg = tf_json_str(j, "message", NULL);
                tf_errf(err, errlen, "%s %s: HTTP %ld%s%s", method, path, st, msg ? ": " : "",
                        msg ? msg : "");
                rc = status_to_err(st, j);
                retry = st == 429 || st >= 500;
                if (st == 401 && !reauth && c->cfg.token_file) {
                    reauth = true; /* the token may have rotated under us: re-read once */
                    retry = true;
                }
            }
            json_object_put(j);
        }
        free(b.p);
        if (!retry || attempt == c->cfg.max_attempts)
            break;
        long d = backoff_ms(&c->cfg, attempt, hd.retry_after);
        tf_log(TF_LOG_DEBUG, "k8s", "retrying method=%s path=%s attempt=%d delay_ms=%ld", method,
               path, attempt, d);
        sleep_ms(c, d);
    }
    free(url);
    return rc;
}

static int send_obj(struct tf_k8s_client *c, const char *method, const struct tf_k8s_resource *res,
                    const char *ns, const char *name, const char *sub, const char *ctype,
                    json_object *obj, json_object **out, char *err, size_t errlen)
{
    char path[2048];
    if (tf_k8s_path(path, sizeof(path), res, ns, name, sub)) {
        tf_errf(err, errlen, "object path too long");
        return TF_ERANGE;
    }
    const char *body = obj ? json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
                                                                     JSON_C_TO_STRING_NOSLASHESCAPE)
                           : NULL;
    return tf_k8s_request(c, method, path, ctype, body, out, NULL, err, errlen);
}

int tf_k8s_get(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
               const char *name, json_object **out, char *err, size_t errlen)
{
    return send_obj(c, "GET", res, ns, name, NULL, NULL, NULL, out, err, errlen);
}

int tf_k8s_create(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                  json_object *obj, json_object **out, char *err, size_t errlen)
{
    return send_obj(c, "POST", res, ns, NULL, NULL, "application/json", obj, out, err, errlen);
}

int tf_k8s_update(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                  const char *name, const char *sub, json_object *obj, json_object **out, char *err,
                  size_t errlen)
{
    return send_obj(c, "PUT", res, ns, name, sub, "application/json", obj, out, err, errlen);
}

int tf_k8s_merge_patch(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                       const char *name, const char *sub, json_object *patch, json_object **out,
                       char *err, size_t errlen)
{
    return send_obj(c, "PATCH", res, ns, name, sub, "application/merge-patch+json", patch, out, err,
                    errlen);
}

int tf_k8s_json_patch(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                      const char *name, const char *sub, json_object *ops, json_object **out,
                      char *err, size_t errlen)
{
    return send_obj(c, "PATCH", res, ns, name, sub, "application/json-patch+json", ops, out, err,
                    errlen);
}

int tf_k8s_delete(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                  const char *name, char *err, size_t errlen)
{
    return send_obj(c, "DELETE", res, ns, name, NULL, NULL, NULL, NULL, err, errlen);
}

int tf_k8s_update_retry(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                        const char *name, const char *sub,
                        int (*mutate)(json_object *obj, void *arg), void *arg, json_object **out,
                        char *err, size_t errlen)
{
    int rc = TF_ECONFLICT;
    if (out)
        *out = NULL;
    for (int attempt = 0; attempt < 8 && rc == TF_ECONFLICT; attempt++) {
        json_object *obj = NULL;
        if ((rc = tf_k8s_get(c, res, ns, name, &obj, err, errlen)))
            return rc;
        rc = mutate(obj, arg);
        if (rc == 1) {
            if (out)
                *out = obj;
            else
                json_object_put(obj);
            return 0;
        }
        if (rc == 0)
            rc = tf_k8s_update(c, res, ns, name, sub, obj, out, err, errlen);
        json_object_put(obj);
        if (rc == TF_ECONFLICT)
            tf_log(TF_LOG_DEBUG, "k8s", "conflict, retrying kind=%s name=%s attempt=%d", res->kind,
                   name, attempt + 1);
    }
    return rc;
}

int tf_k8s_merge_patch_retry(struct tf_k8s_client *c, const struct tf_k8s_resource *res,
                             const char *ns, const char *name, const char *sub,
                             json_object *(*build)(json_object *obj, void *arg), void *arg,
                             json_object **out, char *err, size_t errlen)
{
    int rc = TF_ECONFLICT;
    if (out)
        *out = NULL;
    for (int attempt = 0; attempt < 8 && rc == TF_ECONFLICT; attempt++) {
        json_object *obj = NULL;
        if ((rc = tf_k8s_get(c, res, ns, name, &obj, err, errlen)))
            return rc;
        json_object *patch = build(obj, arg);
        if (!patch) {
            if (out)
                *out = obj;
            else
                json_object_put(obj);
            return 0;
        }
        const char *rv = tf_json_str(obj, "metadata", "resourceVersion", NULL);
        json_object *meta = NULL;
        if (!json_object_object_get_ex(patch, "metadata", &meta) ||
            !json_object_is_type(meta, json_type_object)) {
            meta = json_object_new_object();
            json_object_object_add(patch, "metadata", meta);
        }
        json_object_object_add(meta, "resourceVersion", json_object_new_string(rv ? rv : ""));
        rc = tf_k8s_merge_patch(c, res, ns, name, sub, patch, out, err, errlen);
        json_object_put(patch);
        json_object_put(obj);
    }
    return rc;
}

static int add_query(char *buf, size_t len, size_t *pos, const char *key, const char *val)
{
    if (!val || !*val)
        return 0;
    if (append(buf, len, pos, strchr(buf, '?') ? "&" : "?") || append(buf, len, pos, key) ||
        append(buf, len, pos, "="))
        return TF_ERANGE;
    return url_escape_into(buf, len, pos, val);
}

int tf_k8s_list(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                const char *label_selector, const char *field_selector, int page,
                int (*fn)(json_object *item, void *arg), void *arg, char **rv, char *err,
                size_t errlen)
{
    char base[2048], path[6144], limit[16], *cont = NULL;
    if (rv)
        *rv = NULL;
    if (tf_k8s_path(base, sizeof(base), res, ns, NULL, NULL))
        return TF_ERANGE;
    snprintf(limit, sizeof(limit), "%d", page);
    int restarts = 0, rc = 0;
    for (;;) {
        size_t pos = 0;
        path[0] = '\0';
        if (append(path, sizeof(path), &pos, base) ||
            add_query(path, sizeof(path), &pos, "labelSelector", label_selector) ||
            add_query(path, sizeof(path), &pos, "fieldSelector", field_selector) ||
            add_query(path, sizeof(path), &pos, "limit", page > 0 ? limit : NULL) ||
            add_query(path, sizeof(path), &pos, "continue", cont)) {
            rc = TF_ERANGE;
            break;
        }
        json_object *list = NULL;
        rc = tf_k8s_request(c, "GET", path, NULL, NULL, &list, NULL, err, errlen);
        if (rc == TF_ESTATE && cont && restarts < 3) {
            restarts++; /* continue token expired: the list starts again, consistently */
            free(cont);
            cont = NULL;
            tf_log(TF_LOG_INFO, "k8s", "list continue expired, restarting kind=%s", res->kind);
            continue;
        }
        if (rc)
            break;
        json_object *items = tf_json_path(list, "items", NULL);
        if (!items || !json_object_is_type(items, json_type_array)) {
            tf_errf(err, errlen, "list %s: no items array", res->plural);
            json_object_put(list);
            rc = TF_EPROTO;
            break;
        }
        for (size_t i = 0; i < json_object_array_length(items) && !rc; i++)
            rc = fn(json_object_array_get_idx(items, i), arg);
        const char *next = tf_json_str(list, "metadata", "continue", NULL);
        const char *lrv = tf_json_str(list, "metadata", "resourceVersion", NULL);
        if (rv && lrv && !cont) {
            free(*rv);
            *rv = strdup(lrv); /* the first page's version is the list's snapshot */
        }
        free(cont);
        cont = next && *next ? strdup(next) : NULL;
        json_object_put(list);
        if (rc || !cont)
            break;
    }
    free(cont);
    if (rc && rv) {
        free(*rv);
        *rv = NULL;
    }
    return rc;
}

/* ---- watch -------------------------------------------------------------------------------- */

/* libcurl's write callback: the stream into the decoder (watch.c); 0 stops the transfer. */
static size_t watch_write(char *data, size_t sz, size_t nm, void *arg)
{
    return tf__k8s_watch_feed(arg, data, sz * nm);
}

static int watch_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    struct tf__k8s_watch *w = arg;
    return w->stop && atomic_load(w->stop) ? 1 : 0;
}

int tf_k8s_watch(struct tf_k8s_client *c, const struct tf_k8s_resource *res, const char *ns,
                 const char *label_selector, const char *field_selector, const char *rv,
                 int timeout_s, int (*fn)(enum tf_k8s_event_type type, json_object *obj, void *arg),
                 void *arg, atomic_bool *stop, char *last_rv, size_t rvlen, char *err,
                 size_t errlen)
{
    char path[6144], tmo[16];
    size_t pos;
    if (tf_k8s_path(path, sizeof(path), res, ns, NULL, NULL))
        return TF_ERANGE;
    pos = strlen(path);
    snprintf(tmo, sizeof(tmo), "%d", timeout_s > 0 ? timeout_s : 300);
    if (add_query(path, sizeof(path), &pos, "watch", "1") ||
        add_query(path, sizeof(path), &pos, "allowWatchBookmarks", "true") ||
        add_query(path, sizeof(path), &pos, "resourceVersion", rv) ||
        add_query(path, sizeof(path), &pos, "timeoutSeconds", tmo) ||
        add_query(path, sizeof(path), &pos, "labelSelector", label_selector) ||
        add_query(path, sizeof(path), &pos, "fieldSelector", field_selector))
        return TF_ERANGE;
    size_t ulen = strlen(c->cfg.server) + strlen(path) + 1;
    char *url = malloc(ulen);
    CURL *h = curl_easy_init();
    if (!url || !h) {
        free(url);
        curl_easy_cleanup(h);
        return TF_ENOMEM;
    }
    snprintf(url, ulen, "%s%s", c->cfg.server, path);
    struct tf__k8s_watch w = {.fn = fn,
                              .arg = arg,
                              .stop = stop,
                              .last_rv = last_rv,
                              .rvlen = rvlen,
                              .err = err,
                              .errlen = errlen};
    char *token = current_token(c, false);
    struct curl_slist *hl = setup(c, h, "GET", url, NULL, NULL, token);
    free(token);
    /* The server ends the stream after timeoutSeconds; allow slack before giving up. */
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                     (long)(timeout_s > 0 ? timeout_s : 300) * 1000L + 30000L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, watch_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &w);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, watch_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &w);
    /* Fail on HTTP >= 400 before the body is streamed into the event parser. */
    curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
    CURLcode cc = curl_easy_perform(h);
    long st = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st);
    curl_slist_free_all(hl);
    curl_easy_cleanup(h);
    free(url);
    if (!w.rc && cc == CURLE_OK) /* a last event without a newline */
        w.rc = tf__k8s_watch_end(&w);
    free(w.line);
    if (w.rc)
        return w.rc;
    if (stop && atomic_load(stop))
        return 0;
    if (cc == CURLE_HTTP_RETURNED_ERROR) {
        tf_errf(err, errlen, "watch %s: HTTP %ld", res->plural, st);
        return status_to_err(st, NULL);
    }
    if (cc != CURLE_OK && cc != CURLE_OPERATION_TIMEDOUT) {
        tf_errf(err, errlen, "watch %s: %s", res->plural, curl_easy_strerror(cc));
        return TF_EIO;
    }
    return 0;
}

/* ---- bindings, events, time --------------------------------------------------------------- */

int tf_k8s_bind(struct tf_k8s_client *c, const char *ns, const char *pod, const char *uid,
                const char *node, json_object *anns, char *err, size_t errlen)
{
    json_object *b = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object *target = json_object_new_object();
    json_object_object_add(b, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(b, "kind", json_object_new_string("Binding"));
    json_object_object_add(meta, "name", json_object_new_string(pod));
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    if (uid)
        json_object_object_add(meta, "uid", json_object_new_string(uid));
    if (anns)
        json_object_object_add(meta, "annotations", json_object_get(anns));
    json_object_object_add(b, "metadata", meta);
    json_object_object_add(target, "apiVersion", json_object_new_string("v1"));
    json_object_object_add(target, "kind", json_object_new_string("Node"));
    json_object_object_add(target, "name", json_object_new_string(node));
    json_object_object_add(b, "target", target);
    int rc = send_obj(c, "POST", &tf_k8s_pods, ns, pod, "binding", "application/json", b, NULL, err,
                      errlen);
    json_object_put(b);
    return rc;
}

int tf_k8s_evict(struct tf_k8s_client *c, const char *ns, const char *pod, char *err, size_t errlen)
{
    json_object *e = json_object_new_object();
    json_object *meta = json_object_new_object();
    json_object_object_add(e, "apiVersion", json_object_new_string("policy/v1"));
    json_object_object_add(e, "kind", json_object_new_string("Eviction"));
    json_object_object_add(meta, "name", json_object_new_string(pod));
    json_object_object_add(meta, "namespace", json_object_new_string(ns));
    json_object_object_add(e, "metadata", meta);
    int rc = send_obj(c, "POST", &tf_k8s_pods, ns, pod, "eviction", "application/json", e, NULL,
                      err, errlen);
    json_object_put(e);
    return rc;
}
