/* SPDX-License-Identifier: Apache-2.0
 *
 * Kubernetes resource quantities ("4Gi", "1.5Gi", "500m", "1e9", "10") parsed exactly.
 *
 * Grammar (k8s.io/apimachinery resource.Quantity):
 *   quantity := ["+"] number suffix        (a leading "-" is rejected: resources are >= 0)
 *   number   := digits | digits "." digits | digits "." | "." digits
 *   suffix   := "" | m | k | M | G | T | P | E | Ki | Mi | Gi | Ti | Pi | Ei | (e|E) [+-] digits
 * Values are kept as mant * 10^e10 * 2^e2 with an integer mantissa, so no conversion rounds
 * unless the target unit cannot hold the value (then it is an error, never a silent round).
 *
 * Every function is pure and thread-safe. On error, functions that take ERR/ERRLEN write a
 * message naming KEY and the offending value, e.g.
 *   tensor-fusion.ai/vram-limit: "4Gb" is not a valid quantity: unknown suffix "Gb"
 */
#ifndef TF_CORE_QUANTITY_H
#define TF_CORE_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

struct tf_quantity {
    int64_t mant; /* >= 0, no trailing decimal zeros */
    int e10;      /* decimal exponent */
    int e2;       /* binary exponent (10 per Ki step) */
};

/* Parses S. Returns 0, TF_EINVAL (empty/NULL), TF_EPARSE (syntax) or TF_ERANGE (negative,
 * too many digits). */
int tf_quantity_parse(const char *s, struct tf_quantity *q, const char *key, char *err,
                      size_t errlen);

/* Quantity S as whole bytes. Fractions of a byte ("500m") and values above INT64_MAX are errors. */
int tf_quantity_bytes(const char *s, int64_t *out, const char *key, char *err, size_t errlen);

/* Quantity S in thousandths ("0.5" -> 500, "500m" -> 500, "10" -> 10000); used for TFLOPS.
 * Values finer than 1/1000 or above INT64_MAX/1000 are errors. */
int tf_quantity_milli(const char *s, int64_t *out, const char *key, char *err, size_t errlen);

/* A compute percentage 0..100 with at most two decimals, as basis points (0..10000). */
int tf_percent_parse(const char *s, int32_t *bp, const char *key, char *err, size_t errlen);

/* A Go duration (time.ParseDuration: "30s", "1.5h", "1h30m", "500ms", "0") as milliseconds,
 * rounded up so that a non-zero duration stays non-zero. Negative durations are errors. */
int tf_go_duration_ms(const char *s, int64_t *out_ms, const char *key, char *err, size_t errlen);

/* Formats BYTES compactly and exactly: the largest binary suffix that divides it ("4Gi",
 * "1536Mi"), else plain bytes. Returns the snprintf result. */
int tf_quantity_format_bytes(int64_t bytes, char *buf, size_t len);

/* Formats thousandths as a decimal without trailing zeros ("10", "0.5", "12.345"). */
int tf_quantity_format_milli(int64_t milli, char *buf, size_t len);

#endif
