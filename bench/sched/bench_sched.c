/* SPDX-License-Identifier: Apache-2.0
 *
 * Scheduler benchmark: 1,000 nodes x 8 GPUs of mixed models (A100-80GB, H100, H200, L40S, L4;
 * NVLink and two NUMA nodes on the SXM machines), 50,000 pods of mixed shapes arriving in a
 * seeded order with departures (45 % of arrivals are followed by the release of a random
 * running pod), placed with tf_alloc_place on one core. Prints placements and decisions per
 * second, release rate and peak memory (getrusage maxrss, cumulative), for each placement mode
 * at 1,000 nodes and for the default mode at 10,000 nodes, plus the extender path (filter +
 * score over all 1,000 node names). Times are this thread's CPU time (the build machines are
 * shared; the figure is what one core does), the clock's own cost subtracted. Output:
 * `name: value unit` lines.
 *
 * Shapes: 40 % small soft (5-40 TFLOPS, 2-16Gi), 15 % by compute percent (10-50 %), 10 % hard
 * isolation, 10 % pinned to a model, 10 % 2-4 GPUs, 5 % 8-GPU shared training jobs, 5 % one
 * shared GPU, 5 % dedicated A100.
 */
#include "common/err.h"
#include "core/alloc.h"
#include "core/cluster.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define GiB (INT64_C(1) << 30)
#define NPODS 50000

struct pod {
    char name[16];
    struct tf_alloc_request r;
};

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state % n);
}

/* CPU time of this thread: the machine may be shared, and "one core" is what is measured.
 * The cost of reading the clock is calibrated once and subtracted from every interval. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double clock_cost;

static void calibrate(void)
{
    double best = 1;
    for (int i = 0; i < 20000; i++) {
        double t0 = now(), t1 = now();
        if (t1 - t0 < best)
            best = t1 - t0;
    }
    clock_cost = best;
}

static double since(double t0)
{
    double d = now() - t0 - clock_cost;
    return d > 0 ? d : 0;
}

static long maxrss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static struct tf_cluster *build(unsigned nnodes, enum tf_placement_mode mode)
{
    static const char *models[] = {"A100-80GB", "H100", "L4", "L40S", "H200", "L4"};
    struct tf_cluster *c = tf_cluster_new(TF_ISOPOL_DYNAMIC);
    struct tf_pool_config cfg;
    tf_pool_config_init(&cfg);
    cfg.placement = mode;
    cfg.is_default = true;
    char err[256];
    if (!c || tf_cluster_add_pool(c, "default", &cfg, NULL, err, sizeof(err))) {
        fprintf(stderr, "bench_sched: cluster: %s\n", err);
        exit(1);
    }
    for (unsigned n = 0; n < nnodes; n++) {
        struct tf_gpu_spec g[8];
        char uuid[8][32], name[32];
        const char *model = models[n % 6];
        bool sxm = strcmp(model, "L4") && strcmp(model, "L40S");
        memset(g, 0, sizeof(g));
        for (int i = 0; i < 8; i++) {
            snprintf(uuid[i], sizeof(uuid[i]), "GPU-%u-%d", n, i);
            g[i].uuid = uuid[i];
            g[i].model = tf_gpu_model_find(model);
            g[i].index = i;
            g[i].numa = (int16_t)(i / 4);
            g[i].phase = TF_GPU_RUNNING;
            g[i].nvlink = sxm ? 0xffu & ~(1u << i) : 0;
        }
        snprintf(name, sizeof(name), "node-%05u", n);
        struct tf_node_spec ns = {name, TF_ISOLATION_UNSET, 1024 * GiB, 0, g, 8};
        if (tf_cluster_add_node(c, 0, &ns, NULL, err, sizeof(err))) {
            fprintf(stderr, "bench_sched: node: %s\n", err);
            exit(1);
        }
    }
    return c;
}

static void make_pods(struct pod *pods)
{
    rng_state = 0x2545f4914f6cdd1dull;
    for (int i = 0; i < NPODS; i++) {
        struct pod *p = &pods[i];
        snprintf(p->name, sizeof(p->name), "pod-%d", i);
        struct tf_alloc_request *r = &p->r;
        memset(r, 0, sizeof(*r));
        r->ns = i % 3 ? "team-a" : "team-b";
        r->name = p->name;
        r->qos = TF_QOS_MEDIUM;
        r->gpu_count = 1;
        unsigned shape = rnd(100);
        if (shape < 40) {
            r->res.req_tflops = 1000 * (5 + rnd(36));
            r->res.lim_tflops = r->res.req_tflops * 2;
            r->res.req_vram = (2 + rnd(15)) * GiB;
        } else if (shape < 55) {
            r->res.req_by_percent = true;
            r->res.req_percent = (int32_t)(1000 + rnd(4001));
            r->res.req_vram = (4 + rnd(17)) * GiB;
        } else if (shape < 65) {
            r->isolation = TF_ISOLATION_HARD;
            r->res.req_tflops = 1000 * (20 + rnd(81));
            r->res.req_vram = (8 + rnd(23)) * GiB;
        } else if (shape < 75) {
            r->model = rnd(2) ? "L4" : "H100";
            r->res.req_tflops = 1000 * (5 + rnd(30));
            r->res.req_vram = (2 + rnd(10)) * GiB;
        } else if (shape < 85) {
            r->gpu_count = (uint16_t)(2 + rnd(3));
            r->res.req_tflops = 1000 * (50 + rnd(151));
            r->res.req_vram = (20 + rnd(41)) * GiB;
        } else if (shape < 90) {
            r->isolation = TF_ISOLATION_SHARED;
            r->gpu_count = 8;
        } else if (shape < 95) {
            r->isolation = TF_ISOLATION_SHARED;
        } else {
            r->dedicated = true;
            r->model = "A100";
        }
    }
}

struct result {
    unsigned placed, refused, released;
    double t_place, t_release;
};

static struct result run(struct tf_alloc *a, struct pod *pods)
{
    struct result res = {0, 0, 0, 0, 0};
    int *live = malloc(sizeof(int) * NPODS);
    unsigned nlive = 0;
    rng_state = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < NPODS; i++) {
        struct tf_alloc_result out;
        double t0 = now();
        int rc = tf_alloc_place(a, &pods[i].r, &out, NULL, NULL, 0);
        res.t_place += since(t0);
        if (rc == 0) {
            res.placed++;
            live[nlive++] = i;
        } else if (rc == TF_ENOSPC) {
            res.refused++;
        } else {
            fprintf(stderr, "bench_sched: place: %s\n", tf_strerror(rc));
            exit(1);
        }
        if (nlive && rnd(100) < 45) {
            unsigned k = rnd(nlive);
            const struct tf_alloc_request *r = &pods[live[k]].r;
            t0 = now();
            if (tf_alloc_release(a, r->ns, r->name)) {
                fprintf(stderr, "bench_sched: release failed\n");
                exit(1);
            }
            res.t_release += since(t0);
            res.released++;
            live[k] = live[--nlive];
        }
    }
    free(live);
    char err[256];
    if (tf_alloc_check(a, err, sizeof(err))) { /* the numbers mean nothing otherwise */
        fprintf(stderr, "bench_sched: invariant broken: %s\n", err);
        exit(1);
    }
    return res;
}

static void report(const char *tag, unsigned nnodes, const struct result *r)
{
    printf("sched_placed_%s: %u pods\n", tag, r->placed);
    printf("sched_unschedulable_%s: %u pods\n", tag, r->refused);
    printf("sched_placements_per_sec_%s: %.0f placements/s\n", tag, r->placed / r->t_place);
    printf("sched_decisions_per_sec_%s: %.0f decisions/s\n", tag,
           (r->placed + r->refused) / r->t_place);
    printf("sched_releases_per_sec_%s: %.0f releases/s\n", tag, r->released / r->t_release);
    printf("sched_peak_rss_%s: %ld KiB\n", tag, maxrss_kib());
    (void)nnodes;
}

/* The extender's path: filter + score a pod over every node name (no reasons formatted). */
static void bench_extender(struct tf_alloc *a, const struct tf_cluster *c, struct pod *pods)
{
    const char **names = malloc(sizeof(char *) * c->nnodes);
    struct tf_node_verdict *v = malloc(sizeof(*v) * c->nnodes);
    for (uint32_t i = 0; i < c->nnodes; i++)
        names[i] = c->nodes[i].name;
    const int n = 2000;
    unsigned fits = 0;
    double t0 = now();
    for (int i = 0; i < n; i++) {
        struct tf_alloc_request r = pods[i].r;
        r.name = "extender-probe";
        if (tf_alloc_filter(a, &r, names, c->nnodes, v, NULL, NULL, 0) == 0)
            for (uint32_t k = 0; k < c->nnodes; k++)
                fits += v[k].fit;
    }
    double dt = since(t0);
    printf("sched_extender_filter_score_%u_nodes: %.1f us/pod\n", c->nnodes, dt / n * 1e6);
    printf("sched_extender_fitting_nodes_%u_nodes: %.0f nodes/pod\n", c->nnodes, (double)fits / n);
    free(names);
    free(v);
}

int main(void)
{
    cpu_set_t one; /* one core, as the issue asks; best effort */
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
    sched_setaffinity(0, sizeof(one), &one);

    calibrate();
    struct pod *pods = malloc(sizeof(*pods) * NPODS);
    make_pods(pods);
    printf("sched_pods: %d pods\n", NPODS);

    static const struct {
        enum tf_placement_mode mode;
        const char *tag;
    } modes[] = {{TF_PLACE_NODE_COMPACT_GPU_LOW_LOAD, "1000_nodes"},
                 {TF_PLACE_COMPACT_FIRST, "1000_nodes_compactfirst"},
                 {TF_PLACE_LOW_LOAD_FIRST, "1000_nodes_lowloadfirst"}};
    for (size_t m = 0; m < 3; m++) {
        struct tf_cluster *c = build(1000, modes[m].mode);
        if (m == 0)
            printf("sched_gpus_1000_nodes: %u gpus\n", c->ngpus);
        struct tf_alloc *a = tf_alloc_new(c, NULL);
        struct result r = run(a, pods);
        report(modes[m].tag, 1000, &r);
        if (m == 0)
            bench_extender(a, c, pods);
        tf_alloc_destroy(a);
        tf_cluster_destroy(c);
    }
    struct tf_cluster *c = build(10000, TF_PLACE_NODE_COMPACT_GPU_LOW_LOAD);
    printf("sched_gpus_10000_nodes: %u gpus\n", c->ngpus);
    struct tf_alloc *a = tf_alloc_new(c, NULL);
    struct result r = run(a, pods);
    report("10000_nodes", 10000, &r);
    tf_alloc_destroy(a);
    tf_cluster_destroy(c);
    free(pods);
    return 0;
}
