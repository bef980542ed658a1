/* SPDX-License-Identifier: Apache-2.0
 *
 * The hypervisor's HTTP API on libmicrohttpd (loopback by default):
 *   GET    /healthz                         {"status":"ok", ...}
 *   GET    /metrics                         Prometheus text
 *   GET    /api/v1/devices                  GPUs with capacity, allocation, usage
 *   GET    /api/v1/workers                  one entry per (workload, GPU)
 *   GET    /api/v1/workloads                all workloads
 *   POST   /api/v1/workloads                create (body: workload.h JSON)
 *   GET    /api/v1/workloads/NAME           one workload
 *   DELETE /api/v1/workloads/NAME           release
 *   POST   /api/v1/workloads/NAME/processes register a process {"pid": N}
 *   POST   /api/v1/workloads/NAME/heartbeat renew a leased workload (remote clients)
 *   GET    /api/v1/console/...              the web console's JSON API (console.h)
 *   GET    /, /console/...                  the web console's pages (public: no data in them)
 * With an API token configured, /api/ paths need "Authorization: Bearer <token>" (401).
 *
 * Unauthenticated peers: a connection is "pending" until the headers of an /api/ request are
 * in and carry the token (or no token is configured). At most API_MAX_PENDING connections are
 * pending (a new one makes room by dropping the oldest), each gets API_HANDSHAKE_MS from its accept
 * to get there (a deadline, however slowly it sends), and only then does it hold one of the
 * API_MAX_CLIENTS slots. Every connection dropped this way records when the API was last
 * saturated (tf_hv.api_busy_ms): leases are not expired while that is recent, since their
 * heartbeats may have been the ones turned away.
 * Errors are JSON {"error": "..."} with 400 (bad input), 404, 405, 409 (exists), 413 (body over
 * TF_HV_MAX_BODY), 415 (not JSON), 422 (unschedulable, with "reasons"), 500, 501. A rejected
 * request changes nothing.
 */
#include "hypervisor/hv.h"

#include "console/console.h"
#include "hypervisor/console.h"

#include "common/abstime.h"
#include "common/dynbuf.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TF_HV_MAX_BODY (64 * 1024)
#define PREFIX "/api/v1/workloads"
#define API_MAX_CLIENTS 64 /* connections past their first request's headers */
#define API_MAX_PENDING 16 /* connections before that */
#define API_HANDSHAKE_MS 2000

/* A connection, from accept to close (MHD's socket context). */
struct gate_conn {
    int fd;
    int64_t accepted_ms; /* CLOCK_MONOTONIC */
    bool admitted;       /* its first request's headers came (with the token for /api/) */
    bool dropped;        /* shut down to make room or at the deadline */
    struct gate_conn *next, *prev;
};

struct tf_hv_http {
    struct MHD_Daemon *d;
    struct tf_hv *hv;
    pthread_mutex_t mu; /* guards the gate below */
    pthread_cond_t cv;
    struct gate_conn *conns; /* newest first */
    int npending;
    bool stop;
    pthread_t watchdog;
    bool watchdog_started;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Drops pending connection G (under mu): its MHD thread sees the end of the stream. */
static void gate_drop(struct tf_hv_http *h, struct gate_conn *g, const char *why)
{
    g->dropped = true;
    h->npending--;
    shutdown(g->fd, SHUT_RDWR);
    atomic_store(&h->hv->api_busy_ms, wall_ms());
    tf_log(TF_LOG_WARN, "hypervisor", "API connection dropped: %s", why);
}

static void gate_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode toe)
{
    struct tf_hv_http *h = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        struct gate_conn *g = calloc(1, sizeof(*g));
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!g || !ci) {
            free(g);
            return;
        }
        g->fd = ci->connect_fd;
        g->accepted_ms = mono_ms();
        pthread_mutex_lock(&h->mu);
        if (h->npending >= API_MAX_PENDING) {
            struct gate_conn *oldest = NULL;
            for (struct gate_conn *o = h->conns; o; o = o->next)
                if (!o->admitted && !o->dropped)
                    oldest = o;
            if (oldest)
                gate_drop(h, oldest, "too many connections without a request yet");
        }
        h->npending++;
        g->next = h->conns;
        if (h->conns)
            h->conns->prev = g;
        h->conns = g;
        pthread_mutex_unlock(&h->mu);
        *socket_context = g;
        return;
    }
    struct gate_conn *g = *socket_context; /* closed (before MHD closes the socket) */
    if (!g)
        return;
    pthread_mutex_lock(&h->mu);
    if (!g->admitted && !g->dropped)
        h->npending--;
    if (g->prev)
        g->prev->next = g->next;
    else
        h->conns = g->next;
    if (g->next)
        g->next->prev = g->prev;
    pthread_mutex_unlock(&h->mu);
    free(g);
    *socket_context = NULL;
}

/* Admits C's connection to the client slots; false when it was dropped meanwhile or all
 * slots are taken (the caller answers 503). */
static bool gate_admit(struct tf_hv_http *h, struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct gate_conn *g = ci ? ci->socket_context : NULL;
    if (!g)
        return true;
    pthread_mutex_lock(&h->mu);
    bool ok = g->admitted;
    if (!ok && !g->dropped) {
        int admitted = 0;
        for (struct gate_conn *o = h->conns; o; o = o->next)
            admitted += o->admitted;
        h->npending--;
        g->admitted = true;
        ok = admitted < API_MAX_CLIENTS;
        if (!ok)
            atomic_store(&h->hv->api_busy_ms, wall_ms());
    }
    pthread_mutex_unlock(&h->mu);
    return ok;
}

/* Drops pending connections past their deadline, every 100 ms. */
static void *gate_watchdog(void *arg)
{
    struct tf_hv_http *h = arg;
    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        struct timespec dl = tf_abstime_ms(CLOCK_REALTIME, 100);
        pthread_cond_timedwait(&h->cv, &h->mu, &dl);
        int64_t now = mono_ms();
        for (struct gate_conn *g = h->conns; g; g = g->next)
            if (!g->admitted && !g->dropped && now - g->accepted_ms > API_HANDSHAKE_MS)
                gate_drop(h, g, "no request within the deadline");
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

struct conn {
    struct tf_dynbuf body;
    bool too_large;
};

static enum MHD_Result send_text(struct MHD_Connection *c, int status, const char *ctype,
                                 const char *text, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result ret = MHD_queue_response(c, (unsigned int)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result send_json(struct MHD_Connection *c, int status, json_object *o)
{
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    enum MHD_Result ret = send_text(c, status, "application/json", s, strlen(s));
    json_object_put(o);
    return ret;
}

static enum MHD_Result send_error(struct MHD_Connection *c, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum MHD_Result send_error(struct MHD_Connection *c, int status, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string(msg));
    return send_json(c, status, o);
}

/* Parses the collected body as one JSON value; on failure queues a 400 and returns NULL. */
static json_object *parse_body(struct MHD_Connection *c, struct conn *cc, enum MHD_Result *ret)
{
    const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
    if (ct && strncmp(ct, "application/json", 16) != 0) {
        *ret = send_error(c, 415, "Content-Type must be application/json, not %.64s", ct);
        return NULL;
    }
    struct json_tokener *tok = json_tokener_new_ex(32);
    if (!tok) {
        *ret = send_error(c, 500, "out of memory");
        return NULL;
    }
    json_object *o = json_tokener_parse_ex(tok, tf_dynbuf_str(&cc->body), (int)cc->body.len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t off = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (jerr != json_tokener_success || !o) {
        json_object_put(o);
        *ret = send_error(
            c, 400, "request body is not valid JSON: %s at offset %zu",
            jerr == json_tokener_continue ? "unexpected end" : json_tokener_error_desc(jerr), off);
        return NULL;
    }
    while (off < cc->body.len && strchr(" \t\r\n", cc->body.data[off]))
        off++;
    if (off != cc->body.len) {
        json_object_put(o);
        *ret = send_error(c, 400, "request body has trailing data at offset %zu", off);
        return NULL;
    }
    return o;
}

/* Whether a request for URL may be served: /api/ needs the bearer token when one is set. */
static bool authorized(struct tf_hv *hv, struct MHD_Connection *c, const char *url)
{
    if (!hv->cfg.api_token[0] || strncmp(url, "/api/", 5) != 0)
        return true;
    return tf_con_bearer_ok(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"),
                            hv->cfg.api_token);
}

static enum MHD_Result route(struct tf_hv *hv, struct MHD_Connection *c, const char *url,
                             const char *method, struct conn *cc)
{
    bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    bool post = !strcmp(method, "POST");
    bool del = !strcmp(method, "DELETE");
    if (!strcmp(url, "/healthz")) {
        if (!get)
            return send_error(c, 405, "%s not allowed on %s", method, url);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "status", json_object_new_string("ok"));
        json_object_object_add(o, "pid", json_object_new_int((int)getpid()));
        json_object_object_add(
            o, "nvml", json_object_new_string(hv->nvml ? tf_hv_nvml_library(hv->nvml) : ""));
        if (!hv->nvml)
            json_object_object_add(o, "nvmlError", json_object_new_string(hv->nvml_error));
        pthread_mutex_lock(&hv->mu);
        json_object_object_add(o, "gpus", json_object_new_int(hv->ndev));
        pthread_mutex_unlock(&hv->mu);
        return send_json(c, 200, o);
    }
    if (!strcmp(url, "/metrics")) {
        if (!get)
            return send_error(c, 405, "%s not allowed on %s", method, url);
        struct tf_dynbuf b;
        tf_dynbuf_init(&b, 8 << 20);
        tf_hv_prometheus(hv, &b);
        enum MHD_Result r =
            send_text(c, 200, "text/plain; version=0.0.4", tf_dynbuf_str(&b), b.len);
        tf_dynbuf_free(&b);
        return r;
    }
    if (tf_hv_console_is_page(url))
        return tf_hv_console_page(c, url, method);
    if (!authorized(hv, c, url))
        return send_error(c, 401, "missing or wrong API token (Authorization: Bearer ...)");
    if (!strncmp(url, "/api/v1/console/", 16)) {
        json_object *resp = NULL;
        int status = tf_hv_console_api(hv, c, method, url + 15, &resp);
        return send_json(c, status, resp);
    }
    if (!strcmp(url, "/api/v1/devices") || !strcmp(url, "/api/v1/workers")) {
        if (!get)
            return send_error(c, 405, "%s not allowed on %s", method, url);
        return send_json(c, 200, url[8] == 'd' ? tf_hv_devices_json(hv) : tf_hv_workers_json(hv));
    }
    if (!strcmp(url, PREFIX) || !strcmp(url, PREFIX "/")) {
        if (get)
            return send_json(c, 200, tf_hv_workloads_json(hv));
        if (!post)
            return send_error(c, 405, "%s not allowed on %s", method, url);
        enum MHD_Result ret;
        json_object *body = parse_body(c, cc, &ret);
        if (!body)
            return ret;
        json_object *resp = NULL;
        int status = tf_hv_api_create(hv, body, &resp);
        json_object_put(body);
        return send_json(c, status, resp);
    }
    if (!strncmp(url, PREFIX "/", sizeof(PREFIX))) {
        char name[TF_HV_NAME_MAX];
        const char *rest = url + sizeof(PREFIX);
        const char *slash = strchr(rest, '/');
        size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
        if (n == 0 || n >= sizeof(name))
            return send_error(c, 404, "no such workload");
        memcpy(name, rest, n);
        name[n] = '\0';
        if (!tf_hv_valid_name(name))
            return send_error(c, 400, "\"%.64s\" is not a valid workload name", name);
        if (slash && !strcmp(slash, "/processes")) {
            if (!post)
                return send_error(c, 405, "%s not allowed on %s", method, url);
            enum MHD_Result ret;
            json_object *body = parse_body(c, cc, &ret);
            if (!body)
                return ret;
            json_object *resp = NULL;
            int status = tf_hv_api_add_process(hv, name, body, &resp);
            json_object_put(body);
            return send_json(c, status, resp);
        }
        if (slash && !strcmp(slash, "/heartbeat")) {
            if (!post)
                return send_error(c, 405, "%s not allowed on %s", method, url);
            json_object *resp = NULL;
            int status = tf_hv_api_heartbeat(hv, name, &resp);
            return send_json(c, status, resp);
        }
        if (slash)
            return send_error(c, 404, "no such resource %.100s", url);
        if (get) {
            struct tf_hv_workload w;
            char err[256];
            if (tf_hv_state_get(hv->state, name, &w, err, sizeof(err)))
                return send_error(c, 404, "%s", err);
            return send_json(c, 200, tf_hv_workload_json(&w));
        }
        if (del) {
            json_object *resp = NULL;
            int status = tf_hv_api_delete(hv, name, &resp);
            return send_json(c, status, resp);
        }
        return send_error(c, 405, "%s not allowed on %s", method, url);
    }
    return send_error(c, 404, "no such resource %.100s", url);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    struct tf_hv_http *h = cls;
    struct conn *cc = *con_cls;
    if (!cc) {
        /* The headers are in: a peer with the token (any peer without one configured) now
         * holds a client slot instead of a pending one. Public paths (/healthz, /metrics) are
         * answered on a pending connection, which the deadline then closes. */
        if (!strncmp(url, "/api/", 5) && authorized(h->hv, c, url) && !gate_admit(h, c))
            return send_error(c, 503, "the API is serving %d connections already", API_MAX_CLIENTS);
        cc = calloc(1, sizeof(*cc));
        if (!cc)
            return MHD_NO;
        tf_dynbuf_init(&cc->body, TF_HV_MAX_BODY);
        *con_cls = cc;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!cc->too_large && tf_dynbuf_add(&cc->body, upload, *upload_size))
            cc->too_large = true;
        *upload_size = 0;
        return MHD_YES;
    }
    if (cc->too_large)
        return send_error(c, 413, "request body larger than %d bytes", TF_HV_MAX_BODY);
    return route(h->hv, c, url, method, cc);
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
                    enum MHD_RequestTerminationCode toe)
{
    struct conn *cc = *con_cls;
    if (cc) {
        tf_dynbuf_free(&cc->body);
        free(cc);
        *con_cls = NULL;
    }
}

int tf_hv_http_start(struct tf_hv *hv, struct tf_hv_http **out, char *err, size_t errlen)
{
    *out = NULL;
    char host[64];
    int port = 0;
    const char *colon = strrchr(hv->cfg.listen, ':');
    if (!colon || (size_t)(colon - hv->cfg.listen) >= sizeof(host)) {
        tf_errf(err, errlen, "listen: \"%s\" is not host:port", hv->cfg.listen);
        return TF_EINVAL;
    }
    memcpy(host, hv->cfg.listen, (size_t)(colon - hv->cfg.listen));
    host[colon - hv->cfg.listen] = '\0';
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || p < 0 || p > 65535) {
        tf_errf(err, errlen, "listen: bad port in \"%s\"", hv->cfg.listen);
        return TF_EINVAL;
    }
    port = (int)p;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        tf_errf(err, errlen, "listen: \"%s\" is not an IPv4 address", host);
        return TF_EINVAL;
    }
    struct tf_hv_http *h = calloc(1, sizeof(*h));
    if (!h)
        return TF_ENOMEM;
    h->hv = hv;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    /* MHD's own limit only bounds threads: the gate decides who waits and who is served. */
    h->d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED, on_done,
        h, MHD_OPTION_NOTIFY_CONNECTION, gate_notify, h, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned int)(API_MAX_CLIENTS + 2 * API_MAX_PENDING), MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned int)30, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128 * 1024), MHD_OPTION_END);
    if (!h->d) {
        tf_errf(err, errlen, "cannot listen on %s", hv->cfg.listen);
        pthread_mutex_destroy(&h->mu);
        pthread_cond_destroy(&h->cv);
        free(h);
        return TF_EIO;
    }
    h->watchdog_started = pthread_create(&h->watchdog, NULL, gate_watchdog, h) == 0;
    if (!h->watchdog_started)
        tf_log(TF_LOG_WARN, "hypervisor", "API handshake watchdog not started");
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    hv->port = info ? info->port : port;
    *out = h;
    return 0;
}

void tf_hv_http_stop(struct tf_hv_http *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->stop = true;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    if (h->watchdog_started)
        pthread_join(h->watchdog, NULL);
    MHD_stop_daemon(h->d);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    free(h);
}
