/* SPDX-License-Identifier: Apache-2.0
 *
 * The device plugin's gRPC side on gRPC C-core (dp_server.h): one thread, one completion
 * queue, the DevicePlugin server on <dir>/<endpoint>, the Register call to kubelet.sock, and
 * the socket watch that re-serves and re-registers after a kubelet restart.
 *
 * Every completion carries a struct tag naming what finished. A server call (struct call)
 * lives until none of its batches is pending; the server is only torn down (restart, stop)
 * after its shutdown tag and every call's last batch have come back, so no tag ever outlives
 * its object. Unary calls: {initial metadata, receive request} then {response, status,
 * close}. ListAndWatch: {initial metadata, receive request} and {close} (which completes
 * when the kubelet goes away), then one send at a time, each the newest list.
 */
#include "hypervisor/deviceplugin/dp_server.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "hypervisor/deviceplugin/dp_codec.h"
#include "hypervisor/deviceplugin/dp_index.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SUBSYS "deviceplugin"
#define REGISTER_TIMEOUT_MS 10000
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 30000
#define MAX_MESSAGE (4 << 20)

enum tag_kind { T_NEW, T_RECV, T_SEND, T_CLOSE, T_SHUTDOWN, T_REGISTER };

struct tag {
    enum tag_kind kind;
    void *obj;
};

enum method { M_UNKNOWN, M_OPTIONS, M_WATCH, M_PREFERRED, M_ALLOCATE, M_PRESTART };

static const struct {
    const char *path;
    enum method m;
} methods[] = {
    {"/v1beta1.DevicePlugin/GetDevicePluginOptions", M_OPTIONS},
    {"/v1beta1.DevicePlugin/ListAndWatch", M_WATCH},
    {"/v1beta1.DevicePlugin/GetPreferredAllocation", M_PREFERRED},
    {"/v1beta1.DevicePlugin/Allocate", M_ALLOCATE},
    {"/v1beta1.DevicePlugin/PreStartContainer", M_PRESTART},
};
#define REGISTER_METHOD "/v1beta1.Registration/Register"

struct tf_dp;

/* One server call; owned by the plugin thread, in dp->calls until its last batch is back. */
struct call {
    struct tf_dp *dp;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array md;
    grpc_byte_buffer *recv, *send;
    grpc_slice status_details;
    enum method method;
    int pending;   /* batches started and not completed */
    int cancelled; /* RECV_CLOSE_ON_SERVER output */
    bool ready;    /* ListAndWatch: request received, may send */
    bool sending;  /* ListAndWatch: a send is in flight */
    bool closed;   /* ListAndWatch: the call is over */
    uint64_t sent_gen;
    struct tag t_new, t_recv, t_send, t_close;
    struct call *prev, *next;
};

/* The Register call in flight. */
struct reg {
    grpc_channel *ch;
    grpc_call *call;
    grpc_byte_buffer *send, *recv;
    grpc_metadata_array md_initial, md_trailing;
    grpc_status_code status;
    grpc_slice details;
    const char *error_string;
    struct tag t;
};

struct tf_dp {
    struct tf_dp_config cfg;
    int key;                  /* pod-index plugin tensor-fusion.ai/index_<key>, -1: vgpu */
    char resource[48];        /* the resource it registers */
    tf_dp_resolve_fn resolve; /* pod-index plugins: the pod of an index */
    void *rarg;
    char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char kubelet_sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
    tf_dp_inventory_fn inventory;
    void *arg;
    pthread_t thread;
    atomic_bool stop;

    /* Everything below belongs to the plugin thread. */
    grpc_completion_queue *cq;
    grpc_server *server; /* NULL while not serving */
    bool shutting_down, shutdown_done;
    struct tag t_shutdown;
    dev_t sock_dev;
    ino_t sock_ino;
    int64_t next_serve_ms;
    bool serve_failing; /* logged once per failure streak */
    struct call *calls;
    int ncalls;

    int ifd, wd;          /* inotify on the plugin directory, or -1 */
    bool kubelet_changed; /* kubelet.sock (re)created since the last Register attempt */
    struct reg *reg;      /* in flight, or NULL */
    bool registered;      /* the kubelet accepted us ... */
    dev_t kubelet_dev;    /* ... on this kubelet.sock (also the last one tried) */
    ino_t kubelet_ino;
    int64_t next_reg_ms; /* earliest retry on the same kubelet.sock */
    int backoff_ms;
    bool kubelet_missing_logged;

    struct tf_dp_list list;
    uint64_t gen; /* bumped when the list changes */
    uint8_t *list_msg;
    size_t list_len;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static gpr_timespec in_ms(int64_t ms)
{
    return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC), gpr_time_from_millis(ms, GPR_TIMESPAN));
}

static grpc_byte_buffer *bytes_to_bb(const uint8_t *p, size_t n)
{
    grpc_slice s = grpc_slice_from_copied_buffer((const char *)p, n);
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    return bb;
}

/* The whole message in BB as one slice (caller unrefs); false when unreadable. */
static bool bb_to_slice(grpc_byte_buffer *bb, grpc_slice *out)
{
    grpc_byte_buffer_reader r;
    if (!bb || !grpc_byte_buffer_reader_init(&r, bb))
        return false;
    *out = grpc_byte_buffer_reader_readall(&r);
    grpc_byte_buffer_reader_destroy(&r);
    return true;
}

static int grpc_status_for(int rc)
{
    switch (rc) {
    case TF_EPROTO:
    case TF_EINVAL:
    case TF_ERANGE:
        return GRPC_STATUS_INVALID_ARGUMENT;
    case TF_ENOENT:
        return GRPC_STATUS_NOT_FOUND;
    case TF_ESTATE:
        return GRPC_STATUS_FAILED_PRECONDITION;
    case TF_ENOMEM:
        return GRPC_STATUS_RESOURCE_EXHAUSTED;
    case TF_ECONFLICT:
    case TF_ETIMEDOUT:
        return GRPC_STATUS_UNAVAILABLE;
    case TF_ENOTSUP:
        return GRPC_STATUS_UNIMPLEMENTED;
    default:
        return GRPC_STATUS_INTERNAL;
    }
}

/* ---- config ------------------------------------------------------------------------------ */

void tf_dp_config_init(struct tf_dp_config *c)
{
    memset(c, 0, sizeof(*c));
    tf_strlcpy(c->dir, TF_DP_DEFAULT_DIR, sizeof(c->dir));
    tf_strlcpy(c->endpoint, TF_DP_DEFAULT_ENDPOINT, sizeof(c->endpoint));
    c->slots = TF_DP_DEFAULT_SLOTS;
}

int tf_dp_config_option(struct tf_dp_config *c, const char *flag, const char *val, char *err,
                        size_t errlen)
{
    if (!strcmp(flag, "--device-plugin")) {
        bool on;
        if (!strcmp(val, "on") || !strcmp(val, "off"))
            on = val[1] == 'n';
        else if (tf_parse_bool(val, &on)) {
            tf_errf(err, errlen, "--device-plugin: \"%s\" is not on or off", val);
            return TF_EINVAL;
        }
        c->enabled = on;
        return 1;
    }
    if (!strcmp(flag, "--kubelet-dir")) {
        if (!*val || !tf_strlcpy(c->dir, val, sizeof(c->dir))) {
            tf_errf(err, errlen, "--kubelet-dir: \"%s\" is empty or longer than %zu bytes", val,
                    sizeof(c->dir) - 1);
            return TF_ERANGE;
        }
        return 1;
    }
    if (!strcmp(flag, "--vgpu-slots")) {
        char *end;
        long n = strtol(val, &end, 10);
        if (!*val || *end || n < 1 || n > TF_DP_MAX_SLOTS) {
            tf_errf(err, errlen, "--vgpu-slots: \"%s\" is not 1..%d", val, TF_DP_MAX_SLOTS);
            return TF_ERANGE;
        }
        c->slots = (int)n;
        return 1;
    }
    return 0;
}

/* ---- inventory --------------------------------------------------------------------------- */

static void watch_send(struct call *c);

static void refresh_inventory(struct tf_dp *dp)
{
    if (dp->key >= 0) { /* a pod-index plugin's devices never change */
        if (!dp->gen && tf_dp_encode_index_list(dp->key, &dp->list_msg, &dp->list_len) == 0)
            dp->gen = 1;
        return;
    }
    struct tf_dp_gpu gpus[TF_DP_MAX_GPUS];
    char uuids[TF_DP_MAX_GPUS][64];
    int n = dp->inventory(dp->arg, gpus, uuids, TF_DP_MAX_GPUS);
    if (n < 0)
        return;
    struct tf_dp_list nl;
    uint8_t *msg;
    size_t len;
    if (tf_dp_list_build(gpus, n, dp->cfg.slots, &nl))
        return;
    if (dp->gen && tf_dp_list_equal(&nl, &dp->list)) {
        tf_dp_list_free(&nl);
        return;
    }
    if (tf_dp_encode_list(&nl, &msg, &len)) {
        tf_dp_list_free(&nl);
        return;
    }
    if (nl.skipped)
        tf_log(TF_LOG_WARN, SUBSYS,
               "%d GPU(s) not offered (uuid empty, repeated or longer "
               "than %d characters)",
               nl.skipped, TF_DP_UUID_MAX);
    tf_dp_list_free(&dp->list);
    free(dp->list_msg);
    dp->list = nl;
    dp->list_msg = msg;
    dp->list_len = len;
    dp->gen++;
    tf_log(TF_LOG_INFO, SUBSYS, "%d vGPU device(s) on %d GPU(s), %d healthy", nl.nslot, nl.ngpu,
           tf_dp_list_healthy(&nl));
    for (struct call *c = dp->calls; c; c = c->next)
        if (c->method == M_WATCH)
            watch_send(c);
}

/* ---- server calls ------------------------------------------------------------------------ */

static void call_release(struct call *c)
{
    struct tf_dp *dp = c->dp;
    if (c->prev)
        c->prev->next = c->next;
    else
        dp->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    dp->ncalls--;
    if (c->call)
        grpc_call_unref(c->call);
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->md);
    if (c->recv)
        grpc_byte_buffer_destroy(c->recv);
    if (c->send)
        grpc_byte_buffer_destroy(c->send);
    grpc_slice_unref(c->status_details);
    free(c);
}

static bool start_batch(struct call *c, const grpc_op *ops, size_t n, struct tag *t)
{
    grpc_call_error e = grpc_call_start_batch(c->call, ops, n, t, NULL);
    if (e != GRPC_CALL_OK) {
        tf_log(TF_LOG_ERROR, SUBSYS, "grpc_call_start_batch: error %d", (int)e);
        return false;
    }
    c->pending++;
    return true;
}

/* Waits for the next incoming call on the current server. */
static void request_next(struct tf_dp *dp)
{
    struct call *c = calloc(1, sizeof(*c));
    if (!c) {
        tf_log(TF_LOG_ERROR, SUBSYS, "out of memory: no longer accepting calls");
        return;
    }
    c->dp = dp;
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->md);
    c->status_details = grpc_empty_slice();
    c->t_new = (struct tag){T_NEW, c};
    c->t_recv = (struct tag){T_RECV, c};
    c->t_send = (struct tag){T_SEND, c};
    c->t_close = (struct tag){T_CLOSE, c};
    c->next = dp->calls;
    if (dp->calls)
        dp->calls->prev = c;
    dp->calls = c;
    dp->ncalls++;
    grpc_call_error e = grpc_server_request_call(dp->server, &c->call, &c->details, &c->md, dp->cq,
                                                 dp->cq, &c->t_new);
    if (e != GRPC_CALL_OK) {
        tf_log(TF_LOG_ERROR, SUBSYS, "grpc_server_request_call: error %d", (int)e);
        call_release(c);
        return;
    }
    c->pending = 1;
}

/* The last batch of a call: [initial metadata,] the response MSG (NULL on error), the status
 * [, the close: ListAndWatch has its own close batch]. */
static void respond(struct call *c, bool initial, const uint8_t *msg, size_t len, int status,
                    const char *why)
{
    grpc_op ops[4];
    size_t n = 0;
    memset(ops, 0, sizeof(ops));
    if (initial)
        ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    if (msg) {
        c->send = bytes_to_bb(msg, len);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = c->send;
    }
    grpc_slice_unref(c->status_details);
    c->status_details = grpc_slice_from_copied_string(why ? why : "");
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = (grpc_status_code)status;
    ops[n++].data.send_status_from_server.status_details = why ? &c->status_details : NULL;
    if (c->method != M_WATCH) {
        ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
    }
    start_batch(c, ops, n, &c->t_send);
}

static void watch_send(struct call *c)
{
    struct tf_dp *dp = c->dp;
    if (!c->ready || c->sending || c->closed || dp->shutting_down || c->sent_gen == dp->gen)
        return;
    if (c->send)
        grpc_byte_buffer_destroy(c->send);
    c->send = bytes_to_bb(dp->list_msg, dp->list_len);
    grpc_op op;
    memset(&op, 0, sizeof(op));
    op.op = GRPC_OP_SEND_MESSAGE;
    op.data.send_message.send_message = c->send;
    if (start_batch(c, &op, 1, &c->t_send)) {
        c->sending = true;
        c->sent_gen = dp->gen;
    }
}

static void call_started(struct call *c)
{
    c->method = M_UNKNOWN;
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
        if (grpc_slice_str_cmp(c->details.method, methods[i].path) == 0)
            c->method = methods[i].m;
    if (c->method == M_UNKNOWN) {
        char *m = grpc_slice_to_c_string(c->details.method);
        tf_log(TF_LOG_WARN, SUBSYS, "unknown method %.200s", m);
        gpr_free(m);
        respond(c, true, NULL, 0, GRPC_STATUS_UNIMPLEMENTED, "unknown method");
        return;
    }
    grpc_op ops[2];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_RECV_MESSAGE;
    ops[1].data.recv_message.recv_message = &c->recv;
    start_batch(c, ops, 2, &c->t_recv);
    if (c->method == M_WATCH) {
        grpc_op close;
        memset(&close, 0, sizeof(close));
        close.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
        close.data.recv_close_on_server.cancelled = &c->cancelled;
        start_batch(c, &close, 1, &c->t_close);
    }
}

/* The request message of C arrived (OK) or the call died. */
static void call_received(struct call *c, bool ok)
{
    struct tf_dp *dp = c->dp;
    grpc_slice in;
    if (!ok || c->closed)
        return;
    if (!bb_to_slice(c->recv, &in)) {
        respond(c, false, NULL, 0, GRPC_STATUS_INVALID_ARGUMENT, "no request message");
        return;
    }
    const uint8_t *p = GRPC_SLICE_START_PTR(in);
    size_t len = GRPC_SLICE_LENGTH(in);
    uint8_t *out = NULL;
    size_t outlen = 0;
    char err[512] = "";
    int rc = 0;
    int k = dp->key;
    switch (c->method) {
    case M_OPTIONS:
        if (!(rc = tf_dp_decode_empty(p, len, err, sizeof(err))))
            rc = k < 0 ? tf_dp_encode_options(&out, &outlen)
                       : tf_dp_encode_index_options(&out, &outlen);
        break;
    case M_WATCH:
        rc = tf_dp_decode_empty(p, len, err, sizeof(err));
        break;
    case M_PREFERRED:
        if (k >= 0) {
            snprintf(err, sizeof(err), "%s offers no preferred allocation", dp->resource);
            rc = TF_ENOTSUP;
        } else {
            rc = tf_dp_handle_preferred(&dp->list, p, len, &out, &outlen, err, sizeof(err));
        }
        break;
    case M_ALLOCATE:
        rc = k < 0 ? tf_dp_handle_allocate(&dp->list, p, len, &out, &outlen, err, sizeof(err))
                   : tf_dp_handle_index_allocate(k, dp->resolve, dp->rarg, p, len, &out, &outlen,
                                                 err, sizeof(err));
        if (rc)
            tf_log(TF_LOG_WARN, SUBSYS, "%s: Allocate refused: %s", dp->resource, err);
        else
            tf_log(TF_LOG_INFO, SUBSYS, "%s: Allocate: %zu byte response", dp->resource, outlen);
        break;
    case M_PRESTART:
        rc = k < 0 ? tf_dp_handle_prestart(&dp->list, p, len, &out, &outlen, err, sizeof(err))
                   : tf_dp_handle_index_prestart(k, p, len, &out, &outlen, err, sizeof(err));
        break;
    case M_UNKNOWN:
        break;
    }
    grpc_slice_unref(in);
    if (c->method == M_WATCH) {
        if (rc) {
            respond(c, false, NULL, 0, grpc_status_for(rc), err);
        } else {
            c->ready = true;
            watch_send(c);
        }
    } else {
        respond(c, false, out, outlen, rc ? grpc_status_for(rc) : GRPC_STATUS_OK, rc ? err : NULL);
    }
    free(out);
}

static void call_event(struct call *c, enum tag_kind kind, bool ok)
{
    struct tf_dp *dp = c->dp;
    c->pending--;
    switch (kind) {
    case T_NEW:
        if (!ok)
            break; /* the server is shutting down */
        if (!dp->shutting_down)
            request_next(dp);
        call_started(c);
        break;
    case T_RECV:
        call_received(c, ok);
        break;
    case T_SEND:
        c->sending = false;
        if (c->send) {
            grpc_byte_buffer_destroy(c->send);
            c->send = NULL;
        }
        if (c->method == M_WATCH && ok)
            watch_send(c); /* the list may have changed meanwhile */
        break;
    case T_CLOSE:
        c->closed = true;
        break;
    default:
        break;
    }
    if (c->pending == 0)
        call_release(c);
}

/* ---- serving ----------------------------------------------------------------------------- */

static bool same_file(const char *path, dev_t dev, ino_t ino, bool *exists)
{
    struct stat st;
    *exists = stat(path, &st) == 0;
    return *exists && st.st_dev == dev && st.st_ino == ino;
}

static int serve(struct tf_dp *dp)
{
    struct stat st;
    if (lstat(dp->sock, &st) == 0 && S_ISSOCK(st.st_mode))
        unlink(dp->sock); /* a previous hypervisor's */
    grpc_arg arg = {.type = GRPC_ARG_INTEGER,
                    .key = (char *)GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                    .value.integer = MAX_MESSAGE};
    grpc_channel_args args = {.num_args = 1, .args = &arg};
    grpc_server *s = grpc_server_create(&args, NULL);
    grpc_server_register_completion_queue(s, dp->cq, NULL);
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    char addr[sizeof(dp->sock) + 8];
    snprintf(addr, sizeof(addr), "unix:%s", dp->sock);
    int port = grpc_server_add_http2_port(s, addr, creds);
    grpc_server_credentials_release(creds);
    if (!port || stat(dp->sock, &st) != 0) {
        if (!dp->serve_failing)
            tf_log(TF_LOG_WARN, SUBSYS, "cannot listen on %s (does %s exist?); retrying", dp->sock,
                   dp->cfg.dir);
        dp->serve_failing = true;
        grpc_server_destroy(s);
        return TF_EIO;
    }
    dp->serve_failing = false;
    grpc_server_start(s);
    dp->server = s;
    dp->sock_dev = st.st_dev;
    dp->sock_ino = st.st_ino;
    request_next(dp);
    tf_log(TF_LOG_INFO, SUBSYS, "serving v1beta1.DevicePlugin on %s", dp->sock);
    return 0;
}

static void on_event(struct tf_dp *dp, struct tag *t, bool ok);

/* Shuts the server down and waits until its every call is gone. */
static void unserve(struct tf_dp *dp)
{
    if (!dp->server)
        return;
    dp->shutting_down = true;
    dp->shutdown_done = false;
    grpc_server_shutdown_and_notify(dp->server, dp->cq, &dp->t_shutdown);
    grpc_server_cancel_all_calls(dp->server);
    while (!dp->shutdown_done || dp->ncalls > 0) {
        grpc_event ev = grpc_completion_queue_next(dp->cq, in_ms(1000), NULL);
        if (ev.type == GRPC_OP_COMPLETE)
            on_event(dp, ev.tag, ev.success);
    }
    grpc_server_destroy(dp->server);
    dp->server = NULL;
    dp->shutting_down = false;
    bool exists;
    if (same_file(dp->sock, dp->sock_dev, dp->sock_ino, &exists))
        unlink(dp->sock);
}

/* ---- registration ------------------------------------------------------------------------ */

static void reg_free(struct reg *r)
{
    if (r->call)
        grpc_call_unref(r->call);
    if (r->ch)
        grpc_channel_destroy(r->ch);
    if (r->send)
        grpc_byte_buffer_destroy(r->send);
    if (r->recv)
        grpc_byte_buffer_destroy(r->recv);
    grpc_metadata_array_destroy(&r->md_initial);
    grpc_metadata_array_destroy(&r->md_trailing);
    grpc_slice_unref(r->details);
    gpr_free((void *)r->error_string);
    free(r);
}

static void start_register(struct tf_dp *dp)
{
    uint8_t *msg;
    size_t len;
    struct reg *r = calloc(1, sizeof(*r));
    if (!r || (dp->key < 0 ? tf_dp_encode_register(dp->cfg.endpoint, &msg, &len)
                           : tf_dp_encode_index_register(dp->key, dp->cfg.endpoint, &msg, &len))) {
        free(r);
        return;
    }
    grpc_metadata_array_init(&r->md_initial);
    grpc_metadata_array_init(&r->md_trailing);
    r->details = grpc_empty_slice();
    r->t = (struct tag){T_REGISTER, r};
    r->send = bytes_to_bb(msg, len);
    free(msg);
    char addr[sizeof(dp->kubelet_sock) + 8];
    snprintf(addr, sizeof(addr), "unix:%s", dp->kubelet_sock);
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    r->ch = grpc_channel_create(addr, creds, NULL);
    grpc_channel_credentials_release(creds);
    gpr_timespec deadline = gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
                                         gpr_time_from_millis(REGISTER_TIMEOUT_MS, GPR_TIMESPAN));
    r->call = grpc_channel_create_call(r->ch, NULL, GRPC_PROPAGATE_DEFAULTS, dp->cq,
                                       grpc_slice_from_static_string(REGISTER_METHOD), NULL,
                                       deadline, NULL);
    grpc_op ops[6];
    memset(ops, 0, sizeof(ops));
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = r->send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &r->md_initial;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &r->recv;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &r->md_trailing;
    ops[5].data.recv_status_on_client.status = &r->status;
    ops[5].data.recv_status_on_client.status_details = &r->details;
    ops[5].data.recv_status_on_client.error_string = &r->error_string;
    grpc_call_error e = grpc_call_start_batch(r->call, ops, 6, &r->t, NULL);
    if (e != GRPC_CALL_OK) {
        tf_log(TF_LOG_ERROR, SUBSYS, "Register: grpc_call_start_batch: error %d", (int)e);
        reg_free(r);
        return;
    }
    dp->reg = r;
    tf_log(TF_LOG_DEBUG, SUBSYS, "registering %s with the kubelet on %s", dp->resource,
           dp->kubelet_sock);
}

static void register_done(struct tf_dp *dp, bool ok)
{
    struct reg *r = dp->reg;
    dp->reg = NULL;
    grpc_slice in;
    char err[256] = "";
    bool accepted = ok && r->status == GRPC_STATUS_OK && bb_to_slice(r->recv, &in);
    if (accepted) {
        accepted = tf_dp_decode_empty(GRPC_SLICE_START_PTR(in), GRPC_SLICE_LENGTH(in), err,
                                      sizeof(err)) == 0;
        grpc_slice_unref(in);
    }
    if (accepted) {
        dp->registered = true;
        dp->backoff_ms = BACKOFF_MIN_MS;
        tf_log(TF_LOG_INFO, SUBSYS, "registered %s (endpoint %s) with the kubelet on %s",
               dp->resource, dp->cfg.endpoint, dp->kubelet_sock);
    } else {
        char *details = grpc_slice_to_c_string(r->details);
        tf_log(TF_LOG_WARN, SUBSYS,
               "registration with the kubelet failed (status %d: %.200s%s%s); "
               "retrying in %d ms",
               (int)r->status, details, err[0] ? "; " : "", err, dp->backoff_ms);
        gpr_free(details);
        dp->next_reg_ms = mono_ms() + dp->backoff_ms;
        dp->backoff_ms = dp->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : dp->backoff_ms * 2;
    }
    reg_free(r);
}

static void on_event(struct tf_dp *dp, struct tag *t, bool ok)
{
    switch (t->kind) {
    case T_SHUTDOWN:
        dp->shutdown_done = true;
        break;
    case T_REGISTER:
        register_done(dp, ok);
        break;
    default:
        call_event(t->obj, t->kind, ok);
        break;
    }
}

/* ---- the thread -------------------------------------------------------------------------- */

/* Notes kubelet.sock being created in the plugin directory. A kubelet restart can recreate
 * it between two ticks with the same inode number, which stat alone would miss. */
static void watch_kubelet(struct tf_dp *dp)
{
    if (dp->ifd < 0)
        return;
    if (dp->wd < 0) {
        dp->wd = inotify_add_watch(dp->ifd, dp->cfg.dir, IN_CREATE | IN_MOVED_TO);
        if (dp->wd < 0)
            return; /* not there yet: stat polling covers it meanwhile */
        dp->kubelet_changed = true;
    }
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n;
    while ((n = read(dp->ifd, buf, sizeof(buf))) > 0) {
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            if (ev->mask & IN_IGNORED)
                dp->wd = -1; /* the directory went away */
            else if ((ev->mask & IN_Q_OVERFLOW) || (ev->len && !strcmp(ev->name, "kubelet.sock")))
                dp->kubelet_changed = true;
            p += sizeof(*ev) + ev->len;
        }
    }
}

static void tick(struct tf_dp *dp)
{
    int64_t now = mono_ms();
    refresh_inventory(dp);
    watch_kubelet(dp);
    bool exists;
    if (dp->server && !same_file(dp->sock, dp->sock_dev, dp->sock_ino, &exists)) {
        tf_log(TF_LOG_INFO, SUBSYS, "%s was removed (kubelet restart?): serving again", dp->sock);
        unserve(dp);
        dp->registered = false;
        dp->kubelet_ino = 0; /* register at once */
    }
    if (!dp->server && now >= dp->next_serve_ms && serve(dp))
        dp->next_serve_ms = now + BACKOFF_MIN_MS;
    struct stat st;
    if (stat(dp->kubelet_sock, &st) != 0) {
        if (!dp->kubelet_missing_logged)
            tf_log(TF_LOG_INFO, SUBSYS, "waiting for the kubelet (%s)", dp->kubelet_sock);
        dp->kubelet_missing_logged = true;
        dp->registered = false;
        dp->kubelet_ino = 0;
        return;
    }
    dp->kubelet_missing_logged = false;
    bool same =
        !dp->kubelet_changed && st.st_dev == dp->kubelet_dev && st.st_ino == dp->kubelet_ino;
    if (dp->registered && !same) {
        tf_log(TF_LOG_INFO, SUBSYS, "%s was recreated (kubelet restart): registering again",
               dp->kubelet_sock);
        dp->registered = false;
    }
    if (dp->registered || dp->reg || !dp->server || (same && now < dp->next_reg_ms))
        return;
    if (!same)
        dp->backoff_ms = BACKOFF_MIN_MS;
    dp->kubelet_dev = st.st_dev;
    dp->kubelet_ino = st.st_ino;
    dp->kubelet_changed = false;
    start_register(dp);
}

static void *run(void *arg)
{
    struct tf_dp *dp = arg;
    while (!atomic_load(&dp->stop)) {
        tick(dp);
        int64_t until = mono_ms() + TF_DP_TICK_MS;
        for (int64_t now = mono_ms(); now < until && !atomic_load(&dp->stop); now = mono_ms()) {
            grpc_event ev = grpc_completion_queue_next(dp->cq, in_ms(until - now), NULL);
            if (ev.type == GRPC_OP_COMPLETE)
                on_event(dp, ev.tag, ev.success);
            else if (ev.type == GRPC_QUEUE_TIMEOUT)
                break;
        }
    }
    if (dp->reg)
        grpc_call_cancel(dp->reg->call, NULL);
    unserve(dp);
    while (dp->reg) {
        grpc_event ev = grpc_completion_queue_next(dp->cq, in_ms(1000), NULL);
        if (ev.type == GRPC_OP_COMPLETE)
            on_event(dp, ev.tag, ev.success);
    }
    return NULL;
}

static int start(struct tf_dp *dp, const struct tf_dp_config *cfg, struct tf_dp **out, char *err,
                 size_t errlen)
{
    *out = NULL;
    if (!dp)
        return TF_ENOMEM;
    dp->cfg = *cfg;
    int a = snprintf(dp->sock, sizeof(dp->sock), "%s/%s", cfg->dir, cfg->endpoint);
    int b = snprintf(dp->kubelet_sock, sizeof(dp->kubelet_sock), "%s/kubelet.sock", cfg->dir);
    if (a < 0 || b < 0 || (size_t)a >= sizeof(dp->sock) || (size_t)b >= sizeof(dp->sock)) {
        tf_errf(err, errlen, "--kubelet-dir %s: socket paths longer than %zu bytes", cfg->dir,
                sizeof(dp->sock) - 1);
        free(dp);
        return TF_ERANGE;
    }
    dp->backoff_ms = BACKOFF_MIN_MS;
    dp->t_shutdown = (struct tag){T_SHUTDOWN, dp};
    dp->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    dp->wd = -1;
    grpc_init();
    dp->cq = grpc_completion_queue_create_for_next(NULL);
    if (pthread_create(&dp->thread, NULL, run, dp) != 0) {
        tf_errf(err, errlen, "device plugin: cannot start its thread");
        grpc_completion_queue_shutdown(dp->cq);
        grpc_completion_queue_destroy(dp->cq);
        grpc_shutdown();
        if (dp->ifd >= 0)
            close(dp->ifd);
        free(dp);
        return TF_EIO;
    }
    *out = dp;
    return 0;
}

int tf_dp_start(const struct tf_dp_config *cfg, tf_dp_inventory_fn inventory, void *arg,
                struct tf_dp **out, char *err, size_t errlen)
{
    struct tf_dp *dp = calloc(1, sizeof(*dp));
    if (dp) {
        dp->key = -1;
        tf_strlcpy(dp->resource, TF_DP_RESOURCE, sizeof(dp->resource));
        dp->inventory = inventory;
        dp->arg = arg;
    }
    return start(dp, cfg, out, err, errlen);
}

int tf_dp_start_index(const struct tf_dp_config *cfg, int k, tf_dp_resolve_fn resolve, void *arg,
                      struct tf_dp **out, char *err, size_t errlen)
{
    struct tf_dp *dp = calloc(1, sizeof(*dp));
    struct tf_dp_config c = *cfg;
    snprintf(c.endpoint, sizeof(c.endpoint), TF_DP_INDEX_ENDPOINT_FMT, k);
    if (dp && tf_podidx_resource(k, dp->resource, sizeof(dp->resource))) {
        free(dp);
        *out = NULL;
        tf_errf(err, errlen, "device plugin: no pod-index resource %d", k);
        return TF_ERANGE;
    }
    if (dp) {
        dp->key = k;
        dp->resolve = resolve;
        dp->rarg = arg;
    }
    return start(dp, &c, out, err, errlen);
}

void tf_dp_stop(struct tf_dp *dp)
{
    if (!dp)
        return;
    atomic_store(&dp->stop, true);
    pthread_join(dp->thread, NULL);
    grpc_completion_queue_shutdown(dp->cq);
    while (grpc_completion_queue_next(dp->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(dp->cq);
    grpc_shutdown();
    if (dp->ifd >= 0)
        close(dp->ifd);
    tf_dp_list_free(&dp->list);
    free(dp->list_msg);
    free(dp);
}
