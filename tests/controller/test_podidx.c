/* SPDX-License-Identifier: Apache-2.0
 *
 * tf-controller's pod-index allocator (controller/podidx.h) over a real pod informer on the
 * in-memory API server: indexes live pods hold are skipped, a restarted controller (a fresh
 * allocator) rebuilds them from the pods' annotations, a deleted pod's index comes back, and
 * exhaustion is refused with a message saying why.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/err.h"
#include "controller/k8s/client.h"
#include "controller/k8s/informer.h"
#include "controller/podidx.h"
#include "harness.h"

static struct fake_api fake;

static int setup(void **state)
{
    (void)state;
    if (fake_start(&fake, NULL)) {
        fprintf(stderr, "SKIP: cannot start fake API server\n");
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fake_stop(&fake);
    return 0;
}

static void make_pod(const char *name, const char *index)
{
    char buf[512], err[256];
    snprintf(buf, sizeof(buf),
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"ml\",\"annotations\":{\"tensor-fusion.ai/index\":\"%s\"}},"
             "\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"x\"}]}}",
             name, index);
    json_object *p = jparse(buf);
    assert_int_equal(tf_k8s_create(fake.client, &tf_k8s_pods, "ml", p, NULL, err, sizeof(err)), 0);
    json_object_put(p);
}

static void wait_gone(struct tf_informer *inf, const char *name)
{
    for (int i = 0; i < 200; i++) {
        json_object *o = tf_informer_get(inf, "ml", name);
        if (!o)
            return;
        json_object_put(o);
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    fail_msg("pod %s still in the cache", name);
}

static void indexes_follow_the_live_pods_across_a_restart(void **state)
{
    (void)state;
    char err[512];
    json_object *ns = jparse("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":"
                             "{\"name\":\"ml\"}}");
    assert_int_equal(
        tf_k8s_create(fake.client, &tf_k8s_namespaces, NULL, ns, NULL, err, sizeof(err)), 0);
    json_object_put(ns);
    make_pod("a", "1");
    make_pod("b", "2");
    make_pod("junk", "abc"); /* not an index: ignored */
    struct tf_informer *pods = tf_informer_new(fake.client, &tf_k8s_pods, NULL, NULL, NULL, NULL);
    assert_non_null(pods);
    assert_int_equal(tf_informer_start(pods, 0), 0);
    assert_true(tf_informer_wait_synced(pods, 20000));
    struct tf_ctl_podidx p;
    tf_ctl_podidx_init(&p, pods);
    assert_int_equal(tf_ctl_podidx_take(&p, err, sizeof(err)), 3); /* 1, 2 held */
    assert_int_equal(tf_ctl_podidx_take(&p, err, sizeof(err)), 4);
    tf_ctl_podidx_destroy(&p);

    /* a deleted pod's index comes back; a restarted controller knows 2 is still held */
    assert_int_equal(tf_k8s_delete(fake.client, &tf_k8s_pods, "ml", "a", err, sizeof(err)), 0);
    wait_gone(pods, "a");
    struct tf_ctl_podidx q;
    tf_ctl_podidx_init(&q, pods);
    assert_int_equal(tf_ctl_podidx_take(&q, err, sizeof(err)), 1);
    /* the rest: 3..128 (126 of them), then refused with the reason */
    for (int i = 0; i < TF_PODIDX_MAX - 2; i++) {
        int x = tf_ctl_podidx_take(&q, err, sizeof(err));
        assert_true(x >= 3 && x <= TF_PODIDX_MAX);
    }
    assert_int_equal(tf_ctl_podidx_take(&q, err, sizeof(err)), TF_ENOSPC);
    assert_non_null(strstr(err, "all 128 pod indexes"));
    tf_ctl_podidx_destroy(&q);
    tf_informer_destroy(pods);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(indexes_follow_the_live_pods_across_a_restart),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
