/* SPDX-License-Identifier: Apache-2.0
 *
 * Helpers for the workload-model tests (test_spec*.c): build pods from YAML snippets, parse
 * them, and assert on results and messages. Each helper fails the running cmocka test on
 * unexpected outcomes.
 */
#ifndef TF_TESTS_SPEC_TEST_UTIL_H
#define TF_TESTS_SPEC_TEST_UTIL_H

#include "core/spec.h"

#include <json-c/json.h>
#include <stddef.h>

/* Parses one YAML document (caller owns the result). */
json_object *yaml_doc(const char *yaml);

/* A Pod with the enabled label, one container "app" and ANN_LINES as annotations: each line
 * "key: value" with the key relative to tensor-fusion.ai/ (e.g. "tflops-limit: '20'"). */
json_object *tf_pod(const char *ann_lines);

/* tf_spec_parse on DOC (consumed: json_object_put afterwards). Fails the test on error. */
void spec_ok(json_object *doc, const struct tf_profile *p, const struct tf_pool_defaults *pool,
             struct tf_spec *s);
/* Like spec_ok but expects failure: returns the rc, the message goes to ERR (512 bytes). */
int spec_err(json_object *doc, const struct tf_profile *p, const struct tf_pool_defaults *pool,
             char *err);

/* Same for tf_spec_parse_object. */
void object_ok(json_object *doc, const struct tf_profile *p, struct tf_spec *s);
int object_err(json_object *doc, const struct tf_profile *p, char *err);

/* Fails unless HAY contains every NULL-terminated needle. */
void assert_contains(const char *hay, ...) __attribute__((sentinel));
/* Fails unless some warning of S contains every needle. */
void assert_warning(const struct tf_spec *s, ...) __attribute__((sentinel));
/* Fails if any warning of S contains NEEDLE. */
void assert_no_warning(const struct tf_spec *s, const char *needle);

#define GiB (INT64_C(1) << 30)

/* Expects tf_pod(LINES) to be rejected with a message containing every needle. */
#define ERR_CASE(lines, ...)                                                                       \
    do {                                                                                           \
        char e_[512];                                                                              \
        spec_err(tf_pod(lines), NULL, NULL, e_);                                                   \
        assert_contains(e_, __VA_ARGS__, NULL);                                                    \
    } while (0)
#define MiB (INT64_C(1) << 20)

#endif
