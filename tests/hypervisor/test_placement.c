/* SPDX-License-Identifier: Apache-2.0
 *
 * Local workload requests: the DESIGN.md §3.2 defaults and checks, and placement on this
 * machine's GPUs with the reasons users see when a request does not fit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "hypervisor/place.h"
#include "hypervisor/workload.h"

#define GiB (INT64_C(1) << 30)

static int from_json(const char *js, struct tf_hv_request *r, char *err, size_t errlen)
{
    json_object *o = json_tokener_parse(js);
    assert_non_null(o);
    int rc = tf_hv_request_from_json(o, r, err, errlen);
    json_object_put(o);
    return rc;
}

static void a_missing_request_inherits_the_limit_and_qos_follows(void **state)
{
    struct tf_hv_request r;
    char err[256];
    assert_int_equal(from_json("{\"name\":\"a\",\"tflopsLimit\":\"20\",\"vramLimit\":\"4Gi\"}", &r,
                               err, sizeof(err)),
                     0);
    assert_int_equal(r.tflops_request, 20000);
    assert_int_equal(r.vram_request, 4 * GiB);
    assert_int_equal(r.isolation, TF_HV_SOFT);
    assert_string_equal(r.qos, "high"); /* requests == limits */
    assert_string_equal(r.ns, "default");
    assert_int_equal(r.gpu_count, 1);
    assert_int_equal(from_json("{\"name\":\"b\",\"tflopsRequest\":\"10\",\"tflopsLimit\":20,"
                               "\"vramLimit\":1073741824}",
                               &r, err, sizeof(err)),
                     0);
    assert_string_equal(r.qos, "medium");
    assert_int_equal(r.vram_limit, GiB);
    assert_int_equal(
        from_json("{\"name\":\"c\",\"computePercentLimit\":12.5}", &r, err, sizeof(err)), 0);
    assert_int_equal(r.percent_limit, 1250);
    assert_int_equal(r.percent_request, 1250);
    /* No compute at all: the whole GPU's compute. */
    assert_int_equal(from_json("{\"name\":\"d\",\"vramLimit\":\"1Gi\"}", &r, err, sizeof(err)), 0);
    assert_int_equal(r.percent_limit, 10000);
}

static void contradictory_requests_are_refused_naming_the_problem(void **state)
{
    static const struct {
        const char *js, *msg;
    } bad[] = {
        {"{\"name\":\"a\",\"tflopsLimit\":\"20\",\"computePercentLimit\":\"50\"}",
         "mutually exclusive"},
        {"{\"name\":\"a\",\"tflopsRequest\":\"30\",\"tflopsLimit\":\"20\"}", "above its limit"},
        {"{\"name\":\"a\",\"vramRequest\":\"8Gi\",\"vramLimit\":\"4Gi\"}", "VRAM request"},
        {"{\"name\":\"a\",\"isolation\":\"remote\"}", "remote"},
        {"{\"name\":\"a\",\"remote\":\"h:1\"}", "only valid with isolation remote"},
        {"{\"name\":\"-a\"}", "not a valid workload name"},
        {"{\"name\":\"a\",\"namespace\":\"A B\"}", "namespace"},
        {"{\"name\":\"a\",\"tflopsLimit\":\"0.0001\"}", "tflopsLimit"},
        {"{\"name\":\"a\",\"name2\":1}", "unknown key"},
        {"{\"name\":7}", "name: expected a string"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct tf_hv_request r;
        char err[256] = "";
        assert_true(from_json(bad[i].js, &r, err, sizeof(err)) < 0);
        if (!strstr(err, bad[i].msg))
            fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].js, err, bad[i].msg);
    }
}

static struct tf_hv_gpu_view gpu(const char *uuid, const char *model, int idx, int64_t tflops,
                                 int64_t vram)
{
    struct tf_hv_gpu_view g = {uuid, model, idx, tflops, vram, 0, 0, 0, TF_HV_SOFT};
    return g;
}

static struct tf_hv_held held(const char *w, enum tf_hv_isolation iso, const char *uuid,
                              int64_t tflops, int64_t vram)
{
    struct tf_hv_held h = {w, "default", iso, uuid, tflops, vram, tflops, vram};
    return h;
}

static void placement_packs_the_fullest_gpu_that_fits(void **state)
{
    struct tf_hv_gpu_view g[3] = {
        gpu("GPU-0", "A100-80GB", 0, 312000, 80 * GiB),
        gpu("GPU-1", "A100-80GB", 1, 312000, 80 * GiB),
        gpu("GPU-2", "L4", 2, 121000, 24 * GiB),
    };
    struct tf_hv_held h[1] = {held("x", TF_HV_SOFT, "GPU-1", 100000, 60 * GiB)};
    struct tf_hv_request r = {.name = "a", .tflops_limit = 50000, .vram_limit = 10 * GiB};
    char err[128];
    assert_int_equal(tf_hv_request_normalize(&r, err, sizeof(err)), 0);
    struct tf_hv_grant out[2];
    struct tf_dynbuf reasons;
    tf_dynbuf_init(&reasons, 4096);
    assert_int_equal(tf_hv_place(&r, g, 3, h, 1, out, &reasons), 0);
    assert_int_equal(out[0].gpu, 1); /* CompactFirst: the most used GPU that fits */
    assert_int_equal(out[0].vram_limit, 10 * GiB);
    assert_int_equal(out[0].tflops_limit, 50000);
    assert_int_equal(out[0].compute_limit_bp, 1603); /* 50 / 312 TFLOPS */
    /* Percent requests become each GPU's own TFLOPS; no VRAM given: the GPU's whole memory. */
    struct tf_hv_request p = {.name = "p", .percent_limit = 5000, .gpu_model = "L4"};
    assert_int_equal(tf_hv_request_normalize(&p, err, sizeof(err)), 0);
    assert_int_equal(tf_hv_place(&p, g, 3, h, 1, out, &reasons), 0);
    assert_int_equal(out[0].gpu, 2);
    assert_int_equal(out[0].tflops_milli, 60500);
    assert_int_equal(out[0].compute_limit_bp, 5000);
    assert_int_equal(out[0].vram_bytes, 24 * GiB);
    /* Whole memory of an 80Gi GPU is only granted where all 80Gi are free. */
    struct tf_hv_request w = {.name = "w", .percent_limit = 1000, .gpu_model = "A100"};
    assert_int_equal(tf_hv_request_normalize(&w, err, sizeof(err)), 0);
    assert_int_equal(tf_hv_place(&w, g, 3, h, 1, out, &reasons), 0);
    assert_int_equal(out[0].gpu, 0);
    assert_int_equal(out[0].vram_bytes, 80 * GiB);
    tf_dynbuf_free(&reasons);
}

static void unschedulable_requests_carry_the_allocators_reasons(void **state)
{
    struct tf_hv_gpu_view g[3] = {
        gpu("GPU-0", "A100-80GB", 0, 312000, 80 * GiB),
        gpu("GPU-1", "A100-80GB", 1, 312000, 80 * GiB),
        gpu("GPU-2", "L4", 2, 121000, 24 * GiB),
    };
    struct tf_hv_held h[2] = {held("x", TF_HV_SOFT, "GPU-0", 10000, 78 * GiB),
                              held("y", TF_HV_HARD, "GPU-1", 10000, 1 * GiB)};
    struct tf_hv_request r = {.name = "a", .tflops_limit = 200000, .vram_limit = 4 * GiB};
    char err[128];
    assert_int_equal(tf_hv_request_normalize(&r, err, sizeof(err)), 0);
    struct tf_hv_grant out[2];
    struct tf_dynbuf reasons;
    tf_dynbuf_init(&reasons, 4096);
    assert_int_equal(tf_hv_place(&r, g, 3, h, 2, out, &reasons), TF_ENOSPC);
    printf("reasons: %s", tf_dynbuf_str(&reasons));
    assert_non_null(strstr(tf_dynbuf_str(&reasons), "node local"));
    struct tf_hv_request big = {.name = "b", .vram_limit = 100 * GiB};
    assert_int_equal(tf_hv_request_normalize(&big, err, sizeof(err)), 0);
    assert_int_equal(tf_hv_place(&big, g, 3, h, 2, out, &reasons), TF_ENOSPC);
    printf("reasons: %s", tf_dynbuf_str(&reasons));
    assert_non_null(strstr(tf_dynbuf_str(&reasons), "VRAM"));
    struct tf_hv_request sh = {.name = "s", .isolation = TF_HV_SHARED, .gpu_count = 2};
    assert_int_equal(tf_hv_request_normalize(&sh, err, sizeof(err)), 0);
    assert_int_equal(tf_hv_place(&sh, g, 3, h, 2, out, &reasons), TF_ENOSPC);
    printf("reasons: %s", tf_dynbuf_str(&reasons));
    assert_int_equal(tf_hv_place(&sh, g, 0, h, 0, out, &reasons), TF_ENOSPC);
    assert_non_null(strstr(tf_dynbuf_str(&reasons), "no GPU on this machine"));
    /* The held shares are respected: without them the same request fits. */
    assert_int_equal(tf_hv_place(&sh, g, 3, NULL, 0, out, &reasons), 0);
    tf_dynbuf_free(&reasons);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_missing_request_inherits_the_limit_and_qos_follows),
        cmocka_unit_test(contradictory_requests_are_refused_naming_the_problem),
        cmocka_unit_test(placement_packs_the_fullest_gpu_that_fits),
        cmocka_unit_test(unschedulable_requests_carry_the_allocators_reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
