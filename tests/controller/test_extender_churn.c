/* SPDX-License-Identifier: Apache-2.0
 *
 * Churn without drift: against the in-memory API server, pods are created and deleted as fast
 * as it takes them while three scheduler threads filter and bind them concurrently through the
 * extender, the watches are cut twice (once while their history moved on, so the informers
 * relist), and the controller is restarted in the middle (extender and informers torn down
 * and built again from the API). Afterwards every GPU's reservation in the extender must equal
 * the sum of the requests of the live pods the API says hold it, and no GPU may hold more than
 * its capacity: nothing lost, nothing double-booked. Bounded: about 5 seconds of churn (plus
 * the restart).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/yamljson.h"
#include "controller/extender.h"
#include "controller/k8s/informer.h"
#include "ext_rig.h"
#include "harness.h"

#define NODES 6
#define GPUS_PER_NODE 4
#define GPU_VRAM_GIB 80
#define GPU_TFLOPS 312
#define MAXPODS 8192

struct pod {
    char name[24];
    int tflops, vram_gib, gpus;
};

static struct world {
    pthread_rwlock_t rig_lock; /* binders read, the restart writes */
    struct rig rig;
    pthread_mutex_t lock; /* guards everything below */
    struct pod pods[MAXPODS];
    int npods;
    int pending[MAXPODS]; /* created, not yet tried by a binder */
    int npending;
    atomic_bool stop;
    atomic_int created, deleted, bound, refused;
    uint64_t rng;
} w;

/* Failures on the worker threads: cmocka's fail_msg belongs to the test's own thread. */
#define thread_fail(...)                                                                           \
    do {                                                                                           \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        abort();                                                                                   \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint32_t rnd(uint32_t n)
{
    pthread_mutex_lock(&w.lock);
    w.rng ^= w.rng << 13;
    w.rng ^= w.rng >> 7;
    w.rng ^= w.rng << 17;
    uint32_t v = (uint32_t)(w.rng % n);
    pthread_mutex_unlock(&w.lock);
    return v;
}

/* The pod as the webhook leaves it. */
static void pod_text(char *buf, size_t len, const struct pod *p)
{
    snprintf(buf, len,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
             "\"ml\",\"labels\":{\"tensor-fusion.ai/enabled\":\"true\",\"tensor-fusion.ai/"
             "component\":\"client\"},\"annotations\":{\"tensor-fusion.ai/gpupool\":\"default-"
             "pool\",\"tensor-fusion.ai/isolation\":\"soft\",\"tensor-fusion.ai/tflops-request\":"
             "\"%d\",\"tensor-fusion.ai/tflops-limit\":\"%d\",\"tensor-fusion.ai/vram-request\":"
             "\"%dGi\",\"tensor-fusion.ai/vram-limit\":\"%dGi\",\"tensor-fusion.ai/gpu-count\":"
             "\"%d\",\"tensor-fusion.ai/inject-container\":\"app\"}},\"spec\":{\"schedulerName\":"
             "\"tensor-fusion-scheduler\",\"containers\":[{\"name\":\"app\",\"image\":\"x\"}]}}",
             p->name, p->tflops, p->tflops * 2, p->vram_gib, p->vram_gib, p->gpus);
}

static json_object *call_on(struct tf_extender *x, const char *verb, const char *body)
{
    char path[64];
    snprintf(path, sizeof(path), "/scheduler/%s", verb);
    struct tf_http_req req = {"POST", path, body, strlen(body), NULL};
    struct tf_http_resp resp = {.status = 200};
    if (!tf_extender_handle(x, &req, &resp))
        thread_fail("%s not handled", verb);
    json_object *o = resp.body ? json_tokener_parse(resp.body) : NULL;
    free(resp.body);
    return o;
}

static void *creator(void *arg)
{
    char buf[2048], err[256];
    while (!atomic_load(&w.stop)) {
        pthread_mutex_lock(&w.lock);
        if (w.npods == MAXPODS) {
            pthread_mutex_unlock(&w.lock);
            break;
        }
        int i = w.npods;
        pthread_mutex_unlock(&w.lock);
        struct pod p;
        snprintf(p.name, sizeof(p.name), "c-%d", i);
        p.tflops = 10 + (int)rnd(110);
        p.vram_gib = 2 + (int)rnd(28);
        p.gpus = rnd(10) == 0 ? 2 : 1;
        pod_text(buf, sizeof(buf), &p);
        json_object *o = json_tokener_parse(buf);
        int rc = tf_k8s_create(fake.client, &tf_k8s_pods, "ml", o, NULL, err, sizeof(err));
        json_object_put(o);
        if (rc)
            thread_fail("create %s: %s", p.name, err);
        pthread_mutex_lock(&w.lock);
        w.pods[i] = p;
        w.npods++;
        w.pending[w.npending++] = i;
        pthread_mutex_unlock(&w.lock);
        atomic_fetch_add(&w.created, 1);
    }
    return NULL;
}

static void *deleter(void *arg)
{
    char err[256];
    while (!atomic_load(&w.stop)) {
        pthread_mutex_lock(&w.lock);
        int n = w.npods;
        pthread_mutex_unlock(&w.lock);
        if (n < 20) {
            usleep(2000);
            continue;
        }
        /* Mostly recent pods (bound or being bound), sometimes old ones. */
        int i = rnd(3) ? n - 1 - (int)rnd(20) : (int)rnd((uint32_t)n);
        int rc = tf_k8s_delete(fake.client, &tf_k8s_pods, "ml", w.pods[i].name, err, sizeof(err));
        if (rc == 0)
            atomic_fetch_add(&w.deleted, 1);
        else if (rc != TF_ENOENT)
            thread_fail("delete %s: %s", w.pods[i].name, err);
        usleep(3000);
    }
    return NULL;
}

/* kube-scheduler: filter over every node, bind to one that fits. */
static void *binder(void *arg)
{
    char pod[2048], *body = malloc(8192);
    while (!atomic_load(&w.stop)) {
        pthread_mutex_lock(&w.lock);
        int i = w.npending ? w.pending[--w.npending] : -1;
        pthread_mutex_unlock(&w.lock);
        if (i < 0) {
            usleep(1000);
            continue;
        }
        pod_text(pod, sizeof(pod), &w.pods[i]);
        int n = snprintf(body, 8192, "{\"Pod\":%s,\"Nodes\":null,\"NodeNames\":[", pod);
        for (int k = 0; k < NODES; k++)
            n += snprintf(body + n, 8192 - (size_t)n, "%s\"node-%d\"", k ? "," : "", k);
        snprintf(body + n, 8192 - (size_t)n, "]}");
        pthread_rwlock_rdlock(&w.rig_lock);
        json_object *f = call_on(w.rig.x, "filter", body);
        json_object *ok = tf_json_path(f, "NodeNames", NULL);
        size_t nfit = ok ? json_object_array_length(ok) : 0;
        if (nfit) {
            const char *node =
                json_object_get_string(json_object_array_get_idx(ok, rnd((uint32_t)nfit)));
            snprintf(body, 8192,
                     "{\"PodName\":\"%s\",\"PodNamespace\":\"ml\",\"PodUID\":\"\",\"Node\":\"%s\"}",
                     w.pods[i].name, node);
            json_object *b = call_on(w.rig.x, "bind", body);
            const char *e = tf_json_str(b, "Error", NULL);
            atomic_fetch_add(e && !*e ? &w.bound : &w.refused, 1);
            json_object_put(b);
        }
        pthread_rwlock_unlock(&w.rig_lock);
        json_object_put(f);
    }
    free(body);
    return NULL;
}

/* Per GPU uuid: what the live pods the API holds there request (milli-TFLOPS, bytes). */
struct truth {
    char uuid[NODES * GPUS_PER_NODE][32];
    int64_t t[NODES * GPUS_PER_NODE], v[NODES * GPUS_PER_NODE];
    uint32_t n[NODES * GPUS_PER_NODE];
};

static int add_pod(json_object *pod, void *arg)
{
    struct truth *tr = arg;
    const char *ids = tf_json_str(pod, "metadata", "annotations", "tensor-fusion.ai/gpu-ids", NULL);
    if (!ids || !tf_json_str(pod, "spec", "nodeName", NULL) ||
        tf_json_path(pod, "metadata", "deletionTimestamp", NULL))
        return 0;
    int64_t t = atoll(tf_json_str(pod, "metadata", "annotations", "tensor-fusion.ai/tflops-request",
                                  NULL)) *
                1000;
    int64_t v =
        atoll(tf_json_str(pod, "metadata", "annotations", "tensor-fusion.ai/vram-request", NULL)) *
        (INT64_C(1) << 30);
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", ids);
    for (char *save = NULL, *u = strtok_r(buf, ",", &save); u; u = strtok_r(NULL, ",", &save))
        for (int g = 0; g < NODES * GPUS_PER_NODE; g++)
            if (!strcmp(tr->uuid[g], u)) {
                tr->t[g] += t;
                tr->v[g] += v;
                tr->n[g]++;
            }
    return 0;
}

/* Whether the extender holds exactly what the API says on every GPU; DIFF says where not.
 * *DOUBLE is set when the API's own records book a GPU beyond its capacity. */
static bool matches(struct tf_extender *x, char *diff, size_t len, bool *dbl)
{
    static struct truth tr;
    memset(&tr, 0, sizeof(tr));
    for (int n = 0; n < NODES; n++)
        for (int g = 0; g < GPUS_PER_NODE; g++)
            snprintf(tr.uuid[n * GPUS_PER_NODE + g], sizeof(tr.uuid[0]), "GPU-node-%d-%d", n, g);
    char err[256], *rv = NULL;
    if (tf_k8s_list(fake.client, &tf_k8s_pods, "ml", NULL, NULL, 0, add_pod, &tr, &rv, err,
                    sizeof(err)))
        fail_msg("list pods: %s", err);
    free(rv);
    for (int g = 0; g < NODES * GPUS_PER_NODE; g++) {
        /* Never more than the GPU has, in the API's own records. */
        if (tr.t[g] > (int64_t)GPU_TFLOPS * 1000 || tr.v[g] > (int64_t)GPU_VRAM_GIB << 30)
            fail_msg("GPU %s double-booked in the API: %lld mTFLOPS, %lld B by %u pods", tr.uuid[g],
                     (long long)tr.t[g], (long long)tr.v[g], tr.n[g]);
        int64_t t, v;
        uint32_t n;
        assert_int_equal(tf_extender_gpu_usage(x, tr.uuid[g], &t, &v, &n), 0);
        if (t != tr.t[g] || v != tr.v[g] || n != tr.n[g]) {
            snprintf(diff, len,
                     "GPU %s: extender holds %lld mTFLOPS / %lld B for %u pods, the API's live "
                     "pods %lld / %lld for %u",
                     tr.uuid[g], (long long)t, (long long)v, n, (long long)tr.t[g],
                     (long long)tr.v[g], tr.n[g]);
            return false;
        }
    }
    return true;
}

static int setup(void **state)
{
    if (fake_start(&fake, NULL))
        return -1;
    create(&tf_k8s_namespaces, NULL, "{\"metadata\":{\"name\":\"ml\"}}");
    create(&tf_k8s_gpupools, NULL,
           "{\"metadata\":{\"name\":\"default-pool\"},\"spec\":{\"schedulingConfigTemplate\":"
           "\"tpl\"}}");
    create(&tf_k8s_schedulingconfigtemplates, NULL,
           "{\"metadata\":{\"name\":\"tpl\"},\"spec\":{\"placement\":{\"mode\":"
           "\"NodeCompactGPULowLoad\"}}}");
    char buf[1024], name[64], err[256];
    for (int n = 0; n < NODES; n++)
        for (int g = 0; g < GPUS_PER_NODE; g++) {
            snprintf(name, sizeof(name), "node-%d-gpu-%d", n, g);
            snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"%s\"}}", name);
            create(&tf_k8s_gpus, NULL, buf);
            snprintf(buf, sizeof(buf),
                     "{\"status\":{\"uuid\":\"GPU-node-%d-%d\",\"gpuModel\":\"A100-80GB\","
                     "\"index\":%d,\"phase\":\"Running\",\"capacity\":{\"tflops\":\"%d\","
                     "\"vram\":\"%dGi\"},\"available\":{\"tflops\":\"%d\",\"vram\":\"%dGi\"},"
                     "\"message\":\"\",\"nodeSelector\":{\"kubernetes.io/hostname\":"
                     "\"node-%d\"}}}",
                     n, g, g, GPU_TFLOPS, GPU_VRAM_GIB, GPU_TFLOPS, GPU_VRAM_GIB, n);
            json_object *p = jparse(buf);
            if (tf_k8s_merge_patch(fake.client, &tf_k8s_gpus, NULL, name, "status", p, NULL, err,
                                   sizeof(err)))
                fail_msg("gpu status: %s", err);
            json_object_put(p);
        }
    return 0;
}

static int teardown(void **state)
{
    fake_stop(&fake);
    return 0;
}

static void cut_watches(bool history_gone)
{
    if (history_gone) { /* the watches were down while history moved on: relist */
        fake_control(&fake, "pause", "{}");
        usleep(150000);
    }
    fake_control(&fake, "compact", "{\"closeWatches\": true}");
}

static void
churn_with_binds_watch_cuts_and_a_restart_leaves_every_gpu_holding_its_live_pods(void **state)
{
    memset(&w, 0, sizeof(w));
    w.rng = 0x9e3779b97f4a7c15ull;
    pthread_rwlock_init(&w.rig_lock, NULL);
    pthread_mutex_init(&w.lock, NULL);
    rig_up(&w.rig);
    pthread_t th[6];
    pthread_create(&th[0], NULL, creator, NULL); /* one: pods[] fills in order */
    pthread_create(&th[1], NULL, deleter, NULL);
    pthread_create(&th[2], NULL, deleter, NULL);
    for (int i = 3; i < 6; i++)
        pthread_create(&th[i], NULL, binder, NULL);
    /* The timeline: churn; cut the watches (history gone: relist); restart the controller;
     * one second later cut them again; one more second of churn. */
    double t0 = now_s(), restarted_at = 0;
    bool cut1 = false, cut2 = false;
    uint64_t relists_before_cut2 = 0;
    for (;;) {
        double t = now_s() - t0;
        if (!cut1 && t > 1.2) {
            cut_watches(true);
            cut1 = true;
        } else if (!restarted_at && t > 2.6) { /* controller restart in the middle */
            pthread_rwlock_wrlock(&w.rig_lock);
            rig_down(&w.rig);
            rig_up(&w.rig);
            pthread_rwlock_unlock(&w.rig_lock);
            restarted_at = t = now_s() - t0;
            relists_before_cut2 = tf_informer_relists(w.rig.pods);
        } else if (restarted_at && !cut2 && t > restarted_at + 1.0) {
            cut_watches(true);
            cut_watches(false);
            cut2 = true;
        } else if (cut2 && t > restarted_at + 2.0) {
            break;
        }
        usleep(20000);
    }
    atomic_store(&w.stop, true);
    for (int i = 0; i < 6; i++)
        pthread_join(th[i], NULL);
    /* The informers catch up with everything that happened; then the books must agree. */
    char diff[512] = "";
    bool ok = false, dbl = false;
    for (int i = 0; i < 300 && !ok && !dbl; i++) {
        ok = matches(w.rig.x, diff, sizeof(diff), &dbl);
        if (!ok && !dbl)
            usleep(50000);
    }
    char err[512];
    int check = tf_extender_check(w.rig.x, err, sizeof(err));
    uint64_t relists = tf_informer_relists(w.rig.pods);
    rig_down(&w.rig); /* before any failure: the informers must not outlive the API server */
    print_message("churn: %d pods created, %d deleted, %d bound, %d binds refused, pod relists "
                  "after the restart %llu\n",
                  atomic_load(&w.created), atomic_load(&w.deleted), atomic_load(&w.bound),
                  atomic_load(&w.refused), (unsigned long long)(relists - relists_before_cut2));
    if (check)
        fail_msg("allocator invariants: %s", err);
    if (!ok)
        fail_msg("%s: %s", dbl ? "double-booked" : "drift", diff);
    /* The run exercised what it claims: churn, binds, and a relist after the restart. */
    assert_true(atomic_load(&w.created) >= 100 && atomic_load(&w.deleted) >= 30);
    assert_true(atomic_load(&w.bound) >= 30);
    assert_true(relists > relists_before_cut2);
    pthread_rwlock_destroy(&w.rig_lock);
    pthread_mutex_destroy(&w.lock);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            churn_with_binds_watch_cuts_and_a_restart_leaves_every_gpu_holding_its_live_pods),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
