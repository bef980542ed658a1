/* SPDX-License-Identifier: Apache-2.0
 *
 * Small string helpers used by parsers: bounded error formatting, comma lists, booleans.
 * Pure and thread-safe.
 */
#ifndef TF_COMMON_STRUTIL_H
#define TF_COMMON_STRUTIL_H

#include <stdbool.h>
#include <stddef.h>

/* snprintf into ERR (if ERR and ERRLEN are non-zero); never overflows, always terminates. */
void tf_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Parses "true"/"false" (also "1"/"0", "yes"/"no", any case). Returns 0 or TF_EINVAL. */
int tf_parse_bool(const char *s, bool *out);

/* Case-insensitive equality of two NUL-terminated strings. */
bool tf_streq_ci(const char *a, const char *b);

/* Copies S into DST (capacity N), truncating; returns false if it did not fit. */
bool tf_strlcpy(char *dst, const char *s, size_t n);

/* Splits a comma-separated list in place-free fashion: calls FN for each trimmed, non-empty
 * item (pointer into S plus its length). Stops and returns FN's first non-zero result. */
int tf_split_list(const char *s, int (*fn)(const char *item, size_t len, void *arg), void *arg);

#endif
