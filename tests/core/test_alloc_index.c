/* SPDX-License-Identifier: Apache-2.0
 *
 * The verdict index (core/alloc_index.h) against the full scan it replaces on the extender's
 * hot path: through thousands of seeded reservations, releases, resizes, suspensions, phase
 * changes and a partition-profile change, on a dynamic and a static (partitioned) cluster
 * with a quota, every filter and score the index answers must equal tf_alloc_filter's and
 * tf_alloc_score's for the same request and candidates: return code, error, each node's id,
 * fit, score and reason byte for byte, and the reason buffer's length (also when it is too
 * small and reasons are cut). Requests repeat a set of shapes larger than the index holds (so
 * shapes are dropped and rebuilt), candidates are random subsets in random order with unknown
 * names, duplicates and sometimes pre-resolved ids. The index must also save work: a
 * candidate whose node did not change is not evaluated again.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/alloc_index.h"
#include "core/partition.h"
#include "sched_fixture.h"

#define NSHAPES 24 /* more than TF_ALLOC_INDEX_SHAPES */
#define MAXLIVE 512
#define MAXCAND 64

struct world {
    struct tf_cluster *c;
    struct tf_quota_set *q;
    struct tf_alloc *a;
    struct tf_alloc_index *x;
    enum tf_iso_policy pol;
    uint64_t rng;
    struct tf_alloc_request shapes[NSHAPES];
    int32_t idx[NSHAPES][3];
    char keys[MAXLIVE][2][24]; /* live pods: namespace, name */
    bool live[MAXLIVE];
    unsigned serial, compared, fits, unfits;
};

static uint32_t rnd(struct world *w, uint32_t n)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return (uint32_t)(w->rng % n);
}

static void build(struct world *w, enum tf_iso_policy pol, uint64_t seed)
{
    static const char *models[] = {"L4", "A100-80GB", "H100", "L40S", "A100-40GB"};
    memset(w, 0, sizeof(*w));
    w->rng = seed;
    w->pol = pol;
    w->c = tf_cluster_new(pol);
    w->q = tf_quota_set_new();
    struct tf_pool_config cfg;
    tf_pool_config_init(&cfg);
    cfg.max_workers_per_node = 12;
    assert_int_equal(tf_cluster_add_pool(w->c, "main", &cfg, NULL, NULL, 0), 0);
    tf_pool_config_init(&cfg);
    cfg.placement = TF_PLACE_LOW_LOAD_FIRST;
    cfg.tflops_oversell_pct = 150;
    assert_int_equal(tf_cluster_add_pool(w->c, "side", &cfg, NULL, NULL, 0), 0);
    for (int i = 0; i < 40; i++) {
        struct tf_gpu_spec g[8];
        char uu[8][24], name[16];
        unsigned n = 1 + rnd(w, 8);
        const char *model = models[rnd(w, pol == TF_ISOPOL_STATIC ? 3 : 5)];
        memset(g, 0, sizeof(g));
        for (unsigned k = 0; k < n; k++) {
            snprintf(uu[k], sizeof(uu[k]), "gpu-%d-%u", i, k);
            g[k].uuid = uu[k];
            g[k].model = tf_gpu_model_find(model);
            g[k].index = (int32_t)k;
            g[k].numa = (int16_t)rnd(w, 2);
            g[k].phase = rnd(w, 12) ? TF_GPU_RUNNING : TF_GPU_PENDING;
            g[k].nvlink = rnd(w, 2) ? (UINT64_C(1) << n) - 1 - (UINT64_C(1) << k) : 0;
        }
        snprintf(name, sizeof(name), "node-%d", i);
        enum tf_isolation mode = TF_ISOLATION_UNSET;
        if (pol == TF_ISOPOL_STATIC) {
            static const enum tf_isolation modes[] = {TF_ISOLATION_SOFT, TF_ISOLATION_HARD,
                                                      TF_ISOLATION_PARTITIONED};
            mode = modes[rnd(w, 3)];
        }
        struct tf_node_spec ns = {name, mode,       rnd(w, 2) ? 64 * GiB : 0, rnd(w, 6) ? 0 : 2,
                                  g,    (uint16_t)n};
        char err[256];
        if (tf_cluster_add_node(w->c, i < 32 ? 0 : 1, &ns, NULL, err, sizeof(err)))
            fail_msg("%s", err);
    }
    struct tf_quota_spec qs;
    tf_quota_spec_init(&qs);
    qs.total_requests.tflops = TF(2000);
    qs.total_requests.vram = 600 * GiB;
    qs.max_workers = 40;
    assert_int_equal(tf_quota_put(w->q, "quota", &qs, NULL, 0), 0);
    w->a = tf_alloc_new(w->c, w->q);
    w->x = tf_alloc_index_new(w->a);
    assert_non_null(w->x);
}

static void destroy(struct world *w)
{
    tf_alloc_index_destroy(w->x);
    tf_alloc_destroy(w->a);
    tf_quota_set_destroy(w->q);
    tf_cluster_destroy(w->c);
}

/* Shape K of the request set (namespace and name are filled per use). */
static void make_shape(struct world *w, int k)
{
    static const char *nss[] = {"quota", "free"};
    struct tf_alloc_request *r = &w->shapes[k];
    memset(r, 0, sizeof(*r));
    r->ns = nss[rnd(w, 2)];
    r->pool = rnd(w, 6) == 0 ? "side" : NULL;
    r->qos = (enum tf_qos)rnd(w, 4);
    unsigned kind = rnd(w, 12);
    r->gpu_count = (uint16_t)(kind == 0 ? 2 + rnd(w, 3) : 1);
    if (w->pol == TF_ISOPOL_STATIC && rnd(w, 3) == 0) {
        r->isolation = TF_ISOLATION_PARTITIONED;
        r->res.req_tflops = TF(1 + rnd(w, 150));
        r->res.req_vram = (int64_t)(1 + rnd(w, 50)) * GiB;
        r->gpu_count = 1;
        if (rnd(w, 3) == 0)
            r->partition_template = rnd(w, 2) ? "3g.40gb" : "1g.10gb";
        return;
    }
    if (kind == 1) {
        r->isolation = TF_ISOLATION_SHARED;
        return;
    }
    if (kind == 2) {
        r->dedicated = true;
        r->vendor = rnd(w, 2) ? "NVIDIA" : "AMD";
        return;
    }
    r->isolation = rnd(w, 4) == 0 ? TF_ISOLATION_HARD : TF_ISOLATION_SOFT;
    if (rnd(w, 4) == 0) {
        r->res.req_by_percent = true;
        r->res.req_percent = (int32_t)(100 + rnd(w, 6000));
    } else {
        r->res.req_tflops = (int64_t)rnd(w, 250000);
        if (rnd(w, 2))
            r->res.lim_tflops = r->res.req_tflops * (1 + rnd(w, 8));
    }
    r->res.req_vram = (int64_t)rnd(w, 40 * 1024) * MiB;
    if (rnd(w, 3) == 0)
        r->res.lim_vram = r->res.req_vram * 3;
    if (kind == 3) {
        w->idx[k][0] = (int32_t)rnd(w, 8);
        w->idx[k][1] = (int32_t)rnd(w, 8);
        w->idx[k][2] = 70; /* out of range: in the reason, never matched */
        r->gpu_indices = w->idx[k];
        r->n_indices = 3;
    }
    if (rnd(w, 6) == 0)
        r->model = rnd(w, 2) ? "H100" : "a100";
}

/* One filter + score of a random shape on random candidates, index against full scan. */
static void compare(struct world *w, unsigned step)
{
    const struct tf_alloc_request *r = &w->shapes[rnd(w, NSHAPES)];
    struct tf_alloc_request req = *r;
    req.name = "probe";
    const char *names[MAXCAND];
    uint32_t ids[MAXCAND];
    char unknown[4][16];
    size_t n = 1 + rnd(w, MAXCAND);
    for (size_t i = 0; i < n; i++) {
        unsigned pick = rnd(w, 40);
        if (pick == 0) {
            snprintf(unknown[i % 4], sizeof(unknown[0]), "cpu-%u", rnd(w, 9));
            names[i] = unknown[i % 4];
        } else if (pick == 1 && i) {
            names[i] = names[rnd(w, (uint32_t)i)]; /* duplicate */
        } else {
            names[i] = w->c->nodes[rnd(w, w->c->nnodes)].name;
        }
        ids[i] = tf_cluster_node_find(w->c, names[i], strlen(names[i]));
    }
    size_t cap = rnd(w, 8) == 0 ? 64 + rnd(w, 400) : 64 * 1024;
    static char b1[64 * 1024], b2[64 * 1024];
    struct tf_reasons r1, r2;
    tf_reasons_init(&r1, b1, cap);
    tf_reasons_init(&r2, b2, cap);
    struct tf_node_verdict v1[MAXCAND], v2[MAXCAND];
    char e1[512] = "", e2[512] = "";
    bool with_reasons = rnd(w, 5) != 0;
    int rc1 = tf_alloc_filter(w->a, &req, names, n, v1, with_reasons ? &r1 : NULL, e1, sizeof(e1));
    int rc2 = tf_alloc_index_filter(w->x, &req, names, rnd(w, 2) ? ids : NULL, n, v2,
                                    with_reasons ? &r2 : NULL, e2, sizeof(e2));
    if (rc1 != rc2 || strcmp(e1, e2))
        fail_msg("step %u: filter rc %d '%s', index %d '%s'", step, rc1, e1, rc2, e2);
    for (size_t i = 0; i < n; i++) {
        const char *s1 = v1[i].reason, *s2 = v2[i].reason;
        if (v1[i].node != v2[i].node || v1[i].fit != v2[i].fit || v1[i].score != v2[i].score ||
            (!s1 != !s2) || (s1 && strcmp(s1, s2)))
            fail_msg("step %u: node %s: full scan fit %d score %d '%s', index fit %d score %d "
                     "'%s'",
                     step, names[i], v1[i].fit, v1[i].score, s1 ? s1 : "(none)", v2[i].fit,
                     v2[i].score, s2 ? s2 : "(none)");
        if (v1[i].fit)
            w->fits++;
        else
            w->unfits++;
    }
    if (with_reasons && (r1.n != r2.n || r1.len != r2.len || memcmp(b1, b2, r1.len)))
        fail_msg("step %u: reason buffers differ", step);
    int s1[MAXCAND], s2[MAXCAND];
    e1[0] = e2[0] = '\0';
    rc1 = tf_alloc_score(w->a, &req, names, n, s1, e1, sizeof(e1));
    rc2 = tf_alloc_index_score(w->x, &req, names, rnd(w, 2) ? ids : NULL, n, s2, e2, sizeof(e2));
    if (rc1 != rc2 || strcmp(e1, e2) || memcmp(s1, s2, n * sizeof(int)))
        fail_msg("step %u: scores differ (rc %d / %d)", step, rc1, rc2);
    w->compared++;
}

/* A random change of the state: what the extender's binds, pod deletions, the autoscaler and
 * the hypervisors' reports do. */
static void change(struct world *w)
{
    char err[512];
    unsigned op = rnd(w, 100);
    int slot = (int)rnd(w, MAXLIVE);
    if (op < 45 && !w->live[slot]) { /* place a pod of one of the shapes */
        struct tf_alloc_request req = w->shapes[rnd(w, NSHAPES)];
        snprintf(w->keys[slot][0], sizeof(w->keys[0][0]), "%s", req.ns);
        snprintf(w->keys[slot][1], sizeof(w->keys[0][1]), "p-%u", w->serial++);
        req.ns = w->keys[slot][0];
        req.name = w->keys[slot][1];
        int rc = tf_alloc_place(w->a, &req, NULL, NULL, err, sizeof(err));
        w->live[slot] = rc == 0;
    } else if (op < 75 && w->live[slot]) {
        assert_int_equal(tf_alloc_release(w->a, w->keys[slot][0], w->keys[slot][1]), 0);
        w->live[slot] = false;
    } else if (op < 85 && w->live[slot]) {
        struct tf_alloc_resources nr = {0};
        nr.req_tflops = (int64_t)rnd(w, 100000);
        nr.req_vram = (int64_t)rnd(w, 16 * 1024) * MiB;
        tf_alloc_resize(w->a, w->keys[slot][0], w->keys[slot][1], &nr, err, sizeof(err));
    } else if (op < 92 && w->live[slot]) {
        uint32_t id = tf_alloc_find(w->a, w->keys[slot][0], w->keys[slot][1]);
        if (tf_alloc_suspend(w->a, id) == TF_ESTATE)
            tf_alloc_resume(w->a, id);
    } else if (op < 97) {
        tf_cluster_set_gpu_phase(w->c, rnd(w, w->c->ngpus),
                                 rnd(w, 4) ? TF_GPU_RUNNING : TF_GPU_UNKNOWN);
    }
}

static void run(enum tf_iso_policy pol, uint64_t seed, unsigned steps)
{
    static struct world w;
    build(&w, pol, seed);
    for (int k = 0; k < NSHAPES; k++)
        make_shape(&w, k);
    for (unsigned i = 0; i < steps; i++) {
        if (i == steps / 2) { /* a new partition profile: every kept verdict may change */
            struct tf_partition_profile pp;
            assert_int_equal(tf_partition_builtin(tf_gpu_model_find("H100"), &pp), 0);
            pp.ntemplates = 2;
            char err[256];
            int rc = tf_cluster_set_partition_profile(w.c, &pp, err, sizeof(err));
            assert_true(rc == 0 || rc == TF_EBUSY);
        }
        if (i % 500 == 499) /* the workload mix changes */
            make_shape(&w, (int)rnd(&w, NSHAPES));
        change(&w);
        for (int k = 0; k < 3; k++)
            compare(&w, i);
        char err[512];
        if (i % 256 == 0 && tf_alloc_check(w.a, err, sizeof(err)))
            fail_msg("step %u: %s", i, err);
    }
    struct tf_alloc_index_stats st;
    tf_alloc_index_stats(w.x, &st);
    /* Both outcomes were compared, shapes were dropped, and kept verdicts were reused. */
    assert_true(w.fits > 1000 && w.unfits > 1000);
    assert_true(st.shapes_dropped > 0);
    assert_true(st.computed * 2 < st.lookups);
    destroy(&w);
}

static void dynamic_cluster_index_answers_as_the_full_scan(void **state)
{
    run(TF_ISOPOL_DYNAMIC, 0x2545f4914f6cdd1dull, 6000);
}

static void static_partitioned_cluster_index_answers_as_the_full_scan(void **state)
{
    run(TF_ISOPOL_STATIC, 0x9e3779b97f4a7c15ull, 6000);
}

/* A bind changes one node: the next pod of the same shape re-evaluates that node only. */
static void a_bind_re_evaluates_only_the_node_it_changed(void **state)
{
    struct world w;
    build(&w, TF_ISOPOL_DYNAMIC, 7);
    struct tf_alloc_request req = {.ns = "free", .name = "a", .isolation = TF_ISOLATION_SOFT};
    req.res.req_tflops = TF(10);
    req.res.req_vram = GiB;
    const struct tf_pool *pool = &w.c->pools[0];
    const char *names[64];
    for (uint32_t i = 0; i < pool->nnodes; i++)
        names[i] = w.c->nodes[pool->nodes[i]].name;
    struct tf_node_verdict v[64];
    assert_int_equal(tf_alloc_index_filter(w.x, &req, names, NULL, pool->nnodes, v, NULL, NULL, 0),
                     0);
    struct tf_alloc_index_stats s0, s1;
    tf_alloc_index_stats(w.x, &s0);
    assert_int_equal(s0.computed, pool->nnodes);
    struct tf_alloc_result res;
    assert_int_equal(tf_alloc_place(w.a, &req, &res, NULL, NULL, 0), 0);
    req.name = "b";
    assert_int_equal(tf_alloc_index_filter(w.x, &req, names, NULL, pool->nnodes, v, NULL, NULL, 0),
                     0);
    tf_alloc_index_stats(w.x, &s1);
    assert_int_equal(s1.computed - s0.computed, 1);
    assert_int_equal(s1.lookups - s0.lookups, pool->nnodes);
    destroy(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dynamic_cluster_index_answers_as_the_full_scan),
        cmocka_unit_test(static_partitioned_cluster_index_answers_as_the_full_scan),
        cmocka_unit_test(a_bind_re_evaluates_only_the_node_it_changed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
