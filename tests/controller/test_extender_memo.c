/* SPDX-License-Identifier: Apache-2.0
 *
 * The extender's memos against the in-memory API server: a /prioritize answered from the
 * /filter before it, and a /filter taking its candidates from the /filter before it, answer
 * byte for byte as a body decoded afresh does, also after a bind changed a node and after the
 * cluster was rebuilt (new node ids, a node that was none before).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "common/err.h"
#include "common/yamljson.h"
#include "controller/extender.h"
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

/* The ExtenderArgs kube-scheduler sends /prioritize after FILTERED: the same Pod bytes, and
 * as NodeNames the filter's NodeNames array (SPACED: with a space after each comma, so that
 * the bytes differ and the body is decoded afresh). */
static char *prioritize_args(const char *pod_text, const char *filtered, bool spaced)
{
    const char *a = strstr(filtered, "\"NodeNames\":[");
    assert_non_null(a);
    a += strlen("\"NodeNames\":");
    const char *e = strchr(a, ']');
    assert_non_null(e);
    char *buf = malloc(65536);
    int n = snprintf(buf, 65536, "{\"Pod\":%s,\"Nodes\":null,\"NodeNames\":", pod_text);
    for (const char *p = a; p <= e; p++) {
        buf[n++] = *p;
        if (spaced && *p == ',')
            buf[n++] = ' ';
    }
    snprintf(buf + n, 65536 - (size_t)n, "}");
    return buf;
}

static void prioritize_after_filter_scores_as_a_fresh_decode_does(void **state)
{
    struct rig r;
    rig_up(&r);
    pod("memo", "30Gi", NULL);
    pod("other", "30Gi", NULL);
    json_object *p = get_pod("memo");
    char *pod_text = strdup(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN));
    json_object_put(p);
    char *fargs = args_for("memo", "[\"node-a\",\"cpu-node\",\"node-b\"]");
    char *filtered = call_text(&r, "filter", fargs);
    char *same = prioritize_args(pod_text, filtered, false);
    char *spaced = prioritize_args(pod_text, filtered, true);
    /* Three rounds: as filtered; after a bind changed node-a; after a rebuild of the state. */
    for (int round = 0; round < 3; round++) {
        uint64_t hits = tf_extender_memo_hits(r.x);
        char *memo = call_text(&r, "prioritize", same);
        assert_int_equal(tf_extender_memo_hits(r.x), hits + (round < 2));
        char *fresh = call_text(&r, "prioritize", spaced);
        assert_int_equal(tf_extender_memo_hits(r.x), hits + (round < 2));
        assert_string_equal(memo, fresh);
        json_object *o = jparse(memo);
        /* Idle nodes score 0 under CompactFirst and are left out: none listed until the bind
         * of round 0 put a pod on node-a. */
        assert_int_equal(json_object_array_length(o), round == 0 ? 0 : 1);
        json_object_put(o);
        free(memo);
        free(fresh);
        if (round == 0)
            assert_string_equal(bind_err(&r, "other", "node-a"), "");
        else
            tf_extender_invalidate(r.x);
    }
    /* Another pod's prioritize with those names is not answered from the memo. */
    p = get_pod("other");
    char *other = strdup(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN));
    json_object_put(p);
    char *filtered2 = call_text(&r, "filter", fargs); /* a fresh memo */
    char *oargs = prioritize_args(other, filtered2, false);
    uint64_t hits = tf_extender_memo_hits(r.x);
    char *o1 = call_text(&r, "prioritize", oargs);
    assert_int_equal(tf_extender_memo_hits(r.x), hits);
    free(o1);
    free(oargs);
    free(other);
    free(filtered2);
    free(same);
    free(spaced);
    free(filtered);
    free(fargs);
    free(pod_text);
    char err[256];
    assert_int_equal(tf_k8s_delete(fake.client, &tf_k8s_pods, "ml", "memo", err, sizeof(err)), 0);
    assert_int_equal(tf_k8s_delete(fake.client, &tf_k8s_pods, "ml", "other", err, sizeof(err)), 0);
    rig_down(&r);
}

/* Waits until the extender's state knows the GPU with uuid UUID. */
static void wait_gpu_known(struct rig *r, const char *uuid)
{
    for (int i = 0; i < 1000; i++) {
        int64_t t, v;
        uint32_t n;
        if (tf_extender_gpu_usage(r->x, uuid, &t, &v, &n) != TF_ENOENT)
            return;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fail_msg("GPU %s never reached the extender", uuid);
}

static void filter_with_the_previous_candidates_answers_as_a_fresh_decode_does(void **state)
{
    struct rig r;
    rig_up(&r);
    pod("cand", "30Gi", NULL);
    pod("cand-other", "30Gi", NULL);
    /* node-c is no GPU node until round 2; the spaced list has other bytes, the same names. */
    char *same = args_for("cand", "[\"node-a\",\"cpu-node\",\"node-c\",\"node-b\"]");
    char *spaced = args_for("cand", "[\"node-a\", \"cpu-node\", \"node-c\", \"node-b\"]");
    /* Three rounds: as loaded; after a bind changed node-a; after node-c's GPU came (a new
     * cluster: the memo's node ids are another index's). Each round's first filter takes its
     * candidates from the previous round's last one. */
    for (int round = 0; round < 3; round++) {
        uint64_t hits = tf_extender_cands_hits(r.x);
        char *memo = call_text(&r, "filter", same);
        assert_int_equal(tf_extender_cands_hits(r.x), hits + (round > 0));
        char *fresh = call_text(&r, "filter", spaced);
        char *again = call_text(&r, "filter", same); /* after another list: decoded afresh */
        assert_int_equal(tf_extender_cands_hits(r.x), hits + (round > 0));
        assert_string_equal(memo, fresh);
        assert_string_equal(memo, again);
        json_object *o = jparse(memo);
        const char *c = tf_json_str(o, "FailedNodes", "node-c", NULL);
        if (round < 2)
            assert_true(c && strstr(c, "no TensorFusion GPUs"));
        else
            assert_null(c);
        assert_int_equal(json_object_array_length(tf_json_path(o, "NodeNames", NULL)),
                         round < 2 ? 2 : 3);
        json_object_put(o);
        free(memo);
        free(fresh);
        free(again);
        if (round == 0) {
            assert_string_equal(bind_err(&r, "cand-other", "node-a"), "");
        } else if (round == 1) {
            gpu("node-c", 0, "80Gi");
            wait_gpu_known(&r, "GPU-node-c-0");
        }
    }
    free(same);
    free(spaced);
    char err[256];
    assert_int_equal(tf_k8s_delete(fake.client, &tf_k8s_pods, "ml", "cand", err, sizeof(err)), 0);
    assert_int_equal(tf_k8s_delete(fake.client, &tf_k8s_pods, "ml", "cand-other", err, sizeof(err)),
                     0);
    rig_down(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(prioritize_after_filter_scores_as_a_fresh_decode_does),
        cmocka_unit_test(filter_with_the_previous_candidates_answers_as_a_fresh_decode_does),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
