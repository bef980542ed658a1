/* SPDX-License-Identifier: Apache-2.0
 *
 * Fault injection for the workload model: every allocation the parsers make (malloc, calloc,
 * realloc, strdup, strndup, vasprintf, wrapped with ld --wrap) fails in turn. Each run must
 * return TF_ENOMEM with an empty spec and leak nothing (LeakSanitizer checks at exit), and the
 * run with no failure must succeed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/err.h"
#include "spec_test_util.h"

/* Countdown: -1 = off; otherwise the allocation that brings it to 0 fails. */
static long countdown = -1;
static int injected;

static int should_fail(void)
{
    if (countdown < 0)
        return 0;
    if (countdown-- == 0) {
        injected = 1;
        return 1;
    }
    return 0;
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_vasprintf(char **out, const char *fmt, va_list ap);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t a, size_t b);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_vasprintf(char **out, const char *fmt, va_list ap);

void *__wrap_malloc(size_t n)
{
    return should_fail() ? NULL : __real_malloc(n);
}
void *__wrap_calloc(size_t a, size_t b)
{
    return should_fail() ? NULL : __real_calloc(a, b);
}
void *__wrap_realloc(void *p, size_t n)
{
    return should_fail() ? NULL : __real_realloc(p, n);
}
char *__wrap_strdup(const char *s)
{
    return should_fail() ? NULL : __real_strdup(s);
}
char *__wrap_strndup(const char *s, size_t n)
{
    return should_fail() ? NULL : __real_strndup(s, n);
}
int __wrap_vasprintf(char **out, const char *fmt, va_list ap)
{
    if (should_fail())
        return -1;
    return __real_vasprintf(out, fmt, ap);
}

/* A manifest that reaches most allocation sites: names, warnings, containers, GPU IDs,
 * features, inject list, a profile. */
static const char rich[] =
    "kind: Deployment\nmetadata: {name: d, namespace: n}\nspec:\n  replicas: 1\n"
    "  template:\n    metadata:\n      labels: {tensor-fusion.ai/enabled: true, "
    "tensor-fusion.ai/oops: x}\n      annotations:\n"
    "        tensor-fusion.ai/tflops-request: '5'\n"
    "        tensor-fusion.ai/vram-limit: 2Gi\n"
    "        tensor-fusion.ai/gpupool: pool-a\n"
    "        tensor-fusion.ai/gpu-model: Z9000\n"
    "        tensor-fusion.ai/workload: w\n"
    "        tensor-fusion.ai/workload-profile: other\n"
    "        tensor-fusion.ai/enabled-replicas: '3'\n"
    "        tensor-fusion.ai/inject-container: 'a,b,a'\n"
    "        tensor-fusion.ai/container-gpus: '{\"a\":[\"g1\",\"g2\"],\"b\":[\"g3\"]}'\n"
    "        tensor-fusion.ai/disable-features: gpu-opt,bogus\n"
    "        tensor-fusion.ai/unknown-key: x\n"
    "    spec:\n      containers:\n      - name: a\n"
    "        resources: {limits: {nvidia.com/gpu: 1}}\n      - name: b\n";

static const char profile_yaml[] =
    "apiVersion: tensor-fusion.ai/v1beta\nkind: WorkloadProfile\n"
    "metadata: {name: p, namespace: n}\n"
    "spec: {poolName: pool-b, gpuModel: A100, extra: 1, resources: {limits: {tflops: '10'}}}\n";

static void every_failed_allocation_is_reported_without_leaks(void **state)
{
    json_object *doc = yaml_doc(rich), *pdoc = yaml_doc(profile_yaml);
    int ok_runs = 0;
    long n;
    for (n = 0; n < 5000; n++) {
        char err[512];
        struct tf_profile p;
        struct tf_spec s;
        injected = 0;
        countdown = n;
        int prc = tf_profile_parse(pdoc, &p, err, sizeof(err));
        int rc = prc ? prc : tf_spec_parse_object(doc, &p, NULL, &s, err, sizeof(err));
        countdown = -1;
        if (prc) {
            assert_int_equal(prc, TF_ENOMEM);
            assert_null(p.name);
        } else if (rc) {
            assert_int_equal(rc, TF_ENOMEM);
            assert_null(s.name);
            assert_null(s.warnings);
            assert_null(s.containers);
        }
        if (!prc)
            tf_profile_free(&p);
        if (!injected) {
            /* Every allocation succeeded: so must the parse. */
            if (rc)
                fail_msg("parse failed without injected failures: %s", err);
            assert_true(s.nwarnings >= 5);
            assert_int_equal(s.ncontainers, 2);
            tf_spec_free(&s);
            ok_runs++;
            break;
        }
        if (rc == 0) /* a failed allocation nobody needed cannot happen in these parsers */
            fail_msg("allocation %ld failed but the parse succeeded", n);
    }
    assert_int_equal(ok_runs, 1);
    assert_true(n > 20); /* the input really exercises many allocations */
    json_object_put(doc);
    json_object_put(pdoc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_failed_allocation_is_reported_without_leaks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
