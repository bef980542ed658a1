/* SPDX-License-Identifier: Apache-2.0
 *
 * The scheduler extender on the core allocator, with its inventory in the in-memory API
 * server: filter reasons, prioritize scores, bind writing gpu-ids/container-gpus and the
 * Binding, rollback when the Binding fails, many concurrent binds never over-allocating,
 * allocations rebuilt from pod annotations after a restart, release on delete; QoS preemption
 * (a critical pod that fits nowhere evicts the fewest lower-QoS pods, once); the autoscaler's
 * resize and room, and the cluster the planners build the extender's way; gang scheduling (no
 * member bound before the quorum holds GPUs, a timeout releases them).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/yamljson.h"
#include "controller/allocsig.h"
#include "controller/extender.h"
#include "controller/k8s/informer.h"
#include "core/autoscale.h"
#include "core/cluster.h"
#include "ext_rig.h"
#include "harness.h"

static int setup(void **state)
{
    return rig_inventory();
}

static int teardown(void **state)
{
    fake_stop(&fake);
    return 0;
}

static void filter_returns_allocator_reasons_for_nodes_that_do_not_fit(void **state)
{
    struct rig r;
    rig_up(&r);
    pod("small", "40Gi", NULL);
    pod("huge", "100Gi", NULL);
    char *args = args_for("small", "[\"node-a\",\"node-b\",\"cpu-node\"]");
    json_object *o = call(&r, "filter", args);
    free(args);
    json_object *ok = tf_json_path(o, "NodeNames", NULL);
    assert_int_equal(json_object_array_length(ok), 2);
    const char *why = tf_json_str(o, "FailedNodes", "cpu-node", NULL);
    assert_non_null(why);
    assert_non_null(strstr(why, "no TensorFusion GPUs"));
    json_object_put(o);
    args = args_for("huge", "[\"node-a\",\"node-b\"]");
    o = call(&r, "filter", args);
    free(args);
    assert_int_equal(json_object_array_length(tf_json_path(o, "NodeNames", NULL)), 0);
    why = tf_json_str(o, "FailedNodes", "node-a", NULL);
    assert_non_null(why);
    if (!strstr(why, "VRAM") && !strstr(why, "vram"))
        fail_msg("reason lacks VRAM: %s", why);
    /* The key names the node; the reason does not repeat it, so that kube-scheduler's
     * FailedScheduling event counts equal reasons of different nodes together. */
    assert_null(strstr(why, "node-a"));
    assert_string_equal(why, tf_json_str(o, "FailedNodes", "node-b", NULL));
    json_object_put(o);
    /* Both nodes are idle: under CompactFirst they score 0 and are left out of the answer
     * (kube-scheduler counts a host it was not given as 0). */
    args = args_for("small", "[\"node-a\",\"node-b\"]");
    o = call(&r, "prioritize", args);
    assert_int_equal(json_object_array_length(o), 0);
    json_object_put(o);
    /* Once node-b holds a pod it scores 1..10 and is the one listed. */
    pod("filler", "20Gi", NULL);
    assert_string_equal(bind_err(&r, "filler", "node-b"), "");
    o = call(&r, "prioritize", args);
    free(args);
    assert_int_equal(json_object_array_length(o), 1);
    json_object *hp = json_object_array_get_idx(o, 0);
    int s = json_object_get_int(tf_json_path(hp, "Score", NULL));
    assert_true(s >= 1 && s <= 10);
    assert_string_equal(tf_json_str(hp, "Host", NULL), "node-b");
    json_object_put(o);
    char err[256];
    assert_int_equal(tf_k8s_delete(fake.client, &tf_k8s_pods, "ml", "filler", err, sizeof(err)), 0);
    rig_down(&r);
}

static void bind_records_gpu_ids_and_binds_then_restart_rebuilds(void **state)
{
    struct rig r;
    rig_up(&r);
    pod("bound-1", "60Gi", NULL);
    assert_string_equal(bind_err(&r, "bound-1", "node-a"), "");
    json_object *p = get_pod("bound-1");
    assert_string_equal(tf_json_str(p, "spec", "nodeName", NULL), "node-a");
    const char *ids = tf_json_str(p, "metadata", "annotations", "tensor-fusion.ai/gpu-ids", NULL);
    assert_non_null(ids);
    assert_non_null(strstr(ids, "GPU-node-a-"));
    json_object *cg =
        jparse(tf_json_str(p, "metadata", "annotations", "tensor-fusion.ai/container-gpus", NULL));
    assert_string_equal(
        json_object_get_string(json_object_array_get_idx(tf_json_path(cg, "app", NULL), 0)), ids);
    json_object_put(cg);
    json_object_put(p);
    assert_int_equal(tf_extender_allocations(r.x), 1);
    assert_true(tf_extender_flush_events(r.x, 10000)); /* written by the recorder's thread */
    assert_true(fake_count_requests(&fake, "POST /api/v1/namespaces/ml/events") >= 1);
    /* A later change of the bound pod's metadata is read again (the ledger's record replaced
     * in place) and changes nothing it holds. */
    char perr[256];
    json_object *lp = jparse("{\"metadata\":{\"labels\":{\"team\":\"a\"}}}");
    assert_int_equal(tf_k8s_merge_patch(fake.client, &tf_k8s_pods, "ml", "bound-1", NULL, lp, NULL,
                                        perr, sizeof(perr)),
                     0);
    json_object_put(lp);
    for (int i = 0; i < 100; i++) {
        json_object *seen = tf_informer_get(r.pods, "ml", "bound-1");
        bool done = tf_json_str(seen, "metadata", "labels", "team", NULL) != NULL;
        json_object_put(seen);
        if (done)
            break;
        usleep(20000);
    }
    rig_down(&r);

    /* A restarted controller sees the allocation on the pod and does not double-book: node-a
     * has one 80Gi GPU left, so one more 60Gi pod fits and a third does not. */
    struct rig r2;
    rig_up(&r2);
    assert_int_equal(tf_extender_allocations(r2.x), 1);
    pod("bound-2", "60Gi", NULL);
    pod("bound-3", "60Gi", NULL);
    assert_string_equal(bind_err(&r2, "bound-2", "node-a"), "");
    const char *e = bind_err(&r2, "bound-3", "node-a");
    assert_non_null(strstr(e, "cannot reserve GPUs on node-a"));
    json_object *p3 = get_pod("bound-3");
    assert_null(tf_json_str(p3, "spec", "nodeName", NULL));
    assert_null(tf_json_str(p3, "metadata", "annotations", "tensor-fusion.ai/gpu-ids", NULL));
    json_object_put(p3);
    /* Deleting a pod gives its GPU back. */
    char err[256];
    assert_int_equal(tf_k8s_delete(fake.client, &tf_k8s_pods, "ml", "bound-1", err, sizeof(err)),
                     0);
    for (int i = 0; i < 200 && tf_extender_allocations(r2.x) != 1; i++)
        usleep(10000);
    assert_int_equal(tf_extender_allocations(r2.x), 1);
    assert_string_equal(bind_err(&r2, "bound-3", "node-a"), "");
    rig_down(&r2);
}

/* While the pod watch is down a pod is bound and deleted: the cache never sees it, so no
 * delete event can release it. Once the informer relists, the unconfirmed bind is checked
 * against the API and its GPUs come back. */
static void a_pod_bound_and_deleted_while_the_watch_was_down_gives_its_gpus_back(void **state)
{
    struct rig r;
    rig_up(&r);
    int before = tf_extender_allocations(r.x);
    fake_control(&fake, "pause", "{}");
    pod("ghost", "10Gi", NULL);
    assert_string_equal(bind_err(&r, "ghost", "node-a"), "");
    assert_int_equal(tf_extender_allocations(r.x), before + 1);
    char err[256];
    assert_int_equal(tf_k8s_delete(fake.client, &tf_k8s_pods, "ml", "ghost", err, sizeof(err)), 0);
    fake_control(&fake, "compact", "{\"closeWatches\": true}");
    for (int i = 0; i < 250 && tf_extender_allocations(r.x) != before; i++)
        usleep(20000);
    assert_int_equal(tf_extender_allocations(r.x), before);
    rig_down(&r);
}

static void failed_binding_rolls_the_reservation_back(void **state)
{
    struct rig r;
    rig_up(&r);
    pod("preb", "70Gi", NULL);
    /* Someone else bound the pod already: the Binding POST answers 409. */
    char err[256];
    assert_int_equal(tf_k8s_bind(fake.client, "ml", "preb", NULL, "node-b", NULL, err, sizeof(err)),
                     0);
    int before = tf_extender_allocations(r.x);
    const char *e = bind_err(&r, "preb", "node-b");
    assert_non_null(strstr(e, "binding to node-b failed"));
    assert_int_equal(tf_extender_allocations(r.x), before);
    json_object *p = get_pod("preb");
    assert_null(tf_json_str(p, "metadata", "annotations", "tensor-fusion.ai/gpu-ids", NULL));
    json_object_put(p);
    rig_down(&r);
}

struct binder {
    struct rig *r;
    char name[32];
    bool ok;
};

static void *bind_thread(void *arg)
{
    struct binder *b = arg;
    char body[256];
    snprintf(body, sizeof(body),
             "{\"PodName\":\"%s\",\"PodNamespace\":\"ml\",\"PodUID\":\"\",\"Node\":\"node-b\"}",
             b->name);
    struct tf_http_req req = {"POST", "/scheduler/bind", body, strlen(body), NULL};
    struct tf_http_resp resp = {.status = 200};
    tf_extender_handle(b->r->x, &req, &resp);
    b->ok = resp.body && strstr(resp.body, "\"Error\":\"\"") != NULL;
    free(resp.body);
    return NULL;
}

static void concurrent_binds_never_over_allocate(void **state)
{
    struct rig r;
    rig_up(&r);
    /* node-b: two 80Gi GPUs, one maybe taken by the rollback test's external bind (no
     * allocation recorded there). 50Gi pods: at most one per GPU. */
    enum { N = 8 };
    struct binder b[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        b[i].r = &r;
        snprintf(b[i].name, sizeof(b[i].name), "race-%d", i);
        pod(b[i].name, "50Gi", NULL);
    }
    int before = tf_extender_allocations(r.x);
    for (int i = 0; i < N; i++)
        pthread_create(&t[i], NULL, bind_thread, &b[i]);
    int won = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        won += b[i].ok;
    }
    assert_int_equal(won, 2);
    assert_int_equal(tf_extender_allocations(r.x), before + 2);
    rig_down(&r);
}

static void unmanaged_pods_pass_every_node(void **state)
{
    struct rig r;
    rig_up(&r);
    create(&tf_k8s_pods, "ml",
           "{\"metadata\":{\"name\":\"plain\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}");
    char *args = args_for("plain", "[\"node-a\",\"cpu-node\"]");
    json_object *o = call(&r, "filter", args);
    free(args);
    assert_int_equal(json_object_array_length(tf_json_path(o, "NodeNames", NULL)), 2);
    json_object_put(o);
    assert_string_equal(bind_err(&r, "plain", "cpu-node"), "");
    rig_down(&r);
}

/* Waits until the rig's GPU informer has seen NAME's status (the watch event may lag). */
static void wait_gpu_status(struct rig *r, const char *name)
{
    for (int i = 0; i < 1000; i++) {
        json_object *g = tf_informer_get(r->gpus, NULL, name);
        bool ready = g && tf_json_str(g, "status", "uuid", NULL);
        json_object_put(g);
        if (ready)
            return;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fail_msg("GPU %s never reached the informer", name);
}

/* A pod of pool qos-pool with QOS (the extra annotations come last and win over pod()'s). */
/* A pod that splits its GPUs per container gets each container's own list in
 * gpu-ids-<container> (what the webhook points its NVIDIA_VISIBLE_DEVICES at), consistent with
 * container-gpus; a failed Binding removes them with the rest. */
static void split_pod_bind_records_each_containers_gpus(void **state)
{
    struct rig r;
    rig_up(&r);
    for (int i = 0; i < 4; i++)
        gpu("node-s", i, "80Gi");
    wait_gpu_status(&r, "node-s-gpu-3");
    const char *split = ",\"tensor-fusion.ai/gpu-count\":\"2\",\"tensor-fusion.ai/"
                        "container-gpu-count\":\"{\\\"app\\\":1,\\\"side\\\":1}\","
                        "\"tensor-fusion.ai/inject-container\":\"app,side\"";
    pod("split-1", "10Gi", split);
    assert_string_equal(bind_err(&r, "split-1", "node-s"), "");
    json_object *p = get_pod("split-1");
    const char *ids = tf_json_str(p, "metadata", "annotations", "tensor-fusion.ai/gpu-ids", NULL);
    const char *a = tf_json_str(p, "metadata", "annotations", "tensor-fusion.ai/gpu-ids-app", NULL);
    const char *b =
        tf_json_str(p, "metadata", "annotations", "tensor-fusion.ai/gpu-ids-side", NULL);
    assert_non_null(ids);
    assert_non_null(a);
    assert_non_null(b);
    assert_null(strchr(a, ','));
    assert_null(strchr(b, ','));
    assert_string_not_equal(a, b);
    char both[256], ga[128], gb[128];
    snprintf(both, sizeof(both), "%s,%s", a, b);
    assert_string_equal(both, ids);
    snprintf(ga, sizeof(ga), "%s", a);
    snprintf(gb, sizeof(gb), "%s", b);
    json_object *cg =
        jparse(tf_json_str(p, "metadata", "annotations", "tensor-fusion.ai/container-gpus", NULL));
    assert_string_equal(
        json_object_get_string(json_object_array_get_idx(tf_json_path(cg, "side", NULL), 0)), b);
    json_object_put(cg);
    json_object_put(p);
    /* Not split: no per-container annotation. */
    pod("whole-1", "10Gi", NULL);
    assert_string_equal(bind_err(&r, "whole-1", "node-s"), "");
    p = get_pod("whole-1");
    assert_null(tf_json_str(p, "metadata", "annotations", "tensor-fusion.ai/gpu-ids-app", NULL));
    json_object_put(p);
    /* The Binding fails: every annotation the bind wrote is gone again. */
    pod("split-2", "10Gi", split);
    char err[256];
    assert_int_equal(
        tf_k8s_bind(fake.client, "ml", "split-2", NULL, "node-s", NULL, err, sizeof(err)), 0);
    assert_non_null(strstr(bind_err(&r, "split-2", "node-s"), "binding to node-s failed"));
    p = get_pod("split-2");
    json_object *anns = tf_json_path(p, "metadata", "annotations", NULL);
    assert_null(tf_json_str(anns, "tensor-fusion.ai/gpu-ids", NULL));
    assert_null(tf_json_str(anns, "tensor-fusion.ai/gpu-ids-app", NULL));
    assert_null(tf_json_str(anns, "tensor-fusion.ai/gpu-ids-side", NULL));
    assert_null(tf_json_str(anns, "tensor-fusion.ai/container-gpus", NULL));
    json_object_put(p);
    rig_down(&r);
    /* A restarted controller restores the split pod on both its GPUs (from the pod ledger). */
    struct rig r2;
    rig_up(&r2);
    const char *gs[] = {ga, gb};
    for (int i = 0; i < 2; i++) {
        int64_t t, v;
        uint32_t n;
        assert_int_equal(tf_extender_gpu_usage(r2.x, gs[i], &t, &v, &n), 0);
        assert_true(n >= 1 && v >= 10 * (INT64_C(1) << 30));
    }
    char cerr[256];
    assert_int_equal(tf_extender_check(r2.x, cerr, sizeof(cerr)), 0);
    rig_down(&r2);
}

static void qos_pod(const char *name, const char *qos)
{
    char extra[256];
    snprintf(extra, sizeof(extra),
             ",\"tensor-fusion.ai/gpupool\":\"qos-pool\",\"tensor-fusion.ai/qos\":\"%s\"", qos);
    pod(name, "60Gi", extra);
}

static json_object *filter_q(struct rig *r, const char *name)
{
    char *args = args_for(name, "[\"node-q1\",\"node-q2\"]");
    json_object *o = call(r, "filter", args);
    free(args);
    return o;
}

static void critical_pod_preempts_the_fewest_lower_qos_pods_once(void **state)
{
    /* Pool qos-pool: one 80Gi GPU on each of two nodes, a 60Gi low pod on one, a 60Gi medium
     * pod on the other. */
    create(&tf_k8s_gpupools, NULL,
           "{\"metadata\":{\"name\":\"qos-pool\"},\"spec\":{\"schedulingConfigTemplate\":"
           "\"tpl\"}}");
    for (int i = 1; i <= 2; i++) {
        char node[16], name[32], buf[256], err[256];
        snprintf(node, sizeof(node), "node-q%d", i);
        gpu(node, 0, "80Gi");
        snprintf(name, sizeof(name), "%s-gpu-0", node);
        json_object *p = jparse("{\"metadata\":{\"labels\":{\"tensor-fusion.ai/gpupool\":"
                                "\"qos-pool\"}}}");
        snprintf(buf, sizeof(buf), "%s", name);
        if (tf_k8s_merge_patch(fake.client, &tf_k8s_gpus, NULL, buf, NULL, p, NULL, err,
                               sizeof(err)))
            fail_msg("gpu label: %s", err);
        json_object_put(p);
    }
    struct rig r;
    rig_up(&r);
    qos_pod("q-low", "low");
    qos_pod("q-med", "medium");
    assert_string_equal(bind_err(&r, "q-low", "node-q1"), "");
    assert_string_equal(bind_err(&r, "q-med", "node-q2"), "");
    int evictions = fake_count_requests(&fake, "/eviction");

    /* Medium may not preempt: it just does not fit. */
    qos_pod("q-med2", "medium");
    json_object *o = filter_q(&r, "q-med2");
    assert_int_equal(json_object_array_length(tf_json_path(o, "NodeNames", NULL)), 0);
    assert_null(strstr(tf_json_str(o, "FailedNodes", "node-q1", NULL), "preempting"));
    json_object_put(o);
    assert_int_equal(fake_count_requests(&fake, "/eviction"), evictions);

    /* Critical: the low pod goes (one victim beats none possible elsewhere; low before medium). */
    qos_pod("q-crit", "critical");
    o = filter_q(&r, "q-crit");
    assert_int_equal(json_object_array_length(tf_json_path(o, "NodeNames", NULL)), 0);
    const char *why = tf_json_str(o, "FailedNodes", "node-q1", NULL);
    if (!why || !strstr(why, "preempting 1 lower-QoS pod on this node") || !strstr(why, "ml/q-low"))
        fail_msg("node-q1: %s", why ? why : "(none)");
    assert_null(strstr(tf_json_str(o, "FailedNodes", "node-q2", NULL), "preempting"));
    json_object_put(o);
    assert_int_equal(fake_count_requests(&fake, "POST /api/v1/namespaces/ml/pods/q-low/eviction"),
                     1);
    assert_int_equal(fake_count_requests(&fake, "/eviction"), evictions + 1);
    json_object *gone = NULL;
    char err[256];
    assert_int_equal(tf_k8s_get(fake.client, &tf_k8s_pods, "ml", "q-low", &gone, err, sizeof(err)),
                     TF_ENOENT);
    /* Once the cache has seen the victim go, the critical pod fits there; nothing more is
     * evicted meanwhile, however often the scheduler asks. */
    bool fits = false;
    for (int i = 0; i < 200 && !fits; i++) {
        o = filter_q(&r, "q-crit");
        json_object *ok = tf_json_path(o, "NodeNames", NULL);
        fits = json_object_array_length(ok) == 1 &&
               strcmp(json_object_get_string(json_object_array_get_idx(ok, 0)), "node-q1") == 0;
        json_object_put(o);
        if (!fits)
            usleep(10000);
    }
    assert_true(fits);
    assert_int_equal(fake_count_requests(&fake, "/eviction"), evictions + 1);
    assert_string_equal(bind_err(&r, "q-crit", "node-q1"), "");
    rig_down(&r);
}

static void autoscaler_resize_moves_the_reservation_within_the_gpus_room(void **state)
{
    struct rig r;
    rig_up(&r);
    gpu("node-c", 0, "80Gi");
    wait_gpu_status(&r, "node-c-gpu-0");
    tf_extender_invalidate(r.x);
    pod("resize-me", "40Gi", NULL);
    pod("neighbour", "20Gi", NULL);
    assert_string_equal(bind_err(&r, "resize-me", "node-c"), "");
    int64_t t = 0, v = 0;
    assert_int_equal(tf_extender_room(r.x, "ml", "resize-me", &t, &v), 0);
    assert_int_equal(t, 312000); /* 312 TFLOPS: all free but its own 50 */
    assert_int_equal(v, (int64_t)80 << 30);
    char err[512];
    /* Growing to 70Gi leaves 10Gi: the 20Gi neighbour no longer fits. */
    assert_int_equal(tf_extender_resize(r.x, "ml", "resize-me",
                                        &(struct tf_autoscale_resources){
                                            30000, 0, (int64_t)70 << 30, (int64_t)70 << 30, 0, 0},
                                        err, sizeof(err)),
                     0);
    assert_int_equal(tf_extender_room(r.x, "ml", "resize-me", &t, &v), 0);
    assert_int_equal(v, (int64_t)80 << 30);
    assert_non_null(strstr(bind_err(&r, "neighbour", "node-c"), "cannot reserve GPUs"));
    /* More than the GPU has is refused, all or nothing. */
    assert_int_equal(tf_extender_resize(r.x, "ml", "resize-me",
                                        &(struct tf_autoscale_resources){0, 0, (int64_t)90 << 30,
                                                                         (int64_t)90 << 30, 0, 0},
                                        err, sizeof(err)),
                     TF_ENOSPC);
    /* Shrinking makes room again. */
    assert_int_equal(tf_extender_resize(r.x, "ml", "resize-me",
                                        &(struct tf_autoscale_resources){0, 0, (int64_t)20 << 30,
                                                                         (int64_t)20 << 30, 0, 0},
                                        err, sizeof(err)),
                     0);
    assert_string_equal(bind_err(&r, "neighbour", "node-c"), "");
    assert_int_equal(tf_extender_room(r.x, "ml", "nobody", &t, &v), TF_ENOENT);
    assert_int_equal(tf_extender_resize(r.x, "ml", "nobody",
                                        &(struct tf_autoscale_resources){1000, 0, 0, 0, 0, 0}, err,
                                        sizeof(err)),
                     TF_ENOENT);
    rig_down(&r);
}

static void planners_get_the_extenders_cluster_without_allocations(void **state)
{
    struct rig r;
    rig_up(&r);
    json_object *gpus = jparse(
        "[{\"metadata\":{\"name\":\"g0\",\"labels\":{\"tensor-fusion.ai/gpupool\":\"p1\"}},"
        "\"status\":{\"uuid\":\"GPU-x-0\",\"gpuModel\":\"A100-80GB\",\"index\":0,\"capacity\":{"
        "\"tflops\":\"312\",\"vram\":\"80Gi\"},\"nodeSelector\":{\"kubernetes.io/hostname\":"
        "\"x\"}}}]");
    json_object *pools = jparse("[{\"metadata\":{\"name\":\"p1\"},\"spec\":{"
                                "\"schedulingConfigTemplate\":\"t1\"}}]");
    json_object *tpls = jparse("[{\"metadata\":{\"name\":\"t1\"},\"spec\":{\"placement\":{"
                               "\"mode\":\"LowLoadFirst\"}}}]");
    struct tf_cluster *c = NULL;
    assert_int_equal(tf_extender_build_cluster(r.x, gpus, pools, tpls, &c), 0);
    uint32_t p1 = tf_cluster_pool_find(c, "p1");
    assert_int_not_equal(p1, TF_NONE);
    assert_int_not_equal(tf_cluster_pool_find(c, "default-pool"), TF_NONE);
    assert_int_equal(c->pools[p1].nnodes, 1);
    assert_int_equal(c->pools[p1].cfg.placement, TF_PLACE_LOW_LOAD_FIRST);
    assert_int_equal(c->gpus[0].avail_vram, (int64_t)80 << 30);
    tf_cluster_destroy(c);
    json_object_put(gpus);
    json_object_put(pools);
    json_object_put(tpls);
    rig_down(&r);
}

/* ---- gang scheduling ---------------------------------------------------------------------- */

/* A gang pod as the webhook leaves it: group ml/GROUP of REQUIRED members. */
static void gang_pod(const char *name, const char *group, int required, const char *timeout)
{
    char ann[512];
    snprintf(ann, sizeof(ann),
             ",\"tensor-fusion.ai/gang-enabled\":\"true\","
             "\"tensor-fusion.ai/gang-group-key\":\"ml/%s\","
             "\"tensor-fusion.ai/gang-required-members\":\"%d\","
             "\"tensor-fusion.ai/gang-desired-members\":\"%d\"%s%s%s",
             group, required, required, timeout ? ",\"tensor-fusion.ai/gang-timeout\":\"" : "",
             timeout ? timeout : "", timeout ? "\"" : "");
    pod(name, "70Gi", ann);
}

static bool bound(const char *name)
{
    json_object *p = get_pod(name);
    bool b = tf_json_str(p, "spec", "nodeName", NULL) != NULL;
    json_object_put(p);
    return b;
}

static void gang_members_are_bound_all_together_once_the_quorum_holds_gpus(void **state)
{
    gpu("node-g", 0, "80Gi");
    gpu("node-g", 1, "80Gi");
    gpu("node-g", 2, "80Gi");
    struct rig r;
    rig_up(&r);
    int before = tf_extender_allocations(r.x);
    gang_pod("g-1", "train", 3, NULL);
    gang_pod("g-2", "train", 3, NULL);
    gang_pod("g-3", "train", 3, NULL);
    const char *e = bind_err(&r, "g-1", "node-g");
    assert_non_null(strstr(e, "waiting for gang ml/train: 1/3"));
    e = bind_err(&r, "g-2", "node-g");
    assert_non_null(strstr(e, "2/3"));
    /* Reserved, not bound: the GPUs are held for the gang. */
    assert_int_equal(tf_extender_allocations(r.x), before + 2);
    assert_false(bound("g-1"));
    assert_false(bound("g-2"));
    assert_string_equal(bind_err(&r, "g-3", "node-g"), "");
    for (int i = 1; i <= 3; i++) {
        char name[16];
        snprintf(name, sizeof(name), "g-%d", i);
        json_object *p = get_pod(name);
        assert_string_equal(tf_json_str(p, "spec", "nodeName", NULL), "node-g");
        assert_non_null(
            tf_json_str(p, "metadata", "annotations", "tensor-fusion.ai/gpu-ids", NULL));
        json_object_put(p);
    }
    assert_int_equal(tf_extender_allocations(r.x), before + 3);
    rig_down(&r);
}

static void no_gang_member_is_bound_while_the_quorum_does_not_fit(void **state)
{
    gpu("node-h", 0, "80Gi");
    gpu("node-h", 1, "80Gi");
    struct rig r;
    rig_up(&r);
    gang_pod("h-1", "big", 3, NULL);
    gang_pod("h-2", "big", 3, NULL);
    gang_pod("h-3", "big", 3, NULL);
    assert_non_null(strstr(bind_err(&r, "h-1", "node-h"), "waiting for gang"));
    assert_non_null(strstr(bind_err(&r, "h-2", "node-h"), "waiting for gang"));
    assert_non_null(strstr(bind_err(&r, "h-3", "node-h"), "cannot reserve GPUs"));
    assert_false(bound("h-1"));
    assert_false(bound("h-2"));
    assert_false(bound("h-3"));
    rig_down(&r);
}

static void a_gang_timeout_releases_the_held_gpus_and_backs_the_group_off(void **state)
{
    gpu("node-t", 0, "80Gi");
    gpu("node-t", 1, "80Gi");
    struct rig r;
    rig_up(&r);
    int before = tf_extender_allocations(r.x);
    gang_pod("t-1", "late", 3, "300ms");
    gang_pod("t-2", "late", 3, "300ms");
    gang_pod("t-3", "late", 3, "300ms");
    assert_non_null(strstr(bind_err(&r, "t-1", "node-t"), "waiting for gang"));
    assert_non_null(strstr(bind_err(&r, "t-2", "node-t"), "waiting for gang"));
    assert_int_equal(tf_extender_allocations(r.x), before + 2);
    tf_extender_gang_expire(r.x); /* not yet */
    assert_int_equal(tf_extender_allocations(r.x), before + 2);
    usleep(450 * 1000);
    tf_extender_gang_expire(r.x);
    assert_int_equal(tf_extender_allocations(r.x), before);
    assert_true(tf_extender_flush_events(r.x, 10000));
    assert_true(fake_count_requests(&fake, "POST /api/v1/namespaces/ml/events") >= 2);
    /* Backed off for a while: the third member does not restart the wait. */
    assert_non_null(strstr(bind_err(&r, "t-3", "node-t"), "backed off"));
    assert_int_equal(tf_extender_allocations(r.x), before);
    assert_false(bound("t-1"));
    assert_false(bound("t-3"));
    rig_down(&r);
}

static void wait_pod(struct rig *r, const char *name)
{
    for (int i = 0; i < 1000; i++) {
        json_object *p = tf_informer_get(r->pods, "ml", name);
        json_object_put(p);
        if (p)
            return;
        usleep(10000);
    }
    fail_msg("pod %s never reached the informer", name);
}

/* A pod that is already on NODE with the allocation annotations ANNS (JSON members). */
static void pod_on_node(const char *name, const char *node, const char *anns)
{
    char buf[2048];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
             "\"tensor-fusion.ai/enabled\":\"true\",\"tensor-fusion.ai/component\":\"client\"},"
             "\"annotations\":{\"tensor-fusion.ai/gpupool\":\"default-pool\","
             "\"tensor-fusion.ai/isolation\":\"soft\",\"tensor-fusion.ai/tflops-request\":\"50\","
             "\"tensor-fusion.ai/vram-request\":\"80Gi\",\"tensor-fusion.ai/vram-limit\":\"80Gi\""
             ",%s}},\"spec\":{\"nodeName\":\"%s\",\"schedulerName\":\"tensor-fusion-scheduler\","
             "\"containers\":[{\"name\":\"app\",\"image\":\"x\"}]}}",
             name, anns, node);
    create(&tf_k8s_pods, "ml", buf);
}

/* The attack: a pod arrives on a node already holding tensor-fusion.ai/gpu-ids (the webhook
 * bypassed, or a pod from before its guard), with a made-up signature or one copied from a
 * real allocation. The extender books none of it, so the GPU stays free for pods it places
 * itself, and after a restart it restores exactly the allocations it signed. */
static void pod_bringing_its_own_gpu_ids_books_nothing(void **state)
{
    gpu("node-z", 0, "80Gi");
    struct tf_allocsig sig;
    assert_int_equal(tf_allocsig_init(&sig, "0123456789abcdef0123456789abcdef", 32), 0);
    struct rig r;
    rig_up(&r);
    wait_gpu_status(&r, "node-z-gpu-0");
    tf_extender_set_allocsig(r.x, &sig);
    int before = tf_extender_allocations(r.x);
    pod_on_node("squat", "node-z",
                "\"tensor-fusion.ai/gpu-ids\":\"GPU-node-z-0\",\"tensor-fusion.ai/"
                "allocation-signature\":\"v1:0000000000000000000000000000000000000000000000000000"
                "000000000000\"");
    wait_pod(&r, "squat");
    tf_extender_invalidate(r.x);
    assert_int_equal(tf_extender_allocations(r.x), before);

    /* The GPU it claims is free: a pod the extender places itself gets it, signed. */
    pod("honest", "80Gi", NULL);
    wait_pod(&r, "honest");
    assert_string_equal(bind_err(&r, "honest", "node-z"), "");
    json_object *h = get_pod("honest");
    const char *hsig = tf_json_str(h, "metadata", "annotations", TF_ANN_ALLOCATION_SIGNATURE, NULL);
    assert_non_null(hsig);
    assert_true(tf_allocsig_verify(&sig, h));
    char anns[512];
    snprintf(anns, sizeof(anns),
             "\"tensor-fusion.ai/gpu-ids\":\"GPU-node-z-0\",\"tensor-fusion.ai/"
             "allocation-signature\":\"%s\"",
             hsig);
    /* A copy of the real allocation onto another pod. */
    pod_on_node("copycat", "node-z", anns);
    json_object_put(h);
    wait_pod(&r, "copycat");
    rig_down(&r);

    struct rig r2;
    rig_up(&r2);
    tf_extender_set_allocsig(r2.x, &sig);
    assert_int_equal(tf_extender_allocations(r2.x), before + 1);
    rig_down(&r2);
}

/* Nodes among NODES (JSON array) the filter passes for pod NAME, as "a,b". */
static void filter_names(struct rig *r, const char *name, const char *nodes, char *out, size_t cap)
{
    char *args = args_for(name, nodes);
    json_object *o = call(r, "filter", args);
    free(args);
    json_object *ok = tf_json_path(o, "NodeNames", NULL);
    out[0] = 0;
    for (size_t i = 0; ok && i < json_object_array_length(ok); i++)
        snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? "," : "",
                 json_object_get_string(json_object_array_get_idx(ok, i)));
    json_object_put(o);
}

/* Users' gpu-model annotations name upstream's boards (A100_SXM_80G, H100_SXM), the names GPU
 * objects carry (our node agent writes them as upstream's does); a family (H100) or our
 * former canonical name (A100-80GB) names them too. */
static void gpu_model_annotations_match_upstreams_board_names(void **state)
{
    gpu_of("node-h100", 0, "80Gi", "H100_SXM");
    gpu_of("node-old", 0, "80Gi", "A100-80GB"); /* an object written by a former agent */
    struct rig r;
    rig_up(&r);
    wait_gpu_status(&r, "node-h100-gpu-0");
    wait_gpu_status(&r, "node-old-gpu-0");
    static const struct {
        const char *pod, *model, *want;
    } cases[] = {
        {"want-h100-sxm", "H100_SXM", "node-h100"},
        {"want-h100", "H100", "node-h100"},
        {"want-a100-sxm", "A100_SXM_80G", "node-a,node-old"},
        {"want-a100-former", "A100-80GB", "node-a,node-old"},
        {"want-l4", "L4", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char ann[128], got[256];
        snprintf(ann, sizeof(ann), ",\"tensor-fusion.ai/gpu-model\":\"%s\"", cases[i].model);
        pod(cases[i].pod, "10Gi", ann);
        wait_pod(&r, cases[i].pod);
        filter_names(&r, cases[i].pod, "[\"node-a\",\"node-h100\",\"node-old\"]", got, sizeof(got));
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("gpu-model %s: filter passed [%s], want [%s]", cases[i].model, got,
                     cases[i].want);
    }
    /* and binding puts the pod on the board it named */
    assert_string_equal(bind_err(&r, "want-h100-sxm", "node-h100"), "");
    json_object *p = get_pod("want-h100-sxm");
    assert_string_equal(tf_json_str(p, "metadata", "annotations", "tensor-fusion.ai/gpu-ids", NULL),
                        "GPU-node-h100-0");
    json_object_put(p);
    rig_down(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(filter_returns_allocator_reasons_for_nodes_that_do_not_fit),
        cmocka_unit_test(bind_records_gpu_ids_and_binds_then_restart_rebuilds),
        cmocka_unit_test(failed_binding_rolls_the_reservation_back),
        cmocka_unit_test(a_pod_bound_and_deleted_while_the_watch_was_down_gives_its_gpus_back),
        cmocka_unit_test(split_pod_bind_records_each_containers_gpus),
        cmocka_unit_test(concurrent_binds_never_over_allocate),
        cmocka_unit_test(unmanaged_pods_pass_every_node),
        cmocka_unit_test(critical_pod_preempts_the_fewest_lower_qos_pods_once),
        cmocka_unit_test(autoscaler_resize_moves_the_reservation_within_the_gpus_room),
        cmocka_unit_test(planners_get_the_extenders_cluster_without_allocations),
        cmocka_unit_test(gang_members_are_bound_all_together_once_the_quorum_holds_gpus),
        cmocka_unit_test(no_gang_member_is_bound_while_the_quorum_does_not_fit),
        cmocka_unit_test(a_gang_timeout_releases_the_held_gpus_and_backs_the_group_off),
        cmocka_unit_test(pod_bringing_its_own_gpu_ids_books_nothing),
        cmocka_unit_test(gpu_model_annotations_match_upstreams_board_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
