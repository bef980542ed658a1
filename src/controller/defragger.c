/* SPDX-License-Identifier: Apache-2.0
 *
 * Defragmentation in the cluster (seed 002 step 5): when a pool's schedule fires, the core
 * planner (simulating placement on a copy of the allocator) picks the pods to move; they are
 * evicted one at a time through the Eviction API, which honours their PodDisruptionBudgets.
 * Events DefragStarted, DefragSkipMissingPDB, DefragPodEvicted and DefragFinished go to the
 * GPUPool (see efficiency.h and effplan.h).
 */
#include "controller/efficiency_int.h"

#include "common/err.h"
#include "common/log.h"
#include "common/strutil.h"
#include "common/yamljson.h"
#include "core/timeutil.h"
#include "core/tzload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool zone(struct tf_efficiency *e, json_object *pool, struct tf__eff_pool *ps,
                 const struct tf_defrag_config *cfg)
{
    if (ps->tz && strcmp(ps->tz_name, cfg->timezone) == 0)
        return true;
    tf_tz_destroy(ps->tz);
    ps->tz = NULL;
    char err[512];
    if (tf_tz_load(e->o.zoneinfo_dir, cfg->timezone, &ps->tz, "defrag.timezone", err,
                   sizeof(err))) {
        tf__eff_bad_config(e, pool, ps, "defragmentation", err);
        return false;
    }
    tf_strlcpy(ps->tz_name, cfg->timezone, sizeof(ps->tz_name));
    return true;
}

/* Plans a run that fired at FIRE_MS and reports its start. False when nothing is to evict. */
static bool start_run(struct tf_efficiency *e, struct tf__eff_pass *p, json_object *pool,
                      struct tf__eff_pool *ps, const struct tf_defrag_config *cfg, int64_t fire_ms)
{
    if (tf__eff_plan(e, p))
        return false;
    struct tf_defrag_node *nodes;
    struct tf_defrag_pod *pods;
    size_t nn, np;
    if (tf_plan_state_defrag(p->plan, &nodes, &nn, &pods, &np))
        return false;
    struct tf_defrag_input in = {p->alloc, ps->name, cfg,       nodes,   nn,
                                 pods,     np,       p->now_ms, fire_ms, false};
    struct tf_defrag_plan plan;
    char err[512];
    int rc = tf_defrag_plan(&in, &plan, err, sizeof(err));
    free(nodes);
    free(pods);
    if (rc) {
        tf__eff_event(e, pool, "Warning", "DefragFailed", "defragmentation not planned: %s", err);
        return false;
    }
    for (size_t i = 0; i < plan.nevents; i++) {
        const struct tf_defrag_event *ev = &plan.events[i];
        if (ev->kind == TF_DEFRAG_EV_STARTED || ev->kind == TF_DEFRAG_EV_SKIP_MISSING_PDB ||
            (ev->kind == TF_DEFRAG_EV_FINISHED && plan.nevictions == 0))
            tf__eff_event(e, pool, ev->type, ev->reason, "%s", ev->message);
    }
    for (size_t i = 0; i < plan.nnodes; i++)
        tf_log(TF_LOG_DEBUG, "efficiency", "pool %s: defrag node %s %s: %s", ps->name,
               plan.nodes[i].node, tf_defrag_status_name(plan.nodes[i].status),
               plan.nodes[i].reason);
    if (plan.nevictions == 0) {
        tf_defrag_plan_free(&plan);
        return false;
    }
    tf_effplan_defrag_start(&ps->run, &plan, fire_ms);
    return true;
}

static void finish(struct tf_efficiency *e, json_object *pool, struct tf__eff_pool *ps,
                   const struct tf_defrag_config *cfg, bool deadline)
{
    struct tf_effplan_defrag_run *r = &ps->run;
    char md[32], skipped[64] = "";
    tf_duration_format(cfg->max_duration_ms, md, sizeof(md));
    if (r->skipped)
        snprintf(skipped, sizeof(skipped), " (%zu gone or moved before their turn)", r->skipped);
    if (deadline)
        tf__eff_event(e, pool, "Normal", "DefragFinished",
                      "Defrag stopped: maxDuration %s reached; %zu of %zu planned pod%s evicted%s",
                      md, r->evicted, r->plan.nevictions, r->plan.nevictions == 1 ? "" : "s",
                      skipped);
    else
        tf__eff_event(e, pool, "Normal", "DefragFinished",
                      "Defrag finished: %zu of %zu planned pod%s evicted%s", r->evicted,
                      r->plan.nevictions, r->plan.nevictions == 1 ? "" : "s", skipped);
    tf_effplan_defrag_end(r);
}

void tf__defrag_pass(struct tf_efficiency *e, struct tf__eff_pass *p, json_object *pool,
                     struct tf__eff_pool *ps, const struct tf_pool_efficiency *pe)
{
    const struct tf_defrag_config *cfg = &pe->defrag;
    if (!cfg->enabled) {
        tf_effplan_defrag_end(&ps->run); /* disabled mid-run: stop evicting */
        ps->defrag_last_check_ms = p->now_ms;
        return;
    }
    if (!zone(e, pool, ps, cfg))
        return;
    if (!ps->run.active) {
        int64_t fire = 0;
        bool due = tf_defrag_due(cfg, ps->tz, ps->defrag_last_check_ms, p->now_ms, &fire);
        ps->defrag_last_check_ms = p->now_ms;
        if (!due || !start_run(e, p, pool, ps, cfg, fire))
            return;
    }
    for (;;) {
        size_t idx = 0;
        enum tf_effplan_defrag_step st =
            tf_effplan_defrag_next(&ps->run, cfg, p->pods, ps->name, p->now_ms, &idx);
        if (st == TF_DEFRAG_STEP_WAIT)
            return;
        if (st != TF_DEFRAG_STEP_EVICT) {
            finish(e, pool, ps, cfg, st == TF_DEFRAG_STEP_DEADLINE);
            return;
        }
        const struct tf_defrag_eviction *ev = &ps->run.plan.evictions[idx];
        char err[512];
        int rc = tf_k8s_evict(e->c, ev->ns, ev->name, err, sizeof(err));
        if (rc == TF_ENOENT) {
            tf_effplan_defrag_done(&ps->run, false, p->now_ms);
            continue;
        }
        if (rc) {
            /* 429: a PodDisruptionBudget allows no disruption right now; retried next pass. */
            tf_log(TF_LOG_WARN, "efficiency", "pool %s: eviction of %s/%s deferred: %s", ps->name,
                   ev->ns, ev->name, err);
            return;
        }
        e->writes++;
        const struct tf_defrag_event *msg = tf_effplan_defrag_event(&ps->run.plan, idx);
        if (msg)
            tf__eff_event(e, pool, msg->type, msg->reason, "%s", msg->message);
        else
            tf__eff_event(e, pool, "Normal", "DefragPodEvicted", "Evicted pod %s/%s from node %s",
                          ev->ns, ev->name, ev->node);
        tf_effplan_defrag_done(&ps->run, true, p->now_ms);
        return; /* the next one waits for this one's replacement */
    }
}
