/* SPDX-License-Identifier: Apache-2.0
 *
 * Prometheus text exposition (format 0.0.4) of per-GPU and per-worker usage and limits:
 *   tf_gpu_{tflops,vram_bytes}_{capacity,allocated}, tf_gpu_utilization_percent,
 *   tf_gpu_memory_used_bytes, tf_worker_{tflops_request,tflops_limit,compute_limit_percent,
 *   vram_bytes_request,vram_bytes_limit,compute_percent,memory_bytes},
 *   tf_allocations_total{result}, and the metrics sink's tf_metrics_points_total{result}
 *   (written / sent / dropped) and tf_metrics_queue_bytes.
 */
#include "hypervisor/hv.h"

#include "hypervisor/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends V as a label value: backslash, double quote and newline escaped. */
static void label(struct tf_dynbuf *b, const char *k, const char *v, bool first)
{
    tf_dynbuf_addf(b, "%s%s=\"", first ? "" : ",", k);
    for (const char *c = v; *c; c++) {
        if (*c == '\\' || *c == '"')
            tf_dynbuf_addc(b, '\\');
        if (*c == '\n') {
            tf_dynbuf_adds(b, "\\n");
            continue;
        }
        tf_dynbuf_addc(b, *c);
    }
    tf_dynbuf_addc(b, '"');
}

static void header(struct tf_dynbuf *b, const char *name, const char *help)
{
    tf_dynbuf_addf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

static void gpu_labels(struct tf_dynbuf *b, const struct tf_hv_device *d)
{
    char idx[16];
    snprintf(idx, sizeof(idx), "%d", d->index);
    tf_dynbuf_addc(b, '{');
    label(b, "uuid", d->uuid, true);
    label(b, "index", idx, false);
    label(b, "model", d->model, false);
    tf_dynbuf_addc(b, '}');
}

int tf_hv_prometheus(struct tf_hv *hv, struct tf_dynbuf *b)
{
    struct tf_hv_device *devs = calloc(TF_HV_MAX_DEVICES, sizeof(*devs));
    int n = 0;
    char err[256];
    if (!devs)
        return -1;
    (void)tf_hv_state_devices(hv->state, devs, TF_HV_MAX_DEVICES, &n, err, sizeof(err));
    static const struct {
        const char *name, *help;
        int what;
    } gm[] = {
        {"tf_gpu_tflops_capacity", "FP16 TFLOPS of the GPU", 0},
        {"tf_gpu_tflops_allocated", "TFLOPS reserved by workloads", 1},
        {"tf_gpu_vram_bytes_capacity", "GPU memory in bytes", 2},
        {"tf_gpu_vram_bytes_allocated", "GPU memory reserved by workloads", 3},
        {"tf_gpu_utilization_percent", "GPU busy time percent (NVML)", 4},
        {"tf_gpu_memory_used_bytes", "GPU memory in use (NVML)", 5},
    };
    for (size_t m = 0; m < sizeof(gm) / sizeof(gm[0]); m++) {
        header(b, gm[m].name, gm[m].help);
        for (int i = 0; i < n; i++) {
            struct tf_hv_device *d = &devs[i];
            if (!d->present)
                continue;
            struct tf_hv_gpu_sample s = {0};
            pthread_mutex_lock(&hv->mu);
            for (int k = 0; k < hv->ndev; k++)
                if (!strcmp(hv->uuids[k], d->uuid))
                    s = hv->samples[k];
            pthread_mutex_unlock(&hv->mu);
            double v = 0;
            switch (gm[m].what) {
            case 0:
                v = d->tflops_milli / 1000.0;
                break;
            case 1:
                v = d->alloc_tflops_milli / 1000.0;
                break;
            case 2:
                v = (double)d->vram_bytes;
                break;
            case 3:
                v = (double)d->alloc_vram_bytes;
                break;
            case 4:
                v = s.util_bp / 100.0;
                break;
            default:
                v = (double)s.mem_used;
                break;
            }
            tf_dynbuf_adds(b, gm[m].name);
            gpu_labels(b, d);
            tf_dynbuf_addf(b, " %.17g\n", v);
        }
    }
    free(devs);

    struct tf_hv_workload *ws;
    int nw = 0;
    if (tf_hv_state_list(hv->state, &ws, &nw, err, sizeof(err)))
        nw = 0, ws = NULL;
    static const struct {
        const char *name, *help;
    } wm[] = {
        {"tf_worker_tflops_request", "TFLOPS reserved for the worker"},
        {"tf_worker_tflops_limit", "TFLOPS limit of the worker"},
        {"tf_worker_compute_limit_percent", "compute limit, percent of the GPU"},
        {"tf_worker_vram_bytes_request", "VRAM reserved for the worker"},
        {"tf_worker_vram_bytes_limit", "VRAM limit of the worker"},
        {"tf_worker_compute_percent", "measured compute share, percent of the GPU"},
        {"tf_worker_memory_bytes", "measured VRAM in use"},
    };
    struct tf_hv_usage *us = calloc((size_t)(nw > 0 ? nw : 1), sizeof(*us));
    for (int i = 0; us && i < nw; i++)
        tf_hv_runtime_usage(hv, &ws[i], &us[i]);
    for (size_t m = 0; us && m < sizeof(wm) / sizeof(wm[0]); m++) {
        header(b, wm[m].name, wm[m].help);
        for (int i = 0; i < nw; i++) {
            for (int k = 0; k < ws[i].nalloc; k++) {
                const struct tf_hv_alloc *a = &ws[i].alloc[k];
                double v = 0;
                switch (m) {
                case 0:
                    v = a->tflops_milli / 1000.0;
                    break;
                case 1:
                    v = a->tflops_limit / 1000.0;
                    break;
                case 2:
                    v = a->compute_limit_bp / 100.0;
                    break;
                case 3:
                    v = (double)a->vram_bytes;
                    break;
                case 4:
                    v = (double)a->vram_limit;
                    break;
                case 5:
                    v = us[i].gpu[k].compute_bp / 100.0;
                    break;
                default:
                    v = (double)us[i].gpu[k].vram_used;
                    break;
                }
                tf_dynbuf_addf(b, "%s{", wm[m].name);
                label(b, "workload", ws[i].req.name, true);
                label(b, "namespace", ws[i].req.ns, false);
                label(b, "uuid", a->uuid, false);
                label(b, "isolation", tf_hv_isolation_name(ws[i].req.isolation), false);
                tf_dynbuf_addf(b, "} %.17g\n", v);
            }
        }
    }
    free(us);
    free(ws);
    tf_dynbuf_adds(b, "# HELP tf_allocations_total allocation attempts by result\n"
                      "# TYPE tf_allocations_total counter\n");
    tf_dynbuf_addf(b, "tf_allocations_total{result=\"success\"} %lld\n",
                   (long long)tf_hv_state_counter(hv->state, "alloc_success"));
    tf_dynbuf_addf(b, "tf_allocations_total{result=\"fail\"} %lld\n",
                   (long long)tf_hv_state_counter(hv->state, "alloc_fail"));
    if (hv->sink) {
        struct tf_metrics_sink_stats st;
        tf_metrics_sink_stats(hv->sink, &st);
        tf_metrics_sink_stats_prom(&st, b);
    }
    return 0;
}
