/* SPDX-License-Identifier: Apache-2.0
 *
 * Internal to tf-hypervisor: the daemon's context and the operations the HTTP API calls.
 * One struct tf_hv per daemon, created by main and passed to every part (no globals).
 *
 * Locking: `mu` guards the sample arrays and the device list cache; the state store has its
 * own lock (state.h). Operations below are thread-safe (the API runs them on libmicrohttpd's
 * threads while the sampler thread runs).
 */
#ifndef TF_HYPERVISOR_HV_H
#define TF_HYPERVISOR_HV_H

#include "hypervisor/paths.h"
#include "hypervisor/deviceplugin/dp_server.h"
#include "hypervisor/nvml.h"
#include "hypervisor/state.h"
#include "metrics/sink.h"

#include <json-c/json.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct tf_hv_soft;
struct tf_hv_console;

struct tf_hv_config {
    char state_dir[512];       /* state.db, metrics.db, hypervisor.addr, shm/ live here */
    char listen[128];          /* "127.0.0.1:0" by default (port written to hypervisor.addr) */
    char nvml_lib[256];        /* "" = $TF_NVML_LIBRARY or libnvidia-ml.so.1 */
    char metrics_sink[600];    /* "" = sqlite:<state_dir>/metrics.db; "none" disables */
    int sample_interval_ms;    /* live samples (API, top), default 1000 */
    int metrics_interval_ms;   /* metric lines, default 5000 */
    int discovery_interval_ms; /* default 5000 */
    int liveness_interval_ms;  /* default 250 */
    char node[64];             /* node tag of metric lines (default: hostname) */
    char pool[64];             /* pool tag (default "local"; Kubernetes mode: "" unless given) */
    char lib_dir[512];         /* where libtf_limiter.so / libtf_client.so / tf-worker live */
    char worker_host[64];      /* address hard-isolation workers listen on (127.0.0.1) */
    /* when set, /api/ requires "Authorization: Bearer <token>" */
    char api_token[TF_HV_TOKEN_MAX + 1];
    int lease_timeout_ms;   /* a leased workload without heartbeat this long is released */
    int escape_action;      /* enum tf_hv_escape_action (escape.h): default report */
    int64_t escape_slack;   /* VRAM allowed per process beyond a workload's limit */
    bool underreport_pause; /* pause processes caught under-reporting compute (engine.h) */
    struct tf_dp_config dp; /* kubelet device plugin (Kubernetes mode; off by default) */
    bool kubernetes;        /* node agent: tf-controller writes the allocation tables */
};

struct tf_hv {
    struct tf_hv_config cfg;
    struct tf_hv_state *state;
    struct tf_hv_nvml *nvml; /* NULL when NVML could not be loaded (no GPUs) */
    char nvml_error[256];
    struct tf_metrics_sink *sink;  /* NULL when disabled */
    struct tf_hv_soft *soft;       /* limit engine + regions; NULL when it could not start */
    struct tf_hv_console *console; /* web console (console.h); NULL: no events recorded */

    pthread_mutex_t mu;
    int ndev;                                           /* [mu] */
    struct tf_hv_gpu_sample samples[TF_HV_MAX_DEVICES]; /* [mu] by device index */
    char uuids[TF_HV_MAX_DEVICES][64];                  /* [mu] uuid of sample i */
    /* The pool metric lines carry: cfg.pool, or in Kubernetes mode the pool tf-controller
     * assigned this node's GPUs (tensor-fusion.ai/gpupool, k8s_gpus.h). It points into
     * POOL_NAMES, which keeps every value ever set until the hypervisor exits, so a reader's
     * pointer stays valid (metric points borrow their strings). */
    _Atomic(const char *) pool_tag;
    json_object *pool_names; /* [mu] array of strings */

    atomic_bool stop;
    int port;
    /* Workloads caught over their VRAM limit (escape.c): NAME -> {"count": n, "active": b}
     * [mu]. */
    json_object *escapes;
    /* Wall-clock ms the API last turned a connection away for want of room (api.c); 0:
     * never. Leases are not expired while this is recent. */
    _Atomic int64_t api_busy_ms;
    /* Partitioned pods of this node by pod index (k8s_index.h): published by the node agent,
     * read by the pod-index device plugins. */
    struct tf_hv_idx *idx;
};

/* Creates a workload from the JSON request body: normalise, place, record, set up the
 * runtime (shm region / worker). On success *RESP is the workload JSON with "env" (the
 * variables the app must run with). Returns an HTTP status and sets *RESP either way (an
 * error object {"error": msg, "reasons": [...]} on failure). */
int tf_hv_api_create(struct tf_hv *hv, json_object *body, json_object **resp);
/* Deletes workload NAME and tears its runtime down. HTTP status; *RESP set. */
int tf_hv_api_delete(struct tf_hv *hv, const char *name, json_object **resp);
/* Renews NAME's lease (remote clients). HTTP status; *RESP set. */
int tf_hv_api_heartbeat(struct tf_hv *hv, const char *name, json_object **resp);
/* Adds a process to NAME (body {"pid": N}). HTTP status; *RESP set. */
int tf_hv_api_add_process(struct tf_hv *hv, const char *name, json_object *body,
                          json_object **resp);

/* JSON views (new objects, caller owns). */
json_object *tf_hv_devices_json(struct tf_hv *hv);
json_object *tf_hv_workloads_json(struct tf_hv *hv);
json_object *tf_hv_workload_json(const struct tf_hv_workload *w);
json_object *tf_hv_workers_json(struct tf_hv *hv);
/* Prometheus text exposition into OUT. */
int tf_hv_prometheus(struct tf_hv *hv, struct tf_dynbuf *out);

/* Escape bookkeeping (escape.c) [takes mu]: NOTE counts one more check over the limit for
 * NAME and returns true when it starts an episode (to be logged); CLEAR ends the episode;
 * COUNT is the number of episodes so far. */
bool tf_hv_escape_note(struct tf_hv *hv, const char *name);
void tf_hv_escape_clear(struct tf_hv *hv, const char *name);
int64_t tf_hv_escape_count(struct tf_hv *hv, const char *name);

/* Releases workloads whose every registered process has exited (PID liveness). Returns the
 * number released. */
int tf_hv_reap(struct tf_hv *hv);
/* Re-runs discovery when the device set changed. */
void tf_hv_discover(struct tf_hv *hv);
/* Samples devices (the live view of the API) and, when RECORD, writes one round of metric
 * lines to the sink. */
void tf_hv_sample_and_record(struct tf_hv *hv, bool record);
/* The pool tag of metric lines (valid while HV lives; "" before any) and its update (copied;
 * 0 or TF_ENOMEM). Thread-safe. */
const char *tf_hv_pool_tag(const struct tf_hv *hv);
int tf_hv_set_pool_tag(struct tf_hv *hv, const char *pool);
/* Fills P (a tf_worker_usage point, strings borrowed) with its tags and fields: WORKER's
 * usage of GPU UUID (of GPU_TFLOPS_MILLI / GPU_VRAM capacity) and, when THROTTLED >= 0, the
 * count of its throttled launches (compute_throttled_cnt). */
void tf_hv_worker_usage_point(struct tf_lp_point *p, const struct tf_hv *hv, const char *uuid,
                              const char *worker, const char *ns, const char *workload,
                              int32_t compute_bp, int64_t vram_used, int64_t gpu_tflops_milli,
                              int64_t gpu_vram, int64_t throttled);

/* The HTTP server (api.c). */
struct tf_hv_http;
int tf_hv_http_start(struct tf_hv *hv, struct tf_hv_http **out, char *err, size_t errlen);
void tf_hv_http_stop(struct tf_hv_http *h);

#endif
