/* SPDX-License-Identifier: Apache-2.0
 *
 * Defragmentation planning on a copy of the allocator's state (see defrag.h).
 */
#include "core/defrag.h"

#include "common/dynbuf.h"
#include "common/err.h"
#include "common/strutil.h"
#include "core/alloc_copy.h"
#include "core/quantity.h"
#include "core/strmap.h"
#include "core/timeutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODE_WORKERS 256 /* a node with more is not planned (reported as NoRoom) */
#define SIM_SUFFIX "@defrag" /* '@' never appears in a pod name: no clash with real keys */

static const char *const status_names[] = {
    "Drain",         "NotCandidate", "Idle",        "Unschedulable", "DoNotDisrupt",
    "ForeignGPUPod", "MissingPDB",   "YoungWorker", "NoRoom",        "Deadline",
};

const char *tf_defrag_status_name(enum tf_defrag_node_status s)
{
    return (unsigned)s < sizeof(status_names) / sizeof(status_names[0]) ? status_names[s]
                                                                        : "Unknown";
}

bool tf_defrag_may_continue(const struct tf_defrag_config *cfg, int64_t run_started_ms,
                            int64_t now_ms)
{
    return now_ms >= run_started_ms && now_ms - run_started_ms < cfg->max_duration_ms;
}

bool tf_defrag_due(const struct tf_defrag_config *cfg, const struct tf_tz *tz, int64_t last_ms,
                   int64_t now_ms, int64_t *fire_ms)
{
    if (!cfg->enabled || !tz)
        return false;
    int64_t f;
    if (tf_cron_due(&cfg->cron, tz, last_ms, now_ms, &f))
        return false;
    /* A fire whose whole run window has passed (the controller was down) is skipped. */
    if (!tf_defrag_may_continue(cfg, f, now_ms))
        return false;
    if (fire_ms)
        *fire_ms = f;
    return true;
}

void tf_defrag_plan_free(struct tf_defrag_plan *p)
{
    if (!p)
        return;
    free(p->events);
    free(p->evictions);
    free(p->nodes);
    memset(p, 0, sizeof(*p));
}

struct builder {
    struct tf_defrag_plan *p;
    size_t ecap, vcap, ncap;
    bool nomem;
};

static struct tf_defrag_event *add_event(struct builder *b, enum tf_defrag_event_kind kind,
                                         const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static struct tf_defrag_event *add_event(struct builder *b, enum tf_defrag_event_kind kind,
                                         const char *fmt, ...)
{
    static const char *const reasons[] = {"DefragStarted", "DefragPodEvicted", "DefragFinished",
                                          "DefragSkipMissingPDB"};
    struct tf_defrag_event *grown =
        tf_grow(b->p->events, &b->ecap, b->p->nevents + 1, sizeof(*grown), 16);
    if (!grown) {
        b->nomem = true;
        return NULL;
    }
    b->p->events = grown;
    struct tf_defrag_event *e = &b->p->events[b->p->nevents++];
    e->kind = kind;
    e->reason = reasons[kind];
    e->type = kind == TF_DEFRAG_EV_SKIP_MISSING_PDB ? "Warning" : "Normal";
    e->eviction = -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof(e->message), fmt, ap);
    va_end(ap);
    return e;
}

static struct tf_defrag_node_result *add_node(struct builder *b, const char *name, uint32_t used,
                                              uint32_t gpus)
{
    struct tf_defrag_node_result *grown =
        tf_grow(b->p->nodes, &b->ncap, b->p->nnodes + 1, sizeof(*grown), 16);
    if (!grown) {
        b->nomem = true;
        return NULL;
    }
    b->p->nodes = grown;
    struct tf_defrag_node_result *r = &b->p->nodes[b->p->nnodes++];
    memset(r, 0, sizeof(*r));
    tf_strlcpy(r->node, name, sizeof(r->node));
    r->used_gpus = used;
    r->gpus = gpus;
    return r;
}

/* ---- state ---- */

struct ctx {
    const struct tf_defrag_input *in;
    struct tf_cluster *c; /* the copy */
    struct tf_alloc *a;
    uint32_t pool;
    struct tf_strmap facts;   /* node name -> index into in->nodes */
    struct tf_strmap pods;    /* "ns/name" -> index into in->pods */
    char **pod_keys;          /* owned */
    bool *drained, *received; /* by node id */
};

static uint32_t used_gpus(const struct tf_cluster *c, uint32_t nid)
{
    const struct tf_node *n = &c->nodes[nid];
    uint32_t used = 0;
    for (unsigned k = 0; k < n->ngpus; k++) {
        const struct tf_gpu *g = &c->gpus[n->gpu_first + k];
        if (g->nworkloads || g->nparts)
            used++;
    }
    return used;
}

static const struct tf_defrag_node *facts_of(const struct ctx *x, const char *name)
{
    uint32_t i;
    if (tf_strmap_get(&x->facts, name, strlen(name), &i))
        return NULL;
    return &x->in->nodes[i];
}

static const struct tf_defrag_pod *pod_of(const struct ctx *x, const char *key)
{
    uint32_t i;
    if (tf_strmap_get(&x->pods, key, strlen(key), &i))
        return NULL;
    return &x->in->pods[i];
}

struct node_ord {
    uint32_t id;
    uint32_t used, gpus;
    const char *name;
};

/* Increasing utilisation (used/gpus, compared exactly), then name. */
static int ord_cmp(const void *a, const void *b)
{
    const struct node_ord *x = a, *y = b;
    uint64_t l = (uint64_t)x->used * y->gpus, r = (uint64_t)y->used * x->gpus;
    if (l != r)
        return l < r ? -1 : 1;
    return strcmp(x->name, y->name);
}

struct worker {
    uint32_t id; /* record id in the copy */
    int64_t weight_vram, weight_tflops;
    char key[TF_KEY_MAX]; /* copied: the record goes away when the move succeeds */
};

static int worker_cmp(const void *a, const void *b)
{
    const struct worker *x = a, *y = b;
    if (x->weight_vram != y->weight_vram)
        return x->weight_vram > y->weight_vram ? -1 : 1;
    if (x->weight_tflops != y->weight_tflops)
        return x->weight_tflops > y->weight_tflops ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* The workers (record ids of the copy) on node NID, deduplicated, largest first; *OVER is
 * set when there are more than CAP. */
static size_t node_workers(const struct ctx *x, uint32_t nid, struct worker *out, size_t cap,
                           bool *over)
{
    *over = false;
    const struct tf_node *n = &x->c->nodes[nid];
    size_t nw = 0;
    uint32_t ids[256];
    for (unsigned k = 0; k < n->ngpus; k++) {
        size_t m = tf_alloc_gpu_workloads(x->a, n->gpu_first + k, ids, 256);
        if (m > 256) {
            *over = true;
            m = 256;
        }
        for (size_t i = 0; i < m; i++) {
            bool dup = false;
            for (size_t j = 0; j < nw; j++)
                if (out[j].id == ids[i])
                    dup = true;
            if (dup)
                continue;
            if (nw == cap) {
                *over = true;
                continue;
            }
            const struct tf_alloc_record *r = tf_alloc_record_at(x->a, ids[i]);
            if (!r)
                continue;
            const struct tf_gpu *g = &x->c->gpus[tf_alloc_record_slot(r, 0)->gpu];
            struct worker *wk = &out[nw++];
            wk->id = ids[i];
            wk->weight_vram = r->res.req_vram * r->ngpus;
            wk->weight_tflops = tf_alloc_req_tflops(&r->res, g->cap_tflops) * r->ngpus;
            tf_strlcpy(wk->key, tf_alloc_record_key(r), sizeof(wk->key));
        }
    }
    qsort(out, nw, sizeof(*out), worker_cmp);
    return nw;
}

static void fmt_share(uint32_t used, uint32_t gpus, char *buf, size_t len)
{
    /* One decimal, rounded down: 1/8 -> 12.5%. */
    uint64_t tenths = gpus ? (uint64_t)used * 1000 / gpus : 0;
    snprintf(buf, len, "%u/%u GPUs in use (%llu.%llu%%)", used, gpus,
             (unsigned long long)(tenths / 10), (unsigned long long)(tenths % 10));
}

/* Simulates moving every worker W[0..NW) off node NID. On success the copy keeps the moved
 * workers on their targets (TARGETS[i] gets worker i's node) and the originals are gone; on
 * failure the copy is exactly as before and WHY says which worker did not fit. */
static int simulate(struct ctx *x, uint32_t nid, uint32_t used, const struct worker *w, size_t nw,
                    uint32_t *targets, char *why, size_t whylen)
{
    const struct tf_cluster *c = x->c;
    const struct tf_node *n = &c->nodes[nid];
    const struct tf_pool *pool = &c->pools[x->pool];
    int rc = 0;
    size_t suspended = 0, placed = 0;
    char(*simname)[TF_DEFRAG_NAME_MAX + 8] = calloc(nw ? nw : 1, sizeof(*simname));
    char(*simns)[TF_DEFRAG_NAME_MAX] = calloc(nw ? nw : 1, sizeof(*simns));
    const char **names = calloc(pool->nnodes ? pool->nnodes : 1, sizeof(char *));
    struct tf_node_verdict *ver = calloc(pool->nnodes ? pool->nnodes : 1, sizeof(*ver));
    if (!simname || !simns || !names || !ver) {
        rc = TF_ENOMEM;
        goto out;
    }
    for (; suspended < nw; suspended++) {
        rc = tf_alloc_suspend(x->a, w[suspended].id);
        if (rc)
            goto undo;
    }
    for (size_t i = 0; i < nw; i++) {
        const struct tf_alloc_record *r = tf_alloc_record_at(x->a, w[i].id);
        const struct tf_defrag_pod *pod = pod_of(x, tf_alloc_record_key(r));
        struct tf_alloc_request req;
        char rns[TF_KEY_MAX], rname[TF_KEY_MAX];
        if (pod && pod->req)
            req = *pod->req;
        else
            tf_alloc_record_request(x->a, r, &req, rns, rname);
        const char *key = tf_alloc_record_key(r);
        size_t nsl = (size_t)r->ns_len + 1;
        tf_strlcpy(simns[i], key, nsl < sizeof(simns[i]) ? nsl : sizeof(simns[i]));
        snprintf(simname[i], sizeof(simname[i]), "%s%s", key + r->ns_len + 1, SIM_SUFFIX);
        req.ns = simns[i];
        req.name = simname[i];
        req.pool = pool->name;
        /* Targets: other schedulable, not drained nodes at least as utilised as this one. */
        size_t nt = 0;
        for (uint32_t k = 0; k < pool->nnodes; k++) {
            uint32_t t = pool->nodes[k];
            if (t == nid || x->drained[t])
                continue;
            const struct tf_defrag_node *f = facts_of(x, c->nodes[t].name);
            if (f && f->unschedulable)
                continue;
            uint32_t tu = used_gpus(c, t);
            if ((uint64_t)tu * n->ngpus < (uint64_t)used * c->nodes[t].ngpus)
                continue;
            names[nt++] = c->nodes[t].name;
        }
        char reasons[1024], ferr[256];
        struct tf_reasons rb;
        tf_reasons_init(&rb, reasons, sizeof(reasons));
        int best = -1;
        if (nt) {
            rc = tf_alloc_filter(x->a, &req, names, nt, ver, &rb, ferr, sizeof(ferr));
            if (rc == TF_ENOMEM)
                goto undo;
            if (rc) {
                snprintf(why, whylen, "pod %s cannot be placed: %s", key, ferr);
                rc = TF_ENOSPC;
                goto undo;
            }
            for (size_t k = 0; k < nt; k++)
                if (ver[k].fit && (best < 0 || ver[k].score > ver[best].score))
                    best = (int)k;
        }
        if (best < 0) {
            char share[64];
            fmt_share(used, n->ngpus, share, sizeof(share));
            if (!nt)
                snprintf(why, whylen,
                         "pod %s: no other schedulable node of the pool is at least as utilised "
                         "(%s)",
                         key, share);
            else
                snprintf(why, whylen, "pod %s fits no other node at least as utilised (%s): %s",
                         key, share, ver[0].reason ? ver[0].reason : "no room");
            rc = TF_ENOSPC;
            goto undo;
        }
        struct tf_alloc_result res;
        rc = tf_alloc_reserve(x->a, &req, names[best], &res, ferr, sizeof(ferr));
        if (rc) {
            snprintf(why, whylen, "pod %s: %s", key, ferr);
            goto undo;
        }
        targets[i] = res.node;
        placed++;
    }
    /* Success: the originals leave the copy. */
    for (size_t i = 0; i < nw; i++) {
        const struct tf_alloc_record *r = tf_alloc_record_at(x->a, w[i].id);
        char ns[TF_KEY_MAX], name[TF_KEY_MAX];
        struct tf_alloc_request q;
        tf_alloc_record_request(x->a, r, &q, ns, name);
        tf_alloc_release(x->a, ns, name);
    }
    rc = 0;
    goto out;
undo:
    for (size_t i = 0; i < placed; i++)
        tf_alloc_release(x->a, simns[i], simname[i]);
    for (size_t i = 0; i < suspended; i++)
        (void)tf_alloc_resume(x->a, w[i].id); /* the GPUs were just freed: cannot fail */
out:
    free(simname);
    free(simns);
    free(names);
    free(ver);
    return rc;
}

static void evict_node(struct ctx *x, struct builder *b, uint32_t nid, uint32_t used,
                       struct tf_defrag_node_result *res, const struct worker *w, size_t nw,
                       const uint32_t *targets)
{
    char share[64];
    fmt_share(used, x->c->nodes[nid].ngpus, share, sizeof(share));
    res->status = TF_DEFRAG_DRAIN;
    snprintf(res->reason, sizeof(res->reason), "%s; %zu worker%s fit on fuller nodes", share, nw,
             nw == 1 ? "" : "s");
    x->drained[nid] = true;
    for (size_t i = 0; i < nw; i++) {
        x->received[targets[i]] = true;
        struct tf_defrag_eviction *grown =
            tf_grow(b->p->evictions, &b->vcap, b->p->nevictions + 1, sizeof(*grown), 16);
        if (!grown) {
            b->nomem = true;
            return;
        }
        b->p->evictions = grown;
        struct tf_defrag_eviction *e = &b->p->evictions[b->p->nevictions];
        memset(e, 0, sizeof(*e));
        const char *key = w[i].key;
        const char *slash = strchr(key, '/');
        size_t nl = slash ? (size_t)(slash - key) : 0;
        tf_strlcpy(e->ns, key, nl + 1 < sizeof(e->ns) ? nl + 1 : sizeof(e->ns));
        tf_strlcpy(e->name, slash ? slash + 1 : key, sizeof(e->name));
        tf_strlcpy(e->node, x->c->nodes[nid].name, sizeof(e->node));
        tf_strlcpy(e->target, x->c->nodes[targets[i]].name, sizeof(e->target));
        struct tf_defrag_event *ev =
            add_event(b, TF_DEFRAG_EV_POD_EVICTED,
                      "Evicting pod %s/%s from node %s (%s); the simulation placed it on node %s",
                      e->ns, e->name, e->node, share, e->target);
        if (!ev)
            return;
        ev->eviction = (int32_t)b->p->nevictions;
        b->p->nevictions++;
    }
}

/* Considers node NID; records its outcome. */
static int consider(struct ctx *x, struct builder *b, uint32_t nid, int *nskip_pdb,
                    int *nskip_other)
{
    const struct tf_defrag_input *in = x->in;
    const struct tf_defrag_config *cfg = in->cfg;
    const struct tf_node *n = &x->c->nodes[nid];
    uint32_t used = used_gpus(x->c, nid);
    struct tf_defrag_node_result *res = add_node(b, n->name, used, n->ngpus);
    if (!res)
        return TF_ENOMEM;
    char share[64];
    fmt_share(used, n->ngpus, share, sizeof(share));
    const struct tf_defrag_node *f = facts_of(x, n->name);
    if (used == 0) {
        res->status = TF_DEFRAG_IDLE;
        snprintf(res->reason, sizeof(res->reason), "no workers: left to node compaction");
        return 0;
    }
    if (x->received[nid]) {
        res->status = TF_DEFRAG_NOT_CANDIDATE;
        snprintf(res->reason, sizeof(res->reason),
                 "%s: receives workers from nodes drained in this run", share);
        return 0;
    }
    if ((uint64_t)used * 100 > (uint64_t)cfg->utilization_threshold_pct * n->ngpus) {
        res->status = TF_DEFRAG_NOT_CANDIDATE;
        snprintf(res->reason, sizeof(res->reason), "%s, above utilizationThresholdPercent %d",
                 share, cfg->utilization_threshold_pct);
        return 0;
    }
    (*nskip_other)++;
    if (f && f->unschedulable) {
        res->status = TF_DEFRAG_UNSCHEDULABLE;
        snprintf(res->reason, sizeof(res->reason), "node is unschedulable (cordoned)");
        return 0;
    }
    if (f && f->do_not_disrupt) {
        res->status = TF_DEFRAG_DO_NOT_DISRUPT;
        snprintf(res->reason, sizeof(res->reason),
                 "label tensor-fusion.ai/do-not-disrupt: \"true\"");
        return 0;
    }
    if (f && f->foreign_pod) {
        res->status = TF_DEFRAG_FOREIGN_GPU_POD;
        snprintf(res->reason, sizeof(res->reason), "pod %s uses GPUs outside TensorFusion",
                 f->foreign_pod);
        return 0;
    }
    struct worker *w = calloc(MAX_NODE_WORKERS, sizeof(*w));
    uint32_t *targets = calloc(MAX_NODE_WORKERS, sizeof(*targets));
    if (!w || !targets) {
        free(w);
        free(targets);
        return TF_ENOMEM;
    }
    int rc = 0;
    bool over;
    size_t nw = node_workers(x, nid, w, MAX_NODE_WORKERS, &over);
    if (over) {
        res->status = TF_DEFRAG_NO_ROOM;
        snprintf(res->reason, sizeof(res->reason), "more than %d workers: not planned",
                 MAX_NODE_WORKERS);
        goto out;
    }
    /* Every worker pod must be covered by a PodDisruptionBudget. */
    for (size_t i = 0; i < nw; i++) {
        const struct tf_defrag_pod *p = pod_of(x, w[i].key);
        if (!p || !p->pdb_covered) {
            res->status = TF_DEFRAG_MISSING_PDB;
            snprintf(res->reason, sizeof(res->reason),
                     "pod %s is not covered by a PodDisruptionBudget%s", w[i].key,
                     p ? "" : " (no pod found for its allocation)");
            add_event(b, TF_DEFRAG_EV_SKIP_MISSING_PDB,
                      "Skipping node %s: pod %s is not covered by a PodDisruptionBudget", n->name,
                      w[i].key);
            (*nskip_other)--;
            (*nskip_pdb)++;
            goto out;
        }
    }
    /* Workers younger than maxDuration are never evicted: the node cannot be emptied. */
    for (size_t i = 0; i < nw; i++) {
        const struct tf_defrag_pod *p = pod_of(x, w[i].key);
        int64_t age = in->now_ms - p->created_ms;
        if (age < cfg->max_duration_ms) {
            char a[32], m[32];
            tf_duration_format(age > 0 ? age : 0, a, sizeof(a));
            tf_duration_format(cfg->max_duration_ms, m, sizeof(m));
            res->status = TF_DEFRAG_YOUNG_WORKER;
            snprintf(res->reason, sizeof(res->reason),
                     "pod %s was created %s ago, less than maxDuration %s", w[i].key, a, m);
            goto out;
        }
    }
    char why[TF_DEFRAG_MSG_MAX];
    rc = simulate(x, nid, used, w, nw, targets, why, sizeof(why));
    if (rc == TF_ENOSPC || rc == TF_EINVAL || rc == TF_ENOENT || rc == TF_ENOTSUP) {
        res->status = TF_DEFRAG_NO_ROOM;
        tf_strlcpy(res->reason, why, sizeof(res->reason));
        rc = 0;
        goto out;
    }
    if (rc)
        goto out;
    (*nskip_other)--;
    evict_node(x, b, nid, used, res, w, nw, targets);
out:
    free(w);
    free(targets);
    return rc;
}

int tf_defrag_plan(const struct tf_defrag_input *in, struct tf_defrag_plan *out, char *err,
                   size_t errlen)
{
    memset(out, 0, sizeof(*out));
    if (!in || !in->alloc || !in->cfg) {
        tf_errf(err, errlen, "defrag: missing allocator or configuration");
        return TF_EINVAL;
    }
    const struct tf_cluster *orig = tf_alloc_cluster(in->alloc);
    uint32_t pool = in->pool ? tf_cluster_pool_find(orig, in->pool) : tf_cluster_default_pool(orig);
    if (pool == TF_NONE) {
        tf_errf(err, errlen, "defrag: unknown GPU pool \"%s\"", in->pool ? in->pool : "(default)");
        return TF_EINVAL;
    }
    struct ctx x = {.in = in, .pool = pool};
    struct builder b = {.p = out};
    tf_strmap_init(&x.facts);
    tf_strmap_init(&x.pods);
    struct node_ord *ord = NULL;
    int rc = tf_alloc_copy(in->alloc, &x.c, &x.a, err, errlen);
    if (rc)
        return rc;
    rc = TF_ENOMEM;
    x.drained = calloc(x.c->nnodes ? x.c->nnodes : 1, sizeof(bool));
    x.received = calloc(x.c->nnodes ? x.c->nnodes : 1, sizeof(bool));
    x.pod_keys = calloc(in->npods ? in->npods : 1, sizeof(char *));
    if (!x.drained || !x.received || !x.pod_keys)
        goto fail;
    for (size_t i = 0; i < in->nnodes; i++)
        if (in->nodes[i].name &&
            tf_strmap_put(&x.facts, in->nodes[i].name, (uint32_t)i) == TF_ENOMEM)
            goto fail;
    for (size_t i = 0; i < in->npods; i++) {
        const struct tf_defrag_pod *p = &in->pods[i];
        if (!p->ns || !p->name)
            continue;
        size_t l = strlen(p->ns) + strlen(p->name) + 2;
        x.pod_keys[i] = malloc(l);
        if (!x.pod_keys[i])
            goto fail;
        snprintf(x.pod_keys[i], l, "%s/%s", p->ns, p->name);
        if (tf_strmap_put(&x.pods, x.pod_keys[i], (uint32_t)i) == TF_ENOMEM)
            goto fail;
    }
    const struct tf_pool *pl = &x.c->pools[pool];
    ord = calloc(pl->nnodes ? pl->nnodes : 1, sizeof(*ord));
    if (!ord)
        goto fail;
    size_t ncand = 0;
    for (uint32_t i = 0; i < pl->nnodes; i++) {
        uint32_t id = pl->nodes[i];
        ord[i] =
            (struct node_ord){id, used_gpus(x.c, id), x.c->nodes[id].ngpus, x.c->nodes[id].name};
        if (ord[i].used && (uint64_t)ord[i].used * 100 <=
                               (uint64_t)in->cfg->utilization_threshold_pct * ord[i].gpus)
            ncand++;
    }
    qsort(ord, pl->nnodes, sizeof(*ord), ord_cmp);
    out->deadline_ms = in->run_started_ms + in->cfg->max_duration_ms;
    char dl[40], md[32];
    tf_rfc3339_format(out->deadline_ms, dl, sizeof(dl));
    tf_duration_format(in->cfg->max_duration_ms, md, sizeof(md));
    if (!tf_defrag_may_continue(in->cfg, in->run_started_ms, in->now_ms)) {
        for (uint32_t i = 0; i < pl->nnodes; i++) {
            struct tf_defrag_node_result *r =
                add_node(&b, x.c->nodes[ord[i].id].name, ord[i].used, ord[i].gpus);
            if (!r)
                goto fail;
            r->status = TF_DEFRAG_DEADLINE;
            snprintf(r->reason, sizeof(r->reason), "maxDuration %s reached at %s", md, dl);
        }
        add_event(&b, TF_DEFRAG_EV_FINISHED,
                  "Defrag stopped: maxDuration %s reached at %s; nothing more to evict", md, dl);
        if (b.nomem)
            goto fail;
        rc = 0;
        goto done;
    }
    if (!in->resume)
        add_event(&b, TF_DEFRAG_EV_STARTED,
                  "Defrag started: %zu of %u nodes have at most %d%% of their GPUs in use; runs "
                  "until %s (maxDuration %s)",
                  ncand, pl->nnodes, in->cfg->utilization_threshold_pct, dl, md);
    int nskip_pdb = 0, nskip_other = 0;
    for (uint32_t i = 0; i < pl->nnodes; i++) {
        rc = consider(&x, &b, ord[i].id, &nskip_pdb, &nskip_other);
        if (rc)
            goto fail;
        if (b.nomem)
            goto fail;
    }
    size_t ndrained = 0;
    for (size_t i = 0; i < out->nnodes; i++)
        if (out->nodes[i].status == TF_DEFRAG_DRAIN)
            ndrained++;
    char skipped[160] = "";
    if (nskip_pdb || nskip_other)
        snprintf(skipped, sizeof(skipped),
                 "; skipped %d candidate node%s (%d missing a "
                 "PodDisruptionBudget)",
                 nskip_pdb + nskip_other, nskip_pdb + nskip_other == 1 ? "" : "s", nskip_pdb);
    add_event(&b, TF_DEFRAG_EV_FINISHED, "Defrag finished: %zu pod%s to evict from %zu node%s%s",
              out->nevictions, out->nevictions == 1 ? "" : "s", ndrained, ndrained == 1 ? "" : "s",
              skipped);
    if (b.nomem)
        goto fail;
    rc = 0;
    goto done;
fail:
    if (rc == 0 || rc == TF_ENOMEM) {
        rc = TF_ENOMEM;
        tf_errf(err, errlen, "defrag: out of memory");
    }
    tf_defrag_plan_free(out);
done:
    free(ord);
    if (x.pod_keys)
        for (size_t i = 0; i < in->npods; i++)
            free(x.pod_keys[i]);
    free(x.pod_keys);
    free(x.drained);
    free(x.received);
    tf_strmap_free(&x.facts);
    tf_strmap_free(&x.pods);
    tf_alloc_destroy(x.a);
    tf_cluster_destroy(x.c);
    return rc;
}
