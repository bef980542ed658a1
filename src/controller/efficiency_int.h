/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to efficiency.c, autoscaler.c, compactor.c and defragger.c: the reconciler's state
 * and the per-pass snapshot they share. Not part of any public interface.
 *
 * Locking: everything here belongs to the thread running tf_efficiency_once, except the
 * manual-compaction sightings (seen[], guarded by seen_lock), which the pool informer's
 * thread writes.
 */
#ifndef TF_CONTROLLER_EFFICIENCY_INT_H
#define TF_CONTROLLER_EFFICIENCY_INT_H

#include "controller/effplan.h"
#include "controller/efficiency.h"
#include "controller/greptime.h"
#include "core/alloc.h"
#include "core/efficiency.h"
#include "core/plan_state.h"
#include "core/tz.h"

#include <pthread.h>
#include <stdarg.h>

#define TF_EFF_NAME_MAX 254
#define TF_EFF_SEEN_MAX 64

/* What one pool needs to remember between passes. */
struct tf__eff_pool {
    char name[TF_EFF_NAME_MAX];
    bool present; /* seen in this pass (pools that disappear are dropped) */
    int64_t compaction_last_ms;
    char manual_handled[80]; /* the manual-compaction value last acted on (or reported) */
    char bad_config_rv[32];  /* resourceVersion whose invalid settings were reported */
    int64_t defrag_last_check_ms;
    struct tf_effplan_defrag_run run;
    struct tf_tz *tz; /* zone of defrag.timezone, loaded once per name */
    char tz_name[TF_TZ_NAME_MAX + 1];
};

struct tf__eff_seen {
    char pool[TF_EFF_NAME_MAX];
    char value[80];
    int64_t at_ms;
};

/* Objects of one pass (snapshots of the informers; kinds filled in) and, built on first use,
 * a fresh cluster with every pod placed on it (core/plan_state.h). */
struct tf__eff_pass {
    int64_t now_ms;
    json_object *pods, *nodes, *gpunodes, *gpus, *pools, *templates, *pdbs, *workloads, *profiles;
    bool planned;
    struct tf_cluster *cluster;
    struct tf_alloc *alloc;
    struct tf_plan_state *plan;
};

struct tf_efficiency {
    struct tf_k8s_client *c;
    struct tf_efficiency_sources src;
    struct tf_extender *x;
    struct tf_efficiency_opts o; /* strings owned */
    struct tf_greptime *g;       /* NULL without metrics_url */
    struct tf__eff_pool *pools;
    size_t npools, pcap;
    json_object *as_last; /* "ns/name" -> last evaluation (ms) */
    int writes;
    int64_t started_ms; /* planner clock at creation: defrag schedules count from here */
    pthread_mutex_t seen_lock;
    struct tf__eff_seen seen[TF_EFF_SEEN_MAX];
    size_t nseen;
};

int64_t tf__eff_now(const struct tf_efficiency *e);
/* The state of pool NAME, created on first use at NOW_MS (NULL on ENOMEM); CREATED_MS is the
 * pool's creation time (0 if unknown). */
struct tf__eff_pool *tf__eff_pool(struct tf_efficiency *e, const char *name, int64_t now_ms,
                                  int64_t created_ms);
/* Builds P's cluster, allocator and plan state once. 0 or a TF_E* code (logged). */
int tf__eff_plan(struct tf_efficiency *e, struct tf__eff_pass *p);
/* When the pool informer first saw manual-compaction VALUE on POOL (0: not seen). */
int64_t tf__eff_seen_at(struct tf_efficiency *e, const char *pool, const char *value);
/* Records an Event about OBJ and logs it. */
void tf__eff_event(struct tf_efficiency *e, json_object *obj, const char *type, const char *reason,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Reports invalid settings of POOL (what is SKIPPED and why) once per resourceVersion. */
void tf__eff_bad_config(struct tf_efficiency *e, json_object *pool, struct tf__eff_pool *ps,
                        const char *skipped, const char *err);

void tf__autoscale_pass(struct tf_efficiency *e, struct tf__eff_pass *p);
void tf__compact_pass(struct tf_efficiency *e, struct tf__eff_pass *p, json_object *pool,
                      struct tf__eff_pool *ps, const struct tf_pool_efficiency *pe);
void tf__defrag_pass(struct tf_efficiency *e, struct tf__eff_pass *p, json_object *pool,
                     struct tf__eff_pool *ps, const struct tf_pool_efficiency *pe);

#endif
