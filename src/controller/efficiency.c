/* SPDX-License-Identifier: Apache-2.0
 *
 * The efficiency reconcilers' shared part (see efficiency.h): state, clock, per-pass
 * snapshots, the planning state and the pool loop that drives compaction and defrag.
 */
#include "controller/efficiency_int.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/timeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *dup_opt(const char *s)
{
    return s ? strdup(s) : NULL;
}

struct tf_efficiency *tf_efficiency_new(struct tf_k8s_client *c, struct tf_extender *x,
                                        const struct tf_efficiency_opts *o)
{
    struct tf_efficiency *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->c = c;
    e->x = x;
    e->o = *o;
    e->o.metrics_url = dup_opt(o->metrics_url);
    e->o.metrics_db = dup_opt(o->metrics_db);
    e->o.zoneinfo_dir = dup_opt(o->zoneinfo_dir);
    e->as_last = json_object_new_object();
    pthread_mutex_init(&e->seen_lock, NULL);
    if (e->o.metrics_url && *e->o.metrics_url)
        e->g = tf_greptime_new(e->o.metrics_url, e->o.metrics_db, 30000);
    e->started_ms = tf__eff_now(e);
    if (!e->as_last || (o->metrics_url && !e->o.metrics_url) ||
        (e->o.metrics_url && *e->o.metrics_url && !e->g)) {
        tf_efficiency_destroy(e);
        return NULL;
    }
    return e;
}

void tf_efficiency_set_sources(struct tf_efficiency *e, const struct tf_efficiency_sources *src)
{
    e->src = *src;
}

void tf_efficiency_destroy(struct tf_efficiency *e)
{
    if (!e)
        return;
    for (size_t i = 0; i < e->npools; i++) {
        tf_effplan_defrag_end(&e->pools[i].run);
        tf_tz_destroy(e->pools[i].tz);
    }
    free(e->pools);
    tf_greptime_destroy(e->g);
    json_object_put(e->as_last);
    pthread_mutex_destroy(&e->seen_lock);
    free((char *)e->o.metrics_url);
    free((char *)e->o.metrics_db);
    free((char *)e->o.zoneinfo_dir);
    free(e);
}

int64_t tf__eff_now(const struct tf_efficiency *e)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + e->o.clock_offset_ms;
}

void tf__eff_event(struct tf_efficiency *e, json_object *obj, const char *type, const char *reason,
                   const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    tf_log(TF_LOG_INFO, "efficiency", "%s %s/%s: %s", reason,
           tf_json_str(obj, "kind", NULL) ? tf_json_str(obj, "kind", NULL) : "object",
           tf_json_str(obj, "metadata", "name", NULL) ? tf_json_str(obj, "metadata", "name", NULL)
                                                      : "?",
           msg);
    if (tf_k8s_event(e->c, obj, type, reason, msg, "tf-controller") == 0)
        e->writes++;
}

void tf__eff_bad_config(struct tf_efficiency *e, json_object *pool, struct tf__eff_pool *ps,
                        const char *skipped, const char *err)
{
    const char *rv = tf_json_str(pool, "metadata", "resourceVersion", NULL);
    if (rv && strcmp(rv, ps->bad_config_rv) == 0)
        return;
    tf__eff_event(e, pool, "Warning", "InvalidEfficiencyConfig", "%s skipped: %s", skipped, err);
    tf_strlcpy(ps->bad_config_rv, rv ? rv : "", sizeof(ps->bad_config_rv));
}

/* ---- manual-compaction sightings (pool informer thread) ------------------------------------ */

void tf_efficiency_pool_seen(struct tf_efficiency *e, json_object *pool)
{
    const char *name = tf_json_str(pool, "metadata", "name", NULL);
    const char *v = tf_json_str(pool, "metadata", "annotations", TF_ANN_MANUAL_COMPACTION, NULL);
    if (!e || !name || !v || strlen(name) >= TF_EFF_NAME_MAX || strlen(v) >= 80)
        return;
    pthread_mutex_lock(&e->seen_lock);
    size_t i = 0;
    while (i < e->nseen && strcmp(e->seen[i].pool, name) != 0)
        i++;
    if (i == e->nseen) {
        if (e->nseen == TF_EFF_SEEN_MAX) { /* forget the oldest sighting */
            memmove(e->seen, e->seen + 1, sizeof(e->seen[0]) * (TF_EFF_SEEN_MAX - 1));
            i = --e->nseen;
        }
        e->nseen++;
        tf_strlcpy(e->seen[i].pool, name, sizeof(e->seen[i].pool));
        e->seen[i].value[0] = '\0';
    }
    if (strcmp(e->seen[i].value, v) != 0) {
        tf_strlcpy(e->seen[i].value, v, sizeof(e->seen[i].value));
        e->seen[i].at_ms = tf__eff_now(e);
    }
    pthread_mutex_unlock(&e->seen_lock);
}

int64_t tf__eff_seen_at(struct tf_efficiency *e, const char *pool, const char *value)
{
    int64_t at = 0;
    pthread_mutex_lock(&e->seen_lock);
    for (size_t i = 0; i < e->nseen; i++)
        if (strcmp(e->seen[i].pool, pool) == 0 && strcmp(e->seen[i].value, value) == 0)
            at = e->seen[i].at_ms;
    pthread_mutex_unlock(&e->seen_lock);
    return at;
}

/* ---- pool state ---------------------------------------------------------------------------- */

struct tf__eff_pool *tf__eff_pool(struct tf_efficiency *e, const char *name, int64_t now_ms,
                                  int64_t created_ms)
{
    for (size_t i = 0; i < e->npools; i++)
        if (strcmp(e->pools[i].name, name) == 0)
            return &e->pools[i];
    if (strlen(name) >= TF_EFF_NAME_MAX)
        return NULL;
    struct tf__eff_pool *np = tf_grow(e->pools, &e->pcap, e->npools + 1, sizeof(*np), 8);
    if (!np)
        return NULL;
    e->pools = np;
    struct tf__eff_pool *p = &e->pools[e->npools++];
    memset(p, 0, sizeof(*p));
    tf_strlcpy(p->name, name, sizeof(p->name));
    /* The compaction period counts from the first time the pool is seen; a defrag schedule
     * that fired since this controller started (and after the pool was created) still runs. */
    p->compaction_last_ms = now_ms;
    p->defrag_last_check_ms = created_ms > e->started_ms ? created_ms : e->started_ms;
    if (p->defrag_last_check_ms > now_ms)
        p->defrag_last_check_ms = now_ms;
    return p;
}

static void drop_absent_pools(struct tf_efficiency *e)
{
    size_t k = 0;
    for (size_t i = 0; i < e->npools; i++) {
        if (!e->pools[i].present) {
            tf_effplan_defrag_end(&e->pools[i].run);
            tf_tz_destroy(e->pools[i].tz);
            continue;
        }
        e->pools[i].present = false;
        e->pools[k++] = e->pools[i];
    }
    e->npools = k;
}

/* ---- snapshots and the planning state ------------------------------------------------------ */

struct copy_ctx {
    json_object *arr;
    const char *kind;
};

static int copy_into(json_object *o, void *arg)
{
    struct copy_ctx *x = arg;
    json_object *cp = NULL;
    if (json_object_deep_copy(o, &cp, NULL) != 0)
        return 0;
    /* List items of built-in kinds come without kind/apiVersion: the planners need the kind. */
    if (!tf_json_str(cp, "kind", NULL))
        json_object_object_add(cp, "kind", json_object_new_string(x->kind));
    json_object_array_add(x->arr, cp);
    return 0;
}

static json_object *snapshot(struct tf_informer *inf, const char *kind)
{
    struct copy_ctx x = {json_object_new_array(), kind};
    if (inf)
        tf_informer_foreach(inf, copy_into, &x);
    return x.arr;
}

static void add_all(json_object *docs, json_object *arr)
{
    for (size_t i = 0; i < json_object_array_length(arr); i++)
        json_object_array_add(docs, json_object_get(json_object_array_get_idx(arr, i)));
}

int tf__eff_plan(struct tf_efficiency *e, struct tf__eff_pass *p)
{
    if (p->planned)
        return p->plan ? 0 : TF_ESTATE;
    p->planned = true;
    char err[512];
    if (tf_extender_build_cluster(e->x, p->gpus, p->pools, p->templates, &p->cluster) ||
        !(p->alloc = tf_alloc_new(p->cluster, NULL))) {
        tf_log(TF_LOG_ERROR, "efficiency", "cannot build the planning state: out of memory");
        return TF_ENOMEM;
    }
    json_object *docs = json_object_new_array();
    add_all(docs, p->nodes);
    add_all(docs, p->gpunodes);
    add_all(docs, p->pdbs);
    add_all(docs, p->pools);
    add_all(docs, p->pods);
    struct tf_plan_state_opts so = {false, NULL};
    int rc = tf_plan_state_load(p->alloc, docs, &so, p->now_ms, &p->plan, err, sizeof(err));
    json_object_put(docs);
    if (rc) {
        tf_log(TF_LOG_ERROR, "efficiency", "cannot build the planning state: %s", err);
        return rc;
    }
    for (size_t i = 0; i < tf_plan_state_nwarnings(p->plan); i++)
        tf_log(TF_LOG_DEBUG, "efficiency", "planning state: %s", tf_plan_state_warning(p->plan, i));
    return 0;
}

static void pass_free(struct tf__eff_pass *p)
{
    tf_plan_state_destroy(p->plan);
    tf_alloc_destroy(p->alloc);
    tf_cluster_destroy(p->cluster);
    json_object *all[] = {p->pods,      p->nodes, p->gpunodes,  p->gpus,    p->pools,
                          p->templates, p->pdbs,  p->workloads, p->profiles};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        json_object_put(all[i]);
}

/* ---- the pass ------------------------------------------------------------------------------ */

int tf_efficiency_once(struct tf_efficiency *e)
{
    struct tf_informer *all[] = {e->src.pods, e->src.nodes,     e->src.gpunodes,
                                 e->src.gpus, e->src.pools,     e->src.templates,
                                 e->src.pdbs, e->src.workloads, e->src.profiles};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i] && !tf_informer_synced(all[i]))
            return TF_EBUSY;
    e->writes = 0;
    struct tf__eff_pass p = {.now_ms = tf__eff_now(e)};
    p.pods = snapshot(e->src.pods, "Pod");
    p.nodes = snapshot(e->src.nodes, "Node");
    p.gpunodes = snapshot(e->src.gpunodes, "GPUNode");
    p.gpus = snapshot(e->src.gpus, "GPU");
    p.pools = snapshot(e->src.pools, "GPUPool");
    p.templates = snapshot(e->src.templates, "SchedulingConfigTemplate");
    p.pdbs = snapshot(e->src.pdbs, "PodDisruptionBudget");
    p.workloads = snapshot(e->src.workloads, "TensorFusionWorkload");
    p.profiles = snapshot(e->src.profiles, "WorkloadProfile");
    for (size_t i = 0; i < json_object_array_length(p.pools); i++) {
        json_object *pool = json_object_array_get_idx(p.pools, i);
        const char *name = tf_json_str(pool, "metadata", "name", NULL);
        int64_t created = 0;
        const char *ct = tf_json_str(pool, "metadata", "creationTimestamp", NULL);
        if (ct && tf_rfc3339_parse(ct, &created, "creationTimestamp", NULL, 0))
            created = 0;
        struct tf__eff_pool *ps = name ? tf__eff_pool(e, name, p.now_ms, created) : NULL;
        if (!ps)
            continue;
        ps->present = true;
        struct tf_pool_efficiency pe;
        char err[512], path[300];
        snprintf(path, sizeof(path), "GPUPool %s: spec", name);
        if (tf_pool_efficiency_parse(tf_json_path(pool, "spec", NULL), path, &pe, err,
                                     sizeof(err))) {
            tf__eff_bad_config(e, pool, ps, "compaction and defragmentation", err);
            continue;
        }
        tf__compact_pass(e, &p, pool, ps, &pe);
        tf__defrag_pass(e, &p, pool, ps, &pe);
    }
    drop_absent_pools(e);
    if (e->o.autoscale)
        tf__autoscale_pass(e, &p);
    pass_free(&p);
    return e->writes;
}
