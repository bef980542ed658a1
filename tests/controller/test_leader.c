/* SPDX-License-Identifier: Apache-2.0
 *
 * Leader election on a Lease in the in-memory API server: two replicas never lead at once,
 * a clean shutdown hands over at once, a leader that stops renewing (API unreachable) steps
 * down and the standby takes over after the lease duration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/yamljson.h"
#include "controller/leader.h"
#include "harness.h"

static struct fake_api fake;

struct flags {
    int started, stopped;
};
static void on_start(void *arg)
{
    ((struct flags *)arg)->started++;
}
static void on_stop(void *arg)
{
    ((struct flags *)arg)->stopped++;
}

static struct tf_leader *candidate(struct tf_k8s_client *c, const char *id, struct flags *f,
                                   int lease_s)
{
    struct tf_leader_opts o = {.ns = "default",
                               .name = "tf-test-lease",
                               .identity = id,
                               .lease_duration_s = lease_s,
                               .renew_deadline_s = 1,
                               .retry_period_ms = 100,
                               .on_start = on_start,
                               .on_stop = on_stop,
                               .arg = f};
    return tf_leader_start(c, &o);
}

static bool wait_until(bool (*cond)(void *), void *arg, int ms)
{
    for (int t = 0; t < ms; t += 20) {
        if (cond(arg))
            return true;
        usleep(20000);
    }
    return cond(arg);
}

static bool is_leader(void *l)
{
    return tf_leader_is_leader(l);
}
static bool not_leader(void *l)
{
    return !tf_leader_is_leader(l);
}

static const char *holder(void)
{
    static char buf[128];
    char err[256];
    json_object *lease = NULL;
    buf[0] = '\0';
    if (tf_k8s_get(fake.client, &tf_k8s_leases, "default", "tf-test-lease", &lease, err,
                   sizeof(err)) == 0) {
        const char *h = tf_json_str(lease, "spec", "holderIdentity", NULL);
        snprintf(buf, sizeof(buf), "%s", h ? h : "");
        json_object_put(lease);
    }
    return buf;
}

static void one_leader_at_a_time_and_clean_handover(void **state)
{
    struct flags fa = {0}, fb = {0};
    /* A long lease: a handover faster than it can only come from the release. */
    struct tf_leader *a = candidate(fake.client, "replica-a", &fa, 6);
    assert_true(wait_until(is_leader, a, 3000));
    struct tf_leader *b = candidate(fake.client, "replica-b", &fb, 6);
    /* b keeps losing while a renews. */
    for (int i = 0; i < 15; i++) {
        usleep(100000);
        assert_false(tf_leader_is_leader(b));
        assert_true(tf_leader_is_leader(a));
    }
    assert_string_equal(holder(), "replica-a");
    /* a shuts down cleanly: it releases the lease and b takes over well within the duration. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    tf_leader_destroy(a);
    assert_int_equal(fa.started, 1);
    assert_int_equal(fa.stopped, 1);
    assert_true(wait_until(is_leader, b, 3000));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(took < 4.0);
    assert_string_equal(holder(), "replica-b");
    tf_leader_destroy(b);
    assert_string_equal(holder(), "");
}

static void unreachable_leader_steps_down_and_standby_takes_over(void **state)
{
    /* Replica a leads; then the API server starts refusing a's credentials (401 on every
     * renewal) while replica b's are accepted. */
    struct flags fa = {0}, fb = {0};
    struct tf_k8s_config cfg;
    tf_k8s_config_init(&cfg);
    cfg.server = fake.server;
    cfg.max_attempts = 1;
    cfg.timeout_ms = 500;
    struct tf_k8s_client *ca = tf_k8s_client_new(&cfg);
    struct tf_leader *a = candidate(ca, "replica-a", &fa, 2);
    assert_true(wait_until(is_leader, a, 3000));
    fake_control(&fake, "auth", "{\"token\":\"only-b\"}");
    struct tf_k8s_config cfgb;
    tf_k8s_config_init(&cfgb);
    cfgb.server = fake.server;
    cfgb.token = "only-b";
    cfgb.max_attempts = 1;
    struct tf_k8s_client *cb = tf_k8s_client_new(&cfgb);
    struct tf_leader *b = candidate(cb, "replica-b", &fb, 2);
    /* a cannot renew: it steps down after renew_deadline (1 s); b waits for the lease to
     * expire (2 s of no change) and takes over. */
    assert_true(wait_until(not_leader, a, 3000));
    assert_int_equal(fa.stopped, 1);
    assert_true(wait_until(is_leader, b, 5000));
    tf_leader_destroy(b);
    tf_leader_destroy(a);
    /* Open the server again for the harness. */
    assert_int_equal(
        tf_k8s_request(cb, "POST", "/_fake/auth", "application/json", "{}", NULL, NULL, NULL, 0),
        0);
    tf_k8s_client_destroy(ca);
    tf_k8s_client_destroy(cb);
}

static int setup(void **state)
{
    return fake_start(&fake, NULL) ? -1 : 0;
}
static int teardown(void **state)
{
    fake_stop(&fake);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_leader_at_a_time_and_clean_handover),
        cmocka_unit_test(unreachable_leader_steps_down_and_standby_takes_over),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
