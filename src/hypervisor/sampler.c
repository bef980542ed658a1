/* SPDX-License-Identifier: Apache-2.0
 *
 * The sampler: GPU (re-)discovery, per-device samples, and one round of metric lines per
 * interval (tf_gpu_usage, tf_worker_usage, tf_worker_resources, tf_node_metrics,
 * tf_pool_metrics, tf_system_metrics) into the configured sink.
 */
#include "hypervisor/hv.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "hypervisor/runtime.h"
#include "hypervisor/soft.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tf_hv_discover(struct tf_hv *hv)
{
    struct tf_hv_device *devs = calloc(TF_HV_MAX_DEVICES, sizeof(*devs));
    int n = 0;
    char err[256];
    if (!devs)
        return;
    if (hv->nvml && tf_hv_nvml_devices(hv->nvml, devs, TF_HV_MAX_DEVICES, &n, err, sizeof(err))) {
        tf_log(TF_LOG_WARN, "discovery", "%s", err);
        free(devs);
        return;
    }
    bool changed;
    pthread_mutex_lock(&hv->mu);
    changed = n != hv->ndev;
    for (int i = 0; !changed && i < n; i++)
        changed = strcmp(hv->uuids[i], devs[i].uuid) != 0;
    pthread_mutex_unlock(&hv->mu);
    if (!changed)
        goto out;
    if (tf_hv_state_sync_devices(hv->state, devs, n, err, sizeof(err))) {
        tf_log(TF_LOG_ERROR, "discovery", "%s", err);
        goto out;
    }
    pthread_mutex_lock(&hv->mu);
    hv->ndev = n;
    for (int i = 0; i < n; i++) {
        tf_strlcpy(hv->uuids[i], devs[i].uuid, sizeof(hv->uuids[i]));
        memset(&hv->samples[i], 0, sizeof(hv->samples[i]));
    }
    pthread_mutex_unlock(&hv->mu);
    for (int i = 0; i < n; i++)
        tf_log(TF_LOG_INFO, "discovery", "GPU %d %s %s model=%s tflops=%lld.%03lld vram=%lld",
               devs[i].index, devs[i].uuid, devs[i].name,
               devs[i].model[0] ? devs[i].model : "unknown",
               (long long)(devs[i].tflops_milli / 1000), (long long)(devs[i].tflops_milli % 1000),
               (long long)devs[i].vram_bytes);
    tf_log(TF_LOG_INFO, "discovery", "%d GPU(s)", n);
out:
    free(devs);
}

const char *tf_hv_pool_tag(const struct tf_hv *hv)
{
    const char *t = atomic_load(&hv->pool_tag);
    return t ? t : "";
}

int tf_hv_set_pool_tag(struct tf_hv *hv, const char *pool)
{
    int rc = 0;
    pthread_mutex_lock(&hv->mu);
    const char *cur = atomic_load(&hv->pool_tag);
    if (!cur || strcmp(cur, pool) != 0) {
        json_object *s = json_object_new_string(pool);
        if (!hv->pool_names)
            hv->pool_names = json_object_new_array();
        if (!s || !hv->pool_names || json_object_array_add(hv->pool_names, s)) {
            json_object_put(s);
            rc = TF_ENOMEM;
        } else {
            if (cur)
                tf_log(TF_LOG_INFO, "sampler", "metric lines now carry pool=%s (was %s)", pool,
                       cur);
            atomic_store(&hv->pool_tag, json_object_get_string(s));
        }
    }
    pthread_mutex_unlock(&hv->mu);
    return rc;
}

void tf_hv_worker_usage_point(struct tf_lp_point *p, const struct tf_hv *hv, const char *uuid,
                              const char *worker, const char *ns, const char *workload,
                              int32_t compute_bp, int64_t vram_used, int64_t gpu_tflops_milli,
                              int64_t gpu_vram, int64_t throttled)
{
    tf_lp_tag(p, "node", hv->cfg.node);
    tf_lp_tag(p, "pool", tf_hv_pool_tag(hv));
    tf_lp_tag(p, "uuid", uuid);
    tf_lp_tag(p, "worker", worker);
    tf_lp_tag(p, "namespace", ns);
    tf_lp_tag(p, "workload", workload);
    tf_lp_float(p, "compute_percentage", compute_bp / 100.0);
    tf_lp_float(p, "compute_tflops", (double)gpu_tflops_milli * compute_bp / 1e7);
    tf_lp_int(p, "memory_bytes", vram_used);
    tf_lp_float(p, "memory_percentage",
                gpu_vram ? 100.0 * (double)vram_used / (double)gpu_vram : 0);
    if (throttled >= 0)
        tf_lp_int(p, "compute_throttled_cnt", throttled);
}

/* Whether W runs: its tf-worker (hard, remote) or one of its registered processes is alive,
 * or (soft) a process holds a slot of its limit region. */
static bool workload_ready(struct tf_hv *hv, const struct tf_hv_workload *w)
{
    if (w->worker_pid > 0 && kill(w->worker_pid, 0) == 0)
        return true;
    for (int i = 0; i < w->npids; i++)
        if (w->pids[i].pid > 0 && kill(w->pids[i].pid, 0) == 0)
            return true;
    return tf_hv_soft_has_processes(hv, w->req.name);
}

struct batch {
    struct tf_lp_point pts[256];
    char strs[256][3][80]; /* per point: worker name, scratch */
    int n;
};

static struct tf_lp_point *next_point(struct batch *b, const char *meas, int64_t ts)
{
    if (b->n >= 256)
        return NULL;
    struct tf_lp_point *p = &b->pts[b->n++];
    tf_lp_point_init(p, meas, ts);
    return p;
}

void tf_hv_sample_and_record(struct tf_hv *hv, bool record)
{
    int64_t ts = now_ms();
    struct tf_hv_device *devs = calloc(TF_HV_MAX_DEVICES, sizeof(*devs));
    struct batch *b = calloc(1, sizeof(*b));
    struct tf_hv_workload *ws = NULL;
    int n = 0, nw = 0;
    char err[256];
    if (!devs || !b)
        goto out;
    (void)tf_hv_state_devices(hv->state, devs, TF_HV_MAX_DEVICES, &n, err, sizeof(err));
    /* Sample every present device. */
    int64_t cap_t = 0, cap_v = 0, al_t = 0, al_v = 0;
    int ngpu = 0;
    for (int i = 0; i < n; i++) {
        struct tf_hv_device *d = &devs[i];
        if (!d->present)
            continue;
        ngpu++;
        cap_t += d->tflops_milli;
        cap_v += d->vram_bytes;
        al_t += d->alloc_tflops_milli;
        al_v += d->alloc_vram_bytes;
        struct tf_hv_gpu_sample s = {0};
        if (hv->nvml && tf_hv_nvml_sample(hv->nvml, d->index, &s, err, sizeof(err)))
            tf_log(TF_LOG_DEBUG, "sampler", "%s", err);
        pthread_mutex_lock(&hv->mu);
        for (int k = 0; k < hv->ndev; k++)
            if (!strcmp(hv->uuids[k], d->uuid))
                hv->samples[k] = s;
        pthread_mutex_unlock(&hv->mu);
        struct tf_lp_point *p = next_point(b, "tf_gpu_usage", ts);
        if (!p)
            continue;
        tf_lp_tag(p, "node", hv->cfg.node);
        tf_lp_tag(p, "pool", tf_hv_pool_tag(hv));
        tf_lp_tag(p, "uuid", d->uuid);
        tf_lp_float(p, "compute_percentage", s.util_bp / 100.0);
        tf_lp_float(p, "compute_tflops", (double)d->tflops_milli * s.util_bp / 1e7);
        tf_lp_int(p, "memory_bytes", s.mem_used);
        tf_lp_float(p, "memory_percentage",
                    d->vram_bytes ? 100.0 * (double)s.mem_used / (double)d->vram_bytes : 0);
        tf_lp_float(p, "temperature", s.temperature);
        tf_lp_float(p, "power_usage", s.power_w);
    }
    /* In Kubernetes mode the GPUs are allocated by the scheduler extender, not through this
     * state store: tf-controller writes the allocation tables (tf_worker_resources,
     * tf_node_metrics, tf_pool_metrics, tf_system_metrics) from the cluster's objects, and
     * the node agent writes the pods' tf_worker_usage (k8s_pods.h). */
    if (hv->cfg.kubernetes)
        goto send;
    if (tf_hv_state_list(hv->state, &ws, &nw, err, sizeof(err)))
        nw = 0;
    for (int i = 0; i < nw; i++) {
        struct tf_hv_workload *w = &ws[i];
        struct tf_hv_usage u;
        tf_hv_runtime_usage(hv, w, &u);
        for (int k = 0; k < w->nalloc; k++) {
            struct tf_lp_point *p = next_point(b, "tf_worker_usage", ts);
            if (!p)
                break;
            char *wname = b->strs[b->n - 1][0];
            snprintf(wname, 80, "%s-%d", w->req.name, k);
            int64_t gpu_vram = 0, gpu_tflops = 0;
            for (int j = 0; j < n; j++) {
                if (!strcmp(devs[j].uuid, w->alloc[k].uuid)) {
                    gpu_vram = devs[j].vram_bytes;
                    gpu_tflops = devs[j].tflops_milli;
                }
            }
            tf_hv_worker_usage_point(p, hv, w->alloc[k].uuid, wname, w->req.ns, w->req.name,
                                     u.gpu[k].compute_bp, u.gpu[k].vram_used, gpu_tflops, gpu_vram,
                                     tf_hv_soft_throttles(hv, w->req.name, k));
        }
        struct tf_lp_point *p = next_point(b, "tf_worker_resources", ts);
        if (!p)
            continue;
        int64_t tr = 0, tl = 0, vr = 0, vl = 0;
        for (int k = 0; k < w->nalloc; k++) {
            tr += w->alloc[k].tflops_milli;
            tl += w->alloc[k].tflops_limit;
            vr += w->alloc[k].vram_bytes;
            vl += w->alloc[k].vram_limit;
        }
        tf_lp_tag(p, "worker", w->req.name);
        tf_lp_tag(p, "workload", w->req.name);
        tf_lp_tag(p, "pool", tf_hv_pool_tag(hv));
        tf_lp_tag(p, "namespace", w->req.ns);
        tf_lp_tag(p, "qos", w->req.qos);
        tf_lp_float(p, "tflops_request", tr / 1000.0);
        tf_lp_float(p, "tflops_limit", tl / 1000.0);
        tf_lp_float(p, "vram_bytes_request", (double)vr);
        tf_lp_float(p, "vram_bytes_limit", (double)vl);
        tf_lp_int(p, "gpu_count", w->nalloc);
        tf_lp_float(p, "raw_cost", 0);
        tf_lp_bool(p, "ready", workload_ready(hv, w));
    }
    const char *meas[2] = {"tf_node_metrics", "tf_pool_metrics"};
    for (int m = 0; m < 2; m++) {
        struct tf_lp_point *p = next_point(b, meas[m], ts);
        if (!p)
            break;
        if (m == 0)
            tf_lp_tag(p, "node", hv->cfg.node);
        tf_lp_tag(p, "pool", tf_hv_pool_tag(hv));
        tf_lp_tag(p, "phase", "Running");
        tf_lp_float(p, "allocated_tflops", al_t / 1000.0);
        tf_lp_float(p, "allocated_tflops_percent",
                    cap_t ? 100.0 * (double)al_t / (double)cap_t : 0);
        tf_lp_float(p, "allocated_vram_bytes", (double)al_v);
        tf_lp_float(p, "allocated_vram_percent", cap_v ? 100.0 * (double)al_v / (double)cap_v : 0);
        tf_lp_int(p, "gpu_count", ngpu);
    }
    struct tf_lp_point *p = next_point(b, "tf_system_metrics", ts);
    if (p) {
        tf_lp_tag(p, "pool", tf_hv_pool_tag(hv));
        tf_lp_int(p, "total_workers_cnt", nw);
        tf_lp_int(p, "total_nodes_cnt", 1);
        tf_lp_int(p, "total_allocation_success_cnt",
                  tf_hv_state_counter(hv->state, "alloc_success"));
        tf_lp_int(p, "total_allocation_fail_cnt", tf_hv_state_counter(hv->state, "alloc_fail"));
    }
send:
    if (record && hv->sink) {
        if (tf_metrics_sink_write(hv->sink, b->pts, (size_t)b->n, err, sizeof(err)) ||
            tf_metrics_sink_flush(hv->sink, err, sizeof(err)))
            tf_log(TF_LOG_WARN, "metrics", "%s", err);
    }
out:
    free(ws);
    free(b);
    free(devs);
}
