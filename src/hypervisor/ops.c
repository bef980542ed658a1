/* SPDX-License-Identifier: Apache-2.0
 *
 * Workload operations behind the HTTP API: create (place + record + runtime), delete, process
 * registration, liveness reaping, and the JSON views of devices, workloads and workers.
 */
#include "hypervisor/hv.h"

#include "hypervisor/console.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "core/quantity.h"
#include "hypervisor/proc.h"
#include "hypervisor/runtime.h"
#include "hypervisor/soft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static json_object *error_json(const char *msg)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "error", json_object_new_string(msg));
    return o;
}

static int status_for(int rc)
{
    switch (rc) {
    case TF_EINVAL:
    case TF_EPARSE:
    case TF_ERANGE:
        return 400;
    case TF_ENOENT:
        return 404;
    case TF_EEXIST:
        return 409;
    case TF_ENOSPC:
        return 422;
    case TF_ENOTSUP:
        return 501;
    default:
        return 500;
    }
}

static json_object *milli_json(int64_t milli)
{
    char b[32];
    tf_quantity_format_milli(milli, b, sizeof(b));
    return json_object_new_string(b);
}

static json_object *bytes_json(int64_t bytes)
{
    char b[32];
    tf_quantity_format_bytes(bytes, b, sizeof(b));
    return json_object_new_string(b);
}

json_object *tf_hv_workload_json(const struct tf_hv_workload *w)
{
    json_object *o = tf_hv_request_to_json(&w->req);
    json_object_object_del(o, "pid");
    json_object *allocs = json_object_new_array();
    for (int i = 0; i < w->nalloc; i++) {
        const struct tf_hv_alloc *a = &w->alloc[i];
        json_object *j = json_object_new_object();
        json_object_object_add(j, "uuid", json_object_new_string(a->uuid));
        json_object_object_add(j, "tflops", milli_json(a->tflops_milli));
        json_object_object_add(j, "tflopsLimit", milli_json(a->tflops_limit));
        json_object_object_add(j, "computeLimitPercent",
                               milli_json((int64_t)a->compute_limit_bp * 10));
        json_object_object_add(j, "vram", bytes_json(a->vram_bytes));
        json_object_object_add(j, "vramLimit", bytes_json(a->vram_limit));
        json_object_object_add(j, "vramBytes", json_object_new_int64(a->vram_bytes));
        json_object_object_add(j, "vramLimitBytes", json_object_new_int64(a->vram_limit));
        json_object_array_add(allocs, j);
    }
    json_object_object_add(o, "allocations", allocs);
    json_object *pids = json_object_new_array();
    for (int i = 0; i < w->npids; i++)
        json_object_array_add(pids, json_object_new_int(w->pids[i].pid));
    json_object_object_add(o, "pids", pids);
    if (w->shm_path[0])
        json_object_object_add(o, "shmPath", json_object_new_string(w->shm_path));
    if (w->worker_pid)
        json_object_object_add(o, "workerPid", json_object_new_int(w->worker_pid));
    if (w->worker_addr[0])
        json_object_object_add(o, "workerAddr", json_object_new_string(w->worker_addr));
    json_object_object_add(o, "createdMs", json_object_new_int64(w->created_ms));
    if (w->req.lease)
        json_object_object_add(o, "leaseMs", json_object_new_int64(w->lease_ms));
    return o;
}

int tf_hv_api_create(struct tf_hv *hv, json_object *body, json_object **resp)
{
    struct tf_hv_request r;
    char err[512] = "";
    int rc = tf_hv_request_from_json(body, &r, err, sizeof(err));
    if (rc) {
        *resp = error_json(err);
        return status_for(rc);
    }
    struct tf_dynbuf reasons;
    tf_dynbuf_init(&reasons, 16384);
    struct tf_hv_workload w;
    char rterr[512];
    int rt = tf_hv_runtime_check(hv, &r, rterr, sizeof(rterr));
    /* A mode this build cannot enforce is refused, but a request that would not fit anyway
     * is told so first (nothing is recorded by the check). */
    rc = rt ? tf_hv_state_check(hv->state, &r, &reasons, err, sizeof(err))
            : tf_hv_state_create(hv->state, &r, &w, &reasons, err, sizeof(err));
    if (rt && rc == TF_ENOSPC)
        tf_hv_state_counter_add(hv->state, "alloc_fail", 1);
    if (rt && !rc) {
        tf_dynbuf_free(&reasons);
        tf_hv_console_event(hv, "Warning", "AllocationRefused", r.ns, r.name, "%s", rterr);
        *resp = error_json(rterr);
        return status_for(rt);
    }
    if (rc) {
        *resp = error_json(err);
        if (rc == TF_ENOSPC) {
            json_object *arr = json_object_new_array();
            const char *p = tf_dynbuf_str(&reasons);
            while (*p) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) : strlen(p);
                json_object_array_add(arr, json_object_new_string_len(p, (int)n));
                p += n + (nl ? 1 : 0);
            }
            json_object_object_add(*resp, "reasons", arr);
            tf_log(TF_LOG_INFO, "hypervisor", "workload %s unschedulable: %s", r.name,
                   tf_dynbuf_str(&reasons));
            tf_hv_console_event(hv, "Warning", "AllocationRefused", r.ns, r.name, "%s: %s", err,
                                tf_dynbuf_str(&reasons));
        }
        tf_dynbuf_free(&reasons);
        return status_for(rc);
    }
    tf_dynbuf_free(&reasons);
    json_object *env = json_object_new_object();
    rc = tf_hv_runtime_setup(hv, &w, env, err, sizeof(err));
    if (rc) {
        char derr[256];
        json_object_put(env);
        struct tf_hv_workload cur;
        if (tf_hv_state_get(hv->state, r.name, &cur, derr, sizeof(derr)) == 0)
            tf_hv_runtime_teardown(hv, &cur); /* whatever part of the runtime did start */
        (void)tf_hv_state_delete(hv->state, r.name, derr, sizeof(derr));
        *resp = error_json(err);
        return status_for(rc);
    }
    if (tf_hv_state_get(hv->state, r.name, &w, err, sizeof(err)) == 0) {
        *resp = tf_hv_workload_json(&w);
    } else {
        *resp = json_object_new_object();
    }
    json_object_object_add(*resp, "env", env);
    tf_log(TF_LOG_INFO, "hypervisor", "workload %s created isolation=%s gpus=%d", r.name,
           tf_hv_isolation_name(r.isolation), w.nalloc);
    tf_hv_console_event(hv, "Normal", "WorkloadCreated", r.ns, r.name, "%s isolation on %d GPU(s)",
                        tf_hv_isolation_name(r.isolation), w.nalloc);
    return 201;
}

static int release(struct tf_hv *hv, const char *name, const char *why, char *err, size_t errlen)
{
    struct tf_hv_workload w;
    int rc = tf_hv_state_get(hv->state, name, &w, err, errlen);
    if (rc)
        return rc;
    tf_hv_runtime_teardown(hv, &w);
    rc = tf_hv_state_delete(hv->state, name, err, errlen);
    if (!rc) {
        tf_log(TF_LOG_INFO, "hypervisor", "workload %s released (%s)", name, why);
        tf_hv_console_event(hv, "Normal", "WorkloadReleased", w.req.ns, name, "released: %s", why);
    }
    return rc;
}

int tf_hv_api_delete(struct tf_hv *hv, const char *name, json_object **resp)
{
    char err[256];
    int rc = release(hv, name, "deleted", err, sizeof(err));
    if (rc) {
        *resp = error_json(err);
        return status_for(rc);
    }
    *resp = json_object_new_object();
    json_object_object_add(*resp, "deleted", json_object_new_string(name));
    return 200;
}

int tf_hv_api_heartbeat(struct tf_hv *hv, const char *name, json_object **resp)
{
    char err[256];
    int rc = tf_hv_state_heartbeat(hv->state, name, err, sizeof(err));
    if (rc) {
        *resp = error_json(err);
        return status_for(rc);
    }
    *resp = json_object_new_object();
    json_object_object_add(*resp, "renewed", json_object_new_string(name));
    return 200;
}

int tf_hv_api_add_process(struct tf_hv *hv, const char *name, json_object *body, json_object **resp)
{
    json_object *pid;
    if (!json_object_is_type(body, json_type_object) ||
        !json_object_object_get_ex(body, "pid", &pid) || !json_object_is_type(pid, json_type_int) ||
        json_object_object_length(body) != 1 || json_object_get_int64(pid) <= 0 ||
        json_object_get_int64(pid) > INT32_MAX) {
        *resp = error_json("body must be {\"pid\": N} with N a positive process id");
        return 400;
    }
    int p = (int)json_object_get_int64(pid);
    int64_t start = tf_hv_proc_start_ticks(p);
    if (start < 0) {
        char m[96];
        snprintf(m, sizeof(m), "process %d does not exist", p);
        *resp = error_json(m);
        return 400;
    }
    char err[256];
    int rc = tf_hv_state_add_process(hv->state, name, p, start, err, sizeof(err));
    if (rc) {
        *resp = error_json(err);
        return status_for(rc);
    }
    *resp = json_object_new_object();
    json_object_object_add(*resp, "pid", json_object_new_int(p));
    return 200;
}

int tf_hv_reap(struct tf_hv *hv)
{
    struct tf_hv_workload *ws;
    int n, released = 0;
    char err[256];
    if (tf_hv_state_list(hv->state, &ws, &n, err, sizeof(err)))
        return 0;
    for (int i = 0; i < n; i++) {
        struct tf_hv_workload *w = &ws[i];
        if (w->req.lease) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
            if (now - w->lease_ms <= hv->cfg.lease_timeout_ms)
                continue;
            /* Heartbeats may be among the connections a saturated API turned away: a lease
             * runs out only a full lease period after the API last had to. */
            if (now - atomic_load(&hv->api_busy_ms) <= hv->cfg.lease_timeout_ms) {
                tf_log(TF_LOG_DEBUG, "hypervisor", "workload %s: lease kept (API saturated)",
                       w->req.name);
                continue;
            }
            if (release(hv, w->req.name, "lease expired", err, sizeof(err)) == 0)
                released++;
            continue;
        }
        if (w->npids == 0)
            continue; /* API-managed workload without processes: deleted explicitly */
        bool alive = false;
        for (int k = 0; k < w->npids && !alive; k++)
            alive = tf_hv_proc_alive(w->pids[k].pid, w->pids[k].start_ticks);
        /* Soft: any process the limiter registered (the app's children too) keeps it. */
        if (!alive && w->req.isolation == TF_HV_SOFT)
            alive = tf_hv_soft_has_processes(hv, w->req.name);
        if (!alive && release(hv, w->req.name, "last process exited", err, sizeof(err)) == 0)
            released++;
    }
    free(ws);
    return released;
}

static void sample_of(struct tf_hv *hv, const char *uuid, struct tf_hv_gpu_sample *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&hv->mu);
    for (int i = 0; i < hv->ndev; i++)
        if (!strcmp(hv->uuids[i], uuid))
            *out = hv->samples[i];
    pthread_mutex_unlock(&hv->mu);
}

json_object *tf_hv_devices_json(struct tf_hv *hv)
{
    struct tf_hv_device *devs = calloc(TF_HV_MAX_DEVICES, sizeof(*devs));
    json_object *arr = json_object_new_array();
    int n = 0;
    char err[256];
    if (!devs || tf_hv_state_devices(hv->state, devs, TF_HV_MAX_DEVICES, &n, err, sizeof(err))) {
        free(devs);
        return arr;
    }
    for (int i = 0; i < n; i++) {
        struct tf_hv_device *d = &devs[i];
        struct tf_hv_gpu_sample smp;
        sample_of(hv, d->uuid, &smp);
        json_object *o = json_object_new_object();
        json_object_object_add(o, "index", json_object_new_int(d->index));
        json_object_object_add(o, "uuid", json_object_new_string(d->uuid));
        json_object_object_add(o, "name", json_object_new_string(d->name));
        json_object_object_add(o, "model", json_object_new_string(d->model));
        json_object_object_add(o, "vendor", json_object_new_string(d->vendor));
        json_object_object_add(o, "present", json_object_new_boolean(d->present));
        if (d->numa >= 0)
            json_object_object_add(o, "numaNode", json_object_new_int(d->numa));
        json_object_object_add(o, "tflops", milli_json(d->tflops_milli));
        json_object_object_add(o, "vram", bytes_json(d->vram_bytes));
        json_object_object_add(o, "vramBytes", json_object_new_int64(d->vram_bytes));
        json_object_object_add(o, "allocatedTflops", milli_json(d->alloc_tflops_milli));
        json_object_object_add(o, "allocatedVramBytes", json_object_new_int64(d->alloc_vram_bytes));
        json_object_object_add(o, "availableTflops",
                               milli_json(d->tflops_milli - d->alloc_tflops_milli));
        json_object_object_add(o, "availableVramBytes",
                               json_object_new_int64(d->vram_bytes - d->alloc_vram_bytes));
        json_object_object_add(o, "workloads", json_object_new_int(d->nworkloads));
        json_object_object_add(
            o, "isolation",
            json_object_new_string(d->nworkloads ? tf_hv_isolation_name(d->mode) : ""));
        json_object_object_add(o, "utilizationPercent",
                               json_object_new_double(smp.util_bp / 100.0));
        json_object_object_add(o, "memoryUsedBytes", json_object_new_int64(smp.mem_used));
        json_object_array_add(arr, o);
    }
    free(devs);
    return arr;
}

json_object *tf_hv_workloads_json(struct tf_hv *hv)
{
    struct tf_hv_workload *ws;
    int n;
    char err[256];
    json_object *arr = json_object_new_array();
    if (tf_hv_state_list(hv->state, &ws, &n, err, sizeof(err)))
        return arr;
    for (int i = 0; i < n; i++) {
        json_object *o = tf_hv_workload_json(&ws[i]);
        struct tf_hv_usage u;
        tf_hv_runtime_usage(hv, &ws[i], &u);
        json_object_object_add(o, "usage", tf_hv_usage_json(&u));
        json_object_object_add(o, "vramEscapes",
                               json_object_new_int64(tf_hv_escape_count(hv, ws[i].req.name)));
        json_object_array_add(arr, o);
    }
    free(ws);
    return arr;
}

json_object *tf_hv_workers_json(struct tf_hv *hv)
{
    struct tf_hv_workload *ws;
    int n;
    char err[256];
    json_object *arr = json_object_new_array();
    if (tf_hv_state_list(hv->state, &ws, &n, err, sizeof(err)))
        return arr;
    for (int i = 0; i < n; i++) {
        struct tf_hv_usage u;
        tf_hv_runtime_usage(hv, &ws[i], &u);
        for (int k = 0; k < ws[i].nalloc; k++) {
            const struct tf_hv_alloc *a = &ws[i].alloc[k];
            json_object *o = json_object_new_object();
            char wname[TF_HV_NAME_MAX + 16];
            snprintf(wname, sizeof(wname), "%s-%d", ws[i].req.name, k);
            json_object_object_add(o, "worker", json_object_new_string(wname));
            json_object_object_add(o, "workload", json_object_new_string(ws[i].req.name));
            json_object_object_add(o, "namespace", json_object_new_string(ws[i].req.ns));
            json_object_object_add(o, "uuid", json_object_new_string(a->uuid));
            json_object_object_add(
                o, "isolation", json_object_new_string(tf_hv_isolation_name(ws[i].req.isolation)));
            json_object_object_add(o, "tflopsLimit", milli_json(a->tflops_limit));
            json_object_object_add(o, "computeLimitPercent",
                                   milli_json((int64_t)a->compute_limit_bp * 10));
            json_object_object_add(o, "vramLimitBytes", json_object_new_int64(a->vram_limit));
            json_object_object_add(o, "computePercent",
                                   json_object_new_double(u.gpu[k].compute_bp / 100.0));
            json_object_object_add(o, "memoryBytes", json_object_new_int64(u.gpu[k].vram_used));
            json_object_array_add(arr, o);
        }
    }
    free(ws);
    return arr;
}
