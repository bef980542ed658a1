/* SPDX-License-Identifier: Apache-2.0
 *
 * Per-isolation-mode runtime of a workload (see runtime.h).
 */
#include "hypervisor/runtime.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "hypervisor/worker.h"

#include <stdio.h>
#include <string.h>

int tf_hv_runtime_check(struct tf_hv *hv, const struct tf_hv_request *r, char *err, size_t errlen)
{
    switch (r->isolation) {
    case TF_HV_SHARED:
        return 0;
    case TF_HV_SOFT:
        tf_errf(err, errlen,
                "isolation soft needs the limit engine and libtf_limiter.so, which are not part "
                "of this build yet; use --isolation shared for whole GPUs");
        return TF_ENOTSUP;
    case TF_HV_HARD:
        return tf_hv_worker_find(hv, NULL, NULL, err, errlen);
    case TF_HV_REMOTE:
        tf_errf(err, errlen,
                "isolation remote (a worker on another machine's hypervisor) is not available in "
                "local mode yet; use hard for a worker on this machine");
        return TF_ENOTSUP;
    }
    tf_errf(err, errlen, "unknown isolation mode");
    return TF_EINVAL;
}

static void env_set(json_object *env, const char *k, const char *v)
{
    json_object_object_add(env, k, json_object_new_string(v));
}

int tf_hv_runtime_setup(struct tf_hv *hv, const struct tf_hv_workload *w, json_object *env,
                        char *err, size_t errlen)
{
    char uuids[TF_HV_MAX_GPUS * 64] = "";
    for (int i = 0; i < w->nalloc; i++) {
        size_t len = strlen(uuids);
        snprintf(uuids + len, sizeof(uuids) - len, "%s%s", i ? "," : "", w->alloc[i].uuid);
    }
    env_set(env, "CUDA_VISIBLE_DEVICES", uuids);
    env_set(env, "NVIDIA_VISIBLE_DEVICES", uuids);
    env_set(env, "TF_WORKLOAD", w->req.name);
    env_set(env, "TF_ISOLATION", tf_hv_isolation_name(w->req.isolation));
    int rc = tf_hv_runtime_check(hv, &w->req, err, errlen);
    if (rc)
        return rc;
    if (w->req.isolation == TF_HV_HARD)
        return tf_hv_worker_start(hv, w, env, err, errlen);
    return 0;
}

void tf_hv_runtime_teardown(struct tf_hv *hv, const struct tf_hv_workload *w)
{
    if (w->req.isolation == TF_HV_HARD)
        tf_hv_worker_stop(hv, w);
}

void tf_hv_runtime_usage(struct tf_hv *hv, const struct tf_hv_workload *w, struct tf_hv_usage *u)
{
    memset(u, 0, sizeof(*u));
    pthread_mutex_lock(&hv->mu);
    for (int k = 0; k < w->nalloc; k++) {
        for (int i = 0; i < hv->ndev; i++) {
            if (strcmp(hv->uuids[i], w->alloc[k].uuid))
                continue;
            const struct tf_hv_gpu_sample *s = &hv->samples[i];
            if (w->req.isolation == TF_HV_SHARED) {
                /* A shared workload owns its whole GPUs: the GPU's usage is the workload's. */
                u->gpu[k].compute_bp = s->util_bp;
                u->gpu[k].vram_used = s->mem_used;
                continue;
            }
            /* Otherwise: the memory NVML reports for the workload's own processes (and its
             * worker, which holds the GPU in hard isolation). */
            for (int p = 0; p < s->nproc; p++) {
                bool ours = w->worker_pid > 0 && s->procs[p].pid == w->worker_pid;
                for (int q = 0; q < w->npids && !ours; q++)
                    ours = s->procs[p].pid == w->pids[q].pid;
                if (ours)
                    u->gpu[k].vram_used += s->procs[p].mem;
            }
        }
    }
    pthread_mutex_unlock(&hv->mu);
}

json_object *tf_hv_usage_json(const struct tf_hv_usage *u)
{
    json_object *arr = json_object_new_array();
    for (int k = 0; k < TF_HV_MAX_GPUS; k++) {
        if (!u->gpu[k].compute_bp && !u->gpu[k].vram_used)
            continue;
        json_object *o = json_object_new_object();
        json_object_object_add(o, "gpu", json_object_new_int(k));
        json_object_object_add(o, "computePercent",
                               json_object_new_double(u->gpu[k].compute_bp / 100.0));
        json_object_object_add(o, "memoryBytes", json_object_new_int64(u->gpu[k].vram_used));
        json_object_array_add(arr, o);
    }
    return arr;
}
