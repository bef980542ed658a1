/* SPDX-License-Identifier: Apache-2.0
 *
 * The VRAM escape decision (hypervisor/escape.h): when a workload's processes hold more than
 * its limit (plus the per-process slack), and which of them go first when the action is kill.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/err.h"
#include "hypervisor/escape.h"

#define MiB (INT64_C(1) << 20)
#define GiB (INT64_C(1) << 30)

static void within_limit_and_slack_is_no_escape(void **state)
{
    struct tf_hv_escape_proc p[] = {{10, 900 * MiB, true}, {11, 300 * MiB, true}};
    int64_t used;
    int v[4], nv;
    /* 1.2 GiB under a 1 GiB limit with 128 MiB per process of driver overhead allowed */
    assert_false(tf_hv_escape_judge(GiB, 128 * MiB, p, 2, &used, v, &nv));
    assert_int_equal(used, 1200 * MiB);
    assert_int_equal(nv, 0);
    assert_false(tf_hv_escape_judge(GiB, 0, p, 0, &used, v, &nv));
}

static void a_child_without_the_limiter_goes_first(void **state)
{
    /* the app (under the limiter) holds 800 MiB, a child that dropped LD_PRELOAD 2 GiB */
    struct tf_hv_escape_proc p[] = {{10, 800 * MiB, true}, {12, 2 * GiB, false}};
    int64_t used;
    int v[4], nv;
    assert_true(tf_hv_escape_judge(GiB, 0, p, 2, &used, v, &nv));
    assert_int_equal(used, 2848 * MiB);
    assert_int_equal(nv, 1);
    assert_int_equal(v[0], 12);
}

static void an_app_that_rewrote_its_region_is_killed_largest_first(void **state)
{
    /* every process under the limiter, but together 3 GiB under 1 GiB */
    struct tf_hv_escape_proc p[] = {
        {20, 512 * MiB, true}, {21, 2 * GiB, true}, {22, 512 * MiB, true}};
    int64_t used;
    int v[4], nv;
    assert_true(tf_hv_escape_judge(GiB, 0, p, 3, &used, v, &nv));
    assert_int_equal(nv, 1);
    assert_int_equal(v[0], 21);
    /* still over after the largest: the next goes too */
    p[0].mem = 900 * MiB;
    assert_true(tf_hv_escape_judge(GiB, 0, p, 3, &used, v, &nv));
    assert_int_equal(nv, 2);
    assert_int_equal(v[0], 21);
    assert_int_equal(v[1], 20);
}

static void actions_parse(void **state)
{
    enum tf_hv_escape_action a;
    assert_int_equal(tf_hv_escape_action_parse("kill", &a), 0);
    assert_int_equal(a, TF_HV_ESCAPE_KILL);
    assert_int_equal(tf_hv_escape_action_parse("report", &a), 0);
    assert_int_equal(tf_hv_escape_action_parse("off", &a), 0);
    assert_int_equal(tf_hv_escape_action_parse("nuke", &a), TF_EINVAL);
}

/* Which pod a process is in, from /proc/PID/cgroup as the kubelet's two cgroup drivers and
 * cgroup v1/v2 write it; processes outside pods (and near-misses) are in none. */
static void a_pods_processes_are_known_by_their_cgroup(void **state)
{
    char uid[64];
    assert_true(tf_hv_cgroup_pod_uid(
        "12:memory:/kubepods/burstable/pod0a1b2c3d-4e5f-6789-abcd-ef0123456789/8c2e\n", uid,
        sizeof(uid)));
    assert_string_equal(uid, "0a1b2c3d-4e5f-6789-abcd-ef0123456789");
    assert_true(tf_hv_cgroup_pod_uid("0::/kubepods.slice/kubepods-besteffort.slice/"
                                     "kubepods-besteffort-pod0A1B2C3D_4E5F_6789_ABCD_EF0123456789."
                                     "slice/cri-containerd-1.scope\n",
                                     uid, sizeof(uid)));
    assert_string_equal(uid, "0a1b2c3d-4e5f-6789-abcd-ef0123456789");
    assert_false(
        tf_hv_cgroup_pod_uid("0::/system.slice/tf-hypervisor.service\n", uid, sizeof(uid)));
    assert_false(tf_hv_cgroup_pod_uid("0::/user.slice/pod-builder/pod123\n", uid, sizeof(uid)));
    assert_false(tf_hv_cgroup_pod_uid("0::/kubepods/pod0a1b2c3d-4e5f-6789-abcd-ef0123456789x/\n",
                                      uid, sizeof(uid)));
    assert_false(tf_hv_cgroup_pod_uid("0::/kubepods/pod0a1b2c3d-4e5f-6789-abcd-ef012345678", uid,
                                      sizeof(uid)));
    assert_false(tf_hv_cgroup_pod_uid("0::/kubepods/pod0a1b2c3d-4e5f-6789-abcd-ef0123456789/\n",
                                      uid, 20)); /* no room */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(within_limit_and_slack_is_no_escape),
        cmocka_unit_test(a_child_without_the_limiter_goes_first),
        cmocka_unit_test(an_app_that_rewrote_its_region_is_killed_largest_first),
        cmocka_unit_test(actions_parse),
        cmocka_unit_test(a_pods_processes_are_known_by_their_cgroup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
