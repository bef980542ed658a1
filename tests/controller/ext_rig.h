/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only: an extender wired to informers on the fake API server as tf-controller wires it
 * (pod, GPU and inventory handlers), object creation that fails the test, the suites' inventory
 * (GPUs, pods as the webhook leaves them) and calls of the verbs. Static
 * functions, included by the extender suites; FAKE is the suite's struct fake_api.
 */
#ifndef TF_TESTS_CONTROLLER_EXT_RIG_H
#define TF_TESTS_CONTROLLER_EXT_RIG_H

#include "common/yamljson.h"
#include "controller/extender.h"
#include "controller/k8s/informer.h"
#include "harness.h"

struct rig {
    struct tf_informer *pods, *gpus, *pools, *templates, *quotas;
    struct tf_extender *x;
};

static struct fake_api fake;

static __attribute__((unused)) void create(const struct tf_k8s_resource *res, const char *ns,
                                           const char *json)
{
    char err[256];
    json_object *o = jparse(json);
    if (tf_k8s_create(fake.client, res, ns, o, NULL, err, sizeof(err)))
        fail_msg("create: %s", err);
    json_object_put(o);
}

static struct tf_informer *rig_start(const struct tf_k8s_resource *res,
                                     const struct tf_informer_handlers *h)
{
    struct tf_informer *inf = tf_informer_new(fake.client, res, NULL, NULL, NULL, h);
    assert_int_equal(tf_informer_start(inf, 60), 0);
    assert_true(tf_informer_wait_synced(inf, 10000));
    return inf;
}

static void rig_up(struct rig *r)
{
    r->x = tf_extender_new(fake.client, "default-pool", "dynamic");
    struct tf_informer_handlers ph = tf_extender_pod_handlers(r->x);
    struct tf_informer_handlers gh = tf_extender_gpu_handlers(r->x);
    struct tf_informer_handlers ih = tf_extender_inventory_handlers(r->x);
    r->pods = rig_start(&tf_k8s_pods, &ph);
    r->gpus = rig_start(&tf_k8s_gpus, &gh);
    r->pools = rig_start(&tf_k8s_gpupools, &ih);
    r->templates = rig_start(&tf_k8s_schedulingconfigtemplates, &ih);
    r->quotas = rig_start(&tf_k8s_gpuresourcequotas, &ih);
    struct tf_extender_sources src = {r->pods, r->gpus, r->pools, r->templates, r->quotas};
    tf_extender_set_sources(r->x, &src);
}

static void rig_down(struct rig *r)
{
    tf_informer_destroy(r->pods);
    tf_informer_destroy(r->gpus);
    tf_informer_destroy(r->pools);
    tf_informer_destroy(r->templates);
    tf_informer_destroy(r->quotas);
    tf_extender_destroy(r->x);
}

/* ---- the suites' shared fixtures and calls ---- */

/* GPU IDX of NODE, of MODEL as status.gpuModel spells it. */
static __attribute__((unused)) void gpu_of(const char *node, int idx, const char *vram,
                                           const char *model)
{
    char buf[1024], err[256];
    snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"%s-gpu-%d\"}}", node, idx);
    create(&tf_k8s_gpus, NULL, buf);
    snprintf(buf, sizeof(buf),
             "{\"status\":{\"uuid\":\"GPU-%s-%d\",\"gpuModel\":\"%s\",\"index\":%d,"
             "\"phase\":\"Running\",\"capacity\":{\"tflops\":\"312\",\"vram\":\"%s\"},"
             "\"available\":{\"tflops\":\"312\",\"vram\":\"%s\"},\"message\":\"\","
             "\"nodeSelector\":{\"kubernetes.io/hostname\":\"%s\"}}}",
             node, idx, model, idx, vram, vram, node);
    json_object *p = jparse(buf);
    snprintf(buf, sizeof(buf), "%s-gpu-%d", node, idx);
    if (tf_k8s_merge_patch(fake.client, &tf_k8s_gpus, NULL, buf, "status", p, NULL, err,
                           sizeof(err)))
        fail_msg("gpu status: %s", err);
    json_object_put(p);
}

/* An A100 80GB as our node agent and upstream's name it (upstream's GPU info board name). */
static __attribute__((unused)) void gpu(const char *node, int idx, const char *vram)
{
    gpu_of(node, idx, vram, "A100_SXM_80G");
}

/* A pod as the webhook leaves it: label + normalised annotations. */
static __attribute__((unused)) void pod(const char *name, const char *vram, const char *extra_ann)
{
    char buf[2048];
    snprintf(
        buf, sizeof(buf),
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
        "\"tensor-fusion.ai/enabled\":\"true\",\"tensor-fusion.ai/component\":\"client\"},"
        "\"annotations\":{\"tensor-fusion.ai/gpupool\":\"default-pool\","
        "\"tensor-fusion.ai/isolation\":\"soft\",\"tensor-fusion.ai/tflops-request\":\"50\","
        "\"tensor-fusion.ai/tflops-limit\":\"100\",\"tensor-fusion.ai/vram-request\":\"%s\","
        "\"tensor-fusion.ai/vram-limit\":\"%s\",\"tensor-fusion.ai/inject-container\":\"app\"%s}},"
        "\"spec\":{\"schedulerName\":"
        "\"tensor-fusion-scheduler\",\"containers\":[{\"name\":\"app\",\"image\":\"x\"},"
        "{\"name\":\"side\",\"image\":\"y\"}]}}",
        name, vram, vram, extra_ann ? extra_ann : "");
    create(&tf_k8s_pods, "ml", buf);
}

/* The raw answer of VERB for BODY (a new string). */
static __attribute__((unused)) char *call_text(struct rig *r, const char *verb, const char *body)
{
    char path[64];
    snprintf(path, sizeof(path), "/scheduler/%s", verb);
    struct tf_http_req req = {"POST", path, body, strlen(body), NULL};
    struct tf_http_resp resp = {.status = 200};
    assert_true(tf_extender_handle(r->x, &req, &resp));
    assert_int_equal(resp.status, 200);
    return resp.body;
}

static __attribute__((unused)) json_object *call(struct rig *r, const char *verb, const char *body)
{
    char *text = call_text(r, verb, body);
    json_object *o = jparse(text);
    free(text);
    return o;
}

static __attribute__((unused)) json_object *get_pod(const char *name)
{
    char err[256];
    json_object *o = NULL;
    assert_int_equal(tf_k8s_get(fake.client, &tf_k8s_pods, "ml", name, &o, err, sizeof(err)), 0);
    return o;
}

static __attribute__((unused)) char *args_for(const char *name, const char *nodes)
{
    json_object *p = get_pod(name);
    char *buf = malloc(65536);
    snprintf(buf, 65536, "{\"Pod\":%s,\"Nodes\":null,\"NodeNames\":%s}",
             json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN), nodes);
    json_object_put(p);
    return buf;
}

static __attribute__((unused)) const char *bind_err(struct rig *r, const char *name,
                                                    const char *node)
{
    static char keep[8][1024];
    static int slot;
    char body[512];
    snprintf(body, sizeof(body),
             "{\"PodName\":\"%s\",\"PodNamespace\":\"ml\",\"PodUID\":\"\",\"Node\":\"%s\"}", name,
             node);
    json_object *o = call(r, "bind", body);
    char *k = keep[slot++ % 8];
    snprintf(k, 1024, "%s", tf_json_str(o, "Error", NULL));
    json_object_put(o);
    return k;
}

/* The inventory: namespace ml, pool default-pool (CompactFirst, 500% TFLOPS oversell), two
 * A100 80GB on node-a and on node-b. 0, or -1 when the fake API server did not start. */
static __attribute__((unused)) int rig_inventory(void)
{
    if (fake_start(&fake, NULL))
        return -1;
    create(&tf_k8s_namespaces, NULL, "{\"metadata\":{\"name\":\"ml\"}}");
    create(&tf_k8s_gpupools, NULL,
           "{\"metadata\":{\"name\":\"default-pool\"},\"spec\":{\"capacityConfig\":{"
           "\"oversubscription\":{\"tflopsOversellRatio\":500}},\"schedulingConfigTemplate\":"
           "\"tpl\"}}");
    create(&tf_k8s_schedulingconfigtemplates, NULL,
           "{\"metadata\":{\"name\":\"tpl\"},\"spec\":{\"placement\":{\"mode\":"
           "\"CompactFirst\"}}}");
    gpu("node-a", 0, "80Gi");
    gpu("node-a", 1, "80Gi");
    gpu("node-b", 0, "80Gi");
    gpu("node-b", 1, "80Gi");
    return 0;
}

#endif
