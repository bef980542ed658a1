/* SPDX-License-Identifier: Apache-2.0
 *
 * Test-only: an extender wired to informers on the fake API server as tf-controller wires it
 * (pod, GPU and inventory handlers), and object creation that fails the test. Static
 * functions, included by the extender suites; FAKE is the suite's struct fake_api.
 */
#ifndef TF_TESTS_CONTROLLER_EXT_RIG_H
#define TF_TESTS_CONTROLLER_EXT_RIG_H

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

#endif
