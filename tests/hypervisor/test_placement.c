/* SPDX-License-Identifier: Apache-2.0
 *
 * Local workload requests: the DESIGN.md §3.2 defaults and checks, and placement on this
 * machine's GPUs with the reasons users see when a request does not fit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

static void placement_packs_the_fullest_gpu_that_fits(void **state)
{
    struct tf_hv_gpu_view g[3] = {
        gpu("GPU-0", "A100-80GB", 0, 312000, 80 * GiB),
        gpu("GPU-1", "A100-80GB", 1, 312000, 80 * GiB),
        gpu("GPU-2", "L4", 2, 121000, 24 * GiB),
    };
    g[1].alloc_vram_bytes = 60 * GiB;
    g[1].alloc_tflops_milli = 100000;
    g[1].nworkloads = 1;
    struct tf_hv_request r = {.name = "a", .tflops_limit = 50000, .vram_limit = 10 * GiB};
    char err[128];
    assert_int_equal(tf_hv_request_normalize(&r, err, sizeof(err)), 0);
    struct tf_hv_grant out[2];
    struct tf_dynbuf reasons;
    tf_dynbuf_init(&reasons, 4096);
    assert_int_equal(tf_hv_place(&r, g, 3, out, &reasons), 0);
    assert_int_equal(out[0].gpu, 1); /* 20Gi free beats 24Gi and 80Gi */
    assert_int_equal(out[0].vram_limit, 10 * GiB);
    assert_int_equal(out[0].compute_limit_bp, 1603); /* 50 / 312 TFLOPS */
    /* Percent requests become each GPU's own TFLOPS. */
    struct tf_hv_request p = {.name = "p", .percent_limit = 5000, .gpu_model = "L4"};
    assert_int_equal(tf_hv_request_normalize(&p, err, sizeof(err)), 0);
    assert_int_equal(tf_hv_place(&p, g, 3, out, &reasons), 0);
    assert_int_equal(out[0].gpu, 2);
    assert_int_equal(out[0].tflops_milli, 60500);
    assert_int_equal(out[0].vram_bytes, 24 * GiB); /* no VRAM given: the whole GPU */
    tf_dynbuf_free(&reasons);
}

static void unschedulable_requests_say_why_for_every_gpu(void **state)
{
    struct tf_hv_gpu_view g[3] = {
        gpu("GPU-0", "A100-80GB", 0, 312000, 80 * GiB),
        gpu("GPU-1", "A100-80GB", 1, 312000, 80 * GiB),
        gpu("GPU-2", "L4", 2, 121000, 24 * GiB),
    };
    g[0].alloc_vram_bytes = 78 * GiB;
    g[0].nworkloads = 1;
    g[1].nworkloads = 1;
    g[1].mode = TF_HV_HARD;
    struct tf_hv_request r = {.name = "a", .tflops_limit = 200000, .vram_limit = 4 * GiB};
    char err[128];
    assert_int_equal(tf_hv_request_normalize(&r, err, sizeof(err)), 0);
    struct tf_hv_grant out[2];
    struct tf_dynbuf reasons;
    tf_dynbuf_init(&reasons, 4096);
    assert_int_equal(tf_hv_place(&r, g, 3, out, &reasons), TF_ENOSPC);
    const char *s = tf_dynbuf_str(&reasons);
    assert_non_null(
        strstr(s, "GPU 0 GPU-0 (A100-80GB): insufficient VRAM: requested 4Gi, 2Gi free"));
    assert_non_null(strstr(s, "GPU 1 GPU-1 (A100-80GB): runs hard workloads, request is soft"));
    assert_non_null(strstr(s, "GPU 2 GPU-2 (L4): insufficient TFLOPS: requested 200, 121 free"));
    struct tf_hv_request sh = {.name = "s", .isolation = TF_HV_SHARED, .gpu_count = 2};
    assert_int_equal(tf_hv_request_normalize(&sh, err, sizeof(err)), 0);
    assert_int_equal(tf_hv_place(&sh, g, 3, out, &reasons), TF_ENOSPC);
    assert_non_null(strstr(tf_dynbuf_str(&reasons), "only 1 of the 2 GPUs requested fit"));
    assert_int_equal(tf_hv_place(&sh, g, 0, out, &reasons), TF_ENOSPC);
    assert_non_null(strstr(tf_dynbuf_str(&reasons), "no GPU on this machine"));
    tf_dynbuf_free(&reasons);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_missing_request_inherits_the_limit_and_qos_follows),
        cmocka_unit_test(contradictory_requests_are_refused_naming_the_problem),
        cmocka_unit_test(placement_packs_the_fullest_gpu_that_fits),
        cmocka_unit_test(unschedulable_requests_say_why_for_every_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
