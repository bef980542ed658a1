/* SPDX-License-Identifier: Apache-2.0
 *
 * Benchmark: the efficiency planners at fleet scale. cron next-fire in a DST zone, node
 * compaction over 5,000 nodes, a defrag plan over 1,000 8-GPU nodes (copy of the state plus
 * the simulation), and an autoscale recommendation from 100,000 usage samples. Prints
 * `name: value unit` lines.
 */
#include "core/alloc.h"
#include "core/autoscale.h"
#include "core/compaction.h"
#include "core/cron.h"
#include "core/defrag.h"
#include "core/tzload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GiB (INT64_C(1) << 30)
#define T0 INT64_C(1714550400000) /* 2024-05-01T08:00:00Z */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void bench_cron(const char *expr, const char *zone, const char *name)
{
    struct tf_tz *z;
    struct tf_cron c;
    char err[256];
    if (tf_tz_load(NULL, zone, &z, NULL, err, sizeof(err)) ||
        tf_cron_parse(expr, &c, NULL, err, sizeof(err))) {
        fprintf(stderr, "bench cron: %s\n", err);
        exit(1);
    }
    int64_t t = T0;
    int n = 20000;
    double t0 = now();
    for (int i = 0; i < n; i++)
        if (tf_cron_next(&c, z, t, &t))
            exit(1);
    double dt = now() - t0;
    printf("%s: %.2f us/call\n", name, dt / n * 1e6);
    tf_tz_destroy(z);
}

static void bench_compaction(void)
{
    enum { N = 5000 };
    static struct tf_compaction_node nodes[N];
    static struct tf_compaction_decision d[N];
    static char names[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "node-%05d", i);
        nodes[i] = (struct tf_compaction_node){
            names[i], 8 * 312000, 8 * 80 * GiB, 8 * 312000, 8 * 80 * GiB, (uint32_t)(i % 3), true,
            true,     0,          i % 17 == 0,  false};
    }
    struct tf_pool_efficiency cfg;
    tf_pool_efficiency_init(&cfg);
    cfg.warm = (struct tf_capacity){100000000, 0, true, false};
    int reps = 50;
    double t0 = now();
    size_t rel = 0;
    for (int r = 0; r < reps; r++)
        rel = tf_compaction_plan(&cfg, nodes, N, T0, d, NULL);
    double dt = now() - t0;
    printf("compaction_plan_5000_nodes: %.3f ms (%zu released)\n", dt / reps * 1e3, rel);
}

static void bench_defrag(void)
{
    enum { NODES = 1000, G = 8 };
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    struct tf_pool_config pc;
    tf_pool_config_init(&pc);
    pc.placement = TF_PLACE_COMPACT_FIRST;
    uint32_t pool;
    char err[512];
    if (tf_cluster_add_pool(c, "default", &pc, &pool, err, sizeof(err)))
        exit(1);
    static char uu[NODES][G][32], nn[NODES][16];
    for (int i = 0; i < NODES; i++) {
        struct tf_gpu_spec gs[G];
        memset(gs, 0, sizeof(gs));
        snprintf(nn[i], sizeof(nn[i]), "n%04d", i);
        for (int k = 0; k < G; k++) {
            snprintf(uu[i][k], sizeof(uu[i][k]), "GPU-%d-%d", i, k);
            gs[k].uuid = uu[i][k];
            gs[k].model = tf_gpu_model_find("A100-80GB");
            gs[k].index = k;
            gs[k].numa = -1;
            gs[k].phase = TF_GPU_RUNNING;
        }
        struct tf_node_spec ns = {nn[i], TF_ISOLATION_UNSET, 0, 0, gs, G};
        if (tf_cluster_add_node(c, pool, &ns, NULL, err, sizeof(err)))
            exit(1);
    }
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    enum { MAXP = NODES * G };
    static struct tf_defrag_pod pods[MAXP];
    static char pn[MAXP][24];
    size_t np = 0;
    /* Every fifth node holds 2 workers (25 %), the others 5 (62.5 %). */
    for (int i = 0; i < NODES; i++) {
        int w = i % 5 == 0 ? 2 : 5;
        for (int k = 0; k < w; k++) {
            snprintf(pn[np], sizeof(pn[np]), "w-%d-%d", i, k);
            struct tf_alloc_request r;
            memset(&r, 0, sizeof(r));
            r.ns = "ml";
            r.name = pn[np];
            r.res.req_tflops = 10000;
            r.res.req_vram = 60 * GiB;
            if (tf_alloc_reserve(a, &r, nn[i], NULL, err, sizeof(err))) {
                fprintf(stderr, "bench defrag: %s\n", err);
                exit(1);
            }
            pods[np] = (struct tf_defrag_pod){"ml", pn[np], nn[i], 0, true, NULL};
            np++;
        }
    }
    struct tf_pool_efficiency pe;
    tf_pool_efficiency_init(&pe);
    pe.defrag.enabled = true;
    struct tf_defrag_input in = {a, "default", &pe.defrag, NULL, 0, pods, np, T0, T0, false};
    int reps = 3;
    struct tf_defrag_plan p;
    double t0 = now();
    for (int r = 0; r < reps; r++) {
        if (tf_defrag_plan(&in, &p, err, sizeof(err))) {
            fprintf(stderr, "bench defrag: %s\n", err);
            exit(1);
        }
        if (r + 1 < reps)
            tf_defrag_plan_free(&p);
    }
    double dt = now() - t0;
    printf("defrag_plan_1000_nodes_8000_gpus: %.1f ms (%zu workers, %zu evictions)\n",
           dt / reps * 1e3, np, p.nevictions);
    tf_defrag_plan_free(&p);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
}

static void bench_autoscale(void)
{
    enum { N = 100000 };
    struct tf_usage_sample *s = malloc(N * sizeof(*s));
    for (int i = 0; i < N; i++)
        s[i] = (struct tf_usage_sample){T0 - (int64_t)(N - i) * 60, 5000 + (i * 7919) % 20000,
                                        (3 + (i * 31) % 5) * GiB};
    struct tf_autoscale_config c;
    tf_autoscale_config_init(&c);
    c.enable = true;
    struct tf_autoscale_input in = {0};
    in.cfg = &c;
    in.original = (struct tf_autoscale_resources){20000, 40000, 8 * GiB, 16 * GiB, 0, 0};
    in.current = in.original;
    in.samples = s;
    in.nsamples = N;
    in.now_ms = T0;
    struct tf_autoscale_recommendation r;
    char err[256];
    int reps = 20;
    double t0 = now();
    for (int k = 0; k < reps; k++)
        if (tf_autoscale_recommend(&in, &r, err, sizeof(err)))
            exit(1);
    double dt = now() - t0;
    printf("autoscale_recommend_100k_samples: %.2f ms\n", dt / reps * 1e3);
    free(s);
}

int main(void)
{
    bench_cron("0 3 * * *", "America/New_York", "cron_next_daily_new_york");
    bench_cron("*/5 * * * *", "Europe/London", "cron_next_every_5min_london");
    bench_compaction();
    bench_defrag();
    bench_autoscale();
    return 0;
}
