/* SPDX-License-Identifier: Apache-2.0
 *
 * The VRAM escape check (see escape.h): process trees from /proc, per-process memory from the
 * sampler's NVML samples, and the decision.
 */
#include "hypervisor/escape.h"

#include "hypervisor/console.h"

#include "common/err.h"
#include "common/log.h"
#include "hypervisor/hv.h"
#include "hypervisor/proc.h"
#include "hypervisor/soft.h"

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_DEPTH 64 /* ancestry walked per GPU process */

int tf_hv_escape_action_parse(const char *s, enum tf_hv_escape_action *out)
{
    if (!strcmp(s, "off"))
        *out = TF_HV_ESCAPE_OFF;
    else if (!strcmp(s, "report"))
        *out = TF_HV_ESCAPE_REPORT;
    else if (!strcmp(s, "kill"))
        *out = TF_HV_ESCAPE_KILL;
    else
        return TF_EINVAL;
    return 0;
}

bool tf_hv_escape_judge(int64_t limit, int64_t slack, const struct tf_hv_escape_proc *p, int n,
                        int64_t *used, int *victims, int *nvictims)
{
    int64_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += p[i].mem > 0 ? p[i].mem : 0;
    *used = sum;
    *nvictims = 0;
    if (n <= 0 || sum <= limit + (int64_t)n * slack)
        return false;
    /* Kill order: unregistered before registered, larger before smaller. */
    bool taken[TF_HV_MAX_PROCS] = {false};
    int64_t left = sum;
    int alive = n;
    while (alive > 0 && left > limit + (int64_t)alive * slack && *nvictims < n) {
        int best = -1;
        for (int i = 0; i < n && i < TF_HV_MAX_PROCS; i++) {
            if (taken[i])
                continue;
            if (best < 0 || (!p[i].registered && p[best].registered) ||
                (p[i].registered == p[best].registered && p[i].mem > p[best].mem))
                best = i;
        }
        if (best < 0)
            break;
        taken[best] = true;
        victims[(*nvictims)++] = p[best].pid;
        left -= p[best].mem > 0 ? p[best].mem : 0;
        alive--;
    }
    return true;
}

/* Parent of PID (/proc/PID/stat field 4), or 0. */
static int parent_of(int pid)
{
    return tf_hv_proc_ppid(pid);
}

/* Whether PID is W's: one of its live registered processes or its worker, or below one. */
static bool member(const struct tf_hv_workload *w, int pid)
{
    for (int depth = 0; pid > 1 && depth < MAX_DEPTH; depth++) {
        if (w->worker_pid > 0 && pid == w->worker_pid)
            return true;
        for (int k = 0; k < w->npids; k++)
            if (w->pids[k].pid == pid && tf_hv_proc_alive(pid, w->pids[k].start_ticks))
                return true;
        pid = parent_of(pid);
    }
    return false;
}

static int64_t limit_on(const struct tf_hv_workload *w, const char *uuid)
{
    for (int j = 0; j < w->nalloc; j++)
        if (!strcmp(w->alloc[j].uuid, uuid))
            return w->alloc[j].vram_limit;
    return -1;
}

/* Who a process of a subject's GPU is: whether it is the subject's, and whether the limiter
 * governs it. */
struct subject {
    const char *name;
    const char *ns, *obj; /* the object the console's event names */
    bool (*member)(struct tf_hv *hv, const void *arg, int pid);
    bool (*registered)(struct tf_hv *hv, const void *arg, int pid);
    const void *arg;
};

/* Checks subject S on the GPU UUID sampled as SMP, limited to LIMIT bytes: logs and acts on an
 * escape; true when it escaped. */
static bool check_gpu(struct tf_hv *hv, const struct subject *s, const char *uuid,
                      const struct tf_hv_gpu_sample *smp, int64_t limit)
{
    struct tf_hv_escape_proc p[TF_HV_MAX_PROCS];
    int n = 0;
    for (int k = 0; k < smp->nproc && n < TF_HV_MAX_PROCS; k++) {
        int pid = smp->procs[k].pid;
        if (!s->member(hv, s->arg, pid))
            continue;
        p[n].pid = pid;
        p[n].mem = smp->procs[k].mem;
        p[n].registered = s->registered(hv, s->arg, pid);
        n++;
    }
    int64_t used = 0;
    int victims[TF_HV_MAX_PROCS], nv = 0;
    if (!tf_hv_escape_judge(limit, hv->cfg.escape_slack, p, n, &used, victims, &nv))
        return false;
    if (tf_hv_escape_note(hv, s->name)) {
        char who[512] = "";
        for (int k = 0; k < n; k++) {
            size_t l = strlen(who);
            snprintf(who + l, sizeof(who) - l, "%s%d (%lld MiB, %s)", k ? ", " : "", p[k].pid,
                     (long long)(p[k].mem >> 20),
                     p[k].registered ? "under the limiter" : "not under the limiter");
        }
        tf_log(TF_LOG_WARN, "hypervisor",
               "workload %s escaped its VRAM limit on GPU %s: %lld MiB in use, limit %lld MiB; "
               "processes %s%s",
               s->name, uuid, (long long)(used >> 20), (long long)(limit >> 20), who,
               hv->cfg.escape_action == TF_HV_ESCAPE_KILL ? "; killing" : "");
        tf_hv_console_event(hv, "Warning", "VRAMEscape", s->ns, s->obj,
                            "%lld MiB in use on GPU %s, limit %lld MiB; processes %s",
                            (long long)(used >> 20), uuid, (long long)(limit >> 20), who);
    }
    if (hv->cfg.escape_action == TF_HV_ESCAPE_KILL)
        for (int k = 0; k < nv; k++)
            if (kill(victims[k], SIGKILL) == 0)
                tf_log(TF_LOG_WARN, "hypervisor", "workload %s: killed process %d (VRAM escape)",
                       s->name, victims[k]);
    return true;
}

/* The last samples: *NDEV of them into SMP and UUIDS (TF_HV_MAX_DEVICES each). */
static void snapshot(struct tf_hv *hv, struct tf_hv_gpu_sample *smp, char (*uuids)[64], int *ndev)
{
    pthread_mutex_lock(&hv->mu);
    *ndev = hv->ndev;
    memcpy(smp, hv->samples, sizeof(*smp) * (size_t)*ndev);
    memcpy(uuids, hv->uuids, sizeof(*uuids) * (size_t)*ndev);
    pthread_mutex_unlock(&hv->mu);
}

static bool wl_member(struct tf_hv *hv, const void *arg, int pid)
{
    return member(arg, pid);
}

static bool wl_registered(struct tf_hv *hv, const void *arg, int pid)
{
    const struct tf_hv_workload *w = arg;
    return w->req.isolation == TF_HV_SOFT ? tf_hv_soft_registered(hv, w->req.name, pid)
                                          : pid == w->worker_pid;
}

void tf_hv_check_escapes(struct tf_hv *hv)
{
    if (hv->cfg.escape_action == TF_HV_ESCAPE_OFF)
        return;
    struct tf_hv_workload *ws = NULL;
    int nw = 0, ndev = 0;
    char err[256];
    if (tf_hv_state_list(hv->state, &ws, &nw, err, sizeof(err)))
        return;
    struct tf_hv_gpu_sample *smp = malloc(sizeof(*smp) * TF_HV_MAX_DEVICES);
    char(*uuids)[64] = malloc(sizeof(*uuids) * TF_HV_MAX_DEVICES);
    if (!smp || !uuids)
        goto out;
    snapshot(hv, smp, uuids, &ndev);
    for (int i = 0; i < nw; i++) {
        struct tf_hv_workload *w = &ws[i];
        struct subject s = {w->req.name, w->req.ns, w->req.name, wl_member, wl_registered, w};
        bool escaped = false;
        for (int d = 0; d < ndev; d++) {
            int64_t limit = limit_on(w, uuids[d]);
            if (limit > 0)
                escaped |= check_gpu(hv, &s, uuids[d], &smp[d], limit);
        }
        if (!escaped)
            tf_hv_escape_clear(hv, w->req.name);
    }
out:
    free(smp);
    free(uuids);
    free(ws);
}

bool tf_hv_cgroup_pod_uid(const char *text, char *uid, size_t len)
{
    if (len < 37)
        return false;
    for (const char *p = strstr(text, "pod"); p; p = strstr(p + 1, "pod")) {
        const char *u = p + 3;
        bool ok = true;
        for (int i = 0; i < 36 && ok; i++) {
            char c = u[i];
            if (i == 8 || i == 13 || i == 18 || i == 23)
                ok = c == '-' || c == '_';
            else
                ok = isxdigit((unsigned char)c) != 0;
        }
        /* the uid ends the path element (or the kubelet's ".slice") */
        if (!ok || (u[36] != '/' && u[36] != '.' && u[36] != '\n' && u[36] != '\0'))
            continue;
        for (int i = 0; i < 36; i++)
            uid[i] = u[i] == '_' ? '-' : (char)tolower((unsigned char)u[i]);
        uid[36] = '\0';
        return true;
    }
    return false;
}

/* The pod uid of PID's cgroup into UID (64 bytes); false when it is in no pod's. */
static bool pod_of(int pid, char *uid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return tf_hv_cgroup_pod_uid(buf, uid, 64);
}

static bool pod_registered(struct tf_hv *hv, const void *arg, int pid)
{
    return tf_hv_soft_registered(hv, ((const struct tf_hv_escape_pod *)arg)->key, pid);
}

static bool pod_member(struct tf_hv *hv, const void *arg, int pid)
{
    const struct tf_hv_escape_pod *pod = arg;
    char uid[64];
    if (pod_of(pid, uid))
        return strcasecmp(uid, pod->uid) == 0;
    for (int depth = 0; pid > 1 && depth < MAX_DEPTH; depth++, pid = parent_of(pid))
        if (pod_registered(hv, pod, pid))
            return true;
    return false;
}

bool tf_hv_workload_owns(struct tf_hv *hv, const char *name, int pid)
{
    struct tf_hv_workload w;
    char err[256];
    if (!hv->state || tf_hv_state_get(hv->state, name, &w, err, sizeof(err)))
        return false;
    return member(&w, pid);
}

bool tf_hv_pod_owns(const char *uid, int pid)
{
    char have[64];
    return pod_of(pid, have) && strcasecmp(have, uid) == 0;
}

void tf_hv_check_pod_escapes(struct tf_hv *hv, const struct tf_hv_escape_pod *pods, int n)
{
    if (hv->cfg.escape_action == TF_HV_ESCAPE_OFF || n <= 0)
        return;
    int ndev = 0;
    struct tf_hv_gpu_sample *smp = malloc(sizeof(*smp) * TF_HV_MAX_DEVICES);
    char(*uuids)[64] = malloc(sizeof(*uuids) * TF_HV_MAX_DEVICES);
    if (smp && uuids)
        snapshot(hv, smp, uuids, &ndev);
    for (int i = 0; smp && uuids && i < n; i++) {
        char ns[256];
        const char *slash = strchr(pods[i].key, '/');
        snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - pods[i].key) : 0, pods[i].key);
        struct subject s = {pods[i].key,    ns,      slash ? slash + 1 : pods[i].key, pod_member,
                            pod_registered, &pods[i]};
        bool escaped = false;
        for (int g = 0; g < pods[i].ngpu; g++)
            for (int d = 0; d < ndev; d++)
                if (pods[i].vram_limit[g] > 0 && strcasecmp(pods[i].uuids[g], uuids[d]) == 0)
                    escaped |= check_gpu(hv, &s, uuids[d], &smp[d], pods[i].vram_limit[g]);
        if (!escaped)
            tf_hv_escape_clear(hv, pods[i].key);
    }
    free(smp);
    free(uuids);
}

bool tf_hv_escape_note(struct tf_hv *hv, const char *name)
{
    bool start = false;
    pthread_mutex_lock(&hv->mu);
    if (!hv->escapes)
        hv->escapes = json_object_new_object();
    json_object *e = NULL;
    if (hv->escapes && !json_object_object_get_ex(hv->escapes, name, &e)) {
        e = json_object_new_object();
        json_object_object_add(e, "count", json_object_new_int64(0));
        json_object_object_add(e, "active", json_object_new_boolean(false));
        json_object_object_add(hv->escapes, name, e);
    }
    json_object *active = e ? json_object_object_get(e, "active") : NULL;
    if (active && !json_object_get_boolean(active)) {
        start = true;
        json_object_object_add(e, "active", json_object_new_boolean(true));
        json_object_object_add(
            e, "count",
            json_object_new_int64(json_object_get_int64(json_object_object_get(e, "count")) + 1));
    }
    pthread_mutex_unlock(&hv->mu);
    return start;
}

void tf_hv_escape_clear(struct tf_hv *hv, const char *name)
{
    pthread_mutex_lock(&hv->mu);
    json_object *e = NULL;
    if (hv->escapes && json_object_object_get_ex(hv->escapes, name, &e))
        json_object_object_add(e, "active", json_object_new_boolean(false));
    pthread_mutex_unlock(&hv->mu);
}

int64_t tf_hv_escape_count(struct tf_hv *hv, const char *name)
{
    pthread_mutex_lock(&hv->mu);
    json_object *e = NULL;
    int64_t n = 0;
    if (hv->escapes && json_object_object_get_ex(hv->escapes, name, &e))
        n = json_object_get_int64(json_object_object_get(e, "count"));
    pthread_mutex_unlock(&hv->mu);
    return n;
}
