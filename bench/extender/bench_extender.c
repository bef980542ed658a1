/* SPDX-License-Identifier: Apache-2.0
 *
 * Benchmark: the scheduler extender over its real HTTPS endpoint, driven the way
 * kube-scheduler drives it (nodeCacheCapable: ExtenderArgs with NodeNames; /filter, then
 * /prioritize with the nodes that passed, then /bind of the best-scored one), at 1,000 nodes x
 * 8 GPUs with 20,000 pods resident and 5,000 nodes x 8 GPUs with 100,000 pods resident.
 *
 * The cluster: four models in turn (A100-80GB, H100, L40S, L4), one node each. Resident pods
 * go round-robin over the nodes and then the GPUs (2-3 per GPU), 20 TFLOPS and 8Gi each. The
 * pods scheduled ask 20 TFLOPS and 10Gi: every L4 (24Gi) node fails with a reason (a quarter
 * of FailedNodes), the other nodes fit.
 *
 * In-process: the extender's HTTPS server (TLS, a self-generated certificate, one thread per
 * connection as in tf-controller) and a stub API server (plain HTTP) answering what /bind asks
 * of kube-apiserver: GET pod (the extender has no pod informer here), POST pods/binding (with
 * the allocation's annotations), POST events. After a Binding the stub delivers
 * the pod's update to the extender's pod handler, as the pod informer would. The client is
 * libcurl over one keep-alive TLS connection per thread, like kube-scheduler's HTTP client.
 *
 * Printed (`name: value unit`), per size:
 *   pod_ingest         the pod handler reading one resident pod as the informer reports it
 *                      (once per pod event)
 *   state_load         tf_extender_rebuild: the state from the GPU objects, pools and every
 *                      resident pod (start-up after the informers synced, leader change,
 *                      inventory change), wall and this thread's CPU time
 *   wire_bytes         the bodies of one pod's filter and prioritize, and prioritize_listed:
 *                      the hosts its answer lists (those scoring 0 are left out)
 *   filter / prioritize / bind p50 and p99 over the HTTPS round trip
 *   filter_plus_prioritize_p50, the per-pod cost of the serial scheduling cycle, and _cpu: the
 *                      CPU time the whole process (client, TLS both ways, extender) spent per
 *                      pod on it (wall times stretch with the machine's load, this less);
 *                      measured with no CPU clock read on the serving path (a system call
 *                      here), the *_server_cpu, *_client_cpu and *_handler_cpu splits in a
 *                      later pass of as many pods that reads them
 *   transport_floor_p50 / _cpu: the same cycle, the same bytes both ways, over the same server
 *                      with a handler that does no work (it answers what the extender answered
 *                      the first pod), each pod run over the extender and then over the floor;
 *                      above_floor_p50: the median of the per-pod differences, the extender's
 *                      own share of the round trips. What kube-scheduler's side, TLS, HTTP and
 *                      the kernel cost here is machine-bound: machine_loopback_rtt_p50 (a
 *                      one-byte round trip between two threads over loopback TCP, printed
 *                      once) is 15-90 us on the same kind of VM from one run to the next;
 *                      machine_guest_halt_poll (or machine_cpuidle_driver off a VM with the
 *                      haltpoll driver): how long an idle vCPU polls before it halts, 0 on
 *                      that VM, where waking a halted vCPU for each message is most of it
 *                      (with the kernel's default 200 us the round trip there is ~12 us)
 *   sustained_pods_per_sec: one scheduling thread (filter -> prioritize -> pick the best) that
 *                      hands each pod to BINDERS binding threads (kube-scheduler binds
 *                      asynchronously), pods bound / wall time (until the extender's Events,
 *                      written by its recorder's thread, are written too); and the process's
 *                      CPU time per pod bound (scheduler side, extender, stub API server
 *                      together), and sustained_extender_cpu_per_pod: the extender's threads
 *                      (those serving its connections, with the API calls of /bind, and the
 *                      event recorder's)
 *   *_handler_cpu      CPU time inside the extender's handler per call or per pod bound (its
 *                      own work, without TLS, HTTP and the scheduler side)
 *   the latency rounds and the sustained loop twice: with every node a candidate
 *                      (percentageOfNodesToScore 100, the worst case: extender_N_nodes_*),
 *                      then as kube-scheduler sends them by default (it stops looking once it
 *                      found 50 % less a point per 125 nodes, at least 5 %: 420 of 1,000, 500
 *                      of 5,000 nodes; each pod's search starts where the last stopped:
 *                      extender_N_nodes_default_pct_*)
 *   rss, and the heap the extender's state holds (bytes malloc'd by the loading thread and
 *   still in use once the inputs are freed, mmap'd blocks included) per GPU
 * and the 1-minute load average before and after (the machine may be shared).
 * Usage: bench_extender [ITERATIONS [SUSTAINED_PODS [NODES]]]   (defaults 300, 2000, both
 * sizes; 0 skips the latency rounds or the sustained loop; NODES 1000 or 5000 runs that size
 * only, e.g. under a profiler)
 */
#include "peers.h"
#include "common/log.h"
#include "controller/extender.h"
#include "controller/https.h"
#include "controller/k8s/client.h"
#include "controller/tls.h"

#include <json-c/json.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BINDERS 4

static const char *const models[] = {"A100-80GB", "H100", "L40S", "L4"};
static const char *const vram[] = {"80Gi", "80Gi", "48Gi", "24Gi"};
static const char *const tflops[] = {"312", "989", "362", "121"};

/* CPU time spent inside the extender's handler, in nanoseconds, per verb (filter, prioritize,
 * bind): what the extender itself costs, without TLS, HTTP and the client. */
static _Atomic long long handler_ns[3];
/* Whether the handler reads its thread's CPU clock around each call (see latency()). */
static _Atomic bool probe_handler = true;

/* The extender server's threads (one per connection: TLS, HTTP, handler, the API calls of
 * /bind), by their CPU clocks: what the extender process would spend, without kube-scheduler
 * and kube-apiserver. LAST_CLOCK: the thread that served the latest request. */
#define MAX_SERVER_THREADS 64
static pthread_mutex_t server_lock = PTHREAD_MUTEX_INITIALIZER;
static clockid_t server_clock[MAX_SERVER_THREADS];
static double server_base[MAX_SERVER_THREADS]; /* CPU seconds at the window's start */
static int nserver;
static _Atomic clockid_t last_clock;
static __thread int server_gen; /* the run this thread registered in */
static int run_gen;

static void server_register(void)
{
    pthread_mutex_lock(&server_lock);
    if (server_gen != run_gen) {
        clockid_t clk;
        if (!pthread_getcpuclockid(pthread_self(), &clk) && nserver < MAX_SERVER_THREADS) {
            server_clock[nserver] = clk;
            server_base[nserver++] = 0; /* born inside the window: all of it counts */
            atomic_store(&last_clock, clk);
        }
        server_gen = run_gen;
    }
    pthread_mutex_unlock(&server_lock);
}

/* Starts a window: every known server thread's CPU so far is left out. */
static void server_window(void)
{
    pthread_mutex_lock(&server_lock);
    for (int i = 0; i < nserver; i++)
        server_base[i] = clock_s(server_clock[i]);
    pthread_mutex_unlock(&server_lock);
}

/* CPU seconds the server threads spent since the window started (all of them alive). */
static double server_cpu(void)
{
    double t = 0;
    pthread_mutex_lock(&server_lock);
    for (int i = 0; i < nserver; i++)
        t += clock_s(server_clock[i]) - server_base[i];
    pthread_mutex_unlock(&server_lock);
    return t;
}

static void ext_handler(const struct tf_http_req *req, struct tf_http_resp *resp, void *arg)
{
    server_register();
    clockid_t mine;
    if (!pthread_getcpuclockid(pthread_self(), &mine))
        atomic_store(&last_clock, mine);
    bool probe = atomic_load(&probe_handler);
    double c0 = probe ? cpu_s(true) : 0;
    if (!tf_extender_handle(arg, req, resp)) {
        resp->status = 404;
        resp->body = strdup("{}");
    }
    int verb = strstr(req->path, "filter") ? 0 : strstr(req->path, "prioritize") ? 1 : 2;
    if (probe)
        handler_ns[verb] += (long long)((cpu_s(true) - c0) * 1e9);
}

/* The ExtenderArgs for POD over the node names in NAMES (a JSON array's text). */
static void args_body(struct text *t, const char *pod, const char *names, size_t names_len)
{
    t->len = 0;
    puts_(t, "{\"Pod\":");
    puts_(t, pod);
    puts_(t, ",\"Nodes\":null,\"NodeNames\":");
    put(t, names, names_len);
    puts_(t, "}");
}

/* The "NodeNames":[...] array of a filter answer (its span in BODY), or NULL. */
static const char *passed_names(const char *body, size_t *len)
{
    const char *p = strstr(body, "\"NodeNames\":");
    if (!p)
        return NULL;
    p += 12;
    if (*p != '[')
        return NULL;
    const char *e = strchr(p, ']'); /* node names hold no ']' */
    if (!e)
        return NULL;
    *len = (size_t)(e - p + 1);
    return p;
}

/* The best-scored host of a HostPriorityList (the first of the best, as the scheduler would
 * pick among equals at random), into NODE. A host the answer leaves out scores 0, as in
 * kube-scheduler: when none is listed, FIRST (the first node that passed the filter, or ""). */
static int best_host(const char *body, const char *first, char *node, size_t len)
{
    long best = -1;
    for (const char *p = strstr(body, "{\"Host\":\""); p; p = strstr(p, "{\"Host\":\"")) {
        p += 9;
        const char *q = strchr(p, '"');
        const char *sc = q ? strstr(q, "\"Score\":") : NULL;
        if (!sc)
            break;
        long v = strtol(sc + 8, NULL, 10);
        if (v > best) {
            best = v;
            snprintf(node, len, "%.*s", (int)(q - p), p);
        }
        p = sc;
    }
    if (best < 0 && *first) {
        snprintf(node, len, "%s", first);
        best = 0;
    }
    return best < 0 ? -1 : 0;
}

/* ---- the bind queue ------------------------------------------------------------------- */

struct job {
    char pod[32], node[64];
};

struct queue {
    pthread_mutex_t lock;
    pthread_cond_t work; /* binders wait here for a job (or the end) */
    pthread_cond_t idle; /* the scheduling thread waits here for the last binds */
    struct job *jobs;
    int head, tail, cap;
    bool done;
    int port;
    const char *ca;
    double *lat;       /* per bind, indexed by job number */
    int busy;          /* jobs queued or being bound */
    struct job *retry; /* binds that failed (a node taken by an earlier bind): scheduled again */
    int nretry, retried;
};

static void *binder(void *arg)
{
    struct queue *q = arg;
    struct conn *cp = malloc(sizeof(*cp)), c;
    if (!cp)
        exit(1);
    conn_init(&c, q->port, q->ca);
    char body[256];
    for (;;) {
        pthread_mutex_lock(&q->lock);
        while (q->head == q->tail && !q->done)
            pthread_cond_wait(&q->work, &q->lock);
        if (q->head == q->tail) {
            pthread_mutex_unlock(&q->lock);
            break;
        }
        int i = q->head++;
        struct job j = q->jobs[i];
        pthread_mutex_unlock(&q->lock);
        int n = snprintf(body, sizeof(body),
                         "{\"PodName\":\"%s\",\"PodNamespace\":\"" NS "\",\"PodUID\":\"u-%s\","
                         "\"Node\":\"%s\"}",
                         j.pod, j.pod, j.node);
        double t0 = now_s();
        if (post(&c, "bind", body, (size_t)n))
            exit(1);
        bool ok = strstr(c.out, "\"Error\":\"\"") != NULL;
        q->lat[i] = now_s() - t0;
        pthread_mutex_lock(&q->lock);
        if (!ok) /* kube-scheduler puts the pod back in its queue */
            q->retry[q->nretry++] = j;
        q->busy--;
        pthread_cond_signal(&q->idle);
        pthread_mutex_unlock(&q->lock);
    }
    *cp = c; /* kept open until the server threads' CPU time was read */
    return cp;
}

/* ---- the scheduling cycle --------------------------------------------------------------- */

/* The filter's candidates into T: every node when WINDOW is 0, as kube-scheduler sends them
 * with percentageOfNodesToScore 100 when all nodes passed its own filters; else WINDOW nodes
 * from *START on (wrapping), *START then moved past them, as kube-scheduler's default
 * percentageOfNodesToScore does (it stops looking once it found that many feasible nodes and
 * starts the next pod's search where this one stopped). */
static void node_names(struct text *t, int nodes, int *start, int window)
{
    char buf[32];
    int count = window ? window : nodes;
    t->len = 0;
    puts_(t, "[");
    for (int k = 0; k < count; k++) {
        snprintf(buf, sizeof(buf), "%s\"node-%d\"", k ? "," : "", (*start + k) % nodes);
        puts_(t, buf);
    }
    puts_(t, "]");
    if (window)
        *start = (*start + window) % nodes;
}

/* kube-scheduler's default number of feasible nodes to find among NODES (its
 * numFeasibleNodesToFind with percentageOfNodesToScore unset): 50 % less one point per 125
 * nodes, at least 5 %, at least 100 nodes. */
static int default_window(int nodes)
{
    if (nodes < 100)
        return nodes;
    int pct = 50 - nodes / 125;
    pct = pct < 5 ? 5 : pct;
    int n = nodes * pct / 100;
    return n < 100 ? 100 : n;
}

/* kube-scheduler's side of the serial scheduling cycle, over one connection. */
struct cycle {
    struct conn c;
    struct text names, body, pbody;
    int nodes, window, start;
    int fit;              /* nodes that passed the last filter */
    char first[64];       /* the first of them, or "" */
    size_t filter_answer; /* the last filter answer's length */
};

/* The CPU clocks read around each pod in the probe pass; SRV: the connection's server thread. */
struct split {
    clockid_t srv;
    double srv_f, srv_p, cli;
};

static void cycle_init(struct cycle *cy, int port, const char *ca, int nodes, int window)
{
    memset(cy, 0, sizeof(*cy));
    conn_init(&cy->c, port, ca);
    cy->nodes = nodes;
    cy->window = window;
    if (!window)
        node_names(&cy->names, nodes, &cy->start, 0);
}

static void cycle_free(struct cycle *cy)
{
    conn_free(&cy->c);
    free(cy->names.s);
    free(cy->body.s);
    free(cy->pbody.s);
}

/* One pod's /filter, then /prioritize of the nodes that passed (POD: its JSON), the round
 * trips into *F and *P; the prioritize answer is left in cy->c.out. With SP the CPU clocks are
 * read around them; with KEEP both answers are copied there. */
static void cycle_round(struct cycle *cy, const char *pod, double *f, double *p, struct split *sp,
                        struct canned *keep)
{
    double s0 = sp ? clock_s(sp->srv) : 0, cc0 = sp ? cpu_s(true) : 0;
    if (cy->window)
        node_names(&cy->names, cy->nodes, &cy->start, cy->window);
    args_body(&cy->body, pod, cy->names.s, cy->names.len);
    double a = now_s();
    if (post(&cy->c, "filter", cy->body.s, cy->body.len))
        exit(1);
    double b = now_s(), s1 = sp ? clock_s(sp->srv) : 0;
    size_t plen = 0;
    const char *passed = passed_names(cy->c.out, &plen);
    if (!passed)
        exit(1);
    cy->filter_answer = cy->c.len;
    cy->fit = 0;
    for (size_t k = 0; k < plen; k++) /* node names hold no '"' */
        cy->fit += passed[k] == '"';
    cy->fit /= 2;
    cy->first[0] = '\0';
    if (plen > 4 && passed[1] == '"')
        sscanf(passed + 2, "%63[^\"]", cy->first);
    if (keep) {
        free(keep->filter);
        keep->filter = strdup(cy->c.out);
        keep->flen = cy->c.len;
    }
    args_body(&cy->pbody, pod, passed, plen);
    double b2 = now_s();
    if (post(&cy->c, "prioritize", cy->pbody.s, cy->pbody.len))
        exit(1);
    double e = now_s();
    *f = b - a;
    *p = e - b2;
    if (keep) {
        free(keep->prioritize);
        keep->prioritize = strdup(cy->c.out);
        keep->plen = cy->c.len;
    }
    if (sp) {
        sp->srv_f += s1 - s0;
        sp->srv_p += clock_s(sp->srv) - s1;
        sp->cli += cpu_s(true) - cc0;
    }
}

/* ITERS pods over CY; returns the process's CPU seconds per pod. */
static double cycle_cpu(struct cycle *cy, const char *pod, int iters)
{
    double cpu0 = cpu_s(false), f, p;
    for (int i = 0; i < iters; i++)
        cycle_round(cy, pod, &f, &p, NULL, NULL);
    return (cpu_s(false) - cpu0) / iters;
}

/* The latency rounds over the extender at PORT and the transport floor at FLOOR_PORT (whose
 * handler answers from K), ITERS pods each, the filter's candidates as node_names() with
 * WINDOW; figures printed as extender_NODES_nodes<SFX>_*. */
static void latency(int port, int floor_port, struct canned *k, const char *ca, int nodes,
                    int window, const char *sfx, int iters)
{
    struct cycle cy, fc;
    cycle_init(&cy, port, ca, nodes, window);
    cycle_init(&fc, floor_port, ca, nodes, window);
    char pod[4096];
    pod_text(pod, sizeof(pod), "probe", "10Gi", NULL, NULL);
    double *v = calloc((size_t)iters * 5, sizeof(double)), *fl = v, *pl = v + iters,
           *fp = v + 2 * iters, *fo = v + 3 * iters, *dv = v + 4 * iters, f, p;
    /* One round first on each connection: the TLS handshakes and the request shape's first
     * verdicts, whose answers the floor serves from then on. */
    cycle_round(&cy, pod, &f, &p, NULL, k);
    cycle_round(&fc, pod, &f, &p, NULL, NULL);
    int listed = 0;
    for (const char *h = strstr(cy.c.out, "{\"Host\""); h; h = strstr(h + 1, "{\"Host\""))
        listed++;
    printf("extender_%d_nodes%s_wire_bytes: filter %zu + %zu, prioritize %zu + %zu bytes "
           "(request + answer)\n",
           nodes, sfx, cy.body.len, cy.filter_answer, cy.pbody.len, cy.c.len);
    printf("extender_%d_nodes%s_prioritize_listed: %d of %d nodes (hosts scoring 0 left out)\n",
           nodes, sfx, listed, cy.fit);
    printf("extender_%d_nodes%s_filter_fit: %d of %d nodes\n", nodes, sfx, cy.fit, nodes);
    struct split sp = {.srv = atomic_load(&last_clock)}; /* the thread serving CY */
    /* The round trips with nothing but the extender (or the floor) in the path: each pod over
     * the extender, then over the floor, so that both see the same moment of this machine
     * (whose speed moves from one second to the next). Then the process's CPU per pod, over
     * each alone; then the CPU clocks that split the extender's (the handler's own, around
     * each call on the serving thread; the serving thread's; the client's): reading a
     * thread's CPU clock is a system call here (~3 us), and the handler's two per call would
     * otherwise sit inside the round trip. */
    atomic_store(&probe_handler, false);
    for (int i = 0; i < iters; i++) {
        cycle_round(&cy, pod, &fl[i], &pl[i], NULL, NULL);
        fp[i] = fl[i] + pl[i];
        cycle_round(&fc, pod, &f, &p, NULL, NULL);
        fo[i] = f + p;
        dv[i] = fp[i] - fo[i];
    }
    double cpu = cycle_cpu(&cy, pod, iters), floor_cpu = cycle_cpu(&fc, pod, iters);
    atomic_store(&probe_handler, true);
    long long h0[3] = {handler_ns[0], handler_ns[1], handler_ns[2]};
    for (int i = 0; i < iters; i++)
        cycle_round(&cy, pod, &f, &p, &sp, NULL);
    double hf = (double)(handler_ns[0] - h0[0]) / iters / 1e6,
           hp = (double)(handler_ns[1] - h0[1]) / iters / 1e6;
    printf("extender_%d_nodes%s_filter_p50: %.3f ms\n", nodes, sfx, pct(fl, iters, 0.5));
    printf("extender_%d_nodes%s_filter_p99: %.3f ms\n", nodes, sfx, pct(fl, iters, 0.99));
    printf("extender_%d_nodes%s_prioritize_p50: %.3f ms\n", nodes, sfx, pct(pl, iters, 0.5));
    printf("extender_%d_nodes%s_prioritize_p99: %.3f ms\n", nodes, sfx, pct(pl, iters, 0.99));
    printf("extender_%d_nodes%s_filter_plus_prioritize_p50: %.3f ms\n", nodes, sfx,
           pct(fp, iters, 0.5));
    printf("extender_%d_nodes%s_filter_plus_prioritize_cpu: %.3f ms\n", nodes, sfx, cpu * 1e3);
    printf("extender_%d_nodes%s_transport_floor_p50: %.3f ms\n", nodes, sfx, pct(fo, iters, 0.5));
    printf("extender_%d_nodes%s_transport_floor_cpu: %.3f ms\n", nodes, sfx, floor_cpu * 1e3);
    printf("extender_%d_nodes%s_above_floor_p50: %.3f ms\n", nodes, sfx, pct(dv, iters, 0.5));
    printf("extender_%d_nodes%s_filter_handler_cpu: %.3f ms\n", nodes, sfx, hf);
    printf("extender_%d_nodes%s_prioritize_handler_cpu: %.3f ms\n", nodes, sfx, hp);
    printf("extender_%d_nodes%s_filter_server_cpu: %.3f ms\n", nodes, sfx, sp.srv_f * 1e3 / iters);
    printf("extender_%d_nodes%s_prioritize_server_cpu: %.3f ms\n", nodes, sfx,
           sp.srv_p * 1e3 / iters);
    printf("extender_%d_nodes%s_filter_plus_prioritize_client_cpu: %.3f ms\n", nodes, sfx,
           sp.cli * 1e3 / iters);
    free(v);
    cycle_free(&cy);
    cycle_free(&fc);
}

/* The sustained loop over the extender X at PORT: SUSTAINED pods named PODPFX-<i> through one
 * scheduling thread, their binds handed to BINDERS threads. */
static void sustained_loop(struct tf_extender *x, int port, const char *ca, int nodes, int window,
                           const char *sfx, const char *podpfx, int sustained)
{
    struct cycle cy;
    cycle_init(&cy, port, ca, nodes, window);
    char pod[4096];
    double f, p;
    struct queue q = {.jobs = calloc((size_t)sustained * 2, sizeof(struct job)),
                      .lat = calloc((size_t)sustained * 2, sizeof(double)),
                      .retry = calloc((size_t)sustained, sizeof(struct job)),
                      .port = port,
                      .ca = ca};
    pthread_mutex_init(&q.lock, NULL);
    pthread_cond_init(&q.work, NULL);
    pthread_cond_init(&q.idle, NULL);
    pthread_t th[BINDERS];
    for (int i = 0; i < BINDERS; i++)
        pthread_create(&th[i], NULL, binder, &q);
    int unschedulable = 0, next = 0;
    server_window();
    double s0 = now_s(), sc0 = cpu_s(false), ev0 = tf_extender_events_cpu_s(x);
    long long hs0 = handler_ns[0] + handler_ns[1] + handler_ns[2];
    for (;;) {
        struct job j;
        pthread_mutex_lock(&q.lock);
        while (next == sustained && !q.nretry && q.busy)
            pthread_cond_wait(&q.idle, &q.lock);
        bool retry = q.nretry > 0;
        if (retry) {
            j = q.retry[--q.nretry];
            q.retried++;
        }
        pthread_mutex_unlock(&q.lock);
        if (!retry) {
            if (next == sustained)
                break;
            snprintf(j.pod, sizeof(j.pod), "%s-%d", podpfx, next++);
        }
        pod_text(pod, sizeof(pod), j.pod, "10Gi", NULL, NULL);
        cycle_round(&cy, pod, &f, &p, NULL, NULL);
        if (best_host(cy.c.out, cy.first, j.node, sizeof(j.node))) {
            unschedulable++;
            continue;
        }
        pthread_mutex_lock(&q.lock);
        q.jobs[q.tail++] = j;
        q.busy++;
        pthread_cond_signal(&q.work); /* one binder per job, as a goroutine per bind */
        pthread_mutex_unlock(&q.lock);
    }
    pthread_mutex_lock(&q.lock);
    q.done = true;
    pthread_cond_broadcast(&q.work);
    pthread_mutex_unlock(&q.lock);
    struct conn *bc[BINDERS];
    for (int i = 0; i < BINDERS; i++)
        pthread_join(th[i], (void **)&bc[i]);
    /* The extender's Events are written by its recorder's thread, after the binds answered:
     * the loop ends when they are written too, and their CPU is the extender's. */
    if (!tf_extender_flush_events(x, 30000)) {
        fprintf(stderr, "bench_extender: events not written\n");
        exit(1);
    }
    double wall = now_s() - s0, scpu = cpu_s(false) - sc0,
           xcpu = server_cpu() + tf_extender_events_cpu_s(x) - ev0;
    for (int i = 0; i < BINDERS; i++) {
        conn_free(bc[i]);
        free(bc[i]);
    }
    int bound = q.tail - q.retried;
    printf("extender_%d_nodes%s_bind_p50: %.3f ms\n", nodes, sfx, pct(q.lat, q.tail, 0.5));
    printf("extender_%d_nodes%s_bind_p99: %.3f ms\n", nodes, sfx, pct(q.lat, q.tail, 0.99));
    printf("extender_%d_nodes%s_sustained_pods_per_sec: %.0f pods/s\n", nodes, sfx, bound / wall);
    printf("extender_%d_nodes%s_sustained_cpu_per_pod: %.3f ms\n", nodes, sfx, scpu * 1e3 / bound);
    printf("extender_%d_nodes%s_sustained_handler_cpu_per_pod: %.3f ms\n", nodes, sfx,
           (double)(handler_ns[0] + handler_ns[1] + handler_ns[2] - hs0) / bound / 1e6);
    printf("extender_%d_nodes%s_sustained_extender_cpu_per_pod: %.3f ms\n", nodes, sfx,
           xcpu * 1e3 / bound);
    printf("extender_%d_nodes%s_extender_capacity_pods_per_sec: %.0f pods/s per core\n", nodes, sfx,
           bound / xcpu);
    printf("extender_%d_nodes%s_sustained_bound: %d of %d pods (%d unschedulable, %d binds lost a "
           "race and were scheduled again)\n",
           nodes, sfx, bound, sustained, unschedulable, q.retried);
    printf("extender_%d_nodes%s_allocations_after: %d pods\n", nodes, sfx,
           tf_extender_allocations(x));
    cycle_free(&cy);
    free(q.jobs);
    free(q.lat);
    free(q.retry);
}

static void run(int nodes, int resident, int iters, int sustained)
{
    char err[512];
    pthread_mutex_lock(&server_lock);
    nserver = 0;
    run_gen++;
    pthread_mutex_unlock(&server_lock);
    struct mallinfo2 m0 = mallinfo2();
    /* Servers: the stub API, the extender over HTTPS. */
    struct stub st = {0};
    struct tf_https_opts so = {0};
    struct tf_https *api = tf_https_start(&so, stub_handler, &st, err, sizeof(err));
    struct tf_k8s_config cfg;
    tf_k8s_config_init(&cfg);
    char server[64];
    snprintf(server, sizeof(server), "http://127.0.0.1:%u", tf_https_port(api));
    cfg.server = server;
    struct tf_k8s_client *kc = tf_k8s_client_new(&cfg);
    struct tf_extender *x = tf_extender_new(kc, "default-pool", "dynamic");
    st.x = x;
    const char *ip = "127.0.0.1";
    struct tf_tls_bundle tls;
    if (!api || !kc || !x || tf_tls_generate(NULL, NULL, &ip, 1, 1, &tls, err, sizeof(err))) {
        fprintf(stderr, "bench_extender: setup: %s\n", err);
        exit(1);
    }
    struct tf_https_opts xo = {.cert_pem = tls.cert_pem, .key_pem = tls.key_pem};
    struct tf_https *srv = tf_https_start(&xo, ext_handler, x, err, sizeof(err));
    struct canned canned = {0};
    struct tf_https *floor_srv = tf_https_start(&xo, floor_handler, &canned, err, sizeof(err));
    if (!srv || !floor_srv) {
        fprintf(stderr, "bench_extender: extender server: %s\n", err);
        exit(1);
    }

    /* The inventory and the resident pods. */
    json_object *gpus = json_object_new_array(), *pools = json_object_new_array(),
                *tpls = json_object_new_array(), *quotas = json_object_new_array(),
                *pods = json_object_new_array();
    json_object_array_add(pools, json_tokener_parse("{\"metadata\":{\"name\":\"default-pool\"},"
                                                    "\"spec\":{\"schedulingConfigTemplate\":"
                                                    "\"t\"}}"));
    json_object_array_add(tpls, json_tokener_parse("{\"metadata\":{\"name\":\"t\"},\"spec\":{"
                                                   "\"placement\":{\"mode\":"
                                                   "\"NodeCompactGPULowLoad\"}}}"));
    char buf[4096];
    for (int n = 0; n < nodes; n++) {
        int m = n % 4;
        for (int g = 0; g < 8; g++) {
            snprintf(buf, sizeof(buf),
                     "{\"metadata\":{\"name\":\"gpu-%d\"},\"status\":{\"uuid\":\"GPU-%d\","
                     "\"gpuModel\":\"%s\",\"index\":%d,\"phase\":\"Running\",\"capacity\":{"
                     "\"tflops\":\"%s\",\"vram\":\"%s\"},\"nodeSelector\":{"
                     "\"kubernetes.io/hostname\":\"node-%d\"}}}",
                     n * 8 + g, n * 8 + g, models[m], g, tflops[m], vram[m], n);
            json_object_array_add(gpus, json_tokener_parse(buf));
        }
    }
    /* The inventory, then the resident pods as the pod informer's first list reports them
     * (each read once, by the pod handler), then the state rebuilt from them. */
    tf_extender_load(x, gpus, pools, tpls, quotas, pods);
    json_object_put(gpus);
    json_object_put(pools);
    json_object_put(tpls);
    json_object_put(quotas);
    json_object_put(pods);
    struct tf_informer_handlers ph = tf_extender_pod_handlers(x);
    double ingest = 0;
    for (int i = 0; i < resident; i++) {
        int n = i % nodes, g = (i / nodes) % 8;
        char name[32], node[32], ids[32];
        snprintf(name, sizeof(name), "r-%d", i);
        snprintf(node, sizeof(node), "node-%d", n);
        snprintf(ids, sizeof(ids), "GPU-%d", n * 8 + g);
        pod_text(buf, sizeof(buf), name, "8Gi", node, ids);
        json_object *p = json_tokener_parse(buf);
        double a = now_s();
        ph.on_add(p, ph.arg);
        ingest += now_s() - a;
        json_object_put(p);
    }
    double t0 = now_s(), c0 = cpu_s(true);
    tf_extender_rebuild(x);
    double load = now_s() - t0, load_cpu = cpu_s(true) - c0;
    int held = tf_extender_allocations(x);
    malloc_trim(0);
    struct mallinfo2 m1 = mallinfo2();
    long rss = rss_kib();

    printf("extender_%d_nodes_resident_pods: %d pods\n", nodes, held);
    printf("extender_%d_nodes_pod_ingest: %.2f us/pod\n", nodes, ingest * 1e6 / resident);
    printf("extender_%d_nodes_state_load: %.1f ms\n", nodes, load * 1e3);
    printf("extender_%d_nodes_state_load_cpu: %.1f ms\n", nodes, load_cpu * 1e3);
    for (int pass = 0; pass < 2; pass++) {
        int window = pass ? default_window(nodes) : 0;
        const char *sfx = pass ? "_default_pct" : "";
        if (iters > 0)
            latency(tf_https_port(srv), tf_https_port(floor_srv), &canned, tls.ca_pem, nodes,
                    window, sfx, iters);
        if (sustained > 0)
            sustained_loop(x, tf_https_port(srv), tls.ca_pem, nodes, window, sfx, pass ? "d" : "s",
                           sustained);
    }
    printf("extender_%d_nodes_rss: %.1f MiB\n", nodes, rss / 1024.0);
    double heap = (double)(m1.uordblks + m1.hblkhd) - (double)(m0.uordblks + m0.hblkhd);
    printf("extender_%d_nodes_state_heap: %.1f MiB\n", nodes, heap / 1048576.0);
    printf("extender_%d_nodes_state_heap_per_gpu: %.0f bytes\n", nodes, heap / (nodes * 8.0));

    tf_https_destroy(srv);
    tf_https_destroy(floor_srv);
    free(canned.filter);
    free(canned.prioritize);
    tf_extender_destroy(x);
    tf_https_destroy(api);
    tf_k8s_client_destroy(kc);
    tf_tls_bundle_free(&tls);
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 300;
    int sustained = argc > 2 ? atoi(argv[2]) : 2000;
    int only = argc > 3 ? atoi(argv[3]) : 0;
    tf_log_set_level(TF_LOG_WARN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    loadavg("before");
    printf("extender_machine_loopback_rtt_p50: %.1f us\n", loopback_rtt_us(2000));
    machine_idle();
    if (only != 5000)
        run(1000, 20000, iters, sustained);
    if (only != 1000)
        run(5000, 100000, iters, sustained);
    loadavg("after");
    curl_global_cleanup();
    return 0;
}
