/* SPDX-License-Identifier: Apache-2.0
 *
 * Small string helpers used by parsers: bounded error formatting, comma lists, booleans.
 * Pure and thread-safe.
 */
#ifndef TF_COMMON_STRUTIL_H
#define TF_COMMON_STRUTIL_H

#include <stdbool.h>
#include <stddef.h>

/* The value of hex digit C (either case), or -1. */
int tf_hexval(int c);

/* snprintf into ERR (if ERR and ERRLEN are non-zero); never overflows, always terminates. */
void tf_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Parses "true"/"false" (also "1"/"0", "yes"/"no", any case). Returns 0 or TF_EINVAL. */
int tf_parse_bool(const char *s, bool *out);

/* Case-insensitive equality of two NUL-terminated strings. */
bool tf_streq_ci(const char *a, const char *b);

/* Copies S into DST (capacity N), truncating; returns false if it did not fit. */
bool tf_strlcpy(char *dst, const char *s, size_t n);

/* Writes PREFIX NAME into OUT (capacity OUTLEN > MAX) when that is at most MAX characters
 * (a Kubernetes name or key part), else PREFIX, as much of NAME as fits with "-" and the 8 hex
 * digits of NAME's FNV-1a hash, the cut end trimmed of '-' and '.' so the result stays a valid
 * DNS label or subdomain when NAME is one. Distinct names give distinct results but for hash
 * collisions. */
void tf_name_fit(const char *prefix, const char *name, size_t max, char *out, size_t outlen);

/* Splits a comma-separated list in place-free fashion: calls FN for each trimmed, non-empty
 * item (pointer into S plus its length). Stops and returns FN's first non-zero result. */
int tf_split_list(const char *s, int (*fn)(const char *item, size_t len, void *arg), void *arg);

#endif
