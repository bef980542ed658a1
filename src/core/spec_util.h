/* SPDX-License-Identifier: Apache-2.0
 *
 * Private to libtfcore's workload model (spec.c, profile.c, spec_json.c): helpers shared by
 * the pod and WorkloadProfile parsers. Not a public header. Pure and thread-safe.
 */
#ifndef TF_CORE_SPEC_UTIL_H
#define TF_CORE_SPEC_UTIL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* Appends a formatted warning to the owned array *LIST (count *N). Returns 0 or TF_ENOMEM. */
int tf__warn(char ***list, size_t *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int tf__vwarn(char ***list, size_t *n, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Appends a copy of S to the owned string array *LIST. Returns 0 or TF_ENOMEM. */
int tf__strv_push(char ***list, size_t *n, const char *s, size_t len);
/* Frees an owned string array and resets it. */
void tf__strv_free(char ***list, size_t *n);
/* True when LIST[0..N) holds a string equal to S[0..LEN). */
bool tf__strv_has(char *const *list, size_t n, const char *s, size_t len);

/* A strict decimal integer in [MIN, MAX]: optional surrounding spaces, no sign, no suffix.
 * Returns 0, or TF_EINVAL (syntax) / TF_ERANGE (out of range). */
int tf__parse_uint(const char *s, size_t len, long long min, long long max, long long *out);

/* A Kubernetes object name (DNS-1123 subdomain: lower-case alphanumerics, '-', '.', starting
 * and ending alphanumeric, at most 253 characters). */
bool tf__is_object_name(const char *s);

/* Parses a comma-separated GPU index list ("0,1") into IDX (capacity TF_SPEC_MAX_GPUS):
 * each a decimal 0..127, no duplicates, at least one. Message in ERR names KEY. */
int tf__parse_indices(const char *s, int *idx, int *n, const char *key, char *err, size_t errlen);

/* Member K of O when O is an object, else NULL (borrowed). */
json_object *tf__get(json_object *o, const char *k);
/* Member K of O when it is a string, else NULL (borrowed). */
const char *tf__get_str(json_object *o, const char *k);

#endif
