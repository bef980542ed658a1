/* SPDX-License-Identifier: Apache-2.0
 *
 * The node agent's pod side: pods of this node -> limit regions (see k8s_pods.h).
 */
#include "hypervisor/k8s_pods.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "controller/k8s/informer.h"
#include "hypervisor/escape.h"
#include "hypervisor/k8s_objects.h"
#include "hypervisor/k8s_index.h"
#include "hypervisor/k8s_parts.h"
#include "hypervisor/soft.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(TF_HV_K8S_KEY_MAX <= TF_HV_SOFT_KEY_MAX, "pod keys fit the engine's keys");

#define RESYNC_MS 1000
#define UID_FILE "pod-uid"

struct slot {
    struct tf_hv_k8s_pod pod;
    bool seen;
};

struct tf_hv_k8s_pods {
    struct tf_hv *hv;
    char *node, *root;
    struct tf_informer *inf;
    struct tf_hv_k8s_parts *parts; /* partitioned pods' MIG devices */
    atomic_bool dirty;             /* set by the informer's handlers */
    /* Main loop only: */
    struct slot *s;
    int n, cap;
    json_object *problems; /* pod key -> the last problem logged for it */
    bool gc_done;
    int64_t next_resync, next_metrics;
};

static void on_change(json_object *obj, void *arg)
{
    atomic_store(&((struct tf_hv_k8s_pods *)arg)->dirty, true);
}

static void on_update(json_object *a, json_object *b, void *arg)
{
    on_change(b, arg);
}

/* ---- region files -------------------------------------------------------------------------- */

/* Whether DIR/pod-uid holds UID (an empty UID never matches). */
static bool uid_matches(const char *dir, const char *uid)
{
    char path[900], buf[80] = "";
    snprintf(path, sizeof(path), "%s/" UID_FILE, dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, sizeof(buf), f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return ok && *uid && strcmp(buf, uid) == 0;
}

static int write_uid(const char *dir, const char *uid)
{
    char tmp[900], path[900];
    snprintf(tmp, sizeof(tmp), "%s/" UID_FILE ".tmp", dir);
    snprintf(path, sizeof(path), "%s/" UID_FILE, dir);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return TF_EIO;
    fprintf(f, "%s\n", uid);
    if (fclose(f) != 0 || rename(tmp, path) != 0) {
        unlink(tmp);
        return TF_EIO;
    }
    return 0;
}

static void remove_files(const char *root, const char *ns, const char *name)
{
    char path[900];
    snprintf(path, sizeof(path), "%s/%s/%s/" UID_FILE, root, ns, name);
    unlink(path);
    tf_hv_soft_remove_region(root, ns, name);
}

/* ---- slots --------------------------------------------------------------------------------- */

static struct slot *find(struct tf_hv_k8s_pods *p, const char *key)
{
    for (int i = 0; i < p->n; i++)
        if (strcmp(p->s[i].pod.key, key) == 0)
            return &p->s[i];
    return NULL;
}

static void drop(struct tf_hv_k8s_pods *p, struct slot *sl, const char *why)
{
    tf_hv_soft_detach(p->hv->soft, sl->pod.key);
    remove_files(p->root, sl->pod.ns, sl->pod.name);
    tf_log(TF_LOG_INFO, "k8s", "pod %s: %s; limit region removed", sl->pod.key, why);
    *sl = p->s[--p->n];
}

/* Logs PROBLEM for KEY unless it is the one logged last time. */
static void problem(struct tf_hv_k8s_pods *p, const char *key, const char *msg)
{
    json_object *old = NULL;
    if (json_object_object_get_ex(p->problems, key, &old) &&
        strcmp(json_object_get_string(old), msg) == 0)
        return;
    tf_log(TF_LOG_WARN, "k8s", "pod %s: no limit region: %s", key, msg);
    json_object_object_add(p->problems, key, json_object_new_string(msg));
}

/* Creates or adopts the region of PLAN. */
static int add(struct tf_hv_k8s_pods *p, const struct tf_hv_k8s_pod *plan, char *err, size_t errlen)
{
    char dir[700], path[800];
    if (!tf_hv_soft_region_path(p->root, plan->ns, plan->name, dir, sizeof(dir), path,
                                sizeof(path))) {
        tf_errf(err, errlen, "region path under %s too long", p->root);
        return TF_ERANGE;
    }
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 16;
        struct slot *s = realloc(p->s, (size_t)cap * sizeof(*s));
        if (!s)
            return TF_ENOMEM;
        p->s = s;
        p->cap = cap;
    }
    bool reopened = false, changed = false;
    int rc = tf_hv_soft_attach(p->hv->soft, plan->key, path, &plan->cfg, &plan->perms,
                               uid_matches(dir, plan->uid), &reopened, err, errlen);
    if (rc)
        return rc;
    if (reopened)
        rc = tf_hv_soft_configure(p->hv->soft, plan->key, &plan->cfg, &changed);
    else
        rc = write_uid(dir, plan->uid);
    if (rc) {
        tf_hv_soft_detach(p->hv->soft, plan->key);
        tf_errf(err, errlen, "region %s: cannot %s (%s)", path,
                reopened ? "update its limits" : "record the pod uid", tf_strerror(rc));
        return rc;
    }
    struct slot *sl = &p->s[p->n++];
    sl->pod = *plan;
    sl->seen = true;
    tf_log(TF_LOG_INFO, "k8s", "pod %s: limit region %s (%d GPU(s))%s", plan->key, path, plan->ngpu,
           reopened ? (changed ? " adopted, limits updated" : " adopted") : "");
    return 0;
}

/* Brings the region of PLAN up to date (live limits) or creates it. */
static void apply(struct tf_hv_k8s_pods *p, const struct tf_hv_k8s_pod *plan)
{
    char err[512];
    struct slot *sl = find(p, plan->key);
    if (sl && strcmp(sl->pod.uid, plan->uid) != 0) {
        drop(p, sl, "replaced by a new pod of that name");
        sl = NULL;
    }
    if (sl) {
        bool changed = false;
        int rc = tf_hv_soft_configure(p->hv->soft, plan->key, &plan->cfg, &changed);
        if (rc) {
            snprintf(err, sizeof(err), "cannot update its limits (%s)", tf_strerror(rc));
            problem(p, plan->key, err);
        } else if (changed) {
            tf_log(TF_LOG_INFO, "k8s", "pod %s: limits changed", plan->key);
        }
        sl->pod = *plan;
        sl->seen = true;
        return;
    }
    if (add(p, plan, err, sizeof(err)))
        problem(p, plan->key, err);
    else
        json_object_object_del(p->problems, plan->key);
}

/* Region directories under the root whose pod is not served (pods deleted while the
 * hypervisor was down). */
static void collect_orphans(struct tf_hv_k8s_pods *p)
{
    DIR *top = opendir(p->root);
    struct dirent *a, *b;
    while (top && (a = readdir(top))) {
        char nsdir[700];
        if (a->d_name[0] == '.' ||
            snprintf(nsdir, sizeof(nsdir), "%s/%s", p->root, a->d_name) >= (int)sizeof(nsdir))
            continue;
        DIR *d = opendir(nsdir);
        while (d && (b = readdir(d))) {
            char key[TF_HV_K8S_KEY_MAX], f1[900], f2[900];
            struct stat st;
            if (b->d_name[0] == '.' ||
                snprintf(key, sizeof(key), "%s/%s", a->d_name, b->d_name) >= (int)sizeof(key) ||
                find(p, key))
                continue;
            snprintf(f1, sizeof(f1), "%s/%s/" TF_SHM_LIMITS_FILE, nsdir, b->d_name);
            snprintf(f2, sizeof(f2), "%s/%s/" UID_FILE, nsdir, b->d_name);
            if (stat(f1, &st) != 0 && stat(f2, &st) != 0)
                continue; /* not a region directory */
            remove_files(p->root, a->d_name, b->d_name);
            tf_log(TF_LOG_INFO, "k8s", "pod %s is gone; its limit region is removed", key);
        }
        if (d)
            closedir(d);
    }
    if (top)
        closedir(top);
}

static int copy_into(json_object *o, void *arg)
{
    json_object *cp = NULL;
    if (json_object_deep_copy(o, &cp, NULL) == 0)
        json_object_array_add(arg, cp);
    return 0;
}

/* The entry of pod POD holding pod index INDEX, from its partitions' state. */
static void index_entry(struct tf_hv_k8s_pods *p, json_object *pod, int index,
                        const struct tf_hv_device *devs, int ndev, struct tf_hv_idx_entry *e,
                        struct tf_hv_k8s_part_want *w)
{
    char err[512];
    memset(e, 0, sizeof(*e));
    e->index = index;
    int rc = tf_hv_k8s_part_want(pod, p->node, devs, ndev, w, err, sizeof(err));
    const char *ns = tf_json_str(pod, "metadata", "namespace", NULL),
               *name = tf_json_str(pod, "metadata", "name", NULL);
    snprintf(e->key, sizeof(e->key), "%s/%s", ns ? ns : "?", name ? name : "?");
    if (rc < 0) {
        tf_strlcpy(e->problem, err, sizeof(e->problem));
        return;
    }
    if (rc == 0)
        return; /* no GPUs or template yet: Allocate waits */
    e->ngpu = w->ngpu;
    for (int g = 0; g < w->ngpu; g++) {
        const char *mig = tf_hv_k8s_parts_mig(p->parts, w->uid, w->gpus[g].uuid);
        const char *why = tf_hv_k8s_parts_problem(p->parts, w->uid, w->gpus[g].uuid);
        tf_strlcpy(e->gpus[g], w->gpus[g].uuid, sizeof(e->gpus[g]));
        tf_strlcpy(e->migs[g], mig ? mig : "", sizeof(e->migs[g]));
        if (!mig && why)
            tf_strlcpy(e->problem, why, sizeof(e->problem));
    }
}

/* Publishes the partitioned pods of this node that hold a pod index (k8s_index.h). */
static void publish_indexes(struct tf_hv_k8s_pods *p, json_object *pods,
                            const struct tf_hv_device *devs, int ndev)
{
    size_t np = json_object_array_length(pods);
    struct tf_hv_idx_entry *e = calloc(np + 1, sizeof(*e));
    struct tf_hv_k8s_part_want *w = malloc(sizeof(*w));
    int n = 0;
    if (!e || !w || !p->hv->idx)
        goto out;
    for (size_t i = 0; i < np; i++) {
        json_object *pod = json_object_array_get_idx(pods, i);
        const char *node = tf_json_str(pod, "spec", "nodeName", NULL);
        const char *phase = tf_json_str(pod, "status", "phase", NULL);
        int index = tf_hv_k8s_pod_index(pod);
        if (index < 0 || !node || strcmp(node, p->node) != 0 ||
            (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"))))
            continue;
        index_entry(p, pod, index, devs, ndev, &e[n++], w);
    }
    tf_hv_idx_publish(p->hv->idx, e, n);
out:
    free(w);
    free(e);
}

static void reconcile(struct tf_hv_k8s_pods *p)
{
    json_object *pods = json_object_new_array();
    struct tf_hv_device *devs = calloc(TF_HV_MAX_DEVICES, sizeof(*devs));
    struct tf_hv_k8s_pod *plan = malloc(sizeof(*plan));
    json_object *seen_keys = json_object_new_object();
    int ndev = 0;
    char err[512];
    if (!pods || !devs || !plan || !seen_keys)
        goto out;
    if (tf_hv_state_devices(p->hv->state, devs, TF_HV_MAX_DEVICES, &ndev, err, sizeof(err))) {
        tf_log(TF_LOG_WARN, "k8s", "devices: %s", err);
        goto out;
    }
    tf_informer_foreach(p->inf, copy_into, pods);
    for (int i = 0; i < p->n; i++)
        p->s[i].seen = false;
    for (size_t i = 0; i < json_object_array_length(pods); i++) {
        int rc = tf_hv_k8s_pod_plan(json_object_array_get_idx(pods, i), p->node, devs, ndev, plan,
                                    err, sizeof(err));
        if (rc < 0) {
            /* A pod that has a region keeps it as it is: a device missing for a moment, or
             * an annotation edited wrong, must not take the limits away from running apps. */
            const char *key = plan->key[0] ? plan->key : "?";
            struct slot *sl = find(p, key);
            if (sl)
                sl->seen = true;
            problem(p, key, err);
            json_object_object_add(seen_keys, key, NULL);
        } else if (rc == 1) {
            apply(p, plan);
            json_object_object_add(seen_keys, plan->key, NULL);
        }
    }
    for (int i = p->n - 1; i >= 0; i--)
        if (!p->s[i].seen)
            drop(p, &p->s[i], "deleted, finished or no longer limited");
    tf_hv_k8s_parts_reconcile(p->parts, pods, devs, ndev);
    publish_indexes(p, pods, devs, ndev);
    /* Forget the problems of pods that are gone. */
    json_object *stale = json_object_new_array();
    json_object_object_foreach(p->problems, k, v)
    {
        (void)v;
        if (!json_object_object_get_ex(seen_keys, k, NULL))
            json_object_array_add(stale, json_object_new_string(k));
    }
    for (size_t i = 0; i < json_object_array_length(stale); i++)
        json_object_object_del(p->problems,
                               json_object_get_string(json_object_array_get_idx(stale, i)));
    json_object_put(stale);
    if (!p->gc_done) {
        collect_orphans(p);
        p->gc_done = true;
    }
out:
    json_object_put(seen_keys);
    free(plan);
    free(devs);
    json_object_put(pods);
}

/* ---- metrics ------------------------------------------------------------------------------- */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void record(struct tf_hv_k8s_pods *p)
{
    int npts = 0, ndev = 0;
    for (int i = 0; i < p->n; i++)
        npts += p->s[i].pod.ngpu;
    struct tf_lp_point *pts = npts ? calloc((size_t)npts, sizeof(*pts)) : NULL;
    struct tf_hv_device *devs = calloc(TF_HV_MAX_DEVICES, sizeof(*devs));
    char err[256];
    if (!pts || !devs ||
        tf_hv_state_devices(p->hv->state, devs, TF_HV_MAX_DEVICES, &ndev, err, sizeof(err)))
        goto out;
    int64_t ts = wall_ms();
    int k = 0;
    for (int i = 0; i < p->n; i++) {
        const struct tf_hv_k8s_pod *pod = &p->s[i].pod;
        for (int g = 0; g < pod->ngpu; g++) {
            int32_t bp = 0;
            int64_t used = 0, tflops = 0, vram = 0;
            tf_hv_soft_usage(p->hv, pod->key, g, &bp, &used);
            for (int j = 0; j < ndev; j++) {
                if (strcmp(devs[j].uuid, pod->uuids[g]) == 0) {
                    tflops = devs[j].tflops_milli;
                    vram = devs[j].vram_bytes;
                }
            }
            tf_lp_point_init(&pts[k], "tf_worker_usage", ts);
            tf_hv_worker_usage_point(&pts[k++], p->hv, pod->uuids[g], pod->name, pod->ns,
                                     pod->workload, bp, used, tflops, vram,
                                     tf_hv_soft_throttles(p->hv, pod->key, g));
        }
    }
    if (tf_metrics_sink_write(p->hv->sink, pts, (size_t)k, err, sizeof(err)) ||
        tf_metrics_sink_flush(p->hv->sink, err, sizeof(err)))
        tf_log(TF_LOG_WARN, "metrics", "%s", err);
out:
    free(devs);
    free(pts);
}

/* ---- lifecycle ----------------------------------------------------------------------------- */

struct tf_hv_k8s_pods *tf_hv_k8s_pods_start(struct tf_hv *hv, struct tf_k8s_client *c,
                                            const char *node, const char *shm_root)
{
    struct tf_hv_k8s_pods *p = calloc(1, sizeof(*p));
    char sel[300];
    if (!p)
        return NULL;
    p->hv = hv;
    p->node = strdup(node);
    p->root = strdup(shm_root);
    p->problems = json_object_new_object();
    atomic_init(&p->dirty, true);
    snprintf(sel, sizeof(sel), "spec.nodeName=%s", node);
    struct tf_informer_handlers h = {on_change, on_update, on_change, p};
    if (p->node && p->root && p->problems && (p->parts = tf_hv_k8s_parts_new(hv, c, node)))
        p->inf = tf_informer_new(c, &tf_k8s_pods, NULL, NULL, sel, &h);
    if (!p->inf || tf_informer_start(p->inf, 0)) {
        tf_hv_k8s_pods_destroy(p);
        return NULL;
    }
    return p;
}

void tf_hv_k8s_pods_step(struct tf_hv_k8s_pods *p, int64_t now_ms)
{
    if (!tf_informer_synced(p->inf))
        return;
    bool kicked = tf_hv_idx_kicked(p->hv->idx); /* an Allocate waits for a partition */
    if (atomic_exchange(&p->dirty, false) || kicked || now_ms >= p->next_resync) {
        reconcile(p);
        p->next_resync = now_ms + RESYNC_MS;
    }
    if (now_ms >= p->next_metrics) {
        if (p->hv->sink && p->n)
            record(p);
        p->next_metrics = now_ms + p->hv->cfg.metrics_interval_ms;
    }
}

bool tf_hv_k8s_pods_owns(struct tf_hv_k8s_pods *p, const char *key, int pid)
{
    struct slot *sl = p ? find(p, key) : NULL;
    return sl && tf_hv_pod_owns(sl->pod.uid, pid);
}

void tf_hv_k8s_pods_check_escapes(struct tf_hv_k8s_pods *p)
{
    if (!p || p->n <= 0)
        return;
    struct tf_hv_escape_pod *e = calloc((size_t)p->n, sizeof(*e));
    int64_t(*lim)[TF_SHM_MAX_DEVICES] = calloc((size_t)p->n, sizeof(*lim));
    for (int i = 0; e && lim && i < p->n; i++) {
        const struct tf_hv_k8s_pod *pod = &p->s[i].pod;
        for (int g = 0; g < pod->ngpu; g++)
            lim[i][g] = pod->cfg.dev[g].flags & TF_SHM_DEV_VRAM_LIMIT
                            ? (int64_t)pod->cfg.dev[g].vram_limit
                            : 0;
        e[i] = (struct tf_hv_escape_pod){pod->key, pod->uid, pod->ngpu, pod->uuids, lim[i]};
    }
    if (e && lim)
        tf_hv_check_pod_escapes(p->hv, e, p->n);
    free(lim);
    free(e);
}

void tf_hv_k8s_pods_destroy(struct tf_hv_k8s_pods *p)
{
    if (!p)
        return;
    tf_informer_destroy(p->inf);
    tf_hv_k8s_parts_free(p->parts);
    for (int i = 0; i < p->n; i++)
        tf_hv_soft_detach(p->hv->soft, p->s[i].pod.key);
    free(p->s);
    json_object_put(p->problems);
    free(p->node);
    free(p->root);
    free(p);
}
