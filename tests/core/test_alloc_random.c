/* SPDX-License-Identifier: Apache-2.0
 *
 * Randomised invariant test: 100,000 seeded operations (place, extender reserve, release,
 * double release, resize, suspend/resume, restore, phase changes, preemption plans) on a
 * dynamic-policy and a static-policy cluster with quotas. After every step the allocator's own
 * full check must pass AND an independent shadow model must agree: for every GPU,
 * capacity - available == the sum of what its live pods should hold, computed from the pods'
 * requests and the GPU's capacity, never from the allocator's records.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/partition.h"
#include "core/preempt.h"
#include "sched_fixture.h"

#define MAXPODS 384

struct pod {
    bool live, suspended;
    char ns[8], name[16];
    struct tf_alloc_request req;
    struct tf_alloc_container ctr[2];
    int32_t idx[2];
    uint32_t node;
    uint16_t ngpus;
    uint32_t gpus[TF_NODE_MAX_GPUS];
};

struct world {
    struct tf_cluster *c;
    struct tf_quota_set *q;
    struct tf_alloc *a;
    struct pod pods[MAXPODS];
    struct tf_partition_profile prof[64]; /* built-in profiles by model index, for the shadow */
    int64_t sh_t[4096], sh_v[4096];       /* shadow: what each GPU's pods should hold */
    uint64_t rng;
    unsigned serial;
    unsigned placed, refused, resized, preempts;
};

static uint32_t rnd(struct world *w, uint32_t n)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return (uint32_t)(w->rng % n);
}

static const char *models_dyn[] = {"L4", "A100-80GB", "H100", "L40S", "T4"};
static const char *models_static[] = {"A100-80GB", "H100", "A100-40GB", "L4"};

static void build(struct world *w, enum tf_iso_policy pol)
{
    w->c = tf_cluster_new(pol);
    w->q = tf_quota_set_new();
    struct tf_pool_config cfg;
    tf_pool_config_init(&cfg);
    cfg.max_workers_per_node = 24;
    assert_int_equal(tf_cluster_add_pool(w->c, "main", &cfg, NULL, NULL, 0), 0);
    tf_pool_config_init(&cfg);
    cfg.placement = TF_PLACE_COMPACT_FIRST;
    cfg.tflops_oversell_pct = 200;
    assert_int_equal(tf_cluster_add_pool(w->c, "side", &cfg, NULL, NULL, 0), 0);
    for (int i = 0; i < 14; i++) {
        struct tf_gpu_spec g[8];
        char uu[8][24], name[16];
        unsigned n = 1 + rnd(w, 8);
        const char *model =
            pol == TF_ISOPOL_STATIC ? models_static[rnd(w, 4)] : models_dyn[rnd(w, 5)];
        memset(g, 0, sizeof(g));
        for (unsigned k = 0; k < n; k++) {
            snprintf(uu[k], sizeof(uu[k]), "gpu-%d-%u", i, k);
            g[k].uuid = uu[k];
            g[k].model = tf_gpu_model_find(model);
            g[k].index = (int32_t)k;
            g[k].numa = (int16_t)rnd(w, 2);
            g[k].phase = TF_GPU_RUNNING;
            g[k].nvlink = rnd(w, 2) ? (UINT64_C(1) << n) - 1 - (UINT64_C(1) << k) : 0;
        }
        snprintf(name, sizeof(name), "node-%d", i);
        enum tf_isolation mode = TF_ISOLATION_UNSET;
        if (pol == TF_ISOPOL_STATIC) {
            static const enum tf_isolation modes[] = {TF_ISOLATION_SOFT, TF_ISOLATION_HARD,
                                                      TF_ISOLATION_PARTITIONED};
            mode = modes[rnd(w, 3)];
        }
        struct tf_node_spec ns = {name, mode, rnd(w, 2) ? 128 * GiB : 0, 0, g, (uint16_t)n};
        char err[256];
        if (tf_cluster_add_node(w->c, i < 11 ? 0 : 1, &ns, NULL, err, sizeof(err)))
            fail_msg("%s", err);
    }
    struct tf_quota_spec qs;
    tf_quota_spec_init(&qs);
    qs.total_requests.tflops = TF(3000);
    qs.total_requests.vram = 900 * GiB;
    qs.max_workers = 60;
    qs.max_gpu_count = 4;
    assert_int_equal(tf_quota_put(w->q, "quota", &qs, NULL, 0), 0);
    w->a = tf_alloc_new(w->c, w->q);
    for (size_t m = 0; m < tf_gpu_model_count() && m < 64; m++)
        tf_partition_builtin(tf_gpu_model_at(m), &w->prof[m]);
}

static void destroy(struct world *w)
{
    tf_alloc_destroy(w->a);
    tf_quota_set_destroy(w->q);
    tf_cluster_destroy(w->c);
}

/* What pod P should hold on GPU G, from its request alone. */
static void expected(const struct world *w, const struct pod *p, unsigned slot, int64_t *t,
                     int64_t *v)
{
    const struct tf_gpu *g = &w->c->gpus[p->gpus[slot]];
    const struct tf_alloc_request *r = &p->req;
    if (r->isolation == TF_ISOLATION_SHARED || r->dedicated) {
        *t = g->cap_tflops;
        *v = g->cap_vram;
        return;
    }
    if (r->isolation == TF_ISOLATION_PARTITIONED) {
        /* Which template is the allocator's choice; that it covers the request and what it
         * costs come from the built-in table. */
        const struct tf_alloc_record *rec =
            tf_alloc_record_at(w->a, tf_alloc_find(w->a, p->ns, p->name));
        const struct tf_partition_profile *pp = &w->prof[g->model_idx];
        int k = tf_alloc_record_slot(rec, slot)->part;
        assert_true(k >= 0 && k < pp->ntemplates);
        assert_true(pp->templates[k].vram_bytes >= r->res.req_vram);
        *t = pp->templates[k].tflops_milli;
        *v = pp->templates[k].vram_bytes;
        return;
    }
    *t = tf_alloc_req_tflops(&r->res, g->cap_tflops);
    *v = r->res.req_vram;
}

/* Adds (SIGN +1) or removes (-1) pod P's expected holdings to the shadow. */
static void shadow(struct world *w, const struct pod *p, int sign)
{
    for (unsigned s = 0; s < p->ngpus; s++) {
        int64_t et, ev;
        expected(w, p, s, &et, &ev);
        w->sh_t[p->gpus[s]] += sign * et;
        w->sh_v[p->gpus[s]] += sign * ev;
    }
}

static void verify(struct world *w, unsigned step)
{
    char err[512];
    if (tf_alloc_check(w->a, err, sizeof(err)))
        fail_msg("step %u: %s", step, err);
    if (step % 1000 == 0) { /* the incremental shadow itself, from scratch */
        static int64_t t[4096], v[4096];
        memset(t, 0, sizeof(t));
        memset(v, 0, sizeof(v));
        unsigned live = 0;
        for (int i = 0; i < MAXPODS; i++) {
            const struct pod *p = &w->pods[i];
            live += p->live;
            for (unsigned s = 0; p->live && !p->suspended && s < p->ngpus; s++) {
                int64_t et, ev;
                expected(w, p, s, &et, &ev);
                t[p->gpus[s]] += et;
                v[p->gpus[s]] += ev;
            }
        }
        if (live != tf_alloc_count(w->a))
            fail_msg("step %u: %u live pods, allocator has %u", step, live, tf_alloc_count(w->a));
        if (memcmp(t, w->sh_t, sizeof(t)) || memcmp(v, w->sh_v, sizeof(v)))
            fail_msg("step %u: incremental shadow drifted", step);
    }
    for (uint32_t g = 0; g < w->c->ngpus; g++) {
        const struct tf_gpu *gp = &w->c->gpus[g];
        if (gp->avail_tflops < 0 || gp->avail_vram < 0 ||
            gp->cap_tflops - gp->avail_tflops != w->sh_t[g] ||
            gp->cap_vram - gp->avail_vram != w->sh_v[g])
            fail_msg("step %u: GPU %s: used %lld/%lld, shadow %lld/%lld", step, gp->uuid,
                     (long long)(gp->cap_tflops - gp->avail_tflops),
                     (long long)(gp->cap_vram - gp->avail_vram), (long long)w->sh_t[g],
                     (long long)w->sh_v[g]);
    }
}

static struct pod *free_slot(struct world *w)
{
    for (int tries = 0; tries < 8; tries++) {
        struct pod *p = &w->pods[rnd(w, MAXPODS)];
        if (!p->live)
            return p;
    }
    return NULL;
}

static struct pod *live_pod(struct world *w)
{
    for (int tries = 0; tries < 16; tries++) {
        struct pod *p = &w->pods[rnd(w, MAXPODS)];
        if (p->live)
            return p;
    }
    return NULL;
}

static void random_request(struct world *w, struct pod *p, enum tf_iso_policy pol)
{
    static const char *nss[] = {"quota", "free", "other"};
    memset(p, 0, sizeof(*p));
    snprintf(p->ns, sizeof(p->ns), "%s", nss[rnd(w, 3)]);
    snprintf(p->name, sizeof(p->name), "pod-%u", w->serial++);
    struct tf_alloc_request *r = &p->req;
    r->ns = p->ns;
    r->name = p->name;
    r->pool = rnd(w, 5) == 0 ? "side" : NULL;
    r->qos = (enum tf_qos)rnd(w, 4);
    unsigned shape = rnd(w, 10);
    r->gpu_count = (uint16_t)(shape == 0 ? 2 + rnd(w, 3) : 1);
    if (pol == TF_ISOPOL_STATIC && rnd(w, 3) == 0) {
        r->isolation = TF_ISOLATION_PARTITIONED;
        r->res.req_tflops = TF(1 + rnd(w, 120));
        r->res.req_vram = (int64_t)(1 + rnd(w, 40)) * GiB;
        r->gpu_count = 1;
        return;
    }
    if (shape == 1) {
        r->isolation = TF_ISOLATION_SHARED;
        return;
    }
    if (shape == 2) {
        r->dedicated = true;
        r->model = rnd(w, 2) ? "A100" : "L4";
        return;
    }
    r->isolation = rnd(w, 4) == 0 ? TF_ISOLATION_HARD : TF_ISOLATION_SOFT;
    if (rnd(w, 4) == 0) {
        r->res.req_by_percent = true;
        r->res.req_percent = (int32_t)(100 + rnd(w, 5000));
    } else {
        r->res.req_tflops = (int64_t)rnd(w, 200000);
        if (rnd(w, 2))
            r->res.lim_tflops = r->res.req_tflops * (1 + rnd(w, 4));
    }
    r->res.req_vram = (int64_t)rnd(w, 30 * 1024) * MiB;
    if (shape == 3 && r->gpu_count == 1) {
        p->ctr[0].name = "a";
        p->ctr[0].gpus = 1;
        p->ctr[1].name = "b";
        p->ctr[1].gpus = 1;
        r->containers = p->ctr;
        r->ncontainers = 2;
        r->gpu_count = 0;
    }
    if (shape == 4) {
        p->idx[0] = (int32_t)rnd(w, 8);
        p->idx[1] = (int32_t)rnd(w, 8);
        r->gpu_indices = p->idx;
        r->n_indices = 2;
    }
    if (rnd(w, 8) == 0)
        r->model = rnd(w, 2) ? "H100" : "L4";
}

static void adopt(struct world *w, struct pod *p, const struct tf_alloc_result *res)
{
    p->live = true;
    p->node = res->node;
    p->ngpus = res->ngpus;
    memcpy(p->gpus, res->gpus, sizeof(uint32_t) * res->ngpus);
    if (p->req.containers)
        p->req.gpu_count = res->ngpus; /* the split fixed it */
    shadow(w, p, +1);
}

static void step(struct world *w, enum tf_iso_policy pol, unsigned i)
{
    char err[512];
    struct tf_alloc_result res;
    unsigned op = rnd(w, 100);
    if (op < 38) { /* place */
        struct pod *p = free_slot(w);
        if (!p)
            return;
        random_request(w, p, pol);
        int rc = tf_alloc_place(w->a, &p->req, &res, NULL, err, sizeof(err));
        if (rc == 0) {
            adopt(w, p, &res);
            w->placed++;
        } else {
            assert_true(rc == TF_ENOSPC);
            w->refused++;
        }
    } else if (op < 43) { /* extender: filter a few nodes, reserve on the best */
        struct pod *p = free_slot(w);
        if (!p)
            return;
        random_request(w, p, pol);
        const char *names[4];
        struct tf_node_verdict v[4];
        for (int k = 0; k < 4; k++)
            names[k] = w->c->nodes[rnd(w, w->c->nnodes)].name;
        if (tf_alloc_filter(w->a, &p->req, names, 4, v, NULL, err, sizeof(err)))
            return;
        for (int k = 0; k < 4; k++)
            if (v[k].fit) {
                int rc = tf_alloc_reserve(w->a, &p->req, names[k], &res, err, sizeof(err));
                if (rc)
                    fail_msg("step %u: filter said fit, reserve: %s", i, err);
                adopt(w, p, &res);
                break;
            }
    } else if (op < 65) { /* release, sometimes twice */
        struct pod *p = live_pod(w);
        if (!p)
            return;
        if (!p->suspended)
            shadow(w, p, -1);
        assert_int_equal(tf_alloc_release(w->a, p->ns, p->name), 0);
        if (rnd(w, 4) == 0)
            assert_int_equal(tf_alloc_release(w->a, p->ns, p->name), TF_ENOENT);
        p->live = false;
    } else if (op < 80) { /* resize */
        struct pod *p = live_pod(w);
        if (!p || p->suspended)
            return;
        struct tf_alloc_resources nr = {0};
        if (rnd(w, 4) == 0) {
            nr.req_by_percent = true;
            nr.req_percent = (int32_t)(100 + rnd(w, 3000));
        } else {
            nr.req_tflops = (int64_t)rnd(w, 150000);
        }
        nr.req_vram = (int64_t)rnd(w, 24 * 1024) * MiB;
        int rc = tf_alloc_resize(w->a, p->ns, p->name, &nr, err, sizeof(err));
        bool whole_or_part = p->req.isolation == TF_ISOLATION_SHARED || p->req.dedicated ||
                             p->req.isolation == TF_ISOLATION_PARTITIONED;
        if (whole_or_part)
            assert_int_equal(rc, TF_ENOTSUP);
        else if (rc == 0) {
            shadow(w, p, -1);
            p->req.res = nr;
            shadow(w, p, +1);
            w->resized++;
        } else
            assert_int_equal(rc, TF_ENOSPC);
    } else if (op < 87) { /* suspend / resume */
        struct pod *p = live_pod(w);
        if (!p)
            return;
        uint32_t id = tf_alloc_find(w->a, p->ns, p->name);
        if (!p->suspended) {
            shadow(w, p, -1);
            assert_int_equal(tf_alloc_suspend(w->a, id), 0);
            p->suspended = true;
        } else {
            int rc = tf_alloc_resume(w->a, id);
            assert_true(rc == 0 || rc == TF_ENOSPC);
            if (rc == 0) {
                p->suspended = false;
                shadow(w, p, +1);
            }
        }
    } else if (op < 93) { /* controller restart for one pod: release, restore the same GPUs */
        struct pod *p = live_pod(w);
        if (!p || p->suspended)
            return;
        /* The annotations carry the partition template the pod runs in. */
        char tpl[TF_PART_ID_MAX] = "";
        if (p->req.isolation == TF_ISOLATION_PARTITIONED) {
            const struct tf_alloc_record *rec =
                tf_alloc_record_at(w->a, tf_alloc_find(w->a, p->ns, p->name));
            const struct tf_partition_profile *pp =
                tf_cluster_profile(w->c, &w->c->gpus[p->gpus[0]]);
            strcpy(tpl, pp->templates[tf_alloc_record_slot(rec, 0)->part].id);
        }
        shadow(w, p, -1);
        assert_int_equal(tf_alloc_release(w->a, p->ns, p->name), 0);
        const char *ids[TF_NODE_MAX_GPUS];
        for (unsigned k = 0; k < p->ngpus; k++)
            ids[k] = w->c->gpus[p->gpus[k]].uuid;
        struct tf_alloc_request r = p->req;
        r.gpu_count = p->ngpus;
        r.containers = NULL;
        r.ncontainers = 0;
        if (tpl[0])
            r.partition_template = tpl;
        int rc =
            tf_alloc_restore(w->a, &r, w->c->nodes[p->node].name, ids, p->ngpus, err, sizeof(err));
        if (rc)
            fail_msg("step %u: restore of a just-released pod failed: %s", i, err);
        p->req.containers = NULL;
        p->req.ncontainers = 0;
        p->req.gpu_count = p->ngpus;
        if (tpl[0])
            p->req.partition_template = NULL; /* the record says which template now */
        shadow(w, p, +1);
    } else if (op < 97) { /* hypervisor reports a phase change */
        uint32_t g = rnd(w, w->c->ngpus);
        tf_cluster_set_gpu_phase(w->c, g, rnd(w, 3) ? TF_GPU_RUNNING : TF_GPU_UNKNOWN);
    } else { /* preemption plan: must leave everything as it was */
        struct pod p;
        random_request(w, &p, pol);
        p.req.qos = TF_QOS_CRITICAL;
        struct tf_preempt_plan plan;
        int rc = tf_preempt_plan(w->a, &p.req, &plan, err, sizeof(err));
        assert_true(rc == 0 || rc == TF_ENOSPC);
        for (unsigned k = 0; rc == 0 && k < plan.nvictims; k++) {
            const struct tf_alloc_record *r = tf_alloc_record_at(w->a, plan.victims[k]);
            assert_non_null(r);
            assert_true(r->qos <= TF_QOS_MEDIUM);
        }
        w->preempts++;
    }
}

static void run(enum tf_iso_policy pol, uint64_t seed, unsigned ops)
{
    static struct world w;
    memset(&w, 0, sizeof(w));
    w.rng = seed;
    build(&w, pol);
    for (unsigned i = 0; i < ops; i++) {
        step(&w, pol, i);
        verify(&w, i);
    }
    /* Everything released: the cluster is back to full capacity and no GPU stays locked. */
    for (int i = 0; i < MAXPODS; i++)
        if (w.pods[i].live) {
            if (!w.pods[i].suspended)
                shadow(&w, &w.pods[i], -1);
            assert_int_equal(tf_alloc_release(w.a, w.pods[i].ns, w.pods[i].name), 0);
            w.pods[i].live = false;
        }
    verify(&w, ops);
    for (uint32_t g = 0; g < w.c->ngpus; g++) {
        assert_int_equal(w.c->gpus[g].avail_tflops, w.c->gpus[g].cap_tflops);
        assert_int_equal(w.c->gpus[g].avail_vram, w.c->gpus[g].cap_vram);
        assert_int_equal(w.c->gpus[g].lim_tflops, 0);
        if (pol == TF_ISOPOL_DYNAMIC)
            assert_int_equal(w.c->gpus[g].mode, TF_ISOLATION_UNSET);
    }
    struct tf_quota_usage u = tf_quota_usage_of(w.q, "quota", 5);
    assert_int_equal(u.workers, 0);
    assert_int_equal(u.req_tflops, 0);
    /* The run must have exercised both outcomes. */
    assert_true(w.placed > ops / 10 && w.refused > 0 && w.resized > 0 && w.preempts > 0);
    destroy(&w);
}

static void dynamic_cluster_keeps_every_invariant_through_60k_random_operations(void **state)
{
    run(TF_ISOPOL_DYNAMIC, 0x9e3779b97f4a7c15ull, 60000);
}

static void
static_cluster_with_partitions_keeps_every_invariant_through_40k_operations(void **state)
{
    run(TF_ISOPOL_STATIC, 0xd1b54a32d192ed03ull, 40000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dynamic_cluster_keeps_every_invariant_through_60k_random_operations),
        cmocka_unit_test(
            static_cluster_with_partitions_keeps_every_invariant_through_40k_operations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
