/* SPDX-License-Identifier: Apache-2.0
 *
 * The Kubernetes API client against the in-memory API server: CRUD, merge/JSON patch with
 * optimistic locking, status, binding, events, paginated lists, watches with bookmarks and
 * 410, retries on 429/5xx, token rotation, in-cluster config and kubeconfig.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/yamljson.h"
#include "controller/base64.h"
#include "controller/k8s/client.h"
#include "controller/k8s/client_int.h"
#include "controller/k8s/informer.h"
#include "harness.h"

static struct fake_api fake;

static int setup(void **state)
{
    if (fake_start(&fake, NULL)) {
        fprintf(stderr, "SKIP: cannot start fake API server\n");
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    fake_stop(&fake);
    return 0;
}

static json_object *pod_json(const char *name, const char *label)
{
    char buf[512];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":{\"app\":\"%s\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
             "\"image\":\"busybox\"}]}}",
             name, label);
    return jparse(buf);
}

static void create_pod(const char *name, const char *label)
{
    char err[256];
    json_object *p = pod_json(name, label);
    assert_int_equal(tf_k8s_create(fake.client, &tf_k8s_pods, "default", p, NULL, err, sizeof(err)),
                     0);
    json_object_put(p);
}

static void controller_creates_reads_patches_and_deletes_a_pod(void **state)
{
    char err[256];
    json_object *out = NULL;
    create_pod("crud", "web");
    assert_int_equal(
        tf_k8s_get(fake.client, &tf_k8s_pods, "default", "crud", &out, err, sizeof(err)), 0);
    assert_string_equal(tf_json_str(out, "metadata", "labels", "app", NULL), "web");
    char rv[32];
    snprintf(rv, sizeof(rv), "%s", tf_json_str(out, "metadata", "resourceVersion", NULL));
    json_object_put(out);

    /* Merge patch carrying the current resourceVersion succeeds; a stale one conflicts. */
    char buf[256];
    snprintf(buf, sizeof(buf),
             "{\"metadata\":{\"resourceVersion\":\"%s\",\"annotations\":"
             "{\"tensor-fusion.ai/gpu-ids\":\"gpu-0\"}}}",
             rv);
    json_object *patch = jparse(buf);
    assert_int_equal(tf_k8s_merge_patch(fake.client, &tf_k8s_pods, "default", "crud", NULL, patch,
                                        &out, err, sizeof(err)),
                     0);
    assert_string_equal(
        tf_json_str(out, "metadata", "annotations", "tensor-fusion.ai/gpu-ids", NULL), "gpu-0");
    json_object_put(out);
    assert_int_equal(tf_k8s_merge_patch(fake.client, &tf_k8s_pods, "default", "crud", NULL, patch,
                                        NULL, err, sizeof(err)),
                     TF_ECONFLICT);
    assert_non_null(strstr(err, "the object has been modified"));
    json_object_put(patch);

    /* JSON patch with ~1 escaping of the annotation key. */
    json_object *ops = jparse("[{\"op\":\"replace\",\"path\":"
                              "\"/metadata/annotations/tensor-fusion.ai~1gpu-ids\","
                              "\"value\":\"gpu-1\"}]");
    assert_int_equal(tf_k8s_json_patch(fake.client, &tf_k8s_pods, "default", "crud", NULL, ops,
                                       &out, err, sizeof(err)),
                     0);
    assert_string_equal(
        tf_json_str(out, "metadata", "annotations", "tensor-fusion.ai/gpu-ids", NULL), "gpu-1");
    json_object_put(out);
    json_object_put(ops);

    /* Status goes through the subresource only. */
    json_object *st = jparse("{\"status\":{\"phase\":\"Running\"}}");
    assert_int_equal(tf_k8s_merge_patch(fake.client, &tf_k8s_pods, "default", "crud", NULL, st,
                                        &out, err, sizeof(err)),
                     0);
    assert_string_equal(tf_json_str(out, "status", "phase", NULL), "Pending");
    json_object_put(out);
    assert_int_equal(tf_k8s_merge_patch(fake.client, &tf_k8s_pods, "default", "crud", "status", st,
                                        &out, err, sizeof(err)),
                     0);
    assert_string_equal(tf_json_str(out, "status", "phase", NULL), "Running");
    json_object_put(out);
    json_object_put(st);

    assert_int_equal(tf_k8s_delete(fake.client, &tf_k8s_pods, "default", "crud", err, sizeof(err)),
                     0);
    assert_int_equal(
        tf_k8s_get(fake.client, &tf_k8s_pods, "default", "crud", &out, err, sizeof(err)),
        TF_ENOENT);
    assert_null(out);
    assert_non_null(strstr(err, "not found"));
}

static void creating_an_existing_object_reports_already_exists(void **state)
{
    char err[256];
    create_pod("dup", "web");
    json_object *p = pod_json("dup", "web");
    assert_int_equal(tf_k8s_create(fake.client, &tf_k8s_pods, "default", p, NULL, err, sizeof(err)),
                     TF_EEXIST);
    json_object_put(p);
}

static int add_label(json_object *obj, void *arg)
{
    int *calls = arg;
    (*calls)++;
    json_object *labels = tf_json_path(obj, "metadata", "labels", NULL);
    /* The first attempt races with a concurrent writer (simulated below). */
    if (*calls == 1) {
        char err[256];
        json_object *p = jparse("{\"metadata\":{\"labels\":{\"other\":\"writer\"}}}");
        assert_int_equal(tf_k8s_merge_patch(fake.client, &tf_k8s_pods, "default", "rmw", NULL, p,
                                            NULL, err, sizeof(err)),
                         0);
        json_object_put(p);
    }
    json_object_object_add(labels, "mine", json_object_new_string("yes"));
    return 0;
}

static void read_modify_write_retries_after_a_conflict(void **state)
{
    char err[256];
    int calls = 0;
    create_pod("rmw", "web");
    json_object *out = NULL;
    assert_int_equal(tf_k8s_update_retry(fake.client, &tf_k8s_pods, "default", "rmw", NULL,
                                         add_label, &calls, &out, err, sizeof(err)),
                     0);
    assert_int_equal(calls, 2);
    assert_string_equal(tf_json_str(out, "metadata", "labels", "mine", NULL), "yes");
    assert_string_equal(tf_json_str(out, "metadata", "labels", "other", NULL), "writer");
    json_object_put(out);
}

static json_object *bump_counter(json_object *obj, void *arg)
{
    int *calls = arg;
    (*calls)++;
    const char *v = tf_json_str(obj, "metadata", "annotations", "count", NULL);
    int n = v ? atoi(v) : 0;
    if (*calls == 1) { /* a concurrent writer bumps it between our read and our patch */
        char err[256];
        json_object *p = jparse("{\"metadata\":{\"annotations\":{\"count\":\"5\"}}}");
        assert_int_equal(tf_k8s_merge_patch(fake.client, &tf_k8s_pods, "default", "mp", NULL, p,
                                            NULL, err, sizeof(err)),
                         0);
        json_object_put(p);
    }
    char buf[128];
    snprintf(buf, sizeof(buf), "{\"metadata\":{\"annotations\":{\"count\":\"%d\"}}}", n + 1);
    return jparse(buf);
}

static void conditional_merge_patch_retries_on_409_and_keeps_the_other_write(void **state)
{
    char err[256];
    int calls = 0;
    create_pod("mp", "web");
    json_object *out = NULL;
    assert_int_equal(tf_k8s_merge_patch_retry(fake.client, &tf_k8s_pods, "default", "mp", NULL,
                                              bump_counter, &calls, &out, err, sizeof(err)),
                     0);
    assert_int_equal(calls, 2);
    /* Not 1 (which would have lost the concurrent write of 5): 5 + 1. */
    assert_string_equal(tf_json_str(out, "metadata", "annotations", "count", NULL), "6");
    json_object_put(out);
    assert_true(fake_count_requests(&fake, "PATCH /api/v1/namespaces/default/pods/mp") >= 3);
}

static void binding_a_pod_sets_its_node_once(void **state)
{
    char err[256];
    json_object *out = NULL;
    create_pod("bindme", "web");
    assert_int_equal(
        tf_k8s_get(fake.client, &tf_k8s_pods, "default", "bindme", &out, err, sizeof(err)), 0);
    char uid[128];
    snprintf(uid, sizeof(uid), "%s", tf_json_str(out, "metadata", "uid", NULL));
    json_object_put(out);
    /* Another pod's UID (the pod was deleted and created again meanwhile): refused. */
    json_object *anns = json_object_new_object();
    json_object_object_add(anns, "tensor-fusion.ai/gpu-ids", json_object_new_string("gpu-0"));
    assert_int_equal(tf_k8s_bind(fake.client, "default", "bindme", "0d1c-not-this-pod",
                                 "gpu-node-1", anns, err, sizeof(err)),
                     TF_ECONFLICT);
    assert_int_equal(
        tf_k8s_get(fake.client, &tf_k8s_pods, "default", "bindme", &out, err, sizeof(err)), 0);
    assert_null(tf_json_str(out, "spec", "nodeName", NULL));
    assert_null(tf_json_str(out, "metadata", "annotations", "tensor-fusion.ai/gpu-ids", NULL));
    json_object_put(out);
    /* The Binding's annotations land with the node, in one write. */
    assert_int_equal(
        tf_k8s_bind(fake.client, "default", "bindme", uid, "gpu-node-1", anns, err, sizeof(err)),
        0);
    json_object_put(anns);
    assert_int_equal(
        tf_k8s_get(fake.client, &tf_k8s_pods, "default", "bindme", &out, err, sizeof(err)), 0);
    assert_string_equal(tf_json_str(out, "spec", "nodeName", NULL), "gpu-node-1");
    assert_string_equal(
        tf_json_str(out, "metadata", "annotations", "tensor-fusion.ai/gpu-ids", NULL), "gpu-0");
    assert_int_equal(
        tf_k8s_bind(fake.client, "default", "bindme", NULL, "gpu-node-2", NULL, err, sizeof(err)),
        TF_ECONFLICT);
    assert_int_equal(tf_k8s_event(fake.client, out, "Normal", "GPUAllocated",
                                  "allocated gpu-0 on gpu-node-1", NULL),
                     0);
    json_object_put(out);
    assert_int_equal(fake_count_requests(&fake, "POST /api/v1/namespaces/default/events"), 1);
}

static int count_item(json_object *item, void *arg)
{
    (*(int *)arg)++;
    return 0;
}

static void list_follows_continue_tokens_across_pages(void **state)
{
    char err[256], name[32];
    for (int i = 0; i < 23; i++) {
        snprintf(name, sizeof(name), "page-%02d", i);
        create_pod(name, "paged");
    }
    int n = 0;
    char *rv = NULL;
    assert_int_equal(tf_k8s_list(fake.client, &tf_k8s_pods, "default", "app=paged", NULL, 5,
                                 count_item, &n, &rv, err, sizeof(err)),
                     0);
    assert_int_equal(n, 23);
    assert_non_null(rv);
    free(rv);
    /* 5 pages: the first without a continue token, four with one. */
    assert_int_equal(fake_count_requests(&fake, "labelSelector=app%3Dpaged&limit=5&continue="), 4);
}

static void retries_429_and_5xx_then_gives_up(void **state)
{
    char err[256];
    json_object *out = NULL;
    fake_control(&fake, "fail", "{\"status\":429,\"count\":2,\"retryAfter\":0}");
    assert_int_equal(
        tf_k8s_get(fake.client, &tf_k8s_namespaces, NULL, "default", &out, err, sizeof(err)), 0);
    json_object_put(out);
    /* A Retry-After past any sane wait (and past a long's range) waits the client's longest
     * backoff (50 ms here), not forever and not an overflow; an HTTP-date changes nothing. */
    fake_control(&fake, "fail",
                 "{\"status\":429,\"count\":1,"
                 "\"retryAfter\":\"99999999999999999999999\"}");
    fake_control(&fake, "fail",
                 "{\"status\":503,\"count\":1,\"retryAfter\":\"Wed, 21 Oct 2015 07:28:00 GMT\"}");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(
        tf_k8s_get(fake.client, &tf_k8s_namespaces, NULL, "default", &out, err, sizeof(err)), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(t1.tv_sec - t0.tv_sec < 5);
    json_object_put(out);
    fake_control(&fake, "fail", "{\"status\":503,\"count\":10}");
    assert_int_equal(
        tf_k8s_get(fake.client, &tf_k8s_namespaces, NULL, "default", &out, err, sizeof(err)),
        TF_EIO);
    assert_non_null(strstr(err, "HTTP 503"));
    /* 4 attempts were made (max_attempts); drain what is left of the injected failures. */
    while (tf_k8s_get(fake.client, &tf_k8s_namespaces, NULL, "default", &out, err, sizeof(err)) !=
           0) {
    }
    json_object_put(out);
}

struct seen {
    int added, modified, deleted, bookmarks;
};

static int on_watch(enum tf_k8s_event_type t, json_object *obj, void *arg)
{
    struct seen *s = arg;
    switch (t) {
    case TF_K8S_ADDED:
        s->added++;
        break;
    case TF_K8S_MODIFIED:
        s->modified++;
        break;
    case TF_K8S_DELETED:
        s->deleted++;
        return 1; /* stop: we saw what we wanted */
    case TF_K8S_BOOKMARK:
        s->bookmarks++;
        break;
    }
    return 0;
}

static void watch_streams_changes_from_a_resource_version(void **state)
{
    char err[256], rv[64] = "";
    json_object *out = NULL;
    create_pod("watched", "w");
    assert_int_equal(
        tf_k8s_get(fake.client, &tf_k8s_pods, "default", "watched", &out, err, sizeof(err)), 0);
    char from[32];
    snprintf(from, sizeof(from), "%s", tf_json_str(out, "metadata", "resourceVersion", NULL));
    json_object_put(out);
    json_object *p = jparse("{\"metadata\":{\"labels\":{\"x\":\"1\"}}}");
    assert_int_equal(tf_k8s_merge_patch(fake.client, &tf_k8s_pods, "default", "watched", NULL, p,
                                        NULL, err, sizeof(err)),
                     0);
    json_object_put(p);
    assert_int_equal(
        tf_k8s_delete(fake.client, &tf_k8s_pods, "default", "watched", err, sizeof(err)), 0);
    struct seen s = {0};
    int rc = tf_k8s_watch(fake.client, &tf_k8s_pods, "default", "app=w", NULL, from, 10, on_watch,
                          &s, NULL, rv, sizeof(rv), err, sizeof(err));
    assert_int_equal(rc, 1);
    assert_int_equal(s.added, 0); /* the ADDED happened at FROM, not after it */
    assert_int_equal(s.modified, 1);
    assert_int_equal(s.deleted, 1);
    assert_true(atoll(rv) > atoll(from));
}

static void watch_sends_bookmarks_while_idle(void **state)
{
    char err[256], rv[64] = "";
    struct seen s = {0};
    assert_int_equal(tf_k8s_watch(fake.client, &tf_k8s_nodes, NULL, NULL, NULL, "1", 2, on_watch,
                                  &s, NULL, rv, sizeof(rv), err, sizeof(err)),
                     0);
    assert_true(s.bookmarks >= 1);
    assert_true(rv[0] != '\0');
}

static void watch_from_a_compacted_version_asks_for_a_relist(void **state)
{
    char err[256];
    create_pod("old-rv", "w410");
    fake_control(&fake, "compact", NULL);
    struct seen s = {0};
    assert_int_equal(tf_k8s_watch(fake.client, &tf_k8s_pods, "default", NULL, NULL, "1", 5,
                                  on_watch, &s, NULL, NULL, 0, err, sizeof(err)),
                     TF_ESTATE);
    assert_non_null(strstr(err, "too old resource version"));
}

struct counts {
    int adds, updates, deletes;
};
static void inf_add(json_object *o, void *arg)
{
    ((struct counts *)arg)->adds++;
}
static void inf_upd(json_object *a, json_object *b, void *arg)
{
    ((struct counts *)arg)->updates++;
}
static void inf_del(json_object *o, void *arg)
{
    ((struct counts *)arg)->deletes++;
}

static void wait_for(bool (*cond)(void *), void *arg)
{
    for (int i = 0; i < 400 && !cond(arg); i++)
        usleep(10000);
    assert_true(cond(arg));
}

static bool has_three(void *arg)
{
    return tf_informer_count(arg) == 3;
}
static bool relisted(void *arg)
{
    return tf_informer_relists(arg) >= 2;
}
static bool has_two(void *arg)
{
    return tf_informer_count(arg) == 2;
}

static void informer_caches_nodes_and_relists_after_410(void **state)
{
    char err[256];
    for (int i = 0; i < 2; i++) {
        char buf[128];
        snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"node-%d\"}}", i);
        json_object *n = jparse(buf);
        assert_int_equal(tf_k8s_create(fake.client, &tf_k8s_nodes, NULL, n, NULL, err, sizeof(err)),
                         0);
        json_object_put(n);
    }
    struct counts c = {0};
    struct tf_informer_handlers h = {inf_add, inf_upd, inf_del, &c};
    struct tf_informer *inf = tf_informer_new(fake.client, &tf_k8s_nodes, NULL, NULL, NULL, &h);
    assert_non_null(inf);
    assert_int_equal(tf_informer_start(inf, 1), 0);
    assert_true(tf_informer_wait_synced(inf, 5000));
    assert_int_equal(tf_informer_count(inf), 2);
    json_object *n = jparse("{\"metadata\":{\"name\":\"node-2\"}}");
    assert_int_equal(tf_k8s_create(fake.client, &tf_k8s_nodes, NULL, n, NULL, err, sizeof(err)), 0);
    json_object_put(n);
    wait_for(has_three, inf);
    json_object *got = tf_informer_get(inf, NULL, "node-2");
    assert_non_null(got);
    json_object_put(got);
    /* The watch misses a delete and the history moves past it: the re-watch gets 410, the
     * informer relists and finds node-0 gone by diffing. */
    fake_control(&fake, "pause", NULL);
    assert_int_equal(tf_k8s_delete(fake.client, &tf_k8s_nodes, NULL, "node-0", err, sizeof(err)),
                     0);
    fake_control(&fake, "compact", "{\"closeWatches\":true}");
    wait_for(relisted, inf);
    wait_for(has_two, inf);
    assert_null(tf_informer_get(inf, NULL, "node-0"));
    tf_informer_destroy(inf);
    assert_int_equal(c.adds, 3);
    assert_int_equal(c.deletes, 1);
}

static void rotated_service_account_token_is_reread(void **state)
{
    char dir[300], path[400], err[256];
    snprintf(dir, sizeof(dir), "%s/sa", fake.dir);
    mkdir(dir, 0700);
    snprintf(path, sizeof(path), "%s/token", dir);
    FILE *f = fopen(path, "w");
    fputs("token-one\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/namespace", dir);
    f = fopen(path, "w");
    fputs("tensor-fusion-sys", f);
    fclose(f);
    setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
    setenv("KUBERNETES_SERVICE_PORT", "443", 1);
    struct tf_k8s_config cfg;
    tf_k8s_config_init(&cfg);
    assert_int_equal(tf_k8s_config_in_cluster(&cfg, dir, err, sizeof(err)), 0);
    assert_string_equal(cfg.server, "https://10.96.0.1:443");
    assert_string_equal(cfg.token, "token-one");
    assert_string_equal(cfg.namespace, "tensor-fusion-sys");
    free(cfg.server);
    cfg.server = strdup(fake.server); /* the fake speaks plain HTTP */
    cfg.backoff_base_ms = 5;
    struct tf_k8s_client *c = tf_k8s_client_new(&cfg);
    tf_k8s_config_free(&cfg);
    fake_control(&fake, "auth", "{\"token\":\"token-one\"}");
    json_object *out = NULL;
    assert_int_equal(tf_k8s_get(c, &tf_k8s_namespaces, NULL, "default", &out, err, sizeof(err)), 0);
    json_object_put(out);
    /* Rotation: the kubelet rewrites the file; the server only accepts the new token. */
    snprintf(path, sizeof(path), "%s/token", dir);
    f = fopen(path, "w");
    fputs("token-two\n", f);
    fclose(f);
    fake_control(&fake, "auth", "{\"token\":\"token-two\"}");
    assert_int_equal(tf_k8s_get(c, &tf_k8s_namespaces, NULL, "default", &out, err, sizeof(err)), 0);
    json_object_put(out);
    assert_true(fake_count_requests(&fake, "auth=token-two") >= 1);
    tf_k8s_client_destroy(c);
    /* The harness client has no token: give it back an open server. */
    struct tf_k8s_config open;
    tf_k8s_config_init(&open);
    open.server = fake.server;
    open.token = "token-two";
    c = tf_k8s_client_new(&open);
    assert_int_equal(tf_k8s_request(c, "POST", "/_fake/auth", "application/json", "{}", NULL, NULL,
                                    err, sizeof(err)),
                     0);
    tf_k8s_client_destroy(c);
    unsetenv("KUBERNETES_SERVICE_HOST");
    assert_int_equal(tf_k8s_config_in_cluster(&cfg, dir, err, sizeof(err)), TF_ENOENT);
    assert_non_null(strstr(err, "KUBERNETES_SERVICE_HOST"));
}

static void kubeconfig_context_selects_server_namespace_and_credentials(void **state)
{
    char path[400], err[256];
    snprintf(path, sizeof(path), "%s/kubeconfig", fake.dir);
    char *ca = tf_base64_encode("-----BEGIN CERTIFICATE-----\nX\n-----END CERTIFICATE-----\n", 56);
    FILE *f = fopen(path, "w");
    fprintf(f,
            "apiVersion: v1\nkind: Config\ncurrent-context: dev\n"
            "clusters:\n- name: c1\n  cluster:\n    server: https://k8s.example:6443\n"
            "    certificate-authority-data: %s\n"
            "- name: c2\n  cluster:\n    server: http://127.0.0.1:1\n"
            "    insecure-skip-tls-verify: true\n"
            "users:\n- name: u1\n  user:\n    token: abc\n"
            "contexts:\n- name: dev\n  context: {cluster: c1, user: u1, namespace: ml}\n"
            "- name: other\n  context: {cluster: c2, user: u1}\n",
            ca);
    fclose(f);
    free(ca);
    struct tf_k8s_config cfg;
    tf_k8s_config_init(&cfg);
    assert_int_equal(tf_k8s_config_kubeconfig(&cfg, path, NULL, err, sizeof(err)), 0);
    assert_string_equal(cfg.server, "https://k8s.example:6443");
    assert_string_equal(cfg.namespace, "ml");
    assert_string_equal(cfg.token, "abc");
    assert_non_null(strstr(cfg.ca_pem, "BEGIN CERTIFICATE"));
    assert_false(cfg.insecure);
    tf_k8s_config_free(&cfg);
    assert_int_equal(tf_k8s_config_kubeconfig(&cfg, path, "other", err, sizeof(err)), 0);
    assert_true(cfg.insecure);
    assert_string_equal(cfg.namespace, "default");
    tf_k8s_config_free(&cfg);
    assert_int_equal(tf_k8s_config_kubeconfig(&cfg, path, "nope", err, sizeof(err)), TF_EINVAL);
    assert_non_null(strstr(err, "context \"nope\" not found"));
    tf_k8s_config_free(&cfg);
    /* A quoted "false" is not false (client-go refuses it too): an error, never verification
     * turned off. Both token and tokenFile: the file's token. */
    char tokpath[420];
    snprintf(tokpath, sizeof(tokpath), "%s/tok", fake.dir);
    f = fopen(tokpath, "w");
    fputs("from-file\n", f);
    fclose(f);
    for (int quoted = 0; quoted < 2; quoted++) {
        f = fopen(path, "w");
        fprintf(f,
                "current-context: q\nclusters:\n- name: c\n  cluster:\n"
                "    server: https://k8s.example:6443\n    insecure-skip-tls-verify: %s\n"
                "users:\n- name: u\n  user: {token: abc, tokenFile: %s}\n"
                "contexts:\n- name: q\n  context: {cluster: c, user: u}\n",
                quoted ? "\"false\"" : "false", tokpath);
        fclose(f);
        tf_k8s_config_init(&cfg);
        int rc = tf_k8s_config_kubeconfig(&cfg, path, NULL, err, sizeof(err));
        if (quoted) {
            assert_int_equal(rc, TF_EINVAL);
            assert_non_null(strstr(err, "insecure-skip-tls-verify of cluster \"c\": expected true "
                                        "or false, not \"false\""));
        } else {
            assert_int_equal(rc, 0);
            assert_false(cfg.insecure);
            assert_string_equal(cfg.token, "from-file");
        }
        tf_k8s_config_free(&cfg);
    }
}

static void paths_escape_names_and_place_namespaces(void **state)
{
    char buf[256];
    assert_int_equal(tf_k8s_path(buf, sizeof(buf), &tf_k8s_pods, "ns", "p", "binding"), 0);
    assert_string_equal(buf, "/api/v1/namespaces/ns/pods/p/binding");
    assert_int_equal(tf_k8s_path(buf, sizeof(buf), &tf_k8s_gpus, "ignored", "gpu-0", "status"), 0);
    assert_string_equal(buf, "/apis/tensor-fusion.ai/v1/gpus/gpu-0/status");
    assert_int_equal(tf_k8s_path(buf, sizeof(buf), &tf_k8s_pods, NULL, NULL, NULL), 0);
    assert_string_equal(buf, "/api/v1/pods");
    assert_int_equal(tf_k8s_path(buf, sizeof(buf), &tf_k8s_leases, "a b", "x/y", NULL), 0);
    assert_string_equal(buf, "/apis/coordination.k8s.io/v1/namespaces/a%20b/leases/x%2Fy");
    assert_int_equal(tf_k8s_path(buf, 10, &tf_k8s_pods, "ns", "p", NULL), TF_ERANGE);
    long long us;
    assert_int_equal(tf_k8s_time_parse("2026-01-02T03:04:05.123456Z", &us), 0);
    assert_int_equal(us % 1000000, 123456);
    assert_int_equal(tf_k8s_time_parse("2026-01-02T03:04:05Z", &us), 0);
    assert_int_equal(tf_k8s_time_parse("2026-01-02 03:04:05", &us), TF_EPARSE);
    /* Fields out of range are refused (timegm would roll month 13 into the next year), an
     * offset is honoured, and the microseconds come from the fraction. */
    static const char *const bad[] = {"2026-13-02T03:04:05Z",  "2026-01-02T99:04:05Z",
                                      "2026-1-02T03:04:05Z",   "+026-01-02T03:04:05Z",
                                      "2026-01-02T03:04:05.Z", "2026-02-30T03:04:05Z"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(tf_k8s_time_parse(bad[i], &us), TF_EPARSE);
    long long z;
    assert_int_equal(tf_k8s_time_parse("2026-01-02T03:04:05.000250Z", &z), 0);
    assert_int_equal(tf_k8s_time_parse("2026-01-02T05:04:05.000250+02:00", &us), 0);
    assert_true(us == z && z % 1000000 == 250);
}

static int count_event(enum tf_k8s_event_type type, json_object *obj, void *arg)
{
    (*(int *)arg)++;
    return 0;
}

/* The watch decoder takes whole events only, however the stream is cut: one JSON object per
 * line (white space around it), with an object; anything else stops the stream. */
static void watch_decoder_takes_whole_events_only(void **state)
{
    static const char ok[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\","
                             "\"resourceVersion\":\"7\"}}}\r\n\n{\"type\":\"SYNC\",\"object\":{}}\n"
                             "{\"type\":\"DELETED\",\"object\":{}} ";
    static const char *const bad[] = {
        "{\"type\":\"ADDED\",\"object\":{}} trailing\n",
        "{\"type\":\"ADDED\",\"object\":5}\n",
        "{\"type\":\"ADDED\",\"object\":{}}\0{\"x\":1}\n",
        "{\"type\":\"ADDED\",\"object\":{\n",
    };
    static const size_t bad_len[] = {0, 0, 36, 0};
    for (size_t step = 1; step <= sizeof(ok); step += 7) {
        int n = 0;
        char rv[8] = "", err[128] = "";
        struct tf__k8s_watch w = {.fn = count_event,
                                  .arg = &n,
                                  .last_rv = rv,
                                  .rvlen = sizeof(rv),
                                  .err = err,
                                  .errlen = sizeof(err)};
        for (size_t off = 0; off < sizeof(ok) - 1; off += step) {
            size_t k = sizeof(ok) - 1 - off < step ? sizeof(ok) - 1 - off : step;
            assert_int_equal(tf__k8s_watch_feed(&w, ok + off, k), k);
        }
        assert_int_equal(tf__k8s_watch_end(&w), 0);
        assert_int_equal(n, 2); /* ADDED and DELETED; SYNC skipped */
        assert_string_equal(rv, "7");
        free(w.line);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int n = 0;
        char err[128] = "";
        struct tf__k8s_watch w = {.fn = count_event, .arg = &n, .err = err, .errlen = sizeof(err)};
        size_t len = bad_len[i] ? bad_len[i] : strlen(bad[i]);
        size_t took = tf__k8s_watch_feed(&w, bad[i], len);
        int rc = took ? tf__k8s_watch_end(&w) : w.rc;
        assert_int_equal(rc, TF_EPROTO);
        assert_int_equal(n, 0);
        assert_non_null(strstr(err, "watch: event"));
        free(w.line);
    }
}

/* ---- the event recorder ---- */

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int collect_event(json_object *item, void *arg)
{
    json_object_array_add(arg, json_object_get(item));
    return 0;
}

static void recorder_writes_each_event_as_tf_k8s_event_does(void **state)
{
    char err[256];
    json_object *ns = jparse("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{"
                             "\"name\":\"rec\"}}");
    assert_int_equal(
        tf_k8s_create(fake.client, &tf_k8s_namespaces, NULL, ns, NULL, err, sizeof(err)), 0);
    json_object_put(ns);
    struct tf_k8s_recorder *r = tf_k8s_recorder_new(fake.client, "tf-scheduler", 0);
    assert_non_null(r);
    json_object *pod = jparse("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{"
                              "\"name\":\"rec-pod\",\"namespace\":\"rec\",\"uid\":\"u-1\"}}");
    char msg[32];
    for (int i = 0; i < 5; i++) {
        snprintf(msg, sizeof(msg), "event %d", i);
        tf_k8s_record(r, pod, i == 4 ? "Warning" : "Normal", "GPUAllocated", msg);
    }
    json_object_put(pod); /* read when recorded: the caller may free it at once */
    assert_true(tf_k8s_recorder_flush(r, 10000));
    uint64_t posted = 0, failed = 9, dropped = 9;
    tf_k8s_recorder_stats(r, &posted, &failed, &dropped);
    assert_int_equal(posted, 5);
    assert_int_equal(failed, 0);
    assert_int_equal(dropped, 0);
    assert_int_equal(fake_count_requests(&fake, "POST /api/v1/namespaces/rec/events"), 5);
    json_object *got = json_object_new_array();
    assert_int_equal(tf_k8s_list(fake.client, &tf_k8s_events, "rec", NULL, NULL, 0, collect_event,
                                 got, NULL, err, sizeof(err)),
                     0);
    assert_int_equal(json_object_array_length(got), 5);
    int seen = 0;
    for (size_t i = 0; i < 5; i++) {
        json_object *e = json_object_array_get_idx(got, i);
        assert_string_equal(tf_json_str(e, "involvedObject", "name", NULL), "rec-pod");
        assert_string_equal(tf_json_str(e, "involvedObject", "uid", NULL), "u-1");
        assert_string_equal(tf_json_str(e, "involvedObject", "kind", NULL), "Pod");
        assert_string_equal(tf_json_str(e, "source", "component", NULL), "tf-scheduler");
        assert_string_equal(tf_json_str(e, "reason", NULL), "GPUAllocated");
        int k = -1;
        assert_int_equal(sscanf(tf_json_str(e, "message", NULL), "event %d", &k), 1);
        assert_string_equal(tf_json_str(e, "type", NULL), k == 4 ? "Warning" : "Normal");
        seen |= 1 << k;
    }
    assert_int_equal(seen, 0x1f);
    json_object_put(got);
    tf_k8s_recorder_destroy(r);
}

/* An API server that takes connections and never answers: recording still returns at once,
 * what does not fit the queue is dropped and counted, and destroy gives the rest up. */
static void recorder_never_waits_on_a_silent_api_server(void **state)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(lfd, 16), 0); /* the kernel completes handshakes; nobody reads */
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u", (unsigned)ntohs(a.sin_port));
    struct tf_k8s_config cfg;
    tf_k8s_config_init(&cfg);
    cfg.server = url;
    struct tf_k8s_client *c = tf_k8s_client_new(&cfg);
    assert_non_null(c);
    struct tf_k8s_recorder *r = tf_k8s_recorder_new(c, "tf-scheduler", 4);
    assert_non_null(r);
    json_object *pod = jparse("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":"
                              "\"silent\"}}");
    double t0 = mono_s();
    for (int i = 0; i < 10; i++)
        tf_k8s_record(r, pod, "Normal", "GPUAllocated", "allocated");
    double took = mono_s() - t0;
    json_object_put(pod);
    assert_true(took < 0.5); /* ten events, none waited on the server */
    uint64_t posted = 9, failed = 9, dropped = 0;
    tf_k8s_recorder_stats(r, &posted, &failed, &dropped);
    assert_int_equal(posted, 0);
    assert_int_equal(failed, 0);
    assert_true(dropped >= 5 && dropped <= 6); /* 4 wait, 1 may be in flight */
    assert_false(tf_k8s_recorder_flush(r, 200));
    t0 = mono_s();
    tf_k8s_recorder_destroy(r); /* 2 s for the queue, then the request in flight is cut */
    took = mono_s() - t0;
    assert_true(took >= 1.9 && took < 6.0);
    tf_k8s_client_destroy(c);
    close(lfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(paths_escape_names_and_place_namespaces),
        cmocka_unit_test(controller_creates_reads_patches_and_deletes_a_pod),
        cmocka_unit_test(creating_an_existing_object_reports_already_exists),
        cmocka_unit_test(read_modify_write_retries_after_a_conflict),
        cmocka_unit_test(conditional_merge_patch_retries_on_409_and_keeps_the_other_write),
        cmocka_unit_test(binding_a_pod_sets_its_node_once),
        cmocka_unit_test(list_follows_continue_tokens_across_pages),
        cmocka_unit_test(retries_429_and_5xx_then_gives_up),
        cmocka_unit_test(watch_decoder_takes_whole_events_only),
        cmocka_unit_test(watch_streams_changes_from_a_resource_version),
        cmocka_unit_test(watch_sends_bookmarks_while_idle),
        cmocka_unit_test(informer_caches_nodes_and_relists_after_410),
        cmocka_unit_test(watch_from_a_compacted_version_asks_for_a_relist),
        cmocka_unit_test(rotated_service_account_token_is_reread),
        cmocka_unit_test(kubeconfig_context_selects_server_namespace_and_credentials),
        cmocka_unit_test(recorder_writes_each_event_as_tf_k8s_event_does),
        cmocka_unit_test(recorder_never_waits_on_a_silent_api_server),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
