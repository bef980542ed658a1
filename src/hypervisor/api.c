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
 * With an API token configured, /api/ paths need "Authorization: Bearer <token>" (401).
 * Errors are JSON {"error": "..."} with 400 (bad input), 404, 405, 409 (exists), 413 (body over
 * TF_HV_MAX_BODY), 415 (not JSON), 422 (unschedulable, with "reasons"), 500, 501. A rejected
 * request changes nothing.
 */
#include "hypervisor/hv.h"

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
#include <unistd.h>

#define TF_HV_MAX_BODY (64 * 1024)
#define PREFIX "/api/v1/workloads"

struct tf_hv_http {
    struct MHD_Daemon *d;
    struct tf_hv *hv;
};

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
    if (hv->cfg.api_token[0] && !strncmp(url, "/api/", 5)) {
        const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
        size_t tl = strlen(hv->cfg.api_token);
        /* Constant-time comparison of the bearer token. */
        unsigned diff = !auth || strncmp(auth, "Bearer ", 7) || strlen(auth + 7) != tl;
        for (size_t i = 0; !diff && i < tl; i++)
            diff |= (unsigned char)auth[7 + i] ^ (unsigned char)hv->cfg.api_token[i];
        if (diff)
            return send_error(c, 401, "missing or wrong API token (Authorization: Bearer ...)");
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
    h->d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_NOTIFY_COMPLETED, on_done,
        h, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)64, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned int)30, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(128 * 1024), MHD_OPTION_END);
    if (!h->d) {
        tf_errf(err, errlen, "cannot listen on %s", hv->cfg.listen);
        free(h);
        return TF_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    hv->port = info ? info->port : port;
    *out = h;
    return 0;
}

void tf_hv_http_stop(struct tf_hv_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->d);
    free(h);
}
